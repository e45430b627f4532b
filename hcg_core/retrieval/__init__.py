"""Stage 3: graph-guided retrieval (paper-exact pure functions, compiled arrays, the retriever)."""

import warnings as _warnings

from .compiled import CompiledGraph
from .lexical import BM25Index
from .paper import bounded_bfs, match_nodes, outcome_cones, rank_evidence
from .retriever import CausalGraphRetriever

__all__ = [
    "BM25Index",
    "CompiledGraph",
    "CausalGraphRetriever",
    "bounded_bfs",
    "match_nodes",
    "outcome_cones",
    "rank_evidence",
]


def __getattr__(name: str):
    # The core retriever was called HCGRetriever, like both adapters' classes; the old name stays
    # importable for one release, with a warning.
    if name == "HCGRetriever":
        _warnings.warn(
            "hcg_core.retrieval.HCGRetriever is renamed CausalGraphRetriever; "
            "the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return CausalGraphRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
