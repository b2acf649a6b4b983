"""scikit-learn's ``set_output`` protocol: pandas DataFrames out of transform / fit_transform,
on the learners alone, under scikit-learn's global configuration and inside a Pipeline.

The oracle for the values is the default ndarray output of the same fitted model; for the
container, scikit-learn's own contract (columns = ``get_feature_names_out()``, index = the
input DataFrame's index) as its estimator checks state it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import SMALL_LEARNERS

import nystrom_priors as npr

pd = pytest.importorskip("pandas")

LEARNERS = SMALL_LEARNERS


def _data(n=40):
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 4)) + y[:, None]
    index = pd.Index([f"s{i}" for i in range(n)], name="sample")
    return pd.DataFrame(X, columns=list("abcd"), index=index), np.where(y == 1, "yes", "no")


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_pandas_output_has_feature_names_and_the_input_index(name):
    df, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = LEARNERS[name]().fit(df, y)
        ref = plain.transform(df.to_numpy())
        model = LEARNERS[name]().set_output(transform="pandas")
        assert model.set_output(transform=None) is model  # None: unchanged
        out_ft = model.fit_transform(df, y)
    out = model.transform(df)
    for got in (out, out_ft):
        assert isinstance(got, pd.DataFrame)
        assert got.columns.tolist() == model.get_feature_names_out().tolist()
        assert got.index.equals(df.index)
        np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-12, atol=1e-12)
    # an ndarray input gets a RangeIndex; "default" gives the ndarray back
    assert model.transform(df.to_numpy()).index.equals(pd.RangeIndex(len(df)))
    assert isinstance(model.set_output(transform="default").transform(df), np.ndarray)


def test_global_sklearn_config_applies_without_own_setting():
    sklearn = pytest.importorskip("sklearn")
    df, y = _data()
    model = npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0).fit(df, y)
    with sklearn.config_context(transform_output="pandas"):
        assert isinstance(model.transform(df), pd.DataFrame)
        own = npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0)
        own.set_output(transform="default").fit(df, y)
        assert isinstance(own.transform(df), np.ndarray)  # its own setting wins
    assert isinstance(model.transform(df), np.ndarray)


def test_set_output_on_a_pipeline_reaches_the_learner():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    df, y = _data()
    pipe = make_pipeline(
        StandardScaler(), npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0)
    )
    pipe.set_output(transform="pandas")
    out = pipe.fit_transform(df, y)
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(df.index)
    assert out.columns.tolist() == [f"generalizednystrom{i}" for i in range(out.shape[1])]
    # the values are those of the same pipeline with ndarray output
    plain = make_pipeline(
        StandardScaler(), npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0)
    )
    np.testing.assert_allclose(out.to_numpy(), plain.fit_transform(df, y), rtol=1e-12)
    # clone keeps the setting (scikit-learn copies _sklearn_output_config)
    cloned = clone(pipe[-1])
    assert isinstance(cloned.fit(df, y).transform(df), pd.DataFrame)
    assert sklearn.__version__


def test_bad_set_output_value_is_refused():
    with pytest.raises(ValueError, match=r"must be one of \['default', 'pandas'\] or None, got "):
        npr.Nystrom().set_output(transform="polars")


def test_set_output_does_not_change_params_or_saving(tmp_path):
    df, y = _data()
    model = npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0)
    params = model.get_params()
    model.set_output(transform="pandas").fit(df, y)
    assert model.get_params() == params
    npr.save(model, tmp_path / "m.npz")
    back = npr.load(tmp_path / "m.npz")  # the configuration is kept, as pickle and clone do
    out = back.transform(df)
    assert isinstance(out, pd.DataFrame) and out.index.equals(df.index)
    pd.testing.assert_frame_equal(out, model.transform(df))
    with np.load(tmp_path / "m.npz") as f:  # format 2: readers of 1 are told to upgrade
        assert int(f["__format_version__"]) == 2
    plain = npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0).fit(df, y)
    npr.save(plain, tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz") as f:  # without a configuration: format 1, as before
        assert int(f["__format_version__"]) == 1
    assert isinstance(npr.load(tmp_path / "p.npz").transform(df), np.ndarray)


def test_a_tampered_output_configuration_is_refused(tmp_path):
    import json

    df, y = _data()
    model = npr.Nystrom(n_landmarks=6, random_state=0).set_output(transform="pandas").fit(df)
    npr.save(model, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as f:
        entries = dict(f)
    for output, match in [({"transform": "polars"}, "output.transform"), ([1], "output")]:
        meta = json.loads(str(entries["__meta__"]))
        meta["output"] = output
        np.savez(tmp_path / "bad.npz", **{**entries, "__meta__": np.array(json.dumps(meta))})
        with pytest.raises(ValueError, match=match):
            npr.load(tmp_path / "bad.npz")


def test_internal_uses_stay_arrays_under_pandas_output():
    df, y = _data()
    model = npr.GeneralizedNystrom(n_landmarks=6, lam=1.0, random_state=0).fit(df, y)
    K = model.kernel(df.to_numpy())
    model.set_output(transform="pandas")
    np.testing.assert_array_equal(model.kernel(df), K)
    assert isinstance(model.kernel(df), np.ndarray)
    rows = np.vstack([block for _, block in model.iter_kernel_rows(df.to_numpy(), block_rows=7)])
    np.testing.assert_allclose(rows, K, rtol=1e-12, atol=1e-12)
    pairs = df.to_numpy()[np.arange(10).reshape(5, 2)]
    assert isinstance(model.pair_distance(pairs), np.ndarray)
    da = pytest.importorskip("dask.array")
    lazy = model.transform(da.from_array(df.to_numpy(), chunks=(15, 4)))
    np.testing.assert_allclose(lazy.compute(), model.transform(df).to_numpy(), rtol=1e-12)
