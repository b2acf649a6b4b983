"""Jitted k-means++ seeding and Lloyd centre updates for landmark selection.

Private: arrays and scalars only; random numbers are drawn in Python and passed in, so results
depend only on the seed and never on the number of threads (reductions that decide anything
are serial).
"""

import numpy as np
from numba import njit, prange

# rows per task of the parallel driver
_FOLD_BLOCK = 256


@njit(parallel=True, cache=True, nogil=True)
def fold_centres(X, C, closest):
    """:func:`fold_rows` over all rows, in row blocks on Numba's threads."""
    n = X.shape[0]
    for b in prange((n + _FOLD_BLOCK - 1) // _FOLD_BLOCK):
        fold_rows(X, C, closest, b * _FOLD_BLOCK, min(n, (b + 1) * _FOLD_BLOCK))


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def fold_rows(X, C, closest, lo, hi):
    """closest[i] = min(closest[i], min_j ||X[i] - C[j]||^2) for lo <= i < hi, by direct
    differences.

    Eight centres share each load of ``X[i, k]`` (a register block; the last block repeats its
    final centre), so one pass over ``X`` folds in a whole batch: the seeding's refresh is
    compute-bound instead of one memory-bound pass per centre. ``C`` is a contiguous copy of
    the centres (indexing them inside ``X`` instead was 1.5x slower). Sums run in ``X``'s
    precision (float32 input vectorises over twice the lanes); a row equal to a centre gets
    exactly 0.
    """
    d = X.shape[1]
    r = C.shape[0]
    for i in range(lo, hi):
        best = closest[i]
        for j in range(0, r, 8):
            j1 = min(j + 1, r - 1)
            j2 = min(j + 2, r - 1)
            j3 = min(j + 3, r - 1)
            j4 = min(j + 4, r - 1)
            j5 = min(j + 5, r - 1)
            j6 = min(j + 6, r - 1)
            j7 = min(j + 7, r - 1)
            z = C[j, 0] - C[j, 0]
            s0 = z
            s1 = z
            s2 = z
            s3 = z
            s4 = z
            s5 = z
            s6 = z
            s7 = z
            for k in range(d):
                x = X[i, k]
                v = x - C[j, k]
                s0 += v * v
                v = x - C[j1, k]
                s1 += v * v
                v = x - C[j2, k]
                s2 += v * v
                v = x - C[j3, k]
                s3 += v * v
                v = x - C[j4, k]
                s4 += v * v
                v = x - C[j5, k]
                s5 += v * v
                v = x - C[j6, k]
                s6 += v * v
                v = x - C[j7, k]
                s7 += v * v
            best = min(best, s0, s1, s2, s3, s4, s5, s6, s7)
        closest[i] = best


@njit(fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _distance_to_recent(X, i, out, start, stop, bound):
    """min(bound, min_{start <= j < stop} ||X[i] - X[out[j]]||^2), summed as in fold_centres."""
    d = X.shape[1]
    best = bound
    for j in range(start, stop):
        c = out[j]
        s = X[c, 0] - X[c, 0]
        for k in range(d):
            v = X[i, k] - X[c, k]
            s += v * v
        best = min(best, s)
    return best


@njit(cache=True, nogil=True)
def sample_centres(X, closest, cum, out, start, c, stop, uniforms, max_rejections):
    """D^2 sampling of ``out[c]``, ``out[c + 1]``, ... by rejection from stale bounds.

    ``closest`` holds the squared distance of every row to ``out[:start]`` (folded in by
    :func:`fold_centres`) and ``cum`` its cumulative sum; the centres accepted since,
    ``out[start:c]``, are not folded in, so ``closest`` is an upper bound of the true squared
    distance D^2. A candidate ``i`` drawn with probability ``closest[i] / cum[-1]`` is accepted
    with probability ``D^2(i) / closest[i]`` (``D^2(i)`` by direct differences to the new
    centres): the accepted row has probability exactly ``D^2(i) / sum D^2`` -- k-means++'s
    law, without a pass over ``X`` per centre. A row equal to a centre has ``D^2 = 0`` and is
    never accepted. Two uniforms per candidate.

    Returns ``(c, used)``: the next free slot of ``out`` (``stop`` when done) and the number of
    uniforms used. It also returns early when the uniforms run out or after ``max_rejections``
    rejections in a row (then the caller folds the new centres in: bounds exact again).
    """
    n = closest.shape[0]
    total = cum[n - 1]
    used = 0
    rejected = 0
    while c < stop and used + 2 <= uniforms.shape[0] and rejected < max_rejections:
        target = uniforms[used] * total
        i = np.searchsorted(cum, target, side="right")
        if i >= n:  # round-off at the very end of the cumulative sum
            i = n - 1
            while i > 0 and closest[i] <= 0.0:
                i -= 1
        bound = closest[i]
        true = _distance_to_recent(X, i, out, start, c, bound)
        if uniforms[used + 1] * bound < true:
            out[c] = i
            c += 1
            rejected = 0
        else:
            rejected += 1
        used += 2
    return c, used


@njit(cache=True, nogil=True)
def accumulate_centers(X, labels, sums, counts):
    """sums[c] += the rows of X labelled c, counts[c] += their number (float64 sums, rows in
    order: a caller may feed X in consecutive chunks without changing the result)."""
    n, d = X.shape
    for i in range(n):
        c = labels[i]
        counts[c] += 1
        for k in range(d):
            sums[c, k] += X[i, k]


@njit(cache=True, nogil=True)
def finish_centers(X, sums, counts, centers, order):
    """Lloyd's centre update from :func:`accumulate_centers`: centers[c] = sums[c] / counts[c].

    Empty clusters are re-seeded with the points of ``order`` in turn (the caller passes the
    rows farthest from their centres first, as scikit-learn does; only read when a cluster
    is empty). Returns the number of empty clusters that were re-seeded.
    """
    d = X.shape[1]
    m = centers.shape[0]
    n_empty = 0
    used = 0
    for c in range(m):
        if counts[c] > 0:
            for k in range(d):
                centers[c, k] = sums[c, k] / counts[c]
        else:
            i = order[used]
            used += 1
            for k in range(d):
                centers[c, k] = X[i, k]
            n_empty += 1
    return n_empty
