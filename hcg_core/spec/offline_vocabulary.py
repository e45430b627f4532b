"""Stage 1 without an LLM: the fixed metric vocabulary induced from the corpus's causal statements.

The LLM Stage 1 (``spec.generate``) asks a model for metrics and dimensions; this module derives
them from the spans of cue-backed statements (``graph_build.extract``). Each span is split into a
head (the measure) and an entity (the modifier); frequent heads become metrics, capped by the tier,
and a span with a rarer head joins the closest metric only when its embedding is close enough.
With a given spec, spans are mapped onto its variables and metrics instead. The result assigns each
span text a ``NodeKey`` (metric and entity), which the support step turns into variables. The
dimensions (entity clusters) are ``graph_build.dimensions``. See docs/offline-builder.md, steps 3-4.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..embedding import as_matrix
from ..graph_build.extract import STRONG_CUE, Statement, head_of
from ..ports import Embedder
from ..types import DomainSpec, Metric, variable_text


class NodeKey(NamedTuple):
    """A variable of the offline graph before it is named: a metric index and an entity.

    ``entity`` is "" for the metric's generic variable; otherwise its words (after
    ``entity_key``, sorted content words). ``existing`` holds the entities of a variable a given
    spec already has (its entity words are then not re-normalised).

    A named tuple, not a dataclass: the builder hashes and compares node keys a few dozen times
    per statement, and a tuple does both in C (a dataclass's ``__hash__``/``__eq__`` are Python).

    >>> NodeKey(0).is_generic, NodeKey(0, "lung").is_generic, NodeKey(0, existing=("x",)).is_generic
    (True, False, False)
    >>> sorted([NodeKey(1, "b"), NodeKey(1, existing=("z",)), NodeKey(1), NodeKey(0, "a")],
    ...        key=NodeKey.sort_key)
    [NodeKey(metric=0, entity='a', existing=None), NodeKey(metric=1, entity='', existing=None), NodeKey(metric=1, entity='', existing=('z',)), NodeKey(metric=1, entity='b', existing=None)]
    """

    metric: int
    entity: str = ""
    existing: tuple[str, ...] | None = None

    @property
    def is_generic(self) -> bool:
        return not self.entity and self.existing is None

    @property
    def is_existing(self) -> bool:
        return self.existing is not None

    def generic(self) -> NodeKey:
        """The metric's generic variable."""
        return NodeKey(self.metric)

    def normalised(self) -> NodeKey:
        """The key paraphrases share: the entity's content words in sorted order."""
        return self if self.existing is not None else NodeKey(self.metric, entity_key(self.entity))

    def order(self) -> tuple:
        """Within one metric: the generic variable, then a given spec's variables, then entities."""
        if self.existing is not None:
            return (1, self.existing)
        return (2, self.entity) if self.entity else (0, "")

    def sort_key(self) -> tuple:
        return (self.metric, *self.order())


def entity_key(entity: str) -> str:
    """Paraphrase merge: the same content words in any order name the same entity.

    >>> entity_key("skin cell basal cell")
    'basal cell skin'
    """
    return " ".join(sorted(set(entity.split())))


def metric_name(head: str) -> str:
    """Readable metric name from a head key: "blood pressure" -> "Blood_Pressure".

    >>> metric_name("blood pressure"), metric_name("t-cell")
    ('Blood_Pressure', 'T_Cell')
    """
    words = re.findall(r"[a-z0-9]+", head.lower())
    return "_".join(w.capitalize() for w in words) or "Quantity"


def unique_names(heads: Sequence[str]) -> list[str]:
    """Metric names for heads, numbered when two heads give the same name.

    >>> unique_names(["t cell", "t-cell", "risk"])
    ['T_Cell', 'T_Cell_2', 'Risk']
    """
    seen: Counter = Counter()
    out = []
    for h in heads:
        n = metric_name(h)
        seen[n] += 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


def span_texts(statements: Sequence[Statement]) -> list[str]:
    """Distinct cause and effect span texts, in first-seen order (the rows of the span matrix)."""
    return list(
        dict.fromkeys(text for st in statements for text in (st.cause.text, st.effect.text))
    )


def cos_argmax(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``a`` the best row of ``b`` by cosine (rows already L2-normalised).

    >>> best, sim = cos_argmax(np.eye(2, dtype=np.float32), np.array([[0, 1.0]], np.float32))
    >>> best.tolist(), sim.tolist()
    ([0, 0], [0.0, 1.0])
    """
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros(a.shape[0], dtype=np.int64), np.full(a.shape[0], -1.0, dtype=np.float32)
    sims = a @ b.T
    best = np.argmax(sims, axis=1)
    return best, sims[np.arange(a.shape[0]), best]


@dataclass
class Vocabulary:
    """Metric heads and, per span text, the node it maps to (None: dropped).

    The ``NodeKey`` entities in ``assign`` are as written; ``NodeKey.normalised`` merges
    paraphrases. ``given``: the given spec's metrics (metric index -> Metric), None when generated.
    """

    heads: list[str]
    assign: dict[str, NodeKey | None]
    dropped: int = 0
    given: list[Metric] | None = None

    def metric_names(self) -> list[str]:
        return [m.name for m in self.given] if self.given is not None else unique_names(self.heads)


def generate_vocabulary(
    statements: Sequence[Statement],
    span_vec: np.ndarray,
    row: dict[str, int],
    max_metrics: int,
    min_support: int,
    merge_threshold: float,
    compounds: frozenset[str] = frozenset(),
) -> Vocabulary:
    """Heads by support become metrics; spans with a rarer head join the closest metric.

    ``span_vec[row[text]]`` is the embedding of a span text. A head seeds a metric with
    ``min_support`` statements, or with one statement whose cue is strong; at most
    ``max_metrics`` heads are kept, most supported first. A span with another head joins the
    metric whose centroid is closest when the cosine is at least ``merge_threshold``, keeping its
    own head in the entity; otherwise it is dropped.
    """
    parts: dict[str, tuple[str, str]] = {}  # span text -> (head, entity), in first-seen order
    head_count: Counter = Counter()
    head_best: dict[str, float] = defaultdict(float)
    for st in statements:
        for sp in (st.cause, st.effect):
            head = parts.setdefault(sp.text, head_of(sp, compounds))[0]
            head_count[head] += 1
            head_best[head] = max(head_best[head], st.strength)
    ranked = sorted(head_count, key=lambda h: (-head_count[h], -head_best[h], h))
    # A head seeds a metric with enough statements, or with one that uses a strong cue
    # ("causes", "leads to"); a single weak mention ("affects") does not.
    seeds = [h for h in ranked if head_count[h] >= min_support or head_best[h] >= STRONG_CUE]
    heads = seeds[:max_metrics] or ranked[:1]
    head_index = {h: i for i, h in enumerate(heads)}
    # A metric's centroid: the mean vector of the spans that carry its head.
    centroids = np.zeros((len(heads), span_vec.shape[1]), dtype=np.float32)
    assign: dict[str, NodeKey | None] = {}
    for text, (head, entity) in parts.items():
        if head in head_index:
            centroids[head_index[head]] += span_vec[row[text]]
            assign[text] = NodeKey(head_index[head], entity)
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    centroids /= norms
    rare = [t for t in parts if parts[t][0] not in head_index]
    best, sim = cos_argmax(span_vec[[row[t] for t in rare]], centroids) if rare else ([], [])
    for t, b, s in zip(rare, best, sim, strict=True):
        # The head is not the metric's own, so it stays in the entity: "carcinoma" under Cancer.
        entity = " ".join(x for x in parts[t][::-1] if x)
        assign[t] = NodeKey(int(b), entity) if s >= merge_threshold else None
    dropped = sum(key is None for key in assign.values())
    return Vocabulary(heads=heads, assign=assign, dropped=dropped)


def map_onto_spec(
    spec: DomainSpec,
    statements: Sequence[Statement],
    span_vec: np.ndarray,
    row: dict[str, int],
    embedder: Embedder,
    span_threshold: float,
    metric_threshold: float,
) -> Vocabulary:
    """Given spec: each span becomes an existing variable, or a new one of the closest metric.

    A span whose cosine to a spec variable's text is at least ``span_threshold`` is that
    variable; else one whose cosine to a metric's name and description is at least
    ``metric_threshold`` becomes a new entity of that metric (only metrics with at most one
    dimension take new entities); else it is dropped.
    """
    metrics = list(spec.metrics)
    m_index = {m.name: i for i, m in enumerate(metrics)}
    vtexts = [variable_text(v) for v in spec.variables]

    def embed(texts: list[str]) -> np.ndarray:
        return as_matrix(embedder.embed_documents(texts), len(texts), who=embedder.name)

    vvec = embed(vtexts) if vtexts else np.zeros((0, span_vec.shape[1]), dtype=np.float32)
    mvec = embed([f"{m.name.replace('_', ' ')}. {m.description}" for m in metrics])
    texts = list(row)
    vb, vs = cos_argmax(span_vec, vvec)
    mb, ms = cos_argmax(span_vec, mvec)
    assign: dict[str, NodeKey | None] = {}
    dropped = 0
    spans = {st.cause.text: st.cause for st in statements} | {
        st.effect.text: st.effect for st in statements
    }
    for i, t in enumerate(texts):
        if vtexts and vs[i] >= span_threshold:
            v = spec.variables[int(vb[i])]
            assign[t] = NodeKey(m_index[v.metric], existing=tuple(v.entities))
        elif ms[i] >= metric_threshold and len(metrics[int(mb[i])].signature) <= 1:
            sp = spans[t]
            ent = sp.text if metrics[int(mb[i])].signature else ""
            assign[t] = NodeKey(int(mb[i]), ent if ent != sp.head else "")
        else:
            assign[t] = None
            dropped += 1
    return Vocabulary(
        heads=[m.name for m in metrics], assign=assign, dropped=dropped, given=metrics
    )


def describe_metric(
    m: Metric, names: Sequence[str], drivers: Counter, drives: Counter, spans: Counter
) -> Metric:
    """A generated metric's description: how the text writes it, what drives it, what it drives.

    ``drivers``/``drives``: metric index -> statements, into and out of ``m``;
    ``spans``: the metric's span texts by frequency.

    >>> describe_metric(Metric("Stroke"), ["Pressure", "Stroke"], Counter({0: 3}), Counter(),
    ...                 Counter({"stroke": 2})).description
    'Stroke as the text states it, e.g. stroke. Driven by: Pressure.'
    """
    examples = "; ".join(a for a, _ in spans.most_common(4))
    parts = [f"{m.name.replace('_', ' ')} as the text states it, e.g. {examples}."]
    for label, counts in (("Driven by", drivers), ("Influences", drives)):
        if counts:
            parts.append(f"{label}: " + ", ".join(names[j] for j, _ in counts.most_common(4)) + ".")
    return Metric(m.name, m.signature, " ".join(parts), m.category, m.role)
