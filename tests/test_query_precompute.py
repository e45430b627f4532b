"""Query-path work done once instead of per query, or as arrays instead of loops: each gives
exactly what the per-query (or looped) computation gave (issue 41's latency target).

Each test compares against the earlier computation, written out here as the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.corpus import word_spans
from hcg_core.embedders import HashingEmbedder
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.retrieval.lexical import BM25Index
from hcg_core.retrieval.paper import Cones, cone_rank_of_nodes, match_nodes
from hcg_core.retrieval.repeats import cut_to, without_repeats
from hcg_core.types import Chunk, RetrievedChunk

TEXTS = [
    "Smoking damages the airways and is the leading cause of lung cancer worldwide.",
    "Radon gas in basements is the second cause of lung cancer after smoking smoking.",
    "Chemotherapy for lung cancer often causes nausea and fatigue.",
    "",
    "Statins lower cholesterol and the risk of heart attack.",
]


def _unit_terms_per_query(index: BM25Index, rows: np.ndarray):
    """The per-query scaling ``HybridRanker.word_features`` did before it was cached."""
    lens, terms, w = index.doc_terms(rows)
    row = np.repeat(np.arange(rows.size), lens)
    w = w.astype(np.float64)
    norms = np.sqrt(np.bincount(row, weights=w * w, minlength=rows.size))
    norms[norms == 0] = 1.0
    return lens, terms, (w / norms[row]).astype(np.float32)


def test_unit_doc_terms_are_the_per_query_weights_to_the_bit_and_follow_edits():
    index = BM25Index(TEXTS)
    rows = np.array([4, 0, 3, 1])
    got_want = zip(index.unit_doc_terms(rows), _unit_terms_per_query(index, rows), strict=True)
    for got, want in got_want:
        assert got.dtype == want.dtype and np.array_equal(got, want)
    before = index.unit_doc_terms(np.array([0]))[2].copy()
    # Adding documents changes every idf: the cached weights are scaled again.
    index.add(["Lung cancer screening finds cancer early.", "Airways and smoking."])
    rows = np.array([6, 0, 5])
    got_want = zip(index.unit_doc_terms(rows), _unit_terms_per_query(index, rows), strict=True)
    for got, want in got_want:
        assert np.array_equal(got, want)
    assert not np.array_equal(index.unit_doc_terms(np.array([0]))[2], before)
    sub = index.subset(np.array([True, False, True, True, True, False, True]))
    rows = np.arange(sub.n_docs)
    got_want = zip(sub.unit_doc_terms(rows), _unit_terms_per_query(sub, rows), strict=True)
    for got, want in got_want:
        assert np.array_equal(got, want)


def _match_nodes_loop(sims, metric_starts, *, tau_min, top_metrics, band, per_metric):
    """Definition 2 as it was written before, one metric at a time."""
    best = np.maximum.reduceat(sims, metric_starts[:-1])
    kept = np.flatnonzero(best >= tau_min)
    if kept.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, sims.dtype)
    kept = kept[np.argsort(-best[kept], kind="stable")[:top_metrics]]
    rows = []
    for g in kept:
        lo, hi = metric_starts[g], metric_starts[g + 1]
        tau_j = min(tau_min, float(best[g]) * (1.0 - band))
        local = sims[lo:hi]
        ok = np.flatnonzero(local >= tau_j)
        ok = ok[np.argsort(-local[ok], kind="stable")[:per_metric]]
        rows.append(ok + lo)
    out = np.concatenate(rows)
    order = np.argsort(-sims[out], kind="stable")
    return out[order], sims[out[order]]


@pytest.mark.parametrize("seed", range(40))
def test_match_nodes_matches_the_per_metric_loop(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=rng.integers(1, 12))
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    # Coarse values make ties (within and across metrics) common.
    sims = (rng.integers(0, 12, size=int(starts[-1])) / 12.0).astype(np.float32)
    kw = {
        "tau_min": float(rng.choice([0.3, 0.5, 0.35, 0.9])),
        "top_metrics": int(rng.integers(1, 6)),
        "band": float(rng.choice([0.0, 0.1, 0.2, 0.5])),
        "per_metric": int(rng.integers(1, 4)),
    }
    got, want = match_nodes(sims, starts, **kw), _match_nodes_loop(sims, starts, **kw)
    assert got[0].tolist() == want[0].tolist()
    assert got[1].dtype == want[1].dtype and np.array_equal(got[1], want[1])


def test_match_nodes_compares_in_the_similarities_dtype():
    # A threshold a hair above a float32 similarity rounds to it: admitted, as before.
    sims = np.array([0.9, 0.3], dtype=np.float32)
    starts = np.array([0, 2])
    tau = float(sims[1]) + 1e-12
    kw = {"tau_min": tau, "top_metrics": 1, "band": 0.0, "per_metric": 3}
    assert match_nodes(sims, starts, **kw)[0].tolist() == [0, 1]
    assert _match_nodes_loop(sims, starts, **kw)[0].tolist() == [0, 1]


@pytest.mark.parametrize("seed", range(20))
def test_cone_rank_of_nodes_matches_the_loop_over_cones(seed):
    rng = np.random.default_rng(seed)
    n, n_groups = int(rng.integers(1, 40)), int(rng.integers(1, 140))
    present = np.sort(rng.choice(1000, size=n_groups, replace=False))
    slot = {int(g): i for i, g in enumerate(present)}
    words = (n_groups + 63) // 64
    bits = rng.integers(0, 2**63, size=(n, words), dtype=np.uint64)
    bits &= rng.integers(0, 2**63, size=(n, words), dtype=np.uint64)  # sparser
    kept = rng.permutation(present)[: int(rng.integers(0, min(6, n_groups) + 1))]
    cones = Cones(kept.astype(np.int64), np.zeros(kept.size, np.int64), bits, slot)
    want = np.full(n, kept.size, dtype=np.int64)
    for r in range(kept.size - 1, -1, -1):
        want[cones.member(int(kept[r]))] = r
    got = cone_rank_of_nodes(cones, n)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


CUT_TEXTS = [
    "One two three four five six seven eight nine ten.",
    "吸烟有害。 Smoking kills. 肺癌，常见！",
    "short " + "x" * 250 + " tail " + "y" * 100 + "z end",
    "  spaced\tout\n\nwords  here ",
]


@pytest.mark.parametrize("text", CUT_TEXTS)
def test_cut_to_with_known_word_counts_equals_counting_them(text):
    spans = word_spans(text)
    rc = RetrievedChunk(
        Chunk("u", text, doc_id="d", metadata={"start_word": 7, "end_word": 7 + len(spans)}),
        1.0,
        "fallback",
    )
    for lo in range(len(spans)):
        for hi in range(lo + 1, len(spans) + 1):
            a, b = spans[lo][0], spans[hi - 1][1]
            known = cut_to(rc, a, b, words=(lo, hi - lo))
            counted = cut_to(rc, a, b)
            assert known == counted
            assert known.chunk.metadata["end_word"] - known.chunk.metadata["start_word"] == (
                hi - lo
            )


def test_without_repeats_with_a_memo_of_spans_cuts_as_without():
    text = CUT_TEXTS[2]
    n = len(word_spans(text))

    def unit(cid, start):
        meta = {"start_word": start, "end_word": start + n}
        return RetrievedChunk(Chunk(cid, text, doc_id="d", metadata=meta), 1.0, "fallback")

    results = [unit("a", 0), unit("b", 3), unit("c", n + 10)]
    calls = []

    def memo(t):
        calls.append(t)
        return word_spans(t)

    assert without_repeats(results, memo) == without_repeats(results)
    assert calls == [text]  # only the one unit that overlaps an earlier one is split into words


def test_ranker_keeps_word_spans_per_unit_and_counts_words_as_split_does():
    chunks = [
        Chunk(f"c{i}", t, doc_id="d", metadata={"start_word": 5 * i, "end_word": 5 * i + 9})
        for i, t in enumerate(
            [
                "alpha beta gamma delta epsilon zeta eta theta iota",
                "zeta eta theta iota kappa lambda mu nu xi",
                "kappa lambda mu nu xi omicron pi rho sigma",
            ]
        )
    ]
    emb = HashingEmbedder(dim=64)
    r = HybridRanker(chunks, emb.embed_documents([c.text for c in chunks]))
    for c in chunks:
        assert r.unit_word_spans(c.text).tolist() == [list(s) for s in word_spans(c.text)]
    assert len(r._word_spans) == len(chunks)
    r.unit_word_spans("not a unit's text at all")  # a full memo keeps no more
    assert len(r._word_spans) == len(chunks)
    res = r.rank("kappa lambda zeta eta", emb.embed_query("kappa lambda zeta eta"), k=3)
    assert any("span" in rc.details for rc in res.chunks)  # a repeat was cut
    assert res.diagnostics["words"] == sum(len(rc.chunk.text.split()) for rc in res.chunks)
