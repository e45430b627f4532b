"""Stored vectors are memory-mapped read-only on load, shared across processes, still validated.

Two worker processes load one graph directory at the same time; each holds ``chunks.npy`` and
``variables.npy`` as read-only ``np.memmap`` arrays, and the kernel's map of each process lists
the same files (so their pages come from one page cache, not one copy per worker). The compiled
arrays the queries use are views of the mapping, not copies. Damaged files still raise the
store's typed errors or are recomputed, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hcg_core.errors import CorruptFileError
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import current_dir, load_graph

REPO = Path(__file__).resolve().parent.parent

WORKER = """
import json, sys
import numpy as np
from hcg_core.store import load_graph
stored = load_graph(sys.argv[1])
out = {
    name: {
        "memmap": isinstance(arr, np.memmap),
        "writeable": bool(arr.flags.writeable),
        "file": str(getattr(arr, "filename", "")),
    }
    for name, arr in (("chunks", stored.chunk_embeddings), ("variables", stored.variable_embeddings))
}
print(json.dumps(out), flush=True)
sys.stdin.readline()  # stay alive (and mapped) until the test has looked at /proc
"""


@pytest.fixture
def saved(tmp_path, graph, embedder):
    CausalGraphRetriever(graph, embedder).save(tmp_path / "g")
    return tmp_path / "g"


def test_loaded_vectors_are_read_only_memmaps_used_without_copy(saved, embedder):
    retriever = CausalGraphRetriever.load(saved, embedder=embedder)
    emb = retriever.chunk_embeddings
    assert isinstance(emb, np.memmap) and not emb.flags.writeable
    assert (
        Path(emb.filename).resolve() == (current_dir(saved) / "embeddings" / "chunks.npy").resolve()
    )
    with pytest.raises(ValueError, match="read-only"):
        emb[0, 0] = 1.0
    # The arrays queries read are views of the mapping: nothing was copied into the process.
    assert np.shares_memory(retriever.compiled.chunk_emb, emb)
    assert np.shares_memory(retriever.ranker.dense.vectors, emb)
    result = retriever.retrieve("smoking and stroke", k=3)
    assert result.chunks  # and it answers queries


@pytest.mark.slow  # starts two worker processes
@pytest.mark.integration
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_two_processes_map_the_same_files(saved):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(saved)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    try:
        reports = [json.loads(p.stdout.readline()) for p in procs]
        maps = [Path(f"/proc/{p.pid}/maps").read_text() for p in procs]
    finally:
        for p in procs:
            p.communicate("\n", timeout=30)
    for report, mapped in zip(reports, maps, strict=True):
        for name in ("chunks", "variables"):
            assert report[name]["memmap"] is True
            assert report[name]["writeable"] is False
            real = str((current_dir(saved) / "embeddings" / f"{name}.npy").resolve())
            assert Path(report[name]["file"]).resolve() == Path(real)
            assert real in mapped  # the file is mapped into this worker's address space
    assert all(p.returncode == 0 for p in procs)


def test_truncated_npy_is_reported_and_its_vectors_recomputed(saved):
    path = current_dir(saved) / "embeddings" / "chunks.npy"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 17])  # a header promising more rows than the file holds
    stored = load_graph(saved)  # the header is checked before anything is mapped
    assert stored.chunk_embeddings is None
    assert any("chunks.npy" in n and "recomputed" in n for n in stored.notes), stored.notes


def test_pickled_npy_is_refused_not_mapped(saved):
    path = current_dir(saved) / "embeddings" / "chunks.npy"
    np.save(path, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(CorruptFileError):
        load_graph(saved)


def test_damaged_values_are_still_found_blockwise(saved, monkeypatch):
    import hcg_core.store as store

    monkeypatch.setattr(store, "_CHECK_ROWS", 2)  # several blocks even on this small graph
    path = current_dir(saved) / "embeddings" / "chunks.npy"
    arr = np.load(path)
    arr[-1, 0] = np.nan  # in the last block
    np.save(path, arr)
    stored = load_graph(saved)
    assert stored.chunk_embeddings is None
    assert any("NaN" in n for n in stored.notes)


def test_other_float_dtypes_load_as_float32_copies(saved):
    path = current_dir(saved) / "embeddings" / "chunks.npy"
    np.save(path, np.load(path).astype(np.float16))
    stored = load_graph(saved)
    assert stored.chunk_embeddings.dtype == np.float32
    assert not isinstance(stored.chunk_embeddings, np.memmap)
