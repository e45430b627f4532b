"""The two seams of the core: an embedder and a structured-output LLM (Protocols only).

Anything with these methods plugs in; the adapters wrap LlamaIndex and LangChain models into them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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

    async def acomplete(self, messages: Sequence[dict[str, str]], response_model: type[M]) -> M: ...


def is_embedder(obj: Any) -> bool:
    """Whether ``obj`` has the Embedder protocol's members, checked without evaluating them.

    ``isinstance(obj, Embedder)`` would read ``dim``, which for some embedders is a property that
    calls the model (a network request for an OpenAI-compatible one).
    """
    import inspect

    missing = object()
    return all(
        inspect.getattr_static(obj, a, missing) is not missing
        for a in ("name", "dim", "embed_documents", "embed_query")
    )


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


@contextmanager
def embedder_errors(what: str) -> Iterator[None]:
    """Report anything a (user's) embedder raises as an ``EmbedderError`` saying what failed."""
    from .errors import EmbedderError

    try:
        yield
    except EmbedderError:
        raise
    except Exception as exc:
        raise EmbedderError(f"{what}: {exc}") from exc


EMBED_BATCH = 64  # texts per call when a progress bar is shown


def embed_texts(
    embedder: Embedder, texts: Sequence[str], *, what: str, progress: bool = False
) -> np.ndarray:
    """Embed ``texts`` and check the result (shape, finiteness, normalisation).

    A user's embedder may raise anything: it is reported as an ``EmbedderError`` that says which
    step failed. With ``progress`` the texts go in batches under a tqdm bar named ``what``.
    """

    who = getattr(embedder, "name", "?")
    if not texts:
        return np.zeros((0, int(getattr(embedder, "dim", 0) or 0)), dtype=np.float32)
    texts = list(texts)
    with embedder_errors(f"embedder {who!r} failed on {what}"):
        if progress:
            from tqdm import tqdm

            parts = [
                embedder.embed_documents(texts[i : i + EMBED_BATCH])
                for i in tqdm(
                    range(0, len(texts), EMBED_BATCH),
                    desc=f"embedding {what}",
                    unit="batch",
                    leave=False,
                )
            ]
            vecs = np.concatenate([np.asarray(p, dtype=np.float32) for p in parts])
        else:
            vecs = embedder.embed_documents(texts)
    return as_matrix(vecs, len(texts), who=f"embedder {who!r}")
