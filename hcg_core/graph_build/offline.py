"""The LLM-free builder: Stages 1 and 2 from explicit causal statements in the text.

Every edge is backed by at least one sentence with a causal cue (``extract``): that sentence is the
mechanism and its chunks are the evidence. What replaces the LLM is canonicalisation, so that the
graph has structure to traverse: spans are split into a head (the measure) and a modifier (the
entity); heads become the fixed metric vocabulary (capped by the tier), modifiers become variables
bound to dimension entities, rare variables collapse onto a per-metric generic variable, and each
statement also supports its generic ("lifted") form, which plays the part of the paper's Tier-1
metric templates. See docs/offline-builder.md.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import DEFAULT_TIER, tier_caps
from ..errors import BuildError, ConfigError
from ..ports import Embedder, as_matrix, embed_texts
from ..spec.validate import validate_graph
from ..types import (
    CausalEdge,
    CausalGraph,
    Chunk,
    Dimension,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
)
from . import BuildResult
from .extract import (
    Span,
    Statement,
    compound_heads,
    extract_statements,
    head_of,
    split_sentences,
)

# Project defaults (the paper has no LLM-free builder); each is an option of build_offline.
DEFAULT_MIN_VARIABLE_SUPPORT = 2  # statements needed before a (metric, entity) is its own node
DEFAULT_MAX_VARIABLES_PER_METRIC = 24
DEFAULT_MIN_METRIC_SUPPORT = 2  # statements needed before a head word becomes a metric
# Cosine of a rare head's span to a metric's centroid. High on purpose: a weak similarity maps a
# word onto a different concept ("death" onto Failure).
DEFAULT_METRIC_MERGE_THRESHOLD = 0.7
STRONG_CUE = 0.85  # a head with one statement this strong ("causes", "leads to") is a metric
DEFAULT_SPAN_MATCH_THRESHOLD = 0.5  # given spec: cosine of a span to an existing variable
DEFAULT_METRIC_MATCH_THRESHOLD = 0.3  # given spec: cosine of a span to a metric's text
DEFAULT_LIFT = True
DEFAULT_LIFT_DISCOUNT = 0.8
DEFAULT_MAX_EVIDENCE = 5
DEFAULT_DROP_WEAK = True  # drop variables stated by one sentence with a weak cue
DEFAULT_TERMINAL_SHARE = 0.05  # at most this share of metrics become terminals
DEFAULT_OUTCOME_IN_SHARE = 0.7  # a metric mostly on the effect side is an outcome
GENERIC_ENTITY = "general"
# One sentence with a cue of strength s alone gives confidence 0.6 * s; more sentences add up.
_SENTENCE_WEIGHT = 0.6
_MAX_MECHANISM_CHARS = 400

OPTIONS = (
    "min_variable_support",
    "max_variables_per_metric",
    "min_metric_support",
    "metric_merge_threshold",
    "span_match_threshold",
    "metric_match_threshold",
    "lift",
    "lift_discount",
    "max_evidence",
    "drop_weak",
)


# ----------------------------------------------------------------------------- small helpers


def _stable_id(prefix: str, *parts: str) -> str:
    h = hashlib.blake2b("\x00".join(parts).encode(), digest_size=6)
    return prefix + h.hexdigest()


def metric_name(head: str) -> str:
    """Readable metric name from a head key: "blood pressure" -> "Blood_Pressure".

    >>> metric_name("blood pressure"), metric_name("t-cell")
    ('Blood_Pressure', 'T_Cell')
    """
    words = re.findall(r"[a-z0-9]+", head.lower())
    return "_".join(w.capitalize() for w in words) or "Quantity"


def edge_confidence(strengths: Iterable[float]) -> float:
    """Noisy-or of the supporting sentences' cue strengths, each weighted by 0.6.

    >>> edge_confidence([0.9]), edge_confidence([0.9, 0.9])
    (0.54, 0.7884)
    """
    miss = 1.0
    for s in strengths:
        miss *= 1.0 - _SENTENCE_WEIGHT * max(0.0, min(1.0, s))
    return round(min(0.99, 1.0 - miss), 4)


def _cos_argmax(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``a`` the best row of ``b`` by cosine (rows already L2-normalised)."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(a.shape[0], dtype=np.int64), np.full(a.shape[0], -1.0, dtype=np.float32)
    sims = a @ b.T
    best = np.argmax(sims, axis=1)
    return best, sims[np.arange(a.shape[0]), best]


def spherical_kmeans(x: np.ndarray, weights: np.ndarray, k: int, *, iters: int = 12) -> np.ndarray:
    """Deterministic clustering of unit rows: farthest-first seeds from the heaviest row.

    Returns a cluster label per row; ``k`` is capped by the row count.

    >>> x = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32)
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> spherical_kmeans(x, np.ones(4), 2).tolist()
    [0, 0, 1, 1]
    """
    n = x.shape[0]
    k = max(1, min(k, n))
    seeds = [int(np.argmax(weights))]
    best = x @ x[seeds[0]]
    while len(seeds) < k:
        nxt = int(np.argmin(best))
        if nxt in seeds:
            break
        seeds.append(nxt)
        best = np.maximum(best, x @ x[nxt])
    centres = x[seeds].copy()
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        new = np.argmax(x @ centres.T, axis=1)
        if np.array_equal(new, labels) and _ > 0:
            break
        labels = new
        for j in range(centres.shape[0]):
            members = labels == j
            if members.any():
                c = (x[members] * weights[members, None]).sum(axis=0)
                norm = np.linalg.norm(c)
                if norm > 0:
                    centres[j] = c / norm
    # Relabel by first appearance so labels do not depend on seed order details.
    order: dict[int, int] = {}
    for lab in labels.tolist():
        order.setdefault(lab, len(order))
    return np.array([order[lab] for lab in labels.tolist()], dtype=np.int64)


class _Stages:
    """Times each stage and shows a tqdm bar when asked; collects the report's stage entries."""

    def __init__(self, progress: bool | None):
        if progress is None:
            progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.progress = progress
        self.report: dict[str, dict[str, Any]] = {}

    def iterate(self, items: Sequence[Any], desc: str) -> Iterable[Any]:
        if not self.progress:
            return items
        from tqdm import tqdm

        return tqdm(items, desc=desc, unit="it", leave=False)

    def done(self, name: str, started: float, **counts: Any) -> None:
        self.report[name] = {"seconds": round(time.perf_counter() - started, 3), **counts}


# ----------------------------------------------------------------------------- stage: statements


@dataclass
class _Corpus:
    """Unique sentences of the chunks, which chunks hold each, and the statements they make."""

    sentences: list[str] = field(default_factory=list)
    chunks_of: list[list[int]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    compounds: frozenset[str] = frozenset()


def collect_statements(chunks: Sequence[Chunk], stages: _Stages | None = None) -> _Corpus:
    """Split chunks into sentences (deduplicated across overlapping chunks) and extract statements."""
    stages = stages or _Stages(False)
    corpus = _Corpus()
    index: dict[str, int] = {}
    for ci, chunk in enumerate(stages.iterate(chunks, "sentences")):
        for s in split_sentences(chunk.text):
            sid = index.get(s)
            if sid is None:
                sid = index[s] = len(corpus.sentences)
                corpus.sentences.append(s)
                corpus.chunks_of.append([])
            if not corpus.chunks_of[sid] or corpus.chunks_of[sid][-1] != ci:
                corpus.chunks_of[sid].append(ci)
    for sid, s in enumerate(stages.iterate(corpus.sentences, "causal statements")):
        corpus.statements.extend(extract_statements(s, sid))
    corpus.compounds = compound_heads(corpus.sentences, corpus.statements)
    return corpus


# ----------------------------------------------------------------------------- stage: vocabulary


def _span_texts(statements: Sequence[Statement]) -> list[str]:
    seen: dict[str, None] = {}
    for st in statements:
        seen.setdefault(st.cause.text, None)
        seen.setdefault(st.effect.text, None)
    return list(seen)


def _entity_key(entity: str) -> str:
    # Paraphrase merge: the same content words in any order name the same entity.
    return " ".join(sorted(set(entity.split())))


# ----------------------------------------------------------------------------- main entry


def build_offline(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    tier: str = DEFAULT_TIER,
    outcome: OutcomeConfig | None = None,
    spec: DomainSpec | None = None,
    progress: bool | None = None,
    min_variable_support: int = DEFAULT_MIN_VARIABLE_SUPPORT,
    max_variables_per_metric: int = DEFAULT_MAX_VARIABLES_PER_METRIC,
    min_metric_support: int = DEFAULT_MIN_METRIC_SUPPORT,
    metric_merge_threshold: float = DEFAULT_METRIC_MERGE_THRESHOLD,
    span_match_threshold: float = DEFAULT_SPAN_MATCH_THRESHOLD,
    metric_match_threshold: float = DEFAULT_METRIC_MATCH_THRESHOLD,
    lift: bool = DEFAULT_LIFT,
    lift_discount: float = DEFAULT_LIFT_DISCOUNT,
    max_evidence: int = DEFAULT_MAX_EVIDENCE,
    drop_weak: bool = DEFAULT_DROP_WEAK,
    embed_chunks: bool = True,
    **unknown: Any,
) -> BuildResult:
    """Build a spec and a causal graph without an LLM (see the module docstring).

    Args:
        chunks: the corpus, chunked (``hcg_core.corpus.chunk_documents``).
        embedder: embeds spans (vocabulary clustering), variables and chunks.
        tier: XS/S/M/L; caps the number of metrics and dimensions (``config.tier_caps``).
        outcome: metric names forced to the outcome/terminal roles (matched case- and
            separator-insensitively to the generated metric names; unmatched names are reported).
        spec: a given spec; its metrics are the fixed vocabulary, spans map onto its variables
            (or new variables of its metrics) by embedding similarity; nothing outside it is added.
        progress: tqdm bars per stage; ``None`` shows them only when stderr is a terminal.
        min_variable_support: statements needed for a (metric, entity) to be its own variable;
            rarer ones collapse onto the metric's generic variable.
        max_variables_per_metric: entity variables kept per metric (most supported first).
        min_metric_support: statements needed for a head word to seed a metric.
        metric_merge_threshold: cosine above which a rare head's span joins the closest metric.
        span_match_threshold / metric_match_threshold: given-spec mapping thresholds.
        lift: also link the generic variables a statement supports ("smoking causes lung cancer"
            supports Cancer(general) too), the offline stand-in for metric templates.
        lift_discount: confidence factor for lifted support.
        max_evidence: evidence chunks kept per edge, most supporting sentences first.
        drop_weak: drop variables stated by a single sentence whose cue is weak (below
            ``STRONG_CUE``, e.g. "affects", "improves"), with their edges.
        embed_chunks: compute ``chunk_embeddings`` (the slow part with a neural embedder).

    Raises:
        ConfigError: an unknown option or an out-of-range setting.
        BuildError: no causal statement was found (no edge can be backed by the text).
    """
    if unknown:
        raise ConfigError(
            f"unknown offline build option(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(OPTIONS)}, embed_chunks"
        )
    caps = tier_caps(tier)
    if min_variable_support < 1 or max_variables_per_metric < 0 or max_evidence < 1:
        raise ConfigError(
            "min_variable_support and max_evidence must be >= 1, max_variables_per_metric >= 0"
        )
    if not 0.0 < lift_discount <= 1.0:
        raise ConfigError(f"lift_discount must be in (0, 1], got {lift_discount}")
    if not chunks:
        raise BuildError("no chunks to build from: the corpus is empty")
    stages = _Stages(progress)
    warnings: list[str] = []

    t = time.perf_counter()
    corpus = collect_statements(chunks, stages)
    stages.done(
        "statements",
        t,
        chunks=len(chunks),
        sentences=len(corpus.sentences),
        statements=len(corpus.statements),
        sentences_with_cue=len({s.sentence for s in corpus.statements}),
    )
    if not corpus.statements:
        raise BuildError(
            f"no causal statement found in {len(corpus.sentences)} sentences of {len(chunks)} "
            "chunks; the offline builder needs sentences with explicit causal cues ('X causes "
            "Y', 'Y is due to X', ...). Pass an LLM (build with llm=...) for this corpus."
        )

    t = time.perf_counter()
    texts = _span_texts(corpus.statements)
    span_vec = as_matrix(embedder.embed_documents(texts), len(texts), who=embedder.name)
    row = {s: i for i, s in enumerate(texts)}
    if spec is None:
        vocab = _generate_vocabulary(
            corpus.statements,
            span_vec,
            row,
            caps.max_metrics,
            min_metric_support,
            metric_merge_threshold,
            corpus.compounds,
        )
        dropped_spans = vocab.dropped
    else:
        vocab = _map_onto_spec(
            spec,
            corpus.statements,
            span_vec,
            row,
            embedder,
            span_match_threshold,
            metric_match_threshold,
        )
        dropped_spans = vocab.dropped
    stages.done(
        "vocabulary", t, spans=len(texts), metrics=len(vocab.heads), spans_dropped=dropped_spans
    )

    t = time.perf_counter()
    graph, info = _assemble(
        corpus,
        chunks,
        vocab,
        spec,
        outcome,
        caps.max_dimensions,
        embedder,
        min_variable_support,
        max_variables_per_metric,
        lift and spec is None,
        lift_discount,
        max_evidence,
        warnings,
        drop_weak,
    )
    validate_graph(graph.spec, graph.variables, graph.edges, {c.id for c in chunks})
    stages.done(
        "graph",
        t,
        variables=len(graph.variables),
        edges=len(graph.edges),
        dimensions=len(graph.spec.dimensions),
        metrics=len(graph.spec.metrics),
        **info,
    )

    t = time.perf_counter()
    from ..store import variable_text

    var_texts = [variable_text(v) for v in graph.variables]
    var_vec = as_matrix(embedder.embed_documents(var_texts), len(var_texts), who=embedder.name)
    stages.done("embed_variables", t, variables=len(var_texts))
    chunk_vec = None
    if embed_chunks:
        t = time.perf_counter()
        ctexts = [c.text for c in chunks]
        chunk_vec = embed_texts(embedder, ctexts, what="chunks", progress=stages.progress)
        stages.done("embed_chunks", t, chunks=len(ctexts))
    report = {
        "builder": "offline",
        "tier": tier.upper(),
        "embedder": embedder.name,
        "stages": stages.report,
        "llm": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "retries": 0, "failed": 0},
        "warnings": warnings,
    }
    return BuildResult(
        graph=graph, variable_embeddings=var_vec, chunk_embeddings=chunk_vec, report=report
    )


# ----------------------------------------------------------------------------- vocabulary


@dataclass
class _Vocabulary:
    """Metric heads and, per span text, the metric index and entity it maps to (or None)."""

    heads: list[str]
    assign: dict[str, tuple[int, str] | None]
    dropped: int = 0
    # Given-spec mode: metric index -> Metric, and entity keys that are existing variables.
    given: list[Metric] | None = None


def _generate_vocabulary(
    statements: Sequence[Statement],
    span_vec: np.ndarray,
    row: dict[str, int],
    max_metrics: int,
    min_support: int,
    merge_threshold: float,
    compounds: frozenset[str] = frozenset(),
) -> _Vocabulary:
    """Heads by support become metrics; spans with a rarer head join the closest metric."""
    spans: dict[str, Span] = {}
    parts: dict[str, tuple[str, str]] = {}
    head_count: Counter = Counter()
    head_best: dict[str, float] = defaultdict(float)
    for st in statements:
        for sp in (st.cause, st.effect):
            spans.setdefault(sp.text, sp)
            parts.setdefault(sp.text, head_of(sp, compounds))
            head_count[parts[sp.text][0]] += 1
            head_best[parts[sp.text][0]] = max(head_best[parts[sp.text][0]], st.strength)
    ranked = sorted(head_count, key=lambda h: (-head_count[h], -head_best[h], h))
    # A head seeds a metric with enough statements, or with one that uses a strong cue
    # ("causes", "leads to"); a single weak mention ("affects") does not.
    heads = [h for h in ranked if head_count[h] >= min_support or head_best[h] >= STRONG_CUE][
        :max_metrics
    ]
    if not heads:
        heads = ranked[:1]
    head_index = {h: i for i, h in enumerate(heads)}
    # A metric's centroid: the mean vector of the spans that carry its head.
    centroids = np.zeros((len(heads), span_vec.shape[1]), dtype=np.float32)
    for text in spans:
        if parts[text][0] in head_index:
            centroids[head_index[parts[text][0]]] += span_vec[row[text]]
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    centroids /= norms
    rare = [t for t in spans if parts[t][0] not in head_index]
    best, sim = _cos_argmax(span_vec[[row[t] for t in rare]], centroids) if rare else ([], [])
    assign: dict[str, tuple[int, str] | None] = {}
    for text in spans:
        head, entity = parts[text]
        if head in head_index:
            assign[text] = (head_index[head], entity)
    dropped = 0
    for t, b, s in zip(rare, best, sim, strict=True):
        if s >= merge_threshold:
            # The head is not the metric's own, so it stays in the entity: "carcinoma" under Cancer.
            assign[t] = (int(b), " ".join(x for x in parts[t][::-1] if x))
        else:
            assign[t] = None
            dropped += 1
    return _Vocabulary(heads=heads, assign=assign, dropped=dropped)


def _map_onto_spec(
    spec: DomainSpec,
    statements: Sequence[Statement],
    span_vec: np.ndarray,
    row: dict[str, int],
    embedder: Embedder,
    span_threshold: float,
    metric_threshold: float,
) -> _Vocabulary:
    """Given spec: each span becomes an existing variable, or a new one of the closest metric."""
    from ..store import variable_text

    metrics = list(spec.metrics)
    m_index = {m.name: i for i, m in enumerate(metrics)}
    vtexts = [variable_text(v) for v in spec.variables]
    vvec = (
        as_matrix(embedder.embed_documents(vtexts), len(vtexts), who=embedder.name)
        if vtexts
        else np.zeros((0, span_vec.shape[1]), dtype=np.float32)
    )
    mtexts = [f"{m.name.replace('_', ' ')}. {m.description}" for m in metrics]
    mvec = as_matrix(embedder.embed_documents(mtexts), len(mtexts), who=embedder.name)
    texts = list(row)
    vb, vs = _cos_argmax(span_vec, vvec)
    mb, ms = _cos_argmax(span_vec, mvec)
    assign: dict[str, tuple[int, str] | None] = {}
    dropped = 0
    spans = {st.cause.text: st.cause for st in statements} | {
        st.effect.text: st.effect for st in statements
    }
    for i, t in enumerate(texts):
        if vtexts and vs[i] >= span_threshold:
            v = spec.variables[int(vb[i])]
            assign[t] = (m_index[v.metric], "\x00existing\x00" + "\x1f".join(v.entities))
        elif ms[i] >= metric_threshold and len(metrics[int(mb[i])].signature) <= 1:
            sp = spans[t]
            ent = sp.text if metrics[int(mb[i])].signature else ""
            assign[t] = (int(mb[i]), ent if ent != sp.head else "")
        else:
            assign[t] = None
            dropped += 1
    return _Vocabulary(
        heads=[m.name for m in metrics], assign=assign, dropped=dropped, given=metrics
    )


# ----------------------------------------------------------------------------- assembly


def _assemble(
    corpus: _Corpus,
    chunks: Sequence[Chunk],
    vocab: _Vocabulary,
    spec: DomainSpec | None,
    outcome: OutcomeConfig | None,
    max_dimensions: int,
    embedder: Embedder,
    min_support: int,
    max_per_metric: int,
    lift: bool,
    lift_discount: float,
    max_evidence: int,
    warnings: list[str],
    drop_weak: bool = True,
) -> tuple[CausalGraph, dict[str, Any]]:
    given = vocab.given is not None
    # 1. Variable candidates and their support.
    node_support: Counter = Counter()
    aliases: dict[tuple[int, str], Counter] = defaultdict(Counter)
    for st in corpus.statements:
        for sp in (st.cause, st.effect):
            a = vocab.assign.get(sp.text)
            if a is None:
                continue
            key = (a[0], a[1] if given and a[1].startswith("\x00") else _entity_key(a[1]))
            node_support[key] += 1
            aliases[key][sp.text] += 1
    # 2. Keep well-supported entity variables; the rest collapse onto the metric's generic one.
    keep: dict[tuple[int, str], tuple[int, str]] = {}
    per_metric: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for key in sorted(node_support, key=lambda k: (k[0], -node_support[k], k[1])):
        per_metric[key[0]].append(key)
    for m, keys in per_metric.items():
        kept = 0
        for key in keys:
            existing = given and key[1].startswith("\x00")
            if key[1] and (
                existing or (node_support[key] >= min_support and kept < max_per_metric)
            ):
                keep[key] = key
                kept += not existing
            else:
                keep[key] = (m, "")
    # 3. Edges with their supporting sentences. Lifting goes up the entity hierarchy of each
    # metric: a kept entity whose words are a subset of another's is its ancestor ("skin" of
    # "basal cell skin"), and the generic variable is every entity's root.
    ancestors: dict[tuple[int, str], list[tuple[int, str]]] = {}
    if lift:
        kept_by_metric: dict[int, list[frozenset[str]]] = defaultdict(list)
        for node in sorted(set(keep.values())):
            if node[1] and not (given and node[1].startswith("\x00")):
                kept_by_metric[node[0]].append(frozenset(node[1].split()))
        for node in sorted(set(keep.values())):
            up = [(node[0], "")] if node[1] else []
            if node[1] and not (given and node[1].startswith("\x00")):
                words = frozenset(node[1].split())
                up += [(node[0], " ".join(sorted(w))) for w in kept_by_metric[node[0]] if w < words]
            ancestors[node] = up
    support: dict[tuple, dict[int, float]] = defaultdict(dict)
    direct_in: Counter = Counter()
    direct_out: Counter = Counter()
    for st in corpus.statements:
        ca, ea = vocab.assign.get(st.cause.text), vocab.assign.get(st.effect.text)
        if ca is None or ea is None:
            continue
        src = keep[(ca[0], ca[1] if given and ca[1].startswith("\x00") else _entity_key(ca[1]))]
        tgt = keep[(ea[0], ea[1] if given and ea[1].startswith("\x00") else _entity_key(ea[1]))]
        pairs = [(src, tgt, st.strength)]
        if lift:
            lifted = st.strength * lift_discount
            srcs, tgts = [src, *ancestors[src]], [tgt, *ancestors[tgt]]
            pairs += [(a, b, lifted) for a in srcs for b in tgts if (a, b) != (src, tgt)]
        if src[0] != tgt[0]:
            direct_out[src[0]] += 1
            direct_in[tgt[0]] += 1
        for s, t_, w in pairs:
            if s != t_:
                prev = support[(s, t_)].get(st.sentence, 0.0)
                support[(s, t_)][st.sentence] = max(prev, w)
    # A variable stated by a single sentence with a weak cue ("affects", "improves") is more
    # likely a mis-parsed span than a quantity of the domain: drop it with its edges.
    dropped_weak = 0
    if drop_weak:
        node_sents: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
        for (s_, t_), sents in support.items():
            for node in (s_, t_):
                for i, w in sents.items():
                    node_sents[node][i] = max(node_sents[node].get(i, 0.0), w)
        weak = {
            n
            for n, sents in node_sents.items()
            if len(sents) == 1 and max(sents.values()) < STRONG_CUE
        }
        for key in [k for k in support if k[0] in weak or k[1] in weak]:
            del support[key]
        dropped_weak = len(weak)
    # 4. Roles.
    n_metrics = len(vocab.heads)
    names = [m.name for m in vocab.given] if given else _unique_names(vocab.heads)
    roles = _roles(n_metrics, names, direct_in, direct_out, outcome, vocab.given, warnings)
    terminal = {i for i, r in enumerate(roles) if r == "terminal"}
    dropped_terminal = 0
    for key in [k for k in support if k[0][0] in terminal]:
        del support[key]
        dropped_terminal += 1
    # 5. Only nodes that carry an edge become variables.
    used = sorted({n for k in support for n in k}, key=lambda n: (n[0], n[1] != "", n[1]))
    metric_used = sorted({n[0] for n in used})
    # 6. Dimensions and signatures.
    dims, signature, entity_names = _dimensions(
        used, aliases, node_support, vocab, spec, max_dimensions, embedder, keep
    )
    metrics_out: list[Metric] = []
    for i in metric_used:
        if given:
            m = vocab.given[i]
            metrics_out.append(Metric(m.name, m.signature, m.description, m.category, roles[i]))
        else:
            metrics_out.append(
                Metric(
                    names[i],
                    signature.get(i, ()),
                    "",
                    signature.get(i, ("general",))[0] if signature.get(i) else "general",
                    roles[i],
                )
            )
    var_of: dict[tuple[int, str], Variable] = {}
    for node in used:
        m = metrics_out[metric_used.index(node[0])]
        ents = entity_names[node]
        top = [a for a, _ in _node_aliases(node, keep, aliases).most_common(5)]
        var_of[node] = Variable(m.name, ents, "aliases: " + "; ".join(top) if top else "")
    # Metric descriptions: what the text says drives it and what it drives.
    drivers: dict[int, Counter] = defaultdict(Counter)
    drives: dict[int, Counter] = defaultdict(Counter)
    for (s, t_), sents in support.items():
        if s[0] != t_[0]:
            drives[s[0]][t_[0]] += len(sents)
            drivers[t_[0]][s[0]] += len(sents)
    if not given:
        metrics_out = [
            _describe(m, i, names, drivers, drives, aliases, keep)
            for m, i in zip(metrics_out, metric_used, strict=True)
        ]
    # 7. Edges.
    chunk_ids = [c.id for c in chunks]
    edges: list[CausalEdge] = []
    for s, t_ in sorted(support, key=lambda k: (var_of[k[0]].name, var_of[k[1]].name)):
        sents = support[(s, t_)]
        sids = _distinct_sentences(sents, corpus.sentences)
        best = max(
            sids, key=lambda i: (sents[i], len(corpus.chunks_of[i]), -len(corpus.sentences[i]), -i)
        )
        per_chunk: Counter = Counter()
        for i in sids:
            for c in corpus.chunks_of[i]:
                per_chunk[c] += 1
        # The mechanism sentence's chunk first, then chunks holding more supporting sentences.
        first = corpus.chunks_of[best][0]
        ranked = sorted(per_chunk, key=lambda c: (c != first, -per_chunk[c], c))[:max_evidence]
        src, tgt = var_of[s], var_of[t_]
        edges.append(
            CausalEdge(
                id=_stable_id("e_", src.name, tgt.name),
                source=src.name,
                target=tgt.name,
                mechanism=corpus.sentences[best][:_MAX_MECHANISM_CHARS],
                confidence=edge_confidence(sents[i] for i in sids),
                evidence=tuple(chunk_ids[c] for c in ranked),
            )
        )
    out_spec = DomainSpec(
        dimensions=tuple(dims),
        metrics=tuple(metrics_out),
        variables=(),
        relations=(),
        outcome=OutcomeConfig(
            outcomes=tuple(m.name for m in metrics_out if m.role == "outcome"),
            terminals=tuple(m.name for m in metrics_out if m.role == "terminal"),
            description=(outcome.description if outcome else "generated by the offline builder"),
        ),
        domain=spec.domain if spec is not None else "",
    )
    if spec is not None:
        out_spec = DomainSpec(
            dimensions=tuple(dims),
            metrics=tuple(metrics_out),
            variables=spec.variables,
            relations=spec.relations,
            outcome=out_spec.outcome,
            domain=spec.domain,
        )
    variables = tuple(var_of[n] for n in used)
    graph = CausalGraph(
        spec=out_spec, variables=variables, edges=tuple(edges), chunks=tuple(chunks)
    )
    info = {
        "edges_dropped_leaving_terminal": dropped_terminal,
        "weak_single_sentence_variables_dropped": dropped_weak,
        "outcome_metrics": sum(m.role == "outcome" for m in metrics_out),
        "terminal_metrics": sum(m.role == "terminal" for m in metrics_out),
    }
    return graph, info


def _node_aliases(node, keep, aliases) -> Counter:
    out: Counter = Counter()
    for key, target in keep.items():
        if target == node:
            out.update(aliases[key])
    return out


def _distinct_sentences(sents: dict[int, float], sentences: list[str]) -> list[int]:
    """Sentence ids, dropping fragments (a sentence cut by a chunk edge is inside the full one)."""
    ids = sorted(sents, key=lambda i: (-len(sentences[i]), i))
    out: list[int] = []
    for i in ids:
        if not any(sentences[i] in sentences[j] for j in out):
            out.append(i)
    return out


def _unique_names(heads: list[str]) -> list[str]:
    seen: Counter = Counter()
    out = []
    for h in heads:
        n = metric_name(h)
        seen[n] += 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _roles(
    n: int,
    names: list[str],
    din: Counter,
    dout: Counter,
    outcome: OutcomeConfig | None,
    given: list[Metric] | None,
    warnings: list[str],
) -> list[str]:
    """Graph roles: a given spec's roles, else sinks -> terminal, mostly-effects -> outcome."""
    if given is not None:
        roles = [m.role for m in given]
    else:
        roles = ["intermediate"] * n
        sinks = sorted(
            (i for i in range(n) if din[i] >= 2 and dout[i] == 0), key=lambda i: (-din[i], i)
        )
        for i in sinks[: max(1, round(DEFAULT_TERMINAL_SHARE * n))]:
            roles[i] = "terminal"
        for i in range(n):
            total = din[i] + dout[i]
            if (
                roles[i] == "intermediate"
                and din[i] >= 3
                and din[i] / total >= DEFAULT_OUTCOME_IN_SHARE
            ):
                roles[i] = "outcome"
        if "outcome" not in roles and n:
            best = max(range(n), key=lambda i: (din[i] - dout[i], -i))
            if roles[best] == "intermediate":
                roles[best] = "outcome"
    if outcome is not None:
        by_norm = {_norm(nm): i for i, nm in enumerate(names)}
        for role, wanted in (("outcome", outcome.outcomes), ("terminal", outcome.terminals)):
            for w in wanted:
                i = by_norm.get(_norm(w))
                if i is None:
                    warnings.append(
                        f"outcome configuration names {w!r}, which is not a metric "
                        "of this graph; it was ignored"
                    )
                else:
                    roles[i] = role
    return roles


def _dimensions(
    used,
    aliases,
    node_support,
    vocab: _Vocabulary,
    spec: DomainSpec | None,
    max_dimensions: int,
    embedder: Embedder,
    keep,
):
    """Dimensions, metric signatures and each variable's entity tuple."""
    entity_names: dict[tuple[int, str], tuple[str, ...]] = {}
    if spec is not None:
        dims = {d.name: list(d.entities) for d in spec.dimensions}
        for node in used:
            m = vocab.given[node[0]]
            if node[1].startswith("\x00"):
                entity_names[node] = (
                    tuple(node[1].split("\x00")[-1].split("\x1f")) if m.signature else ()
                )
            elif m.signature and node[1]:
                ent = _display_entity(node, keep, aliases)
                if ent not in dims[m.signature[0]]:
                    dims[m.signature[0]].append(ent)
                entity_names[node] = (ent,)
            elif m.signature:
                if GENERIC_ENTITY not in dims[m.signature[0]]:
                    dims[m.signature[0]].append(GENERIC_ENTITY)
                entity_names[node] = (GENERIC_ENTITY,)
            else:
                entity_names[node] = ()
        out = [Dimension(d.name, tuple(dims[d.name]), d.description) for d in spec.dimensions]
        return out, {}, entity_names
    with_entities = sorted({n[0] for n in used if n[1]})
    display = {n: _display_entity(n, keep, aliases) for n in used if n[1]}
    signature: dict[int, tuple[str, ...]] = {}
    dims: list[Dimension] = []
    if with_entities:
        ents_by_metric = {
            m: [display[n] for n in used if n[0] == m and n[1]] for m in with_entities
        }
        texts = [", ".join(ents_by_metric[m]) for m in with_entities]
        vec = as_matrix(embedder.embed_documents(texts), len(texts), who=embedder.name)
        weight = np.array(
            [sum(node_support.get(n, 1) for n in used if n[0] == m) for m in with_entities],
            dtype=np.float64,
        )
        labels = spherical_kmeans(vec, weight, max_dimensions)
        names_seen: Counter = Counter()
        for lab in sorted(set(labels.tolist())):
            members = [m for m, lb in zip(with_entities, labels.tolist(), strict=True) if lb == lab]
            words: Counter = Counter()
            for m in members:
                for e in ents_by_metric[m]:
                    words[e.split()[-1]] += 1
            base = re.sub(r"[^a-z0-9]+", "_", min(words, key=lambda w: (-words[w], w))) or "entity"
            names_seen[base] += 1
            name = base if names_seen[base] == 1 else f"{base}_{names_seen[base]}"
            ents: dict[str, None] = {}
            for m in members:
                signature[m] = (name,)
                for e in ents_by_metric[m]:
                    ents.setdefault(e, None)
                if any(n[0] == m and not n[1] for n in used):
                    ents.setdefault(GENERIC_ENTITY, None)
            dims.append(
                Dimension(
                    name,
                    tuple(ents),
                    f"entities that qualify {len(members)} metrics, e.g. "
                    + ", ".join(list(ents)[:5]),
                )
            )
    for node in used:
        if node[0] in signature:
            entity_names[node] = (display[node],) if node[1] else (GENERIC_ENTITY,)
        else:
            entity_names[node] = ()
    return dims, signature, entity_names


def _display_entity(node, keep, aliases) -> str:
    """The entity as people wrote it: the most frequent alias, minus the metric's own head."""
    # Entity keys are sorted word sets; show the words in their written order instead.
    best = _node_aliases(node, keep, aliases)
    key_words = set(node[1].split())
    for alias, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0])):
        words = [w for w in alias.split() if w != "of"]
        from .extract import singular

        ordered = [singular(w) for w in words if singular(w) in key_words]
        if set(ordered) == key_words:
            return " ".join(dict.fromkeys(ordered))
    return node[1]


def _describe(m: Metric, i: int, names, drivers, drives, aliases, keep) -> Metric:
    ins = [names[j] for j, _ in drivers[i].most_common(4)]
    outs = [names[j] for j, _ in drives[i].most_common(4)]
    spans: Counter = Counter()
    for key, cnt in aliases.items():
        if key[0] == i:
            spans.update(cnt)
    parts = [
        f"{m.name.replace('_', ' ')} as the text states it, e.g. "
        + "; ".join(a for a, _ in spans.most_common(4))
        + "."
    ]
    if ins:
        parts.append("Driven by: " + ", ".join(ins) + ".")
    if outs:
        parts.append("Influences: " + ", ".join(outs) + ".")
    return Metric(m.name, m.signature, " ".join(parts), m.category, m.role)


__all__ = [
    "OPTIONS",
    "build_offline",
    "collect_statements",
    "edge_confidence",
    "metric_name",
    "spherical_kmeans",
]
