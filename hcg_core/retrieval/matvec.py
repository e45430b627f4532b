"""Matrix-vector products for one query, computed on the calling thread.

A query's products are small: the query against every chunk vector (dense search) or every
variable vector (node matching), a picked passage against the candidates' term vectors (packing).
That is tens to hundreds of microseconds of arithmetic. But above a size threshold OpenBLAS (the
BLAS in numpy's wheels) hands a matrix-vector product to its thread pool, and waking the pool
costs a scheduler time slice whenever the other cores are busy (other queries, other processes).
On the 2-core development machine, with other jobs running, a 2,048 x 384 float32 product took
12 ms (median of 1,000) through the pool and 33 us on one thread, and these products were most
of a hybrid query's time at 0.2M words (docs/offline-builder.md, "Incremental updates").

So :func:`matvec` runs the product in row blocks that stay below the threshold. Each block is the
same BLAS call (gemv) on fewer rows. The kernels work on small groups of rows (a row computed
alone can differ from the same row computed in a group in its last bit), so every block starts at
a multiple of 64 rows: the rows are grouped exactly as in one call on one thread, and the result
is bit-identical to it (tests/test_matvec.py). The pool splits the rows its own way, so its result
could differ in the last bit; one thread is also the reproducible choice.
"""

from __future__ import annotations

import numpy as np

BLOCK_ELEMENTS = 1 << 18
"""Matrix entries per BLAS call (1 MB of float32), at least ``ROW_MULTIPLE`` rows. numpy's
bundled OpenBLAS kept products of 393k entries on one thread and threaded those of 786k
(measured); a BLAS built with a lower threshold (OpenBLAS's compiled default is 9,216 entries)
still threads these blocks, which costs what one call did. Blocks of 65,536 entries took a
1,155 x 384 product in 7 calls and about twice the time of these (2 calls; measured)."""

ROW_MULTIPLE = 64
"""Rows per block are a multiple of this, so blocks keep the kernels' grouping of rows."""


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for a 2-D ``matrix`` and 1-D ``vector``, in single-threaded blocks.

    >>> m = np.arange(12, dtype=np.float32).reshape(4, 3)
    >>> matvec(m, np.ones(3, np.float32)).tolist()
    [3.0, 12.0, 21.0, 30.0]
    """
    rows, cols = matrix.shape
    step = max(ROW_MULTIPLE, BLOCK_ELEMENTS // max(cols, 1) // ROW_MULTIPLE * ROW_MULTIPLE)
    if rows <= step:
        return matrix @ vector
    out = np.empty(rows, dtype=np.result_type(matrix, vector))
    start = 0
    while start < rows:
        stop = start + step
        if rows - stop == 1:
            # A 1-row product goes to another BLAS routine (numpy's matmul takes a dot product),
            # which can round differently: the last row stays in this block.
            stop = rows
        np.matmul(matrix[start:stop], vector, out=out[start:stop])
        start = stop
    return out
