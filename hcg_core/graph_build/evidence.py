"""Evidence linking phi: edge -> chunks, the paper's two matches (Appendix B), as pure functions.

(1) Text match: the first ``prefix_chars`` (200) characters of an edge's quoted evidence, found in
a chunk. Quotes are matched ignoring whitespace differences and case (a model copies a wrapped
line as one line), through a ``QuoteIndex`` built once over the whole corpus. (2) Semantic match:
the embedding of ``"source -> target: mechanism"`` against the pre-embedded chunks, linking chunks
with cosine >= ``tau`` (0.78), computed in blocks with a top-k per edge, never as a full
edges x chunks matrix. At most ``per_edge`` (2) chunks per edge: text matches first (corpus
order), then semantic matches (most similar first). An edge that neither match links may fall
back to (3) the chunk most similar to it among those the LLM was shown when it judged the edge,
if within cosine ``shown_tau``: the text its judgement rests on (counted apart in the report).

``snippet`` cuts a chunk into a prompt excerpt that starts and ends at sentence boundaries.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..config import (
    DEFAULT_EVIDENCE_PER_EDGE,
    DEFAULT_EVIDENCE_PREFIX_CHARS,
    DEFAULT_EVIDENCE_TAU,
    DEFAULT_SHOWN_TAU,
)
from ..embedding import as_matrix
from ..ports import Embedder
from ..types import CausalEdge, Chunk

SEMANTIC_BLOCK = 512  # edges per block of the semantic match (bounds memory: block x chunks)
MIN_QUOTE_CHARS = 10  # a shorter quote matches too much to count as evidence
_WS = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?\s")


def normalize_text(text: str) -> str:
    """Collapse whitespace and lower-case: the form quotes and chunks are compared in.

    >>> normalize_text("A diet high in salt\\n raises  Blood")
    'a diet high in salt raises blood'
    """
    return _WS.sub(" ", text or "").strip().lower()


def snippet(text: str, chars: int) -> str:
    """An excerpt of at most about ``chars`` characters at sentence boundaries, one line.

    A chunk that starts mid-sentence (the overlap of the chunker) starts at its next sentence;
    the end is the last sentence end within ``chars``, else the last whole word plus an ellipsis.

    >>> snippet("raises blood. Salt raises pressure. Exercise lowers it a lot.", 40)
    'Salt raises pressure.'
    """
    flat = _WS.sub(" ", text or "").strip()
    if flat[:1].islower():
        m = _SENTENCE_END.search(flat)
        if m and m.end() < len(flat) and m.end() <= max(chars // 2, 1):
            flat = flat[m.end() :]
    if len(flat) <= chars:
        return flat
    head = flat[: chars + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= chars // 3:
        return head[: ends[-1]].strip()
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head[:chars]).rstrip(",;: ") + " ..."


def edge_text(edge: CausalEdge) -> str:
    """The string the paper embeds for an edge's semantic match."""
    return f"{edge.source} -> {edge.target}: {edge.mechanism}"


class QuoteIndex:
    """The corpus normalized once and joined, with chunk offsets: a quote is found with one
    C-level substring search over the whole corpus, then mapped to chunks by bisection.

    >>> idx = QuoteIndex([Chunk("a", "x alpha\\nbeta y"), Chunk("b", "beta")])
    >>> idx.find("Alpha beta", 200)
    [0]
    """

    SEP = "\x00"

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        parts = [normalize_text(c.text) for c in chunks]
        self.starts: list[int] = []
        pos = 0
        for p in parts:
            self.starts.append(pos)
            pos += len(p) + 1
        self.text = self.SEP.join(parts)

    def find(
        self,
        quote: str,
        prefix_chars: int = DEFAULT_EVIDENCE_PREFIX_CHARS,
        limit: int | None = None,
    ) -> list[int]:
        """Indices of chunks holding the quote's first ``prefix_chars`` characters, corpus order;
        only the first ``limit`` chunks when given.

        The limit matters for text that repeats across the corpus (boilerplate, duplicated
        documents): without it every occurrence is visited, so linking E edges that quote such
        text costs O(E x occurrences), which grows with the square of the corpus.

        >>> QuoteIndex([Chunk(str(i), "the same boilerplate") for i in range(5)]).find(
        ...     "same boilerplate", limit=2)
        [0, 1]
        """
        key = normalize_text(quote)[:prefix_chars].strip().strip("\"'“”…. ")
        if len(key) < MIN_QUOTE_CHARS or (limit is not None and limit <= 0):
            return []
        out: list[int] = []
        at = self.text.find(key)
        while at >= 0:
            i = bisect.bisect_right(self.starts, at) - 1
            if not out or out[-1] != i:
                out.append(i)
                if limit is not None and len(out) >= limit:
                    break
            # Resume at the next chunk: a chunk counts once, however often it holds the quote.
            nxt = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.text)
            at = self.text.find(key, max(at + 1, nxt))
        return out


def text_matches(quote: str, chunks: Sequence[Chunk], prefix_chars: int) -> list[int]:
    """Indices of chunks containing the quote's first ``prefix_chars`` characters.

    >>> text_matches("alpha  beta", [Chunk("a", "x alpha beta y"), Chunk("b", "beta")], 200)
    [0]
    """
    return QuoteIndex(chunks).find(quote, prefix_chars)


def semantic_matches(
    edge_vectors: np.ndarray,
    chunk_embeddings: np.ndarray,
    tau: float,
    *,
    top_k: int = DEFAULT_EVIDENCE_PER_EDGE,
    block: int = SEMANTIC_BLOCK,
) -> list[list[int]]:
    """Per edge, at most ``top_k`` chunks with cosine >= tau, most similar first (ties: corpus
    order); computed ``block`` edges at a time."""
    n = len(edge_vectors)
    if n == 0 or chunk_embeddings.size == 0 or top_k <= 0:
        return [[] for _ in range(n)]
    k = min(top_k, chunk_embeddings.shape[0])
    out: list[list[int]] = []
    for lo in range(0, n, block):
        sims = edge_vectors[lo : lo + block] @ chunk_embeddings.T
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else None
        for r, row in enumerate(sims):
            idx = part[r] if part is not None else np.arange(len(row))
            idx = idx[row[idx] >= tau]
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
    index: QuoteIndex | None = None,
    shown: Mapping[str, Sequence[int]] | None = None,
    shown_tau: float = DEFAULT_SHOWN_TAU,
    stats: dict[str, int] | None = None,
) -> tuple[CausalEdge, ...]:
    """Return ``edges`` with ``evidence`` set to at most ``per_edge`` linked chunk ids.

    Args:
        quotes: edge id -> the evidence text the LLM quoted (for the text match).
        chunk_embeddings: rows aligned with ``chunks``, L2-normalised.
        index: a prebuilt ``QuoteIndex`` of ``chunks`` (built here when None).
        shown: edge id -> indices of the chunks shown to the call that judged the edge (the
            fallback); ``stats`` gets ``text``, ``semantic`` and ``shown`` edge counts.
    """
    quotes = quotes or {}
    stats = stats if stats is not None else {}
    for key in ("text", "semantic", "shown"):
        stats.setdefault(key, 0)
    if not edges:
        return ()
    index = index if index is not None else QuoteIndex(chunks)
    vectors = as_matrix(
        embedder.embed_documents([edge_text(e) for e in edges]), len(edges), who="embedder"
    )
    semantic = semantic_matches(
        vectors, np.asarray(chunk_embeddings, dtype=np.float32), tau, top_k=per_edge
    )
    shown = shown or {}
    emb = np.asarray(chunk_embeddings, dtype=np.float32)
    linked = []
    for edge, vec, sem in zip(edges, vectors, semantic, strict=True):
        ids: dict[str, None] = {}
        # Only the first per_edge text matches can be linked (they come first), so stop there;
        # at least one, which is what the "text" count needs.
        text = index.find(quotes.get(edge.id, ""), prefix_chars, limit=max(per_edge, 1))
        for i in (*text, *sem):
            if len(ids) >= per_edge:
                break
            ids.setdefault(chunks[i].id, None)
        if text:
            stats["text"] += 1
        elif sem:
            stats["semantic"] += 1
        elif shown.get(edge.id):
            cand = [i for i in shown[edge.id] if 0 <= i < len(chunks)]
            sims = emb[cand] @ vec if cand else np.zeros(0)
            if len(sims) and float(sims.max()) >= shown_tau:
                ids[chunks[cand[int(np.argmax(sims))]].id] = None
                stats["shown"] += 1
        linked.append(replace(edge, evidence=tuple(ids)))
    return tuple(linked)


__all__ = [
    "QuoteIndex",
    "edge_text",
    "link_evidence",
    "normalize_text",
    "semantic_matches",
    "snippet",
    "text_matches",
]
