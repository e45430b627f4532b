"""Find what a correction is about in a graph that may have been rebuilt since (pure functions).

A rebuild can reword a variable's entities (``Cache(empty)`` becomes ``Cache(empty cache)``), and
an edge's id is derived from its two variable names, so ids and names of one build do not name
the same things in the next. A correction is therefore matched by its subject, in this order:

* a variable: its exact name; else the same metric with the same *normalised* entity words
  (lower case, crude singular, the metric's own words and filler words left out); else the one
  variable of that metric whose entity words overlap it best (at least half of the words of
  both, Jaccard >= ``FUZZY_ENTITY_MATCH``) and strictly better than any other;
* an edge: its id (looked up first, by the caller); else the edge between the two matched
  variables (when both are there and no edge joins them, the edge is gone); else, when an end
  is gone (a rebuild folded it into another variable of its metric), the one edge that keeps
  the end still there, has an end of the lost one's metric, and whose mechanism or best
  supporting sentence of an evidence chunk is the correction's ``sentence`` (the evidence
  sentence the page records).

Each match says how it was made, so the report can show what was taken for what.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..types import CausalEdge, CausalGraph, Variable
from .review import supporting_sentence

# Two entity word sets this similar (|A & B| / |A | B|) name the same thing after a rewording.
FUZZY_ENTITY_MATCH = 0.5
_FILLER_WORDS = "a an the of and or in on for to with by from general"
_FILLER = frozenset(_FILLER_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"^(?P<metric>[^()]+?)(?:\((?P<entities>.*)\))?$")


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _words(text: str) -> frozenset[str]:
    return frozenset(_singular(w) for w in _WORD.findall(text.lower()))


def _metric_words(metric: str) -> frozenset[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", metric).replace("_", " ")
    return _words(spaced)


def split_name(name: str) -> tuple[str, str]:
    """A variable name's metric and entity text: ``Metric(a, b)`` -> ``("Metric", "a, b")``.

    >>> split_name("Cache(empty cache)"), split_name("Blood_Pressure")
    (('Cache', 'empty cache'), ('Blood_Pressure', ''))
    """
    m = _NAME.match(name.strip())
    if m is None:
        return name.strip(), ""
    return m["metric"].strip(), (m["entities"] or "").strip()


def subject_key(name: str) -> tuple[str, frozenset[str]]:
    """What a variable name is about: its metric and its normalised entity words.

    >>> subject_key("Cache(empty)") == subject_key("Cache(empty cache)")
    True
    >>> sorted(subject_key("Wound(unnoticed wounds)")[1])
    ['unnoticed']
    """
    metric, entities = split_name(name)
    return metric, _words(entities) - _metric_words(metric) - _FILLER


@dataclass(frozen=True)
class Match:
    """A subject found in the graph: its name (variable) or index (edge), and how it was found."""

    name: str  # the variable's name, or an edge's "source -> target"
    how: str  # "name", "entities", "fuzzy entities", "variables", "evidence sentence"
    index: int = -1  # an edge's index in the edges searched

    def note(self, asked: str) -> str:
        """``" (matched Cache(empty) as Cache(empty cache) by entities)"``, or nothing if exact."""
        if self.how == "name" or asked == self.name:
            return ""
        return f" (matched {asked} as {self.name} by {self.how})"


def match_variable(name: str, names: Iterable[str]) -> Match | None:
    """The variable of ``names`` that ``name`` is about (see the module), or None.

    >>> match_variable("Cache(empty)", ["Cache(empty cache)", "Cache(full)"]).how
    'entities'
    >>> match_variable("Cache(empty, stale)", ["Cache(stale)", "Cache(full)"]).name
    'Cache(stale)'
    >>> match_variable("Cache(hot)", ["Cache(stale)", "Cache(full)"]) is None
    True
    """
    names = list(names)
    if name in names:
        return Match(name, "name")
    metric, words = subject_key(name)
    same_metric = [n for n in names if split_name(n)[0] == metric]
    keyed = [n for n in same_metric if subject_key(n)[1] == words]
    if len(keyed) == 1:
        return Match(keyed[0], "entities")
    if keyed or not words:
        return None  # ambiguous, or nothing to compare but the metric
    others = [(subject_key(n)[1], n) for n in same_metric]
    scored = sorted(((len(words & o) / len(words | o), n) for o, n in others if o), reverse=True)
    best_alone = len(scored) == 1 or (len(scored) > 1 and scored[1][0] < scored[0][0])
    if scored and scored[0][0] >= FUZZY_ENTITY_MATCH and best_alone:
        return Match(scored[0][1], "fuzzy entities")
    return None


class EdgeFinder:
    """Finds the edge a correction entry is about in one state of a graph (see the module).

    ``graph`` gives the chunk texts for evidence sentences; ``edges`` and ``variables`` are the
    current state (they change as corrections apply). The supporting sentences of every edge are
    computed once, and only when an entry has to be matched by its sentence.
    """

    def __init__(self, graph: CausalGraph) -> None:
        self._chunks = {c.id: c.text for c in graph.chunks}
        self._sentences: dict[tuple, frozenset[str]] = {}

    def sentences_of(self, edge: CausalEdge) -> frozenset[str]:
        """The edge's mechanism and the best supporting sentence of each evidence chunk."""
        # Everything the sentences depend on: a merge pools evidence into an edge of one id.
        key = (edge.source, edge.target, edge.mechanism, edge.evidence)
        found = self._sentences.get(key)
        if found is None:
            out = {_squash(edge.mechanism)} if edge.mechanism else set()
            for cid in edge.evidence:
                text = self._chunks.get(cid)
                span = supporting_sentence(text, edge) if text else None
                if span:
                    out.add(_squash(text[span[0] : span[1]]))
            found = self._sentences[key] = frozenset(out)
        return found

    def find(
        self,
        entry: dict,
        edges: Sequence[CausalEdge],
        variables: Sequence[Variable],
        *,
        by_sentence: bool = True,
    ) -> Match | None:
        """The edge of ``edges`` that ``entry`` is about by its ``source`` and ``target`` names
        (then, with ``by_sentence``, by its ``sentence``), or None. An id is looked up by the
        caller first."""
        source, target = entry.get("source"), entry.get("target")
        if not isinstance(source, str) or not isinstance(target, str):
            return None
        names = [v.name for v in variables]
        s, t = match_variable(source, names), match_variable(target, names)
        if s is not None and t is not None:
            # Both variables are there: the subject is the edge between them, or nothing.
            for i, e in enumerate(edges):
                if (e.source, e.target) == (s.name, t.name):
                    return Match(f"{e.source} -> {e.target}", "variables", i)
            return None
        sentence = entry.get("sentence")
        if not by_sentence or not isinstance(sentence, str) or not sentence.strip():
            return None
        # An end that is gone (the rebuild folded it into another variable of its metric): an
        # edge of the same metrics, keeping the end that is there, stating the same sentence.
        wanted = _squash(sentence)
        src, tgt = _end(s, source), _end(t, target)
        hits = [
            i
            for i, e in enumerate(edges)
            if src(e.source) and tgt(e.target) and wanted in self.sentences_of(e)
        ]
        if len(hits) == 1:
            e = edges[hits[0]]
            return Match(f"{e.source} -> {e.target}", "evidence sentence", hits[0])
        return None


def _end(match: Match | None, asked: str) -> Callable[[str], bool]:
    """Which names can stand at an edge's end: the matched variable, else any of its metric."""
    if match is not None:
        return lambda name: name == match.name
    metric = split_name(asked)[0]
    return lambda name: split_name(name)[0] == metric


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()
