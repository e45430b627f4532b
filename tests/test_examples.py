"""The examples run offline on the defaults, end to end, each in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Each example loads the MiniLM default in a fresh process.
pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_langchain_quickstart(tmp_path: Path) -> None:
    stdout = run_example("langchain_quickstart.py", "--graph-dir", str(tmp_path / "graph"))
    assert "answer: Clots formed in the fibrillating atrium reach the brain." in stdout
    assert "reloaded retrieval identical: True" in stdout
    assert (tmp_path / "graph" / "manifest.json").is_file()


def test_compare_retrievers() -> None:
    stdout = run_example("compare_retrievers.py", "--k", "3")
    rates = dict(re.findall(r"^\s+(hcg|vector|bm25)\s+(\d+/\d+)$", stdout, flags=re.M))
    assert set(rates) == {"hcg", "vector", "bm25"}, stdout
    assert all(v.endswith("/4") for v in rates.values())


def test_llamaindex_quickstart(tmp_path: Path) -> None:
    stdout = run_example("llamaindex_quickstart.py", "--persist-dir", str(tmp_path / "storage"))
    assert "graph:" in stdout and "answer:" in stdout
    assert "reloaded retrieval identical: True" in stdout
    assert (tmp_path / "storage" / "index_store.json").is_file()
    assert (tmp_path / "storage" / "docstore.json").is_file()
    assert "hcg_causal_graph" in (tmp_path / "storage" / "index_store.json").read_text()
