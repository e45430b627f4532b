"""One writer at a time, and readers that never see half a graph, with real processes.

Two ``hcg add`` started together must both land (the lock serialises load -> edit -> save); a
reader loading in a loop while another process rebuilds the directory must get, every time, one
of the two graphs whole; a writer that cannot get the lock in time fails with a typed error
naming the holder and changes nothing; loading never writes (a graph on a read-only disk loads).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hcg_core.cli import main
from hcg_core.errors import GraphLockedError
from hcg_core.graph_lock import LOCK_NAME, graph_lock
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import current_dir, load_graph

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "examples" / "corpus"
V1 = REPO / "tests" / "fixtures" / "v1_hand_graph"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "ORT_DISABLE_TELEMETRY": "1"}

# `hcg` with every file write of a save slowed down, so the window between one writer's load and
# its save is long (seconds): two unserialised writers would both edit the same old graph.
SLOW_CLI = textwrap.dedent(
    """
    import sys, time
    from hcg_core import safe_files
    safe_files._fault_hook = lambda step, path: time.sleep(0.15) if step == "write" else None
    from hcg_core.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def graph_dir(tmp_path) -> Path:
    g = tmp_path / "g"
    files = sorted(str(p) for p in CORPUS.glob("*.md"))[:2]
    assert main(["build", *files, "--out", str(g), "--embedder", "hashing", "--quiet"]) == 0
    return g


@pytest.mark.slow  # two real processes
def test_two_adds_at_once_both_land(tmp_path, graph_dir):
    script = tmp_path / "slow_hcg.py"
    script.write_text(SLOW_CLI)
    notes = []
    for name, text in (
        ("salt.md", "Salt raises blood pressure."),
        ("smoke.md", "Smoking causes stroke."),
    ):
        (tmp_path / name).write_text(text + " High blood pressure causes stroke.\n")
        notes.append(tmp_path / name)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), "add", str(graph_dir), str(n), "--embedder", "hashing"],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in notes
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e.decode() for _, e in outs]
    docs = {c.doc_id for c in load_graph(graph_dir).graph.chunks}
    assert {"salt.md", "smoke.md"} <= docs  # no lost update
    assert len(list((graph_dir / "versions").iterdir())) == 2  # older than the replaced: removed


WRITER = textwrap.dedent(
    """
    import dataclasses, sys
    sys.path.insert(0, {tests!r})
    from conftest import KeywordEmbedder, make_graph
    from hcg_core.retrieval import CausalGraphRetriever

    g = make_graph()
    other = dataclasses.replace(g, chunks=tuple(
        dataclasses.replace(c, text=c.text + " (edited)") for c in g.chunks))
    a = CausalGraphRetriever.from_graph(g, KeywordEmbedder())
    b = CausalGraphRetriever.from_graph(other, KeywordEmbedder())
    for i in range(int(sys.argv[2])):
        (a if i % 2 else b).save(sys.argv[1])
    """
)


@pytest.mark.slow  # a real writer process
def test_a_reader_during_rebuilds_always_gets_one_whole_graph(tmp_path, graph, embedder):
    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g)
    edited = tuple(dataclasses.replace(c, text=c.text + " (edited)") for c in graph.chunks)
    wholes = [tuple(c.text for c in graph.chunks), tuple(c.text for c in edited)]
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(tests=str(REPO / "tests")))
    writer = subprocess.Popen([sys.executable, str(script), str(g), "60"], env=ENV)
    loads, seen = 0, set()
    try:
        while writer.poll() is None:
            stored = load_graph(g)  # must never raise
            texts = tuple(c.text for c in stored.graph.chunks)
            assert texts in wholes  # one version, never a mix of two
            assert stored.chunk_embeddings is not None  # its vectors too, not a vanished file
            seen.add(texts)
            loads += 1
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert loads > 10 and len(seen) == 2, (loads, len(seen))  # it did read during the rebuilds


HOLDER = textwrap.dedent(
    """
    import sys, time
    from hcg_core.graph_lock import graph_lock
    with graph_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def _hold_lock(tmp_path: Path, g: Path, seconds: float) -> subprocess.Popen:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(g), str(seconds)], env=ENV, stdout=subprocess.PIPE
    )
    assert proc.stdout.readline().strip() == b"held"
    return proc


def test_a_writer_that_cannot_get_the_lock_fails_naming_the_holder(
    tmp_path, graph_dir, capsys, monkeypatch
):
    (tmp_path / "note.md").write_text("Salt raises blood pressure.\n")
    holder = _hold_lock(tmp_path, graph_dir, 30)
    try:
        before = _snapshot(graph_dir)
        t0 = time.monotonic()
        code = main(["add", str(graph_dir), str(tmp_path / "note.md"), "--lock-timeout", "0.3"])
        waited = time.monotonic() - t0
        err = capsys.readouterr().err
        assert code == 2 and "another process is writing" in err, err
        assert f"pid {holder.pid}" in err and "host" in err and "--lock-timeout" in err
        assert 0.3 <= waited < 10
        monkeypatch.setenv("HCG_LOCK_TIMEOUT", "0.2")  # the library's saves: the environment
        r = CausalGraphRetriever.load(graph_dir)
        with pytest.raises(GraphLockedError) as exc:
            r.save(graph_dir)
        assert str(holder.pid) in exc.value.holder
        assert _snapshot(graph_dir) == before  # nothing written by the refused writers
    finally:
        holder.kill()  # kill -9: the kernel drops its lock
        holder.wait()
    monkeypatch.delenv("HCG_LOCK_TIMEOUT")
    assert main(["add", str(graph_dir), str(tmp_path / "note.md"), "--lock-timeout", "5"]) == 0
    assert "note.md" in {c.doc_id for c in load_graph(graph_dir).graph.chunks}


def test_add_and_remove_read_the_graph_once_and_refuse_a_non_graph_unlocked(
    tmp_path, graph_dir, capsys, monkeypatch
):
    """The graph is loaded once, under the lock; a folder that is not a graph is refused before
    the lock (which would write ``.hcg-lock`` into it), with load_graph's own message."""
    from hcg_core import store

    reads: list[Path] = []
    real = store._load_files
    monkeypatch.setattr(store, "_load_files", lambda d, m: (reads.append(d), real(d, m))[1])
    (tmp_path / "note.md").write_text("Salt raises blood pressure.\n")
    assert main(["add", str(graph_dir), str(tmp_path / "note.md")]) == 0
    assert len(reads) == 1, reads
    assert main(["remove", str(graph_dir), "note.md"]) == 0
    assert len(reads) == 2, reads
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("Not a graph.\n")
    for argv in (["add", str(plain), str(tmp_path / "note.md")], ["remove", str(plain), "x"]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "manifest.json" in err and "missing; a graph directory needs it" in err, err
        assert main([argv[0], str(tmp_path / "none"), *argv[2:]]) == 2
        assert "is not a graph directory (it does not exist)" in capsys.readouterr().err
    assert sorted(p.name for p in plain.iterdir()) == ["notes.md"]  # no lock file written
    assert not (tmp_path / "none").exists() and len(reads) == 2


def test_the_lock_is_reentrant_in_a_thread_and_refuses_bad_timeouts(tmp_path, monkeypatch):
    from hcg_core.errors import ConfigError

    with graph_lock(tmp_path), graph_lock(tmp_path):  # the CLI locks around the save's own lock
        assert (tmp_path / LOCK_NAME).is_file()
    monkeypatch.setenv("HCG_LOCK_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="HCG_LOCK_TIMEOUT"), graph_lock(tmp_path / "x"):
        pass
    with pytest.raises(SystemExit):
        main(["add", str(tmp_path), "x.md", "--lock-timeout", "nan"])


def _writes_under(root: Path):
    """Start recording every file-system write under ``root`` (an audit hook); returns the list."""
    seen: list[str] = []
    root_s = str(root.resolve())
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def hook(event: str, args: tuple) -> None:
        if not _writes_under.active:
            return
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & write_flags
            )
            if writing and isinstance(path, (str, bytes)) and os.fsdecode(path).startswith(root_s):
                seen.append(f"open {path}")
        elif event in ("os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.replace"):
            paths = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, Path))]
            if any(p.startswith(root_s) for p in paths):
                seen.append(f"{event} {args}")

    if not getattr(_writes_under, "installed", False):
        sys.addaudithook(lambda e, a: _writes_under.hook(e, a))  # hooks cannot be removed
        _writes_under.installed = True
    _writes_under.hook = hook
    return seen


_writes_under.active = False


@pytest.mark.parametrize("which", ["v2", "v1"])
def test_readers_never_write(tmp_path, graph_dir, which, capsys):
    """Load, query and inspect open nothing for writing: a graph on a read-only disk loads."""
    g = graph_dir if which == "v2" else shutil.copytree(V1, tmp_path / "v1")
    seen = _writes_under(g)
    _writes_under.active = True
    try:
        load_graph(g)
        CausalGraphRetriever.load(g).retrieve("What raises stroke risk?", k=2)
        assert main(["inspect", str(g)]) == 0
        assert main(["query", str(g), "stroke", "--embedder", "hashing"]) == 0
    finally:
        _writes_under.active = False
    assert seen == []
    _writes_under.active = True  # the hook itself sees a write (so the empty list means something)
    try:
        (g / "probe.txt").write_text("x")
    finally:
        _writes_under.active = False
    assert seen and "probe.txt" in seen[0]


def test_a_v1_graph_is_read_as_it_is_and_a_save_turns_it_into_a_version(tmp_path, embedder):
    v1 = shutil.copytree(V1, tmp_path / "v1")
    assert json.loads((v1 / "manifest.json").read_text())["format_version"] == 1
    stored = load_graph(v1)
    assert current_dir(v1) == v1 and len(stored.graph.edges) == 7
    (v1 / "notes.txt").write_text("mine\n")
    CausalGraphRetriever.from_stored(stored, embedder).save(v1)
    pointer = json.loads((v1 / "manifest.json").read_text())
    assert pointer["format_version"] == 2 and pointer["current"] == "versions/1"
    assert sorted(p.name for p in v1.iterdir()) == [
        LOCK_NAME,
        "manifest.json",
        "notes.txt",
        "versions",
    ]
    assert load_graph(v1).graph == stored.graph
