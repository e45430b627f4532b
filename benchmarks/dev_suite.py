"""All development sets in one command: HCG (default, graph off, paper) against BM25 and vector top-k.

For each set the corpus is built with ``hcg build`` on the library defaults (reused from --work when
already built), then every system answers every question at the same word budget and is scored on
gold-context recall (when the questions carry gold context) and lexical answer recall
(``hcg_core.eval``). ``--embedder NAME`` builds with another embedder (for example
``multilingual``); the vector baselines then use it too. Systems:

- ``hcg default``: the retriever as a user gets it (hybrid mode, graph signal on);
- ``hcg graph off``: the same pipeline with the graph signal off (the ablation);
- ``hcg paper``: the paper's Stage 3 exactly, vector fill to the budget;
- ``bm25 200/40``, ``bm25 1200/200 top 5``: BM25 over plain word windows of the documents;
- ``bm25 same chunks``: BM25 over the chunks hcg built (same units as hcg);
- ``vector same chunks``, ``vector 200/40``: cosine top-k with the same embedder.

The primary metric is gold-context recall where the set has gold context, answer recall elsewhere.
Usage (data paths are arguments; nothing is read from outside them)::

    python benchmarks/dev_suite.py --work /tmp/dev \\
        --set medical=PATH/corpus.json:PATH/dev_questions.json \\
        --set psychology=PATH/all_abstracts.txt:PATH/qa.jsonl:PATH/sentences.jsonl \\
        --set business=...

Prints one table per set, a summary of the margins, and a score-calibration table: the top score
of each set's own questions against the top score its corpus gives the *other* sets' questions
(off-topic there), with the share of each on either side of the documented cut-off. Writes
``--work/results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from hcg_core.cli import main as hcg_main
from hcg_core.eval.baselines import (
    documents_from_chunks,
    fill_budget,
    vector_system,
    word_windows,
)
from hcg_core.eval.cli import baseline_systems, hcg_systems
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval import CausalGraphRetriever

BUDGET = 2000
_MANY = 200
CUTOFF = 0.2  # the cut-off docs/configuration.md documents for hcg scores
CALIBRATION_QUESTIONS = 200  # per set, for the score-calibration table


def parse_set(text: str) -> tuple[str, list[Path]]:
    name, _, paths = text.partition("=")
    parts = [Path(p) for p in paths.split(":") if p]
    if not name or len(parts) not in (2, 3):
        raise SystemExit(f"--set NAME=CORPUS:QUESTIONS[:SENTENCES], got {text!r}")
    return name, parts


def build(
    name: str, corpus: Path, work: Path, rebuild: bool, embedder: str | None = None
) -> tuple[Path, float | None]:
    out = work / name / "graph"
    if out.exists() and not rebuild and (out / "manifest.json").exists():
        return out, None
    t0 = time.perf_counter()
    args = ["build", str(corpus), "--out", str(out), "--quiet"]
    if embedder:
        args += ["--embedder", embedder]
    if out.exists():
        args.append("--force")
    if hcg_main(args) != 0:
        raise SystemExit(f"hcg build failed for {name}")
    return out, time.perf_counter() - t0


def systems_for(retriever: CausalGraphRetriever) -> dict:
    systems = hcg_systems(retriever, ["hybrid", "hybrid-nograph", "paper"], k=None, budget=BUDGET)
    named = {
        "hcg default": systems["hcg hybrid"],
        "hcg graph off": systems["hcg hybrid-nograph"],
        "hcg paper": systems["hcg paper"],
    }
    args = SimpleNamespace(
        k=None, budget=BUDGET, baseline_chunk_words=1200, baseline_chunk_overlap=200, baseline_k=5
    )
    base = baseline_systems(retriever, args)
    named["bm25 200/40"] = base["bm25 200/40"]
    named["bm25 1200/200 top 5"] = base["bm25 1200/200 top 5"]
    named["bm25 same chunks"] = base["bm25 (same chunks)"]
    named["vector same chunks"] = base["vector top-k (same chunks)"]
    docs = documents_from_chunks(retriever.graph.chunks)
    windows = [w for d in docs for w in word_windows(d, 200, 40)]
    named["vector 200/40"] = fill_budget(vector_system(windows, retriever.embedder, _MANY), BUDGET)
    return named


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, type=parse_set)
    parser.add_argument("--work", type=Path, required=True, help="graphs and results go here")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per set")
    parser.add_argument("--rebuild", action="store_true", help="rebuild graphs already in --work")
    parser.add_argument(
        "--embedder",
        default=None,
        help="build with this embedder (hcg build --embedder; default the library's); the vector "
        "baselines use the same one",
    )
    args = parser.parse_args(argv)
    results: dict[str, dict] = {}
    question_sets = {
        name: load_questions(
            paths[1],
            limit=args.limit,
            sentences=load_sentences(paths[2]) if len(paths) == 3 else None,
        )
        for name, paths in args.set
    }
    for name, paths in args.set:
        questions = question_sets[name]
        graph_dir, build_s = build(name, paths[0], args.work, args.rebuild, args.embedder)
        retriever = CausalGraphRetriever.load(graph_dir)
        print(
            f"== {name}: {len(questions)} questions, {len(retriever.graph.chunks)} chunks, "
            f"graph {len(retriever.graph.variables)} variables / {len(retriever.graph.edges)} "
            f"edges" + (f", built in {build_s:.0f} s" if build_s else ""),
            file=sys.stderr,
        )
        report = evaluate(systems_for(retriever), questions, budget=BUDGET)
        has_context = report.row("hcg default").context_recall is not None
        rows = {}
        per_question = {
            system: [(q.context_recall if has_context else q.recall) for q in report.scores[system]]
            for system in report.scores
        }
        for r in report.rows:
            if r.group != "all":
                continue
            rows[r.system] = {
                "context_recall": r.context_recall,
                "answer_recall": r.recall,
                "primary": r.context_recall if has_context else r.recall,
                "p50_ms": r.latency_p50_ms,
                "graph_word_share": r.graph_word_share,
                "per_question": per_question[r.system],
            }
        own = [q.question for q in questions[:CALIBRATION_QUESTIONS]]
        foreign = [
            q.question
            for other, qs in question_sets.items()
            if other != name
            for q in qs[:CALIBRATION_QUESTIONS]
        ]
        results[name] = {
            "calibration": {
                "own": [retriever.retrieve(q, k=1).chunks[0].score for q in own],
                "foreign": [retriever.retrieve(q, k=1).chunks[0].score for q in foreign],
            },
            "questions": len(questions),
            "primary_metric": "context recall" if has_context else "answer recall",
            "chunks": len(retriever.graph.chunks),
            "build_seconds": build_s,
            "systems": rows,
        }
        print(format_set(name, results[name]))
        sys.stdout.flush()
    print(format_summary(results))
    print(format_calibration(results))
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "results.json").write_text(json.dumps(results, indent=2))
    return 0


def format_set(name: str, res: dict) -> str:
    lines = [
        f"### {name} ({res['questions']} questions; primary: {res['primary_metric']} at "
        f"{BUDGET:,} words)",
        "",
        "| system | primary | context recall | answer recall | p50 ms |",
        "|---|---|---|---|---|",
    ]
    for system, r in res["systems"].items():
        ctx = "-" if r["context_recall"] is None else f"{r['context_recall']:.3f}"
        lines.append(
            f"| {system} | {r['primary']:.3f} | {ctx} | {r['answer_recall']:.3f} | "
            f"{r['p50_ms']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def paired_interval(a: list[float], b: list[float], resamples: int = 2000) -> tuple[float, float]:
    """95% paired-bootstrap interval of mean(a - b) over the same questions, in points.

    >>> lo, hi = paired_interval([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    >>> 0 <= lo <= hi <= 100
    True
    """
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return 100 * float(lo), 100 * float(hi)


def format_summary(results: dict) -> str:
    lines = [
        "### margins of hcg default (points of the primary metric; 95% paired-bootstrap interval)",
        "",
        "| set | vs best BM25 (200/40, 1200/200) | vs vector same chunks | vs vector 200/40 | "
        "graph on - off |",
        "|---|---|---|---|---|",
    ]
    for name, res in results.items():
        systems = res["systems"]
        best_bm25 = max(("bm25 200/40", "bm25 1200/200 top 5"), key=lambda k: systems[k]["primary"])
        cells = []
        for other in (best_bm25, "vector same chunks", "vector 200/40", "hcg graph off"):
            mine, theirs = systems["hcg default"], systems[other]
            lo, hi = paired_interval(mine["per_question"], theirs["per_question"])
            cells.append(
                f"{100 * (mine['primary'] - theirs['primary']):+.1f} [{lo:+.1f}, {hi:+.1f}]"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def format_calibration(results: dict) -> str:
    lines = [
        f"### top score of the default retriever: own questions vs other sets' (cut-off {CUTOFF})",
        "",
        "| corpus | own p10 | own p50 | own >= cut-off | others' p50 | others' p90 | "
        "others' < cut-off |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, res in results.items():
        own = np.asarray(res["calibration"]["own"])
        other = np.asarray(res["calibration"]["foreign"])
        if other.size == 0:
            continue
        lines.append(
            f"| {name} | {np.percentile(own, 10):.2f} | {np.percentile(own, 50):.2f} | "
            f"{(own >= CUTOFF).mean():.0%} | {np.percentile(other, 50):.2f} | "
            f"{np.percentile(other, 90):.2f} | {(other < CUTOFF).mean():.0%} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
