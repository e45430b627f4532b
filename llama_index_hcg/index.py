"""``HCGIndex``: the causal graph as a LlamaIndex ``BaseIndex`` (build, insert, delete, persist).

The nodes live in the storage context's docstore like any index's; the graph (spec, variables,
edges, evidence links by node id) lives in the JSON index struct and its vectors in ``.npy``
files beside ``index_store.json`` (inline base64 where there is no local folder; see
``_persist``), so ``storage_context.persist`` / ``load_index_from_storage`` round-trip with no
pickle. Models are never persisted: pass ``embed_model`` (and ``llm``) again on load.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.indices.base import BaseIndex
from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)
from llama_index.core.storage.docstore.types import RefDocInfo
from llama_index.core.storage.index_store.simple_index_store import SimpleIndexStore
from llama_index.core.storage.storage_context import StorageContext

from hcg_core.adapter_common import attach_dense, build_core, core_over
from hcg_core.config import DEFAULT_TIER, BuildSettings, RetrievalConfig
from hcg_core.contract import keep_in_batch, refuse_lone_surrogates, vectors_match
from hcg_core.errors import BuildError, StoreError
from hcg_core.ports import Embedder
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from hcg_core.store import load_graph
from hcg_core.types import CausalGraph, DomainSpec, OutcomeConfig

from ._chunker import HCGNodeParser, default_transformations, user_transformations
from ._convert import node_to_chunk
from ._dense import VectorStoreDense
from ._models import query_embed_model, resolve_embedder, to_structured_llm
from ._persist import (
    HCGIndexStruct,
    VectorSource,
    graph_from_dict,
    graph_to_dict,
    persist_whole_files,
    put_vectors,
    read_vectors,
    store_hooks,
    store_source,
)
from .retriever import HCGRetriever

logger = logging.getLogger(__name__)

# The HCGNodeParser settings a struct keeps (a reloaded index's inserts chunk as the build did).
NODE_PARSER_FIELDS = {"chunk_words", "overlap_words"}
# The keywords as_retriever reads (as_query_engine forwards others of its own: ignored).
AS_RETRIEVER_OPTIONS = (
    "similarity_top_k",
    "config",
    "callback_manager",
    "filters",
    "doc_ids",
    "node_ids",
)


class HCGIndex(BaseIndex[HCGIndexStruct]):
    """A schema-constrained causal graph over your nodes, queried by graph-guided retrieval.

    Setup::

        from llama_index.core import SimpleDirectoryReader
        from llama_index_hcg import HCGIndex

        docs = SimpleDirectoryReader("data").load_data()
        index = HCGIndex.from_documents(docs)                 # offline builder, offline embedder
        index = HCGIndex.from_documents(docs, llm=my_llm)     # the paper's LLM pipeline

    Use::

        retriever = index.as_retriever(similarity_top_k=5)
        answer = index.as_query_engine(llm=my_llm).query("What drives readmissions?")
        index.storage_context.persist(persist_dir="storage")

    Args:
        nodes: chunks to build from (``from_documents`` makes them with the transformations).
        llm: any LlamaIndex LLM (or a core StructuredLLM) for the LLM build pipeline; ``None``
            builds offline. Used only while building.
        embed_model: any ``BaseEmbedding`` (or a core Embedder); default the model set on
            ``Settings`` if any, else the bundled offline MiniLM. Pass it again when loading.
        tier, outcome, spec: build settings, see ``hcg_core.graph_build.build_graph``.
        config: stage 3 settings for retrievers made by ``as_retriever``.
        build_options: further builder options, passed through to ``build_graph``.
        evidence_per_edge: the evidence cap an ``insert`` links with (default: the build's).
        vector_store: any LlamaIndex ``BasePydanticVectorStore`` (Qdrant, Milvus, pgvector...):
            chunk vectors are written there and the hybrid ranker's dense candidates read from
            there; BM25 and the graph stay local. Pass it again on load (docs/scaling.md).
        persist_dir: on load, the folder holding the index's ``.npy`` vector files; needed only
            when the index store cannot say which folder it was read from.
        vectors: on load, the struct's vectors already at hand (``{"variables": ...,
            "chunks": ...}``, as ``from_graph_dir`` has them), used instead of reading them.
    """

    index_struct_cls = HCGIndexStruct
    # True while the struct in the index store lacks the graph data (see _sync); set by the
    # index itself, read by the store's persist hook (_persist).
    _struct_stale = False

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        index_struct: HCGIndexStruct | None = None,
        storage_context: StorageContext | None = None,
        callback_manager: CallbackManager | None = None,
        show_progress: bool = False,
        *,
        llm: Any | None = None,
        embed_model: Any | None = None,
        tier: str = DEFAULT_TIER,
        outcome: OutcomeConfig | None = None,
        spec: DomainSpec | None = None,
        config: RetrievalConfig | None = None,
        build_options: dict[str, Any] | None = None,
        evidence_per_edge: int | None = None,
        vector_store: Any | None = None,
        persist_dir: str | os.PathLike | None = None,
        transformations: list[TransformComponent] | None = None,
        vectors: dict[str, np.ndarray | None] | None = None,
        **kwargs: Any,
    ) -> None:
        # hcg's chunker, when from_documents chose it (no transformations of the user's): kept in
        # the struct so a reloaded index's inserts chunk as the build did.
        parser = transformations[0] if transformations and len(transformations) == 1 else None
        self._hcg_parser = parser if isinstance(parser, HCGNodeParser) else None
        # Consumed here, before BaseIndex builds: the same kwargs also reach the transformations.
        self._embedder: Embedder = _loading_embedder(embed_model, index_struct)
        self._embed_model = query_embed_model(embed_model, self._embedder)  # embeds queries
        self._llm = to_structured_llm(llm)
        self._build = BuildSettings(tier, outcome, spec, show_progress, dict(build_options or {}))
        self._config = config or RetrievalConfig()
        self._evidence_per_edge = evidence_per_edge
        # The graph, its vectors and the support ledger: all state lives in the core retriever.
        self._core: CoreRetriever | None = None
        self.last_update: Any = None  # the UpdateReport of the latest insert or delete
        # Dense candidates from a vector store (docs/scaling.md); None: the in-process matrix.
        self._dense_store = vector_store
        if vector_store is not None:
            VectorStoreDense(vector_store, [])  # refuses a non-LlamaIndex store before the build
        super().__init__(
            nodes=nodes,
            index_struct=index_struct,
            storage_context=storage_context,
            callback_manager=callback_manager,
            show_progress=show_progress,
            transformations=transformations,
            **kwargs,
        )
        saved = self._index_struct.node_parser
        if transformations is None and saved and not user_transformations():
            # A reloaded index built on hcg's chunker: insert, refresh_ref_docs and
            # update_ref_doc chunk as the build did, not with LlamaIndex's default splitter.
            try:
                self._transformations = [HCGNodeParser(**saved)]
            except ValueError as exc:  # pydantic's ValidationError: a damaged struct
                raise StoreError(
                    f"the HCGIndex struct in index_store.json is damaged: its node_parser "
                    f"settings do not read ({str(exc).splitlines()[0]}); persist the index again"
                ) from None
        # As VectorStoreIndex does: the query model reports to the index's callback manager.
        self._embed_model.callback_manager = self._callback_manager
        context = self._storage_context
        persist_whole_files(context.docstore, context.graph_store, *context.vector_stores.values())
        store = self._storage_context.index_store
        # Where a loaded struct's .npy files are; None: the folder the index store was read from.
        source = VectorSource(os.path.abspath(os.fspath(persist_dir))) if persist_dir else None
        if isinstance(store, SimpleIndexStore):
            hooks = store_hooks(store)
            hooks.indexes.add(self)
            if source is not None and hooks.source is None:
                hooks.source = source  # later reads of this store use the caller's folder too
        if self._core is None:  # loaded from an existing struct
            self._restore(self._index_struct, vectors, source or store_source(store))

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Any],
        storage_context: StorageContext | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        **kwargs: Any,
    ) -> HCGIndex:
        """Split ``documents`` into nodes and build the graph over them.

        With no ``transformations=`` and no node parser or transformations of yours on
        ``Settings``, the documents are chunked with hcg's own structure-aware chunker
        (:class:`~llama_index_hcg._chunker.HCGNodeParser`, the one ``hcg build`` and the LangChain
        adapter use; logged at INFO), not LlamaIndex's default ``SentenceSplitter(1024, 200)``,
        whose ~750-word nodes the ranker measured worse on (docs/evaluation.md, "Doors");
        ``insert``, ``refresh_ref_docs`` and ``update_ref_doc`` then chunk the same way. Your
        ``transformations=`` or ``Settings`` are used as given.

        Two documents with one id are refused (``InputError``) before anything is stored: their
        nodes would share one ``ref_doc_id``, and deleting one would delete both. Empty documents
        are skipped with a warning.
        """
        documents = list(documents)
        keep = keep_in_batch(
            [(d.id_, d.get_content()) for d in documents],
            insert=False,
            names=[d.metadata.get("file_path") for d in documents],  # SimpleDirectoryReader's
        )
        return super().from_documents(
            [documents[i] for i in keep],
            storage_context=storage_context,
            show_progress=show_progress,
            callback_manager=callback_manager,
            transformations=default_transformations(transformations),
            **kwargs,
        )

    # ------------------------------------------------------------------ build and state

    def insert(self, document: Any, **insert_kwargs: Any) -> None:
        """``BaseIndex.insert``, refusing a document without text before anything is stored."""
        keep_in_batch([(document.id_, document.get_content())], insert=True)
        super().insert(document, **insert_kwargs)

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """``BaseIndex.insert_nodes``, refusing (before the docstore is touched) two nodes with
        one id in the batch, or a node without text."""
        nodes = list(nodes)
        keep_in_batch([(n.node_id, n.get_content()) for n in nodes], insert=True, what="node")
        super().insert_nodes(nodes, **insert_kwargs)

    def _build_index_from_nodes(
        self, nodes: Sequence[BaseNode], **build_kwargs: Any
    ) -> HCGIndexStruct:
        nodes = list(nodes)
        keep = keep_in_batch(
            [(n.node_id, n.get_content()) for n in nodes], insert=False, what="node"
        )
        chunks = [node_to_chunk(nodes[i]) for i in keep]
        if not chunks:
            raise BuildError("HCGIndex needs at least one node with text to build a graph from")
        core, result = build_core(chunks, self._embedder, self._llm, self._build, self._config)
        self._take_core(core)
        struct = HCGIndexStruct(report=_json_report(result.report))
        if self._hcg_parser is not None:
            struct.node_parser = self._hcg_parser.model_dump(include=NODE_PARSER_FIELDS)
        self._write_struct(struct)
        return struct

    def _take_core(self, core: CoreRetriever) -> None:
        """Use ``core`` (its dense candidates from the vector store, if any)."""
        if self._dense_store is not None:
            chunk_ids = [c.id for c in core.graph.chunks]
            attach_dense(core, VectorStoreDense(self._dense_store, chunk_ids))
        self._core = core

    def _write_struct(self, struct: HCGIndexStruct, folder: Path | None = None) -> None:
        """Write the whole state into ``struct``: vectors inline, or as ``.npy`` files in
        ``folder`` (a local persist folder)."""
        core = self.core_retriever
        struct.graph = {}
        struct.graph_json = json.dumps(graph_to_dict(core.graph), ensure_ascii=False)
        struct.embedder_name = self._embedder.name
        chunk_emb = core.chunk_embeddings
        struct.dim = (
            int(chunk_emb.shape[1])
            if chunk_emb is not None and chunk_emb.size
            else int(self._embedder.dim)
        )
        arrays = {"variables": core.variable_embeddings, "chunks": chunk_emb}
        ledger = core.ledger_json()
        struct.ledger_json = json.dumps(ledger, ensure_ascii=False) if ledger else ""
        put_vectors(struct, arrays, folder)

    def _persist_struct(self, folder: Path | None = None) -> None:
        """The struct in full, vectors as ``.npy`` in ``folder`` (None: inline), into the index
        store: called by the store's ``persist``, and by :meth:`_flush_struct`."""
        self._struct_stale = False
        self._write_struct(self._index_struct, folder)
        self._storage_context.index_store.add_index_struct(self._index_struct)

    def _restore(
        self,
        struct: HCGIndexStruct,
        handed: dict[str, np.ndarray | None] | None,
        source: VectorSource | None,
    ) -> None:
        """Take the state of a loaded struct; ``handed``: its vectors, already read; ``source``:
        where the files of vectors it references are."""
        data = struct.graph_data()
        chunk_ids = data.get("chunk_ids", [])
        nodes = self._docstore.get_nodes(chunk_ids, raise_error=False)
        if len(nodes) != len(chunk_ids):
            found = {n.node_id for n in nodes}
            missing = [c for c in chunk_ids if c not in found]
            raise StoreError(
                f"the docstore lacks {len(missing)} of the graph's nodes (first: {missing[0]!r}); "
                "load with the storage context the index was persisted with"
            )
        graph = graph_from_dict(data, [node_to_chunk(n) for n in nodes])
        same = vectors_match(struct.embedder_name, struct.dim, self._embedder)
        vectors: dict[str, np.ndarray | None] = {}
        problems: list[str] = []
        if same:
            vectors, problems = (handed, []) if handed is not None else read_vectors(struct, source)
        for problem in problems:
            # The vectors derive from the docstore's texts: recomputing them loses nothing.
            logger.warning("HCGIndex: %s; these vectors were recomputed", problem)
        # The core retriever computes any missing or misaligned vectors.
        variable_emb, chunk_emb = vectors.get("variables"), vectors.get("chunks")
        self._take_core(core_over(graph, self._embedder, self._config, variable_emb, chunk_emb))
        if struct.ledger_json:
            from hcg_core.graph_build.incremental import SupportLedger

            try:
                self._core.ledger = SupportLedger.from_json(json.loads(struct.ledger_json), graph)
            except (StoreError, ValueError) as exc:  # ValueError: not JSON
                logger.warning("HCGIndex: %s; edits will link evidence only", exc)
        if not same and struct.embedder_name:  # re-embedded with the new model
            logger.warning(
                "HCGIndex was built with embedder %r (dim %s) and is loaded with %r (dim %s): "
                "all vectors were recomputed; pass the original embed_model to reuse the "
                "stored ones",
                struct.embedder_name,
                struct.dim,
                self._embedder.name,
                self._embedder.dim,
            )
        if not same or problems or handed is not None:
            # The stored vectors are not the ones in use (recomputed, or handed over by
            # from_graph_dir): store what retrieval now uses.
            self._sync()

    @property
    def graph(self) -> CausalGraph:
        """The current causal graph (its chunks are this index's nodes, by node id)."""
        return self.core_retriever.graph

    def to_networkx(self) -> Any:
        """The causal graph as a ``networkx.MultiDiGraph`` (see ``CausalGraph.to_networkx``)."""
        return self.graph.to_networkx()

    @property
    def embedder(self) -> Embedder:
        """The core embedder every vector of this index was made with."""
        return self._embedder

    @property
    def core_retriever(self) -> CoreRetriever:
        """The framework-free retriever over the current graph (edited in place by inserts and
        deletes)."""
        assert self._core is not None  # built or restored in __init__
        return self._core

    # ------------------------------------------------------------------ edits

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Add nodes as chunks through the core retriever's incremental insert.

        Only the new nodes are embedded, tokenised and split; with the offline builder's ledger
        their causal statements update the graph's edges (existing metrics and variables; what
        they cannot express is logged and in ``last_update``). An LLM-built graph has no ledger:
        no edge is extracted from new nodes
        (a documented limitation; rebuild to re-extract). Either way every edge is then linked
        again to the chunks that state it. Nodes already in the graph are skipped.
        """
        core = self.core_retriever
        self.last_update = core.insert(
            [node_to_chunk(n) for n in nodes],
            skip_existing=True,
            evidence_per_edge=self._evidence_per_edge,
        )
        self._sync()

    def relink(self) -> Any:
        """Link every edge of the index's graph again to the chunks that state it (what
        ``hcg relink`` does to a graph directory): no LLM call, no edge added or removed. The
        index store gets the new graph like after an insert; persist it to keep it. Returns the
        core's ``UpdateReport`` (also in ``last_update``)."""
        self.last_update = self.core_retriever.relink(self._evidence_per_edge)
        self._sync()
        return self.last_update

    def _sync(self) -> None:
        """Store the core retriever's edited graph and vectors in the struct now, or,
        with an in-memory ``SimpleIndexStore``, when the store is next read or persisted."""
        store = self._storage_context.index_store
        if not isinstance(store, SimpleIndexStore):
            # A remote store (Redis, Mongo...) is the persisted state: write it every time.
            self._persist_struct()
            return
        # Encoding the whole graph and every vector after each insert would make a stream of n
        # inserts O(n x corpus). Until the store is read or persisted, the struct it receives
        # (BaseIndex.insert_nodes writes it after every insert) carries no graph data; reading
        # the store, persisting it, or ``index_struct`` writes it in full first.
        struct = self._index_struct
        struct.graph, struct.graph_json, struct.ledger_json = {}, "", ""
        struct.variable_embeddings = struct.chunk_embeddings = ""
        struct.vector_files = {}
        self._struct_stale = True  # the store's hooks (it is in their indexes) write it later

    def _flush_struct(self) -> None:
        """Write the deferred struct (see :meth:`_sync`) into the struct and the index store."""
        if self._struct_stale:
            self._persist_struct()

    @property
    def index_struct(self) -> HCGIndexStruct:
        self._flush_struct()
        return self._index_struct

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        """Remove a chunk and its evidence links; edges it alone supported are removed."""
        self._remove_chunks([node_id])

    def _remove_chunks(self, node_ids: Sequence[str]) -> tuple[str, ...]:
        """Drop chunks from the graph; returns (and logs) the edges removed with them."""
        report = self.core_retriever.delete(chunk_ids=list(node_ids))
        self.last_update = report
        if not report.chunks_removed:
            return ()
        dropped = report.edges_removed
        self._index_struct.dropped_edges.extend(dropped)
        self._sync()
        return dropped

    def delete_nodes(
        self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> tuple[str, ...]:
        """Delete nodes in one graph edit (one re-compile, one struct write).

        Returns the ids of the edges dropped because these nodes were their only evidence
        (also logged as a warning and appended to ``index_struct.dropped_edges``).
        """
        node_ids = list(node_ids)
        dropped = self._remove_chunks(node_ids)
        if delete_from_docstore:
            for node_id in node_ids:
                self.docstore.delete_document(node_id, raise_error=False)
        self._storage_context.index_store.add_index_struct(self._index_struct)
        return dropped

    async def adelete_nodes(self, *args: Any, **kwargs: Any) -> tuple[str, ...]:
        return self.delete_nodes(*args, **kwargs)

    def delete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> tuple[str, ...]:
        """Delete a document's nodes, their evidence links, and edges only they supported.

        Returns the dropped edges' ids (see :meth:`delete_nodes`).
        """
        info = self.docstore.get_ref_doc_info(ref_doc_id)
        if info is None:
            logger.warning("ref_doc_id %s not found, nothing deleted.", ref_doc_id)
            return ()
        # Copy the ids: the base class iterates the docstore's own list while deleting from it,
        # which skips every other node of a multi-node document.
        dropped = self.delete_nodes(
            list(info.node_ids), delete_from_docstore=delete_from_docstore, **delete_kwargs
        )
        if delete_from_docstore:
            self.docstore.delete_ref_doc(ref_doc_id, raise_error=False)
        return dropped

    async def adelete_ref_doc(self, *args: Any, **kwargs: Any) -> tuple[str, ...]:
        return self.delete_ref_doc(*args, **kwargs)

    def update_ref_doc(self, document: Any, **update_kwargs: Any) -> tuple[str, ...]:
        """Replace a document's nodes: delete, then insert through the core, which re-extracts
        the new text's causal statements. Returns the ids of the edges the update lost (removed
        with the old text and not restored by the new one), which are also logged."""
        # Before the old nodes are deleted: a new text that cannot be inserted loses nothing.
        refuse_lone_surrogates([(document.id_, document.get_content())], what="document")
        with self._callback_manager.as_trace("update_ref_doc"):
            removed = self.delete_ref_doc(
                document.id_, delete_from_docstore=True, **update_kwargs.pop("delete_kwargs", {})
            )
            self.insert(document, **update_kwargs.pop("insert_kwargs", {}))
        current = {e.id for e in self.graph.edges}
        lost = tuple(e for e in removed if e not in current)
        restored = set(removed) - set(lost)
        if restored:  # back again: not lost after all
            self._index_struct.dropped_edges[:] = [
                e for e in self._index_struct.dropped_edges if e not in restored
            ]
            self._storage_context.index_store.add_index_struct(self._index_struct)
        if lost:
            logger.warning(
                "update_ref_doc(%s): %d causal edge(s) were supported only by the old text and "
                "are not supported by the new one (%s)",
                document.id_,
                len(lost),
                ", ".join(lost[:5]) + (", ..." if len(lost) > 5 else ""),
            )
        return lost

    async def aupdate_ref_doc(self, document: Any, **update_kwargs: Any) -> tuple[str, ...]:
        return self.update_ref_doc(document, **update_kwargs)

    def refresh_ref_docs(self, documents: Sequence[Any], **update_kwargs: Any) -> list[bool]:
        """The base class's refresh (which documents changed), each changed one updated through
        the core (see :meth:`update_ref_doc`); the edges lost are in
        ``index_struct.dropped_edges`` and each update logs its own."""
        documents = list(documents)
        # Before the base class hashes them (a lone surrogate is a UnicodeEncodeError there).
        refuse_lone_surrogates([(d.id_, d.get_content()) for d in documents], what="document")
        return super().refresh_ref_docs(documents, **update_kwargs)

    async def arefresh_ref_docs(self, documents: Sequence[Any], **update_kwargs: Any) -> list[bool]:
        return self.refresh_ref_docs(documents, **update_kwargs)

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """Ingested documents and their nodes, as the docstore records them."""
        out: dict[str, RefDocInfo] = {}
        for node in self._docstore.get_nodes([c.id for c in self.graph.chunks], raise_error=False):
            ref = node.source_node
            if ref is None or ref.node_id in out:
                continue
            info = self._docstore.get_ref_doc_info(ref.node_id)
            if info is not None:
                out[ref.node_id] = info
        return out

    # ------------------------------------------------------------------ querying

    def as_retriever(self, **kwargs: Any) -> HCGRetriever:
        """An :class:`HCGRetriever`; ``similarity_top_k``, ``config``, ``filters``, ``doc_ids``
        and ``node_ids`` are read; other keywords (``as_query_engine`` forwards its own) ignored."""
        options = {name: kwargs.get(name) for name in AS_RETRIEVER_OPTIONS}
        verbose = bool(kwargs.get("verbose", False))
        return HCGRetriever(self, object_map=self._object_map, verbose=verbose, **options)

    # ------------------------------------------------------------------ core graph directories

    def save_graph_dir(self, directory: str | os.PathLike) -> None:
        """Write the graph as a core graph directory (readable by ``hcg_core`` and the CLI)."""
        self.core_retriever.save(directory, report=self._index_struct.report or None)

    @classmethod
    def from_graph_dir(
        cls,
        directory: str | os.PathLike,
        *,
        embed_model: Any | None = None,
        storage_context: StorageContext | None = None,
        **kwargs: Any,
    ) -> HCGIndex:
        """Wrap a core graph directory (``hcg build`` output) as an index; nodes keep chunk ids.

        With no ``embed_model``, the embedder named in the directory's manifest is rebuilt.
        """
        stored = load_graph(directory)
        if embed_model is None and stored.embedder_name:
            from hcg_core.embedders import embedder_from_name

            embed_model = embedder_from_name(stored.embedder_name)
        storage_context = storage_context or StorageContext.from_defaults()
        nodes = []
        for c in stored.graph.chunks:
            node = TextNode(id_=c.id, text=c.text, metadata=dict(c.metadata))
            if c.doc_id:
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=c.doc_id)
            nodes.append(node)
        storage_context.docstore.add_documents(nodes, allow_update=True)
        dims = [
            m.shape[1]
            for m in (stored.chunk_embeddings, stored.variable_embeddings)
            if m is not None
        ]
        struct = HCGIndexStruct(
            graph_json=json.dumps(graph_to_dict(stored.graph), ensure_ascii=False),
            embedder_name=stored.embedder_name or "",
            dim=int(dims[0]) if dims else 0,
            report=_json_report(stored.report or {}),
            ledger_json=json.dumps(stored.ledger, ensure_ascii=False) if stored.ledger else "",
        )
        # The directory's (memory-mapped) arrays go to the index as they are, not through base64;
        # a missing set is computed (see _restore).
        vectors = {"variables": stored.variable_embeddings, "chunks": stored.chunk_embeddings}
        return cls(
            index_struct=struct,
            storage_context=storage_context,
            embed_model=embed_model,
            vectors=vectors,
            **kwargs,
        )


def _loading_embedder(embed_model: Any | None, struct: HCGIndexStruct | None) -> Embedder:
    """On load with no explicit or Settings model, rebuild the embedder the index was built with
    (possible for the offline ones) rather than silently switching to the default."""
    if embed_model is None and struct is not None and struct.embedder_name:
        from llama_index.core import Settings

        if getattr(Settings, "_embed_model", None) is None:
            from hcg_core.embedders import embedder_from_name
            from hcg_core.errors import EmbedderError

            try:
                return embedder_from_name(struct.embedder_name)
            except EmbedderError:
                pass  # e.g. an API model: fall through to the default, with a warning on restore
    return resolve_embedder(embed_model)


def _json_report(report: dict[str, Any]) -> dict[str, Any]:
    """The build report as JSON-safe data (the struct is JSON; numpy scalars are not)."""
    return json.loads(
        json.dumps(report, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    )
