"""benchmarks/graph_designs.py: the personalized PageRank power iteration against closed forms, and
the design ranker's fusion on the hand-built graph of conftest."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hcg_core.retrieval import CausalGraphRetriever

ROOT = Path(__file__).resolve().parents[1]


def _designs():
    spec = importlib.util.spec_from_file_location(
        "graph_designs", ROOT / "benchmarks" / "graph_designs.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("graph_designs", module)
    spec.loader.exec_module(module)
    return module


gd = _designs()


def _dense_transition(ptr, cols, probs, n):
    """The row-stochastic matrix P (P[i, j]: the chance to step from i to j)."""
    P = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(ptr))
    np.add.at(P, (rows, cols), probs)
    return P


def test_transition_rows_are_stochastic_and_walk_both_ways():
    ptr, cols, probs = gd.transition(np.array([0, 1]), np.array([1, 2]), np.array([2.0, 1.0]), 4)
    P = _dense_transition(ptr, cols, probs, 4)
    # Node 1 has edges 0-1 (weight 2) and 1-2 (weight 1): 2/3 back to its cause, 1/3 on.
    assert P[1].tolist() == pytest.approx([2 / 3, 0.0, 1 / 3, 0.0])
    assert P[:3].sum(axis=1).tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert P[3].sum() == 0.0  # node 3 has no edge


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_ppr_matches_the_closed_form_on_a_three_node_path(damping):
    ptr, cols, probs = gd.transition(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 3.0]), 3)
    seed = np.array([1.0, 0.0, 0.0])
    P = _dense_transition(ptr, cols, probs, 3)
    # p = (1 - d) s + d P^T p  =>  p = (1 - d) (I - d P^T)^-1 s
    closed = np.linalg.solve(np.eye(3) - damping * P.T, (1 - damping) * seed)
    got = gd.personalized_pagerank(ptr, cols, probs, seed, damping)
    assert got == pytest.approx(closed, abs=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_ppr_restarts_the_mass_of_a_node_without_edges():
    # 0 - 1, and node 2 alone but seeded: its mass restarts at the seed every step.
    ptr, cols, probs = gd.transition(np.array([0]), np.array([1]), np.array([1.0]), 3)
    seed = np.array([0.5, 0.0, 0.5])
    d = 0.5
    P = _dense_transition(ptr, cols, probs, 3)
    # p = (1 - d) s + d (P^T p + p[2] s)
    A = np.eye(3) - d * P.T - d * np.outer(seed, [0.0, 0.0, 1.0])
    closed = np.linalg.solve(A, (1 - d) * seed)
    got = gd.personalized_pagerank(ptr, cols, probs, seed * 4, d)  # the seed is normalised
    assert got == pytest.approx(closed, abs=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_ppr_conserves_mass_on_a_random_graph_and_a_zero_seed_gives_zeros():
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 60), rng.integers(0, 30, 60)
    walk = gd.transition(src, dst, rng.random(60), 40)  # nodes 30-39 have no edges
    seed = np.zeros(40)
    seed[[0, 35]] = [1.0, 2.0]
    p = gd.personalized_pagerank(*walk, seed, 0.5)
    assert p.min() >= 0.0
    assert p.sum() == pytest.approx(1.0)
    assert gd.personalized_pagerank(*walk, np.zeros(40), 0.5).tolist() == [0.0] * 40


def _fused(result) -> dict[str, float]:
    return {rc.chunk.id: rc.details["fused_score"] for rc in result.chunks}


def test_ppr_design_lifts_cited_chunks_and_leaves_the_rest(graph, embedder):
    base = CausalGraphRetriever(graph, embedder)
    design = gd.DesignRetriever.wrap(base, gd.Design("ppr", weight=0.25, seeds="soft"))
    query = "smoking and stroke"
    before = _fused(base.retrieve(query, k=7))
    after = _fused(design.retrieve(query, k=7))
    assert after["c0"] > before["c0"]  # cited by the smoking edges the walk starts from
    assert after["c5"] == pytest.approx(before["c5"])  # cited by no edge: nothing to pass on
    # graph off is the same pipeline in both: the design adds nothing there.
    off = base.with_config(use_graph=False)
    assert _fused(gd.DesignRetriever.wrap(off, design._signal.design).retrieve(query, k=7)) == (
        _fused(off.retrieve(query, k=7))
    )


def test_mechanism_expansion_adds_only_new_words(graph, embedder):
    base = CausalGraphRetriever(graph, embedder)
    signal = gd.GraphSignal(base, gd.Design("mechanism", source="matched", edges=5))
    query = "smoking vessels"
    terms = signal.expansion(query, base.embed_query(query))
    assert "inflame" in terms  # from "smoking inflames vessels", the matched edge's mechanism
    assert "smoking" not in terms and "vessel" not in terms  # the query's own words
