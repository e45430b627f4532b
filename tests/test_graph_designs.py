"""benchmarks/graph_designs.py: the design ranker's fusion on the hand-built graph of conftest (the
walk's own arithmetic is tested in test_walk.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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


def test_paper_bonus_design_is_the_earlier_signal_in_the_walks_place(graph, embedder):
    base = CausalGraphRetriever(graph, embedder)
    design = gd.DesignRetriever.wrap(base, gd.DESIGNS["paper-bonus"])
    result = design.retrieve("smoking and stroke", k=7)
    graph_rows = {rc.chunk.id for rc in result.chunks if rc.route == "graph"}
    text_only = _fused(base.with_config(use_graph=False).retrieve("smoking and stroke", k=7))
    for rc in result.chunks:
        lift = rc.details["fused_score"] - text_only[rc.chunk.id]
        # Only the paper route's chunks (with a text match) gain, by at most the full weight.
        assert (lift > 0) == (rc.chunk.id in graph_rows and text_only[rc.chunk.id] > 0)
        assert lift <= 0.25 + 1e-9
