"""What the LlamaIndex and LangChain adapters share, so they behave as one product.

Framework-free (no LlamaIndex or LangChain import): the one default ``k``, the metadata rules,
metadata filters turned into the core's ``allowed`` chunk mask, the embedder identity check that
decides whether stored vectors are reused, and the async query-vector path. The provenance keys
themselves come from :meth:`hcg_core.types.RetrievedChunk.provenance`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .config import DEFAULT_TOP_K
from .embedding import embedder_errors
from .errors import ConfigError, EmbedderError, InputError
from .safe_text import has_lone_surrogate
from .types import Chunk

logger = logging.getLogger(__name__)

DEFAULT_K = DEFAULT_TOP_K
"""Units returned per query by both adapters when the caller gives no k (the core's top_k)."""

# ------------------------------------------------------------------ metadata


def json_metadata(metadata: Mapping[str, Any], *, who: str = "metadata") -> dict[str, Any]:
    """Metadata as stored with a chunk: JSON-safe values kept, dates as ISO strings.

    ``datetime.date``/``datetime``/``time`` become ``isoformat()`` strings (they sort and compare
    as text). Any other value JSON cannot hold is left out *and named in a warning*: never
    dropped silently.

    >>> json_metadata({"title": "a", "when": dt.date(2024, 5, 1), "tags": ["x"]})
    {'title': 'a', 'when': '2024-05-01', 'tags': ['x']}
    """
    out: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in metadata.items():
        if isinstance(value, (dt.date, dt.time)):  # datetime is a date
            value = value.isoformat()
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            dropped.append(f"{key!s} ({type(value).__name__})")
            continue
        out[str(key)] = value
    if dropped:
        logger.warning(
            "%s: left out %d value(s) that cannot be stored as JSON: %s",
            who,
            len(dropped),
            ", ".join(dropped),
        )
    return out


# ------------------------------------------------------------------ documents in a batch


def refuse_lone_surrogates(items: Sequence[tuple[str | None, str]], *, what: str) -> None:
    """``InputError`` when an item's id or text holds a lone surrogate (U+D800-U+DFFF).

    Such a string is not Unicode text: it cannot be written as UTF-8, so the frameworks' own
    document hash (LlamaIndex's sha256 of the text) and hcg's store would fail on it with a
    ``UnicodeEncodeError``. Checked before anything is hashed, deleted or stored.

    >>> refuse_lone_surrogates([("a", "ok \u00e9")], what="document")
    """
    for n, (given_id, text) in enumerate(items):
        if has_lone_surrogate(text) or (given_id is not None and has_lone_surrogate(given_id)):
            name = repr(given_id.encode("utf-8", "backslashreplace").decode()) if given_id else n
            raise InputError(
                f"{what} {name} holds a lone surrogate (U+D800-U+DFFF), which is not Unicode "
                "text and cannot be stored; replace it (e.g. text.encode('utf-8', "
                "'replace').decode()); nothing was added"
            )


# How many skipped empty items a warning names.
EMPTY_NAMED = 3


def keep_in_batch(
    items: Sequence[tuple[str | None, str]],
    *,
    insert: bool,
    what: str = "document",
    names: Sequence[str | None] | None = None,
) -> list[int]:
    """The positions of a batch's ``(id the caller gave, or None; text)`` items to keep.

    ``names``: what a warning calls each item (a file path a reader recorded), else its id.

    - an id the caller gave to two items is refused (``InputError``, nothing is added): both
      would be stored under one id, and a later delete would remove both;
    - an empty (blank) text is refused on an insert, and skipped with a warning in a build:
      an empty chunk makes a graph directory its own loader refuses;
    - identical texts without an id (boilerplate splits) would get one content id: kept once,
      with a warning.

    >>> keep_in_batch([("a", "x"), (None, "y"), (None, "y"), (None, " ")], insert=False)
    [0, 1]
    """
    refuse_lone_surrogates(items, what=what)
    given = Counter(i for i, _ in items if i is not None)
    repeated = sorted(i for i, n in given.items() if n > 1)
    if repeated:
        raise InputError(
            f"{len(repeated)} id(s) are given to more than one {what} in this batch (first: "
            f"{repeated[0]!r}); ids must be unique; nothing was added"
        )
    empty = [n for n, (_, text) in enumerate(items) if not text.strip()]
    if empty and insert:
        first = items[empty[0]][0]
        raise InputError(
            f"{len(empty)} {what}(s) to insert have no text (first: "
            f"{first if first is not None else f'item {empty[0]}'!r}); nothing was added"
        )
    if empty:
        # Name them (the first few), so the user can find the empty file or the reader's miss.
        label = [(names[n] if names else None) or items[n][0] or f"item {n}" for n in empty]
        shown = ", ".join(map(repr, label[:EMPTY_NAMED]))
        more = f" and {len(label) - EMPTY_NAMED:,} more" if len(label) > EMPTY_NAMED else ""
        logger.warning("%d %s(s) without text skipped: %s%s", len(empty), what, shown, more)
    keep, seen, repeats = [], set(), 0
    for n, (given_id, text) in enumerate(items):
        if not text.strip():
            continue
        if given_id is None:
            if text in seen:
                repeats += 1
                continue
            seen.add(text)
        keep.append(n)
    if repeats:
        logger.warning(
            "%d %s(s) without an id repeat another's text exactly: kept once (give them ids to "
            "keep each)",
            repeats,
            what,
        )
    return keep


# ------------------------------------------------------------------ filters

# Chroma-style dict filters (LangChain's ``filter=``): field -> value or {"$op": value}.
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda have, want: have == want,
    "$ne": lambda have, want: have != want,
    "$gt": lambda have, want: have is not None and have > want,
    "$gte": lambda have, want: have is not None and have >= want,
    "$lt": lambda have, want: have is not None and have < want,
    "$lte": lambda have, want: have is not None and have <= want,
    "$in": lambda have, want: have in want,
    "$nin": lambda have, want: have not in want,
}
_LOGICAL = ("$and", "$or")
_MISSING = object()


def dict_filter(spec: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over a chunk's metadata from a Chroma-style filter dict.

    ``{"source": "a.md"}`` is equality; ``{"year": {"$in": [2023, 2024]}}``, ``$eq``, ``$ne``,
    ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$nin`` compare; ``{"$and": [...]}`` and
    ``{"$or": [...]}`` combine; several fields in one dict must all match. Anything else raises
    ConfigError up front, so no filter is ever ignored.

    >>> keep = dict_filter({"source": "a.md", "year": {"$in": [2023, 2024]}})
    >>> keep({"source": "a.md", "year": 2024}), keep({"source": "a.md", "year": 2020})
    (True, False)
    """
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"a filter must be a non-empty dict, got {spec!r}")
    tests: list[Callable[[Mapping[str, Any]], bool]] = []
    for key, cond in spec.items():
        if key in _LOGICAL:
            if not isinstance(cond, Sequence) or isinstance(cond, str) or not cond:
                raise ConfigError(f"{key} takes a non-empty list of filters, got {cond!r}")
            parts = [dict_filter(c) for c in cond]
            combine = all if key == "$and" else any
            tests.append(lambda meta, parts=parts, combine=combine: combine(p(meta) for p in parts))
        elif isinstance(key, str) and key.startswith("$"):
            raise ConfigError(
                f"unsupported filter operator {key!r} at the top level; use a field name, "
                f"{' or '.join(_LOGICAL)}"
            )
        elif isinstance(cond, Mapping):
            if not cond:
                raise ConfigError(f"the filter on {key!r} is an empty dict")
            for op, want in cond.items():
                compare = _COMPARISONS.get(op)
                if compare is None:
                    raise ConfigError(
                        f"unsupported filter operator {op!r} on {key!r}; supported: "
                        f"{', '.join(_COMPARISONS)}"
                    )
                if op in ("$in", "$nin") and (
                    isinstance(want, (str, bytes)) or not isinstance(want, (Sequence, set))
                ):
                    raise ConfigError(f"{op} on {key!r} takes a list of values, got {want!r}")
                tests.append(_field_test(key, compare, want))
        else:
            tests.append(_field_test(key, _COMPARISONS["$eq"], cond))
    return lambda meta: all(t(meta) for t in tests)


def _field_test(
    key: str, compare: Callable[[Any, Any], bool], want: Any
) -> Callable[[Mapping[str, Any]], bool]:
    def test(meta: Mapping[str, Any]) -> bool:
        have = meta.get(key, _MISSING)
        if have is _MISSING:
            # A missing field matches only the negative operators, as in the vector stores.
            return compare in (_COMPARISONS["$ne"], _COMPARISONS["$nin"])
        try:
            return bool(compare(have, want))
        except TypeError as exc:  # e.g. "2024" > 2023: say which field, do not guess
            raise ConfigError(f"filter on {key!r}: cannot compare {have!r} with {want!r}") from exc

    return test


def filter_mask(chunks: Sequence[Chunk], keep: Callable[[Chunk], bool] | None) -> np.ndarray | None:
    """The core's ``allowed`` mask (one bool per chunk) for a per-chunk predicate; None for none."""
    if keep is None:
        return None
    return np.fromiter((bool(keep(c)) for c in chunks), dtype=bool, count=len(chunks))


# ------------------------------------------------------------------ embedder identity


def vectors_match(stored_name: str | None, stored_dim: int | None, embedder: Any) -> bool:
    """Whether stored vectors were made by ``embedder``: same name *and* same output dimension.

    The name alone is not enough: one model name can be served at several dimensions (OpenAI's
    ``dimensions=``), and vectors of another size would fail on the first query.
    """
    if not stored_name or stored_name != getattr(embedder, "name", None):
        return False
    if not stored_dim:
        return True  # nothing stored to compare (an empty graph)
    try:
        return int(embedder.dim) == int(stored_dim)
    except EmbedderError:
        return False


# ------------------------------------------------------------------ query vectors


def mean_query_vector(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """The mean of the texts' query vectors (LlamaIndex's ``custom_embedding_strs`` rule)."""
    with embedder_errors(f"embedder {getattr(embedder, 'name', '?')!r} failed on the query"):
        return np.mean([np.asarray(embedder.embed_query(t), np.float32) for t in texts], axis=0)


async def amean_query_vector(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """:func:`mean_query_vector` without blocking the event loop: the embedder's own async
    ``aembed_query`` where it has one (concurrently), else a worker thread."""
    aembed = getattr(embedder, "aembed_query", None)
    if aembed is None:
        return await asyncio.to_thread(mean_query_vector, embedder, texts)
    with embedder_errors(f"embedder {getattr(embedder, 'name', '?')!r} failed on the query"):
        vectors = await asyncio.gather(*(aembed(t) for t in texts))
    return np.mean([np.asarray(v, np.float32) for v in vectors], axis=0)
