"""LLM-path build cost against corpus size: evidence-linking time and peak memory per size.

The real LLM pipeline (``build_with_llm``) runs with an in-process scripted model
(``hcg_core.testing.ScriptedLLM`` answered by tests/fixtures/llm/responder.py, no network) and the
hashing embedder, on the fixture corpus repeated ``unit x size`` times. Each copy is lightly
perturbed (its own chunk ids and a numbered closing sentence), so no two chunks are identical.
Every size runs in its own subprocess, so peak RSS (``getrusage``) is that size's alone.

Per size it records the build's wall time, the report's ``evidence`` stage seconds, the time of
the ``link_evidence`` call itself (timed by wrapping the pipeline's function; the fastest of
``--repeat`` calls on the same arguments, since the machine is shared and noise only adds time),
the peak memory that call allocates (tracemalloc, numpy included), edges, chunks and peak RSS.
Then it prints the log-log slopes against chunks and the largest/smallest ratios; linear
linking has a time slope near 1, flat memory a slope near 0.

The scripted domain has a fixed set of edges (domain.json), so the edge count stays constant as
the corpus grows: this measures the chunk side of linking (quote search, endpoint search).

    python benchmarks/llm_scaling.py [--sizes 1,3,10] [--unit 1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from hcg_core.graph_build.evidence import LinkStats  # noqa: E402 (after the path setup)

DEFAULT_SIZES = "1,3,10"
DEFAULT_REPEAT = 7


def perturbed_chunks(copies: int):
    """The fixture corpus ``copies`` times; copy k's chunks end with a sentence naming k."""
    from fixtures.llm.responder import load_chunks

    return [
        replace(c, text=f"{c.text} This is field report {k} of the survey.")
        for k, c in ((int(c.doc_id.rsplit("-", 1)[1]), c) for c in load_chunks(copies=copies))
    ]


def measure(call, repeat: int) -> tuple[float, float]:
    """(CPU seconds of ``call``, the fastest of ``repeat`` runs; its peak allocation in MiB).

    CPU time, not wall time: the machine is shared, and other jobs' load would swamp
    millisecond wall timings; numpy's BLAS threads are counted in it too.
    """
    best = math.inf
    for _ in range(max(repeat, 1)):
        t = time.process_time()
        call()
        best = min(best, time.process_time() - t)
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak


def replicated(edges, kwargs: dict, copies: int) -> tuple[list, dict]:
    """The built edges once per copy (ids ``<id>#k``, same quotes): linking input whose edge
    count grows with the corpus, as a real corpus's would."""
    out = [replace(e, id=f"{e.id}#{k}") for k in range(copies) for e in edges]
    kw = dict(kwargs)
    kw["stats"] = LinkStats()
    return out, kw


def worker(copies: int, repeat: int) -> dict:
    """One build at ``copies`` copies; returns the measurements (run in its own process)."""
    from fixtures.llm.responder import OUTCOME, respond

    from hcg_core.embedders import HashingEmbedder
    from hcg_core.graph_build import llm_pipeline
    from hcg_core.graph_build.evidence import QuoteIndex
    from hcg_core.testing import ScriptedLLM

    real = llm_pipeline.link_evidence
    timing: dict[str, float] = {}
    calls: list = []

    def timed(*args, **kwargs):
        calls.append((args, kwargs))
        spare = {**kwargs, "stats": LinkStats()}  # the timed calls leave the build's counts alone
        timing["link_s"], timing["link_peak_mb"] = measure(lambda: real(*args, **spare), repeat)
        return real(*args, **kwargs)

    llm_pipeline.link_evidence = timed
    chunks = perturbed_chunks(copies)
    t = time.perf_counter()
    result = llm_pipeline.build_with_llm(
        chunks,
        embedder=HashingEmbedder(),
        llm=ScriptedLLM(respond),
        tier="XS",
        outcome=OUTCOME,
        progress=False,
    )
    build_s = time.perf_counter() - t
    # ru_maxrss is in KiB on Linux; read before the replicated linking below adds its own peak
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = result.report
    (edges, *rest), kwargs = calls[0]
    scaled = replicated(edges, kwargs, copies)
    scaled_s, scaled_mb = measure(lambda: real(scaled[0], *rest, **scaled[1]), repeat)
    per_edge = scaled[1]["per_edge"]

    def quote_search() -> None:
        index = QuoteIndex(chunks)
        for e in scaled[0]:
            index.find(e.quote, scaled[1]["prefix_chars"], limit=max(per_edge, 1))

    quote_s, _ = measure(quote_search, repeat)
    return {
        "copies": copies,
        "chunks": len(chunks),
        "edges": len(result.graph.edges),
        "links": report["stages"]["evidence"]["links"],
        "calls": report["totals"]["calls"],
        "build_s": build_s,
        "evidence_stage_s": report["stages"]["evidence"]["seconds"],
        "link_s": timing["link_s"],
        "link_peak_mb": timing["link_peak_mb"],
        "scaled_edges": len(scaled[0]),
        "scaled_link_s": scaled_s,
        "scaled_peak_mb": scaled_mb,
        "scaled_quote_s": quote_s,
        "peak_rss_mb": peak_rss_mb,
    }


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x (the growth exponent)."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / den if den else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="multiples of the unit, comma-separated")
    ap.add_argument("--unit", type=int, default=1, help="fixture copies that make 1x")
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="link_evidence timings")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.repeat)))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows = []
    for size in sizes:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            str(size * args.unit),
            "--repeat",
            str(args.repeat),
        ]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append({"size": size, **json.loads(out.strip().splitlines()[-1])})
    print(
        "| size | chunks | edges | LLM calls | build s | evidence stage s | link_evidence CPU ms "
        "| link peak MiB | peak RSS MB | edges x copies | their linking CPU ms | their peak MiB "
        f"| their quote search CPU ms |\n|{'---|' * 13}"
    )
    for r in rows:
        print(
            f"| {r['size']}x | {r['chunks']} | {r['edges']} | {r['calls']} | {r['build_s']:.3f} "
            f"| {r['evidence_stage_s']:.3f} | {r['link_s'] * 1e3:.2f} | {r['link_peak_mb']:.2f} "
            f"| {r['peak_rss_mb']:.1f} | {r['scaled_edges']} | {r['scaled_link_s'] * 1e3:.1f} "
            f"| {r['scaled_peak_mb']:.1f} | {r['scaled_quote_s'] * 1e3:.2f} |"
        )
    if len(rows) < 2:
        return
    chunks = [r["chunks"] for r in rows]
    lo, hi = rows[0], rows[-1]
    figures = {
        "link_evidence time": "link_s",
        "link peak memory": "link_peak_mb",
        "peak RSS": "peak_rss_mb",
        "build time": "build_s",
        "replicated-edge linking time": "scaled_link_s",
        "its quote search": "scaled_quote_s",
        "its peak memory": "scaled_peak_mb",
    }
    print(
        "\nlog-log slope vs chunks: "
        + ", ".join(
            f"{name} {slope(chunks, [r[key] for r in rows]):.2f}" for name, key in figures.items()
        )
    )
    print(
        f"{hi['size']}x / {lo['size']}x: chunks {hi['chunks'] / lo['chunks']:.1f}, "
        + ", ".join(f"{name} {hi[key] / max(lo[key], 1e-9):.2f}" for name, key in figures.items())
    )


if __name__ == "__main__":
    main()
