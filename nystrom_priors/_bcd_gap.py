"""BCDNPKL's certified stopping: a Lagrange dual bound of the SDP and the sweep loop using it.

The boundary SDP (see :mod:`nystrom_priors.npkl`) is ``min_{Z >= 0} tr(Dt Z) + sum_p h(f_p)``
with ``f_p = T_p Z_ij`` over the k unordered pairs and ``h = C loss``. Fenchel-Young,
``h(f) >= -mu f - h*(-mu)`` for every multiplier mu, gives for every Z ⪰ 0

    P(Z) >= <Dt - B(mu), Z> + D(mu),   B(mu) = sum_p mu_p T_p (e_i e_j^T + e_j e_i^T) / 2,

so ``D(mu) = -sum_p h*(-mu_p)`` is a lower bound of the optimum whenever ``Dt - B(mu)`` is
PSD: ``sum_p (mu_p - mu_p^2 / (4C))`` for the square loss (mu free) and the squared hinge
(mu >= 0), ``sum_p mu_p`` for the hinge (0 <= mu <= C). The multipliers are read off the
current factor V: ``mu_p = -h'(f_p)`` (the optimality condition, exact at the optimum); for
the hinge, whose derivative jumps at f = 1, the column updates' box-QP multipliers. They are
then scaled by the best ``s`` in ``[0, t]`` (a factor keeps the box and sign constraints),
``t <= 1`` the largest factor keeping ``Dt - t B`` PSD: the generalized eigenvalue
``t = 1 / lambda_max(B, Dt)`` for a small l, otherwise
``t = delta / (delta - lambda_min(Dt - B))`` from ``Dt ⪰ delta I`` (the Schur complement of
``Delta ⪰ delta I``) and the smallest eigenvalue of ``Dt - B`` (dense LAPACK up to a few
thousand constrained samples, one Lanczos eigenvalue above). The relative gap
``(P - D) / |P|`` bounds the relative distance of the objective to the SDP optimum.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._feature_names import _user_stacklevel
from .exceptions import ConvergenceWarning

# sweeps per allocation of the objective path (it grows as sweeps are done, not with max_iter)
_PATH_CHUNK = 1024
# past this many sweeps the gap is also taken every as many sweeps, and the descent gives up
# where it fell by less than 1% over them: a tiny C's gap stayed at 0.99 for 100,000 sweeps,
# and a max_iter of 10**9 ran for a day
_CRAWL_SWEEPS = 10_000

# constrained samples up to which the generalized eigenvalue of the tightest t is taken by
# dense LAPACK (three l x l arrays)
_DENSE_LIMIT = 800
# ... and up to which the smallest eigenvalue of Dt - B is (one l x l array built in place,
# 72 MB at the limit): ARPACK's, at the low end of a clustered spectrum, converges slowly or
# not at all (no certificate, sweeps to max_iter)
_DENSE_SMALLEST_LIMIT = 3000


def multipliers(V, pos, sgn, C, loss, dual, order):
    """mu_p for the k pairs (rows ``pos`` of V, signs ``sgn``), see the module docstring."""
    f = sgn * np.einsum("pr,pr->p", V[pos[:, 0]], V[pos[:, 1]])
    if loss == 0:
        return 2.0 * C * (1.0 - f)
    if loss == 2:
        return 2.0 * C * np.maximum(1.0 - f, 0.0)
    k = pos.shape[0]
    both = np.empty(2 * k)
    both[order] = dual  # dual is in the CSR order of both directions of every pair
    return np.clip(0.5 * (both[:k] + both[k:]), 0.0, C)


def _smallest_dense(A, Wt, B):
    """The smallest eigenvalue of ``A - Wt Wt^T - B`` (A, B sparse l x l) in one dense array
    updated in place (a rank-r BLAS update of its upper triangle, which LAPACK reads, then
    B's entries), so the certificate adds one array to the fit's peak; NaN if LAPACK fails."""
    from scipy.linalg import LinAlgError, eigh
    from scipy.linalg.blas import dsyrk

    M = A.toarray(order="F").astype(np.float64, copy=False)  # F: dsyrk works in place
    M = dsyrk(-1.0, np.asfortranarray(Wt, dtype=np.float64), beta=1.0, c=M, overwrite_c=1)
    Bc = B.tocoo()  # from CSR: each (row, col) once, repeated pairs already summed
    M[Bc.row, Bc.col] -= Bc.data
    try:
        return float(
            eigh(
                M, lower=False, eigvals_only=True, subset_by_index=[0, 0],
                overwrite_a=True, check_finite=False,
            )[0]
        )  # fmt: skip
    except LinAlgError:
        return np.nan


def relative_gap(system, pos, sgn, V, C, loss, delta, primal, dual, order):
    """Relative duality gap ``(P - D(t mu)) / |P|`` at V (>= 0 up to round-off; ``inf`` if the
    eigenvalue solver fails)."""
    import scipy.sparse as sp

    mu = multipliers(V, pos, sgn, C, loss, dual, order)
    l = V.shape[0]
    w = np.concatenate([mu * sgn, mu * sgn]) / 2.0
    B = sp.csr_matrix((w, (np.r_[pos[:, 0], pos[:, 1]], np.r_[pos[:, 1], pos[:, 0]])), (l, l))
    Wt = system.Wt
    if l <= _DENSE_LIMIT:
        from scipy.linalg import LinAlgError, eigh

        Dt = system.A.toarray() - Wt @ Wt.T
        try:
            theta = eigh(B.toarray(), Dt, eigvals_only=True, subset_by_index=[l - 1, l - 1])[0]
        except LinAlgError:  # Dt not numerically positive definite: no certificate
            return np.inf
        t = 1.0 if theta <= 1.0 else 1.0 / theta
    elif l <= _DENSE_SMALLEST_LIMIT:
        lam = _smallest_dense(system.A, Wt, B)
        if not np.isfinite(lam):
            return np.inf
        t = 1.0 if lam >= 0.0 else delta / (delta - lam)
    else:
        from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

        A = system.A
        op = LinearOperator((l, l), matvec=lambda x: A @ x - Wt @ (Wt.T @ x) - B @ x)
        # a fixed start: ARPACK's own is random, and the gap decides when the sweeps stop,
        # so the same random_state gave different models
        v0 = np.random.default_rng(0).standard_normal(l)
        try:
            lam = eigsh(op, k=1, which="SA", tol=1e-10, v0=v0, return_eigenvectors=False)[0]
        except ArpackError:
            return np.inf
        t = 1.0 if lam >= 0.0 else delta / (delta - lam)
    if loss == 1:
        lower = t * np.sum(mu)
    else:  # D(s mu) is a concave quadratic in s: its best s in [0, t]
        with np.errstate(over="ignore"):
            a, q = np.sum(mu), np.sum(mu * mu) / (4.0 * C)
        if not np.isfinite(q):  # a huge C: mu ~ C, whose square overflows
            m = float(np.max(np.abs(mu)))
            q = m * (m / (4.0 * C)) * float(np.sum((mu / m) ** 2))
        s = min(t, a / (2.0 * q)) if q > 0.0 and a > 0.0 else (t if a > 0.0 else 0.0)
        lower = s * a - s * s * q
    return max(primal - lower, 0.0) / max(abs(primal), 1e-300)


def run(args, max_iter, tol, certify, verbose, gap, hint="", settings=""):
    """Sweep until certified (``certify``: ``gap()`` <= tol, checked whenever the relative
    objective decrease of a sweep falls below the current threshold, which then shrinks
    tenfold) or, without ``certify``, until the relative decrease is <= tol.

    A sweep whose objective is not finite (the descent overflowed float64, e.g. at C = 1e20
    with a small fixed delta) raises a ValueError naming ``settings``; V is then garbage and
    the certificate's eigensolver would only fail on it.

    Returns (objective path, sweeps, converged, relative gap at the end)."""
    from ._chunks import WORK
    from ._numba._bcd import bcd_run, objective
    from ._progress import Progress

    # the objective path grows with the sweeps done, not with max_iter (which may be huge)
    obj = np.zeros(min(max_iter, _PATH_CHUNK) + 1)
    dual = args[-1]
    obj[0] = objective(*args[:-1])
    state = np.zeros(1, dtype=np.int64)
    n, converged, threshold, value, stalled = 0, False, tol, np.inf, False
    crawled, crawl_best, crawl_next = False, np.inf, _CRAWL_SWEEPS
    with Progress(verbose, max_iter, "BCDNPKL sweeps", "sweep") as progress:
        while n < max_iter and not converged:
            if n + 1 == obj.size:  # full: room for twice as many sweeps, up to max_iter
                grown = min(max_iter, 2 * n) + 1
                obj = np.concatenate([obj, np.zeros(grown - obj.size)])
            todo = min(max_iter, obj.size - 1) - n
            done, status = bcd_run(*args[:-1], todo, threshold, obj[n:], dual, state, WORK)
            if done:
                n += done
                progress.update(done, objective=obj[n])
            if not np.isfinite(obj[n]):
                raise ValueError(
                    f"BCDNPKL's block coordinate descent overflowed float64 after {n} sweeps "
                    f"(objective {obj[n]}) at {settings}: the loss term is beyond float64's "
                    "range there. Use a smaller C or a larger delta."
                )
            fresh = status == 1 and certify  # the gap at this V is taken here, once
            if fresh:
                value = gap()
                converged = value <= tol
                # stalled at round-off without a certificate: give up rather than spin
                if not converged and threshold < 1e-15:
                    stalled = True
                    break
                threshold *= 0.1
            else:
                converged = status == 1
            if certify and not converged and n >= crawl_next:
                value = value if fresh else gap()
                if not value < 0.99 * crawl_best:
                    crawled = True
                    break
                crawl_best, crawl_next = value, n + _CRAWL_SWEEPS
        progress.close(f"objective {obj[n]:.6g}, converged={converged}")
    if not certify or not np.isfinite(value):
        value = gap()
    if not converged:
        what = "relative duality gap" if certify else "relative objective decrease"
        last = value if certify else abs(obj[n - 1] - obj[n]) / abs(obj[n])
        if certify and not np.isfinite(last):
            # checked first: a run that also stalled would otherwise blame C for it
            why = (
                f"could not certify its result after {n} sweeps: the duality gap's eigenvalue "
                "problem failed (the dual matrix of the constrained samples not numerically "
                f"positive definite, or, above {_DENSE_SMALLEST_LIMIT:,} of them, ARPACK not "
                "converging), so more sweeps (max_iter) cannot help. The kernel is the "
                "descent's; fewer constrained samples (n_constraints, or fewer pairs) keep the "
                "certificate dense"
            )
        elif crawled:
            why = (
                f"stopped after {n} sweeps: its relative duality gap ({last:.3g}, tol={tol}) "
                f"fell by less than 1% over the last {_CRAWL_SWEEPS:,} sweeps, so more sweeps "
                "(max_iter) would not certify it; increase tol, or C (or delta) where the loss "
                "is negligible against the graph term"
            )
        elif stalled and not last < 1.0:
            # a relative gap of 1 or more certifies nothing: with a tiny C (and the default
            # delta = C / 2) the loss is negligible against the graph term at round-off
            why = (
                f"stalled at round-off after {n} sweeps with no usable certificate (relative "
                f"duality gap {last:.3g}): the loss weight C is too small against the graph "
                "term; use a larger C (or delta)"
            )
        elif stalled:
            why = (
                f"stalled at round-off after {n} sweeps (relative duality gap {last:.3g}, "
                f"tol={tol}): more sweeps cannot lower it; increase tol"
            )
        else:
            why = (
                f"did not converge in max_iter={max_iter} sweeps (last {what} {last:.3g}, "
                f"tol={tol}); increase max_iter or tol"
            )
        warnings.warn(
            f"BCDNPKL {why}{hint}.",
            ConvergenceWarning,
            stacklevel=_user_stacklevel(),
        )
    return obj[: n + 1].copy(), n, converged, float(value)
