"""Jitted von Neumann cyclic projections for low-rank kernel learning (Kulis et al. 2006).

Private: arrays and scalars only. The whole call graph of each driver lives in this file
(numba's on-disk cache does not notice edits to callees in other files): the small helpers
``_diff``, ``_dot`` and ``_sweep_stats`` are copies of ``_burg.py``'s for that reason.

State: the kernel is ``V0 W diag(exp(d)) W^T V0^T`` with ``V0`` orthonormal columns
and ``W`` orthogonal; a projection replaces ``diag(d)`` by the eigendecomposition of
``diag(d) + rho w w^T`` (diagonal plus rank one: secular equation, O(r^2), Gu-Eisenstat
eigenvectors) and ``W`` by ``W U`` (a BLAS r-by-r product, O(r^3); the paper's O(r^2) for this
step needs the fast multipole method, which we do not implement).

Status codes returned by the drivers: 0 converged, 1 max_sweeps reached, 2 a similarity
constraint is unreachable in the current range space, 3 paused (``burg_run`` / ``vn_run``
return after a bounded amount of work, so that Python can handle Ctrl-C, and resume where
they stopped), 4 a sweep met the tolerance (the caller checks all constraints at the final
state, in chunks).
"""

import math

import numpy as np
from numba import njit

_FM = {"reassoc", "contract"}
_EPS = 2.220446049250313e-16

CONVERGED = 0
MAX_ITER = 1
INFEASIBLE = 2
PAUSED = 3  # the work budget of the call is spent; call again to resume
CHECK = 4  # a sweep met tol: the caller checks every constraint at the final state


@njit(cache=True, nogil=True, fastmath=_FM)
def _diff(G, i, j, out):
    r = G.shape[1]
    for k in range(r):
        out[k] = G[i, k] - G[j, k]


@njit(cache=True, nogil=True, fastmath=_FM)
def _dot(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    return acc


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
        if lo < x2 < hi and (
            math.isnan(best) or abs(x2 - 0.5 * (lo + hi)) < abs(best - 0.5 * (lo + hi))
        ):
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
    nd = np.int64(0)  # not the literal 0, which would compile the secular solvers twice
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


_EXP_MAX = 709.782712893384  # log(DBL_MAX)


@njit(cache=True, nogil=True)
def _exp(x):
    """e^x, inf beyond the float64 range: what libm returns, also when NUMBA_DISABLE_JIT=1
    (where math.exp raises OverflowError instead)."""
    return math.exp(x) if x <= _EXP_MAX else np.inf


@njit(cache=True, nogil=True)
def _expdd(x, y):
    """Divided difference (e^x - e^y) / (x - y), e^x when equal."""
    if x == y:
        return _exp(x)
    if x < y:
        x, y = y, x
    h = x - y
    if h > 40.0:  # e^-h < eps: (e^x - e^y) / h = e^x / h in float64, and no inf * 0
        return _exp(x) / h
    return _exp(y) * (math.expm1(h) / h)


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
        f += _exp(theta[k]) * cvec[k]
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
        if not (math.isinf(lo) or math.isinf(hi)) and hi - lo <= 4.0 * _EPS * max(abs(lo), abs(hi)):
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


@njit(cache=True, nogil=True, fastmath=_FM)
def _vn_distance(V, i1, i2, W, dlog, v, w):
    """Squared distance of rows i1, i2 in the current von Neumann kernel; leaves
    ``v = V[i1] - V[i2]`` and ``w = W^T v`` in the work arrays."""
    r = W.shape[0]
    _diff(V, i1, i2, v)
    for j in range(r):
        acc = 0.0
        for k in range(r):
            acc += W[k, j] * v[k]
        w[j] = acc
    p = 0.0
    for k in range(r):
        p += _exp(dlog[k]) * w[k] * w[k]
    return p


@njit(cache=True, nogil=True)
def vn_violation(V, I1, I2, delta, bvec, W, dlog, c0, c1):
    """Largest relative violation of distance constraints ``c0 .. c1 - 1`` at the current
    state."""
    r = W.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    worst = 0.0
    for c in range(c0, c1):
        p = _vn_distance(V, I1[c], I2[c], W, dlog, v, w)
        viol = max(0.0, delta[c] * (p - bvec[c])) / bvec[c]
        if viol > worst:
            worst = viol
    return worst


@njit(cache=True, nogil=True)
def vn_run(
    V,
    I1,
    I2,
    delta,
    bvec,
    lam,
    W,
    dlog,
    max_sweeps,
    tol,
    conv_out,
    viol_out,
    lamnorm_out,
    evals_out,
    lam_old,
    state,
    budget,
):
    """Cyclic von Neumann projections (Algorithm 2, distance constraints, hard), resumable.

    ``V`` holds the rows of the orthonormal basis ``V0`` for the constrained samples; the
    kernel is ``V0 W diag(exp(dlog)) W^T V0^T``. ``W`` and ``dlog`` are updated in place.
    ``evals_out[s]`` counts the evaluations of f (each O(r^2)) in sweep s. ``lam_old``,
    ``state`` (next constraint, the sweep's largest violation and evaluations so far) and
    ``budget`` (multiply-adds per call), returns and statuses as :func:`burg_run`.
    """
    r = W.shape[0]
    nc = I1.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    theta = np.empty(r)
    U = np.empty((r, r))
    cvec = np.empty(r)
    c0 = int(state[0])
    worst = state[1]
    nev_total = int(state[2])
    spent = 0
    s = np.int64(0)  # not the literal 0, which would compile _sweep_stats twice
    while s < max_sweeps:
        for c in range(c0, nc):
            spent += r * r
            p = _vn_distance(V, I1[c], I2[c], W, dlog, v, w)
            if p > 0.0:
                b = bvec[c]
                dl_ = delta[c]
                viol = max(0.0, dl_ * (p - b)) / b
                if viol > worst:
                    worst = viol
                # satisfied with a zero dual: the clipped step is zero
                if not (dl_ * (p - b) <= 0.0 and lam[c] == 0.0):
                    rho_star, nev = vn_root(dlog, w, b, theta, U, cvec)
                    nev_total += nev
                    spent += nev * r * r
                    alpha = min(lam[c], dl_ * rho_star)
                    if alpha != 0.0:
                        lam[c] -= alpha
                        rho = dl_ * alpha
                        dpr1_eig(dlog, w, rho, theta, U)
                        Wn = np.dot(W, U)
                        W[:, :] = Wn
                        for k in range(r):
                            dlog[k] = theta[k]
                        spent += r * r * r
            if spent >= budget and c + 1 < nc:
                state[0] = c + 1
                state[1] = worst
                state[2] = nev_total
                return s, PAUSED
        c0 = 0
        viol_out[s] = worst
        evals_out[s] = nev_total
        conv = _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out)
        s += 1
        state[0] = 0.0
        state[1] = 0.0
        state[2] = 0.0
        if conv < tol and worst < tol:
            return s, CHECK
        worst = 0.0
        nev_total = 0
    return s, MAX_ITER
