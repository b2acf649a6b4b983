"""The paper's solver (Zhang et al. 2012, Sec. 3.4), kept as the fidelity reference.

Gradient mapping with Armijo-Goldstein backtracking in the original coordinates:

    S <- P_psd(S - grad J(S) / A),   A doubled until
    J(S+) <= J(S) + <grad J(S), S+ - S> + A/2 ||S+ - S||^2,   then halved for the next step.

The paper's eq. (7) writes ``S + eta grad``, a sign error: this is the descent step. It is
first-order and unpreconditioned, so its steps crawl where the Hessian's spectrum
``lam + mu_i mu_j`` is wide (condition number ~ mu_max^2 / lam): the default solvers
(``_solver.py``, ``_dual.py``) reach the same certified optimum in far fewer eigendecompositions.
It stops on the same certificate as they do, never on the relative decrease of J, or
unconverged where that certificate crawls.
"""

from __future__ import annotations

import numpy as np

from ._dual import certify
from ._problem import _Coords, _no_descent_step, _psd_project

# the descent gives up where its certified measure has not fallen by 1% in this many steps:
# at that pace a tol far below it is out of reach of any max_iter (a huge one ran for days)
_CRAWL_STEPS = 5000


def gradient_mapping(coords: _Coords, V0: np.ndarray, *, tol: float, max_iter: int):
    """Returns (V, n_iter, certificate value, converged); ``coords`` unpreconditioned. Stops
    unconverged where the measure has crawled for ``_CRAWL_STEPS`` steps."""
    V, w, U = _psd_project(V0)
    eig = (np.maximum(w, 0.0), U)
    A = coords.lipschitz * 1e-3
    cert = np.inf
    best, best_it = np.inf, 0  # the lowest certified measure, and the step it fell 1% at
    V_cert = V  # the point the last certificate is for (the last iterate or S(R))
    for it in range(1, max_iter + 1):
        g = coords.grad(V)
        f = coords.f(V)
        while True:
            Vn, w, U = _psd_project(V - g / A)
            D = Vn - V
            with np.errstate(over="ignore", invalid="ignore"):  # a trial step too long for
                fn = coords.f(Vn)  # float64 (J = inf) fails the test below like any other
            # sufficient decrease, with slack for round-off
            if fn <= f + float(np.sum(g * D)) + 0.5 * A * float(np.sum(D * D)) + 1e-12 * abs(f):
                break
            A *= 2.0
            if A > coords.lipschitz_cap:  # round-off swamps the decrease (e.g. a huge offset)
                raise _no_descent_step(coords.lipschitz_cap)
        step = float(np.linalg.norm(D))
        V, eig = Vn, (np.maximum(w, 0.0), U)
        # the certificate costs eigendecompositions: check when the iterates settle
        if (
            step <= min(10 * tol, 1e-5) * max(1.0, float(np.linalg.norm(V)))
            or it % 10 == 0
            or it == max_iter
        ):
            cert, V_cert = certify(coords, V, eig, None, tol)
            if cert <= tol:
                return V_cert, it, cert, True
            if cert < 0.99 * best:
                best, best_it = cert, it
            elif it - best_it >= _CRAWL_STEPS:
                return V_cert, it, cert, False
        A = max(A * 0.5, 1e-12)  # let the step grow again (Nemirovski's gradient mapping)
    return V_cert, it, cert, False  # the certificate is computed at it == max_iter
