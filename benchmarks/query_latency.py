"""End-to-end query latency: hcg's default retriever against a LlamaIndex VectorStoreIndex retriever.

Both embed the query with the same embedder (the one named in the graph's manifest) and search the
same chunks with the same stored vectors (the VectorStoreIndex gets them as node embeddings, so
nothing is re-embedded). Queries alternate between the two systems so that machine noise hits both
alike. Prints p50/p95 per system and the ratio of the p50s (target: hcg <= 1.5x).

    python benchmarks/query_latency.py GRAPH_DIR QUESTIONS_FILE [--queries 300] [--k 10]
    python benchmarks/query_latency.py --persist-dir STORAGE QUESTIONS_FILE   # an HCGIndex's
    python benchmarks/query_latency.py GRAPH_DIR QUESTIONS_FILE --against-embedding

``--against-embedding`` times hcg's default retriever (query embedding included) against the
query embedding alone, alternating per query: the ratio is what retrieval adds to the one
embedding call every retriever makes (target: <= 1.5x).

``--persist-dir`` times the core retriever of an ``HCGIndex`` persisted there (built over your own
nodes, e.g. ``SentenceSplitter(256, 32)``), against a VectorStoreIndex over the same nodes.

QUESTIONS_FILE is any file ``hcg eval --questions`` reads.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

from hcg_core.eval.runner import load_questions
from hcg_core.retrieval import CausalGraphRetriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph_dir", nargs="?", help="a graph directory (or give --persist-dir)")
    ap.add_argument("questions")
    ap.add_argument("--persist-dir", default=None, help="an HCGIndex's persist dir instead")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument(
        "--against-embedding",
        action="store_true",
        help="time hcg against the query embedding alone (no LlamaIndex retriever)",
    )
    args = ap.parse_args()
    if args.against_embedding:
        if not args.graph_dir:
            ap.error("--against-embedding needs GRAPH_DIR")
        against_embedding(CausalGraphRetriever.load(args.graph_dir), args)
        return

    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from llama_index_hcg import HCGDefaultEmbedding

    if args.persist_dir:
        from llama_index.core import StorageContext, load_index_from_storage

        index = load_index_from_storage(
            StorageContext.from_defaults(persist_dir=args.persist_dir),
            embed_model=HCGDefaultEmbedding(),
        )
        hcg = index.core_retriever
    elif args.graph_dir:
        hcg = CausalGraphRetriever.load(args.graph_dir)
    else:
        ap.error("give GRAPH_DIR or --persist-dir")
    embed_model = HCGDefaultEmbedding(embedder=hcg.embedder)
    nodes = [
        TextNode(id_=c.id, text=c.text, embedding=hcg.chunk_embeddings[i].tolist())
        for i, c in enumerate(hcg.graph.chunks)
    ]
    vector = VectorStoreIndex(nodes, embed_model=embed_model).as_retriever(similarity_top_k=args.k)
    with warnings.catch_warnings():
        # Only the question texts are timed: no gold sentences are needed, so no warning of them.
        warnings.simplefilter("ignore", UserWarning)
        questions = [q.question for q in load_questions(args.questions, limit=args.queries)]
    # Warm both (first-call allocations, the hybrid ranker's BM25 index).
    hcg.retrieve(questions[0], k=args.k)
    vector.retrieve(questions[0])
    p50 = side_by_side(
        questions,
        ("llama_index VectorStoreIndex", vector.retrieve),
        ("hcg default", lambda q: hcg.retrieve(q, k=args.k)),
        f"{len(questions)} queries, k={args.k}, {len(nodes)} chunks, embedder {hcg.embedder.name}",
    )
    ratio = p50["hcg default"] / p50["llama_index VectorStoreIndex"]
    print(f"  ratio of p50s (hcg / VectorStoreIndex): {ratio:.2f}x (target <= 1.5x)")


def side_by_side(
    questions: list[str],
    first: tuple[str, Callable[[str], object]],
    second: tuple[str, Callable[[str], object]],
    header: str,
) -> dict[str, float]:
    """Time ``first`` and ``second`` alternately on each question (so machine load falls on
    both alike), print each one's p50 and p95, and return the p50s in ms by name."""
    times: dict[str, list[float]] = {first[0]: [], second[0]: []}
    for q in questions:
        for name, call in (first, second):
            t0 = time.perf_counter()
            call(q)
            times[name].append((time.perf_counter() - t0) * 1000)
    print(header)
    p50 = {name: float(np.percentile(ms, 50)) for name, ms in times.items()}
    for name, ms in times.items():
        print(f"  {name:30s} p50 {p50[name]:7.2f} ms   p95 {np.percentile(ms, 95):7.2f} ms")
    return p50


def against_embedding(hcg: CausalGraphRetriever, args: argparse.Namespace) -> None:
    """p50 of ``hcg.retrieve`` (embedding included) and of ``hcg.embed_query`` alone, timed
    alternately on the same questions, and their ratio."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        questions = [q.question for q in load_questions(args.questions, limit=args.queries)]
    hcg.retrieve(questions[0], k=args.k)  # warm: the ranker's BM25 index, the walk's arrays
    p50 = side_by_side(
        questions,
        ("query embedding alone", hcg.embed_query),
        ("hcg default", lambda q: hcg.retrieve(q, k=args.k)),
        f"{len(questions)} queries, k={args.k}, {len(hcg.graph.chunks)} chunks, {hcg.embedder.name}",
    )
    ratio = p50["hcg default"] / p50["query embedding alone"]
    print(f"  ratio of p50s (hcg / embedding alone): {ratio:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
