"""Projected-gradient solvers of J: accelerated (FISTA with restarts, preconditioned) and the
paper's Armijo-Goldstein gradient mapping."""

from __future__ import annotations

import numpy as np

from .problem import _Coords
from .psd import _psd_project, _psd_project_few_negative

# APG steps project from the negative eigenpairs only while fewer than this fraction of m
_FEW_NEGATIVE = 0.1


def _solve(coords: _Coords, V0: np.ndarray, *, accelerate: bool, armijo: bool, tol: float, max_iter: int):
    """Projected gradient (FISTA with restart, or plain with Armijo-Goldstein backtracking).

    Returns (V, n_iter, certificate value, converged).
    """
    V, w0, _ = _psd_project(V0)
    Vprev = V
    momentum = getattr(coords, "momentum", None) if accelerate else None
    exact_L = coords.prob.separable and not armijo
    Y = V
    t = 1.0
    L = coords.lipschitz if not armijo else coords.lipschitz * 1e-3
    cert = np.inf
    it = 0
    # near a solution few eigenvalues of the step's argument are negative (measured along the
    # Table-1 and many-label paths: median 0-74 of 400-500). While fewer than _FEW_NEGATIVE * m
    # were at the previous step only those are computed (``_psd_project_few_negative``; the
    # break-even is ~m / 5 at m = 400, ~m / 3 at m = 1000); the certificate, every ~10 steps,
    # takes V's null space from the clipped eigenvectors and pays the eighs of G and V only
    # when the multipliers 0 and P_psd(G) on that null space do not certify tol
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
            fV = coords.f(Vn)
            # sufficient decrease (Armijo-Goldstein / FISTA backtracking), slack for round-off
            if fV <= fY + float(np.sum(gY * D)) + 0.5 * L * float(np.sum(D * D)) + 1e-12 * abs(fY):
                break
            L *= 2.0
            if L > 1e30:  # pragma: no cover - only with a broken gradient
                raise FloatingPointError("step size underflow in the projected gradient solver")
        if accelerate:
            if float(np.sum(gY * (Vn - V))) > 0.0:  # gradient restart (O'Donoghue & Candes)
                t = 1.0
                Y = Vn
            elif momentum is not None:
                Y = Vn + momentum * (Vn - V)
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                Y = Vn + ((t - 1.0) / t_next) * (Vn - V)
                t = t_next
        else:
            Y = Vn
        Vprev, V, eig, null = V, Vn, eig_n, null_n
        step = float(np.linalg.norm(V - Vprev))
        # the certificate costs an eigendecomposition: check when the iterates settle
        if step <= min(10 * tol, 1e-5) * max(1.0, float(np.linalg.norm(V))) or it % 10 == 0 or it == max_iter:
            cert, _ = coords.certificate(V, coords.grad(V), eig, null=null, tol=tol)
            if cert <= tol:
                return V, it, cert, True
        if armijo:
            L = max(L * 0.5, 1e-12)  # let the step grow again (Nemirovski's gradient mapping)
    return V, it, cert, False
