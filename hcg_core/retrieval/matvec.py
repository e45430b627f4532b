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
same BLAS call (gemv) on fewer rows, and a row's result does not depend on the rows beside it
when blocks hold a multiple of 8 rows, so the result is bit-identical to ``matrix @ vector``
computed on one thread (tests/test_matvec.py). The pool itself splits rows differently and can
change a float32 result in its last bit; one thread is also the reproducible choice.
"""

from __future__ import annotations

import numpy as np

BLOCK_ELEMENTS = 1 << 16
"""Matrix entries per BLAS call (256 KB of float32). numpy's bundled OpenBLAS kept products of
393k entries on one thread and threaded those of 786k (measured); a build with OpenBLAS's compiled
default threshold (9,216 entries) still threads these blocks, which costs what one call did."""

_ROW_MULTIPLE = 8  # rows per block are a multiple of this (the kernels' column unrolling)


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for a 2-D ``matrix`` and 1-D ``vector``, in single-threaded blocks.

    >>> m = np.arange(12, dtype=np.float32).reshape(4, 3)
    >>> matvec(m, np.ones(3, np.float32)).tolist()
    [3.0, 12.0, 21.0, 30.0]
    """
    rows, cols = matrix.shape
    step = max(_ROW_MULTIPLE, BLOCK_ELEMENTS // max(cols, 1) // _ROW_MULTIPLE * _ROW_MULTIPLE)
    if rows <= step:
        return matrix @ vector
    out = np.empty(rows, dtype=np.result_type(matrix, vector))
    for start in range(0, rows, step):
        np.matmul(matrix[start : start + step], vector, out=out[start : start + step])
    return out
