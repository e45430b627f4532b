"""Stage 1's metric merge replayed over a live build's recorded replies: signatures and variables.

Reads a queue's ``log.jsonl`` (each line a request and its answer) and the build's graph folder
(``versions/N/spec.yaml`` for the merged dimensions, ``embeddings/chunks.npy`` for the corpus
support). Runs today's merge on the recorded Stage 1 replies: the embedding merge
(``merge_metric_drafts``), the metrics review and the check call as recorded
(``apply_metric_review``), the cap (``merge_metrics``), then binds the recorded variables replies
(``merge_variables``; each reply filled one slot per dimension, so a variable binds under a new
signature only where its reader filled that slot: a lower bound). Prints each kept metric with
its signature and its variables, and the totals. Example::

    python benchmarks/llm_review_replay.py /tmp/live/q9/log.jsonl /tmp/live/g9
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def answers(log: Path) -> dict[str, list[dict]]:
    """schema name -> the parsed answers, in log order."""
    out: dict[str, list[dict]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        fmt = (rec["request"].get("response_format") or {}).get("json_schema") or {}
        a = rec["answer"]["content"]
        out.setdefault(fmt.get("name", ""), []).append(json.loads(a) if isinstance(a, str) else a)
    return out


def as_review(reply: dict) -> SimpleNamespace:
    groups = [SimpleNamespace(**g) for g in reply.get("same_quantity", [])]
    return SimpleNamespace(same_quantity=groups, causes=reply.get("causes", []))


def main(argv: list[str] | None = None) -> None:
    from hcg_core.config import tier_caps
    from hcg_core.embedders.factory import default_embedder
    from hcg_core.spec.assemble import (
        AssemblyReport,
        merge_metrics,
        merge_variables,
        unbind_unused,
    )
    from hcg_core.spec.generate import merge_metric_drafts
    from hcg_core.spec.review import apply_metric_review
    from hcg_core.types import Dimension

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="the queue's log.jsonl")
    ap.add_argument("graph", help="the build's graph folder")
    ap.add_argument("--tier", default="XS")
    args = ap.parse_args(argv)
    cap = tier_caps(args.tier).max_metrics
    version = sorted(Path(args.graph, "versions").iterdir(), key=lambda p: int(p.name))[-1]
    spec = yaml.safe_load((version / "spec.yaml").read_text(encoding="utf-8"))
    dims = [Dimension(n, tuple(d.get("entities", []))) for n, d in spec["dimensions"].items()]
    got = answers(Path(args.log))
    report = AssemblyReport()
    drafts = [r.get("metrics", []) for r in got.get("MetricsReply", [])]
    chunks = np.load(version / "embeddings" / "chunks.npy", allow_pickle=False)
    drafts, support = merge_metric_drafts(drafts, default_embedder(), chunks, report)
    causes: set[str] = set()
    for r in got.get("ReviewMetricsReply", []):
        drafts, causes = apply_metric_review(drafts, as_review(r), report)
    metrics, _ = merge_metrics(drafts, dims, cap, None, report, support=support, causes=causes)
    for r in got.get("CheckMetricsReply", []):
        drafts, _ = apply_metric_review(drafts, as_review(r), report)
        metrics, _ = merge_metrics(
            drafts, dims, cap, None, AssemblyReport(), support=support, causes=causes
        )
    sigs = {m.name: m.signature for m in metrics}
    items = []
    for r in got.get("VariablesReply", []):
        draft = []
        for v in r.get("variables", []):
            slots = v.get("entities") or {}
            if isinstance(slots, dict):
                ents = [s for s in (slots.get(d, "") for d in sigs.get(v["metric"], ())) if s]
            else:
                ents = list(slots)
            draft.append({"metric": v["metric"], "entities": ents})
        items.append(draft)
    variables = merge_variables(items, metrics, dims, AssemblyReport())
    unbound, _ = unbind_unused(metrics, variables)
    idle = sorted(m.name for m, u in zip(metrics, unbound, strict=True) if m != u)
    per = Counter(v.metric for v in variables)
    for m in metrics:
        cause = " cause" if m.name in causes else ""
        print(f"  {m.name}({', '.join(m.signature)}) [{m.role}{cause}]: {per[m.name]}")
    print(f"{len(metrics)} metrics, {sum(1 for m in metrics if m.signature)} with a signature, ")
    print(f"{len(variables)} variables bound from the recorded variables replies")
    print(f"signature dropped, no variable bound (unbind_unused): {', '.join(idle) or '-'}")


if __name__ == "__main__":
    main()
