"""The offline builder on a tiny corpus, pinned exactly: every variable and edge, and what each option
changes. A change to any step shows up here as a named difference, not as a count that still fits.
"""

from __future__ import annotations

import pytest

from hcg_core.config import OfflineBuildConfig
from hcg_core.corpus import chunk_documents
from hcg_core.embedders import HashingEmbedder
from hcg_core.errors import ConfigError
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.offline import build_offline
from hcg_core.types import Dimension, DomainSpec, Metric, OutcomeConfig, SourceDocument, Variable

TEXT = """Smoking causes lung cancer. Asbestos causes lung cancer. Smoking causes skin cancer in rare
cases. Sunburn causes skin cancer. Sun exposure causes skin cancer. Skin cancer leads to death.
Lung cancer leads to death. Smoking raises blood pressure. Salt raises blood pressure. High blood
pressure causes stroke. Stroke causes death. Obesity causes diabetes. Diabetes affects vision.
Diabetes damages the kidneys."""

# (source, target, confidence, evidence as chunk positions, mechanism)
GOLDEN_EDGES = [
    ("Asbestos", "Cancer(general)", 0.456, (0,), "Asbestos causes lung cancer."),
    ("Asbestos", "Cancer(lung)", 0.57, (0,), "Asbestos causes lung cancer."),
    ("Blood_Pressure", "Stroke", 0.57, (2,), "High blood pressure causes stroke."),
    ("Cancer(general)", "Death", 0.432, (1,), "Lung cancer leads to death."),
    ("Cancer(lung)", "Death", 0.54, (1,), "Lung cancer leads to death."),
    ("Obesity", "Diabetes", 0.57, (2,), "Obesity causes diabetes."),
    ("Skin_Cancer", "Death", 0.54, (1,), "Skin cancer leads to death."),
    ("Smoking", "Blood_Pressure", 0.45, (1,), "Smoking raises blood pressure."),
    ("Smoking", "Cancer(general)", 0.456, (0,), "Smoking causes lung cancer."),
    ("Smoking", "Cancer(lung)", 0.57, (0,), "Smoking causes lung cancer."),
    ("Smoking", "Skin_Cancer", 0.57, (0,), "Smoking causes skin cancer in rare cases."),
    ("Stroke", "Death", 0.57, (2,), "Stroke causes death."),
    ("Sun", "Skin_Cancer", 0.57, (0, 1), "Sun exposure causes skin cancer."),
    ("Sunburn", "Skin_Cancer", 0.57, (0,), "Sunburn causes skin cancer."),
]
GOLDEN_VARIABLES = [
    ("Skin_Cancer", "aliases: skin cancer"),
    ("Blood_Pressure", "aliases: blood pressure"),
    ("Cancer(general)", ""),
    ("Cancer(lung)", "aliases: lung cancer"),
    ("Death", "aliases: death"),
    ("Diabetes", "aliases: diabetes"),
    ("Smoking", "aliases: smoking"),
    ("Stroke", "aliases: stroke"),
    ("Asbestos", "aliases: asbestos"),
    ("Obesity", "aliases: obesity"),
    ("Sun", "aliases: sun"),
    ("Sunburn", "aliases: sunburn"),
]
# The edges a statement gives only through lifting (the generic Cancer variable).
LIFTED = {
    ("Asbestos", "Cancer(general)"),
    ("Cancer(general)", "Death"),
    ("Smoking", "Cancer(general)"),
}


@pytest.fixture(scope="module")
def chunks():
    return chunk_documents(
        [SourceDocument("golden.txt", TEXT)], chunk_words=25, overlap_words=6, whole_words=37
    )


def _build(chunks, **options):
    return build_offline(
        chunks, embedder=HashingEmbedder(dim=256), tier="XS", embed_chunks=False, **options
    )


def _edges(result, chunks):
    pos = {c.id: i for i, c in enumerate(chunks)}
    return [
        (e.source, e.target, e.confidence, tuple(pos[c] for c in e.evidence), e.mechanism)
        for e in result.graph.edges
    ]


def _links(result):
    return {(e.source, e.target) for e in result.graph.edges}


@pytest.fixture(scope="module")
def golden(chunks):
    return _build(chunks)


def test_golden_graph(golden, chunks):
    assert len(chunks) == 3
    assert _edges(golden, chunks) == GOLDEN_EDGES
    assert [(v.name, v.description) for v in golden.graph.variables] == GOLDEN_VARIABLES
    spec = golden.graph.spec
    roles = {m.name: (m.signature, m.role) for m in spec.metrics}
    assert roles["Cancer"] == (("lung",), "intermediate")
    assert roles["Skin_Cancer"] == ((), "outcome")
    assert roles["Death"] == ((), "terminal")
    assert [m for m, (_, r) in roles.items() if r != "intermediate"] == ["Skin_Cancer", "Death"]
    assert spec.dimensions == (
        Dimension(
            "lung", ("lung", "general"), "entities that qualify 1 metrics, e.g. lung, general"
        ),
    )
    graph_stage = golden.report["stages"]["graph"]
    assert graph_stage["weak_single_sentence_variables_dropped"] == 0
    assert golden.report["stages"]["vocabulary"]["spans_dropped"] == 3  # salt, vision, kidney


def test_build_graph_keywords_and_config_agree(golden, chunks):
    via = build_graph(chunks, embedder=HashingEmbedder(dim=256), tier="XS", lift=False)
    cfg = _build(chunks, config=OfflineBuildConfig(lift=False))
    assert via.graph == cfg.graph != golden.graph
    with pytest.raises(ConfigError, match="unknown offline build option.*lfit"):
        build_graph(chunks, embedder=HashingEmbedder(dim=256), lfit=False)


def test_forced_terminal_emits_no_edge(golden, chunks):
    forced = _build(chunks, outcome=OutcomeConfig((), ("blood pressure",)))
    assert _links(golden) - _links(forced) == {("Blood_Pressure", "Stroke")}
    assert _links(forced) <= _links(golden)
    assert forced.report["stages"]["graph"]["edges_dropped_leaving_terminal"] == 1
    assert set(forced.graph.spec.outcome.terminals) == {"Death", "Blood_Pressure"}


# ------------------------------------------------------------------ one test per option


def test_option_lift(golden, chunks):
    off = _build(chunks, lift=False)
    assert _links(golden) - _links(off) == LIFTED
    assert _links(off) <= _links(golden)
    assert "Cancer(general)" not in {v.name for v in off.graph.variables}


def test_option_lift_discount(golden, chunks):
    half = _build(chunks, lift_discount=0.5)
    conf = {(e[0], e[1]): e[2] for e in _edges(half, chunks)}
    # One lifted "causes" sentence (0.95): 0.6 * 0.95 * 0.8 = 0.456 by default, * 0.5 -> 0.285.
    assert conf[("Smoking", "Cancer(general)")] == 0.285
    assert conf[("Smoking", "Cancer(lung)")] == 0.57  # direct support is not discounted
    with pytest.raises(ConfigError, match="lift_discount"):
        _build(chunks, lift_discount=0.0)


def test_option_drop_weak(chunks):
    # With every head a metric, three weak one-sentence variables appear; drop_weak removes them.
    weak_kept = _build(chunks, min_metric_support=1, drop_weak=False)
    dropped = _build(chunks, min_metric_support=1)
    assert _links(weak_kept) - _links(dropped) == {
        ("Salt", "Blood_Pressure"),
        ("Diabetes", "Vision"),
        ("Diabetes", "Kidney"),
    }
    assert dropped.report["stages"]["graph"]["weak_single_sentence_variables_dropped"] == 3


def test_option_min_metric_support(golden, chunks):
    # Salt has one weak statement: a metric only when one statement is enough.
    assert "Salt" not in {m.name for m in golden.graph.spec.metrics}
    every = _build(chunks, min_metric_support=1)
    assert every.report["stages"]["vocabulary"]["metrics"] == 14
    assert every.report["stages"]["vocabulary"]["spans_dropped"] == 0


def test_option_max_evidence(golden, chunks):
    one = {(e[0], e[1]): e[3] for e in _edges(_build(chunks, max_evidence=1), chunks)}
    assert {(e[0], e[1]): e[3] for e in GOLDEN_EDGES}[("Sun", "Skin_Cancer")] == (0, 1)
    assert one[("Sun", "Skin_Cancer")] == (0,)  # the mechanism's chunk is the one kept
    assert all(len(ev) == 1 for ev in one.values())
    with pytest.raises(ConfigError, match="max_evidence"):
        _build(chunks, max_evidence=0)


def test_option_min_variable_support(golden, chunks):
    # "skin cancer" is a compound head; "lung" an entity of Cancer with three statements: with
    # support 4 it collapses onto the generic Cancer variable (the metric then has no signature).
    assert _build(chunks, min_variable_support=3).graph == golden.graph
    four = _build(chunks, min_variable_support=4)
    names = {v.name for v in four.graph.variables}
    assert "Cancer(lung)" not in names and "Cancer" in names
    assert {("Smoking", "Cancer"), ("Asbestos", "Cancer"), ("Cancer", "Death")} <= _links(four)
    with pytest.raises(ConfigError, match="min_variable_support"):
        _build(chunks, min_variable_support=0)


def test_option_max_variables_per_metric(chunks):
    none = _build(chunks, max_variables_per_metric=0)
    assert not any("(" in v.name for v in none.graph.variables)
    assert ("Asbestos", "Cancer") in _links(none)


def test_option_metric_merge_threshold(golden, chunks):
    # At a near-zero threshold the dropped spans join their closest metric instead.
    loose = _build(chunks, metric_merge_threshold=-1.0)
    assert loose.report["stages"]["vocabulary"]["spans_dropped"] == 0
    assert golden.report["stages"]["vocabulary"]["spans_dropped"] == 3


SPEC = DomainSpec(
    dimensions=(Dimension("organ", ("lung", "skin")),),
    metrics=(
        Metric("Smoking", (), "smoking tobacco"),
        Metric("Cancer", ("organ",), "cancer of an organ: lung cancer, skin cancer"),
        Metric("Death", (), "death", role="terminal"),
    ),
    variables=(Variable("Cancer", ("lung",), "lung cancer"),),
)


def test_options_span_and_metric_match_thresholds(chunks):
    base = _build(chunks, spec=SPEC)
    assert _links(base) == {("Smoking", "Cancer(lung)"), ("Cancer(lung)", "Death")}
    # No span is close enough to the existing variable: spans become new entities of Cancer.
    strict_span = _build(chunks, spec=SPEC, span_match_threshold=1.01)
    assert _links(strict_span) == {
        ("Smoking", "Cancer(lung cancer)"),
        ("Smoking", "Cancer(skin cancer)"),
        ("Cancer(lung cancer)", "Death"),
        ("Cancer(skin cancer)", "Death"),
    }
    # No span is close enough to a metric: only "lung cancer" maps (onto the seed variable), so
    # no statement has both ends; the spec keeps its seed variable's metric.
    strict_metric = _build(chunks, spec=SPEC, metric_match_threshold=1.01)
    assert strict_metric.graph.edges == ()
    assert [m.name for m in strict_metric.graph.spec.metrics] == ["Cancer"]
    assert strict_metric.report["stages"]["vocabulary"]["spans_dropped"] == 12


def test_option_embed_chunks(golden, chunks):
    assert golden.chunk_embeddings is None and "embed_chunks" not in golden.report["stages"]
    embedded = build_offline(chunks, embedder=HashingEmbedder(dim=256), tier="XS")
    assert embedded.chunk_embeddings.shape == (len(chunks), 256)
    assert embedded.graph == golden.graph
