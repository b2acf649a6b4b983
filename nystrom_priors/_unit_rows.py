"""Rows brought to a moderate scale by powers of two, for the cosine kernel.

The cosine ``<x, z> / (||x|| ||z||)`` does not see a row's scale, but floating point does:
near the bottom of the float range the cross terms and norms of a row fall on the subnormal
grid, whose spacing is fixed. Multiplying a row by a power of two is exact, so rows brought
to a largest ``|x|`` in [0.5, 1) give the cosine of exactly the stored vectors, and rows of
ordinary size keep their bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["cosine_limit", "row_norms", "row_norms_blocked", "unit_landmarks", "unit_rows"]


def cosine_limit(dtype: Any) -> float:
    """Row norm below which the cosine kernel's cross terms ``<x, z / ||z||>`` lose precision
    in ``dtype``: the products of x's largest entries with the unit landmarks' fall among
    the subnormal numbers, whose spacing is fixed, so at 5e-324 the kernel of two distinct
    directions came out 1. Rows this small are rescaled (``unit_rows``): the cosine does
    not see a row's scale. ``tiny * 2^(2 (nmant + 1))``: 2^-916 in float64, 2^-78 in
    float32."""
    info = np.finfo(dtype)
    return float(np.ldexp(float(info.tiny), 2 * (info.nmant + 1)))


def unit_rows(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``X[rows]`` (X's dtype), each row times the power of two that brings its largest
    ``|x|`` into [0.5, 1): exact, and invisible to the cosine kernel."""
    Xr = np.asarray(X[rows], dtype=np.float64)
    top = np.abs(Xr).max(axis=1, initial=0.0)
    return np.ldexp(Xr, -np.frexp(top)[1][:, None]).astype(X.dtype)


def unit_landmarks(Z: np.ndarray) -> np.ndarray:
    """``z / ||z||`` per row (0 for a zero row), float64. Each row is first brought to a
    largest ``|z|`` in [0.5, 1) by a power of two: exact, so ordinary rows get the same
    bits, while a subnormal row's norm would itself round to the subnormal grid
    (``||(2^-1074, 2^-1074)||`` to 2^-1074, a unit vector of length 1.41)."""
    Zs = unit_rows(np.asarray(Z, dtype=np.float64), np.arange(Z.shape[0]))
    nrm = row_norms(Zs)
    return np.divide(Zs, nrm[:, None], out=np.zeros(Zs.shape), where=nrm[:, None] > 0)


def row_norms_blocked(X: np.ndarray) -> np.ndarray:
    """``row_norms`` over row blocks of about 2^16 entries (its temporaries stay small)."""
    rows = max(1, (1 << 16) // max(1, X.shape[1]))
    return np.concatenate(
        [row_norms(X[s : s + rows]) for s in range(0, X.shape[0], rows)] or [np.zeros(0)]
    )


def row_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean row norms in float64, scaled by each row's max |a| (no under- or overflow)."""
    A = A.astype(np.float64)
    top = np.abs(A).max(axis=1, initial=0.0)
    scaled = np.divide(A, top[:, None], out=np.zeros_like(A), where=top[:, None] > 0)
    with np.errstate(over="ignore"):  # inf past float64's range; the callers report it
        return top * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
