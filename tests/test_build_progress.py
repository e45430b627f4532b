"""`hcg build` shows progress from its first line (issue 27, item 6): reading, chunking, each
builder stage, bars where the count is known (on a terminal); `--quiet` hides progress only."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import hcg_core.corpus
from hcg_core.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
STAGES = [
    "reading ",
    "chunking 4 documents",
    "read 4 documents",
    "causal statements: reading the sentences of 8 chunks",
    "vocabulary: ",
    "graph: variables, edges and dimensions from the vocabulary's ",
    # Metrics without an edge are not saved: the line says how many remain (hcg inspect's count).
    "graph: ",
    "evidence: linking ",
    "embedding ",  # variables
    "embedding 8 chunks",
    "dropped variables, with their edges: ",  # the offline drop rules took some (test_first_hour)
    "writing ",
]


def build(tmp_path: Path, *extra: str) -> int:
    args = ["build", str(CORPUS), "--out", str(tmp_path / "g"), "--embedder", "hashing"]
    return main([*args, *extra])


def test_every_stage_says_it_starts_in_order(tmp_path, capsys, monkeypatch):
    seen_before_reading = []
    real = hcg_core.corpus.load_inputs

    def load_inputs(*args, **kwargs):  # what was printed before the first file is read
        seen_before_reading.append(capsys.readouterr().err)
        return real(*args, **kwargs)

    monkeypatch.setattr(hcg_core.corpus, "load_inputs", load_inputs)
    assert build(tmp_path) == 0
    out = capsys.readouterr()
    assert seen_before_reading == [f"reading {CORPUS}\n"]
    lines = seen_before_reading[0].splitlines() + out.err.splitlines()
    assert len(lines) == len(STAGES)
    for line, start in zip(lines, STAGES, strict=True):
        assert line.startswith(start), (line, start)
    assert out.out.startswith("built ")
    # The count the build said it kept is the count the saved graph holds (hcg inspect's), and
    # the vocabulary's count is named as such, with the difference.
    (vocabulary,) = re.findall(r"from the vocabulary's (\d+) metrics", out.err)
    kept, left_out, of = map(
        int,
        re.search(r"graph: (\d+) metrics kept; (\d+) of the (\d+) carry no edge", out.err).groups(),
    )
    assert of == int(vocabulary) == kept + left_out and left_out > 0
    assert f", {kept} metrics, " in out.out
    assert main(["inspect", str(tmp_path / "g")]) == 0
    assert re.search(rf"^  metrics +{kept}$", capsys.readouterr().out, re.M)


def test_a_terminal_gets_bars_counting_chunks(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert build(tmp_path) == 0
    err = capsys.readouterr().err
    # Each bar knows its total: chunks read for sentences, sentences, spans, variables, chunks.
    for bar in ("sentences", "causal statements", "embedding spans", "embedding variables"):
        assert re.search(rf"{bar}: +\d+%\|[^|]*\| \d+/[1-9]\d*", err), bar
    assert re.search(r"embedding chunks: +\d+%\|[^|]*\| \d/8 .*chunk/s", err)


def test_quiet_hides_progress_only(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # not even bars on a terminal
    corpus = tmp_path / "in"
    corpus.mkdir()
    for p in CORPUS.glob("*.md"):
        (corpus / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    (corpus / "notes.pdf").write_bytes(b"%PDF")
    outcome = tmp_path / "outcome.yaml"
    outcome.write_text("outcomes: [NoSuchMetric]\n", encoding="utf-8")
    args = ["build", str(corpus), "--out", str(tmp_path / "g"), "--embedder", "hashing"]
    assert main([*args, "--quiet", "--outcome", str(outcome)]) == 0
    out = capsys.readouterr()
    err = out.err.splitlines()
    # What was left out and what went wrong still reach stderr; nothing else does.
    assert len(err) == 2, err
    assert err[0].startswith("skipped ") and "notes.pdf" in err[0]
    assert err[1].startswith("warning: outcome configuration names 'NoSuchMetric'")
    assert out.out.startswith("built ")
    # An error too.
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "a.txt").write_text(" \n", encoding="utf-8")
    args = ["build", str(tmp_path / "empty"), "--out", str(tmp_path / "g2"), "--quiet"]
    assert main([*args, "--embedder", "hashing"]) != 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("hcg build: error: no usable document"), err
    assert not any(line.startswith(tuple(STAGES)) for line in err), err
    # And the warning that a text without causal wording gives an empty graph.
    (tmp_path / "empty" / "a.txt").write_text("The sky is blue.\n", encoding="utf-8")
    assert main([*args, "--embedder", "hashing"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: the causal graph is empty"), err


@pytest.mark.parametrize("flag", ["--quiet"])
def test_help_says_what_quiet_hides(flag, capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "no progress (stage lines and bars); warnings and errors are still printed" in text
