"""Jitted k-means++ seeding and Lloyd centre updates for landmark selection.

Private: arrays and scalars only; random numbers are drawn in Python and passed in, so results
depend only on the seed and never on the number of threads (reductions that decide anything
are serial).
"""

import numpy as np
from numba import njit, prange


@njit(parallel=True, fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _update_closest(X, c, closest, first):
    """closest[i] = min(closest[i], ||X[i] - X[c]||^2); ``first`` overwrites instead of min."""
    n, d = X.shape
    for i in prange(n):
        # accumulate in X's precision: float32 input then vectorises over twice the lanes
        s = X[c, 0] - X[c, 0]
        for k in range(d):
            v = X[i, k] - X[c, k]
            s += v * v
        if first or s < closest[i]:
            closest[i] = s


@njit(cache=True, nogil=True)
def kmeanspp_indices(X, first, uniforms, out):
    """k-means++ seeding (Arthur & Vassilvitskii 2007): D^2 sampling of ``len(out)`` rows.

    Parameters
    ----------
    X : (n, d) float array
    first : int
        Index of the first centre (drawn uniformly by the caller).
    uniforms : (m - 1,) float64 in [0, 1)
        One uniform draw per further centre.
    out : (m,) int64
        Receives the chosen row indices (distinct whenever X has at least m distinct rows).
    """
    n = X.shape[0]
    m = out.shape[0]
    closest = np.empty(n, dtype=np.float64)
    chosen = np.zeros(n, dtype=np.bool_)
    out[0] = first
    chosen[first] = True
    _update_closest(X, first, closest, True)
    for c in range(1, m):
        pot = 0.0
        for i in range(n):
            pot += closest[i]
        pick = -1
        if pot > 0.0:
            target = uniforms[c - 1] * pot
            acc = 0.0
            for i in range(n):
                acc += closest[i]
                if acc > target and closest[i] > 0.0:
                    pick = i
                    break
            if pick < 0:  # round-off at the very end of the cumulative sum
                for i in range(n - 1, -1, -1):
                    if closest[i] > 0.0:
                        pick = i
                        break
        if pick < 0:
            # every point coincides with a centre: take the next unused row, deterministically
            start = int(uniforms[c - 1] * n)
            for t in range(n):
                i = (start + t) % n
                if not chosen[i]:
                    pick = i
                    break
        out[c] = pick
        chosen[pick] = True
        _update_closest(X, pick, closest, False)


@njit(cache=True, nogil=True)
def update_centers(X, labels, centers, mindist):
    """Lloyd's centre update: centers[c] = mean of X[labels == c].

    Empty clusters are re-seeded with the point farthest from its centre (largest
    ``mindist``) that is not yet used for another empty cluster, as scikit-learn does.
    Returns the number of empty clusters that were re-seeded.
    """
    n, d = X.shape
    m = centers.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    sums = np.zeros((m, d), dtype=np.float64)
    for i in range(n):
        c = labels[i]
        counts[c] += 1
        for k in range(d):
            sums[c, k] += X[i, k]
    n_empty = 0
    order = np.argsort(-mindist, kind="mergesort")
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
