"""Stage 2 with an LLM: Tier 1 metric templates and Tier 2 variable edges.

Tier 1 asks one call per non-terminal source metric, judging all candidate targets together;
Tier 2 judges each template's candidate pairs in batches of at most ``max_batch_pairs``. Response
models carry ``Literal`` choices of the allowed names; replies are pruned again here and every
pruned item is counted by reason.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from ..llm.accounting import Ledger
from ..llm.runner import Failures, ask_item
from ..ports import StructuredLLM
from ..prompts import Prompt, get_prompt
from ..spec.assemble import ENTITY_CUTOFF, _match, entity_name
from ..types import Chunk, DomainSpec, Metric, Variable

DEFAULT_MAX_BATCH_PAIRS = 50  # candidate pairs per Tier 2 call (issue: at most 50)
DEFAULT_SNIPPETS = 3  # evidence snippets found by embedding search, per call
DEFAULT_SNIPPET_CHARS = 400


def edge_id(source: str, target: str) -> str:
    """A stable id from the endpoints, so an edit elsewhere in the spec never renames an edge."""
    return "e-" + hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:12]


def _lit(names: Sequence[str]) -> Any:
    return Literal[tuple(names)]


def tier1_model(source: str, candidates: Sequence[str]) -> type[BaseModel]:
    link = create_model(
        "Tier1Link",
        target=(_lit(candidates), ...),
        causal=(bool, ...),
        rationale=(str, ""),
    )
    return create_model("Tier1Reply", source=(_lit([source]), source), links=(list[link], ...))


def tier2_model(
    metric_s: str, metric_t: str, sources: Sequence[str], targets: Sequence[str]
) -> type[BaseModel]:
    judgement = create_model(
        "Tier2Judgement",
        source=(_lit(sources), ...),
        target=(_lit(targets), ...),
        keep=(bool, ...),
        mechanism=(str, ""),
        confidence=(float, Field(0.5, ge=0.0, le=1.0)),
        evidence=(str, ""),
    )
    new_source = create_model(
        "NewSource",
        metric=(_lit([metric_s]), metric_s),
        entities=(list[str], Field(default_factory=list)),
    )
    new_target = create_model(
        "NewTarget",
        metric=(_lit([metric_t]), metric_t),
        entities=(list[str], Field(default_factory=list)),
    )
    new_edge = create_model(
        "Tier2NewEdge",
        source=(new_source, ...),
        target=(new_target, ...),
        mechanism=(str, ""),
        confidence=(float, Field(0.5, ge=0.0, le=1.0)),
        evidence=(str, ""),
    )
    return create_model(
        "Tier2Reply",
        judgements=(list[judgement], ...),
        new_edges=(list[new_edge], Field(default_factory=list)),
    )


def metric_text(m: Metric) -> str:
    sig = f"({', '.join(m.signature)})" if m.signature else ""
    return f"{m.name}{sig}: {m.description}".strip()


def top_chunks(query: np.ndarray, chunk_embeddings: np.ndarray, k: int) -> list[int]:
    """Indices of the k most similar chunks, ties by corpus order (deterministic)."""
    if chunk_embeddings.size == 0 or k <= 0:
        return []
    sims = chunk_embeddings @ query
    order = np.lexsort((np.arange(len(sims)), -sims))
    return [int(i) for i in order[:k]]


def snippets_text(idx: Sequence[int], chunks: Sequence[Chunk], chars: int) -> str:
    return "\n".join(f"[{n + 1}] {chunks[i].text[:chars]}" for n, i in enumerate(idx)) or "(none)"


@dataclass(frozen=True)
class Template:
    source: str
    target: str
    rationale: str = ""


@dataclass(frozen=True)
class EdgeDraft:
    source: str
    target: str
    mechanism: str
    confidence: float
    quote: str


@dataclass
class Stage2Context:
    """What both tiers need: the spec, vectors for snippet search, and the shared counters."""

    spec: DomainSpec
    chunks: Sequence[Chunk]
    chunk_embeddings: np.ndarray
    metric_vectors: Mapping[str, np.ndarray]
    llm: StructuredLLM
    ledger: Ledger
    failures: Failures
    dropped: Counter[str]
    prompts: Mapping[str, Prompt] | None = None
    snippets: int = DEFAULT_SNIPPETS
    snippet_chars: int = DEFAULT_SNIPPET_CHARS


def tier1_sources(spec: DomainSpec) -> list[tuple[Metric, list[Metric]]]:
    """(source, candidate targets) per non-terminal metric, sorted; no self-loops."""
    metrics = sorted(spec.metrics, key=lambda m: m.name)
    return [
        (s, [t for t in metrics if t.name != s.name])
        for s in metrics
        if s.role != "terminal" and len(metrics) > 1
    ]


async def run_tier1(ctx: Stage2Context) -> list[Template]:
    """Metric-level templates, sorted by (source, target)."""
    prompt = get_prompt("tier1", ctx.prompts)

    async def one(source: Metric, cands: list[Metric]) -> list[Template]:
        model = tier1_model(source.name, [c.name for c in cands])
        idx = top_chunks(ctx.metric_vectors[source.name], ctx.chunk_embeddings, ctx.snippets)
        messages = prompt.render(
            model.__name__,
            source=metric_text(source).split(":")[0],
            source_description=source.description or "(no description)",
            evidence=snippets_text(idx, ctx.chunks, ctx.snippet_chars),
            candidates="\n".join(f"- {metric_text(c)}" for c in cands),
        )
        reply = await ask_item(
            ctx.llm,
            messages,
            model,
            item=f"tier1 {source.name}",
            ledger=ctx.ledger,
            failures=ctx.failures,
        )
        if reply is None:
            return []
        allowed = {c.name for c in cands}
        out: dict[str, Template] = {}
        for link in reply.links:
            if link.target not in allowed:  # second enforcement (a lenient server)
                ctx.dropped["tier1_target_outside_vocabulary"] += 1
            elif link.causal and link.target not in out:
                out[link.target] = Template(source.name, link.target, link.rationale)
        return list(out.values())

    results = await asyncio.gather(*(one(s, c) for s, c in tier1_sources(ctx.spec)))
    return sorted((t for r in results for t in r), key=lambda t: (t.source, t.target))


def tier2_batches(
    template: Template, variables: Sequence[Variable], max_pairs: int
) -> list[list[tuple[str, str]]]:
    """The template's candidate pairs (sorted), cut into batches of at most ``max_pairs``."""
    vs = sorted(v.name for v in variables if v.metric == template.source)
    vt = sorted(v.name for v in variables if v.metric == template.target)
    pairs = [(s, t) for s in vs for t in vt if s != t]
    return [pairs[i : i + max_pairs] for i in range(0, len(pairs), max_pairs)]


def _new_variable(metric: Metric, raw: Sequence[str], spec: DomainSpec) -> Variable | None:
    """A variable of ``metric`` whose entities are (fuzzy-matched) existing dimension entities."""
    if len(raw) != len(metric.signature):
        return None
    ents = []
    for dim, e in zip(metric.signature, raw, strict=True):
        hit, _ = _match(entity_name(e), spec.dimension(dim).entities, ENTITY_CUTOFF)
        if hit is None:
            return None
        ents.append(hit)
    return Variable(metric.name, tuple(ents))


async def run_tier2(
    ctx: Stage2Context, templates: Sequence[Template], max_pairs: int
) -> tuple[list[EdgeDraft], list[Variable], dict[str, int]]:
    """Judge every template's candidates; returns edge drafts, admitted new variables, counts."""
    prompt = get_prompt("tier2", ctx.prompts)
    spec = ctx.spec
    jobs = [(t, b) for t in templates for b in tier2_batches(t, spec.variables, max_pairs)]
    counts = {
        "batches": len(jobs),
        "candidates": sum(len(b) for _, b in jobs),
        "templates_without_candidates": sum(
            1 for t in templates if not tier2_batches(t, spec.variables, max_pairs)
        ),
    }
    entities_text = "\n".join(f"- {d.name}: {', '.join(d.entities)}" for d in spec.dimensions)

    async def one(template: Template, pairs: list[tuple[str, str]]) -> Any:
        model = tier2_model(
            template.source,
            template.target,
            sorted({s for s, _ in pairs}),
            sorted({t for _, t in pairs}),
        )
        q = ctx.metric_vectors[template.source] + ctx.metric_vectors[template.target]
        q = q / (np.linalg.norm(q) or 1.0)
        idx = top_chunks(q, ctx.chunk_embeddings, ctx.snippets)
        messages = prompt.render(
            model.__name__,
            source_metric=metric_text(spec.metric(template.source)),
            target_metric=metric_text(spec.metric(template.target)),
            template=template.rationale or "(no rationale)",
            evidence=snippets_text(idx, ctx.chunks, ctx.snippet_chars),
            candidates="\n".join(f"{i + 1}. {s} -> {t}" for i, (s, t) in enumerate(pairs)),
            entities=entities_text or "(none)",
        )
        item = f"tier2 {template.source}->{template.target} [{pairs[0][0]} .. {pairs[-1][0]}]"
        return await ask_item(
            ctx.llm, messages, model, item=item, ledger=ctx.ledger, failures=ctx.failures
        )

    replies = await asyncio.gather(*(one(t, b) for t, b in jobs))
    drafts: dict[tuple[str, str], EdgeDraft] = {}
    new_vars: dict[str, Variable] = {}
    known = {v.name for v in spec.variables}

    def offer(d: EdgeDraft) -> None:
        old = drafts.get((d.source, d.target))
        # Deterministic whatever the reply order: higher confidence, then smaller mechanism.
        if old is None or (-d.confidence, d.mechanism) < (-old.confidence, old.mechanism):
            drafts[(d.source, d.target)] = d

    for (template, pairs), reply in zip(jobs, replies, strict=True):  # jobs are sorted
        if reply is None:
            continue
        allowed = set(pairs)
        for j in reply.judgements:
            if (j.source, j.target) not in allowed:
                ctx.dropped["tier2_pair_not_candidate"] += 1
            elif j.keep:
                offer(EdgeDraft(j.source, j.target, j.mechanism.strip(), j.confidence, j.evidence))
        for ne in reply.new_edges:
            src = _new_variable(spec.metric(template.source), ne.source.entities, spec)
            tgt = _new_variable(spec.metric(template.target), ne.target.entities, spec)
            if (
                src is None
                or tgt is None
                or ne.source.metric != template.source
                or ne.target.metric != template.target
            ):
                ctx.dropped["tier2_new_variable_outside_vocabulary"] += 1
                continue
            if src.name == tgt.name:
                ctx.dropped["tier2_self_loop"] += 1
                continue
            for v in (src, tgt):
                if v.name not in known:
                    new_vars.setdefault(v.name, v)
            offer(EdgeDraft(src.name, tgt.name, ne.mechanism.strip(), ne.confidence, ne.evidence))
    counts["new_variables"] = len(new_vars)
    edges = [drafts[k] for k in sorted(drafts)]
    return edges, [new_vars[k] for k in sorted(new_vars)], counts
