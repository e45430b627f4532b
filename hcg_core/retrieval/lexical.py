"""Okapi BM25 over the corpus's chunks, in numpy only: an inverted index compiled once, array scoring.

The scoring is the "lucene" variant of bm25s (Kamphuis et al., ECIR 2020): idf = ln(1 + (N - df +
0.5) / (df + 0.5)) and a saturated term frequency tf / (tf + k1 (1 - b + b |d| / avgdl)). Each
posting's full contribution is computed at construction, so a query is one gather and one
``np.bincount`` over the postings of its terms.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..errors import ConfigError

DEFAULT_K1 = 1.5
"""Term-frequency saturation (Robertson's k1); 1.5 is the bm25s and Lucene-ish default."""
DEFAULT_B = 0.75
"""Length normalisation strength; 0.75 is the usual Okapi value."""

_TOKEN_RE = re.compile(r"[a-z0-9]+")

# English function words: carry no topic, so they would only add noise to term matching. The list is
# a superset of Lucene's 33 English stopwords (bm25s "en"), with pronouns and auxiliaries added.
_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each either few for from
further had has have having he her here hers herself him himself his how however i if in into is
it its itself just may me might more most must my myself neither no nor not now of off on once
only or other our ours ourselves out over own same shall she should so some such than that the
their theirs them themselves then there these they this those through thus to too under until up
upon very was we were what when where whether which while who whom whose why will with within
without would yet you your yours yourself yourselves
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def fold_plural(token: str) -> str:
    """Fold a trailing plural "s" (not "ss"), so "tumours" and "tumour" index as one term.

    >>> fold_plural("tumours"), fold_plural("class"), fold_plural("gas")
    ('tumour', 'class', 'gas')
    """
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric words, stopwords and 1-character tokens dropped, plurals folded.

    >>> tokenize("The tumours of BCC grow in 2 weeks")
    ['tumour', 'bcc', 'grow', 'week']
    """
    return [
        fold_plural(t) for t in _TOKEN_RE.findall(text.lower()) if len(t) > 1 and t not in STOPWORDS
    ]


class BM25Index:
    """A compiled BM25 index: CSR postings (term -> documents) with precomputed contributions.

    >>> index = BM25Index(["aspirin thins blood", "blood pressure rises", "the sky is blue"])
    >>> index.top_k("blood thinning aspirin", 2)[0].tolist()
    [0, 1]

    Attributes:
        n_docs: number of indexed documents.
        vocabulary: term -> term id.
        indptr: ``(V + 1,)`` int64; postings of term t are ``indptr[t]:indptr[t + 1]``.
        doc_ids: ``(nnz,)`` int32 document of each posting.
        weights: ``(nnz,)`` float32 BM25 contribution of each posting.
        doc_lengths: ``(n_docs,)`` int32 token count of each document after tokenisation.
    """

    def __init__(
        self,
        texts: Sequence[str],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ):
        if isinstance(texts, str):
            raise ConfigError("BM25Index expects a list of texts, got a single str")
        self._tokenizer = tokenizer
        self._build([tokenizer(t) for t in texts], k1=k1, b=b)

    @classmethod
    def from_tokens(
        cls,
        token_lists: Iterable[Sequence[str]],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ) -> BM25Index:
        """Index documents that are already tokenised; ``tokenizer`` is then used for queries."""
        self = cls.__new__(cls)
        self._tokenizer = tokenizer
        self._build([list(t) for t in token_lists], k1=k1, b=b)
        return self

    def _build(self, docs: list[list[str]], *, k1: float, b: float) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ConfigError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1, self.b = float(k1), float(b)
        self.n_docs = len(docs)
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        for d, toks in enumerate(docs):
            for term, tf in Counter(toks).items():
                rows.append(vocab.setdefault(term, len(vocab)))
                cols.append(d)
                tfs.append(tf)
        self.vocabulary = vocab
        term = np.asarray(rows, dtype=np.int64)
        doc = np.asarray(cols, dtype=np.int32)
        tf = np.asarray(tfs, dtype=np.float64)
        self.doc_lengths = np.asarray([len(t) for t in docs], dtype=np.int32)
        avgdl = float(self.doc_lengths.mean()) if self.n_docs and self.doc_lengths.sum() else 1.0

        # Sort postings by term (stable, so documents stay ascending inside a term): CSR layout.
        order = np.argsort(term, kind="stable")
        term, doc, tf = term[order], doc[order], tf[order]
        df = np.bincount(term, minlength=len(vocab)).astype(np.int64)
        self.indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        self.indptr[1:] = np.cumsum(df)
        self.idf = np.log1p((self.n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_lengths[doc] / avgdl)
        self.doc_ids = doc
        self.weights = (self.idf[term] * tf / (tf + norm)).astype(np.float32)

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def term_ids(self, query: str | Sequence[str]) -> np.ndarray:
        """Distinct known term ids of a query (a str is tokenised; a token list is used as is)."""
        tokens = self._tokenizer(query) if isinstance(query, str) else list(query)
        seen: dict[int, None] = {}
        for t in tokens:
            tid = self.vocabulary.get(t)
            if tid is not None:
                seen.setdefault(tid, None)
        return np.fromiter(seen, dtype=np.int64, count=len(seen))

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every document, ``(n_docs,)`` float32 (0 where no query term occurs).

        A repeated query term counts once, as in a Lucene boolean query of distinct terms.
        """
        tids = self.term_ids(query)
        if tids.size == 0 or self.n_docs == 0:
            return np.zeros(self.n_docs, dtype=np.float32)
        starts, ends = self.indptr[tids], self.indptr[tids + 1]
        # Concatenate the postings of the query terms without a Python loop over postings.
        lengths = ends - starts
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
            lengths.sum()
        )
        summed = np.bincount(
            self.doc_ids[offsets], weights=self.weights[offsets], minlength=self.n_docs
        )
        return summed.astype(np.float32)

    def max_score(self, query: str | Sequence[str]) -> float:
        """The most a document could score for ``query``: the sum of its known terms' idf.

        Each term's saturated frequency is below 1, so ``scores(query) / max_score(query)`` lies in
        [0, 1] and means the same for every query: the share of the query's term weight matched.

        >>> index = BM25Index(["aspirin thins blood", "blood pressure rises"])
        >>> round(float(index.scores("aspirin")[0]), 3), round(index.max_score("aspirin"), 3)
        (0.277, 0.693)
        """
        tids = self.term_ids(query)
        return float(self.idf[tids].sum()) if tids.size else 0.0

    def top_k(self, query: str | Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the ``k`` best documents with a positive score, best first.

        Ties keep index order, so results are deterministic.
        """
        return top_k_indices(self.scores(query), k, positive_only=True)


def top_k_indices(
    scores: np.ndarray, k: int, *, positive_only: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries of ``scores`` (best first, ties by index) and their values."""
    n = scores.shape[0]
    k = max(0, min(int(k), n))
    if k == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype)
    if k < n:
        # argpartition narrows to the k best in O(n); the threshold keeps every tie at the boundary
        # so the stable lexsort below decides ties by index, not by partition order.
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))[:k]
    idx = cand[order]
    if positive_only:
        idx = idx[scores[idx] > 0]
    return idx.astype(np.int64), scores[idx]
