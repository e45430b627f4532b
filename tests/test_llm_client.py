"""The OpenAI-compatible client over real HTTP against the stub server on 127.0.0.1: schema-valid
replies, faults (429 + Retry-After, 500/503, slow replies, malformed JSON, json_schema rejection),
re-asks, the cache, the sync bridge, and call counts that match the server's."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from hcg_core.errors import LLMError, LLMOutputError, LLMUnavailableError
from hcg_core.llm import Ledger, OpenAIStructuredLLM, stage
from hcg_core.llm.structured import extract_json
from hcg_core.testing import FaultPlan, ScriptedLLM, StubLLMServer

MSG = [{"role": "user", "content": "Is the lake eutrophic?"}]


class Answer(BaseModel):
    verdict: bool
    reason: str


def answer(req):
    return {"verdict": True, "reason": f"asked with schema {req.schema_name}"}


def make(srv, **kw):
    kw.setdefault("backoff_base", 0.001)
    kw.setdefault("timeout", 5)
    return OpenAIStructuredLLM("stub-model", base_url=srv.base_url, api_key="x", **kw)


def test_schema_valid_reply_and_counts_match_server():
    with StubLLMServer(answer) as srv:
        llm = make(srv)
        out = llm.complete(MSG, Answer)
        assert out == Answer(verdict=True, reason="asked with schema Answer")
        assert srv.calls == 1 and srv.by_schema["Answer"] == 1
        assert llm.ledger.total("calls") == 1
        assert llm.ledger.total("prompt_tokens") == srv.prompt_tokens > 0
        assert llm.ledger.total("completion_tokens") == srv.completion_tokens > 0


@pytest.mark.slow  # honours a real Retry-After delay
def test_retry_after_is_honoured_and_429_500_503_are_retried():
    plan = FaultPlan(
        script={1: "rate_limit", 3: "server_error", 5: "unavailable"}, retry_after="0.25"
    )
    with StubLLMServer(answer, faults=plan) as srv:
        llm = make(srv)
        t0 = time.perf_counter()
        with stage("probe"):
            llm.complete(MSG, Answer)  # 429 then ok
        waited = time.perf_counter() - t0
        assert waited >= 0.25, "Retry-After was not honoured"
        with stage("probe"):
            llm.complete(MSG, Answer)  # 500 then ok
            llm.complete(MSG, Answer)  # 503 then ok
        assert srv.calls == 6 and srv.ok == 3
        assert llm.ledger.get("probe", "calls") == 6
        assert llm.ledger.get("probe", "retries") == 3


@pytest.mark.slow  # waits for a real timeout
def test_slow_reply_times_out_and_is_retried():
    plan = FaultPlan(script={1: "slow"}, slow_seconds=1.0)
    with StubLLMServer(answer, faults=plan) as srv:
        llm = make(srv, timeout=0.3)
        assert llm.complete(MSG, Answer).verdict is True
        assert srv.calls == 2
        assert llm.ledger.total("calls") == 2 and llm.ledger.total("retries") == 1


def test_malformed_json_is_reasked_with_the_error():
    with StubLLMServer(answer, faults=FaultPlan(script={1: "malformed"})) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
        assert srv.calls == 2
        assert llm.ledger.total("reasks") == 1 and llm.ledger.total("retries") == 0


def test_invalid_reply_raises_after_bounded_reasks():
    seen = []

    def wrong(req):
        seen.append(req)
        return {"verdict": "maybe?"}

    with StubLLMServer(wrong) as srv:
        llm = make(srv, max_reasks=2)
        with pytest.raises(LLMOutputError, match="Answer"):
            llm.complete(MSG, Answer)
        assert srv.calls == 3 and llm.ledger.total("calls") == 3
    assert "could not be used" in seen[-1].messages[-1]["content"]
    assert "verdict" in seen[-1].messages[-1]["content"]  # the validation error went back


def test_json_schema_rejected_falls_back_to_json_object():
    with StubLLMServer(answer, faults=FaultPlan(reject_json_schema=True)) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
        assert llm.json_schema_supported is False
        llm.complete([{"role": "user", "content": "again"}], Answer)
        assert srv.calls == 3  # one rejected request, then json_object for good


def test_persistent_failure_raises_unavailable():
    plan = FaultPlan(server_error_every=1, allow_consecutive=True)
    with StubLLMServer(answer, faults=plan) as srv:
        llm = make(srv, max_retries=2)
        with pytest.raises(LLMUnavailableError, match="rerun"):
            llm.complete(MSG, Answer)
        assert srv.calls == 3 and llm.ledger.total("retries") == 2


def test_auth_error_is_not_retried():
    with StubLLMServer(answer, faults=FaultPlan(script={1: "unauthorized"})) as srv:
        llm = make(srv)
        with pytest.raises(LLMError, match="401"):
            llm.complete(MSG, Answer)
        assert srv.calls == 1


def test_cache_serves_repeat_requests_with_zero_calls(tmp_path):
    with StubLLMServer(answer) as srv:
        llm = make(srv, cache_dir=tmp_path / "cache")
        first = llm.complete(MSG, Answer)
        again = make(srv, cache_dir=tmp_path / "cache").complete(MSG, Answer)
        assert first == again
        assert srv.calls == 1
        assert len(list((tmp_path / "cache").glob("*/*.json"))) == 1
        make(srv, cache_dir=tmp_path / "cache").complete(
            [{"role": "user", "content": "new"}], Answer
        )
        assert srv.calls == 2  # a changed message is a new key


async def test_sync_bridge_works_inside_a_running_loop():
    with StubLLMServer(answer) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True  # sync call, loop running
        assert (await llm.acomplete(MSG, Answer)).verdict is True
        assert srv.calls == 2


def test_scripted_llm_counts_and_reasks():
    replies = iter(['{"verdict": true}', '```json\n{"verdict": false, "reason": "r"}\n```'])
    llm = ScriptedLLM(lambda req: next(replies), ledger=Ledger())
    assert llm.complete(MSG, Answer) == Answer(verdict=False, reason="r")
    assert llm.ledger.total("calls") == 2 and llm.ledger.total("reasks") == 1


def test_extract_json_from_prose_and_fences():
    assert extract_json('Sure! {"a": 1} hope that helps') == {"a": 1}
    assert extract_json('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="not JSON"):
        extract_json("no json here")


@pytest.mark.parametrize(
    ("base_url", "env_url"),
    [
        ("https://api.openai.com/v1", None),  # named outright
        (None, None),  # the SDK's default
        (None, "https://api.openai.com/v1"),  # from OPENAI_BASE_URL
    ],
)
def test_openai_without_a_key_fails_before_any_call(monkeypatch, base_url, env_url):
    """OpenAI's API with no key is a typed error naming the variable, raised when the client is
    made: no placeholder key reaches OpenAI to be refused at the first call."""
    from hcg_core.errors import ConfigError, MissingAPIKeyError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    if env_url:
        monkeypatch.setenv("OPENAI_BASE_URL", env_url)
    with pytest.raises(MissingAPIKeyError, match="set OPENAI_API_KEY") as info:
        OpenAIStructuredLLM("gpt-4o-mini", base_url=base_url)
    assert isinstance(info.value, ConfigError) and "api.openai.com" in str(info.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_local_server_needs_no_key(monkeypatch, host):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with StubLLMServer(answer) as srv:
        url = srv.base_url.replace("127.0.0.1", host)
        llm = OpenAIStructuredLLM("stub-model", base_url=url, timeout=5)
        assert llm.complete(MSG, Answer).verdict is True and srv.calls == 1
        # The local server named by OPENAI_BASE_URL alone: no key needed either.
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        llm = OpenAIStructuredLLM("stub-model", timeout=5)
        assert llm.complete(MSG, Answer).verdict is True and srv.calls == 2
