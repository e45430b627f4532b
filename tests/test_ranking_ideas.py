"""benchmarks/ranking_ideas.py: each idea does what docs/evaluation.md says it measured, on tiny inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from hcg_core.config import HybridConfig
from hcg_core.retrieval.hybrid import HybridRanker
from hcg_core.types import Chunk, Document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ranking_ideas as ri  # noqa: E402


def test_acronyms_kept_only_in_capitals():
    assert ri.acronym_tokens("ALL is treated; all patients, IT staff and it") == [
        "all",
        "treated",
        "patient",
        "it",
        "staff",
    ]


def test_units_find_the_line_they_start_on():
    text = "aspirin thins blood. aspirin again.\nstatins lower cholesterol here.\nthird line"
    doc = Document("d", text)
    chunks = [
        Chunk("a", "aspirin thins blood.", "d"),
        Chunk("b", "aspirin again.", "d"),
        Chunk("c", "statins lower cholesterol here.", "d"),
        Chunk("e", "third line", "d"),
    ]
    rows, sections = ri.unit_sections(chunks, [doc])
    assert rows.tolist() == [0, 0, 1, 2]
    assert sections[1] == "statins lower cholesterol here.\n"


def test_section_prior_lifts_the_units_of_the_matching_section():
    # Both units match "dose" alike; only the first one's section names aspirin.
    text = (
        "aspirin thins blood. take one dose daily.\nstatins lower cholesterol. give one dose daily."
    )
    doc = Document("d", text)
    chunks = [Chunk("a", "take one dose daily.", "d"), Chunk("b", "give one dose daily.", "d")]
    rows, sections = ri.unit_sections(chunks, [doc])
    plain = HybridRanker(chunks, None, HybridConfig())
    prior = ri.SectionPrior(chunks, None, HybridConfig(), section_of=rows, sections=sections)
    query = "aspirin dose"
    before = {rc.chunk.id: rc.details["fused_score"] for rc in plain.rank(query, None, k=2).chunks}
    after = {rc.chunk.id: rc.details["fused_score"] for rc in prior.rank(query, None, k=2).chunks}
    # b's section matches "dose" only, a's "aspirin" too: a is lifted more.
    assert after["a"] - before["a"] > after["b"] - before["b"] > 0


def test_straddles_run_from_middle_to_middle_and_stop_at_blank_lines():
    text = "one two three four five six seven eight\n\nnine ten"
    doc = Document("d", text)
    chunks = [
        Chunk("a", text[0:18], "d", {"start_char_idx": 0, "end_char_idx": 18}),
        Chunk("b", text[14:39], "d", {"start_char_idx": 14, "end_char_idx": 39}),
        Chunk("c", text[41:], "d", {"start_char_idx": 41, "end_char_idx": len(text)}),
    ]
    emb = np.eye(3, dtype=np.float32)
    extra, vecs = ri.straddles(chunks, emb, [doc])
    assert [c.id for c in extra] == ["a~b"]  # b and c lie across a blank line
    assert extra[0].text == " four five six"
    assert np.allclose(vecs[0], [2**-0.5, 2**-0.5, 0.0])
    # Long text only: no window next to a piece marked as part of a short block.
    assert ri.straddles(chunks, emb, [doc], skip=np.array([False, True, False]))[0] == []


def test_halves_cut_long_text_pieces_at_the_sentence_nearest_the_middle():
    text = "One two. Three four five. Six."
    pieces = [
        Chunk("a", text, "d", {"start_char_idx": 10, "end_char_idx": 10 + len(text)}),
        Chunk("b", text, "d", {"start_char_idx": 50, "end_char_idx": 50 + len(text)}),
    ]
    emb = np.eye(2, dtype=np.float32)
    out, vecs = ri.halves(pieces, emb, skip=np.array([False, True]))
    assert [(c.id, c.text, c.metadata["start_char_idx"]) for c in out] == [
        ("a#1", "One two. ", 10),
        ("a#2", "Three four five. Six.", 19),
        ("b", text, 50),  # marked: a piece of a short block stays whole
    ]
    assert vecs.tolist() == [[1, 0], [1, 0], [0, 1]]  # each half reads its piece's vector


def test_token_pieces_fit_the_limit_and_cut_at_sentence_ends():
    def words(text: str) -> int:
        return len(text.split())

    text = "a b c. d e f. g h. i j k l. m."
    assert ri.token_pieces(text, words, 20) is None  # 13 words fit whole
    pieces = ri.token_pieces(text, words, 6)
    assert pieces == ["a b c. d e f.", "g h. i j k l.", "m."]
    assert all(words(p) <= 6 for p in pieces)
    assert " ".join(pieces) == text  # every word kept, in order


def test_bm25_settings_reach_the_ranker():
    chunks = [Chunk("a", "aspirin aspirin aspirin dose", "d"), Chunk("b", "aspirin dose", "d")]
    plain = HybridRanker(chunks, None, HybridConfig())
    ideas = ri.ideas("LangChain 1000/200", plain, np.zeros((2, 3), np.float32), [], None, Path("."))
    flat = ideas["BM25 k1 1.2 b 0.75"]()
    assert (flat.bm25.k1, flat.bm25.b) == (1.2, 0.75)
    assert "long texts embedded whole" in ideas


def test_proximity_scores_question_words_standing_together_in_one_sentence():
    chunks = [
        Chunk("apart", "Aspirin is common. The dose varies. Other words here.", "d"),
        Chunk("together", "The aspirin dose varies. Other words here. More text.", "d"),
        Chunk("one", "Aspirin alone. Nothing else.", "d"),
    ]
    ranker = ri.SentenceProximity(chunks, None, HybridConfig())
    prox = ranker.proximity("aspirin dose", np.arange(3))
    assert prox[0] == 0.0 and prox[2] == 0.0  # never two question words in one sentence
    assert prox[1] > 0
    top = ranker.rank("aspirin dose", None, k=2).chunks[0].chunk.id
    assert top == "together"
