"""Non-parametric kernel learning on a graph by block coordinate descent (Hu et al., ICML 2011).

The kernel Z on the n training samples solves the SDP (eq. 1)

    min_{Z >= 0}  tr(Delta Z) + C sum_{(i,j) in T} loss(T_ij Z_ij)

with the regularised normalised Laplacian ``Delta = (1 + delta) I - D^{-1/2} S D^{-1/2}`` of a
similarity graph S (delta > 0 makes it positive definite; ``delta = C/2`` by default, a
coupling that matters) and must-link (T_ij = +1) / cannot-link (-1) pairs, each unordered pair
counted once. Losses: ``"square"`` (1 - f)^2, ``"hinge"`` max(1 - f, 0), ``"squared_hinge"``
max(1 - f, 0)^2.

**Boundary kernel (Prop. 1).** With L the constrained samples and U the rest, the optimum is
``Z = Q Z_BD Q^T`` with ``Q = [I; -Delta_UU^{-1} Delta_UL]`` and Z_BD the solution of the same
problem on L with the Schur complement ``Dt = Delta_LL - Delta_LU Delta_UU^{-1} Delta_UL``. We
solve with ``Delta_UU`` (conjugate gradients, whose iteration count delta bounds, or a sparse
LU for small delta) and never form its inverse: Dt is the sparse
``Delta_LL`` plus a dense block on the "frontier" (the L samples with a U neighbour), and Q is
only ever applied to r vectors.

**BCD (Sec. 3.2).** ``Z_BD = V V^T`` with V of shape (l, r), r the largest integer with
``r(r+1)/2 <= #constraints`` (Barvinok-Pataki; the paper's ``r(r+1) <= m`` is off by a factor
2), and Gauss-Seidel sweeps over the rows v_i, each replaced by the exact minimiser of its
strictly convex subproblem (``d = Dt_ii``, ``g = sum_{k!=i} Dt_ik v_k``): for the square loss
``v_i = -(d I + C sum_j v_j v_j^T)^{-1} (g - C sum_j T_ij v_j)`` (Woodbury with the small
system on i's partners; the paper's eq. 6 halves only one of the two terms, which amounts to
2C); for the hinge losses the box-constrained dual QPs of eqs. 9-10, ``v_i = (A a - 2 g)/(2d)``
with ``A = [T_ij v_j]`` (coordinate descent, then active-set steps once the active bounds
settle: the descent alone crawls where partners' rows are nearly parallel). Random start
(V = 0 is a stationary point of all three losses). The square and squared-hinge losses stop
on the relative duality gap ``gap_`` (a certificate; V keeps drifting by rotations after the
objective has converged, so never on V), the hinge loss on the relative decrease of the
objective. The hinge loss
makes f non-smooth and non-separable: BCD then has no convergence guarantee and typically
stalls 1e-4-1e-2 above the SDP optimum.

**Out-of-sample rows.** The learned factor is ``G = Q V`` (n x r). A new sample x gets the
harmonic extension over its graph neighbours, the graph analogue of the Nystrom extension:
``phi(x) = sum_j w_j phi(x_j) / (1 + delta)`` with ``w_j = S_xj / sqrt(d_x d_j)`` — exactly the
equation every unconstrained training sample satisfies.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._base import BaseEstimator, FactorTransformMixin, side_info_fit
from ._boundary import _BoundarySystem, _warn_quadratic, boundary_kernel
from ._feature_names import _user_stacklevel
from ._graph import (
    _WEIGHTS,
    _as_float,
    _exponent,
    _knn_graph,
    _knn_scaled,
    _rows_equal,
    _sq_norms,
    dense_weights,
    gaussian_graph,
    gaussian_weights,
    knn_graph,
    knn_search,
    normalized_laplacian,
    squared_distances,
)
from ._validation import (
    check_array,
    check_is_fitted,
    check_option,
    check_random_state,
    check_random_state_param,
    check_scalar,
    is_sparse,
)
from .side_info import (
    check_pairs,
    side_pairs,
)

__all__ = [
    "BCDNPKL",
    "knn_graph",
    "knn_search",
    "gaussian_graph",
    "normalized_laplacian",
    "boundary_kernel",
    "barvinok_pataki_rank",
]

_LOSSES = {"square": 0, "hinge": 1, "squared_hinge": 2}
_C_RANGE = (1e-300, 1e300)
_GRAPHS = ("knn", "dense")


def _eps(X: Any) -> float:
    return float(np.finfo(X.dtype).eps)


def _refuse_one_point(X: Any) -> None:
    """Refuse X whose samples are all one point: every neighbour is then a tie, so the graph
    (hence the learned kernel) would be set by index order alone, not by the data."""
    lo, hi = X.min(axis=0), X.max(axis=0)  # sparse: implicit zeros count, as they should
    lo, hi = (np.asarray(v.todense() if hasattr(v, "todense") else v).ravel() for v in (lo, hi))
    if X.shape[0] > 1 and np.array_equal(lo, hi):
        raise ValueError(
            f"BCDNPKL: all {X.shape[0]} samples of X are identical, so the similarity graph "
            "has no geometry to learn from (a k-NN graph's edges would follow the samples' "
            "order, a dense graph's weights would all be equal); pass samples that differ."
        )


def barvinok_pataki_rank(n_constraints: int) -> int:
    """Largest r with ``r (r + 1) / 2 <= n_constraints`` (at least 1)."""
    m = int(n_constraints)
    r = int((np.sqrt(8 * m + 1) - 1) // 2)
    while (r + 1) * (r + 2) // 2 <= m:
        r += 1
    while r > 1 and r * (r + 1) // 2 > m:
        r -= 1
    return max(r, 1)


class BCDNPKL(FactorTransformMixin, BaseEstimator):
    """Non-parametric kernel learning from pairwise constraints by BCD (Hu et al. 2011).

    Learns the n x n kernel ``Z = G G^T`` of eq. 1 on a kNN (or dense Gaussian) graph of the
    training samples through its boundary kernel on the constrained samples, by Gauss-Seidel
    block coordinate descent on a rank-r factor (see the module docstring for the math).
    ``fit_transform`` returns G; ``transform`` extends the kernel harmonically to new samples.
    X may be a ``scipy.sparse`` matrix (CSR; other formats converted) in ``fit``,
    ``transform`` and ``kernel``: it is never densified (see :mod:`nystrom_priors._graph`).

    Parameters
    ----------
    C : float in [1e-300, 1e300], default=1.0
        Weight of the constraint loss.
    loss : {"square", "hinge", "squared_hinge"}, default="square"
    graph : {"knn", "dense"}, default="knn"
        Symmetrised kNN graph (sparse) or dense Gaussian graph.
    n_neighbors : int, default=5
        k of the kNN graph (and of the out-of-sample extension).
    weights : {"binary", "gaussian"}, default="binary"
        kNN edge weights ("dense" is always Gaussian).
    sigma : float, optional
        Gaussian width of the edge weights (``weights="gaussian"`` or ``graph="dense"``; refused
        with binary kNN weights); default half the mean distance to the 10 nearest neighbours.
    delta : float, optional
        Laplacian regulariser; default ``C / 2``.
    rank : int, optional
        r; default the Barvinok-Pataki bound from the number of constraints. Capped at the
        number of constrained samples (with a warning when given larger).
    tol : float, default=1e-6
        Square and squared-hinge losses: stop when the relative duality gap ``gap_`` is at
        most tol, a certificate that the objective is within ``tol`` (relative) of the SDP
        optimum. Hinge loss (no certificate BCD can reach): stop when the objective's
        relative decrease over a sweep is below tol.
    max_iter : int, default=1000
        Maximum sweeps.
    n_constraints : int, optional
        Pairs drawn from labels in ``fit(X, y)`` (default ``20 * n_classes**2``, capped at all
        pairs and at 10,000).
    random_state : None, int or Generator
        Random start of V (uniform [0, 1), as the paper's ``rand(r, l)``) and pairs from labels.
    verbose : bool or int, default=0
        Progress of the block coordinate descent (one step per sweep over the columns): 1
        shows a tqdm bar (when installed) and logs start/end on the ``nystrom_priors``
        logger, 2 logs every step.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, r)
        G for the training samples (``Z = G G^T``).
    X_fit_ : ndarray or scipy.sparse.csr_matrix of shape (n, d)
        A copy of the training samples (new samples are extended over their neighbours);
        CSR when X was sparse (``save`` / ``load`` keep it CSR).
    V_ : ndarray of shape (l, r)
        Rows of G on the constrained samples (``Z_BD = V V^T``).
    constrained_ : ndarray of shape (l,)
        Indices L of the constrained samples.
    pairs_ : ndarray of shape (k, 3)
    graph_ : scipy.sparse.csr_matrix or ndarray of shape (n, n)
    degrees_ : ndarray of shape (n,)
    delta_, sigma_, rank_ : float, float or None, int
    graph_type_, n_neighbors_, weights_ : str, int, str
        The graph's settings at fit time; ``transform`` extends over this graph.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,), dtype object
        Column names of X in ``fit``, when X is a DataFrame whose column names are all
        strings (absent otherwise); later calls refuse a frame whose names differ.
    classes_ : ndarray
        The classes of the labeled samples of ``y``, sorted; empty when pairs alone were
        given.
    objective_path_ : ndarray of shape (``n_iter_ + 1``,)
        Objective of eq. 1 at the start and after every sweep.
    objective_ : float
    gap_ : float
        Relative duality gap ``(P - D) / |P|`` at the end, P the objective and D a Lagrange
        dual bound of the SDP (see :mod:`nystrom_priors._bcd_gap`): the objective is at
        most ``gap_`` (relative) above the SDP optimum.
    n_iter_ : int
    converged_ : bool
    n_components_ : int

    Notes
    -----
    ``transform`` is the learned kernel on the training samples and its extension elsewhere.
    A row equal to a training sample (exactly, in the coarser of the two dtypes) gets that
    sample's row of ``embedding_``; any other row gets the harmonic extension over its
    nearest training samples, ``phi(x) = sum_j w_j phi(x_j) / (1 + delta)``. The extension is
    not continuous at the training samples: a new sample next to a training sample has that
    sample among its neighbours (a training sample's own equation does not count itself), and
    a constrained sample's learned row is pulled away from its neighbours' average by its
    pairs. A new sample arbitrarily close to a training sample can thus get a row that
    differs from the training sample's by as much as the row itself, most at constrained
    samples. Read the training samples' rows from ``embedding_`` (or ``fit_transform``), not
    from ``transform`` of perturbed copies (rounded or recomputed features).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import BCDNPKL
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 6])
    >>> pairs = np.array([[0, 1, 1], [30, 31, 1], [0, 30, -1], [5, 40, -1]])
    >>> model = BCDNPKL(random_state=0)
    >>> G = model.fit_transform(X, pairs=pairs)
    >>> G.shape
    (60, 2)
    >>> K = G @ G.T
    >>> bool(K[0, 1] > K[0, 30] and K[30, 31] > K[1, 31])
    True
    """

    def __init__(
        self,
        C: float = 1.0,
        *,
        loss: str = "square",
        graph: str = "knn",
        n_neighbors: int = 5,
        weights: str = "binary",
        sigma: float | None = None,
        delta: float | None = None,
        rank: int | None = None,
        tol: float = 1e-6,
        max_iter: int = 1000,
        n_constraints: int | None = None,
        random_state: Any = None,
        verbose: int = 0,
    ) -> None:
        self.C = C
        self.loss = loss
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.sigma = sigma
        self.delta = delta
        self.rank = rank
        self.tol = tol
        self.max_iter = max_iter
        self.n_constraints = n_constraints
        self.random_state = random_state
        self.verbose = verbose

    # -- fitting -------------------------------------------------------------------------
    def _validate_params(self) -> dict[str, Any]:
        """Check every parameter on its own (type and range), without data; return the
        resolved values. ``fit`` starts here, ``load`` refuses a model file whose parameters
        fail and ``save`` refuses to write one."""
        from ._progress import check_verbose

        # a conservative range: the certificate's products overflow from about C = 1e307 (inf
        # in its eigh) and the default delta = C / 2 underflows to 0 at C = 5e-324
        C = float(check_scalar(self.C, "C", lo=_C_RANGE[0], hi=_C_RANGE[1]))
        loss = _LOSSES.get(self.loss) if isinstance(self.loss, str) else None
        if loss is None:
            raise ValueError(f"loss must be one of {list(_LOSSES)}, got {self.loss!r}.")
        out = dict(
            C=C,
            loss=loss,
            graph=check_option(self.graph, "graph", _GRAPHS),
            weights=check_option(self.weights, "weights", _WEIGHTS),
            k=int(check_scalar(self.n_neighbors, "n_neighbors", kind="int", lo=1)),
            delta=C / 2.0
            if self.delta is None
            else float(check_scalar(self.delta, "delta", lo=0.0, lo_closed=False)),
            tol=float(check_scalar(self.tol, "tol", lo=0.0)),
            max_iter=int(check_scalar(self.max_iter, "max_iter", kind="int", lo=1)),
            verbose=check_verbose(self.verbose),
        )
        if self.sigma is not None:
            check_scalar(self.sigma, "sigma", lo=0.0, lo_closed=False)
        for name in ("rank", "n_constraints"):
            if getattr(self, name) is not None:
                check_scalar(getattr(self, name), name, kind="int", lo=1)
        check_random_state_param(self.random_state)
        return out

    def _pairs(self, n: int, y: Any, pairs: Any, rng: np.random.Generator) -> np.ndarray:
        drawn, given, _ = side_pairs(y, pairs, n, self.n_constraints, random_state=rng)
        blocks = [b for b in (drawn, given) if b is not None]
        if not blocks:
            raise ValueError("no side information: give pairs ([i, j, +1/-1] rows) or y.")
        if len(blocks) == 1:
            return blocks[0]
        with warnings.catch_warnings():  # repeats across labels and pairs are expected
            warnings.simplefilter("ignore", UserWarning)
            return check_pairs(np.concatenate(blocks), n)

    @side_info_fit
    def fit(self, X: Any, y: Any = None, *, pairs: Any = None) -> BCDNPKL:
        """Build the graph, reduce to the boundary kernel and run BCD.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n, d), or metric-learn's point pairs
            (k, 2, d) with y = +-1. Sparse X is kept CSR, never densified.
        y : array-like of shape (n,), optional
            Labels (any type; -1, None or NaN = unlabeled); turned into ``n_constraints`` pairs.
        pairs : int array of shape (k, 3), optional
            ``[i, j, +1]`` must-link, ``[i, j, -1]`` cannot-link.

        Returns
        -------
        self
        """
        from . import _bcd_gap
        from ._numba._bcd import objective

        X = check_array(X, accept_sparse=True)
        n = X.shape[0]
        p = self._validate_params()
        C, loss, graph, weights, k = p["C"], p["loss"], p["graph"], p["weights"], p["k"]
        delta, tol, max_iter = p["delta"], p["tol"], p["max_iter"]
        if k >= n:
            raise ValueError(f"n_neighbors={k} must be < n_samples={n}.")
        _refuse_one_point(X)
        rng = check_random_state(self.random_state)
        P = self._pairs(n, y, pairs, rng)

        if graph == "knn":
            S, sigma = _knn_graph(X, k, weights, self.sigma)
        else:
            _warn_quadratic(
                n * n,
                f"graph='dense' builds an n x n Gaussian similarity matrix (n = {n})",
                "graph='knn' (a sparse graph) scales to large n.",
            )
            S, sigma = gaussian_graph(X, sigma=self.sigma)
        Delta, deg = normalized_laplacian(S, delta)
        self._warn_components(S, P)

        L = np.unique(P[:, :2])
        system = _BoundarySystem(Delta, L, delta=delta)
        pos = np.searchsorted(L, P[:, :2])
        # constraint adjacency in CSR (both directions)
        a = np.concatenate([pos[:, 0], pos[:, 1]])
        b = np.concatenate([pos[:, 1], pos[:, 0]])
        sgn = np.concatenate([P[:, 2], P[:, 2]]).astype(np.float64)
        order = np.lexsort((b, a))
        tptr = np.zeros(L.size + 1, dtype=np.int64)
        np.add.at(tptr, a + 1, 1)
        tptr = np.cumsum(tptr)
        tidx = np.ascontiguousarray(b[order], dtype=np.int64)
        tsgn = np.ascontiguousarray(sgn[order])

        r = (
            barvinok_pataki_rank(P.shape[0])
            if self.rank is None
            else int(check_scalar(self.rank, "rank", kind="int", lo=1))
        )
        if r > L.size:  # Z = V V^T on the L constrained samples has rank <= |L| at any r
            if self.rank is not None:
                warnings.warn(
                    f"rank={r} exceeds the {L.size} constrained samples, the largest rank the "
                    f"learned kernel can have; rank {L.size} is used.",
                    UserWarning,
                    stacklevel=_user_stacklevel(),
                )
            r = int(L.size)
        origin = "given" if self.rank is not None else f"from the {P.shape[0]} pairs"
        _warn_quadratic(
            L.size * r,
            f"rank={r} ({origin}) makes the factor V of the {L.size} constrained samples hold",
            "A smaller rank, or fewer pairs, keeps it small.",
        )
        A, Wt, V = system.A, system.Wt, rng.random((L.size, r))
        dual = np.zeros(tidx.size)
        # A's own arrays, not int64 / float64 copies: with a large frontier A is the fit's
        # largest array (its dense block), and copies tripled the peak
        args = (A.indptr.astype(np.int64), A.indices, A.data.astype(np.float64, copy=False))
        args += (Wt, np.ascontiguousarray(Wt.T @ V), tptr, tidx, tsgn, V, C, loss, dual)

        def gap() -> float:  # the certificate at the current V (see _bcd_gap)
            f = objective(*args[:-1])
            return _bcd_gap.relative_gap(system, pos, P[:, 2], V, C, loss, delta, f, dual, order)

        # what the warning of a fit that does not converge adds to its own advice: a rank
        # below the SDP optimum's bound, or the default delta = C / 2 at a small C (the
        # graph term then dominates and BCD crawls), which more sweeps or tol do not fix
        hint = ""
        if r < min(barvinok_pataki_rank(P.shape[0]), L.size):
            hint += f"; rank={r} may be below the optimum's rank: try a larger rank (or None)"
        if self.delta is None and delta < 0.05:
            hint += f"; the default delta = C / 2 = {delta:.3g} is small: pass a larger delta"
        elif delta < 16.0 * np.finfo(np.float64).eps:
            # 1 + delta is within a few ulps of 1: the graph system (1 + delta) I - W is
            # singular to float64 on a component's constant vector, and the certificate's
            # dual bound, which needs it definite, loses all accuracy
            hint += (
                f"; delta = {delta:.3g} is lost to round-off next to 1 + delta, which leaves "
                "the duality-gap certificate unusable: pass a larger delta (1e-12 or more)"
            )
        # the hinge loss has no certificate BCD can reach (it stalls above the optimum)
        path, n_sweeps, converged, gap_ = _bcd_gap.run(
            args,
            max_iter,
            tol,
            loss != _LOSSES["hinge"],
            self.verbose,
            gap,
            hint,
            f"C = {C:.3g}, delta = {delta:.3g}",
        )
        self.n_features_in_ = X.shape[1]
        # the model's own copy: mutating the caller's X must not change the fitted model
        # (CSR: a plain csr_matrix, whatever subclass or sparse array was given)
        self.X_fit_ = _as_float(X, X.dtype).copy() if is_sparse(X) else np.array(X, copy=True)
        # the graph transform extends over is the fitted one, whatever set_params does later
        self.graph_type_ = graph
        self.n_neighbors_ = k
        self.weights_ = "gaussian" if graph == "dense" else weights
        self._graph = S
        self.degrees_ = deg
        self.delta_ = delta
        self.sigma_ = sigma
        self.rank_ = r
        self.pairs_ = P
        self.constrained_ = L
        self.V_ = V
        self.embedding_ = system.extend(V)
        self.objective_path_ = path
        self.objective_ = float(path[-1])
        self.gap_ = gap_
        self.n_iter_ = int(n_sweeps)
        self.converged_ = bool(converged)
        self._system = system
        self._warn_degenerate_delta(delta)
        return self

    def _warn_degenerate_delta(self, delta: float) -> None:
        """Warn where delta leaves the graph out: beyond 1 / eps its normalised weights (at
        most 1) vanish next to ``1 + delta`` in float64 (at 1e300 the learned kernel is zero)."""
        if delta * np.finfo(np.float64).eps < 1.0:
            return
        which = "delta = C / 2" if self.delta is None else "delta"
        fix = (
            "a smaller C (the default delta is C / 2)" if self.delta is None else "a smaller delta"
        )
        warnings.warn(
            f"BCDNPKL: {which} = {delta:.3g}: beyond 1 / eps = 4.5e15 the graph's weights are "
            "lost to float64 round-off next to 1 + delta, so the kernel ignores the graph; use "
            f"{fix}.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )

    def _warn_components(self, S, P: np.ndarray) -> None:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components

        ncomp, lab = connected_components(
            sp.csr_matrix(S) if not sp.issparse(S) else S, directed=False
        )
        if ncomp > 1:
            have = np.zeros(ncomp, dtype=bool)
            have[lab[P[:, :2].ravel()]] = True
            empty = int((~have).sum())
            if empty:
                warnings.warn(
                    f"the graph has {ncomp} connected components and {empty} of them hold no "
                    f"constrained sample ({int((~have[lab]).sum())} samples): their rows of the "
                    "learned factor are 0. Use more neighbours (n_neighbors) or constraints.",
                    UserWarning,
                    stacklevel=_user_stacklevel(),
                )

    @property
    def graph_(self):
        """The similarity graph S of the training samples (not persisted by ``save``)."""
        check_is_fitted(self, ("embedding_",))
        return self.__dict__.get("_graph")

    # -- factor rows -----------------------------------------------------------------------
    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit, then return the learned factor of the training samples (``embedding_``;
        ``transform`` of the same samples gives the same rows, but for samples that occur more
        than once: see ``transform``)."""
        from ._pairs_format import refuse_point_pairs_transform

        refuse_point_pairs_transform(X, type(self).__name__)
        return self.fit(X, y, **fit_params).embedding_.astype(self.X_fit_.dtype, copy=True)

    _transient = ("_system",)  # holds factorisation closures; rebuilt by fit only
    _accepts_sparse = True  # scipy.sparse X in fit / transform / kernel (scikit-learn's tag)

    def _check_fitted_for_transform(self) -> None:
        check_is_fitted(self, ("embedding_",))

    def _block_rows_default(self) -> int:
        return max(1, (1 << 24) // max(1, self.X_fit_.shape[0]))

    def _transform_validated(self, X: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Harmonic extension: ``phi(x) = sum_j S_xj / sqrt(d_x d_j) phi(x_j) / (1 + delta)``
        over the k nearest training samples (every training sample for the dense graph); a
        sample equal to a training sample gets that sample's learned row, so
        ``transform(X_train)`` equals ``fit_transform``. Where training rows repeat, each copy
        gets the mean of the copies' learned rows (transform is a function of the row): of all
        of them with the dense graph, of those among its ``n_neighbors`` nearest with the kNN
        graph (all of them when there are at most ``n_neighbors``). Equality is
        exact in the coarser of the two dtypes, so float64 rows whose float32 rounding the
        model was fitted on count as equal. Distances are taken in units of ``2^e ~ max |x|``
        (exact; any finite scale works), with the kNN graph from dense data far from the
        origin centred first (any shift works), and, for the dense graph, a block of query
        rows at a time (memory O(block x n), not O(n_query x n))."""
        if out is None:
            out = np.empty((X.shape[0], self.embedding_.shape[1]), dtype=X.dtype)
        # the dense graph weighs every training sample: a block of 2^22 / n query rows at once
        step = (1 << 22) // self.X_fit_.shape[0] if self.graph_type_ == "dense" else X.shape[0]
        step = max(1, step)
        for s in range(0, X.shape[0], step):
            out[s : s + step] = self._extend(X[s : s + step])
        return out

    def _extend(self, X: Any) -> np.ndarray:
        Xf = self.X_fit_
        coarse = np.float32 if np.float32 in (X.dtype, Xf.dtype) else np.float64
        # squared distance (in units of the query's ||x||^2) below which a training sample may
        # equal the query once both are rounded to the coarser dtype: ||x - fl(x)||^2 is at
        # most eps^2 / 4 ||x||^2, plus (kNN) the round-off of distances from cross products
        rounding = float(np.finfo(coarse).eps) ** 2
        if self.graph_type_ == "dense":
            e = _exponent(Xf, X)
            D2 = squared_distances(X, Xf, e)
            S = dense_weights(D2, self.sigma_, e)
            dx = S.sum(axis=1)
            # square roots apart: a far query (dx ~ 0) times a far-out sample's tiny degree
            # underflows as one product, and 0 / 0 would be NaN where the limit is 0
            W = S / (np.sqrt(np.maximum(dx, 1e-300))[:, None] * np.sqrt(self.degrees_)[None, :])
            G = W @ self.embedding_ / (1.0 + self.delta_)
            q = _sq_norms(_as_float(X, np.float64, e))
            # cdist is exact for equal rows; CSR distances come from cross products
            expanded = is_sparse(X) or is_sparse(Xf)
            tol = rounding + (8 * (X.shape[1] + 2) * _eps(X) if expanded else 0.0)
            qi, tj = np.nonzero(D2 <= tol * q[:, None])
        else:
            # float32 queries: float32 cross products (the distances are summed in float64)
            idx, dist, e, q = _knn_scaled(Xf, X, self.n_neighbors_, dtype=X.dtype)
            if self.weights_ == "gaussian":
                s = gaussian_weights(dist, self.sigma_, e)
            else:
                s = np.ones_like(dist)
            dx = s.sum(axis=1, keepdims=True)
            w = s / (np.sqrt(np.maximum(dx, 1e-300)) * np.sqrt(self.degrees_[idx]))
            G = np.einsum("ik,ikr->ir", w, self.embedding_[idx]) / (1.0 + self.delta_)
            # a training sample is among its own k nearest (its copies too, up to k of them).
            # The expansion's round-off scales with the norms it used (q: centred where the
            # data are far from the origin); a row's rounding to the other dtype with its own
            # norm. The exact comparison below drops any extra candidate.
            with np.errstate(over="ignore"):
                raw = _sq_norms(_as_float(X, np.float64, e))
            near = (
                dist**2 <= (8 * (X.shape[1] + 2) * _eps(X)) * q[:, None] + rounding * raw[:, None]
            )
            qi, tj = np.nonzero(near)
            tj = idx[qi, tj]
        match = _rows_equal(Xf, tj, X, qi, dtype=coarse)  # exact equality
        qi, tj = qi[match], tj[match]
        if qi.size:
            count = np.bincount(qi, minlength=X.shape[0])
            same = np.flatnonzero(count)
            total = np.zeros((X.shape[0], G.shape[1]))
            np.add.at(total, qi, self.embedding_[tj])
            G[same] = total[same] / count[same, None]
        return G.astype(X.dtype, copy=False)

    @property
    def n_components_(self) -> int:
        check_is_fitted(self, ("embedding_",))
        return int(self.embedding_.shape[1])
