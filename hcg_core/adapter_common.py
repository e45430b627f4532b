"""What the LlamaIndex and LangChain adapters do alike, written once.

Both build a graph and wrap it in a core retriever that reuses the build's vectors, both serve
dense candidates from a framework vector store, and both wrap a framework embedding model as a
core ``Embedder`` under a stored name. The framework-specific parts (node and document
conversions, the vector store calls) stay in the adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .config import BuildSettings, RetrievalConfig
from .embedding import is_embedder
from .errors import ConfigError
from .graph_build import BuildResult, build_graph
from .ports import Embedder, StructuredLLM
from .retrieval import CausalGraphRetriever
from .retrieval.dense import CHUNK_ID_KEY, StoreDenseIndex
from .types import CausalGraph, Chunk


def aligned(matrix: np.ndarray | None, rows: int) -> np.ndarray | None:
    """``matrix`` when it has one row per item, else None (the core retriever computes it)."""
    return matrix if matrix is not None and len(matrix) == rows else None


def core_over(
    graph: CausalGraph,
    embedder: Embedder,
    config: RetrievalConfig | None,
    variable_emb: np.ndarray | None,
    chunk_emb: np.ndarray | None,
) -> CausalGraphRetriever:
    """The core retriever over ``graph``; vectors missing or not aligned with it are computed."""
    return CausalGraphRetriever.from_graph(
        graph,
        embedder,
        config,
        variable_embeddings=aligned(variable_emb, len(graph.variables)),
        chunk_embeddings=aligned(chunk_emb, len(graph.chunks)),
    )


def build_core(
    chunks: Sequence[Chunk],
    embedder: Embedder,
    llm: StructuredLLM | None,
    build: BuildSettings,
    config: RetrievalConfig | None = None,
) -> tuple[CausalGraphRetriever, BuildResult]:
    """Build the graph over ``chunks`` and wrap it; the build's support ledger is kept, so
    inserts and deletes update the edges."""
    result = build_graph(chunks, embedder=embedder, llm=llm, **build.keywords())
    core = core_over(
        result.graph, embedder, config, result.variable_embeddings, result.chunk_embeddings
    )
    core.ledger = result.ledger
    return core, result


def attach_dense(core: CausalGraphRetriever, dense: StoreDenseIndex) -> StoreDenseIndex:
    """Serve ``core``'s dense candidates from ``dense`` (a vector store's wrapper), after writing
    every chunk's vector there unless the store already holds them (probed on the first chunk: a
    persisted store is not rewritten). Inserts and deletes then go through the core, which
    writes and deletes only the chunks they touch."""
    chunks = core.graph.chunks
    if chunks and not dense.holds(chunks[0].id, core.chunk_embeddings[0]):
        dense.write(chunks, core.chunk_embeddings)
    core.dense_index = dense
    return dense


def to_core_embedder(
    model: Any, framework: type, wrap: Callable[[Any], Embedder], what: str
) -> Embedder:
    """A framework embedding model (an instance of ``framework``) wrapped by ``wrap``, or a core
    Embedder as it is; anything else is a ``ConfigError`` naming ``what`` was expected."""
    if isinstance(model, framework):
        return wrap(model)
    if is_embedder(model):
        return model
    raise ConfigError(f"{what} or an hcg_core Embedder, got {type(model).__name__}")


def with_dimensions(name: str, model: Any) -> str:
    """A wrapped model's stored name, with ``:d<n>`` when the model sets ``dimensions=`` (as
    OpenAI's does): the same model at another size makes other vectors."""
    dimensions = getattr(model, "dimensions", None)
    return f"{name}:d{dimensions}" if isinstance(dimensions, int) else name


_SCALARS = (str, int, float, bool)


def store_metadata(chunk: Chunk, lists: bool) -> dict[str, Any]:
    """A chunk's metadata as a vector store keeps it: scalar values, and lists of scalars when
    ``lists`` (the store accepts them), plus the chunk id; others left out (the chunk keeps them
    locally: the store's copy is only for reading the collection)."""
    out: dict[str, Any] = {}
    for key, value in dict(chunk.metadata or {}).items():
        if isinstance(value, _SCALARS) or value is None:
            out[str(key)] = value
        elif (
            lists
            and isinstance(value, (list, tuple))
            and all(isinstance(v, _SCALARS) for v in value)
        ):
            out[str(key)] = list(value)
    return {**out, CHUNK_ID_KEY: chunk.id}
