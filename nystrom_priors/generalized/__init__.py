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

The default: fast, and never far from the prior
-----------------------------------------------
With ``lam="auto"`` and labels (the defaults), the fit is the **one-step model** at a
cross-validated lam (``generalized/_lam.py``). S changes only on the span of the labeled
rows, ``S = S0 + V (Y - C) V^T`` (V: an orthonormal basis of ``range(E_l^T)`` in
``range(S0)``; ``S >= 0`` iff ``Y >= 0``), and Y is the minimiser over the PSD cone of the
separable majoriser of J at its unconstrained optimum (weights ``sqrt((lam + mu_i^2)(lam +
mu_j^2)) >= lam + mu_i mu_j``): one eigendecomposition of a p x p matrix, p the rank of the
labeled rows. Where the PSD constraint is inactive (large lam) it is J's exact optimum.
lam is chosen among ``mu_max^2 * 10^e`` and ``inf`` (the prior, plain Nystrom) by the held-out
loss of a ridge classifier on the same model, refitted on stratified folds: a ramp on each
held-out row's margin in units of the training rows' RMS margin (bounded and blind to the
scale of the scores, which small lam inflates). A lam must beat the prior in a one-sided paired
t-test over the folds at a nominal 1% level (repeated splits hold out the same samples, so
it is looser: on labels unrelated to X it often leaves the prior, at chance error either
way), so the prior is kept unless the labels clearly say otherwise. The choice costs
O(folds * grid * p^3) on top of the landmarks (a fold trains on at most 120 directions), never
an l x l or n x l array; docs/design/lam_selection.md gives the evidence.

Exact solvers
-------------
A fixed ``lam``, pairs, or an explicit ``solver`` solve J itself to a certified ``tol``
(a relative duality gap: Lagrangian for labels on the primal, Fenchel otherwise):

``"auto"``
    ``"newton"`` when the dual is the smaller problem (fewer constrained entries than entries
    of S: l < m for labels), ``"apg"`` otherwise; the one-step model with ``lam="auto"`` on
    labels alone.
``"onestep"``
    The one-step model above (labels alone, or pairs alone: ``_lam_pairs.py``), at a fixed or
    cross-validated lam.
``"apg"``
    Accelerated projected gradient (FISTA with gradient restarts) in preconditioned
    coordinates. In M's eigenbasis (M = U diag(mu) U^T) the labeled objective is
    ``sum_ij (lam + mu_i mu_j)(S~_ij - c_ij)^2``: a weighted distance to the unconstrained
    optimum, with condition number ~ mu_max^2 / lam. The congruence
    ``V = D S~ D``, ``D = diag((lam + mu_i^2)^(1/4))``, keeps the PSD cone and bounds the weights
    in ``(sqrt(lam)/mu_max, 1]``: condition number ~ mu_max / sqrt(lam), Lipschitz constant 2.
``"pgd"``
    The paper's method: gradient mapping with Armijo-Goldstein backtracking (Sec. 3.4) in the
    original coordinates. The paper's eq. (7) writes ``+eta grad``: the descent step is
    ``S <- P_psd(S - grad / A)``.
``"newton"``
    Semismooth Newton-CG on the dual (``generalized/_dual.py``): the dual lives on the
    constrained entries only, is unconstrained and strongly concave, and every dual point
    gives a PSD primal ``S = P_psd(S0 - A*(R)/lam)`` and an exact duality gap. A cold start at
    small lam continues on the dual of the log-barrier problem ``J(S) - tau log det S`` with
    tau driven to 0 (``_barrier.py``), whose steps do not grow as lam shrinks. Should a solve
    still not certify, its last primal iterate goes to APG.

Never on the relative decrease of J, which stops 1e-3..1e-1 above the optimum.

Choosing lam
------------
``"auto"`` (default)
    Labels: the cross-validation above (also with pairs, whose exact solve then follows).
    Pairs only: the pairs' one-step model (``generalized/_lam_pairs.py``: one majorisation
    step from the prior, the entries no pair constrains held at the prior's values), folds
    that deal the constrained *samples* into groups, held-out pairs with both ends in a group
    scored by the squared error of the learned kernel's cosine ``K_ij / sqrt(K_ii K_jj)`` to
    the targets 1 / 0, the prior among the candidates and the same one-sided gate; then J is
    solved exactly at the chosen lam (``solver="onestep"``: the one-step model itself).
``"nka"``
    The paper's eq. (12): maximise ``rho(S, S0) * rho(E_l S E_l^T, K*)`` (centred alignment).
    When W is ill-conditioned ``rho(S, S0)`` stays ~1 for every lam: the rule then degenerates
    to the grid's smallest lam."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._base import BaseEstimator, FactorTransformMixin, side_info_fit
from .._feature_names import _user_stacklevel
from .._threads import blas_threads
from .._validation import check_option, check_random_state, check_scalar
from ..exceptions import ConvergenceWarning
from ..nystrom import _LandmarkKernelMixin
from ..side_info import all_unlabeled, check_labels, check_pairs
from . import _lam, _lam_pairs
from ._problem import _build_problem, _factor, _in_range, _sym, _top_gram_eig
from ._solver import _LAM_RANGE, _solve_lam, convergence_remedy, scale_guard

__all__ = ["GeneralizedNystrom"]

_SOLVERS = ("auto", "onestep", "newton", "apg", "pgd")
# lam_grid's length: its 31 decades at a third of a decade, far finer than the folds resolve
_MAX_GRID = 100
# lam_grid's default exponents: every other decade from mu_max^2 * 1e-10, where the data term
# already weighs as much as the prior along directions the labeled rows span 1e5 times more
# weakly than their strongest, to mu_max^2. A step further (1e-12) fits directions weaker
# still, which are mostly noise, and costs the most of any candidate: a full
# eigendecomposition in every cross-validation round (design notes, twelfth round).
_DEFAULT_GRID = np.arange(-10.0, 0.5, 2.0)


def _floored(lam: float, scale: float) -> float:
    """lam, raised with a warning to ``mu_max^2 * eps`` below which J is numerically its
    lam -> 0 limit."""
    if lam < _LAM_RANGE * scale:
        warnings.warn(
            f"lam={lam:.3g} is below mu_max^2 * eps = {_LAM_RANGE * scale:.3g} for these "
            f"data (lam_scale_ = {scale:.3g}), where the weights lam + mu_i mu_j of J are "
            f"within float64 round-off of M's eigenvalues: every smaller lam is the same "
            f"problem. Solving at lam={_LAM_RANGE * scale:.3g} (lam_).",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
        return _LAM_RANGE * scale
    return lam


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
        Exponents e of the grid ``mu_max^2 * 10^e`` searched by "auto" and "nka" (a number
        lam ignores it; a repeated e counts once); default ``-10, -8, ..., 0``. Within ``|e|
        <= -log10(eps) = 15.65``, at most ``_MAX_GRID`` (100): each costs a solve per
        cross-validation round and a held-out loss per labeled sample.
    solver : {"auto", "onestep", "newton", "apg", "pgd"}, default="auto"
        ``"onestep"``: the closed-form one-step model (labels or pairs, not both; lam "auto"
        or a number); the others solve J exactly: the dual semismooth Newton-CG, the
        preconditioned accelerated projected gradient, or the paper's gradient mapping.
        ``"auto"``: the one-step model with ``lam="auto"`` on labels alone, else the
        smaller of the exact primal and dual solvers (see the module docstring).
    tol : float, default=1e-6
        Certified tolerance: an upper bound on the relative duality gap. The gap is computed
        in float64 from terms the prior dominates, so a ``tol`` below about 1e-8 may be
        below its round-off where S0 is large (a nearly singular landmark kernel).
    max_iter : int, optional
        Iterations of an exact solver per lam solved, all its phases together (for
        "newton": semismooth, barrier and APG steps); default 20000 for "pgd", else 2000.
    cv : int or None, default=None
        Folds per split for ``lam="auto"``, capped by the number of labeled (or, pairs only,
        constrained) samples. Labels: stratified, three independent splits of 4 folds when
        None up to 500 labels, one split of 5 above. Pairs only: two splits of 5 when None.
    random_state : None, int or Generator
        Landmarks and cross-validation folds.
    verbose : bool or int, default=0
        Progress of the lambda path (one step per lambda and fold): 1 shows a tqdm bar (when
        installed) and logs start/end on the ``nystrom_priors`` logger, 2 logs every step.

    Attributes
    ----------
    landmarks_, width_, gamma_, kernel_, degree_, coef0_, eigenvalues_, n_components_
        As in :class:`Nystrom`, and so are ``n_features_in_`` and ``feature_names_in_``.
    S0_ : ndarray of shape (m, m)
        The prior ``W^+``.
    S_ : ndarray of shape (m, m)
        The learned inverse dictionary kernel (PSD).
    lam_ : float
        The lam used; ``np.inf`` where S = S0 for want of a data term (lam=np.inf, no side
        information, labels lam="auto" cannot score) or where lam="auto" keeps the prior.
    lam_path_ : ndarray of shape (g,) or (g + 1,)
        lam values searched (empty when lam is fixed); with ``lam="auto"`` the last
        candidate is ``inf``, the prior.
    criterion_path_ : ndarray, shape of ``lam_path_``
        Selection criterion per candidate: mean held-out scaled margin ramp loss per sample
        of the cross-validated ridge classifier ("auto" on labels; see the module docstring;
        a lam a later split raced out is averaged over the folds that scored it),
        the scored held-out pairs' mean squared cosine error (pairs only, the pairs' one-step
        model), or eq. (12) ("nka"). The last entry is the prior's ("auto").
    cv_error_path_ : ndarray, shape of ``lam_path_``
        ``lam="auto"``: mean held-out 0/1 error rate of the same classifiers (pairs only: of
        the scored held-out pairs classified by cosine > 1/2); empty otherwise.
    lam_scale_ : float
        ``mu_max^2``, the scale of the data term the lambda grid is relative to (NaN where
        ``lam_`` is inf for want of a data term).
    n_iter_ : int
        Solver iterations for the final fit: 1 for the one-step model, also where its
        cross-validation keeps the prior (the selection is the step); 0 where the prior is
        returned without a solve (no data term, or ``lam`` above ``mu_max^2 / eps``).
    converged_ : bool
        Whether the final fit met ``tol``.
    certificate_ : float
        NaN for the one-step model (a closed form, not a solution of J; ``n_iter_`` 1); 0
        where ``S_ = S0`` is J's optimum to round-off (``n_iter_`` 0, or lam="auto" keeps it).
        Otherwise the final optimality measure, <= ``tol`` when converged: an upper bound on
        ``(J(S_) - min J) / J(S_)``, a duality gap. With pairs the primal solvers (``"apg"``,
        ``"pgd"``) take the dual point ``A(S) - t``; where ``W`` is nearly singular (1-d
        data: entries of ``S0`` ~ 1e12) their round-off, amplified by ``1 / lam``, can keep
        that gap above ``tol`` at the optimum, and the fit warns rather than claims it.
    classes_ : ndarray
        The classes of the labeled samples of ``y``, sorted (any label type: numbers,
        strings, ...; see the user guide, "Label types"); empty without labels.
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
        cv: int | None = None,
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

    def _check_params(self) -> dict:
        from .._progress import check_verbose

        check_verbose(self.verbose)
        solver = check_option(self.solver, "solver", _SOLVERS)
        tol = check_scalar(self.tol, "tol", lo=0.0, lo_closed=False, hi=1.0)
        max_iter = 20000 if solver == "pgd" else 2000
        if self.max_iter is not None:
            max_iter = int(check_scalar(self.max_iter, "max_iter", kind="int", lo=1))
        cv = None if self.cv is None else int(check_scalar(self.cv, "cv", kind="int", lo=2))
        lam = self.lam
        if isinstance(lam, str):
            if lam not in ("auto", "nka"):
                raise ValueError(f"lam must be 'auto', 'nka' or a number in (0, inf], got {lam!r}.")
            if solver == "onestep" and lam == "nka":  # eq. (12) scores exact solutions
                raise ValueError("solver='onestep' takes lam='auto' or a number, not 'nka'.")
            fixed = None
        else:
            fixed = check_scalar(lam, "lam", lo=0.0, lo_closed=False, allow_inf=True)
        try:
            if self.lam_grid is None:
                grid = _DEFAULT_GRID.copy()
            else:
                raw = np.asarray(self.lam_grid, dtype=object)
                if any(isinstance(v, (bool, np.bool_)) for v in raw.ravel()):
                    raise TypeError("True / False are not exponents")
                grid = raw.astype(float)
        except (TypeError, ValueError):  # bools, strings, ragged lists, objects
            grid = np.empty(0)
        if grid.ndim != 1 or grid.size == 0 or not np.isfinite(grid).all():
            raise ValueError(
                "lam_grid must be a non-empty 1-D array of finite exponents, got "
                f"{self.lam_grid!r}."
            )
        if grid.size > _MAX_GRID:
            raise ValueError(
                f"lam_grid has {grid.size} exponents; at most {_MAX_GRID} are accepted (each "
                "costs a solve per cross-validation round and a held-out loss per labeled "
                "sample; the default has 6). Pass a coarser grid."
            )
        e_max = -np.log10(_LAM_RANGE)
        if np.abs(grid).max() > e_max:
            raise ValueError(
                f"lam_grid exponents must be in [{-e_max:.2f}, {e_max:.2f}] (mu_max^2 * 10^e "
                f"within a factor 1 / eps of the data term's scale; beyond it J is numerically "
                f"its lam -> 0 or lam -> inf limit), got {grid.min():g} to {grid.max():g}."
            )
        grid = np.unique(grid)[::-1]  # the candidates, largest lam first
        return dict(solver=solver, fixed=fixed, grid=grid, tol=tol, max_iter=max_iter, cv=cv)

    # ----- fitting ---------------------------------------------------------------------------
    @side_info_fit
    def fit(self, X: Any, y: Any = None, *, pairs: Any = None) -> GeneralizedNystrom:
        """Learn S from labels ``y`` (-1 = unlabeled) and/or ``pairs`` ([i, j, +-1] rows).

        Unlabeled samples still shape the landmarks (and the default width). Without any side
        information (``y`` None or all -1, no pairs) the result is the Nystrom prior.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), optional
            Class labels of any type (numbers, strings, a pandas Series or Categorical);
            -1, None or NaN mark unlabeled samples.
        pairs : array-like of shape (k, 3), optional
            Index pairs ``[i, j, +-1]`` into X. metric-learn's point pairs of shape
            (k, 2, d) are passed as X instead, ``fit(pairs, y)`` with ``y`` = +-1 per pair
            (the user guide, "metric-learn's pairs format", gives the mapping).

        Returns
        -------
        self
        """
        from .._rows import RowSource

        params = self._check_params()
        X = RowSource(X)  # in memory, memmap or dask: only sampled and labeled rows are read
        labels, pairs_arr = self._side_information(y, pairs, X.n, params)
        rng = check_random_state(self.random_state)
        self._fit_landmarks(X, rng)
        # m x m algebra between jitted passes: one BLAS thread, no spinning worker on a core
        with blas_threads(self.landmarks_.shape[0]):
            return self._fit_kernel(X, labels, pairs_arr, params, rng)

    def _fit_kernel(self, X, labels, pairs_arr, params, rng) -> GeneralizedNystrom:
        """The prior and the learned S, landmarks chosen."""
        prior_projection, S0_eig = self._fit_prior(with_eig=True)
        self._reset_paths(labels)
        if (labels is None and pairs_arr is None) or params["fixed"] == np.inf:
            return self._set_solution(self.S0_, np.inf, prior_projection, 0, True, 0.0)
        if self.lam == "auto" and not _lam_pairs.can_score(labels, pairs_arr):  # it warns
            return self._set_solution(self.S0_, np.inf, prior_projection, 0, True, 0.0)
        E_of = lambda rows: _in_range(self._features_block(X.take(rows)))  # noqa: E731
        prior = (prior_projection * np.sqrt(self.eigenvalues_), self.eigenvalues_)  # U0, w
        if self._one_step(params, labels, pairs_arr):
            rows, select, model = _lam_pairs.one_step_side(labels, pairs_arr, params, rng, X.take)
            return self._fit_one_step(E_of(rows), select, model, prior, prior_projection, params)
        prob = self._problem(labels, pairs_arr, E_of, S0_eig)
        with scale_guard(self.lam_scale_):  # LinAlgError of an overflow: the data's scale
            lam, solution, guess = self._choose_lam(
                prob, labels, pairs_arr, E_of, S0_eig, prior, params, rng
            )
            if np.isinf(lam):  # the cross-validation kept the prior
                return self._set_solution(self.S0_, np.inf, prior_projection, 0, True, 0.0)
            solved = {}  # S's eigendecomposition, when the solver ends with it (_solve_lam)
            if solution is not None:  # same problem, lam and tolerance: no second solve
                S, it, cert, ok = solution
            else:
                S, it, cert, ok, _ = _solve_lam(
                    prob,
                    lam,
                    params["solver"],
                    params["tol"],
                    params["max_iter"],
                    out=solved,
                    S_guess=guess,
                )
        F = _factor(S, solved.get("eig"))
        if not ok:
            empty = " Its last iterate is S = 0: transform gives no feature." if not F.size else ""
            warnings.warn(
                f"GeneralizedNystrom's {params['solver']!r} solver stopped after {it} iterations "
                f"at lam={lam:.3g} with a certified optimality measure of {cert:.2e} > "
                f"tol={params['tol']:g}; "
                + convergence_remedy(
                    self.eigenvalues_,
                    params["tol"],
                    params["solver"],
                    self.lam != "nka" and (labels is None or pairs_arr is None),
                )
                + empty,
                ConvergenceWarning,
                stacklevel=_user_stacklevel(),
            )
        return self._set_solution(_sym(S), lam, F, it, ok, cert)

    def _side_information(self, y, pairs, n, params):
        """Validated (labels or None, pairs or None), with the warnings of degenerate input."""
        labels = None
        if y is None and pairs is None:
            warnings.warn(
                "GeneralizedNystrom.fit got no side information (y and pairs are None): the "
                "learned kernel is the Nystrom prior; pass y (-1 = unlabeled) or pairs.",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
        if y is not None:
            if all_unlabeled(y, n):
                if pairs is None:  # with pairs, the pairs are the side information
                    warnings.warn(
                        "y has no labeled sample (every entry is -1, None or NaN) and no pairs are "
                        "given: the learned kernel is the Nystrom prior.",
                        UserWarning,
                        stacklevel=_user_stacklevel(),
                    )
            else:
                labels = check_labels(y, n)
                # lam="auto" keeps the prior and says why (``_lam_pairs.can_score``)
                if labels.n_classes == 1 and pairs is None and self.lam != "auto":
                    warnings.warn(
                        "All labeled samples belong to one class: the ideal kernel is constant "
                        "on them and carries no class information." + labels.one_class_hint(),
                        UserWarning,
                        stacklevel=_user_stacklevel(),
                    )
        pairs_arr = None if pairs is None else check_pairs(pairs, n)
        if params["solver"] == "onestep" and pairs_arr is not None and labels is not None:
            raise ValueError(
                "solver='onestep' takes labels or pairs, not both (its closed form is that of "
                "one data term); with both use solver='auto', 'apg', 'newton' or 'pgd'."
            )
        return labels, pairs_arr

    def _reset_paths(self, labels) -> None:
        self.classes_ = labels.classes if labels is not None else np.array([])
        self.lam_path_ = np.array([])
        self.criterion_path_ = np.array([])
        self.cv_error_path_ = np.array([])
        self.lam_scale_ = float("nan")

    def _one_step(self, params, labels, pairs_arr) -> bool:
        """Whether the fit is the one-step model (``generalized/_lam.py``, ``_lam_pairs.py``):
        asked for (labels alone or pairs alone), or the default solver with lam="auto" on
        labels alone. On pairs the default solves J exactly at the lam the one-step model's
        cross-validation chose: one step from the prior leaves the entries no pair constrains
        at the prior's values, far from J's optimum where the pairs are sparse."""
        if self.lam == "nka" or (labels is not None and pairs_arr is not None):
            return False
        if params["solver"] == "onestep":
            return True
        return params["solver"] == "auto" and self.lam == "auto" and pairs_arr is None

    def _fit_one_step(self, El, select, model, prior, prior_projection, params):
        """The one-step model at a fixed or cross-validated lam (``select``, ``model``:
        ``_lam_pairs.one_step_side``); ``El``: the constrained rows of E, ``prior`` = (U0, w)
        with ``S0 = U0 diag(1 / w) U0^T``."""

        U0, w = prior
        PE = El @ U0
        mu_max = _top_gram_eig(El)
        scale = mu_max * mu_max
        self._check_scale(scale, El)
        self.lam_scale_ = float(scale)
        if params["fixed"] is not None:
            lam = _floored(float(params["fixed"]), scale)
            if lam * _LAM_RANGE > scale:  # J is its lam -> inf limit: the prior, exactly
                return self._set_solution(_sym(self.S0_), lam, prior_projection, 0, True, 0.0)
            rel = lam / scale
        else:
            e, crit, err = self._select_lam(select, PE, w, params)
            self.lam_path_ = np.append(scale * 10.0 ** params["grid"], np.inf)
            self.criterion_path_, self.cv_error_path_ = crit, err
            if e is None:  # the selection ran (one step) and kept the prior
                return self._set_solution(self.S0_, np.inf, prior_projection, 1, True, 0.0)
            rel = 10.0**e
        S, F = _lam.in_landmarks(model, PE, w, U0, rel)
        return self._set_solution(S, rel * scale, F, 1, True, float("nan"))

    def _select_lam(self, select, PE, w, params):
        """``select(PE, w)`` (``_lam_pairs.one_step_side``), every fold and lam in one call."""
        from .._progress import Progress

        with Progress(self.verbose, 1, "GeneralizedNystrom lambda path (CV)", "fit") as pr:
            e, crit, err = select(PE, w)
            pr.update(1, loss=float(np.nanmin(crit, initial=np.inf)))
            pr.close("the prior (no lam beat it)" if e is None else f"lam = mu_max^2 * 1e{e:g}")
        if np.isnan(crit).all():
            what = (
                "held-out pair with training pairs left (every pair touches every group of "
                "held-out samples); give more pairs"
                if self.classes_.size == 0
                else "labeled sample to hold out whose class has another labeled sample (a "
                "class labeled once cannot be predicted once held out); label at least two "
                "samples per class"
            )
            warnings.warn(
                f"lam='auto' kept the Nystrom prior: cross-validation found no {what} or pass "
                "lam as a number.",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
        return e, crit, err

    def _problem(self, labels, pairs_arr, E_of, S0_eig):
        prob = _build_problem(self.S0_, labels, pairs_arr, E_of, S0_eig=S0_eig)
        scale = prob.mu_max * prob.mu_max  # inf, not OverflowError, past float64's range
        self._check_scale(scale, None, prob)
        self.lam_scale_ = float(scale)
        return prob

    @staticmethod
    def _check_scale(scale, El=None, prob=None) -> None:
        """Refuse a mu_max^2 that is 0 or outside the range the lam grid can span."""
        top = np.abs(El).max(initial=0.0) if El is not None else np.abs(prob.Mpre).max() ** 0.5
        if not scale > 0.0 and top > 0.0:  # mu_max^2 underflowed: not a zero kernel
            raise ValueError(
                f"The side information's scale mu_max^2 (mu_max: the largest eigenvalue of "
                f"E^T E over the constrained rows) underflows float64: the kernel values are "
                f"too small (max |E| = {top:.3g}). Use more landmarks or a wider kernel, or "
                "rescale X or the kernel (gamma, coef0, degree)."
            )
        if not scale > 0.0:
            raise ValueError(
                "The side information is orthogonal to the landmarks (k(X_labeled, Z) = 0): "
                "the kernel cannot express it. Use more landmarks or a wider kernel."
            )
        if not np.isfinite(scale * (1.0 / _LAM_RANGE)):
            raise ValueError(
                f"The side information's scale mu_max^2 = {scale:.3g} (mu_max: the largest "
                f"eigenvalue of E^T E over the constrained rows) is beyond float64's working "
                f"range: the kernel values are too large (max |E| = {top:.3g}). Rescale X or "
                "the kernel (gamma, coef0, degree)."
            )

    def _choose_lam(
        self, prob, labels, pairs_arr, E_of, S0_eig, prior, params, rng
    ) -> tuple[float, tuple | None, np.ndarray | None]:
        """The lam of the exact solve: fixed, eq. (12) ("nka") or cross-validated ("auto").
        Returns ``(lam, solution, guess)``; for "nka" ``solution`` is the warm-started path's
        ``(S, n_iter, certificate, converged)`` at that lam (the same problem, lam and
        tolerance, so the fit does not solve it again from a cold start), else None; on pairs
        alone ``guess`` is the one-step model the cross-validation chose, whose residuals
        start the dual Newton (``_solve_lam``'s ``S_guess``), else None."""
        from .._progress import Progress

        scale = self.lam_scale_
        solve_kw = dict(solver=params["solver"], tol=params["tol"], max_iter=params["max_iter"])
        if params["fixed"] is not None:
            return _floored(float(params["fixed"]), scale), None, None
        lams = scale * 10.0 ** params["grid"]
        self.lam_path_ = lams
        if self.lam == "nka":
            with Progress(self.verbose, lams.size, "GeneralizedNystrom lambda path", "lam") as pr:
                crit, sols = _lam._path_nka(prob, lams, labels, solve_kw, pr)
                best = _lam.nka_best(crit, lams)
                pr.close(f"lam={lams[best]:.3g} maximises the NKA criterion")
            self.criterion_path_ = crit
            return float(lams[best]), sols[best], None
        # the one-step model's cross-validation, on the labels where there are any. Its
        # exponent e weighs the prior against the data term relative to that term's scale,
        # and carries over as such: mu_max^2 for the one-step model (on pairs its majoriser
        # fills the whole block), J's own scale (prob.mu_max^2: on pairs density * mu_max^2,
        # the share of the block the pairs constrain) for the exact solve.
        _, select, model = _lam_pairs.one_step_side(labels, pairs_arr, params, rng)
        U0, w = prior
        # prob.Ep: E at the pairs' points, sorted as one_step_side's rows
        PE = (prob.El_labels if labels is not None else prob.Ep) @ U0
        e, crit, err = self._select_lam(select, PE, w, params)
        self.lam_path_ = np.append(lams, np.inf)
        self.criterion_path_, self.cv_error_path_ = crit, err
        if e is None:
            return np.inf, None, None
        if labels is not None:
            return scale * 10.0**e, None, None
        return scale * 10.0**e, None, _lam.in_landmarks(model, PE, w, U0, 10.0**e)[0]

    def _set_solution(self, S, lam, F, n_iter, converged, cert) -> GeneralizedNystrom:
        self.S_ = S
        self.lam_ = float(lam)
        self.projection_ = np.ascontiguousarray(F)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.certificate_ = float(cert)
        return self
