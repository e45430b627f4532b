"""Cross-language evidence for the hybrid ranker: character 4-gram vectors of foreign-language units.

Why: BM25 matches whole words, so an English question scores nothing on an abstract in Turkish,
Spanish or Indonesian, and the default embedder (English MiniLM) barely reaches it either. Such
text still shares pieces of words with the question: cognates and loanwords ("dijital",
"implementasi", "resiliencia"), names, acronyms. A TF-IDF cosine over character 4-grams finds
them. Both sides are weighted SMART "ltc" (1 + log tf, times idf, cosine-normalised), and the idf
is counted over every unit, English ones included: the grams that English prose is full of
("tion", " the") are what an English question shares with everything, and only the whole corpus
says which they are. Vectors are kept for the foreign units only. The hybrid ranker uses them to
fill an English question's language gap (``HybridConfig.gap_char_grams``).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .lexical import Growable

CHAR_GRAM = 4
"""Length of the character n-grams: 4 is where n-gram retrieval across European languages peaks
(McNamee and Mayfield, "Character N-Gram Tokenization for European Language Text Retrieval",
Information Retrieval 7, 2004)."""

_WORD_RE = re.compile(r"\w+")


def char_grams(text: str, n: int = CHAR_GRAM) -> list[str]:
    """Overlapping ``n``-character pieces of each lowercased word, padded by a space at each end.

    >>> char_grams("Dijital ağ")
    [' dij', 'diji', 'ijit', 'jita', 'ital', 'tal ', ' ağ ']
    """
    out: list[str] = []
    for word in _WORD_RE.findall(text.lower()):
        padded = f" {word} "
        out.extend(padded[i : i + n] for i in range(max(1, len(padded) - n + 1)))
    return out


class GramIndex:
    """Document frequencies of character 4-grams over all units, and the foreign units' vectors.

    >>> ix = GramIndex.build(["the digital economy grows", "la economía digital crece",
    ...                       "el clima cambia"], [False, True, True])
    >>> rows, cos = ix.scores("How does the digital economy grow?")
    >>> rows.tolist(), bool(cos[0] > cos[1])
    ([1, 2], True)

    ``extended`` adds units in time proportional to their text (the vocabulary is shared and only
    grows, as in ``BM25Index``); the weights follow the current counts and are laid out term-major
    once after a change, on the next query, so a query reads only the postings of its own grams.
    A unit's vector has at least one gram (it has a word).
    """

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.n_units = 0
        self._df = np.zeros(0, dtype=np.int64)
        self._rows = Growable(np.zeros(0, dtype=np.int64))  # unit row of each foreign vector
        self._ptr = Growable(np.zeros(1, dtype=np.int64))
        self._ids = Growable(np.zeros(0, dtype=np.int64))
        self._log_tf = Growable(np.zeros(0, dtype=np.float32))
        self.n_vectors = 0
        # The idf and the term-major postings of the weighted vectors (ptr over gram ids, vector
        # rows, weights), computed on the first query after a change: a query then reads only its
        # own grams' postings.
        self._postings: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def build(cls, texts: Sequence[str], foreign: Sequence[bool] | np.ndarray) -> GramIndex:
        """An index of ``texts`` (rows 0..n-1); vectors for those where ``foreign`` is true."""
        out = cls()
        out._add(texts, foreign)
        return out

    def extended(self, texts: Sequence[str], foreign: Sequence[bool] | np.ndarray) -> GramIndex:
        """This index plus ``texts`` as the next rows; this one is unchanged."""
        out = copy.copy(self)
        out._add(texts, foreign)
        return out

    def _add(self, texts: Sequence[str], foreign: Sequence[bool] | np.ndarray) -> None:
        vocab = self.vocabulary
        seen: list[np.ndarray] = []
        rows, lengths, ids, log_tf = [], [], [], []
        for row, (text, is_foreign) in enumerate(zip(texts, foreign, strict=True), self.n_units):
            counts = Counter(char_grams(text))
            unit_ids = np.fromiter(
                (vocab.setdefault(g, len(vocab)) for g in counts), np.int64, len(counts)
            )
            seen.append(unit_ids)
            if is_foreign and len(counts):
                rows.append(row)
                lengths.append(len(counts))
                ids.append(unit_ids)
                log_tf.append(1.0 + np.log(np.fromiter(counts.values(), np.float32, len(counts))))
        df = np.zeros(len(vocab), dtype=np.int64)
        df[: self._df.size] = self._df
        if seen:
            df += np.bincount(np.concatenate(seen), minlength=len(vocab))
        self._df = df
        self.n_units += len(texts)
        if rows:
            n = self.n_vectors
            start = int(self._ptr.view(n + 1)[-1])  # entries so far
            self._rows = self._rows.append(n, np.asarray(rows, np.int64))
            self._ptr = self._ptr.append(n + 1, start + np.cumsum(lengths))
            self._ids = self._ids.append(start, np.concatenate(ids))
            self._log_tf = self._log_tf.append(start, np.concatenate(log_tf))
            self.n_vectors = n + len(rows)
        self._postings = None

    def _term_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The idf per gram id and the foreign vectors' ltc weights, term-major: ``(idf, ptr,
        rows, weights)`` where gram id ``g``'s postings are ``rows[ptr[g]:ptr[g + 1]]`` (cached
        until a change)."""
        if self._postings is None:
            idf = np.log(self.n_units / np.maximum(self._df, 1)).astype(np.float32)
            ptr = self._ptr.view(self.n_vectors + 1)
            ids = self._ids.view(int(ptr[-1]))
            w = self._log_tf.view(ids.size) * idf[ids]
            norms = np.sqrt(np.add.reduceat(w * w, ptr[:-1]))
            w = w / np.repeat(np.maximum(norms, 1e-12), np.diff(ptr))
            order = np.argsort(ids, kind="stable")
            starts = np.searchsorted(ids[order], np.arange(self._df.size + 1))
            rows = np.repeat(np.arange(self.n_vectors), np.diff(ptr))[order]
            self._postings = (idf, starts, rows, w[order])
        return self._postings

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """The foreign units' rows and their cosine with ``query`` (0 where nothing is shared)."""
        rows = self._rows.view(self.n_vectors)
        if not rows.size:
            return rows, np.zeros(0)
        # Grams this snapshot counted (a later snapshot may have grown the shared vocabulary).
        counts = Counter(
            i
            for i in map(self.vocabulary.get, char_grams(query))
            if i is not None and i < self._df.size
        )
        if not counts:
            return rows, np.zeros(rows.size)
        ids = np.fromiter(counts.keys(), np.int64, len(counts))
        tf = np.fromiter(counts.values(), np.float32, len(counts))
        idf, starts, post_rows, post_w = self._term_postings()
        q = (1.0 + np.log(tf)) * idf[ids]
        q /= max(float(np.linalg.norm(q)), 1e-12)
        lengths = starts[ids + 1] - starts[ids]
        # Every posting of the query's grams, gathered in one index array.
        at = np.repeat(starts[ids] - np.cumsum(lengths) + lengths, lengths) + np.arange(
            lengths.sum()
        )
        weights = post_w[at] * np.repeat(q, lengths)
        return rows, np.bincount(post_rows[at], weights, minlength=rows.size)
