"""``hcg diff``: what changed between two graphs (spec, variables, edges, evidence, chunks).

Edges are matched by id (the builders derive ids from the two variable names, so a renamed
variable shows as one edge removed and one added). Pure: ``diff_graphs`` takes two CausalGraphs
and returns JSON-ready data; ``format_diff`` prints it for a person.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..types import CausalGraph, DomainSpec

METRIC_FIELDS = ("signature", "description", "category", "role")
EDGE_FIELDS = ("source", "target", "mechanism", "confidence")


def _added_removed(a: set, b: set) -> dict[str, list]:
    return {"added": sorted(b - a), "removed": sorted(a - b)}


def _set_change(a: Iterable, b: Iterable) -> dict[str, list]:
    """``_added_removed`` of the two collections, or ``{}`` when they hold the same items."""
    change = _added_removed(set(a), set(b))
    return change if change["added"] or change["removed"] else {}


def _changed_fields(a: Any, b: Any, names: Sequence[str]) -> dict[str, list]:
    """field -> [value in a, value in b] for the fields that differ (tuples as lists)."""
    values = {f: (getattr(a, f), getattr(b, f)) for f in names}
    return {
        f: [list(x) if isinstance(x, tuple) else x for x in pair]
        for f, pair in values.items()
        if pair[0] != pair[1]
    }


def _per_key(a: dict, b: dict, change: Callable[[Any, Any], dict]) -> dict[str, dict]:
    """key -> ``change(a[key], b[key])`` for the keys both have (sorted), where it is not empty."""
    changes = {k: change(a[k], b[k]) for k in sorted(a.keys() & b.keys())}
    return {k: c for k, c in changes.items() if c}


def diff_specs(a: DomainSpec, b: DomainSpec) -> dict[str, Any]:
    """Dimensions, entities, metrics (and their fields), outcome and seed relations that changed."""
    dims_a, dims_b = ({d.name: d for d in s.dimensions} for s in (a, b))
    entities = _per_key(dims_a, dims_b, lambda x, y: _set_change(x.entities, y.entities))
    met_a, met_b = ({m.name: m for m in s.metrics} for s in (a, b))
    changed_metrics = _per_key(met_a, met_b, lambda x, y: _changed_fields(x, y, METRIC_FIELDS))
    rel_a, rel_b = ({(r.source, r.target) for r in s.relations} for s in (a, b))
    out: dict[str, Any] = {
        "dimensions": _added_removed(set(dims_a), set(dims_b)),
        "entities": entities,
        "metrics": {**_added_removed(set(met_a), set(met_b)), "changed": changed_metrics},
        "relations": {k: [list(p) for p in v] for k, v in _added_removed(rel_a, rel_b).items()},
    }
    if a.outcome.outcomes != b.outcome.outcomes or a.outcome.terminals != b.outcome.terminals:
        out["outcome"] = {
            "outcomes": [list(a.outcome.outcomes), list(b.outcome.outcomes)],
            "terminals": [list(a.outcome.terminals), list(b.outcome.terminals)],
        }
    if a.domain != b.domain:
        out["domain"] = [a.domain, b.domain]
    return out


def diff_graphs(a: CausalGraph, b: CausalGraph) -> dict[str, Any]:
    """Everything that differs from ``a`` to ``b``, plus a ``summary`` of counts (JSON-ready).

    >>> from hcg_core.types import CausalEdge, DomainSpec, Metric, Variable
    >>> spec = DomainSpec((), (Metric("A"), Metric("B")))
    >>> g1 = CausalGraph(spec, (Variable("A"), Variable("B")), (CausalEdge("e", "A", "B"),), ())
    >>> g2 = CausalGraph(spec, (Variable("A"), Variable("B")), (), ())
    >>> diff_graphs(g1, g2)["edges"]["removed"]
    ['e']
    """
    vars_a, vars_b = ({v.name for v in g.variables} for g in (a, b))
    edges_a, edges_b = ({e.id: e for e in g.edges} for g in (a, b))
    changed = _per_key(edges_a, edges_b, lambda x, y: _changed_fields(x, y, EDGE_FIELDS))
    evidence = _per_key(edges_a, edges_b, lambda x, y: _set_change(x.evidence, y.evidence))
    chunks_a, chunks_b = ({c.id: c.text for c in g.chunks} for g in (a, b))
    chunk_changes = _added_removed(set(chunks_a), set(chunks_b))
    chunk_changes["changed"] = list(_per_key(chunks_a, chunks_b, operator.ne))
    out: dict[str, Any] = {
        "spec": diff_specs(a.spec, b.spec),
        "variables": _added_removed(vars_a, vars_b),
        "edges": {**_added_removed(set(edges_a), set(edges_b)), "changed": changed},
        "evidence": evidence,
        "chunks": chunk_changes,
        "edge_details": {
            eid: {"source": e.source, "target": e.target, "mechanism": e.mechanism}
            for eid, e in (
                # Sorted: a set's order changes with the hash seed, and the JSON must not.
                *((i, edges_b[i]) for i in sorted(edges_b.keys() - edges_a.keys())),
                *((i, edges_a[i]) for i in sorted(edges_a.keys() - edges_b.keys())),
            )
        },
    }
    spec = out["spec"]
    out["summary"] = {
        "spec_changes": sum(
            len(spec[k]["added"]) + len(spec[k]["removed"])
            for k in ("dimensions", "metrics", "relations")
        )
        + len(spec["entities"])
        + len(spec["metrics"]["changed"])
        + ("outcome" in spec)
        + ("domain" in spec),
        **_counts(out, "variables"),  # variables_added, variables_removed
        **_counts(out, "edges"),  # edges_added, edges_removed, edges_changed
        "edges_with_evidence_changes": len(evidence),
        **_counts(out, "chunks"),  # chunks_added, chunks_removed, chunks_changed
    }
    return out


def _counts(diff: dict[str, Any], kind: str) -> dict[str, int]:
    """``{kind}_added``, ``{kind}_removed`` (and ``{kind}_changed``): how many of each."""
    return {f"{kind}_{way}": len(items) for way, items in diff[kind].items()}


def is_empty(diff: dict[str, Any]) -> bool:
    """Whether the two graphs were the same in everything ``diff_graphs`` compares."""
    return not any(diff["summary"].values())


def format_diff(diff: dict[str, Any], *, limit: int = 50) -> str:
    """The diff for a person: a summary line, then each change (``limit`` items per list)."""
    s = diff["summary"]
    if is_empty(diff):
        return "no differences"
    lines = [", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.items() if v)]

    def listed(title: str, items: list, fmt=str) -> None:
        if not items:
            return
        lines.append(f"{title} ({len(items)}):")
        lines.extend(f"  {fmt(x)}" for x in items[:limit])
        if len(items) > limit:
            lines.append(f"  ... and {len(items) - limit} more")

    def added_removed(title: str, change: dict, fmt=str) -> None:
        for way in ("added", "removed"):
            listed(f"{title} {way}", change[way], fmt)

    spec = diff["spec"]
    for key in ("dimensions", "metrics"):
        added_removed(f"spec: {key}", spec[key])
    for name, change in spec["entities"].items():
        added_removed(f"spec: entities of {name}", change)
    for name, fields in spec["metrics"]["changed"].items():
        for f, (old, new) in fields.items():
            lines.append(f"spec: metric {name} {f}: {old!r} -> {new!r}")
    added_removed("spec: relations", spec["relations"], lambda p: f"{p[0]} -> {p[1]}")
    if "outcome" in spec:
        lines.append(f"spec: outcome {spec['outcome']}")
    if "domain" in spec:
        lines.append(f"spec: domain {spec['domain'][0]!r} -> {spec['domain'][1]!r}")
    added_removed("variables", diff["variables"])
    details = diff["edge_details"]

    def edge(eid: str) -> str:
        d = details[eid]
        return f"{eid}: {d['source']} -> {d['target']}"

    added_removed("edges", diff["edges"], edge)
    listed(
        "edges changed",
        list(diff["edges"]["changed"].items()),
        lambda kv: (
            f"{kv[0]}: " + "; ".join(f"{f} {old!r} -> {new!r}" for f, (old, new) in kv[1].items())
        ),
    )
    listed(
        "evidence changed",
        list(diff["evidence"].items()),
        lambda kv: f"{kv[0]}: +{kv[1]['added']} -{kv[1]['removed']}",
    )
    for key in ("added", "removed", "changed"):
        listed(f"chunks {key}", diff["chunks"][key])
    return "\n".join(lines)
