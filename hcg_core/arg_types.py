"""argparse types and options shared by the console script (``cli.py``), ``hcg eval``
(``eval/cli.py``) and the review commands (``audit/cli.py``); here because the console script is
imported by nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (a negative limit would slice from the end).

    >>> non_negative_int("3")
    3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (0 must not silently mean a default).

    Its own words for every refusal: ``--k -1`` said "must be 0 or more", which 0 is not.

    >>> positive_int("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '-1' must be at least 1
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def number_type(
    accepts: Callable[[float], bool], must_be: str, noun: str = "a number"
) -> Callable[[str], float]:
    """An argparse type: a float that ``accepts`` (else "must be ``must_be``").

    ``accepts`` must be false for NaN (as a comparison is), so a NaN never passes silently.

    >>> number_type(lambda x: 0 <= x <= 1, "a number in [0, 1]")("0.5")
    0.5
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be {must_be}")
        return value

    return parse


def add_embedder_arguments(parser: argparse.ArgumentParser, default_help: str) -> None:
    """``--embedder``, ``--embedder-base-url`` and ``--allow-remote`` (``remote_choice``)."""
    from .embedders.factory import EMBEDDER_HELP

    parser.add_argument("--embedder", default=None, help=f"{EMBEDDER_HELP}; {default_help}")
    parser.add_argument(
        "--embedder-base-url",
        default=None,
        help="base URL of an OpenAI-compatible embeddings server (key from OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow an openai: embedder or --llm-model without a base URL, which sends text to "
        "OpenAI's API (or OPENAI_BASE_URL); hcg is offline unless told otherwise",
    )
