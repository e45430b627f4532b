"""Bad input and hostile files, as a new user meets them: one row per case of issue 12.

Every row runs the real ``hcg`` command line (in process) in a fresh folder and asserts the exit
code, the key words of the message, and that no user file changed: the sha256 of every file in
the folder before and after, except the paths the row expects the command to write.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from hcg_core.cli import main
from hcg_core.corpus import DEFAULT_CHARS_PER_WORD, WHOLE_BLOCK_FACTOR
from hcg_core.store import current_dir

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "examples" / "corpus"
SECRET = "TOP-SECRET-PASSWORD-LINE"
HASHING = ["--embedder", "hashing", "--quiet"]


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or link target) of every file below ``root``."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One good graph (hashing embedder), copied into the rows that need one."""
    out = tmp_path_factory.mktemp("built") / "g"
    assert main(["build", str(CORPUS), "--out", str(out), *HASHING]) == 0
    return out


@dataclass
class Row:
    id: str
    setup: Callable[[Path, Path], None]  # (folder, built graph) -> None
    argv: list[str]  # "{G}" is the copied graph, relative paths are inside the folder
    code: int
    words: tuple[str, ...]  # in stdout + stderr, case-insensitive
    writes: tuple[str, ...] = ()  # path prefixes the command may write or replace
    check: Callable[[Path, str], None] | None = None  # (folder, stdout) -> asserts
    absent: tuple[str, ...] = field(default_factory=tuple)  # must not appear in the output
    lines: int = 1  # lines of the error message (a rejected-inputs list has one per file)
    env: dict[str, str | None] = field(default_factory=dict)  # set (None: unset) for the row


def _corpus(d: Path) -> Path:
    docs = d / "docs"
    shutil.copytree(CORPUS, docs)
    return docs


def _graph(d: Path, built: Path) -> Path:
    shutil.copytree(built, d / "G")
    return d / "G"


def _files(graph: Path) -> Path:
    """The folder holding a graph directory's current files (``versions/<n>`` since format 2)."""
    return current_dir(graph)


def _edit_json(path: Path, change: Callable[[dict], object]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _edit_chunks(path: Path, text: object) -> None:
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["text"] = text
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")


def _damage_vectors(graph: Path, name: str, how: str) -> None:
    path = _files(graph) / "embeddings" / name
    arr = np.load(path)
    if how == "nan":
        arr[0, 0] = np.nan
    elif how == "inf":
        arr[1, 3] = np.inf
    else:
        arr[2] = 0.0
    np.save(path, arr)


def _query_json_is_strict(d: Path, out: str) -> None:
    body = out[out.index("{") :]
    data = json.loads(body, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    assert data["chunks"] and all(np.isfinite(c["score"]) for c in data["chunks"])


def _graph_loads(name: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        from hcg_core.store import load_graph

        assert load_graph(d / name).graph.chunks

    return check


# The default character cap at the CLI's 200 words per chunk.
DEFAULT_CAP = WHOLE_BLOCK_FACTOR * 200 * DEFAULT_CHARS_PER_WORD


def _max_chunk_chars(limit: int) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        lengths = [len(json.loads(x)["text"]) for x in (_files(d / "out") / "chunks.jsonl").open()]
        assert len(lengths) > 3 and max(lengths) <= limit

    return check


def _no_secret_in_graph(d: Path, out: str) -> None:
    assert SECRET not in (_files(d / "out") / "chunks.jsonl").read_text()


def _fifo_setup(d: Path, built: Path) -> None:
    docs = _corpus(d)
    os.mkfifo(docs / "pipe.md")


def _symlink_out_setup(d: Path, built: Path) -> None:
    docs = _corpus(d)
    (d / "secret.txt").write_text(SECRET + "\n")
    (docs / "pw.txt").symlink_to(d / "secret.txt")


def _chunks_link_setup(d: Path, built: Path) -> None:
    g = _files(_graph(d, built))
    (d / "secret.jsonl").write_text(json.dumps({"id": "s", "text": SECRET}) + "\n")
    (g / "chunks.jsonl").unlink()
    (g / "chunks.jsonl").symlink_to(d / "secret.jsonl")


def _embeddings_link_setup(d: Path, built: Path) -> None:
    _corpus(d)
    shutil.copytree(built, d / "out")
    (d / "elsewhere").mkdir()
    (d / "elsewhere" / "keep.txt").write_text("keep\n")
    shutil.rmtree(_files(d / "out") / "embeddings")
    (_files(d / "out") / "embeddings").symlink_to(d / "elsewhere")


def _no_write_elsewhere(d: Path, out: str) -> None:
    assert sorted(p.name for p in (d / "elsewhere").iterdir()) == ["keep.txt"]
    assert (_files(d / "out") / "embeddings" / "chunks.npy").is_file()


def _unknown_outcome_setup(d: Path, built: Path) -> None:
    _corpus(d)
    (d / "outcome.yaml").write_text("outcomes: [NoSuchMetricAnywhere]\n")


def _disk_full_at_manifest(d: Path, built: Path) -> None:
    """A good graph to rebuild, and a disk that fills up when the new manifest is written."""
    from hcg_core import safe_files

    _corpus(d)
    shutil.copytree(built, d / "out")

    def hook(step: str, path: Path) -> None:
        if path.name == "manifest.json":
            raise OSError(28, "No space left on device", str(path))

    safe_files._fault_hook = hook


def _user_folder(d: Path, built: Path) -> None:
    _corpus(d)
    (d / "out").mkdir()
    (d / "out" / "graph.json").write_text("my own graph.json, not hcg's\n")
    (d / "out" / "notes.txt").write_text("my notes\n")


def _keeps_notes(d: Path, out: str) -> None:
    assert (d / "out" / "notes.txt").read_text() == "my notes\n"
    assert (d / "out" / "graph.json").read_text() == "my own graph.json, not hcg's\n"
    _graph_loads("out")(d, out)


# ------------------------------------------------------------ issue 28: hostile and unlucky input

# Characters str.splitlines() cuts at besides \n and \r (separators pasted from web pages and
# PDFs, NEL, and the C0 form feeds and separators), and a C1 control.
BREAKERS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\x9b"
WEB_TEXT = (
    f"Smoking raises blood pressure.{BREAKERS[0]}High blood pressure causes stroke."
    f"{BREAKERS[1]}Salt raises blood pressure{BREAKERS[2:]} in many people."
)
V1 = REPO / "tests" / "fixtures" / "v1_hand_graph"


def _round_trips(name: str, text: str = WEB_TEXT) -> Callable[[Path, str], None]:
    """The graph loads, and one of its chunks holds ``text``'s odd characters exactly."""

    def check(d: Path, out: str) -> None:
        from hcg_core.store import load_graph

        chunks = load_graph(d / name).graph.chunks
        assert any(all(ch in c.text for ch in BREAKERS) for c in chunks), "separators lost"

    return check


def _strict_chunks(name: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        text = (_files(d / name) / "chunks.jsonl").read_text(encoding="utf-8")
        rows = [
            json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in chunks.jsonl"))
            for line in text.split("\n")
            if line
        ]
        assert any(r["metadata"].get("score") == "NaN" for r in rows)
        _graph_loads(name)(d, out)

    return check


def _doc_ids(name: str, want: set[str]) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        from hcg_core.store import load_graph

        ids = {c.doc_id for c in load_graph(d / name).graph.chunks}
        assert want <= ids, ids
        assert not any("chunks.jsonl" in i or "graph.json" in i for i in ids), ids

    return check


def _bad_name_setup(d: Path, built: Path) -> None:
    docs = _corpus(d)
    (docs / os.fsdecode(b"caf\xff.md")).write_text("Salt raises blood pressure.\n")


def _user_embeddings_setup(d: Path, built: Path) -> None:
    _corpus(d)
    (d / "out" / "embeddings").mkdir(parents=True)
    (d / "out" / "embeddings" / "my_vectors.npy").write_bytes(b"mine")
    (d / "out" / "embeddings" / "README").write_text("my vectors\n")


def _v1_with_user_files_setup(d: Path, built: Path) -> None:
    _corpus(d)
    shutil.copytree(V1, d / "out")
    (d / "out" / "embeddings").mkdir()
    (d / "out" / "embeddings" / "my_vectors.npy").write_bytes(b"mine")
    (d / "out" / "notes.txt").write_text("my notes\n")


def _v1_replaced(d: Path, out: str) -> None:
    assert (d / "out" / "embeddings" / "my_vectors.npy").read_bytes() == b"mine"
    assert not (d / "out" / "graph.json").exists()  # the flat files the project wrote are gone
    _graph_loads("out")(d, out)


def _notes_jsonl_setup(d: Path, built: Path) -> None:
    _graph(d, built)
    (d / "notes.jsonl").write_text(
        json.dumps({"text": "Salt raises blood pressure."})
        + "\n"
        + json.dumps({"text": "Smoking causes stroke."})
        + "\n"
    )
    assert main(["add", "G", "notes.jsonl", "--embedder", "hashing"]) == 0


def _odd_report_setup(d: Path, built: Path) -> None:
    g = _graph(d, built)
    _edit_json(_files(g) / "build_report.json", lambda r: r.update(input={"chunk_words": "x"}))
    (d / "note.md").write_text("Salt raises blood pressure. High blood pressure causes stroke.\n")


def _corrections_setup(d: Path, built: Path) -> None:
    _graph(d, built)
    (d / "c.yaml").write_text("format: hcg-corrections\nversion: 1\ncorrections: []\n")


def _disk_full_at(name: str) -> Callable[[Path, Path], None]:
    def setup(d: Path, built: Path) -> None:
        from hcg_core import safe_files

        _graph(d, built)

        def hook(step: str, path: Path) -> None:
            if path.name == name:
                raise OSError(28, "No space left on device", str(path))

        safe_files._fault_hook = hook

    return setup


def _export_link_setup(d: Path, built: Path) -> None:
    _graph(d, built)
    (d / "out.graphml").symlink_to("/proc/self/fd/1")


ROWS = [
    # ------------------------------------------------------------ output directories
    Row(
        "out-is-a-user-folder",
        _user_folder,
        ["build", "docs", "--out", "out", *HASHING],
        2,
        ("not an hcg graph directory", "--force", "graph.json"),
    ),
    Row(
        "out-is-a-user-folder-forced",
        _user_folder,
        ["build", "docs", "--out", "out", "--force", *HASHING],
        0,
        ("built out",),
        writes=("out/manifest.json", "out/versions", "out/.hcg-lock"),  # the user's files stay
        check=_keeps_notes,
    ),
    Row("out-empty", lambda d, b: _corpus(d), ["build", "docs", "--out", ""], 2, ("empty",)),
    Row(
        "out-is-the-input",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "docs", *HASHING],
        2,
        ("is the input folder",),
    ),
    Row(
        "out-inside-the-input",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "docs/hcg_graph", *HASHING],
        2,
        ("inside the input", "read the graph back"),
    ),
    Row(
        "out-under-a-file",
        lambda d, b: (_corpus(d), (d / "afile").write_text("x")),
        ["build", "docs", "--out", "afile/g", *HASHING],
        2,
        ("cannot write",),
    ),
    Row(
        "llm-cache-unwritable",
        lambda d, b: (_corpus(d), (d / "afile").write_text("x")),
        ["build", "docs", "--out", "out", "--llm-cache", "afile/cache"]
        + ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", *HASHING],
        2,
        ("llm reply cache", "cannot write"),
    ),
    Row(
        "eval-out-overwrites-the-manifest",
        lambda d, b: (_graph(d, b), (d / "q.jsonl").write_text('{"question": "x"}\n')),
        ["eval", "G", "--questions", "q.jsonl", "--out", "G/manifest.json"],
        2,
        ("inside the graph directory",),
    ),
    Row(
        "rebuild-over-a-good-graph",
        lambda d, b: (_corpus(d), shutil.copytree(b, d / "out")),
        ["build", "docs", "--out", "out", "--chunk-words", "120", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_graph_loads("out"),
    ),
    Row(
        "disk-full-during-a-rebuild",
        _disk_full_at_manifest,
        ["build", "docs", "--out", "out", "--chunk-words", "120", *HASHING],
        2,
        ("no space left on device", "previous contents are unchanged"),
        check=_graph_loads("out"),
    ),
    # ------------------------------------------------------------ issue 28: text round-trips
    Row(
        "separators-in-text",
        lambda d, b: (_corpus(d) / "web.md").write_text(WEB_TEXT),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_round_trips("out"),
    ),
    Row(
        "separators-escaped-in-json",
        lambda d, b: (_corpus(d) / "web.json").write_text(json.dumps([{"text": WEB_TEXT}])),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_round_trips("out"),
    ),
    Row(
        "separators-rebuild-over-a-good-graph",
        lambda d, b: ((_corpus(d) / "web.md").write_text(WEB_TEXT), shutil.copytree(b, d / "out")),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_round_trips("out"),
    ),
    Row(
        "separators-in-an-added-note",
        lambda d, b: (_graph(d, b), (d / "note.md").write_text(WEB_TEXT)),
        ["add", "G", "note.md", "--embedder", "hashing"],
        0,
        ("chunks",),
        writes=("G/",),
        check=_round_trips("G"),
    ),
    Row(
        "lone-surrogate-in-a-json-item",
        lambda d, b: (_corpus(d) / "s.json").write_text(
            '[{"text": "Smoking \\ud800 raises blood pressure."}, {"text": "Salt raises it."}]'
        ),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("s.json", "lone surrogate", "built out"),
        writes=("out/",),
        check=_graph_loads("out"),
    ),
    Row(
        "lone-surrogate-only",
        lambda d, b: (d / "s.json").write_text(
            '{"text": "Smoking \\udc80 raises blood pressure."}'
        ),
        ["build", "s.json", "--out", "out", *HASHING],
        2,
        ("s.json", "lone surrogate"),
        lines=3,
    ),
    Row(
        "file-name-with-byte-0xff",
        _bad_name_setup,
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("not valid utf-8", "rename", "built out"),
        writes=("out/",),
        check=_graph_loads("out"),
    ),
    Row(
        "nan-and-infinity-in-json-metadata",
        lambda d, b: (_corpus(d) / "m.json").write_text(
            '[{"text": "Salt raises blood pressure.", "score": NaN, "w": -Infinity}]'
        ),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_strict_chunks("out"),
    ),
    Row(
        "v1-graph-inspected-as-it-is",
        lambda d, b: shutil.copytree(V1, d / "V1"),
        ["inspect", "V1"],
        0,
        ("chunks", "edges"),
    ),
    Row(
        "v1-graph-rebuilt-keeps-user-files",
        _v1_with_user_files_setup,
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/manifest.json", "out/versions", "out/.hcg-lock")
        + ("out/spec.yaml", "out/graph.json", "out/chunks.jsonl"),  # v1's own files, replaced
        check=_v1_replaced,
    ),
    # ------------------------------------------------------------ issue 28: outputs
    Row(
        "view-out-is-the-graph-manifest",
        lambda d, b: _graph(d, b),
        ["view", "G", "--out", "G/manifest.json"],
        2,
        ("inside the graph directory",),
    ),
    Row(
        "export-out-is-a-graph-file",
        lambda d, b: _graph(d, b),
        ["export", "G", "--format", "graphml", "--out", "G/versions/1/graph.json"],
        2,
        ("inside the graph directory",),
    ),
    Row(
        "export-csv-into-the-graph",
        lambda d, b: _graph(d, b),
        ["export", "G", "--format", "csv", "--out", "G"],
        2,
        ("inside the graph directory",),
    ),
    Row(
        "export-csv-into-its-versions",
        lambda d, b: _graph(d, b),
        ["export", "G", "--format", "csv", "--out", "G/versions"],
        2,
        ("inside the graph directory",),
    ),
    Row(
        "export-out-is-a-folder",
        lambda d, b: (_graph(d, b), (d / "somewhere").mkdir()),
        ["export", "G", "--format", "gexf", "--out", "somewhere"],
        2,
        ("is a folder",),
    ),
    Row(
        "export-out-under-a-file",
        lambda d, b: (_graph(d, b), (d / "afile").write_text("x")),
        ["export", "G", "--format", "gexf", "--out", "afile/g.gexf"],
        2,
        ("afile", "is a file"),
    ),
    Row(
        "export-out-is-a-link",
        _export_link_setup,
        ["export", "G", "--format", "graphml", "--out", "out.graphml"],
        2,
        ("symbolic link",),
    ),
    Row(
        "view-out-is-a-fifo",
        lambda d, b: (_graph(d, b), os.mkfifo(d / "page.html")),
        ["view", "G", "--out", "page.html"],
        2,
        ("not a regular file",),
    ),
    Row(
        "export-on-a-full-disk",
        _disk_full_at("g.graphml"),
        ["export", "G", "--format", "graphml", "--out", "g.graphml"],
        2,
        ("no space left on device", "g.graphml"),
    ),
    Row(
        "view-on-a-full-disk",
        _disk_full_at("page.html"),
        ["view", "G", "--out", "page.html"],
        2,
        ("no space left on device", "page.html"),
    ),
    Row(
        "build-force-keeps-user-files-under-embeddings",
        _user_embeddings_setup,
        ["build", "docs", "--out", "out", "--force", *HASHING],
        0,
        ("built out",),
        writes=("out/manifest.json", "out/versions", "out/.hcg-lock"),
        check=_graph_loads("out"),
    ),
    Row(
        "apply-out-inside-the-source",
        _corrections_setup,
        ["apply", "G", "c.yaml", "--out", "G/fixed"],
        2,
        ("inside the graph",),
    ),
    Row(
        "add-with-an-odd-typed-build-report",
        _odd_report_setup,
        ["add", "G", "note.md", "--embedder", "hashing"],
        0,
        ("chunks",),
        writes=("G/",),
        check=_graph_loads("G"),
    ),
    # ------------------------------------------------------------ issue 28: edits and inputs
    Row(
        "empty-json-item-skipped-with-a-warning",
        lambda d, b: (_corpus(d) / "e.json").write_text(
            '[{"text": "  "}, {"text": "Salt raises blood pressure."}]'
        ),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("e.json", "1 item(s) skipped", "item 0", "built out"),
        writes=("out/",),
    ),
    Row(
        "same-named-files",
        lambda d, b: [
            (d / sub).mkdir() or (d / sub / "x.md").write_text(f"{text}\n")
            for sub, text in (("a", "Salt raises blood pressure."), ("b", "Smoking causes stroke."))
        ],
        ["build", "a/x.md", "b/x.md", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_doc_ids("out", {"a/x.md", "b/x.md"}),
    ),
    Row(
        "unique-names-keep-their-ids",
        lambda d, b: _corpus(d),
        ["build", "docs/01-blood-pressure.md", "docs/03-stroke.md", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_doc_ids("out", {"01-blood-pressure.md", "03-stroke.md"}),
    ),
    Row(
        "utf16-with-a-bom",
        lambda d, b: (_corpus(d) / "u.txt").write_bytes(
            "Salt raises blood pressure. Smoking causes stroke.\n".encode("utf-16")
        ),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        absent=("binary", "u.txt"),
        check=_doc_ids("out", {"u.txt"}),
    ),
    Row(
        "remove-a-jsonl-file-by-name",
        _notes_jsonl_setup,
        ["remove", "G", "notes.jsonl"],
        2,
        ("notes.jsonl#0", "notes.jsonl#1", "nothing was removed"),
    ),
    Row(
        "graph-directory-in-the-build-input",
        lambda d, b: (_corpus(d), _graph(d, b)),
        ["build", "docs", "G", "--out", "out", *HASHING],
        0,
        ("G", "an hcg graph directory, not corpus", "built out"),
        writes=("out/",),
        check=_doc_ids("out", {"01-blood-pressure.md"}),
    ),
    Row(
        "graph-directory-inside-an-input-folder",
        lambda d, b: shutil.copytree(b, _corpus(d) / "old_graph"),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("old_graph", "an hcg graph directory, not corpus", "built out"),
        writes=("out/",),
        check=_doc_ids("out", {"01-blood-pressure.md"}),
    ),
    # ------------------------------------------------------------ settings
    Row(
        "timeout-nan",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "out", "--timeout", "nan"],
        2,
        ("finite",),
    ),
    # ------------------------------------------------------------ unbounded chunks
    Row(
        "cjk-without-spaces",
        lambda d, b: (_corpus(d) / "zh.txt").write_text("吸烟会损害血管。" * 4000),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_max_chunk_chars(DEFAULT_CAP),
    ),
    Row(
        "one-huge-token",
        lambda d, b: (_corpus(d) / "tok.txt").write_text("Smoking. " + "x" * 200_000),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_max_chunk_chars(DEFAULT_CAP),
    ),
    Row(
        "chunk-chars-flag",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "out", "--chunk-chars", "300", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_max_chunk_chars(300),
    ),
    # ------------------------------------------------------------ confinement
    Row(
        "chunks-link-out-of-the-graph",
        _chunks_link_setup,
        ["query", "G", "What raises stroke risk?"],
        2,
        ("outside the graph directory", "chunks.jsonl"),
        absent=(SECRET,),
    ),
    Row(
        "input-folder-link-out",
        _symlink_out_setup,
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("pw.txt", "outside the input folder", "--follow-symlinks"),
        writes=("out/",),
        check=_no_secret_in_graph,
    ),
    Row(
        "embeddings-link-in-out",
        _embeddings_link_setup,
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("built out",),
        writes=("out/",),
        check=_no_write_elsewhere,
    ),
    Row(
        "nan-in-chunk-vectors",
        lambda d, b: _damage_vectors(_graph(d, b), "chunks.npy", "nan"),
        ["query", "G", "What raises stroke risk?", "--json"],
        0,
        ("warning", "nan or infinite", "recomputed"),
        check=_query_json_is_strict,
    ),
    Row(
        "inf-in-variable-vectors",
        lambda d, b: _damage_vectors(_graph(d, b), "variables.npy", "inf"),
        ["query", "G", "What raises stroke risk?", "--json"],
        0,
        ("warning", "nan or infinite"),
        check=_query_json_is_strict,
    ),
    Row(
        "zero-row-in-chunk-vectors",
        lambda d, b: _damage_vectors(_graph(d, b), "chunks.npy", "zero"),
        ["query", "G", "What raises stroke risk?"],
        0,
        ("warning", "all-zero rows", "recomputed"),
    ),
    Row(
        "chunk-text-null",
        lambda d, b: _edit_chunks(_files(_graph(d, b)) / "chunks.jsonl", None),
        ["query", "G", "stroke"],
        2,
        ("chunks.jsonl", "line 1", "non-empty string"),
    ),
    Row(
        "chunk-text-empty",
        lambda d, b: _edit_chunks(_files(_graph(d, b)) / "chunks.jsonl", ""),
        ["query", "G", "stroke"],
        2,
        ("chunks.jsonl", "line 1", "non-empty string"),
    ),
    Row(
        "hashing-dimension-huge",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "manifest.json",
            lambda m: m.update(embedder="hashing-v1-99999999999"),
        ),
        ["query", "G", "stroke"],
        2,
        ("65536",),
    ),
    Row(
        "build-report-corrupt-query",
        lambda d, b: (_files(_graph(d, b)) / "build_report.json").write_text("{not json"),
        ["query", "G", "What raises stroke risk?"],
        0,
        ("build_report.json ignored", "served by"),
    ),
    Row(
        "build-report-corrupt-inspect",
        lambda d, b: (_files(_graph(d, b)) / "build_report.json").write_text("{not json"),
        ["inspect", "G"],
        0,
        ("build_report.json ignored", "invalid json"),
    ),
    Row(
        "build-report-a-list",
        lambda d, b: (_files(_graph(d, b)) / "build_report.json").write_text("[1, 2]"),
        ["inspect", "G"],
        0,
        ("build_report.json ignored", "a json list"),
    ),
    Row(
        "build-report-stages-not-a-dict",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "build_report.json", lambda r: r.update(stages=7)
        ),
        ["inspect", "G"],
        0,
        ("'stages' is a int", "not shown"),
    ),
    # ------------------------------------------------------------ loud, not silent
    Row("question-empty", lambda d, b: _graph(d, b), ["query", "G", ""], 2, ("question is empty",)),
    Row(
        "question-whitespace",
        lambda d, b: _graph(d, b),
        ["query", "G", "  \t "],
        2,
        ("question is empty",),
    ),
    Row(
        "question-invalid-utf8",
        lambda d, b: _graph(d, b),
        ["query", "G", "caf\udce9 stroke"],  # how Python passes the undecodable argv byte 0xe9
        2,
        ("not valid utf-8",),
    ),
    Row(
        "missing-input-next-to-a-good-one",
        lambda d, b: _corpus(d),
        ["build", "docs", "dcos", "--out", "out", *HASHING],
        2,
        ("no such file or folder", "dcos"),
    ),
    Row(
        "fifo-input-in-a-folder",
        _fifo_setup,
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("pipe.md", "not a regular file"),
        writes=("out/",),
        absent=("no such file",),
    ),
    Row(
        "fifo-input-alone",
        lambda d, b: os.mkfifo(d / "pipe.md"),
        ["build", "pipe.md", "--out", "out", *HASHING],
        2,
        ("pipe.md", "not a regular file"),
        absent=("no such file",),
        lines=3,
    ),
    Row(
        "unknown-outcome-metric",
        _unknown_outcome_setup,
        ["build", "docs", "--out", "out", "--outcome", "outcome.yaml", *HASHING],
        0,
        ("warning", "NoSuchMetricAnywhere"),
        writes=("out/",),
    ),
    Row(
        "outcome-a-string",
        lambda d, b: (_corpus(d), (d / "o.yaml").write_text("outcomes: StrokeRisk\n")),
        ["build", "docs", "--out", "out", "--outcome", "o.yaml", *HASHING],
        2,
        ("o.yaml", "'outcomes'", "expected a mapping"),
    ),
    Row(
        "edges-a-string",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g.update(edges="a->b")
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "'edges' is a string", "list of edge objects"),
    ),
    Row(
        "edges-a-dict",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g.update(edges={"a": 1})
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "'edges' is a object", '"source"'),
    ),
    Row(
        "edge-without-target",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g["edges"][0].pop("target")
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "edges[0]", "no 'target'", '"target": variable'),
    ),
    Row(
        "variables-a-string",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g.update(variables="x")
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "'variables' is a string", "expected a list of variables"),
    ),
    Row(
        "edge-confidence-a-word",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g["edges"][0].update(confidence="high")
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "edges[0]", "confidence is 'high'", "a number in [0, 1]"),
    ),
    Row(
        "edge-a-number",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "graph.json", lambda g: g["edges"].append(3)
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "is a number", "expected an object"),
    ),
]


# ------------------------------------------------------------ issue 28: hostile files and text
# Checked once by hand against the code before the change (see /work/coord/rel-parse.md); the
# alias bombs and the 59.6 GiB .npy header were never run against it (they hang or exhaust memory).

DEEP_JSON = "[" * 100_000 + "]" * 100_000
HUGE_INT = "9" * 5000
# Nine levels of ten aliases each: 10**9 strings once expanded, 1 KB as text.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 10)}]\n"
    for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


def _set_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _deep_chunk_line(g: Path) -> None:
    lines = (g / "chunks.jsonl").read_text().splitlines()
    _set_text(g / "chunks.jsonl", "\n".join([DEEP_JSON, *lines[1:]]) + "\n")


def _sparse_npy(g: Path, name: str, columns: int, truncate: bool) -> None:
    """A ``.npy`` header claiming (rows, columns) float64, with no data behind it."""
    rows = np.load(g / "embeddings" / name, mmap_mode="r").shape[0]
    path = g / "embeddings" / name
    with path.open("wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (rows, columns)}
        )
    assert path.stat().st_size <= 128 and truncate


def _spec_with_duplicate_metric(g: Path) -> None:
    text = (g / "spec.yaml").read_text()
    head, rest = text.split("metrics:\n", 1)
    first = rest.splitlines()[0]
    _set_text(g / "spec.yaml", head + "metrics:\n" + first + "\n" + rest)


def _manifest_text(g: Path, change: Callable[[str], str]) -> None:
    _set_text(g / "manifest.json", change((g / "manifest.json").read_text()))


def _graphml_well_formed(d: Path, out: str) -> None:
    import xml.dom.minidom

    xml.dom.minidom.parseString((d / "g.graphml").read_bytes())
    assert "\\x1b" in (d / "g.graphml").read_text()


def _control_mechanism(g: Path) -> None:
    _edit_json(
        g / "graph.json", lambda d: d["edges"][0].update(mechanism="raises\x1b[2J\x01\x0c it")
    )


def _esc_in_chunks(g: Path) -> None:
    lines = (g / "chunks.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        d["text"] = "\x1b]0;pwned\x07\x1b[2J" + d["text"] + "\x9b31m"
        out.append(json.dumps(d))
    _set_text(g / "chunks.jsonl", "\n".join(out) + "\n")


def _escape_visible(d: Path, out: str) -> None:
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out


def _markup_entity(g: Path) -> None:
    """An entity of the graph renamed to markup, in spec.yaml and graph.json alike."""
    spec, graph = (g / "spec.yaml").read_text(), (g / "graph.json").read_text()
    assert "    - diabetic\n" in spec and "(diabetic)" in graph
    _set_text(
        g / "spec.yaml", spec.replace("    - diabetic\n", '    - "<img src=x onerror=alert(1)>"\n')
    )
    graph = graph.replace("(diabetic)", "(<img src=x onerror=alert(1)>)")
    _set_text(g / "graph.json", graph.replace('"diabetic"', '"<img src=x onerror=alert(1)>"'))


def _mermaid_escaped(d: Path, out: str) -> None:
    assert "#lt;img src=x onerror=alert(1)#gt;" in out and "<img" not in out


NO_KEY = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}

ROWS += [
    # ------------------------------------------------------------ bounded parsing
    Row(
        "deep-json-graph",
        lambda d, b: _set_text(_files(_graph(d, b)) / "graph.json", DEEP_JSON),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "nesting deeper than 64"),
    ),
    Row(
        "deep-json-chunks-line",
        lambda d, b: _deep_chunk_line(_files(_graph(d, b))),
        ["inspect", "G"],
        2,
        ("chunks.jsonl", "line 1", "nesting deeper"),
    ),
    Row(
        "deep-json-build-report-is-optional",
        lambda d, b: _set_text(_files(_graph(d, b)) / "build_report.json", DEEP_JSON),
        ["query", "G", "What raises stroke risk?"],
        0,
        ("build_report.json ignored", "nesting deeper", "served by"),
    ),
    Row(
        "deep-json-ledger-is-optional",
        lambda d, b: _set_text(_files(_graph(d, b)) / "incremental.json", DEEP_JSON),
        ["inspect", "G"],
        0,
        ("incremental.json ignored", "nesting deeper"),
    ),
    Row(
        "huge-int-in-graph",
        lambda d, b: _set_text(
            _files(_graph(d, b)) / "graph.json",
            (_files(b) / "graph.json")
            .read_text()
            .replace('"confidence": ', f'"confidence": {HUGE_INT}, "c": ', 1),
        ),
        ["query", "G", "stroke"],
        2,
        ("graph.json", "5,000 digits"),
    ),
    Row(
        "huge-int-in-manifest-counts",
        lambda d, b: _manifest_text(
            _files(_graph(d, b)),
            lambda t: t.replace('"chunks": ', f'"chunks": {HUGE_INT}, "x": ', 1),
        ),
        ["inspect", "G"],
        2,
        ("manifest.json", "digits"),
    ),
    Row(
        "alias-bomb-spec",
        lambda d, b: _set_text(_files(_graph(d, b)) / "spec.yaml", ALIAS_BOMB),
        ["inspect", "G"],
        2,
        ("spec.yaml", "alias", "not accepted"),
    ),
    Row(
        "alias-bomb-outcome",
        lambda d, b: (_corpus(d), _set_text(d / "o.yaml", ALIAS_BOMB + "outcomes: *i\n")),
        ["build", "docs", "--out", "out", "--outcome", "o.yaml", *HASHING],
        2,
        ("o.yaml", "alias"),
    ),
    Row(
        "alias-bomb-spec-flag",
        lambda d, b: (_corpus(d), _set_text(d / "s.yaml", ALIAS_BOMB)),
        ["build", "docs", "--out", "out", "--spec", "s.yaml", *HASHING],
        2,
        ("s.yaml", "alias"),
    ),
    Row(
        "alias-bomb-corrections",
        lambda d, b: (_graph(d, b), _set_text(d / "c.yaml", ALIAS_BOMB + "corrections: *i\n")),
        ["apply", "G", "c.yaml", "--out", "fixed"],
        2,
        ("c.yaml", "alias"),
    ),
    Row(
        "deep-yaml-spec-flag",
        lambda d, b: (_corpus(d), _set_text(d / "s.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")),
        ["build", "docs", "--out", "out", "--spec", "s.yaml", *HASHING],
        2,
        ("s.yaml", "nesting deeper"),
    ),
    Row(
        "spec-duplicate-metric-key",
        lambda d, b: _spec_with_duplicate_metric(_files(_graph(d, b))),
        ["inspect", "G"],
        2,
        ("spec.yaml", "appears twice"),
    ),
    Row(
        "manifest-duplicate-key",
        lambda d, b: _manifest_text(
            _files(_graph(d, b)), lambda t: t.replace("{", '{"embedder": "x",', 1)
        ),
        ["inspect", "G"],
        2,
        ("manifest.json", "'embedder'", "appears twice"),
    ),
    Row(
        "manifest-embedder-null",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "manifest.json", lambda m: m.update(embedder=None)
        ),
        ["inspect", "G"],
        2,
        ("manifest.json", "'embedder' is null"),
    ),
    Row(
        "manifest-embedder-an-int",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "manifest.json", lambda m: m.update(embedder=7)
        ),
        ["export", "G", "--format", "mermaid"],
        2,
        ("manifest.json", "'embedder' is a number"),
    ),
    Row(
        "manifest-embedder-hashing-0",
        lambda d, b: _edit_json(
            _files(_graph(d, b)) / "manifest.json", lambda m: m.update(embedder="hashing-0")
        ),
        ["view", "G", "--out", "page.html"],
        2,
        ("manifest.json", "'hashing-0'", "not a name this package writes"),
    ),
    Row(
        "npy-header-claims-60-gib",
        lambda d, b: _sparse_npy(_files(_graph(d, b)), "variables.npy", 10**9, truncate=True),
        ["query", "G", "What raises stroke risk?"],
        0,
        ("warning", "variables.npy", "1000000000", "damaged"),
    ),
    Row(
        "npy-header-longer-than-the-file",
        lambda d, b: _sparse_npy(_files(_graph(d, b)), "chunks.npy", 4096, truncate=True),
        ["query", "G", "What raises stroke risk?"],
        0,
        ("warning", "chunks.npy", "header promises"),
    ),
    Row(
        "deep-json-input-file",
        lambda d, b: _set_text(_corpus(d) / "deep.json", DEEP_JSON),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("skipped", "deep.json", "nesting deeper"),
        writes=("out/",),
    ),
    Row(
        "lone-surrogate-in-json-input",
        lambda d, b: _set_text(
            _corpus(d) / "s.jsonl", '{"text": "Smoking \\ud800 raises risk."}\n'
        ),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("skipped", "s.jsonl", "lone surrogate"),
        writes=("out/",),
    ),
    Row(
        "huge-int-in-json-input",
        lambda d, b: _set_text(_corpus(d) / "n.json", f'{{"text": "Smoking.", "n": {HUGE_INT}}}'),
        ["build", "docs", "--out", "out", *HASHING],
        0,
        ("skipped", "n.json", "5,000 digits"),
        writes=("out/",),
    ),
    # ------------------------------------------------------------ safe output text
    Row(
        "graphml-control-characters",
        lambda d, b: _control_mechanism(_files(_graph(d, b))),
        ["export", "G", "--format", "graphml", "--out", "g.graphml"],
        0,
        ("wrote",),
        writes=("g.graphml",),
        check=_graphml_well_formed,
    ),
    Row(
        "mermaid-label-markup",
        lambda d, b: _markup_entity(_files(_graph(d, b))),
        ["export", "G", "--format", "mermaid", "--max-edges", "500"],
        0,
        ("flowchart",),
        check=_mermaid_escaped,
    ),
    Row(
        "query-prints-escape-sequences",
        lambda d, b: _esc_in_chunks(_files(_graph(d, b))),
        ["query", "G", "What raises stroke risk?", "--embedder", "hashing"],
        0,
        ("served by",),
        check=_escape_visible,
    ),
    # ------------------------------------------------------------ arguments
    Row(
        "view-negative-limit",
        lambda d, b: _graph(d, b),
        ["view", "G", "--out", "page.html", "--full-view-limit", "-1"],
        2,
        ("--full-view-limit", "0 or more"),
        lines=2,
    ),
    Row(
        "view-nan-threshold",
        lambda d, b: _graph(d, b),
        ["view", "G", "--out", "page.html", "--low-confidence", "nan"],
        2,
        ("--low-confidence", "[0, 1]"),
        lines=2,
    ),
    Row(
        "add-chunk-words-zero",
        lambda d, b: (_graph(d, b), _set_text(d / "n.md", "Salt raises blood pressure.\n")),
        ["add", "G", "n.md", "--chunk-words", "0"],
        2,
        ("--chunk-words", "at least 1"),
        lines=2,
    ),
    Row(
        "llm-temperature-nan",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "out", "--llm-base-url", "http://127.0.0.1:9/v1"]
        + ["--llm-model", "m", "--temperature", "nan", *HASHING],
        2,
        ("--temperature", "finite"),
        lines=2,
    ),
    # The provider is named only by the environment here (a closed local port), so even the old
    # code, which sent the corpus without a word, contacted nothing outside this machine.
    Row(
        "llm-model-without-base-url",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "out", "--llm-model", "m", *HASHING],
        2,
        ("would send the corpus to 127.0.0.1:9", "OPENAI_BASE_URL", "--allow-remote"),
        env={
            "OPENAI_API_KEY": "sk-test-not-a-key-000",
            "OPENAI_BASE_URL": "http://u:pw@127.0.0.1:9/v1",
        },
        absent=("sk-test-not-a-key-000", "u:pw"),
    ),
    Row(
        "openai-embedder-without-base-url",
        lambda d, b: _corpus(d),
        ["build", "docs", "--out", "out", "--embedder", "openai:text-embedding-3-small", "--quiet"],
        2,
        ("--embedder openai:text-embedding-3-small", "api.openai.com", "--allow-remote"),
        env=NO_KEY,
    ),
]


# ------------------------------------------------------------ issue 43: hostile characters
# What neither YAML nor XML 1.0 can hold: every C0 control character but tab, LF and CR; U+FFFE
# and U+FFFF; and lone surrogates. Each is a row for every YAML reader and every export format.

C0 = [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"]
NONCHARS = ["\ufffe", "\uffff"]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
BAD_CHARS = C0 + NONCHARS + SURROGATES


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _yaml_with(ch: str, head: str, tail: str) -> str:
    """``head``, a line holding ``ch``, then ``tail``. A lone surrogate cannot be written to a
    UTF-8 file at all, so it comes as YAML's own escape in a double-quoted scalar."""
    if "\ud800" <= ch <= "\udfff":
        return f'{head}note: "\\u{ord(ch):04x}"\n{tail}'
    return f"{head}note{ch}: x\n{tail}"


def _yaml_words(name: str, ch: str) -> tuple[str, ...]:
    if "\ud800" <= ch <= "\udfff":
        return (name, "lone surrogate")
    return (name, _code(ch), "line 2 column 5", "not allowed in YAML")


def _yaml_rows(ch: str) -> list[Row]:
    """One row per YAML reader: --outcome, --spec, a corrections file, a graph's spec.yaml."""
    code = _code(ch)
    return [
        Row(
            f"yaml-outcome-{code}",
            lambda d, b: (
                _corpus(d),
                _set_text(d / "o.yaml", _yaml_with(ch, "outcomes: [X]\n", "")),
            ),
            ["build", "docs", "--out", "out", "--outcome", "o.yaml", *HASHING],
            2,
            _yaml_words("o.yaml", ch),
        ),
        Row(
            f"yaml-spec-flag-{code}",
            lambda d, b: (_corpus(d), _set_text(d / "s.yaml", _yaml_with(ch, "domain: x\n", ""))),
            ["build", "docs", "--out", "out", "--spec", "s.yaml", *HASHING],
            2,
            _yaml_words("s.yaml", ch),
        ),
        Row(
            f"yaml-corrections-{code}",
            lambda d, b: (
                _graph(d, b),
                _set_text(d / "c.yaml", _yaml_with(ch, "version: 1\n", "corrections: []\n")),
            ),
            ["apply", "G", "c.yaml", "--out", "fixed"],
            2,
            _yaml_words("c.yaml", ch),
        ),
        Row(
            f"yaml-graph-spec-{code}",
            lambda d, b: _set_text(
                _files(_graph(d, b)) / "spec.yaml",
                _yaml_with(ch, "domain: x\n", (_files(b) / "spec.yaml").read_text()),
            ),
            ["inspect", "G"],
            2,
            ("spec.yaml", *_yaml_words("spec.yaml", ch)[1:]),
        ),
    ]


def _nul_in_graph_spec(d: Path, built: Path) -> None:
    _graph(d, built)
    shutil.copytree(built, d / "H")  # a second, good graph for diff
    _set_text(d / "n.md", "Salt raises blood pressure.\n")
    _set_text(d / "c.yaml", "version: 1\ncorrections: []\n")
    _set_text(d / "qa.json", json.dumps([{"question": "What raises stroke?", "answer": "x"}]))
    spec = _files(d / "G") / "spec.yaml"
    _set_text(spec, "outcomes: [Stroke]\n\x00\n" + spec.read_text())


# The graph's spec.yaml with a NUL, through every command that reads a graph (issue 43's R1).
_GRAPH_COMMANDS = {
    "inspect": ["inspect", "G"],
    "query": ["query", "G", "What raises stroke risk?"],
    "export": ["export", "G", "--format", "graphml", "--out", "g.graphml"],
    "view": ["view", "G", "--out", "page.html"],
    "apply": ["apply", "G", "c.yaml", "--out", "fixed"],
    "diff": ["diff", "H", "G"],
    "add": ["add", "G", "n.md"],
    "remove": ["remove", "G", "some-doc"],
    "build-spec": ["build", "n.md", "--out", "out", "--spec", "G/spec.yaml", *HASHING],
}

ROWS += [r for ch in BAD_CHARS for r in _yaml_rows(ch)]
ROWS += [
    Row(
        f"yaml-nul-graph-spec-{name}",
        _nul_in_graph_spec,
        argv,
        2,
        ("spec.yaml", "U+0000", "line 2 column 1"),
    )
    for name, argv in _GRAPH_COMMANDS.items()
]


# ------------------------------------------------------------ exports of hostile text
# The character goes into an edge's id and mechanism, a cited chunk's text and an entity (so a
# variable's name): every id and text an export writes. Each format must read back equal: XML as
# ``xml_text`` writes it (what XML cannot hold, as a visible \xNN), Cypher and CSV exactly.
EXPORT_CHARS = C0 + NONCHARS + ["\r", "|", "%7C"]  # CR: S2; "|" and an escape-like item: S3
ESCAPED = {*C0, *NONCHARS, "\r"}  # never raw in Mermaid or Cypher
_EXPORT_OUT = {
    "graphml": "g.graphml",
    "gexf": "g.gexf",
    "mermaid": "g.mmd",
    "cypher": "g.cypher",
    "csv": "csvout",
}


def _hostile_graph(ch: str) -> Callable[[Path, Path], None]:
    def setup(d: Path, built: Path) -> None:
        g = _files(_graph(d, built))
        ent = f"dia{ch}betic"
        spec, graph = (g / "spec.yaml").read_text(), (g / "graph.json").read_text()
        assert "    - diabetic\n" in spec and "(diabetic)" in graph
        # JSON's string escapes are YAML's too (double-quoted): any character can be written.
        _set_text(g / "spec.yaml", spec.replace("    - diabetic\n", f"    - {json.dumps(ent)}\n"))
        graph = graph.replace("(diabetic)", f"({json.dumps(ent)[1:-1]})")
        data = json.loads(graph.replace('"diabetic"', json.dumps(ent)))
        edge = data["edges"][0]
        edge.update(id=f"e{ch}1", mechanism=f"raises{ch} it")
        _set_text(g / "graph.json", json.dumps(data))
        lines = []
        for line in (g / "chunks.jsonl").read_text().splitlines():
            chunk = json.loads(line)
            if chunk["id"] == edge["evidence"][0]:
                chunk["text"] += f" and{ch}more"
            lines.append(json.dumps(chunk))
        _set_text(g / "chunks.jsonl", "\n".join(lines) + "\n")

    return setup


_LOADED: dict[str, object] = {}


def _hostile_loaded(d: Path, ch: str):
    """The hostile graph as hcg reads it, checked to hold ``ch`` where the setup put it; read
    once per character (the five formats' rows write the same graph; parsing its spec.yaml is
    most of a row's time)."""
    from hcg_core.store import load_graph

    if ch in _LOADED:
        return _LOADED[ch]
    graph = _LOADED[ch] = load_graph(d / "G").graph
    assert sum(ch in e.id for e in graph.edges) == 1
    assert sum(ch in v.name for v in graph.variables) == 1
    assert sum(ch in c.text for c in graph.chunks) == 1
    return graph


def _xml_reads_back(fmt: str, ch: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        import networkx as nx

        from hcg_core.audit.export import split_list
        from hcg_core.safe_text import xml_text

        graph = _hostile_loaded(d, ch)
        path = d / _EXPORT_OUT[fmt]
        back = (
            nx.read_graphml(path, force_multigraph=True) if fmt == "graphml" else nx.read_gexf(path)
        )
        assert sorted(back.nodes) == sorted(xml_text(v.name) for v in graph.variables)
        for v in graph.variables:
            assert split_list(back.nodes[xml_text(v.name)]["entities"]) == [
                xml_text(x) for x in v.entities
            ]
        got = {data["id"]: data for _, _, data in back.edges(data=True)}
        assert len(got) == back.number_of_edges() == len(graph.edges)
        for e in graph.edges:
            data = got[xml_text(e.id)]
            assert data["mechanism"] == xml_text(e.mechanism)
            assert split_list(data["evidence"]) == list(e.evidence)
            assert data["confidence"] == pytest.approx(e.confidence)
            assert data.get("effect", "") == e.effect

    return check


def _mermaid_reads_back(ch: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        import re

        from hcg_core.safe_text import mermaid_text

        graph = _hostile_loaded(d, ch)
        text = (d / "g.mmd").read_text(encoding="utf-8")
        assert ch not in text or ch not in ESCAPED
        hostile = next(v.name for v in graph.variables if ch in v.name)
        assert f'["{mermaid_text(hostile)}"]' in text
        labels = re.findall(r'^  v\d+ -->\|"\((.)\) (\d\.\d\d)"\| v\d+$', text, re.M)
        signs = {"increases": "+", "decreases": "-", "": "?"}
        assert labels == [(signs[e.effect], f"{e.confidence:.2f}") for e in graph.edges]

    return check


_CYPHER_STR = r"'(?:[^'\\]|\\.)*'"


def _cypher_value(literal: str) -> str:
    """A Cypher string literal's value, by Neo4j's escape rules."""
    import re

    short = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'"}
    return re.sub(
        r"\\(u([0-9a-fA-F]{4})|.)",
        lambda m: chr(int(m.group(2), 16)) if m.group(2) else short[m.group(1)],
        literal[1:-1],
    )


def _cypher_reads_back(ch: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        import re

        graph = _hostile_loaded(d, ch)
        script = (d / "g.cypher").read_text(encoding="utf-8")
        assert ch not in script or ch not in ESCAPED
        # One statement per line, each ending in ";": a raw CR or LF would split one.
        lines = script.splitlines()
        assert all(x.endswith(";") or x.startswith("//") for x in lines)
        causes = [x for x in lines if "-[r:CAUSES" in x]
        assert len(causes) == len(graph.edges)
        for e, line in zip(graph.edges, causes, strict=True):
            values = [_cypher_value(x) for x in re.findall(_CYPHER_STR, line)]
            assert values[:4] == [e.source, e.target, e.id, e.mechanism]
            assert values[4] == e.effect and values[5:] == list(e.evidence)
            assert f"r.confidence = {float(e.confidence)!r}," in line
        literals = {_cypher_value(x) for x in re.findall(_CYPHER_STR, script)}
        hostile_entity = next(x for v in graph.variables for x in v.entities if ch in x)
        cited = {cid for e in graph.edges for cid in e.evidence}
        assert hostile_entity in literals
        assert {c.text for c in graph.chunks if c.id in cited} <= literals

    return check


def _csv_reads_back(ch: str) -> Callable[[Path, str], None]:
    def check(d: Path, out: str) -> None:
        import csv

        from hcg_core.audit.export import split_list

        graph = _hostile_loaded(d, ch)

        def rows(name: str) -> list[list[str]]:
            with open(d / "csvout" / name, newline="", encoding="utf-8") as f:
                return list(csv.reader(f))

        edges = rows("edges.csv")
        assert edges[0] == [
            "id",
            "source",
            "target",
            "mechanism",
            "confidence",
            "effect",
            "evidence",
        ]
        assert [r[:4] for r in edges[1:]] == [
            [e.id, e.source, e.target, e.mechanism] for e in graph.edges
        ]
        assert [(float(r[4]), r[5], split_list(r[6])) for r in edges[1:]] == [
            (e.confidence, e.effect, list(e.evidence)) for e in graph.edges
        ]
        variables = rows("variables.csv")[1:]
        assert [(r[0], split_list(r[2])) for r in variables] == [
            (v.name, list(v.entities)) for v in graph.variables
        ]
        cited = {cid for e in graph.edges for cid in e.evidence}
        assert [tuple(r) for r in rows("chunks.csv")[1:]] == [
            (c.id, c.doc_id, c.text) for c in graph.chunks if c.id in cited
        ]
        assert len(rows("evidence.csv")) == graph.evidence_links + 1

    return check


def _export_check(fmt: str, ch: str) -> Callable[[Path, str], None]:
    if fmt in ("graphml", "gexf"):
        return _xml_reads_back(fmt, ch)
    return {"mermaid": _mermaid_reads_back, "cypher": _cypher_reads_back, "csv": _csv_reads_back}[
        fmt
    ](ch)


ROWS += [
    Row(
        f"export-{fmt}-{_code(ch) if len(ch) == 1 else ch}",
        _hostile_graph(ch),
        ["export", "G", "--format", fmt, "--out", out, "--max-edges", "500"],
        0,
        ("wrote",),
        writes=(out,),
        check=_export_check(fmt, ch),
    )
    for ch in EXPORT_CHARS
    for fmt, out in _EXPORT_OUT.items()
]
ROWS += [
    # A graph file holding a lone surrogate (a \udXXX escape) is refused on load, naming the file:
    # hcg never writes one, and hashing the texts would fail on it.
    Row(
        f"graph-lone-surrogate-{_code(ch)}-{fmt}",
        _hostile_graph(ch),
        ["export", "G", "--format", fmt, "--out", _EXPORT_OUT[fmt]],
        2,
        ("spec.yaml", "lone surrogate"),
    )
    for ch in SURROGATES
    for fmt in ("graphml", "csv")
]


# ------------------------------------------------------------ issue 43: the rest
def _manifest_folder(where: str) -> Callable[[Path, Path], None]:
    def setup(d: Path, built: Path) -> None:
        g = _graph(d, built)
        folder = g if where == "pointer" else _files(g)
        (folder / "manifest.json").unlink()
        (folder / "manifest.json").mkdir()
        _set_text(folder / "manifest.json" / "keep.txt", "mine\n")

    return setup


def _formula_cells(g: Path) -> None:
    _edit_json(g / "graph.json", lambda d: d["edges"][0].update(mechanism="=HYPERLINK(1)"))
    _edit_json(g / "graph.json", lambda d: d["edges"][1].update(mechanism="+1"))
    _edit_json(g / "graph.json", lambda d: d["edges"][2].update(mechanism="-2"))
    _edit_json(g / "graph.json", lambda d: d["edges"][3].update(mechanism="@SUM(A1)"))


def _formula_cells_kept(d: Path, out: str) -> None:
    import csv

    with open(d / "csvout" / "edges.csv", newline="", encoding="utf-8") as f:
        mechanisms = [r["mechanism"] for r in csv.DictReader(f)]
    assert mechanisms[:4] == ["=HYPERLINK(1)", "+1", "-2", "@SUM(A1)"]


ROWS += [
    Row(
        "spec-flag-0-bytes",
        lambda d, b: (_corpus(d), _set_text(d / "s.yaml", "")),
        ["build", "docs", "--out", "out", "--spec", "s.yaml", *HASHING],
        2,
        ("s.yaml", "the spec is empty"),
    ),
    Row(
        "spec-flag-only-comments",
        lambda d, b: (_corpus(d), _set_text(d / "s.yaml", "# my spec\n\n   \n")),
        ["build", "docs", "--out", "out", "--spec", "s.yaml", *HASHING],
        2,
        ("s.yaml", "the spec is empty"),
    ),
    Row(
        "graph-spec-0-bytes",
        lambda d, b: _set_text(_files(_graph(d, b)) / "spec.yaml", ""),
        ["query", "G", "What raises stroke risk?"],
        2,
        ("spec.yaml", "the spec is empty"),
    ),
    Row(
        "corrections-version-true",
        lambda d, b: (_graph(d, b), _set_text(d / "c.yaml", "version: true\ncorrections: []\n")),
        ["apply", "G", "c.yaml", "--out", "fixed"],
        2,
        ("c.yaml", "version true is not supported"),
    ),
    Row(
        "corrections-version-1.0",
        lambda d, b: (_graph(d, b), _set_text(d / "c.yaml", "version: 1.0\ncorrections: []\n")),
        ["apply", "G", "c.yaml", "--out", "fixed"],
        2,
        ("c.yaml", "version 1.0 is not supported"),
    ),
    Row(
        "manifest-pointer-is-a-folder",
        _manifest_folder("pointer"),
        ["inspect", "G"],
        2,
        ("manifest.json", "is a folder"),
        absent=("missing",),
    ),
    Row(
        "manifest-of-the-version-is-a-folder",
        _manifest_folder("version"),
        ["query", "G", "What raises stroke risk?"],
        2,
        ("manifest.json", "is a folder"),
        absent=("missing",),
    ),
    Row(
        "csv-formula-like-cells-kept",
        lambda d, b: _formula_cells(_files(_graph(d, b))),
        ["export", "G", "--format", "csv", "--out", "csvout"],
        0,
        ("wrote",),
        writes=("csvout",),
        check=_formula_cells_kept,
    ),
]


def _allowed(rel: str, writes: tuple[str, ...]) -> bool:
    return any(rel == w or rel.startswith(w.rstrip("/") + "/") for w in writes)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row: Row, tmp_path, built, monkeypatch, capsys):
    from hcg_core import safe_files

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(safe_files, "_fault_hook", None)  # restored after rows that set one
    for name, value in row.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    previous = os.umask(0o022)
    try:
        row.setup(tmp_path, built)
        before = snapshot(tmp_path)
        try:
            code = main(row.argv)
        except SystemExit as exc:  # argparse refusals
            code = exc.code
    finally:
        os.umask(previous)
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert code == row.code, output
    for word in row.words:
        assert word.lower() in output.lower(), (word, output)
    for word in row.absent:
        assert word.lower() not in output.lower(), (word, output)
    if row.code != 0:
        assert "Traceback" not in output
        # A short message of its own (argparse prints its usage above it), naming the problem.
        err = captured.err.strip().splitlines()
        first = next(i for i, line in enumerate(err) if line.startswith("hcg "))
        message = "\n".join(err[first:]).lower()
        assert len(err) - first <= row.lines, captured.err
        assert all(w.lower() in message for w in row.words), (row.words, message)
    after = snapshot(tmp_path)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert {k for k in changed if not _allowed(k, row.writes)} == set(), changed
    assert not [p for p in tmp_path.iterdir() if ".hcg-" in p.name]  # no staging left behind
    if row.check is not None:
        row.check(tmp_path, captured.out)


# ------------------------------------------------------------ issue 28: the adapters and apply

BP = "Smoking raises blood pressure. High blood pressure causes stroke."


def test_llamaindex_refuses_repeated_ids_and_empty_inserts(tmp_path, caplog):
    from llama_index.core import Document as LIDocument

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.errors import InputError
    from hcg_core.store import load_graph
    from llama_index_hcg import HCGIndex

    emb = HashingEmbedder()
    with pytest.raises(InputError, match="more than one document.*'a'"):
        HCGIndex.from_documents(
            [LIDocument(text=BP, id_="a"), LIDocument(text="Salt raises it.", id_="a")],
            embed_model=emb,
        )
    with caplog.at_level("WARNING"):
        index = HCGIndex.from_documents(
            [LIDocument(text=BP, id_="a"), LIDocument(text=" ", id_="b")], embed_model=emb
        )
    assert "without text skipped" in caplog.text
    n = len(index.graph.chunks)
    with pytest.raises(InputError, match="no text"):
        index.insert(LIDocument(text=""))
    from llama_index.core.schema import TextNode

    with pytest.raises(InputError, match="more than one node"):
        index.insert_nodes([TextNode(text="Salt.", id_="n"), TextNode(text="Sugar.", id_="n")])
    assert len(index.graph.chunks) == n and len(index.docstore.docs) == n  # nothing stored
    index.save_graph_dir(tmp_path / "g")
    assert len(load_graph(tmp_path / "g").graph.chunks) == n  # its own loader reads it


def test_langchain_refuses_repeated_ids_and_keeps_repeats_without_ids_once(caplog):
    from langchain_core.documents import Document as LCDocument

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.errors import InputError
    from langchain_hcg import HCGRetriever

    emb = HashingEmbedder()
    for chunk in (True, False):
        with pytest.raises(InputError, match="more than one document.*'x'"):
            HCGRetriever.from_documents(
                [LCDocument(page_content=BP, id="x"), LCDocument(page_content="Salt.", id="x")],
                embeddings=emb,
                chunk=chunk,
            )
    with caplog.at_level("WARNING"):
        r = HCGRetriever.from_documents(
            [LCDocument(page_content=BP), LCDocument(page_content=BP), LCDocument(page_content="")],
            embeddings=emb,
            chunk=False,
        )
    assert "repeat another's text exactly: kept once" in caplog.text
    assert "without text skipped" in caplog.text
    assert len(r.graph.chunks) == 1
    with pytest.raises(InputError, match="more than one document"):
        r.add_documents(
            [LCDocument(page_content="Salt.", id="y"), LCDocument(page_content="Sugar.", id="y")]
        )
    with pytest.raises(InputError, match="no text"):
        r.add_documents([LCDocument(page_content="  ")])
    assert len(r.graph.chunks) == 1


def test_apply_validates_the_corrected_graph_once(built, monkeypatch):
    """Counted, not timed: N corrections cost one whole-graph validation (benchmarks/
    apply_corrections.py times 100,000); one that breaks the spec is still refused alone."""
    from hcg_core.audit import corrections as module
    from hcg_core.store import load_graph

    graph = load_graph(built).graph
    calls = {"n": 0}
    real = module.validate_graph

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "validate_graph", counting)
    entries = [
        {"op": "edit_edge", "edge": graph.edges[i % len(graph.edges)].id, "mechanism": f"m{i}"}
        for i in range(500)
    ]
    _, report = module.apply_corrections(graph, entries)
    assert len(report.applied) == 500 and calls["n"] == 1
    # A correction that passes its own checks but breaks the spec (a terminal variable made the
    # source of edges by a merge): the file is re-applied checking each, and only it is refused.
    terminal = {m.name for m in graph.spec.metrics if m.role == "terminal"}
    keep = next((v.name for v in graph.variables if v.metric in terminal), None)
    drop = next((e.source for e in graph.edges if e.source != keep and e.target != keep), None)
    if keep is None or drop is None:
        pytest.skip("the example graph has no terminal variable")
    calls["n"] = 0
    bad = {"op": "merge_variables", "keep": keep, "drop": drop}
    _, report = module.apply_corrections(graph, [*entries[:3], bad, *entries[3:6]])
    assert [r["index"] for r in report.refused] == [4] and len(report.applied) == 6
    assert calls["n"] > 1


# ------------------------------------------------------------ issue 43: adapters and the LLM path


@pytest.fixture(scope="module")
def llama_index():
    from llama_index.core import Document as LIDocument

    from hcg_core.embedders import HashingEmbedder
    from llama_index_hcg import HCGIndex

    return HCGIndex.from_documents([LIDocument(text=BP, id_="bp")], embed_model=HashingEmbedder())


def _llama_calls(index, ch: str) -> dict[str, Callable[[], object]]:
    from llama_index.core import Document as LIDocument
    from llama_index.core.schema import TextNode

    from hcg_core.embedders import HashingEmbedder
    from llama_index_hcg import HCGIndex

    text = f"Smoking {ch} raises stroke risk."
    return {
        "from_documents": lambda: HCGIndex.from_documents(
            [LIDocument(text=text)], embed_model=HashingEmbedder()
        ),
        "insert": lambda: index.insert(LIDocument(text=text)),
        "insert-id": lambda: index.insert(LIDocument(text=BP, id_=f"id{ch}")),
        "insert_nodes": lambda: index.insert_nodes([TextNode(text=text)]),
        "refresh_ref_docs": lambda: index.refresh_ref_docs([LIDocument(text=text, id_="bp")]),
        "update_ref_doc": lambda: index.update_ref_doc(LIDocument(text=text, id_="bp")),
    }


@pytest.mark.parametrize("ch", SURROGATES, ids=_code)
@pytest.mark.parametrize("call", list(_llama_calls(None, "\ud800")))
def test_llamaindex_refuses_a_lone_surrogate_before_hashing(llama_index, call, ch):
    """R3: an InputError from hcg before llama-index-core hashes the text (a UnicodeEncodeError
    there), and nothing lost: update_ref_doc would otherwise delete the old text first."""
    from hcg_core.errors import InputError

    before = [(c.id, c.text) for c in llama_index.graph.chunks]
    docs = dict(llama_index.docstore.docs)
    with pytest.raises(InputError, match="lone surrogate"):
        _llama_calls(llama_index, ch)[call]()
    assert [(c.id, c.text) for c in llama_index.graph.chunks] == before
    assert dict(llama_index.docstore.docs).keys() == docs.keys()


@pytest.mark.parametrize("ch", SURROGATES, ids=_code)
def test_langchain_refuses_a_lone_surrogate(ch):
    from langchain_core.documents import Document as LCDocument

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.errors import InputError
    from langchain_hcg import HCGRetriever

    text = f"Smoking {ch} raises stroke risk."
    with pytest.raises(InputError, match="lone surrogate"):
        HCGRetriever.from_documents([LCDocument(page_content=text)], embeddings=HashingEmbedder())
    r = HCGRetriever.from_documents([LCDocument(page_content=BP)], embeddings=HashingEmbedder())
    with pytest.raises(InputError, match="lone surrogate"):
        r.add_documents([LCDocument(page_content=text)])
    assert [c.text for c in r.graph.chunks] == [BP]


@pytest.mark.parametrize("ch", ["\x00", "\x1b", "\ufffe", "\ud800"], ids=_code)
@pytest.mark.parametrize("adapter", ["llamaindex", "langchain"])
def test_adapters_load_a_graph_whose_spec_holds_a_bad_character(built, tmp_path, adapter, ch):
    """R1 through both adapters: a typed CorruptFileError naming spec.yaml, the files unchanged."""
    from hcg_core.errors import CorruptFileError

    g = tmp_path / "G"
    shutil.copytree(built, g)
    spec = _files(g) / "spec.yaml"
    _set_text(spec, _yaml_with(ch, "domain: x\n", spec.read_text()))
    before = snapshot(tmp_path)
    if adapter == "llamaindex":
        from llama_index_hcg import HCGIndex

        load: Callable[[], object] = lambda: HCGIndex.from_graph_dir(g)  # noqa: E731
    else:
        from langchain_hcg import HCGRetriever

        load = lambda: HCGRetriever.from_persist_dir(g)  # noqa: E731
    with pytest.raises(CorruptFileError, match="spec.yaml") as info:
        load()
    assert ("lone surrogate" if ch == "\ud800" else _code(ch)) in str(info.value)
    assert snapshot(tmp_path) == before


# R2: a reply nesting 100,000 deep, as the HTTP body or as the message content.
DEEP_REPLY = "[" * 100_000 + "]" * 100_000


def _deep_server(where: str):
    """A 127.0.0.1 server answering every completion with ``DEEP_REPLY`` in ``where``."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if where == "body":
        body = DEEP_REPLY.encode()
    else:
        message = {"role": "assistant", "content": DEEP_REPLY}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
        body = json.dumps({**completion, "choices": [choice]}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    return server


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("body", ("not an OpenAI chat completion", "RecursionError")),
        ("content", ("reply never matched the schema", "nesting deeper than 64")),
    ],
)
def test_a_deep_llm_reply_is_a_counted_failure(where, words, tmp_path, monkeypatch, capsys):
    """Exit 3 with failed_build.json (as a 500-deep reply did), no traceback, the corpus and
    outcome files unchanged."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    corpus = REPO / "tests" / "fixtures" / "llm" / "corpus.md"
    shutil.copy(corpus, tmp_path / "corpus.md")
    _set_text(tmp_path / "o.yaml", "outcomes: [FishMortality, DrinkingWaterRisk]\n")
    before = snapshot(tmp_path)
    server = _deep_server(where)
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        code = main(
            ["build", "corpus.md", "--out", "g", "--tier", "XS", "--outcome", "o.yaml"]
            + ["--llm-model", "m", "--llm-base-url", url, "--max-retries", "0", *HASHING]
        )
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 3, err
    assert "Traceback" not in err and all(w in err for w in words), err
    report = json.loads((tmp_path / "g" / ".llm_cache" / "failed_build.json").read_text())
    assert report["stages"]["stage1"]["failed"] > 0
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("g/")} == before


# Exports of an in-memory graph (the API): lone surrogates reach them without a graph file.
@pytest.fixture(scope="module")
def memory_graph(built):
    from hcg_core.store import load_graph

    return load_graph(built).graph


def _with_char(graph, ch: str):
    import dataclasses

    e0 = graph.edges[0]
    edge = dataclasses.replace(e0, id=f"e{ch}1", mechanism=f"raises{ch} it")
    chunks = tuple(
        dataclasses.replace(c, text=c.text + f" and{ch}more") if c.id == e0.evidence[0] else c
        for c in graph.chunks
    )
    return dataclasses.replace(graph, edges=(edge, *graph.edges[1:]), chunks=chunks)


@pytest.mark.parametrize("ch", SURROGATES, ids=_code)
@pytest.mark.parametrize("fmt", list(_EXPORT_OUT))
def test_exports_of_lone_surrogates(memory_graph, tmp_path, fmt, ch):
    """Every format writes UTF-8: the XML formats and CSV as a visible escape, Cypher as its own
    \\uXXXX escape, which Neo4j reads back as the same string."""
    import csv
    import re

    import networkx as nx

    from hcg_core.audit.export import export_graph
    from hcg_core.safe_text import xml_text

    graph = _with_char(memory_graph, ch)
    path = export_graph(graph, fmt, tmp_path / _EXPORT_OUT[fmt], max_edges=500)
    escaped = f"\\u{ord(ch):04x}"
    if fmt == "csv":
        with open(path / "edges.csv", newline="", encoding="utf-8") as f:
            first = list(csv.reader(f))[1]
        assert first[0] == f"e{escaped}1" and first[3] == f"raises{escaped} it"
    elif fmt == "cypher":
        script = path.read_text(encoding="utf-8")
        literals = {_cypher_value(x) for x in re.findall(_CYPHER_STR, script)}
        assert {f"e{ch}1", f"raises{ch} it"} <= literals
    elif fmt == "mermaid":
        assert len(re.findall(r"-->", path.read_text(encoding="utf-8"))) == len(graph.edges)
    else:
        back = (
            nx.read_graphml(path, force_multigraph=True) if fmt == "graphml" else nx.read_gexf(path)
        )
        ids = {d["id"]: d for _, _, d in back.edges(data=True)}
        assert ids[xml_text(f"e{ch}1")]["mechanism"] == f"raises{escaped} it"


def test_xml_exports_refuse_two_names_that_escape_alike():
    """``xml_text`` writes \\x01 as the four characters \\x01: a variable already named so would
    merge with it in GraphML/GEXF, silently. Refused instead, naming both."""
    from hcg_core.audit.export import to_gexf, to_graphml
    from hcg_core.errors import InputError
    from hcg_core.types import CausalEdge, CausalGraph, DomainSpec, Metric, Variable

    a, b = "A\x01", "A\\x01"
    spec = DomainSpec((), (Metric(a), Metric(b)))
    graph = CausalGraph(spec, (Variable(a), Variable(b)), (CausalEdge("e1", a, b),), ())
    for write in (to_graphml, to_gexf):
        with pytest.raises(InputError, match=r"differ only in characters XML cannot hold"):
            write(graph)
