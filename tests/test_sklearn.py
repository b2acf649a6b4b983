"""scikit-learn compatibility: estimator checks, clone, Pipeline and GridSearchCV."""

import warnings

import numpy as np
import pytest

import nystrom_priors as npr

sklearn = pytest.importorskip("sklearn")

LEARNERS = [
    npr.Nystrom(n_landmarks=5, random_state=0),
    npr.GeneralizedNystrom(n_landmarks=5, random_state=0),
    npr.LogDetKernelLearner(n_landmarks=5, gamma=1.0, random_state=0),
    npr.VonNeumannKernelLearner(n_landmarks=5, random_state=0),
    # the metric-learn (kernelised ITML) switch: no landmarks, fits on one sample's message
    npr.LogDetKernelLearner(init="linear", gamma=1.0, random_state=0),
    npr.VonNeumannKernelLearner(init="linear", random_state=0),
    npr.BCDNPKL(random_state=0),
    npr.BCDNPKL(graph="dense", loss="hinge", random_state=0),
]


@pytest.mark.parametrize("estimator", LEARNERS, ids=lambda e: repr(e))
def test_check_estimator(estimator):
    """All of scikit-learn's estimator checks (the supervised mode: y as labels -> pairs)."""
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = [
        (r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"
    ]
    assert len(results) > 30
    assert not failed, failed


def test_clone_keeps_parameters_and_drops_fit():
    from sklearn.base import clone

    X = np.random.default_rng(0).normal(size=(50, 3))
    # on rank-deficient X a count of the features would be wrong as "the rank"
    with pytest.warns(UserWarning, match="rank=7 exceeds the 3 features of X, the largest rank"):
        model = npr.LogDetKernelLearner(7, init="linear", gamma=2.0).fit(X, pairs=[[0, 1, 1]])
    c = clone(model)
    assert c.get_params() == model.get_params()
    assert not hasattr(c, "B_")


@pytest.mark.parametrize(
    "make",
    [
        lambda k: npr.Nystrom(n_landmarks=8, kernel=k, random_state=0),
        lambda k: npr.GeneralizedNystrom(n_landmarks=8, kernel=k, lam=1e-3, random_state=0),
        lambda k: npr.LogDetKernelLearner(n_landmarks=8, kernel=k, gamma=1.0, random_state=0),
    ],
    ids=["Nystrom", "GeneralizedNystrom", "LogDetKernelLearner"],
)
def test_kernel_method_is_the_learned_kernel_when_the_parameter_is_a_spec(make):
    """``model.kernel(A)`` evaluates the learned kernel ``G_A G_A^T`` whether the parameter is a
    name or a :class:`KernelSpec`; with a spec it called the spec (the base kernel, even on an
    unfitted model). The parameter itself still reads, compares, clones and pickles as the
    spec."""
    import pickle

    from sklearn.base import clone

    X = np.random.default_rng(0).normal(size=(40, 4))
    y = np.arange(40) % 3
    spec = npr.make_kernel("rbf", width=2.0)
    with pytest.raises(npr.exceptions.NotFittedError):
        make(spec).kernel(X[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # convergence notices
        model = make(spec).fit(X, y)
        by_name = make("rbf").set_params(width=2.0).fit(X, y)
    G = model.transform(X[:5])
    np.testing.assert_allclose(model.kernel(X[:5]), G @ G.T, atol=1e-12)
    np.testing.assert_allclose(model.kernel(X[:5]), by_name.kernel(X[:5]), atol=1e-12)
    assert not np.allclose(model.kernel(X[:5]), spec(X[:5]))  # not the base kernel
    assert model.kernel == spec and isinstance(model.kernel, npr.KernelSpec)
    assert model.get_params()["kernel"] is spec and clone(model).kernel == spec
    assert type(pickle.loads(pickle.dumps(model.kernel))) is npr.KernelSpec
    # one model's kernel attribute as another's parameter: the other's own learned kernel
    # (the view was taken as is, and evaluated the first model's)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        other = make(model.kernel).set_params(random_state=1).fit(X[::-1].copy(), y[::-1].copy())
    Go = other.transform(X[:5])
    np.testing.assert_allclose(other.kernel(X[:5]), Go @ Go.T, atol=1e-12)


@pytest.mark.slow_without_jit
def test_pipeline_and_grid_search():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    X, y = load_digits(return_X_y=True)
    keep = (y == 4) | (y == 9)
    X, y = X[keep] / 16.0, (y[keep] == 9).astype(int)
    pipe = make_pipeline(npr.GeneralizedNystrom(lam=1e-2, random_state=0), LinearSVC())
    grid = GridSearchCV(pipe, {"generalizednystrom__n_landmarks": [10, 40]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["generalizednystrom__n_landmarks"] in (10, 40)
    assert grid.best_score_ > 0.9
    assert grid.predict(X[:5]).shape == (5,)
