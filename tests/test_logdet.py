"""LogDetKernelLearner (Burg) and what both Bregman learners share (Kulis et al. 2006), against
independent oracles; von Neumann's own projections are in test_von_neumann.py.

Oracles: a dense n x n numpy implementation of the same Bregman projections (rank-one update
``K + beta K z z^T K``; the similarity projection via Woodbury and a scipy root-finder; von
Neumann via scipy's expm/logm), metric-learn's ITML (linear kernel), numpy's eigh for the
secular eigensolver, and constructed feasible / infeasible problems.
"""

import math
import re
import warnings

import numpy as np
import pytest
from _bregman_oracles import (  # noqa: E402
    dense_burg,
    feasible_problem,
    rel_violation,
    sqdist,
)
from hypothesis import given
from hypothesis import strategies as st

from nystrom_priors import (
    InfeasibleConstraintsWarning,
    LogDetKernelLearner,
    Nystrom,
    VonNeumannKernelLearner,
    distance_bounds,
)
from nystrom_priors.exceptions import ConvergenceWarning

# --------------------------------------------------------------------------------------------
# dense oracle: factored projections = dense projections
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [np.inf, 1.0, 25.0])
def test_burg_factored_equals_dense(gamma):
    rng = np.random.default_rng(0)
    X, pairs, bounds = feasible_problem(rng, n=30, d=6, k=25)
    n_sweeps = 7
    model = LogDetKernelLearner(init="linear", gamma=gamma, max_iter=n_sweeps, tol=0.0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    Kd, lam = dense_burg(X @ X.T, model.pairs_, model.bounds_, gamma, n_sweeps)
    K = G @ G.T
    assert np.abs(K - Kd).max() <= 1e-10 * np.abs(Kd).max()
    assert np.allclose(model.dual_, lam, rtol=1e-9, atol=1e-12 * np.abs(lam).max())


def test_burg_similarity_constraints_equal_dense():
    rng = np.random.default_rng(1)
    X, pairs, bounds = feasible_problem(rng, n=25, d=5, k=10)
    K0 = X @ X.T
    sim = np.array([[0, 1, 1], [2, 3, -1], [4, 4, -1], [5, 7, 1]])
    sb = np.array([K0[0, 1] + 1.0, K0[2, 3] - 1.0, 0.8 * K0[4, 4], K0[5, 7] + 0.5])
    n_sweeps = 6
    model = LogDetKernelLearner(init="linear", max_iter=n_sweeps, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        G = model.fit_transform(
            X, pairs=pairs, bounds=bounds, similarity_pairs=sim, similarity_bounds=sb
        )
    Kd, lam = dense_burg(K0, model.pairs_, model.bounds_, np.inf, n_sweeps, sim, sb)
    K = G @ G.T
    assert np.abs(K - Kd).max() <= 1e-9 * np.abs(Kd).max()
    assert np.allclose(model.dual_, lam, rtol=1e-7, atol=1e-10)


def test_similarity_constraints_hold_at_convergence():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 6))
    K0 = X @ X.T
    sim = np.array([[0, 1, 1], [2, 3, -1], [4, 4, -1], [6, 6, 1]])
    sb = np.array([K0[0, 1] + 1.0, K0[2, 3] - 1.0, 0.5 * K0[4, 4], 2.0 * K0[6, 6]])
    model = LogDetKernelLearner(init="linear", tol=1e-8).fit(
        X, similarity_pairs=sim, similarity_bounds=sb
    )
    assert model.converged_
    K = model.kernel(X)
    got = K[sim[:, 0], sim[:, 1]]
    assert np.all(-sim[:, 2] * (got - sb) <= 1e-8 * np.maximum(1, np.abs(sb)))


# --------------------------------------------------------------------------------------------
# metric-learn oracle
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [40, 41])
def test_burg_larger_ranks_equal_dense(d):
    # larger ranks than the other oracle tests; even and odd (the update pass takes rows in
    # pairs from the subdiagonal, a single last row when r is odd)
    rng = np.random.default_rng(2)
    X, pairs, bounds = feasible_problem(rng, n=70, d=d, k=60)
    K0 = X @ X.T
    sim = np.array([[0, 1, 1], [2, 3, -1], [4, 4, -1]])
    sb = np.array([K0[0, 1] + 1.0, K0[2, 3] - 1.0, 0.8 * K0[4, 4]])
    n_sweeps = 5
    model = LogDetKernelLearner(init="linear", gamma=1.0, max_iter=n_sweeps, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        G = model.fit_transform(
            X, pairs=pairs, bounds=bounds, similarity_pairs=sim, similarity_bounds=sb
        )
    assert model.n_components_ == d
    Kd, lam = dense_burg(K0, model.pairs_, model.bounds_, 1.0, n_sweeps, sim, sb)
    assert np.abs(G @ G.T - Kd).max() <= 1e-9 * np.abs(Kd).max()
    assert np.allclose(model.dual_, lam, rtol=1e-7, atol=1e-10)
    assert np.all(np.triu(model.B_, 1) == 0.0)  # B stays lower triangular


@pytest.mark.parametrize("gamma", [1.0, 10.0, np.inf])
# metric-learn 0.7.0 calls scikit-learn's deprecated stable_cumsum (scikit-learn >= 1.8)
@pytest.mark.filterwarnings("ignore:Function stable_cumsum is deprecated:FutureWarning")
def test_linear_kernel_equals_itml(ITML, gamma):
    rng = np.random.default_rng(5)
    X, pairs, _ = feasible_problem(rng, n=50, d=4, k=40)
    pairs = pairs[np.argsort(-pairs[:, 2], kind="stable")]  # ITML: all similar, then dissimilar
    lo, hi = np.percentile(sqdist(X, pairs), [30, 70])
    bounds = np.where(pairs[:, 2] > 0, lo, hi)
    n_sweeps = 12
    itml = ITML(gamma=gamma, max_iter=n_sweeps, tol=0.0, prior="identity")
    itml.fit(X[pairs[:, :2]], pairs[:, 2], bounds=[lo, hi])
    A = itml.get_mahalanobis_matrix()
    model = LogDetKernelLearner(init="linear", gamma=gamma, max_iter=n_sweeps, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    K_itml = X @ A @ X.T
    assert np.abs(G @ G.T - K_itml).max() <= 1e-10 * np.abs(K_itml).max()


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------


@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 7),
    k=st.integers(1, 25),
    gamma=st.sampled_from([np.inf, 0.5, 10.0]),
    deficient=st.booleans(),
)
def test_burg_properties_on_feasible_problems(seed, d, k, gamma, deficient):
    rng = np.random.default_rng(seed)
    X, pairs, bounds = feasible_problem(rng, n=30, d=d, k=k, deficient=deficient and d > 2)
    # pairs whose difference vanishes in range(X) are impossible here (rows are distinct)
    tol = 1e-4
    model = LogDetKernelLearner(init="linear", gamma=gamma, tol=tol, max_iter=20000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    assert model.converged_ and not model.infeasible_
    K, K0 = G @ G.T, X @ X.T
    r0 = np.linalg.matrix_rank(K0)
    assert np.linalg.matrix_rank(K) == r0
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.abs(K).max()
    # range space kept: K has no component outside range(K0)
    w, V = np.linalg.eigh(K0)
    null = V[:, w <= 1e-10 * w.max()]
    assert np.abs(null.T @ K @ null).max() <= 1e-10 * np.abs(K).max()
    assert model.dual_.min() >= 0.0
    if math.isinf(gamma):
        assert rel_violation(G, model.pairs_, model.bounds_) < tol
    else:  # slack: the constraints hold against the slack-adjusted bounds
        assert rel_violation(G, model.pairs_, model.slack_bounds_) < tol


def test_nystrom_init_is_inductive_and_rank_preserving():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(150, 5))
    y = np.where(rng.random(150) < 0.3, (X[:, 0] > 0).astype(int), -1)
    kw = dict(n_landmarks=25, random_state=0)
    model = LogDetKernelLearner(gamma=1.0, **kw).fit(X, y)
    prior = Nystrom(**kw).fit(X)
    X_new = rng.normal(size=(20, 5))
    # new samples: G0_new B, with G0 the Nystrom factor of the same landmarks
    assert np.allclose(model.transform(X_new), prior.transform(X_new) @ model.B_, atol=1e-12)
    assert np.array_equal(model.landmarks_, prior.landmarks_)
    G = model.transform(X)
    assert np.linalg.matrix_rank(G) == prior.n_components_
    # learned kernel changed towards the labels: must-link pairs got closer on average
    d0 = sqdist(prior.transform(X), model.pairs_)
    d1 = sqdist(G, model.pairs_)
    ml = model.pairs_[:, 2] > 0
    assert d1[ml].mean() < d0[ml].mean() and d1[~ml].mean() > d0[~ml].mean()


def test_rank_truncation_and_linear_rank():
    rng = np.random.default_rng(7)
    X, pairs, bounds = feasible_problem(rng, n=40, d=6, k=10, margin=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogDetKernelLearner(rank=3, init="linear", gamma=1.0).fit(X, pairs=pairs, bounds=bounds)
    assert m.n_components_ == 3 and np.linalg.matrix_rank(m.transform(X)) == 3
    # rank-3 start = best rank-3 approximation of X X^T
    G0 = X @ m.P0_
    w = np.linalg.eigvalsh(X @ X.T)[::-1]
    assert np.allclose(np.linalg.eigvalsh(G0 @ G0.T)[::-1][:3], w[:3])


# --------------------------------------------------------------------------------------------
# infeasibility, bounds and bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [LogDetKernelLearner, VonNeumannKernelLearner])
def test_infeasible_hard_constraints_warn_and_stay_finite(cls):
    # triangle inequality: sqrt(1) + sqrt(1) < sqrt(10) in any kernel
    X = np.array([[0.0, 0.0], [1.0, 0.2], [2.0, -0.1], [0.5, 1.0]])
    pairs = np.array([[0, 1, 1], [1, 2, 1], [0, 2, -1]])
    bounds = np.array([1.0, 1.0, 10.0])
    model = cls(init="linear", max_iter=5000)
    with pytest.warns(
        InfeasibleConstraintsWarning, match="gamma" if cls is LogDetKernelLearner else "slack"
    ) as record:
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    # the full-rank linear kernel has no room to give: no "larger rank" or "landmarks" advice
    message = str(next(w.message for w in record if w.category is InfeasibleConstraintsWarning))
    assert "larger rank" not in message and "landmarks" not in message
    assert model.infeasible_ and not model.converged_
    assert model.n_iter_ < 5000
    assert np.all(np.isfinite(G))
    assert model.max_violation_ > 1e-3


@pytest.mark.parametrize(
    "rank, m, advice",
    [
        (None, 4, "own bounds), or more landmarks."),
        (2, 4, "own bounds), or a larger rank or more landmarks."),
        (None, 6, "or your own bounds). The"),  # every sample is a landmark
    ],
)
def test_infeasibility_advice_names_the_room_the_kernel_has(rank, m, advice):
    """With init="nystrom" more landmarks give the kernel room (unless every sample is one
    already), and a larger rank where ``rank`` truncated the initial kernel."""
    X = np.array([[0.0, 0.0], [1.0, 0.2], [2.0, -0.1], [0.5, 1.0], [1.5, 0.7], [0.2, 1.4]])
    pairs = np.array([[0, 1, 1], [1, 2, 1], [0, 2, -1]])
    bounds = np.array([1e-4, 1e-4, 10.0])  # no kernel: sqrt(1e-4) + sqrt(1e-4) < sqrt(10)
    model = LogDetKernelLearner(n_landmarks=m, rank=rank, random_state=0, max_iter=5000)
    with pytest.warns(InfeasibleConstraintsWarning, match=re.escape(advice)) as record:
        model.fit(X, pairs=pairs, bounds=bounds)
    assert model.infeasible_
    # the settings to change are named, not just "fewer or looser constraints"
    message = str(next(w.message for w in record if w.category is InfeasibleConstraintsWarning))
    assert "n_constraints" in message and "epsilon" in message and "percentiles" in message


def test_a_feasible_set_that_converges_slowly_is_not_called_infeasible():
    """120 samples of three classes, a full-rank 120 x 120 Nystrom factor and the default
    bounds: the set is feasible (given the sweeps, the fit converges to ``tol``), but the
    violation falls slowly and the window's dual increment is nearly PSD (lambda_min =
    -0.006 lambda_max). The old test stopped after 75 sweeps calling it infeasible; the trace
    bound of its certificate (58, below the initial kernel's 120) does not exclude it."""
    r = np.random.default_rng(0)
    y = np.arange(120) % 3
    X = r.normal(size=(120, 5)) + y[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleConstraintsWarning)
        model = LogDetKernelLearner(n_landmarks=120, random_state=0, max_iter=3000).fit(X, y)
    assert model.converged_ and not model.infeasible_
    assert model.max_violation_ <= model.tol


def test_soft_projections_that_overflow_raise_the_diagnosis_not_a_division_error():
    """Soft (finite gamma) projections asked to shrink a pair ~5e15-fold (rank 1, one-hot rows
    with duplicates; found by fuzzing) leave the factor non-finite, as hard ones do; the slack
    update then divided by zero inside the jitted kernel and a ZeroDivisionError escaped.
    Now the fit ends with the same ValueError as the hard constraints: the overflow, the pair
    and its factor, and the remedy for soft constraints (a smaller gamma)."""
    cls = [2, 1, 1, 2, 0, 0, 0, 2, 0, 2, 2, 2, 2, 1, 0, 1, 1, 2, 0, 2, 2]
    X = np.eye(3)[cls]
    y = np.array([-1, 2, 1, 0, 1, 2, 2, -1, -1, 0, 1, -1, 2, 0, 2, 0, 2, 0, 0, 1, 0])
    for gamma in (1.0, 2.0):
        model = LogDetKernelLearner(
            rank=1, gamma=gamma, n_landmarks=7, kernel="cosine", random_state=0, max_iter=100
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(
                ValueError,
                match=r"overflowed float64.*asks its squared .*"
                r"a factor .*e\+15.*use a smaller gamma",
            ):
                model.fit(X, y)


def test_slack_makes_infeasible_constraints_converge():
    X = np.array([[0.0, 0.0], [1.0, 0.2], [2.0, -0.1], [0.5, 1.0]])
    pairs = np.array([[0, 1, 1], [1, 2, 1], [0, 2, -1]])
    bounds = np.array([1.0, 1.0, 10.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = LogDetKernelLearner(init="linear", gamma=1.0, tol=1e-6, max_iter=10000).fit(
            X, pairs=pairs, bounds=bounds
        )
    assert model.converged_ and not model.infeasible_
    G = model.transform(X)
    assert rel_violation(G, model.pairs_, model.slack_bounds_) < 1e-6


@pytest.mark.parametrize("gamma", [np.inf, 1.0])
def test_max_iter_warning_gives_the_slack_remedy_for_hard_constraints(gamma):
    # hard constraints that rank 8 cannot meet, stopped by max_iter before the certificate
    # flags them: "increase max_iter" alone would send the user to a longer run of the same
    # violation; with a slack the problem is feasible, and only max_iter/tol are named
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(np.arange(40) % 2, np.repeat([0, 1, 2, 3], 10), -1)
    model = LogDetKernelLearner(rank=8, n_landmarks=20, gamma=gamma, max_iter=20, random_state=0)
    with pytest.warns(ConvergenceWarning, match="increase max_iter or tol") as rec:
        model.fit(X, y)
    message = " ".join(str(w.message) for w in rec if w.category is ConvergenceWarning)
    assert ("finite slack (e.g. gamma=1.0)" in message) == np.isinf(gamma)
    assert ("rank 8" in message) == np.isinf(gamma)


def test_default_bounds_rules():
    rng = np.random.default_rng(8)
    G0 = rng.normal(size=(30, 3))
    pairs = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1]])
    rel = distance_bounds(G0, pairs, rule="relative", epsilon=0.25)
    d0 = sqdist(G0, pairs)
    assert np.allclose(rel, [0.75 * d0[0], 1.25 * d0[1], 0.75 * d0[2]])
    pct = distance_bounds(G0, pairs, rule="percentile", percentiles=(5, 95))
    idx = np.unique(pairs[:, :2])
    a, b = np.triu_indices(idx.size, 1)
    dd = ((G0[idx[a]] - G0[idx[b]]) ** 2).sum(1)
    lo, hi = np.percentile(dd, [5, 95])
    assert np.allclose(pct, [lo, hi, lo])


@pytest.mark.parametrize("cls", [LogDetKernelLearner, VonNeumannKernelLearner])
def test_a_pair_given_twice_keeps_its_tightest_bound(cls):
    """The same pair with two bounds: the first copy's bound alone was kept, so a stricter
    one was dropped while converged_ said the constraints were met. Now the tightest is kept
    (smallest upper bound of a must-link, largest lower bound of a cannot-link), with a
    warning, and the learned distances meet it."""
    X = np.random.default_rng(0).normal(size=(40, 4))
    pairs = [[0, 3, 1], [3, 0, 1], [1, 2, -1], [2, 1, -1], [5, 6, 1]]
    with pytest.warns(UserWarning, match=r"2 pair\(s\) are given more than once with different"):
        m = cls(init="linear", random_state=0).fit(X, pairs=pairs, bounds=[0.5, 0.1, 5, 50, 1])
    assert m.pairs_.tolist() == [[0, 3, 1], [1, 2, -1], [5, 6, 1]]
    np.testing.assert_allclose(m.bounds_, [0.1, 50.0, 1.0])
    G = m.transform(X)
    d = ((G[[0, 1, 5]] - G[[3, 2, 6]]) ** 2).sum(axis=1)
    assert m.converged_
    assert d[0] <= 0.1 * (1 + 1e-3) and d[1] >= 50 * (1 - 1e-3)  # to the default tol


def test_zero_length_pairs_are_skipped_with_a_warning():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20, 3))
    X[5] = X[4]
    pairs = np.array([[0, 1, 1], [4, 5, -1], [2, 3, -1]])
    with pytest.warns(UserWarning, match="zero length"):
        m = LogDetKernelLearner(init="linear", gamma=1.0).fit(
            X, pairs=pairs, bounds=[0.5, 1.0, 9.0]
        )
    assert m.pairs_.tolist() == [[0, 1, 1], [2, 3, -1]]
    assert np.allclose(m.bounds_, [0.5, 9.0])


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(pairs=[[0, 1, 1]], bounds=[0.0]), ValueError, "> 0"),
        (dict(pairs=[[0, 1, 1]], bounds=[-1.0]), ValueError, "> 0"),
        (dict(pairs=[[0, 1, 1]], bounds=[1.0, 2.0]), ValueError, r"shape \(1,\)"),
        (dict(pairs=[[0, 99, 1]]), ValueError, "out of range"),
        (dict(pairs=[[0, 0, 1]]), ValueError, "itself"),
        (dict(pairs=[[0, 1, 1], [1, 0, -1]]), ValueError, "both"),
        (dict(pairs=[[0, 1, 2]]), ValueError, "sign"),
        (dict(), ValueError, "no side information"),
        (dict(bounds=[1.0]), ValueError, "without pairs"),
        (dict(y=np.zeros(5)), ValueError, "shape"),
        (dict(similarity_pairs=[[0, 1, 1]]), ValueError, "similarity_bounds"),
        (dict(similarity_pairs=[[0, 50, 1]], similarity_bounds=[1.0]), ValueError, "out of range"),
        (dict(similarity_bounds=[1.0]), ValueError, "without similarity_pairs"),
        # no PSD kernel has a negative diagonal entry
        (
            dict(similarity_pairs=[[1, 2, 1], [3, 3, -1]], similarity_bounds=[0.1, -1e-3]),
            ValueError,
            r"constraint 1 \(\[3, 3, -1\]\) asks K\[3, 3\] <= -0.001, but a PSD",
        ),
    ],
)
def test_bad_fit_input(kwargs, exc, match):
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(exc, match=match):
        LogDetKernelLearner(init="linear").fit(X, **kwargs)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(gamma=0.0), "gamma"),
        (dict(gamma=-1.0), "gamma"),
        (dict(init="random"), "init"),
        (dict(tol=-1.0), "tol"),
        (dict(max_iter=0), "max_iter"),
        (dict(bound_rule="median"), "bound_rule"),
        (dict(epsilon=1.5, bound_rule="relative"), "epsilon"),
        (dict(rank=0), "rank"),
    ],
)
def test_bad_parameters(params, match):
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises((ValueError, TypeError), match=match):
        LogDetKernelLearner(init=params.pop("init", "linear"), **params).fit(
            X, pairs=[[0, 1, 1], [2, 3, -1]]
        )


def test_nan_in_X_is_refused():
    X = np.random.default_rng(0).normal(size=(20, 3))
    X[3, 1] = np.nan
    for cls in (LogDetKernelLearner, VonNeumannKernelLearner):
        with pytest.raises(ValueError, match="NaN|finite"):
            cls(init="linear").fit(X, pairs=[[0, 1, 1]])


def test_labels_give_must_link_first_pairs_and_count():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(60, 4))
    y = np.where(rng.random(60) < 0.5, rng.integers(0, 3, 60), -1)
    m = LogDetKernelLearner(init="linear", gamma=1.0, n_constraints=40, random_state=0).fit(X, y)
    s = m.pairs_[:, 2]
    assert m.pairs_.shape[0] == 40
    assert np.all(np.diff(s) <= 0)  # +1 block, then -1 block
    lab = y[m.pairs_[:, :2]]
    assert np.all((lab[:, 0] == lab[:, 1]) == (s > 0)) and np.all(lab >= 0)
    m2 = LogDetKernelLearner(init="linear", gamma=1.0, n_constraints=40, random_state=0).fit(X, y)
    assert np.array_equal(m.pairs_, m2.pairs_) and np.array_equal(m.B_, m2.B_)


@pytest.mark.parametrize("cls", [LogDetKernelLearner, VonNeumannKernelLearner])
def test_a_given_bound_wins_over_the_same_pair_drawn_from_labels(cls):
    # all 66 pairs of 12 labeled samples are drawn; the given pair (0, 2) with its bound
    # used to lose to its drawn copy, whose bound is the percentile default
    X = np.random.default_rng(0).normal(size=(12, 4))
    y = np.arange(12) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 66 hard constraints at rank 4
        m = cls(init="linear", n_constraints=66, random_state=0).fit(
            X, y, pairs=[[2, 0, 1]], bounds=[0.123]
        )
    keys = {tuple(sorted(p)) for p in m.pairs_[:, :2].tolist()}
    assert m.pairs_.shape[0] == 66 == len(keys)  # the given pair replaced its drawn copy
    at = [k for k, p in enumerate(m.pairs_[:, :2].tolist()) if sorted(p) == [0, 2]]
    assert len(at) == 1 and m.bounds_[at[0]] == 0.123


def test_persistence_round_trip(tmp_path):
    from nystrom_priors import load, save

    rng = np.random.default_rng(11)
    X = rng.normal(size=(80, 4))
    y = np.where(rng.random(80) < 0.4, (X[:, 1] > 0).astype(int), -1)
    for cls in (LogDetKernelLearner, VonNeumannKernelLearner):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = cls(n_landmarks=15, random_state=0, max_iter=50).fit(X, y)
        save(m, tmp_path / "m.npz")
        m2 = load(tmp_path / "m.npz")
        assert np.array_equal(m2.transform(X), m.transform(X))


def test_infeasibility_detector_agrees_with_an_sdp_oracle():
    """Feasibility of the hard constraint set by cvxpy (max margin t over A >= 0): clearly
    feasible sets must converge, clearly infeasible ones must be flagged."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(12)
    checked = {"feasible": 0, "infeasible": 0}
    for trial in range(16):
        d = 3
        X = rng.normal(size=(25, d))
        k = int(rng.integers(3, 50))
        a, b = np.triu_indices(25, 1)
        pick = rng.choice(a.size, size=k, replace=False)
        y = (X[:, 0] + 0.5 * rng.normal(size=25) > 0).astype(int)
        i, j = a[pick], b[pick]
        pairs = np.column_stack([i, j, np.where(y[i] == y[j], 1, -1)])
        V = X[i] - X[j]
        d0 = (V**2).sum(1)
        s = pairs[:, 2]
        bounds = np.where(s > 0, 0.75 * d0, 1.25 * d0)
        A = cp.Variable((d, d), PSD=True)
        t = cp.Variable()
        dist = cp.sum(cp.multiply(V @ A, V), axis=1)
        prob = cp.Problem(
            cp.Maximize(t), [cp.multiply(s, dist - bounds) <= -t * bounds, cp.trace(A) <= 1e3]
        )
        prob.solve(solver=cp.CLARABEL)
        margin = t.value
        model = LogDetKernelLearner(init="linear", tol=1e-4, max_iter=20000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, pairs=pairs, bounds=bounds)
        if margin > 0.05:
            assert model.converged_ and not model.infeasible_, (trial, margin)
            checked["feasible"] += 1
        elif margin < -0.05:
            assert model.infeasible_ and not model.converged_, (trial, margin)
            checked["infeasible"] += 1
    assert checked["feasible"] >= 3 and checked["infeasible"] >= 3, checked


@pytest.mark.parametrize(
    "percentiles",
    [
        (95.0, 5.0),
        (50.0, 40.0),
        (-1.0, 50.0),
        (5.0, 101.0),
        (150.0, 200.0),
        (np.nan, 95.0),
        (5.0,),
        (5.0, 50.0, 95.0),
        "5-95",
    ],
)
@pytest.mark.parametrize("rule", ["percentile", "relative"])
def test_distance_bounds_refuse_reversed_or_out_of_range_percentiles(percentiles, rule):
    G0 = np.random.default_rng(0).normal(size=(10, 3))
    pairs = np.array([[0, 1, 1], [2, 3, -1]])
    with pytest.raises(ValueError, match="percentiles must be two numbers .*low <= high"):
        distance_bounds(G0, pairs, rule=rule, percentiles=percentiles)


def test_learners_refuse_reversed_percentiles():
    X = np.random.default_rng(0).normal(size=(30, 3))
    for cls in (LogDetKernelLearner, VonNeumannKernelLearner):
        with pytest.raises(ValueError, match="percentiles"):
            cls(init="linear", percentiles=(95, 5)).fit(X, pairs=np.array([[0, 1, 1]]))
    bounds = distance_bounds(X, np.array([[0, 1, 1], [2, 3, -1]]), percentiles=(30, 30))
    assert bounds[0] == bounds[1]  # low == high is allowed


def test_burg_violation_in_chunks_matches_numpy():
    # burg_violation multiplies chunks of constraint rows by Bt^T (more than one chunk here,
    # distance and similarity constraints mixed, a range not starting at 0)
    from nystrom_priors._numba._burg import burg_violation

    rng = np.random.default_rng(3)
    u, r, nc = 50, 9, 700
    G = rng.normal(size=(u, r))
    Bt = np.triu(rng.normal(size=(r, r))) + 3.0 * np.eye(r)
    I1, I2 = rng.integers(0, u, nc), rng.integers(0, u, nc)
    kind = (rng.random(nc) < 0.3).astype(np.int8)
    delta = rng.choice([-1.0, 1.0], nc)
    bvec = rng.normal(size=nc) * 20.0
    bhat = rng.uniform(1.0, 60.0, nc)
    A, C = G[I1] @ Bt.T, G[I2] @ Bt.T
    p = ((A - C) ** 2).sum(1)
    s = (A * C).sum(1)
    scale = np.maximum(np.abs(bvec), np.sqrt((A * A).sum(1) * (C * C).sum(1)))
    viol_d = np.maximum(0.0, delta * (p - bhat)) / bhat
    viol_s = np.maximum(0.0, delta * (s - bvec)) / scale
    viol = np.where(kind == 0, viol_d, viol_s)

    def check(c0, c1, kind, viol):
        got = burg_violation(G, I1, I2, kind, delta, bvec, bhat, Bt, c0, c1)
        assert got == pytest.approx(viol[c0:c1].max(initial=0.0), rel=1e-12, abs=1e-15)

    for c in range(nc):  # every constraint alone and in short mixed windows
        check(c, c + 1, kind, viol)
        check(c, min(nc, c + 5), kind, viol)
    for c0, c1 in [(0, nc), (37, 650), (5, 5)]:
        check(c0, c1, kind, viol)
        for k in (0, 1):  # all distance, all similarity: the maximum is of that kind
            same = np.full(nc, k, dtype=np.int8)
            check(c0, c1, same, viol_d if k == 0 else viol_s)


def test_constraints_the_initial_kernel_meets_converge_in_one_sweep():
    """Bounds equal to the initial distances (bound_rule="relative", epsilon=0): every
    projection is round-off, the duals ~1e-11, and their relative change stayed large, so the
    dual-change test never passed (1,000 sweeps and a ConvergenceWarning). Duals whose effect
    lam_c b_c is below tol now count as settled; von Neumann already stopped after a sweep."""
    rng = np.random.default_rng(0)
    y = np.arange(120) % 3
    X = rng.normal(size=(120, 5)) + y[:, None]
    kw = dict(random_state=0, n_landmarks=30, bound_rule="relative", epsilon=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = LogDetKernelLearner(**kw).fit(X, y)
    assert model.converged_ and model.n_iter_ == 1 and model.max_violation_ <= 1e-12


def test_the_warning_quotes_the_returned_kernels_violation():
    """The warnings used to quote the largest violation seen during the last sweep (before
    each projection), 10x below what the returned kernel has; they quote max_violation_."""
    rng = np.random.default_rng(0)
    y = np.arange(120) % 3
    X = rng.normal(size=(120, 5)) + y[:, None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LogDetKernelLearner(random_state=0, n_landmarks=30, max_iter=50).fit(X, y)
    assert not model.converged_
    text = " ".join(str(w.message) for w in caught)
    assert (
        f"returned kernel's largest relative violation is {model.max_violation_:.3g}" in text
        or (f"returned kernel's largest relative violation {model.max_violation_:.3g}" in text)
    ), text


@pytest.mark.parametrize("scale", [1e-6, 1.0, 30.0])
def test_the_infeasibility_test_does_not_depend_on_the_bounds_scale(scale):
    """The certificate's trace bound scales with the bounds while its eigenvalue does not, so
    it is compared with the trace the bounds' own scale asks for. A strictly feasible set
    (bounds within 5% of the distances of s^2 X X^T) converges at s = 30, which a bound
    compared with the fixed initial trace called infeasible after 100 sweeps; an infeasible
    triangle (sqrt(b01) + sqrt(b12) < sqrt(b02) at every scale) is flagged after the first
    windows at any scale of its bounds, which the fixed reference missed at 1e-6."""
    r = np.random.default_rng(0)
    X = r.normal(size=(60, 3))
    P = r.choice(60, size=(40, 2))
    P = P[P[:, 0] != P[:, 1]]
    sign = r.choice([-1, 1], size=len(P))
    d = scale**2 * ((X[P[:, 0]] - X[P[:, 1]]) ** 2).sum(1)
    bounds = np.where(sign == 1, 1.05 * d, 0.95 * d)
    for cls in (LogDetKernelLearner, VonNeumannKernelLearner):
        with warnings.catch_warnings():
            warnings.simplefilter("error", InfeasibleConstraintsWarning)
            model = cls(init="linear", max_iter=5000).fit(
                X, pairs=np.column_stack([P, sign]), bounds=bounds
            )
        assert not model.infeasible_, cls.__name__
        # at scale 1e-6 the bounds ask the kernel to shrink 1e12-fold: von Neumann's
        # multiplicative steps take more than 5000 sweeps; LogDet converges at every scale
        assert model.converged_ or (cls is VonNeumannKernelLearner and scale < 1), cls.__name__
    T = np.array([[0.0, 0.0], [1.0, 0.2], [2.0, -0.1], [0.5, 1.0]])
    tri = np.array([[0, 1, 1], [1, 2, 1], [0, 2, -1]])
    for cls, kw in (
        (LogDetKernelLearner, {"init": "linear"}),
        (VonNeumannKernelLearner, {"init": "linear"}),
        (LogDetKernelLearner, {"n_landmarks": 4, "random_state": 0}),
    ):
        model = cls(max_iter=3000, **kw)
        with pytest.warns(InfeasibleConstraintsWarning):
            model.fit(T, pairs=tri, bounds=np.array([1e-4, 1e-4, 10.0]) * scale)
        assert model.infeasible_ and model.n_iter_ <= 100, (cls.__name__, kw, model.n_iter_)


def test_an_unreachable_similarity_bound_is_named_in_the_warning():
    # K_01 ~ 0.77 asked to become 1e100: every projection is lost to round-off, and the
    # warning only advised more sweeps
    X = np.random.default_rng(0).normal(size=(40, 4))
    model = LogDetKernelLearner(rank=5, n_landmarks=10, max_iter=30, random_state=0)
    with pytest.warns(Warning, match=r"similarity pair \[0, 1\] asks its kernel value .* 1e\+100"):
        model.fit(X, similarity_pairs=[[0, 1, 1]], similarity_bounds=[1e100])


@pytest.mark.parametrize(
    "pair, bound",
    [([0, 1, -1], 1e18), ([0, 1, -1], 1e100), ([0, 0, 1], -1e16), ([0, 1, 1], -1e16)],
)
def test_similarity_bounds_far_on_the_met_side_leave_the_kernel(pair, bound):
    # K0 meets each constraint, so the LogDet projection is the identity. The projection's
    # quadratic has one root where I - rho A stays positive definite, of the sign of b - s;
    # at |b| ~ 1e18 both roots sit at that interval's ends and rounding let the other pass:
    # the kernel moved by up to 1e16, reported as converged.
    X = np.random.default_rng(0).normal(size=(40, 4))
    model = LogDetKernelLearner(init="linear", random_state=0)
    model.fit(X, similarity_pairs=[pair], similarity_bounds=[bound])
    G = model.transform(X)
    K0 = X @ X.T
    np.testing.assert_allclose(G @ G.T, K0, rtol=0, atol=1e-12 * np.abs(K0).max())
    np.testing.assert_array_equal(model.dual_, [0.0])


def test_cannot_links_between_near_duplicates_converge_not_flagged_infeasible():
    """Feasible (LogDet can stretch any direction in its range), but the violation falls
    slowly and the certificate's trace bound is huge: the duals' norm, which grows without
    bound on an infeasible set, settles here, and the detector must not flag it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[1] = X[0] + 1e-4 * rng.normal(size=3)
    X[3] = X[2] + 1e-3 * rng.normal(size=3)
    pairs = np.array([[0, 1, -1], [2, 3, -1], [4, 5, 1], [6, 7, -1], [8, 9, 1]])
    kw = dict(rank=10, n_landmarks=40, random_state=0, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleConstraintsWarning)
        model = LogDetKernelLearner(**kw).fit(X, pairs=pairs)
    assert model.converged_ and not model.infeasible_
    assert model.max_violation_ <= model.tol
    undetected = LogDetKernelLearner(**kw)
    undetected.infeasible_window = 0  # no infeasibility test: the sweeps alone
    undetected.fit(X, pairs=pairs)
    assert model.n_iter_ == undetected.n_iter_
    np.testing.assert_array_equal(model.transform(X), undetected.transform(X))
