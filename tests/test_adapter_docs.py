"""Every code block of docs/adapters.md runs, or says why not.

Python blocks run in order within each ``##`` section (one namespace per section), in a folder
whose ``data/`` holds the example corpus. The bundled MiniLM is swapped for the hashing embedder
to keep the suite fast: the snippets' calls and claims do not depend on which offline model runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from docblocks import blocks, run_python

import langchain_hcg._models as lc_models
import llama_index_hcg._models as li_models
from hcg_core.embedders import HashingEmbedder

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adapters.md"


def test_every_block_runs_or_says_why_not() -> None:
    found = blocks(DOC)
    assert len(found) >= 20
    for b in found:
        assert b.lang in ("python", "bash"), f"untagged block at line {b.line}: {b.code[:60]!r}"
        if b.lang != "python":
            assert b.reason, f"a {b.lang} block at line {b.line} is neither run nor marked"


SECTIONS = sorted({b.section for b in blocks(DOC) if b.lang == "python" and not b.reason})


@pytest.mark.parametrize("section", SECTIONS)
def test_python_blocks_run(
    section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    shutil.copytree(ROOT / "examples" / "corpus", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    fast = HashingEmbedder(512)
    monkeypatch.setattr(li_models, "default_embedder", lambda: fast)
    monkeypatch.setattr(lc_models, "default_embedder", lambda: fast)
    assert run_python(DOC, section, {"__name__": "__docs__"})
    capsys.readouterr()
