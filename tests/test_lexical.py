"""BM25 in numpy: exact scores on a hand-checked case, and agreement with bm25s (lucene)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hcg_core.errors import ConfigError
from hcg_core.retrieval.lexical import BM25Index, fold_plural, tokenize, top_k_indices

CORPUS = [
    "Aspirin inhibits platelet aggregation and thins the blood.",
    "High blood pressure raises the risk of stroke and heart failure.",
    "Smoking is the main risk factor for lung cancer; radon exposure is another.",
    "UV radiation exposure is the primary risk factor for basal cell carcinoma.",
    "Chemotherapy for lung cancer causes nausea, fatigue and hair loss.",
    "Statins lower cholesterol and reduce the risk of heart attack and stroke.",
    "Basal cell carcinoma rarely metastasises but can invade local tissue.",
    "Regular exercise lowers blood pressure and improves heart health.",
    "Radon is a radioactive gas that accumulates in basements.",
    "Nausea after chemotherapy is treated with antiemetic drugs such as ondansetron.",
]
QUERIES = [
    "risk factor for lung cancer",
    "blood pressure heart",
    "basal cell carcinoma UV exposure",
    "chemotherapy nausea treatment drugs",
    "stroke risk cholesterol",
    "radon gas",
]


def test_tokenize_drops_stopwords_short_tokens_and_folds_plurals():
    assert tokenize("The tumours of a BCC: 2 cells, x-rays") == ["tumour", "bcc", "cell", "ray"]
    assert fold_plural("mass") == "mass"
    assert fold_plural("bus") == "bus"  # too short to be a safe plural


def test_scores_match_the_formula_by_hand():
    index = BM25Index.from_tokens([["a1", "b1"], ["a1", "a1", "c1"], ["c1"]])
    n, avgdl = 3, 2.0
    idf_a = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    # Document 1 has tf(a1) = 2 and length 3.
    tfc = 2 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / avgdl))
    expected = idf_a * tfc
    assert index.scores(["a1"])[1] == pytest.approx(expected, rel=1e-6)
    assert index.scores(["zz"]).tolist() == [0.0, 0.0, 0.0]


def test_repeated_query_terms_count_once():
    index = BM25Index(CORPUS)
    np.testing.assert_allclose(index.scores("radon radon gas"), index.scores("radon gas"))


def test_agrees_with_bm25s_lucene():
    bm25s = pytest.importorskip("bm25s")
    docs = [tokenize(t) for t in CORPUS]
    ours = BM25Index.from_tokens(docs)
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index(docs, show_progress=False)
    for q in QUERIES:
        # Distinct terms, so both sides score the same query.
        qt = list(dict.fromkeys(tokenize(q)))
        got = ours.scores(qt)
        want = ref.get_scores(qt)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # And the same ranking of the documents that match at all.
        idx, _ = ours.top_k(qt, 5)
        want_order = [i for i in np.argsort(-want, kind="stable") if want[i] > 0][:5]
        assert idx.tolist() == want_order


def test_top_k_is_best_first_with_index_tie_break_and_positive_only():
    scores = np.array([0.5, 2.0, 0.5, 0.0, 2.0], dtype=np.float32)
    idx, vals = top_k_indices(scores, 3)
    assert idx.tolist() == [1, 4, 0]
    assert vals.tolist() == [2.0, 2.0, 0.5]
    idx, _ = top_k_indices(scores, 10, positive_only=True)
    assert idx.tolist() == [1, 4, 0, 2]


def test_top_k_finds_the_relevant_document():
    index = BM25Index(CORPUS)
    idx, _ = index.top_k("primary risk factor for basal cell carcinoma", 1)
    assert idx.tolist() == [3]
    assert index.top_k("unrelated words zebra", 3)[0].size == 0


def test_bad_input_raises_typed_errors():
    with pytest.raises(ConfigError):
        BM25Index("a single string")
    with pytest.raises(ConfigError):
        BM25Index(CORPUS, b=1.5)


def test_empty_corpus_scores_nothing():
    index = BM25Index([])
    assert index.scores("anything").shape == (0,)
    assert index.top_k("anything", 3)[0].size == 0


def test_idf_follows_every_edit_when_queries_come_between_them():
    # idf is computed once per index state (queries read it several times); adds, snapshots and
    # subsets between queries must still score exactly like a fresh index of the same texts.
    grown = BM25Index(CORPUS[:3])
    for q in QUERIES:
        grown.scores(q)
    for i in range(3, len(CORPUS), 2):
        before = grown.extended([])  # a snapshot of this state
        kept = before.scores(QUERIES[0])
        grown.add(CORPUS[i : i + 2])
        fresh = BM25Index(CORPUS[: i + 2])
        for q in QUERIES:
            assert np.array_equal(grown.scores(q), fresh.scores(q))
            assert grown.max_score(q) == fresh.max_score(q)
        assert np.array_equal(grown.idf, fresh.idf)
        assert np.array_equal(before.scores(QUERIES[0]), kept)  # the snapshot keeps its own
    keep = np.arange(len(CORPUS)) % 2 == 0
    part = grown.subset(keep)
    fresh = BM25Index([t for t, k in zip(CORPUS, keep, strict=True) if k])
    for q in QUERIES:
        assert np.array_equal(part.scores(q), fresh.scores(q))
