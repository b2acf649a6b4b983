"""No aliasing and no hidden state.

* ``out=`` buffers that share memory with an input are refused (``ValueError``);
* a fitted model keeps its own copies: mutating the caller's arrays (user-given landmarks,
  the training samples) never changes it;
* ``transform`` uses the fitted state: ``set_params`` after ``fit`` does not change it, and
  two models fitted and changed the same way behave the same whatever they transformed before
  (no cache that only one of them filled).
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import nystrom_priors as npr

PAIRS = np.array([[0, 3, 1], [1, 4, 1], [0, 1, -1], [2, 5, 1], [1, 2, -1], [6, 9, -1]])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(80, 3))
    y = np.where(np.arange(80) % 2 == 0, np.arange(80) % 3, -1)
    return X, y


LANDMARK_LEARNERS = {
    "Nystrom": (lambda: npr.Nystrom(n_landmarks=10, kernel="poly", random_state=0), "none"),
    "GeneralizedNystrom": (
        lambda: npr.GeneralizedNystrom(n_landmarks=10, kernel="poly", lam=1.0, random_state=0),
        "y",
    ),
    "LogDetKernelLearner": (
        lambda: npr.LogDetKernelLearner(n_landmarks=10, kernel="poly", gamma=1.0, random_state=0),
        "pairs",
    ),
    "VonNeumannKernelLearner": (
        lambda: npr.VonNeumannKernelLearner(
            n_landmarks=10, kernel="poly", max_iter=30, random_state=0
        ),
        "pairs",
    ),
}


def _fit(make, side, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notices
        model = make()
        if side == "y":
            return model.fit(X, y)
        if side == "pairs":
            return model.fit(X, pairs=PAIRS)
        return model.fit(X)


# ----- set_params after fit ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LANDMARK_LEARNERS))
@pytest.mark.parametrize(
    "change",
    [{"degree": 5}, {"coef0": 3.0}, {"gamma": 2.0}, {"kernel": "rbf"}, {"kernel": "linear"}],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()),
)
def test_set_params_after_fit_does_not_change_transform(data, name, change):
    X, y = data
    make, side = LANDMARK_LEARNERS[name]
    a = _fit(make, side, X, y)
    b = copy.deepcopy(a)  # the same fitted state, without whatever a computed on the way
    before = a.transform(X)  # fills a's landmark-side quantities, not b's
    key = next(iter(change))
    if key == "gamma" and name in ("LogDetKernelLearner", "VonNeumannKernelLearner"):
        change = {"kernel_gamma": change["gamma"]}  # their gamma is the slack
    a.set_params(**change)
    b.set_params(**change)
    ga, gb = a.transform(X), b.transform(X)
    np.testing.assert_array_equal(ga, gb)  # same whatever the call history
    np.testing.assert_array_equal(ga, before)  # the fitted kernel, not the new parameters
    np.testing.assert_array_equal(a.kernel(X[:5], X[5:9]), b.kernel(X[:5], X[5:9]))


@pytest.mark.parametrize(
    "change",
    [{"graph": "dense"}, {"n_neighbors": 2}, {"weights": "gaussian"}, {"sigma": 0.1}],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()),
)
def test_bcdnpkl_transform_uses_the_fitted_graph(data, change):
    X, _ = data
    a = npr.BCDNPKL(random_state=0).fit(X, pairs=PAIRS)
    b = npr.BCDNPKL(random_state=0).fit(X, pairs=PAIRS)
    new = np.random.default_rng(1).normal(size=(7, 3))
    before = a.transform(new)
    a.set_params(**change)
    b.set_params(**change)
    np.testing.assert_array_equal(a.transform(new), before)
    np.testing.assert_array_equal(b.transform(new), before)


def test_replacing_fitted_landmarks_behaves_the_same_whatever_the_history(data):
    X, _ = data
    a = npr.Nystrom(n_landmarks=10, random_state=0).fit(X)
    b = npr.Nystrom(n_landmarks=10, random_state=0).fit(X)
    a.transform(X)
    for model in (a, b):  # a change of the fitted state itself, the same for both
        model.landmarks_ = model.landmarks_ + 0.5
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    fresh = npr.extrapolate(X, b.landmarks_, width=b.width_) @ b.projection_
    np.testing.assert_allclose(a.transform(X), fresh, rtol=1e-10, atol=1e-12)


def test_fitted_landmarks_are_read_only_and_copies_stay_consistent(data):
    X, _ = data
    a = npr.Nystrom(n_landmarks=10, random_state=0).fit(X)
    a.transform(X)
    with pytest.raises(ValueError, match="read-only"):
        a.landmarks_[0, 0] = 5.0
    for clone in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        clone.transform(X)  # fills the clone's own landmark-side quantities
        if clone.landmarks_.flags.writeable:  # a writeable copy: mutated in place
            clone.landmarks_[0] += 1.0
            ref = npr.Nystrom(n_landmarks=10, random_state=0).fit(X)
            ref.landmarks_ = np.array(clone.landmarks_)
            np.testing.assert_array_equal(clone.transform(X), ref.transform(X))


# ----- the caller's arrays ------------------------------------------------------------------


@pytest.mark.parametrize("learner", ["Nystrom", "GeneralizedNystrom", "LogDetKernelLearner"])
@pytest.mark.parametrize("mutate_after_transform", [False, True])
def test_user_landmarks_are_copied(data, learner, mutate_after_transform):
    X, y = data
    Z = np.ascontiguousarray(X[:8] + 0.1)
    kw = dict(landmarks=Z, n_landmarks=8, random_state=0)
    make = {
        "Nystrom": lambda: npr.Nystrom(**kw),
        "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(lam=1.0, **kw),
        "LogDetKernelLearner": lambda: npr.LogDetKernelLearner(gamma=1.0, **kw),
    }[learner]
    side = {"Nystrom": "none", "GeneralizedNystrom": "y", "LogDetKernelLearner": "pairs"}[learner]
    model = _fit(make, side, X, y)
    reference = _fit(make, side, X, y).transform(X)
    assert not np.shares_memory(model.landmarks_, Z)
    if mutate_after_transform:
        model.transform(X)
    Z *= 3.0  # the caller reuses their array
    np.testing.assert_array_equal(model.transform(X), reference * 1.0)
    np.testing.assert_array_equal(model.landmarks_, X[:8] + 0.1)


def test_bcdnpkl_keeps_its_own_training_samples(data):
    X, _ = data
    Xc = X.copy()
    model = npr.BCDNPKL(random_state=0).fit(Xc, pairs=PAIRS)
    new = np.random.default_rng(2).normal(size=(6, 3))
    ref = model.transform(new)
    assert not np.shares_memory(model.X_fit_, Xc)
    Xc[:] = 0.0
    np.testing.assert_array_equal(model.transform(new), ref)
    np.testing.assert_array_equal(model.transform(X[:5]), model.embedding_[:5])


def test_no_fitted_array_shares_memory_with_the_inputs(data):
    X, y = data
    Z = X[:8].copy()
    pairs = PAIRS.copy()
    bounds = np.linspace(0.5, 3.0, len(PAIRS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [
            npr.Nystrom(landmarks=Z, n_landmarks=8).fit(X),
            npr.GeneralizedNystrom(landmarks=Z, n_landmarks=8, lam=1.0).fit(X, y),
            npr.LogDetKernelLearner(init="linear", gamma=1.0).fit(X, pairs=pairs, bounds=bounds),
            npr.VonNeumannKernelLearner(init="linear", max_iter=20).fit(
                X, pairs=pairs, bounds=bounds
            ),
            npr.BCDNPKL(random_state=0).fit(X, pairs=pairs),
        ]
    for model in models:
        for key, value in vars(model).items():
            if key.endswith("_") and isinstance(value, np.ndarray):
                for name, arr in (
                    ("X", X),
                    ("Z", Z),
                    ("pairs", pairs),
                    ("bounds", bounds),
                    ("y", y),
                ):
                    assert not np.shares_memory(value, arr), (type(model).__name__, key, name)


# ----- out= ------------------------------------------------------------------------------


def test_extrapolate_refuses_out_aliasing_an_input():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 6))
    ref = npr.extrapolate(X, X[:6], width=2.0)
    for kernel in ("rbf", "linear", "poly", "laplacian", "cosine"):
        kw = {"width": 2.0} if kernel in ("rbf", "laplacian") else {}
        A = X.copy()
        with pytest.raises(ValueError, match="out shares memory with X"):
            npr.extrapolate(A, A[:6], kernel=kernel, out=A, **kw)
        np.testing.assert_array_equal(A, X)  # refused before anything was written
        buf = np.zeros((12, 6))
        Zv = buf[6:]
        Zv[:] = X
        with pytest.raises(ValueError, match="out shares memory with Z"):
            npr.extrapolate(X, Zv, kernel=kernel, out=buf[3:9], **kw)
    # a disjoint part of the same buffer is fine
    buf = np.zeros((12, 6))
    buf[6:] = X
    np.testing.assert_allclose(
        npr.extrapolate(buf[6:], X, width=2.0, out=buf[:6]), ref, rtol=0, atol=1e-15
    )


def test_iter_transform_refuses_out_aliasing_x(data):
    X, _ = data
    model = npr.Nystrom(n_landmarks=3, random_state=0).fit(X)
    r = model.n_components_
    buf = np.empty((X.shape[0], max(r, X.shape[1])))
    buf[:, : X.shape[1]] = X
    Xv = buf[:, : X.shape[1]]
    out = buf[:, :r]
    with pytest.raises(ValueError, match="out shares memory with X"):
        list(model.iter_transform(Xv, out=out))
    blocks = [Xv[s : s + 20] for s in range(0, X.shape[0], 20)]
    with pytest.raises(ValueError, match="out shares memory with the X block at row 0"):
        list(model.iter_transform(blocks, out=out))


# ----- a failed refit ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LANDMARK_LEARNERS))
def test_a_refit_failing_after_the_landmarks_keeps_the_previous_fit(data, name, monkeypatch):
    """A refit that fails once new landmarks are chosen (an error or Ctrl-C in the learning
    step) leaves the model as it was: the old landmarks with the old projection."""
    X, y = data
    make, side = LANDMARK_LEARNERS[name]
    model = _fit(make, side, X, y)
    before = {k: copy.deepcopy(v) for k, v in vars(model).items()}
    G = model.transform(X)

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    # the step right after _fit_landmarks in every landmark learner
    monkeypatch.setattr(type(model), "_fit_prior", fail)
    model.set_params(n_landmarks=7)
    with pytest.raises(KeyboardInterrupt):
        _fit(lambda: model, side, X[::-1].copy(), y[::-1].copy())
    monkeypatch.undo()
    assert sorted(vars(model)) == sorted(before)
    np.testing.assert_array_equal(model.landmarks_, before["landmarks_"])
    np.testing.assert_array_equal(model.transform(X), G)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
def test_a_successful_refit_leaves_only_its_own_fitted_state(cls, data, tmp_path):
    """A refit with init="linear" after one with init="nystrom" kept landmarks_, width_, S0_,
    ... of the first, which describe another model, and save refused the refitted model. A
    fit now starts from no fitted attribute (scikit-learn's convention); the refit has exactly
    the attributes of a fresh fit of the same parameters, and saves and loads."""
    X, _ = data
    model = cls(rank=3, n_landmarks=10, random_state=0).fit(X, pairs=PAIRS)
    assert hasattr(model, "landmarks_")
    model.set_params(init="linear").fit(X, pairs=PAIRS)
    fresh = cls(rank=3, n_landmarks=10, random_state=0, init="linear").fit(X, pairs=PAIRS)
    assert sorted(vars(model)) == sorted(vars(fresh))
    assert not hasattr(model, "landmarks_")
    np.testing.assert_allclose(model.transform(X), fresh.transform(X))
    npr.save(model, tmp_path / "m.npz")
    np.testing.assert_allclose(npr.load(tmp_path / "m.npz").transform(X), fresh.transform(X))
