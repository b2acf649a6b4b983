"""Dense kernels at data scales where float32 products underflow, and landmarks beyond X's dtype.

Oracles: the same kernel in float64 by numpy on the same stored values and width (float64
squares of float32 numbers never underflow), ``k(x, x) = 1`` exactly for the Gaussian kernel,
and the kernels' exact scale invariance: scaling X by ``2^k`` and the width by ``4^k`` (poly:
gamma by ``4^-k``) changes no bit of E, since powers of two commute with every rounding.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nystrom_priors._rowblocks as kmod
from nystrom_priors import (
    GeneralizedNystrom,
    Nystrom,
    extrapolate,
    iter_extrapolate,
    select_landmarks,
)

PATHS = ["fused", "blas", "twophase"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    monkeypatch.setattr(kmod, "_FORCE_PATH", request.param)
    return request.param


def _data(n=80, d=3, seed=0):
    """Normal data with every |x| >= 1/16, so the entries stay normal float32 numbers down to
    a scale of 2^-120 and scaling them by a power of two is exact."""
    X = np.random.default_rng(seed).normal(size=(n, d))
    return np.where(np.abs(X) < 0.0625, 0.5, X)


def _rbf64(X, Z, width):
    X, Z = X.astype(np.float64), Z.astype(np.float64)
    return np.exp(-((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / width)


def _poly64(X, Z, gamma, coef0=1.0, degree=3):
    return (gamma * (X.astype(np.float64) @ Z.astype(np.float64).T) + coef0) ** degree


def _quiet(fun, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an under- or overflow warning is a failure too
        return fun(*args, **kwargs)


# ----- bug 1: float32 cross terms underflowed at small data scales ---------------------------


@pytest.mark.parametrize("scale", [1e-20, 1e-22, 1e-25, 1e-30, 2.0**-130])
def test_float32_rbf_at_small_scale_matches_float64(path, scale):
    Xf = (_data() * scale).astype(np.float32)
    width = 6.0 * scale**2  # the kernel's own scale follows the data's
    E = _quiet(extrapolate, Xf, Xf[:7], width=width)
    assert E.dtype == np.float32
    # k(x, x) = 1: exactly where the cross term is summed in float64 (fused), within an ulp
    # where sgemm sums it in float32 against float64 norms (at every scale, 1 included)
    diag = np.diag(E[:7]).astype(np.float64)
    assert (diag >= (1.0 if path == "fused" else 1.0 - 2.0**-24)).all(), diag
    np.testing.assert_allclose(E, _rbf64(Xf, Xf[:7], width), rtol=0, atol=2e-6)


@pytest.mark.parametrize("scale", [1e-20, 1e-25, 1e-30])
def test_float32_poly_at_small_scale_matches_float64(path, scale):
    Xf = (_data() * scale).astype(np.float32)
    gamma = 1.0 / (3 * scale**2)
    E = _quiet(extrapolate, Xf, Xf[:7], kernel="poly", gamma=gamma)
    ref = _poly64(Xf, Xf[:7], gamma)
    np.testing.assert_allclose(E, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


@given(k=st.integers(-120, 0), kernel=st.sampled_from(["rbf", "poly"]))
def test_float32_kernels_are_exactly_scale_invariant(k, kernel):
    X = _data(60, 5, seed=1).astype(np.float32)
    Xk = np.ldexp(X, k)  # exact: every entry stays a normal float32 number
    if kernel == "rbf":
        E1 = extrapolate(X, X[:9], width=5.0)
        Ek = _quiet(extrapolate, Xk, Xk[:9], width=float(np.ldexp(5.0, 2 * k)))
    else:
        E1 = extrapolate(X, X[:9], kernel="poly", gamma=0.25)
        Ek = _quiet(extrapolate, Xk, Xk[:9], kernel="poly", gamma=float(np.ldexp(0.25, -2 * k)))
    np.testing.assert_array_equal(Ek, E1)


def test_float32_iter_extrapolate_at_small_scale():
    Xf = (_data(100) * 1e-25).astype(np.float32)
    blocks = _quiet(lambda: list(iter_extrapolate(Xf, Xf[:5], width=6e-50, block_rows=32)))
    E = np.vstack([b for _, b in blocks])
    assert [s for s, _ in blocks] == [0, 32, 64, 96]
    np.testing.assert_allclose(E, _rbf64(Xf, Xf[:5], 6e-50), rtol=0, atol=2e-6)


@pytest.mark.parametrize("kernel, kw", [("rbf", {}), ("poly", {"degree": 2})])
def test_float32_nystrom_at_small_scale_is_the_scaled_model(kernel, kw):
    """Nystrom on 2^-90 X (poly: gamma times 2^180) is the model on X: the same rank, and the
    same learned kernel G G^T (exact scaling, so only the float32 rounding of W's
    eigendecomposition differs, if anything)."""
    X = _data(120, 3).astype(np.float32)
    Xs = np.ldexp(X, -90)
    if kernel == "poly":
        kw = dict(kw, gamma=1.0 / 3)
        kws = dict(kw, gamma=float(np.ldexp(1.0 / 3, 180)))
    else:
        kws = kw
    make = lambda **k: Nystrom(12, kernel=kernel, landmarks="uniform", random_state=0, **k)  # noqa: E731
    ref = make(**kw).fit(X)
    model = _quiet(make(**kws).fit, Xs)
    assert model.n_components_ == ref.n_components_
    if kernel == "rbf":
        assert model.n_components_ == 12
    G, G1 = _quiet(model.transform, Xs), ref.transform(X)
    np.testing.assert_allclose(G @ G.T, G1 @ G1.T, rtol=0, atol=1e-4)


def test_float32_nystrom_at_1e25_keeps_its_rank():
    X = _data(80, 3)
    full = Nystrom(10, landmarks="uniform", random_state=0).fit(X.astype(np.float32))
    tiny = _quiet(Nystrom(10, landmarks="uniform", random_state=0).fit, (X * 1e-25).astype("f4"))
    assert tiny.n_components_ == full.n_components_ == 10


def test_float32_generalized_nystrom_at_small_scale():
    X = _data(120, 3).astype(np.float32)
    y = np.full(120, -1)
    y[:20] = (X[:20, 0] > 0).astype(int)
    Xs = np.ldexp(X, -90)
    make = lambda: GeneralizedNystrom(10, lam=1.0, landmarks="uniform", random_state=0)  # noqa: E731
    ref = make().fit(X, y)
    model = _quiet(make().fit, Xs, y)
    G, G1 = _quiet(model.transform, Xs), ref.transform(X)
    np.testing.assert_allclose(G @ G.T, G1 @ G1.T, rtol=0, atol=1e-4)


def test_float32_ordinary_scale_is_unchanged():
    """The guard against regressions at ordinary scales: the float64 oracle to float32
    accuracy."""
    Xf = _data().astype(np.float32)
    E = extrapolate(Xf, Xf[:7], width=6.0)
    np.testing.assert_allclose(E, _rbf64(Xf, Xf[:7], 6.0), rtol=0, atol=2e-6)


# ----- bug 2: landmarks beyond X's dtype became infinite -------------------------------------


def _refuses(fun, *args, match, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the error
        with pytest.raises(ValueError, match=match):
            fun(*args, **kwargs)


def test_extrapolate_refuses_landmarks_beyond_float32():
    X = _data()
    Xf = X.astype(np.float32)
    out = np.full((80, 6), 7.0, dtype=np.float32)
    msg = r"Z \(max \|z\| = 2\.\d+e\+40\) do not fit in float32.*3\.4e\+38"
    _refuses(extrapolate, Xf, X[:6] * 1e40, width=1e80, out=out, match=msg)
    assert (out == 7.0).all()  # refused before any computation
    _refuses(extrapolate, Xf, X[:6] * 1e40, kernel="cosine", match=msg)
    blocks = iter_extrapolate(Xf, X[:6] * 1e40, width=1e80, block_rows=16)
    _refuses(next, blocks, match=msg)


def test_landmarks_beyond_float32_are_refused():
    X = _data()
    Xf = X.astype(np.float32)
    msg = r"landmarks \(max \|z\| = 2\.\d+e\+50\) do not fit in float32"
    _refuses(select_landmarks, Xf, 5, method=X[:5] * 1e50, match=msg)
    _refuses(Nystrom(landmarks=X[:5] * 1e50).fit, Xf, match=msg)
    y = np.where(np.arange(80) < 10, X[:, 0] > 0, -1)
    _refuses(GeneralizedNystrom(5, landmarks=X[:5] * 1e50, lam=1.0).fit, Xf, y, match=msg)


def test_float64_model_refuses_float32_input_beyond_its_landmarks():
    X = _data() * 1e40
    model = Nystrom(5, landmarks="uniform", random_state=0).fit(X)
    # the model's landmarks by the name the user sees on the model
    _refuses(model.transform, (X * 1e-40).astype(np.float32), match=r"landmarks_ \(max .*float32")


def test_landmarks_at_the_edge_of_float32_still_fit():
    top = float(np.finfo(np.float32).max)
    Z = np.array([[top, 0.0], [-top, 1.0]])
    Xf = np.zeros((3, 2), dtype=np.float32)
    L = select_landmarks(Xf, 2, method=Z)
    assert L.dtype == np.float32 and np.isfinite(L).all()
    E = _quiet(extrapolate, Xf, Z, kernel="cosine")
    np.testing.assert_array_equal(E, np.zeros((3, 2), dtype=np.float32))
