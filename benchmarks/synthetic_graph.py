"""A deterministic synthetic graph of any size, to test and time the audit page on large graphs
(``benchmarks/audit_view.py``, ``tests/test_audit_browser.py``).

Not a model of a real corpus: metrics in a chain of layers, one entity dimension, edges drawn
mostly forward (with a few back edges, so cycles exist) by a seeded generator, each citing one
chunk whose text names both ends.
"""

from __future__ import annotations

import numpy as np

from hcg_core.types import CausalEdge, CausalGraph, Chunk, Dimension, DomainSpec, Metric, Variable


def synthetic_graph(
    *,
    metrics: int = 40,
    variables: int = 1600,
    edges: int = 10000,
    chunks: int = 800,
    seed: int = 0,
) -> CausalGraph:
    """``variables`` spread evenly over ``metrics``, ``edges`` distinct edges, ``chunks`` chunks.

    >>> g = synthetic_graph(metrics=4, variables=20, edges=30, chunks=10)
    >>> len(g.variables), len(g.edges), len(g.chunks)
    (20, 30, 10)
    """
    rng = np.random.default_rng(seed)
    per_metric = -(-variables // metrics)
    dim = Dimension("entity", tuple(f"entity {i}" for i in range(per_metric)))
    spec_metrics = tuple(
        Metric(
            f"Metric{m:03d}",
            ("entity",),
            f"Synthetic metric {m}.",
            f"layer {m * 5 // metrics}",
            "outcome" if m == metrics - 1 else "intermediate",
        )
        for m in range(metrics)
    )
    vars_ = tuple(
        Variable(spec_metrics[i // per_metric].name, (dim.entities[i % per_metric],))
        for i in range(variables)
    )
    names = [v.name for v in vars_]
    layer = np.array([i // per_metric for i in range(variables)])
    out_edges: list[CausalEdge] = []
    seen: set[tuple[int, int]] = set()
    while len(out_edges) < edges:
        a = int(rng.integers(variables))
        # Mostly forward to the next few metrics; 1 in 50 goes back, making cycles to flag.
        if layer[a] == metrics - 1:
            continue
        back = rng.random() < 0.02
        span = int(rng.integers(1, 4))
        m = max(0, layer[a] - span) if back else min(metrics - 1, layer[a] + span)
        b = int(m * per_metric + rng.integers(per_metric))
        if b >= variables or a == b or (a, b) in seen:
            continue
        seen.add((a, b))
        k = len(out_edges)
        out_edges.append(
            CausalEdge(
                f"e{k}",
                names[a],
                names[b],
                f"{names[a]} raises {names[b]} through pathway {k % 97}.",
                round(float(rng.uniform(0.2, 1.0)), 3),
                () if k % 40 == 0 else (f"c{k % chunks}",),
            )
        )
    chunk_list = tuple(
        Chunk(
            f"c{i}",
            f"Background sentence number {i}. "
            + " ".join(f"{e.mechanism}" for e in out_edges[i::chunks][:3]),
            f"doc{i % 20}.md",
        )
        for i in range(chunks)
    )
    spec = DomainSpec((dim,), spec_metrics, domain="synthetic")
    return CausalGraph(spec, vars_, tuple(out_edges), chunk_list)


__all__ = ["synthetic_graph"]
