"""metric-learn's pairs format: point pairs of shape (k, 2, d) with labels +-1.

metric-learn's weakly supervised learners (ITML, ...) are fitted as ``fit(pairs, y)`` with
``pairs[t] = (a_t, b_t)`` two points and ``y[t] = +1`` (similar) or ``-1`` (dissimilar). The
learners of this package are fitted on samples with pairs of *indices*; this module maps one
onto the other:

* the training rows are the distinct points of the pairs, deduplicated **exactly** (equal
  bytes after conversion to the float dtype), in order of first appearance
  (``pairs[0, 0], pairs[0, 1], pairs[1, 0], ...``);
* pair ``t`` becomes the index pair ``[i_t, j_t, y_t]`` into those rows: +1 = must-link /
  similar (``d(a, b) <= bound``), -1 = cannot-link / dissimilar, as in metric-learn.

Two nearly equal points stay two rows; a pair of two equal points is refused (its distance is
0 under every kernel, so it constrains nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_array, dense_array
from .side_info import _contradicting_rows

__all__ = ["is_point_pairs", "point_pairs", "pair_sides"]


def is_point_pairs(X: Any) -> bool:
    """Whether ``X`` is 3-D (metric-learn's point pairs) rather than a 2-D sample matrix."""
    ndim = getattr(X, "ndim", None)
    if ndim is None and isinstance(X, (list, tuple)):
        try:
            ndim = np.ndim(X)
        except ValueError:  # ragged: no array at all; the caller's own check names it
            return False
    return ndim == 3


def refuse_point_pairs_transform(X: Any, owner: str) -> None:
    """``fit_transform`` returns one row per sample of X; point pairs have no such rows."""
    if is_point_pairs(X):
        raise ValueError(
            f"{owner}.fit_transform returns one row per sample of a 2-D X, got a 3-D array of "
            f"shape {np.shape(X)} (metric-learn's point pairs). Call fit(pairs, y), then "
            "transform(points) on the samples whose features you want."
        )


def pair_sides(
    pairs: Any, name: str = "pairs", what: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Validated sides ``(A, B)``, each (k, d), of point pairs of shape (k, 2, d); ``what``
    replaces the default statement of what ``name`` must be in the messages."""
    if what is None:
        what = (
            f"{name} must be point pairs of shape (n_pairs, 2, n_features) (metric-learn's format)"
        )
    arr = dense_array(pairs, name, f"{what}, a dense array")
    if arr.ndim != 3 or arr.shape[1] != 2:
        raise ValueError(f"{what}, got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty; give at least one pair.")
    k, _, d = arr.shape
    flat = check_array(arr.reshape(2 * k, d), name=name)
    return flat[0::2], flat[1::2]


def point_pairs(pairs: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Training rows and index pairs from metric-learn's point pairs.

    Parameters
    ----------
    pairs : array-like of shape (k, 2, d)
        ``pairs[t, 0]`` and ``pairs[t, 1]`` are the two points of pair ``t``.
    y : array-like of shape (k,)
        +1 for a similar pair, -1 for a dissimilar one (metric-learn's labels).

    Returns
    -------
    X : ndarray of shape (u, d)
        The distinct points, exactly deduplicated, in order of first appearance; float32 if
        the pairs are float32, float64 otherwise.
    index_pairs : ndarray of shape (k, 3), int64
        Rows ``[i, j, y]`` into ``X``, in the order of ``pairs``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[[0., 0.], [1., 0.]], [[1., 0.], [5., 5.]]])
    >>> X, ip = point_pairs(P, [1, -1])
    >>> X.tolist(), ip.tolist()
    ([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]], [[0, 1, 1], [1, 2, -1]])
    """
    # a 3-D X given to fit: it may as well be a sample matrix with an extra axis
    A, B = pair_sides(
        pairs,
        "X",
        "X must be a 2-D array of samples (n_samples, n_features), or a 3-D array of "
        "metric-learn's point pairs (n_pairs, 2, n_features)",
    )
    k, d = A.shape
    read = (
        f"X is a 3-D array of shape {(k, 2, d)}, read as metric-learn's point pairs "
        "(n_pairs, 2, n_features)"
    )
    if y is None:
        raise ValueError(f"{read}; they need y: +1 for a similar pair, -1 for a dissimilar one.")
    yy = np.asarray(y)
    if yy.shape != (k,):
        raise ValueError(f"{read}; y must have shape ({k},), one +-1 per pair, got {yy.shape}.")
    if yy.dtype.kind not in "biuf" or not np.isin(yy, (-1, 1)).all():
        bad = np.flatnonzero(~np.isin(yy, (-1, 1)))[0] if yy.dtype.kind in "biuf" else 0
        raise ValueError(
            f"{read}; y must then hold +1 (similar) or -1 (dissimilar) per pair, got "
            f"y[{bad}] = {yy[bad].item()!r}."
        )
    points = np.empty((2 * k, d), dtype=A.dtype)
    points[0::2], points[1::2] = A, B
    # exact deduplication: rows as opaque byte strings (-0.0 and 0.0 are made equal first)
    points += 0.0
    keys = np.ascontiguousarray(points).view(np.dtype((np.void, points.dtype.itemsize * d)))
    _, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique rows in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse.reshape(-1)].reshape(k, 2)
    same = np.flatnonzero(idx[:, 0] == idx[:, 1])
    if same.size:
        raise ValueError(
            f"X[{same[0]}] is a point pair that joins a point with itself (both sides are "
            "equal); its distance is 0 under every kernel, so it cannot be a constraint."
        )
    signs = yy.astype(np.int64)
    clash = _contradicting_rows(np.column_stack([np.sort(idx, axis=1), signs]))
    if clash is not None:  # named by the user's rows: idx indexes the library's distinct points
        a, b = clash
        raise ValueError(
            f"X[{a}] and X[{b}] are point pairs of the same two points with opposite labels "
            f"(y[{a}] = {signs[a]:+d}, y[{b}] = {signs[b]:+d}): a pair cannot be both similar "
            "and dissimilar."
        )
    X = points[first[order]]
    return X, np.column_stack([idx, signs])


def resolve_side_info(X: Any, y: Any, kwargs: dict, owner: str) -> tuple[Any, Any, dict]:
    """``fit``'s arguments with metric-learn's ``fit(pairs, y)`` turned into index pairs."""
    if is_point_pairs(kwargs.get("pairs")):
        raise ValueError(
            f"{owner}.fit got point pairs as pairs=; pass them as the first argument, "
            "fit(pairs, y) with y = +-1 per pair, as in metric-learn (pairs= holds index "
            "pairs [i, j, +-1] into X)."
        )
    if not is_point_pairs(X):
        return X, y, kwargs
    if kwargs.get("pairs") is not None:
        raise ValueError(
            f"{owner}.fit got point pairs of shape (n_pairs, 2, n_features) as X and also "
            "pairs=; give one or the other."
        )
    rows, index_pairs = point_pairs(X, y)
    return rows, None, dict(kwargs, pairs=index_pairs)
