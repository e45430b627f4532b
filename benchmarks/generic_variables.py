"""How many offline variables are a single generic word, with the generic-word rule off and on.

    python benchmarks/generic_variables.py CORPUS [--embedder minilm] [--threshold 0.10]
    python benchmarks/generic_variables.py --graph DIR     # judge an already built graph directory

"Single generic word", the judge's definition (kept apart from the builder's rule so the rule
is not graded by itself): a variable whose name is one word (its metric's words plus its entity
words, ``general`` not counted: ``Factor``, ``Quality(general)``; not ``Performance(academic)``)
and whose word occurs in at least ``--threshold`` (default 10%) of the corpus's chunks, in the
builder's tokens (lowercased, singular). A word in one chunk of ten picks out no topic. The
builder's own rule (``hcg_core.graph_build.generic``) asks a word for spread (5% of chunks) and
no burstiness (residual IDF); the judge asks spread only, at a higher share, and prints every
one-word variable with both figures so a reader can judge the words themselves.

With CORPUS, the offline graph is built twice (``drop_generic=False`` then ``True``, chunk
vectors skipped: they do not change the vocabulary) and both are judged; the build times of the
vocabulary and graph stages are printed beside them.
"""

from __future__ import annotations

import argparse
import json
import time

from hcg_core.corpus import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS, chunk_documents, load_inputs
from hcg_core.graph_build.generic import residual_idf, word_counts
from hcg_core.types import CausalGraph, Variable

GENERIC_ENTITY = "general"


def one_word(v: Variable) -> str | None:
    """The variable's one word (lowercase, as the builder tokenises), or None if it has more."""
    words = v.metric.lower().replace("-", "_").split("_")
    words += [w for e in v.entities if e != GENERIC_ENTITY for w in e.lower().split()]
    words = [w for w in words if w]
    if len(words) != 1:
        return None
    # A hyphenated metric ("Self_Efficacy" from "self-efficacy") is two words: not one.
    return words[0]


def judge(graph: CausalGraph, threshold: float) -> dict:
    """The share of the graph's variables that are a single generic word, and the list."""
    singles = {v.name: w for v in graph.variables if (w := one_word(v))}
    n = len(graph.chunks)
    df, cf = word_counts(graph.chunks, set(singles.values()))
    rows = sorted(
        (
            (df[w] / n if n else 0.0, name, w, residual_idf(df[w], cf[w], n))
            for name, w in singles.items()
        ),
        reverse=True,
    )
    generic = [r for r in rows if r[0] >= threshold]
    total = len(graph.variables)
    return {
        "variables": total,
        "edges": len(graph.edges),
        "one_word": len(singles),
        "generic": len(generic),
        "generic_share": round(len(generic) / total, 4) if total else 0.0,
        "generic_list": [f"{name} ({share:.0%}, ridf {r:.2f})" for share, name, _, r in generic],
        "one_word_list": [f"{name} ({share:.1%}, ridf {r:.2f})" for share, name, _, r in rows],
    }


def show(label: str, out: dict) -> None:
    print(
        f"{label}: {out['variables']} variables, {out['edges']} edges; {out['one_word']} one-word; "
        f"single generic word: {out['generic']} ({out['generic_share']:.1%})"
    )
    print("  generic: " + ", ".join(out["generic_list"]))
    print(
        "  every one-word variable (chunk share, residual IDF): " + ", ".join(out["one_word_list"])
    )


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="*", help="corpus files or folders (built twice)")
    ap.add_argument("--graph", help="judge this graph directory instead of building")
    ap.add_argument("--embedder", choices=("hashing", "minilm"), default="minilm")
    ap.add_argument("--threshold", type=float, default=0.10, help="chunk share of a generic word")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results: dict = {}
    if args.graph:
        from hcg_core.store import load_graph

        results["graph"] = judge(load_graph(args.graph).graph, args.threshold)
    else:
        if not args.corpus:
            ap.error("give a CORPUS or --graph DIR")
        from hcg_core.graph_build.offline import build_offline

        if args.embedder == "minilm":
            from hcg_core.embedders import default_embedder

            embedder = default_embedder()
        else:
            from hcg_core.embedders import HashingEmbedder

            embedder = HashingEmbedder()
        docs, _ = load_inputs(args.corpus)
        chunks = chunk_documents(
            docs, chunk_words=DEFAULT_CHUNK_WORDS, overlap_words=DEFAULT_OVERLAP_WORDS
        )
        for label, drop in (("rule off", False), ("rule on", True)):
            t = time.perf_counter()
            r = build_offline(chunks, embedder=embedder, embed_chunks=False, drop_generic=drop)
            out = judge(r.graph, args.threshold)
            out["build_seconds_excl_chunk_embedding"] = round(time.perf_counter() - t, 2)
            out["graph_stage_seconds"] = r.report["stages"]["graph"]["seconds"]
            results[label] = out
    for label, out in results.items():
        if args.json:
            continue
        show(label, out)
        if "graph_stage_seconds" in out:
            print(
                f"  build {out['build_seconds_excl_chunk_embedding']} s without chunk vectors "
                f"(graph stage {out['graph_stage_seconds']} s)"
            )
    if args.json:
        print(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
