"""Persistence: exact round trips and clear refusals."""

import json
import zipfile

import numpy as np
import pytest

from nystrom_priors import Nystrom, load, save


@pytest.fixture
def fitted(rng):
    X = rng.normal(size=(80, 3))
    return Nystrom(n_landmarks=12, random_state=0).fit(X), X


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_round_trip_is_bit_exact(tmp_path, rng, dtype):
    X = rng.normal(size=(80, 3)).astype(dtype)
    model = Nystrom(n_landmarks=12, kernel="laplacian", random_state=0).fit(X)
    save(model, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert type(back) is Nystrom and back.get_params() == model.get_params()
    for key, value in vars(model).items():
        if key.endswith("_"):
            got = getattr(back, key)
            if isinstance(value, np.ndarray):
                assert got.dtype == value.dtype
                np.testing.assert_array_equal(got, value)
            else:
                assert got == value and type(got) is type(value)
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


def test_user_landmarks_parameter_round_trips(tmp_path, rng):
    X = rng.normal(size=(50, 2))
    model = Nystrom(landmarks=X[:6], n_landmarks=6).fit(X)
    save(model, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.landmarks, X[:6])
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


def test_refuses_foreign_truncated_future_and_unknown(tmp_path, fitted):
    model, _ = fitted
    np.savez(tmp_path / "foreign.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a nystrom_priors model file"):
        load(tmp_path / "foreign.npz")

    save(model, tmp_path / "good.npz")
    raw = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated or corrupted"):
        load(tmp_path / "trunc.npz")

    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="truncated or corrupted"):
        load(tmp_path / "text.npz")

    def rewrite(name, **changes):
        with np.load(tmp_path / "good.npz") as data:
            arrays = {k: data[k] for k in data.files}
        arrays.update(changes)
        np.savez(tmp_path / name, **arrays)

    rewrite("future.npz", __format_version__=np.array(99))
    with pytest.raises(ValueError, match="format version 99.*upgrade nystrom_priors"):
        load(tmp_path / "future.npz")

    with np.load(tmp_path / "good.npz") as data:
        meta = json.loads(str(data["__meta__"]))
    meta["class"] = "Evil"
    rewrite("unknown.npz", __meta__=np.array(json.dumps(meta)))
    with pytest.raises(ValueError, match="unknown estimator class 'Evil'"):
        load(tmp_path / "unknown.npz")

    rewrite("pickled.npz", **{"attr:x_": np.array([object()], dtype=object)})
    with pytest.raises(ValueError, match="pickled .object. arrays"):
        load(tmp_path / "pickled.npz")

    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.npz")
    assert zipfile.is_zipfile(tmp_path / "good.npz")


def test_refuses_unfitted_and_foreign_objects(tmp_path):
    from nystrom_priors import NotFittedError

    with pytest.raises(NotFittedError):
        save(Nystrom(), tmp_path / "m.npz")
    with pytest.raises(TypeError, match="handles the estimators of nystrom_priors"):
        save(object(), tmp_path / "m.npz")
