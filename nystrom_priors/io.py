"""Save and load fitted estimators as ``.npz`` archives without pickle.

Layout of a file (format version 1):

* ``__nystrom_priors__``: the magic string ``"nystrom_priors model"``;
* ``__format_version__``: integer format version;
* ``__meta__``: JSON with the class name, the library version, scalar parameters and scalar
  fitted attributes (floats are written with ``repr`` precision, so they round-trip exactly);
* ``param:<name>`` / ``attr:<name>``: array-valued parameters and fitted attributes.

Loading uses ``np.load(allow_pickle=False)``: a file can never execute code.
"""

from __future__ import annotations

import importlib
import json
import os
import warnings
import zipfile
from typing import Any

import numpy as np

from ._validation import check_is_fitted

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_MAGIC = "nystrom_priors model"
_REGISTRY = {
    "Nystrom": "nystrom_priors.nystrom",
    "GeneralizedNystrom": "nystrom_priors.generalized",
    "LogDetKernelLearner": "nystrom_priors.logdet",
    "VonNeumannKernelLearner": "nystrom_priors.logdet",
    "BCDNPKL": "nystrom_priors.npkl",
}


def _to_json_value(value: Any, what: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, tuple):  # JSON has no tuple; keep the type (get_params round-trips)
        return {"__tuple__": [_to_json_value(v, what) for v in value]}
    if isinstance(value, list):
        return [_to_json_value(v, what) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json_value(v, what) for k, v in value.items()}
    raise TypeError(f"cannot save {what} of type {type(value).__name__}")


def _from_json_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_json_value(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_from_json_value(v) for v in value["__tuple__"])
        return {k: _from_json_value(v) for k, v in value.items()}
    return value


def save(model: Any, path: str | os.PathLike) -> None:
    """Save a fitted estimator to ``path`` (written exactly there, ``.npz`` format).

    Parameters
    ----------
    model : fitted estimator of this package
    path : str or path-like

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from nystrom_priors import Nystrom, save, load
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> model = Nystrom(n_landmarks=10, random_state=0).fit(X)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> save(model, path)
    >>> bool(np.array_equal(load(path).transform(X), model.transform(X)))
    True
    """
    name = type(model).__name__
    if _REGISTRY.get(name) != type(model).__module__:
        raise TypeError(
            f"save() handles the estimators of nystrom_priors ({sorted(_REGISTRY)}), got "
            f"{type(model).__module__}.{name}."
        )
    check_is_fitted(model)
    from . import __version__

    arrays: dict[str, np.ndarray] = {}
    params: dict[str, Any] = {}
    for key, value in model.get_params().items():
        if isinstance(value, np.ndarray):
            arrays[f"param:{key}"] = value
            continue
        try:
            params[key] = _to_json_value(value, f"parameter {key!r}")
        except TypeError:
            warnings.warn(
                f"Parameter {key}={value!r} cannot be stored without pickle; it is saved as "
                "None (the fitted state is saved exactly).",
                UserWarning,
                stacklevel=2,
            )
            params[key] = None
    attrs: dict[str, Any] = {}
    for key, value in vars(model).items():
        if not key.endswith("_") or key.startswith("_"):
            continue
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "O":
                raise TypeError(f"cannot save object array attribute {key!r}")
            arrays[f"attr:{key}"] = value
        else:
            attrs[key] = _to_json_value(value, f"fitted attribute {key!r}")
    meta = {"class": name, "library_version": __version__, "params": params, "attrs": attrs}
    with open(path, "wb") as fh:
        np.savez(
            fh,
            __nystrom_priors__=np.array(_MAGIC),
            __format_version__=np.array(FORMAT_VERSION),
            __meta__=np.array(json.dumps(meta)),
            **arrays,
        )


def load(path: str | os.PathLike) -> Any:
    """Load an estimator saved by :func:`save`.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is not a nystrom_priors model (foreign, truncated or corrupted archive), its
        format version is newer than this library supports, or its class is unknown.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such model file: {path!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{path!r} is not a readable nystrom_priors model file: not an .npz (zip) archive, "
            "or a truncated or corrupted one."
        )
    try:
        with np.load(path, allow_pickle=False) as data:
            files = set(data.files)
            if "__nystrom_priors__" not in files or str(data["__nystrom_priors__"]) != _MAGIC:
                raise ValueError(
                    f"{path!r} is not a nystrom_priors model file (no nystrom_priors marker); "
                    "it must be written by nystrom_priors.save."
                )
            version = int(data["__format_version__"])
            if version > FORMAT_VERSION or version < 1:
                raise ValueError(
                    f"{path!r} has model format version {version}, but this nystrom_priors "
                    f"reads versions 1..{FORMAT_VERSION}; upgrade nystrom_priors to load it."
                )
            meta = json.loads(str(data["__meta__"]))
            try:
                arrays = {k: np.array(data[k]) for k in files if ":" in k}
            except ValueError as exc:  # object arrays need pickle, which is never enabled
                raise ValueError(
                    f"{path!r} holds pickled (object) arrays, which nystrom_priors never "
                    f"writes and refuses to load: {exc}"
                ) from None
    except ValueError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path!r} is not a readable nystrom_priors model file (truncated or corrupted "
            f"archive: {type(exc).__name__}: {exc})."
        ) from None
    name = meta.get("class")
    if name not in _REGISTRY:
        raise ValueError(
            f"{path!r} holds an unknown estimator class {name!r}; known: {sorted(_REGISTRY)}."
        )
    cls = getattr(importlib.import_module(_REGISTRY[name]), name)
    params = {k: _from_json_value(v) for k, v in meta["params"].items()}
    for key, value in arrays.items():
        kind, _, attr = key.partition(":")
        if kind == "param":
            params[attr] = value
    model = cls(**params)
    for key, value in meta["attrs"].items():
        setattr(model, key, _from_json_value(value))
    for key, value in arrays.items():
        kind, _, attr = key.partition(":")
        if kind == "attr":
            setattr(model, attr, value)
    return model
