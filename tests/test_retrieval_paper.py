"""Stage 3 on hand-built graphs: exact expected outputs for each step and every fallback."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from hcg_core.config import PaperConfig, RetrievalConfig
from hcg_core.errors import ConfigError
from hcg_core.retrieval import CausalGraphRetriever, bounded_bfs, match_nodes, outcome_cones
from hcg_core.retrieval.compiled import CompiledGraph

PAPER = BY_QUERY = RetrievalConfig(mode="paper")  # the selected chunks by text, then the fill


# ---------------------------------------------------------------- matching (Definition 2)


def _match(sims, starts, **kw):
    args = dict(tau_min=0.35, top_metrics=5, band=0.2, per_metric=3) | kw
    rows, s = match_nodes(np.array(sims), np.array(starts), **args)
    return rows.tolist()


def test_metric_below_floor_is_dropped():
    assert _match([0.34, 0.2, 0.36], [0, 2, 3]) == [2]


def test_band_threshold_is_min_of_floor_and_relative_band():
    # sigma* = 0.40 -> tau_j = min(0.35, 0.32) = 0.32: 0.33 admitted, 0.31 not.
    assert _match([0.40, 0.33, 0.31], [0, 3]) == [0, 1]
    # sigma* = 0.90 -> tau_j = min(0.35, 0.72) = 0.35: 0.36 admitted, 0.34 not.
    assert _match([0.90, 0.36, 0.34], [0, 3]) == [0, 1]


def test_per_metric_cap_and_top_k_metrics():
    # One metric with five good variables: only P=3 admitted, by similarity.
    assert _match([0.5, 0.9, 0.6, 0.7, 0.8], [0, 5]) == [1, 4, 3]
    # Six metrics above the floor, K=5: the weakest metric (0.36) is dropped.
    sims = [0.9, 0.8, 0.7, 0.6, 0.5, 0.36]
    assert sorted(_match(sims, [0, 1, 2, 3, 4, 5, 6])) == [0, 1, 2, 3, 4]
    assert _match(sims, [0, 1, 2, 3, 4, 5, 6], top_metrics=2) == [0, 1]


def test_no_metric_matches():
    assert _match([0.1, 0.2], [0, 2]) == []


# ---------------------------------------------------------------- BFS (Definition 3)


def _chain(n):
    ptr = np.append(np.arange(n), n - 1)  # i -> i+1 for i < n-1
    return ptr, np.arange(1, n), np.arange(n - 1)


@pytest.mark.parametrize("hops,reached", [(0, 1), (1, 2), (4, 5), (10, 6)])
def test_bfs_depth_bound(hops, reached):
    ptr, dst, eid = _chain(6)
    dist, parent = bounded_bfs(ptr, dst, eid, np.array([0]), hops)
    assert int((dist >= 0).sum()) == reached
    assert dist[:reached].tolist() == list(range(reached))
    assert parent[1:reached].tolist() == list(range(reached - 1))


def test_bfs_stops_at_end_nodes_but_expands_sources():
    ptr, dst, eid = _chain(4)
    stop = np.array([False, True, False, False])
    dist, _ = bounded_bfs(ptr, dst, eid, np.array([0]), 4, stop=stop)
    assert dist.tolist() == [0, 1, -1, -1]
    dist, _ = bounded_bfs(ptr, dst, eid, np.array([1]), 4, stop=stop)
    assert dist.tolist() == [-1, 0, 1, 2]


# ---------------------------------------------------------------- cones (Definition 4)


def test_cones_rank_by_convergence_and_merge_by_metric():
    # 0 -> 2 (end, metric A), 1 -> 3 (end, metric A), 1 -> 4 (end, metric B), 0 -> 5 -> 4.
    src = np.array([0, 1, 1, 0, 5])
    dst = np.array([2, 3, 4, 5, 4])
    end_group = np.array([-1, -1, 0, 0, 1, -1])
    reached = np.ones(6, bool)
    cones = outcome_cones(
        reached, src, dst, end_group, np.array([0, 1]), np.array([0.9, 0.5]), max_cones=6
    )
    # A's two end nodes merge into one cone reached by both matched nodes; B also by both
    # (1 -> 4 and 0 -> 5 -> 4). Tie on convergence 2: broken by best matched similarity,
    # equal (0.9 in both), then metric order.
    assert cones.groups.tolist() == [0, 1]
    assert cones.convergence.tolist() == [2, 2]
    assert np.flatnonzero(cones.member(0)).tolist() == [0, 1, 2, 3]
    assert np.flatnonzero(cones.member(1)).tolist() == [0, 1, 4, 5]
    one = outcome_cones(
        reached, src, dst, end_group, np.array([0, 1]), np.array([0.9, 0.5]), max_cones=1
    )
    assert one.groups.tolist() == [0]


def test_cone_convergence_orders_cones():
    src = np.array([0, 1, 0])
    dst = np.array([3, 3, 2])
    end_group = np.array([-1, -1, 1, 0])
    cones = outcome_cones(
        np.ones(4, bool), src, dst, end_group, np.array([0, 1]), np.array([0.9, 0.8]), max_cones=6
    )
    assert cones.groups.tolist() == [0, 1]  # group 0 (node 3) is reached by 2 matched nodes
    assert cones.convergence.tolist() == [2, 1]


# ---------------------------------------------------------------- the retriever end to end


def test_cones_route_selects_evidence_and_carries_paths(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, PAPER)
    res = r.retrieve("smoking", k=4)
    assert res.served_by == "cones"
    assert res.matched[0] == "Smoking"
    ids = [c.chunk.id for c in res.chunks]
    # Cone of Stroke (outcome; BFS stops there, so Death is not reached): Smoking ->
    # Inflammation(vessels) -> Pressure -> Stroke. Evidence c2, c0 and c1 (their order: by text,
    # test_query_order_ranks_only_the_selected_evidence_by_text); c0 is cited twice and returned
    # once. Then vector fill.
    assert sorted(ids[:3]) == ["c0", "c1", "c2"]
    assert [c.route for c in res.chunks] == ["graph", "graph", "graph", "fallback"]
    top = res.chunks[ids.index("c2")]
    assert str(top.paths[0]) == "Smoking -> Inflammation(vessels) -> Pressure -> Stroke"
    assert top.paths[0].edge_ids == ("e_s_iv", "e_iv_p", "e_p_st")
    assert "vessel rupture" in top.paths[0].mechanisms
    assert len(ids) == len(set(ids)) == 4


def test_exactly_k_and_dedup(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, PAPER)
    for k in range(1, len(graph.chunks) + 1):
        res = r.retrieve("smoking and diet", k=k)
        ids = [c.chunk.id for c in res.chunks]
        assert len(ids) == k and len(set(ids)) == k
    assert len(r.retrieve("smoking", k=50).chunks) == len(graph.chunks)


def test_no_match_falls_back_to_vector(graph, embedder):
    res = CausalGraphRetriever.from_graph(graph, embedder, PAPER).retrieve("weather", k=2)
    assert res.served_by == "vector" and res.matched == ()
    assert [c.route for c in res.chunks] == ["fallback", "fallback"]
    assert res.chunks[0].chunk.id == "c5"


def test_no_outcome_reached_uses_bfs_subgraph(graph, embedder):
    # With 0 hops from Diet nothing but Diet is reached: no subgraph edges, so vector.
    r = CausalGraphRetriever.from_graph(graph, embedder, RetrievalConfig(mode="paper", max_hops=0))
    assert r.retrieve("diet", k=2).served_by == "vector"
    # Sleep is matched but isolated: no edges -> vector fallback.
    assert r.retrieve("sleep", k=1).served_by == "vector"
    # One hop from Smoking reaches Inflammation but no outcome: BFS-subgraph evidence (c0).
    r1 = r.with_config(max_hops=1)
    res = r1.retrieve("smoking", k=2)
    assert res.served_by == "bfs"
    assert res.chunks[0].chunk.id == "c0" and res.chunks[0].route == "graph"
    assert res.chunks[1].route == "fallback"


def test_no_evidence_falls_back(graph, embedder):
    from dataclasses import replace

    bare = replace(graph, edges=tuple(replace(e, evidence=()) for e in graph.edges))
    res = CausalGraphRetriever.from_graph(bare, embedder, PAPER).retrieve("smoking", k=3)
    assert res.served_by == "vector"
    assert all(c.route == "fallback" for c in res.chunks) and len(res.chunks) == 3


def test_vector_fill_can_be_switched_off_and_budget_applies(graph, embedder):
    r = CausalGraphRetriever.from_graph(
        graph,
        embedder,
        RetrievalConfig(mode="paper", paper=PaperConfig(vector_fill=False)),
    )
    assert [c.route for c in r.retrieve("smoking", k=6).chunks] == ["graph"] * 3
    rb = r.with_config(word_budget=8, paper=PaperConfig())
    res = rb.retrieve("smoking", k=6)
    # c0 (5 words) and c2 (starts at word 5 < 8, so it may cross): 9 words, no fill.
    assert [c.chunk.id for c in res.chunks] == ["c0", "c2"]
    assert sum(len(c.chunk.text.split()) for c in res.chunks) == 9


def test_query_order_ranks_only_the_selected_evidence_by_text(graph, embedder):
    r = CausalGraphRetriever.from_graph(
        graph, embedder, replace(BY_QUERY, paper=PaperConfig(vector_fill=False))
    )
    res = r.retrieve("smoking pressure", k=6)
    # The cone of Stroke selects c0, c1, c2 (Smoking -> Inflammation(vessels) -> Pressure ->
    # Stroke). By text: c0 holds "smoking", c2 and c1 "pressure" (c2 the shorter, so first).
    # c4 ("a poor diet raises pressure") matches the text too but no selected edge cites it.
    assert [c.chunk.id for c in res.chunks] == ["c0", "c2", "c1"]
    assert [c.route for c in res.chunks] == ["graph"] * 3
    assert res.served_by == "cones"
    assert str(res.chunks[1].paths[0]) == "Pressure -> Stroke"


def test_query_order_keeps_the_filter_and_the_budget(graph, embedder):
    r = CausalGraphRetriever.from_graph(
        graph, embedder, replace(BY_QUERY, paper=PaperConfig(vector_fill=False))
    )
    allowed = np.array([c.id != "c1" for c in graph.chunks])
    ids = [c.chunk.id for c in r.retrieve("smoking pressure", k=6, allowed=allowed).chunks]
    assert ids == ["c0", "c2"]
    # c2 (4 words), then c3 starts at word 4 < 5 and may cross the budget; nothing after.
    res = r.with_config(word_budget=5).retrieve("pressure stroke", k=6)
    assert [c.chunk.id for c in res.chunks] == ["c2", "c3"]
    # With vector fill the selection comes first, then the fill.
    filled = r.with_config(paper=PaperConfig(vector_fill=True)).retrieve("pressure stroke", k=4)
    assert [c.route for c in filled.chunks] == ["graph", "graph", "fallback", "fallback"]


def test_bad_k_and_config():
    with pytest.raises(ConfigError):
        RetrievalConfig(band=1.5)
    with pytest.raises(ConfigError):
        RetrievalConfig(top_k=0)


def test_bad_k_at_query(graph, embedder):
    with pytest.raises(ConfigError):
        CausalGraphRetriever.from_graph(graph, embedder, PAPER).retrieve("smoking", k=0)


def test_compiled_arrays_are_read_only(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, PAPER)
    assert isinstance(r.compiled, CompiledGraph)
    with pytest.raises(ValueError):
        r.compiled.var_emb[0, 0] = 1.0


@pytest.mark.parametrize("mode", ["paper", "hybrid"])
def test_concurrent_queries_match_serial(graph, embedder, mode):
    # Threads start before the hybrid ranker exists, so its lazy construction races too.
    r = CausalGraphRetriever.from_graph(graph, embedder, RetrievalConfig(mode=mode))
    queries = ["smoking", "diet", "sleep", "weather", "stroke pressure"] * 20
    got: dict[int, list[str]] = {}

    def work(i: int) -> None:
        got[i] = [c.chunk.id for c in r.retrieve(queries[i], k=4).chunks]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    serial = [[c.chunk.id for c in r.retrieve(q, k=4).chunks] for q in queries]
    assert [got[i] for i in range(len(queries))] == serial


def test_nodes_only_triples(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, PAPER)
    triples = r.graph_triples("smoking")
    # The Stroke cone's edges, best confidence first; no chunk text.
    assert triples == [
        "Pressure -> Stroke: vessel rupture",
        "Smoking -> Inflammation(vessels): smoking inflames vessels",
        "Inflammation(vessels) -> Pressure: stiff vessels",
    ]
    assert r.graph_triples("weather") == []
