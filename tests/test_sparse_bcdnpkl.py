"""BCDNPKL on scipy.sparse input: equal to the dense path on X.toarray(), never densified.

The oracle is the library's own dense path (tests/test_npkl.py checks it against cvxpy and
scipy's KD-tree), plus, for the kNN search, exact integer arithmetic. The two paths sum the
cross products in different orders, so they agree to round-off, and exactly where the
arithmetic is exact.
"""

import numpy as np
import pytest
from test_sparse import _NoDense, _sparse

import nystrom_priors as npr
from nystrom_priors.npkl import gaussian_graph, knn_graph, knn_search

sp = pytest.importorskip("scipy.sparse")

SETTINGS = [
    dict(graph="knn"),
    dict(graph="knn", weights="gaussian"),
    dict(graph="knn", weights="gaussian", sigma=2.5, loss="squared_hinge"),
    dict(graph="dense"),
    dict(graph="dense", sigma=3.0, loss="hinge", max_iter=30),
]


def _labels(n):
    y = np.full(n, -1)
    y[:30] = np.arange(30) % 3
    return y


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(1.0, float(np.abs(b).max())))


def test_bcdnpkl_advertises_sparse_input():
    pytest.importorskip("sklearn")
    assert npr.BCDNPKL().__sklearn_tags__().input_tags.sparse


@pytest.mark.filterwarnings("ignore:BCDNPKL did not converge")
@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: "-".join(map(str, kw.values())))
def test_bcdnpkl_equals_dense(rng, kw):
    X = _sparse(rng)
    Xd = X.toarray()
    y = _labels(X.shape[0])
    Xnew = _sparse(rng, n=20)
    a = npr.BCDNPKL(random_state=0, **kw).fit(X, y)
    b = npr.BCDNPKL(random_state=0, **kw).fit(Xd, y)
    assert sp.issparse(a.X_fit_) and a.X_fit_.format == "csr"
    assert np.array_equal(a.X_fit_.toarray(), Xd)
    for name in ("pairs_", "constrained_", "n_iter_", "rank_", "delta_"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.sigma_ is None) == (b.sigma_ is None)
    if a.sigma_ is not None:
        assert a.sigma_ == pytest.approx(b.sigma_, rel=1e-12)
    Sa, Sb = a.graph_, b.graph_
    _close(Sa.toarray() if sp.issparse(Sa) else Sa, Sb.toarray() if sp.issparse(Sb) else Sb)
    for name in ("degrees_", "V_", "embedding_", "objective_path_"):
        _close(getattr(a, name), getattr(b, name))
    Gb = b.transform(Xd)
    _close(a.transform(X), Gb)
    _close(a.fit_transform(X, y), b.fit_transform(Xd, y))
    _close(a.transform(Xnew.tocsc()), b.transform(Xnew.toarray()))
    _close(a.transform(sp.csr_array(Xnew)), b.transform(Xnew.toarray()))  # a sparse array
    _close(a.kernel(Xnew, X[:7]), b.kernel(Xnew.toarray(), Xd[:7]))
    _close(np.vstack([g for _, g in a.iter_transform(X, block_rows=70)]), Gb)
    rows = np.vstack([k for _, k in a.iter_kernel_rows(Xnew.tocoo(), block_rows=8)])
    _close(rows, b.kernel(Xnew.toarray()))
    # mixed: a dense model on sparse queries, a sparse model on dense queries
    _close(b.transform(Xnew), b.transform(Xnew.toarray()))
    _close(a.transform(Xnew.toarray()), b.transform(Xnew.toarray()))


def test_training_rows_are_recognised_in_sparse_queries(rng):
    # transform of a training sample is its learned row (exact copies are found in CSR too,
    # also when the stored entries differ by an explicit zero)
    X = _sparse(rng)
    y = _labels(X.shape[0])
    for kw in (dict(), dict(graph="dense")):
        model = npr.BCDNPKL(random_state=0, **kw).fit(X, y)
        rows = np.array([0, 1, 2, 5, 100])
        C = X[rows].tocoo()
        free = int(np.flatnonzero(X[0].toarray().ravel() == 0)[0])
        Q = sp.csr_matrix(  # row 0 with an explicit zero stored
            (np.r_[C.data, 0.0], (np.r_[C.row, 0], np.r_[C.col, free])), shape=C.shape
        )
        assert Q.nnz == C.nnz + 1
        np.testing.assert_array_equal(model.transform(Q), model.embedding_[rows])
        moved = X[rows].copy()
        moved.data = moved.data + 1e-3  # not a training sample any more
        assert not np.allclose(model.transform(moved), model.embedding_[rows])


@pytest.mark.parametrize("self_search", [True, False])
def test_knn_search_equals_dense_and_breaks_ties_like_it(rng, self_search):
    # small integer counts: every product and sum is exact in both paths, and many distances
    # tie; an exact oracle sorts by (squared distance, index)
    X = sp.random(120, 25, density=0.2, random_state=rng, format="csr")
    X.data = rng.integers(1, 4, size=X.nnz).astype(np.float64)
    Y = None if self_search else sp.random(30, 25, density=0.2, random_state=rng, format="csr")
    if Y is not None:
        Y.data = rng.integers(1, 4, size=Y.nnz).astype(np.float64)
    k = 6
    idx, dist = knn_search(X, Y, k)
    idx_d, dist_d = knn_search(X.toarray(), None if Y is None else Y.toarray(), k)
    np.testing.assert_array_equal(idx, idx_d)
    np.testing.assert_array_equal(dist, dist_d)
    # row blocks of the cross products: same result whatever the block
    idx_b, dist_b = knn_search(X.tocoo(), Y, k, block_rows=7)
    np.testing.assert_array_equal(idx_b, idx)
    np.testing.assert_array_equal(dist_b, dist)
    Xi = X.toarray().astype(np.int64)
    Yi = Xi if Y is None else Y.toarray().astype(np.int64)
    D2 = ((Yi[:, None, :] - Xi[None, :, :]) ** 2).sum(-1)
    if self_search:
        np.fill_diagonal(D2, np.iinfo(np.int64).max)
    cols = np.arange(Xi.shape[0])
    oracle = np.array([np.lexsort((cols, row))[:k] for row in D2])
    ties = sum(len(np.unique(row[oracle[i]])) < k for i, row in enumerate(D2))
    assert ties > 10  # the rule is exercised
    np.testing.assert_array_equal(idx, oracle)
    np.testing.assert_allclose(dist**2, np.take_along_axis(D2, oracle, 1), rtol=1e-14)


def test_graphs_equal_dense(rng):
    X = _sparse(rng)
    Xd = X.toarray()
    for weights in ("binary", "gaussian"):
        S, s = knn_graph(X.tocsc(), 5, weights=weights)
        Sd, sd = knn_graph(Xd, 5, weights=weights)
        assert (S != Sd).nnz == 0 if weights == "binary" else (abs(S - Sd).max() < 1e-12)
        assert s == pytest.approx(sd, rel=1e-12) if sd else s is None
    G, s = gaussian_graph(X)
    Gd, sd = gaussian_graph(Xd)
    assert s == pytest.approx(sd, rel=1e-12)
    _close(G, Gd)


@pytest.mark.filterwarnings("ignore:BCDNPKL did not converge")
@pytest.mark.parametrize("kw", [dict(), dict(weights="gaussian"), dict(graph="dense")])
def test_sparse_input_is_never_densified(rng, kw, tmp_path):
    X = _NoDense(_sparse(rng, n=300))
    assert X.shape[0] > 150  # toarray would raise
    y = _labels(X.shape[0])
    model = npr.BCDNPKL(random_state=0, max_iter=50, **kw).fit(X, y)
    assert type(model.X_fit_) is sp.csr_matrix  # the model's own plain copy
    model.X_fit_ = _NoDense(model.X_fit_)  # transform must not densify it either
    G = model.transform(X)
    assert G.shape == (300, model.n_components_)
    model.kernel(X, X[:10])
    list(model.iter_transform(X, block_rows=200))
    npr.save(model, tmp_path / "m.npz")


def test_sparse_fit_round_trips_through_save_and_load(rng, tmp_path):
    X = _sparse(rng).astype(np.float32)
    y = _labels(X.shape[0])
    model = npr.BCDNPKL(weights="gaussian", random_state=0).fit(X, y)
    npr.save(model, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as data:
        assert not any("X_fit_" in k and not k.startswith("csr:") for k in data.files)
    back = npr.load(tmp_path / "m.npz")
    Xf, Xb = model.X_fit_, back.X_fit_
    assert sp.issparse(Xb) and Xb.format == "csr" and Xb.dtype == np.float32
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(Xb, part), getattr(Xf, part))
    assert Xb.shape == Xf.shape
    Xnew = _sparse(rng, n=25).astype(np.float32)
    for Q in (Xnew, X, Xnew.toarray()):
        a, b = model.transform(Q), back.transform(Q)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    npr.save(back, tmp_path / "again.npz")
    again = npr.load(tmp_path / "again.npz")
    assert again.transform(Xnew).tobytes() == model.transform(Xnew).tobytes()


def _rewrite(src, dst, changes):
    with np.load(src) as data:
        arrays = {k: data[k] for k in data.files}
    for key, value in changes.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    np.savez(dst, **arrays)
    return dst


@pytest.fixture(scope="module")
def sparse_model_file(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = _sparse(rng, n=60, d=8, density=0.4)
    path = tmp_path_factory.mktemp("m") / "m.npz"
    npr.save(npr.BCDNPKL(random_state=0).fit(X, _labels(60)), path)
    with np.load(path) as data:
        parts = {k.split(":")[-1]: data[k] for k in data.files if k.startswith("csr:X_fit_:")}
    return path, parts


def _bad_parts(p):
    dup = p["indices"].copy()
    row = int(np.flatnonzero(np.diff(p["indptr"]) >= 2)[0])
    dup[p["indptr"][row] + 1] = dup[p["indptr"][row]]  # a repeated column in a row
    nan = p["data"].copy()
    nan[0] = np.nan
    return [
        ("data", nan, "non-finite"),
        ("indices", dup, "strictly increasing"),
        ("indptr", p["indptr"][:-1], "offsets"),
        ("shape", np.array([60, 3]), r"indices': holds \d+; valid indices are in \[0, 2\]"),
        ("indptr", None, "indptr': missing"),
        ("extra", np.zeros(2), "unknown entry"),
        ("indices", p["indices"].astype(np.float64), "int32 or int64"),
    ]


@pytest.mark.parametrize("case", range(7))
def test_damaged_sparse_model_files_are_refused(sparse_model_file, tmp_path, case):
    path, parts = sparse_model_file
    assert npr.load(path).X_fit_.nnz == parts["data"].size  # the file itself is fine
    part, value, match = _bad_parts(parts)[case]
    dst = _rewrite(path, tmp_path / "bad.npz", {f"csr:X_fit_:{part}": value})
    with pytest.raises(ValueError, match=match):
        npr.load(dst)


def test_failed_save_of_a_sparse_model_keeps_the_old_file(rng, tmp_path):
    X = _sparse(rng, n=60, d=8, density=0.4)
    model = npr.BCDNPKL(random_state=0).fit(X, _labels(60))
    path = tmp_path / "m.npz"
    npr.save(model, path)
    before = path.read_bytes()
    model.X_fit_ = model.X_fit_.copy()
    model.X_fit_.data[0] = np.inf
    with pytest.raises(ValueError, match="X_fit_.*non-finite"):
        npr.save(model, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


def test_float32_sparse_stays_float32_and_matches_dense(rng):
    X = _sparse(rng).astype(np.float32)
    y = _labels(X.shape[0])
    Xnew = _sparse(rng, n=20).astype(np.float32)
    for kw in (dict(weights="gaussian"), dict(graph="dense")):
        a = npr.BCDNPKL(random_state=0, **kw).fit(X, y)
        b = npr.BCDNPKL(random_state=0, **kw).fit(X.toarray(), y)
        assert a.X_fit_.dtype == np.float32 and a.fit_transform(X, y).dtype == np.float32
        Ga, Gb = a.transform(Xnew), b.transform(Xnew.toarray())
        assert Ga.dtype == np.float32
        np.testing.assert_allclose(Ga, Gb, rtol=0, atol=1e-5 * np.abs(Gb).max())
