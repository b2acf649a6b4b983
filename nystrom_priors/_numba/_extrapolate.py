"""Jitted kernels for the extrapolation matrix E = k(X, Z).

Private module: every function takes only arrays and scalars, the kernel is chosen by an
integer code (see ``nystrom_priors.kernels``), and nothing is validated here. The whole call
graph lives in this file because numba's cache does not notice edits to callees elsewhere.

Layout of the work
------------------
``extrapolate_blas`` / ``project_blas``
    ``prange`` over row tiles; each thread computes its tile's cross term ``X_t Z^T`` with
    BLAS (``np.dot``; the Python caller limits BLAS to one thread so the two thread pools do not
    fight) and immediately applies the kernel's element-wise map while the tile is in cache;
    ``project_blas`` then multiplies the tile by the m x r projection, so factor rows
    ``G = k(X, Z) P`` never need E beyond one tile per thread.
``extrapolate_fused``
    Small ``d``: the cross term is computed in the same pass as the element-wise map, so E is
    written once. Faster than a GEMM when the GEMM is bound by writing E.
``extrapolate_l1``
    Laplacian kernel ``exp(-||x - z||_1 / b)``: no GEMM structure.
``finish_rows``
    Element-wise map over a block whose cross term was computed outside (fallback path).
``abs_max``
    One parallel pass for ``max |x|`` and finiteness: the overflow guards and the input check
    would otherwise read X four or five times, as much as the GEMM's own read of X at large d.

Results are independent of the number of threads: the tile height depends on the shapes only,
so every output element is produced by the same sequence of operations whichever thread
computes it. They are not bit-independent of the caller's blocking (``block_rows``, streaming):
BLAS may sum a row's cross term in another order in a tile of another height. The difference
is the GEMM round-off of the cross term, which the RBF map scales by
``gamma |x - c| |z - c|``: a few ulps of E near the data, more for outliers far from the
landmarks' mean c (bounded in ``tests/conftest.py``, ``rbf_blocking_bound``).
"""

import numpy as np
from llvmlite import ir
from numba import config as numba_config
from numba import njit, prange, types
from numba.extending import intrinsic

# Kernel codes; kept in sync with nystrom_priors.kernels.KERNEL_CODES.
LINEAR = 0
RBF = 1
POLY = 2
COSINE = 3
LAPLACIAN = 4


if numba_config.DISABLE_JIT:
    # NUMBA_DISABLE_JIT=1 (coverage runs): intrinsics have no pure-Python form, so give the
    # same bit casts with numpy, wrapping like the int64 register arithmetic they stand for.

    def _f64_bits(x):
        return int(np.float64(x).view(np.int64))

    def _bits_f64(i):
        return np.uint64(int(i) & 0xFFFF_FFFF_FFFF_FFFF).view(np.float64)

else:

    @intrinsic
    def _f64_bits(typingctx, x):
        """Reinterpret a float64 as int64 (a register bitcast, so loops still vectorize)."""
        if x != types.float64:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return types.int64(types.float64), codegen

    @intrinsic
    def _bits_f64(typingctx, x):
        """Reinterpret an int64 as float64."""
        if x != types.int64:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# Adding 1.5 * 2**52 rounds to an integer that lands in the low mantissa bits.
_ROUND_SHIFT = 6755399441055744.0
# Coefficients of the degree-11 polynomial interpolating e^r at the 12 Chebyshev nodes of
# [-ln2/2, ln2/2] (scripts/research/exp_coefficients.py recomputes them in 40-digit
# arithmetic): max relative error 1.7e-17 over the interval as rounded, so 11 degrees suffice
# where Taylor needs 13. Stored times 2^-54 (see _exp_nonpos); a tuple is a compile-time
# constant for numba.
_C = tuple(
    2.0**-54 * c
    for c in (
        1.0,
        1.0,
        0.5000000000000019,
        0.1666666666666668,
        0.0416666666664881,
        0.008333333333319601,
        0.0013888888952314775,
        0.00019841269890047113,
        2.4801485482328494e-05,
        2.755724091857897e-06,
        2.763263963904103e-07,
        2.5110037605963777e-08,
    )
)


# Only "contract" here: "reassoc" would fold (t + SHIFT) - SHIFT to t and merge the two-part
# ln 2, destroying the range reduction. The loop still vectorizes: there is no reduction and no
# library call (numba's np.exp is a scalar libm call).
@njit(fastmath={"contract"}, cache=True, nogil=True)
def _exp_nonpos(a):
    """exp(a) for a <= 0 (a = -0.0 .. -inf), within 2 ulp, subnormals included.

    Cody-Waite reduction a = k ln2 + r, |r| <= ln2/2, a degree-11 polynomial p(r) ~ e^r
    (Chebyshev interpolant, relative error < 2e-17), and the scale 2^k built from exponent
    bits: 2^(k+54) is a normal number for every k >= -1076, and the polynomial's coefficients
    carry the factor 2^-54 (exact: every intermediate is the unscaled one times 2^-54, far
    from underflow), so the one multiplication by 2^(k+54) rounds correctly into the
    subnormal range. The polynomial is ``c0 + r (c1 + r (c2 + r Q))`` with Q the terms of
    degree 3..11 divided by r^3, by Estrin's scheme: a dependency chain of 6 multiply-adds
    instead of Horner's 11, which is what bounds the vectorized loop (Q's rounding is damped
    by |r|^3 <= 0.042).
    """
    a = np.float64(a)  # a float32 argument (only without the JIT) would lose the reduction
    if a < -745.2:
        a = -745.2
    t = a * _LOG2E + _ROUND_SHIFT
    kf = t - _ROUND_SHIFT
    r = (a - kf * _LN2_HI) - kf * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    q0 = _C[3] + r * _C[4]
    q1 = _C[5] + r * _C[6]
    q2 = _C[7] + r * _C[8]
    q3 = (_C[9] + r * _C[10]) + r2 * _C[11]
    q = (q0 + r2 * q1) + r4 * (q2 + r2 * q3)
    p = _C[2] + r * q
    p = _C[1] + r * p
    p = _C[0] + r * p  # 2^-54 e^r
    # low 12 bits of (2^51 + k + 1077) are k + 1077 in [1, 1077]: the biased exponent of 2^(k+54)
    scale = _bits_f64((_f64_bits(t) + 1077) << 52)
    return p * scale


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _finish_row(row, xa, zaux, code, gamma, coef0, degree):
    """Apply the kernel's element-wise map to one row of cross terms, in place.

    RBF: row holds <x - c, z - c>; ``xa = ||x - c||^2``, ``zaux = ||z - c||^2``.
    COSINE: row holds <x, z / ||z||> (unit landmarks); ``xa = ||x||``, ``zaux`` 1, or 0 for
    a zero landmark; zero for a zero x.
    POLY: row holds <x, z>. LINEAR: nothing to do.
    """
    m = row.shape[0]
    if code == RBF:
        for j in range(m):
            # e = -||x - z||^2, exactly the negated fused multiply-add; clamped to <= 0 by a
            # single min (NaN stays NaN: the caller reports the overflow)
            e = 2.0 * row[j] - (xa + zaux[j])
            if e > 0.0:
                e = 0.0
            row[j] = _exp_nonpos(e * gamma)
    elif code == COSINE:
        if not xa < np.inf:  # ||x|| overflows: NaN, so the caller reports the overflow
            for j in range(m):
                row[j] = np.nan
        elif xa > 1e-300:
            inv = 1.0 / xa
            for j in range(m):
                row[j] = (row[j] * inv) * zaux[j]
        else:  # 1 / ||x|| overflows for subnormal x: divide (|<x, z>| <= ||x||)
            for j in range(m):
                row[j] = (row[j] / xa) * zaux[j] if xa > 0.0 else 0.0
    elif code == POLY:
        for j in range(m):
            t = gamma * row[j] + coef0
            p = 1.0
            for _ in range(degree):
                p *= t
            row[j] = p


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _row_aux(X, i, shift, code):
    """Per-row quantity the element-wise map needs (see ``_finish_row``)."""
    d = X.shape[1]
    if code == RBF:
        return _centred_sq(X, i, shift)
    if code == COSINE:
        s = 0.0
        for k in range(d):
            v = np.float64(X[i, k])
            s += v * v
        if 1e-280 < s < 1e280:
            return np.sqrt(s)
        # rescaled by max |x_k| where sum x_k^2 under- or overflows
        top = 0.0
        for k in range(d):
            top = max(top, abs(np.float64(X[i, k])))
        if top == 0.0:
            return 0.0
        s = 0.0
        for k in range(d):
            v = np.float64(X[i, k]) / top
            s += v * v
        return top * np.sqrt(s)
    return 0.0


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _l1_rows(X, s, ZT, gamma, Et):
    """Et[i] = exp(-gamma * ||X[s + i] - z_j||_1) for the rows of one tile."""
    d = X.shape[1]
    m = ZT.shape[1]
    for i in range(Et.shape[0]):
        row = Et[i]
        for j in range(m):
            row[j] = 0.0
        for k in range(d):
            xk = np.float64(X[s + i, k])  # subtract in float64 (also without the JIT)
            zk = ZT[k]
            for j in range(m):
                row[j] += abs(xk - zk[j])
        for j in range(m):
            row[j] = _exp_nonpos(-row[j] * gamma)


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _centre_rows(X, s, shift, buf, xaux):
    """buf[i] = X[s + i] - shift (X's dtype) and xaux[i] = ||X[s + i] - shift||^2 (float64,
    by ``_centred_sq``, as ``_row_aux``, so both paths give the same norms)."""
    d = X.shape[1]
    for i in range(buf.shape[0]):
        for k in range(d):
            buf[i, k] = X[s + i, k] - shift[k]
        xaux[i] = _centred_sq(X, s + i, shift)  # the row is in L1 from the copy


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _centred_sq(X, i, shift):
    """``||X[i] - shift||^2`` in float64, in four interleaved partial sums (fixed order: every
    path gives the same norms; one running sum made each addition wait on the previous)."""
    d = X.shape[1]
    s0 = s1 = s2 = s3 = 0.0
    k = 0
    while k + 4 <= d:
        v0 = X[i, k] - shift[k]
        v1 = X[i, k + 1] - shift[k + 1]
        v2 = X[i, k + 2] - shift[k + 2]
        v3 = X[i, k + 3] - shift[k + 3]
        s0 += v0 * v0
        s1 += v1 * v1
        s2 += v2 * v2
        s3 += v3 * v3
        k += 4
    while k < d:
        v0 = X[i, k] - shift[k]
        s0 += v0 * v0
        k += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True)
def _tile_kernel(X, s, Zs, ZsT, zaux, shift, code, gamma, coef0, degree, Et, xaux):
    """Fill the tile Et = k(X[s : s + len(Et)], Z): cross term by BLAS, then the map.

    ``Zs`` is Z shifted by ``shift`` for RBF (distance-preserving, reduces cancellation) and Z
    itself otherwise; ``zaux`` holds the landmark-side quantity of ``_finish_row``, and
    ``xaux`` (one entry per row of the tile) receives the rows' own (``||x - c||^2`` for
    RBF), which bound max |x| for the caller's overflow guards.
    """
    rows = Et.shape[0]
    d = X.shape[1]
    if code == LAPLACIAN:
        _l1_rows(X, s, ZsT, gamma, Et)
        return
    if code == RBF:
        # the centred copy and its squared norms in one pass over the tile of X
        buf = np.empty((rows, d), dtype=X.dtype)
        _centre_rows(X, s, shift, buf, xaux)
        np.dot(buf, Zs.T, Et)
    else:
        np.dot(X[s : s + rows], Zs.T, Et)
        if code != LINEAR:
            for i in range(rows):
                xaux[i] = _row_aux(X, s + i, shift, code)
    if code != LINEAR:
        for i in range(rows):
            _finish_row(Et[i], xaux[i], zaux, code, gamma, coef0, degree)


@njit(parallel=True, cache=True, nogil=True)
def extrapolate_blas(X, Zs, ZsT, zaux, shift, code, gamma, coef0, degree, out, xaux, tile):
    """E = k(X, Z) into ``out`` (n, m), tile by tile, and the rows' ``xaux`` (n,) (see
    ``_tile_kernel``); BLAS must be single-threaded."""
    n = X.shape[0]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        s = t * tile
        e = min(n, s + tile)
        _tile_kernel(X, s, Zs, ZsT, zaux, shift, code, gamma, coef0, degree, out[s:e], xaux[s:e])


@njit(parallel=True, cache=True, nogil=True)
def project_blas(X, Zs, ZsT, zaux, shift, code, gamma, coef0, degree, P, out, xaux, tile):
    """G = k(X, Z) @ P into ``out`` (n, r) without materialising E beyond one tile per thread.

    Each thread computes a tile of E and projects it while it is in cache; BLAS must be
    single-threaded (the caller arranges it). ``xaux`` (n,) receives the rows' quantities of
    ``_tile_kernel``.
    """
    n = X.shape[0]
    m = Zs.shape[0]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        s = t * tile
        e = min(n, s + tile)
        Et = np.empty((e - s, m), dtype=X.dtype)
        _tile_kernel(X, s, Zs, ZsT, zaux, shift, code, gamma, coef0, degree, Et, xaux[s:e])
        np.dot(Et, P, out[s:e])


@njit(parallel=True, fastmath={"contract"}, cache=True, nogil=True)
def extrapolate_fused(X, ZsT, zaux, shift, code, gamma, coef0, degree, out, tile):
    """E = k(X, Z) computing the cross term in the same pass (small d), into ``out`` (n, m).

    ``ZsT`` is the (d, m) transpose of the (shifted) landmarks, so the inner loops run over
    contiguous landmark columns and vectorize.
    """
    n, d = X.shape
    m = ZsT.shape[1]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        xrow = np.empty(d, dtype=np.float64)
        acc = np.empty(m, dtype=np.float64)
        for i in range(t * tile, min(n, t * tile + tile)):
            if code == RBF:
                for k in range(d):
                    xrow[k] = X[i, k] - shift[k]
            else:
                for k in range(d):
                    xrow[k] = X[i, k]
            for j in range(m):
                acc[j] = 0.0
            k = 0
            # four landmark-coordinate rows per pass: one load/store of acc per 4 FMAs
            while k + 4 <= d:
                x0 = xrow[k]
                x1 = xrow[k + 1]
                x2 = xrow[k + 2]
                x3 = xrow[k + 3]
                z0 = ZsT[k]
                z1 = ZsT[k + 1]
                z2 = ZsT[k + 2]
                z3 = ZsT[k + 3]
                for j in range(m):
                    acc[j] += x0 * z0[j] + x1 * z1[j] + x2 * z2[j] + x3 * z3[j]
                k += 4
            while k < d:
                x0 = xrow[k]
                z0 = ZsT[k]
                for j in range(m):
                    acc[j] += x0 * z0[j]
                k += 1
            _finish_row(acc, _row_aux(X, i, shift, code), zaux, code, gamma, coef0, degree)
            row = out[i]
            for j in range(m):
                row[j] = acc[j]


@njit(parallel=True, cache=True, nogil=True)
def extrapolate_l1(X, ZT, gamma, out, tile):
    """Laplacian kernel E_ij = exp(-gamma * ||x_i - z_j||_1) into ``out`` (n, m)."""
    n = X.shape[0]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        s = t * tile
        e = min(n, s + tile)
        _l1_rows(X, s, ZT, gamma, out[s:e])


@njit(parallel=True, cache=True, nogil=True)
def finish_rows(E, xaux, zaux, code, gamma, coef0, degree, tile):
    """Element-wise map over a block of cross terms computed elsewhere (in place)."""
    n = E.shape[0]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        for i in range(t * tile, min(n, t * tile + tile)):
            _finish_row(E[i], xaux[i], zaux, code, gamma, coef0, degree)


@njit(parallel=True, fastmath={"contract"}, cache=True, nogil=True)
def exp_nonpos_inplace(a, tile):
    """a <- exp(a) for a 2-D array of non-positive values (exposed for tests)."""
    n, m = a.shape
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        for i in range(t * tile, min(n, t * tile + tile)):
            for j in range(m):
                a[i, j] = _exp_nonpos(a[i, j])


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _row_nonfinite(X, i):
    """Sum of ``x * 0`` over row i: NaN exactly when the row holds a NaN or an infinity
    (``reassoc`` only reorders sums of zeros and NaNs, so the loop vectorizes)."""
    z = 0.0
    for k in range(X.shape[1]):
        z += np.float64(X[i, k]) * 0.0
    return z


@njit(fastmath={"nnan", "ninf", "nsz", "reassoc", "contract"}, cache=True, nogil=True)
def _row_abs_max(X, i):
    """max |x| over a row known to be finite (the flags let the max vectorize)."""
    a = 0.0
    for k in range(X.shape[1]):
        a = max(a, abs(np.float64(X[i, k])))
    return a


@njit(parallel=True, cache=True, nogil=True)
def abs_max(X, tile):
    """``max |x|`` over a 2-D array, NaN if it holds a NaN or an infinity; one parallel pass
    over row tiles (each row is read twice while it is in L1)."""
    n = X.shape[0]
    n_tiles = (n + tile - 1) // tile
    top = np.zeros(n_tiles)
    for t in prange(n_tiles):
        a = 0.0
        for i in range(t * tile, min(n, t * tile + tile)):
            if not np.isfinite(_row_nonfinite(X, i)):
                a = np.nan
                break
            a = max(a, _row_abs_max(X, i))
        top[t] = a
    out = 0.0
    for t in range(n_tiles):
        if not top[t] <= out:  # NaN, or larger
            out = top[t]
            if np.isnan(out):
                break
    return out
