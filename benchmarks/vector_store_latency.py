"""Query latency and equality: hcg's default retriever with numpy dense search vs a Qdrant collection.

Loads one graph directory twice as a LlamaIndex ``HCGIndex``: once with the default in-process
dense search, once with ``vector_store=`` a Qdrant collection in local mode (in-process, in
memory; the figure for a Qdrant server differs). Times both on the same questions, alternating,
and counts the queries whose results are identical (same node ids in the same order, scores
within 1e-5). Needs the ``vectorstores`` extra.

    python benchmarks/vector_store_latency.py GRAPH_DIR QUESTIONS_FILE [--queries 100] [--k 10]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph_dir")
    ap.add_argument("questions")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()

    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from hcg_core.eval.runner import load_questions
    from llama_index_hcg import HCGIndex

    qs = [q.question for q in load_questions(args.questions, limit=args.queries)]
    plain = HCGIndex.from_graph_dir(args.graph_dir)
    t0 = time.perf_counter()
    store = QdrantVectorStore(client=QdrantClient(":memory:"), collection_name="hcg")
    stored = HCGIndex.from_graph_dir(args.graph_dir, vector_store=store)
    write_s = time.perf_counter() - t0
    a_ret = plain.as_retriever(similarity_top_k=args.k)
    b_ret = stored.as_retriever(similarity_top_k=args.k)
    a_ret.retrieve(qs[0])
    b_ret.retrieve(qs[0])
    t_np, t_qd, same = [], [], 0
    for q in qs:
        t0 = time.perf_counter()
        a = a_ret.retrieve(q)
        t1 = time.perf_counter()
        b = b_ret.retrieve(q)
        t2 = time.perf_counter()
        t_np.append((t1 - t0) * 1000)
        t_qd.append((t2 - t1) * 1000)
        same += [n.node.node_id for n in a] == [n.node.node_id for n in b] and np.allclose(
            [n.score for n in a], [n.score for n in b], atol=1e-5
        )
    print(
        json.dumps(
            {
                "chunks": len(plain.graph.chunks),
                "load_and_write_to_qdrant_s": round(write_s, 1),
                "numpy_p50_ms": round(float(np.percentile(t_np, 50)), 1),
                "qdrant_local_p50_ms": round(float(np.percentile(t_qd, 50)), 1),
                "identical": f"{same}/{len(qs)}",
            }
        )
    )


if __name__ == "__main__":
    main()
