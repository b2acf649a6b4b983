"""Generalized Nystrom with priors (Zhang, Lan, Liu, Rauber & Moerchen, ICML 2012).

The Nystrom kernel ``E W^+ E^T`` is a *dictionary kernel* ``W^+`` on m landmarks, extrapolated
bilaterally to any pair of samples through ``E = k(X, Z)``. Instead of the unsupervised
dictionary ``S0 = W^+``, learn an m x m PSD ``S`` that agrees with the side information while
staying close to the prior:

    min_{S >= 0}  J(S) = lam ||S - S0||_F^2 + ||T o (E_I S E_I^T) - K*||_F^2

* labels (``y``, -1 = unlabeled): I = labeled rows, T = all ones, ``K* = Y Y^T`` (one-hot Y);
* pairs: I = constrained rows, T = 1 on the pairs (both orders) and on the diagonal of I,
  ``K*_ij = 1`` for must-link (and i = j), 0 for cannot-link. With every pair among labeled
  samples this is exactly the labeled problem.

Everything is m x m: with ``M = E_l^T E_l`` and ``R = (E_l^T Y)(Y^T E_l)``,
``J(S) = lam ||S - S0||^2 + tr(S M S M) - 2 tr(S R) + ||K*||^2`` and
``grad J = 2 lam (S - S0) + 2 (M S M - R)``; the pair part costs O(|pairs| m + |I| m^2) per
gradient through a sparse mask and never forms an |I| x |I| matrix.

Solvers
-------
``"auto"`` (default)
    ``"newton"`` when the dual is the smaller problem (fewer constrained entries than entries
    of S: l < m for labels), ``"apg"`` otherwise (see ``_auto_solver`` for the measurements);
    ``"apg"`` on the full m x m cross-validation folds of ``lam="auto"`` (solved to 1e-3 and
    warm-started along the path, where APG's cheap steps win: sklearn digits, m = 180, fit 31 s
    vs 79 s with Newton folds). Measured on
    sklearn digits, m = 400, 100 labels, certified 1e-6: Newton 16 / 36 / 67 steps at
    lam = mu_max^2 * 1e-6 / 1e-8 / 1e-10 (cold starts below 1e-4 take one step, then descend
    the grid, see ``_solve_lam``) where APG needs 85 / 374 / 600 (results/bench_generalized.md).
    On restricted CV folds (p ~ 160, 1e-3) warm-started Newton took 356 steps for 130
    solves where APG took 6061 (3.1 vs 18.7 s).
``"apg"``
    Accelerated projected gradient (FISTA with gradient restarts) in preconditioned
    coordinates. In M's eigenbasis (M = U diag(mu) U^T) the labeled objective is
    ``sum_ij (lam + mu_i mu_j)(S~_ij - c_ij)^2``: a weighted distance to the unconstrained
    optimum, with condition number ~ mu_max^2 / lam. The congruence
    ``V = D S~ D``, ``D = diag((lam + mu_i^2)^(1/4))``, keeps the PSD cone and bounds the weights
    in ``(sqrt(lam)/mu_max, 1]``: condition number ~ mu_max / sqrt(lam), Lipschitz constant 2.
``"pgd"``
    The paper's method: gradient mapping with Armijo-Goldstein backtracking (Sec. 3.4) in the
    original coordinates. Note the paper's eq. (7) writes ``+eta grad``: the descent step is
    ``S <- P_psd(S - grad / A)``.
``"newton"``
    Semismooth Newton-CG on the dual (see ``_Dual``): the dual lives on the constrained entries
    only (l^2 values for l labels), is unconstrained and strongly concave, and every dual point
    gives a PSD primal ``S = P_psd(S0 - A*(R)/lam)`` and an exact duality gap. Typically 5-50
    Newton steps (one m x m eigendecomposition each) where APG needs hundreds to thousands; at
    tiny lam, where the dual is badly scaled, it hands its last primal iterate to APG.
``"ipm"`` (labels only)
    Primal log-barrier path following with Newton-CG steps (see ``_solve_ipm``). Its step
    count depends on the length of the barrier path, hardly on lam: at most 60 steps on the
    m = 15-30 problems at every lam, 41-71 on digits m = 400 from mu_max^2 * 1e-6 to 1e-12
    (Newton: 1356 and APG: 1330 at 1e-12); but each step runs tens of CG products, so it only
    ties APG at 1e-12 (31.8 vs 29.9 s) and above that Newton wins (4.9 vs 25.7 s at 1e-10).

Both stop on a certified criterion: for labels the exact Lagrangian duality gap (the dual of a
weighted quadratic over the PSD cone has a closed form), for pairs the projected-gradient (KKT)
residual. Never on the relative decrease of J, which stops 1e-3..1e-1 above the optimum.

Choosing lam
------------
``lam`` is searched on ``mu_max^2 * 10^e`` (``mu_max`` = largest eigenvalue of M), warm-started
along the path from large to small lam.

``"nka"``
    The paper's eq. (12): maximise ``rho(S, S0) * rho(E_l S E_l^T, K*)`` (centred alignment).
    When W is ill-conditioned ``rho(S, S0)`` stays ~1 for every lam and the rule degenerates
    to the smallest lam of the grid.
``"auto"`` (default)
    Stratified k-fold cross-validation on the labeled samples only, over two independent
    splits: S is refitted on each training fold along the same grid of exponents e (on the
    fold's own scale ``mu_max^2``: fewer labels, a smaller data term), a squared-hinge linear
    SVM (C = 1, intercept; the classifier of the paper's protocol) is trained on the factor
    rows of the training fold, and its hinge loss on the held-out fold is recorded.
    The lam minimising the mean loss, smoothed over neighbouring grid points, is chosen. A
    continuous loss instead of the 0/1 error: with ~100 labels a handful of held-out
    mistakes decide a 0/1 curve, and the one-standard-error rule then falls back to the
    prior where the learned kernel is clearly better. When the labeled rows of a training
    fold span at most half of the dictionary (many landmarks, few labels), each fold solves
    J restricted to ``S = S0 + V X V^T`` (see ``_reduced_fold``): exactly feasible, a p x p
    problem instead of m x m; the final S at the chosen lam is always the full solution.
    The folds run in parallel (numba's thread count, one-thread BLAS; needs threadpoolctl)
    with results independent of the thread count. The small lam that cannot win are
    skipped: the first split stops its path once the loss has risen well past its minimum
    (``_path_exhausted``), the second races the first (``_race_keep``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ._base import BaseEstimator, FactorTransformMixin
from ._validation import check_option, check_random_state, check_scalar
from .kernel_alignment import _dense, _factored
from .exceptions import ConvergenceWarning
from .nystrom import _LandmarkKernelMixin
from .side_info import check_labels, check_pairs

__all__ = ["GeneralizedNystrom"]

_EPS = np.finfo(np.float64).eps
_CV_TOL = 1e-3
# Newton's continuation for cold starts below mu_max^2 * this (see _solve_lam)
_HOMOTOPY_START = 1e-4
# ... after this many cold steps: one step solves the dual exactly when the PSD constraint is
# inactive; otherwise a cold start rarely beats the continuation (see _solve_lam)
_COLD_STEPS = 1
# lam="auto": independent k-fold splits averaged; the held-out SVM's Newton step limit
_CV_SPLITS = 2
# later CV splits skip the small lam whose smoothed loss is > 20% above the minimum (_race_keep)
_CV_RACE = 0.2
# ... and the first split stops once this many consecutive lam score > 20% above its best so far
_CV_PATIENCE = 2
_SVM_MAX_ITER = 100
# APG steps project from the negative eigenpairs only while fewer than this fraction of m
_FEW_NEGATIVE = 0.1


def _sym(A: np.ndarray) -> np.ndarray:
    return 0.5 * (A + A.T)


def _psd_project(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Euclidean projection onto the PSD cone; returns (P, eigenvalues, eigenvectors) of A."""
    lam, U = np.linalg.eigh(_sym(A))
    pos = np.maximum(lam, 0.0)
    return (U * pos) @ U.T, lam, U


def _psd_project_few_negative(A: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """The projection of ``_psd_project`` from the non-positive eigenpairs only, their number
    and their eigenvectors (which span the null space of P: the certificate's null candidate).

    ``P = A - U_- diag(w_-) U_-^T`` with LAPACK's MRRR (``syevr``) restricted to the values
    ``(-inf, 0]``: the tridiagonal reduction plus k eigenvectors instead of all m. Measured
    (one thread, random spectra): m = 1000, k = 20 / 100 / 300: 3.9 / 2.0 / 1.05x faster than
    the full ``eigh``; m = 400, k = 8 / 40 / 80: 2.9 / 1.6 / 0.85x; m = 180, k = 18: 1.3x.
    """
    from scipy.linalg import eigh

    A = _sym(A)
    w, U = eigh(A, driver="evr", subset_by_value=(-np.inf, 0.0), check_finite=False)
    return A - (U * w) @ U.T, int(w.size), U


class _Problem:
    """The quadratic J(S) for fixed data: labels part (E_l, Y) and sparse pairs part.

    Parameters
    ----------
    S0 : (m, m) prior.
    El, Y : labeled extrapolation rows (l, m) and one-hot labels (l, c), or None.
    Ep, a, b, t : rows of E for the points of the sparse part (p, m) and the ordered entries
        (a[k], b[k]) of the mask with targets t[k], or None.
    offset : (m, m) or None
        Labels only: the data term is taken at ``S + offset``, i.e.
        ``||E_l (S + offset) E_l^T - K*||^2`` (the restricted problems of lam="auto").

    With more labeled rows than landmarks, ``El`` / ``Y`` hold an equivalent compressed labels
    term (``_compress_labels``, at most m rows) and ``loss_shift`` the constant it drops;
    ``El_labels`` / ``Y_labels`` keep the rows as given.
    """

    def __init__(self, S0, El=None, Y=None, Ep=None, a=None, b=None, t=None, offset=None):
        self.S0 = S0
        self.offset = offset
        self.m = S0.shape[0]
        self.El = El
        self.Y = Y
        self.has_labels = El is not None
        self.has_pairs = Ep is not None
        self.const = 0.0
        # the data term below is exact for these; El / Y may be swapped for a compressed
        # equivalent (more labels than landmarks), ``loss_shift`` the constant that swap drops
        self.El_labels, self.Y_labels = El, Y
        self.loss_shift = 0.0
        R = np.zeros((self.m, self.m))
        Mpre = np.zeros((self.m, self.m))
        if self.has_labels:
            C = El.T @ Y
            R += C @ C.T
            self.M = El.T @ El
            if offset is not None:
                R -= self.M @ offset @ self.M
            Mpre += self.M
            counts = Y.sum(axis=0)
            self.const += float(np.sum(counts**2))
            if El.shape[0] > self.m:
                self.El, self.Y, self.loss_shift = _compress_labels(El, Y)
        if self.has_pairs:
            import scipy.sparse as sp

            self.Ep, self.a, self.b, self.t = Ep, a, b, t
            p = Ep.shape[0]
            self.T = sp.csr_matrix((t, (a, b)), shape=(p, p))
            R += Ep.T @ (self.T @ Ep)
            self.const += float(np.sum(t**2))
            density = a.size / float(p * p)
            Mpre += np.sqrt(density) * (Ep.T @ Ep)
        self.R = _sym(R)
        self.Mpre = _sym(Mpre)
        self.separable = self.has_labels and not self.has_pairs
        # M's eigenbasis (the APG preconditioner) costs an m x m eigh; the dual Newton never
        # needs it, so it is built on first use. mu_max alone comes from the smaller Gram
        # matrix B B^T when Mpre = B^T B has fewer rows than m (100 labels, m = 1000: 0.2 s saved).
        rows = [El] if self.has_labels else []
        if self.has_pairs:
            rows.append(density**0.25 * Ep)
        B = np.vstack(rows)
        if B.shape[0] < self.m:
            self.mu_max = _top_gram_eig(B)
        else:
            self.mu_max = float(self.mu.max()) if self.mu.size else 0.0

    @functools.cached_property
    def _basis(self) -> tuple:
        """(mu, U) of Mpre and, labels only, the lam-independent pieces S0 and R in that basis."""
        mu, U = np.linalg.eigh(self.Mpre)
        if not self.separable:
            return np.maximum(mu, 0.0), U, None, None
        return np.maximum(mu, 0.0), U, U.T @ self.S0 @ U, U.T @ self.R @ U

    mu = property(lambda self: self._basis[0])
    U = property(lambda self: self._basis[1])
    S0t = property(lambda self: self._basis[2])
    Rt = property(lambda self: self._basis[3])

    # ----- J and its gradient in the original coordinates -------------------------------------
    def loss(self, S: np.ndarray) -> float:
        val = 0.0
        if self.has_labels:
            K = self.El @ (S if self.offset is None else S + self.offset) @ self.El.T
            YYt = self.Y @ self.Y.T
            val += float(np.sum((K - YYt) ** 2)) + self.loss_shift
        if self.has_pairs:
            F = self.Ep @ S
            vals = np.einsum("ij,ij->i", F[self.a], self.Ep[self.b])
            val += float(np.sum((vals - self.t) ** 2))
        return val

    def objective(self, S: np.ndarray, lam: float) -> float:
        return lam * float(np.sum((S - self.S0) ** 2)) + self.loss(S)

    def hess(self, S: np.ndarray) -> np.ndarray:
        H = np.zeros_like(S)
        if self.has_labels:
            H += self.El.T @ ((self.El @ S @ self.El.T) @ self.El)
        if self.has_pairs:
            import scipy.sparse as sp

            F = self.Ep @ S
            vals = np.einsum("ij,ij->i", F[self.a], self.Ep[self.b])
            Tv = sp.csr_matrix((vals, (self.a, self.b)), shape=self.T.shape)
            H += self.Ep.T @ (Tv @ self.Ep)
        return H

    def grad(self, S: np.ndarray, lam: float) -> np.ndarray:
        return _sym(2.0 * lam * (S - self.S0) + 2.0 * (self.hess(S) - self.R))


class _Coords:
    """Working coordinates S = Q V Q^T for one lam (congruence: V >= 0 iff S >= 0)."""

    def __init__(self, prob: _Problem, lam: float, precondition: bool):
        self.prob = prob
        self.lam = lam
        U, mu = prob.U, prob.mu
        if precondition:
            s = (lam + mu**2) ** 0.25
        else:
            s = np.ones_like(mu)
        self.s = s
        self.Q = U / s  # U diag(1/s)
        self.Qinv = (U * s).T  # diag(s) U^T
        if prob.separable:
            w = lam + np.outer(mu, mu)
            ss = np.outer(s, s)
            self.wa = w / ss**2  # weights a_ij of f(V) = sum a (V - b)^2 + const
            self.b = ss * (lam * prob.S0t + prob.Rt) / w
            self.lipschitz = 2.0 * float(self.wa.max())
            if precondition:
                # strong convexity is known exactly: Nesterov's constant momentum for
                # condition number kappa beats FISTA's t-sequence (measured: 10-40% fewer steps)
                q = np.sqrt(float(self.wa.min()) / float(self.wa.max()))
                self.momentum = (1.0 - q) / (1.0 + q)
        else:
            self.lipschitz = 2.0

    def to_S(self, V: np.ndarray) -> np.ndarray:
        return _sym(self.Q @ V @ self.Q.T)

    def to_V(self, S: np.ndarray) -> np.ndarray:
        return _sym(self.Qinv @ S @ self.Qinv.T)

    def f(self, V: np.ndarray) -> float:
        if self.prob.separable:
            return float(np.sum(self.wa * (V - self.b) ** 2))  # J minus a constant
        return self.prob.objective(self.to_S(V), self.lam)

    def grad(self, V: np.ndarray) -> np.ndarray:
        if self.prob.separable:
            return 2.0 * self.wa * (V - self.b)
        return _sym(self.Q.T @ self.prob.grad(self.to_S(V), self.lam) @ self.Q)

    def certificate(self, V: np.ndarray, G: np.ndarray, eig=None, extra=None, null=None,
                    tol: float | None = None) -> tuple[float, str]:
        """Certified optimality measure at a feasible V with gradient G.

        Separable (labels): the Lagrangian duality gap f(V) - g(Z), relative to J(S); ``g`` is
        the closed-form dual of the weighted quadratic, and for any Z >= 0 the gap equals
        ``sum (G - Z)^2 / (4a) + <Z, V>`` (dual residual plus complementarity), an upper bound
        on f(V) - min f. The smallest of three multipliers is reported: 0 (exact when the
        constraint is inactive); the PSD part of G on the null space of V (exact at an optimum
        with an active constraint, where the multiplier lives there); and ``P_psd(G)``. The first
        two keep the gap free of round-off where V is large: at lam >~ mu_max^2, ``P_psd(G)``
        of a gradient that is only round-off paired with V ~ sqrt(lam) S0 made the gap
        1e-5 to > 1 relative (measured), and every solver ran to max_iter. ``eig`` = (w, U) with
        ``V = U diag(w) U^T`` (from the projection that produced V) saves an eigh; ``null``, an
        orthonormal basis of V's null space (the clipped eigenvectors of a partial projection),
        saves it too. ``extra``: one more PSD multiplier to try (the barrier method's
        ``t V^-1``). With ``tol``, a value <= tol from the first two candidates is returned
        without the eigendecompositions of G and V: any Z >= 0 bounds the gap, so the value
        is still certified, only possibly larger than the full minimum (never above tol).
        Otherwise: the projected-gradient residual ||V - P_psd(V - G/L)|| * L relative to
        ||G|| + L ||V||.
        """
        if self.prob.separable:
            # f(V) - g(Z) = sum a (V-b)^2 + sum (Z^2/(4a) + Z b); substituting b = V - G/(2a)
            # gives the cancellation-free form below (no O(|b|) terms cancel)
            inv4a = 1.0 / (4.0 * self.wa)
            m = V.shape[0]
            J = self.prob.objective(self.to_S(V), self.lam)
            # round-off floor of the computed gap: G carries ~eps * a (|V| + |b|) per entry
            dG = _EPS * 2.0 * self.wa * (np.abs(V) + np.abs(self.b))
            noise = float(np.sum(dG * np.abs(V))) + m * _EPS * float(np.linalg.norm(G) * np.linalg.norm(V))

            def gap_of(Z):
                return float(np.sum((G - Z) ** 2 * inv4a) + np.sum(Z * V))

            def null_gap(Un):
                if Un.shape[1] == 0 or Un.shape[1] == m:
                    return np.inf
                return gap_of(Un @ _psd_project(Un.T @ G @ Un)[0] @ Un.T)

            def null_basis(w, U):
                return U[:, w <= m * _EPS * max(float(w.max(initial=0.0)), 0.0)]

            gap = float(np.sum(G * G * inv4a))  # Z = 0
            if extra is not None:
                gap = min(gap, gap_of(extra))
            short = tol is not None and (eig is not None or null is not None)
            if short:
                gap = min(gap, null_gap(null_basis(*eig) if eig is not None else null))
                if max(gap - noise, 0.0) <= tol * max(J, 1e-300):
                    return max(gap - noise, 0.0) / max(J, 1e-300), "gap"
            gap = min(gap, gap_of(_psd_project(G)[0]))
            if not (short and eig is not None):  # V's exact null space, unless tried above
                w, U = np.linalg.eigh(_sym(V)) if eig is None else eig
                gap = min(gap, null_gap(null_basis(w, U)))
            return max(gap - noise, 0.0) / max(J, 1e-300), "gap"
        L = self.lipschitz
        P = _psd_project(V - G / L)[0]
        res = L * float(np.linalg.norm(V - P))
        scale = float(np.linalg.norm(G)) + L * float(np.linalg.norm(V))
        return res / max(scale, 1e-300), "pgn"


def _solve(coords: _Coords, V0: np.ndarray, *, accelerate: bool, armijo: bool, tol: float, max_iter: int):
    """Projected gradient (FISTA with restart, or plain with Armijo-Goldstein backtracking).

    Returns (V, n_iter, certificate value, converged).
    """
    V, w0, _ = _psd_project(V0)
    Vprev = V
    momentum = getattr(coords, "momentum", None) if accelerate else None
    exact_L = coords.prob.separable and not armijo
    Y = V
    t = 1.0
    L = coords.lipschitz if not armijo else coords.lipschitz * 1e-3
    cert = np.inf
    it = 0
    # near a solution few eigenvalues of the step's argument are negative (measured along the
    # Table-1 and many-label paths: median 0-74 of 400-500). While fewer than _FEW_NEGATIVE * m
    # were at the previous step only those are computed (``_psd_project_few_negative``; the
    # break-even is ~m / 5 at m = 400, ~m / 3 at m = 1000); the certificate, every ~10 steps,
    # takes V's null space from the clipped eigenvectors and pays the eighs of G and V only
    # when the multipliers 0 and P_psd(G) on that null space do not certify tol
    few_cap = int(_FEW_NEGATIVE * V.shape[0])
    n_neg = int(np.count_nonzero(w0 < 0.0))

    def project(A):
        if n_neg <= few_cap:
            P, k, Un = _psd_project_few_negative(A)
            return P, k, None, Un
        P, w, U = _psd_project(A)
        return P, int(np.count_nonzero(w < 0.0)), (np.maximum(w, 0.0), U), None

    for it in range(1, max_iter + 1):
        gY = coords.grad(Y)
        if exact_L:  # separable labels: L is the exact Lipschitz constant, no line search
            Vn, n_neg, eig_n, null_n = project(Y - gY / L)
        fY = None if exact_L else coords.f(Y)
        while not exact_L:
            Vn, n_neg, eig_n, null_n = project(Y - gY / L)
            D = Vn - Y
            fV = coords.f(Vn)
            # sufficient decrease (Armijo-Goldstein / FISTA backtracking), slack for round-off
            if fV <= fY + float(np.sum(gY * D)) + 0.5 * L * float(np.sum(D * D)) + 1e-12 * abs(fY):
                break
            L *= 2.0
            if L > 1e30:  # pragma: no cover - only with a broken gradient
                raise FloatingPointError("step size underflow in the projected gradient solver")
        if accelerate:
            if float(np.sum(gY * (Vn - V))) > 0.0:  # gradient restart (O'Donoghue & Candes)
                t = 1.0
                Y = Vn
            elif momentum is not None:
                Y = Vn + momentum * (Vn - V)
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                Y = Vn + ((t - 1.0) / t_next) * (Vn - V)
                t = t_next
        else:
            Y = Vn
        Vprev, V, eig, null = V, Vn, eig_n, null_n
        step = float(np.linalg.norm(V - Vprev))
        # the certificate costs an eigendecomposition: check when the iterates settle
        if step <= min(10 * tol, 1e-5) * max(1.0, float(np.linalg.norm(V))) or it % 10 == 0 or it == max_iter:
            cert, _ = coords.certificate(V, coords.grad(V), eig, null=null, tol=tol)
            if cert <= tol:
                return V, it, cert, True
        if armijo:
            L = max(L * 0.5, 1e-12)  # let the step grow again (Nemirovski's gradient mapping)
    return V, it, cert, False


def _solve_ipm(coords: _Coords, V0: np.ndarray, *, tol: float, max_iter: int, shrink: float = 0.1,
               center: float = 0.5, cg_rtol: float = 0.01, cg_max: int = 500):
    """Primal log-barrier path following with Newton-CG (separable labels problems only).

    In the preconditioned coordinates the problem is ``min sum a (V - b)^2`` over ``V >= 0``
    (see ``_Coords``). For a decreasing barrier weight t, Newton's method minimises

        phi_t(V) = sum a (V - b)^2 - t log det V,

    whose Hessian ``D -> 2 a o D + t V^-1 D V^-1`` is the elementwise weight of the quadratic
    (diagonal in M's eigenbasis) plus the barrier's Kronecker term (diagonal in V's eigenbasis).
    Newton directions come from CG in V's eigenbasis, preconditioned by the exact diagonal of
    the Hessian there, ``2 (Q o Q)^T a (Q o Q) + t / (w_i w_j)``; the step to the boundary and
    phi along the step have closed forms from the eigenvalues of ``V^-1/2 D V^-1/2``. Once
    centred (Newton decrement < 1/2), t shrinks by ``shrink`` and a predictor step follows
    the central path's tangent ``H dV = V^-1 dt``. ``Z = t V^-1`` is a PSD multiplier, an
    extra candidate of the duality-gap certificate. Unlike the projected gradient, whose
    iterations grow with the condition number ~ mu_max / sqrt(lam), the number of Newton steps
    depends on the path length only (digits, m = 400, lam = mu_max^2 * 1e-12: 65 steps and
    1955 CG products, 31.8 s, where APG needs 1330 steps, 29.9 s; results/bench_generalized.md).
    Returns (V, n_iter, certificate value, converged); the iterates stay positive definite.
    The CG products are counted in ``coords.cg_products`` (for the benchmarks).
    """
    a, b = coords.wa, coords.b
    coords.cg_products = 0
    m = a.shape[0]
    w, Q = np.linalg.eigh(_sym(V0))
    # a start that is already optimal (closed form at large lam, warm starts) costs no step
    wp = np.maximum(w, 0.0)
    Vp = (Q * wp) @ Q.T
    cert = coords.certificate(Vp, coords.grad(Vp), (wp, Q))[0]
    if cert <= tol:
        return Vp, 0, cert, True
    top = float(w.max(initial=0.0))
    top = top if top > 0.0 else max(float(np.abs(b).max(initial=0.0)), 1e-300)
    # strictly inside the cone; the gap of V0 itself is lost, the path restarts from here
    w = wp + 1e-3 * top
    V = (Q * w) @ Q.T
    G = 2.0 * a * (V - b)
    f = float(np.sum(a * (V - b) ** 2))
    t = abs(float(np.sum(G * V))) / m + 1e-3 * f / m

    def newton_direction(rhs, w, Q, t):
        """CG for H D = rhs in V's eigenbasis; returns (D in that basis, CG products)."""
        Q2 = Q * Q
        bar = t / np.outer(w, w)
        diag = 2.0 * (Q2.T @ a @ Q2) + bar
        rt = Q.T @ rhs @ Q
        X = np.zeros_like(rt)
        r = rt.copy()
        z = r / diag
        p = z
        rz = float(np.sum(r * z))
        goal = cg_rtol * float(np.linalg.norm(rt))
        for k in range(1, cg_max + 1):
            Hp = Q.T @ (2.0 * a * (Q @ p @ Q.T)) @ Q + bar * p
            pHp = float(np.sum(p * Hp))
            if not pHp > 0.0:  # round-off at the end of the path
                break
            alpha = rz / pHp
            X += alpha * p
            r -= alpha * Hp
            if float(np.linalg.norm(r)) <= goal:
                break
            z = r / diag
            rz_new = float(np.sum(r * z))
            p = z + (rz_new / rz) * p
            rz = rz_new
        return _sym(X), k

    def to_boundary(Xt, w, fraction):
        """Eigenvalues om of V^-1/2 D V^-1/2 (D given in V's eigenbasis) and the step that
        keeps ``fraction`` of the distance to the boundary of the cone."""
        s_w = 1.0 / np.sqrt(w)
        om = np.linalg.eigvalsh(_sym(Xt * np.outer(s_w, s_w)))
        return om, (1.0 if om.min() >= 0 else min(1.0, fraction / -float(om.min())))

    def step_to(Xt, w, g_dot, quad, t):
        """Largest damped step along D decreasing phi_t (Armijo), 0 if there is none."""
        om, s = to_boundary(Xt, w, 0.99)
        slope = g_dot - t * float(np.sum(om))  # <grad phi_t, D>; tr(V^-1 D) = sum om
        while s > 1e-12:
            # phi(V + sD) - phi(V) = s <G, D> + s^2 sum a D^2 - t sum log(1 + s om)
            dphi = s * g_dot + s * s * quad - t * float(np.sum(np.log1p(s * om)))
            if dphi <= 1e-4 * s * slope:
                return s
            s *= 0.5
        return 0.0

    it = 0
    while it < max_iter:
        w, Q = np.linalg.eigh(V)
        if w.min() <= 0.0:  # pragma: no cover - the steps keep V positive definite
            break
        Vinv = (Q / w) @ Q.T
        G = 2.0 * a * (V - b)
        cert, _ = coords.certificate(V, G, (w, Q), extra=t * Vinv)
        if cert <= tol:
            return V, it, cert, True
        grad = _sym(G - t * Vinv)
        Xt, k = newton_direction(-grad, w, Q, t)
        coords.cg_products += k
        it += 1
        D = Q @ Xt @ Q.T
        grad_dot = float(np.sum(grad * D))
        decrement = np.sqrt(max(-grad_dot, 0.0) / t)
        s = step_to(Xt, w, float(np.sum(G * D)), float(np.sum(a * D * D)), t)
        if s == 0.0:
            break  # no decrease at this precision: hand over to the caller's fallback
        V = _sym(V + s * D)
        if decrement < center and it < max_iter:
            t_new = t * shrink
            w, Q = np.linalg.eigh(V)
            Vinv = (Q / w) @ Q.T
            # predictor along the central path 2 a o (V - b) = t V^-1: H dV = V^-1 dt
            Xt, k = newton_direction((t_new - t) * Vinv, w, Q, t)
            coords.cg_products += k
            it += 1
            _om, s = to_boundary(Xt, w, 0.95)
            V = _sym(V + s * (Q @ Xt @ Q.T))
            t = t_new
    return V, it, cert, False


class _Dual:
    """The Lagrangian dual of J in the residual R (semismooth Newton-CG, Qi & Sun 2006).

    Writing the loss through its conjugate, ``||y - t||^2 = max_r 2<r, y - t> - ||r||^2``, the
    optimum is ``S(R) = P_psd(X(R))`` with ``X(R) = S0 - A*(R) / lam``, where ``A(S)`` collects
    the constrained entries (``E_l S E_l^T`` and ``e_a^T S e_b`` for the pairs) and ``A*`` is its
    adjoint. The dual function

        d(R) = lam ||S0||^2 - lam ||P_psd(X(R))||^2 - 2 <R, t> - ||R||^2

    is concave, smooth and unconstrained, with ``grad d = 2 (A(S(R)) - t - R)``; its dimension is
    the number of constrained entries (l^2 for l labels), not m^2. Newton directions solve
    ``(I + A P'(X) A* / lam) H = A(S) - t - R`` by conjugate gradients, with the Loewner
    operator ``P'(X)[Y] = Q (Omega o Q^T Y Q) Q^T``. Every iterate gives a feasible primal
    ``S(R)``, so ``J(S(R)) - d(R)`` is an exact duality gap.
    """

    def __init__(self, prob: "_Problem", lam: float):
        self.prob = prob
        self.lam = lam
        # preconditioner on pairs: ~ 1 + K_aa K_bb / lam (Jacobi); the labels block gets an exact
        # Kronecker inverse rebuilt at every Newton step (set_state_precond)
        if prob.has_pairs:
            kd = np.einsum("ij,ij->i", prob.Ep, prob.Ep)
            self.pden = 1.0 + kd[prob.a] * kd[prob.b] / lam

    def set_state_precond(self, st):
        """I + K+ (x) K+ / lam with K+ = E_l Q+ Q+^T E_l^T (Omega ~ rank-one on the kept part)."""
        if self.prob.has_labels:
            PL = st["PL"][:, st["x"] > 0]
            kap, Vk = np.linalg.eigh(PL @ PL.T)
            self.kV = Vk
            self.kden = 1.0 + np.outer(np.maximum(kap, 0), np.maximum(kap, 0)) / self.lam

    def precond(self, H):
        hl = None
        if self.prob.has_labels:
            hl = self.kV @ ((self.kV.T @ H[0] @ self.kV) / self.kden) @ self.kV.T
        hp = H[1] / self.pden if self.prob.has_pairs else None
        return hl, hp

    # R is a pair (R_l dense (l, l) or None, r_p (|Omega|,) or None)
    def zeros(self):
        p = self.prob
        return (np.zeros((p.El.shape[0],) * 2) if p.has_labels else None,
                np.zeros(p.a.size) if p.has_pairs else None)

    def adjoint(self, R) -> np.ndarray:
        """sym(A*(R)) as an (m, m) matrix."""
        p = self.prob
        out = np.zeros((p.m, p.m))
        if p.has_labels:
            out += p.El.T @ R[0] @ p.El
        if p.has_pairs:
            import scipy.sparse as sp

            Rs = sp.csr_matrix((R[1], (p.a, p.b)), shape=p.T.shape)
            out += p.Ep.T @ (Rs @ p.Ep)
        return _sym(out)

    def forward_factored(self, PL, PP, D):
        """A(Q D Q^T) given P = A Q (PL for labels, PP for the pair points)."""
        p = self.prob
        yl = (PL * D) @ PL.T if (p.has_labels and D.ndim == 1) else (PL @ D @ PL.T if p.has_labels else None)
        if p.has_pairs:
            F = PP * D if D.ndim == 1 else PP @ D
            yp = np.einsum("ij,ij->i", F[p.a], PP[p.b])
        else:
            yp = None
        return yl, yp

    def targets(self):
        p = self.prob
        return (p.Y @ p.Y.T if p.has_labels else None, p.t if p.has_pairs else None)

    @staticmethod
    def dot(R1, R2) -> float:
        return sum(float(np.sum(a * b)) for a, b in zip(R1, R2) if a is not None)

    @staticmethod
    def axpy(alpha, X, Y):
        return tuple(None if y is None else y + alpha * x for x, y in zip(X, Y))

    def state(self, R):
        """Eigendecomposition of X(R), S(R) factors, d(R) and the ascent direction g = grad/2."""
        Ar = self.adjoint(R)
        X = self.prob.S0 - Ar / self.lam
        x, Q = np.linalg.eigh(_sym(X))
        xp = np.maximum(x, 0.0)
        p = self.prob
        PL = p.El @ Q if p.has_labels else None
        PP = p.Ep @ Q if p.has_pairs else None
        y = self.forward_factored(PL, PP, xp)
        t = self.targets()
        # lam (||S0||^2 - ||P_psd(X)||^2) without cancellation: ||P_psd(X)||^2 = ||X||^2 -
        # ||P_nsd(X)||^2 and lam (||S0||^2 - ||X||^2) = 2 <S0, A*R> - ||A*R||^2 / lam. The
        # direct form lost every digit of d at lam >~ mu_max^2 (lam ||S0||^2 >> J).
        xn = np.minimum(x, 0.0)
        d = (
            2.0 * float(np.sum(self.prob.S0 * Ar))
            - float(np.sum(Ar * Ar)) / self.lam
            + self.lam * float(np.sum(xn * xn))
            - 2.0 * self.dot(R, t)
            - self.dot(R, R)
            + self.prob.loss_shift
        )
        g = tuple(None if yy is None else yy - tt - rr for yy, tt, rr in zip(y, t, R))
        return dict(x=x, Q=Q, xp=xp, PL=PL, PP=PP, d=d, g=g, y=y, t=t)

    def primal(self, st) -> tuple[np.ndarray, float]:
        Q, xp = st["Q"], st["xp"]
        S = (Q * xp) @ Q.T
        loss = sum(float(np.sum((yy - tt) ** 2)) for yy, tt in zip(st["y"], st["t"]) if yy is not None)
        return S, self.lam * float(np.sum((S - self.prob.S0) ** 2)) + loss + self.prob.loss_shift

    def hess_apply(self, st, Omega, H):
        """(I + A P'(X) A* / lam) H."""
        p = self.prob
        PL, PP = st["PL"], st["PP"]
        if not p.has_pairs:
            return (H[0] + self._labels_hess(st, Omega, H[0]) / self.lam, None)
        M = np.zeros((p.m, p.m))
        if p.has_labels:
            M += PL.T @ H[0] @ PL
        if p.has_pairs:
            import scipy.sparse as sp

            Hs = sp.csr_matrix((H[1], (p.a, p.b)), shape=p.T.shape)
            M += PP.T @ (Hs @ PP)
        Y = Omega * _sym(M)
        yl, yp = self.forward_factored(PL, PP, Y)
        return tuple(None if h is None else h + v / self.lam for h, v in zip(H, (yl, yp)))

    @staticmethod
    def _labels_hess(st, Omega, H):
        """E_l P'(X)[E_l^T H E_l] E_l^T through the block structure of Omega.

        eigh sorts x ascending, so with k = #(x <= 0) Omega is 0 on the first k x k block, 1 on
        the last block and Omega[k:, :k] in between: the zero block is never formed, which saves
        ~40% of the flops when a third of the spectrum is clipped (small lam, where Newton-CG
        spends its time).
        """
        PL = st["PL"]
        k = int(np.count_nonzero(st["x"] <= 0))
        Pp, Pn = PL[:, k:], PL[:, :k]
        HPp = H @ Pp
        G = 0.5 * (Pp.T @ HPp) @ Pp.T
        if k:
            G += (Omega[k:, :k] * (HPp.T @ Pn)) @ Pn.T
        out = Pp @ G
        return out + out.T


def _loewner_omega(x: np.ndarray) -> np.ndarray:
    """First divided differences of max(., 0) at the eigenvalues x (Qi & Sun's Omega)."""
    pos = x > 0
    xp = np.maximum(x, 0.0)
    num = xp[:, None] - xp[None, :]
    den = x[:, None] - x[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        om = np.where(np.abs(den) > 0, num / np.where(den == 0, 1.0, den), 0.0)
    both = pos[:, None] & pos[None, :]
    om[both] = 1.0
    om[~pos[:, None] & ~pos[None, :]] = 0.0
    return om


def _solve_newton(prob: "_Problem", lam: float, R0, *, tol: float, max_iter: int, cg_max: int = 200):
    """Semismooth Newton-CG on the dual; returns (S, R, n_iter, relative gap, converged)."""
    dual = _Dual(prob, lam)
    R = dual.zeros() if R0 is None else R0
    st = dual.state(R)
    gap = np.inf
    it = 0  # max_iter = 0 (a zero cold-step budget) returns the start's own gap
    capped = 0  # consecutive Newton steps whose CG ran out: the dual is too badly scaled here
    for it in range(1, max_iter + 1):
        S, J = dual.primal(st)
        gap = max(J - st["d"], 0.0) / max(J, 1e-300)
        if gap <= tol:
            return S, R, it - 1, gap, True
        g = st["g"]
        gnorm = np.sqrt(dual.dot(g, g))
        Omega = _loewner_omega(st["x"])
        dual.set_state_precond(st)
        # inexact Newton: preconditioned CG to a relative residual min(0.1, sqrt(|g|))
        H = tuple(None if v is None else np.zeros_like(v) for v in g)
        r = g
        z = dual.precond(r)
        pdir = z
        rz = dual.dot(r, z)
        cg_tol = min(0.1, np.sqrt(gnorm)) * gnorm
        for k in range(cg_max):
            Ap = dual.hess_apply(st, Omega, pdir)
            pAp = dual.dot(pdir, Ap)
            if not pAp > 0.0:  # breakdown: g (hence the direction) is 0 to round-off
                break
            alpha = rz / pAp
            H = dual.axpy(alpha, pdir, H)
            r = dual.axpy(-alpha, Ap, r)
            if np.sqrt(dual.dot(r, r)) <= cg_tol:
                break
            z = dual.precond(r)
            rz_new = dual.dot(r, z)
            pdir = dual.axpy(rz_new / rz, pdir, z)
            rz = rz_new
        capped = capped + 1 if k == cg_max - 1 else 0
        if capped >= 3:
            # measured (german, m = 100, 80 labels, lam = mu_max^2 * 1e-12): from here on every
            # step runs CG to its cap and the gap stays ~1 for 100 steps; APG finishes instead
            break
        # Armijo line search on the concave dual (ascent along H; <grad, H> = 2 <g, H> > 0)
        slope = 2.0 * dual.dot(g, H)
        step = 1.0
        accepted = False
        for _ in range(30):
            cand = dual.axpy(step, H, R)
            st_new = dual.state(cand)
            if np.isfinite(st_new["d"]) and st_new["d"] >= st["d"] + 1e-4 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted or slope <= 0.0:
            break  # no ascent possible at this precision: hand over to the caller's fallback
        R, st = cand, st_new
    S, J = dual.primal(st)
    gap = max(J - st["d"], 0.0) / max(J, 1e-300)
    return S, R, it, gap, gap <= tol


def _auto_solver(prob: "_Problem") -> str:
    """Newton on the dual when it is the smaller problem (fewer constrained entries than
    entries of S), APG on the primal otherwise.

    Measured, certified 1e-6 at lam = mu_max^2 * 1e-8 / 1e-10 (Table-1 data, 100 labels):
    digits 4-9, m = 36: Newton 62 / 186 steps, APG 92 / 26 (0.39 / 1.9 s vs 0.04 / 0.01 s);
    german, m = 100: Newton 0.39 / 0.96 s, APG 0.19 / 0.15 s; digits, m = 180: Newton 45 / 85
    steps (0.73 / 1.7 s), APG 560 / 590 (2.7 / 1.9 s); digits, m = 400: Newton 58 / 81 steps
    (3.2 / 5.4 s), APG 374 / 600 (9.5 / 11.0 s; the other APG counts predate the tighter
    certificate, which stops APG earlier: 656 / 843 here before). With more labels than
    landmarks the labels term is compressed to r <= m rows (``_compress_labels``), so the
    dual is as large as the primal and APG takes it (20,000 x 50 blobs, m = 500, 800 labels,
    warm-started path over 13 lam to a 1e-3 gap: APG 9.2 s, Newton 57.6 s).
    """
    n_dual = 0
    if prob.has_labels:
        l = prob.El.shape[0]
        n_dual += l * (l + 1) // 2
    if prob.has_pairs:
        n_dual += int(prob.a.size)
    return "newton" if n_dual < prob.m * (prob.m + 1) // 2 else "apg"


def _rescale_dual(R, factor: float):
    """The dual warm start for ``lam * factor``: same ``X(R) = S0 - A*(R) / lam``, i.e. the same
    primal. The unscaled R pushes X ``1 / factor`` times further (measured on restricted CV
    folds along the 10x grid: 2.1x fewer Newton steps, 3.4x fewer eigendecompositions)."""
    return tuple(None if r is None else r * factor for r in R)


def _solve_lam(prob: "_Problem", lam: float, solver: str, tol: float, max_iter: int, S_warm=None, R_warm=None):
    """Solve J at one lam; returns (S, n_iter, certificate, converged, dual R or None).

    ``"auto"`` resolves through ``_auto_solver``; ``"ipm"`` (labels only) runs ``_solve_ipm``
    and, should its line search stall, APG from its last iterate. ``"newton"`` runs the dual semismooth
    Newton-CG; a cold start below ``_HOMOTOPY_START * mu_max^2`` that does not certify within
    ``_COLD_STEPS`` steps restarts from a continuation down the grid (the iterations of all
    attempts and stages are counted); if it still cannot certify ``tol`` (tiny lam, where the
    dual is badly scaled) its last primal iterate, always PSD, warm-starts APG.
    """
    if solver == "auto":
        solver = _auto_solver(prob)
    if solver == "newton":
        cap = min(max_iter, 100)
        cold_small = R_warm is None and lam < _HOMOTOPY_START * prob.mu_max**2
        # a cold start at small lam converges in one step when the PSD constraint is inactive
        # there (MNIST-sized synthetic, m = 1000, 1e-6); otherwise it mostly stalls (digits,
        # m = 400, 1e-6 gap at mu_max^2 * 1e-10: 100 steps without progress); where it does
        # converge (in 6-14 steps) the continuation needs only 3-6 steps more. So it gets
        # _COLD_STEPS, then the grid is descended from mu_max^2 * 1e-4 by factors of 10, each
        # stage to a loose 0.1 gap. Measured, Table-1 digits m = 180 / splice m = 319 / digits
        # m = 400, 1e-6 gap at mu_max^2 * 1e-10: 87 / 53 / 67 steps in all with one cold step,
        # 101 / 67 / 81 with 15 (scripts/bench_generalized.py --cold-steps)
        first_cap = min(cap, _COLD_STEPS) if cold_small else cap
        S, R, it, cert, ok = _solve_newton(prob, lam, R_warm, tol=tol, max_iter=first_cap)
        if cold_small and not ok:
            lam_k = _HOMOTOPY_START * prob.mu_max**2
            R_warm = None
            while lam_k > 10.0 * lam:
                _S, R_warm, it_k, _c, _ok = _solve_newton(prob, lam_k, R_warm, tol=0.1, max_iter=cap)
                it += it_k
                R_warm = _rescale_dual(R_warm, 0.1)
                lam_k *= 0.1
            if R_warm is not None:
                R_warm = _rescale_dual(R_warm, lam / lam_k)
            S, R, it_n, cert, ok = _solve_newton(prob, lam, R_warm, tol=tol, max_iter=cap)
            it += it_n
        if ok:
            return S, it, cert, True, R
        coords = _Coords(prob, lam, True)
        V, it2, cert, ok = _solve(coords, coords.to_V(S), accelerate=True, armijo=False, tol=tol, max_iter=max_iter)
        return coords.to_S(V), it + it2, cert, ok, None
    coords = _Coords(prob, lam, solver in ("apg", "ipm"))
    V0 = _closed_form_V(coords) if S_warm is None else coords.to_V(S_warm)
    if solver == "ipm":
        V, it, cert, ok = _solve_ipm(coords, V0, tol=tol, max_iter=max_iter)
        if ok or it >= max_iter:
            return coords.to_S(V), it, cert, ok, None
        # the barrier's line search found no decrease (round-off): APG finishes from here
        V, it2, cert, ok = _solve(coords, V, accelerate=True, armijo=False, tol=tol, max_iter=max_iter - it)
        return coords.to_S(V), it + it2, cert, ok, None
    V, it, cert, ok = _solve(
        coords, V0, accelerate=solver == "apg", armijo=solver == "pgd", tol=tol, max_iter=max_iter
    )
    return coords.to_S(V), it, cert, ok, None


def _closed_form_V(coords: _Coords) -> np.ndarray:
    """Eq. (10): the unconstrained optimum (exact for labels; Kronecker surrogate for pairs)."""
    prob, lam = coords.prob, coords.lam
    if prob.separable:
        return coords.b.copy()
    U, mu = prob.U, prob.mu
    Qt = U.T @ (lam * prob.S0 + prob.R) @ U
    St = Qt / (lam + np.outer(mu, mu))
    return coords.to_V(U @ St @ U.T)


def _factor(S: np.ndarray) -> np.ndarray:
    """F with F F^T = S (eigenvalues below m eps lam_max dropped)."""
    lam, U = np.linalg.eigh(_sym(S))
    keep = lam > S.shape[0] * _EPS * max(lam.max(initial=0.0), 0.0)
    if not keep.any():
        return np.zeros((S.shape[0], 0))
    return np.ascontiguousarray(U[:, keep] * np.sqrt(lam[keep]))


class GeneralizedNystrom(_LandmarkKernelMixin, FactorTransformMixin, BaseEstimator):
    """Low-rank kernel learned from labels or pairs through the Nystrom dictionary kernel.

    The learned kernel is ``k~(x, y) = k(x, Z) S k(Z, y)`` with an m x m PSD ``S`` fitted to
    the side information while staying close to the Nystrom prior ``S0 = W^+`` (see the module
    docstring for the objective, the solvers and the choice of ``lam``). It has rank <= m, is
    PSD, and extends to any new sample: ``transform(X_new) = k(X_new, Z) S^(1/2)``.

    Parameters
    ----------
    n_landmarks : int, default=100
        Number of landmarks m (the rank bound of the learned kernel).
    kernel, width, gamma, degree, coef0, landmarks, rcond
        As in :class:`Nystrom`; ``width=None`` is the mean pairwise squared distance of ``X``.
    lam : "auto", "nka", float or np.inf, default="auto"
        Trade-off between the prior and the side information. ``np.inf`` returns the Nystrom
        prior exactly.
    lam_grid : array-like of float, optional
        Exponents e of the grid ``mu_max^2 * 10^e``; default ``-12, -11, ..., 0``.
    solver : {"auto", "apg", "pgd", "newton", "ipm"}, default="auto"
        Preconditioned accelerated projected gradient, the paper's gradient mapping, the
        dual semismooth Newton-CG (fewest eigendecompositions; falls back to APG at tiny lam),
        or a primal log-barrier interior-point method with Newton-CG steps (labels only; its
        step count barely depends on lam: the fastest at the smallest lam of the grid).
        ``"auto"``: the measured fastest per sub-problem (see the module docstring).
    tol : float, default=1e-6
        Certified tolerance: relative duality gap (labels) or relative projected-gradient
        residual (pairs).
    max_iter : int, optional
        Iterations for the final fit (default 20000 for "pgd", 500 for "ipm", else 2000). The
        cross-validation path of ``lam="auto"`` solves each fold to a certified 1e-3 gap
        (at most 300 iterations per lam): enough to rank the lam values.
    cv : int, default=5
        Folds for ``lam="auto"`` (capped by the smallest class size).
    random_state : None, int or Generator
        Landmarks and cross-validation folds.
    verbose : bool or int, default=0
        Progress of the lambda path (one step per lambda and fold): 1 shows a tqdm bar (when installed) and logs start/end on the
        ``nystrom_priors`` logger, 2 logs every step.

    Attributes
    ----------
    landmarks_, width_, gamma_, n_features_in_
        As in :class:`Nystrom`.
    S0_ : ndarray of shape (m, m)
        The prior ``W^+``.
    S_ : ndarray of shape (m, m)
        The learned inverse dictionary kernel (PSD).
    lam_ : float
        The lam used (``np.inf`` when S = S0).
    lam_path_ : ndarray of shape (g,)
        lam values searched (empty when lam is fixed).
    criterion_path_ : ndarray of shape (g,)
        Selection criterion along the path: mean held-out hinge loss per sample of the
        cross-validated linear SVM ("auto") or eq. (12) ("nka"). With "auto", small lam that
        cannot win are not scored on every split: NaN where the first CV split stopped its
        path (its mean loss rose > 20% above its best on two consecutive lam), the first
        split's mean where only the second split skipped them.
    cv_error_path_ : ndarray of shape (g,)
        ``lam="auto"``: mean held-out 0/1 error rate of the same SVMs (empty otherwise).
    lam_scale_ : float
        ``mu_max^2``, the scale of the data term the lambda grid is relative to (NaN when no
        side information was given).
    n_iter_ : int
        Solver iterations for the final fit.
    converged_ : bool
        Whether the final fit met ``tol``.
    certificate_ : float
        The final certified optimality measure: an upper bound on the relative duality gap,
        or, for pairs solved on the primal, the relative projected-gradient residual;
        <= ``tol`` when converged.
    classes_ : ndarray
        Classes seen in ``y`` (empty without labels).
    projection_ : ndarray of shape (m, r)
        ``S^(1/2)`` as a factor ``F F^T = S``; ``transform(X) = k(X, Z) @ projection_``.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import GeneralizedNystrom
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-1, 1, (100, 2)), rng.normal(1, 1, (100, 2))])
    >>> y = np.full(200, -1); y[:5] = 0; y[100:105] = 1   # 10 labels, the rest unlabeled
    >>> model = GeneralizedNystrom(n_landmarks=20, lam=1.0, random_state=0).fit(X, y)
    >>> G = model.transform(X)     # learned factor rows for every sample (inductive)
    >>> G.shape[0], bool(np.linalg.eigvalsh(model.S_).min() > -1e-9)
    (200, True)
    """

    def __init__(
        self,
        n_landmarks: int = 100,
        *,
        kernel: str = "rbf",
        width: float | None = None,
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        landmarks: str | np.ndarray = "kmeans",
        rcond: float | None = None,
        lam: Any = "auto",
        lam_grid: Any = None,
        solver: str = "auto",
        tol: float = 1e-6,
        max_iter: int | None = None,
        cv: int = 5,
        random_state: Any = None,
        verbose: int = 0,
    ) -> None:
        self.n_landmarks = n_landmarks
        self.kernel = kernel
        self.width = width
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.rcond = rcond
        self.lam = lam
        self.lam_grid = lam_grid
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cv = cv
        self.random_state = random_state
        self.verbose = verbose

    # ----- parameter checks ------------------------------------------------------------------
    def _check_params(self) -> tuple[str, float | None, np.ndarray, float, int, int]:
        from ._progress import check_verbose

        check_verbose(self.verbose)
        solver = check_option(self.solver, "solver", ("auto", "apg", "pgd", "newton", "ipm"))
        tol = check_scalar(self.tol, "tol", lo=0.0, lo_closed=False, hi=1.0)
        default_iter = {"pgd": 20000, "ipm": 500}.get(solver, 2000)
        max_iter = default_iter if self.max_iter is None else int(
            check_scalar(self.max_iter, "max_iter", kind="int", lo=1)
        )
        cv = int(check_scalar(self.cv, "cv", kind="int", lo=2))
        lam = self.lam
        if isinstance(lam, str):
            check_option(lam, "lam", ("auto", "nka"))
            fixed = None
        else:
            fixed = check_scalar(lam, "lam", lo=0.0, lo_closed=False, allow_inf=True)
        grid = np.arange(-12, 1, dtype=float) if self.lam_grid is None else np.asarray(self.lam_grid, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or not np.isfinite(grid).all():
            raise ValueError(f"lam_grid must be a non-empty 1-D array of finite exponents, got {self.lam_grid!r}.")
        return solver, fixed, np.sort(grid)[::-1], tol, max_iter, cv

    # ----- fitting ---------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, *, pairs: Any = None) -> "GeneralizedNystrom":
        """Learn S from labels ``y`` (-1 = unlabeled) and/or ``pairs`` ([i, j, +-1] rows).

        Unlabeled samples still shape the landmarks (and the default width). Without any side
        information (``y`` None or all -1, no pairs) the result is the Nystrom prior.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), optional
        pairs : array-like of shape (k, 3), optional

        Returns
        -------
        self
        """
        from ._progress import Progress
        from ._rows import RowSource

        solver, fixed, grid, tol, max_iter, cv = self._check_params()
        X = RowSource(X)  # in memory, memmap or dask: only sampled and labeled rows are read
        n = X.n
        labels = None
        if y is None and pairs is None:
            warnings.warn(
                "GeneralizedNystrom.fit got no side information (y and pairs are None): the "
                "learned kernel is the Nystrom prior; pass y (-1 = unlabeled) or pairs.",
                UserWarning,
                stacklevel=2,
            )
        if y is not None:
            yy = np.asarray(y)
            if yy.ndim == 1 and yy.shape[0] == n and yy.dtype.kind in "biuf" and np.all(yy == -1):
                warnings.warn(
                    "y has no labeled sample (every entry is -1) and no pairs are given: the "
                    "learned kernel is the Nystrom prior.",
                    UserWarning,
                    stacklevel=2,
                )
            else:
                labels = check_labels(y, n)
                if labels.n_classes == 1 and pairs is None:
                    warnings.warn(
                        "All labeled samples belong to one class: the ideal kernel is constant "
                        "on them and carries no class information.",
                        UserWarning,
                        stacklevel=2,
                    )
        pairs_arr = None if pairs is None else check_pairs(pairs, n)
        if solver == "ipm" and pairs_arr is not None:
            raise ValueError(
                "solver='ipm' needs labels only (its Newton system is diagonal in M's "
                "eigenbasis); with pairs use solver='auto', 'apg', 'newton' or 'pgd'."
            )
        rng = check_random_state(self.random_state)
        self._fit_landmarks(X, rng)
        prior_projection = self._fit_prior()
        S0 = self.S0_
        self.classes_ = labels.classes if labels is not None else np.array([])
        self.lam_path_ = np.array([])
        self.criterion_path_ = np.array([])
        self.cv_error_path_ = np.array([])
        self.lam_scale_ = float("nan")
        if (labels is None and pairs_arr is None) or fixed == np.inf:
            return self._set_solution(S0, np.inf, prior_projection, 0, True, 0.0)

        E_of = lambda rows: self._features_block(X.take(rows)).astype(np.float64)  # noqa: E731
        prob = self._build_problem(S0, labels, pairs_arr, E_of)
        if prob.mu_max <= 0.0:
            raise ValueError(
                "The side information is orthogonal to the landmarks (k(X_labeled, Z) = 0): "
                "the kernel cannot express it. Use more landmarks or a wider kernel."
            )
        scale = prob.mu_max**2
        self.lam_scale_ = float(scale)
        solve_kw = dict(solver=solver, tol=tol, max_iter=max_iter)

        if fixed is not None:
            lam = float(fixed)
            S, it, cert, ok, _ = _solve_lam(prob, lam, **solve_kw)
        else:
            lams = scale * 10.0**grid
            self.lam_path_ = lams
            if self.lam == "nka":
                with Progress(self.verbose, lams.size, "GeneralizedNystrom lambda path", "lam") as pr:
                    crit, sols = self._path_nka(prob, lams, labels, pairs_arr, E_of, solve_kw, pr)
                    pr.close(f"lam={lams[int(np.argmax(crit))]:.3g} maximises the NKA criterion")
                best = int(np.argmax(crit))
                self.criterion_path_ = crit
                lam = float(lams[best])
                S, it, cert, ok = sols[best]
            else:
                if labels is None or labels.n_classes < 2:
                    raise ValueError(
                        "lam='auto' cross-validates a classifier and needs labels of at least "
                        "two classes; pass lam='nka' or a number for pairs-only fits."
                    )
                n_folds = int(min(cv, np.bincount(labels.codes).min()))
                with Progress(
                    self.verbose, _CV_SPLITS * n_folds * lams.size, "GeneralizedNystrom lambda path (CV)", "fit"
                ) as pr:
                    losses, errors = self._path_cv(
                        S0, labels, pairs_arr, E_of, lams, cv, rng, solve_kw, pr,
                        (prior_projection * np.sqrt(self.eigenvalues_), self.eigenvalues_),
                    )
                    best = _cv_choice(losses)
                    pr.close(f"lam={lams[best]:.3g} (smallest smoothed CV loss)")
                self.criterion_path_ = _nanmean_columns(losses)
                self.cv_error_path_ = _nanmean_columns(errors)
                lam = float(lams[best])
                S, it, cert, ok, _ = _solve_lam(prob, lam, **solve_kw)
        if not ok:
            warnings.warn(
                f"GeneralizedNystrom's {solver!r} solver stopped after {it} iterations at lam="
                f"{lam:.3g} with a certified optimality measure of {cert:.2e} > tol={tol:g}; "
                "increase max_iter or relax tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self._set_solution(_sym(S), lam, _factor(S), it, ok, cert)

    def _set_solution(self, S, lam, F, n_iter, converged, cert) -> "GeneralizedNystrom":
        self.S_ = S
        self.lam_ = float(lam)
        self.projection_ = np.ascontiguousarray(F)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.certificate_ = float(cert)
        return self

    def _build_problem(self, S0, labels, pairs, E_of, label_rows=None) -> _Problem:
        """Assemble J for the labels restricted to ``label_rows`` (positions in labels.index)."""
        El = Y = None
        code_of = None  # class code per sample, -1 outside the labeled block
        if labels is not None:
            rows = np.arange(labels.index.size) if label_rows is None else label_rows
            idx = labels.index[rows]
            El = E_of(idx)
            Y = np.zeros((idx.size, labels.n_classes))
            Y[np.arange(idx.size), labels.codes[rows]] = 1.0
            n_max = int(max(idx.max(), pairs[:, :2].max() if pairs is not None else 0)) + 1
            code_of = np.full(n_max, -1)
            code_of[idx] = labels.codes[rows]
        if pairs is None:
            return _Problem(S0, El, Y)
        i, j, sign = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        if code_of is not None:
            ci, cj = code_of[i], code_of[j]
            inside = (ci >= 0) & (cj >= 0)
            clash = inside & ((ci == cj) != (sign == 1))
            if clash.any():
                k = int(np.flatnonzero(clash)[0])
                raise ValueError(
                    f"pairs[{k}] = {pairs[k].tolist()} contradicts the labels of samples "
                    f"{i[k]} and {j[k]}."
                )
            P = pairs[~inside]  # pairs inside the labeled block are already in the loss
        else:
            P = pairs
        if P.shape[0] == 0:
            return _Problem(S0, El, Y)
        pts, inv = np.unique(P[:, :2], return_inverse=True)
        inv = inv.reshape(-1, 2)
        a, b = inv[:, 0], inv[:, 1]
        tgt = (P[:, 2] == 1).astype(float)
        # both orders, plus the diagonal of points outside the labeled block (K*_ii = 1)
        outside = np.ones(pts.size, dtype=bool) if code_of is None else code_of[pts] < 0
        diag = np.flatnonzero(outside)
        aa = np.concatenate([a, b, diag])
        bb = np.concatenate([b, a, diag])
        tt = np.concatenate([tgt, tgt, np.ones(diag.size)])
        return _Problem(S0, El, Y, E_of(pts), aa, bb, tt)

    def _path(self, prob, lams, solve_kw):
        """Solutions along lams (descending), warm-started; yields (lam, S, it, cert, ok)."""
        S_prev = R_prev = None
        lam_prev = None
        for lam in lams:
            if R_prev is not None:
                R_prev = _rescale_dual(R_prev, lam / lam_prev)
            S, it, cert, ok, R = _solve_lam(prob, float(lam), S_warm=S_prev, R_warm=R_prev, **solve_kw)
            S_prev, R_prev, lam_prev = S, R, float(lam)
            yield float(lam), S, it, cert, ok

    def _path_nka(self, prob, lams, labels, pairs, E_of, solve_kw, progress):
        crit = np.empty(lams.size)
        sols = []
        Sref = prob.S0
        if labels is not None:
            El, Y = prob.El_labels, prob.Y_labels
        else:  # pairs only: the ideal kernel on the constrained points
            El, Y = None, None
        for k, (lam, S, it, cert, ok) in enumerate(self._path(prob, lams, solve_kw)):
            rho1 = _dense(S, Sref, True, zero=0.0)
            if El is not None:
                rho2 = _factored(El @ _factor(S), Y, True, zero=0.0)
            else:
                # masked kernel vs targets on the constrained entries only (sparse)
                vals = np.einsum("ij,ij->i", (prob.Ep @ S)[prob.a], prob.Ep[prob.b])
                den = np.linalg.norm(vals) * np.linalg.norm(prob.t)
                rho2 = float(vals @ prob.t / den) if den > 0 else 0.0
            crit[k] = rho1 * rho2
            sols.append((S, it, cert, ok))
            progress.update(lam=lam, criterion=crit[k], iterations=it)
        return crit, sols

    def _path_cv(self, S0, labels, pairs, E_of, lams, cv, rng, solve_kw, progress, prior):
        """Held-out losses along lams, shape (n_splits * n_folds, n_lams), and error rates.

        For each of ``_CV_SPLITS`` stratified k-fold splits of the labeled samples, S is refitted
        on the training fold along the path (the same exponents e, on the fold's own scale
        ``mu_max^2``) and a squared-hinge linear SVM (C = 1) on the
        learned factor rows of the training fold scores the held-out fold. The loss is the
        held-out hinge loss per sample (summed over the one-vs-rest problems).

        The folds of a split advance together, one lam at a time. The first split stops its
        path once the mean loss of the last ``_CV_PATIENCE`` lam is more than ``_CV_RACE``
        above the best so far (``_path_exhausted``); later splits stop where the smoothed mean
        loss of the earlier splits stays more than ``_CV_RACE`` above its minimum (racing,
        see ``_race_keep``). Both skip small lam, the most expensive solves, that cannot win.
        Skipped entries are NaN; the path is the NaN-mean over folds.
        """
        from ._linear_svm import ovr_heldout_loss_linear
        from ._numba._svm import ovr_heldout_loss

        counts = np.bincount(labels.codes, minlength=labels.n_classes)
        k = int(min(cv, counts.min()))
        if k < 2:
            raise ValueError(
                "lam='auto' needs at least two labeled samples in every class for "
                f"cross-validation; the smallest class has {counts.min()}. Pass lam='nka' or a "
                "number."
            )
        losses = np.zeros((_CV_SPLITS * k, lams.size))
        errors = np.zeros_like(losses)
        E_all = E_of(labels.index)
        K0_all = E_all @ S0 @ E_all.T  # the prior's kernel on the labeled samples
        top_all = _top_gram_eig(E_all)
        UtE_all = prior[0].T @ E_all.T if pairs is None else None
        # selection only needs the ranking of lam: a certified 1e-3 gap is plenty
        fold_kw = dict(solve_kw, tol=max(solve_kw["tol"], _CV_TOL), max_iter=min(solve_kw["max_iter"], 300))
        # solver="auto" on full m x m folds: APG, measured over 2 x 5 folds x 13 lam to 1e-3
        # (sklearn digits m = 180: fit 31 vs 79 s with Newton folds; german m = 100: 6.6 vs
        # 81 s, Newton stalls at lam <= mu_max^2 * 1e-11 where the warm-started APG needs a few
        # dozen steps). Restricted folds keep "auto" (Newton: MNIST-sized synthetic, p ~ 160,
        # 3.1 s vs APG 18.7 s).
        full_fold_solver = "apg" if solve_kw["solver"] == "auto" else solve_kw["solver"]
        splits = [_stratified_folds(labels.codes, k, rng) for _split in range(_CV_SPLITS)]

        def fold_scores(test):
            """Held-out (loss, error, unconverged SVMs) at each lam of the path, one fold, lazily:
            the path stops where the caller stops asking."""
            train = np.setdiff1d(np.arange(labels.index.size), test)
            Etr, Ete = E_all[train], E_all[test]
            codes_tr = labels.codes[train].astype(np.int64)
            codes_te = labels.codes[test].astype(np.int64)
            reduced = None
            if pairs is None:
                reduced = _reduced_fold(S0, prior, Etr, codes_tr, labels.n_classes, UtE_all[:, train])
            if reduced is not None:
                prob, C, V = reduced
                Ftr, Fte = Etr @ V, Ete @ V
                K0tr, K0te = K0_all[np.ix_(train, train)], K0_all[np.ix_(test, train)]
            else:
                prob = self._build_problem(S0, labels, pairs, E_of, label_rows=train)
            # more training labels than landmarks: the SVM over the m + 1 weights of the factor
            # rows costs O(l m^2) per Newton step instead of the kernel form's O(l^3)
            # (measured: 20,000 x 50, m = 300, 1200 labels: lam="auto" spent 169 of 193 s in
            # the kernel-form SVMs)
            features = reduced is None and train.size > prob.m + 1
            kw = fold_kw if reduced is not None else dict(fold_kw, solver=full_fold_solver)
            # the grid point e means lam = mu_max^2 10^e on every problem: the data term sums
            # over l^2 label pairs, so at one absolute lam a training fold (l_tr < l labels) is
            # regularised (l / l_tr)^2 ~ 1.6x more than the full fit it ranks lam for
            # (a fold whose labeled rows are all 0 in k(., Z) has no data term: S0 at any lam > 0)
            top_tr = _top_gram_eig(Etr)
            fold_lams = lams * (top_tr / top_all) ** 2 if top_tr > 0 else lams
            # the feature-form SVMs start from the previous lam's active sets: 2.8 instead of
            # 4.9 Newton steps per problem, SVM time 2.2-2.4x less (bench_generalized --many-labels)
            n_svms = 1 if labels.n_classes == 2 else labels.n_classes
            active = np.zeros((n_svms, train.size), dtype=bool) if features else None
            for _lam, S, *_rest in self._path(prob, fold_lams, kw):
                if features:
                    F = _factor(S)
                    scores = ovr_heldout_loss_linear(
                        Etr @ F, Ete @ F, codes_tr, codes_te, labels.n_classes, 1.0, _SVM_MAX_ITER,
                        active=active,
                    )
                else:
                    if reduced is not None:  # S = S0 + V (Y - C) V^T, Y the reduced solution
                        Dl = S - C
                        Ktr = K0tr + Ftr @ Dl @ Ftr.T
                        Kte = K0te + Fte @ Dl @ Ftr.T
                    else:
                        Ktr = Etr @ S @ Etr.T
                        Kte = Ete @ S @ Etr.T
                    scores = ovr_heldout_loss(
                        np.ascontiguousarray(_sym(Ktr)) + 1.0,
                        np.ascontiguousarray(Kte) + 1.0,
                        codes_tr,
                        codes_te,
                        labels.n_classes,
                        1.0,
                        _SVM_MAX_ITER,
                    )
                loss, err, unconv = scores
                yield loss / test.size, err / test.size, unconv

        # The folds are independent. With threadpoolctl, BLAS is limited to one thread (which
        # also helps serially: the fold problems are small, p ~ 2 l) and the folds run on
        # numba's thread count of Python threads. Measured on the restricted folds of the
        # MNIST-sized benchmark, 2 cores: 1.6-1.7x; 2 threads with 2-thread BLAS were 0.5x.
        # The folds of a split advance one lam at a time, so that the split can stop its path.
        from concurrent.futures import ThreadPoolExecutor

        from numba import get_num_threads

        from .kernels import _BLAS

        workers = min(k, get_num_threads()) if _BLAS.available() else 1
        svm_unconverged = 0
        n_keep = lams.size
        losses[:] = errors[:] = np.nan
        with _BLAS, ThreadPoolExecutor(workers) as pool:
            for s, tests in enumerate(splits):
                rows = slice(s * k, (s + 1) * k)
                paths = [fold_scores(test) for test in tests]
                for j in range(n_keep):
                    step = pool.map(next, paths) if workers > 1 else map(next, paths)
                    for f, (loss, err, unconv) in enumerate(step):  # in fold order
                        losses[s * k + f, j], errors[s * k + f, j] = loss, err
                        svm_unconverged += unconv
                    progress.update(k, lam=float(lams[j]), loss=float(np.mean(losses[rows, j])))
                    if s == 0 and _path_exhausted(np.mean(losses[rows, : j + 1], axis=0)):
                        n_keep = j + 1
                        break
                for path in paths:
                    path.close()
                n_keep = min(n_keep, _race_keep(losses[: (s + 1) * k, :n_keep]))
        if svm_unconverged:
            warnings.warn(
                f"{svm_unconverged} of the held-out linear SVMs of lam='auto' stopped after "
                f"{_SVM_MAX_ITER} Newton steps without converging; the CV scores along the lam path are "
                "approximate. Pass lam as a number (or 'nka') to skip the cross-validation.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return losses, errors


def _compress_labels(El: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """An equivalent labels term with at most m rows: ``(L, Yc, shift)``.

    With the thin SVD ``E_l = V diag(s) W^T`` (V: l x r with orthonormal columns, r = rank),
    ``E_l S E_l^T = V (L S L^T) V^T`` for ``L = diag(s) W^T`` (r x m), and for any r x r ``A``

        ||V A V^T - Y Y^T||^2 = ||A - Yc Yc^T||^2 + (||Y Y^T||^2 - ||Yc Yc^T||^2),   Yc = V^T Y,

    (Pythagoras: the part of ``Y Y^T`` outside ``range(V) x range(V)`` is orthogonal to every
    ``V A V^T``). ``L^T L = E_l^T E_l`` and ``L^T Yc = E_l^T Y``, so M, R and J are unchanged,
    while the dual of J (``_Dual``) has r(r + 1) / 2 label entries instead of l(l + 1) / 2 and
    every evaluation of the data term costs O(m^3) instead of O(l^2 m). With l > m the l x l
    dual has l(l + 1) / 2 - r(r + 1) / 2 directions that do not move S; ``L`` has full row rank.
    Used when l > m; the thin SVD costs O(l m^2), as does forming ``E_l^T E_l``.
    """
    V, s, Wt = np.linalg.svd(El, full_matrices=False)
    keep = s > max(El.shape) * _EPS * (s[0] if s.size else 0.0)
    V, s, Wt = V[:, keep], s[keep], Wt[keep]
    Yc = V.T @ Y
    # ||Y Y^T||^2 = ||Y^T Y||^2 (c x c), likewise for Yc: no l x l matrix
    shift = float(np.sum((Y.T @ Y) ** 2) - np.sum((Yc.T @ Yc) ** 2))
    return np.ascontiguousarray(s[:, None] * Wt), Yc, max(shift, 0.0)


def _top_gram_eig(E: np.ndarray) -> float:
    """Largest eigenvalue of E^T E (from the smaller Gram matrix)."""
    G = E @ E.T if E.shape[0] <= E.shape[1] else E.T @ E
    return max(float(np.linalg.eigvalsh(_sym(G))[-1]), 0.0) if G.size else 0.0


def _reduced_fold(S0, prior, El, codes, n_classes, UtEl=None):
    """J of a training fold restricted to ``S = S0 + V X V^T`` (labels only), or None.

    ``V`` is an orthonormal basis of the part of ``range(E_l^T) + S0 range(E_l^T)`` inside
    ``range(S0)``: the data term depends on S only through ``E_l S E_l^T``, and the second block
    carries most of the PSD correction. On ``range(S0)``, ``S0 + V X V^T >= 0`` iff
    ``X + C >= 0`` with the Schur complement ``C = (V^T S0^+ V)^-1`` — a p x p problem of the
    same form in ``Y = X + C``: prior C, rows ``E_l V``, data term at ``Y + (V^T S0 V - C)``.
    Its solutions are feasible for the full problem and optimal over that family, an
    approximation used only to rank lam (measured: objective excess 1e-6..3e-2 relative to the
    optimum, held-out kernel rows within ~1%; see test_reduced_fold_problem_is_the_restriction_of_J).
    Used when ``p <= m / 2``; the returned tuple is (problem, C, V). ``UtEl`` (optional) is
    ``U^T E_l^T``, sliced by the caller from one product for all folds.
    """
    U, w = prior  # S0 = U diag(1/w) U^T, w > 0 the kept eigenvalues of W
    m = S0.shape[0]
    if UtEl is None:
        UtEl = U.T @ El.T
    B = np.hstack([UtEl, UtEl / w[:, None]])  # coordinates in range(S0): U^T [E_l^T, S0 E_l^T]
    Ub, sb, _ = np.linalg.svd(B, full_matrices=False)
    keep = sb > max(B.shape) * _EPS * (sb[0] if sb.size else 0.0)
    p = int(keep.sum())
    if p == 0 or p > m // 2:
        return None
    Vc = Ub[:, keep]
    lw, Uw = np.linalg.eigh(_sym((Vc.T * w) @ Vc))  # V^T S0^+ V, positive definite
    C = _sym((Uw / lw) @ Uw.T)
    D = _sym((Vc.T / w) @ Vc) - C  # V^T S0 V - C >= 0
    V = U @ Vc
    Y = np.zeros((El.shape[0], n_classes))
    Y[np.arange(El.shape[0]), codes] = 1.0
    return _Problem(C, El @ V, Y, offset=D), C, V


def _cv_choice(losses: np.ndarray) -> int:
    """Index of the lam minimising the mean held-out loss smoothed over neighbouring lam.

    The 3-point moving average on the log grid (ends repeated) damps fold noise: with ~100
    labels one held-out sample moves a single grid point's mean by several percent, while
    the true curve is smooth in log(lam). Ties go to the larger lam (closer to the prior).
    Unscored lam (NaN columns, a tail of the path) are never chosen.
    """
    return int(np.nanargmin(_smoothed_mean(losses)))


def _nanmean_columns(values: np.ndarray) -> np.ndarray:
    """Mean over rows ignoring NaN; NaN (without numpy's empty-slice warning) where none is set."""
    ok = ~np.isnan(values)
    count = ok.sum(axis=0)
    total = np.where(ok, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _smoothed_mean(losses: np.ndarray) -> np.ndarray:
    """NaN-mean over folds, then the 3-point moving average of _cv_choice (ends repeated).

    Only the scored prefix of the path is smoothed (its last point is the repeated end);
    unscored lam stay NaN.
    """
    mean = _nanmean_columns(losses)
    scored = int(np.count_nonzero(~np.isnan(mean)))
    if scored < 3:
        return mean
    out = np.full_like(mean, np.nan)
    out[:scored] = np.convolve(np.pad(mean[:scored], 1, mode="edge"), np.ones(3) / 3.0, mode="valid")
    return out


def _path_exhausted(mean: np.ndarray) -> bool:
    """Whether the first CV split can stop its path after the lam scored in ``mean``.

    True once each of the last ``_CV_PATIENCE`` mean held-out losses is more than ``_CV_RACE``
    (relative) above the best so far: along the descending path the loss rises past its
    basin into overfitting, and the remaining lam are the slowest solves. Checked on the
    stored held-out losses of the Table-1 data (5 sets x 10 repeats, 2 splits; rule
    "svmhinge/smooth3/race" of ``scripts/study_lambda_selection.py --analyse``): the chosen
    lam is the same as with both splits on the whole path in 50 of 50 cases for margins 0.1
    to 0.5 with patience 2 (44 of 50 with patience 1 and margin 0.1); with 0.2 / 2 the first
    split skips 1.5 of 13 lam on average.
    """
    if mean.size < _CV_PATIENCE + 1:
        return False
    return bool(np.all(mean[-_CV_PATIENCE:] > (1.0 + _CV_RACE) * mean.min()))


def _race_keep(losses: np.ndarray) -> int:
    """How many leading lam of the path the next CV split still needs to score.

    The last lam whose smoothed mean loss so far is within ``_CV_RACE`` (relative) of the
    minimum, plus one neighbour for the smoothing. Checked on the stored held-out losses of the
    Table-1 data (``scripts/study_lambda_selection.py --analyse``, rule "svmhinge/smooth3/race";
    5 sets x 10 repeats, 2 splits): the chosen
    lam is the same as with both splits on the whole path in 50 of 50 cases for a margin of
    0.05 to 0.3; with 0.2 the second split skips 2.1 of 13 lam on average, the smallest.
    """
    smooth = _smoothed_mean(losses)
    contending = np.flatnonzero(smooth <= (1.0 + _CV_RACE) * np.nanmin(smooth))
    return int(min(smooth.size, contending.max() + 2))


def _stratified_folds(codes: np.ndarray, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    folds: list[list[int]] = [[] for _ in range(k)]
    for c in np.unique(codes):
        members = rng.permutation(np.flatnonzero(codes == c))
        for r, idx in enumerate(members):
            folds[r % k].append(int(idx))
    return [np.sort(np.array(f, dtype=int)) for f in folds]
