"""Embedder names resolved to embedders: the offline default, a name stored with a graph, a CLI flag.

All name resolution lives here, so the console script, ``hcg eval`` and the retriever's loader
agree on what a name means.
"""

from __future__ import annotations

import re
import threading

from ..errors import ConfigError, EmbedderError
from ..ports import Embedder
from .e5 import E5_NAME, MultilingualE5Embedder
from .hashing import HASHING_VERSION, HashingEmbedder
from .minilm import DEFAULT_MAX_TOKENS, MINILM_NAME, MiniLMEmbedder

_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()

_HASHING_RE = re.compile(rf"hashing-{HASHING_VERSION}-(\d+)")
_MINILM_RE = re.compile(rf"{re.escape(MINILM_NAME)}(?:-t(\d+))?")


def default_embedder() -> MiniLMEmbedder:
    """The process-wide offline default: one shared MiniLMEmbedder (loads on first embed call)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = MiniLMEmbedder()
    return _default


def embedder_from_name(name: str) -> Embedder:
    """Rebuild the embedder whose ``name`` a graph directory stored.

    Known names: ``hashing-v1-<dim>``, ``minilm-l6-v2-int8`` (and ``minilm-l6-v2-int8-t<tokens>``),
    ``multilingual-e5-small-q4`` (needs ``hcg-rag[multilingual]``).
    Any other name (``openai:<model>``, a wrapped LlamaIndex/LangChain model, your own ONNX file)
    needs credentials or objects this function cannot know: pass that embedder explicitly.

    >>> embedder_from_name("hashing-v1-512").dim
    512
    """
    if not isinstance(name, str):
        raise EmbedderError(f"embedder name must be a str, got {type(name).__name__}")
    m = _HASHING_RE.fullmatch(name)
    if m:
        return HashingEmbedder(int(m.group(1)))
    m = _MINILM_RE.fullmatch(name)
    if m:
        tokens = int(m.group(1)) if m.group(1) else DEFAULT_MAX_TOKENS
        if tokens == DEFAULT_MAX_TOKENS:
            return default_embedder()
        return MiniLMEmbedder(max_tokens=tokens)
    if name == E5_NAME:
        return MultilingualE5Embedder()
    if name.startswith("openai:"):
        model = name.split(":", 1)[1]
        raise EmbedderError(
            f"the graph was embedded with {name!r}, which needs an endpoint and a key; pass the "
            f'embedder explicitly, e.g. embedder=OpenAIEmbedder("{model}", base_url=..., api_key=...)'
        )
    raise EmbedderError(
        f"cannot rebuild embedder {name!r} from its name (known: 'hashing-v1-<dim>', "
        f"'{MINILM_NAME}', '{E5_NAME}'); pass the same embedder the graph was built with, explicitly"
    )


EMBEDDER_HELP = (
    "'default' (MiniLM int8, offline), 'hashing' (numpy only), a stored name "
    "(minilm-l6-v2-int8, hashing-v1-4096), 'multilingual' (multilingual-e5-small, needs "
    "hcg-rag[multilingual]), or openai:MODEL with --embedder-base-url"
)


def embedder_by_name(name: str | None, base_url: str | None = None) -> Embedder:
    """The embedder a user names (the CLI's ``--embedder``; see ``EMBEDDER_HELP``).

    ``None``/``"default"``: the MiniLM default; ``"hashing"``: ``HashingEmbedder()``;
    ``"multilingual"``: ``MultilingualE5Embedder()``;
    ``"openai:MODEL"``: an OpenAI-compatible server at ``base_url``; otherwise a stored name
    (``embedder_from_name``). An unknown name is a ``ConfigError``.

    >>> embedder_by_name("hashing").name
    'hashing-v1-4096'
    """
    if name in (None, "", "default"):
        return default_embedder()
    if name == "hashing":
        return HashingEmbedder()
    if name == "multilingual":
        return MultilingualE5Embedder()
    if name.startswith("openai:"):
        from .openai import OpenAIEmbedder

        return OpenAIEmbedder(name.split(":", 1)[1], base_url=base_url)
    try:
        return embedder_from_name(name)
    except EmbedderError:
        raise ConfigError(f"unknown embedder {name!r}; use {EMBEDDER_HELP}") from None


def reads_one_language(embedder: Embedder) -> bool:
    """Whether ``embedder`` is one of this package's that match text within one language only.

    The MiniLM default was trained on English; feature hashing matches words. A user's own
    embedder may be multilingual, so it is not judged.

    >>> reads_one_language(HashingEmbedder()), reads_one_language(MultilingualE5Embedder())
    (True, False)
    """
    name = getattr(embedder, "name", "")
    return isinstance(name, str) and name.startswith((MINILM_NAME, "hashing-"))
