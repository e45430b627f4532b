"""Stage 1's deterministic assembly: merge per-batch LLM drafts into one valid DomainSpec (pure).

Drops references to undefined dimensions, metrics and entities, repairs naming drift of relation
endpoints by fuzzy matching (difflib), applies the tier caps, and tags roles from the outcome
configuration. Every dropped or repaired item is counted, so the build report can say so.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..types import Dimension, DomainSpec, Metric, OutcomeConfig, Relation, Variable
from .merge import (
    dimension_groups,
    entity_key,
    entity_parents,
    spelling_key,
    split_abbreviation,
    text_aliases,
)
from .validate import validate_spec
from .yaml_io import apply_outcome_roles

ENTITY_CUTOFF = 0.85  # difflib ratio to accept an entity spelled differently from the dimension's
ENDPOINT_CUTOFF = 0.80  # difflib ratio to repair a relation endpoint to an existing variable
# Share of the metric cap that metrics the LLM tagged outcome / terminal may take while there are
# causes to keep: in the recorded medical run every one of the 40 slots went to them, so the
# drivers the text discusses most (smoking, HPV, hereditary conditions) never became variables.
ENDPOINT_SHARE = 0.5
# Share of the metric cap a review's causes may take ahead of the most-proposed metrics. At 0.3
# the live medical build of 3da8d9f kept 12 of the 27 causes its review named and lost UV
# exposure, HBV and vaping (each proposed by one batch); its Stage 1 replies merged again at 0.4
# keep them, in place of four of the most-proposed endpoints and findings.
CAUSE_SHARE = 0.4
_ROLES = ("terminal", "outcome", "intermediate")


@dataclass
class AssemblyReport:
    """What assembly dropped or repaired, by reason (JSON-ready via ``as_dict``)."""

    dropped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, dict[str, int]]:
        # Only what happened: ``counter[reason] += 0`` leaves a key behind.
        return {
            "dropped": {k: n for k, n in sorted(self.dropped.items()) if n},
            "repaired": {k: n for k, n in sorted(self.repaired.items()) if n},
        }


def dimension_name(text: str) -> str:
    """``"Treatment Type"`` -> ``"treatment_type"`` (dimension names are snake_case)."""
    return re.sub(r"[^0-9a-z]+", "_", str(text).strip().lower()).strip("_")


def metric_name(text: str) -> str:
    """``"tumour response rate"`` -> ``"TumourResponseRate"``; CamelCase input kept as is."""
    parts = re.findall(r"[0-9A-Za-z]+", str(text))
    return "".join(p if p[:1].isupper() else p[:1].upper() + p[1:] for p in parts)


def entity_name(text: str) -> str:
    """Trim and collapse whitespace; ',', '(' and ')' are not allowed in an entity."""
    return re.sub(r"\s+", " ", str(text)).strip()


def entity_ok(e: str) -> bool:
    return bool(e) and not any(c in e for c in ",()")


def batch_votes(
    drafts: Iterable[Sequence[dict[str, Any]]], key: Callable[[dict[str, Any]], str]
) -> Counter[str]:
    """How many drafts (batches) propose each non-empty ``key(item)``: a batch votes once."""
    return Counter(k for draft in drafts for k in {key(i) for i in draft} - {""})


def first_proposals(drafts: Iterable[Sequence[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Metric name (``metric_name``) -> its first proposal, names in first-seen order."""
    first: dict[str, dict[str, Any]] = {}
    for draft in drafts:
        for item in draft:
            first.setdefault(metric_name(item.get("name", "")), item)
    first.pop("", None)
    return first


def merge_dimensions(
    drafts: Iterable[Sequence[dict[str, Any]]],
    cap: int,
    report: AssemblyReport | None = None,
    *,
    texts: Sequence[str] | None = None,
) -> tuple[Dimension, ...]:
    """Union the per-batch dimension lists by meaning; keep the ``cap`` proposed by most batches.

    Dimensions that are one axis (``merge.dimension_groups``: names that say the same, or
    overlapping entities) become one, named by the most proposed. Entities are one when
    ``merge.entity_key`` says so (case, plural, hyphens, a trailing abbreviation) or when a
    batch's text (``texts``, aligned with ``drafts``) names one as the other; an entity that is a
    qualifier plus another entity is linked to it as its parent. Ties keep first-seen order;
    entity lists are unions in first-seen order.
    """
    report = report if report is not None else AssemblyReport()
    drafts = [list(d) for d in drafts]
    raw: dict[str, list[str]] = {}  # name -> its entities, names in first-seen order
    descriptions: dict[str, str] = {}
    for draft in drafts:
        for item in draft:
            name = dimension_name(item.get("name", ""))
            if not name:
                report.dropped["dimension_without_name"] += 1
                continue
            descriptions.setdefault(name, str(item.get("description", "") or ""))
            raw.setdefault(name, []).extend(str(e) for e in item.get("entities", []) or [])
    order = list(raw)
    canonical = dimension_groups(
        raw, batch_votes(drafts, lambda i: dimension_name(i.get("name", "")))
    )
    merged = sum(1 for a, b in canonical.items() if a != b)
    if merged:
        report.repaired["dimension_near_duplicate_merged"] += merged
    axis_votes = batch_votes(drafts, lambda i: canonical.get(dimension_name(i.get("name", "")), ""))
    axes = [n for n in order if canonical[n] == n]
    entities = {
        axis: _merge_entities(
            [e for n in order if canonical[n] == axis for e in raw[n]], texts or (), report
        )
        for axis in axes
    }
    ranked = sorted(axes, key=lambda n: (-axis_votes[n], order.index(n)))
    kept = [n for n in ranked if entities[n]][:cap]
    report.dropped["dimension_over_cap_or_empty"] += len(axes) - len(kept)
    out = []
    for n in [a for a in axes if a in kept]:  # first-seen order
        parents = entity_parents(entities[n])
        report.repaired["entity_linked_to_parent"] += len(parents)
        out.append(Dimension(n, tuple(entities[n]), descriptions[n], tuple(parents.items())))
    return tuple(out)


def _merge_entities(
    proposed: Sequence[str], texts: Sequence[str], report: AssemblyReport
) -> list[str]:
    """One entry per entity: spellings by ``entity_key``, then names a text gives as one."""
    by_key: dict[str, str] = {}
    for e in proposed:
        name, _ = split_abbreviation(entity_name(e))
        if not entity_ok(name):
            report.dropped["entity_unusable_name"] += 1
            continue
        key = spelling_key(name)
        if key in by_key:
            if by_key[key] != name:
                report.repaired["entity_near_duplicate_merged"] += 1  # "bone" / "bones"
            continue
        by_key[key] = name
    names = list(by_key.values())
    # An abbreviation given with the long form ("red blood cells (RBCs)") or in a batch's text
    # ("basal cell carcinoma (BCC)", "X, also called Y") is the same entity as that long form.
    gone: set[str] = set()
    short_forms = [split_abbreviation(entity_name(e)) for e in proposed]
    pairs = [(long, short) for long, short in short_forms if short]
    for text in texts:
        pairs += text_aliases(text, names)
    keys = {entity_key(n): n for n in names}
    for long, short in pairs:
        a, b = keys.get(entity_key(long)), keys.get(entity_key(short))
        if a and b and a != b and a not in gone and b not in gone:
            gone.add(b)
            report.repaired["entity_alias_merged"] += 1
    return [n for n in names if n not in gone]


def merge_metrics(
    drafts: Iterable[Sequence[dict[str, Any]]],
    dimensions: Sequence[Dimension],
    cap: int,
    outcome: OutcomeConfig | None,
    report: AssemblyReport | None = None,
    *,
    support: Mapping[str, float] | None = None,
    causes: Iterable[str] = (),
) -> tuple[tuple[Metric, ...], OutcomeConfig]:
    """Union the per-batch metric lists over known dimensions; cap; settle the outcome config.

    A given ``outcome`` wins: its metrics are always kept (added bare if no batch proposed them).
    With no outcome, the kept metrics the LLM tagged ``outcome`` / ``terminal`` make it up. The
    cap keeps the metrics proposed by the most batches, then those with the most corpus
    ``support`` (e.g. the share of chunks near the metric), then the first seen; metrics the LLM
    tagged ``outcome`` / ``terminal`` take at most ``ENDPOINT_SHARE`` of it while there are other
    metrics to keep, so the causes the text discusses (intermediate metrics) are never crowded
    out by endpoints. ``causes`` (metrics a review called causes of what the corpus discusses)
    come first among the others, up to ``CAUSE_SHARE`` of the cap: a cause a few samples name
    is kept before a quantity many name.
    """
    support = support or {}
    report = report if report is not None else AssemblyReport()
    dim_names = {d.name for d in dimensions}
    votes: Counter[str] = Counter()  # batches that proposed the metric validly
    found: dict[str, Metric] = {}  # in first-seen order
    sigs: dict[str, list[tuple[str, ...]]] = {}  # name -> every valid proposal's signature
    for draft in drafts:
        seen_here: set[str] = set()
        for item in draft:
            name = metric_name(item.get("name", ""))
            if not name:
                report.dropped["metric_without_name"] += 1
                continue
            sig = tuple(dimension_name(s) for s in item.get("signature", []) or [])
            if any(s not in dim_names for s in sig):
                report.dropped["metric_undefined_dimension"] += 1
                continue
            if len(set(sig)) != len(sig):
                report.dropped["metric_repeated_dimension"] += 1
                continue
            sigs.setdefault(name, []).append(sig)
            if name not in found:
                # A given outcome configuration decides roles: the LLM's tags are then ignored.
                role = item.get("role", "intermediate")
                found[name] = Metric(
                    name,
                    sig,
                    str(item.get("description", "") or ""),
                    str(item.get("category", "") or "general"),
                    role if role in _ROLES and outcome is None else "intermediate",
                )
            seen_here.add(name)
        votes.update(seen_here)
    for n, proposed in sigs.items():
        found[n] = replace(found[n], signature=agreed_signature(proposed))
    anchored = [*outcome.outcomes, *outcome.terminals] if outcome is not None else []
    for n in anchored:  # none without an outcome configuration
        if outcome is not None and n not in found:
            report.repaired["outcome_metric_added"] += 1
            what = outcome.description or f"{n}: a configured outcome."
            found[n] = Metric(n, (), what, "outcome")
    order = list(found)
    by_votes = sorted(order, key=lambda n: (-votes[n], -support.get(n, 0.0), order.index(n)))
    causes = set(causes)
    first = set([n for n in by_votes if n in causes][: math.floor(cap * CAUSE_SHARE)])
    ranked = sorted(by_votes, key=lambda n: (n not in anchored, n not in first))
    if outcome is not None:
        kept = set(ranked[: max(cap, len(anchored))])
    else:
        kept = _fill_cap(ranked, {n for n in order if found[n].role != "intermediate"}, cap)
        report.dropped["metric_endpoint_over_share"] += sum(
            1 for n in ranked[:cap] if n not in kept and found[n].role != "intermediate"
        )
        outcome = OutcomeConfig(
            outcomes=tuple(n for n in order if n in kept and found[n].role == "outcome"),
            terminals=tuple(n for n in order if n in kept and found[n].role == "terminal"),
        )
    report.dropped["metric_over_cap"] += len(order) - len(kept)
    metrics = apply_outcome_roles([found[n] for n in order if n in kept], outcome)
    return tuple(metrics), outcome


def agreed_signature(proposed: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """The signature a metric's proposals agree on: every dimension used by at least half of the
    proposals that name one, in the order they first appear (a proposal without a signature
    abstains: it names no dimension, it does not reject one). A merged metric (a review's group,
    a near-duplicate renamed) thus keeps the dimensions its proposals share, not whichever
    proposal came first, so a group whose first proposal named no dimension still binds one
    variable per entity.

    >>> agreed_signature([(), ("cancer_type",), ("cancer_type",), ("cancer_type", "body_site")])
    ('cancer_type',)
    >>> agreed_signature([("body_site",), ("cancer_type", "body_site")])
    ('body_site', 'cancer_type')
    >>> agreed_signature([(), ()])
    ()
    """
    signed = [sig for sig in proposed if sig]
    uses = Counter(d for sig in signed for d in sig)
    order = list(dict.fromkeys(d for sig in signed for d in sig))
    return tuple(d for d in order if uses[d] >= len(signed) / 2)


def _fill_cap(ranked: Sequence[str], endpoints: set[str], cap: int) -> set[str]:
    """The ``cap`` best of ``ranked`` with at most ``ENDPOINT_SHARE`` of them endpoints, unless
    there are too few other metrics to fill the cap.

    >>> sorted(_fill_cap(["O1", "O2", "O3", "I1"], {"O1", "O2", "O3"}, 2))
    ['I1', 'O1']
    """
    limit = math.ceil(cap * ENDPOINT_SHARE)
    ends = [n for n in ranked if n in endpoints]
    others = [n for n in ranked if n not in endpoints]
    take_ends = ends[:limit]
    take_others = others[: cap - len(take_ends)]
    rest = ends[limit:][: cap - len(take_ends) - len(take_others)]
    return {*take_ends, *take_others, *rest}


def match_name(name: str, choices: Sequence[str], cutoff: float) -> tuple[str | None, bool]:
    """Exact, then case-insensitive, then difflib match; returns (match, repaired?)."""
    if name in choices:
        return name, False
    lower = {c.lower(): c for c in choices}
    if name.lower() in lower:
        return lower[name.lower()], True
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=cutoff)
    return (close[0], True) if close else (None, False)


def merge_variables(
    drafts: Iterable[Sequence[dict[str, Any]]],
    metrics: Sequence[Metric],
    dimensions: Sequence[Dimension],
    report: AssemblyReport | None = None,
) -> tuple[Variable, ...]:
    """Keep variables of known metrics whose entities (fuzzy-matched) belong to the signature."""
    report = report if report is not None else AssemblyReport()
    by_metric = {m.name: m for m in metrics}
    dims = {d.name: d for d in dimensions}
    out: dict[str, Variable] = {}
    for draft in drafts:
        for item in draft:
            metric = by_metric.get(metric_name(item.get("metric", "")))
            if metric is None:
                report.dropped["variable_undefined_metric"] += 1
                continue
            raw = [entity_name(e) for e in item.get("entities", []) or []]
            if len(raw) != len(metric.signature):
                report.dropped["variable_wrong_arity"] += 1
                continue
            ents: list[str] = []
            for dim, e in zip(metric.signature, raw, strict=True):
                hit, repaired = match_name(e, dims[dim].entities, ENTITY_CUTOFF)
                if hit is None:
                    break
                report.repaired["variable_entity"] += int(repaired)
                ents.append(hit)
            if len(ents) != len(raw):
                report.dropped["variable_undefined_entity"] += 1
                continue
            v = Variable(metric.name, tuple(ents), str(item.get("description", "") or ""))
            out.setdefault(v.name, v)
    # Every metric without a variable gets its unbound form only when it has no signature, so the
    # outcome metrics always exist as nodes.
    for m in metrics:
        if not m.signature and m.name not in out:
            out[m.name] = Variable(m.name, ())
    return tuple(out.values())


def unbind_unused(
    metrics: Sequence[Metric], variables: Sequence[Variable], report: AssemblyReport | None = None
) -> tuple[tuple[Metric, ...], tuple[Variable, ...]]:
    """A metric with a signature that bound no variable loses its signature and keeps its
    unbound form, so a kept metric (a cause the review named, an endpoint) is never lost
    because the variables step filled none of its slots.

    >>> m = (Metric("Exposure", ("site",), ""), Metric("Dose", ("site",), ""))
    >>> ms, vs = unbind_unused(m, (Variable("Dose", ("skin",)),))
    >>> [(x.name, x.signature) for x in ms], [v.name for v in vs]
    ([('Exposure', ()), ('Dose', ('site',))], ['Dose(skin)', 'Exposure'])
    """
    report = report if report is not None else AssemblyReport()
    bound = {v.metric for v in variables}
    idle = [m.name for m in metrics if m.signature and m.name not in bound]
    report.repaired["metric_unbound_without_variables"] += len(idle)
    out = tuple(replace(m, signature=()) if m.name in idle else m for m in metrics)
    return out, (*variables, *(Variable(n, ()) for n in idle))


def merge_relations(
    drafts: Iterable[Sequence[dict[str, Any]]],
    variables: Sequence[Variable],
    metrics: Sequence[Metric],
    report: AssemblyReport | None = None,
) -> tuple[Relation, ...]:
    """Fuzzy-match endpoints to variable names; drop unknown ends, self-loops, terminal sources."""
    report = report if report is not None else AssemblyReport()
    names = [v.name for v in variables]
    metric_of = {v.name: v.metric for v in variables}
    roles = {m.name: m.role for m in metrics}
    out: dict[tuple[str, str], Relation] = {}
    for draft in drafts:
        for item in draft:
            src, rep_s = match_name(str(item.get("source", "")).strip(), names, ENDPOINT_CUTOFF)
            tgt, rep_t = match_name(str(item.get("target", "")).strip(), names, ENDPOINT_CUTOFF)
            if src is None or tgt is None:
                report.dropped["relation_undefined_variable"] += 1
                continue
            report.repaired["relation_endpoint"] += int(rep_s) + int(rep_t)
            if src == tgt:
                report.dropped["relation_self_loop"] += 1
                continue
            if roles.get(metric_of[src]) == "terminal":
                report.dropped["relation_from_terminal"] += 1
                continue
            out.setdefault((src, tgt), Relation(src, tgt, str(item.get("mechanism", "") or "")))
    return tuple(out.values())


def assemble_spec(
    dimensions: Sequence[Dimension],
    metrics: Sequence[Metric],
    variables: Sequence[Variable],
    relations: Sequence[Relation],
    outcome: OutcomeConfig,
    *,
    domain: str = "",
) -> DomainSpec:
    """Put the merged parts together, dropping dimensions no kept metric uses, and validate."""
    used = {d for m in metrics for d in m.signature}
    dims = tuple(d for d in dimensions if d.name in used)
    spec = DomainSpec(dims, tuple(metrics), tuple(variables), tuple(relations), outcome, domain)
    return validate_spec(spec)
