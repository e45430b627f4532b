"""Validation of a domain spec and a causal graph against it (pure; errors name the entry)."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import SpecError
from ..types import GRAPH_ROLES, CausalEdge, DomainSpec, Variable

INFERABLE = ("domain", "outcome")  # the spec fields Stage 1 may infer (``DomainSpec.inferred``)


def _no_duplicates(names: Iterable[str], kind: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise SpecError(f"duplicate {kind} name {n!r}", entry=n)
        seen.add(n)


def validate_variable(spec_metrics: dict, spec_dims: dict, v: Variable) -> None:
    """Check one variable against the fixed vocabulary (metric, signature, dimension entities)."""
    metric = spec_metrics.get(v.metric)
    if metric is None:
        raise SpecError(
            f"variable {v.name!r} uses undefined metric {v.metric!r}; define it under 'metrics'",
            entry=v.name,
        )
    if len(v.entities) != len(metric.signature):
        raise SpecError(
            f"variable {v.name!r} binds {len(v.entities)} entities but metric {metric.name!r} has "
            f"signature ({', '.join(metric.signature)})",
            entry=v.name,
        )
    for dim_name, entity in zip(metric.signature, v.entities, strict=True):
        dim = spec_dims[dim_name]
        if entity not in dim.entities:
            raise SpecError(
                f"variable {v.name!r}: entity {entity!r} is not in dimension {dim_name!r}; "
                f"add it to that dimension's entities",
                entry=v.name,
            )


def validate_spec(spec: DomainSpec) -> DomainSpec:
    """Raise SpecError naming the first offending entry; return the spec unchanged when valid.

    Checks: duplicate names, metric signatures over undefined dimensions, unknown graph roles,
    outcome names that are not metrics, variables outside the vocabulary, relations between
    undefined variables, relations out of a terminal, entity parent links outside their dimension,
    and unknown ``inferred`` field names.
    """
    _no_duplicates((d.name for d in spec.dimensions), "dimension")
    _no_duplicates((m.name for m in spec.metrics), "metric")
    for d in spec.dimensions:
        _no_duplicates(d.entities, f"entity in dimension {d.name!r}:")
        for child, parent in d.parents:
            for e in (child, parent):
                if e not in d.entities:
                    raise SpecError(
                        f"dimension {d.name!r}: parents links {child!r} -> {parent!r}, but "
                        f"{e!r} is not one of its entities",
                        entry=d.name,
                    )
    for field_name in spec.inferred:
        if field_name not in INFERABLE:
            raise SpecError(
                f"inferred names {field_name!r}; it may list only {', '.join(INFERABLE)}",
                entry="inferred",
            )
    dims = {d.name: d for d in spec.dimensions}
    metrics = {m.name: m for m in spec.metrics}
    for m in spec.metrics:
        if m.role not in GRAPH_ROLES:
            raise SpecError(
                f"metric {m.name!r} has graph_role {m.role!r}; use one of {', '.join(GRAPH_ROLES)}",
                entry=m.name,
            )
        for dim_name in m.signature:
            if dim_name not in dims:
                raise SpecError(
                    f"metric {m.name!r} uses undefined dimension {dim_name!r} in its signature",
                    entry=m.name,
                )
    for name in (*spec.outcome.outcomes, *spec.outcome.terminals):
        if name not in metrics:
            raise SpecError(f"outcome configuration names undefined metric {name!r}", entry=name)
    var_metric = _check_variables(spec, spec.variables)
    for r in spec.relations:
        label = f"relation {r.source!r} -> {r.target!r}"
        _check_link(label, r.source, r.target, var_metric, metrics, entry=label)
    return spec


def _check_variables(spec: DomainSpec, variables: Iterable[Variable]) -> dict[str, str]:
    """Check variables against the spec's vocabulary (no name twice); name -> metric."""
    variables = tuple(variables)
    _no_duplicates((v.name for v in variables), "variable")
    dims = {d.name: d for d in spec.dimensions}
    metrics = {m.name: m for m in spec.metrics}
    for v in variables:
        validate_variable(metrics, dims, v)
    return {v.name: v.metric for v in variables}


def _check_link(
    label: str, source: str, target: str, var_metric: dict, metrics: dict, *, entry: str
) -> None:
    """A relation or an edge joins two known variables, not one to itself, not out of a terminal."""
    for end in (source, target):
        if end not in var_metric:
            raise SpecError(f"{label} refers to undefined variable {end!r}", entry=entry)
    if source == target:
        raise SpecError(f"{label} is a self-loop", entry=entry)
    if metrics[var_metric[source]].role == "terminal":
        raise SpecError(
            f"{label} leaves a terminal: metric {var_metric[source]!r} has graph_role terminal, "
            "which receives edges but emits none",
            entry=entry,
        )


def validate_graph(
    spec: DomainSpec,
    variables: tuple[Variable, ...],
    edges: tuple[CausalEdge, ...],
    chunk_ids: set[str] | None = None,
) -> None:
    """Check a graph's variables and edges against its spec; chunk ids too when given."""
    validate_spec(spec)
    metrics = {m.name: m for m in spec.metrics}
    var_metric = _check_variables(spec, variables)
    _no_duplicates((e.id for e in edges), "edge id")
    for e in edges:
        label = f"edge {e.id!r} ({e.source} -> {e.target})"
        _check_link(label, e.source, e.target, var_metric, metrics, entry=e.id)
        if not 0.0 <= e.confidence <= 1.0:
            raise SpecError(f"{label} has confidence {e.confidence}, outside [0, 1]", entry=e.id)
        if chunk_ids is not None:
            for c in e.evidence:
                if c not in chunk_ids:
                    raise SpecError(f"{label} cites unknown chunk id {c!r}", entry=e.id)
