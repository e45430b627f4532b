"""Offline build time against statement count on a synthetic, hub-heavy corpus.

Every sentence states one causal link between two entity variables of a few hub metrics
("Velor tissue damage leads to kamin organ failure in adults."), so the lifted generic edges
(Damage -> Failure) collect support from nearly every sentence: the case where per-edge work that
is quadratic in an edge's sentences (sentence de-duplication) or per-node scans of every candidate
(alias maps) shows. Chunk embedding is skipped (``embed_chunks=False``) and the hashing embedder
is used, so the time is the builder's own.

Usage: python benchmarks/offline_build_scaling.py [N ...]   (default: 1000 2000 4000 8000)

Prints, per size, the statements found, the build time, the "graph" stage time (where the
per-edge work happens) and the ratio of each to the previous size; with linear cost the time
ratio follows the size ratio. Then the growth exponents: the least-squares slope of log(time) on
log(statements) over all sizes, and over the last step alone (1.0 is linear, 2.0 quadratic).
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 2000, 4000, 8000])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the fastest is kept")
    args = ap.parse_args(argv)
    embedder = HashingEmbedder()
    print(
        f"{'sentences':>9} {'statements':>10} {'edges':>6} {'build s':>8} {'graph s':>8} "
        f"{'size x':>7} {'build x':>8} {'graph x':>8}"
    )
    prev = None
    rows: list[tuple[int, float, float]] = []  # (statements, build s, graph s)
    for n in args.sizes:
        chunks = synthetic_chunks(n)
        # The fastest of a few runs: the machine is shared, and noise only ever adds time.
        total, graph_s = float("inf"), float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = build_offline(chunks, embedder=embedder, embed_chunks=False, progress=False)
            total = min(total, time.perf_counter() - t)
            stages = result.report["stages"]
            graph_s = min(graph_s, stages["graph"]["seconds"])
        statements = stages["statements"]["statements"]
        ratios = ("", "", "")
        if prev is not None:
            ratios = (
                f"{statements / prev[0]:.2f}",
                f"{total / prev[1]:.2f}",
                f"{graph_s / prev[2]:.2f}" if prev[2] > 0 else "",
            )
        print(
            f"{n:>9} {statements:>10} {len(result.graph.edges):>6} {total:>8.2f} "
            f"{graph_s:>8.3f} {ratios[0]:>7} {ratios[1]:>8} {ratios[2]:>8}"
        )
        prev = (statements, total, graph_s)
        rows.append(prev)
    if len(rows) >= 2:
        sizes = [r[0] for r in rows]
        fits = [
            f"{name} {slope(sizes, [r[col] for r in rows]):.2f} "
            f"(last step {slope(sizes[-2:], [r[col] for r in rows[-2:]]):.2f})"
            for name, col in (("build", 1), ("graph stage", 2))
        ]
        print("growth exponent, log-log slope over all sizes: " + "; ".join(fits))


if __name__ == "__main__":
    main()
