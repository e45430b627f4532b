"""How many of a recorded build's Tier 2 candidates today's compatibility rule keeps.

Reads the recorded requests (``calls.jsonl``: every Tier 2 prompt lists its templates, the
metrics with their signatures, and the numbered candidate pairs) and the recorded graph
directory (``chunks.jsonl`` for the chunk co-mentions, ``spec.yaml`` for the dimensions), and
counts, over every candidate the old pipeline sent, those ``llm_tiers.compatible`` keeps, by
reason; with ``--parents`` the dimensions first get today's stage / subtype links
(``spec.merge.entity_parents``). It also counts the pairs the recorded replies added as
``new_edges`` and how many of those the rule would have offered as candidates, and the Tier 2
calls today's packing makes of the kept candidates. Example::

    python benchmarks/llm_candidates.py DATA/llm-builds/medical-xs/calls.jsonl \\
        DATA/llm-builds/medical-xs/graph --parents
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_METRIC_LINE = re.compile(r"^- (\w+)(?:\(([^)]*)\))?:", re.M)
_CANDIDATE = re.compile(r"^\d+\. (.+?) -> (.+)$", re.M)
_TEMPLATE = re.compile(r"^T\d+\. (\w+) -> (\w+)", re.M)


def tier2_requests(calls: Path) -> list[tuple[str, dict]]:
    out = []
    for line in calls.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        fmt = rec["request"].get("response_format") or {}
        if (fmt.get("json_schema") or {}).get("name") == "Tier2Reply":
            answer = rec["answer"]["content"]
            out.append((rec["request"]["messages"][-1]["content"], answer))
    return out


def parse_variable(name: str):
    from hcg_core.spec.yaml_io import variable_from_item

    return variable_from_item(name, "candidate")


def main(argv: list[str] | None = None) -> None:
    from hcg_core.graph_build.evidence import EntityMentions
    from hcg_core.graph_build.llm_tiers import Template, compatible, tier2_batches
    from hcg_core.spec.merge import entity_parents
    from hcg_core.store import load_graph
    from hcg_core.types import Chunk, DomainSpec, Metric, Variable

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calls", help="calls.jsonl of a recorded build")
    ap.add_argument("graph", help="the recorded graph directory (chunks.jsonl, spec.yaml)")
    ap.add_argument("--parents", action="store_true", help="link stages / subtypes first")
    ap.add_argument("--examples", type=int, default=8, help="kept and dropped pairs to print")
    args = ap.parse_args(argv)

    stored = load_graph(args.graph)  # either format; the store reads chunks.jsonl exactly
    chunks = [Chunk(c.id, c.text) for c in stored.graph.chunks]
    recorded = stored.graph.spec
    dims = recorded.dimensions
    if args.parents:
        dims = tuple(replace(d, parents=tuple(entity_parents(d.entities).items())) for d in dims)
    requests = tier2_requests(Path(args.calls))
    signatures: dict[str, tuple[str, ...]] = {}
    candidates: list[tuple[str, str]] = []
    templates: list[tuple[str, str]] = []
    for prompt, _ in requests:
        for m in _METRIC_LINE.finditer(prompt.split("Evidence from the corpus")[0]):
            sig = tuple(x.strip() for x in (m.group(2) or "").split(",") if x.strip())
            signatures.setdefault(m.group(1), sig)
        candidates += _CANDIDATE.findall(prompt)
        templates += _TEMPLATE.findall(prompt)
    spec = DomainSpec(
        dims, tuple(Metric(n, sig) for n, sig in signatures.items()), domain=recorded.domain
    )
    dim_names = {d.name for d in dims}
    mentions = EntityMentions(chunks)
    reasons: Counter[str] = Counter()
    kept, dropped = [], []
    for s, t in candidates:
        vs, vt = parse_variable(s), parse_variable(t)
        if any(d not in dim_names for m in (vs.metric, vt.metric) for d in signatures[m]):
            reasons["outside the recorded dimensions"] += 1
            continue
        ok = compatible(spec, mentions, vs, vt)
        (kept if ok else dropped).append((s, t))
        sig_s, sig_t = set(signatures[vs.metric]), set(signatures[vt.metric])
        if not vs.entities or not vt.entities:
            why = "kept: a variable without entities"
        elif sig_s & sig_t:
            why = (
                "kept: the same entity (or a stage / subtype of it) on a shared dimension"
                if ok
                else "dropped: different entities of a shared dimension"
            )
        else:
            why = (
                "kept: no shared dimension, one chunk names all their entities"
                if ok
                else "dropped: no shared dimension, no chunk names all their entities"
            )
        reasons[why] += 1
    print(
        f"{len(requests)} Tier 2 requests, {len(candidates)} candidates "
        f"({len(set(candidates))} distinct), {len(set(templates))} templates"
    )
    print(f"kept by the rule: {len(kept)} of {len(candidates)}")
    for reason, n in sorted(reasons.items()):
        print(f"  {n:>5}  {reason}")

    # What the replies added as new edges, and whether the rule would have offered them.
    added = offered = 0
    for _, answer in requests:
        answer = json.loads(answer) if isinstance(answer, str) else answer
        for ne in answer.get("new_edges", []):
            added += 1
            src = ne["source"]["metric"], tuple(ne["source"].get("entities", []))
            tgt = ne["target"]["metric"], tuple(ne["target"].get("entities", []))
            if src[0] not in signatures or tgt[0] not in signatures:
                continue
            offered += compatible(spec, mentions, Variable(*src), Variable(*tgt))
    print(
        f"new_edges in the recorded replies: {added}; the rule would pair {offered} of them "
        "(a candidate when both variables exist)"
    )

    variables = {parse_variable(n) for pair in candidates for n in pair}
    batches, counts = tier2_batches(
        [Template(s, t) for s, t in sorted(set(templates))],
        sorted(variables, key=lambda v: v.name),
        50,
        lambda a, b: compatible(spec, mentions, a, b),
    )
    print(
        f"today's packing of these templates and variables: {len(batches)} Tier 2 calls "
        f"({counts['candidates']} candidates, {counts['templates_without_candidates']} "
        f"templates to populate); the recorded build made {len(requests)}"
    )
    rng = random.Random(0)
    for label, pairs in (("kept", kept), ("dropped", dropped)):
        print(f"\nexamples {label}:")
        for s, t in rng.sample(pairs, min(args.examples, len(pairs))):
            print(f"  {s} -> {t}")


if __name__ == "__main__":
    main()
