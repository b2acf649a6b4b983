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
    """``A^-1 B`` (C-ordered) by LU; where LU meets an exactly zero pivot, the least-squares
    solution of minimum norm; NaN where that fails too (``A`` not finite).

    The cross-validation's ridge system mixes the kernel's scale (``mu Z``, up to 1e30 for a
    polynomial kernel on data far from the origin) with the ridge's unit scale, so an exactly
    singular ``A`` happens on valid data, and an exception would escape a ``prange`` worker
    as a ``SystemError``. A nearly singular ``A`` is solved by LU like any other: its scores
    are then noisy, not missing. NaN scores make the candidate lose to the prior.
    """
    try:
        return np.ascontiguousarray(np.linalg.solve(A, B))  # solve's result is Fortran-ordered
    except Exception:  # noqa: BLE001 - numba raises LinAlgError; any failure means no solve
        pass
    try:
        return np.ascontiguousarray(np.linalg.lstsq(A, B)[0])
    except Exception:  # noqa: BLE001
        return np.full(B.shape, np.nan)
