"""Fitted models of every class and helpers to take their saved files apart (tests only)."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np

import nystrom_priors as npr

PAIRS = np.array([[0, 3, 1], [1, 4, 1], [0, 1, -1], [2, 5, 1], [1, 2, -1], [7, 9, -1]])


def training_data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3))
    y = np.where(np.arange(50) % 2 == 0, np.arange(50) % 3, -1)
    return X, y


def fitted_models() -> dict:
    """One fitted model per class and notable configuration (small: milliseconds each)."""
    X, y = training_data()
    X32 = X.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "Nystrom": npr.Nystrom(n_landmarks=8, random_state=0).fit(X),
            "Nystrom-f32-laplacian": npr.Nystrom(
                n_landmarks=6, kernel="laplacian", random_state=0
            ).fit(X32),
            "Nystrom-user-landmarks": npr.Nystrom(
                landmarks=X[:5] + 0.25, n_landmarks=5, kernel="poly"
            ).fit(X),
            "GeneralizedNystrom": npr.GeneralizedNystrom(
                n_landmarks=8, lam=1.0, random_state=0
            ).fit(X, y),
            "GeneralizedNystrom-nka": npr.GeneralizedNystrom(
                n_landmarks=8, lam="nka", random_state=0
            ).fit(X, pairs=PAIRS),
            "LogDetKernelLearner": npr.LogDetKernelLearner(
                rank=4, n_landmarks=8, gamma=1.0, max_iter=40, random_state=0
            ).fit(X, y),
            "LogDetKernelLearner-linear": npr.LogDetKernelLearner(init="linear").fit(
                X, pairs=PAIRS, similarity_pairs=np.array([[0, 0, 1]]), similarity_bounds=[0.5]
            ),
            "VonNeumannKernelLearner": npr.VonNeumannKernelLearner(
                n_landmarks=8, max_iter=30, random_state=0
            ).fit(X, pairs=PAIRS),
            "BCDNPKL": npr.BCDNPKL(random_state=0).fit(X, pairs=PAIRS),
            "BCDNPKL-dense": npr.BCDNPKL(graph="dense", random_state=0).fit(X32, y),
        }


def saved_bytes(model, tmp_path) -> bytes:
    path = tmp_path / "source.npz"
    npr.save(model, path)
    return path.read_bytes()


def entries(raw: bytes) -> dict:
    with np.load(io.BytesIO(raw)) as data:
        return {k: data[k] for k in data.files}


def meta(raw: bytes) -> dict:
    return json.loads(str(entries(raw)["__meta__"]))


def rewrite(raw: bytes, *, meta_update=None, drop=(), **arrays) -> bytes:
    """The same file with some entries replaced or dropped; ``meta_update(meta)`` edits the
    metadata in place."""
    e = entries(raw)
    if meta_update is not None:
        m = json.loads(str(e["__meta__"]))
        meta_update(m)
        e["__meta__"] = np.array(json.dumps(m))
    for k in drop:
        e.pop(k)
    e.update(arrays)
    buf = io.BytesIO()
    np.savez(buf, **e)
    return buf.getvalue()


def member_names(raw: bytes) -> list:
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        return zf.namelist()


def assert_identical(a, b) -> None:
    """Same class, the same parameters and the same fitted attributes (values, dtypes and
    Python types)."""
    assert type(a) is type(b)
    pa, pb = a.get_params(), b.get_params()
    assert set(pa) == set(pb)
    for key in pa:
        _assert_same(pa[key], pb[key], f"param {key}")
    fa = {k: v for k, v in vars(a).items() if k.endswith("_") and not k.startswith("_")}
    fb = {k: v for k, v in vars(b).items() if k.endswith("_") and not k.startswith("_")}
    assert set(fa) == set(fb), set(fa) ^ set(fb)
    for key in fa:
        _assert_same(fa[key], fb[key], f"attr {key}")


def _assert_same(x, y, what) -> None:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), what
        assert x.dtype == y.dtype and x.shape == y.shape, what
        np.testing.assert_array_equal(x, y, err_msg=what)
        return
    if isinstance(x, float) and isinstance(y, float) and np.isnan(x):
        assert np.isnan(y), what
        return
    if isinstance(x, (np.random.Generator, np.random.RandomState)):
        return  # a generator is saved as None (with a warning)
    assert type(x) is type(y) and x == y, (what, x, y)
