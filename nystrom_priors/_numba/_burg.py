"""Jitted Burg (LogDet) cyclic projections for low-rank kernel learning (Kulis et al. 2006).

Private: arrays and scalars only. The whole call graph of each driver lives in this file
(numba's on-disk cache does not notice edits to callees in other files).

Burg (LogDet) state: the learned kernel on any samples is ``G0 B B^T G0^T`` with B lower
triangular (it starts at I and every update multiplies it on the right by a lower-triangular
factor). We keep ``Bt = B^T`` (upper triangular, zeros below) so that B's columns are
contiguous rows, and touch little more than the triangle. A distance projection multiplies B
by the Cholesky factor L of ``I + beta w w^T``, which is diagonal plus strictly-lower rank
one:

    beta_0 = beta,  t_j = 1 + beta_j w_j^2,  dg_j = sqrt(t_j),  c_j = beta_j w_j / dg_j,
    beta_{j+1} = beta_j / t_j,   L_jj = dg_j,  L_kj = c_j w_k  (k > j),

so column j of ``B L`` is ``dg_j B[:, j] + c_j sum_{k>j} w_k B[:, k]``: a suffix sum, O(r^2)
(the literal Cholesky + matmul would be O(r^3)). Together with ``w = B^T v`` this is 1.5 r^2
multiply-adds per projection, half of what a full (non-triangular) factor needs, and we fuse
the update of one projection with the ``B^T v`` of the next into a single pass over the
triangle (rows are finished in descending order, each one immediately dotted with the next v).

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


# error_model="numpy": no division-by-zero branch (every q_j > 0), so the square roots and
# divisions vectorise
@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def _chol_coeffs(w, beta, q, dg, cf):
    """Cholesky factor of I + beta w w^T: diagonal dg and lower part c_j w_k (k > j).

    With ``q_j = 1 + beta sum_{k<j} w_k^2`` (so ``beta_j = beta / q_j``):
    ``dg_j = sqrt(q_{j+1} / q_j)`` and ``c_j = beta w_j / sqrt(q_j q_{j+1})``. Only the
    prefix sum is sequential; the square roots and divisions are independent (the textbook
    recursion ``beta_{j+1} = beta_j / t_j`` chains r divisions). Requires
    ``1 + beta ||w||^2 > 0`` (then every q_j > 0). q (r + 1) is workspace.
    """
    r = w.shape[0]
    acc = 0.0
    for j in range(r):
        q[j] = 1.0 + beta * acc
        acc += w[j] * w[j]
    q[r] = 1.0 + beta * acc
    for j in range(r):
        qn = q[j + 1]
        rs = 1.0 / math.sqrt(q[j] * qn)
        cf[j] = beta * w[j] * rs
        dg[j] = qn * rs  # = sqrt(qn / q_j)


@njit(cache=True, nogil=True, fastmath=_FM)
def _tri_pass(Bt, pending, dg, cf, pw, S, v, w):
    """One descending pass over the triangle of Bt.

    If ``pending``: apply ``B <- B L`` for the factor (dg, cf, pw) of the previous projection
    (column j of B L is ``dg_j B[:, j] + cf_j S_j`` with the suffix sum
    ``S_j = sum_{k>j} pw_k B[:, k]``). Then, with row j final, ``w_j = Bt[j] . v`` (so
    ``w = B^T v`` for the updated B). S is workspace (zeroed here).

    Rows go two at a time (with r odd, row ``r - 1``, a single element, first). A pair
    ``(j0, j0 + 1)`` runs from column j0 (``Bt[j0 + 1, j0]`` is zero and stays zero: the strict
    lower triangle of Bt must be zero): one read and write of S per column for two rows, and
    two independent dot products, whose latency bounds the short rows LLVM leaves scalar.
    """
    # the loops are written out here, not called: at small ranks the call of a function taking
    # eight arrays costs as much as the arithmetic
    r = Bt.shape[0]
    if not pending:
        _tri_dot(Bt, v, w)
        return
    for k in range(r):
        S[k] = 0.0
    odd = r % 2
    if odd == 1:
        j = r - 1
        old = Bt[j, j]
        new = dg[j] * old + cf[j] * S[j]
        Bt[j, j] = new
        S[j] += pw[j] * old
        w[j] = new * v[j]
    # written so that LLVM sees j0 >= 0 and drops the wraparound fix-ups of the slices (as
    # costly as the arithmetic of a short row)
    for jj in range(r // 2):
        j0 = r - odd - 2 - 2 * jj
        # row slices with 0-based inner indices: LLVM vectorises these loops (indexing Bt[j, k]
        # from k = j does not, the wraparound check on k defeats it)
        r0 = Bt[j0, j0:]
        r1 = Bt[j0 + 1, j0:]
        Sj = S[j0:]
        vj = v[j0:]
        d0 = dg[j0]
        d1 = dg[j0 + 1]
        c0 = cf[j0]
        c1 = cf[j0 + 1]
        p0 = pw[j0]
        p1 = pw[j0 + 1]
        a0 = 0.0
        a1 = 0.0
        for k in range(r0.shape[0]):
            s = Sj[k]
            o1 = r1[k]
            o0 = r0[k]
            n1 = d1 * o1 + c1 * s
            s += p1 * o1
            n0 = d0 * o0 + c0 * s
            s += p0 * o0
            r1[k] = n1
            r0[k] = n0
            Sj[k] = s
            vk = vj[k]
            a1 += n1 * vk
            a0 += n0 * vk
        w[j0] = a0
        w[j0 + 1] = a1


@njit(cache=True, nogil=True, fastmath=_FM)
def _tri_apply(Bt, dg, cf, pw, S, v, w):
    """B <- B L for a pending factor (the update pass with ``v = 0``; w is workspace)."""
    for k in range(v.shape[0]):
        v[k] = 0.0
    _tri_pass(Bt, np.bool_(True), dg, cf, pw, S, v, w)  # a bool, as the sweep passes


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


# error_model="numpy": once a factor has gone non-finite (an overflow the caller diagnoses
# from the learned factor), the slack update's division by zero gives inf, not an exception
@njit(cache=True, nogil=True, error_model="numpy")
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
        # a^T (I - rho A)^-1 c = (2 g rho + 4 s) / (4 - 4 s rho - g rho^2) increases with rho
        # where I - rho A > 0 (its derivative is (2 g D + N^2) / D^2), so the one root there
        # has the sign of b - s. Far bounds (|b| ~ 1e18) put both roots at the interval's
        # ends, where rounding can pass the other one's check.
        if rho * (b - s) <= 0.0:
            continue
        if 1.0 - rho * mu_hi > 0.0 and 1.0 - rho * mu_lo > 0.0:
            if math.isnan(best) or abs(rho) < abs(best):
                best = rho
    return best


@njit(cache=True, nogil=True)
def _burg_similarity(Bt, G, i1, i2, delta, lam, bvec, c, a, cc, v, y2, q, dg, cf, S):
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
        _chol_coeffs(a, beta, q, dg, cf)
        _tri_apply(Bt, dg, cf, a, S, v, cc)
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
    _chol_coeffs(a, e1, q, dg, cf)
    # second factor acts on L1^-1 y2 (I + e1 y1 y1^T + e2 y2 y2^T = L1 (I + e2 t t^T) L1^T)
    _chol_solve(dg, cf, a, cc, y2)
    _tri_apply(Bt, dg, cf, a, S, v, cc)
    _chol_coeffs(y2, e2, q, dg, cf)
    _tri_apply(Bt, dg, cf, y2, S, v, cc)
    return viol


@njit(cache=True, nogil=True)
def _idle_duals(lam, kind, bvec, tol):
    """Whether every dual moves its constraint by less than ``tol`` (relative): ``lam_c b_c``
    for a distance bound, any nonzero dual of a similarity constraint counts. Where the
    initial kernel meets the constraints the duals are round-off, and their relative change,
    which ITML's test reads, stays large however long the sweeps run."""
    for c in range(lam.shape[0]):
        if kind[c] == 0:
            if abs(lam[c] * bvec[c]) >= tol:
                return False
        elif lam[c] != 0.0:
            return False
    return True


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


_VIOL_CHUNK = 256  # constraints per matrix product in burg_violation


@njit(cache=True, nogil=True)
def burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt, c0, c1):
    """Largest relative violation of constraints ``c0 .. c1 - 1`` at the current state.

    The factor rows ``B^T g`` (``B^T (g_i - g_j)`` for a distance constraint, ``B^T g_i`` and
    ``B^T g_j`` for a similarity one) of a chunk of constraints come from one matrix product
    ``V Bt^T`` (BLAS; Bt's zeros below the diagonal make it the triangular product): a
    matrix-vector product per constraint would stream the whole triangle from cache each
    time.
    """
    r = Bt.shape[0]
    m = min(max(c1 - c0, 0), _VIOL_CHUNK)
    V = np.empty((2 * m, r))
    BtT = Bt.T
    worst = 0.0
    for s0 in range(c0, c1, _VIOL_CHUNK):
        s1 = min(c1, s0 + _VIOL_CHUNK)
        n = 0
        for c in range(s0, s1):
            if kind[c] == 0:
                _diff(G, I1[c], I2[c], V[n])
                n += 1
            else:
                V[n] = G[I1[c]]
                V[n + 1] = G[I2[c]]
                n += 2
        W = np.dot(V[:n], BtT)
        n = 0
        for c in range(s0, s1):
            if kind[c] == 0:
                p = _dot(W[n], W[n])
                n += 1
                b = bhat[c]
                viol = max(0.0, delta[c] * (p - b)) / b
            else:
                a = W[n]
                cc = W[n + 1]
                n += 2
                s = _dot(a, cc)
                b = bvec[c]
                scale = max(abs(b), math.sqrt(_dot(a, a) * _dot(cc, cc)))
                viol = 0.0 if scale == 0.0 else max(0.0, delta[c] * (s - b)) / scale
            if viol > worst:
                worst = viol
    return worst


@njit(cache=True, nogil=True)
def burg_run(
    G,
    I1,
    I2,
    kind,
    delta,
    bvec,
    bhat,
    lam,
    gamma,
    Bt,
    max_sweeps,
    tol,
    conv_out,
    viol_out,
    lamnorm_out,
    lam_old,
    fac,
    state,
    budget,
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
        ``B^T``, upper triangular, updated in place. Its strict lower triangle must be zero
        (the update pass reads its first subdiagonal) and stays zero.
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
    q = np.empty(r + 1)
    dg = fac[0]
    cf = fac[1]
    pw = fac[2]
    c0 = int(state[0])
    worst = state[1]
    pending = state[2] != 0.0
    unreachable = state[3] != 0.0
    spent = 0
    s = np.int64(0)  # not the literal 0, which would compile _sweep_stats twice
    while s < max_sweeps:
        for c in range(c0, nc):
            if kind[c] == 0:
                _diff(G, I1[c], I2[c], v)
                _tri_pass(Bt, pending, dg, cf, pw, S, v, w)
                pending = False
                vi, beta = _burg_distance(delta[c], lam, bhat, c, gamma, w)
                if beta != 0.0:
                    # defer B <- B chol(I + beta w w^T) to the next pass over the triangle
                    _chol_coeffs(w, beta, q, dg, cf)
                    for k in range(r):
                        pw[k] = w[k]
                    pending = True
                spent += r * r
            else:
                if pending:
                    _tri_apply(Bt, dg, cf, pw, S, v, w)
                    pending = False
                vi = _burg_similarity(
                    Bt, G, I1[c], I2[c], delta[c], lam, bvec, c, a, cc, v, y2, q, dg, cf, S
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
            _tri_apply(Bt, dg, cf, pw, S, v, w)
            pending = False
        viol_out[s] = worst
        conv = _sweep_stats(lam, lam_old, s, conv_out, lamnorm_out)
        s += 1
        state[0] = 0.0
        state[1] = 0.0
        state[2] = 0.0
        state[3] = 1.0 if unreachable else 0.0
        if worst < tol and (conv < tol or _idle_duals(lam, kind, bvec, tol)):
            # projections late in the sweep disturb earlier constraints: the caller checks
            # them all at the final state before calling it converged
            return s, CHECK
        if unreachable:
            return s, INFEASIBLE
        worst = 0.0
    return s, MAX_ITER
