"""Kernels and the extrapolation matrix against an independent dense oracle (scipy cdist)."""

import re
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import naive_kernel, rbf_roundoff_bound
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.distance import pdist

import nystrom_priors._rowblocks as kmod
from nystrom_priors import (
    Nystrom,
    extrapolate,
    iter_extrapolate,
    make_kernel,
    mean_squared_distance,
)
from nystrom_priors.kernels import KernelSpec, mean_l1_distance

KERNELS = ["rbf", "laplacian", "linear", "poly", "cosine"]
PATHS = ["fused", "blas", "twophase"]
# float32: E is computed in float32 (cross term by sgemm); the documented accuracy is
# ~1e-6 relative to the largest entry for well-scaled data.
TOL = {np.float64: 1e-12, np.float32: 2e-6}


def _spec_and_oracle(X, Z, name):
    spec = make_kernel(name, X=Z)
    ref = naive_kernel(X, Z, name, gamma=spec.gamma, degree=spec.degree, coef0=spec.coef0)
    return spec, ref


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    monkeypatch.setattr(kmod, "_FORCE_PATH", request.param)
    return request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("d", [3, 37])
def test_matches_naive_kernel(rng, name, dtype, d, path):
    # offset data: exercises the cancellation in ||x||^2 + ||z||^2 - 2<x, z>
    X = (rng.normal(size=(211, d)) + 5.0).astype(dtype)
    Z = X[rng.choice(211, 23, replace=False)] + 0.01
    E = extrapolate(X, Z, kernel=name)
    spec, ref = _spec_and_oracle(X, Z.astype(dtype), name)
    assert E.dtype == dtype and E.shape == (211, 23)
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(E, ref, rtol=0, atol=TOL[dtype] * scale)


def test_rbf_is_one_on_identical_points(rng, path):
    # the GEMM form's absolute error is ~eps * (||x - c||^2 + ||z - c||^2) / b; with the default
    # width b (mean squared distance) that is a few eps whatever the data scale
    X = rng.normal(size=(50, 30)) * 100
    E = extrapolate(X, X)
    np.testing.assert_allclose(np.diag(E), 1.0, rtol=0, atol=1e-14)
    assert (E <= 1.0).all() and (E >= 0.0).all()


def test_exp_accuracy_in_ulps():
    from nystrom_priors._numba._extrapolate import exp_nonpos_inplace

    a = -np.concatenate(
        [np.linspace(0, 745.5, 400_001), np.geomspace(1e-300, 1.0, 20_001), [0.0, 1e-320]]
    )
    a = a.reshape(1, -1).copy()
    out = a.copy()
    exp_nonpos_inplace(out, 1)
    ref = np.exp(a)
    normal = ref >= np.finfo(np.float64).tiny
    ulp = np.spacing(ref[normal])
    assert (np.abs(out[normal] - ref[normal]) / ulp).max() <= 2.0
    # subnormal range: within one subnormal step of libm
    assert np.abs(out[~normal] - ref[~normal]).max() <= 2 * 5e-324
    assert out[0, -2] == 1.0  # exp(-0) is exactly one


@given(
    rows=st.integers(1, 70),
    cols=st.integers(1, 9),
    tile=st.integers(1, 80),
    bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
    where=st.floats(0, 1),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**31),
)
def test_abs_max_is_max_abs_or_nan(rows, cols, tile, bad, where, dtype, seed):
    """The one-pass guard equals max |x|, and is NaN wherever a NaN or infinity sits (any row,
    any column, any tile); the finiteness check of large inputs relies on it."""
    from nystrom_priors._numba._extrapolate import abs_max

    X = (np.random.default_rng(seed).normal(size=(rows, cols)) * 1e3).astype(dtype)
    if bad is not None:
        k = min(int(where * X.size), X.size - 1)
        X.flat[k] = bad
    got = abs_max(X, tile)
    if bad is None:
        assert got == float(np.abs(X).max())
    else:
        assert np.isnan(got)


@pytest.mark.parametrize(
    "kind, bad",
    [(k, b) for k in ("view", "float") for b in (None, np.nan, -np.inf)] + [("int", None)],
)
def test_abs_max_on_any_large_array(kind, bad):
    """``_validation.abs_max`` above 2^16 entries, by the jitted pass (C-contiguous floats) or
    by row chunks (views, integers): max |x|; NaN for a NaN and not finite for an infinity
    (here in the last chunk, so that a NaN must survive combining the chunks)."""
    from nystrom_priors._validation import abs_max

    rng = np.random.default_rng(7)
    base = rng.normal(size=(4500, 2000)) * 1e3  # views / integers: 2 or more chunks of 2^22
    A = {"view": base[:, ::2], "int": base.astype(np.int64), "float": base}[kind]
    if bad is not None:
        A[-1, -2] = bad
    got = abs_max(A)
    if bad is None:
        assert got == float(np.abs(A).max())
    elif np.isnan(bad):
        assert np.isnan(got)
    else:  # the jitted pass returns NaN for an infinity too: "not finite" is the contract
        assert not np.isfinite(got)


def test_large_input_finiteness_message():
    """Above 2^22 entries the finiteness check takes the jitted pass; the error still counts
    and locates the bad entries."""
    X = np.zeros((1 << 12, 1 << 11))
    X[4000, 7] = np.inf
    X[17, 3] = np.nan
    with pytest.raises(
        ValueError, match=r"1 NaN and 1 infinite entries \(first at index \(17, 3\)\)"
    ):
        extrapolate(X, X[:5])
    with pytest.raises(ValueError, match=r"1 NaN and 1 infinite"):
        Nystrom(5, random_state=0).fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("form", ["width", "spec"])
def test_nonfinite_x_is_reported_after_a_fused_pass(rng, bad, form):
    """The Gaussian kernel on the BLAS path reads max |x| off E's own pass (the rows'
    centred norms): a non-finite row found there still gets the finiteness message, and so
    do Nystrom's transform (the same idea, tile by tile) and a given ``out``."""
    X = rng.normal(size=(300, 40))
    Z = X[:20].copy()
    X[250, 7] = bad
    out = np.empty((300, 20))
    kw = dict(width=80.0) if form == "width" else dict(kernel=make_kernel("rbf", width=80.0))
    with pytest.raises(ValueError, match=r"first at index \(250, 7\)"):
        extrapolate(X, Z, out=out, **kw)
    model = Nystrom(landmarks=Z, width=80.0).fit(X[:200])
    with pytest.raises(ValueError, match=r"first at index \(250, 7\)"):
        model.transform(X)


@pytest.mark.parametrize("scale", [1e150, 1.2e154])
def test_huge_rows_take_the_exact_guards(rng, scale):
    """At 1.2e154 the squared norms overflow float64: the bound from E's pass is not
    finite, so the exact pass decides the scaling (at 1e150 the bound suffices). Either way
    E equals E of the data divided by the scale (the width divided by its square). The
    landmarks' squared norms overflowed too, and were scaled as inf: E came out all zeros."""
    X = rng.normal(size=(200, 4)) * 3.0
    Z = X[:15].copy()
    ref = extrapolate(X, Z, width=1.0)
    got = extrapolate(X * scale, Z * scale, width=scale * scale)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", KERNELS)
def test_independent_of_block_size_and_threads(rng, name, path):
    X = rng.normal(size=(157, 29))
    Z = rng.normal(size=(41, 29))
    ref = extrapolate(X, Z, kernel=name, block_rows=157)
    for block in (1, 7, 64):
        got = extrapolate(X, Z, kernel=name, block_rows=block)
        if path == "blas" and name != "laplacian":
            # BLAS may sum in another order for another tile height: a few ulp, documented
            np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-14 * np.abs(ref).max())
        else:
            np.testing.assert_array_equal(got, ref)
    # the default tiling depends on the shape only, so any thread count gives the same bits
    default = extrapolate(X, Z, kernel=name)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = extrapolate(X, Z, kernel=name)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one, default)


def test_out_buffer_and_memmap(rng, tmp_path):
    X = rng.normal(size=(100, 4))
    Z = X[:9]
    out = np.lib.format.open_memmap(tmp_path / "E.npy", mode="w+", dtype=np.float64, shape=(100, 9))
    res = extrapolate(X, Z, width=2.0, out=out)
    assert res is out
    np.testing.assert_array_equal(np.load(tmp_path / "E.npy"), extrapolate(X, Z, width=2.0))


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.empty((100, 8)), "shape"),
        (np.empty((100, 9), dtype=np.float32), "dtype"),
        (np.empty((9, 100)).T, "C-contiguous"),
        ([[0.0] * 9] * 100, "numpy array"),
    ],
)
def test_out_buffer_validation(rng, bad, match):
    X = rng.normal(size=(100, 4))
    with pytest.raises((ValueError, TypeError), match=match):
        extrapolate(X, X[:9], width=2.0, out=bad)


def test_read_only_and_non_contiguous_inputs(rng):
    X = rng.normal(size=(60, 10))
    ref = extrapolate(X, X[:5], width=3.0)
    Xr = X.copy()
    Xr.setflags(write=False)
    np.testing.assert_array_equal(extrapolate(Xr, X[:5], width=3.0), ref)
    Xf = np.asfortranarray(X)
    np.testing.assert_array_equal(extrapolate(Xf, X[:5], width=3.0), ref)
    Xs = np.repeat(X, 2, axis=1)[:, ::2]
    np.testing.assert_array_equal(extrapolate(Xs, X[:5], width=3.0), ref)


def test_integer_input_is_cast_to_float64(rng):
    Xi = rng.integers(0, 5, size=(30, 3))
    E = extrapolate(Xi, Xi[:4], width=2.0)
    assert E.dtype == np.float64
    np.testing.assert_allclose(E, naive_kernel(Xi, Xi[:4], "rbf", gamma=0.5), atol=1e-12)


def test_iter_extrapolate_concatenates_to_extrapolate(rng, tmp_path):
    X = rng.normal(size=(103, 6))
    Z = X[:11]
    full = extrapolate(X, Z, width=4.0)
    # blocks of other heights may be summed in another order by BLAS: round-off bound
    bound = rbf_roundoff_bound(X, Z, 0.25)
    blocks = list(iter_extrapolate(X, Z, width=4.0, block_rows=10))
    assert [s for s, _ in blocks] == list(range(0, 103, 10))
    assert (np.abs(np.vstack([b for _, b in blocks]) - full) <= bound).all()
    # an iterable of blocks (a generator) and a memmap give the same rows
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    gen = (mm[s : s + 17] for s in range(0, 103, 17))
    got = list(iter_extrapolate(gen, Z, width=4.0))
    assert [s for s, _ in got] == list(range(0, 103, 17))
    assert (np.abs(np.vstack([b for _, b in got]) - full) <= bound).all()


def test_iter_extrapolate_bad_block_is_reported_with_its_row(rng):
    X = rng.normal(size=(20, 3))
    blocks = [X[:10], X[10:, :2]]
    it = iter_extrapolate(blocks, X[:4], width=1.0)
    next(it)
    with pytest.raises(ValueError, match="block at row 10 has 2 features"):
        next(it)


def test_default_width_is_mean_squared_distance_of_landmarks(rng):
    X = rng.normal(size=(40, 3))
    Z = X[:12]
    b = mean_squared_distance(Z)
    np.testing.assert_array_equal(extrapolate(X, Z), extrapolate(X, Z, width=b))


def test_mean_squared_distance_is_exact(rng):
    X = rng.normal(size=(301, 7)) * 3 + 100.0  # offset: naive formulas lose digits here
    brute = pdist(X, "sqeuclidean").mean()
    assert mean_squared_distance(X) == pytest.approx(brute, rel=1e-12)
    assert mean_squared_distance(X.astype(np.float32)) == pytest.approx(brute, rel=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
def test_mean_squared_distance_survives_the_rounding_of_a_huge_offset(sparse):
    """With a common offset of 1e17 the stored values are 16 apart (float64's spacing there)
    and their mean rounds by up to 8: the plain two-pass sum added that rounding, squared, to
    every row (1024 instead of 853.3 here). The corrected two-pass sum matches pdist."""
    import scipy.sparse as sp

    X = 1e17 + np.array([[0.0, 1.0], [16.0, 1.0], [32.0, 1.0], [48.0, 1.0]])
    brute = pdist(X, "sqeuclidean").mean()
    got = mean_squared_distance(sp.csr_matrix(X) if sparse else X)
    assert got == pytest.approx(brute, rel=1e-12)
    Y = 1e17 + np.random.default_rng(1).normal(size=(500, 3)) * 100
    assert mean_squared_distance(sp.csr_matrix(Y) if sparse else Y) == pytest.approx(
        pdist(Y, "sqeuclidean").mean(), rel=1e-9
    )


def test_mean_l1_distance_is_exact(rng):
    X = rng.normal(size=(157, 5))
    assert mean_l1_distance(X) == pytest.approx(pdist(X, "cityblock").mean(), rel=1e-12)


@pytest.mark.parametrize("exponent", [-1060, -1000, 0, 1000, 1014])
def test_mean_l1_distance_is_exactly_equivariant_to_the_scale(exponent):
    """mean_l1(2^k X) = 2^k mean_l1(X) bit for bit: the weighted sums of sorted values (up to
    n^2 max |x|) are formed in units of max |x|, so they no longer overflow at 2^1014 while the
    mean is a float; past float64's range the mean is inf, without a warning."""
    X = np.random.default_rng(0).normal(size=(200, 40))
    b = mean_l1_distance(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mean_l1_distance(np.ldexp(X, exponent)) == np.ldexp(b, exponent)


def test_mean_l1_distance_past_float64_is_inf_without_a_warning():
    X = np.random.default_rng(0).normal(size=(200, 40))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mean_l1_distance(np.ldexp(X, 1021)) == np.inf  # 45 x 2^1021 > float64 max


def test_gamma_is_inverse_width(rng):
    X = rng.normal(size=(20, 3))
    np.testing.assert_array_equal(
        extrapolate(X, X[:5], gamma=0.25), extrapolate(X, X[:5], width=4.0)
    )


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"kernel": "sigmoid"}, ValueError, "Unknown kernel 'sigmoid'"),
        ({"kernel": len}, TypeError, "kernel must be a string"),
        ({"width": 0.0}, ValueError, r"width must be in \(0"),
        ({"width": -1.0}, ValueError, r"width must be in \(0"),
        ({"width": float("nan")}, ValueError, "width must be a number, got NaN"),
        ({"width": 1.0, "gamma": 1.0}, ValueError, "not both"),
        ({"kernel": "linear", "width": 1.0}, ValueError, "width applies to"),
        ({"kernel": "linear", "gamma": 1.0}, ValueError, "gamma does not apply"),
        ({"kernel": "poly", "degree": 0}, ValueError, r"degree must be in \[1"),
        ({"kernel": "poly", "degree": 2.5}, TypeError, "degree must be an integer"),
        ({"block_rows": 0}, ValueError, r"block_rows must be in \[1"),
    ],
)
def test_bad_kernel_parameters(rng, kwargs, exc, match):
    X = rng.normal(size=(10, 2))
    with pytest.raises(exc, match=match):
        extrapolate(X, X[:3], **kwargs)


def test_mismatched_features_and_identical_landmarks(rng):
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match="same number of features, got X with 3 and Z with 2"):
        extrapolate(X, X[:4, :2], width=1.0)
    with pytest.raises(ValueError, match="all 4 samples are identical"):
        extrapolate(X, np.ones((4, 3)))
    with pytest.raises(ValueError, match="at least 2 landmarks"):
        extrapolate(X, X[:1])


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_default_width_says_why_it_cannot_be_set(kernel):
    # identical samples, and samples that differ but whose distances under- or overflow
    # float64 (the message used to call the former "identical" and the latter say nothing)
    big = 1e200 if kernel == "rbf" else 1e308  # squared vs L1 distances
    cases = [
        (np.ones((4, 3)), r"all 4 samples are identical .*Pass width explicitly"),
        (
            np.eye(3) * big,
            "max \\|x\\| = " + re.escape(f"{big:.3g}") + " the distances overflow .*Rescale X",
        ),
    ]
    if kernel == "rbf":  # the L1 distance of 1e-200 is still a normal float
        cases.append((np.eye(3) * 1e-200, r"max \|x\| = 1e-200 the distances underflow"))
        # squared distances ~1e-320 are subnormal but positive: 1 / width overflowed to
        # gamma = inf, and the message blamed gamma, which the user never passed
        cases.append(
            (
                np.eye(3) * 1e-160,
                r"max \|x\| = 1e-160 the distances are so small that "
                r"1 / width overflows .*Rescale X",
            )
        )
        # near float64's max the mean of X itself overflowed (a RuntimeWarning, not this error)
        cases.append((1e308 + np.eye(3) * 1e306, r"max \|x\| = 1.01e\+308 the distances overflow"))
    for Z, match in cases:
        with pytest.raises(ValueError, match=match):
            make_kernel(kernel, X=Z)
    with pytest.raises(ValueError, match=r"gamma = 1 / width must be positive and finite .*inf"):
        make_kernel(kernel, width=1e-320)


@given(
    kernel=st.sampled_from(["linear", "poly", "rbf", "cosine", "laplacian"]),
    log_scale=st.floats(-320.0, 308.0),
    degree=st.integers(1, 64),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_extrapolation_is_finite_or_a_named_overflow(kernel, log_scale, degree, dtype, seed):
    """At any data scale, E is finite or extrapolate raises the overflow error: the O(nd)
    bound that skips the check of E must never let an inf or NaN through."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", under="ignore"):
        X = (rng.normal(size=(12, 3)) * 10.0**log_scale).astype(dtype)
    assume(np.isfinite(X).all())
    kw = {"degree": degree} if kernel == "poly" else {}
    if kernel in ("rbf", "laplacian"):
        kw["width"] = 1.0
    try:
        E = extrapolate(X, X[:4], kernel=kernel, **kw)
    except ValueError as exc:
        assert f"k(X, Z) overflows {np.dtype(dtype).name}: the {kernel!r} kernel" in str(exc)
    else:
        assert np.isfinite(E).all()


@pytest.mark.parametrize("path", PATHS)
def test_cosine_kernel_is_scale_free_over_the_float_range(rng, monkeypatch, path):
    # k(cx, z) = k(x, z) for c > 0: the norms are taken scaled by max |x_k| and the kernel
    # divides by ||x|| (its reciprocal, and 1/||x|| * 1/||z||, overflowed below 1e-154)
    monkeypatch.setattr(kmod, "_FORCE_PATH", path)
    X = rng.normal(size=(30, 5))
    X[3] = 0.0  # a zero row: zero kernel row
    ref = naive_kernel(X, X[:7], "cosine")
    for scale in (1e-300, 1e-160, 1e-150, 1e150, 1e300):
        E = extrapolate(X * scale, X[:7] * scale, kernel="cosine")
        np.testing.assert_allclose(E, ref, rtol=0, atol=8 * np.finfo(float).eps)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "dtype, exponent",
    [(np.float64, -1070), (np.float64, -600), (np.float64, 700), (np.float32, -140)],
)
def test_cosine_kernel_of_rows_at_extreme_scales_is_that_of_the_rows_scaled_back(
    rng, monkeypatch, path, sparse, dtype, exponent
):
    # rows times 2^exponent hold exactly the bits of the rows (at -1070 only those the
    # subnormal grid keeps), so their cosines are those of the rows scaled back. Subnormal
    # rows' cross terms and the landmarks' norms used to be rounded to that grid ((2^-1074, 0)
    # against (2^-1074, 2^-1074) gave 1, not 0.707), and CSR rows whose squares under- or
    # overflow (beyond 2^+-511) gave 0 or were refused.
    monkeypatch.setattr(kmod, "_FORCE_PATH", path)
    X = rng.normal(size=(40, 5)).astype(dtype)
    X[3] = 0.0
    tiny = np.ldexp(X, exponent).astype(dtype)
    tiny[20:] = X[20:]  # normal rows alongside
    up = X.astype(np.float64)
    up[:20] = np.ldexp(tiny[:20].astype(np.float64), -exponent)
    assert np.array_equal(np.ldexp(up[:20], exponent).astype(dtype), tiny[:20])  # exact
    ref = naive_kernel(up, up[15:25], "cosine")
    Xin = sp.csr_matrix(tiny) if sparse else tiny
    E = extrapolate(Xin, tiny[15:25], kernel="cosine")
    np.testing.assert_allclose(E, ref, rtol=0, atol=8 * np.finfo(dtype).eps)
    one = np.array([[5e-324, 0.0], [5e-324, 5e-324]])
    np.testing.assert_allclose(
        extrapolate(sp.csr_matrix(one) if sparse else one, one, kernel="cosine"),
        [[1.0, 0.5**0.5], [0.5**0.5, 1.0]],
        rtol=1e-15,
    )


def test_cosine_transform_of_subnormal_rows_is_that_of_the_rows_scaled_up(rng):
    # the fused k(X, Z) @ projection pass of transform rescales the same rows
    X = rng.normal(size=(60, 6))
    tiny = np.ldexp(X, -1068)
    up = np.ldexp(tiny, 1068)
    model = Nystrom(n_landmarks=12, kernel="cosine", random_state=0).fit(up)
    np.testing.assert_allclose(model.transform(tiny), model.transform(up), rtol=0, atol=1e-14)


@pytest.mark.parametrize("exponent", [-600, -500, 500])
def test_mean_squared_distance_is_exactly_equivariant_to_the_scale(exponent):
    """msd(2^k X) = 4^k msd(X) bit for bit (it is computed in units of max |x|), as long as
    the result is a normal float; past float64's range it is inf or 0, without a warning."""
    X = np.random.default_rng(0).normal(size=(200, 4)) + 3.0
    b = mean_squared_distance(X)
    assert mean_squared_distance(np.ldexp(X, exponent)) == np.ldexp(b, 2 * exponent)
    assert mean_squared_distance(np.ldexp(X, 1015)) == np.inf
    assert mean_squared_distance(np.ldexp(X, -1060)) == 0.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(name="rbf", gamma=float("nan")), ValueError, "gamma must be a number"),
        (dict(name="rbf", gamma=float("inf")), ValueError, "gamma must be finite"),
        (dict(name="rbf", gamma=-1.0), ValueError, r"gamma must be in \(0, inf\)"),
        (dict(name="laplacian", gamma=0.0), ValueError, r"needs gamma > 0 \(got 0.0\)"),
        # gamma left at its default: the message says the spec needs it, and how to build one
        (dict(name="rbf"), ValueError, r"KernelSpec\('rbf'\) needs gamma > 0.*make_kernel"),
        (dict(name="poly"), ValueError, "needs gamma > 0 .*the inner product scale"),
        (dict(name="poly", gamma=1.0, degree=2.5), TypeError, "degree must be an integer"),
        (dict(name="poly", gamma=1.0, degree="2"), TypeError, "degree must be an integer"),
        (dict(name="poly", gamma=1.0, coef0=float("nan")), ValueError, "coef0"),
        (dict(name="bogus", gamma=1.0), ValueError, "Unknown kernel 'bogus'"),
        # fields the kernel ignores: a model stores them, and save checks them (a model fitted
        # with KernelSpec("linear", gamma=-5.0) could not be saved; degree="abc" leaked int()'s
        # error from Nystrom.fit)
        (dict(name="rbf", gamma=1.0, degree="abc"), TypeError, "degree must be an integer"),
        (dict(name="rbf", gamma=1.0, degree=None), TypeError, "degree must be an integer"),
        (dict(name="rbf", gamma=1.0, coef0=float("nan")), ValueError, "coef0 must be a number"),
        (dict(name="linear", gamma=-5.0), ValueError, r"gamma must be in \[0, inf\)"),
        (dict(name="cosine", degree=0), ValueError, r"degree must be in \[1, 64\]"),
    ],
)
def test_a_kernel_spec_built_directly_is_validated(kwargs, error, match):
    # built without make_kernel, a spec used to reach the computation: NaN kernels, a
    # non-PSD "rbf" for gamma < 0, ZeroDivisionError / LinAlgError inside Nystrom.fit
    with pytest.raises(error, match=match):
        KernelSpec(**kwargs)


def test_a_kernel_spec_accepts_the_aliases_and_equals_make_kernels(rng):
    spec = KernelSpec("Gaussian", gamma=0.5)
    assert spec == make_kernel("rbf", gamma=0.5) and spec.code == make_kernel("rbf", gamma=1).code
    X = rng.normal(size=(30, 4))
    assert np.array_equal(extrapolate(X, X[:5], kernel=spec), extrapolate(X, X[:5], gamma=0.5))
    poly = KernelSpec("polynomial", gamma=0.25, degree=np.int64(2), coef0=np.float32(0.5))
    assert poly == make_kernel("poly", gamma=0.25, degree=2, coef0=0.5)
    assert type(poly.degree) is int and type(poly.coef0) is float


@pytest.mark.parametrize("kw", [dict(degree=5), dict(coef0=2.0)])
def test_a_kernel_spec_refuses_a_different_degree_or_coef0_beside_it(rng, kw):
    """A spec with a degree or coef0 passed beside it that differs from both the default and
    the spec's own: the spec's silently won (degree_ 2 for degree=5), as a width or gamma beside
    it is refused for. The same value as the spec's, or the default, is accepted."""
    X = rng.normal(size=(30, 4))
    spec = KernelSpec("poly", gamma=1.0, degree=2, coef0=0.5)
    with pytest.raises(ValueError, match="carries its own parameters"):
        Nystrom(n_landmarks=5, kernel=spec, **kw).fit(X)
    with pytest.raises(ValueError, match="carries its own parameters"):
        extrapolate(X, X[:3], kernel=spec, **kw)
    for same in (dict(degree=2, coef0=0.5), {}):
        assert Nystrom(n_landmarks=5, kernel=spec, **same).fit(X).degree_ == 2


def test_row_kernels_see_one_array_type_whatever_the_input(monkeypatch):
    """Numba compiles a kernel once per argument type, and writable and read-only arrays are
    types apart: fit passes the read-only landmarks, transform the caller's rows (writable or
    not). The row kernels are handed read-only views only, so each compiles once; the
    values are the same either way."""
    from nystrom_priors._numba import _extrapolate as kx

    seen = []
    for name in ("extrapolate_blas", "extrapolate_fused", "extrapolate_l1", "project_blas"):
        real = getattr(kx, name)

        def spy(X, *args, _real=real, _name=name):
            seen.append((_name, X.flags.writeable))
            return _real(X, *args)

        monkeypatch.setattr(kx, name, spy)
    X = np.random.default_rng(0).normal(size=(60, 4))
    frozen = X.copy()
    frozen.flags.writeable = False
    for kernel in ("rbf", "laplacian"):
        for forced in (None, "fused"):
            monkeypatch.setattr(kmod, "_FORCE_PATH", forced)
            model = Nystrom(n_landmarks=8, kernel=kernel, random_state=0).fit(X)
            np.testing.assert_array_equal(model.transform(X), model.transform(frozen))
    paths = {"extrapolate_fused", "extrapolate_l1"}
    if kmod._BLAS.available():
        paths |= {"extrapolate_blas", "project_blas"}
    assert {name for name, _ in seen} >= paths
    assert not [call for call in seen if call[1]], seen
    assert X.flags.writeable  # the caller's array is left as it was
