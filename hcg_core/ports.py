"""The two seams of the core: an embedder and a structured-output LLM (Protocols only).

Anything with these methods plugs in; the adapters wrap LlamaIndex and LangChain models into them.
The helpers that call an embedder safely (``as_matrix``, ``embed_texts``...) are in
``hcg_core.embedding``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

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
