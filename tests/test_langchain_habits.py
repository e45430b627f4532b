"""LangChain habits (issue 27, item 4): ``search_kwargs`` and ``search_type`` as
``VectorStoreRetriever`` takes them; anything else raises a clear ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError
from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
QUERY = "What raises the risk of stroke?"


@pytest.fixture(scope="module")
def embeddings() -> HCGDefaultEmbeddings:
    return HCGDefaultEmbeddings(embedder=HashingEmbedder(512))


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    out = []
    for path in sorted(CORPUS.glob("*.md")):
        for i, para in enumerate(p for p in path.read_text(encoding="utf-8").split("\n\n") if p):
            out.append(Document(para, id=f"{path.stem}-{i}", metadata={"source": path.name}))
    return out


@pytest.fixture(scope="module")
def base(docs, embeddings) -> HCGRetriever:
    return HCGRetriever.from_documents(docs, chunk=False, embeddings=embeddings)


def test_search_kwargs_k_and_filter_as_vector_store_retrievers_take_them(base, docs, embeddings):
    search = {"k": 3, "filter": {"source": "03-stroke.md"}}
    hcg = HCGRetriever(core=base.core, search_kwargs=search)
    vector = InMemoryVectorStore.from_documents(docs, embeddings).as_retriever(
        search_kwargs={"k": 3, "filter": lambda d: d.metadata["source"] == "03-stroke.md"}
    )
    got = hcg.invoke(QUERY)
    assert hcg.k == 3 and len(got) == 3 == len(vector.invoke(QUERY))
    assert {d.metadata["source"] for d in got} == {"03-stroke.md"}
    # The same as the explicit fields, and a per-call k still wins.
    same = HCGRetriever(core=base.core, k=3, filter={"source": "03-stroke.md"}).invoke(QUERY)
    assert [d.id for d in got] == [d.id for d in same]
    assert len(hcg.invoke(QUERY, k=1)) == 1
    # from_documents takes them too, as VectorStore.as_retriever does.
    built = HCGRetriever.from_documents(
        docs, chunk=False, embeddings=embeddings, search_kwargs={"k": 2}
    )
    assert built.k == 2 and len(built.invoke(QUERY)) == 2


def test_similarity_score_threshold_cuts_at_the_score(base):
    scores = [d.metadata["hcg_score"] for d in base.invoke(QUERY, k=6)]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    # Between two distinct scores (a pick may tie the one above it: scores never rise).
    i = next(i for i in range(1, 5) if scores[i] > scores[i + 1])
    cut = (scores[i] + scores[i + 1]) / 2  # keeps exactly the first i + 1
    hcg = HCGRetriever(
        core=base.core,
        search_type="similarity_score_threshold",
        search_kwargs={"k": 6, "score_threshold": cut},
    )
    got = hcg.invoke(QUERY)
    assert [d.metadata["hcg_score"] for d in got] == scores[: i + 1]
    assert len(hcg.invoke(QUERY, score_threshold=0.0)) == 6  # per call, as invoke merges kwargs
    assert scores[0] < 1.0 and hcg.invoke(QUERY, score_threshold=scores[0] + 1e-6) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # The user trial's call: every part of it is refused, the first named.
        ({"search_kwargs": {"k": 3}, "search_type": "mmr", "foo": 1}, r"unknown .*\['foo'\]"),
        ({"search_type": "mmr"}, "search_type 'mmr' is not supported"),
        ({"foo": 1}, r"unknown HCGRetriever option\(s\) \['foo'\]"),
        ({"k": 2, "search_kwargs": {"k": 3}}, "k is given twice"),
        ({"filter": {"a": 1}, "search_kwargs": {"filter": {"a": 2}}}, "filter is given twice"),
        ({"search_kwargs": {"fetch_k": 20}}, r"unknown search_kwargs \['fetch_k'\]"),
        ({"search_kwargs": {"score_threshold": 0.2}}, "needs search_type="),
        ({"search_type": "similarity_score_threshold"}, r"score_threshold'\], a number"),
        (
            {"search_type": "similarity_score_threshold", "search_kwargs": {"score_threshold": 2}},
            r"in \[0, 1\]",
        ),
    ],
)
def test_anything_else_raises_a_clear_error(base, options, message):
    with pytest.raises(ConfigError, match=message):
        HCGRetriever(core=base.core, **options)


def test_per_call_threshold_needs_the_threshold_search_type(base):
    with pytest.raises(ConfigError, match="needs search_type='similarity_score_threshold'"):
        base.invoke(QUERY, score_threshold=0.1)
    with pytest.raises(ConfigError, match="unknown retrieval option"):
        base.invoke(QUERY, fetch_k=3)
