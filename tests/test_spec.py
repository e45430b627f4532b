"""spec.yaml round trip and validation errors that name the offending entry."""

from __future__ import annotations

import pytest

from hcg_core.errors import SpecError
from hcg_core.spec import spec_from_yaml, spec_to_yaml
from hcg_core.store import read_spec_file

GOOD = """
domain: oncology
outcome: {outcomes: [SurvivalRate], terminals: [PatientOutcome]}
dimensions:
  disease: {description: cancers, entities: [NSCLC, BCC]}
  treatment: [chemotherapy, "surgery, open"]
metrics:
  Efficacy(treatment, disease): {description: how well it works, category: treatment}
  SurvivalRate(disease): {category: outcome}
  PatientOutcome: {}
variables:
  - Efficacy(chemotherapy, NSCLC)
  - {metric: Efficacy, entities: ["surgery, open", BCC], description: an entity with a comma}
  - SurvivalRate(NSCLC)
  - PatientOutcome
relations:
  - {source: "Efficacy(chemotherapy, NSCLC)", target: SurvivalRate(NSCLC), mechanism: kills cells}
"""


def test_round_trip_is_exact():
    spec = spec_from_yaml(GOOD)
    assert [m.role for m in spec.metrics] == ["intermediate", "outcome", "terminal"]
    assert spec.variables[1].entities == ("surgery, open", "BCC")
    assert spec_from_yaml(spec_to_yaml(spec)) == spec


def test_example_spec_round_trips():
    from pathlib import Path

    spec = read_spec_file(Path(__file__).parent.parent / "examples/hand_graph/spec.yaml")
    assert spec_from_yaml(spec_to_yaml(spec)) == spec


@pytest.mark.parametrize(
    "edit,entry,message",
    [
        (("- SurvivalRate(NSCLC)", "- Toxicity(NSCLC)"), "Toxicity(NSCLC)", "undefined metric"),
        (
            ("SurvivalRate(disease): {category: outcome}", "SurvivalRate(stage): {}"),
            "SurvivalRate",
            "undefined dimension 'stage'",
        ),
        (
            ("- SurvivalRate(NSCLC)", "- SurvivalRate(melanoma)"),
            "SurvivalRate(melanoma)",
            "not in dimension 'disease'",
        ),
        (
            (
                "target: SurvivalRate(NSCLC)",
                "target: PatientOutcome}\n  - {source: PatientOutcome, target: SurvivalRate(NSCLC)",
            ),
            "relation 'PatientOutcome' -> 'SurvivalRate(NSCLC)'",
            "terminal",
        ),
        (
            ("  - PatientOutcome\nrelations", "  - PatientOutcome\n  - PatientOutcome\nrelations"),
            "PatientOutcome",
            "duplicate variable",
        ),
        (
            ("treatment: [chemotherapy", "treatment: [chemotherapy, chemotherapy"),
            "chemotherapy",
            "duplicate",
        ),
        (
            ("outcome: {outcomes: [SurvivalRate]", "outcome: {outcomes: [Survival]"),
            "Survival",
            "undefined metric",
        ),
        (
            ("category: treatment}", "category: treatment, graph_role: sink}"),
            "Efficacy",
            "graph_role 'sink'",
        ),
    ],
)
def test_errors_name_the_entry(edit, entry, message):
    old, new = edit
    assert old in GOOD
    with pytest.raises(SpecError) as err:
        spec_from_yaml(GOOD.replace(old, new, 1))
    assert err.value.entry == entry
    assert message in str(err.value)


def test_invalid_yaml_and_shapes():
    with pytest.raises(SpecError, match="invalid YAML"):
        spec_from_yaml("metrics: [")
    with pytest.raises(SpecError, match="must be a mapping"):
        spec_from_yaml("- a list")
    with pytest.raises(SpecError, match="unknown top-level keys"):
        spec_from_yaml("metricz: {}")
