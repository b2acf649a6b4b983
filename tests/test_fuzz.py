"""Hypothesis fuzzing of every learner's fit / transform.

Over shapes, dtypes, scales (1e-8 ... 1e8), landmark counts and degenerate data (repeated
rows, constant or collinear columns, identical samples, tiny n), each learner either

* fits and transforms to finite factors whose kernel G G^T is PSD, whose learned matrix
  (S_, the Bregman factor, the BCD boundary kernel) is PSD within round-off, whose
  transform of the training rows is reproducible, and which saves and loads back identically;
  or
* raises ValueError / TypeError with a message naming what was wrong.

Anything else — a RuntimeWarning (overflow, invalid value: pyproject turns them into errors),
another exception type, NaN/inf output — fails.
"""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from model_files import assert_identical

from nystrom_priors import (
    BCDNPKL,
    GeneralizedNystrom,
    LogDetKernelLearner,
    Nystrom,
    VonNeumannKernelLearner,
    load,
    save,
)

CLEAN = (ValueError, TypeError)
DTYPES = [np.float64, np.float32, np.float16, np.int64]
DEGENERACIES = [
    "none",
    "none",
    "none",
    "repeated-rows",
    "constant-column",
    "collinear",
    "identical",
    "tiny-spread",
]


@st.composite
def problems(draw, min_n=4, max_n=50):
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    scale = 10.0 ** draw(st.integers(-8, 8))
    X = rng.normal(size=(n, d))
    kind = draw(st.sampled_from(DEGENERACIES))
    if kind == "repeated-rows":
        X = X[rng.integers(0, max(1, n // 3), size=n)]
    elif kind == "constant-column":
        X[:, 0] = 3.0
    elif kind == "collinear":
        X = np.outer(rng.normal(size=n), rng.normal(size=d))
    elif kind == "identical":
        X = np.tile(X[:1], (n, 1))
    elif kind == "tiny-spread":
        X = 1.0 + 1e-12 * X
    X = X * scale
    dtype = draw(st.sampled_from(DTYPES))
    with np.errstate(over="ignore", invalid="ignore"):
        X = X.astype(dtype)  # float16 overflows beyond 65504: the learner must refuse the infs
    n_classes = draw(st.integers(1, 3))
    y = rng.integers(0, n_classes, size=n)
    y[rng.random(n) < draw(st.floats(0.0, 0.7))] = -1
    m = draw(st.integers(1, n + 3))
    return X, y, m, seed


def _check_outcome(fit_transform, X):
    """Run ``fit_transform``; return the fitted model or None when it raised cleanly."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # convergence / clipping notices
            warnings.simplefilter("error", RuntimeWarning)
            model, G = fit_transform(X)
    except CLEAN as exc:
        message = str(exc)
        assert len(message) > 20, f"unhelpful message: {message!r}"
        assert "numba" not in message.lower() and "lowering" not in message.lower(), message
        event(f"refused: {message[:60]}")
        return None
    event("fitted")
    assert G.ndim == 2 and G.shape[0] == X.shape[0]
    assert np.isfinite(G).all(), "non-finite factor rows"
    K = G.astype(np.float64) @ G.astype(np.float64).T
    _assert_psd(K, "G G^T")
    return model, G


def _assert_psd(M, what):
    M = np.asarray(M, dtype=np.float64)
    assert np.isfinite(M).all(), f"{what} is not finite"
    assert np.allclose(M, M.T, rtol=0, atol=1e-12 * max(1.0, np.abs(M).max())), f"{what} asymmetric"
    w = np.linalg.eigvalsh((M + M.T) / 2)
    assert w.min() >= -1e-8 * max(1.0, np.abs(w).max()), f"{what} has eigenvalue {w.min()}"


def _repeatable(model, X, G):
    """Transforming the same rows again gives the same result (no hidden state), and so does
    the model saved and loaded back (the schema accepts every model fit can produce)."""
    np.testing.assert_array_equal(model.transform(X), G)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.npz")
        save(model, path)
        back = load(path)
    assert_identical(model, back)
    np.testing.assert_array_equal(back.transform(X), G)


@given(problems())
def test_fuzz_nystrom(problem):
    X, _, m, seed = problem
    out = _check_outcome(
        lambda X: (lambda mdl: (mdl, mdl.transform(X)))(
            Nystrom(n_landmarks=m, random_state=seed).fit(X)
        ),
        X,
    )
    if out:
        model, G = out
        _assert_psd(model.S0_, "W^+")
        _repeatable(model, X, G)


@given(problems(), st.sampled_from([1e-3, 1.0, 1e3, "nka"]))
def test_fuzz_generalized_nystrom(problem, lam):
    X, y, m, seed = problem

    def run(X):
        model = GeneralizedNystrom(n_landmarks=m, lam=lam, random_state=seed).fit(X, y)
        return model, model.transform(X)

    out = _check_outcome(run, X)
    if out:
        model, G = out
        _assert_psd(model.S_, "S_")
        _repeatable(model, X, G)


@pytest.mark.parametrize("cls", [LogDetKernelLearner, VonNeumannKernelLearner])
@given(problem=problems(), gamma=st.sampled_from([1.0, np.inf]))
def test_fuzz_bregman(cls, problem, gamma):
    X, y, m, seed = problem
    kw = {"gamma": gamma} if cls is LogDetKernelLearner else {}

    def run(X):
        model = cls(rank=m, n_landmarks=min(2 * m, 40), max_iter=60, random_state=seed, **kw).fit(
            X, y
        )
        return model, model.transform(X)

    out = _check_outcome(run, X)
    if out:
        model, G = out
        _assert_psd(model.projection_ @ model.projection_.T, "projection")
        assert G.shape[1] <= m
        _repeatable(model, X, G)


@given(
    problem=problems(min_n=6),
    loss=st.sampled_from(["square", "hinge", "squared_hinge"]),
    C=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_fuzz_bcdnpkl(problem, loss, C):
    X, y, _, seed = problem
    k = min(5, X.shape[0] - 1)

    def run(X):
        model = BCDNPKL(C=C, loss=loss, n_neighbors=k, max_iter=200, random_state=seed).fit(X, y)
        return model, model.transform(X)

    out = _check_outcome(run, X)
    if out:
        model, G = out
        _assert_psd(model.embedding_ @ model.embedding_.T, "boundary kernel")
        _repeatable(model, X, G)
