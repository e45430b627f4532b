"""hcg_core/retrieval/walk.py: the personalized PageRank power iteration against closed forms, the
seeding by variable words, and the signal through the retriever (lifts, never admits, follows edits)."""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.walk import (
    GraphWalk,
    evidence_mass,
    personalized_pagerank,
    transition,
    variable_texts,
    walk_operator,
)
from hcg_core.types import Chunk


def _dense_transition(ptr, cols, probs, n):
    """The row-stochastic matrix P (P[i, j]: the chance to step from i to j)."""
    P = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(ptr))
    np.add.at(P, (rows, cols), probs)
    return P


def test_transition_rows_are_stochastic_and_walk_both_ways():
    ptr, cols, probs = transition(np.array([0, 1]), np.array([1, 2]), np.array([2.0, 1.0]), 4)
    P = _dense_transition(ptr, cols, probs, 4)
    # Node 1 has edges 0-1 (weight 2) and 1-2 (weight 1): 2/3 back to its cause, 1/3 on.
    assert P[1].tolist() == pytest.approx([2 / 3, 0.0, 1 / 3, 0.0])
    assert P[:3].sum(axis=1).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert P[3].sum() == 0.0  # node 3 has no edge


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_ppr_matches_the_closed_form_on_a_three_node_path(damping):
    ptr, cols, probs = transition(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 3.0]), 3)
    seed = np.array([1.0, 0.0, 0.0])
    P = _dense_transition(ptr, cols, probs, 3)
    # p = (1 - d) s + d P^T p  =>  p = (1 - d) (I - d P^T)^-1 s
    closed = np.linalg.solve(np.eye(3) - damping * P.T, (1 - damping) * seed)
    got = personalized_pagerank(ptr, cols, probs, seed, damping)
    assert got == pytest.approx(closed, abs=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_ppr_restarts_the_mass_of_a_node_without_edges():
    # 0 - 1, and node 2 alone but seeded: its mass restarts at the seed every step.
    ptr, cols, probs = transition(np.array([0]), np.array([1]), np.array([1.0]), 3)
    seed = np.array([0.5, 0.0, 0.5])
    d = 0.5
    P = _dense_transition(ptr, cols, probs, 3)
    # p = (1 - d) s + d (P^T p + p[2] s)
    A = np.eye(3) - d * P.T - d * np.outer(seed, [0.0, 0.0, 1.0])
    closed = np.linalg.solve(A, (1 - d) * seed)
    got = personalized_pagerank(ptr, cols, probs, seed * 4, d)  # the seed is normalised
    assert got == pytest.approx(closed, abs=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_ppr_conserves_mass_on_a_random_graph_and_a_zero_seed_gives_zeros():
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 60), rng.integers(0, 30, 60)
    walk = transition(src, dst, rng.random(60), 40)  # nodes 30-39 have no edges
    seed = np.zeros(40)
    seed[[0, 35]] = [1.0, 2.0]
    p = personalized_pagerank(*walk, seed, 0.5)
    assert p.min() >= 0.0
    assert p.sum() == pytest.approx(1.0)
    assert personalized_pagerank(*walk, np.zeros(40), 0.5).tolist() == [0.0] * 40


def test_evidence_mass_sums_the_edges_citing_each_chunk():
    p = np.array([0.6, 0.4, 0.0])
    # edge 0: 0-1 (conf 1), edge 1: 1-2 (conf 0.5); chunk 0 cited by both, chunk 1 by none.
    got = evidence_mass(
        p,
        np.array([0, 1]),
        np.array([1, 2]),
        np.array([1.0, 0.5]),
        np.array([0, 1]),
        np.array([0, 0]),
        2,
    )
    assert got.tolist() == pytest.approx([1.0 * (0.6 + 0.4) / 2 + 0.5 * (0.4 + 0.0) / 2, 0.0])


def test_variable_texts_hold_names_entities_and_mechanisms(graph, embedder):
    r = CausalGraphRetriever(graph, embedder)
    texts = dict(zip(r.compiled.var_names, variable_texts(graph, r.compiled), strict=True))
    assert "vessels" in texts["Inflammation(vessels)"]
    assert "vessel rupture" in texts["Stroke"]  # the mechanism of the edge into it
    assert "salt" not in texts["Stroke"]  # Diet -> Pressure is not Stroke's edge


def test_the_walk_starts_at_the_named_variable_and_reaches_its_neighbours(graph, embedder):
    r = CausalGraphRetriever(graph, embedder)
    walk = GraphWalk.of(graph, r.compiled)
    ids = [c.id for c in graph.chunks]
    mass = dict(zip(ids, walk.chunk_scores("what does a poor diet do"), strict=True))
    assert mass["c4"] == max(mass.values())  # Diet -> Pressure's evidence, next to the seed
    assert mass["c2"] > 0  # Pressure -> Stroke: one step on
    assert mass["c5"] == 0 and mass["c6"] == 0  # cited by no edge
    assert not walk.chunk_scores("sunny weather report").any()  # names no variable


def test_the_signal_lifts_text_matches_and_admits_nothing(graph, embedder):
    r = CausalGraphRetriever(graph, embedder)
    query = "diet and pressure"
    on = {rc.chunk.id: rc.details["fused_score"] for rc in r.retrieve(query, k=7).chunks}
    off = {
        rc.chunk.id: rc.details["fused_score"]
        for rc in r.with_config(use_graph=False).retrieve(query, k=7).chunks
    }
    assert on["c4"] > off["c4"]  # cited by Diet -> Pressure, and a text match
    for cid, value in off.items():
        if value <= 0:
            assert on[cid] == pytest.approx(value)  # the graph alone lifts nothing
    assert on["c5"] == pytest.approx(off["c5"])


def test_the_walk_follows_an_edit_of_the_graph(graph, embedder):
    r = CausalGraphRetriever(graph, embedder)
    first = r.walk
    assert r.walk is first  # built once per compiled graph
    r.insert([Chunk("n1", "the weather was sunny all week", "d2")])  # no causal statement
    assert r.walk.compiled is r.compiled
    assert r.walk.index is first.index  # only chunk rows grew: the variables' index is kept
    assert r.walk.chunk_scores("smoking").size == len(r.graph.chunks)
    row = [c.id for c in r.graph.chunks].index("c4")
    assert r.walk.chunk_scores("diet")[row] > 0  # Diet -> Pressure's only evidence
    r.delete(chunk_ids=["c4"])  # the edge goes with its evidence: a recompile
    assert r.walk.index is not first.index and r.walk.compiled is r.compiled
    assert not r.walk.chunk_scores("diet").any()  # Diet has no edge left to walk


@pytest.mark.parametrize("keep", ["no edges", "no variables"])
def test_a_graph_without_edges_walks_nowhere_and_retrieval_still_works(graph, embedder, keep):
    from dataclasses import replace

    empty = (
        replace(graph, edges=()) if keep == "no edges" else replace(graph, variables=(), edges=())
    )
    r = CausalGraphRetriever(empty, embedder)
    for query in ("smoking", "", "\x00 ;;", "ü" * 2000):
        assert r.walk.chunk_scores(query).tolist() == [0.0] * len(graph.chunks)
    assert r.retrieve("smoking inflames", k=2).chunks[0].chunk.id == "c0"


def test_the_walk_solved_at_load_gives_the_iterated_mass():
    # A random graph with nodes that have no edge, some seeded (their mass restarts at the seed,
    # which the solved form corrects by one scalar), and chunks cited by several edges.
    rng = np.random.default_rng(3)
    n, m, n_chunks = 40, 70, 25
    src, dst = rng.integers(0, 30, m), rng.integers(0, 30, m)
    conf = rng.random(m)
    links = np.stack([rng.integers(0, m, 90), rng.integers(0, n_chunks, 90)], axis=1)
    steps = transition(src, dst, conf, n)
    cited, W, u = walk_operator(*steps, 0.2, links, conf, src, dst)
    for seeded in ([0, 35], [3, 7, 31, 39], [36]):
        seed = np.zeros(n)
        seed[seeded] = rng.random(len(seeded)) + 0.5
        p = personalized_pagerank(*steps, seed, 0.2)
        want = evidence_mass(p, src, dst, conf, links[:, 0], links[:, 1], n_chunks)
        s = seed / seed.sum()
        got = np.zeros(n_chunks)
        got[cited] = (1 - 0.2) / (1 - 0.2 * (u @ s)) * (W @ s)
        assert got == pytest.approx(want, abs=1e-12)
        assert np.abs(want).sum() > 0 or seeded == [36]


def test_graph_walk_solved_and_iterated_agree(graph, embedder):
    walk = GraphWalk.of(graph, CausalGraphRetriever(graph, embedder).compiled)
    assert walk.solved is not None
    iterated = object.__new__(GraphWalk)
    iterated.__dict__.update(walk.__dict__)
    iterated.solved = None
    for query in ("smoking", "pressure and diet", "sleep", "sleep and diet", "weather"):
        assert walk.chunk_scores(query) == pytest.approx(iterated.chunk_scores(query), abs=1e-12)
