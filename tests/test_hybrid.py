"""The hybrid mode: fusion, MMR packing, overlap skipping, graph provenance, and the ablation."""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.config import DEFAULT_WHOLE_WINDOWS_LEAD
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError
from hcg_core.retrieval.hybrid import HybridConfig, HybridRanker, mmr_pack
from hcg_core.types import CausalPath, Chunk, Passage, RetrievalResult, RetrievedChunk

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


def test_overlapping_windows_of_one_document_are_skipped():
    words = [f"w{i}" for i in range(100)]
    spans = [(0, 40), (10, 50), (40, 80)]
    chunks = [
        Chunk(
            id=f"s{i}",
            text=" ".join(["cancer"] + words[s:e]),
            doc_id="doc",
            metadata={"start_word": s, "end_word": e},
        )
        for i, (s, e) in enumerate(spans)
    ]
    r = HybridRanker(chunks, None, HybridConfig(diversity=1.0))
    # s1 is 75% covered by s0, so it is skipped; s2 is new text.
    assert ids(r.rank("cancer", None, k=2)) == ["s0", "s2"]
    r_all = HybridRanker(chunks, None, HybridConfig(diversity=1.0, min_novelty=0.0))
    assert ids(r_all.rank("cancer", None, k=2)) == ["s0", "s1"]


def graph_result(rows, texts=TEXTS):
    chunks = make_chunks(texts)
    path = CausalPath(("Exposure(asbestos)", "Risk(mesothelioma)"), ("e1",), ("fibres",))
    return RetrievalResult(
        query="q",
        chunks=tuple(
            RetrievedChunk(chunks[r], 0.5, "graph", (path,), {"cone_rank": 0}) for r in rows
        )
        + (RetrievedChunk(chunks[4], 0.1, "fallback"),),
        matched=("Exposure(asbestos)",),
        served_by="cones",
    )


def test_graph_chunks_keep_provenance_and_the_ablation_drops_only_the_graph_signal():
    q = "what raises the risk of cancer"
    qv = EMB.embed_query(q)
    r = ranker(HybridConfig(graph_weight=2.0))
    g = graph_result([5])
    with_graph = r.rank(q, qv, g, k=3)
    ablation = r.rank(q, qv, g, k=3, use_graph=False)
    no_result = r.rank(q, qv, None, k=3)
    assert with_graph.chunks[0].chunk.id == "c5"
    top = with_graph.chunks[0]
    assert top.route == "graph" and top.paths[0].edge_ids == ("e1",)
    assert top.details["graph_rank"] == 1 and top.details["graph_cone_rank"] == 0
    assert with_graph.matched == ("Exposure(asbestos)",)
    # The graph result's vector-fill chunk is not a graph signal.
    assert all(c.route == "fallback" for c in with_graph.chunks if c.chunk.id == "c4")
    # Ablation: identical to having no graph result at all; no chunk claims the graph route.
    assert ids(ablation) == ids(no_result)
    assert all(c.route == "fallback" for c in ablation.chunks)
    assert ablation.served_by == "hybrid-nograph"
    assert [c.score for c in ablation.chunks] == [c.score for c in no_result.chunks]


def test_graph_chunk_outside_text_candidates_still_enters_the_pool():
    r = ranker(HybridConfig(candidates=1, graph_weight=5.0))
    res = r.rank("chemotherapy nausea", None, graph_result([4]), k=2)
    assert "c4" in ids(res)


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


def test_graph_signal_goes_to_the_passage_holding_the_mechanism():
    chunk = _long_chunk([FILLER] * 9 + [ANSWER] + [FILLER] * 9)
    other = _long_chunk([FILLER] * 18, cid="other", start=1000)
    r = HybridRanker([chunk, other], None, HybridConfig(graph_weight=5.0, passage_words=100))
    path = CausalPath(("Exposure(asbestos)", "Risk(mesothelioma)"), ("e1",), (ANSWER,))
    g = RetrievalResult("q", (RetrievedChunk(chunk, 0.9, "graph", (path,)),), served_by="cones")
    res = r.rank("cohort follow-up", None, g, k=4)
    graph = {c.chunk.id: c.details["graph"] for c in res.chunks}
    assert graph["long#p0"] == 1.0 and graph["long#p1"] == 0.0
    (held,) = [c for c in res.chunks if c.chunk.id == "long#p0"]
    assert held.route == "graph" and held.paths == (path,)
    assert res.diagnostics["graph_candidates"] == 1  # only the passage holding the sentence


def test_the_graph_lifts_only_what_a_text_signal_also_found():
    chunks = make_chunks()
    r = HybridRanker(chunks, None, HybridConfig(graph_weight=5.0))
    query = "radon basements asbestos cancer"
    text_only = ids(r.rank(query, None, k=1))
    assert text_only == ["c2"]

    def vouch(i: int) -> RetrievalResult:
        rc = RetrievedChunk(chunks[i], 0.9, "graph", ())
        return RetrievalResult("q", (rc,), served_by="cones")

    # Statins (c4) shares no word with the query: the graph alone does not put it first.
    assert ids(r.rank(query, None, vouch(4), k=1)) == text_only
    # Asbestos (c5) matches two query words: the graph lifts it above the best text match.
    assert ids(r.rank(query, None, vouch(5), k=1)) == ["c5"]


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


def test_a_clear_match_brings_its_overlapping_windows_right_after_it():
    chunks = _windowed_block()
    query = "warfarin interacts with grapefruit"
    on = HybridRanker(chunks, None).rank(query, None, k=5)
    assert ids(on)[:3] == ["w1", "w0", "w2"]
    assert [c.details.get("follows") for c in on.chunks[:3]] == [None, "w1", "w1"]
    assert on.chunks[1].score <= on.chunks[0].score
    off = HybridRanker(chunks, None, HybridConfig(follow_gap=None)).rank(query, None, k=5)
    assert ids(off)[0] == "w1" and "w0" not in ids(off)[:3]
    # No clear lead (the gap is not reached): nothing follows.
    never = HybridRanker(chunks, None, HybridConfig(follow_gap=100.0)).rank(query, None, k=5)
    assert ids(never) == ids(off)
    # A filter that excludes a window keeps it out.
    allowed = np.array([c.id != "w0" for c in chunks])
    filtered = HybridRanker(chunks, None).rank(query, None, k=5, allowed=allowed)
    assert "w0" not in ids(filtered) and ids(filtered)[:2] == ["w1", "w2"]
    for bad in (-1.0, float("nan"), "1", True):
        with pytest.raises(ConfigError):
            HybridConfig(follow_gap=bad)


def test_grown_and_shrunk_rankers_know_the_same_window_neighbours_as_a_fresh_one():
    chunks = _windowed_block()
    query = "warfarin interacts with grapefruit"
    fresh = HybridRanker(chunks, None).rank(query, None, k=6)
    grown = HybridRanker(chunks[:9], None).extended(chunks[9:], None).rank(query, None, k=6)
    assert ids(grown) == ids(fresh)
    assert [c.details.get("follows") for c in grown.chunks] == [
        c.details.get("follows") for c in fresh.chunks
    ]
    keep = np.array([c.id != "o0" for c in chunks])
    shrunk = HybridRanker(chunks, None).subset(keep, None).rank(query, None, k=6)
    rebuilt = HybridRanker([c for c in chunks if c.id != "o0"], None).rank(query, None, k=6)
    assert ids(shrunk) == ids(rebuilt) and ids(shrunk)[:3] == ["w1", "w0", "w2"]


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
    from hcg_core.types import Document

    unbroken = " ".join([FILLER] * 3 + [ANSWER] + [FILLER] * 70)
    paragraphs = "Statins lower cholesterol.\n\nAsbestos is banned in many countries."
    return chunk_documents([Document("notes", unbroken), Document("facts", paragraphs)])


def test_windows_are_split_for_ranking_and_come_back_as_their_own_chunks():
    from hcg_core.retrieval.hybrid import windowed

    chunks = _windows_and_paragraphs()
    flags = windowed(chunks)
    assert flags == [c.doc_id == "notes" for c in chunks] and sum(flags) >= 2
    stored = {c.id: c for c in chunks}
    cfg = HybridConfig(window_passage_words=100, whole_windows_lead=None)  # always by halves
    r = HybridRanker(chunks, EMB.embed_documents([c.text for c in chunks]), cfg)
    assert len(r.units) > len(chunks)  # the windows were split, the paragraphs not
    query = "what causes mesothelioma"
    qvec = EMB.embed_query(query)

    # Under a word budget: the picked half of the window, with the window's own id.
    top = r.rank(query, qvec, word_budget=60).chunks[0]
    window = stored[top.chunk.id]
    a, b = top.details["span"]
    assert ANSWER in top.chunk.text and top.chunk.text == window.text[a:b]
    assert len(top.chunk.text) < len(window.text) and top.parent_id is None
    assert top.provenance("hybrid")["hcg_span"] == [a, b]
    assert top.chunk.metadata["start_word"] == window.metadata["start_word"]
    assert top.chunk.metadata["end_word"] < window.metadata["end_word"]
    assert "passage_of" not in top.chunk.metadata

    # A budget of everything: each stored chunk once, as a contiguous part of itself, and the
    # windows' shared sentences only once (a sentence cut by a window edge may repeat).
    res = r.rank(query, qvec, word_budget=10_000)
    assert sorted(ids(res)) == sorted(stored)
    for rc in res.chunks:
        a, b = rc.details.get("span", (0, len(stored[rc.chunk.id].text)))
        assert rc.chunk.text == stored[rc.chunk.id].text[a:b]
    places = [
        (rc.chunk.metadata["start_word"], rc.chunk.metadata["end_word"])
        for rc in res.chunks
        if rc.chunk.doc_id == "notes"
    ]
    shared = [min(b, d) - max(a, c) for i, (a, b) in enumerate(places) for c, d in places[:i]]
    assert max(shared) <= len(FILLER.split())
    assert [rc.score for rc in res.chunks] == sorted((rc.score for rc in res.chunks), reverse=True)

    # k alone: k stored chunks, whole, the best first.
    res = r.rank(query, qvec, k=2)
    assert len(set(ids(res))) == 2 and ids(res)[0] == top.chunk.id
    assert all(rc.chunk is stored[rc.chunk.id] for rc in res.chunks)

    off = HybridRanker(chunks, None, HybridConfig(window_passage_words=0))  # windows whole
    assert len(off.units) == len(chunks)
    assert off.rank(query, None, word_budget=60).chunks[0].chunk is stored[top.chunk.id]


def test_k_counts_groups_when_passages_are_merged():
    rel = np.array([1.0, 0.9, 0.8])
    feats = np.eye(3)
    lengths = np.array([5, 5, 5])
    assert mmr_pack(rel, feats, lengths, k=2, word_budget=None).tolist() == [0, 1]
    picked = mmr_pack(rel, feats, lengths, k=2, word_budget=None, groups=np.array([7, 7, 8]))
    assert picked.tolist() == [0, 1, 2]


def test_window_passage_words_must_not_be_negative():
    with pytest.raises(ConfigError, match="window_passage_words"):
        HybridConfig(window_passage_words=-1)
    with pytest.raises(ConfigError, match="cut_repeats"):
        HybridConfig(cut_repeats="yes")
    for bad in (-0.5, "1", True):
        with pytest.raises(ConfigError, match="whole_windows_lead"):
            HybridConfig(whole_windows_lead=bad)


def test_a_clear_match_keeps_windows_whole_and_a_spread_out_query_ranks_halves():
    """By default windows are ranked by halves unless the query's best window, ranked whole,
    clearly leads: then the whole-window ranking is returned as it is."""
    chunks = _windows_and_paragraphs()
    emb = EMB.embed_documents([c.text for c in chunks])
    stored = {c.id: c for c in chunks}
    default = HybridRanker(chunks, emb)
    whole = HybridRanker(chunks, emb, HybridConfig(window_passage_words=0))
    halves = HybridRanker(chunks, emb, HybridConfig(whole_windows_lead=None))

    def same(a, b):
        return [(c.chunk.id, c.chunk.text) for c in a.chunks] == [
            (c.chunk.id, c.chunk.text) for c in b.chunks
        ]

    clear = "what causes mesothelioma"  # one window holds it
    qvec = EMB.embed_query(clear)
    res = default.rank(clear, qvec, word_budget=60)
    assert res.diagnostics["windows"] == "whole"
    assert res.diagnostics["lead"] >= DEFAULT_WHOLE_WINDOWS_LEAD
    assert same(res, whole.rank(clear, qvec, word_budget=60))
    assert res.chunks[0].chunk is stored[res.chunks[0].chunk.id]  # the window whole, no span
    assert not same(res, halves.rank(clear, qvec, word_budget=60))

    spread = "patients followed in the regional cohort"  # every window says it
    qvec = EMB.embed_query(spread)
    res = default.rank(spread, qvec, word_budget=60)
    assert res.diagnostics["windows"] == "passages"
    assert res.diagnostics["lead"] < DEFAULT_WHOLE_WINDOWS_LEAD
    assert same(res, halves.rank(spread, qvec, word_budget=60))
    assert "span" in res.chunks[0].details  # a half of its window

    # Edits carry the whole-window ranking along: a grown or shrunk ranker ranks like a fresh one
    # (the window holding the answer arrives with the insert).
    order = sorted(chunks, key=lambda c: ANSWER in c.text)
    vecs = EMB.embed_documents([c.text for c in order])
    base = HybridRanker(order[:-1], vecs[:-1])
    base.rank(spread, qvec, word_budget=60)  # builds its whole-window ranking
    assert base._whole is not None
    grown = base.extended(order[-1:], vecs)
    keep = np.array([ANSWER not in c.text for c in chunks])
    kept = [c for c in chunks if ANSWER not in c.text]
    for q in (clear, spread):
        v = EMB.embed_query(q)
        fresh = HybridRanker(order, vecs)
        assert same(grown.rank(q, v, word_budget=60), fresh.rank(q, v, word_budget=60))
        shrunk = default.subset(keep, emb[keep])
        fresh = HybridRanker(kept, emb[keep])
        assert same(shrunk.rank(q, v, word_budget=60), fresh.rank(q, v, word_budget=60))


def test_a_large_k_with_a_budget_ranks_as_the_budget_alone():
    """Rows padded in to reach k would compete with the candidates; once the candidates hold
    the budget there is no padding, so the result is the budget's own."""
    chunks = _windows_and_paragraphs()
    cfg = HybridConfig(candidates=3, window_passage_words=100, whole_windows_lead=None)
    r = HybridRanker(chunks, EMB.embed_documents([c.text for c in chunks]), cfg)
    query = "what causes mesothelioma"
    qvec = EMB.embed_query(query)
    alone = r.rank(query, qvec, word_budget=60)
    many = r.rank(query, qvec, k=1000, word_budget=60)
    assert [c.chunk.text for c in many.chunks] == [c.chunk.text for c in alone.chunks]
    assert many.diagnostics["candidates"] == alone.diagnostics["candidates"] < len(r.units)
    # A budget the candidates cannot hold still pads, up to k.
    assert r.rank(query, qvec, k=1000, word_budget=10_000).diagnostics["candidates"] == len(r.units)


def test_a_window_inserted_after_its_neighbours_is_split_like_a_fresh_build():
    chunks = _windows_and_paragraphs()
    emb = EMB.embed_documents([c.text for c in chunks])
    cfg = HybridConfig(window_passage_words=100)
    fresh = HybridRanker(chunks, emb, cfg)
    grown = HybridRanker(chunks[:2], emb[:2], cfg)
    for i in range(2, len(chunks)):
        grown = grown.extended([chunks[i]], emb[: i + 1])
    assert [u.id for u in grown.units] == [u.id for u in fresh.units]


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
