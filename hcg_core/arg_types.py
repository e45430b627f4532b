"""argparse types shared by the console script (``cli.py``) and the review commands
(``audit/cli.py``); here because the console script is imported by nothing."""

from __future__ import annotations

import argparse


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
