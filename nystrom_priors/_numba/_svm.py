"""Jitted dual coordinate descent for the L2-regularised squared-hinge SVM (liblinear's solver).

Private: arrays and scalars only. Used by GeneralizedNystrom's lam="auto" to score held-out
folds with the classifier the paper evaluates with (a linear SVM on the factor rows, which is
scikit-learn's ``LinearSVC`` default: squared hinge, C = 1, intercept as a regularised
feature of value 1). On factor rows the linear kernel is ``K = G G^T``, so the solver works on
``Kb = K + 1`` and never needs the features.

Dual (Hsieh et al. 2008, L2-loss):  min_a  1/2 a^T (Q + I/(2C)) a - 1^T a,  a >= 0,
``Q_ij = y_i y_j Kb_ij``. Each step minimises exactly in one coordinate; it stops when the
spread of the projected gradient over a sweep is below ``tol`` (liblinear's rule).
"""

import numpy as np
from numba import njit

_FM = {"reassoc", "contract"}


@njit(cache=True, nogil=True, fastmath=_FM)
def svm_dual_cd(Kb, y, C, tol, max_sweeps, alpha):
    """Fit one binary problem from ``alpha = 0``; the solution is written into ``alpha``.

    ``Kb`` (n, n) kernel including the +1 of the intercept, ``y`` (n,) in {-1, +1}.
    Returns the number of sweeps, or ``-sweeps`` when ``max_sweeps`` ran out.
    """
    n = Kb.shape[0]
    diag = 0.5 / C
    alpha[:] = 0.0
    f = np.zeros(n)  # f_i = sum_j alpha_j y_j Kb_ij
    for sweep in range(1, max_sweeps + 1):
        pg_max = -np.inf
        pg_min = np.inf
        for i in range(n):
            G = y[i] * f[i] - 1.0 + diag * alpha[i]
            PG = G
            if alpha[i] == 0.0 and G > 0.0:
                PG = 0.0
            if PG > pg_max:
                pg_max = PG
            if PG < pg_min:
                pg_min = PG
            if PG != 0.0:
                old = alpha[i]
                new = old - G / (Kb[i, i] + diag)
                if new < 0.0:
                    new = 0.0
                alpha[i] = new
                d = (new - old) * y[i]
                if d != 0.0:
                    for k in range(n):
                        f[k] += d * Kb[k, i]
        if pg_max - pg_min <= tol:
            return sweep
    return -max_sweeps


@njit(cache=True, nogil=True, fastmath=_FM)
def ovr_heldout_loss(Kb_tr, Kb_te, codes_tr, codes_te, n_classes, C, tol, max_sweeps):
    """Held-out hinge loss and 0/1 errors of one-vs-rest squared-hinge SVMs.

    Two classes: one problem (class 1 positive), like liblinear. Returns (sum over held-out
    samples and problems of max(0, 1 - y f), number of misclassified held-out samples,
    number of problems that hit ``max_sweeps``). The plain hinge of the held-out decisions,
    not the training loss: measured on the paper's protocol it ranks lam better (a few
    badly wrong held-out samples dominate a squared loss).
    """
    n_tr = Kb_tr.shape[0]
    n_te = Kb_te.shape[0]
    n_prob = 1 if n_classes == 2 else n_classes
    dec = np.empty((n_te, n_prob))
    alpha = np.zeros(n_tr)
    y = np.empty(n_tr)
    unconverged = 0
    for c in range(n_prob):
        pos = 1 if n_classes == 2 else c
        for i in range(n_tr):
            y[i] = 1.0 if codes_tr[i] == pos else -1.0
        if svm_dual_cd(Kb_tr, y, C, tol, max_sweeps, alpha) < 0:
            unconverged += 1
        for t in range(n_te):
            s = 0.0
            for j in range(n_tr):
                s += alpha[j] * y[j] * Kb_te[t, j]
            dec[t, c] = s
    loss = 0.0
    errors = 0
    for t in range(n_te):
        if n_prob == 1:
            yt = 1.0 if codes_te[t] == 1 else -1.0
            h = 1.0 - yt * dec[t, 0]
            if h > 0.0:
                loss += h
            if (dec[t, 0] > 0.0) != (codes_te[t] == 1):
                errors += 1
        else:
            best = 0
            for c in range(n_prob):
                yt = 1.0 if codes_te[t] == c else -1.0
                h = 1.0 - yt * dec[t, c]
                if h > 0.0:
                    loss += h
                if dec[t, c] > dec[t, best]:
                    best = c
            if best != codes_te[t]:
                errors += 1
    return loss, errors, unconverged
