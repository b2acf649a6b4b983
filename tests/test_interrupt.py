"""Ctrl-C stops long fits promptly, and a stopped fit leaves no half-fitted model (nor do
two threads fitting one instance: the last section).

Jitted loops return to Python after a bounded amount of work (``nystrom_priors._chunks``), so
a ``KeyboardInterrupt`` (here sent by ``_thread.interrupt_main`` from a timer thread, as
Ctrl-C would) is raised within a fraction of a second. Each problem below would run for
half a minute or more; the bound of 5 s is generous. On the old code each of them ran its
jitted kernel to the end of a window of 25 sweeps (Burg, von Neumann: 25-35 s) or of the
whole fit (BCD, ~30 s) before the interrupt could be raised.
"""

from __future__ import annotations

import _thread
import threading
import time
import warnings

import numpy as np
import pytest

import nystrom_priors as npr

pytestmark = pytest.mark.jit_only  # pure Python handles signals between any two lines

AFTER = 1.0  # seconds into the fit when Ctrl-C arrives
WITHIN = 5.0  # seconds from Ctrl-C to KeyboardInterrupt, at most


def _interrupt(fit, warm_up):
    """Run ``fit`` and press Ctrl-C after ``AFTER`` seconds; return the seconds it took
    from the interrupt to the KeyboardInterrupt. ``warm_up`` runs first, unbothered: loading
    the compiled kernels is Python code, which a KeyboardInterrupt stops at once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up()
    finished = False
    timer = threading.Timer(AFTER, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit()
            finished = True
            time.sleep(10 * AFTER)  # let the interrupt land here, not in pytest
    finally:
        timer.cancel()
        timer.join()
    assert not finished, "the fit ended before Ctrl-C: the problem is too small to test"
    latency = time.perf_counter() - start - AFTER
    print(f"Ctrl-C to KeyboardInterrupt: {latency:.3f} s")
    return latency


def _pairs(rng, n_samples, n_pairs):
    idx = rng.permutation(n_samples)[: 2 * n_pairs].reshape(-1, 2)
    sign = np.where(np.arange(n_pairs) % 2 == 0, 1, -1)
    return np.column_stack([idx, sign]), np.where(sign > 0, 1.0, 1000.0)


def _assert_unfitted(model):
    fitted = [k for k in vars(model) if k.endswith("_") and not k.startswith("_")]
    assert not fitted, f"a stopped fit left fitted attributes behind: {fitted}"


def test_ctrl_c_stops_burg_sweeps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40000, 300))  # rank 300, 20,000 pairs: ~1 s per sweep
    pairs, bounds = _pairs(rng, 40000, 20000)
    # ~1 min uninterrupted: a lost interrupt fails the test instead of hanging it
    model = npr.LogDetKernelLearner(init="linear", gamma=1.0, tol=0.0, max_iter=60)
    # the warm-ups run the timed fits' own shapes, cut short: a kernel first compiled inside
    # the timed fit can swallow the interrupt (llvmlite's compile callbacks ignore
    # KeyboardInterrupt), and a smaller problem takes other paths (see test_ctrl_c_stops_kmeans)
    short = npr.LogDetKernelLearner(init="linear", gamma=1.0, tol=0.0, max_iter=1)
    assert (
        _interrupt(
            lambda: model.fit(X, pairs=pairs, bounds=bounds),
            lambda: short.fit(X, pairs=pairs, bounds=bounds),
        )
        < WITHIN
    )
    _assert_unfitted(model)


def test_ctrl_c_stops_von_neumann_sweeps():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 80))  # rank 80, 1,000 pairs: ~1 s per sweep
    pairs, bounds = _pairs(rng, 2000, 1000)
    model = npr.VonNeumannKernelLearner(init="linear", tol=0.0, max_iter=60)
    short = npr.VonNeumannKernelLearner(init="linear", tol=0.0, max_iter=1)
    assert (
        _interrupt(
            lambda: model.fit(X, pairs=pairs, bounds=bounds),
            lambda: short.fit(X, pairs=pairs, bounds=bounds),
        )
        < WITHIN
    )
    _assert_unfitted(model)


def test_ctrl_c_stops_bcd_and_keeps_the_previous_fit():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 2))
    L = rng.permutation(2000)[:300]
    a, b = rng.integers(0, 300, size=(2, 20000))
    keep = a != b
    ij = np.unique(np.sort(np.column_stack([L[a[keep]], L[b[keep]]]), axis=1), axis=0)
    pairs = np.column_stack([ij, np.where(rng.random(len(ij)) < 0.5, 1, -1)])
    model = npr.BCDNPKL(random_state=0).fit(X[:100], pairs=[[0, 1, 1], [2, 3, -1]])
    before = {k: v for k, v in vars(model).items() if k.endswith("_")}
    model.set_params(tol=0.0, max_iter=100)  # 300 dense columns: ~0.3 s per sweep
    short = npr.BCDNPKL(random_state=0, tol=0.0, max_iter=1)
    assert _interrupt(lambda: model.fit(X, pairs=pairs), lambda: short.fit(X, pairs=pairs)) < WITHIN
    after = {k: v for k, v in vars(model).items() if k.endswith("_")}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    assert model.transform(X[:5]).shape == (5, model.n_components_)


def test_ctrl_c_stops_kmeans():
    rng = np.random.default_rng(3)
    G = rng.normal(size=(20000, 16))
    X = rng.normal(size=(200_000, 16))

    def warm_up():
        # the timed fits' own shapes, cut short: a first compilation inside a timed fit could
        # swallow the interrupt (llvmlite's compile callbacks ignore KeyboardInterrupt), and
        # a smaller problem takes other paths (serial below a size, other array layouts)
        npr.kernel_kmeans(G, 50, n_init=1, max_iter=2, random_state=0)
        # the same code paths as the timed fit: k-means on 20,000 sampled rows (the default
        # sample is only 10 m rows) makes the seeding refreshes large enough for the parallel
        # driver, which small refreshes skip.
        npr.select_landmarks(X[:20000], 400, sample_size=20000, max_iter=1, random_state=0)

    # ~40 s uninterrupted: a lost interrupt fails the test instead of hanging it
    kmeans = lambda: npr.kernel_kmeans(G, 50, n_init=100, random_state=0)  # noqa: E731
    assert _interrupt(kmeans, warm_up) < WITHIN
    assert (
        _interrupt(
            lambda: npr.select_landmarks(X, 4000, sample_size=200_000, max_iter=30, random_state=0),
            warm_up,
        )
        < WITHIN
    )


def test_fits_work_after_an_interrupted_fit():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 4))
    pairs = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = npr.LogDetKernelLearner(init="linear", gamma=1.0).fit(X, pairs=pairs)
    assert np.isfinite(model.transform(X)).all()


def _in_two_threads(call):
    """``[call(0), call(1)]``, the two calls started together in two threads (a barrier);
    fails on any exception either raised, or on a thread still running after 120 s."""
    start, out, errors = threading.Barrier(2), [None, None], []

    def run(k):
        start.wait()
        try:
            out[k] = call(k)
        except Exception as exc:  # noqa: BLE001 - the test reports whatever was raised
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: npr.Nystrom(20, random_state=0),
        lambda: npr.GeneralizedNystrom(20, random_state=0),
        lambda: npr.LogDetKernelLearner(4, n_landmarks=20, gamma=1.0, random_state=0),
    ],
    ids=["Nystrom", "GeneralizedNystrom", "LogDetKernelLearner"],
)
def test_fits_of_one_instance_from_two_threads_give_one_of_the_two_models(make):
    """Two threads fitting the same instance on different data (different numbers of
    features): a fit sets its attributes one at a time, and interleaved fits used to leave a
    model mixing both (``n_features_in_`` of one, ``landmarks_`` of the other), whose
    transform failed inside Numba. Fits of one instance now run one at a time: the model is
    exactly one of the two, equal to a fit of that data alone."""
    rng = np.random.default_rng(0)
    data = [rng.normal(size=(300, 4)), rng.normal(size=(240, 3)) * 5]
    labels = [np.where(np.arange(len(X)) < 60, np.arange(len(X)) % 3, -1) for X in data]
    alone = [make().fit(X, y).transform(X) for X, y in zip(data, labels)]
    for _trial in range(12):
        model = make()
        _in_two_threads(lambda k, model=model: model.fit(data[k], labels[k]))
        k = 0 if model.n_features_in_ == 4 else 1
        assert model.landmarks_.shape[1] == data[k].shape[1]
        np.testing.assert_allclose(model.transform(data[k]), alone[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "make",
    [lambda: npr.BCDNPKL(n_neighbors=5, random_state=0), lambda: npr.Nystrom(15, random_state=0)],
    ids=["BCDNPKL", "Nystrom"],
)
def test_fit_transform_from_two_threads_returns_each_calls_own_frame(make):
    """``fit_transform`` with pandas output names its columns after the fit (its rank): built
    outside the fit lock, a frame could take the other thread's rank or find the model
    half-built. Each call returns the frame of its own data, equal to a call alone."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    data = [rng.normal(size=(90, 4)), rng.normal(size=(70, 3)) * 3]
    labels = [np.where(np.arange(len(X)) < 30, np.arange(len(X)) % 2, -1) for X in data]
    alone = [
        make().set_output(transform="pandas").fit_transform(X, y) for X, y in zip(data, labels)
    ]
    for _trial in range(8):
        model = make().set_output(transform="pandas")
        out = _in_two_threads(lambda k, model=model: model.fit_transform(data[k], labels[k]))
        for k in (0, 1):
            assert list(out[k].columns) == list(alone[k].columns)
            np.testing.assert_allclose(out[k].to_numpy(), alone[k].to_numpy(), atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: npr.LogDetKernelLearner(rank=8, n_landmarks=20, random_state=0),
        lambda: npr.BCDNPKL(n_neighbors=5, random_state=0),
    ],
    ids=["LogDetKernelLearner", "BCDNPKL"],
)
def test_readers_during_refits_see_the_old_or_the_new_model(make):
    """``transform``, ``kernel`` and ``pair_score`` while another thread refits the instance
    on other data: LogDet's ``projection_`` held the unlearned prior in mid-fit (a factor of
    neither model, silently) and BCDNPKL's readers met missing attributes (AttributeError).
    They take the fit lock: every read is that of one of the two models."""
    rng = np.random.default_rng(0)
    XA, XB = rng.normal(size=(200, 4)), rng.normal(size=(200, 4)) * 3 + 1
    y = np.where(np.arange(200) % 2 == 0, np.arange(200) % 3, -1)
    Q = XA[:30]
    pairs = np.stack([Q[:10], Q[10:20]], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [make().fit(X, y) for X in (XA, XB)]
        expected = [(m.transform(Q), m.kernel(Q), m.pair_score(pairs)) for m in models]
        model = make().fit(XA, y)
        stop = time.monotonic() + 1.5

        def refit() -> None:
            k = 0
            while time.monotonic() < stop:
                model.fit(XB if k % 2 == 0 else XA, y)
                k += 1

        t = threading.Thread(target=refit)
        t.start()
        reads = 0
        try:
            while time.monotonic() < stop:
                got = (model.transform(Q), model.kernel(Q), model.pair_score(pairs))
                for i, g in enumerate(got):  # a refit may come between two reads
                    assert any(
                        g.shape == exp[i].shape and np.allclose(g, exp[i], rtol=1e-9, atol=1e-12)
                        for exp in expected
                    ), f"read {reads}, output {i} matches neither model"
                reads += 1
        finally:
            t.join()
    assert reads > 0
