"""The dense-search seam: where the hybrid ranker gets its dense candidates and their cosines.

The hybrid ranker (``hybrid.py``) needs two things from dense search, both over chunk rows (the
row of a chunk in ``graph.chunks``):

* ``search(query_vec, n, allowed)``: the ``n`` chunks closest to the query by cosine (only those
  ``allowed`` when a mask is given), best first, with their cosines;
* ``cosines(query_vec, rows)``: the cosines of given chunks (the BM25 and graph candidates that
  dense search did not return, whose dense part the fusion still needs).

:class:`NumpyDenseIndex` is the default: the chunk vectors as one in-process matrix (exact, and
the right choice up to a few hundred thousand chunks, see docs/scaling.md).
:class:`StoreDenseIndex` is the same protocol over an external vector store; the adapters
subclass it for their framework's stores (``llama_index_hcg/_dense.py``,
``langchain_hcg/_dense.py``), so a Qdrant, Milvus or pgvector collection serves the dense part
while BM25 and the graph stay local.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, StoreError
from ..types import Chunk
from .lexical import top_k_indices
from .matvec import matvec

# Fetch this many times more than asked when a filter mask must be applied after a store's
# search (a store knows nothing of the mask), growing until enough allowed rows are found.
OVERFETCH_FACTOR = 4
# Cosines closer than this count as tied (a store's float32 arithmetic differs from numpy's in
# the last bits); ties are broken by row, as the in-process matrix breaks them.
TIE_TOLERANCE = 1e-6
# Point ids in a vector store are UUIDs derived from the chunk id (Qdrant and Milvus accept only
# UUIDs or integers); the same chunk id always gives the same point, so rewrites are upserts.
POINT_NAMESPACE = uuid.UUID("6f1f0c9e-3b0e-5a53-9a3e-8f1d2f0c4b7a")
# Metadata key under which a stored point keeps the chunk id it stands for.
CHUNK_ID_KEY = "hcg_chunk_id"
# A chunk scored against its own stored vector must come back at cosine 1 within this.
SELF_SCORE_TOLERANCE = 1e-3


@runtime_checkable
class DenseIndex(Protocol):
    """Dense search over the chunks, by row (see the module docstring)."""

    def search(
        self, query_vec: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows (int64) and cosines (float) of the ``n`` best chunks, best first."""
        ...

    def cosines(self, query_vec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The cosine of each of ``rows`` with the query, in the order given."""
        ...


class NumpyDenseIndex:
    """The chunk vectors as one in-process float32 matrix (rows L2-normalised): exact search.

    >>> ix = NumpyDenseIndex(np.eye(3, dtype=np.float32))
    >>> rows, cos = ix.search(np.array([0.0, 1.0, 0.0], np.float32), 2)
    >>> rows.tolist(), cos.tolist()
    ([1, 0], [1.0, 0.0])
    """

    def __init__(self, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ConfigError(f"chunk vectors must be a matrix, got shape {vectors.shape}")
        self.vectors = vectors

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def search(
        self, query_vec: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        sims = matvec(self.vectors, np.asarray(query_vec, np.float32))
        if allowed is not None:
            sims = np.where(allowed, sims, -np.inf)
        rows, cos = top_k_indices(sims, n)
        if allowed is not None:
            keep = np.isfinite(cos)
            rows, cos = rows[keep], cos[keep]
        return rows, cos

    def cosines(self, query_vec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return matvec(self.vectors[np.asarray(rows, np.int64)], np.asarray(query_vec, np.float32))


class StoreDenseIndex:
    """The :class:`DenseIndex` protocol over an external vector store, by chunk row.

    The adapters subclass it for their framework's store; a subclass implements ``_query``
    (the store's similarity search, optionally restricted to point ids) and ``write``/``delete``.
    Each chunk is one point whose id is :func:`store_point_id` of the chunk id. The store must
    score by cosine similarity (higher is closer): ``check_self_score`` refuses one that does not.

    Args:
        chunk_ids: the graph's chunk ids in row order.
    """

    def __init__(self, chunk_ids: Sequence[str]) -> None:
        self.chunk_ids = list(chunk_ids)
        self.point_ids = [store_point_id(c) for c in self.chunk_ids]
        self._row_of_point = {p: i for i, p in enumerate(self.point_ids)}

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def _query(
        self, vector: np.ndarray, k: int, point_ids: list[str] | None = None
    ) -> tuple[list[str], list[float]]:
        """Point ids and cosines of the store's best ``k`` (among ``point_ids`` when given)."""
        raise NotImplementedError

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Upsert these chunks' points into the store."""
        raise NotImplementedError

    def delete(self, chunk_ids: Sequence[str]) -> None:
        """Remove these chunks' points from the store."""
        raise NotImplementedError

    # Incremental edits of the core retriever (retrieval/updates.py): the store is written
    # first, then an index over the new row order is returned (this one keeps serving its rows).

    def extended(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> StoreDenseIndex:
        """Write ``chunks`` (appended rows) to the store; the index over all rows."""
        self.write(chunks, vectors)
        out = copy.copy(self)  # lists copied, not recomputed: no UUID is derived twice
        out.chunk_ids = self.chunk_ids + [c.id for c in chunks]
        out.point_ids = self.point_ids + [store_point_id(c.id) for c in chunks]
        out._row_of_point = dict(self._row_of_point)
        out._row_of_point.update(
            (p, i) for i, p in enumerate(out.point_ids[len(self) :], start=len(self))
        )
        return out

    def subset(self, keep: np.ndarray, removed: Sequence[str]) -> StoreDenseIndex:
        """Delete the ``removed`` chunks' points; the index over the rows where ``keep``."""
        self.delete(removed)
        return self._over([c for c, k in zip(self.chunk_ids, keep.tolist(), strict=True) if k])

    def _over(self, chunk_ids: list[str]) -> StoreDenseIndex:
        out = copy.copy(self)
        StoreDenseIndex.__init__(out, chunk_ids)
        return out

    def search(
        self, query_vec: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        def top(m: int) -> tuple[np.ndarray, np.ndarray]:
            return self._rows(*self._query(query_vec, m))

        return search_allowed(top, n, len(self.chunk_ids), allowed)

    def cosines(self, query_vec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        if rows.size == 0:
            return np.zeros(0)
        found, cos = self._rows(
            *self._query(query_vec, int(rows.size), [self.point_ids[r] for r in rows.tolist()])
        )
        got = dict(zip(found.tolist(), cos.tolist(), strict=True))
        missing = [self.chunk_ids[r] for r in rows.tolist() if r not in got]
        if missing:
            raise StoreError(
                f"the vector store lacks {len(missing)} of the graph's chunks (first: "
                f"{missing[0]!r}); it was not written with this graph (build or load the index "
                "with this vector store)"
            )
        return np.asarray([got[r] for r in rows.tolist()], np.float64)

    def holds(self, chunk_id: str, vector: np.ndarray) -> bool:
        """Whether the store holds this chunk's point with this vector (a cheap probe on load:
        a persisted store is not rewritten; one written by another embedder is)."""
        try:
            ids, sims = self._query(vector, 1, [store_point_id(chunk_id)])
        except Exception:  # noqa: BLE001 - stores raise their own errors for an absent collection
            return False  # not held: the write that follows reports any real failure
        return bool(ids) and abs(sims[0] - 1.0) <= SELF_SCORE_TOLERANCE

    def check_self_score(self, chunk_id: str, vector: np.ndarray) -> None:
        """After a write: the chunk scored against its own vector must come back at cosine 1."""
        ids, sims = self._query(vector, 1, [store_point_id(chunk_id)])
        if not ids:
            raise StoreError(
                f"the vector store does not return the point it was just given (chunk "
                f"{chunk_id!r}); it must support searches restricted to point ids"
            )
        if abs(sims[0] - 1.0) > SELF_SCORE_TOLERANCE:
            raise ConfigError(
                f"the vector store scored a chunk against its own vector at {sims[0]:.4f}, not "
                "1.0: it must hold this embedder's vectors and score by cosine similarity "
                "(higher is closer), e.g. Qdrant with Distance.COSINE"
            )

    def _rows(
        self, point_ids: Sequence[str], sims: Sequence[float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosines of results; points of chunks not in the graph (a stale collection,
        another writer) are skipped."""
        pairs = [
            (self._row_of_point[str(p)], float(s))
            for p, s in zip(point_ids, sims, strict=True)
            if str(p) in self._row_of_point
        ]
        return np.asarray([r for r, _ in pairs], np.int64), np.asarray([s for _, s in pairs])


def store_point_id(chunk_id: str) -> str:
    """The vector-store point id of a chunk: a UUID derived from its id (stable across runs)."""
    return str(uuid.uuid5(POINT_NAMESPACE, chunk_id))


def search_allowed(
    search: Callable[[int], tuple[np.ndarray, np.ndarray]],
    n: int,
    total: int,
    allowed: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """A store's top-``n`` search made exact: a row mask applied after it, ties cut by row.

    ``search(m)`` returns the store's best ``m`` rows and cosines (best first). The best ``n``
    allowed rows are certain once the store has returned a row strictly below the ``n``-th
    allowed cosine (anything it did not return is lower still), or has nothing more; until then
    ``m`` grows by :data:`OVERFETCH_FACTOR`. Asking one more than ``n`` also settles ties at the
    boundary, which a store breaks arbitrarily: here, as in :class:`NumpyDenseIndex`, the lower
    row wins.

    >>> fake = lambda m: (np.arange(min(m, 10)), 1.0 - np.arange(min(m, 10)) // 2 / 10)
    >>> search_allowed(fake, 3, 10, np.arange(10) % 3 == 0)[0].tolist()
    [0, 3, 6]
    """
    n = max(0, min(int(n), total))
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    m = min(total, n + 1)
    while True:
        rows, cos = search(m)
        rows, cos = np.asarray(rows, np.int64), np.asarray(cos, np.float64)
        exhausted = rows.size < m or m >= total
        lowest = float(cos.min()) if cos.size else -np.inf
        if allowed is not None:
            keep = allowed[rows]
            rows, cos = rows[keep], cos[keep]
        rows, cos = _rank(rows, cos)
        if exhausted or (rows.size >= n and lowest < cos[n - 1] - TIE_TOLERANCE):
            return rows[:n], cos[:n]
        m = min(total, m * OVERFETCH_FACTOR)


def _rank(rows: np.ndarray, cos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted by cosine, best first; cosines within :data:`TIE_TOLERANCE` of the one before
    count as tied and go by row (a store's float32 rounding must not reorder equal vectors)."""
    order = np.lexsort((rows, -cos))
    rows, cos = rows[order], cos[order]
    group = np.concatenate([[0], np.cumsum(-np.diff(cos) > TIE_TOLERANCE)]) if cos.size else cos
    order = np.lexsort((rows, group))
    return rows[order], cos[order]
