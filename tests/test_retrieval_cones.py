"""Stage 3 with two outcome metrics reached: exact cones, their order, and the evidence order.

The shared fixture graph (conftest) reaches one outcome only, so cross-cone ordering, ``max_cones``
and the tie-breaks between cones and between evidence chunks need a graph of their own:

    Smoking -> Inflammation -> Stroke (outcome)
                Inflammation -> Death (outcome)      [only with ``shared=True``]
    Diet    -> Pressure     -> Death (outcome)

Metric order puts Death before Stroke, so wherever Stroke's cone comes first, a rule other than
metric order put it there.
"""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.config import HybridConfig, PaperConfig, RetrievalConfig
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.retrieval.paper import cone_rank_of_nodes, outcome_cones
from hcg_core.types import (
    CausalEdge,
    CausalGraph,
    Chunk,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
)

# The evidence order (by text relevance to the query) is pinned in test_retrieval_paper.py; these
# tests pin which chunks the cones select.
PAPER = RetrievalConfig(mode="paper", paper=PaperConfig(vector_fill=False))


def two_outcome_graph(*, shared: bool, conf_si: float = 0.9, conf_ist: float = 0.8) -> CausalGraph:
    metrics = (
        Metric("Smoking", (), "", "exposure"),
        Metric("Diet", (), "", "exposure"),
        Metric("Inflammation", (), "", "physiology"),
        Metric("Pressure", (), "", "physiology"),
        Metric("Death", (), "", "outcome", "outcome"),
        Metric("Stroke", (), "", "outcome", "outcome"),
    )
    spec = DomainSpec((), metrics, outcome=OutcomeConfig(("Death", "Stroke"), ()))
    variables = tuple(Variable(m.name) for m in metrics)
    chunks = tuple(
        Chunk(cid, text, "doc")
        for cid, text in [
            ("c_si", "inflammation of the vessels"),
            ("c_ist", "smoking smoking stroke"),
            ("c_ide", "inflammation death"),
            ("c_dp", "diet pressure"),
            ("c_pde", "pressure death"),
            ("c_other", "weather report"),
        ]
    )
    edges = [
        CausalEdge("e_si", "Smoking", "Inflammation", "smoking inflames", conf_si, ("c_si",)),
        CausalEdge("e_ist", "Inflammation", "Stroke", "clots", conf_ist, ("c_ist",)),
        CausalEdge("e_dp", "Diet", "Pressure", "salt", 0.7, ("c_dp",)),
        CausalEdge("e_pde", "Pressure", "Death", "rupture", 0.6, ("c_pde",)),
    ]
    if shared:
        edges.append(CausalEdge("e_ide", "Inflammation", "Death", "sepsis", 0.4, ("c_ide",)))
    return CausalGraph(spec, variables, tuple(edges), chunks)


def _retriever(graph, embedder, config=PAPER):
    return CausalGraphRetriever.from_graph(graph, embedder, config)


def _cones(r, query):
    t = r.traverse(r.embed_query(query))
    names = {int(g): name for g, name in enumerate(("Death", "Stroke"))}
    return [names[int(g)] for g in t.cones.groups], t.cones.convergence.tolist(), t


def _ids(result):
    return [c.chunk.id for c in result.chunks]


def test_both_outcomes_reached_and_ranked_by_convergence(embedder):
    r = _retriever(two_outcome_graph(shared=True), embedder)
    cones, convergence, t = _cones(r, "smoking smoking diet")
    assert [r.compiled.var_names[i] for i in t.rows] == ["Smoking", "Diet"]
    # Death's cone holds both matched nodes (Smoking via Inflammation, and Diet); Stroke's one.
    assert (cones, convergence) == (["Death", "Stroke"], [2, 1])
    names = r.compiled.var_names
    members = {
        c: sorted(names[i] for i in np.flatnonzero(t.cones.member(g)))
        for c, g in zip(cones, t.cones.groups.tolist(), strict=True)
    }
    assert members == {
        "Death": ["Death", "Diet", "Inflammation", "Pressure", "Smoking"],
        "Stroke": ["Inflammation", "Smoking", "Stroke"],
    }
    res = r.retrieve("smoking smoking diet", k=10)
    assert res.served_by == "cones"
    # Both cones' edges select their evidence; c_other, cited by none, stays out.
    assert sorted(_ids(res)) == ["c_dp", "c_ide", "c_ist", "c_pde", "c_si"]
    assert all(c.route == "graph" for c in res.chunks)


def test_node_rank_is_the_best_cone_a_node_belongs_to(embedder):
    r = _retriever(two_outcome_graph(shared=True), embedder)
    _, _, t = _cones(r, "smoking smoking diet")
    ranks = cone_rank_of_nodes(t.cones, r.compiled.n_vars).tolist()
    rank = dict(zip(r.compiled.var_names, ranks, strict=True))
    assert rank == {
        "Smoking": 0,
        "Diet": 0,
        "Inflammation": 0,
        "Pressure": 0,
        "Death": 0,
        "Stroke": 1,
    }


def test_max_cones_keeps_the_best_cone_only(embedder):
    r = _retriever(
        two_outcome_graph(shared=True),
        embedder,
        RetrievalConfig(mode="paper", max_cones=1, paper=PaperConfig(vector_fill=False)),
    )
    cones, convergence, _ = _cones(r, "smoking smoking diet")
    assert (cones, convergence) == (["Death"], [2])
    # Stroke's cone is dropped, and with it e_ist's chunk.
    assert sorted(_ids(r.retrieve("smoking smoking diet", k=10))) == [
        "c_dp",
        "c_ide",
        "c_pde",
        "c_si",
    ]


def test_convergence_tie_goes_to_the_cone_with_the_better_matched_node(embedder):
    r = _retriever(two_outcome_graph(shared=False), embedder)
    # Each cone holds one matched node. Smoking is the better match here, so Stroke's cone wins
    # although Death comes first in metric order.
    cones, convergence, _ = _cones(r, "smoking smoking diet")
    assert (cones, convergence) == (["Stroke", "Death"], [1, 1])
    res = r.retrieve("smoking smoking diet", k=10)
    by_id = {c.chunk.id: c for c in res.chunks}
    assert sorted(by_id) == ["c_dp", "c_ist", "c_pde", "c_si"]
    assert str(by_id["c_si"].paths[0]) == "Smoking -> Inflammation -> Stroke"
    assert str(by_id["c_dp"].paths[0]) == "Diet -> Pressure -> Death"
    # Diet the better match: Death's cone first.
    cones, _, _ = _cones(r, "smoking diet diet")
    assert cones == ["Death", "Stroke"]


def test_outcome_cones_tie_break_by_best_similarity_then_metric_order():
    # 0 -> 2 (end group 0), 1 -> 3 (end group 1); matched 0 and 1.
    src, dst = np.array([0, 1]), np.array([2, 3])
    end_group = np.array([-1, -1, 0, 1])
    reached = np.ones(4, bool)
    better_second = outcome_cones(
        reached, src, dst, end_group, np.array([0, 1]), np.array([0.4, 0.8]), 6
    )
    assert better_second.groups.tolist() == [1, 0]
    equal = outcome_cones(reached, src, dst, end_group, np.array([0, 1]), np.array([0.5, 0.5]), 6)
    assert equal.groups.tolist() == [0, 1]


# ------------------------------------------------------------------ the word budget, exactly


@pytest.mark.parametrize(
    "budget,expected",
    [
        (3, ["c0"]),  # the first chunk always comes, even past the budget
        (5, ["c0"]),  # c0 has exactly 5 words: the budget is spent, c2 does not start
        (6, ["c0", "c2"]),  # c2 starts at word 5 < 6 and may cross: 9 words
        (9, ["c0", "c2"]),
        (10, ["c0", "c2", "c1"]),  # 14 words
    ],
)
def test_word_budget_last_chunk_may_cross(graph, embedder, budget, expected):
    r = CausalGraphRetriever.from_graph(graph, embedder, PAPER).with_config(word_budget=budget)
    assert _ids(r.retrieve("smoking", k=6)) == expected


def test_word_budget_applies_to_vector_fill(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, RetrievalConfig(mode="paper"))
    # Graph chunks hold 14 words; with 15 one fill chunk starts (at word 14) and may cross.
    res = r.with_config(word_budget=15).retrieve("smoking", k=6)
    assert [c.route for c in res.chunks] == ["graph", "graph", "graph", "fallback"]
    # With 14 the budget is spent by the graph chunks: no fill.
    assert len(r.with_config(word_budget=14).retrieve("smoking", k=6).chunks) == 3


# ------------------------------------------------------------------ hybrid graph signal


def test_hybrid_graph_signal_is_the_walk_on_the_text_scale():
    chunks = [Chunk(f"c{i}", f"zz{i} filler text here", "d") for i in range(4)]
    ranker = HybridRanker(chunks, None, HybridConfig(passage_words=0, diversity=1.0))
    walk = np.array([0.2, 0.0, 0.6, 0.1])  # the walk's mass per chunk
    # Every chunk matches the query alike (text relevance 1.0 each), so the walk decides.
    res = ranker.rank("filler text", None, walk=walk, k=4)
    got = {c.chunk.id: c.details["fused_score"] for c in res.chunks}
    # A z-score against the walk's positive units (mean 0.3, sd 0.216), clipped at 0, over 3.
    w, z = HybridConfig().graph_weight, (0.6 - 0.3) / np.std([0.2, 0.6, 0.1])
    assert got == pytest.approx({"c2": 1 + w * z / 3, "c0": 1.0, "c3": 1.0, "c1": 1.0})
    assert _ids(res)[0] == "c2"
    # Where no text signal found anything, the graph alone lifts nothing.
    res = ranker.rank("nothing matches", None, walk=walk, k=4)
    assert {c.details["fused_score"] for c in res.chunks} == {0.0}
