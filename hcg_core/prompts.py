"""Named prompt templates of the LLM pipeline (Stage 1 spec generation, Stage 2 Tier 1 and Tier 2).

Each template is a system text and a user text with ``{field}`` slots; ``Prompt.fields`` documents
every slot. Override one by passing ``prompts={"tier1": Prompt(...)}`` to the build. The rendered
user message ends with the response schema's name, so even a server in ``json_object`` mode (no
schema sent) can tell the replies apart, and so the cache key changes when a template changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import ConfigError

SCHEMA_MARKER = "Response schema name:"

_SYSTEM = (
    "You build a schema-constrained causal graph of a domain from its documents. Be precise and "
    "conservative: state only causal links the text supports. Reply with one JSON object that "
    "matches the given schema; use only the allowed names, exactly as written."
)


@dataclass(frozen=True)
class Prompt:
    """A chat prompt: ``render(schema_name, **fields)`` -> messages."""

    name: str
    user: str
    fields: Mapping[str, str] = field(default_factory=dict)
    system: str = _SYSTEM

    def render(self, schema_name: str, **values: str) -> list[dict[str, str]]:
        missing = set(self.fields) - set(values)
        if missing:
            raise ConfigError(f"prompt {self.name!r} needs fields {sorted(missing)}")
        user = self.user.format(**values).rstrip()
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": f"{user}\n\n{SCHEMA_MARKER} {schema_name}"},
        ]


PROMPTS: dict[str, Prompt] = {
    "dimensions": Prompt(
        "dimensions",
        "Domain: {domain}\nOutcomes the graph builds toward: {outcome}\n\n"
        "Read these excerpts and list the categorical DIMENSIONS of the domain (at most {cap}): "
        "axes such as disease, treatment or population, each with the concrete entities the "
        "excerpts name. Use short snake_case dimension names and the entities' usual names.\n\n"
        "{excerpts}",
        {
            "domain": "domain name or 'unknown'",
            "outcome": "outcome configuration text",
            "cap": "max dimensions (tier cap)",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "metrics": Prompt(
        "metrics",
        "Domain: {domain}\nOutcomes the graph builds toward: {outcome}\n"
        "Dimensions (use only these in signatures):\n{dimensions}\n\n"
        "From these excerpts, define measurable or assessable METRICS (at most {cap}) in "
        "CamelCase. Give each a signature (the dimensions it depends on), a one-paragraph "
        "description (what it is, what drives it, what it influences), a category, and a role: "
        "'terminal' for final sinks, 'outcome' for retrieval endpoints, else 'intermediate'.\n\n"
        "{excerpts}",
        {
            "domain": "domain name",
            "outcome": "outcome configuration text",
            "dimensions": "the dimensions with their entities",
            "cap": "max metrics (tier cap)",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "variables": Prompt(
        "variables",
        "Domain: {domain}\nDimensions and entities:\n{dimensions}\nMetrics (name(signature)):\n"
        "{metrics}\n\nList the concrete VARIABLES these excerpts discuss: a metric bound to one "
        "entity per dimension of its signature, in signature order.\n\n{excerpts}",
        {
            "domain": "domain name",
            "dimensions": "dimensions with entities",
            "metrics": "metrics with signatures",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "relations": Prompt(
        "relations",
        "Domain: {domain}\nVariables:\n{variables}\n\nList CAUSAL RELATIONS between these "
        "variables that the excerpts state or clearly imply: source causes/influences target, "
        "with a one-sentence mechanism. Use variable names exactly as listed.\n\n{excerpts}",
        {
            "domain": "domain name",
            "variables": "variable names, one a line",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "tier1": Prompt(
        "tier1",
        "Source metric: {source}\n{source_description}\n\nEvidence from the corpus:\n{evidence}\n\n"
        "Candidate target metrics:\n{candidates}\n\nFor EVERY candidate target, decide whether "
        "the source metric causally influences it in this domain (a metric-level template). "
        "Answer causal=true only with a plausible mechanism supported by the evidence or by "
        "well-established domain knowledge; give a short rationale.",
        {
            "source": "source metric with signature",
            "source_description": "its description",
            "evidence": "numbered evidence snippets found by embedding search",
            "candidates": "candidate target metrics with descriptions",
        },
    ),
    "tier2": Prompt(
        "tier2",
        "Template: {source_metric} -> {target_metric}\n{template}\n\nEvidence from the corpus:\n"
        "{evidence}\n\nCandidate edges (source -> target):\n{candidates}\n\nJudge every candidate: "
        "keep=true only if the source variable causally influences the target variable here. For "
        "kept edges give the mechanism (one sentence), a confidence in [0, 1], and, when the "
        "evidence states it, a verbatim quote. You may add edges between NEW variables of these "
        "two metrics, using only these entities:\n{entities}",
        {
            "source_metric": "source metric",
            "target_metric": "target metric",
            "template": "the Tier 1 rationale",
            "evidence": "numbered evidence snippets",
            "candidates": "numbered candidate pairs",
            "entities": "allowed entities per dimension",
        },
    ),
}


def get_prompt(name: str, overrides: Mapping[str, Prompt] | None = None) -> Prompt:
    """The template ``name``, from ``overrides`` first."""
    if overrides and name in overrides:
        return overrides[name]
    try:
        return PROMPTS[name]
    except KeyError:
        raise ConfigError(f"no prompt named {name!r}; known: {', '.join(PROMPTS)}") from None


__all__ = ["PROMPTS", "SCHEMA_MARKER", "Prompt", "get_prompt"]
