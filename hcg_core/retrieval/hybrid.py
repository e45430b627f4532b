"""The default retrieval mode: fuse BM25, dense similarity and the graph walk, then pack by MMR.

The unit ranked and returned is the stored chunk (option ``passage_words`` splits every chunk into
passages and returns those, ``passages.py``). ``HybridRanker.rank`` runs four stages, each a method
with its own docstring:

1. ``_candidates``: each signal's best units: BM25 (``lexical.py``), the dense cosine of the query
   against the unit's chunk vector, and for an English question the units in another language
   best by character n-grams (``grams.py``). The graph signal is the walk's mass per chunk
   (``walk.py``), the only one: the paper route adds no candidate here (the retriever attaches
   its causal paths to the results that are its evidence, docs/evaluation.md).
2. ``_fused``: the text signals as z-scores against their own best candidates (``standardise``),
   summed; a unit in another language, which BM25 cannot match, takes the better of its dense and
   n-gram evidence in BM25's place; the graph signal, on the same scale, lifts the units a text
   signal also found.
3. ``_pack``: greedy maximal marginal relevance (MMR): relevance minus redundancy with what is
   already chosen (cosine of BM25 term vectors), skipping a unit that adds no new text; the
   pieces of a short text block a user's splitter cut apart follow the first of them picked
   (``group_blocks``, ``hcg_core/blocks.py``).
4. ``_in_reading_order``: those pieces in the order they were written (``blocks.reading_order``).

The picks are returned in that order, each with a calibrated score in [0, 1]
(``calibrated_scores``), the words an earlier result already returned cut from overlapping units
(``repeats.py``).

Each stage's heuristics have a leave-one-out measurement in benchmarks/ranking_variants.py
(docs/evaluation.md). ``use_graph=False`` runs exactly the same pipeline with the graph signal
removed: the ablation that measures what the graph adds.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..blocks import (
    blank_line_parts,
    chunk_spans,
    groupable,
    part_vector_rows,
    reading_order,
    short_blocks,
)
from ..config import DEFAULT_DIVERSITY, HybridConfig
from ..corpus import english_word_counts, reads_not_english
from ..errors import ConfigError
from ..types import Chunk, RetrievalResult, RetrievedChunk
from .dense import DenseIndex, NumpyDenseIndex
from .grams import GramIndex
from .lexical import BM25Index, Growable, top_k_indices
from .passages import split_passages
from .repeats import array_word_spans, joined_parts, without_repeats


def standardise(scores: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Scores as z-scores against their best ``pool`` rows, clipped at 0 and divided by 3.

    This is query-dependent fusion (CombSUM over z-scores): a signal whose best rows stand far above
    the rest (a clear match) weighs more in the sum than a signal whose scores are flat (no clear
    match), where max-normalisation would give both tops 1.0. The divisor puts a row three standard
    deviations above the pool's mean at 1.0, the scale of the graph weight. With under two scored
    rows the z-score is undefined; then the scores are divided by their maximum.

    >>> standardise(np.array([4.0, 2.0, 1.0, 1.0]), np.array([0, 1, 2, 3])).round(3).tolist()
    [0.544, 0.0, 0.0, 0.0]
    >>> standardise(np.array([0.0, 2.0]), np.array([1])).tolist()
    [0.0, 1.0]
    """
    top = scores[pool]
    top = top[top > 0]
    if top.size < 2:
        peak = float(top.max()) if top.size else 0.0
        return scores / peak if peak > 0 else np.zeros_like(scores)
    # top.mean() and top.std() (numpy's own steps, so the same bits), without their overhead.
    mean = float(top.sum()) / top.size
    deviation = top - mean
    std = math.sqrt(float((deviation * deviation).sum()) / top.size)
    if std <= 0:
        return (scores >= mean).astype(np.float64) * (scores > 0)
    # np.maximum: what np.clip with no upper bound runs, without its wrapper.
    return np.maximum((scores - mean) / std, 0.0) / _Z_SCALE


# A z-score of this many standard deviations counts as 1.0 in the fused relevance.
_Z_SCALE = 3.0

GAP_CANDIDATES = 10
"""Foreign units, best by character n-grams, that join an English question's candidates: room for
the few abstracts in another language a question may be about; the fused score decides whether
they are picked."""
GAP_MIN_Z = 2.0
"""A foreign unit's n-gram evidence counts from this many standard deviations above the foreign
candidates' mean. HolisQA dev sets (graph off), against no n-gram evidence: from 2 SD gold-context
recall +2.5 / +1.3 points and answer recall -0.6 / -0.5 (``ranking_variants.py``); from 1 SD, in a
scratch run, +2.8 / +1.8 and -1.1 / -1.0."""


def calibrated_scores(
    fused: np.ndarray,
    rows: np.ndarray,
    bm25_abs: np.ndarray,
    dense_abs: np.ndarray,
    config: HybridConfig,
) -> np.ndarray:
    """Scores in [0, 1] for the returned ``rows``, in their order (best first).

    The fused relevance ranks well within one query but its scale is relative to that query
    (z-scores). The reported score is the query's *match quality*, the highest weighted mean of a
    returned unit's absolute parts (share of BM25 term weight matched, dense cosine above the
    query's background, ``above_background``), scaled by each unit's fused relevance relative to
    the best one. So the first result scores what the query matched at best (an off-topic query
    scores low, see docs/configuration.md), and scores never exceed 1 nor rise down the list.

    >>> from hcg_core.config import HybridConfig
    >>> calibrated_scores(np.array([2.0, 1.0, 0.5]), np.array([0, 1]), np.array([0.4, 0.2, 0.0]),
    ...                   np.array([0.6, 0.5, 0.1]), HybridConfig()).round(2).tolist()
    [0.5, 0.25]
    """
    if rows.size == 0:
        return np.zeros(0)
    weight = config.bm25_weight + config.dense_weight
    # The best match among the returned units: usually the first; not when a unit in another
    # language ranks first on filled evidence (its own BM25 share is 0 for an English question).
    quality = (
        float(np.max(config.bm25_weight * bm25_abs[rows] + config.dense_weight * dense_abs[rows]))
        / weight
        if weight > 0
        else 0.0
    )
    top = float(fused[rows[0]])
    relative = fused[rows] / top if top > 0 else np.zeros(rows.size)
    # Rows come in pick order, where a unit may follow a more relevant one that MMR passed over
    # first: the running minimum keeps scores non-increasing down the list, as users sort by them.
    return np.clip(quality * np.minimum.accumulate(relative), 0.0, 1.0)


def above_background(cosines: np.ndarray, background: float) -> np.ndarray:
    """Cosines rescaled so the query's background (its mean cosine to the corpus) maps to 0, 1 to 1.

    Why: embedders differ in where unrelated text lands. An unrelated chunk is near cosine 0.1-0.3
    to a query under MiniLM but 0.75-0.85 under multilingual-e5, so a raw cosine in a score would
    make a cut-off mean different things per embedder. Measured against its own background, a
    query's best match scores about the same under both (docs/embedders.md). A background at or
    below 0 leaves the cosines as they are (clipped to [0, 1]).

    >>> above_background(np.array([0.9, 0.8, 0.5]), 0.8).round(2).tolist()
    [0.5, 0.0, 0.0]
    >>> above_background(np.array([0.4, -0.1]), -0.2).round(2).tolist()
    [0.4, 0.0]
    """
    bg = min(max(background, 0.0), _MAX_BACKGROUND)
    return np.clip((cosines - bg) / (1.0 - bg), 0.0, 1.0)


# A background cosine this close to 1 means the corpus is one text repeated; cap it so the
# rescaling never divides by (almost) zero.
_MAX_BACKGROUND = 0.99


def _ranks(order: np.ndarray, n: int) -> np.ndarray:
    """1-based rank of each row in ``order``; 0 for rows not in it."""
    r = np.zeros(n, dtype=np.int64)
    r[order] = np.arange(1, order.size + 1)
    return r


def mmr_pack(
    relevance: np.ndarray,
    features: np.ndarray,
    lengths: np.ndarray,
    *,
    k: int | None,
    word_budget: int | None,
    diversity: float = DEFAULT_DIVERSITY,
    spans: np.ndarray | None = None,
    repeats_kept: bool = True,
    groups: np.ndarray | None = None,
    owners: np.ndarray | None = None,
) -> np.ndarray:
    """Greedy MMR over candidates: positions (into ``relevance``) in pick order.

    Redundancy of a candidate is its largest dot product with a picked candidate's row of
    ``features`` (unit rows, so a cosine); only picked rows are multiplied, never all pairs.
    Stops at ``k`` picks or once ``word_budget`` words are reached (the chunk that crosses the
    budget is kept: the caller cuts, we never return a partial chunk).

    ``spans`` is ``(n, 3)`` ``(document, start, end)``: where each candidate lies in its document.
    With it, a candidate whose span picked spans already cover whole is skipped (it would add no
    new text; the overlap of a partly new one is cut from the result, ``repeats.without_repeats``).
    ``repeats_kept=False``: a pick adds only its new share of words (by span) to the budget.

    ``groups`` (one number per candidate, -1 for none) joins the pieces of one passage
    (``blocks.short_blocks``): once one is picked, the others follow it at once, in the order given,
    as the rest of the passage it belongs to.

    ``owners`` (one number per candidate) names the result each candidate comes back in (the parts
    of one piece, ``blocks.blank_line_parts``, come back as the piece): ``k`` counts results.

    >>> rel = np.array([1.0, 0.95, 0.5])
    >>> feats = np.array([[1.0, 0.0], [0.9, 0.436], [0.0, 1.0]])
    >>> mmr_pack(rel, feats, np.array([10, 10, 10]), k=2, word_budget=None).tolist()
    [0, 2]
    >>> mmr_pack(rel, feats, np.array([10, 10, 10]), k=2, word_budget=None, diversity=1.0).tolist()
    [0, 1]
    >>> inside = np.array([[0, 0, 10], [0, 2, 8], [1, 0, 10]])  # row 1 lies inside row 0
    >>> mmr_pack(rel, feats, np.array([10, 10, 10]), k=2, word_budget=None, diversity=1.0,
    ...          spans=inside).tolist()
    [0, 2]
    >>> mmr_pack(rel, feats, np.array([10, 10, 10]), k=2, word_budget=None,
    ...          groups=np.array([3, 3, -1])).tolist()
    [0, 1]
    """
    n = relevance.shape[0]
    lo, hi = (float(relevance.min()), float(relevance.max())) if n else (0.0, 0.0)
    rel = (relevance - lo) / (hi - lo) if hi > lo else np.ones(n)
    state = _Packing(
        features,
        lengths,
        limit=n if k is None else min(int(k), n),
        word_budget=word_budget,
        repeats_kept=repeats_kept,
        # The coverage check compares one span with the few picked ones: plain Python ints,
        # since numpy's per-call overhead on arrays of k rows costs more than the arithmetic.
        span_rows=spans.tolist() if spans is not None else None,
        owner_rows=owners.tolist() if owners is not None else None,
    )
    state.gain, state.weight = diversity * rel, 1.0 - diversity
    state.score = state.gain - state.weight * state.redundancy
    while state.room() and state.taken < n:
        j = int(state.score.argmax())
        if state.take(j) and groups is not None and groups[j] >= 0:
            for m in (groups == groups[j]).nonzero()[0].tolist():
                if state.gain[m] > -np.inf and state.room():  # not yet taken
                    state.take(m)
    return np.asarray(state.picked, dtype=np.int64)


@dataclass
class _Packing:
    """One greedy packing's state (``mmr_pack``): the picks so far, the words they hold and every
    candidate's redundancy with them."""

    features: np.ndarray
    lengths: np.ndarray
    limit: int
    word_budget: int | None
    repeats_kept: bool
    span_rows: list[list[int]] | None
    owner_rows: list[int] | None
    redundancy: np.ndarray = field(init=False)
    # Each candidate's MMR score, gain - weight * redundancy; both -inf once it is taken
    # (picked or skipped).
    gain: np.ndarray = field(init=False)
    weight: float = field(init=False)
    score: np.ndarray = field(init=False)
    picked: list[int] = field(default_factory=list)
    picked_spans: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # per document
    results: set[int] = field(default_factory=set)  # the owners picked
    counted: dict[int, int] = field(default_factory=dict)  # words each pick added to the budget
    taken: int = 0  # candidates no longer available (picked or skipped)
    words: int = 0

    def __post_init__(self) -> None:
        self.redundancy = np.zeros(self.lengths.shape[0])

    def room(self) -> bool:
        count = len(self.picked) if self.owner_rows is None else len(self.results)
        return count < self.limit and (self.word_budget is None or self.words < self.word_budget)

    def take(self, j: int) -> bool:
        """Pick candidate ``j`` unless picked spans already cover it whole; True when the picks
        grew (not when ``j`` was skipped, nor when it took back as many parts as it adds)."""
        before = len(self.picked)
        self.gain[j] = self.score[j] = -np.inf
        self.taken += 1
        new = 1.0  # share of the candidate's span that no picked span covers
        if self.span_rows is not None and self.picked:
            g, s, e = self.span_rows[j]
            if e > s:
                new = 1.0 - _covered_length(self.picked_spans.get(g, ()), s, e) / (e - s)
                if new <= 0.0:
                    return False
        self.picked.append(j)
        if self.owner_rows is not None:
            self.results.add(self.owner_rows[j])
        if self.span_rows is not None:
            g, s, e = self.span_rows[j]
            self.picked_spans.setdefault(g, []).append((s, e))
        # Only the new part counts against the budget: the repeated part is cut from the
        # result (``repeats.without_repeats``).
        length = int(self.lengths[j])
        self.counted[j] = length if self.repeats_kept else int(round(length * new))
        self.words += self.counted[j]
        if self.owner_rows is not None and self.span_rows is not None:
            self._drop_held(j)
        if self.room():
            # Only the pick's own terms add to a product with it: their rows of the term-major
            # features (``word_features``), a few dozen of the candidates' shared terms. After
            # the last pick nothing reads it.
            by_term = self.features.T
            row = by_term[:, j]
            terms = row.nonzero()[0]
            self.redundancy = np.maximum(self.redundancy, row[terms] @ by_term[terms])
            self.score = self.gain - self.weight * self.redundancy
        return len(self.picked) > before

    def _drop_held(self, j: int) -> None:
        """Take back the short parts pick ``j`` holds whole (they lay in the overlap of two
        pieces): they add nothing now and the cut of repeats would drop them, so ``k`` still
        counts results that come back."""
        spans = self.span_rows
        g, s, e = spans[j]
        held = [
            i
            for i in self.picked[:-1]
            if spans[i][0] == g and s <= spans[i][1] and spans[i][2] <= e
        ]
        for i in held:
            self.picked.remove(i)
            self.words -= self.counted[i]
        if held:
            self.results.clear()
            self.results.update(self.owner_rows[i] for i in self.picked)


def _covered_length(spans: Sequence[tuple[int, int]], start: int, end: int) -> int:
    """How much of ``[start, end)`` the union of ``spans`` covers (they may overlap each other).

    >>> _covered_length([(0, 40), (5, 35)], 10, 50)
    30
    """
    covered, reach = 0, start
    for a, b in sorted((max(a, start), min(b, end)) for a, b in spans if a < end and b > start):
        if b > reach:
            covered += b - max(a, reach)
            reach = b
    return covered


@dataclass
class _Candidates:
    """One query's signals over the units, as stage 1 (``HybridRanker._candidates``) found them."""

    query: str
    query_vec: np.ndarray | None
    use_graph: bool = True
    tokens: Sequence[str] = ()  # the query's BM25 tokens, found once
    ok: np.ndarray | None = None  # the filter over units (None: every unit allowed)
    bm25: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bm_order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dense: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dn_order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dense_cos: Any = None  # _ChunkCosines: fetches exact cosines on demand
    graph_order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    graph_part: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fill: np.ndarray | None = None  # foreign units whose BM25 gap is filled
    gram_cos: np.ndarray | None = None
    gap: np.ndarray | None = None
    pool: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class HybridRanker:
    """Fusion of graph, BM25 and dense signals plus budget packing, compiled once per corpus.

    Setup: ``HybridRanker(chunks, chunk_embeddings)`` splits the chunks into passages and builds the
    BM25 index and the per-passage word counts and spans.
    Use: ``rank(query, query_vec, k=10, word_budget=2000, walk=...)``.
    Edits: ``extended(new_chunks, embeddings)`` / ``subset(keep, embeddings)`` return a ranker over
    more or fewer chunks, splitting and tokenising only the new ones; this one is unchanged.

    >>> from hcg_core.types import Chunk
    >>> chunks = [Chunk("a", "aspirin thins the blood"), Chunk("b", "statins lower cholesterol"),
    ...           Chunk("c", "aspirin prevents clots in blood vessels")]
    >>> ranker = HybridRanker(chunks, None)
    >>> [c.chunk.id for c in ranker.rank("aspirin blood", None, k=2).chunks]
    ['a', 'c']
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        chunk_embeddings: np.ndarray | None,
        config: HybridConfig | None = None,
        *,
        bm25: BM25Index | None = None,
        dense: DenseIndex | None = None,
        grams: GramIndex | None = None,
    ):
        self.chunks = tuple(chunks)
        self.config = config or HybridConfig()
        # The packed unit: passages of the chunks (or the chunks, passage_words 0). Row i of every
        # per-unit array below is self.units[i]; self.parent[i] is its chunk's row.
        units, parent, part_at = self._split(self.chunks)
        self.chunk_embeddings = _checked_embeddings(chunk_embeddings, len(self.chunks))
        # Sum of the chunk vectors: the query's background cosine is its dot with their mean.
        self._embedding_sum = _vector_sum(self.chunk_embeddings)
        # Dense search goes through the seam (retrieval/dense.py): this index when given (a
        # vector store the adapters wrap), else the in-process matrix of chunk_embeddings.
        self.dense_index = dense
        self.bm25 = bm25 if bm25 is not None else BM25Index([u.text for u in units])
        if self.bm25.n_docs != len(units):
            raise ConfigError(
                f"the BM25 index has {self.bm25.n_docs} documents for {len(units)} passages"
            )
        self._no_units()
        self._append_units(units, parent, part_at)
        # Character n-grams for an English question's language gap (config.DEFAULT_GAP_CHAR_GRAMS):
        # built once a chunk reads as not English, over all chunks (their counts give the idf); a
        # unit takes its chunk's match, as it takes its chunk's cosine, so any clone over the same
        # chunks (``grams``) hands its index over, whatever its unit split.
        self.grams: GramIndex | None = None
        self._take_grams(grams, 0)

    def _no_units(self) -> None:
        """Empty per-unit arrays, for ``_append_units`` to fill."""
        self.units: tuple[Chunk, ...] = ()
        self._parent = Growable(np.zeros(0, dtype=np.int64))
        self._word_counts = Growable(np.zeros(0, dtype=np.int64))
        self._spans: Growable | None = Growable(np.zeros((0, 3), dtype=np.int64))
        self._span_docs: dict[str, int] = {}
        # blocks.short_blocks of the units, with the grouped rows sorted by block (their block
        # numbers, then the rows): computed when first read.
        self._blocks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Each unit's characters in its chunk's text when it is a part of a piece cut at a blank
        # line (blocks.blank_line_parts), else (-1, -1); and, computed when first read, the chunk
        # row whose vector each unit reads (blocks.part_vector_rows) with the rows sorted by it.
        self._part_at = Growable(np.zeros((0, 2), dtype=np.int64))
        self._parts = 0  # how many units are such parts
        self._vector_rows: tuple[np.ndarray, np.ndarray | None] | None = None
        # Units that read as not English (config.DEFAULT_FILL_LANGUAGE_GAP).
        self._not_english = Growable(np.zeros(0, dtype=bool))
        # Chunk id -> unit rows; shared with later snapshots (extended), which only add keys.
        self._units_of: list[Any] = [{}, 0]
        # Unit text -> its corpus.word_spans as an (n, 2) int32 array, found when a query first
        # cuts the unit's repeats (``unit_word_spans``): at most 8 bytes per word of the units.
        # Keyed by text, so snapshots that add units (extended) share it; a subset starts afresh.
        self._word_spans: dict[str, np.ndarray] = {}

    @property
    def _uses_grams(self) -> bool:
        return self.config.fill_language_gap and self.config.gap_char_grams

    def _take_grams(self, grams: GramIndex | None, first: int) -> None:
        """Use ``grams`` (another ranker's index over these chunks), or add the chunks from row
        ``first`` on to this one's (built with the first foreign chunk: then from every chunk,
        once)."""
        if not self._uses_grams:
            return
        if grams is not None:
            if grams.n_units != len(self.chunks):
                raise ConfigError(
                    f"the n-gram index has {grams.n_units} chunks for {len(self.chunks)}"
                )
            self.grams = grams
            return
        foreign = self._chunks_not_english(first)
        if self.grams is not None:
            self.grams = self.grams.extended([c.text for c in self.chunks[first:]], foreign)
        elif foreign.any():
            # The first foreign chunk: the idf counts every chunk, the earlier ones too.
            every = self._chunks_not_english(0) if first else foreign
            self.grams = GramIndex.build([c.text for c in self.chunks], every)

    def _chunks_not_english(self, first: int) -> np.ndarray:
        """Whether each chunk from row ``first`` on reads as not English."""
        if len(self.units) == len(self.chunks):  # the units are the chunks: already judged
            return self._not_english.view(len(self.units))[first:]
        return np.fromiter(
            (reads_not_english(c.text) for c in self.chunks[first:]), bool, len(self.chunks) - first
        )

    def _split(self, chunks: Sequence[Chunk]) -> tuple[tuple[Chunk, ...], np.ndarray, np.ndarray]:
        """The units of ``chunks`` (passages of every chunk with ``passage_words``, else the
        chunks), each user's piece cut at its blank lines with ``group_blocks``; their chunk
        rows, and each part's characters in its chunk (``blocks.blank_line_parts``)."""
        units, parent = split_passages(chunks, self.config.passage_words)
        if self.config.group_blocks:
            return blank_line_parts(units, parent)
        return units, parent, np.full((len(units), 2), -1, dtype=np.int64)

    def background(self, query_vec: np.ndarray | None) -> float:
        """The query's mean cosine to all chunks (0 without chunk vectors): one dot product."""
        if query_vec is None or self._embedding_sum is None or not len(self.chunks):
            return 0.0
        return float(np.dot(query_vec, self._embedding_sum)) / len(self.chunks)

    @property
    def dense(self) -> DenseIndex | None:
        """Where dense candidates come from: the given index, else the chunk vectors in memory."""
        if self.dense_index is not None:
            return self.dense_index
        return None if self.chunk_embeddings is None else NumpyDenseIndex(self.chunk_embeddings)

    # ------------------------------------------------------------------ per-unit arrays

    @property
    def parent(self) -> np.ndarray:
        return self._parent.view(len(self.units))

    @property
    def word_counts(self) -> np.ndarray:
        return self._word_counts.view(len(self.units))

    @property
    def spans(self) -> np.ndarray | None:
        """``(n, 3)`` (document number, start word, end word) when every unit carries them."""
        return self._spans.view(len(self.units)) if self._spans is not None else None

    @property
    def blocks(self) -> np.ndarray | None:
        """Each unit's short text block (``blocks.short_blocks``; -1 for none), None without
        spans. Computed on first use and kept: edits return a new ranker (``extended``,
        ``subset``), which computes its own."""
        spans = self.spans
        if spans is None:
            return None
        if self._blocks is None:
            texts = [u.text for u in self.units]
            blocks = short_blocks(spans, texts, self.word_counts, groupable(self.units))
            grouped = np.flatnonzero(blocks >= 0)
            rows = grouped[np.argsort(blocks[grouped], kind="stable")]
            self._blocks = (blocks, blocks[rows], rows)
        return self._blocks[0]

    @property
    def part_at(self) -> np.ndarray:
        """``(n, 2)``: each unit's characters in its chunk's text when it is a part of a piece
        cut at a blank line (``blocks.blank_line_parts``), else ``(-1, -1)``."""
        return self._part_at.view(len(self.units))

    @property
    def vector_row(self) -> np.ndarray:
        """The chunk row whose dense cosine each unit takes: its chunk's, or for a part in
        another paragraph than its piece's middle, a piece centred there
        (``blocks.part_vector_rows``). Computed on first use, as ``blocks``."""
        return self._vectors()[0]

    def _vectors(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self._vector_rows is None:
            rows = self.parent
            if self._has_parts and self.spans is not None:
                spans = chunk_spans(self.chunks, dict(self._span_docs))
                if spans is not None:
                    rows = part_vector_rows(self.spans, self.parent, spans)
            # None: each unit reads its own row (the units are the chunks), so no lookup is needed.
            one_each = rows.size == len(self.chunks) and np.array_equal(rows, np.arange(rows.size))
            self._vector_rows = (rows, None if one_each else np.argsort(rows, kind="stable"))
        return self._vector_rows

    def _units_reading(self, chunk_rows: np.ndarray) -> np.ndarray:
        """The units that read the vectors of ``chunk_rows``, chunk by chunk in the order given."""
        rows, by_row = self._vectors()
        if by_row is None:
            return np.asarray(chunk_rows, dtype=np.int64)
        return by_row[_units_of_rows(rows[by_row], chunk_rows)]

    def _block_mates(self, pool: np.ndarray) -> np.ndarray:
        """The rows of every short block a unit of ``pool`` belongs to (a few searches in the
        rows sorted by block, not a pass over all units)."""
        blocks = self.blocks
        ids = np.unique(blocks[pool])
        ids = ids[ids >= 0]
        _, sorted_ids, rows = self._blocks
        return rows[_units_of_rows(sorted_ids, ids)]

    @property
    def units_of(self) -> dict[str, list[int]]:
        return self._units_of[0]

    def unit_word_spans(self, text: str) -> np.ndarray:
        """``corpus.word_spans(text)`` as an ``(n, 2)`` array, kept per unit text: a unit's words
        are found once, not again by every query whose result cuts its repeats
        (``repeats.without_repeats``)."""
        spans = self._word_spans.get(text)
        if spans is None:
            spans = array_word_spans(text)
            if len(self._word_spans) < len(self.units):  # a result's own text: not kept
                self._word_spans[text] = spans
        return spans

    def _append_units(
        self, units: Sequence[Chunk], parent: np.ndarray, part_at: np.ndarray
    ) -> None:
        """Add units (their chunk rows, their parts' places) to the per-unit arrays: O(new
        units)."""
        n = len(self.units)
        self._part_at = self._part_at.append(n, part_at)
        self._parts += int((part_at[:, 0] >= 0).sum())
        shared = self._units_of
        ids = {self.chunks[p].id for p in parent.tolist()}
        if shared[1] != n or any(i in shared[0] for i in ids):
            # Another snapshot already added units here: take a private copy of the map.
            shared = [{k: [r for r in v if r < n] for k, v in shared[0].items()}, n]
        for row, p in enumerate(parent.tolist(), start=n):
            shared[0].setdefault(self.chunks[p].id, []).append(row)
        shared[1] = n + len(units)
        self._units_of = shared
        self._parent = self._parent.append(n, parent)
        counts = np.asarray([len(u.text.split()) for u in units], dtype=np.int64)
        self._word_counts = self._word_counts.append(n, counts)
        foreign = np.fromiter((reads_not_english(u.text) for u in units), bool, len(units))
        self._not_english = self._not_english.append(n, foreign)
        if self._spans is not None:
            spans = chunk_spans(units, self._span_docs)
            self._spans = None if spans is None else self._spans.append(n, spans)
        self.units = self.units + tuple(units)

    def extended(
        self,
        chunks: Sequence[Chunk],
        chunk_embeddings: np.ndarray | None,
        dense: DenseIndex | None = None,
    ) -> HybridRanker:
        """A ranker over these chunks plus ``chunks`` (appended rows), sharing this one's storage.

        ``chunk_embeddings``: the vectors of all chunks, old and new. Costs O(new chunks) plus
        pointer copies; this ranker keeps ranking its own chunks.
        """
        out = copy.copy(self)
        out._blocks = out._vector_rows = None
        if self._spans is not None:
            out._span_docs = dict(self._span_docs)
        first = len(self.chunks)
        out.chunks = self.chunks + tuple(chunks)
        out.chunk_embeddings = _checked_embeddings(chunk_embeddings, len(out.chunks))
        if self._embedding_sum is not None and out.chunk_embeddings is not None:
            # O(new chunks): only the new rows are added to the running sum.
            out._embedding_sum = self._embedding_sum + _vector_sum(out.chunk_embeddings[first:])
        else:
            out._embedding_sum = _vector_sum(out.chunk_embeddings)
        out.dense_index = dense  # the edited store's index, or None: the new matrix
        units, parent, part_at = self._split(chunks)
        out.bm25 = self.bm25.extended([u.text for u in units])
        out._append_units(units, parent + first, part_at)
        out._take_grams(None, first)
        return out

    def subset(
        self,
        keep: np.ndarray,
        chunk_embeddings: np.ndarray | None,
        dense: DenseIndex | None = None,
    ) -> HybridRanker:
        """A ranker over the chunks where the boolean ``keep`` is true (order kept); the BM25
        index is compacted from its stored term ids, nothing is re-split or re-tokenised."""
        keep = np.asarray(keep, dtype=bool)
        unit_keep = keep[self.parent]
        new_row = np.cumsum(keep) - 1
        out = copy.copy(self)
        out._no_units()
        out.chunks = tuple(c for c, k in zip(self.chunks, keep.tolist(), strict=True) if k)
        out.chunk_embeddings = _checked_embeddings(chunk_embeddings, len(out.chunks))
        out._embedding_sum = _vector_sum(out.chunk_embeddings)
        out.dense_index = dense
        out.bm25 = self.bm25.subset(unit_keep)
        rows = np.flatnonzero(unit_keep)
        out._append_units(
            [self.units[r] for r in rows.tolist()], new_row[self.parent[rows]], self.part_at[rows]
        )
        # Removal changes every chunk's idf: the n-gram index is counted again (O(kept chunks)).
        out.grams = None
        out._take_grams(None, 0)
        return out

    def word_features(self, rows: np.ndarray) -> np.ndarray:
        """Unit BM25 term vectors of the given chunks, over the terms two or more of them share.

        Dot products of these rows are the exact cosines of the chunks' full term vectors between
        two different chunks (a term held by one chunk only adds nothing to them).
        """
        m = rows.size
        if m == 0:
            return np.zeros((0, 0), dtype=np.float32)
        # The unit-length weights are scaled once per index state, not per query.
        lens, terms, w = self.bm25.unit_doc_terms(rows)
        # Counting over the vocabulary (bincount) avoids sorting the candidates' terms.
        shared = np.bincount(terms, minlength=self.bm25.vocab_size) > 1
        # Column of each shared term, in term-id order; every other term writes to one spare
        # last column, cut off below (cheaper than selecting the shared terms' entries).
        column = shared.cumsum() - 1
        width = int(column[-1]) + 1 if column.size else 0
        column[~shared] = width
        # Stored term by term (column-major): a packing pick reads the columns of its own terms
        # (``_Packing.take``), each one contiguous.
        dense = np.zeros((m, width + 1), dtype=np.float32, order="F")
        # Flat positions: one 1-D scatter instead of a 2-D fancy index.
        dense.T.reshape(-1)[column[terms] * m + np.repeat(np.arange(m), lens)] = w
        return dense[:, :width]

    def rank(
        self,
        query: str,
        query_vec: np.ndarray | None,
        *,
        k: int | None = None,
        word_budget: int | None = None,
        use_graph: bool = True,
        allowed: np.ndarray | None = None,
        walk: np.ndarray | None = None,
        tokens: Sequence[str] | None = None,
    ) -> RetrievalResult:
        """Rank and pack the chunks for one query.

        Four stages, each a method: ``_candidates`` (each signal's best units, scored),
        ``_fused`` (the signals on one scale, summed), ``_pack`` (MMR under the limits) and
        ``_in_reading_order`` (a cut paragraph's pieces as written); ``_results`` turns the
        picks into results.

        Args:
            query: the query text (for BM25).
            query_vec: the L2-normalised query vector, or None to skip the dense signal.
            walk: ``(n_chunks,)`` the graph signal, the walk's mass per chunk (``walk.py``); a
                unit takes its chunk's.
            k: the most chunks to return; exactly ``k`` when the corpus has that many and no
                ``word_budget`` stops earlier. None: no count limit (then give a budget).
            word_budget: stop once the returned chunks hold this many words (the last chunk may
                cross it: chunks are never cut).
            use_graph: False drops the graph signal (the ablation); all else stays the same.
            allowed: a boolean mask over the chunks (a metadata filter): only their units are
                candidates, so ``k`` come back when ``k`` exist.
            tokens: the query's tokens (``lexical.tokenize``), when the caller has them already.
        """
        if k is None and word_budget is None:
            raise ConfigError("give k, word_budget or both, so the result has a size limit")
        if k is not None and k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if word_budget is not None and word_budget < 1:
            raise ConfigError(f"word_budget must be positive, got {word_budget}")
        c = self._candidates(query, query_vec, use_graph, allowed, walk, tokens)
        fused = self._fused(c)
        c.pool, fused = self._padded(c, fused, k, word_budget)
        rows = self._pack(fused, c.pool, k, word_budget, c.ok)
        return self._results(c, fused, rows)

    def _candidates(
        self,
        query: str,
        query_vec: np.ndarray | None,
        use_graph: bool,
        allowed: np.ndarray | None,
        walk: np.ndarray | None = None,
        tokens: Sequence[str] | None = None,
    ) -> _Candidates:
        """Stage 1: each signal's scores and its best ``candidates`` units, and their union.

        BM25 over the units; the dense cosine of each unit's chunk (from the dense index's top,
        then filled exactly for every candidate); the walk's mass
        (``walk``, standardised against its own best units); for an English question, the foreign
        units best by character n-grams (``_gram_evidence``).
        """
        cfg = self.config
        n = len(self.units)
        tokens = self.bm25.tokens(query) if tokens is None else tokens
        c = _Candidates(query=query, query_vec=query_vec, use_graph=use_graph, tokens=tokens)
        c.bm25 = self.bm25.scores(tokens).astype(np.float64)
        # A filter (allowed) acts before ranking: filtered-out units are never candidates.
        c.ok = None if allowed is None else np.asarray(allowed, dtype=bool)[self.parent]
        c.bm_order, _ = top_k_indices(
            c.bm25 if c.ok is None else np.where(c.ok, c.bm25, 0.0),
            cfg.candidates,
            positive_only=True,
        )
        c.dense_cos = _ChunkCosines(self.dense, query_vec, len(self.chunks))
        c.dense, c.dn_order = self._dense_signal(c.dense_cos, allowed)
        c.graph_part = np.zeros(n)
        if use_graph and walk is not None and n:
            c.graph_part, c.graph_order = self._walk_part(walk, c.ok)
        c.fill = self._language_gap(query)
        c.gram_cos, c.gap, gap_order = (
            self._gram_evidence(query, c.ok) if c.fill is not None else (None, None, c.bm_order[:0])
        )
        c.pool = np.unique(np.concatenate([c.bm_order, c.dn_order, gap_order]))
        # The BM25 and graph candidates outside the dense top still get their exact cosine.
        if c.dense_cos.fill(self.vector_row[c.pool]):
            c.dense = c.dense_cos.values[self.vector_row]
        return c

    def _dense_signal(
        self, cosines: _ChunkCosines, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each unit's dense cosine (its chunk's, from the dense index's top) and the best
        ``candidates`` units by it; zeros and none without a query vector or units."""
        cfg, n = self.config, len(self.units)
        if not (cosines.active and n):
            return np.zeros(n), np.zeros(0, dtype=np.int64)
        # Dense search ranks chunks and a passage takes its chunk's cosine (nothing is embedded
        # twice); every passage among the best `candidates` belongs to one of the best
        # `candidates` chunks.
        cosines.search(cfg.candidates, allowed)
        dense = cosines.values[self.vector_row]
        # The units of the found chunks in the order dense search gave (a store's near-equal
        # cosines may differ in the last bit; its order already breaks such ties by row).
        units = self._units_reading(cosines.order)
        return dense, units[dense[units] > 0][: cfg.candidates]

    def _walk_part(self, walk: np.ndarray, ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The walk's mass per unit (its chunk's) on the text signals' scale, against the walk's
        own best units; and those units, best first."""
        part = np.asarray(walk, dtype=np.float64)[self.parent]
        if ok is not None:
            part = np.where(ok, part, 0.0)
        best, _ = top_k_indices(part, self.config.candidates, positive_only=True)
        return standardise(part, best), best

    def _fused(self, c: _Candidates) -> np.ndarray:
        """Stage 2: the fused relevance of every unit (0 outside the candidates' signals).

        Each text signal on one scale (``standardise``), weighted and
        summed; a foreign unit takes its better dense or n-gram evidence in BM25's place
        (``_language_gap``); the graph bonus lifts what a text signal also found.
        """
        cfg = self.config
        lexical, semantic = standardise(c.bm25, c.bm_order), standardise(c.dense, c.dn_order)
        if c.fill is not None:
            evidence = semantic if c.gap is None else np.maximum(semantic, c.gap)
            lexical = np.where(c.fill, np.maximum(lexical, evidence), lexical)
        text = cfg.bm25_weight * lexical + cfg.dense_weight * semantic
        # The graph lifts what a text signal also found (above its candidates' mean); alone it
        # lifts nothing: admitting units only the graph reached cost recall in every design
        # measured (docs/evaluation.md, "What the graph adds").
        return text + cfg.graph_weight * c.graph_part * (text > 0)

    def _padded(
        self, c: _Candidates, fused: np.ndarray, k: int | None, word_budget: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pool, padded with the best remaining units when too few matched to fill ``k``
        (or, with a budget only, the candidate count), and the fused scores (refilled if padding
        fetched more cosines). The parts of one piece (``blocks.blank_line_parts``) count as
        one result, as they come back."""
        pool = c.pool
        # Only a budget (k None): pad to the candidate count, not to the whole corpus, which would
        # make packing quadratic in the corpus size.
        eligible = np.arange(len(self.units)) if c.ok is None else np.flatnonzero(c.ok)
        need = min(self.config.candidates if k is None else k, self._results_in(eligible))
        if word_budget is not None and int(self.word_counts[pool].sum()) >= word_budget:
            # The candidates already hold the budget: rows padded in past them would only compete
            # with them, so a large k with a budget ranks exactly as the budget alone.
            need = min(need, self._results_in(pool))
        short = need - self._results_in(pool)
        if short <= 0:
            return pool, fused
        rest = np.setdiff1d(eligible, pool)
        if c.dense_cos.maybe_positive_beyond_search() and c.dense_cos.fill(self.vector_row[rest]):
            c.dense = c.dense_cos.values[self.vector_row]
            fused = self._fused(c)
        if not self._has_parts:
            extra, _ = top_k_indices(fused[rest], short)
            return np.concatenate([pool, rest[extra]]), fused
        # The best remaining units up to the one that brings the ``short``-th new result.
        best = rest[np.lexsort((rest, -fused[rest]))]
        owner = self.parent[best]
        new = np.zeros(best.size, dtype=bool)
        new[np.unique(owner, return_index=True)[1]] = True
        new &= ~np.isin(owner, self.parent[pool])
        upto = int(np.searchsorted(np.cumsum(new), short)) + 1
        return np.concatenate([pool, best[:upto]]), fused

    @property
    def _has_parts(self) -> bool:
        return self._parts > 0

    def _results_in(self, rows: np.ndarray) -> int:
        """How many results ``rows`` make: one per unit, or per chunk where pieces are in parts."""
        return int(np.unique(self.parent[rows]).size) if self._has_parts else int(rows.size)

    def _pack(
        self,
        fused: np.ndarray,
        pool: np.ndarray,
        k: int | None,
        word_budget: int | None,
        ok: np.ndarray | None = None,
    ) -> np.ndarray:
        """Stage 4: the unit rows picked by MMR (``mmr_pack``), in pick order.

        The pick order is the returned order: each result is the best remaining unit given what
        came before it, so a reader who stops early (or a user's own cut at N words) keeps the
        most distinct text; re-sorting the picks by relevance moved near-duplicates back up.
        With ``group_blocks``, the pieces of a short text block a user's splitter cut
        (``blocks.short_blocks``) join the pool and follow the first of them picked.
        """
        cfg = self.config
        blocks = self.blocks if cfg.group_blocks else None
        if blocks is not None and not (blocks[pool] >= 0).any():
            blocks = None  # no candidate in a short block (hcg's own chunks): nothing to group
        groups = None
        if blocks is not None and pool.size:
            # The mates not in the pool, sorted (each unit is in one block: no duplicates).
            mates = self._block_mates(pool)
            in_pool = np.zeros(len(self.units), dtype=bool)
            in_pool[pool] = True
            extra = np.sort(mates[~in_pool[mates]])
            if ok is not None:
                extra = extra[ok[extra]]
            if extra.size:
                # A piece no signal found still follows its passage; at the pool's lowest score it
                # leaves the other candidates' normalised relevance as it was.
                fused = fused.copy()
                fused[extra] = np.maximum(fused[extra], fused[pool].min())
                pool = np.concatenate([pool, extra])
        # Stable candidate order (fused score, then row) makes ties deterministic.
        pool = pool[np.lexsort((pool, -fused[pool]))]
        if blocks is not None:
            groups = blocks[pool]
        picked = mmr_pack(
            fused[pool],
            self.word_features(pool),
            self.word_counts[pool],
            k=k,
            word_budget=word_budget,
            diversity=cfg.diversity,
            spans=self.spans[pool] if self.spans is not None else None,
            repeats_kept=not cfg.cut_repeats,
            groups=groups,
            owners=self.parent[pool] if self._has_parts else None,
        )
        return pool[picked]

    def _results(
        self,
        c: _Candidates,
        fused: np.ndarray,
        rows: np.ndarray,
    ) -> RetrievalResult:
        """The picked rows as a ``RetrievalResult``: calibrated scores, each signal's part and
        rank, the graph's paths; the repeated edges of overlapping units cut (``cut_repeats``)."""
        n = len(self.units)
        # Absolute parts, each in [0, 1] and comparable across queries: the share of the query's
        # BM25 term weight matched, the cosine (clipped at 0), and the graph signal.
        bm25_abs = np.clip(c.bm25 / max(self.bm25.max_score(c.tokens), 1e-12), 0.0, 1.0)
        dense_abs = np.clip(c.dense, 0.0, 1.0)
        # The language fill changes the order only: a score still says how much of the query each
        # signal matched, so an off-topic question stays low however the fill ranked it. The
        # dense part counts from the query's background, so the scale does not hang on the embedder.
        dense_rel = above_background(dense_abs, self.background(c.query_vec))
        score = calibrated_scores(fused, rows, bm25_abs, dense_rel, self.config)
        rows, score, led_by = self._in_reading_order(rows, score)
        signals = {
            "bm25": (bm25_abs, _ranks(c.bm_order, n)),
            "dense": (dense_abs, _ranks(c.dn_order, n)),
            "graph": (c.graph_part, _ranks(c.graph_order, n)),
        }
        out = self._result_list(c, rows, score, fused, signals, led_by)
        if self._has_parts:
            # The parts of one piece come back as the piece, once (repeats.joined_parts); then
            # what overlapping pieces repeat is cut, as between whole pieces.
            parts = [r for r in rows.tolist() if self.part_at[r, 0] >= 0]
            out = joined_parts(out, {self.units[r].id: self.chunks[self.parent[r]] for r in parts})
        if self.config.cut_repeats:
            out = without_repeats(out, self.unit_word_spans)
        # A result still holding its unit's text has the unit's word count (counted at load).
        ids = [id(self.units[r]) for r in rows.tolist()]
        counted = dict(zip(ids, self.word_counts[rows].tolist(), strict=True))
        words = sum(
            counted[id(rc.chunk)] if id(rc.chunk) in counted else len(rc.chunk.text.split())
            for rc in out
        )
        return self._result_set(c, out, words)

    def _result_list(
        self,
        c: _Candidates,
        rows: np.ndarray,
        score: np.ndarray,
        fused: np.ndarray,
        signals: dict[str, tuple[np.ndarray, np.ndarray]],
        led_by: dict[int, int],
    ) -> list[RetrievedChunk]:
        """The units ``rows`` as results: each one's score (``score``, in order) and each
        signal's part and rank (each signal's values read for all rows at once)."""
        columns = {name: part[rows].tolist() for name, (part, _) in signals.items()}
        ranks = {f"{name}_rank": rank[rows].tolist() for name, (_, rank) in signals.items()}
        fused_at, part_at = fused[rows].tolist(), self.part_at
        parted = (part_at[rows, 0] >= 0).tolist()
        out = []
        for i, r in enumerate(rows.tolist()):
            details: dict[str, Any] = {name: values[i] for name, values in columns.items()}
            details.update({name: values[i] or None for name, values in ranks.items()})
            details["fused_score"] = fused_at[i]
            if r in led_by:
                details["follows"] = self.units[led_by[r]].id
            if c.gap is not None and c.gap[r] > 0:  # why a unit in another language came back
                details["grams"] = float(c.gram_cos[r])
            if parted[i]:  # a part of its piece: where, in the stored text
                details["span"] = part_at[r].tolist()
            # The retriever marks the graph's evidence (``with_paths``).
            out.append(RetrievedChunk(self.units[r], float(score[i]), "fallback", details=details))
        return out

    @staticmethod
    def _result_set(c: _Candidates, out: list[RetrievedChunk], words: int) -> RetrievalResult:
        """The results with the query's matched variables and diagnostics (``words``: the words
        the results hold, as ``str.split`` counts them)."""
        mode = "hybrid" if c.use_graph else "hybrid-nograph"
        diagnostics = {"mode": mode, "candidates": int(c.pool.size), "words": words}
        return RetrievalResult(c.query, tuple(out), served_by=mode, diagnostics=diagnostics)

    def _in_reading_order(
        self, rows: np.ndarray, score: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
        """Stage 5: the picked rows and their scores, each short block's pieces (``group_blocks``)
        in reading order (``blocks.reading_order``), so the passage reads as written; and each
        piece's row -> the row of the piece it followed (its run's first pick).

        Each piece takes the score of the piece picked for the query: the passage scores as its
        best part, and scores still never rise down the list.
        """
        blocks = self.blocks if self.config.group_blocks else None
        # No picked unit in a block (hcg's own chunks): every run is one unit, nothing moves.
        if blocks is None or rows.size == 0 or not (blocks[rows] >= 0).any():
            return rows, score, {}
        order, lead = reading_order(blocks[rows], self.spans[rows, 1])
        led_by = {int(rows[i]): int(rows[j]) for i, j in enumerate(lead.tolist()) if i != j}
        return rows[order], score[lead][order], led_by

    def _language_gap(self, query: str) -> np.ndarray | None:
        """Units whose missing BM25 evidence the dense signal fills for this query, or None.

        The question must read as English (at least one frequent English function word; a bare
        keyword query is left alone) and the unit as not English. With either weight 0 there is
        nothing to fill (BM25 alone stays BM25 alone).
        """
        cfg = self.config
        if not (cfg.fill_language_gap and cfg.bm25_weight > 0 and cfg.dense_weight > 0):
            return None
        foreign = self._not_english.view(len(self.units))
        if not foreign.any():  # checked first: cheaper than reading the question's words
            return None
        return foreign if english_word_counts(query)[0] > 0 else None

    def _gram_evidence(
        self, query: str, ok: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
        """The foreign units' n-gram cosines, that evidence on the fused scale, and the best
        ``GAP_CANDIDATES`` of them (they join the candidates); ``(None, None, [])`` without
        foreign units.

        Standardised among the foreign units (their match with an English question is weaker than
        an English unit's), and counted only from ``GAP_MIN_Z`` standard deviations up: the best
        of a few hundred units always stands out somewhat, and a unit in another language costs
        an English answer its share of the budget.
        """
        if self.grams is None:
            return None, None, np.zeros(0, dtype=np.int64)
        rows, cos = self.grams.scores(query)
        scores = np.zeros(len(self.chunks))
        scores[rows] = cos
        scores = scores[self.parent]  # a unit takes its chunk's match
        if ok is not None:
            scores = np.where(ok, scores, 0.0)
        order, _ = top_k_indices(scores, self.config.candidates, positive_only=True)
        evidence = np.clip(standardise(scores, order) - GAP_MIN_Z / _Z_SCALE, 0.0, None)
        return scores, evidence, order[:GAP_CANDIDATES]


def _units_of_rows(parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The unit rows of the given chunk rows, chunk by chunk in the order given (``parent`` is
    non-decreasing: a chunk's units are consecutive).

    >>> _units_of_rows(np.array([0, 0, 1, 2, 2]), np.array([2, 0])).tolist()
    [3, 4, 0, 1]
    """
    starts = np.searchsorted(parent, rows, side="left")
    lens = np.searchsorted(parent, rows, side="right") - starts
    offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return (offsets + np.arange(int(lens.sum()))).astype(np.int64)


class _ChunkCosines:
    """One query's dense cosines per chunk (clipped at 0), fetched from the dense index lazily.

    A chunk's value is known once dense search returned it or ``fill`` asked for it; unknown
    values stay 0 and are never read for a candidate (the ranker fills every candidate's first).
    """

    def __init__(self, index: DenseIndex | None, query_vec: np.ndarray | None, n_chunks: int):
        self.index = index if query_vec is not None else None
        self.query = None if query_vec is None else np.asarray(query_vec, np.float32)
        self.values = np.zeros(n_chunks)
        self.known = np.zeros(n_chunks, dtype=bool)
        self.asked = 0
        self.order = np.zeros(0, np.int64)  # the first search's rows, best first
        self.last = 0.0

    @property
    def active(self) -> bool:
        return self.index is not None

    def search(self, n: int, allowed: np.ndarray | None) -> None:
        rows, cos = self.index.search(self.query, n, allowed)
        rows = np.asarray(rows, np.int64)
        self._set(rows, cos)
        if not self.asked:
            self.asked = n
            self.order = rows
            self.last = float(cos[-1]) if len(cos) == n and n else 0.0

    def maybe_positive_beyond_search(self) -> bool:
        """Whether chunks outside the search's result may still have a positive cosine (the
        search returned all ``n`` asked and the last was positive)."""
        return self.active and self.last > 0

    def fill(self, rows: np.ndarray) -> bool:
        """Fetch the cosines of those ``rows`` not known yet; True when any were fetched."""
        if self.index is None:
            return False
        rows = np.unique(rows)
        rows = rows[~self.known[rows]]
        if rows.size == 0:
            return False
        self._set(rows, self.index.cosines(self.query, rows))
        return True

    def _set(self, rows: np.ndarray, cos: np.ndarray) -> None:
        # float32 cosines, clipped at 0, then widened: the same numbers the full matrix gave.
        cos = np.maximum(np.asarray(cos, np.float32), 0).astype(np.float64)
        self.values[rows] = cos
        self.known[rows] = True


def _vector_sum(vectors: np.ndarray | None) -> np.ndarray | None:
    return None if vectors is None else vectors.sum(axis=0, dtype=np.float64)


def _checked_embeddings(chunk_embeddings: np.ndarray | None, n: int) -> np.ndarray | None:
    if chunk_embeddings is None:
        return None
    emb = np.asarray(chunk_embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ConfigError(
            f"chunk_embeddings has shape {emb.shape}; expected ({n}, dim), one row per chunk"
        )
    return emb
