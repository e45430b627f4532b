"""Graph-route designs for the hybrid mode, measured by graph_signal_sweep.py against graph off.

The library's graph signal (``hcg_core/retrieval/walk.py``) is a personalized PageRank walk seeded
by BM25 of the query over each variable's words, damping 0.2, that lifts units a text signal
already found. It was chosen among these designs on the design half of the medical dev questions
with the recorded LLM graph (docs/evaluation.md, "What the graph adds"). Each design computes one
per-unit score from the causal graph at query time and fuses it with the text signals, on their
own scale (``standardise``), with a weight:

- ``paper``: the earlier library signal, a rank bonus for the paper route's chunks (the first gets
  the full weight, the last half of it; not standardised).
- ``mechanism``: query expansion by mechanism text. The edges of the query's outcome cones (or
  of its matched variables) are ranked by BM25 of the query over their mechanism sentences; the
  terms of the best ``edges`` of them are a second BM25 query over the units.
- ``ppr``: personalized PageRank over the variable graph (``walk.py``), seeded by the variables
  the query matches, by cosine (``soft``) or by BM25 over each variable's words (``lexical``, the
  library's seeding); each edge passes the mass of its two ends to the chunks it cites.

With ``admit`` the best units of the design's score join the candidates even when no text signal
found them, and the score counts for them; without it the score only lifts units a text signal
also found (as the library's signal does). With ``walk`` (the default) the library's own signal
stays on beside the design (the default plus a route); without it the design replaces it.

Everything is array work per query over arrays built once per graph (numpy only, no scipy). The
classes wrap the public API: ``DesignRanker`` subclasses ``HybridRanker`` (its ``_candidates`` and
``_fused`` stages), ``DesignRetriever`` subclasses ``CausalGraphRetriever`` (its ``ranker``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.hybrid import HybridRanker, standardise
from hcg_core.retrieval.lexical import BM25Index, tokenize, top_k_indices
from hcg_core.retrieval.walk import GraphWalk

ADMITTED = 10
"""Units a design with ``admit`` adds to the candidates: as many as the graph route's own
(``graph_candidates``), so an admitting design can at most double the graph's share."""


@dataclass(frozen=True)
class Design:
    """One graph-route design (see the module docstring)."""

    kind: str  # "paper", "mechanism" or "ppr"
    weight: float = 0.25
    admit: bool = False
    edges: int = 5  # mechanism: the best-matching edges whose terms expand the query
    source: str = "cones"  # mechanism: "cones" (the query's outcome cones) or "matched"
    seeds: str = "soft"  # ppr: "soft" (cosine) or "lexical" (BM25 over variable text)
    damping: float = 0.5  # ppr: the chance a step follows an edge rather than restarting
    walk: bool = True  # keep the library's own graph signal (graph_weight) beside the design


DESIGNS: dict[str, Design] = {
    # The library's signal before the walk: the paper route's chunks, by rank, in its place.
    "paper-bonus": Design("paper", walk=False),
    "mech-cones-5": Design("mechanism", 0.25, False, edges=5, source="cones"),
    "mech-matched-20-admit": Design("mechanism", 0.5, True, edges=20, source="matched"),
    "ppr-soft": Design("ppr", 0.25, False, seeds="soft"),
    "ppr-soft-admit": Design("ppr", 0.25, True, seeds="soft"),
    # The library's walk at other settings, in its place (the default is damping 0.2).
    "ppr-lexical-d0.5": Design("ppr", 0.25, False, seeds="lexical", walk=False),
    "ppr-lexical-d0.85": Design("ppr", 0.25, False, seeds="lexical", damping=0.85, walk=False),
    "ppr-lexical-admit": Design("ppr", 0.25, True, seeds="lexical", damping=0.2, walk=False),
}


class GraphSignal:
    """A design's per-unit score for a query (``unit_scores``), from arrays built once per
    retriever; the Python loops here run at setup, the query-time work is array code."""

    def __init__(self, retriever: CausalGraphRetriever, design: Design):
        self.retriever = retriever
        self.design = design
        g = retriever.compiled
        self.graph = g
        self.mechanisms = BM25Index(list(g.mechanisms)) if design.kind == "mechanism" else None
        if design.kind == "ppr":
            # The library's walk (walk.py) at this design's damping; "soft" seeds it by cosine.
            self.walk = GraphWalk.of(retriever.graph, g, damping=design.damping)

    def unit_scores(self, ranker: HybridRanker, query: str, qvec: np.ndarray) -> np.ndarray:
        """``(n_units,)`` non-negative scores over ``ranker``'s units; zeros when the graph offers
        nothing for this query."""
        if self.design.kind == "paper":
            return np.zeros(len(ranker.units))  # DesignRanker reads the paper route's rows
        if self.design.kind == "mechanism":
            terms = self.expansion(query, qvec)
            if not terms:
                return np.zeros(len(ranker.units))
            # A unit's own text is scored (as BM25 scores it), not its chunk's.
            return ranker.bm25.scores(terms).astype(np.float64)
        return self.ppr_chunks(query, qvec)[ranker.parent]

    # ------------------------------------------------------------------ mechanism expansion

    def _edge_pool(self, qvec: np.ndarray) -> np.ndarray:
        """The edges whose mechanisms may expand the query (``source``)."""
        g, t = self.graph, self.retriever.traverse(qvec)
        if t.rows.size == 0:
            return np.zeros(0, dtype=np.int64)
        if self.design.source == "matched":
            outs = [g.out_eid[g.out_ptr[r] : g.out_ptr[r + 1]] for r in t.rows.tolist()]
            ins = [g.in_eid[g.in_ptr[r] : g.in_ptr[r + 1]] for r in t.rows.tolist()]
            return np.unique(np.concatenate(outs + ins))
        if t.node_rank is not None:
            # The cones' edges, as the paper's Stage 3 takes them (retriever.retrieve_paper).
            return t.sub[t.node_rank[t.sub_dst] < t.cones.groups.size]
        return t.sub if t.sub is not None else np.zeros(0, dtype=np.int64)

    def expansion(self, query: str, qvec: np.ndarray) -> list[str]:
        """The expansion terms: of the ``edges`` pool edges whose mechanisms match the query best
        by BM25, the terms the question does not already have (those the text signal matches
        already; counting them again would only re-weight its BM25)."""
        pool = self._edge_pool(qvec)
        if pool.size == 0:
            return []
        best, _ = top_k_indices(
            self.mechanisms.scores(query)[pool], self.design.edges, positive_only=True
        )
        own = set(tokenize(query))
        terms = [t for e in pool[best].tolist() for t in tokenize(self.graph.mechanisms[e])]
        return list(dict.fromkeys(t for t in terms if t not in own))

    # ------------------------------------------------------------------ personalized PageRank

    def ppr_chunks(self, query: str, qvec: np.ndarray) -> np.ndarray:
        """``(n_chunks,)``: the walk's mass that reaches each chunk through evidence links."""
        if self.design.seeds == "lexical":
            return self.walk.chunk_scores(query)
        # Cosine above the paper's admission floor (tau_min): a variable the query does not
        # match at all seeds nothing.
        cos = self.graph.var_emb @ np.asarray(qvec, np.float32)
        return self.walk.mass(
            np.clip(cos.astype(np.float64) - self.retriever.config.tau_min, 0.0, None)
        )


class DesignRanker(HybridRanker):
    """The hybrid ranker plus one design's score, fused after the library's own signals."""

    def __init__(self, base: HybridRanker, signal: GraphSignal):
        # The same passages, BM25 index, dense index and n-gram index as the base ranker.
        super().__init__(
            base.chunks,
            base.chunk_embeddings,
            base.config,
            bm25=base.bm25,
            dense=base.dense_index,
            grams=base.grams,
        )
        self.signal = signal

    def _candidates(self, query, query_vec, graph_result, use_graph, allowed, walk=None) -> Any:
        c = super()._candidates(query, query_vec, graph_result, use_graph, allowed, walk)
        part = np.zeros(len(self.units))
        if use_graph and query_vec is not None:
            part = self.signal.unit_scores(self, query, query_vec)
            if c.ok is not None:
                part = np.where(c.ok, part, 0.0)
        order, _ = top_k_indices(part, self.config.candidates, positive_only=True)
        # The _Candidates record has no field for a design; an attribute keeps hybrid.py as is.
        c.design_part = standardise(part, order)
        if self.signal.design.kind == "paper" and c.graph_rows:
            g = np.asarray(c.graph_rows, dtype=np.int64)
            c.design_part = np.zeros(len(self.units))
            c.design_part[g] = 1.0 - np.arange(g.size) / (2.0 * g.size)
        if self.signal.design.admit and order.size:
            new = order[:ADMITTED]
            c.pool = np.union1d(c.pool, new)
            if c.dense_cos.fill(self.parent[new]):  # their exact cosine, as every candidate's
                c.dense = c.dense_cos.values[self.parent]
        return c

    def _fused(self, c) -> np.ndarray:
        fused = super()._fused(c)
        part = getattr(c, "design_part", None)
        if part is None:
            return fused
        w = self.signal.design.weight
        if self.signal.design.admit:
            return fused + w * part
        # fused > 0 exactly where a text signal found the unit (the library's signal is gated so).
        return fused + w * part * (fused > 0)


class DesignRetriever(CausalGraphRetriever):
    """A retriever whose hybrid ranker is a ``DesignRanker``; everything else shared."""

    @classmethod
    def wrap(cls, retriever: CausalGraphRetriever, design: Design) -> DesignRetriever:
        if not design.walk:
            hybrid = replace(retriever.config.hybrid, graph_weight=0.0)
            retriever = retriever.with_config(hybrid=hybrid)
        out = object.__new__(cls)
        out.__dict__.update(retriever.__dict__)  # the compiled arrays and rankers, shared
        out._signal = GraphSignal(retriever, design)
        out._design_rankers = {}
        return out

    @property
    def ranker(self) -> HybridRanker:
        key = self.config.hybrid
        ranker = self._design_rankers.get(key)
        if ranker is None:
            ranker = self._design_rankers[key] = DesignRanker(super().ranker, self._signal)
        return ranker
