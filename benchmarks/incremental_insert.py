"""Incremental insert cost: one ~150-word document into a small vs a large index, and a stream.

Builds two offline graphs from the corpus given (the first ``--small-words`` and ``--large-words``
words of it), then times ``insert`` of held-out ~150-word documents followed by one query, on the
core retriever and on a LlamaIndex ``HCGIndex`` wrapping the same graph. The target (issue 15):
insert + query into the large index costs at most 3x the same into the small one (7.3x before
incremental inserts). Then ``--stream`` sequential inserts into the large index: the last ten
must cost no more than the first ten (an insert's cost must not grow with the inserts before it).

    python benchmarks/incremental_insert.py CORPUS... [--embedder hashing|hashing-v1-384|default]
        [--small-words 1000] [--large-words 200000] [--stream 100] [--json FILE]

Use ``--embedder hashing`` to time the index rather than the embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcg_core.corpus import chunk_documents, load_inputs  # noqa: E402
from hcg_core.embedders.factory import embedder_by_name  # noqa: E402
from hcg_core.graph_build import build_graph  # noqa: E402
from hcg_core.retrieval import CausalGraphRetriever  # noqa: E402
from hcg_core.types import Document  # noqa: E402

QUERY = "What increases the risk?"


def word_docs(docs: list[Document], words: int, size: int) -> list[Document]:
    """Documents of about ``size`` words cut from the corpus's word stream, ``words`` in all."""
    out: list[Document] = []
    buf: list[str] = []
    total = 0
    for d in docs:
        for w in d.text.split():
            buf.append(w)
            if len(buf) == size:
                out.append(Document(f"doc{len(out):06d}", " ".join(buf)))
                total += size
                buf = []
                if total >= words:
                    return out
    if buf:
        out.append(Document(f"doc{len(out):06d}", " ".join(buf)))
    return out


def build(docs: list[Document], embedder) -> CausalGraphRetriever:
    result = build_graph(chunk_documents(docs), embedder=embedder, progress=False)
    core = CausalGraphRetriever.from_graph(
        result.graph,
        embedder,
        variable_embeddings=result.variable_embeddings,
        chunk_embeddings=result.chunk_embeddings,
    )
    core.ledger = result.ledger
    core.retrieve(QUERY)  # the hybrid ranker is built before timing, as in a serving process
    return core


def timed_inserts(insert, query, docs: list[Document]) -> tuple[list[float], list[float]]:
    """Seconds of each insert + query, and of each query alone."""
    times, queries = [], []
    for d in docs:
        t = time.perf_counter()
        insert(d)
        q = time.perf_counter()
        query()
        done = time.perf_counter()
        times.append(done - t)
        queries.append(done - q)
    return times, queries


def llama_index_of(core: CausalGraphRetriever, embedder, folder: Path):
    from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

    core.save(folder)
    index = HCGIndex.from_graph_dir(folder, embed_model=HCGDefaultEmbedding(embedder=embedder))
    retriever = index.as_retriever(similarity_top_k=10)
    retriever.retrieve(QUERY)
    return index, retriever


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="+", help="files or folders (hcg_core.corpus.load_inputs)")
    ap.add_argument(
        "--embedder",
        default="hashing",
        help="hashing (default), hashing-v1-384, default (MiniLM) or a stored name",
    )
    ap.add_argument("--small-words", type=int, default=1000)
    ap.add_argument("--large-words", type=int, default=200_000)
    ap.add_argument("--doc-words", type=int, default=150, help="words per inserted document")
    ap.add_argument("--repeats", type=int, default=5, help="inserts timed per index (median)")
    ap.add_argument("--stream", type=int, default=100, help="sequential inserts (0: skip)")
    ap.add_argument("--no-llamaindex", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    embedder = embedder_by_name(args.embedder)
    source, bad = load_inputs(args.corpus)
    for path, why in bad:
        print(f"skipped {path}: {why}", file=sys.stderr)
    pieces = word_docs(
        source, args.large_words + args.doc_words * (args.stream + 2 * args.repeats), 500
    )
    words_in = 0
    large_docs: list[Document] = []
    for d in pieces:
        if words_in >= args.large_words:
            break
        large_docs.append(d)
        words_in += len(d.text.split())
    rest = pieces[len(large_docs) :]
    held = word_docs(rest, args.doc_words * (args.stream + args.repeats), args.doc_words)
    held = [Document(f"new{i:05d}", d.text) for i, d in enumerate(held)]
    small_docs = word_docs(large_docs, args.small_words, 500)
    if len(held) < args.stream + args.repeats:
        raise SystemExit("the corpus is too small for that many held-out documents")

    figures: dict = {"embedder": embedder.name, "doc_words": args.doc_words}
    built = {}
    for name, docs in (("small", small_docs), ("large", large_docs)):
        t = time.perf_counter()
        built[name] = build(docs, embedder)
        g = built[name].graph
        figures[f"{name}_index"] = {
            "words": sum(len(d.text.split()) for d in docs),
            "chunks": len(g.chunks),
            "edges": len(g.edges),
            "build_s": round(time.perf_counter() - t, 2),
        }
        print(f"built {name}: {figures[f'{name}_index']}", flush=True)

    timing, stream = held[: args.repeats], held[args.repeats : args.repeats + args.stream]
    for name in ("small", "large"):
        core = built[name]
        docs = timing
        times, queries = timed_inserts(core.insert, lambda c=core: c.retrieve(QUERY), docs)
        figures[f"core_{name}_ms"] = round(1000 * statistics.median(times), 1)
        figures[f"core_{name}_query_ms"] = round(1000 * statistics.median(queries), 1)
    figures["core_ratio"] = round(figures["core_large_ms"] / figures["core_small_ms"], 2)
    print(
        f"core insert+query: small {figures['core_small_ms']} ms, large "
        f"{figures['core_large_ms']} ms, ratio {figures['core_ratio']}x (target <= 3x); of which "
        f"the query alone: {figures['core_small_query_ms']} / {figures['core_large_query_ms']} ms",
        flush=True,
    )

    if not args.no_llamaindex:
        from llama_index.core import Document as LIDocument

        tmp = Path(tempfile.mkdtemp(prefix="hcg_bench_"))
        for name in ("small", "large"):
            # A fresh graph of the same documents (the core one above already grew).
            index, retriever = llama_index_of(
                build(small_docs if name == "small" else large_docs, embedder),
                embedder,
                tmp / name,
            )
            times, queries = timed_inserts(
                lambda d, ix=index: ix.insert(LIDocument(text=d.text, id_=d.id)),
                lambda r=retriever: r.retrieve(QUERY),
                timing,
            )
            figures[f"llamaindex_{name}_ms"] = round(1000 * statistics.median(times), 1)
            figures[f"llamaindex_{name}_query_ms"] = round(1000 * statistics.median(queries), 1)
        figures["llamaindex_ratio"] = round(
            figures["llamaindex_large_ms"] / figures["llamaindex_small_ms"], 2
        )
        print(
            f"LlamaIndex HCGIndex insert+query: small {figures['llamaindex_small_ms']} ms, "
            f"large {figures['llamaindex_large_ms']} ms, ratio {figures['llamaindex_ratio']}x",
            flush=True,
        )

    if args.stream:
        core = built["large"]
        times = []
        for d in stream:
            t = time.perf_counter()
            core.insert(d)
            times.append(time.perf_counter() - t)
        first, last = statistics.median(times[:10]), statistics.median(times[-10:])
        figures["stream"] = {
            "inserts": len(times),
            "first10_median_ms": round(1000 * first, 2),
            "last10_median_ms": round(1000 * last, 2),
            "total_s": round(sum(times), 2),
        }
        core.retrieve(QUERY)
        print(f"stream of {len(times)} inserts into the large index: {figures['stream']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
