"""What a new user meets in the first hour: messages that say what happened and what to do.

Each test here fails on the code before the fix it names (docs/ record the frictions found).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hcg_core.cli
from hcg_core.cli import main
from hcg_core.store import load_graph

# A lake-ecology paragraph whose causal sentence is longer than hcg query prints of a mechanism.
LAKE = """# Internal loading

Decades of external inputs leave a large store of phosphorus in the sediment. When the bottom
water loses its oxygen, iron compounds in the sediment dissolve and release the phosphorus they
held.

Hypoxia therefore feeds back on itself: more phosphorus leads to more algae, more dead algae
sinking leads to more oxygen consumption, and lower oxygen leads to more phosphorus release.
"""


# How much of a mechanism ``hcg query`` prints (160 before the constant was named).
MECHANISM_CHARS_SHOWN = getattr(hcg_core.cli, "MECHANISM_CHARS_SHOWN", 160)

# Two variables, each stated by two sentences with a strong cue: nothing for the drop rules.
STRONG = """# Stroke

Smoking causes atherosclerosis. Atherosclerosis causes stroke.

In smokers, smoking causes atherosclerosis early. Atherosclerosis of the neck arteries causes stroke.
"""


@pytest.fixture
def lake_graph(tmp_path: Path) -> Path:
    corpus = tmp_path / "lake"
    corpus.mkdir()
    (corpus / "internal-loading.md").write_text(LAKE, encoding="utf-8")
    out = tmp_path / "lake_graph"
    assert main(["build", str(corpus), "--out", str(out), "--embedder", "hashing", "--quiet"]) == 0
    return out


def test_query_marks_a_cut_mechanism(lake_graph, capsys):
    edges = load_graph(lake_graph).graph.edges
    long = [e for e in edges if len(e.mechanism) > MECHANISM_CHARS_SHOWN]
    assert long, [e.mechanism for e in edges]
    capsys.readouterr()
    assert main(["query", str(lake_graph), "What does low oxygen do to phosphorus?"]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = [ln.strip() for ln in lines if ln.strip().startswith(f"{long[0].id}: ")]
    assert shown, lines
    # Cut, and saying so: the printed mechanism ends with "..." right after its first characters.
    assert shown[0] == f"{long[0].id}: {long[0].mechanism[:MECHANISM_CHARS_SHOWN]}..."
    short = [e for e in edges if len(e.mechanism) <= MECHANISM_CHARS_SHOWN]
    for e in short:  # a whole mechanism is printed as it is
        assert all(
            not ln.strip().startswith(f"{e.id}: ") or ln.strip().endswith(e.mechanism)
            for ln in lines
        )


def test_apply_refuses_a_key_its_operation_does_not_read(lake_graph, tmp_path, capsys):
    """An `effect` on edit_edge (no correction changes a sign) or a typo was dropped unseen."""
    edge = load_graph(lake_graph).graph.edges[0]
    corrections = tmp_path / "corrections.yaml"
    corrections.write_text(
        "corrections:\n"
        f"  - {{op: edit_edge, edge: {edge.id}, effect: decreases, confidence: 0.8}}\n"
        f"  - {{op: edit_edge, edge: {edge.id}, confidance: 0.9}}\n"
        f"  - {{op: edit_edge, edge: {edge.id}, source: '{edge.source}', confidence: 0.7}}\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    out = tmp_path / "v2"
    assert main(["apply", str(lake_graph), str(corrections), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "applied 1, refused 2" in text, text
    assert "refused #1 edit_edge: edit_edge does not read 'effect'" in text, text
    assert "refused #2 edit_edge: edit_edge does not read 'confidance'" in text, text
    (after,) = [e for e in load_graph(out).graph.edges if e.id == edge.id]
    assert after.confidence == 0.7 and after.effect == edge.effect  # only #3 applied


def test_a_skipped_empty_document_is_named(caplog):
    """'1 document(s) without text skipped' left the user to hunt for the empty file."""
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from hcg_core.embedders import HashingEmbedder
    from langchain_hcg import HCGRetriever
    from llama_index_hcg import HCGIndex

    emb = HashingEmbedder()
    with caplog.at_level("WARNING"):
        HCGIndex.from_documents(
            [
                LIDocument(text=LAKE),
                LIDocument(text=" ", metadata={"file_path": "/data/notes/empty-notes.md"}),
            ],
            embed_model=emb,
        )
    assert "1 document(s) without text skipped: '/data/notes/empty-notes.md'" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        HCGRetriever.from_documents(
            [LCDocument(page_content=LAKE)]
            + [LCDocument(page_content="", id=f"empty-{n}.md") for n in range(5)],
            embeddings=emb,
        )
    skipped = "5 document(s) without text skipped: 'empty-0.md', 'empty-1.md', 'empty-2.md'"
    assert f"{skipped} and 2 more" in caplog.text, caplog.text


def test_build_says_which_variables_its_drop_rules_took(tmp_path, capsys):
    """A thin offline graph showed only its counts; the build now says what was dropped and why."""
    corpus = tmp_path / "lake"
    corpus.mkdir()
    (corpus / "internal-loading.md").write_text(LAKE, encoding="utf-8")
    (corpus / "clarity.md").write_text(
        "Storm runoff affects the clarity of the bay for several days.\n", encoding="utf-8"
    )
    out = tmp_path / "g"
    capsys.readouterr()
    assert main(["build", str(corpus), "--out", str(out), "--embedder", "hashing"]) == 0
    err = capsys.readouterr().err
    stage = load_graph(out).report["stages"]["graph"]
    weak = stage["weak_single_sentence_variables_dropped"]
    assert weak >= 1, stage  # "affects" is a weak cue, stated once
    assert f"dropped variables, with their edges: {weak:,} stated by one sentence" in err, err
    assert "docs/offline-builder.md" in err
    # --quiet keeps it quiet, and a build that drops nothing says nothing of it.
    assert main(["build", str(corpus), "--out", str(out), "--embedder", "hashing", "--quiet"]) == 0
    assert "dropped variables" not in capsys.readouterr().err
    for f in corpus.iterdir():
        f.unlink()
    (corpus / "stroke.md").write_text(STRONG, encoding="utf-8")
    assert main(["build", str(corpus), "--out", str(out), "--embedder", "hashing"]) == 0
    err = capsys.readouterr().err
    assert load_graph(out).report["stages"]["graph"]["weak_single_sentence_variables_dropped"] == 0
    assert "dropped variables" not in err, err


def test_relink_says_its_chunk_cap_is_on_search_links(lake_graph, capsys):
    """'max edges per chunk 3' above 'per chunk at most 1 edges' read as a broken cap."""
    capsys.readouterr()
    assert main(["relink", str(lake_graph), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("max edges per chunk") for line in lines), lines
    (cap,) = [line for line in lines if line.startswith("per edge at most")]
    assert " edges by search (sentence, chunk; " in cap, cap


@pytest.mark.parametrize("command", ["query", "inspect", "eval"])
def test_a_corpus_folder_given_for_a_graph_says_to_build(tmp_path, capsys, command):
    """'lake/manifest.json: missing' did not say that lake is the corpus, not a graph."""
    corpus = tmp_path / "lake" / "nutrients"
    corpus.mkdir(parents=True)
    (corpus / "internal-loading.md").write_text(LAKE, encoding="utf-8")
    qa = tmp_path / "qa.json"
    qa.write_text('[{"question": "Why?", "answer": "oxygen"}]', encoding="utf-8")
    lake = tmp_path / "lake"
    args = {
        "query": ["query", str(lake), "Why?"],
        "inspect": ["inspect", str(lake)],
        "eval": ["eval", str(lake), "--questions", str(qa)],
    }[command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "manifest.json: missing" in err, err
    assert f"{lake} holds documents, not a graph: build one from it first" in err, err
    assert f"(hcg build {lake} --out GRAPH_DIR)" in err, err
    # An empty folder, or a damaged graph (its graph files there), gets no such hint.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["inspect", str(empty)]) == 2
    assert "holds documents" not in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "graph.json").write_text("{}", encoding="utf-8")
    (damaged / "chunks.jsonl").write_text("", encoding="utf-8")
    assert main(["inspect", str(damaged)]) == 2
    assert "holds documents" not in capsys.readouterr().err


def test_eval_says_each_system_done_on_a_terminal(lake_graph, tmp_path, capsys, monkeypatch):
    """hcg eval ran silent until its table, however many questions; a terminal now sees it go."""
    import sys

    qa = tmp_path / "qa.json"
    qa.write_text(
        '[{"question": "What does low oxygen release?", "answer": "phosphorus"},'
        ' {"question": "What feeds back on itself?", "answer": "hypoxia"}]',
        encoding="utf-8",
    )
    argv = ["eval", str(lake_graph), "--questions", str(qa), "--budget", "20", "--json"]
    capsys.readouterr()
    assert main([*argv, "--modes", "hybrid,paper", "--no-baselines"]) == 0
    assert "questions done" not in capsys.readouterr().err  # a pipe: no progress
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*argv, "--modes", "hybrid,paper", "--no-baselines"]) == 0
    err = capsys.readouterr().err.splitlines()
    done = [line for line in err if line.endswith("questions done")]
    assert done == [
        "hcg eval: hcg hybrid: 2 questions done",
        "hcg eval: hcg paper: 2 questions done",
    ]
