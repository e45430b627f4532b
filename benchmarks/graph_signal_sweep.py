"""How recall moves with the weight of the graph signal in the hybrid mode, on a built graph.

Runs the retriever's own hybrid mode with the graph off, and with several ``graph_weight`` /
``graph_candidates`` settings, over a QA file at a word budget; prints recall (all and Complex
Reasoning) and the share of words that came through the graph route.

    python benchmarks/graph_signal_sweep.py GRAPH_DIR [--questions FILE] [--budget 2000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hcg_core.config import HybridConfig
from hcg_core.eval.runner import evaluate, load_questions
from hcg_core.retrieval import CausalGraphRetriever

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "graphrag-bench-medical"
MANY = 200  # chunks asked for; the word budget stops first (as in hcg eval)
SETTINGS = {
    "graph off": {"use_graph": False},
    "weight 0.25": {"hybrid": HybridConfig(graph_weight=0.25)},
    "weight 0.5 (default)": {},
    "weight 1.0": {"hybrid": HybridConfig(graph_weight=1.0)},
    "weight 0.5, 5 graph candidates": {"graph_candidates": 5},
    "weight 0.5, 20 graph candidates": {"graph_candidates": 20},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("--questions", default=str(DATA / "dev_questions.json"))
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    retriever = CausalGraphRetriever.load(args.graph)
    questions = load_questions(args.questions, limit=args.limit)
    vectors = {q.question: retriever.embed_query(q.question) for q in questions}
    print(f"{'setting':<34}{'all':>8}{'complex':>9}{'graph words':>13}")
    for name, changes in SETTINGS.items():
        clone = retriever.with_config(word_budget=args.budget, **changes)
        report = evaluate(
            {name: lambda q, c=clone: c.retrieve_by_vector(q, vectors[q], MANY)},
            questions,
            budget=args.budget,
        )
        every, complex_ = report.row(name, "all"), report.row(name, "Complex Reasoning")
        print(
            f"{name:<34}{every.recall:>8.3f}{complex_.recall if complex_ else float('nan'):>9.3f}"
            f"{every.graph_word_share:>13.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
