"""The graph directory: round trips, hand-written directories, and every bad-input error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hcg_core.errors import CorruptFileError, FormatVersionError, MissingFileError, SpecError
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import current_dir, load_graph, read_spec_file, save_graph

HAND = Path(__file__).resolve().parent.parent / "examples" / "hand_graph"


def test_round_trip_with_embeddings(tmp_path, graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder)
    r.save(tmp_path / "g", report={"stages": {"x": {"seconds": 1}}})
    stored = load_graph(tmp_path / "g")
    assert stored.graph == graph
    assert stored.embedder_name == "keyword-test"
    np.testing.assert_array_equal(stored.chunk_embeddings, r.chunk_embeddings)
    np.testing.assert_array_equal(stored.variable_embeddings, r.variable_embeddings)
    assert stored.report == {"stages": {"x": {"seconds": 1}}}
    r2 = CausalGraphRetriever.load(tmp_path / "g", embedder=embedder)
    for q in ("smoking", "diet", "weather"):
        assert r2.retrieve(q, k=4) == r.retrieve(q, k=4)
    assert not list((tmp_path / "g").rglob("*.tmp"))  # atomic writes leave no temp files


def test_missing_or_stale_embeddings_are_recomputed(tmp_path, graph, embedder):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")
    (current_dir(tmp_path / "g") / "embeddings" / "chunks.npy").unlink()
    stored = load_graph(tmp_path / "g")
    assert stored.chunk_embeddings is None and stored.variable_embeddings is not None
    assert any("chunks.npy missing" in n for n in stored.notes)
    # Editing a chunk's text makes its stored vectors stale.
    lines = (current_dir(tmp_path / "g") / "chunks.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["text"] = "edited by hand"
    lines[0] = json.dumps(first)
    (current_dir(tmp_path / "g") / "chunks.jsonl").write_text("\n".join(lines) + "\n")
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "h")
    (current_dir(tmp_path / "h") / "chunks.jsonl").write_text("\n".join(lines) + "\n")
    stale = load_graph(tmp_path / "h")
    assert stale.chunk_embeddings is None and any("stale" in n for n in stale.notes)
    r = CausalGraphRetriever.load(tmp_path / "h", embedder=embedder)
    assert r.graph.chunks[0].text == "edited by hand"
    np.testing.assert_allclose(r.chunk_embeddings[0], embedder.embed_query("edited by hand"))


def test_hand_written_directory_loads_and_queries(embedder):
    stored = load_graph(HAND)
    assert stored.variable_embeddings is None and stored.chunk_embeddings is None
    assert len(stored.graph.edges) == 7 and len(stored.graph.chunks) == 7
    res = CausalGraphRetriever.from_stored(stored, embedder).retrieve(
        "blood pressure and stroke", k=3
    )
    assert len(res.chunks) == 3


def _copy(tmp_path) -> Path:
    d = tmp_path / "g"
    shutil.copytree(HAND, d)
    return d


@pytest.mark.parametrize("name", ["manifest.json", "spec.yaml", "graph.json", "chunks.jsonl"])
def test_missing_file_is_named(tmp_path, name):
    d = _copy(tmp_path)
    (d / name).unlink()
    with pytest.raises(MissingFileError) as err:
        load_graph(d)
    assert err.value.path == d / name and name in str(err.value)


@pytest.mark.parametrize(
    "name,content",
    [
        ("manifest.json", "{not json"),
        ("graph.json", "[1, 2"),
        ("graph.json", '{"edges": [{"source": "BloodPressure"}]}'),
        ("chunks.jsonl", '{"id": "k1"}\n'),
        ("chunks.jsonl", '{"id": "k1", "text": "a"}\n{"id": "k1", "text": "b"}\n'),
        ("spec.yaml", "metrics: [unclosed"),
        ("spec.yaml", b"\xff\xfe\x00binary"),
    ],
)
def test_corrupt_file_is_named(tmp_path, name, content):
    d = _copy(tmp_path)
    (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CorruptFileError) as err:
        load_graph(d)
    assert err.value.path == d / name


def test_corrupt_npy_is_named(tmp_path, graph, embedder):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")
    bad = current_dir(tmp_path / "g") / "embeddings" / "variables.npy"
    bad.write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(CorruptFileError) as err:
        load_graph(tmp_path / "g")
    assert err.value.path == bad


def test_pickled_npy_is_refused(tmp_path, graph, embedder):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")
    path = current_dir(tmp_path / "g") / "embeddings" / "variables.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(CorruptFileError):
        load_graph(tmp_path / "g")


def test_version_mismatch(tmp_path):
    d = _copy(tmp_path)
    (d / "manifest.json").write_text('{"format_version": 99}')
    with pytest.raises(FormatVersionError) as err:
        load_graph(d)
    assert err.value.path == d / "manifest.json" and "99" in str(err.value)


def test_graph_edits_are_validated_against_the_spec(tmp_path):
    d = _copy(tmp_path)
    data = json.loads((d / "graph.json").read_text())
    data["edges"].append({"source": "PatientOutcome", "target": "BloodPressure"})
    (d / "graph.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="terminal") as err:
        load_graph(d)
    assert err.value.path == d / "graph.json"
    data["edges"][-1] = {"source": "Nonexistent(x)", "target": "BloodPressure"}
    (d / "graph.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="undefined variable 'Nonexistent"):
        load_graph(d)
    data["edges"][-1] = {"source": "BloodPressure", "target": "StrokeRisk", "evidence": ["zz"]}
    (d / "graph.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="unknown chunk id 'zz'"):
        load_graph(d)


def test_spec_file_errors_name_file_and_entry(tmp_path):
    p = tmp_path / "spec.yaml"
    p.write_text("dimensions: {d: [a]}\nmetrics: {M(nope): {}}\n")
    with pytest.raises(SpecError) as err:
        read_spec_file(p)
    assert err.value.path == p and err.value.entry == "M" and "nope" in str(err.value)


def test_save_refuses_misaligned_embeddings(tmp_path, graph):
    from hcg_core.errors import StoreError

    with pytest.raises(StoreError):
        save_graph(
            graph, tmp_path / "g", embedder_name="x", chunk_embeddings=np.zeros((1, 3), np.float32)
        )
