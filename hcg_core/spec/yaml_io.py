"""The human-editable ``spec.yaml`` shape: parse it into a DomainSpec and write it back (pure text).

Shape (see docs/format.md)::

    domain: oncology
    inferred: [domain]   # optional: what Stage 1 inferred (domain, outcome), for you to correct
    outcome: {outcomes: [SurvivalRate], terminals: [PatientOutcome]}
    dimensions:
      disease: {description: ..., entities: [NSCLC, BCC, local BCC],
                parents: {local BCC: BCC}}   # optional: stage or subtype -> its entity
    metrics:
      Efficacy(treatment, disease): {description: ..., category: treatment, graph_role: intermediate}
    variables:
      - Efficacy(chemotherapy, NSCLC)
      - {name: SurvivalRate(NSCLC), description: five-year survival}
    relations:
      - {source: Efficacy(chemotherapy, NSCLC), target: SurvivalRate(NSCLC), mechanism: ...}
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SpecError
from ..types import Dimension, DomainSpec, Metric, OutcomeConfig, Relation, Variable
from .validate import validate_spec

TOP_KEYS = {"domain", "inferred", "outcome", "dimensions", "metrics", "variables", "relations"}
_CALL = re.compile(r"^\s*([^()]+?)\s*(?:\((.*)\))?\s*$", re.S)


def parse_call(text: str, *, what: str) -> tuple[str, tuple[str, ...]]:
    """Split ``Name(a, b)`` into ``("Name", ("a", "b"))``; ``Name`` alone has no arguments.

    >>> parse_call("Efficacy(chemotherapy, NSCLC)", what="variable")
    ('Efficacy', ('chemotherapy', 'NSCLC'))
    """
    m = _CALL.match(str(text))
    if not m or "(" in m.group(1) or ")" in m.group(1):
        raise SpecError(f"cannot read {what} {text!r}; write it as Name(a, b)", entry=str(text))
    args = m.group(2)
    parts = tuple(a.strip() for a in args.split(",")) if args and args.strip() else ()
    if any(not p for p in parts):
        raise SpecError(f"{what} {text!r} has an empty argument", entry=str(text))
    return m.group(1), parts


def _typed(value: Any, where: str, kind: type) -> Any:
    """``value`` when it is a ``kind`` (dict or list), an empty one when None; else SpecError."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        what = "a mapping" if kind is dict else "a list"
        raise SpecError(f"'{where}' must be {what}, got {type(value).__name__}", entry=where)
    return value


def _text(body: dict, key: str, default: str = "") -> str:
    """The text of ``body[key]``; ``default`` when it is missing, empty or null."""
    return str(body.get(key, default) or default)


def _str_tuple(value: Any, where: str) -> tuple[str, ...]:
    return tuple(str(x) for x in _typed(value, where, list))


def variable_from_item(item: Any, where: str) -> Variable:
    """One variable entry: ``"Metric(a, b)"``, ``{name, description}`` or ``{metric, entities}``."""
    if isinstance(item, str):
        metric, ents = parse_call(item, what="variable")
        return Variable(metric, ents)
    if not isinstance(item, dict):
        raise SpecError(f"{where} must be a string or a mapping", entry=where)
    description = _text(item, "description")
    if "metric" in item:
        return Variable(
            str(item["metric"]), _str_tuple(item.get("entities"), f"{where}.entities"), description
        )
    if "name" in item:
        metric, ents = parse_call(item["name"], what="variable")
        return Variable(metric, ents, description)
    raise SpecError(f"{where} needs 'name' or 'metric'", entry=where)


def spec_from_dict(data: Any, *, validate: bool = True) -> DomainSpec:
    """Build a DomainSpec from the parsed YAML mapping; raise SpecError naming the bad entry."""
    data = _typed(data, "spec", dict)
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise SpecError(f"unknown top-level keys {sorted(unknown)}", entry=sorted(unknown)[0])
    dims = []
    for name, body in _typed(data.get("dimensions"), "dimensions", dict).items():
        if isinstance(body, list):  # short form: name: [entities]
            body = {"entities": body}
        body = _typed(body, f"dimensions.{name}", dict)
        parents = _typed(body.get("parents"), f"dimensions.{name}.parents", dict)
        entities = _str_tuple(body.get("entities"), f"dimensions.{name}.entities")
        links = tuple((str(c), str(p)) for c, p in parents.items())
        dims.append(Dimension(str(name), entities, _text(body, "description"), links))
    metrics = []
    for key, body in _typed(data.get("metrics"), "metrics", dict).items():
        name, signature = parse_call(key, what="metric")
        body = _typed(body, f"metrics.{key}", dict)
        category = _text(body, "category", "general")
        role: Any = _text(body, "graph_role", "intermediate")  # validate_spec checks it
        metrics.append(Metric(name, signature, _text(body, "description"), category, role))
    variables = [
        variable_from_item(item, f"variables[{i}]")
        for i, item in enumerate(_typed(data.get("variables"), "variables", list))
    ]
    relations = []
    for i, item in enumerate(_typed(data.get("relations"), "relations", list)):
        item = _typed(item, f"relations[{i}]", dict)
        if "source" not in item or "target" not in item:
            raise SpecError(f"relations[{i}] needs 'source' and 'target'", entry=f"relations[{i}]")
        relations.append(
            Relation(str(item["source"]), str(item["target"]), _text(item, "mechanism"))
        )
    out = _typed(data.get("outcome"), "outcome", dict)
    outcome = OutcomeConfig(
        _str_tuple(out.get("outcomes"), "outcome.outcomes"),
        _str_tuple(out.get("terminals"), "outcome.terminals"),
        _text(out, "description"),
    )
    spec = DomainSpec(
        tuple(dims),
        tuple(apply_outcome_roles(metrics, outcome)),
        tuple(variables),
        tuple(relations),
        outcome,
        _text(data, "domain"),
        _str_tuple(data.get("inferred"), "inferred"),
    )
    return validate_spec(spec) if validate else spec


def apply_outcome_roles(metrics: list[Metric], outcome: OutcomeConfig) -> list[Metric]:
    """Tag metrics named in the outcome configuration with their role (the config wins)."""
    from dataclasses import replace

    roles = {n: "outcome" for n in outcome.outcomes} | {n: "terminal" for n in outcome.terminals}
    return [replace(m, role=roles[m.name]) if m.name in roles else m for m in metrics]


def _entity_safe(e: str) -> bool:
    return not any(c in e for c in ",()") and e == e.strip() and e != ""


def spec_to_dict(spec: DomainSpec) -> dict:
    """The inverse of ``spec_from_dict``: plain data in the documented shape."""

    def var_item(v: Variable) -> Any:
        if all(_entity_safe(e) for e in v.entities):
            return {"name": v.name, "description": v.description} if v.description else v.name
        item = {"metric": v.metric, "entities": list(v.entities), "description": v.description}
        return _unset_dropped(item, "description")

    outcome = {
        "outcomes": list(spec.outcome.outcomes),
        "terminals": list(spec.outcome.terminals),
        "description": spec.outcome.description,
    }
    data = {
        "domain": spec.domain,
        "inferred": list(spec.inferred),
        "outcome": _unset_dropped(outcome, "description"),
        "dimensions": {d.name: _dimension_item(d) for d in spec.dimensions},
        "metrics": {
            (f"{m.name}({', '.join(m.signature)})" if m.signature else m.name): {
                "description": m.description,
                "category": m.category,
                "graph_role": m.role,
            }
            for m in spec.metrics
        },
        "variables": [var_item(v) for v in spec.variables],
        "relations": [
            {"source": r.source, "target": r.target, "mechanism": r.mechanism}
            for r in spec.relations
        ],
    }
    return _unset_dropped(data, "domain", "inferred")


def _unset_dropped(item: dict[str, Any], *optional: str) -> dict[str, Any]:
    """``item`` without those of its ``optional`` keys whose value is empty: an optional field
    is written only when set."""
    return {k: v for k, v in item.items() if v or k not in optional}


def _dimension_item(d: Dimension) -> dict[str, Any]:
    # Parents are written only when there are links, so older specs read back unchanged.
    item = {"description": d.description, "entities": list(d.entities), "parents": dict(d.parents)}
    return _unset_dropped(item, "parents")


INFERRED_NOTE = (
    "# Stage 1 inferred {fields} from the corpus (no --domain / outcome was given):\n"
    "# correct them here and rebuild with --spec.\n"
)


def spec_from_document(data: Any, *, path: Any = None) -> DomainSpec:
    """A DomainSpec from a parsed spec.yaml; an empty document (0 bytes, only blanks or comments)
    is refused naming the file: a spec hcg writes always holds its outcome, so an empty one is a
    mistake (an empty build would follow, with a warning that blames the corpus)."""
    if data is None:
        raise SpecError(
            "the spec is empty (no YAML mapping); give at least its metrics, or leave out --spec "
            "to infer one from the corpus",
            path=path,
        )
    return spec_from_dict(data)


def spec_from_yaml(text: str) -> DomainSpec:
    """Parse spec.yaml text (``hcg_core.bounded``: no aliases, bounded depth, no duplicate keys)."""
    from ..bounded import loads_yaml

    return spec_from_document(loads_yaml(text, error=SpecError))


def spec_to_yaml(spec: DomainSpec) -> str:
    """spec.yaml text; a spec with inferred fields opens with a comment saying which."""
    from ..bounded import dump_yaml

    # Without aliases: the bounded reader refuses them, and a shared list must not become one.
    text = dump_yaml(spec_to_dict(spec), sort_keys=False, allow_unicode=True, width=100)
    if spec.inferred:
        text = INFERRED_NOTE.format(fields=" and ".join(spec.inferred)) + text
    return text
