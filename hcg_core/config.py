"""Typed settings for each stage; every default is a named constant, the paper's value where it has one.

Paper values (Table 4 and Appendix B of the paper, restated in docs/method.md) are marked
"paper"; values the paper leaves open are marked "project" and documented in docs/configuration.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import ConfigError

# Stage 3, per-metric node matching (Definition 2) -- paper.
DEFAULT_TAU_MIN = 0.35
DEFAULT_TOP_METRICS = 5  # K
DEFAULT_BAND = 0.20  # beta
DEFAULT_PER_METRIC = 3  # P
# Stage 3, bounded BFS (Definition 3) and outcome cones (Definition 4) -- paper.
DEFAULT_MAX_HOPS = 4  # h_max
DEFAULT_MAX_CONES = 6  # C_max
# Stage 2, evidence linking (Appendix B) -- paper.
DEFAULT_EVIDENCE_PER_EDGE = 2
DEFAULT_EVIDENCE_PREFIX_CHARS = 200
# Evidence linking where the paper is silent -- project: no chunk is the evidence of more than
# this share of the edges by search (a chunk that states everything selects nothing), unless
# the corpus has too few chunks for that (evidence.chunk_cap).
DEFAULT_EVIDENCE_CHUNK_SHARE = 0.02
# Where the paper is silent -- project.
DEFAULT_TOP_K = 10
DEFAULT_BFS_FALLBACK = True
DEFAULT_VECTOR_FILL = True
DEFAULT_MODE = "hybrid"
MODES = ("hybrid", "paper")
# Paper mode orders the evidence its cones select (the paper only deduplicates it) by the chunks'
# text relevance to the query, as the hybrid mode ranks every chunk (BM25 and dense fused, packed
# by MMR), and returns only selected chunks. The earlier order (cone rank, then edge confidence,
# then query-chunk cosine) scored 0.452 answer recall against 0.735 on the recorded LLM graph
# re-linked by ``hcg relink`` (703 medical dev questions, vector fill off; docs/evaluation.md,
# "Paper mode"), and is gone.


# The hybrid mode (project; hcg_core/retrieval/hybrid.py), measured on the dev set only.
# Chunks taken from each ranked list (BM25, dense) into the candidate pool. Wide enough that
# diversity has alternatives to choose from (dev: 30 -> 0.843, 100 -> 0.844 at 200-word chunks).
DEFAULT_CANDIDATES = 100
# Weight of the BM25 signal in the fused relevance. Each signal enters as a z-score against its own
# best candidates, clipped at 0 (``retrieval/hybrid.py`` ``standardise``): query-dependent fusion,
# where the signal with the clearer standout weighs more for that query.
DEFAULT_BM25_WEIGHT = 1.0
# Weight of the dense cosine signal (as a z-score, like BM25). Equal to BM25: neither is trusted
# more a priori. On the dev sets BM25 alone leads on two (medical, HolisQA business), dense alone on
# the third (HolisQA psychology), and their fusion is at or near the best on all three.
DEFAULT_DENSE_WEIGHT = 1.0
# Weight of the graph signal, the walk's mass per chunk (``retrieval/walk.py``) as a z-score against
# its own best units, divided by 3 like the text signals (a chunk three standard deviations above
# them counts 1.0). A quarter: the graph vouches for a chunk being near the causes the query names,
# not for it holding the answer's words; with the recorded LLM graph (design half of the medical dev
# questions) 0.5 and 1.0 lowered recall overall (docs/evaluation.md). The signal goes only to units
# a text signal also found (fused text relevance above 0): admitting units the graph alone reached
# cost recall in every design measured. It is the default mode's one graph signal: the paper route
# adds no candidate; it gives the returned units that are its evidence their causal paths, whatever
# the weight (docs/evaluation.md, "What the graph adds").
DEFAULT_GRAPH_WEIGHT = 0.25
# MMR trade-off lambda: pick score = lambda * relevance - (1 - lambda) * max redundancy. 0.5 is the
# textbook balance (Carbonell & Goldstein 1998). The picks are returned in pick order, so each
# result is the best remaining one given those above it. A unit whose span picked units cover whole
# is skipped (it adds no text). Leave-one-out on every door and dev set: docs/evaluation.md.
DEFAULT_DIVERSITY = 0.5
# The pieces of one short text block (a paragraph or abstract of at most 600 words, which hcg's
# chunker keeps whole) that a user's own splitter cut apart are packed together: once one is picked,
# the others follow it (``hcg_core/blocks.py``). With hcg's chunks it changes nothing (a short block
# is already one chunk); text without paragraph breaks is left piece by piece. A piece that runs on
# across a blank line is ranked as its parts, one per paragraph, and comes back once holding the
# parts picked (``blocks.blank_line_parts``). Needs each unit's span in its document (hcg's word
# spans, a LlamaIndex node's character offsets or LangChain's ``start_index``). Leave-one-out:
# docs/evaluation.md.
DEFAULT_GROUP_BLOCKS = True
# For a question in English, a unit that reads as not English (``corpus.reads_not_english``) takes
# its dense evidence in place of BM25's when that is higher: BM25 cannot match words across
# languages, so its silence there is missing evidence, not evidence against. Only a multilingual
# embedder's cosine carries across languages (``--embedder multilingual``); with the English default
# the change is small. Text all in English is unaffected. Dev sets: docs/evaluation.md.
DEFAULT_FILL_LANGUAGE_GAP = True
# With ``fill_language_gap``: a foreign unit's missing BM25 evidence may also come from the
# character 4-grams it shares with the question (``retrieval/grams.py``: cognates and loanwords such
# as "dijital", "implementasi", "resiliencia"), standardised among the foreign units; the higher of
# that and the dense evidence fills the gap. Nothing is built for text all in English. Dev sets:
# docs/evaluation.md.
DEFAULT_GAP_CHAR_GRAMS = True
# 0 (default): the unit ranked and returned is the stored chunk, whole, as the user indexed it. N >
# 0 splits each chunk at sentence ends into passages of about N words (a chunk under 1.5 N words
# stays whole) and ``k`` counts passages. Passages gained answer recall on the medical dev set and
# lost gold-context recall on HolisQA, where an answer spans several sentences of one abstract
# (docs/evaluation.md), so they are an option, not the default.
DEFAULT_PASSAGE_WORDS = 0
# Cut from a unit's start or end the sentences an earlier result already returned from the same
# place of the document (two overlapping windows), and count only new words against a word budget
# (``retrieval/repeats.py``), with ``k`` alone too: a reader (or the user's own cut at N words) gets
# each place once. The unit keeps its id; its text becomes the kept part, ``details["span"]`` its
# offsets. ``False`` returns every unit whole. Leave-one-out: docs/evaluation.md.
DEFAULT_CUT_REPEATS = True


class _Settings:
    """What every settings dataclass here shares: its field names, and a copy with some changed."""

    # Named in the error for an unknown option, e.g. "offline build"; extra known names, if any.
    _kind = "setting"
    _also_known: tuple[str, ...] = ()

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_options(cls, base: Any = None, **options: Any) -> Any:
        """``base`` (default settings when None) with ``options`` changed; unknown names raise."""
        unknown = sorted(set(options) - set(cls.field_names()))
        if unknown:
            known = ", ".join((*cls.field_names(), *cls._also_known))
            raise ConfigError(f"unknown {cls._kind} option(s) {', '.join(unknown)}; known: {known}")
        return replace(base or cls(), **options)


@dataclass(frozen=True)
class HybridConfig:
    """Settings of the hybrid mode; see the module constants for what each does and why."""

    candidates: int = DEFAULT_CANDIDATES
    bm25_weight: float = DEFAULT_BM25_WEIGHT
    dense_weight: float = DEFAULT_DENSE_WEIGHT
    graph_weight: float = DEFAULT_GRAPH_WEIGHT
    diversity: float = DEFAULT_DIVERSITY
    passage_words: int = DEFAULT_PASSAGE_WORDS
    cut_repeats: bool = DEFAULT_CUT_REPEATS
    group_blocks: bool = DEFAULT_GROUP_BLOCKS
    fill_language_gap: bool = DEFAULT_FILL_LANGUAGE_GAP
    gap_char_grams: bool = DEFAULT_GAP_CHAR_GRAMS

    @property
    def unit_split(self) -> tuple[int, int]:
        """The settings that decide the ranked units: rankers equal here share one BM25 index."""
        return (self.passage_words,)

    def __post_init__(self) -> None:
        if self.passage_words < 0:
            raise ConfigError(
                f"passage_words must be >= 0 (0: whole chunks), got {self.passage_words}"
            )
        for name in ("cut_repeats", "group_blocks", "fill_language_gap", "gap_char_grams"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.candidates < 1:
            raise ConfigError(f"candidates must be at least 1, got {self.candidates}")
        for name in ("bm25_weight", "dense_weight", "graph_weight"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.diversity <= 1.0:
            raise ConfigError(f"diversity (MMR lambda) must be in [0, 1], got {self.diversity}")


@dataclass(frozen=True)
class PaperConfig:
    """Settings only paper mode reads (``RetrievalConfig(mode="paper", paper=PaperConfig(...))``).

    Attributes:
        vector_fill: fill up to k with plain vector top-k, marked "fallback" (project).
    """

    vector_fill: bool = DEFAULT_VECTOR_FILL


@dataclass(frozen=True)
class RetrievalConfig(_Settings):
    """Stage 3 settings, read by both modes (matching, BFS and cones also give the default mode's
    results their causal paths).

    Attributes:
        tau_min: admission floor on a metric's best variable similarity (paper 0.35).
        top_metrics: K, the most metrics kept per query (paper 5).
        band: beta, the relative band below a metric's best match (paper 0.20).
        per_metric: P, the most variables admitted per kept metric (paper 3).
        max_hops: h_max, forward BFS depth from the matched variables (paper 4).
        max_cones: C_max, outcome cones kept after merging by metric (paper 6).
        top_k: chunks returned when the caller gives no k (project).
        word_budget: if set, stop adding chunks once this many words are returned (project).
        bfs_fallback: when no outcome is reached, use the whole BFS subgraph's evidence (project).
        mode: "hybrid" (default: graph evidence fused with BM25 and dense candidates, packed
            without overlap and with diversity) or "paper" (Stage 3 exactly as the paper).
        use_graph: hybrid mode only; False switches the graph signal off (the ablation).
        hybrid: the hybrid mode's fusion and packing settings (``HybridConfig``).
        paper: the settings only paper mode reads (``PaperConfig``).
    """

    tau_min: float = DEFAULT_TAU_MIN
    top_metrics: int = DEFAULT_TOP_METRICS
    band: float = DEFAULT_BAND
    per_metric: int = DEFAULT_PER_METRIC
    max_hops: int = DEFAULT_MAX_HOPS
    max_cones: int = DEFAULT_MAX_CONES
    top_k: int = DEFAULT_TOP_K
    word_budget: int | None = None
    bfs_fallback: bool = DEFAULT_BFS_FALLBACK
    mode: str = DEFAULT_MODE
    use_graph: bool = True
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    paper: PaperConfig = field(default_factory=PaperConfig)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not -1.0 <= self.tau_min <= 1.0:
            raise ConfigError(f"tau_min must be a cosine in [-1, 1], got {self.tau_min}")
        if not 0.0 <= self.band < 1.0:
            raise ConfigError(f"band (beta) must be in [0, 1), got {self.band}")
        for name in ("top_metrics", "per_metric", "max_cones", "top_k"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_hops < 0:
            raise ConfigError(f"max_hops must be >= 0, got {self.max_hops}")
        if self.word_budget is not None and self.word_budget < 1:
            raise ConfigError(f"word_budget must be positive or None, got {self.word_budget}")


# The LLM pipeline (project values where the paper is silent; docs/llm.md).
# Candidate variable pairs per Tier 2 call (several templates share a call).
DEFAULT_MAX_BATCH_PAIRS = 50
# Evidence snippets per Tier 1 call, and per template in a Tier 2 call.
DEFAULT_SNIPPETS = 3
# Characters of one snippet (cut at sentence boundaries).
DEFAULT_SNIPPET_CHARS = 500
# Chunks Stage 1 reads; None: the tier's budget (every chunk up to it, else one per cluster).
DEFAULT_SPEC_SAMPLE_CHUNKS: int | None = None
# Chunks per Stage 1 call: many short excerpts from across the corpus, so the calls read more.
DEFAULT_CHUNKS_PER_CALL = 12
# Characters of each chunk shown to Stage 1 (cut at a sentence boundary).
DEFAULT_EXCERPT_CHARS = 600
# Tier 2 edges under this confidence are dropped.
DEFAULT_MIN_CONFIDENCE = 0.0


@dataclass(frozen=True)
class LLMBuildConfig(_Settings):
    """Settings of the LLM pipeline (``graph_build.llm_pipeline``), each a named default above.

    ``build_graph(..., llm=..., max_batch_pairs=20)`` still works: ``from_options`` builds the
    config from keyword options, and an unknown name is a ``ConfigError``.

    >>> LLMBuildConfig.from_options(max_batch_pairs=20).max_batch_pairs
    20
    """

    _kind = "LLM-build"

    max_batch_pairs: int = DEFAULT_MAX_BATCH_PAIRS
    snippets: int = DEFAULT_SNIPPETS
    snippet_chars: int = DEFAULT_SNIPPET_CHARS
    spec_sample_chunks: int | None = DEFAULT_SPEC_SAMPLE_CHUNKS
    chunks_per_call: int = DEFAULT_CHUNKS_PER_CALL
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS
    evidence_per_edge: int = DEFAULT_EVIDENCE_PER_EDGE
    evidence_prefix_chars: int = DEFAULT_EVIDENCE_PREFIX_CHARS
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    domain: str = ""
    prompts: Mapping[str, Any] | None = None
    allow_partial: bool = False
    cache_dir: str | os.PathLike | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.max_batch_pairs <= DEFAULT_MAX_BATCH_PAIRS:
            raise ConfigError(
                f"max_batch_pairs must be in 1..{DEFAULT_MAX_BATCH_PAIRS}, got {self.max_batch_pairs}"
            )
        for name in ("spec_sample_chunks", "chunks_per_call", "evidence_per_edge"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")


@dataclass(frozen=True)
class TierCaps:
    """A scaling tier: caps on the spec's metrics and dimensions (paper section 4.4).

    The paper names the tiers and their resulting node counts (medical: XS 333, S 902, M 1,064,
    L 1,583 nodes; 173 metrics at most) but not the caps themselves; these are the project's.
    """

    max_metrics: int
    max_dimensions: int


TIERS: dict[str, TierCaps] = {
    "XS": TierCaps(max_metrics=40, max_dimensions=6),
    "S": TierCaps(max_metrics=80, max_dimensions=8),
    "M": TierCaps(max_metrics=120, max_dimensions=10),
    "L": TierCaps(max_metrics=173, max_dimensions=12),
}
DEFAULT_TIER = "M"


@dataclass(frozen=True)
class BuildSettings:
    """What a build is asked for besides its chunks, embedder and LLM, as one object: the
    framework doors keep one and pass it on (``build_graph(chunks, ..., **s.keywords())``)
    instead of copying the same keywords through each signature.

    Attributes:
        tier: scaling tier (XS, S, M, L) capping the spec's metrics and dimensions.
        outcome: the causal sinks to build toward (an ``OutcomeConfig``); generated when None.
        spec: a given ``DomainSpec``; Stage 1 is skipped when set.
        progress: progress bars; None shows them only when stderr is a terminal.
        options: further builder options for ``build_graph``: ``config=`` an
            ``OfflineBuildConfig`` or ``LLMBuildConfig``, and/or their field names.
    """

    tier: str = DEFAULT_TIER
    outcome: Any = None
    spec: Any = None
    progress: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def keywords(self) -> dict[str, Any]:
        """``build_graph``'s keyword arguments for these settings."""
        return {
            "tier": self.tier,
            "outcome": self.outcome,
            "spec": self.spec,
            "progress": self.progress,
            **self.options,
        }


def tier_caps(tier: str) -> TierCaps:
    try:
        return TIERS[tier.upper()]
    except KeyError:
        raise ConfigError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}") from None


# The offline (LLM-free) builder -- project (the paper has no LLM-free builder); see
# docs/offline-builder.md for what each setting moves on the medical dev corpus.
# Statements a (metric, entity) needs before it is its own variable; rarer ones collapse onto the
# metric's generic variable.
DEFAULT_MIN_VARIABLE_SUPPORT = 2
# Entity variables kept per metric, most supported first.
DEFAULT_MAX_VARIABLES_PER_METRIC = 24
# Statements a head word needs before it seeds a metric (one strong-cue statement also does).
DEFAULT_MIN_METRIC_SUPPORT = 2
# Cosine of a rare head's span to a metric's centroid for it to join that metric. High on purpose: a
# weak similarity maps a word onto a different concept ("death" onto Failure).
DEFAULT_METRIC_MERGE_THRESHOLD = 0.7
# Given spec: cosine of a span to an existing variable for it to become that variable.
DEFAULT_SPAN_MATCH_THRESHOLD = 0.5
# Given spec: cosine of a span to a metric's name and description for a new variable of it.
DEFAULT_METRIC_MATCH_THRESHOLD = 0.3
# Each statement also supports its generic ("lifted") form: the offline stand-in for the paper's
# Tier-1 metric templates, and what gives BFS and outcome cones structure.
DEFAULT_LIFT = True
# Strength factor of lifted support.
DEFAULT_LIFT_DISCOUNT = 0.8
# Evidence chunks kept per edge, the mechanism's chunk first.
DEFAULT_MAX_EVIDENCE = DEFAULT_EVIDENCE_PER_EDGE  # one cap for every builder: the paper's 2
# Drop variables stated by one sentence with a weak cue ("affects"): mostly mis-parsed spans.
DEFAULT_DROP_WEAK = True
# Drop one-word variables whose word is generic in the corpus (spread, never bursty: "Factor",
# "Study"), decided from corpus statistics (``graph_build.generic``).
DEFAULT_DROP_GENERIC = True


@dataclass(frozen=True)
class OfflineBuildConfig(_Settings):
    """Settings of the offline builder (``graph_build.offline.build_offline``).

    Each default is the module constant of the same name (``DEFAULT_<NAME>``); docs/offline-builder.md
    describes what each one does. ``from_options`` builds one from keyword options, the way
    ``build_graph(..., lift=False)`` passes them.
    """

    _kind = "offline build"
    _also_known = ("embed_chunks",)  # a build_offline argument, not a setting

    min_variable_support: int = DEFAULT_MIN_VARIABLE_SUPPORT
    max_variables_per_metric: int = DEFAULT_MAX_VARIABLES_PER_METRIC
    min_metric_support: int = DEFAULT_MIN_METRIC_SUPPORT
    metric_merge_threshold: float = DEFAULT_METRIC_MERGE_THRESHOLD
    span_match_threshold: float = DEFAULT_SPAN_MATCH_THRESHOLD
    metric_match_threshold: float = DEFAULT_METRIC_MATCH_THRESHOLD
    lift: bool = DEFAULT_LIFT
    lift_discount: float = DEFAULT_LIFT_DISCOUNT
    max_evidence: int = DEFAULT_MAX_EVIDENCE
    drop_weak: bool = DEFAULT_DROP_WEAK
    drop_generic: bool = DEFAULT_DROP_GENERIC

    def __post_init__(self) -> None:
        if self.min_variable_support < 1 or self.max_variables_per_metric < 0:
            raise ConfigError(
                "min_variable_support must be >= 1 and max_variables_per_metric >= 0, got "
                f"{self.min_variable_support} and {self.max_variables_per_metric}"
            )
        if self.max_evidence < 1:
            raise ConfigError(f"max_evidence must be >= 1, got {self.max_evidence}")
        if not 0.0 < self.lift_discount <= 1.0:
            raise ConfigError(f"lift_discount must be in (0, 1], got {self.lift_discount}")
