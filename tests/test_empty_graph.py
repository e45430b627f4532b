"""A corpus without causal wording builds an empty graph and is searchable (issue 24, item 5).

The office FAQ below states facts and rules, never a cause: the offline builder finds no causal
statement in it. Every door (``hcg build``, LlamaIndex ``HCGIndex.from_documents``, LangChain
``HCGRetriever.from_documents``) must still build, say that the graph is empty, and answer
factual questions from the text signals; every command must handle the empty graph.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hcg_core.cli import main
from hcg_core.corpus import chunk_documents
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import BuildError
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.offline import EMPTY_GRAPH_NOTE
from hcg_core.graph_build.statements import collect_statements
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.types import SourceDocument

# Eight short office-FAQ pages with no causal cue (checked by the first test, so an edit that
# slips one in fails there rather than silently testing a non-empty graph).
FAQ = {
    "holiday": "Paid holiday. Each employee has 27 days of paid holiday per calendar year. "
    "Unused days may be carried over until the end of March. Requests go to the line manager "
    "two weeks ahead.",
    "parking": "Parking. The staff car park is on level minus two. A monthly parking permit "
    "costs 40 euros. Bicycle racks stand beside the north entrance.",
    "expenses": "Travel expenses. Receipts are submitted through the finance portal. Travel "
    "expenses are reimbursed within 30 days. Economy class is the standard for short flights.",
    "canteen": "Canteen. The canteen on the ground floor opens at noon and closes at three. "
    "A set lunch costs five euros. Vegetarian dishes are served every day.",
    "laptops": "Laptops. New staff receive a laptop on their first morning. The IT desk on the "
    "fourth floor handles repairs. Passwords expire every ninety days.",
    "remote": "Remote work. Staff may work from home two days a week. Core hours run from ten "
    "to four. The team calendar shows who is in the office.",
    "payroll": "Payroll. Salaries are paid on the twenty-fifth of each month. Payslips appear "
    "in the HR portal. Questions about tax codes go to the payroll team.",
    "security": "Building security. Visitors sign in at the reception desk. Badges must be "
    "worn at all times. The building closes at nine in the evening.",
}
# Three factual questions, each answered by one page (its words, not a cause).
QUESTIONS = [
    ("How many days of paid holiday does each employee have?", "holiday"),
    ("How much does a monthly parking permit cost?", "parking"),
    ("When are salaries paid each month?", "payroll"),
]


def faq_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "faq"
    folder.mkdir()
    for name, text in FAQ.items():
        (folder / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def hcg(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def built(tmp_path: Path, capsys) -> Path:
    out = tmp_path / "g"
    rc, _, _ = hcg(
        capsys, "build", str(faq_dir(tmp_path)), "--out", str(out), "--embedder", "hashing"
    )
    assert rc == 0
    return out


def test_the_faq_has_no_causal_statement():
    corpus = collect_statements(chunk_documents([SourceDocument(k, v) for k, v in FAQ.items()]))
    assert len(corpus.sentences) >= 3 * len(FAQ)
    assert corpus.statements == []


def test_library_build_gives_an_empty_graph_with_chunk_vectors(caplog):
    chunks = chunk_documents([SourceDocument(k, v) for k, v in FAQ.items()])
    with caplog.at_level(logging.WARNING, logger="hcg_core"):
        r = build_graph(chunks, embedder=HashingEmbedder(dim=256))
    g = r.graph
    assert (len(g.spec.metrics), len(g.variables), len(g.edges)) == (0, 0, 0)
    assert len(g.chunks) == len(chunks)
    assert r.chunk_embeddings.shape == (len(chunks), 256)
    assert r.variable_embeddings.shape == (0, 256)
    assert any(w.startswith(EMPTY_GRAPH_NOTE) for w in r.report["warnings"])
    assert any(EMPTY_GRAPH_NOTE in rec.getMessage() for rec in caplog.records)


def test_no_text_at_all_stays_an_error(tmp_path: Path, capsys):
    with pytest.raises(BuildError, match="empty"):
        build_graph([], embedder=HashingEmbedder(dim=64))
    folder = tmp_path / "blank"
    folder.mkdir()
    (folder / "a.txt").write_text("  \n\n", encoding="utf-8")
    rc, out, err = hcg(
        capsys, "build", str(folder), "--out", str(tmp_path / "g"), "--embedder", "hashing"
    )
    assert rc != 0 and not out
    assert "error" in err and "empty" in err
    assert not (tmp_path / "g" / "graph.json").exists()


def test_cli_build_says_so_even_quiet_and_exits_0(tmp_path: Path, capsys):
    out = tmp_path / "g"
    args = ["build", str(faq_dir(tmp_path)), "--out", str(out), "--embedder", "hashing"]
    rc, stdout, err = hcg(capsys, *args, "--quiet")
    assert rc == 0
    assert stdout.startswith(f"built {out}: 0 variables, 0 edges, 0 metrics, 8 chunks")
    lines = err.splitlines()
    assert len(lines) == 1, lines  # the one thing --quiet lets through
    line = lines[0]
    assert line.startswith("warning: " + EMPTY_GRAPH_NOTE)
    for words in ("no causal statements were found", "retrieval uses text only"):
        assert words in line


@pytest.mark.parametrize("mode", ["hybrid", "paper"])
def test_cli_query_answers_from_text(built: Path, capsys, mode: str):
    for question, doc in QUESTIONS:
        rc, out, _ = hcg(
            capsys, "query", str(built), question, "--json", "--k", "3", "--mode", mode
        )
        assert rc == 0
        res = json.loads(out)
        assert res["chunks"][0]["doc_id"] == f"{doc}.txt", (question, res["chunks"][0])
        assert all(not c["paths"] for c in res["chunks"])
    rc, out, _ = hcg(capsys, "query", str(built), QUESTIONS[0][0], "--k", "1", "--mode", mode)
    assert rc == 0 and "27 days" in out


def test_cli_query_json_with_one_result_is_strict_json(built: Path, capsys):
    # One candidate made a diagnostic ratio infinite; --json must still print (as null).
    rc, out, err = hcg(capsys, "query", str(built), "parking permit", "--json", "--k", "1")
    assert rc == 0, err
    assert len(json.loads(out)["chunks"]) == 1


def test_cli_no_graph_ablation_equals_default(built: Path, capsys):
    q = QUESTIONS[1][0]
    on = json.loads(hcg(capsys, "query", str(built), q, "--json")[1])
    off = json.loads(hcg(capsys, "query", str(built), q, "--json", "--no-graph")[1])
    assert [c["id"] for c in on["chunks"]] == [c["id"] for c in off["chunks"]]


def test_cli_inspect(built: Path, capsys):
    rc, out, _ = hcg(capsys, "inspect", str(built))
    assert rc == 0
    assert "metric roles    none" in out and "retrieval uses text only" in out
    rc, out, _ = hcg(capsys, "inspect", str(built), "--json")
    s = json.loads(out)
    assert s["counts"]["edges"] == 0 and s["counts"]["chunks"] == 8
    assert s["health"]["edges"] == 0


def test_cli_view_and_every_export(built: Path, tmp_path: Path, capsys):
    rc, _, _ = hcg(capsys, "view", str(built), "--out", str(tmp_path / "v.html"))
    assert rc == 0 and "<html" in (tmp_path / "v.html").read_text(encoding="utf-8").lower()
    for fmt in ("graphml", "gexf", "mermaid", "cypher", "csv"):
        target = tmp_path / f"x.{fmt}"
        rc, _, err = hcg(capsys, "export", str(built), "--format", fmt, "--out", str(target))
        assert rc == 0, (fmt, err)
        assert target.exists(), fmt


def test_cli_diff_apply_eval(built: Path, tmp_path: Path, capsys):
    rc, out, _ = hcg(capsys, "diff", str(built), str(built))
    assert rc == 0 and "no differences" in out
    corrections = tmp_path / "c.yaml"
    corrections.write_text(
        "format: hcg-corrections\nversion: 1\ncorrections:\n"
        "  - {op: reject_edge, edge: 'A->B', source: A, target: B}\n"
        "  - {op: delete_variable, variable: Holiday}\n",
        encoding="utf-8",
    )
    rc, out, _ = hcg(capsys, "apply", str(built), str(corrections), "--out", str(tmp_path / "g2"))
    assert rc == 0 and "applied 0, refused 2" in out
    assert CausalGraphRetriever.load(tmp_path / "g2").graph.chunks
    questions = tmp_path / "q.json"
    questions.write_text(
        json.dumps([{"question": q, "answer": FAQ[d].split(". ")[1]} for q, d in QUESTIONS]),
        encoding="utf-8",
    )
    rc, out, _ = hcg(
        capsys,
        "eval",
        str(built),
        "--questions",
        str(questions),
        "--modes",
        "hybrid,paper,hybrid-nograph",
        "--budget",
        "40",
        "--json",
    )
    assert rc == 0
    rows = {r["system"]: r for r in json.loads(out)["rows"] if r["group"] == "all"}
    for system in ("hcg hybrid", "hcg paper", "hcg hybrid-nograph"):
        # 40 words hold one FAQ page: each answer must be in the first page returned.
        assert rows[system]["recall"] == 1.0, (system, rows[system])
        assert rows[system]["graph_query_share"] == 0.0


def test_cli_add_says_a_rebuild_is_needed_and_remove_works(built: Path, tmp_path: Path, capsys):
    new = tmp_path / "new"
    new.mkdir()
    (new / "smoking.txt").write_text(
        "Smoking causes lung cancer. Lung cancer causes death.\n", encoding="utf-8"
    )
    (new / "lockers.txt").write_text("Lockers are on the second floor.\n", encoding="utf-8")
    rc, out, err = hcg(capsys, "add", str(built), str(new / "smoking.txt"))
    assert rc == 0 and out.startswith("+1/-0 chunks; edges +0")
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "rebuild" in warnings[0] and "no metric" in warnings[0] and "2 causal" in warnings[0]
    # New text without causal wording: nothing to warn about.
    rc, _, err = hcg(capsys, "add", str(built), str(new / "lockers.txt"))
    assert rc == 0 and "warning" not in err
    rc, out, _ = hcg(capsys, "query", str(built), "Where are the lockers?", "--json", "--k", "1")
    assert json.loads(out)["chunks"][0]["doc_id"] == "lockers.txt"
    rc, out, _ = hcg(capsys, "remove", str(built), "lockers.txt", "holiday.txt")
    assert rc == 0 and out.startswith("+0/-2 chunks")
    left = {c.doc_id for c in CausalGraphRetriever.load(built).graph.chunks}
    assert "holiday.txt" not in left and "payroll.txt" in left


def test_library_insert_into_empty_graph_notes_the_rebuild():
    chunks = chunk_documents([SourceDocument(k, v) for k, v in FAQ.items()])
    r = build_graph(chunks, embedder=HashingEmbedder(dim=256))
    retriever = CausalGraphRetriever.from_build(r, embedder=HashingEmbedder(dim=256))
    report = retriever.insert([SourceDocument("smoke", "Smoking causes stroke.")])
    assert report.chunks_added == 1 and not retriever.graph.edges
    assert any("need a rebuild" in n for n in report.notes)
    top = retriever.retrieve("smoking stroke", k=1).chunks[0]
    assert top.chunk.doc_id == "smoke"


# ------------------------------------------------------------------------ adapters


def test_llamaindex_door():
    from llama_index.core import Document as LlamaDocument

    from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

    embed = HCGDefaultEmbedding(embedder=HashingEmbedder(1024))
    docs = [LlamaDocument(text=t, id_=k) for k, t in FAQ.items()]
    index = HCGIndex.from_documents(docs, embed_model=embed)
    assert not index.core_retriever.graph.edges
    retriever = index.as_retriever(similarity_top_k=3)
    for question, doc in QUESTIONS:
        nodes = retriever.retrieve(question)
        assert nodes[0].node.ref_doc_id == doc, (question, nodes[0].node.ref_doc_id)
    index.insert(LlamaDocument(text="Lockers are on the second floor.", id_="lockers"))
    assert retriever.retrieve("Where are the lockers?")[0].node.ref_doc_id == "lockers"


def test_langchain_door():
    from langchain_core.documents import Document as LangchainDocument

    from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

    emb = HCGDefaultEmbeddings(embedder=HashingEmbedder(1024))
    docs = [LangchainDocument(page_content=t, id=k, metadata={"source": k}) for k, t in FAQ.items()]
    retriever = HCGRetriever.from_documents(docs, embeddings=emb, k=3)
    assert not retriever.graph.edges
    for question, doc in QUESTIONS:
        got = retriever.invoke(question)
        assert got[0].metadata["source"] == doc, (question, got[0].metadata)
    retriever.add_documents(
        [
            LangchainDocument(
                page_content="Lockers are on the second floor.", metadata={"source": "x"}
            )
        ]
    )
    assert retriever.invoke("Where are the lockers?")[0].metadata["source"] == "x"
