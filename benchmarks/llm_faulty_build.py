"""An LLM build through ``hcg build --llm-base-url`` against the local stub server, with faults.

The stub (hcg_core.testing.StubLLMServer on 127.0.0.1) answers from the recorded fixture domain in
tests/fixtures/llm/ and injects 429 (with Retry-After), 500, 503, malformed JSON and slow replies.
Prints the estimate, the build report's per-stage counts and what the server saw, then rebuilds to
show the cache serving every call.

    python benchmarks/llm_faulty_build.py [--copies 4] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.llm.responder import load_chunks, respond  # noqa: E402

from hcg_core.cli import main as hcg  # noqa: E402
from hcg_core.store import current_dir  # noqa: E402
from hcg_core.testing import FaultPlan, StubLLMServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=4, help="repeat the fixture corpus (size)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    work = Path(args.out or tempfile.mkdtemp(prefix="hcg-llm-"))
    corpus = work / "corpus.jsonl"
    chunks = load_chunks(copies=args.copies)
    corpus.write_text("".join(json.dumps({"text": c.text}) + "\n" for c in chunks))
    outcome = work / "outcome.yaml"
    outcome.write_text(
        "outcomes: [FishMortality, DrinkingWaterRisk]\nterminals: [EcosystemHealth]\n"
    )
    os.environ.setdefault("OPENAI_API_KEY", "stub-key")
    plan = FaultPlan(
        rate_limit_every=5,
        server_error_every=7,
        unavailable_every=11,
        malformed_every=13,
        slow_every=17,
        slow_seconds=1.3,
        retry_after="0.01",
    )
    graph = work / "graph"
    with StubLLMServer(respond, faults=plan) as srv:
        base = [
            "build",
            str(corpus),
            "--out",
            str(graph),
            "--tier",
            "XS",
            "--embedder",
            "hashing",
            "--outcome",
            str(outcome),
            "--quiet",
            "--llm-model",
            "stub-model",
            "--llm-base-url",
            srv.base_url,
            "--timeout",
            "1",
            "--max-concurrency",
            "4",
        ]
        hcg([*base, "--estimate"])
        hcg(base)
        report = json.loads((current_dir(graph) / "build_report.json").read_text())
        print(f"\nserver saw {srv.calls} requests; faults served {dict(srv.by_fault)}")
        print(
            f"report counts {report['totals']['calls']} calls "
            f"({'equal' if report['totals']['calls'] == srv.calls else 'DIFFERENT'})"
        )
        print(
            f"{'stage':<8}{'calls':>7}{'prompt tok':>12}{'compl tok':>11}{'retries':>9}"
            f"{'re-asks':>9}{'failed':>8}{'seconds':>9}"
        )
        for name in ("stage1", "tier1", "tier2"):
            s = report["stages"][name]
            print(
                f"{name:<8}{s['calls']:>7}{s['prompt_tokens']:>12}{s['completion_tokens']:>11}"
                f"{s['retries']:>9}{s['reasks']:>9}{s['failed']:>8}{s['seconds']:>9}"
            )
        before = srv.calls
        hcg(base)
        print(f"rebuild with the same arguments: {srv.calls - before} requests (cache)")


if __name__ == "__main__":
    main()
