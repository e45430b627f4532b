"""Offline builder, step 3: which variables exist, the sentences behind each link, and metric roles.

From the vocabulary's span assignments (``spec.offline_vocabulary``) this step chooses the
variables (well-supported entities stay their own variable, the rest collapse onto the metric's
generic one), gathers each link's supporting sentences with their cue strengths, adds the
lifted support a statement gives its ancestors (``lift``), drops variables only one weak sentence
states (``drop_weak``), and assigns each metric its graph role (docs/offline-builder.md, steps
5-7). Nodes are ``NodeKey``s; a link is a (source, target) pair of them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..spec.offline_vocabulary import NodeKey, Vocabulary
from ..types import Metric, OutcomeConfig
from .extract import STRONG_CUE, Statement

DEFAULT_TERMINAL_SHARE = 0.05  # at most this share of metrics become terminals (project)
DEFAULT_OUTCOME_IN_SHARE = 0.7  # a metric mostly on the effect side is an outcome (project)

Link = tuple[NodeKey, NodeKey]
T = TypeVar("T")  # a node: a NodeKey in the build, a (metric, entity) pair in the ledger
# Per link, the supporting sentence ids with the strongest cue strength each gives it.
Support = dict[Link, dict[int, float]]


@dataclass
class Nodes:
    """Variable candidates: statements and span texts per key, and the node each key becomes."""

    support: Counter  # NodeKey -> statements naming it
    aliases: dict[NodeKey, Counter]  # NodeKey -> span text -> count
    keep: dict[NodeKey, NodeKey]  # candidate -> the node it becomes (itself or the generic one)

    def node_aliases(self) -> dict[NodeKey, Counter]:
        """Per kept node, the span texts of every candidate that became it (built once: O(K))."""
        out: dict[NodeKey, Counter] = defaultdict(Counter)
        for key, target in self.keep.items():
            out[target].update(self.aliases[key])
        return out

    def metric_aliases(self) -> dict[int, Counter]:
        """Per metric index, the span texts of all its candidates."""
        out: dict[int, Counter] = defaultdict(Counter)
        for key, cnt in self.aliases.items():
            out[key.metric].update(cnt)
        return out


def choose_nodes(
    statements: Sequence[Statement], vocab: Vocabulary, min_support: int, max_per_metric: int
) -> Nodes:
    """Entities with ``min_support`` statements, the ``max_per_metric`` best per metric, stay.

    A given spec's existing variables always stay; other entities collapse onto the metric's
    generic variable.
    """
    support: Counter = Counter()
    aliases: dict[NodeKey, Counter] = defaultdict(Counter)
    for st in statements:
        for sp in (st.cause, st.effect):
            a = vocab.assign.get(sp.text)
            if a is None:
                continue
            key = a.normalised()
            support[key] += 1
            aliases[key][sp.text] += 1
    keep: dict[NodeKey, NodeKey] = {}
    kept: Counter = Counter()  # per metric, entities kept on their support
    for key in sorted(support, key=lambda k: (k.metric, -support[k], k.order())):
        if not key.is_generic and (
            key.is_existing or (support[key] >= min_support and kept[key.metric] < max_per_metric)
        ):
            keep[key] = key
            kept[key.metric] += not key.is_existing
        else:
            keep[key] = key.generic()
    return Nodes(support, aliases, keep)


def ancestors(nodes: Nodes) -> dict[NodeKey, list[NodeKey]]:
    """The entity hierarchy of each metric: the nodes a statement about a node also supports.

    The generic variable is every entity's root; a kept entity whose words are a proper subset of
    another's is its ancestor ("skin" of "basal cell skin"). A given spec's variables have none.
    """
    targets = sorted(set(nodes.keep.values()), key=NodeKey.sort_key)
    kept_by_metric: dict[int, list[frozenset[str]]] = defaultdict(list)
    for node in targets:
        if node.entity and not node.is_existing:
            kept_by_metric[node.metric].append(frozenset(node.entity.split()))
    out: dict[NodeKey, list[NodeKey]] = {}
    for node in targets:
        up = [node.generic()] if not node.is_generic else []
        if node.entity and not node.is_existing:
            words = frozenset(node.entity.split())
            up += [
                NodeKey(node.metric, " ".join(sorted(w)))
                for w in kept_by_metric[node.metric]
                if w < words
            ]
        out[node] = up
    return out


def link_support(
    statements: Sequence[Statement],
    vocab: Vocabulary,
    nodes: Nodes,
    *,
    lift: bool,
    lift_discount: float,
) -> tuple[Support, Counter, Counter]:
    """Each statement supports its link (and with ``lift`` its ancestors' links, discounted).

    Returns ``(support, direct_in, direct_out)``: per link the supporting sentences and the
    strongest strength each gives; per metric the statements into and out of it that join two
    metrics (the role evidence). Self-loops are skipped.
    """
    up = ancestors(nodes) if lift else {}
    support: Support = defaultdict(dict)
    direct_in: Counter = Counter()
    direct_out: Counter = Counter()
    for st in statements:
        ca, ea = vocab.assign.get(st.cause.text), vocab.assign.get(st.effect.text)
        if ca is None or ea is None:
            continue
        src = nodes.keep[ca.normalised()]
        tgt = nodes.keep[ea.normalised()]
        ups = (up[src], up[tgt]) if lift else ((), ())
        pairs = statement_links(src, tgt, st.strength, *ups, lift_discount)
        if src.metric != tgt.metric:
            direct_out[src.metric] += 1
            direct_in[tgt.metric] += 1
        for s, t, w in pairs:
            if s != t:
                prev = support[(s, t)].get(st.sentence, 0.0)
                support[(s, t)][st.sentence] = max(prev, w)
    return support, direct_in, direct_out


def statement_links(
    src: T, tgt: T, strength: float, src_up: Sequence[T], tgt_up: Sequence[T], discount: float
) -> list[tuple[T, T, float]]:
    """The links one statement supports, with their weights: its own at ``strength``, and each
    pair of the endpoints or their ancestors (``src_up``, ``tgt_up``: empty without lifting) at
    ``strength * discount``. The build and an incremental insert both read statements so.

    >>> statement_links("a", "b", 0.8, ["A"], [], 0.5)
    [('a', 'b', 0.8), ('A', 'b', 0.4)]
    """
    lifted = strength * discount
    pairs = [(src, tgt, strength)]
    pairs += [
        (a, b, lifted) for a in (src, *src_up) for b in (tgt, *tgt_up) if (a, b) != (src, tgt)
    ]
    return pairs


def drop_weak_nodes(support: Support) -> int:
    """Drop (in place) the links of nodes stated by one sentence whose cue is weak.

    Such a variable ("X affects Y", once) is more likely a mis-parsed span than a quantity of the
    domain. Returns how many nodes were dropped.
    """
    node_sents: dict[NodeKey, dict[int, float]] = defaultdict(dict)
    for (s, t), sents in support.items():
        for node in (s, t):
            for i, w in sents.items():
                node_sents[node][i] = max(node_sents[node].get(i, 0.0), w)
    weak = {
        n for n, sents in node_sents.items() if len(sents) == 1 and max(sents.values()) < STRONG_CUE
    }
    _drop(support, lambda s, t: s in weak or t in weak)
    return len(weak)


def drop_nodes(support: Support, nodes: set[NodeKey]) -> int:
    """Drop (in place) the links into or out of ``nodes``; returns how many of them had a link."""
    gone = _drop(support, lambda s, t: s in nodes or t in nodes)
    return len({n for k in gone for n in k if n in nodes})


def drop_leaving(support: Support, metrics: set[int]) -> int:
    """Drop (in place) the links whose source belongs to one of ``metrics`` (terminals)."""
    return len(_drop(support, lambda s, t: s.metric in metrics))


def _drop(support: Support, gone: Callable[[NodeKey, NodeKey], bool]) -> list[Link]:
    """Drop (in place) the links ``gone(source, target)`` holds; return them."""
    links = [k for k in support if gone(*k)]
    for key in links:
        del support[key]
    return links


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def roles(
    n: int,
    names: list[str],
    din: Counter,
    dout: Counter,
    outcome: OutcomeConfig | None,
    given: list[Metric] | None,
    warnings: list[str],
) -> list[str]:
    """Graph roles: a given spec's roles, else sinks -> terminal, mostly-effects -> outcome.

    Terminals: metrics with at least 2 incoming and no outgoing statements, at most
    ``DEFAULT_TERMINAL_SHARE`` of the metrics (most received first); outcomes: at least 3 incoming
    and ``DEFAULT_OUTCOME_IN_SHARE`` of their statements incoming; at least one outcome. An
    ``OutcomeConfig`` wins (names matched ignoring case and separators; unknown names are warned).

    >>> roles(3, ["A", "B", "C"], Counter({1: 3, 2: 2}), Counter({0: 4, 1: 1}), None, None, [])
    ['intermediate', 'outcome', 'terminal']
    """
    if given is not None:
        out = [m.role for m in given]
    else:
        out = ["intermediate"] * n
        sinks = sorted(
            (i for i in range(n) if din[i] >= 2 and dout[i] == 0), key=lambda i: (-din[i], i)
        )
        for i in sinks[: max(1, round(DEFAULT_TERMINAL_SHARE * n))]:
            out[i] = "terminal"
        for i in range(n):
            share = din[i] / max(1, din[i] + dout[i])
            if out[i] == "intermediate" and din[i] >= 3 and share >= DEFAULT_OUTCOME_IN_SHARE:
                out[i] = "outcome"
        if "outcome" not in out and n:
            best = max(range(n), key=lambda i: (din[i] - dout[i], -i))
            if out[best] == "intermediate":
                out[best] = "outcome"
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
                    out[i] = role
    return out


def metric_flows(support: Support) -> tuple[dict[int, Counter], dict[int, Counter]]:
    """Per metric, the supporting sentences from each other metric (drivers) and to it (drives)."""
    drivers: dict[int, Counter] = defaultdict(Counter)
    drives: dict[int, Counter] = defaultdict(Counter)
    for (s, t), sents in support.items():
        if s.metric != t.metric:
            drives[s.metric][t.metric] += len(sents)
            drivers[t.metric][s.metric] += len(sents)
    return drivers, drives
