"""langchain_hcg used the LangChain way: ids that an id-keyed ensemble can deduplicate, ``filter=``
before ranking, pickling and deep copies, metadata that keeps dates, async on the model's own API,
and an embedder identity that includes the vector size."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from hcg_core.embedders import CallableEmbedder, HashingEmbedder, MiniLMEmbedder
from hcg_core.errors import ConfigError
from hcg_core.retrieval import CausalGraphRetriever as CoreRetriever
from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
QUESTIONS = (
    "What raises blood pressure?",
    "How do plaques build up inside the arteries?",
    "What causes a stroke?",
    "How does obesity lead to insulin resistance?",
)


def corpus_documents() -> list[Document]:
    return [
        Document(
            page_content=p.read_text(encoding="utf-8"),
            id=p.stem,
            metadata={"topic": p.stem[3:], "source": p.name},
        )
        for p in sorted(CORPUS.glob("*.md"))
    ]


@pytest.fixture(scope="module")
def embeddings() -> HCGDefaultEmbeddings:
    return HCGDefaultEmbeddings(embedder=HashingEmbedder(1024))


@pytest.fixture(scope="module")
def retriever(embeddings: HCGDefaultEmbeddings) -> HCGRetriever:
    return HCGRetriever.from_documents(
        corpus_documents(),
        embeddings=embeddings,
        k=4,
        chunk_words=80,
        overlap_words=10,
    )


def doc_ids(docs: list[Document]) -> list[str]:
    return [d.id for d in docs]


# ------------------------------------------------------------------ ensembles


def test_ids_let_an_id_keyed_ensemble_deduplicate(embeddings: HCGDefaultEmbeddings) -> None:
    """EnsembleRetriever (langchain-classic, not a dependency) merges by ``id_key``/``id``; the
    units HCG returns are the caller's own documents, so both retrievers name one unit alike."""
    splits = [
        Document(page_content=para, id=f"{d.id}-{i}", metadata=d.metadata)
        for d in corpus_documents()
        for i, para in enumerate(p for p in d.page_content.split("\n\n") if p.strip())
    ]
    hcg = HCGRetriever.from_documents(splits, embeddings=embeddings, chunk=False, k=5)
    vector = InMemoryVectorStore.from_documents(splits, embeddings).as_retriever(
        search_kwargs={"k": 5}
    )
    known = {d.id for d in splits}
    for q in QUESTIONS:
        a, b = hcg.invoke(q), vector.invoke(q)
        assert set(doc_ids(a)) <= known and len(set(doc_ids(a))) == len(a) == 5
        shared = set(doc_ids(a)) & set(doc_ids(b))
        assert shared, "both should find some of the same paragraphs"
        by_id = {d.id: d for d in [*a, *b]}  # EnsembleRetriever's dedup by id
        assert len(by_id) == len(set(doc_ids(a)) | set(doc_ids(b)))
        for i in shared:
            assert next(d for d in a if d.id == i).page_content == by_id[i].page_content


# ------------------------------------------------------------------ filters


def test_filter_equality_and_in_apply_before_ranking(retriever: HCGRetriever) -> None:
    q = "What raises blood pressure?"
    got = retriever.invoke(q, filter={"topic": "diabetes"})
    assert len(got) == 4 and {d.metadata["topic"] for d in got} == {"diabetes"}
    got = retriever.invoke(q, k=6, filter={"topic": {"$in": ["stroke", "atherosclerosis"]}})
    assert len(got) == 6 and {d.metadata["topic"] for d in got} <= {"stroke", "atherosclerosis"}
    got = retriever.invoke(
        q, filter={"$or": [{"source": "04-diabetes.md"}, {"topic": {"$eq": "stroke"}}]}
    )
    assert {d.metadata["topic"] for d in got} <= {"diabetes", "stroke"}
    got = retriever.invoke(q, filter={"topic": {"$nin": ["blood-pressure"]}, "doc_id": "03-stroke"})
    assert {d.metadata["doc_id"] for d in got} == {"03-stroke"}
    assert retriever.invoke(q, filter={"topic": "no-such-topic"}) == []
    fixed = retriever.model_copy(update={"filter": {"topic": "stroke"}})
    assert {d.metadata["topic"] for d in fixed.invoke(q)} == {"stroke"}


async def test_filter_reaches_the_async_path(retriever: HCGRetriever) -> None:
    got = await retriever.ainvoke("What raises blood pressure?", filter={"topic": "stroke"})
    assert len(got) == 4 and {d.metadata["topic"] for d in got} == {"stroke"}


def test_unsupported_filters_and_options_are_errors(retriever: HCGRetriever) -> None:
    with pytest.raises(ConfigError, match=r"unsupported filter operator '\$regex'"):
        retriever.invoke("stroke", filter={"topic": {"$regex": "str.*"}})
    with pytest.raises(ConfigError, match="unsupported filter operator"):
        retriever.invoke("stroke", filter={"$not": {"topic": "stroke"}})
    with pytest.raises(ConfigError, match="list of values"):
        retriever.invoke("stroke", filter={"topic": {"$in": "stroke"}})
    with pytest.raises(ConfigError, match="unknown retrieval option"):
        retriever.invoke("stroke", filters={"topic": "stroke"})  # misspelt: not ignored
    assert len(retriever.invoke("stroke", verbose=True)) == 4  # LangChain's own option passes
    with pytest.raises(ValueError, match="unsupported filter operator"):  # pydantic wraps it
        HCGRetriever(core=retriever.core, filter={"topic": {"$like": "x"}})


# ------------------------------------------------------------------ pickling


def test_pickle_and_deepcopy_give_the_same_results(retriever: HCGRetriever) -> None:
    for clone in (pickle.loads(pickle.dumps(retriever)), copy.deepcopy(retriever)):
        assert clone.core is not retriever.core
        for q in QUESTIONS:
            a, b = retriever.invoke(q), clone.invoke(q)
            assert doc_ids(a) == doc_ids(b)
            assert [d.metadata for d in a] == [d.metadata for d in b]
    core = pickle.loads(pickle.dumps(retriever.core))
    with core._ranker_lock:  # a fresh, working lock
        pass


def test_the_offline_embedder_pickles_without_its_session() -> None:
    embedder = MiniLMEmbedder()
    vec = embedder.embed_query("stroke")  # loads the ONNX session
    clone = pickle.loads(pickle.dumps(embedder))
    assert clone._session is None and clone.name == embedder.name
    np.testing.assert_allclose(clone.embed_query("stroke"), vec, atol=1e-6)


def test_an_embedder_that_cannot_pickle_is_named() -> None:
    hashing = HashingEmbedder(64)
    lam = CallableEmbedder(lambda texts: hashing.embed_documents(texts), name="my-lambda")
    core = CoreRetriever(_tiny_graph(), lam)
    with pytest.raises(ConfigError, match="'my-lambda' cannot be pickled"):
        pickle.dumps(HCGRetriever(core=core))
    with pytest.raises(ConfigError, match="'my-lambda' cannot be pickled"):
        copy.deepcopy(core)


def _tiny_graph() -> Any:
    from hcg_core.types import CausalGraph, Chunk, DomainSpec

    chunks = (Chunk("a", "salt raises blood pressure"), Chunk("b", "statins lower cholesterol"))
    return CausalGraph(DomainSpec((), ()), (), (), chunks)


# ------------------------------------------------------------------ metadata


def test_dates_become_iso_strings_and_unserialisable_values_are_named(
    embeddings: HCGDefaultEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    docs = [
        Document(
            page_content="Salt raises blood pressure and pressure causes stroke.",
            id="a",
            metadata={
                "published": dt.date(2024, 5, 1),
                "seen": dt.datetime(2024, 5, 1, 12, 30),
                "handle": object(),
                "tags": ["bp"],
            },
        ),
        Document(page_content="Statins lower cholesterol.", id="b"),
    ]
    with caplog.at_level(logging.WARNING, logger="hcg_core.contract"):
        r = HCGRetriever.from_documents(docs, embeddings=embeddings, chunk=False, k=2)
    assert "handle (object)" in caplog.text and "document a" in caplog.text
    meta = next(d for d in r.invoke("salt") if d.id == "a").metadata
    assert meta["published"] == "2024-05-01" and meta["seen"] == "2024-05-01T12:30:00"
    assert meta["tags"] == ["bp"] and "handle" not in meta
    assert r.invoke("salt", filter={"published": {"$gte": "2024-01-01"}})[0].id == "a"


# ------------------------------------------------------------------ async


class SlowEmbeddings(Embeddings):
    """Hashing vectors behind 0.2 s: asyncio.sleep in the async API, time.sleep in the sync one."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(256)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        time.sleep(0.2)
        return self.inner.embed_query(text).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        await asyncio.sleep(0.2)
        return self.inner.embed_query(text).tolist()


@pytest.mark.slow  # waits on a slow async embedder to show the calls overlap
async def test_ainvoke_awaits_the_embeddings_async_api() -> None:
    r = HCGRetriever.from_documents(
        corpus_documents(), embeddings=SlowEmbeddings(), k=3, chunk_words=80
    )
    questions = [*QUESTIONS, "What is hypertension?"]
    start = time.perf_counter()
    results = await asyncio.gather(*(r.ainvoke(q) for q in questions))
    assert time.perf_counter() - start < 0.6  # five 0.2 s waits overlap
    for q, got in zip(questions, results, strict=True):
        assert doc_ids(got) == doc_ids(r.invoke(q))


# ------------------------------------------------------------------ identity


def test_same_name_other_dimension_recomputes_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    small, large = HashingEmbedder(64), HashingEmbedder(128)
    first = CallableEmbedder(small.embed_documents, name="served-model")
    second = CallableEmbedder(large.embed_documents, name="served-model")  # same name, dim 128
    r = HCGRetriever.from_documents(corpus_documents(), embeddings=first, k=3, chunk_words=80)
    r.save(tmp_path / "g")
    with caplog.at_level(logging.WARNING, logger="hcg_core.retrieval.retriever"):
        loaded = HCGRetriever.from_persist_dir(tmp_path / "g", embeddings=second, k=3)
    assert "all vectors are recomputed" in caplog.text and "(dim 64)" in caplog.text
    assert loaded.core.chunk_embeddings.shape[1] == 128
    assert len(loaded.invoke("What causes a stroke?")) == 3  # no dimension error on the query
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hcg_core.retrieval.retriever"):
        HCGRetriever.from_persist_dir(tmp_path / "g", embeddings=first)
    assert "recomputed" not in caplog.text  # same model, same size: the stored vectors are kept


def test_builder_options_are_one_dict_as_in_llamaindex(
    embeddings: HCGDefaultEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hcg_core import adapter_common

    seen: dict[str, Any] = {}
    real = adapter_common.build_graph

    def spy(chunks: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return real(chunks, **kwargs)

    monkeypatch.setattr(adapter_common, "build_graph", spy)
    docs = corpus_documents()[:2]
    HCGRetriever.from_documents(docs, embeddings=embeddings, build_options={"max_evidence": 7})
    assert seen["max_evidence"] == 7
    with pytest.raises(TypeError, match="max_evidence"):
        HCGRetriever.from_documents(docs, embeddings=embeddings, max_evidence=5)


def test_a_split_across_a_paragraph_break_comes_back_as_the_part_asked_for(
    embeddings: HCGDefaultEmbeddings,
) -> None:
    """A user's splits that run on across blank lines (chunk=False) come back as the part the
    question picked: the split's text from that part, ``start_index`` moved to it."""
    from langchain_text_splitters import CharacterTextSplitter

    docs = corpus_documents()
    splitter = CharacterTextSplitter(
        separator=". ", chunk_size=400, chunk_overlap=0, add_start_index=True
    )
    splits = splitter.split_documents(docs)
    assert any("\n\n" in s.page_content for s in splits)
    r = HCGRetriever.from_documents(splits, embeddings=embeddings, chunk=False, k=6)
    source = {d.metadata["source"]: d.page_content for d in docs}
    contents = [s.page_content for s in splits]
    parted = 0
    for question in ("What raises blood pressure?", "What causes a stroke?"):
        got = r.invoke(question)
        assert len(got) == 6
        for d in got:
            start = d.metadata["start_index"]
            text = d.page_content
            assert source[d.metadata["source"]][start : start + len(text)] == text
            assert any(text in c for c in contents)
            parted += text not in contents
    assert parted, "some split straddles a paragraph break and comes back in part"
