"""Exact persistence and determinism for every learner.

* save / load is bit-exact: every fitted attribute (dtype and bits), the parameters, and
  ``transform`` of training and unseen rows after loading;
* the same ``random_state`` gives bit-identical fitted state and transforms with 1 and 2
  Numba threads;
* concurrent ``transform`` calls from several Python threads on one fitted model equal the
  sequential results.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest

from nystrom_priors import (
    BCDNPKL,
    GeneralizedNystrom,
    LogDetKernelLearner,
    Nystrom,
    VonNeumannKernelLearner,
    load,
    save,
)


def _data(dtype=np.float64):
    rng = np.random.default_rng(3)
    centers = rng.normal(scale=3.0, size=(3, 5))
    y = np.repeat(np.arange(3), 60)
    X = (centers[y] + rng.normal(size=(180, 5))).astype(dtype)
    y_partial = y.copy()
    y_partial[rng.random(180) < 0.6] = -1
    X_new = (centers[rng.integers(0, 3, 50)] + rng.normal(size=(50, 5))).astype(dtype)
    return X, y, y_partial, X_new


LEARNERS = {
    "Nystrom": (lambda: Nystrom(n_landmarks=30, random_state=0), "none"),
    "GeneralizedNystrom-auto": (
        lambda: GeneralizedNystrom(n_landmarks=30, random_state=0),
        "partial",
    ),
    "GeneralizedNystrom-pairs": (
        lambda: GeneralizedNystrom(n_landmarks=30, lam="nka", random_state=0),
        "pairs",
    ),
    "LogDet": (
        lambda: LogDetKernelLearner(rank=10, n_landmarks=40, gamma=1.0, random_state=0),
        "full",
    ),
    "VonNeumann": (
        lambda: VonNeumannKernelLearner(rank=10, n_landmarks=40, random_state=0),
        "full",
    ),
    "BCDNPKL": (lambda: BCDNPKL(C=1.0, n_neighbors=6, random_state=0), "partial"),
    "BCDNPKL-hinge": (lambda: BCDNPKL(loss="hinge", n_neighbors=6, random_state=0), "pairs"),
}


def _fit(key, dtype=np.float64):
    X, y, y_partial, X_new = _data(dtype)
    factory, side = LEARNERS[key]
    model = factory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if side == "none":
            model.fit(X)
        elif side == "partial":
            model.fit(X, y_partial)
        elif side == "full":
            model.fit(X, y)
        else:
            rng = np.random.default_rng(1)
            idx = np.flatnonzero(y_partial >= 0)
            ij = np.sort(rng.choice(idx, (40, 2)), axis=1)
            ij = np.unique(ij[ij[:, 0] != ij[:, 1]], axis=0)  # distinct pairs, no self-pairs
            i, j = ij[:, 0], ij[:, 1]
            model.fit(X, pairs=np.column_stack([i, j, np.where(y[i] == y[j], 1, -1)]))
    return model, X, X_new


def _state(model) -> dict:
    return {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}


def _assert_same_state(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        other = b[key]
        if isinstance(value, np.ndarray):
            assert isinstance(other, np.ndarray) and other.dtype == value.dtype, key
            assert other.shape == value.shape, key
            # bit-exact, NaN payloads included
            assert value.tobytes() == other.tobytes(), f"{key} differs"
        else:
            both_nan = value != value and other != other
            assert type(other) is type(value) and (other == value or both_nan), key


@pytest.mark.parametrize("key", list(LEARNERS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_save_load_is_bit_exact(tmp_path, key, dtype):
    model, X, X_new = _fit(key, dtype)
    path = tmp_path / "model.npz"
    save(model, path)
    back = load(path)
    assert type(back) is type(model)
    assert repr(back.get_params()) == repr(model.get_params())
    _assert_same_state(_state(model), _state(back))
    for rows in (X, X_new, X[::7]):
        a, b = model.transform(rows), back.transform(rows)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    # a second generation of save/load is identical too (nothing drifts through the format)
    save(back, tmp_path / "again.npz")
    _assert_same_state(_state(back), _state(load(tmp_path / "again.npz")))


@pytest.mark.parametrize("key", list(LEARNERS))
def test_future_format_version_is_refused(tmp_path, key):
    model, _, _ = _fit(key)
    save(model, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["__format_version__"] = np.array(3)
    np.savez(tmp_path / "future.npz", **arrays)
    with pytest.raises(
        ValueError, match=r"format version 3, but this nystrom_priors reads versions 1\.\.2"
    ):
        load(tmp_path / "future.npz")


@pytest.mark.jit_only  # the compiled prange drivers are what is tested
@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("key", list(LEARNERS))
def test_same_result_with_one_and_two_numba_threads(key):
    # 20,000 new rows span several row tiles, so the prange drivers really split the work.
    rng = np.random.default_rng(5)
    X_big = rng.normal(scale=3.0, size=(20_000, 5))
    old = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            model, X, X_new = _fit(key)
            results.append((_state(model), model.transform(X_new), model.transform(X_big)))
    finally:
        numba.set_num_threads(old)
    (s1, t1, u1), (s2, t2, u2) = results
    _assert_same_state(s1, s2)
    assert t1.tobytes() == t2.tobytes() and u1.tobytes() == u2.tobytes()


@pytest.mark.jit_only
@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("method", ["kmeans", "kmeans++", "uniform"])
def test_landmark_selection_on_many_rows_is_thread_independent(method):
    X = np.random.default_rng(6).normal(size=(30_000, 8))
    old = numba.get_num_threads()
    fitted = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            model = Nystrom(n_landmarks=200, landmarks=method, random_state=0).fit(X)
            fitted.append((_state(model), model.transform(X)))
    finally:
        numba.set_num_threads(old)
    _assert_same_state(fitted[0][0], fitted[1][0])
    assert fitted[0][1].tobytes() == fitted[1][1].tobytes()


@pytest.mark.parametrize("key", list(LEARNERS))
def test_concurrent_transforms_equal_sequential(key):
    model, X, X_new = _fit(key)
    rng = np.random.default_rng(0)
    chunks = [X_new] + [X[rng.choice(X.shape[0], 40, replace=False)] for _ in range(7)]
    sequential = [model.transform(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            concurrent = list(pool.map(model.transform, chunks))
            for a, b in zip(sequential, concurrent):
                assert a.tobytes() == b.tobytes()
