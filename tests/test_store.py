"""The graph directory: round trips, hand-written directories, and every bad-input error."""

from __future__ import annotations

import dataclasses
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


# ---------------------------------------------------------------- format 2: versions and checks


def test_a_save_publishes_a_version_folder_through_the_manifest(tmp_path, graph, embedder):
    g = tmp_path / "g"
    r = CausalGraphRetriever.from_graph(graph, embedder)
    r.save(g)
    r.save(g)
    pointer = json.loads((g / "manifest.json").read_text())
    assert pointer == {"format": "hcg-graph", "format_version": 2, "current": "versions/2"}
    assert current_dir(g) == g / "versions" / "2"
    # The replaced version stays for a reader that began on it; the one before goes.
    assert sorted(p.name for p in (g / "versions").iterdir()) == ["1", "2"]
    r.save(g)
    assert sorted(p.name for p in (g / "versions").iterdir()) == ["2", "3"]
    # The version folder is a flat graph directory of its own (copy it out, it loads).
    assert load_graph(current_dir(g)).graph == graph
    assert load_graph(g).path == g


def test_hand_edits_go_to_the_current_version_and_spec_paths_still_work(tmp_path, graph, embedder):
    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g)
    data = json.loads((current_dir(g) / "graph.json").read_text())
    data["edges"] = data["edges"][1:]
    (current_dir(g) / "graph.json").write_text(json.dumps(data))
    assert len(load_graph(g).graph.edges) == len(graph.edges) - 1
    # `hcg build --spec G/spec.yaml`, the docs' rebuild story, reads the current version's spec.
    assert read_spec_file(g / "spec.yaml") == graph.spec


@pytest.mark.parametrize("current", ["versions/../../x", "../g", "versions/1/..", 3, "elsewhere/1"])
def test_a_pointer_out_of_the_versions_is_refused(tmp_path, graph, embedder, current):
    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g)
    pointer = json.loads((g / "manifest.json").read_text())
    pointer["current"] = current
    (g / "manifest.json").write_text(json.dumps(pointer))
    with pytest.raises(CorruptFileError, match="current"):
        load_graph(g)


def test_a_graph_that_does_not_read_back_is_not_published(tmp_path, graph, embedder, monkeypatch):
    """The writer's own bug (here: raw U+2028 in chunks.jsonl and a reader that splits there)
    is caught by re-reading the written files: the command fails and the old graph stays."""
    from hcg_core import store

    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g)
    before = sorted(p.relative_to(g).as_posix() for p in g.rglob("*"))
    pointer = (g / "manifest.json").read_bytes()
    chunks = list(graph.chunks)
    chunks[0] = dataclasses.replace(chunks[0], text="line one\u2028line two")
    edited = dataclasses.replace(graph, chunks=tuple(chunks))
    monkeypatch.setattr(store, "_LINE_BREAKS", ())  # the old, unescaped writer
    monkeypatch.setattr(
        store, "_read_text", lambda path, *a, **kw: "\n".join(Path(path).read_text().splitlines())
    )
    with pytest.raises(CorruptFileError, match="nothing was published"):
        CausalGraphRetriever.from_graph(edited, embedder).save(g)
    assert (g / "manifest.json").read_bytes() == pointer
    assert sorted(p.relative_to(g).as_posix() for p in g.rglob("*")) == before
    monkeypatch.undo()
    assert load_graph(g).graph == graph


def test_text_that_json_or_utf8_cannot_hold_is_refused_before_writing(tmp_path, graph, embedder):
    from hcg_core.errors import StoreError

    for change, words in (
        ({"metadata": {"score": float("nan")}}, "nan or infinity"),
        ({"text": "lone \ud800 surrogate"}, "lone surrogate"),
    ):
        chunks = list(graph.chunks)
        chunks[1] = dataclasses.replace(chunks[1], **change)
        bad = dataclasses.replace(graph, chunks=tuple(chunks))
        with pytest.raises(StoreError) as err:
            save_graph(bad, tmp_path / "g")
        assert words in str(err.value).lower() and repr(chunks[1].id) in str(err.value)
        assert not (tmp_path / "g").exists()


def test_every_unicode_line_break_round_trips(tmp_path, graph, embedder):
    odd = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj\r\nk\x9b\x00l"
    chunks = list(graph.chunks)
    chunks[0] = dataclasses.replace(chunks[0], text=odd, metadata={"note": odd})
    g2 = dataclasses.replace(graph, chunks=tuple(chunks))
    CausalGraphRetriever.from_graph(g2, embedder).save(tmp_path / "g")
    back = load_graph(tmp_path / "g").graph.chunks[0]
    assert back.text == odd and back.metadata == {"note": odd}
    lines = (current_dir(tmp_path / "g") / "chunks.jsonl").read_text().splitlines()
    assert len(lines) == len(graph.chunks)  # even str.splitlines sees one line per chunk


@pytest.mark.parametrize("fmt", ["other", 5, None])
def test_a_manifest_of_another_format_is_refused_as_is_graph_dir_says(tmp_path, fmt):
    """``load_graph`` and ``is_graph_dir`` agree: a ``format`` other than ``hcg-graph`` is not a
    graph directory (a typed error naming both formats), and a manifest without one is."""
    from hcg_core.graph_dir import is_graph_dir

    d = _copy(tmp_path)
    manifest = json.loads((d / "manifest.json").read_text())
    manifest.pop("format", None)
    (d / "manifest.json").write_text(json.dumps(manifest))
    assert is_graph_dir(d) and load_graph(d).graph.edges  # no "format": hcg's, read
    (d / "manifest.json").write_text(json.dumps({**manifest, "format": fmt}))
    assert not is_graph_dir(d)
    with pytest.raises(FormatVersionError, match="expected 'hcg-graph'") as err:
        load_graph(d)
    assert err.value.path == d / "manifest.json" and repr(fmt) in str(err.value)


def test_a_version_folder_of_another_format_is_refused(tmp_path, graph, embedder):
    g = tmp_path / "g"
    CausalGraphRetriever.from_graph(graph, embedder).save(g)
    inner = current_dir(g) / "manifest.json"
    inner.write_text(json.dumps({**json.loads(inner.read_text()), "format": "other"}))
    with pytest.raises(FormatVersionError, match="'other', expected 'hcg-graph'"):
        load_graph(g)
