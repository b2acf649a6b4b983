"""VonNeumannKernelLearner (Kulis et al. 2006, Algorithm 2) against independent oracles: numpy's
eigh for the secular eigensolver, a dense n x n implementation (scipy's expm / logm) and
constructed feasible problems."""

import math
import warnings

import numpy as np
import pytest
from _bregman_oracles import dense_von_neumann, feasible_problem, rel_violation  # noqa: E402
from hypothesis import given
from hypothesis import strategies as st

from nystrom_priors import VonNeumannKernelLearner
from nystrom_priors.exceptions import ConvergenceWarning

# --------------------------------------------------------------------------------------------
# secular eigensolver and projection parameter
# --------------------------------------------------------------------------------------------


@given(
    r=st.integers(1, 40),
    seed=st.integers(0, 2**31 - 1),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    rho_scale=st.sampled_from([1e-9, 1e-3, 1.0, 100.0]),
    repeats=st.booleans(),
    zeros=st.booleans(),
    negative=st.booleans(),
)
def test_dpr1_eig_matches_eigh(r, seed, scale, rho_scale, repeats, zeros, negative):
    from nystrom_priors._numba._von_neumann import dpr1_eig

    rng = np.random.default_rng(seed)
    d = rng.normal(size=r) * scale
    if repeats:
        d[: r // 2 + 1] = d[0]  # exactly repeated poles: Givens deflation
    w = rng.normal(size=r)
    if zeros:
        w[::3] = 0.0  # zero weights: plain deflation
    rho = rho_scale * (-1.0 if negative else 1.0)
    theta, U = np.empty(r), np.empty((r, r))
    dpr1_eig(d, w, rho, theta, U)
    A = np.diag(d) + rho * np.outer(w, w)
    ref = np.linalg.eigvalsh(A)
    size = max(np.abs(ref).max(), 1e-300)
    assert np.allclose(np.sort(theta), ref, rtol=0, atol=64 * r * 2.2e-16 * size)
    assert np.abs(A @ U - U * theta).max() <= 64 * r * 2.2e-16 * size
    assert np.abs(U.T @ U - np.eye(r)).max() <= 64 * r * 2.2e-16


def test_vn_root_solves_the_trace_equation_in_few_evaluations():
    from scipy.linalg import expm

    from nystrom_priors._numba._von_neumann import vn_root

    rng = np.random.default_rng(3)
    evals = []
    for _ in range(200):
        r = int(rng.integers(2, 30))
        d, w = rng.normal(size=r), rng.normal(size=r)
        p = np.exp(d) @ (w * w)
        b = p * math.exp(rng.normal() * 1.5)
        theta, U, c = np.empty(r), np.empty((r, r)), np.empty(r)
        rho, nev = vn_root(d, w, b, theta, U, c)
        f = w @ expm(np.diag(d) + rho * np.outer(w, w)) @ w
        assert abs(f / b - 1) < 1e-10
        evals.append(nev)
    # the paper: "rarely more than six trace evaluations per projection"
    assert np.median(evals) <= 6 and max(evals) <= 12


def test_von_neumann_factored_equals_dense():
    rng = np.random.default_rng(4)
    X, pairs, bounds = feasible_problem(rng, n=25, d=5, k=15)
    n_sweeps = 5
    model = VonNeumannKernelLearner(init="linear", max_iter=n_sweeps, tol=0.0)
    with pytest.warns(ConvergenceWarning):
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    Kd, lam = dense_von_neumann(X @ X.T, model.pairs_, model.bounds_, n_sweeps)
    K = G @ G.T
    assert np.abs(K - Kd).max() <= 1e-10 * np.abs(Kd).max()
    assert np.allclose(model.dual_, lam, rtol=1e-8, atol=1e-12 * np.abs(lam).max())


@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 15))
def test_von_neumann_properties_on_feasible_problems(seed, k):
    rng = np.random.default_rng(seed)
    X, pairs, bounds = feasible_problem(rng, n=25, d=4, k=k)
    tol = 1e-4
    model = VonNeumannKernelLearner(init="linear", tol=tol, max_iter=5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G = model.fit_transform(X, pairs=pairs, bounds=bounds)
    assert model.converged_
    assert np.linalg.matrix_rank(G @ G.T) <= np.linalg.matrix_rank(X)
    assert np.all(model.spectrum_ > 0)
    assert np.abs(model.W_.T @ model.W_ - np.eye(4)).max() < 1e-10
    assert rel_violation(G, model.pairs_, model.bounds_) < tol
    assert model.dual_.min() >= 0.0


def test_a_bound_no_sweep_can_reach_is_named_in_the_convergence_warning():
    """A bound of 1e-300 asks a pair's squared distance to shrink ~1e300-fold: the relative
    violation stays inf and more sweeps cannot help. The warning names the pair, its
    distance and bound, and the learner that has slack."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    pairs = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1]])
    model = VonNeumannKernelLearner(rank=5, n_landmarks=10, max_iter=30, random_state=0)
    with pytest.warns(
        ConvergenceWarning,
        match=r"pair \[\d+, \d+\] asks its squared distance .* to become 1e-300 .*"
        r"LogDetKernelLearner with a finite gamma",
    ):
        model.fit(X, pairs=pairs, bounds=np.full(3, 1e-300))
