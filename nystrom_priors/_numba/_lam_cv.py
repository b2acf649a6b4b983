"""Jitted cross-validation of GeneralizedNystrom's lam on the labeled rows.

Private: arrays and scalars only; the math is in ``nystrom_priors/generalized/_lam.py``.
One call scores every (fold, lam): folds run in parallel (``prange``), each fold builds its
restricted problem once and then costs one p x p Cholesky factorisation (an eigendecomposition
where the PSD constraint is active) and one (p + 1)-sized solve per lam, p the rank of the
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
def _margins(P, codes, n_classes):
    """Classification margin of each row's scores: ``t P`` (two classes, t = +-1), else the
    true class's score minus the best other score. Positive means classified right."""
    n = P.shape[0]
    out = np.empty(n)
    for i in range(n):
        if n_classes == 2:
            out[i] = P[i, 0] if codes[i] == 1 else -P[i, 0]
        else:
            other = -np.inf
            for k in range(P.shape[1]):
                if k != codes[i] and P[i, k] > other:
                    other = P[i, k]
            out[i] = P[i, codes[i]] - other
    return out


@njit(cache=True, nogil=True)
def _losses(P, T, codes, n_classes, rows, out, j, scale):
    """Per-sample held-out losses of the scores P (targets T, ``_pm_targets``) into
    ``out[:, rows[i], j]``: squared loss and squared hinge (summed over the one-vs-rest
    columns), 0/1 error, and the ramp loss ``min(max(1 - margin / scale, 0), 2)`` of the
    margin in units of ``scale``."""
    marg = _margins(P, codes, n_classes)
    n, c = P.shape
    for i in range(n):
        sq = 0.0
        sqh = 0.0
        for k in range(c):
            d = P[i, k] - T[i, k]
            sq += d * d
            h = 1.0 - T[i, k] * P[i, k]
            if h > 0.0:
                sqh += h * h
        out[0, rows[i], j] = sq
        out[1, rows[i], j] = sqh
        out[2, rows[i], j] = 1.0 if marg[i] <= 0.0 else 0.0
        out[3, rows[i], j] = min(max(1.0 - marg[i] / scale, 0.0), 2.0)


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
def _scaled_target(mu, C, R, lam):
    """``(D c D, s)``: the unconstrained optimum c = (lam C + R) / (lam + mu mu^T) in the
    majoriser's coordinates, D = diag(s), s = (lam + mu^2)^(1/4)."""
    p = mu.size
    s = np.empty(p)
    for k in range(p):
        s[k] = (lam + mu[k] * mu[k]) ** 0.25
    V = np.empty((p, p))
    for a in range(p):
        for b in range(p):
            V[a, b] = (lam * C[a, b] + R[a, b]) / (lam + mu[a] * mu[b]) * s[a] * s[b]
    return 0.5 * (V + V.T), s


@njit(cache=True, nogil=True)
def onestep(mu, C, R, lam):
    """Y = D^-1 P_psd(D c D) D^-1, c = (lam C + R) / (lam + mu mu^T), D = diag((lam + mu^2)^(1/4)),
    returned as a factor L (Y = L L^T). Where D c D is positive definite (the constraint is
    inactive) its Cholesky factor gives L at a twentieth of an eigendecomposition's cost."""
    V, s = _scaled_target(mu, C, R, lam)
    p = mu.size
    Lc = _cholesky_or_empty(V)
    if Lc.shape[0] == p:
        for a in range(p):
            for k in range(p):
                Lc[a, k] /= s[a]
        return Lc
    return _eig_factor(V, s)


@njit(cache=True, nogil=True)
def _eig_factor(V, s):
    """L with L L^T = D^-1 P_psd(V) D^-1, D = diag(s)."""
    p = s.size
    v, Q = np.linalg.eigh(V)
    pos = np.flatnonzero(v > 0.0)
    L = np.empty((p, pos.size))
    for k in range(pos.size):
        sv = np.sqrt(v[pos[k]])
        for a in range(p):
            L[a, k] = Q[a, pos[k]] / s[a] * sv
    return L


@njit(cache=True, nogil=True)
def onestep_y(mu, C, R, lam):
    """``onestep``'s Y itself (p x p). Where D c D is positive definite Y is c, and the
    Cholesky factorisation only certifies that (no product with the factor)."""
    V, s = _scaled_target(mu, C, R, lam)
    p = mu.size
    if _cholesky_or_empty(V).shape[0] == p:
        for a in range(p):
            for b in range(p):
                V[a, b] /= s[a] * s[b]
        return V
    L = _eig_factor(V, s)
    return L @ L.T


@njit(cache=True, nogil=True)
def fold_scores(PE, w, codes, n_classes, train, test, rel_lams, alpha):
    """Ridge scores of the held-out rows ``test`` and of the training rows ``train`` along
    ``rel_lams``: arrays (l_V, n_lams, c) and (l_T, n_lams, c), c = 1 for two classes.

    The training rows lie in range(Vc), ``a_T = F_T Vc^T``, so on the family
    ``S = S0 + Vc (Y - C) Vc^T`` the training kernel is ``F_T (D + Y) F_T^T`` with
    ``D = Vc^T S0 Vc - C`` and the held-out one ``(G_V + F_V Y) F_T^T`` with
    ``G_V = a_V S0 Vc - F_V C``: every lam is a (p + 1)-sized problem. With the constant
    feature, ``B = [F_T, 1]`` and ``Yt = diag(D + Y, 1)``, the ridge classifier's held-out
    scores are ``[G_V + F_V Y, 1] (B^T B Yt + alpha I)^-1 B^T T`` and the training ones
    ``B Yt (B^T B Yt + alpha I)^-1 B^T T`` (push-through identity on ``K = B Yt B^T``), so
    neither an l_T x l_T kernel nor a factor of Y is formed.
    """
    aT = PE[train]
    aV = PE[test]
    codes_T = codes[train]
    lT, r = aT.shape
    lV = aV.shape[0]
    Vc, mu, C, R, FT = restricted_problem(aT, w, codes_T, n_classes)
    p = mu.size
    FV = aV @ Vc
    targets = _pm_targets(codes_T, n_classes)
    mu_max = mu[-1] if p > 0 else 0.0
    # fold-constant parts: B^T B, B^T T, D, G_V
    B = np.ones((lT, p + 1))
    B[:, :p] = FT
    BtB = B.T @ B
    BtT = B.T @ targets
    S0Vc = np.empty((r, p))
    for i in range(r):
        for k in range(p):
            S0Vc[i, k] = Vc[i, k] / w[i]
    D = Vc.T @ S0Vc - C
    GV = aV @ S0Vc - FV @ C
    Yt = np.zeros((p + 1, p + 1))
    Yt[p, p] = 1.0
    HV = np.ones((lV, p + 1))
    c = targets.shape[1]
    SV = np.empty((lV, rel_lams.size, c))
    ST = np.empty((lT, rel_lams.size, c))
    for j in range(rel_lams.size):
        if p > 0 and np.isfinite(rel_lams[j]):
            Y = onestep_y(mu, C, R, rel_lams[j] * mu_max * mu_max)
        else:  # the prior: Y = C, S = S0
            Y = C
        for a in range(p):
            for b in range(p):
                Yt[a, b] = D[a, b] + Y[a, b]
        A = BtB @ Yt
        for a in range(p + 1):
            A[a, a] += alpha
        HV[:, :p] = GV + FV @ Y
        coef = np.linalg.solve(A, BtT)
        SV[:, j, :] = HV @ coef
        ST[:, j, :] = B @ (Yt @ coef)
    return SV, ST


@njit(cache=True, nogil=True)
def _fold(PE, w, codes, n_classes, train, test, rel_lams, alpha, out):
    """Score the held-out rows ``test`` along ``rel_lams`` into ``out`` (4, l, n_lams)."""
    SV, ST = fold_scores(PE, w, codes, n_classes, train, test, rel_lams, alpha)
    codes_T = codes[train]
    codes_V = codes[test]
    T = _pm_targets(codes_V, n_classes)
    for j in range(rel_lams.size):
        # the margins' unit: the RMS margin of the training rows under the same model, so
        # that a kernel which only inflates every score does not look better or worse
        mT = _margins(ST[:, j, :], codes_T, n_classes)
        scale = np.sqrt(np.mean(mT * mT))
        if not (scale > 0.0 and np.isfinite(scale)):
            scale = 1.0
        _losses(SV[:, j, :], T, codes_V, n_classes, test, out, j, scale)


@njit(cache=True, parallel=True)
def cv_losses(PE, w, codes, n_classes, roles, rel_lams, alpha):
    """Held-out losses per sample (4, n_rounds, l, n_lams): squared loss, squared hinge, 0/1
    error and scaled margin ramp (``_losses``) of each row in the rounds that score it, NaN
    elsewhere.

    ``roles`` (n_rounds, l) marks each labeled row per round: 1 trains the round's model, 2 is
    scored, 0 is left out. A round with no training row scores nothing."""
    total, l = roles.shape
    out = np.full((total, 4, l, rel_lams.size), np.nan)
    for t in prange(total):
        train = np.flatnonzero(roles[t] == 1)
        test = np.flatnonzero(roles[t] == 2)
        if test.size > 0 and train.size > 0:
            _fold(PE, w, codes, n_classes, train, test, rel_lams, alpha, out[t])
    res = np.empty((4, total, l, rel_lams.size))
    for t in range(total):
        for k in range(4):
            res[k, t] = out[t, k]
    return res
