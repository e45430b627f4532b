"""LlamaIndex ``HCGIndex`` persistence cost: ``index_store.json`` size, persist and load time.

Builds an offline graph from the corpus given (its first ``--words`` words, cut into ~500-word
documents), wraps it as an ``HCGIndex`` and times ``storage_context.persist`` into a fresh folder,
one insert followed by a persist into the same folder (the daily-update cycle), and
``load_index_from_storage`` and the first query after it. It prints the size of ``index_store.json`` and
of the ``hcg__*.npy`` vector files beside it. Run it with ``PYTHONPATH`` pointing at two checkouts
to compare versions (the script uses only the public API).

    python benchmarks/llamaindex_persist.py CORPUS... [--words 200000]
        [--embedder hashing-v1-384] [--repeats 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
if not os.environ.get("PYTHONPATH"):  # else: the checkout being compared
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcg_core.corpus import chunk_documents, load_inputs  # noqa: E402
from hcg_core.embedders.factory import embedder_by_name  # noqa: E402
from hcg_core.graph_build import build_graph  # noqa: E402
from hcg_core.retrieval import CausalGraphRetriever  # noqa: E402
from hcg_core.types import SourceDocument  # noqa: E402

QUERY = "What increases the risk?"
DOC_WORDS = 500


def first_words(docs: list[SourceDocument], words: int) -> list[SourceDocument]:
    """About ``words`` words of the corpus as ``DOC_WORDS``-word documents."""
    stream = [w for d in docs for w in d.text.split()][:words]
    return [
        SourceDocument(f"doc{i // DOC_WORDS:05d}", " ".join(stream[i : i + DOC_WORDS]))
        for i in range(0, len(stream), DOC_WORDS)
    ]


def median_ms(times: list[float]) -> float:
    return round(1000 * statistics.median(times), 1)


class Timer:
    """Wall-clock and process CPU seconds of each timed step (CPU time is steadier on a shared
    machine; wall time also counts waiting for the disk)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> Timer:
        self._t, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall.append(time.perf_counter() - self._t)
        self.cpu.append(time.process_time() - self._c)

    def record(self, figures: dict, name: str) -> None:
        figures[f"{name}_ms"] = median_ms(self.wall)
        figures[f"{name}_cpu_ms"] = median_ms(self.cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="+", help="files or folders (hcg_core.corpus.load_inputs)")
    ap.add_argument("--words", type=int, default=200_000)
    ap.add_argument("--embedder", default="hashing-v1-384")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from llama_index.core import Document as LIDocument
    from llama_index.core import StorageContext, load_index_from_storage

    import llama_index_hcg
    from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

    embedder = embedder_by_name(args.embedder)
    embed = HCGDefaultEmbedding(embedder=embedder)
    source, _ = load_inputs(args.corpus)
    docs = first_words(source, args.words)
    result = build_graph(chunk_documents(docs), embedder=embedder, progress=False)
    core = CausalGraphRetriever.from_build(result, embedder)
    tmp = Path(tempfile.mkdtemp(prefix="hcg_persist_bench_"))
    core.save(tmp / "graph")
    index = HCGIndex.from_graph_dir(tmp / "graph", embed_model=embed)
    figures: dict = {
        "checkout": str(Path(llama_index_hcg.__file__).resolve().parents[1]),
        "embedder": embedder.name,
        "words": sum(len(d.text.split()) for d in docs),
        "chunks": len(index.graph.chunks),
        "variables": len(index.graph.variables),
        "edges": len(index.graph.edges),
    }

    persist = Timer()
    for i in range(args.repeats):
        with persist:
            index.storage_context.persist(persist_dir=str(tmp / f"p{i}"))
    folder = tmp / "p0"
    persist.record(figures, "persist")
    figures["index_store_json_bytes"] = (folder / "index_store.json").stat().st_size
    figures["npy_bytes"] = sum(p.stat().st_size for p in folder.glob("hcg__*.npy"))
    figures["docstore_json_bytes"] = (folder / "docstore.json").stat().st_size

    load, query = Timer(), Timer()
    for _ in range(args.repeats):
        with load:
            loaded = load_index_from_storage(
                StorageContext.from_defaults(persist_dir=str(folder)), embed_model=embed
            )
        with query:
            loaded.as_retriever(similarity_top_k=10).retrieve(QUERY)
    load.record(figures, "load")
    query.record(figures, "first_query")

    # The update cycle: insert one document into the loaded index, persist into its folder.
    cycle = Timer()
    for i in range(args.repeats):
        doc = LIDocument(text=f"Salt intake number {i} raises blood pressure.", id_=f"new{i}")
        with cycle:
            loaded.insert(doc)
            loaded.storage_context.persist(persist_dir=str(folder))
    cycle.record(figures, "insert_and_persist")
    figures["index_store_json_bytes_after_inserts"] = (folder / "index_store.json").stat().st_size

    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
