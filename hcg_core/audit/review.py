"""What a reviewer should look at first, computed from a causal graph (pure functions, no I/O).

Review flags (edges without evidence, low confidence, cycles, variables with no edges, metrics
with no variables, parallel edges of opposite signs), the metric-level overview (Tier-1-style templates: metric -> metric with the
number of variable edges behind each), and the sentence of an evidence chunk that best supports
an edge (the audit page highlights it).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from typing import Any

from ..graph_build.extract import text_units
from ..types import CausalEdge, CausalGraph

DEFAULT_LOW_CONFIDENCE = 0.5  # edges below this confidence are flagged for review
MAX_CYCLES_LISTED = 50  # cycles listed by example (strongly connected parts are all counted)

_WORD = re.compile(r"[a-z0-9]+")
# Words too common to say which sentence supports an edge.
_STOP_WORDS = (
    "the a an and or of to in on for with by is are was were be been it its this that these those "
    "as at from which who whom can may more most less than into their there they not but also has "
    "have had do does did so such"
)
_STOP = frozenset(_STOP_WORDS.split())


def _words(text: str) -> set[str]:
    # A 5-letter prefix is a cheap stem: "inflamed" and "inflammation" meet at "infla".
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    r"""Character spans of the sentences of ``text`` (list items and table rows included, headings
    not: the units the offline builder reads, ``graph_build.extract.split_sentences``).

    >>> sentence_spans("## Title\nOne. Two three!")
    [(9, 13), (14, 24)]
    """
    return [(u.start, u.end) for u in text_units(text) if u.kind != "heading"]


def supporting_sentence(text: str, edge: CausalEdge) -> tuple[int, int] | None:
    """The span of the sentence of ``text`` sharing most words with the edge, or None if none do.

    The edge's words are its mechanism's and its two variables' names, so a sentence that names
    both ends of the edge wins even when the mechanism was paraphrased.

    >>> e = CausalEdge("e", "Salt", "BloodPressure", "Salt raises blood pressure.")
    >>> t = "Water is good. A salty diet raises blood pressure."
    >>> s = supporting_sentence(t, e); t[s[0]:s[1]]
    'A salty diet raises blood pressure.'
    """
    key = _words(f"{edge.mechanism} {_split_camel(edge.source)} {_split_camel(edge.target)}")
    best, best_score = None, 0
    for span in sentence_spans(text):
        score = len(key & _words(text[span[0] : span[1]]))
        if score > best_score:
            best, best_score = span, score
    return best


def _split_camel(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)


def metric_overview(graph: CausalGraph) -> list[dict[str, Any]]:
    """Metric -> metric links with the number of variable edges behind each, most first.

    >>> from hcg_core.types import DomainSpec, Metric, Variable
    >>> spec = DomainSpec((), (Metric("A"), Metric("B")))
    >>> g = CausalGraph(spec, (Variable("A"), Variable("B")), (CausalEdge("e", "A", "B"),), ())
    >>> metric_overview(g)
    [{'source': 'A', 'target': 'B', 'edges': 1}]
    """
    metric_of = {v.name: v.metric for v in graph.variables}
    counts = Counter((metric_of[e.source], metric_of[e.target]) for e in graph.edges)
    return [
        {"source": s, "target": t, "edges": n}
        for (s, t), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _cycle_in(component: set[int], adjacency: list[list[int]]) -> list[int]:
    """One directed cycle through the component's smallest node (BFS back to it)."""
    start = min(component)
    prev = {start: -1}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for w in adjacency[u]:
            if w == start:
                path = [u]
                while prev[path[-1]] != -1:
                    path.append(prev[path[-1]])
                return path[::-1]
            if w in component and w not in prev:
                prev[w] = u
                queue.append(w)
    return [start]


def review_flags(
    graph: CausalGraph, *, low_confidence: float = DEFAULT_LOW_CONFIDENCE
) -> dict[str, Any]:
    """What to review first, as indices into ``graph.variables`` / ``graph.edges`` (JSON-ready).

    Keys: ``no_evidence`` and ``low_confidence`` (edge indices), ``cycle_edges`` (edges whose two
    ends lie on a common directed cycle), ``cycles`` (one example cycle of variable indices per
    strongly connected part, at most MAX_CYCLES_LISTED), ``isolated`` (variables with no edges),
    ``empty_metrics`` (metric names with no variable), ``opposite_signs`` (edges that join the
    same two variables as another edge of the opposite effect, as a merge leaves them).
    """
    import networkx as nx  # here: `hcg` imports this module for its defaults on every command

    index = {v.name: i for i, v in enumerate(graph.variables)}
    n = len(index)
    adjacency: list[list[int]] = [[] for _ in range(n)]
    for e in graph.edges:
        adjacency[index[e.source]].append(index[e.target])
    touched = {index[name] for e in graph.edges for name in (e.source, e.target)}
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(n))
    digraph.add_edges_from((a, b) for a in range(n) for b in adjacency[a])
    # networkx's components come in the order of Tarjan's (roots 0..n-1, edges as added).
    parts = [c for c in nx.strongly_connected_components(digraph) if len(c) > 1]
    part_of = {v: i for i, c in enumerate(parts) for v in c}
    cycle_edges = [
        i
        for i, e in enumerate(graph.edges)
        if index[e.source] in part_of and part_of[index[e.source]] == part_of.get(index[e.target])
    ]
    used_metrics = {v.metric for v in graph.variables}
    signs: dict[tuple[str, str], set[str]] = {}
    for e in graph.edges:
        signs.setdefault((e.source, e.target), set()).add(e.effect)
    opposite = [
        i
        for i, e in enumerate(graph.edges)
        if {"increases", "decreases"} <= signs[(e.source, e.target)]
    ]
    return {
        "low_confidence_threshold": low_confidence,
        "no_evidence": [i for i, e in enumerate(graph.edges) if not e.evidence],
        "low_confidence": [i for i, e in enumerate(graph.edges) if e.confidence < low_confidence],
        "cycle_edges": cycle_edges,
        "cycles": [_cycle_in(c, adjacency) for c in parts[:MAX_CYCLES_LISTED]],
        "cyclic_parts": len(parts),
        "isolated": [i for i in range(n) if i not in touched],
        "empty_metrics": [m.name for m in graph.spec.metrics if m.name not in used_metrics],
        "opposite_signs": opposite,
    }
