"""Smoke test of benchmarks/dev_suite.py's door plumbing on the example corpus alone: every
door builds, is cached, answers, and is scored against its same-node baselines with intervals."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "corpus"


def _suite():
    spec = importlib.util.spec_from_file_location("dev_suite", ROOT / "benchmarks" / "dev_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_doors_run_and_builds_are_cached(tmp_path, capsys) -> None:
    suite = _suite()
    questions = tmp_path / "qa.json"
    questions.write_text(
        json.dumps(
            [
                {
                    "question": "Why does smoking raise the risk of stroke?",
                    "answer": "inflammation of the arteries",
                    "context": "Smoking causes inflammation of the arteries.",
                },
                {
                    "question": "What does high blood sugar do to the kidneys?",
                    "answer": "kidney damage",
                    "context": "High blood sugar damages the kidneys.",
                },
            ]
        )
    )
    work = tmp_path / "work"
    argv = ["--work", str(work), "--set", f"toy={CORPUS}:{questions}"]
    assert suite.main([*argv, "--doors", "cli,li-default,lc-presplit"]) == 0
    res = json.loads((work / "results.json").read_text())["sets"]["toy"]
    assert set(res["doors"]) == {"cli", "li-default", "lc-presplit"}
    # The LlamaIndex door on default Settings indexes hcg's chunks: the CLI door's, one for one.
    assert res["nodes"]["li-default"] == res["nodes"]["cli"]
    for door, row in res["doors"].items():
        assert res["builds"][door] > 0
        for key in row.values():
            scores = res["scores"][key]
            assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
        margins = res["margins"][door]
        assert {"best BM25 anchor", "vector 200/40", "graph on - off"} <= set(margins)
        for m in margins.values():
            assert m["lo"] <= m["hi"]
    assert "hcg paper" in res["doors"]["cli"]
    assert "| LangChain pre-split" in (work / "results.md").read_text()
    # A rerun reuses the persisted builds (their recorded times, not new ones).
    stamps = {d: (work / "toy" / d / "build.json").stat().st_mtime_ns for d in res["doors"]}
    assert suite.main([*argv, "--doors", "cli,li-default,lc-presplit", "--limit", "1"]) == 0
    again = json.loads((work / "results.json").read_text())["sets"]["toy"]
    assert again["builds"] == res["builds"]
    assert {d: (work / "toy" / d / "build.json").stat().st_mtime_ns for d in res["doors"]} == stamps
    assert again["questions"] == 1


def test_rounds_time_fresh_builds_in_rotating_order(tmp_path, capsys) -> None:
    suite = _suite()
    questions = tmp_path / "qa.json"
    questions.write_text(json.dumps([{"question": "Why?", "answer": "because"}]))
    work = tmp_path / "work"
    argv = [
        "--work",
        str(work),
        "--set",
        f"toy={CORPUS}:{questions}",
        "--embedder",
        "hashing-v1-256",
    ]
    assert suite.main([*argv, "--doors", "cli,lc-presplit", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0]: line for line in out.splitlines() if line.startswith("| ")}
    assert "| cli" in rows and "| lc-presplit" in rows
    assert rows["| cli"].endswith("| 1.00x |")
    assert len(rows["| lc-presplit"].split(" | ")[1].split(", ")) == 2  # one time per round
    assert not (work / "toy").exists()  # timed builds go to fresh folders, none cached
    with pytest.raises(SystemExit):  # a negative count is refused, not read as "off"
        suite.main([*argv, "--rounds", "-1"])


def test_paired_interval_brackets_the_mean_difference() -> None:
    suite = _suite()
    a = [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    b = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    lo, hi = suite.paired_interval(a, b)
    assert lo <= 100 * (sum(a) - sum(b)) / len(a) <= hi
    assert suite.paired_interval(a, a) == (0.0, 0.0)


def test_cached_embedder_embeds_each_text_once(tmp_path) -> None:
    from hcg_core.embedders import HashingEmbedder

    suite = _suite()
    calls: list[int] = []
    inner = HashingEmbedder(32)

    class Counting:
        name, dim = inner.name, inner.dim

        def embed_documents(self, texts):
            calls.append(len(texts))
            return inner.embed_documents(texts)

        def embed_query(self, text):
            calls.append(-1)
            return inner.embed_query(text)

    cache = suite.CachedEmbedder(Counting(), tmp_path / "cache")
    first = cache.embed_documents(["a b", "c d", "a b"])
    assert calls == [2]
    assert (cache.embed_documents(["c d"])[0] == first[1]).all()
    cache.embed_query("q")
    cache.embed_query("q")
    assert calls == [2, -1]
    cache.save()
    reloaded = suite.CachedEmbedder(Counting(), tmp_path / "cache")
    assert (reloaded.embed_documents(["a b"])[0] == first[0]).all()
    assert calls == [2, -1]
