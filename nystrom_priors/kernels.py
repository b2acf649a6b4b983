"""Kernel functions and the extrapolation matrix ``E = k(X, Z)``.

Kernels (``kernel=``):

============  ==========================================  ===========================
name          k(x, z)                                     parameters
============  ==========================================  ===========================
``"rbf"``     ``exp(-||x - z||^2 / b)``                   ``width`` b or ``gamma`` = 1/b
``"laplacian"`` ``exp(-||x - z||_1 / b)``                 ``width`` b or ``gamma`` = 1/b
``"poly"``    ``(gamma <x, z> + coef0) ** degree``        ``gamma`` (1/d), coef0, degree
``"linear"``  ``<x, z>``                                  none
``"cosine"``  ``<x, z> / (||x|| ||z||)`` (0 for x = 0)    none
============  ==========================================  ===========================

``"gaussian"`` and ``"polynomial"`` are accepted as aliases. The Gaussian width follows Zhang et
al. (2012): ``b`` defaults to the mean pairwise squared distance of the data, computed exactly in
O(nd) by :func:`mean_squared_distance`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ._validation import check_array, check_no_overlap, check_out, check_scalar

__all__ = [
    "KernelSpec",
    "make_kernel",
    "extrapolate",
    "iter_extrapolate",
    "mean_squared_distance",
    "mean_l1_distance",
    "KERNEL_NAMES",
]

KERNEL_CODES = {"linear": 0, "rbf": 1, "poly": 2, "cosine": 3, "laplacian": 4}
_ALIASES = {"gaussian": "rbf", "polynomial": "poly"}
KERNEL_NAMES = tuple(KERNEL_CODES) + tuple(_ALIASES)

# Without threadpoolctl (no per-thread BLAS), below this many features the cross term is
# computed inside the fused Numba pass rather than by a separate multi-threaded GEMM
# (measured in scripts/bench_extrapolation.py: fused 2.6x vs two-phase 3.5x of a bare GEMM at
# d = 16, 2.6x vs 2.2x at d = 32). With threadpoolctl the BLAS-per-tile path wins at every d.
FUSED_MAX_FEATURES = 24
# Target size of one tile of E processed by one thread: small enough to stay in L2 between
# the GEMM and the element-wise pass.
_TILE_BYTES = 1 << 20
# Rows per block yielded by iter_extrapolate when block_rows is None (~64 MiB of float64 E).
_STREAM_ELEMENTS = 1 << 23
# Tests set this to "fused", "blas", "twophase" or "gemm" to exercise every path.
_FORCE_PATH: str | None = None


@dataclass(frozen=True)
class KernelSpec:
    """A resolved kernel: name, integer code for the jitted kernels, and parameters.

    ``gamma`` is the inverse width ``1/b`` for ``"rbf"`` and ``"laplacian"`` and the inner
    product scale for ``"poly"``; it is unused (0) otherwise.
    """

    name: str
    gamma: float = 0.0
    degree: int = 3
    coef0: float = 1.0

    @property
    def code(self) -> int:
        return KERNEL_CODES[self.name]

    @property
    def width(self) -> float | None:
        """The paper's width ``b = 1/gamma`` for distance kernels, else None."""
        if self.name in ("rbf", "laplacian"):
            return 1.0 / self.gamma
        return None

    def __call__(self, X: Any, Z: Any | None = None, **kwargs: Any) -> np.ndarray:
        """Evaluate ``k(X, Z)`` (``Z = X`` if omitted)."""
        return extrapolate(X, X if Z is None else Z, kernel=self, **kwargs)


def _canonical_name(kernel: Any) -> str:
    if not isinstance(kernel, str):
        raise TypeError(
            f"kernel must be a string naming a kernel or a KernelSpec, got "
            f"{type(kernel).__name__}. Valid names: {sorted(KERNEL_NAMES)}."
        )
    name = _ALIASES.get(kernel.lower(), kernel.lower())
    if name not in KERNEL_CODES:
        raise ValueError(f"Unknown kernel {kernel!r}. Valid kernels: {sorted(KERNEL_NAMES)}.")
    return name


def make_kernel(
    kernel: str | KernelSpec = "rbf",
    *,
    width: float | None = None,
    gamma: float | None = None,
    degree: int = 3,
    coef0: float = 1.0,
    X: np.ndarray | None = None,
) -> KernelSpec:
    """Resolve a kernel name and parameters into a :class:`KernelSpec`.

    Parameters
    ----------
    kernel : str or KernelSpec
        Kernel name (see the module docstring) or an already resolved spec (returned as is).
    width : float, optional
        ``b`` of the distance kernels. Mutually exclusive with ``gamma``.
    gamma : float, optional
        ``1/b`` for the distance kernels; inner-product scale for ``"poly"`` (default
        ``1/n_features``).
    degree : int
        Degree of the polynomial kernel (>= 1).
    coef0 : float
        Offset of the polynomial kernel.
    X : ndarray of shape (n, d), optional
        Data used to set the default width (distance kernels: mean pairwise squared
        distance for ``"rbf"``, mean pairwise L1 distance for ``"laplacian"``) and the default
        polynomial ``gamma`` (``1/d``).

    Returns
    -------
    KernelSpec
    """
    if isinstance(kernel, KernelSpec):
        return kernel
    name = _canonical_name(kernel)
    if name in ("rbf", "laplacian"):
        if width is not None and gamma is not None:
            raise ValueError(
                f"Pass either width (b) or gamma (1/b) for the {name!r} kernel, not both; "
                f"got width={width!r} and gamma={gamma!r}."
            )
        if width is not None:
            b = check_scalar(width, "width", lo=0.0, lo_closed=False)
            g = 1.0 / b
        elif gamma is not None:
            g = check_scalar(gamma, "gamma", lo=0.0, lo_closed=False)
        else:
            if X is None:
                raise ValueError(f"The {name!r} kernel needs width or gamma.")
            from ._rows import RowSource

            if isinstance(X, RowSource):
                if name == "rbf":
                    b = X.mean_squared_distance()
                elif X.lazy:
                    raise ValueError(
                        "The default width of the 'laplacian' kernel (mean L1 distance) needs "
                        "the data in memory; pass width explicitly for dask input."
                    )
                else:
                    b = mean_l1_distance(X.X)
            else:
                b = mean_squared_distance(X) if name == "rbf" else mean_l1_distance(X)
            what = "squared distance" if name == "rbf" else "L1 distance"
            # below 1 / float64 max, gamma = 1 / b would overflow (data at ~1e-155 and less)
            if not b > 1.0 / np.finfo(np.float64).max or not np.isfinite(b):
                scale, spread = _scale_and_spread(X)
                at = f"at max |x| = {scale:.3g} " if np.isfinite(scale) else ""
                fix = "Rescale X or pass width explicitly."
                if b == 0.0 and spread == 0.0:
                    cause, fix = f"all {X.shape[0]} samples are identical", "Pass width explicitly."
                elif b == 0.0:
                    cause = f"{at}the distances underflow" if at else (
                        "the samples are identical or their distances underflow")
                elif 0.0 < b < np.inf:
                    cause = f"{at}the distances are so small that 1 / width overflows"
                else:
                    cause = f"{at}the distances overflow"
                raise ValueError(
                    f"Cannot set the default width of the {name!r} kernel: {cause} (mean "
                    f"pairwise {what} {b!r} in float64). {fix}"
                )
            g = 1.0 / b
        if not np.isfinite(g) or g <= 0.0:
            raise ValueError(
                f"The {name!r} kernel's gamma = 1 / width must be positive and finite in "
                f"float64, got gamma={g!r}."
            )
        return KernelSpec(name, gamma=float(g))
    if width is not None:
        raise ValueError(
            f"width applies to the 'rbf' and 'laplacian' kernels only, got width={width!r} "
            f"with kernel={name!r}."
        )
    if name == "poly":
        if gamma is None:
            if X is None:
                raise ValueError("The 'poly' kernel needs gamma when no data are given.")
            g = 1.0 / X.shape[1]
        else:
            g = check_scalar(gamma, "gamma", lo=0.0, lo_closed=False)
        deg = check_scalar(degree, "degree", kind="int", lo=1, hi=64)
        c0 = check_scalar(coef0, "coef0")
        return KernelSpec("poly", gamma=float(g), degree=int(deg), coef0=float(c0))
    if gamma is not None:
        raise ValueError(f"gamma does not apply to the {name!r} kernel, got gamma={gamma!r}.")
    return KernelSpec(name)


def _scale_and_spread(X: Any) -> tuple[float, float]:
    """(max |x|, largest per-feature range) of in-memory data, NaN for lazy input; for the
    width errors only."""
    from ._rows import RowSource

    if isinstance(X, RowSource):
        if X.lazy:
            return float("nan"), float("nan")
        X = X.X
    X = np.asarray(X)
    if X.size == 0:
        return 0.0, 0.0
    return float(np.abs(X).max()), float(np.ptp(X, axis=0).max())


def mean_squared_distance(X: Any) -> float:
    """Mean pairwise squared Euclidean distance, exactly, in O(nd).

    ``mean_{i != j} ||x_i - x_j||^2 = 2n/(n-1) * mean_i ||x_i - mean(X)||^2``;
    this is the Gaussian width heuristic of Zhang et al. (2012, Sec. 5). Accumulated in float64
    with a two-pass (centred) sum, blockwise so memory stays O(d).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), n_samples >= 2

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import mean_squared_distance
    >>> mean_squared_distance(np.array([[0.0, 0.0], [3.0, 4.0]]))
    25.0
    """
    X = check_array(X, min_samples=2)
    n = X.shape[0]
    step = max(1, (1 << 20) // max(1, X.shape[1]))
    blocks = [slice(s, s + step) for s in range(0, n, step)]
    # in units of 2^e ~ max |x| (exact): the mean and the squares cannot overflow on the way,
    # and a width beyond float64 comes out as inf, without an overflow warning
    e = _binary_exponent(max(float(np.abs(X[b]).max()) for b in blocks))
    mean = sum(np.ldexp(X[b], -e).sum(axis=0, dtype=np.float64) for b in blocks) / n
    total = 0.0
    for b in blocks:
        D = np.ldexp(X[b].astype(np.float64), -e) - mean
        total += float(np.einsum("ij,ij->", D, D))
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * total / (n - 1), 2 * e))


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
    """
    X = check_array(X, min_samples=2)
    n = X.shape[0]
    weights = 2.0 * np.arange(n, dtype=np.float64) - (n - 1)
    e = _binary_exponent(max(float(X.max()), -float(X.min())))  # no n x d |X| copy
    total = 0.0
    for k in range(X.shape[1]):
        total += float(np.sort(np.ldexp(X[:, k].astype(np.float64), -e)) @ weights)
    with np.errstate(over="ignore"):
        return float(np.ldexp(2.0 * total / (n * (n - 1)), e))


class _SingleThreadedBlas:
    """Limit BLAS to one thread while Numba threads each run their own GEMM.

    Uses threadpoolctl when installed (it ships with scikit-learn); reference counted and
    locked, so concurrent calls from several Python threads restore the user's setting exactly
    once, when the last one leaves.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._limiter = None
        self._controller = None
        self._available: bool | None = None

    def available(self) -> bool:
        if self._available is None:
            if os.environ.get("NYSTROM_PRIORS_NO_THREADPOOLCTL"):
                self._available = False
            else:
                try:
                    import scipy.linalg.cython_blas  # noqa: F401  (load the BLAS numba calls)
                    from threadpoolctl import ThreadpoolController

                    self._controller = ThreadpoolController()
                    self._available = True
                except Exception:
                    self._available = False
        return self._available

    def __enter__(self) -> "_SingleThreadedBlas":
        available = self.available()
        with self._lock:
            if self._depth == 0 and available:
                self._limiter = self._controller.limit(limits=1, user_api="blas")
            self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._limiter is not None:
                self._limiter.restore_original_limits()
                self._limiter = None


_BLAS = _SingleThreadedBlas()


def _tile_rows(m: int, d: int, itemsize: int) -> int:
    """Rows per tile: about 1 MiB of E (4 MiB when d >= 256, where taller GEMMs pay off).

    Depends on shapes and dtype only, never on the thread count: BLAS may sum in a different
    order for tiles of different heights, and results must not change with the number of
    threads.
    """
    target = _TILE_BYTES * (4 if d >= 256 else 1)
    return int(max(8, min(1024, target // max(1, m * itemsize))))


def _row_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean row norms in float64, scaled by each row's max |a| (no under- or overflow)."""
    A = A.astype(np.float64)
    top = np.abs(A).max(axis=1, initial=0.0)
    scaled = np.divide(A, top[:, None], out=np.zeros_like(A), where=top[:, None] > 0)
    with np.errstate(over="ignore"):  # inf past float64's range; the callers report it
        return top * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))


class _Prepared:
    """Landmark-side quantities, computed once per call (or once per stream)."""

    def __init__(self, Z: np.ndarray, spec: KernelSpec, dtype: np.dtype) -> None:
        self.spec = spec
        self.dtype = dtype
        Zf = np.ascontiguousarray(Z, dtype=dtype)
        d = Zf.shape[1]
        self.shift = np.zeros(d, dtype=np.float64)
        self.zaux = np.zeros(Zf.shape[0], dtype=np.float64)
        if spec.name == "rbf":
            # distances are shift invariant; centring on the landmarks' mean cuts cancellation
            self.shift = Zf.mean(axis=0, dtype=np.float64)
            Zs64 = Zf.astype(np.float64) - self.shift
            Zf = np.ascontiguousarray(Zs64, dtype=dtype)
            Zc = Zf.astype(np.float64)
            self.zaux = np.einsum("ij,ij->i", Zc, Zc)
        elif spec.name == "cosine":
            # unit landmarks: <x, z / ||z||> / ||x|| stays in range at any scale of the data
            nrm = _row_norms(Zf)
            if not np.isfinite(nrm).all():
                raise ValueError(
                    f"k(X, Z) overflows {np.dtype(dtype).name}: the 'cosine' kernel's landmark "
                    f"norms are not finite at max |z| = {float(np.abs(Zf).max()):.3g}. Rescale X."
                )
            Zf = np.ascontiguousarray(
                np.divide(Zf.astype(np.float64), nrm[:, None], out=np.zeros(Zf.shape),
                          where=nrm[:, None] > 0),
                dtype=dtype,
            )
            self.zaux = (nrm > 0).astype(np.float64)
        self.Zs = Zf
        self.ZsT = np.ascontiguousarray(Zf.T)
        self.m = Zf.shape[0]
        self.d = d
        self.z_absmax = float(np.abs(Zf).max(initial=0.0))

    def _may_overflow(self, X: np.ndarray) -> bool:
        """Whether k(X, Z) can leave X's float range: a bound from max |x| and max |z| only
        (O(nd), no pass over the n x m output for ordinary data)."""
        spec = self.spec
        if spec.name == "laplacian" or X.size == 0:
            return False  # exp(-distance) is in [0, 1] even when the distance overflows
        a = max(float(X.max()), -float(X.min())) + float(np.abs(self.shift).max(initial=0.0))
        top = np.log(float(np.finfo(X.dtype).max)) - np.log(2.0)
        with np.errstate(divide="ignore"):  # log(0) = -inf: an all-zero side cannot overflow
            # |<x, z>| <= d a az; squared norms / distances <= d (a + az)^2 (rbf is centred)
            log_cross = np.log(self.d) + np.log(a) + np.log(self.z_absmax)
            log_sq = np.log(self.d) + 2.0 * np.log(a + self.z_absmax)
        if spec.name == "poly":  # the cross term itself, in X's dtype, or the power
            base = np.log(spec.gamma) + log_cross
            log_t = np.logaddexp(base, np.log(abs(spec.coef0) + 1e-300))
            return spec.degree * max(log_t, 0.0) >= top or log_cross >= top
        return max(log_cross, log_sq) >= top

    def _scaled(self, X: np.ndarray) -> "tuple[np.ndarray, _Prepared]":
        """``(X / 2^e, landmark side / 2^e)`` when X's or Z's scale would overflow the squared
        norms or cross terms (X's dtype; float64 for the Laplacian's L1 sums) of a distance
        or polynomial kernel: the kernel's scale takes ``2^(2e)`` (``2^e`` for L1 distances),
        so ``gamma d`` is unchanged and a huge width still gives a finite kernel (E -> 1).
        Powers of two are exact: where nothing would have overflowed the result is the same
        bit for bit. Returns ``(X, self)`` when nothing would overflow or when the rescaled
        gamma would not be finite (the kernel itself leaves the range; compute refuses it)."""
        spec = self.spec
        if spec.name not in ("rbf", "laplacian", "poly") or X.size == 0:
            return X, self
        span = max(float(X.max()), -float(X.min())) + float(np.abs(self.shift).max(initial=0.0))
        span += self.z_absmax
        power = 1 if spec.name == "laplacian" else 2
        limit = np.finfo(np.float64 if power == 1 else X.dtype).max
        with np.errstate(divide="ignore"):
            if np.log(self.d) + power * np.log(span) < np.log(limit) - np.log(8.0):
                return X, self
        e = _binary_exponent(span)
        with np.errstate(over="ignore"):
            gamma = float(np.ldexp(spec.gamma, power * e))
        if not np.isfinite(gamma):
            return X, self
        new = object.__new__(_Prepared)
        new.__dict__.update(self.__dict__)
        new.spec = KernelSpec(spec.name, gamma=gamma, degree=spec.degree, coef0=spec.coef0)
        new.Zs = np.ldexp(self.Zs, -e).astype(self.dtype)
        new.ZsT = np.ascontiguousarray(new.Zs.T)
        new.shift = np.ldexp(self.shift, -e)
        new.zaux = np.ldexp(self.zaux, -2 * e) if spec.name == "rbf" else self.zaux
        new.z_absmax = float(np.ldexp(self.z_absmax, -e))
        return np.ldexp(X, -e).astype(X.dtype, copy=False), new

    def _check_finite(self, X: np.ndarray, out: np.ndarray, what: str,
                      shown: "tuple[np.ndarray, _Prepared] | None" = None) -> None:
        """Raise if ``out`` holds a non-finite value; looked at only when ``_may_overflow``.
        ``shown``: the unscaled input and landmark side, for the message."""
        if not self._may_overflow(X):
            return
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf in the sum: NaN
            if np.isfinite(np.sum(out, dtype=np.float64)) or np.isfinite(out).all():
                return
        X, self = shown if shown is not None else (X, self)
        spec = self.spec
        detail = (f" of degree {spec.degree}, gamma {spec.gamma:.3g}, coef0 {spec.coef0:.3g}"
                  if spec.name == "poly" else "")
        hint = ", lower its degree or gamma" if spec.name == "poly" else ""
        if X.dtype != np.float64:
            hint += ", or pass float64 data"
        raise ValueError(
            f"{what} overflows {X.dtype}: the {spec.name!r} kernel{detail} is not finite at "
            f"max |x| = {float(np.abs(X).max()):.3g} and max |z| = {self.z_absmax:.3g}. "
            f"Rescale X{hint}."
        )

    def compute(self, X: np.ndarray, out: np.ndarray, tile: int | None, path: str | None) -> None:
        """Fill ``out`` (n, m) with k(X, Z); X validated, same dtype and width as Z. Raises
        ValueError if a kernel value overflows X's dtype."""
        Xs, prep = self._scaled(X)
        prep._compute(Xs, out, tile, path)
        prep._check_finite(Xs, out, "k(X, Z)", shown=(X, self))

    def _compute(self, X: np.ndarray, out: np.ndarray, tile: int | None, path: str | None) -> None:
        from ._numba import _extrapolate as kx

        spec = self.spec
        n = X.shape[0]
        if n == 0:
            return
        if tile is None:
            tile = _tile_rows(self.m, self.d, X.dtype.itemsize)
        args = (spec.code, float(spec.gamma), float(spec.coef0), int(spec.degree))
        if spec.name == "laplacian":
            kx.extrapolate_l1(X, self.ZsT, float(spec.gamma), out, tile)
            return
        if path is None:
            if _BLAS.available():
                path = "blas"
            elif self.d <= FUSED_MAX_FEATURES:
                path = "fused"
            elif spec.name == "linear":
                path = "gemm"
            else:
                path = "twophase"
        if path == "fused":
            kx.extrapolate_fused(X, self.ZsT, self.zaux, self.shift, *args, out, tile)
        elif path == "gemm" or (path == "twophase" and spec.name == "linear"):
            np.matmul(X, self.Zs.T, out=out)
        elif path == "blas":
            with _BLAS:
                kx.extrapolate_blas(X, self.Zs, self.ZsT, self.zaux, self.shift, *args, out, tile)
        elif path == "twophase":
            # multi-threaded GEMM on large chunks, then the jitted element-wise pass
            chunk = max(tile, (1 << 22) // max(1, self.m))
            for s in range(0, n, chunk):
                Xb = X[s : s + chunk]
                Eb = out[s : s + chunk]
                if spec.name == "rbf":
                    Xb64 = Xb.astype(np.float64) - self.shift
                    np.matmul(Xb64.astype(X.dtype, copy=False), self.Zs.T, out=Eb)
                    xaux = np.einsum("ij,ij->i", Xb64, Xb64)
                elif spec.name == "cosine":
                    np.matmul(Xb, self.Zs.T, out=Eb)
                    xaux = _row_norms(Xb)
                else:
                    np.matmul(Xb, self.Zs.T, out=Eb)
                    xaux = np.zeros(Eb.shape[0])
                kx.finish_rows(Eb, xaux, self.zaux, *args, tile)
        else:
            raise ValueError(f"unknown extrapolation path {path!r}")


    def project(self, X: np.ndarray, P: np.ndarray, out: np.ndarray) -> bool:
        """Fill ``out`` (n, r) with ``k(X, Z) @ P`` tile by tile, if per-thread BLAS is possible.

        Returns False (and does nothing) when threadpoolctl is unavailable or a test forces
        another path; the caller then goes block by block.
        """
        if _FORCE_PATH not in (None, "blas") or not _BLAS.available() or X.shape[0] == 0:
            return False
        from ._numba import _extrapolate as kx

        Xs, prep = self._scaled(X)
        spec = prep.spec
        # taller tiles than for E alone: each tile's GEMM repacks the m x r projection
        itemsize = X.dtype.itemsize
        tile = max(_tile_rows(self.m, self.d, itemsize),
                   min(1024, (8 << 20) // max(1, self.m * itemsize)))
        with _BLAS:
            kx.project_blas(
                Xs, prep.Zs, prep.ZsT, prep.zaux, prep.shift, spec.code, float(spec.gamma),
                float(spec.coef0), int(spec.degree), P, out, tile,
            )
        prep._check_finite(Xs, out, "k(X, Z) @ projection", shown=(X, self))
        return True


def _prepare(
    X: np.ndarray | None,
    Z: Any,
    kernel: Any,
    width: Any,
    gamma: Any,
    degree: Any,
    coef0: Any,
    dtype: np.dtype,
) -> _Prepared:
    Z = check_array(Z, name="Z")
    if X is not None and X.shape[1] != Z.shape[1]:
        raise ValueError(
            f"X and Z must have the same number of features, got X with {X.shape[1]} and Z "
            f"with {Z.shape[1]}."
        )
    if isinstance(kernel, KernelSpec):
        spec = kernel
    else:
        needs_data = (
            _canonical_name(kernel) in ("rbf", "laplacian") and width is None and gamma is None
        )
        if needs_data and Z.shape[0] < 2:
            raise ValueError(
                "The default width is the mean pairwise distance between the rows of Z, which "
                f"needs at least 2 landmarks; got Z of shape {Z.shape}. Pass width explicitly."
            )
        spec = make_kernel(kernel, width=width, gamma=gamma, degree=degree, coef0=coef0, X=Z)
    return _Prepared(Z, spec, dtype)


def _check_block_rows(block_rows: Any) -> int | None:
    if block_rows is None:
        return None
    return int(check_scalar(block_rows, "block_rows", kind="int", lo=1))


def extrapolate(
    X: Any,
    Z: Any,
    *,
    kernel: str | KernelSpec = "rbf",
    width: float | None = None,
    gamma: float | None = None,
    degree: int = 3,
    coef0: float = 1.0,
    block_rows: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Extrapolation matrix ``E = k(X, Z)``, row-blockwise and in parallel.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Samples. float32 and float64 are kept; other real dtypes are cast to float64.
    Z : array-like of shape (m, d)
        Landmarks (cast to X's dtype).
    kernel : str or KernelSpec, default="rbf"
        See the module docstring.
    width : float, optional
        Width ``b`` of ``exp(-||x - z||^2 / b)``. If neither width nor gamma is given, the
        mean pairwise squared distance between the rows of ``Z`` (the estimators use their
        training data instead).
    gamma, degree, coef0
        See :func:`make_kernel`.
    block_rows : int, optional
        Rows per parallel task (default: a tile of about 1 MiB of E). Results never depend on
        the number of threads; they do not depend on ``block_rows`` either, except on the
        BLAS path (``d > FUSED_MAX_FEATURES``, non-linear kernels), where BLAS may sum in
        another order for other tile heights (differences of a few ulp).
    out : ndarray of shape (n, m), optional
        C-contiguous, writeable buffer of X's dtype (e.g. a ``np.memmap``) to write into; it
        must not share memory with X or Z (``ValueError``).

    Returns
    -------
    E : ndarray of shape (n, m), dtype of X
        ``E[i, j] = k(X[i], Z[j])``.

    Notes
    -----
    Each thread computes the cross term ``X_t Z^T`` of its tile of rows (by BLAS, or inside
    the same jitted loop when ``d`` is small) and applies the kernel's element-wise map while
    the tile is in cache. For the Gaussian kernel both sides are first centred on the
    landmarks' mean, which leaves distances unchanged and cuts the cancellation in
    ``||x||^2 + ||z||^2 - 2<x, z>``. The absolute error of an RBF entry is then about
    ``eps * (||x - c||^2 + ||z - c||^2) / b`` (``c`` the landmarks' mean, ``eps`` of the input
    dtype): a few ``eps`` for the default width, larger only for widths far below the data's
    squared scale.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import extrapolate
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> E = extrapolate(X, X[:1], width=1.0)
    >>> E.shape, round(float(E[1, 0]), 6)
    ((2, 1), 0.367879)
    """
    X = check_array(X)
    Z = check_array(Z, name="Z")
    prep = _prepare(X, Z, kernel, width, gamma, degree, coef0, X.dtype)
    tile = _check_block_rows(block_rows)
    shape = (X.shape[0], prep.m)
    if out is None:
        out = np.empty(shape, dtype=X.dtype)
    else:
        check_out(out, shape, X.dtype)
        check_no_overlap(out, {"X": X, "Z": Z})
    prep.compute(X, out, tile, _FORCE_PATH)
    return out


def _iter_blocks(X: Any, block_rows: int | None, row_width: int) -> Iterator[tuple[int, Any]]:
    """Yield ``(start_row, raw_block)`` from a 2-D array or an iterable of 2-D row blocks."""
    if block_rows is None:
        block_rows = max(1, _STREAM_ELEMENTS // max(1, row_width))
    if isinstance(X, (list, tuple)) and len(X) and np.ndim(X[0]) <= 1:
        X = np.asarray(X)  # a list of rows, not a list of blocks
    if isinstance(X, np.ndarray):  # includes np.memmap: slicing reads one block at a time
        if X.ndim != 2:
            check_array(X)  # raises the standard message
        for s in range(0, X.shape[0], block_rows):
            yield s, X[s : s + block_rows]
        return
    try:
        it = iter(X)
    except TypeError:
        raise TypeError(
            f"X must be a 2-D array or an iterable of 2-D row blocks, got {type(X).__name__}."
        ) from None
    start = 0
    for block in it:
        yield start, block
        start += np.shape(block)[0] if np.ndim(block) == 2 else 0


def iter_extrapolate(
    X: Any,
    Z: Any,
    *,
    kernel: str | KernelSpec = "rbf",
    width: float | None = None,
    gamma: float | None = None,
    degree: int = 3,
    coef0: float = 1.0,
    block_rows: int | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """Stream ``E = k(X, Z)`` in row blocks, in order, with memory bounded by one block.

    Parameters
    ----------
    X : array-like of shape (n, d), np.memmap, or iterable of (n_b, d) blocks
        Arrays are sliced in blocks of ``block_rows``; an iterable's blocks are used as given.
    Z, kernel, width, gamma, degree, coef0
        As in :func:`extrapolate`; the kernel is resolved once, before the first block.
    block_rows : int, optional
        Rows per yielded block for array input (default: about 64 MiB of float64 E).

    Yields
    ------
    start : int
        Index of the block's first row.
    E_block : ndarray of shape (n_b, m)
        A new array per block, in the block's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import iter_extrapolate
    >>> X = np.random.default_rng(0).normal(size=(10, 3))
    >>> [(s, b.shape) for s, b in iter_extrapolate(X, X[:4], width=2.0, block_rows=4)]
    [(0, (4, 4)), (4, (4, 4)), (8, (2, 4))]
    """
    block_rows = _check_block_rows(block_rows)
    Zc = check_array(Z, name="Z")
    preps: dict[np.dtype, _Prepared] = {}
    first = _prepare(None, Zc, kernel, width, gamma, degree, coef0, Zc.dtype)
    for start, raw in _iter_blocks(X, block_rows, first.m):
        Xb = check_array(raw, name=f"X block at row {start}")
        if Xb.shape[1] != first.d:
            raise ValueError(
                f"X block at row {start} has {Xb.shape[1]} features, but Z has {first.d}."
            )
        prep = preps.get(Xb.dtype)
        if prep is None:
            prep = preps[Xb.dtype] = _Prepared(Zc, first.spec, Xb.dtype)
        out = np.empty((Xb.shape[0], prep.m), dtype=Xb.dtype)
        prep.compute(Xb, out, None, _FORCE_PATH)
        yield start, out
