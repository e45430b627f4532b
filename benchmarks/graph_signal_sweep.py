"""How recall moves with the weight of the graph signal in the hybrid mode, on a built graph.

Runs the retriever's own hybrid mode with the graph off, and with several ``graph_weight`` /
``graph_candidates`` settings, over a QA file at a word budget; prints the primary metric
(gold-context recall when the questions carry gold context, else answer recall), answer recall,
and the share of words that came through the graph route.

    python benchmarks/graph_signal_sweep.py GRAPH_DIR --questions FILE [--sentences FILE]
"""

from __future__ import annotations

import argparse

from hcg_core.config import HybridConfig
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval import CausalGraphRetriever

MANY = 200  # chunks asked for; the word budget stops first (as in hcg eval)
SETTINGS = {
    "graph off": {"use_graph": False},
    "weight 0.25 (default)": {},
    "weight 0.5": {"hybrid": HybridConfig(graph_weight=0.5)},
    "weight 1.0": {"hybrid": HybridConfig(graph_weight=1.0)},
    "weight 0.25, 5 graph candidates": {"graph_candidates": 5},
    "weight 0.25, 20 graph candidates": {"graph_candidates": 20},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("--questions", required=True, help="any file hcg eval --questions reads")
    ap.add_argument("--sentences", default=None, help="sentence ids -> text, as for hcg eval")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    retriever = CausalGraphRetriever.load(args.graph)
    sentences = load_sentences(args.sentences) if args.sentences else None
    questions = load_questions(args.questions, limit=args.limit, sentences=sentences)
    vectors = {q.question: retriever.embed_query(q.question) for q in questions}
    print(f"{'setting':<34}{'primary':>9}{'answer':>8}{'graph words':>13}")
    for name, changes in SETTINGS.items():
        clone = retriever.with_config(word_budget=args.budget, **changes)
        report = evaluate(
            {name: lambda q, c=clone: c.retrieve_by_vector(q, vectors[q], MANY)},
            questions,
            budget=args.budget,
        )
        every = report.row(name, "all")
        primary = every.recall if every.context_recall is None else every.context_recall
        print(
            f"{name:<34}{primary:>9.3f}{every.recall:>8.3f}{every.graph_word_share:>13.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
