"""Squared-distance bounds of pairwise constraints, and the lengths of pairs in float64.

The Bregman learners constrain squared distances ``d(i, j) = ||g_i - g_j||^2`` in the factor
space of the initial kernel. :func:`distance_bounds` sets default bounds (ITML's percentiles,
or Kulis et al.'s relative margins); :func:`pair_lengths` decides which pairs a projection can
move at all: none whose rows coincide (relative length below ``zero_tol``) or whose squared
length is not a normal float64 (``1 / d`` overflows), and it refuses squared distances that
overflow float64 (they used to pass as "zero length").
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._feature_names import _user_stacklevel
from .._validation import check_array, check_option, check_random_state, check_scalar
from ..side_info import check_pairs

__all__ = ["distance_bounds", "pair_lengths", "zero_length_message"]

_TINY = float(np.finfo(np.float64).tiny)


def _range_error(top: float, what: str) -> ValueError:
    return ValueError(
        f"{what}: squared distances overflow float64 (the factor rows reach {top:.3g}); "
        "rescale X or the kernel (width, kernel_gamma, degree)."
    )


def pair_lengths(
    A: np.ndarray, B: np.ndarray, zero_tol: float, what: str = "the initial kernel"
) -> tuple[np.ndarray, np.ndarray]:
    """Which pairs of rows ``(A[k], B[k])`` have zero length, and which rows differ.

    A pair has zero length when ``||a - b||^2 <= zero_tol^2 (||a||^2 + ||b||^2)`` (the rows
    coincide up to round-off) or when ``||a - b||^2`` is below the normal float64 range (no
    projection can move it: ``1 / d`` overflows).

    Returns
    -------
    zero, differ : bool ndarrays of shape (k,)

    Raises
    ------
    ValueError
        The squared distances or norms overflow float64.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        v = A - B
        v2 = (v * v).sum(axis=1)
        scale = (A**2).sum(axis=1) + (B**2).sum(axis=1)
    if not (np.isfinite(v2).all() and np.isfinite(scale).all()):
        raise _range_error(max(float(np.abs(A).max()), float(np.abs(B).max())), what)
    zero = (v2 <= zero_tol**2 * scale) | (v2 < _TINY)
    return zero, v.any(axis=1)


_BOUND_RULES = ("percentile", "relative")
# a pair whose factor rows differ by less than this (relative) has length zero for the learner:
# Bregman projections keep its distance at exactly 0 (metric-learn divides by it and crashes)
_ZERO_LENGTH = 1e-12


def zero_length_message(
    D: np.ndarray,
    zero: np.ndarray,
    differ: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    learner: Any,
    every: bool = False,
) -> str:
    """What to say about the pairs ``D[zero]`` of zero length in the initial kernel
    (``pair_lengths``' ``zero`` and ``differ``; ``A``, ``B``: the pairs' rows of the initial
    factor): a warning that they are skipped, or with ``every`` the error that nothing is left
    to learn. Where both rows of such a pair are zero the kernel maps the samples to 0, which
    for a distance kernel with ``init="nystrom"`` means that every value ``k(x, z)``
    underflowed, and the message names the width used: "zero length" alone points at the
    pairs, not at the width."""
    if every:
        text = "every pair has zero length in the initial kernel; nothing to learn."
    else:
        first = D[np.flatnonzero(zero)[0], :2].tolist()
        text = (
            f"{int(zero.sum())} pair(s) have zero length in the initial kernel (e.g. {first}); "
            "Bregman projections cannot change their distance, so they are skipped."
        )
    under = int((zero & differ).sum())
    if under:
        text += (
            f" {under} of them join different rows whose squared distance underflows "
            "float64: rescale X or the kernel (width, kernel_gamma)."
        )
    null = zero & ~A.any(axis=1) & ~B.any(axis=1)
    width = getattr(learner, "width_", None)
    if getattr(learner, "init_", None) != "nystrom" or not isinstance(width, float):
        # no width to blame (linear, cosine, poly, init="linear"): the samples coincide
        same = zero & ~null & ~differ  # rows that differ: the underflow, above
        if null.any():
            text += (
                f" {int(null.sum())} of them join samples that the initial kernel maps to 0 "
                "(zero rows of X, or kernel values that underflow: rescale X)."
            )
        if same.any():
            text += (
                f" {int(same.sum())} of them join samples that the initial kernel does not "
                "tell apart: duplicated samples, or rows it maps alike (parallel rows under "
                "the cosine kernel); drop such pairs or the duplicates."
            )
        return text
    if null.any():
        text += (
            f" {int(null.sum())} of them join samples that the initial kernel maps to 0 (their "
            f"kernel values with every landmark underflow): the width {width:.3g} is far below "
            "their distances; pass a larger width."
        )
    same = zero & ~null & ~differ  # rows that differ: the underflow, above
    if same.any():  # a huge width: every k(x, z) rounds to 1 and all rows coincide
        text += (
            f" {int(same.sum())} of them join samples whose rows of the initial kernel "
            f"coincide: duplicated samples, or a width ({width:.3g}; 1 / kernel_gamma) so "
            "large against their distances that every kernel value rounds to 1; then pass a "
            "smaller width."
        )
    return text


def tightest_bounds(pairs: Any, n: int, bounds: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The bound of each kept pair (``check_pairs``' rows ``kept`` of ``pairs``), given one
    per row of ``pairs`` (``bounds``): where a pair is given more than once, the tightest of
    its bounds (the smallest upper bound of a must-link, the largest lower bound of a
    cannot-link), with a warning when they differ. The first copy's bound alone dropped a
    stricter one silently, and the fit reported convergence on constraints it never saw."""
    from ..side_info import canonical_pairs

    arr = canonical_pairs(pairs, n)
    _, group = np.unique(arr, axis=0, return_inverse=True)
    group = group.reshape(-1)
    must = arr[:, 2] == 1
    lo = np.full(group.max() + 1, np.inf)
    hi = np.full(group.max() + 1, -np.inf)
    np.minimum.at(lo, group, bounds)
    np.maximum.at(hi, group, bounds)
    g = group[kept]
    differ = np.flatnonzero(lo[g] != hi[g])
    if differ.size:
        k = kept[differ[0]]
        warnings.warn(
            f"{differ.size} pair(s) are given more than once with different bounds (e.g. "
            f"({arr[k, 0]}, {arr[k, 1]}) with bounds from {lo[g[differ[0]]]:.6g} to "
            f"{hi[g[differ[0]]]:.6g}); each keeps its tightest bound (the smallest for a "
            "must-link, the largest for a cannot-link).",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    return np.where(must[kept], lo[g], hi[g])


def _zero_length_tol(dtype: Any) -> float:
    """Relative length ||g_i - g_j|| / ||(g_i, g_j)|| below which a pair counts as zero-length.

    Rows of duplicated samples may differ by round-off of the dtype they were computed in
    (a GEMM's result depends on a row's position in the blocking), so the threshold follows
    that dtype: ~1e-12 for float64, ~8e-6 for float32.
    """
    eps = np.finfo(dtype).eps if np.dtype(dtype).kind == "f" else np.finfo(np.float64).eps
    return max(_ZERO_LENGTH, 64.0 * float(eps))


def _percentile_pairs(
    G: np.ndarray, rng: np.random.Generator, zero_tol: float, max_pairs: int = 200_000
) -> np.ndarray:
    """Squared distances ||g_a - g_b||^2 between rows that are not (numerically) coincident:
    all pairs, or a random sample. Computed from differences, never ||a||^2 + ||b||^2 - 2 a.b,
    whose cancellation turns equal rows into spurious distances of order eps ||g||^2."""
    u = G.shape[0]
    if u < 2:
        return np.zeros(0)
    if u * (u - 1) // 2 <= max_pairs:
        a, b = np.triu_indices(u, k=1)
    else:
        a = rng.integers(0, u, size=max_pairs)
        b = rng.integers(0, u - 1, size=max_pairs)
        b = b + (b >= a)  # b != a
    sq = (G * G).sum(axis=1)
    d = np.empty(a.size)
    step = max(1, 2**22 // max(1, G.shape[1]))
    for s in range(0, a.size, step):
        diff = G[a[s : s + step]] - G[b[s : s + step]]
        d[s : s + step] = np.einsum("ij,ij->i", diff, diff)
    # as pair_lengths: coincident rows and squared distances below the normal range are out
    return d[(d > zero_tol**2 * (sq[a] + sq[b])) & (d >= _TINY)]


def _check_percentiles(percentiles: Any) -> np.ndarray:
    """``(low, high)`` with ``0 <= low <= high <= 100``, as a float64 array of shape (2,)."""
    try:
        pct = np.asarray(percentiles, dtype=np.float64)
    except (TypeError, ValueError):
        pct = None
    if (
        pct is None
        or pct.shape != (2,)
        or not np.all(np.isfinite(pct))
        or not 0.0 <= pct[0] <= pct[1] <= 100.0
    ):
        raise ValueError(
            "percentiles must be two numbers (low, high) with 0 <= low <= high <= 100 (low "
            f"for must-link, high for cannot-link bounds), got {percentiles!r}."
        )
    return pct


def distance_bounds(
    G0: np.ndarray,
    pairs: np.ndarray,
    *,
    rule: str = "percentile",
    epsilon: float = 0.25,
    percentiles: tuple[float, float] = (5.0, 95.0),
    random_state: Any = None,
    zero_length: float | None = None,
) -> np.ndarray:
    """Default squared-distance bounds for pairs, from the initial kernel ``K0 = G0 G0^T``.

    Parameters
    ----------
    G0 : ndarray of shape (n, r)
        Factor rows of the initial kernel.
    pairs : ndarray of shape (k, 3)
        Rows ``[i, j, +1 | -1]``, indices into ``G0``'s rows (validated like the learners'
        ``pairs``; a duplicated row gets its bound again).
    rule : {"percentile", "relative"}
        ``"percentile"`` (ITML): must-link pairs get the ``percentiles[0]``-th percentile of the
        squared distances between the constrained samples, cannot-link pairs the
        ``percentiles[1]``-th. ``"relative"`` (Kulis et al. 2006, Sec. 6):
        ``(1 - epsilon) d0`` for must-link and ``(1 + epsilon) d0`` for cannot-link, with
        ``d0`` the pair's own initial squared distance.
    epsilon : float in [0, 1)
    percentiles : (low, high) with 0 <= low <= high <= 100
        Reversed or out-of-range percentiles are refused (``ValueError``).
    random_state : None, int or Generator
        Sampling of pairs for the percentiles when there are more than 200,000.
    zero_length : float in [0, 1), optional
        Pairs of rows closer than ``zero_length * ||(g_i, g_j)||`` count as coincident and are
        left out of the percentiles (duplicated samples would otherwise give a zero bound).
        A relative tolerance: from 1 on it would call coincident any two rows at an acute
        angle. Default: ~1e-12 for float64 ``G0``, ~8e-6 for float32.

    Returns
    -------
    bounds : ndarray of shape (k,), float64, all > 0 for pairs of distinct rows
    """
    rule = check_option(rule, "rule", _BOUND_RULES)
    # both rules' settings are checked whichever applies: a bad one never passes unnoticed
    eps = check_scalar(epsilon, "epsilon", lo=0.0, hi=1.0, hi_closed=False)
    pct = _check_percentiles(percentiles)
    G0 = check_array(G0, name="G0")
    with warnings.catch_warnings():  # one bound per given row, duplicates included
        warnings.simplefilter("ignore", UserWarning)
        check_pairs(pairs, G0.shape[0])
    pairs = np.asarray(pairs).astype(np.int64)
    zero_tol = (
        _zero_length_tol(G0.dtype)
        if zero_length is None
        else check_scalar(zero_length, "zero_length", lo=0.0, hi=1.0, hi_closed=False)
    )
    G0 = G0.astype(np.float64, copy=False)
    with np.errstate(over="ignore"):
        if not np.isfinite(np.einsum("ij,ij->i", G0, G0)).all():
            raise _range_error(float(np.abs(G0).max()), "distance_bounds")
    i, j, s = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    if rule == "relative":
        zero, differ = pair_lengths(G0[i], G0[j], zero_tol, "distance_bounds")
        if (zero & differ).any():
            k = int(np.flatnonzero(zero & differ)[0])
            v = G0[i[k]] - G0[j[k]]
            # what made it coincident: the caller's zero_length, or float64 itself
            by_length = zero_length is not None and float(v @ v) >= _TINY
            raise ValueError(
                f"distance_bounds: the pair {pairs[k, :2].tolist()} joins different rows "
                + (
                    f"closer than zero_length={zero_tol!r} times their norm, which count as "
                    "coincident: no relative bound. Lower zero_length or pass bounds explicitly."
                    if by_length
                    else "whose squared distance is zero in float64 (it underflows, or the rows "
                    "differ by round-off only): no relative bound. Rescale G0 or pass bounds "
                    "explicitly."
                )
            )
        d0 = ((G0[i] - G0[j]) ** 2).sum(axis=1)
        return np.where(s > 0, (1.0 - eps) * d0, (1.0 + eps) * d0)
    rng = check_random_state(random_state)
    idx = np.unique(pairs[:, :2])
    d = _percentile_pairs(G0[idx], rng, zero_tol)
    if d.size == 0:
        differ = np.ptp(G0[idx], axis=0).max() > 0.0
        # what emptied the set: zero_length (the pairs have normal distances without it)
        # or the distances' underflow
        by_length = differ and _percentile_pairs(G0[idx], rng, 0.0).size > 0
        raise ValueError(
            "the constrained samples all coincide in the initial kernel: no positive distance "
            "to take percentiles of. "
            + (
                "Their rows differ, but the squared distances underflow float64: rescale X or "
                "the kernel, or pass bounds explicitly."
                if differ and not by_length
                else f"Their rows differ, but every pair is closer than zero_length={zero_tol!r} "
                "times its rows' norm and counts as coincident: lower zero_length."
                if differ
                else "Pass bounds explicitly or check for duplicated samples."
            )
        )
    lo, hi = np.percentile(d, pct)
    return np.where(s > 0, lo, hi).astype(np.float64)
