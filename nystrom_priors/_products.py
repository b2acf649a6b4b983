"""Products of factor rows, refused with a ValueError where they leave the float range.

A learned kernel ``G_A G_B^T``, a transform ``F @ P``, pair scores and pair distances can
overflow for data near the float range; none of them may return inf or NaN silently. And a
``fit_transform`` whose rows are all zero (the kernel to the landmarks underflowed) is
warned about (``warn_if_zero_rows``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._unit_rows import row_norms

__all__ = [
    "finite_products",
    "pair_distances",
    "pair_scores",
    "scaled_product",
    "warn_if_zero_rows",
]


def finite_products(GA: np.ndarray, GB: np.ndarray, owner: str) -> np.ndarray:
    """``GA @ GB.T``, refused with a ValueError where it overflows the factor rows' dtype
    (float32 rows of ~1e20 and more: the learned kernel is then not representable)."""
    with np.errstate(over="ignore", invalid="ignore"):
        K = GA @ GB.T
    if not np.isfinite(K).all():
        big = max(float(np.abs(G).max(initial=0.0)) for G in (GA, GB))
        hint = ", or pass float64 data" if K.dtype == np.float32 else ""
        raise ValueError(
            f"the learned kernel of this {owner} overflows {K.dtype}: its factor rows reach "
            f"{big:.3g}, and their inner products are not finite. Rescale X{hint}."
        )
    return K


def scaled_product(F: Any, P: np.ndarray, owner: str) -> np.ndarray:
    """``F @ P`` with each row of F computed at ``f / 2^e`` (its own e) and scaled back
    (powers of two are exact), for rows whose plain product overflowed: a partial sum can
    leave the range where the result does not, and one shared scale would flush the small
    rows of the block to zero. Refused with a ValueError where a result is not finite."""
    dense = F.toarray() if hasattr(F, "toarray") else np.asarray(F)
    top = np.abs(dense).max(axis=1, initial=0.0).astype(np.float64)
    e = np.where(np.isfinite(top) & (top > 0), np.frexp(top)[1], 0)
    with np.errstate(over="ignore", invalid="ignore"):
        G = np.ldexp(np.ldexp(dense.astype(np.float64), -e[:, None]) @ P, e[:, None])
    G = G.astype(P.dtype)
    if not np.isfinite(G).all():
        raise ValueError(
            f"the factor rows of this {owner} overflow {P.dtype} at max |features| = "
            f"{float(top.max(initial=0.0)):.3g}: X @ projection is not finite. Rescale X."
        )
    return G


def pair_scores(GA: np.ndarray, GB: np.ndarray, owner: str) -> np.ndarray:
    """``g_a^T g_b`` per row pair, refused where it overflows float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        scores = np.einsum("ij,ij->i", GA, GB)
    if not np.isfinite(scores).all():
        big = max(float(np.abs(G).max(initial=0.0)) for G in (GA, GB))
        raise ValueError(
            f"the learned kernel of this {owner} overflows float64 on these pairs: their "
            f"factor rows reach {big:.3g}. Rescale the pairs' points."
        )
    return scores


def pair_distances(GA: np.ndarray, GB: np.ndarray, owner: str) -> np.ndarray:
    """``||g_a - g_b||`` per row pair, in units of each difference's largest entry (the
    squares of entries past 1e154 overflow where the distance does not); refused where the
    distance itself overflows float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        dist = row_norms(GA - GB)
    if not np.isfinite(dist).all():
        raise ValueError(
            f"the learned distance of this {owner} overflows float64 on these pairs (factor "
            f"rows up to {float(np.abs(GA).max(initial=0.0)):.3g}). Rescale the pairs' points."
        )
    return dist


# rows checked a block at a time: on any usable model the first block has a non-zero entry
_ZERO_CHECK_ROWS = 1024


def warn_if_zero_rows(model: Any, G: Any) -> None:
    """Warn when ``fit_transform``'s output is zero on every training sample: the kernel
    between the samples and the landmarks is zero, or underflows float64, for all of them
    (landmarks far from the data, or a kernel far too narrow), so the kernel learned on the
    training data is identically 0. Only ``fit_transform`` sees the training rows' features
    at no extra cost; far from the landmarks, zero rows of new samples are expected."""
    if not isinstance(G, np.ndarray) or G.ndim != 2 or 0 in G.shape:
        return
    for start in range(0, G.shape[0], _ZERO_CHECK_ROWS):
        if G[start : start + _ZERO_CHECK_ROWS].any():
            return
    kernel = getattr(model, "kernel_", None)
    gamma = getattr(model, "gamma_", None)
    what = f" (kernel={kernel!r}, gamma={gamma!r})" if kernel is not None else ""
    warnings.warn(
        f"{type(model).__name__}.fit_transform: the features of all {G.shape[0]} training "
        f"samples are zero: the kernel between them and the landmarks is zero or underflows "
        f"float64{what}, so the learned kernel is 0 on the training data. Use landmarks "
        "drawn from X or a wider kernel (smaller gamma), or rescale X.",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
