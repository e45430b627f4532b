"""Offline builder, step 4: dimensions, metric signatures and each variable's entity names.

Without a spec, the metrics that have entity variables are clustered by the embedding of their
entity lists (deterministic spherical k-means, at most the tier's ``max_dimensions`` groups); each
group becomes a dimension named by its entities' most common last word, and the signature of each
of its metrics. With a given spec, its dimensions are kept and new entities are appended to them
(docs/offline-builder.md, step 8).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..embedding import as_matrix
from ..ports import Embedder
from ..spec.offline_vocabulary import NodeKey, Vocabulary
from ..types import Dimension, DomainSpec
from .extract import singular

GENERIC_ENTITY = "general"  # the entity of a metric's generic variable when it has a signature


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
    for it in range(iters):
        new = np.argmax(x @ centres.T, axis=1)
        if np.array_equal(new, labels) and it > 0:
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
    order = {lab: n for n, lab in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[lab] for lab in labels.tolist()], dtype=np.int64)


def display_entity(node: NodeKey, aliases: Counter) -> str:
    """The entity as people wrote it: the most frequent alias, minus the metric's own head.

    Entity keys are sorted word sets; this shows the words in their written order instead.

    >>> display_entity(NodeKey(0, "basal cell skin"), Counter({"basal cell skin cancer": 2}))
    'basal cell skin'
    """
    key_words = set(node.entity.split())
    for alias, _ in sorted(aliases.items(), key=lambda kv: (-kv[1], kv[0])):
        words = [w for w in alias.split() if w != "of"]
        ordered = [singular(w) for w in words if singular(w) in key_words]
        if set(ordered) == key_words:
            return " ".join(dict.fromkeys(ordered))
    return node.entity


def _given_dimensions(
    used: Sequence[NodeKey],
    node_aliases: dict[NodeKey, Counter],
    vocab: Vocabulary,
    spec: DomainSpec,
) -> tuple[list[Dimension], dict[NodeKey, tuple[str, ...]]]:
    """A given spec's dimensions, with the entities of new variables appended."""
    entity_names: dict[NodeKey, tuple[str, ...]] = {}
    dims = {d.name: list(d.entities) for d in spec.dimensions}
    for node in used:
        m = vocab.given[node.metric]
        if node.existing is not None:
            entity_names[node] = node.existing if m.signature else ()
        elif m.signature:
            ent = display_entity(node, node_aliases[node]) if node.entity else GENERIC_ENTITY
            if ent not in dims[m.signature[0]]:
                dims[m.signature[0]].append(ent)
            entity_names[node] = (ent,)
        else:
            entity_names[node] = ()
    out = [Dimension(d.name, tuple(dims[d.name]), d.description) for d in spec.dimensions]
    return out, entity_names


def dimensions(
    used: Sequence[NodeKey],
    node_aliases: dict[NodeKey, Counter],
    node_support: Counter,
    vocab: Vocabulary,
    spec: DomainSpec | None,
    max_dimensions: int,
    embedder: Embedder,
) -> tuple[list[Dimension], dict[int, tuple[str, ...]], dict[NodeKey, tuple[str, ...]]]:
    """Dimensions, metric signatures (metric index -> dimension names) and each node's entities.

    ``used``: the nodes that become variables, sorted; ``node_aliases``: their span texts.
    """
    if spec is not None:
        dims, entity_names = _given_dimensions(used, node_aliases, vocab, spec)
        return dims, {}, entity_names
    by_metric: dict[int, list[NodeKey]] = {}
    for n in used:
        by_metric.setdefault(n.metric, []).append(n)
    with_entities = sorted({n.metric for n in used if not n.is_generic})
    display = {n: display_entity(n, node_aliases[n]) for n in used if not n.is_generic}
    signature: dict[int, tuple[str, ...]] = {}
    dims: list[Dimension] = []
    if with_entities:
        ents_by_metric = {
            m: [display[n] for n in by_metric[m] if not n.is_generic] for m in with_entities
        }
        texts = [", ".join(ents_by_metric[m]) for m in with_entities]
        vec = as_matrix(embedder.embed_documents(texts), len(texts), who=embedder.name)
        weight = np.array(
            [sum(node_support.get(n, 1) for n in by_metric[m]) for m in with_entities],
            dtype=np.float64,
        )
        labels = spherical_kmeans(vec, weight, max_dimensions)
        names_seen: Counter = Counter()
        for lab in sorted(set(labels.tolist())):
            members = [m for m, lb in zip(with_entities, labels.tolist(), strict=True) if lb == lab]
            words = Counter(e.split()[-1] for m in members for e in ents_by_metric[m])
            base = re.sub(r"[^a-z0-9]+", "_", min(words, key=lambda w: (-words[w], w))) or "entity"
            names_seen[base] += 1
            name = base if names_seen[base] == 1 else f"{base}_{names_seen[base]}"
            signature.update(dict.fromkeys(members, (name,)))
            ents: dict[str, None] = {}
            for m in members:
                generic = [GENERIC_ENTITY] if any(n.is_generic for n in by_metric[m]) else []
                ents.update(dict.fromkeys(ents_by_metric[m] + generic))
            examples = ", ".join(list(ents)[:5])
            about = f"entities that qualify {len(members)} metrics, e.g. {examples}"
            dims.append(Dimension(name, tuple(ents), about))
    # A generic variable's entity is GENERIC_ENTITY when its metric has a signature.
    entity_names = {
        n: (display.get(n, GENERIC_ENTITY),) if n.metric in signature else () for n in used
    }
    return dims, signature, entity_names
