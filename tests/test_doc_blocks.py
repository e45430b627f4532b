"""Every code block of README.md and docs/*.md runs, parses, or says why not.

``docs/adapters.md`` has its own test (tests/test_adapter_docs.py). Here, per file:

- ``python`` blocks run in order within each ``##`` section (one namespace per section), in a
  folder whose ``data/`` and ``examples/corpus/`` hold the example corpus and whose ``hcg_graph/``
  is a graph built from it;
- ``bash``/``console`` blocks are ``hcg`` commands, run in order through the CLI's ``main`` in one
  folder per doc (``my_docs/`` holds the example corpus); a ``console`` block's printed lines must
  be what the command prints; a block marked ``<!-- file: NAME -->`` is written to ``NAME``
  first;
- ``json``/``yaml`` blocks parse, and the library's own reader accepts the ones it reads (a
  questions file, a corrections file, a spec, a graph.json);
- ``text`` blocks (diagrams, listings) are only read;
- any other block, or a shell command other than ``hcg``, must be marked
  ``<!-- not run: REASON -->``.

The bundled MiniLM is swapped for the hashing embedder to keep the suite fast: the snippets'
calls and claims do not depend on which offline model runs.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from docblocks import Block, blocks, run_python

import hcg_core
import hcg_core.embedders
import hcg_core.embedders.factory
import langchain_hcg._models as lc_models
import llama_index_hcg._models as li_models
from hcg_core.audit.cli import EXIT_DIFFERENT
from hcg_core.audit.corrections import parse_corrections
from hcg_core.cli import main
from hcg_core.embedders import HashingEmbedder
from hcg_core.eval.runner import load_questions
from hcg_core.spec.yaml_io import spec_from_dict
from hcg_core.store import graph_from_dict, read_manifest
from hcg_core.types import DomainSpec

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "corpus"
DOCS = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").glob("*.md") if p.name != "adapters.md"
)
SHELL = ("bash", "console")
LANGS = ("python", "json", "yaml", "text", *SHELL)


def _name(doc: Path) -> str:
    return doc.relative_to(ROOT).as_posix()


@pytest.fixture
def fast_embedder(monkeypatch: pytest.MonkeyPatch) -> HashingEmbedder:
    """The default embedder, everywhere it is looked up, is a small hashing embedder."""
    fast = HashingEmbedder(512)
    for module in (hcg_core, hcg_core.embedders, hcg_core.embedders.factory, li_models, lc_models):
        monkeypatch.setattr(module, "default_embedder", lambda: fast)
    return fast


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_embedder) -> Path:
    """The current directory: the example corpus at data/, examples/corpus/ and my_docs/."""
    shutil.copytree(CORPUS, tmp_path / "data")
    shutil.copytree(CORPUS, tmp_path / "examples" / "corpus")
    shutil.copytree(CORPUS, tmp_path / "my_docs")  # the docs' stand-in for your documents
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_every_block_is_tagged_and_runs_or_says_why_not(doc: Path) -> None:
    for b in blocks(doc):
        where = f"{_name(doc)}:{b.line}"
        assert b.lang in LANGS, f"{where}: block tagged {b.lang!r} (use one of {LANGS})"
        if b.lang in SHELL and not b.reason:
            for argv in _commands(b):
                assert argv[0] == "hcg", f"{where}: {argv[0]!r} is not run: mark the block"


def test_readme_quick_start_keeps_its_two_shell_blocks() -> None:
    quick = [b for b in blocks(ROOT / "README.md") if b.section == "Quick start"]
    assert [b.lang for b in quick] == ["bash", "bash"]
    assert all(b.reason for b in quick)  # they install packages
    assert "pip install -e ." in quick[0].code and "python -m pytest" in quick[1].code


PY_SECTIONS = [
    (doc, section)
    for doc in DOCS
    for section in dict.fromkeys(
        b.section for b in blocks(doc) if b.lang == "python" and not b.reason
    )
]


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant")
@pytest.mark.parametrize(
    ("doc", "section"), PY_SECTIONS, ids=[f"{_name(d)}[{s}]" for d, s in PY_SECTIONS]
)
def test_python_blocks_run(
    doc: Path, section: str, workdir: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["build", "data", "--out", "hcg_graph", "--quiet"]) == 0  # the default: patched
    assert run_python(doc, section, {"__name__": "__docs__"})
    capsys.readouterr()


def _commands(b: Block) -> list[list[str]]:
    """The commands of a shell block: every line of a bash block, the ``$`` lines of a console one."""
    out = []
    for line in b.code.splitlines():
        if b.lang == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        argv = shlex.split(line, comments=True)
        if argv:
            out.append(argv)
    return out


SHELL_DOCS = [doc for doc in DOCS if any(b.lang in SHELL and not b.reason for b in blocks(doc))]


@pytest.mark.parametrize("doc", SHELL_DOCS, ids=_name)
def test_shell_blocks_run(doc: Path, workdir: Path, capsys: pytest.CaptureFixture) -> None:
    for b in blocks(doc):
        if b.file:  # files the doc shows, e.g. the questions file read by the command above it
            Path(b.file).write_text(b.code, encoding="utf-8")
    ran = 0
    for b in blocks(doc):
        if b.lang not in SHELL or b.reason:
            continue
        for argv in _commands(b):
            capsys.readouterr()
            ok = (0, EXIT_DIFFERENT) if argv[1] == "diff" else (0,)  # diff exits 1 on changes
            assert main(argv[1:]) in ok, f"{_name(doc)}:{b.line}: {shlex.join(argv)}"
            ran += 1
        if b.lang == "console":  # the printed lines are the last command's output
            printed = capsys.readouterr()
            got = printed.out.splitlines() + printed.err.splitlines()
            shown = [line for line in b.code.splitlines()[1:] if not line.startswith("$ ")]
            assert sorted(got) == sorted(shown), f"{_name(doc)}:{b.line} prints other lines"
    assert ran


DATA = [(doc, b) for doc in DOCS for b in blocks(doc) if b.lang in ("json", "yaml")]


@pytest.mark.parametrize(("doc", "block"), DATA, ids=[f"{_name(d)}:{b.line}" for d, b in DATA])
def test_data_blocks_parse(doc: Path, block: Block, tmp_path: Path) -> None:
    data = json.loads(block.code) if block.lang == "json" else yaml.safe_load(block.code)
    assert data
    if isinstance(data, list) and all("question" in item for item in data):
        path = tmp_path / "qa.json"
        path.write_text(block.code, encoding="utf-8")
        assert [q.question for q in load_questions(path)] == [i["question"] for i in data]
    elif isinstance(data, dict) and data.get("format") == "hcg-graph":
        (tmp_path / "manifest.json").write_text(block.code, encoding="utf-8")
        assert read_manifest(tmp_path) == data
    elif isinstance(data, dict) and data.get("format") == "hcg-corrections":
        assert len(parse_corrections(data)) == len(data["corrections"])
    elif isinstance(data, dict) and "metrics" in data:
        spec = spec_from_dict(data)
        assert {m.name for m in spec.metrics} == {k.split("(")[0] for k in data["metrics"]}
    elif isinstance(data, dict) and "edges" in data:
        spec = _doc_spec(doc)
        variables, edges = graph_from_dict(data, spec)
        assert len(variables) == len(data["variables"]) and len(edges) == len(data["edges"])


def _doc_spec(doc: Path) -> DomainSpec:
    """The spec a doc shows (its yaml block with ``metrics``), for the graph.json beside it."""
    for b in blocks(doc):
        if b.lang == "yaml":
            data = yaml.safe_load(b.code)
            if isinstance(data, dict) and "metrics" in data:
                return spec_from_dict(data)
    raise AssertionError(f"{_name(doc)} shows a graph.json but no spec")
