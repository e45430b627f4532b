"""hcg's results fuse like the docstore's own nodes (issue 27, item 1).

LlamaIndex's ``QueryFusionRetriever`` merges by ``node.hash`` (text and every metadata key), so
each mode's fused score must equal the votes computed by hand from each retriever's own results,
keyed by node: hcg with BM25Retriever (llama-index-retrievers-bm25) and VectorIndexRetriever over
the same nodes. LangChain's ``EnsembleRetriever`` (langchain-classic) merges by ``page_content``
or by a metadata ``id_key``; its order must equal the weighted reciprocal ranks computed by hand.
"""

from __future__ import annotations

import pickle
import statistics
from pathlib import Path

import pytest

pytest.importorskip("llama_index.retrievers.bm25", reason="pip install -e '.[test]'")

from llama_index.core import SimpleDirectoryReader, VectorStoreIndex  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.retrievers.bm25 import BM25Retriever  # noqa: E402

from hcg_core.embedders import HashingEmbedder  # noqa: E402
from llama_index_hcg import HCGDefaultEmbedding, HCGIndex  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
QUESTIONS = ["What causes a stroke?", "Why does obesity raise blood pressure?"]
K = 5
RRF_K = 60.0  # QueryFusionRetriever's reciprocal-rank constant
MODES = ["reciprocal_rerank", "relative_score", "dist_based_score", "simple"]


@pytest.fixture(scope="module")
def setup():
    embed = HCGDefaultEmbedding(embedder=HashingEmbedder())
    docs = SimpleDirectoryReader(str(CORPUS)).load_data()
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=16).get_nodes_from_documents(docs)
    index = HCGIndex(nodes=nodes, embed_model=embed)
    retrievers = [
        index.as_retriever(similarity_top_k=K),
        BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K),
        VectorStoreIndex(nodes, embed_model=embed).as_retriever(similarity_top_k=K),
    ]
    return index, retrievers


def by_hand(mode: str, lists: list[list[tuple[str, float]]], weights: list[float]):
    """The fused score of every node id, as each mode defines it (one query)."""
    fused: dict[str, float] = {}
    if mode == "reciprocal_rerank":
        for results in lists:
            ranked = sorted(results, key=lambda r: r[1], reverse=True)
            for rank, (node_id, _) in enumerate(ranked):
                fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (rank + RRF_K)
    elif mode == "simple":
        for results in lists:
            for node_id, score in results:
                fused[node_id] = max(fused.get(node_id, 0.0), score)
    else:
        for results, weight in zip(lists, weights, strict=True):
            scores = [s for _, s in results]
            if mode == "dist_based_score":
                mean, std = statistics.fmean(scores), statistics.pstdev(scores)
                low, high = mean - 3 * std, mean + 3 * std
            else:
                low, high = min(scores), max(scores)
            for node_id, s in results:
                scaled = (1.0 if high > 0 else 0.0) if high == low else (s - low) / (high - low)
                fused[node_id] = fused.get(node_id, 0.0) + scaled * weight
    return fused


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("question", QUESTIONS)
def test_query_fusion_counts_hcgs_vote(setup, mode, question):
    index, retrievers = setup
    own = [[(n.node.node_id, float(n.score)) for n in r.retrieve(question)] for r in retrievers]
    assert all(len(results) == K for results in own)
    # The three retrievers agree on some nodes, so fusion has votes to merge.
    assert set(dict(own[0])) & (set(dict(own[1])) | set(dict(own[2])))
    fusion = QueryFusionRetriever(
        retrievers,
        llm=MockLLM(),
        num_queries=1,
        mode=mode,
        use_async=False,
        similarity_top_k=K,
    )
    expected = by_hand(mode, own, fusion._retriever_weights)
    fused = fusion.retrieve(question)
    got = {n.node.node_id: n.score for n in fused}
    assert len(fused) == len(got) == K  # one item per node: nothing merged away by a hash
    for node_id, score in got.items():
        assert score == pytest.approx(expected[node_id], abs=1e-12), node_id
    best = sorted(expected.values(), reverse=True)[:K]
    assert sorted(got.values(), reverse=True) == pytest.approx(best, abs=1e-12)


def test_returned_nodes_hash_as_the_docstore_and_keep_provenance(setup):
    index, retrievers = setup
    for nws in retrievers[0].retrieve(QUESTIONS[0]):
        stored = index.docstore.get_node(nws.node.node_id)
        node = nws.node
        assert node.hash == stored.hash
        assert isinstance(node, type(stored)) and node.class_name() == stored.class_name()
        assert {"hcg_score", "hcg_paths", "hcg_route"} <= set(node.metadata)
        assert "hcg_score" not in stored.metadata  # the docstore's node is untouched
        # It survives what LlamaIndex and users do with nodes: copies and pickling.
        for twin in (node.model_copy(), pickle.loads(pickle.dumps(nws)).node):
            assert twin.hash == stored.hash and twin.metadata == node.metadata


def test_a_window_trimmed_under_a_word_budget_keeps_the_stored_hash():
    """An overlapping window comes back as the span it adds to the one before it; the span still
    fuses with the whole node another retriever returns."""
    from conftest import flat_corpus_index

    index, _ = flat_corpus_index(HCGDefaultEmbedding(embedder=HashingEmbedder()))
    got = index.as_retriever(similarity_top_k=5).retrieve("What does obesity do?")  # every node
    spans = [n for n in got if "hcg_span" in n.node.metadata]
    assert spans
    for nws in spans:
        stored = index.docstore.get_node(nws.node.node_id)
        assert nws.node.text != stored.text and nws.node.hash == stored.hash


# ---------------------------------------------------------------- LangChain


def test_langchain_ensemble_merges_hcg_with_a_vector_store_by_id_key():
    pytest.importorskip("langchain_classic", reason="pip install -e '.[test]'")
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document as LCDocument
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_hcg import HCGDefaultEmbeddings, HCGRetriever

    emb = HCGDefaultEmbeddings(embedder=HashingEmbedder())
    splits = []
    for path in sorted(CORPUS.glob("*.md")):
        for i, para in enumerate(p for p in path.read_text(encoding="utf-8").split("\n\n") if p):
            split_id = f"{path.stem}-{i}"
            # The id in the metadata too: EnsembleRetriever's id_key reads metadata.
            splits.append(LCDocument(para, id=split_id, metadata={"split": split_id}))
    hcg = HCGRetriever.from_documents(splits, chunk=False, embeddings=emb, k=K)
    vector = InMemoryVectorStore.from_documents(splits, emb).as_retriever(search_kwargs={"k": K})
    for id_key, key in (("split", lambda d: d.metadata["split"]), (None, lambda d: d.page_content)):
        ensemble = EnsembleRetriever(retrievers=[hcg, vector], weights=[0.5, 0.5], id_key=id_key)
        for question in QUESTIONS:
            own = [r.invoke(question) for r in (hcg, vector)]
            assert {key(d) for d in own[0]} & {key(d) for d in own[1]}
            votes: dict[str, float] = {}
            for docs, weight in zip(own, ensemble.weights, strict=True):
                for rank, d in enumerate(docs, start=1):
                    votes[key(d)] = votes.get(key(d), 0.0) + weight / (rank + ensemble.c)
            fused = ensemble.invoke(question)
            assert len(fused) == len(votes)  # one document per split
            assert [key(d) for d in fused] == sorted(votes, key=votes.__getitem__, reverse=True)
            # A document found by both carries hcg's provenance when hcg's copy came first.
            assert any("hcg_paths" in d.metadata for d in fused)
