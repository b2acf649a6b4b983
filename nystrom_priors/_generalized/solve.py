"""J at one lam (solver choice, warm starts, Newton's cold starts, fallbacks) and along a
warm-started lam path."""

from __future__ import annotations


import numpy as np

from .apg import _solve
from .barrier_dual import _solve_barrier_dual
from .dual_newton import _solve_newton
from .ipm import _solve_ipm
from .problem import _Coords, _Problem, _closed_form_V

# lam / mu_max^2 outside [_LAM_RANGE, 1 / _LAM_RANGE] is numerically the limit problem: below,
# the weights lam + mu_i mu_j of J differ by less than the round-off of M's eigenvalues
# (~eps mu_max each); above, S0 is optimal to round-off (see _prior_gap), while the solvers'
# scaled coordinates overflow (lam = 1e300: LinAlgError) or, below, blow up and the
# Newton's former lam continuation descended one decade per stage (lam = 1e-300: minutes, m = 20)
_LAM_RANGE = float(np.finfo(np.float64).eps)

# Newton's cold starts below mu_max^2 * this get the barrier-smoothed dual Newton (_solve_lam)
_HOMOTOPY_START = 1e-4
# ... after this many cold steps: one step solves the dual exactly when the PSD constraint is
# inactive; otherwise a cold start rarely beats the barrier dual (see _solve_lam)
_COLD_STEPS = 1


def _auto_solver(prob: "_Problem") -> str:
    """Newton on the dual when it is the smaller problem (fewer constrained entries than
    entries of S), APG on the primal otherwise.

    Measured, certified 1e-6 at lam = mu_max^2 * 1e-8 / 1e-10 (Table-1 data, 100 labels):
    digits 4-9, m = 36: Newton 62 / 186 steps, APG 92 / 26 (0.39 / 1.9 s vs 0.04 / 0.01 s);
    german, m = 100: Newton 0.39 / 0.96 s, APG 0.19 / 0.15 s; digits, m = 180: Newton 45 / 85
    steps (0.73 / 1.7 s), APG 560 / 590 (2.7 / 1.9 s); digits, m = 400: Newton 58 / 81 steps
    (3.2 / 5.4 s), APG 374 / 600 (9.5 / 11.0 s; the other APG counts predate the tighter
    certificate, which stops APG earlier: 656 / 843 here before). With more labels than
    landmarks the labels term is compressed to r <= m rows (``_compress_labels``), so the
    dual is as large as the primal and APG takes it (20,000 x 50 blobs, m = 500, 800 labels,
    warm-started path over 13 lam to a 1e-3 gap: APG 9.2 s, Newton 57.6 s).
    """
    n_dual = 0
    if prob.has_labels:
        l = prob.El.shape[0]
        n_dual += l * (l + 1) // 2
    if prob.has_pairs:
        n_dual += int(prob.a.size)
    return "newton" if n_dual < prob.m * (prob.m + 1) // 2 else "apg"


def _rescale_dual(R, factor: float):
    """The dual warm start for ``lam * factor``: same ``X(R) = S0 - A*(R) / lam``, i.e. the same
    primal. The unscaled R pushes X ``1 / factor`` times further (measured on restricted CV
    folds along the 10x grid: 2.1x fewer Newton steps, 3.4x fewer eigendecompositions)."""
    return tuple(None if r is None else r * factor for r in R)


def _prior_gap(prob: "_Problem", lam: float) -> float:
    """Certified relative gap of S = S0: J is 2 lam-strongly convex and grad J(S0) is the data
    term's gradient alone, so ``J(S0) - min J <= ||grad J(S0)||^2 / (4 lam)`` (the unconstrained
    minimum bounds the PSD one). No solver coordinates are formed: finite at any lam."""
    g = prob.grad(prob.S0, lam)
    J0 = prob.objective(prob.S0, lam)
    return float(np.sum(g * g)) / (4.0 * lam) / max(J0, 1e-300)


def _solve_lam(prob: "_Problem", lam: float, solver: str, tol: float, max_iter: int, S_warm=None,
               R_warm=None, out: dict | None = None):
    """Solve J at one lam; returns (S, n_iter, certificate, converged, dual R or None).

    ``out`` (a dict, optional) receives ``"eig"``: ``(vals, Q)`` with ``S = Q diag(vals) Q^T``
    when the solver ends with S in that form (the dual solvers, or S0 with ``prob.S0_eig``), so
    that the factor of S costs no further eigh (``psd._factor``); no key otherwise.

    ``"auto"`` resolves through ``_auto_solver``; ``"ipm"`` (labels only) runs ``_solve_ipm``
    and, should its line search stall, APG from its last iterate. ``"newton"`` runs the dual semismooth
    Newton-CG; a cold start below ``_HOMOTOPY_START * mu_max^2`` that does not certify within
    ``_COLD_STEPS`` steps continues with the barrier-smoothed dual Newton (``barrier_dual.py``),
    the iterations of both counted; if it still cannot certify ``tol`` its last primal iterate,
    always PSD, warm-starts APG. Above
    ``mu_max^2 / _LAM_RANGE`` S0 itself is returned when ``_prior_gap`` certifies it.
    """
    if lam * _LAM_RANGE > prob.mu_max**2:
        gap = _prior_gap(prob, lam)
        if gap <= tol:
            if out is not None and prob.S0_eig is not None:
                out["eig"] = prob.S0_eig  # S0 is PSD: its eigenvalues are the factor's
            return prob.S0, 0, gap, True, None
    if solver == "auto":
        solver = _auto_solver(prob)
    if solver == "newton":
        cap = min(max_iter, 100)
        cold_small = R_warm is None and lam < _HOMOTOPY_START * prob.mu_max**2
        # a cold start at small lam converges in one step when the PSD constraint is inactive
        # there (MNIST-sized synthetic, m = 1000, 1e-6); otherwise the semismooth steps mostly
        # stall (digits, m = 400, 1e-6 gap at mu_max^2 * 1e-10: 100 steps without progress). So
        # it gets _COLD_STEPS, then the barrier dual, whose steps do not grow as lam shrinks:
        # Table-1 german / digits / splice and digits m = 400 at mu_max^2 * 1e-12, 45 / 52 / 55
        # / 59 steps where the lam continuation this replaced (descending the grid from
        # mu_max^2 * 1e-4, each stage to a 0.1 gap) took 90 / 169 / 112 / 1356, 1.06-4.95x
        # faster except splice at 1e-8 (0.33x, 16 steps against 12). On pairs (german / digits,
        # 500 pairs) 0.36-0.74x the continuation's speed, which did not certify the tests' small
        # pairs problems (bench_generalized.py --small-lam, results section 9)
        first_cap = min(cap, _COLD_STEPS) if cold_small else cap
        S, R, it, cert, ok = _solve_newton(prob, lam, R_warm, tol=tol, max_iter=first_cap, out=out)
        if cold_small and not ok:
            S, R, it_b, cert, ok = _solve_barrier_dual(prob, lam, None, tol=tol, max_iter=cap,
                                                       out=out)
            it += it_b
        if ok:
            return S, it, cert, True, R
        if out is not None:
            out.pop("eig", None)  # APG finishes: S is no longer in that form
        coords = _Coords(prob, lam, True)
        V, it2, cert, ok = _solve(coords, coords.to_V(S), accelerate=True, armijo=False, tol=tol, max_iter=max_iter)
        return coords.to_S(V), it + it2, cert, ok, None
    coords = _Coords(prob, lam, solver in ("apg", "ipm"))
    V0 = _closed_form_V(coords) if S_warm is None else coords.to_V(S_warm)
    if solver == "ipm":
        V, it, cert, ok = _solve_ipm(coords, V0, tol=tol, max_iter=max_iter)
        if ok or it >= max_iter:
            return coords.to_S(V), it, cert, ok, None
        # the barrier's line search found no decrease (round-off): APG finishes from here
        V, it2, cert, ok = _solve(coords, V, accelerate=True, armijo=False, tol=tol, max_iter=max_iter - it)
        return coords.to_S(V), it + it2, cert, ok, None
    V, it, cert, ok = _solve(
        coords, V0, accelerate=solver == "apg", armijo=solver == "pgd", tol=tol, max_iter=max_iter
    )
    return coords.to_S(V), it, cert, ok, None


def _solve_path(prob, lams, solve_kw):
    """Solutions along lams (descending), warm-started; yields (lam, S, it, cert, ok)."""
    S_prev = R_prev = None
    lam_prev = None
    for lam in lams:
        if R_prev is not None:
            R_prev = _rescale_dual(R_prev, lam / lam_prev)
        S, it, cert, ok, R = _solve_lam(prob, float(lam), S_warm=S_prev, R_warm=R_prev, **solve_kw)
        S_prev, R_prev, lam_prev = S, R, float(lam)
        yield float(lam), S, it, cert, ok
