"""Under a word budget, send each place of a document once: cut what overlapping units repeat.

Why: text without paragraph breaks is chunked into overlapping windows (200 words, 40 shared), and
when two neighbours both make the budget the reader gets the shared words twice (the medical dev
set's windows often come back in neighbouring pairs). The ranker counts only new words against
the budget (``hybrid.mmr_pack``) and this module cuts the repeated words from the result, so
the budget holds that much more distinct text. The cut is by words, not whole sentences: a piece
that follows the one it overlaps (a splitter's pieces of one paragraph come back in reading order,
``blocks.reading_order``) then continues that one's text exactly, and a sentence the splitter cut
between the two reads whole (benchmarks/ranking_variants.py, docs/evaluation.md).
Pure functions over ``RetrievedChunk`` lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..corpus import MAX_TOKEN_CHARS, word_spans
from ..types import Chunk, RetrievedChunk

# Which ASCII characters ``\s`` matches (``corpus.word_spans`` splits words at them).
_ASCII_SPACE = np.array([re.fullmatch(r"\s", chr(i)) is not None for i in range(128)])


def array_word_spans(text: str) -> np.ndarray:
    """``corpus.word_spans(text)`` as an ``(n, 2)`` int32 array.

    Text without CJK and without spaces outside ASCII (nearly all) is read with numpy, several
    times faster than the regular expression: a word is then a run of characters that are not
    ASCII spaces. Which characters outside ASCII the text holds is asked of ``word_spans``
    itself (joined into one word, they must come back as one). Other text, or a run longer than
    ``corpus.MAX_TOKEN_CHARS`` (cut into pieces), goes through ``word_spans``.

    >>> array_word_spans(" Smoking  kills –\\n").tolist()
    [[1, 8], [10, 15], [16, 17]]
    """
    points = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    wide = points >= 128
    if wide.any():
        others = "".join(map(chr, np.unique(points[wide]).tolist()))
        if len(word_spans(f"a{others}a")) != 1:  # a space or CJK among them
            return np.asarray(word_spans(text), dtype=np.int32).reshape(-1, 2)
    word = np.zeros(points.size + 2, dtype=bool)  # a non-space character, padded both ends
    word[1:-1] = wide | ~_ASCII_SPACE[points & 127]
    starts = (word[1:] > word[:-1]).nonzero()[0]  # a word starts here
    spans = np.empty((starts.size, 2), dtype=np.int32)
    spans[:, 0] = starts
    spans[:, 1] = (word[1:] < word[:-1]).nonzero()[0]  # a word ended just before
    if (spans[:, 1] - spans[:, 0] > MAX_TOKEN_CHARS).any():
        return np.asarray(word_spans(text), dtype=np.int32).reshape(-1, 2)
    return spans


def without_repeats(
    results: Sequence[RetrievedChunk],
    spans_of: Callable[[str], Sequence[tuple[int, int]]] = word_spans,
) -> list[RetrievedChunk]:
    """The results with the words at each one's start or end that an earlier result already
    returned from the same place of the same document cut off (overlapping windows share their
    edges), so a reader under a word budget never gets the same passage twice. Places come from
    the units' word or character offsets in their document (``_place``); a unit without them is
    left whole. The kept text stays contiguous: it keeps its id and gains ``details["span"]``, its
    character offsets in the stored chunk; a result left with nothing is dropped.

    ``spans_of(text)`` gives a text's ``corpus.word_spans`` (a ranker passes its memo of them,
    so the words of a unit are found once, not once per query that cuts it).

    >>> def unit(cid, text, start):
    ...     meta = {"start_word": start, "end_word": start + len(text.split())}
    ...     return RetrievedChunk(Chunk(cid, text, doc_id="d", metadata=meta), 1.0, "fallback")
    >>> got = without_repeats([unit("a", "One. Two. Three", 0), unit("b", "Two. Three four.", 1)])
    >>> [(r.chunk.text, r.details.get("span")) for r in got]
    [('One. Two. Three', None), ('four.', [11, 16])]
    """
    done: dict[tuple[str, str], list[tuple[int, int]]] = {}  # (document, kind) -> places sent
    out: list[RetrievedChunk] = []
    for rc in results:
        c = rc.chunk
        place = _place(c)
        if place is None:
            out.append(rc)
            continue
        kind, start, end = place
        before = done.setdefault((c.doc_id, kind), [])
        if not any(a < end and start < b for a, b in before):
            before.append((start, end))  # the usual case: nothing returned here yet
            out.append(rc)
            continue
        spans = np.asarray(spans_of(c.text), dtype=np.int64).reshape(-1, 2)
        n = spans.shape[0]
        if kind == "word" and n != end - start:
            out.append(rc)  # offsets counted otherwise than the text's words: leave it whole
            continue
        run = _kept_run(before, kind, start, end, spans)
        if run is None:
            continue
        # The kept text runs from the first word not sent yet to the last one (contiguous).
        lo, hi = run
        sent = (lo, hi) if kind == "word" else (int(spans[lo, 0]), int(spans[hi - 1, 1]))
        before.append((start + sent[0], start + sent[1]))
        if (lo, hi) == (0, n):
            out.append(rc)
            continue
        # The kept words are words lo..hi-1 of the text's word_spans: their count and the count
        # before them are known here (cut_to would find the words of the text again).
        words = (lo, hi - lo) if kind == "word" else None
        out.append(cut_to(rc, int(spans[lo, 0]), int(spans[hi - 1, 1]), words=words))
    return out


def _place(chunk: Chunk) -> tuple[str, int, int] | None:
    """Where a unit lies in its document: ``(kind, start, end)`` in words (hcg's chunker) or
    characters (a LlamaIndex node's offsets, LangChain's ``start_index``); None when unknown."""
    meta = chunk.metadata or {}
    for kind, a, b in (
        ("word", "start_word", "end_word"),
        ("char", "start_char_idx", "end_char_idx"),
    ):
        start, end = meta.get(a), meta.get(b)
        if isinstance(start, int) and isinstance(end, int):
            if kind == "char" and end - start != len(chunk.text):
                return None  # offsets of another text than the one returned
            return kind, start, end
    start = meta.get("start_index")
    return ("char", start, start + len(chunk.text)) if isinstance(start, int) else None


def _kept_run(
    sent: Sequence[tuple[int, int]], kind: str, start: int, end: int, spans: np.ndarray
) -> tuple[int, int] | None:
    """The first word of ``spans`` and one past the last that hold a place of ``[start, end)``
    no ``sent`` place covers; None when they cover it all. Word ``i`` is at ``start + i``
    (``kind`` "word": plain integer steps over the few places sent) or at its characters.

    >>> _kept_run([(0, 3), (8, 12)], "word", 2, 10, np.zeros((8, 2), np.int64))
    (1, 6)
    """
    if kind == "word":
        lo, hi, moved = start, end, True
        while moved:  # past every sent place that covers the first free position
            moved = False
            for a, b in sent:
                if a <= lo < b:
                    lo, moved = b, True
        if lo >= end:
            return None
        moved = True
        while moved:  # before every sent place that covers the last free position
            moved = False
            for a, b in sent:
                if a < hi <= b:
                    hi, moved = a, True
        return lo - start, hi - start
    first, last = spans.T
    kept = _uncovered(sent, start, end, first, last).nonzero()[0]
    return (int(kept[0]), int(kept[-1]) + 1) if kept.size else None


def _uncovered(
    sent: Sequence[tuple[int, int]], start: int, end: int, first: np.ndarray, last: np.ndarray
) -> np.ndarray:
    """Whether each place ``[first[i], last[i])`` (relative to ``start``) holds a position of
    ``[start, end)`` that no ``sent`` place covers.

    >>> _uncovered([(0, 3)], 2, 6, np.array([0, 1, 2]), np.array([1, 2, 3])).tolist()
    [False, True, True]
    """
    free = np.ones(end - start, dtype=bool)
    for a, b in sent:
        free[max(a - start, 0) : max(b - start, 0)] = False
    # Free positions before each offset: a place is uncovered when its range holds one.
    count = np.concatenate(([0], np.cumsum(free)))
    return count[last] > count[first]


def cut_to(
    rc: RetrievedChunk, a: int, b: int, *, words: tuple[int, int] | None = None
) -> RetrievedChunk:
    """``rc`` holding only characters ``[a, b)`` of its text: the same id, its place in the
    document moved to the kept part, and ``details["span"]`` counted in the stored chunk.

    ``words``: the counts of ``word_spans`` of the text before ``a`` and of ``[a, b)``, when the
    caller knows them (``a`` starts and ``b`` ends one of the text's words); else counted here.
    """
    c = rc.chunk
    meta = dict(c.metadata)
    if isinstance(meta.get("start_word"), int):
        before, kept = words or (len(word_spans(c.text[:a])), len(word_spans(c.text[a:b])))
        meta["start_word"] += before
        meta["end_word"] = meta["start_word"] + kept
    for key in ("start_char_idx", "start_index"):
        if isinstance(meta.get(key), int):
            start = meta[key]
            meta[key] = start + a
            if key == "start_char_idx" and isinstance(meta.get("end_char_idx"), int):
                meta["end_char_idx"] = start + b
    offset = rc.details.get("span", (0,))[0]
    details = {**rc.details, "span": [offset + a, offset + b]}
    chunk = Chunk(id=c.id, text=c.text[a:b], doc_id=c.doc_id, metadata=meta)
    return RetrievedChunk(chunk, rc.score, rc.route, rc.paths, details)


def joined_parts(
    results: Sequence[RetrievedChunk], stored: Mapping[str, Chunk]
) -> list[RetrievedChunk]:
    """The results with the parts of one stored chunk (``blocks.blank_line_parts``) joined into
    one result at the first part's place: the chunk's id, its text from the first part's start to
    the last one's end, ``details["span"]`` those characters (none when that is the whole text).

    ``stored`` maps the id of every chunk that was ranked as parts to the chunk; a part's
    ``details["span"]`` gives its characters in that chunk's text. Other results pass unchanged.
    So a node comes back once, holding what the query picked of it.

    >>> node = Chunk("n", "A1 A2.\\n\\nB1 B2.", doc_id="d")
    >>> a = RetrievedChunk(Chunk("n", "A1 A2.", doc_id="d"), 0.9, "fallback", details={"span": [0, 6]})
    >>> b = RetrievedChunk(Chunk("n", "B1 B2.", doc_id="d"), 0.5, "fallback", details={"span": [8, 14]})
    >>> [(r.chunk.text, r.details.get("span")) for r in joined_parts([a], {"n": node})]
    [('A1 A2.', [0, 6])]
    >>> [(r.chunk.text, r.details.get("span")) for r in joined_parts([a, b], {"n": node})]
    [('A1 A2.\\n\\nB1 B2.', None)]
    """
    hull: dict[str, list[int]] = {}
    for rc in results:
        span = rc.details.get("span")
        if rc.chunk.id in stored and span is not None:
            a, b = hull.setdefault(rc.chunk.id, [span[0], span[1]])
            hull[rc.chunk.id] = [min(a, span[0]), max(b, span[1])]
    if not hull or len(hull) == sum(1 for rc in results if rc.chunk.id in hull):
        return list(results)  # no chunk came back in two parts: nothing to join
    out: list[RetrievedChunk] = []
    for rc in results:
        at = hull.pop(rc.chunk.id, None) if rc.chunk.id in stored else None
        if at is None:
            if rc.chunk.id not in stored or rc.details.get("span") is None:
                out.append(rc)
            continue
        chunk = stored[rc.chunk.id]
        whole = replace(
            rc, chunk=chunk, details={k: v for k, v in rc.details.items() if k != "span"}
        )
        out.append(whole if at == [0, len(chunk.text)] else cut_to(whole, at[0], at[1]))
    return out
