"""Jitted exact k-nearest-neighbour search of BCDNPKL's graph and transform.

Private: arrays and scalars only. Squared distances are ``|y|^2 + |x|^2 - 2 y.x`` with the
squared norms summed in one fixed order (``_row_sq``) wherever they are computed, so that a
query equal to a training sample is at distance 0 up to its cross product's round-off; ties
go to the lower index.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _select_row(cross, yn, xn, skip, k, out_idx, out_d2):
    """The k smallest squared distances ``yn + xn[j] - 2 cross[j]`` (clipped at 0) of one
    query row, nearest first, and their columns j (column ``skip`` excluded); ties to the
    smaller j, so the result does not depend on how rows are split among threads."""
    bd = np.full(k, np.inf)
    bi = np.full(k, -1, dtype=np.int64)
    for j in range(cross.size):
        if j == skip:
            continue
        d2 = yn + xn[j] - 2.0 * cross[j]
        if d2 < 0.0:
            d2 = 0.0
        if d2 < bd[k - 1] or (d2 == bd[k - 1] and j < bi[k - 1]):
            # insertion into the sorted buffer
            p = k - 1
            while p > 0 and (bd[p - 1] > d2 or (bd[p - 1] == d2 and bi[p - 1] > j)):
                bd[p] = bd[p - 1]
                bi[p] = bi[p - 1]
                p -= 1
            bd[p] = d2
            bi[p] = j
    for t in range(k):
        out_idx[t] = bi[t]
        out_d2[t] = bd[t]


@njit(cache=True, nogil=True)
def _row_sq(A, i):
    """``||a_i||^2`` in float64, summed in a fixed order (eight interleaved partial sums,
    then pairwise): the same row gives the same bits wherever it is computed, so a query
    equal to a training sample is at distance 0 up to its cross product's round-off alone.
    The partial sums are scalars, not an array: this runs once per query row."""
    d = A.shape[1]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    c = 0
    while c + 8 <= d:
        s0 += np.float64(A[i, c]) * np.float64(A[i, c])
        s1 += np.float64(A[i, c + 1]) * np.float64(A[i, c + 1])
        s2 += np.float64(A[i, c + 2]) * np.float64(A[i, c + 2])
        s3 += np.float64(A[i, c + 3]) * np.float64(A[i, c + 3])
        s4 += np.float64(A[i, c + 4]) * np.float64(A[i, c + 4])
        s5 += np.float64(A[i, c + 5]) * np.float64(A[i, c + 5])
        s6 += np.float64(A[i, c + 6]) * np.float64(A[i, c + 6])
        s7 += np.float64(A[i, c + 7]) * np.float64(A[i, c + 7])
        c += 8
    # the tail goes to the first r partial sums, as in the blocks; written apart from them
    # because a bounds test inside the block loop makes every row slower
    r = d - c
    if r > 0:
        s0 += np.float64(A[i, c]) * np.float64(A[i, c])
    if r > 1:
        s1 += np.float64(A[i, c + 1]) * np.float64(A[i, c + 1])
    if r > 2:
        s2 += np.float64(A[i, c + 2]) * np.float64(A[i, c + 2])
    if r > 3:
        s3 += np.float64(A[i, c + 3]) * np.float64(A[i, c + 3])
    if r > 4:
        s4 += np.float64(A[i, c + 4]) * np.float64(A[i, c + 4])
    if r > 5:
        s5 += np.float64(A[i, c + 5]) * np.float64(A[i, c + 5])
    if r > 6:
        s6 += np.float64(A[i, c + 6]) * np.float64(A[i, c + 6])
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(parallel=True, cache=True, nogil=True)
def sq_norms(A):
    """Squared row norms of a dense 2-D array in float64 (``_row_sq``)."""
    out = np.empty(A.shape[0])
    for i in prange(A.shape[0]):
        out[i] = _row_sq(A, np.int64(i))  # prange's index is unsigned; knn_tiles' int64
    return out


@njit(parallel=True, cache=True, nogil=True)
def knn_select(cross, xn_block, xn_all, offset, exclude_self, k, out_idx, out_d2):
    """k nearest columns per row from ``cross = X_block @ X_all.T`` (row-block driver).

    Squared distances ``xn_block[i] + xn_all[j] - 2 cross[i, j]`` (``_select_row``). With
    ``exclude_self`` the column ``offset + i`` is skipped for row i.
    """
    nb = cross.shape[0]
    for i in prange(nb):
        skip = offset + i if exclude_self else -1
        _select_row(cross[i], xn_block[i], xn_all, skip, k, out_idx[i], out_d2[i])


@njit(parallel=True, cache=True, nogil=True)
def knn_tiles(Y, X, xn, exclude_self, k, out_idx, out_d2, out_yn, tile):
    """k nearest rows of X for every row of Y (row-tile driver; BLAS must be single-threaded,
    the caller arranges it). Each thread takes a tile of query rows: their squared norms (float64,
    into ``out_yn``), their cross products with X by BLAS, and the selection (``_select_row``)
    while the products are in cache. One pool of threads throughout: a multi-threaded GEMM
    between parallel selections leaves BLAS workers spinning on the cores the selection needs.
    With ``exclude_self`` (Y is X) row i skips column i. ``tile`` must not depend on the
    number of threads (BLAS may sum tiles of other heights in another order)."""
    n, d = Y.shape
    n_tiles = (n + tile - 1) // tile
    for t in prange(n_tiles):
        s = t * tile
        e = min(n, s + tile)
        cross = np.empty((e - s, X.shape[0]), dtype=Y.dtype)
        np.dot(Y[s:e], X.T, cross)
        for i in range(s, e):
            q = _row_sq(Y, i)
            out_yn[i] = q
            skip = i if exclude_self else -1
            _select_row(cross[i - s], q, xn, skip, k, out_idx[i], out_d2[i])
