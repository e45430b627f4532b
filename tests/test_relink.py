"""``hcg relink DIR``: re-link a graph directory's edges with no LLM and no edge removed, published
like any save; ``--dry-run`` writes nothing; format 1 and 2, an empty graph, a read-only folder
(clear error, files unchanged), a kill at any step (the old version stays readable); and the
adapters' relinking (``HCGIndex.relink()``, ``hcg relink`` on a LangChain persist dir).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hcg_core import safe_files
from hcg_core.cli import main
from hcg_core.graph_build.evidence import link_evidence
from hcg_core.store import current_dir, load_graph, save_graph
from hcg_core.types import CausalGraph

REPO = Path(__file__).resolve().parent.parent
V1 = REPO / "tests" / "fixtures" / "v1_hand_graph"


def digest_tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".hcg-lock"
    }


@pytest.fixture
def graph_dir(tmp_path, graph) -> Path:
    """The fixture graph (format 2), its evidence scrambled: every edge cites the weather chunk."""
    bad = tuple(e.__class__(**{**e.__dict__, "evidence": ("c5",)}) for e in graph.edges)
    save_graph(CausalGraph(graph.spec, graph.variables, bad, graph.chunks), tmp_path / "g")
    return tmp_path / "g"


def test_dry_run_prints_before_and_after_and_writes_nothing(graph_dir, capsys):
    before = digest_tree(graph_dir)
    assert main(["relink", str(graph_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: nothing was written" in out and "max edges per chunk" in out
    assert digest_tree(graph_dir) == before
    assert main(["relink", str(graph_dir), "--dry-run", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["before"]["chunks_cited"] == 1 and figures["before"]["max_edges_per_chunk"] == 6
    assert figures["after"]["chunks_cited"] > 1 and not figures["written"]
    assert digest_tree(graph_dir) == before


def test_relink_publishes_a_new_version_with_every_edge(graph_dir, graph, capsys):
    old = load_graph(graph_dir).graph
    assert main(["relink", str(graph_dir)]) == 0
    assert "written as a new version" in capsys.readouterr().out
    assert current_dir(graph_dir).name == "2"
    new = load_graph(graph_dir)
    assert [e.id for e in new.graph.edges] == [e.id for e in old.edges]
    assert [(e.source, e.target, e.mechanism) for e in new.graph.edges] == [
        (e.source, e.target, e.mechanism) for e in old.edges
    ]
    # The evidence is the linker's on the stored graph; the weather chunk states nothing.
    want = link_evidence(old.edges, old.variables, old.chunks)
    assert [e.evidence for e in new.graph.edges] == [e.evidence for e in want]
    assert all("c5" not in e.evidence for e in new.graph.edges)
    by_id = {e.id: e.evidence for e in new.graph.edges}
    assert by_id["e_s_il"] == ("c0",)  # "smoking inflames vessels and lungs"
    assert new.report["evidence"]["links"] == new.graph.evidence_links
    # A second relink finds the same evidence.
    assert main(["relink", str(graph_dir), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["before"] == again["after"]


def test_a_format_1_directory_is_relinked_into_a_version(tmp_path, capsys):
    v1 = shutil.copytree(V1, tmp_path / "v1")
    assert json.loads((v1 / "manifest.json").read_text())["format_version"] == 1
    old = load_graph(v1).graph
    assert main(["relink", str(v1)]) == 0
    pointer = json.loads((v1 / "manifest.json").read_text())
    assert pointer["format_version"] == 2 and pointer["current"] == "versions/1"
    new = load_graph(v1).graph
    assert [e.id for e in new.edges] == [e.id for e in old.edges] and len(new.edges) == 7


def test_an_empty_graph_relinks_to_itself(tmp_path, graph, capsys):
    empty = CausalGraph(graph.spec, graph.variables, (), graph.chunks)
    save_graph(empty, tmp_path / "e")
    assert main(["relink", str(tmp_path / "e"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["after"]["edges"] == 0 and figures["linking"]["links"] == 0
    assert load_graph(tmp_path / "e").graph.edges == ()


def test_not_a_graph_directory_is_refused(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main(["relink", str(tmp_path / "x")]) == 2
    assert "hcg relink: error" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_directory_is_a_clear_error_and_nothing_changes(graph_dir, capsys):
    before = digest_tree(graph_dir)
    modes = {p: p.stat().st_mode for p in [graph_dir, *graph_dir.rglob("*")]}
    try:
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        assert main(["relink", str(graph_dir)]) == 2
        assert "cannot write" in capsys.readouterr().err
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert digest_tree(graph_dir) == before


def test_a_read_only_file_system_is_a_clear_error_and_nothing_changes(graph_dir, capsys):
    """As root (CI containers) a chmod does not stop writes: the disk refusing them is simulated
    at the first write, as a read-only mount answers (EROFS)."""
    before = digest_tree(graph_dir)

    def refuse(step, path):  # noqa: ANN001, ANN202
        raise OSError(30, "Read-only file system", str(path))

    safe_files._fault_hook = refuse
    try:
        assert main(["relink", str(graph_dir)]) == 2
    finally:
        safe_files._fault_hook = None
    err = capsys.readouterr().err
    assert "Read-only file system" in err and "unchanged" in err
    assert digest_tree(graph_dir) == before
    assert main(["relink", str(graph_dir), "--dry-run"]) == 0  # still reads


KILLER = textwrap.dedent(
    """
    import os, sys
    from hcg_core import safe_files
    from hcg_core.cli import main
    at, seen = int(sys.argv[2]), [0]
    def hook(step, path):
        if seen[0] == at:
            os._exit(137)  # killed: no cleanup runs
        seen[0] += 1
    safe_files._fault_hook = hook
    sys.exit(main(["relink", sys.argv[1]]))
    """
)


@pytest.mark.integration
def test_a_relink_killed_at_any_step_leaves_a_readable_graph(graph_dir, tmp_path):
    old = load_graph(graph_dir).graph
    code = tmp_path / "killer.py"
    code.write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    step, finished = 0, False
    while not finished:
        run = subprocess.run(
            [sys.executable, str(code), str(graph_dir), str(step)], env=env, capture_output=True
        )
        finished = run.returncode == 0
        assert finished or run.returncode == 137, run.stderr.decode()
        stored = load_graph(graph_dir)  # whatever step it died at, a whole graph loads
        assert [e.id for e in stored.graph.edges] == [e.id for e in old.edges]
        evidence = {e.evidence for e in stored.graph.edges}
        assert evidence == {("c5",)} or ("c5",) not in evidence  # the old one or the new one
        step += 1
    assert step > 3  # the kill was tried at several writes before one run got through


def test_llamaindex_index_relinks_its_own_store(tmp_path):
    from llama_index.core import Document, StorageContext, load_index_from_storage
    from llama_index.core.node_parser import SentenceSplitter

    from hcg_core.embedders import HashingEmbedder
    from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

    embed = HCGDefaultEmbedding(embedder=HashingEmbedder(256))
    docs = [
        Document(text="Salt raises blood pressure. High blood pressure causes stroke.", id_="a"),
        Document(text="Smoking damages the arteries. Damaged arteries cause stroke.", id_="b"),
    ]
    index = HCGIndex.from_documents(
        docs, embed_model=embed, transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=8)]
    )
    assert index.graph.edges
    core = index.core_retriever
    scrambled = tuple(e.__class__(**{**e.__dict__, "evidence": ()}) for e in index.graph.edges)
    core.graph = CausalGraph(core.graph.spec, core.graph.variables, scrambled, core.graph.chunks)
    index._sync()
    report = index.relink()
    assert report.graph_mode == "relink" and report.edges_updated
    assert all(e.evidence for e in index.graph.edges)
    index.storage_context.persist(persist_dir=tmp_path)
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path), embed_model=embed
    )
    assert [e.evidence for e in loaded.graph.edges] == [e.evidence for e in index.graph.edges]


def test_langchain_persist_dir_is_relinked_by_hcg_relink(tmp_path, capsys):
    from langchain_core.documents import Document

    from hcg_core.embedders import HashingEmbedder
    from langchain_hcg import HCGRetriever

    docs = [
        Document(page_content="Salt raises blood pressure. High blood pressure causes stroke."),
        Document(page_content="Smoking damages the arteries. Damaged arteries cause stroke."),
    ]
    retriever = HCGRetriever.from_documents(docs, embeddings=HashingEmbedder(256))
    retriever.save(tmp_path / "lc")
    assert main(["relink", str(tmp_path / "lc")]) == 0
    again = HCGRetriever.from_persist_dir(tmp_path / "lc", embeddings=HashingEmbedder(256))
    assert [e.id for e in again.graph.edges] == [e.id for e in retriever.graph.edges]
    assert again.invoke("What causes stroke?")
