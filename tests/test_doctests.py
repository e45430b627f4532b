"""Run the examples in hcg_core's docstrings (the graph math documents itself by example).

A module without examples would pass vacuously, so the modules that carry examples are listed and
each must run at least one: deleting or breaking a module's last example fails here.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import hcg_core

MODULES = sorted(m.name for m in pkgutil.walk_packages(hcg_core.__path__, "hcg_core."))

# The modules whose docstrings show examples: pure functions and data, shown by example.
WITH_EXAMPLES = frozenset(
    {
        "hcg_core.config",
        "hcg_core.corpus",
        "hcg_core.embedders.factory",
        "hcg_core.embedders.hashing",
        "hcg_core.embedders.minilm",
        "hcg_core.embedders.wrapped",
        "hcg_core.eval.baselines",
        "hcg_core.eval.metric",
        "hcg_core.graph_build.dimensions",
        "hcg_core.graph_build.edges",
        "hcg_core.graph_build.evidence",
        "hcg_core.graph_build.extract",
        "hcg_core.graph_build.health",
        "hcg_core.graph_build.statements",
        "hcg_core.graph_build.support",
        "hcg_core.retrieval.compiled",
        "hcg_core.retrieval.hybrid",
        "hcg_core.retrieval.lexical",
        "hcg_core.retrieval.matvec",
        "hcg_core.retrieval.paper",
        "hcg_core.retrieval.passages",
        "hcg_core.spec.generate",
        "hcg_core.spec.offline_vocabulary",
        "hcg_core.spec.yaml_io",
        "hcg_core.testing",
        "hcg_core.types",
    }
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    if name in WITH_EXAMPLES:
        assert result.attempted >= 1, f"{name} is listed as having examples but runs none"


def test_listed_modules_exist():
    assert set(MODULES) >= WITH_EXAMPLES
