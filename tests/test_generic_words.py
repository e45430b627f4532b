"""The offline builder drops one-word variables whose word is generic in the corpus (issue 26,
item 3), decided from corpus statistics only: tested with invented words no corpus has."""

from __future__ import annotations

import math

import pytest

from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build.generic import (
    GENERIC_MIN_CHUNKS,
    generic_words,
    residual_idf,
    word_counts,
)
from hcg_core.graph_build.offline import build_offline
from hcg_core.types import Chunk

# Invented words: six topic terms (a condition each) and their six outcomes, and one word that
# behaves generically ("blorv": once in a chunk, in chunks of every topic).
TOPICS = ["quillosis", "zentorium", "marvex", "plindor", "trovasia", "kelbrin"]
OUTCOMES = ["drenfall", "wubric", "snarvel", "glimtor", "prusket", "yondrel"]
GENERIC = "blorv"


def corpus(n_per_topic: int = 20) -> list[Chunk]:
    """Topic chunks: the topic term and its outcome come in bursts (said several times); the
    generic word is said once, in half of the chunks of every topic, and causes things."""
    chunks = []
    for t, (term, out) in enumerate(zip(TOPICS, OUTCOMES, strict=True)):
        for i in range(n_per_topic):
            text = [
                f"Patients with {term} were seen in ward {i}.",
                f"{term.capitalize()} causes {out}.",
                f"The {out} was measured twice, and {out} scores were kept.",
                f"Severe {term} was rare.",
            ]
            if i % 2 == 0:
                text.append(f"{GENERIC.capitalize()} causes {term}.")
            else:
                text.append("Staff kept notes.")
            chunks.append(Chunk(f"t{t}-{i}", " ".join(text), doc_id=f"t{t}"))
    return chunks


def test_residual_idf_is_zero_for_a_chance_spread_and_high_for_bursts():
    n = 1000
    # Poisson spread: df = n (1 - exp(-cf / n)).
    cf = 100
    df = round(n * -math.expm1(-cf / n))
    assert abs(residual_idf(df, cf, n)) < 0.05
    assert residual_idf(10, 100, n) > 3  # ten times in each of ten chunks
    assert residual_idf(0, 0, n) == math.inf


def test_word_counts_use_the_builders_singular_forms():
    df, cf = word_counts([Chunk("a", "Blorvs and a blorv."), Chunk("b", "blorv")], ["blorv"])
    assert (df["blorv"], cf["blorv"]) == (2, 3)


def test_invented_generic_word_is_generic_and_topic_terms_are_not():
    chunks = corpus()
    found = generic_words(chunks, [GENERIC, *TOPICS, *OUTCOMES])
    assert set(found) == {GENERIC}
    share, ridf = found[GENERIC]
    assert share == pytest.approx(0.5) and ridf < 0.1


def test_a_rare_word_is_not_judged():
    # In under 5% of the chunks: not spread, so never generic however evenly it occurs.
    chunks = corpus()
    chunks += [Chunk(f"x{i}", "A flumox was found.") for i in range(3)]
    assert "flumox" not in generic_words(chunks, ["flumox"])


def test_small_corpus_turns_the_rule_off():
    chunks = corpus(n_per_topic=(GENERIC_MIN_CHUNKS - 1) // 6)
    assert len(chunks) < GENERIC_MIN_CHUNKS
    assert generic_words(chunks, [GENERIC]) == {}


def test_the_build_drops_the_generic_variable_and_keeps_the_specific_ones():
    chunks = corpus()
    emb = HashingEmbedder(dim=256)
    on = build_offline(chunks, embedder=emb, embed_chunks=False)
    off = build_offline(chunks, embedder=emb, embed_chunks=False, drop_generic=False)
    names_on = {v.name for v in on.graph.variables}
    names_off = {v.name for v in off.graph.variables}
    assert "Blorv" in names_off  # the rule is what removes it
    assert "Blorv" not in names_on
    assert not any("Blorv" in (e.source, e.target) for e in on.graph.edges)
    for term, out in zip(TOPICS, OUTCOMES, strict=True):
        assert term.capitalize() in names_on and out.capitalize() in names_on
    # Only the generic variable's edges went.
    assert {(e.source, e.target) for e in on.graph.edges} == {
        (e.source, e.target) for e in off.graph.edges if "Blorv" not in (e.source, e.target)
    }
    graph = on.report["stages"]["graph"]
    assert graph["generic_variables_dropped"] == 1 and graph["generic_words"] == GENERIC
