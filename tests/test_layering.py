"""The layering rules, checked on the source: who may import what, and what the seam modules hold.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a
type-only import still ties the two modules together for a reader).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import networkx as nx

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
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert functions == []


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


# The layers, lowest first: a module imports only modules of its own layer or a lower one. A
# module belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    # what every stage uses: errors, plain types, settings, file and text safety
    (
        "hcg_core.errors",
        "hcg_core.safe_text",
        "hcg_core.types",
        "hcg_core.ports",
        "hcg_core.bounded",
        "hcg_core.safe_files",
        "hcg_core.graph_dir",
        "hcg_core.output_paths",
        "hcg_core.graph_lock",
        "hcg_core.config",
        "hcg_core.prompts",
        "hcg_core.remote_choice",
    ),
    # calling an embedder, and the embedders
    ("hcg_core.embedding", "hcg_core.embedders"),
    # the engine: the graph format, corpus, LLM client, build and retrieval
    (
        "hcg_core.store",
        "hcg_core.spec",
        "hcg_core.corpus",
        "hcg_core.contract",
        "hcg_core.blocks",
        "hcg_core.llm",
        "hcg_core.graph_build",
        "hcg_core.retrieval",
    ),
    # what is built on the engine: evaluation, the audit, the stub server
    ("hcg_core.arg_types", "hcg_core.eval", "hcg_core.audit", "hcg_core.testing"),
    # the console script, and the package's re-exports
    ("hcg_core.cli", "hcg_core"),
    # the framework doors
    ("llama_index_hcg", "langchain_hcg"),
)


@cache
def _import_graph() -> dict[str, frozenset[str]]:
    """Module -> the modules of the three packages it imports, wherever the import stands."""
    names: dict[Path, str] = {}
    for path, _ in _modules():
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[path] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    known = set(names.values())
    graph: dict[str, frozenset[str]] = {}
    for path, tree in _modules():
        name = names[path]
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                # ``from . import x`` imports the module x when there is one, else a name of .
                candidates = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                    for a in node.names
                ]
            else:
                continue
            for target in candidates:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = frozenset(targets)
    return graph


def _layer(module: str) -> int | None:
    """The index in ``LAYERS`` of the longest prefix naming ``module``; None when none does."""
    named = [
        (len(prefix), i)
        for i, layer in enumerate(LAYERS)
        for prefix in layer
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(named)[1] if named else None


def test_every_module_has_a_layer():
    # A new top-level module of hcg_core goes into LAYERS where it belongs.
    assert [m for m in _import_graph() if _layer(m) is None] == []


def _cycles(graph: dict[str, frozenset[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module."""
    digraph = nx.DiGraph([(m, t) for m, targets in graph.items() for t in targets])
    return [c for c in nx.strongly_connected_components(digraph) if len(c) > 1]


def test_imports_go_down_the_layers():
    graph = _import_graph()
    upward = sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if (_layer(target) or 0) > (_layer(module) or 0)
    )
    assert upward == []
    # The two framework doors never import each other.
    assert not any(
        module.split(".")[0] != target.split(".")[0]
        for module, targets in graph.items()
        if _layer(module) == len(LAYERS) - 1
        for target in targets
        if _layer(target) == len(LAYERS) - 1
    )


def test_no_import_cycle_between_modules():
    cycles = _cycles(_import_graph())
    assert cycles == []


def test_imports_inside_functions_and_for_type_checking_count():
    graph = _import_graph()
    # embedder_by_name imports the OpenAI embedder when one is asked for
    assert "hcg_core.embedders.openai" in graph["hcg_core.embedders.factory"]
    # blocks names the Embedder protocol for its annotations only
    assert "hcg_core.ports" in graph["hcg_core.blocks"]


def test_the_cycle_finder_finds_a_cycle():
    tree = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert _cycles(tree) == [{"a", "b", "c"}]
    assert _cycles({**tree, "c": frozenset()}) == []
