"""Pieces of one short text block a user's splitter cut apart are packed together
(``HybridConfig.group_blocks``, ``hcg_core/blocks.py``)."""

from __future__ import annotations

import numpy as np

from hcg_core.blocks import reading_order, short_blocks
from hcg_core.retrieval.hybrid import HybridConfig, HybridRanker
from hcg_core.types import Chunk

# Two abstracts; a splitter cut the first in two overlapping pieces. Only the first piece holds the
# question's words; the second holds the rest of that abstract's answer (the "juice" overlap aside).
ABSTRACT = (
    "Warfarin interacts with grapefruit juice in older patients. "
    "The juice blocks the enzyme that clears the drug, so bleeding events rose in the cohort. "
    "Clinicians should advise patients to avoid it and monitor clotting times closely."
)
OTHER = " ".join(f"Unrelated topic {i} about warfarin dosing schedules." for i in range(8))
TEXT = ABSTRACT + "\n\n" + OTHER


def _piece(cid: str, start: int, end: int, doc: str = "doc") -> Chunk:
    return Chunk(cid, TEXT[start:end], doc_id=doc, metadata={"start_index": start})


def _split_pieces() -> list[Chunk]:
    cut = ABSTRACT.index("The juice")
    # Overlapping by 20 characters, as a splitter with chunk_overlap cuts.
    pieces = [_piece("p0", 0, cut + 20), _piece("p1", cut, len(ABSTRACT))]
    # The second abstract, cut into sentences (touching, one space apart).
    start = len(ABSTRACT) + 2
    for i, sentence in enumerate(OTHER.split(". ")):
        end = start + len(sentence) + (1 if i < 7 else 0)
        pieces.append(_piece(f"o{i}", start, end))
        start = end + 1
    return pieces


def test_short_blocks_groups_the_pieces_of_one_paragraph_and_not_across_a_blank_line():
    chunks = _split_pieces()
    ranker = HybridRanker(chunks, None)
    blocks = ranker.blocks
    assert blocks[0] == blocks[1] >= 0
    # The second abstract is one short block of touching pieces, apart from the first.
    assert len(set(blocks[2:].tolist())) == 1 and blocks[2] not in (blocks[0], -1)


def test_the_rest_of_a_cut_paragraph_follows_its_best_piece():
    chunks = _split_pieces()
    query = "warfarin grapefruit interaction"
    on = HybridRanker(chunks, None).rank(query, None, k=3)
    got = [c.chunk.id for c in on.chunks]
    assert got[:2] == ["p0", "p1"]
    assert on.chunks[1].details.get("follows") == "p0"
    off = HybridRanker(chunks, None, HybridConfig(group_blocks=False, follow_gap=None))
    assert [c.chunk.id for c in off.rank(query, None, k=3).chunks][1] != "p1"
    # A filter that excludes the second piece keeps it out.
    allowed = np.array([c.id != "p1" for c in chunks])
    filtered = HybridRanker(chunks, None).rank(query, None, k=3, allowed=allowed)
    assert "p1" not in [c.chunk.id for c in filtered.chunks]


def test_a_cut_paragraph_comes_back_in_reading_order_and_reads_whole_once():
    chunks = _split_pieces()
    # Only the second piece holds these words: it is picked, and the first comes back before it.
    on = HybridRanker(chunks, None).rank("bleeding cohort clotting clinicians", None, k=2)
    assert [c.chunk.id for c in on.chunks] == ["p0", "p1"]
    assert on.chunks[0].details.get("follows") == "p1" and "follows" not in on.chunks[1].details
    # The passage scores as the piece that matched, and the overlap is sent once.
    assert on.chunks[0].score == on.chunks[1].score > 0
    assert " ".join(c.chunk.text for c in on.chunks).split() == ABSTRACT.split()
    off = HybridRanker(chunks, None, HybridConfig(group_blocks=False, follow_gap=None))
    assert off.rank("bleeding cohort clotting clinicians", None, k=1).chunks[0].chunk.id == "p1"


def test_hcg_chunks_and_long_blocks_are_never_grouped():
    spans = np.array([[0, 0, 100], [0, 100, 200], [0, 180, 300], [0, 290, 5000]])
    texts = ["w " * 50, "w " * 50, "w " * 60, "w " * 2400]
    words = np.array([50, 50, 60, 2400])
    # Word spans (hcg's chunker: a short block is already one chunk) are left alone.
    assert short_blocks(spans, texts, words, np.zeros(4, bool)).tolist() == [-1] * 4
    # Character spans: the run is over 600 words, so it is left to the ranker piece by piece.
    assert short_blocks(spans, texts, words, np.ones(4, bool)).tolist() == [-1] * 4
    assert short_blocks(spans[:3], texts[:3], words[:3], np.ones(3, bool)).tolist() == [0, 0, 0]


def test_grown_and_shrunk_rankers_find_the_same_blocks_as_a_fresh_one():
    chunks = _split_pieces()
    fresh = HybridRanker(chunks, None)
    grown = HybridRanker(chunks[:3], None).extended(chunks[3:], None)
    assert grown.blocks.tolist() == fresh.blocks.tolist()
    keep = np.array([c.id != "o0" for c in chunks])
    shrunk = HybridRanker(chunks, None).subset(keep, None)
    rebuilt = HybridRanker([c for c in chunks if c.id != "o0"], None)
    assert (shrunk.blocks >= 0).tolist() == (rebuilt.blocks >= 0).tolist()


def test_passages_asked_for_are_not_grouped_back():
    chunks = _split_pieces()
    ranker = HybridRanker(chunks, None, HybridConfig(passage_words=5))
    split = np.array(["passage_of" in (u.metadata or {}) for u in ranker.units])
    assert split.any()
    assert (ranker.blocks[split] == -1).all()
    # The short sentences of the second abstract stay whole units, and stay grouped.
    assert (ranker.blocks[~split] >= 0).sum() >= 2


def test_repeats_cut_by_words_join_two_pieces_into_their_text():
    from hcg_core.retrieval.repeats import without_repeats
    from hcg_core.types import RetrievedChunk

    text = "One two three. Four five six seven. Eight nine."
    a, b = text[:24], text[15:]  # a ends inside the sentence "Four five six seven."
    first = RetrievedChunk(Chunk("a", a, doc_id="d", metadata={"start_index": 0}), 1.0, "fallback")
    second = RetrievedChunk(Chunk("b", b, doc_id="d", metadata={"start_index": 15}), 0.9, "x")
    got = without_repeats([first, second])
    # The later piece continues the earlier one exactly: the cut sentence reads whole, once.
    assert " ".join(r.chunk.text for r in got).split() == text.split()
    assert got[1].details["span"] == [10, len(b)]


def test_reading_order_sorts_only_runs_of_one_block():
    blocks = np.array([2, 2, -1, -1, 5, 5, 5, 2])
    starts = np.array([30, 10, 7, 3, 9, 1, 5, 0])
    order, lead = reading_order(blocks, starts)
    # Two results outside any block keep their places; block 2's last pick is a run of its own.
    assert order.tolist() == [1, 0, 2, 3, 5, 6, 4, 7]
    assert lead.tolist() == [0, 0, 2, 3, 4, 4, 4, 7]


def test_a_short_block_is_embedded_once_and_its_pieces_share_the_vector():
    from hcg_core.blocks import embedding_texts
    from hcg_core.embedders import HashingEmbedder
    from hcg_core.embedding import vectors_of_chunks

    chunks = _split_pieces()
    texts, rows = embedding_texts(chunks)
    # Two abstracts, each one text: the overlapping pieces joined once, the touching ones by a space.
    assert texts == [ABSTRACT, " ".join(c.text for c in chunks[2:])]
    assert rows.tolist() == [0, 0] + [1] * (len(chunks) - 2)
    seen: list[str] = []

    class Recording(HashingEmbedder):
        def embed_documents(self, batch):
            seen.extend(batch)
            return super().embed_documents(batch)

    vectors = vectors_of_chunks(Recording(), chunks)
    assert seen == texts and vectors.shape == (len(chunks), Recording().dim)
    assert np.array_equal(vectors[0], vectors[1]) and not np.array_equal(vectors[1], vectors[2])
    # hcg's own chunks (word spans) and units without a place are embedded as themselves.
    own = [
        Chunk(c.id, c.text, doc_id="d", metadata={"start_word": 0, "end_word": 1}) for c in chunks
    ]
    assert embedding_texts(own)[0] == [c.text for c in chunks]
    bare = [Chunk(c.id, c.text, doc_id="d") for c in chunks]
    assert embedding_texts(bare)[0] == [c.text for c in chunks]
