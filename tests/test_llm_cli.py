"""``hcg build --llm-base-url`` end to end over real HTTP against the faulty local stub server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.llm.responder import respond

from hcg_core.cli import main
from hcg_core.store import current_dir
from hcg_core.testing import FaultPlan, StubLLMServer

CORPUS = Path(__file__).parent / "fixtures" / "llm" / "corpus.md"


def _outcome(tmp_path: Path) -> Path:
    p = tmp_path / "outcome.yaml"
    p.write_text("outcomes: [FishMortality, DrinkingWaterRisk]\nterminals: [EcosystemHealth]\n")
    return p


@pytest.mark.slow
def test_cli_llm_build_under_faults_counts_every_call(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    plan = FaultPlan(rate_limit_every=4, malformed_every=9, retry_after="0.01")
    out = tmp_path / "g"
    args = [
        "build",
        str(CORPUS),
        "--out",
        str(out),
        "--tier",
        "XS",
        "--embedder",
        "hashing",
        "--outcome",
        str(_outcome(tmp_path)),
        "--quiet",
        "--llm-model",
        "stub-model",
    ]
    with StubLLMServer(respond, faults=plan) as srv:
        assert main([*args, "--llm-base-url", srv.base_url, "--estimate"]) == 0
        estimate = capsys.readouterr().out
        assert srv.calls == 0 and "calls" in estimate  # the estimate spends nothing
        assert main([*args, "--llm-base-url", srv.base_url]) == 0
        calls = srv.calls
        assert "built" in capsys.readouterr().out
        assert calls > 5 and sum(srv.by_fault.values()) >= 2
        assert main(["inspect", str(out), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)["build_report"]
        assert report["totals"]["calls"] == calls  # call for call
        assert report["totals"]["failed"] == 0
        assert main(["inspect", str(out)]) == 0
        text = capsys.readouterr().out
        assert "tier2" in text and f"LLM: {calls} calls" in text
        # A rerun with the same arguments is served by the cache in DIR/.llm_cache.
        assert main([*args, "--llm-base-url", srv.base_url]) == 0
        assert srv.calls == calls
    graph = json.loads((current_dir(out) / "graph.json").read_text())
    assert graph["edges"] and all(e["mechanism"] for e in graph["edges"])
    assert {e.get("effect") for e in graph["edges"]} >= {"increases", "decreases"}


def test_llm_build_shows_a_progress_bar_per_stage(capsys):
    from fixtures.llm.responder import OUTCOME, load_chunks

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build import build_graph
    from hcg_core.testing import ScriptedLLM

    r = build_graph(
        load_chunks(),
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(respond),
        tier="XS",
        outcome=OUTCOME,
        progress=True,
    )
    err = capsys.readouterr().err
    labels = {"stage1": "stage 1 (spec)", "tier1": "tier 1 (metrics)", "tier2": "tier 2 (edges)"}
    for name, label in labels.items():
        # Scripted replies never fail, so each item is one call and the bar ends at the calls.
        assert f"{label}: {r.report['stages'][name]['calls']}item" in err
    build_graph(
        load_chunks(),
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(respond),
        tier="XS",
        outcome=OUTCOME,
        progress=False,
    )
    assert "tier 2 (edges)" not in capsys.readouterr().err


def test_cli_openai_url_without_key_exits_2_naming_the_variable(tmp_path, capsys, monkeypatch):
    """``--llm-base-url https://api.openai.com/v1`` with no OPENAI_API_KEY: exit 2 naming the
    variable, before any call and with no graph written; ``--estimate`` (no call) needs no key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "g"
    args = ["build", str(CORPUS), "--out", str(out), "--embedder", "hashing", "--quiet"]
    args += ["--llm-base-url", "https://api.openai.com/v1", "--llm-model", "gpt-4o-mini"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "set OPENAI_API_KEY" in err and "api.openai.com" in err and "Traceback" not in err
    assert not (out / "manifest.json").exists()
    assert main([*args, "--estimate"]) == 0
    assert "calls" in capsys.readouterr().out
