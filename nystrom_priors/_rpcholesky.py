"""Randomly pivoted Cholesky (RPCholesky) landmarks.

RPCholesky (Chen, Epperly, Tropp & Webber 2023) builds a partial Cholesky factor
``F`` (n x k) of the kernel matrix ``K`` by sampling each pivot with probability proportional
to the diagonal of the current residual ``K - F F^T``, then eliminating it. The Nystrom
approximation on the pivots ``S`` is exactly ``F F^T = K[:, S] K[S, S]^-1 K[S, :]``, and its
expected trace error is within ``(1 + eps)`` of the best rank-r one after
``k ~ r / eps + r log(1 / (eps eta))`` pivots (``eta`` the relative tail of the spectrum). It
evaluates only ``(k + 1) n`` kernel entries (the diagonal and the k pivot columns), never K.

This module implements the *accelerated* (block rejection) form of Epperly, Tropp & Webber
(2024, "Embrace rejection"): each round draws ``b`` candidates i.i.d. from the current
diagonal, forms their ``b x b`` residual submatrix ``H`` and walks through them in order,
accepting candidate ``j`` with probability ``H_jj / d_j`` (its *current* residual diagonal
over the one it was drawn with) and eliminating it from ``H`` when accepted. The accepted
pivots have exactly the law of sequential RPCholesky, while the expensive part, the ``n x l``
block of kernel columns and the update of ``F``, is one BLAS-3 step per round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["rpcholesky", "kernel_diagonal"]

#: candidates per round (the accelerated algorithm's block size b)
_BLOCK = 120


def kernel_diagonal(X: Any, spec: Any) -> np.ndarray:
    """``k(x_i, x_i)`` for every row (float64, shape (n,)), from the row norms alone.

    ``X`` dense or canonical CSR; ``spec`` a resolved ``KernelSpec``. RBF and Laplacian: 1.
    Linear: ``||x||^2``. Polynomial: ``(gamma ||x||^2 + coef0)^degree``. Cosine: 1, or 0 for a
    zero row.
    """
    n = X.shape[0]
    if spec.name in ("rbf", "laplacian"):
        return np.ones(n)
    if spec.name == "cosine":  # not from ||x||^2, which underflows for rows below 1e-162
        return _nonzero_rows(X).astype(np.float64)
    if isinstance(X, np.ndarray):
        X64 = X.astype(np.float64, copy=False)
        sq = np.einsum("ij,ij->i", X64, X64)
    else:
        from ._csr import row_sq_norms

        sq = row_sq_norms(X)
    if spec.name == "linear":
        return sq
    return (spec.gamma * sq + spec.coef0) ** spec.degree


def _nonzero_rows(X: Any) -> np.ndarray:
    """Whether each row of X (dense or canonical CSR) holds a non-zero entry; dense X in row
    blocks of about 2^16 entries, never a temporary of X's size."""
    if not isinstance(X, np.ndarray):
        out = np.zeros(X.shape[0], dtype=bool)
        full = np.flatnonzero(np.diff(X.indptr) > 0)
        if full.size:
            out[full] = np.logical_or.reduceat(X.data != 0, X.indptr[full])
        return out
    step = max(1, (1 << 16) // max(1, X.shape[1]))
    return np.concatenate(
        [(X[s : s + step] != 0).any(axis=1) for s in range(0, X.shape[0], step)]
        or [np.zeros(0, dtype=bool)]
    )


def _columns(src: Any, rows: np.ndarray, spec: Any) -> np.ndarray:
    """``k(X, X[rows])`` in float64, shape (n, len(rows)), streamed over row blocks of X."""
    from .kernels import extrapolate

    Z = src.take(rows)
    out = np.empty((src.n, rows.size))
    for s, blk in src.blocks():
        out[s : s + blk.shape[0]] = extrapolate(blk, Z, kernel=spec)
    return out


def _reject(
    H: np.ndarray, u: np.ndarray, uniforms: np.ndarray, need: int, tol: np.ndarray
) -> list[int]:
    """Accept/reject the ``b`` candidates of one round (in place on ``H``).

    Candidate ``j`` is accepted when ``uniforms[j] * u[j] < H[j, j]``, ``u`` being the
    residual diagonal it was sampled with and ``H`` the residual submatrix after eliminating
    the candidates accepted so far (a repeated candidate then has ``H_jj = 0``: rejected).
    A residual at or below ``tol[j]`` is rounding noise of the kernel's precision, not a
    direction of K, and is never accepted: dividing by its square root would turn noise into
    a pivot. Returns the accepted positions, at most ``need``.
    """
    accepted: list[int] = []
    for j in range(H.shape[0]):
        if len(accepted) == need:
            break
        hjj = H[j, j]
        if not hjj > tol[j] or not uniforms[j] * u[j] < hjj:
            continue
        accepted.append(j)
        col = H[:, j] / np.sqrt(hjj)
        H -= np.outer(col, col)
    return accepted


def rpcholesky(
    src: Any, k: int, spec: Any, rng: np.random.Generator, *, block: int = _BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """Accelerated randomly pivoted Cholesky of ``K = k(X, X)``.

    Parameters
    ----------
    src : RowSource
        The rows of X (dense, memmap, dask or CSR); only pivot rows are densified.
    k : int
        Number of pivots, ``1 <= k <= n``.
    spec : KernelSpec
        Resolved kernel.
    rng : numpy Generator
        All randomness (the candidates and the acceptance uniforms) comes from it, so a seed
        fixes the pivots whatever the number of threads.
    block : int
        Candidates per round.

    Returns
    -------
    F : ndarray of shape (n, k), float64
        Partial Cholesky factor: ``F F^T = K[:, S] K[S, S]^+ K[S, :]``.
    S : ndarray of shape (k,), int64
        The pivots in the order they were accepted. When the residual falls to the rounding
        level of the kernel's precision before ``k`` pivots (K has rank < k on these rows, or
        its spectrum ends below float32's resolution), the remaining pivots are unused rows
        drawn uniformly and ``F``'s remaining columns are zero.
    """
    from scipy.linalg import solve_triangular

    from .kernels import extrapolate

    n = src.n
    diag = np.empty(n)
    for s, blk in src.blocks():
        diag[s : s + blk.shape[0]] = kernel_diagonal(blk, spec)
    # The diagonal comes from float64 row norms, the kernel columns in the rows' own precision
    # (float32 rows give float32 kernels): residuals below a few ulps of that precision are
    # rounding, and treating them as mass would sample, and never accept, noise forever.
    rel = 64.0 * float(np.finfo(src.dtype).eps)
    d = diag.copy()
    F = np.zeros((n, k))
    S = np.empty(k, dtype=np.int64)
    i = 0
    floor = rel * float(diag.sum())
    while i < k:
        cum = np.cumsum(d)
        total = float(cum[-1])
        if not total > floor:
            break
        b = min(block, n)
        cand = np.minimum(np.searchsorted(cum, rng.random(b) * total, side="right"), n - 1)
        uniforms = rng.random(b)
        Zc = src.take(cand)
        Fc = F[cand, :i]
        H = extrapolate(Zc, Zc, kernel=spec).astype(np.float64) - Fc @ Fc.T
        H = 0.5 * (H + H.T)
        H0 = H.copy()
        tol = rel * diag[cand]
        acc = _reject(H, d[cand], uniforms, k - i, tol)
        if not acc:
            # H0's diagonal is the candidates' exact current residual: drop what the running
            # d overstates (rounding accumulated in d), so the next round samples true mass
            # and the loop ends once only noise is left.
            fresh = np.diag(H0)
            d[cand] = np.where(fresh > tol, np.minimum(d[cand], fresh), 0.0)
            continue
        T = cand[acc]
        L = np.linalg.cholesky(H0[np.ix_(acc, acc)])
        G = _columns(src, T, spec) - F[:, :i] @ F[T, :i].T
        F[:, i : i + len(acc)] = solve_triangular(L, G.T, lower=True).T
        S[i : i + len(acc)] = T
        d = np.maximum(d - np.einsum("ij,ij->i", F[:, i : i + len(acc)], F[:, i : i + len(acc)]), 0)
        d[T] = 0.0  # exactly eliminated
        i += len(acc)
    if i < k:
        unused = np.setdiff1d(np.arange(n), S[:i])
        S[i:] = rng.choice(unused, size=k - i, replace=False)
    return F, S
