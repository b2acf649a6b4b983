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
    of S: l < m for labels), ``"apg"`` otherwise (``_auto_solver`` in
    ``_generalized/solve.py`` has the measurements);
    ``"apg"`` on the full m x m cross-validation folds of ``lam="auto"`` (solved to 1e-3 and
    warm-started along the path, where APG's cheap steps win: sklearn digits, m = 180, fit 31 s
    vs 79 s with Newton folds). Measured on sklearn digits, m = 400, 100 labels, certified
    1e-6: Newton 16 / 36 / 67 steps at lam = mu_max^2 * 1e-6 / 1e-8 / 1e-10 (cold starts below
    1e-4 take one step, then descend the grid, see ``_generalized/solve.py``) where APG needs
    85 / 374 / 600 (results/bench_generalized.md).
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
    Semismooth Newton-CG on the dual (``_generalized/dual_newton.py``): the dual lives on the
    constrained entries only (l^2 values for l labels), is unconstrained and strongly concave,
    and every dual point gives a PSD primal ``S = P_psd(S0 - A*(R)/lam)`` and an exact duality
    gap. Typically 5-50 Newton steps (one m x m eigendecomposition each) where APG needs
    hundreds to thousands. A cold start below mu_max^2 * 1e-4 that one step does not solve
    continues on the dual of the log-barrier problem ``J(S) - tau log det S`` with tau driven
    to 0 (``_generalized/barrier_dual.py``): that dual is smooth and self-concordant, so its
    steps do not grow as lam shrinks (labels and pairs; results/bench_generalized.md section
    9). Both duals are evaluated in Lagrangian form, which stays exact where ``lam ||X||^2``
    would cancel at small lam. Should a solve still not certify, its last primal iterate goes
    to APG.
``"ipm"`` (labels only)
    Primal log-barrier path following with Newton-CG steps (``_generalized/ipm.py``). Its step
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
    The lam minimising the mean loss is chosen (``_cv_choice``: smoothing over neighbouring
    grid points, tried before, moved the choice off the minimum of asymmetric basins). A
    continuous loss instead of the 0/1 error: with ~100 labels a handful of held-out
    mistakes decide a 0/1 curve, and the one-standard-error rule then falls back to the
    prior where the learned kernel is clearly better. When the labeled rows of a training
    fold span at most half of the dictionary (many landmarks, few labels), each fold solves
    J restricted to ``S = S0 + V X V^T`` (``_reduced_fold`` in
    ``_generalized/lambda_selection.py``): exactly feasible, a p x p
    problem instead of m x m; the final S at the chosen lam is always the full solution.
    The folds run in parallel (numba's thread count, one-thread BLAS; needs threadpoolctl)
    with results independent of the thread count. The small lam that cannot win are
    skipped: the first split stops its path once the loss has risen well past its minimum
    (``_path_exhausted``), the second races the first (``_race_keep``).

    Pairs only (no labels): the folds deal the constrained *samples* into groups and hold out
    the pairs with an end in a group, refit S on the other pairs and score the learned
    kernel's cosine ``K_ij / sqrt(K_ii K_jj)`` on the pairs with both ends in the group by its
    squared error to their targets 1 (must-link) / 0 (cannot-link) (``_cv_losses_pairs``);
    the lam minimising that mean loss is chosen.
    Holding out pairs instead leaks through transitivity and picked the smallest lam;
    scoring the pairs with one end among the training samples too picked too small a lam.

The solvers and the lam selection live in ``nystrom_priors/_generalized/``, one module each.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._base import BaseEstimator, FactorTransformMixin
from ._generalized import lambda_selection as _selection
from ._generalized.problem import _build_problem
from ._generalized.psd import _factor, _sym
from ._generalized.solve import _LAM_RANGE, _solve_lam
from ._validation import check_option, check_random_state, check_scalar
from .exceptions import ConvergenceWarning
from .nystrom import _LandmarkKernelMixin
from .side_info import check_labels, check_pairs

__all__ = ["GeneralizedNystrom"]

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
        prior exactly. A number below ``mu_max^2 * eps`` (numerically the lam -> 0 limit) is
        raised to it with a warning; above ``mu_max^2 / eps``, S0 is returned when its
        certificate meets ``tol``.
    lam_grid : array-like of float, optional
        Exponents e of the grid ``mu_max^2 * 10^e``; default ``-12, -11, ..., 0``. Within
        ``|e| <= -log10(eps) = 15.65``.
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
        Folds for ``lam="auto"`` (capped by the smallest class size; pairs only: by the
        number of constrained samples).
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
        cross-validated linear SVM ("auto"; pairs only: the scored held-out pairs' squared error)
        or eq. (12) ("nka"). With "auto", small lam that
        cannot win are not scored on every split: NaN where the first CV split stopped its
        path (its mean loss rose > 20% above its best on two consecutive lam), the first
        split's mean where only the second split skipped them (those do not compete for the
        choice).
    cv_error_path_ : ndarray of shape (g,)
        ``lam="auto"``: mean held-out 0/1 error rate of the same SVMs (pairs only: of the
        scored held-out pairs classified by cosine > 1/2); empty otherwise.
    lam_scale_ : float
        ``mu_max^2``, the scale of the data term the lambda grid is relative to (NaN when no
        side information was given).
    n_iter_ : int
        Solver iterations for the final fit.
    converged_ : bool
        Whether the final fit met ``tol``.
    certificate_ : float
        The final optimality measure, <= ``tol`` when converged: an upper bound on the
        relative duality gap or, for pairs solved on the primal (``"apg"``, ``"pgd"``), the
        relative projected-gradient residual. The residual is a stationarity measure, not a
        gap bound: with a nearly singular ``W`` (entries of ``S0`` ~ 1e7, 1-d data, m = 14)
        it has been seen at 1e-9 with the objective 2.4x the optimum. The dual Newton solver
        (``"auto"`` with fewer pairs than entries of S) certifies an exact gap.
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
        e_max = -np.log10(_LAM_RANGE)
        if np.abs(grid).max() > e_max:
            raise ValueError(
                f"lam_grid exponents must be in [{-e_max:.2f}, {e_max:.2f}] (mu_max^2 * 10^e "
                f"within a factor 1 / eps of the data term's scale; beyond it J is numerically "
                f"its lam -> 0 or lam -> inf limit), got {grid.min():g} to {grid.max():g}."
            )
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
        prior_projection, S0_eig = self._fit_prior(with_eig=True)
        S0 = self.S0_
        self.classes_ = labels.classes if labels is not None else np.array([])
        self.lam_path_ = np.array([])
        self.criterion_path_ = np.array([])
        self.cv_error_path_ = np.array([])
        self.lam_scale_ = float("nan")
        if (labels is None and pairs_arr is None) or fixed == np.inf:
            return self._set_solution(S0, np.inf, prior_projection, 0, True, 0.0)

        E_of = lambda rows: self._features_block(X.take(rows)).astype(np.float64)  # noqa: E731
        prob = _build_problem(S0, labels, pairs_arr, E_of, S0_eig=S0_eig)
        if prob.mu_max <= 0.0:
            raise ValueError(
                "The side information is orthogonal to the landmarks (k(X_labeled, Z) = 0): "
                "the kernel cannot express it. Use more landmarks or a wider kernel."
            )
        scale = prob.mu_max * prob.mu_max  # inf, not OverflowError, past float64's range
        if not np.isfinite(scale * (1.0 / _LAM_RANGE)):
            raise ValueError(
                f"The side information's scale mu_max^2 = {scale:.3g} (mu_max: the largest "
                f"eigenvalue of E^T E over the constrained rows) is beyond float64's working "
                f"range: the kernel values are too large (max |E| = "
                f"{np.abs(prob.Mpre).max() ** 0.5:.3g}). Rescale X or the kernel (gamma, coef0, "
                "degree)."
            )
        self.lam_scale_ = float(scale)
        solve_kw = dict(solver=solver, tol=tol, max_iter=max_iter)
        solved = {}  # S's eigendecomposition, when the solver ends with it (_solve_lam)

        if fixed is not None:
            lam = float(fixed)
            if lam < _LAM_RANGE * scale:
                warnings.warn(
                    f"lam={lam:.3g} is below mu_max^2 * eps = {_LAM_RANGE * scale:.3g} for these "
                    f"data (lam_scale_ = {scale:.3g}), where the weights lam + mu_i mu_j of J are "
                    f"within float64 round-off of M's eigenvalues: every smaller lam is the same "
                    f"problem. Solving at lam={_LAM_RANGE * scale:.3g} (lam_).",
                    UserWarning,
                    stacklevel=2,
                )
                lam = _LAM_RANGE * scale
            S, it, cert, ok, _ = _solve_lam(prob, lam, out=solved, **solve_kw)
        else:
            lams = scale * 10.0**grid
            self.lam_path_ = lams
            if self.lam == "nka":
                with Progress(self.verbose, lams.size, "GeneralizedNystrom lambda path", "lam") as pr:
                    crit, sols = _selection._path_nka(prob, lams, labels, solve_kw, pr)
                    pr.close(f"lam={lams[int(np.argmax(crit))]:.3g} maximises the NKA criterion")
                best = int(np.argmax(crit))
                self.criterion_path_ = crit
                lam = float(lams[best])
                S, it, cert, ok = sols[best]
            else:
                on_pairs = labels is None
                if not on_pairs and labels.n_classes < 2:
                    raise ValueError(
                        "lam='auto' cross-validates a classifier on the labels and needs labeled "
                        "samples of at least two classes (these are all one class); pass "
                        "lam='nka' or a number."
                    )
                if on_pairs:
                    n_folds = int(min(cv, np.unique(pairs_arr[:, :2]).size))
                else:
                    n_folds = int(min(cv, np.bincount(labels.codes).min()))
                with Progress(
                    self.verbose, _selection._CV_SPLITS * n_folds * lams.size,
                    "GeneralizedNystrom lambda path (CV)", "fit"
                ) as pr:
                    if on_pairs:
                        losses, errors = _selection._cv_losses_pairs(
                            S0, pairs_arr, E_of, lams, cv, rng, solve_kw, pr, prob.mu_max, S0_eig
                        )
                    else:
                        losses, errors = _selection._cv_losses(
                            S0, labels, pairs_arr, E_of, lams, cv, rng, solve_kw, pr, S0_eig
                        )
                    best = _selection._cv_choice(losses)
                    pr.close(f"lam={lams[best]:.3g} (smallest CV loss)")
                self.criterion_path_ = _selection._nanmean_columns(losses)
                self.cv_error_path_ = _selection._nanmean_columns(errors)
                lam = float(lams[best])
                S, it, cert, ok, _ = _solve_lam(prob, lam, out=solved, **solve_kw)
        if not ok:
            warnings.warn(
                f"GeneralizedNystrom's {solver!r} solver stopped after {it} iterations at lam="
                f"{lam:.3g} with a certified optimality measure of {cert:.2e} > tol={tol:g}; "
                "increase max_iter or relax tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self._set_solution(_sym(S), lam, _factor(S, solved.get("eig")), it, ok, cert)

    def _set_solution(self, S, lam, F, n_iter, converged, cert) -> "GeneralizedNystrom":
        self.S_ = S
        self.lam_ = float(lam)
        self.projection_ = np.ascontiguousarray(F)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.certificate_ = float(cert)
        return self
