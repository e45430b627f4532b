"""Failure is loud: ``hcg build`` with a failing or misconfigured provider prints the failures by
cause, exits non-zero and writes no loadable graph (unless ``--allow-partial``); a rerun after the
provider recovers resumes from the cache. Over real HTTP against the 127.0.0.1 stub."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fixtures.llm.responder import OUTCOME, load_chunks, respond

from hcg_core.cli import EXIT_BUILD_INCOMPLETE, main
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import IncompleteBuildError
from hcg_core.graph_build import build_graph
from hcg_core.spec.yaml_io import spec_to_yaml
from hcg_core.store import current_dir, load_graph
from hcg_core.testing import FaultPlan, ScriptedLLM, StubLLMServer

CORPUS = Path(__file__).parent / "fixtures" / "llm" / "corpus.md"


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    clean = build_graph(
        load_chunks(),
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(respond),
        tier="XS",
        outcome=OUTCOME,
    )
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(spec_to_yaml(clean.graph.spec), encoding="utf-8")
    return path


def _args(out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "build",
        str(CORPUS),
        "--out",
        str(out),
        "--tier",
        "XS",
        "--embedder",
        "hashing",
        "--quiet",
        "--llm-model",
        "stub-model",
        "--llm-base-url",
        base_url,
        "--max-retries",
        "0",
        *extra,
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _assert_loud(code: int, err: str, out: Path, cause: str) -> None:
    assert code == EXIT_BUILD_INCOMPLETE, err
    assert "the LLM build is incomplete" in err and "failures by cause" in err
    assert cause in err
    assert "no graph written" in err
    assert not (out / "graph.json").exists() and not (out / "manifest.json").exists()
    saved = json.loads((out / ".llm_cache" / "failed_build.json").read_text())
    assert saved["partial"] is True and saved["failure_causes"][0]["cause"] in err


FAILING = {
    "server_down": (None, "server unreachable"),
    "http_500": (
        FaultPlan(server_error_every=1, allow_consecutive=True),
        "server errors (HTTP 5xx)",
    ),
    "malformed": (FaultPlan(malformed_every=1, allow_consecutive=True), "never matched the schema"),
    "slow": ("slow", "server too slow"),
}


@pytest.mark.slow  # real timeouts and retries against the stub: about 5 s in all
@pytest.mark.parametrize("with_spec", [False, True], ids=["stage1", "spec"])
@pytest.mark.parametrize("mode", sorted(FAILING))
def test_failing_provider_exits_non_zero_with_failures_by_cause(
    mode, with_spec, spec_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    plan, cause = FAILING[mode]
    out = tmp_path / "g"
    extra = ["--spec", str(spec_file)] if with_spec else ["--outcome", str(_outcome(tmp_path))]
    if mode == "server_down":
        code = main(_args(out, f"http://127.0.0.1:{_free_port()}/v1", *extra))
    else:
        slow = plan == "slow"
        with StubLLMServer(respond, faults=None if slow else plan, delay=1.5 if slow else 0) as srv:
            code = main(_args(out, srv.base_url, *extra, *(["--timeout", "1"] if slow else [])))
    _assert_loud(code, capsys.readouterr().err, out, cause)


def _outcome(tmp_path: Path) -> Path:
    p = tmp_path / "outcome.yaml"
    p.write_text("outcomes: [FishMortality, DrinkingWaterRisk]\nterminals: [EcosystemHealth]\n")
    return p


@pytest.mark.parametrize("with_spec", [False, True], ids=["stage1", "spec"])
def test_not_a_url_is_a_clear_error(with_spec, spec_file, tmp_path, capsys):
    out = tmp_path / "g"
    extra = ["--spec", str(spec_file)] if with_spec else []
    assert main(_args(out, "notaurl", *extra)) == 2
    err = capsys.readouterr().err
    assert "'notaurl' is not an http(s) URL" in err
    assert not (out / "manifest.json").exists()


@pytest.mark.slow  # a full LLM build against a failing stub
def test_allow_partial_writes_a_graph_marked_partial(spec_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "g"
    plan = FaultPlan(server_error_every=1, allow_consecutive=True)
    with StubLLMServer(respond, faults=plan) as srv:
        code = main(_args(out, srv.base_url, "--spec", str(spec_file), "--allow-partial"))
    captured = capsys.readouterr()
    assert code == 0
    assert "warning: writing a PARTIAL graph" in captured.err and "(PARTIAL)" in captured.out
    report = json.loads((current_dir(out) / "build_report.json").read_text())
    assert report["partial"] is True
    assert any("failed" in p for p in report["problems"])
    assert report["failure_causes"][0]["cause"] == "server errors (HTTP 5xx)"
    assert main(["inspect", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "PARTIAL graph: " in shown and "coverage: chunks shown to stage1 0%" in shown


@pytest.mark.slow
def test_rerun_after_recovery_resumes_from_the_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "g"
    with StubLLMServer(respond) as srv:
        # Every third request fails (no retries): some items of every stage are lost.
        srv.faults = FaultPlan(server_error_every=3, allow_consecutive=True)
        extra = ["--outcome", str(_outcome(tmp_path)), "--max-concurrency", "1"]
        assert main(_args(out, srv.base_url, *extra)) == EXIT_BUILD_INCOMPLETE
        failed = srv.by_fault["server_error"]
        assert failed > 0 and not (out / "manifest.json").exists()
        capsys.readouterr()
        srv.faults = FaultPlan()  # the provider recovers
        srv.reset_counts()
        assert main(_args(out, srv.base_url, *extra)) == 0
        assert "built" in capsys.readouterr().out
    report = json.loads((current_dir(out) / "build_report.json").read_text())
    clean = build_graph(
        load_graph(out).graph.chunks,  # the chunks the CLI made: the Tier 2 rule reads them
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(respond),
        tier="XS",
        outcome=OUTCOME,
    )
    # Every item of the rerun was either answered by the cache or asked once; nothing failed.
    assert report["totals"]["cache_hits"] > 0 and report["totals"]["failed"] == 0
    assert srv.calls + report["totals"]["cache_hits"] == clean.report["totals"]["calls"]
    assert len(json.loads((current_dir(out) / "graph.json").read_text())["edges"]) == len(
        clean.graph.edges
    )


def test_degenerate_graph_is_an_error_in_the_library(spec_file):
    """No templates at all (every Tier 1 answer says 'not causal') -> 0 edges -> an error."""

    def nothing_causal(req):
        out = respond(req)
        if req.schema_name == "Tier1Reply":
            out["not_causal"] += [link["target"] for link in out["causal"]]
            out["causal"] = []
        return out

    from hcg_core.store import read_spec_file

    spec = read_spec_file(spec_file)
    spec = type(spec)(**{**spec.__dict__, "relations": ()})
    with pytest.raises(IncompleteBuildError, match="0 metric templates") as info:
        build_graph(
            load_chunks(), embedder=HashingEmbedder(), llm=ScriptedLLM(nothing_causal), spec=spec
        )
    assert info.value.result is not None and info.value.report["partial"] is True
    partial = build_graph(
        load_chunks(),
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(nothing_causal),
        spec=spec,
        allow_partial=True,
    )
    assert partial.report["problems"] and not partial.graph.edges
