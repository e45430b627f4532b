"""What the graph signal changes in the hybrid mode, on a built graph: on - off per question type.

Runs the retriever's own hybrid mode with the graph off, on (the defaults), and with other
``graph_weight`` settings, over a QA file at a word budget. Prints the
primary metric (gold-context recall when the questions carry gold context, else answer recall)
and the share of words that came through the graph route, then graph on - off per question type
with a 95% paired-bootstrap interval. ``--half design`` / ``--half report`` keeps one half of the
questions, fixed by a hash of each question's id, so a design chosen on one half is reported on
the other.

``--paper`` adds the paper route on its own: paper mode with ``PaperConfig(vector_fill=False)`` (only what
the graph selects; its words all come by the graph route), paper mode as configured, and the
paper's NaiveRAG (MiniLM top 5 of 1,200/200-word windows, ``hcg eval --ablations``), each with
its answer recall per question type and paper - NaiveRAG with a 95% paired-bootstrap interval.

The graph directory is only read (``CausalGraphRetriever.load``); nothing is written next to it.

    python benchmarks/graph_signal_sweep.py GRAPH_DIR --questions FILE [--sentences FILE] \\
        [--half design|report] [--only-default] [--paper] [--k N]

    python benchmarks/graph_signal_sweep.py DATA/llm-builds/medical-xs/graph \\
        --questions DATA/graphrag-bench-medical/dev_questions.json --half design \\
        --only-default
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

from hcg_core.config import HybridConfig, PaperConfig
from hcg_core.eval.baselines import documents_from_chunks, fill_budget, vector_system, word_windows
from hcg_core.eval.cli import (
    DEFAULT_BASELINE_CHUNK_OVERLAP,
    DEFAULT_BASELINE_CHUNK_WORDS,
    DEFAULT_BASELINE_K,
)
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval import CausalGraphRetriever

MANY = 200  # chunks asked for; the word budget stops first (as in hcg eval)
SETTINGS = {
    "graph off": {"use_graph": False},
    "weight 0.25 (default)": {},
    "weight 0.5": {"hybrid": HybridConfig(graph_weight=0.5)},
    "weight 1.0": {"hybrid": HybridConfig(graph_weight=1.0)},
}


def half_of(question_id: str) -> str:
    """``"design"`` or ``"report"``: a fixed split by the parity of a hash of the id.

    >>> sorted({half_of(str(i)) for i in range(20)})
    ['design', 'report']
    """
    digest = hashlib.blake2b(question_id.encode("utf-8"), digest_size=8).digest()
    return "design" if digest[-1] % 2 == 0 else "report"


def primary(scores) -> np.ndarray:
    return np.asarray(
        [s.recall if s.context_recall is None else s.context_recall for s in scores], float
    )


def rows_of(scores, group: str) -> list[int]:
    """The rows of ``scores`` in a question type (``"all"``: every row)."""
    return [i for i, s in enumerate(scores) if group == "all" or s.question_type == group]


def on_minus_off(on, off, paired_interval, names=("off", "on")) -> None:
    """Print on - off per question type, in points, with the 95% paired-bootstrap interval."""
    types = sorted({s.question_type for s in off})
    print(f"{'question type':<26}{'n':>5}{names[0]:>9}{names[1]:>8}{'diff':>10}  95% interval")
    for group in ["all", *types]:
        keep = rows_of(off, group)
        a, b = primary([on[i] for i in keep]), primary([off[i] for i in keep])
        lo, hi = paired_interval(a, b)
        print(
            f"{group:<26}{len(keep):>5}{b.mean():>9.3f}{a.mean():>8.3f}"
            f"{100 * (a - b).mean():>+10.2f}  [{lo:+.2f}, {hi:+.2f}]"
        )


PAPER_SETTINGS = {
    "paper, graph only": {"mode": "paper", "paper": PaperConfig(vector_fill=False)},
    "paper (vector fill)": {"mode": "paper"},
}
NAIVE = "naive-rag 1200/200 top 5"


def naive_rag(retriever, budget: int):
    """The paper's NaiveRAG as ``hcg eval --ablations`` runs it: cosine top 5 of 1,200/200 word
    windows of the graph's documents, cut at the budget."""
    docs = documents_from_chunks(retriever.graph.chunks)
    windows = [
        w
        for doc in docs
        for w in word_windows(doc, DEFAULT_BASELINE_CHUNK_WORDS, DEFAULT_BASELINE_CHUNK_OVERLAP)
    ]
    return fill_budget(vector_system(windows, retriever.embedder, DEFAULT_BASELINE_K), budget)


def paper_rows(retriever, questions, vectors, args, paired_interval) -> None:
    """Paper mode graph-only and with fill, and NaiveRAG: recall per type, words, graph share,
    and paper - NaiveRAG in points with the 95% paired-bootstrap interval."""
    systems = {}
    for name, changes in PAPER_SETTINGS.items():
        clone = retriever.with_config(word_budget=args.budget, **changes)
        systems[name] = lambda q, c=clone: c.retrieve_by_vector(q, vectors[q], MANY)
    systems[NAIVE] = naive_rag(retriever, args.budget)
    report = evaluate(systems, questions, budget=args.budget)
    types = sorted({s.question_type for s in report.scores[NAIVE]})
    print(
        f"\n{'paper route (answer recall)':<28}{'all':>7}"
        + "".join(f"{t[:12]:>14}" for t in types)
        + f"{'words':>8}{'graph words':>13}{'p50 ms':>8}"
    )
    for name in systems:
        every = report.row(name, "all")
        cells = "".join(f"{report.row(name, t).recall:>14.3f}" for t in types)
        share = "-" if every.graph_word_share is None else f"{every.graph_word_share:.2f}"
        print(
            f"{name:<28}{every.recall:>7.3f}{cells}{every.context_words:>8.0f}{share:>13}"
            f"{every.latency_p50_ms:>8.1f}"
        )
    naive = report.scores[NAIVE]
    for name in PAPER_SETTINGS:
        print(f"\n{name} - NaiveRAG (points)")
        on_minus_off(report.scores[name], naive, paired_interval, ("NaiveRAG", "paper"))


def main() -> None:
    # benchmarks/ is on sys.path when this script runs
    from dev_suite import paired_interval

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("--questions", required=True, help="any file hcg eval --questions reads")
    ap.add_argument("--sentences", default=None, help="sentence ids -> text, as for hcg eval")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--half", choices=("design", "report", "all"), default="all")
    ap.add_argument("--only-default", action="store_true", help="graph off and default only")
    ap.add_argument(
        "--paper",
        action="store_true",
        help="also paper mode graph-only and with fill, against NaiveRAG (1,200/200 top 5)",
    )
    ap.add_argument(
        "--k",
        type=int,
        default=None,
        help="ask for k units with no word budget (the adapters' way; scored at --budget words)",
    )
    args = ap.parse_args()
    retriever = CausalGraphRetriever.load(args.graph)
    sentences = load_sentences(args.sentences) if args.sentences else None
    questions = load_questions(args.questions, limit=args.limit, sentences=sentences)
    if args.half != "all":
        questions = [q for q in questions if half_of(str(q.id)) == args.half]
    vectors = {q.question: retriever.embed_query(q.question) for q in questions}
    settings = SETTINGS
    if args.only_default:
        settings = {k: SETTINGS[k] for k in ("graph off", "weight 0.25 (default)")}
    how = f"k={args.k}, no budget" if args.k else f"budget {args.budget}"
    print(f"{len(questions)} questions ({args.half}; {how}; scored at {args.budget} words)")
    print(f"{'setting':<34}{'primary':>9}{'answer':>8}{'graph words':>13}{'p50 ms':>8}")
    scores = {}
    for name, changes in settings.items():
        clone = retriever.with_config(word_budget=None if args.k else args.budget, **changes)
        report = evaluate(
            {name: lambda q, c=clone: c.retrieve_by_vector(q, vectors[q], args.k or MANY)},
            questions,
            budget=args.budget,
        )
        scores[name] = report.scores[name]
        every = report.row(name, "all")
        value = every.recall if every.context_recall is None else every.context_recall
        print(
            f"{name:<34}{value:>9.3f}{every.recall:>8.3f}{every.graph_word_share:>13.2f}"
            f"{every.latency_p50_ms:>8.1f}",
            flush=True,
        )
    if args.paper:
        paper_rows(retriever, questions, vectors, args, paired_interval)
    off = scores["graph off"]
    for name in scores:
        if name != "graph off":
            print(f"\n{name}")
            on_minus_off(scores[name], off, paired_interval)


if __name__ == "__main__":
    main()
