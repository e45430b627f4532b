"""The review tools without a browser: flags, the page's data, corrections, diff and exports."""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import yaml

from hcg_core.audit.corrections import apply_corrections, apply_to_directory, read_corrections
from hcg_core.audit.diff import diff_graphs, is_empty
from hcg_core.audit.export import (
    split_list,
    to_csv_files,
    to_cypher,
    to_gexf,
    to_graphml,
    to_mermaid,
)
from hcg_core.audit.review import review_flags, supporting_sentence
from hcg_core.audit.view import render_html, view_data
from hcg_core.cli import main
from hcg_core.errors import ConfigError, CorruptFileError, StoreError
from hcg_core.store import load_graph, save_graph
from hcg_core.types import (
    CausalEdge,
    CausalGraph,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
)

ROOT = Path(__file__).resolve().parents[1]
HAND = ROOT / "examples" / "hand_graph"


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    """examples/corpus built offline with the hashing embedder (vectors stored)."""
    out = tmp_path_factory.mktemp("g") / "corpus_graph"
    rc = main(
        ["build", str(ROOT / "examples" / "corpus"), "--out", str(out), "--embedder", "hashing"]
        + ["--quiet"]
    )
    assert rc == 0
    return out


def flagged_graph() -> CausalGraph:
    """A -> B -> C -> A (a cycle), C -> D with no evidence and low confidence; E isolated; F empty."""
    metrics = tuple(Metric(n) for n in "ABCDEF")
    variables = tuple(Variable(n) for n in "ABCDE")
    edges = (
        CausalEdge("ab", "A", "B", "A raises B.", 0.9, ("k1",)),
        CausalEdge("bc", "B", "C", "B raises C.", 0.8, ("k1",)),
        CausalEdge("ca", "C", "A", "C feeds back on A.", 0.7, ("k1",)),
        CausalEdge("cd", "C", "D", "C may raise D.", 0.3, ()),
    )
    chunks = (Chunk("k1", "Nothing here. A raises B, and B raises C."),)
    return CausalGraph(DomainSpec((), metrics), variables, edges, chunks)


# ---------------------------------------------------------------- review flags and page data


def test_review_flags_name_every_kind_of_problem():
    f = review_flags(flagged_graph())
    assert f["no_evidence"] == [3]
    assert f["low_confidence"] == [3]
    assert f["cycle_edges"] == [0, 1, 2]
    assert f["cyclic_parts"] == 1
    assert sorted(f["cycles"][0]) == [0, 1, 2]
    assert f["isolated"] == [4]
    assert f["empty_metrics"] == ["F"]


def test_no_flags_on_the_hand_graph():
    f = review_flags(load_graph(HAND).graph)
    assert (f["no_evidence"], f["low_confidence"], f["cycle_edges"], f["isolated"]) == (
        [],
        [],
        [],
        [],
    )


def test_supporting_sentence_prefers_the_sentence_naming_both_ends():
    g = flagged_graph()
    text = g.chunks[0].text
    start, end = supporting_sentence(text, g.edges[0])
    assert text[start:end] == "A raises B, and B raises C."


def test_view_data_embeds_only_cited_chunks_and_indexes_edges(corpus_dir):
    g = load_graph(corpus_dir).graph
    data = view_data(g, title="t")
    assert len(data["variables"]) == len(g.variables)
    assert len(data["edges"]) == len(g.edges)
    assert set(data["chunks"]) == {c for e in g.edges for c in e.evidence}
    names = [v["name"] for v in data["variables"]]
    for e, d in zip(g.edges, data["edges"], strict=True):
        assert (names[d["s"]], names[d["t"]]) == (e.source, e.target)
        assert len(d["support"]) == len(e.evidence)
    assert sum(o["edges"] for o in data["overview"]) == len(g.edges)


def test_page_is_self_contained_and_cannot_be_broken_out_of(tmp_path):
    g = flagged_graph()
    evil = "</script><script>alert(1)</script> & <b>"
    g = CausalGraph(g.spec, g.variables, g.edges, (Chunk("k1", evil),))
    html = render_html(view_data(g, title="<x>"))
    # Two script elements (data and code) and nothing else closes one.
    assert html.count("</script>") == 2
    assert "<script>alert" not in html
    assert "&lt;x&gt;" in html
    # No URL the browser could fetch: the only http:// is the SVG namespace name.
    assert set(re.findall(r"(?:https?|wss?|ftp)://[^\s\"'<>)]+", html)) == {
        "http://www.w3.org/2000/svg"
    }
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    payload = html.split('<script id="hcg-data" type="application/json">')[1].split("</script>")[0]
    assert json.loads(payload)["chunks"]["k1"]["text"] == evil


def test_hcg_view_writes_the_page(tmp_path, capsys):
    out = tmp_path / "page.html"
    assert main(["view", str(HAND), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "HCG audit: hand_graph" in text and "salt-kidney" in text


# ---------------------------------------------------------------- networkx and exports


def test_to_networkx_carries_every_attribute():
    g = load_graph(HAND).graph
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == len(g.variables) == 8
    assert nxg.number_of_edges() == len(g.edges) == 7
    node = nxg.nodes["ExposureLevel(tobacco smoking)"]
    assert node["metric"] == "ExposureLevel" and node["entities"] == ("tobacco smoking",)
    assert node["category"] == "exposure" and node["role"] == "intermediate"
    data = nxg.edges["BloodPressure", "StrokeRisk", "bp-stroke"]
    assert data["confidence"] == 0.95 and data["evidence"] == ("k5",)
    edge = next(e for e in g.edges if e.id == "bp-stroke")
    assert data["effect"] == edge.effect
    assert data["mechanism"].startswith("High blood pressure")


def test_to_networkx_keeps_parallel_edges():
    spec = DomainSpec((), (Metric("A"), Metric("B")))
    g = CausalGraph(
        spec,
        (Variable("A"), Variable("B")),
        (CausalEdge("e1", "A", "B", "one"), CausalEdge("e2", "A", "B", "two")),
        (),
    )
    assert g.to_networkx().number_of_edges() == 2


@pytest.mark.parametrize("fmt", ["graphml", "gexf"])
def test_graphml_and_gexf_read_back_equal(tmp_path, corpus_dir, fmt):
    g = load_graph(corpus_dir).graph
    path = tmp_path / f"g.{fmt}"
    assert main(["export", str(corpus_dir), "--format", fmt, "--out", str(path)]) == 0
    read = nx.read_graphml if fmt == "graphml" else nx.read_gexf
    back = read(path, force_multigraph=True) if fmt == "graphml" else read(path)
    assert back.number_of_nodes() == len(g.variables)
    assert back.number_of_edges() == len(g.edges)
    for v in g.variables:
        node = back.nodes[v.name]
        assert node["metric"] == v.metric
        assert split_list(node["entities"]) == list(v.entities)
    got = {d["id"]: d for _, _, d in back.edges(data=True)}
    assert {e.effect for e in g.edges} >= {"increases", "decreases"}  # both signs are exercised
    for e in g.edges:
        d = got[e.id]
        assert d["mechanism"] == e.mechanism
        # Declared as a double and a string in the file's header, so networkx reads them typed.
        assert isinstance(d["confidence"], float) and d["confidence"] == pytest.approx(e.confidence)
        assert d.get("effect", "") == e.effect
        assert split_list(d["evidence"]) == list(e.evidence)
    assert {(e.source, e.target) for e in g.edges} == set(back.edges())
    assert (to_graphml if fmt == "graphml" else to_gexf)(g) == path.read_text(encoding="utf-8")


def test_mermaid_has_every_edge_and_a_size_limit(corpus_dir):
    g = load_graph(corpus_dir).graph
    text = to_mermaid(g)
    assert text.startswith("flowchart LR\n")
    assert len(re.findall(r"^  v\d+ -->", text, re.M)) == len(g.edges)
    # Each edge's label is its sign and confidence, in the graph's edge order.
    labels = re.findall(r'^  v\d+ -->\|"\((.)\) (\d\.\d\d)"\| v\d+$', text, re.M)
    signs = {"increases": "+", "decreases": "-", "": "?"}
    assert labels == [(signs[e.effect], f"{e.confidence:.2f}") for e in g.edges]
    assert len(re.findall(r'^ +v\d+\["', text, re.M)) == len(g.variables)
    with pytest.raises(ConfigError, match="over the Mermaid limit"):
        to_mermaid(g, max_edges=len(g.edges) - 1)
    metric = g.edges[0].source.split("(")[0]
    part = to_mermaid(g, metric=metric, max_edges=len(g.edges) - 1)
    assert 0 < len(re.findall(r" -->", part)) < len(g.edges)
    with pytest.raises(ConfigError, match="no metric"):
        to_mermaid(g, metric="Nope")


# A tiny reader of the Cypher that to_cypher writes: each statement must be one of these shapes,
# and replaying them (twice) into dicts must give back the graph.
_STR = r"'(?:[^'\\]|\\.)*'"
_LIST = rf"\[(?:{_STR}(?:, {_STR})*)?\]"
_NUM = r"[0-9.eE+-]+"
_PATTERNS = {
    "constraint": re.compile(
        r"CREATE CONSTRAINT \w+ IF NOT EXISTS FOR \(\w:(\w+)\) REQUIRE \w\.(\w+) IS UNIQUE"
    ),
    "variable": re.compile(
        rf"MERGE \(v:Variable \{{name: ({_STR})\}}\) SET v:`((?:[^`]|``)+)`, v\.metric = ({_STR}), "
        rf"v\.entities = ({_LIST}), v\.description = ({_STR}), v\.category = ({_STR}), "
        rf"v\.role = ({_STR})"
    ),
    "chunk": re.compile(
        rf"MERGE \(c:Chunk \{{id: ({_STR})\}}\) SET c\.text = ({_STR}), c\.doc_id = ({_STR})"
    ),
    "causes": re.compile(
        rf"MATCH \(a:Variable \{{name: ({_STR})\}}\), \(b:Variable \{{name: ({_STR})\}}\) "
        rf"MERGE \(a\)-\[r:CAUSES \{{id: ({_STR})\}}\]->\(b\) SET r\.mechanism = ({_STR}), "
        rf"r\.confidence = ({_NUM}), r\.effect = ({_STR}), r\.evidence = ({_LIST})"
    ),
    "evidence": re.compile(
        rf"MATCH \(c:Chunk \{{id: ({_STR})\}}\), \(a:Variable \{{name: ({_STR})\}}\) "
        rf"MERGE \(c\)-\[:EVIDENCE \{{edge_id: ({_STR})\}}\]->\(a\)"
    ),
}


def _unquote(s: str) -> str:
    """A Cypher string literal's value: its short escapes and \\uXXXX (Neo4j's own rules)."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'"}

    def one(m: re.Match) -> str:
        return chr(int(m.group(2), 16)) if m.group(2) else escapes[m.group(1)]

    return re.sub(r"\\(u([0-9a-fA-F]{4})|.)", one, s[1:-1])


def _strings(lst: str) -> list[str]:
    return [_unquote(s) for s in re.findall(_STR, lst)]


def replay_cypher(script: str, db: dict) -> None:
    statements = [
        s.strip() for s in script.split(";\n") if s.strip() and not s.strip().startswith("//")
    ]
    assert script.rstrip().endswith(";")
    for st in statements:
        st = st.rstrip(";")
        kind = next((k for k, p in _PATTERNS.items() if p.fullmatch(st)), None)
        assert kind is not None, f"unparsed statement: {st[:120]}"
        m = _PATTERNS[kind].fullmatch(st)
        if kind == "variable":
            name = _unquote(m.group(1))
            node = db["variables"].setdefault(name, {"labels": set()})  # MERGE: one per key
            node["labels"].add(m.group(2).replace("``", "`"))
            node.update(metric=_unquote(m.group(3)), entities=_strings(m.group(4)))
        elif kind == "chunk":
            db["chunks"][_unquote(m.group(1))] = _unquote(m.group(2))
        elif kind == "causes":
            a, b, rid = (_unquote(m.group(i)) for i in (1, 2, 3))
            assert a in db["variables"] and b in db["variables"], "MATCH before MERGE of a node"
            db["causes"][(a, rid, b)] = (
                _unquote(m.group(4)),
                float(m.group(5)),
                _strings(m.group(7)),
                _unquote(m.group(6)),
            )
        elif kind == "evidence":
            cid, a, eid = (_unquote(m.group(i)) for i in (1, 2, 3))
            assert cid in db["chunks"] and a in db["variables"]
            db["evidence"].add((cid, eid, a))


def test_cypher_script_parses_replays_and_is_idempotent(corpus_dir):
    g = load_graph(corpus_dir).graph
    # A quote, a backslash and a newline in a mechanism must survive the string escaping.
    e0 = g.edges[0]
    tricky = e0.mechanism + " It's a \\ test\nline two."
    g = CausalGraph(
        g.spec,
        g.variables,
        (CausalEdge(e0.id, e0.source, e0.target, tricky, e0.confidence, e0.evidence), *g.edges[1:]),
        g.chunks,
    )
    script = to_cypher(g)
    db: dict = {"variables": {}, "chunks": {}, "causes": {}, "evidence": set()}
    replay_cypher(script, db)
    first = copy.deepcopy(db)
    replay_cypher(script, db)  # MERGE twice: nothing new
    assert db == first
    assert len(db["variables"]) == len(g.variables)
    assert all(db["variables"][v.name]["labels"] == {v.metric} for v in g.variables)
    assert len(db["causes"]) == len(g.edges)
    assert db["causes"][(e0.source, e0.id, e0.target)][0] == tricky
    # Each relationship keeps its edge's confidence and sign (effect).
    assert {e.effect for e in g.edges} >= {"increases", "decreases"}
    for e in g.edges:
        _, confidence, evidence, effect = db["causes"][(e.source, e.id, e.target)]
        assert (confidence, evidence, effect) == (e.confidence, list(e.evidence), e.effect)
    assert len(db["evidence"]) == g.evidence_links
    assert set(db["chunks"]) == {c for e in g.edges for c in e.evidence}


def test_csv_export_reads_back(tmp_path, corpus_dir):
    g = load_graph(corpus_dir).graph
    out = tmp_path / "csv"
    assert main(["export", str(corpus_dir), "--format", "csv", "--out", str(out)]) == 0
    assert to_csv_files(g)["edges.csv"] == (out / "edges.csv").read_text(encoding="utf-8")

    def rows(name):
        with open(out / name, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    edges = rows("edges.csv")
    assert [r["id"] for r in edges] == [e.id for e in g.edges]
    assert [split_list(r["evidence"]) for r in edges] == [list(e.evidence) for e in g.edges]
    assert {e.effect for e in g.edges} >= {"increases", "decreases"}
    assert [(float(r["confidence"]), r["effect"]) for r in edges] == [
        (e.confidence, e.effect) for e in g.edges
    ]
    assert len(rows("variables.csv")) == len(g.variables)
    assert len(rows("evidence.csv")) == g.evidence_links
    load = (out / "load.cypher").read_text(encoding="utf-8")
    for name in ("variables.csv", "edges.csv", "chunks.csv", "evidence.csv"):
        assert f"file:///{name}" in load
    assert "r.effect = row.effect" in load and "toFloat(row.confidence)" in load
    assert load.count("MERGE") >= 5 and "CREATE (" not in load


def test_export_to_stdout_and_bad_format(capsys):
    assert main(["export", str(HAND), "--format", "mermaid"]) == 0
    assert capsys.readouterr().out.startswith("flowchart LR")
    assert main(["export", str(HAND), "--format", "csv"]) == 2
    assert "pass --out FOLDER" in capsys.readouterr().err


# ---------------------------------------------------------------- corrections


def test_every_correction_applies_or_is_refused_with_a_reason():
    g = load_graph(HAND).graph
    entries = [
        {"op": "reject_edge", "edge": "salt-kidney"},
        {"op": "edit_edge", "edge": "inflam-bp", "confidence": 0.55, "mechanism": "Stiff."},
        {"op": "accept_edge", "edge": "bp-stroke"},
        {
            "op": "merge_variables",
            "keep": "ExposureLevel(high salt diet)",
            "drop": "ExposureLevel(physical inactivity)",
        },
        {"op": "rename_metric", "metric": "Inflammation", "to": "ArterialInflammation"},
        # refused:
        {"op": "reject_edge", "edge": "salt-kidney"},  # already removed
        {"op": "edit_edge", "edge": "bp-stroke", "confidence": 1.5},
        {"op": "edit_edge", "edge": "bp-stroke"},
        {"op": "rename_metric", "metric": "StrokeRisk", "to": "BloodPressure"},
        {"op": "rename_metric", "metric": "StrokeRisk", "to": "bad name"},
        {"op": "merge_variables", "keep": "Nope", "drop": "StrokeRisk"},
        {"op": "reject_edge", "edge": "bp-stroke", "source": "Elsewhere", "target": "StrokeRisk"},
        # PatientOutcome is terminal: taking over BloodPressure's out edge would leave it.
        {"op": "merge_variables", "keep": "PatientOutcome", "drop": "BloodPressure"},
        {"op": "frobnicate"},
        "not a mapping",
    ]
    new, report = apply_corrections(g, entries)
    assert [a["index"] for a in report.applied] == [1, 2, 3, 4, 5]
    reasons = {r["index"]: r["reason"] for r in report.refused}
    assert "removed by an earlier correction" in reasons[6]
    assert "[0, 1]" in reasons[7]
    assert "needs 'mechanism' or 'confidence'" in reasons[8]
    assert "exists already" in reasons[9]
    assert "not a metric name" in reasons[10]
    assert "no variable 'Nope'" in reasons[11]
    assert "made on another graph" in reasons[12]
    assert "would not fit the spec" in reasons[13] and "terminal" in reasons[13]
    assert "unknown op" in reasons[14]
    assert "mapping" in reasons[15]
    ids = {e.id: e for e in new.edges}
    assert "salt-kidney" not in ids and "inactive-bp" not in ids  # joined into salt-bp
    assert ids["salt-bp"].evidence == ("k3", "k4")
    assert ids["salt-bp"].confidence == 0.85
    assert (ids["inflam-bp"].confidence, ids["inflam-bp"].mechanism) == (0.55, "Stiff.")
    assert ids["inflam-bp"].source == "ArterialInflammation(arteries)"
    assert "Inflammation" not in {m.name for m in new.spec.metrics}
    assert ("BloodPressure", "StrokeRisk") in {(r.source, r.target) for r in new.spec.relations}
    assert {v.name for v in new.variables} == {
        "ExposureLevel(tobacco smoking)",
        "ExposureLevel(high salt diet)",
        "ArterialInflammation(arteries)",
        "ArterialInflammation(kidneys)",
        "BloodPressure",
        "StrokeRisk",
        "PatientOutcome",
    }


def test_merge_drops_self_loops_and_rename_follows_outcomes():
    g = load_graph(HAND).graph
    new, report = apply_corrections(
        g,
        [
            {"op": "merge_variables", "keep": "BloodPressure", "drop": "Inflammation(arteries)"},
            {"op": "rename_metric", "metric": "StrokeRisk", "to": "Stroke"},
        ],
    )
    assert not report.refused
    assert "inflam-bp" in report.applied[0]["change"]  # became a self-loop, dropped
    assert "inflam-bp" not in {e.id for e in new.edges}
    assert new.spec.outcome.outcomes == ("Stroke",)
    assert new.spec.metric("Stroke").role == "outcome"


def test_read_corrections_rejects_malformed_files(tmp_path):
    bad = tmp_path / "c.yaml"
    for text, match in (
        ("format: other\ncorrections: []\n", "format"),
        ("version: 2\ncorrections: []\n", "version"),
        ("corrections: {a: 1}\n", "must be a list"),
        ("surprise: 1\n", "unknown top-level"),
        ("corrections: [\n", "cannot read"),
        ("!!python/object:os.system ls\n", "cannot read"),  # safe_load only
    ):
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(CorruptFileError, match=match):
            read_corrections(bad)
    with pytest.raises(StoreError, match="no such corrections file"):
        read_corrections(tmp_path / "missing.yaml")


def test_apply_writes_a_new_directory_reusing_unchanged_vectors(tmp_path, corpus_dir):
    stored = load_graph(corpus_dir)
    assert stored.variable_embeddings is not None
    g = stored.graph
    metric = g.variables[0].metric
    reject = g.edges[0]
    corrections = tmp_path / "corrections.yaml"
    corrections.write_text(
        yaml.safe_dump(
            {
                "format": "hcg-corrections",
                "version": 1,
                "corrections": [
                    {"op": "reject_edge", "edge": reject.id},
                    {"op": "rename_metric", "metric": metric, "to": "RenamedMetric"},
                ],
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "fixed"
    assert main(["apply", str(corpus_dir), str(corrections), "--out", str(out)]) == 0
    fixed = load_graph(out)
    assert not fixed.notes  # vectors stored, none stale
    assert len(fixed.graph.edges) == len(g.edges) - 1
    renamed = [i for i, v in enumerate(g.variables) if v.metric == metric]
    same = [i for i in range(len(g.variables)) if i not in renamed]
    np.testing.assert_array_equal(fixed.variable_embeddings[same], stored.variable_embeddings[same])
    np.testing.assert_array_equal(fixed.chunk_embeddings, stored.chunk_embeddings)
    assert fixed.report["corrections"]["applied"][0]["op"] == "reject_edge"
    report = fixed.report["corrections"]
    assert any("reused" in n and f"{len(renamed)} embedded" in n for n in report["notes"])
    # The corrected graph retrieves like any other.
    assert main(["query", str(out), "What causes stroke?", "--k", "2"]) == 0


def test_apply_refuses_in_place_and_strict_writes_nothing(tmp_path, capsys):
    c = tmp_path / "c.yaml"
    c.write_text("corrections:\n  - {op: reject_edge, edge: nope}\n", encoding="utf-8")
    with pytest.raises(StoreError, match="new directory"):
        apply_to_directory(HAND, c, HAND)
    out = tmp_path / "out"
    assert main(["apply", str(HAND), str(c), "--out", str(out), "--strict"]) == 1
    assert not out.exists()
    assert "no edge 'nope'" in capsys.readouterr().out


# ---------------------------------------------------------------- diff


def test_diff_of_a_graph_with_itself_is_empty(capsys):
    g = load_graph(HAND).graph
    assert is_empty(diff_graphs(g, g))
    assert main(["diff", str(HAND), str(HAND)]) == 0
    assert capsys.readouterr().out.strip() == "no differences"


def test_diff_names_spec_variable_edge_evidence_and_chunk_changes(tmp_path, capsys):
    g = load_graph(HAND).graph
    new, _ = apply_corrections(
        g,
        [
            {"op": "reject_edge", "edge": "salt-kidney"},
            {"op": "edit_edge", "edge": "bp-stroke", "confidence": 0.5},
            {
                "op": "merge_variables",
                "keep": "ExposureLevel(high salt diet)",
                "drop": "ExposureLevel(physical inactivity)",
            },
        ],
    )
    spec = new.spec
    spec = DomainSpec(
        (*spec.dimensions, Dimension("age", ("old",))),
        spec.metrics,
        spec.variables,
        spec.relations,
        OutcomeConfig(spec.outcome.outcomes, spec.outcome.terminals),
        spec.domain,
    )
    chunks = (*new.chunks[:-1], Chunk(new.chunks[-1].id, "changed text"))
    new = CausalGraph(spec, new.variables, new.edges, chunks)
    out = tmp_path / "b"
    save_graph(new, out)
    d = diff_graphs(g, load_graph(out).graph)
    assert d["spec"]["dimensions"]["added"] == ["age"]
    assert d["variables"]["removed"] == ["ExposureLevel(physical inactivity)"]
    assert sorted(d["edges"]["removed"]) == ["inactive-bp", "salt-kidney"]
    assert d["edges"]["changed"] == {"bp-stroke": {"confidence": [0.95, 0.5]}}
    assert d["evidence"] == {"salt-bp": {"added": ["k4"], "removed": []}}
    assert d["chunks"]["changed"] == [new.chunks[-1].id]
    assert main(["diff", str(HAND), str(out)]) == 1
    text = capsys.readouterr().out
    assert "salt-kidney: ExposureLevel(high salt diet) -> Inflammation(kidneys)" in text
    assert "bp-stroke: confidence 0.95 -> 0.5" in text
    assert main(["diff", str(HAND), str(out), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["summary"]["edges_removed"] == 2
    # The JSON is the same under any hash seed (the removed edges once came in a set's order).
    runs = {
        subprocess.run(
            [sys.executable, "-m", "hcg_core.cli", "diff", str(HAND), str(out), "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(4)
    }
    assert len(runs) == 1
    assert list(json.loads(runs.pop())["edge_details"]) == ["inactive-bp", "salt-kidney"]


def test_hcgindex_to_networkx(corpus_dir):
    pytest.importorskip("llama_index.core")
    from llama_index_hcg import HCGIndex

    index = HCGIndex.from_graph_dir(corpus_dir)
    g = index.to_networkx()
    assert g.number_of_nodes() == len(index.graph.variables)
    assert g.number_of_edges() == len(index.graph.edges)


def test_hand_graph_copy_is_untouched_by_view(tmp_path):
    # `hcg view` writes only its --out file: the graph directory is read, never written.
    src = tmp_path / "g"
    shutil.copytree(HAND, src)
    before = sorted(p.name for p in src.iterdir())
    assert main(["view", str(src), "--out", str(tmp_path / "p.html")]) == 0
    assert sorted(p.name for p in src.iterdir()) == before
