"""J at one lam: the exact solvers' choice, warm starts, cold starts and fallbacks; the
accelerated projected gradient (FISTA with restarts in preconditioned coordinates); and the
warm-started lam path.

The paper's own method, the Armijo-Goldstein gradient mapping, lives in ``_paper.py``.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ._barrier import _solve_barrier_dual
from ._dual import _solve_newton, certify, dual_point
from ._problem import (
    _closed_form_V,
    _Coords,
    _no_descent_step,
    _Problem,
    _psd_project,
    _psd_project_few_negative,
)

# APG steps project from the negative eigenpairs only while fewer than this fraction of m
_FEW_NEGATIVE = 0.1


def _solve(coords: _Coords, V0: np.ndarray, *, tol: float, max_iter: int):
    """Accelerated projected gradient (FISTA with gradient restarts; Nesterov's constant
    momentum where the strong convexity is known), in the coordinates of ``coords``.

    With separable labels the Lipschitz constant is exact and no line search runs; with pairs
    the step backtracks on the sufficient-decrease condition. Returns (V, n_iter, certificate
    value, converged).
    """
    V, w0, _ = _psd_project(V0)
    Vprev = V
    momentum = getattr(coords, "momentum", None)
    exact_L = coords.prob.separable
    Y = V
    t = 1.0
    L = coords.lipschitz
    cert = np.inf
    it = 0
    V_cert = V  # the point the last certificate is for (the last iterate or S(R))
    # near a solution few eigenvalues of the step's argument are negative: while fewer than
    # _FEW_NEGATIVE * m were at the previous step only those are computed
    # (``_psd_project_few_negative``); the certificate, every ~10 steps, takes V's null space
    # from the clipped eigenvectors and pays the eighs of G and V only when the multipliers 0
    # and P_psd(G) on that null space do not certify tol
    few_cap = int(_FEW_NEGATIVE * V.shape[0])
    n_neg = int(np.count_nonzero(w0 < 0.0))

    def project(A):
        if n_neg <= few_cap:
            P, k, Un = _psd_project_few_negative(A)
            return P, k, None, Un
        P, w, U = _psd_project(A)
        return P, int(np.count_nonzero(w < 0.0)), (np.maximum(w, 0.0), U), None

    for it in range(1, max_iter + 1):
        gY = coords.grad(Y)
        if exact_L:  # separable labels: L is the exact Lipschitz constant, no line search
            Vn, n_neg, eig_n, null_n = project(Y - gY / L)
        fY = None if exact_L else coords.f(Y)
        while not exact_L:
            Vn, n_neg, eig_n, null_n = project(Y - gY / L)
            D = Vn - Y
            with np.errstate(over="ignore", invalid="ignore"):  # a trial step too long for
                fV = coords.f(Vn)  # float64 (J = inf) fails the test below like any other
            # sufficient decrease (Armijo-Goldstein / FISTA backtracking), slack for round-off
            if fV <= fY + float(np.sum(gY * D)) + 0.5 * L * float(np.sum(D * D)) + 1e-12 * abs(fY):
                break
            L *= 2.0
            if L > coords.lipschitz_cap:  # round-off swamps the decrease (e.g. a huge offset)
                raise _no_descent_step(coords.lipschitz_cap)
        if float(np.sum(gY * (Vn - V))) > 0.0:  # gradient restart (O'Donoghue & Candes)
            t = 1.0
            Y = Vn
        elif momentum is not None:
            Y = Vn + momentum * (Vn - V)
        else:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            Y = Vn + ((t - 1.0) / t_next) * (Vn - V)
            t = t_next
        Vprev, V, eig, null = V, Vn, eig_n, null_n
        step = float(np.linalg.norm(V - Vprev))
        # the certificate costs an eigendecomposition: check when the iterates settle
        if (
            step <= min(10 * tol, 1e-5) * max(1.0, float(np.linalg.norm(V)))
            or it % 10 == 0
            or it == max_iter
        ):
            cert, V_cert = certify(coords, V, eig, null, tol)
            if cert <= tol:
                return V_cert, it, cert, True
    return V_cert, it, cert, False  # the certificate is computed at it == max_iter


# lam / mu_max^2 outside [_LAM_RANGE, 1 / _LAM_RANGE] is numerically the limit problem: below,
# the weights lam + mu_i mu_j of J differ by less than the round-off of M's eigenvalues
# (~eps mu_max each); above, S0 is optimal to round-off (see _prior_gap), while the solvers'
# scaled coordinates overflow (lam = 1e300: LinAlgError) or, below, blow up and the
# Newton's former lam continuation descended one decade per stage (lam = 1e-300: minutes, m = 20)
_LAM_RANGE = float(np.finfo(np.float64).eps)

# mu_max^2 above which the exact solvers' products may overflow harmlessly (scale_guard)
_HUGE_SCALE = 1e200

# Newton's cold starts below mu_max^2 * this get the barrier-smoothed dual Newton (_solve_lam)
_HOMOTOPY_START = 1e-4
# ... after this many cold steps (none with pairs): one step solves the dual exactly when the
# PSD constraint is inactive; otherwise a cold start rarely beats the barrier dual (_solve_lam)
_COLD_STEPS = 1
# ... and a start from a primal guess (S_guess) this many: from the one-step model the dual
# Newton certified in 20-23 steps on splice and digits (500 pairs, lam = mu_max^2 * 1e-8)
_GUESS_STEPS = 40


def _auto_solver(prob: _Problem) -> str:
    """Newton on the dual when it is the smaller problem (fewer constrained entries than
    entries of S), APG on the primal otherwise.

    Newton takes far fewer eigendecompositions where its dual is small (l < m labels); with
    more labels than landmarks the labels term is compressed to r <= m rows
    (``_compress_labels``), the dual is as large as the primal and APG's cheap steps win
    (``docs/design/solvers.md``).
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
    primal. The unscaled R would push X ``1 / factor`` times further."""
    return tuple(None if r is None else r * factor for r in R)


def _prior_gap(prob: _Problem, lam: float) -> float:
    """Certified relative gap of S = S0: J is 2 lam-strongly convex and grad J(S0) is the data
    term's gradient alone, so ``J(S0) - min J <= ||grad J(S0)||^2 / (4 lam)`` (the unconstrained
    minimum bounds the PSD one). No solver coordinates are formed, and the lam term, 0 at S0,
    is not multiplied out (2 lam overflows near float64's top): finite at any lam."""
    g = prob.grad(prob.S0, 0.0)
    J0 = prob.loss(prob.S0)
    return float(np.sum(g * g)) / (4.0 * lam) / max(J0, 1e-300)


@contextlib.contextmanager
def scale_guard(scale: float):
    """Report a breakdown of the exact solvers at a huge ``mu_max^2`` as the data's scale.

    Their intermediate products reach about ``mu_max^2`` times powers of the number of
    constrained rows, so past ``_HUGE_SCALE`` some of them can overflow. Many such overflows
    are harmless (an infinite candidate multiplier of the certificate loses its ``min``);
    the harmful ones leave a non-finite matrix, which surfaces as LAPACK's ``LinAlgError`` or
    a non-finite S (``_solve_lam``'s ``FloatingPointError``). There overflows are silenced and
    those two errors name the remedy, which is the user's (rescale X or the kernel). Below
    that scale an overflow is not expected, warns as usual, and a ``LinAlgError`` passes on.
    """
    huge = scale > _HUGE_SCALE
    try:
        with np.errstate(over="ignore" if huge else None, invalid="ignore" if huge else None):
            yield
    except (np.linalg.LinAlgError, FloatingPointError) as err:
        if not huge:
            raise
        raise ValueError(
            f"GeneralizedNystrom's exact solver overflowed float64 at the side information's "
            f"scale mu_max^2 = {scale:.3g} (mu_max: the largest eigenvalue of E^T E over the "
            "constrained rows): the kernel values are too large. Rescale X or the kernel "
            "(gamma, coef0, degree)."
        ) from err


def _solve_lam(
    prob: _Problem,
    lam: float,
    solver: str,
    tol: float,
    max_iter: int,
    S_warm=None,
    R_warm=None,
    out: dict | None = None,
    S_guess=None,
):
    """Solve J at one lam; returns (S, n_iter, certificate, converged, dual R or None).

    A solve stopped by ``max_iter`` returns S0 instead of its last point where that point's J
    is larger (far from the optimum a dual iterate's primal point can be far worse than S0),
    with S0's own certified gap (``_prior_gap``, at most 1 since J >= 0): an unconverged fit
    is never worse than the prior it started from. ``_solve_once`` has the rest."""
    S, it, cert, ok, R = _solve_once(prob, lam, solver, tol, max_iter, S_warm, R_warm, out, S_guess)
    if not np.isfinite(S).all():  # an overflow (``scale_guard`` names the data's scale)
        raise FloatingPointError("GeneralizedNystrom's solver returned a non-finite S")
    if ok or prob.objective(S, lam) <= prob.objective(prob.S0, lam):
        return S, it, cert, ok, R
    if out is not None:
        out.pop("eig", None)
        if prob.S0_eig is not None:
            out["eig"] = prob.S0_eig
    gap = min(_prior_gap(prob, lam), 1.0)  # J >= 0: no relative gap exceeds 1
    return prob.S0, it, gap, gap <= tol, None


def _solve_once(prob, lam, solver, tol, max_iter, S_warm, R_warm, out, S_guess):
    """``_solve_lam`` without its comparison with S0.

    ``S_guess`` (``"newton"`` only): a primal point near the solution, such as the one-step
    model at this lam, whose residuals ``A(S_guess) - t`` start the dual (the optimal dual is
    ``A(S*) - t``) below ``_HOMOTOPY_START * mu_max^2``, where a cold start would go to the
    barrier dual after ``_COLD_STEPS``: the guess gets ``_GUESS_STEPS`` Newton steps first.

    ``out`` (a dict, optional) receives ``"eig"``: ``(vals, Q)`` with ``S = Q diag(vals) Q^T``
    when the solver ends with S in that form (the dual solvers, or S0 with ``prob.S0_eig``), so
    that the factor of S costs no further eigh (``psd._factor``); no key otherwise.

    ``"auto"`` resolves through ``_auto_solver``; ``"pgd"`` is the paper's gradient mapping
    (``_paper.py``); ``"apg"`` the accelerated projected gradient. ``"newton"`` runs the dual
    semismooth Newton-CG; a cold start below ``_HOMOTOPY_START * mu_max^2`` that does not certify
    within ``_COLD_STEPS`` steps continues with the barrier-smoothed dual Newton (``_barrier.py``),
    and where Newton cannot certify ``tol``, its last primal iterate, always PSD, warm-starts
    APG. ``max_iter`` bounds the iterations of all phases together (a semismooth step, a
    barrier step and an APG iteration count one each). Above
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
        # above that lam the cold start S0 is near the solution already (a guess took 19
        # steps on german at mu_max^2 * 1e-4 where the cold start took 3)
        guess = cold_small and S_guess is not None
        # a cold start at small lam converges in one step when the PSD constraint is inactive
        # there; otherwise the semismooth steps mostly stall. So it gets _COLD_STEPS, then the
        # barrier dual, whose steps do not grow as lam shrinks. With pairs it gets none: one
        # step certifies only if CG solves the Newton system almost exactly, as the labels'
        # Kronecker preconditioner does there, while the pairs' Jacobi one stops CG at its
        # 10% residual, and the barrier dual starts afresh
        cold_steps = 0 if prob.has_pairs else _COLD_STEPS
        first_cap = min(cap, _GUESS_STEPS if guess else cold_steps) if cold_small else cap
        R0 = dual_point(prob, lam, S_guess) if guess else R_warm
        S, R, it, cert, ok = _solve_newton(prob, lam, R0, tol=tol, max_iter=first_cap, out=out)
        if cold_small and not ok and it < max_iter:
            S, R, it_b, cert, ok = _solve_barrier_dual(
                prob, lam, None, tol=tol, max_iter=min(cap, max_iter - it), out=out
            )
            it += it_b
        if ok:
            return S, it, cert, True, R
        if it >= max_iter:  # max_iter bounds the phases together; S is PSD, as APG's start
            return S, it, cert, False, None
        if out is not None:
            out.pop("eig", None)  # APG finishes: S is no longer in that form
        coords = _Coords(prob, lam, True)
        V, it2, cert, ok = _solve(coords, coords.to_V(S), tol=tol, max_iter=max_iter - it)
        return coords.to_S(V), it + it2, cert, ok, None
    coords = _Coords(prob, lam, solver == "apg")
    V0 = _closed_form_V(coords) if S_warm is None else coords.to_V(S_warm)
    if S_warm is None and not prob.separable:
        # the pairs' closed form is a Kronecker surrogate's optimum: its J can be 3,000 times
        # J(S0), a start the descent may not leave within max_iter
        V0 = _psd_project(V0)[0]
        V_prior = coords.to_V(prob.S0)
        V0 = V0 if coords.f(V0) <= coords.f(V_prior) else V_prior
    if solver == "pgd":
        from ._paper import gradient_mapping

        V, it, cert, ok = gradient_mapping(coords, V0, tol=tol, max_iter=max_iter)
    else:
        V, it, cert, ok = _solve(coords, V0, tol=tol, max_iter=max_iter)
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


def convergence_remedy(eigenvalues: np.ndarray, tol: float, solver: str, onestep: bool) -> str:
    """The advice of an exact solver's ConvergenceWarning, given W's kept ``eigenvalues`` and
    ``tol`` (``onestep``: whether solver="onestep" takes the side information, one kind of
    it). S's entries reach 1 / W's smallest kept eigenvalue while the kernel it gives is of
    W's scale, so float64 rounding in S is about ``cond(W) eps`` of the kernel: where that
    exceeds tol, more iterations may only cost time, and fewer or better separated
    directions of W (fewer landmarks, a larger rcond) are what lowers the floor."""
    from ._paper import _CRAWL_STEPS

    ev = eigenvalues
    floor = float(ev[0] / ev[-1]) * float(np.finfo(np.float64).eps) if ev.size else 0.0
    first = (
        "use solver='auto' (the paper's first-order gradient mapping crawls where lam is "
        "small against mu_max^2, and stops where its measure has not fallen by 1% in "
        f"{_CRAWL_STEPS:,} steps), or increase max_iter or relax tol"
        if solver == "pgd"
        else "increase max_iter or relax tol"
    )
    if floor <= tol:
        return f"{first}."
    return (
        f"{first}. W's kept eigenvalues span a ratio of "
        f"{ev[0] / ev[-1]:.1e}, so float64 rounding in S is about {floor:.0e} of the kernel, "
        "above tol: if more iterations do not lower the measure, use fewer n_landmarks or a "
        "larger rcond (drops W's weakest directions)"
        + (", or solver='onestep'." if onestep else ".")
    )
