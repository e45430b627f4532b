"""Which of a user's units are pieces of one short text block (a paragraph or abstract).

hcg's chunker keeps a blank-line block of up to ``corpus.WHOLE_BLOCK_FACTOR`` x
``corpus.DEFAULT_CHUNK_WORDS`` words whole, as one chunk: its sentences answer questions together.
A user's own splitter (LlamaIndex ``SentenceSplitter(256, 32)``, LangChain's
``RecursiveCharacterTextSplitter(1000, 200)``) cuts such a block into pieces. The ranker then packs
the pieces of one short block together (``hybrid.mmr_pack``'s ``groups``): picked for one, the rest
follow it, as they would inside hcg's own chunk, and the run comes back in reading order
(``reading_order``), so the block reads as it was written. Long blocks (text without paragraph breaks, a
section of thousands of words) are left to the ranker, piece by piece, as hcg's chunker windows them.

Only the units' character spans and texts are read, never the documents. A block is a run of
units that overlap or touch in their document: the splitter's pieces of one stretch of text, at
most ``_GAP`` characters apart (the space it stripped between two). The blank lines their texts
hold (``corpus.BLANK_LINE_RE``, where hcg's chunker ends paragraphs) cut the run into blocks; a
wider gap is a paragraph break the splitter stripped. Units with word spans are hcg's own chunks,
which already hold a short block whole: they are never grouped. Pure functions over arrays.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from ..corpus import BLANK_LINE_RE, DEFAULT_CHUNK_WORDS, WHOLE_BLOCK_FACTOR

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
