"""``HCGRetriever``: graph-guided retrieval as a LangChain ``BaseRetriever``.

A thin wrapper around ``hcg_core.retrieval.HCGRetriever``; ``invoke``/``ainvoke``, callbacks and
tracing are LangChain's own, and ``invoke(q, k=n)`` overrides the constructor's ``k``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from hcg_core.config import DEFAULT_TIER, RetrievalConfig
from hcg_core.corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS, chunk_documents
from hcg_core.errors import ConfigError, InputError
from hcg_core.graph_build import build_graph
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from hcg_core.types import CausalGraph, DomainSpec, OutcomeConfig

from ._convert import to_chunk, to_core_document, to_lc_documents
from ._models import resolve_embedder, to_structured_llm

# LangChain's vector-store retrievers return 4 documents by default; keep that convention.
DEFAULT_K = 4


class HCGRetriever(BaseRetriever):
    """A schema-constrained causal graph used as a retriever (HCG-RAG).

    Setup::

        from langchain_hcg import HCGRetriever

        retriever = HCGRetriever.from_documents(docs)                 # offline build + embedder
        retriever = HCGRetriever.from_documents(docs, llm=chat_model)  # the paper's LLM pipeline
        retriever.save("graph_dir")
        retriever = HCGRetriever.from_persist_dir("graph_dir", k=5)

    Use::

        docs = retriever.invoke("What raises the risk of stroke?", k=3)
        docs[0].metadata["hcg_route"], docs[0].metadata["hcg_paths"]

    Use as a retriever in a chain::

        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | prompt
            | model
        )

    Each Document has ``id`` = the chunk id and metadata with the chunk's own metadata plus
    ``chunk_id``, ``doc_id``, ``hcg_score``, ``hcg_route`` ("graph" or "fallback"),
    ``hcg_served_by``, ``hcg_paths``, ``hcg_mechanisms`` and ``hcg_edge_ids``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    core: Any = Field(description="the hcg_core.retrieval.HCGRetriever doing the work")
    k: int = Field(default=DEFAULT_K, description="documents returned per query")

    @field_validator("core")
    @classmethod
    def _check_core(cls, value: Any) -> Any:
        if not isinstance(value, CoreRetriever):
            raise ConfigError(
                "core must be an hcg_core.retrieval.HCGRetriever; build one with "
                "HCGRetriever.from_documents(...) or HCGRetriever.from_persist_dir(path)"
            )
        return value

    @field_validator("k")
    @classmethod
    def _check_k(cls, value: int) -> int:
        if value < 1:
            raise ConfigError(f"k must be at least 1, got {value}")
        return value

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        llm: Any | None = None,
        embeddings: Any | None = None,
        k: int = DEFAULT_K,
        *,
        chunk: bool = True,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        overlap_words: int = DEFAULT_OVERLAP_WORDS,
        tier: str = DEFAULT_TIER,
        outcome: OutcomeConfig | None = None,
        spec: DomainSpec | None = None,
        config: RetrievalConfig | None = None,
        progress: bool | None = None,
        **build_options: Any,
    ) -> HCGRetriever:
        """Chunk ``documents`` (unless ``chunk=False``), build the graph, and wrap it.

        Args:
            documents: LangChain Documents; their ``id`` (else a content hash) is the doc id.
            llm: any LangChain chat model for the LLM pipeline; ``None`` builds offline.
            embeddings: any LangChain ``Embeddings``; default the bundled offline MiniLM.
            k: documents per query.
            chunk: set False when the documents are already split: each becomes one chunk.
            chunk_words, overlap_words: the word-window chunker's settings.
            tier, outcome, spec, progress, build_options: see ``hcg_core.graph_build.build_graph``.
            config: stage 3 settings.
        """
        docs = list(documents)
        if not docs:
            raise InputError("from_documents got no documents")
        if chunk:
            core_docs = list({d.id: d for d in map(to_core_document, reversed(docs))}.values())
            chunks = chunk_documents(
                core_docs[::-1], chunk_words=chunk_words, overlap_words=overlap_words
            )
        else:
            # A document without an id gets a content id, so exact repeats collapse to one chunk.
            chunks = list({c.id: c for c in map(to_chunk, reversed(docs))}.values())[::-1]
        embedder = resolve_embedder(embeddings)
        result = build_graph(
            chunks,
            embedder=embedder,
            llm=to_structured_llm(llm),
            tier=tier,
            outcome=outcome,
            spec=spec,
            progress=progress,
            **build_options,
        )
        core = CoreRetriever.from_graph(
            result.graph,
            embedder,
            config,
            variable_embeddings=_aligned(result.variable_embeddings, len(result.graph.variables)),
            chunk_embeddings=_aligned(result.chunk_embeddings, len(result.graph.chunks)),
        )
        return cls(core=core, k=k)

    @classmethod
    def from_persist_dir(
        cls,
        path: str | os.PathLike,
        embeddings: Any | None = None,
        k: int = DEFAULT_K,
        config: RetrievalConfig | None = None,
    ) -> HCGRetriever:
        """Load a core graph directory (``save``, ``hcg build``). With no ``embeddings``, the
        embedder named in its manifest is rebuilt (the offline ones are; others must be passed)."""
        embedder = None if embeddings is None else resolve_embedder(embeddings)
        return cls(core=CoreRetriever.load(path, embedder=embedder, config=config), k=k)

    def save(self, path: str | os.PathLike) -> None:
        """Write the graph, its vectors and the embedder's name as a core graph directory."""
        self.core.save(path)

    @property
    def graph(self) -> CausalGraph:
        """The causal graph behind this retriever."""
        return self.core.graph

    # ------------------------------------------------------------------ retrieval

    def _search(self, query: str, k: int | None) -> list[Document]:
        result = self.core.retrieve(query, k=self.k if k is None else k)
        return to_lc_documents(result.chunks, result.served_by)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return self._search(query, k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        # Query embedding and traversal are CPU work: keep them off the event loop.
        return await asyncio.to_thread(self._search, query, k)


def _aligned(matrix: Any, rows: int) -> Any:
    return matrix if matrix is not None and len(matrix) == rows else None
