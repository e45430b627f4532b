"""Stage 2 with an LLM: Tier 1 metric templates and Tier 2 variable edges.

Tier 1 asks one call per non-terminal source metric, judging all candidate targets together,
with each candidate's evidence summary and the spec's seed relations lifted to metrics (the
paper's Algorithm 1); targets a reply leaves out are re-asked once. Tier 2 packs the candidate
pairs of several templates into calls of at most ``max_batch_pairs`` pairs, shows each call the
chunks relevant to its own pairs, and lets the model add variables (and entities it can quote from
those chunks) for the templates' metrics: the vocabulary grows, validated against dimensions and
metrics, counted and capped. Response models carry ``Literal`` choices of the allowed names;
replies are pruned again here and every pruned item is counted by reason. A batch whose request
is too long, or whose reply was cut at the token limit, is split in two.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from ..config import DEFAULT_SNIPPET_CHARS, DEFAULT_SNIPPETS
from ..llm.accounting import Ledger
from ..llm.runner import Failures, ask_split
from ..ports import StructuredLLM
from ..prompts import Prompt, get_prompt
from ..spec.assemble import ENTITY_CUTOFF, entity_name, entity_ok, match_name
from ..types import Chunk, Dimension, DomainSpec, Metric, Variable
from .evidence import normalize_text, snippet

SUMMARY_CHARS = 220  # the evidence summary of one candidate metric in Tier 1
MAX_TIER2_SNIPPETS = 8  # snippets shown to one packed Tier 2 call
OPEN_TEMPLATE_WEIGHT = 10  # a template without candidates takes this many pair slots in a batch
NEW_VARIABLES_PER_METRIC = 12  # cap on variables Tier 2 may add to one metric
NEW_ENTITIES_PER_DIMENSION = 25  # cap on entities Tier 2 may add to one dimension
EFFECTS = ("increases", "decreases")


def edge_id(source: str, target: str) -> str:
    """A stable id from the endpoints, so an edit elsewhere in the spec never renames an edge."""
    return "e-" + hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:12]


def _lit(names: Sequence[str]) -> Any:
    # Literal of the allowed names; a plain str when there is nothing to choose from (pruned later).
    return Literal[tuple(names)] if names else str  # type: ignore[return-value]


def tier1_model(source: str, candidates: Sequence[str]) -> type[BaseModel]:
    link = create_model(
        "Tier1Link",
        target=(_lit(candidates), ...),
        causal=(bool, ...),
        rationale=(str, ""),
    )
    return create_model("Tier1Reply", source=(_lit([source]), source), links=(list[link], ...))


def tier2_model(
    source_metrics: Sequence[str],
    target_metrics: Sequence[str],
    sources: Sequence[str],
    targets: Sequence[str],
) -> type[BaseModel]:
    judgement = create_model(
        "Tier2Judgement",
        source=(_lit(sources), ...),
        target=(_lit(targets), ...),
        keep=(bool, ...),
        effect=(Literal[EFFECTS], "increases"),
        mechanism=(str, ""),
        confidence=(float, Field(0.5, ge=0.0, le=1.0)),
        evidence=(str, ""),
    )
    new_source = create_model(
        "NewSource",
        metric=(_lit(source_metrics), ...),
        entities=(list[str], Field(default_factory=list)),
    )
    new_target = create_model(
        "NewTarget",
        metric=(_lit(target_metrics), ...),
        entities=(list[str], Field(default_factory=list)),
    )
    new_edge = create_model(
        "Tier2NewEdge",
        source=(new_source, ...),
        target=(new_target, ...),
        effect=(Literal[EFFECTS], "increases"),
        mechanism=(str, ""),
        confidence=(float, Field(0.5, ge=0.0, le=1.0)),
        evidence=(str, ""),
    )
    return create_model(
        "Tier2Reply",
        judgements=(list[judgement], Field(default_factory=list)),
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
    k = min(k, len(sims))
    cand = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    order = cand[np.lexsort((cand, -sims[cand]))]
    return [int(i) for i in order]


def snippets_text(idx: Sequence[int], chunks: Sequence[Chunk], chars: int) -> str:
    return (
        "\n".join(f"[{n + 1}] {snippet(chunks[i].text, chars)}" for n, i in enumerate(idx))
        or "(none)"
    )


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) or 1.0)


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
    effect: str = "increases"
    shown: tuple[int, ...] = ()  # the chunks the call that judged it was shown (corpus indices)


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
    variable_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)


def tier1_sources(spec: DomainSpec) -> list[tuple[Metric, list[Metric]]]:
    """(source, candidate targets) per non-terminal metric, sorted; no self-loops."""
    metrics = sorted(spec.metrics, key=lambda m: m.name)
    return [
        (s, [t for t in metrics if t.name != s.name])
        for s in metrics
        if s.role != "terminal" and len(metrics) > 1
    ]


def seed_templates(spec: DomainSpec) -> dict[str, list[str]]:
    """The spec's seed relations R0 lifted to metrics: source metric -> target metrics."""
    metric_of = {v.name: v.metric for v in spec.variables}
    out: dict[str, set[str]] = {}
    for r in spec.relations:
        s, t = metric_of.get(r.source), metric_of.get(r.target)
        if s and t and s != t:
            out.setdefault(s, set()).add(t)
    return {k: sorted(v) for k, v in out.items()}


def metric_summaries(ctx: Stage2Context) -> dict[str, str]:
    """One evidence summary per metric: the opening sentences of its most similar chunk."""
    out = {}
    for m in ctx.spec.metrics:
        idx = top_chunks(ctx.metric_vectors[m.name], ctx.chunk_embeddings, 1)
        out[m.name] = snippet(ctx.chunks[idx[0]].text, SUMMARY_CHARS) if idx else ""
    return out


async def run_tier1(ctx: Stage2Context) -> list[Template]:
    """Metric-level templates, sorted by (source, target)."""
    prompt = get_prompt("tier1", ctx.prompts)
    summaries = metric_summaries(ctx)
    seeds = seed_templates(ctx.spec)

    def candidates_text(cands: Sequence[Metric]) -> str:
        lines = []
        for c in cands:
            lines.append(f"- {metric_text(c)}")
            if summaries.get(c.name):
                lines.append(f"  evidence: {summaries[c.name]}")
        return "\n".join(lines)

    async def judge(source: Metric, cands: Sequence[Metric], item: str) -> dict[str, Any]:
        idx = top_chunks(ctx.metric_vectors[source.name], ctx.chunk_embeddings, ctx.snippets)

        async def ask(sub: Sequence[Metric]) -> Any:
            model = tier1_model(source.name, [c.name for c in sub])
            messages = prompt.render(
                model.__name__,
                source=metric_text(source).split(":")[0],
                source_description=source.description or "(no description)",
                evidence=snippets_text(idx, ctx.chunks, ctx.snippet_chars),
                candidates=candidates_text(sub),
                seeds="\n".join(f"- {source.name} -> {t}" for t in seeds.get(source.name, ()))
                or "(none)",
            )
            return await ctx.llm.acomplete(messages, model)

        parts = await ask_split(
            list(cands), ask, item=item, ledger=ctx.ledger, failures=ctx.failures
        )
        links: dict[str, Any] = {}
        for sub, reply in parts:
            if reply is None:
                continue
            allowed = {c.name for c in sub}
            for link in reply.links:
                if link.target not in allowed:  # second enforcement (a lenient server)
                    ctx.dropped["tier1_target_outside_vocabulary"] += 1
                else:
                    links.setdefault(link.target, link)
        return {"links": links, "failed": any(r is None for _, r in parts)}

    async def one(source: Metric, cands: list[Metric]) -> list[Template]:
        got = await judge(source, cands, f"tier1 {source.name}")
        links = got["links"]
        missing = [c for c in cands if c.name not in links]
        if missing and links and not got["failed"]:
            # Coverage check: the prompt asks for EVERY target; ask again for the ones left out.
            ctx.dropped["tier1_targets_missing_reasked"] += len(missing)
            again = await judge(source, missing, f"tier1 {source.name} (missing targets)")
            links.update(again["links"])
            never = sum(1 for c in missing if c.name not in links)
            if never:
                ctx.dropped["tier1_targets_never_judged"] += never
        return [
            Template(source.name, t, links[t].rationale) for t in sorted(links) if links[t].causal
        ]

    results = await asyncio.gather(*(one(s, c) for s, c in tier1_sources(ctx.spec)))
    return sorted((t for r in results for t in r), key=lambda t: (t.source, t.target))


# -- Tier 2 ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier2Batch:
    """One Tier 2 call: its templates, and the candidate pairs (of those templates) it judges."""

    templates: tuple[Template, ...]
    pairs: tuple[tuple[str, str], ...]


def template_pairs(template: Template, variables: Sequence[Variable]) -> list[tuple[str, str]]:
    """The template's candidate pairs, sorted (no self-loops)."""
    vs = sorted(v.name for v in variables if v.metric == template.source)
    vt = sorted(v.name for v in variables if v.metric == template.target)
    return [(s, t) for s in vs for t in vt if s != t]


def tier2_batches(
    templates: Sequence[Template], variables: Sequence[Variable], max_pairs: int
) -> list[Tier2Batch]:
    """Pack the templates' candidates into batches of at most ``max_pairs`` pairs, in template
    order; a template with more splits over several batches, and a template without candidates
    (its metrics have no variables yet) takes ``OPEN_TEMPLATE_WEIGHT`` slots, to be populated."""
    batches: list[Tier2Batch] = []
    cur_t: list[Template] = []
    cur_p: list[tuple[str, str]] = []
    weight = 0

    def flush() -> None:
        nonlocal cur_t, cur_p, weight
        if cur_t:
            batches.append(Tier2Batch(tuple(cur_t), tuple(cur_p)))
        cur_t, cur_p, weight = [], [], 0

    for t in templates:
        pairs = template_pairs(t, variables)
        pieces = [pairs[i : i + max_pairs] for i in range(0, len(pairs), max_pairs)] or [[]]
        for piece in pieces:
            w = len(piece) or min(OPEN_TEMPLATE_WEIGHT, max_pairs)
            if cur_t and weight + w > max_pairs:
                flush()
            cur_t.append(t)
            cur_p.extend(piece)
            weight += w
    flush()
    return batches


@dataclass
class Vocabulary:
    """The variables and entities Tier 2 admits, in a deterministic order, with the caps."""

    spec: DomainSpec
    dropped: Counter[str]
    new_entities: dict[str, list[str]] = field(default_factory=dict)
    new_variables: dict[str, Variable] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.known = {v.name for v in self.spec.variables}
        self.per_metric: Counter[str] = Counter()

    def entities(self, dim: str) -> list[str]:
        return [*self.spec.dimension(dim).entities, *self.new_entities.get(dim, ())]

    def resolve(
        self, metric: Metric, raw: Sequence[str], shown: str
    ) -> tuple[Variable, list[tuple[str, str]]] | None:
        """The variable of ``metric`` with these entities and the new (dimension, entity) pairs
        it needs, or None (the reason is counted). Changes nothing; ``admit`` does.

        Each entity is an existing entity of its dimension (fuzzy-matched), or a new one when
        the text shown to the call contains it (grounded) and the dimension's cap allows.
        """
        if len(raw) != len(metric.signature):
            self.dropped["tier2_new_variable_wrong_arity"] += 1
            return None
        ents: list[str] = []
        new: list[tuple[str, str]] = []
        for dim, e in zip(metric.signature, raw, strict=True):
            name = entity_name(e)
            hit, _ = match_name(name, self.entities(dim), ENTITY_CUTOFF)
            if hit is not None:
                ents.append(hit)
            elif not entity_ok(name) or normalize_text(name) not in shown:
                self.dropped["tier2_new_entity_not_in_shown_text"] += 1
                return None
            elif len(self.new_entities.get(dim, ())) >= NEW_ENTITIES_PER_DIMENSION:
                self.dropped["tier2_new_entity_over_cap"] += 1
                return None
            else:
                ents.append(name)
                new.append((dim, name))
        v = Variable(metric.name, tuple(ents))
        fresh = v.name not in self.known and v.name not in self.new_variables
        if fresh and self.per_metric[metric.name] >= NEW_VARIABLES_PER_METRIC:
            self.dropped["tier2_new_variable_over_cap"] += 1
            return None
        return v, new

    def admit(self, v: Variable, new: Sequence[tuple[str, str]]) -> None:
        if v.name in self.known or v.name in self.new_variables:
            return
        for dim, e in new:
            if e not in self.new_entities.setdefault(dim, []):
                self.new_entities[dim].append(e)
        self.per_metric[v.metric] += 1
        self.new_variables[v.name] = v

    def extended_spec(self) -> DomainSpec:
        """The spec with the admitted entities added to their dimensions."""
        from dataclasses import replace

        dims = tuple(
            Dimension(d.name, (*d.entities, *self.new_entities.get(d.name, ())), d.description)
            for d in self.spec.dimensions
        )
        return replace(self.spec, dimensions=dims)


async def run_tier2(
    ctx: Stage2Context, templates: Sequence[Template], max_pairs: int
) -> tuple[list[EdgeDraft], list[Variable], dict[str, int], DomainSpec]:
    """Judge every template's candidates and let the model populate the templates' metrics.

    Returns edge drafts, admitted new variables, counts, and the spec with admitted entities.
    """
    prompt = get_prompt("tier2", ctx.prompts)
    spec = ctx.spec
    batches = tier2_batches(templates, spec.variables, max_pairs)
    counts = {
        "batches": len(batches),
        "candidates": sum(len(b.pairs) for b in batches),
        "templates_without_candidates": sum(
            1 for t in templates if not template_pairs(t, spec.variables)
        ),
    }

    def evidence_for(batch: Tier2Batch) -> list[int]:
        # Per template: its two metrics plus the variables this batch judges for it.
        chosen: dict[int, None] = {}
        names = {n for p in batch.pairs for n in p}
        for t in batch.templates:
            q = ctx.metric_vectors[t.source] + ctx.metric_vectors[t.target]
            vs = [
                ctx.variable_vectors[v.name]
                for v in spec.variables
                if v.name in names
                and v.metric in (t.source, t.target)
                and v.name in ctx.variable_vectors
            ]
            if vs:
                q = q + np.mean(vs, axis=0) * 2
            for i in top_chunks(_unit(q), ctx.chunk_embeddings, ctx.snippets):
                chosen.setdefault(i, None)
        return list(chosen)[:MAX_TIER2_SNIPPETS]

    def render(batch: Tier2Batch, pairs: Sequence[tuple[str, str]], idx: list[int]) -> Any:
        src_metrics = sorted({t.source for t in batch.templates})
        tgt_metrics = sorted({t.target for t in batch.templates})
        model = tier2_model(
            src_metrics, tgt_metrics, sorted({s for s, _ in pairs}), sorted({t for _, t in pairs})
        )
        used = sorted({*src_metrics, *tgt_metrics})
        dims = sorted({d for m in used for d in spec.metric(m).signature})
        messages = prompt.render(
            model.__name__,
            templates="\n".join(
                f"T{i + 1}. {t.source} -> {t.target}: {t.rationale or '(no rationale)'}"
                for i, t in enumerate(batch.templates)
            ),
            metrics="\n".join(f"- {metric_text(spec.metric(m))}" for m in used),
            evidence=snippets_text(idx, ctx.chunks, ctx.snippet_chars),
            candidates="\n".join(f"{i + 1}. {s} -> {t}" for i, (s, t) in enumerate(pairs))
            or "(none: these templates' metrics have no variables yet; propose them)",
            entities="\n".join(
                f"- {d}: {', '.join(spec.dimension(d).entities) or '(none yet)'}" for d in dims
            )
            or "(the metrics have no signature: use an empty entity list)",
        )
        return messages, model

    metric_of = {v.name: v.metric for v in spec.variables}

    def units(batch: Tier2Batch) -> list[tuple[Template, tuple[str, str] | None]]:
        # The split unit: one candidate pair with its template, or a template to populate. A
        # split half carries only its own templates and evidence, so it really is shorter.
        out: list[tuple[Template, tuple[str, str] | None]] = []
        for t in batch.templates:
            mine = [
                p for p in batch.pairs if (metric_of[p[0]], metric_of[p[1]]) == (t.source, t.target)
            ]
            out += [(t, p) for p in mine] or [(t, None)]
        return out

    async def one(n: int, batch: Tier2Batch) -> list[tuple[list, Any]]:
        async def ask(sub: Sequence[tuple[Template, tuple[str, str] | None]]) -> Any:
            part = Tier2Batch(
                tuple(dict.fromkeys(t for t, _ in sub)), tuple(p for _, p in sub if p is not None)
            )
            idx = evidence_for(part)
            shown = normalize_text(
                " ".join(snippet(ctx.chunks[i].text, ctx.snippet_chars) for i in idx)
            )
            messages, model = render(part, part.pairs, idx)
            return await ctx.llm.acomplete(messages, model), shown, part, tuple(idx)

        names = ", ".join(f"{t.source}->{t.target}" for t in batch.templates)
        item = f"tier2 batch {n + 1} ({len(batch.pairs)} pairs; {names})"[:300]
        return await ask_split(
            units(batch), ask, item=item, ledger=ctx.ledger, failures=ctx.failures
        )

    results = await asyncio.gather(*(one(n, b) for n, b in enumerate(batches)))
    drafts: dict[tuple[str, str], EdgeDraft] = {}
    vocab = Vocabulary(spec, ctx.dropped)

    def offer(d: EdgeDraft) -> None:
        old = drafts.get((d.source, d.target))
        # Deterministic whatever the reply order: higher confidence, then smaller mechanism.
        if old is None or (-d.confidence, d.mechanism) < (-old.confidence, old.mechanism):
            drafts[(d.source, d.target)] = d

    for parts in results:  # batches are sorted, and so are their parts
        for _, got in parts:
            if got is None:
                continue
            reply, shown, part, idx = got
            pairs_of = {(t.source, t.target) for t in part.templates}
            allowed = set(part.pairs)
            judged = set()
            for j in reply.judgements:
                if (j.source, j.target) not in allowed:
                    ctx.dropped["tier2_pair_not_candidate"] += 1
                    continue
                judged.add((j.source, j.target))
                if j.keep:
                    offer(
                        EdgeDraft(
                            j.source,
                            j.target,
                            j.mechanism.strip(),
                            j.confidence,
                            j.evidence,
                            j.effect,
                            idx,
                        )
                    )
            if allowed - judged:
                ctx.dropped["tier2_candidates_not_judged"] += len(allowed - judged)
            for ne in reply.new_edges:
                if (ne.source.metric, ne.target.metric) not in pairs_of:
                    ctx.dropped["tier2_new_edge_not_a_template"] += 1
                    continue
                got_s = vocab.resolve(spec.metric(ne.source.metric), ne.source.entities, shown)
                got_t = vocab.resolve(spec.metric(ne.target.metric), ne.target.entities, shown)
                if got_s is None or got_t is None:
                    ctx.dropped["tier2_new_variable_outside_vocabulary"] += 1
                    continue
                (src, new_s), (tgt, new_t) = got_s, got_t
                if src.name == tgt.name:
                    ctx.dropped["tier2_self_loop"] += 1
                    continue
                vocab.admit(src, new_s)
                vocab.admit(tgt, new_t)
                offer(
                    EdgeDraft(
                        src.name,
                        tgt.name,
                        ne.mechanism.strip(),
                        ne.confidence,
                        ne.evidence,
                        ne.effect,
                        idx,
                    )
                )
    counts["new_variables"] = len(vocab.new_variables)
    counts["new_entities"] = sum(len(v) for v in vocab.new_entities.values())
    edges = [drafts[k] for k in sorted(drafts)]
    counts["decreasing_edges"] = sum(1 for e in edges if e.effect == "decreases")
    new_vars = [vocab.new_variables[k] for k in sorted(vocab.new_variables)]
    return edges, new_vars, counts, vocab.extended_spec()
