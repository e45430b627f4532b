"""Build the offline graph of a corpus and print its health figures (size, density, reach, time).

python benchmarks/graph_health.py --input CORPUS     # e.g. GraphRAG-Bench medical corpus.json
python benchmarks/graph_health.py --input CORPUS --embedder minilm    # the default MiniLM
python benchmarks/graph_health.py --input my_docs/ --tier S --no-lift
python benchmarks/graph_health.py --input CORPUS --embedder minilm --min-variable-support 3
"""

from __future__ import annotations

import argparse
import json
import time

from hcg_core.corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS, chunk_documents, load_inputs
from hcg_core.graph_build.health import graph_health
from hcg_core.graph_build.offline import build_offline


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", nargs="+", required=True, help="corpus files or folders")
    ap.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    ap.add_argument("--tier", default="M")
    ap.add_argument("--chunk-words", type=int, default=DEFAULT_CHUNK_WORDS)
    ap.add_argument("--chunk-overlap", type=int, default=DEFAULT_OVERLAP_WORDS)
    ap.add_argument("--no-lift", action="store_true", help="do not add lifted (generic) edges")
    ap.add_argument(
        "--min-variable-support",
        type=int,
        default=None,
        help="statements a (metric, entity) needs to be its own variable",
    )
    ap.add_argument(
        "--keep-weak",
        action="store_true",
        help="keep variables stated by one sentence with a weak cue",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.embedder == "minilm":
        from hcg_core.embedders import default_embedder

        embedder = default_embedder()
    else:
        from hcg_core.embedders import HashingEmbedder

        embedder = HashingEmbedder()
    docs, bad = load_inputs(args.input)
    chunks = chunk_documents(docs, chunk_words=args.chunk_words, overlap_words=args.chunk_overlap)
    t = time.perf_counter()
    options = {"lift": not args.no_lift, "drop_weak": not args.keep_weak}
    if args.min_variable_support is not None:
        options["min_variable_support"] = args.min_variable_support
    result = build_offline(chunks, embedder=embedder, tier=args.tier, embed_chunks=False, **options)
    seconds = time.perf_counter() - t
    health = graph_health(result.graph)
    health["build_seconds_excl_chunk_embedding"] = round(seconds, 2)
    health["stages"] = result.report["stages"]
    health["bad_inputs"] = [f"{p}: {r}" for p, r in bad]
    if args.json:
        print(json.dumps(health, indent=1))
    else:
        for k, v in health.items():
            if k != "stages":
                print(f"{k:36} {v}")
        for name, st in health["stages"].items():
            print(f"stage {name:30} {st}")
    return health


if __name__ == "__main__":
    main()
