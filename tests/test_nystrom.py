"""The Nystrom estimator: exactness oracles, scikit-learn agreement, streaming, API."""

import numpy as np
import pytest
from conftest import naive_kernel

from nystrom_priors import KernelSpec, NotFittedError, Nystrom, extrapolate


def test_exact_when_landmarks_are_all_samples(rng):
    X = rng.normal(size=(250, 6))
    model = Nystrom(n_landmarks=250, landmarks=X).fit(X)
    G = model.transform(X)
    K = naive_kernel(X, X, "rbf", gamma=1.0 / model.width_)
    np.testing.assert_allclose(G @ G.T, K, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly", "cosine", "linear"])
def test_landmark_rows_reproduce_W(rng, kernel):
    X = rng.normal(size=(300, 5))
    model = Nystrom(n_landmarks=30, kernel=kernel, random_state=0).fit(X)
    Z = model.landmarks_
    W = extrapolate(Z, Z, kernel=model._kernel_spec())
    np.testing.assert_allclose(model.kernel(Z), W, rtol=0, atol=1e-9 * np.abs(W).max())


def test_learned_kernel_is_E_Splus_Et(rng):
    X = rng.normal(size=(200, 4))
    Xn = rng.normal(size=(40, 4))
    model = Nystrom(n_landmarks=25, random_state=1).fit(X)
    E = extrapolate(Xn, model.landmarks_, width=model.width_)
    np.testing.assert_allclose(model.kernel(Xn), E @ model.S0_ @ E.T, atol=1e-10)
    np.testing.assert_allclose(
        model.kernel(Xn, X[:7]), model.transform(Xn) @ model.transform(X[:7]).T
    )


def test_default_width_is_training_mean_squared_distance(rng):
    from scipy.spatial.distance import pdist

    X = rng.normal(size=(120, 3))
    assert Nystrom(10, random_state=0).fit(X).width_ == pytest.approx(
        pdist(X, "sqeuclidean").mean()
    )


def test_agrees_with_sklearn_nystroem(rng):
    kernel_approximation = pytest.importorskip("sklearn.kernel_approximation")
    X = rng.normal(size=(300, 5))
    gamma = 0.1
    sk = kernel_approximation.Nystroem(gamma=gamma, n_components=40, random_state=0).fit(X)
    ours = Nystrom(n_landmarks=40, landmarks=sk.components_, gamma=gamma).fit(X)
    Xt = rng.normal(size=(80, 5))
    Gs, Go = sk.transform(Xt), ours.transform(Xt)
    np.testing.assert_allclose(Go @ Go.T, Gs @ Gs.T, rtol=0, atol=1e-8)


def test_float32_is_preserved_and_accurate(rng):
    X = rng.normal(size=(400, 8))
    m64 = Nystrom(n_landmarks=30, random_state=0).fit(X)
    m32 = Nystrom(n_landmarks=30, landmarks=m64.landmarks_.astype(np.float32)).fit(
        X.astype(np.float32)
    )
    G32 = m32.transform(X.astype(np.float32))
    assert G32.dtype == np.float32 and m32.landmarks_.dtype == np.float32
    K64 = m64.kernel(X[:100])
    K32 = G32[:100] @ G32[:100].T
    # the float32 cut-off (m * eps32) drops eigen-directions below ~4e-6 lam_max
    assert np.abs(K32 - K64).max() < 1e-3


def test_singular_W_from_duplicated_landmarks(rng):
    X = rng.normal(size=(100, 3))
    Z = np.vstack([X[:10], X[:10]])  # every landmark twice: rank(W) = 10
    model = Nystrom(landmarks=Z, n_landmarks=20).fit(X)
    assert model.n_components_ == 10
    G = model.transform(X)
    assert np.isfinite(G).all()
    W = extrapolate(Z, Z, width=model.width_)
    np.testing.assert_allclose(model.kernel(Z), W, atol=1e-10)


def test_streaming_matches_transform(rng, tmp_path):
    X = rng.normal(size=(230, 4))
    model = Nystrom(n_landmarks=20, random_state=0).fit(X)
    G = model.transform(X)
    blocks = list(model.iter_transform(X, block_rows=50))
    assert [s for s, _ in blocks] == [0, 50, 100, 150, 200]
    np.testing.assert_array_equal(np.vstack([b for _, b in blocks]), G)
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    gen = (mm[s : s + 64] for s in range(0, 230, 64))
    np.testing.assert_array_equal(np.vstack([b for _, b in model.iter_transform(gen)]), G)
    rows = list(model.iter_kernel_rows(X, X[:13], block_rows=100))
    np.testing.assert_allclose(np.vstack([r for _, r in rows]), G @ G[:13].T, atol=1e-12)


def test_transform_blocks_internally_give_same_result(rng, monkeypatch):
    X = rng.normal(size=(200, 4))
    model = Nystrom(n_landmarks=20, random_state=0).fit(X)
    G = model.transform(X)
    monkeypatch.setattr(Nystrom, "_transform_elements", 20 * 7)  # 7-row blocks
    np.testing.assert_array_equal(model.transform(X), G)


def test_api_conventions(rng):
    X = rng.normal(size=(60, 3))
    model = Nystrom(n_landmarks=7, kernel="rbf", random_state=0)
    assert repr(model) == "Nystrom(n_landmarks=7, random_state=0)"
    assert model.get_params()["n_landmarks"] == 7
    assert model.kernel == "rbf"
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.transform(X)
    with pytest.raises(NotFittedError):
        model.kernel(X)
    G = model.fit_transform(X)
    assert G.shape == (60, model.n_components_)
    assert list(model.get_feature_names_out()[:2]) == ["nystrom0", "nystrom1"]
    with pytest.raises(ValueError, match="X has 4 features, but Nystrom is expecting 3 features"):
        model.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        model.set_params(nope=1)
    model.set_params(n_landmarks=5)
    assert model.fit(X).landmarks_.shape == (5, 3)


def test_sklearn_clone_and_pipeline(rng):
    base = pytest.importorskip("sklearn.base")
    pipeline = pytest.importorskip("sklearn.pipeline")
    linear_model = pytest.importorskip("sklearn.linear_model")
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = Nystrom(n_landmarks=30, random_state=0)
    c = base.clone(model)
    assert c.get_params() == model.get_params() and c is not model
    pipe = pipeline.make_pipeline(
        Nystrom(n_landmarks=40, random_state=0), linear_model.RidgeClassifier()
    )
    assert pipe.fit(X, y).score(X, y) > 0.8


def test_n_landmarks_larger_than_n_samples_warns(rng):
    X = rng.normal(size=(12, 2))
    with pytest.warns(UserWarning, match="larger than the number of samples"):
        model = Nystrom(n_landmarks=50, landmarks="uniform", random_state=0).fit(X)
    assert model.landmarks_.shape == (12, 2)


def test_bad_parameters_are_reported_at_fit(rng):
    X = rng.normal(size=(20, 2))
    with pytest.raises(ValueError, match="landmarks must be one of"):
        Nystrom(5, landmarks="random").fit(X)
    with pytest.raises(ValueError, match="Unknown kernel"):
        Nystrom(5, kernel="rbff").fit(X)
    with pytest.raises(ValueError, match=r"rcond must be in \[0, 1\)"):
        Nystrom(5, rcond=2.0).fit(X)
    with pytest.raises(ValueError, match="all 20 samples are identical"):
        Nystrom(5).fit(np.ones((20, 2)))


@pytest.mark.parametrize("kernel", ["rbf", KernelSpec("rbf", gamma=0.5)])
def test_kernel_called_without_samples_says_what_it_needs(kernel):
    # the parameter is also the method: its TypeError named a private class's __call__
    X = np.random.default_rng(0).normal(size=(30, 2))
    model = Nystrom(n_landmarks=5, kernel=kernel, random_state=0).fit(X)
    with pytest.raises(TypeError, match=r"^Nystrom\.kernel\(\) missing its required argument A"):
        model.kernel()
    assert model.kernel(X[:2]).shape == (2, 2) and model.kernel(X[:2], X[:3]).shape == (2, 3)
