"""Stage 2 as it should be (issue 25), over real HTTP to the 127.0.0.1 stub where it matters:
Tier 2 candidates a text could link, batches that cut no compatible pair, the causes kept with
their outgoing edges, schemas that fit the prompts (rejections by number, entity enums,
maxItems, strict-compatible, the compact schema in the prompt when the request cannot carry it),
a token limit per request from the items asked, on-target Tier 1 evidence lines, and no earlier
reply shown as a fact."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest
from fixtures.llm.responder import DOMAIN, OUTCOME, load_chunks, respond

from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.evidence import EntityMentions, SentencePool
from hcg_core.graph_build.llm_tiers import (
    MAX_TEMPLATE_PAIRS,
    MIN_ASSOCIATION,
    TIER1_FIXED_TOKENS,
    TIER1_TOKENS_PER_TARGET,
    Stage2Context,
    Template,
    candidate_score,
    evidence_lines,
    spread_pairs,
    tie,
    tier2_batches,
    tier2_model,
)
from hcg_core.llm import Ledger, OpenAIStructuredLLM
from hcg_core.llm.runner import Failures
from hcg_core.llm.structured import SCHEMA_HINT
from hcg_core.testing import FaultPlan, StubLLMServer
from hcg_core.types import Chunk, Dimension, DomainSpec, Metric, Variable

EMB = HashingEmbedder()
LAKES = ("Lake Erie", "Lake Taihu")
CANDIDATE = re.compile(r"^\d+\. (.+?) -> (.+)$", re.M)


def http_llm(srv, **kw):
    kw.setdefault("max_concurrency", 4)
    return OpenAIStructuredLLM(
        "stub-model", base_url=srv.base_url, api_key="x", timeout=5, backoff_base=0.001, **kw
    )


def fixture_build(srv, **kw):
    return build_graph(
        load_chunks(), embedder=EMB, llm=http_llm(srv, **kw), tier="XS", outcome=OUTCOME
    )


def lake(variable: str) -> str | None:
    return next((x for x in LAKES if x in variable), None)


@pytest.fixture(scope="module")
def served():
    with StubLLMServer(respond) as srv:
        result = fixture_build(srv)
        yield result, list(srv.log)


# -- item 1: candidates a text could link -------------------------------------------------------


def test_cross_lake_pairs_never_reach_a_tier2_prompt(served):
    result, log = served
    pairs = [p for r in log if r["schema"] == "Tier2Reply" for p in CANDIDATE.findall(r["prompt"])]
    assert pairs
    for s, t in pairs:
        assert lake(s) is None or lake(t) is None or lake(s) == lake(t), (s, t)
    t2 = result.report["stages"]["tier2"]
    # The rule did drop pairs (the fixture's templates pair both lakes' variables), and the report
    # counts what was proposed, what was kept and sent, and what the replies added.
    assert t2["candidates_proposed"] > t2["candidates"] == len(pairs)
    assert 0 < t2["candidates_kept"] <= t2["candidates"]
    assert t2["new_edges"] >= 1 and t2["new_variables"] >= 1


def test_compatibility_rule():
    spec = DomainSpec(
        (
            Dimension(
                "disease",
                ("breast cancer", "metastatic breast cancer", "glioma"),
                "",
                (("metastatic breast cancer", "breast cancer"),),
            ),
            Dimension("treatment", ("surgery", "radiation")),
        ),
        (
            Metric("Risk", ("disease",)),
            Metric("Effect", ("treatment",)),
            Metric("Age"),
        ),
    )
    chunks = [
        Chunk("a", "Surgery for breast cancer."),
        Chunk("b", "Radiation alone."),
        Chunk("c", "Age matters in glioma; surgery and age."),
        Chunk("d", "Metastatic breast cancer has spread."),
    ]
    from hcg_core.graph_build.evidence import EntityMentions

    mentions = EntityMentions(chunks)

    def ok(s, t):
        return candidate_score(spec, mentions, s, t) > 0

    risk = {e: Variable("Risk", (e,)) for e in spec.dimensions[0].entities}
    # No entities: a chunk must name the metric's topic word ("age") with the other's entities.
    assert ok(Variable("Age"), risk["glioma"])
    assert not ok(Variable("Age"), Variable("Effect", ("radiation",)))
    assert not ok(risk["breast cancer"], risk["glioma"])  # two diseases
    assert ok(risk["metastatic breast cancer"], risk["breast cancer"])  # a stage of it
    assert ok(Variable("Effect", ("surgery",)), risk["breast cancer"])  # one chunk names both
    assert not ok(Variable("Effect", ("radiation",)), risk["breast cancer"])
    # The support is the number of chunks that could state the link.
    assert tie(spec, mentions, Variable("Effect", ("surgery",)), Variable("Age"))[0] == 1
    assert tie(spec, mentions, Variable("Effect", ("surgery",)), risk["breast cancer"])[0] == 1
    # Association: that support over the chunks naming the rarer side ("surgery": a and c;
    # "breast cancer": a and d), the order a template's pairs are sent in.
    assert tie(spec, mentions, Variable("Effect", ("surgery",)), risk["breast cancer"])[1] == 0.5
    assert tie(spec, mentions, risk["glioma"], Variable("Age"))[1] == 1.0  # always together
    assert tie(spec, mentions, risk["breast cancer"], risk["glioma"])[1] == 0.0


def test_a_pair_met_once_beside_common_entities_is_not_a_candidate():
    spec = DomainSpec(
        (Dimension("site", ("skin", "liver")), Dimension("cancer", ("melanoma", "adrenal cancer"))),
        (Metric("Damage", ("site",)), Metric("Presence", ("cancer",))),
    )
    chunks = [Chunk(str(i), "Sun damages the skin; melanoma starts in the skin.") for i in range(3)]
    chunks += [Chunk(str(i), f"Skin care note {i}.") for i in range(3, 8)]
    chunks += [Chunk("8", "Adrenal cancer may cause stretch marks on the skin.")]
    chunks += [Chunk(str(i), "Adrenal cancer starts in the adrenal glands.") for i in range(9, 13)]
    mentions = EntityMentions(chunks)
    skin = Variable("Damage", ("skin",))
    melanoma, adrenal = (
        Variable("Presence", ("melanoma",)),
        Variable("Presence", ("adrenal cancer",)),
    )
    # Both pairs are supported by a chunk, but adrenal cancer meets "skin" once in 5 chunks.
    assert tie(spec, mentions, skin, adrenal)[0] == 1
    assert tie(spec, mentions, skin, adrenal)[1] == 0.2 < MIN_ASSOCIATION
    assert candidate_score(spec, mentions, skin, adrenal) == 0.0
    # melanoma: always with skin (association 1), in 3 chunks (support): the score is both.
    assert candidate_score(spec, mentions, skin, melanoma) == 3 + 1.0


def test_templates_are_never_split_and_send_their_best_supported_pairs():
    # 60 sources and 60 targets bind 60 regions; only a source and a target of one region pair
    # (the later regions more: the score), so the template sends its 24 best. "Other(x)" pairs
    # with every target alike: it is sent once, not crossed with every region.
    sources = [Variable("Load", (f"region {i:02d}",)) for i in range(60)]
    targets = [Variable("Harm", (f"region {i:02d}",)) for i in range(60)]
    variables = [*sources, *targets, Variable("Other", ("x",))]
    templates = [Template("Load", "Harm"), Template("Other", "Harm"), Template("Load", "Other")]

    def keep(s, t):  # the last template's pairs have no support
        if s.metric == "Load" and t.metric == "Harm":
            return 1 + int(s.entities[0].split()[-1]) if s.entities == t.entities else 0
        return 1 if t.metric == "Harm" else 0

    batches, counts = tier2_batches(templates, variables, 50, keep)
    assert counts == {
        "candidates_proposed": 60 * 60 + 60 + 60,
        "candidates": MAX_TEMPLATE_PAIRS + 1,
        "candidates_over_template_cap": 60 - MAX_TEMPLATE_PAIRS + 60 - 1,
        "templates_without_candidates": 1,
    }
    sent = Counter(p for b in batches for p in b.pairs)
    assert set(sent.values()) == {1}  # each candidate once
    best = {f"Load(region {i:02d})" for i in range(60 - MAX_TEMPLATE_PAIRS, 60)}
    assert {s for s, t in sent} == best | {"Other(x)"}
    assert [t for s, t in sent if s == "Other(x)"] == ["Harm(region 00)"]  # the first of equals
    # Every template goes to one call whole, so its metrics and excerpts are sent once.
    assert Counter(t for b in batches for t in b.templates) == Counter(templates)
    assert all(len(b.pairs) <= 50 for b in batches)
    # A tighter cap: the template's pairs still travel together, never over two calls.
    batches, counts = tier2_batches(templates, variables, 20, keep)
    assert Counter(t for b in batches for t in b.templates) == Counter(templates)
    assert [len(b.pairs) for b in batches] == [20, 1]  # 20 best; then 1 and an open template
    assert Template("Load", "Other") in batches[1].templates  # open: 10 slots, to be populated


def test_a_variable_takes_part_in_one_pair_of_a_template():
    # One source bound to nothing, crossed with every target entity the corpus names beside it:
    # only its best supported pair is asked; two sources share the targets out.
    ranked = [("A", "x"), ("A", "y"), ("A", "z"), ("B", "x"), ("B", "y")]
    assert spread_pairs(ranked, 24) == [("A", "x"), ("B", "y")]
    assert spread_pairs(ranked, 1) == [("A", "x")]
    assert spread_pairs([], 24) == []


# -- item 3: drivers survive --------------------------------------------------------------------

DRIVERS = [f"Driver{k}" for k in range(5)]
OUTCOMES = [f"Outcome{i}" for i in range(40)]


def drivers_corpus() -> list[Chunk]:
    return [
        Chunk(f"d{k}", f"{d} raises {OUTCOMES[k]} in the north group. " * 3, "drivers")
        for k, d in enumerate(DRIVERS)
    ] + [
        Chunk(f"o{i}", f"{o} is an endpoint of the north group.", "ends")
        for i, o in enumerate(OUTCOMES[:8])
    ]


def drivers_responder(req):
    """Every batch proposes the 40 endpoints, tagged outcome (as the recorded run's batches
    did); a batch proposes a driver only when its excerpts name it; Tier 1 links Driver k to
    Outcome k except for the last driver; Tier 2 keeps every candidate."""
    name, prompt = req.schema_name, req.prompt
    if name == "DimensionsReply":
        return {"dimensions": [{"name": "group", "entities": ["north"]}], "domain": "a test"}
    if name == "MetricsReply":
        named = [d for d in DRIVERS if d in prompt]
        return {
            "metrics": [
                {"name": o, "role": "outcome", "description": "an endpoint"} for o in OUTCOMES
            ]
            + [{"name": d, "role": "intermediate", "description": "a cause"} for d in named]
        }
    if name == "VariablesReply":
        return {"variables": []}
    if name == "RelationsReply":
        return {"relations": []}
    if name == "ReviewDimensionsReply":
        return {"domain": "a test", "same_dimensions": [], "same_entities": []}
    if name == "ReviewMetricsReply":
        return {"same_quantity": [], "causes": []}
    if name == "CheckMetricsReply":
        return {"same_quantity": []}
    if name == "Tier1Reply":
        src = req.enum("source")[0]
        targets = req.enum("causal", "target")
        k = DRIVERS.index(src) if src in DRIVERS[:-1] else None
        causal = [t for t in targets if k is not None and t == OUTCOMES[k]]
        return {
            "source": src,
            "causal": [{"target": t, "rationale": "stated"} for t in causal],
            "not_causal": [t for t in targets if t not in causal],
        }
    if name == "Tier2Reply":
        n = len(CANDIDATE.findall(prompt))
        kept = [
            {"candidate": i, "mechanism": "raises it", "confidence": 0.9} for i in range(1, n + 1)
        ]
        return {"kept": kept, "rejected": [], "new_edges": []} if n else {"new_edges": []}
    raise ValueError(name)


def test_every_driver_is_kept_and_has_its_outgoing_edge_over_http():
    with StubLLMServer(drivers_responder) as srv:
        r = build_graph(drivers_corpus(), embedder=EMB, llm=http_llm(srv), tier="XS")
    metrics = {m.name: m for m in r.graph.spec.metrics}
    assert set(DRIVERS) <= set(metrics) and len(metrics) == 40  # the cap, drivers included
    assert all(metrics[d].role == "intermediate" for d in DRIVERS)
    sources = {e.source for e in r.graph.edges}
    assert set(DRIVERS[:-1]) <= sources  # each cause the responder links has its edge
    assert DRIVERS[-1] not in sources
    assert r.report["stages"]["stage1"]["dropped"]["metric_endpoint_over_share"] > 0
    assert r.graph.spec.domain == "a test" and "domain" in r.graph.spec.inferred


# -- item 7: schemas that fit the prompts, token limits -----------------------------------------


def defs(schema: dict) -> dict:
    return schema.get("$defs", {})


def test_schemas_fit_the_prompts_over_http(served):
    result, log = served
    assert {r["format"] for r in log} == {"json_schema-strict"}
    tier2 = [r for r in log if r["schema"] == "Tier2Reply"]
    for r in tier2:
        schema, n = r["json_schema"], len(CANDIDATE.findall(r["prompt"]))
        d = defs(schema)
        if n:
            # A rejection is its candidate number, nothing else (as the prompt says).
            numbers = list(range(1, n + 1))
            assert schema["properties"]["rejected"]["items"]["enum"] == numbers
            assert d["Tier2Kept"]["properties"]["candidate"]["enum"] == numbers
            assert schema["properties"]["kept"]["maxItems"] == n
            assert schema["properties"]["rejected"]["maxItems"] == n
            effect = d["Tier2Kept"]["properties"]["effect"]["enum"]
            assert effect == ["increases", "decreases", "not stated"]
            assert d["Tier2Kept"]["properties"]["mechanism"]["maxLength"] == 300
            assert "maxLength" not in d["Tier2Kept"]["properties"]["evidence"]  # quotes uncut
        assert schema["properties"]["new_edges"]["maxItems"] == 8
        # One field per dimension, offering only that dimension's entities.
        slots = d["EndpointEntities"]["properties"]
        assert slots
        for dim, node in slots.items():
            assert node["enum"][0] == ""  # a slot the metric does not have
            assert set(node["enum"][1:]) <= set(result.graph.spec.dimension(dim).entities)
        assert "new_entities" in d["NewSource"]["properties"]  # a new one is explicit
        for node in (schema, *d.values()):  # strict: every object closed, every field required
            assert node["additionalProperties"] is False
            assert set(node["required"]) == set(node["properties"])
    tier1 = [r for r in log if r["schema"] == "Tier1Reply"]
    for r in tier1:
        targets = defs(r["json_schema"])["Tier1Link"]["properties"]["target"]["enum"]
        assert r["json_schema"]["properties"]["not_causal"]["items"]["enum"] == targets
        assert r["json_schema"]["properties"]["causal"]["maxItems"] == len(targets)
        # The token limit follows the items asked.
        assert r["max_tokens"] == TIER1_FIXED_TOKENS + TIER1_TOKENS_PER_TARGET * len(targets)
    dims = [r for r in log if r["schema"] == "DimensionsReply"]
    assert dims[0]["json_schema"]["properties"]["dimensions"]["maxItems"] == 6
    assert all(r["max_tokens"] for r in log)


def test_the_users_max_tokens_wins_and_cut_replies_are_resent_and_counted():
    with StubLLMServer(respond, faults=FaultPlan(script={2: "length"})) as srv:
        r = fixture_build(srv, max_tokens=3000)
    sent = [x["max_tokens"] for x in srv.log]
    assert sent[:2] == [3000, 3000] and sent[2] == 6000  # request 2 was cut: resent, doubled
    assert set(sent[3:]) <= {3000, 6000}
    s1 = r.report["stages"]["stage1"]
    assert s1["truncated"] == 1 and s1["resends"] == 1 and r.report["totals"]["failed"] == 0
    assert r.report["totals"]["resends"] == 1


def test_the_compact_schema_travels_in_the_prompt_when_the_request_cannot_carry_it():
    model = tier2_model(["Load"], ["Harm"], 3, {"lake": ["Lake Erie", "Lake Taihu"]})

    def reply(req):
        return {"kept": [], "rejected": [2], "new_edges": []}

    msgs = [{"role": "user", "content": "Judge these.\n\nResponse schema name: Tier2Reply"}]
    with StubLLMServer(reply, faults=FaultPlan(reject_json_schema=True)) as srv:
        out = http_llm(srv).complete(msgs, model)
    assert [r["format"] for r in srv.log] == ["json_schema-strict", "json_object"]
    prompt = srv.log[-1]["prompt"]
    assert SCHEMA_HINT in prompt
    assert '"rejected": [1|2|3, ...] (at most 3)' in prompt
    assert '"entities": {"lake"?: ""|"Lake Erie"|"Lake Taihu"}' in prompt
    assert out.rejected == [2]


# -- items 5 and 6: evidence lines on target, no earlier reply shown as a fact ------------------


def test_tier1_evidence_lines_are_on_target_and_never_repeated():
    chunks = [
        Chunk("a", "Surgery may take 3 or more hours. Low estrogen causes loss of bone density."),
        Chunk("b", "Keep the names of your care team. The cancer may come back after treatment."),
        Chunk("c", "Estrogen loss after menopause weakens bone."),
    ]
    metrics = (
        Metric("Estrogen", (), "estrogen level"),
        Metric("BoneLoss", (), "loss of bone density"),
        Metric("BoneWeakness", (), "loss of bone density and strength"),
        Metric("Recurrence", (), "the cancer comes back after treatment"),
    )
    spec = DomainSpec((), metrics)
    vecs = EMB.embed_documents([f"{m.name}: {m.description}" for m in metrics])
    ctx = Stage2Context(
        spec,
        chunks,
        EMB.embed_documents([c.text for c in chunks]),
        {m.name: v for m, v in zip(metrics, vecs, strict=True)},
        llm=None,  # type: ignore[arg-type]
        ledger=Ledger(),
        failures=Failures(),
        dropped=Counter(),
        sentences=SentencePool(chunks, EMB),
    )
    taken: set[str] = set()
    lines = evidence_lines(ctx, metrics[0], metrics[1:], taken)
    assert lines["BoneLoss"] == "Low estrogen causes loss of bone density."  # not the opening
    assert lines["Recurrence"] == "The cancer may come back after treatment."
    assert lines["BoneWeakness"] and lines["BoneWeakness"] != lines["BoneLoss"]  # no repeat
    assert len(taken) == 3


def test_no_earlier_reply_reaches_a_later_prompt_as_a_fact(served):
    _, log = served
    rationales = [why for _, _, why in DOMAIN["templates"]]
    for r in log:
        if r["schema"] == "Tier2Reply":
            assert not any(why in r["prompt"] for why in rationales)
            assert re.search(r"^T1\. \w+ -> \w+$", r["prompt"], re.M)
    seeded = [
        r for r in log if r["schema"] == "Tier1Reply" and "- FertilizerRunoff ->" in r["prompt"]
    ]
    assert seeded and all("previous judgements, not evidence" in r["prompt"] for r in seeded)


def test_tier2_evidence_excerpts_hold_the_sentence_about_the_pair(served):
    _, log = served
    # Excerpts are cut around the sentence nearest to the batch's pairs, so the quotes the
    # fixture's careful model gives are there to be copied.
    shown = " ".join(r["prompt"] for r in log if r["schema"] == "Tier2Reply")
    assert "Fertilizer runoff increases the phosphorus load of Lake Erie" in shown


def test_a_provider_that_rejects_temperature_builds_the_same_graph_with_none_failed(served):
    clean, _ = served
    with StubLLMServer(respond, faults=FaultPlan(reject_temperature=True), delay=0.02) as srv:
        r = fixture_build(srv, max_concurrency=6)
    assert r.report["totals"]["failed"] == 0
    assert sorted(e.id for e in r.graph.edges) == sorted(e.id for e in clean.graph.edges)
    rejected = sum(1 for x in srv.log if x["temperature"] is not None)
    assert rejected >= 1 and r.report["totals"]["resends"] == rejected
    assert json.dumps(r.report)  # the report stays JSON
    assert np.isfinite(r.variable_embeddings).all()
