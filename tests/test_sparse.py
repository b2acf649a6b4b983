"""Sparse (scipy.sparse) input: every public entry point equals the dense path on X.toarray().

The oracle is the library's own dense path on the densified matrix, which tests/test_kernels.py
and the learners' suites check against numpy, scikit-learn and cvxpy; here the two paths must
agree to 1e-12. The sparse path must also never densify X (checked by a matrix whose
``toarray`` raises).
"""

import warnings

import numpy as np
import pytest

import nystrom_priors as npr
from nystrom_priors.kernels import mean_l1_distance

sp = pytest.importorskip("scipy.sparse")

KERNELS = [
    ("rbf", {}),
    ("laplacian", {}),
    ("linear", {}),
    ("cosine", {}),
    ("poly", {"gamma": 0.3, "coef0": 1.0, "degree": 3}),
]


class _NoDense(sp.csr_matrix):
    """A CSR matrix that refuses to be densified as a whole."""

    def toarray(self, *args, **kwargs):
        if self.shape[0] > 150:  # more than a block of rows (rpcholesky: 120)
            raise AssertionError("X was densified")
        return super().toarray(*args, **kwargs)

    todense = toarray

    def __array__(self, *args, **kwargs):
        raise AssertionError("X was densified")


def _sparse(rng, n=240, d=30, density=0.15, fmt="csr"):
    X = sp.random(n, d, density=density, random_state=rng, format="csr", dtype=np.float64)
    X.data = rng.normal(size=X.data.size) * 2.0  # signed values (L1, cosine)
    keep = np.ones(n)
    keep[3] = 0.0  # an empty row
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    return X.asformat(fmt)


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_extrapolate_equals_dense(rng, kernel, params, fmt):
    X = _sparse(rng, fmt=fmt)
    Z = rng.normal(size=(9, X.shape[1]))
    kw = dict(params)
    if kernel in ("rbf", "laplacian"):
        kw["width"] = 7.0
    E = npr.extrapolate(X, Z, kernel=kernel, **kw)
    Ed = npr.extrapolate(X.toarray(), Z, kernel=kernel, **kw)
    assert E.dtype == np.float64 and E.shape == (X.shape[0], 9)
    np.testing.assert_allclose(E, Ed, rtol=0, atol=1e-12 * max(1.0, np.abs(Ed).max()))


def test_extrapolate_float32_and_block_rows(rng):
    X = _sparse(rng).astype(np.float32)
    Z = rng.normal(size=(5, X.shape[1]))
    E = npr.extrapolate(X, Z, width=5.0, block_rows=7)
    assert E.dtype == np.float32
    np.testing.assert_allclose(E, npr.extrapolate(X.toarray(), Z, width=5.0), atol=2e-6)


def test_extrapolate_duplicate_entries_are_summed(rng):
    # COO with duplicates means their sum (scipy's convention); ||x||^2 must use the sum
    X = sp.coo_matrix(([1.0, 2.0, 5.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 3))
    Z = rng.normal(size=(4, 3))
    np.testing.assert_allclose(
        npr.extrapolate(X, Z, width=3.0), npr.extrapolate(X.toarray(), Z, width=3.0), atol=1e-14
    )


def test_iter_extrapolate_equals_dense(rng):
    X = _sparse(rng)
    Z = rng.normal(size=(6, X.shape[1]))
    got = list(npr.iter_extrapolate(X, Z, width=4.0, block_rows=50))
    assert [s for s, _ in got] == [0, 50, 100, 150, 200]
    np.testing.assert_allclose(
        np.vstack([b for _, b in got]), npr.extrapolate(X.toarray(), Z, width=4.0), atol=1e-12
    )
    # an iterable of sparse blocks
    blocks = [X[:100], X[100:]]
    got = np.vstack([b for _, b in npr.iter_extrapolate(blocks, Z, width=4.0)])
    np.testing.assert_allclose(got, npr.extrapolate(X.toarray(), Z, width=4.0), atol=1e-12)


def test_widths_equal_dense(rng):
    X = _sparse(rng)
    Xd = X.toarray()
    assert npr.mean_squared_distance(X) == pytest.approx(npr.mean_squared_distance(Xd), rel=1e-12)
    assert mean_l1_distance(X) == pytest.approx(mean_l1_distance(Xd), rel=1e-12)
    # independent oracle: the pairwise definition
    D2 = ((Xd[:, None, :] - Xd[None, :, :]) ** 2).sum(-1)
    n = Xd.shape[0]
    assert npr.mean_squared_distance(X) == pytest.approx(D2.sum() / (n * (n - 1)), rel=1e-12)


@pytest.mark.parametrize("offset", [1e8, 1e17])
def test_width_of_offset_columns_equals_dense(rng, offset):
    # every entry stored, far from 0: the expanded sum n ||mu||^2 + sum((v - mu)^2 - mu^2)
    # cancelled (13.1 for 8.3 at 1e8; 1.5e19 for identical rows at 1e17, where dense says 0)
    X = rng.normal(size=(40, 4)) + offset
    if offset > 1e16:
        X[:] = X[0]
    dense = npr.mean_squared_distance(X)
    assert npr.mean_squared_distance(sp.csr_matrix(X)) == pytest.approx(dense, rel=1e-9, abs=0)
    if offset < 1e16:  # the pairwise definition, on the exactly representable differences
        D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        assert dense == pytest.approx(D2.sum() / (40 * 39), rel=1e-6)


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e8])
def test_sparse_data_far_from_the_origin_warn_where_distances_lose_half_their_digits(rng, offset):
    """The sparse kernel and k-NN search expand distances without centring (it would densify
    X): at an offset of 1e8 on unit spread the round-off is the width itself. They warn
    there, naming the offset column, and stay silent where the dense path agrees."""
    X = rng.normal(size=(60, 3))
    X[:, 1] += offset
    Z = X[:10] + 0.1  # the same landmarks for both paths
    dense = npr.extrapolate(X, Z)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sparse = npr.extrapolate(sp.csr_matrix(X), Z)
        graph = npr.knn_graph(sp.csr_matrix(X), 5)[0]
    far = [str(w.message) for w in rec if "far from the origin" in str(w.message)]
    err = np.abs(sparse - dense).max()
    if offset < 1e4:
        assert far == [] and err < 1e-8
        assert (graph != npr.knn_graph(X, 5)[0]).nnz == 0
    else:  # the warned case is a wrong result: k(X, Z) off by O(1), both say where to look
        assert err > 1e-2
        assert len(far) == 2 and all("lose more than half their digits" in m for m in far)
        assert far[0].startswith("k(X, Z) (the 'rbf' kernel)") and far[1].startswith("k-NN")


def test_sparse_input_is_never_densified(rng, monkeypatch):
    from nystrom_priors import landmarks

    X = _NoDense(_sparse(rng, n=300))
    # k-means densifies a sample of at most this many entries: here 40 rows
    monkeypatch.setattr(landmarks, "_SPARSE_SAMPLE_ELEMENTS", 40 * X.shape[1])
    Z = rng.normal(size=(5, X.shape[1]))
    npr.extrapolate(X, Z, width=3.0)
    npr.mean_squared_distance(X)
    for method in ("uniform", "kmeans", "kmeans++", "rpcholesky"):
        npr.select_landmarks(X, 10, method=method, random_state=0)
    npr.Nystrom(10, random_state=0).fit(X).transform(X)


@pytest.mark.parametrize("method", ["uniform", "kmeans", "kmeans++", "rpcholesky"])
def test_select_landmarks_equals_dense(rng, method):
    X = _sparse(rng)
    Z = npr.select_landmarks(X, 12, method=method, random_state=5)
    Zd = npr.select_landmarks(X.toarray(), 12, method=method, random_state=5)
    assert isinstance(Z, np.ndarray) and Z.shape == (12, X.shape[1])
    np.testing.assert_allclose(Z, Zd, rtol=0, atol=1e-12)


def _learners():
    return [
        npr.Nystrom(15, random_state=0),
        npr.Nystrom(15, landmarks="rpcholesky", kernel="laplacian", random_state=0),
        npr.GeneralizedNystrom(15, random_state=0),
        # with slack: hard constraints at rank 15 are infeasible here, and an unbounded dual
        # amplifies round-off differences of the two paths
        npr.LogDetKernelLearner(n_landmarks=15, gamma=1.0, random_state=0),
        npr.VonNeumannKernelLearner(n_landmarks=15, random_state=0),
    ]


# hard constraints that rank 15 cannot meet: warned about, irrelevant here
@pytest.mark.filterwarnings("ignore::nystrom_priors.exceptions.InfeasibleConstraintsWarning")
@pytest.mark.parametrize("model", _learners(), ids=lambda m: type(m).__name__)
def test_learners_equal_dense(rng, model):
    from sklearn.base import clone

    X = _sparse(rng)
    Xd = X.toarray()
    y = np.full(X.shape[0], -1)
    y[:30] = np.arange(30) % 3
    Xnew = _sparse(rng, n=20)
    a = clone(model).fit(X, y)
    b = clone(model).fit(Xd, y)
    np.testing.assert_allclose(a.landmarks_, b.landmarks_, atol=1e-12)
    Ga, Gb = a.transform(X), b.transform(Xd)
    scale = max(1.0, np.abs(Gb).max())
    np.testing.assert_allclose(Ga, Gb, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(
        a.transform(Xnew.tocsc()), b.transform(Xnew.toarray()), rtol=0, atol=1e-10 * scale
    )
    Ka, Kb = a.kernel(Xnew, X[:7]), b.kernel(Xnew.toarray(), Xd[:7])
    np.testing.assert_allclose(Ka, Kb, rtol=0, atol=1e-10 * max(1.0, np.abs(Kb).max()))
    it = np.vstack([g for _, g in a.iter_transform(X, block_rows=100)])
    np.testing.assert_allclose(it, Gb, rtol=0, atol=1e-10 * scale)
    rows = np.vstack([k for _, k in a.iter_kernel_rows(Xnew, block_rows=8)])
    np.testing.assert_allclose(
        rows, b.kernel(Xnew.toarray()), rtol=0, atol=1e-10 * max(1.0, np.abs(Kb).max())
    )


def test_bad_sparse_input_is_refused(rng):
    X = _sparse(rng)
    bad = X.copy()
    bad.data[5] = np.nan
    with pytest.raises(ValueError, match="finite"):
        npr.extrapolate(bad, np.ones((2, X.shape[1])), width=1.0)
    with pytest.raises(ValueError, match="features"):
        npr.extrapolate(X, np.ones((2, X.shape[1] + 1)), width=1.0)
    with pytest.raises(ValueError, match="Complex"):
        npr.mean_squared_distance(X.astype(np.complex128))
    model = npr.Nystrom(5, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.transform(sp.csr_matrix((2, X.shape[1] + 2)))


@pytest.mark.parametrize("rank", [None, 5])
def test_bregman_linear_init_equals_dense(rng, rank):
    # init="linear": the learner works on X itself (features F = X, sparse), G0 = X P0
    X = _sparse(rng, n=200, d=12, density=0.3)
    y = np.full(200, -1)
    y[:30] = np.arange(30) % 3
    kw = dict(init="linear", rank=rank, gamma=1.0, random_state=0)
    a = npr.LogDetKernelLearner(**kw).fit(X, y)
    b = npr.LogDetKernelLearner(**kw).fit(X.toarray(), y)
    np.testing.assert_allclose(a.transform(X), b.transform(X.toarray()), rtol=0, atol=1e-10)


@pytest.mark.parametrize("kernel,params", KERNELS)
def test_sparse_landmarks_path_equals_dense(rng, kernel, params):
    # landmarks that are rows of a sparse X (mostly zeros, m x d >= 2^16) take the path that
    # keeps them sparse by feature
    X = sp.random(300, 3000, density=0.01, random_state=rng, format="csr")
    X.data = rng.normal(size=X.nnz)
    Z = X[:40].toarray()
    kw = dict(params)
    if kernel in ("rbf", "laplacian"):
        kw["width"] = {"rbf": 20.0, "laplacian": 30.0}[kernel]
    E = npr.extrapolate(X, Z, kernel=kernel, **kw)
    Ed = npr.extrapolate(X.toarray(), Z, kernel=kernel, **kw)
    np.testing.assert_allclose(E, Ed, rtol=0, atol=1e-12 * max(1.0, np.abs(Ed).max()))


def test_high_dimensional_learner_equals_dense(rng):
    # d >= 1024: W = k(Z, Z) is computed from sparse landmarks too
    X = sp.random(400, 2000, density=0.01, random_state=rng, format="csr")
    y = np.full(400, -1)
    y[:40] = np.arange(40) % 2
    kw = dict(n_landmarks=30, landmarks="uniform", random_state=0)
    a = npr.GeneralizedNystrom(**kw).fit(X, y)
    b = npr.GeneralizedNystrom(**kw).fit(X.toarray(), y)
    Gb = b.transform(X.toarray())
    np.testing.assert_allclose(a.transform(X), Gb, rtol=0, atol=1e-10 * np.abs(Gb).max())


def test_cosine_at_an_overflowing_norm_is_the_dense_value_or_refused():
    """||x||^2 of a CSR row overflows at |x| ~ 1e200: the sparse path used to return 0 for
    every landmark; it must give the dense path's value or refuse clearly."""
    X = np.array([[1e200, 2e200, 0.0], [1.0, 0.0, 1.0]])
    Z = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    dense = npr.extrapolate(X, Z, kernel="cosine")
    try:
        got = npr.extrapolate(sp.csr_matrix(X), Z, kernel="cosine")
    except ValueError as err:
        assert "overflows" in str(err)
    else:
        np.testing.assert_allclose(got, dense, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_bregman_linear_init_on_wide_data_takes_the_top_singular_directions(rng, sparse):
    # n < d: the top right singular vectors come from the n x n Gram matrix; the d x d one
    # took 28 s and 0.7 GB at 200 x 4000
    X = sp.random(60, 400, density=0.05, random_state=rng, format="csr")
    X = X + sp.eye(60, 400, format="csr")
    Xin = X if sparse else X.toarray()
    model = npr.LogDetKernelLearner(init="linear", rank=5, gamma=1.0, random_state=0)
    model.fit(Xin, np.arange(60) % 3)
    Vt = np.linalg.svd(X.toarray(), full_matrices=False)[2][:5]  # independent oracle
    assert model.P0_.shape == (400, 5)
    np.testing.assert_allclose(model.P0_ @ model.P0_.T, Vt.T @ Vt, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.P0_.T @ model.P0_, np.eye(5), rtol=0, atol=1e-14)
    # the Gram matrix of X * 1e100 would overflow: X is brought to a moderate scale first
    big = npr.LogDetKernelLearner(init="linear", rank=5, gamma=1e-200, random_state=0)
    big.fit(Xin * 1e100, np.arange(60) % 3)
    np.testing.assert_allclose(big.P0_ @ big.P0_.T, Vt.T @ Vt, rtol=0, atol=1e-12)
    # more directions than rows: the row space's 60, completed by 10 orthonormal directions X
    # is zero on, without the d x d Gram matrix
    wide = npr.LogDetKernelLearner(init="linear", rank=70, gamma=1.0, max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", npr.ConvergenceWarning)
        assert wide.fit(Xin, np.arange(60) % 3).transform(Xin).shape == (60, 70)
    P = wide.P0_
    np.testing.assert_allclose(P.T @ P, np.eye(70), rtol=0, atol=1e-13)
    row_space = np.linalg.svd(X.toarray(), full_matrices=False)[2]
    np.testing.assert_allclose(P[:, :60] @ P[:, :60].T, row_space.T @ row_space, atol=1e-12)
    np.testing.assert_allclose(X @ P[:, 60:], 0.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "d, k, rank, structured",
    [(10, 3, 10, False), (50, 0, 7, False), (400, 60, 70, False), (6, 3, 6, True), (3, 1, 3, True)],
)
def test_completed_basis_is_orthonormal_and_keeps_the_given_columns(d, k, rank, structured):
    from nystrom_priors.bregman._linear_init import complete_basis

    rng = np.random.default_rng(d + k)
    if structured:  # columns built from coordinate vectors: residuals tie and collapse
        Q = np.zeros((d, k))
        Q[: k + 1, 0] = 1.0
        Q[:, 0] /= np.linalg.norm(Q[:, 0])
        for j in range(1, k):
            Q[k + j, j] = 1.0
    else:
        Q = np.linalg.qr(rng.normal(size=(d, k)))[0] if k else np.zeros((d, 0))
    B = complete_basis(Q, rank)
    assert B.shape == (d, rank)
    np.testing.assert_array_equal(B[:, :k], Q)
    np.testing.assert_allclose(B.T @ B, np.eye(rank), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(complete_basis(Q, rank), B)  # deterministic


def test_bregman_linear_init_beyond_the_rank_of_wide_data_stays_linear_in_memory():
    import tracemalloc

    X = np.random.default_rng(0).normal(size=(30, 3000))  # rank 30 < rank=40 < d
    model = npr.LogDetKernelLearner(init="linear", rank=40, gamma=1.0, max_iter=1, random_state=0)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", npr.ConvergenceWarning)
        model.fit(X, np.arange(30) % 3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert model.P0_.shape == (3000, 40)
    assert peak < 3000 * 3000 * 8 / 4, peak  # a d x d Gram matrix alone is 72 MB


def test_bregman_linear_init_without_rank_on_many_features_warns():
    X = np.random.default_rng(0).normal(size=(20, 2100))
    with pytest.warns(UserWarning, match=r"2100 x 2100 initial factor .* pass rank="):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", npr.ConvergenceWarning)
            npr.LogDetKernelLearner(init="linear", max_iter=1, random_state=0).fit(
                X, np.arange(20) % 2
            )


def test_float32_sparse_far_from_the_origin_warns_once_without_a_cast_overflow():
    # the cancellation check compared its float64 figure with float32's eps: numpy cast the
    # figure to float32 and overflowed, a RuntimeWarning beside the UserWarning it meant
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(60, 4)) * 1e28).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        E = npr.extrapolate(sp.csr_matrix(X), X[:5], width=1.0)
    assert np.isfinite(E).all()
    kinds = [w.category for w in caught]
    assert RuntimeWarning not in kinds, [str(w.message) for w in caught]
    assert kinds.count(UserWarning) == 1 and "far from the origin" in str(caught[0].message)


def test_completed_basis_falls_back_column_by_column_where_the_block_collapses():
    # Q pairs e0 with e1 and e2 with e3: the two farthest coordinates, e0 and e1, leave
    # opposite residuals (e0 - e1 and e1 - e0), so the block's QR loses its second column;
    # column by column, e1 is skipped for e2
    from nystrom_priors.bregman._linear_init import complete_basis

    Q = np.zeros((4, 2))
    Q[[0, 1], 0] = Q[[2, 3], 1] = 2**-0.5
    B = complete_basis(Q, 4)
    np.testing.assert_allclose(B.T @ B, np.eye(4), rtol=0, atol=1e-14)
    np.testing.assert_allclose(B[:, 2], [2**-0.5, -(2**-0.5), 0, 0], atol=1e-14)
    np.testing.assert_allclose(B[:, 3], [0, 0, 2**-0.5, -(2**-0.5)], atol=1e-14)
