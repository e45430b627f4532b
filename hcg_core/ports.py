"""The two seams of the core: an embedder and a structured-output LLM (Protocols only).

Anything with these methods plugs in; the adapters wrap LlamaIndex and LangChain models into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``name`` identifies the model and its settings; it is stored in a graph directory's manifest so
    that stored vectors are never mixed with a different model's.
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dim)``, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return one vector of shape ``(dim,)``, L2-normalised."""
        ...


@runtime_checkable
class StructuredLLM(Protocol):
    """Given chat messages and a pydantic model, return a validated instance of that model."""

    name: str

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M:
        ...


def is_embedder(obj: Any) -> bool:
    """Whether ``obj`` has the Embedder protocol's members, checked without evaluating them.

    ``isinstance(obj, Embedder)`` would read ``dim``, which for some embedders is a property that
    calls the model (a network request for an OpenAI-compatible one).
    """
    import inspect

    missing = object()
    return all(inspect.getattr_static(obj, a, missing) is not missing
               for a in ("name", "dim", "embed_documents", "embed_query"))


def as_matrix(vectors: Any, n: int, *, who: str) -> np.ndarray:
    """Check an embedder's output and return it as a C-contiguous, row-normalised float32 array."""
    from .errors import EmbedderError

    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise EmbedderError(f"{who} returned shape {arr.shape} for {n} texts; expected ({n}, dim)")
    if not np.all(np.isfinite(arr)):
        raise EmbedderError(f"{who} returned non-finite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)
