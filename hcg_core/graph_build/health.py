"""Graph-health figures of a built causal graph (pure): size, density, connectivity, BFS reach.

``hcg inspect`` and ``benchmarks/graph_health.py`` print these; they show whether BFS and outcome
cones have structure to follow (the paper's LLM graphs have several edges per node).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..config import DEFAULT_MAX_HOPS
from ..types import CausalGraph

DEFAULT_REACH_HOPS = DEFAULT_MAX_HOPS  # the paper's h_max: the BFS depth retrieval uses


def forward_reach(adjacency: list[list[int]], source: int, hops: int) -> int:
    """Nodes reached from ``source`` in at most ``hops`` forward steps, the source excluded.

    >>> forward_reach([[1], [2], [3], [4], []], 0, 2)
    2
    """
    seen = {source}
    frontier = [source]
    for _ in range(hops):
        nxt = []
        for u in frontier:
            for v in adjacency[u]:
                if v not in seen:
                    seen.add(v)
                    nxt.append(v)
        if not nxt:
            break
        frontier = nxt
    return len(seen) - 1


def _wcc_sizes(n: int, edges: list[tuple[int, int]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    return sorted(Counter(find(i) for i in range(n)).values(), reverse=True)


def graph_health(graph: CausalGraph, *, hops: int = DEFAULT_REACH_HOPS) -> dict[str, Any]:
    """Size, density and connectivity figures of ``graph`` (JSON-ready).

    Keys: variables, edges, metrics, dimensions, chunks, edges_per_variable (|E|/|V|),
    mean_degree (2|E|/|V|, in plus out), largest_wcc_share, components, isolated_variables,
    mean_reach / median_reach / max_reach (forward BFS within ``hops``, per variable),
    outcome_variables, terminal_variables, evidence_links, edges_without_evidence,
    mean_confidence.
    """
    names = [v.name for v in graph.variables]
    index = {n: i for i, n in enumerate(names)}
    n = len(names)
    pairs = [
        (index[e.source], index[e.target])
        for e in graph.edges
        if e.source in index and e.target in index
    ]
    adjacency: list[list[int]] = [[] for _ in range(n)]
    degree = np.zeros(n, dtype=np.int64)
    for a, b in pairs:
        adjacency[a].append(b)
        degree[a] += 1
        degree[b] += 1
    reach = np.array([forward_reach(adjacency, i, hops) for i in range(n)], dtype=np.float64)
    sizes = _wcc_sizes(n, pairs) if n else []
    role = {m.name: m.role for m in graph.spec.metrics}
    m_edges = len(graph.edges)
    return {
        "variables": n,
        "edges": m_edges,
        "metrics": len(graph.spec.metrics),
        "dimensions": len(graph.spec.dimensions),
        "chunks": len(graph.chunks),
        "edges_per_variable": round(m_edges / n, 3) if n else 0.0,
        "mean_degree": round(2 * m_edges / n, 3) if n else 0.0,
        "largest_wcc_share": round(sizes[0] / n, 4) if n else 0.0,
        "components": len(sizes),
        "isolated_variables": int((degree == 0).sum()),
        "reach_hops": hops,
        "mean_reach": round(float(reach.mean()), 2) if n else 0.0,
        "median_reach": float(np.median(reach)) if n else 0.0,
        "max_reach": int(reach.max()) if n else 0,
        "outcome_variables": sum(role.get(v.metric) == "outcome" for v in graph.variables),
        "terminal_variables": sum(role.get(v.metric) == "terminal" for v in graph.variables),
        "evidence_links": graph.evidence_links,
        "edges_without_evidence": sum(not e.evidence for e in graph.edges),
        "mean_confidence": round(float(np.mean([e.confidence for e in graph.edges])), 4)
        if graph.edges
        else 0.0,
    }
