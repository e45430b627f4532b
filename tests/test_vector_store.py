"""Dense candidates from a real vector store (Qdrant local mode) equal the in-process numpy path.

Both adapters are built twice on the same chunks with the same embedder: once with the default
numpy dense index, once with ``vector_store=`` a Qdrant collection (``qdrant-client`` local mode,
through ``llama-index-vector-stores-qdrant`` and ``langchain-qdrant``). Results must be the same
ids in the same order with scores within 1e-5, with a candidate count smaller than the corpus
(so the store's top-n cut matters), with filters, and with k above the candidate count (the
exact cosines of the other candidates come from the store too). Spies prove the store was asked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("qdrant_client")
pytest.importorskip("llama_index.vector_stores.qdrant")
pytest.importorskip("langchain_qdrant")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_qdrant import QdrantVectorStore as LCQdrant  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    MetadataFilter,
    MetadataFilters,
)
from llama_index.vector_stores.qdrant import QdrantVectorStore as LIQdrant  # noqa: E402
from qdrant_client import QdrantClient, models  # noqa: E402

from hcg_core.config import HybridConfig, RetrievalConfig  # noqa: E402
from hcg_core.corpus import chunk_documents, load_inputs  # noqa: E402
from hcg_core.embedders import HashingEmbedder  # noqa: E402
from hcg_core.errors import ConfigError, StoreError  # noqa: E402
from hcg_core.retrieval.dense import (  # noqa: E402
    NumpyDenseIndex,
    search_allowed,
    store_point_id,
)
from langchain_hcg import HCGDefaultEmbeddings  # noqa: E402
from langchain_hcg import HCGRetriever as LCRetriever  # noqa: E402
from llama_index_hcg import HCGIndex  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"
QUERIES = (
    "What raises the risk of stroke?",
    "blood pressure and salt",
    "how does insulin resistance damage arteries",
    "plaque in the arteries",
    "sleep quality",  # few matches: exercises padding
)
# Fewer candidates than chunks, so which chunks the store returns decides the ranking.
CONFIG = RetrievalConfig(hybrid=HybridConfig(candidates=4))


@pytest.fixture(scope="module")
def chunks():
    docs, _ = load_inputs([EXAMPLES])
    out = chunk_documents(docs, chunk_words=60, overlap_words=10)
    assert len(out) > 3 * CONFIG.hybrid.candidates
    return out


def _nodes(chunks):
    return [
        TextNode(id_=c.id, text=c.text, metadata={**dict(c.metadata), "doc": c.doc_id})
        for c in chunks
    ]


def _same(a, b):
    assert [x[0] for x in a] == [x[0] for x in b]
    assert np.allclose([x[1] for x in a], [x[1] for x in b], atol=1e-5)


class Spy:
    """Counts calls of a method on a class (pydantic stores refuse instance attributes)."""

    def __init__(self, monkeypatch, cls, name):
        self.calls = 0
        original = getattr(cls, name)

        def wrapped(obj, *args, **kwargs):
            self.calls += 1
            return original(obj, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapped)


# ------------------------------------------------------------------ core seam


def test_search_allowed_grows_until_enough_allowed_rows():
    vectors = np.eye(6, dtype=np.float32)[[0, 0, 1, 1, 2, 2]] + 0.01
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ix = NumpyDenseIndex(vectors)
    q = vectors[0]
    asked = []

    def store_top(m):  # a store that knows nothing of the mask
        asked.append(m)
        return ix.search(q, m)

    allowed = np.array([False, False, False, False, True, True])
    rows, cos = search_allowed(store_top, 2, 6, allowed)
    want_rows, want_cos = ix.search(q, 2, allowed)
    assert rows.tolist() == want_rows.tolist() == [4, 5]
    assert np.allclose(cos, want_cos)
    assert asked == [3, 6]  # 3 held no allowed row; 12 capped at the 6 rows there are


def test_search_allowed_breaks_boundary_ties_by_row_like_numpy():
    cos = np.array([0.9, 0.5, 0.5, 0.5, 0.1])

    def reversed_ties(m):  # a store that orders equal scores by descending row
        order = np.lexsort((-np.arange(5), -cos))[:m]
        return order, cos[order]

    rows, _ = search_allowed(reversed_ties, 2, 5, None)
    assert rows.tolist() == [0, 1] == NumpyDenseIndex(np.eye(5)).search(cos, 2)[0].tolist()


def test_point_ids_are_stable_uuids():
    assert store_point_id("c1") == store_point_id("c1") != store_point_id("c2")
    assert len(store_point_id("anything")) == 36


# ------------------------------------------------------------------ LlamaIndex + Qdrant


def _li_results(index, q, k, filters=None):
    out = index.as_retriever(similarity_top_k=k, filters=filters).retrieve(q)
    return [(n.node.node_id, n.score) for n in out]


def test_llamaindex_qdrant_equals_numpy(chunks, monkeypatch):
    emb = HashingEmbedder()
    plain = HCGIndex(nodes=_nodes(chunks), embed_model=emb, config=CONFIG)
    client = QdrantClient(":memory:")
    store = LIQdrant(client=client, collection_name="hcg")
    stored = HCGIndex(nodes=_nodes(chunks), embed_model=emb, config=CONFIG, vector_store=store)
    assert client.count("hcg").count == len(chunks)
    spy = Spy(monkeypatch, LIQdrant, "query")
    keep = MetadataFilters(filters=[MetadataFilter(key="doc", value=chunks[0].doc_id)])
    for q in QUERIES:
        for k in (3, 10):  # 10 > candidates: the other candidates' cosines come from the store
            _same(_li_results(plain, q, k), _li_results(stored, q, k))
            _same(_li_results(plain, q, k, keep), _li_results(stored, q, k, keep))
    assert spy.calls >= 2 * len(QUERIES)  # every query searched the store


def test_llamaindex_qdrant_insert_delete_and_stale_store(chunks):
    emb = HashingEmbedder()
    first, rest = chunks[:-3], chunks[-3:]
    client = QdrantClient(":memory:")
    store = LIQdrant(client=client, collection_name="hcg")
    plain = HCGIndex(nodes=_nodes(first), embed_model=emb, config=CONFIG)
    stored = HCGIndex(nodes=_nodes(first), embed_model=emb, config=CONFIG, vector_store=store)
    for ix in (plain, stored):
        ix.insert_nodes(_nodes(rest))
        ix.delete_nodes([first[0].id])
    assert client.count("hcg").count == len(chunks) - 1
    for q in QUERIES:
        _same(_li_results(plain, q, 10), _li_results(stored, q, 10))
    # A point removed behind the index's back is reported, not silently ranked as cosine 0.
    client.delete("hcg", points_selector=models.PointIdsList(points=[store_point_id(rest[0].id)]))
    with pytest.raises(StoreError, match="lacks"):
        for q in QUERIES:
            stored.as_retriever(similarity_top_k=30).retrieve(q)


def test_llamaindex_persisted_qdrant_is_not_rewritten(chunks, tmp_path, monkeypatch):
    from llama_index.core import StorageContext, load_index_from_storage

    emb = HashingEmbedder()
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    index = HCGIndex(
        nodes=_nodes(chunks),
        embed_model=emb,
        config=CONFIG,
        vector_store=LIQdrant(client=client, collection_name="hcg"),
    )
    want = {q: _li_results(index, q, 5) for q in QUERIES}
    index.storage_context.persist(persist_dir=str(tmp_path / "storage"))
    client.close()  # local mode locks its folder: one client at a time

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    adds = Spy(monkeypatch, LIQdrant, "add")
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path / "storage")),
        embed_model=emb,
        config=CONFIG,
        vector_store=LIQdrant(client=client, collection_name="hcg"),
    )
    assert adds.calls == 0  # the store already held every vector
    for q in QUERIES:
        _same(want[q], _li_results(loaded, q, 5))
    client.close()


def test_llamaindex_refuses_a_non_store():
    with pytest.raises(ConfigError, match="BasePydanticVectorStore"):
        HCGIndex(nodes=[], embed_model=HashingEmbedder(), vector_store=object())


# ------------------------------------------------------------------ LangChain + Qdrant


def _lc_docs(chunks):
    return [
        Document(id=c.id, page_content=c.text, metadata={**dict(c.metadata), "doc": c.doc_id})
        for c in chunks
    ]


def _lc_results(retriever, q, k, filter=None):
    return [(d.id, d.metadata["hcg_score"]) for d in retriever.invoke(q, k=k, filter=filter)]


def _qdrant_lc(client, embeddings, name="hcg"):
    client.create_collection(
        name,
        vectors_config=models.VectorParams(size=embeddings.embedder.dim, distance="Cosine"),
    )
    return LCQdrant(client=client, collection_name=name, embedding=embeddings)


@pytest.mark.parametrize("kind", ["qdrant", "in-memory"])
def test_langchain_store_equals_numpy(chunks, kind, monkeypatch):
    embeddings = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    if kind == "qdrant":
        store, cls = _qdrant_lc(QdrantClient(":memory:"), embeddings), LCQdrant
    else:
        store, cls = InMemoryVectorStore(embeddings), InMemoryVectorStore
    docs = _lc_docs(chunks)
    plain = LCRetriever.from_documents(docs, embeddings=embeddings, chunk=False, config=CONFIG)
    stored = LCRetriever.from_documents(
        docs, embeddings=embeddings, chunk=False, config=CONFIG, vector_store=store
    )
    spy = Spy(monkeypatch, cls, "similarity_search_with_score_by_vector")
    keep = {"doc": chunks[0].doc_id}
    for q in QUERIES:
        for k in (3, 10):
            _same(_lc_results(plain, q, k), _lc_results(stored, q, k))
            _same(_lc_results(plain, q, k, keep), _lc_results(stored, q, k, keep))
    assert spy.calls >= 2 * len(QUERIES)


def test_langchain_from_persist_dir_reuses_the_store(chunks, tmp_path, monkeypatch):
    embeddings = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    store = _qdrant_lc(QdrantClient(":memory:"), embeddings)
    built = LCRetriever.from_documents(
        _lc_docs(chunks), embeddings=embeddings, chunk=False, config=CONFIG, vector_store=store
    )
    built.save(tmp_path / "graph")
    adds = Spy(monkeypatch, LCQdrant, "add_texts")
    loaded = LCRetriever.from_persist_dir(
        tmp_path / "graph", embeddings=embeddings, config=CONFIG, vector_store=store
    )
    assert adds.calls == 0
    for q in QUERIES:
        _same(_lc_results(built, q, 10), _lc_results(loaded, q, 10))


def test_langchain_refuses_a_store_with_other_vectors(chunks):
    class Other(HCGDefaultEmbeddings):
        def embed_documents(self, texts):
            return [list(reversed(v)) for v in super().embed_documents(texts)]

    mine = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    store = InMemoryVectorStore(Other(embedder=HashingEmbedder()))
    with pytest.raises(ConfigError, match="cosine"):
        LCRetriever.from_documents(
            _lc_docs(chunks), embeddings=mine, chunk=False, vector_store=store
        )


def test_langchain_other_store_takes_an_id_filter(chunks):
    from langchain_core.vectorstores import VectorStore

    class Delegating(VectorStore):
        """A store LangChain knows nothing special about (delegates to an in-memory one)."""

        def __init__(self, embeddings):
            self.inner = InMemoryVectorStore(embeddings)

        def add_texts(self, texts, metadatas=None, *, ids=None, **kwargs):
            return self.inner.add_texts(list(texts), metadatas=metadatas, ids=ids)

        def similarity_search(self, query, k=4, **kwargs):
            return self.inner.similarity_search(query, k=k, **kwargs)

        def similarity_search_with_score_by_vector(self, embedding, k=4, filter=None):
            return self.inner.similarity_search_with_score_by_vector(embedding, k, filter)

        @classmethod
        def from_texts(cls, texts, embedding, metadatas=None, **kwargs):
            raise NotImplementedError

    embeddings = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    docs = _lc_docs(chunks)
    with pytest.raises(ConfigError, match="pass id_filter"):
        LCRetriever.from_documents(
            docs, embeddings=embeddings, chunk=False, vector_store=Delegating(embeddings)
        )
    with pytest.raises(ConfigError, match="LangChain VectorStore"):
        LCRetriever.from_documents(docs, embeddings=embeddings, chunk=False, vector_store={})
    plain = LCRetriever.from_documents(docs, embeddings=embeddings, chunk=False, config=CONFIG)
    stored = LCRetriever.from_documents(
        docs,
        embeddings=embeddings,
        chunk=False,
        config=CONFIG,
        vector_store=Delegating(embeddings),
        id_filter=lambda ids: lambda doc, keep=frozenset(ids): doc.id in keep,
    )
    for q in QUERIES:
        _same(_lc_results(plain, q, 10), _lc_results(stored, q, 10))


def test_langchain_add_and_delete_go_to_the_store(chunks):
    embeddings = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    client = QdrantClient(":memory:")
    store = _qdrant_lc(client, embeddings)
    last = chunks[-1].doc_id  # the core refuses a document id already indexed: add a whole one
    first = _lc_docs([c for c in chunks if c.doc_id != last])
    rest = _lc_docs([c for c in chunks if c.doc_id == last])
    plain = LCRetriever.from_documents(first, embeddings=embeddings, chunk=False, config=CONFIG)
    stored = LCRetriever.from_documents(
        first, embeddings=embeddings, chunk=False, config=CONFIG, vector_store=store
    )
    for r in (plain, stored):
        r.add_documents(rest, chunk=False)
        assert r.delete([chunks[0].id])
    # The core's incremental edit wrote the new chunks' points and removed the deleted one.
    assert client.count("hcg").count == len(chunks) - 1
    gone = client.retrieve("hcg", [store_point_id(chunks[0].id)])
    assert gone == []
    for q in QUERIES:
        _same(_lc_results(plain, q, 10), _lc_results(stored, q, 10))
