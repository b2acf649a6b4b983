"""Training rows that need not fit in memory.

``fit`` of the landmark learners touches the data in three ways only: a uniform sample of rows
for the landmarks, one streaming pass for the default kernel width (and, for some learners,
a Gram matrix), and the few rows that carry side information. ``RowSource`` offers exactly
these on an in-memory array, a ``np.memmap`` (rows are read when needed; validation is
blockwise, so nothing of size n x d is allocated) or a ``dask.array`` (sampled rows and
reductions are computed by dask).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ._validation import check_array, float_target

#: rows per block for streaming passes (about 8 MiB of float64 per block at d = 128)
_BLOCK_ELEMENTS = 1 << 20


def is_dask_array(X: Any) -> bool:
    return type(X).__module__.startswith("dask.") and hasattr(X, "map_blocks")


class RowSource:
    """Validated view of training rows (ndarray, memmap or dask array)."""

    def __init__(self, X: Any, *, name: str = "X", min_samples: int = 1) -> None:
        self.name = name
        if is_dask_array(X):
            import dask.array as da

            if X.ndim != 2:
                raise ValueError(
                    f"{name} must be a 2-D array of shape (n_samples, n_features), got a dask "
                    f"array of shape {X.shape}."
                )
            if X.dtype.kind not in "biuf":
                raise TypeError(
                    f"{name} must hold real numbers, got a dask array of dtype {X.dtype}."
                )
            meta = getattr(X, "_meta", None)  # the type of its chunks
            if meta is not None and not isinstance(meta, np.ndarray):
                kind = f"{type(meta).__module__}.{type(meta).__name__}"
                raise TypeError(
                    f"{name} is a dask array whose chunks are {kind}, not numpy arrays; pass "
                    "numpy chunks (X.map_blocks(lambda b: b.toarray()) for sparse ones) or the "
                    "whole matrix as a scipy.sparse matrix."
                )
            if any(np.isnan(c) for c in X.shape):
                raise ValueError(f"{name} has unknown chunk sizes; call compute_chunk_sizes().")
            if X.shape[0] < min_samples:
                raise ValueError(
                    f"{name} must have at least {min_samples} sample(s), got shape {X.shape}."
                )
            target = float_target(X.dtype)
            self.X = X.astype(target)
            bad = int((~da.isfinite(self.X)).sum().compute())
            if bad:
                raise ValueError(
                    f"{name} must contain only finite values, got {bad} non-finite entries."
                )
            self.lazy = True
        else:
            # scipy.sparse input is kept as canonical CSR: rows are densified only when taken
            self.X = check_array(X, name=name, min_samples=min_samples, accept_sparse=True)
            self.lazy = False
        self.sparse = not self.lazy and not isinstance(self.X, np.ndarray)
        self.shape = tuple(int(s) for s in self.X.shape)
        self.dtype = np.dtype(self.X.dtype)

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def d(self) -> int:
        return self.shape[1]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The given rows (sorted or not) as an in-memory C-contiguous array."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.sparse:  # len(rows) x d dense
            return np.ascontiguousarray(self.X[rows].toarray())
        if not self.lazy:
            return np.ascontiguousarray(self.X[rows])
        order = np.argsort(rows, kind="stable")
        got = np.asarray(self.X[rows[order]].compute())
        out = np.empty_like(got)
        out[order] = got
        return np.ascontiguousarray(out)

    def blocks(self, block_rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(start, rows) blocks in order, one in memory at a time."""
        step = block_rows or max(1, _BLOCK_ELEMENTS // max(1, self.d))
        for s in range(0, self.n, step):
            blk = self.X[s : s + step]
            if self.sparse:
                yield s, blk  # CSR rows
                continue
            yield s, np.ascontiguousarray(blk.compute() if self.lazy else blk)

    def in_memory(self) -> np.ndarray:
        """The whole array in memory (for the learners that need it, e.g. graph-based); CSR
        for sparse input."""
        if self.sparse:
            return self.X
        return np.ascontiguousarray(self.X.compute()) if self.lazy else self.X

    def mean_squared_distance(self) -> float:
        """Exact mean pairwise squared distance in two streaming passes (see kernels.py)."""
        if self.n < 2:
            raise ValueError(
                f"{self.name} has n_samples = {self.n}; the default kernel width needs at least 2 "
                "samples."
            )
        from ._width import _binary_exponent, _roundoff, mean_squared_distance

        if not self.lazy:
            return mean_squared_distance(self.X)
        import dask
        import dask.array as da

        # as in kernels.mean_squared_distance, in units of 2^e ~ max |x|, so that neither the
        # squares nor the width overflow on the way. The first pass finds e and also sums the
        # columns in units of 2^512, which cannot overflow (|x| 2^-512 < 2^512) and, once
        # max |x| >= 2^-400, loses nothing that matters in units of 2^e; below that a scaled
        # pass recomputes them. (The errstate of the caller does not reach dask's threads.)
        X = self.X.astype(np.float64)
        amax, colsum = dask.compute(da.absolute(X).max(), da.ldexp(X, -512).sum(axis=0))
        e = _binary_exponent(float(amax))
        if e >= -400:
            mean = np.ldexp(np.asarray(colsum, dtype=np.float64) / self.n, 512 - e)
        else:
            mean = (da.ldexp(X, -e).sum(axis=0) / self.n).compute()
        D = da.ldexp(X, -e) - mean
        total = float((D * D).sum().compute())
        if total <= _roundoff(self.n, X.shape[1]) and bool((X == X[0]).all().compute()):
            return 0.0  # identical rows: the rounding of their mean is no distance
        with np.errstate(over="ignore"):
            return float(np.ldexp(2.0 * total / (self.n - 1), 2 * e))
