"""Input checks shared by the embedders, so every one rejects bad input with the same message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import EmbedderError


def check_texts(texts: Any, *, who: str) -> list[str]:
    """Return ``texts`` as a list of str, or raise EmbedderError naming the first bad item."""
    # A bare str is a Sequence[str] too; iterating it would embed its characters one by one.
    if isinstance(texts, (str, bytes)):
        raise EmbedderError(
            f"{who}.embed_documents expects a list of texts, got a single {type(texts).__name__}; "
            "wrap it in a list or call embed_query"
        )
    if not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
        raise EmbedderError(
            f"{who}.embed_documents expects a list of str, got {type(texts).__name__}"
        )
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise EmbedderError(
                f"{who}.embed_documents expects str items; item {i} is {type(t).__name__}"
            )
    return out


def check_text(text: Any, *, who: str) -> str:
    """Return ``text`` if it is a str, else raise EmbedderError."""
    if not isinstance(text, str):
        raise EmbedderError(f"{who}.embed_query expects a str, got {type(text).__name__}")
    return text
