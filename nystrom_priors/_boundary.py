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


def _warn_quadratic(
    entries: int, what: str, remedy: str, stacklevel: int = 3, peak: float = 1.0
) -> None:
    """Warn, before it is allocated, about a dense block whose size is quadratic in n;
    ``peak``: the memory its construction holds at once, in units of the block."""
    if entries > _QUADRATIC_ENTRIES:
        mib = entries * 8 / 2**20
        at_peak = f"; about {peak * mib:,.0f} MiB while it is built" if peak > 1 else ""
        warnings.warn(
            f"BCDNPKL: {what}: {entries:,} float64 entries ({mib:,.0f} MiB{at_peak}); "
            f"time and memory grow with the square of the samples it spans. {remedy}",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


# Conjugate gradients on Delta_UU: relative residual reached, and the largest iteration count
# (from the spectral bound) for which CG is preferred to a sparse factorisation
_CG_RTOL = 1e-12
_CG_MAX_ITER = 100


def _cg_iterations(delta: float) -> int:
    """Iterations after which CG's residual on ``Delta_UU`` is below ``_CG_RTOL`` (relative).

    ``Delta = (1 + delta) I - D^-1/2 S D^-1/2`` has its spectrum in ``[delta, 2 + delta]``
    (the normalised adjacency's lies in [-1, 1]), and so has its principal block Delta_UU
    (Cauchy interlacing). With ``kappa = (2 + delta) / delta`` the A-norm error contracts by
    ``rho = (sqrt(kappa) - 1) / (sqrt(kappa) + 1)`` per iteration (times 2), and the residual
    is within ``sqrt(kappa)`` of it.
    """
    with np.errstate(over="ignore"):  # kappa = inf for a subnormal delta
        kappa = (2.0 + delta) / delta
    if not np.isfinite(kappa):
        return np.iinfo(np.int32).max
    rho = (np.sqrt(kappa) - 1.0) / (np.sqrt(kappa) + 1.0)
    if rho <= 0.0:
        return 1
    if rho >= 1.0:  # delta below float resolution of 2 + delta
        return np.iinfo(np.int32).max
    return int(np.ceil(np.log(_CG_RTOL / (2.0 * np.sqrt(kappa))) / np.log(rho)))


class _CGSolver:
    """``Delta_UU^-1 B`` by conjugate gradients, column by column (vectorised over columns).

    Each iteration is one sparse product, so time and memory are linear in the samples,
    where a sparse LU of a k-NN graph's Laplacian fills in faster than linearly (its
    separators grow with the data's dimension). A converged column is frozen, so a column's
    result does not depend on the others in its block. Should CG not reach ``_CG_RTOL``
    within twice its bound (round-off), the solver factorises instead: slower, never wrong.
    """

    def __init__(self, A: Any, delta: float) -> None:
        self.A = A.tocsr()
        self.max_iter = 2 * _cg_iterations(delta) + 10
        self._direct: Any = None

    def __call__(self, b: np.ndarray) -> np.ndarray:
        B = np.asarray(b, dtype=np.float64)
        if B.ndim == 1:
            return self(B[:, None])[:, 0]
        if self._direct is not None:
            return self._direct(B)
        X = np.zeros_like(B)
        R = B.copy()
        P = R.copy()
        rr = np.einsum("ij,ij->j", R, R)
        stop = _CG_RTOL**2 * rr
        for _ in range(self.max_iter):
            active = rr > stop
            if not active.any():
                return X
            AP = self.A @ P
            pap = np.einsum("ij,ij->j", P, AP)
            alpha = np.divide(rr, pap, out=np.zeros_like(rr), where=active & (pap > 0))
            X += P * alpha
            R -= AP * alpha
            rn = np.einsum("ij,ij->j", R, R)
            beta = np.divide(rn, rr, out=np.zeros_like(rr), where=active)
            P *= beta
            P += R
            rr = np.where(active, rn, rr)
        if np.all(rr <= stop):
            return X
        self._direct = _sparse_spd_solver(self.A)
        return self._direct(B)


def _sparse_spd_solver(A: Any) -> Any:
    """A sparse LU of the symmetric positive definite A, as a solve function."""
    from scipy.sparse.linalg import splu

    # a symmetric fill-reducing ordering without pivoting is an LDL^T factorisation, stable
    # for SPD matrices, with less fill than splu's default column ordering, which is chosen
    # for unsymmetric matrices
    return splu(
        A.tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options={"SymmetricMode": True},
    ).solve


class _BoundarySystem:
    """Delta split on (L, U): the Schur complement ``Dt = A - W^T W`` and the harmonic map
    ``Q = [I; -Delta_UU^-1 Delta_UL]`` applied to vectors, from one factorisation of Delta_UU.

    Only the frontier F (constrained samples with an unconstrained neighbour) sees the
    correction ``Delta_LU Delta_UU^-1 Delta_UL``, a dense |F| x |F| block of rank <= |U|. When
    |U| < |F| (most samples constrained) it is kept as ``W^T W`` with ``W = chol(Delta_UU)^-1
    Delta_UL`` (|U| x l): a BCD column then costs O((nnz + |U|) r) instead of O(|F| r).
    Otherwise the block is added to the sparse ``Delta_LL`` and W has no rows.

    ``delta``: the Laplacian's regularisation, when Delta is BCDNPKL's. It bounds Delta_UU's
    condition number by ``(2 + delta) / delta``; where that bound lets conjugate gradients
    converge in at most ``_CG_MAX_ITER`` iterations (delta >= 0.047, the default C = 1 gives
    0.5: about 30), a sparse Delta_UU is solved by CG, linear in the samples; otherwise, or
    without ``delta``, by a sparse LU.
    """

    def __init__(
        self,
        Delta,
        L: np.ndarray,
        block: int = 256,
        lowrank_limit: int = 4000,
        delta: float | None = None,
    ) -> None:
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
            peak=1.0 if lowrank else 3.5,  # the block, its column indices, the sum, solves
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
            if delta is not None and _cg_iterations(delta) <= _CG_MAX_ITER:
                self._solve = _CGSolver(D_UU, delta)
            else:
                self._solve = _sparse_spd_solver(D_UU)
        else:
            from scipy.linalg import cho_factor, cho_solve

            cf = cho_factor(D_UU)
            self._solve = lambda b: cho_solve(cf, b)
        corr = np.zeros((frontier.size, frontier.size))
        B = self.D_UL[:, frontier]
        # the right-hand sides (and CG's work arrays) are |U| x block dense: at most 32 MiB each
        block = max(1, min(block, _QUADRATIC_ENTRIES // max(1, self.U.size)))
        for s in range(0, frontier.size, block):
            X = self._solve(B[:, s : s + block].toarray())  # Delta_UU^-1 Delta_UF
            corr[:, s : s + block] = B.T @ X
        # -C as CSR straight from the block (its rows at the frontier, each holding every
        # frontier column, sorted): a COO matrix with int64 row and column arrays and its
        # conversion held about twice as much again
        np.negative(corr, out=corr)
        F = frontier.size
        idx = np.int32 if max(L.size, F * F) < 2**31 else np.int64  # indptr ends at F^2
        indptr = np.zeros(L.size + 1, dtype=idx)
        indptr[frontier + 1] = F
        np.cumsum(indptr, out=indptr)
        C = sp.csr_matrix(
            (corr.reshape(-1), np.tile(frontier.astype(idx), F), indptr),
            shape=(L.size, L.size),
        )
        del corr
        self.A = (D_LL + C).tocsr()
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


def boundary_kernel(Delta, L: Any, delta: float | None = None) -> tuple[Any, _BoundarySystem]:
    """Schur complement ``Delta_LL - Delta_LU Delta_UU^-1 Delta_UL`` (sparse CSR) and the
    boundary system that applies Q. ``delta``: Delta's regularisation if it is
    ``normalized_laplacian(S, delta)`` (enables the conjugate-gradient solve)."""
    L = np.unique(np.asarray(L, dtype=np.int64))
    sys_ = _BoundarySystem(Delta, L, delta=delta)
    return sys_.Dt, sys_
