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

import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _rowblocks
from ._rowblocks import _Prepared
from ._validation import (
    abs_max,
    check_array,
    check_no_overlap,
    check_out,
    check_scalar,
    is_sparse,
    nonfinite_error,
)
from ._width import mean_l1_distance, mean_squared_distance

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


# Rows per block yielded by iter_extrapolate when block_rows is None (~64 MiB of float64 E).
_STREAM_ELEMENTS = 1 << 23


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

    def __post_init__(self) -> None:
        # a spec built directly (not by make_kernel) gets the same checks: a NaN, zero or
        # negative gamma would give NaN, a division by zero or a kernel that is not PSD deep
        # inside the computation
        name = _canonical_name(self.name)
        object.__setattr__(self, "name", name)
        # the fields a kernel ignores are checked too: a model keeps them (gamma_, degree_,
        # coef0_), and one that fits can always be saved
        used = name in ("rbf", "laplacian", "poly")
        if used and isinstance(self.gamma, (int, float)) and self.gamma == 0:  # the default
            raise ValueError(
                f"KernelSpec({name!r}) needs gamma > 0 (got {self.gamma!r}): the "
                + ("inner product scale" if name == "poly" else "inverse width 1/b")
                + f"; make_kernel({name!r}, width=...) or make_kernel({name!r}, gamma=...) "
                "builds the spec."
            )
        g = check_scalar(self.gamma, "gamma", lo=0.0, lo_closed=not used)
        object.__setattr__(self, "gamma", float(g))
        deg = check_scalar(self.degree, "degree", kind="int", lo=1, hi=64)
        object.__setattr__(self, "degree", int(deg))
        object.__setattr__(self, "coef0", float(check_scalar(self.coef0, "coef0")))

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


def _spec_alone(
    spec: KernelSpec, width: Any, gamma: Any, degree: Any = 3, coef0: Any = 1.0
) -> KernelSpec:
    """``spec``, refusing a width or gamma passed beside it, or a degree or coef0 that differs
    from both its default and the spec's own: a KernelSpec carries its own parameters, and
    silently ignoring the other would fit a kernel the caller did not ask for. (A degree or
    coef0 at its default cannot be told from one not passed, so it is accepted.)"""
    given = [("width", width, None), ("gamma", gamma, None)]
    given += [("degree", degree, 3), ("coef0", coef0, 1.0)]
    for name, value, default in given:
        if default is None:
            clash = value is not None
        else:
            clash = _differs_from(value, default) and _differs_from(value, getattr(spec, name))
        if clash:
            raise ValueError(
                f"kernel is a KernelSpec, which carries its own parameters, but {name}={value!r} "
                f"was passed too. Pass the kernel's name with {name}, or build the KernelSpec "
                f"with make_kernel(..., {name}={value!r})."
            )
    return spec


def _differs_from(value: Any, other: Any) -> bool:
    try:
        return bool(value != other)
    except Exception:  # an array or an object without a plain comparison
        return True


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
        return _spec_alone(kernel, width, gamma, degree, coef0)
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
                    cause = (
                        f"{at}the distances underflow"
                        if at
                        else ("the samples are identical or their distances underflow")
                    )
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
        # degree and coef0 kept (and checked) though unused, as the learners keep them
        return KernelSpec(name, gamma=float(g), degree=degree, coef0=coef0)
    if width is not None:
        raise ValueError(
            f"width applies to the 'rbf' and 'laplacian' kernels only, got width={width!r} "
            f"with kernel={name!r}."
        )
    if name == "poly":
        if gamma is None:
            if X is None:
                raise ValueError("The 'poly' kernel needs gamma when no data are given.")
            shape = X.shape if hasattr(X, "shape") else np.shape(X)  # lists too
            if len(shape) != 2 or shape[1] == 0:
                check_array(X, accept_sparse=True)  # raises the standard message
            gamma = 1.0 / shape[1]
        return KernelSpec("poly", gamma=gamma, degree=degree, coef0=coef0)  # it checks them
    if gamma is not None:
        raise ValueError(f"gamma does not apply to the {name!r} kernel, got gamma={gamma!r}.")
    return KernelSpec(name, degree=degree, coef0=coef0)


def _scale_and_spread(X: Any) -> tuple[float, float]:
    """(max |x|, largest per-feature range) of in-memory data, NaN for lazy input; for the
    width errors only."""
    from ._rows import RowSource

    if isinstance(X, RowSource):
        if X.lazy:
            return float("nan"), float("nan")
        X = X.X
    if is_sparse(X):  # the stored values and the implicit zeros
        X = X.tocsr()
        if X.nnz == 0:
            return 0.0, 0.0
        with np.errstate(over="ignore"):  # a spread past float64's range is inf, still > 0
            return float(np.abs(X.data).max()), float((X.max(axis=0) - X.min(axis=0)).max())
    X = np.asarray(X)
    if X.size == 0:
        return 0.0, 0.0
    with np.errstate(over="ignore"):
        return float(np.abs(X).max()), float(np.ptp(X, axis=0).max())


def _prepare(
    X: np.ndarray | None,
    Z: Any,
    kernel: Any,
    width: Any,
    gamma: Any,
    degree: Any,
    coef0: Any,
    dtype: np.dtype,
    sparse: bool = False,
) -> Any:
    """The landmark side: ``_Prepared`` for dense X, the lighter ``CsrPrepared`` for CSR X."""
    Z = check_array(Z, name="Z")
    if X is not None and X.shape[1] != Z.shape[1]:
        raise ValueError(
            f"X and Z must have the same number of features, got X with {X.shape[1]} and Z "
            f"with {Z.shape[1]}."
        )
    if isinstance(kernel, KernelSpec):
        spec = _spec_alone(kernel, width, gamma, degree, coef0)
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
    if sparse:
        from ._csr import CsrPrepared

        return CsrPrepared(Z, spec)
    return _Prepared(Z, spec, dtype)


# A block of more rows than X has is all of X; larger values are clipped to this, so that the
# jitted kernels' row arithmetic (start + block_rows) cannot overflow int64: block_rows near
# 2^63 left the output uninitialised, above it raised OverflowError.
MAX_BLOCK_ROWS = 1 << 48


def _check_block_rows(block_rows: Any) -> int | None:
    if block_rows is None:
        return None
    return min(int(check_scalar(block_rows, "block_rows", kind="int", lo=1)), MAX_BLOCK_ROWS)


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
    X : array-like or scipy.sparse matrix of shape (n, d)
        Samples. float32 and float64 are kept; other real dtypes are cast to float64. Sparse
        input (CSR; CSC, COO, ... are converted) is never densified: each row's cross terms
        are a sparse x dense product over its stored entries, ``O(nnz(X) m)`` time.
    Z : array-like of shape (m, d)
        Landmarks (cast to X's dtype); always dense.
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
        must not share memory with X or Z (``ValueError``). If the call raises because X
        holds a NaN or an infinity, ``out`` may already hold part of the result: for the
        Gaussian kernel that check comes from E's own pass.

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
    sparse = is_sparse(X)
    X = check_array(X, accept_sparse=True, allow_nonfinite=not sparse)
    try:
        Z = check_array(Z, name="Z")
        prep = _prepare(X, Z, kernel, width, gamma, degree, coef0, X.dtype, sparse=sparse)
    except ValueError:
        if not sparse and not np.isfinite(abs_max(X)):  # X's own problem is reported first
            raise nonfinite_error("X", X) from None
        raise
    tile = _check_block_rows(block_rows)
    shape = (X.shape[0], prep.m)
    if out is None:
        out = np.empty(shape, dtype=X.dtype)
    else:
        check_out(out, shape, X.dtype)
        check_no_overlap(out, {"X": X, "Z": Z})
    # dense X: finiteness and max |x| (for the overflow guards) are checked by compute
    prep.compute(X, out, tile, _rowblocks._FORCE_PATH)
    return out


def _array_like(X: Any) -> bool:
    """Whether X is one array (numpy, memmap, pandas, dask, ...: a ``shape`` and
    ``__array__``), to be sliced into row blocks, rather than an iterable of blocks."""
    return isinstance(X, np.ndarray) or (hasattr(X, "__array__") and hasattr(X, "shape"))


def _iter_blocks(X: Any, block_rows: int | None, row_width: int) -> Iterator[tuple[int, Any]]:
    """Yield ``(start_row, raw_block)`` from a 2-D array or an iterable of 2-D row blocks."""
    if block_rows is None:
        block_rows = max(1, _STREAM_ELEMENTS // max(1, row_width))
    if isinstance(X, (list, tuple)) and len(X) and np.ndim(X[0]) <= 1:
        X = np.asarray(X)  # a list of rows, not a list of blocks
    if is_sparse(X):  # CSR row slices (other formats are converted once)
        X = check_array(X, accept_sparse=True)
        for s in range(0, max(X.shape[0], 1), block_rows):  # zero rows: one empty block
            yield s, X[s : s + block_rows]
        return
    if _array_like(X):  # np.memmap, dask: slicing reads one block at a time
        if len(X.shape) != 2 or not all(isinstance(k, numbers.Integral) for k in X.shape):
            check_array(X)  # raises the standard message (dask: unknown chunk sizes computed)
        # a DataFrame's blocks keep its columns; a lazy array (dask) computes one block
        rows = X.iloc if hasattr(X, "iloc") else X
        lazy = not isinstance(X, np.ndarray) and not hasattr(X, "iloc")
        # a zero-row array is one (empty) block: the caller checks it as transform would
        for s in range(0, max(X.shape[0], 1), block_rows):
            block = rows[s : s + block_rows]
            yield s, np.asarray(block) if lazy else block
        return
    if isinstance(X, (dict, str, bytes)):  # iterable, but of keys or characters, not blocks
        raise TypeError(
            f"X must be a 2-D array or an iterable of 2-D row blocks, got {type(X).__name__}."
        )
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
    X : array-like of shape (n, d), np.memmap, scipy.sparse matrix, or iterable of blocks
        Arrays and sparse matrices (as CSR) are sliced in blocks of ``block_rows``; an
        iterable's (n_b, d) blocks, dense or sparse, are used as given.
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
        Xb = check_array(raw, name=f"X block at row {start}", accept_sparse=True)
        if Xb.shape[1] != first.d:
            raise ValueError(
                f"X block at row {start} has {Xb.shape[1]} features, but Z has {first.d}."
            )
        prep = preps.get(Xb.dtype)
        if prep is None:
            prep = preps[Xb.dtype] = _Prepared(Zc, first.spec, Xb.dtype)
        out = np.empty((Xb.shape[0], prep.m), dtype=Xb.dtype)
        prep.compute(Xb, out, None, _rowblocks._FORCE_PATH)
        yield start, out
