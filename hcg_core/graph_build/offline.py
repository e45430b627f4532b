"""The LLM-free builder: Stages 1 and 2 from explicit causal statements in the text.

Every edge is backed by at least one sentence with a causal cue (``extract``): that sentence is the
mechanism, and the chunks that state the edge (the mechanism's first) are its evidence
(``evidence.link_evidence``, the linking every builder ends with). What replaces the LLM is
canonicalisation, so that the graph has structure to traverse: spans are split into a head (the
measure) and a modifier (the entity); heads become the fixed metric vocabulary (capped by the
tier), modifiers become variables bound to dimension entities, rare variables collapse onto a
per-metric generic variable, and each statement also supports its generic ("lifted") form, which
plays the part of the paper's Tier-1 metric templates. See docs/offline-builder.md.

This module only runs the steps in order, times them and writes the report; each step is its own
module: ``statements`` (sentences and cue-backed statements), ``spec.offline_vocabulary`` (metrics:
the offline Stage 1), ``support`` (variables, lifted support, weak drops, roles), ``dimensions``
(entity clusters), ``edges`` (mechanism, confidence) and ``evidence`` (the links to the chunks).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..blocks import embedding_texts
from ..config import DEFAULT_TIER, OfflineBuildConfig, tier_caps
from ..embedding import embed_texts
from ..errors import BuildError
from ..ports import Embedder
from ..spec.offline_vocabulary import (
    NodeKey,
    Vocabulary,
    describe_metric,
    generate_vocabulary,
    map_onto_spec,
    span_texts,
)
from ..spec.validate import validate_graph
from ..types import (
    BuildResult,
    CausalGraph,
    Chunk,
    DomainSpec,
    Metric,
    OutcomeConfig,
    Variable,
    variable_text,
)
from .dimensions import dimensions
from .edges import make_edges
from .evidence import LinkStats, relink_graph
from .generic import generic_words
from .incremental import SupportLedger, ledger_from_build
from .statements import SentenceCorpus, collect_statements
from .support import (
    Support,
    choose_nodes,
    drop_leaving,
    drop_nodes,
    drop_weak_nodes,
    link_support,
    metric_flows,
    roles,
)

# One INFO line as each stage starts (`hcg build` prints them; bars only show on a terminal).
progress_log = logging.getLogger("hcg_core.graph_build.progress")
logger = logging.getLogger(__name__)

# What an empty graph means for the user; starts every empty-graph warning (tests match it).
EMPTY_GRAPH_NOTE = "the causal graph is empty"


def empty_graph_note(statements: int, sentences: int, chunks: int) -> str:
    """The warning of a build that made no edge: why, what retrieval does, how to get a graph."""
    found = (
        f"no causal statements were found in {sentences:,} sentences of {chunks:,} chunks"
        if not statements
        else f"none of the {statements:,} causal statements found became an edge"
    )
    return (
        f"{EMPTY_GRAPH_NOTE}: {found} (the offline builder reads sentences with explicit causal "
        "cues such as 'X causes Y', 'Y is due to X'); retrieval uses text only (BM25 and the "
        "embedder), which works as usual. Build with an LLM (--llm-model) for a graph of "
        "implicit causes; `hcg add` cannot add causal edges to an empty graph, rebuild instead"
    )


@dataclass
class _Build:
    """One build's inputs and settings, shared by its steps; times each step and shows a tqdm
    bar when asked, and collects the report's stage entries and the build's warnings."""

    chunks: Sequence[Chunk]
    embedder: Embedder
    spec: DomainSpec | None
    outcome: OutcomeConfig | None
    cfg: OfflineBuildConfig
    progress: bool | None
    report: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.progress is None:
            self.progress = bool(getattr(sys.stderr, "isatty", lambda: False)())

    def iterate(self, items: Sequence[Any], desc: str) -> Iterable[Any]:
        if not self.progress:
            return items
        from tqdm import tqdm

        return tqdm(items, desc=desc, unit="it", leave=False)

    @staticmethod
    def begin(what: str = "") -> tuple[float, float]:
        """A stage's start, said on ``progress_log``: wall clock and this process's CPU time."""
        if what:
            progress_log.info("%s", what)
        return time.perf_counter(), time.process_time()

    def done(self, name: str, started: tuple[float, float], **counts: Any) -> None:
        # CPU seconds (all of this process's threads) beside wall seconds: on a busy machine the
        # wall time also counts the time other processes held the CPU, the CPU time does not.
        self.report[name] = {
            "seconds": round(time.perf_counter() - started[0], 3),
            "cpu_seconds": round(time.process_time() - started[1], 3),
            **counts,
        }


def build_offline(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    tier: str = DEFAULT_TIER,
    outcome: OutcomeConfig | None = None,
    spec: DomainSpec | None = None,
    progress: bool | None = None,
    config: OfflineBuildConfig | None = None,
    embed_chunks: bool = True,
    **options: Any,
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
        config: the builder's settings (``OfflineBuildConfig``: supports, thresholds, ``lift``,
            ``max_evidence``, ``drop_weak``...); defaults when None.
        embed_chunks: compute ``chunk_embeddings`` (the slow part with a neural embedder).
        options: any ``OfflineBuildConfig`` field by name (``lift=False``), applied over
            ``config``; the way ``build_graph`` passes them.

    Raises:
        ConfigError: an unknown option or an out-of-range setting.
        BuildError: there are no chunks at all.

    A corpus in which no sentence states a causal link (an office FAQ) is not an error: it gives
    an empty graph (no metric, variable or edge) with its chunks and their vectors, so retrieval
    works on text signals alone; the report's ``warnings`` and a logged warning say so
    (``EMPTY_GRAPH_NOTE``).
    """
    cfg = OfflineBuildConfig.from_options(config, **options)
    caps = tier_caps(tier)
    if not chunks:
        raise BuildError("no chunks to build from: the corpus is empty")
    build = _Build(chunks, embedder, spec, outcome, cfg, progress)
    corpus = _read_statements(build)
    vocab = _vocabulary(build, corpus, caps.max_metrics)
    t = build.begin(
        f"graph: variables, edges and dimensions from the vocabulary's {len(vocab.heads):,} metrics"
    )
    graph, info, ledger = _assemble(build, corpus, vocab, caps.max_dimensions)
    validate_graph(graph.spec, graph.variables, graph.edges, {c.id for c in chunks})
    build.done("graph", t, **info)
    if left_out := metrics_left_out_note(len(vocab.heads), len(graph.spec.metrics)):
        progress_log.info("%s", left_out)
    graph, linking = _link(build, graph)
    var_vec, chunk_vec = _embed(build, graph, embed_chunks)
    if not graph.edges:
        note = empty_graph_note(len(corpus.statements), len(corpus.sentences), len(chunks))
        logger.warning("%s", note)
        build.warnings.append(note)
    report = {
        "builder": "offline",
        "tier": tier.upper(),
        "embedder": embedder.name,
        "stages": build.report,
        "evidence": linking.as_dict(),
        "llm": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "retries": 0, "failed": 0},
        "warnings": build.warnings,
    }
    return BuildResult(
        graph=graph,
        variable_embeddings=var_vec,
        chunk_embeddings=chunk_vec,
        report=report,
        ledger=ledger,
    )


def metrics_left_out_note(vocabulary: int, kept: int) -> str | None:
    """The line saying how many of the vocabulary's metrics the graph keeps, when not all: only
    a metric with an edge (or a given spec's variable) is kept, so the stage line's count and
    the saved graph's (``hcg inspect``, the ``built`` line) differ by these.

    >>> metrics_left_out_note(46, 43)
    'graph: 43 metrics kept; 3 of the 46 carry no edge and are left out'
    """
    if kept >= vocabulary:
        return None
    return (
        f"graph: {kept:,} metrics kept; {vocabulary - kept:,} of the {vocabulary:,} carry no edge "
        "and are left out"
    )


def _read_statements(build: _Build) -> SentenceCorpus:
    """Step 1: the corpus's distinct sentences and their cue-backed statements."""
    chunks = build.chunks
    t = build.begin(f"causal statements: reading the sentences of {len(chunks):,} chunks")
    corpus = collect_statements(chunks, build.iterate)
    build.done(
        "statements",
        t,
        chunks=len(chunks),
        sentences=len(corpus.sentences),
        statements=len(corpus.statements),
        sentences_with_cue=len({s.sentence for s in corpus.statements}),
    )
    return corpus


def _vocabulary(build: _Build, corpus: SentenceCorpus, max_metrics: int) -> Vocabulary:
    """Step 2 (the offline Stage 1): the metric vocabulary, generated or a given spec's."""
    spec, embedder, cfg = build.spec, build.embedder, build.cfg
    texts = span_texts(corpus.statements)
    t = build.begin(
        f"vocabulary: {len(corpus.statements):,} statements, embedding {len(texts):,} spans"
    )
    span_vec = embed_texts(embedder, texts, what="spans", progress=build.progress)
    row = {s: i for i, s in enumerate(texts)}
    if spec is None:
        vocab = generate_vocabulary(
            corpus.statements,
            span_vec,
            row,
            max_metrics,
            cfg.min_metric_support,
            cfg.metric_merge_threshold,
            corpus.compounds,
        )
    else:
        vocab = map_onto_spec(
            spec,
            corpus.statements,
            span_vec,
            row,
            embedder,
            cfg.span_match_threshold,
            cfg.metric_match_threshold,
        )
    build.done(
        "vocabulary", t, spans=len(texts), metrics=len(vocab.heads), spans_dropped=vocab.dropped
    )
    return vocab


def _link(build: _Build, graph: CausalGraph) -> tuple[CausalGraph, LinkStats]:
    """The evidence step: every edge linked to the chunks that state it (``relink_graph``)."""
    t = build.begin(f"evidence: linking {len(graph.edges):,} edges to the chunks that state them")
    graph, linking = relink_graph(graph, per_edge=build.cfg.max_evidence)
    build.done(
        "evidence",
        t,
        links=graph.evidence_links,
        **{f"links_by_{way}": n for way, n in linking.links.items()},
        edges_without_evidence=linking.edges_without_evidence,
        chunk_cap=linking.chunk_cap,
    )
    return graph, linking


def _embed(
    build: _Build, graph: CausalGraph, embed_chunks: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """The variables' vectors, and the chunks' when ``embed_chunks``."""
    chunks, embedder, progress = build.chunks, build.embedder, build.progress
    var_texts = [variable_text(v) for v in graph.variables]
    t = build.begin(f"embedding {len(var_texts):,} variables")
    var_vec = embed_texts(embedder, var_texts, what="variables", progress=progress)
    build.done("embed_variables", t, variables=len(var_texts))
    if not embed_chunks:
        return var_vec, None
    # A short block a user's splitter cut is embedded once, for all its pieces (blocks.py).
    ctexts, rows = embedding_texts(chunks)
    t = build.begin(f"embedding {len(chunks):,} chunks ({len(ctexts):,} texts)")
    chunk_vec = embed_texts(embedder, ctexts, what="chunks", progress=progress)[rows]
    build.done("embed_chunks", t, chunks=len(chunks), texts=len(ctexts))
    return var_vec, chunk_vec


def _assemble(
    build: _Build, corpus: SentenceCorpus, vocab: Vocabulary, max_dimensions: int
) -> tuple[CausalGraph, dict[str, Any], SupportLedger]:
    """Steps 3-5 on a vocabulary: variables, supported links, roles, dimensions, edges; and the
    ledger of the support behind each edge (for incremental updates)."""
    chunks, spec, outcome, cfg = build.chunks, build.spec, build.outcome, build.cfg
    given = vocab.given is not None
    nodes = choose_nodes(
        corpus.statements, vocab, cfg.min_variable_support, cfg.max_variables_per_metric
    )
    # Lifting maps a generated vocabulary's entity hierarchy; a given spec's variables are fixed.
    lift = cfg.lift and spec is None
    support, direct_in, direct_out = link_support(
        corpus.statements, vocab, nodes, lift=lift, lift_discount=cfg.lift_discount
    )
    dropped_weak = drop_weak_nodes(support) if cfg.drop_weak else 0
    generic: dict[str, tuple[float, float]] = {}
    dropped_generic = 0
    if cfg.drop_generic and not given:
        # One-word variables (a metric's generic variable whose head is one word) whose word is
        # generic in the corpus by its spread and lack of burstiness (graph_build.generic).
        one_word = {h: i for i, h in enumerate(vocab.heads) if " " not in h}
        generic = generic_words(chunks, one_word)
        dropped_generic = drop_nodes(support, {NodeKey(one_word[w]) for w in generic})
    names = vocab.metric_names()
    metric_roles = roles(
        len(vocab.heads), names, direct_in, direct_out, outcome, vocab.given, build.warnings
    )
    dropped_terminal = drop_leaving(
        support, {i for i, r in enumerate(metric_roles) if r == "terminal"}
    )
    # Only nodes that carry an edge become variables.
    used = sorted({n for link in support for n in link}, key=NodeKey.sort_key)
    metric_used = {n.metric for n in used}
    if spec is not None:
        # A given spec's seed variables stay in the spec, so their metrics must too (even when no
        # edge reached them), or the built spec would not validate.
        index = {m.name: i for i, m in enumerate(spec.metrics)}
        metric_used |= {index[v.metric] for v in spec.variables}
    metric_used = sorted(metric_used)
    node_aliases = nodes.node_aliases()
    dims, signature, entity_names = dimensions(
        used, node_aliases, nodes.support, vocab, spec, max_dimensions, build.embedder
    )
    metrics_out = _metrics(vocab, metric_used, names, metric_roles, signature)
    var_of: dict[NodeKey, Variable] = {}
    for node in used:
        m = metrics_out[metric_used.index(node.metric)]
        top = [a for a, _ in node_aliases[node].most_common(5)]
        var_of[node] = Variable(
            m.name, entity_names[node], "aliases: " + "; ".join(top) if top else ""
        )
    if not given:
        metrics_out = _describe_all(metrics_out, metric_used, names, support, nodes)
    edges = make_edges(support, var_of, corpus)
    graph = CausalGraph(
        spec=_spec(dims, metrics_out, spec, outcome),
        variables=tuple(var_of[n] for n in used),
        edges=tuple(edges),
        chunks=tuple(chunks),
    )
    ledger = ledger_from_build(corpus, vocab, nodes, support, var_of, chunks, cfg, lift)
    info = {
        "variables": len(graph.variables),
        "edges": len(graph.edges),
        "dimensions": len(graph.spec.dimensions),
        "metrics": len(graph.spec.metrics),
        "edges_dropped_leaving_terminal": dropped_terminal,
        "weak_single_sentence_variables_dropped": dropped_weak,
        "generic_variables_dropped": dropped_generic,
        # The words judged generic, the most spread first (whether or not they had an edge).
        "generic_words": ", ".join(sorted(generic, key=lambda w: (-generic[w][0], w))[:12]),
        "outcome_metrics": sum(m.role == "outcome" for m in metrics_out),
        "terminal_metrics": sum(m.role == "terminal" for m in metrics_out),
    }
    return graph, info, ledger


def _metrics(
    vocab: Vocabulary,
    metric_used: list[int],
    names: list[str],
    metric_roles: list[str],
    signature: dict[int, tuple[str, ...]],
) -> list[Metric]:
    """The metrics that carry an edge: a given spec's (with their role), or generated ones."""
    out: list[Metric] = []
    for i in metric_used:
        if vocab.given is not None:
            out.append(replace(vocab.given[i], role=metric_roles[i]))
        else:
            sig = signature.get(i, ())
            out.append(Metric(names[i], sig, "", sig[0] if sig else "general", metric_roles[i]))
    return out


def _describe_all(
    metrics: list[Metric], metric_used: list[int], names: list[str], support: Support, nodes
) -> list[Metric]:
    """Generated metrics' descriptions: what the text says drives each and what it drives."""
    drivers, drives = metric_flows(support)
    spans = nodes.metric_aliases()
    return [
        describe_metric(m, names, drivers[i], drives[i], spans[i])
        for m, i in zip(metrics, metric_used, strict=True)
    ]


def _spec(
    dims: list, metrics: list[Metric], spec: DomainSpec | None, outcome: OutcomeConfig | None
) -> DomainSpec:
    """The built graph's spec: its dimensions and metrics, and a given spec's seeds and domain."""
    return DomainSpec(
        dimensions=tuple(dims),
        metrics=tuple(metrics),
        variables=spec.variables if spec is not None else (),
        relations=spec.relations if spec is not None else (),
        outcome=OutcomeConfig(
            outcomes=tuple(m.name for m in metrics if m.role == "outcome"),
            terminals=tuple(m.name for m in metrics if m.role == "terminal"),
            description=(outcome.description if outcome else "generated by the offline builder"),
        ),
        domain=spec.domain if spec is not None else "",
    )
