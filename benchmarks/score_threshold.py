"""Top scores of on-topic and off-topic questions through the LlamaIndex adapter, under the defaults:
the evidence behind the ``SimilarityPostprocessor`` cutoff documented in docs/adapters.md.

Builds an ``HCGIndex`` over a folder of text files (default: examples/corpus, with LlamaIndex's
default splitter and the bundled MiniLM), asks each question, and prints the top score of each and
the gap between the lowest on-topic and the highest off-topic top score.

    python benchmarks/score_threshold.py [--corpus DIR] [--on Q ...] [--off Q ...]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path(__file__).parents[1] / "examples/corpus")
    ap.add_argument("--on", nargs="+", default=list(ON_TOPIC), help="on-topic questions")
    ap.add_argument("--off", nargs="+", default=list(OFF_TOPIC), help="off-topic questions")
    args = ap.parse_args()

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
