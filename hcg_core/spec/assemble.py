"""Stage 1's deterministic assembly: merge per-batch LLM drafts into one valid DomainSpec (pure).

Drops references to undefined dimensions, metrics and entities, repairs naming drift of relation
endpoints by fuzzy matching (difflib), applies the tier caps, and tags roles from the outcome
configuration. Every dropped or repaired item is counted, so the build report can say so.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..types import Dimension, DomainSpec, Metric, OutcomeConfig, Relation, Variable, variable_name
from .validate import validate_spec
from .yaml_io import apply_outcome_roles

ENTITY_CUTOFF = 0.85  # difflib ratio to accept an entity spelled differently from the dimension's
ENTITY_DUPLICATE_CUTOFF = 0.92  # difflib ratio at which two entities of a dimension are one
ENDPOINT_CUTOFF = 0.80  # difflib ratio to repair a relation endpoint to an existing variable
_ROLES = ("terminal", "outcome", "intermediate")


@dataclass
class AssemblyReport:
    """What assembly dropped or repaired, by reason (JSON-ready via ``as_dict``)."""

    dropped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {
            "dropped": dict(sorted(self.dropped.items())),
            "repaired": dict(sorted(self.repaired.items())),
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


def merge_dimensions(
    drafts: Iterable[Sequence[dict[str, Any]]], cap: int, report: AssemblyReport | None = None
) -> tuple[Dimension, ...]:
    """Union the per-batch dimension lists; keep the ``cap`` mentioned by most batches.

    Ties keep first-seen order; entity lists are unions in first-seen order.
    """
    report = report if report is not None else AssemblyReport()
    order: list[str] = []
    votes: Counter[str] = Counter()
    entities: dict[str, list[str]] = {}
    descriptions: dict[str, str] = {}
    for draft in drafts:
        seen_here: set[str] = set()
        for item in draft:
            name = dimension_name(item.get("name", ""))
            if not name:
                report.dropped["dimension_without_name"] += 1
                continue
            if name not in entities:
                order.append(name)
                entities[name] = []
                descriptions[name] = str(item.get("description", "") or "")
            if name not in seen_here:
                votes[name] += 1
                seen_here.add(name)
            for raw in item.get("entities", []) or []:
                e = entity_name(raw)
                if not entity_ok(e):
                    report.dropped["entity_unusable_name"] += 1
                    continue
                known = {x.lower() for x in entities[name]}
                if e.lower() in known:
                    continue
                if difflib.get_close_matches(e.lower(), known, n=1, cutoff=ENTITY_DUPLICATE_CUTOFF):
                    report.repaired["entity_near_duplicate_merged"] += 1  # "statin" / "statins"
                    continue
                entities[name].append(e)
    ranked = sorted(order, key=lambda n: (-votes[n], order.index(n)))
    kept = [n for n in ranked if entities[n]][:cap]
    report.dropped["dimension_over_cap_or_empty"] += len(order) - len(kept)
    return tuple(Dimension(n, tuple(entities[n]), descriptions[n]) for n in order if n in kept)


def near_duplicate_names(
    names: Sequence[str], vectors: np.ndarray, tau: float, votes: Mapping[str, int]
) -> dict[str, str]:
    """name -> the canonical name of its group: names whose (unit) vectors have cosine >= tau
    are one group (transitively), named by its most-voted member (ties: first seen).

    >>> v = np.array([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0]])
    >>> near_duplicate_names(["A", "B", "C"], v, 0.9, {"A": 1, "B": 2, "C": 1})
    {'A': 'B', 'B': 'B', 'C': 'C'}
    """
    parent = list(range(len(names)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    if len(names) > 1:
        sims = vectors @ vectors.T
        for i, j in zip(*np.nonzero(np.triu(sims >= tau, k=1)), strict=True):
            parent[root(int(i))] = root(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    out: dict[str, str] = {}
    for members in groups.values():
        best = min(members, key=lambda i: (-votes.get(names[i], 0), i))
        for i in members:
            out[names[i]] = names[best]
    return out


def merge_metrics(
    drafts: Iterable[Sequence[dict[str, Any]]],
    dimensions: Sequence[Dimension],
    cap: int,
    outcome: OutcomeConfig | None,
    report: AssemblyReport | None = None,
    *,
    support: Mapping[str, float] | None = None,
) -> tuple[tuple[Metric, ...], OutcomeConfig]:
    """Union the per-batch metric lists over known dimensions; cap; settle the outcome config.

    A given ``outcome`` wins: its metrics are always kept (added bare if no batch proposed them).
    With no outcome, the metrics the LLM tagged ``outcome`` / ``terminal`` make it up. The cap
    keeps the metrics proposed by the most batches, then those with the most corpus ``support``
    (e.g. the share of chunks near the metric), then the first seen.
    """
    support = support or {}
    report = report if report is not None else AssemblyReport()
    dim_names = {d.name for d in dimensions}
    order: list[str] = []
    votes: Counter[str] = Counter()
    found: dict[str, Metric] = {}
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
            if name not in found:
                role = item.get("role", "intermediate")
                order.append(name)
                found[name] = Metric(
                    name,
                    sig,
                    str(item.get("description", "") or ""),
                    str(item.get("category", "") or "general"),
                    role if role in _ROLES else "intermediate",
                )
            if name not in seen_here:
                votes[name] += 1
                seen_here.add(name)
    if outcome is None:
        outcome = OutcomeConfig(
            outcomes=tuple(n for n in order if found[n].role == "outcome"),
            terminals=tuple(n for n in order if found[n].role == "terminal"),
        )
    else:
        # The user's configuration decides roles; the LLM's tags are ignored.
        for n in order:
            found[n] = replace(found[n], role="intermediate")
    anchored = [*outcome.outcomes, *outcome.terminals]
    for n in anchored:
        if n not in found:
            report.repaired["outcome_metric_added"] += 1
            order.append(n)
            found[n] = Metric(
                n, (), outcome.description or f"{n}: a configured outcome.", "outcome"
            )
    ranked = sorted(
        order,
        key=lambda n: (n not in anchored, -votes[n], -support.get(n, 0.0), order.index(n)),
    )
    kept = set(ranked[: max(cap, len(anchored))])
    report.dropped["metric_over_cap"] += len(order) - len(kept)
    metrics = apply_outcome_roles([found[n] for n in order if n in kept], outcome)
    return tuple(metrics), outcome


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
    spec = DomainSpec(
        dimensions=tuple(d for d in dimensions if d.name in used),
        metrics=tuple(metrics),
        variables=tuple(variables),
        relations=tuple(relations),
        outcome=outcome,
        domain=domain,
    )
    return validate_spec(spec)


__all__ = [
    "AssemblyReport",
    "assemble_spec",
    "dimension_name",
    "entity_name",
    "merge_dimensions",
    "merge_metrics",
    "merge_relations",
    "merge_variables",
    "metric_name",
    "near_duplicate_names",
    "variable_name",
]
