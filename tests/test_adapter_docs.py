"""Every code block of docs/adapters.md runs, or says why not.

Python blocks run in order within each ``##`` section (one namespace per section), in a folder
whose ``data/`` holds the example corpus. The bundled MiniLM is swapped for the hashing embedder
to keep the suite fast: the snippets' calls and claims do not depend on which offline model runs.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import langchain_hcg._models as lc_models
import llama_index_hcg._models as li_models
from hcg_core.embedders import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adapters.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not run: (\S.*?) -->\s*$")


def blocks() -> list[tuple[str, str, str, str | None]]:
    """(section title, language, code, not-run reason) for every fenced block, in order."""
    text = DOC.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n")
        section = re.findall(r"^## (.+)$", before, re.M)
        last_line = before.rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(last_line)
        out.append(
            (section[-1] if section else "", m.group(1), m.group(2), reason and reason.group(1))
        )
    return out


def test_every_block_runs_or_says_why_not() -> None:
    found = blocks()
    assert len(found) >= 20
    for section, lang, code, reason in found:
        assert lang in ("python", "bash"), f"untagged block in {section!r}: {code[:60]!r}"
        if lang != "python":
            assert reason, f"a {lang} block in {section!r} is neither run nor marked: {code!r}"


SECTIONS = sorted({s for s, lang, _, reason in blocks() if lang == "python" and not reason})


@pytest.mark.parametrize("section", SECTIONS)
def test_python_blocks_run(
    section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    shutil.copytree(ROOT / "examples" / "corpus", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    fast = HashingEmbedder(512)
    monkeypatch.setattr(li_models, "default_embedder", lambda: fast)
    monkeypatch.setattr(lc_models, "default_embedder", lambda: fast)
    namespace: dict = {"__name__": "__docs__"}
    ran = 0
    for sec, lang, code, reason in blocks():
        if sec != section or lang != "python" or reason:
            continue
        try:
            exec(compile(code, f"{DOC.name} [{section}] block {ran + 1}", "exec"), namespace)
        except Exception as exc:  # say which block failed, with the code
            pytest.fail(f"block {ran + 1} of {section!r} failed: {exc!r}\n{code}")
        ran += 1
    assert ran
    capsys.readouterr()
