"""The LLM build at corpus scale: Stage 1 covers a corpus larger than its budget (every topic
cluster is read), the estimate grows with the corpus, Tier 2 packs templates into few calls and
grows the vocabulary (a spec without variables builds edges), evidence matching is blockwise."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from fixtures.llm.responder import OUTCOME, load_chunks, respond

from hcg_core.config import DEFAULT_CHUNKS_PER_CALL
from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.evidence import snippet
from hcg_core.graph_build.llm_pipeline import estimate_build, format_estimate
from hcg_core.graph_build.llm_tiers import Template, tier2_batches
from hcg_core.spec.generate import STAGE1_CHUNK_BUDGET, cover_sample
from hcg_core.spec.review import REVIEW_CALLS
from hcg_core.testing import ScriptedLLM
from hcg_core.types import Chunk, Variable

EMB = HashingEmbedder()

# A synthetic corpus of many topics, each with its own vocabulary, several chunks per topic.
TOPICS = [
    ("anemia", "ferritin", "fatigue"),
    ("asthma", "bronchospasm", "wheezing"),
    ("cirrhosis", "fibrosis", "jaundice"),
    ("glaucoma", "intraocular", "blindness"),
    ("gout", "urate", "arthritis"),
    ("hepatitis", "virus", "inflammation"),
    ("lymphoma", "lymphocytes", "swelling"),
    ("malaria", "parasite", "fever"),
    ("melanoma", "ultraviolet", "metastasis"),
    ("migraine", "serotonin", "headache"),
    ("osteoporosis", "calcium", "fractures"),
    ("pancreatitis", "enzymes", "pain"),
    ("psoriasis", "keratinocytes", "plaques"),
    ("rickets", "vitamin", "deformity"),
    ("scurvy", "ascorbate", "bleeding"),
    ("sepsis", "bacteremia", "shock"),
    ("tetanus", "toxin", "spasms"),
    ("tuberculosis", "mycobacteria", "cough"),
    ("typhoid", "salmonella", "diarrhea"),
    ("vitiligo", "melanocytes", "depigmentation"),
    ("thyroiditis", "thyroxine", "goitre"),
    ("nephritis", "proteinuria", "oedema"),
    ("myopia", "refraction", "squinting"),
    ("rabies", "lyssavirus", "encephalitis"),
]
PER_TOPIC = 5


def topic_corpus() -> list[Chunk]:
    chunks = []
    for t, (disease, cause, symptom) in enumerate(TOPICS):
        for k in range(PER_TOPIC):
            text = (
                f"In {disease} patients, {cause} levels rise over time. Raised {cause} drives "
                f"{symptom} in {disease}; case {k} shows {cause} {cause} {disease} {symptom}. "
                f"Clinicians treating {disease} monitor {cause} and {symptom} closely."
            )
            chunks.append(Chunk(f"t{t}-{k}", text, doc_id=f"doc-{t}"))
    return chunks


class TopicResponder:
    """Proposes, from the excerpts it is shown only, the diseases they name (entities), a cause
    and a symptom metric per disease, variables and relations; records which chunks it read."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, req):
        name, prompt = req.schema_name, req.prompt
        shown = [t for t in TOPICS if re.search(rf"\b{t[0]}\b", prompt)]
        if name == "DimensionsReply":
            self.seen.update(t[0] for t in shown)
            return {"dimensions": [{"name": "disease", "entities": [t[0] for t in shown]}]}
        if name == "MetricsReply":
            return {
                "metrics": [
                    {"name": "CauseLevel", "signature": ["disease"], "description": "x"},
                    {"name": "SymptomBurden", "signature": ["disease"], "role": "outcome"},
                ]
            }
        if name == "VariablesReply":
            return {
                "variables": [
                    {"metric": m, "entities": {"disease": t[0]}}
                    for t in shown
                    for m in ("CauseLevel", "SymptomBurden")
                ]
            }
        if name == "ReviewDimensionsReply":
            return {"domain": "", "same_dimensions": [], "same_entities": []}
        if name == "ReviewMetricsReply":
            return {"same_quantity": [], "causes": []}
        if name == "CheckMetricsReply":
            return {"same_quantity": []}
        if name == "RelationsReply":
            return {"relations": []}
        if name == "Tier1Reply":
            src = req.enum("source")[0]
            targets = req.enum("causal", "target")
            causal = [t for t in targets if (src, t) == ("CauseLevel", "SymptomBurden")]
            return {
                "source": src,
                "causal": [{"target": t} for t in causal],
                "not_causal": [t for t in targets if t not in causal],
            }
        if name == "Tier2Reply":
            pairs = re.findall(r"^\d+\. (.+?) -> (.+)$", prompt, re.M)
            same = [s.split("(")[1] == t.split("(")[1] for s, t in pairs]
            return {
                "kept": [
                    {"candidate": n, "mechanism": "the cause drives the symptom", "confidence": 0.8}
                    for n, ok in enumerate(same, start=1)
                    if ok
                ],
                "rejected": [n for n, ok in enumerate(same, start=1) if not ok],
            }
        raise ValueError(name)


def test_stage1_covers_a_corpus_larger_than_its_budget():
    chunks = topic_corpus()  # 120 chunks, 24 topics
    budget = 40
    assert len(chunks) > budget
    responder = TopicResponder()
    r = build_graph(
        chunks, embedder=EMB, llm=ScriptedLLM(responder), tier="XS", spec_sample_chunks=budget
    )
    s1 = r.report["stages"]["stage1"]
    assert s1["sampled"] and s1["chunks_shown"] <= budget and s1["clusters"] == budget
    # Every topic cluster was read, though only a third of the chunks were.
    assert responder.seen == {t[0] for t in TOPICS}
    assert r.report["coverage"]["chunks_shown_to_stage1"] == pytest.approx(
        s1["chunks_shown"] / len(chunks), abs=1e-3
    )
    # ... and the graph covers topics from across the corpus.
    covered = {e.source.split("(")[1].rstrip(")") for e in r.graph.edges}
    assert covered == {t[0] for t in TOPICS}
    assert r.report["coverage"]["chunks_naming_a_variable_entity"] == 1.0


def test_cover_sample_takes_every_chunk_of_a_small_corpus_and_one_per_cluster():
    x = np.eye(6, dtype=np.float32)
    idx, info = cover_sample(x, 10)
    assert idx == list(range(6)) and not info["sampled"]
    blobs = np.repeat(np.eye(4, dtype=np.float32), 5, axis=0) + 0.01
    blobs /= np.linalg.norm(blobs, axis=1, keepdims=True)
    idx, info = cover_sample(blobs, 4)
    assert sorted({i // 5 for i in idx}) == [0, 1, 2, 3]  # one chunk from each blob
    assert info["mean_cosine_to_sample"] > 0.99


def test_estimate_stage1_grows_with_the_corpus_up_to_the_budget():
    small = load_chunks()
    big = load_chunks(copies=10)
    huge = load_chunks(copies=40)
    calls = [estimate_build(c, None, "XS")["stages"]["stage1"]["calls"] for c in (small, big, huge)]
    assert calls[0] < calls[1] <= calls[2]
    per_call = DEFAULT_CHUNKS_PER_CALL
    # bounded by the tier's budget: four steps per batch, and the two reviews
    assert calls[2] == 4 * -(-STAGE1_CHUNK_BUDGET["XS"] // per_call) + REVIEW_CALLS
    est = estimate_build(small, None, "XS")
    r = est["remark1"]
    assert r["candidates_max"] <= r["naive_pairs"]  # the Remark 1 line no longer exceeds |V|^2
    assert est["stages"]["tier2"]["calls_expected"] <= est["stages"]["tier2"]["calls_max"]
    assert "expected" in format_estimate(est)


def test_tier2_packs_templates_into_few_calls():
    # 122 templates with 316 proposed pairs in all (the recorded real run); each variable takes
    # part in one pair of a template, so a template sends min(sources, targets): at most 10 calls.
    variables, templates = [], []
    sizes = [(1, 2), (1, 3), (2, 2), (1, 1)] * 30 + [(2, 3), (2, 5)]
    for i, (ns, nt) in enumerate(sizes):
        variables += [Variable(f"S{i}", (f"s{j}",)) for j in range(ns)]
        variables += [Variable(f"T{i}", (f"t{j}",)) for j in range(nt)]
        templates.append(Template(f"S{i}", f"T{i}"))
    batches, counts = tier2_batches(templates, variables, 50)
    assert counts["candidates_proposed"] == sum(a * b for a, b in sizes) == 316
    assert counts["candidates"] == sum(len(b.pairs) for b in batches) == 154
    assert sum(min(a, b) for a, b in sizes) == 154
    assert len(templates) == 122 and len(batches) <= 10
    assert all(len(b.pairs) <= 50 for b in batches)


def test_tier2_asks_about_a_pair_in_one_direction_only():
    # Templates A -> B and B -> A (a live build's readers were offered "simulation -> radiation
    # therapy" and its reverse, and kept both: a two-node cycle): the later template's reversed
    # pairs are left out, its other pairs still go.
    variables = [Variable("A", (e,)) for e in ("x", "y")] + [
        Variable("B", (e,)) for e in ("x", "y", "z")
    ]
    both = [Template("A", "B"), Template("B", "A")]
    batches, counts = tier2_batches(both, variables, 50)
    pairs = [p for b in batches for p in b.pairs]
    assert len(pairs) == len(set(pairs)) and counts["candidates"] == len(pairs)
    assert not {(t, s) for s, t in pairs} & set(pairs)
    one_way, _ = tier2_batches(both[:1], variables, 50)
    assert set(one_way[0].pairs) <= set(pairs)
    assert len(pairs) > len(one_way[0].pairs)  # B -> A still sends pairs not asked the other way


def test_a_spec_with_metrics_and_no_variables_builds_a_graph():
    clean = build_graph(
        load_chunks(), embedder=EMB, llm=ScriptedLLM(respond), tier="XS", outcome=OUTCOME
    )
    bare = replace(clean.graph.spec, variables=(), relations=())
    r = build_graph(load_chunks(), embedder=EMB, llm=ScriptedLLM(respond), tier="XS", spec=bare)
    t2 = r.report["stages"]["tier2"]
    assert t2["templates_without_candidates"] == r.report["stages"]["tier1"]["templates"] > 0
    assert t2["new_variables"] >= 10 and len(r.graph.edges) >= 10
    # Every admitted variable's entities belong to the (possibly grown) dimensions.
    ents = {e for d in r.graph.spec.dimensions for e in d.entities}
    assert all(set(v.entities) <= ents for v in r.graph.variables)


def test_snippets_end_at_sentence_boundaries():
    text = (
        "lies between beats. Salt raises blood pressure.\nExercise lowers\nit. More words follow."
    )
    s = snippet(text, 60)
    assert s == "Salt raises blood pressure. Exercise lowers it."


def test_stage1_merges_by_meaning_and_caps_by_support():
    from hcg_core.spec.assemble import AssemblyReport, merge_dimensions, merge_metrics
    from hcg_core.spec.generate import merge_metric_drafts
    from hcg_core.types import Dimension

    report = AssemblyReport()
    dims = merge_dimensions(
        [
            [{"name": "drug", "entities": ["statins", "aspirin"]}],
            [{"name": "Drug", "entities": ["Statin"]}],
        ],
        5,
        report,
    )
    assert dims == (Dimension("drug", ("statins", "aspirin")),)
    assert report.repaired["entity_near_duplicate_merged"] == 1

    class Words:  # "ldl cholesterol" and "ldl cholesterol level" embed alike; the rest apart
        name, dim = "words", 4

        def embed_documents(self, texts):
            out = []
            for t in texts:
                if t.startswith("ldl"):
                    out.append([1.0, 0.0, 0.0, 0.0])
                elif t.startswith("clot"):
                    out.append([0.0, 1.0, 0.0, 0.0])
                else:
                    out.append([0.0, 0.0, 1.0, 0.0])
            return np.array(out)

    drafts = [
        [{"name": "LDLCholesterol"}, {"name": "Mood"}, {"name": "ClotFormation"}],
        [{"name": "LDLCholesterolLevel"}],
        [{"name": "LDLCholesterolLevel"}],
    ]
    # Most chunks are about clots: the cap of 2 keeps the merged LDL metric (3 batches) and
    # the clot metric (more corpus support than Mood), not the first ones proposed.
    chunks = np.array([[0.0, 1.0, 0.0, 0.0]] * 5 + [[0.0, 0.0, 1.0, 0.0]], dtype=np.float32)
    report = AssemblyReport()
    renamed, support = merge_metric_drafts(drafts, Words(), chunks, report)
    assert report.repaired["metric_near_duplicate_merged"] == 1
    metrics, _ = merge_metrics(renamed, (), 2, None, report, support=support)
    assert [m.name for m in metrics] == ["LDLCholesterolLevel", "ClotFormation"]


def test_the_tier2_estimate_follows_the_corpus_cohesion():
    # One subject: every chunk draws its words from one shared vocabulary. A mix: every chunk
    # its own words. The cohesive corpus is expected to make more Tier 2 calls (more templates,
    # more candidates each, fewer without any), read from the words alone.
    from hcg_core.graph_build.llm_pipeline import corpus_cohesion

    def word(n: int) -> str:  # letters only: "baaa", "caaa", ...
        return "".join(chr(97 + (n // 26**k) % 26) for k in range(4))

    one = [
        Chunk(str(i), " ".join(word((i * 13 + k * 31) % 400) for k in range(12)))
        for i in range(300)
    ]
    mixed = [
        Chunk(str(i), " ".join(word(1000 + i * 12 + k) for k in range(12))) for i in range(300)
    ]
    assert corpus_cohesion(one) > 0.9 > 0.1 > corpus_cohesion(mixed)
    calls = [
        estimate_build(c, None, "XS")["stages"]["tier2"]["calls_expected"] for c in (one, mixed)
    ]
    assert calls[0] > calls[1] > 0
