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
    off = HybridRanker(chunks, None, HybridConfig(group_blocks=False))
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
    off = HybridRanker(chunks, None, HybridConfig(group_blocks=False))
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
    from hcg_core.blocks import embedding_texts, vectors_of_chunks
    from hcg_core.embedders import HashingEmbedder

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


# A splitter that runs on across paragraph breaks: the middle piece holds the end of the first
# abstract and the start of the second (as SentenceSplitter(256, 32) cuts HolisQA's abstracts).
def _straddling_pieces() -> list[Chunk]:
    cut = ABSTRACT.index("The juice")
    tail = TEXT.index("Unrelated topic 3")
    return [_piece("p0", 0, cut), _piece("mid", cut, tail), _piece("p2", tail, len(TEXT))]


def test_a_piece_across_a_blank_line_comes_back_as_its_part_in_the_asked_paragraph():
    chunks = _straddling_pieces()
    ranker = HybridRanker(chunks, None)
    # The middle piece is ranked as two parts, each in its own paragraph.
    assert [u.id for u in ranker.units] == ["p0", "mid", "mid", "p2"]
    got = ranker.rank("warfarin grapefruit interaction bleeding", None, k=2).chunks
    assert [c.chunk.id for c in got] == ["p0", "mid"]
    # The middle piece holds only the first abstract's end: no half of the second comes back.
    assert " ".join(c.chunk.text for c in got).split() == ABSTRACT.split()
    mid = chunks[1]
    a, b = got[1].details["span"]
    assert got[1].chunk.text == mid.text[a:b] and "Unrelated" not in got[1].chunk.text
    assert got[1].chunk.metadata["start_index"] == mid.metadata["start_index"] + a
    # Without grouping the pieces are ranked and returned whole, as before.
    whole = HybridRanker(chunks, None, HybridConfig(group_blocks=False))
    assert [u.id for u in whole.units] == ["p0", "mid", "p2"]
    assert all("span" not in c.details for c in whole.rank("grapefruit", None, k=3).chunks)


def test_parts_of_one_piece_come_back_once_and_k_counts_pieces():
    chunks = _straddling_pieces()
    ranker = HybridRanker(chunks, None)
    # Words of both paragraphs: both parts of the middle piece are picked, joined into the node.
    got = ranker.rank("grapefruit clinicians unrelated topic dosing", None, k=3).chunks
    ids = [c.chunk.id for c in got]
    assert sorted(ids) == ["mid", "p0", "p2"] and len(set(ids)) == 3
    mid = next(c for c in got if c.chunk.id == "mid")
    # The node's text from its first part to its last (the spaces at its ends aside).
    assert mid.chunk.text == chunks[1].text.strip()
    for k in (1, 2, 3):
        assert len(ranker.rank("warfarin", None, k=k).chunks) == k


def test_a_part_reads_the_vector_of_the_piece_centred_in_its_paragraph():
    chunks = _straddling_pieces()
    mid = chunks[1]
    assert mid.metadata["start_index"] + len(mid.text) / 2 < len(ABSTRACT)  # centred in the first
    vectors = np.eye(3, dtype=np.float32)
    ranker = HybridRanker(chunks, vectors)
    # The middle piece's part in the second abstract reads p2's vector (p2 is centred there).
    assert ranker.vector_row.tolist() == [0, 1, 2, 2]
    got = ranker.rank("", vectors[2], k=2).chunks
    assert [c.chunk.id for c in got] == ["mid", "p2"]
    assert "Unrelated" in got[0].chunk.text and "grapefruit" not in got[0].chunk.text


def test_grown_and_shrunk_rankers_cut_the_same_parts_as_a_fresh_one():
    chunks = _straddling_pieces()
    fresh = HybridRanker(chunks, None)
    grown = HybridRanker(chunks[:1], None).extended(chunks[1:], None)
    assert grown.part_at.tolist() == fresh.part_at.tolist()
    shrunk = fresh.subset(np.array([False, True, True]), None)
    assert shrunk.part_at.tolist() == fresh.part_at[1:].tolist()
    assert [c.chunk.id for c in shrunk.rank("grapefruit", None, k=2).chunks][0] == "mid"
