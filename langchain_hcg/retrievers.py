"""``HCGRetriever``: graph-guided retrieval as a LangChain ``BaseRetriever``.

A thin wrapper around ``hcg_core.retrieval.CausalGraphRetriever``; ``invoke``/``ainvoke``,
callbacks and tracing are LangChain's own; ``invoke(q, k=n, filter={...})`` overrides the
constructor's ``k`` and ``filter``. It pickles and deep-copies (when its embedder does).
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
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from hcg_core.adapter_common import attach_dense, build_core
from hcg_core.config import DEFAULT_TIER, BuildSettings, RetrievalConfig
from hcg_core.contract import (
    DEFAULT_K,
    amean_query_vector,
    dict_filter,
    filter_mask,
    keep_in_batch,
)
from hcg_core.corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS, chunk_documents
from hcg_core.errors import ConfigError, InputError
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from hcg_core.types import CausalGraph, DomainSpec, OutcomeConfig

from ._convert import metadata_view, to_chunk, to_core_document, to_lc_documents
from ._dense import LangChainStoreDense
from ._models import resolve_embedder, to_structured_llm

# DEFAULT_K (hcg_core.contract) is the same in both adapters: 10, the core's top_k.

# VectorStoreRetriever's search types that mean something here: hcg's own ranking, and that
# ranking cut at a score. "mmr" re-ranks by a diversity rule hcg does not have: refused, not faked.
SEARCH_TYPES = ("similarity", "similarity_score_threshold")
SEARCH_KWARGS = ("k", "filter", "score_threshold")


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
    ``doc_id`` and the provenance keys of ``RetrievedChunk.provenance`` (``hcg_score`` and its
    parts, ``hcg_route``, ``hcg_served_by``, ``hcg_paths``, ``hcg_mechanisms``,
    ``hcg_edge_ids``, ``hcg_parent_id``): the same keys as the LlamaIndex adapter.

    Filters (Chroma-style, applied before ranking, so ``k`` matching documents come back when
    ``k`` exist)::

        retriever.invoke(q, filter={"source": "a.md", "year": {"$in": [2023, 2024]}})

    ``VectorStoreRetriever``'s options are taken as it takes them::

        HCGRetriever(core=core, search_kwargs={"k": 3, "filter": {"source": "a.md"}})
        HCGRetriever(core=core, search_type="similarity_score_threshold",
                     search_kwargs={"score_threshold": 0.2})

    Another ``search_type`` ("mmr"), another ``search_kwargs`` key, an unknown constructor
    field, or ``k=`` together with ``search_kwargs["k"]`` raises ``ConfigError``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    _last_update: Any = PrivateAttr(default=None)

    core: Any = Field(description="the hcg_core.retrieval.HCGRetriever doing the work")
    k: int = Field(default=DEFAULT_K, description="documents returned per query")
    filter: dict[str, Any] | None = Field(
        default=None,
        description="metadata filter for every query: {field: value}, {field: {'$in': [...]}}, "
        "$eq/$ne/$gt/$gte/$lt/$lte/$nin, $and/$or",
    )
    search_type: str = Field(
        default="similarity",
        description="'similarity' (hcg's ranking) or 'similarity_score_threshold' (that "
        "ranking, documents scoring under search_kwargs['score_threshold'] left out)",
    )
    search_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="as VectorStoreRetriever's: k, filter, score_threshold",
    )

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic sees them, so a wrong option is a ConfigError naming it.
        super().__init__(**_options(type(self), data))

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
        k: int | None = None,
        *,
        search_type: str = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        chunk: bool = True,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        overlap_words: int = DEFAULT_OVERLAP_WORDS,
        tier: str = DEFAULT_TIER,
        outcome: OutcomeConfig | None = None,
        spec: DomainSpec | None = None,
        config: RetrievalConfig | None = None,
        progress: bool | None = None,
        build_options: dict[str, Any] | None = None,
        vector_store: Any | None = None,
        id_filter: Any | None = None,
    ) -> HCGRetriever:
        """Chunk ``documents`` (unless ``chunk=False``), build the graph, and wrap it.

        Args:
            documents: LangChain Documents; their ``id`` (else a content hash) is the doc id.
            llm: any LangChain chat model for the LLM pipeline; ``None`` builds offline.
            embeddings: any LangChain ``Embeddings``; default the bundled offline MiniLM.
            k: documents per query (default 10).
            search_type, search_kwargs: as ``VectorStore.as_retriever`` takes them (see the
                class).
            chunk: set False when the documents are already split: each becomes one chunk.
            chunk_words, overlap_words: the word-window chunker's settings.
            tier, outcome, spec, progress: see ``hcg_core.graph_build.build_graph``.
            build_options: further builder options, passed to ``build_graph`` (the same argument
                as ``HCGIndex``'s).
            config: stage 3 settings.
            vector_store: a LangChain ``VectorStore`` (Qdrant, Chroma, PGVector...) to hold the
                chunk vectors and serve the dense candidates; BM25 and the graph stay local. Its
                embeddings must be the retriever's (docs/scaling.md). Default: in-process numpy.
            id_filter: for a store other than Qdrant or ``InMemoryVectorStore``: ids -> that
                store's ``filter=`` value selecting those ids.
        """
        docs = list(documents)
        if not docs:
            raise InputError("from_documents got no documents")
        # Ids given twice are refused, empty documents skipped, repeats without an id kept once
        # (each with a warning): a silent last-one-wins would lose a document.
        names = [d.metadata.get("source") for d in docs]  # a LangChain loader's file path
        keep = keep_in_batch([(d.id, d.page_content) for d in docs], insert=False, names=names)
        docs = [docs[i] for i in keep]
        if not docs:
            raise InputError("from_documents got no document with text")
        items = _core_items(docs, chunk)
        chunks = (
            chunk_documents(items, chunk_words=chunk_words, overlap_words=overlap_words)
            if chunk
            else items
        )
        embedder = resolve_embedder(embeddings)
        build = BuildSettings(tier, outcome, spec, progress, dict(build_options or {}))
        core, _ = build_core(chunks, embedder, to_structured_llm(llm), build, config)
        if vector_store is not None:
            _attach_store(core, vector_store, id_filter)
        return cls._wrap(core, k, search_type, search_kwargs)

    @classmethod
    def _wrap(
        cls, core: Any, k: int | None, search_type: str, search_kwargs: dict[str, Any] | None
    ) -> HCGRetriever:
        options: dict[str, Any] = {"core": core, "search_type": search_type}
        if k is not None:
            options["k"] = k
        if search_kwargs:
            options["search_kwargs"] = dict(search_kwargs)
        return cls(**options)

    @classmethod
    def from_persist_dir(
        cls,
        path: str | os.PathLike,
        embeddings: Any | None = None,
        k: int | None = None,
        config: RetrievalConfig | None = None,
        *,
        search_type: str = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        vector_store: Any | None = None,
        id_filter: Any | None = None,
    ) -> HCGRetriever:
        """Load a core graph directory (``save``, ``hcg build``). With no ``embeddings``, the
        embedder named in its manifest is rebuilt (the offline ones are; others must be passed).
        ``vector_store``/``id_filter``, ``search_type``/``search_kwargs``: as in
        :meth:`from_documents`; a store that already holds the graph's chunks (a persisted
        collection) is not rewritten."""
        embedder = None if embeddings is None else resolve_embedder(embeddings)
        core = CoreRetriever.load(path, embedder=embedder, config=config)
        if vector_store is not None:
            _attach_store(core, vector_store, id_filter)
        return cls._wrap(core, k, search_type, search_kwargs)

    def save(self, path: str | os.PathLike) -> None:
        """Write the graph, its vectors and the embedder's name as a core graph directory."""
        self.core.save(path)

    @property
    def graph(self) -> CausalGraph:
        """The causal graph behind this retriever."""
        return self.core.graph

    # ------------------------------------------------------------------ edits

    def add_documents(
        self,
        documents: Sequence[Document],
        *,
        chunk: bool = True,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        overlap_words: int = DEFAULT_OVERLAP_WORDS,
    ) -> list[str]:
        """Add documents incrementally (like a vector store's ``add_documents``); returns the
        ids of the chunks added.

        Only the new text is embedded and indexed; with an offline-built graph its causal
        statements update the edges (see ``hcg_core`` ``CausalGraphRetriever.insert``; the
        report, with anything the graph could not keep, is ``last_update`` and is logged). A
        document whose id is already indexed raises ``InputError``: ``delete`` it first.
        """
        docs = list(documents)
        docs = [docs[i] for i in keep_in_batch([(d.id, d.page_content) for d in docs], insert=True)]
        items = _core_items(docs, chunk)
        before = len(self.core.graph.chunks)
        self._last_update = self.core.insert(
            items, chunk_words=chunk_words, overlap_words=overlap_words
        )
        return [c.id for c in self.core.graph.chunks[before:]]

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """Delete documents (by document id) or chunks (by chunk id), like a vector store's
        ``delete``; edges only they supported are removed (``last_update.edges_removed``,
        logged). Returns False when none of the ids was found."""
        if kwargs:
            raise ConfigError(f"unknown delete option(s) {sorted(kwargs)}; pass ids")
        if not ids:
            raise InputError("delete needs the ids of the documents or chunks to remove")
        ids = [ids] if isinstance(ids, str) else list(ids)
        self._last_update = self.core.delete(ids, chunk_ids=ids)
        return self._last_update.chunks_removed > 0

    @property
    def last_update(self) -> Any:
        """The ``UpdateReport`` of the latest ``add_documents`` or ``delete`` (None before)."""
        return self._last_update

    # ------------------------------------------------------------------ retrieval

    def _allowed(self, filter: dict[str, Any] | None) -> Any:
        spec = self.filter if filter is None else filter
        if spec is None:
            return None
        keep = dict_filter(spec)
        return filter_mask(self.core.graph.chunks, lambda c: keep(metadata_view(c)))

    def _search(
        self,
        query: str,
        k: int | None = None,
        filter: dict[str, Any] | None = None,
        qvec: Any = None,
        score_threshold: float | None = None,
    ) -> list[Document]:
        allowed = self._allowed(filter)
        qvec = self.core.embed_query(query) if qvec is None else self.core.query_vector(qvec)
        result = self.core.retrieve_by_vector(
            query, qvec, self.k if k is None else k, allowed=allowed
        )
        docs = to_lc_documents(result.chunks, result.served_by)
        threshold = self._threshold(score_threshold)
        if threshold is None:
            return docs
        # As VectorStoreRetriever: the k best, then those scoring at least the threshold.
        return [d for d in docs if d.metadata["hcg_score"] >= threshold]

    def _threshold(self, per_call: float | None) -> float | None:
        if self.search_type != "similarity_score_threshold":
            if per_call is not None:
                raise ConfigError(
                    "score_threshold needs search_type='similarity_score_threshold' "
                    f"(this retriever's is {self.search_type!r})"
                )
            return None
        value = self.search_kwargs["score_threshold"] if per_call is None else per_call
        return _score_threshold(value)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._search(query, **_per_call(kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        options = _per_call(kwargs)
        # The embeddings' own async API where they have one (else a thread); the graph and
        # ranking work is CPU: keep it off the event loop too.
        qvec = await amean_query_vector(self.core.embedder, [query])
        return await asyncio.to_thread(self._search, query, qvec=qvec, **options)


def _options(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The constructor's options, checked as VectorStoreRetriever checks its own (and more), with
    ``search_kwargs``' k and filter as the fields they set."""
    unknown = sorted(set(data) - set(cls.model_fields))
    if unknown:
        raise ConfigError(
            f"unknown HCGRetriever option(s) {unknown}; it takes "
            f"{', '.join(sorted(cls.model_fields))}"
        )
    search_type = data.get("search_type", "similarity")
    if search_type not in SEARCH_TYPES:
        raise ConfigError(
            f"search_type {search_type!r} is not supported; use one of {SEARCH_TYPES}: "
            "'similarity' is hcg's ranking (there is no 'mmr' re-ranking)"
        )
    search = data.get("search_kwargs") or {}
    if not isinstance(search, dict):
        raise ConfigError(f"search_kwargs must be a dict, got {type(search).__name__}")
    extra = sorted(set(search) - set(SEARCH_KWARGS))
    if extra:
        raise ConfigError(f"unknown search_kwargs {extra}; HCGRetriever takes {SEARCH_KWARGS}")
    fields = {key: search[key] for key in ("k", "filter") if key in search}
    for key in fields:
        if key in data:
            raise ConfigError(
                f"{key} is given twice ({key}={data[key]!r} and search_kwargs[{key!r}]="
                f"{search[key]!r}); pass one"
            )
    if search_type == "similarity_score_threshold":
        _score_threshold(search.get("score_threshold"))
    elif "score_threshold" in search:
        raise ConfigError(
            "search_kwargs['score_threshold'] needs search_type='similarity_score_threshold'"
        )
    options = {**data, **fields}
    if "core" in options and not isinstance(options["core"], CoreRetriever):
        raise ConfigError(
            "core must be an hcg_core.retrieval.HCGRetriever; build one with "
            "HCGRetriever.from_documents(...) or HCGRetriever.from_persist_dir(path)"
        )
    if options.get("filter") is not None:
        dict_filter(options["filter"])  # raises ConfigError on an unsupported operator
    return options


def _score_threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(
            "search_type='similarity_score_threshold' needs search_kwargs['score_threshold'], "
            f"a number in [0, 1] (hcg_score's range), got {value!r}"
        )
    return float(value)


def _per_call(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's options (``k``, ``filter``, ``score_threshold``) for ``_search``."""
    # Ignoring an option (a misspelt filter, a vector store's search_type) would return
    # unfiltered results without a word. ``verbose`` is LangChain's own (invoke forwards it).
    kwargs = {k: v for k, v in kwargs.items() if k != "verbose"}
    unknown = sorted(set(kwargs) - set(SEARCH_KWARGS))
    if unknown:
        raise ConfigError(
            f"unknown retrieval option(s) {unknown}; HCGRetriever takes k, filter and "
            "score_threshold"
        )
    return kwargs


def _attach_store(core: CoreRetriever, store: Any, id_filter: Any) -> None:
    attach_dense(core, LangChainStoreDense(store, [c.id for c in core.graph.chunks], id_filter))


def _core_items(docs: Sequence[Document], chunk: bool) -> list[Any]:
    """The documents as core documents to chunk, or (``chunk=False``) each as one core chunk."""
    return [to_core_document(d) for d in docs] if chunk else [to_chunk(d) for d in docs]
