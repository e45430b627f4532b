"""The only module that reads or writes a built graph on disk (format: docs/format.md).

A graph directory holds ``manifest.json``, ``spec.yaml``, ``graph.json``, ``chunks.jsonl``, and
optionally ``embeddings/*.npy`` and ``build_report.json``. Every write goes to a temporary file in
the same folder and is renamed into place, so a crash never leaves a half-written file. Embeddings
are plain ``.npy`` read with ``allow_pickle=False``; a missing or stale one is reported as ``None``
so the caller recomputes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .errors import CorruptFileError, FormatVersionError, MissingFileError, SpecError, StoreError
from .spec import spec_from_dict, spec_to_yaml, validate_graph
from .spec.yaml_io import variable_from_item
from .types import CausalEdge, CausalGraph, Chunk, DomainSpec, Variable

FORMAT_NAME = "hcg-graph"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SPEC = "spec.yaml"
GRAPH = "graph.json"
CHUNKS = "chunks.jsonl"
REPORT = "build_report.json"
VARIABLE_VECTORS = "embeddings/variables.npy"
CHUNK_VECTORS = "embeddings/chunks.npy"


@dataclass(frozen=True)
class StoredGraph:
    """A loaded graph directory. Embeddings are ``None`` when absent or stale (recompute them)."""

    graph: CausalGraph
    manifest: dict[str, Any]
    variable_embeddings: np.ndarray | None = None
    chunk_embeddings: np.ndarray | None = None
    report: dict[str, Any] | None = None
    path: Path | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def embedder_name(self) -> str | None:
        return self.manifest.get("embedder")


# ---------------------------------------------------------------- text the vectors are made of


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def variable_text(v: Variable) -> str:
    """What a variable's embedding is computed from: its readable name, then its description.

    >>> variable_text(Variable("StrokeRisk", ("tobacco smoking",)))
    'Stroke Risk: tobacco smoking'
    """
    metric = _CAMEL.sub(" ", v.metric).replace("_", " ")
    readable = f"{metric}: {', '.join(v.entities)}" if v.entities else metric
    return f"{readable}. {v.description}" if v.description else readable


def texts_digest(texts: Iterable[str]) -> str:
    """A fingerprint of the ordered texts behind a set of vectors, to detect stale embeddings."""
    h = hashlib.blake2b(digest_size=16)
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


# ---------------------------------------------------------------- atomic writes


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _atomic_write_npy(path: Path, arr: np.ndarray) -> None:
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr, dtype=np.float32), allow_pickle=False)
    atomic_write_bytes(path, buf.getvalue())


# ---------------------------------------------------------------- save


def graph_to_dict(graph: CausalGraph) -> dict[str, Any]:
    """``graph.json``'s shape: the variables and the edges (chunks and spec live elsewhere)."""

    def var(v: Variable) -> dict[str, Any]:
        d: dict[str, Any] = {"name": v.name, "metric": v.metric, "entities": list(v.entities)}
        if v.description:
            d["description"] = v.description
        return d

    return {
        "variables": [var(v) for v in graph.variables],
        "edges": [
            {
                "id": e.id,
                "source": e.source,
                "target": e.target,
                "mechanism": e.mechanism,
                "confidence": round(float(e.confidence), 6),
                "evidence": list(e.evidence),
            }
            for e in graph.edges
        ],
    }


def save_graph(
    graph: CausalGraph,
    directory: str | os.PathLike,
    *,
    embedder_name: str | None = None,
    variable_embeddings: np.ndarray | None = None,
    chunk_embeddings: np.ndarray | None = None,
    report: dict[str, Any] | None = None,
) -> Path:
    """Write ``graph`` as a graph directory; return its path.

    Embeddings are written only with ``embedder_name`` (the manifest records which model made
    them) and must align with ``graph.variables`` / ``graph.chunks``.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise StoreError("exists and is not a directory", path=directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Overwriting: drop the old manifest first, so an interrupted rewrite never looks complete,
    # and the old report, so it cannot describe the new graph.
    (directory / MANIFEST).unlink(missing_ok=True)
    if report is None:
        (directory / REPORT).unlink(missing_ok=True)
    atomic_write_text(directory / SPEC, spec_to_yaml(graph.spec))
    atomic_write_text(
        directory / GRAPH, json.dumps(graph_to_dict(graph), indent=1, ensure_ascii=False) + "\n"
    )
    lines = (
        json.dumps(
            {"id": c.id, "text": c.text, "doc_id": c.doc_id, "metadata": dict(c.metadata)},
            ensure_ascii=False,
        )
        for c in graph.chunks
    )
    atomic_write_text(directory / CHUNKS, "\n".join(lines) + "\n")
    emb: dict[str, Any] = {}
    if embedder_name is not None:
        for key, arr, texts, rel in (
            (
                "variables",
                variable_embeddings,
                [variable_text(v) for v in graph.variables],
                VARIABLE_VECTORS,
            ),
            ("chunks", chunk_embeddings, [c.text for c in graph.chunks], CHUNK_VECTORS),
        ):
            if arr is None:
                continue
            if arr.shape[0] != len(texts):
                raise StoreError(
                    f"{key} embeddings have {arr.shape[0]} rows for {len(texts)} {key}",
                    path=directory / rel,
                )
            _atomic_write_npy(directory / rel, arr)
            emb[key] = {"file": rel, "digest": texts_digest(texts), "shape": list(arr.shape)}
    if report is not None:
        atomic_write_text(directory / REPORT, json.dumps(report, indent=1, default=str) + "\n")
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "embedder": embedder_name,
        "embeddings": emb,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "counts": {
            "dimensions": len(graph.spec.dimensions),
            "metrics": len(graph.spec.metrics),
            "variables": len(graph.variables),
            "edges": len(graph.edges),
            "chunks": len(graph.chunks),
            "evidence_links": graph.evidence_links,
        },
    }
    # The manifest goes last: a directory with a manifest is a complete one.
    atomic_write_text(directory / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return directory


# ---------------------------------------------------------------- load


def _read_text(
    path: Path, missing: str = "missing; a graph directory needs it (see docs/format.md)"
) -> str:
    if not path.is_file():
        raise MissingFileError(missing, path=path)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"cannot be read as UTF-8 text: {exc}", path=path) from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise CorruptFileError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=path
        ) from exc


def read_manifest(directory: Path) -> dict[str, Any]:
    manifest = _read_json(directory / MANIFEST)
    if not isinstance(manifest, dict):
        raise CorruptFileError("must be a JSON object", path=directory / MANIFEST)
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise FormatVersionError(
            f"format_version {version!r} is not supported; this hcg-rag reads version "
            f"{FORMAT_VERSION} (rebuild the graph, or upgrade hcg-rag)",
            path=directory / MANIFEST,
        )
    return manifest


def read_spec_file(path: str | os.PathLike) -> DomainSpec:
    """Read a spec.yaml (``yaml.safe_load``); errors name the file and the offending entry."""
    path = Path(path)
    text = _read_text(path, "no such spec file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CorruptFileError(f"invalid YAML: {exc}", path=path) from exc
    try:
        return spec_from_dict(data)
    except SpecError as exc:
        raise SpecError(str(exc), entry=exc.entry, path=path) from exc


def _read_chunks(path: Path) -> tuple[Chunk, ...]:
    chunks = []
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            meta = d.get("metadata") or {}
            if not isinstance(meta, dict):
                raise TypeError("metadata must be an object")
            chunks.append(Chunk(str(d["id"]), str(d["text"]), str(d.get("doc_id", "") or ""), meta))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptFileError(
                f"line {lineno}: not a chunk object with 'id' and 'text' ({exc})", path=path
            ) from exc
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise CorruptFileError(f"duplicate chunk id {dup!r}", path=path)
    return tuple(chunks)


def graph_from_dict(
    data: Any, spec: DomainSpec, path: Path | None = None
) -> tuple[tuple[Variable, ...], tuple[CausalEdge, ...]]:
    """Variables and edges from ``graph.json``'s shape (see ``graph_to_dict``); errors name ``path``."""
    if not isinstance(data, dict):
        raise CorruptFileError("must be a JSON object with 'variables' and 'edges'", path=path)
    try:
        raw_vars = data.get("variables")
        if raw_vars is None:  # hand-written graphs may rely on the spec's variables
            variables = list(spec.variables)
        elif not isinstance(raw_vars, list):
            raise CorruptFileError("'variables' must be a list", path=path)
        else:
            variables = [
                variable_from_item(item, f"variables[{i}]") for i, item in enumerate(raw_vars)
            ]
        edges = []
        for i, item in enumerate(data.get("edges") or []):
            if not isinstance(item.get("evidence", []) or [], list):
                raise CorruptFileError(
                    f"edges[{i}].evidence must be a list of chunk ids", path=path
                )
            edges.append(
                CausalEdge(
                    id=str(item.get("id") or f"e{i}"),
                    source=str(item["source"]),
                    target=str(item["target"]),
                    mechanism=str(item.get("mechanism", "") or ""),
                    confidence=float(item.get("confidence", 1.0)),
                    evidence=tuple(str(c) for c in item.get("evidence", ()) or ()),
                )
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, SpecError):
            raise SpecError(str(exc), entry=exc.entry, path=path) from exc
        raise CorruptFileError(f"malformed entry: {exc!r}", path=path) from exc
    return tuple(variables), tuple(edges)


def _load_vectors(
    directory: Path, manifest: dict, key: str, texts: Sequence[str], notes: list[str]
) -> np.ndarray | None:
    table = manifest.get("embeddings") or {}
    info = table.get(key) if isinstance(table, dict) else None
    if info is None:
        return None
    if not isinstance(info, dict) or not isinstance(info.get("file"), str):
        raise CorruptFileError(
            f"'embeddings.{key}' must be an object with a 'file'", path=directory / MANIFEST
        )
    path = (directory / info["file"]).resolve()
    if not path.is_relative_to(directory.resolve()):
        raise CorruptFileError(
            f"'embeddings.{key}.file' points outside the graph directory", path=directory / MANIFEST
        )
    if not path.is_file():
        notes.append(f"{path.name} missing: {key} embeddings will be recomputed")
        return None
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptFileError(f"not a readable .npy array: {exc}", path=path) from exc
    if arr.ndim != 2 or arr.shape[0] != len(texts) or info.get("digest") != texts_digest(texts):
        notes.append(f"{path.name} is stale (the {key} changed): recomputed")
        return None
    return np.ascontiguousarray(arr, dtype=np.float32)


def load_graph(directory: str | os.PathLike) -> StoredGraph:
    """Read and validate a graph directory (written by ``save_graph`` or by hand)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise MissingFileError("is not a graph directory (it does not exist)", path=directory)
    manifest = read_manifest(directory)
    if not isinstance(manifest.get("embeddings", {}) or {}, dict):
        raise CorruptFileError("'embeddings' must be an object", path=directory / MANIFEST)
    spec = read_spec_file(directory / SPEC)
    chunks = _read_chunks(directory / CHUNKS)
    variables, edges = graph_from_dict(_read_json(directory / GRAPH), spec, directory / GRAPH)
    try:
        validate_graph(spec, variables, edges, {c.id for c in chunks})
    except SpecError as exc:
        raise SpecError(str(exc), entry=exc.entry, path=directory / GRAPH) from exc
    graph = CausalGraph(spec, variables, edges, chunks)
    notes: list[str] = []
    var_vecs = _load_vectors(
        directory, manifest, "variables", [variable_text(v) for v in variables], notes
    )
    chunk_vecs = _load_vectors(directory, manifest, "chunks", [c.text for c in chunks], notes)
    report = _read_json(directory / REPORT) if (directory / REPORT).is_file() else None
    return StoredGraph(graph, manifest, var_vecs, chunk_vecs, report, directory, tuple(notes))


__all__ = [
    "FORMAT_VERSION",
    "StoredGraph",
    "atomic_write_bytes",
    "atomic_write_text",
    "graph_from_dict",
    "graph_to_dict",
    "load_graph",
    "read_spec_file",
    "save_graph",
    "texts_digest",
    "variable_text",
]
