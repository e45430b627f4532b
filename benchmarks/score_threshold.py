"""Top scores of on-topic and off-topic questions through the LlamaIndex adapter, under the defaults:
the evidence behind the ``SimilarityPostprocessor`` cutoff documented in docs/adapters.md.

Builds an ``HCGIndex`` over a folder of text files (default: examples/corpus, with LlamaIndex's
default splitter and the bundled MiniLM), asks each question, and prints the top score of each and
the gap between the lowest on-topic and the highest off-topic top score.

    python benchmarks/score_threshold.py [--corpus DIR] [--on Q ...] [--off Q ...]

With ``--set NAME=CORPUS:QUESTIONS[:SENTENCES]`` (two or more, as dev_suite.py takes them), each
corpus is chunked by hcg's chunker, embedded with the default embedder (cached under --cache) and
asked its own questions (on-topic) and the other sets' (off-topic), 40 units each on the
defaults. Prints, per corpus and cut-off, the false-drop rate (own questions whose top score is
under the cut-off: every unit would be dropped) and the false-keep rate (other sets' questions
whose top score reaches it), and the share of each question's own units a cut-off drops.

    python benchmarks/score_threshold.py --cache /tmp/hcg_cache --set medical=... --set ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

ON_TOPIC = (
    "What raises blood pressure?",
    "How do plaques build up inside the arteries?",
    "What causes a stroke?",
    "How does obesity lead to insulin resistance?",
    "Why does diabetes damage the kidneys?",
)
OFF_TOPIC = (
    "What is the capital of France?",
    "Who won the football world cup in 2018?",
    "How do I bake sourdough bread?",
    "What is the airspeed of a swallow?",
    "How do I configure a Kubernetes ingress?",
)


CUTOFFS = (0.02, 0.05, 0.1, 0.15, 0.2)
QUESTIONS_PER_SET = 200


def dev_sets(sets: list, cache: Path, limit: int) -> None:
    """The per-corpus false-drop / false-keep table over the dev sets (see the module docstring)."""
    import numpy as np
    from ranking_variants import cached  # benchmarks/ is on sys.path when this script runs

    from hcg_core.corpus import chunk_documents, load_inputs
    from hcg_core.embedders import embedder_by_name
    from hcg_core.eval.runner import load_questions, load_sentences
    from hcg_core.retrieval.hybrid import HybridRanker

    embedder = embedder_by_name(None)
    asked = {}
    for name, paths in sets:
        sentences = load_sentences(paths[2]) if len(paths) == 3 else None
        qs = [q.question for q in load_questions(paths[1], limit=limit, sentences=sentences)]
        asked[name] = (qs, cached(embedder, qs, cache, "query"))
    print(f"| corpus | questions | {' | '.join(f'cut-off {c}' for c in CUTOFFS)} |")
    print(f"|---|---|{'---|' * len(CUTOFFS)}")
    for name, paths in sets:
        docs, _ = load_inputs([paths[0]])
        chunks = chunk_documents(docs)
        ranker = HybridRanker(chunks, cached(embedder, [c.text for c in chunks], cache, "chunks"))
        tops, kept = {"own": [], "others": []}, []
        for other, (qs, vecs) in asked.items():
            kind = "own" if other == name else "others"
            for q, v in zip(qs, vecs, strict=True):
                scores = [c.score for c in ranker.rank(q, v, None, k=40, use_graph=False).chunks]
                tops[kind].append(max(scores, default=0.0))
                if kind == "own":
                    kept.append(np.asarray(scores))
        own, others = np.asarray(tops["own"]), np.asarray(tops["others"])
        drop = " | ".join(f"{100 * float((own < c).mean()):.0f}%" for c in CUTOFFS)
        keep = " | ".join(f"{100 * float((others >= c).mean()):.0f}%" for c in CUTOFFS)
        units = " | ".join(
            f"{100 * float(np.mean([(s < c).mean() for s in kept])):.0f}%" for c in CUTOFFS
        )
        print(f"| {name} | own, all units dropped (false drop) | {drop} |")
        print(f"| {name} | others', kept (false keep) | {keep} |")
        print(f"| {name} | own, share of the 40 units dropped | {units} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=None, help="NAME=CORPUS:QUESTIONS[:SENTS]")
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache (with --set)")
    ap.add_argument("--limit", type=int, default=QUESTIONS_PER_SET, help="questions per set")
    ap.add_argument("--corpus", type=Path, default=Path(__file__).parents[1] / "examples/corpus")
    ap.add_argument("--on", nargs="+", default=list(ON_TOPIC), help="on-topic questions")
    ap.add_argument("--off", nargs="+", default=list(OFF_TOPIC), help="off-topic questions")
    args = ap.parse_args()
    if args.set:
        from dev_suite import parse_set

        if args.cache is None:
            raise SystemExit("--set needs --cache")
        dev_sets([parse_set(s) for s in args.set], args.cache, args.limit)
        return

    from llama_index.core import SimpleDirectoryReader

    from llama_index_hcg import HCGIndex

    docs = SimpleDirectoryReader(str(args.corpus)).load_data()
    retriever = HCGIndex.from_documents(docs).as_retriever()
    tops: dict[str, list[float]] = {"on": [], "off": []}
    for kind, questions in (("on", args.on), ("off", args.off)):
        for q in questions:
            got = retriever.retrieve(q)
            scores = [n.score for n in got]
            if scores != sorted(scores, reverse=True):
                print("  (not sorted by score)")
            tops[kind].append(max(scores, default=0.0))
            print(f"{kind:>3}  top {tops[kind][-1]:.3f}  {q}")
    low_on, high_off = min(tops["on"]), max(tops["off"])
    print(f"lowest on-topic top score {low_on:.3f}; highest off-topic top score {high_off:.3f}")
    if low_on > high_off:
        print(
            f"separable: a cutoff in ({high_off:.3f}, {low_on:.3f}), midpoint "
            f"{(low_on + high_off) / 2:.3f}"
        )
    else:
        print("not separable by one cutoff on this corpus")


if __name__ == "__main__":
    main()
