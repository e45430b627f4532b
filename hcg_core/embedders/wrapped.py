"""Wrap any ``fn(list[str]) -> vectors`` as an Embedder; the adapters wrap LlamaIndex/LangChain models so.

``FrameworkEmbedder`` is what both adapters wrap a framework's embedding model in; ``core_embedder``
is the check both adapters' default-embedding classes make of the core embedder they expose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from ..embedding import as_matrix, embedder_errors, is_embedder
from ..errors import ConfigError, EmbedderError
from ._common import LazyModel, check_count, check_text, check_texts


class CallableEmbedder(LazyModel):
    """An Embedder around a batch function; its output is checked and L2-normalised.

    Args:
        fn: ``fn(list[str])`` returning ``len(texts)`` vectors (list of lists or an array).
        name: the identity stored with vectors, e.g. ``"llamaindex:BAAI/bge-small-en-v1.5"``.
        dim: the vector size; if ``None`` it is taken from the first call (reading ``.dim`` first
            embeds one short probe text).
        query_fn: ``query_fn(str)`` returning one vector, for models that embed queries differently
            from documents (instruction prefixes); default ``fn([text])[0]``.

    Any wrong shape, count, size or non-finite value raises EmbedderError naming ``name``; an error
    raised by ``fn`` itself is re-raised as EmbedderError with the original chained.

    >>> e = CallableEmbedder(lambda texts: [[len(t), 1.0] for t in texts], name="len", dim=2)
    >>> e.embed_documents(["abc", ""]).astype(float).round(3).tolist()
    [[0.949, 0.316], [0.0, 1.0]]
    """

    def __init__(
        self,
        fn: Callable[[list[str]], Any],
        name: str,
        dim: int | None = None,
        *,
        query_fn: Callable[[str], Any] | None = None,
    ):
        if not callable(fn):
            raise ConfigError(f"fn must be callable, got {type(fn).__name__}")
        if query_fn is not None and not callable(query_fn):
            raise ConfigError(f"query_fn must be callable or None, got {type(query_fn).__name__}")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"name must be a non-empty str, got {name!r}")
        check_count(dim, "dim", none_ok=True)
        self.name = name
        self._fn = fn
        self._query_fn = query_fn
        self._dim = dim
        self._reset_runtime()  # a copy or pickle (multiprocessing, deepcopy) gets a fresh lock

    def __repr__(self) -> str:
        return f"CallableEmbedder(name={self.name!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        """The vector size; found by embedding one probe text if neither given nor seen yet."""
        if self._dim is None:
            self.embed_documents(["dimension probe"])
        return int(self._dim)  # type: ignore[arg-type]  # set by _check

    def _check(self, raw: Any, n: int) -> np.ndarray:
        matrix = as_matrix(raw, n, who=self.name)
        with self._lock:
            if self._dim is None:
                self._dim = matrix.shape[1]
        if matrix.shape[1] != self._dim:
            raise EmbedderError(
                f"{self.name} returned {matrix.shape[1]}-dim vectors, expected {self._dim} "
                "(the dim= given, else the size of its first reply)"
            )
        return matrix

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), dim)`` float32 rows, L2-normalised."""
        items = check_texts(texts, who=self.name)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        with embedder_errors(f"{self.name} failed on {len(items)} texts"):
            raw = self._fn(items)
        return self._check(raw, len(items))

    def embed_query(self, text: str) -> np.ndarray:
        """Return one ``(dim,)`` float32 vector, L2-normalised."""
        text = check_text(text, who=self.name)
        if self._query_fn is None:
            return self.embed_documents([text])[0]
        with embedder_errors(f"{self.name} failed on a query"):
            raw = self._query_fn(text)
        vec = np.asarray(raw, dtype=np.float32)
        if vec.ndim != 1:
            raise EmbedderError(
                f"{self.name} query_fn returned shape {vec.shape}; expected one vector (dim,)"
            )
        return self._check(vec[None, :], 1)[0]


class FrameworkEmbedder(CallableEmbedder):
    """A framework's embedding model (LlamaIndex ``BaseEmbedding``, LangChain ``Embeddings``) as
    an Embedder: its batch and query functions, checked, and its async query function kept as
    ``aembed_query``, so an async retrieval awaits the model instead of blocking the event loop.

    Args:
        model: the framework's model (kept as ``model``).
        name: the identity stored with vectors.
        fn, query_fn: the model's batch and query functions.
        aquery_fn: the model's async query function.
    """

    def __init__(
        self,
        model: Any,
        name: str,
        *,
        fn: Callable[[list[str]], Any],
        query_fn: Callable[[str], Any],
        aquery_fn: Callable[[str], Awaitable[Any]],
    ) -> None:
        super().__init__(fn, name=name, query_fn=query_fn)
        self.model = model
        self._aquery_fn = aquery_fn

    async def aembed_query(self, text: str) -> np.ndarray:
        """One query vector through the model's async query function, checked like the sync one."""
        text = check_text(text, who=self.name)
        with embedder_errors(f"{self.name} failed on a query"):
            raw = await self._aquery_fn(text)
        return self._check(np.asarray(raw, dtype=np.float32)[None, :], 1)[0]


def core_embedder(
    embedder: Any, *, default: Callable[[], Any], refuse: tuple[type, ...] = ()
) -> Any:
    """``embedder``, or ``default()`` when None, checked to be a core Embedder (and not an
    instance of a ``refuse`` class: a framework's own embedding class); else ``ConfigError``."""
    embedder = embedder if embedder is not None else default()
    if not is_embedder(embedder) or isinstance(embedder, refuse):
        raise ConfigError(
            f"embedder must be an hcg_core Embedder (name, dim, embed_documents, embed_query), "
            f"got {type(embedder).__name__}"
        )
    return embedder
