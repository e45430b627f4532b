"""langchain_hcg behaves like a native LangChain retriever: k conventions, ids, provenance,
sync/async, callbacks, LCEL, persistence, and the model wrappers."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import BaseModel

from hcg_core import adapter_common
from hcg_core.config import HybridConfig, RetrievalConfig
from hcg_core.embedders import HashingEmbedder, default_embedder
from hcg_core.errors import ConfigError, InputError, LLMOutputError
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from hcg_core.types import CausalGraph, Chunk, DomainSpec
from langchain_hcg import (
    DEFAULT_K,
    HCGDefaultEmbeddings,
    HCGRetriever,
    LangChainStructuredLLM,
    to_core_embedder,
)

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "data" / "adapter_demo.md"
QUERY = "Why does atrial fibrillation lead to stroke?"


def demo_documents() -> list[Document]:
    """One LangChain Document per section of the demo corpus, with stable ids."""
    sections = CORPUS.read_text(encoding="utf-8").split("\n## ")[1:]
    docs = []
    for i, sec in enumerate(sections):
        title, _, body = sec.partition("\n")
        docs.append(Document(page_content=body.strip(), metadata={"title": title}, id=f"sec-{i}"))
    return docs


@pytest.fixture(scope="module")
def embeddings() -> HCGDefaultEmbeddings:
    return HCGDefaultEmbeddings(embedder=HashingEmbedder(1024))


@pytest.fixture(scope="module")
def retriever(embeddings: HCGDefaultEmbeddings) -> HCGRetriever:
    return HCGRetriever.from_documents(
        demo_documents(), embeddings=embeddings, k=3, chunk_words=40, overlap_words=8
    )


def test_invoke_returns_k_documents_with_ids_and_provenance(retriever: HCGRetriever) -> None:
    docs = retriever.invoke(QUERY)
    assert len(docs) == 3
    chunk_ids = {c.id for c in retriever.graph.chunks}
    for d in docs:
        assert d.id in chunk_ids
        assert d.metadata["hcg_parent_id"] is None  # a whole chunk, not part of one
        assert "chunk_id" not in d.metadata and "passage_of" not in d.metadata
        assert d.metadata["doc_id"].startswith("sec-")
        assert d.metadata["hcg_route"] in ("graph", "fallback")
        assert isinstance(d.metadata["hcg_paths"], list)
        assert isinstance(d.metadata["hcg_score"], float)
        assert "title" in d.metadata  # the source document's own metadata survives chunking
    assert len(retriever.invoke(QUERY, k=1)) == 1
    assert len(retriever.invoke(QUERY, k=5)) == 5


def test_graph_route_documents_carry_their_causal_paths(retriever: HCGRetriever) -> None:
    docs = retriever.invoke("What does hypertension cause?", k=8)
    graph_docs = [d for d in docs if d.metadata["hcg_route"] == "graph"]
    assert graph_docs, "the demo corpus has hypertension edges: the graph route must serve some"
    for d in graph_docs:
        assert d.metadata["hcg_paths"], "a graph-route chunk must say which path selected it"
        assert all(re.search(r" -(?:\(.\))?-?> ", p) for p in d.metadata["hcg_paths"])
        edge_ids = {e.id for e in retriever.graph.edges}
        assert set(d.metadata["hcg_edge_ids"]) <= edge_ids


def test_sync_and_async_agree(retriever: HCGRetriever) -> None:
    sync = retriever.invoke(QUERY, k=4)
    got = asyncio.run(retriever.ainvoke(QUERY, k=4))
    assert [d.id for d in got] == [d.id for d in sync]
    assert [d.id for d in retriever.batch([QUERY, QUERY])[0]] == [
        d.id for d in retriever.invoke(QUERY)
    ]


def test_callbacks_see_the_retriever_run(retriever: HCGRetriever) -> None:
    class Recorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.events: list[tuple[str, Any]] = []

        def on_retriever_start(self, serialized: Any, query: str, **kw: Any) -> None:
            self.events.append(("start", query))

        def on_retriever_end(self, documents: Any, **kw: Any) -> None:
            self.events.append(("end", len(documents)))

    rec = Recorder()
    retriever.invoke(QUERY, config={"callbacks": [rec]}, k=2)
    assert rec.events == [("start", QUERY), ("end", 2)]


def test_lcel_chain_puts_retrieved_text_in_the_prompt(retriever: HCGRetriever) -> None:
    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=["Clots from the left atrium travel to the brain."])
    inputs = {"context": retriever | format_docs, "question": RunnablePassthrough()}
    chain = inputs | prompt | model | StrOutputParser()
    assert chain.invoke(QUERY) == "Clots from the left atrium travel to the brain."
    rendered = (inputs | prompt).invoke(QUERY).to_string()
    top = retriever.invoke(QUERY)[0].page_content
    assert top in rendered
    assert "hcg_paths" not in rendered  # provenance stays in metadata, the LLM sees text only


def test_save_and_from_persist_dir_round_trip(
    retriever: HCGRetriever, tmp_path: Path, embeddings: HCGDefaultEmbeddings
) -> None:
    retriever.save(tmp_path / "g")
    # The hashing embedder is rebuilt from the manifest's name: no embeddings argument needed.
    loaded = HCGRetriever.from_persist_dir(tmp_path / "g", k=3)
    for q in (QUERY, "What does smoking do to arteries?", "statins and cholesterol"):
        a, b = retriever.invoke(q, k=5), loaded.invoke(q, k=5)
        assert [d.id for d in a] == [d.id for d in b]
        assert [d.metadata["hcg_score"] for d in a] == pytest.approx(
            [d.metadata["hcg_score"] for d in b]
        )
    explicit = HCGRetriever.from_persist_dir(tmp_path / "g", embeddings=embeddings)
    assert explicit.k == DEFAULT_K == 10  # the same default as the LlamaIndex adapter


def test_chunk_false_keeps_the_callers_splits(embeddings: HCGDefaultEmbeddings) -> None:
    docs = demo_documents()
    r = HCGRetriever.from_documents(docs, embeddings=embeddings, chunk=False)
    assert [c.id for c in r.graph.chunks] == [d.id for d in docs]
    assert {d.id for d in r.invoke(QUERY)} <= {d.id for d in docs}
    # A document without an id gets a stable content id, the same on every build.
    anon = [Document(page_content=d.page_content) for d in docs[:3]]
    ids1 = [
        c.id
        for c in HCGRetriever.from_documents(anon, embeddings=embeddings, chunk=False).graph.chunks
    ]
    ids2 = [
        c.id
        for c in HCGRetriever.from_documents(anon, embeddings=embeddings, chunk=False).graph.chunks
    ]
    assert ids1 == ids2 and len(set(ids1)) == 3


def _tiny_graph() -> CausalGraph:
    return CausalGraph(DomainSpec((), ()), (), (), (Chunk("c1", "stroke risk"),))


def test_constructor_checks() -> None:
    # pydantic wraps the validator's ConfigError in a ValidationError (both are ValueErrors).
    with pytest.raises(ValueError, match="core must be an hcg_core"):
        HCGRetriever(core="not a retriever")
    with pytest.raises(ValueError, match="k must be at least 1"):
        HCGRetriever(core=CoreRetriever.from_graph(_tiny_graph(), HashingEmbedder(64)), k=0)
    with pytest.raises(InputError):
        HCGRetriever.from_documents([])


@pytest.mark.slow
def test_default_embeddings_are_the_offline_default_and_feed_a_vector_store() -> None:
    emb = HCGDefaultEmbeddings()
    assert emb.embedder is default_embedder()
    texts = [d.page_content for d in demo_documents()[:3]]
    store = InMemoryVectorStore.from_texts(texts, emb)
    hits = store.similarity_search(texts[1][:80], k=1)
    assert hits[0].page_content == texts[1]
    np.testing.assert_allclose(
        emb.embed_query("stroke"), default_embedder().embed_query("stroke"), rtol=1e-6
    )


def test_any_embeddings_wrap_into_the_core_protocol() -> None:
    core = to_core_embedder(DeterministicFakeEmbedding(size=16))
    assert core.name == "langchain:DeterministicFakeEmbedding:16"
    assert core.dim == 16
    m = core.embed_documents(["a", "b"])
    assert m.shape == (2, 16)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(m[0], m[1])
    hashing = HashingEmbedder(64)
    assert to_core_embedder(hashing) is hashing
    assert to_core_embedder(HCGDefaultEmbeddings(embedder=hashing)) is hashing
    with pytest.raises(ConfigError):
        to_core_embedder(object())


class Verdict(BaseModel):
    causal: bool
    mechanism: str


async def test_structured_llm_falls_back_to_json_text_with_reasks() -> None:
    # FakeListChatModel raises NotImplementedError from with_structured_output: text path.
    model = FakeListChatModel(
        responses=["not json", '```json\n{"causal": true, "mechanism": "m"}\n```']
    )
    llm = LangChainStructuredLLM(model)
    assert llm.name.startswith("langchain:FakeListChatModel")
    out = await llm.acomplete(
        [{"role": "system", "content": "schema {x}"}, {"role": "user", "content": "q"}], Verdict
    )
    assert out == Verdict(causal=True, mechanism="m")


async def test_structured_llm_raises_typed_error_when_replies_never_validate() -> None:
    llm = LangChainStructuredLLM(FakeListChatModel(responses=["nope"]))
    with pytest.raises(LLMOutputError):
        await llm.acomplete([{"role": "user", "content": "q"}], Verdict)


def test_an_explicit_llm_selects_the_llm_pipeline(
    monkeypatch: pytest.MonkeyPatch, embeddings: HCGDefaultEmbeddings
) -> None:
    seen: dict[str, Any] = {}
    real = adapter_common.build_graph

    def spy(chunks: Any, **kw: Any) -> Any:
        seen.update(kw)
        return real(chunks, **{**kw, "llm": None})  # build offline: only the dispatch is tested

    monkeypatch.setattr(adapter_common, "build_graph", spy)
    HCGRetriever.from_documents(
        demo_documents(), llm=FakeListChatModel(responses=["{}"]), embeddings=embeddings, tier="XS"
    )
    assert isinstance(seen["llm"], LangChainStructuredLLM)
    assert seen["tier"] == "XS"
    seen.clear()
    HCGRetriever.from_documents(demo_documents(), embeddings=embeddings)
    assert seen["llm"] is None


def test_wraps_an_existing_core_retriever(retriever: HCGRetriever) -> None:
    core = CoreRetriever.from_graph(retriever.graph, retriever.core.embedder)
    again = HCGRetriever(core=core, k=2)
    assert [d.id for d in again.invoke(QUERY)] == [d.id for d in retriever.invoke(QUERY, k=2)]


class _StructuredChat(FakeListChatModel):
    """A chat model whose with_structured_output works, as a real provider's does."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(lambda _msgs: schema(causal=True, mechanism="structured"))


async def test_structured_llm_prefers_with_structured_output() -> None:
    llm = LangChainStructuredLLM(_StructuredChat(responses=["unused text path"]))
    out = await llm.acomplete([{"role": "user", "content": "q"}], Verdict)
    assert out == Verdict(causal=True, mechanism="structured")


async def test_structured_llm_types_transport_errors() -> None:
    from hcg_core.errors import LLMError

    class Broken(FakeListChatModel):
        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("server down")

    with pytest.raises(LLMError, match="server down"):
        await LangChainStructuredLLM(Broken(responses=["x"])).acomplete(
            [{"role": "user", "content": "q"}], Verdict
        )


def test_pre_split_documents_with_start_index_are_placed_by_it(
    embeddings: HCGDefaultEmbeddings,
) -> None:
    """Splits made with LangChain's ``add_start_index=True`` carry ``start_index``: the core reads
    overlapping windows of one source from it (chunk=False keeps the caller's splits)."""
    from test_llamaindex_adapter import notes_text

    text = notes_text()
    sentences = [s if s.endswith(".") else s + "." for s in text.split(". ")]
    docs = []
    for i in range(0, len(sentences), 3):  # windows of 4 sentences, 1 shared with the next
        window = " ".join(sentences[i : i + 4])
        docs.append(
            Document(
                id=f"w{i}",
                page_content=window,
                metadata={"source": "notes", "start_index": text.index(window)},
            )
        )
    question = "Does warfarin interact with grapefruit juice?"
    stored = {d.id: d for d in docs}

    def span(d: Document) -> tuple[int, int]:
        # The stored window's place: a follower comes back cut of the words it shares.
        w = stored[d.id]
        return w.metadata["start_index"], w.metadata["start_index"] + len(w.page_content)

    # The notes are one paragraph of ~490 words: its windows come back in reading order.
    r = HCGRetriever.from_documents(docs, embeddings=embeddings, chunk=False, k=3)
    got = r.invoke(question)
    places = [span(d) for d in got]
    assert places == sorted(places)
    assert any("grapefruit" in d.page_content for d in got)
    # Each window on its own: the best match first.
    apart = RetrievalConfig(hybrid=HybridConfig(group_blocks=False))
    r = HCGRetriever.from_documents(docs, embeddings=embeddings, chunk=False, k=3, config=apart)
    alone = r.invoke(question)
    assert "grapefruit" in alone[0].page_content
    assert alone[0].id in {d.id for d in got}


def test_overlapping_windows_come_back_cut_of_what_an_earlier_one_sent(
    embeddings: HCGDefaultEmbeddings,
) -> None:
    """Text without paragraph breaks is cut into overlapping windows; a window that follows one
    already returned comes back without the sentences they share, as its span, with the
    chunk's own id and ``hcg_span``."""
    filler = "Patients were followed for several years in the regional cohort study."
    answer = "Warfarin interacts strongly with grapefruit juice and raises bleeding risk."
    text = " ".join([filler] * 3 + [answer] + [filler] * 70)
    r = HCGRetriever.from_documents(
        [Document(page_content=text, id="notes")], embeddings=embeddings, k=5
    )
    chunks = {c.id: c for c in r.graph.chunks}
    assert len(chunks) >= 4
    got = r.invoke("Does warfarin interact with grapefruit juice?")
    assert len({d.id for d in got}) == len(got) == 5 and all(d.id in chunks for d in got)
    assert answer in got[0].page_content == chunks[got[0].id].text
    cut = [d for d in got if "hcg_span" in d.metadata]
    assert cut
    for d in cut:
        a, b = d.metadata["hcg_span"]
        assert (
            d.page_content == chunks[d.id].text[a:b]
            and len(d.page_content) < b - a + 1 <= len(chunks[d.id].text) + 1
        )
        assert d.metadata["hcg_parent_id"] is None and "passage_of" not in d.metadata
