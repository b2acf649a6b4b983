"""Row-block evaluation of ``E = k(X, Z)``: landmark-side preparation, tiling and threading.

``_Prepared`` holds what depends on the landmarks only (shifted or normalised landmarks, their
squared norms) and computes tiles of E by the jitted kernels of ``_numba/_extrapolate.py``:
the cross term by BLAS per tile while the tile is in cache, then one fused pass for norms and
the kernel function; or, without per-thread BLAS, a fused Numba pass.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from ._threads import BLAS_ONE_THREAD as _BLAS
from ._threads import numba_threads
from ._unit_rows import cosine_limit, row_norms, row_norms_blocked, unit_landmarks, unit_rows
from ._validation import abs_max, nonfinite_error
from ._width import _binary_exponent

# Without threadpoolctl (no per-thread BLAS), below this many features the cross term is
# computed inside the fused Numba pass rather than by a separate multi-threaded GEMM; with
# threadpoolctl the BLAS-per-tile path wins at every d.
FUSED_MAX_FEATURES = 24
# Target size of one tile of E processed by one thread: small enough to stay in L2 between
# the GEMM and the element-wise pass.
_TILE_BYTES = 1 << 20
# Tests set this to "fused", "blas", "twophase" or "gemm" to exercise every path.
_FORCE_PATH: str | None = None


def _read_only(X: np.ndarray) -> np.ndarray:
    """A read-only view of X (no copy). Numba types writable and read-only arrays apart, so a
    kernel called with both (fit passes the read-only landmarks, transform the user's rows)
    would be compiled twice; the kernels only read X."""
    if not X.flags.writeable:
        return X
    view = X.view()
    view.flags.writeable = False
    return view


def _tile_rows(m: int, d: int, itemsize: int) -> int:
    """Rows per tile: about 1 MiB of E, which stays in L2 between the GEMM and the element-wise
    pass; 16 MiB (at most 2048 rows) when d >= 256, where the GEMM dominates and each BLAS
    call repacks Z, so taller tiles pay off more than cache residency.

    Depends on shapes and dtype only, never on the thread count: BLAS may sum in a different
    order for tiles of different heights, and results must not change with the number of
    threads.
    """
    if d >= 256:  # the GEMM dominates: tall tiles amortise BLAS's packing of Z per call
        return int(max(8, min(2048, 16 * _TILE_BYTES // max(1, m * itemsize))))
    return int(max(8, min(1024, _TILE_BYTES // max(1, m * itemsize))))


def _even_tiles(n: int, rows: int) -> int:
    """The height of equal tiles covering n rows, as few as with tiles of at most ``rows``.

    The threads take contiguous runs of tiles, so with a short last tile one thread's share
    could exceed the other's by most of a tile (n = 20,000 in tiles of 2,048: 10,240 rows
    against 9,760); equal tiles leave the shares differing by at most one tile of the same
    height, and by nothing when the tiles divide evenly among the threads.
    """
    count = -(-n // max(1, rows))
    return max(1, -(-n // max(1, count)))


def check_fits(Z: np.ndarray, dtype: Any, name: str) -> None:
    """Raise ValueError when the finite array ``Z`` holds values beyond ``dtype``'s range.

    Landmarks are cast to X's dtype; float64 landmarks past 3.4e38 become infinite in float32
    and every kernel value NaN (or the landmarks themselves infinite), with only a warning.
    One pass over Z, and none when its dtype is no wider than ``dtype``.
    """
    info = np.finfo(dtype)
    if Z.dtype.kind == "f" and np.finfo(Z.dtype).max <= info.max:
        return
    top = abs_max(Z)
    with np.errstate(over="ignore"):  # the cast rounds to nearest: inf only past max + ulp/2
        fits = not np.isinf(np.asarray(top).astype(dtype))
    if fits:
        return
    raise ValueError(
        f"The values of {name} (max |z| = {top:.3g}) do not fit in {info.dtype}, the dtype of "
        f"X they are cast to (finite {info.dtype} values are |z| <= {float(info.max):.3g}). "
        f"Pass X as float64, or rescale X and {name} together."
    )


@functools.cache
def underflow_span(dtype: Any) -> float:
    """Scale of the data below which a distance or polynomial kernel is computed on rescaled
    data: the products of entries of this size are ``tiny * 2^(2 (nmant + 1))``, so products
    of entries down to ``2^-(nmant + 1)`` times the largest are normal numbers. Below it the
    cross terms fall on the subnormal grid, whose spacing is fixed: in float32 at max |x| =
    1e-25, ``<x, z>`` came out 0 and the kernel of a point with itself 0.85. 2^-39 (1.8e-12)
    in float32, 2^-458 in float64."""
    info = np.finfo(dtype)
    return float(np.ldexp(1.0, info.minexp // 2 + info.nmant + 1))


class _Prepared:
    """Landmark-side quantities, computed once per call (or once per stream)."""

    def __init__(self, Z: np.ndarray, spec: Any, dtype: np.dtype, name: str = "Z") -> None:
        self.spec = spec
        self.dtype = dtype
        check_fits(Z, dtype, name)  # name: what the user calls Z (a model's "landmarks_")
        Zf = np.ascontiguousarray(Z, dtype=dtype)
        d = Zf.shape[1]
        self.shift = np.zeros(d, dtype=np.float64)
        self.zaux = np.zeros(Zf.shape[0], dtype=np.float64)
        if spec.name == "rbf":
            # distances are shift invariant; centring on the landmarks' mean cuts cancellation
            self.shift = Zf.mean(axis=0, dtype=np.float64)
            Zs64 = np.subtract(Zf, self.shift, dtype=np.float64)  # one pass, no cast copy
            Zf = np.ascontiguousarray(Zs64, dtype=dtype)
            Zc = Zf.astype(np.float64, copy=False)
            self.zaux = np.einsum("ij,ij->i", Zc, Zc)
        elif spec.name == "cosine":
            # unit landmarks: <x, z / ||z||> / ||x|| stays in range at any scale of the data
            nrm = row_norms(Zf)
            if not np.isfinite(nrm).all():
                raise ValueError(
                    f"k(X, Z) overflows {np.dtype(dtype).name}: the 'cosine' kernel's landmark "
                    f"norms are not finite at max |z| = {float(np.abs(Zf).max()):.3g}. Rescale X."
                )
            Zf = np.ascontiguousarray(unit_landmarks(Zf), dtype=dtype)
            self.zaux = (nrm > 0).astype(np.float64)
        self.Zs = Zf
        self._ZsT: np.ndarray | None = None
        self.m = Zf.shape[0]
        self.d = d
        self.z_absmax = max(float(Zf.max(initial=0.0)), -float(Zf.min(initial=0.0)))

    @property
    def ZsT(self) -> np.ndarray:
        """The (d, m) contiguous transpose of ``Zs``, made on first use: only the fused and
        the Laplacian paths read it, and at d = 784, m = 1000 the strided copy costs as much
        as the rest of the preparation."""
        if self._ZsT is None:
            self._ZsT = np.ascontiguousarray(self.Zs.T)
        return self._ZsT

    def _ZsT_if(self, needed: bool) -> np.ndarray:
        """``ZsT`` when ``needed``, else a (0, d) stand-in of the same numba type (the jitted
        tile kernels take it as an argument but read it for the Laplacian kernel only)."""
        return self.ZsT if needed else self.Zs[:0]

    def _may_overflow(self, X: np.ndarray, x_absmax: float) -> bool:
        """Whether k(X, Z) can leave X's float range: a bound from ``x_absmax = max |x|`` and
        max |z| only (no pass over the n x m output for ordinary data)."""
        spec = self.spec
        if spec.name == "laplacian" or X.size == 0:
            return False  # exp(-distance) is in [0, 1] even when the distance overflows
        a = x_absmax + float(np.abs(self.shift).max(initial=0.0))
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

    def _scaled(self, X: np.ndarray, x_absmax: float) -> tuple[np.ndarray, _Prepared, float]:
        """``(X / 2^e, landmark side / 2^e)`` when X's or Z's scale would overflow the squared
        norms or cross terms (X's dtype; float64 for the Laplacian's L1 sums) of a distance
        or polynomial kernel, or, for the Gaussian and polynomial kernels, make them
        underflow (a scale below ``underflow_span``): the kernel's scale takes ``2^(2e)``
        (``2^e`` for L1 distances), so ``gamma d`` is unchanged and a huge width still gives
        a finite kernel (E -> 1), a tiny one on tiny data the exact kernel. Powers of two are
        exact: where nothing would have over- or underflowed the result is the same bit for
        bit. ``x_absmax`` is ``max |x|``; it is returned at the new scale, third.
        Returns ``(X, self, x_absmax)`` when the scale is moderate or when the rescaled gamma
        would not be finite (the kernel itself leaves the range; compute refuses it) or would
        fall below float64's normal range (the kernel is then constant to every digit, and
        the data's own scale gives that constant)."""
        spec = self.spec
        if spec.name not in ("rbf", "laplacian", "poly") or X.size == 0:
            return X, self, x_absmax
        span = x_absmax + float(np.abs(self.shift).max(initial=0.0))
        span += self.z_absmax
        power = 1 if spec.name == "laplacian" else 2
        limit = np.finfo(np.float64 if power == 1 else X.dtype).max
        # L1 sums have no products: subnormal entries add exactly, so only overflow counts
        low = 0.0 if power == 1 else underflow_span(X.dtype)
        with np.errstate(divide="ignore"):
            high = np.log(self.d) + power * np.log(span) >= np.log(limit) - np.log(8.0)
        if not high and not 0.0 < span < low:
            return X, self, x_absmax
        e = _binary_exponent(span)
        with np.errstate(over="ignore", under="ignore"):
            gamma = float(np.ldexp(spec.gamma, power * e))
        if not np.isfinite(gamma) or gamma < np.finfo(np.float64).tiny:
            return X, self, x_absmax
        new = object.__new__(_Prepared)
        new.__dict__.update(self.__dict__)
        new.spec = dataclasses.replace(spec, gamma=gamma)  # a KernelSpec at the new scale
        new.Zs = np.ldexp(self.Zs, -e).astype(self.dtype)
        new._ZsT = None
        new.shift = np.ldexp(self.shift, -e)
        if spec.name == "rbf":
            # from the scaled landmarks, not 2^-2e times the old norms: those may have
            # overflowed (|z - c| beyond 1e154 in float64), and inf stays inf; where they did
            # not, both give the same bits (powers of two commute with the rounding)
            Zc = new.Zs.astype(np.float64, copy=False)
            new.zaux = np.einsum("ij,ij->i", Zc, Zc)
        new.z_absmax = float(np.ldexp(self.z_absmax, -e))
        return np.ldexp(X, -e).astype(X.dtype, copy=False), new, float(np.ldexp(x_absmax, -e))

    def _check_finite(
        self,
        X: np.ndarray,
        out: np.ndarray,
        what: str,
        x_absmax: float,
        shown: tuple[np.ndarray, _Prepared] | None = None,
    ) -> None:
        """Raise if ``out`` holds a non-finite value; looked at only when ``_may_overflow``.
        ``x_absmax``: max |x|; ``shown``: the unscaled input and landmark side, for the
        message."""
        if not self._may_overflow(X, x_absmax):
            return
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf in the sum: NaN
            if np.isfinite(np.sum(out, dtype=np.float64)) or np.isfinite(out).all():
                return
        X, self = shown if shown is not None else (X, self)
        spec = self.spec
        detail = (
            f" of degree {spec.degree}, gamma {spec.gamma:.3g}, coef0 {spec.coef0:.3g}"
            if spec.name == "poly"
            else ""
        )
        hint = ", lower its degree or gamma" if spec.name == "poly" else ""
        if X.dtype != np.float64:
            hint += ", or pass float64 data"
        raise ValueError(
            f"{what} overflows {X.dtype}: the {spec.name!r} kernel{detail} is not finite at "
            f"max |x| = {float(np.abs(X).max()):.3g} and max |z| = {self.z_absmax:.3g}. "
            f"Rescale X{hint}."
        )

    def compute(self, X: np.ndarray, out: np.ndarray, tile: int | None, path: str | None) -> None:
        """Fill ``out`` (n, m) with k(X, Z); X validated (finiteness not yet checked for dense
        X), same dtype and width as Z. Raises ValueError if X holds a NaN or an infinity, or
        if a kernel value overflows X's dtype."""
        if not isinstance(X, np.ndarray) and hasattr(X, "indptr"):  # CSR (check_csr)
            from ._csr import compute_csr

            compute_csr(self, X, out, tile)
            return
        xaux = self._guarded(
            X, out, "k(X, Z)", lambda p, A: p._compute(A, out, tile, path), self._fused_bound(path)
        )

        def redo(rows: np.ndarray, Xr: np.ndarray) -> None:
            sub = np.empty((rows.size, self.m), dtype=out.dtype)
            self._guarded(Xr, sub, "k(X, Z)", lambda p, A: p._compute(A, sub, None, path), False)
            out[rows] = sub

        self._redo_tiny_rows(X, xaux, redo)

    def _redo_tiny_rows(self, X: np.ndarray, xaux: np.ndarray | None, redo: Any) -> None:
        """The cosine kernel: ``redo(rows, X[rows] rescaled)`` for the rows whose norm is
        below ``cosine_limit`` (and not 0), whose cross terms just lost their precision.
        ``xaux``: the rows' norms where the pass computed them (the BLAS path), else None.
        Ordinary data have no such row and pay nothing on the BLAS path."""
        if self.spec.name != "cosine" or X.shape[0] == 0:
            return
        norms = xaux if xaux is not None and xaux.shape[0] == X.shape[0] else None
        if norms is None:
            norms = row_norms_blocked(X)
        rows = np.flatnonzero((norms > 0) & (norms < cosine_limit(X.dtype)))
        if rows.size:
            redo(rows, unit_rows(X, rows))

    def _guarded(
        self, X: np.ndarray, out: np.ndarray, what: str, fill: Any, fused: bool
    ) -> np.ndarray | None:
        """``fill(prep, X)`` into ``out`` under the overflow guards, which need max |x|.

        ``fused``: ``fill`` returns the rows' centred squared norms, which bound max |x|
        (``_absmax_bound``), so no pass over X precedes it; a non-finite norm, or a bound that
        asks for rescaling, hands over to the exact pass (``abs_max``), and ``fill`` runs
        again. Otherwise the exact pass comes first. Returns what the last ``fill`` returned
        (the rows' ``xaux`` on the BLAS paths).
        """
        if fused:
            xaux = fill(self, X)
            bound = self._absmax_bound(xaux)
            # the bound may exceed max |x| by a factor sqrt(d) + 2: far less than the margin
            # (2^24 in float32) of underflow_span above the scale where products underflow
            if bound is not None and self._scaled(X, bound)[1] is self:
                self._check_finite(X, out, what, bound, shown=(X, self))
                return xaux
        x_absmax = abs_max(X)
        if not np.isfinite(x_absmax):
            raise nonfinite_error("X", X)
        Xs, prep, amax = self._scaled(X, x_absmax)
        xaux = fill(prep, Xs)
        prep._check_finite(Xs, out, what, amax, shown=(X, self))
        return xaux

    def _fused_bound(self, path: str | None) -> bool:
        """Whether E's own pass yields a bound on max |x| (the Gaussian kernel on the
        per-thread BLAS path, whose centring pass sums ``||x - c||^2``)."""
        return self.spec.name == "rbf" and self._path(path) == "blas"

    def _absmax_bound(self, xaux: np.ndarray | None) -> float | None:
        """``max |x| <= max ||x - c|| + max |c|`` from the rows' centred squared norms; None
        when they are not all finite (a NaN or infinite x, or squares beyond float64)."""
        if xaux is None or xaux.size == 0:
            return None
        top = float(xaux.max())
        if not np.isfinite(top):
            return None
        return float(np.sqrt(top)) + float(np.abs(self.shift).max(initial=0.0))

    def _compute(
        self, X: np.ndarray, out: np.ndarray, tile: int | None, path: str | None
    ) -> np.ndarray | None:
        """Fill ``out``; returns the rows' ``xaux`` on the BLAS path (see ``_tile_kernel``)."""
        n = X.shape[0]
        if n == 0:
            return None
        if tile is None:
            tile = _even_tiles(n, _tile_rows(self.m, self.d, X.dtype.itemsize))
        # the element-wise map costs about as much as 16 multiply-adds per entry
        with numba_threads(float(n) * self.m * (self.d + 16)):
            return self._dispatch(X, out, tile, path)

    def _path(self, path: str | None) -> str:
        """The extrapolation path: the one given, else the fastest available."""
        if self.spec.name == "laplacian":
            return "l1"
        if path is not None:
            return path
        if _BLAS.available():
            return "blas"
        if self.d <= FUSED_MAX_FEATURES:
            return "fused"
        return "gemm" if self.spec.name == "linear" else "twophase"

    def _dispatch(
        self, X: np.ndarray, out: np.ndarray, tile: int, path: str | None
    ) -> np.ndarray | None:
        from ._numba import _extrapolate as kx

        spec = self.spec
        n = X.shape[0]
        args = (spec.code, float(spec.gamma), float(spec.coef0), int(spec.degree))
        path = self._path(path)
        X = _read_only(X)
        if path == "l1":
            kx.extrapolate_l1(X, self.ZsT, float(spec.gamma), out, tile)
            return None
        if path == "fused":
            kx.extrapolate_fused(X, self.ZsT, self.zaux, self.shift, *args, out, tile)
        elif path == "gemm" or (path == "twophase" and spec.name == "linear"):
            np.matmul(X, self.Zs.T, out=out)
        elif path == "blas":
            xaux = np.empty(n)
            with _BLAS:
                ZsT = self._ZsT_if(spec.name == "laplacian")
                kx.extrapolate_blas(X, self.Zs, ZsT, self.zaux, self.shift, *args, out, xaux, tile)
            return xaux
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
                    xaux = row_norms(Xb)
                else:
                    np.matmul(Xb, self.Zs.T, out=Eb)
                    xaux = np.zeros(Eb.shape[0])
                kx.finish_rows(Eb, xaux, self.zaux, *args, tile)
        else:
            raise ValueError(f"unknown extrapolation path {path!r}")
        return None

    def project(self, X: np.ndarray, P: np.ndarray, out: np.ndarray) -> bool:
        """Fill ``out`` (n, r) with ``k(X, Z) @ P`` tile by tile, if per-thread BLAS is possible.

        Returns False (and does nothing) when threadpoolctl is unavailable or a test forces
        another path; the caller then goes block by block.
        """
        if _FORCE_PATH not in (None, "blas") or not _BLAS.available() or X.shape[0] == 0:
            return False
        if not isinstance(X, np.ndarray):  # CSR: block by block through compute
            return False
        fill = lambda p, A: p._project_tiles(A, P, out)  # noqa: E731
        xaux = self._guarded(X, out, "k(X, Z) @ projection", fill, self._fused_bound("blas"))

        def redo(rows: np.ndarray, Xr: np.ndarray) -> None:
            sub = np.empty((rows.size, out.shape[1]), dtype=out.dtype)
            refill = lambda p, A: p._project_tiles(A, P, sub)  # noqa: E731
            self._guarded(Xr, sub, "k(X, Z) @ projection", refill, False)
            out[rows] = sub

        self._redo_tiny_rows(X, xaux, redo)
        return True

    def _project_tiles(self, X: np.ndarray, P: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = k(X, Z) @ P`` by ``project_blas``; returns the rows' ``xaux``."""
        from ._numba import _extrapolate as kx

        spec = self.spec
        # about 8 MiB of E per tile (each tile's GEMM repacks the m x r projection), at most
        # 1024 rows: each thread allocates its tile anew, and larger buffers cost page faults
        itemsize = X.dtype.itemsize
        tile = int(max(8, min(1024, (8 << 20) // max(1, self.m * itemsize))))
        work = float(X.shape[0]) * self.m * (self.d + 16 + P.shape[1])
        xaux = np.empty(X.shape[0])
        with _BLAS, numba_threads(work):
            kx.project_blas(
                _read_only(X),
                self.Zs,
                self._ZsT_if(spec.name == "laplacian"),
                self.zaux,
                self.shift,
                spec.code,
                float(spec.gamma),
                float(spec.coef0),
                int(spec.degree),
                P,
                out,
                xaux,
                tile,
            )
        return xaux
