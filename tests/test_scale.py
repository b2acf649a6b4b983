"""Out-of-core and distributed transforms: dask arrays on a real 2-process LocalCluster, and
streaming over generators and memmaps into a caller-supplied output."""

import warnings

import numpy as np
import pytest

import nystrom_priors as npr


def _models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6))
    y = np.where(rng.random(1500) < 0.06, (X[:, 0] > 0).astype(int), -1)
    pairs = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1], [6, 7, -1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [
            npr.Nystrom(n_landmarks=40, random_state=0).fit(X),
            npr.GeneralizedNystrom(n_landmarks=40, random_state=0).fit(X, y),
            npr.LogDetKernelLearner(n_landmarks=40, gamma=1.0, random_state=0).fit(X, y),
            npr.VonNeumannKernelLearner(init="linear").fit(X, pairs=pairs, bounds=[1, 9, 1, 9]),
            npr.BCDNPKL(random_state=0).fit(X, pairs=pairs),
        ]
    return X, models


@pytest.fixture(scope="module")
def fitted():
    return _models()


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_transform_on_local_cluster_equals_numpy(fitted, client):
    import dask.array as da

    X, models = fitted
    Xd = da.from_array(X, chunks=(400, 3))  # feature chunks are merged, row chunks kept
    assert len(client.scheduler_info()["workers"]) == 2
    for model in models:
        G = model.transform(Xd)
        assert isinstance(G, da.Array) and G.chunks[0] == Xd.chunks[0]
        assert G.shape == (X.shape[0], model.n_components_)
        ref = model.transform(X)
        got = G.compute()
        # same rows through the same code; BLAS may sum in another order per block height
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), type(model)
        K = model.kernel(Xd[:200], X[:30]).compute()
        assert np.allclose(K, model.kernel(X[:200], X[:30]), rtol=0, atol=1e-12)


def test_dask_transform_float32_and_errors(fitted):
    da = pytest.importorskip("dask.array")
    X, models = fitted
    model = models[1]
    G = model.transform(da.from_array(X.astype(np.float32), chunks=500))
    assert G.dtype == np.float32
    assert np.allclose(G.compute(), model.transform(X.astype(np.float32)), atol=1e-5)
    with pytest.raises(ValueError, match="features"):
        model.transform(da.zeros((10, 5), chunks=5))
    with pytest.raises(ValueError, match="2-D"):
        model.transform(da.zeros(10, chunks=5))


def test_streaming_generator_and_memmap_into_out(fitted, tmp_path):
    X, models = fitted
    src = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=X.shape)
    src[:] = X
    src.flush()
    src = np.load(tmp_path / "X.npy", mmap_mode="r")
    for model in models:
        ref = model.transform(X)
        out = np.lib.format.open_memmap(
            tmp_path / "G.npy", mode="w+", dtype=np.float64, shape=ref.shape
        )
        starts = [s for s, _ in model.iter_transform(src, block_rows=333, out=out)]
        assert starts == list(range(0, X.shape[0], 333))
        assert np.abs(np.asarray(out) - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
        blocks = (X[s : s + 250] for s in range(0, X.shape[0], 250))
        out2 = np.empty_like(ref)
        for _s, G in model.iter_transform(blocks, out=out2):
            assert np.shares_memory(G, out2)
        assert np.abs(out2 - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
        del out


def test_iter_transform_out_validation(fitted):
    X, models = fitted
    model = models[0]
    r = model.n_components_
    with pytest.raises(ValueError, match="shape"):
        list(model.iter_transform(X, out=np.empty((X.shape[0], r + 1))))
    with pytest.raises(ValueError, match="rows"):
        list(model.iter_transform(X, out=np.empty((10, r))))
    # more rows than X: the ones left unwritten would pass for data
    with pytest.raises(ValueError, match=f"out has {X.shape[0] + 1} rows, X has {X.shape[0]}"):
        list(model.iter_transform(X, out=np.empty((X.shape[0] + 1, r))))
    with pytest.raises(ValueError, match=f"out has {X.shape[0]} rows, the input had 20"):
        list(model.iter_transform(iter([X[:10], X[10:20]]), out=np.empty((X.shape[0], r))))
    with pytest.raises(ValueError, match="dtype"):
        list(model.iter_transform(X, out=np.empty((X.shape[0], r), dtype=np.float32)))


def test_models_pickle_without_caches(fitted):
    import pickle

    X, models = fitted
    for model in models:
        model.transform(X[:5])  # populate caches
        clone = pickle.loads(pickle.dumps(model))
        assert np.array_equal(clone.transform(X[:50]), model.transform(X[:50]))


@pytest.mark.parametrize("kind", ["memmap", "dask"])
def test_fit_out_of_core_equals_in_memory(kind, tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 5))
    y = np.where(rng.random(3000) < 0.03, (X[:, 1] > 0).astype(int), -1)
    if kind == "memmap":
        np.save(tmp_path / "X.npy", X)
        Xs = np.load(tmp_path / "X.npy", mmap_mode="r")
    else:
        da = pytest.importorskip("dask.array")
        Xs = da.from_array(X, chunks=(700, 5))
    makers = [  # (estimator factory, fitted from labels)
        (lambda: npr.Nystrom(n_landmarks=30, random_state=0), False),
        # APG: a deterministic trajectory from the closed form, so the two fits agree far
        # below tol; the dual Newton's hand-off point to APG can move with round-off
        (
            lambda: npr.GeneralizedNystrom(n_landmarks=30, lam=1e-3, solver="apg", random_state=0),
            True,
        ),
        (lambda: npr.LogDetKernelLearner(n_landmarks=30, gamma=1.0, random_state=0), True),
        (lambda: npr.VonNeumannKernelLearner(n_landmarks=30, random_state=0, max_iter=30), True),
        (lambda: npr.LogDetKernelLearner(rank=3, init="linear", gamma=1.0, random_state=0), True),
    ]
    for make, labels in makers:
        args = (y,) if labels else ()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = make().fit(X, *args)
            b = make().fit(Xs, *args)
        if hasattr(a, "landmarks_"):
            assert np.array_equal(a.landmarks_, b.landmarks_)
        G_a, G_b = a.transform(X[:200]), b.transform(X[:200])
        # the learned kernel, not its factor: eigenvalues of S near the factor's m*eps cut-off
        # may fall on either side after round-off-level differences (blockwise E), changing
        # the factor's width but not the kernel
        K_a, K_b = G_a @ G_a.T, G_b @ G_b.T
        assert np.allclose(K_a, K_b, rtol=0, atol=1e-10 * max(1.0, np.abs(K_a).max())), make()


def test_dask_fit_refuses_non_finite():
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(2).normal(size=(500, 3))
    X[17, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        npr.Nystrom(n_landmarks=10).fit(da.from_array(X, chunks=100))


def test_dask_fit_refusal_names_what_the_learner_takes():
    """A learner without a dask path refuses a dask array and says what it takes: BCDNPKL
    takes scipy.sparse input as well, so the message must not say "dense" only."""
    da = pytest.importorskip("dask.array")
    X = da.from_array(np.random.default_rng(3).normal(size=(40, 3)), chunks=20)
    with pytest.raises(TypeError, match=r"numpy array-like or scipy\.sparse.*dask\.array"):
        npr.BCDNPKL().fit(X)


@pytest.mark.parametrize("exponent", [-510, -300, 0, 300, 507])
def test_dask_mean_squared_distance_matches_in_memory_at_any_scale(exponent):
    """The lazy width pass works in units of max |x| like the in-memory one: the same value
    (up to dask's summation order) wherever the width is a normal float, also at 2^507, where
    the sum of the raw squares (n/2 times the width) overflows; inf past float64's range,
    without a warning."""
    da = pytest.importorskip("dask.array")
    from nystrom_priors._rows import RowSource
    from nystrom_priors.kernels import mean_squared_distance

    X = np.ldexp(np.random.default_rng(3).normal(size=(900, 4)) + 3.0, exponent)
    Xd = da.from_array(X, chunks=(250, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = mean_squared_distance(X)
        got = RowSource(Xd).mean_squared_distance()
        assert 0.0 < ref < np.inf
        assert abs(got - ref) <= 1e-13 * ref


def test_dask_mean_squared_distance_past_float64_is_inf_without_a_warning():
    da = pytest.importorskip("dask.array")
    from nystrom_priors._rows import RowSource

    X = np.ldexp(np.random.default_rng(3).normal(size=(900, 4)) + 3.0, 1020)  # |x| < 2^1023
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # also in dask's threads: no overflow on the way
        assert RowSource(da.from_array(X, chunks=(250, 4))).mean_squared_distance() == np.inf
