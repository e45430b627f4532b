"""Hostile input through the doors users use, found by the hardening pass (H6).

Chunk metadata of the wrong type or size, from a user's documents or a hand-edited
``chunks.jsonl``: the offsets hcg reads from it (word and character spans, the chunk's number)
are ignored when they cannot be offsets, never a crash of the build or the query. File names
with line breaks; a graph's own files passed as corpus; counts below one."""

from __future__ import annotations

import json

import pytest

from hcg_core import cli
from hcg_core.store import current_dir, load_graph

HUGE = 10**30  # past int64: numpy raised OverflowError filling the span array


def _edit_first_chunk(directory, **meta):
    path = current_dir(directory) / "chunks.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["metadata"].update(meta)
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")


@pytest.fixture
def built_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Smoking causes inflammation. Inflammation raises blood pressure.\n")
    (docs / "b.md").write_text("High blood pressure causes stroke. A poor diet raises pressure.\n")
    assert cli.main(["build", "docs", "--out", "g", "--embedder", "hashing", "--quiet"]) == 0
    return tmp_path / "g"


@pytest.mark.parametrize(
    "meta",
    [
        {"index": "intro"},
        {"start_word": "x"},
        {"start_word": "", "end_word": ""},
        {"start_word": HUGE},
        {"end_word": HUGE},
        {"start_word": -HUGE, "end_word": HUGE},
        {"index": True, "start_word": False},
    ],
    ids=repr,
)
@pytest.mark.parametrize("as_json", [False, True])
def test_query_of_a_graph_with_odd_offsets_answers(built_dir, meta, as_json, capsys):
    _edit_first_chunk(built_dir, **meta)
    load_graph(built_dir)  # the store reads user metadata as it is
    args = ["query", str(built_dir), "what raises blood pressure", "--k", "5"]
    assert cli.main(args + (["--json"] if as_json else [])) == 0
    out = capsys.readouterr().out
    assert "pressure" in out
    if as_json:
        for result in json.loads(out)["chunks"]:
            for key in ("chunk_index", "start_word", "end_word"):
                assert type(result["place"].get(key, 0)) is int


@pytest.mark.parametrize("chunk", [False, True])
@pytest.mark.parametrize("offset", [HUGE, 2**63 - 5, -(2**63)])
def test_langchain_documents_with_huge_start_index(chunk, offset):
    from langchain_core.documents import Document

    from langchain_hcg import HCGRetriever

    docs = [
        Document(
            page_content="Smoking causes inflammation. Inflammation raises blood pressure.",
            metadata={"start_index": offset},
        ),
        Document(
            page_content="High blood pressure causes stroke. A poor diet raises pressure.",
            metadata={"start_index": offset},
        ),
    ]
    retriever = HCGRetriever.from_documents(docs, chunk=chunk, k=2)
    got = retriever.invoke("what raises blood pressure")
    assert got and "pressure" in got[0].page_content
    # Kept as given (a passage of a document shifts it by the passage's start).
    assert all(d.metadata["start_index"] - offset in range(200) for d in got)


@pytest.mark.parametrize("k", ["0", "-1", "-99"])
def test_a_k_below_one_gets_one_message(k, capsys):
    """``--k -1`` said "must be 0 or more" and ``--k 0`` "must be at least 1"."""
    with pytest.raises(SystemExit):
        cli.main(["query", "g", "why", "--k", k])
    err = capsys.readouterr().err
    assert f"'{k}' must be at least 1" in err and "0 or more" not in err


def test_a_file_name_with_a_line_break_keeps_the_result_header_on_one_line(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "new\nline.md").write_text("Smoking causes inflammation. Inflammation raises pressure.")
    (docs / "tab\there.md").write_text("A poor diet raises blood pressure. Stress raises pressure.")
    assert cli.main(["build", "docs", "--out", "g", "--embedder", "hashing", "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["query", "g", "what raises pressure", "--k", "2"]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if ", chunk 1" in line]
    assert len(headers) == 2
    assert any("new\\nline.md, chunk 1" in h for h in headers)
    assert any("tab\\there.md, chunk 1" in h for h in headers)


@pytest.mark.parametrize("inside", ["versions/1/chunks.jsonl", "versions/1", ".llm_cache"])
def test_a_graphs_own_files_are_not_read_as_corpus(built_dir, inside, capsys):
    """``hcg add g g/versions/1/chunks.jsonl`` added the graph's chunks again as new documents."""
    (built_dir / ".llm_cache").mkdir(exist_ok=True)
    (built_dir / ".llm_cache" / "note.md").write_text("Cached text that is not corpus.\n")
    before = load_graph(built_dir).graph.chunks
    capsys.readouterr()
    assert cli.main(["add", str(built_dir), str(built_dir / inside)]) != 0
    err = capsys.readouterr().err
    assert "lies inside the hcg graph directory" in err or "an hcg graph directory" in err
    assert load_graph(built_dir).graph.chunks == before
    docs = built_dir.parent / "docs"
    out = built_dir.parent / "g2"
    args = ["build", str(docs), str(built_dir / inside), "--out", str(out)]
    assert cli.main([*args, "--embedder", "hashing", "--quiet"]) == 0
    assert "skipped" in capsys.readouterr().err
    assert sorted({c.doc_id for c in load_graph(out).graph.chunks}) == ["a.md", "b.md"]


@pytest.mark.parametrize(
    ("cache", "refused"),
    [
        ("g", True),
        ("g/versions/1", True),
        ("g/versions/1/.llm_cache", True),
        ("g/versions", True),
        ("g/.llm_cache", False),  # another graph's replies, reused
        ("g2/.llm_cache", False),  # the default
        ("g2", True),
        ("g2/versions/9", True),
        ("replies", False),
    ],
)
def test_the_reply_cache_is_refused_where_a_save_would_remove_it(built_dir, cache, refused):
    """``--llm-cache g/versions/1`` put the paid replies in a version folder that g's next save
    removes; ``--llm-cache g`` mixed them with g's files."""
    from hcg_core.errors import StoreError
    from hcg_core.output_paths import check_cache_dir

    base = built_dir.parent
    if refused:
        with pytest.raises(StoreError, match="outside its .llm_cache folder"):
            check_cache_dir(base / cache, base / "g2")
    else:
        assert check_cache_dir(base / cache, base / "g2") == base / cache


def test_an_llm_build_with_its_cache_in_a_version_folder_writes_nothing(built_dir, capsys):
    from hcg_core.testing import StubLLMServer

    before = {p: p.read_bytes() for p in built_dir.rglob("*") if p.is_file()}
    with StubLLMServer(lambda req: {}) as server:
        args = ["build", "docs", "--out", "g2", "--embedder", "hashing", "--quiet"]
        llm = ["--llm-model", "m", "--llm-base-url", server.base_url]
        rc = cli.main([*args, *llm, "--llm-cache", "g/versions/1"])
        assert server.calls == 0
    assert rc == 2 and "outside its .llm_cache folder" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in built_dir.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("option", ["--spec", "--outcome"])
@pytest.mark.parametrize("target", ["folder", "/dev/null"])
def test_a_build_file_that_is_a_folder_or_a_device_is_named_so(built_dir, option, target, capsys):
    """``--outcome DIR`` said "no such file"; ``--spec DIR`` spoke of a graph directory."""
    if target == "folder":
        target = str(built_dir.parent / "docs")
    rc = cli.main(["build", "docs", "--out", "g3", "--embedder", "hashing", option, target])
    err = capsys.readouterr().err
    assert rc == 2
    assert ("is a folder" in err) if target.endswith("docs") else ("not a regular file" in err)
    assert "no such file" not in err and "graph directory holds" not in err


def test_a_file_given_as_the_graph_directory_is_not_said_to_be_missing(built_dir, capsys):
    assert cli.main(["query", "docs/a.md", "why"]) == 2
    err = capsys.readouterr().err
    assert "it is a file, not a folder" in err and "does not exist" not in err
