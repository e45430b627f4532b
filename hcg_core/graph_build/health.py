"""Graph-health figures of a built causal graph (pure): size, density, connectivity, BFS reach.

``hcg inspect`` and ``benchmarks/graph_health.py`` print these; they show whether BFS and outcome
cones have structure to follow (the paper's LLM graphs have several edges per node).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import DEFAULT_MAX_HOPS
from ..types import CausalGraph

DEFAULT_REACH_HOPS = DEFAULT_MAX_HOPS  # the paper's h_max: the BFS depth retrieval uses


def graph_health(graph: CausalGraph, *, hops: int = DEFAULT_REACH_HOPS) -> dict[str, Any]:
    """Size, density and connectivity figures of ``graph`` (JSON-ready).

    Keys: variables, edges, metrics, dimensions, chunks, edges_per_variable (|E|/|V|),
    mean_degree (2|E|/|V|, in plus out), largest_wcc_share, components, isolated_variables,
    mean_reach / median_reach / max_reach (forward BFS within ``hops``, per variable),
    outcome_variables, terminal_variables, evidence_links, edges_without_evidence,
    mean_confidence.

    >>> from hcg_core.types import CausalEdge, CausalGraph, DomainSpec, Metric, Variable
    >>> spec = DomainSpec((), (Metric("A"), Metric("B"), Metric("C")))
    >>> vs, e = (Variable("A"), Variable("B"), Variable("C")), CausalEdge("e", "A", "B")
    >>> h = graph_health(CausalGraph(spec, vs, (e,), ()))
    >>> h["mean_degree"], h["max_reach"], h["components"], h["isolated_variables"]
    (0.667, 1, 2, 1)
    """
    import networkx as nx  # here: `hcg` imports this module for its defaults on every command

    names = [v.name for v in graph.variables]
    index = {n: i for i, n in enumerate(names)}
    n = len(names)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(
        (index[e.source], index[e.target])
        for e in graph.edges
        if e.source in index and e.target in index
    )
    reach = np.array(
        [len(nx.single_source_shortest_path_length(g, i, cutoff=hops)) - 1 for i in range(n)],
        dtype=np.float64,
    )
    sizes = sorted((len(c) for c in nx.weakly_connected_components(g)), reverse=True)
    confidence = [e.confidence for e in graph.edges]
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
        "isolated_variables": sum(d == 0 for _, d in g.degree()),
        "reach_hops": hops,
        "mean_reach": round(float(reach.mean()), 2) if n else 0.0,
        "median_reach": float(np.median(reach)) if n else 0.0,
        "max_reach": int(reach.max()) if n else 0,
        "outcome_variables": sum(role.get(v.metric) == "outcome" for v in graph.variables),
        "terminal_variables": sum(role.get(v.metric) == "terminal" for v in graph.variables),
        "evidence_links": graph.evidence_links,
        "edges_without_evidence": sum(not e.evidence for e in graph.edges),
        "mean_confidence": round(float(np.mean(confidence)), 4) if confidence else 0.0,
    }
