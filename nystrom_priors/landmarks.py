"""Landmark selection for the Nystrom family.

* ``"uniform"``: rows drawn uniformly without replacement (Williams & Seeger 2001).
* ``"kmeans++"``: k-means++ seeding alone (D^2 sampling; landmarks are data points).
* ``"kmeans"``: clustered Nystrom (Zhang, Tsang & Kwok 2008; Zhang & Kwok 2010): k-means++
  seeding followed by a few Lloyd iterations; landmarks are the centroids. The Nystrom
  approximation error is bounded by the k-means quantisation error, which is why centroids
  beat uniform sampling.
* ``"rpcholesky"``: randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2023), in its
  accelerated block-rejection form (Epperly, Tropp & Webber 2024): pivots sampled in
  proportion to the residual kernel diagonal; landmarks are the pivot rows. It looks at the
  kernel, not only at the geometry, and evaluates ``(m + 1) s`` kernel entries on ``s`` rows.
* an ``(m, d)`` array: user-given landmarks.

k-means runs on a uniform subsample of at most ``sample_size`` rows (default ``10 m``, at least
2000): landmarks need to summarise the density, not to converge on every point, and the cost
stays independent of ``n``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._threads import blas_for_work
from ._validation import (
    check_array,
    check_random_state,
    check_random_state_param,
    check_scalar,
    float_target,
)

__all__ = ["LANDMARK_METHODS", "kmeans", "select_landmarks"]

LANDMARK_METHODS = ("uniform", "kmeans", "kmeans++", "rpcholesky")
# rpcholesky keeps an s x m float64 factor: rows of the default sample (about 512 MiB)
_RPC_ELEMENTS = 1 << 26
# Lloyd stops for landmarks once an iteration gains < 1e-4 of the inertia: on the
# MNIST-sized benchmark the inertia is flat to 6e-5 after the second assignment while labels
# keep flipping for several more (each a 10 m x m x d GEMM)
_LANDMARK_TOL = 1e-4
# most centres folded into the seeding's distance bounds per pass over the sample
_SEED_BATCH = 64
_SEED_BATCH_SHARE = 2  # ... and at most this fraction (1/2) of the centres so far
# rejections in a row after which the seeding folds its new centres in (the bounds are stale)
_SEED_REJECTIONS = 32
# sparse X: k-means works on a densified sample of at most this many entries (128 MiB of
# float64; with d = 50,000 features, 335 rows)
_SPARSE_SAMPLE_ELEMENTS = 1 << 24


def _check_n_landmarks(n_landmarks: Any, n_samples: int) -> int:
    m = int(check_scalar(n_landmarks, "n_landmarks", kind="int", lo=1))
    if m > n_samples:
        warnings.warn(
            f"n_landmarks={m} is larger than the number of samples ({n_samples}); using "
            f"n_landmarks={n_samples}.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
        m = n_samples
    return m


def kmeans(
    X: np.ndarray,
    n_clusters: int,
    *,
    rng: np.random.Generator,
    max_iter: int = 10,
    init: np.ndarray | None = None,
    tol: float = 0.0,
    return_converged: bool = False,
) -> tuple:
    """Lloyd's k-means with k-means++ seeding on a validated float array.

    Returns ``(centers (k, d) float64, labels (n,) int64, n_iter)``, and with
    ``return_converged`` whether it stopped by its own criterion rather than at
    ``max_iter``. Stops when no label
    changes, when an assignment lowers the inertia by less than ``tol`` (relative; 0: only
    at a fixed point) or after ``max_iter`` iterations. The assignment GEMM runs through BLAS
    in chunks, in the precision of ``X`` (float32 input: sgemm); centres are accumulated in
    float64. Seeding and centre updates are jitted.
    """
    from ._width import _binary_exponent

    Xw = X.astype(float_target(X.dtype), copy=False)
    # k-means is invariant to scaling X: a power of two (exact) brings max |x| into [0.5, 1),
    # so that squared distances cannot overflow (from |x| ~ 1e154 in float64, ~1e19 in
    # float32: the seeding then drew from infinite weights and looped, Lloyd compared infs)
    e = _binary_exponent(float(np.abs(Xw).max(initial=0.0)))
    if e:
        Xw = np.ldexp(Xw, -e).astype(Xw.dtype, copy=False)
    n = Xw.shape[0]
    if init is None:
        idx = _kmeanspp(Xw, n_clusters, rng)
        centers = Xw[idx].astype(np.float64)
    else:
        centers = np.ldexp(np.array(init, dtype=np.float64), -e)
    labels = np.full(n, -1, dtype=np.int64)
    mindist = np.empty(n, dtype=np.float64)
    chunk = max(1, (1 << 22) // max(1, n_clusters))
    xn = np.einsum("ij,ij->i", Xw, Xw)  # ||x||^2, added back for the inertia
    with blas_for_work(float(min(n, chunk)) * n_clusters * Xw.shape[1]):
        centers, labels, n_iter, done = _lloyd(
            Xw, centers, labels, mindist, xn, chunk, max_iter, tol
        )
    if return_converged:
        return np.ldexp(centers, e), labels, n_iter, done
    return np.ldexp(centers, e), labels, n_iter


def _lloyd(Xw, centers, labels, mindist, xn, chunk, max_iter, tol):
    """Lloyd's iterations of ``kmeans`` from ``centers``: ``(centers, labels, n_iter,
    converged)``, converged when an assignment changed no label or gained less than ``tol``."""
    n = Xw.shape[0]
    n_iter = 0
    inertia = np.inf
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (returned after the loop)
        Cw = centers.astype(Xw.dtype, copy=False)
        cn = np.einsum("ij,ij->i", Cw, Cw)
        new = np.empty(n, dtype=np.int64)
        for s in range(0, n, chunk):
            Xb = Xw[s : s + chunk]
            D = cn - 2.0 * (Xb @ Cw.T)  # ||x||^2 omitted: constant per row
            new[s : s + chunk] = np.argmin(D, axis=1)
            closest = D[np.arange(D.shape[0]), new[s : s + chunk]] + xn[s : s + chunk]
            mindist[s : s + chunk] = np.maximum(closest, 0)
        changed = bool((new != labels).any())
        labels = new
        previous, inertia = inertia, float(mindist.sum())
        if not changed or previous - inertia <= tol * inertia:
            return centers, labels, n_iter, True
        _update_centers(Xw, labels, centers, mindist)
    return centers, labels, n_iter, False


def _update_centers(
    X: np.ndarray, labels: np.ndarray, centers: np.ndarray, mindist: np.ndarray
) -> None:
    """Lloyd's centre update (means; an empty cluster takes the farthest unused point), in
    chunks of rows of about ``WORK`` multiply-adds: Ctrl-C is handled between them."""
    from ._chunks import rows_per_call
    from ._numba import _kmeans as kk

    sums = np.zeros(centers.shape)
    counts = np.zeros(centers.shape[0], dtype=np.int64)
    step = rows_per_call(X.shape[1])
    for s in range(0, X.shape[0], step):
        kk.accumulate_centers(X[s : s + step], labels[s : s + step], sums, counts)
    order = np.zeros(1, dtype=np.int64)
    if (counts == 0).any():
        order = np.argsort(-mindist, kind="mergesort")
    kk.finish_centers(X, sums, counts, centers, order)


# below this many multiply-adds a seeding refresh runs on the calling thread
_FOLD_SERIAL_WORK = 1 << 21


def _fold_centres(X: np.ndarray, C: np.ndarray, closest: np.ndarray) -> None:
    """``_kmeans.fold_centres`` in chunks of rows of about ``WORK`` multiply-adds (rows are
    independent: the same result), so that Ctrl-C is handled between them."""
    from ._chunks import rows_per_call
    from ._numba import _kmeans as kk

    work = C.shape[0] * X.shape[1]
    if X.shape[0] * work < _FOLD_SERIAL_WORK:
        # a parallel launch costs more than this much work, and waking Numba's threads on
        # a few cores takes them from the BLAS threads of the calls around it
        kk.fold_rows(X, C, closest, 0, X.shape[0])
        return
    step = rows_per_call(work)
    for s in range(0, X.shape[0], step):
        kk.fold_centres(X[s : s + step], C, closest[s : s + step])


def _kmeanspp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: ``k`` row indices of ``X`` drawn by D^2 sampling.

    Exact k-means++ (Arthur & Vassilvitskii 2007) in law, but not one pass over ``X`` per
    centre: new centres are drawn by rejection from stale distance bounds
    (``_kmeans.sample_centres``) and folded into the bounds in batches of up to
    ``_SEED_BATCH`` by one compute-bound pass (``_kmeans.fold_centres``). Batches grow with the
    number of centres (half of them), since each new centre then removes a smaller share of the
    potential and rejections stay rare; after ``_SEED_REJECTIONS`` rejections in a row the new
    centres are folded in early. The squared distances must not overflow (callers scale X to max
    |x| < 1): infinite weights could never be accepted.
    """
    from ._numba import _kmeans as kk

    n = X.shape[0]
    out = np.empty(k, dtype=np.int64)
    out[0] = int(rng.integers(n))
    closest = np.full(n, np.inf)
    folded, c = 0, 1
    while c < k:
        _fold_centres(X, X[out[folded:c]], closest)
        folded = c
        cum = np.cumsum(closest)
        if not cum[-1] > 0.0:
            # every row coincides with a centre: the next unused rows, deterministically
            chosen = np.zeros(n, dtype=bool)
            chosen[out[:c]] = True
            for slot in range(c, k):
                start = int(rng.random() * n)
                unused = np.flatnonzero(~np.roll(chosen, -start))
                out[slot] = (start + unused[0]) % n
                chosen[out[slot]] = True
            break
        stop = min(k, c + min(_SEED_BATCH, max(1, c // _SEED_BATCH_SHARE)))
        while c < stop:
            # enough uniforms for every pick plus a full run of rejections: a call that picks
            # nothing has run out of rejections, never of uniforms, so the loop always advances
            uniforms = rng.random(2 * (stop - c + _SEED_REJECTIONS))
            c, used = kk.sample_centres(
                X, closest, cum, out, folded, c, stop, uniforms, _SEED_REJECTIONS
            )
            if c < stop and used < uniforms.size:
                break  # rejections in a row: the bounds are stale, fold the new centres in
    return out


def _rpcholesky_landmarks(
    src: Any,
    m: int,
    rng: np.random.Generator,
    sample_size: Any,
    kernel: Any,
    width: Any,
    gamma: Any,
) -> np.ndarray:
    """The pivot rows of RPCholesky on a uniform sample of ``src`` (all rows when small)."""
    from ._rows import RowSource
    from ._rpcholesky import rpcholesky
    from .kernels import make_kernel

    n = src.n
    if sample_size is None:
        s = min(n, max(10 * m, 2000, _RPC_ELEMENTS // m))
    else:
        s = min(int(sample_size), n)  # checked above
    if s < n:
        idx = np.sort(rng.choice(n, size=s, replace=False))
        sub = RowSource(src.X[idx] if getattr(src, "sparse", False) else src.take(idx))
    else:
        idx, sub = np.arange(n), src
    spec = make_kernel(kernel, width=width, gamma=gamma, X=sub)
    _, pivots = rpcholesky(sub, m, spec, rng)
    return src.take(idx[np.sort(pivots)])


def select_landmarks(
    X: Any,
    n_landmarks: int,
    *,
    method: str | np.ndarray = "kmeans",
    random_state: Any = None,
    max_iter: int = 10,
    sample_size: int | None = None,
    kernel: Any = "rbf",
    width: float | None = None,
    gamma: float | None = None,
) -> np.ndarray:
    """Choose ``m`` landmark points for a Nystrom approximation.

    Parameters
    ----------
    X : array-like of shape (n, d), np.memmap, dask array or scipy.sparse matrix
        Training samples; only the sampled rows are read (see ``sample_size``). Sparse input
        (as CSR) is never densified as a whole; the landmarks are dense, ``m x d`` (with
        50,000 features and 300 landmarks, 120 MB in float64). k-means and k-means++ on
        sparse input work on a densified sample of at most ``2^24`` entries (at least
        ``m`` rows), which may be smaller than ``sample_size``.
    n_landmarks : int
        Number of landmarks ``m``; capped at ``n`` with a warning. Not used (nor checked)
        when ``method`` is an array: its rows are the landmarks.
    method : {"kmeans", "kmeans++", "uniform", "rpcholesky"} or ndarray of shape (m, d)
        Selection rule (see the module docstring), or the landmarks themselves.
    random_state : None, int, Generator or RandomState
        Seed; the same seed gives the same landmarks, whatever the number of threads.
    max_iter : int, default=10
        Lloyd iterations for ``"kmeans"``; fewer when labels stop changing or an iteration
        lowers the inertia by less than 1e-4 (relative).
    sample_size : int, optional
        At least ``n_landmarks`` (checked for every method, also those that ignore it).
        k-means (and k-means++) run on a uniform subsample of this many rows; default
        ``max(10 m, 2000)`` capped at ``n``. ``"rpcholesky"`` runs on this many rows, default
        ``max(10 m, 2000, 2^26 / m)`` capped at ``n`` (its factor is ``s x m`` float64).
    kernel : str or KernelSpec, default="rbf"
        The kernel ``"rpcholesky"`` factors (the other methods ignore it and ``width`` /
        ``gamma``); the learners pass their own.
    width, gamma : float, optional
        Its width (default: the mean squared distance of the rows it runs on) or inverse
        width, as in :func:`~nystrom_priors.extrapolate`.

    Returns
    -------
    Z : ndarray of shape (m, d), dtype of X
        A new array (user-given landmarks are copied).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import select_landmarks
    >>> X = np.random.default_rng(0).normal(size=(500, 4))
    >>> select_landmarks(X, 20, method="kmeans", random_state=0).shape
    (20, 4)
    """
    from ._rows import RowSource

    src = X if isinstance(X, RowSource) else RowSource(X)
    n, d = src.shape
    # checked whatever the method, landmarks given as an array too: a value a method ignores
    # is still a mistake to report
    max_iter = int(check_scalar(max_iter, "max_iter", kind="int", lo=0))
    check_random_state_param(random_state)
    if sample_size is not None:
        sample_size = int(check_scalar(sample_size, "sample_size", kind="int", lo=1))
    from .kernels import KernelSpec, _canonical_name, make_kernel

    if width is not None or gamma is not None:  # the kernel with them, as rpcholesky builds it
        make_kernel(kernel, width=width, gamma=gamma)
    elif not isinstance(kernel, KernelSpec):
        _canonical_name(kernel)
    if isinstance(method, np.ndarray) or (
        not isinstance(method, str) and hasattr(method, "__len__")
    ):
        Z = check_array(method, name="landmarks")
        if Z.shape[1] != d:
            raise ValueError(
                f"User-given landmarks have {Z.shape[1]} features, but X has {d} features."
            )
        from ._rowblocks import check_fits

        check_fits(Z, src.dtype, "landmarks")  # float32 X: they would become infinite
        # always a copy: a fitted model must not change when the caller mutates their array
        return np.array(Z, dtype=src.dtype, order="C", copy=True)
    if not isinstance(method, str) or method not in LANDMARK_METHODS:
        raise ValueError(
            f"method must be one of {list(LANDMARK_METHODS)} or an (m, d) array of landmarks, "
            f"got {method!r}."
        )
    m = _check_n_landmarks(n_landmarks, n)
    rng = check_random_state(random_state)
    if sample_size is not None and sample_size < m:
        raise ValueError(f"sample_size ({sample_size}) must be at least n_landmarks ({m}).")
    if method == "uniform":
        idx = np.sort(rng.choice(n, size=m, replace=False))
        return src.take(idx)
    if method == "rpcholesky":
        return _rpcholesky_landmarks(src, m, rng, sample_size, kernel, width, gamma)
    if sample_size is None:
        s = min(n, max(10 * m, 2000))
    else:
        s = min(int(sample_size), n)  # checked above
    if getattr(src, "sparse", False) and s > max(m, _SPARSE_SAMPLE_ELEMENTS // max(1, d)):
        # the sample is densified (s x d): cap it, but keep at least one row per centre
        s = max(m, _SPARSE_SAMPLE_ELEMENTS // max(1, d))
    if s == n and not getattr(src, "sparse", False):
        sample = src.in_memory()
    else:
        sample = src.take(np.sort(rng.choice(n, size=s, replace=False)) if s < n else np.arange(n))
    # Clustering runs in float32 on the centred sample: seeding folds its centres in by passes
    # over the sample (float32 vectorises over twice the lanes) and Lloyd's assignment is an
    # sgemm.
    # Centring keeps ||c||^2 - 2 x.c free of cancellation when the data sit far from the
    # origin. Landmarks only need to summarise the density, which float32 does to the
    # inertia's sixth digit.
    # Powers of two scale (exactly) the sample to max |entry| < 1 before the mean, which
    # overflowed near float64's max, and the centred sample again before the float32 cast,
    # which holds only |x| < 3.4e38 (squared distances: 1.8e19) and flushes spreads below
    # ~1e-38 to 0: data of any float64 scale get the same landmarks up to that scale.
    from ._width import _binary_exponent

    e1 = _binary_exponent(float(np.abs(sample).max(initial=0.0)))
    scaled = np.ldexp(sample, -e1)
    mean = scaled.mean(axis=0, dtype=np.float64)
    work = scaled - mean
    e2 = _binary_exponent(float(np.abs(work).max(initial=0.0)))
    work = np.ldexp(work, -e2).astype(np.float32)
    if method == "kmeans++":
        return sample[np.sort(_kmeanspp(work, m, rng))].copy()
    centers, _, _ = kmeans(work, m, rng=rng, max_iter=max_iter, tol=_LANDMARK_TOL)
    return np.ascontiguousarray(np.ldexp(np.ldexp(centers, e2) + mean, e1), dtype=src.dtype)
