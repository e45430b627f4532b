"""Ranking ideas measured against the defaults and not adopted: what each would change, per door and set.

The protocol of benchmarks/ranking_variants.py (each door's units, embedded as a build embeds
them, ranked by ``HybridRanker`` graph off, 40 asked with no budget, the first 2,000 words
scored). Each row is idea - defaults in points with its 95% paired-bootstrap interval; ``*`` marks
an interval wholly below zero, ``+`` one wholly above. The ideas, each a change a reader might
expect to close the medical margins of issue 24 (docs/evaluation.md, "Ideas measured, not
adopted"):

- ``section prior``: a unit's fused relevance gains 0.25 x the BM25 match (divided by the best
  section's) of the section it lies in, a section being the text between two line breaks of its
  document (the medical corpus's 45 source guides are such lines): where a unit sits, as context.
- ``acronyms kept``: BM25 keeps a word written in capitals whose lower case is a stopword (ALL,
  the leukaemia; IT; WHO) instead of dropping it; both the units and the question.
- ``straddle windows``: over a user's pieces of text without paragraph breaks (character spans),
  a window from the middle of each piece to the middle of the next joins the candidates, reading
  the mean of the two pieces' vectors (nothing more embedded): window starts twice as dense;
  ``straddle windows, long text only``: none next to a piece of a short block (an abstract a
  splitter cut, ``blocks.short_blocks``), whose pieces already come back together.
- ``long-text pieces by halves``: each of a user's pieces outside a short block cut at the
  sentence end nearest its middle into two units, each reading the piece's vector (the
  "windows by halves" of an earlier release, for a user's pieces).
- ``BM25 k1 K b B``: the text signal's BM25 with other saturation and length normalisation than
  its k1 1.5, b 0.75 (``BM25_SETTINGS``: Lucene's k1 1.2, a stronger k1 2.0, b 0.5 and 0.9).
- ``long texts embedded whole``: a text longer than MiniLM's 256 tokens (which the embedder cuts)
  embedded as the token-weighted mean of sentence-bounded pieces that each fit, so no word of a
  unit is left out of its vector (``token_pieces``).
- ``sentence proximity``: a third text signal, the best sentence of a unit scored by the summed
  IDF of the distinct question words it holds (two at least), on the candidates of BM25 and
  dense, standardised as they are and added with weight 0.5 where a text signal found the unit:
  a unit whose question words stand together in one sentence over one that scatters them.
- ``chunk W/O``: hcg's chunker with W-word windows and O words of overlap instead of 200/40
  (the new chunks are embedded; only for the ``hcg chunker`` units).

    python benchmarks/ranking_ideas.py --cache /tmp/hcg_cache \\
        --set medical=PATH/corpus.json:PATH/dev_questions.json ...

``--flatten`` reads each corpus with its blank lines as spaces: whether a rule aimed at text
without paragraph breaks costs such text when its questions need whole passages (HolisQA).

Needs the ``bench`` extra (the frameworks' splitters), as ranking_variants.py does.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from ranking_variants import BUDGET, K, cached, door_sets, primary, versus

from hcg_core.blocks import embedding_texts
from hcg_core.config import HybridConfig
from hcg_core.corpus import chunk_documents
from hcg_core.embedders import embedder_by_name
from hcg_core.embedders.minilm import DEFAULT_MAX_TOKENS, find_tokenizer_file
from hcg_core.eval.runner import evaluate
from hcg_core.retrieval.hybrid import HybridRanker, standardise
from hcg_core.retrieval.lexical import STOPWORDS, BM25Index, fold_plural, tokenize
from hcg_core.types import Chunk, Document

SECTION_WEIGHT = 0.25
CHUNKINGS = ((200, 20), (160, 32))
PROXIMITY_WEIGHT = 0.5
BM25_SETTINGS = ((1.2, 0.75), (2.0, 0.75), (1.5, 0.5), (1.5, 0.9))
# Tokens a piece may hold: MiniLM's 256 less [CLS] and [SEP].
PIECE_TOKENS = DEFAULT_MAX_TOKENS - 2
_CASED_TOKEN = re.compile(r"[A-Za-z0-9]+")


def acronym_tokens(text: str) -> list[str]:
    """``lexical.tokenize``, except that a stopword written in capitals is kept (an acronym).

    >>> acronym_tokens("All ALL patients")
    ['all', 'patient']
    """
    out = []
    for t in _CASED_TOKEN.findall(text):
        low = t.lower()
        if len(low) > 1 and (low not in STOPWORDS or t.isupper()):
            out.append(fold_plural(low))
    return out


def unit_sections(chunks: Sequence[Chunk], docs: Sequence[Document]) -> tuple[np.ndarray, list]:
    """Each unit's section (its document's text between two line breaks where the unit starts),
    and the sections' texts."""
    texts = {d.id: d.text for d in docs}
    first: dict[str, int] = {}
    sections: list[str] = []
    starts: dict[str, list[int]] = {}
    for doc_id, text in texts.items():
        bounds = [0] + [m.end() for m in re.finditer("\n", text)]
        first[doc_id] = len(sections)
        starts[doc_id] = bounds
        sections += [text[a:b] for a, b in zip(bounds, bounds[1:] + [len(text)], strict=True)]
    rows = np.zeros(len(chunks), dtype=np.int64)
    at: dict[str, int] = {}
    for i, c in enumerate(chunks):
        doc = c.doc_id if c.doc_id in texts else next(iter(texts))
        probe = c.text.strip()[:80]
        pos = texts[doc].find(probe, at.get(doc, 0))
        if pos < 0:
            pos = max(texts[doc].find(probe), 0)
        at[doc] = pos
        rows[i] = first[doc] + np.searchsorted(starts[doc], pos, side="right") - 1
    return rows, sections


class SectionPrior(HybridRanker):
    """The defaults, plus ``SECTION_WEIGHT`` x the unit's section's BM25 match on what a text
    signal found."""

    def __init__(self, chunks, emb, config, *, section_of, sections):
        super().__init__(chunks, emb, config)
        self.unit_section = np.asarray(section_of)[self.parent]
        self.section_bm25 = BM25Index(sections)

    def _fused(self, c):
        fused = super()._fused(c)
        match = self.section_bm25.scores(c.query)
        peak = float(match.max()) if match.size else 0.0
        if peak <= 0:
            return fused
        return fused + SECTION_WEIGHT * (match / peak)[self.unit_section] * (fused > 0)


class SentenceProximity(HybridRanker):
    """The defaults, plus ``PROXIMITY_WEIGHT`` x the standardised ``proximity`` of the candidates
    where a text signal found them."""

    def __init__(self, chunks, emb, config):
        super().__init__(chunks, emb, config)
        self.sentence_words = [
            [frozenset(tokenize(s)) for s in _SENTENCE_GAP.split(u.text) if s.strip()]
            for u in self.units
        ]
        idf = self.bm25.idf
        self.idf = {t: float(idf[i]) for t, i in self.bm25.vocabulary.items()}

    def proximity(self, query: str, rows: np.ndarray) -> np.ndarray:
        """Per unit of ``rows``: the best sentence's summed IDF of the distinct query words it
        holds, where it holds two at least (0 elsewhere)."""
        words = set(tokenize(query))
        out = np.zeros(len(self.units))
        for r in rows.tolist():
            hits = [w & words for w in self.sentence_words[r]]
            out[r] = max(
                (sum(self.idf.get(t, 0.0) for t in h) for h in hits if len(h) > 1), default=0
            )
        return out

    def _fused(self, c):
        fused = super()._fused(c)
        rows = np.union1d(c.bm_order, c.dn_order)
        prox = standardise(self.proximity(c.query, rows), rows)
        return fused + PROXIMITY_WEIGHT * prox * (fused > 0)


def _char_span(c: Chunk) -> tuple[int, int] | None:
    """A piece's characters in its document (LlamaIndex offsets, or LangChain's start index)."""
    meta = c.metadata or {}
    if isinstance(meta.get("start_char_idx"), int) and isinstance(meta.get("end_char_idx"), int):
        return meta["start_char_idx"], meta["end_char_idx"]
    if isinstance(meta.get("start_index"), int):
        return meta["start_index"], meta["start_index"] + len(c.text)
    return None


def straddles(
    chunks: Sequence[Chunk],
    emb: np.ndarray,
    docs: Sequence[Document],
    skip: np.ndarray | None = None,
) -> tuple[list[Chunk], np.ndarray]:
    """Windows from the middle of each piece to the middle of the next (character spans, no
    blank line inside), with the mean of the two vectors; none next to a piece ``skip`` marks."""
    texts = {d.id: d.text for d in docs}
    extra, vecs = [], []
    for i in range(len(chunks) - 1):
        if skip is not None and (skip[i] or skip[i + 1]):
            continue
        a, b = chunks[i], chunks[i + 1]
        sa, sb = _char_span(a), _char_span(b)
        if a.doc_id != b.doc_id or a.doc_id not in texts or sa is None or sb is None:
            continue
        text = texts[a.doc_id]
        lo, hi = sum(sa) // 2, sum(sb) // 2
        while lo < len(text) and not text[lo].isspace():
            lo += 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        piece = text[lo:hi]
        if not piece.strip() or "\n\n" in piece:
            continue
        extra.append(
            Chunk(f"{a.id}~{b.id}", piece, a.doc_id, {"start_char_idx": lo, "end_char_idx": hi})
        )
        v = emb[i] + emb[i + 1]
        vecs.append(v / max(float(np.linalg.norm(v)), 1e-12))
    return extra, np.asarray(vecs, np.float32).reshape(-1, emb.shape[1])


_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+")


def halves(
    chunks: Sequence[Chunk], emb: np.ndarray, skip: np.ndarray
) -> tuple[list[Chunk], np.ndarray]:
    """Each piece with a character span, not marked in ``skip`` and without a blank line, cut
    at the sentence end nearest its middle into two pieces reading its vector; the rest as they
    are."""
    out, rows = [], []
    for i, c in enumerate(chunks):
        span = _char_span(c)
        cuts = [m.end() for m in _SENTENCE_GAP.finditer(c.text.rstrip())]
        if skip[i] or span is None or "\n\n" in c.text or not cuts:
            out.append(c)
            rows.append(i)
            continue
        cut = min(cuts, key=lambda x: abs(x - len(c.text) // 2))
        for part, (a, b) in ((1, (0, cut)), (2, (cut, len(c.text)))):
            meta = {"start_char_idx": span[0] + a, "end_char_idx": span[0] + b}
            out.append(Chunk(f"{c.id}#{part}", c.text[a:b], c.doc_id, meta))
            rows.append(i)
    return out, emb[np.asarray(rows, dtype=np.int64)]


def token_pieces(text: str, count: Callable[[str], int], limit: int) -> list[str] | None:
    """``text`` cut at sentence ends into about equal pieces of at most ``limit`` tokens each
    (``count`` tokens a text; a sentence longer than ``limit`` stays one piece), or None where
    the whole text fits."""
    total = count(text)
    if total <= limit:
        return None
    sentences = [s for s in _SENTENCE_GAP.split(text) if s.strip()]
    target = total / -(-total // limit)
    out: list[str] = []
    current: list[str] = []
    held = 0
    for s in sentences:
        n = count(s)
        if current and held + n > limit:
            out.append(" ".join(current))
            current, held = [], 0
        current.append(s)
        held += n
        if held >= target:
            out.append(" ".join(current))
            current, held = [], 0
    if current:
        out.append(" ".join(current))
    return out


def whole_vectors(chunks: Sequence[Chunk], embedder, cache: Path) -> np.ndarray:
    """Each unit's vector as a build embeds it, except that a text over ``PIECE_TOKENS`` reads
    the token-weighted mean of its ``token_pieces``' vectors."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(find_tokenizer_file()))
    tokenizer.no_truncation()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    texts, rows = embedding_texts(chunks)
    vecs = cached(embedder, texts, cache, "chunks").copy()
    pieces, owner, weight = [], [], []
    for i, text in enumerate(texts):
        for piece in token_pieces(text, count, PIECE_TOKENS) or []:
            pieces.append(piece)
            owner.append(i)
            weight.append(count(piece))
    print(f"{len(set(owner))} of {len(texts)} texts over {PIECE_TOKENS} tokens", file=sys.stderr)
    if pieces:
        weighted = cached(embedder, pieces, cache, "pieces") * np.asarray(weight)[:, None]
        sums = np.zeros_like(vecs)
        np.add.at(sums, np.asarray(owner), weighted)
        long = np.unique(owner)
        vecs[long] = sums[long] / np.linalg.norm(sums[long], axis=1, keepdims=True)
    return vecs[rows]


def ideas(
    door: str, default: HybridRanker, emb: np.ndarray, docs: list[Document], embedder, cache: Path
) -> dict[str, Callable[[], HybridRanker]]:
    """The ideas that apply to the units of ``default`` (the door's ranker on the defaults, its
    chunks' vectors ``emb``), each a ranker maker."""
    cfg, chunks = default.config, list(default.chunks)
    out: dict[str, Callable[[], HybridRanker]] = {}

    def section() -> HybridRanker:
        rows, sections = unit_sections(chunks, docs)
        return SectionPrior(chunks, emb, cfg, section_of=rows, sections=sections)

    def acronyms() -> HybridRanker:
        bm25 = BM25Index([u.text for u in default.units], tokenizer=acronym_tokens)
        return HybridRanker(chunks, emb, cfg, bm25=bm25)

    out["section prior"] = section
    out["acronyms kept"] = acronyms
    for k1, b in BM25_SETTINGS:
        out[f"BM25 k1 {k1} b {b}"] = lambda k1=k1, b=b: HybridRanker(
            chunks, emb, cfg, bm25=BM25Index([u.text for u in default.units], k1=k1, b=b)
        )
    out["sentence proximity"] = lambda: SentenceProximity(chunks, emb, cfg)
    out["long texts embedded whole"] = lambda: HybridRanker(
        chunks, whole_vectors(chunks, embedder, cache), cfg
    )
    extra, vecs = straddles(chunks, emb, docs)
    if extra:
        out["straddle windows"] = lambda: HybridRanker(
            list(chunks) + extra, np.vstack([emb, vecs]), cfg
        )
    # Long text: pieces outside every short block (blocks.short_blocks), whose pieces already
    # come back together.
    in_block = np.zeros(len(chunks), dtype=bool)
    if default.blocks is not None:
        in_block[default.parent[default.blocks >= 0]] = True
    long_extra, long_vecs = straddles(chunks, emb, docs, skip=in_block)
    if long_extra:
        out["straddle windows, long text only"] = lambda: HybridRanker(
            list(chunks) + long_extra, np.vstack([emb, long_vecs]), cfg
        )
    cut, cut_emb = halves(chunks, emb, in_block)
    if len(cut) > len(chunks):
        out["long-text pieces by halves"] = lambda: HybridRanker(cut, cut_emb, cfg)
    if door == "hcg chunker":
        for words, overlap in CHUNKINGS:

            def chunked(words: int = words, overlap: int = overlap) -> HybridRanker:
                mine = chunk_documents(docs, chunk_words=words, overlap_words=overlap)
                print(f"chunk {words}/{overlap}: {len(mine)} chunks", file=sys.stderr)
                texts, rows = embedding_texts(mine)
                return HybridRanker(mine, cached(embedder, texts, cache, "chunks")[rows], cfg)

            out[f"chunk {words}/{overlap}"] = chunked
    return out


def main(argv: list[str] | None = None) -> int:
    from dev_suite import parse_set  # benchmarks/ is on sys.path here

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, type=parse_set)
    ap.add_argument("--cache", type=Path, required=True, help="embedding cache folder")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--door", action="append", default=None, help="only these doors' units")
    ap.add_argument("--idea", action="append", default=None, help="only these ideas")
    ap.add_argument(
        "--flatten",
        action="store_true",
        help="read each corpus with its blank lines as spaces (text without paragraph breaks)",
    )
    args = ap.parse_args(argv)
    embedder = embedder_by_name(None)
    lines = ["| set | units | default | idea | idea - default (points) | 95% interval | |"]
    lines.append("|---|---|---|---|---|---|---|")
    for name, questions, qvecs, row_of, docs, door, chunks, emb in door_sets(
        args.set, embedder, args.cache, limit=args.limit, doors=args.door, flatten=args.flatten
    ):
        default = HybridRanker(chunks, emb, HybridConfig())
        makers = {
            k: v
            for k, v in ideas(door, default, emb, docs, embedder, args.cache).items()
            if not args.idea or k in args.idea
        }
        if not makers:
            continue
        rankers = {"default": default}
        rankers.update({k: make() for k, make in makers.items()})
        systems = {
            k: (lambda q, r=r, v=qvecs, at=row_of: r.rank(q, v[at[q]], None, k=K, use_graph=False))
            for k, r in rankers.items()
        }
        report = evaluate(systems, questions, budget=BUDGET)
        base = primary(report.scores["default"])
        for idea in makers:
            lines.append(
                f"| {name} | {door} ({len(chunks)}) | {base.mean():.3f} | {idea} "
                f"| {versus(report.scores[idea], base)}"
            )
            print(lines[-1], flush=True)
        print(f"done: {name}, {door}", file=sys.stderr, flush=True)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
