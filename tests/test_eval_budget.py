"""`hcg eval` says when its budget reads (most of) the corpus, and shows defaults in --help
(issue 27, item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hcg_core.cli import main
from hcg_core.eval.cli import BUDGET_SHARE_WARNING, budget_warning

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
CORPUS_WORDS = sum(len(p.read_text(encoding="utf-8").split()) for p in CORPUS.glob("*.md"))


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("g") / "g"
    args = ["build", str(CORPUS), "--out", str(out), "--embedder", "hashing", "--quiet"]
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("q") / "qa.json"
    qa = [{"question": "What causes a stroke?", "answer": "a clot blocks a brain artery"}]
    path.write_text(json.dumps(qa), encoding="utf-8")
    return path


def run(graph, questions, capsys, *extra):
    argv = ["eval", str(graph), "--questions", str(questions), "--no-baselines", "--json"]
    assert main([*argv, "--modes", "hybrid", *extra]) == 0
    out = capsys.readouterr()
    return out.err, json.loads(out.out)


def test_the_default_budget_on_a_small_corpus_is_warned(graph, questions, capsys):
    assert CORPUS_WORDS < 2000  # the example corpus: 938 words
    err, report = run(graph, questions, capsys)
    assert f"at least the corpus size ({CORPUS_WORDS:,} words)" in err
    assert err.startswith("hcg eval: warning: --budget 2,000 words")
    assert report["meta"]["corpus_words"] == CORPUS_WORDS
    assert report["meta"]["warnings"] == [budget_warning(2000, CORPUS_WORDS)]


def test_half_the_corpus_is_warned_more_softly_and_a_small_budget_not(graph, questions, capsys):
    half = int(BUDGET_SHARE_WARNING * CORPUS_WORDS) + 1
    err, _ = run(graph, questions, capsys, "--budget", str(half))
    assert f"is {half / CORPUS_WORDS:.0%} of the corpus" in err
    err, report = run(graph, questions, capsys, "--budget", str(half - 2))
    assert err == "" and "warnings" not in report["meta"]


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for shown in (
        "(default 2000)",
        "(default hybrid,paper,hybrid-nograph)",
        "(default 1200)",
        "(default 200)",
        "(default 5)",
        "(default: all)",
        "(default: as many as fill the word budget)",
    ):
        assert shown in text, shown
