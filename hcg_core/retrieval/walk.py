"""The hybrid mode's graph signal: a personalized PageRank walk from the variables a query names.

The query is matched against each variable's own words (its name, entities, description and the
mechanism sentences of its edges) by BM25, so a question that names a cause or an effect seeds
the walk even when the variable's embedding sits far from the question's. The best
``WALK_SEEDS`` variables seed a personalized PageRank over the causal graph, each edge walked both
ways (a cause explains its effects; a "why" question needs the way back too) and weighted by its
confidence. Each edge then passes the mean mass of its two ends, times its confidence, to every
chunk it cites as evidence; a chunk cited by several reached edges sums them.

The ranker (``hybrid.py``) standardises this per-chunk mass like any text signal and adds it,
weighted by ``graph_weight``, to the units a text signal also found. Chosen over the earlier
signal (a rank bonus for the paper route's chunks) and seven other settings on one half of the
medical dev questions with the recorded LLM graph, and reported on the other half
(docs/evaluation-history.md, "The walk, chosen among designs").

The functions here are pure array code; ``GraphWalk`` holds the arrays built once per compiled
graph. The walk is linear in its seed but for the mass that restarts from variables without an
edge, which one scalar corrects (``walk_operator``), so for a graph of up to
``SOLVED_MAX_VARS`` variables the whole map from seed to per-chunk mass is solved once, at load:
a query then costs one BM25 lookup over the variables and a product with ``WALK_SEEDS`` columns.
Larger graphs iterate per query (``personalized_pagerank``); both give the same mass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..types import CausalGraph
from .compiled import CompiledGraph
from .lexical import BM25Index, top_k_indices

WALK_SEEDS = 10
"""Variables that seed the walk: a handful, as the paper's matching keeps (5 metrics x 3)."""
WALK_DAMPING = 0.2
"""The chance that a step follows an edge rather than restarting at the seeds. Low: the walk stays
near the variables the query names (design half, recorded LLM graph: 0.2 > 0.5 > 0.85 overall)."""
_TOL = 1e-12
_MAX_STEPS = 200
SOLVED_MAX_VARS = 3000
"""Graphs with at most this many variables get the walk solved at load (a dense solve, under a
second at this size); larger ones iterate per query."""
SOLVED_MAX_ENTRIES = 4_000_000
"""...and only when the solved map (cited chunks x variables, float64) stays under 32 MB."""


def transition(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The random walk over an undirected weighted graph as CSR ``(indptr, cols, probs)``.

    Each edge is walked both ways. Row ``i``'s probabilities sum to 1, or the row is empty (a node
    with no positive-weight edge: ``personalized_pagerank`` restarts from it).

    >>> ptr, cols, p = transition(np.array([0, 0]), np.array([1, 2]), np.array([1.0, 3.0]), 3)
    >>> ptr.tolist(), cols.tolist(), p.tolist()
    ([0, 2, 3, 4], [1, 2, 0, 0], [0.25, 0.75, 1.0, 1.0])
    """
    rows = np.concatenate([src, dst]).astype(np.int64)
    cols = np.concatenate([dst, src]).astype(np.int64)
    w = np.concatenate([weight, weight]).astype(np.float64)
    keep = w > 0
    rows, cols, w = rows[keep], cols[keep], w[keep]
    order = np.lexsort((cols, rows))
    rows, cols, w = rows[order], cols[order], w[order]
    out = np.bincount(rows, weights=w, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols, w / out[rows]


def personalized_pagerank(
    indptr: np.ndarray,
    cols: np.ndarray,
    probs: np.ndarray,
    seed: np.ndarray,
    damping: float = WALK_DAMPING,
    *,
    tol: float = _TOL,
    max_steps: int = _MAX_STEPS,
) -> np.ndarray:
    """Personalized PageRank by power iteration over CSR transition arrays (``transition``).

    Solves ``p = (1 - d) s + d (P^T p + m(p) s)``, ``s`` the seed normalised to sum 1, ``d`` the
    damping and ``m(p)`` the mass on nodes without edges, which restarts at the seed (so the mass
    is conserved: ``p`` sums to 1). Stops when a step moves less than ``tol`` (L1); the error
    shrinks by ``d`` per step, so ``d = 0.2`` needs about 17 steps to 1e-12. A seed of zeros
    gives zeros.

    >>> ptr, cols, p = transition(np.array([0]), np.array([1]), np.array([1.0]), 2)
    >>> personalized_pagerank(ptr, cols, p, np.array([1.0, 0.0]), 0.5).round(4).tolist()
    [0.6667, 0.3333]
    """
    seed = np.asarray(seed, dtype=np.float64)
    total = float(seed.sum())
    if total <= 0:
        return np.zeros_like(seed)
    s = seed / total
    n = s.size
    rows = np.repeat(np.arange(n), np.diff(indptr))
    dangling = np.diff(indptr) == 0
    p = s.copy()
    for _ in range(max_steps):
        walked = np.bincount(cols, weights=p[rows] * probs, minlength=n)
        nxt = (1.0 - damping) * s + damping * (walked + p[dangling].sum() * s)
        moved = float(np.abs(nxt - p).sum())
        p = nxt
        if moved < tol:
            break
    return p


def evidence_mass(
    p: np.ndarray,
    edge_src: np.ndarray,
    edge_dst: np.ndarray,
    edge_conf: np.ndarray,
    ev_edge: np.ndarray,
    ev_chunk: np.ndarray,
    n_chunks: int,
) -> np.ndarray:
    """``(n_chunks,)``: each edge's confidence times the mean mass of its ends, summed per chunk
    over the edges that cite it (``ev_edge[i]`` cites ``ev_chunk[i]``).

    >>> evidence_mass(np.array([0.5, 0.5, 0.0]), np.array([0, 1]), np.array([1, 2]),
    ...               np.array([1.0, 0.5]), np.array([0, 1, 1]), np.array([0, 0, 2]), 3).tolist()
    [0.625, 0.0, 0.125]
    """
    edge = edge_conf * 0.5 * (p[edge_src] + p[edge_dst])
    return np.bincount(ev_chunk, weights=edge[ev_edge], minlength=n_chunks)


def walk_operator(
    indptr: np.ndarray,
    cols: np.ndarray,
    probs: np.ndarray,
    damping: float,
    links: np.ndarray,
    link_weight: np.ndarray,
    edge_src: np.ndarray,
    edge_dst: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The walk solved for every seed at once: ``(cited, W, u)``.

    ``personalized_pagerank`` solves ``p = (1 - d) s + d (P^T p + c s)`` with ``c`` the mass on
    nodes without edges. With ``R = (I - d P^T)^-1``: ``p = (1 - d) / (1 - d a) R s`` where
    ``a = u . s``, ``u`` the column sums of ``R``'s rows for those nodes. ``evidence_mass`` is
    linear in ``p``, so the per-chunk mass of seed ``s`` (summing to 1) is
    ``(1 - d) / (1 - d a) W s`` over the chunk rows ``cited``. ``links`` are (edge, chunk)
    pairs and ``link_weight`` each edge's weight (its confidence).

    >>> ptr, cols, p = transition(np.array([0]), np.array([1]), np.array([1.0]), 3)
    >>> cited, W, u = walk_operator(ptr, cols, p, 0.5, np.array([[0, 4]]), np.array([1.0]),
    ...                             np.array([0]), np.array([1]))
    >>> s = np.array([1.0, 0.0, 0.0])
    >>> mass = (1 - 0.5) / (1 - 0.5 * u @ s) * (W @ s)
    >>> cited.tolist(), mass.round(4).tolist()
    ([4], [0.5])
    """
    n = indptr.size - 1
    src_rows = np.repeat(np.arange(n), np.diff(indptr))
    step_t = np.zeros((n, n))
    np.add.at(step_t, (cols, src_rows), probs)  # P^T: mass at src_rows flows to cols
    solved = np.linalg.solve(np.eye(n) - damping * step_t, np.eye(n))
    u = solved[np.diff(indptr) == 0].sum(axis=0)
    cited, chunk_of_link = np.unique(links[:, 1], return_inverse=True)
    edge = links[:, 0]
    # B[chunk, variable]: each citing edge passes half its weight to each of its two ends.
    half = 0.5 * link_weight[edge]
    B = np.zeros((cited.size, n))
    np.add.at(B, (chunk_of_link, edge_src[edge]), half)
    np.add.at(B, (chunk_of_link, edge_dst[edge]), half)
    return cited, B @ solved, u


def _words(name: str) -> str:
    """A variable name as words: CamelCase split, brackets and commas as spaces.

    >>> _words("CancerRisk(basal cell skin cancer)")
    'Cancer Risk basal cell skin cancer '
    """
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", re.sub(r"[(),]", " ", name))


def variable_texts(graph: CausalGraph, compiled: CompiledGraph) -> list[str]:
    """Each compiled variable row's words: name, entities, description and its edges' mechanisms."""
    by_name = {v.name: v for v in graph.variables}
    g = compiled
    texts = []
    for row, name in enumerate(g.var_names):
        v = by_name[name]
        edges = np.concatenate(
            [
                g.out_eid[g.out_ptr[row] : g.out_ptr[row + 1]],
                g.in_eid[g.in_ptr[row] : g.in_ptr[row + 1]],
            ]
        )
        texts.append(
            " ".join([_words(name), *v.entities, v.description, *(g.mechanisms[e] for e in edges)])
        )
    return texts


class GraphWalk:
    """The walk's arrays for one compiled graph; ``chunk_scores(query)`` per query."""

    def __init__(
        self,
        compiled: CompiledGraph,
        texts: Sequence[str],
        *,
        seeds: int = WALK_SEEDS,
        damping: float = WALK_DAMPING,
    ):
        g = compiled
        self.compiled = compiled
        self.seeds = seeds
        self.damping = damping
        self.index = BM25Index(list(texts))
        self.steps = transition(g.edge_src, g.edge_dst, g.edge_conf, g.n_vars)
        # Evidence links as (edge, chunk) pairs: ev_ptr is CSR from edge to chunk rows.
        self.ev_edge = np.repeat(np.arange(g.edge_src.size), np.diff(g.ev_ptr))
        self.solved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        cited = np.unique(g.ev_chunk).size
        if 0 < g.n_vars <= SOLVED_MAX_VARS and cited * g.n_vars <= SOLVED_MAX_ENTRIES:
            links = np.stack([self.ev_edge, g.ev_chunk], axis=1)
            cited, W, u = walk_operator(
                *self.steps, damping, links, g.edge_conf, g.edge_src, g.edge_dst
            )
            # Stored per variable (W's transpose, contiguous): a query reads its seeds' rows.
            self.solved = (cited, np.ascontiguousarray(W.T), u)

    @classmethod
    def of(cls, graph: CausalGraph, compiled: CompiledGraph, **options) -> GraphWalk:
        return cls(compiled, variable_texts(graph, compiled), **options)

    def over(self, compiled: CompiledGraph) -> GraphWalk | None:
        """This walk for ``compiled`` when only its chunk rows grew (an insert that added no
        variable or edge: ``CompiledGraph.with_chunks`` shares the other arrays), else None."""
        old = self.compiled
        if compiled.var_names is not old.var_names or compiled.ev_chunk is not old.ev_chunk:
            return None
        out = object.__new__(GraphWalk)
        out.__dict__.update(self.__dict__)
        out.compiled = compiled
        return out

    def chunk_scores(self, query: str | Sequence[str]) -> np.ndarray:
        """``(n_chunks,)`` non-negative: the walk's mass that reaches each chunk; all zeros when
        the query names no variable (or the graph has no edge with evidence). ``query``: the
        text, or its ``lexical.tokenize`` tokens."""
        return self.mass(self.index.scores(query).astype(np.float64))

    def mass(self, scores: np.ndarray) -> np.ndarray:
        """``(n_chunks,)``: the walk from the ``seeds`` best-scored variables (each seeded by its
        score; ``scores`` over the compiled variable rows) to the chunks the edges cite."""
        g = self.compiled
        n_chunks = g.chunk_emb.shape[0]
        top, _ = top_k_indices(scores, self.seeds, positive_only=True)
        if top.size == 0 or self.ev_edge.size == 0:
            return np.zeros(n_chunks)
        if self.solved is not None:
            cited, per_variable, u = self.solved
            s = scores[top] / scores[top].sum()
            d = self.damping
            out = np.zeros(n_chunks)
            # W[:, top] as numpy lays it out (column-major), so the product is the same.
            seeded = per_variable[top].T
            out[cited] = (1.0 - d) / (1.0 - d * float(u[top] @ s)) * (seeded @ s)
            return out
        seed = np.zeros(g.n_vars)
        seed[top] = scores[top]
        p = personalized_pagerank(*self.steps, seed, self.damping)
        return evidence_mass(
            p, g.edge_src, g.edge_dst, g.edge_conf, self.ev_edge, g.ev_chunk, n_chunks
        )
