"""Stage 3: graph-guided retrieval (paper-exact pure functions, compiled arrays, the retriever)."""

from .compiled import CompiledGraph
from .lexical import BM25Index
from .paper import bounded_bfs, match_nodes, outcome_cones
from .retriever import CausalGraphRetriever

__all__ = [
    "BM25Index",
    "CompiledGraph",
    "CausalGraphRetriever",
    "bounded_bfs",
    "match_nodes",
    "outcome_cones",
]
