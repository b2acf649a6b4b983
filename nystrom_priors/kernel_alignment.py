"""Kernel alignment (Cristianini et al. 2002; centred form of Cortes et al. 2012).

``rho(K1, K2) = <K1c, K2c>_F / (||K1c||_F ||K2c||_F)``, with ``Kc = H K H``,
``H = I - 11^T/n`` when ``centered`` (the uncentred alignment uses K itself).

For factored kernels ``K = G G^T`` (G of shape (n, r)), ``H G G^T H = (HG)(HG)^T``, where
``HG`` subtracts the column means of G, and the Frobenius products are taken either in feature
space, ``<G1 G1^T, G2 G2^T>_F = ||G1^T G2||_F^2`` (r x r matrices, when the samples outnumber
the features), or with the n x n kernels themselves when n is the smaller: memory is of order
``min(n^2, (r1 + r2)^2)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_array

__all__ = ["alignment", "factored_alignment"]


def _ratio(num: float, a: float, b: float, *, zero: float | None = None) -> float:
    den = np.sqrt(a) * np.sqrt(b)
    if not den > 0.0:
        if zero is not None:
            return zero
        raise ValueError(
            "Alignment is undefined when a (centred) kernel is zero; got a kernel with zero "
            "Frobenius norm."
        )
    # Cauchy-Schwarz bounds it by 1; rounding in the three products does not know that
    return float(min(max(num / den, -1.0), 1.0))


def _unit_scale(A: np.ndarray) -> np.ndarray:
    """A times the power of two that brings max |A| into [0.5, 1): exact (alignment is
    scale-invariant), and keeps the inner products of kernels near 1e300 or 1e-300 from
    overflowing to inf / NaN or underflowing to a spurious "zero kernel"."""
    amax = float(np.abs(A).max(initial=0.0))
    if amax == 0.0:
        return A
    return np.ldexp(A, -int(np.frexp(amax)[1]))


def _centred_or_zero(C: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``C``, the centred ``M`` (a kernel or a factor), or exactly 0 where ``C`` is round-off:
    centring a constant leaves about eps |M| per entry, whose direction is noise, and scoring
    it gave an alignment of +-1 or 0 as the constant's bits fell. Every entry of M carries
    eps / 2 relative error already, so a centred part below ``16 eps ||M||_F`` says nothing."""
    if np.linalg.norm(C) <= 16 * np.finfo(np.float64).eps * np.linalg.norm(M):
        return np.zeros_like(C)
    return C


def _dense(A: np.ndarray, B: np.ndarray, centered: bool, zero: float | None = None) -> float:
    """Alignment of validated float64 kernel matrices (``zero``: value for a zero kernel)."""
    if centered:
        Ac = _centred_or_zero(A - A.mean(axis=0) - A.mean(axis=1)[:, None] + A.mean(), A)
        Bc = _centred_or_zero(B - B.mean(axis=0) - B.mean(axis=1)[:, None] + B.mean(), B)
        for C, M, name in ((Ac, A, "K1"), (Bc, B, "K2")):
            if zero is None and M.any() and not C.any():
                raise ValueError(
                    f"{name} is constant once centred, to float64's rounding: its centred part "
                    f"is below 16 eps ||{name}||_F. Either the kernel is constant, or its "
                    "samples share an offset far larger than their spread (features + 1e8), "
                    "which the kernel's entries cannot hold apart. Align the factors with "
                    "factored_alignment (it centres them before the products), or pass "
                    "centered=False."
                )
        A, B = Ac, Bc
    return _ratio(float(np.vdot(A, B)), float(np.vdot(A, A)), float(np.vdot(B, B)), zero=zero)


def _factored(A: np.ndarray, B: np.ndarray, centered: bool, zero: float | None = None) -> float:
    """Alignment of ``K1 = A A^T`` and ``K2 = B B^T`` from validated float64 factors.

    ``A`` is (n, r1) and ``B`` is (n, r2). The three Frobenius products the alignment needs
    can be taken in sample space or in feature space,

        <K1, K2>_F = sum(K1 * K2) = ||A^T B||_F^2,   ||K1||_F^2 = ||A^T A||_F^2,  etc.,

    with n x n matrices (2 n^2 floats, O(n^2 (r1 + r2)) time) or r x r ones
    (r1 r2 + r1^2 + r2^2 floats, O(n (r1 + r2)^2) time). The smaller is used, so that a few
    samples with very wide factors (or many samples with narrow ones) stay cheap.
    """
    if hasattr(B, "toarray"):
        return _factored_sparse(A, B, centered, zero)
    if centered:
        # H A A^T H = (H A)(H A)^T: centring the kernel subtracts the column means of A
        A = _centred_or_zero(A - A.mean(axis=0), A)
        B = _centred_or_zero(B - B.mean(axis=0), B)
    n, r1, r2 = A.shape[0], A.shape[1], B.shape[1]
    if 2 * n * n < r1 * r2 + r1 * r1 + r2 * r2:
        K1 = A @ A.T
        K2 = B @ B.T
        return _ratio(
            float(np.vdot(K1, K2)), float(np.vdot(K1, K1)), float(np.vdot(K2, K2)), zero=zero
        )
    AtB = A.T @ B
    AtA = A.T @ A
    BtB = B.T @ B
    return _ratio(
        float(np.vdot(AtB, AtB)), float(np.vdot(AtA, AtA)), float(np.vdot(BtB, BtB)), zero=zero
    )


def _factored_sparse(A: np.ndarray, B: Any, centered: bool, zero: float | None) -> float:
    """``_factored`` for a ``scipy.sparse`` B (one-hot labels: as many columns as classes,
    up to n) in O(n r1^2 + nnz(B) r1) time and O(r1 (r1 + r2)) memory, never densifying B.

    Centring A alone centres the cross term (``(HA)^T B = (HA)^T HB``), and with
    ``D = B^T B`` (sparse) and ``u = B^T 1 / sqrt(n)``,
    ``||(HB)^T HB||^2 = ||D - u u^T||^2 = ||D||^2 - 2 u^T D u + ||u||^4``."""
    if centered:
        A = _centred_or_zero(A - A.mean(axis=0), A)
    AtB = np.asarray(B.T @ A)  # (r2, r1)
    AtA = A.T @ A
    D = (B.T @ B).tocsr()
    bb = float(D.multiply(D).sum())
    if centered:
        u = np.asarray(B.sum(axis=0)).ravel() / np.sqrt(A.shape[0])
        uu, uDu = float(u @ u), float(u @ (D @ u))
        # a difference of large terms: at their round-off it is zero (one class: H B = 0),
        # as the dense path's centred B is exactly
        size = bb + 2.0 * abs(uDu) + uu * uu
        bb = bb - 2.0 * uDu + uu * uu
        bb = bb if bb > 16 * np.finfo(np.float64).eps * size else 0.0
    return _ratio(float(np.vdot(AtB, AtB)), float(np.vdot(AtA, AtA)), bb, zero=zero)


def _check_centered(centered: Any) -> None:
    """``centered`` must be a bool: a string such as "no" would read as True."""
    if not isinstance(centered, (bool, np.bool_)):
        raise TypeError(f"centered must be True or False, got {centered!r}.")


# a kernel's triangles differ by the round-off of its dtype (float16: about 1e-3 of max |K|
# per entry, a few of it after a sum) or of the products that centred it; a cross-kernel of
# other samples by O(1). A hundredth of max |K| lies between both.
_SYMMETRY_TOL = 1e-2


def _check_symmetric(A: np.ndarray, name: str) -> None:
    """Refuse a matrix whose triangles differ by more than ``_SYMMETRY_TOL * max |A|``."""
    with np.errstate(all="ignore"):
        gap = float(np.abs(A - A.T).max(initial=0.0))
        scale = float(np.abs(A).max(initial=0.0))
    if gap > _SYMMETRY_TOL * scale:
        raise ValueError(
            f"{name} must be a symmetric kernel matrix k(X, X), got one with max "
            f"|{name} - {name}^T| = {gap:.3g} against max |{name}| = {scale:.3g}: the "
            "alignment compares two kernels on the same samples, and a cross-kernel k(X, Y) "
            "is not one."
        )


def alignment(K1: Any, K2: Any, *, centered: bool = True) -> float:
    """Normalised (centred) alignment of two kernel matrices.

    Parameters
    ----------
    K1, K2 : array-like of shape (n, n)
        Kernel matrices on the same samples: symmetric, up to round-off (the triangles may
        differ by a hundredth of ``max |K|``, float16's round-off with room to spare).
    centered : bool, default=True
        Centre both kernels in feature space first (``H K H``).

    Returns
    -------
    float in [-1, 1]

    Raises
    ------
    ValueError
        If a matrix is not square, the shapes differ, or a matrix is not symmetric: the
        alignment is an inner product of kernels, and a non-symmetric matrix (a cross-kernel
        ``k(X, Y)``, a transposed factor product) is not one.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import alignment
    >>> y = np.array([0, 0, 1, 1])
    >>> K = (y[:, None] == y[None, :]).astype(float)
    >>> round(alignment(K, K), 12)
    1.0
    """
    _check_centered(centered)
    A = check_array(K1, name="K1").astype(np.float64, copy=False)
    B = check_array(K2, name="K2").astype(np.float64, copy=False)
    if A.shape[0] != A.shape[1] or A.shape != B.shape:
        raise ValueError(
            f"K1 and K2 must be square matrices of the same shape, got {A.shape} and {B.shape}."
        )
    _check_symmetric(A, "K1")
    _check_symmetric(B, "K2")
    return _dense(_unit_scale(A), _unit_scale(B), centered)


def factored_alignment(G1: Any, G2: Any, *, centered: bool = True) -> float:
    """Alignment of ``G1 G1^T`` and ``G2 G2^T`` from the factors.

    The n x n kernels are formed only when they are smaller than the factor products
    ``G1^T G2``, ``G1^T G1``, ``G2^T G2`` (n below about the factor widths), so memory is of
    order ``min(n^2, r1 r2 + r1^2 + r2^2)`` on top of the centred copies of the factors.

    Parameters
    ----------
    G1 : array-like of shape (n, r1)
    G2 : array-like of shape (n, r2)
        Factors of the two kernels on the same n samples.
    centered : bool, default=True
        Centre in feature space (subtract the column means of each factor).

    Returns
    -------
    float in [-1, 1]
        Equal to ``alignment(G1 @ G1.T, G2 @ G2.T, centered=centered)``.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import alignment, factored_alignment
    >>> rng = np.random.default_rng(0)
    >>> G1, G2 = rng.normal(size=(50, 3)), rng.normal(size=(50, 4))
    >>> a = factored_alignment(G1, G2)
    >>> bool(np.isclose(a, alignment(G1 @ G1.T, G2 @ G2.T)))
    True
    """
    _check_centered(centered)
    A = check_array(G1, name="G1").astype(np.float64, copy=False)
    B = check_array(G2, name="G2").astype(np.float64, copy=False)
    if A.shape[0] != B.shape[0]:
        raise ValueError(
            f"G1 and G2 must have the same number of rows (samples), got {A.shape[0]} and "
            f"{B.shape[0]}."
        )
    return _factored(_unit_scale(A), _unit_scale(B), centered)
