"""Baseline systems for ``evaluate``: vector top-k, BM25 (ours and bm25s), over any chunking.

Each factory returns a callable ``question -> list of texts``, so a baseline and HCG are measured
by the same runner at the same word budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..corpus import word_spans
from ..embedding import as_matrix
from ..errors import ConfigError
from ..ports import Embedder
from ..retrieval.lexical import BM25Index, top_k_indices
from ..types import Chunk

TextSystem = Callable[[str], list[str]]


def word_windows(text: str, words: int, overlap: int) -> list[str]:
    """Plain word windows of ``words`` words, each starting ``words - overlap`` after the last.

    The paper's NaiveRAG chunking (1,200 words, 200 overlap) without sentence alignment.

    >>> word_windows("a b c d e f g", 3, 1)
    ['a b c', 'c d e', 'e f g']
    """
    if words < 1 or not 0 <= overlap < words:
        raise ConfigError(f"need words >= 1 and 0 <= overlap < words, got {words}, {overlap}")
    w = text.split()
    # A window starts every ``words - overlap`` words until one reaches the end, so the last
    # starts before ``len(w) - overlap``; a text shorter than the overlap is one window.
    end = max(len(w) - overlap, min(len(w), 1))
    return [" ".join(w[start : start + words]) for start in range(0, end, words - overlap)]


def documents_from_chunks(chunks: Sequence[Chunk]) -> list[str]:
    """Rebuild each document's text (words joined by spaces) from its chunks' word spans.

    Uses the ``start_word`` metadata of ``hcg_core.corpus.chunk_documents``; chunks without it are
    concatenated in order per document (their overlap is then repeated).
    """
    by_doc: dict[str, list[str]] = {}
    for c in chunks:
        # The chunker's own words (its start_word counts them), not str.split(): the two differ on
        # CJK text and very long tokens, which would shift every later chunk.
        words = [c.text[a:b] for a, b in word_spans(c.text)]
        doc = by_doc.setdefault(c.doc_id, [])
        start = c.metadata.get("start_word") if c.metadata else None
        if isinstance(start, int):
            if len(doc) < start + len(words):
                doc.extend([""] * (start + len(words) - len(doc)))
            doc[start : start + len(words)] = words
        else:
            doc.extend(words)
    return [" ".join(w for w in words if w) for words in by_doc.values()]


def bm25_system(texts: Sequence[str], k: int) -> TextSystem:
    """BM25 with the library's own numpy index (``hcg_core.retrieval.lexical``)."""
    texts = list(texts)
    index = BM25Index(texts)

    def run(question: str) -> list[str]:
        idx, _ = index.top_k(question, k)
        return [texts[i] for i in idx.tolist()]

    return run


def vector_system(
    texts: Sequence[str], embedder: Embedder, k: int, *, embeddings: np.ndarray | None = None
) -> TextSystem:
    """Cosine top-k with ``embedder`` (pass stored ``embeddings`` to skip re-embedding)."""
    texts = list(texts)
    if embeddings is None:
        embeddings = embedder.embed_documents(texts) if texts else np.zeros((0, embedder.dim))
    emb = as_matrix(embeddings, len(texts), who=f"embedder {embedder.name!r}")

    def run(question: str) -> list[str]:
        q = np.asarray(embedder.embed_query(question), dtype=np.float32)
        idx, _ = top_k_indices(emb @ q, k)
        return [texts[i] for i in idx.tolist()]

    return run


def fill_budget(system: TextSystem, budget: int) -> TextSystem:
    """Wrap a top-k system so it returns chunks, best first, until ``budget`` words are reached.

    The chunk that crosses the budget is kept whole (as the hybrid packer does), so every system
    compared at a word budget gets the same amount of context, whatever its chunk size.
    """

    def run(question: str) -> list[str]:
        out: list[str] = []
        words = 0
        for t in system(question):
            if words >= budget:
                break
            out.append(t)
            words += len(t.split())
        return out

    return run
