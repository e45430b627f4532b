"""A persisted HCGIndex keeps its vectors in ``.npy`` files beside ``index_store.json``, not base64
inside it; older inline structs still load; damaged files are recomputed with a warning; a
non-local ``fs``, ``to_dict`` and remote index stores keep the vectors inline.

Real LlamaIndex storage classes and real files on disk; the hashing embedder keeps it fast.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path

import fsspec
import numpy as np
import pytest
from llama_index.core import Document, StorageContext, load_index_from_storage
from llama_index.core.storage.index_store.keyval_index_store import KVIndexStore
from llama_index.core.storage.index_store.simple_index_store import SimpleIndexStore
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore
from test_llamaindex_adapter import QUERIES, demo_documents, splitter

from hcg_core import safe_files
from hcg_core.blocks import embedding_texts
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import StoreError
from llama_index_hcg import HCGDefaultEmbedding, HCGIndex, HCGRetriever

# A run of base64 this long in index_store.json would be an inline vector blob.
_BLOB = re.compile(r"[A-Za-z0-9+/]{400,}")


class CountingHashing(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds (to see what a load recomputes)."""

    def __init__(self, dim: int = 1024) -> None:
        super().__init__(dim)
        self.embedded: list[str] = []

    def embed_documents(self, texts):  # noqa: ANN001, ANN201 (the port's signature)
        self.embedded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture
def core_embedder() -> CountingHashing:
    return CountingHashing()


@pytest.fixture
def embed(core_embedder: CountingHashing) -> HCGDefaultEmbedding:
    return HCGDefaultEmbedding(embedder=core_embedder)


@pytest.fixture
def index(embed: HCGDefaultEmbedding) -> HCGIndex:
    return HCGIndex.from_documents(
        demo_documents(), embed_model=embed, transformations=[splitter()]
    )


def results(index: HCGIndex) -> list[list[tuple[str, float]]]:
    retriever = index.as_retriever(similarity_top_k=5)
    return [[(n.node.node_id, round(n.score, 6)) for n in retriever.retrieve(q)] for q in QUERIES]


def stored_struct(folder: Path) -> dict:
    """The HCG struct as index_store.json holds it (one index per folder here)."""
    data = json.loads((folder / "index_store.json").read_text(encoding="utf-8"))
    (entry,) = data["index_store/data"].values()
    return json.loads(entry["__data__"])


def npy_files(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("hcg__*.npy")}


def load(folder: Path, embed: HCGDefaultEmbedding, **kwargs) -> HCGIndex:
    return load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(folder)), embed_model=embed, **kwargs
    )


def test_persist_writes_npy_files_not_base64(
    index: HCGIndex, embed, core_embedder, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    struct = stored_struct(tmp_path)
    assert struct["chunk_embeddings"] == struct["variable_embeddings"] == ""
    assert not _BLOB.search((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    refs = struct["vector_files"]
    assert set(refs) == {"chunks", "variables"}
    assert npy_files(tmp_path) == {r["file"] for r in refs.values()}
    chunks = np.load(tmp_path / refs["chunks"]["file"], allow_pickle=False)
    assert chunks.shape == (len(index.graph.chunks), 1024) == tuple(refs["chunks"]["shape"])
    np.testing.assert_array_equal(chunks, index.core_retriever.chunk_embeddings)

    core_embedder.embedded.clear()
    loaded = load(tmp_path, embed)
    assert core_embedder.embedded == []
    assert results(loaded) == results(index)
    # Memory-mapped read-only from the folder: worker processes share the pages.
    assert isinstance(loaded.core_retriever.chunk_embeddings, np.memmap)
    assert isinstance(loaded.core_retriever.variable_embeddings, np.memmap)


def test_insert_after_load_then_persist_again(
    index: HCGIndex, embed, core_embedder, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    before = npy_files(tmp_path)
    loaded = load(tmp_path, embed)
    core_embedder.embedded.clear()
    loaded.insert(Document(text="Salt raises blood pressure.", id_="salt"))
    assert core_embedder.embedded[0] == "Salt raises blood pressure."  # only the new text
    loaded.storage_context.persist(persist_dir=str(tmp_path))
    refs = stored_struct(tmp_path)["vector_files"]
    # The old chunk file is gone, not left to pile up; every file named exists.
    assert npy_files(tmp_path) == {r["file"] for r in refs.values()}
    assert refs["chunks"]["file"] not in before
    assert refs["chunks"]["shape"][0] == len(loaded.graph.chunks) == len(index.graph.chunks) + 1
    again = load(tmp_path, embed)
    assert results(again) == results(loaded)
    assert "salt" in {c.doc_id for c in again.graph.chunks}
    again.delete_ref_doc("salt")  # deletes work on memory-mapped (read-only) arrays too
    again.storage_context.persist(persist_dir=str(tmp_path))
    assert results(load(tmp_path, embed)) == results(index)


def test_an_unchanged_persist_rewrites_no_vector_file(index: HCGIndex, tmp_path: Path) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("hcg__*.npy")}
    index.storage_context.persist(persist_dir=str(tmp_path))
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("hcg__*.npy")} == stamps


def test_a_failed_persist_leaves_the_previous_one_loadable(
    index: HCGIndex, embed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    expected = results(index)
    index.insert(Document(text="Salt raises blood pressure.", id_="salt"))

    def fail_on_the_json(step: str, path: Path) -> None:
        if path.name == "index_store.json":
            raise OSError("disk full")

    monkeypatch.setattr(safe_files, "_fault_hook", fail_on_the_json)
    with pytest.raises(OSError, match="disk full"):
        index.storage_context.index_store.persist(persist_path=str(tmp_path / "index_store.json"))
    monkeypatch.setattr(safe_files, "_fault_hook", None)
    # The new chunk file was written beside the old one, which the old JSON still names.
    assert results(load(tmp_path, embed)) == expected


def test_old_inline_structs_still_load(
    index: HCGIndex, embed, core_embedder, tmp_path: Path, caplog
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    # Rewrite index_store.json as versions before the .npy files wrote it: base64 inline, no
    # ``vector_files`` key, no .npy beside it.
    data = json.loads((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    (key,) = data["index_store/data"]
    inline = index.storage_context.index_store.to_dict()["index_store/data"][key]
    struct = json.loads(inline["__data__"])
    del struct["vector_files"]
    assert struct["chunk_embeddings"] and struct["variable_embeddings"]
    data["index_store/data"][key] = {**inline, "__data__": json.dumps(struct)}
    (tmp_path / "index_store.json").write_text(json.dumps(data), encoding="utf-8")
    for name in npy_files(tmp_path):
        (tmp_path / name).unlink()

    core_embedder.embedded.clear()
    with caplog.at_level(logging.WARNING):
        loaded = load(tmp_path, embed)
    assert core_embedder.embedded == [] and "recomputed" not in caplog.text
    assert results(loaded) == results(index)
    loaded.storage_context.persist(persist_dir=str(tmp_path))  # now migrated to .npy
    assert stored_struct(tmp_path)["chunk_embeddings"] == ""
    assert len(npy_files(tmp_path)) == 2


def test_an_old_edge_text_cache_is_ignored_then_dropped(
    index: HCGIndex, embed, core_embedder, tmp_path: Path, caplog
) -> None:
    """Structs persisted before the one evidence linker may carry an edge-text cache (inline
    ``edge_texts``/``edge_vectors``, or an ``edges`` .npy file): they load without a warning or
    a recomputation, and the next persist drops the keys and the file."""
    from llama_index_hcg._persist import _write_npy, file_stem

    index.storage_context.persist(persist_dir=str(tmp_path))
    data = json.loads((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    (key,) = data["index_store/data"]
    struct = json.loads(data["index_store/data"][key]["__data__"])
    old = np.ones((2, 4), dtype=np.float32)
    ref = _write_npy(tmp_path, file_stem(key), "edges", old)
    struct["vector_files"]["edges"] = ref
    struct.update(edge_texts=["A -> B: m", "B -> C: n"], edge_vectors="AAAA")
    data["index_store/data"][key]["__data__"] = json.dumps(struct)
    (tmp_path / "index_store.json").write_text(json.dumps(data), encoding="utf-8")
    assert ref["file"] in npy_files(tmp_path)

    core_embedder.embedded.clear()
    with caplog.at_level(logging.WARNING):
        loaded = load(tmp_path, embed)
    assert core_embedder.embedded == [] and caplog.text == ""
    assert results(loaded) == results(index)
    loaded.storage_context.persist(persist_dir=str(tmp_path))
    stored = stored_struct(tmp_path)
    assert "edge_texts" not in stored and "edge_vectors" not in stored
    assert set(stored["vector_files"]) == {"variables", "chunks"}
    assert ref["file"] not in npy_files(tmp_path) and len(npy_files(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["truncated", "flipped", "missing"])
def test_a_damaged_vector_file_is_recomputed_with_a_warning(
    index: HCGIndex, embed, core_embedder, tmp_path: Path, caplog, damage: str
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    path = tmp_path / stored_struct(tmp_path)["vector_files"]["chunks"]["file"]
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flipped":  # same size, readable, wrong bytes: only the sha256 tells
        path.write_bytes(raw[:-4] + bytes(b ^ 0xFF for b in raw[-4:]))
    else:
        path.unlink()
    core_embedder.embedded.clear()
    with caplog.at_level(logging.WARNING):
        loaded = load(tmp_path, embed)
    assert path.name in caplog.text and "recomputed" in caplog.text
    # The chunks were embedded again from the docstore's texts, as a build embeds them (a short
    # block's pieces once, together): nothing is lost.
    assert len(core_embedder.embedded) == len(embedding_texts(index.graph.chunks)[0])
    assert results(loaded) == results(index)
    loaded.storage_context.persist(persist_dir=str(tmp_path))  # writes sound files again
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert results(load(tmp_path, embed)) == results(index)
    assert "recomputed" not in caplog.text


def test_a_store_that_does_not_know_its_folder(index: HCGIndex, embed, tmp_path: Path) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    data = json.loads((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    storage = StorageContext.from_defaults(
        docstore=StorageContext.from_defaults(persist_dir=str(tmp_path)).docstore,
        index_store=SimpleIndexStore.from_dict(data),  # read by hand: no folder
    )
    with pytest.raises(StoreError, match="persist_dir"):
        load_index_from_storage(storage, embed_model=embed)
    loaded = load_index_from_storage(storage, embed_model=embed, persist_dir=tmp_path)
    assert results(loaded) == results(index)
    # The folder given is now the store's: its to_dict() can inline the vectors.
    copy = StorageContext.from_dict(storage.to_dict())
    assert results(load_index_from_storage(copy, embed_model=embed)) == results(index)


def test_a_copied_storage_context_takes_its_files_along(
    index: HCGIndex, embed, core_embedder, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    index.storage_context.persist(persist_dir=str(first))
    StorageContext.from_defaults(persist_dir=str(first)).persist(persist_dir=str(second))
    for path in first.glob("hcg__*.npy"):
        path.unlink()
    assert npy_files(second)
    core_embedder.embedded.clear()
    loaded = load(second, embed)
    assert core_embedder.embedded == []
    assert results(loaded) == results(index)


def test_to_dict_stands_alone(index: HCGIndex, embed, core_embedder, tmp_path: Path) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load(tmp_path, embed)
    storage = StorageContext.from_dict(loaded.storage_context.to_dict())
    for path in tmp_path.glob("hcg__*.npy"):
        path.unlink()
    core_embedder.embedded.clear()
    loaded = load_index_from_storage(storage, embed_model=embed)
    assert core_embedder.embedded == []
    assert results(loaded) == results(index)


def test_a_non_local_fs_keeps_the_vectors_inline(index: HCGIndex, embed) -> None:
    fs = fsspec.filesystem("memory")
    folder = f"/hcg-test-{uuid.uuid4().hex}"
    try:
        index.storage_context.persist(persist_dir=folder, fs=fs)
        data = json.loads(fs.cat_file(f"{folder}/index_store.json"))
        (entry,) = data["index_store/data"].values()
        struct = json.loads(entry["__data__"])
        assert struct["vector_files"] == {} and struct["chunk_embeddings"]
        assert not [p for p in fs.ls(folder, detail=False) if p.endswith(".npy")]
        loaded = load_index_from_storage(
            StorageContext.from_defaults(persist_dir=folder, fs=fs), embed_model=embed
        )
        assert results(loaded) == results(index)
    finally:
        fs.rm(folder, recursive=True)


def test_npy_files_are_read_through_a_non_local_fs(
    index: HCGIndex, embed, core_embedder, tmp_path: Path
) -> None:
    """A folder persisted locally, then copied to another filesystem, loads from there."""
    index.storage_context.persist(persist_dir=str(tmp_path))
    fs = fsspec.filesystem("memory")
    folder = f"/hcg-test-{uuid.uuid4().hex}"
    try:
        for path in tmp_path.iterdir():
            fs.pipe_file(f"{folder}/{path.name}", path.read_bytes())
        core_embedder.embedded.clear()
        loaded = load_index_from_storage(
            StorageContext.from_defaults(persist_dir=folder, fs=fs), embed_model=embed
        )
        assert core_embedder.embedded == []  # read, not recomputed
        assert results(loaded) == results(index)
    finally:
        fs.rm(folder, recursive=True)


def test_a_remote_index_store_keeps_the_vectors_inline(embed, tmp_path: Path) -> None:
    # A KVIndexStore over a key-value store stands for Redis or MongoDB: no folder of its own.
    storage = StorageContext.from_defaults(index_store=KVIndexStore(SimpleKVStore()))
    index = HCGIndex.from_documents(
        demo_documents(), embed_model=embed, transformations=[splitter()], storage_context=storage
    )
    index.insert(Document(text="Salt raises blood pressure.", id_="salt"))
    storage.persist(persist_dir=str(tmp_path))
    assert not npy_files(tmp_path)
    struct = storage.index_store.get_index_struct(index.index_id)
    assert struct.vector_files == {} and struct.chunk_embeddings
    assert results(load_index_from_storage(storage, embed_model=embed)) == results(index)


def test_retriever_persist_keeps_npy_files(index: HCGIndex, embed, tmp_path: Path) -> None:
    retriever = index.as_retriever(similarity_top_k=3)
    retriever.persist(tmp_path)
    assert stored_struct(tmp_path)["chunk_embeddings"] == "" and npy_files(tmp_path)
    loaded = HCGRetriever.from_persist_dir(tmp_path, embed_model=embed)
    assert [n.node.node_id for n in loaded.retrieve(QUERIES[0])] == [
        n.node.node_id for n in retriever.retrieve(QUERIES[0])
    ]


def test_from_graph_dir_keeps_the_mapped_arrays(
    index: HCGIndex, embed, core_embedder, tmp_path: Path
) -> None:
    index.save_graph_dir(tmp_path / "graph")
    core_embedder.embedded.clear()
    wrapped = HCGIndex.from_graph_dir(tmp_path / "graph", embed_model=embed)
    assert core_embedder.embedded == []
    assert isinstance(wrapped.core_retriever.chunk_embeddings, np.memmap)
    # Its struct is written in full when read (deferred, as after an insert).
    assert wrapped.index_struct.chunk_embeddings and wrapped.index_struct.graph_json
    wrapped.storage_context.persist(persist_dir=str(tmp_path / "storage"))
    assert results(load(tmp_path / "storage", embed)) == results(wrapped)


@pytest.mark.parametrize(
    ("entry", "value", "words"),
    [
        (None, [1, 2], "must be a JSON object"),
        ("index_id", 7, "'index_id' must be a string"),
        ("doc_ids", "abc", "'doc_ids' must be a list of strings"),
        ("node_ids", 3, "'node_ids' must be a list of strings"),
        ("config", "x", "'config' must be an object"),
        ("config", {"hybrid": None}, "'config' must be an object"),
        ("config", {"bogus": 1}, "setting RetrievalConfig does not have"),
        ("config", {"paper": {"bogus": 1}}, "setting RetrievalConfig does not have"),
        ("filters", {"filters": 1}, "'filters' are not LlamaIndex MetadataFilters"),
        ("index_id", "no-such-index", "cannot load the LlamaIndex storage"),
    ],
)
def test_a_damaged_retriever_file_is_a_store_error(
    index: HCGIndex, embed, tmp_path: Path, entry, value, words
) -> None:
    """A string ``doc_ids`` was read as its characters; the others raised AttributeError,
    TypeError or pydantic's ValidationError from inside ``from_persist_dir``."""
    index.as_retriever(similarity_top_k=3).persist(tmp_path)
    settings_file = tmp_path / "hcg_retriever.json"
    settings = json.loads(settings_file.read_text())
    if entry is None:
        settings = value
    else:
        settings[entry] = value
    settings_file.write_text(json.dumps(settings))
    with pytest.raises(StoreError, match=re.escape(words)):
        HCGRetriever.from_persist_dir(tmp_path, embed_model=embed)


@pytest.mark.parametrize("name", ["docstore.json", "index_store.json", "graph_store.json"])
@pytest.mark.parametrize("damage", [b"", b'{"docstore/data": {"x', b"[1, 2]"])
def test_from_persist_dir_names_a_cut_storage_file(
    index: HCGIndex, embed, tmp_path: Path, name, damage
) -> None:
    """LlamaIndex's loaders raise JSONDecodeError, TypeError or AttributeError on a cut file."""
    index.as_retriever(similarity_top_k=3).persist(tmp_path)
    (tmp_path / name).write_bytes(damage)
    with pytest.raises(StoreError, match="cannot load the LlamaIndex storage persisted here"):
        HCGRetriever.from_persist_dir(tmp_path, embed_model=embed)


def test_a_persist_that_fails_writing_the_docstore_leaves_the_previous_one_loadable(
    index: HCGIndex, embed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LlamaIndex writes docstore.json in place (open "w", then the JSON): a kill or a full disk
    in the middle left a cut file and no loadable index. HCGIndex's stores write it beside and
    rename it over, as the index store already was."""
    index.storage_context.persist(persist_dir=str(tmp_path))
    expected = results(index)
    before = (tmp_path / "docstore.json").read_bytes()
    index.insert(Document(text="Salt raises blood pressure. " * 50, id_="salt"))
    real_dumps = json.dumps

    def cut_dumps(obj, *args, **kwargs):  # noqa: ANN001, ANN202 (json.dumps' signature)
        text = real_dumps(obj, *args, **kwargs)
        if "docstore/data" in text:
            raise OSError(28, "No space left on device")
        return text

    monkeypatch.setattr(json, "dumps", cut_dumps)
    with pytest.raises(OSError, match="No space left"):
        index.storage_context.persist(persist_dir=str(tmp_path))
    monkeypatch.setattr(json, "dumps", real_dumps)
    assert (tmp_path / "docstore.json").read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("docstore.json.")]
    assert results(load(tmp_path, embed)) == expected


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("report", 1, "'report' is int"),
        ("vector_files", None, "'vector_files' is NoneType"),
        ("vector_files", {"chunks": "x"}, "'vector_files' entries are not objects"),
        ("graph_json", "not json", "graph_json is not JSON"),
        ("graph_json", "[]", "holds no spec object"),
        ("graph_json", '{"spec": {}, "chunk_ids": 5}', "chunk_ids are not a list"),
        ("dim", "x", "'dim' is str"),
        ("dropped_edges", [1], "'dropped_edges' are not strings"),
        ("node_parser", {"chunk_words": None}, "node_parser settings do not read"),
        ("node_parser", "x", "'node_parser' is str"),
    ],
)
def test_a_damaged_hcg_struct_is_a_store_error(
    index: HCGIndex, embed, tmp_path: Path, field, value, words
) -> None:
    """dataclasses_json takes any JSON value for a field: a wrong one failed the load later with
    an AttributeError, a JSONDecodeError or pydantic's ValidationError."""
    index.storage_context.persist(persist_dir=str(tmp_path))
    data = json.loads((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    (key,) = data["index_store/data"]
    struct = json.loads(data["index_store/data"][key]["__data__"])
    struct[field] = value
    data["index_store/data"][key]["__data__"] = json.dumps(struct)
    (tmp_path / "index_store.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StoreError, match=re.escape(words)):
        load(tmp_path, embed).as_retriever().retrieve(QUERIES[0])


def test_a_ledger_that_is_not_json_is_noted_and_the_index_loads(
    index: HCGIndex, embed, tmp_path: Path, caplog
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    data = json.loads((tmp_path / "index_store.json").read_text(encoding="utf-8"))
    (key,) = data["index_store/data"]
    struct = json.loads(data["index_store/data"][key]["__data__"])
    struct["ledger_json"] = "{cut"
    data["index_store/data"][key]["__data__"] = json.dumps(struct)
    (tmp_path / "index_store.json").write_text(json.dumps(data), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        loaded = load(tmp_path, embed)
    assert "edits will link evidence only" in caplog.text
    assert results(loaded) == results(index)
