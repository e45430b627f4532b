"""Corrections that outlive a rebuild (issue 27, item 2): matched by what they are about, applied
again by `hcg build --corrections`, bulk actions, merges by sign, and a ledger `hcg add` can use."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hcg_core.audit.corrections import apply_corrections, correct_graph
from hcg_core.audit.matching import match_variable
from hcg_core.audit.review import review_flags
from hcg_core.cli import main
from hcg_core.graph_build.edges import stable_id
from hcg_core.store import current_dir, load_graph
from hcg_core.types import CausalEdge, CausalGraph, Chunk, Dimension, DomainSpec, Metric, Variable

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "corpus"


# ---------------------------------------------------------------- the user trial's rename


def cache_graph(cache_entity: str) -> CausalGraph:
    """A small incident graph whose cache variable is ``Cache(<cache_entity>)``; edge ids are
    derived from the two names, as the builders derive them."""
    spec = DomainSpec(
        (Dimension("state", ("empty", "empty cache", "warm", "general")),),
        (
            Metric("Cache", ("state",)),
            Metric("Latency"),
            Metric("DatabaseLoad"),
            Metric("Outage", role="terminal"),
        ),
    )
    cache = f"Cache({cache_entity})"
    variables = (
        Variable("Cache", (cache_entity,)),
        Variable("Cache", ("warm",)),
        Variable("Latency"),
        Variable("DatabaseLoad"),
        Variable("Outage"),
    )
    pairs = [
        (cache, "DatabaseLoad", "An empty cache sends every read to the database.", "k1"),
        ("DatabaseLoad", "Latency", "Database load raises latency.", "k2"),
        (cache, "Latency", "Cold reads after a flush raise latency.", "k1"),
        ("Cache(warm)", "Latency", "A warm cache keeps latency low.", "k3"),
        ("Latency", "Outage", "High latency leads to an outage.", "k2"),
    ]
    edges = tuple(CausalEdge(stable_id("e_", s, t), s, t, m, 0.8, (k,)) for s, t, m, k in pairs)
    chunks = (
        Chunk(
            "k1",
            "An empty cache sends every read to the database. Cold reads after a flush "
            "raise latency.",
        ),
        Chunk("k2", "Database load raises latency. High latency leads to an outage."),
        Chunk("k3", "A warm cache keeps latency low."),
    )
    return CausalGraph(spec, variables, edges, chunks)


def test_corrections_made_before_the_cache_rename_apply_after_it():
    before, after = cache_graph("empty"), cache_graph("empty cache")
    old = {(e.source, e.target): e for e in before.edges}
    to_db = old[("Cache(empty)", "DatabaseLoad")]
    to_latency = old[("Cache(empty)", "Latency")]
    # The rename changed the ids of both edges of the renamed variable.
    assert to_db.id not in {e.id for e in after.edges}
    entries = [
        {
            "op": "reject_edge",
            "edge": to_latency.id,
            "source": to_latency.source,
            "target": to_latency.target,
        },
        {
            "op": "edit_edge",
            "edge": to_db.id,
            "source": to_db.source,
            "target": to_db.target,
            "confidence": 0.3,
        },
        {"op": "merge_variables", "keep": "Cache(empty)", "drop": "Cache(warm)"},
        {"op": "reject_edge", "edge": "e_gone", "source": "Cache(hot)", "target": "Latency"},
    ]
    new, report = apply_corrections(after, entries)
    assert [a["index"] for a in report.applied] == [1, 2, 3]
    assert all("Cache(empty cache)" in a["change"] for a in report.applied)
    assert (
        "matched Cache(empty) -> Latency as Cache(empty cache) -> Latency by variables"
        in (report.applied[0]["change"])
    )
    # What was not found is named, with the reason.
    (refused,) = report.refused
    assert refused["index"] == 4 and "Cache(hot) -> Latency" in refused["reason"]
    pairs = {(e.source, e.target): e for e in new.edges}
    # The rejected edge is gone; the edge there now is the merged Cache(warm)'s, re-pointed.
    assert pairs[("Cache(empty cache)", "Latency")].mechanism == "A warm cache keeps latency low."
    assert pairs[("Cache(empty cache)", "DatabaseLoad")].confidence == 0.3
    assert "Cache(warm)" not in {v.name for v in new.variables}
    # On the graph they were made on, the same entries apply by id, unmatched.
    same, report = apply_corrections(before, entries)
    assert len(report.applied) == 3 and "matched" not in " ".join(
        a["change"] for a in report.applied
    )


def test_variables_match_by_entities_then_fuzzily_never_across_metrics():
    names = ["Cache(empty cache)", "Cache(warm)", "Wound(unnoticed wounds)", "Latency"]
    assert match_variable("Cache(empty)", names).name == "Cache(empty cache)"
    assert match_variable("Wound(unnoticed)", names).how == "entities"
    assert match_variable("Cache(warm, stale)", names).how == "fuzzy entities"
    assert match_variable("Cache(cold)", names) is None
    assert match_variable("Latency(empty cache)", names) is None  # another metric
    # Two equally good candidates: no guess.
    assert match_variable("Cache(hot, cold)", ["Cache(hot)", "Cache(cold)"]) is None


def test_an_edge_whose_end_was_folded_away_is_found_by_its_evidence_sentence():
    before = cache_graph("empty")
    # The rebuild no longer has Cache(empty): its statements went to the generic Cache.
    after = cache_graph("general")
    edge = next(e for e in before.edges if e.target == "DatabaseLoad")
    entry = {"op": "reject_edge", "edge": edge.id, "source": edge.source, "target": edge.target}
    _, report = apply_corrections(after, [entry])
    assert report.refused  # names alone cannot find it
    entry["sentence"] = "An empty cache sends every read to the database."
    new, report = apply_corrections(after, [entry])
    assert "by evidence sentence" in report.applied[0]["change"]
    assert ("Cache(general)", "DatabaseLoad") not in {(e.source, e.target) for e in new.edges}


def test_a_merged_edge_is_found_by_a_sentence_of_its_pooled_evidence():
    g = cache_graph("general")
    warm = next(e for e in g.edges if e.source == "Cache(warm)")
    general = next(e for e in g.edges if e.source == "Cache(general)" and e.target == "Latency")
    lost = {"op": "reject_edge", "edge": "e_gone", "source": "Cache(hot)", "target": "Latency"}
    entries = [
        {**lost, "op": "accept_edge", "sentence": "No chunk says this."},  # looks at both edges
        {"op": "merge_variables", "keep": "Cache(general)", "drop": "Cache(warm)"},
        {**lost, "sentence": "A warm cache keeps latency low."},  # k3, pooled by the merge
    ]
    new, report = apply_corrections(g, entries)
    assert [r["index"] for r in report.refused] == [1]
    assert f"joined parallel edges: {warm.id} into {general.id}" in report.applied[0]["change"]
    assert "by evidence sentence" in report.applied[1]["change"]
    assert general.id not in {e.id for e in new.edges}


# ---------------------------------------------------------------- bulk actions and merges


def test_reject_every_edge_of_a_variable_and_delete_one():
    g = cache_graph("empty")
    new, report = apply_corrections(
        g,
        [
            {"op": "reject_variable_edges", "variable": "Latency"},
            {"op": "delete_variable", "variable": "Cache(warm)"},
            {"op": "delete_variable", "variable": "Nothing"},
        ],
    )
    assert [r["index"] for r in report.refused] == [3]
    assert "4 edges of 'Latency' removed" in report.applied[0]["change"]
    assert {(e.source, e.target) for e in new.edges} == {("Cache(empty)", "DatabaseLoad")}
    assert "Latency" in {v.name for v in new.variables}  # kept, with no edges
    assert "Cache(warm)" not in {v.name for v in new.variables}


def test_merge_joins_one_sign_keeps_opposite_signs_apart_and_flags_them():
    spec = DomainSpec((), tuple(Metric(n) for n in "ABCD"))
    g = CausalGraph(
        spec,
        tuple(Variable(n) for n in "ABCD"),
        (
            CausalEdge("ac", "A", "C", "A raises C.", 0.6, ("k1",), "increases"),
            CausalEdge("bc", "B", "C", "B raises C.", 0.9, ("k2",), "increases"),
            CausalEdge("ad", "A", "D", "A raises D.", 0.5, ("k1",), "increases"),
            CausalEdge("bd", "B", "D", "B lowers D.", 0.7, ("k2",), "decreases"),
            CausalEdge("ab", "A", "B", "A raises B.", 0.8, ("k1",), "increases"),
        ),
        (Chunk("k1", "A raises C."), Chunk("k2", "B raises C.")),
    )
    new, report = apply_corrections(g, [{"op": "merge_variables", "keep": "A", "drop": "B"}])
    change = report.applied[0]["change"]
    assert "self-loops: ab" in change and "joined parallel edges: bc into ac" in change
    assert "opposite signs (flagged for review): bd (decreases) and ad" in change
    edges = {e.id: e for e in new.edges}
    assert set(edges) == {"ac", "ad", "bd"}
    assert (edges["ac"].confidence, edges["ac"].evidence) == (0.9, ("k1", "k2"))
    flags = review_flags(new)
    assert sorted(new.edges[i].id for i in flags["opposite_signs"]) == ["ad", "bd"]
    assert review_flags(g)["opposite_signs"] == []


# ---------------------------------------------------------------- the loop, through the CLI


def _build(out: Path, *extra: str) -> CausalGraph:
    args = ["build", str(CORPUS), "--out", str(out), "--embedder", "hashing", "--quiet"]
    assert main([*args, *extra]) == 0
    return load_graph(out).graph


def _write(path: Path, entries: list[dict]) -> Path:
    path.write_text(
        yaml.safe_dump({"format": "hcg-corrections", "version": 1, "corrections": entries}),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """Build, review (reject an edge, delete a variable), `hcg apply`, then rebuild from the
    corrected spec without and with `--corrections`."""
    tmp = tmp_path_factory.mktemp("loop")
    first = _build(tmp / "g1")
    # A rebuild from the first graph's own spec, to choose subjects it makes again; those whose
    # names the rebuild changes are preferred, as in the user trial.
    again = _build(tmp / "g1_again", "--spec", str(tmp / "g1" / "spec.yaml"))
    names = [v.name for v in again.variables]
    renamed = [
        v.name
        for v in first.variables
        if v.name not in names and (m := match_variable(v.name, names)) and m.how != "name"
    ]
    assert renamed, "the rebuild renamed no variable; the test needs one"
    # The variable to delete is renamed by the rebuild; the edge to reject is one the rebuild
    # makes again, an end renamed where there is one.
    variable = renamed[0]
    pairs = {(e.source, e.target) for e in again.edges}

    def remade(e):
        s, t = match_variable(e.source, names), match_variable(e.target, names)
        return s and t and (s.name, t.name) in pairs

    candidates = [e for e in first.edges if variable not in (e.source, e.target) and remade(e)]
    edge = next((e for e in candidates if {e.source, e.target} & set(renamed)), candidates[0])
    corrections = _write(
        tmp / "corrections.yaml",
        [
            {"op": "reject_edge", "edge": edge.id, "source": edge.source, "target": edge.target},
            {"op": "delete_variable", "variable": variable},
        ],
    )
    assert main(["apply", str(tmp / "g1"), str(corrections), "--out", str(tmp / "g2")]) == 0
    spec = str(tmp / "g2" / "spec.yaml")
    plain = _build(tmp / "g3", "--spec", spec)
    kept = _build(tmp / "g3c", "--spec", spec, "--corrections", str(corrections))
    return {"edge": edge, "variable": variable, "plain": plain, "kept": kept, "tmp": tmp}


def _has_edge(graph: CausalGraph, edge: CausalEdge) -> bool:
    names = [v.name for v in graph.variables]
    s, t = match_variable(edge.source, names), match_variable(edge.target, names)
    return bool(s and t) and (s.name, t.name) in {(e.source, e.target) for e in graph.edges}


def test_a_rebuild_brings_both_back_without_corrections(loop):
    names = [v.name for v in loop["plain"].variables]
    assert match_variable(loop["variable"], names) is not None
    assert _has_edge(loop["plain"], loop["edge"])


def test_a_rebuild_with_corrections_keeps_both(loop):
    names = [v.name for v in loop["kept"].variables]
    assert match_variable(loop["variable"], names) is None
    assert not _has_edge(loop["kept"], loop["edge"])
    report = load_graph(loop["tmp"] / "g3c").report["corrections"]
    assert [a["index"] for a in report["applied"]] == [1, 2] and report["refused"] == []
    assert any("matched" in a["change"] for a in report["applied"])


def test_build_corrections_file_is_read_before_building(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("corrections: {a: 1}\n", encoding="utf-8")
    args = ["build", str(CORPUS), "--out", str(tmp_path / "g"), "--embedder", "hashing"]
    assert main([*args, "--quiet", "--corrections", str(bad)]) == 2
    assert "must be a list" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()


def test_build_corrections_report_reaches_the_terminal_escaped(tmp_path, capsys):
    # The file's name and the report's names are the user's text: their control characters
    # (here a clear-screen sequence) are printed escaped, as `hcg apply` prints its report.
    corrections = _write(
        tmp_path / "c\x1b[2J.yaml", [{"op": "delete_variable", "variable": "Ghost\x1b[2J"}]
    )
    _build(tmp_path / "g", "--corrections", str(corrections))
    err = capsys.readouterr().err
    assert "c\\x1b[2J.yaml): applied 0, refused 1" in err and "Ghost\\x1b[2J" in err
    assert "\x1b" not in err


# ---------------------------------------------------------------- what `hcg add` needs


def test_apply_keeps_the_support_ledger_so_add_still_extracts_edges(loop, tmp_path, capsys):
    tmp = loop["tmp"]
    assert (current_dir(tmp / "g2") / "incremental.json").exists()
    edge = loop["edge"]
    new_text = tmp_path / "new.md"
    new_text.write_text(
        "Obesity causes hypertension.\n\n"
        # Restates the rejected edge's mechanism: new support for a link a reviewer rejected.
        + edge.mechanism
        + "\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["add", str(tmp / "g2"), str(new_text), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    assert report["graph_mode"] == "ledger" and report["edges_added"]
    graph = load_graph(tmp / "g2").graph
    assert ("Obesity", "Hypertension") in {(e.source, e.target) for e in graph.edges}
    assert edge.id not in {e.id for e in graph.edges}  # still rejected
    assert loop["variable"] not in {v.name for v in graph.variables}


def test_ledger_replays_edits_merges_and_rejections(loop):
    stored = load_graph(loop["tmp"] / "g1")
    g = stored.graph
    a, b = g.edges[0], g.edges[1]
    done = correct_graph(
        g,
        [
            {"op": "edit_edge", "edge": a.id, "confidence": 0.123},
            {"op": "reject_edge", "edge": b.id},
        ],
        ledger=stored.ledger,
    )
    from hcg_core.graph_build.incremental import SupportLedger

    ledger = SupportLedger.from_json(done.ledger, done.graph)  # fingerprint matches the result
    assert (b.source, b.target) in ledger.rejected
    assert ledger.pinned[(a.source, a.target)] == {"confidence": 0.123}
