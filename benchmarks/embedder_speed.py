"""Texts per second of the built-in embedders on 200-word passages of the GraphRAG-Bench medical corpus.

Run from the repository root:
    PYTHONPATH=. python benchmarks/embedder_speed.py [--passages 200] [--threads N]
        [--batch-tokens 256,1000000]

Prints wall-clock texts/s (best of --repeats) and CPU milliseconds per text; the second is the
fairer figure when other processes share the cores (check the load average it prints).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from hcg_core.embedders import HashingEmbedder, MiniLMEmbedder


def passages(corpus: Path, n: int, words: int = 200) -> list[str]:
    """The first ``n`` consecutive ``words``-word passages of the corpus (deterministic)."""
    tokens = " ".join(doc["context"] for doc in json.loads(corpus.read_text())).split()
    return [" ".join(tokens[i : i + words]) for i in range(0, n * words, words)]


def rate(embed, texts: list[str], repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` texts/s and CPU ms/text (the best run is the least disturbed)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        embed(texts)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return len(texts) / wall, 1000 * cpu / len(texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, required=True, help="a corpus .json (a list of texts)")
    ap.add_argument("--passages", type=int, default=200)
    ap.add_argument("--batch-tokens", default="256,1000000", help="max_batch_tokens values")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--model", type=Path, default=None, help="model.onnx (default: installed)")
    ap.add_argument("--tokenizer", type=Path, default=None, help="tokenizer.json")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    texts = passages(args.corpus, args.passages)
    cores = len(os.sched_getaffinity(0))
    print(
        f"{len(texts)} passages of 200 words; {cores} usable cores; load {os.getloadavg()[0]:.1f}"
    )

    for label, emb in (("cold cache", HashingEmbedder()), ("warm cache", HashingEmbedder())):
        if label == "warm cache":
            emb.embed_documents(texts)
        r, cpu = rate(emb.embed_documents, texts, 1 if label == "cold cache" else args.repeats)
        print(f"{emb.name} ({label}): {r:,.0f} texts/s, {cpu:.2f} CPU ms/text")

    for budget in (int(b) for b in args.batch_tokens.split(",")):
        emb = MiniLMEmbedder(
            model_path=args.model,
            tokenizer_path=args.tokenizer,
            batch_size=args.batch_size,
            threads=args.threads,
            max_batch_tokens=budget,
        )
        t0 = time.perf_counter()
        emb.embed_query("warm up")
        load = time.perf_counter() - t0
        r, cpu = rate(emb.embed_documents, texts, args.repeats)
        print(
            f"{emb.name} batch_size={args.batch_size} max_batch_tokens={budget}: {r:.1f} texts/s, "
            f"{cpu:.0f} CPU ms/text (load + first query {load:.2f} s)"
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
