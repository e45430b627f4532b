"""Offline builder, step 1: the corpus's distinct sentences and the causal statements they make.

Overlapping chunks repeat sentences, so each sentence is stored once with the chunks that hold it;
``extract.extract_statements`` (the cue patterns) reads each sentence once. A chunk boundary can
also cut a sentence, leaving a fragment that is a substring of the full sentence; ``containers``
finds these once for the whole corpus so that an edge never counts the same statement twice
(docs/offline-builder.md, steps 1-2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..types import Chunk
from .extract import Statement, compound_heads, extract_statements, split_sentences


@dataclass
class SentenceCorpus:
    """Unique sentences of the chunks, which chunks hold each, and the statements they make.

    ``chunks_of[i]``: chunk indices holding sentence ``i`` (ascending); ``compounds``: two-word
    heads the corpus uses as units (``extract.compound_heads``).
    """

    sentences: list[str] = field(default_factory=list)
    chunks_of: list[list[int]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    compounds: frozenset[str] = frozenset()


def collect_statements(
    chunks: Sequence[Chunk], iterate=lambda items, desc: items
) -> SentenceCorpus:
    """Split chunks into sentences (deduplicated across overlapping chunks) and extract statements.

    ``iterate(items, desc)`` wraps each loop (a progress bar); the default passes items through.

    >>> c = collect_statements([Chunk("a", "Smoking causes cancer. Sun is hot."),
    ...                         Chunk("b", "Sun is hot. Salt raises blood pressure.")])
    >>> c.sentences, c.chunks_of
    (['Smoking causes cancer.', 'Sun is hot.', 'Salt raises blood pressure.'], [[0], [0, 1], [1]])
    >>> [(s.sentence, s.cause.text, s.effect.text) for s in c.statements]
    [(0, 'smoking', 'cancer'), (2, 'salt', 'blood pressure')]
    """
    corpus = SentenceCorpus()
    index: dict[str, int] = {}
    for ci, chunk in enumerate(iterate(chunks, "sentences")):
        for s in split_sentences(chunk.text):
            sid = index.get(s)
            if sid is None:
                sid = index[s] = len(corpus.sentences)
                corpus.sentences.append(s)
                corpus.chunks_of.append([])
            if not corpus.chunks_of[sid] or corpus.chunks_of[sid][-1] != ci:
                corpus.chunks_of[sid].append(ci)
    for sid, s in enumerate(iterate(corpus.sentences, "causal statements")):
        corpus.statements.extend(extract_statements(s, sid))
    corpus.compounds = compound_heads(corpus.sentences, corpus.statements)
    return corpus


def containers(sentences: Sequence[str], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """For each sentence id in ``ids``, the other ids in ``ids`` whose sentence contains it.

    If sentence A is a substring of sentence B, A's inner words (all but the first and last, which
    a cut may split) occur in B as consecutive whole words. So each sentence's run of inner words is
    a hash key; one pass over the word runs of every sentence finds the sentences holding each
    key, and only those are checked with ``in``. The cost grows with the sentences and their
    length, not with the number of sentence pairs. A sentence of one or two words has no inner
    word and is checked against every sentence (rare: "Stress kills.").

    >>> s = ["Smoking causes lung cancer in most cases.", "causes lung cancer in", "Salt kills."]
    >>> containers(s, [0, 1, 2])
    {0: frozenset(), 1: frozenset({0}), 2: frozenset()}
    """
    ids = sorted(set(ids))
    words = {i: sentences[i].split() for i in ids}
    inner = {i: tuple(words[i][1:-1]) for i in ids}
    holders: dict[tuple[str, ...], set[int]] = {key: set() for key in inner.values() if key}
    lengths = sorted({len(key) for key in holders})
    for j in ids:
        w = words[j]
        for n in lengths:
            if n > len(w):
                break
            for k in range(len(w) - n + 1):
                hit = holders.get(tuple(w[k : k + n]))
                if hit is not None:
                    hit.add(j)
    out: dict[int, frozenset[int]] = {}
    for i in ids:
        text = sentences[i]
        cands = holders[inner[i]] if inner[i] else ids
        out[i] = frozenset(j for j in cands if j != i and text in sentences[j])
    return out


def distinct_sentences(
    sents: Iterable[int], sentences: Sequence[str], within: dict[int, frozenset[int]]
) -> list[int]:
    """Sentence ids, longest first, dropping fragments of a longer kept one (``within``:
    ``containers`` of the ids).

    >>> s = ["Smoking causes lung cancer in most cases.", "causes lung cancer in", "Salt kills."]
    >>> distinct_sentences([2, 1, 0], s, containers(s, [0, 1, 2]))
    [0, 2]
    """
    out: list[int] = []
    kept: set[int] = set()
    for i in sorted(sents, key=lambda i: (-len(sentences[i]), i)):
        if not within[i] & kept:
            out.append(i)
            kept.add(i)
    return out


__all__ = ["SentenceCorpus", "collect_statements", "containers", "distinct_sentences"]
