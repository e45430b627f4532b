"""The LLM path against unlucky and hostile servers (issue 28): every server here is a stub on
127.0.0.1; no test contacts any other host.

A 200 that is not a chat completion, a server that trickles its reply, one that never answers,
a 401 that echoes the Authorization header, and a disk that fills under the reply cache: each
ends as a counted, typed failure with the documented exit code, no traceback and no secret.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fixtures.llm.responder import respond
from pydantic import BaseModel

from hcg_core import safe_files
from hcg_core.cli import main
from hcg_core.errors import LLMProtocolError, LLMUnavailableError
from hcg_core.llm.openai_compat import OpenAIStructuredLLM
from hcg_core.testing import StubLLMServer

CORPUS = Path(__file__).parent / "fixtures" / "llm" / "corpus.md"
KEY = "sk-test-0123456789abcdef-SECRET"


class Reply(BaseModel):
    x: int


class _QuietServer(ThreadingHTTPServer):
    """Prints no traceback when a client hangs up on a kept-alive connection: the SDK closing its
    socket after an error reply is expected here, and a traceback on stderr would read as hcg's in
    the tests that check the CLI prints none."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve(handle: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A one-purpose HTTP server on 127.0.0.1; yields its base URL (…/v1)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            # The client hanging up is what these tests want of it.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                handle(self)

    server = _QuietServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def trickle(handler: BaseHTTPRequestHandler) -> None:
    """Headers at once, then one byte every 2 s: each read is quick, the reply never ends."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", "100000")
    handler.end_headers()
    for _ in range(60):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(2)


def not_json(handler: BaseHTTPRequestHandler) -> None:
    _reply(handler, 200, b"<html>Welcome to nginx!</html>")


def echo_401(handler: BaseHTTPRequestHandler) -> None:
    auth = handler.headers.get("Authorization", "")
    body = {"error": {"message": f"Incorrect API key provided. You sent Authorization: {auth}"}}
    _reply(handler, 401, json.dumps(body).encode())


def _build_args(tmp_path: Path, base_url: str, *extra: str) -> list[str]:
    outcome = tmp_path / "outcome.yaml"
    outcome.write_text("outcomes: [FishMortality, DrinkingWaterRisk]\n")
    return [
        "build",
        str(CORPUS),
        "--out",
        str(tmp_path / "g"),
        "--tier",
        "XS",
        "--embedder",
        "hashing",
        "--outcome",
        str(outcome),
        "--quiet",
        "--llm-model",
        "stub-model",
        "--llm-base-url",
        base_url,
        *extra,
    ]


def test_timeout_bounds_a_trickling_reply(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve(trickle) as url:
        t0 = time.monotonic()
        code = main(_build_args(tmp_path, url, "--timeout", "3", "--max-retries", "0"))
        elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 3, err
    # 3 s, plus the build's own work (and importing the SDK, ~2 s on a loaded machine); before,
    # the request was never cut off (the probe killed it at 150 s).
    assert elapsed < 12, elapsed
    assert "too slow" in err and "Traceback" not in err
    assert (tmp_path / "g" / ".llm_cache" / "failed_build.json").is_file()


def test_a_200_that_is_not_json_is_a_counted_failure_of_its_item(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve(not_json) as url:
        code = main(_build_args(tmp_path, url, "--max-retries", "0"))
    err = capsys.readouterr().err
    assert code == 3, err
    assert "not an OpenAI chat completion" in err and "Traceback" not in err
    report = json.loads((tmp_path / "g" / ".llm_cache" / "failed_build.json").read_text())
    causes = json.dumps(report.get("failure_causes", report))
    assert "not an OpenAI chat completion" in causes
    # One call per item, no re-asks: a server that answers so answers every re-ask so.
    stage1 = report["stages"]["stage1"]
    assert stage1["calls"] == stage1["failed"] > 0 and stage1["reasks"] == 0


def test_protocol_error_from_the_library_client():
    with serve(not_json) as url:
        llm = OpenAIStructuredLLM("m", base_url=url, api_key="x", max_retries=0)
        with pytest.raises(LLMProtocolError):
            llm.complete([{"role": "user", "content": "hi"}], Reply)
    assert llm.ledger.total("calls") == 1 and llm.ledger.total("reasks") == 0


def test_a_401_echoing_the_key_is_masked_and_exits_3(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve(echo_401) as url:
        secret_url = url.replace("http://", "http://alice:hunter2pw@")
        code = main(_build_args(tmp_path, secret_url, "--max-retries", "0"))
    err = capsys.readouterr().err
    assert code == 3, err  # docs/llm.md: an LLM build that fails exits 3
    assert "401" in err and "Traceback" not in err
    failed = tmp_path / "g" / ".llm_cache" / "failed_build.json"
    for text in (err, failed.read_text() if failed.exists() else ""):
        assert KEY not in text and "hunter2pw" not in text and "0123456789abcdef" not in text
        # httpx sends the URL's credentials as Basic auth, which the provider echoed back.
        assert base64.b64encode(b"alice:hunter2pw").decode()[:12] not in text
    assert "***" in err


def test_a_server_that_never_answers_fails_fast_after_the_first_timeouts():
    """Once max_retries + 1 attempts in a row got no answer, the other requests fail at once
    instead of each waiting out its own timeouts (a dead endpoint held builds past 200 s)."""
    gate = threading.Event()

    def silent(handler: BaseHTTPRequestHandler) -> None:
        gate.wait(30)

    with serve(silent) as url:
        llm = OpenAIStructuredLLM(
            "m",
            base_url=url,
            api_key="x",
            timeout=1,
            max_retries=1,
            backoff_base=0.01,
            max_concurrency=2,
        )

        async def many() -> list[object]:
            msgs = [{"role": "user", "content": f"q{i}"} for i in range(20)]
            try:
                return await asyncio.gather(
                    *(llm.acomplete([m], Reply) for m in msgs), return_exceptions=True
                )
            finally:
                await llm.aclose()

        t0 = time.monotonic()
        results = asyncio.run(many())
        elapsed = time.monotonic() - t0
        gate.set()
    assert all(isinstance(r, LLMUnavailableError) for r in results), results
    # Without the breaker: 10 rounds of 2 requests x 2 attempts x 1 s = 20 s at least.
    assert elapsed < 6, elapsed


def test_a_closed_port_with_default_settings_gives_up_quickly():
    """The default client (5 retries, 60 s timeout) against nothing listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    llm = OpenAIStructuredLLM("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")

    async def many() -> list[object]:
        try:
            return await asyncio.gather(
                *(llm.acomplete([{"role": "user", "content": str(i)}], Reply) for i in range(30)),
                return_exceptions=True,
            )
        finally:
            await llm.aclose()

    t0 = time.monotonic()
    results = asyncio.run(many())
    assert all(isinstance(r, LLMUnavailableError) for r in results)
    # Before: every request waited out its own 5 backoffs (1 + 2 + ... + 16 s, with jitter),
    # 8 at a time: 28.5 s for these 30 requests on the old code.
    assert time.monotonic() - t0 < 5


def test_a_full_disk_under_the_reply_cache_fails_cleanly_and_keeps_what_was_paid(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cache = tmp_path / "cache"
    writes: list[Path] = []

    def hook(step: str, path: Path) -> None:
        if step == "write" and cache in path.parents and path.name != "failed_build.json":
            writes.append(path)
            if len(writes) > 2:  # two replies cached, then the disk is full
                raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(safe_files, "_fault_hook", hook)
    with StubLLMServer(respond) as srv:
        code = main(_build_args(tmp_path, srv.base_url, "--llm-cache", str(cache)))
    err = capsys.readouterr().err
    assert code == 3, err
    assert "reply cache" in err and "no space left on device" in err.lower()
    # main returned (no exception of hcg's escaped); the stub server's own threads may print
    # a disconnect to stderr, so err is not searched for "Traceback" here.
    assert not (tmp_path / "g").exists()
    kept = sorted(p for p in cache.glob("*/*.json"))
    assert kept == sorted(writes[:2])  # the two paid replies that were cached stay
    assert (cache / "failed_build.json").is_file()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "3"])
def test_temperature_out_of_range_is_refused(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exc:
        main(_build_args(tmp_path, "http://127.0.0.1:9/v1", "--temperature", value))
    assert exc.value.code == 2
    assert "--temperature" in capsys.readouterr().err


def test_remote_provider_needs_an_explicit_choice(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # even so: nothing to reach
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    args = _build_args(tmp_path, "x")
    args = args[: args.index("--llm-base-url")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "127.0.0.1:9" in err and "OPENAI_BASE_URL" in err and "--allow-remote" in err
    assert KEY not in err


def _completion(content: str = '{"x": 1}', **over: object) -> bytes:
    message = {"role": "assistant", "content": content}
    reply = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    return json.dumps({**reply, **over}).encode()


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "lots", "completion_tokens": "3"},
        {"prompt_tokens": -5, "completion_tokens": 10**30, "total_tokens": None},
        {"prompt_tokens": [1], "completion_tokens": {"n": 1}},
        None,
    ],
    ids=["string", "negative-and-huge", "containers", "null"],
)
def test_a_damaged_usage_block_is_counted_as_zero_not_a_crash(usage):
    """The SDK builds ``usage`` without validating it; a string there failed ``complete`` with a
    TypeError from the ledger's sum."""
    with serve(lambda h: _reply(h, 200, _completion(usage=usage))) as url:
        llm = OpenAIStructuredLLM("m", base_url=url, api_key="x", max_retries=0)
        assert llm.complete([{"role": "user", "content": "hi"}], Reply) == Reply(x=1)
    assert llm.ledger.total("calls") == 1
    for counter in ("prompt_tokens", "completion_tokens"):
        assert llm.ledger.total(counter) == 0


def test_an_empty_choices_list_says_so():
    with serve(lambda h: _reply(h, 200, _completion(choices=[]))) as url:
        llm = OpenAIStructuredLLM("m", base_url=url, api_key="x", max_retries=0)
        with pytest.raises(LLMProtocolError, match="'choices' list is empty"):
            llm.complete([{"role": "user", "content": "hi"}], Reply)


def test_giving_up_on_a_long_retry_after_says_how_long_the_server_asked():
    """A 429 with ``Retry-After: 3600`` waited the 60 s cap per retry, then gave up without
    saying that the server had asked for an hour."""

    def limited(handler: BaseHTTPRequestHandler) -> None:
        body = b'{"error": {"message": "quota"}}'
        handler.send_response(429)
        handler.send_header("retry-after", "3600")
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with serve(limited) as url:
        llm = OpenAIStructuredLLM("m", base_url=url, api_key="x", max_retries=1, backoff_max=0.05)
        with pytest.raises(LLMUnavailableError, match=r"server asks to wait 3,600 s"):
            llm.complete([{"role": "user", "content": "hi"}], Reply)
