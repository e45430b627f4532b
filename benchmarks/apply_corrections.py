"""``hcg apply`` cost with many corrections: the time to apply N corrections to one graph.

Builds an offline graph (hashing embedder) from the corpus given, then applies ``--n`` edit_edge
corrections cycling over its edges (each sets a new mechanism, so each is applied, none refused)
and prints seconds, corrections per second and how many whole-graph validations ran. Before
issue 28 every correction re-validated the whole graph (100,000 took 89 s); now one validation
runs for the whole file, unless it fails.

    python benchmarks/apply_corrections.py CORPUS... [--n 100000] [--words 20000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcg_core.audit import corrections as corrections_module  # noqa: E402
from hcg_core.corpus import chunk_documents, load_inputs  # noqa: E402
from hcg_core.embedders import HashingEmbedder  # noqa: E402
from hcg_core.graph_build import build_graph  # noqa: E402
from hcg_core.types import SourceDocument  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="+")
    ap.add_argument("--n", type=int, default=100_000, help="corrections (default %(default)s)")
    ap.add_argument("--words", type=int, default=20_000, help="corpus words used")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    docs, _ = load_inputs(args.corpus)
    words, kept = 0, []
    for d in docs:
        kept.append(d)
        words += len(d.text.split())
        if words >= args.words:
            break
    chunks = chunk_documents([SourceDocument(d.id, d.text, d.metadata) for d in kept])
    graph = build_graph(chunks, embedder=HashingEmbedder(), progress=False).graph
    edges = graph.edges
    if not edges:
        raise SystemExit("the graph has no edges; give a larger corpus")
    entries = [
        {"op": "edit_edge", "edge": edges[i % len(edges)].id, "mechanism": f"edited {i}"}
        for i in range(args.n)
    ]
    calls = {"n": 0}
    real = corrections_module.validate_graph

    def counting(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    corrections_module.validate_graph = counting
    t0 = time.perf_counter()
    _, report = corrections_module.apply_corrections(graph, entries)
    seconds = time.perf_counter() - t0
    corrections_module.validate_graph = real
    row = {
        "corrections": args.n,
        "applied": len(report.applied),
        "refused": len(report.refused),
        "variables": len(graph.variables),
        "edges": len(edges),
        "seconds": round(seconds, 3),
        "per_second": round(args.n / seconds),
        "validations": calls["n"],
    }
    print(json.dumps(row))
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
