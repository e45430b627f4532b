"""A causal graph compiled once into read-only arrays, so that a query is array work only.

Variables are laid out grouped by metric (so a per-metric max is one ``np.maximum.reduceat``);
adjacency is CSR in both directions; evidence links are CSR from edge to chunk row. Nothing here
is mutated after construction, which is what makes concurrent queries on one graph safe (an
incremental insert compiles a new one, reusing the chunk arrays it already has).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..errors import EmbedderError
from ..types import CausalGraph


def csr(
    rows: np.ndarray, cols: np.ndarray, payload: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort (row, col, payload) triples into CSR arrays ``(indptr, cols, payload)``.

    >>> ptr, c, p = csr(np.array([1, 0, 1]), np.array([2, 1, 0]), np.array([7, 8, 9]), 3)
    >>> ptr.tolist(), c.tolist(), p.tolist()
    ([0, 1, 3, 3], [1, 0, 2], [8, 9, 7])
    """
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr, cols[order].astype(np.int64), payload[order].astype(np.int64)


def gather(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of all CSR entries of ``rows`` at once, and which of ``rows`` each belongs to.

    >>> pos, owner = gather(np.array([0, 2, 2, 3]), np.array([0, 2]))
    >>> pos.tolist(), owner.tolist()
    ([0, 1, 2], [0, 0, 1])
    """
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    total = int(lens.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    owner = np.repeat(np.arange(rows.size), lens)
    pos = np.arange(total) + np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return pos, owner


def confidence_order(edge_conf: np.ndarray) -> np.ndarray:
    """Each edge's position when all edges are sorted by confidence (descending), then index.

    Query-independent, so it is computed once when the graph is compiled.

    >>> confidence_order(np.array([0.5, 0.9, 0.5])).tolist()
    [1, 0, 2]
    """
    order = np.lexsort((np.arange(edge_conf.size), -edge_conf))
    pos = np.empty(edge_conf.size, dtype=np.int64)
    pos[order] = np.arange(edge_conf.size)
    return pos


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class CompiledGraph:
    """Array form of a CausalGraph. Index spaces: variables 0..n-1, edges 0..m-1, chunks 0..c-1.

    Attributes (all read-only numpy arrays unless noted):
        var_emb: (n, d) variable embeddings, rows grouped by metric (``metric_starts``).
        var_metric: (n,) metric index of each variable.
        metric_starts: (g+1,) start row of each metric group with at least one variable.
        out_ptr/out_src/out_dst/out_eid, in_ptr/in_src/in_eid: CSR adjacency and the edge of each entry.
        edge_src/edge_dst/edge_conf: per edge; edge_conf_order: rank by confidence.
        ev_ptr/ev_chunk: CSR from edge to the chunk rows it cites.
        is_end: (n,) bool, variable's metric has role outcome or terminal.
        end_group: (n,) int, a dense index of the end metric (-1 when not an end).
        chunk_emb: (c, d) chunk embeddings; chunk_words: (c,) word counts.
        var_names / edge_ids / mechanisms / effects: Python tuples (for readable provenance only).
    """

    var_emb: np.ndarray
    var_metric: np.ndarray
    metric_starts: np.ndarray
    out_ptr: np.ndarray
    out_src: np.ndarray
    out_dst: np.ndarray
    out_eid: np.ndarray
    in_ptr: np.ndarray
    in_src: np.ndarray
    in_eid: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_conf: np.ndarray
    edge_conf_order: np.ndarray
    ev_ptr: np.ndarray
    ev_chunk: np.ndarray
    is_end: np.ndarray
    end_group: np.ndarray
    chunk_emb: np.ndarray
    chunk_words: np.ndarray
    var_names: tuple[str, ...]
    edge_ids: tuple[str, ...]
    mechanisms: tuple[str, ...]
    # Each edge's sign ("increases" / "decreases" / ""), shown on the paths (CausalPath.effects).
    effects: tuple[str, ...] = ()

    @property
    def n_vars(self) -> int:
        return len(self.var_names)

    def with_chunks(self, chunk_embeddings: np.ndarray, chunk_words: np.ndarray) -> CompiledGraph:
        """This graph over grown chunk arrays: chunks appended after the existing rows (so every
        evidence row stays valid), all variable and edge arrays shared. O(1) besides the views."""
        emb = _frozen(np.asarray(chunk_embeddings, dtype=np.float32))
        words = _frozen(np.asarray(chunk_words, dtype=np.int64))
        if emb.shape[0] != words.shape[0] or emb.shape[0] < self.chunk_emb.shape[0]:
            raise EmbedderError(
                f"chunk arrays do not align: {emb.shape[0]} vectors, {words.shape[0]} word "
                f"counts, {self.chunk_emb.shape[0]} chunks before"
            )
        return replace(self, chunk_emb=emb, chunk_words=words)

    @classmethod
    def compile(
        cls,
        graph: CausalGraph,
        variable_embeddings: np.ndarray,
        chunk_embeddings: np.ndarray,
        *,
        chunk_words: np.ndarray | None = None,
        chunk_row: Mapping[str, int] | None = None,
    ) -> CompiledGraph:
        """Compile ``graph``. ``chunk_words`` and ``chunk_row`` (chunk id -> row), when the
        caller keeps them up to date (incremental inserts), spare the per-chunk Python work, so a
        recompile after an insert costs O(variables + edges + links), not O(chunks)."""
        n, c = len(graph.variables), len(graph.chunks)
        if variable_embeddings.shape[0] != n or chunk_embeddings.shape[0] != c:
            raise EmbedderError(
                f"embeddings do not align with the graph: {variable_embeddings.shape[0]} variable "
                f"rows for {n} variables, {chunk_embeddings.shape[0]} chunk rows for {c} chunks"
            )
        if n and c and variable_embeddings.shape[1] != chunk_embeddings.shape[1]:
            raise EmbedderError("variable and chunk embeddings have different dimensions")
        metric_index = {m.name: i for i, m in enumerate(graph.spec.metrics)}
        roles = [m.role for m in graph.spec.metrics]
        metric_of = np.array([metric_index[v.metric] for v in graph.variables], dtype=np.int64)
        # Stable grouping by metric keeps the original order inside each metric.
        order = np.argsort(metric_of, kind="stable")
        row_of = np.empty(n, dtype=np.int64)
        row_of[order] = np.arange(n)
        var_metric = metric_of[order]
        if n:
            boundaries = np.flatnonzero(np.diff(var_metric)) + 1
            metric_starts = np.concatenate(([0], boundaries, [n])).astype(np.int64)
        else:
            metric_starts = np.zeros(1, np.int64)
        names = [graph.variables[i].name for i in order]
        name_row = {name: r for r, name in enumerate(names)}
        m = len(graph.edges)
        src = np.array([name_row[e.source] for e in graph.edges], dtype=np.int64)
        dst = np.array([name_row[e.target] for e in graph.edges], dtype=np.int64)
        eids = np.arange(m, dtype=np.int64)
        out_ptr, out_dst, out_eid = csr(src, dst, eids, n)
        in_ptr, in_src, in_eid = csr(dst, src, eids, n)
        if chunk_row is None:
            chunk_row = {ch.id: i for i, ch in enumerate(graph.chunks)}
        ev_rows = [(i, chunk_row[cid]) for i, e in enumerate(graph.edges) for cid in e.evidence]
        ev_e = np.array([r[0] for r in ev_rows], dtype=np.int64)
        ev_c = np.array([r[1] for r in ev_rows], dtype=np.int64)
        ev_ptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(ev_e, minlength=m), out=ev_ptr[1:])
        # ev_rows is already in edge order, so ev_c is the CSR payload as it stands.
        is_end = np.array([roles[k] in ("outcome", "terminal") for k in var_metric], dtype=bool)
        end_metrics = sorted({int(k) for k in var_metric[is_end]})
        dense = {k: i for i, k in enumerate(end_metrics)}
        end_group = np.array([dense.get(int(k), -1) for k in var_metric], dtype=np.int64)
        conf = np.array([e.confidence for e in graph.edges], dtype=np.float64)
        words = (
            np.array([len(ch.text.split()) for ch in graph.chunks], dtype=np.int64)
            if chunk_words is None
            else np.asarray(chunk_words, dtype=np.int64)[:c]
        )
        return cls(
            var_emb=_frozen(np.asarray(variable_embeddings, dtype=np.float32)[order]),
            var_metric=_frozen(var_metric),
            metric_starts=_frozen(metric_starts),
            out_ptr=_frozen(out_ptr),
            out_dst=_frozen(out_dst),
            out_src=_frozen(np.repeat(np.arange(n, dtype=np.int64), np.diff(out_ptr))),
            out_eid=_frozen(out_eid),
            in_ptr=_frozen(in_ptr),
            in_src=_frozen(in_src),
            in_eid=_frozen(in_eid),
            edge_src=_frozen(src),
            edge_dst=_frozen(dst),
            edge_conf=_frozen(conf),
            edge_conf_order=_frozen(confidence_order(conf)),
            ev_ptr=_frozen(ev_ptr),
            ev_chunk=_frozen(ev_c),
            is_end=_frozen(is_end),
            end_group=_frozen(end_group),
            chunk_emb=_frozen(np.asarray(chunk_embeddings, dtype=np.float32)),
            chunk_words=_frozen(words),
            var_names=tuple(names),
            edge_ids=tuple(e.id for e in graph.edges),
            mechanisms=tuple(e.mechanism for e in graph.edges),
            effects=tuple(e.effect for e in graph.edges),
        )
