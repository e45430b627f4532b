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
    "conservative: state causal links the documents support; where a step allows it, a link that "
    "is well-established domain knowledge may be added, and its rationale says so. A causal link "
    "is DIRECT: the source changes the target without going through another listed metric or "
    "variable (a mediated effect is two links, each stated once). Reply with one JSON object "
    "that matches the given schema; use only the allowed names, exactly as written."
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
        "axes that identify WHAT a measurement is about, such as disease, population or organ, "
        "each with the concrete entities the excerpts name. Use short snake_case dimension names "
        "and the entities' usual names, as the excerpts spell them; one name per entity (not "
        "its plural, abbreviation or synonym as well), and a stage or subtype only as itself "
        "(metastatic breast cancer), never as a different disease. Where the schema asks for "
        "them, also give the domain in one line and the outcomes the text builds toward.\n\n"
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
        "CamelCase, one per distinct quantity (one name for one quantity: not both a "
        "probability and a likelihood of the same thing). Include the CAUSES the excerpts "
        "discuss (exposures, behaviours, treatments received, inherited conditions, risk "
        "factors) as metrics of their own, not only the outcomes. Give each a signature: the "
        "dimensions that IDENTIFY what the metric is measured for (usually one, often none); "
        "never put its causes, drivers or treatments in the signature. Give a description "
        "whose first sentence says what it measures, then what drives it and what it "
        "influences; a category; and a role: 'terminal' for the few final sinks, 'outcome' for "
        "key endpoints, 'intermediate' for everything else, causes included.\n\n{excerpts}",
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
        "entity per dimension of its signature, in signature order (an empty list for a metric "
        "without signature). Bind only entity combinations the excerpts actually pair with that "
        "metric.\n\n{excerpts}",
        {
            "domain": "domain name",
            "dimensions": "dimensions with entities",
            "metrics": "metrics with signatures",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "relations": Prompt(
        "relations",
        "Domain: {domain}\nVariables:\n{variables}\n\nList direct CAUSAL RELATIONS between "
        "these variables that the excerpts state or clearly imply: source causes/influences "
        "target, with a one-sentence mechanism. Source and target are full variable names, "
        "exactly as listed.\n\n{excerpts}",
        {
            "domain": "domain name",
            "variables": "variable names, one a line",
            "excerpts": "numbered corpus excerpts",
        },
    ),
    "tier1": Prompt(
        "tier1",
        "Domain: {domain}\nSource metric: {source}\n{source_description}\n\n"
        "Evidence from the corpus:\n{evidence}\n\n"
        "Links an earlier step proposed from other excerpts (previous judgements, not "
        "evidence; source -> target metric):\n{seeds}\n\n"
        "Candidate target metrics, each with an evidence line from the corpus:\n{candidates}\n\n"
        "For EVERY candidate target, decide whether the source metric DIRECTLY causes a change "
        "in it in this domain (a metric-level template); an effect that runs through another "
        "listed metric is not direct. List it under causal only with a mechanism the evidence "
        "above supports or that is well-established domain knowledge, with a short rationale "
        "saying which; list every other candidate under not_causal, by name only.",
        {
            "domain": "the domain, given or inferred",
            "source": "source metric with signature",
            "source_description": "its description",
            "evidence": "numbered evidence snippets found by embedding search",
            "seeds": "the spec's seed relations from this metric, lifted to metrics",
            "candidates": "candidate target metrics with descriptions and evidence lines",
        },
    ),
    "tier2": Prompt(
        "tier2",
        "Domain: {domain}\nTemplates (metric-level causal links to instantiate):\n{templates}\n\n"
        "Metrics:\n{metrics}\n\nEvidence from the corpus:\n{evidence}\n\n"
        "Candidate edges (source -> target):\n{candidates}\n\n"
        "Judge EVERY numbered candidate once: keep it only if the source variable directly "
        "causes a change in the target variable here. List a kept one under kept with its "
        "number, the effect (does raising the source increase or decrease the target?), the "
        "mechanism (one sentence), a confidence in [0, 1] and, when the evidence above states "
        "the link, a verbatim quote of those words (else leave evidence empty); list every "
        "other one under rejected, by its number alone.\n"
        "Then add new_edges for variables the evidence discusses that no candidate covers, "
        "between a template's source and target metric: one entity per signature dimension, "
        "chosen from these lists (entities) or, for an entity not listed, copied exactly from "
        "the evidence above (new_entities):\n{entities}",
        {
            "domain": "the domain, given or inferred",
            "templates": "the batch's Tier 1 templates (source -> target metric)",
            "metrics": "the templates' metrics with signatures and descriptions",
            "evidence": "numbered evidence snippets chosen for the batch's pairs",
            "candidates": "numbered candidate pairs",
            "entities": "allowed entities per dimension the templates use",
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
