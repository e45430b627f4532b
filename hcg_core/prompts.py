"""Named prompt templates of the LLM pipeline (Stage 1 spec generation, Stage 2 Tier 1 and Tier 2).

Each template is a system text and a user text with ``{field}`` slots (``Prompt.fields``). Override one by passing ``prompts={"tier1": Prompt(...)}`` to the build. The rendered
user message ends with the response schema's name, so even a server in ``json_object`` mode (no
schema sent) can tell the replies apart, and so the cache key changes when a template changes.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass

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
    system: str = _SYSTEM

    @property
    def fields(self) -> frozenset[str]:
        """The ``{field}`` slots of the user text, every one of which ``render`` needs."""
        return frozenset(f for _, f, _, _ in string.Formatter().parse(self.user) if f)

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
        "its plural, abbreviation or synonym as well: 'CT scan', not also 'CT'), and a stage or "
        "subtype only as itself (metastatic breast cancer), never as a different disease. The "
        "excerpts are a sample from across a larger corpus: where the schema asks for them, "
        "also give the domain in one line, for the whole corpus the excerpts suggest, and the "
        "outcomes the text builds toward.\n\n"
        "{excerpts}",
    ),
    "metrics": Prompt(
        "metrics",
        "Domain: {domain}\nOutcomes the graph builds toward: {outcome}\n"
        "Dimensions (use only these in signatures):\n{dimensions}\n\n"
        "From these excerpts, define measurable or assessable METRICS (at most {cap}) in "
        "CamelCase, one per distinct quantity (one name for one quantity: not both a "
        "probability and a likelihood of the same thing). Include the CAUSES the excerpts "
        "discuss (exposures, behaviours, infections, inherited conditions, risk factors) as "
        "metrics of their own (SmokingStatus, not only the cancers it causes), not only the "
        "outcomes. Give each a signature: the dimensions that IDENTIFY what the metric is "
        "measured for (usually one, often none), e.g. TreatmentReceived(treatment) for which "
        "treatment was received; a dimension that only names a cause or driver of the metric "
        "(a treatment that changes survival) stays out of its signature. Give a description "
        "whose first sentence says what it measures, then what drives it and what it "
        "influences; a category; and a role: 'terminal' for the few final sinks, 'outcome' for "
        "key endpoints, 'intermediate' for everything else, causes included.\n\n{excerpts}",
    ),
    "variables": Prompt(
        "variables",
        "Domain: {domain}\nDimensions and entities:\n{dimensions}\nMetrics (name(signature)):\n"
        "{metrics}\n\nList the concrete VARIABLES these excerpts discuss: a metric bound to one "
        "entity for each dimension of its signature (each dimension's field offers only that "
        "dimension's entities; leave a field empty when it is not in the metric's signature). "
        "Bind only entity combinations the excerpts actually pair with that metric; a metric "
        "without signature is one variable with every field empty.\n\n{excerpts}",
    ),
    "relations": Prompt(
        "relations",
        "Domain: {domain}\nVariables:\n{variables}\n\nList direct CAUSAL RELATIONS between "
        "these variables that the excerpts state or clearly imply: source causes/influences "
        "target, with a one-sentence mechanism. Source and target are full variable names, "
        "exactly as listed.\n\n{excerpts}",
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
    ),
    "tier2": Prompt(
        "tier2",
        "Domain: {domain}\nTemplates (metric-level causal links to instantiate):\n{templates}\n\n"
        "Metrics:\n{metrics}\n\nEvidence from the corpus:\n{evidence}\n\n"
        "Candidate edges (source -> target):\n{candidates}\n\n"
        "Judge EVERY numbered candidate once: keep it only if the source variable directly "
        "causes a change in the target variable here. List a kept one under kept with its "
        "number, the effect (does raising the source increase or decrease the target? 'not "
        "stated' when the direction depends on a result or the text does not say), the "
        "mechanism (one sentence), a confidence in [0, 1] and, when the evidence above states "
        "the link, a verbatim quote of those words (else leave evidence empty); put the number "
        "of every other one in rejected.\n"
        "Then add new_edges for variables the evidence discusses that no candidate covers, "
        "between a template's source and target metric: for each dimension of the metric's "
        "signature, its field picks an entity from that dimension's list (leave the fields of "
        "other dimensions empty), or, for an entity not listed, leave that field empty and copy "
        "the entity exactly from the evidence above into new_entities:\n{entities}",
    ),
    "review_dimensions": Prompt(
        "review_dimensions",
        "Several readers each read a different sample of one corpus and proposed the "
        "dimensions below (categorical axes, with their entities), after a first merge of "
        "plain spelling variants. Proposed one-line domains, one per sample:\n{domains}\n\n"
        "Dimensions:\n{dimensions}\n\n"
        "As an expert curating this vocabulary: (1) write the domain in one line for the "
        "WHOLE corpus, covering what all the samples show, not one sample; (2) list the "
        "dimensions that are one axis under another name (same_dimensions: the name to keep "
        "and the ones it absorbs); (3) within each dimension, list the entities that name the "
        "same thing (same_entities: a synonym, an abbreviation, a plural, 'X' and 'X test' or "
        "'X scan' for one test, a short and a full name of one place or body, one group "
        "named with and without a word that adds nothing, as 'car drivers' and 'drivers' in "
        "a corpus about drivers), the name to keep first. Do not merge different things, "
        "subtypes or stages into their parent. List only real duplicates; none is fine.",
    ),
    "review_metrics": Prompt(
        "review_metrics",
        "Domain: {domain}\n\nSeveral readers each read a different sample of the corpus and "
        "proposed these metrics (name(signature): definition [role; proposed by N samples]), "
        "after a first merge of names that differ only in wording:\n{metrics}\n\n"
        "As an expert curating this vocabulary to at most {cap} metrics: (1) list the groups "
        "of proposals that measure the same quantity (same_quantity: the name to keep and the "
        "ones it absorbs): synonyms, a special case of another proposal (receiving one "
        "intervention within receiving interventions, a success within an effectiveness), or "
        "a chance and an occurrence of the same event, two ends of one scale (a good state "
        "and its impairment, as 'AirQuality' and 'AirPollution'), or a definition that covers "
        "another's quantity (a 'whether or how much' beside a 'how much' of the same thing), or "
        "one that is the top of another's scale (whether a goal was reached beside how far "
        "toward it things went); keep apart quantities an expert keeps apart; (2) list under causes the metrics that measure a cause the corpus discusses "
        "(an exposure, behaviour, infection, inherited condition or risk factor), so that they "
        "are kept.",
    ),
    "check_metrics": Prompt(
        "check_metrics",
        "Domain: {domain}\n\nThese are the metrics kept for the graph (name(signature): "
        "definition):\n{metrics}\n\nAs an expert, list any groups of them that measure the "
        "same quantity of the same thing under two names (as 'TrafficCongestion' and "
        "'RoadCongestion' would), including two ends of one scale (a good state and its "
        "impairment, as 'AirQuality' and 'AirPollution') and a definition that covers another's "
        "quantity (a 'whether or how much' beside a 'how much' of the same thing) or is the "
        "top of its scale (whether a goal was reached beside how far toward it things went), "
        "the name to keep first. Read the definitions, not only the names. Quantities an expert keeps "
        "apart stay apart; none is fine.",
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
