"""Bandwidth heuristics of the distance kernels: exact mean pairwise distances in O(nd).

A leaf module: ``kernels`` (default widths) and ``_rows`` (streamed widths) both use it, and
neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_array, is_sparse

__all__ = ["mean_squared_distance", "mean_l1_distance"]


def mean_squared_distance(X: Any) -> float:
    """Mean pairwise squared Euclidean distance, exactly, in O(nd).

    ``mean_{i != j} ||x_i - x_j||^2 = 2n/(n-1) * mean_i ||x_i - mean(X)||^2``;
    this is the Gaussian width heuristic of Zhang et al. (2012, Sec. 5). Accumulated in float64
    with the corrected two-pass (centred) sum, blockwise so memory stays O(d).

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features), n_samples >= 2
        Sparse input (any format; converted to CSR) is never densified: with the column
        means ``mu`` and ``z_k`` implicit zeros in column k,
        ``sum_i ||x_i - mu||^2 = sum_p (v_p - mu_k)^2 + sum_k z_k mu_k^2`` over the stored
        entries ``v_p`` (column ``k``), O(nnz + d).

    Returns
    -------
    float
        The mean rounded to float64: ``inf`` when it exceeds float64's range (X of order
        1e154 and beyond) and ``0.0`` when it falls below the smallest subnormal, as any
        float64 result would. The learners' default width refuses both with a message.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import mean_squared_distance
    >>> mean_squared_distance(np.array([[0.0, 0.0], [3.0, 4.0]]))
    25.0
    """
    X = check_array(X, min_samples=2, accept_sparse=True)
    if is_sparse(X):
        return _mean_squared_distance_csr(X)
    n = X.shape[0]
    e, _, total, blocks = _dense_moments(X)
    if total <= _roundoff(n, X.shape[1]) and all((X[b] == X[0]).all() for b in blocks):
        return 0.0  # identical rows: the rounding of their mean is no distance
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * max(total, 0.0) / (n - 1), 2 * e))


def _dense_moments(X: np.ndarray) -> tuple[int, np.ndarray, float, list[slice]]:
    """``(e, mean, total, blocks)`` of dense X (n >= 1 rows) in units of ``2^e ~ max |x|``
    (exact): the column means / 2^e and ``sum_i ||x_i - mean||^2 / 4^e``, a block of rows
    (``blocks``) at a time, so memory stays O(block d). In those units the mean and the squares
    cannot overflow on the way, and a result beyond float64 comes out as inf (after the
    caller's ``ldexp``) without an overflow warning."""
    n = X.shape[0]
    step = max(1, (1 << 20) // max(1, X.shape[1]))
    blocks = [slice(s, s + step) for s in range(0, n, step)]
    e = _binary_exponent(max(float(np.abs(X[b]).max()) for b in blocks))
    mean = sum(np.ldexp(X[b], -e).sum(axis=0, dtype=np.float64) for b in blocks) / n
    total = 0.0
    drift = np.zeros(X.shape[1])  # sum of the centred entries: 0 but for the mean's rounding
    for b in blocks:
        D = np.ldexp(X[b].astype(np.float64), -e) - mean
        total += float(np.einsum("ij,ij->", D, D))
        drift += D.sum(axis=0)
    # corrected two-pass sum: sum (x - m)^2 = sum (x - m')^2 - (sum (x - m'))^2 / n for the
    # rounded mean m'; without it a common offset of 1e17 added ~20% (its rounding, squared)
    total -= float(drift @ drift) / n
    return e, mean, total, blocks


def _mean_squared_distance_csr(X: Any) -> float:
    """``mean_squared_distance`` of canonical CSR ``X`` from its stored entries (see there)."""
    n, d = X.shape
    data = X.data
    e = _binary_exponent(float(np.abs(data).max(initial=0.0)))
    v = np.ldexp(data.astype(np.float64), -e)
    mean = np.bincount(X.indices, weights=v, minlength=d) / n
    implicit = n - np.bincount(X.indices, minlength=d)  # the zeros of each column
    # two sums of squares, no difference of large terms: with an offset column the expanded
    # form n ||mu||^2 + sum((v - mu)^2 - mu^2) cancelled to nothing (or to a false spread)
    centred = v - mean[X.indices]
    total = float((centred**2).sum()) + float(implicit @ (mean * mean))
    # the corrected two-pass sum (see mean_squared_distance), the zeros' part included
    drift = np.bincount(X.indices, weights=centred, minlength=d) - implicit * mean
    total -= float(drift @ drift) / n
    if total <= _roundoff(n, d) and _csr_rows_identical(X):
        return 0.0  # identical rows: the rounding of their mean is no distance
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * max(total, 0.0) / (n - 1), 2 * e))


def _roundoff(n: int, d: int) -> float:
    """A generous bound on the squared-distance sum that rounding alone leaves over n rows of
    d features in units of max |x| (each centred entry is off by at most ~n eps)."""
    return n * d * (4.0 * n * np.finfo(np.float64).eps) ** 2


def _l1_roundoff(n: int, d: int) -> float:
    """A generous bound on what rounding alone leaves of the weighted sums of
    ``mean_l1_distance`` (d sums of n terms up to n in units of max |x|)."""
    return 4.0 * d * float(n) ** 3 * np.finfo(np.float64).eps


def _csr_rows_identical(X: Any) -> bool:
    """Whether every row of canonical CSR ``X`` stores the same columns and values."""
    counts = np.diff(X.indptr)
    if counts.size == 0 or (counts != counts[0]).any():
        return False
    k = int(counts[0])
    if k == 0:
        return True
    rows = X.indices.reshape(-1, k), X.data.reshape(-1, k)
    return all(bool((A == A[:1]).all()) for A in rows)


def _binary_exponent(amax: float) -> int:
    """e with amax = f 2^e, f in [0.5, 1) (0 for amax = 0): scaling by 2^-e is exact and
    brings amax into [0.5, 1)."""
    return int(np.frexp(amax)[1]) if amax > 0.0 else 0


def mean_l1_distance(X: Any) -> float:
    """Mean pairwise L1 distance, exactly, in O(d n log n).

    Per feature, the sum of pairwise absolute differences of sorted values ``x_(0..n-1)`` is
    ``sum_k x_(k) (2k - n + 1)``; the default width of the Laplacian kernel. Computed in units
    of 2^e ~ max |x| (exact), so the weighted sums (up to n^2 max |x|) cannot overflow while
    the mean itself is a float; returns ``inf`` when it is not (``make_kernel`` says so).
    Sparse input is not densified: per column only the stored values are sorted, the zeros
    sit between the negative and the positive ones and contribute nothing.
    """
    X = check_array(X, min_samples=2, accept_sparse=True)
    if is_sparse(X):
        return _mean_l1_distance_csr(X)
    n = X.shape[0]
    weights = 2.0 * np.arange(n, dtype=np.float64) - (n - 1)
    e = _binary_exponent(max(float(X.max()), -float(X.min())))  # no n x d |X| copy
    total = 0.0
    for k in range(X.shape[1]):
        total += float(np.sort(np.ldexp(X[:, k].astype(np.float64), -e)) @ weights)
    if abs(total) <= _l1_roundoff(n, X.shape[1]) and bool((X == X[0]).all()):
        return 0.0  # identical rows: the rounding of the weighted sums is no distance
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * total / (n * (n - 1)), e))


def _mean_l1_distance_csr(X: Any) -> float:
    """``mean_l1_distance`` of canonical CSR ``X``: per column, the negative stored values
    take the ranks ``0 ..`` and the positive ones the ranks ``.. n - 1`` of the sorted column."""
    n = X.shape[0]
    C = X.tocsc()
    e = _binary_exponent(float(np.abs(C.data).max(initial=0.0)))
    total = 0.0
    for k in range(C.shape[1]):
        v = np.sort(np.ldexp(C.data[C.indptr[k] : C.indptr[k + 1]].astype(np.float64), -e))
        neg = int(np.searchsorted(v, 0.0, side="left"))
        pos = v.size - int(np.searchsorted(v, 0.0, side="right"))
        ranks = np.concatenate([np.arange(neg), np.arange(n - pos, n)]).astype(np.float64)
        vals = np.concatenate([v[:neg], v[v.size - pos :]])
        total += float(vals @ (2.0 * ranks - (n - 1)))
    if abs(total) <= _l1_roundoff(n, C.shape[1]) and _csr_rows_identical(X.tocsr()):
        return 0.0  # identical rows: the rounding of the weighted sums is no distance
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * total / (n * (n - 1)), e))
