"""Dense solves that report a singular or non-finite matrix by their result, not by raising.

Private: arrays only. Numba raises ``LinAlgError`` from ``np.linalg`` in nopython code, and
inside a ``prange`` worker such an exception surfaces as a bare ``SystemError``: the
cross-validation's kernels call these instead and read the failure from the result.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def cholesky_or_empty(V):
    """The Cholesky factor of V, or a (0, 0) array when V is not positive definite."""
    try:
        return np.linalg.cholesky(V)
    except Exception:  # noqa: BLE001 - numba raises a generic LinAlgError
        return np.zeros((0, 0))


@njit(cache=True, nogil=True)
def solve_or_lstsq(A, B):
    """``A^-1 B`` (C-ordered), or the least-squares solution of minimum norm where ``A`` is
    singular to working precision, or NaN where ``A`` is not finite.

    ``A`` mixes the scale of the kernel (``mu Z``, up to 1e30 for a polynomial kernel on data
    far from the origin) with the ridge's unit scale, so exact singularity happens on valid
    data; an exception here would escape a ``prange`` worker as a ``SystemError``. NaN scores
    make the candidate lose to the prior instead.
    """
    try:
        return np.ascontiguousarray(np.linalg.solve(A, B))  # solve's result is Fortran-ordered
    except Exception:  # noqa: BLE001 - numba raises LinAlgError; any failure means no solve
        pass
    try:
        return np.ascontiguousarray(np.linalg.lstsq(A, B)[0])
    except Exception:  # noqa: BLE001
        return np.full(B.shape, np.nan)
