"""Offline builder: which one-word variables are generic words of the corpus (dropped).

A one-word variable such as ``Factor``, ``Study``, ``Result`` or ``Role`` names no quantity a
reader recognises: the word's meaning comes from what the text attaches to it ("risk factors",
"the role of X"), which the span lost. Which words are like that is decided from the corpus
itself, never from a word list, by two statistics over the chunks (the units the builder reads):

- **spread**: the word occurs in at least ``GENERIC_MIN_SHARE`` of the chunks. A word used in one
  chunk in twenty or more is used across the corpus's topics; a rarer word is not judged (its
  spread cannot be told from a topic of its own);
- **no burstiness**: its residual IDF (Church and Gale, 1995, "Poisson mixtures") is below
  ``GENERIC_MAX_RIDF`` bits. Residual IDF is the word's IDF minus the IDF a Poisson spread of its
  occurrences predicts: ``-log2(df / N) + log2(1 - exp(-cf / N))``. A word that names a topic
  comes in bursts (the chunks about anxiety say "anxiety" several times, the others not at all),
  so it occurs in fewer chunks than chance would put it in; a generic word is spread like chance,
  about once wherever it occurs (residual IDF near 0).

A word that is both is generic: its metric's generic variable (the bare word) is dropped with its
edges; the metric's entity variables (``Performance(academic)``) stay, since their modifier is
what carries the meaning. The rule needs ``GENERIC_MIN_CHUNKS`` chunks to say anything, and is
off below that (a handful of chunks makes every word look spread). See docs/offline-builder.md,
step 6.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ..types import Chunk
from .extract import singular

# A word in at least this share of the chunks is spread across the corpus (one chunk in twenty).
GENERIC_MIN_SHARE = 0.05
# Residual IDF (bits) below which a spread word shows no burst: its chunk count is within a factor
# 2 ** 0.75 = 1.7 of what a chance (Poisson) spread of its occurrences gives.
GENERIC_MAX_RIDF = 0.75
# Below this many chunks the statistics are noise: the rule is off.
GENERIC_MIN_CHUNKS = 50

_WORD_RE = re.compile(r"[a-z0-9][a-z0-9\-']*")


def word_counts(chunks: Sequence[Chunk], words: Iterable[str]) -> tuple[Counter, Counter]:
    """Per word of ``words`` (singular forms): chunks holding it (df) and occurrences (cf).

    Tokens are the builder's (lowercased, singularised); one pass over the text, with the
    singular form of each distinct token computed once (``singular`` keeps them).

    >>> df, cf = word_counts([Chunk("a", "Factors and a factor."), Chunk("b", "No.")], ["factor"])
    >>> df["factor"], cf["factor"]
    (1, 2)
    """
    wanted = set(words)
    df: Counter = Counter()
    cf: Counter = Counter()
    for c in chunks:
        counts = Counter(singular(token) for token in _WORD_RE.findall(c.text.lower()))
        found = {w: n for w, n in counts.items() if w in wanted}
        cf.update(found)
        df.update(found.keys())
    return df, cf


def residual_idf(df: int, cf: int, n: int) -> float:
    """Residual IDF in bits: observed IDF minus the IDF of a Poisson spread of ``cf`` over ``n``.

    >>> round(residual_idf(10, 10, 1000), 3)  # once in each chunk it is in: chance spread
    -0.007
    >>> round(residual_idf(10, 100, 1000), 2)  # ten times in each: a burst
    3.25
    """
    if df <= 0 or cf <= 0 or n <= 0:
        return math.inf
    return -math.log2(df / n) + math.log2(-math.expm1(-cf / n))


def generic_words(
    chunks: Sequence[Chunk],
    candidates: Iterable[str],
    *,
    min_share: float = GENERIC_MIN_SHARE,
    max_ridf: float = GENERIC_MAX_RIDF,
    min_chunks: int = GENERIC_MIN_CHUNKS,
) -> dict[str, tuple[float, float]]:
    """The candidate words that are generic in ``chunks``, each with (chunk share, residual IDF).

    Empty when the corpus has fewer than ``min_chunks`` chunks (see the module docstring).
    """
    n = len(chunks)
    cands = set(candidates)
    if n < min_chunks or not cands:
        return {}
    df, cf = word_counts(chunks, cands)
    out: dict[str, tuple[float, float]] = {}
    for w in sorted(cands):
        share = df[w] / n
        ridf = residual_idf(df[w], cf[w], n)
        if share >= min_share and ridf < max_ridf:
            out[w] = (round(share, 4), round(ridf, 3))
    return out
