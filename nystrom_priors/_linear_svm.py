"""The held-out linear SVM of lam="auto" in feature form, for folds with many labels.

``_numba._svm`` solves the squared-hinge SVM in the representer form ``f = (G G^T + 1) beta``:
each Newton step factors an |A| x |A| block of the kernel, |A| <= n the active training
samples. With more training labels than features (l > m landmarks) the same problem is cheaper
over the weights: with the intercept as a regularised feature of value 1 (liblinear's, and the
kernel form's ``+ 1``), ``X = [G, 1]`` and

    min_w  1/2 ||w||^2 + C sum_i max(0, 1 - y_i x_i^T w)^2,

whose minimiser on a fixed active set A is ``(I + 2C X_A^T X_A) w = 2C X_A^T y_A`` (Keerthi &
DeCoste 2005): O(|A| p^2 + p^3) per Newton step with p = m + 1 through BLAS and LAPACK, instead
of O(|A|^3). The optimum and the decisions are the kernel form's (tested against each other and
against scikit-learn's LinearSVC); the exact line search and the scoring are shared with it.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def svm_primal_newton_linear(X: np.ndarray, y: np.ndarray, C: float, max_iter: int) -> tuple[np.ndarray, int]:
    """Fit one binary problem from ``w = 0``; returns (w, Newton steps or ``-max_iter``).

    ``X`` (n, p) feature rows including the constant column of the intercept, ``y`` (n,) in
    {-1, +1}; decisions are ``X_new @ w``.
    """
    from ._numba._svm import exact_step

    n, p = X.shape
    w = np.zeros(p)
    f = np.zeros(n)
    act = np.ones(n, dtype=bool)  # at w = 0 every margin is violated
    for it in range(1, max_iter + 1):
        XA = X[act]
        H = XA.T @ XA
        H *= 2.0 * C
        H.flat[:: p + 1] += 1.0
        w_new = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), 2.0 * C * (XA.T @ y[act]))
        d = w_new - w
        g = X @ d
        new_act = y * (f + g) < 1.0
        if np.array_equal(new_act, act):  # the full step keeps the active set: exact optimum
            return w_new, it
        t = exact_step(float(w @ d), float(d @ d), C, 1.0 - y * f, y * g)
        if t < 0.0:  # no descent left at this precision
            return w, it
        w += t * d
        f += t * g
        act = y * f < 1.0
    return w, -max_iter


def ovr_heldout_loss_linear(
    G_tr: np.ndarray, G_te: np.ndarray, codes_tr: np.ndarray, codes_te: np.ndarray, n_classes: int,
    C: float, max_iter: int,
) -> tuple[float, int, int]:
    """``_numba._svm.ovr_heldout_loss`` on feature rows ``G`` instead of ``G G^T + 1``."""
    from ._numba._svm import heldout_scores

    X = np.hstack([G_tr, np.ones((G_tr.shape[0], 1))])
    X_te = np.hstack([G_te, np.ones((G_te.shape[0], 1))])
    n_prob = 1 if n_classes == 2 else n_classes
    dec = np.empty((X_te.shape[0], n_prob))
    unconverged = 0
    for c in range(n_prob):
        y = np.where(codes_tr == (1 if n_classes == 2 else c), 1.0, -1.0)
        w, it = svm_primal_newton_linear(X, y, C, max_iter)
        unconverged += it < 0
        dec[:, c] = X_te @ w
    loss, errors = heldout_scores(dec, np.ascontiguousarray(codes_te, dtype=np.int64), n_classes)
    return float(loss), int(errors), int(unconverged)
