"""Plain, frozen data passed between the pipeline's stages (the paper's Definition 1 and Stage 3).

Data flows one way: documents -> chunks -> DomainSpec -> CausalGraph -> RetrievalResult.
Nothing here does I/O; validation of a spec lives in ``hcg_core.spec``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

GraphRole = Literal["terminal", "outcome", "intermediate"]
GRAPH_ROLES: tuple[str, ...] = ("terminal", "outcome", "intermediate")
Route = Literal["graph", "fallback"]


def variable_name(metric: str, entities: tuple[str, ...]) -> str:
    """The canonical, human-readable key of a variable: ``Metric(entity, entity)``.

    >>> variable_name("Efficacy", ("chemotherapy", "NSCLC"))
    'Efficacy(chemotherapy, NSCLC)'
    >>> variable_name("PatientOutcome", ())
    'PatientOutcome'
    """
    return f"{metric}({', '.join(entities)})" if entities else metric


@dataclass(frozen=True)
class Dimension:
    """A categorical axis of the domain; the name is fixed, the entity list extensible.

    ``parents`` links an entity that names a stage or subtype of another entity of the axis to it
    (``("metastatic breast cancer", "breast cancer")``): it stays its own entity, not an
    unrelated one.
    """

    name: str
    entities: tuple[str, ...] = ()
    description: str = ""
    parents: tuple[tuple[str, str], ...] = ()

    def parent_of(self, entity: str) -> str | None:
        """The entity ``entity`` is a stage or subtype of, if any."""
        return next((parent for child, parent in self.parents if child == entity), None)


@dataclass(frozen=True)
class Metric:
    """A fixed, typed quantity with a dimension signature and a graph role."""

    name: str
    signature: tuple[str, ...] = ()
    description: str = ""
    category: str = "general"
    role: GraphRole = "intermediate"


@dataclass(frozen=True)
class Variable:
    """A metric bound to one entity per dimension of its signature.

    ``description`` is optional free text (aliases, a defining sentence) that is embedded with the
    name so a query can match it by meaning, not only by its name.
    """

    metric: str
    entities: tuple[str, ...] = ()
    description: str = ""

    @property
    def name(self) -> str:
        return variable_name(self.metric, self.entities)


@dataclass(frozen=True)
class Relation:
    """A causal seed relation of the spec: variable names and the mechanism that links them."""

    source: str
    target: str
    mechanism: str = ""


@dataclass(frozen=True)
class OutcomeConfig:
    """The causal sinks the graph builds toward: metric names per role, given by the user."""

    outcomes: tuple[str, ...] = ()
    terminals: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class DomainSpec:
    """Definition 1: S = (A, M, V0, R0), plus the outcome configuration that anchored it."""

    dimensions: tuple[Dimension, ...]
    metrics: tuple[Metric, ...]
    variables: tuple[Variable, ...] = ()
    relations: tuple[Relation, ...] = ()
    outcome: OutcomeConfig = field(default_factory=OutcomeConfig)
    domain: str = ""
    # What Stage 1 inferred rather than was given ("domain", "outcome"): shown to the user to
    # correct (spec.yaml's ``inferred``).
    inferred: tuple[str, ...] = ()

    def metric(self, name: str) -> Metric:
        return _named(self.metrics, name)

    def dimension(self, name: str) -> Dimension:
        return _named(self.dimensions, name)


def _named(items: tuple[Any, ...], name: str) -> Any:
    """The item called ``name``; KeyError when there is none."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(name)


@dataclass(frozen=True)
class CausalEdge:
    """A directed causal edge between two variables (by name), with its evidence chunk ids."""

    id: str
    source: str
    target: str
    mechanism: str = ""
    confidence: float = 1.0
    evidence: tuple[str, ...] = ()
    effect: str = ""  # "increases" / "decreases" when the builder knows the sign, else ""
    # The text the LLM quoted for the edge, kept so that a re-linking finds the same chunks.
    quote: str = ""


@dataclass(frozen=True)
class SourceDocument:
    """A source document before chunking; ``id`` is stable (a path or a content hash)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A stored unit of the corpus (a chunk the build made, or a node the user indexed)."""

    id: str
    text: str
    doc_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Passage(Chunk):
    """A part of a stored chunk, returned only when passages are asked for (``passage_words``).

    ``parent_id`` names the stored chunk (also in ``metadata["passage_of"]``, for JSON output),
    ``index`` its place in that chunk, ``start_char``/``end_char`` its character offsets in the
    chunk's text. Its id is ``"<parent id>#p<index>"``.
    """

    parent_id: str = ""
    index: int = 0
    start_char: int = 0
    end_char: int = 0


@dataclass(frozen=True)
class CausalGraph:
    """G = (V, E, phi): the spec, its variables (V0 extended), edges, and the chunks they cite."""

    spec: DomainSpec
    variables: tuple[Variable, ...]
    edges: tuple[CausalEdge, ...]
    chunks: tuple[Chunk, ...]

    @property
    def evidence_links(self) -> int:
        return sum(len(e.evidence) for e in self.edges)

    def to_networkx(self) -> Any:
        """The graph as a ``networkx.MultiDiGraph``: one node per variable, one edge per causal edge.

        Nodes carry ``metric``, ``entities`` (tuple), ``description``, ``category`` and ``role``;
        edges are keyed by their id and carry ``id``, ``mechanism``, ``confidence``, ``effect``
        (the sign: "increases", "decreases" or "") and ``evidence`` (tuple of chunk ids). A multigraph, so two edges between the same variables
        both survive. ``hcg export`` writes GraphML and GEXF from it.
        """
        import networkx as nx  # imported here: most users of the dataclasses never need it

        metrics = {m.name: m for m in self.spec.metrics}
        g = nx.MultiDiGraph(domain=self.spec.domain)
        for v in self.variables:
            m = metrics.get(v.metric)
            g.add_node(
                v.name,
                metric=v.metric,
                entities=tuple(v.entities),
                description=v.description,
                category=m.category if m else "",
                role=m.role if m else "",
            )
        for e in self.edges:
            g.add_edge(
                e.source,
                e.target,
                key=e.id,
                id=e.id,
                mechanism=e.mechanism,
                confidence=float(e.confidence),
                effect=e.effect,
                evidence=tuple(e.evidence),
            )
        return g


@dataclass(frozen=True)
class CausalPath:
    """One causal chain that selected a chunk: variable names and the edges between them.

    ``effects``: each edge's sign as its ``CausalEdge.effect`` ("increases", "decreases", "" when
    the builder could not tell); empty when the path was made without them. ``str`` names the
    variables in causal order with each edge's sign: ``+`` increases, ``-`` decreases, ``?``
    unknown; plain ``->`` arrows when no edge of the path has a sign.

    >>> str(CausalPath(("Smoking", "Atherosclerosis", "Stroke"), ("e1", "e2"), ("", ""),
    ...                ("increases", "")))
    'Smoking -(+)-> Atherosclerosis -(?)-> Stroke'
    >>> str(CausalPath(("A", "B"), ("e1",), ("",))), str(CausalPath(("A", "B"), ("e1",), ("",), ("",)))
    ('A -> B', 'A -> B')
    """

    variables: tuple[str, ...]
    edge_ids: tuple[str, ...]
    mechanisms: tuple[str, ...]
    effects: tuple[str, ...] = ()

    def __str__(self) -> str:
        if not any(self.effects):  # no edge knows its sign (a hand-made graph): plain arrows
            return " -> ".join(self.variables)
        out = [self.variables[0]]
        for effect, var in zip(self.effects, self.variables[1:], strict=False):
            out.append(f"-({EFFECT_SIGNS.get(effect, '?')})-> {var}")
        return " ".join(out)


# The sign shown for an edge's effect on a path.
EFFECT_SIGNS = {"increases": "+", "decreases": "-"}


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk with why it came back: its score, the route, and the causal paths behind it.

    ``score`` is higher-is-better and comparable within one result; for the paper route it is the
    query-chunk cosine similarity, the order is the route's own ranking (cone rank first).
    """

    chunk: Chunk
    score: float
    route: Route
    paths: tuple[CausalPath, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def edge_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e for p in self.paths for e in p.edge_ids))

    @property
    def parent_id(self) -> str | None:
        """The stored chunk this unit is part of, when it is a finer unit (a passage); else None."""
        if isinstance(self.chunk, Passage):
            return self.chunk.parent_id
        parent = (self.chunk.metadata or {}).get("passage_of")
        return parent if isinstance(parent, str) and parent != self.chunk.id else None

    def provenance(self, served_by: str) -> dict[str, Any]:
        """Why this chunk came back, as flat JSON-ready metadata (what both adapters attach).

        Keys: ``hcg_score`` (the fused score in [0, 1]) and its parts ``hcg_score_bm25``,
        ``hcg_score_dense``, ``hcg_score_graph`` (each in [0, 1]; absent in paper mode), and
        ``hcg_score_grams`` (the character n-gram cosine, only on a unit in another language that
        it lifted for an English question),
        ``hcg_route``, ``hcg_served_by``, ``hcg_paths``, ``hcg_mechanisms``, ``hcg_edge_ids``, and
        ``hcg_parent_id`` (the stored chunk a passage is part of; None for a whole chunk), and
        ``hcg_span`` when the text is a part of the stored chunk with the same id (under a word
        budget: without sentences an earlier result returned, or a window's picked half): its
        ``[start, end)`` character offsets in the chunk's text.
        """
        mechanisms = dict.fromkeys(m for p in self.paths for m in p.mechanisms if m)
        out: dict[str, Any] = {"hcg_score": float(self.score)}
        for part in SCORE_PARTS:
            if part in self.details:
                out[f"hcg_score_{part}"] = float(self.details[part])
        out.update(
            {
                "hcg_route": self.route,
                "hcg_served_by": served_by,
                "hcg_paths": [str(p) for p in self.paths],
                "hcg_mechanisms": list(mechanisms),
                "hcg_edge_ids": list(self.edge_ids),
                "hcg_parent_id": self.parent_id,
            }
        )
        if "span" in self.details:
            out["hcg_span"] = list(self.details["span"])
        return out


# The parts of a hybrid score, each in [0, 1], kept in ``RetrievedChunk.details`` under these names.
SCORE_PARTS = ("bm25", "dense", "graph", "grams")


@dataclass(frozen=True)
class RetrievalResult:
    """What one query returned, best first, and which path of the method served it.

    ``served_by`` is one of ``"cones"`` (the paper's route), ``"bfs"`` (no outcome reached: the
    BFS subgraph's evidence), ``"vector"`` (no match or no evidence: plain vector top-k), or a
    mode-specific name such as ``"hybrid"``.
    """

    query: str
    chunks: tuple[RetrievedChunk, ...]
    matched: tuple[str, ...] = ()
    served_by: str = "cones"
    diagnostics: Mapping[str, Any] = field(default_factory=dict)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def variable_text(v: Variable) -> str:
    """What a variable's embedding is computed from: its readable name, then its description.

    Both builders and the retriever embed this text, and the store fingerprints it to detect stale
    vectors, so it lives here with the data rather than in any one of them.

    >>> variable_text(Variable("StrokeRisk", ("tobacco smoking",)))
    'Stroke Risk: tobacco smoking'
    """
    metric = _CAMEL.sub(" ", v.metric).replace("_", " ")
    readable = f"{metric}: {', '.join(v.entities)}" if v.entities else metric
    return f"{readable}. {v.description}" if v.description else readable


@dataclass(frozen=True)
class BuildResult:
    """What a build produces: the graph plus the vectors it computed, and an honest report.

    ``report`` is JSON-ready: per stage ``seconds``, counts, and LLM ``calls``, ``prompt_tokens``,
    ``completion_tokens``, ``retries``, ``failed`` (zero for the offline builder).
    """

    graph: CausalGraph
    variable_embeddings: np.ndarray | None = None
    chunk_embeddings: np.ndarray | None = None
    report: dict[str, Any] = field(default_factory=dict)
    # The offline builder's per-edge support (graph_build.incremental.SupportLedger), which
    # incremental inserts and deletes update; None from the LLM pipeline.
    ledger: Any = None
