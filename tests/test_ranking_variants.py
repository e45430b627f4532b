"""The trigram-redundancy MMR of benchmarks/ranking_variants.py: it demotes repeated running
text, not text that only shares topic words."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

from hcg_core.types import Chunk

ROOT = Path(__file__).resolve().parents[1]


def _variants():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "ranking_variants", ROOT / "benchmarks" / "ranking_variants.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.pop(0)


REPEAT = "aspirin thins the blood and lowers the risk of heart attack in older adults"
CHUNKS = [
    Chunk("a", REPEAT),
    Chunk("copy", REPEAT + " today"),  # the same running text again
    Chunk("b", "in older adults aspirin raises bleeding risk, so blood tests guide the heart dose"),
]


def test_trigram_redundancy_skips_repeated_text_not_shared_words():
    rv = _variants()
    ranker = rv._TrigramRedundancy(CHUNKS, None)
    ids = [c.chunk.id for c in ranker.rank("aspirin blood heart risk", None, k=3).chunks]
    # "b" shares the topic words but no running text: it comes before the copy.
    assert ids[:2] == ["a", "b"] or ids[:2] == ["copy", "b"]
    assert set(ids) == {"a", "copy", "b"}


def test_trigram_redundancy_is_a_listed_variant():
    rv = _variants()
    cls, cfg = rv.VARIANTS["MMR by shared word trigrams (redesign)"]
    assert cls is rv._TrigramRedundancy and cfg == rv.DEFAULT
    assert np.isclose(cfg.diversity, 0.5)
