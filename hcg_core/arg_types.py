"""argparse types and options shared by the console script (``cli.py``), ``hcg eval``
(``eval/cli.py``) and the review commands (``audit/cli.py``); here because the console script is
imported by nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from itertools import islice

from .errors import HCGError, MissingFileError


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


# The files `hcg build` reads: a folder holding some, and no graph, is a corpus given for a graph.
CORPUS_SUFFIXES = (".txt", ".md", ".json", ".jsonl")
CORPUS_FILES_LOOKED_AT = 1000
GRAPH_FILES = ("versions", "graph.json", "chunks.jsonl", "spec.yaml")


def corpus_not_graph_hint(exc: HCGError) -> str:
    """What to do when a command that reads a graph was given the corpus folder instead (the
    first-hour mistake: `hcg query my_docs ...`), else ""."""
    path = getattr(exc, "path", None)
    if not isinstance(exc, MissingFileError) or path is None or path.name != "manifest.json":
        return ""
    folder = path.parent
    if any((folder / name).exists() for name in GRAPH_FILES):
        return ""  # a damaged graph: the error itself says what is wrong
    try:  # a bounded look: the first files of the tree are enough to tell
        files = islice((f for f in folder.rglob("*") if f.is_file()), CORPUS_FILES_LOOKED_AT)
        corpus_like = any(f.suffix.lower() in CORPUS_SUFFIXES for f in files)
    except OSError:
        return ""
    if not corpus_like:
        return ""
    return (
        f"; {folder} holds documents, not a graph: build one from it first "
        f"(hcg build {folder} --out GRAPH_DIR), then give GRAPH_DIR here"
    )
