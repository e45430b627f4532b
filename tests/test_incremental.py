"""Incremental insert and delete: the core, the store, the CLI and both adapters (issues 11 and 15).

The graph side is checked against fresh builds of the same documents on examples/corpus; the
array side (BM25, passages, compiled graph) against a retriever compiled from scratch.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from hcg_core.cli import main
from hcg_core.corpus import chunk_documents, load_inputs
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError, InputError
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.incremental import SupportLedger, UpdateReport, apply_links
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.lexical import BM25Index, Growable
from hcg_core.store import current_dir, load_graph
from hcg_core.types import CausalGraph, SourceDocument

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
QUERIES = [
    "What raises the risk of stroke?",
    "how does diabetes damage arteries",
    "atrial fibrillation clots",
    "cholesterol and plaque",
]
EMB = HashingEmbedder(1024)


def docs() -> list[SourceDocument]:
    out, bad = load_inputs([CORPUS])
    assert not bad
    return out


def fresh(documents: list[SourceDocument]) -> CausalGraphRetriever:
    result = build_graph(chunk_documents(documents), embedder=EMB, progress=False)
    core = CausalGraphRetriever.from_build(result, EMB)
    return core


def edge_set(graph: CausalGraph, with_evidence: bool = True) -> list[tuple]:
    """Edges as comparable rows; evidence as the texts of the cited chunks (ids may change)."""
    text = {c.id: " ".join(c.text.split()) for c in graph.chunks}
    return sorted(
        (e.id, e.source, e.target, e.mechanism, e.confidence)
        + ((tuple(sorted(text[c] for c in e.evidence)),) if with_evidence else ())
        for e in graph.edges
    )


def same_results(a: CausalGraphRetriever, b: CausalGraphRetriever) -> None:
    for q in QUERIES:
        for mode in ("hybrid", "paper"):
            ra, rb = (
                a.with_config(mode=mode).retrieve(q, k=6),
                b.with_config(mode=mode).retrieve(q, k=6),
            )
            assert [c.chunk.id for c in ra.chunks] == [c.chunk.id for c in rb.chunks], (q, mode)
            np.testing.assert_allclose(
                [c.score for c in ra.chunks], [c.score for c in rb.chunks], rtol=1e-5, atol=1e-6
            )


def recompiled(r: CausalGraphRetriever) -> CausalGraphRetriever:
    """The same graph and vectors, compiled and indexed from scratch."""
    return CausalGraphRetriever.from_graph(
        r.graph,
        EMB,
        variable_embeddings=np.array(r.variable_embeddings),
        chunk_embeddings=np.array(r.chunk_embeddings),
    )


# ------------------------------------------------------------------ the pieces


def test_bm25_add_and_subset_score_exactly_like_a_fresh_index() -> None:
    texts = [" ".join(d.text.split()[i : i + 40]) for d in docs() for i in range(0, 200, 40)]
    grown = BM25Index(texts[:5])
    for i in range(5, len(texts), 3):
        grown.add(texts[i : i + 3])
    whole = BM25Index(texts)
    keep = np.arange(len(texts)) % 3 != 1
    part = BM25Index([t for t, k in zip(texts, keep, strict=True) if k])
    for q in QUERIES + ["blood pressure blood"]:
        assert np.array_equal(grown.scores(q), whole.scores(q))
        assert np.array_equal(grown.subset(keep).scores(q), part.scores(q))
        assert grown.max_score(q) == pytest.approx(whole.max_score(q))


def test_an_older_index_keeps_its_documents_after_a_newer_one_grows() -> None:
    old = BM25Index(["aspirin thins blood", "salt raises pressure"])
    before = old.scores("aspirin blood")
    new = old.extended(["aspirin again and again"])
    branch = old.extended(["unrelated words"])  # appends from the older state: its own copy
    assert np.array_equal(old.scores("aspirin blood"), before)
    assert new.n_docs == 3 and branch.n_docs == 3
    assert new.scores("aspirin")[2] > 0 and branch.scores("aspirin")[2] == 0
    g = Growable(np.arange(3))
    g2 = g.append(3, np.array([7]))
    g3 = g.append(2, np.array([9]))  # not the newest length: a private copy
    assert g2.view(4).tolist() == [0, 1, 2, 7] and g3.view(3).tolist() == [0, 1, 9]


def test_an_insert_that_changes_no_edge_keeps_the_compiled_graph_arrays() -> None:
    from dataclasses import fields

    from hcg_core.retrieval.compiled import CompiledGraph

    r = fresh(docs())
    before = r.compiled
    # Text with no causal statement: no edge changes, so only the chunk arrays are new.
    r.insert(SourceDocument("plain", "The clinic opens at nine. Parking is free on weekends."))
    assert r.compiled.var_emb is before.var_emb and r.compiled.ev_chunk is before.ev_chunk
    scratch = CompiledGraph.compile(r.graph, r.variable_embeddings, r.chunk_embeddings)
    for f in fields(CompiledGraph):
        got, want = getattr(r.compiled, f.name), getattr(scratch, f.name)
        assert np.array_equal(got, want) if isinstance(want, np.ndarray) else got == want, f.name
    # One that adds support recompiles (new edge objects): still equal to a fresh compile.
    mid = r.compiled
    report = r.insert(
        SourceDocument(
            "causal", "Smoking raises blood pressure. High blood pressure causes stroke."
        )
    )
    assert report.edges_added and r.compiled.var_emb is not mid.var_emb
    scratch = CompiledGraph.compile(r.graph, r.variable_embeddings, r.chunk_embeddings)
    assert np.array_equal(r.compiled.ev_chunk, scratch.ev_chunk)
    assert np.array_equal(r.compiled.chunk_words, scratch.chunk_words)


def test_the_ledger_reproduces_the_builders_edges() -> None:
    r = fresh(docs())
    row = {c.id: i for i, c in enumerate(r.graph.chunks)}
    edges = apply_links(r.graph, r.ledger, set(r.ledger.links), row, UpdateReport())
    assert edges == r.graph.edges
    again = SupportLedger.from_json(json.loads(json.dumps(r.ledger.to_json(r.graph))), r.graph)
    assert apply_links(r.graph, again, set(again.links), row, UpdateReport()) == r.graph.edges


# ------------------------------------------------------------------ the core retriever


def test_insert_keeps_arrays_equal_to_a_fresh_compile(caplog: pytest.LogCaptureFixture) -> None:
    d = docs()
    r = fresh(d[:3])
    r.retrieve(QUERIES[0])  # the hybrid ranker exists before the insert and must grow
    with caplog.at_level(logging.WARNING):
        report = r.insert(d[3])
    assert report.chunks_added == 2 and report.graph_mode == "ledger"
    # Every statement of the new text is accounted for; what the 3-document vocabulary cannot
    # express (diabetes is not one of its metrics) is counted and logged, not dropped silently.
    assert report.statements == (
        report.statements_mapped + report.statements_unmapped + report.statements_as_built
    )
    assert report.statements_unmapped > 0 and "not expressible" in caplog.text
    assert {c.doc_id for c in r.graph.chunks} == {x.id for x in d}
    same_results(r, recompiled(r))
    removed = r.delete([d[0].id])
    assert removed.chunks_removed == 2 and not removed.missing
    assert d[0].id not in {c.doc_id for c in r.graph.chunks}
    same_results(r, recompiled(r))
    assert r.delete(["no-such-doc"]).missing == ("no-such-doc",)


def test_whitespace_only_refresh_keeps_every_edge() -> None:
    d = docs()
    r = fresh(d)
    before = edge_set(r.graph)
    for doc in d:
        r.delete(doc.id)
        r.insert(SourceDocument(doc.id, doc.text.replace(". ", ".  ") + "\n", doc.metadata))
    assert edge_set(r.graph) == before


def test_a_real_text_change_equals_a_fresh_build_of_the_same_documents() -> None:
    d = docs()
    r = fresh(d)
    stroke = d[2]
    changed = SourceDocument(
        stroke.id,
        stroke.text.replace("Severe strokes cause death.", "Severe strokes often cause death."),
        stroke.metadata,
    )
    assert changed.text != stroke.text
    r.delete(stroke.id)
    r.insert(changed)
    ref = fresh([*d[:2], changed, *d[3:]])
    # The edit keeps the vocabulary (the fresh build derives the same variables), so the
    # incremental graph must be exactly the fresh build's.
    assert sorted(v.name for v in ref.graph.variables) == sorted(v.name for v in r.graph.variables)
    assert edge_set(r.graph) == edge_set(ref.graph)
    assert "Severe strokes often cause death." in {e.mechanism for e in r.graph.edges}


def test_an_edit_that_changes_the_vocabulary_keeps_the_old_one_and_says_so() -> None:
    d = docs()
    r = fresh(d)
    stroke = d[2]
    changed = SourceDocument(
        stroke.id, stroke.text + "\nHypertension causes atrial fibrillation.\n"
    )
    r.delete(stroke.id)
    report = r.insert(changed)
    ref = fresh([*d[:2], changed, *d[3:]])
    # The fresh build promotes a new variable; the edit cannot (corpus-wide decision), reports
    # the links it skipped, and every edge it has is one the fresh build has too.
    assert report.links_skipped > 0
    assert set(edge_set(r.graph, False)) <= set(edge_set(ref.graph, False))
    chunks = {c.id: " ".join(c.text.split()) for c in r.graph.chunks}
    for e in r.graph.edges:
        assert e.evidence and e.mechanism in chunks[e.evidence[0]]


def test_bad_edits_raise_and_change_nothing() -> None:
    d = docs()
    r = fresh(d[:2])
    n = len(r.graph.chunks)
    with pytest.raises(InputError, match="already indexed"):
        r.insert(d[0])
    with pytest.raises(InputError, match="Document or Chunk"):
        r.insert(["plain text"])
    assert len(r.graph.chunks) == n
    view = r.with_config(top_k=3)
    with pytest.raises(ConfigError, match="with_config"):
        view.insert(d[2])
    r.insert(d[2])
    assert len(view.graph.chunks) == n  # a view made before an edit keeps its own graph
    assert [c.chunk.id for c in view.retrieve(QUERIES[0]).chunks]


def test_inserts_cost_the_new_text_only() -> None:
    """Each insert embeds only its own chunks: n inserts embed n documents, not n corpora."""
    seen: list[int] = []

    class Counting(HashingEmbedder):
        def embed_documents(self, texts):  # noqa: ANN001, ANN202 (the port's signature)
            seen.append(len(texts))
            return super().embed_documents(texts)

    d = docs()
    emb = Counting(1024)
    result = build_graph(chunk_documents(d[:1]), embedder=emb, progress=False)
    r = CausalGraphRetriever.from_build(result, emb)
    seen.clear()
    for doc in d[1:]:
        r.insert(doc)
    assert seen == [2, 2, 2]


# ------------------------------------------------------------------ store and CLI


def test_hcg_add_and_remove_edit_a_graph_directory(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    files = sorted(str(p) for p in CORPUS.glob("*.md"))
    assert main(["build", *files[:3], "--out", str(out), "--embedder", "hashing"]) == 0
    assert (current_dir(out) / "incremental.json").is_file()
    # The build records its chunking, whole-paragraph limit included, so `add` cuts alike.
    assert load_graph(out).report["input"]["whole_words"] == 600
    assert main(["add", str(out), files[3], "--json"]) == 0
    report = json.loads(_last_json(capsys))
    assert report["chunks_added"] == 2
    stored = load_graph(out)
    assert not stored.notes and stored.chunk_embeddings.shape[0] == len(stored.graph.chunks)
    assert stored.ledger is not None
    assert main(["remove", str(out), "01-blood-pressure.md"]) == 0
    assert main(["remove", str(out), "no-such.md"]) == 2  # refused before anything changes
    stored = load_graph(out)
    assert "01-blood-pressure.md" not in {c.doc_id for c in stored.graph.chunks}
    # The edited directory equals the core edit of the same documents.
    r = fresh(docs()[:3])
    r.insert(docs()[3])
    r.delete("01-blood-pressure.md")
    assert edge_set(stored.graph) == edge_set(r.graph)


def _last_json(capsys) -> str:
    text = capsys.readouterr().out
    return text[text.index("{") :]


def test_a_stale_ledger_is_ignored_with_a_warning(tmp_path: Path, caplog) -> None:
    r = fresh(docs())
    r.save(tmp_path / "g")
    graph = json.loads((current_dir(tmp_path / "g") / "graph.json").read_text())
    graph["edges"] = graph["edges"][1:]  # a hand edit the ledger does not know about
    (current_dir(tmp_path / "g") / "graph.json").write_text(json.dumps(graph))
    with caplog.at_level(logging.WARNING):
        loaded = CausalGraphRetriever.load(tmp_path / "g", EMB)
    assert loaded.ledger is None and "does not match" in caplog.text
    report = loaded.insert(SourceDocument("new", "Salt raises blood pressure. Salt causes stroke."))
    assert report.graph_mode == "relink" and report.notes


# ------------------------------------------------------------------ the adapters


def _li_docs():
    from llama_index.core import Document as LIDocument

    return [
        LIDocument(text=p.read_text(encoding="utf-8"), id_=p.name, metadata={"topic": p.stem[3:]})
        for p in sorted(CORPUS.glob("*.md"))
    ]


def _li_index(documents):
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

    return HCGIndex.from_documents(
        documents,
        embed_model=HCGDefaultEmbedding(embedder=EMB),
        transformations=[SentenceSplitter(chunk_size=128, chunk_overlap=16)],
    )


def test_llamaindex_refresh_keeps_the_graph_and_edits_match_a_fresh_build() -> None:
    from llama_index.core import Document as LIDocument

    original = _li_docs()
    index = _li_index(original)
    before = edge_set(index.graph)
    assert before
    spaced = [LIDocument(text=d.text + " ", id_=d.id_, metadata=d.metadata) for d in original]
    assert index.refresh_ref_docs(spaced) == [True] * len(spaced)
    assert edge_set(index.graph) == before  # was: 55 edges -> 0 (issue 11)
    assert not index.index_struct.dropped_edges
    stroke = spaced[2]
    changed = LIDocument(
        text=stroke.text.replace(
            "Severe strokes cause death.", "Severe strokes often cause death."
        ),
        id_=stroke.id_,
        metadata=stroke.metadata,
    )
    assert index.update_ref_doc(changed) == ()
    ref = _li_index([*spaced[:2], changed, *spaced[3:]])
    assert sorted(v.name for v in ref.graph.variables) == sorted(
        v.name for v in index.graph.variables
    )
    assert edge_set(index.graph) == edge_set(ref.graph)
    # The retriever sees the edited graph, and the struct round-trips with its ledger.
    retrieved = index.as_retriever(similarity_top_k=5).retrieve(QUERIES[0])
    assert retrieved and all(
        n.node.node_id in {c.id for c in index.graph.chunks} for n in retrieved
    )
    assert index.index_struct.ledger_json


def test_llamaindex_delete_ref_doc_reports_the_edges_it_removes() -> None:
    index = _li_index(_li_docs())
    edges = len(index.graph.edges)
    removed = index.delete_ref_doc("03-stroke.md", delete_from_docstore=True)
    assert removed and len(index.graph.edges) == edges - len(removed)
    assert index.last_update.edges_removed == removed
    assert set(removed) <= set(index.index_struct.dropped_edges)


def test_langchain_add_documents_and_delete_go_through_the_core() -> None:
    from langchain_core.documents import Document as LCDocument

    from langchain_hcg import HCGRetriever

    lc = [
        LCDocument(page_content=p.read_text(encoding="utf-8"), id=p.name)
        for p in sorted(CORPUS.glob("*.md"))
    ]
    retriever = HCGRetriever.from_documents(lc[:3], embeddings=EMB)
    added = retriever.add_documents(lc[3:])
    assert added and set(added) <= {c.id for c in retriever.graph.chunks}
    assert retriever.last_update.chunks_added == len(added)
    whole = HCGRetriever.from_documents(lc, embeddings=EMB)
    assert {c.id for c in whole.graph.chunks} == {c.id for c in retriever.graph.chunks}
    assert retriever.delete([lc[0].id]) is True
    assert lc[0].id not in {c.doc_id for c in retriever.graph.chunks}
    assert retriever.delete(["nothing-here"]) is False
    with pytest.raises(InputError):
        retriever.add_documents(lc[1:2])  # already indexed
    docs_out = retriever.invoke(QUERIES[0])
    assert docs_out and all(d.metadata["doc_id"] != lc[0].id for d in docs_out)


def test_llamaindex_inserts_without_a_ledger_embed_only_the_new_text(tmp_path: Path) -> None:
    """Without a ledger (as an LLM-built index), an insert links every edge again to the chunks
    that state it (text matching, no embedding): only the new text is embedded, before and
    after a reload, and a new chunk naming both endpoints of an edge becomes its evidence."""
    from llama_index.core import Document as LIDocument
    from llama_index.core import StorageContext, load_index_from_storage

    from llama_index_hcg import HCGDefaultEmbedding

    seen: list[str] = []

    class Counting(HashingEmbedder):
        def embed_documents(self, texts):  # noqa: ANN001, ANN202 (the port's signature)
            seen.extend(texts)
            return super().embed_documents(texts)

    emb = Counting(1024)
    index = _li_index(_li_docs())
    index.core_retriever.ledger = None
    index._embedder = emb
    index.core_retriever.embedder = emb
    index.insert(LIDocument(text="Salt raises blood pressure.", id_="salt"))
    assert seen == ["Salt raises blood pressure."]
    assert index.last_update.graph_mode == "relink"
    index.storage_context.persist(persist_dir=tmp_path)
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path),
        embed_model=HCGDefaultEmbedding(embedder=emb),
    )
    seen.clear()
    loaded.insert(LIDocument(text="Stress raises blood pressure too.", id_="stress"))
    assert seen == ["Stress raises blood pressure too."]
    assert loaded.last_update.graph_mode == "relink"


def test_llamaindex_struct_writes_are_deferred_until_the_store_is_read(tmp_path: Path) -> None:
    """Inserts do not re-encode the graph into the in-memory index store; every read or persist
    of the store writes it in full first, so nothing stale is ever read or saved."""
    from llama_index.core import Document as LIDocument
    from llama_index.core import StorageContext, load_index_from_storage

    index = _li_index(_li_docs()[:3])
    index.insert(LIDocument(text=_li_docs()[3].text, id_="04-diabetes.md"))
    assert index._index_struct.graph_json == ""  # deferred: the insert wrote no graph data
    store = index.storage_context.index_store
    stored = store.get_index_struct(index.index_id)
    assert stored.graph_data()["chunk_ids"] == [c.id for c in index.graph.chunks]
    index.insert(LIDocument(text="Salt raises blood pressure.", id_="salt"))
    index.storage_context.persist(persist_dir=tmp_path)
    # No embed_model: the offline embedder named in the struct is rebuilt.
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path))
    assert edge_set(loaded.graph) == edge_set(index.graph)
    assert loaded.core_retriever.ledger is not None


def test_hcg_add_chunks_new_text_like_the_build(tmp_path: Path) -> None:
    out = tmp_path / "g"
    files = sorted(str(p) for p in CORPUS.glob("*.md"))
    argv = ["build", *files[:2], "--out", str(out), "--embedder", "hashing", "--chunk-words", "80"]
    assert main([*argv, "--chunk-overlap", "10"]) == 0
    assert main(["add", str(out), files[2]]) == 0
    added = [c for c in load_graph(out).graph.chunks if c.doc_id == Path(files[2]).name]
    assert len(added) > 2 and max(len(c.text.split()) for c in added) <= 80


# ------------------------------------------------------------------ capped links (LinkState)


def _hub_sentences(n: int, seed: int, start: int) -> list[str]:
    """Causal sentences between entity variables of two hub metrics (benchmarks/insert_hub_cost.py)."""
    import random

    pool = ["velor", "kamin", "tusar", "podri", "nelqua", "zenbo"]
    rng = random.Random(seed)
    return [
        f"{rng.choice(pool).capitalize()} {rng.choice(('damage', 'inflammation'))} "
        f"{rng.choice(('leads to', 'causes', 'triggers'))} {rng.choice(pool)} "
        f"{rng.choice(('failure', 'disease'))} in adults number {start + i}."
        for i in range(n)
    ]


def full_recomputation(r: CausalGraphRetriever) -> dict[tuple[str, str], object]:
    """Every ledger link's edge recomputed from all its sentences by a ledger without states,
    then linked to its evidence by the one linker, as a build does."""
    from hcg_core.graph_build.evidence import link_evidence

    ledger = SupportLedger.from_json(r.ledger.to_json(r.graph), r.graph)
    row = {c.id: i for i, c in enumerate(r.graph.chunks)}
    names = {v.name for v in r.graph.variables}
    edges = [
        ledger.edge(link, row)
        for link in sorted(ledger.links)
        if link[0] in names and link[1] in names
    ]
    linked = link_evidence(edges, r.graph.variables, r.graph.chunks, per_edge=ledger.max_evidence)
    return {(e.source, e.target): e for e in linked}


def test_capped_links_updated_in_place_equal_a_full_recomputation(monkeypatch) -> None:
    """Hub links (confidence capped) take new sentences without recomputing; after every kind
    of edit (new sentences, a fragment cut by overlapping chunks, a repeated sentence, a delete)
    every edge equals the full recomputation: ids, mechanisms, confidences, evidence."""
    from hcg_core.types import Chunk

    in_place = []
    original = SupportLedger._update

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN202
        out = original(self, *args, **kwargs)
        in_place.append(out is not None)
        return out

    monkeypatch.setattr(SupportLedger, "_update", counted)
    base = _hub_sentences(240, 0, 0)
    chunks = [Chunk(f"c{i}", " ".join(base[i : i + 8]), f"d{i}") for i in range(0, 240, 8)]
    r = CausalGraphRetriever.from_build(build_graph(chunks, embedder=EMB, progress=False), EMB)
    by_link = lambda: {(e.source, e.target): e for e in r.graph.edges}  # noqa: E731
    assert by_link() == full_recomputation(r)
    new = _hub_sentences(48, 1, 1000)
    tail = lambda s: s.split(" ", 1)[1]  # noqa: E731 (a fragment: the cut dropped a word)
    edits = [
        [Chunk("n0", " ".join(new[:8]), "n0")],
        [Chunk("n1", " ".join(new[8:16]), "n1")],
        [Chunk("n2", " ".join(new[16:24]) + " " + base[3], "n2")],  # a known sentence, new chunk
        [Chunk("n3a", " ".join(new[24:28]), "n3"), Chunk("n3b", tail(new[27]), "n3")],
        [Chunk("n4a", " ".join(new[28:32]), "n4"), Chunk("n4b", tail(base[5]), "n4")],  # in old
        [Chunk("n5", " ".join(new[32:36]) + " Moreover, " + base[6], "n5")],  # holds an old one
        "delete",  # the first chunk: every row after it moves
        [Chunk("n6", " ".join(new[36:48]), "n6")],
    ]
    for edit in edits:
        if edit == "delete":
            r.delete(["d0"])
        else:
            report = r.insert(edit)
            assert report.statements_mapped > 0
        assert by_link() == full_recomputation(r), edit
    assert any(in_place) and in_place.count(True) >= 4  # the in-place path ran


def test_the_update_report_counts_what_the_edit_changed_in_the_graph() -> None:
    """``edges_updated`` names exactly the kept edges whose mechanism, confidence, sign or evidence
    changed, and ``evidence_links_added`` counts the links the graph did not have before (a new
    edge's included), after inserts and a delete on hub links (many touched, many capped)."""
    from hcg_core.types import Chunk

    base = _hub_sentences(240, 0, 0)
    chunks = [Chunk(f"c{i}", " ".join(base[i : i + 8]), f"d{i}") for i in range(0, 240, 8)]
    r = CausalGraphRetriever.from_build(build_graph(chunks, embedder=EMB, progress=False), EMB)
    new = _hub_sentences(32, 1, 1000)
    edits = [[Chunk(f"n{k}", " ".join(new[k * 8 : k * 8 + 8]), f"n{k}")] for k in range(4)]
    updated = links = 0
    for edit in [*edits[:2], "delete", *edits[2:]]:
        before = {e.id: e for e in r.graph.edges}
        report = r.delete(["d0"]) if edit == "delete" else r.insert(edit)
        after = {e.id: e for e in r.graph.edges}
        changed = sorted(i for i in after.keys() & before.keys() if after[i] != before[i])
        assert sorted(report.edges_updated) == changed, edit
        assert sorted(report.edges_added) == sorted(after.keys() - before.keys())
        assert sorted(report.edges_removed) == sorted(before.keys() - after.keys())
        old = {i: set(before[i].evidence) if i in before else set() for i in after}
        added = sum(len(set(e.evidence) - old[i]) for i, e in after.items())
        assert report.evidence_links_added == added, edit
        updated, links = updated + len(changed), links + added
    assert updated and links  # the edits did change edges and links
