"""Crash-safe saves: a failure or a kill at every write of a rebuild leaves a loadable graph.

``hcg_core.safe_files._fault_hook`` is called before every file write, the publish (the pointer
``manifest.json`` naming the new version) and the removal of the previous version. The tests fail
each step in turn (a full disk, in process) and kill the process at chosen steps (``os._exit``,
in a subprocess), then check that the graph directory loads, holds the old graph (before the
pointer moved) or the new one (after it), and that the user's other files (the LLM cache, a note)
are untouched.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hcg_core import safe_files, store
from hcg_core.errors import StoreError
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import check_output_dir, is_graph_dir, load_graph, save_graph

REPO = Path(__file__).resolve().parent.parent


def _digest_tree(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every regular file below ``root`` (links by their target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[p.relative_to(root).as_posix()] = "link:" + os.readlink(p)
        elif p.is_file():
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _user_files(directory: Path) -> dict[str, str]:
    """The files a user or the LLM cache keeps in a graph directory, which a rebuild must keep."""
    return {
        k: v
        for k, v in _digest_tree(directory).items()
        if k.startswith(".llm_cache/") or k == "notes.txt"
    }


@pytest.fixture
def two_graphs(graph, embedder):
    """The fixture graph and an edited version of it (one chunk's text changed)."""
    chunks = list(graph.chunks)
    chunks[0] = dataclasses.replace(chunks[0], text="edited: smoking and pressure")
    return (
        CausalGraphRetriever.from_graph(graph, embedder),
        CausalGraphRetriever.from_graph(dataclasses.replace(graph, chunks=tuple(chunks)), embedder),
    )


def _old_graph_dir(tmp_path: Path, retriever) -> Path:
    g = tmp_path / "g"
    # Saved twice: a graph with the version the current one replaced, which the next save removes.
    retriever.save(g, report={"built": "old"})
    retriever.save(g, report={"built": "old"})
    (g / ".llm_cache" / "ab").mkdir(parents=True)
    (g / ".llm_cache" / "ab" / "abcd.json").write_text('{"reply": "paid for"}')
    (g / "notes.txt").write_text("my notes about this graph\n")
    return g


def _count_steps(tmp_path: Path, old, new) -> list[tuple[str, str]]:
    g = _old_graph_dir(tmp_path / "count", old)
    steps: list[tuple[str, str]] = []
    safe_files._fault_hook = lambda step, path: steps.append((step, path.name))
    try:
        new.save(g)
    finally:
        safe_files._fault_hook = None
    return steps


def test_a_failure_at_every_step_leaves_a_loadable_graph_and_keeps_user_files(tmp_path, two_graphs):
    old, new = two_graphs
    steps = _count_steps(tmp_path, old, new)
    kinds = [s for s, _ in steps]
    # spec, graph, chunks, 2 vector files, the version's manifest; the publish (the pointer
    # manifest.json's write); the previous version's removal. User files never move.
    assert kinds.count("write") == 7 and kinds.count("swap") == 1
    assert kinds.count("move") == 0 and kinds.count("remove") == 1
    publish_at = kinds.index("swap") + 1  # the pointer's write
    for i, (step, name) in enumerate(steps):
        base = tmp_path / f"case{i}"
        g = _old_graph_dir(base, old)
        before_user = _user_files(g)
        before_all = _digest_tree(g)
        calls = {"n": 0}

        def hook(s, p, i=i, calls=calls):
            if calls["n"] == i:
                raise OSError(errno.ENOSPC, "No space left on device", str(p))
            calls["n"] += 1

        safe_files._fault_hook = hook
        try:
            with pytest.raises(StoreError) as err:
                new.save(g)
        finally:
            safe_files._fault_hook = None
        stored = load_graph(g)
        if i <= publish_at:
            # Failed before the pointer moved: the old graph, byte for byte, and no leftovers.
            assert "No space left" in str(err.value) and "unchanged" in str(err.value)
            assert _digest_tree(g) == before_all, (step, name)
            assert stored.graph == old.graph and stored.report == {"built": "old"}
            assert sorted(p.name for p in base.iterdir()) == ["g"], (step, name)
        else:
            # Failed while removing the previous version: the new graph is in place, the next
            # save removes what is left.
            assert stored.graph == new.graph and stored.report is None
            assert "next save" in str(err.value)
            assert _user_files(g) == before_user, (step, name)
            new.save(g)
            # What was left is gone: the current version and the one it replaced remain.
            assert len(list((g / "versions").iterdir())) == 2


KILL_SCRIPT = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {tests!r})
    from conftest import KeywordEmbedder, make_graph
    import dataclasses
    from hcg_core import safe_files, store
    from hcg_core.retrieval import CausalGraphRetriever

    g = make_graph()
    chunks = list(g.chunks)
    chunks[0] = dataclasses.replace(chunks[0], text="edited: smoking and pressure")
    new = CausalGraphRetriever.from_graph(dataclasses.replace(g, chunks=tuple(chunks)),
                                          KeywordEmbedder())
    seen = []
    def hook(step, path):
        seen.append(step)
        if len(seen) == int(sys.argv[2]):
            os._exit(137)  # killed: no cleanup, no finally
    safe_files._fault_hook = hook
    new.save(sys.argv[1])
    """
)


@pytest.mark.slow  # kills a real subprocess at each step
@pytest.mark.parametrize("kill_at", [1, 4, 6, 7, 8, 9])
def test_a_killed_rebuild_leaves_a_loadable_graph(tmp_path, two_graphs, kill_at):
    """Killed at the 1st/4th/6th write, at the publish, at the pointer's write or just after
    it, while the previous version is removed (steps counted from 1)."""
    old, new = two_graphs
    g = _old_graph_dir(tmp_path, old)
    before_user = _user_files(g)
    script = tmp_path / "kill.py"
    script.write_text(KILL_SCRIPT.format(tests=str(REPO / "tests")))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(script), str(g), str(kill_at)], env=env, capture_output=True
    )
    assert proc.returncode == 137, proc.stderr.decode()
    stored = load_graph(g)
    assert stored.graph == (old.graph if kill_at <= 8 else new.graph)
    assert _user_files(g) == before_user
    # The next save (the killed one's lock died with it) removes its leftovers and succeeds.
    new.save(g)
    assert load_graph(g).graph == new.graph
    kept = sorted((g / "versions").iterdir())
    assert len(kept) <= 2 and all(load_graph(v).graph in (old.graph, new.graph) for v in kept)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert _user_files(g) == before_user


def test_files_get_the_umask_and_keep_a_hand_set_mode(tmp_path, two_graphs):
    old, new = two_graphs
    previous = os.umask(0o022)
    try:
        old.save(tmp_path / "g")
        modes = {
            p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
            for p in (tmp_path / "g").rglob("*")
        }
        v = store.current_dir(tmp_path / "g").relative_to(tmp_path).as_posix()
        assert modes["g/manifest.json"] == 0o644 and modes[f"{v}/embeddings/chunks.npy"] == 0o644
        assert modes[f"{v}/embeddings"] == 0o755 and modes[v] == 0o755
        assert stat.S_IMODE((tmp_path / "g").stat().st_mode) == 0o755
        # a hand-set mode survives a rebuild
        os.chmod(store.current_dir(tmp_path / "g") / "graph.json", 0o664)
        new.save(tmp_path / "g")
        cur = store.current_dir(tmp_path / "g")
        assert stat.S_IMODE((cur / "graph.json").stat().st_mode) == 0o664
        assert stat.S_IMODE((cur / "spec.yaml").stat().st_mode) == 0o644
        os.umask(0o077)
        safe_files.atomic_write_text(tmp_path / "private.txt", "x")
        assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600
    finally:
        os.umask(previous)


def test_save_refuses_a_folder_that_is_not_a_graph_unless_forced(tmp_path, two_graphs):
    old, _ = two_graphs
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "graph.json").write_text("my own graph.json\n")
    with pytest.raises(StoreError, match="not an hcg graph directory"):
        old.save(mine)
    assert (mine / "graph.json").read_text() == "my own graph.json\n"
    old.save(tmp_path / "empty")  # a new or empty folder is fine
    assert is_graph_dir(tmp_path / "empty")
    save_graph(old.graph, mine, force=True)
    assert load_graph(mine).graph == old.graph


def test_save_writes_no_file_through_a_link_out_of_the_directory(tmp_path, two_graphs):
    old, new = two_graphs
    g = tmp_path / "g"
    old.save(g)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep\n")
    emb = store.current_dir(g) / "embeddings"
    for f in emb.iterdir():
        f.unlink()
    emb.rmdir()
    emb.symlink_to(elsewhere)
    with pytest.raises(StoreError, match="outside the graph directory"):
        load_graph(g)  # the manifest's vector files resolve outside: refused
    new.save(g)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    assert not (store.current_dir(g) / "embeddings").is_symlink()
    np.testing.assert_array_equal(load_graph(g).chunk_embeddings, new.chunk_embeddings)


def test_check_output_dir_refusals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "afile").write_text("x")
    cases = {
        "": "empty",
        ".": "current folder",
        "..": "current folder",
        "docs": "is the input folder",
        "docs/hcg_graph": "inside the input",
        "afile": "not a directory",
        "afile/g": "cannot write",
    }
    for out, words in cases.items():
        with pytest.raises(StoreError, match=words):
            check_output_dir(out, inputs=["docs"])
    assert check_output_dir("fresh/deeper", inputs=["docs"]) == tmp_path / "fresh" / "deeper"
    assert not list((tmp_path / "fresh").iterdir())  # the probe file is gone


def test_recorded_zero_rows_load_and_extra_ones_are_recomputed(tmp_path, graph):
    """The hashing embedder maps a text without content words to zero: legitimate, recorded."""
    from hcg_core.embedders import HashingEmbedder

    chunks = list(graph.chunks)
    chunks[0] = dataclasses.replace(chunks[0], text="the of and")  # stopwords only
    g2 = dataclasses.replace(graph, chunks=tuple(chunks))
    r = CausalGraphRetriever.from_graph(g2, HashingEmbedder(64))
    assert not r.chunk_embeddings[0].any()
    r.save(tmp_path / "g")
    stored = load_graph(tmp_path / "g")
    assert stored.chunk_embeddings is not None and not stored.notes
    arr = np.load(store.current_dir(tmp_path / "g") / "embeddings" / "chunks.npy")
    arr[1] = 0.0
    np.save(store.current_dir(tmp_path / "g") / "embeddings" / "chunks.npy", arr)
    stored = load_graph(tmp_path / "g")
    assert stored.chunk_embeddings is None
    assert any("2 all-zero rows (1 recorded" in n for n in stored.notes)
    arr[1] = 3.0  # finite but not unit length: damaged too
    np.save(store.current_dir(tmp_path / "g") / "embeddings" / "chunks.npy", arr)
    assert any("not unit length" in n for n in load_graph(tmp_path / "g").notes)


@pytest.mark.parametrize("name", ["manifest.json", "spec.yaml", "graph.json", "chunks.jsonl"])
def test_every_graph_file_must_resolve_inside_the_directory(tmp_path, graph, embedder, name):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "saved")
    g = store.current_dir(tmp_path / "saved")  # a version folder: flat files, as by hand
    outside = tmp_path / f"outside-{name}"
    (g / name).rename(outside)
    (g / name).symlink_to(outside)
    with pytest.raises(StoreError, match="outside the graph directory"):
        load_graph(g)
    (g / name).unlink()
    (g / name).symlink_to(Path("..") / outside.name)
    with pytest.raises(StoreError, match="outside the graph directory"):
        load_graph(g)  # a relative link climbing out is refused the same way
    (g / name).unlink()
    outside.rename(g / f"real-{name}")
    (g / name).symlink_to(f"real-{name}")  # a link that stays inside is fine
    assert load_graph(g).graph == graph


def test_a_report_link_out_or_a_list_is_ignored_with_a_note(tmp_path, graph, embedder):
    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g, report={"ok": 1})
    g = store.current_dir(g)
    (tmp_path / "elsewhere.json").write_text('{"secret": 1}')
    (g / "build_report.json").unlink()
    (g / "build_report.json").symlink_to(tmp_path / "elsewhere.json")
    stored = load_graph(g)
    assert stored.report is None and "outside the graph directory" in " ".join(stored.notes)
    (g / "build_report.json").unlink()
    (g / "build_report.json").write_text("[1, 2]")
    stored = load_graph(g)
    assert stored.report is None and "not an object" in " ".join(stored.notes)


@pytest.mark.parametrize(
    "inside", ["sub", "versions/1", "versions/9", "embeddings", "versions/1/embeddings"]
)
def test_an_output_inside_a_graph_directory_is_refused_and_the_graph_untouched(
    tmp_path, two_graphs, inside, monkeypatch
):
    """A save (or ``hcg build --out``) into a folder of an existing graph directory would write
    a pointer over a version folder's manifest or a version the next save of the graph removes."""
    old, new = two_graphs
    g = tmp_path / "g"
    old.save(g)
    before = _digest_tree(g)
    out = g / inside
    with pytest.raises(StoreError, match="inside the graph directory .*outside it"):
        check_output_dir(out)
    with pytest.raises(StoreError, match="inside the graph directory"):
        save_graph(new.graph, out, force=True)
    assert _digest_tree(g) == before
    monkeypatch.chdir(tmp_path)
    from hcg_core import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Smoking raises blood pressure. " * 5)
    rc = cli.main(["build", "docs", "--out", str(out), "--embedder", "hashing", "--quiet"])
    assert rc != 0
    assert _digest_tree(g) == before
    assert load_graph(g).graph.chunks == old.graph.chunks


@pytest.mark.parametrize("stray", ["\u00b2", "\u0663", "9" * 40, "07x"])
def test_a_stray_folder_under_versions_does_not_fail_the_next_save(tmp_path, two_graphs, stray):
    """``"²".isdigit()`` is true and ``int("²")`` raises: every save of the graph failed."""
    old, new = two_graphs
    g = tmp_path / "g"
    old.save(g)
    (g / "versions" / stray).mkdir()
    new.save(g)
    assert load_graph(g).graph.chunks == new.graph.chunks
    assert store.current_dir(g).name == "2"


@pytest.mark.parametrize("flat", [True, False])
def test_a_versions_link_out_of_the_directory_is_refused_and_its_target_kept(
    tmp_path, two_graphs, flat
):
    """A flat graph with ``versions`` linked to another folder: the save wrote its version there
    and its tidy-up deleted that folder's own files."""
    old, new = two_graphs
    g, elsewhere = tmp_path / "g", tmp_path / "elsewhere"
    old.save(g)
    if flat:  # a version folder copied out: a flat graph directory
        flat_dir = tmp_path / "flat"
        (store.current_dir(g)).rename(flat_dir)
        g = flat_dir
    else:
        (g / "versions").rename(tmp_path / "moved")
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine\n")
    (elsewhere / "precious").mkdir()
    (elsewhere / "precious" / "data.txt").write_text("mine too\n")
    (g / "versions").symlink_to(elsewhere)
    before = _digest_tree(elsewhere)
    # A format 2 graph's pointer already resolves outside (refused on reading it).
    words = "versions is a link or a file" if flat else "outside the graph directory"
    with pytest.raises(StoreError, match=words):
        new.save(g)
    assert _digest_tree(elsewhere) == before
