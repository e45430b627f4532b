"""A LlamaIndex vector store as the core's dense index (``hcg_core.retrieval.dense``).

``HCGIndex(..., vector_store=store)`` writes every chunk's vector into ``store`` (any
``BasePydanticVectorStore``: Qdrant, Milvus, pgvector, Chroma, the in-memory
``SimpleVectorStore``...) and the hybrid ranker reads its dense candidates back from it through
:class:`VectorStoreDense`. Each chunk is one point whose id is a UUID derived from the chunk id
(``store_point_id``) and whose metadata carries the chunk id (``hcg_chunk_id``); its text is the
chunk's, so the collection is readable on its own. Exact cosines of given chunks come from a
query restricted to their ids (``VectorStoreQuery.node_ids``), which the store must honour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQuery

from hcg_core.adapter_common import store_metadata
from hcg_core.errors import ConfigError, StoreError
from hcg_core.retrieval.dense import StoreDenseIndex, store_point_id
from hcg_core.types import Chunk

# Points written per ``store.add`` call (bounded requests to a server).
WRITE_BATCH = 256


class VectorStoreDense(StoreDenseIndex):
    """Dense search through a LlamaIndex vector store, by chunk row.

    Args:
        store: the vector store holding (or about to hold) the chunk vectors.
        chunk_ids: the graph's chunk ids in row order.
    """

    def __init__(self, store: Any, chunk_ids: Sequence[str]) -> None:
        if not isinstance(store, BasePydanticVectorStore):
            raise ConfigError(
                f"vector_store must be a LlamaIndex BasePydanticVectorStore, got "
                f"{type(store).__name__}"
            )
        super().__init__(chunk_ids)
        self.store = store

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Upsert these chunks' vectors (point ids are stable, so rewriting is safe)."""
        vectors = np.asarray(vectors, np.float32)
        for start in range(0, len(chunks), WRITE_BATCH):
            nodes = [
                TextNode(
                    id_=store_point_id(c.id),
                    text=c.text,
                    metadata=store_metadata(c, lists=True),
                    embedding=vectors[start + i].tolist(),
                )
                for i, c in enumerate(chunks[start : start + WRITE_BATCH])
            ]
            self.store.add(nodes)
        if len(chunks):
            self.check_self_score(chunks[0].id, vectors[0])

    def delete(self, chunk_ids: Sequence[str]) -> None:
        """Remove these chunks' points."""
        if chunk_ids:
            self.store.delete_nodes(node_ids=[store_point_id(c) for c in chunk_ids])

    def _query(
        self, vector: np.ndarray, k: int, point_ids: list[str] | None = None
    ) -> tuple[list[str], list[float]]:
        result = self.store.query(
            VectorStoreQuery(
                query_embedding=np.asarray(vector, np.float32).tolist(),
                similarity_top_k=k,
                node_ids=point_ids,
            )
        )
        ids = list(result.ids or [n.node_id for n in result.nodes or []])
        sims = list(result.similarities or [])
        if len(sims) != len(ids):
            raise StoreError(
                f"the vector store returned {len(ids)} ids and {len(sims)} similarities; "
                "it must return one similarity per result"
            )
        return ids, sims
