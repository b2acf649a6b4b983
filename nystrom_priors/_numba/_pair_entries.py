"""The pairs' sparse algebra in the dual Newton's products, without temporaries.

Private: arrays and scalars only. The pairs' data term reads ``(A B^T)[a_j, b_j]`` at the
constrained entries only (``row_dots``), and the adjoint multiplies by the symmetric sparse
matrix of the entries (``sym_times``). Gathering the rows ``A[a]`` and ``B[b]`` first (numpy's
fancy indexing, then ``einsum``) copies two |entries| x width arrays per call, and a scipy
sparse product allocates its result, both of which cost more than the arithmetic in the
conjugate-gradient loop (fresh pages fault in: ``docs/design/performance.md``).
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


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def sym_times(indptr, cols, entry, h, K, out):
    """``out = H K`` for the symmetric sparse ``H = sym(sum_q h_q e_{a_q} e_{b_q}^T)``, given
    by ``sym_pattern``'s rows (``indptr``, ``cols``; slot s of row c holds ``h[entry[s]] / 2``
    at column ``cols[s]``). K (n, w) C-contiguous, out (n, w), not sharing memory with K (each
    output row is zeroed, then summed from rows of K, read and written contiguously)."""
    w = K.shape[1]
    for c in range(out.shape[0]):
        row = out[c]
        row[:] = 0.0
        for s in range(indptr[c], indptr[c + 1]):
            coef = 0.5 * h[entry[s]]
            src = K[cols[s]]
            for e in range(w):
                row[e] += coef * src[e]
    return out
