"""The LLM-free retrieval measures (see docs/evaluation.md): lexical answer recall and gold-context
recall, both read on the first ``budget`` words of the retrieved context.

Answer recall:
The share of the gold answer's content words (lowercased alphanumeric tokens, stopwords and
1-character tokens dropped, a trailing plural "s" folded) that occur in the retrieved context, the
context cut to a budget of whitespace-separated words in rank order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import ConfigError
from ..retrieval.lexical import tokenize

DEFAULT_BUDGET = 2000
"""Words of context the measure reads, in rank order (the dev benchmark's fixed budget)."""


def content_words(text: str) -> list[str]:
    """The measure's tokens of ``text``, in order (duplicates kept).

    They are the BM25 tokeniser's (``hcg_core.retrieval.lexical.tokenize``): its stopword list is
    the one the dev reference figures were taken with, and with it this measure reproduces the
    README's table (BM25 200/40 top 10: 0.817; 1,200/200 top 5: 0.763, unbounded 0.871). A change
    to that tokeniser changes every reported figure, so tests/test_eval.py pins its stopwords.

    >>> content_words("UV radiation exposure is a primary risk factor for BCC.")
    ['uv', 'radiation', 'exposure', 'primary', 'risk', 'factor', 'bcc']
    """
    return tokenize(text)


def context_words(texts: Iterable[str]) -> list[str]:
    """The retrieved context as the measure reads it: whitespace words of each text, in rank order."""
    return [word for t in texts for word in t.split()]


def answer_recall(
    context_words_in_order: Sequence[str], answer: str, budget: int | None = DEFAULT_BUDGET
) -> float:
    """Share of the answer's distinct content words found in the first ``budget`` context words.

    ``budget=None`` reads the whole context (unbounded recall). An answer with no content words
    scores 1.0 (there is nothing to miss), so such questions do not drag an average down.

    >>> answer_recall("UV light causes most basal cell carcinomas".split(), "UV radiation causes BCC")
    0.5
    >>> answer_recall("UV light causes".split(), "UV radiation causes BCC", budget=1)
    0.25
    """
    if budget is not None and budget < 0:
        raise ConfigError(f"budget must be >= 0 words or None, got {budget}")
    gold = set(content_words(answer))
    if not gold:
        return 1.0
    read = context_words_in_order if budget is None else context_words_in_order[:budget]
    found = set(content_words(" ".join(read)))
    return len(gold & found) / len(gold)


def normalise_space(text: str) -> str:
    r"""Whitespace runs as one space, ends stripped (how gold context is matched).

    >>> normalise_space("  a\n b\t c ")
    'a b c'
    """
    return " ".join(text.split())


def context_recall(
    context_words_in_order: Sequence[str], gold: Sequence[str], budget: int | None = DEFAULT_BUDGET
) -> float:
    """Share of the gold context passages found whole inside the first ``budget`` context words.

    Both sides are whitespace-normalised, so a sentence re-flowed by chunking still matches; a gold
    passage cut by the budget (or split across two returned texts) does not count. No gold scores
    1.0, as in ``answer_recall``.

    >>> context_recall("a b. c d. e f.".split(), ["c d.", "e f."])
    1.0
    >>> context_recall("a b. c d. e f.".split(), ["c d.", "e f."], budget=4)
    0.5
    """
    if budget is not None and budget < 0:
        raise ConfigError(f"budget must be >= 0 words or None, got {budget}")
    wanted = [g for g in (normalise_space(t) for t in gold) if g]
    if not wanted:
        return 1.0
    words = context_words_in_order if budget is None else context_words_in_order[:budget]
    context = " ".join(words)
    return sum(g in context for g in wanted) / len(wanted)
