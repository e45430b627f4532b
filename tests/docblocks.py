"""The fenced code blocks of a Markdown doc, for the tests that run them.

A block runs unless the line just before its fence is ``<!-- not run: REASON -->``. A data block
preceded by ``<!-- file: NAME -->`` is the content of that file: the tests write it there before
the doc's shell commands run (``docs/audit.md``'s ``corrections.yaml``, for example).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import NamedTuple

FENCE = re.compile(r"^([ \t]*)```(\w*)\n(.*?)^\1```", re.M | re.S)  # also in list items
NOT_RUN = re.compile(r"<!-- not run: (\S.*?) -->\s*$")
AS_FILE = re.compile(r"<!-- file: (\S+) -->\s*$")


class Block(NamedTuple):
    """One fenced block: its ``##`` section, language tag, code and markers."""

    section: str
    lang: str
    code: str
    reason: str | None  # why it is not run, or None
    file: str | None  # the file it is the content of, or None
    line: int  # the fence's line number (1-based), for messages


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of ``doc``, in order."""
    text = doc.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n")
        section = re.findall(r"^## (.+)$", before, re.M)
        last_line = before.rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(last_line)
        as_file = AS_FILE.search(last_line)
        out.append(
            Block(
                section=section[-1] if section else "",
                lang=m.group(2),
                code=textwrap.dedent(m.group(3)),
                reason=reason and reason.group(1),
                file=as_file and as_file.group(1),
                line=text.count("\n", 0, m.start()) + 1,
            )
        )
    return out


def run_python(doc: Path, section: str, namespace: dict) -> int:
    """Run the runnable python blocks of one ``##`` section in ``namespace``; how many ran.

    A failing block raises ``AssertionError`` naming the block and showing its code.
    """
    ran = 0
    for b in blocks(doc):
        if b.section != section or b.lang != "python" or b.reason:
            continue
        try:
            exec(compile(b.code, f"{doc.name}:{b.line} [{section}]", "exec"), namespace)
        except Exception as exc:  # say which block failed, with the code
            raise AssertionError(
                f"{doc.name}:{b.line} ({section!r}) failed: {exc!r}\n{b.code}"
            ) from exc
        ran += 1
    return ran
