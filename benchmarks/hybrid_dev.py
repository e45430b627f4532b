"""Measure the hybrid ranking and packing on the dev set without a graph (use_graph=False).

Chunks come from the library's default chunker (200 words, 40 overlap); every system is given the
same 2,000-word budget (top chunks until the budget is reached). Prints the evaluation table, and a
summary line per system. Embeddings are cached under --cache (MiniLM takes minutes on 2 cores).

    python benchmarks/hybrid_dev.py [--limit N] [--no-minilm] [--cache DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from hcg_core.corpus import chunk_documents, load_inputs
from hcg_core.embedders import HashingEmbedder
from hcg_core.eval.baselines import bm25_system, bm25s_system, fill_budget, vector_system
from hcg_core.eval.runner import evaluate, load_questions
from hcg_core.retrieval.hybrid import HybridConfig, HybridRanker

HERE = Path(__file__).resolve().parent


def cached_embeddings(embedder, texts: list[str], cache: Path) -> np.ndarray:
    key = hashlib.blake2b("\x00".join(texts).encode(), digest_size=8).hexdigest()
    path = cache / f"{embedder.name}-{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    emb = embedder.embed_documents(texts)
    print(
        f"embedded {len(texts)} texts with {embedder.name} in {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="corpus file (e.g. corpus.json)")
    ap.add_argument("--questions", required=True, help="QA file (e.g. dev_questions.json)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--chunk-words", type=int, default=200)
    ap.add_argument("--chunk-overlap", type=int, default=40)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--no-minilm", action="store_true", help="only the hashing embedder")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "hcg-rag-bench"))
    ap.add_argument("--json", default=None, help="also write the report here")
    args = ap.parse_args(argv)

    docs, _ = load_inputs([args.corpus])
    chunks = chunk_documents(docs, chunk_words=args.chunk_words, overlap_words=args.chunk_overlap)
    texts = [c.text for c in chunks]
    questions = load_questions(args.questions, limit=args.limit)
    budget = args.budget
    many = 100  # enough chunks for any system to reach the budget

    embedders = [HashingEmbedder()]
    if not args.no_minilm:
        from hcg_core.embedders import default_embedder

        embedders.append(default_embedder())
    qtexts = [q.question for q in questions]
    systems = {
        f"bm25s {args.chunk_words}/{args.chunk_overlap}": fill_budget(
            bm25s_system(texts, many), budget
        ),
        f"bm25 (ours) {args.chunk_words}/{args.chunk_overlap}": fill_budget(
            bm25_system(texts, many), budget
        ),
    }
    base = HybridConfig()
    for emb in embedders:
        name = "minilm" if "minilm" in emb.name else "hash"
        cemb = cached_embeddings(emb, texts, Path(args.cache))
        qemb = cached_embeddings(emb, qtexts, Path(args.cache))
        qvec = dict(zip(qtexts, qemb, strict=True))

        class _Cached:
            """The embedder, with the questions' vectors precomputed (latency = ranking only)."""

            def __init__(self, inner, vectors):
                self.name, self.dim, self._inner, self._vectors = (
                    inner.name,
                    inner.dim,
                    inner,
                    vectors,
                )

            def embed_query(self, text):
                hit = self._vectors.get(text)
                return hit if hit is not None else self._inner.embed_query(text)

            def embed_documents(self, t):
                return self._inner.embed_documents(t)

        cached = _Cached(emb, qvec)
        systems[f"dense {name}"] = fill_budget(
            vector_system(texts, cached, many, embeddings=cemb), budget
        )
        variants = {
            f"hybrid-nograph {name}": base,
            f"  whole chunks (passage_words 0) {name}": replace(base, passage_words=0),
            f"  ~70-word passages {name}": replace(base, passage_words=70),
            f"  no diversity (lambda 1) {name}": replace(base, diversity=1.0),
            f"  lambda 0.7 {name}": replace(base, diversity=0.7),
            f"  bm25 + mmr only {name}": replace(base, dense_weight=0.0),
        }
        for label, cfg in variants.items():
            ranker = HybridRanker(chunks, cemb, cfg)

            def run(q, ranker=ranker, vectors=qvec):
                return ranker.rank(q, vectors[q], None, word_budget=budget, use_graph=False)

            systems[label] = run

    report = evaluate(systems, questions, budget=budget)
    report.meta.update(
        chunks=len(chunks),
        chunk_words=args.chunk_words,
        chunk_overlap=args.chunk_overlap,
        embedders=[e.name for e in embedders],
    )
    print(
        f"{len(chunks)} chunks ({args.chunk_words}/{args.chunk_overlap}), "
        f"{len(questions)} questions, budget {budget} words"
    )
    print(report.format_table())
    if args.json:
        Path(args.json).write_text(report.to_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
