"""Primal log-barrier interior-point method for the labels problem (Newton-CG steps)."""

from __future__ import annotations

import numpy as np

from .problem import _Coords
from .psd import _sym


def _solve_ipm(coords: _Coords, V0: np.ndarray, *, tol: float, max_iter: int, shrink: float = 0.1,
               center: float = 0.5, cg_rtol: float = 0.01, cg_max: int = 500):
    """Primal log-barrier path following with Newton-CG (separable labels problems only).

    In the preconditioned coordinates the problem is ``min sum a (V - b)^2`` over ``V >= 0``
    (see ``_Coords``). For a decreasing barrier weight t, Newton's method minimises

        phi_t(V) = sum a (V - b)^2 - t log det V,

    whose Hessian ``D -> 2 a o D + t V^-1 D V^-1`` is the elementwise weight of the quadratic
    (diagonal in M's eigenbasis) plus the barrier's Kronecker term (diagonal in V's eigenbasis).
    Newton directions come from CG in V's eigenbasis, preconditioned by the exact diagonal of
    the Hessian there, ``2 (Q o Q)^T a (Q o Q) + t / (w_i w_j)``; the step to the boundary and
    phi along the step have closed forms from the eigenvalues of ``V^-1/2 D V^-1/2``. Once
    centred (Newton decrement < 1/2), t shrinks by ``shrink`` and a predictor step follows
    the central path's tangent ``H dV = V^-1 dt``. ``Z = t V^-1`` is a PSD multiplier, an
    extra candidate of the duality-gap certificate. Unlike the projected gradient, whose
    iterations grow with the condition number ~ mu_max / sqrt(lam), the number of Newton steps
    depends on the path length only (digits, m = 400, lam = mu_max^2 * 1e-12: 65 steps and
    1955 CG products, 31.8 s, where APG needs 1330 steps, 29.9 s; results/bench_generalized.md).
    Returns (V, n_iter, certificate value, converged); the iterates stay positive definite.
    The CG products are counted in ``coords.cg_products`` (for the benchmarks).
    """
    a, b = coords.wa, coords.b
    coords.cg_products = 0
    m = a.shape[0]
    w, Q = np.linalg.eigh(_sym(V0))
    # a start that is already optimal (closed form at large lam, warm starts) costs no step
    wp = np.maximum(w, 0.0)
    Vp = (Q * wp) @ Q.T
    cert = coords.certificate(Vp, coords.grad(Vp), (wp, Q))[0]
    if cert <= tol:
        return Vp, 0, cert, True
    top = float(w.max(initial=0.0))
    top = top if top > 0.0 else max(float(np.abs(b).max(initial=0.0)), 1e-300)
    # strictly inside the cone; the gap of V0 itself is lost, the path restarts from here
    w = wp + 1e-3 * top
    V = (Q * w) @ Q.T
    G = 2.0 * a * (V - b)
    f = float(np.sum(a * (V - b) ** 2))
    t = abs(float(np.sum(G * V))) / m + 1e-3 * f / m

    def newton_direction(rhs, w, Q, t):
        """CG for H D = rhs in V's eigenbasis; returns (D in that basis, CG products)."""
        Q2 = Q * Q
        bar = t / np.outer(w, w)
        diag = 2.0 * (Q2.T @ a @ Q2) + bar
        rt = Q.T @ rhs @ Q
        X = np.zeros_like(rt)
        r = rt.copy()
        z = r / diag
        p = z
        rz = float(np.sum(r * z))
        goal = cg_rtol * float(np.linalg.norm(rt))
        for k in range(1, cg_max + 1):
            Hp = Q.T @ (2.0 * a * (Q @ p @ Q.T)) @ Q + bar * p
            pHp = float(np.sum(p * Hp))
            if not pHp > 0.0:  # round-off at the end of the path
                break
            alpha = rz / pHp
            X += alpha * p
            r -= alpha * Hp
            if float(np.linalg.norm(r)) <= goal:
                break
            z = r / diag
            rz_new = float(np.sum(r * z))
            p = z + (rz_new / rz) * p
            rz = rz_new
        return _sym(X), k

    def to_boundary(Xt, w, fraction):
        """Eigenvalues om of V^-1/2 D V^-1/2 (D given in V's eigenbasis) and the step that
        keeps ``fraction`` of the distance to the boundary of the cone."""
        s_w = 1.0 / np.sqrt(w)
        om = np.linalg.eigvalsh(_sym(Xt * np.outer(s_w, s_w)))
        return om, (1.0 if om.min() >= 0 else min(1.0, fraction / -float(om.min())))

    def step_to(Xt, w, g_dot, quad, t):
        """Largest damped step along D decreasing phi_t (Armijo), 0 if there is none."""
        om, s = to_boundary(Xt, w, 0.99)
        slope = g_dot - t * float(np.sum(om))  # <grad phi_t, D>; tr(V^-1 D) = sum om
        while s > 1e-12:
            # phi(V + sD) - phi(V) = s <G, D> + s^2 sum a D^2 - t sum log(1 + s om)
            dphi = s * g_dot + s * s * quad - t * float(np.sum(np.log1p(s * om)))
            if dphi <= 1e-4 * s * slope:
                return s
            s *= 0.5
        return 0.0

    it = 0
    while it < max_iter:
        w, Q = np.linalg.eigh(V)
        if w.min() <= 0.0:  # pragma: no cover - the steps keep V positive definite
            break
        Vinv = (Q / w) @ Q.T
        G = 2.0 * a * (V - b)
        cert, _ = coords.certificate(V, G, (w, Q), extra=t * Vinv)
        if cert <= tol:
            return V, it, cert, True
        grad = _sym(G - t * Vinv)
        Xt, k = newton_direction(-grad, w, Q, t)
        coords.cg_products += k
        it += 1
        D = Q @ Xt @ Q.T
        grad_dot = float(np.sum(grad * D))
        decrement = np.sqrt(max(-grad_dot, 0.0) / t)
        s = step_to(Xt, w, float(np.sum(G * D)), float(np.sum(a * D * D)), t)
        if s == 0.0:
            break  # no decrease at this precision: hand over to the caller's fallback
        V = _sym(V + s * D)
        if decrement < center and it < max_iter:
            t_new = t * shrink
            w, Q = np.linalg.eigh(V)
            Vinv = (Q / w) @ Q.T
            # predictor along the central path 2 a o (V - b) = t V^-1: H dV = V^-1 dt
            Xt, k = newton_direction((t_new - t) * Vinv, w, Q, t)
            coords.cg_products += k
            it += 1
            _om, s = to_boundary(Xt, w, 0.95)
            V = _sym(V + s * (Q @ Xt @ Q.T))
            t = t_new
    return V, it, cert, False
