"""Honest scores on the defaults: in [0, 1], best first, and an off-topic question scores low."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hcg_core.cli import main
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.types import RetrievedChunk

pytestmark = pytest.mark.slow  # the defaults include the MiniLM model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "corpus"
ON_TOPIC = [
    "Why does smoking raise the risk of stroke?",
    "What does high blood sugar do to the kidneys?",
    "How does high blood pressure damage the arteries?",
]
OFF_TOPIC = [
    "What is the capital of France?",
    "Who won the football world cup in 1998?",
    "How do I bake sourdough bread?",
]
# The cut-off docs/configuration.md gives for SimilarityPostprocessor and score filters.
DOCUMENTED_CUTOFF = 0.2


@pytest.fixture(scope="module")
def retriever(tmp_path_factory) -> CausalGraphRetriever:
    out = tmp_path_factory.mktemp("scores") / "g"
    assert main(["build", str(EXAMPLES), "--out", str(out), "--quiet"]) == 0
    return CausalGraphRetriever.load(out)


def test_scores_are_sorted_in_unit_range_with_parts(retriever):
    for q in ON_TOPIC + OFF_TOPIC:
        chunks = retriever.retrieve(q, k=6).chunks
        scores = [c.score for c in chunks]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)
        for c in chunks:
            assert {"bm25", "dense", "graph"} <= set(c.details)
            assert all(0.0 <= c.details[p] <= 1.0 for p in ("bm25", "dense", "graph"))
        assert len({c.chunk.id for c in chunks}) == len(chunks)  # each unit at most once


def test_off_topic_questions_score_below_on_topic_ones(retriever):
    on = [retriever.retrieve(q, k=3).chunks[0].score for q in ON_TOPIC]
    off = [retriever.retrieve(q, k=3).chunks[0].score for q in OFF_TOPIC]
    assert max(off) < DOCUMENTED_CUTOFF < min(on), (on, off)


@pytest.mark.parametrize("question", ["", "   \n", None])
def test_an_empty_question_is_a_typed_error(retriever, question):
    from hcg_core.errors import ConfigError

    with pytest.raises(ConfigError, match="non-empty string"):
        retriever.retrieve(question)


def _lifted(vectors: np.ndarray, lift: np.ndarray) -> np.ndarray:
    """Vectors moved towards one shared direction and renormalised: an embedder whose unrelated
    texts sit at a high cosine (multilingual-e5 puts them near 0.8; MiniLM near 0.2)."""
    out = vectors + lift
    return (out / np.linalg.norm(out, axis=-1, keepdims=True)).astype(np.float32)


def test_the_cutoff_holds_for_an_embedder_with_a_high_background(retriever):
    emb = retriever.chunk_embeddings
    lift = np.full(emb.shape[1], 2.0 / np.sqrt(emb.shape[1]))  # a shared component of norm 2
    ranker = HybridRanker(retriever.graph.chunks, _lifted(emb, lift))

    def top(q: str) -> RetrievedChunk:
        qvec = _lifted(retriever.embed_query(q), lift)
        return ranker.rank(q, qvec, k=3).chunks[0]

    # The premise: raw cosines of off-topic questions are now high (they were near 0.1).
    assert min(top(q).details["dense"] for q in OFF_TOPIC) > 0.6
    on = [top(q).score for q in ON_TOPIC]
    off = [top(q).score for q in OFF_TOPIC]
    assert max(off) < DOCUMENTED_CUTOFF < min(on), (on, off)


def test_the_running_background_matches_a_fresh_one_after_edits(retriever):
    emb, chunks = retriever.chunk_embeddings, retriever.graph.chunks
    qvec = retriever.embed_query(ON_TOPIC[0])
    grown = HybridRanker(chunks[:5], emb[:5]).extended(chunks[5:], emb)
    assert grown.background(qvec) == pytest.approx(HybridRanker(chunks, emb).background(qvec))
    keep = np.arange(len(chunks)) % 2 == 0
    fresh = HybridRanker([c for c, k in zip(chunks, keep, strict=True) if k], emb[keep])
    assert grown.subset(keep, emb[keep]).background(qvec) == pytest.approx(fresh.background(qvec))
    assert HybridRanker(chunks, None).background(qvec) == 0.0  # no vectors: raw cosines
