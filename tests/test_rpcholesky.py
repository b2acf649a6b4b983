"""Randomly pivoted Cholesky landmarks: exactness, law of the pivots, quality, determinism.

Oracles: dense numpy kernels (``conftest.naive_kernel``), the Nystrom approximation on the
pivots computed with ``np.linalg.pinv``, and the sequential RPCholesky law computed exactly
by enumeration on a tiny problem.
"""

import itertools

import numba
import numpy as np
import pytest
import threadpoolctl
from conftest import naive_kernel

import nystrom_priors as npr
from nystrom_priors._rows import RowSource
from nystrom_priors._rpcholesky import rpcholesky
from nystrom_priors.kernels import make_kernel


def _blobs(rng, n=400, d=3, k=8, spread=8.0):
    centers = rng.normal(size=(k, d)) * spread
    sizes = rng.multinomial(n, rng.dirichlet(np.ones(k) * 0.5))  # unequal clusters
    return np.vstack([c + rng.normal(size=(s, d)) for c, s in zip(centers, sizes, strict=True)])


def _trace_error(K, Z_rows):
    """trace(K - K[:, S] K[S, S]^+ K[S, :]) for landmark rows S of X."""
    C = K[:, Z_rows]
    W = K[np.ix_(Z_rows, Z_rows)]
    return float(np.trace(K) - np.einsum("ij,jk,ik->", C, np.linalg.pinv(W, rcond=1e-12), C))


@pytest.mark.parametrize(
    "kernel,params",
    [("rbf", {"width": 4.0}), ("laplacian", {"width": 6.0}), ("linear", {}), ("poly", {})],
)
def test_factor_equals_nystrom_on_the_pivots(rng, kernel, params):
    X = rng.normal(size=(150, 4))
    spec = make_kernel(kernel, X=X, **params)
    F, S = rpcholesky(RowSource(X), 12, spec, np.random.default_rng(1), block=5)
    assert F.shape == (150, 12) and len(set(S.tolist())) == 12
    K = naive_kernel(X, X, spec.name, gamma=spec.gamma, degree=spec.degree, coef0=spec.coef0)
    C = K[:, S]
    nys = C @ np.linalg.solve(K[np.ix_(S, S)], C.T)
    np.testing.assert_allclose(F @ F.T, nys, rtol=0, atol=1e-9 * np.abs(K).max())
    # a Cholesky factor: row S[j] of F has zeros after column j
    np.testing.assert_allclose(np.triu(F[S], 1), 0.0, atol=1e-12)


def test_trace_error_decreases_with_k(rng):
    X = _blobs(rng)
    spec = make_kernel("rbf", X=X)
    K = naive_kernel(X, X, "rbf", gamma=spec.gamma)
    errs = []
    for k in (4, 8, 16, 32, 64):
        F, _ = rpcholesky(RowSource(X), k, spec, np.random.default_rng(7))
        errs.append(float(np.trace(K) - np.einsum("ij,ij->", F, F)))
    assert all(b < a for a, b in zip(errs, errs[1:], strict=False)), errs
    assert errs[-1] < 0.05 * errs[0]


def test_pivots_follow_the_sequential_law():
    # exact law of two sequential RPCholesky pivots on 4 points (linear kernel), against the
    # empirical law of the block rejection sampler (block 3: rejections and repeats happen)
    X = np.array([[1.0, 0.0], [0.9, 0.3], [0.0, 1.0], [0.5, 0.5]])
    K = X @ X.T
    spec = make_kernel("linear")
    exact = {}
    for a, b in itertools.permutations(range(4), 2):
        d1 = np.diag(K)
        res = K - np.outer(K[:, a], K[:, a]) / K[a, a]
        d2 = np.clip(np.diag(res), 0, None)
        exact[(a, b)] = d1[a] / d1.sum() * d2[b] / d2.sum()
    trials = 1500
    counts = dict.fromkeys(exact, 0)
    src = RowSource(X)
    # single-threaded BLAS: between Numba's parallel regions a threaded BLAS call on these
    # 4 x 4 blocks waits for its threads (13 ms a draw instead of 1 ms); the law is the same
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        for seed in range(trials):
            _, S = rpcholesky(src, 2, spec, np.random.default_rng(seed), block=3)
            counts[(int(S[0]), int(S[1]))] += 1
    for key, p in exact.items():
        sd = np.sqrt(p * (1 - p) / trials)
        assert abs(counts[key] / trials - p) < 5 * sd + 1e-3, (key, counts[key] / trials, p)


def test_deterministic_for_a_seed_and_thread_count(rng):
    X = _blobs(rng)
    a = npr.select_landmarks(X, 25, method="rpcholesky", random_state=3)
    np.testing.assert_array_equal(
        a, npr.select_landmarks(X, 25, method="rpcholesky", random_state=3)
    )
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        c = npr.select_landmarks(X, 25, method="rpcholesky", random_state=3)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, npr.select_landmarks(X, 25, method="rpcholesky", random_state=4))


def test_landmarks_are_distinct_data_rows(rng):
    X = _blobs(rng)
    Z = npr.select_landmarks(X, 40, method="rpcholesky", random_state=0)
    rows = [int(np.flatnonzero((X == z).all(axis=1))[0]) for z in Z]
    assert len(set(rows)) == 40


def test_never_worse_than_uniform_on_clustered_data():
    rng = np.random.default_rng(11)
    X = _blobs(rng, n=500)
    b = npr.mean_squared_distance(X) / 20  # narrow kernel: clusters matter
    K = naive_kernel(X, X, "rbf", gamma=1.0 / b)
    index = {tuple(x): i for i, x in enumerate(X)}
    errs = {"uniform": [], "rpcholesky": []}
    for seed in range(8):
        for method in errs:
            Z = npr.select_landmarks(X, 20, method=method, random_state=seed, width=b)
            errs[method].append(_trace_error(K, [index[tuple(z)] for z in Z]))
    assert np.mean(errs["rpcholesky"]) < np.mean(errs["uniform"]), errs


def test_rank_deficient_kernel_fills_with_unused_rows(rng):
    # a linear kernel of rank 2: the residual vanishes after 2 pivots
    X = rng.normal(size=(30, 2))
    F, S = rpcholesky(RowSource(X), 5, make_kernel("linear"), np.random.default_rng(0))
    assert len(set(S.tolist())) == 5
    np.testing.assert_allclose(F[:, 2:], 0.0)
    np.testing.assert_allclose(F @ F.T, X @ X.T, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kernel,rank", [("linear", 3), ("poly", 10)])
def test_float32_rank_deficient_kernel_ends(seed, kernel, rank):
    # float32 rows give float32 kernel columns while the diagonal is float64: once the rank is
    # exhausted only rounding is left, which must end the pivoting, not be sampled forever
    X = np.random.default_rng(seed).normal(size=(100, 3 if kernel == "linear" else 2))
    X = X.astype(np.float32)
    spec = (
        make_kernel(kernel, gamma=0.5, degree=3, coef0=1.0)
        if kernel == "poly"
        else make_kernel(kernel)
    )
    F, S = rpcholesky(RowSource(X), 20, spec, np.random.default_rng(seed))
    assert len(set(S.tolist())) == 20
    K = naive_kernel(
        X.astype(np.float64),
        X.astype(np.float64),
        spec.name,
        gamma=spec.gamma,
        degree=spec.degree,
        coef0=spec.coef0,
    )
    np.testing.assert_allclose(F @ F.T, K, atol=1e-4 * np.abs(K).max())
    assert np.count_nonzero(np.abs(F).max(axis=0)) <= rank


# hard constraints that rank 15 cannot meet: warned about, irrelevant here
@pytest.mark.filterwarnings("ignore::nystrom_priors.exceptions.InfeasibleConstraintsWarning")
@pytest.mark.parametrize("cls", [npr.Nystrom, npr.GeneralizedNystrom, npr.LogDetKernelLearner])
def test_learners_accept_rpcholesky(rng, cls):
    X = _blobs(rng, n=200)
    y = np.full(200, -1)
    y[:20] = np.arange(20) % 2
    model = cls(n_landmarks=15, landmarks="rpcholesky", random_state=0).fit(X, y)
    # the landmarks are the pivots of the learner's own kernel on the training rows
    spec = make_kernel("rbf", X=X)
    _, S = rpcholesky(RowSource(X), 15, spec, np.random.default_rng(0))
    np.testing.assert_array_equal(model.landmarks_, X[np.sort(S)])
    G = model.transform(X)
    assert np.isfinite(G).all()


def test_bad_input():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="sample_size"):
        npr.select_landmarks(X, 10, method="rpcholesky", sample_size=5)
    with pytest.raises(ValueError, match="Unknown kernel"):
        npr.select_landmarks(X, 10, method="rpcholesky", kernel="nope")
    with pytest.raises(ValueError, match="rpcholesky"):
        npr.Nystrom(5, landmarks="rpcholeski").fit(X)


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_diagonal_is_one_on_every_non_zero_row(sparse):
    # from ||x||^2 > 0 it was 0 on rows below 1e-162, whose squares underflow: RPCholesky
    # then never sampled them and treated them as zero rows
    import scipy.sparse as sp

    from nystrom_priors._rpcholesky import kernel_diagonal

    X = np.array([[5e-324, 0.0], [1e-200, -1e-170], [0.0, 0.0], [1.0, 2.0]])
    d = kernel_diagonal(sp.csr_matrix(X) if sparse else X, make_kernel("cosine"))
    assert np.array_equal(d, [1.0, 1.0, 0.0, 1.0])
