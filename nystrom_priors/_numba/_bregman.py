"""Jitted cyclic Bregman projections for low-rank kernel learning (Kulis et al. 2006).

Private: arrays and scalars only. The whole call graph of each driver lives in this file
(numba's on-disk cache does not notice edits to callees in other files).

Burg (LogDet) state: the learned kernel on any samples is ``G0 B B^T G0^T`` with B lower
triangular (it starts at I and every update multiplies it on the right by a lower-triangular
factor). We keep ``Bt = B^T`` (upper triangular) so that B's columns are contiguous rows, and
only ever touch the triangle. A distance projection multiplies B by the Cholesky factor L of
``I + beta w w^T``, which is diagonal plus strictly-lower rank one:

    beta_0 = beta,  t_j = 1 + beta_j w_j^2,  dg_j = sqrt(t_j),  c_j = beta_j w_j / dg_j,
    beta_{j+1} = beta_j / t_j,   L_jj = dg_j,  L_kj = c_j w_k  (k > j),

so column j of ``B L`` is ``dg_j B[:, j] + c_j sum_{k>j} w_k B[:, k]``: a suffix sum, O(r^2)
(the literal Cholesky + matmul would be O(r^3)). Together with ``w = B^T v`` this is 1.5 r^2
multiply-adds per projection, half of what a full (non-triangular) factor needs, and we fuse
the update of one projection with the ``B^T v`` of the next into a single pass over the
triangle (rows are finished in descending order, each one immediately dotted with the next v).

Von Neumann state: the kernel is ``V0 W diag(exp(d)) W^T V0^T`` with ``V0`` orthonormal columns
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


# --------------------------------------------------------------------------------------------
# small dense helpers (arithmetic leaves)
# --------------------------------------------------------------------------------------------


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


@njit(cache=True, nogil=True, fastmath=_FM)
def _tri_dot(Bt, v, out):
    """out = B^T v for upper-triangular Bt = B^T: out_j = sum_{k >= j} Bt[j, k] v_k."""
    r = Bt.shape[0]
    for j in range(r):
        row = Bt[j, j:]
        vj = v[j:]
        acc = 0.0
        for k in range(row.shape[0]):
            acc += row[k] * vj[k]
        out[j] = acc


@njit(cache=True, nogil=True, fastmath=_FM)
def _chol_coeffs(w, beta, dg, cf):
    """Cholesky factor of I + beta w w^T: diagonal dg and lower part c_j w_k (k > j).

    With ``q_j = 1 + beta sum_{k<j} w_k^2`` (so ``beta_j = beta / q_j``):
    ``dg_j = sqrt(q_{j+1} / q_j)`` and ``c_j = beta w_j / sqrt(q_j q_{j+1})``. Only the
    prefix sum is sequential; the square roots and divisions are independent (the textbook
    recursion ``beta_{j+1} = beta_j / t_j`` chains r divisions). Requires
    ``1 + beta ||w||^2 > 0`` (then every q_j > 0).
    """
    r = w.shape[0]
    acc = 0.0
    for j in range(r):  # dg temporarily holds q_j
        dg[j] = 1.0 + beta * acc
        acc += w[j] * w[j]
    for j in range(r):
        qj = dg[j]
        qn = dg[j + 1] if j + 1 < r else 1.0 + beta * acc
        rs = 1.0 / math.sqrt(qj * qn)
        cf[j] = beta * w[j] * rs
        dg[j] = qn * rs  # = sqrt(qn / qj)


@njit(cache=True, nogil=True, fastmath=_FM)
def _tri_pass(Bt, pending, dg, cf, pw, S, v, w):
    """One descending pass over the triangle of Bt.

    If ``pending``: apply ``B <- B L`` for the factor (dg, cf, pw) of the previous projection
    (column j of B L is ``dg_j B[:, j] + cf_j S_j`` with the suffix sum
    ``S_j = sum_{k>j} pw_k B[:, k]``). Then, with row j final, ``w_j = Bt[j] . v`` (so
    ``w = B^T v`` for the updated B). S is workspace.
    """
    r = Bt.shape[0]
    if not pending:
        _tri_dot(Bt, v, w)
        return
    for k in range(r):
        S[k] = 0.0
    # row slices with 0-based inner indices: LLVM vectorises these loops (indexing Bt[j, k]
    # from k = j does not, the wraparound check on k defeats it)
    for jj in range(r):
        j = r - 1 - jj
        row = Bt[j, j:]
        Sj = S[j:]
        vj = v[j:]
        d = dg[j]
        c = cf[j]
        wj = pw[j]
        acc = 0.0
        for k in range(row.shape[0]):
            old = row[k]
            new = d * old + c * Sj[k]
            row[k] = new
            Sj[k] += wj * old
            acc += new * vj[k]
        w[j] = acc


@njit(cache=True, nogil=True, fastmath=_FM)
def _tri_apply(Bt, dg, cf, pw, S):
    """B <- B L for a pending factor, without a following dot product."""
    r = Bt.shape[0]
    for k in range(r):
        S[k] = 0.0
    for jj in range(r):
        j = r - 1 - jj
        row = Bt[j, j:]
        Sj = S[j:]
        d = dg[j]
        c = cf[j]
        wj = pw[j]
        for k in range(row.shape[0]):
            old = row[k]
            row[k] = d * old + c * Sj[k]
            Sj[k] += wj * old


@njit(cache=True, nogil=True)
def _chol_solve(dg, cf, y1, b, out):
    """Solve L x = b for L = chol(I + beta y1 y1^T) given by (dg, cf): O(r) forward sweep."""
    acc = 0.0
    for i in range(b.shape[0]):
        x = (b[i] - y1[i] * acc) / dg[i]
        out[i] = x
        acc += cf[i] * x


# --------------------------------------------------------------------------------------------
# Burg projections
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _burg_distance(delta, lam, bhat, c, gamma, w):
    """Projection onto ``delta * ||g_i1 - g_i2||^2 <= delta * bhat[c]`` (ITML / Kulis 2009).

    ``w = B^T (g_i1 - g_i2)`` is given (from the fused pass). Updates the dual and the slack
    bound; returns (relative violation before the projection, beta): the caller still owes
    ``B <- B chol(I + beta w w^T)`` (beta = 0: no update).
    """
    p = _dot(w, w)
    if p <= 0.0:
        return 0.0, 0.0
    b = bhat[c]
    viol = max(0.0, delta * (p - b)) / b
    gp = 1.0 if math.isinf(gamma) else gamma / (gamma + 1.0)
    alpha = min(lam[c], gp * delta * (1.0 / p - 1.0 / b))
    if alpha == 0.0:
        return viol, 0.0
    lam[c] -= alpha
    if not math.isinf(gamma):
        bhat[c] = 1.0 / (1.0 / b + delta * alpha / gamma)
    # 1 + beta p = 1 / (1 - delta alpha p) > 0: I + beta w w^T stays positive definite.
    # When delta alpha > 0, exactly 1 - delta alpha p >= (1 - gp) + gp p / b (equality when the
    # step reaches the bound); as written it can round to 0 when p << b, so take the larger.
    den = 1.0 - delta * alpha * p
    if delta * alpha > 0.0:
        den = max(den, (1.0 - gp) + gp * p / b)
    if not den > 0.0:  # p / b underflowed: this pair cannot be moved in floating point
        lam[c] += alpha
        return viol, 0.0
    return viol, delta * alpha / den


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
def _burg_similarity(Bt, G, i1, i2, delta, lam, bvec, c, a, cc, v, y2, dg, cf, S):
    """One projection onto ``delta * K[i1, i2] <= delta * b`` (hard; Burg; rank two).

    ``K' = G (I - rho Asym)^-1 G^T`` with ``Asym = (a c^T + c a^T)/2`` in the factor space,
    ``a = B^T g_i1``, ``c = B^T g_i2``. ``(I - rho Asym)^-1 = I + e1 y1 y1^T + e2 y2 y2^T``
    (y orthonormal, e1 >= 0 >= e2 ordered so every partial sum stays PD) is factored as two
    successive triangular rank-one Cholesky updates. Returns the relative violation before
    the projection, or -1.0 when the constraint is unreachable in the current range space.
    """
    r = Bt.shape[0]
    for k in range(r):
        v[k] = G[i1, k]
    _tri_dot(Bt, v, a)
    for k in range(r):
        v[k] = G[i2, k]
    _tri_dot(Bt, v, cc)
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
    # orthonormal basis (e1, e2) of span{a, c}: a = na e1, c = c1 e1 + c2 e2
    c1 = s / na
    for k in range(r):
        v[k] = cc[k] - (c1 / na) * a[k]
    c2 = math.sqrt(max(_dot(v, v), 0.0))
    if c2 <= 1e-12 * math.sqrt(qq):
        # c parallel to a: Asym = kappa a a^T, (I - rho kappa a a^T)^-1 = I + beta a a^T
        kappa = s / pp
        beta = rho * kappa / (1.0 - rho * kappa * pp)
        _chol_coeffs(a, beta, dg, cf)
        _tri_apply(Bt, dg, cf, a, S)
        return viol
    # N2 = I - rho Asym2 in the basis, Asym2 = [[na c1, na c2 / 2], [na c2 / 2, 0]]
    n11 = 1.0 - rho * na * c1
    n12 = -0.5 * rho * na * c2
    n22 = 1.0
    tr = 0.5 * (n11 + n22)
    df = 0.5 * (n11 - n22)
    rad = math.sqrt(df * df + n12 * n12)
    nu1 = tr - rad  # smaller eigenvalue first: e = 1/nu - 1 largest first
    nu2 = tr + rad
    if nu1 <= 0.0:
        return -1.0
    if n12 == 0.0:
        if n11 <= n22:
            x1, z1 = 1.0, 0.0
        else:
            x1, z1 = 0.0, 1.0
    else:
        x1, z1 = nu1 - n22, n12
        nn = math.sqrt(x1 * x1 + z1 * z1)
        x1 /= nn
        z1 /= nn
    x2, z2 = -z1, x1
    e1 = 1.0 / nu1 - 1.0
    e2 = 1.0 / nu2 - 1.0
    # y1 = x1 a/na + z1 v/c2 (into a), y2 = x2 a/na + z2 v/c2 (into cc)
    for k in range(r):
        qa = a[k] / na
        qb = v[k] / c2
        a[k] = x1 * qa + z1 * qb
        cc[k] = x2 * qa + z2 * qb
    _chol_coeffs(a, e1, dg, cf)
    # second factor acts on L1^-1 y2 (I + e1 y1 y1^T + e2 y2 y2^T = L1 (I + e2 t t^T) L1^T)
    _chol_solve(dg, cf, a, cc, y2)
    _tri_apply(Bt, dg, cf, a, S)
    _chol_coeffs(y2, e2, dg, cf)
    _tri_apply(Bt, dg, cf, y2, S)
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
def burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt, c0, c1):
    """Largest relative violation of constraints ``c0 .. c1 - 1`` at the current state."""
    r = Bt.shape[0]
    v = np.empty(r)
    a = np.empty(r)
    cc = np.empty(r)
    worst = 0.0
    for c in range(c0, c1):
        if kind[c] == 0:
            _diff(G, I1[c], I2[c], v)
            _tri_dot(Bt, v, a)
            p = _dot(a, a)
            b = bhat[c]
            viol = max(0.0, delta[c] * (p - b)) / b
        else:
            for k in range(r):
                v[k] = G[I1[c], k]
            _tri_dot(Bt, v, a)
            for k in range(r):
                v[k] = G[I2[c], k]
            _tri_dot(Bt, v, cc)
            s = _dot(a, cc)
            b = bvec[c]
            scale = max(abs(b), math.sqrt(_dot(a, a) * _dot(cc, cc)))
            viol = 0.0 if scale == 0.0 else max(0.0, delta[c] * (s - b)) / scale
        if viol > worst:
            worst = viol
    return worst


@njit(cache=True, nogil=True)
def burg_run(
    G, I1, I2, kind, delta, bvec, bhat, lam, gamma, Bt, max_sweeps, tol,
    conv_out, viol_out, lamnorm_out, lam_old, fac, state, budget,
):
    """Cyclic Burg projections, resumable: at most about ``budget`` multiply-adds per call.

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
        ``B^T``, upper triangular, updated in place (the strict lower triangle is never read
        or written).
    max_sweeps, tol
        Sweeps still to run (a paused sweep counts) and the stopping tolerance.
    conv_out, viol_out, lamnorm_out : (max_sweeps,) float64
        Per-sweep relative dual change, largest relative violation seen during the sweep
        (before each projection), and ``||lam||_2``.
    lam_old : (c,) float64
        The duals at the start of the current sweep (the caller starts it as ``lam``).
    fac : (3, r) float64
        A projection's factor ``B <- B chol(I + beta w w^T)`` still owed to ``Bt`` (rows
        dg, cf, w), carried from one call to the next.
    state : (4,) float64
        Next constraint of the current sweep, the sweep's largest violation so far, whether
        ``fac`` is pending, whether a similarity constraint was unreachable; zeros at first.
    budget : int
        Multiply-adds after which the call returns (``PAUSED``) to let Python handle signals
        (Ctrl-C); the next call resumes exactly there, so results do not depend on it.

    Returns
    -------
    sweeps, status
        Sweeps completed in this call; ``CONVERGED``, ``MAX_ITER``, ``INFEASIBLE`` (a
        similarity constraint unreachable), ``PAUSED`` or ``CHECK`` (the duals and the sweep's
        violations are below tol: the caller checks all constraints at the final state with
        :func:`burg_violation`, then continues or stops).
    """
    r = Bt.shape[0]
    nc = I1.shape[0]
    v = np.empty(r)
    w = np.empty(r)
    S = np.empty(r)
    a = np.empty(r)
    cc = np.empty(r)
    y2 = np.empty(r)
    dg = fac[0]
    cf = fac[1]
    pw = fac[2]
    c0 = int(state[0])
    worst = state[1]
    pending = state[2] != 0.0
    unreachable = state[3] != 0.0
    spent = 0
    s = 0
    while s < max_sweeps:
        for c in range(c0, nc):
            if kind[c] == 0:
                _diff(G, I1[c], I2[c], v)
                _tri_pass(Bt, pending, dg, cf, pw, S, v, w)
                pending = False
                vi, beta = _burg_distance(delta[c], lam, bhat, c, gamma, w)
                if beta != 0.0:
                    # defer B <- B chol(I + beta w w^T) to the next pass over the triangle
                    _chol_coeffs(w, beta, dg, cf)
                    for k in range(r):
                        pw[k] = w[k]
                    pending = True
                spent += r * r
            else:
                if pending:
                    _tri_apply(Bt, dg, cf, pw, S)
                    pending = False
                vi = _burg_similarity(
                    Bt, G, I1[c], I2[c], delta[c], lam, bvec, c, a, cc, v, y2, dg, cf, S
                )
                if vi < 0.0:
                    unreachable = True
                    vi = 1.0
                spent += 4 * r * r
            if vi > worst:
                worst = vi
            if spent >= budget and c + 1 < nc:
                state[0] = c + 1
                state[1] = worst
                state[2] = 1.0 if pending else 0.0
                state[3] = 1.0 if unreachable else 0.0
                return s, PAUSED
        c0 = 0
        if pending:
            _tri_apply(Bt, dg, cf, pw, S)
            pending = False
        viol_out[s] = worst
        conv = _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out)
        s += 1
        state[0] = 0.0
        state[1] = 0.0
        state[2] = 0.0
        state[3] = 1.0 if unreachable else 0.0
        if conv < tol and worst < tol:
            # projections late in the sweep disturb earlier constraints: the caller checks
            # them all at the final state before calling it converged
            return s, CHECK
        if unreachable:
            return s, INFEASIBLE
        worst = 0.0
    return s, MAX_ITER


@njit(cache=True, nogil=True)
def burg_sweeps(
    G, I1, I2, kind, delta, bvec, bhat, lam, gamma, Bt, max_sweeps, tol,
    conv_out, viol_out, lamnorm_out,
):
    """:func:`burg_run` in one call, the final check included (benchmarks). Returns
    ``(sweeps, status)`` with status ``CONVERGED``, ``MAX_ITER`` or ``INFEASIBLE``."""
    r = Bt.shape[0]
    nc = I1.shape[0]
    lam_old = lam.copy()
    fac = np.zeros((3, r))
    state = np.zeros(4)
    done = 0
    while True:
        k, status = burg_run(
            G, I1, I2, kind, delta, bvec, bhat, lam, gamma, Bt, max_sweeps - done, tol,
            conv_out[done:], viol_out[done:], lamnorm_out[done:], lam_old, fac, state,
            np.iinfo(np.int64).max,
        )
        done += k
        if status != CHECK:
            return done, status
        final = burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt, 0, nc)
        viol_out[done - 1] = final
        if final < tol:
            return done, CONVERGED
        if state[3] != 0.0:
            return done, INFEASIBLE
        if done >= max_sweeps:
            return done, MAX_ITER


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
    V, I1, I2, delta, bvec, lam, W, dlog, max_sweeps, tol,
    conv_out, viol_out, lamnorm_out, evals_out, lam_old, state, budget,
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
    s = 0
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
