"""`hcg build` timed side by side: this checkout against another one (a git worktree of a baseline).

Each round builds the same input once with each checkout's code, alternating which goes first, so
machine noise hits both alike; every build writes a fresh graph directory in a temporary folder
(nothing is cached between builds). Prints every build's wall time, the mean per checkout and the
ratio of the means (this checkout over the baseline; the issues' bound is 1.1x).

    git worktree add /tmp/base 9d99534
    python benchmarks/build_side_by_side.py --baseline /tmp/base --rounds 2 INPUT [INPUT ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_seconds(code: Path, inputs: list[str], out: Path) -> float:
    """Wall seconds of one quiet ``hcg build`` of ``inputs`` with the package at ``code``."""
    env = dict(os.environ, PYTHONPATH=str(code))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "hcg_core.cli", "build", *inputs, "--out", str(out), "--quiet"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="what hcg build reads (files or folders)")
    ap.add_argument("--baseline", type=Path, required=True, help="the other checkout's root")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    checkouts = {"this": REPO, "baseline": args.baseline.resolve()}
    times: dict[str, list[float]] = {name: [] for name in checkouts}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(checkouts) if r % 2 else list(reversed(checkouts))
            for name in order:
                seconds = build_seconds(checkouts[name], args.inputs, Path(tmp) / f"{name}{r}")
                times[name].append(seconds)
                print(f"round {r + 1} {name:<9} {seconds:7.1f} s", flush=True)
    means = {name: statistics.mean(t) for name, t in times.items()}
    for name, mean in means.items():
        print(f"{name:<9} mean {mean:7.1f} s")
    print(f"ratio (this / baseline): {means['this'] / means['baseline']:.2f}x (bound 1.1x)")


if __name__ == "__main__":
    main()
