"""A LangChain vector store as the core's dense index (``hcg_core.retrieval.dense``).

``HCGRetriever.from_documents(..., vector_store=store)`` writes every chunk into ``store`` (any
LangChain ``VectorStore`` that searches by vector with scores: Qdrant, Chroma, FAISS, PGVector,
``InMemoryVectorStore``...) and the hybrid ranker reads its dense candidates back from it through
:class:`LangChainStoreDense`. Each chunk is one document whose id is a UUID derived from the
chunk id (``store_point_id``) and whose metadata carries the chunk id (``hcg_chunk_id``).

LangChain has no way to hand a store precomputed vectors, so the store embeds the chunk texts
with its own ``Embeddings``: give it the retriever's embeddings (``HCGDefaultEmbeddings`` for the
default embedder). A store holding other vectors is refused after the first write. LangChain has
no common way either to search only given ids, which the exact cosines of the BM25 and graph
candidates need: Qdrant and ``InMemoryVectorStore`` are built in, any other store takes an
``id_filter`` (ids -> that store's ``filter=`` value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from hcg_core.adapter_common import store_metadata
from hcg_core.errors import ConfigError
from hcg_core.retrieval.dense import CHUNK_ID_KEY, StoreDenseIndex, store_point_id
from hcg_core.types import Chunk

# Documents written per ``add_texts`` call.
WRITE_BATCH = 256


def builtin_id_filter(store: Any) -> Callable[[list[str]], Any] | None:
    """The ``filter=`` value restricting a search to given point ids, for the stores known here."""
    if isinstance(store, InMemoryVectorStore):
        return lambda ids: lambda doc, keep=frozenset(ids): doc.id in keep
    if type(store).__name__ == "QdrantVectorStore":  # langchain-qdrant, an optional package
        from qdrant_client import models

        return lambda ids: models.Filter(must=[models.HasIdCondition(has_id=list(ids))])
    return None


class LangChainStoreDense(StoreDenseIndex):
    """Dense search through a LangChain vector store, by chunk row.

    Args:
        store: a LangChain ``VectorStore`` with ``similarity_search_with_score_by_vector``.
        chunk_ids: the graph's chunk ids in row order.
        id_filter: ids -> the store's ``filter=`` value selecting those ids (built in for Qdrant
            and ``InMemoryVectorStore``).
    """

    def __init__(
        self,
        store: Any,
        chunk_ids: Sequence[str],
        id_filter: Callable[[list[str]], Any] | None = None,
    ) -> None:
        if not isinstance(store, VectorStore):
            raise ConfigError(
                f"vector_store must be a LangChain VectorStore, got {type(store).__name__}"
            )
        if not callable(getattr(store, "similarity_search_with_score_by_vector", None)):
            raise ConfigError(
                f"{type(store).__name__} has no similarity_search_with_score_by_vector; the "
                "retriever needs a store that searches by vector and returns scores"
            )
        id_filter = id_filter or builtin_id_filter(store)
        if id_filter is None:
            raise ConfigError(
                f"pass id_filter for {type(store).__name__}: a function from a list of ids to "
                "the store's filter= value selecting those documents (built in for Qdrant and "
                "InMemoryVectorStore)"
            )
        super().__init__(chunk_ids)
        self.store = store
        self.id_filter = id_filter

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Add these chunks (the store embeds them; ids are stable, so rewriting is an upsert
        where the store upserts). ``vectors`` are the retriever's, to check the store's."""
        for start in range(0, len(chunks), WRITE_BATCH):
            part = chunks[start : start + WRITE_BATCH]
            self.store.add_texts(
                [c.text for c in part],
                metadatas=[store_metadata(c, lists=False) for c in part],
                ids=[store_point_id(c.id) for c in part],
            )
        if len(chunks):
            self.check_self_score(chunks[0].id, np.asarray(vectors[0], np.float32))

    def delete(self, chunk_ids: Sequence[str]) -> None:
        if chunk_ids:
            self.store.delete(ids=[store_point_id(c) for c in chunk_ids])

    def _query(
        self, vector: np.ndarray, k: int, point_ids: list[str] | None = None
    ) -> tuple[list[str], list[float]]:
        kwargs = {} if point_ids is None else {"filter": self.id_filter(point_ids)}
        hits = self.store.similarity_search_with_score_by_vector(
            np.asarray(vector, np.float32).tolist(), k=k, **kwargs
        )
        ids = [
            store_point_id(str(doc.metadata[CHUNK_ID_KEY]))
            if CHUNK_ID_KEY in (doc.metadata or {})
            else str(doc.id)
            for doc, _ in hits
        ]
        return ids, [float(score) for _, score in hits]
