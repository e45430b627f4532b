"""Stage 3: graph-guided retrieval (paper-exact pure functions, compiled arrays, the retriever)."""

from .compiled import CompiledGraph
from .paper import bounded_bfs, match_nodes, outcome_cones, rank_evidence
from .retriever import HCGRetriever

__all__ = [
    "CompiledGraph",
    "HCGRetriever",
    "bounded_bfs",
    "match_nodes",
    "outcome_cones",
    "rank_evidence",
]
