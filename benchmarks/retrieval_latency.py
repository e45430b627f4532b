"""Graph-stage latency of paper Stage 3 vs a plain numpy top-k, on a synthetic L-tier-sized graph.

Size (the paper's L tier on the medical corpus): 1,583 variables, ~9,000 edges, 173 metrics,
384-dim embeddings, 2,000 chunks. The query embedding is excluded from both timings: the graph
stage is ``CausalGraphRetriever.retrieve_paper`` (matching, BFS, cones, evidence ranking, paths, fill);
the baseline is ``chunk_emb @ q`` + ``argpartition`` + sort of the top k.

    python benchmarks/retrieval_latency.py [--queries 500] [--k 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hcg_core.retrieval import CausalGraphRetriever
from hcg_core.types import (
    CausalEdge,
    CausalGraph,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
)


class _Fixed:
    """An embedder that is never called at query time here (vectors are precomputed)."""

    name = "synthetic"
    dim = 384

    def embed_documents(self, texts):  # pragma: no cover - vectors are passed in
        raise AssertionError("not used")

    def embed_query(self, text):  # pragma: no cover
        raise AssertionError("not used")


def synthetic(
    n_vars=1583, n_edges=9000, n_metrics=173, n_chunks=2000, dim=384, seed=0, layout="layered"
):
    """A seeded random graph of the given size; returns (graph, var_emb, chunk_emb, centres).

    ``layered``: metrics sit on 5 causal levels (outcome and terminal metrics on the top ones)
    and edges run upward, as in the paper's hierarchical graphs. ``random``: edges join any two
    variables, the worst case for BFS reach.
    """
    rng = np.random.default_rng(seed)
    n_term, n_out = 3, 12
    roles = ["terminal"] * n_term + ["outcome"] * n_out + ["intermediate"] * (n_metrics - 15)
    metrics = tuple(Metric(f"M{i}", ("id",), "", "c", roles[i]) for i in range(n_metrics))
    spec = DomainSpec(
        (Dimension("id", tuple(str(i) for i in range(n_vars))),),
        metrics,
        outcome=OutcomeConfig(
            tuple(m.name for m in metrics if m.role == "outcome"),
            tuple(m.name for m in metrics if m.role == "terminal"),
        ),
    )
    metric_of = np.concatenate(
        [np.arange(n_metrics), rng.integers(0, n_metrics, n_vars - n_metrics)]
    )
    variables = tuple(Variable(f"M{m}", (str(i),)) for i, m in enumerate(metric_of))
    # Variables of one metric share a direction, so per-metric matching has signal to find.
    centres = rng.standard_normal((n_metrics, dim))
    var_emb = centres[metric_of] + 0.8 * rng.standard_normal((n_vars, dim))
    var_emb /= np.linalg.norm(var_emb, axis=1, keepdims=True)
    src = rng.integers(0, n_vars, n_edges * 12)
    dst = rng.integers(0, n_vars, n_edges * 12)
    ok = (src != dst) & (metric_of[src] >= n_term)  # no edge leaves a terminal
    if layout == "layered":
        # Level 4 holds the end metrics; the others spread over levels 0-3.
        level = np.where(np.arange(n_metrics) < n_term + n_out, 4, np.arange(n_metrics) % 4)[
            metric_of
        ]
        same_level = (level[dst] == level[src]) & (rng.random(src.size) < 0.1)
        ok &= (level[dst] == level[src] + 1) | same_level
    pairs = sorted(set(zip(src[ok].tolist(), dst[ok].tolist(), strict=True)))[:n_edges]
    chunk_emb = rng.standard_normal((n_chunks, dim))
    chunk_emb /= np.linalg.norm(chunk_emb, axis=1, keepdims=True)
    chunks = tuple(Chunk(f"c{i}", "word " * 200) for i in range(n_chunks))
    edges = tuple(
        CausalEdge(
            f"e{j}",
            variables[s].name,
            variables[d].name,
            "m",
            float(rng.uniform(0.5, 1.0)),
            tuple(f"c{c}" for c in rng.choice(n_chunks, int(rng.integers(1, 3)), replace=False)),
        )
        for j, (s, d) in enumerate(pairs)
    )
    graph = CausalGraph(spec, variables, edges, chunks)
    return graph, var_emb.astype(np.float32), chunk_emb.astype(np.float32), centres


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument(
        "--layout",
        choices=["layered", "random"],
        default="layered",
        help="edges run up 5 causal levels (default) or join any two variables",
    )
    args = ap.parse_args()
    graph, var_emb, chunk_emb, centres = synthetic(layout=args.layout)
    t0 = time.perf_counter()
    r = CausalGraphRetriever.from_graph(
        graph, _Fixed(), variable_embeddings=var_emb, chunk_embeddings=chunk_emb
    )
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    queries = []
    for _ in range(args.queries):
        v = centres[rng.integers(0, len(centres), 3)].sum(0) + rng.standard_normal(384)
        queries.append((v / np.linalg.norm(v)).astype(np.float32))

    def plain(q):
        s = chunk_emb @ q
        top = np.argpartition(-s, args.k)[: args.k]
        return top[np.argsort(-s[top])]

    graph_t, base_t, served, matched = [], [], {}, []
    for q in queries[:20]:  # warm-up
        r.retrieve_paper("", q, args.k)
        plain(q)
    for q in queries:
        t = time.perf_counter()
        res = r.retrieve_paper("", q, args.k)
        graph_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        plain(q)
        base_t.append(time.perf_counter() - t)
        served[res.served_by] = served.get(res.served_by, 0) + 1
        matched.append(res.diagnostics.get("reached", 0))
    g50, g95 = np.percentile(graph_t, [50, 95]) * 1e3
    b50, b95 = np.percentile(base_t, [50, 95]) * 1e3
    print(
        f"graph ({args.layout}): {len(graph.variables)} variables, {len(graph.edges)} edges, "
        f"{len(graph.spec.metrics)} metrics, {len(graph.chunks)} chunks, dim 384; compiled in {compile_s:.2f} s"
    )
    print(
        f"queries: {len(queries)}, k={args.k}; served by {served}; "
        f"mean BFS reach {np.mean(matched):.0f} variables"
    )
    print(f"{'stage':<28}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'plain numpy top-k':<28}{b50:>10.3f}{b95:>10.3f}")
    print(f"{'HCG graph stage (paper)':<28}{g50:>10.3f}{g95:>10.3f}")
    print(
        f"ratio p50 graph/plain: {g50 / b50:.2f}x (target <= 1.5x); "
        f"paper's implementation: 1,200-10,600 ms per query"
    )


if __name__ == "__main__":
    main()
