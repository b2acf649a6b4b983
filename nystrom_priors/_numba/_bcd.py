"""Jitted pieces of BCDNPKL (Hu et al. 2011): the BCD column sweeps (kNN search: ``_knn.py``).

Private: arrays and scalars only; the loss is an integer code (0 square, 1 hinge, 2 squared
hinge). The whole call graph of each driver lives in this file.

Objective on V (l x r, row i = v_i), with the boundary kernel Dt (CSR, l x l) and constraint
adjacency T (CSR: for node i its partners j and signs T_ij):

    f(V) = sum_ik Dt_ik v_i.v_k + C sum_{(i,j) in T, i<j} loss(T_ij v_i.v_j)

square: (1-f)^2, hinge: max(1-f, 0), squared hinge: max(1-f, 0)^2. The column subproblem in
v_i, with d = Dt_ii and g = sum_{k!=i} Dt_ik v_k, is

    d |v|^2 + 2 v.g + C sum_{j in T(i)} loss(T_ij v.v_j),

strictly convex; each update below is its exact minimiser.
"""

import math

import numpy as np
from numba import njit

_FM = {"reassoc", "contract"}

SQUARE = 0
HINGE = 1
SQUARED_HINGE = 2


@njit(cache=True, nogil=True, fastmath=_FM)
def _row_g(indptr, indices, data, Wt, P, V, i, g):
    """g = sum_{k != i} Dt_ik v_k with ``Dt = A - W^T W`` (A sparse CSR, ``Wt = W^T`` dense,
    possibly with 0 columns, ``P = W V`` kept current by the caller); returns Dt_ii."""
    r = V.shape[1]
    for t in range(r):
        g[t] = 0.0
    d = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        k = indices[p]
        a = data[p]
        if k == i:
            d += a
            continue
        for t in range(r):
            g[t] += a * V[k, t]
    m = Wt.shape[1]
    if m:
        wi = Wt[i]
        nw = 0.0
        for u in range(m):
            w = wi[u]
            nw += w * w
            for t in range(r):
                g[t] -= w * P[u, t]
        # P holds W v_i too: put back the diagonal term
        for t in range(r):
            g[t] += nw * V[i, t]
        d -= nw
    return d


@njit(cache=True, nogil=True, fastmath=_FM)
def _refresh_P(Wt, P, i, dv):
    """P += W[:, i] dv^T after v_i changed by dv."""
    m = Wt.shape[1]
    r = P.shape[1]
    for u in range(m):
        w = Wt[i, u]
        for t in range(r):
            P[u, t] += w * dv[t]


@njit(cache=True, nogil=True, fastmath=_FM)
def _At_dot(V, tidx, tsgn, t0, x, out):
    """out_a = T_ij_a v_j_a . x for node i's partners (``A^T x`` with ``A = [T_ij v_j]``)."""
    r = V.shape[1]
    for a in range(out.shape[0]):
        ja = tidx[t0 + a]
        s = 0.0
        for c in range(r):
            s += V[ja, c] * x[c]
        out[a] = tsgn[t0 + a] * s


@njit(cache=True, nogil=True)
def _cholesky_solve(H, b, x):
    """Solve H x = b for a small SPD H (Cholesky factor in a new array)."""
    L = np.zeros(H.shape)
    _cholesky_rows(H, L, 0.0, np.bool_(True))  # bools, not literals: one compile
    x[:] = b
    _cho_solve(L, x)


@njit(cache=True, nogil=True)
def _cholesky_rows(M, L, floor, clamp):
    """The lower triangle L with L L^T = M, row by row, into ``L`` (zeros above).

    Returns -1, or the first row a whose pivot ``M_aa - |L[a, :a]|^2`` is not above
    ``floor * M_aa`` (M singular there: rows before a and ``L[a, :a]`` are filled, which
    ``_active_set_step`` needs). With ``clamp`` a pivot <= 0 (round-off on an SPD M) is
    replaced by 1e-300 and the factorisation goes on."""
    t = M.shape[0]
    for a in range(t):
        for b in range(a):
            v = M[a, b]
            for c in range(b):
                v -= L[a, c] * L[b, c]
            L[a, b] = v / L[b, b]
        v = M[a, a]
        for c in range(a):
            v -= L[a, c] * L[a, c]
        if clamp:
            if v <= 0.0:
                v = 1e-300
        elif not v > floor * M[a, a]:
            return a
        L[a, a] = math.sqrt(v)
    return -1


@njit(cache=True, nogil=True)
def _cho_solve(L, x):
    """x <- (L L^T)^-1 x in place, L lower triangular: L y = x, then L^T x = y."""
    t = x.size
    for a in range(t):
        acc = x[a]
        for c in range(a):
            acc -= L[a, c] * x[c]
        x[a] = acc / L[a, a]
    for a in range(t - 1, -1, -1):
        acc = x[a]
        for c in range(a + 1, t):
            acc -= L[c, a] * x[c]
        x[a] = acc / L[a, a]


@njit(cache=True, nogil=True)
def _box_qp(H, q, ub, alpha, tol, max_iter):
    """min 1/2 a^T H a - q^T a  s.t. 0 <= a <= ub (ub = inf: a >= 0), from the given start.

    Exact coordinate descent, which finds which bounds are active in a few passes but then
    converges only linearly, slowly where H is ill-conditioned (partners v_j that are nearly
    parallel, as same-class rows become). So whenever a pass leaves the set of coordinates at
    a bound unchanged, and that set has not been tried, active-set steps take over
    (``_active_set_step``: the free coordinates solved for directly, bounds added as they are
    hit); they stop the descent where they end at the minimiser (KKT), and otherwise leave it
    a lower point to go on from. The descent stops when no coordinate moves by more than
    tol*(1+|a|)."""
    t = H.shape[0]
    state = np.empty(t, dtype=np.int8)  # 0 at the lower bound, 1 free, 2 at the upper bound
    prev = np.full(t, -1, dtype=np.int8)
    tried = np.full(t, -1, dtype=np.int8)
    for _ in range(max_iter):
        biggest = 0.0
        for s in range(t):
            grad = -q[s]
            for u in range(t):
                grad += H[s, u] * alpha[u]
            h = H[s, s]
            if h > 0.0:
                new = alpha[s] - grad / h
            else:
                new = ub if grad < 0.0 else 0.0
            if new < 0.0:
                new = 0.0
            if new > ub:
                new = ub
            step = abs(new - alpha[s])
            if step > biggest:
                biggest = step
            alpha[s] = new
        scale = 1.0
        for s in range(t):
            scale = max(scale, abs(alpha[s]))
        if biggest <= tol * scale:
            break
        same = True
        again = True
        for s in range(t):
            state[s] = 0 if alpha[s] <= 0.0 else (2 if alpha[s] >= ub else 1)
            same = same and state[s] == prev[s]
            again = again and state[s] == tried[s]
            prev[s] = state[s]
        if same and not again:
            tried[:] = state
            if _active_set_step(H, q, ub, state, alpha):
                break


@njit(cache=True, nogil=True)
def _active_set_step(H, q, ub, state, alpha):
    """Primal active-set steps from ``alpha`` with the bounds ``state`` marks (0 lower, 2
    upper) held: the free coordinates F (1) move toward their stationary point
    ``H_FF a_F = q_F - H_FU ub`` (Cholesky), as far as the box allows; a coordinate that
    reaches a bound joins the held ones and F is solved again. The objective is convex along
    each segment and least at its end, so every step lowers it, and ``alpha`` keeps the
    last point. Where H_FF is singular (the hinge loss with more partners than the rank), the
    objective is linear along a null direction of H_FF and the step follows it, downhill, to
    the next bound. Returns True if the last point is the minimiser: the gradient
    ``g = H a - q`` zero on F, >= 0 at the lower bounds and <= 0 at the upper ones, up to
    round-off (a relative 1e-12 of the terms that sum to each g_s) -- the KKT conditions of
    the convex QP; False leaves the caller's descent to go on."""
    t = H.shape[0]
    for _ in range(t + 1):
        free = np.flatnonzero(state == 1)
        f = free.size
        HF = np.empty((f, f))
        x = np.empty(f)
        for a in range(f):
            x[a] = q[free[a]]
            for u in range(t):
                if state[u] == 2:
                    x[a] -= H[free[a], u] * ub
            for b in range(f):
                HF[a, b] = H[free[a], free[b]]
        L = np.zeros((f, f))
        dep = _cholesky_rows(HF, L, 1e-12, np.bool_(False))
        if dep < 0:  # toward the free block's stationary point, at most all the way
            _cho_solve(L, x)
            for a in range(f):
                x[a] -= alpha[free[a]]
            if _step_to_box(alpha, state, free, x, ub, 1.0) < 0:
                break
            continue
        # H_FF is singular: along n (n_dep = 1, n_P = -H_PP^-1 H_P,dep over the earlier free
        # coordinates P) the objective is linear, so it falls all the way to a bound
        n = np.empty(dep + 1)
        n[dep] = 1.0
        for a in range(dep - 1, -1, -1):
            acc = L[dep, a]
            for c in range(a + 1, dep):
                acc += L[c, a] * n[c]  # n[c] is already negated
            n[a] = -acc / L[a, a]
        slope = 0.0
        size = 0.0
        for a in range(dep + 1):
            g, _ = _gradient(H, q, alpha, free[a])
            slope += g * n[a]
            size += abs(g * n[a])
        if not abs(slope) > 1e-12 * size:
            return False  # flat along n too: the descent goes on
        if slope > 0.0:
            n = -n
        if _step_to_box(alpha, state, free, n, ub, np.inf) < 0:
            return False  # no bound ahead
    for s in range(t):
        g, size = _gradient(H, q, alpha, s)
        slack = 1e-12 * size
        if (state[s] == 1 and abs(g) > slack) or (state[s] == 0 and g < -slack):
            return False
        if state[s] == 2 and g > slack:
            return False
    return True


@njit(cache=True, nogil=True)
def _gradient(H, q, alpha, s):
    """``(g_s, size)``: the box QP's gradient ``(H a - q)_s`` and the sum of the absolute
    values of its terms (the scale of its round-off)."""
    g = -q[s]
    size = abs(q[s])
    for u in range(H.shape[0]):
        term = H[s, u] * alpha[u]
        g += term
        size += abs(term)
    return g, size


@njit(cache=True, nogil=True)
def _step_to_box(alpha, state, free, direction, ub, longest):
    """Move ``alpha[free[:k]]`` (k = direction's size) by ``tau * direction``, tau the largest
    step up to ``longest`` that stays in [0, ub]. The coordinate that limits it is put on its
    bound and held there (``state``); returns its position in ``free``, or -1 when none does
    (the whole step was taken; with ``longest`` = inf nothing moves)."""
    tau = longest
    block = -1
    for a in range(direction.size):
        step = direction[a]
        cur = alpha[free[a]]
        if step < 0.0 and cur / -step < tau:
            tau, block = cur / -step, a
        elif step > 0.0 and (ub - cur) / step < tau:
            tau, block = (ub - cur) / step, a
    if block < 0 and not tau < np.inf:
        return -1
    for a in range(direction.size):
        alpha[free[a]] = min(max(alpha[free[a]] + tau * direction[a], 0.0), ub)
    if block >= 0:
        lower = direction[block] < 0.0
        alpha[free[block]] = 0.0 if lower else ub
        state[free[block]] = 0 if lower else 2
    return block


@njit(cache=True, nogil=True)
def _update_column(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, g, dual, old):
    """Replace v_i by the exact minimiser of its subproblem (see the module docstring), and
    keep ``P = W V`` current.

    ``dual`` holds the box-QP multipliers of node i's constraints (warm start, updated)."""
    r = V.shape[1]
    for c in range(r):
        old[c] = V[i, c]
    _solve_column(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, g, dual)
    if Wt.shape[1]:
        for c in range(r):
            old[c] = V[i, c] - old[c]
        _refresh_P(Wt, P, i, old)


@njit(cache=True, nogil=True)
def _solve_square_rank(tptr, tidx, tsgn, V, i, C, g, d):
    """Row i of V for the square loss from ``(d I + C A A^T) v = -g + C A 1`` (r x r), A =
    [T_ij v_j] over the t pairs at i: ``A A^T = sum_j v_j v_j^T`` (T_ij^2 = 1)."""
    r = V.shape[1]
    t0, t1 = tptr[i], tptr[i + 1]
    H = np.zeros((r, r))
    rhs = np.empty(r)
    for c in range(r):
        rhs[c] = -g[c]
        H[c, c] = d
    for k in range(t0, t1):
        j = tidx[k]
        sg = tsgn[k]
        for c in range(r):
            vc = V[j, c]
            rhs[c] += C * sg * vc
            for e in range(c + 1):
                H[c, e] += C * vc * V[j, e]
    for c in range(r):
        for e in range(c):
            H[e, c] = H[c, e]
    v = np.empty(r)
    _cholesky_solve(H, rhs, v)
    for c in range(r):
        V[i, c] = v[c]


@njit(cache=True, nogil=True)
def _solve_column(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, g, dual):
    r = V.shape[1]
    d = _row_g(indptr, indices, data, Wt, P, V, i, g)
    t0 = tptr[i]
    t = tptr[i + 1] - t0
    if t == 0:
        for c in range(r):
            V[i, c] = -g[c] / d
        return
    if loss == SQUARE and t > r:
        # more pairs at sample i than the rank (one sample in thousands of pairs): the r x r
        # system itself, O(t r^2) time and O(r^2) memory, not Woodbury's t x t one (cubic in
        # t, two t x t arrays)
        _solve_square_rank(tptr, tidx, tsgn, V, i, C, g, d)
        return
    # A = [T_ij v_j] (r x t), AtA (t x t)
    AtA = np.empty((t, t))
    for a in range(t):
        ja = tidx[t0 + a]
        for b in range(a, t):
            jb = tidx[t0 + b]
            s = 0.0
            for c in range(r):
                s += V[ja, c] * V[jb, c]
            s *= tsgn[t0 + a] * tsgn[t0 + b]
            AtA[a, b] = s
            AtA[b, a] = s
    Atg = np.empty(t)
    _At_dot(V, tidx, tsgn, t0, g, Atg)
    if loss == SQUARE:
        # (d I + C A A^T) v = -g + C A 1  (T_ij^2 = 1); Woodbury with the t x t system
        # (d/C I + A^T A) z = A^T rhs,  v = (rhs - A z) / d
        rhs = np.empty(r)
        for c in range(r):
            rhs[c] = -g[c]
        for a in range(t):
            ja = tidx[t0 + a]
            sg = tsgn[t0 + a]
            for c in range(r):
                rhs[c] += C * sg * V[ja, c]
        Atr = np.empty(t)
        _At_dot(V, tidx, tsgn, t0, rhs, Atr)
        H = AtA.copy()
        for a in range(t):
            H[a, a] += d / C
        z = np.empty(t)
        _cholesky_solve(H, Atr, z)
        for c in range(r):
            acc = rhs[c]
            for a in range(t):
                acc -= tsgn[t0 + a] * V[tidx[t0 + a], c] * z[a]
            V[i, c] = acc / d
        return
    # hinge / squared hinge: dual box QP  min 1/2 a^T H a - q^T a
    # H = A^T A / (2d) (+ I / (2C)),  q = 1 + A^T g / d,  v = (A a - 2 g) / (2 d)
    H = np.empty((t, t))
    q = np.empty(t)
    for a in range(t):
        q[a] = 1.0 + Atg[a] / d
        for b in range(t):
            H[a, b] = AtA[a, b] / (2.0 * d)
        if loss == SQUARED_HINGE:
            H[a, a] += 1.0 / (2.0 * C)
    ub = C if loss == HINGE else np.inf
    alpha = np.empty(t)
    for a in range(t):
        alpha[a] = min(max(dual[t0 + a], 0.0), ub)
    _box_qp(H, q, ub, alpha, 1e-13, 100000)
    for a in range(t):
        dual[t0 + a] = alpha[a]
    for c in range(r):
        acc = -2.0 * g[c]
        for a in range(t):
            acc += alpha[a] * tsgn[t0 + a] * V[tidx[t0 + a], c]
        V[i, c] = acc / (2.0 * d)


@njit(cache=True, nogil=True, fastmath=_FM)
def objective(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, C, loss):
    """f(V) = tr(V^T Dt V) + C sum over unordered constraint pairs of loss(T_ij v_i.v_j),
    with ``Dt = A - W^T W`` and ``P = W V``."""
    l, r = V.shape
    quad = 0.0
    for u in range(P.shape[0]):
        for t in range(r):
            quad -= P[u, t] * P[u, t]
    for i in range(l):
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            s = 0.0
            for c in range(r):
                s += V[i, c] * V[k, c]
            quad += data[p] * s
    lo = 0.0
    for i in range(l):
        for p in range(tptr[i], tptr[i + 1]):
            j = tidx[p]
            if j <= i:
                continue
            s = 0.0
            for c in range(r):
                s += V[i, c] * V[j, c]
            m = 1.0 - tsgn[p] * s
            if loss == SQUARE:
                lo += m * m
            elif loss == HINGE:
                lo += max(m, 0.0)
            else:
                lo += max(m, 0.0) ** 2
    return quad + C * lo


@njit(cache=True, nogil=True)
def bcd_run(
    indptr,
    indices,
    data,
    Wt,
    P,
    tptr,
    tidx,
    tsgn,
    V,
    C,
    loss,
    max_sweeps,
    tol,
    obj_out,
    dual,
    state,
    budget,
):
    """Gauss-Seidel sweeps over the columns until the relative objective decrease < tol,
    resumable: the call returns after about ``budget`` multiply-adds (so that Python can
    handle Ctrl-C) and the next call resumes at column ``state[0]``.

    The boundary kernel is ``Dt = A - W^T W``: A sparse (CSR arrays), ``Wt = W^T`` dense
    (l x m, m = 0 allowed) and ``P = W V`` (m x r, kept current). ``obj_out[0]`` holds the
    objective before the first (possibly resumed) sweep of this call (the caller's
    :func:`objective`, or the previous call's last value); ``obj_out[s]`` receives the value
    after sweep s.

    Returns
    -------
    sweeps, status
        Sweeps completed in this call; status 0 max_sweeps reached, 1 converged, 2 paused.
    """
    l, r = V.shape
    g = np.empty(r)
    old = np.empty(r)
    m = Wt.shape[1]
    i0 = state[0]
    spent = 0
    s = 0
    while s < max_sweeps:
        for i in range(i0, l):
            _update_column(
                indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, g, dual, old
            )
            t = tptr[i + 1] - tptr[i]
            spent += (indptr[i + 1] - indptr[i] + m + t * t + 1) * r + t * t * t
            if spent >= budget and i + 1 < l:
                state[0] = i + 1
                return s, 2
        i0 = 0
        state[0] = 0
        cur = objective(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, C, loss)
        prev = obj_out[s]
        s += 1
        obj_out[s] = cur
        if abs(prev - cur) <= tol * max(abs(cur), 1e-300):
            return s, 1
    return s, 0


@njit(cache=True, nogil=True)
def bcd_sweeps(
    indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, C, loss, max_sweeps, tol, obj_out, dual
):
    """:func:`bcd_run` in one call from the starting objective (benchmarks).
    Returns (sweeps run, converged)."""
    obj_out[0] = objective(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, C, loss)
    state = np.zeros(1, dtype=np.int64)
    k, status = bcd_run(
        indptr,
        indices,
        data,
        Wt,
        P,
        tptr,
        tidx,
        tsgn,
        V,
        C,
        loss,
        max_sweeps,
        tol,
        obj_out,
        dual,
        state,
        np.iinfo(np.int64).max,
    )
    return k, status == 1


@njit(cache=True, nogil=True)
def column_subproblem_value(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, y, C, loss):
    """Value of node i's subproblem at v_i = y (for the tests' exactness checks)."""
    r = V.shape[1]
    g = np.empty(r)
    d = _row_g(indptr, indices, data, Wt, P, V, i, g)
    val = 0.0
    for c in range(r):
        val += d * y[c] * y[c] + 2.0 * y[c] * g[c]
    for p in range(tptr[i], tptr[i + 1]):
        j = tidx[p]
        s = 0.0
        for c in range(r):
            s += y[c] * V[j, c]
        m = 1.0 - tsgn[p] * s
        if loss == SQUARE:
            val += C * m * m
        elif loss == HINGE:
            val += C * max(m, 0.0)
        else:
            val += C * max(m, 0.0) ** 2
    return val


@njit(cache=True, nogil=True)
def update_one_column(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, dual):
    """Public wrapper of one column update (tests)."""
    g = np.empty(V.shape[1])
    old = np.empty(V.shape[1])
    _update_column(indptr, indices, data, Wt, P, tptr, tidx, tsgn, V, i, C, loss, g, dual, old)
