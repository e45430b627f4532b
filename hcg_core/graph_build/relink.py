"""``hcg relink``: link the edges of an existing graph directory to the chunks that state them again.

No LLM call and no edge added or removed: every edge gets the evidence ``evidence.link_evidence``
finds in the directory's own chunks (the same linking a build ends with, so a build and a relink
of its graph give the same evidence). An edge that no chunk states is left with no evidence, not
with its old evidence: the format allows an edge without evidence (retrieval then reaches it but
selects no text by it), and old evidence may be exactly the unrelated chunk this replaces.

The new graph is published as a new version by ``store.save_graph`` (atomic: a reader, or a relink
killed at any point, leaves the previous version whole and readable). The vectors are carried over
as stored (the chunks and variables do not change), and the build report gains an ``evidence``
section with this linking's counts (``hcg inspect`` prints it).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import DEFAULT_EVIDENCE_PER_EDGE
from ..errors import StoreError
from ..graph_lock import graph_lock
from ..store import load_graph, save_graph
from .evidence import evidence_figures, relink_graph


@dataclass(frozen=True)
class RelinkResult:
    """Evidence figures before and after (``evidence.evidence_figures``), the linker's counts,
    and whether a new version was written."""

    before: dict[str, Any]
    after: dict[str, Any]
    linking: dict[str, Any]
    written: bool

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_writable(directory: Path) -> None:
    """Refuse a directory this process cannot write before any work (the graph stays as it is)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(
            "cannot write to this graph directory (permission denied); nothing was changed. "
            "Copy it somewhere writable, or run with --dry-run to see the figures only",
            path=directory,
        )


def relink_directory(
    directory: str | os.PathLike,
    *,
    dry_run: bool = False,
    per_edge: int = DEFAULT_EVIDENCE_PER_EDGE,
    lock_timeout: float | None = None,
) -> RelinkResult:
    """Re-link every edge of the graph in ``directory`` (format 1 or 2); publish the result as a
    new version unless ``dry_run``. Raises ``StoreError`` for a directory that cannot be
    written (nothing changed) and the loader's errors for one that is not a graph."""
    path = Path(directory)
    load_graph(path)  # a directory that is not a graph is refused before it is locked
    if dry_run:
        return _relink(path, per_edge, write=False)
    _check_writable(path)
    with graph_lock(path, timeout=lock_timeout):  # from load to save: no concurrent edit lost
        return _relink(path, per_edge, write=True)


def _relink(path: Path, per_edge: int, *, write: bool) -> RelinkResult:
    stored = load_graph(path)
    before = evidence_figures(stored.graph)
    graph, stats = relink_graph(stored.graph, per_edge=per_edge)
    linking = stats.as_dict()
    after = evidence_figures(graph)
    if write:
        report = dict(stored.report or {})
        report["evidence"] = linking
        if isinstance(report.get("coverage"), dict) and after["chunks"]:
            # The share of chunks cited is the evidence's: say what the new evidence cites.
            cited = round(after["chunks_cited"] / after["chunks"], 4)
            report["coverage"] = {**report["coverage"], "chunks_cited_as_evidence": cited}
        save_graph(
            graph,
            path,
            embedder_name=stored.embedder_name,
            variable_embeddings=stored.variable_embeddings,
            chunk_embeddings=stored.chunk_embeddings,
            report=report,
            ledger=stored.ledger,
        )
    return RelinkResult(before, after, linking, write)
