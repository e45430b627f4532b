"""Evidence linking phi: edge -> the chunks that state it (docs/llm.md, "Evidence").

``link_evidence`` is the one linker every builder ends with (and ``hcg relink``, and every edit):
a chunk states an edge when it holds the edge's quote or mechanism (the paper's text match: the
first ``prefix_chars``, 200, characters, ignoring whitespace and case, found through a
``QuoteIndex`` built once over the whole corpus), or names both endpoints: in one sentence, else
in different ones (``CorpusTerms``), ranked by BM25 of the edge's words and the endpoints'
closeness. At most ``per_edge`` (2) chunks per edge, and no chunk the evidence of more than
``chunk_cap`` edges by search. The linking embeds nothing: no semantic match, and no chunk is
linked for having been shown in a prompt.

``snippet`` cuts a chunk into a prompt excerpt that starts and ends at sentence boundaries;
``SentencePool`` finds the sentences of chunks nearest to a query (embedded once, on first use),
so a prompt's evidence line is the sentence about its metric, not the chunk's opening one.
``EntityMentions`` says which chunks name an entity (whole words; an acronym by its case).
"""

from __future__ import annotations

import bisect
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..config import (
    DEFAULT_EVIDENCE_CHUNK_SHARE,
    DEFAULT_EVIDENCE_PER_EDGE,
    DEFAULT_EVIDENCE_PREFIX_CHARS,
)
from ..corpus import word_set
from ..embedding import as_matrix
from ..ports import Embedder
from ..retrieval.lexical import STOPWORDS, BM25Index
from ..types import CausalEdge, CausalGraph, Chunk, Variable
from .extract import split_sentences

MIN_QUOTE_CHARS = 10  # a shorter quote matches too much to count as evidence
_WS = re.compile(r"\s+")
_PARAGRAPH = re.compile(r"\s*\n\s*\n\s*")
_SENTENCE_BREAK = re.compile(r"[.!?;:][\"')\]]?\s|\x01")
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
    >>> sorted(m.chunks_naming("lake erie")), sorted(m.chunks_naming("Lake Taihu"))
    ([0, 1], [0])
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
        ends = np.cumsum([len(self.sentences(i)) for i in todo])[:-1]
        self._vectors.update(zip(todo, np.split(vecs, ends), strict=True))

    def best(
        self, query: np.ndarray, idx: Sequence[int], score: Any = None
    ) -> list[tuple[float, int, int]]:
        """(score, chunk index, sentence index) over the chunks ``idx``, best first (ties: corpus
        order); ``score(sentence, cosine)`` may replace the plain cosine."""
        self._embed(idx)
        score = score or (lambda _sentence, cosine: cosine)
        out = [
            (score(self.sentences(i)[k], float(sim)), i, k)
            for i in dict.fromkeys(idx)
            for k, sim in enumerate(self._vectors[i] @ query)
        ]
        return sorted(out, key=lambda t: (-t[0], t[1], t[2]))

    def window(self, i: int, query: np.ndarray, chars: int) -> str:
        """Chunk ``i``'s sentence nearest to ``query``, then its neighbours (following first)
        while the excerpt stays within ``chars``; one line."""
        sents = self.sentences(i)  # never empty: a chunk without sentences is its own one
        lo = hi = self.best(query, [i])[0][2]
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


def _joined(parts: Sequence[str]) -> tuple[str, list[int]]:
    """The parts joined by a NUL character, and the offset where each part starts.

    >>> _joined(["ab", "", "c"])
    ('ab\\x00\\x00c', [0, 3, 4])
    """
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p) + 1
    return "\x00".join(parts), starts


class QuoteIndex:
    """The corpus normalized once and joined, with chunk offsets: a quote is found with one
    C-level substring search over the whole corpus, then mapped to chunks by bisection.

    >>> idx = QuoteIndex([Chunk("a", "x alpha\\nbeta y"), Chunk("b", "beta")])
    >>> idx.find("Alpha beta", 200)
    [0]
    """

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.text, self.starts = _joined([normalize_text(c.text) for c in chunks])

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


# ---------------------------------------------------------------- the linker: edge -> stating chunks

# Words a metric name uses for "how much" rather than "of what": they say nothing about which
# text states the metric ("WhiteBloodCellCount" is stated by "white blood cells").
MEASURE_WORDS = word_set("""
    amount count degree level levels number presence rate receipt received score status use usage
    value
""")
# Proximity: a chunk where the two endpoints sit within about one sentence of each other states
# the link more specifically than one naming them paragraphs apart; the weight halves at this
# many characters (a sentence is 100-200 characters in prose).
PROXIMITY_CHARS = 150.0
# Candidates per edge kept for the assignment (enough to replace chunks that reach their cap).
CANDIDATES_PER_LINK = 16
# Ways a link is made, in priority order (the report counts each).
LINK_WAYS = ("quote", "mechanism", "sentence", "chunk")
SENTENCE = LINK_WAYS.index("sentence")  # both endpoints named in one sentence of the chunk
CHUNK = LINK_WAYS.index("chunk")  # both named in the chunk, not in one sentence: the weakest
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def metric_words(metric: str) -> tuple[str, ...]:
    """The words of a metric name that a chunk must contain to express it (lower case): the
    CamelCase parts, without function words and measure words (``MEASURE_WORDS``).

    >>> metric_words("WhiteBloodCellCount"), metric_words("QualityOfLife")
    (('white', 'blood', 'cell'), ('quality', 'life'))
    >>> metric_words("CancerPresence"), metric_words("Count")
    (('cancer',), ('count',))
    """
    parts = [p.lower() for p in _CAMEL.findall(metric.replace("_", " "))]
    words = [p for p in parts if p not in STOPWORDS and p not in MEASURE_WORDS and len(p) > 1]
    return tuple(dict.fromkeys(words or [p for p in parts if len(p) > 1] or parts))


def endpoint_terms(variable: Variable) -> tuple[str, ...]:
    """What a chunk must name, as whole words, to express a variable: each of its entities, or,
    for a variable without one, its metric's words.

    >>> endpoint_terms(Variable("Survival", ("melanoma",)))
    ('melanoma',)
    >>> endpoint_terms(Variable("QualityOfLife"))
    ('quality', 'life')
    """
    if variable.entities:
        return tuple(dict.fromkeys(e for e in variable.entities if e.strip()))
    return metric_words(variable.metric)


def _whole_word_hits(text: str, term: str) -> list[int]:
    """Start offsets of ``term`` in ``text`` as whole words, a plural ending ("s", "es")
    allowed. A literal search, then a boundary check per hit: far faster than a regex with
    look-arounds, which defeat the regex engine's literal-prefix scan.

    >>> _whole_word_hits("cells, a cell; cellar. Cell", "cell")
    [0, 9]
    """

    def ends_word(at: int) -> bool:
        return at >= len(text) or not (text[at].isalnum() or text[at] == "_")

    out, n, at = [], len(term), text.find(term)
    while at >= 0:
        starts = at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")
        end = at + n
        if starts and (
            ends_word(end)
            or (text.startswith("s", end) and ends_word(end + 1))
            or (text.startswith("es", end) and ends_word(end + 2))
        ):
            out.append(at)
        at = text.find(term, at + 1)
    return out


class CorpusTerms:
    """The corpus whitespace-collapsed and joined once; where each term occurs, found once per
    term with one regex pass and kept as sorted global offsets (``positions``) and a boolean
    chunk mask (``mask``)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        # A blank line ends a sentence too (headings, list items): marked, then spaces collapsed.
        parts = [_WS.sub(" ", _PARAGRAPH.sub(" \x01 ", c.text or "")) for c in chunks]
        self.n = len(parts)
        self.text, starts = _joined(parts)
        self.starts = np.asarray(starts, dtype=np.int64)
        lower = self.text.lower()
        if len(lower) != len(self.text):  # a few characters lower-case to two: keep offsets
            lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in self.text)
        self.lower = lower
        ends = [m.start() for m in _SENTENCE_BREAK.finditer(self.text)]
        self.sentence_ends = np.unique(np.concatenate([np.asarray(ends, np.int64), self.starts]))
        self._pos: dict[str, np.ndarray] = {}

    def positions(self, term: str) -> np.ndarray:
        hit = self._pos.get(term)
        if hit is None:
            flat = _WS.sub(" ", term).strip()
            # "ALL" the leukaemia is not the word "all": an acronym is matched in its own case.
            text, flat = (self.text, flat) if is_acronym(flat) else (self.lower, flat.lower())
            hit = np.asarray(_whole_word_hits(text, flat), dtype=np.int64)
            self._pos[term] = hit
        return hit

    def chunk_of(self, offsets: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, offsets, side="right") - 1

    def mask(self, terms: Sequence[str]) -> np.ndarray:
        """Chunks naming every one of ``terms`` (none when ``terms`` is empty)."""
        out = np.full(self.n, bool(terms))
        for t in terms:
            out &= np.bincount(self.chunk_of(self.positions(t)), minlength=self.n) > 0
        return out

    def _union(self, terms: Sequence[str]) -> np.ndarray:
        found = [self.positions(t) for t in terms]
        return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)

    def nearest(self, a_terms: Sequence[str], b_terms: Sequence[str]) -> np.ndarray:
        """Per chunk, the fewest characters between an occurrence of one of ``a_terms`` and one
        of ``b_terms`` in that chunk (inf where the chunk lacks either)."""
        out = np.full(self.n, np.inf)
        a, b = self._union(a_terms), self._union(b_terms)
        if not a.size or not b.size:
            return out
        ca = self.chunk_of(a)
        at = np.searchsorted(b, a)
        for nb in (np.clip(at - 1, 0, b.size - 1), np.clip(at, 0, b.size - 1)):
            same = self.chunk_of(b[nb]) == ca
            dist = np.where(same, np.abs(b[nb] - a), np.inf)
            np.minimum.at(out, ca, dist)
        return out

    def one_sentence(self, a_terms: Sequence[str], b_terms: Sequence[str]) -> np.ndarray:
        """Per chunk, whether one of its sentences names one of ``a_terms`` and one of
        ``b_terms`` (sentences end at ".", "!", "?", ";" or ":" before a space, or a blank line)."""
        out = np.zeros(self.n, dtype=bool)
        a, b = self._union(a_terms), self._union(b_terms)
        if not a.size or not b.size:
            return out
        sa = np.searchsorted(self.sentence_ends, a, side="right")
        sb = np.searchsorted(self.sentence_ends, b, side="right")
        both = np.isin(sa, sb)
        out[self.chunk_of(a[both])] = True
        return out


@dataclass
class LinkStats:
    """What a linking did: links and edges per way, edges left without evidence, edges that got
    fewer than ``per_edge`` links because a chunk stating them was full (``chunk_cap``)."""

    edges: int = 0
    links: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LINK_WAYS, 0))
    edges_by_way: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LINK_WAYS, 0))
    edges_without_evidence: int = 0
    edges_short_by_cap: int = 0
    chunk_cap: int = 0
    per_edge: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "edges": self.edges,
            "links": sum(self.links.values()),
            "links_by_way": dict(self.links),
            "edges_by_first_way": dict(self.edges_by_way),
            "edges_without_evidence": self.edges_without_evidence,
            "edges_short_by_cap": self.edges_short_by_cap,
            "chunk_cap": self.chunk_cap,
            "per_edge": self.per_edge,
            "seconds": round(self.seconds, 3),
        }


def chunk_cap(
    n_edges: int,
    n_chunks: int,
    per_edge: int = DEFAULT_EVIDENCE_PER_EDGE,
    share: float = DEFAULT_EVIDENCE_CHUNK_SHARE,
) -> int:
    """The most edges one chunk may be the evidence of by search: ``share`` of the edges, or,
    when the corpus is too small for that, the even share of the links (``per_edge`` links per
    edge spread over the ``n_chunks`` chunks that name some endpoint), at least 1. Chunks that
    name no endpoint do not count, so adding unrelated text changes no evidence.

    >>> chunk_cap(2158, 1155), chunk_cap(195, 1155), chunk_cap(52, 8)
    (43, 3, 13)
    """
    even = -(-per_edge * n_edges // max(n_chunks, 1))  # ceiling division
    return max(1, int(share * n_edges), even)


def _edge_candidates(
    edge: CausalEdge,
    terms: Mapping[str, tuple[str, ...]],
    masks: Mapping[str, np.ndarray],
    corpus: CorpusTerms,
    bm25: Any,
    quote: str,
    quotes: QuoteIndex,
    prefix_chars: int,
    keep: int,
) -> list[tuple[int, int, float]]:
    """(way rank, chunk index, score) of the chunks that may state ``edge``, best first, at most
    ``keep`` per way: holders of its quote, holders of its mechanism, then chunks expressing both
    endpoints ranked by BM25 of the edge's words (share of the query's weight) plus closeness."""
    out: list[tuple[int, int, float]] = []
    seen: set[int] = set()
    for way, text in ((0, quote), (1, edge.mechanism)):
        for i in quotes.find(text, prefix_chars, limit=keep) if text else ():
            if i not in seen:
                seen.add(i)
                out.append((way, i, 1.0))
    src, tgt = terms.get(edge.source, ()), terms.get(edge.target, ())
    if not src or not tgt:
        return out
    both = masks[edge.source] & masks[edge.target]
    idx = np.flatnonzero(both)
    if not idx.size:
        return out
    about = f"{_metric_of(edge.source)} {_metric_of(edge.target)}"
    query = " ".join((*src, *tgt, about, edge.mechanism, quote))
    lexical = bm25.scores(query)[idx] / (bm25.max_score(query) or 1.0)
    # The metrics say what the edge is about (recurrence, survival...): the entities alone
    # match every chunk on the same topic, so the share of the metric words held counts apart.
    metric = bm25.scores(about)[idx] / (bm25.max_score(about) or 1.0)
    near = corpus.nearest(src, tgt)[idx]
    score = lexical + metric + 1.0 / (1.0 + near / PROXIMITY_CHARS)
    way = np.where(corpus.one_sentence(src, tgt)[idx], SENTENCE, CHUNK)
    order = np.lexsort((idx, -score, way))[:keep]
    for j in order:
        i = int(idx[j])
        if i not in seen:
            out.append((int(way[j]), i, float(score[j])))
    return out


def _metric_of(name: str) -> str:
    """The metric words of a variable name ``Metric(entities)``, for the edge's query."""
    return " ".join(metric_words(name.split("(", 1)[0]))


def link_evidence(
    edges: Sequence[CausalEdge],
    variables: Sequence[Variable],
    chunks: Sequence[Chunk],
    *,
    quotes: Mapping[str, str] | None = None,
    per_edge: int = DEFAULT_EVIDENCE_PER_EDGE,
    prefix_chars: int = DEFAULT_EVIDENCE_PREFIX_CHARS,
    chunk_share: float = DEFAULT_EVIDENCE_CHUNK_SHARE,
    stats: LinkStats | None = None,
) -> tuple[CausalEdge, ...]:
    """Return ``edges`` with ``evidence`` set to the chunks, anywhere in ``chunks``, that state
    them: at most ``per_edge`` each, and no chunk the evidence of more than ``chunk_cap`` edges.

    A chunk may state an edge four ways (``LINK_WAYS``), in this order: it holds the edge's
    quote (``quotes``, else ``edge.quote``), its first ``prefix_chars`` characters ignoring case
    and whitespace; it holds its mechanism the same way (an offline edge's mechanism is a corpus
    sentence); one of its sentences names both endpoints (``endpoint_terms``); or it names both
    in different sentences (used only for an edge nothing states more closely). Within a way,
    chunks rank by how much of the edge's words they hold (BM25, as a share of the query's
    weight), of its metrics' words, and how close the two endpoints sit. The links are then
    assigned best first across all edges (``_assign``): a chunk takes search links only while
    it is the evidence of fewer than ``chunk_cap`` edges, so a chunk that names many endpoints
    goes to the edges it states best and the others get their next chunk; a chunk holding an
    edge's own text is linked whatever its load (it is where the edge was read). Nothing else
    links a chunk: an edge no chunk states keeps no evidence.
    """
    t0 = time.perf_counter()
    stats = stats if stats is not None else LinkStats()
    stats.edges, stats.per_edge = len(edges), per_edge
    quotes = quotes or {}
    if not edges:
        stats.chunk_cap = chunk_cap(0, 0, per_edge, chunk_share)
        return ()
    corpus = CorpusTerms(chunks)
    index = QuoteIndex(chunks)
    bm25 = BM25Index([c.text for c in chunks])
    terms = {v.name: endpoint_terms(v) for v in variables}
    masks = {name: corpus.mask(t) for name, t in terms.items()}
    named = np.zeros(len(chunks), dtype=bool)  # chunks naming some endpoint: the cap's even share
    for name in {n for e in edges for n in (e.source, e.target)} & masks.keys():
        named |= masks[name]
    stats.chunk_cap = cap = chunk_cap(len(edges), int(named.sum()), per_edge, chunk_share)
    keep = max(per_edge, 1) * CANDIDATES_PER_LINK
    cands = []
    for e_i, edge in enumerate(edges):
        quote = quotes.get(edge.id) or edge.quote
        for way, c_i, score in _edge_candidates(
            edge, terms, masks, corpus, bm25, quote, index, prefix_chars, keep
        ):
            cands.append((way, -score, e_i, c_i))
    cands.sort()
    chosen, short = _assign(cands, len(edges), len(chunks), per_edge, cap)
    stats.edges_short_by_cap = sum(1 for e_i in short if len(chosen[e_i]) < per_edge)
    out = []
    for edge, picks in zip(edges, chosen, strict=True):
        for way, _neg, _c in picks:
            stats.links[LINK_WAYS[way]] += 1
        if picks:
            stats.edges_by_way[LINK_WAYS[min(p[0] for p in picks)]] += 1
        else:
            stats.edges_without_evidence += 1
        evidence = tuple(chunks[c].id for _w, _n, c in sorted(picks))
        # The same object when nothing changed: an edit that changes no edge then keeps the
        # compiled graph (retrieval.updates compares edges by identity).
        out.append(edge if evidence == edge.evidence else replace(edge, evidence=evidence))
    stats.seconds = time.perf_counter() - t0
    return tuple(out)


def _assign(
    cands: Sequence[tuple[int, float, int, int]],
    n_edges: int,
    n_chunks: int,
    per_edge: int,
    cap: int,
) -> tuple[list[list[tuple[int, float, int]]], set[int]]:
    """Links from sorted ``(way, -score, edge, chunk)`` candidates, best first: per edge its
    ``(way, -score, chunk)`` picks, and the edges that met a chunk already at ``cap``.

    Every edge's first link before any edge's second, so a full chunk costs an edge its second
    link, not its only one. A chunk that names both endpoints apart is taken only by an edge
    nothing states more closely; a chunk holding an edge's own text ignores the cap.
    """
    chosen: list[list[tuple[int, float, int]]] = [[] for _ in range(n_edges)]
    load = np.zeros(n_chunks, dtype=np.int64)
    short: set[int] = set()
    for rank in range(per_edge):
        linked = sum(map(len, chosen))
        for way, neg, e_i, c_i in cands:
            picks = chosen[e_i]
            if len(picks) != rank or any(c == c_i for _w, _n, c in picks):
                continue
            if way == CHUNK and any(w < CHUNK for w, _n, _c in picks):
                continue
            if way >= SENTENCE and load[c_i] >= cap:
                short.add(e_i)
                continue
            load[c_i] += 1
            picks.append((way, neg, c_i))
        if sum(map(len, chosen)) == linked:
            break  # no edge got another link: more rounds would change nothing
    return chosen, short


def relink_graph(
    graph: CausalGraph, *, per_edge: int = DEFAULT_EVIDENCE_PER_EDGE, **options: Any
) -> tuple[CausalGraph, LinkStats]:
    """``graph`` with every edge re-linked by ``link_evidence`` (no edge added or removed)."""
    stats = LinkStats()
    edges = link_evidence(
        graph.edges, graph.variables, graph.chunks, per_edge=per_edge, stats=stats, **options
    )
    return replace(graph, edges=edges), stats


def recorded_per_edge(
    report: Mapping[str, Any] | None, default: int = DEFAULT_EVIDENCE_PER_EDGE
) -> int:
    """The per-edge cap the graph's last linking used (its report's ``evidence.per_edge``), so
    a relink or an edit keeps the cap the build was given; ``default`` when none is recorded.

    >>> recorded_per_edge({"evidence": {"per_edge": 3}}), recorded_per_edge(None)
    (3, 2)
    """
    section = (report or {}).get("evidence") if isinstance(report, Mapping) else None
    value = section.get("per_edge") if isinstance(section, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return default


def evidence_figures(graph: CausalGraph) -> dict[str, Any]:
    """How a graph's evidence is spread: edges with evidence, chunks cited, the chunk that is
    the evidence of the most edges and its share of the edges."""
    per_chunk: Counter[str] = Counter(c for e in graph.edges for c in dict.fromkeys(e.evidence))
    n = len(graph.edges)
    top = max(per_chunk.values(), default=0)
    return {
        "edges": n,
        "edges_with_evidence": sum(1 for e in graph.edges if e.evidence),
        "links": graph.evidence_links,
        "chunks": len(graph.chunks),
        "chunks_cited": len(per_chunk),
        "max_edges_per_chunk": top,
        "max_share_of_edges": round(top / n, 4) if n else 0.0,
    }
