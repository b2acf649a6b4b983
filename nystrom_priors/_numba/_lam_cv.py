"""Jitted cross-validation of GeneralizedNystrom's lam on the labeled rows.

Private: arrays and scalars only; the math is in ``nystrom_priors/generalized/_lam.py``.
One call scores every (fold, lam): folds run in parallel (``prange``), each fold builds its
restricted problem once and then costs one p x p eigendecomposition per lam, p the rank of the
fold's labeled rows.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _pm_targets(codes, n_classes):
    n = codes.size
    if n_classes == 2:
        T = np.empty((n, 1))
        for i in range(n):
            T[i, 0] = 1.0 if codes[i] == 1 else -1.0
        return T
    T = -np.ones((n, n_classes))
    for i in range(n):
        T[i, codes[i]] = 1.0
    return T


@njit(cache=True, nogil=True)
def _losses(P, codes, n_classes, out, j):
    """Mean held-out squared loss, squared hinge and 0/1 error of the scores P into out[:, j]."""
    T = _pm_targets(codes, n_classes)
    n, c = P.shape
    sq = 0.0
    sqh = 0.0
    err = 0.0
    for i in range(n):
        best = 0
        for k in range(c):
            d = P[i, k] - T[i, k]
            sq += d * d
            h = 1.0 - T[i, k] * P[i, k]
            if h > 0.0:
                sqh += h * h
            if P[i, k] > P[i, best]:
                best = k
        pred = (1 if P[i, 0] > 0.0 else 0) if n_classes == 2 else best
        if pred != codes[i]:
            err += 1.0
    out[0, j] = sq / n
    out[1, j] = sqh / n
    out[2, j] = err / n


@njit(cache=True, nogil=True)
def restricted_problem(aT, w, codes_T, n_classes):
    """The fold's problem on ``S = S0 + V X V^T``, V = range of the labeled rows within range(S0).

    ``aT`` (l_T, r): the labeled rows in S0's eigen-coordinates, ``S0 = diag(1 / w)`` there.
    Returns (Vc (r, p), mu (p,), C (p, p), R (p, p), F (l_T, p)): in the basis Vc the rows are
    ``F = A diag(sqrt(mu))``, so ``M = F^T F = diag(mu)``; C is the prior of Y = X + C and R the
    data term's linear part, ``R = F^T K* F - M D M`` with ``D = V^T S0 V - C``.
    """
    l, r = aT.shape
    # the basis from the smaller Gram matrix: never an l x l array when l > r
    small = l <= r
    g, A = np.linalg.eigh(aT @ aT.T if small else aT.T @ aT)
    top = g[-1] if g.size > 0 else 0.0
    cut = max(l, r) * 2.220446049250313e-16 * top
    keep = np.flatnonzero(g > cut)
    p = keep.size
    mu = np.empty(p)
    for k in range(p):
        mu[k] = g[keep[k]]
    if small:  # F = A sqrt(mu), V = aT^T A / sqrt(mu)
        F = np.empty((l, p))
        for k in range(p):
            sk = np.sqrt(mu[k])
            for i in range(l):
                F[i, k] = A[i, keep[k]] * sk
        Vc = aT.T @ F
        for k in range(p):
            Vc[:, k] /= mu[k]
    else:  # V = eigenvectors of aT^T aT, F = aT V
        Vc = np.empty((r, p))
        for k in range(p):
            for i in range(r):
                Vc[i, k] = A[i, keep[k]]
        F = aT @ Vc
    Wv = np.empty((r, p))
    Iv = np.empty((r, p))
    for i in range(r):
        for k in range(p):
            Wv[i, k] = Vc[i, k] * w[i]
            Iv[i, k] = Vc[i, k] / w[i]
    B = Vc.T @ Wv  # V^T S0^+ V > 0: its inverse from a Cholesky factor
    Linv = np.linalg.inv(np.linalg.cholesky(0.5 * (B + B.T)))
    C = Linv.T @ Linv
    C = 0.5 * (C + C.T)
    D = Vc.T @ Iv - C
    Y = np.zeros((l, n_classes))
    for i in range(l):
        Y[i, codes_T[i]] = 1.0
    FY = F.T @ Y
    R = FY @ FY.T
    for a in range(p):
        for b in range(p):
            R[a, b] -= mu[a] * D[a, b] * mu[b]
    R = 0.5 * (R + R.T)
    return Vc, mu, C, R, F


@njit(cache=True, nogil=True)
def _cholesky_or_empty(V):
    """The Cholesky factor of V, or a (0, 0) array when V is not positive definite."""
    try:
        return np.linalg.cholesky(V)
    except Exception:  # noqa: BLE001 - numba raises a generic LinAlgError
        return np.zeros((0, 0))


@njit(cache=True, nogil=True)
def onestep(mu, C, R, lam):
    """Y = D^-1 P_psd(D c D) D^-1, c = (lam C + R) / (lam + mu mu^T), D = diag((lam + mu^2)^(1/4)),
    returned as a factor L (Y = L L^T). Where D c D is positive definite (the constraint is
    inactive) its Cholesky factor gives L at a twentieth of an eigendecomposition's cost."""
    p = mu.size
    s = np.empty(p)
    for k in range(p):
        s[k] = (lam + mu[k] * mu[k]) ** 0.25
    V = np.empty((p, p))
    for a in range(p):
        for b in range(p):
            V[a, b] = (lam * C[a, b] + R[a, b]) / (lam + mu[a] * mu[b]) * s[a] * s[b]
    V = 0.5 * (V + V.T)
    Lc = _cholesky_or_empty(V)
    if Lc.shape[0] == p:
        for a in range(p):
            for k in range(p):
                Lc[a, k] /= s[a]
        return Lc
    v, Q = np.linalg.eigh(V)
    pos = np.flatnonzero(v > 0.0)
    L = np.empty((p, pos.size))
    for k in range(pos.size):
        sv = np.sqrt(v[pos[k]])
        for a in range(p):
            L[a, k] = Q[a, pos[k]] / s[a] * sv
    return L


@njit(cache=True, nogil=True)
def _psd_factor(A, scale):
    """L with L L^T = A's PSD part; eigenvalues below m eps scale (round-off of a matrix whose
    entries are ~scale) are dropped."""
    v, Q = np.linalg.eigh(0.5 * (A + A.T))
    pos = np.flatnonzero(v > A.shape[0] * 2.220446049250313e-16 * scale)
    L = np.empty((A.shape[0], pos.size))
    for k in range(pos.size):
        sv = np.sqrt(v[pos[k]])
        for a in range(A.shape[0]):
            L[a, k] = Q[a, pos[k]] * sv
    return L


@njit(cache=True, nogil=True)
def _fold(PE, w, codes, n_classes, train, test, rel_lams, alpha, out):
    aT = PE[train]
    aV = PE[test]
    codes_T = codes[train]
    codes_V = codes[test]
    lT, r = aT.shape
    Vc, mu, C, R, FT = restricted_problem(aT, w, codes_T, n_classes)
    p = mu.size
    FV = aV @ Vc
    targets = _pm_targets(codes_T, n_classes)
    mu_max = mu[-1] if p > 0 else 0.0
    kernel_form = lT <= r + 1
    if kernel_form:
        # E (S0 - V C V^T) E^T on (T, T) and (V, T): the prior outside the family
        PT = aT / np.sqrt(w)
        PV = aV / np.sqrt(w)
        HT = FT @ C
        K1TT = PT @ PT.T - HT @ FT.T
        K1VT = PV @ PT.T - (FV @ C) @ FT.T
    else:
        # feature form: the prior outside the family as a factor in S0's coordinates
        Rz = -(Vc @ C) @ Vc.T
        for i in range(r):
            Rz[i, i] += 1.0 / w[i]
        F1 = _psd_factor(Rz, 1.0 / w.min())
        P1T = aT @ F1
        P1V = aV @ F1
    for j in range(rel_lams.size):
        if p == 0 or not np.isfinite(rel_lams[j]):
            L = _psd_factor(C, 1.0 / w.min()) if p > 0 else np.zeros((0, 0))
        else:
            L = onestep(mu, C, R, rel_lams[j] * mu_max * mu_max)
        if kernel_form:
            GT = FT @ L
            GV = FV @ L
            K = K1TT + GT @ GT.T
            for a in range(lT):
                for b in range(lT):
                    K[a, b] += 1.0
                K[a, a] += alpha
            KV = K1VT + GV @ GT.T + 1.0
            P = KV @ np.linalg.solve(0.5 * (K + K.T), targets)
        else:
            q1 = P1T.shape[1]
            q = q1 + L.shape[1] + 1
            PhT = np.ones((lT, q))
            PhV = np.ones((aV.shape[0], q))
            PhT[:, :q1] = P1T
            PhV[:, :q1] = P1V
            PhT[:, q1 : q - 1] = FT @ L
            PhV[:, q1 : q - 1] = FV @ L
            A = PhT.T @ PhT
            for a in range(q):
                A[a, a] += alpha
            P = PhV @ np.linalg.solve(A, PhT.T @ targets)
        _losses(P, codes_V, n_classes, out, j)


@njit(cache=True, parallel=True)
def cv_losses(PE, w, codes, n_classes, folds, n_folds, rel_lams, alpha):
    """Held-out losses (3, n_splits * n_folds, n_lams): squared loss, squared hinge, 0/1
    error; ``folds`` (n_splits, l) gives each labeled row's fold per split. NaN for a fold with
    no held-out or no training row."""
    n_splits = folds.shape[0]
    total = n_splits * n_folds
    out = np.full((total, 3, rel_lams.size), np.nan)
    for t in prange(total):
        s = t // n_folds
        f = t - s * n_folds
        test = np.flatnonzero(folds[s] == f)
        train = np.flatnonzero(folds[s] != f)
        if test.size > 0 and train.size > 0:
            _fold(PE, w, codes, n_classes, train, test, rel_lams, alpha, out[t])
    res = np.empty((3, total, rel_lams.size))
    for t in range(total):
        for k in range(3):
            res[k, t] = out[t, k]
    return res
