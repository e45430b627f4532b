"""llama_index_hcg behaves like a native LlamaIndex index: retriever conventions, docstore nodes,
query and chat engines, evaluation by node id, persistence, and insert/delete consistency."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import (
    Document,
    Settings,
    StorageContext,
    VectorStoreIndex,
    load_index_from_storage,
)
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from pydantic import BaseModel

from hcg_core import adapter_common
from hcg_core.config import HybridConfig, RetrievalConfig
from hcg_core.embedders import CallableEmbedder, HashingEmbedder, default_embedder
from hcg_core.errors import ConfigError, LLMOutputError
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from llama_index_hcg import (
    HCGDefaultEmbedding,
    HCGIndex,
    HCGRetriever,
    LlamaIndexStructuredLLM,
    to_core_embedder,
)
from llama_index_hcg._models import resolve_embedder

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "data" / "adapter_demo.md"
QUERY = "Why does atrial fibrillation lead to stroke?"
QUERIES = (QUERY, "What does hypertension cause?", "How do statins lower cholesterol and risk?")


def demo_documents() -> list[Document]:
    sections = CORPUS.read_text(encoding="utf-8").split("\n## ")[1:]
    docs = []
    for i, sec in enumerate(sections):
        title, _, body = sec.partition("\n")
        docs.append(Document(text=body.strip(), id_=f"sec-{i}", metadata={"title": title}))
    return docs


class ScriptedLLM(CustomLLM):
    """Returns canned replies in order (the last one repeats) and records every prompt."""

    replies: list[str] = ["scripted answer"]
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    def _next(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._next(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self._next(prompt)
        yield CompletionResponse(text=text, delta=text)


def splitter() -> SentenceSplitter:
    return SentenceSplitter(chunk_size=64, chunk_overlap=8)


@pytest.fixture
def embed() -> HCGDefaultEmbedding:
    return HCGDefaultEmbedding(embedder=HashingEmbedder(1024))


@pytest.fixture
def index(embed: HCGDefaultEmbedding) -> HCGIndex:
    return HCGIndex.from_documents(
        demo_documents(), embed_model=embed, transformations=[splitter()]
    )


def ids(nodes: list) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_retriever_returns_docstore_nodes_with_hidden_provenance(index: HCGIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=4, response_mode="compact", unknown=1)
    assert isinstance(retriever, HCGRetriever)
    got = retriever.retrieve(QUERY)
    assert len(got) == 4
    for nws in got:
        stored = index.docstore.get_node(nws.node.node_id)
        assert nws.node.get_content() == stored.get_content()
        assert nws.node.ref_doc_id == stored.ref_doc_id and stored.ref_doc_id.startswith("sec-")
        assert nws.node.metadata["hcg_route"] in ("graph", "fallback")
        assert isinstance(nws.node.metadata["hcg_paths"], list)
        assert "hcg_route" not in stored.metadata  # the docstore's node is never mutated
        llm_view = nws.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "hcg_" not in llm_view and "title" in llm_view
    assert ids(got) == sorted(ids(got), key=ids(got).index)  # no duplicates, order kept
    assert len(set(ids(got))) == 4
    assert len(index.as_retriever(similarity_top_k=1).retrieve(QUERY)) == 1


def test_graph_route_nodes_name_their_paths(index: HCGIndex) -> None:
    got = index.as_retriever(similarity_top_k=8).retrieve("What does hypertension cause?")
    graph_nodes = [n for n in got if n.node.metadata["hcg_route"] == "graph"]
    assert graph_nodes
    edge_ids = {e.id for e in index.graph.edges}
    for n in graph_nodes:
        assert all(re.search(r" -(?:\(.\))?-?> ", p) for p in n.node.metadata["hcg_paths"])
        assert set(n.node.metadata["hcg_edge_ids"]) <= edge_ids


def test_bad_top_k_is_a_typed_error(index: HCGIndex) -> None:
    with pytest.raises(ConfigError):
        index.as_retriever(similarity_top_k=0)


def test_query_engine_with_a_scripted_llm(index: HCGIndex) -> None:
    llm = ScriptedLLM(replies=["Clots form in the atrium and travel to the brain."])
    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=3), llm=llm)
    response = engine.query(QUERY)
    assert str(response) == "Clots form in the atrium and travel to the brain."
    assert len(response.source_nodes) == 3
    assert all(index.docstore.document_exists(n.node.node_id) for n in response.source_nodes)
    prompt = llm.prompts[-1]
    assert response.source_nodes[0].node.get_content() in prompt
    assert "hcg_paths" not in prompt  # the answer LLM sees passages, never graph provenance
    via_index = index.as_query_engine(
        llm=ScriptedLLM(), similarity_top_k=2, response_mode="compact"
    )
    assert len(via_index.query(QUERY).source_nodes) == 2


def test_chat_engine(index: HCGIndex) -> None:
    chat = index.as_chat_engine(
        chat_mode="context", llm=ScriptedLLM(replies=["ok"]), similarity_top_k=2
    )
    assert str(chat.chat(QUERY)) == "ok"
    assert len(chat.chat("and after?").source_nodes) == 2


def test_retriever_evaluator_on_node_ids(index: HCGIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=3)
    evaluator = RetrieverEvaluator.from_metric_names(["hit_rate", "mrr"], retriever=retriever)
    expected = index.ref_doc_info["sec-5"].node_ids  # the atrial fibrillation section
    result = evaluator.evaluate(
        query="atrial fibrillation clots anticoagulation", expected_ids=expected
    )
    assert result.metric_vals_dict["hit_rate"] == 1.0
    assert result.metric_vals_dict["mrr"] > 0.0
    miss = evaluator.evaluate(query="atrial fibrillation clots", expected_ids=["no-such-node"])
    assert miss.metric_vals_dict["hit_rate"] == 0.0


def test_persist_and_load_round_trip(
    index: HCGIndex, embed: HCGDefaultEmbedding, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=tmp_path)
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path), embed_model=embed
    )
    assert isinstance(loaded, HCGIndex)
    assert loaded.graph == index.graph
    for q in QUERIES:
        a = index.as_retriever(similarity_top_k=5).retrieve(q)
        b = loaded.as_retriever(similarity_top_k=5).retrieve(q)
        assert ids(a) == ids(b)
        assert [n.score for n in a] == pytest.approx([n.score for n in b])
        assert [n.node.metadata for n in a] == [n.node.metadata for n in b]
    # The stored vectors are reused with the same embedder, not recomputed.
    np.testing.assert_array_equal(
        loaded.core_retriever.chunk_embeddings, index.core_retriever.chunk_embeddings
    )


def test_loading_with_another_embedder_recomputes_vectors(index: HCGIndex, tmp_path: Path) -> None:
    index.storage_context.persist(persist_dir=tmp_path)
    other = HCGDefaultEmbedding(embedder=HashingEmbedder(256))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path), embed_model=other
    )
    assert loaded.core_retriever.chunk_embeddings.shape[1] == 256
    assert loaded.index_struct.embedder_name == "hashing-v1-256"
    assert len(loaded.as_retriever(similarity_top_k=3).retrieve(QUERY)) == 3


def test_core_graph_directory_round_trip(
    index: HCGIndex, embed: HCGDefaultEmbedding, tmp_path: Path
) -> None:
    index.save_graph_dir(tmp_path / "g")
    core = CoreRetriever.load(tmp_path / "g")  # hashing embedder rebuilt from the manifest
    wrapped = HCGIndex.from_graph_dir(tmp_path / "g", embed_model=embed)
    for q in QUERIES:
        want = [rc.chunk.id for rc in index.core_retriever.retrieve(q, k=5).chunks]
        assert [rc.chunk.id for rc in core.retrieve(q, k=5).chunks] == want
        assert ids(wrapped.as_retriever(similarity_top_k=5).retrieve(q)) == want


def _assert_consistent(index: HCGIndex) -> None:
    chunk_ids = {c.id for c in index.graph.chunks}
    for e in index.graph.edges:
        assert set(e.evidence) <= chunk_ids, f"edge {e.id} cites a chunk the graph no longer has"
    assert all(index.docstore.document_exists(c) for c in chunk_ids)
    assert len(index.core_retriever.chunk_embeddings) == len(index.graph.chunks)


def test_delete_ref_doc_removes_chunks_links_and_unsupported_edges(index: HCGIndex) -> None:
    before = index.graph
    # A section that alone backs some edge (which one depends on the builder, not on this test).
    target, gone, supported_only_by_gone = None, set(), set()
    for doc_id, info in sorted(index.ref_doc_info.items()):
        nodes = set(info.node_ids)
        only = {e.id for e in before.edges if e.evidence and set(e.evidence) <= nodes}
        if only:
            target, gone, supported_only_by_gone = doc_id, nodes, only
            break
    assert target is not None, "the demo corpus must have a section that alone backs an edge"
    index.delete_ref_doc(target, delete_from_docstore=True)
    _assert_consistent(index)
    assert not gone & {c.id for c in index.graph.chunks}
    edge_ids = {e.id for e in index.graph.edges}
    assert not supported_only_by_gone & edge_ids
    assert supported_only_by_gone <= set(index.index_struct.dropped_edges)
    # Edges that had other support keep it, minus the deleted links.
    survivors = {e.id for e in before.edges if not set(e.evidence) <= gone or not e.evidence}
    assert survivors <= edge_ids
    assert target not in index.ref_doc_info
    for q in QUERIES:
        assert not gone & set(ids(index.as_retriever(similarity_top_k=10).retrieve(q)))


def test_inserts_embed_only_the_new_text() -> None:
    """An insert embeds only its own chunk, with the offline ledger or without one (an LLM-built
    graph): linking evidence matches text, it embeds nothing."""
    hashing = HashingEmbedder(1024)
    seen: list[str] = []

    def counting(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return hashing.embed_documents(texts)

    embedder = CallableEmbedder(
        counting, name=hashing.name, dim=hashing.dim, query_fn=hashing.embed_query
    )
    index = HCGIndex.from_documents(
        demo_documents(), embed_model=embedder, transformations=[splitter()]
    )
    assert index.graph.edges and index.core_retriever.ledger is not None
    seen.clear()
    first = Document(text="Chronic hypertension raises the risk of ischaemic stroke.", id_="n1")
    index.insert(first)
    assert seen == [first.text]
    index.core_retriever.ledger = None  # as an LLM-built graph has none
    seen.clear()
    index.insert(Document(text="Salt raises blood pressure in older adults.", id_="n0"))
    assert seen == ["Salt raises blood pressure in older adults."]  # linking embeds nothing
    assert index.last_update.graph_mode == "relink"
    seen.clear()
    index.insert(Document(text="Atrial fibrillation causes clots in the heart.", id_="n2"))
    assert seen == ["Atrial fibrillation causes clots in the heart."]
    _assert_consistent(index)


def test_insert_and_update_keep_the_graph_consistent(index: HCGIndex) -> None:
    new = Document(
        text="Chronic hypertension raises the risk of ischaemic stroke. Sustained high blood "
        "pressure damages cerebral arteries and narrows them.",
        id_="sec-new",
    )
    index.insert(new)
    new_ids = set(index.ref_doc_info["sec-new"].node_ids)
    assert new_ids <= {c.id for c in index.graph.chunks}
    _assert_consistent(index)
    top = ids(index.as_retriever(similarity_top_k=3).retrieve(new.text))
    assert new_ids & set(top)
    index.update_ref_doc(
        Document(text="Sleep apnoea raises nocturnal blood pressure.", id_="sec-new")
    )
    _assert_consistent(index)
    assert not new_ids & {c.id for c in index.graph.chunks}
    assert "sec-new" in index.ref_doc_info


def test_edits_survive_persistence(
    index: HCGIndex, embed: HCGDefaultEmbedding, tmp_path: Path
) -> None:
    index.delete_ref_doc("sec-2", delete_from_docstore=True)
    index.insert(Document(text="Salt intake raises blood pressure.", id_="salt"))
    index.storage_context.persist(persist_dir=tmp_path)
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path), embed_model=embed
    )
    assert loaded.graph == index.graph
    assert ids(loaded.as_retriever().retrieve("salt")) == ids(index.as_retriever().retrieve("salt"))


def test_embedder_resolution_order(embed: HCGDefaultEmbedding) -> None:
    assert resolve_embedder(embed).name == "hashing-v1-1024"
    assert resolve_embedder(None) is default_embedder()  # Settings untouched: the bundled default
    saved = Settings._embed_model
    try:
        Settings.embed_model = HCGDefaultEmbedding(embedder=HashingEmbedder(128))
        assert resolve_embedder(None).name == "hashing-v1-128"
    finally:
        Settings._embed_model = saved


def test_default_embedding_feeds_a_vector_store_index() -> None:
    embed = HCGDefaultEmbedding()
    assert embed.core_embedder is default_embedder() and embed.model_name == "minilm-l6-v2-int8"
    docs = demo_documents()[:3]
    vec = VectorStoreIndex.from_documents(docs, embed_model=embed)
    hit = vec.as_retriever(similarity_top_k=1).retrieve(docs[2].text[:100])[0]
    assert hit.node.ref_doc_id == "sec-2"
    np.testing.assert_allclose(
        embed.get_query_embedding("stroke"), default_embedder().embed_query("stroke"), rtol=1e-6
    )


def test_any_base_embedding_wraps_into_the_core_protocol() -> None:
    core = to_core_embedder(MockEmbedding(embed_dim=8))
    assert core.name == "llamaindex:MockEmbedding:unknown"
    assert core.dim == 8
    m = core.embed_documents(["a", "b"])
    assert m.shape == (2, 8)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)
    hashing = HashingEmbedder(64)
    assert to_core_embedder(hashing) is hashing
    with pytest.raises(ConfigError):
        to_core_embedder("text-embedding-3-small")


class Verdict(BaseModel):
    causal: bool
    mechanism: str


async def test_structured_llm_over_a_custom_llm() -> None:
    llm = ScriptedLLM(replies=['{"causal": true, "mechanism": "clots travel {to} the brain"}'])
    wrapped = LlamaIndexStructuredLLM(llm)
    assert wrapped.name == "llamaindex:ScriptedLLM:scripted"
    # Braces in the messages (JSON schemas) must reach the model verbatim, not as template vars.
    out = await wrapped.acomplete(
        [
            {"role": "system", "content": 'schema {"type": "object"}'},
            {"role": "user", "content": "Does AF cause stroke? {x}"},
        ],
        Verdict,
    )
    assert out == Verdict(causal=True, mechanism="clots travel {to} the brain")
    assert '{"type": "object"}' in llm.prompts[0] and "{x}" in llm.prompts[0]


async def test_structured_llm_reasks_then_raises_typed_error() -> None:
    good = ScriptedLLM(replies=["no json here", "still none", '{"causal": false, "mechanism": ""}'])
    assert (
        await LlamaIndexStructuredLLM(good).acomplete([{"role": "user", "content": "q"}], Verdict)
    ) == Verdict(causal=False, mechanism="")
    with pytest.raises(LLMOutputError):
        await LlamaIndexStructuredLLM(ScriptedLLM(replies=["never"])).acomplete(
            [{"role": "user", "content": "q"}], Verdict
        )


def test_an_explicit_llm_selects_the_llm_pipeline(
    monkeypatch: pytest.MonkeyPatch, embed: HCGDefaultEmbedding
) -> None:
    seen: dict[str, Any] = {}
    real = adapter_common.build_graph

    def spy(chunks: Any, **kw: Any) -> Any:
        seen.update(kw)
        return real(chunks, **{**kw, "llm": None})  # build offline: only the dispatch is tested

    monkeypatch.setattr(adapter_common, "build_graph", spy)
    HCGIndex.from_documents(
        demo_documents(),
        llm=ScriptedLLM(),
        embed_model=embed,
        tier="XS",
        transformations=[splitter()],
    )
    assert isinstance(seen["llm"], LlamaIndexStructuredLLM)
    assert seen["tier"] == "XS"
    seen.clear()
    HCGIndex.from_documents(demo_documents(), embed_model=embed, transformations=[splitter()])
    assert seen["llm"] is None


async def test_async_retrieve_and_insert_match_sync(index: HCGIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=4)
    assert ids(await retriever.aretrieve(QUERY)) == ids(retriever.retrieve(QUERY))
    await index.ainsert(Document(text="Salt intake raises blood pressure.", id_="salt"))
    assert set(index.ref_doc_info["salt"].node_ids) <= {c.id for c in index.graph.chunks}
    await index.adelete_ref_doc("salt", delete_from_docstore=True)
    _assert_consistent(index)
    assert "salt" not in index.ref_doc_info


def test_loading_without_embed_model_rebuilds_the_build_embedder(
    index: HCGIndex, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=tmp_path)
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp_path))
    assert loaded.embedder.name == "hashing-v1-1024"
    assert ids(loaded.as_retriever().retrieve(QUERY)) == ids(index.as_retriever().retrieve(QUERY))


def test_passages_of_long_nodes_come_back_as_parts_of_docstore_nodes(
    embed: HCGDefaultEmbedding,
) -> None:
    """Passages asked for explicitly: a long node comes back as a part that keeps the framework
    link (ref_doc_id, a PARENT relationship to the docstore node, hcg_parent_id)."""
    folder = Path(__file__).resolve().parents[1] / "examples" / "corpus"
    docs = [
        Document(text=p.read_text(encoding="utf-8"), id_=p.stem)
        for p in sorted(folder.glob("*.md"))
    ]
    index = HCGIndex.from_documents(
        docs,
        embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=400, chunk_overlap=40)],
    )
    config = RetrievalConfig(hybrid=HybridConfig(passage_words=100))
    got = index.as_retriever(similarity_top_k=6, config=config).retrieve(
        "What does obesity lead to?"
    )
    assert len(got) == 6 and len(set(ids(got))) == 6
    parts = [n for n in got if n.node.metadata["hcg_parent_id"] is not None]
    assert parts, "nodes of ~300 words should be split into passages"
    for nws in parts:
        stored = index.docstore.get_node(nws.node.metadata["hcg_parent_id"])
        assert nws.node.parent_node is not None
        assert nws.node.parent_node.node_id == stored.node_id
        assert nws.node.node_id.startswith(stored.node_id + "#p")
        assert 0 < len(nws.node.get_content()) < len(stored.get_content())
        assert " ".join(nws.node.get_content().split()) in " ".join(stored.get_content().split())
        assert nws.node.ref_doc_id == stored.ref_doc_id
        assert "hcg_parent_id" not in nws.node.get_content(metadata_mode=MetadataMode.LLM)
    whole = index.as_retriever(similarity_top_k=6).retrieve("What does obesity lead to?")
    assert all(index.docstore.document_exists(i) for i in ids(whole))


def test_overlapping_nodes_come_back_as_spans_of_docstore_nodes(
    embed: HCGDefaultEmbedding,
) -> None:
    """A node that overlaps one already returned comes back as the span it adds, with its own
    docstore id and offsets moved to the span, so evaluators and fusion still see the user's
    nodes."""
    from conftest import flat_corpus_index
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    # The example corpus as one text without paragraph breaks, cut into overlapping nodes.
    index, text = flat_corpus_index(embed)
    question = "What does obesity lead to?"
    budgeted = index.as_retriever(similarity_top_k=5)  # every node
    got = budgeted.retrieve(question)
    assert len(ids(got)) == len(set(ids(got))) and all(
        index.docstore.document_exists(i) for i in ids(got)
    )
    spans = [n for n in got if "hcg_span" in n.node.metadata]
    assert spans, "nodes of ~220 words that overlap should come back as spans"
    for nws in spans:
        node = nws.node
        stored = index.docstore.get_node(node.node_id)
        a, b = node.metadata["hcg_span"]
        assert node.get_content() == stored.get_content()[a:b] != stored.get_content()
        assert text[node.start_char_idx : node.end_char_idx] == node.text
        assert "hcg_span" not in node.get_content(metadata_mode=MetadataMode.LLM)
    # With cut_repeats off the same nodes come back whole.
    config = RetrievalConfig(hybrid=HybridConfig(cut_repeats=False))
    whole = index.as_retriever(similarity_top_k=5, config=config).retrieve(question)
    assert all(
        n.node.get_content() == index.docstore.get_node(n.node.node_id).get_content() for n in whole
    )
    # The defaults under a budget: overlapping nodes are cut where an earlier result already
    # returned the same sentences, so no full sentence reaches the LLM twice.
    cut = index.as_retriever(
        similarity_top_k=20, config=RetrievalConfig(word_budget=1000)
    ).retrieve(question)
    assert any("hcg_span" in n.node.metadata for n in cut)
    for i, a in enumerate(cut):
        assert text[a.node.start_char_idx : a.node.end_char_idx] == a.node.text
        for b in cut[:i]:
            shared = text[
                max(a.node.start_char_idx, b.node.start_char_idx) : min(
                    a.node.end_char_idx, b.node.end_char_idx
                )
            ]
            assert shared.count(". ") == 0, shared
    vector = VectorStoreIndex(list(index.docstore.docs.values()), embed_model=embed)
    vector_ids = set(ids(vector.as_retriever(similarity_top_k=5).retrieve(question)))
    assert {n.node.node_id for n in spans} & vector_ids, "fusion must meet a span twice"
    fusion = QueryFusionRetriever(
        [budgeted, vector.as_retriever(similarity_top_k=5)],
        llm=MockLLM(),
        mode="reciprocal_rerank",
        num_queries=1,
        similarity_top_k=30,
        use_async=False,
    )
    fused = ids(fusion.retrieve(question))
    assert len(fused) == len(set(fused)) == len(set(ids(got)) | vector_ids)


def notes_text() -> str:
    """Forty look-alike notes that mention warfarin, and one sentence that answers the question."""
    notes = [
        f"Clinic note {i} says patients on warfarin dose{i} rested well after treatment{i}."
        for i in range(40)
    ]
    answer = "Warfarin interacts strongly with grapefruit juice and raises bleeding risk."
    return " ".join([*notes[:20], answer, *notes[20:]])


def test_overlapping_nodes_of_a_splitter_are_placed_by_their_offsets(
    embed: HCGDefaultEmbedding,
) -> None:
    """The core reads where LlamaIndex nodes sit in their document from their character offsets
    (no hcg word spans): the pieces of one short paragraph come back in reading order."""
    index = HCGIndex.from_documents(
        [Document(text=notes_text(), id_="notes")],
        embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=80, chunk_overlap=20)],
    )
    question = "Does warfarin interact with grapefruit juice?"

    def place(n: Any) -> tuple[int, int]:
        # The stored node's place: a follower comes back cut of the words it shares.
        node = index.docstore.get_node(n.node.node_id)
        return node.start_char_idx, node.end_char_idx

    # notes_text() is one paragraph of ~490 words: one short block, returned in reading order.
    got = index.as_retriever(similarity_top_k=3).retrieve(question)
    places = [place(n) for n in got]
    assert places == sorted(places)
    assert any("grapefruit" in n.node.get_content() for n in got)
    assert len({n.score for n in got}) == 1  # scored as the piece that matched
    # Each piece on its own: the best match first, scores falling.
    apart = RetrievalConfig(hybrid=HybridConfig(group_blocks=False))
    alone = index.as_retriever(similarity_top_k=3, config=apart).retrieve(question)
    assert "grapefruit" in alone[0].node.get_content()
    scores = [n.score for n in alone]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


def test_the_pieces_of_a_paragraph_a_splitter_cut_come_back_together(
    embed: HCGDefaultEmbedding,
) -> None:
    """group_blocks through the LlamaIndex door: the nodes a user's splitter cut from one short
    paragraph follow the best of them (hcg's own chunker would have kept it as one unit)."""
    first = "Warfarin interacts strongly with grapefruit juice in older patients. " + " ".join(
        f"The cohort {i} showed that bleeding events rose after the enzyme was blocked."
        for i in range(8)
    )
    others = [
        " ".join(f"Note {j}.{i} on warfarin dosing schedules at clinic {j}." for i in range(10))
        for j in range(4)
    ]
    text = "\n\n".join([first, *others])
    index = HCGIndex.from_documents(
        [Document(text=text, id_="notes")],
        embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=48, chunk_overlap=8)],
    )
    question = "Does warfarin interact with grapefruit juice?"
    end = len(first)

    def in_first(n: Any) -> bool:
        return index.docstore.get_node(n.node.node_id).start_char_idx < end

    pieces = sum(1 for node in index.docstore.docs.values() if node.start_char_idx < end)
    assert pieces >= 3
    # The paragraph was embedded once, as hcg's chunk would be: its pieces share that vector.
    core = index.core_retriever
    rows = [i for i, c in enumerate(core.graph.chunks) if c.metadata["start_char_idx"] < end]
    assert len(rows) == pieces
    vectors = core.chunk_embeddings[rows]
    assert np.array_equal(vectors, np.repeat(vectors[:1], pieces, axis=0))
    assert not np.array_equal(core.chunk_embeddings[rows[0]], core.chunk_embeddings[-1])
    # A document inserted later is embedded the same way.
    index.insert(Document(text=first.replace("Warfarin", "Heparin"), id_="more"))
    core = index.core_retriever
    added = [i for i, c in enumerate(core.graph.chunks) if c.doc_id == "more"]
    assert len(added) == pieces
    assert np.array_equal(
        core.chunk_embeddings[added], core.chunk_embeddings[added[:1]].repeat(pieces, 0)
    )
    index.delete_ref_doc("more")
    got = index.as_retriever(similarity_top_k=pieces + 2).retrieve(question)
    assert [in_first(n) for n in got[:pieces]] == [True] * pieces
    config = RetrievalConfig(hybrid=HybridConfig(group_blocks=False))
    apart = index.as_retriever(similarity_top_k=pieces + 2, config=config).retrieve(question)
    assert [in_first(n) for n in apart[:pieces]] != [True] * pieces
