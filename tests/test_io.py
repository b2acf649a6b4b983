"""Persistence: exact round trips, clear refusals of untrusted files, atomic saves."""

import copy
import fractions
import io
import json
import os
import stat
import sys
import tracemalloc
import warnings
import zipfile

import model_files as mf
import numpy as np
import pytest

from nystrom_priors import GeneralizedNystrom, Nystrom, load, save


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


# ----- every class round-trips; the schema refuses what does not fit ------------------------


@pytest.fixture(scope="module")
def models():
    return mf.fitted_models()


@pytest.mark.parametrize("name", sorted(mf.fitted_models()))
def test_every_class_round_trips_identically(tmp_path, models, name):
    model = models[name]
    save(model, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    mf.assert_identical(model, back)
    X, _ = mf.training_data()
    Xt = X.astype(getattr(model, "X_fit_", getattr(model, "landmarks_", X)).dtype)
    np.testing.assert_array_equal(back.transform(Xt), model.transform(Xt))


def test_files_without_the_fitted_kernel_attributes_still_load(tmp_path, models):
    """Files written before transform used kernel_ / degree_ / coef0_ (and BCDNPKL's graph
    settings) derive them from the saved parameters."""
    for name in ("Nystrom-user-landmarks", "BCDNPKL"):
        model = models[name]
        raw = mf.saved_bytes(model, tmp_path)
        keys = ("kernel_", "degree_", "coef0_", "graph_type_", "n_neighbors_", "weights_")
        old = mf.rewrite(raw, meta_update=lambda m: [m["attrs"].pop(k, None) for k in keys])
        (tmp_path / "old.npz").write_bytes(old)
        back = load(tmp_path / "old.npz")
        mf.assert_identical(model, back)


def _refused(tmp_path, raw, *fields):
    path = tmp_path / "bad-model.npz"
    path.write_bytes(raw)
    with pytest.raises(ValueError) as info:
        load(path)
    assert type(info.value) is ValueError  # exactly, not a subclass
    message = str(info.value)
    assert str(path) in message, message
    for field in fields:
        assert field in message, (field, message)
    return message


def _set(section, key, value):
    def update(m):
        m[section][key] = value

    return update


def _drop(section, key):
    def update(m):
        del m[section][key]

    return update


# (model, mutation, words the message must contain); each of these loads on 48d5a79 and then
# fails later, inside transform, or silently gives a different model
def _rotation(P):  # a fixed orthogonal matrix of P's column count
    k = P.shape[1]
    return np.linalg.qr(np.random.default_rng(0).normal(size=(k, k)))[0]


SCHEMA_CASES = {
    "landmarks-width": (
        "Nystrom",
        lambda e: {"attr:landmarks_": e["attr:landmarks_"][:, :2]},
        ["landmarks_", "shape"],
    ),
    "landmarks-rows": (
        "Nystrom",
        lambda e: {"attr:landmarks_": e["attr:landmarks_"][:-1]},
        ["eigenvalues_"],
    ),
    "landmarks-nan": (
        "Nystrom",
        lambda e: {
            "attr:landmarks_": np.where(
                np.arange(e["attr:landmarks_"].size).reshape(e["attr:landmarks_"].shape) == 3,
                np.nan,
                e["attr:landmarks_"],
            )
        },
        ["landmarks_", "finite"],
    ),
    "landmarks-int": (
        "Nystrom",
        lambda e: {"attr:landmarks_": e["attr:landmarks_"].astype(np.int64)},
        ["landmarks_", "dtype"],
    ),
    "landmarks-complex": (
        "Nystrom",
        lambda e: {"attr:landmarks_": e["attr:landmarks_"] + 0j},
        ["landmarks_"],
    ),
    "landmarks-text": (
        "Nystrom",
        lambda e: {"attr:landmarks_": np.array(["a", "b"])},
        ["landmarks_"],
    ),
    "projection-shape": (
        "Nystrom",
        lambda e: {"attr:projection_": e["attr:projection_"].T[:3]},
        ["projection_", "shape"],
    ),
    "eigenvalue-count": ("Nystrom", lambda e: {"attr:eigenvalues_": np.ones(20)}, ["eigenvalues_"]),
    "eigenvalue-negative": (
        "Nystrom",
        lambda e: {"attr:eigenvalues_": -e["attr:eigenvalues_"]},
        ["eigenvalues_", "> 0"],
    ),
    "S0-shape": ("Nystrom", lambda e: {"attr:S0_": e["attr:S0_"][:, :-1]}, ["S0_"]),
    "unknown-array": ("Nystrom", lambda e: {"attr:transform": np.zeros(3)}, ["transform"]),
    "bad-entry-name": ("Nystrom", lambda e: {"evil": np.zeros(3)}, ["evil"]),
    "user-landmarks-width": (
        "Nystrom-user-landmarks",
        lambda e: {"param:landmarks": e["param:landmarks"][:, :1]},
        ["landmarks"],
    ),
    "S-shape": ("GeneralizedNystrom", lambda e: {"attr:S_": np.eye(3)}, ["S_", "shape"]),
    "S-inf": ("GeneralizedNystrom", lambda e: {"attr:S_": e["attr:S_"] * np.inf}, ["S_", "finite"]),
    "gn-projection-rows": (
        "GeneralizedNystrom",
        lambda e: {"attr:projection_": e["attr:projection_"][1:]},
        ["projection_"],
    ),
    "gn-lam-path": (
        "GeneralizedNystrom-nka",
        lambda e: {"attr:lam_path_": e["attr:lam_path_"][:-1]},
        ["criterion_path_"],
    ),
    "B-shape": ("LogDetKernelLearner", lambda e: {"attr:B_": e["attr:B_"][:, :-1]}, ["B_"]),
    "P0-nan": (
        "LogDetKernelLearner",
        lambda e: {"attr:P0_": e["attr:P0_"] * np.nan},
        ["P0_", "finite"],
    ),
    "pairs-sign": (
        "LogDetKernelLearner",
        lambda e: {"attr:pairs_": e["attr:pairs_"] * np.array([1, 1, 2])},
        ["pairs_"],
    ),
    "pairs-float": (
        "LogDetKernelLearner",
        lambda e: {"attr:pairs_": e["attr:pairs_"] * 1.0},
        ["pairs_", "dtype"],
    ),
    "dual-count": (
        "LogDetKernelLearner",
        lambda e: {"attr:dual_": e["attr:dual_"][:-1]},
        ["dual_"],
    ),
    "bounds-zero": (
        "LogDetKernelLearner",
        lambda e: {"attr:bounds_": 0 * e["attr:bounds_"]},
        ["bounds_"],
    ),
    "slack-bounds-negative": (
        "LogDetKernelLearner",
        lambda e: {"attr:slack_bounds_": -e["attr:slack_bounds_"]},
        ["slack_bounds_"],
    ),
    "similarity-count": (
        "LogDetKernelLearner-linear",
        lambda e: {"attr:similarity_bounds_": np.zeros(3)},
        ["similarity_bounds_"],
    ),
    "linear-with-landmarks": (
        "LogDetKernelLearner-linear",
        lambda e: {"attr:landmarks_": np.zeros((3, 3))},
        ["landmarks_"],
    ),
    "vn-W": ("VonNeumannKernelLearner", lambda e: {"attr:W_": e["attr:W_"][:-1]}, ["W_"]),
    "vn-basis": (
        "VonNeumannKernelLearner",
        lambda e: {"attr:basis_": e["attr:basis_"][1:]},
        ["basis_"],
    ),
    "embedding-rows": (
        "BCDNPKL",
        lambda e: {"attr:embedding_": e["attr:embedding_"][:-1]},
        ["embedding_"],
    ),
    "X-fit-width": ("BCDNPKL", lambda e: {"attr:X_fit_": e["attr:X_fit_"][:, :2]}, ["X_fit_"]),
    "bcd-pair-out-of-range": (
        "BCDNPKL",
        lambda e: {"attr:pairs_": e["attr:pairs_"] + 1000},
        ["pairs_"],
    ),
    "bcd-constrained": (
        "BCDNPKL",
        lambda e: {"attr:constrained_": e["attr:constrained_"][::-1]},
        ["constrained_"],
    ),
    "bcd-degrees": ("BCDNPKL", lambda e: {"attr:degrees_": 0 * e["attr:degrees_"]}, ["degrees_"]),
    "bcd-V": ("BCDNPKL", lambda e: {"attr:V_": e["attr:V_"][:, :1]}, ["V_"]),
    # derived arrays that no longer agree with what they are derived from (each loaded, and
    # transformed with the edited array, on d821d88)
    "ny-projection-scaled": (
        "Nystrom",
        lambda e: {"attr:projection_": e["attr:projection_"] * 1.001},
        ["projection_", "S0_", "altered"],
    ),
    "ny-S0-edited": (
        "Nystrom",
        lambda e: {"attr:S0_": e["attr:S0_"] + 1e-3 * np.abs(e["attr:S0_"]).max()},
        ["'S0_'", "eigenvalues_"],
    ),
    "ny-eigenvalues-edited": (
        "Nystrom",
        lambda e: {"attr:eigenvalues_": e["attr:eigenvalues_"] * 2.0},
        ["'S0_'", "eigenvalues_"],
    ),
    # eigenvalues_ of the learners is tied to S0_ only (transform does not read it)
    "gn-eigenvalues-edited": (
        "GeneralizedNystrom",
        lambda e: {"attr:eigenvalues_": e["attr:eigenvalues_"] * 1.01},
        ["'S0_'", "eigenvalues_"],
    ),
    "logdet-eigenvalues-edited": (
        "LogDetKernelLearner",
        lambda e: {
            "attr:eigenvalues_": np.full_like(e["attr:eigenvalues_"], e["attr:eigenvalues_"][0])
        },
        ["'S0_'", "eigenvalues_"],
    ),
    "gn-S-edited": (
        "GeneralizedNystrom",
        lambda e: {"attr:S_": e["attr:S_"] * 1.01},
        ["projection_", "S_ (P P^T = S_)"],
    ),
    "logdet-B-edited": (
        "LogDetKernelLearner",
        lambda e: {"attr:B_": e["attr:B_"] + 1e-3 * np.eye(e["attr:B_"].shape[0])},
        ["projection_", "P0_ B_"],
    ),
    "vn-spectrum-edited": (
        "VonNeumannKernelLearner",
        lambda e: {"attr:spectrum_": e["attr:spectrum_"] * 2.0},
        ["projection_", "spectrum_"],
    ),
    # P Q (Q orthogonal) still factors S0_, but its columns are no longer W's eigenvectors
    "ny-projection-rotated": (
        "Nystrom",
        lambda e: {"attr:projection_": e["attr:projection_"] @ _rotation(e["attr:projection_"])},
        ["projection_", "P^T P = diag(1 / ev)"],
    ),
    # a training set of other rows: the error named n_neighbors_, whose range n sets
    "bcd-X_fit-rows": (
        "BCDNPKL",
        lambda e: {"attr:X_fit_": e["attr:X_fit_"][:3]},
        ["'X_fit_'", "embedding_"],
    ),
    "bcd-V-edited": ("BCDNPKL", lambda e: {"attr:V_": e["attr:V_"] + 0.1}, ["V_", "embedding_"]),
}

META_CASES = {
    "meta-not-object": ("Nystrom", None, ["__meta__"]),
    "params-not-object": ("Nystrom", lambda m: m.update(params=[1, 2]), ["__meta__.params"]),
    "attrs-missing": ("Nystrom", lambda m: m.pop("attrs"), ["__meta__.attrs"]),
    "class-not-string": ("Nystrom", lambda m: m.update({"class": 3}), ["__meta__.class"]),
    "meta-unknown-key": ("Nystrom", lambda m: m.update(pickle="x"), ["__meta__.pickle"]),
    "unknown-param": ("Nystrom", _set("params", "evil", 1), ["params.evil"]),
    "missing-param": ("Nystrom", _drop("params", "n_landmarks"), ["params.n_landmarks"]),
    "negative-n-landmarks": ("Nystrom", _set("params", "n_landmarks", -3), ["n_landmarks"]),
    "string-n-landmarks": ("Nystrom", _set("params", "n_landmarks", "8"), ["n_landmarks"]),
    "nan-width": ("Nystrom", _set("params", "width", float("nan")), ["width"]),
    "nan-gamma": ("Nystrom", _set("params", "gamma", float("nan")), ["gamma"]),
    "unknown-kernel": ("Nystrom", _set("params", "kernel", "sigmoid"), ["kernel"]),
    "negative-random-state": ("Nystrom", _set("params", "random_state", -1), ["random_state"]),
    "object-param": ("Nystrom", _set("params", "rcond", {"a": 1}), ["params.rcond"]),
    "missing-attr": ("Nystrom", _drop("attrs", "gamma_"), ["gamma_", "missing"]),
    "unknown-attr": ("Nystrom", _set("attrs", "fit", 1), ["attrs.fit"]),
    "attr-type": ("Nystrom", _set("attrs", "n_features_in_", "3"), ["n_features_in_"]),
    "attr-negative-gamma": ("Nystrom", _set("attrs", "gamma_", -1.0), ["gamma_"]),
    "attr-width-mismatch": ("Nystrom", _set("attrs", "width_", 2.0), ["width_"]),
    "attr-kernel": ("Nystrom", _set("attrs", "kernel_", "sigmoid"), ["kernel_"]),
    "gn-bad-lam": ("GeneralizedNystrom", _set("params", "lam", "best"), ["lam"]),
    "gn-converged-type": ("GeneralizedNystrom", _set("attrs", "converged_", 1), ["converged_"]),
    "logdet-nan-gamma": ("LogDetKernelLearner", _set("params", "gamma", float("nan")), ["gamma"]),
    "logdet-percentiles": (
        "LogDetKernelLearner",
        _set("params", "percentiles", {"__tuple__": [95.0, 5.0]}),
        ["percentiles"],
    ),
    "logdet-n-iter": ("LogDetKernelLearner", _set("attrs", "n_iter_", 1000), ["path_"]),
    "logdet-init": ("LogDetKernelLearner", _set("attrs", "init_", "pca"), ["init_"]),
    "bcd-loss": ("BCDNPKL", _set("params", "loss", "log"), ["loss"]),
    "bcd-sigma": ("BCDNPKL-dense", _set("attrs", "sigma_", None), ["sigma_"]),
    "bcd-rank": ("BCDNPKL", _set("attrs", "rank_", 7), ["rank_"]),
    "bcd-neighbors": ("BCDNPKL", _set("attrs", "n_neighbors_", 0), ["n_neighbors_"]),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_schema_refuses_inconsistent_arrays(tmp_path, models, case):
    name, mutate, fields = SCHEMA_CASES[case]
    raw = mf.saved_bytes(models[name], tmp_path)
    _refused(tmp_path, mf.rewrite(raw, **mutate(mf.entries(raw))), *fields)


@pytest.mark.parametrize("case", sorted(META_CASES))
def test_schema_refuses_malformed_metadata_and_parameters(tmp_path, models, case):
    name, update, fields = META_CASES[case]
    raw = mf.saved_bytes(models[name], tmp_path)
    if update is None:
        bad = mf.rewrite(raw, __meta__=np.array("[1, 2]"))
    else:
        bad = mf.rewrite(raw, meta_update=update)
    _refused(tmp_path, bad, *fields)


@pytest.mark.parametrize(
    "entry, value, field",
    [
        ("__meta__", np.array("{not json"), "__meta__"),
        ("__meta__", np.array([1, 2]), "__meta__"),
        ("__format_version__", np.array(1.0), "__format_version__"),
        ("__format_version__", np.array([1]), "__format_version__"),
    ],
)
def test_refuses_malformed_special_entries(tmp_path, models, entry, value, field):
    raw = mf.saved_bytes(models["Nystrom"], tmp_path)
    _refused(tmp_path, mf.rewrite(raw, **{entry: value}), field)


def test_refused_files_would_crash_later_on_the_old_loader(tmp_path, models):
    """The failure mode the schema prevents: a file that loads and fails inside transform."""
    raw = mf.saved_bytes(models["Nystrom"], tmp_path)
    e = mf.entries(raw)
    bad = mf.rewrite(raw, **{"attr:projection_": e["attr:projection_"][:, :2].T.copy()})
    _refused(tmp_path, bad, "projection_")


# ----- sizes are checked before anything is allocated ---------------------------------------


def _npy_header(shape, dtype="<f8"):
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    header = header.encode("latin1")
    pad = 64 - (10 + len(header) + 1) % 64
    header += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def _with_member(raw, name, payload, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if info.filename != name:
                dst.writestr(info, src.read(info))
        dst.writestr(name, payload, compress_type=compress)
    return buf.getvalue()


def _peak_of_load(path):
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            load(path)
        assert type(info.value) is ValueError
        return tracemalloc.get_traced_memory()[1], str(info.value)
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", [(20_000, 10_000), (10**9, 10**9), (2**62,)])
def test_array_header_claiming_more_than_the_file_is_refused_without_allocating(
    tmp_path, models, shape
):
    raw = mf.saved_bytes(models["Nystrom"], tmp_path)
    bad = _with_member(raw, "attr:S0_.npy", _npy_header(shape) + b"\0" * 64)
    path = tmp_path / "bomb.npz"
    path.write_bytes(bad)
    peak, message = _peak_of_load(path)
    assert peak < 8 << 20, peak  # the claim is 1.6 GB and more
    assert "attr:S0_" in message and str(path) in message


def test_zip_member_claiming_a_huge_expansion_is_refused(tmp_path, models):
    raw = mf.saved_bytes(models["Nystrom"], tmp_path)
    # a genuine zip bomb: 200 MB of zeros deflate to 200 kB
    bomb = _npy_header((25_000_000,)) + bytes(200_000_000)
    bad = _with_member(raw, "attr:S0_.npy", bomb, compress=zipfile.ZIP_DEFLATED)
    path = tmp_path / "bomb.npz"
    path.write_bytes(bad)
    peak, message = _peak_of_load(path)
    assert peak < 8 << 20, peak
    assert "out of proportion" in message and "attr:S0_" in message
    # a forged size field on a stored member
    data = bytearray(raw)
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        info = zf.getinfo("attr:S0_.npy")
    cd = data.rfind(b"PK\x01\x02", 0, len(data))
    while cd >= 0:
        name_len = int.from_bytes(data[cd + 28 : cd + 30], "little")
        if data[cd + 46 : cd + 46 + name_len] == b"attr:S0_.npy":
            data[cd + 24 : cd + 28] = (info.file_size * 1000).to_bytes(4, "little")
            break
        cd = data.rfind(b"PK\x01\x02", 0, cd)
    path.write_bytes(bytes(data))
    peak, message = _peak_of_load(path)
    assert "attr:S0_" in message


# ----- atomic save --------------------------------------------------------------------------


def _listing(directory):
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("where", ["savez", "fsync", "replace", "interrupt"])
def test_failed_save_leaves_the_previous_file_intact(tmp_path, models, monkeypatch, where):
    path = tmp_path / "model.npz"
    save(models["Nystrom"], path)
    before = path.read_bytes()
    listing = _listing(tmp_path)
    real_savez = np.savez

    def broken_savez(fh, **arrays):
        real_savez(fh, **arrays)  # the whole archive is written, then the disk fails
        fh.write(b"garbage")
        raise OSError(28, "No space left on device")

    def interrupted_savez(fh, **arrays):
        fh.write(b"PK\x03\x04partial")
        raise KeyboardInterrupt

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error")

    if where == "savez":
        monkeypatch.setattr(np, "savez", broken_savez)
    elif where == "interrupt":
        monkeypatch.setattr(np, "savez", interrupted_savez)
    else:
        monkeypatch.setattr(os, where, broken)
    expected = KeyboardInterrupt if where == "interrupt" else OSError
    with pytest.raises(expected):
        save(models["GeneralizedNystrom"], path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _listing(tmp_path) == listing
    mf.assert_identical(load(path), models["Nystrom"])


def test_save_refuses_a_model_that_would_not_load(tmp_path, models):
    path = tmp_path / "model.npz"
    save(models["Nystrom"], path)
    before = path.read_bytes()
    broken = copy.deepcopy(models["Nystrom"]).set_params(n_landmarks=-1)
    with pytest.raises(ValueError, match="n_landmarks"):
        save(broken, path)
    assert path.read_bytes() == before and _listing(tmp_path) == ["model.npz"]


def test_save_keeps_permissions_and_refuses_a_directory(tmp_path, models):
    path = tmp_path / "model.npz"
    save(models["Nystrom"], path)
    os.chmod(path, 0o600)
    save(models["BCDNPKL"], path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert type(load(path)).__name__ == "BCDNPKL"
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(OSError):
        save(models["Nystrom"], tmp_path / "dir.npz")
    assert _listing(tmp_path) == ["dir.npz", "model.npz"]
    # and load names a directory for what it is, not as a corrupted archive
    with pytest.raises(IsADirectoryError, match="dir.npz'.*is a directory"):
        load(tmp_path / "dir.npz")


@pytest.mark.parametrize("length", [200, 238, 250, 255])
@pytest.mark.parametrize("char", ["m", "\u00e9"])
def test_save_to_a_name_as_long_as_the_file_system_allows(tmp_path, models, length, char):
    # the temporary file's name is the target's plus 18 bytes: it must not exceed NAME_MAX
    # where the target's own name does not (two-byte characters: cut on a character boundary)
    limit = os.pathconf(tmp_path, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    name = char * ((min(length, limit) - 4) // len(char.encode())) + ".npz"
    path = tmp_path / name
    save(models["Nystrom"], path)
    assert _listing(tmp_path) == [name]
    assert type(load(path)).__name__ == "Nystrom"


def test_save_refuses_a_path_ending_with_a_separator(tmp_path, models):
    # open("model.npz/", "wb") fails with EISDIR; realpath used to drop the slash and save
    with pytest.raises(IsADirectoryError, match="ends with a path separator"):
        save(models["Nystrom"], str(tmp_path / "model.npz") + os.sep)
    assert _listing(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_save_errors_name_the_path_given_and_what_is_wrong(tmp_path, models):
    """A NUL in the path, a file where the directory should be and a loop of symbolic links
    gave "embedded null byte", "directory ... does not exist" (it exists, as a file) and a
    bare Errno 40; each now names the path given and the reason, and writes nothing."""
    (tmp_path / "afile").write_bytes(b"")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    cases = [
        (str(tmp_path / "a\0b.npz"), ValueError, r"a\\x00b.npz'.*cannot contain a NUL"),
        (tmp_path / "afile" / "m.npz", NotADirectoryError, r"m.npz'.*afile' is not a directory"),
        (tmp_path / "loop1", OSError, r"cannot save to '.*loop1'.*symbolic links"),
    ]
    for path, kind, match in cases:
        with pytest.raises(kind, match=match):
            save(models["Nystrom"], path)
    assert _listing(tmp_path) == ["afile", "loop1", "loop2"]


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_save_beyond_a_file_size_limit_names_the_path_and_keeps_the_file(tmp_path, models):
    """RLIMIT_FSIZE below the archive's size: the write fails with EFBIG, which reached the
    user as a bare "File too large". The error names the path and says the file is intact;
    the old file and the directory are as they were (in a child process, whose limit does
    not outlive it)."""
    import subprocess

    path = tmp_path / "model.npz"
    save(models["Nystrom"], path)
    before = path.read_bytes()
    child = (
        "import resource, signal, sys\n"
        "from nystrom_priors import load, save\n"
        "model = load(sys.argv[1])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))\n"
        "try:\n"
        "    save(model, sys.argv[1])\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "model.npz': File too large; the file there is unchanged" in out.stdout, out.stdout
    assert path.read_bytes() == before and _listing(tmp_path) == ["model.npz"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_load_refuses_a_device_or_fifo_at_once(tmp_path):
    """``zipfile.is_zipfile`` reads a character device to its end (``/dev/zero``: memory
    without bound) and blocks opening a FIFO with no writer: load refuses both before
    opening them. The FIFO is tried in a thread, so that the old behaviour fails the test
    instead of hanging it."""
    import threading

    fifo = tmp_path / "model.npz"
    os.mkfifo(fifo)
    outcome = []

    def attempt():
        try:
            load(fifo)
        except ValueError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the old code's open() so the thread can end
        with open(fifo, "wb"):
            pass
    assert outcome and "model.npz': it is not a regular file" in outcome[0]
    if os.path.exists("/dev/zero"):  # reached only once the FIFO passed: never the old code
        with pytest.raises(ValueError, match="/dev/zero'.*not a regular file"):
            load("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("swap_at", [1, 2])
def test_load_reads_the_file_it_checked(tmp_path, models, monkeypatch, swap_at):
    """load checks what the path is and then reads it: were it to open the path again after
    its last check, a path swapped for a FIFO (or a device) in between would be read as one,
    and block (or exhaust memory). The swap is made at load's first or second regular-file
    check: swapped before the file is opened, it is refused as what it has become; swapped
    after, the file that was opened and checked is read. Tried in a thread, so that a
    reader of the swapped path fails the test instead of hanging it."""
    import stat
    import threading

    real = tmp_path / "real.npz"
    save(models["Nystrom"], real)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "model.npz"
    link.symlink_to(real)
    real_is_reg = stat.S_ISREG
    calls = []

    def is_reg_then_swap(mode):
        calls.append(mode)
        if len(calls) == swap_at:
            swap = tmp_path / "swap"
            swap.symlink_to(fifo)
            os.replace(swap, link)
        return real_is_reg(mode)

    monkeypatch.setattr(stat, "S_ISREG", is_reg_then_swap)
    outcome = []

    def attempt():
        try:
            outcome.append(load(link))
        except ValueError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock a reader of the FIFO so the thread can end
        with open(fifo, "wb"):
            pass
        worker.join(timeout=20)
    assert link.resolve() == fifo  # the swap was made
    assert outcome, "load blocked on the swapped path"
    if swap_at == 1:
        assert "model.npz': it is not a regular file" in outcome[0]
    else:
        mf.assert_identical(models["Nystrom"], outcome[0])


def test_save_does_not_replace_a_file_it_may_not_write(tmp_path, models, monkeypatch):
    """Renaming over a file needs only the directory's permission: save used to replace a
    read-only model file silently. Like open(path, "wb"), it now refuses (naming the path)
    and the file is kept. Permissions are simulated (tests may run as root, who may write
    anything); a directory it may not write is named too, not the temporary file."""
    path = tmp_path / "model.npz"
    save(models["Nystrom"], path)
    before = path.read_bytes()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if str(p) == str(path) else real_access(p, mode)
    )
    with pytest.raises(PermissionError, match="model.npz.*not writable"):
        save(models["BCDNPKL"], path)
    assert path.read_bytes() == before and _listing(tmp_path) == ["model.npz"]
    monkeypatch.undo()

    real_open = os.open

    def refuse(name, *args, **kwargs):
        if str(name).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(PermissionError, match=r"'[^']*new\.npz'.*not writable") as info:
        save(models["Nystrom"], tmp_path / "new.npz")
    assert ".tmp" not in str(info.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_save_refuses_to_replace_a_fifo_or_a_link_to_one(tmp_path, models):
    """A FIFO (like a device, or /dev/null as root) at the path would be replaced by a regular
    file: save refuses, and leaves it and the directory as they were."""
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    link = tmp_path / "link.npz"
    link.symlink_to(fifo)
    for path in (fifo, link):
        with pytest.raises(ValueError, match="not a regular file"):
            save(models["Nystrom"], path)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _listing(tmp_path) == ["link.npz", "pipe.npz"]


def test_save_through_a_symbolic_link_replaces_its_target(tmp_path, models):
    target = tmp_path / "real.npz"
    save(models["Nystrom"], target)
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    save(models["BCDNPKL"], link)
    assert link.is_symlink() and type(load(target)).__name__ == "BCDNPKL"
    assert _listing(tmp_path) == ["link.npz", "real.npz"]


def test_a_model_saved_with_the_removed_ipm_solver_still_loads(tmp_path):
    """0.1.0's solver="ipm" is gone; its saved models load with solver="auto", same kernel."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.where(np.arange(80) < 30, (X[:, 0] > 0).astype(int), -1)
    model = GeneralizedNystrom(n_landmarks=10, lam=1e-3, random_state=0).fit(X, y)
    path = tmp_path / "m.npz"
    save(model, path)
    legacy = tmp_path / "legacy.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(legacy, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "__meta__.npy":
                arr = np.load(io.BytesIO(data))
                meta = json.loads(str(arr))
                meta["params"]["solver"] = "ipm"
                buf = io.BytesIO()
                np.save(buf, np.array(json.dumps(meta)))
                data = buf.getvalue()
            dst.writestr(item, data)
    back = load(legacy)
    assert back.solver == "auto"
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


def test_feature_names_of_another_dtype_are_refused_as_not_strings(tmp_path):
    # the message said "dtype int64 is not numeric"
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).normal(size=(30, 4))
    model = Nystrom(n_landmarks=5, random_state=0).fit(pd.DataFrame(X, columns=list("abcd")))
    raw = mf.saved_bytes(model, tmp_path)
    bad = mf.rewrite(raw, **{"attr:feature_names_in_": np.arange(4)})
    message = _refused(tmp_path, bad, "feature_names_in_", "dtype int64, expected strings")
    assert "not numeric" not in message


@pytest.mark.parametrize("scale", [1e-150, 1e-80, 1e80, 1e150])
def test_models_of_data_at_extreme_scales_save_and_load(tmp_path, scale):
    """W's eigenvalues follow the data's scale (squared, for the linear kernel): 1 / them
    reaches 1e300. The check that ties S0_ to eigenvalues_ once took their Frobenius norms
    unscaled, which overflow (or fall to subnormals) there, and refused these models on
    save and on load alike."""
    X = np.random.default_rng(0).normal(size=(40, 3)) * scale
    model = Nystrom(6, kernel="linear", random_state=0).fit(X)
    path = tmp_path / "extreme.npz"
    save(model, path)
    np.testing.assert_array_equal(load(path).transform(X), model.transform(X))


def test_a_damaged_array_header_is_a_value_error(tmp_path, rng):
    # one byte of an uncompressed .npy header changed: numpy's fallback parser of old headers
    # tokenizes it and raises tokenize.TokenError, which load must report as a bad file. The
    # member is large enough to be parsed as a stream, before its CRC is checked.
    path = tmp_path / "m.npz"
    save(Nystrom(n_landmarks=5, random_state=0).fit(rng.random((50, 1000))), path)
    raw = bytearray(path.read_bytes())
    k = raw.index(b"'shape': (", raw.index(b"attr:landmarks_.npy"))
    k = raw.index(b")", k)
    raw[k : k + 1] = b" "  # the shape tuple left unclosed
    bad = tmp_path / "damaged.npz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="not a readable nystrom_priors model file"):
        load(bad)


@pytest.mark.parametrize(
    "param",
    ["landmarks-dataframe", "landmarks-list-of-rows", "percentiles-series"],
)
def test_array_like_parameters_fit_accepts_are_saved_as_arrays(tmp_path, rng, param):
    # a model that fits can be saved: fit reads these as numbers, so save stores those numbers
    pd = pytest.importorskip("pandas")
    from nystrom_priors import LogDetKernelLearner

    X = rng.normal(size=(40, 4))
    y = np.arange(40) % 3
    kw = {
        "landmarks-dataframe": dict(landmarks=pd.DataFrame(X[:8])),
        "landmarks-list-of-rows": dict(landmarks=list(X[:8])),
        "percentiles-series": dict(percentiles=pd.Series([5.0, 95.0])),
    }[param]
    model = LogDetKernelLearner(rank=4, gamma=1.0, n_landmarks=8, random_state=0, **kw)
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "saved as None"
        save(model, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    ((key, given),) = kw.items()
    np.testing.assert_array_equal(back.get_params()[key], np.asarray(given))
    np.testing.assert_array_equal(back.transform(X), model.transform(X))
    refit = back.fit(X, y)  # the stored parameter fits again, to the same model
    np.testing.assert_array_equal(refit.transform(X), model.transform(X))


@pytest.mark.parametrize(
    "kw",
    [
        dict(lam=fractions.Fraction(1, 2)),
        dict(tol=fractions.Fraction(1, 1000)),
        dict(n_landmarks=fractions.Fraction(10, 1)),
    ],
    ids=["lam", "tol", "n_landmarks"],
)
def test_parameters_of_other_number_types_are_saved_as_the_numbers_fit_reads(tmp_path, rng, kw):
    # fit takes any numbers.Real (a Fraction); save warned "saved as None" and then refused the
    # model, whose None is not a valid value: a model that fits must save and load
    X = rng.normal(size=(60, 3))
    y = np.r_[np.arange(20) % 2, np.full(40, -1)]
    model = GeneralizedNystrom(**{"n_landmarks": 8, "random_state": 0, **kw}).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "saved as None"
        save(model, tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    ((key, given),) = kw.items()
    read = int(given) if given.denominator == 1 else float(given)
    assert back.get_params()[key] == read and type(back.get_params()[key]) is type(read)
    np.testing.assert_array_equal(back.transform(X), model.transform(X))
