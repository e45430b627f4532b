"""Offline builder, step 5: each supported link becomes a ``CausalEdge`` with mechanism and evidence.

The mechanism is the link's strongest supporting sentence; the confidence a noisy-or over its
distinct supporting sentences. The evidence is left to the one linker (``evidence.link_evidence``,
which the build runs next): the mechanism sentence's chunk is found there as the holder of the
edge's text, then chunks naming both endpoints (docs/offline-builder.md, step 6).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..spec.offline_vocabulary import NodeKey
from ..types import CausalEdge, Variable
from .extract import sentence_effect
from .statements import SentenceCorpus, containers, distinct_sentences
from .support import Support

# One sentence with a cue of strength s alone gives confidence 0.6 * s; more sentences add up.
SENTENCE_WEIGHT = 0.6
MAX_CONFIDENCE = 0.99  # never certain: the text states the link, it does not prove it
MAX_MECHANISM_CHARS = 400


def stable_id(prefix: str, *parts: str) -> str:
    """A short id that depends only on ``parts`` (so rebuilding gives the same edge ids).

    >>> stable_id("e_", "Smoking", "Stroke")
    'e_973535c4a6a0'
    """
    h = hashlib.blake2b("\x00".join(parts).encode(), digest_size=6)
    return prefix + h.hexdigest()


def edge_confidence(strengths: Iterable[float]) -> float:
    """Noisy-or of the supporting sentences' cue strengths, each weighted by 0.6.

    >>> edge_confidence([0.9]), edge_confidence([0.9, 0.9])
    (0.54, 0.7884)
    """
    return round(min(MAX_CONFIDENCE, 1.0 - noisy_or_miss(strengths)), 4)


def noisy_or_miss(strengths: Iterable[float]) -> float:
    """The product ``edge_confidence`` takes from 1: each factor is in [0.4, 1], so more
    sentences never raise it (``incremental`` relies on this once confidence is capped).

    >>> round(noisy_or_miss([0.9, 0.9]), 4)
    0.2116
    """
    miss = 1.0
    for s in strengths:
        miss *= 1.0 - SENTENCE_WEIGHT * max(0.0, min(1.0, s))
    return miss


def sentence_edge(source: str, target: str, sentence: str, confidence: float) -> CausalEdge:
    """The edge of a link whose mechanism is ``sentence``, its sign read from that sentence; no
    evidence yet (``evidence.link_evidence`` links it). The id depends on the names only.

    >>> e = sentence_edge("Smoking", "Stroke", "Smoking raises the risk of stroke.", 0.54)
    >>> e.id, e.effect, e.evidence
    ('e_973535c4a6a0', 'increases', ())
    """
    return CausalEdge(
        id=stable_id("e_", source, target),
        source=source,
        target=target,
        mechanism=sentence[:MAX_MECHANISM_CHARS],
        confidence=confidence,
        effect=sentence_effect(sentence),
    )


def make_edges(
    support: Support, var_of: dict[NodeKey, Variable], corpus: SentenceCorpus
) -> list[CausalEdge]:
    """One edge per supported link, sorted by (source name, target name).

    Sentence fragments cut by a chunk edge are counted once (``statements.distinct_sentences``).
    The mechanism is the sentence with the strongest support, then held by more chunks, then the
    shorter, then the earlier.
    """
    sentences, chunks_of = corpus.sentences, corpus.chunks_of
    within = containers(sentences, {i for sents in support.values() for i in sents})
    edges: list[CausalEdge] = []
    for s, t in sorted(support, key=lambda k: (var_of[k[0]].name, var_of[k[1]].name)):
        sents = support[(s, t)]
        sids = distinct_sentences(sents, sentences, within)
        best = max(sids, key=lambda i: (sents[i], len(chunks_of[i]), -len(sentences[i]), -i))
        confidence = edge_confidence(sents[i] for i in sids)
        edges.append(sentence_edge(var_of[s].name, var_of[t].name, sentences[best], confidence))
    return edges
