"""Where a persisted ``HCGIndex`` keeps its vectors: ``.npy`` files beside ``index_store.json``.

LlamaIndex persists an index struct as JSON through the index store. ``HCGIndex`` keeps its graph
there, but when the storage context is persisted to a local folder its vectors (chunks and
variables) go to ``hcg__<index id>__<kind>__<sha256 prefix>.npy`` files in that folder,
and the struct holds only a reference to each (file name, shape, dtype, sha256 of the bytes).
Names carry the content's hash, so a persist never overwrites a file that the previous
``index_store.json`` still names: a crash at any point leaves a loadable folder; files no longer
named are removed after the new JSON is in place.

In memory, in ``to_dict()``, through a non-local ``fs`` and in remote index stores (Redis,
MongoDB...: no folder) the vectors stay inline, base64 float32, as older versions wrote them; those
structs still load.

LlamaIndex does not tell an index which folder its store was read from, so importing
``llama_index_hcg`` wraps ``SimpleIndexStore.from_persist_path`` (which ``from_persist_dir`` and
``StorageContext.from_defaults(persist_dir=...)`` call) to remember it on the store instance when
the store holds an HCG struct. Each such store instance (and each one an ``HCGIndex`` uses) gets
its reading and persisting methods wrapped, on that instance only: deferred structs are written
first, and ``persist`` writes the ``.npy`` files.

The struct must be JSON (never pickle), so the graph is written as plain data
(``graph_to_dict``; chunk texts stay in the docstore) and inline vectors as base64 float32
(``encode_matrix``): pure functions, no I/O.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import logging
import os
import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.data_structs.data_structs import IndexStruct
from llama_index.core.storage.index_store.simple_index_store import SimpleIndexStore
from llama_index.core.storage.index_store.types import DEFAULT_PERSIST_PATH
from llama_index.core.storage.index_store.utils import index_struct_to_json, json_to_index_struct
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore

from hcg_core import store as core_store
from hcg_core.errors import HCGError, StoreError
from hcg_core.safe_files import atomic_write_bytes, atomic_write_text
from hcg_core.spec.yaml_io import spec_from_dict, spec_to_dict
from hcg_core.types import CausalGraph, Chunk

logger = logging.getLogger(__name__)

# The struct's inline (base64) field for each kind of vectors.
INLINE_FIELDS = {
    "variables": "variable_embeddings",
    "chunks": "chunk_embeddings",
}
FILE_PREFIX = "hcg__"
_DTYPE = "<f4"
# A referenced name must be one of ours: no folders, no dot files, nothing a tampered JSON could
# use to read elsewhere.
_FILE_NAME = re.compile(r"hcg__[A-Za-z0-9_-]+__(variables|chunks)__[0-9a-f]{16}\.npy")
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Digits of the content's sha256 in a file name (64 bits: collisions are not a concern).
_NAME_DIGEST_CHARS = 16
# The struct type string persisted in index_store.json. LlamaIndex looks it up in its registry
# before any of this package's code runs, and a process that has not imported llama_index_hcg
# fails there with ``KeyError: '<this string>'``: so the string itself says what to do. The
# LlamaIndex registries have no plugin hook (no entry points) that would register it unasked.
STRUCT_TYPE = "hcg_causal_graph (import llama_index_hcg before load_index_from_storage)"


@dataclass
class HCGIndexStruct(IndexStruct):
    """The JSON-persisted state of an HCGIndex: the graph as a JSON string and its vectors,
    either base64 float32 inline or (persisted to a local folder) ``.npy`` files named in
    ``vector_files``.

    ``variable_embeddings`` rows follow the graph's ``variables``, ``chunk_embeddings`` rows its
    ``chunk_ids``; both were made by the embedder named ``embedder_name`` and are reused on
    load only with that same embedder (otherwise recomputed).
    """

    graph: dict[str, Any] = field(default_factory=dict)  # read from older persisted indexes
    # The graph as one JSON string: dataclasses_json copies a str in O(1) Python steps, where a
    # nested dict costs one per item on every struct write (each insert writes the struct).
    graph_json: str = ""
    embedder_name: str = ""
    dim: int = 0
    variable_embeddings: str = ""
    chunk_embeddings: str = ""
    dropped_edges: list[str] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    # The offline builder's support ledger (hcg_core.graph_build.incremental) as JSON, so edits
    # after a reload still re-extract edges; empty for LLM-built graphs.
    ledger_json: str = ""
    # Kinds ("variables", "chunks") kept in .npy files beside index_store.json instead of inline:
    # {"file", "shape", "dtype", "sha256"} each (llama_index_hcg._persist). Structs persisted
    # before the one evidence linker may also hold an edge-text cache ("edge_texts",
    # "edge_vectors", an "edges" file): nothing reads it any more, and a persist drops it.
    vector_files: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The HCGNodeParser settings (chunk_words, overlap_words) when from_documents chunked with
    # hcg's chunker by default: a reloaded index's inserts then chunk the same way.
    node_parser: dict[str, Any] = field(default_factory=dict)

    def graph_data(self) -> dict[str, Any]:
        try:
            data = json.loads(self.graph_json) if self.graph_json else self.graph
        except ValueError as exc:
            raise _damaged(f"its graph_json is not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("spec"), dict):
            raise _damaged("its graph holds no spec object")
        chunk_ids = data.get("chunk_ids", [])
        if not (isinstance(chunk_ids, list) and all(isinstance(c, str) for c in chunk_ids)):
            raise _damaged("its graph's chunk_ids are not a list of node ids")
        return data

    @classmethod
    def get_type(cls) -> str:  # type: ignore[override]  # a str key works like IndexStructType
        return STRUCT_TYPE

    @classmethod
    def from_dict(cls, kvs: Any, *, infer_missing: bool = False) -> HCGIndexStruct:
        """The struct as ``index_store.json`` holds it, its fields' JSON types checked first:
        dataclasses_json takes any value and the load failed later with an AttributeError."""
        problem = _struct_problem(kvs)
        if problem is not None:
            raise _damaged(problem)
        return super().from_dict(kvs, infer_missing=infer_missing)


# Each persisted field's JSON type (None is refused too: the loaders index into these).
_STRUCT_TYPES: dict[str, type] = {
    "index_id": str,
    "graph": dict,
    "graph_json": str,
    "embedder_name": str,
    "dim": int,
    "variable_embeddings": str,
    "chunk_embeddings": str,
    "dropped_edges": list,
    "report": dict,
    "ledger_json": str,
    "vector_files": dict,
    "node_parser": dict,
}


def _struct_problem(kvs: Any) -> str | None:
    """What is wrong with a persisted struct's fields, or None."""
    if not isinstance(kvs, dict):
        return f"it is a JSON {type(kvs).__name__}, not an object"
    for name, kind in _STRUCT_TYPES.items():
        value = kvs.get(name, kind())
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"its {name!r} is {type(value).__name__}, where {kind.__name__} belongs"
    if not all(isinstance(v, dict) for v in kvs.get("vector_files", {}).values()):
        return "its 'vector_files' entries are not objects"
    if not all(isinstance(e, str) for e in kvs.get("dropped_edges", [])):
        return "its 'dropped_edges' are not strings"
    return None


def _damaged(problem: str) -> StoreError:
    return StoreError(
        f"the HCGIndex struct in index_store.json is damaged: {problem}; persist the index "
        "again from its documents, or restore the folder"
    )


# ---------------------------------------------------------------- graph and inline vectors

GRAPH_FORMAT = 1


def graph_to_dict(graph: CausalGraph) -> dict[str, Any]:
    """The graph as plain data (the core's ``graph.json`` shape plus the spec); chunk *texts* are
    left out (they live in the docstore), their ids kept."""
    return {
        "format": GRAPH_FORMAT,
        "spec": spec_to_dict(graph.spec),
        **core_store.graph_to_dict(graph),
        "chunk_ids": [c.id for c in graph.chunks],
    }


def graph_from_dict(data: dict[str, Any], chunks: Sequence[Chunk]) -> CausalGraph:
    """Inverse of :func:`graph_to_dict`; ``chunks`` supplies the texts, in ``chunk_ids`` order."""
    # A stored spec was valid when built; re-validating would reject a graph whose entity lists
    # the builder legitimately extended.
    try:
        spec = spec_from_dict(data["spec"], validate=False)
        variables, edges = core_store.graph_from_dict(data, spec)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, HCGError):  # the core's own, naming the entry
            raise
        raise _damaged(f"its graph does not read ({type(exc).__name__}: {exc})") from None
    return CausalGraph(spec=spec, variables=variables, edges=edges, chunks=tuple(chunks))


def encode_matrix(matrix: np.ndarray | None) -> str:
    """float32 rows as base64 text (JSON-safe, exact, about 1.33x the binary size)."""
    if matrix is None:
        return ""
    return base64.b64encode(np.ascontiguousarray(matrix, dtype="<f4").tobytes()).decode("ascii")


def decode_matrix(text: str, dim: int) -> np.ndarray | None:
    """Inverse of :func:`encode_matrix`; ``None`` for an empty string."""
    if not text:
        return None
    flat = np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)
    return flat.reshape(-1, dim) if dim else flat.reshape(0, 0)


# ---------------------------------------------------------------- vector files


def file_stem(index_id: str) -> str:
    """The index id as it appears in file names (hashed when it is not filename-safe)."""
    if _SAFE_ID.fullmatch(index_id):
        return index_id
    return hashlib.sha256(index_id.encode("utf-8")).hexdigest()[:_NAME_DIGEST_CHARS]


def local_folder(persist_path: str, fs: Any | None) -> Path | None:
    """The local folder a store persisted to ``persist_path`` writes to; None for another fs."""
    if fs is not None:
        from fsspec.implementations.local import LocalFileSystem

        if type(fs) is not LocalFileSystem:  # a subclass may wrap another place (DirFileSystem)
            return None
    return Path(os.path.abspath(os.path.dirname(str(persist_path))))


def _write_npy(folder: Path, stem: str, kind: str, arr: np.ndarray) -> dict[str, Any]:
    """Write ``arr`` as a content-named ``.npy`` in ``folder`` (atomically, and only when no
    identical file is already there); returns the struct's reference to it."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr, dtype=_DTYPE), allow_pickle=False)
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    name = f"{FILE_PREFIX}{stem}__{kind}__{digest[:_NAME_DIGEST_CHARS]}.npy"
    path = folder / name
    if not (path.is_file() and path.stat().st_size == len(data) and _file_sha256(path) == digest):
        atomic_write_bytes(path, data)
    return {"file": name, "shape": list(arr.shape), "dtype": _DTYPE, "sha256": digest}


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def put_vectors(
    struct: HCGIndexStruct, arrays: dict[str, np.ndarray | None], folder: Path | None
) -> None:
    """Store ``arrays`` (by kind) in the struct: inline base64 when ``folder`` is None, else as
    ``.npy`` files in ``folder`` referenced from ``struct.vector_files``. None clears a kind.
    A kind this version does not keep (the edge-text cache of older structs) is dropped."""
    refs = {kind: ref for kind, ref in struct.vector_files.items() if kind in INLINE_FIELDS}
    for kind, arr in arrays.items():
        field_name = INLINE_FIELDS[kind]
        if arr is None:
            setattr(struct, field_name, "")
            refs.pop(kind, None)
        elif folder is None:
            setattr(struct, field_name, encode_matrix(arr))
            refs.pop(kind, None)
        else:
            refs[kind] = _write_npy(folder, file_stem(struct.index_id), kind, arr)
            setattr(struct, field_name, "")
    struct.vector_files = refs


@dataclass
class VectorSource:
    """The folder a store's referenced ``.npy`` files are read from (``fs``: None = local)."""

    folder: str
    fs: Any | None = None


def read_vectors(
    struct: HCGIndexStruct, source: VectorSource | None
) -> tuple[dict[str, np.ndarray | None], list[str]]:
    """Every kind of vectors the struct holds (inline or in files) and what was wrong with any
    file (missing, unreadable, not what the struct recorded); those kinds come back as None.

    Raises ``StoreError`` when the struct references files and no folder is known.
    """
    out: dict[str, np.ndarray | None] = {}
    problems: list[str] = []
    for kind, field_name in INLINE_FIELDS.items():
        ref = struct.vector_files.get(kind)
        if ref is None:
            out[kind] = decode_matrix(getattr(struct, field_name), struct.dim)
            continue
        if source is None:
            raise StoreError(
                f"HCGIndex {struct.index_id!r} keeps its vectors in .npy files beside "
                "index_store.json, and this index store does not say which folder it was read "
                "from (it was made before llama_index_hcg was imported, or by hand); pass "
                "persist_dir=<that folder> to load_index_from_storage"
            )
        arr, problem = _read_ref(ref, source)
        out[kind] = arr
        if problem:
            problems.append(problem)
    return out, problems


def _read_ref(ref: Any, source: VectorSource) -> tuple[np.ndarray | None, str | None]:
    """One referenced file, checked against its reference; memory-mapped when local."""
    name = ref.get("file") if isinstance(ref, dict) else None
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name):
        return None, f"the index struct names no valid hcg vector file ({name!r})"
    where = os.path.join(source.folder, name)
    try:
        shape = tuple(int(n) for n in ref["shape"])
        dtype = np.dtype(ref["dtype"])
        digest = str(ref["sha256"])
    except (KeyError, TypeError, ValueError):
        return None, f"the index struct's reference to {where} is incomplete"
    try:
        if source.fs is None:
            path = Path(source.folder) / name
            if _file_sha256(path) != digest:  # FileNotFoundError when missing
                return None, f"{where} does not hold the bytes persisted (sha256 differs)"
            # Memory-mapped, read-only: processes loading one folder share its pages. Never
            # pickle. A zero-size array cannot be mapped.
            mode = "r" if int(np.prod(shape)) else None
            arr = np.load(path, mmap_mode=mode, allow_pickle=False)
        else:
            data = source.fs.cat_file(where)
            if hashlib.sha256(data).hexdigest() != digest:
                return None, f"{where} does not hold the bytes persisted (sha256 differs)"
            arr = np.load(io.BytesIO(data), allow_pickle=False)
    except FileNotFoundError:
        return None, f"{where} is missing"
    except (OSError, ValueError, EOFError) as exc:
        return None, f"{where} is not a readable .npy array ({exc})"
    if arr.shape != shape or arr.dtype != dtype:
        return None, f"{where} holds {arr.dtype} {arr.shape}, the struct recorded {dtype} {shape}"
    return arr, None


# ---------------------------------------------------------------- index store hooks


@dataclass(eq=False)
class StoreHooks:
    """What the wrapped methods of one ``SimpleIndexStore`` instance need: the indexes using it
    (a deferred struct of theirs is written on the next read or persist), and where referenced
    ``.npy`` files are (set when read from or persisted to a local folder).

    The wrappers call back into ``HCGIndex`` (``_flush_struct``, ``_persist_struct``), whose
    private helpers they are: this module is split from ``index.py`` only to keep it readable.
    """

    indexes: weakref.WeakSet = field(default_factory=weakref.WeakSet)
    source: VectorSource | None = None


# Index store methods that read structs: a deferred HCGIndex struct is written (inline) first.
_READERS = ("get_index_struct", "index_structs")
_AREADERS = ("aget_index_struct", "async_index_structs")


# The hooks of each wrapped store, kept here rather than in the store's own attributes.
_HOOKS: weakref.WeakKeyDictionary[SimpleIndexStore, StoreHooks] = weakref.WeakKeyDictionary()


def store_source(store: Any) -> VectorSource | None:
    hooks = _HOOKS.get(store) if isinstance(store, SimpleIndexStore) else None
    return hooks.source if hooks is not None else None


def store_hooks(store: SimpleIndexStore) -> StoreHooks:
    """The hooks of ``store``; on first use its reading and persisting methods are wrapped (on
    this instance only)."""
    hooks = _HOOKS.get(store)
    if hooks is not None:
        return hooks
    hooks = _HOOKS[store] = StoreHooks()

    def flush() -> None:
        for index in list(hooks.indexes):
            index._flush_struct()  # writes the struct of an index whose write was deferred

    for name in _READERS:
        method = getattr(store, name)

        def reader(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            flush()
            return _method(*args, **kwargs)

        setattr(store, name, reader)
    for name in _AREADERS:
        method = getattr(store, name, None)
        if method is None:
            continue

        async def areader(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            flush()
            return await _method(*args, **kwargs)

        setattr(store, name, areader)

    to_dict = store.to_dict

    def to_dict_inline() -> dict:
        # A dict must stand alone (StorageContext.from_dict has no folder): vectors inline.
        flush()
        return _inline_copy(to_dict(), hooks.source)

    store.to_dict = to_dict_inline  # type: ignore[method-assign]
    persist = store.persist

    def persist_with_files(persist_path: str = DEFAULT_PERSIST_PATH, fs: Any = None) -> None:
        _persist(store, hooks, persist, persist_path, fs)

    store.persist = persist_with_files  # type: ignore[method-assign]
    return hooks


def _hcg_entries(store: SimpleIndexStore) -> Iterator[tuple[str, dict]]:
    collection = getattr(store, "_collection", "index_store/data")
    for key, entry in store._kvstore.get_all(collection=collection).items():
        if isinstance(entry, dict) and entry.get("__type__") == STRUCT_TYPE:
            yield key, entry


def _persist(
    store: SimpleIndexStore,
    hooks: StoreHooks,
    persist: Callable[..., None],
    persist_path: str,
    fs: Any,
) -> None:
    """Write every HCG struct of ``store`` for this target, then the store, then drop the
    ``.npy`` files of these indexes that the new ``index_store.json`` no longer names."""
    folder = local_folder(persist_path, fs)
    held = dict(_hcg_entries(store))
    # Live indexes write from their arrays; an edited (deferred) one last, so that of two
    # indexes loaded with one id the edited one is saved.
    live = [i for i in hooks.indexes if i.index_id in held]
    live.sort(key=lambda i: i._struct_stale)
    for index in live:
        index._persist_struct(folder)
    named = {r["file"] for i in live for r in i._index_struct.vector_files.values()}
    done = {i.index_id for i in live}
    for key in held.keys() - done:  # structs no index was loaded from: converted as stored
        named |= _convert_entry(store, held[key], hooks.source, folder)
    if folder is not None and type(store._kvstore) is SimpleKVStore:
        # What SimpleKVStore.persist writes, but atomically.
        atomic_write_text(persist_path, json.dumps(store._kvstore.to_dict()))
    else:
        persist(persist_path, fs=fs)
    if folder is None:
        hooks.source = None  # every struct is inline now
        return
    hooks.source = VectorSource(str(folder))
    for key in held:
        for path in folder.glob(f"{FILE_PREFIX}{file_stem(key)}__*.npy"):
            if path.name not in named:
                try:
                    path.unlink()
                except OSError as exc:  # a leftover costs disk only
                    logger.warning("HCGIndex: could not remove the old %s: %s", path, exc)


def _convert_entry(
    store: SimpleIndexStore, entry: dict, source: VectorSource | None, folder: Path | None
) -> set[str]:
    """Re-store a struct with no live index for this target (files copied, or inlined); returns
    the file names it references."""
    struct = json_to_index_struct(entry)
    if not struct.vector_files and folder is None:
        return set()  # inline already
    try:
        _move_vectors(struct, source, folder)
    except StoreError as exc:
        logger.warning("HCGIndex: %s; its vectors are not persisted", exc)
        return {r["file"] for r in struct.vector_files.values() if isinstance(r, dict)}
    store.add_index_struct(struct)
    return {r["file"] for r in struct.vector_files.values()}


def _move_vectors(struct: HCGIndexStruct, source: VectorSource | None, folder: Path | None) -> None:
    """Read the struct's vectors from ``source`` and store them for ``folder`` (None: inline); a
    file that cannot be read is logged and left out (the index recomputes it when loaded)."""
    arrays, problems = read_vectors(struct, source)
    for problem in problems:
        logger.warning("HCGIndex %r: %s; recomputed when loaded", struct.index_id, problem)
    put_vectors(struct, arrays, folder)


def _inline_copy(data: dict, source: VectorSource | None) -> dict:
    """``data`` (a store's ``to_dict()``) with every HCG struct's vectors inline."""
    out = dict(data)
    for collection, entries in data.items():
        if not isinstance(entries, dict):
            continue
        for key, entry in entries.items():
            if not (isinstance(entry, dict) and entry.get("__type__") == STRUCT_TYPE):
                continue
            struct = json_to_index_struct(entry)
            if not struct.vector_files:
                continue
            _move_vectors(struct, source, None)
            out[collection] = {**out[collection], key: index_struct_to_json(struct)}
    return out


# ---------------------------------------------------------------- whole files

_WHOLE = "_hcg_whole_file"  # marks a persist method wrapped by ``persist_whole_files``


def persist_whole_files(*stores: Any) -> None:
    """Make each store's ``persist`` to a local file write a new file beside it and rename it
    over the old one, so a kill or a full disk mid-write leaves the previous file whole.

    LlamaIndex's docstore, graph and vector stores open their file for writing (emptying it)
    before the JSON is made: a persist cut there left an empty ``docstore.json`` and no loadable
    index. The bytes written are the store's own; only where they land first changes. Stores
    that write elsewhere (another ``fs``, a database) are left as they are.
    """
    for store in stores:
        persist = getattr(store, "persist", None)
        if persist is None or getattr(persist, _WHOLE, False):
            continue

        def whole(
            persist_path: str | None = None,
            fs: Any = None,
            _persist: Callable[..., None] = persist,
            _store: Any = store,
        ) -> None:
            if persist_path is None or not local_folder(
                persist_path, fs or getattr(_store, "_fs", None)
            ):
                _persist(*(() if persist_path is None else (persist_path,)), fs=fs)
                return
            path = Path(persist_path)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{id(_store):x}.tmp")
            try:
                _persist(str(tmp), fs=fs)
                if tmp.exists():  # a store with nothing to write writes no file
                    with open(tmp, "rb+") as f:
                        os.fsync(f.fileno())
                    os.replace(tmp, path)
            finally:
                with contextlib.suppress(OSError):
                    tmp.unlink()

        setattr(whole, _WHOLE, True)
        try:
            object.__setattr__(store, "persist", whole)
        except (AttributeError, TypeError):  # a store class that takes no instance attribute
            continue


# ---------------------------------------------------------------- remembering the folder


def install_folder_memory() -> None:
    """Wrap ``SimpleIndexStore.from_persist_path`` (once) so that a store read from disk that
    holds an HCG struct remembers its folder; other stores are returned untouched."""
    original = SimpleIndexStore.__dict__["from_persist_path"]
    if getattr(original.__func__, "_hcg_wrapped", False):
        return

    def from_persist_path(cls: type, persist_path: str, fs: Any = None) -> SimpleIndexStore:
        store = original.__func__(cls, persist_path, fs=fs)
        if any(True for _ in _hcg_entries(store)):
            folder = local_folder(persist_path, fs)
            store_hooks(store).source = (
                VectorSource(str(folder))
                if folder is not None
                else VectorSource(os.path.dirname(str(persist_path)), fs)
            )
        return store

    from_persist_path._hcg_wrapped = True  # type: ignore[attr-defined]
    from_persist_path.__doc__ = original.__func__.__doc__
    SimpleIndexStore.from_persist_path = classmethod(from_persist_path)  # type: ignore[method-assign]
