"""Jitted cyclic Bregman projections for low-rank kernel learning (Kulis et al. 2006).

Private: arrays and scalars only. The whole call graph of each driver lives in this file
(numba's on-disk cache does not notice edits to callees in other files).

Burg (LogDet) state: the learned kernel on any samples is ``G0 B B^T G0^T``; we keep ``Bt = B^T``
so that ``B``'s columns are contiguous rows. A projection multiplies ``B`` on the right by a
factor ``L`` with ``L L^T = I + beta w w^T``. Every such ``L`` gives the same kernel; we use the
symmetric root ``L = I + sigma w w^T`` with ``sigma = beta / (1 + sqrt(1 + beta p))``
(``(I + sigma w w^T)^2 = I + (2 sigma + sigma^2 p) w w^T``), so ``B L = B + sigma (B w) w^T``: three
r-by-r multiply-add passes and one square root, O(r^2), instead of the triangular Cholesky
factor's r square roots and divisions.

Von Neumann state: the kernel is ``V0 W diag(exp(d)) W^T V0^T`` with ``V0`` orthonormal columns
and ``W`` orthogonal; a projection replaces ``diag(d)`` by the eigendecomposition of
``diag(d) + rho w w^T`` (diagonal plus rank one: secular equation, O(r^2), Gu-Eisenstat
eigenvectors) and ``W`` by ``W U`` (a BLAS r-by-r product, O(r^3); the paper's O(r^2) for this
step needs the fast multipole method, which we do not implement).

Status codes returned by the drivers: 0 converged, 1 max_iter reached, 2 infeasible (hard
constraints whose violation stopped shrinking while the dual grew).
"""

import math

import numpy as np
from numba import njit

_FM = {"reassoc", "contract"}
_EPS = 2.220446049250313e-16

CONVERGED = 0
MAX_ITER = 1
INFEASIBLE = 2


# --------------------------------------------------------------------------------------------
# small dense helpers (arithmetic leaves)
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, fastmath=_FM)
def _diff(G, i, j, out):
    r = G.shape[1]
    for k in range(r):
        out[k] = G[i, k] - G[j, k]


@njit(cache=True, nogil=True, fastmath=_FM)
def _rows_dot(Bt, v, out):
    """out_j = Bt[j] . v   (i.e. out = B^T v)."""
    r = Bt.shape[0]
    for j in range(r):
        acc = 0.0
        for k in range(r):
            acc += Bt[j, k] * v[k]
        out[j] = acc


@njit(cache=True, nogil=True, fastmath=_FM)
def _rows_combine(Bt, w, out):
    """out = sum_j w_j Bt[j]   (i.e. out = B w)."""
    r = Bt.shape[0]
    for k in range(r):
        out[k] = 0.0
    for j in range(r):
        wj = w[j]
        for k in range(r):
            out[k] += wj * Bt[j, k]


@njit(cache=True, nogil=True, fastmath=_FM)
def _rank_one_rows(Bt, a, u, scale):
    """Bt[j] += scale * a_j * u   (B += scale * u a^T)."""
    r = Bt.shape[0]
    for j in range(r):
        f = scale * a[j]
        for k in range(r):
            Bt[j, k] += f * u[k]


@njit(cache=True, nogil=True, fastmath=_FM)
def _dot(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    return acc


# --------------------------------------------------------------------------------------------
# Burg projections
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _burg_apply(Bt, w, beta, p, u):
    """B <- B (I + sigma w w^T) with (I + sigma w w^T)^2 = I + beta w w^T; ``p = ||w||^2``."""
    sigma = beta / (1.0 + math.sqrt(1.0 + beta * p))
    _rows_combine(Bt, w, u)
    _rank_one_rows(Bt, w, u, sigma)


@njit(cache=True, nogil=True)
def _burg_distance(Bt, G, i1, i2, delta, lam, bhat, c, gamma, v, w, u):
    """One projection onto ``delta * ||g_i1 - g_i2||^2 <= delta * bhat[c]`` (ITML / Kulis 2009).

    Returns the relative violation before the projection (0 if satisfied).
    """
    _diff(G, i1, i2, v)
    _rows_dot(Bt, v, w)
    p = _dot(w, w)
    if p <= 0.0:
        return 0.0
    b = bhat[c]
    viol = max(0.0, delta * (p - b)) / b
    gp = 1.0 if math.isinf(gamma) else gamma / (gamma + 1.0)
    alpha = min(lam[c], gp * delta * (1.0 / p - 1.0 / b))
    if alpha == 0.0:
        return viol
    lam[c] -= alpha
    beta = delta * alpha / (1.0 - delta * alpha * p)
    if not math.isinf(gamma):
        bhat[c] = 1.0 / (1.0 / b + delta * alpha / gamma)
    _burg_apply(Bt, w, beta, p, u)
    return viol


@njit(cache=True, nogil=True)
def _similarity_root(pp, qq, s, b):
    """rho solving a^T (I - rho (a c^T + c a^T)/2)^-1 c = b with the inner matrix PD.

    ``pp = a.a, qq = c.c, s = a.c``; with ``g = pp qq - s^2`` the condition is the quadratic
    ``b g rho^2 + 2 (g + 2 b s) rho - 4 (b - s) = 0``. Returns NaN when no root keeps
    ``I - rho A`` positive definite (the constraint cannot be met in this range space).
    """
    if s == b:
        return 0.0
    g = max(pp * qq - s * s, 0.0)
    h = math.sqrt(pp * qq)
    mu_hi = 0.5 * (s + h)
    mu_lo = 0.5 * (s - h)
    A = b * g
    B = 2.0 * (g + 2.0 * b * s)
    C = -4.0 * (b - s)
    roots = np.empty(2)
    nroot = 0
    if A == 0.0:
        if B != 0.0:
            roots[0] = -C / B
            nroot = 1
    else:
        disc = 4.0 * (g * g + 4.0 * b * b * pp * qq)
        sq = math.sqrt(max(disc, 0.0))
        qv = -0.5 * (B + (sq if B >= 0.0 else -sq))
        if qv != 0.0:
            roots[0] = qv / A
            roots[1] = C / qv
            nroot = 2
        else:
            roots[0] = 0.0
            nroot = 1
    best = np.nan
    for t in range(nroot):
        rho = roots[t]
        if 1.0 - rho * mu_hi > 0.0 and 1.0 - rho * mu_lo > 0.0:
            if math.isnan(best) or abs(rho) < abs(best):
                best = rho
    return best


@njit(cache=True, nogil=True)
def _burg_similarity(Bt, G, i1, i2, delta, lam, bvec, c, a, cc, v, u, Y):
    """One projection onto ``delta * K[i1, i2] <= delta * b`` (hard; Burg; rank-two update).

    ``K' = G (I - rho Asym)^-1 G^T`` with ``Asym = (a c^T + c a^T)/2`` in the factor space,
    ``a = B^T g_i1``, ``c = B^T g_i2``. Returns the relative violation before the projection, or
    -1.0 when the constraint is unreachable in the current range space.
    """
    r = Bt.shape[0]
    for k in range(r):
        v[k] = G[i1, k]
    _rows_dot(Bt, v, a)
    for k in range(r):
        v[k] = G[i2, k]
    _rows_dot(Bt, v, cc)
    pp = _dot(a, a)
    qq = _dot(cc, cc)
    s = _dot(a, cc)
    b = bvec[c]
    scale = max(abs(b), math.sqrt(pp * qq))
    if scale <= 0.0:
        return 0.0
    viol = max(0.0, delta * (s - b)) / scale
    if pp <= 0.0 or qq <= 0.0:
        return -1.0 if viol > 0.0 else 0.0
    rho_star = _similarity_root(pp, qq, s, b)
    if math.isnan(rho_star):
        return -1.0 if viol > 0.0 else 0.0
    alpha = min(lam[c], delta * rho_star)
    if alpha == 0.0:
        return viol
    lam[c] -= alpha
    rho = delta * alpha
    na = math.sqrt(pp)
    # orthonormal basis (e1, e2) of span{a, c}: c = c1 e1 + c2 e2, a = na e1
    c1 = s / na
    for k in range(r):
        v[k] = cc[k] - (c1 / na) * a[k]
    c2 = math.sqrt(max(_dot(v, v), 0.0))
    if c2 <= 1e-12 * math.sqrt(qq):
        # c parallel to a: Asym = kappa a a^T
        kappa = s / pp
        beta = rho * kappa / (1.0 - rho * kappa * pp)
        _burg_apply(Bt, a, beta, pp, u)
        return viol
    # N2 = I - rho * Asym2, Asym2 = [[na c1, na c2 / 2], [na c2 / 2, 0]]
    n11 = 1.0 - rho * na * c1
    n12 = -0.5 * rho * na * c2
    n22 = 1.0
    # symmetric 2x2 eigendecomposition
    tr = 0.5 * (n11 + n22)
    df = 0.5 * (n11 - n22)
    rad = math.sqrt(df * df + n12 * n12)
    nu1 = tr + rad
    nu2 = tr - rad
    if nu2 <= 0.0:
        return -1.0
    if n12 == 0.0:
        x1, y1 = 1.0, 0.0
    else:
        x1, y1 = nu1 - n22, n12
        nn = math.sqrt(x1 * x1 + y1 * y1)
        x1 /= nn
        y1 /= nn
    x2, y2 = -y1, x1
    f1 = 1.0 / math.sqrt(nu1) - 1.0
    f2 = 1.0 / math.sqrt(nu2) - 1.0
    m11 = f1 * x1 * x1 + f2 * x2 * x2
    m12 = f1 * x1 * y1 + f2 * x2 * y2
    m22 = f1 * y1 * y1 + f2 * y2 * y2
    # Q = [a/na, v/c2]; Y = B Q (r x 2); B <- B + (Y M) Q^T
    for k in range(r):
        a[k] /= na
        v[k] /= c2
    _rows_combine(Bt, a, u)
    for k in range(r):
        Y[k, 0] = u[k]
    _rows_combine(Bt, v, u)
    for k in range(r):
        Y[k, 1] = u[k]
    for k in range(r):
        y0 = Y[k, 0]
        y1_ = Y[k, 1]
        Y[k, 0] = y0 * m11 + y1_ * m12
        Y[k, 1] = y0 * m12 + y1_ * m22
    for j in range(r):
        qa = a[j]
        qb = v[j]
        for k in range(r):
            Bt[j, k] += qa * Y[k, 0] + qb * Y[k, 1]
    return viol


@njit(cache=True, nogil=True)
def _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out):
    n1 = 0.0
    n2 = 0.0
    no = 0.0
    for c in range(lam.shape[0]):
        n1 += abs(lam[c] - lam_old[c])
        n2 += lam[c] * lam[c]
        no += lam_old[c] * lam_old[c]
        lam_old[c] = lam[c]
    n2 = math.sqrt(n2)
    den = n2 + math.sqrt(no)
    conv = 0.0 if den == 0.0 else n1 / den
    conv_out[s] = conv
    lamnorm_out[s] = n2
    return conv


@njit(cache=True, nogil=True)
def _stalled(s, viol_out, lamnorm_out, window, tol):
    """Infeasibility signature: violation not halved and dual grown by half over ``window``."""
    if window <= 0 or s < 2 * window:
        return False
    old = s - window
    return (
        viol_out[s] > tol
        and viol_out[s] > 0.5 * viol_out[old]
        and lamnorm_out[s] > 1.5 * lamnorm_out[old]
    )


@njit(cache=True, nogil=True)
def burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt):
    """Largest relative violation of all constraints at the current state (no update)."""
    r = Bt.shape[0]
    v = np.empty(r)
    a = np.empty(r)
    cc = np.empty(r)
    worst = 0.0
    for c in range(I1.shape[0]):
        if kind[c] == 0:
            _diff(G, I1[c], I2[c], v)
            _rows_dot(Bt, v, a)
            p = _dot(a, a)
            b = bhat[c]
            viol = max(0.0, delta[c] * (p - b)) / b
        else:
            for k in range(r):
                v[k] = G[I1[c], k]
            _rows_dot(Bt, v, a)
            for k in range(r):
                v[k] = G[I2[c], k]
            _rows_dot(Bt, v, cc)
            s = _dot(a, cc)
            b = bvec[c]
            scale = max(abs(b), math.sqrt(_dot(a, a) * _dot(cc, cc)))
            viol = 0.0 if scale == 0.0 else max(0.0, delta[c] * (s - b)) / scale
        if viol > worst:
            worst = viol
    return worst


@njit(cache=True, nogil=True)
def burg_sweeps(
    G, I1, I2, kind, delta, bvec, bhat, lam, gamma, Bt, max_sweeps, tol, window,
    conv_out, viol_out, lamnorm_out,
):
    """Cyclic Burg projections until the dual's relative change and the violation are < tol.

    Parameters
    ----------
    G : (u, r) float64
        Initial factor rows ``G0`` of the constrained samples.
    I1, I2 : (c,) int64
        Rows of ``G`` of each constraint.
    kind : (c,) int8
        0 distance ``||g_i - g_j||^2``, 1 similarity ``K_ij``.
    delta : (c,) float64
        +1 for ``<= bound``, -1 for ``>= bound``.
    bvec : (c,) float64
        Bounds (similarity constraints read theirs from here).
    bhat : (c,) float64
        Slack-adjusted distance bounds (updated in place; equal to ``bvec`` when gamma = inf).
    lam : (c,) float64
        Dual variables (updated in place, stay >= 0).
    gamma : float
        Slack trade-off for distance constraints (inf: hard).
    Bt : (r, r) float64
        ``B^T``, updated in place.
    max_sweeps, tol, window
        Stopping controls; ``window`` sweeps for the infeasibility test (0 disables it).
    conv_out, viol_out, lamnorm_out : (max_sweeps,) float64
        Per-sweep relative dual change, largest relative violation seen during the sweep
        (before each projection), and ``||lam||_2``.

    Returns
    -------
    n_sweeps, status
    """
    r = Bt.shape[0]
    nc = I1.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    u = np.empty(r)
    a = np.empty(r)
    Y = np.empty((r, 2))
    lam_old = lam.copy()
    status = MAX_ITER
    s = 0
    unreachable = False
    while s < max_sweeps:
        worst = 0.0
        for c in range(nc):
            if kind[c] == 0:
                vi = _burg_distance(Bt, G, I1[c], I2[c], delta[c], lam, bhat, c, gamma, v, w, u)
            else:
                vi = _burg_similarity(Bt, G, I1[c], I2[c], delta[c], lam, bvec, c, a, w, v, u, Y)
                if vi < 0.0:
                    unreachable = True
                    vi = 1.0
            if vi > worst:
                worst = vi
        viol_out[s] = worst
        conv = _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out)
        s += 1
        if conv < tol and worst < tol:
            # projections late in the sweep disturb earlier constraints: check them all at the
            # final state before calling it converged
            final = burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt)
            viol_out[s - 1] = final
            if final < tol:
                status = CONVERGED
                break
        if unreachable or _stalled(s - 1, viol_out, lamnorm_out, window, tol):
            status = INFEASIBLE
            break
    return s, status


# --------------------------------------------------------------------------------------------
# von Neumann: eigendecomposition of diag(d) + rho w w^T
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _secular_parts(dl, z2, nd, k, t, invr):
    """F(t) = 1/rho + psi + phi, psi over poles 0..k, phi over k+1..nd-1 (shifted poles dl)."""
    psi = 0.0
    dpsi = 0.0
    phi = 0.0
    dphi = 0.0
    amag = 0.0
    for j in range(nd):
        den = dl[j] - t
        term = z2[j] / den
        amag += abs(term)
        if j <= k:
            psi += term
            dpsi += term / den
        else:
            phi += term
            dphi += term / den
    return invr + psi + phi, psi, dpsi, phi, dphi, amag


@njit(cache=True, nogil=True)
def _quad_root_in(a, b, c, lo, hi):
    """Root of a x^2 + b x + c inside the open interval (lo, hi), or NaN."""
    best = np.nan
    if a == 0.0:
        if b != 0.0:
            x = -c / b
            if lo < x < hi:
                best = x
        return best
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return best
    sq = math.sqrt(disc)
    q = -0.5 * (b + (sq if b >= 0.0 else -sq))
    if q != 0.0:
        x1 = q / a
        x2 = c / q
        if lo < x1 < hi:
            best = x1
        if lo < x2 < hi and (math.isnan(best) or abs(x2 - 0.5 * (lo + hi)) < abs(best - 0.5 * (lo + hi))):
            best = x2
    return best


@njit(cache=True, nogil=True)
def _secular_root(dd, z2, nd, k, rr, dl, zsum):
    """k-th root of 1/rr + sum_j z2_j / (dd_j - x) = 0 (dd ascending, rr > 0).

    Returns (origin index o, offset t) with the root x = dd[o] + t; the offset is kept so
    that dd_j - x = (dd_j - dd_o) - t is computed without cancellation.
    """
    invr = 1.0 / rr
    last = k == nd - 1
    if last:
        o = k
        lo = 0.0
        hi = rr * zsum * (1.0 + 8.0 * _EPS) + 1e-300
        for j in range(nd):
            dl[j] = dd[j] - dd[o]
        t = 0.5 * hi
    else:
        gap = dd[k + 1] - dd[k]
        # which half holds the root decides the origin (nearer pole)
        for j in range(nd):
            dl[j] = dd[j] - dd[k]
        F, _, _, _, _, _ = _secular_parts(dl, z2, nd, k, 0.5 * gap, invr)
        if F >= 0.0:
            o = k
            lo = 0.0
            hi = 0.5 * gap
        else:
            o = k + 1
            for j in range(nd):
                dl[j] = dd[j] - dd[o]
            lo = -0.5 * gap
            hi = 0.0
        t = 0.5 * (lo + hi)
    for _ in range(200):
        F, psi, dpsi, phi, dphi, amag = _secular_parts(dl, z2, nd, k, t, invr)
        if F < 0.0:
            lo = t
        else:
            hi = t
        if abs(F) <= _EPS * (2.0 * nd + 8.0) * (invr + amag):
            break
        if hi - lo <= 2.0 * _EPS * max(abs(dd[o] + lo), abs(dd[o] + hi), abs(hi - lo)):
            break
        # two-pole rational model (Bunch-Nielsen-Sorensen): psi ~ P + Q/(A - x),
        # phi ~ R + S/(B - x), exact in value and slope at t
        A = dl[k]
        Q = dpsi * (A - t) * (A - t)
        P = psi - dpsi * (A - t)
        if last:
            cc = invr + P
            x = np.nan
            if cc > 0.0:
                x = A + Q / cc
                if not (lo < x < hi):
                    x = np.nan
        else:
            Bp = dl[k + 1]
            S = dphi * (Bp - t) * (Bp - t)
            R = phi - dphi * (Bp - t)
            cc = invr + P + R
            # cc (A - x)(Bp - x) + Q (Bp - x) + S (A - x) = 0
            x = _quad_root_in(cc, -(cc * (A + Bp) + Q + S), cc * A * Bp + Q * Bp + S * A, lo, hi)
        if math.isnan(x) or x == t:
            x = 0.5 * (lo + hi)
        t = x
    return o, t


@njit(cache=True, nogil=True)
def dpr1_eig(d, w, rho, theta, U):
    """Eigendecomposition ``diag(d) + rho w w^T = U diag(theta) U^T`` in O(r^2).

    Deflation as in LAPACK dlaed2 (tiny weights; Givens rotations for close poles), secular
    roots by a safeguarded two-pole rational iteration, eigenvectors from Gu-Eisenstat's
    recomputed weights (orthogonal to working precision). ``theta`` and ``U`` are outputs
    (eigenvalues in no particular order; column i of U pairs with theta[i]).
    """
    r = d.shape[0]
    for i in range(r):
        for j in range(r):
            U[i, j] = 0.0
    znorm2 = 0.0
    for i in range(r):
        znorm2 += w[i] * w[i]
    if rho == 0.0 or znorm2 == 0.0:
        for i in range(r):
            theta[i] = d[i]
            U[i, i] = 1.0
        return
    sgn = 1.0 if rho > 0.0 else -1.0
    perm = np.argsort(sgn * d)
    dd = np.empty(r)
    z = np.empty(r)
    zn = math.sqrt(znorm2)
    for p in range(r):
        dd[p] = sgn * d[perm[p]]
        z[p] = w[perm[p]] / zn
    rr = abs(rho) * znorm2
    dmax = 0.0
    zmax = 0.0
    for p in range(r):
        dmax = max(dmax, abs(dd[p]))
        zmax = max(zmax, abs(z[p]))
    tol = 8.0 * _EPS * max(dmax, rr * zmax)
    # deflation; Uw holds eigenvectors in the (rotated) sorted basis
    Uw = np.zeros((r, r))
    thw = np.empty(r)
    defl = np.zeros(r, dtype=np.bool_)
    rot_i = np.empty(r, dtype=np.int64)
    rot_j = np.empty(r, dtype=np.int64)
    rot_c = np.empty(r)
    rot_s = np.empty(r)
    nrot = 0
    prev = -1
    for j in range(r):
        if rr * abs(z[j]) <= tol:
            defl[j] = True
            continue
        if prev >= 0:
            tau = math.hypot(z[prev], z[j])
            cs = z[j] / tau
            sn = z[prev] / tau
            off = cs * sn * (dd[j] - dd[prev])
            if abs(off) <= tol:
                # basis f_prev = cs e_prev - sn e_j (no weight), f_j = sn e_prev + cs e_j
                dp = dd[prev] * cs * cs + dd[j] * sn * sn
                dj = dd[prev] * sn * sn + dd[j] * cs * cs
                dd[prev] = dp
                dd[j] = dj
                z[prev] = 0.0
                z[j] = tau
                defl[prev] = True
                rot_i[nrot] = prev
                rot_j[nrot] = j
                rot_c[nrot] = cs
                rot_s[nrot] = sn
                nrot += 1
        prev = j
    for j in range(r):
        if defl[j]:
            thw[j] = dd[j]
            Uw[j, j] = 1.0
    # non-deflated poles, ascending
    idx = np.empty(r, dtype=np.int64)
    nd = 0
    for j in range(r):
        if not defl[j]:
            idx[nd] = j
            nd += 1
    if nd > 0:
        order = np.argsort(dd[idx[:nd]])
        ids = idx[:nd][order]
        dn = np.empty(nd)
        z2 = np.empty(nd)
        zsum = 0.0
        for q in range(nd):
            dn[q] = dd[ids[q]]
            z2[q] = z[ids[q]] * z[ids[q]]
            zsum += z2[q]
        orig = np.empty(nd, dtype=np.int64)
        off = np.empty(nd)
        dl = np.empty(nd)
        for k in range(nd):
            o, t = _secular_root(dn, z2, nd, k, rr, dl, zsum)
            orig[k] = o
            off[k] = t
        # Gu-Eisenstat: weights for which the computed roots are exact
        zh = np.empty(nd)
        for j in range(nd):
            # theta_k - dn_j = (dn_o - dn_j) + t_k
            prod = ((dn[orig[j]] - dn[j]) + off[j]) / rr
            for k in range(nd):
                if k == j:
                    continue
                prod *= ((dn[orig[k]] - dn[j]) + off[k]) / (dn[k] - dn[j])
            zh[j] = math.copysign(math.sqrt(max(prod, 0.0)), z[ids[j]])
        col = np.empty(nd)
        for k in range(nd):
            nrm = 0.0
            for j in range(nd):
                den = (dn[j] - dn[orig[k]]) - off[k]
                col[j] = zh[j] / den if den != 0.0 else 0.0
                nrm += col[j] * col[j]
            if nrm == 0.0:  # degenerate: fall back to the pole's unit vector
                col[k] = 1.0
                nrm = 1.0
            nrm = math.sqrt(nrm)
            target = ids[k]  # reuse a non-deflated slot as this eigenpair's column
            thw[target] = dn[orig[k]] + off[k]
            for j in range(nd):
                Uw[ids[j], target] = col[j] / nrm
    # undo the Givens rotations (last first): rows prev/j of every column
    for q in range(nrot - 1, -1, -1):
        i = rot_i[q]
        j = rot_j[q]
        cs = rot_c[q]
        sn = rot_s[q]
        for col_ in range(r):
            xi = Uw[i, col_]
            xj = Uw[j, col_]
            Uw[i, col_] = cs * xi + sn * xj
            Uw[j, col_] = -sn * xi + cs * xj
    for p in range(r):
        theta[p] = sgn * thw[p]
        for col_ in range(r):
            U[perm[p], col_] = Uw[p, col_]


@njit(cache=True, nogil=True)
def _expdd(x, y):
    """Divided difference (e^x - e^y) / (x - y), e^x when equal."""
    if x == y:
        return math.exp(x)
    if x < y:
        x, y = y, x
    h = x - y
    return math.exp(y) * (math.expm1(h) / h)


@njit(cache=True, nogil=True)
def _vn_value(d, w, rho, theta, U, cvec):
    """f(rho) = w^T exp(diag(d) + rho w w^T) w and f'(rho); leaves the eigenpairs in theta, U."""
    r = d.shape[0]
    dpr1_eig(d, w, rho, theta, U)
    for k in range(r):
        acc = 0.0
        for j in range(r):
            acc += U[j, k] * w[j]
        cvec[k] = acc * acc
    f = 0.0
    for k in range(r):
        f += math.exp(theta[k]) * cvec[k]
    fp = 0.0
    for k in range(r):
        if cvec[k] == 0.0:
            continue
        for j in range(r):
            fp += cvec[k] * cvec[j] * _expdd(theta[k], theta[j])
    return f, fp


@njit(cache=True, nogil=True)
def vn_root(d, w, b, theta, U, cvec):
    """rho with ``w^T exp(diag(d) + rho w w^T) w = b``: safeguarded Newton on log f.

    f is increasing in rho, f(rho) -> 0 as rho -> -inf and -> inf as rho -> inf, so the root
    exists for every b > 0. Newton steps on ``g = log f - log b`` inside a bracket that is
    expanded geometrically while one side is unknown and bisected when a step leaves it.
    Returns (rho, number of f evaluations).
    """
    logb = math.log(b)
    unit = 1.0 / _dot(w, w)
    lo = -np.inf
    hi = np.inf
    rho = 0.0
    f, fp = _vn_value(d, w, rho, theta, U, cvec)
    nev = 1
    g = math.log(f) - logb if f > 0.0 else -np.inf
    for _ in range(200):
        if g < 0.0:
            lo = rho
        else:
            hi = rho
        if abs(g) <= 1e-13:
            break
        if not (math.isinf(lo) or math.isinf(hi)) and hi - lo <= 4.0 * _EPS * max(
            abs(lo), abs(hi)
        ):
            break
        cand = np.nan
        if fp > 0.0 and not math.isinf(g) and not math.isinf(f):
            cand = rho - g * f / fp
        if math.isnan(cand) or not (lo < cand < hi):
            if math.isinf(lo):
                cand = hi - max(unit, 2.0 * abs(hi))
            elif math.isinf(hi):
                cand = lo + max(unit, 2.0 * abs(lo))
            else:
                cand = 0.5 * (lo + hi)
        rho = cand
        f, fp = _vn_value(d, w, rho, theta, U, cvec)
        nev += 1
        if math.isnan(f) or math.isinf(f):
            g = np.inf
        elif f <= 0.0:
            g = -np.inf
        else:
            g = math.log(f) - logb
    return rho, nev


@njit(cache=True, nogil=True)
def vn_violation(V, I1, I2, delta, bvec, W, dlog):
    """Largest relative violation of all distance constraints at the current state."""
    r = W.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    worst = 0.0
    for c in range(I1.shape[0]):
        _diff(V, I1[c], I2[c], v)
        for j in range(r):
            acc = 0.0
            for k in range(r):
                acc += W[k, j] * v[k]
            w[j] = acc
        p = 0.0
        for k in range(r):
            p += math.exp(dlog[k]) * w[k] * w[k]
        viol = max(0.0, delta[c] * (p - bvec[c])) / bvec[c]
        if viol > worst:
            worst = viol
    return worst


@njit(cache=True, nogil=True)
def vn_sweeps(
    V, I1, I2, delta, bvec, lam, W, dlog, max_sweeps, tol, window,
    conv_out, viol_out, lamnorm_out, evals_out,
):
    """Cyclic von Neumann projections (Algorithm 2, distance constraints, hard).

    ``V`` holds the rows of the orthonormal basis ``V0`` for the constrained samples; the
    kernel is ``V0 W diag(exp(dlog)) W^T V0^T``. ``W`` and ``dlog`` are updated in place.
    ``evals_out[s]`` counts the evaluations of f (each O(r^2)) in sweep s.
    """
    r = W.shape[0]
    nc = I1.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    theta = np.empty(r)
    U = np.empty((r, r))
    cvec = np.empty(r)
    lam_old = lam.copy()
    status = MAX_ITER
    s = 0
    while s < max_sweeps:
        worst = 0.0
        nev_total = 0
        for c in range(nc):
            _diff(V, I1[c], I2[c], v)
            # w = W^T v
            for j in range(r):
                acc = 0.0
                for k in range(r):
                    acc += W[k, j] * v[k]
                w[j] = acc
            p = 0.0
            for k in range(r):
                p += math.exp(dlog[k]) * w[k] * w[k]
            if p <= 0.0:
                continue
            b = bvec[c]
            dl_ = delta[c]
            viol = max(0.0, dl_ * (p - b)) / b
            if viol > worst:
                worst = viol
            if dl_ * (p - b) <= 0.0 and lam[c] == 0.0:
                continue  # satisfied with a zero dual: the clipped step is zero
            rho_star, nev = vn_root(dlog, w, b, theta, U, cvec)
            nev_total += nev
            alpha = min(lam[c], dl_ * rho_star)
            if alpha == 0.0:
                continue
            lam[c] -= alpha
            rho = dl_ * alpha
            dpr1_eig(dlog, w, rho, theta, U)
            Wn = np.dot(W, U)
            W[:, :] = Wn
            for k in range(r):
                dlog[k] = theta[k]
        viol_out[s] = worst
        evals_out[s] = nev_total
        conv = _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out)
        s += 1
        if conv < tol and worst < tol:
            final = vn_violation(V, I1, I2, delta, bvec, W, dlog)
            viol_out[s - 1] = final
            if final < tol:
                status = CONVERGED
                break
        if _stalled(s - 1, viol_out, lamnorm_out, window, tol):
            status = INFEASIBLE
            break
    return s, status
