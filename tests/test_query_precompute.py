"""Query-path work done once instead of per query, or as arrays instead of loops: each gives
exactly what the per-query (or looped) computation gave (issue 41's latency target).

Each test compares against the earlier computation, written out here as the reference.
"""

from __future__ import annotations

import pickle
import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from hcg_core.corpus import word_spans
from hcg_core.embedders import HashingEmbedder
from hcg_core.retrieval import retriever as retriever_module
from hcg_core.retrieval.compiled import csr, gather
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.retrieval.lexical import BM25Index
from hcg_core.retrieval.paper import (
    Cones,
    all_source_hops,
    bfs_parents,
    bounded_bfs,
    cone_rank_of_nodes,
    match_nodes,
    outcome_cones,
    toward_ends,
)
from hcg_core.retrieval.repeats import array_word_spans, cut_to, without_repeats
from hcg_core.retrieval.retriever import CausalGraphRetriever, EdgeLookup, _citing
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


def _random_graph(rng, n, m, n_chunks=12):
    """A random directed graph (parallel edges and self-loops included) in the compiled layout."""
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    eid = np.arange(m)
    out_ptr, out_dst, out_eid = csr(src, dst, eid, n)
    in_ptr, in_src, in_eid = csr(dst, src, eid, n)
    cites = rng.integers(0, 3, m)  # 0-2 chunks per edge, sometimes the same one twice
    ev_ptr = np.concatenate(([0], np.cumsum(cites))).astype(np.int64)
    return SimpleNamespace(
        n_vars=n,
        edge_src=src,
        edge_dst=dst,
        out_ptr=out_ptr,
        out_src=np.repeat(np.arange(n), np.diff(out_ptr)),
        out_dst=out_dst,
        out_eid=out_eid,
        in_ptr=in_ptr,
        in_src=in_src,
        in_eid=in_eid,
        is_end=rng.random(n) < 0.3,
        ev_ptr=ev_ptr,
        ev_chunk=rng.integers(0, n_chunks, int(ev_ptr[-1])),
        chunk_emb=np.zeros((n_chunks, 2), np.float32),
        edge_conf_order=rng.permutation(m),
        var_names=tuple(f"v{i}" for i in range(n)),
        edge_ids=tuple(f"e{i}" for i in range(m)),
        mechanisms=("",) * m,
        effects=(),
    )


@pytest.mark.parametrize("seed", range(30))
def test_bfs_from_cached_single_source_rows_is_the_multi_source_bfs(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(1, 30)), int(rng.integers(0, 80)))
    lookup = EdgeLookup.of(g)
    for _ in range(4):  # later queries read rows cached by earlier ones
        sources = np.unique(rng.integers(0, g.n_vars, int(rng.integers(1, 6))))
        hops = int(rng.integers(0, 5))
        dist, parent = bounded_bfs(g.out_ptr, g.out_dst, g.out_eid, sources, hops, stop=g.is_end)
        got = lookup.hops(sources, hops)
        assert got.tolist() == dist.tolist()
        assert bfs_parents(got, g.out_src, g.out_dst, g.out_eid, g.is_end).tolist() == (
            parent.tolist()
        )


@pytest.mark.parametrize("seed", range(30))
def test_bfs_table_made_with_the_compiled_graph_is_each_variables_bfs(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(1, 30)), int(rng.integers(0, 80)))
    hops = int(rng.integers(0, 5))
    table = all_source_hops(g.out_ptr, g.out_dst, hops, g.is_end)
    for s in range(g.n_vars):
        dist, _ = bounded_bfs(g.out_ptr, g.out_dst, g.out_eid, np.array([s]), hops, stop=g.is_end)
        assert table[s].tolist() == dist.tolist()
    lookup = EdgeLookup.of(g, hops)
    assert lookup.hop_table is not None and lookup.table_hops == hops
    for _ in range(4):
        sources = np.unique(rng.integers(0, g.n_vars, int(rng.integers(1, 6))))
        dist, _ = bounded_bfs(g.out_ptr, g.out_dst, g.out_eid, sources, hops, stop=g.is_end)
        assert lookup.hops(sources, hops).tolist() == dist.tolist()
        if hops:  # another depth (a clone's max_hops): each variable's own BFS, as before
            dist, _ = bounded_bfs(g.out_ptr, g.out_dst, g.out_eid, sources, hops - 1, stop=g.is_end)
            assert lookup.hops(sources, hops - 1).tolist() == dist.tolist()
    assert all(h == hops - 1 for _, h in lookup.hop_rows)  # the table's depth reads the table


def test_provenance_tables_are_built_with_the_compiled_graph(graph, embedder, monkeypatch):
    r = CausalGraphRetriever(graph, embedder)
    assert r.lookup.compiled is r.compiled  # built at load, not by the first query
    assert r.lookup.table_hops == r.config.max_hops  # with every variable's BFS row
    table = r.lookup.hop_table
    built = []
    real = EdgeLookup.of.__func__
    monkeypatch.setattr(
        EdgeLookup, "of", classmethod(lambda c, g, *a: built.append(g) or real(c, g, *a))
    )
    r.retrieve("smoking", k=3)
    r.with_config(mode="paper").retrieve("smoking", k=3)
    assert built == []  # no query builds them
    r.insert([Chunk("n1", "the weather was sunny all week", "d2")])  # chunk arrays grow
    assert built == [r.compiled] and r.lookup.compiled is r.compiled
    assert r.lookup.hop_table is table  # the edges did not change: their BFS rows are kept
    r.delete(chunk_ids=["c4"])  # a recompile
    assert built[-1] is r.compiled and r.lookup.compiled is r.compiled
    assert r.lookup.hop_table is not table and r.lookup.table_hops == r.config.max_hops
    copied = pickle.loads(pickle.dumps(r))  # the tables' lock is not pickled; they are rebuilt
    assert copied.lookup.compiled is copied.compiled
    assert _ids(copied.retrieve("smoking", k=3)) == _ids(r.retrieve("smoking", k=3))


class _SlowDict(dict):
    """A dict whose insert yields to other threads first: a check-then-insert without a lock lets
    every thread pass the size check before any insert lands."""

    def __setitem__(self, key, value):
        time.sleep(0.02)
        super().__setitem__(key, value)


def _ids(result):
    return [c.chunk.id for c in result.chunks]


def test_bfs_row_cache_holds_its_cap_under_concurrent_queries(monkeypatch):
    rng = np.random.default_rng(0)
    g = _random_graph(rng, 12, 30)
    lookup = replace(EdgeLookup.of(g), hop_rows=_SlowDict())
    monkeypatch.setattr(retriever_module, "HOP_ROWS_MAX", 2 * g.n_vars)  # room for 2 rows
    start = threading.Barrier(8)

    def query(source: int) -> None:
        start.wait()
        lookup.hops(np.array([source]), 3)

    threads = [threading.Thread(target=query, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lookup.hop_rows) == 2


def _toward_ends_by_gather(in_ptr, in_src, in_eid, ends, inside):
    """The way on to the ends as it was written before: a gather of the frontier's entries."""
    n = in_ptr.size - 1
    nxt = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    frontier = np.unique(ends)
    seen[frontier] = True
    while frontier.size:
        pos, _ = gather(in_ptr, frontier)
        src = in_src[pos]
        fresh = ~seen[src] & inside[src]
        src, pos = src[fresh], pos[fresh]
        nxt[src] = in_eid[pos]
        frontier = src[~seen[src]]
        seen[src] = True
        frontier = np.flatnonzero(np.bincount(frontier, minlength=n)) if frontier.size else frontier
    return nxt


@pytest.mark.parametrize("seed", range(30))
def test_toward_ends_matches_the_gather_per_frontier(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(1, 30)), int(rng.integers(0, 80)))
    inside = rng.random(g.n_vars) < 0.7
    ends = np.flatnonzero(inside & g.is_end)
    args = (g.in_ptr, g.in_src, g.in_eid, ends, inside)
    assert toward_ends(*args).tolist() == _toward_ends_by_gather(*args).tolist()


def _outcome_cone_bits_by_rows(reached, sub_src, sub_dst, end_group):
    """The cones' membership bits as they were propagated before: whole rows of the table."""
    ends = np.flatnonzero(reached & (end_group >= 0))
    present = np.unique(end_group[ends])
    bits = np.zeros((reached.size, max(1, (present.size + 63) // 64)), dtype=np.uint64)
    index = np.searchsorted(present, end_group[ends])
    shift = (index % 64).astype(np.uint64)
    np.bitwise_or.at(bits, (ends, index // 64), np.left_shift(np.uint64(1), shift))
    if sub_src.size:
        order = np.argsort(sub_src, kind="stable")
        sub_src, sub_dst = sub_src[order], sub_dst[order]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(sub_src)) + 1))
        for _ in range(reached.size):
            held = bits[sub_src[starts]]
            merged = held | np.bitwise_or.reduceat(bits[sub_dst], starts, axis=0)
            if np.array_equal(merged, held):
                break
            bits[sub_src[starts]] = merged
    return bits


@pytest.mark.parametrize("seed", range(20))
def test_outcome_cones_word_by_word_match_whole_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    g = _random_graph(rng, n, int(rng.integers(1, 120)))
    end_group = np.where(g.is_end, rng.integers(0, 130, n), -1)  # up to three 64-bit words
    reached = rng.random(n) < 0.8
    keep = reached[g.out_src] & reached[g.out_dst]
    sub_src, sub_dst = g.out_src[keep], g.out_dst[keep]
    matched = np.flatnonzero(reached)[:5]
    cones = outcome_cones(reached, sub_src, sub_dst, end_group, matched, np.ones(matched.size), 6)
    want = _outcome_cone_bits_by_rows(reached, sub_src, sub_dst, end_group)
    assert np.array_equal(cones.bits, want)


def _citing_by_all_pairs(g, rows, edges, ranks):
    """Each chunk's first three citing edges as found before: every selected edge's evidence
    gathered and sorted, then the returned chunks' pairs read in that order."""
    pos, owner = gather(g.ev_ptr, edges)
    returned = np.zeros(g.chunk_emb.shape[0], dtype=bool)
    returned[rows] = True
    keep = returned[g.ev_chunk[pos]]
    pos, owner = pos[keep], owner[keep]
    entry = np.lexsort((g.edge_conf_order[edges[owner]], ranks[owner]))
    return _citing(rows, np.stack([g.ev_chunk[pos][entry], edges[owner][entry]], axis=1))


@pytest.mark.parametrize("seed", range(30))
def test_citing_edges_of_the_returned_chunks_match_the_sorted_evidence(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 20, int(rng.integers(0, 80)))
    m = g.edge_src.size
    edges = rng.permutation(m)[: int(rng.integers(0, m + 1))]
    ranks = rng.integers(0, 4, edges.size)  # ties of rank are common
    rows = rng.integers(0, g.chunk_emb.shape[0], int(rng.integers(0, 8))).tolist()
    got = EdgeLookup.of(g).citing(rows, edges, ranks)
    assert got == _citing_by_all_pairs(g, rows, edges, ranks)


CUT_TEXTS = [
    "One two three four five six seven eight nine ten.",
    "吸烟有害。 Smoking kills. 肺癌，常见！",
    "short " + "x" * 250 + " tail " + "y" * 100 + "z end",
    "  spaced\tout\n\nwords  here ",
]


@pytest.mark.parametrize("seed", range(40))
def test_array_word_spans_are_the_corpus_word_spans(seed):
    rng = np.random.default_rng(seed)
    # Every ASCII character (the spaces \s matches among them: \x1c-\x1f too), runs longer
    # than MAX_TOKEN_CHARS, and text that is not ASCII (CJK, accents, a non-ASCII space).
    alphabet = [chr(i) for i in range(128)] + ["é", "吸", "烟", "。", "\u00a0", "\u2028"]
    ascii_only = seed % 2 == 0
    pool = alphabet[:128] if ascii_only else alphabet
    weights = np.array([8.0 if ch.isalnum() else 1.0 for ch in pool])
    text = "".join(rng.choice(pool, size=int(rng.integers(0, 400)), p=weights / weights.sum()))
    if seed % 5 == 0:
        text += " " + "x" * int(rng.integers(95, 260)) + " tail"
    assert array_word_spans(text).tolist() == [list(s) for s in word_spans(text)]


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
