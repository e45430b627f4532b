"""The ``hcg`` console script on the hand-written example graph: inspect, query, and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hcg_core.cli import main

HAND = Path(__file__).resolve().parent.parent / "examples" / "hand_graph"


def test_inspect_json_counts(capsys):
    assert main(["inspect", str(HAND), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {
        "dimensions": 2,
        "metrics": 5,
        "variables": 8,
        "edges": 7,
        "chunks": 7,
        "evidence_links": 7,
    }
    assert out["variables_per_metric"]["ExposureLevel"] == 3
    assert out["metric_roles"] == {"intermediate": 3, "outcome": 1, "terminal": 1}


def test_inspect_text(capsys):
    assert main(["inspect", str(HAND)]) == 0
    out = capsys.readouterr().out
    assert "variables" in out and "ExposureLevel" in out


@pytest.mark.parametrize("mode,served_by", [("paper", "cones"), ("hybrid", "hybrid")])
def test_query_json_has_routes_scores_paths(capsys, mode, served_by):
    assert (
        main(
            [
                "query",
                str(HAND),
                "Why does smoking raise the risk of stroke?",
                "--k",
                "4",
                "--json",
                "--mode",
                mode,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert len(out["chunks"]) == 4
    assert out["served_by"] == served_by
    graph_chunks = [c for c in out["chunks"] if c["route"] == "graph"]
    assert graph_chunks, out
    path = graph_chunks[0]["paths"][0]
    assert path["variables"][-1] == "StrokeRisk"
    assert "ExposureLevel(tobacco smoking)" in path["variables"]
    assert all(isinstance(c["score"], float) for c in out["chunks"])


def test_query_text_output(capsys):
    assert main(["query", str(HAND), "blood pressure and stroke", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "served by:" in out and "[2]" in out


def test_errors_are_one_line_with_the_file(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    d = tmp_path / "g"
    shutil.copytree(HAND, d)
    (d / "graph.json").write_text("{broken")
    assert main(["query", str(d), "x"]) == 2
    err = capsys.readouterr().err
    assert "graph.json" in err and "invalid JSON" in err and "Traceback" not in err


def test_query_without_graph_has_no_graph_route(capsys):
    assert (
        main(
            [
                "query",
                str(HAND),
                "Why does smoking raise the risk of stroke?",
                "--k",
                "4",
                "--json",
                "--no-graph",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["served_by"] == "hybrid-nograph"
    assert {c["route"] for c in out["chunks"]} == {"fallback"}


def test_unknown_embedder_is_one_clear_error(capsys):
    assert main(["query", str(HAND), "x", "--embedder", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown embedder 'bogus'" in err and "hashing" in err
