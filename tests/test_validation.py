"""The shared validation layer: every bad input gets a clear exception."""

import numpy as np
import pytest

from nystrom_priors import Nystrom, extrapolate, mean_squared_distance, select_landmarks
from nystrom_priors._validation import check_array, check_random_state, check_scalar

GOOD = np.arange(12.0).reshape(6, 2)

CASES = [
    (None, TypeError, "got None"),
    (
        np.array([1.0, 2.0, 3.0]),
        ValueError,
        r"2-D array .* got a 1-D array of shape \(3,\).*Reshape your data",
    ),
    (np.zeros((2, 2, 2)), ValueError, r"got a 3-D array of shape \(2, 2, 2\)"),
    (
        np.empty((0, 3)),
        ValueError,
        r"0 sample\(s\) \(shape=\(0, 3\), n_samples = 0\) while a minimum of \d",
    ),
    (
        np.empty((3, 0)),
        ValueError,
        r"0 feature\(s\) \(shape=\(3, 0\)\) while a minimum of 1 is required",
    ),
    (
        np.array([[1.0, np.nan], [0, 0]]),
        ValueError,
        r"finite values, got 1 NaN and 0 infinite .*index \(0, 1\)",
    ),
    (np.array([[np.inf, 1.0], [0, 0]]), ValueError, "got 0 NaN and 1 infinite"),
    (np.array([["a", "b"]]), TypeError, r"dtype <U1 \(string\)"),
    (np.array([[1 + 2j]]), ValueError, r"Complex data not supported"),
    (np.array([[object()]], dtype=object), TypeError, r"dtype object .*float64"),
    ([[1.0, 2.0], [3.0]], TypeError, "could not be converted"),
    (np.array([["2020-01-01"]], dtype="datetime64[D]"), TypeError, "datetime"),
]


@pytest.mark.parametrize("bad, exc, match", CASES)
@pytest.mark.parametrize(
    "entry",
    [
        lambda X: extrapolate(X, GOOD, width=1.0),
        lambda X: extrapolate(GOOD, X, width=1.0),
        lambda X: Nystrom(2).fit(X),
        lambda X: Nystrom(2, random_state=0).fit(GOOD).transform(X),
        lambda X: select_landmarks(X, 2),
        lambda X: mean_squared_distance(X),
    ],
    ids=["extrapolate-X", "extrapolate-Z", "fit", "transform", "select_landmarks", "msd"],
)
def test_bad_arrays_everywhere(bad, exc, match, entry):
    with pytest.raises(exc, match=match):
        entry(bad)


def test_sparse_input_is_refused_with_hint():
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match=r"sparse matrix .*toarray"):
        check_array(sparse.csr_matrix(GOOD))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.bool_, np.float16])
def test_other_real_dtypes_are_cast_to_float64(dtype):
    out = check_array(GOOD.astype(dtype))
    assert out.dtype == np.float64 and out.flags.c_contiguous


def test_float32_and_float64_are_kept_without_copy():
    for dtype in (np.float32, np.float64):
        X = GOOD.astype(dtype)
        assert check_array(X) is X


def test_random_state_forms():
    g = np.random.default_rng(0)
    assert check_random_state(g) is g
    assert isinstance(check_random_state(3), np.random.Generator)
    a = check_random_state(np.random.RandomState(0)).random()
    assert a == check_random_state(np.random.RandomState(0)).random()
    with pytest.raises(ValueError, match="non-negative"):
        check_random_state(-1)
    with pytest.raises(TypeError, match="random_state must be None"):
        check_random_state(1.5)


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        (True, {}, TypeError, "got bool"),
        ("1", {}, TypeError, "must be a real number, got str"),
        (float("nan"), {}, ValueError, "got NaN"),
        (float("inf"), {}, ValueError, "must be finite"),
        (0.0, {"lo": 0.0, "lo_closed": False}, ValueError, r"must be in \(0, inf\), got 0.0"),
        (5, {"kind": "int", "hi": 4}, ValueError, r"must be in \(-inf, 4\], got 5"),
        (2.5, {"kind": "int"}, TypeError, "must be an integer, got float 2.5"),
        (10**400, {}, ValueError, "beyond float64's range"),  # float() overflows
        (-(10**400), {"allow_inf": True}, ValueError, "beyond float64's range"),
    ],
)
def test_check_scalar(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_scalar(value, "p", **kwargs)


def test_none_in_an_object_array_is_named_missing_not_nan():
    # numpy casts None to NaN, so the message counted "1 NaN" where pandas' pd.NA was named
    X = np.random.default_rng(0).normal(size=(30, 2))
    model = Nystrom(n_landmarks=5, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"X has missing values \(pd.NA or None\)"):
        model.transform(np.array([[1.0, None]], dtype=object))
    with pytest.raises(ValueError, match="got 1 NaN and 0 infinite"):  # a NaN stays a NaN
        model.transform(np.array([[1.0, float("nan")]], dtype=object))


def test_pandas_missing_values_are_named_as_such():
    # a nullable Int64 column with pd.NA used to fail as "dtype object ... NAType"
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": pd.array([1, 2, None, 4] * 10, dtype="Int64"), "b": np.arange(40.0)})
    with pytest.raises(ValueError, match=r"X has missing values \(pd.NA or None\)"):
        Nystrom(n_landmarks=5).fit(df)
    full = df.fillna(0)
    assert Nystrom(n_landmarks=5, random_state=0).fit(full).transform(full).shape == (40, 5)
    # missing values and a string: the message names both problems
    df["c"] = ["red"] + [1.0] * 39
    with pytest.raises(ValueError, match=r"missing values.*not numbers \(e.g. 'red'\)"):
        Nystrom(n_landmarks=5).fit(df)
