"""Signed feature hashing of word unigrams: the deterministic, weight-free, numpy-only embedder.

The same text gives the same vector in every process and on every platform (blake2b, never Python's
salted ``hash()``), which makes it the embedder for tests and the fast option for large corpora.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ._common import check_count, check_text, check_texts

DEFAULT_HASHING_DIM = 4096
# Upper bound on dim: a name read from a manifest ("hashing-v1-99999999999") must not make a query
# allocate terabytes; 65,536 buckets already keep collisions rare for any corpus vocabulary.
MAX_HASHING_DIM = 65_536
# Bump when the tokeniser, stopwords or hash change: stored vectors of another version must not mix.
HASHING_VERSION = "v1"

_TOKEN_RE = re.compile(r"[a-z0-9]+")
# Rows per np.bincount call: bounds the float64 scratch array to ~16 MB at 4096 dims.
_ROWS_PER_BLOCK = 512
# Cap on cached token hashes; a corpus vocabulary is far smaller, this only guards endless streams.
_CACHE_LIMIT = 2_000_000

# A short English list: function words that carry no topic. Kept small on purpose; changing it is a
# new HASHING_VERSION.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t don
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` words of ``text``, stopwords removed.

    >>> tokenize("The tumour's growth, in 2 weeks")
    ['tumour', 'growth', '2', 'weeks']
    """
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


class HashingEmbedder:
    """Signed feature hashing: each word adds ``±(1 + log tf)`` to one of ``dim`` buckets, then L2.

    Bucket and sign both come from one blake2b digest of the word, so vectors are reproducible
    anywhere. A text with no content words (empty, or only stopwords) maps to the zero vector,
    whose cosine with everything is 0.

    >>> e = HashingEmbedder(dim=64)
    >>> e.name
    'hashing-v1-64'
    >>> v = e.embed_query("tumour growth")
    >>> v.shape, round(float(v @ v), 6)
    ((64,), 1.0)
    """

    def __init__(self, dim: int = DEFAULT_HASHING_DIM):
        check_count(dim, "HashingEmbedder dim", 2, MAX_HASHING_DIM)
        self.dim = dim
        self.name = f"hashing-{HASHING_VERSION}-{dim}"
        self._cache: dict[str, tuple[int, float]] = {}

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def _slot(self, token: str) -> tuple[int, float]:
        hit = self._cache.get(token)
        if hit is None:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            # Low bits pick the bucket, the top bit the sign, so the two are independent.
            hit = (value % self.dim, 1.0 if value >> 63 else -1.0)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = hit
        return hit

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), dim)`` float32 rows, each L2-normalised (or zero, see class doc)."""
        items = check_texts(texts, who="HashingEmbedder")
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for start in range(0, len(items), _ROWS_PER_BLOCK):
            block = items[start : start + _ROWS_PER_BLOCK]
            out[start : start + len(block)] = self._embed_block(block)
        return out

    def _embed_block(self, block: list[str]) -> np.ndarray:
        # Python only maps words to block-local ids; counting, weighting and summing are numpy.
        ids: dict[str, int] = {}
        token_ids: list[int] = []
        row_lengths: list[int] = []
        for text in block:
            words = tokenize(text)
            row_lengths.append(len(words))
            token_ids.extend([ids.setdefault(w, len(ids)) for w in words])
        n_rows, vocab = len(block), max(len(ids), 1)
        slots = [self._slot(w) for w in ids]
        buckets = np.array([b for b, _ in slots], dtype=np.int64)
        signs = np.array([s for _, s in slots], dtype=np.float64)
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), row_lengths)
        # Term frequency of each (row, word) pair, then sublinear weight 1 + ln tf.
        pairs, tf = np.unique(
            rows * vocab + np.asarray(token_ids, dtype=np.int64), return_counts=True
        )
        pair_rows, pair_words = np.divmod(pairs, vocab)
        weights = signs[pair_words] * (1.0 + np.log(tf))
        # bincount sums words that share a bucket (same result as np.add.at, much faster).
        summed = np.bincount(
            pair_rows * self.dim + buckets[pair_words], weights=weights, minlength=n_rows * self.dim
        ).reshape(n_rows, self.dim)
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return summed / norms

    def embed_query(self, text: str) -> np.ndarray:
        """Return one ``(dim,)`` float32 vector."""
        return self.embed_documents([check_text(text, who="HashingEmbedder")])[0]
