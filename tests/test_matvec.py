"""Query-time matrix-vector products in single-threaded blocks: bit-identical to one BLAS call."""

from __future__ import annotations

import numpy as np
import pytest

from hcg_core.retrieval import matvec as matvec_module
from hcg_core.retrieval.matvec import ROW_MULTIPLE, matvec


@pytest.mark.parametrize("cols", [3, 8, 9])
# 65 and 129 rows leave one row after whole blocks: it must not be a 1-row product of its own.
@pytest.mark.parametrize("rows", [1, 63, 64, 65, 129, 200, 1000])
def test_blocks_give_the_bits_of_one_call(monkeypatch, rows: int, cols: int) -> None:
    # Blocks of ROW_MULTIPLE rows; these matrices (at most 9,000 entries) stay under every
    # OpenBLAS threading threshold, so the one call they are compared with runs on one thread.
    monkeypatch.setattr(matvec_module, "BLOCK_ELEMENTS", ROW_MULTIPLE * cols)
    rng = np.random.default_rng(rows * 100 + cols)
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    for vector in (rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols)):
        got, want = matvec(m, vector), m @ vector
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


def test_empty_and_wide_matrices() -> None:
    assert matvec(np.zeros((0, 4), np.float32), np.ones(4, np.float32)).shape == (0,)
    wide = np.ones((3, 100_000), np.float32)  # more entries per row than a block: one row-block
    assert matvec(wide, np.ones(100_000, np.float32)).tolist() == [100_000.0] * 3
