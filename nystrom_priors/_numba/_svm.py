"""Jitted exact solver for the L2-regularised squared-hinge linear SVM on a kernel matrix.

Private: arrays and scalars only. Used by GeneralizedNystrom's lam="auto" to score held-out
folds with the classifier the paper evaluates with (a linear SVM on the factor rows, which is
scikit-learn's ``LinearSVC`` default: squared hinge, C = 1, intercept as a regularised
feature of value 1). On factor rows the linear kernel is ``K = G G^T``, so the solver works on
``Kb = K + 1`` and never needs the features. Folds with more training labels than landmarks
use the feature form over the weights instead (``nystrom_priors._linear_svm``), which shares
``exact_step`` and ``heldout_scores`` with this module.

Primal in the representer form ``f = Kb beta`` (Chapelle 2007; Keerthi & DeCoste 2005):

    min_beta  1/2 beta^T Kb beta + C sum_i max(0, 1 - y_i f_i)^2.

On a fixed active set A = {i : y_i f_i < 1} it is a quadratic whose minimiser is
``beta_A = (Kb_AA + I / (2C))^-1 y_A``, ``beta = 0`` off A. Each Newton step solves that
system (Cholesky, |A| <= n) and takes an exact line search on the convex piecewise-quadratic
objective; it stops when the step's end point has the same active set, which is then the exact
optimum (the KKT conditions of the dual ``alpha = y o beta >= 0`` hold by construction). A
handful of steps instead of the hundreds-to-thousands of sweeps of liblinear's dual coordinate
descent, which on nearly rank-one kernels (a wide Gaussian prior) stalls at its sweep limit.
"""

import numpy as np
from numba import njit

from ._bcd import _cholesky_solve

_FM = {"reassoc", "contract"}


@njit(cache=True, nogil=True, fastmath=_FM)
def _newton_point(Kb, y, act, C, out):
    """``out`` = the minimiser on the active set ``act`` (bool (n,)): Kb_AA + I/2C is SPD."""
    idx = np.flatnonzero(act)
    p = idx.size
    H = np.empty((p, p))
    rhs = np.empty(p)
    for a in range(p):
        rhs[a] = y[idx[a]]
        for b in range(p):
            H[a, b] = Kb[idx[a], idx[b]]
        H[a, a] += 0.5 / C
    z = np.empty(p)
    _cholesky_solve(H, rhs, z)
    out[:] = 0.0
    for a in range(p):
        out[idx[a]] = z[a]


@njit(cache=True, nogil=True, fastmath=_FM)
def _slope(t, A, B, C, m, s):
    """d/dt of the objective along the step: A + t B - 2C sum s_i max(0, m_i - t s_i)."""
    v = A + t * B
    for i in range(m.size):
        r = m[i] - t * s[i]
        if r > 0.0:
            v -= 2.0 * C * s[i] * r
    return v


@njit(cache=True, nogil=True, fastmath=_FM)
def exact_step(A, B, C, m, s):
    """Exact line search along a Newton direction; -1.0 when there is no descent.

    The objective along the step is ``phi(t) = phi(0) + A t + B t^2 / 2 + C sum max(0, m_i -
    t s_i)^2`` minus constants (A = <beta, d>_K or <w, d>, B = <d, d>_K or <d, d>; m_i = 1 -
    y_i f_i the margins, s_i = y_i g_i their change per unit step): convex, with a piecewise
    linear nondecreasing slope whose root is found between its sorted breakpoints m_i / s_i.
    """
    lo = 0.0
    vlo = _slope(0.0, A, B, C, m, s)
    if vlo >= 0.0:
        return -1.0
    n = m.size
    brk = np.empty(n)
    nb = 0
    for i in range(n):
        if s[i] != 0.0:
            tb = m[i] / s[i]
            if tb > 0.0:
                brk[nb] = tb
                nb += 1
    brk = np.sort(brk[:nb])
    for k in range(nb):
        v = _slope(brk[k], A, B, C, m, s)
        if v >= 0.0:
            return lo - vlo * (brk[k] - lo) / (v - vlo)
        lo = brk[k]
        vlo = v
    # past the last breakpoint the slope is linear with this derivative
    curv = B
    for i in range(n):
        if m[i] - (lo + 1.0) * s[i] > 0.0:
            curv += 2.0 * C * s[i] * s[i]
    if curv <= 0.0:
        return -1.0
    return lo - vlo / curv


@njit(cache=True, nogil=True, fastmath=_FM)
def svm_primal_newton(Kb, y, C, max_iter, beta):
    """Fit one binary problem from ``beta = 0``; the solution is written into ``beta``.

    ``Kb`` (n, n) symmetric PSD kernel including the +1 of the intercept, ``y`` (n,) in
    {-1, +1}; decisions are ``Kb_new @ beta``. Returns the number of Newton steps, or
    ``-max_iter`` when it ran out before the active set settled.
    """
    n = Kb.shape[0]
    f = np.zeros(n)
    beta[:] = 0.0
    act = np.ones(n, dtype=np.bool_)  # at beta = 0 every margin is violated
    bnew = np.empty(n)
    d = np.empty(n)
    g = np.empty(n)
    m = np.empty(n)
    s = np.empty(n)
    for it in range(1, max_iter + 1):
        _newton_point(Kb, y, act, C, bnew)
        for i in range(n):
            d[i] = bnew[i] - beta[i]
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += Kb[i, j] * d[j]
            g[i] = acc
        same = True
        for i in range(n):
            if (y[i] * (f[i] + g[i]) < 1.0) != act[i]:
                same = False
                break
        if same:  # the full step keeps the active set: exact optimum
            for i in range(n):
                beta[i] = bnew[i]
            return it
        A = 0.0
        B = 0.0
        for i in range(n):
            A += f[i] * d[i]
            B += g[i] * d[i]
            m[i] = 1.0 - y[i] * f[i]
            s[i] = y[i] * g[i]
        t = exact_step(A, B, C, m, s)
        if t < 0.0:  # no descent left at this precision
            return it
        for i in range(n):
            beta[i] += t * d[i]
            f[i] += t * g[i]
            act[i] = y[i] * f[i] < 1.0
    return -max_iter


@njit(cache=True, nogil=True, fastmath=_FM)
def ovr_heldout_loss(Kb_tr, Kb_te, codes_tr, codes_te, n_classes, C, max_iter):
    """Held-out hinge loss and 0/1 errors of one-vs-rest squared-hinge SVMs.

    Two classes: one problem (class 1 positive), like liblinear. Returns (sum over held-out
    samples and problems of max(0, 1 - y f), number of misclassified held-out samples,
    number of problems that hit ``max_iter``). The plain hinge of the held-out decisions,
    not the training loss: measured on the paper's protocol it ranks lam better (a few
    badly wrong held-out samples dominate a squared loss).
    """
    n_tr = Kb_tr.shape[0]
    n_te = Kb_te.shape[0]
    n_prob = 1 if n_classes == 2 else n_classes
    dec = np.empty((n_te, n_prob))
    beta = np.zeros(n_tr)
    y = np.empty(n_tr)
    unconverged = 0
    for c in range(n_prob):
        pos = 1 if n_classes == 2 else c
        for i in range(n_tr):
            y[i] = 1.0 if codes_tr[i] == pos else -1.0
        if svm_primal_newton(Kb_tr, y, C, max_iter, beta) < 0:
            unconverged += 1
        for t in range(n_te):
            acc = 0.0
            for j in range(n_tr):
                acc += beta[j] * Kb_te[t, j]
            dec[t, c] = acc
    loss, errors = heldout_scores(dec, codes_te, n_classes)
    return loss, errors, unconverged


@njit(cache=True, nogil=True, fastmath=_FM)
def heldout_scores(dec, codes_te, n_classes):
    """(sum of max(0, 1 - y f) over held-out samples and problems, misclassified samples) of
    one-vs-rest decisions ``dec`` (n_te, 1 for two classes, else n_classes)."""
    n_te = dec.shape[0]
    loss = 0.0
    errors = 0
    for t in range(n_te):
        if n_classes == 2:
            yt = 1.0 if codes_te[t] == 1 else -1.0
            h = 1.0 - yt * dec[t, 0]
            if h > 0.0:
                loss += h
            if (dec[t, 0] > 0.0) != (codes_te[t] == 1):
                errors += 1
        else:
            best = 0
            for c in range(n_classes):
                yt = 1.0 if codes_te[t] == c else -1.0
                h = 1.0 - yt * dec[t, c]
                if h > 0.0:
                    loss += h
                if dec[t, c] > dec[t, best]:
                    best = c
            if best != codes_te[t]:
                errors += 1
    return loss, errors
