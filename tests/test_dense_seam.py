"""The hybrid ranker's dense seam: any DenseIndex gives the ranking the in-process matrix gives.

A store-like index (``StoreDenseIndex`` over a brute-force "store" that knows no filter and
orders equal scores the wrong way) must reproduce the default ranking exactly: ids, order and
scores, with a candidate count far below the corpus, filters, passages, k above the candidate
count (padding). No framework or database needed: this pins the core seam.
"""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.config import HybridConfig
from hcg_core.retrieval.dense import DenseIndex, NumpyDenseIndex, StoreDenseIndex
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.types import Chunk

TOPICS = ("aspirin blood clots", "statins cholesterol", "salt blood pressure", "sleep stress")


class FakeStore(StoreDenseIndex):
    """Brute force over a matrix, answering only the store calls; ties by descending row."""

    def __init__(self, chunk_ids, vectors):
        super().__init__(chunk_ids)
        self.vectors = np.asarray(vectors, np.float32)
        self.calls = 0

    def _query(self, vector, k, point_ids=None):
        self.calls += 1
        sims = self.vectors @ np.asarray(vector, np.float32)
        rows = np.arange(sims.size)
        if point_ids is not None:
            rows = np.asarray([self._row_of_point[p] for p in point_ids if p in self._row_of_point])
        order = rows[np.lexsort((-rows, -sims[rows]))][:k]
        return [self.point_ids[r] for r in order], sims[order].tolist()


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    chunks = []
    for i in range(60):
        words = " ".join(rng.choice(TOPICS, size=3))
        # Every fifth chunk repeats an earlier text: equal cosines at the candidate cut.
        text = chunks[i - 5].text if i % 5 == 4 else f"Note {i % 7}: {words} in adults."
        chunks.append(Chunk(f"c{i}", text, f"d{i % 4}", {"start_word": 0, "end_word": 9}))
    # Vectors unrelated to the words, so BM25's and dense search's candidates differ and the
    # BM25 candidates' cosines must be fetched; repeated texts get repeated vectors (ties).
    vectors = rng.standard_normal((len(chunks), 16)).astype(np.float32)
    for i in range(4, len(chunks), 5):
        vectors[i] = vectors[i - 5]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


def _ranked(ranker, q, k, allowed, vectors):
    qvec = np.random.default_rng(len(q)).standard_normal(16).astype(np.float32)
    qvec /= np.linalg.norm(qvec)
    out = ranker.rank(q, qvec, k=k, allowed=allowed)
    # Every returned unit's dense part is its chunk's true cosine (clipped), whichever signal
    # made it a candidate: the seam fetched the cosines dense search did not return.
    row = {c.id: i for i, c in enumerate(ranker.chunks)}
    for c in out.chunks:
        chunk_id = c.chunk.metadata.get("passage_of", c.chunk.id)
        want = float(np.clip(vectors[row[chunk_id]] @ qvec, 0, 1))
        assert c.details["dense"] == pytest.approx(want, abs=1e-6)
    return [(c.chunk.id, c.score, c.details["dense"]) for c in out.chunks]


@pytest.mark.parametrize(
    "config",
    [
        HybridConfig(candidates=3),
        HybridConfig(candidates=5, passage_words=4),
    ],
)
def test_store_like_index_ranks_as_numpy(corpus, config):
    chunks, vectors = corpus
    store = FakeStore([c.id for c in chunks], vectors)
    assert isinstance(store, DenseIndex) and isinstance(NumpyDenseIndex(vectors), DenseIndex)
    plain = HybridRanker(chunks, vectors, config)
    # As CausalGraphRetriever does: search goes through the store, and the vectors in memory give
    # the score's background (the query's mean cosine to the corpus).
    stored = HybridRanker(chunks, vectors, config, dense=store)
    # A store alone ranks the same; its scores then count from a background of 0.
    bare = HybridRanker(chunks, None, config, dense=store)
    even = np.arange(len(chunks)) % 2 == 0
    for q in ("aspirin and blood", "cholesterol statins", "stress", "unrelated words"):
        for k in (2, 8, 40):  # 40 > candidates: padding needs the other chunks' cosines
            for allowed in (None, even):
                a = _ranked(plain, q, k, allowed, vectors)
                b = _ranked(stored, q, k, allowed, vectors)
                assert [x[0] for x in a] == [x[0] for x in b], (q, k, allowed is None)
                assert np.allclose([x[1:] for x in a], [x[1:] for x in b], atol=1e-6)
                c = _ranked(bare, q, k, allowed, vectors)
                assert [x[0] for x in a] == [x[0] for x in c], (q, k, allowed is None)
    assert store.calls > 0


def test_store_index_reports_missing_chunks(corpus):
    chunks, vectors = corpus
    store = FakeStore([c.id for c in chunks], vectors)
    store._row_of_point.pop(store.point_ids[3])  # the store no longer has chunk c3
    from hcg_core.errors import StoreError

    with pytest.raises(StoreError, match="lacks 1 of the graph's chunks"):
        store.cosines(vectors[0], np.array([1, 3]))
