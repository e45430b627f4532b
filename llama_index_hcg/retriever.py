"""``HCGRetriever``: a LlamaIndex ``BaseRetriever`` over an :class:`~llama_index_hcg.HCGIndex`.

It returns the index's docstore nodes (same ``node_id``), so evaluators, ``ref_doc_id`` and source
tracking work as with any native retriever; ``retrieve()`` stays the base class's, which emits the
callback events and instrumentation spans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from hcg_core.config import DEFAULT_TOP_K, RetrievalConfig
from hcg_core.errors import ConfigError

from ._convert import stored_id, with_provenance

if TYPE_CHECKING:
    from .index import HCGIndex

# HCG returns the evidence of whole causal cones; LlamaIndex's vector default of 2 would cut every
# cone to its first chunk, so the default is the core's (10).
DEFAULT_SIMILARITY_TOP_K = DEFAULT_TOP_K


class HCGRetriever(BaseRetriever):
    """Graph-guided retrieval as a LlamaIndex retriever.

    Use::

        retriever = index.as_retriever(similarity_top_k=5)
        for nws in retriever.retrieve("Why does stroke risk rise?"):
            print(nws.node.node_id, nws.score, nws.node.metadata["hcg_paths"])

    Each returned node is a shallow copy of the docstore node carrying ``hcg_route`` ("graph" or
    "fallback"), ``hcg_served_by``, ``hcg_paths``, ``hcg_mechanisms`` and ``hcg_edge_ids`` in its
    metadata; these keys are excluded from what the LLM and embedders see.

    Args:
        index: the HCGIndex to query (later inserts and deletes are seen).
        similarity_top_k: chunks per query (default 10).
        config: stage 3 settings; default the index's.
        callback_manager: default the index's.
        kwargs: accepted and ignored, as ``as_query_engine`` forwards its own options here.
    """

    def __init__(
        self,
        index: HCGIndex,
        similarity_top_k: int | None = None,
        config: RetrievalConfig | None = None,
        callback_manager: CallbackManager | None = None,
        object_map: dict | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        top_k = DEFAULT_SIMILARITY_TOP_K if similarity_top_k is None else similarity_top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ConfigError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        self._index = index
        self._similarity_top_k = top_k
        self._config = config
        super().__init__(
            callback_manager=callback_manager or index._callback_manager,
            object_map=object_map,
            verbose=verbose,
        )

    @property
    def similarity_top_k(self) -> int:
        return self._similarity_top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        core = self._index.core_retriever
        if self._config is not None:
            core = core.with_config(
                **{f: getattr(self._config, f) for f in self._config.field_names()}
            )
        result = core.retrieve(query_bundle.query_str, k=self._similarity_top_k)
        ids = list(dict.fromkeys(stored_id(rc) for rc in result.chunks))
        nodes = {n.node_id: n for n in self._index.docstore.get_nodes(ids, raise_error=False) if n}
        return [
            with_provenance(nodes[stored_id(rc)], rc, result.served_by)
            for rc in result.chunks
            if stored_id(rc) in nodes
        ]
