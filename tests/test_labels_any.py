"""Labels of any type: strings, objects, pandas Series / Categorical; -1, None and NaN as the
unlabeled markers; the same ``classes_`` on every learner.

The oracle is the integer encoding: a learner fitted with labels of another type must give
exactly the model it gives with the integer codes of those labels (classes sorted, unlabeled
-1), since only the partition of the labeled samples carries information.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pytest

import nystrom_priors as npr
from nystrom_priors.side_info import check_labels, labels_to_pairs

pd = pytest.importorskip("pandas")

NAMES = np.array(["setosa", "versicolor", "virginica"])


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) + codes[:, None] * 1.5
    y = np.where(np.arange(n) % 4 == 0, codes, -1)  # a quarter labeled
    return X, y


LEARNERS = {
    "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(n_landmarks=8, random_state=0),
    "LogDetKernelLearner": lambda: npr.LogDetKernelLearner(
        n_landmarks=8, gamma=1.0, max_iter=20, random_state=0
    ),
    "VonNeumannKernelLearner": lambda: npr.VonNeumannKernelLearner(
        n_landmarks=8, max_iter=20, random_state=0
    ),
    "BCDNPKL": lambda: npr.BCDNPKL(max_iter=20, random_state=0),
}


def _fit(name, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LEARNERS[name]().fit(X, y)


def _as_strings(y, marker=None):
    out = np.empty(y.shape[0], dtype=object)
    out[:] = [marker if v == -1 else NAMES[v] for v in y]
    return out


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_string_labels_fit_the_same_model_as_their_integer_codes(name):
    X, y = _data()
    ref = _fit(name, X, y)
    for ys in (_as_strings(y), _as_strings(y, marker=-1), _as_strings(y, marker=np.nan)):
        model = _fit(name, X, ys)
        np.testing.assert_array_equal(model.transform(X), ref.transform(X))
        assert model.classes_.tolist() == NAMES.tolist()
    assert ref.classes_.tolist() == [0, 1, 2]


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_pandas_labels_fit_the_same_model(name):
    X, y = _data()
    ref = _fit(name, X, y).transform(X)
    strings = _as_strings(y)
    for ys in (
        pd.Series(strings),
        pd.Series(pd.Categorical(strings, categories=NAMES[::-1])),  # category order ignored
        pd.Series(strings, dtype="string"),  # pd.NA marks unlabeled
        pd.Series(np.where(y == -1, None, y), dtype="Int64"),
        pd.Series(np.where(y == -1, np.nan, y)),  # float with NaN
    ):
        model = _fit(name, X, ys)
        np.testing.assert_array_equal(model.transform(X), ref)
        assert model.classes_.tolist() in (NAMES.tolist(), [0, 1, 2])


def test_integer_categories_with_missing_values_keep_their_type():
    """pandas gives a Categorical of integers with a missing value as floats through
    ``to_numpy(dtype=object)``: classes_ came out ``[0., 1., 2.]``. The categories' own
    values are read now, as for integer labels with -1."""
    X, y = _data()
    ref = _fit("GeneralizedNystrom", X, y)
    for ys in (
        pd.Categorical(np.where(y == -1, None, y)),
        pd.Series(pd.Categorical(np.where(y == -1, None, y))),
    ):
        model = _fit("GeneralizedNystrom", X, ys)
        assert model.classes_.dtype.kind == "i" and model.classes_.tolist() == [0, 1, 2]
        np.testing.assert_array_equal(model.transform(X), ref.transform(X))


def test_classes_are_sorted_and_empty_without_labels():
    X, y = _data()
    shuffled = np.where(y == -1, -1, 2 - y) * 10  # classes 0, 10, 20 in another order
    shuffled[y == -1] = -1
    for name in LEARNERS:
        assert _fit(name, X, shuffled).classes_.tolist() == [0, 10, 20], name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LEARNERS[name]().fit(X, pairs=[[0, 3, 1], [1, 4, 1], [0, 1, -1], [3, 5, -1]])
        assert model.classes_.shape == (0,), name


def test_labels_to_pairs_with_strings_equals_codes():
    _, y = _data(200)
    np.testing.assert_array_equal(
        labels_to_pairs(_as_strings(y), 50, random_state=3),
        labels_to_pairs(y, 50, random_state=3),
    )


def test_check_labels_markers_and_types():
    lab = check_labels(["b", None, "a", float("nan"), -1, "b"], 6)
    assert lab.classes.tolist() == ["a", "b"]
    assert lab.index.tolist() == [0, 2, 5]
    assert lab.codes.tolist() == [1, 0, 1]
    # a list mixing strings with the integer marker stays an object array (no '-1' string)
    assert check_labels(["x", -1, "y"], 3).index.tolist() == [0, 2]
    # numbers in an object array keep integer classes
    assert check_labels(np.array([3, None, 1], dtype=object), 3).classes.dtype == np.int64
    assert check_labels([True, False, True], 3).classes.tolist() == [False, True]
    # booleans with a None marker stay booleans (they became int64 classes 0 and 1)
    boolean = check_labels(np.array([True, None, False, np.True_], dtype=object), 4)
    assert boolean.classes.dtype == np.bool_ and boolean.codes.tolist() == [1, 0, 1]
    assert check_labels(np.array([2.0, np.nan, -1.0, 5.0]), 4).classes.tolist() == [2.0, 5.0]


@pytest.mark.parametrize(
    "y, exc, match",
    [
        (
            np.array(["a", 3, "b"], dtype=object),
            TypeError,
            r"y mixes labels of different types: str \(e.g. 'a'\) and number \(e.g. 3\)",
        ),
        # True == 1: np.unique merged the two into one class
        (
            np.array([True, 1, 0], dtype=object),
            TypeError,
            r"y mixes labels of different types: bool \(e.g. True\) and number \(e.g. 1\)",
        ),
        (np.array(["a", "-1", "b"]), ValueError, r"y\[1\] is the string '-1': what an unl"),
        (["a", "-1", None], ValueError, r"y\[1\] is the string '-1'"),
        # what y.astype(str) makes of the markers None, NaN, -1.0 and pd.NA: they used to
        # become classes named 'None', 'nan', ... and every unlabeled sample a labeled one
        (np.array([0.0, 1.0, np.nan]).astype(str), ValueError, r"y\[2\] is the string 'nan'"),
        (np.array([0.0, 1.0, -1.0]).astype(str), ValueError, r"y\[2\] is the string '-1.0'"),
        (np.array(["a", "<NA>", "b"], dtype=object), ValueError, r"y\[1\] .* '<NA>'"),
        (np.array([1.0, np.inf, 2.0]), ValueError, r"y contains infinite values \(e.g. y\[1\]"),
        (np.array([None, np.nan, -1], dtype=object), ValueError, r"no labeled sample"),
        (
            np.array([1j, 2j, 3j], dtype=object),
            TypeError,
            r"labels of type complex, which cannot be sorted",
        ),
        # sets: < is "subset of", not a total order, and np.unique split 2 classes into 36
        (
            np.array([frozenset([1]), frozenset([2]), None], dtype=object),
            TypeError,
            r"labels of type frozenset, which cannot be sorted .*not a total order",
        ),
        (np.array([1.5, 2.0, -1.0]), ValueError, r"Unknown label type: continuous.*y\[0\] = 1.5"),
        # -1 wrapped by a cast to an unsigned dtype
        (np.array([0, 1, -1]).astype(np.uint64), ValueError, r"y\[2\] = 18446744073709551615"),
        (np.array([0, 1, -1]).astype(np.uint8), ValueError, r"y\[2\] = 255 is the largest uint8"),
    ],
)
def test_check_labels_refuses_ambiguous_or_mixed(y, exc, match):
    with pytest.raises(exc, match=match):
        check_labels(y, 3)


def test_unsigned_labels_below_the_dtype_maximum_are_classes():
    lab = check_labels(np.array([0, 254, 7], dtype=np.uint8), 3)
    assert lab.classes.tolist() == [0, 7, 254] and lab.index.tolist() == [0, 1, 2]


def test_all_unlabeled_markers_of_any_kind_give_the_prior_warning():
    X, _ = _data()
    y = pd.Series([None] * X.shape[0], dtype="string")
    with pytest.warns(UserWarning, match="no labeled sample"):
        model = npr.GeneralizedNystrom(n_landmarks=8, random_state=0).fit(X, y)
    assert model.classes_.shape == (0,)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_string_classes_survive_save_and_load(name):
    X, y = _data()
    model = _fit(name, X, _as_strings(y))
    path = os.path.join(tempfile.mkdtemp(), "m.npz")
    npr.save(model, path)
    back = npr.load(path)
    assert back.classes_.tolist() == NAMES.tolist()
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


@pytest.mark.parametrize("as_list", [False, True])
def test_bytes_classes_survive_save_and_load(as_list):
    # a list of bytes stayed an object array, which save then refused
    X, y = _data()
    labels = np.array([b"a", b"bb", b"c"])[y]
    labels = labels.tolist() if as_list else labels
    model = _fit("GeneralizedNystrom", X, labels)
    path = os.path.join(tempfile.mkdtemp(), "m.npz")
    npr.save(model, path)
    back = npr.load(path)
    assert back.classes_.tolist() == [b"a", b"bb", b"c"]
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


def test_classes_save_cannot_store_are_refused_by_name_before_writing():
    import datetime
    import decimal

    X, y = _data()
    path = os.path.join(tempfile.mkdtemp(), "m.npz")
    for values, kind in (
        ([decimal.Decimal("0.5"), decimal.Decimal(2), decimal.Decimal(3)], "Decimal"),
        ([datetime.date(2020, 1, k) for k in (1, 2, 3)], "date"),
    ):
        labels = np.empty(y.size, dtype=object)
        for marker in (None, -1, np.nan):
            labels[:] = [marker if v == -1 else values[v] for v in y]
            model = _fit("GeneralizedNystrom", X, labels)
            with pytest.raises(TypeError, match=rf"'classes_': it holds {kind} .*markers kept"):
                npr.save(model, path)
            assert not os.path.exists(path)
            # the advised mapping keeps the unlabeled samples unlabeled (y.astype(str), the
            # advice before, made them a class 'None' or 'nan') and can be saved
            names = {c: str(c) for c in model.classes_}
            mapped = np.array([names.get(v, v) for v in labels], dtype=object)
            model = _fit("GeneralizedNystrom", X, mapped)
            assert list(model.classes_) == sorted(str(v) for v in values)
            npr.save(model, path)
            os.remove(path)


def test_a_class_named_none_is_a_class_with_a_warning():
    """'None' is what y.astype(str) makes of the marker None, but also a plausible class
    name: it stays a class, and a warning says how to mark unlabeled samples."""
    X, y = _data()
    names = np.array(["None", "Mild", "Severe"])[np.maximum(y, 0)]
    with pytest.warns(UserWarning, match=r"string 'None' \(\d+ samples\), which is a class"):
        model = npr.GeneralizedNystrom(n_landmarks=10, lam=1.0, random_state=0).fit(X, names)
    assert list(model.classes_) == ["Mild", "None", "Severe"]


@pytest.mark.parametrize("name", ["GeneralizedNystrom", "GeneralizedNystrom lam=1", "LogDet"])
def test_plus_minus_one_labels_are_told_that_minus_one_is_unlabeled(name):
    # the SVM convention y in {-1, +1} reads as "class 1 and unlabeled samples"
    X, y = _data()
    pm = np.where(y == 0, -1, 1)
    make = {
        "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(n_landmarks=8, random_state=0),
        "GeneralizedNystrom lam=1": lambda: npr.GeneralizedNystrom(
            n_landmarks=8, lam=1.0, random_state=0
        ),
        "LogDet": lambda: npr.LogDetKernelLearner(n_landmarks=8, max_iter=5, random_state=0),
    }[name]
    n_minus = int(np.count_nonzero(pm == -1))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        make().fit(X, pm)
    hint = f"The other {n_minus} samples are -1, which marks them unlabeled"
    told = [
        w for w in seen if hint in str(w.message) and "np.where(y == -1, 0, y)" in str(w.message)
    ]
    assert told and all(w.filename == __file__ for w in told)  # at the caller's line
    # one class that is not 1 beside -1 markers: partial labels, no hint
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        make().fit(X, np.where(y == 0, -1, 2))
    assert seen and not any("marks them unlabeled" in str(w.message) for w in seen)


def test_numpy_labels_do_not_import_pandas():
    code = (
        "import sys, numpy as np, nystrom_priors as npr\n"
        "from nystrom_priors.side_info import check_labels\n"
        "check_labels(np.array(['a', None], dtype=object), 2)\n"
        "npr.GeneralizedNystrom(n_landmarks=3, lam=1.0).fit(np.eye(4), [0, 1, -1, 0])\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(npr.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("marker", ["all unlabeled", "one labeled"])
def test_a_y_that_labels_fewer_than_two_samples_leaves_the_pairs_alone(name, marker):
    """A Pipeline passes its y along with the pairs: a y that labels no sample (every -1), or,
    for the pair-based learners, a single one (no pair can be drawn from it), adds no pair,
    and the fit is the pairs-only fit, without the warning of a fit that has no side
    information. (GeneralizedNystrom fits one label too: its data term is the labeled rows'
    kernel, and the sample's own entry is one.)"""
    if name == "GeneralizedNystrom" and marker == "one labeled":
        pytest.skip("one label is a data term of J")
    X, _ = _data()
    P = labels_to_pairs(np.where(np.arange(60) % 5 == 0, np.arange(60) % 3, -1))
    y = np.full(60, -1)
    if marker == "one labeled":
        y[1] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = LEARNERS[name]().fit(X, pairs=P).transform(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        both = LEARNERS[name]().fit(X, y, pairs=P).transform(X)
    assert not [w for w in caught if "label" in str(w.message)], [str(w.message) for w in caught]
    np.testing.assert_array_equal(both, alone)
    with pytest.raises(ValueError, match=r"y (has 3 entries|must have shape \(60,\))"):
        LEARNERS[name]().fit(X, [-1, -1, -1], pairs=P)
