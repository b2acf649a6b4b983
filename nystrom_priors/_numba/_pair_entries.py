"""Entries of a product at a list of positions, without forming the product.

Private: arrays and scalars only. The pairs' data term reads ``(A B^T)[a_j, b_j]`` at the
constrained entries only; gathering the rows ``A[a]`` and ``B[b]`` first (numpy's fancy
indexing, then ``einsum``) copies two |entries| x width arrays per call, which in the dual
Newton's conjugate-gradient products costs more than the arithmetic.
"""

import numpy as np
from numba import njit


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def row_dots(A, ia, B, ib):
    """``out[j] = A[ia[j]] . B[ib[j]]`` for C-contiguous A, B with the same number of columns."""
    n, w = ia.size, A.shape[1]
    out = np.empty(n)
    for j in range(n):
        ra = A[ia[j]]
        rb = B[ib[j]]
        s = 0.0
        for c in range(w):
            s += ra[c] * rb[c]
        out[j] = s
    return out
