"""Evidence linking phi: edge -> chunks, exactly the paper's (Appendix B), as pure functions.

(1) Text match: the first ``prefix_chars`` (200) characters of an edge's evidence text, found as a
substring of a chunk. (2) Semantic match: the embedding of ``"source -> target: mechanism"`` against
the pre-embedded chunks, linking chunks with cosine >= ``tau`` (0.78). At most ``per_edge`` (2)
chunks per edge: text matches first (corpus order), then semantic matches (most similar first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..config import DEFAULT_EVIDENCE_PER_EDGE, DEFAULT_EVIDENCE_PREFIX_CHARS, DEFAULT_EVIDENCE_TAU
from ..embedding import as_matrix
from ..ports import Embedder
from ..types import CausalEdge, Chunk


def edge_text(edge: CausalEdge) -> str:
    """The string the paper embeds for an edge's semantic match."""
    return f"{edge.source} -> {edge.target}: {edge.mechanism}"


def text_matches(quote: str, chunks: Sequence[Chunk], prefix_chars: int) -> list[int]:
    """Indices of chunks containing the quote's first ``prefix_chars`` characters (stripped).

    >>> text_matches("alpha beta", [Chunk("a", "x alpha beta y"), Chunk("b", "beta")], 200)
    [0]
    """
    prefix = (quote or "")[:prefix_chars].strip()
    if not prefix:
        return []
    return [i for i, c in enumerate(chunks) if prefix in c.text]


def semantic_matches(
    edge_vectors: np.ndarray, chunk_embeddings: np.ndarray, tau: float
) -> list[list[int]]:
    """Per edge, indices of chunks with cosine >= tau, most similar first (ties: corpus order)."""
    if edge_vectors.size == 0 or chunk_embeddings.size == 0:
        return [[] for _ in range(len(edge_vectors))]
    sims = edge_vectors @ chunk_embeddings.T
    out = []
    for row in sims:
        idx = np.flatnonzero(row >= tau)
        out.append([int(i) for i in idx[np.lexsort((idx, -row[idx]))]])
    return out


def link_evidence(
    edges: Sequence[CausalEdge],
    chunks: Sequence[Chunk],
    chunk_embeddings: np.ndarray,
    embedder: Embedder,
    *,
    quotes: Mapping[str, str] | None = None,
    tau: float = DEFAULT_EVIDENCE_TAU,
    per_edge: int = DEFAULT_EVIDENCE_PER_EDGE,
    prefix_chars: int = DEFAULT_EVIDENCE_PREFIX_CHARS,
) -> tuple[CausalEdge, ...]:
    """Return ``edges`` with ``evidence`` set to at most ``per_edge`` linked chunk ids.

    Args:
        quotes: edge id -> the evidence text the LLM quoted (for the substring match).
        chunk_embeddings: rows aligned with ``chunks``, L2-normalised.
    """
    quotes = quotes or {}
    if not edges:
        return ()
    vectors = as_matrix(
        embedder.embed_documents([edge_text(e) for e in edges]), len(edges), who="embedder"
    )
    semantic = semantic_matches(vectors, np.asarray(chunk_embeddings, dtype=np.float32), tau)
    linked = []
    for edge, sem in zip(edges, semantic, strict=True):
        ids: dict[str, None] = {}
        for i in (*text_matches(quotes.get(edge.id, ""), chunks, prefix_chars), *sem):
            if len(ids) >= per_edge:
                break
            ids.setdefault(chunks[i].id, None)
        linked.append(replace(edge, evidence=tuple(ids)))
    return tuple(linked)


__all__ = ["edge_text", "link_evidence", "semantic_matches", "text_matches"]
