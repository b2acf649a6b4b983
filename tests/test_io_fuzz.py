"""Hypothesis fuzzing of saved model files: a damaged file loads as the identical model or is
refused with a ``ValueError`` -- never another exception, never a different model.

* Byte mutations (flipped bits, overwritten runs, insertions, deletions, truncation) anywhere
  in the archive: zip headers, ``.npy`` headers, data, metadata. Whatever survives the zip's
  CRC-32 and the schema must be the very model that was saved.
* Structural mutations: one entry replaced by an array of another dtype or shape, or one
  fitted attribute in the metadata replaced by a JSON value of another type. These always
  break the schema, so they must be refused, with a message naming the file and the field.

Runs in CI with the derandomized ``ci`` profile (tests/conftest.py).
"""

from __future__ import annotations

import io
import json
import warnings

import model_files as mf
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from nystrom_priors import load, save

MODELS = mf.fitted_models()
NAMES = sorted(MODELS)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    files = {}
    for name, model in MODELS.items():
        path = root / f"{name}.npz"
        save(model, path)
        files[name] = path.read_bytes()
    return files


def _identical_or_value_error(raw: bytes, original, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "model.npz"
    path.write_bytes(raw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning either
            back = load(path)
    except ValueError as exc:
        assert type(exc) is ValueError and str(path) in str(exc), str(exc)
        event(f"refused: {str(exc).split(': ', 1)[-1][:50]}")
        return
    event("loaded identical")
    mf.assert_identical(original, back)


@st.composite
def byte_mutations(draw, size: int):
    """A list of (kind, offset, payload) edits applied in order."""
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "overwrite", "insert", "delete", "truncate"]))
        offset = draw(st.integers(0, max(0, size - 1)))
        if kind == "flip":
            edits.append((kind, offset, draw(st.integers(0, 7))))
        elif kind in ("overwrite", "insert"):
            edits.append((kind, offset, draw(st.binary(min_size=1, max_size=16))))
        elif kind == "delete":
            edits.append((kind, offset, draw(st.integers(1, 64))))
        else:
            edits.append((kind, offset, None))
    return edits


def _apply(raw: bytes, edits) -> bytes:
    data = bytearray(raw)
    for kind, offset, payload in edits:
        offset = min(offset, max(0, len(data) - 1))
        if kind == "flip" and data:
            data[offset] ^= 1 << payload
        elif kind == "overwrite":
            data[offset : offset + len(payload)] = payload
        elif kind == "insert":
            data[offset:offset] = payload
        elif kind == "delete":
            del data[offset : offset + payload]
        elif kind == "truncate":
            del data[offset:]
    return bytes(data)


@given(data=st.data(), name=st.sampled_from(NAMES))
def test_byte_mutations_load_identically_or_raise_value_error(saved, tmp_path_factory, data, name):
    raw = saved[name]
    edits = data.draw(byte_mutations(len(raw)))
    _identical_or_value_error(_apply(raw, edits), MODELS[name], tmp_path_factory)


@given(data=st.data(), name=st.sampled_from(NAMES))
def test_mutations_inside_one_member_are_refused(saved, tmp_path_factory, data, name):
    """Edits inside a member's bytes (header or data), where the CRC-32 must catch them."""
    import zipfile

    raw = saved[name]
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        infos = zf.infolist()
    info = data.draw(st.sampled_from(infos))
    # a member's data start after its 30-byte local header, name and extra field (the local
    # header's own lengths: its extra field differs from the central directory's)
    h = info.header_offset
    start = (
        h
        + 30
        + int.from_bytes(raw[h + 26 : h + 28], "little")
        + int.from_bytes(raw[h + 28 : h + 30], "little")
    )
    offset = data.draw(st.integers(start, start + info.compress_size - 1))
    bit = data.draw(st.integers(0, 7))
    mutated = bytearray(raw)
    mutated[offset] ^= 1 << bit
    path = tmp_path_factory.mktemp("fuzz") / "model.npz"
    path.write_bytes(bytes(mutated))
    with pytest.raises(ValueError, match="truncated or corrupted") as exc:
        load(path)
    assert str(path) in str(exc.value)


# ----- structural mutations: the schema must refuse them ------------------------------------

# entries whose replacement by another dtype / shape may still be a valid model: the user's
# landmark parameter (any rows, float32 or float64), the labels' classes (any length,
# numeric or string dtype), BCDNPKL's pairs (rows can be dropped without changing the
# samples), and the landmarks / training samples' own float32 <-> float64
FREE_SHAPE = {"param:landmarks", "attr:classes_"}
FREE_ROWS = {("BCDNPKL", "attr:pairs_"), ("BCDNPKL-dense", "attr:pairs_")}
FLOAT_EITHER = {"attr:landmarks_", "attr:X_fit_"}

DTYPES = [np.int64, np.float64, np.float32, np.bool_, np.uint8, np.complex128, "<U3"]


@st.composite
def replacement_arrays(draw, original: np.ndarray, key: str, model: str):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    same_dtype = dtype == original.dtype or (
        key in FLOAT_EITHER and dtype.kind == "f" and original.dtype.kind == "f"
    )
    if key in FREE_SHAPE or (model, key) in FREE_ROWS:
        # only a change of kind is invalid for these (classes_ may also hold strings)
        if key == "attr:classes_":
            dtype = np.dtype(np.complex128)
        elif dtype.kind in "biuf" and original.dtype.kind in "biuf":
            dtype = np.dtype("<U3")
        same_dtype = False
    if same_dtype and shape == original.shape:
        shape = shape + (1,)
    if dtype.kind == "U":
        values = np.full(shape, "abc", dtype=dtype)
    else:
        values = (np.arange(int(np.prod(shape))) % 3).reshape(shape).astype(dtype)
    return values


@given(data=st.data(), name=st.sampled_from(NAMES))
def test_array_of_another_dtype_or_shape_is_refused(saved, tmp_path_factory, data, name):
    raw = saved[name]
    entries = mf.entries(raw)
    keys = sorted(k for k in entries if ":" in k)
    key = data.draw(st.sampled_from(keys))
    new = data.draw(replacement_arrays(entries[key], key, name))
    event(f"{key} -> {new.dtype.kind}{new.ndim}")
    path = tmp_path_factory.mktemp("fuzz") / "model.npz"
    path.write_bytes(mf.rewrite(raw, **{key: new}))
    with pytest.raises(ValueError) as exc:
        load(path)
    message = str(exc.value)
    assert type(exc.value) is ValueError
    assert str(path) in message and key.partition(":")[2] in message, message


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _json_type(value):
    return "float" if isinstance(value, float) else type(value).__name__


@given(data=st.data(), name=st.sampled_from(NAMES), value=JSON_VALUES)
def test_metadata_attribute_of_another_type_is_refused(saved, tmp_path_factory, data, name, value):
    raw = saved[name]
    meta = mf.meta(raw)
    key = data.draw(st.sampled_from(sorted(meta["attrs"])))
    old = meta["attrs"][key]
    if _json_type(value) == _json_type(old) or (old is None and value is None):
        value = [value]  # another JSON type than the saved one
    event(f"{key}: {_json_type(old)} -> {_json_type(value)}")
    path = tmp_path_factory.mktemp("fuzz") / "model.npz"
    path.write_bytes(mf.rewrite(raw, meta_update=lambda m: m["attrs"].__setitem__(key, value)))
    with pytest.raises(ValueError) as exc:
        load(path)
    message = str(exc.value)
    assert type(exc.value) is ValueError
    assert str(path) in message and key in message, message


@given(data=st.data(), name=st.sampled_from(NAMES), value=JSON_VALUES)
def test_random_metadata_never_raises_anything_but_value_error(
    saved, tmp_path_factory, data, name, value
):
    """Any JSON in any metadata slot (parameters included): a ValueError, or a model whose
    transform runs (or refuses with a ValueError)."""
    raw = saved[name]
    meta = mf.meta(raw)
    section = data.draw(st.sampled_from(["params", "attrs", "top"]))
    if section == "top":
        key = data.draw(st.sampled_from(["class", "library_version", "params", "attrs", "x"]))
        update = lambda m: m.__setitem__(key, value)  # noqa: E731
    else:
        key = data.draw(st.sampled_from(sorted(meta[section]) + ["unknown_"]))
        update = lambda m: m[section].__setitem__(key, value)  # noqa: E731
    path = tmp_path_factory.mktemp("fuzz") / "model.npz"
    path.write_bytes(mf.rewrite(raw, meta_update=update))
    try:
        model = load(path)
    except ValueError as exc:
        assert type(exc) is ValueError and str(path) in str(exc)
        event("refused")
        return
    event(f"loaded with {section}.{key} = {json.dumps(value)[:20]}")
    X, _ = mf.training_data()
    try:
        G = model.transform(X)
    except ValueError:
        return
    assert G.shape[0] == X.shape[0]
