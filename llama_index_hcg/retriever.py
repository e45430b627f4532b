"""``HCGRetriever``: a LlamaIndex ``BaseRetriever`` over an :class:`~llama_index_hcg.HCGIndex`.

It returns the index's docstore nodes (same ``node_id``), so evaluators, ``ref_doc_id`` and source
tracking work as with any native retriever; ``retrieve()`` stays the base class's, which emits the
callback events and instrumentation spans. Like ``VectorIndexRetriever`` it honours metadata
filters and ``doc_ids`` (applied before ranking), a query bundle's ``embedding`` and
``custom_embedding_strs`` (so HyDE works), and retrieves asynchronously without blocking the loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from hcg_core.bounded import loads_json
from hcg_core.config import HybridConfig, PaperConfig, RetrievalConfig
from hcg_core.contract import DEFAULT_K, filter_mask
from hcg_core.embedding import embedder_errors
from hcg_core.errors import ConfigError, HCGError, StoreError
from hcg_core.safe_files import atomic_write_text
from hcg_core.types import Chunk, RetrievalResult

from ._convert import stored_id, with_provenance
from ._persist import STRUCT_TYPE

# One default for both adapters (hcg_core.contract.DEFAULT_K): LlamaIndex's vector default of 2
# would cut every causal cone to its first chunk.
DEFAULT_SIMILARITY_TOP_K = DEFAULT_K

# Written next to the storage context's files by persist(); read by from_persist_dir().
RETRIEVER_FILE = "hcg_retriever.json"


class HCGRetriever(BaseRetriever):
    """Graph-guided retrieval as a LlamaIndex retriever.

    Use::

        retriever = index.as_retriever(similarity_top_k=5)
        for nws in retriever.retrieve("Why does stroke risk rise?"):
            print(nws.node.node_id, nws.score, nws.node.metadata["hcg_paths"])

        retriever = HCGRetriever.from_defaults(nodes=nodes, similarity_top_k=5)
        retriever.persist("storage")
        retriever = HCGRetriever.from_persist_dir("storage")

    Each returned node is a shallow copy of the docstore node carrying the provenance keys of
    :meth:`hcg_core.types.RetrievedChunk.provenance` (``hcg_score`` and its parts, ``hcg_route``,
    ``hcg_served_by``, ``hcg_paths``, ``hcg_mechanisms``, ``hcg_edge_ids``, ``hcg_parent_id``);
    these keys are excluded from what the LLM and embedders see.

    Args:
        index: the HCGIndex to query (later inserts and deletes are seen).
        similarity_top_k: nodes per query (default 10, the same in both adapters).
        config: stage 3 settings; default the index's.
        filters: LlamaIndex ``MetadataFilters``, evaluated exactly as ``SimpleVectorStore`` does
            (EQ, NE, GT, GTE, LT, LTE, IN, NIN, CONTAINS, ANY, ALL, TEXT_MATCH, IS_EMPTY; AND, OR,
            NOT), on each node's metadata, before ranking.
        doc_ids: keep only nodes of these documents (``ref_doc_id``); node_ids: only these nodes.
        callback_manager: default the index's.
        kwargs: accepted and ignored, as ``as_query_engine`` forwards its own options here.
    """

    def __init__(
        self,
        index: Any,
        similarity_top_k: int | None = None,
        config: RetrievalConfig | None = None,
        callback_manager: CallbackManager | None = None,
        object_map: dict | None = None,
        verbose: bool = False,
        *,
        filters: MetadataFilters | None = None,
        doc_ids: Sequence[str] | None = None,
        node_ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        top_k = DEFAULT_SIMILARITY_TOP_K if similarity_top_k is None else similarity_top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ConfigError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        if filters is not None and not isinstance(filters, MetadataFilters):
            raise ConfigError(
                f"filters must be llama_index MetadataFilters, got {type(filters).__name__}"
            )
        if filters is not None and any(isinstance(f, MetadataFilters) for f in filters.filters):
            raise ConfigError(
                "nested MetadataFilters are not supported (as in SimpleVectorStore); "
                "flatten them into one MetadataFilters with a condition"
            )
        self._index = index
        self._similarity_top_k = top_k
        self._config = config
        self._filters = filters
        self._doc_ids = None if doc_ids is None else frozenset(doc_ids)
        self._node_ids = None if node_ids is None else frozenset(node_ids)
        self._mask_cache: tuple[Any, np.ndarray | None] | None = None
        super().__init__(
            callback_manager=callback_manager or index._callback_manager,
            object_map=object_map,
            verbose=verbose,
        )

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_defaults(
        cls,
        index: Any | None = None,
        nodes: Sequence[BaseNode] | None = None,
        docstore: Any | None = None,
        similarity_top_k: int | None = None,
        *,
        embed_model: Any | None = None,
        config: RetrievalConfig | None = None,
        filters: MetadataFilters | None = None,
        doc_ids: Sequence[str] | None = None,
        **index_kwargs: Any,
    ) -> HCGRetriever:
        """A retriever from exactly one of ``index``, ``nodes`` or ``docstore`` (whose nodes are
        indexed), as ``BM25Retriever.from_defaults``; ``index_kwargs`` go to :class:`HCGIndex`
        (``llm``, ``tier``, ``build_options``, ...)."""
        from llama_index.core.storage.storage_context import StorageContext

        index_class = _index_class()
        sources = {"index": index, "nodes": nodes, "docstore": docstore}
        given = [name for name, value in sources.items() if value is not None]
        if len(given) != 1:
            raise ConfigError(
                f"pass exactly one of index, nodes or docstore (got {', '.join(given) or 'none'})"
            )
        if index is None:
            if docstore is not None:
                nodes = list(docstore.docs.values())
                index_kwargs["storage_context"] = StorageContext.from_defaults(docstore=docstore)
            index = index_class(nodes=list(nodes or []), embed_model=embed_model, **index_kwargs)
        elif not isinstance(index, index_class):
            raise ConfigError(f"index must be an HCGIndex, got {type(index).__name__}")
        return cls(index, similarity_top_k, config, filters=filters, doc_ids=doc_ids)

    def persist(self, persist_dir: str | os.PathLike) -> None:
        """Write the index (docstore, index store) and this retriever's settings to a directory."""
        self._index.storage_context.persist(persist_dir=str(persist_dir))
        settings = {
            "index_id": self._index.index_id,
            "similarity_top_k": self._similarity_top_k,
            "config": asdict(self._config) if self._config is not None else None,
            "filters": self._filters.model_dump(mode="json") if self._filters else None,
            "doc_ids": sorted(self._doc_ids) if self._doc_ids is not None else None,
            "node_ids": sorted(self._node_ids) if self._node_ids is not None else None,
        }
        atomic_write_text(Path(persist_dir) / RETRIEVER_FILE, json.dumps(settings, indent=2))

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike, *, embed_model: Any | None = None, **kwargs: Any
    ) -> HCGRetriever:
        """Load what :meth:`persist` wrote. Pass ``embed_model`` as when building (with none, the
        offline embedder named in the index is rebuilt); ``kwargs`` override stored settings."""
        from llama_index.core import StorageContext, load_index_from_storage

        path = Path(persist_dir) / RETRIEVER_FILE
        try:
            # Within hcg's parsing bounds (depth, integer size, repeated keys), like every file.
            settings = loads_json(path.read_text(encoding="utf-8"), path=path)
        except FileNotFoundError:
            raise StoreError(
                f"no {RETRIEVER_FILE}: not written by HCGRetriever.persist", path=path.parent
            ) from None
        except (OSError, ValueError, StoreError) as exc:
            raise StoreError(f"cannot read {RETRIEVER_FILE}: {exc}", path=path.parent) from exc
        options = _stored_options(settings, path)
        try:
            storage = StorageContext.from_defaults(persist_dir=str(persist_dir))
            index = load_index_from_storage(
                storage,
                index_id=options.pop("index_id"),
                embed_model=embed_model,
                persist_dir=str(persist_dir),
            )
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
            if isinstance(exc, HCGError):  # the index's own, already typed and worded
                raise
            # LlamaIndex's own files (docstore.json, index_store.json, ...) cut or replaced: its
            # loaders raise JSONDecodeError, IsADirectoryError, AttributeError as they meet it.
            raise StoreError(
                f"cannot load the LlamaIndex storage persisted here ({type(exc).__name__}: "
                f"{str(exc)[:200]}); persist the index again, or restore the folder",
                path=persist_dir,
            ) from exc
        return cls(index, **{**options, **kwargs})

    @property
    def similarity_top_k(self) -> int:
        return self._similarity_top_k

    # ------------------------------------------------------------------ retrieval

    def _core(self) -> Any:
        core = self._index.core_retriever
        if self._config is not None:
            core = core.with_config(
                **{f: getattr(self._config, f) for f in self._config.field_names()}
            )
        return core

    def _allowed(self, core: Any) -> np.ndarray | None:
        """The filter mask over the current graph's chunks (recomputed after an edit)."""
        if self._filters is None and self._doc_ids is None and self._node_ids is None:
            return None
        chunks = core.graph.chunks
        cached = self._mask_cache
        if cached is not None and cached[0] is chunks:
            return cached[1]
        from llama_index.core.vector_stores.simple import build_metadata_filter_fn

        by_id = {c.id: c.metadata for c in chunks}
        matches = build_metadata_filter_fn(by_id.__getitem__, self._filters)
        doc_ids, node_ids = self._doc_ids, self._node_ids

        def keep(chunk: Chunk) -> bool:
            return (
                (doc_ids is None or chunk.doc_id in doc_ids)
                and (node_ids is None or chunk.id in node_ids)
                and matches(chunk.id)
            )

        try:
            mask = filter_mask(chunks, keep)
        except (TypeError, ValueError) as exc:  # SimpleVectorStore's own errors for bad filters
            raise ConfigError(f"metadata filters cannot be applied: {exc}") from exc
        self._mask_cache = (chunks, mask)
        return mask

    def _embedding_strs(self, query_bundle: QueryBundle) -> list[str]:
        # VectorIndexRetriever's rule: the mean vector of custom_embedding_strs when given (HyDE
        # sets them), else of the query string.
        return list(query_bundle.embedding_strs) or [query_bundle.query_str]

    def _nodes(self, result: RetrievalResult) -> list[NodeWithScore]:
        ids = list(dict.fromkeys(stored_id(rc) for rc in result.chunks))
        nodes = {n.node_id: n for n in self._index.docstore.get_nodes(ids, raise_error=False) if n}
        return [
            with_provenance(nodes[stored_id(rc)], rc, result.served_by)
            for rc in result.chunks
            if stored_id(rc) in nodes
        ]

    def _search(self, core: Any, query_bundle: QueryBundle, qvec: Any) -> list[NodeWithScore]:
        result = core.retrieve_by_vector(
            query_bundle.query_str,
            core.query_vector(qvec),
            self._similarity_top_k,
            allowed=self._allowed(core),
        )
        return self._nodes(result)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        core = self._core()
        qvec = query_bundle.embedding
        if qvec is None:
            # Through the index's LlamaIndex model, as VectorIndexRetriever embeds: callback
            # handlers and instrumentation see the EMBEDDING events.
            model = self._index._embed_model
            with embedder_errors(f"embedder {model.model_name!r} failed on the query"):
                qvec = model.get_agg_embedding_from_queries(self._embedding_strs(query_bundle))
        return self._search(core, query_bundle, qvec)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The model's async API (a worker thread for a core embedder without one), then the
        graph and ranking work in a worker thread: the event loop is never blocked."""
        core = self._core()
        qvec = query_bundle.embedding
        if qvec is None:
            model = self._index._embed_model
            with embedder_errors(f"embedder {model.model_name!r} failed on the query"):
                qvec = await model.aget_agg_embedding_from_queries(
                    self._embedding_strs(query_bundle)
                )
        return await asyncio.to_thread(self._search, core, query_bundle, qvec)


def _index_class() -> type:
    """``HCGIndex``, found as ``load_index_from_storage`` finds it: through LlamaIndex's registry
    of index classes by struct type (filled when ``llama_index_hcg`` is imported). The index
    module imports this one (``as_retriever``), so importing it back would make a cycle."""
    from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS

    return INDEX_STRUCT_TYPE_TO_INDEX_CLASS[STRUCT_TYPE]  # type: ignore[index]


def _stored_options(settings: Any, path: Path) -> dict[str, Any]:
    """The constructor options ``HCGRetriever.persist`` wrote (and ``index_id``), each checked:
    a hand-edited or damaged ``hcg_retriever.json`` is a ``StoreError`` naming the entry."""

    def bad(what: str, exc: Exception | None = None) -> StoreError:
        why = f" ({str(exc).splitlines()[0][:200]})" if exc is not None else ""
        return StoreError(
            f"{RETRIEVER_FILE}: {what}{why}; persist the retriever again, or fix the entry",
            path=path.parent,
        )

    if not isinstance(settings, dict):
        raise bad(f"must be a JSON object, got {type(settings).__name__}")
    options: dict[str, Any] = {"index_id": settings.get("index_id")}
    if not isinstance(options["index_id"], (str, type(None))):
        raise bad("'index_id' must be a string")
    top_k = settings.get("similarity_top_k")
    if top_k is not None:
        options["similarity_top_k"] = top_k  # the constructor checks its range (ConfigError)
    for name in ("doc_ids", "node_ids"):
        ids = settings.get(name)
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            raise bad(f"{name!r} must be a list of strings or null")
        options[name] = ids
    config = settings.get("config")
    if config is not None:
        options["config"] = _stored_config(config, bad)
    if settings.get("filters"):
        try:
            options["filters"] = MetadataFilters.model_validate(settings["filters"])
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise bad("'filters' are not LlamaIndex MetadataFilters", exc) from None
    return options


def _stored_config(config: Any, bad: Any) -> RetrievalConfig:
    """``RetrievalConfig`` from the nested dicts ``asdict`` wrote."""
    nested = {"hybrid": HybridConfig, "paper": PaperConfig}
    if not isinstance(config, dict) or not all(
        isinstance(config[k], dict) for k in nested if k in config
    ):
        raise bad("'config' must be an object of RetrievalConfig's settings")
    try:
        # asdict wrote the nested settings as dicts: each becomes its dataclass again.
        return RetrievalConfig(
            **{k: nested[k](**v) if k in nested else v for k, v in config.items()}
        )
    except TypeError as exc:  # a name the dataclasses do not have
        raise bad("'config' holds a setting RetrievalConfig does not have", exc) from None
