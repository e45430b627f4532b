"""QuoteIndex.find stops after the chunks the linker can use: same chunks, bounded work.

Text that repeats across a corpus (boilerplate, duplicated documents) used to be visited at every
occurrence for every edge quoting it, O(edges x occurrences); see benchmarks/llm_scaling.py.
"""

from __future__ import annotations

import random

from hcg_core.graph_build.evidence import QuoteIndex
from hcg_core.types import Chunk

PHRASES = (
    "fertilizer runoff raises the phosphorus load",
    "warm water favours cyanobacteria",
    "the bloom depletes oxygen",
    "fish die in hypoxic water",
)


class UnlimitedIndex(QuoteIndex):
    """The behaviour before the limit: every occurrence visited, the limit ignored."""

    def find(self, quote, prefix_chars=200, limit=None):
        return super().find(quote, prefix_chars)


class CountingText(str):
    """A str that counts its ``find`` calls."""

    calls = 0

    def find(self, *args):
        CountingText.calls += 1
        return super().find(*args)


def _corpus(seed: int, n: int = 60) -> list[Chunk]:
    rng = random.Random(seed)
    return [
        Chunk(f"c{i}", " ".join(rng.choice(PHRASES) for _ in range(rng.randint(0, 4))) + f" n{i}")
        for i in range(n)
    ]


def test_limited_find_is_a_prefix_of_the_full_find():
    for seed in range(5):
        index = QuoteIndex(_corpus(seed))
        for phrase in (*PHRASES, "n1", "nothing like this at all"):
            full = UnlimitedIndex(_corpus(seed)).find(phrase)
            assert len(set(full)) == len(full)  # a chunk counts once
            for limit in (1, 2, 3, 100):
                assert index.find(phrase, limit=limit) == full[:limit]
            assert index.find(phrase) == full


def test_repeated_quote_costs_no_more_as_the_corpus_grows():
    for copies in (10, 1000):
        index = QuoteIndex([Chunk(f"c{i}", PHRASES[0] + f" copy {i}") for i in range(copies)])
        index.text = CountingText(index.text)
        CountingText.calls = 0
        assert index.find(PHRASES[0], limit=2) == [0, 1]
        assert CountingText.calls == 2
        CountingText.calls = 0
        assert len(index.find(PHRASES[0])) == copies  # without a limit: every occurrence
        assert CountingText.calls == copies + 1
