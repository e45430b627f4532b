"""Okapi BM25 over the corpus's chunks, in numpy only: an inverted index that grows, array scoring.

The scoring is the "lucene" variant of bm25s (Kamphuis et al., ECIR 2020): idf = ln(1 + (N - df +
0.5) / (df + 0.5)) and a saturated term frequency tf / (tf + k1 (1 - b + b |d| / avgdl)). A query
gathers the postings of its terms, computes their contributions from the current statistics and
sums them with one ``np.bincount``. Documents can be added (``BM25Index.add``) in time
proportional to their tokens: see the class docstring.
"""

from __future__ import annotations

import copy
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


class Growable:
    """An append-only 1-D array with capacity doubling, shared by index snapshots.

    ``append`` writes past the used length in place only while the caller's view is the newest
    (``n == filled``); an older snapshot that appends gets a private copy, so no snapshot ever
    sees rows it did not add. Appending k items costs O(k) amortised.
    """

    def __init__(self, data: np.ndarray):
        self.buf = np.ascontiguousarray(data)
        self.filled = int(self.buf.shape[0])

    def view(self, n: int) -> np.ndarray:
        return self.buf[:n]

    def append(self, n: int, items: np.ndarray) -> Growable:
        """The buffer holding ``view(n) + items`` (this one when ``n`` is its newest length)."""
        items = np.asarray(items, dtype=self.buf.dtype)
        owner = self if n == self.filled else Growable(self.buf[:n].copy())
        need = n + items.shape[0]
        if need > owner.buf.shape[0]:
            grown = np.empty(
                (max(need, 2 * owner.buf.shape[0], 16),) + owner.buf.shape[1:],
                dtype=owner.buf.dtype,
            )
            grown[:n] = owner.buf[:n]
            owner.buf = grown
        owner.buf[n:need] = items
        owner.filled = need
        return owner


# When the postings added since the term-major CSR was built exceed this share of it, the CSR is
# rebuilt (once, on the next query): each posting is re-sorted O(1) times on average.
MERGE_SHARE = 0.25


class BM25Index:
    """A compiled BM25 index: CSR postings (term -> documents) plus an append-only delta.

    >>> index = BM25Index(["aspirin thins blood", "blood pressure rises", "the sky is blue"])
    >>> index.top_k("blood thinning aspirin", 2)[0].tolist()
    [0, 1]
    >>> index.add(["aspirin again"])
    >>> index.n_docs, index.top_k("aspirin", 3)[0].tolist()
    (4, [3, 0])

    Documents are stored doc-major (term ids and frequencies per document, append-only); queries
    read a term-major CSR of the first ``n_main`` documents plus a scan of the later ones, and the
    CSR is rebuilt once the later ones grow past ``MERGE_SHARE`` of it. BM25 weights are computed
    at query time from the current document count, document frequencies and mean length, so an
    index grown by :meth:`add` scores exactly like one built from all its texts at once.

    Attributes:
        n_docs: number of indexed documents.
        vocabulary: term -> term id (shared, append-only).
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
        self.vocabulary: dict[str, int] = {}
        self.n_docs = 0
        self._ptr = Growable(np.zeros(1, dtype=np.int64))
        self._terms = Growable(np.zeros(0, dtype=np.int64))
        self._tf = Growable(np.zeros(0, dtype=np.float64))
        self._lengths = Growable(np.zeros(0, dtype=np.int32))
        self._df = np.zeros(0, dtype=np.int64)
        self._total_length = 0
        self._append(docs)
        self._merge()

    # ------------------------------------------------------------------ growth

    def _append(self, docs: list[list[str]]) -> None:
        """Add tokenised documents to the doc-major store and the statistics (O(new tokens))."""
        vocab = self.vocabulary
        terms: list[int] = []
        tfs: list[int] = []
        counts: list[int] = []
        for toks in docs:
            c = Counter(toks)
            for term, tf in c.items():
                terms.append(vocab.setdefault(term, len(vocab)))
                tfs.append(tf)
            counts.append(len(c))
        n, nnz = self.n_docs, int(self._ptr.view(self.n_docs + 1)[-1])
        t = np.asarray(terms, dtype=np.int64)
        self._ptr = self._ptr.append(n + 1, nnz + np.cumsum(np.asarray(counts, dtype=np.int64)))
        self._terms = self._terms.append(nnz, t)
        self._tf = self._tf.append(nnz, np.asarray(tfs, dtype=np.float64))
        lengths = np.asarray([len(d) for d in docs], dtype=np.int32)
        self._lengths = self._lengths.append(n, lengths)
        df = np.zeros(len(vocab), dtype=np.int64)
        df[: self._df.size] = self._df
        np.add.at(df, t, 1)
        self._df = df
        self._total_length += int(lengths.sum())
        self.n_docs = n + len(docs)

    def _merge(self) -> None:
        """Rebuild the term-major CSR over all documents (vectorised, no tokenising)."""
        n = self.n_docs
        ptr = self._ptr.view(n + 1)
        terms = self._terms.view(int(ptr[-1]))
        docs = np.repeat(np.arange(n, dtype=np.int32), np.diff(ptr))
        order = np.argsort(terms, kind="stable")  # documents stay ascending inside a term
        indptr = np.zeros(self.vocab_size + 1, dtype=np.int64)
        indptr[1:] = np.cumsum(np.bincount(terms, minlength=self.vocab_size))
        # One attribute, swapped at once: concurrent queries may trigger a merge.
        self._main = (n, indptr, docs[order], self._tf.view(terms.size)[order])

    def extended(self, texts: Sequence[str]) -> BM25Index:
        """A new index of these documents plus ``texts``, sharing this one's storage.

        This index is unchanged (it keeps scoring its own documents); the cost is the new
        texts' tokens plus a copy of the document-frequency array.
        """
        if isinstance(texts, str):
            raise ConfigError("BM25Index.extended expects a list of texts, got a single str")
        out = copy.copy(self)
        out._append([self._tokenizer(t) for t in texts])
        return out

    def add(self, texts: Sequence[str]) -> None:
        """Index more documents in place (row numbers continue after the existing ones)."""
        self.__dict__.update(self.extended(texts).__dict__)

    def subset(self, keep: np.ndarray) -> BM25Index:
        """A new index of the documents where the boolean ``keep`` is true, renumbered in order.

        Vectorised over the stored term ids (nothing is re-tokenised); O(postings).
        """
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.n_docs,):
            raise ConfigError(f"keep must have one entry per document ({self.n_docs})")
        ptr = self._ptr.view(self.n_docs + 1)
        lens = np.diff(ptr)
        sel = np.repeat(keep, lens)
        out = copy.copy(self)
        nnz = int(ptr[-1])
        terms = self._terms.view(nnz)[sel]
        out._ptr = Growable(np.concatenate(([0], np.cumsum(lens[keep]))).astype(np.int64))
        out._terms = Growable(terms.copy())
        out._tf = Growable(self._tf.view(nnz)[sel].copy())
        lengths = self._lengths.view(self.n_docs)[keep]
        out._lengths = Growable(lengths.copy())
        out._df = np.bincount(terms, minlength=len(self.vocabulary)).astype(np.int64)
        out._total_length = int(lengths.sum())
        out.n_docs = int(keep.sum())
        out._merge()
        return out

    # ------------------------------------------------------------------ statistics

    @property
    def vocab_size(self) -> int:
        return int(self._df.size)

    @property
    def doc_lengths(self) -> np.ndarray:
        return self._lengths.view(self.n_docs)

    @property
    def idf(self) -> np.ndarray:
        """``(vocab_size,)`` float32 idf of every term under the current statistics.

        A query reads it up to three times (its postings, its candidates' term vectors, its best
        possible score), so it is computed once per index state: ``_df`` is replaced, never
        written in place, whenever documents are added or removed, so its identity and the
        document count name the state (a snapshot made by ``extended`` keeps its own).
        """
        df, n = self._df, self.n_docs
        cached = self.__dict__.get("_idf_cache")
        if cached is None or cached[0] is not df or cached[1] != n:
            cached = (df, n, np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32))
            self._idf_cache = cached
        return cached[2]

    def _avgdl(self) -> float:
        return self._total_length / self.n_docs if self.n_docs and self._total_length else 1.0

    def _weights(self, terms: np.ndarray, tf: np.ndarray, docs: np.ndarray, idf: np.ndarray):
        """BM25 contribution of postings (the "lucene" formula of the module docstring)."""
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_lengths[docs] / self._avgdl())
        return (idf[terms] * tf / (tf + norm)).astype(np.float32)

    def _main_weights(self) -> np.ndarray:
        """Every posting's BM25 weight in the term-major CSR (``_weights``, element by element, so
        the same bits), computed once per index state (as ``idf``), not per query term."""
        main, df, n, total = self._main, self._df, self.n_docs, self._total_length
        cached = self.__dict__.get("_main_weight_cache")
        if (
            cached is None
            or cached[0] is not main
            or cached[1] is not df
            or cached[2:4] != (n, total)
        ):
            _, ptr, docs, tf = main
            terms = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
            cached = (main, df, n, total, self._weights(terms, tf, docs, self.idf))
            self._main_weight_cache = cached
        return cached[4]

    def _postings(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The given documents (int64), their posting counts and their postings' positions in
        the doc-major store, document by document."""
        ptr = self._ptr.view(self.n_docs + 1)
        rows = np.asarray(rows, dtype=np.int64)
        lens = ptr[rows + 1] - ptr[rows]
        pos = np.repeat(ptr[rows] - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        return rows, lens, pos

    def doc_terms(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Postings of the given documents, doc-major: ``(lengths, term ids, weights)``."""
        rows, lens, pos = self._postings(rows)
        terms = self._terms.buf[pos]
        docs = np.repeat(rows, lens)
        return lens, terms, self._weights(terms, self._tf.buf[pos], docs, self.idf)

    def unit_doc_terms(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``doc_terms`` with each document's weights divided by their L2 norm (float32): dot
        products of two documents' rows are the cosines of their term vectors.

        Every document is scaled once per index state (as ``idf``: 4 bytes per posting), not per
        query. The arithmetic is the per-query one's, element by element, so the values are the
        same to the bit.
        """
        df, n = self._df, self.n_docs
        cached = self.__dict__.get("_unit_cache")
        if cached is None or cached[0] is not df or cached[1] != n:
            lens, _, w = self.doc_terms(np.arange(n))
            row = np.repeat(np.arange(n), lens)
            w = w.astype(np.float64)
            norms = np.sqrt(np.bincount(row, weights=w * w, minlength=n))
            norms[norms == 0] = 1.0
            cached = (df, n, (w / norms[row]).astype(np.float32))
            self._unit_cache = cached
        _, lens, pos = self._postings(rows)
        return lens, self._terms.buf[pos], cached[2][pos]

    # ------------------------------------------------------------------ queries

    def tokens(self, text: str) -> list[str]:
        """``text`` split into terms as this index splits documents (its tokenizer)."""
        return self._tokenizer(text)

    def term_ids(self, query: str | Sequence[str]) -> np.ndarray:
        """Distinct known term ids of a query (a str is tokenised; a token list is used as is)."""
        tokens = self._tokenizer(query) if isinstance(query, str) else list(query)
        seen: dict[int, None] = {}
        limit = self.vocab_size  # a newer snapshot may have added terms to the shared vocabulary
        for t in tokens:
            tid = self.vocabulary.get(t)
            if tid is not None and tid < limit and self._df[tid] > 0:
                seen.setdefault(tid, None)
        return np.fromiter(seen, dtype=np.int64, count=len(seen))

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every document, ``(n_docs,)`` float32 (0 where no query term occurs).

        A repeated query term counts once, as in a Lucene boolean query of distinct terms.
        """
        tids = self.term_ids(query)
        if tids.size == 0 or self.n_docs == 0:
            return np.zeros(self.n_docs, dtype=np.float32)
        main_n, main_ptr, main_docs, main_tf = self._main
        delta_nnz = int(self._ptr.view(self.n_docs + 1)[-1]) - int(main_docs.size)
        if delta_nnz > MERGE_SHARE * max(int(main_docs.size), 1):
            self._merge()
            main_n, main_ptr, main_docs, main_tf = self._main
            delta_nnz = 0
        known = tids[tids < main_ptr.size - 1]
        starts, ends = main_ptr[known], main_ptr[known + 1]
        lengths = ends - starts
        # Concatenate the postings of the query terms without a Python loop over postings.
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
            lengths.sum()
        )
        docs = main_docs[offsets]
        if not delta_nnz:  # the usual case: every posting's weight is known for this state
            summed = np.bincount(docs, weights=self._main_weights()[offsets], minlength=self.n_docs)
            return summed.astype(np.float32)
        terms = np.repeat(known, lengths)
        tf = main_tf[offsets]
        # Documents added since the CSR was built: scan their postings, then order them by
        # query term like the CSR's, so scores sum in the same order as a fresh index.
        lo = int(self._ptr.view(main_n + 1)[-1])
        hi = lo + delta_nnz
        dterms = self._terms.buf[lo:hi]
        hit = np.flatnonzero(np.isin(dterms, tids))
        if hit.size:
            dptr = self._ptr.view(self.n_docs + 1)[main_n:] - lo
            ddocs = (np.searchsorted(dptr, hit, side="right") - 1 + main_n).astype(np.int32)
            rank = {int(t): i for i, t in enumerate(tids.tolist())}
            key_all = np.concatenate(
                (
                    np.array([rank[int(t)] for t in known], np.int64).repeat(lengths),
                    np.array([rank[int(t)] for t in dterms[hit].tolist()], np.int64),
                )
            )
            order = np.argsort(key_all, kind="stable")
            docs = np.concatenate((docs, ddocs))[order]
            terms = np.concatenate((terms, dterms[hit]))[order]
            tf = np.concatenate((tf, self._tf.buf[lo:hi][hit]))[order]
        w = self._weights(terms, tf, docs, self.idf)
        summed = np.bincount(docs, weights=w, minlength=self.n_docs)
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
        # so the stable sort below decides ties by index, not by partition order.
        kth = np.partition(scores, n - k)[n - k]
        cand = (scores >= kth).nonzero()[0]
    else:
        cand = np.arange(n)
    # cand is ascending: a stable sort by score keeps ties in index order (a lexsort's result).
    idx = cand[np.argsort(-scores[cand], kind="stable")[:k]]
    if positive_only:
        idx = idx[scores[idx] > 0]
    return idx.astype(np.int64, copy=False), scores[idx]
