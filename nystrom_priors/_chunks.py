"""Long jitted loops in bounded chunks, so that Ctrl-C stops a fit within about a second.

Python handles a signal (``KeyboardInterrupt``) only between bytecodes: a jitted loop, which
runs without the GIL and calls no Python, finishes first, however long it takes. The Burg and
von Neumann sweeps, BCDNPKL's block coordinate descent and the k-means passes therefore
return to Python after about ``WORK`` multiply-adds (tens of milliseconds) with their state,
and the next call resumes exactly there: the results are those of one uninterrupted call,
bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["WORK", "rows_per_call", "resumable_sweeps"]

#: multiply-adds per jitted call (~10-50 ms at 1-3 GFLOP/s per thread)
WORK = 1 << 25

# status codes of the resumable Bregman kernels (nystrom_priors._numba._burg and _von_neumann)
_CONVERGED, _MAX_ITER, _INFEASIBLE, _PAUSED, _CHECK = 0, 1, 2, 3, 4


def rows_per_call(cost_per_row: float) -> int:
    """Rows (or constraints, samples) per call so that a call costs about ``WORK``."""
    return max(1, int(WORK // max(1.0, float(cost_per_row))))


def resumable_sweeps(
    run: Callable[[int, int], tuple[int, int]],
    violation: Callable[[int, int], float],
    n_constraints: int,
    cost_per_constraint: float,
    n_sweeps: int,
    tol: float,
    viol_out: np.ndarray,
    unreachable: Callable[[], bool],
) -> tuple[int, int]:
    """Drive a resumable sweep kernel (``burg_run`` / ``vn_run``) through up to ``n_sweeps``.

    ``run(done, todo)`` calls the kernel with its per-sweep outputs sliced from ``done`` and
    returns ``(sweeps completed, status)``. When a sweep meets ``tol`` (status CHECK), every
    constraint is checked at the final state by ``violation(c0, c1)`` in chunks; that value
    replaces the sweep's entry of ``viol_out``. Returns ``(sweeps, status)`` with status
    converged (0), max sweeps (1) or infeasible (2), as the kernels' one-call drivers do.
    """
    step = rows_per_call(cost_per_constraint)
    done = 0
    while True:
        k, status = run(done, n_sweeps - done)
        done += k
        if status == _PAUSED:
            continue
        if status != _CHECK:
            return done, status
        final = 0.0
        for c0 in range(0, n_constraints, step):
            final = max(final, violation(c0, min(n_constraints, c0 + step)))
        viol_out[done - 1] = final
        if final < tol:
            return done, _CONVERGED
        if unreachable():
            return done, _INFEASIBLE
        if done >= n_sweeps:
            return done, _MAX_ITER
