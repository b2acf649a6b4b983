"""``feature_names_in_`` follows scikit-learn's convention, with scikit-learn as the oracle.

For every learner and every scenario (names at fit and at the later call: the same, renamed,
reordered, present on one side only, mixed types), the outcome -- accepted, a warning, a
``ValueError`` or a ``TypeError`` -- is that of scikit-learn's ``StandardScaler`` on the same
frames.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import SMALL_LEARNERS

import nystrom_priors as npr

pd = pytest.importorskip("pandas")
preprocessing = pytest.importorskip("sklearn.preprocessing")

LEARNERS = SMALL_LEARNERS

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 4)) + (np.arange(40) % 2)[:, None]
Y = np.arange(40) % 2


def frame(columns):
    return pd.DataFrame(X, columns=columns)


FIT_INPUTS = {
    "names": lambda: frame(list("abcd")),
    "array": lambda: X,
    "int names": lambda: frame([0, 1, 2, 3]),
}
CALL_INPUTS = {
    "same": lambda: frame(list("abcd")),
    "renamed": lambda: frame(list("abce")),
    "reordered": lambda: frame(list("bacd")),
    "array": lambda: X,
    "int names": lambda: frame([0, 1, 2, 3]),
}


def outcome(fn):
    """'ok', 'warn', or the exception's type name, of calling fn."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except (ValueError, TypeError) as exc:
            return type(exc).__name__, str(exc)
    names = [w for w in caught if "feature names" in str(w.message)]
    return ("warn" if names else "ok"), " ".join(str(w.message) for w in names)


@pytest.mark.parametrize("fit_in", sorted(FIT_INPUTS))
@pytest.mark.parametrize("call_in", sorted(CALL_INPUTS))
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_outcome_matches_scikit_learn(name, fit_in, call_in):
    ref = preprocessing.StandardScaler().fit(FIT_INPUTS[fit_in]())
    expected, _ = outcome(lambda: ref.transform(CALL_INPUTS[call_in]()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LEARNERS[name]().fit(FIT_INPUTS[fit_in](), Y)
    if fit_in == "names":
        assert model.feature_names_in_.tolist() == list("abcd")
        assert model.feature_names_in_.dtype == object
    else:
        assert not hasattr(model, "feature_names_in_")
    got, message = outcome(lambda: model.transform(CALL_INPUTS[call_in]()))
    assert got == expected, message
    if call_in == "renamed" and fit_in == "names":
        assert "'e'" in message and "'d'" in message
    if call_in == "reordered" and fit_in == "names":
        assert "same order" in message


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_mixed_names_are_refused_and_the_previous_fit_kept(name):
    with pytest.raises(TypeError):
        preprocessing.StandardScaler().fit(frame(["a", 1, "c", "d"]))  # the oracle refuses too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LEARNERS[name]().fit(frame(list("abcd")), Y)
        before = model.transform(X)
        with pytest.raises(TypeError, match="string names"):
            model.fit(frame(["a", 1, "c", "d"]), Y)
        assert model.feature_names_in_.tolist() == list("abcd")
        np.testing.assert_array_equal(model.transform(X), before)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_refit_on_an_array_forgets_the_names(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LEARNERS[name]().fit(frame(list("abcd")), Y)
        assert hasattr(model, "feature_names_in_")
        model.fit(X, Y)
    assert not hasattr(model, "feature_names_in_")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.transform(X)  # no warning: neither side has names


def test_kernel_and_iter_transform_check_the_names_too():
    model = npr.Nystrom(n_landmarks=6, random_state=0).fit(frame(list("abcd")))
    with pytest.raises(ValueError, match="unseen at fit time"):
        model.kernel(frame(list("abce")))
    with pytest.raises(ValueError, match="unseen at fit time"):
        list(model.iter_transform([frame(list("abce"))]))


def test_streams_slice_a_dataframe_into_row_blocks():
    """A DataFrame is one array to the streaming methods, as to ``transform``: sliced into
    row blocks that keep its columns (so the names are checked), not iterated (its columns'
    labels); a dict is refused as neither an array nor an iterable of blocks."""
    df = frame(list("abcd"))
    model = npr.Nystrom(n_landmarks=6, random_state=0).fit(df)
    G = np.vstack([b for _, b in model.iter_transform(df, block_rows=7)])
    np.testing.assert_array_equal(G, model.transform(df))
    K = np.vstack([b for _, b in model.iter_kernel_rows(df, block_rows=7)])
    np.testing.assert_allclose(K, model.kernel(df), rtol=1e-12, atol=1e-14)
    E = np.vstack([b for _, b in npr.iter_extrapolate(df, X[:5], width=1.0, block_rows=7)])
    np.testing.assert_array_equal(E, npr.extrapolate(X, X[:5], width=1.0))
    with pytest.raises(ValueError, match="unseen at fit time"):
        list(model.iter_transform(frame(list("abce")), block_rows=7))
    with pytest.raises(TypeError, match="iterable of 2-D row blocks, got dict"):
        list(model.iter_transform({"a": X}))


def test_a_stream_of_one_array_warns_about_its_names_once():
    """An array streamed in blocks is one input: a model fitted on a DataFrame warns once
    that it has no names, not once per block (each block's message named its row, so the
    warnings registry did not fold them: six here, for 40 rows in blocks of 7)."""
    model = npr.Nystrom(n_landmarks=6, random_state=0).fit(frame(list("abcd")))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        G = np.vstack([b for _, b in model.iter_transform(X, block_rows=7)])
    assert [str(w.message) for w in rec] == [
        "X does not have valid feature names, but Nystrom was fitted with feature names."
    ]
    np.testing.assert_array_equal(G, model.transform(frame(list("abcd"))))


@pytest.mark.parametrize("output", ["default", "pandas"])
def test_the_warning_points_at_the_callers_line(output):
    model = npr.Nystrom(n_landmarks=6, random_state=0).fit(frame(list("abcd")))
    model.set_output(transform=output)  # pandas: one more wrapper between user and check
    with pytest.warns(UserWarning, match="does not have valid feature names") as record:
        model.transform(X)
    assert record[0].filename == __file__


def test_kernel_names_the_argument_without_feature_names():
    """kernel(A, B) of a model fitted on a DataFrame, given two arrays, warned twice with the
    same "X does not have valid feature names"; each warning names its argument."""
    model = npr.Nystrom(n_landmarks=6, random_state=0).fit(frame(list("abcd")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.kernel(X[:3], X[:4])
    said = sorted(str(w.message).split(" ")[0] for w in caught)
    assert said == ["A", "B"] and {w.filename for w in caught} == {__file__}


def test_names_survive_save_and_load(tmp_path):
    model = npr.GeneralizedNystrom(n_landmarks=6, random_state=0).fit(frame(list("abcd")), Y)
    path = tmp_path / "m.npz"
    npr.save(model, path)
    back = npr.load(path)
    assert back.feature_names_in_.dtype == object
    assert back.feature_names_in_.tolist() == list("abcd")
    with pytest.raises(ValueError, match="unseen at fit time"):
        back.transform(frame(list("abce")))


@pytest.mark.parametrize("fit_in", ["names", "array"])
@pytest.mark.parametrize(
    "given", [None, list("abcd"), list("abce"), ["a", "b"], ["x0", "x1", "x2", "x3"]]
)
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_get_feature_names_out_checks_input_features_as_scikit_learn(name, fit_in, given):
    """``input_features`` is accepted or refused as by scikit-learn's own prefix-named
    transformer (``PCA``) fitted on the same input; the names out never depend on it."""
    decomposition = pytest.importorskip("sklearn.decomposition")
    data = FIT_INPUTS[fit_in]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LEARNERS[name]().fit(data, Y)
    ref = decomposition.PCA(2).fit(data)
    expected = outcome(lambda: ref.get_feature_names_out(given))[0]
    assert outcome(lambda: model.get_feature_names_out(given))[0] == expected
    if expected == "ok":
        assert list(model.get_feature_names_out(given)) == list(model.get_feature_names_out())
