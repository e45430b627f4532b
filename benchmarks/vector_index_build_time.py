"""Time LlamaIndex's ``VectorStoreIndex.from_documents`` on a corpus with hcg's embedder; peak RSS.

The reference point for ``hcg build``'s cost: the same documents, the same embedder, chunks of
about the same size (LlamaIndex's SentenceSplitter counts tokens: 256 tokens ~ 200 words).

    python benchmarks/vector_index_build_time.py CORPUS [--embedder minilm|hashing] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "corpus", nargs="+", help="files or folders, read by hcg_core.corpus.load_inputs"
    )
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--chunk-tokens", type=int, default=256)
    ap.add_argument("--overlap-tokens", type=int, default=52)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-chars", type=int, default=None, help="cut each document (smoke tests)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from hcg_core.corpus import load_inputs
    from hcg_core.embedders import HashingEmbedder, default_embedder
    from llama_index_hcg import HCGDefaultEmbedding

    docs, _bad = load_inputs(args.corpus)
    li_docs = [Document(text=d.text[: args.max_chars], id_=d.id) for d in docs]
    core = default_embedder() if args.embedder == "minilm" else HashingEmbedder()
    embed = HCGDefaultEmbedding(embedder=core, embed_batch_size=args.batch_size)
    splitter = SentenceSplitter(chunk_size=args.chunk_tokens, chunk_overlap=args.overlap_tokens)

    t0 = time.perf_counter()
    index = VectorStoreIndex.from_documents(
        li_docs, embed_model=embed, transformations=[splitter], show_progress=False
    )
    seconds = time.perf_counter() - t0
    figures = {
        "system": "llama_index VectorStoreIndex.from_documents",
        "embedder": core.name,
        "documents": len(li_docs),
        "nodes": len(index.docstore.docs),
        "chunk_tokens": args.chunk_tokens,
        "overlap_tokens": args.overlap_tokens,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
