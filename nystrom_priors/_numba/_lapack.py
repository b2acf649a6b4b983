"""A few symmetric eigenpairs, and inverses, through scipy's LAPACK called directly.

Private: arrays and scalars only. Numba's ``np.linalg.eigh`` computes every eigenpair
(``dsyevd``); projecting a matrix with k negative eigenvalues onto the PSD cone needs only
those k. ``dsytrf`` (Bunch-Kaufman ``L D L^T``) gives their number by Sylvester's law of
inertia at the cost of a Cholesky factorisation, and ``lowest_eigenpairs`` the k lowest pairs:
the tridiagonal form (``dsytrd``, about 4/3 p^3 operations), its k lowest pairs by the MRRR
algorithm (``dstemr``, O(p k)), and the back-transformation of the k vectors (``dormtr``,
about 2 p^2 k). MRRR rather than ``dsyevr``, which for a subset of the spectrum falls back to
bisection and inverse iteration with its costlier per-vector work; the crossover with
``dsyevd`` is then near k = p / 6 (``docs/design/lam_selection.md``, thirteenth round).

``spd_inverse`` inverts a positive definite matrix from its Cholesky factor (``dpotrf``,
``dpotri``): about p^3 operations, a quarter of a general inverse of the factor followed by
the product of two triangles.

The routines are reached through their addresses in ``scipy.linalg.cython_lapack``
(``addresses()``), passed to the jitted code as an argument rather than baked into it, so
that Numba's on-disk cache stays valid across processes.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: index of each routine in ``addresses()``. Append, never renumber: Numba's on-disk cache of
#: a module that calls these kernels (``_pairs_cv``) is not invalidated by a change here, and
#: its compiled code keeps the indices it was built with. Slot 0 (``dsyevr``) is no longer
#: called.
DSYTRF, DPOTRF, DPOTRI, DSYTRD, DSTEMR, DORMTR = 1, 2, 3, 4, 5, 6
_NAMES = ("dsyevr", "dsytrf", "dpotrf", "dpotri", "dsytrd", "dstemr", "dormtr")


def addresses() -> np.ndarray:
    """``int64`` addresses of the routines ``_NAMES`` in scipy's ``cython_lapack``; none
    (callers then use ``np.linalg``) when Numba's JIT is disabled, where the intrinsic that
    calls them cannot run."""
    from numba import config
    from numba.extending import get_cython_function_address

    if config.DISABLE_JIT:
        return np.zeros(0, dtype=np.int64)

    return np.array(
        [get_cython_function_address("scipy.linalg.cython_lapack", n) for n in _NAMES],
        dtype=np.int64,
    )


@intrinsic
def _fortran_call(typingctx, address, arrays):
    """Call the ``void f(T1 *, ..., Tk *)`` at ``address`` with the data pointers of the
    arrays of the tuple ``arrays`` (Fortran convention: every argument by reference)."""
    if not isinstance(address, types.Integer) or not isinstance(arrays, types.BaseTuple):
        return None
    if not all(isinstance(t, types.Array) for t in arrays.types):
        return None

    def codegen(context, builder, signature, args):
        tuple_type = signature.args[1]
        values = cgutils.unpack_tuple(builder, args[1], len(tuple_type.types))
        i8p = ir.IntType(8).as_pointer()
        pointers = [
            builder.bitcast(context.make_array(t)(context, builder, v).data, i8p)
            for t, v in zip(tuple_type.types, values)
        ]
        fnty = ir.FunctionType(ir.VoidType(), [i8p] * len(pointers))
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), pointers)
        return context.get_dummy_value()

    return types.void(address, arrays), codegen


@njit(cache=True, nogil=True)
def negative_count(V, address):
    """Number of negative eigenvalues of the symmetric V (p, p), by Sylvester's law of
    inertia on its Bunch-Kaufman factorisation (``dsytrf``); -1 if LAPACK reports an error."""
    p = V.shape[0]
    A = V.copy()  # symmetric: its C layout is its Fortran layout
    uplo = np.array([ord("L")], dtype=np.uint8)
    n = np.array([p], dtype=np.int32)
    ipiv = np.empty(max(1, p), dtype=np.int32)
    work = np.empty(1)
    lwork = np.array([-1], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    _fortran_call(address, (uplo, n, A, n, ipiv, work, lwork, info))  # workspace query
    work = _workspace(work, lwork)
    _fortran_call(address, (uplo, n, A, n, ipiv, work, lwork, info))
    if info[0] < 0:
        return -1
    # D is block diagonal: 1 x 1 blocks where ipiv > 0, 2 x 2 where ipiv[k] = ipiv[k+1] < 0;
    # Fortran's lower triangle is C's upper one, so D(k+1, k) is A[k, k + 1]
    count = 0
    k = 0
    while k < p:
        if ipiv[k] > 0 or k == p - 1:
            if A[k, k] < 0.0:
                count += 1
            k += 1
        else:
            a, b, c = A[k, k], A[k, k + 1], A[k + 1, k + 1]
            if a * c - b * b < 0.0:
                count += 1
            elif a + c < 0.0:
                count += 2
            k += 2
    return count


@njit(cache=True, nogil=True)
def _workspace(work, lwork):
    """Size ``lwork`` to LAPACK's answer to a workspace query (``work[0]``); a new array."""
    lwork[0] = max(1, int(work[0]))
    return np.empty(lwork[0])


@njit(cache=True, nogil=True)
def lowest_eigenpairs(V, k, lapack):
    """The k lowest eigenvalues (ascending) of the symmetric V (p, p) and their eigenvectors
    as the columns of a (p, k) array: ``V = Q T Q^T`` (``dsytrd``), T's k lowest pairs
    (``dstemr``, range 'I'), ``Q`` applied to them (``dormtr``); no pair (shapes (0,) and
    (p, 0)) if LAPACK reports an error or finds fewer than k."""
    p = V.shape[0]
    none = (np.empty(0), np.empty((p, 0)))
    if k <= 0 or k > p:
        return none
    A = V.copy()  # symmetric: its C layout is its Fortran layout
    uplo = np.array([ord("L")], dtype=np.uint8)
    n = np.array([p], dtype=np.int32)
    d = np.empty(p)
    e = np.empty(p)  # dstemr uses e[p - 1] as workspace
    tau = np.empty(max(1, p - 1))
    work = np.empty(1)
    lwork = np.array([-1], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    args = (uplo, n, A, n, d, e, tau)
    _fortran_call(lapack[DSYTRD], args + (work, lwork, info))  # workspace query
    work = _workspace(work, lwork)
    _fortran_call(lapack[DSYTRD], args + (work, lwork, info))
    if info[0] != 0:
        return none
    jobz = np.array([ord("V")], dtype=np.uint8)
    rng = np.array([ord("I")], dtype=np.uint8)
    bounds = np.zeros(2)  # vl, vu: unused with range 'I'
    il = np.array([1], dtype=np.int32)
    iu = np.array([k], dtype=np.int32)
    m = np.zeros(1, dtype=np.int32)
    w = np.empty(p)
    Z = np.empty((k, p))  # C (k, p) is Fortran (p, k), ldz = p
    nzc = np.array([k], dtype=np.int32)
    isuppz = np.empty(2 * k, dtype=np.int32)
    tryrac = np.ones(1, dtype=np.int32)  # as dsyevr: relative accuracy where T warrants it
    work = np.empty(1)
    lwork[0] = -1
    iwork = np.empty(1, dtype=np.int32)
    liwork = np.array([-1], dtype=np.int32)
    args = (jobz, rng, n, d, e, bounds[:1], bounds[1:], il, iu, m, w, Z, n, nzc, isuppz, tryrac)
    _fortran_call(lapack[DSTEMR], args + (work, lwork, iwork, liwork, info))  # query
    work = _workspace(work, lwork)
    liwork[0] = max(1, iwork[0])
    iwork = np.empty(liwork[0], dtype=np.int32)
    _fortran_call(lapack[DSTEMR], args + (work, lwork, iwork, liwork, info))
    if info[0] != 0 or m[0] != k:
        return none
    side = np.array([ord("L")], dtype=np.uint8)
    trans = np.array([ord("N")], dtype=np.uint8)
    work = np.empty(1)
    lwork[0] = -1
    args = (side, uplo, trans, n, nzc, A, n, tau, Z, n)
    _fortran_call(lapack[DORMTR], args + (work, lwork, info))  # workspace query
    work = _workspace(work, lwork)
    _fortran_call(lapack[DORMTR], args + (work, lwork, info))
    if info[0] != 0:
        return none
    return w[:k].copy(), np.ascontiguousarray(Z.T)


@njit(cache=True, nogil=True)
def spd_inverse(B, lapack):
    """``(B^-1, True)`` for the symmetric positive definite B (p, p), from its Cholesky
    factor (``dpotrf``, ``dpotri`` through ``lapack``); ``(B, False)`` where ``lapack`` is
    empty, B is empty or not finite, not numerically positive definite, or LAPACK reports an
    error (the caller decides)."""
    p = B.shape[0]
    if lapack.size <= DPOTRI or p == 0 or not np.isfinite(B).all():
        return B, False
    A = B.copy()
    uplo = np.array([ord("L")], dtype=np.uint8)
    n = np.array([p], dtype=np.int32)
    info = np.zeros(1, dtype=np.int32)
    _fortran_call(lapack[DPOTRF], (uplo, n, A, n, info))
    if info[0] != 0:
        return B, False
    _fortran_call(lapack[DPOTRI], (uplo, n, A, n, info))
    if info[0] != 0:
        return B, False
    # the inverse is in Fortran's lower triangle, C's upper one: mirror it
    for a in range(p):
        for b in range(a):
            A[a, b] = A[b, a]
    return A, True
