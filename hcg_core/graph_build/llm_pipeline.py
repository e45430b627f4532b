"""The paper's LLM pipeline end to end: Stage 1 (unless a spec is given), Tier 1, Tier 2, evidence.

``build_with_llm`` is the sync entry the dispatcher calls; ``abuild_with_llm`` is the async core.
``estimate_build`` says, before anything is spent, how many calls the build can make (Remark 1).
The report records per stage: calls, prompt and completion tokens, retries, re-asks, cache hits,
failed items and seconds, taken from the same ledger the LLM client counts requests in.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..blocks import vectors_of_chunks
from ..config import (
    DEFAULT_CHUNKS_PER_CALL,
    DEFAULT_EXCERPT_CHARS,
    DEFAULT_MAX_BATCH_PAIRS,
    DEFAULT_SNIPPET_CHARS,
    DEFAULT_SNIPPETS,
    DEFAULT_SPEC_SAMPLE_CHUNKS,
    DEFAULT_TIER,
    LLMBuildConfig,
    tier_caps,
)
from ..embedding import as_matrix
from ..errors import BuildError, ConfigError, IncompleteBuildError
from ..llm.accounting import COUNTERS, Ledger, stage
from ..llm.bridge import run_sync
from ..llm.runner import Failures, StageTimer, metered, stage_progress
from ..ports import Embedder, StructuredLLM
from ..prompts import PROMPTS
from ..spec.generate import agenerate_spec, stage1_budget, stage1_calls
from ..spec.validate import validate_graph, validate_spec
from ..types import (
    BuildResult,
    CausalEdge,
    CausalGraph,
    Chunk,
    DomainSpec,
    OutcomeConfig,
    Variable,
    variable_text,
)
from .evidence import EntityMentions, LinkStats, SentencePool, link_evidence, normalize_text
from .llm_tiers import (
    MAX_TIER2_SNIPPETS,
    OPEN_TEMPLATE_WEIGHT,
    SUMMARY_CHARS,
    EdgeDraft,
    Stage2Context,
    Template,
    candidate_score,
    edge_id,
    metric_text,
    packed,
    pairs_per_template,
    rank_pairs,
    run_tier1,
    run_tier2,
    spread_pairs,
    template_pairs,
    tier1_sources,
)

LLM_STAGES = ("stage1", "tier1", "tier2")
# Share of a stage's items that may be refused twice and dropped while the build still passes.
MAX_REFUSED_SHARE = 0.05
SEED_CONFIDENCE = 1.0  # a relation written in the spec is taken as given


def build_with_llm(chunks: Sequence[Chunk], **arguments: Any) -> BuildResult:
    """Sync entry (safe inside a running event loop): ``abuild_with_llm`` with the same
    arguments."""

    async def once() -> BuildResult:
        try:
            return await abuild_with_llm(chunks, **arguments)
        finally:
            # The bridge's loop ends here: close the client it opened (per-loop HTTP clients).
            aclose = getattr(arguments.get("llm"), "aclose", None)
            if aclose is not None:
                await aclose()

    return run_sync(once)


async def abuild_with_llm(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    llm: StructuredLLM,
    tier: str = DEFAULT_TIER,
    outcome: OutcomeConfig | None = None,
    spec: DomainSpec | None = None,
    progress: bool | None = None,
    config: LLMBuildConfig | None = None,
    **options: Any,
) -> BuildResult:
    """Build the causal graph with an LLM.

    Items that fail (a reply that never validates, a server down for that request, a 400 about
    that request) are counted as ``failed`` per stage, grouped by cause, and the build goes on to
    the end; then, if any failed or the graph is degenerate (0 edges, 0 Tier 1 templates, no
    metric that can be a cause), ``IncompleteBuildError`` is raised with the report and the
    partial result, unless ``allow_partial=True`` (the report then says ``partial``). Rerun with
    the same arguments and a cached LLM to retry only the failed items.

    Settings: ``config`` (an ``LLMBuildConfig``: batch size, snippets, Stage 1's sample, the
    paper's evidence settings, ``min_confidence``, ``domain``, ``prompts`` (overrides of
    hcg_core.prompts), ``allow_partial``, ``cache_dir`` (a reply cache for a framework model)...),
    or the same names as keyword ``options``, which change ``config`` (unknown names raise).
    """
    opts = LLMBuildConfig.from_options(config, **options)
    tier_caps(tier)  # validates the tier name early
    llm, ledger = metered(llm, cache_dir=opts.cache_dir)
    before = ledger.snapshot()
    failures = Failures()
    t_start = time.perf_counter()
    chunks = list(chunks)

    show = bool(getattr(sys.stderr, "isatty", lambda: False)()) if progress is None else progress
    chunk_embeddings = vectors_of_chunks(embedder, chunks, progress=show)
    if spec is None:
        with stage_progress("stage 1 (spec)", progress), _stage1_failure(ledger, before, failures):
            spec, stage1_info = await agenerate_spec(
                chunks,
                llm,
                ledger=ledger,
                failures=failures,
                tier=tier,
                outcome=outcome,
                config=opts,
                chunk_embeddings=chunk_embeddings,
                embedder=embedder,
            )
        stage1_info["skipped"] = False
    else:
        spec = _given_spec(spec, outcome)
        stage1_info = {"skipped": True, "reason": "spec given"}

    ctx = _stage2_context(spec, chunks, chunk_embeddings, embedder, llm, ledger, failures, opts)
    # Once the vocabulary is known the estimate applies Tier 2's own rule to it: recorded in the
    # report beside the calls made (the estimate before Stage 1 cannot see the variables).
    refined = estimate_build(chunks, spec, tier, max_batch_pairs=opts.max_batch_pairs)["stages"]
    with stage("tier1"), StageTimer(ledger, "tier1"), stage_progress("tier 1 (metrics)", progress):
        templates = await run_tier1(ctx)
    with stage("tier2"), StageTimer(ledger, "tier2"), stage_progress("tier 2 (edges)", progress):
        drafts, new_vars, t2_counts, spec = await run_tier2(ctx, templates, tier)
    t2_counts["calls_estimated_with_spec"] = refined["tier2"]["calls_expected"]

    with StageTimer(ledger, "evidence"):
        link_stats = LinkStats()
        graph = _graph(ctx, spec, drafts, new_vars, link_stats)
        spec_var_vectors = np.asarray([ctx.variable_vectors[v.name] for v in ctx.spec.variables])
        new_vectors = _embed(embedder, [variable_text(v) for v in new_vars])
        parts = [x for x in (spec_var_vectors, new_vectors) if len(x)]
        variable_embeddings = (
            np.vstack(parts) if parts else np.zeros((0, chunk_embeddings.shape[1]), np.float32)
        )
        t2_counts["quoted_edges"] = sum(1 for e in graph.edges if e.quote)
        stage1_info.setdefault("chunks_shown", 0)
        coverage = corpus_coverage(graph, stage1_info["chunks_shown"])

    report = _report(ctx, before, tier, graph, stage1_info, len(templates), t2_counts, t_start)
    report["coverage"] = coverage
    report["evidence"] = link_stats.as_dict()
    report["stages"]["evidence"].update(
        {f"links_by_{way}": n for way, n in link_stats.links.items()},
        chunk_cap=link_stats.chunk_cap,
    )
    result = BuildResult(graph, variable_embeddings, chunk_embeddings, report)
    _check_complete(result, has_sources=bool(tier1_sources(spec)), allow=opts.allow_partial)
    return result


def _check_complete(result: BuildResult, *, has_sources: bool, allow: bool) -> None:
    """Mark the report partial with its problems; raise unless a partial build is allowed."""
    report = result.report
    problems = build_problems(report, has_sources=has_sources)
    report["partial"] = bool(problems)
    report["problems"] = problems
    if problems and not allow:
        raise IncompleteBuildError(
            incomplete_message(problems, report), report=report, result=result
        )


def _stage2_context(
    spec: DomainSpec,
    chunks: Sequence[Chunk],
    chunk_embeddings: np.ndarray,
    embedder: Embedder,
    llm: StructuredLLM,
    ledger: Ledger,
    failures: Failures,
    opts: LLMBuildConfig,
) -> Stage2Context:
    """What both tiers need, with the spec's metrics and variables embedded once."""
    metric_vectors = _embed(embedder, map(metric_text, spec.metrics))
    variable_vectors = _embed(embedder, [variable_text(v) for v in spec.variables])
    return Stage2Context(
        spec,
        chunks,
        chunk_embeddings,
        dict(zip([m.name for m in spec.metrics], metric_vectors, strict=True)),
        llm,
        ledger,
        failures,
        Counter(),
        SentencePool(chunks, embedder),
        opts,
        dict(zip([v.name for v in spec.variables], variable_vectors, strict=True)),
    )


def _given_spec(spec: DomainSpec, outcome: OutcomeConfig | None) -> DomainSpec:
    """A spec the caller gave, validated; an outcome configuration beside it must agree."""
    spec = validate_spec(spec)
    if outcome is not None and outcome != spec.outcome:
        raise ConfigError(
            "both a spec and an outcome configuration were given and they "
            "differ; edit the spec's 'outcome' section instead"
        )
    return spec


def _embed(embedder: Embedder, texts: Iterable[str]) -> np.ndarray:
    texts = list(texts)
    return as_matrix(embedder.embed_documents(texts), len(texts), who="embedder")


def _graph(
    ctx: Stage2Context,
    spec: DomainSpec,
    drafts: Sequence[EdgeDraft],
    new_vars: Sequence[Variable],
    link_stats: LinkStats,
) -> CausalGraph:
    """The graph of ``spec`` (the one Tier 2 extended) with its seed relations and Tier 2's
    drafts (those confident enough), each edge linked to its evidence, validated."""
    chunks, opts = ctx.chunks, ctx.opts
    kept = [d for d in drafts if d.confidence >= opts.min_confidence]
    if len(kept) < len(drafts):
        ctx.dropped["tier2_below_min_confidence"] += len(drafts) - len(kept)
    # A seed relation is a draft of the spec's: given, so never below the minimum confidence.
    seeds = [
        EdgeDraft(r.source, r.target, r.mechanism, SEED_CONFIDENCE, "", "") for r in spec.relations
    ]
    edges = {(d.source, d.target): d for d in (*seeds, *kept)}
    variables = (*spec.variables, *new_vars)
    linked = link_evidence(
        [_edge(edges[k]) for k in sorted(edges)],
        variables,
        chunks,
        per_edge=opts.evidence_per_edge,
        prefix_chars=opts.evidence_prefix_chars,
        stats=link_stats,
    )
    validate_graph(spec, variables, linked, {c.id for c in chunks})
    return CausalGraph(spec=spec, variables=variables, edges=linked, chunks=tuple(chunks))


def _edge(d: EdgeDraft) -> CausalEdge:
    """A draft (a seed relation or a kept Tier 2 judgement) as an edge, before its evidence."""
    return CausalEdge(
        edge_id(d.source, d.target),
        d.source,
        d.target,
        d.mechanism,
        round(float(d.confidence), 4),
        effect=d.effect,
        quote=d.quote or "",
    )


def corpus_coverage(graph: CausalGraph, chunks_shown: int) -> dict[str, float]:
    """Shares of the corpus: shown to Stage 1, cited as evidence of an edge, and naming at least
    one variable's entity (whitespace- and case-insensitive, whole words)."""
    n = len(graph.chunks) or 1
    cited = {c for e in graph.edges for c in e.evidence}
    entities = sorted(
        {normalize_text(x) for v in graph.variables for x in v.entities if len(x.strip()) >= 3},
        key=len,
        reverse=True,
    )
    mentioned = 0
    if entities:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(e) for e in entities) + r")\b")
        mentioned = sum(1 for c in graph.chunks if pattern.search(normalize_text(c.text)))
    return {
        "chunks_shown_to_stage1": round(chunks_shown / n, 4),
        "chunks_cited_as_evidence": round(len(cited) / n, 4),
        "chunks_naming_a_variable_entity": round(mentioned / n, 4),
    }


def build_problems(report: Mapping[str, Any], *, has_sources: bool) -> list[str]:
    """Why a build must not pass as a success: failed items, more refused items than
    ``MAX_REFUSED_SHARE`` of a stage's items, or a degenerate graph."""
    problems = []
    failed = int(report["totals"]["failed"])
    if failed:
        problems.append(f"{failed} LLM item(s) failed")
    problems += refusal_problems(report["stages"])
    if not has_sources:
        problems.append("no metric can be a cause (every metric is terminal, or there is one)")
    elif report["stages"]["tier1"]["templates"] == 0:
        problems.append("Tier 1 found 0 metric templates")
    if report["counts"]["edges"] == 0:
        problems.append("the graph has 0 edges")
    return problems


def refusal_problems(stages: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per stage whose refused items (asked twice, refused twice, dropped) exceed
    ``MAX_REFUSED_SHARE`` of its items.

    >>> refusal_problems({"tier2": {"refused": 2, "items": 30}, "tier1": {"refused": 1, "items": 36}})
    ['tier2: 2 of 30 items refused twice (over the 5% limit)']
    """
    out = []
    for name, st in stages.items():
        refused, items = int(st.get("refused", 0)), int(st.get("items", 0) or 0)
        if refused and refused > MAX_REFUSED_SHARE * max(items, refused):
            out.append(
                f"{name}: {refused} of {max(items, refused)} items refused twice "
                f"(over the {MAX_REFUSED_SHARE:.0%} limit)"
            )
    return out


def incomplete_message(problems: Sequence[str], report: Mapping[str, Any]) -> str:
    """The one message an incomplete build raises with: what is wrong, failures by cause, what to do."""
    lines = ["the LLM build is incomplete: " + "; ".join(problems)]
    groups = report.get("failure_causes") or []
    if groups:
        lines.append("failures by cause:")
        for g in groups:
            lines.append(f"  {g['items']:>5} x {g['cause']} (in {', '.join(g['stages'])})")
            if g["example"]:
                lines.append(f"          e.g. {g['example'][:300]}")
    lines.append(
        "finished calls are cached: fix the provider (URL, model, --timeout) and rerun to resume; "
        "--allow-partial writes the partial graph anyway, marked partial"
    )
    return "\n".join(lines)


@contextmanager
def _stage1_failure(ledger: Ledger, before: dict, failures: Failures) -> Iterator[None]:
    """Turns Stage 1's 'nothing to build on' into an IncompleteBuildError listing the failures."""
    try:
        yield
    except IncompleteBuildError:
        raise
    except BuildError as exc:
        stage1 = _delta(ledger.snapshot(), before, "stage1")
        report = {
            "builder": "llm",
            "partial": True,
            "stages": {"stage1": stage1},
            "failures": failures.records,
            "failure_causes": failures.grouped(),
        }
        problems = [str(exc)]
        if stage1.get("refused"):
            problems.insert(0, f"{int(stage1['refused'])} Stage 1 LLM item(s) refused twice")
        if len(failures):
            problems.insert(0, f"{len(failures)} Stage 1 LLM item(s) failed")
        raise IncompleteBuildError(incomplete_message(problems, report), report=report) from exc


def _delta(after: dict, before: dict, name: str) -> dict[str, float]:
    a, b = after.get(name, {}), before.get(name, {})
    return {k: a.get(k, 0) - b.get(k, 0) for k in (*COUNTERS, "seconds")}


def _report(
    ctx: Stage2Context,
    before: dict,
    tier: str,
    graph: CausalGraph,
    stage1: dict,
    templates: int,
    tier2: dict,
    t_start: float,
) -> dict[str, Any]:
    caps = tier_caps(tier)
    after = ctx.ledger.snapshot()
    stages = {name: _delta(after, before, name) for name in (*LLM_STAGES, "evidence")}
    stages["stage1"].update(stage1)
    stages["tier1"].update({"items": len(tier1_sources(graph.spec)), "templates": templates})
    stages["tier2"].update({"items": tier2["batches"], **tier2})
    without = sum(1 for e in graph.edges if not e.evidence)
    stages["evidence"].update(links=graph.evidence_links, edges_without_evidence=without)
    for name in stages:
        stages[name]["seconds"] = round(stages[name]["seconds"], 3)
    totals = {k: sum(stages[s][k] for s in LLM_STAGES) for k in COUNTERS}
    return {
        "builder": "llm",
        "llm": ctx.llm.name,
        "tier": tier,
        "caps": {"max_metrics": caps.max_metrics, "max_dimensions": caps.max_dimensions},
        "stages": stages,
        "totals": totals,
        "seconds": round(time.perf_counter() - t_start, 3),
        "counts": {
            "dimensions": len(graph.spec.dimensions),
            "metrics": len(graph.spec.metrics),
            "variables": len(graph.variables),
            "edges": len(graph.edges),
            "seed_relations": len(graph.spec.relations),
        },
        "dropped": dict(sorted(ctx.dropped.items())),
        "failures": ctx.failures.records,
        "failure_causes": ctx.failures.grouped(),
    }


# -- the estimate (Remark 1) ----------------------------------------------------------------------

CHARS_PER_TOKEN = 4  # the estimate's stated approximation
COMPLETION_TOKENS_PER_JUDGEMENT = 60  # a kept candidate: a number, a sentence, a quote
COMPLETION_TOKENS_STAGE1 = 800
# Tier 2 before Stage 1 follows how cohesive the corpus is (``corpus_cohesion``, no LLM call):
# a corpus about one subject (the medical guidelines: 0.82) makes more templates, each with more
# candidates, than a mix of unrelated abstracts (HolisQA psychology: 0.61). On the four recorded
# whole-corpus live builds, medical / HolisQA: templates 0.11 / 0.07 of the ordered metric pairs;
# pairs today's rule sends per template with candidates 2.1 / 1.35; templates without candidates
# 0.17 / 0.32 (``benchmarks/llm_estimate.py --recording``). Each figure is the medical one times
# (cohesion / COHESION_REF) ** COHESION_POWER (the open share divided by it): a law through the
# two corpora, no more.
TEMPLATE_DENSITY = 0.11
PAIRS_SENT_PER_TEMPLATE = 2.1
OPEN_TEMPLATE_SHARE = 0.17
COHESION_REF = 0.82
COHESION_POWER = 1.7
RECURRING_SHARE = 0.01  # a word recurs when this share of the chunks (at least 2) name it
COMMON_SHARE = 0.2  # words in more than this share of the chunks say nothing of the subject
_WORD = re.compile(r"[a-z]{4,}")
# Share of the capped metrics that are terminal (no Tier 1 call) when no spec says: the recorded
# example-corpus run tagged 8 of 40, the medical one 17 of 318 proposals.
TERMINAL_SHARE = 0.1
ENTITIES_PER_DIMENSION = 20  # assumed without a spec, for prompt sizes
CHARS_PER_ENTITY = 16
CHARS_PER_VARIABLE_NAME = 40
ASSUMED_VARIABLES_PER_METRIC = 4.0  # without a spec, for Tier 2's upper bound


def _most_calls(sizes: Sequence[int], tier: str, max_pairs: int) -> tuple[int, int]:
    """An upper bound on Tier 2 calls and candidates: over how many of these pairs (supported
    candidates each, 0 for an open template) Tier 1 could make templates of, the most calls the
    packing makes when the heaviest become templates, each sending at most its share of the
    tier's budget. Evaluated on a grid of template counts (about 200)."""
    best = (0, 0)
    step = max(1, len(sizes) // 200)
    for t in sorted({*range(1, len(sizes) + 1, step), len(sizes)}):
        per = pairs_per_template(tier, t)
        weights = sorted(
            (min(per, n) if n else min(OPEN_TEMPLATE_WEIGHT, max_pairs) for n in sizes),
            reverse=True,
        )[:t]
        calls = len(packed(weights, max_pairs))
        pairs = sum(min(per, n) for n in sorted(sizes, reverse=True)[:t])
        best = max(best, (calls, pairs))
    return best


def _expected_slots(templates: int, per_template: int, sent: float, open_share: float) -> list[int]:
    """Pair slots of ``templates`` expected templates, in a packing order: the open share takes
    the open weight (0 here), spread among the others; the others send ``sent`` pairs on average
    (whole pairs, at least 1, at most ``per_template``).

    >>> _expected_slots(6, 24, 1.5, 1 / 3)
    [1, 2, 0, 1, 2, 0]
    """
    open_n = round(templates * min(1.0, open_share))
    filled = templates - open_n
    mean = min(float(per_template), max(1.0, sent))
    out = [math.floor(mean * (i + 1)) - math.floor(mean * i) for i in range(filled)]
    for k in range(open_n):  # open templates fall among the others, as Tier 1 finds them
        out.insert(round((k + 1) * (templates / max(1, open_n))) - 1, 0)
    return out


def corpus_cohesion(chunks: Sequence[Chunk]) -> float:
    """How much a corpus is about one subject, in [0, 1], from its words alone: per chunk, the
    share of its distinctive words (in at most ``COMMON_SHARE`` of the chunks) that recur in
    ``RECURRING_SHARE`` of the chunks, averaged. Guidelines about one disease family score high
    (the medical corpus 0.82); unrelated abstracts low (HolisQA psychology 0.61, business 0.65).

    >>> corpus_cohesion([Chunk("a", "alpha beta"), Chunk("b", "alpha gamma"), Chunk("c", "delta")])
    0.0
    """
    words = [set(_WORD.findall(c.text.lower())) for c in chunks]
    df = Counter(w for ws in words for w in ws)
    n = len(chunks)
    recurs = max(2, RECURRING_SHARE * n)
    distinctive = ([w for w in ws if df[w] <= COMMON_SHARE * n] for ws in words)
    shares = [sum(df[w] >= recurs for w in ds) / len(ds) for ds in distinctive if ds]
    return sum(shares) / len(shares) if shares else 0.0


def cohesion_factor(cohesion: float) -> float:
    """(cohesion / ``COHESION_REF``) ** ``COHESION_POWER``, bounded to [0.25, 2]."""
    return min(2.0, max(0.25, (cohesion / COHESION_REF) ** COHESION_POWER))


def _pair_support(spec: DomainSpec, chunks: Sequence[Chunk]) -> list[int]:
    """Per ordered metric pair a Tier 1 call may make a template of: the candidates the rule
    (``candidate_score`` and the spread of ``tier2_batches``) would send before the per-template
    cap (0 for a template to populate)."""
    mentions = EntityMentions(chunks)
    by_name = {v.name: v for v in spec.variables}

    def score(a: str, b: str) -> float:
        return candidate_score(spec, mentions, by_name[a], by_name[b])

    templates = (Template(s.name, t.name) for s, targets in tier1_sources(spec) for t in targets)
    ranked = (rank_pairs(template_pairs(t, spec.variables), score) for t in templates)
    return [len(spread_pairs(r, len(r))) for r in ranked]


def _plan_without_spec(
    chunks: Sequence[Chunk], tier: str, caps: Any, overhead: int
) -> dict[str, Any]:
    """Stage 1's calls and prompt size, Tier 1's calls, and the vocabulary the tier's caps
    allow (``ASSUMED_VARIABLES_PER_METRIC`` variables per metric), before any spec exists."""
    s1 = stage1_calls(len(chunks), tier=tier)
    n, k = caps.max_metrics, ASSUMED_VARIABLES_PER_METRIC
    entity_chars = caps.max_dimensions * ENTITIES_PER_DIMENSION * CHARS_PER_ENTITY
    # dimensions, metrics and variables prompts list the vocabulary so far; relations the
    # variables.
    vocab_chars = entity_chars + 40 * n
    per_call = overhead + DEFAULT_CHUNKS_PER_CALL * DEFAULT_EXCERPT_CHARS + vocab_chars
    return {
        "s1": s1,
        "s1_prompt": s1 * per_call // CHARS_PER_TOKEN,
        "chunks_read": min(len(chunks), stage1_budget(tier, DEFAULT_SPEC_SAMPLE_CHUNKS)),
        "n_metrics": n,
        "entity_chars": entity_chars,
        "t1_max": n,
        "t1": n - round(n * TERMINAL_SHARE),
        "t1_exact": False,
        "sizes_all": [int(k * k)] * n * (n - 1),
        "k": k,
        "desc_chars": 400 * n,
        "n_vars": int(n * k),
    }


def _plan_with_spec(spec: DomainSpec, chunks: Sequence[Chunk]) -> dict[str, Any]:
    """Tier 1's calls (one per source metric) and the spec's own sizes: no Stage 1."""
    n_metrics = len(spec.metrics)
    return {
        "s1": 0,
        "s1_prompt": 0,
        "chunks_read": 0,
        "n_metrics": n_metrics,
        "t1": len(tier1_sources(spec)),
        "t1_max": len(tier1_sources(spec)),
        "t1_exact": True,
        "sizes_all": _pair_support(spec, chunks),
        "k": len(spec.variables) / max(1, n_metrics),
        "desc_chars": sum(len(metric_text(m)) + 3 for m in spec.metrics),
        "entity_chars": sum(len(e) + 2 for d in spec.dimensions for e in d.entities),
        "n_vars": len(spec.variables),
    }


def estimate_build(
    chunks: Sequence[Chunk],
    spec: DomainSpec | None = None,
    tier: str = DEFAULT_TIER,
    *,
    max_batch_pairs: int = DEFAULT_MAX_BATCH_PAIRS,
) -> dict[str, Any]:
    """How many calls (and about how many tokens) a build makes, before spending anything.

    Calls are items (one request each when nothing is retried, re-asked or split; fewer when the
    cache answers). Stage 1 (every chunk up to the tier's budget) and, with a spec, Tier 1 are
    exact; without a spec Tier 1 expects the tier's metric cap less ``TERMINAL_SHARE``
    terminals, at most the cap. Tier 2 depends on the templates Tier 1 finds, which follow how
    cohesive the corpus is (``corpus_cohesion``, read from its words, scaled by
    ``cohesion_factor``): ``TEMPLATE_DENSITY`` times the factor of the ordered metric pairs
    become templates, the open share (``OPEN_TEMPLATE_SHARE`` over the factor) without
    candidates, the others sending ``PAIRS_SENT_PER_TEMPLATE`` times the factor (with a spec:
    the mean the rule finds over the spec's own pairs, ``_pair_support``), at most the tier's
    share (``pairs_per_template``), packed ``max_batch_pairs`` to a call, no template split. The
    upper bound assumes every pair becomes a template (without a spec:
    ``ASSUMED_VARIABLES_PER_METRIC`` variables per metric). The other settings are the
    defaults of ``LLMBuildConfig``. Prompt sizes include the entity lists; tokens are 4
    characters each.
    """
    caps = tier_caps(tier)
    factor = cohesion_factor(corpus_cohesion(chunks))
    overhead = sum(len(p.user) + len(p.system) for p in PROMPTS.values()) // len(PROMPTS)
    density = TEMPLATE_DENSITY * factor
    if spec is None:
        plan = _plan_without_spec(chunks, tier, caps, overhead)
        templates = round(density * plan["t1"] * (plan["n_metrics"] - 1))
        sent = PAIRS_SENT_PER_TEMPLATE * factor
    else:
        plan = _plan_with_spec(spec, chunks)
        templates = round(density * len(plan["sizes_all"]))
        supported = [n for n in plan["sizes_all"] if n]
        # The spec's own pairs give the mean (a template is a pair Tier 1 found causal: about
        # as supported as the average supported pair).
        sent = sum(supported) / len(supported) if supported else 0.0
    per = pairs_per_template(tier, templates)
    open_share = OPEN_TEMPLATE_SHARE / factor
    expected_slots = _expected_slots(templates, per, sent, open_share) if sent else [0] * templates
    return _estimate_figures(plan, expected_slots, tier, max_batch_pairs, overhead)


def _estimate_figures(
    plan: Mapping[str, Any],
    expected_slots: Sequence[int],
    tier: str,
    max_batch_pairs: int,
    overhead: int,
) -> dict[str, Any]:
    """The estimate's figures per stage and in all, from the plan and Tier 2's expected slots."""
    out: dict[str, Any] = {"tier": tier, "max_batch_pairs": max_batch_pairs}
    p = SimpleNamespace(**plan)
    t2_expected = len(packed(expected_slots, max_batch_pairs))
    t2_max, pairs_max = _most_calls(p.sizes_all, tier, max_batch_pairs)
    t2_max = max(t2_max, t2_expected)
    pairs_expected = int(sum(expected_slots))
    snippets = DEFAULT_SNIPPETS * DEFAULT_SNIPPET_CHARS
    t1_prompt = p.t1_max * (overhead + p.desc_chars + snippets + SUMMARY_CHARS * p.n_metrics)
    t1_prompt //= CHARS_PER_TOKEN
    t2_per_call = overhead + MAX_TIER2_SNIPPETS * DEFAULT_SNIPPET_CHARS + p.entity_chars + 600

    def t2_tokens(calls: int, pairs: int) -> int:
        return (calls * t2_per_call + pairs * 2 * CHARS_PER_VARIABLE_NAME) // CHARS_PER_TOKEN

    out["stages"] = {
        "stage1": {
            "calls": p.s1,
            "chunks_read": p.chunks_read,
            "prompt_tokens": p.s1_prompt,
            "completion_tokens": p.s1 * COMPLETION_TOKENS_STAGE1,
            "exact": True,
        },
        "tier1": {
            "calls": p.t1,
            "calls_max": p.t1_max,
            "prompt_tokens": t1_prompt,
            "completion_tokens": p.t1_max * p.n_metrics * COMPLETION_TOKENS_PER_JUDGEMENT // 2,
            "exact": p.t1_exact,
        },
        "tier2": {
            "calls_expected": t2_expected,
            "calls_max": t2_max,
            "prompt_tokens_expected": t2_tokens(t2_expected, pairs_expected),
            "prompt_tokens_max": t2_tokens(t2_max, pairs_max),
            "completion_tokens_max": pairs_max * COMPLETION_TOKENS_PER_JUDGEMENT,
            "per_call_prompt_tokens": (t2_per_call + max_batch_pairs * 2 * CHARS_PER_VARIABLE_NAME)
            // CHARS_PER_TOKEN,
            "exact": False,
        },
    }
    out["calls_expected"] = p.s1 + p.t1 + t2_expected
    out["calls_max"] = p.s1 + p.t1_max + t2_max
    out["prompt_tokens_max"] = p.s1_prompt + t1_prompt + t2_tokens(t2_max, pairs_max)
    out["completion_tokens_max"] = sum(
        v.get("completion_tokens", v.get("completion_tokens_max", 0))
        for v in out["stages"].values()
    )
    out["remark1"] = {
        "metrics": p.n_metrics,
        "mean_variables_per_metric": round(p.k, 2),
        "tier1_judgements": p.t1_max * max(0, p.n_metrics - 1),
        "candidates_expected": pairs_expected,
        "candidates_max": pairs_max,
        "naive_pairs": p.n_vars * p.n_vars,
    }
    return out


def format_estimate(est: Mapping[str, Any]) -> str:
    """Human-readable lines for ``hcg build --estimate``."""
    st = est["stages"]
    r = est["remark1"]
    s1 = st["stage1"]
    t2 = st["tier2"]
    return "\n".join(
        [
            f"LLM build estimate (tier {est['tier']}), before any call:",
            f"  stage 1 (spec)    {s1['calls']:>7} calls"
            + (
                "  (skipped: spec given)"
                if s1["calls"] == 0
                else f", reading {s1['chunks_read']} chunks"
            ),
            f"  tier 1 (metrics)  {st['tier1']['calls']:>7} calls"
            + ("" if st["tier1"]["exact"] else f" expected, <= {st['tier1']['calls_max']}")
            + ", one per non-terminal metric",
            f"  tier 2 (edges)    {t2['calls_expected']:>7} calls expected, <= {t2['calls_max']} "
            f"(at most {est['max_batch_pairs']} pairs, about {t2['per_call_prompt_tokens']:,} "
            "prompt tokens each)",
            f"  total             {est['calls_expected']:>7} calls expected, <= {est['calls_max']};"
            f" about {est['prompt_tokens_max']:,} prompt + {est['completion_tokens_max']:,} "
            "completion tokens at most",
            f"  Remark 1: {r['tier1_judgements']:,} Tier 1 judgements; Tier 2 candidates about "
            f"{r['candidates_expected']:,} expected, <= {r['candidates_max']:,}, for "
            f"{r['metrics']} metrics (k = {r['mean_variables_per_metric']}); "
            f"naive |V|^2 = {r['naive_pairs']:,}",
            "  (retries, re-asks, splits and cache hits change the count of requests; see the "
            "report)",
        ]
    )
