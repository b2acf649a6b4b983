"""Burg (LogDet) low-rank kernel learning: Kulis et al. (2006), Algorithm 1.

**Burg / LogDet** (Algorithm 1). With ``D = tr(K K0^+) - log det - r`` on the common range
space, the projection onto one distance constraint has a closed form. For ``p = d(i, j)`` at
the current kernel (Kulis et al. 2009, with the direction ``delta`` that Algorithm 1 as printed
omits for ``>=`` constraints, and ITML's slack):

    alpha = min(lam_c, gamma/(gamma+1) * delta * (1/p - 1/bhat_c)),   lam_c -= alpha,
    beta  = delta alpha / (1 - delta alpha p),   bhat_c <- 1 / (1/bhat_c + delta alpha / gamma),
    K <- K + beta K z z^T K.

``gamma = inf`` gives hard constraints (``bhat = b``). In factored form ``K = G0 B B^T G0^T``
the update is ``B <- B L`` with ``L L^T = I + beta w w^T``, ``w = B^T (g0_i - g0_j)``, which
costs O(r^2) (see :mod:`nystrom_priors._numba._burg`). ``1 + beta p = 1/(1 - delta alpha
p) > 0`` always, so ``K`` stays PSD with the range space of ``K0``: the rank is preserved.

A similarity constraint has no slack form here (its bound may be <= 0, where the Burg slack on
b is undefined): it is always hard. Its projection ``K' = G (I - rho Asym)^{-1} G^T`` in the
factor space (``Asym = (a c^T + c a^T)/2``, ``a, c`` the current factor rows of i, j) meets
``K'_ij = b`` for the root of ``b g rho^2 + 2 (g + 2 b s) rho - 4 (b - s) = 0``
(``s = a.c``, ``g = |a|^2 |c|^2 - s^2``) that keeps ``I - rho Asym`` positive definite.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base import side_info_fit
from .._validation import check_random_state, check_scalar
from ._common import _COMMON_PARAMS_DOC, _BregmanKernelLearner

__all__ = ["LogDetKernelLearner"]


class LogDetKernelLearner(_BregmanKernelLearner):
    __doc__ = (
        """Low-rank kernel learning in Burg (LogDet) divergence (Kulis et al. 2006, Alg. 1).

    Learns ``K = G0 B B^T G0^T`` closest in LogDet divergence to the initial kernel
    ``K0 = G0 G0^T`` subject to squared-distance bounds on pairs (and optionally bounds on
    kernel entries), by cyclic Bregman projections costing O(r^2) each. The rank and range space
    of ``K0`` are preserved, the learned kernel is PSD, and ``transform`` gives factor rows for
    any samples (see the module docstring for the math).

    Parameters
    ----------
    gamma : float, default=inf
        Slack trade-off (ITML): larger is harder; ``inf`` means hard constraints. Hard
        constraints that cannot all hold at rank r are detected and reported with an
        :class:`InfeasibleConstraintsWarning`; a finite gamma always yields a solution."""
        + _COMMON_PARAMS_DOC
        + """

    Attributes
    ----------
    B_ : ndarray of shape (r, r)
        The learned factor: ``G = G0 B_``.
    P0_ : ndarray of shape (m or d, r)
        Initial projection: ``G0 = F(X) P0_`` with F the Nystrom features ``k(X, Z)`` or X.
    projection_ : ndarray of shape (m or d, r)
        ``P0_ @ B_``: ``transform(X) = F(X) @ projection_``.
    pairs_ : ndarray of shape (k, 3)
        The distance constraints used (deduplicated, zero-length pairs removed), in the order
        projected.
    bounds_ : ndarray of shape (k,)
        Their squared-distance bounds.
    similarity_pairs_, similarity_bounds_ : arrays of shape (k_s, 3), (k_s,)
    dual_ : ndarray of shape (k + k_s,)
        Dual variables (>= 0).
    slack_bounds_ : ndarray of shape (k,)
        Slack-adjusted bounds ``bhat`` (equal to ``bounds_`` when gamma = inf).
    n_iter_ : int
        Sweeps run.
    converged_, infeasible_ : bool
    dual_change_path_, violation_path_, dual_norm_path_ : ndarrays of shape (``n_iter_``,)
        Per sweep: relative dual change, largest relative violation, ``||dual||_2``.
    max_violation_ : float
        Largest relative violation of any constraint by the learned kernel (relative to the
        slack-adjusted bound for distance constraints).
    landmarks_, width_, gamma_, S0_, eigenvalues_, kernel_, degree_, coef0_
        The Nystrom initial kernel (init="nystrom"), as in :class:`Nystrom`; ``gamma_`` is
        that kernel's scale (``1 / width_`` for distance kernels), not the slack ``gamma``.
    init_ : str
        The initial kernel used ("nystrom" or "linear").
    n_components_ : int
        r, the rank of the learned kernel.
    classes_ : ndarray
        The classes of the labeled samples of ``y``, sorted; empty without labels.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,), dtype object
        Column names of X in ``fit``, when X is a DataFrame whose column names are all
        strings (absent otherwise); later calls refuse a frame whose names differ.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import LogDetKernelLearner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> pairs = np.array([[0, 1, 1], [2, 3, -1]])
    >>> model = LogDetKernelLearner(init="linear").fit(X, pairs=pairs, bounds=[0.5, 20.0])
    >>> G = model.transform(X)
    >>> d = lambda i, j: float(((G[i] - G[j]) ** 2).sum())
    >>> bool(d(0, 1) <= 0.5 * (1 + 1e-3) and d(2, 3) >= 20.0 * (1 - 1e-3))
    True
    >>> bool(np.linalg.matrix_rank(G) == np.linalg.matrix_rank(X))
    True
    """
    )

    _similarity = True

    def __init__(
        self,
        rank: int | None = None,
        *,
        init: str = "nystrom",
        gamma: float = np.inf,
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
        self.gamma = gamma
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
        self,
        X: Any,
        y: Any = None,
        *,
        pairs: Any = None,
        bounds: Any = None,
        similarity_pairs: Any = None,
        similarity_bounds: Any = None,
    ) -> LogDetKernelLearner:
        """Learn the kernel from labels and/or constraints.

        Parameters
        ----------
        X : array-like of shape (n, d), or point pairs of shape (k, 2, d)
            Point pairs are metric-learn's format, ``fit(pairs, y)`` as for its ITML: ``y``
            holds +1 (similar) or -1 (dissimilar) per pair, and the distinct points become the
            training rows (user guide, "metric-learn's pairs format").
        y : array-like of shape (n,), optional
            Labels (any type; -1, None or NaN = unlabeled); turned into ``n_constraints``
            pairs (must-link first).
        pairs : int array of shape (k, 3), optional
            ``[i, j, +1]``: ``d(i, j) <= bound``; ``[i, j, -1]``: ``d(i, j) >= bound``, with
            ``d`` the squared distance in the learned kernel.
        bounds : array of shape (k,), optional
            Per-pair bounds (> 0); default from ``bound_rule``.
        similarity_pairs : int array of shape (k_s, 3), optional
            ``[i, j, +1]``: ``K_ij >= bound``; ``[i, j, -1]``: ``K_ij <= bound``; ``i == j``
            allowed. Always hard constraints.
        similarity_bounds : array of shape (k_s,)

        Returns
        -------
        self
        """
        from .._chunks import WORK, resumable_sweeps
        from .._numba._burg import burg_run, burg_violation

        # X may be an array, a memmap or a dask array (see _FactorRows)
        gamma = check_scalar(self.gamma, "gamma", lo=0.0, lo_closed=False, allow_inf=True)
        tol, max_iter = self._check_fit_params()
        rng = check_random_state(self.random_state)
        G0 = self._initial_factor(X, rng)
        c = self._constraints(G0, y, pairs, bounds, similarity_pairs, similarity_bounds, rng)
        r = G0.shape[1]
        Gc = np.ascontiguousarray(G0[c["rows"]])
        nc = c["b"].shape[0]
        lam = np.zeros(nc)
        bhat = c["b"].copy()
        Bt = np.eye(r)
        args = (Gc, c["I1"], c["I2"], c["kind"], c["delta"], c["b"], bhat, lam, float(gamma), Bt)
        # carried between the kernel's calls (it returns every WORK multiply-adds: Ctrl-C)
        lam_old, fac, state = lam.copy(), np.zeros((3, r)), np.zeros(4)

        def step(start, n, conv, viol, lamnorm):
            def run(done, todo):
                return burg_run(
                    *args,
                    todo,
                    float(tol),
                    conv[done:],
                    viol[done:],
                    lamnorm[done:],
                    lam_old,
                    fac,
                    state,
                    WORK,
                )

            def violation(c0, c1):
                return burg_violation(*args[:6], bhat, Bt, c0, c1)

            return resumable_sweeps(
                run, violation, nc, 1.5 * r * r, n, float(tol), viol, lambda: bool(state[3])
            )

        cert = dict(G=Gc, I1=c["I1"], I2=c["I2"], kind=c["kind"], delta=c["delta"], b=bhat)
        cert["trace0"] = float(r)  # the initial kernel is the identity in G0's coordinates
        n_sweeps, status, conv, viol, lamnorm = self._run(step, lam, cert, max_iter)
        nd = c["pairs"].shape[0]
        self.B_ = np.ascontiguousarray(Bt.T)
        self.projection_ = self.P0_ @ self.B_
        self.pairs_ = c["pairs"]
        self.bounds_ = c["b"][:nd].copy()
        self.slack_bounds_ = bhat[:nd].copy()
        self.similarity_pairs_ = c["similarity_pairs"]
        self.similarity_bounds_ = c["b"][nd:].copy()
        self.dual_ = lam
        hard = math.isinf(gamma)
        remedy = self._remedy(
            "Use a finite slack (e.g. gamma=1.0)"
            if hard
            else f"Use a smaller gamma (gamma={gamma:g} lets the bounds move too little)"
        )
        if c["similarity_pairs"].shape[0]:
            remedy += " Similarity constraints are always hard: check similarity_bounds."
        fix = "use a finite gamma (soft constraints)." if hard else "use a smaller gamma."
        stretch = (Gc, c["I1"], c["I2"], c["b"], c["pairs"], fix, c["similarity_pairs"])
        self.max_violation_ = float(
            burg_violation(Gc, c["I1"], c["I2"], c["kind"], c["delta"], c["b"], bhat, Bt, 0, nc)
        )
        self._finish(n_sweeps, status, conv, viol, lamnorm, remedy, stretch, hard=hard)
        return self
