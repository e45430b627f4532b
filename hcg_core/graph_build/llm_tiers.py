"""Stage 2 with an LLM: Tier 1 metric templates and Tier 2 variable edges.

Tier 1 asks one call per non-terminal source metric, judging all candidate targets together:
each candidate comes with one evidence line, the corpus sentence nearest to that target's name
and description (and the source's), no line shown twice; the spec's seed relations are shown as
what an earlier step proposed, not as facts. Targets a reply leaves out are re-asked once.

Tier 2 judges only the candidate pairs a text could link (``tie``): variables that bind the
same entity of a dimension they share (or one the other's stage or subtype), named together by
some chunk; a variable without entities is found by a topic word of its metric's name; and tied
enough (their association >= ``MIN_ASSOCIATION``, ``candidate_score``). Each
template sends its best supported pairs, each variable in one pair at most (``spread_pairs``: not
a variable crossed with every entity named beside it), at most its share of the tier's candidate
budget, and goes to one call whole, so its metrics and excerpts are sent once; whole
templates are packed into calls of at most ``max_batch_pairs`` pairs, grouped by entity;
each call is shown the sentences nearest to its own templates and variables, and the model may
add variables (and entities it can quote from those sentences) for the templates' metrics. The
vocabulary grows, validated against dimensions and metrics, counted and capped. Earlier replies
are never shown as facts: templates carry no rationale (an earlier reply's reasons, citing
evidence numbers of another prompt, would read as established), only this call's excerpts are
numbered evidence. Response models carry ``Literal`` choices of the allowed names (a judgement
is a candidate's number; a rejection is the number alone) and ``maxItems``; replies are pruned
again here and every pruned item is counted by reason. A batch whose request is too long, or
whose reply was cut at the token limit, is split in two.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from ..config import LLMBuildConfig
from ..corpus import word_set
from ..llm.accounting import Ledger
from ..llm.budget import completion_budget, tokens_for
from ..llm.runner import Failures, ask_split, gather_or_cancel
from ..llm.structured import capped_list, capped_text, named_choice
from ..ports import StructuredLLM
from ..prompts import Prompt, get_prompt
from ..spec.assemble import ENTITY_CUTOFF, entity_name, entity_ok, match_name
from ..spec.merge import QUANTITY_SYNONYMS, name_words
from ..spec.review import choice
from ..types import Chunk, Dimension, DomainSpec, Metric, Variable
from .evidence import EntityMentions, SentencePool, normalize_text, snippet

SUMMARY_CHARS = 220  # the evidence line of one candidate metric in Tier 1
LINE_CHUNKS = 3  # chunks searched for a candidate's evidence line
SOURCE_WEIGHT = 0.5  # weight of the source metric in the query for a target's evidence line
NAME_WORD_BONUS = 0.15  # added to a sentence's cosine per share of the target's name words in it
MAX_TIER2_SNIPPETS = 8  # snippets shown to one packed Tier 2 call
MAX_EXCERPT_OVERLAP = 0.6  # an excerpt sharing this much of its words with a shown one is dropped
# Candidates one template may send (its most associated pairs): the tier's candidate budget shared
# by the templates, at most MAX_TEMPLATE_PAIRS. A template is never split over calls, so its
# metrics and excerpts are sent once. On the recorded medical XS run (244 templates) today's rule
# finds 1,451 candidates; the XS budget sends 8 per template, 800 in all (29 calls;
# benchmarks/llm_estimate.py --recording). The live builds sent 789 to 1,048 (docs/llm.md).
MAX_TEMPLATE_PAIRS = 24
TIER2_CANDIDATE_BUDGET = {"XS": 2000, "S": 4000, "M": 8000, "L": 16000}
FREE_PAIR_SUPPORT = 1  # two variables that name nothing to look for pair (weakly)
MIN_ASSOCIATION = 0.25  # a pair less associated than this is not asked (``candidate_score``)
FREE_PAIR_ASSOCIATION = MIN_ASSOCIATION  # two variables that name nothing to look for
# Pairs of one template a variable may take part in. On the four recorded whole-corpus live builds
# (medical twice, HolisQA psychology twice) the readers kept 46%, 41%, 38% and 39% of what they
# judged; of the pairs this rule (with MIN_ASSOCIATION, best supported first) would still send,
# 66%, 63%, 67% and 62% (``benchmarks/llm_keep.py --rule``).
PAIRS_PER_VARIABLE = 1
OPEN_TEMPLATE_WEIGHT = 10  # a template without candidates takes this many pair slots in a batch
NEW_VARIABLES_PER_METRIC = 12  # cap on variables Tier 2 may add to one metric
NEW_ENTITIES_PER_DIMENSION = 25  # cap on entities Tier 2 may add to one dimension
MAX_NEW_EDGES = 8  # new edges one Tier 2 reply may add (``maxItems``)
EFFECTS = ("increases", "decreases", "not stated")
NOT_STATED = "not stated"  # stored as "" (CausalEdge.effect: the sign is not known)
MAX_MECHANISM_CHARS = 300
MAX_RATIONALE_CHARS = 300
# Completion budgets (tokens): the recorded real run used about 40 tokens per Tier 1 rationale
# and 80 per fully spelled Tier 2 judgement; a rejection is now a number (about 12).
TIER1_FIXED_TOKENS = 300
TIER1_TOKENS_PER_TARGET = 80
TIER2_FIXED_TOKENS = 400
TIER2_TOKENS_PER_PAIR = 110
TIER2_TOKENS_PER_NEW_EDGE = 150


def edge_id(source: str, target: str) -> str:
    """A stable id from the endpoints, so an edit elsewhere in the spec never renames an edge."""
    return "e-" + hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:12]


def tier1_model(source: str, candidates: Sequence[str]) -> type[BaseModel]:
    """``Tier1Reply``: the causal targets with a rationale, the others by name only."""
    n = max(1, len(candidates))
    link = create_model(
        "Tier1Link",
        target=(choice(candidates), ...),
        rationale=(str, capped_text(MAX_RATIONALE_CHARS)),
    )
    return create_model(
        "Tier1Reply",
        source=(choice([source]), source),
        causal=(list[link], capped_list(n)),
        not_causal=(list[choice(candidates)], capped_list(n)),
    )


def tier2_model(
    source_metrics: Sequence[str],
    target_metrics: Sequence[str],
    pairs: int,
    slots: Mapping[str, Sequence[str]],
) -> type[BaseModel]:
    """``Tier2Reply``: kept candidates with effect, mechanism, confidence and quote; rejected
    ones as a list of numbers; new edges whose endpoints fill one field per dimension (``slots``:
    dimension -> its known entities, "" for a slot the metric does not have) and name an entity
    no list holds only in ``new_entities``."""
    fields: dict[str, Any] = {}
    if pairs:
        number = choice(list(range(1, pairs + 1)))
        kept = create_model(
            "Tier2Kept",
            candidate=(number, ...),
            effect=(Literal[EFFECTS], "increases"),
            mechanism=(str, capped_text(MAX_MECHANISM_CHARS)),
            confidence=(float, Field(0.5, ge=0.0, le=1.0)),
            evidence=(str, ""),  # no maxLength: the linker matches the first 200 characters
        )
        fields["kept"] = (list[kept], capped_list(pairs))
        fields["rejected"] = (list[number], capped_list(pairs))
    slot_model = create_model(
        "EndpointEntities", **{d: (named_choice(["", *ents]), "") for d, ents in slots.items()}
    )

    def endpoint(name: str, metrics: Sequence[str]) -> type[BaseModel]:
        return create_model(
            name,
            metric=(choice(metrics), ...),
            entities=(slot_model, ...),
            new_entities=(list[str], capped_list(2, required=False)),
        )

    new_edge = create_model(
        "Tier2NewEdge",
        source=(endpoint("NewSource", source_metrics), ...),
        target=(endpoint("NewTarget", target_metrics), ...),
        effect=(Literal[EFFECTS], "increases"),
        mechanism=(str, capped_text(MAX_MECHANISM_CHARS)),
        confidence=(float, Field(0.5, ge=0.0, le=1.0)),
        evidence=(str, ""),
    )
    fields["new_edges"] = (list[new_edge], capped_list(MAX_NEW_EDGES, required=False))
    return create_model("Tier2Reply", **fields)


def slot_entities(metric: Metric, filled: Any) -> list[str]:
    """The entities an endpoint's per-dimension fields name, in the metric's signature order."""
    got = filled.model_dump() if hasattr(filled, "model_dump") else dict(filled or {})
    return [str(got[d]) for d in metric.signature if got.get(d)]


def _draft(source: str, target: str, judged: Any) -> EdgeDraft:
    """A reply's kept candidate or new edge as a draft; its effect "not stated" is the format's
    "" (``CausalEdge.effect``: the sign is not known)."""
    effect = "" if judged.effect == NOT_STATED else judged.effect
    return EdgeDraft(
        source, target, judged.mechanism.strip(), judged.confidence, judged.evidence, effect
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


def numbered(lines: Sequence[str]) -> str:
    return "\n".join(f"[{n + 1}] {line}" for n, line in enumerate(lines)) or "(none)"


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) or 1.0)


@dataclass(frozen=True)
class Template:
    """A Tier 1 metric template (E_m): the source metric influences the target metric. Tier 1's
    reasons are not kept: Tier 2 must not read an earlier reply as established."""

    source: str
    target: str


@dataclass(frozen=True)
class EdgeDraft:
    source: str
    target: str
    mechanism: str
    confidence: float
    quote: str
    effect: str = "increases"  # or "decreases", or "" (not stated)


@dataclass
class Stage2Context:
    """What both tiers need: the spec, vectors for evidence search, and the shared counters."""

    spec: DomainSpec
    chunks: Sequence[Chunk]
    chunk_embeddings: np.ndarray
    metric_vectors: Mapping[str, np.ndarray]
    llm: StructuredLLM
    ledger: Ledger
    failures: Failures
    dropped: Counter[str]
    sentences: SentencePool
    opts: LLMBuildConfig = field(default_factory=LLMBuildConfig)  # prompts, snippets
    variable_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    mentions: EntityMentions = field(init=False)

    def __post_init__(self) -> None:
        self.mentions = EntityMentions(self.chunks)

    @property
    def domain(self) -> str:
        return self.spec.domain or "not given"

    def excerpt(self, i: int, query: np.ndarray) -> str:
        """Chunk ``i`` as a prompt excerpt: around its sentence nearest to ``query``."""
        return self.sentences.window(i, query, self.opts.snippet_chars)


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


def distinct_excerpts(texts: Sequence[str], max_overlap: float = MAX_EXCERPT_OVERLAP) -> list[str]:
    """The excerpts in order, without one whose words are mostly (``max_overlap`` of the smaller
    word set) those of an excerpt already kept: overlapping chunks of one passage read as the
    same excerpt twice (readers of the live builds saw one paragraph three times in a prompt).

    >>> distinct_excerpts(["Smoking raises the risk of lung cancer.",
    ...                    "Smoking raises the risk of lung cancer a lot.", "Radon too."])
    ['Smoking raises the risk of lung cancer.', 'Radon too.']
    """
    kept: list[tuple[str, set[str]]] = []
    for t in texts:
        words = set(normalize_text(t).split())
        if not words or any(
            len(words & w) >= max_overlap * min(len(words), len(w)) for _, w in kept
        ):
            continue
        kept.append((t, words))
    return [t for t, _ in kept]


def _key(text: str) -> str:
    return normalize_text(text)[:160]


def evidence_lines(
    ctx: Stage2Context, source: Metric, targets: Sequence[Metric], taken: set[str]
) -> dict[str, str]:
    """One evidence line per target: the sentence nearest to the target's name and description
    (and, at ``SOURCE_WEIGHT``, the source's) among the chunks nearest to that query, sentences
    naming the target's words favoured; a line already in the prompt (``taken``, updated) is
    never repeated, the next best is shown instead, or none."""
    out: dict[str, str] = {}
    src = ctx.metric_vectors[source.name]
    for t in targets:
        query = _unit(ctx.metric_vectors[t.name] + SOURCE_WEIGHT * src)
        idx = top_chunks(query, ctx.chunk_embeddings, LINE_CHUNKS)
        words = set(name_words(t.name))

        def score(sentence: str, cosine: float, words: set[str] = words) -> float:
            said = set(name_words(sentence.replace("-", " ")))
            return cosine + NAME_WORD_BONUS * len(words & said) / max(1, len(words))

        out[t.name] = ""
        for _, i, k in ctx.sentences.best(query, idx, score):
            line = snippet(ctx.sentences.sentences(i)[k], SUMMARY_CHARS)
            if _key(line) not in taken:
                taken.add(_key(line))
                out[t.name] = line
                break
    return out


async def run_tier1(ctx: Stage2Context) -> list[Template]:
    """Metric-level templates, sorted by (source, target)."""
    prompt = get_prompt("tier1", ctx.opts.prompts)
    seeds = seed_templates(ctx.spec)

    async def judge(
        source: Metric, cands: Sequence[Metric], item: str
    ) -> tuple[dict[str, bool], bool]:
        """target -> whether it was judged causal, and whether an item failed."""
        src_vec = ctx.metric_vectors[source.name]
        idx = top_chunks(src_vec, ctx.chunk_embeddings, ctx.opts.snippets)
        shown = distinct_excerpts([ctx.excerpt(i, src_vec) for i in idx])

        async def ask(sub: Sequence[Metric]) -> Any:
            model = tier1_model(source.name, [c.name for c in sub])
            lines = evidence_lines(ctx, source, sub, {_key(s) for s in shown})
            candidates = [
                f"- {metric_text(c)}"
                + (f"\n  evidence: {lines[c.name]}" if lines.get(c.name) else "")
                for c in sub
            ]
            messages = prompt.render(
                model.__name__,
                domain=ctx.domain,
                source=metric_text(source).split(":")[0],
                source_description=source.description or "(no description)",
                evidence=numbered(shown),
                candidates="\n".join(candidates),
                seeds="\n".join(f"- {source.name} -> {t}" for t in seeds.get(source.name, ()))
                or "(none)",
            )
            with completion_budget(
                tokens_for(len(sub), TIER1_TOKENS_PER_TARGET, TIER1_FIXED_TOKENS)
            ):
                return await ctx.llm.acomplete(messages, model)

        parts = await ask_split(
            list(cands), ask, item=item, ledger=ctx.ledger, failures=ctx.failures
        )
        links: dict[str, bool] = {}
        for sub, reply in parts:
            if reply is None:
                continue
            allowed = {c.name for c in sub}
            judged = [(link.target, True) for link in reply.causal]
            judged += [(t, False) for t in reply.not_causal]
            for target, causal in judged:
                if target not in allowed:  # second enforcement (a lenient server)
                    ctx.dropped["tier1_target_outside_vocabulary"] += 1
                else:
                    links.setdefault(target, causal)
        return links, any(r is None for _, r in parts)

    async def one(source: Metric, cands: list[Metric]) -> list[Template]:
        links, failed = await judge(source, cands, f"tier1 {source.name}")
        missing = [c for c in cands if c.name not in links]
        if missing and links and not failed:
            # Coverage check: the prompt asks for EVERY target; ask again for the ones left out.
            ctx.dropped["tier1_targets_missing_reasked"] += len(missing)
            again, _ = await judge(source, missing, f"tier1 {source.name} (missing targets)")
            links.update(again)
            never = sum(1 for c in missing if c.name not in links)
            if never:
                ctx.dropped["tier1_targets_never_judged"] += never
        return [Template(source.name, t) for t in sorted(links) if links[t]]

    results = await gather_or_cancel(*(one(s, c) for s, c in tier1_sources(ctx.spec)))
    return sorted((t for r in results for t in r), key=lambda t: (t.source, t.target))


# -- Tier 2 ---------------------------------------------------------------------------------------


def pairs_per_template(tier: str, templates: int) -> int:
    """How many candidates each template may send: the tier's budget over the templates.

    >>> pairs_per_template("XS", 244), pairs_per_template("XS", 10)
    (8, 24)
    """
    budget = TIER2_CANDIDATE_BUDGET.get(tier.upper(), max(TIER2_CANDIDATE_BUDGET.values()))
    return max(1, min(MAX_TEMPLATE_PAIRS, budget // max(1, templates)))


def _bound(spec: DomainSpec, v: Variable) -> dict[str, str]:
    """dimension -> entity of a variable (its metric's signature, in order)."""
    return dict(zip(spec.metric(v.metric).signature, v.entities, strict=False))


def _same_or_parent(dim: Dimension, a: str, b: str) -> bool:
    return a == b or dim.parent_of(a) == b or dim.parent_of(b) == a


# Words of a metric's name that say what is measured, not which thing: a variable without
# entities is found in a chunk by its metric's other words (``BrainFunctionImpairment``: brain).
GENERIC_METRIC_WORDS = frozenset(w for group in QUANTITY_SYNONYMS for w in group) | word_set("""
    presence status score receipt received response time success change outcome overall total
    function impairment value index
""")


def topic_words(metric: str) -> tuple[str, ...]:
    """The words of a metric's name that name its topic (``GENERIC_METRIC_WORDS`` left out).

    >>> topic_words("BrainFunctionImpairment"), topic_words("CancerRisk")
    (('brain',), ('cancer',))
    """
    return tuple(w for w in name_words(metric) if w not in GENERIC_METRIC_WORDS and len(w) > 2)


def tie(
    spec: DomainSpec, mentions: EntityMentions, source: Variable, target: Variable
) -> tuple[int, float]:
    """(support, association) of a pair of variables; (0, 0.0) when it is not a candidate.

    The support: how many chunks could state a link between the two, those that name both;
    two variables that name nothing to look for pair weakly (``FREE_PAIR_SUPPORT``, at
    ``FREE_PAIR_ASSOCIATION``). The association, in [0, 1]: the support over the chunks naming
    the rarer of the two. A pair whose rarer side is always named with the other (one cancer and
    its own symptom) scores 1; a common entity met once with another (a cancer and "skin" in a
    list) scores near 0. Tier 2 sends a template's most associated pairs first.

    Per variable, the chunks that name it: every entity it binds; without entities, a topic word
    of its metric; else no constraint. Two variables that bind different entities of a dimension
    they share are different things (two cancers), never paired, unless one is the other's stage
    or subtype: then naming the stage or subtype names both, and the parent entity is no
    constraint.
    """
    s, t = _bound(spec, source), _bound(spec, target)
    dims = {d.name: d for d in spec.dimensions}
    implied: set[str] = set()
    for d in s.keys() & t.keys() & dims.keys():
        if not _same_or_parent(dims[d], s[d], t[d]):
            return 0, 0.0
        if s[d] != t[d]:
            implied.add(s[d] if dims[d].parent_of(t[d]) == s[d] else t[d])

    def named(v: Variable) -> frozenset[int] | None:
        ents = [e for e in v.entities if e not in implied]
        if ents:
            return frozenset.intersection(*(mentions.chunks_naming(e) for e in ents))
        words = topic_words(v.metric) if not v.entities else ()
        return frozenset().union(*(mentions.chunks_naming(w) for w in words)) if words else None

    sets = [x for x in (named(source), named(target)) if x is not None]
    if not sets:
        return FREE_PAIR_SUPPORT, FREE_PAIR_ASSOCIATION
    both = len(frozenset.intersection(*sets))
    return both, (both / min(len(x) for x in sets) if both else 0.0)


def candidate_score(
    spec: DomainSpec, mentions: EntityMentions, source: Variable, target: Variable
) -> float:
    """How strongly Tier 2 should ask about a pair: its support plus its association (``tie``)
    when the association reaches ``MIN_ASSOCIATION``, else 0 (not a Tier 2 candidate). A
    template sends its pairs in this order (the most chunks first, then the tightest tie), each
    variable in at most ``PAIRS_PER_VARIABLE`` of them (``tier2_batches``)."""
    chunks, score = tie(spec, mentions, source, target)
    return chunks + score if score >= MIN_ASSOCIATION else 0.0


@dataclass(frozen=True)
class Tier2Batch:
    """One Tier 2 call: its templates, and the candidate pairs (of those templates) it judges."""

    templates: tuple[Template, ...]
    pairs: tuple[tuple[str, str], ...]


def template_pairs(template: Template, variables: Sequence[Variable]) -> list[tuple[str, str]]:
    """The template's proposed pairs: every source variable with every target variable, sorted
    (no self-loops). ``tier2_batches`` keeps those a text could link."""
    vs = sorted(v.name for v in variables if v.metric == template.source)
    vt = sorted(v.name for v in variables if v.metric == template.target)
    return [(s, t) for s in vs for t in vt if s != t]


def rank_pairs(
    pairs: Sequence[tuple[str, str]], score: Callable[[str, str], float | bool]
) -> list[tuple[str, str]]:
    """The pairs ``score`` keeps (above 0), the best first, ties by name."""
    scored = [(float(score(a, b)), (a, b)) for a, b in pairs]
    return [p for _, p in sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))]


def spread_pairs(
    ranked: Sequence[tuple[str, str]], cap: int, sent: Set[tuple[str, str]] = frozenset()
) -> list[tuple[str, str]]:
    """The first ``cap`` of a template's ranked pairs in which no variable takes part more than
    ``PAIRS_PER_VARIABLE`` times: a variable is not crossed with every entity the corpus names
    beside it (the live builds' readers rejected most such pairs). A pair whose reverse is in
    ``sent`` (asked by an earlier template) or already chosen is left out: one question per
    pair of variables, so a reply cannot keep both directions (a two-node cycle) and no call is
    spent asking the same thing twice.

    >>> spread_pairs([("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")], 24)
    [('a', 'x'), ('b', 'y')]
    >>> spread_pairs([("a", "x"), ("x", "a"), ("b", "y")], 24, {("y", "b")})
    [('a', 'x')]
    """
    used: Counter[str] = Counter()
    out: list[tuple[str, str]] = []
    for s, t in ranked:
        if len(out) == cap:
            break
        if (t, s) in sent or (t, s) in out:
            continue
        if used[s] < PAIRS_PER_VARIABLE and used[t] < PAIRS_PER_VARIABLE:
            used[s] += 1
            used[t] += 1
            out.append((s, t))
    return out


def tier2_batches(
    templates: Sequence[Template],
    variables: Sequence[Variable],
    max_pairs: int,
    keep: Callable[[Variable, Variable], float | bool] | None = None,
    *,
    per_template: int = MAX_TEMPLATE_PAIRS,
) -> tuple[list[Tier2Batch], dict[str, int]]:
    """Pack the templates' candidates into batches of at most ``max_pairs`` pairs, and count them.

    ``keep(source, target)`` scores a proposed pair (``candidate_score``: 0 or False drops it);
    a template sends its best scored pairs, each variable in at most ``PAIRS_PER_VARIABLE`` of
    them (``spread_pairs``), ``per_template`` at most (and ``max_pairs``), so it goes
    to one batch whole: its metrics and excerpts are sent once. A template left without
    candidates (its metrics have no variables yet, or none the rule keeps) takes
    ``OPEN_TEMPLATE_WEIGHT`` slots, to be populated. Counts: ``candidates_proposed``,
    ``candidates`` (sent), ``candidates_over_template_cap`` (kept by the rule, not sent: the cap or
    the spread) and ``templates_without_candidates``.
    """
    by_name = {v.name: v for v in variables}
    cap = max(1, min(per_template, max_pairs))
    chosen: list[tuple[Template, list[tuple[str, str]]]] = []
    counts = {
        "candidates_proposed": 0,
        "candidates": 0,
        "candidates_over_template_cap": 0,
        "templates_without_candidates": 0,
    }
    sent: set[tuple[str, str]] = set()  # every template's pairs so far: one direction per pair
    for t in templates:
        proposed = template_pairs(t, variables)
        ranked = rank_pairs(proposed, lambda a, b: keep(by_name[a], by_name[b]) if keep else 1.0)
        pairs = spread_pairs(ranked, cap, sent)
        sent.update(pairs)
        counts["candidates_proposed"] += len(proposed)
        counts["candidates"] += len(pairs)
        counts["candidates_over_template_cap"] += len(ranked) - len(pairs)
        counts["templates_without_candidates"] += not pairs
        pairs.sort(key=lambda p: (by_name[p[0]].entities, by_name[p[1]].entities, p))
        chosen.append((t, pairs))
    batches = [
        Tier2Batch(tuple(chosen[i][0] for i in g), tuple(p for i in g for p in chosen[i][1]))
        for g in packed([len(pairs) for _, pairs in chosen], max_pairs)
    ]
    return batches, counts


def packed(weights: Sequence[int], max_pairs: int) -> list[list[int]]:
    """Templates of these candidate counts (0: a template to populate, which takes
    ``OPEN_TEMPLATE_WEIGHT`` slots) packed in order into calls of at most ``max_pairs`` slots:
    the indices per call. A template is never split.

    >>> packed([3, 0, 4, 2], 12)  # the open template takes 10 slots: not with the 3
    [[0], [1], [2, 3]]
    """
    groups: list[list[int]] = []
    load = 0
    for i, w in enumerate(weights):
        w = min(w, max_pairs) if w else min(OPEN_TEMPLATE_WEIGHT, max_pairs)
        if not groups or load + w > max_pairs:
            groups.append([])
            load = 0
        groups[-1].append(i)
        load += w
    return groups


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
        self, metric: Metric, known: Sequence[str], new: Sequence[str], shown: str
    ) -> tuple[Variable, list[tuple[str, str]]] | None:
        """The variable of ``metric`` binding ``known`` entities (each placed on the signature
        dimension that holds it) and ``new`` ones (the remaining dimensions, in order), and the
        new (dimension, entity) pairs it needs; or None (the reason is counted). Changes
        nothing; ``admit`` does.

        A new entity is admitted when the text shown to the call contains it (grounded) and the
        dimension's cap allows; one that is an existing entity after all (fuzzy-matched) is that
        entity.
        """
        if len(known) + len(new) != len(metric.signature):
            return self._refuse("tier2_new_variable_wrong_arity")
        placed: dict[str, str] = {}
        for e in known:
            dim = next(
                (d for d in metric.signature if d not in placed and e in self.entities(d)), None
            )
            if dim is None:
                return self._refuse("tier2_new_variable_entity_not_of_signature")
            placed[dim] = e
        fresh: list[tuple[str, str]] = []
        rest = iter(new)
        for dim in metric.signature:
            if dim in placed:
                continue
            name = entity_name(next(rest))
            hit, _ = match_name(name, self.entities(dim), ENTITY_CUTOFF)
            if hit is not None:
                placed[dim] = hit
            elif not entity_ok(name) or normalize_text(name) not in shown:
                return self._refuse("tier2_new_entity_not_in_shown_text")
            elif len(self.new_entities.get(dim, ())) >= NEW_ENTITIES_PER_DIMENSION:
                return self._refuse("tier2_new_entity_over_cap")
            else:
                placed[dim] = name
                fresh.append((dim, name))
        v = Variable(metric.name, tuple(placed[d] for d in metric.signature))
        unseen = v.name not in self.known and v.name not in self.new_variables
        if unseen and self.per_metric[metric.name] >= NEW_VARIABLES_PER_METRIC:
            return self._refuse("tier2_new_variable_over_cap")
        return v, fresh

    def _refuse(self, reason: str) -> None:
        """Count why ``resolve`` refused a variable (its None)."""
        self.dropped[reason] += 1

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
        dims = tuple(
            replace(d, entities=(*d.entities, *self.new_entities.get(d.name, ())))
            for d in self.spec.dimensions
        )
        return replace(self.spec, dimensions=dims)


_Unit = tuple[Template, tuple[str, str] | None]  # a candidate with its template, or one to populate


@dataclass
class Tier2Call:
    """How one Tier 2 call is put together: its excerpts, its prompt and its response model."""

    ctx: Stage2Context
    prompt: Prompt

    def __post_init__(self) -> None:
        self.spec = self.ctx.spec
        self.by_name = {v.name: v for v in self.spec.variables}

    def evidence(self, batch: Tier2Batch) -> list[tuple[int, np.ndarray]]:
        """(chunk index, the query it was chosen for): per template, its two metrics plus the
        variables this batch judges for it; chunks naming the batch's entities first."""
        ctx, mentions = self.ctx, self.ctx.mentions
        chosen: dict[int, np.ndarray] = {}
        names = {n for p in batch.pairs for n in p}
        entities = {e for n in names for e in self.by_name[n].entities}
        naming = set().union(*(mentions.chunks_naming(e) for e in entities))
        for t in batch.templates:
            q = ctx.metric_vectors[t.source] + ctx.metric_vectors[t.target]
            vs = [
                ctx.variable_vectors[n]
                for n in sorted(names)
                if self.by_name[n].metric in (t.source, t.target) and n in ctx.variable_vectors
            ]
            if vs:
                q = q + np.mean(vs, axis=0) * 2
            q = _unit(q)
            ranked = top_chunks(q, ctx.chunk_embeddings, ctx.opts.snippets * 4)
            ranked = sorted(ranked, key=lambda i: bool(naming) and i not in naming)  # stable
            for i in ranked[: ctx.opts.snippets]:
                chosen.setdefault(i, q)
        return list(chosen.items())[:MAX_TIER2_SNIPPETS]

    def render(
        self, batch: Tier2Batch, shown: Sequence[str]
    ) -> tuple[list[dict[str, str]], type[BaseModel]]:
        spec = self.spec
        src_metrics = sorted({t.source for t in batch.templates})
        tgt_metrics = sorted({t.target for t in batch.templates})
        used = sorted({*src_metrics, *tgt_metrics})
        dims = sorted({d for m in used for d in spec.metric(m).signature})
        slots = {d: spec.dimension(d).entities for d in dims}  # dimension -> its entities
        model = tier2_model(src_metrics, tgt_metrics, len(batch.pairs), slots)
        messages = self.prompt.render(
            model.__name__,
            domain=self.ctx.domain,
            templates="\n".join(
                f"T{i + 1}. {t.source} -> {t.target}" for i, t in enumerate(batch.templates)
            ),
            metrics="\n".join(f"- {metric_text(spec.metric(m))}" for m in used),
            evidence=numbered(shown),
            candidates="\n".join(f"{i + 1}. {s} -> {t}" for i, (s, t) in enumerate(batch.pairs))
            or "(none: these templates' metrics have no variables yet; propose them)",
            entities="\n".join(
                f"- {d}: {', '.join(spec.dimension(d).entities) or '(none yet)'}" for d in dims
            )
            or "(the metrics have no signature: leave entities an empty object {} and "
            "new_entities empty)",
        )
        return messages, model

    def units(self, batch: Tier2Batch) -> list[_Unit]:
        """The split unit: one candidate pair with its template, or a template to populate. A
        split half carries only its own templates and evidence, so it really is shorter."""
        of = {
            p: Template(self.by_name[p[0]].metric, self.by_name[p[1]].metric) for p in batch.pairs
        }
        out: list[_Unit] = []
        for t in batch.templates:
            out += [(t, p) for p in batch.pairs if of[p] == t] or [(t, None)]
        return out

    async def ask(self, sub: Sequence[_Unit]) -> Any:
        part = Tier2Batch(
            tuple(dict.fromkeys(t for t, _ in sub)), tuple(p for _, p in sub if p is not None)
        )
        shown = distinct_excerpts([self.ctx.excerpt(i, q) for i, q in self.evidence(part)])
        messages, model = self.render(part, shown)
        budget = tokens_for(len(part.pairs), TIER2_TOKENS_PER_PAIR, TIER2_FIXED_TOKENS)
        with completion_budget(budget + MAX_NEW_EDGES * TIER2_TOKENS_PER_NEW_EDGE):
            reply = await self.ctx.llm.acomplete(messages, model)
        return reply, normalize_text(" ".join(shown)), part

    async def run(self, n: int, batch: Tier2Batch) -> list[tuple[list, Any]]:
        names = ", ".join(f"{t.source}->{t.target}" for t in batch.templates)
        item = f"tier2 batch {n + 1} ({len(batch.pairs)} pairs; {names})"[:300]
        return await ask_split(
            self.units(batch),
            self.ask,
            item=item,
            ledger=self.ctx.ledger,
            failures=self.ctx.failures,
        )


@dataclass
class Tier2Replies:
    """The drafts Tier 2's replies make: kept candidates and new edges, pruned and counted."""

    spec: DomainSpec
    dropped: Counter[str]
    drafts: dict[tuple[str, str], EdgeDraft] = field(default_factory=dict)
    kept: int = 0
    new_edges: int = 0

    def __post_init__(self) -> None:
        self.vocab = Vocabulary(self.spec, self.dropped)

    def offer(self, d: EdgeDraft) -> None:
        old = self.drafts.get((d.source, d.target))
        # Deterministic whatever the reply order: higher confidence, then smaller mechanism.
        if old is None or (-d.confidence, d.mechanism) < (-old.confidence, old.mechanism):
            self.drafts[(d.source, d.target)] = d

    def judgements(self, reply: Any, part: Tier2Batch) -> None:
        """Kept candidates become drafts; a number outside the call or judged twice is counted
        (the first judgement, kept ones first, holds), and so are candidates left unjudged."""
        judged: set[int] = set()
        kept = [(j.candidate, j) for j in getattr(reply, "kept", ())]
        for number, j in [*kept, *((n, None) for n in getattr(reply, "rejected", ()))]:
            if not 1 <= number <= len(part.pairs):
                self.dropped["tier2_pair_not_candidate"] += 1
                continue
            if number in judged:
                continue
            judged.add(number)
            if j is None:
                continue
            self.kept += 1
            self.offer(_draft(*part.pairs[number - 1], j))
        if len(part.pairs) - len(judged):
            self.dropped["tier2_candidates_not_judged"] += len(part.pairs) - len(judged)

    def new_edge(self, ne: Any, part: Tier2Batch, shown: str) -> None:
        """A new edge of one of the call's templates, its endpoints resolved in the vocabulary
        (new entities only as quoted from the text shown)."""
        if Template(ne.source.metric, ne.target.metric) not in part.templates:
            self.dropped["tier2_new_edge_not_a_template"] += 1
            return
        ends = []
        for end in (ne.source, ne.target):
            m = self.spec.metric(end.metric)
            ends.append(
                self.vocab.resolve(m, slot_entities(m, end.entities), end.new_entities, shown)
            )
        if ends[0] is None or ends[1] is None:
            self.dropped["tier2_new_variable_outside_vocabulary"] += 1
            return
        (src, new_s), (tgt, new_t) = ends
        if src.name == tgt.name:
            self.dropped["tier2_self_loop"] += 1
            return
        self.vocab.admit(src, new_s)
        self.vocab.admit(tgt, new_t)
        self.new_edges += 1
        self.offer(_draft(src.name, tgt.name, ne))


async def run_tier2(
    ctx: Stage2Context, templates: Sequence[Template], tier: str = "XS"
) -> tuple[list[EdgeDraft], list[Variable], dict[str, int], DomainSpec]:
    """Judge every template's candidates (packed ``ctx.opts.max_batch_pairs`` to a call) and let
    the model populate the templates' metrics.

    Returns edge drafts, admitted new variables, counts, and the spec with admitted entities.
    """
    spec, mentions = ctx.spec, ctx.mentions
    per_template = pairs_per_template(tier, len(templates))
    batches, counts = tier2_batches(
        templates,
        spec.variables,
        ctx.opts.max_batch_pairs,
        lambda s, t: candidate_score(spec, mentions, s, t),
        per_template=per_template,
    )
    counts = {"batches": len(batches), **counts, "pairs_per_template": per_template}
    call = Tier2Call(ctx, get_prompt("tier2", ctx.opts.prompts))
    results = await gather_or_cancel(*(call.run(n, b) for n, b in enumerate(batches)))
    out = Tier2Replies(spec, ctx.dropped)
    for parts in results:  # batches are sorted, and so are their parts
        for _, got in parts:
            if got is not None:
                reply, shown, part = got
                out.judgements(reply, part)
                for ne in reply.new_edges:
                    out.new_edge(ne, part, shown)
    edges = [out.drafts[k] for k in sorted(out.drafts)]
    counts["candidates_kept"] = out.kept
    counts["new_edges"] = out.new_edges
    counts["new_variables"] = len(out.vocab.new_variables)
    counts["new_entities"] = sum(len(v) for v in out.vocab.new_entities.values())
    counts["decreasing_edges"] = sum(1 for e in edges if e.effect == "decreases")
    new_vars = [out.vocab.new_variables[k] for k in sorted(out.vocab.new_variables)]
    return edges, new_vars, counts, out.vocab.extended_spec()
