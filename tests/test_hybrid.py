"""The hybrid mode: fusion, MMR packing, overlap skipping, graph provenance, and the ablation."""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError
from hcg_core.retrieval.hybrid import HybridConfig, HybridRanker, mmr_pack
from hcg_core.types import CausalPath, Chunk, Passage, RetrievedChunk

TEXTS = [
    "Smoking damages the airways and is the leading cause of lung cancer worldwide.",
    "Smoking damages the airways and is the leading cause of lung cancer worldwide, today.",
    "Radon gas in basements is the second cause of lung cancer after smoking.",
    "Chemotherapy for lung cancer often causes nausea and fatigue.",
    "Statins lower cholesterol and the risk of heart attack.",
    "Asbestos exposure at work raises the risk of mesothelioma and lung cancer.",
]
EMB = HashingEmbedder(dim=512)


def make_chunks(texts=TEXTS):
    return [Chunk(id=f"c{i}", text=t, doc_id=f"d{i}") for i, t in enumerate(texts)]


def ranker(config=None, texts=TEXTS):
    chunks = make_chunks(texts)
    return HybridRanker(chunks, EMB.embed_documents([c.text for c in chunks]), config)


def ids(result):
    return [c.chunk.id for c in result.chunks]


def test_returns_exactly_k_with_fusion_details_and_fallback_route():
    r = ranker()
    res = r.rank("causes of lung cancer", EMB.embed_query("causes of lung cancer"), k=4)
    assert len(res.chunks) == 4
    assert res.served_by == "hybrid"
    for c in res.chunks:
        assert c.route == "fallback"
        assert set(c.details) >= {"bm25_rank", "dense_rank", "graph_rank", "fused_score"}
        assert c.details["graph_rank"] is None
    # Best-first by the fused score for the first pick.
    assert res.chunks[0].details["fused_score"] == max(c.details["fused_score"] for c in res.chunks)


def test_k_larger_than_matches_pads_with_the_rest_of_the_corpus():
    r = ranker()
    res = r.rank("zebra", None, k=len(TEXTS))  # no word matches, no dense signal
    assert sorted(ids(res)) == sorted(c.id for c in make_chunks())
    assert len(r.rank("zebra", None, k=100).chunks) == len(TEXTS)


# Unrelated texts, so that relevance is judged against a realistic pool (the fused relevance is a
# z-score against the candidates: in a pool of six lung-cancer texts, "lung cancer" stands out
# nowhere).
OTHER_TEXTS = [
    "The central bank raised interest rates to curb inflation this spring.",
    "Migrating birds navigate by the earth's magnetic field and the stars.",
    "A sourdough starter needs flour, water and a warm kitchen.",
    "Glaciers retreat as summer temperatures rise in the Alps.",
]


def test_diversity_skips_a_near_duplicate_that_pure_relevance_keeps():
    q = "smoking leading cause of lung cancer"
    texts = TEXTS + OTHER_TEXTS
    plain = ranker(HybridConfig(diversity=1.0), texts).rank(q, EMB.embed_query(q), k=2)
    diverse = ranker(HybridConfig(diversity=0.3), texts).rank(q, EMB.embed_query(q), k=2)
    assert set(ids(plain)) == {"c0", "c1"}  # the two near-identical chunks
    assert ids(diverse)[0] in {"c0", "c1"} and ids(diverse)[1] not in {"c0", "c1"}


def test_word_budget_stops_after_the_chunk_that_crosses_it():
    r = ranker()
    words = [len(t.split()) for t in TEXTS]
    res = r.rank("lung cancer", None, word_budget=words[0] + 1)
    got = sum(len(c.chunk.text.split()) for c in res.chunks)
    assert len(res.chunks) == 2 and got > words[0] + 1
    with pytest.raises(ConfigError):
        r.rank("lung cancer", None)


def test_a_window_picked_ones_cover_whole_is_skipped_and_a_partly_new_one_kept():
    words = [f"w{i}" for i in range(100)]
    spans = [(0, 40), (10, 50), (40, 80), (5, 35)]
    chunks = [
        Chunk(
            id=f"s{i}",
            text=" ".join(["cancer"] * (1 if i == 3 else 3) + words[s:e]),
            doc_id="doc",
            metadata={"start_word": s, "end_word": e},
        )
        for i, (s, e) in enumerate(spans)
    ]
    r = HybridRanker(chunks, None, HybridConfig(diversity=1.0))
    # s3 lies inside s0: it adds no text and is skipped; s1 is a quarter new and is kept.
    got = ids(r.rank("cancer", None, k=4))
    assert "s3" not in got and {"s0", "s1", "s2"} == set(got)


def test_results_come_in_pick_order_with_non_increasing_scores():
    from hcg_core.retrieval.hybrid import calibrated_scores

    chunks = make_chunks(TEXTS)
    r = HybridRanker(chunks, None)
    query = "lung cancer smoking"
    c = r._candidates(query, None, True, None)
    fused = r._fused(c)
    rows = r._pack(fused, c.pool, 4, None)
    res = r.rank(query, None, k=4)
    assert ids(res) == [r.units[i].id for i in rows.tolist()]
    scores = [rc.score for rc in res.chunks]
    assert scores == sorted(scores, reverse=True)
    # A pick more relevant than the one before it scores no higher than that one.
    got = calibrated_scores(
        np.array([2.0, 1.0, 1.5]), np.array([0, 1, 2]), np.ones(3), np.ones(3), HybridConfig()
    )
    assert got.tolist() == [1.0, 0.5, 0.5]


def test_the_ablation_drops_only_the_graph_signal():
    q = "what raises the risk of cancer"
    qv = EMB.embed_query(q)
    r = ranker(HybridConfig(graph_weight=2.0))
    walk = np.zeros(len(TEXTS))
    walk[5] = 0.3
    with_graph = r.rank(q, qv, k=3, walk=walk)
    ablation = r.rank(q, qv, k=3, walk=walk, use_graph=False)
    no_walk = r.rank(q, qv, k=3)
    assert with_graph.chunks[0].chunk.id == "c5" and with_graph.chunks[0].details["graph_rank"] == 1
    # Ablation: identical to having no walk at all. The ranker claims no graph route: the
    # retriever marks the returned units the selected edges cite (``with_paths``).
    assert ids(ablation) == ids(no_walk) and ablation.served_by == "hybrid-nograph"
    assert all(c.route == "fallback" for c in with_graph.chunks + ablation.chunks)
    assert [c.score for c in ablation.chunks] == [c.score for c in no_walk.chunks]


def test_mmr_pack_respects_k_and_picks_by_relevance_first():
    rel = np.array([0.2, 0.9, 0.5])
    feats = np.eye(3, dtype=np.float32)
    assert mmr_pack(rel, feats, np.array([5, 5, 5]), k=3, word_budget=None).tolist() == [1, 2, 0]
    assert mmr_pack(rel, feats, np.array([5, 5, 5]), k=None, word_budget=6).tolist() == [1, 2]


def test_bad_settings_raise_config_errors():
    with pytest.raises(ConfigError):
        HybridConfig(diversity=1.5)
    with pytest.raises(ConfigError):
        HybridConfig(candidates=0)
    with pytest.raises(ConfigError):
        HybridConfig(passage_words=-1)
    with pytest.raises(ConfigError):
        HybridRanker(make_chunks(), np.zeros((2, 4), np.float32))
    with pytest.raises(ConfigError):
        ranker().rank("q", None, k=0)


def test_word_features_give_exact_cosines_between_chunks():
    r = ranker()
    rows = np.arange(len(TEXTS))
    f = r.word_features(rows)
    # Full term vectors, for comparison.
    full = np.zeros((len(TEXTS), r.bm25.vocab_size))
    for d in range(len(TEXTS)):
        _, terms, weights = r.bm25.doc_terms(np.array([d]))
        full[d, terms] = weights / np.linalg.norm(weights)
    want = full @ full.T
    got = f @ f.T
    off = ~np.eye(len(TEXTS), dtype=bool)
    np.testing.assert_allclose(got[off], want[off], atol=1e-6)


def test_word_features_columns_are_the_shared_terms_in_term_order():
    r = ranker()
    rows = np.array([5, 0, 2, 3])
    lens, terms, weights = r.bm25.doc_terms(rows)
    per_row = np.split(np.arange(terms.size), np.cumsum(lens)[:-1])
    held = [set(terms[p].tolist()) for p in per_row]
    shared = sorted(t for t in set().union(*held) if sum(t in h for h in held) > 1)
    want = np.zeros((rows.size, len(shared)), np.float32)
    for i, p in enumerate(per_row):
        w = weights[p].astype(np.float64)
        unit = (w / np.sqrt((w * w).sum())).astype(np.float32)
        for t, x in zip(terms[p].tolist(), unit.tolist(), strict=True):
            if t in shared:
                want[i, shared.index(t)] = x
    got = r.word_features(rows)
    assert got.shape == want.shape and shared
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def _long_chunk(sentences, cid="long", start=0):
    text = " ".join(sentences)
    n = len(text.split())
    return Chunk(
        id=cid,
        text=text,
        doc_id="doc",
        metadata={"doc_id": "doc", "start_word": start, "end_word": start + n},
    )


FILLER = "Patients were followed for several years in the regional cohort study."  # 11 words
ANSWER = "Asbestos exposure causes mesothelioma through chronic pleural inflammation."


def test_long_chunks_are_packed_as_passages_that_name_their_chunk():
    from hcg_core.retrieval.passages import split_passages

    chunk = _long_chunk([FILLER] * 9 + [ANSWER] + [FILLER] * 9, start=500)
    short = Chunk(id="short", text="Statins lower cholesterol.", doc_id="d2")
    parts, parent = split_passages([chunk, short], 100)
    assert [p.id for p in parts] == ["long#p0", "long#p1", "short"] and parent.tolist() == [0, 0, 1]
    assert parts[2] is short  # a short chunk stays the same object
    assert " ".join(p.text for p in parts[:2]) == chunk.text  # cut at a sentence end, nothing lost
    assert parts[0].metadata["passage_of"] == "long" and parts[1].metadata["passage"] == 1
    assert isinstance(parts[0], Passage) and (parts[1].parent_id, parts[1].index) == ("long", 1)
    assert not isinstance(parts[2], Passage)
    assert parts[0].metadata["start_word"] == 500
    assert parts[1].metadata["end_word"] == chunk.metadata["end_word"]
    assert split_passages([chunk], 0)[0] == (chunk,)

    chunks = [chunk, short]
    r = HybridRanker(
        chunks, EMB.embed_documents([c.text for c in chunks]), HybridConfig(passage_words=100)
    )
    res = r.rank("what causes mesothelioma", None, k=1)
    assert ids(res) == ["long#p0"]  # the half holding the answer, not the whole chunk
    assert (
        res.chunks[0].parent_id == "long"
        and res.chunks[0].provenance("hybrid")["hcg_parent_id"] == "long"
    )
    assert ANSWER in res.chunks[0].chunk.text and len(res.chunks[0].chunk.text) < len(chunk.text)
    whole = HybridRanker(chunks, None, HybridConfig(passage_words=0))
    assert ids(whole.rank("what causes mesothelioma", None, k=1)) == ["long"]


def test_graph_paths_go_to_the_passage_holding_the_mechanism():
    from hcg_core.retrieval.retriever import _vouched

    chunk = _long_chunk([FILLER] * 9 + [ANSWER] + [FILLER] * 9)
    other = _long_chunk([FILLER] * 18, cid="other", start=1000)
    r = HybridRanker([chunk, other], None, HybridConfig(passage_words=100))
    res = r.rank("cohort follow-up", None, k=4)
    by_id = {c.chunk.id: c for c in res.chunks}
    path = CausalPath(("Exposure(asbestos)", "Risk(mesothelioma)"), ("e1",), (ANSWER,))
    assert _vouched(by_id["long#p0"], [path], chunk) and not _vouched(
        by_id["long#p1"], [path], chunk
    )
    # An edge whose mechanism no passage holds (linked by search): every passage of its chunk.
    searched = CausalPath(path.variables, ("e2",), ("a sentence the chunk does not hold",))
    assert _vouched(by_id["long#p1"], [searched], chunk)


def test_the_graph_lifts_only_what_a_text_signal_also_found():
    chunks = make_chunks()
    r = HybridRanker(chunks, None, HybridConfig(graph_weight=5.0))
    query = "radon basements asbestos cancer"
    text_only = ids(r.rank(query, None, k=1))
    assert text_only == ["c2"]

    def walk(i: int) -> np.ndarray:
        mass = np.zeros(len(chunks))
        mass[i] = 0.3  # the walk reached only chunk i
        return mass

    # Statins (c4) shares no word with the query: the graph alone does not put it first.
    assert ids(r.rank(query, None, walk=walk(4), k=1)) == text_only
    # Asbestos (c5) matches two query words: the graph lifts it above the best text match.
    assert ids(r.rank(query, None, walk=walk(5), k=1)) == ["c5"]
    # The ablation drops the signal: the same walk with use_graph=False changes nothing.
    assert ids(r.rank(query, None, walk=walk(5), k=1, use_graph=False)) == text_only


def _windowed_block():
    """One text block cut into three overlapping windows (w0 w1 w2), plus unrelated chunks."""
    words = [f"filler{i}" for i in range(120)]
    words[50:53] = ["warfarin", "interacts", "grapefruit"]
    spans = [(0, 50), (40, 90), (80, 120)]
    block = [
        Chunk(
            id=f"w{i}",
            text=" ".join(words[s:e]),
            doc_id="doc",
            metadata={"start_word": s, "end_word": e},
        )
        for i, (s, e) in enumerate(spans)
    ]
    others = [
        Chunk(
            id=f"o{i}",
            text=f"other{i} text about warfarin dosing number {i}",
            doc_id=f"d{i}",
            metadata={"start_word": 0, "end_word": 7},
        )
        for i in range(16)
    ]
    # Sixteen weak matches put the clear match about four standard deviations above the rest.
    return others[:8] + block + others[8:]


def test_grown_and_shrunk_rankers_rank_overlapping_windows_as_a_fresh_one():
    chunks = _windowed_block()
    query = "warfarin interacts with grapefruit"
    fresh = HybridRanker(chunks, None).rank(query, None, k=6)
    grown = HybridRanker(chunks[:9], None).extended(chunks[9:], None).rank(query, None, k=6)
    assert ids(grown) == ids(fresh)
    assert [c.chunk.text for c in grown.chunks] == [c.chunk.text for c in fresh.chunks]
    keep = np.array([c.id != "o0" for c in chunks])
    shrunk = HybridRanker(chunks, None).subset(keep, None).rank(query, None, k=6)
    rebuilt = HybridRanker([c for c in chunks if c.id != "o0"], None).rank(query, None, k=6)
    assert ids(shrunk) == ids(rebuilt) and ids(shrunk)[0] == "w1"


# -- units in another language (config.DEFAULT_FILL_LANGUAGE_GAP) ---------------------------------

_TURKISH = (
    "Bu araştırmanın amacı, dijital yönetişim uygulamaları ile örgütsel çeviklik arasındaki "
    "ilişkiyi anlamak ve çalışanların iç girişimcilik davranışlarının bu ilişkideki rolünü "
    "değerlendirmektir; veriler anket yoluyla toplanmış ve yapısal eşitlik modeli ile incelenmiştir."
)


def _mixed_ranker(fill: bool) -> HybridRanker:
    chunks = [
        Chunk("e1", "Digital governance and agility in the public sector were surveyed in 2024."),
        Chunk("e2", "Digital tools change how firms train their staff and share knowledge."),
        Chunk("e3", "Governance codes were revised after the audit scandal of the decade."),
        Chunk("e4", "Rainfall patterns shape the yield of highland potato farms."),
        Chunk("tr", _TURKISH),
    ]
    # A multilingual embedder's view: the Turkish abstract is the closest to the question.
    emb = np.array(
        [[0.6, 0.8, 0, 0], [0.5, 0, 0.866, 0], [0.4, 0, 0, 0.917], [0, 1.0, 0, 0], [1.0, 0, 0, 0]],
        dtype=np.float32,
    )
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return HybridRanker(chunks, emb, HybridConfig(fill_language_gap=fill))


def test_a_unit_in_another_language_takes_its_dense_evidence_for_the_missing_bm25():
    q, vec = "How does digital governance shape agility?", np.array([1.0, 0, 0, 0], np.float32)
    filled = _mixed_ranker(True).rank(q, vec, k=3)
    plain = _mixed_ranker(False).rank(q, vec, k=3)
    assert [c.chunk.id for c in filled.chunks][0] == "tr"
    assert [c.chunk.id for c in plain.chunks][0] == "e1"  # BM25's silence counted against it
    top = filled.chunks[0]
    assert top.details["bm25"] == 0.0  # the parts stay what each signal measured
    assert 0.0 < top.score <= 1.0


def test_a_keyword_query_or_an_english_corpus_is_left_alone():
    vec = np.array([1.0, 0, 0, 0], np.float32)
    # No English function word: the query's language is unknown, nothing is filled.
    keywords = [c.chunk.id for c in _mixed_ranker(True).rank("digital governance", vec, k=5).chunks]
    assert keywords == [
        c.chunk.id for c in _mixed_ranker(False).rank("digital governance", vec, k=5).chunks
    ]
    ranker = _mixed_ranker(True)
    assert ranker._language_gap("How does digital governance shape agility?") is not None
    english = ranker.subset(np.array([1, 1, 1, 1, 0], dtype=bool), ranker.chunk_embeddings[:4])
    assert english._language_gap("How does digital governance shape agility?") is None
    bm25_only = HybridRanker(ranker.chunks, ranker.chunk_embeddings, HybridConfig(dense_weight=0))
    assert bm25_only._language_gap("How does digital governance shape agility?") is None
    grown = english.extended([Chunk("tr2", _TURKISH)], ranker.chunk_embeddings)
    assert grown._language_gap("What is the role of digital governance?").tolist() == [
        False,
        False,
        False,
        False,
        True,
    ]


def _windows_and_paragraphs() -> list[Chunk]:
    """Windows of one text without blank lines (the answer in its first window's first half)
    and a document of short paragraphs (each one chunk, whole)."""
    from hcg_core.corpus import chunk_documents
    from hcg_core.types import SourceDocument

    unbroken = " ".join([FILLER] * 3 + [ANSWER] + [FILLER] * 70)
    paragraphs = "Statins lower cholesterol.\n\nAsbestos is banned in many countries."
    return chunk_documents([SourceDocument("notes", unbroken), SourceDocument("facts", paragraphs)])


def test_bad_switches_are_refused():
    with pytest.raises(ConfigError, match="cut_repeats"):
        HybridConfig(cut_repeats="yes")


def test_a_large_k_with_a_budget_ranks_as_the_budget_alone():
    """Rows padded in to reach k would compete with the candidates; once the candidates hold
    the budget there is no padding, so the result is the budget's own."""
    chunks = _windows_and_paragraphs()
    cfg = HybridConfig(candidates=3)
    r = HybridRanker(chunks, EMB.embed_documents([c.text for c in chunks]), cfg)
    query = "what causes mesothelioma"
    qvec = EMB.embed_query(query)
    alone = r.rank(query, qvec, word_budget=60)
    many = r.rank(query, qvec, k=1000, word_budget=60)
    assert [c.chunk.text for c in many.chunks] == [c.chunk.text for c in alone.chunks]
    assert many.diagnostics["candidates"] == alone.diagnostics["candidates"] < len(r.units)
    # A budget the candidates cannot hold still pads, up to k.
    assert r.rank(query, qvec, k=1000, word_budget=10_000).diagnostics["candidates"] == len(r.units)


def test_under_a_budget_only_new_words_count_and_a_place_is_returned_once():
    rel = np.array([1.0, 0.9, 0.8])
    feats = np.eye(3)
    lengths = np.array([10, 10, 10])
    spans = np.array([[0, 0, 10], [0, 5, 15], [0, 20, 30]])
    kw = {"k": None, "word_budget": 16, "diversity": 1.0, "spans": spans}
    assert mmr_pack(rel, feats, lengths, **kw).tolist() == [0, 1]
    assert mmr_pack(rel, feats, lengths, repeats_kept=False, **kw).tolist() == [0, 1, 2]


def test_the_same_sentence_at_another_place_is_not_a_repeat():
    from hcg_core.retrieval.repeats import without_repeats

    def unit(cid: str, text: str, start: int) -> RetrievedChunk:
        meta = {"start_word": start, "end_word": start + len(text.split())}
        return RetrievedChunk(Chunk(cid, text, doc_id="d", metadata=meta), 1.0, "fallback")

    text = "Results are in Table 1. Patients improved."
    got = without_repeats([unit("a", text, 0), unit("b", text, 100)])
    assert [r.chunk.text for r in got] == [text, text]
    # A unit without a place in its document is never cut.
    bare = RetrievedChunk(Chunk("c", text, doc_id="d"), 1.0, "fallback")
    assert without_repeats([unit("a", text, 0), bare])[1] is bare
    # A unit wholly inside what came before is dropped.
    assert [
        r.chunk.id
        for r in without_repeats([unit("a", text, 0), unit("b", "Patients improved.", 5)])
    ] == ["a"]


def test_cut_repeats_false_returns_overlapping_windows_whole():
    chunks = _windows_and_paragraphs()
    stored = {c.id: c for c in chunks}
    emb = EMB.embed_documents([c.text for c in chunks])
    query = "what causes mesothelioma"
    cut = HybridRanker(chunks, emb).rank(query, EMB.embed_query(query), word_budget=10_000)
    assert any("span" in rc.details for rc in cut.chunks)
    kept = HybridRanker(chunks, emb, HybridConfig(cut_repeats=False))
    res = kept.rank(query, EMB.embed_query(query), word_budget=10_000)
    assert all(rc.chunk is stored[rc.chunk.id] for rc in res.chunks)
    # With k alone too: the default sends each place once, and returns k units.
    n = len(chunks)
    cut = HybridRanker(chunks, emb).rank(query, EMB.embed_query(query), k=n)
    assert any("span" in rc.details for rc in cut.chunks) and len(cut.chunks) == n
    whole = kept.rank(query, EMB.embed_query(query), k=n)
    assert all(rc.chunk is stored[rc.chunk.id] for rc in whole.chunks)


def test_the_stages_find_fuse_and_pack():
    """``_candidates`` gathers each signal's best units, ``_fused`` puts them on one scale
    (a unit no signal found scores 0), ``_pack`` returns picks from the pool only."""
    chunks = _windows_and_paragraphs()
    r = HybridRanker(chunks, EMB.embed_documents([c.text for c in chunks]))
    query = "what causes mesothelioma"
    c = r._candidates(query, EMB.embed_query(query), True, None)
    assert set(c.bm_order.tolist()) <= set(c.pool.tolist())
    assert set(c.dn_order.tolist()) <= set(c.pool.tolist())
    assert (c.bm25[c.bm_order] > 0).all()
    fused = r._fused(c)
    outside = np.setdiff1d(np.arange(len(r.units)), np.union1d(c.bm_order, c.dn_order))
    assert (fused[outside] == 0).all() and fused.max() > 0
    rows = r._pack(fused, c.pool, 2, None)
    assert len(rows) == 2 and set(rows.tolist()) <= set(c.pool.tolist())
    assert fused[rows[0]] == fused[c.pool].max()
