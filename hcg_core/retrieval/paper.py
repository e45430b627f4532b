"""Stage 3 of the paper as pure array functions: node matching, bounded BFS, outcome cones, evidence.

Each function takes arrays (see ``CompiledGraph``) and returns arrays; none does I/O or keeps
state, so they are safe to call from many threads on one compiled graph. Definitions 2-4 of the
paper are restated in docs/method.md; the choices the paper leaves open are marked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compiled import gather


def match_nodes(
    sims: np.ndarray,
    metric_starts: np.ndarray,
    *,
    tau_min: float,
    top_metrics: int,
    band: float,
    per_metric: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Definition 2, per-metric node matching. Returns (rows, similarities), best first.

    ``sims`` holds cos(q, v) for variables laid out grouped by metric (groups start at
    ``metric_starts``). A metric is kept when its best similarity sigma* >= tau_min; the top
    ``top_metrics`` (K) by sigma* are kept; within each, variables with similarity >=
    min(tau_min, sigma* (1 - band)) are admitted, at most ``per_metric`` (P), by similarity.

    >>> sims = np.array([0.9, 0.5, 0.2,  0.4, 0.33,  0.1])
    >>> starts = np.array([0, 3, 5, 6])
    >>> rows, s = match_nodes(sims, starts, tau_min=0.35, top_metrics=5, band=0.2, per_metric=3)
    >>> rows.tolist()
    [0, 1, 3, 4]
    """
    if sims.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, sims.dtype)
    best = np.maximum.reduceat(sims, metric_starts[:-1])
    kept = (best >= tau_min).nonzero()[0]
    if kept.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, sims.dtype)
    # Ties broken by metric order (stable sort), so matching is deterministic.
    kept = kept[np.argsort(-best[kept], kind="stable")[:top_metrics]]
    # All kept metrics at once (no loop per metric): their variables, metric by metric in kept
    # order, each with its metric's threshold (compared in the similarities' own dtype).
    rows, owner = gather(metric_starts, kept)
    tau = np.minimum(tau_min, best[kept].astype(np.float64) * (1.0 - band)).astype(sims.dtype)
    ok = sims[rows] >= tau[owner]
    rows, owner = rows[ok], owner[ok]
    # Within each metric: best similarity first, ties by row; then the first per_metric.
    order = np.lexsort((rows, -sims[rows], owner))
    rows, owner = rows[order], owner[order]
    first = np.searchsorted(owner, owner)  # where each metric's run starts
    out = rows[np.arange(rows.size) - first < per_metric]
    order = np.argsort(-sims[out], kind="stable")
    return out[order], sims[out[order]]


def bounded_bfs(
    out_ptr: np.ndarray,
    out_dst: np.ndarray,
    out_eid: np.ndarray,
    sources: np.ndarray,
    max_hops: int,
    *,
    stop: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Definition 3: forward BFS from ``sources`` for at most ``max_hops`` hops.

    Returns ``(dist, parent_edge)`` over all variables: hop distance (-1 when not reached) and the
    edge through which each reached node was first found (-1 for sources), for path provenance.
    Nodes flagged in ``stop`` are reached but not expanded further (outcome and terminal nodes:
    docs/method.md, "Stage 3", Definition 3), except when they are sources.

    >>> ptr = np.array([0, 1, 2, 3, 3]); dst = np.array([1, 2, 3]); eid = np.array([0, 1, 2])
    >>> bounded_bfs(ptr, dst, eid, np.array([0]), 2)[0].tolist()
    [0, 1, 2, -1]
    """
    n = out_ptr.size - 1
    dist = np.full(n, -1, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    frontier = np.unique(sources)
    dist[frontier] = 0
    for hop in range(1, max_hops + 1):
        if stop is not None and hop > 1:
            frontier = frontier[~stop[frontier]]
        if frontier.size == 0:
            break
        pos, _ = gather(out_ptr, frontier)
        dst = out_dst[pos]
        fresh = dist[dst] < 0
        dst, pos = dst[fresh], pos[fresh]
        if dst.size == 0:
            break
        # Marking instead of np.unique: duplicates write the same hop, and for the parent the
        # last write wins, which is deterministic for a given graph and query.
        dist[dst] = hop
        parent[dst] = out_eid[pos]
        frontier = (dist == hop).nonzero()[0]
    return dist, parent


def all_source_hops(
    out_ptr: np.ndarray, out_dst: np.ndarray, max_hops: int, stop: np.ndarray
) -> np.ndarray:
    """``(n, n)``: row ``s`` is ``bounded_bfs``'s hop distances from ``s`` alone (-1: not
    reached), every source's BFS run at once over (source, node) pairs, hop by hop.

    >>> ptr = np.array([0, 1, 2, 3, 3]); dst = np.array([1, 2, 3])
    >>> all_source_hops(ptr, dst, 2, np.array([False, True, False, False])).tolist()
    [[0, 1, -1, -1], [-1, 0, 1, 2], [-1, -1, 0, 1], [-1, -1, -1, 0]]
    """
    n = out_ptr.size - 1
    dist = np.full(n * n, -1, dtype=np.int64)
    source = node = np.arange(n)
    dist[source * n + node] = 0
    for hop in range(1, max_hops + 1):
        if hop > 1:  # as bounded_bfs: a stop node is expanded only as a source
            keep = ~stop[node]
            source, node = source[keep], node[keep]
        pos, owner = gather(out_ptr, node)
        flat = source[owner] * n + out_dst[pos]
        flat = np.unique(flat[dist[flat] < 0])
        if flat.size == 0:
            break
        dist[flat] = hop
        source, node = flat // n, flat % n
    return dist.reshape(n, n)


def bfs_parents(
    dist: np.ndarray,
    out_src: np.ndarray,
    out_dst: np.ndarray,
    out_eid: np.ndarray,
    stop: np.ndarray,
) -> np.ndarray:
    """``bounded_bfs``'s parent edges from its distances ``dist``: into each reached node, of
    the edges from a node one hop nearer that the BFS expanded (a source, or a node not in
    ``stop``), the last in out-CSR order, the write that wins in ``bounded_bfs``.

    >>> ptr = np.array([0, 2, 3, 3]); dst = np.array([1, 2, 2]); eid = np.array([0, 1, 2])
    >>> src = np.array([0, 0, 1]); stop = np.zeros(3, bool)
    >>> dist, parent = bounded_bfs(ptr, dst, eid, np.array([0]), 2)
    >>> bfs_parents(dist, src, dst, eid, stop).tolist() == parent.tolist()
    True
    """
    hop = dist[out_src]
    ok = (hop >= 0) & (dist[out_dst] == hop + 1) & ((hop == 0) | ~stop[out_src])
    parent = np.full(dist.size, -1, dtype=np.int64)
    parent[out_dst[ok]] = out_eid[ok]
    return parent


@dataclass(frozen=True)
class Cones:
    """Outcome cones after merging by metric and ranking (Definition 4).

    ``groups``: end-metric group of each kept cone, best first; ``convergence``: |K ∩ V_q| per
    kept cone; ``bits``: (n, words) uint64 membership bitsets over all end groups present in the
    BFS subgraph (bit ``slot[g]``); ``slot``: group -> bit index.
    """

    groups: np.ndarray
    convergence: np.ndarray
    bits: np.ndarray
    slot: dict[int, int]

    def member(self, group: int) -> np.ndarray:
        """Boolean mask of the nodes in the (merged) cone of ``group``."""
        s = self.slot[group]
        return (self.bits[:, s // 64] >> np.uint64(s % 64)) & np.uint64(1) == 1


def _bit_table(bits: np.ndarray, n_bits: int) -> np.ndarray:
    """Unpack (rows, words) uint64 bitsets into a (rows, n_bits) bool table (bit i of word i//64)."""
    as_bytes = np.ascontiguousarray(bits.astype("<u8")).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :n_bits].astype(bool)


def outcome_cones(
    reached: np.ndarray,
    sub_src: np.ndarray,
    sub_dst: np.ndarray,
    end_group: np.ndarray,
    matched: np.ndarray,
    match_sims: np.ndarray,
    max_cones: int,
) -> Cones:
    """Definition 4: reverse reachability to each end node inside the BFS subgraph G_q.

    ``sub_src``/``sub_dst`` are G_q's edges (fastest when already sorted by source). Cones of end nodes that share a
    metric are merged (one bit per end metric), ranked by convergence |K ∩ V_q|; ties go to the
    cone holding the better-matched query node, then to metric order (the paper is silent on
    ties). At most ``max_cones`` are kept.
    """
    n = reached.size
    ends = (reached & (end_group >= 0)).nonzero()[0]
    present = np.bincount(end_group[ends]).nonzero()[0]  # sorted, as np.unique
    slot = dict(zip(present.tolist(), range(present.size), strict=True))
    words = max(1, (present.size + 63) // 64)
    bits = np.zeros((n, words), dtype=np.uint64)
    if present.size == 0:
        return Cones(np.zeros(0, np.int64), np.zeros(0, np.int64), bits, slot)
    bit_index = np.searchsorted(present, end_group[ends])
    # An end node has one metric: one bit per row, so a plain assignment sets it.
    bits[ends, bit_index // 64] = np.left_shift(np.uint64(1), (bit_index % 64).astype(np.uint64))
    if sub_src.size and np.any(sub_src[1:] < sub_src[:-1]):
        order = np.argsort(sub_src, kind="stable")
        sub_src, sub_dst = sub_src[order], sub_dst[order]
    if sub_src.size:
        starts = np.concatenate(([0], np.diff(sub_src).nonzero()[0] + 1))
        sources = sub_src[starts]
        # Propagate membership backwards along G_q's edges until nothing changes: after i rounds
        # every node within i reverse hops of an end node carries its bit. Edges are grouped by
        # source, so one round is a gather and a segmented OR; one 64-bit word at a time, as a
        # flat array gathers faster than rows of a table.
        for w in range(words):
            word = bits[:, w].copy()
            held = word[sources]
            for _ in range(n):
                merged = held | np.bitwise_or.reduceat(word[sub_dst], starts)
                if not (merged != held).any():
                    break
                word[sources] = held = merged
            bits[:, w] = word
    table = _bit_table(bits[matched], present.size)
    counts = table.sum(axis=0)
    best_sim = np.where(table, np.asarray(match_sims, dtype=np.float64)[:, None], -np.inf).max(0)
    order = np.lexsort((np.arange(present.size), -best_sim, -counts))
    order = order[counts[order] > 0][:max_cones]
    return Cones(present[order], counts[order], bits, slot)


def cone_rank_of_nodes(cones: Cones, n: int) -> np.ndarray:
    """Per node, the rank of the best kept cone it belongs to (``len(groups)`` when none)."""
    k = cones.groups.size
    if k == 0:
        return np.full(n, 0, dtype=np.int64)
    # One membership table (node x kept cone) instead of a mask per cone: the first kept cone
    # a node is in, or k. (The bits are over every node, so the table has n rows.)
    slots = np.fromiter((cones.slot[int(g)] for g in cones.groups), np.int64, k)
    table = _bit_table(cones.bits, int(slots.max()) + 1)[:n, slots]
    return np.where(table.any(axis=1), table.argmax(axis=1), k).astype(np.int64)


def toward_ends(
    in_ptr: np.ndarray,
    in_src: np.ndarray,
    in_eid: np.ndarray,
    ends: np.ndarray,
    inside: np.ndarray,
    in_dst: np.ndarray | None = None,
) -> np.ndarray:
    """Per node, the first edge of a shortest path to one of ``ends`` using only ``inside`` nodes.

    A reverse BFS from ``ends``; -1 where no such path exists (and for the end nodes).
    ``in_dst``: each in-CSR entry's node, when the caller keeps it (else derived here).

    >>> ptr = np.array([0, 0, 1, 2]); src = np.array([0, 1]); eid = np.array([0, 1])
    >>> toward_ends(ptr, src, eid, np.array([2]), np.ones(3, bool)).tolist()
    [0, 1, -1]
    """
    n = in_ptr.size - 1
    if in_dst is None:
        in_dst = np.repeat(np.arange(n), np.diff(in_ptr))
    nxt = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    seen[ends] = True
    frontier = seen
    entry_open = inside[in_src]
    # One round per reverse hop, over every in-CSR entry at once (a mask, no gather): entries
    # into the frontier from inside nodes not seen yet. In CSR order, the last entry of a node
    # is the one it keeps, as a BFS over the frontier's entries in order would write it.
    while True:
        hit = frontier[in_dst] & entry_open & ~seen[in_src]
        src = in_src[hit]
        if src.size == 0:
            break
        nxt[src] = in_eid[hit]
        frontier = np.zeros(n, dtype=bool)
        frontier[src] = True
        seen = seen | frontier
    return nxt
