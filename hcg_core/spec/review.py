"""Stage 1's expert review: one LLM call per vocabulary (dimensions with entities, then metrics)
that merges what the rules of ``spec.merge`` cannot tell apart by wording.

The deterministic merge (``spec.merge``) joins spellings, plurals and names that differ only in
wording. Names for one thing in other words (``Cure`` / ``TreatmentSuccess``, ``body_site`` /
``anatomical_site``) need a reader: each review sends the merged vocabulary once, with how many
samples proposed each name, and gets back groups by name (enums of the names shown); a last call
checks the metrics the cap kept, which a long list of proposals can hide duplicates among
(``check_metrics_model``). Applying a reply is pure: ``apply_dimension_review`` and ``apply_metric_review`` rename and union, and never
invent a name. The dimensions review also writes the domain line for the whole corpus from the
lines each sample proposed. A failed or refused review leaves the deterministic merge as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, create_model

from ..llm.structured import capped_list, capped_text, named_choice
from ..types import Dimension
from .assemble import AssemblyReport, batch_votes, first_proposals, metric_name
from .merge import definition

REVIEW_CALLS = 3  # the dimensions review, the metrics review, the check of the kept metrics
MAX_DOMAIN_CHARS = 200
MAX_GROUPS = 60  # groups one review may list (maxItems)
MAX_GROUP_MEMBERS = 12


def choice(names: Sequence[Any]) -> Any:
    """A ``Literal`` of the allowed names; a plain str when there is nothing to choose from yet."""
    return Literal[tuple(names)] if names else str  # type: ignore[return-value]


def _group_model(model_name: str, name_type: Any, **first: Any) -> type[BaseModel]:
    """A group of names that are one: the name to ``keep`` and the names it ``absorbs`` (after
    the fields ``first``, if any)."""
    return create_model(
        model_name,
        **first,
        keep=(name_type, ...),
        absorbs=(list[name_type], capped_list(MAX_GROUP_MEMBERS)),
    )


def dimensions_review_model(dimensions: Sequence[str], entities: Sequence[str]) -> type[BaseModel]:
    """``ReviewDimensionsReply``: the domain line, dimension groups, entity groups (by name)."""
    dim = choice(dimensions)
    dim_group = _group_model("SameDimensions", dim)
    entity = named_choice(list(dict.fromkeys(entities)))  # an enum lists each name once
    entity_group = _group_model("SameEntities", entity, dimension=(dim, ...))
    return create_model(
        "ReviewDimensionsReply",
        domain=(str, capped_text(MAX_DOMAIN_CHARS)),
        same_dimensions=(list[dim_group], capped_list(max(1, len(dimensions) // 2))),
        same_entities=(list[entity_group], capped_list(MAX_GROUPS)),
    )


def metrics_review_model(names: Sequence[str], cap: int) -> type[BaseModel]:
    """``ReviewMetricsReply``: groups of one quantity, and the metrics that are causes."""
    metric = choice(names)
    group = _group_model("SameQuantity", metric)
    return create_model(
        "ReviewMetricsReply",
        same_quantity=(list[group], capped_list(max(1, min(MAX_GROUPS, len(names) // 2)))),
        causes=(list[metric], capped_list(max(1, cap))),
    )


def check_metrics_model(names: Sequence[str]) -> type[BaseModel]:
    """``CheckMetricsReply``: groups of the kept metrics that measure one quantity."""
    group = _group_model("SameKeptQuantity", choice(names))
    return create_model(
        "CheckMetricsReply",
        same_quantity=(list[group], capped_list(max(1, len(names) // 2))),
    )


def dimensions_text(dims: Sequence[Dimension]) -> str:
    return "\n".join(f"- {d.name}: {', '.join(d.entities)}" for d in dims) or "(none)"


def metrics_text(drafts: Sequence[Sequence[Mapping[str, Any]]]) -> tuple[str, list[str]]:
    """One line per distinct proposed metric (first proposal's signature, definition and role,
    and how many samples proposed it), and the names in first-seen order."""
    first = first_proposals(drafts)
    votes = batch_votes(drafts, lambda i: metric_name(i.get("name", "")))
    lines = []
    for n, item in first.items():
        sig = ", ".join(str(s) for s in item.get("signature", []) or [])
        what = definition(str(item.get("description", "") or "")) or "(no definition)"
        lines.append(f"- {n}({sig}): {what} [{item.get('role', 'intermediate')}; {votes[n]}]")
    return "\n".join(lines) or "(none)", list(first)


def _resolve(groups: Sequence[tuple[str, Sequence[str]]], allowed: set[str]) -> dict[str, str]:
    """absorbed name -> kept name, following chains (A absorbs B, B absorbs C: C -> A); names
    outside ``allowed`` and self-references are ignored; a cycle keeps its first keeper."""
    parent: dict[str, str] = {}
    for keep, absorbs in groups:
        if keep not in allowed:
            continue
        for a in absorbs:
            if a in allowed and a != keep and a not in parent:
                parent[a] = keep
    out: dict[str, str] = {}
    for a in parent:
        seen = {a}
        k = parent[a]
        while k in parent and parent[k] not in seen:
            seen.add(k)
            k = parent[k]
        if k != a:
            out[a] = k
    return out


def apply_dimension_review(
    dims: Sequence[Dimension], reply: Any, report: AssemblyReport
) -> tuple[tuple[Dimension, ...], str]:
    """The dimensions after the review's merges, and the domain line it wrote ("" if none)."""
    by_name: dict[str, Dimension] = {d.name: d for d in dims}
    moved = _resolve([(g.keep, g.absorbs) for g in reply.same_dimensions], set(by_name))
    for gone, keep in moved.items():
        a, b = by_name[keep], by_name[gone]
        ents = list(dict.fromkeys((*a.entities, *b.entities)))
        by_name[keep] = replace(a, entities=tuple(ents), parents=(*a.parents, *b.parents))
        report.repaired["dimension_merged_by_review"] += 1
    out = {n: d for n, d in by_name.items() if n not in moved}
    groups: dict[str, list[tuple[str, Sequence[str]]]] = {}
    for g in reply.same_entities:
        groups.setdefault(moved.get(g.dimension, g.dimension), []).append((g.keep, g.absorbs))
    for dname, gs in groups.items():
        d = out.get(dname)
        if d is None:
            continue
        renamed = _resolve(gs, set(d.entities))
        if not renamed:
            continue
        report.repaired["entity_merged_by_review"] += len(renamed)
        ents = tuple(e for e in d.entities if e not in renamed)
        parents = {
            renamed.get(c, c): renamed.get(p, p)
            for c, p in d.parents
            if renamed.get(c, c) != renamed.get(p, p) and renamed.get(c, c) in ents
        }
        out[dname] = replace(d, entities=ents, parents=tuple(parents.items()))
    domain = " ".join(str(reply.domain or "").split())[:MAX_DOMAIN_CHARS].rstrip(".")
    return tuple(d for d in out.values()), domain


def apply_metric_review(
    drafts: Sequence[Sequence[Mapping[str, Any]]], reply: Any, report: AssemblyReport
) -> tuple[list[list[dict[str, Any]]], set[str]]:
    """The drafts with every absorbed metric proposal replaced by its keeper's first proposal
    (name, definition, role) but keeping its own signature (``merge_metrics`` settles the
    signature the group's proposals agree on), and the names the review called causes."""
    first = first_proposals(drafts)
    moved = _resolve([(g.keep, g.absorbs) for g in reply.same_quantity], set(first))
    report.repaired["metric_merged_by_review"] += len(moved)
    renamed = [
        [
            {**first[moved[n]], "signature": i.get("signature", [])}
            if (n := metric_name(i.get("name", ""))) in moved
            else dict(i)
            for i in draft
        ]
        for draft in drafts
    ]
    causes = {moved.get(c, c) for c in getattr(reply, "causes", ()) if c in first}
    return renamed, causes
