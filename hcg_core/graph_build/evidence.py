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

``snippet`` cuts a chunk into a prompt excerpt that starts and ends at sentence boundaries;
``SentencePool`` finds the sentences of chunks nearest to a query (embedded once, on first use),
so a prompt's evidence line is the sentence about its metric, not the chunk's opening one.
``EntityMentions`` says which chunks name an entity (whole words; an acronym by its case).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

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
from .extract import split_sentences

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


def is_acronym(text: str) -> bool:
    """Every letter upper case, two letters at least ("ALL", "B-ALL", "HER2").

    >>> is_acronym("ALL"), is_acronym("All"), is_acronym("A")
    (True, False, False)
    """
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def entity_pattern(entity: str) -> re.Pattern[str]:
    """Whole-word pattern (a plural ending allowed) for an entity in ``normalize_text`` form, or,
    for an acronym, in its own case: "ALL" the leukaemia is not the word "all".

    >>> p = entity_pattern("bone")
    >>> bool(entity_pattern("ALL").search("in all cases")), bool(p.search("x bones"))
    (False, True)
    """
    flat = _WS.sub(" ", entity).strip()
    body = re.escape(flat if is_acronym(flat) else flat.lower())
    return re.compile(rf"(?<!\w){body}(?:e?s)?(?!\w)")


class EntityMentions:
    """Which chunks name an entity, computed once per entity (one regex pass over the corpus).

    >>> m = EntityMentions([Chunk("a", "Lake Erie and Lake Taihu"), Chunk("b", "Lake Erie")])
    >>> sorted(m.chunks_naming("lake erie")), m.together(["Lake Erie", "Lake Taihu"])
    ([0, 1], True)
    """

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._flat = [_WS.sub(" ", c.text) for c in chunks]
        self._lower = [t.lower() for t in self._flat]
        self._found: dict[str, frozenset[int]] = {}

    def chunks_naming(self, entity: str) -> frozenset[int]:
        hit = self._found.get(entity)
        if hit is None:
            pattern = entity_pattern(entity)
            texts = self._flat if is_acronym(entity) else self._lower
            hit = frozenset(i for i, t in enumerate(texts) if pattern.search(t))
            self._found[entity] = hit
        return hit

    def together(self, entities: Sequence[str]) -> bool:
        """Whether one chunk names every one of ``entities``."""
        sets = [self.chunks_naming(e) for e in dict.fromkeys(entities)]
        return bool(sets) and bool(frozenset.intersection(*sets))


class SentencePool:
    """The sentences of chunks, embedded on first use and kept, for evidence lines chosen by
    meaning: ``best`` ranks the sentences of some chunks against a query vector, ``window`` gives
    a chunk's best sentence with its neighbours, within a character budget."""

    def __init__(self, chunks: Sequence[Chunk], embedder: Embedder) -> None:
        self.chunks = chunks
        self.embedder = embedder
        self._sentences: dict[int, list[str]] = {}
        self._vectors: dict[int, np.ndarray] = {}

    def sentences(self, i: int) -> list[str]:
        if i not in self._sentences:
            self._sentences[i] = split_sentences(self.chunks[i].text) or [self.chunks[i].text]
        return self._sentences[i]

    def _embed(self, idx: Sequence[int]) -> None:
        todo = [i for i in dict.fromkeys(idx) if i not in self._vectors]
        texts = [s for i in todo for s in self.sentences(i)]
        if not texts:
            return
        vecs = as_matrix(self.embedder.embed_documents(texts), len(texts), who="embedder")
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        at = 0
        for i in todo:
            n = len(self.sentences(i))
            self._vectors[i] = vecs[at : at + n]
            at += n

    def best(
        self, query: np.ndarray, idx: Sequence[int], score: Any = None
    ) -> list[tuple[float, int, int]]:
        """(score, chunk index, sentence index) over the chunks ``idx``, best first (ties: corpus
        order); ``score(sentence, cosine)`` may replace the plain cosine."""
        self._embed(idx)
        out = []
        for i in dict.fromkeys(idx):
            sims = self._vectors[i] @ query
            for k, sim in enumerate(sims):
                value = float(sim) if score is None else score(self.sentences(i)[k], float(sim))
                out.append((value, i, k))
        out.sort(key=lambda t: (-t[0], t[1], t[2]))
        return out

    def window(self, i: int, query: np.ndarray, chars: int) -> str:
        """Chunk ``i``'s sentence nearest to ``query``, then its neighbours (following first)
        while the excerpt stays within ``chars``; one line."""
        ranked = self.best(query, [i])
        sents = self.sentences(i)
        if not ranked:
            return snippet(self.chunks[i].text, chars)
        lo = hi = ranked[0][2]
        text = sents[lo]
        if len(text) > chars:
            return snippet(text, chars)
        while True:
            grown = False
            if hi + 1 < len(sents) and len(text) + len(sents[hi + 1]) + 1 <= chars:
                hi += 1
                text = f"{text} {sents[hi]}"
                grown = True
            if lo > 0 and len(text) + len(sents[lo - 1]) + 1 <= chars:
                lo -= 1
                text = f"{sents[lo]} {text}"
                grown = True
            if not grown:
                return text


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
    "EntityMentions",
    "QuoteIndex",
    "SentencePool",
    "entity_pattern",
    "is_acronym",
    "edge_text",
    "link_evidence",
    "normalize_text",
    "semantic_matches",
    "snippet",
    "text_matches",
]
