"""Provider quirks over real HTTP against the 127.0.0.1 stub: each 400 handled by its cause, the
response mode per request kind, optional temperature, max_tokens, replies cut at the limit,
refusals, think blocks, item-by-item validation, batch splitting, and the cache key."""

from __future__ import annotations

import asyncio
import re
from typing import Literal

import pytest
from pydantic import BaseModel

from hcg_core.errors import LLMContextLengthError, LLMRefusalError, LLMRejectedError
from hcg_core.llm import Ledger, OpenAIStructuredLLM
from hcg_core.llm.runner import Failures, ResilientLLM, ask_item, ask_split
from hcg_core.llm.structured import SCHEMA_HINT, compact_schema
from hcg_core.testing import FaultPlan, StubLLMServer

MSG = [{"role": "user", "content": "Judge the items."}]


class Answer(BaseModel):
    verdict: bool
    reason: str


class Other(BaseModel):
    ok: bool


def Judged(names: list[str]) -> type[BaseModel]:  # noqa: N802 - a model factory
    from pydantic import create_model

    item = create_model("Item", name=(Literal[tuple(names)], ...), keep=(bool, ...))
    return create_model("Judged", items=(list[item], ...))


def answer(req):
    if req.schema_name == "Other":
        return {"ok": True}
    if req.schema_name == "Judged":
        names = re.findall(r"^- (\w+)$", req.prompt, re.M)
        return {"items": [{"name": n, "keep": True} for n in names]}
    return {"verdict": True, "reason": "because"}


def make(srv, **kw):
    kw.setdefault("backoff_base", 0.001)
    kw.setdefault("timeout", 5)
    return OpenAIStructuredLLM("stub-model", base_url=srv.base_url, api_key="x", **kw)


def test_strict_schema_first_and_temperature_dropped_when_rejected():
    with StubLLMServer(answer, faults=FaultPlan(reject_temperature=True)) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
        assert llm.complete(MSG, Other).ok is True
    assert [r["format"] for r in srv.log] == ["json_schema-strict"] * 3
    assert [r["temperature"] for r in srv.log] == [0.0, None, None]  # dropped for good
    assert llm.ledger.total("calls") == 3 and not llm.send_temperature


def test_concurrent_requests_all_resend_once_the_temperature_is_rejected():
    """Six requests go out together with a temperature; each 400 is judged against what that
    request was sent with, so every one is resent without it and none fails."""
    ledger, failures = Ledger(), Failures()
    with StubLLMServer(answer, faults=FaultPlan(reject_temperature=True), delay=0.2) as srv:
        llm = make(srv, max_concurrency=6)

        async def all_at_once():
            try:
                return await asyncio.gather(
                    *(
                        ask_item(
                            llm,
                            [{"role": "user", "content": f"Judge item {i}."}],
                            Answer,
                            item=f"item {i}",
                            ledger=ledger,
                            failures=failures,
                        )
                        for i in range(6)
                    )
                )
            finally:
                await llm.aclose()

        got = asyncio.run(all_at_once())
    assert all(g is not None and g.verdict for g in got)
    assert ledger.total("failed") == 0 and len(failures) == 0
    with_temperature = [r for r in srv.log if r["temperature"] is not None]
    assert len(with_temperature) >= 4  # in flight together, before any 400 came back
    assert len(srv.log) == 6 + len(with_temperature)
    assert all(r["temperature"] is None for r in srv.log[len(with_temperature) :])
    assert llm.ledger.total("resends") == len(with_temperature) and not llm.send_temperature


def test_the_users_max_tokens_wins_over_the_requests_budget():
    from hcg_core.llm.budget import completion_budget

    async def ask(llm):
        try:
            with completion_budget(300):
                return await llm.acomplete(MSG, Answer)
        finally:
            await llm.aclose()

    with StubLLMServer(answer, faults=FaultPlan(script={1: "length"})) as srv:
        budgeted = make(srv)
        asyncio.run(ask(budgeted))  # cut at 300: resent with 600, counted
        asyncio.run(ask(make(srv, max_tokens=100)))
        budgeted.complete(MSG, Answer)  # no budget set: the server's default
    assert [r["max_tokens"] for r in srv.log] == [300, 600, 100, None]
    assert budgeted.ledger.total("truncated") == 1 and budgeted.ledger.total("resends") == 1


def test_no_temperature_is_sent_when_none_and_max_tokens_is():
    with StubLLMServer(answer) as srv:
        make(srv, temperature=None, max_tokens=300).complete(MSG, Answer)
    assert srv.log[0]["temperature"] is None and srv.log[0]["max_tokens"] == 300


def test_response_format_400_steps_down_only_that_request_kind():
    plan = FaultPlan(reject_json_schema=True, reject_json_object=True)
    with StubLLMServer(answer, faults=plan) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
        first = [r["format"] for r in srv.log]
        assert first == ["json_schema-strict", "json_object", "text"]
        # The compact schema travels in the prompt once the request cannot carry it.
        assert (
            SCHEMA_HINT in srv.log[-1]["prompt"] and '"verdict": boolean' in srv.log[-1]["prompt"]
        )
        srv.reset_counts()
        llm.complete(MSG, Answer)
        assert [r["format"] for r in srv.log] == ["text"]  # remembered for this kind
    assert llm.modes == {"Answer": "text"}


def test_a_rejected_strict_schema_falls_back_to_the_plain_schema_not_further():
    with StubLLMServer(answer, faults=FaultPlan(reject_strict=True)) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
    assert [r["format"] for r in srv.log] == ["json_schema-strict", "json_schema"]
    assert llm.modes == {"Answer": "json_schema"} and llm.json_schema_supported


def test_other_400_fails_the_item_with_the_providers_message_and_keeps_the_mode():
    with StubLLMServer(answer, faults=FaultPlan(script={1: "bad_request"})) as srv:
        llm = make(srv)
        ledger, failures = Ledger(), Failures()
        got = asyncio.run(ask_item(llm, MSG, Answer, item="x", ledger=ledger, failures=failures))
        assert got is None and ledger.total("failed") == 1
        assert failures.records[0]["cause"] == "provider rejected the request (HTTP 400)"
        assert "content flagged as invalid" in failures.records[0]["error"]
        assert llm.complete(MSG, Answer).verdict is True  # the next item goes through
    assert [r["format"] for r in srv.log] == ["json_schema-strict"] * 2


def test_reply_cut_at_the_limit_raises_max_tokens_then_succeeds():
    with StubLLMServer(answer, faults=FaultPlan(script={1: "length"})) as srv:
        llm = make(srv, max_tokens=100)
        assert llm.complete(MSG, Answer).verdict is True
    assert [r["max_tokens"] for r in srv.log] == [100, 200]


def test_context_length_and_truncation_split_the_batch():
    names = [f"n{i:02d}" for i in range(16)]

    def ask_for(llm):
        async def ask(sub):
            msgs = [{"role": "user", "content": "Judge:\n" + "\n".join(f"- {n}" for n in sub)}]
            return await llm.acomplete(msgs, Judged(names))

        return ask

    # Prompts over 30 characters (more than 4 names) are refused as too long: 16 -> 8 -> 4.
    with StubLLMServer(answer, faults=FaultPlan(context_limit_chars=30)) as srv:
        llm = make(srv)
        ledger, failures = Ledger(), Failures()
        parts = asyncio.run(
            ask_split(names, ask_for(llm), item="batch", ledger=ledger, failures=failures)
        )
    assert [n for sub, _ in parts for n in sub] == names and all(r for _, r in parts)
    assert sorted(i.name for _, r in parts for i in r.items) == names
    assert ledger.total("splits") == 3 and ledger.total("failed") == 0
    with (
        StubLLMServer(answer, faults=FaultPlan(context_limit_chars=5)) as srv,
        pytest.raises(LLMContextLengthError),  # one request that is too long cannot split
    ):
        make(srv).complete(MSG, Answer)
    # Without a token limit to raise, a cut reply splits the batch instead.
    with StubLLMServer(answer, faults=FaultPlan(script={1: "length"})) as srv:
        llm = make(srv, max_concurrency=1)
        ledger = Ledger()
        parts = asyncio.run(
            ask_split(names, ask_for(llm), item="batch", ledger=ledger, failures=Failures())
        )
    assert ledger.total("splits") == 1 and len(parts) == 2 and all(r for _, r in parts)


def test_refusal_is_asked_again_once_then_dropped_and_counted():
    with StubLLMServer(answer, faults=FaultPlan(refusal_every=1, allow_consecutive=True)) as srv:
        llm = make(srv)
        with pytest.raises(LLMRefusalError, match="can't help"):
            llm.complete(MSG, Answer)
        assert srv.calls == 1  # the client does not re-ask: the pipeline's item does
        ledger, failures = Ledger(), Failures()
        got = asyncio.run(ask_item(llm, MSG, Answer, item="x", ledger=ledger, failures=failures))
        assert got is None and srv.calls == 3  # asked, re-asked once, then dropped
    assert ledger.total("refused") == 1 and ledger.total("reasks") == 1
    assert ledger.total("failed") == 0 and len(failures) == 0  # dropped, not a failure

    with StubLLMServer(answer, faults=FaultPlan(script={1: "refusal"})) as srv:
        ledger = Ledger()
        got = asyncio.run(
            ask_item(make(srv), MSG, Answer, item="x", ledger=ledger, failures=Failures())
        )
    assert got is not None and got.verdict is True and srv.calls == 2
    assert ledger.total("refused") == 0 and ledger.total("reasks") == 1


def test_think_block_with_braces_is_stripped():
    with StubLLMServer(answer, faults=FaultPlan(think_every=1, allow_consecutive=True)) as srv:
        llm = make(srv)
        assert llm.complete(MSG, Answer).verdict is True
        assert srv.calls == 1 and llm.ledger.total("reasks") == 0


def test_one_off_vocabulary_name_drops_one_item_not_the_reply():
    def typo(req):
        return {"items": [{"name": "a", "keep": True}, {"name": "z", "keep": True}]}

    with StubLLMServer(typo) as srv:
        llm = make(srv)
        out = llm.complete(MSG, Judged(["a", "b"]))
    assert [i.name for i in out.items] == ["a"]
    assert llm.ledger.total("dropped_items") == 1 and llm.ledger.total("reasks") == 0


def test_cache_key_holds_base_url_and_sampling(tmp_path):
    with StubLLMServer(answer) as one, StubLLMServer(answer) as two:
        make(one, cache_dir=tmp_path).complete(MSG, Answer)
        make(one, cache_dir=tmp_path).complete(MSG, Answer)
        assert one.calls == 1  # same server, same settings: cached
        make(two, cache_dir=tmp_path).complete(MSG, Answer)
        assert two.calls == 1  # same model name, another server: not reused
        make(one, cache_dir=tmp_path, temperature=0.7).complete(MSG, Answer)
        make(one, cache_dir=tmp_path, max_tokens=50).complete(MSG, Answer)
        assert one.calls == 3


def test_compact_schema_names_every_field_and_enum():
    text = compact_schema(Judged(["a", "b"]))
    assert text == '{"items": [{"name": "a"|"b", "keep": boolean}, ...]}'


class FlakyFramework:
    """A framework-like model: no ledger; fails with a 503-like error twice, then answers."""

    name = "framework:flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    async def acomplete(self, messages, response_model):
        self.calls += 1
        if self.calls <= self.failures:
            err = RuntimeError("service unavailable")
            err.status_code = 503
            raise err
        return response_model(verdict=True, reason="ok")


def test_framework_models_get_retries_cache_and_accounting(tmp_path):
    inner = FlakyFramework(failures=2)
    llm = ResilientLLM(inner, cache_dir=tmp_path, backoff_base=0.001)
    assert asyncio.run(llm.acomplete(MSG, Answer)).verdict is True
    assert llm.ledger.total("calls") == 3 and llm.ledger.total("retries") == 2
    again = ResilientLLM(inner, cache_dir=tmp_path)
    assert asyncio.run(again.acomplete(MSG, Answer)).verdict is True
    assert inner.calls == 3 and again.ledger.total("cache_hits") == 1  # resumed from the cache

    class Broken(FlakyFramework):
        async def acomplete(self, messages, response_model):
            raise ValueError("bad prompt")  # not transient: no retry

    b = ResilientLLM(Broken(0), backoff_base=0.001)
    with pytest.raises(ValueError):
        asyncio.run(b.acomplete(MSG, Answer))
    assert b.ledger.total("calls") == 1


def test_rejected_error_type_is_an_llm_error():
    assert issubclass(LLMContextLengthError, LLMRejectedError)


def _edges(result):
    return sorted(
        (e.source, e.target, e.mechanism, e.effect, e.evidence) for e in result.graph.edges
    )


def test_pipeline_splits_a_batch_too_long_for_the_context_and_builds_the_same_graph():
    from fixtures.llm.responder import OUTCOME, load_chunks, respond

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build import build_graph
    from hcg_core.testing import ScriptedLLM

    emb = HashingEmbedder()
    clean = build_graph(
        load_chunks(), embedder=emb, llm=ScriptedLLM(respond), tier="XS", outcome=OUTCOME
    )
    # Tier 2's longest request is about 9k characters; 6k refuses it as too long.
    with StubLLMServer(respond, faults=FaultPlan(context_limit_chars=6000)) as srv:
        llm = make(srv)
        r = build_graph(load_chunks(), embedder=emb, llm=llm, tier="XS", outcome=OUTCOME)
    assert r.report["stages"]["tier2"]["splits"] >= 1 and r.report["totals"]["failed"] == 0
    assert any(k.startswith("400: This model's maximum context") for k in srv.by_fault)
    assert _edges(r) == _edges(clean)


def test_tier1_targets_left_out_are_asked_again():
    from fixtures.llm.responder import OUTCOME, load_chunks, respond

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build import build_graph
    from hcg_core.testing import ScriptedLLM

    def forgetful(req):
        out = respond(req)
        targets = req.enum("causal", "target") if req.schema_name == "Tier1Reply" else []
        if len(targets) > 5:  # not the re-ask: judges every other target only
            judged = set(targets[::2])
            out["causal"] = [link for link in out["causal"] if link["target"] in judged]
            out["not_causal"] = [t for t in out["not_causal"] if t in judged]
        return out

    emb = HashingEmbedder()
    clean = build_graph(
        load_chunks(), embedder=emb, llm=ScriptedLLM(respond), tier="XS", outcome=OUTCOME
    )
    r = build_graph(
        load_chunks(), embedder=emb, llm=ScriptedLLM(forgetful), tier="XS", outcome=OUTCOME
    )
    assert r.report["dropped"]["tier1_targets_missing_reasked"] > 0
    assert "tier1_targets_never_judged" not in r.report["dropped"]
    assert r.report["stages"]["tier1"]["templates"] == clean.report["stages"]["tier1"]["templates"]
    assert _edges(r) == _edges(clean)


QUIRKS = {
    "refuses_once": FaultPlan(refusal_every=7),  # never twice in a row: the re-ask answers
    "truncates_once": FaultPlan(script={5: "length"}),
    "rejects_temperature": FaultPlan(reject_temperature=True),
    "fenced_json": FaultPlan(fence_every=2),
}


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_pipeline_builds_the_same_graph_through_a_quirky_provider(quirk):
    from fixtures.llm.responder import OUTCOME, load_chunks, respond

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build import build_graph
    from hcg_core.testing import ScriptedLLM

    emb = HashingEmbedder()
    clean = build_graph(
        load_chunks(), embedder=emb, llm=ScriptedLLM(respond), tier="XS", outcome=OUTCOME
    )
    with StubLLMServer(respond, faults=QUIRKS[quirk]) as srv:
        llm = make(srv, max_concurrency=1)  # one at a time: a re-ask is the next request
        r = build_graph(load_chunks(), embedder=emb, llm=llm, tier="XS", outcome=OUTCOME)
    totals = r.report["totals"]
    assert r.report["partial"] is False and totals["failed"] == 0 and totals["refused"] == 0
    assert srv.by_fault or quirk == "rejects_temperature"  # the quirk really happened
    if quirk == "refuses_once":
        assert totals["reasks"] >= 1
    if quirk == "truncates_once":
        assert totals["truncated"] == 1 and totals["resends"] >= 1
    if quirk == "rejects_temperature":
        assert [x["temperature"] for x in srv.log][-1] is None
    assert _edges(r) == _edges(clean)


def test_a_provider_that_refuses_everything_exits_3(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    from fixtures.llm.responder import respond

    from hcg_core.cli import EXIT_BUILD_INCOMPLETE, main

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    corpus = Path(__file__).parent / "fixtures" / "llm" / "corpus.md"
    out = tmp_path / "g"
    plan = FaultPlan(refusal_every=1, allow_consecutive=True)
    with StubLLMServer(respond, faults=plan) as srv:
        code = main(
            [
                "build",
                str(corpus),
                "--out",
                str(out),
                "--tier",
                "XS",
                "--embedder",
                "hashing",
                "--quiet",
                "--llm-model",
                "stub-model",
                "--llm-base-url",
                srv.base_url,
            ]
        )
    err = capsys.readouterr().err
    assert code == EXIT_BUILD_INCOMPLETE, err
    assert "refused twice" in err
    assert srv.calls >= 2 and srv.calls % 2 == 0  # every item asked twice
    assert not (out / "graph.json").exists()
