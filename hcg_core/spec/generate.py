"""Stage 1 with an LLM: dimensions -> metrics -> variables -> causal seed relations, from sampled
corpus chunks in batches, anchored by the outcome configuration; then the deterministic assembly.

The response models are built per call with ``Literal`` choices of the names already fixed
(dimensions for signatures, metrics for variables), and what comes back is validated again by
``hcg_core.spec.assemble``: the vocabulary is enforced twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from ..config import tier_caps
from ..errors import BuildError
from ..llm.accounting import Ledger, stage
from ..llm.runner import Failures, StageTimer, ask_item
from ..ports import StructuredLLM
from ..prompts import Prompt, get_prompt
from ..types import Chunk, DomainSpec, OutcomeConfig
from .assemble import (
    AssemblyReport,
    assemble_spec,
    merge_dimensions,
    merge_metrics,
    merge_relations,
    merge_variables,
)

DEFAULT_SPEC_SAMPLE_CHUNKS = 12  # chunks of the corpus Stage 1 reads (evenly spaced)
DEFAULT_CHUNKS_PER_CALL = 4  # chunks per Stage 1 call
DEFAULT_EXCERPT_CHARS = 1500  # characters of each chunk shown to Stage 1
STAGE1_STEPS = ("dimensions", "metrics", "variables", "relations")


def sample_chunks(chunks: Sequence[Chunk], n: int) -> list[Chunk]:
    """``n`` chunks evenly spaced over the corpus order (all of them when fewer).

    >>> [c.id for c in sample_chunks([Chunk(str(i), "") for i in range(10)], 4)]
    ['0', '3', '6', '9']
    """
    if n >= len(chunks):
        return list(chunks)
    if n <= 1:
        return [chunks[0]]
    return [chunks[round(i * (len(chunks) - 1) / (n - 1))] for i in range(n)]


def batch(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def excerpts(chunks: Sequence[Chunk], chars: int) -> str:
    return "\n\n".join(f"[{i + 1}] {c.text[:chars]}" for i, c in enumerate(chunks))


def _choice(names: Sequence[str]) -> Any:
    # Literal of the allowed names; a plain str when there is nothing to choose from yet.
    return Literal[tuple(names)] if names else str  # type: ignore[return-value]


class DimensionItem(BaseModel):
    name: str
    description: str = ""
    entities: list[str] = Field(default_factory=list)


class DimensionsReply(BaseModel):
    dimensions: list[DimensionItem]


class RelationItem(BaseModel):
    source: str
    target: str
    mechanism: str = ""


class RelationsReply(BaseModel):
    relations: list[RelationItem]


def metrics_model(dimension_names: Sequence[str]) -> type[BaseModel]:
    """``MetricsReply`` whose signatures may only use the given dimensions."""
    item = create_model(
        "MetricItem",
        name=(str, ...),
        signature=(list[_choice(dimension_names)], Field(default_factory=list)),
        description=(str, ""),
        category=(str, "general"),
        role=(Literal["terminal", "outcome", "intermediate"], "intermediate"),
    )
    return create_model("MetricsReply", metrics=(list[item], ...))


def variables_model(metric_names: Sequence[str]) -> type[BaseModel]:
    """``VariablesReply`` whose variables may only bind the given metrics."""
    item = create_model(
        "VariableItem",
        metric=(_choice(metric_names), ...),
        entities=(list[str], Field(default_factory=list)),
        description=(str, ""),
    )
    return create_model("VariablesReply", variables=(list[item], ...))


def _outcome_text(outcome: OutcomeConfig | None) -> str:
    if outcome is None:
        return "not given: choose the final outcomes (terminal) and key endpoints (outcome)"
    parts = []
    if outcome.outcomes:
        parts.append("outcome metrics: " + ", ".join(outcome.outcomes))
    if outcome.terminals:
        parts.append("terminal metrics: " + ", ".join(outcome.terminals))
    if outcome.description:
        parts.append(outcome.description)
    return "; ".join(parts) or "none"


def _dims_text(spec_dims: Sequence[Any]) -> str:
    return "\n".join(f"- {d.name}: {', '.join(d.entities)}" for d in spec_dims) or "(none)"


def _metrics_text(metrics: Sequence[Any]) -> str:
    return "\n".join(f"- {m.name}({', '.join(m.signature)})" for m in metrics) or "(none)"


async def agenerate_spec(
    chunks: Sequence[Chunk],
    llm: StructuredLLM,
    *,
    ledger: Ledger,
    failures: Failures,
    tier: str,
    outcome: OutcomeConfig | None = None,
    domain: str = "",
    sample_size: int = DEFAULT_SPEC_SAMPLE_CHUNKS,
    chunks_per_call: int = DEFAULT_CHUNKS_PER_CALL,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    prompts: Mapping[str, Prompt] | None = None,
) -> tuple[DomainSpec, dict[str, Any]]:
    """Generate and assemble a spec; returns it with an assembly report (dropped/repaired counts).

    Makes ``4 * ceil(min(sample_size, len(chunks)) / chunks_per_call)`` calls, one per step and
    batch; all calls of a step run concurrently. Calls are charged to ledger stage ``stage1``.

    Raises:
        BuildError: when no usable dimension or metric came back (nothing to build on).
    """
    caps = tier_caps(tier)
    batches = batch(sample_chunks(chunks, sample_size), chunks_per_call)
    texts = [excerpts(b, excerpt_chars) for b in batches]
    report = AssemblyReport()

    async def step(
        name: str, model: type[BaseModel], field_name: str, **values: str
    ) -> list[list[dict[str, Any]]]:
        prompt = get_prompt(name, prompts)
        replies = await asyncio.gather(
            *(
                ask_item(
                    llm,
                    prompt.render(model.__name__, excerpts=t, **values),
                    model,
                    item=f"{name}[batch {i}]",
                    ledger=ledger,
                    failures=failures,
                )
                for i, t in enumerate(texts)
            )
        )
        return [[x.model_dump() for x in getattr(r, field_name)] for r in replies if r is not None]

    dom = domain or "unknown"
    with stage("stage1"), StageTimer(ledger, "stage1"):
        dims = merge_dimensions(
            await step(
                "dimensions",
                DimensionsReply,
                "dimensions",
                domain=dom,
                outcome=_outcome_text(outcome),
                cap=str(caps.max_dimensions),
            ),
            caps.max_dimensions,
            report,
        )
        if not dims:
            raise BuildError(
                "Stage 1 found no dimensions: the LLM failed or the corpus sample "
                "names no entities; see the failures, or pass --spec"
            )
        metric_drafts = await step(
            "metrics",
            metrics_model([d.name for d in dims]),
            "metrics",
            domain=dom,
            outcome=_outcome_text(outcome),
            dimensions=_dims_text(dims),
            cap=str(caps.max_metrics),
        )
        metrics, final_outcome = merge_metrics(
            metric_drafts, dims, caps.max_metrics, outcome, report
        )
        if not metrics:
            raise BuildError("Stage 1 produced no metrics; see the failures, or pass --spec")
        var_drafts = await step(
            "variables",
            variables_model([m.name for m in metrics]),
            "variables",
            domain=dom,
            dimensions=_dims_text(dims),
            metrics=_metrics_text(metrics),
        )
        variables = merge_variables(var_drafts, metrics, dims, report)
        rel_drafts = await step(
            "relations",
            RelationsReply,
            "relations",
            domain=dom,
            variables="\n".join(f"- {v.name}" for v in variables) or "(none)",
        )
        relations = merge_relations(rel_drafts, variables, metrics, report)
        spec = assemble_spec(dims, metrics, variables, relations, final_outcome, domain=domain)
    return spec, {
        "batches": len(batches),
        "calls_planned": len(STAGE1_STEPS) * len(batches),
        **report.as_dict(),
    }


def stage1_calls(
    n_chunks: int,
    *,
    sample_size: int = DEFAULT_SPEC_SAMPLE_CHUNKS,
    chunks_per_call: int = DEFAULT_CHUNKS_PER_CALL,
) -> int:
    """Exact number of Stage 1 items (calls without retries, re-asks or cache hits)."""
    n = min(sample_size, n_chunks)
    return len(STAGE1_STEPS) * -(-n // chunks_per_call)


__all__ = [
    "DEFAULT_CHUNKS_PER_CALL",
    "DEFAULT_SPEC_SAMPLE_CHUNKS",
    "DimensionsReply",
    "RelationsReply",
    "agenerate_spec",
    "metrics_model",
    "sample_chunks",
    "stage1_calls",
    "variables_model",
]
