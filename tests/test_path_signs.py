"""Paths name variables in causal order with each edge's sign (issue 26, item 3): the offline
builder signs an edge from its mechanism sentence's cue, and ``hcg query`` shows the signs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hcg_core.cli import main
from hcg_core.graph_build.extract import sentence_effect
from hcg_core.store import load_graph

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"


@pytest.mark.parametrize(
    "sentence,effect",
    [
        ("Smoking causes lung cancer.", "increases"),
        ("High blood pressure is a major risk factor for stroke.", "increases"),
        ("Stroke is often caused by a blood clot.", "increases"),
        ("Regular exercise lowers blood pressure.", "decreases"),
        ("Vaccination prevents measles.", "decreases"),
        ("Blood sugar is reduced by insulin.", "decreases"),
        ("Stress affects sleep.", ""),  # the verb gives no sign
        ("Smoking raises blood pressure and lowers HDL cholesterol.", ""),  # two signs disagree
        ("The sky is blue.", ""),
        # A cause written as its removal: the cue's sign is the removal's, the cause's the
        # opposite (a cause whose removal lowers the effect raises it; issue 44, item 6).
        (
            "Controlling blood pressure and cholesterol in people with diabetes prevents many of "
            "the heart attacks and strokes that diabetes would otherwise cause.",
            "increases",
        ),
        ("Preventing obesity lowers the risk of diabetes.", "increases"),
        ("Reducing salt intake lowers blood pressure.", "increases"),
        ("Lowering LDL cholesterol reduces heart attacks.", "increases"),
        ("Treating hypertension prevents strokes.", "increases"),
        ("Managing high blood pressure reduces the risk of stroke.", "increases"),  # "high" between
        ("Quitting smoking reduces the risk of stroke.", "increases"),
        ("Stroke is prevented by controlling blood pressure.", "increases"),  # passive
        # Its neighbours: a removal that raises, a plain preventer, a cause written as its rise.
        ("Controlling blood sugar raises energy levels.", "decreases"),
        ("Exercise prevents obesity.", "decreases"),
        ("Increasing physical activity lowers blood pressure.", "decreases"),
        ("Raising HDL cholesterol prevents heart attacks.", "decreases"),
        # Two statements, now of one sign: LDL raises attacks, smoking causes cancer.
        ("Lowering LDL reduces heart attacks, and smoking causes cancer.", "increases"),
    ],
)
def test_sentence_effect(sentence: str, effect: str):
    assert sentence_effect(sentence) == effect


def test_a_removal_turns_the_sign_of_each_cause_it_opens():
    from hcg_core.graph_build.extract import extract_statements

    sts = extract_statements("Controlling blood pressure and cholesterol prevents heart attacks.")
    assert [(st.cause.text, st.cause_removed) for st in sts] == [
        ("blood pressure", True),
        ("cholesterol", True),
    ]
    (plain,) = extract_statements("Exercise and salt affect blood pressure.")[:1]
    assert not plain.cause_removed


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("signs") / "g"
    assert main(["build", str(CORPUS), "--out", str(out), "--embedder", "hashing", "--quiet"]) == 0
    return out


def test_offline_edges_carry_the_sign_of_their_mechanism(built: Path):
    edges = load_graph(built).graph.edges
    assert all(e.effect == sentence_effect(e.mechanism) for e in edges)
    assert sum(e.effect == "increases" for e in edges) > len(edges) / 2


def test_query_prints_signed_paths_in_text_and_json(built: Path, capsys):
    q = "Why does smoking cause stroke?"
    assert main(["query", str(built), q, "--json", "--k", "3", "--mode", "paper"]) == 0
    out = json.loads(capsys.readouterr().out)
    effects = {e.id: e.effect for e in load_graph(built).graph.edges}
    paths = [p for c in out["chunks"] for p in c["paths"]]
    assert paths
    for p in paths:
        assert p["effects"] == [effects[e] for e in p["edge_ids"]]
        signs = re.findall(r"-\((.)\)->", p["text"])
        assert signs == [{"increases": "+", "decreases": "-"}.get(e, "?") for e in p["effects"]]
        assert p["text"].split(" ")[0] == p["variables"][0]
        assert p["text"].endswith(p["variables"][-1])
    assert any(p["text"].startswith("Smoking -(+)-> ") for p in paths)
    assert main(["query", str(built), q, "--k", "3", "--mode", "paper"]) == 0
    assert "path: Smoking -(+)-> " in capsys.readouterr().out
