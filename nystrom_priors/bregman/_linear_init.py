"""The initial projection of ``init="linear"`` with a rank: X's top right singular vectors.

Streamed X (``top_right_singular_vectors_streamed``): one pass over its row blocks, the
d x d Gram matrix of the rows less their mean. Wide X in memory
(``top_right_singular_vectors``): the n x n Gram matrix, or X's QR factorisation where that
loses the directions asked for, completed to the rank asked for without a d x d array."""

from __future__ import annotations

from typing import Any

import numpy as np

# eigenvectors of a Gram matrix serve while their eigenvalues lie within this ratio of the
# largest: their rounding, eps times the largest, is then at most 1e-8 of their own
_GRAM_SPREAD = 1e-8

__all__ = ["top_right_singular_vectors", "top_right_singular_vectors_streamed", "complete_basis"]


def top_right_singular_vectors(X: Any, rank: int) -> np.ndarray:
    """The top ``rank`` right singular vectors of X (n x d, dense or CSR, n < d) as an
    orthonormal d x rank matrix, never a d x d array. Where X has only k < rank non-zero
    singular values, the other rank - k columns complete the basis (``complete_basis``): X
    is zero on them, as on the null-space eigenvectors a d x d eigendecomposition would give.

    From the n x n Gram matrix ``X X^T = U diag(s^2) U^T``, ``V = X^T U / s``, made
    orthonormal again by a QR factorisation (``X^T U / s`` loses orthogonality along small
    singular values). The Gram matrix squares the singular values, so its eigenvectors of
    eigenvalues below ``_GRAM_SPREAD`` of the largest carry rounding of their own size; where
    the top ``rank`` reach there (rows sharing a large offset), a dense X takes the QR
    factorisation of ``X^T`` and the SVD of its n x n factor instead (O(n^2 d), as the Gram
    matrix, but holding the d x n factor Q), while a CSR X keeps the Gram matrix, to stay
    sparse. X is first brought to a largest ``|x|`` in [0.5, 1) by a power of two (the
    singular vectors do not depend on its scale, the Gram matrix's range does)."""
    A = X.astype(np.float64)
    sparse = hasattr(A, "tocsr")
    top = float(np.abs(A.data if sparse else A).max(initial=0.0))
    if top == 0.0:
        return complete_basis(np.zeros((X.shape[1], 0)), rank)
    A = A * np.ldexp(1.0, -int(np.frexp(top)[1]))
    gram = A @ A.T
    gram = gram.toarray() if hasattr(gram, "toarray") else np.asarray(gram)
    evals, U = np.linalg.eigh(0.5 * (gram + gram.T))
    best = np.argsort(evals)[::-1][:rank]
    floor = evals.max(initial=0.0) * gram.shape[0] * np.finfo(float).eps
    if not sparse and evals[best].min() < _GRAM_SPREAD * evals.max():
        Q, R = np.linalg.qr(A.T)
        Ur, s, _ = np.linalg.svd(R)
        k = int(np.count_nonzero(s[:rank] > s[0] * max(A.shape) * np.finfo(float).eps))
        Q = np.ascontiguousarray(Q @ Ur[:, :k])
        return np.ascontiguousarray(complete_basis(Q, rank) if k < rank else Q)
    best = best[evals[best] > floor]
    Q, R = np.linalg.qr(np.asarray(A.T @ U[:, best]) / np.sqrt(evals[best]))
    Q = Q * np.where(np.diag(R) < 0, -1.0, 1.0)
    return np.ascontiguousarray(complete_basis(Q, rank) if best.size < rank else Q)


def top_right_singular_vectors_streamed(X: Any, rank: int) -> np.ndarray:
    """The top ``rank`` right singular vectors of X (a ``RowSource``, n x d) as an
    orthonormal d x rank matrix, in one pass over its row blocks and O(d^2) memory.

    With mu the rows' mean and ``C = (X - 1 mu^T)^T (X - 1 mu^T)``, ``X^T X = C + n mu mu^T =
    B^T B`` for ``B = [diag(sqrt(c)) U^T; sqrt(n) mu^T]`` ((d + 1) x d; ``C = U diag(c) U^T``),
    and X's right singular vectors are B's. The SVD of B holds X's singular values, not
    their squares: the eigendecomposition of ``X^T X`` itself rounds every eigenvalue by eps
    times the largest, so where the rows share a large offset (X + 1e8) the directions of
    their spread, sqrt(eps) times weaker, would be lost in that rounding. Dense blocks are
    shifted by the first block's mean before their products (C's sum then carries the
    spread's rounding, not the offset's); CSR blocks are multiplied as they are, to stay
    sparse, and centred only through C's formula."""
    d = X.shape[1]
    gram = np.zeros((d, d))
    total = np.zeros(d)  # column sums of the shifted rows
    shift = np.zeros(d)
    n = 0
    for start, blk in X.blocks():
        b = blk.astype(np.float64)
        if hasattr(b, "tocsr"):
            g = b.T @ b
            gram += g.toarray() if hasattr(g, "toarray") else g
            total += np.asarray(b.sum(axis=0)).ravel()
        else:
            if start == 0:
                shift = b.mean(axis=0)
            b = b - shift
            gram += b.T @ b
            total += b.sum(axis=0)
        n += b.shape[0]
    mean = total / max(n, 1)
    C = gram - n * np.outer(mean, mean)  # the centred rows' Gram matrix
    c, U = np.linalg.eigh(0.5 * (C + C.T))
    B = np.vstack([(U * np.sqrt(np.maximum(c, 0.0))).T, np.sqrt(n) * (shift + mean)])
    Vt = np.linalg.svd(B, full_matrices=False)[2]
    return np.ascontiguousarray(Vt[:rank].T)


def complete_basis(Q: np.ndarray, rank: int) -> np.ndarray:
    """``[Q, C]``: Q (d x k, orthonormal columns) completed to ``rank <= d`` orthonormal
    columns, in O(d rank) memory.

    C is the Gram-Schmidt orthogonalisation, against Q, of the coordinate vectors ``e_j``
    farthest from span(Q) (residual ``1 - ||Q[j]||^2``, ties to the lower index): a
    deterministic choice, so that the same X gives the same basis, and the best-conditioned
    one the coordinates offer. The ``rank - k`` farthest are orthogonalised at once (two
    block projections and a QR factorisation: BLAS-3); where one of them loses more than half
    its residual to the others, the columns are built one at a time instead, and a coordinate
    whose residual collapses is skipped for the next one.
    """
    d, k = Q.shape
    residual = 1.0 - np.einsum("ij,ij->i", Q, Q)
    order = np.argsort(-residual, kind="stable")
    J = order[: rank - k]
    C = np.zeros((d, J.size))
    C[J, np.arange(J.size)] = 1.0
    for _ in range(2):  # twice is enough (Kahan): orthogonal to working precision
        C -= Q @ (Q.T @ C)
    Qc, R = np.linalg.qr(C)
    kept = np.abs(np.diag(R))
    if (kept > 0.5 * np.sqrt(np.maximum(residual[J], 0.0))).all() and (kept > 1e-8).all():
        return np.ascontiguousarray(np.hstack([Q, Qc * np.where(np.diag(R) < 0, -1.0, 1.0)]))
    out = np.empty((d, rank))
    out[:, :k] = Q
    filled = k
    used = np.zeros(d, dtype=bool)
    # first only coordinates that keep half their residual (well conditioned), then any left
    for keep in (0.5, 1e-6):
        for j in order:
            if filled == rank:
                return out
            if used[j]:
                continue
            v = -(out[:, :filled] @ out[j, :filled])
            v[j] += 1.0
            for _ in range(2):  # twice is enough (Kahan): orthogonal to working precision
                v -= out[:, :filled] @ (out[:, :filled].T @ v)
            norm = float(np.linalg.norm(v))
            if norm > keep * np.sqrt(max(residual[j], 0.0)) and norm > 1e-8:
                out[:, filled] = v / norm
                used[j] = True
                filled += 1
    if filled < rank:  # pragma: no cover - d coordinate vectors span R^d
        raise RuntimeError(f"could not complete {k} columns to {rank} in R^{d}")
    return out
