"""Structure-aware sentences: Markdown headings, list items and table rows are units of their own,
and heading words never reach a variable or a mechanism of the offline graph (issue 27, item 3)."""

from __future__ import annotations

import re

import pytest

from hcg_core.corpus import chunk_documents
from hcg_core.embedders import HashingEmbedder
from hcg_core.graph_build import build_graph
from hcg_core.graph_build.extract import split_sentences, text_units
from hcg_core.types import SourceDocument

# The user trial's shape: incident reports whose "## Root cause" / "## Impact" headings are
# directly followed by text on the next line (no blank line after the heading).
INCIDENT = """# Incident {n}: {title}
## Root cause
{cause} caused {failure}. {failure_cap} leads to {effect}.
## Impact
{effect_cap} causes {impact}. Customers noticed {impact}.
## Follow-up
- Monitoring of {cause_l} reduces {failure}.
- {failure_cap} results in {impact}.
"""
CASES = [
    (
        "Expired certificate",
        "An expired certificate",
        "failed handshakes",
        "login errors",
        "support tickets",
    ),
    ("Full disk", "A full disk", "write failures", "data loss", "customer complaints"),
    ("Cache expiry", "Cache expiry", "database overload", "slow pages", "abandoned carts"),
    ("Bad deploy", "A bad deploy", "service crashes", "login errors", "support tickets"),
    ("Memory leak", "A memory leak", "service crashes", "slow pages", "abandoned carts"),
    ("DNS outage", "A DNS outage", "failed handshakes", "data loss", "customer complaints"),
]
HEADING_WORDS = {"root", "impact", "follow", "incident"}


def _report(n, title, cause, failure, effect, impact, *, underline=False):
    text = INCIDENT.format(
        n=n,
        title=title,
        cause=cause,
        cause_l=cause.lower(),
        failure=failure,
        failure_cap=failure.capitalize(),
        effect=effect,
        effect_cap=effect.capitalize(),
        impact=impact,
    )
    if underline:  # the same report as plain text, headings underlined instead of marked
        text = re.sub(r"^#+ (.*)$", lambda m: f"{m[1]}\n{'=' * len(m[1])}", text, flags=re.M)
    return text


def _words(name: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]+", name)}


def test_units_of_a_markdown_text():
    text = "## Root cause\nThe cache expired. It failed.\n- salt raises risk\n| a | b |\n|---|---|"
    units = text_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("heading", "Root cause"),
        ("sentence", "The cache expired."),
        ("sentence", "It failed."),
        ("item", "salt raises risk"),
        ("row", "a | b"),
    ]
    assert [text[u.start : u.end] for u in units[:2]] == ["Root cause", "The cache expired."]
    assert split_sentences(text) == [
        "The cache expired.",
        "It failed.",
        "salt raises risk",
        "a | b",
    ]


def test_underlined_headings_and_wrapped_lines():
    text = "Notes on salt\n\nRoot cause\n----------\nSalt raises blood\npressure.\n\n***\nEnd."
    assert [(u.kind, u.text) for u in text_units(text)] == [
        ("sentence", "Notes on salt"),
        ("heading", "Root cause"),
        ("sentence", "Salt raises blood pressure."),
        ("sentence", "End."),
    ]
    # A list item holds several sentences; a line not marked as one continues it.
    assert [u.text for u in text_units("1. First one. Second\n   one.\n2) Two")] == [
        "First one.",
        "Second one.",
        "Two",
    ]


def test_a_number_opening_one_line_of_prose_is_not_a_list_mark():
    assert split_sentences("12. yüzyılın düşünürü. Bu çalışma.") == [
        "12. yüzyılın düşünürü.",
        "Bu çalışma.",
    ]


def _graph(docs):
    return build_graph(chunk_documents(docs), embedder=HashingEmbedder(dim=256), tier="XS").graph


def _heading_words_in(graph) -> set[str]:
    found = set()
    for v in graph.variables:
        found |= (_words(v.name) | {w for e in v.entities for w in _words(e)}) & HEADING_WORDS
    for e in graph.edges:
        found |= _words(e.mechanism) & HEADING_WORDS
    return found


@pytest.mark.parametrize("underline", [False, True], ids=["markdown", "txt-underlined"])
def test_heading_words_never_enter_a_variable_or_mechanism(underline):
    suffix = "txt" if underline else "md"
    docs = [
        SourceDocument(f"incident-{n}.{suffix}", _report(n, *case, underline=underline))
        for n, case in enumerate(CASES)
    ]
    graph = _graph(docs)
    assert len(graph.edges) >= 5  # the statements under the headings still make edges
    assert _heading_words_in(graph) == set()
    for e in graph.edges:
        assert "#" not in e.mechanism and "==" not in e.mechanism, e.mechanism


def test_the_same_reports_with_unmarked_headings_leak_them():
    """The control: with the heading marks removed, the heading lines read as prose and glue onto
    the next sentence, as every heading did before; the check above would see it."""
    docs = [
        SourceDocument(f"incident-{n}.txt", re.sub(r"^#+ ", "", _report(n, *case), flags=re.M))
        for n, case in enumerate(CASES)
    ]
    assert _heading_words_in(_graph(docs)) & {"root", "impact"}
