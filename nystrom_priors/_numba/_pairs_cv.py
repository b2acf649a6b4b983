"""Jitted one-step model of GeneralizedNystrom on pairs, and its cross-validation.

Private: arrays and scalars only; the math is in ``nystrom_priors/generalized/_lam_pairs.py``.
A pair list is given as point indices ``a``, ``b`` (rows of the points' coordinates ``A``)
and targets ``t`` (1 must-link, 0 cannot-link); the diagonal of every point has target 1.
"""

import numpy as np
from numba import njit, prange

from ._lam_cv import _basis, onestep_y


@njit(cache=True, nogil=True)
def _prior_entries(A, w, a, b):
    """``A_a S0 A_b^T`` for each pair (a, b), ``S0 = diag(1 / w)`` (``a = b``: the diagonal)."""
    out = np.empty(a.size)
    for k in range(a.size):
        s = 0.0
        for c in range(w.size):
            s += A[a[k], c] * A[b[k], c] / w[c]
        out[k] = s
    return out


@njit(cache=True, nogil=True)
def pairs_problem(A, w, a, b, t, cap, lapack):
    """``(Vc, mu, C, R)`` of the pairs' one-step model on the rows ``A`` (l, r) of the
    constrained points in S0's eigen-coordinates, pairs (a, b) with targets t.

    On ``S = S0 + Vc (Y - C) Vc^T`` (``_basis``, at most ``cap`` directions) the points' kernel
    is ``K0 + F (Y - C) F^T``, K0 the prior's. With the residuals ``r = K* - K0`` on the
    constrained entries (both orders of each pair and the diagonal) and the unconstrained
    entries filled with K0's own values (the majoriser of the masked loss at the prior), the
    data term is ``||F (Y - C) F^T - r||^2``, whose linear part in these coordinates is
    ``R = M C M + F^T r F`` (``M = diag(mu)``): the labels' form, so the same one step applies.
    ``F^T r F`` is summed pair by pair, never as an l x l array. ``lapack``:
    ``_lapack.addresses()``, or empty for ``np.linalg`` alone.
    """
    Vc, mu, C, F, _ = _basis(A, w, cap, lapack)
    l, p = F.shape
    k0 = _prior_entries(A, w, a, b)
    rows = np.arange(l)
    k0d = _prior_entries(A, w, rows, rows)
    G = np.zeros((l, p))  # r F, r the sparse residual
    for k in range(a.size):
        rk = t[k] - k0[k]
        for c in range(p):
            G[a[k], c] += rk * F[b[k], c]
            G[b[k], c] += rk * F[a[k], c]
    for i in range(l):
        ri = 1.0 - k0d[i]
        for c in range(p):
            G[i, c] += ri * F[i, c]
    R = F.T @ G
    for x in range(p):
        for y in range(p):
            R[x, y] += mu[x] * C[x, y] * mu[y]
    return Vc, mu, C, 0.5 * (R + R.T)


@njit(cache=True, nogil=True)
def _local(points, n_points):
    """Position of each point in the sorted list ``points`` (-1 elsewhere)."""
    pos = np.full(n_points, -1, dtype=np.int64)
    for k in range(points.size):
        pos[points[k]] = k
    return pos


@njit(cache=True, nogil=True)
def _ends(ia, ib, chosen, n_points):
    """Sorted points at either end of the pairs ``chosen``."""
    seen = np.zeros(n_points, dtype=np.bool_)
    for k in chosen:
        seen[ia[k]] = True
        seen[ib[k]] = True
    return np.flatnonzero(seen)


@njit(cache=True, nogil=True)
def _cosines(k0, k0d, g, D, a, b):
    """Cosines ``K_ab / sqrt(K_aa K_bb)`` of the kernel ``K = K0 + g D g^T`` at the pairs
    (a, b) of rows of g, from K0's entries ``k0`` there and its diagonal ``k0d`` (0 where a
    diagonal entry is not positive); D None: K0 itself."""
    kab = k0.copy()
    kaa = k0d.copy()
    if D is not None:
        p = D.shape[0]
        Gd = g @ D
        for k in range(a.size):
            s = 0.0
            for c in range(p):
                s += Gd[a[k], c] * g[b[k], c]
            kab[k] += s
        for i in range(kaa.size):
            s = 0.0
            for c in range(p):
                s += Gd[i, c] * g[i, c]
            kaa[i] += s
    cos = np.empty(a.size)
    for k in range(a.size):
        den = kaa[a[k]] * kaa[b[k]]
        cos[k] = kab[k] / np.sqrt(den) if den > 0.0 else 0.0
    return cos


@njit(cache=True, nogil=True)
def _positions(ia, ib, chosen, n_points):
    """The sorted points at the ends of the pairs ``chosen`` and each pair's two positions
    among them."""
    pts = _ends(ia, ib, chosen, n_points)
    pos = _local(pts, n_points)
    a = np.empty(chosen.size, dtype=np.int64)
    b = np.empty(chosen.size, dtype=np.int64)
    for k in range(chosen.size):
        a[k] = pos[ia[chosen[k]]]
        b[k] = pos[ib[chosen[k]]]
    return pts, a, b


@njit(cache=True, nogil=True)
def _round_losses(PE, w, ia, ib, t, role, rel_lams, cap, lapack, loss, err):
    """One round's held-out loss and error at each ``rel_lams`` (inf: the prior) into
    ``loss`` / ``err`` (n_lams,): the model fitted on the pairs with ``role == 1``, scored on
    those with ``role == 2`` by the learned kernel's cosine ``K_ab / sqrt(K_aa K_bb)``: mean
    squared error to the target (J's own, 1 or 0) and the share on the wrong side of 1/2."""
    n_points = PE.shape[0]
    train = np.flatnonzero(role == 1)
    test = np.flatnonzero(role == 2)
    if train.size == 0 or test.size == 0:
        return
    pts, a, b = _positions(ia, ib, train, n_points)
    AT = np.ascontiguousarray(PE[pts])
    Vc, mu, C, R = pairs_problem(AT, w, a, b, t[train], cap, lapack)
    p = mu.size
    held, ha, hb = _positions(ia, ib, test, n_points)
    AH = np.ascontiguousarray(PE[held])
    tH = t[test]
    k0 = _prior_entries(AH, w, ha, hb)
    k0d = _prior_entries(AH, w, np.arange(held.size), np.arange(held.size))
    g = AH @ Vc
    scale = mu[-1] * mu[-1] if p > 0 else 0.0  # the majoriser's data-term scale
    for j in range(rel_lams.size):
        D = None
        if p > 0 and np.isfinite(rel_lams[j]):
            D = onestep_y(mu, C, R, rel_lams[j] * scale, lapack) - C
        cos = _cosines(k0, k0d, g, D, ha, hb)
        total = 0.0
        wrong = 0.0
        for k in range(test.size):
            total += (cos[k] - tH[k]) ** 2
            if (cos[k] > 0.5) != (tH[k] > 0.5):
                wrong += 1.0
        loss[j] = total / test.size
        err[j] = wrong / test.size


@njit(cache=True, parallel=True)
def pairs_cv(PE, w, ia, ib, t, roles, rel_lams, cap, lapack):
    """Held-out losses and errors (n_rounds, n_lams) of every round (``roles`` (n_rounds,
    n_pairs): 1 trains, 2 is scored, 0 is left out) at every ``rel_lams`` (``_round_losses``);
    NaN for a round with no training or no scored pair. Rounds in parallel."""
    n_rounds = roles.shape[0]
    loss = np.full((n_rounds, rel_lams.size), np.nan)
    err = np.full((n_rounds, rel_lams.size), np.nan)
    for r in prange(n_rounds):
        _round_losses(PE, w, ia, ib, t, roles[r], rel_lams, cap, lapack, loss[r], err[r])
    return loss, err
