"""Stage 1 with an LLM: dimensions -> metrics -> variables -> causal seed relations, from corpus
chunks in batches, anchored by the outcome configuration; then the deterministic assembly.

Stage 1 reads the whole corpus when it fits the tier's chunk budget (``STAGE1_CHUNK_BUDGET``);
beyond that it reads a corpus-covering sample: the chunk vectors are clustered into as many
clusters as the budget and the chunk nearest each centre is read, so every region of the corpus
is represented (the report gives the coverage). Cost grows with the corpus up to the budget.
Each step's replies from all batches are merged into one vocabulary: near-duplicate metric names
(by embedding) become one, and the tier cap keeps the metrics proposed by the most batches, then
those nearest to the most chunks. The response models are built per call with ``Literal``
choices of the names already fixed (dimensions for signatures, metrics for variables, variable
names for relation endpoints), and ``hcg_core.spec.assemble`` validates again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from ..config import DEFAULT_CHUNKS_PER_CALL, DEFAULT_SPEC_SAMPLE_CHUNKS, LLMBuildConfig, tier_caps
from ..embedding import as_matrix
from ..errors import BuildError
from ..graph_build.evidence import snippet
from ..llm.accounting import Ledger, stage
from ..llm.budget import completion_budget, tokens_for
from ..llm.runner import Failures, StageTimer, ask_item, ask_split, gather_or_cancel
from ..llm.structured import capped_list, capped_text, named_choice
from ..ports import Embedder, StructuredLLM
from ..prompts import Prompt, get_prompt
from ..types import Chunk, DomainSpec, OutcomeConfig
from .assemble import (
    AssemblyReport,
    assemble_spec,
    batch_votes,
    first_proposals,
    merge_dimensions,
    merge_metrics,
    merge_relations,
    merge_variables,
    metric_name,
    unbind_unused,
)
from .merge import MetricDraft, metric_groups, unit_rows
from .review import (
    MAX_DOMAIN_CHARS,
    REVIEW_CALLS,
    apply_dimension_review,
    apply_metric_review,
    check_metrics_model,
    choice,
    dimensions_review_model,
    dimensions_text,
    metrics_review_model,
    metrics_text,
)

# Chunks Stage 1 reads at most, per tier; a larger corpus is covered by clustering.
STAGE1_CHUNK_BUDGET = {"XS": 96, "S": 192, "M": 384, "L": 768}
KMEANS_ITERATIONS = 8
SUPPORT_TOP_METRICS = 3  # a chunk supports the metrics among its 3 nearest
STAGE1_STEPS = ("dimensions", "metrics", "variables", "relations")


def stage1_budget(tier: str, sample_size: int | None = None) -> int:
    """Chunks Stage 1 reads at most: ``sample_size`` if given, else the tier's budget."""
    if sample_size is not None:
        return int(sample_size)
    tier_caps(tier)  # an unknown tier is a ConfigError here too
    return STAGE1_CHUNK_BUDGET.get(tier.upper(), max(STAGE1_CHUNK_BUDGET.values()))


def cover_sample(chunk_embeddings: np.ndarray, k: int) -> tuple[list[int], dict[str, Any]]:
    """Indices (corpus order) of ``k`` chunks covering the corpus, and the coverage figures.

    All chunks when there are at most ``k``; else k-means over the (unit) chunk vectors, seeded
    farthest-first from the chunk nearest the corpus mean (deterministic), and the chunk
    nearest each centre. ``mean_cosine_to_sample``: how close an average chunk is to the
    nearest chunk read.
    """
    x = np.asarray(chunk_embeddings, dtype=np.float32)
    n = len(x)
    if n <= k:
        info = {"chunks_shown": n, "clusters": n, "sampled": False, "mean_cosine_to_sample": 1.0}
        return list(range(n)), info
    centre = x.mean(axis=0)
    seeds = [int(np.argmax(x @ centre))]
    nearest = x @ x[seeds[0]]
    while len(seeds) < k:
        i = int(np.argmin(nearest))
        seeds.append(i)
        nearest = np.maximum(nearest, x @ x[i])
    centres = x[seeds].copy()
    for _ in range(KMEANS_ITERATIONS):
        assign = np.argmax(x @ centres.T, axis=1)
        for c in range(k):
            members = x[assign == c]
            if len(members):
                m = members.mean(axis=0)
                centres[c] = m / (np.linalg.norm(m) or 1.0)
    assign = np.argmax(x @ centres.T, axis=1)
    picked: set[int] = set()
    for c in range(k):
        members = np.flatnonzero(assign == c)
        if len(members):
            picked.add(int(members[np.argmax(x[members] @ centres[c])]))
    idx = sorted(picked)
    cosine = round(float((x @ x[idx].T).max(axis=1).mean()), 4)
    info = {"chunks_shown": len(idx), "clusters": k, "sampled": True}
    return idx, {**info, "mean_cosine_to_sample": cosine}


def excerpt(chunk: Chunk, chars: int) -> str:
    """A chunk as Stage 1 reads it: about ``chars`` characters, cut at sentence boundaries."""
    return snippet(chunk.text, chars) or chunk.text[:chars]


def excerpts(chunks: Sequence[Chunk], chars: int) -> str:
    return "\n\n".join(f"[{i + 1}] {excerpt(c, chars)}" for i, c in enumerate(chunks))


def spread_batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    """``ceil(len / size)`` batches, each taking every n-th item, so that every batch of a sample
    in corpus order spans the whole corpus (each reader's domain line sees all of it).

    >>> spread_batches(list(range(7)), 3)
    [[0, 3, 6], [1, 4], [2, 5]]
    """
    n = -(-len(items) // size) if items else 0
    return [list(items[i::n]) for i in range(n)]


# Completion budgets (tokens) per Stage 1 request, from the items it may list: the recorded real
# run's replies averaged about 40 tokens per entity-laden dimension line, 90 per metric, 45 per
# variable and 60 per relation; these leave about twice that.
REPLY_TOKENS_FIXED = 400
TOKENS_PER_DIMENSION = 300
TOKENS_PER_METRIC = 180
TOKENS_PER_VARIABLE = 90
TOKENS_PER_RELATION = 120
MAX_ENTITIES_PER_DIMENSION = 40  # entities one batch lists per dimension (``maxItems``)
MAX_VARIABLES_PER_BATCH = 80
MAX_DESCRIPTION_CHARS = 300  # a metric's or variable's description (``maxLength``)
MAX_MECHANISM_CHARS = 300
MAX_RELATIONS_PER_BATCH = 40  # a batch of 12 excerpts states more links than 30 (live readers)
MAX_INFERRED_OUTCOMES = 5
REVIEW_TOKENS = 4000  # a review lists groups of names: a few hundred tokens, room for 60 groups


def dimensions_model(cap: int, *, infer_domain: bool, infer_outcomes: bool) -> type[BaseModel]:
    """``DimensionsReply``: at most ``cap`` dimensions; with ``infer_domain`` also a one-line
    ``domain``, with ``infer_outcomes`` the ``outcomes`` the excerpts build toward."""
    item = create_model(
        "DimensionItem",
        name=(str, ...),
        description=(str, capped_text(MAX_DESCRIPTION_CHARS)),
        entities=(list[str], capped_list(MAX_ENTITIES_PER_DIMENSION)),
    )
    fields: dict[str, Any] = {"dimensions": (list[item], capped_list(cap))}
    if infer_domain:
        fields["domain"] = (str, capped_text(MAX_DOMAIN_CHARS))
    if infer_outcomes:
        fields["outcomes"] = (list[str], capped_list(MAX_INFERRED_OUTCOMES, required=False))
    return create_model("DimensionsReply", **fields)


def relations_model(variable_names: Sequence[str]) -> type[BaseModel]:
    """``RelationsReply`` whose endpoints may only be the given full variable names."""
    item = create_model(
        "RelationItem",
        source=(choice(variable_names), ...),
        target=(choice(variable_names), ...),
        mechanism=(str, capped_text(MAX_MECHANISM_CHARS)),
    )
    return create_model(
        "RelationsReply", relations=(list[item], capped_list(MAX_RELATIONS_PER_BATCH))
    )


def metrics_model(dimension_names: Sequence[str], cap: int = 0) -> type[BaseModel]:
    """``MetricsReply`` whose signatures may only use the given dimensions (``cap``: maxItems)."""
    item = create_model(
        "MetricItem",
        name=(str, ...),
        signature=(list[choice(dimension_names)], Field(default_factory=list)),
        description=(str, capped_text(MAX_DESCRIPTION_CHARS)),
        category=(str, "general"),
        role=(Literal["terminal", "outcome", "intermediate"], "intermediate"),
    )
    return create_model("MetricsReply", metrics=(list[item], capped_list(cap) if cap else ...))


def variables_model(
    metric_names: Sequence[str], slots: Mapping[str, Sequence[str]] | None = None
) -> type[BaseModel]:
    """``VariablesReply`` whose variables may only bind the given metrics; with ``slots``
    (dimension -> its entities), ``entities`` is an object with one field per dimension whose
    enum offers only that dimension's entities ("" when the metric has no such slot)."""
    fields: dict[str, Any] = {"metric": (choice(metric_names), ...)}
    if slots:
        choices = {d: (named_choice(["", *ents]), "") for d, ents in slots.items()}
        fields["entities"] = (create_model("EntitySlots", **choices), ...)
    else:
        fields["entities"] = (list[str], Field(default_factory=list))
    fields["description"] = (str, capped_text(MAX_DESCRIPTION_CHARS))
    item = create_model("VariableItem", **fields)
    return create_model(
        "VariablesReply", variables=(list[item], capped_list(MAX_VARIABLES_PER_BATCH))
    )


def variable_items(reply: Any, signatures: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """A ``VariablesReply``'s variables as merge input: each metric's entities in signature
    order, read from the slot of each of its dimensions (a missing slot leaves the variable
    short, and the merge drops it)."""
    out = []
    for v in reply.variables:
        raw = v.entities
        if isinstance(raw, list):
            ents = [str(e) for e in raw]
        else:
            got = raw.model_dump()
            ents = [str(got.get(d, "") or "") for d in signatures.get(v.metric, ())]
            ents = [e for e in ents if e]
        out.append({"metric": v.metric, "entities": ents, "description": v.description})
    return out


def _outcome_text(
    outcome: OutcomeConfig | None, *, choose: bool = True, inferred: Sequence[str] = ()
) -> str:
    if outcome is None:
        guess = "not given"
        if inferred:
            guess += f"; the excerpts suggest {', '.join(inferred)} (inferred, not confirmed)"
        if not choose:
            return guess
        return f"{guess}: tag the final outcomes 'terminal' and key endpoints 'outcome'"
    parts = []
    if outcome.outcomes:
        parts.append("outcome metrics: " + ", ".join(outcome.outcomes))
    if outcome.terminals:
        parts.append("terminal metrics: " + ", ".join(outcome.terminals))
    if outcome.description:
        parts.append(outcome.description)
    return "; ".join(parts) or "none"


def _words(name: str) -> str:
    return " ".join(re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)).lower() or name.lower()


def infer_domain(replies: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """The domain line and candidate outcomes the dimensions replies proposed: the domain most
    batches gave (ties: the first batch's), the outcomes most often named.

    >>> infer_domain([{"domain": "lakes", "outcomes": ["fish kills"]},
    ...               {"domain": "Lakes.", "outcomes": ["fish kills", "toxins"]}])
    ('lakes', ['fish kills', 'toxins'])
    """
    domains = _most_named(r.get("domain", "") or "" for r in replies)
    outcomes = _most_named(o for r in replies for o in r.get("outcomes", []) or [])
    return (domains[0] if domains else ""), outcomes[:MAX_INFERRED_OUTCOMES]


def _most_named(values: Iterable[Any]) -> list[str]:
    """The distinct lines (case aside, blanks collapsed, no final dot), most named first (ties:
    first named), each as first written."""
    found: dict[str, list[str]] = {}
    for value in values:
        line = " ".join(str(value).split()).rstrip(".")
        if line:
            found.setdefault(line.lower(), []).append(line)
    # A stable sort: ties keep the first-named order.
    return [found[k][0] for k in sorted(found, key=lambda k: -len(found[k]))]


@dataclass
class Stage1Calls:
    """Stage 1's calls: a step asks every batch of the sample; a review asks once. Beside them,
    what every step reads and writes: the outcome configuration given and the assembly report."""

    llm: StructuredLLM
    ledger: Ledger
    failures: Failures
    batches: Sequence[Sequence[Chunk]]
    excerpt_chars: int
    prompts: Mapping[str, Prompt] | None = None
    outcome: OutcomeConfig | None = None
    report: AssemblyReport = field(default_factory=AssemblyReport)

    async def step(
        self, name: str, model: type[BaseModel], tokens: int, **values: str
    ) -> list[tuple[str, Any]]:
        """(excerpt text, reply) per answered (sub-)batch of this step."""
        prompt = get_prompt(name, self.prompts)

        async def ask(sub: Sequence[Chunk]) -> Any:
            text = excerpts(sub, self.excerpt_chars)
            messages = prompt.render(model.__name__, excerpts=text, **values)
            with completion_budget(tokens):
                return await self.llm.acomplete(messages, model)

        parts = await gather_or_cancel(
            *(
                ask_split(
                    b, ask, item=f"{name}[batch {i}]", ledger=self.ledger, failures=self.failures
                )
                for i, b in enumerate(self.batches)
            )
        )
        return [
            (" ".join(excerpt(c, self.excerpt_chars) for c in sub), r)
            for p in parts
            for sub, r in p
            if r is not None
        ]

    async def review(self, name: str, model: type[BaseModel], tokens: int, **values: str) -> Any:
        """One review call over the merged vocabulary; None when it failed (counted)."""
        messages = get_prompt(name, self.prompts).render(model.__name__, **values)
        with completion_budget(tokens):
            return await ask_item(
                self.llm, messages, model, item=name, ledger=self.ledger, failures=self.failures
            )


def _items(replies: Sequence[tuple[str, Any]], field_name: str) -> list[list[dict[str, Any]]]:
    return [[x.model_dump() for x in getattr(r, field_name)] for _, r in replies]


async def agenerate_spec(
    chunks: Sequence[Chunk],
    llm: StructuredLLM,
    *,
    ledger: Ledger,
    failures: Failures,
    tier: str,
    chunk_embeddings: np.ndarray,
    embedder: Embedder,
    outcome: OutcomeConfig | None = None,
    config: LLMBuildConfig | None = None,
) -> tuple[DomainSpec, dict[str, Any]]:
    """Generate and assemble a spec; returns it with an assembly and coverage report.

    Makes ``4 * ceil(read / chunks_per_call)`` calls, ``read`` being every chunk up to the tier's
    budget (beyond it a clustered sample of ``chunk_embeddings``, one vector per chunk); all calls of a step run concurrently, and a batch too long for the model
    is split. Calls are charged to ledger stage ``stage1``. Without a ``domain`` (or an
    ``outcome``), the dimensions step also asks each batch for a one-line domain (and the
    outcomes the text builds toward); the most proposed are shown to the later steps and stored
    in the spec as ``inferred``, for the user to correct. ``config`` (an ``LLMBuildConfig``)
    gives ``domain``, ``spec_sample_chunks``, ``chunks_per_call``, ``excerpt_chars`` and
    ``prompts``.

    Raises:
        BuildError: when no usable dimension or metric came back (nothing to build on).
    """
    opts = config or LLMBuildConfig()
    caps = tier_caps(tier)
    budget = stage1_budget(tier, opts.spec_sample_chunks)
    idx, coverage = cover_sample(chunk_embeddings, budget)
    shown = [chunks[i] for i in idx]
    coverage["share_shown"] = round(len(shown) / max(1, len(chunks)), 4)
    batches = spread_batches(shown, opts.chunks_per_call)
    calls = Stage1Calls(llm, ledger, failures, batches, opts.excerpt_chars, opts.prompts, outcome)
    report = calls.report
    with stage("stage1"), StageTimer(ledger, "stage1"):
        dims, domain, inferred, inferred_outcomes = await _dimensions(
            calls, caps.max_dimensions, opts.domain
        )
        dom = domain or "unknown"
        metric_replies = await calls.step(
            "metrics",
            metrics_model([d.name for d in dims], caps.max_metrics),
            tokens_for(caps.max_metrics, TOKENS_PER_METRIC, REPLY_TOKENS_FIXED),
            domain=dom,
            outcome=_outcome_text(outcome, inferred=inferred_outcomes),
            dimensions=dimensions_text(dims),
            cap=str(caps.max_metrics),
        )
        metric_drafts, support = merge_metric_drafts(
            _items(metric_replies, "metrics"), embedder, chunk_embeddings, report
        )
        metrics, final_outcome = await curated_metrics(
            calls, metric_drafts, dims, caps.max_metrics, support, dom
        )
        if not metrics:
            raise BuildError("Stage 1 produced no metrics; see the failures, or pass --spec")
        if outcome is None and inferred_outcomes:
            note = "candidate outcomes inferred from the corpus: " + ", ".join(inferred_outcomes)
            final_outcome = replace(final_outcome, description=note)
            inferred.append("outcome")
        metrics, variables, relations = await _variables_and_relations(calls, dims, metrics, dom)
        spec = assemble_spec(dims, metrics, variables, relations, final_outcome, domain=domain)
        spec = replace(spec, inferred=tuple(inferred))
    planned = len(STAGE1_STEPS) * len(batches) + REVIEW_CALLS
    return spec, {
        "batches": len(batches),
        "calls_planned": planned,
        "items": planned,
        "domain_inferred": domain if "domain" in inferred else "",
        "outcomes_inferred": inferred_outcomes,
        **coverage,
        **report.as_dict(),
    }


async def _dimensions(
    calls: Stage1Calls, cap: int, domain: str
) -> tuple[Any, str, list[str], list[str]]:
    """The dimensions step, merged and reviewed: (dimensions, domain line, what was inferred,
    the inferred outcomes). Without a ``domain`` the step also asks for one, and the review
    writes it for the whole corpus."""
    outcome, report = calls.outcome, calls.report
    infer = not domain
    dim_replies = await calls.step(
        "dimensions",
        dimensions_model(cap, infer_domain=infer, infer_outcomes=infer and outcome is None),
        tokens_for(cap, TOKENS_PER_DIMENSION, REPLY_TOKENS_FIXED),
        domain=domain or "unknown: also give it in one line",
        outcome=_outcome_text(outcome, choose=False),
        cap=str(cap),
    )
    inferred_outcomes: list[str] = []
    if infer:
        domain, inferred_outcomes = infer_domain([r.model_dump() for _, r in dim_replies])
    inferred = ["domain"] if infer and domain else []
    dims = merge_dimensions(
        _items(dim_replies, "dimensions"), cap, report, texts=[text for text, _ in dim_replies]
    )
    if dims:
        # The review merges dimensions by meaning and writes the domain line for the whole
        # corpus ("" when none, or when the review failed: the deterministic merge stands).
        lines = [str(getattr(r, "domain", "") or "") for _, r in dim_replies]
        got = await calls.review(
            "review_dimensions",
            dimensions_review_model([d.name for d in dims], [e for d in dims for e in d.entities]),
            REVIEW_TOKENS,
            domains="\n".join(f"- {x}" for x in (lines if infer else [domain]) if x) or "(none)",
            dimensions=dimensions_text(dims),
        )
        if got is not None:
            dims, line = apply_dimension_review(dims, got, report)
            if infer and line:
                domain, inferred = line, ["domain"]
    if not dims:
        raise BuildError(
            "Stage 1 found no dimensions: the LLM failed or the corpus names no entities; "
            "see the failures, or pass --spec"
        )
    return dims, domain, inferred, inferred_outcomes


async def _variables_and_relations(
    calls: Stage1Calls, dims: Sequence[Any], metrics: Sequence[Any], dom: str
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """The variables step over the curated metrics, then the relations step over its variables,
    each merged; the metrics come back with the signature of any that bound no variable
    dropped (``unbind_unused``)."""
    report = calls.report
    used = {d for m in metrics for d in m.signature}
    var_replies = await calls.step(
        "variables",
        variables_model(
            [m.name for m in metrics], {d.name: d.entities for d in dims if d.name in used}
        ),
        tokens_for(MAX_VARIABLES_PER_BATCH, TOKENS_PER_VARIABLE, REPLY_TOKENS_FIXED),
        domain=dom,
        dimensions=dimensions_text([d for d in dims if d.name in used]),
        metrics="\n".join(f"- {m.name}({', '.join(m.signature)})" for m in metrics) or "(none)",
    )
    signatures = {m.name: m.signature for m in metrics}
    variables = merge_variables(
        [variable_items(r, signatures) for _, r in var_replies], metrics, dims, report
    )
    metrics, variables = unbind_unused(metrics, variables, report)
    rel_replies = await calls.step(
        "relations",
        relations_model([v.name for v in variables]),
        tokens_for(MAX_RELATIONS_PER_BATCH, TOKENS_PER_RELATION, REPLY_TOKENS_FIXED),
        domain=dom,
        variables="\n".join(f"- {v.name}" for v in variables) or "(none)",
    )
    relations = merge_relations(_items(rel_replies, "relations"), variables, metrics, report)
    return metrics, variables, relations


async def curated_metrics(
    calls: Stage1Calls,
    drafts: list[list[dict[str, Any]]],
    dims: Sequence[Any],
    cap: int,
    support: Mapping[str, float],
    domain: str,
) -> tuple[tuple[Any, ...], OutcomeConfig]:
    """The capped metrics: the metrics review merges by meaning and names the causes (kept
    first), the cap keeps the best, and the check call merges duplicates among the kept ones
    (the slot it frees goes to the next metric of the ranking)."""
    outcome, report = calls.outcome, calls.report
    listed, names = metrics_text(drafts)
    causes: set[str] = set()
    if names:
        got = await calls.review(
            "review_metrics",
            metrics_review_model(names, cap),
            REVIEW_TOKENS,
            domain=domain,
            metrics=listed,
            cap=str(cap),
        )
        if got is not None:
            drafts, causes = apply_metric_review(drafts, got, report)
    metrics, final = merge_metrics(
        drafts, dims, cap, outcome, report, support=support, causes=causes
    )
    if len(metrics) < 2:
        return metrics, final
    kept = {m.name for m in metrics}
    kept_drafts = [[i for i in d if metric_name(i.get("name", "")) in kept] for d in drafts]
    got = await calls.review(
        "check_metrics",
        check_metrics_model([m.name for m in metrics]),
        REVIEW_TOKENS,
        domain=domain,
        metrics=metrics_text(kept_drafts)[0],
    )
    if got is None or not got.same_quantity:
        return metrics, final
    drafts, _ = apply_metric_review(drafts, got, report)
    # The second merge's own counts would count the first one's again: a scratch report.
    return merge_metrics(
        drafts, dims, cap, outcome, AssemblyReport(), support=support, causes=causes
    )


def merge_metric_drafts(
    drafts: list[list[dict[str, Any]]],
    embedder: Embedder,
    chunk_embeddings: np.ndarray | None,
    report: AssemblyReport,
) -> tuple[list[list[dict[str, Any]]], dict[str, float]]:
    """Rename the metrics that measure one quantity to one name (``merge.metric_groups``: names
    and definitions), and measure each metric's corpus support (the share of chunks that have it
    among their ``SUPPORT_TOP_METRICS`` nearest metrics)."""
    first = first_proposals(drafts).items()
    described = {n: str(item.get("description", "") or "") for n, item in first}
    names = list(described)
    if not names:
        return drafts, {}
    votes = batch_votes(drafts, lambda i: metric_name(i.get("name", "")))

    def embed(texts: list[str]) -> np.ndarray:
        return as_matrix(embedder.embed_documents(texts), len(texts), who="embedder")

    canonical = metric_groups([MetricDraft(n, described[n]) for n in names], embed, votes)
    merged = sum(1 for a, b in canonical.items() if a != b)
    if merged:
        report.repaired["metric_near_duplicate_merged"] += merged
    renamed = [
        [
            {**i, "name": canonical.get(metric_name(i.get("name", "")), i.get("name", ""))}
            for i in draft
        ]
        for draft in drafts
    ]
    support: dict[str, float] = {}
    if chunk_embeddings is not None and len(chunk_embeddings):
        keep = sorted(set(canonical.values()), key=names.index)
        vecs = unit_rows(embed([f"{_words(n)}: {described[n]}" for n in keep]))
        top = max(1, min(SUPPORT_TOP_METRICS, len(keep) // 4))  # few metrics: the nearest one
        counts = np.zeros(len(keep))
        for lo in range(0, len(chunk_embeddings), 1024):
            sims = np.asarray(chunk_embeddings[lo : lo + 1024], dtype=np.float32) @ vecs.T
            best = np.argpartition(-sims, top - 1, axis=1)[:, :top]
            np.add.at(counts, best.ravel(), 1)
        support = {
            n: round(float(c) / len(chunk_embeddings), 4) for n, c in zip(keep, counts, strict=True)
        }
    return renamed, support


def stage1_calls(
    n_chunks: int,
    *,
    tier: str = "M",
    sample_size: int | None = DEFAULT_SPEC_SAMPLE_CHUNKS,
    chunks_per_call: int = DEFAULT_CHUNKS_PER_CALL,
) -> int:
    """Exact number of Stage 1 items (calls without retries, re-asks, splits or cache hits)."""
    n = min(stage1_budget(tier, sample_size), n_chunks)
    return len(STAGE1_STEPS) * -(-n // chunks_per_call) + (REVIEW_CALLS if n else 0)
