"""von Neumann low-rank kernel learning: Kulis et al. (2006), Algorithm 2.

**von Neumann** (Algorithm 2). ``D = tr(K log K - K log K0 - K + K0)``; a projection is
``log K <- log K + rho z z^T`` on the range space, i.e. in the eigenbasis ``K = V0 W
diag(e^d) W^T V0^T`` the diagonal-plus-rank-one update ``diag(d) + rho w w^T``
(secular equation, O(r^2)). ``rho`` has no closed form: it solves ``f(rho) = w^T exp(diag(d)
+ rho w w^T) w = b`` (f increasing), found by safeguarded Newton on ``log f`` (about four
evaluations of f).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base import side_info_fit
from .._validation import check_random_state
from ._common import _COMMON_PARAMS_DOC, _BregmanKernelLearner
from ._linear_init import _GRAM_SPREAD

__all__ = ["VonNeumannKernelLearner"]


class VonNeumannKernelLearner(_BregmanKernelLearner):
    __doc__ = (
        """Low-rank kernel learning in von Neumann divergence (Kulis et al. 2006, Alg. 2).

    Learns ``K = V0 W diag(exp(d)) W^T V0^T`` closest in von Neumann divergence to
    ``K0 = G0 G0^T = V0 diag(exp(d0)) V0^T`` subject to squared-distance bounds on pairs (hard
    constraints). Each projection solves a diagonal-plus-rank-one eigenproblem by the secular
    equation (O(r^2)) and the projection parameter by safeguarded Newton (about four
    evaluations); the rotation ``W <- W U`` is an r-by-r matrix product (O(r^3)). The rank never
    exceeds that of ``K0`` and the learned kernel is PSD.

    Parameters
    ----------"""
        + _COMMON_PARAMS_DOC
        + """

    Attributes
    ----------
    W_ : ndarray of shape (r, r)
        Orthogonal rotation of the eigenbasis.
    spectrum_ : ndarray of shape (r,)
        ``exp(d)``: eigenvalues of the learned kernel (training samples).
    basis_ : ndarray of shape (r0, r)
        ``T`` with ``V0 = G0 T`` orthonormal on the training samples.
    projection_ : ndarray of shape (m or d, r)
        ``P0_ @ basis_ @ W_ @ diag(sqrt(spectrum_))``.
    pairs_, bounds_, dual_, n_iter_, converged_, infeasible_, dual_change_path_,
    violation_path_, dual_norm_path_, max_violation_, n_features_in_, feature_names_in_ : as
        LogDetKernelLearner
    landmarks_, width_, gamma_, S0_, eigenvalues_, kernel_, degree_, coef0_, init_
        As in :class:`LogDetKernelLearner` (the initial kernel, the kernel's ``gamma_``).
    n_components_, classes_
        As in :class:`LogDetKernelLearner`.
    evaluations_path_ : ndarray of shape (``n_iter_``,)
        Evaluations of the projection-parameter equation per sweep.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import VonNeumannKernelLearner
    >>> X = np.random.default_rng(0).normal(size=(60, 4))
    >>> model = VonNeumannKernelLearner(init="linear")
    >>> G = model.fit_transform(X, pairs=np.array([[0, 1, 1]]), bounds=[0.5])
    >>> bool(((G[0] - G[1]) ** 2).sum() <= 0.5 * (1 + 1e-3))
    True
    """
    )

    def __init__(
        self,
        rank: int | None = None,
        *,
        init: str = "nystrom",
        tol: float = 1e-3,
        max_iter: int = 1000,
        bound_rule: str = "percentile",
        epsilon: float = 0.25,
        percentiles: tuple[float, float] = (5.0, 95.0),
        n_constraints: int | None = None,
        n_landmarks: int = 100,
        kernel: str = "rbf",
        width: float | None = None,
        kernel_gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        landmarks: Any = "kmeans",
        rcond: float | None = None,
        random_state: Any = None,
        verbose: int = 0,
    ) -> None:
        self.rank = rank
        self.init = init
        self.tol = tol
        self.max_iter = max_iter
        self.bound_rule = bound_rule
        self.epsilon = epsilon
        self.percentiles = percentiles
        self.n_constraints = n_constraints
        self.n_landmarks = n_landmarks
        self.kernel = kernel
        self.width = width
        self.kernel_gamma = kernel_gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.rcond = rcond
        self.random_state = random_state
        self.verbose = verbose

    @side_info_fit
    def fit(
        self, X: Any, y: Any = None, *, pairs: Any = None, bounds: Any = None
    ) -> VonNeumannKernelLearner:
        """Learn the kernel from labels and/or distance constraints (as LogDetKernelLearner.fit)."""
        from .._chunks import WORK, resumable_sweeps
        from .._numba._von_neumann import vn_run, vn_violation

        # X may be an array, a memmap or a dask array (see _FactorRows)
        tol, max_iter = self._check_fit_params()
        rng = check_random_state(self.random_state)
        G0 = self._initial_factor(X, rng)
        c = self._constraints(G0, y, pairs, bounds, None, None, rng)
        # orthonormal basis of range(G0): G0 = Q R, R = U diag(s) P^T, V0 = G0 P s^-1
        s, P = _range(G0)
        T = P / s
        V = np.ascontiguousarray(G0[c["rows"]] @ T)
        r = T.shape[1]
        W = np.eye(r)
        dlog = 2.0 * np.log(s)  # log of G0^T G0's eigenvalues, never squared (no overflow)
        nc = c["b"].shape[0]
        lam = np.zeros(nc)
        evals = []  # per step call: its sweeps' evaluation counts (O(sweeps done), not max_iter)
        # carried between the kernel's calls (it returns every WORK multiply-adds: Ctrl-C)
        lam_old, state = lam.copy(), np.zeros(3)
        cons = (V, c["I1"], c["I2"], c["delta"], c["b"])

        def step(start, n, conv, viol, lamnorm):
            counts = np.zeros(n, dtype=np.int64)

            def run(done, todo):
                return vn_run(
                    *cons,
                    lam,
                    W,
                    dlog,
                    todo,
                    float(tol),
                    conv[done:],
                    viol[done:],
                    lamnorm[done:],
                    counts[done:n],
                    lam_old,
                    state,
                    WORK,
                )

            def violation(c0, c1):
                return vn_violation(*cons, W, dlog, c0, c1)

            k, status = resumable_sweeps(
                run, violation, nc, 2.0 * r * r, n, float(tol), viol, lambda: False
            )
            evals.append(counts[:k])
            return k, status

        cert = dict(
            G=np.ascontiguousarray(G0[c["rows"]]),
            I1=c["I1"],
            I2=c["I2"],
            kind=c["kind"],
            delta=c["delta"],
            b=c["b"],
            # the initial kernel T diag(sig) T^T = P P^T in G0's coordinates
            trace0=float(r),
        )
        n_sweeps, status, conv, viol, lamnorm = self._run(step, lam, cert, max_iter)
        self.basis_ = T
        self.W_ = W
        self.spectrum_ = np.exp(dlog)
        self.projection_ = self.P0_ @ T @ (W * np.sqrt(self.spectrum_))
        self.pairs_ = c["pairs"]
        self.bounds_ = c["b"].copy()
        self.dual_ = lam
        self.evaluations_path_ = np.concatenate(evals)[:n_sweeps]
        self.max_violation_ = float(vn_violation(*cons, W, dlog, 0, nc))
        self._finish(
            n_sweeps,
            status,
            conv,
            viol,
            lamnorm,
            self._remedy(
                "von Neumann learning has no slack: use LogDetKernelLearner with a finite gamma"
            ),
            (
                cert["G"],
                c["I1"],
                c["I2"],
                c["b"],
                c["pairs"],
                "use LogDetKernelLearner with a finite gamma.",
                c["similarity_pairs"],
            ),
            hard=True,  # no slack: max_iter's warning gives the infeasibility remedy too
        )
        return self


def _range(G0: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(s, P)``: the singular values of the initial factor G0 (n x r) above ``max(n, r)
    eps`` times the largest (numpy's ``matrix_rank`` tolerance: a smaller one is G0's
    rounding, not a direction of the initial kernel), descending, and their right singular
    vectors (r x k): ``range(G0) = range(G0 P)``.

    From the eigenpairs of ``G0^T G0`` (one Gram pass) where its eigenvalues all lie within
    ``_GRAM_SPREAD`` of the largest: their rounding, eps times the largest, is then at most
    1e-8 of each. Otherwise from the SVD of G0's triangular factor R (``R^T R = G0^T G0``, a
    QR pass): the Gram matrix squares the singular values, and a direction below sqrt(eps)
    times the strongest (X with a large common offset) would be lost in its rounding."""
    H = G0.gram()
    ev, V = np.linalg.eigh(0.5 * (H + H.T))
    ev, V = ev[::-1], V[:, ::-1]
    if ev.size and np.isfinite(ev).all() and ev[-1] > _GRAM_SPREAD * ev[0] > 0.0:
        return np.sqrt(ev), np.ascontiguousarray(V)
    _, s, Pt = np.linalg.svd(G0.r_factor(), full_matrices=False)
    if not (s.size and s[0] > 0.0 and np.isfinite(s[0])):
        raise ValueError(
            "The initial factor G0 is zero (or not finite) on the training samples: the "
            "initial kernel is zero on X. Choose another init, kernel or landmarks, or rescale "
            "X or the kernel (width, kernel_gamma, coef0)."
        )
    eps, big = np.finfo(np.float64).eps, np.finfo(np.float64).max
    # 1 / s must stay finite too: it scales the basis V0 = G0 P / s
    keep = (s > max(G0.shape) * eps * s[0]) & (s > 1.0 / big)
    return s[keep], np.ascontiguousarray(Pt[keep].T)
