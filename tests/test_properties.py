"""Property-based tests (hypothesis) of the foundation layer.

Random data, kernels, dtypes, landmark counts and block sizes: the Nystrom kernel is PSD with
rank <= m and equals E W^+ E^T; W^+ is a pseudo-inverse on the kept spectrum; E does not depend
on block size or thread count; streamed blocks concatenate to transform.
"""

import numba
import numpy as np
import pytest
from conftest import (
    gemm_error_bound,
    poly_blocking_bound,
    rbf_blocking_bound,
    triple_product_error_bound,
)
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nystrom_priors import Nystrom, extrapolate, iter_extrapolate, select_landmarks

pytestmark = pytest.mark.filterwarnings("ignore:n_landmarks=.*is larger than the number of samples")

KERNELS = st.sampled_from(["rbf", "laplacian", "poly", "linear", "cosine"])
DTYPES = st.sampled_from([np.float64, np.float32])


@st.composite
def datasets(draw, max_n=60, max_d=40):
    n = draw(st.integers(3, max_n))
    d = draw(st.integers(1, max_d))
    dtype = draw(DTYPES)
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-10, 10, allow_nan=False, width=32)))
    X = X * scale
    # make sure the data are not all identical (the default width needs spread), also after
    # the cast to a narrow dtype
    X[0, 0] = np.abs(X[:, 0]).max() + scale
    return X.astype(dtype)


@given(X=datasets(), kernel=KERNELS, m_frac=st.floats(0.1, 1.0), seed=st.integers(0, 2**16))
def test_nystrom_kernel_is_psd_low_rank_and_E_Wplus_Et(X, kernel, m_frac, seed):
    n = X.shape[0]
    m = max(1, int(m_frac * n))
    model = Nystrom(n_landmarks=m, kernel=kernel, landmarks="uniform", random_state=seed)
    try:
        model.fit(X)
    except ValueError as exc:
        # refused only when the kernel vanishes on the landmarks (e.g. linear at x = 0)
        assert "no positive eigenvalue" in str(exc)
        Z = select_landmarks(X, m, method="uniform", random_state=seed)
        W = extrapolate(Z, Z, kernel=kernel, width=1.0 if kernel in ("rbf", "laplacian") else None)
        assert np.abs(W).max() == 0.0
        return
    G = model.transform(X).astype(np.float64)
    assert np.isfinite(G).all()
    assert model.n_components_ <= m
    K = G @ G.T
    evals = np.linalg.eigvalsh(0.5 * (K + K.T))
    assert evals.min() >= -1e-8 * max(1.0, evals.max())
    assert np.linalg.matrix_rank(K, tol=1e-8 * max(1.0, evals.max())) <= m
    # consistency of the factor with S0 = W^+: G = fl(E P) with P = U diag(lam)^-1/2, so
    # |G G^T - E S0 E^T| is bounded by the propagated GEMM round-off of G
    E = extrapolate(X, model.landmarks_, kernel=model._kernel_spec())
    P = model.projection_.astype(X.dtype)
    dG = gemm_error_bound(E, P)
    absG = np.abs(G)
    bound = absG @ dG.T + dG @ absG.T + dG @ dG.T
    E64 = E.astype(np.float64)
    ref = E64 @ model.S0_ @ E64.T
    # ... plus the round-off of the float64 reference itself (|S0| ~ 1/lam_min can be large)
    ref_err = triple_product_error_bound(E64, model.S0_, E64.T)
    assert (np.abs(K - ref) <= 2 * bound + 2 * ref_err + 1e-300).all()


@given(X=datasets(max_n=40), kernel=KERNELS, seed=st.integers(0, 2**16))
def test_W_plus_is_pseudo_inverse_on_kept_spectrum(X, kernel, seed):
    model = Nystrom(n_landmarks=10, kernel=kernel, landmarks="kmeans++", random_state=seed).fit(X)
    Z = model.landmarks_.astype(np.float64)  # W is computed in float64, also for float32 X
    W = extrapolate(Z, Z, kernel=model._kernel_spec())
    S = model.S0_
    Ws = 0.5 * (W + W.T)
    lam = np.linalg.eigvalsh(Ws)
    cutoff = model._default_rcond() * lam.max()
    dropped = np.abs(lam[lam <= cutoff]).sum()  # W S W = W minus the dropped spectrum
    eigh_err = 1e2 * Z.shape[0] * np.finfo(np.float64).eps * lam.max()
    err = np.abs(Ws @ S @ Ws - Ws)
    assert (err <= dropped + eigh_err + 2 * triple_product_error_bound(Ws, S, Ws)).all()
    # S is PSD with eigenvalues 1/lam_kept
    s_eigs = np.linalg.eigvalsh(S)
    assert s_eigs.min() >= -1e2 * Z.shape[0] * np.finfo(np.float64).eps * s_eigs.max()
    # eigvalsh is accurate to ~eps * ||S|| in absolute terms
    atol = 1e2 * Z.shape[0] * np.finfo(np.float64).eps * s_eigs.max()
    np.testing.assert_allclose(
        np.sort(s_eigs)[::-1][: model.n_components_],
        np.sort(1.0 / model.eigenvalues_)[::-1],
        rtol=0,
        atol=atol,
    )


@given(
    X=datasets(max_n=50, max_d=40),
    kernel=KERNELS,
    m=st.integers(1, 30),
    block=st.integers(1, 60),
    threads=st.integers(1, max(1, numba.config.NUMBA_NUM_THREADS)),
)
def test_E_independent_of_blocks_and_threads(X, kernel, m, block, threads):
    Z = X[: min(m, X.shape[0])] * 0.5 + 0.1
    kw = dict(kernel=kernel)
    if kernel in ("rbf", "laplacian"):
        kw["width"] = 1.0 + float(np.abs(X).max()) ** 2
    if kernel == "poly":
        kw["gamma"] = 1.0 / (1.0 + float(np.abs(X).max()) ** 2)
    ref = extrapolate(X, Z, **kw)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(threads)
        again = extrapolate(X, Z, **kw)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(again, ref)
    blocked = extrapolate(X, Z, block_rows=block, **kw)
    tol = 8 * np.finfo(X.dtype).eps * max(1.0, float(np.abs(ref).max()))
    if kernel == "poly":  # the power amplifies the cross term's round-off
        tol = np.maximum(tol, poly_blocking_bound(X, Z, kw["gamma"], 1.0, 3, ref))
    if kernel == "linear":  # <x, z> is the cross term itself: its GEMM's order may change
        tol = np.maximum(tol, poly_blocking_bound(X, Z, 1.0, 0.0, 1, ref))
    np.testing.assert_array_less(np.abs(blocked - ref), tol * (1 + 1e-12) + 1e-300)
    streamed = np.vstack([b for _, b in iter_extrapolate(X, Z, block_rows=block, **kw)])
    np.testing.assert_array_less(np.abs(streamed - ref), tol * (1 + 1e-12) + 1e-300)


def _outlier_data():
    X = np.zeros((26, 2), dtype=np.float32)
    X[0] = (
        1000.0,
        5000.0,
    )  # ten kernel widths from the landmarks' mean: k(x0, x0) rounds per blocking
    return X


@given(X=datasets(max_n=60, max_d=10), block=st.integers(1, 70), seed=st.integers(0, 100))
@example(X=_outlier_data(), block=1, seed=0)  # found by the CI profile
def test_streamed_blocks_concatenate_to_transform(X, block, seed):
    model = Nystrom(n_landmarks=8, landmarks="uniform", random_state=seed).fit(X)
    G = model.transform(X)
    parts = list(model.iter_transform(X, block_rows=block))
    assert [s for s, _ in parts] == list(range(0, X.shape[0], block))
    # BLAS sums in a blocking-dependent order: the cross terms of E (their round-off amplified
    # by the RBF map) and the product with P differ by at most their round-off bounds
    spec = model._kernel_spec()
    assert spec.name == "rbf"
    E = extrapolate(X, model.landmarks_, kernel=spec)
    P = model.projection_.astype(X.dtype)
    dE = rbf_blocking_bound(X, model.landmarks_, spec.gamma, E)
    bound = 2 * gemm_error_bound(E, P) + dE @ np.abs(P.astype(np.float64)) + np.finfo(X.dtype).tiny
    diff = np.abs(np.vstack([p for _, p in parts]).astype(np.float64) - G.astype(np.float64))
    assert (diff <= bound).all(), f"max excess {np.max(diff - bound)}"
