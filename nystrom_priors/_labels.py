"""Partial labels: ``y`` with one entry per sample, ``-1`` (or ``None`` / ``NaN``) for unlabeled.

The validation behind ``side_info.check_labels``: any one type of class label (integers,
strings, other sortable objects, a pandas Series or Categorical), ``classes_`` sorted. Pairs
live in ``side_info``, which re-exports these names.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._validation import is_missing, is_sparse, refuse_masked

_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class Labels:
    """Validated partial labels.

    Attributes
    ----------
    index : ndarray of shape (l,)
        Rows of X that are labeled (ascending).
    codes : ndarray of shape (l,)
        Class of each labeled row as an integer in ``0 .. n_classes - 1``.
    classes : ndarray of shape (n_classes,)
        The distinct class labels, sorted.
    minus_ones : int
        How many samples the number -1 marked unlabeled; with one class, ``1``, among the
        labeled ones, ``one_class_hint`` asks whether -1 was meant as a class (±1 labels).
    """

    index: np.ndarray
    codes: np.ndarray
    classes: np.ndarray
    minus_ones: int = 0

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])

    def one_class_hint(self) -> str:
        """A sentence for the warnings about labels of one class when they look like ±1
        labels whose -1 half was read as unlabeled (the ``sklearn.semi_supervised``
        convention), else ``""``."""
        if self.n_classes != 1 or self.minus_ones == 0 or self.classes.dtype.kind not in "biuf":
            return ""
        if self.classes[0] != 1:
            return ""
        return (
            f" The other {self.minus_ones} samples are -1, which marks them unlabeled: if -1 "
            "is a class (labels +-1), recode it, e.g. y = np.where(y == -1, 0, y)."
        )

    def onehot(self) -> np.ndarray:
        """Y of shape (l, n_classes) with ``Y Y^T`` the ideal kernel ``K*``."""
        Y = np.zeros((self.index.shape[0], self.n_classes))
        Y[np.arange(self.index.shape[0]), self.codes] = 1.0
        return Y


def _given(v: Any) -> Any:
    """A value as the user gave it, as a plain Python number (no ``np.int64(...)`` repr)."""
    return v.item() if isinstance(v, np.generic) else v


def refuse_nul_labels(values: Any, name: str) -> None:
    """Refuse a str or bytes label ending in NUL: numpy's string and bytes arrays drop a
    trailing NUL, so ``"a\0"`` would become ``"a"`` and two labels silently one."""
    nul = next((v for v in values if isinstance(v, (str, bytes)) and v[-1:] in ("\0", b"\0")), None)
    if nul is not None:
        what = "character" if isinstance(nul, str) else "byte"
        raise ValueError(
            f"{name} holds the label {nul!r}, which ends with a NUL {what}: numpy's string "
            "arrays drop it, so it would merge with the label without it. Rename it."
        )


def _as_label_array(y: Any) -> np.ndarray:
    """``y`` as a numpy array, without importing pandas.

    A pandas object (detected by its type's module) goes through ``to_numpy``; extension
    dtypes (nullable integers, ``string``) become object arrays whose missing entries are
    ``NaN`` or ``pd.NA``, and a categorical its categories' own values with ``None`` where
    missing, all of which :func:`_unlabeled_mask` reads as unlabeled. A list
    mixing strings and numbers becomes an object array (``np.asarray`` would turn the marker
    ``-1`` into the string ``'-1'``).
    """
    refuse_masked(y, "y")
    if is_sparse(y):
        raise TypeError(
            "y must be a dense 1-D array of class labels (one per sample, -1 for unlabeled), "
            f"got a sparse matrix of type {type(y).__name__} and shape {y.shape}; sparse "
            "labels are not accepted: pass a dense array, e.g. y.toarray().ravel()."
        )
    if type(y).__module__.startswith("pandas") and hasattr(y, "to_numpy"):
        dtype = getattr(y, "dtype", None)
        if hasattr(dtype, "categories") and hasattr(dtype.categories, "to_numpy"):
            # categories' own values (to_numpy(dtype=object) turns integer categories into
            # floats where a value is missing), None where missing (code -1)
            codes = np.asarray(y.codes if hasattr(y, "codes") else y.cat.codes)
            categories = dtype.categories.to_numpy(dtype=object)  # Timestamps stay Timestamps
            out = np.full(codes.shape, None, dtype=object)
            out[codes >= 0] = categories[codes[codes >= 0]]
            return out
        return y.to_numpy() if isinstance(dtype, np.dtype) else y.to_numpy(dtype=object)
    arr = np.asarray(y)
    if arr.dtype.kind in "US" and not isinstance(y, np.ndarray):
        arr = np.asarray(y, dtype=object)
    return arr


def _is_marker(v: Any) -> bool:
    """Whether one entry of an object array marks an unlabeled sample: None, NaN, pd.NA, -1."""
    if is_missing(v):
        return True
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return False
    return bool(v == -1 or v != v)


# the unlabeled markers as str() writes them (-1, -1.0, NaN, pd.NA): as class names they would
# most likely be unlabeled samples that went through a string conversion. 'None' is also a
# plausible class name (a severity scale), so it is only warned about (``check_labels``)
_MARKER_STRINGS = np.array(["-1", "-1.0", "nan", "NaN", "<NA>"])


def _unlabeled_mask(arr: np.ndarray) -> np.ndarray:
    """Boolean mask of the unlabeled entries of a 1-D label array (see :func:`check_labels`)."""
    kind = arr.dtype.kind
    if kind == "u":
        # -1 cast to an unsigned dtype wraps to its maximum: as ambiguous as the string '-1'
        wrapped = np.flatnonzero(arr == np.iinfo(arr.dtype).max)
        if wrapped.size:
            raise ValueError(
                f"y[{wrapped[0]}] = {int(arr[wrapped[0]])} is the largest {arr.dtype}, which "
                "is what the unlabeled marker -1 becomes when cast to an unsigned dtype: "
                "ambiguous between a class and an unlabeled sample. Pass y in a signed "
                "integer dtype (with -1 for unlabeled samples)."
            )
    if kind in "biu":
        return arr == -1
    if kind == "f":
        return (arr == -1) | np.isnan(arr)
    if kind in "US":
        strings = arr.astype(str)
    elif kind == "O":
        mask = np.fromiter((_is_marker(v) for v in arr), dtype=bool, count=arr.shape[0])
        strings = np.array([v if isinstance(v, str) else "" for v in arr], dtype=str)
    else:
        raise TypeError(
            f"Unknown label type: y must hold class labels (numbers, strings or other sortable "
            f"objects; -1, None or NaN for unlabeled), got dtype {arr.dtype}."
        )
    ambiguous = np.flatnonzero(np.isin(strings, _MARKER_STRINGS))
    if ambiguous.size:
        i = ambiguous[0]
        raise ValueError(
            f"y[{i}] is the string {str(strings[i])!r}: what an unlabeled marker (-1, None, "
            "NaN or pd.NA) becomes when y is converted to strings (y.astype(str), a CSV file), "
            f"ambiguous between a class named {str(strings[i])!r} and an unlabeled sample. "
            "Mark unlabeled samples with the integer -1, None or NaN (in an object array), "
            "or rename the class."
        )
    return mask if kind == "O" else np.zeros(arr.shape[0], dtype=bool)


def _type_name(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):  # a type of its own: True == 1 would merge classes
        return "bool"
    if isinstance(v, numbers.Real):
        return "number"
    if isinstance(v, bytes):  # np.bytes_ is bytes
        return "bytes"
    return "str" if isinstance(v, str) else type(v).__name__  # np.str_ is a str


def _labeled_values(values: np.ndarray) -> np.ndarray:
    """The labeled entries of an object array as a homogeneous array: bool, int64, float64,
    str (``<U``) or, for other sortable objects, object. Mixed types raise ``TypeError``."""
    kinds: dict[str, Any] = {}
    for v in values:
        kinds.setdefault(_type_name(v), v)
        if len(kinds) > 1:
            (a, va), (b, vb) = kinds.items()
            raise TypeError(
                f"y mixes labels of different types: {a} (e.g. {va!r}) and {b} (e.g. {vb!r}); "
                "give every class the same type (and -1, None or NaN for unlabeled samples)."
            )
    if not kinds:
        return values
    kind = next(iter(kinds))
    if kind == "bool":  # classes_ [False, True], as for a bool array
        return values.astype(bool)
    if kind == "number":
        if all(isinstance(v, numbers.Integral) for v in values):
            big = next((v for v in values if not _INT64_MIN <= v <= _INT64_MAX), None)
            if big is not None:  # Python ints; int64 would raise a bare OverflowError
                raise ValueError(
                    f"y holds the integer label {_given(big)!r}, outside the int64 range "
                    f"[{_INT64_MIN}, {_INT64_MAX}]; use smaller integers or strings as class "
                    "labels."
                )
            return values.astype(np.int64)
        return values.astype(np.float64)
    if kind == "str":
        refuse_nul_labels(values, "y")
        return values.astype(str)
    if kind == "bytes":  # stored as numpy bytes (``S``), as a saved model keeps them
        refuse_nul_labels(values, "y")
        return values.astype(bytes)
    try:
        classes, codes = np.unique(values, return_inverse=True)
        # np.unique trusts < to be a total order; for sets (< is "subset of") and the like
        # it is not, and equal labels landed in different classes (2 classes read as 36)
        total = all(classes[k] < classes[k + 1] for k in range(classes.size - 1)) and all(
            v == classes[c] for v, c in zip(values, codes.reshape(-1))
        )
    except TypeError:
        total = False
    if not total:
        raise TypeError(
            f"y holds labels of type {kind}, which cannot be sorted into classes_ (their < is "
            "not a total order); use numbers or strings."
        )
    return values


def check_labels(y: Any, n_samples: int, *, min_classes: int = 1) -> Labels:
    """Validate partial labels ``y`` for ``n_samples`` samples.

    Labels may be integers, integer-valued floats, booleans, strings or other sortable objects,
    in a list, an ndarray or a pandas Series / Categorical. Unlabeled samples are marked by
    ``-1`` (the ``sklearn.semi_supervised`` convention; the integer in an object array), by
    ``None`` or by ``NaN`` (pandas' missing values, ``pd.NA`` included). The classes are the
    distinct labels of the labeled samples, sorted; every other value is a class.

    Two inputs are refused because they are ambiguous or mistaken: the *strings* ``'-1'``,
    ``'-1.0'``, ``'nan'``, ``'NaN'`` and ``'<NA>'`` (a class of that name, or a marker that
    went through ``y.astype(str)`` or a CSV file?; ``'None'``, a plausible class name, is a
    class with a warning) and labels of mixed
    types (``'a'`` and ``3``: sorting them has no meaning and usually means a bug upstream).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    n_samples : int
    min_classes : int, default=1

    Returns
    -------
    Labels
        ``classes`` is int64 / float64 / bool for numbers, ``<U`` for strings.

    Raises
    ------
    ValueError
        Wrong length, infinite or non-integer numbers, the string '-1', no labeled sample,
        or fewer than ``min_classes`` classes.
    TypeError
        Labels of mixed types, or of a type that cannot be sorted.

    Examples
    --------
    >>> from nystrom_priors.side_info import check_labels
    >>> lab = check_labels(["cat", None, "dog", "cat"], 4)
    >>> lab.classes.tolist(), lab.index.tolist(), lab.codes.tolist()
    (['cat', 'dog'], [0, 2, 3], [0, 1, 0])
    """
    arr = _as_label_array(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D with one entry per sample, got shape {arr.shape}.")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"y has {arr.shape[0]} entries, but X has {n_samples} samples; use -1 for "
            "unlabeled samples."
        )
    unlabeled = _unlabeled_mask(arr)
    index = np.flatnonzero(~unlabeled)
    values = arr[index]
    if values.dtype.kind == "O":
        values = _labeled_values(values)
    count = int(np.count_nonzero(values == "None")) if values.dtype.kind == "U" else 0
    if count:
        warnings.warn(
            f"y holds the string 'None' ({count} samples), which is a class here. If they are "
            "unlabeled samples whose marker None went through y.astype(str) or a CSV file, "
            "mark them with None or -1.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        bad = index[np.flatnonzero(~np.isfinite(values))[0]]
        raise ValueError(
            f"y contains infinite values (e.g. y[{bad}] = {arr[bad]!r}); class labels must be "
            "finite (-1, None or NaN mark unlabeled samples)."
        )
    if values.dtype.kind == "f" and np.any(values != np.round(values)):
        # regression targets passed by mistake would otherwise become one class per value
        bad = np.flatnonzero(values != np.round(values))
        raise ValueError(
            f"Unknown label type: continuous. y must hold class labels (integer-valued, -1 for "
            f"unlabeled); got {bad.size} non-integer value(s), e.g. y[{index[bad[0]]}] = "
            f"{float(values[bad[0]])!r}."
        )
    if index.size == 0:
        raise ValueError(
            "y has no labeled sample (every entry is -1, None or NaN: unlabeled); give at "
            "least one label or use pairs=."
        )
    classes, codes = np.unique(values, return_inverse=True)
    if classes.size < min_classes:
        raise ValueError(
            f"y has {classes.size} class(es) among its labeled samples, at least {min_classes} "
            "needed."
        )
    minus_ones = int(np.count_nonzero(arr == -1)) if arr.dtype.kind in "biuf" else 0
    return Labels(
        index=index.astype(np.int64),
        codes=codes.reshape(-1).astype(np.int64),
        classes=classes,
        minus_ones=minus_ones,
    )


def fitted_classes(y: Any) -> np.ndarray:
    """``classes_`` of a learner fitted with ``y`` (already validated by its ``fit``): the
    sorted classes of the labeled samples, empty when ``y`` is None or all unlabeled."""
    if y is None:
        return np.array([])
    arr = _as_label_array(y)
    if all_unlabeled(arr, arr.shape[0]):
        return np.array([])
    return check_labels(arr, arr.shape[0]).classes


def all_unlabeled(y: Any, n_samples: int) -> bool:
    """Whether ``y`` is well-formed for ``n_samples`` samples and marks every one unlabeled
    (a learner that can do without labels warns instead of refusing)."""
    try:
        arr = _as_label_array(y)
        return arr.shape == (n_samples,) and bool(_unlabeled_mask(arr).all())
    except (TypeError, ValueError):
        return False
