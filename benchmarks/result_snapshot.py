"""Snapshot every retrieval result for many queries, and compare two snapshots: speed work's check.

A change meant to make queries cheaper must not change any result. This script loads a graph
directory, answers every question of a QA file under several settings (the default hybrid mode,
the graph ablation, the paper mode, passages, a word budget, a metadata filter, and the
default mode again after incremental inserts, which exercises the BM25 index's appended postings),
and writes every returned chunk id, route, score and score part, plus the matched variables and
the diagnostics, to JSON. Run it on the code before and after a change and compare:

    python benchmarks/result_snapshot.py GRAPH_DIR QUESTIONS --out before.json   # old code
    python benchmarks/result_snapshot.py GRAPH_DIR QUESTIONS --out after.json    # new code
    python benchmarks/result_snapshot.py --compare before.json after.json

The comparison requires equal ids, order, routes, paths, matched variables and diagnostics, and
numbers within ``--tolerance`` (1e-9), for every setting both snapshots hold (a setting only one
holds is named and skipped). QUESTIONS is any file ``hcg eval --questions`` reads.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcg_core.eval.runner import load_questions  # noqa: E402
from hcg_core.retrieval import CausalGraphRetriever  # noqa: E402
from hcg_core.types import RetrievalResult, SourceDocument  # noqa: E402

# Settings snapshotted, by name: RetrievalConfig changes (``hybrid`` takes HybridConfig changes).
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "nograph": {"use_graph": False},
    "paper": {"mode": "paper"},
    "passages": {"hybrid": {"passage_words": 100}},
    "budget": {"word_budget": 600, "top_k": 30},
}


def result_json(result: RetrievalResult) -> dict[str, Any]:
    """Everything a user sees of one result, as plain JSON."""
    return {
        "served_by": result.served_by,
        "matched": list(result.matched),
        "diagnostics": result.diagnostics,
        "chunks": [
            {
                "id": rc.chunk.id,
                "route": rc.route,
                "score": rc.score,
                "paths": [
                    [list(p.variables), list(p.edge_ids), list(p.mechanisms)] for p in rc.paths
                ],
                "details": rc.details,
            }
            for rc in result.chunks
        ],
    }


def variant(retriever: CausalGraphRetriever, changes: dict[str, Any]) -> CausalGraphRetriever:
    changes = dict(changes)
    if "hybrid" in changes:
        from dataclasses import replace

        changes["hybrid"] = replace(retriever.config.hybrid, **changes["hybrid"])
    return retriever.with_config(**changes) if changes else retriever


def snapshot(graph_dir: str, questions: list[str], inserts: int) -> dict[str, Any]:
    retriever = CausalGraphRetriever.load(graph_dir)
    out: dict[str, Any] = {}
    for name, changes in VARIANTS.items():
        view = variant(retriever, changes)
        out[name] = [result_json(view.retrieve(q)) for q in questions]
    # A metadata filter: every third chunk is allowed.
    allowed = np.arange(len(retriever.graph.chunks)) % 3 == 0
    out["filtered"] = [result_json(retriever.retrieve(q, allowed=allowed)) for q in questions]
    if inserts:
        # Documents made of existing chunks' text (so they share the vocabulary), appended.
        chunks = retriever.graph.chunks
        step = max(1, len(chunks) // inserts)
        docs = [
            SourceDocument(
                f"inserted{i:03d}", chunks[i * step].text + " " + chunks[i * step + 1].text
            )
            for i in range(inserts)
        ]
        retriever.retrieve(questions[0])  # the ranker exists before the insert, as when serving
        retriever.insert(docs)
        out["after-insert"] = [result_json(retriever.retrieve(q)) for q in questions]
    return out


def differences(a: Any, b: Any, tolerance: float, where: str = "") -> list[str]:
    """Where two JSON values differ (numbers within ``tolerance`` count as equal)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return [] if a == b else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isclose(a, b, rel_tol=0.0, abs_tol=tolerance):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in differences(a[k], b[k], tolerance, f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, tolerance, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph_dir", nargs="?")
    ap.add_argument("questions", nargs="?")
    ap.add_argument("--out", help="write the snapshot here")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--inserts", type=int, default=5, help="documents inserted (0: skip)")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--tolerance", type=float, default=1e-9)
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        # A setting one snapshot lacks (one added or removed between them) is named, not compared.
        for name in sorted(before.keys() ^ after.keys()):
            print(
                f"setting {name!r} only in {'BEFORE' if name in before else 'AFTER'}: not compared"
            )
        before = {k: v for k, v in before.items() if k in after}
        after = {k: v for k, v in after.items() if k in before}
        diffs = differences(before, after, args.tolerance)
        results = sum(len(v) for v in before.values())
        for d in diffs[:20]:
            print(d)
        print(f"{results} results compared ({', '.join(before)}): {len(diffs)} differences")
        return 1 if diffs else 0
    if not (args.graph_dir and args.questions and args.out):
        ap.error("give GRAPH_DIR QUESTIONS --out FILE, or --compare BEFORE AFTER")
    questions = [q.question for q in load_questions(args.questions, limit=args.queries)]
    snap = snapshot(args.graph_dir, questions, args.inserts)
    Path(args.out).write_text(json.dumps(snap))
    print(f"{sum(len(v) for v in snap.values())} results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
