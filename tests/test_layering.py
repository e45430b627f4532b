"""The layering rules, checked on the source: who may import what, and what the seam modules hold."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hcg_core", "llama_index_hcg", "langchain_hcg")
# Private names one module still takes from another: each is a known debt, listed so that no new
# one appears silently. (llm_tiers reuses the spec assembler's fuzzy matcher.)
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


@cache
def _modules() -> tuple[tuple[Path, ast.Module], ...]:
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for pkg in PACKAGES
        for path in sorted((ROOT / pkg).rglob("*.py"))
    )


def test_no_private_names_imported_across_modules():
    found = set()
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.add((path.relative_to(ROOT).as_posix(), alias.name))
    assert found == KNOWN_PRIVATE_IMPORTS


def test_ports_holds_only_protocols():
    tree = ast.parse((ROOT / "hcg_core" / "ports.py").read_text(encoding="utf-8"))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert {c.name for c in classes} == {"Embedder", "StructuredLLM"}
    assert all(any(getattr(b, "id", "") == "Protocol" for b in c.bases) for c in classes)
    # The only function is the module __getattr__ that keeps old import paths working.
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert functions == ["__getattr__"]


def test_nothing_imports_the_console_script():
    for path, tree in _modules():
        if path.name == "cli.py" and path.parent.name == "hcg_core":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = (node.module or "").split(".")
                # from ..cli import x (inside a subpackage) or from hcg_core.cli import x
                assert not (
                    (
                        node.level == 2
                        and target == ["cli"]
                        and path.parent.parent.name == "hcg_core"
                    )
                    or node.module == "hcg_core.cli"
                ), f"{path.relative_to(ROOT)} imports the console script"


def test_old_import_paths_still_work():
    from hcg_core import embedding, ports, types
    from hcg_core.graph_build import BuildResult

    assert ports.as_matrix is embedding.as_matrix
    assert ports.embed_texts is embedding.embed_texts
    assert BuildResult is types.BuildResult
