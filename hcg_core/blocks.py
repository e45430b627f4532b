"""Which of a user's units are pieces of one short text block (a paragraph or abstract).

hcg's chunker keeps a blank-line block of up to ``corpus.WHOLE_BLOCK_FACTOR`` x
``corpus.DEFAULT_CHUNK_WORDS`` words whole, as one chunk: its sentences answer questions together.
A user's own splitter (LlamaIndex ``SentenceSplitter(256, 32)``, LangChain's
``RecursiveCharacterTextSplitter(1000, 200)``) cuts such a block into pieces. So:

- at build time the block is embedded once, as hcg's chunk would be, and each piece takes its
  vector (``embedding_texts``): the dense signal reads the passage, and a build embeds about as
  many texts as hcg's own chunks;
- at query time the ranker packs the pieces of one short block together (``hybrid.mmr_pack``'s
  ``groups``): picked for one, the rest follow it, as they would inside hcg's own chunk, and the
  run comes back in reading order (``reading_order``), so the block reads as it was written;
- a piece that straddles a paragraph break (``SentenceSplitter`` runs on across blank lines: most
  of its 256-token pieces of HolisQA's abstracts hold the end of one abstract and the start of the
  next) is ranked as its parts (``blank_line_parts``), each in its own paragraph and reading the
  vector of a piece centred there (``part_vector_rows``), and comes back as the node, holding the
  parts the query picked (``repeats.joined_parts``): a block then comes back whole, without its
  neighbours' halves.

Long blocks (text without paragraph breaks, a section of thousands of words) are left piece by
piece, as hcg's chunker windows them.

Only the units' spans (``chunk_spans``) and texts are read, never the documents. A block is a run
of units that overlap or touch in their document: the splitter's pieces of one stretch of text,
at most ``_GAP`` characters apart (the space it stripped between two). The blank lines their texts
hold (``corpus.BLANK_LINE_RE``, where hcg's chunker ends paragraphs) cut the run into blocks; a
wider gap is a paragraph break the splitter stripped. Units with word spans are hcg's own chunks,
which already hold a short block whole, and passages were asked for finer than the chunks: neither
is ever grouped (``groupable``). Pure functions over arrays, and ``vectors_of_chunks``, which
embeds a build's chunks so.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .corpus import BLANK_LINE_RE, DEFAULT_CHUNK_WORDS, WHOLE_BLOCK_FACTOR
from .embedding import embed_texts
from .types import Chunk

if TYPE_CHECKING:
    from .ports import Embedder

# Characters between two pieces of one stretch of text: a splitter strips the space it cut at; a
# stripped blank line ("\n\n") leaves two or more.
_GAP = 1

SHORT_BLOCK_WORDS = WHOLE_BLOCK_FACTOR * DEFAULT_CHUNK_WORDS
"""A block of at most this many words is one passage: hcg's chunker keeps it as one chunk."""


def short_blocks(
    spans: np.ndarray,
    texts: Sequence[str],
    word_counts: np.ndarray,
    in_chars: np.ndarray,
    max_words: int = SHORT_BLOCK_WORDS,
) -> np.ndarray:
    """Block number of each unit, or -1 where the unit is alone in its block or the block is long.

    ``spans`` is ``(n, 3)`` (document, start, end); ``texts`` the units' texts; ``word_counts``
    their words; ``in_chars`` whether a unit's span counts characters (only those are grouped).
    Units overlapping or touching form a run; the blank lines inside their texts cut the run into
    blocks; a unit belongs to the block holding its middle. A block's words are its extent times
    its units' words per character.

    >>> spans = np.array([[0, 0, 10], [0, 11, 20], [0, 30, 40], [0, 38, 52]])
    >>> texts = ["a" * 10, "a" * 9, "b" * 10, "bbbb\\n\\nccccccccc"]
    >>> short_blocks(spans, texts, np.array([2, 2, 2, 2]), np.ones(4, bool), max_words=10).tolist()
    [0, 0, -1, -1]
    """
    n = len(texts)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    order = np.lexsort((spans[:, 1], spans[:, 0])).tolist()
    rows = spans.tolist()
    run: list[int] = []
    reach = 0
    next_id = 0
    chars = in_chars.tolist()
    for r in order:
        doc, start, end = rows[r]
        if not chars[r]:
            continue
        if run and rows[run[0]][0] == doc and start <= reach + _GAP:
            run.append(r)
            reach = max(reach, end)
            continue
        next_id = _number_run(run, rows, texts, word_counts, max_words, out, next_id)
        run, reach = [r], end
    _number_run(run, rows, texts, word_counts, max_words, out, next_id)
    return out


def _number_run(
    run: list[int],
    rows: list[list[int]],
    texts: Sequence[str],
    word_counts: np.ndarray,
    max_words: int,
    out: np.ndarray,
    next_id: int,
) -> int:
    """Number the short blocks of one run of overlapping units in ``out``; the next free number."""
    if len(run) < 2:
        return next_id
    cuts: set[float] = set()
    for r in run:
        _, start, end = rows[r]
        text = texts[r]
        for m in BLANK_LINE_RE.finditer(text):
            # The text's characters map onto the span in proportion (exact for character spans).
            cuts.add(start + (end - start) * m.start() / max(len(text), 1))
    bounds = sorted(cuts)
    pieces: dict[int, list[int]] = {}
    for r in run:
        _, start, end = rows[r]
        pieces.setdefault(bisect.bisect(bounds, (start + end) / 2), []).append(r)
    lo_run = min(rows[r][1] for r in run)
    hi_run = max(rows[r][2] for r in run)
    for segment, members in sorted(pieces.items()):
        if len(members) < 2:
            continue
        lo = max(lo_run, bounds[segment - 1]) if segment else lo_run
        hi = min(hi_run, bounds[segment]) if segment < len(bounds) else hi_run
        lo = max(lo, min(rows[r][1] for r in members))
        hi = min(hi, max(rows[r][2] for r in members))
        extent = sum(rows[r][2] - rows[r][1] for r in members)
        words = (hi - lo) * float(sum(int(word_counts[r]) for r in members)) / max(extent, 1)
        if words <= max_words:
            out[members] = next_id
            next_id += 1
    return next_id


def reading_order(blocks: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run of consecutive results from one block put in document order; all else in place.

    ``blocks`` is each result's block (-1 for none) and ``starts`` its start in its document, in
    the order the results were picked. Returns ``(order, lead)``: the positions in reading order,
    and for each position of the picked order the first position of its run (the piece that was
    picked for the query, which the others followed).

    Why: a splitter's pieces overlap or touch, and a sentence it cut in two reads whole only when
    the earlier piece comes first and the later one continues it (``repeats.without_repeats``).

    >>> order, lead = reading_order(np.array([-1, 4, 4, 4, -1]), np.array([9, 50, 10, 90, 0]))
    >>> order.tolist(), lead.tolist()
    ([0, 2, 1, 3, 4], [0, 1, 1, 1, 4])
    """
    n = blocks.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (blocks[1:] < 0) | (blocks[1:] != blocks[:-1])
    run = np.cumsum(new_run) - 1
    order = np.lexsort((starts, run))
    return order.astype(np.int64), np.flatnonzero(new_run)[run].astype(np.int64)


# An offset beyond any real document (input files are capped at 50 MB) is damaged metadata, not
# a span; the cap keeps a span's sums and doubles inside int64 (a user's ``start_index`` of 10**30
# overflowed the array).
_MAX_OFFSET = 2**40


def _offset(value: Any) -> bool:
    """Whether ``value`` can be a span's offset: an int (not a bool) of at most ``_MAX_OFFSET``."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_OFFSET


def chunk_spans(chunks: Sequence[Chunk], docs: dict[str, int]) -> np.ndarray | None:
    """``(n, 3)`` int64 (document number, start, end) when every chunk carries its span in its
    document; ``docs`` numbers the documents (and learns the new ones).

    A span is read, in this order, from ``start_word``/``end_word`` (hcg's chunker), from
    ``start_char_idx``/``end_char_idx`` (a LlamaIndex node's character offsets, which the adapter
    copies), or from ``start_index`` (LangChain's text splitters with ``add_start_index=True``)
    plus the text's length. Only spans of one document are ever compared, so words in one
    document and characters in another do not mix.

    >>> chunk_spans([Chunk("a", "xyz", doc_id="d", metadata={"start_index": 5})], {}).tolist()
    [[0, 5, 8]]
    """
    out = np.zeros((len(chunks), 3), dtype=np.int64)
    for i, c in enumerate(chunks):
        meta: Mapping[str, Any] = c.metadata or {}
        span = next(
            (
                (meta[a], meta[b])
                for a, b in (("start_word", "end_word"), ("start_char_idx", "end_char_idx"))
                if _offset(meta.get(a)) and _offset(meta.get(b))
            ),
            None,
        )
        if span is None and _offset(meta.get("start_index")):
            span = (meta["start_index"], meta["start_index"] + len(c.text))
        if span is None:
            return None
        doc = c.doc_id or str(meta.get("doc_id", ""))
        out[i] = (docs.setdefault(doc, len(docs)), *span)
    return out


def groupable(units: Sequence[Chunk]) -> np.ndarray:
    """Whether each unit may be grouped: its span counts characters (a user's splitter). Word
    spans are hcg's own chunks (``start_word``), which already keep a block whole; passages
    (``passage_of``) were asked for finer than the chunks."""
    return np.fromiter(
        (not {"start_word", "passage_of"} & (u.metadata or {}).keys() for u in units),
        bool,
        len(units),
    )


def embedding_texts(chunks: Sequence[Chunk]) -> tuple[list[str], np.ndarray]:
    """The texts to embed for ``chunks`` and, for each chunk, the row of its vector among them.

    A piece of a short block (``short_blocks``) takes the vector of the block's whole text, which
    is embedded once: its pieces joined where they overlap or touch (``block_text``). Every other
    chunk is embedded as itself. Over HolisQA's abstracts cut by ``SentenceSplitter(256, 32)`` or
    ``RecursiveCharacterTextSplitter(1000, 200)`` this embeds 1,050-1,110 texts for 1,600-2,400
    pieces, as many as hcg's own chunks, at -0.2 to +0.9 points of gold-context recall
    (docs/evaluation.md).

    >>> pieces = [Chunk("a", "One two", doc_id="d", metadata={"start_index": 0}),
    ...           Chunk("b", "two three", doc_id="d", metadata={"start_index": 4})]
    >>> embedding_texts(pieces)
    (['One two three'], array([0, 0]))
    """
    rows = np.arange(len(chunks), dtype=np.int64)
    texts = [c.text for c in chunks]
    spans = chunk_spans(chunks, {})
    if spans is None:
        return texts, rows
    words = np.fromiter((len(t.split()) for t in texts), np.int64, len(texts))
    blocks = short_blocks(spans, texts, words, groupable(chunks))
    if not (blocks >= 0).any():
        return texts, rows
    members: dict[int, list[int]] = {}
    for i, b in enumerate(blocks.tolist()):
        if b >= 0:
            members.setdefault(b, []).append(i)
    out: list[str] = []
    row_of_block: dict[int, int] = {}
    for i, b in enumerate(blocks.tolist()):
        if b < 0:
            rows[i] = len(out)
            out.append(texts[i])
        elif b in row_of_block:
            rows[i] = row_of_block[b]
        else:
            m = members[b]
            rows[i] = row_of_block[b] = len(out)
            out.append(block_text([texts[j] for j in m], spans[m, 1:]))
    return out, rows


def block_text(texts: Sequence[str], spans: np.ndarray) -> str:
    """The text of one block from its pieces' texts and ``(start, end)`` character spans: each
    piece adds what lies past the ones before it; touching pieces are joined by a space.

    >>> block_text(["cd ef", "ab cd"], np.array([[3, 8], [0, 5]]))
    'ab cd ef'
    """
    text, reach = "", None
    for i in np.lexsort((spans[:, 1], spans[:, 0])).tolist():
        piece, (start, end) = texts[i], spans[i].tolist()
        if reach is None:
            text, reach = piece, end
        elif start >= reach or end - start != len(piece):  # touching, or offsets of another text
            text, reach = f"{text} {piece}", end
        elif end > reach:
            text, reach = text + piece[reach - start :], end
    return text


def blank_line_parts(
    units: Sequence[Chunk], parent: np.ndarray
) -> tuple[tuple[Chunk, ...], np.ndarray, np.ndarray]:
    """``units`` with every groupable one (``groupable``) cut at the blank lines its text holds.

    Returns the units, the chunk row of each (``parent``'s), and each unit's ``(start, end)``
    characters in its chunk's text, ``(-1, -1)`` for a unit left whole. A part keeps its unit's
    id, ``doc_id`` and metadata with the character offsets moved to the part, so spans, blocks and
    repeats read it in place; ``repeats.joined_parts`` turns the picked parts back into the node.

    >>> units = [Chunk("n", "end of A.\\n\\nStart of B", doc_id="d", metadata={"start_char_idx": 5,
    ...          "end_char_idx": 27})]
    >>> parts, rows, at = blank_line_parts(units, np.array([0]))
    >>> [(p.id, p.text, p.metadata["start_char_idx"]) for p in parts], at.tolist()
    ([('n', 'end of A.', 5), ('n', 'Start of B', 16)], [[0, 9], [11, 21]])
    """
    out: list[Chunk] = []
    rows: list[int] = []
    at: list[tuple[int, int]] = []
    cut = groupable(units).tolist()
    for u, row, may in zip(units, parent.tolist(), cut, strict=True):
        breaks = list(BLANK_LINE_RE.finditer(u.text)) if may else []
        if not breaks:
            out.append(u)
            rows.append(row)
            at.append((-1, -1))
            continue
        edges = [0, *(e for m in breaks for e in (m.start(), m.end())), len(u.text)]
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            piece = u.text[a:b]
            a += len(piece) - len(piece.lstrip())
            b = a + len(piece.strip())
            if b <= a:
                continue
            meta = dict(u.metadata or {})
            for key, end_key in (("start_char_idx", "end_char_idx"), ("start_index", None)):
                if isinstance(meta.get(key), int):
                    if end_key is not None:
                        meta[end_key] = meta[key] + b
                    meta[key] += a
            out.append(Chunk(id=u.id, text=u.text[a:b], doc_id=u.doc_id, metadata=meta))
            rows.append(row)
            at.append((a, b))
    return (
        tuple(out),
        np.asarray(rows, dtype=np.int64),
        np.asarray(at, dtype=np.int64).reshape(-1, 2),
    )


def part_vector_rows(spans: np.ndarray, parent: np.ndarray, chunk_spans_: np.ndarray) -> np.ndarray:
    """The chunk row whose vector each unit reads: its own chunk's, unless that chunk is centred
    in another paragraph, then a chunk centred in the unit's paragraph (when there is one).

    A user's piece is embedded as the short block holding its middle (``embedding_texts``), so a
    part of it in the next paragraph would read the wrong passage's vector. ``spans`` are the
    units' ``(document, start, end)``, ``chunk_spans_`` the chunks'; a paragraph is a run of units
    that overlap or touch (a blank line between two leaves a wider gap).

    >>> units = np.array([[0, 0, 9], [0, 11, 20], [0, 20, 40]])  # the 2nd is a part of chunk 0
    >>> chunks = np.array([[0, 0, 20], [0, 20, 40]])
    >>> part_vector_rows(units, np.array([0, 0, 1]), chunks).tolist()
    [0, 1, 1]
    """
    n = parent.size
    if n == 0:
        return parent.copy()
    run = np.empty(n, dtype=np.int64)
    lo: list[int] = []
    hi: list[int] = []
    docs: list[int] = []
    for r in np.lexsort((spans[:, 1], spans[:, 0])).tolist():
        doc, start, end = spans[r].tolist()
        if not docs or docs[-1] != doc or start > hi[-1] + _GAP:
            docs.append(doc)
            lo.append(start)
            hi.append(end)
        else:
            hi[-1] = max(hi[-1], end)
        run[r] = len(docs) - 1
    # Twice a chunk's middle, keyed by document: the chunks centred in a run are one range.
    shift = 2 * int(max(int(chunk_spans_[:, 2].max()), max(hi))) + 1
    key = chunk_spans_[:, 0] * shift + chunk_spans_[:, 1] + chunk_spans_[:, 2]
    by_key = np.argsort(key, kind="stable")
    run_lo = np.asarray(docs, np.int64) * shift + 2 * np.asarray(lo, np.int64)
    run_hi = np.asarray(docs, np.int64) * shift + 2 * np.asarray(hi, np.int64)
    first = np.searchsorted(key[by_key], run_lo, side="left")
    found = first < key.size
    found[found] = key[by_key[first[found]]] <= run_hi[found]
    own = key[parent]
    centred = (own >= run_lo[run]) & (own <= run_hi[run])
    other = ~centred & found[run]
    out = parent.copy()
    out[other] = by_key[first[run[other]]]
    return out


def vectors_of_chunks(
    embedder: Embedder, chunks: Sequence[Chunk], *, what: str = "chunks", progress: bool = False
) -> np.ndarray:
    """One vector per chunk: the pieces of a short text block a user's splitter cut share the
    block's, embedded once (``embedding_texts``); every other chunk is embedded as itself."""
    texts, rows = embedding_texts(chunks)
    return embed_texts(embedder, texts, what=what, progress=progress)[rows]
