"""Jitted kernels for ``E = k(X, Z)`` with X in CSR form and dense landmarks Z.

Private module: arrays and scalars only, the kernel chosen by its integer code (see
``nystrom_priors.kernels``), no validation. X is given by its CSR arrays ``indptr`` (n + 1),
``indices`` and ``data`` (nnz), canonical (no duplicate column in a row); Z by its (d, m)
transpose ``ZT``, so that a stored entry ``x_k`` adds ``x_k * ZT[k]`` to a row's m cross terms
with a contiguous, vectorizable inner loop: a row costs ``nnz(x) * m`` multiply-adds and X is
never densified.

Per row, in float64:

* ``acc_j = <x, z_j>`` and ``||x||^2 = sum_p data_p^2`` from the stored entries;
* RBF: ``exp(-gamma max(0, ||x||^2 + ||z_j||^2 - 2 acc_j))`` (``zaux = ||z_j||^2``);
* COSINE: ``acc_j / ||x||`` with unit landmarks (``zaux`` 1, or 0 for a zero landmark);
* POLY: ``(gamma acc_j + coef0) ** degree``; LINEAR: ``acc_j``;
* LAPLACIAN: ``||x - z_j||_1 = ||z_j||_1 + sum_{k in x} (|x_k - z_jk| - |z_jk|)``
  (``zaux = ||z_j||_1``), so the zero entries of x cost nothing either.

Rows are independent and each is computed by the same sequence of operations whatever the
thread or tile, so results do not depend on the number of threads or on ``tile``.
"""

import numpy as np
from numba import njit, prange

from ._extrapolate import COSINE, LAPLACIAN, _exp_nonpos, _finish_row


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _cross_row(indptr, indices, data, i, ZT, acc):
    """acc = <x_i, z_j> for every j; returns ||x_i||^2 (float64)."""
    m = acc.shape[0]
    for j in range(m):
        acc[j] = 0.0
    sq = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        v = np.float64(data[p])
        sq += v * v
        zk = ZT[indices[p]]
        for j in range(m):
            acc[j] += v * zk[j]
    return sq


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _l1_row(indptr, indices, data, i, ZT, zaux, acc):
    """acc_j = ||x_i - z_j||_1 from the stored entries of x_i and ``zaux = ||z_j||_1``."""
    m = acc.shape[0]
    for j in range(m):
        acc[j] = zaux[j]
    for p in range(indptr[i], indptr[i + 1]):
        v = np.float64(data[p])
        zk = ZT[indices[p]]
        for j in range(m):
            acc[j] += abs(v - zk[j]) - abs(zk[j])
    for j in range(m):
        if acc[j] < 0.0:
            acc[j] = 0.0


@njit(fastmath={"contract"}, cache=True, nogil=True)
def _finish(acc, sq, zaux, code, gamma, coef0, degree, row):
    """Write the kernel values of one row into ``row`` (X's dtype): the dense path's
    element-wise map (``_finish_row``) on the float64 cross terms ``acc``."""
    m = acc.shape[0]
    if code == LAPLACIAN:
        for j in range(m):
            acc[j] = _exp_nonpos(-acc[j] * gamma)
    else:
        _finish_row(acc, np.sqrt(sq) if code == COSINE else sq, zaux, code, gamma, coef0, degree)
    for j in range(m):
        row[j] = acc[j]


@njit(parallel=True, cache=True, nogil=True)
def extrapolate_csr(indptr, indices, data, ZT, zaux, code, gamma, coef0, degree, out, tile):
    """E = k(X, Z) into ``out`` (n, m) for CSR X, tile by tile (``prange`` over tiles)."""
    n = indptr.shape[0] - 1
    m = ZT.shape[1]
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        acc = np.empty(m, dtype=np.float64)
        for i in range(t * tile, min(n, t * tile + tile)):
            sq = 0.0
            if code == LAPLACIAN:
                _l1_row(indptr, indices, data, i, ZT, zaux, acc)
            else:
                sq = _cross_row(indptr, indices, data, i, ZT, acc)
            _finish(acc, sq, zaux, code, gamma, coef0, degree, out[i])


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _cross_row_zs(indptr, indices, data, i, zptr, zidx, zval, l1, acc):
    """Cross terms of row i against landmarks stored sparse by feature (``Z^T`` in CSR:
    ``zptr`` (d + 1), ``zidx`` landmark indices, ``zval`` values): only the features stored in
    both x and some z cost anything. ``l1``: accumulate ``|x_k - z_jk| - |z_jk| - |x_k|``
    (the Laplacian's correction, the rest being ``||z_j||_1 + ||x||_1``) instead of
    ``x_k z_jk``. Returns ``(||x||^2, ||x||_1)``."""
    m = acc.shape[0]
    for j in range(m):
        acc[j] = 0.0
    sq = 0.0
    ab = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        v = np.float64(data[p])
        sq += v * v
        ab += abs(v)
        k = indices[p]
        if l1:
            for q in range(zptr[k], zptr[k + 1]):
                z = zval[q]
                acc[zidx[q]] += abs(v - z) - abs(z) - abs(v)
        else:
            for q in range(zptr[k], zptr[k + 1]):
                acc[zidx[q]] += v * zval[q]
    return sq, ab


@njit(parallel=True, cache=True, nogil=True)
def extrapolate_csr_zs(
    indptr, indices, data, zptr, zidx, zval, zaux, code, gamma, coef0, degree, out, tile
):
    """``extrapolate_csr`` for landmarks that are mostly zeros (rows of a sparse X), given
    as ``Z^T`` in CSR: time ``O(sum over stored x_k of nnz(Z[:, k]))`` per row."""
    n = indptr.shape[0] - 1
    m = zaux.shape[0]
    n_tiles = (n + tile - 1) // tile
    l1 = code == LAPLACIAN
    for t in prange(n_tiles):
        acc = np.empty(m, dtype=np.float64)
        for i in range(t * tile, min(n, t * tile + tile)):
            sq, ab = _cross_row_zs(indptr, indices, data, i, zptr, zidx, zval, l1, acc)
            if l1:
                for j in range(m):
                    acc[j] += zaux[j] + ab
                    if acc[j] < 0.0:
                        acc[j] = 0.0
            _finish(acc, sq, zaux, code, gamma, coef0, degree, out[i])


@njit(parallel=True, cache=True, nogil=True)
def row_sq_norms(indptr, data, out, tile):
    """out_i = ||x_i||^2 in float64 from the stored entries (for the default width)."""
    n = indptr.shape[0] - 1
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        for i in range(t * tile, min(n, t * tile + tile)):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                v = np.float64(data[p])
                s += v * v
            out[i] = s
