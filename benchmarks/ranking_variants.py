"""Does each ranking heuristic earn its place? Leave-one-out over each door's units, on every dev set.

For each set the corpus is cut into the units each door indexes:

- ``hcg chunker``: hcg's structure-aware chunker (``hcg build``, LangChain ``from_documents`` and
  LlamaIndex ``from_documents`` on default Settings);
- ``LlamaIndex 256/32``: ``SentenceSplitter(chunk_size=256, chunk_overlap=32)`` nodes, the
  splitter docs/adapters.md shows;
- ``LlamaIndex 1024/200``: nodes of LlamaIndex's default splitter, passed explicitly by a user;
- ``LangChain 1000/200``: ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200,
  add_start_index=True)`` documents passed with ``chunk=False``.

Each is embedded once with the default embedder, as a build embeds it (the pieces of a short
block share the block's vector, ``hcg_core.blocks.embedding_texts``; cached under --cache), and ranked with
``HybridRanker`` under the defaults and under each variant that switches one heuristic off, graph
off (the graph route is judged by benchmarks/graph_signal_sweep.py and dev_suite.py). As the
dev suite asks every door, each system returns 40 units with no word budget and is scored on the
first 2,000 words: gold-context recall where the questions carry gold context, answer recall
elsewhere. The table gives variant - default in points with a 95% paired-bootstrap interval, per
door and set; ``*`` marks an interval wholly below zero (switching the heuristic off loses), ``+``
one wholly above (it wins). A heuristic stays when it loses on some set and wins on none.

    python benchmarks/ranking_variants.py --cache /tmp/hcg_cache \\
        --set medical=PATH/corpus.json:PATH/dev_questions.json \\
        --set psychology=PATH/all_abstracts.txt:PATH/qa.jsonl:PATH/sentences.jsonl ...
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from hcg_core.blocks import embedding_texts
from hcg_core.config import HybridConfig
from hcg_core.corpus import BLANK_LINE_RE, chunk_documents, load_inputs, reads_not_english
from hcg_core.embedders import embedder_by_name
from hcg_core.embedders.factory import EMBEDDER_HELP
from hcg_core.embedding import embed_texts
from hcg_core.eval.runner import evaluate, load_questions, load_sentences
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.retrieval.passages import split_passages
from hcg_core.types import Chunk, SourceDocument

K = 40
BUDGET = 2000
DEFAULT = HybridConfig()


class _RelevanceOrder(HybridRanker):
    """The picks returned best first by fused relevance, not in pick order."""

    def _pack(self, fused, pool, k, word_budget, ok=None):
        rows = super()._pack(fused, pool, k, word_budget, ok)
        return rows[np.lexsort((rows, -fused[rows]))]


class _PickOrderInBlocks(HybridRanker):
    """A cut paragraph's pieces left in pick order (the matched piece first), not reading order."""

    def _in_reading_order(self, rows, score):
        return rows, score, super()._in_reading_order(rows, score)[2]


class _PiecesWhole(HybridRanker):
    """A user's piece across a blank line ranked and returned whole, not as its parts."""

    def _split(self, chunks):
        units, parent = split_passages(chunks, self.config.passage_words)
        return units, parent, np.full((len(units), 2), -1, dtype=np.int64)


# name -> (ranker class, settings): each switches one heuristic off.
VARIANTS: dict[str, tuple[type[HybridRanker], HybridConfig]] = {
    "MMR off (lambda 1.0)": (HybridRanker, replace(DEFAULT, diversity=1.0)),
    "pick order off (best first)": (_RelevanceOrder, DEFAULT),
    "repeats kept (cut_repeats False)": (HybridRanker, replace(DEFAULT, cut_repeats=False)),
    "short blocks not grouped (group_blocks False)": (
        HybridRanker,
        replace(DEFAULT, group_blocks=False),
    ),
    "language gap not filled": (HybridRanker, replace(DEFAULT, fill_language_gap=False)),
    "block pieces in pick order (reading order off)": (_PickOrderInBlocks, DEFAULT),
    "pieces across a blank line whole (parts off)": (_PiecesWhole, DEFAULT),
    "gap by dense only (gap_char_grams False)": (
        HybridRanker,
        replace(DEFAULT, gap_char_grams=False),
    ),
}


def cached(embedder, texts: list[str], cache: Path, kind: str) -> np.ndarray:
    key = hashlib.blake2b("\x00".join(texts).encode(), digest_size=8).hexdigest()
    path = cache / f"{embedder.name}-{kind}-{key}.npy"
    if path.exists():
        return np.load(path)
    if kind == "query":
        emb = np.stack([np.asarray(embedder.embed_query(t), np.float32) for t in texts])
        emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    else:
        emb = embed_texts(embedder, texts, what=kind, progress=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def door_units(docs: list[SourceDocument]) -> dict[str, list[Chunk]]:
    """Each door's units of the same documents, as the adapters hand them to the ranker."""
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SentenceSplitter

    from langchain_hcg._convert import to_chunk
    from llama_index_hcg._convert import node_to_chunk

    li_docs = [LIDocument(text=d.text, id_=d.id) for d in docs]
    units = {"hcg chunker": chunk_documents(docs)}
    for name, splitter in (
        ("LlamaIndex 256/32", SentenceSplitter(chunk_size=256, chunk_overlap=32)),
        ("LlamaIndex 1024/200", SentenceSplitter()),
    ):
        units[name] = [node_to_chunk(n) for n in splitter.get_nodes_from_documents(li_docs)]
    lc = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200, add_start_index=True)
    split = lc.split_documents(
        [LCDocument(page_content=d.text, metadata={"source": d.id}) for d in docs]
    )
    # A user's split documents carry no id: the adapter names each by its content.
    units["LangChain 1000/200"] = [to_chunk(d) for d in split]
    return units


def door_sets(
    sets, embedder, cache: Path, *, limit: int | None = None, doors=None, flatten: bool = False
):
    """For each set and door: the questions, their vectors (and each question's row), the
    documents, the door's units and their vectors as a build embeds them (a short block's
    pieces share its vector, blocks.py); all embeddings cached under ``cache``. ``flatten``
    reads each document with its blank lines as spaces (text without paragraph breaks)."""
    for name, paths in sets:
        sentences = load_sentences(paths[2]) if len(paths) == 3 else None
        questions = load_questions(paths[1], limit=limit, sentences=sentences)
        qvecs = cached(embedder, [q.question for q in questions], cache, "query")
        row_of = {q.question: i for i, q in enumerate(questions)}
        docs, _ = load_inputs([paths[0]])
        if flatten:
            docs = [replace(d, text=BLANK_LINE_RE.sub(" ", d.text)) for d in docs]
        for door, chunks in door_units(docs).items():
            if doors and door not in doors:
                continue
            texts, rows = embedding_texts(chunks)
            emb = cached(embedder, texts, cache, "chunks")[rows]
            yield name, questions, qvecs, row_of, docs, door, chunks, emb


def versus(scores, base: np.ndarray) -> str:
    """The cells ``points | [lo, hi] | mark |`` of a variant's primary ``scores`` against the
    defaults' ``base``: the mean difference, its 95% paired-bootstrap interval, ``*`` when wholly
    below zero and ``+`` when wholly above."""
    from dev_suite import paired_interval  # benchmarks/ is on sys.path here

    variant = primary(scores)
    lo, hi = paired_interval(variant, base)
    mark = "*" if hi < 0 else "+" if lo > 0 else ""
    return f"{100 * (variant - base).mean():+.2f} | [{lo:+.2f}, {hi:+.2f}] | {mark} |"


def primary(scores) -> np.ndarray:
    return np.asarray(
        [s.recall if s.context_recall is None else s.context_recall for s in scores], float
    )


def main(argv: list[str] | None = None) -> int:
    from dev_suite import parse_set  # benchmarks/ is on sys.path here

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, type=parse_set)
    ap.add_argument("--cache", type=Path, required=True, help="embedding cache folder")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--embedder", default=None, help=f"{EMBEDDER_HELP}; default: 'default'")
    ap.add_argument("--door", action="append", default=None, help="only these doors' units")
    ap.add_argument("--variant", action="append", default=None, help="only these variants")
    args = ap.parse_args(argv)
    embedder = embedder_by_name(args.embedder)
    head = ["| set | units | default |", "|---|---|---|"]
    lines = [
        "| set | units | variant | variant - default (points) | 95% interval | |",
        "|---|---|---|---|---|---|",
    ]
    for name, questions, qvecs, row_of, _docs, door, chunks, emb in door_sets(
        args.set, embedder, args.cache, limit=args.limit, doors=args.door
    ):
        # Text all in English: the language-gap switches change nothing (not run).
        variants = {
            k: v
            for k, v in VARIANTS.items()
            if (not args.variant or k in args.variant)
            and (
                any(map(reads_not_english, (c.text for c in chunks)))
                or v[1].fill_language_gap == DEFAULT.fill_language_gap
                and v[1].gap_char_grams == DEFAULT.gap_char_grams
            )
        }
        systems = {}
        for vname, (cls, cfg) in {"default": (HybridRanker, DEFAULT), **variants}.items():
            ranker = cls(chunks, emb, cfg)

            def run(q: str, ranker: HybridRanker = ranker, qvecs=qvecs, row_of=row_of):
                return ranker.rank(q, qvecs[row_of[q]], None, k=K, use_graph=False)

            systems[vname] = run
        report = evaluate(systems, questions, budget=BUDGET)
        base = primary(report.scores["default"])
        head.append(f"| {name} | {door} ({len(chunks)}) | {base.mean():.3f} |")
        print(head[-1], flush=True)
        for vname in variants:
            lines.append(f"| {name} | {door} | {vname} | {versus(report.scores[vname], base)}")
            print(lines[-1], flush=True)
        print(f"done: {name}, {door} ({len(chunks)} units)", file=sys.stderr, flush=True)
    print("\n## summary\n")
    print("\n".join(head))
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
