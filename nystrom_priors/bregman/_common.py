"""The state and machinery both Bregman learners share: the factored initial kernel, the
constraints (distance bounds, slack, similarity pairs), the sweep driver with its
convergence and infeasibility tests.

**Convergence** is ITML's rule on the duals: ``||lam - lam_old||_1 / (||lam||_2 +
||lam_old||_2) < tol`` after a sweep, *and* the largest relative violation seen in the sweep
``< tol`` (so "converged" means the constraints hold to ``tol``). Infeasible hard constraints
(common once constraints outnumber what rank r can satisfy) make the duals grow without bound
while a relative test on them still shrinks. Every ``infeasible_window`` sweeps we test the
dual increment ``y = max(lam - lam_prev, 0)`` of the window as a Farkas certificate: if
``M = sum_c y_c delta_c A_c`` (in factor coordinates) is PSD and ``sum_c y_c delta_c b_c < 0``,
no PSD kernel meets the constraints (``0 <= tr(K M) <= sum_c y_c delta_c b_c < 0``). The
duals of an infeasible set grow along such a direction, so its finite-window estimate
approaches one. We accept y when it proves that every kernel meeting the constraints has at
least 100 times the trace the bounds' scale asks for (``tr(K) >= sum y delta b /
lambda_min(M)`` where M is nearly PSD; ``_diagnostics.py``), the violation did not halve
over the window and the duals' norm grew over it at a tenth of linear growth or more (a
feasible set's duals converge, however slowly its violation falls), then stop with
:class:`InfeasibleConstraintsWarning` (remedy: a finite ``gamma``). A feasible plateau,
where a sweep leaves the kernel unchanged while dual mass moves between constraints, gives
an indefinite M and is not flagged.

**Inductive use.** With ``init="nystrom"``, ``G0 = k(X, Z) U diag(w)^{-1/2}`` is the Nystrom
factor, defined for any sample, so new samples get ``G0_new B``; the 2006 method becomes
inductive (the paper does not claim this). With ``init="linear"`` (``G0 = X``, or its top-r
principal directions when ``rank < d``) the learner is kernelised ITML: the learned kernel is
``X A X^T`` with the Mahalanobis matrix ``A = P0 B B^T P0^T``. A user-given factor is passed as
``X`` with ``init="linear"`` (its rows are then the factor rows of ``K0``).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from .._base import BaseEstimator, FactorTransformMixin
from .._feature_names import _user_stacklevel
from .._labels import _given
from .._validation import check_option, check_scalar, dense_array
from ..exceptions import ConvergenceWarning, InfeasibleConstraintsWarning
from ..nystrom import _LandmarkKernelMixin
from ..side_info import (
    _pair_rows,
    check_pairs,
    side_pairs,
)
from ._bounds import (
    _BOUND_RULES,
    _check_percentiles,
    _zero_length_tol,
    distance_bounds,
    pair_lengths,
    tightest_bounds,
    zero_length_message,
)
from ._diagnostics import _stretch_hint
from ._linear_init import top_right_singular_vectors, top_right_singular_vectors_streamed
from ._sweeps import run_sweeps

_INITS = ("nystrom", "linear")


def _check_similarity_pairs(pairs: Any, n: int) -> np.ndarray:
    """Similarity constraints ``[i, j, +-1]`` as int64 with ``i <= j`` (``i == j`` bounds a
    diagonal entry); values are checked as given, before the cast (see ``_pair_rows``)."""
    arr = _pair_rows(
        pairs,
        n,
        name="similarity_pairs",
        empty="similarity_pairs is empty; give at least one constraint or None.",
        allow_self=True,
        signs="+1 (K_ij >= bound) or -1 (K_ij <= bound)",
    )
    return np.concatenate([np.sort(arr[:, :2], axis=1), arr[:, 2:]], axis=1)


def _refuse_negative_diagonal(S: np.ndarray, bounds: np.ndarray) -> None:
    """Refuse ``K_ii <= b`` with ``b < 0``: a PSD kernel's diagonal is never negative, so no
    learner can meet it (refused up front rather than left to the infeasibility test)."""
    bad = np.flatnonzero((S[:, 0] == S[:, 1]) & (S[:, 2] == -1) & (bounds < 0))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"similarity constraint {k} ([{S[k, 0]}, {S[k, 0]}, -1]) asks K[{S[k, 0]}, {S[k, 0]}] "
            f"<= {bounds[k]:g}, but a PSD kernel's diagonal entries are >= 0 ({bad.size} "
            "such constraint(s)); a diagonal upper bound must be >= 0."
        )


def _check_bounds(bounds: Any, k: int, name: str, *, positive: bool) -> np.ndarray:
    """``bounds`` as a float64 array of shape (k,): real numbers (not strings, booleans or
    complex numbers, which a cast would parse or truncate), finite, and > 0 if ``positive``."""
    form = f"{name} must be an array of shape ({k},) (one per pair)"
    if bounds is None:
        raise ValueError(f"{form}, got None.")
    raw = dense_array(bounds, name, f"{form}, a dense array of real numbers")
    if raw.shape != (k,):
        raise ValueError(f"{form}, got shape {raw.shape}.")
    # the entries as given (a list mixing numbers and strings becomes all strings)
    given = None if raw.dtype.kind in "iuf" else np.asarray(bounds, dtype=object).reshape(-1)
    if given is not None:
        bad = next(
            (
                t
                for t, v in enumerate(given)
                # Real numbers and other non-complex numbers (Decimal, Fraction); not bool
                if isinstance(v, (bool, np.bool_))
                or not isinstance(v, numbers.Number)
                or (isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real))
            ),
            None,
        )
        if bad is not None:
            v = _given(given[bad])
            raise TypeError(
                f"{name} must hold real numbers (int or float), one bound per pair; got "
                f"{name}[{bad}] = {v!r} ({type(v).__name__}, array dtype {raw.dtype})."
            )
    try:
        b = raw.astype(np.float64)
    except OverflowError:  # Python ints beyond float64 (object arrays only)
        top = float(np.finfo(np.float64).max)  # a Python float: compared with ints exactly
        k0 = next(t for t, v in enumerate(given) if abs(v) > top)
        raise ValueError(
            f"{name} must be finite in float64, got {name}[{k0}] = {given[k0]!r}."
        ) from None
    if not np.all(np.isfinite(b)):
        k0 = int(np.flatnonzero(~np.isfinite(b))[0])
        raise ValueError(f"{name} must be finite, got {name}[{k0}] = {float(b[k0])!r}.")
    if positive and (b <= 0).any():
        k0 = int(np.flatnonzero(b <= 0)[0])
        raise ValueError(
            f"{name}[{k0}] = {float(b[k0])!r}: squared-distance bounds must be > 0 (the Burg "
            "and von Neumann projections need them positive)."
        )
    return b


class _FactorRows:
    """Rows of the initial factor ``G0 = F(X) P0`` computed on demand (float64).

    The learners need G0 only on the constrained samples (plus, for von Neumann, the r x r
    Gram matrix ``G0^T G0`` or G0's triangular factor, a streaming pass each), so fitting
    reads the sampled landmark rows, the constrained rows and one or two passes over X:
    memmaps and dask arrays stay out of core.
    """

    def __init__(self, learner: Any, src: Any) -> None:
        self.learner = learner
        self.src = src
        self.keys = np.zeros(0, dtype=np.int64)
        self.vals = np.zeros((0, learner.P0_.shape[1]))
        self.dtype = np.dtype(np.float64)  # dtype the rows are computed in (before the cast)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.src.n, self.vals.shape[1])

    def _rows(self, X: np.ndarray) -> np.ndarray:
        rows = self.learner._transform_validated(X)
        self.dtype = rows.dtype
        return rows.astype(np.float64)

    def prefetch(self, idx: np.ndarray) -> None:
        need = np.setdiff1d(np.unique(np.asarray(idx, dtype=np.int64)), self.keys)
        if need.size:
            keys = np.concatenate([self.keys, need])
            vals = np.concatenate([self.vals, self._rows(self.src.take(need))])
            order = np.argsort(keys)
            self.keys, self.vals = keys[order], vals[order]

    def __getitem__(self, idx: Any) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        pos = np.searchsorted(self.keys, idx)
        if idx.size and (pos.max() >= self.keys.size or not np.array_equal(self.keys[pos], idx)):
            raise RuntimeError("internal: factor rows requested before prefetch")
        return self.vals[pos]

    def local(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of G0 for the pairs' samples, the pairs re-indexed into them)."""
        rows, inv = np.unique(pairs[:, :2], return_inverse=True)
        return self[rows], np.column_stack([inv.reshape(-1, 2), pairs[:, 2]])

    def gram(self) -> np.ndarray:
        """``G0^T G0`` over all training rows, one block at a time."""
        r = self.vals.shape[1]
        H = np.zeros((r, r))
        for _, blk in self.src.blocks():
            g = self._rows(blk)
            H += g.T @ g
        return H

    def r_factor(self) -> np.ndarray:
        """R (at most r x r, upper triangular) with ``R^T R = G0^T G0`` over all training
        rows, by a QR factorisation of each block stacked under the R so far (one pass).

        R's singular values are G0's to about eps times the largest: the Gram matrix G0^T G0
        would hold them squared, with rounding eps times the largest square, and lose every
        direction below sqrt(eps) times the strongest (X with a large common offset)."""
        R = np.zeros((0, self.vals.shape[1]))
        for _, blk in self.src.blocks():
            R = np.linalg.qr(np.vstack([R, self._rows(blk)]), mode="r")
        return R


class _BregmanKernelLearner(_LandmarkKernelMixin, FactorTransformMixin, BaseEstimator):
    """Shared parts: the initial factor G0, constraints, bounds, stopping and reporting."""

    _similarity = False  # whether the learner accepts similarity constraints
    infeasible_window = 25

    # -- kernel / features ---------------------------------------------------------------
    def _kernel_gamma_param(self) -> Any:
        return self.kernel_gamma

    _kernel_gamma_name = "kernel_gamma"

    def _validate_params(self) -> None:
        """Check every parameter on its own (type and range), without data (see
        :meth:`Nystrom._validate_params`)."""
        super()._validate_params()
        check_option(self.init, "init", _INITS)
        if "gamma" in self._param_names():
            check_scalar(self.gamma, "gamma", lo=0.0, lo_closed=False, allow_inf=True)
        self._check_fit_params()
        check_option(self.bound_rule, "bound_rule", _BOUND_RULES)
        check_scalar(self.epsilon, "epsilon", lo=0.0, hi=1.0, hi_closed=False)
        _check_percentiles(self.percentiles)
        for name in ("n_constraints", "rank"):
            if getattr(self, name) is not None:
                check_scalar(getattr(self, name), name, kind="int", lo=1)

    def _features_block(self, X: np.ndarray) -> np.ndarray:
        if self.init_ == "nystrom":
            return _LandmarkKernelMixin._features_block(self, X)
        return X

    def _project_into(self, X: np.ndarray, P: np.ndarray, out: np.ndarray) -> bool:
        if self.init_ == "nystrom":
            return _LandmarkKernelMixin._project_into(self, X, P, out)
        return False

    def _initial_factor(self, X: Any, rng: np.random.Generator) -> _FactorRows:
        """Set ``init_`` and the initial projection ``P0``; return the rows of ``G0 = F(X) P0``
        on demand (only the constrained samples' rows are ever computed)."""
        from .._rows import RowSource

        X = RowSource(X)
        init = check_option(self.init, "init", _INITS)
        self.init_ = init
        self.n_features_in_ = X.shape[1]
        rank = self.rank
        if rank is not None:
            rank = int(check_scalar(rank, "rank", kind="int", lo=1))
        if init == "nystrom":
            self._fit_landmarks(X, rng)
            P0 = self._fit_prior()
            # what gives infeasible constraints more room (the warnings' remedy, ``_remedy``)
            truncated = rank is not None and rank < P0.shape[1]
            more = self.landmarks_.shape[0] < X.shape[0]  # every sample a landmark: no more
            room = ["a larger rank"] * truncated + ["more landmarks"] * more
            self._room = " or ".join(room)
            if truncated:
                P0 = P0[:, :rank]  # eigenvalues are descending: the top-rank Nystrom factor
        else:
            d = X.shape[1]
            self._room = "a larger rank" if rank is not None and rank < d else ""
            wide = None
            if rank is not None and rank < d and X.shape[0] < d and not X.lazy:
                wide = top_right_singular_vectors(X.X, rank)
            if rank is None or rank >= d:
                if rank is None and d * d > _SQUARE_FEATURES:
                    warnings.warn(
                        f"init='linear' on {d} features keeps a {d} x {d} initial factor "
                        f"({d * d * 8 / 2**20:,.0f} MiB) and projects in {d} dimensions; pass "
                        "rank= to learn on the top singular directions of X instead.",
                        UserWarning,
                        stacklevel=_user_stacklevel(),
                    )
                P0 = np.eye(d)
            elif wide is not None:
                P0 = wide
            else:  # best rank-r linear kernel: top right singular vectors of X (one pass)
                P0 = top_right_singular_vectors_streamed(X, rank)
        if rank is not None and rank > P0.shape[1]:
            # the linear kernel's rank is X's, which only the d columns of G0 = X bound
            what = (
                f"the rank {P0.shape[1]} of the initial kernel"
                if init == "nystrom"
                else f"the {P0.shape[1]} features of X, the largest rank of the initial "
                "kernel X X^T (init='linear')"
            )
            warnings.warn(
                f"rank={rank} exceeds {what}; Bregman learning preserves the initial rank, so "
                f"at most rank {P0.shape[1]} is used.",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
        self.P0_ = np.ascontiguousarray(P0, dtype=np.float64)
        self.projection_ = self.P0_
        return _FactorRows(self, X)

    def _remedy(self, first: str) -> str:
        """The infeasibility remedy: ``first``, fewer or looser constraints, and more room for
        the kernel where there is any (a larger rank below the initial kernel's, more
        landmarks with ``init="nystrom"``; a full-rank linear kernel has none)."""
        room = getattr(self, "_room", "")
        fewer = (
            "fewer constraints (n_constraints, or fewer pairs) or looser derived bounds (a larger "
            "epsilon with bound_rule='relative', wider percentiles with 'percentile', or your "
            "own bounds)"
        )
        return f"{first}, {fewer}" + (f", or {room}." if room else ".")

    # -- constraints ---------------------------------------------------------------------
    def _constraints(
        self,
        G0: _FactorRows,
        y: Any,
        pairs: Any,
        bounds: Any,
        sim_pairs: Any,
        sim_bounds: Any,
        rng: np.random.Generator,
    ) -> dict:
        n = G0.shape[0]
        blocks = []
        bound_blocks = []
        if sim_pairs is None and sim_bounds is not None:
            raise ValueError("similarity_bounds were given without similarity_pairs.")
        drawn, checked, kept = side_pairs(y, pairs, n, self.n_constraints, random_state=rng)
        if drawn is not None and checked is not None and bounds is not None:
            # a pair given with its bound wins over its drawn copy (default bound); without
            # bounds the drawn copy stays first, in its place in the order
            drawn = drawn[~np.isin(_pair_keys(drawn, n), _pair_keys(checked, n))]
        if drawn is not None:
            blocks.append(drawn)
            bound_blocks.append(None)
        if pairs is not None:
            if bounds is not None:  # one per given row, duplicates included
                braw = _check_bounds(bounds, np.shape(pairs)[0], "bounds", positive=True)
            blocks.append(checked)
            bound_blocks.append(None if bounds is None else tightest_bounds(pairs, n, braw, kept))
        elif bounds is not None:
            raise ValueError("bounds were given without pairs.")
        if not blocks and sim_pairs is None:
            raise ValueError(
                "no side information: give y (labels, -1 = unlabeled) or pairs"
                + (" or similarity_pairs." if self._similarity else ".")
            )
        if blocks:
            D = np.concatenate(blocks)
            if len(blocks) > 1:  # labels and pairs together: drop repeats across the two
                with warnings.catch_warnings():  # repeats across the two are expected
                    warnings.simplefilter("ignore", UserWarning)
                    D, kept = check_pairs(D, n, return_index=True)
                bb = [
                    np.full(b.shape[0], np.nan) if bnd is None else bnd
                    for b, bnd in zip(blocks, bound_blocks)
                ]
                given = np.concatenate(bb)[kept]
            else:
                given = (
                    bound_blocks[0] if bound_blocks[0] is not None else np.full(D.shape[0], np.nan)
                )
            G0.prefetch(D[:, :2])
            zero_tol = _zero_length_tol(G0.dtype)
            A, B = G0[D[:, 0]], G0[D[:, 1]]
            zero, differ = pair_lengths(A, B, zero_tol, f"{type(self).__name__} (initial kernel)")
            if zero.any():
                every = bool(zero.all()) and sim_pairs is None
                text = zero_length_message(D, zero, differ, A, B, self, every)
                if every:
                    raise ValueError(text)
                warnings.warn(text, UserWarning, stacklevel=_user_stacklevel())
                D, given = D[~zero], given[~zero]
            missing = np.isnan(given)
            if missing.any():
                rule = check_option(self.bound_rule, "bound_rule", _BOUND_RULES)
                Gm, Dm = G0.local(D[missing])
                given[missing] = distance_bounds(
                    Gm,
                    Dm,
                    rule=rule,
                    epsilon=self.epsilon,
                    percentiles=self.percentiles,
                    random_state=rng,
                    zero_length=zero_tol,
                )
            bad = given <= 0
            if bad.any():
                k0 = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"the bound for pair {D[k0].tolist()} is {given[k0]!r}; squared-distance "
                    "bounds must be > 0 (check epsilon / percentiles)."
                )
        else:
            D = np.zeros((0, 3), dtype=np.int64)
            given = np.zeros(0)
        if sim_pairs is not None:
            S = _check_similarity_pairs(sim_pairs, n)
            sb = _check_bounds(sim_bounds, S.shape[0], "similarity_bounds", positive=False)
            _refuse_negative_diagonal(S, sb)
            G0.prefetch(S[:, :2])
        else:
            if sim_bounds is not None:
                raise ValueError("similarity_bounds were given without similarity_pairs.")
            S = np.zeros((0, 3), dtype=np.int64)
            sb = np.zeros(0)
        # compact rows: only the constrained samples' factor rows enter the solver
        rows, inv = np.unique(
            np.concatenate([D[:, :2].ravel(), S[:, :2].ravel()]), return_inverse=True
        )
        nd = D.shape[0]
        I = inv.reshape(-1, 2)
        return {
            "pairs": D,
            "similarity_pairs": S,
            "rows": rows,
            "I1": np.ascontiguousarray(I[:, 0], dtype=np.int64),
            "I2": np.ascontiguousarray(I[:, 1], dtype=np.int64),
            "kind": np.concatenate([np.zeros(nd, np.int8), np.ones(S.shape[0], np.int8)]),
            # distance: +1 (must-link) is an upper bound; similarity: +1 is a lower bound
            "delta": np.concatenate([D[:, 2], -S[:, 2]]).astype(np.float64),
            "b": np.concatenate([given, sb]).astype(np.float64),
        }

    # -- sweeps in chunks with an infeasibility certificate between them -------------------
    def _run(self, step, lam: np.ndarray, cert: dict, max_iter: int):
        """``_sweeps.run_sweeps`` with this learner's window, verbosity and name."""
        name = f"{type(self).__name__} sweeps"
        window = int(self.infeasible_window)
        tol = float(self.tol)  # validated by _check_fit_params
        return run_sweeps(step, lam, cert, max_iter, tol, window, self.verbose, name)

    # -- reporting -----------------------------------------------------------------------
    def _finish(
        self,
        n_sweeps: int,
        status: int,
        conv,
        viol,
        lamnorm,
        remedy: str,
        stretch=None,
        *,
        hard: bool,
    ) -> None:
        """Store the sweeps' record and warn on infeasibility (status 2), a round-off stall
        (3) or max_iter (1), or raise on an overflow (4, or a factor or violation that is
        not finite); ``hard``: the constraints have no slack, so max_iter's warning also
        gives the infeasibility ``remedy``."""
        if (
            status == 4
            or not np.isfinite(self.projection_).all()
            or not np.isfinite(self.max_violation_)
        ):
            # the projections multiply squared distances together: with a kernel of extreme
            # scale (poly of high degree: distances ~1e88) they overflow, and so do the duals
            # and relative violations of bounds hundreds of orders apart. The span named is
            # that of the distance bounds and the similarity bounds together
            sim = getattr(self, "similarity_bounds_", np.empty(0))
            b = np.abs(np.concatenate([np.ravel(self.bounds_), np.ravel(sim)]))
            lo, hi = float(b.min(initial=np.inf)), float(b.max(initial=0.0))
            raise ValueError(
                f"{type(self).__name__}: the Bregman projections overflowed float64 (the "
                "learned factor, its duals or its violations are not finite); the "
                f"constraints' bounds span {lo:.3g} to {hi:.3g}. Rescale X or the kernel "
                "(width, kernel_gamma, degree) to a moderate scale, and the bounds with it."
                + _stretch_hint(stretch)
            )
        self.n_iter_ = int(n_sweeps)
        self.converged_ = status == 0
        self.infeasible_ = status == 2
        self.dual_change_path_ = conv[:n_sweeps].copy()
        self.violation_path_ = viol[:n_sweeps].copy()
        self.dual_norm_path_ = lamnorm[:n_sweeps].copy()
        name = type(self).__name__
        if status == 2:
            w = self.infeasible_window
            old = max(n_sweeps - 1 - w, 0)
            warnings.warn(
                f"{name}: the constraints look infeasible at rank {self.n_components_}: "
                f"after {n_sweeps} sweeps the returned kernel's largest relative violation is "
                f"{self.max_violation_:.3g} (within the last sweep {viol[n_sweeps - 1]:.3g}, "
                f"{n_sweeps - 1 - old} sweeps earlier {viol[old]:.3g}) while ||dual|| grew from "
                f"{lamnorm[old]:.3g} to "
                f"{lamnorm[n_sweeps - 1]:.3g}. {remedy}"
                + _stretch_hint(stretch)
                + " The result is finite but does not meet the constraints; converged_ is False.",
                InfeasibleConstraintsWarning,
                stacklevel=_user_stacklevel(),
            )
        elif status == 3:
            warnings.warn(
                f"{name} stalled at round-off after {n_sweeps} sweeps: the relative dual change "
                f"({conv[n_sweeps - 1]:.3g}) and the largest relative violation "
                f"({self.max_violation_:.3g}) no longer fall, and tol={self.tol} asks for less "
                "than float64 resolves here, so more sweeps (a larger max_iter) cannot help. "
                "The kernel meets the constraints to round-off; increase tol (e.g. 1e-9) to "
                "have converged_ say so.",
                ConvergenceWarning,
                stacklevel=_user_stacklevel(),
            )
        elif status == 1:
            warnings.warn(
                f"{name} did not converge in max_iter={n_sweeps} sweeps (relative dual "
                f"change {conv[n_sweeps - 1]:.3g}, the returned kernel's largest relative "
                f"violation {self.max_violation_:.3g}, tol={self.tol}); increase max_iter or "
                "tol."
                + (
                    # hard constraints beyond what rank r can meet are not always caught by
                    # the certificate within max_iter: their violation then stays large
                    " If the violation stays large with more sweeps, the hard constraints may "
                    f"not be satisfiable at rank {self.n_components_}. {remedy}"
                    if hard
                    else ""
                )
                + _stretch_hint(stretch),
                ConvergenceWarning,
                stacklevel=_user_stacklevel(),
            )

    def _check_fit_params(self) -> tuple[float, int]:
        from .._progress import check_verbose

        check_verbose(self.verbose)
        tol = check_scalar(self.tol, "tol", lo=0.0)
        max_iter = int(check_scalar(self.max_iter, "max_iter", kind="int", lo=1))
        return tol, max_iter


_COMMON_PARAMS_DOC = """
    rank : int, optional
        Rank r of the initial (and learned) kernel. Default: the rank of the Nystrom factor
        (``init="nystrom"``), or the number of features (``init="linear"``, a d x d factor:
        with many features pass a rank). A smaller rank keeps, with ``init="nystrom"``, the
        rank-r Nystrom kernel ``E U_r diag(lam_r)^-1 U_r^T E^T`` of W's top r eigenpairs (the
        standard rank-r Nystrom approximation: no pass over X; not the top r singular
        directions of the full Nystrom factor on X), and with ``init="linear"`` the top r
        right singular directions of X (from its n x n Gram matrix when n < d).
    init : {"nystrom", "linear"}, default="nystrom"
        Initial kernel ``K0 = G0 G0^T``: the Nystrom factor of ``kernel`` on
        ``n_landmarks`` landmarks (inductive for any sample), or the linear kernel ``G0 = X``
        (kernelised ITML; pass a precomputed factor as ``X`` to start from it).
    tol : float, default=1e-3
        Stop when the relative change of the duals over a sweep and the largest relative
        violation are both below ``tol``. Where both stay at round-off above a smaller
        ``tol`` (0 included) the sweeps stop there, with a ``ConvergenceWarning``.
    max_iter : int, default=1000
        Maximum number of sweeps over the constraints.
    bound_rule : {"percentile", "relative"}, default="percentile"
        Bounds for pairs given without ``bounds`` (see :func:`distance_bounds`).
    epsilon : float, default=0.25
        Margin of the ``"relative"`` rule.
    percentiles : (float, float), default=(5.0, 95.0)
        Percentiles of the ``"percentile"`` rule.
    n_constraints : int, optional
        Pairs drawn from labels in ``fit(X, y)``; default ``20 * n_classes**2`` (as
        metric-learn), capped at all pairs and at 10,000 (so that the default never grows
        with the square of the number of labels). Drawing costs O(n_constraints), whatever
        the number of labels.
    n_landmarks : int, default=100
        Landmarks of the Nystrom initial kernel.
    kernel : {"rbf", "laplacian", "poly", "linear", "cosine"}, default="rbf"
        Kernel of the Nystrom initial kernel.
    width : float, optional
        Width b of ``exp(-||x - z||^2 / b)``; default: mean squared distance.
    kernel_gamma : float, optional
        ``1/b`` instead of ``width`` (the name ``gamma`` is the slack of ITML / Kulis 2009).
    degree, coef0 : polynomial kernel parameters
    landmarks : {"kmeans", "kmeans++", "uniform", "rpcholesky"} or (m, d) array
        Default ``"kmeans"``; see :func:`select_landmarks`.
    rcond : float, optional
        Relative eigenvalue cut-off of the Nystrom prior.
    random_state : None, int or Generator
        Landmarks, pairs drawn from labels and percentile sampling.
    verbose : bool or int, default=0
        Progress of the cyclic projections (one step per sweep over the constraints): 1
        shows a tqdm bar (when installed) and logs start/end on the ``nystrom_priors``
        logger, 2 logs every step.
"""


def _pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """One integer per unordered pair ``{i, j}`` of ``pairs`` (rows ``[i, j, ...]``)."""
    i, j = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    return np.minimum(i, j) * n + np.maximum(i, j)


# init="linear" without rank keeps a d x d factor: a warning above this many entries
_SQUARE_FEATURES = 1 << 22
