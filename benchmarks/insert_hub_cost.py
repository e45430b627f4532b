"""Cost of inserting one small document into a hub-heavy graph, against corpus size.

Builds the synthetic corpus of ``offline_build_scaling.py`` (every sentence also supports the
lifted generic links, so a few links hold nearly every sentence), wraps it in a
``CausalGraphRetriever`` with the hashing embedder, then inserts documents of 8 new sentences of
the same kind, one at a time, and times the graph part of each insert (``add_chunks`` +
``apply_links``: the ledger update and the touched links' edges).

The first two inserts are one-offs, shown apart: the first builds the ledger's sentence -> links
index and recomputes every link it touches in full (keeping a ``LinkState`` for capped links);
the second builds the fragment index. Later inserts show the steady cost: the fastest of
``--repeat`` (a link first touched then is still recomputed in full once).

Per size it prints the sentences of the largest link an insert touched, the two one-off graph
times, the steady insert and graph times, the steady graph time's ratio to the previous size's,
and a digest of the edges after the last insert (ids, mechanisms, confidences, evidence), so two
versions of the code can be checked to give the same edges.

Usage: python benchmarks/insert_hub_cost.py [N ...]   (default: 2000 8000 32000)
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time

from offline_build_scaling import CAUSE_HEADS, CUES, EFFECT_HEADS, SETTINGS, _word, synthetic_chunks

from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build import incremental
from hcg_core.graph_build.offline import build_offline
from hcg_core.retrieval import updates
from hcg_core.retrieval.retriever import CausalGraphRetriever
from hcg_core.types import Chunk


def new_document(n_corpus: int, k: int, *, entities: int = 60) -> Chunk:
    """Document ``k``: 8 new sentences over the corpus's entity words (numbered past it)."""
    pool_rng = random.Random(0)  # the pool synthetic_chunks draws first with seed 0
    pool = [_word(pool_rng) for _ in range(entities)]
    rng = random.Random(1000 + k)
    sentences = [
        f"{rng.choice(pool).capitalize()} {rng.choice(CAUSE_HEADS)} {rng.choice(CUES)} "
        f"{rng.choice(pool)} {rng.choice(EFFECT_HEADS)} {rng.choice(SETTINGS)} "
        f"number {n_corpus + 8 * k + i}."
        for i in range(8)
    ]
    return Chunk(f"new{k}", " ".join(sentences), f"new{k}")


def edges_fingerprint(edges) -> str:
    """Digest of everything an edge holds, in the graph's order."""
    h = hashlib.blake2b(digest_size=10)
    for e in edges:
        fields = (e.id, e.source, e.target, e.mechanism, repr(e.confidence), *e.evidence)
        h.update("\x00".join(fields).encode("utf-8") + b"\x01")
    return h.hexdigest()


class GraphClock:
    """Time spent in ``add_chunks`` + ``apply_links``, and the largest link they touched."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.largest = 0
        self._add = incremental.SupportLedger.add_chunks
        self._apply = updates.apply_links

    def install(self) -> None:
        clock = self

        def add_chunks(ledger, *args, **kwargs):
            t = time.perf_counter()
            touched = clock._add(ledger, *args, **kwargs)
            clock.seconds += time.perf_counter() - t
            sizes = [len(ledger.links[k]) for k in touched if k in ledger.links]
            clock.largest = max(sizes, default=0)
            return touched

        def apply_links(*args, **kwargs):
            t = time.perf_counter()
            out = clock._apply(*args, **kwargs)
            clock.seconds += time.perf_counter() - t
            return out

        incremental.SupportLedger.add_chunks = add_chunks
        updates.apply_links = apply_links


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[2000, 8000, 32000])
    ap.add_argument("--repeat", type=int, default=3, help="timed inserts per size; fastest kept")
    args = ap.parse_args(argv)
    embedder = HashingEmbedder()
    clock = GraphClock()
    clock.install()
    print(
        f"{'sentences':>9} {'link sents':>10} {'1st ms':>7} {'2nd ms':>7} {'insert ms':>9} "
        f"{'graph ms':>8} {'graph x':>7} {'edges':>6}  digest"
    )
    previous = None
    for n in args.sizes:
        result = build_offline(
            synthetic_chunks(n), embedder=embedder, embed_chunks=False, progress=False
        )
        r = CausalGraphRetriever.from_build(result, embedder)
        one_off = []
        for k in range(2):
            clock.seconds = 0.0
            r.insert(new_document(n, k))
            one_off.append(clock.seconds)
        best_insert, best_graph = float("inf"), float("inf")
        for k in range(2, args.repeat + 2):
            clock.seconds = 0.0
            t = time.perf_counter()
            r.insert(new_document(n, k))
            best_insert = min(best_insert, time.perf_counter() - t)
            best_graph = min(best_graph, clock.seconds)
        ratio = f"{best_graph / previous:.2f}" if previous else ""
        previous = best_graph
        print(
            f"{n:>9} {clock.largest:>10} {one_off[0] * 1e3:>7.1f} {one_off[1] * 1e3:>7.1f} "
            f"{best_insert * 1e3:>9.1f} {best_graph * 1e3:>8.1f} {ratio:>7} "
            f"{len(r.graph.edges):>6}  {edges_fingerprint(r.graph.edges)}"
        )


if __name__ == "__main__":
    main()
