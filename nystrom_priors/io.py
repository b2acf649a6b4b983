"""Save and load fitted estimators as ``.npz`` archives without pickle.

Layout of a file (format version 1; 2 when it holds a ``set_output`` configuration):

* ``__nystrom_priors__``: the magic string ``"nystrom_priors model"``;
* ``__format_version__``: integer format version;
* ``__meta__``: JSON with the class name, the library version, scalar parameters and scalar
  fitted attributes (floats are written with ``repr`` precision, so they round-trip exactly),
  and in format 2 ``output``, the ``set_output`` configuration (``{"transform": "pandas"}``);
* ``param:<name>`` / ``attr:<name>``: array-valued parameters and fitted attributes;
* ``csr:<name>:data`` / ``indices`` / ``indptr`` / ``shape``: a fitted attribute that is a
  ``scipy.sparse`` CSR matrix (BCDNPKL's ``X_fit_`` after a sparse fit), stored as its four
  arrays, never densified (:mod:`nystrom_priors._io_sparse`).

A model file is untrusted input. :func:`load` reads it without pickle and without allocating
more than the file can hold (:mod:`nystrom_priors._io_archive`), then validates the whole
schema before it returns a model (:mod:`nystrom_priors._io_schema`): a damaged or hostile file
is refused with a ``ValueError`` naming the file and the field, never a crash later in a
kernel. :func:`save` checks the model against the same schema and writes atomically: a
temporary file in the same directory, flushed and fsync'ed, then ``os.replace``; a failure at
any point leaves a previous file intact and no temporary behind.
"""

from __future__ import annotations

import errno
import json
import numbers
import os
import stat
import warnings
import zipfile
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._validation import check_is_fitted, is_sparse

__all__ = ["save", "load", "FORMAT_VERSION"]

#: 2 adds the optional ``set_output`` configuration; a model without one is written as 1
FORMAT_VERSION = 2
_MAGIC = "nystrom_priors model"
_TEMP_SUFFIX = ".tmp"


def _to_json_value(value: Any, what: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    # other numbers fit accepts (fractions.Fraction): the value fit reads, as int or float
    if isinstance(value, numbers.Rational) and value.denominator == 1:
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, tuple):  # JSON has no tuple; keep the type (get_params round-trips)
        return {"__tuple__": [_to_json_value(v, what) for v in value]}
    if isinstance(value, list):
        return [_to_json_value(v, what) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json_value(v, what) for k, v in value.items()}
    raise TypeError(f"cannot save {what} of type {type(value).__name__}")


def _temp_stem(directory: str, base: str) -> str:
    """``"." + base``, cut so that the temporary file's name fits the file system's limit.

    A name of up to NAME_MAX bytes (255 on most systems) is valid for ``path`` itself, but the
    temporary name adds 18 bytes; the base is cut by whole characters, so that its bytes stay
    a valid encoding.
    """
    try:
        limit = os.pathconf(directory, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):  # Windows, or a file system without it
        limit = 255
    room = max(1, limit - 1 - 1 - 12 - len(_TEMP_SUFFIX))  # ".", ".", 12 hex, suffix
    while len(os.fsencode(base)) > room:
        base = base[:-1]
    return "." + base


def _write_atomic(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write an ``.npz`` to ``path`` through a temporary file in the same directory.

    The temporary file is flushed and fsync'ed, takes over the permission bits of the file it
    replaces, and is renamed over ``path`` (the file a symbolic link points to) by
    ``os.replace`` (atomic on POSIX and Windows).
    On any failure, including KeyboardInterrupt, it is removed and ``path`` is untouched.
    """
    if not path:  # realpath("") is the working directory
        raise ValueError("cannot save to '': the path is empty; pass a file path.")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        # realpath would drop the separator and create a file where a directory was meant
        raise IsADirectoryError(
            errno.EISDIR,
            f"cannot save to {path!r}: it ends with a path separator, so it names a "
            "directory; pass a file path",
        )
    if "\0" in path:  # os functions raise a ValueError that names no argument
        raise ValueError(f"cannot save to {path!r}: a path cannot contain a NUL character.")
    # through a symbolic link: replace the file it points to, as open(path, "wb") wrote it
    given, path = path, os.path.realpath(path)
    directory, base = os.path.split(path)
    # name the path the caller gave (the OSErrors below would name the temporary file)
    if os.path.isdir(path):
        raise IsADirectoryError(
            errno.EISDIR, f"cannot save to {given!r}: it is a directory; pass a file path"
        )
    if not os.path.isdir(directory):
        if os.path.exists(directory):
            raise NotADirectoryError(
                errno.ENOTDIR, f"cannot save to {given!r}: {directory!r} is not a directory"
            )
        raise FileNotFoundError(
            errno.ENOENT, f"cannot save to {given!r}: directory {directory!r} does not exist"
        )
    # the rename would put a regular file in place of a device, FIFO or socket (as root, even
    # /dev/null): refuse anything there that is not a regular file, before writing
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        kind = None
    except OSError as exc:  # a loop of symbolic links, a name too long: name the path given
        raise type(exc)(exc.errno, f"cannot save to {given!r}: {exc.strerror}") from None
    if kind is not None and not stat.S_ISREG(kind):
        raise ValueError(
            f"cannot save to {given!r}: it exists and is not a regular file (a device, FIFO "
            "or socket), which saving would replace; pass the path of a regular file or of a "
            "new one."
        )
    # the rename needs only the directory's write permission: refuse to replace a file that
    # open(path, "wb") could not overwrite (a read-only model), as open() would
    if kind is not None and not os.access(path, os.W_OK):
        raise PermissionError(
            errno.EACCES, f"cannot save to {given!r}: the file exists and is not writable"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    stem = _temp_stem(directory, base)
    for _ in range(100):
        tmp = os.path.join(directory, f"{stem}.{os.urandom(6).hex()}{_TEMP_SUFFIX}")
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for open(path, "wb")
            break
        except FileExistsError:
            continue
        except PermissionError as exc:  # name the path given, not the temporary file
            raise PermissionError(
                exc.errno, f"cannot save to {given!r}: directory {directory!r} is not writable"
            ) from None
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"could not create a temporary file in {directory!r}")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None:  # a full disk, a size limit
            raise type(exc)(
                exc.errno, f"cannot save to {given!r}: {exc.strerror}; the file there is unchanged"
            ) from exc
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        try:
            dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)


def _numeric_array(value: Any) -> np.ndarray | None:
    """``value`` as the numeric array fit reads from it (a pandas object, a list of rows), or
    None where it is not one."""
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged or exotic: not an array of numbers
        return None
    if array.ndim == 0 or array.dtype.kind not in "biuf":
        return None
    return np.ascontiguousarray(array)


def save(model: Any, path: str | os.PathLike) -> None:
    """Save a fitted estimator to ``path`` (written exactly there, ``.npz`` format).

    The model is first checked against the schema :func:`load` enforces (so a saved file can
    always be loaded back), then written atomically: a failure at any point leaves an
    existing file at ``path`` byte for byte intact and no temporary file behind.

    Parameters
    ----------
    model : fitted estimator of this package
    path : str or path-like

    Raises
    ------
    TypeError
        Not an estimator of this package, or a fitted attribute that cannot be stored.
    NotFittedError
        The model is not fitted.
    ValueError
        The model's parameters or fitted attributes are invalid (e.g. after ``set_params``
        with an invalid value): the file would not load.

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
    from ._fit_lock import fit_lock

    with fit_lock(model):  # the model before or after a fit in another thread, never between
        _save(model, path)


def _save(model: Any, path: str | os.PathLike) -> None:
    """``save`` under the model's fit lock."""
    from ._io_schema import REGISTRY, validate
    from .kernels import KernelSpec

    name = type(model).__name__
    if REGISTRY.get(name) != type(model).__module__:
        raise TypeError(
            f"save() handles the estimators of nystrom_priors ({sorted(REGISTRY)}), got "
            f"{type(model).__module__}.{name}."
        )
    check_is_fitted(model)
    from . import __version__

    path = os.fsdecode(os.fspath(path))  # bytes paths too
    arrays: dict[str, np.ndarray] = {}
    params: dict[str, Any] = {}
    for key, value in model.get_params().items():
        if isinstance(value, np.ndarray):
            arrays[f"param:{key}"] = value
            continue
        if key == "kernel" and isinstance(value, KernelSpec):
            # None is no kernel: keep the name (the fitted kernel_, gamma_, ... are exact)
            warnings.warn(
                f"Parameter kernel={value!r} cannot be stored without pickle; it is saved as "
                f"its name {value.name!r} (the fitted state is saved exactly).",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
            params[key] = value.name
            continue
        try:
            params[key] = _to_json_value(value, f"parameter {key!r}")
        except TypeError:
            array = _numeric_array(value)
            if array is not None:  # a DataFrame, Series or list of rows fit read as numbers
                arrays[f"param:{key}"] = array
                continue
            warnings.warn(
                f"Parameter {key}={value!r} cannot be stored without pickle; it is saved as "
                "None (the fitted state is saved exactly).",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
            params[key] = None
    attrs: dict[str, Any] = {}
    for key, value in vars(model).items():
        if not key.endswith("_") or key.startswith("_"):
            continue
        if key == "feature_names_in_":
            value = np.asarray(value, dtype=str)  # scikit-learn's object array of str
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "O":
                kinds = sorted({type(v).__name__ for v in value.ravel().tolist()})
                raise TypeError(
                    f"Cannot save fitted attribute {key!r}: it holds {', '.join(kinds)} objects, "
                    "which cannot be stored without pickle. Numbers, booleans, strings and "
                    "bytes can"
                    + (
                        "; refit with the classes mapped to one of those and the unlabeled "
                        "markers kept (e.g. names = {c: str(c) for c in model.classes_}; "
                        "y = np.array([names.get(v, v) for v in y], dtype=object))."
                        if key == "classes_"
                        else "."
                    )
                )
            arrays[f"attr:{key}"] = value
        elif is_sparse(value):
            from ._io_sparse import pack

            arrays.update(pack(key, value))
        else:
            attrs[key] = _to_json_value(value, f"fitted attribute {key!r}")
    content = {"class": name, "library_version": __version__, "params": params, "attrs": attrs}
    output = {k: v for k, v in getattr(model, "_sklearn_output_config", {}).items() if v}
    if output:  # readers of format 1 refuse the key: the version tells them to upgrade
        content["output"] = output
    meta = json.dumps(content)
    # what load will see: JSON round-tripped metadata, the same arrays
    validate(f"the {name} being saved to {path!r}", json.loads(meta), arrays)
    _write_atomic(
        path,
        dict(
            __nystrom_priors__=np.array(_MAGIC),
            __format_version__=np.array(2 if output else 1),
            __meta__=np.array(meta),
            **arrays,
        ),
    )


def _scalar_entry(path: str, entries: dict, key: str, kinds: str) -> np.ndarray | None:
    value = entries.pop(key, None)
    if value is not None and (value.shape != () or value.dtype.kind not in kinds):
        raise ValueError(
            f"{path!r} is not a valid nystrom_priors model file: field {key!r}: expected a "
            f"scalar of kind {kinds!r}, got an array of shape {value.shape} and dtype "
            f"{value.dtype}."
        )
    return value


def load(path: str | os.PathLike) -> Any:
    """Load an estimator saved by :func:`save`, validating the whole file first.

    The file is untrusted input: no pickle is read, and every size is checked before
    anything is allocated.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file :func:`save` wrote.

    Returns
    -------
    estimator : Nystrom, GeneralizedNystrom, LogDetKernelLearner, VonNeumannKernelLearner or BCDNPKL
        Fitted as it was saved: ``transform`` and ``kernel`` give the same values.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from nystrom_priors import Nystrom, load, save
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> model = Nystrom(n_landmarks=10, random_state=0).fit(X)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> save(model, path)
    >>> np.allclose(load(path).transform(X), model.transform(X))
    True

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    IsADirectoryError
        ``path`` is a directory.
    ValueError
        ``path`` is not a regular file (a device, FIFO or socket), or the file is not a
        nystrom_priors model (foreign, truncated or corrupted archive), its
        format version is newer than this library supports, its class is unknown, or any
        part of it breaks the schema: sizes that do
        not match, wrong dtypes or shapes, non-finite values, invalid parameters, malformed
        metadata. The message names the file and the field.
    """
    from ._io_archive import read_arrays
    from ._io_schema import validate

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such model file: {path!r}")
    if os.path.isdir(path):  # as open() would: the error type says what the path is
        raise IsADirectoryError(
            errno.EISDIR, f"cannot load {path!r}: it is a directory; pass the model file's path"
        )
    special = ValueError(
        f"cannot load {path!r}: it is not a regular file (a device, FIFO or socket); pass the "
        "model file's path."
    )
    if not stat.S_ISREG(os.stat(path).st_mode):  # a socket cannot even be opened
        raise special
    # one open, then every check on that descriptor: a path swapped for a device after the
    # check above is read as what is checked below. O_NONBLOCK: opening a FIFO must not wait
    # for a writer (it has no effect on a regular file's reads).
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):  # is_zipfile would read a device to its end
            raise special
        if not zipfile.is_zipfile(file):
            raise ValueError(
                f"{path!r} is not a readable nystrom_priors model file: not an .npz (zip) "
                "archive, or a truncated or corrupted one."
            )
        entries = read_arrays(path, file, info.st_size)
    marker = _scalar_entry(path, entries, "__nystrom_priors__", "U")
    if marker is None or str(marker) != _MAGIC:
        raise ValueError(
            f"{path!r} is not a nystrom_priors model file (no nystrom_priors marker); "
            "it must be written by nystrom_priors.save."
        )
    version = _scalar_entry(path, entries, "__format_version__", "iu")
    if version is None:
        raise ValueError(
            f"{path!r} is not a valid nystrom_priors model file: field "
            "'__format_version__': missing."
        )
    version = int(version)
    if version > FORMAT_VERSION or version < 1:
        raise ValueError(
            f"{path!r} has model format version {version}, but this nystrom_priors "
            f"reads versions 1..{FORMAT_VERSION}; upgrade nystrom_priors to load it."
        )
    text = _scalar_entry(path, entries, "__meta__", "U")
    if text is None:
        raise ValueError(
            f"{path!r} is not a valid nystrom_priors model file: field '__meta__': missing."
        )
    try:
        meta = json.loads(str(text))
    except (ValueError, RecursionError) as exc:
        raise ValueError(
            f"{path!r} is not a valid nystrom_priors model file: field '__meta__': not JSON "
            f"({type(exc).__name__}: {exc})."
        ) from None
    cls, params, attrs = validate(repr(path), meta, entries)
    model = cls(**params)
    if meta.get("output"):  # set_output's configuration, as pickle and clone keep it
        model._sklearn_output_config = dict(meta["output"])
    for key, value in attrs.items():
        setattr(model, key, value.astype(object) if key == "feature_names_in_" else value)
    if isinstance(getattr(model, "landmarks_", None), np.ndarray):
        model.landmarks_.flags.writeable = False  # as fit leaves it
    return model
