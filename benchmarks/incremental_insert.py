"""Incremental insert cost: one ~150-word document into a small vs a large index, and a stream.

Builds two offline graphs from the corpus given (the first ``--small-words`` and ``--large-words``
words of it), then times ``insert`` of held-out ~150-word documents followed by one query, on the
core retriever and on a LlamaIndex ``HCGIndex`` wrapping the same graph. The target (issue 15):
insert + query into the large index costs at most 3x the same into the small one (7.3x before
incremental inserts). Then ``--stream`` sequential inserts into the large index: the last ten
must cost no more than the first ten (an insert's cost must not grow with the inserts before it).

Timing (a few milliseconds on a shared machine, so noise matters): each index first gets one
untimed insert + query (the one-time setup of its edit buffers); then the same ``--repeats``
documents go into both indexes, alternating which index goes first, so that load from other
jobs hits both alike; the medians are reported. Wall-clock time is the figure; CPU time of the
process (``time.process_time``) is reported beside it, since waiting for a busy core does not
count there. The small index grows by the inserted documents (15 x 150 words by default); its
own first and last five timings are printed, so its growth can be seen not to matter.

    python benchmarks/incremental_insert.py CORPUS... [--embedder hashing|hashing-v1-384|default]
        [--small-words 1000] [--large-words 200000] [--repeats 15] [--stream 100] [--json FILE]

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
from hcg_core.types import SourceDocument  # noqa: E402

QUERY = "What increases the risk?"


def word_docs(docs: list[SourceDocument], words: int, size: int) -> list[SourceDocument]:
    """Documents of about ``size`` words cut from the corpus's word stream, ``words`` in all."""
    out: list[SourceDocument] = []
    buf: list[str] = []
    total = 0
    for d in docs:
        for w in d.text.split():
            buf.append(w)
            if len(buf) == size:
                out.append(SourceDocument(f"doc{len(out):06d}", " ".join(buf)))
                total += size
                buf = []
                if total >= words:
                    return out
    if buf:
        out.append(SourceDocument(f"doc{len(out):06d}", " ".join(buf)))
    return out


def build(docs: list[SourceDocument], embedder) -> CausalGraphRetriever:
    result = build_graph(chunk_documents(docs), embedder=embedder, progress=False)
    core = CausalGraphRetriever.from_build(result, embedder)
    core.retrieve(QUERY)  # the hybrid ranker is built before timing, as in a serving process
    return core


def timed_inserts(
    cases: dict, warmup: SourceDocument, docs: list[SourceDocument]
) -> dict[str, dict]:
    """Per case (name -> (insert, query)): seconds of each insert + query (wall and CPU) and of
    each query alone, the cases interleaved document by document (see the module docstring)."""
    out = {name: {"total": [], "cpu": [], "query": []} for name in cases}
    for insert, query in cases.values():
        insert(warmup)
        query()
    for i, d in enumerate(docs):
        order = list(cases) if i % 2 == 0 else list(cases)[::-1]
        for name in order:
            insert, query = cases[name]
            cpu, t = time.process_time(), time.perf_counter()
            insert(d)
            q = time.perf_counter()
            query()
            done, cpu_done = time.perf_counter(), time.process_time()
            out[name]["total"].append(done - t)
            out[name]["cpu"].append(cpu_done - cpu)
            out[name]["query"].append(done - q)
    return out


def record(figures: dict, prefix: str, timings: dict[str, dict]) -> None:
    """Medians (ms) and the large/small ratios, wall and CPU, into ``figures``."""

    def ms(values: list[float]) -> float:
        return round(1000 * statistics.median(values), 2)

    for name, t in timings.items():
        figures[f"{prefix}_{name}_ms"] = ms(t["total"])
        figures[f"{prefix}_{name}_cpu_ms"] = ms(t["cpu"])
        figures[f"{prefix}_{name}_query_ms"] = ms(t["query"])
    small = timings["small"]["total"]
    figures[f"{prefix}_small_first5_last5_ms"] = [ms(small[:5]), ms(small[-5:])]
    figures[f"{prefix}_ratio"] = round(
        figures[f"{prefix}_large_ms"] / figures[f"{prefix}_small_ms"], 2
    )
    figures[f"{prefix}_cpu_ratio"] = round(
        figures[f"{prefix}_large_cpu_ms"] / figures[f"{prefix}_small_cpu_ms"], 2
    )


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
    ap.add_argument("--repeats", type=int, default=15, help="inserts timed per index (median)")
    ap.add_argument("--stream", type=int, default=100, help="sequential inserts (0: skip)")
    ap.add_argument("--no-llamaindex", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    embedder = embedder_by_name(args.embedder)
    source, bad = load_inputs(args.corpus)
    for path, why in bad:
        print(f"skipped {path}: {why}", file=sys.stderr)
    pieces = word_docs(
        source, args.large_words + args.doc_words * (args.stream + 2 * args.repeats + 2), 500
    )
    words_in = 0
    large_docs: list[SourceDocument] = []
    for d in pieces:
        if words_in >= args.large_words:
            break
        large_docs.append(d)
        words_in += len(d.text.split())
    rest = pieces[len(large_docs) :]
    held = word_docs(rest, args.doc_words * (args.stream + args.repeats + 1), args.doc_words)
    held = [SourceDocument(f"new{i:05d}", d.text) for i, d in enumerate(held)]
    small_docs = word_docs(large_docs, args.small_words, 500)
    if len(held) < args.stream + args.repeats + 1:
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

    warmup, timing = held[0], held[1 : args.repeats + 1]
    stream = held[args.repeats + 1 : args.repeats + 1 + args.stream]
    cases = {name: (c.insert, lambda c=c: c.retrieve(QUERY)) for name, c in built.items()}
    record(figures, "core", timed_inserts(cases, warmup, timing))
    print(
        f"core insert+query (median of {len(timing)}): small {figures['core_small_ms']} ms, "
        f"large {figures['core_large_ms']} ms, ratio {figures['core_ratio']}x (target <= 3x); "
        f"CPU time {figures['core_small_cpu_ms']} / {figures['core_large_cpu_ms']} ms, ratio "
        f"{figures['core_cpu_ratio']}x; the query alone {figures['core_small_query_ms']} / "
        f"{figures['core_large_query_ms']} ms; small index, first / last five: "
        f"{figures['core_small_first5_last5_ms']} ms",
        flush=True,
    )

    if not args.no_llamaindex:
        from llama_index.core import Document as LIDocument

        tmp = Path(tempfile.mkdtemp(prefix="hcg_bench_"))
        cases = {}
        for name in ("small", "large"):
            # A fresh graph of the same documents (the core one above already grew).
            index, retriever = llama_index_of(
                build(small_docs if name == "small" else large_docs, embedder),
                embedder,
                tmp / name,
            )
            cases[name] = (
                lambda d, ix=index: ix.insert(LIDocument(text=d.text, id_=d.id)),
                lambda r=retriever: r.retrieve(QUERY),
            )
        record(figures, "llamaindex", timed_inserts(cases, warmup, timing))
        print(
            f"LlamaIndex HCGIndex insert+query: small {figures['llamaindex_small_ms']} ms, "
            f"large {figures['llamaindex_large_ms']} ms, ratio {figures['llamaindex_ratio']}x; "
            f"CPU time ratio {figures['llamaindex_cpu_ratio']}x",
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
