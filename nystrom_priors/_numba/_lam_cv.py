"""Jitted cross-validation of GeneralizedNystrom's lam on the labeled rows.

Private: arrays and scalars only; the math is in ``nystrom_priors/generalized/_lam.py``.
The work of one round or one task, which the parallel drivers of ``_lam_race`` deal to the
threads: ``prepare_round`` builds a round's restricted problem once, ``score_task`` scores it
at one lam, one p x p Cholesky factorisation (an eigendecomposition where the PSD constraint
is active) and one (p + 1)-sized solve, p the rank of the round's training rows.
"""

import numpy as np
from numba import njit

from ._guarded_linalg import cholesky_or_empty, solve_or_lstsq
from ._lapack import DORMTR, DSYTRF, lowest_eigenpairs, negative_count, spd_inverse

# rows of scores formed at a time: memory O(_ROWS c) for c classes, never O(l c)
_ROWS = 256
# up to this share of negative eigenvalues, only those pairs (``_lapack.lowest_eigenpairs``):
# their cost reaches a full eigendecomposition's near p / 6
_PARTIAL_MAX = 1.0 / 6.0


@njit(cache=True, nogil=True)
def _target(code, k, n_classes):
    """The +-1 target of a row of class ``code`` in score column k (one column, class 1
    positive, for two classes; one-vs-rest columns otherwise)."""
    if n_classes == 2:
        return 1.0 if code == 1 else -1.0
    return 1.0 if code == k else -1.0


@njit(cache=True, nogil=True)
def _class_sums(F, codes, n_classes):
    """``F^T Y`` (p, n_classes) for the one-hot Y of ``codes``, without Y (l x n_classes)."""
    l, p = F.shape
    out = np.zeros((p, n_classes))
    for i in range(l):
        c = codes[i]
        for a in range(p):
            out[a, c] += F[i, a]
    return out


@njit(cache=True, nogil=True)
def _target_products(F, sums, codes, n_classes):
    """``(F^T T, T^T 1)`` for the +-1 targets T of ``codes`` (``_target``; T = 2 Y - 1 for
    one-vs-rest, one column for two classes), without T (l x c); ``sums`` is ``F^T Y``
    (``_class_sums``)."""
    l, p = F.shape
    counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
    total = F.sum(axis=0)
    if n_classes == 2:
        FtT = np.empty((p, 1))
        for a in range(p):
            FtT[a, 0] = 2.0 * sums[a, 1] - total[a]
        return FtT, np.array([2.0 * counts[1] - l])
    FtT = np.empty((p, n_classes))
    for a in range(p):
        for c in range(n_classes):
            FtT[a, c] = 2.0 * sums[a, c] - total[a]
    return FtT, 2.0 * counts - l


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
def _losses(P, codes, n_classes, out, start, scale):
    """Per-sample held-out losses of the scores P (targets ``_target``) into
    ``out[:, start + i]``: squared loss and squared hinge (summed over the one-vs-rest
    columns), 0/1 error, and the ramp loss ``min(max(1 - margin / scale, 0), 2)`` of the
    margin in units of ``scale``."""
    marg = _margins(P, codes, n_classes)
    n, c = P.shape
    for i in range(n):
        sq = 0.0
        sqh = 0.0
        for k in range(c):
            tk = _target(codes[i], k, n_classes)
            d = P[i, k] - tk
            sq += d * d
            h = 1.0 - tk * P[i, k]
            if h > 0.0:
                sqh += h * h
        out[0, start + i] = sq
        out[1, start + i] = sqh
        out[2, start + i] = 1.0 if marg[i] <= 0.0 else 0.0
        out[3, start + i] = min(max(1.0 - marg[i] / scale, 0.0), 2.0)


@njit(cache=True, nogil=True)
def _basis(aT, w, cap, lapack):
    """The family ``S = S0 + V (Y - C) V^T`` on the span of the rows ``aT`` within range(S0).

    ``aT`` (l_T, r): the rows in S0's eigen-coordinates, ``S0 = diag(1 / w)`` there; ``cap``: at
    most this many directions, the rows' strongest (largest eigenvalues of their Gram matrix).
    Returns (Vc (r, p), mu (p,) ascending, C (p, p), F (l_T, p), D (p, p)): Vc orthonormal,
    ``F = aT Vc`` with ``F^T F = diag(mu)``, ``C = (Vc^T W Vc)^-1`` (so that ``S >= 0`` iff
    ``Y >= 0``) and ``D = Vc^T S0 Vc - C``. Without truncation the rows lie in range(Vc),
    ``aT = F Vc^T``, and their kernel under S is ``F (D + Y) F^T``. ``lapack``:
    ``_lapack.addresses()``, or empty for ``np.linalg`` alone.
    """
    l, r = aT.shape
    # the basis from the smaller Gram matrix: never an l x l array when l > r; at l = r from
    # the r side, whose eigenvectors give C without inverting V^T S0^+ V (below)
    small = l < r
    g, A = np.linalg.eigh(aT @ aT.T if small else aT.T @ aT)
    top = g[-1] if g.size > 0 else 0.0
    cut = max(l, r) * 2.220446049250313e-16 * top
    keep = np.flatnonzero(g > cut)
    if keep.size > cap:  # g ascending: the strongest directions come last
        keep = keep[keep.size - cap :]
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
    if p == r and not small:
        # Vc is an orthogonal matrix (eigenvectors): C = (Vc^T W Vc)^-1 = Vc^T W^-1 Vc, read
        # off without inverting a matrix as ill-conditioned as W, and D = 0
        C = Vc.T @ Iv
        C = 0.5 * (C + C.T)
        D = np.zeros((p, p))
    else:
        B = Vc.T @ Wv  # V^T S0^+ V > 0: its inverse from a Cholesky factor
        B = 0.5 * (B + B.T)
        C, done = spd_inverse(B, lapack)
        if not done:  # no LAPACK addresses; or numpy's Cholesky raises as it would have
            Linv = np.linalg.inv(np.linalg.cholesky(B))
            C = Linv.T @ Linv
        C = 0.5 * (C + C.T)
        D = Vc.T @ Iv - C
    return Vc, mu, C, F, D


@njit(cache=True, nogil=True)
def _restricted(aT, w, codes_T, n_classes, lapack):
    """The fold's problem on ``S = S0 + V X V^T``, V = range of the labeled rows within range(S0).

    ``aT`` (l_T, r): the labeled rows in S0's eigen-coordinates, ``S0 = diag(1 / w)`` there.
    Returns (Vc (r, p), mu (p,), C (p, p), R (p, p), F (l_T, p), D, FY): in the basis Vc the
    rows are ``F = A diag(sqrt(mu))``, so ``M = F^T F = diag(mu)``; C is the prior of
    Y = X + C and R the data term's linear part, ``R = F^T K* F - M D M`` with
    ``D = V^T S0 V - C``, and ``FY = F^T Y`` for the one-hot labels Y. ``lapack``:
    ``_lapack.addresses()``, or empty for ``np.linalg`` alone.
    """
    l, r = aT.shape
    Vc, mu, C, F, D = _basis(aT, w, l + r, lapack)
    p = mu.size
    FY = _class_sums(F, codes_T, n_classes)  # F^T Y for the one-hot Y, never Y itself
    R = FY @ FY.T
    for a in range(p):
        for b in range(p):
            R[a, b] -= mu[a] * D[a, b] * mu[b]
    R = 0.5 * (R + R.T)
    return Vc, mu, C, R, F, D, FY


@njit(cache=True, nogil=True)
def restricted_problem(aT, w, codes_T, n_classes, lapack):
    """``(Vc, mu, C, R, F)`` of ``_restricted``."""
    Vc, mu, C, R, F, _, _ = _restricted(aT, w, codes_T, n_classes, lapack)
    return Vc, mu, C, R, F


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
    Lc = cholesky_or_empty(V)
    if Lc.shape[0] == p:
        for a in range(p):
            for k in range(p):
                Lc[a, k] /= s[a]
        return Lc
    return _eig_factor(V, s)


@njit(cache=True, nogil=True)
def _eig_factor(V, s):
    """L with L L^T = D^-1 P_psd(V) D^-1, D = diag(s); eigenvalues of V up to p eps times its
    largest are rounding, not directions of Y, and give no column."""
    p = s.size
    v, Q = np.linalg.eigh(V)
    pos = np.flatnonzero(v > p * 2.220446049250313e-16 * max(v[-1], 0.0))
    L = np.empty((p, pos.size))
    for k in range(pos.size):
        sv = np.sqrt(v[pos[k]])
        for a in range(p):
            L[a, k] = Q[a, pos[k]] / s[a] * sv
    return L


@njit(cache=True, nogil=True)
def onestep_y(mu, C, R, lam, lapack):
    """``onestep``'s Y itself (p x p). Where D c D is positive definite Y is c, and the
    Cholesky factorisation only certifies that (no product with the factor). Elsewhere
    ``P_psd(V) = V - sum_{v_i < 0} v_i q_i q_i^T``: with ``lapack`` (``_lapack.addresses()``;
    empty: all eigenpairs by ``np.linalg.eigh``) and at most ``_PARTIAL_MAX`` p negative
    eigenvalues, only those pairs are computed (``_lapack``), otherwise all of them."""
    V, s = _scaled_target(mu, C, R, lam)
    p = mu.size
    if cholesky_or_empty(V).shape[0] == p:
        for a in range(p):
            for b in range(p):
                V[a, b] /= s[a] * s[b]
        return V
    if lapack.size > DORMTR and np.isfinite(V).all():  # LAPACK's MRRR is not NaN-safe
        k = negative_count(V, lapack[DSYTRF])
        if 0 <= k <= _PARTIAL_MAX * p:
            if k > 0:
                v, Q = lowest_eigenpairs(V, k, lapack)
                if v.size != k:  # LAPACK failed: all eigenpairs below
                    return _full_y(V, s)
                Qv = Q * np.minimum(v, 0.0)
                V -= Qv @ Q.T
            return _unscaled_sym(V, s)
    return _full_y(V, s)


@njit(cache=True, nogil=True)
def _unscaled_sym(Y, s):
    """``D^-1 Y D^-1`` (D = diag(s)) with Y's two triangles averaged, in place."""
    for a in range(s.size):
        for b in range(a + 1):
            Y[a, b] = Y[b, a] = 0.5 * (Y[a, b] + Y[b, a]) / (s[a] * s[b])
    return Y


@njit(cache=True, nogil=True)
def _full_y(V, s):
    """``D^-1 P_psd(V) D^-1`` from every eigenpair of V: ``V - Q_- v_- Q_-^T`` or
    ``Q_+ v_+ Q_+^T``, whichever sums fewer pairs (``2 p^2 min(k, p - k)`` multiply-adds
    rather than ``2 p^3`` for a product of full factors)."""
    p = s.size
    v, Q = np.linalg.eigh(V)
    neg = np.flatnonzero(v < 0.0)
    if 2 * neg.size <= p:
        Qn = Q[:, neg]
        Y = V - (Qn * v[neg]) @ Qn.T
    else:
        pos = np.flatnonzero(v > 0.0)
        Qp = Q[:, pos]
        Y = (Qp * v[pos]) @ Qp.T
    return _unscaled_sym(Y, s)


@njit(cache=True, nogil=True)
def _round_constants(PE, w, codes, n_classes, train, test, lapack):
    """What a round's scores share across lam: ``(mu, C, R, D, FT, FV, GV, b, BtT)``.

    The training rows lie in range(Vc), ``a_T = F_T Vc^T``, so on the family
    ``S = S0 + Vc (Y - C) Vc^T`` the training kernel is ``F_T (D + Y) F_T^T`` with
    ``D = Vc^T S0 Vc - C`` and the held-out one ``(G_V + F_V Y) F_T^T`` with
    ``G_V = a_V S0 Vc - F_V C``; ``B = [F_T, 1]`` adds the constant feature, so
    ``B^T B = [[M, b], [b^T, l_T]]`` with ``M = F_T^T F_T = diag(mu)`` and ``b = F_T^T 1``
    (only b is kept), and ``BtT = B^T T`` (T: the +-1 targets of the training rows).
    ``lapack``: ``_lapack.addresses()``, or empty for ``np.linalg`` alone.
    """
    aT = PE[train]
    aV = PE[test]
    codes_T = codes[train]
    lT, r = aT.shape
    Vc, mu, C, R, FT, D, FY = _restricted(aT, w, codes_T, n_classes, lapack)
    p = mu.size
    FV = aV @ Vc
    S0Vc = np.empty((r, p))
    for i in range(r):
        for k in range(p):
            S0Vc[i, k] = Vc[i, k] / w[i]
    GV = aV @ S0Vc - FV @ C
    FtT, Tsum = _target_products(FT, FY, codes_T, n_classes)
    BtT = np.empty((p + 1, Tsum.size))
    BtT[:p] = FtT
    BtT[p] = Tsum
    return mu, C, R, D, FT, FV, GV, FT.sum(axis=0), BtT


@njit(cache=True, nogil=True)
def _lam_scores(mu, C, R, D, FT, FV, GV, b, BtT, rel_lam, alpha, lapack):
    """The ridge classifier of one round at ``lam = rel_lam * mu_max^2`` (the prior where
    ``rel_lam`` is inf), as ``(coef, HV, ZC)``: held-out scores ``HV coef`` (l_V, c) and
    training scores ``coef[p] + F_T ZC`` (l_T, c), formed a block of rows at a time by the
    caller (``_train_scores``) so that c classes cost O(rows c), never O(l c).

    With ``Yt = diag(D + Y, 1)`` the ridge classifier's held-out scores are
    ``[G_V + F_V Y, 1] (B^T B Yt + alpha I)^-1 B^T T`` and the training ones
    ``B Yt (B^T B Yt + alpha I)^-1 B^T T`` (push-through identity on ``K = B Yt B^T``), so
    neither an l_T x l_T kernel nor a factor of Y is formed: a (p + 1)-sized solve. Its
    matrix needs no product: ``B^T B`` is diagonal but for its last row and column
    (``_round_constants``)."""
    p = mu.size
    if p > 0 and np.isfinite(rel_lam):
        Y = onestep_y(mu, C, R, rel_lam * mu[-1] * mu[-1], lapack)
    else:  # the prior: Y = C, S = S0
        Y = C
    Z = D + Y  # the training rows' kernel is F_T Z F_T^T
    A = np.empty((p + 1, p + 1))  # B^T B diag(Z, 1) + alpha I
    A[p, :] = 0.0
    for a in range(p):
        for c in range(p):
            A[a, c] = mu[a] * Z[a, c]
            A[p, c] += b[a] * Z[a, c]
        A[a, a] += alpha
        A[a, p] = b[a]
    A[p, p] = FT.shape[0] + alpha
    coef = solve_or_lstsq(A, BtT)
    HV = np.ones((FV.shape[0], p + 1))
    HV[:, :p] = GV + FV @ Y
    ZC = Z @ np.ascontiguousarray(coef[:p])
    return coef, HV, ZC


@njit(cache=True, nogil=True)
def _train_scores(FT, ZC, coef, start, stop):
    """Training scores ``coef[p] + F_T ZC`` of the rows ``start:stop``."""
    p = ZC.shape[0]
    S = np.empty((stop - start, coef.shape[1]))
    S[:] = coef[p]
    if p > 0:
        S += FT[start:stop] @ ZC
    return S


@njit(cache=True, nogil=True)
def fold_scores(PE, w, codes, n_classes, train, test, rel_lams, alpha):
    """Ridge scores of the held-out rows ``test`` and of the training rows ``train`` along
    ``rel_lams``: arrays (l_V, n_lams, c) and (l_T, n_lams, c), c = 1 for two classes
    (``_round_constants``, ``_lam_scores``)."""
    every = np.zeros(0, dtype=np.int64)  # np.linalg alone: all eigenpairs (np.linalg.eigh)
    mu, C, R, D, FT, FV, GV, b, BtT = _round_constants(PE, w, codes, n_classes, train, test, every)
    c = BtT.shape[1]
    SV = np.empty((test.size, rel_lams.size, c))
    ST = np.empty((train.size, rel_lams.size, c))
    for j in range(rel_lams.size):
        coef, HV, ZC = _lam_scores(mu, C, R, D, FT, FV, GV, b, BtT, rel_lams[j], alpha, every)
        SV[:, j, :] = HV @ coef
        ST[:, j, :] = _train_scores(FT, ZC, coef, 0, train.size)
    return SV, ST


@njit(cache=True, nogil=True)
def new_state(roles, rank, n_classes, max_floats=-1, min_slots=8):
    """Empty buffers for the rounds' ``_round_constants``: ``(dims, mu, C, R, D, FT, FV, GV,
    b, BtT, meta)``, filled by ``prepare_round``. ``dims[t] = (p, l_T, l_V)`` (p = -1: the
    round has no training or no held-out row and scores nothing; -2: not prepared yet); each
    of the next nine arrays is flat, holding ``n_slots`` blocks (``_slot``) of ``per_slot``
    floats in all, so that a task reads its round's block without a copy. Round t lives in
    slot ``t % n_slots``. Every round has a slot of its own unless that takes more than
    ``max_floats`` floats (-1: no limit); then there are ``max(min_slots, max_floats //
    per_slot)`` slots (at most one per round; ``min_slots``: at least the threads, which a
    batch of rounds then keeps busy), and the caller prepares and scores that many
    consecutive rounds at a time (``_lam_race.raced_rounds``): many folds (cv = l) then cost
    ``O(max(max_floats, min_slots per_slot))`` memory, not ``O(n_rounds per_slot)``. ``meta`` =
    ``(n_slots, P, TT, VV, c, owner...)``, owner[k] the round slot k holds (-1: none), which
    a task checks. ``rank``: the number of S0's eigen-coordinates (p <= rank)."""
    total, l = roles.shape
    c = 1 if n_classes == 2 else n_classes
    dims = np.zeros((total, 3), dtype=np.int64)
    for t in range(total):
        dims[t, 0] = -2
        for i in range(l):
            if roles[t, i] == 1:
                dims[t, 1] += 1
            elif roles[t, i] == 2:
                dims[t, 2] += 1
    TT = max(1, dims[:, 1].max()) if total > 0 else 1
    VV = max(1, dims[:, 2].max()) if total > 0 else 1
    P = min(rank, TT)
    sizes = np.array((P, P * P, P * P, P * P, TT * P, VV * P, VV * P, P, (P + 1) * c))
    per_slot = sizes.sum()
    n_slots = max(total, 1)
    if max_floats >= 0 and n_slots * per_slot > max_floats:
        n_slots = min(n_slots, max(min_slots, max_floats // max(per_slot, 1)))
    ends = np.cumsum(sizes) * n_slots
    # one block, not nine: freed, it leaves the allocator a free run it keeps for the next
    # fit, where nine smaller ones were returned to the system and faulted in again
    # (docs/design/performance.md). Uninitialised: a task reads only the part of a slot its
    # round's preparation wrote.
    buf = np.empty(ends[-1])
    MU = buf[: ends[0]]
    CC = buf[ends[0] : ends[1]]
    RR = buf[ends[1] : ends[2]]
    DD = buf[ends[2] : ends[3]]
    FTs = buf[ends[3] : ends[4]]
    FVs = buf[ends[4] : ends[5]]
    GVs = buf[ends[5] : ends[6]]
    bs = buf[ends[6] : ends[7]]
    BtTs = buf[ends[7] :]
    meta = np.full(5 + n_slots, -1, dtype=np.int64)
    meta[0], meta[1], meta[2], meta[3], meta[4] = n_slots, P, TT, VV, c
    return dims, MU, CC, RR, DD, FTs, FVs, GVs, bs, BtTs, meta


@njit(cache=True, nogil=True)
def prepare_round(state, PE, w, codes, n_classes, roles, t, lapack):
    """Fill round t's slot of ``state`` (``new_state``); the slot's previous round, if any,
    can no longer be scored."""
    dims, MU, CC, RR, DD, FTs, FVs, GVs, bs, BtTs, meta = state
    n_slots, P, TT, VV, c = _slot_sizes(state)
    if dims[t, 1] == 0 or dims[t, 2] == 0:
        dims[t, 0] = -1
        return
    train = np.flatnonzero(roles[t] == 1)
    test = np.flatnonzero(roles[t] == 2)
    mu, C, R, D, FT, FV, GV, b, BtT = _round_constants(PE, w, codes, n_classes, train, test, lapack)
    dims[t, 0] = mu.size
    k = t % n_slots
    meta[5 + k] = t
    _slot(MU, k, P, mu)
    _slot(CC, k, P * P, C)
    _slot(RR, k, P * P, R)
    _slot(DD, k, P * P, D)
    _slot(FTs, k, TT * P, FT)
    _slot(FVs, k, VV * P, FV)
    _slot(GVs, k, VV * P, GV)
    _slot(bs, k, P, b)
    _slot(BtTs, k, (P + 1) * c, BtT)


@njit(cache=True, nogil=True)
def _slot_sizes(state):
    """``(n_slots, P, TT, VV, c)`` of a ``new_state``: its number of slots, the largest
    rank, training and held-out counts they hold, and the number of score columns."""
    meta = state[10]
    return meta[0], meta[1], meta[2], meta[3], meta[4]


@njit(cache=True, nogil=True)
def _slot(buf, k, size, a):
    """Copy ``a`` (C order) to the start of slot k (``size`` entries) of the flat ``buf``."""
    flat = a.ravel()
    buf[k * size : k * size + flat.size] = flat


@njit(cache=True, nogil=True)
def _unslot(buf, k, size, rows, cols):
    """Slot k's (rows, cols) block of the flat ``buf``: a view, no copy."""
    return buf[k * size : k * size + rows * cols].reshape((rows, cols))


@njit(cache=True, nogil=True)
def task_losses(state, roles, codes, n_classes, rel_lams, alpha, t, j, lapack):
    """``(rows, losses)``: the held-out rows of round t (ascending) and their losses (4,
    l_V) under round t's model at ``rel_lams[j]`` (``_losses``), the margins in units of
    the training rows' RMS margin under the same model, so that a kernel which only
    inflates every score does not look better or worse. No row where the round has no model
    (``prepare_round``) or its slot holds another round (``new_state``): NaN scores, never
    another round's. ``lapack``: ``_lapack.addresses()`` (partial eigendecompositions)."""
    dims, MU, CC, RR, DD, FTs, FVs, GVs, bs, BtTs, meta = state
    n_slots, P, TT, VV, c = _slot_sizes(state)
    p, lT, lV = dims[t, 0], dims[t, 1], dims[t, 2]
    k = t % n_slots
    if p < 0 or meta[5 + k] != t:  # no model, or its slot now holds another round's
        return np.zeros(0, dtype=np.int64), np.zeros((4, 0))
    train = np.flatnonzero(roles[t] == 1)
    test = np.flatnonzero(roles[t] == 2)
    FT = _unslot(FTs, k, TT * P, lT, p)
    coef, HV, ZC = _lam_scores(
        MU[k * P : k * P + p],
        _unslot(CC, k, P * P, p, p),
        _unslot(RR, k, P * P, p, p),
        _unslot(DD, k, P * P, p, p),
        FT,
        _unslot(FVs, k, VV * P, lV, p),
        _unslot(GVs, k, VV * P, lV, p),
        bs[k * P : k * P + p],
        _unslot(BtTs, k, (P + 1) * c, p + 1, c),
        rel_lams[j],
        alpha,
        lapack,
    )
    codes_T = codes[train]
    ss = 0.0  # the training rows' squared margins, a block of rows at a time
    for s in range(0, lT, _ROWS):
        e = min(s + _ROWS, lT)
        mT = _margins(_train_scores(FT, ZC, coef, s, e), codes_T[s:e], n_classes)
        ss += np.sum(mT * mT)
    scale = np.sqrt(ss / lT)
    if not (scale > 0.0 and np.isfinite(scale)):
        scale = 1.0
    codes_V = codes[test]
    losses = np.empty((4, lV))
    for s in range(0, lV, _ROWS):
        e = min(s + _ROWS, lV)
        _losses(HV[s:e] @ coef, codes_V[s:e], n_classes, losses, s, scale)
    return test, losses


@njit(cache=True, nogil=True)
def score_task(state, roles, codes, n_classes, rel_lams, alpha, t, j, out, lapack):
    """Round t's mean held-out losses at ``rel_lams[j]`` (``task_losses``) into
    ``out[:, t, j]`` (``out``: (4, n_rounds, n_lams)); NaN where the round scores no row
    (or only NaN losses). ``_nan_mean`` sums the rows in ascending order, as ``round_means``
    of ``score_task_samples``' per-sample losses does: the same numbers, bit for bit, in
    O(n_rounds n_lams) memory instead of O(n_rounds l n_lams)."""
    losses = task_losses(state, roles, codes, n_classes, rel_lams, alpha, t, j, lapack)[1]
    for a in range(4):
        out[a, t, j] = _nan_mean(losses[a])


@njit(cache=True, nogil=True)
def score_task_samples(state, roles, codes, n_classes, rel_lams, alpha, t, j, out, lapack):
    """``task_losses`` per sample into ``out[:, t, rows, j]`` (``out``: (4, n_rounds, l,
    n_lams)), for the studies that test per sample (``_lam_race.cv_losses``)."""
    rows, losses = task_losses(state, roles, codes, n_classes, rel_lams, alpha, t, j, lapack)
    for a in range(4):
        for i in range(rows.size):
            out[a, t, rows[i], j] = losses[a, i]


@njit(cache=True, nogil=True)
def round_means(per_sample):
    """(4, n_rounds, n_lams) means over the scored (non-NaN) rows of the per-sample losses
    (4, n_rounds, l, n_lams); NaN where a round scored no row at that lam."""
    q, total, l, n = per_sample.shape
    out = np.empty((q, total, n))
    for a in range(q):
        for t in range(total):
            for j in range(n):
                out[a, t, j] = _nan_mean(per_sample[a, t, :, j])
    return out


@njit(cache=True, nogil=True)
def _nan_mean(x):
    """Mean of the non-NaN entries of x, summed in index order (NaN where there are none):
    a round's mean loss, the same bits whether from per-sample losses or a task's own."""
    total = 0.0
    count = 0
    for i in range(x.size):
        if not np.isnan(x[i]):  # a NaN loss is no measurement
            total += x[i]
            count += 1
    return total / count if count > 0 else np.nan
