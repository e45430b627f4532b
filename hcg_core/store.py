"""The only module that reads or writes a built graph on disk (format 2: docs/format.md).

A graph directory's ``manifest.json`` points (``current``) at ``versions/<n>/``, a folder of flat
files: ``manifest.json``, ``spec.yaml``, ``graph.json``, ``chunks.jsonl``, and optionally
``embeddings/*.npy``, ``build_report.json`` and ``incremental.json``. A flat directory (format 1,
or one written by hand) is such a folder on its own and is read as it is. A save holds the
directory's writer lock (``hcg_core.graph_lock``), writes a new version folder, re-reads the
text files it wrote (``verify_written``), and publishes it by rewriting the pointer in one atomic
rename; so a reader gets the old graph or the new one, a failed or killed save leaves the old one
loadable, and nothing but the graph's own files is ever removed. Files are written to a temporary
file and renamed, with the user's umask (``hcg_core.safe_files``). ``check_output_dir`` refuses,
before any work, an output that is not a graph directory, lies inside an input, or cannot be
written (the checks of other outputs, exports and reports, are ``hcg_core.output_paths``').

Loading trusts nothing and writes nothing: every file must resolve inside the directory (no links
out), chunks need non-empty text, malformed entries are named with their file and expected shape.
Embeddings are plain ``.npy`` read with ``allow_pickle=False`` and memory-mapped read-only
(``mmap_mode="r"``), so processes serving one directory share its pages; they are validated in
blocks of rows. A missing, stale or damaged one (NaN, inf, extra all-zero rows) is reported as
``None`` with a note, so the caller recomputes it.
A corrupt ``build_report.json`` is noted and ignored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from . import bounded
from .errors import (
    CorruptFileError,
    FormatVersionError,
    HCGError,
    MissingFileError,
    SpecError,
    StoreError,
)
from .graph_dir import FORMAT_NAME, LLM_CACHE, MANIFEST, MANIFEST_CAP, is_graph_dir
from .graph_lock import LOCK_NAME, graph_lock
from .safe_files import (
    atomic_write_bytes,
    atomic_write_text,
    check_writable_dir,
    fault_step,
    fsync_dir,
    os_reason,
)
from .safe_text import has_lone_surrogate
from .spec import spec_from_dict, spec_to_yaml, validate_graph
from .spec.yaml_io import spec_from_document, variable_from_item
from .types import CausalEdge, CausalGraph, Chunk, DomainSpec, Variable, variable_text

FORMAT_VERSION = 2
# Versions this module reads: 1 is the flat layout of earlier releases, read as it is.
READABLE_VERSIONS = (1, 2)
VERSIONS = "versions"  # versions/<n>/: one complete graph each; manifest.json points at one
SPEC = "spec.yaml"
GRAPH = "graph.json"
CHUNKS = "chunks.jsonl"
REPORT = "build_report.json"
LEDGER = "incremental.json"  # the offline builder's support ledger (incremental edits)
VARIABLE_VECTORS = "embeddings/variables.npy"
CHUNK_VECTORS = "embeddings/chunks.npy"
VECTOR_FILES = {"variables": VARIABLE_VECTORS, "chunks": CHUNK_VECTORS}


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
    ledger: dict[str, Any] | None = None  # incremental.json, checked by SupportLedger.from_json

    @property
    def embedder_name(self) -> str | None:
        return self.manifest.get("embedder")


# ---------------------------------------------------------------- text the vectors are made of


def embedded_texts(graph: CausalGraph, key: str) -> list[str]:
    """The texts behind the stored vectors of one kind (``VECTOR_FILES``' keys), in row order."""
    if key == "variables":
        return [variable_text(v) for v in graph.variables]
    return [c.text for c in graph.chunks]


def texts_digest(texts: Iterable[str]) -> str:
    """A fingerprint of the ordered texts behind a set of vectors, to detect stale embeddings."""
    h = hashlib.blake2b(digest_size=16)
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def _atomic_write_npy(path: Path, arr: np.ndarray, like: Path | None = None) -> None:
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr, dtype=np.float32), allow_pickle=False)
    atomic_write_bytes(path, buf.getvalue(), like=like)


# ---------------------------------------------------------------- output directories

# Entries of a graph directory that hcg itself puts there besides the graph: the default LLM reply
# cache, the writers' lock and the version folders (a killed first save leaves them alone). A
# folder holding only these may be (re)written without ``force``.
HCG_OWNED: tuple[str, ...] = (LLM_CACHE, LOCK_NAME, VERSIONS)


def check_output_dir(
    directory: str | os.PathLike,
    *,
    inputs: Sequence[str | os.PathLike] = (),
    force: bool = False,
    probe: bool = True,
) -> Path:
    """Check, before any work, that a graph may be written to ``directory``; return its real path.

    Refused (``StoreError``, one line each): an empty path; a path that is a file; the current
    folder or one above it; a path equal to, inside, or containing one of ``inputs`` (the next
    build would read the graph back as input); a path inside another graph directory (a version
    folder or any sub-folder, even with ``force``); an existing folder that is not an hcg graph
    directory and holds files, unless ``force`` (its files of the graph's names are then
    replaced, the others kept). With ``probe``, the parent is created and a file written there.
    """
    if not str(directory).strip():
        raise StoreError(
            "the output directory is empty; name a folder for the graph, e.g. --out hcg_graph"
        )
    path = Path(directory)
    real = path.resolve()
    if path.exists() and not path.is_dir():
        raise StoreError("the output exists and is not a directory", path=path)
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise StoreError(
            "the output is the current folder or one above it; write the graph to a new "
            "sub-folder (e.g. --out hcg_graph)",
            path=path,
        )
    for raw in inputs:
        inp = Path(raw).resolve()
        if real == inp or (inp.is_dir() and inp in real.parents):
            where = "is the input folder" if real == inp else "lies inside the input"
            raise StoreError(
                f"the output {where} {raw}; the next build would read the graph back as "
                "input. Write it outside the input folders",
                path=path,
            )
        if real in inp.parents:
            raise StoreError(
                f"the output contains the input {raw}; write the graph to its own folder",
                path=path,
            )
    # Refused even with ``force``: a graph written into another's version folder replaces that
    # version's manifest, and one under ``versions/`` is removed by that graph's next save.
    holder = next((above for above in real.parents if is_graph_dir(above)), None)
    if holder is not None:
        raise StoreError(
            f"the output lies inside the graph directory {holder}; writing there could replace "
            "or later remove that graph's files. Write the graph to a folder outside it",
            path=path,
        )
    if real.is_dir() and not force and not is_graph_dir(real):
        foreign = sorted(p.name for p in real.iterdir() if p.name not in HCG_OWNED)
        if foreign:
            raise StoreError(
                f"the output exists and is not an hcg graph directory (no hcg manifest.json; it "
                f"holds {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); choose "
                "a new folder, or pass --force (force=True) to write the graph into it",
                path=path,
            )
    if probe:
        check_writable_dir(real.parent, what="graph directory's parent folder")
        if real.is_dir():
            check_writable_dir(real, what="graph directory")
    return real


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
                **({"effect": e.effect} if e.effect else {}),
                **({"quote": e.quote} if e.quote else {}),
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
    force: bool = False,
    ledger: dict[str, Any] | None = None,
    lock_timeout: float | None = None,
) -> Path:
    """Write ``graph`` as a graph directory; return its path.

    ``ledger``: the offline builder's support ledger as JSON (``SupportLedger.to_json``),
    written as ``incremental.json`` so ``hcg add``/``hcg remove`` can edit the graph in place.

    Embeddings are written only with ``embedder_name`` (the manifest records which model made
    them) and must align with ``graph.variables`` / ``graph.chunks``.

    One writer at a time: the directory's lock is held for the save (``graph_lock``; a second
    writer waits ``lock_timeout`` seconds, default 30 or ``$HCG_LOCK_TIMEOUT``, then fails with
    ``GraphLockedError``). The new graph is written into a new folder ``versions/<n>/``, re-read
    and checked, and published by rewriting ``manifest.json`` (the pointer) in one atomic rename,
    so a reader sees the old graph or the new one, and a failed or killed save leaves the previous
    graph loadable. An existing folder that is not an hcg graph directory is refused unless
    ``force`` (see ``check_output_dir``); its own files are never touched. Raises ``StoreError``
    (with the OS's reason) when the disk fails, and ``CorruptFileError`` when the written files
    do not read back as the graph (nothing is published then).
    """
    real = check_output_dir(directory, force=force, probe=False)
    vectors = {}
    if embedder_name is not None:
        vectors = {"variables": variable_embeddings, "chunks": chunk_embeddings}
    for key, arr in vectors.items():
        n = len(getattr(graph, key))
        if arr is not None and arr.shape[0] != n:
            raise StoreError(
                f"{key} embeddings have {arr.shape[0]} rows for {n} {key}",
                path=Path(directory) / VECTOR_FILES[key],
            )
    # Serialised before any disk work: a text that cannot be stored fails with nothing written.
    chunk_text = chunks_to_jsonl(graph.chunks, path=Path(directory) / CHUNKS)
    try:
        real.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot write the graph here: {os_reason(exc)}", path=directory) from None
    with graph_lock(real, timeout=lock_timeout):
        previous = current_dir(real) if is_graph_dir(real) else real
        flat_before = previous == real and is_graph_dir(real)  # a format 1 graph's files
        try:
            version = _new_version_dir(real)
        except OSError as exc:
            raise StoreError(
                f"cannot write the graph here: {os_reason(exc)}", path=directory
            ) from None
        published = False
        try:
            _write_graph_files(
                graph, version, previous, embedder_name, vectors, report, ledger, chunk_text
            )
            try:
                verify_written(version, graph)
            except (StoreError, SpecError) as exc:
                raise CorruptFileError(
                    f"the graph written does not read back as written ({exc}); nothing was "
                    "published, the previous graph is unchanged",
                    path=directory,
                ) from exc
            _publish(real, version)
            published = True
        except OSError as exc:
            raise StoreError(
                f"cannot write the graph ({os_reason(exc)}); the previous contents are unchanged",
                path=directory,
            ) from None
        finally:
            if not published:  # drop the partial version; the published one was never touched
                shutil.rmtree(version, ignore_errors=True)
        _tidy(real, version, previous, flat_before)
    return Path(directory)


def current_dir(directory: str | os.PathLike) -> Path:
    """The folder that holds the current files of a graph directory.

    ``directory/versions/<n>`` for a directory that ``save_graph`` wrote (its ``manifest.json``
    names it under ``current``); ``directory`` itself for a flat one (format 1, or written by
    hand). Edit ``graph.json`` there by hand, then reload.
    """
    directory = Path(directory)
    pointer = _read_json(_confined(directory, MANIFEST), cap=MANIFEST_CAP)
    if isinstance(pointer, dict) and "current" in pointer:
        return _pointed_dir(directory, pointer)
    return directory


def _pointed_dir(directory: Path, pointer: dict[str, Any]) -> Path:
    current = pointer.get("current")
    parts = current.split("/") if isinstance(current, str) else []
    if len(parts) != 2 or parts[0] != VERSIONS or not parts[1].isdigit():
        raise CorruptFileError(
            f"'current' is {current!r}; expected \"{VERSIONS}/<n>\", the folder of the current "
            "version",
            path=directory / MANIFEST,
        )
    return _confined(directory, current)


_VERSION_NAME = re.compile(r"[0-9]{1,18}")  # a version folder's name: a number int64 holds


def _new_version_dir(real: Path) -> Path:
    """A new, empty ``versions/<n>`` with ``n`` above every existing one (a killed save's too)."""
    versions = real / VERSIONS
    if versions.is_symlink() or (versions.exists() and not versions.is_dir()):
        # Followed, the save would write outside the directory and its tidy-up remove the other
        # folder's own entries (a linked folder's files were deleted so).
        raise StoreError(
            f"{VERSIONS} is a link or a file, where hcg keeps its version folders; move it away "
            "(hcg writes the graph only inside its directory)",
            path=versions,
        )
    versions.mkdir(exist_ok=True)
    # ASCII digits only: str.isdigit() also holds for "²", which int() refuses (a stray folder
    # so named failed every save with a ValueError).
    numbers = [int(p.name) for p in versions.iterdir() if _VERSION_NAME.fullmatch(p.name)]
    n = max(numbers, default=0) + 1
    while True:
        try:
            (versions / str(n)).mkdir()
            return versions / str(n)
        except FileExistsError:
            n += 1


def _publish(real: Path, version: Path) -> None:
    """Point ``manifest.json`` at ``version`` in one atomic rename: the moment the save happens."""
    for folder in (version / "embeddings", version, version.parent):
        fsync_dir(folder)  # the version's files are on disk before anything points at them
    fault_step("swap", real)
    pointer = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "current": f"{VERSIONS}/{version.name}",
    }
    atomic_write_text(real / MANIFEST, json.dumps(pointer, indent=1) + "\n")
    fsync_dir(real)


def _tidy(real: Path, keep: Path, replaced: Path, flat_before: bool) -> None:
    """Remove the versions but ``keep`` and the one it ``replaced``, and, after a flat graph,
    its files (never others).

    The replaced version stays until the next save, so a reader that started on it just before
    this publish still reads it whole; a reader on an older one sees it vanish and reads the new
    one (``load_graph`` retries when the pointer moved). A kill here leaves leftovers (a killed
    save's partial folder too) that the next save removes.
    """
    try:
        entries = list((real / VERSIONS).iterdir())
        spare = {keep.name} | ({replaced.name} if replaced.parent == real / VERSIONS else set())
        for p in sorted(entries):
            if p.name not in spare and not p.is_symlink():
                fault_step("remove", p)
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        if flat_before:
            for rel in (SPEC, GRAPH, CHUNKS, REPORT, LEDGER, VARIABLE_VECTORS, CHUNK_VECTORS):
                p = real / rel
                if p.is_file() and not p.is_symlink():
                    fault_step("remove", p)
                    p.unlink()
            with contextlib.suppress(OSError):  # only when empty: a user's own file stays
                (real / "embeddings").rmdir()
    except OSError as exc:
        raise StoreError(
            f"the new graph is in place, but removing the previous version failed "
            f"({os_reason(exc)}); the next save retries",
            path=real,
        ) from None


# JSON allows these inside strings, but line-splitting readers (Python's str.splitlines, many
# JSONL tools) break lines at them; escaped, a chunks.jsonl line is one line for every reader.
_LINE_BREAKS = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\x85", "\\u0085"))


def chunk_to_line(chunk: Chunk) -> str:
    """One ``chunks.jsonl`` line: strict JSON (no NaN), with no character that breaks a line.

    >>> chunk_to_line(Chunk("k1", "a\u2028b", "d.md", {}))
    '{"id": "k1", "text": "a\\\\u2028b", "doc_id": "d.md", "metadata": {}}'
    """
    line = json.dumps(
        {
            "id": chunk.id,
            "text": chunk.text,
            "doc_id": chunk.doc_id,
            "metadata": dict(chunk.metadata),
        },
        ensure_ascii=False,
        allow_nan=False,
    )
    for char, escaped in _LINE_BREAKS:  # str.replace scans in C; translate() did not pay
        if char in line:
            line = line.replace(char, escaped)
    return line


def chunks_to_jsonl(chunks: Sequence[Chunk], *, path: Path | None = None) -> bytes:
    """``chunks.jsonl``'s bytes; a chunk that cannot be stored exactly is a ``StoreError``."""
    lines = []
    for c in chunks:
        try:
            lines.append(chunk_to_line(c))
        except (ValueError, TypeError) as exc:
            what = "NaN or infinity" if isinstance(exc, ValueError) else str(exc)
            raise StoreError(
                f"chunk {c.id!r} (document {c.doc_id!r}) has metadata JSON cannot hold ({what}); "
                "give finite numbers, strings or booleans",
                path=path,
            ) from None
    try:
        return ("\n".join(lines) + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = next(c for c in chunks if has_lone_surrogate(chunk_to_line(c)))
        raise StoreError(
            f"chunk {bad.id!r} (document {bad.doc_id!r}) holds a lone surrogate "
            f"(U+{ord(exc.object[exc.start]):04X}), which is not Unicode text; replace it",
            path=path,
        ) from None


def verify_written(version: Path, graph: CausalGraph) -> None:
    """Re-parse the text files just written and check they hold ``graph``; else CorruptFileError.

    Not a full reload (vectors are not re-read), so an ``hcg add`` stays cheap: what it guards
    against is a file its own reader cannot read back (a line break inside a chunk, a bad spec).
    """
    read = _read_graph(version, read_manifest(version))
    if len(read.chunks) != len(graph.chunks):
        raise CorruptFileError(
            f"reads back as {len(read.chunks)} chunks, {len(graph.chunks)} were written",
            path=version / CHUNKS,
        )
    for got, want in zip(read.chunks, graph.chunks, strict=True):
        if (got.id, got.text, got.doc_id) != (str(want.id), want.text, want.doc_id or ""):
            raise CorruptFileError(
                f"chunk {want.id!r} does not read back as written",
                path=version / CHUNKS,
            )
    # Equal dataclasses settle it; the YAML texts (slow to make) only when a reading normalised
    # something the spec object held otherwise.
    if read.spec != graph.spec and spec_to_yaml(read.spec) != spec_to_yaml(graph.spec):
        raise CorruptFileError("does not read back as the spec written", path=version / SPEC)
    if [v.name for v in read.variables] != [v.name for v in graph.variables] or [
        (e.id, e.source, e.target) for e in read.edges
    ] != [(e.id, e.source, e.target) for e in graph.edges]:
        raise CorruptFileError("does not read back as the graph written", path=version / GRAPH)
    for name in (REPORT, LEDGER):
        if (version / name).exists() and not isinstance(_read_json(version / name), dict):
            raise CorruptFileError("does not read back as a JSON object", path=version / name)


def _write_graph_files(
    graph: CausalGraph,
    directory: Path,
    previous: Path,
    embedder_name: str | None,
    vectors: dict[str, np.ndarray | None],
    report: dict[str, Any] | None,
    ledger: dict[str, Any] | None,
    chunk_text: bytes,
) -> None:
    """Write every file of the graph into the (new, empty) ``directory``; the manifest last.
    ``vectors``: the embeddings to store by kind (``VECTOR_FILES``), None for one not stored."""

    def write(rel: str, text: str) -> None:
        atomic_write_text(directory / rel, text, like=previous / rel)

    write(SPEC, spec_to_yaml(graph.spec))
    write(GRAPH, json.dumps(graph_to_dict(graph), indent=1, ensure_ascii=False) + "\n")
    atomic_write_bytes(directory / CHUNKS, chunk_text, like=previous / CHUNKS)
    emb: dict[str, Any] = {}
    for key, arr in vectors.items():
        if arr is None:
            continue
        rel = VECTOR_FILES[key]
        _atomic_write_npy(directory / rel, arr, like=previous / rel)
        emb[key] = {
            "file": rel,
            "digest": texts_digest(embedded_texts(graph, key)),
            "shape": list(arr.shape),
            "zero_rows": int(np.count_nonzero(~np.any(np.asarray(arr) != 0, axis=1))),
        }
    if report is not None:
        # Strict JSON: a report's NaN (a ratio over zero items) becomes null, never a bare NaN.
        write(REPORT, json.dumps(strict_json(report), indent=1, default=str) + "\n")
    if ledger is not None:
        write(LEDGER, json.dumps(ledger, ensure_ascii=False, separators=(",", ":")) + "\n")
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "embedder": embedder_name,
        "embeddings": emb,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "counts": graph_counts(graph),
    }
    if ledger is not None:
        manifest["incremental"] = LEDGER
    # The manifest goes last: a version folder with a manifest is a complete one.
    write(MANIFEST, json.dumps(manifest, indent=1) + "\n")


def graph_counts(graph: CausalGraph) -> dict[str, int]:
    """The graph's sizes: the manifest's ``counts`` (which scale the size caps when read) and the
    counts ``hcg inspect`` prints."""
    return {
        "dimensions": len(graph.spec.dimensions),
        "metrics": len(graph.spec.metrics),
        "variables": len(graph.variables),
        "edges": len(graph.edges),
        "chunks": len(graph.chunks),
        "evidence_links": graph.evidence_links,
    }


def strict_json(value: Any) -> Any:
    """``value`` with non-finite floats as None and non-string keys as strings (JSON's own), so
    the JSON written or printed is strict."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


# ---------------------------------------------------------------- load


def _read_text(
    path: Path,
    missing: str = "missing; a graph directory needs it (see docs/format.md)",
    *,
    cap: int | None = bounded.BASE_CAP,
) -> str:
    if not path.is_file():
        if path.exists():  # a folder (or a device) by the file's name is not a missing file
            kind = "a folder" if path.is_dir() else "not a regular file"
            raise CorruptFileError(
                f"is {kind}, where a graph directory holds a file by this name "
                "(see docs/format.md); move it away or rebuild the graph",
                path=path,
            )
        raise MissingFileError(missing, path=path)
    return bounded.read_text(path, cap=cap)


def _read_json(path: Path, cap: int | None = bounded.BASE_CAP) -> Any:
    """One JSON file of the directory, parsed within ``hcg_core.bounded``'s limits (a lone
    surrogate refused: no file the store writes holds one)."""
    return bounded.loads_json(
        _read_text(path, cap=cap), path=path, error=CorruptFileError, text_only=True
    )


# Size caps of the graph's files: a fixed part plus an allowance per item the manifest counts, so
# the corpus sizes of docs/scaling.md (1M chunks) load while a damaged or swapped file is refused
# before it is read. The allowances are far above what hcg writes (a chunk is at most
# --chunk-chars characters, 7,200 by default: 43 KB even as \uXXXX escapes).
_CHUNKS_PER_ITEM = {"chunks": 256 * 1024}
_GRAPH_PER_ITEM = {"variables": 8 * 1024, "edges": 32 * 1024, "evidence_links": 256}
_SPEC_PER_ITEM = {"variables": 8 * 1024, "metrics": 16 * 1024, "dimensions": 64 * 1024}
_OPTIONAL_PER_ITEM = {"chunks": 16 * 1024, "edges": 16 * 1024, "variables": 8 * 1024}


def _cap(manifest: dict[str, Any] | None, per_item: dict[str, int]) -> int:
    counts = manifest.get("counts") if isinstance(manifest, dict) else None
    return bounded.size_cap(per_item, counts if isinstance(counts, dict) else None)


def _confined(directory: Path, rel: str) -> Path:
    """``directory / rel``, refused when it (or a link on the way) resolves outside ``directory``.

    A graph directory is self-contained: a ``chunks.jsonl`` linked to some other file would serve
    that file's text to every query.
    """
    path = directory / rel
    real = path.resolve()
    if not real.is_relative_to(directory.resolve()):
        raise CorruptFileError(
            f"resolves to {real}, outside the graph directory; a graph directory's files must lie "
            "inside it (replace the link with the file itself)",
            path=path,
        )
    return path


def read_manifest(directory: Path) -> dict[str, Any]:
    """A folder's ``manifest.json``, refused unless its ``format_version`` is one this reads."""
    manifest = _read_json(_confined(directory, MANIFEST), cap=MANIFEST_CAP)
    if not isinstance(manifest, dict):
        raise CorruptFileError("must be a JSON object", path=directory / MANIFEST)
    # As ``is_graph_dir`` decides: a manifest without "format" is hcg's (hand-written ones
    # need not say it); another format is another tool's folder, refused, not read as a graph.
    fmt = manifest.get("format", FORMAT_NAME)
    if fmt != FORMAT_NAME:
        raise FormatVersionError(
            f"'format' is {bounded.short(fmt)}, expected {FORMAT_NAME!r}: this is not an hcg "
            "graph directory (pass the folder hcg build --out wrote)",
            path=directory / MANIFEST,
        )
    version = manifest.get("format_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise FormatVersionError(
            f"format_version {bounded.short(version)} is not supported; this hcg-rag reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (rebuild the graph, or upgrade hcg-rag)",
            path=directory / MANIFEST,
        )
    if version == 1 and "current" in manifest:
        raise CorruptFileError(
            "format_version 1 has no 'current' version folder; set format_version to 2",
            path=directory / MANIFEST,
        )
    problem = manifest_problem(manifest)
    if problem:
        raise CorruptFileError(f"{problem} (see docs/format.md)", path=directory / MANIFEST)
    return manifest


# An embedder name as hcg and the adapters write it: a model id, maybe "openai:" or a version tail.
_EMBEDDER_NAME = re.compile(r"[\w.:/@+-]{1,200}")
# No count of a graph reaches this; a larger one is damage, and it would scale the size caps.
_MAX_COUNT = 10**10


def manifest_problem(manifest: dict[str, Any]) -> str | None:
    """What is wrong with a parsed manifest's fields (as ``graph.json``'s are checked), or None.

    ``embedder`` is a name that can be resolved or passed: a string, and for the names of this
    package's own embedders (``hashing-``, ``minilm-``) one that they would have written. It may
    be null only in a graph saved without vectors. ``counts`` are non-negative integers.
    """
    from .embedders.factory import embedder_from_name

    name = manifest.get("embedder")
    table = manifest.get("embeddings")
    if table not in (None, {}) and not isinstance(table, dict):
        return f"'embeddings' is a {_json_type(table)}; expected an object"
    if name is None:
        if table:
            return "'embedder' is null, but the graph stores vectors; name the embedder"
    elif not isinstance(name, str) or not _EMBEDDER_NAME.fullmatch(name):
        what = bounded.short(name) if isinstance(name, str) else f"a {_json_type(name)}"
        return f"'embedder' is {what}; expected an embedder name, e.g. 'minilm-l6-v2-int8'"
    elif name.startswith(("hashing", "minilm")):
        try:
            embedder_from_name(name)
        except HCGError as exc:
            return f"'embedder' {bounded.short(name)} is not a name this package writes: {exc}"
    counts = manifest.get("counts")
    if counts is not None:
        if not isinstance(counts, dict):
            return f"'counts' is a {_json_type(counts)}; expected an object of integers"
        for key, n in counts.items():
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < _MAX_COUNT:
                return f"'counts.{key[:40]}' is not a non-negative integer"
    for key, info in (table or {}).items():
        if not isinstance(info, dict):
            return f"'embeddings.{key[:40]}' is a {_json_type(info)}; expected an object"
        shape = info.get("shape")
        if shape is not None and (
            not isinstance(shape, list)
            or len(shape) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            return f"'embeddings.{key[:40]}.shape' is not two non-negative integers"
    return None


def read_spec_file(path: str | os.PathLike, *, cap: int | None = bounded.BASE_CAP) -> DomainSpec:
    """Read a spec.yaml (``hcg_core.bounded``: no aliases, bounded depth, duplicate keys refused);
    errors name the file and the offending entry.

    ``G/spec.yaml`` of a graph directory that ``save_graph`` wrote (in ``versions/<n>/``) reads
    the current version's spec, as it did in the flat layout.
    """
    path = Path(path)
    if not path.exists() and path.name == SPEC and is_graph_dir(path.parent):
        # ``--spec G/spec.yaml`` (the docs' rebuild story) names the current version's spec.
        with contextlib.suppress(StoreError):
            path = current_dir(path.parent) / SPEC
    if path.exists() and not path.is_file() and not is_graph_dir(path.parent):
        # A spec the user names (``--spec``): the graph-directory wording of _read_text is wrong.
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise CorruptFileError(
            f"is {kind}; --spec takes a spec YAML file (e.g. G/spec.yaml of a built graph)",
            path=path,
        )
    text = _read_text(path, "no such spec file", cap=cap)
    data = bounded.loads_yaml(text, path=path, error=CorruptFileError)
    if data is None:
        return spec_from_document(data, path=path)
    try:
        return spec_from_dict(data)
    except SpecError as exc:
        raise SpecError(str(exc), entry=exc.entry, path=path) from exc


CHUNK_SHAPE = '{"id": "...", "text": "non-empty text", "doc_id": "...", "metadata": {...}}'


def _read_chunks(path: Path, cap: int | None = bounded.BASE_CAP) -> tuple[Chunk, ...]:
    chunks = []
    # Lines end at "\n" only (a "\r" before it is JSON whitespace): str.splitlines would also
    # cut at U+2028, U+2029 and U+0085, which JSON allows raw inside a string.
    for lineno, line in enumerate(_read_text(path, cap=cap).split("\n"), 1):
        if not line.strip():
            continue
        try:
            d = bounded.loads_json(
                line, path=path, line=lineno, error=CorruptFileError, text_only=True
            )
        except CorruptFileError as exc:
            if "invalid JSON" not in str(exc):
                raise
            raise CorruptFileError(
                f"{str(exc).removeprefix(f'{path}: ')}; expected one object {CHUNK_SHAPE}",
                path=path,
            ) from None
        problem = None
        if not isinstance(d, dict):
            problem = f"is a JSON {type(d).__name__}"
        elif not isinstance(d.get("id"), (str, int)) or isinstance(d.get("id"), bool):
            problem = "has no 'id' (a string)"
        elif not isinstance(d.get("text"), str) or not d["text"].strip():
            problem = f"'text' is {bounded.short(d.get('text'))}, not a non-empty string"
        elif not isinstance(d.get("metadata") or {}, dict):
            problem = "'metadata' is not an object"
        if problem:
            raise CorruptFileError(
                f"line {lineno}: chunk {problem}; expected {CHUNK_SHAPE}", path=path
            )
        chunks.append(
            Chunk(str(d["id"]), d["text"], str(d.get("doc_id", "") or ""), d.get("metadata") or {})
        )
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise CorruptFileError(f"duplicate chunk id {dup!r}", path=path)
    return tuple(chunks)


EDGE_SHAPE = (
    '{"source": VARIABLE, "target": VARIABLE, "mechanism": "...", "confidence": 0..1, '
    '"evidence": [chunk ids]}'
)


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, (int, float)) else "value")


def _edge_from_item(item: Any, i: int, path: Path | None) -> CausalEdge:
    """One ``graph.json`` edge; a malformed one is named with its index, file and shape."""
    where = f"edges[{i}]"
    if not isinstance(item, dict):
        raise CorruptFileError(
            f"{where} is a {_json_type(item)}; expected an object {EDGE_SHAPE}", path=path
        )
    if item.get("id") is not None:
        where += f" (id {item['id']!r})"
    for key in ("source", "target"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise CorruptFileError(
                f"{where} has no {key!r} variable name; expected {EDGE_SHAPE}", path=path
            )
    evidence = item.get("evidence", []) or []
    if not isinstance(evidence, list):
        raise CorruptFileError(f"{where}.evidence must be a list of chunk ids", path=path)
    confidence = item.get("confidence", 1.0)
    try:
        if isinstance(confidence, bool):
            raise ValueError
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise CorruptFileError(
            f"{where}.confidence is {confidence!r}; expected a number in [0, 1]", path=path
        ) from None
    return CausalEdge(
        id=str(item.get("id") or f"e{i}"),
        source=item["source"],
        target=item["target"],
        mechanism=str(item.get("mechanism", "") or ""),
        confidence=confidence,
        evidence=tuple(str(c) for c in evidence),
        effect=str(item.get("effect", "") or ""),
        quote=str(item.get("quote", "") or ""),
    )


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
            raise CorruptFileError(
                f"'variables' is a {_json_type(raw_vars)}; expected a list of variables, each "
                "a string 'Metric(entity, ...)' or an object {metric, entities, description}",
                path=path,
            )
        else:
            variables = [
                variable_from_item(item, f"variables[{i}]") for i, item in enumerate(raw_vars)
            ]
        raw_edges = data.get("edges")
        if raw_edges is None:
            raw_edges = []
        if not isinstance(raw_edges, list):
            raise CorruptFileError(
                f"'edges' is a {_json_type(raw_edges)}; expected a list of edge objects "
                f"{EDGE_SHAPE}",
                path=path,
            )
        edges = [_edge_from_item(item, i, path) for i, item in enumerate(raw_edges)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, SpecError):
            raise SpecError(str(exc), entry=exc.entry, path=path) from exc
        raise CorruptFileError(f"malformed entry: {exc!r}", path=path) from exc
    return tuple(variables), tuple(edges)


def _load_vectors(
    directory: Path, manifest: dict, key: str, texts: Sequence[str], notes: list[str]
) -> np.ndarray | None:
    info = (manifest.get("embeddings") or {}).get(key)  # an object: read_manifest checked it
    if info is None:
        return None
    if not isinstance(info.get("file"), str):
        raise CorruptFileError(f"'embeddings.{key}' has no 'file'", path=directory / MANIFEST)
    path = (directory / info["file"]).resolve()
    if not path.is_relative_to(directory.resolve()):
        raise CorruptFileError(
            f"'embeddings.{key}.file' points outside the graph directory", path=directory / MANIFEST
        )
    if not path.is_file():
        notes.append(f"{path.name} missing: {key} embeddings will be recomputed")
        return None
    problem = npy_header_problem(path, max(len(texts), _STALE_ROWS_ALLOWANCE))
    if problem:  # before np.load: a header may claim any shape, and checks would read it all
        notes.append(f"warning: {path.name} {problem}: {key} embeddings recomputed")
        return None
    try:
        # Memory-mapped, read-only: worker processes that load one directory share its pages
        # through the page cache instead of each holding a copy. Never pickle.
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptFileError(f"not a readable .npy array: {exc}", path=path) from exc
    if arr.ndim != 2 or arr.shape[0] != len(texts) or info.get("digest") != texts_digest(texts):
        notes.append(f"{path.name} is stale (the {key} changed): recomputed")
        return None
    problem = _vector_problem(arr, info.get("zero_rows"))
    if problem:
        notes.append(f"warning: {path.name} {problem}: {key} embeddings recomputed")
        return None
    if arr.dtype == np.float32 and arr.flags.c_contiguous:
        return arr  # the memmap itself (read-only): no copy
    return np.ascontiguousarray(arr, dtype=np.float32)  # another float dtype: converted in memory


# A stale file may hold more rows than the texts now loaded (documents removed by hand); up to
# this many it is still read and recognised as stale, beyond it the header alone is refused.
_STALE_ROWS_ALLOWANCE = 1_000_000
# No embedder this package knows is wider (the hashing embedder's own cap is 65,536).
MAX_VECTOR_DIM = 65_536


def npy_header_problem(path: Path, max_rows: int, max_dim: int = MAX_VECTOR_DIM) -> str | None:
    """Why the ``.npy`` at ``path`` cannot be a matrix of stored vectors, from its header alone.

    The header's shape must be 2-D with at most ``max_rows`` rows (the manifest's count, or the
    texts loaded) and ``d <= max_dim`` columns, its dtype a float of at most 8 bytes, and the
    file exactly as long as that array: a 128-byte file whose header claims shape
    ``(8, 10**9)`` is refused here, before anything is allocated or mapped. Fewer rows than
    expected is left to the caller (a stale file, recomputed quietly). A header that cannot be
    read at all is a ``CorruptFileError``.
    """
    try:
        with path.open("rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f".npy format version {version}, not 1.0 to 3.0")
            offset = f.tell()
        size = path.stat().st_size
    except (OSError, ValueError, EOFError) as exc:
        raise CorruptFileError(f"not a readable .npy array: {str(exc)[:200]}", path=path) from None
    if dtype.hasobject:  # np.load would need pickle, which is never allowed
        raise CorruptFileError("holds Python objects (a pickle); refused", path=path)
    if dtype.kind != "f" or dtype.itemsize > 8:
        return f"holds {dtype} values, not floats"
    if len(shape) != 2 or not 0 < shape[1] <= max_dim or shape[0] > max_rows:
        return f"has shape {tuple(shape)}, not (<= {max_rows:,}, 1..{max_dim:,}) (damaged)"
    expected = offset + shape[0] * shape[1] * dtype.itemsize
    if size != expected:
        return f"is {size:,} bytes where its header promises {expected:,} (truncated or padded)"
    return None


# Stored rows are L2-normalised by the embedder check (embedding.as_matrix); float32 rounding and
# float16 files stay well within this.
_UNIT_NORM_TOLERANCE = 1e-2
# Rows per block when checking stored vectors (16k rows of 384 float64: 50 MB at most).
_CHECK_ROWS = 16_384


def _vector_problem(arr: np.ndarray, recorded_zero_rows: Any) -> str | None:
    """Why stored vectors cannot be trusted (non-finite, damaged rows), or None when they can.

    An all-zero row is legitimate only as many times as the manifest recorded at save time (the
    hashing embedder maps a text without content words to zero); more mean a damaged file.
    Its dtype is a float already (``npy_header_problem`` read it from the header).
    """
    # Checked in blocks of rows, so a memory-mapped file is never copied whole into memory.
    norms = np.zeros(arr.shape[0])
    for start in range(0, arr.shape[0], _CHECK_ROWS):
        block = np.asarray(arr[start : start + _CHECK_ROWS], dtype=np.float64)
        if not np.all(np.isfinite(block)):
            return "holds NaN or infinite values"
        norms[start : start + block.shape[0]] = np.linalg.norm(block, axis=1)
    zero = int(np.count_nonzero(norms == 0))
    allowed = recorded_zero_rows if isinstance(recorded_zero_rows, int) else 0
    if zero > allowed:
        return f"has {zero} all-zero rows ({allowed} recorded when it was written)"
    if np.any(np.abs(norms[norms > 0] - 1.0) > _UNIT_NORM_TOLERANCE):
        return "has rows that are not unit length"
    return None


def _read_optional_object(
    directory: Path, name: str, notes: list[str], cap: int | None = bounded.BASE_CAP
) -> dict[str, Any] | None:
    """An optional JSON object file of the directory; a corrupt one (or one past the parsing
    bounds) is noted and ignored: it never blocks loading."""
    try:
        data = _read_json(_confined(directory, name), cap=cap)
    except StoreError as exc:
        notes.append(f"warning: {name} ignored: {exc}")
        return None
    if not isinstance(data, dict):
        notes.append(f"warning: {name} ignored: it is a JSON {_json_type(data)}, not an object")
        return None
    return data


# A reader retries when a writer published a new version while it read (the old one is then
# removed under it); more attempts than this mean the directory is broken, not busy.
_LOAD_ATTEMPTS = 20


def read_pointer(directory: str | os.PathLike) -> dict[str, Any]:
    """A graph directory's top ``manifest.json``: refuses, as ``load_graph`` does, a folder that
    is not a graph, without reading the graph (``hcg add`` checks this before it locks)."""
    directory = Path(directory)
    if not directory.is_dir():
        why = "it is a file, not a folder" if directory.exists() else "it does not exist"
        raise MissingFileError(
            f"is not a graph directory ({why}); pass the folder hcg build --out wrote",
            path=directory,
        )
    return read_manifest(directory)


def load_graph(directory: str | os.PathLike) -> StoredGraph:
    """Read and validate a graph directory (written by ``save_graph`` or by hand).

    Reads the version ``manifest.json`` points at (or the flat files of a format 1 or
    hand-written directory); writes nothing, so a directory on a read-only disk loads. When a
    writer publishes a new version during the read, the read starts again on the new one, so
    the result is one whole version, never a mix.
    """
    directory = Path(directory)
    for attempt in range(_LOAD_ATTEMPTS):
        pointer = read_pointer(directory)
        try:
            if "current" in pointer:
                folder = _pointed_dir(directory, pointer)
                manifest = read_manifest(folder)
                if "current" in manifest:
                    raise CorruptFileError(
                        "a version folder's manifest must not point at another version",
                        path=folder / MANIFEST,
                    )
            else:
                folder, manifest = directory, pointer
            stored = _load_files(folder, manifest)
        except (StoreError, SpecError):
            if attempt + 1 < _LOAD_ATTEMPTS and _moved(directory, pointer):
                continue
            raise
        if _moved(directory, pointer) and not (folder / MANIFEST).exists():
            continue  # published and removed while read: optional files may have vanished
        return dataclasses.replace(stored, path=directory)
    raise StoreError("kept changing while it was read; retry", path=directory)


def _moved(directory: Path, pointer: dict[str, Any]) -> bool:
    """Whether ``manifest.json`` now points elsewhere than ``pointer`` (a writer published)."""
    try:
        now = bounded.read_json(directory / MANIFEST, cap=MANIFEST_CAP)
    except StoreError:
        return True
    return not isinstance(now, dict) or now.get("current") != pointer.get("current")


def _load_files(directory: Path, manifest: dict[str, Any]) -> StoredGraph:
    """The graph in one folder of flat files, ``manifest`` being its (already read) manifest."""
    graph = _read_graph(directory, manifest)
    notes: list[str] = []
    var_vecs, chunk_vecs = (
        _load_vectors(directory, manifest, key, embedded_texts(graph, key), notes)
        for key in VECTOR_FILES
    )
    cap = _cap(manifest, _OPTIONAL_PER_ITEM)
    report = ledger = None
    if (directory / REPORT).exists() or (directory / REPORT).is_symlink():
        report = _read_optional_object(directory, REPORT, notes, cap)  # never blocks a query
    if manifest.get("incremental") == LEDGER:  # if unreadable, edits link evidence only
        ledger = _read_optional_object(directory, LEDGER, notes, cap)
    return StoredGraph(
        graph, manifest, var_vecs, chunk_vecs, report, directory, tuple(notes), ledger
    )


def _read_graph(directory: Path, manifest: dict[str, Any]) -> CausalGraph:
    """The spec, chunks and graph of one folder, checked against each other."""
    spec = read_spec_file(_confined(directory, SPEC), cap=_cap(manifest, _SPEC_PER_ITEM))
    chunks = _read_chunks(_confined(directory, CHUNKS), cap=_cap(manifest, _CHUNKS_PER_ITEM))
    variables, edges = graph_from_dict(
        _read_json(_confined(directory, GRAPH), cap=_cap(manifest, _GRAPH_PER_ITEM)),
        spec,
        directory / GRAPH,
    )
    try:
        validate_graph(spec, variables, edges, {c.id for c in chunks})
    except SpecError as exc:
        raise SpecError(str(exc), entry=exc.entry, path=directory / GRAPH) from exc
    return CausalGraph(spec, variables, edges, chunks)
