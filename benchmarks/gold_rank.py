"""Where does the gold context rank? A failure analysis for questions that carry gold context.

For every question, the best rank of a chunk holding one of its gold passages whole
(whitespace-normalised, as context recall counts it), under BM25 alone, dense cosine alone and
the default retriever (its first 50 results). Prints how often the gold is first, in the top 3,
10, 50, or not found, and, of the questions no system finds in its top 50, how many have gold
text that reads as not English (under 5% English function words): an English-only embedder and
an English tokenizer cannot match those, whatever the ranking does.

    python benchmarks/gold_rank.py GRAPH_DIR QUESTIONS [--sentences SENTENCES.jsonl]

Nothing here knows a particular corpus: any graph directory and any QA file with ``context`` or
``context_sentence_ids`` (see ``hcg eval``) will do.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hcg_core.corpus import NOT_ENGLISH_SHARE, english_share
from hcg_core.eval.metric import normalise_space
from hcg_core.eval.runner import load_questions, load_sentences
from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.retrieval.lexical import BM25Index

DEPTH = 50
CUTS = (1, 3, 10, DEPTH)


def best_rank(order: np.ndarray, holders: set[int]) -> int | None:
    """1-based rank of the first row of ``order`` in ``holders``; None when none is there."""
    for i, row in enumerate(order.tolist(), start=1):
        if row in holders:
            return i
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph", type=Path)
    ap.add_argument("questions", type=Path)
    ap.add_argument("--sentences", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args(argv)
    sentences = load_sentences(args.sentences) if args.sentences else None
    questions = [
        q
        for q in load_questions(args.questions, limit=args.limit, sentences=sentences)
        if q.context
    ]
    if not questions:
        raise SystemExit("no question carries gold context (context or context_sentence_ids)")
    retriever = CausalGraphRetriever.load(args.graph)
    chunks = retriever.graph.chunks
    flat = [normalise_space(c.text) for c in chunks]
    row_of = {c.id: i for i, c in enumerate(chunks)}
    # BM25 over the chunks themselves (the default ranker's index is over its units, which split
    # windows into halves).
    chunk_bm25 = BM25Index([c.text for c in chunks])
    ranks: dict[str, list[int | None]] = {"bm25": [], "dense": [], "hcg default": []}
    missed_everywhere: list[str] = []
    for q in questions:
        gold = [normalise_space(t) for t in q.context]
        holders = {i for i, text in enumerate(flat) if any(g in text for g in gold)}
        qvec = retriever.embed_query(q.question)
        bm25 = chunk_bm25.scores(q.question)
        dense = retriever.chunk_embeddings @ qvec
        result = retriever.retrieve(q.question, k=DEPTH)
        orders = {
            "bm25": np.argsort(-bm25, kind="stable")[:DEPTH],
            "dense": np.argsort(-dense, kind="stable")[:DEPTH],
            "hcg default": np.asarray([row_of[c.chunk.id] for c in result.chunks]),
        }
        found = {name: best_rank(order, holders) for name, order in orders.items()}
        for name, r in found.items():
            ranks[name].append(r)
        if all(r is None for r in found.values()):
            missed_everywhere.append(" ".join(q.context))
    n = len(questions)
    print(f"{n} questions with gold context; rank of the first chunk holding a gold passage\n")
    print("| system | " + " | ".join(f"top {c}" for c in CUTS) + f" | not in top {DEPTH} |")
    print("|---|" + "---|" * (len(CUTS) + 1))
    for name, rs in ranks.items():
        shares = [sum(1 for r in rs if r is not None and r <= c) / n for c in CUTS]
        missing = sum(1 for r in rs if r is None) / n
        print(f"| {name} | " + " | ".join(f"{s:.3f}" for s in shares) + f" | {missing:.3f} |")
    foreign = sum(1 for t in missed_everywhere if english_share(t) < NOT_ENGLISH_SHARE)
    print(
        f"\nmissed by all three: {len(missed_everywhere)} of {n} questions; "
        f"their gold reads as not English in {foreign}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
