"""Check a graph's evidence independently of the linker: does an edge's evidence name its endpoints?

python benchmarks/evidence_check.py GRAPH_DIR                 # share of edges passing, spread
python benchmarks/evidence_check.py GRAPH_DIR --sample 50 --seed 7   # plus a sample to read

An edge passes when one of its evidence chunks contains, for each endpoint, every entity of the
endpoint's variable, or, for a variable without entities, every word of its metric's name
(CamelCase split), as whole words, ignoring case (a plural "s"/"es" allowed). This is written
apart from ``hcg_core.graph_build.evidence`` on purpose (plain ``re`` with word boundaries, no
code shared): it is the acceptance check of the linker, so it must not inherit its mistakes.
It also prints how evidence is spread: edges with evidence, chunks cited, the chunk cited by the
most edges. ``--sample N`` prints N edges (seeded) with the sentences of their evidence chunks
that name an endpoint, to be read by a person.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter

from hcg_core.store import load_graph


def words_of_metric(metric: str) -> list[str]:
    """``CancerRiskGroup`` -> ["cancer", "risk", "group"]."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", metric)]


def needles(variable) -> list[str]:
    """What a chunk must contain to name ``variable``."""
    return list(variable.entities) if variable.entities else words_of_metric(variable.metric)


def contains(text: str, needle: str) -> bool:
    body = r"\s+".join(re.escape(w) for w in needle.lower().split())
    return re.search(rf"\b{body}(?:e?s)?\b", text) is not None


def names(text: str, variable) -> bool:
    return all(contains(text, n) for n in needles(variable))


def check(graph) -> dict:
    """The share of edges with an evidence chunk naming both endpoints, and how evidence is spread."""
    var = {v.name: v for v in graph.variables}
    text = {c.id: c.text.lower() for c in graph.chunks}
    passing = 0
    for e in graph.edges:
        s, t = var.get(e.source), var.get(e.target)
        if s is None or t is None:
            continue
        if any(c in text and names(text[c], s) and names(text[c], t) for c in e.evidence):
            passing += 1
    cited = Counter(c for e in graph.edges for c in set(e.evidence))
    n = len(graph.edges)
    top = max(cited.values(), default=0)
    return {
        "edges": n,
        "passing": passing,
        "share_passing": round(passing / n, 4) if n else 0.0,
        "edges_with_evidence": sum(1 for e in graph.edges if e.evidence),
        "chunks": len(graph.chunks),
        "chunks_cited": len(cited),
        "max_edges_per_chunk": top,
        "max_share": round(top / n, 4) if n else 0.0,
    }


def sample(graph, n: int, seed: int, chars: int = 300) -> list[str]:
    """Edges picked at random (seeded), each with the sentences of its evidence naming an endpoint."""
    var = {v.name: v for v in graph.variables}
    text = {c.id: c.text for c in graph.chunks}
    picked = random.Random(seed).sample(list(graph.edges), min(n, len(graph.edges)))
    out = []
    for k, e in enumerate(picked, 1):
        lines = [f"[{k}] {e.source} -> {e.target} ({e.effect or '?'}): {e.mechanism}"]
        terms = [x for v in (var.get(e.source), var.get(e.target)) if v for x in needles(v)]
        for c in e.evidence:
            sents = re.split(r"(?<=[.!?])\s+", text.get(c, ""))
            hits = [s for s in sents if any(contains(s.lower(), t) for t in terms)]
            both = [s for s in hits if sum(contains(s.lower(), t) for t in terms) >= 2]
            shown = " | ".join((both or hits)[:2])[:chars]
            lines.append(f"    {c}: {shown}")
        if not e.evidence:
            lines.append("    (no evidence)")
        out.append("\n".join(lines))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", help="a graph directory")
    ap.add_argument("--sample", type=int, default=0, help="print this many edges to read")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    graph = load_graph(args.graph).graph
    result = check(graph)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:<22}{v}")
    for block in sample(graph, args.sample, args.seed) if args.sample else ():
        print(block)
    return result


if __name__ == "__main__":
    main()
