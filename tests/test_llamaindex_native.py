"""llama_index_hcg used the LlamaIndex way: evaluators and fusion over docstore ids, metadata
filters, query bundles (embedding, custom_embedding_strs, HyDE), async retrieval that does not
block the loop, standalone constructors and persistence, and edits that say what they drop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms import MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from pydantic import PrivateAttr

from hcg_core.config import PaperConfig, RetrievalConfig
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError, StoreError
from llama_index_hcg import HCGDefaultEmbedding, HCGIndex, HCGRetriever

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
# Question -> the example document that answers it.
ON_TOPIC = {
    "What raises blood pressure?": "01-blood-pressure",
    "How do plaques build up inside the arteries?": "02-atherosclerosis",
    "What causes a stroke?": "03-stroke",
    "How does obesity lead to insulin resistance?": "04-diabetes",
}


def corpus_documents() -> list[Document]:
    return [
        Document(text=p.read_text(encoding="utf-8"), id_=p.stem, metadata={"topic": p.stem[3:]})
        for p in sorted(CORPUS.glob("*.md"))
    ]


def ids(nodes: list) -> list[str]:
    return [n.node.node_id for n in nodes]


@pytest.fixture(scope="module")
def embed() -> HCGDefaultEmbedding:
    return HCGDefaultEmbedding(embedder=HashingEmbedder(1024))


@pytest.fixture(scope="module")
def index(embed: HCGDefaultEmbedding) -> HCGIndex:
    return HCGIndex.from_documents(
        corpus_documents(),
        embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=128, chunk_overlap=16)],
    )


# ------------------------------------------------------------------ evaluators and fusion


def test_retriever_evaluator_scores_docstore_ids(index: HCGIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=5)
    evaluator = RetrieverEvaluator.from_metric_names(["hit_rate", "mrr"], retriever=retriever)
    hits, mrrs = [], []
    for question, doc in ON_TOPIC.items():
        expected = index.docstore.get_ref_doc_info(doc).node_ids  # ids from the docstore
        vals = evaluator.evaluate(query=question, expected_ids=expected).metric_vals_dict
        hits.append(vals["hit_rate"])
        mrrs.append(vals["mrr"])
    # Every question finds a node of its document, on average at rank 1 or 2.
    assert hits == [1.0] * len(ON_TOPIC)
    assert np.mean(mrrs) >= 0.75, mrrs


def test_query_fusion_with_a_vector_retriever_returns_no_node_twice(
    index: HCGIndex, embed: HCGDefaultEmbedding
) -> None:
    nodes = list(index.docstore.docs.values())
    vector = VectorStoreIndex(nodes, embed_model=embed).as_retriever(similarity_top_k=5)
    hcg = index.as_retriever(similarity_top_k=5)
    fusion = QueryFusionRetriever(
        [hcg, vector],
        llm=MockLLM(),
        mode="reciprocal_rerank",
        num_queries=1,
        similarity_top_k=10,
        use_async=False,
    )
    for question in ON_TOPIC:
        a, b = set(ids(hcg.retrieve(question))), set(ids(vector.retrieve(question)))
        assert a & b, "both retrievers should agree on some node, or fusion proves nothing"
        got = ids(fusion.retrieve(question))
        assert len(got) == len(set(got)) == len(a | b)


def test_results_are_the_users_nodes_each_once(index: HCGIndex) -> None:
    for question in ON_TOPIC:
        got = ids(index.as_retriever(similarity_top_k=8).retrieve(question))
        assert len(got) == len(set(got)) == 8
        assert all(index.docstore.document_exists(i) for i in got)


# ------------------------------------------------------------------ filters


def _topics(nodes: list) -> set[str]:
    return {n.node.metadata["topic"] for n in nodes}


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        (MetadataFilters(filters=[MetadataFilter(key="topic", value="stroke")]), {"stroke"}),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="press", operator=FilterOperator.CONTAINS)
                ]
            ),
            {"blood-pressure"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="stroke", operator=FilterOperator.NE),
                    MetadataFilter(key="topic", value="diabetes", operator=FilterOperator.NE),
                ]
            ),
            {"blood-pressure", "atherosclerosis"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(
                        key="topic", value=["diabetes", "stroke"], operator=FilterOperator.IN
                    )
                ]
            ),
            {"diabetes", "stroke"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="stroke"),
                    MetadataFilter(key="topic", value="diabetes"),
                ],
                condition=FilterCondition.OR,
            ),
            {"diabetes", "stroke"},
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="topic", value="c", operator=FilterOperator.GT),
                    MetadataFilter(key="topic", value=["stroke"], operator=FilterOperator.NIN),
                ]
            ),
            {"diabetes"},
        ),
    ],
)
def test_metadata_filters_apply_before_ranking(
    index: HCGIndex, filters: MetadataFilters, allowed: set[str]
) -> None:
    matching = [n for n in index.docstore.docs.values() if n.metadata.get("topic") in allowed]
    question = "What raises blood pressure?"  # answered by blood-pressure, mostly filtered out
    got = index.as_retriever(similarity_top_k=4, filters=filters).retrieve(question)
    assert _topics(got) <= allowed
    assert len(got) == min(4, len(matching)), "k matching nodes exist: k must come back"


def test_doc_ids_and_node_ids_restrict_the_candidates(index: HCGIndex) -> None:
    got = index.as_retriever(similarity_top_k=3, doc_ids=["04-diabetes"]).retrieve(
        "What causes a stroke?"
    )
    assert len(got) == 3 and {n.node.ref_doc_id for n in got} == {"04-diabetes"}
    one = index.docstore.get_ref_doc_info("03-stroke").node_ids[0]
    got = index.as_retriever(node_ids=[one]).retrieve("What causes a stroke?")
    assert ids(got) == [one]


def test_unsupported_filters_are_errors_not_ignored(index: HCGIndex) -> None:
    nested = MetadataFilters(
        filters=[MetadataFilters(filters=[MetadataFilter(key="topic", value="stroke")])]
    )
    with pytest.raises(ConfigError, match="nested"):
        index.as_retriever(filters=nested)
    text_on_number = MetadataFilters(
        filters=[
            MetadataFilter(key="page", value="x", operator=FilterOperator.TEXT_MATCH),
        ]
    )
    node = TextNode(text="Salt raises blood pressure.", id_="n-page", metadata={"page": 3})
    small = HCGIndex(nodes=[node], embed_model=HCGDefaultEmbedding(embedder=HashingEmbedder(64)))
    with pytest.raises(ConfigError, match="cannot be applied"):
        small.as_retriever(filters=text_on_number).retrieve("salt")


# ------------------------------------------------------------------ query bundles


def test_a_given_query_embedding_is_used_as_is(index: HCGIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=4)
    core = index.core_retriever
    vec = index.embedder.embed_query("How does obesity lead to insulin resistance?")
    plain = retriever.retrieve(QueryBundle(query_str="blood"))
    given = retriever.retrieve(QueryBundle(query_str="blood", embedding=vec.tolist()))
    # Same text (same BM25), another vector: the result is the core's for that very vector.
    want = core.retrieve_by_vector("blood", core.query_vector(vec), 4).chunks
    assert ids(given) == [rc.chunk.id for rc in want] != ids(plain)
    assert [n.score for n in given] == pytest.approx([rc.score for rc in want])


def test_custom_embedding_strs_are_embedded_and_averaged(index: HCGIndex) -> None:
    core = index.core_retriever
    strs = ["salt and blood pressure", "plaque in the arteries"]
    mean = np.mean([index.embedder.embed_query(s) for s in strs], axis=0)
    want = core.retrieve_by_vector("arteries", core.query_vector(mean), 5)
    got = index.as_retriever(similarity_top_k=5).retrieve(
        QueryBundle(query_str="arteries", custom_embedding_strs=strs)
    )
    assert ids(got) == [rc.chunk.id for rc in want.chunks]
    assert [n.score for n in got] == pytest.approx([rc.score for rc in want.chunks])


def test_hyde_changes_the_results(index: HCGIndex) -> None:
    hypothetical = (
        "Obesity causes insulin resistance: abdominal fat releases fatty acids, and type 2 "
        "diabetes follows when the pancreas cannot keep up with the demand for insulin."
    )
    hyde = HyDEQueryTransform(llm=_FixedLLM(text=hypothetical), include_original=True)
    question = "Why do some people need more of a hormone?"
    retriever = index.as_retriever(similarity_top_k=4)
    bundle = hyde.run(question)
    assert bundle.custom_embedding_strs[0] == hypothetical
    plain, with_hyde = retriever.retrieve(question), retriever.retrieve(bundle)
    assert ids(plain) != ids(with_hyde)
    assert with_hyde[0].node.ref_doc_id == "04-diabetes"


class _FixedLLM(CustomLLM):
    """Answers every prompt with one fixed text (MockLLM only echoes the prompt back)."""

    text: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text=self.text, delta=self.text)


# ------------------------------------------------------------------ async


class SlowAsyncEmbedding(BaseEmbedding):
    """Hashing vectors behind a 0.2 s wait: asyncio.sleep in the async API, time.sleep in sync."""

    _inner: Any = PrivateAttr()
    _delay: float = PrivateAttr(default=0.2)
    _waiting: int = PrivateAttr(default=0)
    peak_waiting: int = 0  # the most query embeddings awaited at once (async API)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_name="slow-hashing", **kwargs)
        self._inner = HashingEmbedder(1024)

    def _get_query_embedding(self, query: str) -> list[float]:
        time.sleep(self._delay)
        return self._inner.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        self._waiting += 1
        self.peak_waiting = max(self.peak_waiting, self._waiting)
        await asyncio.sleep(self._delay)
        self._waiting -= 1
        return self._inner.embed_query(query).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._inner.embed_documents([text])[0].tolist()


@pytest.mark.slow  # waits on a 0.2 s embedder to show the calls overlap
async def test_concurrent_aretrieve_calls_overlap() -> None:
    embed = SlowAsyncEmbedding()
    index = HCGIndex.from_documents(
        corpus_documents(),
        embed_model=embed,
        transformations=[SentenceSplitter(chunk_size=128, chunk_overlap=16)],
    )
    retriever = index.as_retriever(similarity_top_k=3)
    questions = list(ON_TOPIC) + ["What is hypertension?"]
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    tick_task = asyncio.create_task(ticker())
    results = await asyncio.gather(*(retriever.aretrieve(q) for q in questions))
    done.set()
    await tick_task
    # Every question's embedding is awaited at the same time (counted, not timed: a wall-clock
    # bound failed under a loaded machine); one after another, the peak would be 1.
    assert embed.peak_waiting == len(questions), embed.peak_waiting
    assert ticks >= 10, "the event loop must keep running while retrievals wait"
    for q, got in zip(questions, results, strict=True):
        assert ids(got) == ids(retriever.retrieve(q))


# ------------------------------------------------------------------ constructors, persistence


def test_from_defaults_with_nodes_docstore_or_index(
    index: HCGIndex, embed: HCGDefaultEmbedding
) -> None:
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=16).get_nodes_from_documents(
        corpus_documents()
    )
    q = "What causes a stroke?"
    by_nodes = HCGRetriever.from_defaults(nodes=nodes, embed_model=embed, similarity_top_k=3)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    by_docstore = HCGRetriever.from_defaults(
        docstore=docstore, embed_model=embed, similarity_top_k=3
    )
    assert ids(by_nodes.retrieve(q)) == ids(by_docstore.retrieve(q))
    assert len(by_nodes.retrieve(q)) == 3
    assert by_docstore._index.docstore is docstore  # the caller's docstore, not a copy
    by_index = HCGRetriever.from_defaults(index=index, similarity_top_k=2)
    assert len(by_index.retrieve(q)) == 2
    with pytest.raises(ConfigError, match="exactly one"):
        HCGRetriever.from_defaults(nodes=nodes, index=index)
    with pytest.raises(ConfigError, match="exactly one"):
        HCGRetriever.from_defaults()


def test_persist_and_from_persist_dir(
    index: HCGIndex, embed: HCGDefaultEmbedding, tmp_path: Path
) -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="stroke", operator="!=")])
    retriever = index.as_retriever(similarity_top_k=4, filters=filters)
    retriever.persist(tmp_path / "store")
    loaded = HCGRetriever.from_persist_dir(tmp_path / "store")  # hashing embedder rebuilt
    assert loaded.similarity_top_k == 4
    for q in ON_TOPIC:
        a, b = retriever.retrieve(q), loaded.retrieve(q)
        assert ids(a) == ids(b) and "stroke" not in _topics(b)
        assert [n.score for n in a] == pytest.approx([n.score for n in b])
    assert (
        HCGRetriever.from_persist_dir(tmp_path / "store", similarity_top_k=2).similarity_top_k == 2
    )
    with pytest.raises(StoreError, match="hcg_retriever.json"):
        HCGRetriever.from_persist_dir(tmp_path)


def test_persisted_config_round_trips_with_its_nested_settings(
    index: HCGIndex, tmp_path: Path
) -> None:
    # The nested HybridConfig and PaperConfig come back as dataclasses, not as dicts: paper mode
    # reads config.paper on every query.
    config = RetrievalConfig(mode="paper", paper=PaperConfig(vector_fill=False))
    retriever = index.as_retriever(similarity_top_k=3, config=config)
    retriever.persist(tmp_path / "store")
    loaded = HCGRetriever.from_persist_dir(tmp_path / "store")
    assert loaded._config == config
    for q in ON_TOPIC:
        assert ids(loaded.retrieve(q)) == ids(retriever.retrieve(q))


# ------------------------------------------------------------------ scores


# The cut-off docs/adapters.md gives for SimilarityPostprocessor (benchmarks/score_threshold.py).
DOCUMENTED_CUTOFF = 0.2
OFF_TOPIC = (
    "What is the capital of France?",
    "Who won the football world cup in 2018?",
    "How do I bake sourdough bread?",
)


@pytest.mark.slow  # the MiniLM default model
def test_sorted_unit_scores_and_the_documented_cutoff_on_the_defaults() -> None:
    """All defaults (LlamaIndex's splitter, the bundled MiniLM): scores sorted, in [0, 1], and
    SimilarityPostprocessor at the documented cut-off drops every off-topic node only."""
    from llama_index.core.postprocessor import SimilarityPostprocessor

    index = HCGIndex.from_documents(corpus_documents())
    retriever = index.as_retriever()
    cutoff = SimilarityPostprocessor(similarity_cutoff=DOCUMENTED_CUTOFF)
    for question in [*ON_TOPIC, *OFF_TOPIC]:
        got = retriever.retrieve(question)
        scores = [n.score for n in got]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert all(n.score == n.node.metadata["hcg_score"] for n in got)
        assert {"hcg_score_bm25", "hcg_score_dense", "hcg_score_graph"} <= set(got[0].node.metadata)
        kept = cutoff.postprocess_nodes(got)
        if question in ON_TOPIC:
            assert kept and kept[0].node.ref_doc_id == ON_TOPIC[question], question
        else:
            assert kept == [], (question, scores[:1])


def test_a_node_across_a_paragraph_break_comes_back_as_the_part_asked_for(index: HCGIndex) -> None:
    """SentenceSplitter runs on across blank lines; such a node is ranked as its paragraphs'
    parts and comes back as the docstore node, holding the parts the question picked: its id, its
    relationships, its text and character offsets those of the part (hybrid.blank_line_parts)."""
    docs = {d.doc_id: d.text for d in corpus_documents()}
    parted = 0
    for question in ON_TOPIC:
        for hit in index.as_retriever(similarity_top_k=8).retrieve(question):
            stored = index.docstore.get_node(hit.node.node_id)
            text = hit.node.get_content()
            assert text in stored.get_content()
            assert docs[stored.ref_doc_id][hit.node.start_char_idx : hit.node.end_char_idx] == text
            assert hit.node.ref_doc_id == stored.ref_doc_id
            parted += text != stored.get_content()
    assert parted, "some 128-token node straddles a paragraph break and comes back in part"
