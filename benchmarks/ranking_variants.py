"""Why the hybrid defaults are what they are: each setting changed alone, on every dev set, graph off.

For each set the corpus is chunked (the library's structure-aware chunker; plain 200/40 windows
that ignore blank lines; the chunker with its previous 300-word limit for a whole paragraph),
embedded once with the default embedder or ``--embedder NAME`` (cached
under --cache), and
ranked with ``HybridRanker`` under each variant, every system filled to the 2,000-word budget.
Reports gold-context recall (when the questions carry gold context) and answer recall. The graph
is off here on purpose: these are the text-ranking choices; benchmarks/dev_suite.py measures the
graph on and off.

    python benchmarks/ranking_variants.py --cache /tmp/hcg_cache \\
        --set medical=PATH/corpus.json:PATH/dev_questions.json \\
        --set psychology=PATH/all_abstracts.txt:PATH/qa.jsonl:PATH/sentences.jsonl ...
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from dev_suite import parse_set  # benchmarks/ is on sys.path when this script runs

from hcg_core.config import HybridConfig
from hcg_core.corpus import chunk_documents, load_inputs
from hcg_core.embedders import embedder_by_name
from hcg_core.embedders.factory import EMBEDDER_HELP
from hcg_core.embedding import embed_texts
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.types import Document

BUDGET = 2000
DEFAULT = HybridConfig()
VARIANTS: dict[str, HybridConfig] = {
    "default": DEFAULT,
    "max-normalised fusion": replace(DEFAULT, fusion="max"),
    "~100-word passages": replace(DEFAULT, passage_words=100),
    "windows always whole (window_passage_words 0)": replace(DEFAULT, window_passage_words=0),
    "windows always by halves (whole_windows_lead None)": replace(DEFAULT, whole_windows_lead=None),
    "windows whole from a lead of 0.5": replace(DEFAULT, whole_windows_lead=0.5),
    "windows whole from a lead of 1.0": replace(DEFAULT, whole_windows_lead=1.0),
    "repeats kept (cut_repeats False)": replace(DEFAULT, cut_repeats=False),
    "no diversity (lambda 1.0)": replace(DEFAULT, diversity=1.0),
    "lambda 0.7": replace(DEFAULT, diversity=0.7),
    "BM25 only": replace(DEFAULT, dense_weight=0.0),
    "dense only": replace(DEFAULT, bm25_weight=0.0),
    "clear match not followed (follow_gap None)": replace(DEFAULT, follow_gap=None),
    "language gap not filled": replace(DEFAULT, fill_language_gap=False),
    "language gap by dense only (gap_char_grams False)": replace(DEFAULT, gap_char_grams=False),
}
# The previous default, for reference: fixed-weight fusion, passages.
VARIANTS["previous default (max fusion, passages)"] = replace(
    DEFAULT, fusion="max", passage_words=100
)


def cached(embedder, texts: list[str], cache: Path, kind: str) -> np.ndarray:
    key = hashlib.blake2b("\x00".join(texts).encode(), digest_size=8).hexdigest()
    path = cache / f"{embedder.name}-{kind}-{key}.npy"
    if path.exists():
        return np.load(path)
    if kind == "query":
        emb = np.stack([np.asarray(embedder.embed_query(t), np.float32) for t in texts])
        emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    else:
        emb = embed_texts(embedder, texts, what=kind, progress=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def windows_only(docs: list[Document]) -> list[Document]:
    """The same documents with every blank line removed: the chunker then cuts plain windows."""
    return [replace(d, text=" ".join(d.text.split())) for d in docs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, type=parse_set)
    ap.add_argument("--cache", type=Path, required=True, help="embedding cache folder")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--embedder", default=None, help=f"{EMBEDDER_HELP}; default: 'default'")
    ap.add_argument(
        "--no-windows",
        action="store_true",
        help="skip the plain 200/40-window chunking (saves embedding it with a slow embedder)",
    )
    args = ap.parse_args(argv)
    embedder = embedder_by_name(args.embedder)
    lines = [
        "| set | variant | primary | context recall | answer recall |",
        "|---|---|---|---|---|",
    ]
    for name, paths in args.set:
        sentences = load_sentences(paths[2]) if len(paths) == 3 else None
        questions = load_questions(paths[1], limit=args.limit, sentences=sentences)
        qvecs = cached(embedder, [q.question for q in questions], args.cache, "query")
        row_of = {q.question: i for i, q in enumerate(questions)}
        docs, _ = load_inputs([paths[0]])
        chunkings = [("structure", chunk_documents(docs))]
        if not args.no_windows:
            chunkings.append(("plain 200/40 windows", chunk_documents(windows_only(docs))))
            # The previous default: a paragraph over 1.5x chunk_words was windowed.
            chunkings.append(
                ("paragraphs whole up to 300 words", chunk_documents(docs, whole_words=300))
            )
        for chunking, chunks in chunkings:
            emb = cached(embedder, [c.text for c in chunks], args.cache, "chunks")
            variants = VARIANTS if chunking == "structure" else {"default": DEFAULT}
            if chunking == "plain 200/40 windows":
                # Every unit is a window here: where ranking windows by halves costs most.
                variants = {
                    **variants,
                    "whole": VARIANTS["windows always whole (window_passage_words 0)"],
                    "halves": VARIANTS["windows always by halves (whole_windows_lead None)"],
                    "lead 0.5": VARIANTS["windows whole from a lead of 0.5"],
                    "lead 1.0": VARIANTS["windows whole from a lead of 1.0"],
                }
            systems = {}
            for vname, cfg in variants.items():
                ranker = HybridRanker(chunks, emb, cfg)

                def run(q: str, ranker: HybridRanker = ranker, qvecs=qvecs, row_of=row_of):
                    vec = qvecs[row_of[q]]
                    return ranker.rank(q, vec, None, word_budget=BUDGET, use_graph=False)

                label = vname if chunking == "structure" else f"{vname}, {chunking}"
                systems[label] = run
            report = evaluate(systems, questions, budget=BUDGET)
            for r in report.rows:
                if r.group != "all":
                    continue
                ctx = "-" if r.context_recall is None else f"{r.context_recall:.3f}"
                primary = r.recall if r.context_recall is None else r.context_recall
                lines.append(f"| {name} | {r.system} | {primary:.3f} | {ctx} | {r.recall:.3f} |")
            print(f"done: {name}, {chunking} ({len(chunks)} chunks)", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
