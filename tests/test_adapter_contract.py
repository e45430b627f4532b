"""One contract for both adapters: the same corpus through LlamaIndex and LangChain gives the same
units, scores, order and provenance; the same default k; options passed the same way; the same
embedder identity rule on reload."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import StorageContext, load_index_from_storage
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

import langchain_hcg
import llama_index_hcg
from hcg_core.contract import DEFAULT_K
from hcg_core.embedders import CallableEmbedder, HashingEmbedder

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
QUESTIONS = (
    "What raises blood pressure?",
    "What causes a stroke?",
    "How does obesity lead to insulin resistance?",
    "What is the capital of France?",
)


def units() -> list[tuple[str, str, str, dict]]:
    """(unit id, text, document id, metadata): the example corpus split at blank lines."""
    out = []
    for p in sorted(CORPUS.glob("*.md")):
        paras = [t.strip() for t in p.read_text(encoding="utf-8").split("\n\n") if t.strip()]
        for i, text in enumerate(paras):
            out.append((f"{p.stem}-{i}", text, p.stem, {"topic": p.stem[3:], "para": i}))
    return out


def test_both_adapters_return_the_same_results() -> None:
    embedder = HashingEmbedder(1024)
    nodes = [
        TextNode(
            id_=uid,
            text=text,
            metadata=meta,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)},
        )
        for uid, text, doc, meta in units()
    ]
    docs = [
        LCDocument(id=uid, page_content=text, metadata={**meta, "doc_id": doc})
        for uid, text, doc, meta in units()
    ]
    options = {"max_evidence": 3}
    li = llama_index_hcg.HCGIndex(
        nodes=nodes, embed_model=embedder, build_options=options
    ).as_retriever()
    lc = langchain_hcg.HCGRetriever.from_documents(
        docs, embeddings=embedder, chunk=False, build_options=options
    )
    assert llama_index_hcg.DEFAULT_SIMILARITY_TOP_K == langchain_hcg.DEFAULT_K == DEFAULT_K
    for q in QUESTIONS:
        a, b = li.retrieve(q), lc.invoke(q)
        assert len(a) == len(b) == DEFAULT_K  # the same default k, no k given
        assert [n.node.node_id for n in a] == [d.id for d in b]
        assert [n.node.get_content() for n in a] == [d.page_content for d in b]
        assert [n.score for n in a] == pytest.approx([d.metadata["hcg_score"] for d in b])
        prov_a = [{k: v for k, v in n.node.metadata.items() if k.startswith("hcg_")} for n in a]
        prov_b = [{k: v for k, v in d.metadata.items() if k.startswith("hcg_")} for d in b]
        # Scores agree to float32 rounding (vectors were embedded in other batches); the rest exactly.
        for pa, pb in zip(prov_a, prov_b, strict=True):
            assert pa.keys() == pb.keys()
            for key, value in pa.items():
                if isinstance(value, float):
                    assert value == pytest.approx(pb[key], abs=1e-6), key
                else:
                    assert value == pb[key], key
        assert set(prov_a[0]) >= {
            "hcg_score",
            "hcg_route",
            "hcg_served_by",
            "hcg_paths",
            "hcg_mechanisms",
            "hcg_edge_ids",
            "hcg_parent_id",
        }
        assert [n.node.ref_doc_id for n in a] == [d.metadata["doc_id"] for d in b]
        # Filters: the same subset either way.
        fa = li._index.as_retriever(filters=_topic_filter("stroke"), similarity_top_k=3).retrieve(q)
        fb = lc.invoke(q, k=3, filter={"topic": "stroke"})
        assert [n.node.node_id for n in fa] == [d.id for d in fb]


def _topic_filter(topic: str):
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    return MetadataFilters(filters=[MetadataFilter(key="topic", value=topic)])


def test_llamaindex_reload_with_same_name_other_dimension_recomputes_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    small, large = HashingEmbedder(64), HashingEmbedder(128)
    first = CallableEmbedder(small.embed_documents, name="served-model")
    second = CallableEmbedder(large.embed_documents, name="served-model")
    nodes = [TextNode(id_=uid, text=text, metadata=meta) for uid, text, _, meta in units()]
    index = llama_index_hcg.HCGIndex(nodes=nodes, embed_model=first)
    index.storage_context.persist(persist_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="llama_index_hcg.index"):
        loaded = load_index_from_storage(
            StorageContext.from_defaults(persist_dir=tmp_path), embed_model=second
        )
    assert "all vectors were recomputed" in caplog.text and "(dim 64)" in caplog.text
    assert loaded.core_retriever.chunk_embeddings.shape[1] == 128
    assert len(loaded.as_retriever(similarity_top_k=3).retrieve("What causes a stroke?")) == 3
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="llama_index_hcg.index"):
        load_index_from_storage(
            StorageContext.from_defaults(persist_dir=tmp_path), embed_model=first
        )
    assert "recomputed" not in caplog.text


def test_both_doors_pass_build_graph_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build's settings reach ``build_graph`` as one ``BuildSettings``'s keywords, alike from
    both doors (what the user passes as keywords or ``build_options``)."""
    from hcg_core import adapter_common
    from hcg_core.config import BuildSettings
    from hcg_core.types import OutcomeConfig

    seen: list[dict] = []

    def spy(real):
        def build(chunks, **kwargs):
            seen.append({k: v for k, v in kwargs.items() if k not in ("embedder", "llm")})
            return real(chunks, **kwargs)

        return build

    monkeypatch.setattr(adapter_common, "build_graph", spy(adapter_common.build_graph))
    embedder = HashingEmbedder(256)
    outcome = OutcomeConfig(outcomes=("Stroke",))
    given = {"tier": "S", "outcome": outcome, "build_options": {"max_evidence": 3}}
    nodes = [TextNode(id_=uid, text=text) for uid, text, _, _ in units()]
    docs = [LCDocument(id=uid, page_content=text) for uid, text, _, _ in units()]
    llama_index_hcg.HCGIndex(nodes=nodes, embed_model=embedder, show_progress=False, **given)
    langchain_hcg.HCGRetriever.from_documents(
        docs, embeddings=embedder, chunk=False, progress=False, **given
    )
    expected = BuildSettings("S", outcome, None, False, {"max_evidence": 3}).keywords()
    assert seen == [expected, expected]
    assert expected == {
        "tier": "S",
        "outcome": outcome,
        "spec": None,
        "progress": False,
        "max_evidence": 3,
    }
