"""float32 end to end, for every learner: float32 input gives float32 factor rows, kernels and
streamed blocks, and the values are those of the float64 computation to float32 accuracy.

Oracle: the same fitted model applied to the float64 copy of the data (E in float64), and for
the fit itself a float64 fit on the same data with the same landmarks, compared through the
learned kernel ``G G^T`` (invariant to the factor's rotation)."""

import warnings

import numpy as np
import pytest

from nystrom_priors import (
    BCDNPKL,
    GeneralizedNystrom,
    LogDetKernelLearner,
    Nystrom,
    VonNeumannKernelLearner,
)

LEARNERS = {
    "Nystrom": lambda Z: Nystrom(Z.shape[0], landmarks=Z),
    "GeneralizedNystrom": lambda Z: GeneralizedNystrom(Z.shape[0], landmarks=Z, lam=1.0),
    "LogDet": lambda Z: LogDetKernelLearner(
        rank=8, n_landmarks=Z.shape[0], landmarks=Z, max_iter=20, random_state=0
    ),
    "VonNeumann": lambda Z: VonNeumannKernelLearner(
        rank=8, n_landmarks=Z.shape[0], landmarks=Z, max_iter=20, random_state=0
    ),
    "BCDNPKL": lambda Z: BCDNPKL(random_state=0),
}


def data(seed=0, n=240, d=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 2.5 * y[:, None]
    labels = np.where(rng.random(n) < 0.3, y, -1)
    lab = np.flatnonzero(labels >= 0)
    i, j = rng.choice(lab, (2, 60))
    keep = i < j
    pairs = np.column_stack([i[keep], j[keep], np.where(y[i[keep]] == y[j[keep]], 1, -1)])
    pairs = np.unique(pairs, axis=0)
    return X, labels, pairs, X[rng.choice(n, 30, replace=False)].copy()


def side_info(name, labels, pairs):
    """(y, fit keyword arguments): labels for the Nystrom family, pairs for the others."""
    return (labels, {}) if name.endswith("Nystrom") else (None, {"pairs": pairs})


def fit(name, X, labels, pairs, Z, method="fit"):
    model = LEARNERS[name](Z.astype(X.dtype))
    y, kw = side_info(name, labels, pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence of the capped iterative fits
        return getattr(model, method)(X, y, **kw)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_float32_stays_float32_everywhere(name):
    X, labels, pairs, Z = data()
    X32 = X.astype(np.float32)
    assert fit(name, X32, labels, pairs, Z, "fit_transform").dtype == np.float32
    model = fit(name, X32, labels, pairs, Z)
    A, B = X32[:50], X32[50:90]
    assert model.transform(A).dtype == np.float32
    assert model.kernel(A, B).dtype == np.float32
    assert model.kernel(A).dtype == np.float32
    assert all(b.dtype == np.float32 for _, b in model.iter_transform(X32, block_rows=64))
    assert all(b.dtype == np.float32 for _, b in model.iter_kernel_rows(A, B, block_rows=16))
    # float64 input to the same model stays float64
    assert model.transform(X[:10]).dtype == np.float64


@pytest.mark.parametrize("name", list(LEARNERS))
def test_big_endian_float32_is_float32(name):
    """'>f4' compares unequal to float32, and was computed and returned as float64; it is
    float32 data in another byte order: the same numbers as native float32, in float32."""
    X, labels, pairs, Z = data()
    Xb = X.astype(">f4")
    model = fit(name, Xb, labels, pairs, Z)
    G = model.transform(Xb)
    assert G.dtype == np.float32
    native = fit(name, X.astype(np.float32), labels, pairs, Z)
    np.testing.assert_array_equal(G, native.transform(X.astype(np.float32)))
    da = pytest.importorskip("dask.array")  # the dask path read the dtype on its own
    Gd = model.transform(da.from_array(Xb, chunks=60)).compute()
    assert Gd.dtype == np.float32
    np.testing.assert_array_equal(Gd, G)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_float32_transform_matches_float64(name):
    X, labels, pairs, Z = data(1)
    model = fit(name, X, labels, pairs, Z)
    Xq = np.random.default_rng(5).normal(size=(300, X.shape[1])) * 1.5 + 1.0
    G64 = model.transform(Xq)
    G32 = model.transform(Xq.astype(np.float32))
    scale = np.abs(G64).max()
    # E's float32 round-off (~1e-7 relative) amplified by the projection's conditioning
    assert np.abs(G32 - G64).max() <= 2e-4 * scale
    streamed = np.vstack([b for _, b in model.iter_transform(Xq.astype(np.float32), block_rows=77)])
    assert np.abs(streamed - G64).max() <= 2e-4 * scale
    K64 = model.kernel(Xq[:40], Xq[40:80])
    K32 = model.kernel(Xq[:40].astype(np.float32), Xq[40:80].astype(np.float32))
    assert np.abs(K32 - K64).max() <= 5e-4 * np.abs(K64).max()


@pytest.mark.parametrize("name", list(LEARNERS))
def test_float32_fit_matches_float64_fit(name):
    X, labels, pairs, Z = data(2)
    # the data are float32-representable, so both fits see the same samples and landmarks
    X = X.astype(np.float32).astype(np.float64)
    K = []
    for dtype in (np.float64, np.float32):
        model = fit(name, X.astype(dtype), labels, pairs, Z)
        G = model.transform(X[:80].astype(dtype)).astype(np.float64)
        K.append(G @ G.T)
    assert np.abs(K[1] - K[0]).max() <= 1e-3 * np.abs(K[0]).max()


def test_bcdnpkl_float32_transform_of_training_samples_is_their_learned_rows():
    # the exact-copy check runs only on rows whose float32 distance is within round-off of 0
    X, labels, pairs, Z = data(3)
    X32 = X.astype(np.float32)
    model = fit("BCDNPKL", X32, labels, pairs, Z)
    G = model.transform(X32[::-1])
    assert np.array_equal(G, model.embedding_[::-1].astype(np.float32))
    # shifted far from the origin, the cross products' cancellation is large
    X32 = (X + 1e3).astype(np.float32)
    model = fit("BCDNPKL", X32, labels, pairs, Z)
    assert np.array_equal(model.transform(X32), model.embedding_.astype(np.float32))


def test_a_projection_beyond_float32_still_transforms_float32_rows():
    """Rows of ~1e-20 and a small lam give a projection above float32's range (~3e39) while
    the factor rows are ~1: cast to float32, the projection was inf and transform returned
    NaN silently. The product now runs in float64 and is rounded once."""
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(20, 3)) * 1e-20).astype(np.float32)
    y = np.full(20, -1)
    y[:10] = [0, 1] * 5
    model = GeneralizedNystrom(n_landmarks=5, kernel="linear", lam=1e-160, random_state=0)
    model.fit(X, y)
    assert np.abs(model.projection_).max() > np.finfo(np.float32).max
    G = model.transform(X)
    want = model.transform(X.astype(np.float64))
    assert G.dtype == np.float32
    np.testing.assert_allclose(G, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("name", ["Nystrom", "GeneralizedNystrom"])
def test_float32_rows_stay_accurate_where_the_projection_amplifies_their_rounding(name):
    """2-D Gaussian data, 100 landmarks: W's eigenvalues span about 13 decades, and the
    projection turned float32's rounding of the features into kernel values off by 4e-2
    (a Gaussian kernel's diagonal of 1.04). Such a model computes float32 rows in float64 and
    rounds them once: the kernel of the float32 points is then the float64 model's to float32
    accuracy. Oracle: the same model on the float32 points cast to float64."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = np.r_[(X[:100, 0] > 0).astype(int), np.full(900, -1)]
    model = (
        Nystrom(random_state=0).fit(X)
        if name == "Nystrom"
        else GeneralizedNystrom(random_state=0, lam=1.0).fit(X, y)
    )
    Q = X[:200].astype(np.float32)
    exact = model.kernel(Q.astype(np.float64))
    K32 = model.kernel(Q)
    assert K32.dtype == np.float32 and model.transform(Q).dtype == np.float32
    assert np.abs(K32 - exact).max() <= 1e-5 * np.abs(exact).max()


def test_float32_rows_of_a_well_conditioned_projection_are_computed_in_float32():
    """On 30 features the amplification is small (about 1e2): float32 input keeps its own
    path (features and product in float32, twice float64's throughput), so its rows are not
    the float64 rows rounded, yet within float32's accuracy of them."""
    rng = np.random.default_rng(0)
    X = rng.random((600, 30))
    model = Nystrom(n_landmarks=60, random_state=0).fit(X)
    Q = X[:100].astype(np.float32)
    G32 = model.transform(Q)
    rounded = model.transform(Q.astype(np.float64)).astype(np.float32)
    assert not np.array_equal(G32, rounded)
    assert np.abs(G32 - rounded).max() <= 1e-5 * np.abs(rounded).max()


@pytest.mark.parametrize("fit_dtype", [np.float64, np.float32])
def test_float32_rows_whose_features_fall_below_float32s_normal_range(fit_dtype):
    """A linear kernel on X of 1e-22: k(x, z) ~ 1e-44 is subnormal in float32 and keeps a few
    bits, so float32 features gave factor rows off by 3e-2 (all zeros at 1e-23), and a
    float32 fit's W was computed from them. W is now computed in float64, and float32 rows
    of such a model in float64, rounded once: the factor rows (about 1e-22, normal in
    float32) are the float64 model's on the same points."""
    X = np.random.default_rng(0).normal(size=(200, 5)) * 1e-22
    model = Nystrom(n_landmarks=15, random_state=0, kernel="linear").fit(X.astype(fit_dtype))
    ref = Nystrom(n_landmarks=15, random_state=0, kernel="linear").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-5)
    Q = X[:20].astype(np.float32)
    G32 = model.transform(Q)
    G64 = model.transform(Q.astype(np.float64))
    assert G32.dtype == np.float32
    assert np.abs(G32 - G64).max() <= 1e-6 * np.abs(G64).max()


def test_float32_transform_of_a_model_that_cannot_be_hashed():
    """A subclass that defines __eq__ (so __hash__ is None): the float32 verdict is cached by
    the model's id, as the fit lock is, not in a dict keyed by the model."""

    class Learner(LogDetKernelLearner):
        def __eq__(self, other):
            return self is other

    X = np.random.default_rng(0).normal(size=(60, 4))
    model = Learner(init="linear", random_state=0).fit(X, pairs=np.array([[0, 1, 1], [2, 3, -1]]))
    G = model.transform(X[:3].astype(np.float32))
    assert G.dtype == np.float32
    np.testing.assert_allclose(G, model.transform(X[:3]), rtol=1e-5, atol=1e-6)
