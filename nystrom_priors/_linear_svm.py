"""The held-out linear SVM of lam="auto" in feature form, for folds with many labels.

``_numba._svm`` solves the squared-hinge SVM in the representer form ``f = (G G^T + 1) beta``:
each Newton step factors an |A| x |A| block of the kernel, |A| <= n the active training
samples. With more training labels than features (l > m landmarks) the same problem is cheaper
over the weights: with the intercept as a regularised feature of value 1 (liblinear's, and the
kernel form's ``+ 1``), ``X = [G, 1]`` and

    min_w  1/2 ||w||^2 + C sum_i max(0, 1 - y_i x_i^T w)^2,

whose minimiser on a fixed active set A is ``(I + 2C X_A^T X_A) w = 2C X_A^T y_A`` (Keerthi &
DeCoste 2005), solved in the smaller of two forms (``_set_minimiser``): O(|A| p^2 + p^3) per
Newton step with p = m + 1, or O(|A|^2 p + |A|^3) through the |A| x |A| system when fewer
samples are active than features; the kernel form also pays O(n^2 p) per fit for G G^T. The
optimum and the decisions are the kernel form's (tested against each other and against
scikit-learn's LinearSVC); the exact line search and the scoring are shared with it.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def _set_minimiser(X: np.ndarray, y: np.ndarray, act: np.ndarray, C: float) -> np.ndarray:
    """The minimiser of the quadratic on the active set ``act``, in the smaller of two forms.

    ``w = (I + 2C X_A^T X_A)^-1 2C X_A^T y_A`` (p x p) equals ``X_A^T (I + 2C X_A X_A^T)^-1 2C y_A``
    (|A| x |A|, the push-through identity). Near the optimum few samples violate their margin
    (measured on the CV folds of 20,000 x 50 blobs, m = 500, 1000 labels: median |A| = 105 of
    800 training samples, p = 501; |A| < p in 97% of the steps), so the |A| x |A| form
    usually wins: O(|A|^2 p + |A|^3) instead of O(|A| p^2 + p^3).
    """
    n_act, p = int(np.count_nonzero(act)), X.shape[1]
    XA = X[act]
    if n_act == 0:
        return np.zeros(p)
    if n_act < p:
        K = XA @ XA.T
        K *= 2.0 * C
        K.flat[:: n_act + 1] += 1.0
        return XA.T @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(K), 2.0 * C * y[act])
    H = XA.T @ XA
    H *= 2.0 * C
    H.flat[:: p + 1] += 1.0
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), 2.0 * C * (XA.T @ y[act]))


def _objective(w: np.ndarray, f: np.ndarray, y: np.ndarray, C: float) -> float:
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - y * f) ** 2))


def svm_primal_newton_linear(
    X: np.ndarray, y: np.ndarray, C: float, max_iter: int, active: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """Fit one binary problem; returns (w, Newton steps or ``-max_iter``).

    ``X`` (n, p) feature rows including the constant column of the intercept, ``y`` (n,) in
    {-1, +1}; decisions are ``X_new @ w``. Newton starts from ``w = 0`` or, given a guess of
    the optimal active set ``active`` (bool (n,); in/out: overwritten with the final active
    set), from the minimiser on that set, which is already the optimum when the guess is
    right, else from whichever of the two has the lower objective. The optimum is unique, so
    the guess changes the number of steps only.
    """
    from ._numba._svm import exact_step

    n, p = X.shape
    w = np.zeros(p)
    f = np.zeros(n)
    act = np.ones(n, dtype=bool)  # at w = 0 every margin is violated
    it = 0
    if active is not None and active.any():
        it = 1
        w_guess = _set_minimiser(X, y, active, C)
        f_guess = X @ w_guess
        if _objective(w_guess, f_guess, y, C) < C * n:  # the objective at w = 0
            w, f = w_guess, f_guess
            act = y * f < 1.0
            if np.array_equal(act, active):
                return w, it
    for it in range(it + 1, max_iter + 1):
        w_new = _set_minimiser(X, y, act, C)
        d = w_new - w
        g = X @ d
        new_act = y * (f + g) < 1.0
        if np.array_equal(new_act, act):  # the full step keeps the active set: exact optimum
            if active is not None:
                active[:] = act
            return w_new, it
        t = exact_step(float(w @ d), float(d @ d), C, 1.0 - y * f, y * g)
        if t < 0.0:  # no descent left at this precision
            break
        w = w + t * d
        f = f + t * g
        act = y * f < 1.0
    else:
        it = -max_iter
    if active is not None:
        active[:] = act
    return w, it


def ovr_heldout_loss_linear(
    G_tr: np.ndarray, G_te: np.ndarray, codes_tr: np.ndarray, codes_te: np.ndarray, n_classes: int,
    C: float, max_iter: int, active: np.ndarray | None = None,
) -> tuple[float, int, int]:
    """``_numba._svm.ovr_heldout_loss`` on feature rows ``G`` instead of ``G G^T + 1``.

    ``active`` (bool (n_problems, n_train), in/out): the one-vs-rest problems' active sets of
    a previous, similar fit (the neighbouring lam of the CV path) as starting guesses; they are
    overwritten with this fit's.
    """
    from ._numba._svm import heldout_scores

    X = np.hstack([G_tr, np.ones((G_tr.shape[0], 1))])
    X_te = np.hstack([G_te, np.ones((G_te.shape[0], 1))])
    n_prob = 1 if n_classes == 2 else n_classes
    dec = np.empty((X_te.shape[0], n_prob))
    unconverged = 0
    for c in range(n_prob):
        y = np.where(codes_tr == (1 if n_classes == 2 else c), 1.0, -1.0)
        w, it = svm_primal_newton_linear(X, y, C, max_iter, None if active is None else active[c])
        unconverged += it < 0
        dec[:, c] = X_te @ w
    loss, errors = heldout_scores(dec, np.ascontiguousarray(codes_te, dtype=np.int64), n_classes)
    return float(loss), int(errors), int(unconverged)
