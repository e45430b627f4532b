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
from typing import TypeVar

from ..types import Chunk
from .extract import Statement, compound_heads, extract_statements, split_sentences

T = TypeVar("T")


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
    held: dict[str, list[int]] = {}  # sentence -> its chunks, in first-seen order
    for ci, chunk in enumerate(iterate(chunks, "sentences")):
        for s in split_sentences(chunk.text):
            chunks_of = held.setdefault(s, [])
            if not chunks_of or chunks_of[-1] != ci:
                chunks_of.append(ci)
    corpus = SentenceCorpus(list(held), list(held.values()))
    for sid, s in enumerate(iterate(corpus.sentences, "causal statements")):
        corpus.statements.extend(extract_statements(s, sid))
    corpus.compounds = compound_heads(corpus.sentences, corpus.statements)
    return corpus


def containers(sentences: Sequence[str], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """For each sentence id in ``ids``, the other ids in ``ids`` whose sentence contains it.

    If sentence A (of two or more words) is a substring of sentence B, then B's words hold A's
    inner words (all but the first and last) as a consecutive run, the word before that run ends
    with A's first word and the word after it starts with A's last word (a cut may split those
    two). So sentences are indexed by (inner words, first word, last word); one pass over the word
    runs of every sentence B looks up the run, then the first words that end B's word before it,
    then the last words that start B's word after it, and only the sentences found are checked
    with ``in``. Matching all three parts, not only the inner words, matters: sentences that
    differ only in their first or last word ("X causes Y in case 1.", "... case 2.") share their
    inner words, and checking every pair of them would be quadratic. The cost grows with the
    sentences, their length and the containments found, not with the number of sentence pairs.
    A sentence of one word (rare: "Warning.") is checked against every sentence.

    >>> s = ["Smoking causes lung cancer in most cases.", "causes lung cancer in", "Salt kills."]
    >>> containers(s, [0, 1, 2])
    {0: frozenset(), 1: frozenset({0}), 2: frozenset()}
    """
    ids = sorted(set(ids))
    # inner words -> first word -> last word -> ids of the sentences of two or more words.
    index: dict[tuple[str, ...], dict[str, dict[str, list[int]]]] = {}
    single: list[int] = []
    for i in ids:
        w = sentences[i].split()
        if len(w) < 2:
            single.append(i)
            continue
        by_first = index.setdefault(tuple(w[1:-1]), {})
        by_first.setdefault(w[0], {}).setdefault(w[-1], []).append(i)
    # Few sentences have a container: sets only for those (fewer live objects for the garbage
    # collector to walk on a large corpus), one shared empty set for the rest.
    found: dict[int, set[int]] = {}
    lengths = sorted({len(key) for key in index})
    for j in ids:
        text = sentences[j]
        w = text.split()
        for n in lengths:
            # A run of n inner words needs a word before it and one after it.
            for k in range(1, len(w) - n):
                by_first = index.get(tuple(w[k : k + n]))
                if by_first is None:
                    continue
                for by_last in _affixed(by_first, w[k - 1], suffix=True):
                    for holders in _affixed(by_last, w[k + n], suffix=False):
                        for i in holders:
                            if i != j and sentences[i] in text:
                                found.setdefault(i, set()).add(j)
    for i in single:
        text = sentences[i]
        hits = {j for j in ids if j != i and text in sentences[j]}
        if hits:
            found[i] = hits
    return {i: frozenset(found[i]) if i in found else _NONE for i in ids}


_NONE: frozenset[int] = frozenset()


def _affixed(table: dict[str, T], word: str, *, suffix: bool) -> list[T]:
    """The values of ``table`` whose key is a suffix (else a prefix) of ``word``, looked up the
    cheaper way: by each suffix (prefix) of the word, or by each key when the table has fewer keys
    than the word letters.
    """
    if len(table) < len(word):
        fits = word.endswith if suffix else word.startswith
        return [v for key, v in table.items() if fits(key)]
    n = len(word)
    return [
        table[a] for a in (word[x:] if suffix else word[: n - x] for x in range(n)) if a in table
    ]


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
