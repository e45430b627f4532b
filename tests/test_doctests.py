"""Run the examples in hcg_core's docstrings (the graph math documents itself by example)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import hcg_core

MODULES = sorted(m.name for m in pkgutil.walk_packages(hcg_core.__path__, "hcg_core."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
