"""Newton-CG on the dual of the log-barrier problem, with the barrier weight driven to 0: the
exact default's cold starts at small lam.

The semismooth dual Newton (``_dual.py``) works on ``d(R)``, whose Hessian
``I + A P'(X) A* / lam`` jumps wherever an eigenvalue of ``X(R) = S0 - A*(R) / lam`` crosses 0:
at small lam every step of R moves X by ``1 / lam`` and the active set with it, so the damped
steps grow like a power of ``mu_max^2 / lam`` (digits, m = 180, 100 labels: 48 / 87 / 169 steps
to a 1e-6 gap at ``mu_max^2 * 1e-8 / 1e-10 / 1e-12``). Adding the barrier ``-tau log det S`` to
J smooths the projection into the spectral function

    s(x) = (x + sqrt(x^2 + 4 kappa)) / 2,   kappa = tau / (2 lam)

(the minimiser of ``lam (s - x)^2 - tau log s``), and the dual of the barrier problem,

    d_tau(R) = lam ||S0||^2 - lam ||X||^2 + sum_i [lam (s_i - x_i)^2 - tau log s_i]
               - 2 <R, t> - ||R||^2
             = L(S_tau, R) - tau log det S_tau,   S_tau = Q s(x) Q^T,

is smooth and self-concordant (the conjugate of a self-concordant function, composed with a linear
map, plus a quadratic), so damped Newton needs a number of steps per barrier weight that does not
depend on lam. Both it and the unsmoothed ``d(R) = L(P_psd(X), R)`` are evaluated through the
Lagrangian ``L(S, R) = lam ||S - S0||^2 + 2 <R, A(S) - t> - ||R||^2`` (``_Dual.lagrangian``): the
closed form's terms grow like ``||A* R||^2 / lam`` and cancel at small lam, which can stall the
line search and put d above J(S*), i.e. give a false certificate. Its gradient is
``2 (A(S_tau(R)) - t - R)`` with ``S_tau = Q s(x) Q^T`` and its Hessian
``-2 (I + A P_tau'(X) A* / lam)``, where the Loewner matrix of ``s`` has the cancellation-free
divided differences ``(1 + (x_i + x_j) / (r_i + r_j)) / 2``, ``r = sqrt(x^2 +
4 kappa)``. The CG runs in the dual's space, like the semismooth Newton's (l^2 entries for l labels,
one per pair), not in the m^2 of a primal barrier method.

Every iterate is certified against the original problem: ``S_tau`` and ``P_psd(X)`` are both
feasible, and the smaller of their J minus the unsmoothed ``d(R)`` bounds the gap. Once a barrier
problem is centred (Newton decrement below 1/2), kappa falls to
``min(kappa / 10, 0.01 gap / (2 lam m))``: the certified gap, not the barrier's own ``m tau``,
sets the pace, so a start where the PSD constraint is nearly inactive (Pi_psd(X) already close)
does not walk the whole barrier path.
The CG stops at a 10% residual on labels (the Kronecker preconditioner is nearly exact there)
and at 1% with pairs (Jacobi) or after a backtracked step (``docs/design/solvers.md`` has the
measurements behind these settings).
"""

from __future__ import annotations

import numpy as np

from ._dual import _armijo_ascent, _Dual, _newton_cg
from ._problem import _Problem

# the barrier Newton steps' relative CG residual: labels after a full step / otherwise (below)
_CG_LABELS = 0.1
_CG_CAREFUL = 0.01


def _smoothed_plus(x: np.ndarray, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """s(x) = (x + r) / 2 with r = sqrt(x^2 + 4 kappa) (as a hypot: no overflow of x^2); for
    x < 0 as 2 kappa / (r - x), which keeps the digits the subtraction would cancel (s ~ kappa
    / |x| there)."""
    r = np.hypot(x, 2.0 * np.sqrt(kappa))
    neg = x < 0
    s = 0.5 * (x + r)
    s[neg] = 2.0 * kappa / (r[neg] - x[neg])
    return s, r


class _BarrierDual(_Dual):
    """``d_tau`` of the module docstring at ``kappa = tau / (2 lam)``; reuses ``_Dual``'s maps."""

    def __init__(self, prob: _Problem, lam: float, kappa: float = 1.0):
        super().__init__(prob, lam)
        self.kappa = kappa

    def state(self, R):
        """Eigendecomposition of X(R), d_tau(R), the unsmoothed d(R) with its primal P_psd(X),
        and g = grad d_tau / 2; both duals in the Lagrangian form (``_Dual.lagrangian``)."""
        p, lam = self.prob, self.lam
        x, Q = self.eig_X(R)
        s, r = _smoothed_plus(x, self.kappa)
        PL = p.El @ Q if p.has_labels else None
        PP = p.Ep @ Q if p.has_pairs else None
        d0, S_plus, _y, J_plus = self.lagrangian(R, Q, PL, PP, np.maximum(x, 0.0))
        L, S_tau, y, J_tau = self.lagrangian(R, Q, PL, PP, s)
        with np.errstate(divide="ignore"):
            log_s = float(np.sum(np.log(s)))
        t = self.targets()
        g = tuple(None if yy is None else yy - tt - rr for yy, tt, rr in zip(y, t, R))
        # the better of the two feasible points S_tau = Q s Q^T and P_psd(X) certifies the gap
        best = (S_tau, J_tau, s) if J_tau < J_plus else (S_plus, J_plus, np.maximum(x, 0.0))
        return dict(
            x=x,
            Q=Q,
            s=s,
            r=r,
            PL=PL,
            PP=PP,
            d=L - 2.0 * lam * self.kappa * log_s,
            d0=d0,
            g=g,
            best=best,
        )

    @staticmethod
    def omega(st) -> np.ndarray:
        x, r = st["x"], st["r"]
        return 0.5 * (1.0 + (x[:, None] + x[None, :]) / (r[:, None] + r[None, :]))

    def set_state_precond(self, st, Omega):
        """I + K (x) K / lam with ``K = E_l Q diag(w) Q^T E_l^T``, ``w = sqrt(s'(x))``: the
        Loewner matrix taken as the rank-one ``w w^T`` (exact on its diagonal), the cheapest of
        the rank-one choices in CG products (``docs/design/solvers.md``)."""
        if self.prob.has_labels:
            w = np.sqrt(0.5 * (1.0 + st["x"] / st["r"]))
            PLw = st["PL"] * w
            kap, Vk = np.linalg.eigh(PLw @ PLw.T)
            kap = np.maximum(kap, 0.0)
            self.kV = Vk
            self.kden = 1.0 + np.outer(kap, kap) / self.lam
        self._pairs_jacobi(st, Omega)

    def hess_apply(self, st, Omega, H):
        """(I + A P_tau'(X) A* / lam) H (the Loewner matrix has no zero block here)."""
        return self._general_hess_apply(st, Omega, H)


def _solve_barrier_dual(
    prob: _Problem,
    lam: float,
    R0=None,
    *,
    tol: float,
    max_iter: int,
    cg_max: int = 200,
    shrink: float = 0.1,
    center: float = 0.5,
    gap_fraction: float = 0.01,
    out: dict | None = None,
):
    """Barrier-smoothed dual Newton-CG (module docstring); returns (S, R, n_iter, gap, converged).

    ``n_iter`` counts Newton steps (each: one eigendecomposition of X plus the CG products).
    ``out["eig"]``, if ``out`` is given: ``(vals, Q)`` with ``S = Q diag(vals) Q^T``, vals >= 0.
    """
    dual = _BarrierDual(prob, lam)
    R = dual.zeros() if R0 is None else R0

    def next_kappa(st, kappa):
        _S, J, _vals = st["best"]
        return min(kappa, max(gap_fraction * max(J - st["d0"], 0.0) / (2.0 * lam * prob.m), 1e-300))

    st = dual.state(R)
    dual.kappa = next_kappa(st, np.inf)
    st = dual.state(R)
    it, gap, S = 0, np.inf, None
    last_step = 1.0
    while True:
        S, J, vals = st["best"]
        gap = max(J - st["d0"], 0.0) / max(J, 1e-300)
        if gap <= tol or it >= max_iter:
            break
        g = st["g"]
        gnorm = np.sqrt(dual.dot(g, g))
        Omega = dual.omega(st)
        dual.set_state_precond(st, Omega)
        # preconditioned CG on (I + A P' A* / lam) H = g: a loose 10% residual on labels (the
        # Kronecker preconditioner is nearly exact there: fewer CG products for a few more
        # steps); 1% with pairs and after a backtracked step, where 10% made barrier stages
        # cycle
        eta = _CG_LABELS if last_step == 1.0 and not prob.has_pairs else _CG_CAREFUL
        H, _k = _newton_cg(dual, st, Omega, g, eta * gnorm, cg_max)
        it += 1
        slope = 2.0 * dual.dot(g, H)  # <grad d_tau, H> > 0: ascent
        if not slope > 0.0:
            break
        # Newton decrement of d_tau / tau (self-concordant scaling)
        decrement = np.sqrt(slope / (2.0 * lam * dual.kappa))
        found = _armijo_ascent(dual, R, st, H, slope, 40)
        if found is None:
            break  # no ascent at this precision: the caller's fallback finishes
        R, st, last_step = found
        if decrement < center:
            dual.kappa = next_kappa(st, dual.kappa * shrink)
            st = dual.state(R)
    if out is not None:  # S is always the current state's best point
        out["eig"] = (vals, st["Q"])
    return S, R, it, gap, gap <= tol
