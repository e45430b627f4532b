"""Split stored chunks into shorter passages for the hybrid mode to rank and pack (an option).

Why an option: a 200-word chunk that answers a question often holds it in one half, and packing
~100-word passages fits more distinct text into a word budget, but where an answer spans several
sentences of one paragraph splitting it loses more (docs/evaluation.md). Ranking only the windows
by halves was a default once; it was removed with the leave-one-out rule (docs/evaluation.md). ``passage_words`` > 0 splits every
chunk. The chunks themselves, and their embeddings, stay as built: a passage takes its dense score
from its chunk, so nothing is embedded twice. Cuts fall at sentence ends where one is near.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

# The chunker's own word and sentence-end patterns, so passages cut where chunks would.
from ..corpus import SENTENCE_END_RE, WORD_RE
from ..types import Chunk, Passage


def _cuts(words: Sequence[str], target: int) -> list[int]:
    """Word offsets cutting ``words`` into round(n / target) near-equal parts at sentence ends.

    A cut moves to the nearest sentence end within a third of a part's length, else stays put.

    >>> _cuts("a b. c d e. f g h".split(), 4)
    [0, 5, 8]
    >>> _cuts("a b c".split(), 4)
    [0, 3]
    """
    n = len(words)
    parts = max(1, round(n / target))
    size = n / parts
    cuts = [0]
    for p in range(1, parts):
        at = round(p * size)
        best = at
        for d in range(int(size // 3) + 1):
            if 0 < at + d < n and SENTENCE_END_RE.search(words[at + d - 1]):
                best = at + d
                break
            if 0 < at - d < n and SENTENCE_END_RE.search(words[at - d - 1]):
                best = at - d
                break
        if cuts[-1] < best < n:
            cuts.append(best)
    cuts.append(n)
    return cuts


def split_passages(
    chunks: Sequence[Chunk], target_words: int, only: Sequence[bool] | None = None
) -> tuple[tuple[Chunk, ...], np.ndarray]:
    """Passages of about ``target_words`` words, and the row of the chunk each comes from.

    A chunk shorter than 1.5 passages stays whole (the same object, same id). Otherwise each passage
    is a :class:`~hcg_core.types.Passage` with id ``"<chunk id>#p<i>"``, the original text of its
    words (whitespace inside kept), its character offsets in the chunk's text, the chunk's
    ``doc_id`` and metadata plus ``passage_of`` (the chunk's id), ``passage`` (i), and
    ``start_word``/``end_word`` (and a LlamaIndex node's or LangChain's character offsets) shifted
    to the passage when the chunk has them. ``target_words`` 0 returns the chunks unchanged;
    ``only``, when given, names the chunks that may be split (the others stay whole).

    >>> parts, parent = split_passages([Chunk("c", "One two three. Four five six.")], 3)
    >>> [(p.id, p.text) for p in parts], parent.tolist()
    ([('c#p0', 'One two three.'), ('c#p1', 'Four five six.')], [0, 0])
    """
    if target_words <= 0:
        return tuple(chunks), np.arange(len(chunks), dtype=np.int64)
    out: list[Chunk] = []
    parent: list[int] = []
    for row, c in enumerate(chunks):
        if only is not None and not only[row]:
            out.append(c)
            parent.append(row)
            continue
        spans = [m.span() for m in WORD_RE.finditer(c.text)]
        cuts = _cuts([c.text[a:b] for a, b in spans], target_words)
        if len(cuts) <= 2:
            out.append(c)
            parent.append(row)
            continue
        meta0 = c.metadata or {}
        start = meta0.get("start_word")
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            meta = dict(meta0)
            meta.update(passage_of=c.id, passage=i)
            if isinstance(start, int):
                meta.update(start_word=start + a, end_word=start + b)
            # Character offsets in the document (a LlamaIndex node's, LangChain's start_index)
            # shift to the passage too, so passages of one chunk never look like copies.
            for key, end_key in (("start_char_idx", "end_char_idx"), ("start_index", None)):
                if isinstance(meta0.get(key), int):
                    meta[key] = meta0[key] + spans[a][0]
                    if end_key is not None:
                        meta[end_key] = meta0[key] + spans[b - 1][1]
            text = c.text[spans[a][0] : spans[b - 1][1]]
            out.append(
                Passage(
                    id=f"{c.id}#p{i}",
                    text=text,
                    doc_id=c.doc_id,
                    metadata=meta,
                    parent_id=c.id,
                    index=i,
                    start_char=spans[a][0],
                    end_char=spans[b - 1][1],
                )
            )
            parent.append(row)
    return tuple(out), np.asarray(parent, dtype=np.int64)
