"""Stage 1 as it should be (issue 25): one metric per quantity, one dimension per axis, one
entity per thing, stages and subtypes linked to their parent; the causes the text discusses keep
their place under the metric cap; a domain inferred when none is given, written to spec.yaml for
the user to correct. The near-duplicates here are written by hand."""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.errors import SpecError
from hcg_core.spec.assemble import AssemblyReport, merge_dimensions, merge_metrics
from hcg_core.spec.generate import infer_domain, merge_metric_drafts
from hcg_core.spec.merge import MetricDraft, metric_groups, text_aliases
from hcg_core.spec.yaml_io import spec_from_yaml, spec_to_yaml
from hcg_core.types import Dimension, DomainSpec, Metric, OutcomeConfig


class Topics:
    """A test embedder: a text's vector counts its topic words, so 'definitions agree' is exact:
    two texts about the same topics embed alike."""

    name, dim = "topics", 6
    TOPICS = ("cure", "develop", "side", "stage", "population", "dose")

    def embed_documents(self, texts):
        rows = []
        for t in texts:
            low = t.lower()
            rows.append([low.count(w) for w in self.TOPICS] + [0.2])
        return np.array(rows, dtype=np.float32)


def embed(texts):
    return Topics().embed_documents(texts)


DRAFTS = [
    MetricDraft("CureProbability", "Chance that the cancer is cured."),
    MetricDraft("CureLikelihood", "The likelihood that a cancer is cured; cure comes after"),
    MetricDraft("CancerRisk", "Probability that a person will develop a given cancer."),
    MetricDraft("CancerDevelopmentRisk", "The chance of developing a given cancer."),
    MetricDraft("CancerIncidence", "Rate at which a cancer occurs in a population."),
    MetricDraft("TreatmentSideEffects", "The burden of side effects from treatment."),
    MetricDraft("TreatmentSideEffectBurden", "Extent of side effects of treatment."),
    MetricDraft("TreatmentToxicity", "The severity of harmful side effects of treatment."),
    MetricDraft("TreatmentSideEffectRisk", "The chance of having side effects of a treatment."),
    MetricDraft("ClinicalStage", "The stage assigned before treatment from exams."),
    MetricDraft("PathologicStage", "The stage found in tissue removed by surgery."),
    MetricDraft("TreatmentDose", "The dose of a treatment given."),
    MetricDraft("TreatmentDuration", "How long a treatment lasts, a dose schedule."),
]


def groups(mapping):
    out: dict[str, set[str]] = {}
    for name, canon in mapping.items():
        out.setdefault(canon, set()).add(name)
    return sorted(sorted(g) for g in out.values() if len(g) > 1)


def test_metrics_that_measure_one_quantity_merge_and_the_others_stay_apart():
    votes = {"CureLikelihood": 3, "CancerRisk": 2, "TreatmentSideEffects": 2}
    got = metric_groups(DRAFTS, embed, votes)
    assert groups(got) == [
        ["CancerDevelopmentRisk", "CancerRisk"],  # one head, a qualifier more
        ["CureLikelihood", "CureProbability"],  # probability / likelihood are one measure
        # "the severity of ... side effects of treatment" measures the side effects
        ["TreatmentSideEffectBurden", "TreatmentSideEffects", "TreatmentToxicity"],
    ]
    assert got["CureProbability"] == "CureLikelihood"  # named by the most proposed
    assert got["CancerIncidence"] == "CancerIncidence"  # a rate, not a person's probability
    assert got["TreatmentSideEffectRisk"] == "TreatmentSideEffectRisk"  # a chance of them
    assert got["ClinicalStage"] != got["PathologicStage"]  # two kinds of stage
    assert got["TreatmentDose"] != got["TreatmentDuration"]  # different quantities


def test_related_names_whose_definitions_disagree_stay_apart():
    drafts = [
        MetricDraft("CancerRisk", "Probability that a person will develop a given cancer."),
        MetricDraft("CancerDevelopmentRisk", "The dose a side effect needs."),
    ]
    assert groups(metric_groups(drafts, embed, {})) == []


def test_stage1_merge_renames_drafts_and_counts():
    drafts = [
        [{"name": "cure probability", "description": "Chance that the cancer is cured."}],
        [{"name": "CureLikelihood", "description": "The likelihood that the cancer is cured."}],
        [{"name": "CureLikelihood", "description": "Chance of a cure."}],
    ]
    report = AssemblyReport()
    renamed, _ = merge_metric_drafts(drafts, Topics(), None, report)
    assert {i["name"] for d in renamed for i in d} == {"CureLikelihood"}
    assert report.repaired["metric_near_duplicate_merged"] == 1


def test_dimensions_entities_aliases_and_parents():
    drafts = [
        [
            {"name": "body_site", "entities": ["bone", "lungs", "liver", "kidney"]},
            {"name": "cancer type", "entities": ["breast cancer", "ALL", "BCC"]},
        ],
        [
            {"name": "anatomic_site", "entities": ["bones", "lung", "brain"]},
            {"name": "cancer_type", "entities": ["metastatic breast cancer", "B-ALL"]},
            {"name": "cancer_type", "entities": ["basal cell carcinoma", "red cells (RBCs)"]},
            {"name": "treatment_type", "entities": ["surgery"]},
        ],
        [{"name": "treatment", "entities": ["chemotherapy"]}],
    ]
    texts = ["", "Basal cell carcinoma (BCC) is common.", ""]
    report = AssemblyReport()
    dims = {d.name: d for d in merge_dimensions(drafts, 6, report, texts=texts)}
    # One axis: overlapping entities (bone(s), lung(s)); names that say the same (treatment):
    # named by the most proposed, ties by the first seen.
    assert set(dims) == {"body_site", "cancer_type", "treatment_type"}
    assert dims["body_site"].entities == ("bone", "lungs", "liver", "kidney", "brain")
    assert dims["treatment_type"].entities == ("surgery", "chemotherapy")
    cancer = dims["cancer_type"]
    # BCC is the text's abbreviation of basal cell carcinoma: one entity; "(RBCs)" is cut off.
    assert "BCC" not in cancer.entities and "basal cell carcinoma" in cancer.entities
    assert "red cells" in cancer.entities
    assert cancer.parent_of("metastatic breast cancer") == "breast cancer"
    assert cancer.parent_of("B-ALL") == "ALL" and cancer.parent_of("ALL") is None
    assert report.repaired["dimension_near_duplicate_merged"] == 2
    assert report.repaired["entity_alias_merged"] == 1
    assert report.repaired["entity_linked_to_parent"] == 2


def test_text_aliases_need_both_names_to_be_entities():
    text = "Adrenal cancer, also called adrenocortical cancer (ACC), is rare."
    assert text_aliases(text, ["adrenal cancer", "adrenocortical cancer"]) == [
        ("adrenal cancer", "adrenocortical cancer")
    ]
    assert text_aliases(text, ["adrenal cancer"]) == []


def test_the_cap_keeps_the_causes_beside_many_outcomes():
    """The recorded run's failure: every batch tagged its metrics outcome or terminal, so the cap
    kept only those and no cause ever became a variable."""
    outcomes = [
        {"name": f"Outcome{i}", "role": "outcome", "description": "an endpoint"} for i in range(30)
    ]
    drivers = [{"name": f"Driver{i}", "role": "intermediate"} for i in range(6)]
    drafts = [outcomes, outcomes, drivers]  # the outcomes have more votes than the drivers
    metrics, outcome = merge_metrics(drafts, (), 20, None, AssemblyReport())
    names = {m.name for m in metrics}
    assert {f"Driver{i}" for i in range(6)} <= names and len(metrics) == 20
    assert set(outcome.outcomes) == names - {f"Driver{i}" for i in range(6)}  # only kept ones
    # A user's outcome configuration still decides roles and is always kept.
    metrics, _ = merge_metrics(drafts, (), 5, OutcomeConfig(("Outcome7",)), AssemblyReport())
    assert "Outcome7" in {m.name for m in metrics}


def test_infer_domain_takes_the_most_proposed():
    replies = [
        {"domain": "Cancer care.", "outcomes": ["survival", "recurrence"]},
        {"domain": "cancer care", "outcomes": ["survival"]},
        {"domain": "oncology nursing", "outcomes": []},
    ]
    assert infer_domain(replies) == ("Cancer care", ["survival", "recurrence"])
    assert infer_domain([{}]) == ("", [])


def test_spec_yaml_keeps_the_new_fields_and_reads_old_specs_as_before():
    old = "dimensions:\n  disease: {entities: [BCC]}\nmetrics:\n  Risk(disease): {}\n"
    spec = spec_from_yaml(old)
    assert spec.inferred == () and spec.dimensions[0].parents == ()
    assert "inferred" not in spec_to_yaml(spec) and "parents" not in spec_to_yaml(spec)
    spec = DomainSpec(
        (Dimension("disease", ("BCC", "local BCC"), "", (("local BCC", "BCC"),)),),
        (Metric("Risk", ("disease",)),),
        outcome=OutcomeConfig(description="candidate outcomes inferred from the corpus: cure"),
        domain="skin cancer care",
        inferred=("domain", "outcome"),
    )
    text = spec_to_yaml(spec)
    assert text.startswith("# Stage 1 inferred domain and outcome")
    assert spec_from_yaml(text) == spec
    with pytest.raises(SpecError, match="not one of its entities"):
        spec_from_yaml(text.replace("local BCC: BCC", "local BCC: SCC"))
    with pytest.raises(SpecError, match="inferred"):
        spec_from_yaml(text.replace("- outcome", "- metrics"))


def test_a_merged_metric_keeps_the_signature_its_proposals_agree_on():
    """A review's group: the keeper's first proposal named no dimension, the proposals it absorbs
    name one; the merged metric binds that dimension (live q9 lost its variables that way)."""
    from types import SimpleNamespace

    from hcg_core.spec.review import apply_metric_review

    dims = (Dimension("cancer_type", ("melanoma", "lung cancer")),)
    drafts = [
        [{"name": "Response", "signature": [], "description": "how the cancer responds"}],
        [{"name": "Cure", "signature": ["cancer_type"], "description": "cured"}],
        [{"name": "Cure", "signature": ["cancer_type"]}, {"name": "Smoking", "signature": []}],
    ]
    review = SimpleNamespace(
        same_quantity=[SimpleNamespace(keep="Response", absorbs=["Cure"])], causes=["Smoking"]
    )
    renamed, causes = apply_metric_review(drafts, review, AssemblyReport())
    assert causes == {"Smoking"}
    assert [i["name"] for d in renamed for i in d] == [
        "Response",
        "Response",
        "Response",
        "Smoking",
    ]
    assert renamed[1][0]["description"] == "how the cancer responds"  # the keeper's definition
    metrics, _ = merge_metrics(renamed, dims, 10, None, AssemblyReport())
    sig = {m.name: m.signature for m in metrics}
    assert sig == {"Response": ("cancer_type",), "Smoking": ()}  # a cause with none keeps none


def test_a_metric_whose_signature_bound_nothing_keeps_its_unbound_form():
    from hcg_core.spec.assemble import merge_variables, unbind_unused

    dims = (Dimension("body_site", ("skin", "cervix")),)
    metrics = (Metric("Infection", ("body_site",), ""), Metric("Spread", ("body_site",), ""))
    drafts = [[{"metric": "Spread", "entities": ["skin"]}, {"metric": "Infection", "entities": []}]]
    report = AssemblyReport()
    variables = merge_variables(drafts, metrics, dims, report)
    assert [v.name for v in variables] == ["Spread(skin)"]  # the short one is dropped
    metrics, variables = unbind_unused(metrics, variables, report)
    assert [v.name for v in variables] == ["Spread(skin)", "Infection"]
    assert {m.name: m.signature for m in metrics} == {"Infection": (), "Spread": ("body_site",)}
    assert report.repaired["metric_unbound_without_variables"] == 1


def test_the_assembly_report_names_only_what_happened():
    from hcg_core.spec.assemble import merge_variables

    dims = (Dimension("body_site", ("skin", "cervix")),)
    metrics = (Metric("Spread", ("body_site",), ""),)
    report = AssemblyReport()
    merge_variables([[{"metric": "Spread", "entities": ["skin"]}]], metrics, dims, report)
    assert report.as_dict() == {"dropped": {}, "repaired": {}}  # nothing was repaired
    merge_variables([[{"metric": "Spread", "entities": ["Skin"]}]], metrics, dims, report)
    assert report.as_dict()["repaired"] == {"variable_entity": 1}
