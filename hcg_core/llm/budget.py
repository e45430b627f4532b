"""The completion budget of the request being made, set by the code that knows what it asks for.

A pipeline step knows how many items its request asks for (49 Tier 1 targets, 12 Tier 2 pairs),
so it sets a token limit for that request with ``completion_budget``; the OpenAI-compatible client
sends it as ``max_tokens`` unless the user gave ``max_tokens``, which wins. It is a context
variable (like the ledger's stage), so it reaches the client through the ``StructuredLLM`` seam
without changing it, and concurrent requests each keep their own.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

requested_tokens: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "hcg_llm_requested_tokens", default=None
)


@contextmanager
def completion_budget(tokens: int | None) -> Iterator[None]:
    """Ask for at most ``tokens`` completion tokens in the requests made inside this block."""
    token = requested_tokens.set(tokens)
    try:
        yield
    finally:
        requested_tokens.reset(token)


def tokens_for(items: int, per_item: int, fixed: int) -> int:
    """A limit for a reply of ``items`` items of about ``per_item`` tokens each, plus ``fixed``.

    >>> tokens_for(10, 50, 400)
    900
    """
    return fixed + max(0, items) * per_item
