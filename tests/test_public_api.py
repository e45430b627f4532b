"""The public surface is explicit: each package's ``__all__`` is pinned, and the core stays
framework-free (importing it loads neither LlamaIndex nor LangChain)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HCG_CORE_ALL = {
    "BuildError",
    "BuildResult",
    "CausalEdge",
    "CausalGraph",
    "CausalPath",
    "Chunk",
    "ConfigError",
    "CorruptFileError",
    "Dimension",
    "SourceDocument",
    "DomainSpec",
    "Embedder",
    "EmbedderError",
    "FormatVersionError",
    "HCGError",
    "CausalGraphRetriever",
    "HybridConfig",
    "InputError",
    "LLMBuildConfig",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "Metric",
    "MissingFileError",
    "OfflineBuildConfig",
    "OutcomeConfig",
    "Passage",
    "Relation",
    "RetrievalConfig",
    "RetrievalResult",
    "RetrievedChunk",
    "SpecError",
    "StoreError",
    "StoredGraph",
    "StructuredLLM",
    "Variable",
    "__version__",
    "build_graph",
    "chunk_documents",
    "default_embedder",
    "load_graph",
    "load_inputs",
    "read_spec_file",
    "save_graph",
}
SUBPACKAGE_ALL = {
    "hcg_core.embedders": {
        "CallableEmbedder",
        "HashingEmbedder",
        "MiniLMEmbedder",
        "MultilingualE5Embedder",
        "OpenAIEmbedder",
        "default_embedder",
        "embedder_by_name",
        "embedder_from_name",
    },
    "hcg_core.retrieval": {
        "BM25Index",
        "CausalGraphRetriever",
        "CompiledGraph",
        "bounded_bfs",
        "match_nodes",
        "outcome_cones",
    },
    "hcg_core.spec": {
        "parse_call",
        "spec_from_dict",
        "spec_from_yaml",
        "spec_to_dict",
        "spec_to_yaml",
        "validate_graph",
        "validate_spec",
    },
    "hcg_core.graph_build": {"BuildResult", "build_graph"},
    "hcg_core.audit": {
        "ApplyReport",
        "DEFAULT_LOW_CONFIDENCE",
        "FORMATS",
        "apply_corrections",
        "apply_to_directory",
        "diff_graphs",
        "export_graph",
        "format_diff",
        "metric_overview",
        "read_corrections",
        "render_html",
        "review_flags",
        "supporting_sentence",
        "view_data",
        "write_view",
    },
    "hcg_core.eval": {
        "DEFAULT_BUDGET",
        "EvalReport",
        "QAItem",
        "add_eval_arguments",
        "answer_recall",
        "bm25_system",
        "content_words",
        "context_words",
        "evaluate",
        "fill_budget",
        "load_questions",
        "run_eval",
        "vector_system",
        "word_windows",
    },
    "hcg_core.llm": {
        "COUNTERS",
        "Ledger",
        "OpenAIStructuredLLM",
        "ResilientLLM",
        "ResponseCache",
        "cache_key",
        "classify_bad_request",
        "compact_schema",
        "complete_validated",
        "current_stage",
        "extract_json",
        "parse_reply",
        "run_sync",
        "schema_for",
        "stage",
        "strict_schema",
    },
}
LLAMA_INDEX_HCG_ALL = {
    "DEFAULT_SIMILARITY_TOP_K",
    "HCGDefaultEmbedding",
    "HCGIndex",
    "HCGIndexStruct",
    "HCGRetriever",
    "LlamaIndexStructuredLLM",
    "to_core_embedder",
}
LANGCHAIN_HCG_ALL = {
    "DEFAULT_K",
    "HCGDefaultEmbeddings",
    "HCGRetriever",
    "LangChainStructuredLLM",
    "to_core_embedder",
}


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("hcg_core", HCG_CORE_ALL),
        ("llama_index_hcg", LLAMA_INDEX_HCG_ALL),
        ("langchain_hcg", LANGCHAIN_HCG_ALL),
    ],
)
def test_all_is_pinned(module: str, expected: set[str]) -> None:
    mod = __import__(module)
    names = set(mod.__all__)
    assert names == expected
    for name in names:
        assert hasattr(mod, name), f"{module}.__all__ names {name!r}, which it does not define"


@pytest.mark.parametrize("module", sorted(SUBPACKAGE_ALL))
def test_subpackage_all_is_pinned(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    assert set(mod.__all__) == SUBPACKAGE_ALL[module]
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ names {name!r}, which it does not define"


def test_every_subpackage_is_pinned() -> None:
    import pkgutil

    import hcg_core

    packages = {m.name for m in pkgutil.walk_packages(hcg_core.__path__, "hcg_core.") if m.ispkg}
    assert packages == set(SUBPACKAGE_ALL)


def test_the_default_embedder_factory_is_top_level() -> None:
    import hcg_core
    from hcg_core.embedders import MiniLMEmbedder

    assert isinstance(hcg_core.default_embedder(), MiniLMEmbedder)  # built lazily: no model load


@pytest.mark.integration
def test_core_imports_no_framework() -> None:
    out = _run(
        """
        import json, sys
        import hcg_core, hcg_core.retrieval, hcg_core.store, hcg_core.graph_build, hcg_core.embedders
        print(json.dumps(sorted(m for m in sys.modules
                                if m.split('.')[0] in ('llama_index', 'langchain_core', 'langchain'))))
        """
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == {top!r}:
            raise ImportError(f"No module named {{name!r}}")
        return None
sys.meta_path.insert(0, Block())
try:
    import {adapter}
except ImportError as exc:
    print("IMPORT-ERROR:", exc)
else:
    print("IMPORTED")
"""


@pytest.mark.integration
@pytest.mark.parametrize(
    ("adapter", "top", "extra"),
    [
        ("llama_index_hcg", "llama_index", 'pip install "hcg-rag[llamaindex]"'),
        ("langchain_hcg", "langchain_core", 'pip install "hcg-rag[langchain]"'),
    ],
)
def test_adapter_without_framework_names_the_extra(adapter: str, top: str, extra: str) -> None:
    out = _run(BLOCK.format(adapter=adapter, top=top))
    assert out.returncode == 0, out.stderr
    assert "IMPORT-ERROR:" in out.stdout
    assert extra in out.stdout


def test_the_removed_aliases_are_gone():
    import hcg_core
    import hcg_core.retrieval
    from hcg_core import ports

    for module, name in ((hcg_core, "HCGRetriever"), (hcg_core.retrieval, "HCGRetriever")):
        assert not hasattr(module, name)
    assert not hasattr(ports, "as_matrix")
