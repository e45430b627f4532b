"""Stage 1's merge by meaning over a recorded build's Stage 1 replies: the merged lists.

Reads the recorded requests (``calls.jsonl``): the dimensions replies with the excerpts each
batch was shown, and the metrics replies. Runs today's merge (``spec.assemble.merge_dimensions``,
``spec.generate.merge_metric_drafts`` with the embedder, ``spec.assemble.merge_metrics`` with the
tier cap and no outcome configuration) and prints: the dimensions that became one axis, the
entity spellings and aliases that became one entity, the stage / subtype links, the metrics that
became one, and the metrics the cap keeps with their roles. ``--expect-merged A/B/C`` and
``--expect-apart A/B`` (repeatable) check names of either kind and print whether each holds.
Example (the lists of issue 25)::

    python benchmarks/llm_merge.py DATA/llm-builds/medical-xs/calls.jsonl \\
        --chunk-embeddings DATA/llm-builds/medical-xs/graph/embeddings/chunks.npy \\
        --expect-merged CureProbability/CureLikelihood \\
        --expect-merged CancerRisk/CancerDevelopmentRisk \\
        --expect-merged TreatmentSideEffects/TreatmentSideEffectBurden/TreatmentToxicity \\
        --expect-merged body_site/anatomic_site --expect-merged bone/bones \\
        --expect-apart ClinicalStage/PathologicStage --expect-apart CancerRisk/CancerIncidence

The metrics replies name the recorded run's dimensions; their signatures are mapped onto the
merged axes, as today's metrics step (which is shown the merged axes) would name them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def stage1_replies(calls: Path) -> dict[str, list[tuple[str, dict]]]:
    """schema name -> [(the batch's excerpts, the reply)] for the Stage 1 requests."""
    out: dict[str, list[tuple[str, dict]]] = {}
    for line in calls.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        name = ((rec["request"].get("response_format") or {}).get("json_schema") or {}).get("name")
        if name not in ("DimensionsReply", "MetricsReply"):
            continue
        prompt = rec["request"]["messages"][-1]["content"]
        start = prompt.find("\n[1] ")
        answer = rec["answer"]["content"]
        answer = json.loads(answer) if isinstance(answer, str) else answer
        out.setdefault(name, []).append((prompt[start:] if start >= 0 else "", answer))
    return out


def main(argv: list[str] | None = None) -> None:
    from hcg_core.config import tier_caps
    from hcg_core.embedders.factory import default_embedder, embedder_from_name
    from hcg_core.spec.assemble import (
        AssemblyReport,
        dimension_name,
        entity_name,
        merge_dimensions,
        merge_metrics,
        metric_name,
    )
    from hcg_core.spec.generate import merge_metric_drafts
    from hcg_core.spec.merge import dimension_groups, entity_key, name_words, split_abbreviation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calls", help="calls.jsonl of a recorded build")
    ap.add_argument("--tier", default="XS")
    ap.add_argument("--embedder", default=None, help="embedder name (default: offline MiniLM)")
    ap.add_argument(
        "--chunk-embeddings",
        help="the recorded graph's embeddings/chunks.npy: the cap then ranks ties by corpus "
        "support, as a build does",
    )
    ap.add_argument("--expect-merged", action="append", default=[], metavar="A/B[/C]")
    ap.add_argument("--expect-apart", action="append", default=[], metavar="A/B")
    args = ap.parse_args(argv)
    caps = tier_caps(args.tier)
    embedder = embedder_from_name(args.embedder) if args.embedder else default_embedder()
    replies = stage1_replies(Path(args.calls))
    report = AssemblyReport()

    # Dimensions and entities.
    dim_drafts = [r.get("dimensions", []) for _, r in replies.get("DimensionsReply", [])]
    texts = [t for t, _ in replies.get("DimensionsReply", [])]
    raw: dict[str, list[str]] = {}
    votes: Counter[str] = Counter()
    for draft in dim_drafts:
        for n in {dimension_name(d.get("name", "")) for d in draft}:
            votes[n] += 1
        for d in draft:
            raw.setdefault(dimension_name(d.get("name", "")), []).extend(d.get("entities", []))
    axis = dimension_groups(raw, votes)
    canonical: dict[str, str] = {}  # every name of either kind -> its merged name
    canonical.update(axis)
    print(f"== dimensions: {len(raw)} proposed by {len(dim_drafts)} batches")
    for name in sorted(set(axis.values()), key=lambda n: -votes[n]):
        members = sorted(n for n, a in axis.items() if a == name and n != name)
        if members:
            print(f"  {name} <- {', '.join(members)}")
    dims = merge_dimensions(dim_drafts, caps.max_dimensions, report, texts=texts)
    print(f"kept (cap {caps.max_dimensions}): {', '.join(d.name for d in dims)}")
    print("\n== entities of the kept dimensions")
    for d in dims:
        proposed = [e for n, a in axis.items() if a == d.name for e in raw[n]]
        keys = {entity_key(e): e for e in d.entities}
        spellings: dict[str, set[str]] = {}
        for e in proposed:
            long, _ = split_abbreviation(entity_name(e))
            target = keys.get(entity_key(long))
            if target is not None:
                spellings.setdefault(target, set()).add(entity_name(e))
                canonical[entity_name(e)] = target
        merged = {k: sorted(v - {k}) for k, v in spellings.items() if v - {k}}
        print(
            f"  {d.name}: {len(d.entities)} entities from {len(set(proposed))} proposed names; "
            "one entity for: "
            + ("; ".join(f"{k} <- {', '.join(v)}" for k, v in sorted(merged.items())) or "-")
        )
        if d.parents:
            print("    stage / subtype of: " + "; ".join(f"{c} -> {p}" for c, p in d.parents))
    print(
        "  (aliases named by a batch's text merged: "
        f"{report.repaired.get('entity_alias_merged', 0)})"
    )

    # Metrics: signatures onto the merged axes, then the merge by meaning and the cap.
    metric_drafts = []
    for _, r in replies.get("MetricsReply", []):
        items = []
        for m in r.get("metrics", []):
            sig = [axis.get(dimension_name(x), dimension_name(x)) for x in m.get("signature", [])]
            items.append({**m, "signature": list(dict.fromkeys(sig))})
        metric_drafts.append(items)
    names = {metric_name(m["name"]) for d in metric_drafts for m in d}
    chunk_vectors = None
    if args.chunk_embeddings:
        chunk_vectors = np.load(args.chunk_embeddings, allow_pickle=False)
    renamed, support = merge_metric_drafts(metric_drafts, embedder, chunk_vectors, report)
    groups: dict[str, set[str]] = {}
    for before, after in zip(metric_drafts, renamed, strict=True):
        for a, b in zip(before, after, strict=True):
            groups.setdefault(b["name"], set()).add(metric_name(a["name"]))
            canonical[metric_name(a["name"])] = b["name"]
    print(f"\n== metrics: {len(names)} proposed by {len(metric_drafts)} batches")
    for name, members in sorted(groups.items()):
        if members - {name}:
            print(f"  {name} <- {', '.join(sorted(members - {name}))}")
    print(f"{len(groups)} after the merge")
    metrics, outcome = merge_metrics(renamed, dims, caps.max_metrics, None, report, support=support)
    roles = Counter(m.role for m in metrics)
    print(
        f"kept (cap {caps.max_metrics}): {len(metrics)} metrics, "
        + ", ".join(f"{n} {r}" for r, n in sorted(roles.items()))
    )
    for role in ("intermediate", "outcome", "terminal"):
        print(f"  {role}: {', '.join(m.name for m in metrics if m.role == role) or '-'}")

    described = {}
    for d in metric_drafts:
        for m in d:
            described.setdefault(metric_name(m["name"]), m.get("description", ""))

    def similarity(parts: list[str]) -> str:
        # What an embedding alone says: cosine of "name words: description" of the first two.
        if len(parts) < 2 or not all(p in described for p in parts[:2]):
            return ""
        texts = [f"{' '.join(name_words(p))}: {described[p]}" for p in parts[:2]]
        a, b = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        return f" (embedding of name and description: cosine {cos:.2f})"

    if args.expect_merged or args.expect_apart:
        print("\n== expectations")
    for spec in args.expect_merged:
        parts = spec.split("/")
        held = len({canonical.get(n, n) for n in parts}) == 1
        print(f"  merged {spec}: {'holds' if held else 'FAILS'}{similarity(parts)}")
    for spec in args.expect_apart:
        parts = spec.split("/")
        apart = len({canonical.get(n, n) for n in parts}) == len(parts)
        print(f"  apart  {spec}: {'holds' if apart else 'FAILS'}{similarity(parts)}")


if __name__ == "__main__":
    main()
