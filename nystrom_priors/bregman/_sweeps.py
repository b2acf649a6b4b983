"""The Bregman learners' sweep driver: cyclic projection sweeps run in chunks, with the
tests between chunks that stop them early (infeasible constraints, a tol below round-off).

``run_sweeps`` returns a status: 0 converged (the sweep kernels' own test), 1 max_iter
reached, 2 the constraints look infeasible (a Farkas certificate, ``_diagnostics``), 3 the
sweeps are stationary at round-off while tol asks for less (``at_round_off``), 4 the duals
overflowed float64 (the learner raises; more sweeps would only carry inf on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._diagnostics import _farkas_certificate

# the per-sweep paths are grown in chunks of this many sweeps, not allocated for max_iter
_PATH_CHUNK = 1024
# a sweep's relative dual change and violation at round-off: about eps per dual (the change
# sums nc of them, relative to ||lam||_2, hence sqrt(nc)), with a margin for the
# projections' own error
_ROUND_OFF = 1e3 * float(np.finfo(np.float64).eps)

# the infeasibility test asks the duals' norm to grow over its window by at least this share
# of linear growth: an infeasible set's duals grow linearly in the sweeps (share ~1), a
# feasible set's converge (share -> 0), so a tenth separates them with room on both sides
_LINEAR_SHARE = 0.1
OUTCOMES = (
    "converged",
    "max_iter reached",
    "looks infeasible",
    "stalled at round-off",
    "overflowed",
)


def at_round_off(conv: np.ndarray, viol: np.ndarray, nc: int, before: float, tol: float) -> bool:
    """True when a chunk of two sweeps or more (``conv``, ``viol``: its relative dual changes
    and violations) is stationary at round-off while ``tol`` asks for less: every change and
    violation at round-off level, ``tol`` below that level, and no change smaller than
    ``before`` (the smallest of the chunks before: a run still converging, however slowly,
    keeps setting new lows). Such a tol is unreachable (tol = 0 always is), and the sweeps
    would otherwise run to max_iter, which may be huge."""
    if conv.size < 2 or not np.isfinite(before):
        return False
    floor = _ROUND_OFF * np.sqrt(max(nc, 1))
    small = conv.max() <= floor and viol.max() <= _ROUND_OFF
    return bool(small and tol < floor and conv.min() >= before)


def run_sweeps(
    step: Callable,
    lam: np.ndarray,
    cert: dict,
    max_iter: int,
    tol: float,
    window: int,
    verbose: Any,
    name: str,
) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    """Call ``step(start, n, conv, viol, lamnorm) -> (sweeps, status)`` in chunks of
    ``window`` sweeps (``_PATH_CHUNK`` for 0), ``lam`` being the duals ``step`` updates in
    place; between chunks test the window's dual increment as an (approximate) Farkas
    certificate of infeasibility (``cert``) and the chunk for a stall at round-off below
    ``tol``.

    Returns ``(sweeps done, status, conv, viol, lamnorm)``: the per-sweep relative dual
    changes, largest relative violations and dual norms (the first ``sweeps`` entries)."""
    from .._progress import Progress

    W = window
    # the per-sweep paths grow with the sweeps done, not with max_iter (which may be huge)
    paths = np.zeros((3, min(max_iter, _PATH_CHUNK)))
    done, status = 0, 1
    best = np.inf  # smallest dual change of the chunks before the last (``at_round_off``)
    snap = lam.copy()
    progress = Progress(verbose, max_iter, name, "sweep")
    with progress:
        while done < max_iter:
            n = min(W if W > 0 else _PATH_CHUNK, max_iter - done)
            if done + n > paths.shape[1]:
                grown = min(max_iter, max(done + n, 2 * paths.shape[1]))
                paths = np.concatenate([paths, np.zeros((3, grown - paths.shape[1]))], axis=1)
            conv, viol, lamnorm = paths
            k, status = step(
                done, n, conv[done : done + n], viol[done : done + n], lamnorm[done : done + n]
            )
            done += k
            progress.update(k, violation=viol[done - 1], dual_change=conv[done - 1])
            if status != 1:
                break
            chunk = slice(done - k, done)
            # bounds 1e320 apart: the duals reach inf while the factor stays finite, and the
            # tests below would compare inf with inf until max_iter. The duals only: a bound
            # near float64's top makes the first sweeps' violation inf and the projections
            # bring it back (a ConvergenceWarning names the pair); the learner checks the
            # final violation itself
            if not np.isfinite(lamnorm[done - 1]):
                status = 4
                break
            if at_round_off(conv[chunk], viol[chunk], lam.size, best, tol):
                status = 3
                break
            best = min(best, float(conv[chunk].min(initial=np.inf)))
            if W > 0 and done >= 2 * W and done < max_iter:
                stalled = viol[done - 1] > 0.5 * viol[done - 1 - W]
                # an infeasible set's duals grow without bound, about linearly in the sweeps
                # (by ~W / (done - W) over the window); a feasible one's converge, however
                # slowly its violation falls (cannot-links between near-duplicates: the
                # certificate's trace bound is huge there, yet the set is feasible)
                before = lamnorm[done - 1 - W]
                growing = lamnorm[done - 1] - before >= _LINEAR_SHARE * W / (done - W) * before
                if stalled and growing and _farkas_certificate(lam - snap, cert):
                    status = 2
                    break
            snap = lam.copy()
        progress.close(
            f"{OUTCOMES[status]}, largest relative violation {viol[max(done, 1) - 1]:.3g}"
        )
    conv, viol, lamnorm = paths
    return done, status, conv, viol, lamnorm
