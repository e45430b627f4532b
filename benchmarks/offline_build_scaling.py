"""Offline build time against statement count on a synthetic, hub-heavy corpus.

Every sentence states one causal link between two entity variables of a few hub metrics
("Velor tissue damage leads to kamin organ failure in adults."), so the lifted generic edges
(Damage -> Failure) collect support from nearly every sentence: the case where per-edge work that
is quadratic in an edge's sentences (sentence de-duplication) or per-node scans of every candidate
(alias maps) shows. Sentences end in a running number ("... in adults number 12."), so many of
them differ only in their first and last words: the case where a fragment index keyed by the inner
words alone compares every pair. Chunk embedding is skipped (``embed_chunks=False``) and the hashing embedder
is used, so the time is the builder's own.

Usage: python benchmarks/offline_build_scaling.py [N ...]   (default: 1000 2000 4000 8000)

Prints, per size, the statements found, the build time, the "graph" stage time (where the
per-edge work happens) and the ratio of each to the previous size; with linear cost the time
ratio follows the size ratio. Then the growth exponents: the least-squares slope of log(time) on
log(statements) over all sizes, and over the last step alone (1.0 is linear, 2.0 quadratic).

"graph cpu" is the graph stage's CPU time (the build report's ``cpu_seconds``), steadier than the
wall time on a shared machine. "gc s" is the time the build spent in Python's garbage collector (in the fastest run). A full
collection walks every live object, so its cost grows with the corpus held in memory, and how
many full collections land inside one stage depends on the size (none in the graph stage at a
few thousand statements, two or three from about 30,000 on): a step up in a stage's time between
small sizes that is the collector, not the stage's own work. ``--no-gc`` pauses the collector
during the builds to show the builder's own growth.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import time

from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build.offline import build_offline
from hcg_core.types import Chunk

SYLLABLES = ("ka", "ve", "lor", "min", "tu", "sar", "po", "dri", "nel", "qua", "zen", "bo")
CAUSE_HEADS = ("damage", "inflammation")
EFFECT_HEADS = ("failure", "disease")
CUES = ("leads to", "causes", "results in", "triggers")
SETTINGS = ("in adults", "in children", "over years", "in most patients", "after exposure")


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def synthetic_chunks(n_sentences: int, *, seed: int = 0, entities: int = 60) -> list[Chunk]:
    """``n_sentences`` distinct causal sentences between a few hub metrics, 8 per chunk."""
    rng = random.Random(seed)
    pool = [_word(rng) for _ in range(entities)]
    sentences: list[str] = []
    seen: set[str] = set()
    while len(sentences) < n_sentences:
        s = (
            f"{rng.choice(pool).capitalize()} {rng.choice(CAUSE_HEADS)} {rng.choice(CUES)} "
            f"{rng.choice(pool)} {rng.choice(EFFECT_HEADS)} {rng.choice(SETTINGS)} "
            f"number {len(sentences)}."
        )
        if s not in seen:
            seen.add(s)
            sentences.append(s)
    per = 8
    return [
        Chunk(f"c{i // per}", " ".join(sentences[i : i + per]), "synthetic")
        for i in range(0, len(sentences), per)
    ]


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x): the growth exponent.

    >>> round(slope([1000, 2000, 4000], [1.0, 2.0, 4.0]), 2), round(slope([1, 2], [1, 4]), 2)
    (1.0, 2.0)
    """
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / den if den else 0.0


class CollectorClock:
    """Seconds spent in the garbage collector while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


def _number(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


def _ratio(a: float, b: float) -> str:
    return "-" if math.isnan(a) or math.isnan(b) or b <= 0 else f"{a / b:.2f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 2000, 4000, 8000])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the fastest is kept")
    ap.add_argument("--no-gc", action="store_true", help="pause the garbage collector")
    args = ap.parse_args(argv)
    embedder = HashingEmbedder()
    clock = CollectorClock()
    gc.callbacks.append(clock)
    if args.no_gc:
        gc.disable()
    print(
        f"{'sentences':>9} {'statements':>10} {'edges':>6} {'build s':>8} {'graph s':>8} "
        f"{'graph cpu':>9} {'gc s':>6} {'size x':>7} {'build x':>8} {'graph x':>8} {'cpu x':>6}"
    )
    rows: list[tuple[int, float, float, float]] = []  # statements, build s, graph s, graph cpu
    for n in args.sizes:
        chunks = synthetic_chunks(n)
        # The fastest of a few runs: the machine is shared, and noise only ever adds time.
        total, graph_s, graph_cpu, gc_s = (float("inf"),) * 3 + (0.0,)
        for _ in range(args.repeat):
            clock.seconds = 0.0
            t = time.perf_counter()
            result = build_offline(chunks, embedder=embedder, embed_chunks=False, progress=False)
            took = time.perf_counter() - t
            if took < total:
                total, gc_s = took, clock.seconds
            stage = result.report["stages"]["graph"]
            graph_s = min(graph_s, stage["seconds"])
            graph_cpu = min(graph_cpu, stage.get("cpu_seconds", math.inf))
        if math.isinf(graph_cpu):  # code from before the report had CPU seconds: shown as "-"
            graph_cpu = math.nan
        statements = result.report["stages"]["statements"]["statements"]
        row = (statements, total, graph_s, graph_cpu)
        ratios = [_ratio(a, b) for a, b in zip(row, rows[-1], strict=True)] if rows else [""] * 4
        print(
            f"{n:>9} {statements:>10} {len(result.graph.edges):>6} {total:>8.2f} "
            f"{graph_s:>8.3f} {_number(graph_cpu):>9} {gc_s:>6.2f} {ratios[0]:>7} {ratios[1]:>8} "
            f"{ratios[2]:>8} {ratios[3]:>6}"
        )
        rows.append(row)
    if len(rows) >= 2:
        sizes = [r[0] for r in rows]
        fits = [
            f"{name} {slope(sizes, [r[col] for r in rows]):.2f} "
            f"(last step {slope(sizes[-2:], [r[col] for r in rows[-2:]]):.2f})"
            for name, col in (("build", 1), ("graph stage", 2), ("graph stage cpu", 3))
            if not math.isnan(rows[0][col])
        ]
        print("growth exponent, log-log slope over all sizes: " + "; ".join(fits))


if __name__ == "__main__":
    main()
