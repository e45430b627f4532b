"""The offline default embedder and rebuilding an embedder from the ``name`` stored with a graph."""

from __future__ import annotations

import re
import threading

from ..errors import EmbedderError
from ..ports import Embedder
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

    Known names: ``hashing-v1-<dim>``, ``minilm-l6-v2-int8`` (and ``minilm-l6-v2-int8-t<tokens>``).
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
    if name.startswith("openai:"):
        model = name.split(":", 1)[1]
        raise EmbedderError(
            f"the graph was embedded with {name!r}, which needs an endpoint and a key; pass the "
            f'embedder explicitly, e.g. embedder=OpenAIEmbedder("{model}", base_url=..., api_key=...)'
        )
    raise EmbedderError(
        f"cannot rebuild embedder {name!r} from its name (known: 'hashing-v1-<dim>', "
        f"'{MINILM_NAME}'); pass the same embedder the graph was built with, explicitly"
    )
