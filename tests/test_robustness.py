"""Bad input on the core paths gives typed errors; persisted state never lies about itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hcg_core.config import HybridConfig, RetrievalConfig
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError, CorruptFileError, EmbedderError, InputError
from hcg_core.graph_build import build_graph
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import current_dir, load_graph
from hcg_core.types import Chunk


def test_duplicate_chunk_ids_are_refused_before_building():
    chunks = [Chunk("a", "Smoking causes cancer."), Chunk("a", "Salt raises blood pressure.")]
    with pytest.raises(InputError, match="'a'"):
        build_graph(chunks, embedder=HashingEmbedder())


def test_resaving_drops_a_stale_report_and_keeps_a_loaded_one(tmp_path, graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder)
    r.save(tmp_path / "g", report={"edges": 99})
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")  # a new graph, no report
    assert load_graph(tmp_path / "g").report is None
    r.save(tmp_path / "h", report={"edges": 6})
    CausalGraphRetriever.load(tmp_path / "h", embedder=embedder).save(tmp_path / "i")
    assert load_graph(tmp_path / "i").report == {"edges": 6}


@pytest.mark.parametrize("embeddings", [["x"], {"chunks": "x"}, {"chunks": {"file": "../x.npy"}}])
def test_malformed_or_escaping_embedding_entries(tmp_path, graph, embedder, embeddings):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")
    manifest = json.loads((current_dir(tmp_path / "g") / "manifest.json").read_text())
    manifest["embeddings"] = embeddings
    (current_dir(tmp_path / "g") / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "x.npy").write_bytes(b"")
    with pytest.raises(CorruptFileError) as err:
        load_graph(tmp_path / "g")
    assert err.value.path.name == "manifest.json"


def test_graph_json_evidence_must_be_a_list(tmp_path, graph, embedder):
    CausalGraphRetriever.from_graph(graph, embedder).save(tmp_path / "g")
    data = json.loads((current_dir(tmp_path / "g") / "graph.json").read_text())
    data["edges"][0]["evidence"] = "c0"
    (current_dir(tmp_path / "g") / "graph.json").write_text(json.dumps(data))
    with pytest.raises(CorruptFileError, match="evidence"):
        load_graph(tmp_path / "g")


def test_with_config_names_unknown_settings(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder)
    with pytest.raises(ConfigError, match="top_kk"):
        r.with_config(top_kk=3)


class _Broken:
    name = "broken"
    dim = 9

    def __init__(self, query):
        self.query = query

    def embed_documents(self, texts):
        from conftest import KeywordEmbedder

        return KeywordEmbedder().embed_documents(texts)

    def embed_query(self, text):
        return self.query(text)


@pytest.mark.parametrize(
    "query,match",
    [
        (lambda t: 1 / 0, "failed on the query"),
        (lambda t: np.full(9, np.nan), "non-finite"),
        (lambda t: np.ones(4), "dimension 4"),
    ],
)
def test_query_embedder_failures_are_typed(graph, query, match):
    r = CausalGraphRetriever.from_graph(graph, _Broken(query))
    with pytest.raises(EmbedderError, match=match):
        r.retrieve("smoking")


def test_clones_with_other_hybrid_settings_reuse_their_ranker(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder)
    a = r.with_config(hybrid=HybridConfig(diversity=0.7))
    a.retrieve("smoking")
    first = a.ranker
    a.retrieve("diet")
    assert a.ranker is first  # built once, not per query
    assert r.ranker is not first and r.ranker.bm25 is first.bm25  # one BM25 index for all
    # Settings that split the chunks otherwise rank other units: their own BM25 index.
    w = r.with_config(hybrid=HybridConfig(passage_words=100))
    w.retrieve("smoking")
    assert w.ranker.bm25 is not first.bm25


def test_hybrid_graph_paths_are_not_cut_by_the_word_budget(graph, embedder):
    r = CausalGraphRetriever.from_graph(graph, embedder, RetrievalConfig(word_budget=6))
    res = r.retrieve("smoking", k=4)
    # The budget cuts the results, not the provenance of those returned.
    assert res.diagnostics["graph_served_by"] == "cones"
    assert res.chunks[0].route == "graph" and res.chunks[0].paths
