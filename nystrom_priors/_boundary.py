"""BCDNPKL's boundary kernel: the graph Laplacian split on constrained (L) and unconstrained
(U) samples.

The SDP's unconstrained block is optimal at the harmonic extension, so the problem reduces to
the Schur complement ``Delta_LL - Delta_LU Delta_UU^-1 Delta_UL`` on the constrained samples
(``_BoundarySystem``), and a factor V on L extends to all n samples by ``Q V``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

# a dense block of more float64 entries than this (32 MiB) is named in a warning: its size
# grows with the square of the samples (or constrained samples) it spans
_QUADRATIC_ENTRIES = 1 << 22


def _warn_quadratic(entries: int, what: str, remedy: str, stacklevel: int = 3) -> None:
    """Warn, before it is allocated, about a dense block whose size is quadratic in n."""
    if entries > _QUADRATIC_ENTRIES:
        warnings.warn(
            f"BCDNPKL: {what}: {entries:,} float64 entries ({entries * 8 / 2**20:,.0f} MiB); "
            f"time and memory grow with the square of the samples it spans. {remedy}",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


class _BoundarySystem:
    """Delta split on (L, U): the Schur complement ``Dt = A - W^T W`` and the harmonic map
    ``Q = [I; -Delta_UU^-1 Delta_UL]`` applied to vectors, from one factorisation of Delta_UU.

    Only the frontier F (constrained samples with an unconstrained neighbour) sees the
    correction ``Delta_LU Delta_UU^-1 Delta_UL``, a dense |F| x |F| block of rank <= |U|. When
    |U| < |F| (most samples constrained) it is kept as ``W^T W`` with ``W = chol(Delta_UU)^-1
    Delta_UL`` (|U| x l): a BCD column then costs O((nnz + |U|) r) instead of O(|F| r).
    Otherwise the block is added to the sparse ``Delta_LL`` and W has no rows.
    """

    def __init__(self, Delta, L: np.ndarray, block: int = 256, lowrank_limit: int = 4000) -> None:
        import scipy.sparse as sp

        n = Delta.shape[0]
        self.n = n
        self.L = L
        mask = np.zeros(n, dtype=bool)
        mask[L] = True
        self.U = np.flatnonzero(~mask)
        sparse = sp.issparse(Delta)
        if sparse:
            Delta = Delta.tocsr()
            D_LL = Delta[L][:, L]
            self.D_UL = Delta[self.U][:, L].tocsc()
        else:
            D_LL = sp.csr_matrix(Delta[np.ix_(L, L)])
            self.D_UL = sp.csc_matrix(Delta[np.ix_(self.U, L)])
        self.Wt = np.zeros((L.size, 0))
        if self.U.size == 0:
            self.A = D_LL.tocsr()
            self._solve = None
            return
        frontier = np.flatnonzero(np.diff(self.D_UL.indptr) > 0)
        self.frontier = frontier
        lowrank = self.U.size < frontier.size and self.U.size <= lowrank_limit
        _warn_quadratic(
            self.U.size * (self.U.size + L.size) if lowrank else frontier.size**2,
            f"the constraints touch {L.size} samples, {frontier.size} of them next to "
            "unconstrained samples: the boundary kernel's dense block holds",
            "Fewer constrained samples (fewer pairs, or a smaller n_constraints with y) keep "
            "it small.",
            stacklevel=4,
        )
        D_UU = Delta[self.U][:, self.U] if sparse else Delta[np.ix_(self.U, self.U)]
        if lowrank:
            from scipy.linalg import cho_factor, cho_solve, solve_triangular

            dense_UU = D_UU.toarray() if sparse else np.asarray(D_UU)
            cf = cho_factor(dense_UU, lower=True)
            self._solve = lambda b: cho_solve(cf, b)
            Lc = np.tril(cf[0])
            W = solve_triangular(Lc, self.D_UL.toarray(), lower=True)  # |U| x l
            self.Wt = np.ascontiguousarray(W.T)
            self.A = D_LL.tocsr()
            return
        if sparse:
            from scipy.sparse.linalg import splu

            self._solve = splu(D_UU.tocsc()).solve
        else:
            from scipy.linalg import cho_factor, cho_solve

            cf = cho_factor(D_UU)
            self._solve = lambda b: cho_solve(cf, b)
        corr = np.zeros((frontier.size, frontier.size))
        B = self.D_UL[:, frontier]
        for s in range(0, frontier.size, block):
            X = self._solve(B[:, s : s + block].toarray())  # Delta_UU^-1 Delta_UF
            corr[:, s : s + block] = B.T @ X
        C = sp.coo_matrix(
            (corr.ravel(), (np.repeat(frontier, frontier.size), np.tile(frontier, frontier.size))),
            shape=(L.size, L.size),
        )
        self.A = (D_LL - C).tocsr()
        self.A.sum_duplicates()

    @property
    def Dt(self):
        """The Schur complement as a scipy CSR matrix (dense block included)."""
        import scipy.sparse as sp

        if self.Wt.shape[1] == 0:
            return self.A
        return sp.csr_matrix(self.A.toarray() - self.Wt @ self.Wt.T)

    def extend(self, V: np.ndarray) -> np.ndarray:
        """G = Q V: rows of V for L, ``-Delta_UU^-1 Delta_UL V`` for U."""
        G = np.empty((self.n, V.shape[1]))
        G[self.L] = V
        if self.U.size:
            G[self.U] = -self._solve(self.D_UL @ V)
        return G


def boundary_kernel(Delta, L: Any) -> tuple[Any, _BoundarySystem]:
    """Schur complement ``Delta_LL - Delta_LU Delta_UU^-1 Delta_UL`` (sparse CSR) and the
    boundary system that applies Q."""
    L = np.unique(np.asarray(L, dtype=np.int64))
    sys_ = _BoundarySystem(Delta, L)
    return sys_.Dt, sys_
