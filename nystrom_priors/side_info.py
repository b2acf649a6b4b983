"""Side information: partial labels and pairwise constraints.

Conventions (shared by every learner):

* ``y`` has one entry per sample; ``-1`` marks an unlabeled sample (the
  ``sklearn.semi_supervised`` convention), and so do ``None`` and ``NaN`` (pandas' missing
  values). Other values are class labels of any one type -- integers, strings, other sortable
  objects, also in a pandas Series or Categorical -- and ``classes_`` holds them sorted
  (:func:`check_labels`).
* ``pairs`` is an integer array of shape (k, 3) with rows ``[i, j, +1]`` (must-link / similar)
  or ``[i, j, -1]`` (cannot-link / dissimilar); ``i`` and ``j`` index the rows of ``X``.

Labels determine pairs (same class -> +1, different classes -> -1); :func:`labels_to_pairs`
draws them, metric-learn style.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_random_state, check_scalar, is_sparse

__all__ = [
    "Labels",
    "all_unlabeled",
    "check_labels",
    "fitted_classes",
    "check_pairs",
    "check_pairs_agree_with_labels",
    "labels_to_pairs",
]

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
    """

    index: np.ndarray
    codes: np.ndarray
    classes: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])

    def onehot(self) -> np.ndarray:
        """Y of shape (l, n_classes) with ``Y Y^T`` the ideal kernel ``K*``."""
        Y = np.zeros((self.index.shape[0], self.n_classes))
        Y[np.arange(self.index.shape[0]), self.codes] = 1.0
        return Y


def _given(v: Any) -> Any:
    """A value as the user gave it, as a plain Python number (no ``np.int64(...)`` repr)."""
    return v.item() if isinstance(v, np.generic) else v


def _as_label_array(y: Any) -> np.ndarray:
    """``y`` as a numpy array, without importing pandas.

    A pandas object (detected by its type's module) goes through ``to_numpy``; extension
    dtypes (categorical, nullable integers, ``string``) become object arrays whose missing
    entries are ``NaN`` or ``pd.NA``, which :func:`_unlabeled_mask` reads as unlabeled. A list
    mixing strings and numbers becomes an object array (``np.asarray`` would turn the marker
    ``-1`` into the string ``'-1'``).
    """
    if is_sparse(y):
        raise TypeError(
            "y must be a dense 1-D array of class labels (one per sample, -1 for unlabeled), "
            f"got a sparse matrix of type {type(y).__name__} and shape {y.shape}; sparse "
            "labels are not accepted: pass a dense array, e.g. y.toarray().ravel()."
        )
    if type(y).__module__.startswith("pandas") and hasattr(y, "to_numpy"):
        dtype = getattr(y, "dtype", None)
        return y.to_numpy() if isinstance(dtype, np.dtype) else y.to_numpy(dtype=object)
    arr = np.asarray(y)
    if arr.dtype.kind in "US" and not isinstance(y, np.ndarray):
        arr = np.asarray(y, dtype=object)
    return arr


def _is_marker(v: Any) -> bool:
    """Whether one entry of an object array marks an unlabeled sample: None, NaN, pd.NA, -1."""
    if v is None or type(v).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return False
    return bool(v == -1 or v != v)


def _unlabeled_mask(arr: np.ndarray) -> np.ndarray:
    """Boolean mask of the unlabeled entries of a 1-D label array (see :func:`check_labels`)."""
    kind = arr.dtype.kind
    if kind in "biu":
        return arr == -1
    if kind == "f":
        return (arr == -1) | np.isnan(arr)
    if kind in "US":
        strings = arr.astype(str)
    elif kind == "O":
        mask = np.fromiter((_is_marker(v) for v in arr), dtype=bool, count=arr.shape[0])
        strings = np.array([isinstance(v, str) and v == "-1" for v in arr], dtype=bool)
        strings = np.where(strings, "-1", "")
    else:
        raise TypeError(
            f"Unknown label type: y must hold class labels (numbers, strings or other sortable "
            f"objects; -1, None or NaN for unlabeled), got dtype {arr.dtype}."
        )
    ambiguous = np.flatnonzero(strings == "-1")
    if ambiguous.size:
        raise ValueError(
            f"y[{ambiguous[0]}] is the string '-1': ambiguous between a class named '-1' and "
            "the unlabeled marker. Mark unlabeled samples with the integer -1, None or NaN "
            "(in an object array), or rename the class."
        )
    return mask if kind == "O" else np.zeros(arr.shape[0], dtype=bool)


def _type_name(v: Any) -> str:
    if isinstance(v, numbers.Real):
        return "number"
    return "str" if isinstance(v, str) else type(v).__name__  # np.str_ is a str


def _labeled_values(values: np.ndarray) -> np.ndarray:
    """The labeled entries of an object array as a homogeneous array: int64, float64, str
    (``<U``) or, for other sortable objects, object. Mixed types raise ``TypeError``."""
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
        return values.astype(str)
    try:
        np.unique(values)
    except TypeError:
        raise TypeError(
            f"y holds labels of type {kind}, which cannot be sorted into classes_; use "
            "numbers or strings."
        ) from None
    return values


def check_labels(y: Any, n_samples: int, *, min_classes: int = 1) -> Labels:
    """Validate partial labels ``y`` for ``n_samples`` samples.

    Labels may be integers, integer-valued floats, booleans, strings or other sortable objects,
    in a list, an ndarray or a pandas Series / Categorical. Unlabeled samples are marked by
    ``-1`` (the ``sklearn.semi_supervised`` convention; the integer in an object array), by
    ``None`` or by ``NaN`` (pandas' missing values, ``pd.NA`` included). The classes are the
    distinct labels of the labeled samples, sorted; every other value is a class.

    Two inputs are refused because they are ambiguous or mistaken: the *string* ``'-1'``
    (a class named '-1', or a marker that went through a CSV file?) and labels of mixed
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
    return Labels(
        index=index.astype(np.int64), codes=codes.reshape(-1).astype(np.int64), classes=classes
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


def _pair_rows(
    pairs: Any, n_samples: int, *, name: str, empty: str, allow_self: bool, signs: str
) -> np.ndarray:
    """Index rows ``[i, j, sign]`` as an (k, 3) int64 array, checked before any cast.

    Shape, dtype, the range of ``i`` and ``j``, self pairs (unless ``allow_self``) and the
    signs (+-1, described by ``signs``) are checked on the values as given: casting first
    would wrap an uint64 ``2**64 - 1`` to the sign -1 or a float ``inf`` to ``-2**63``.
    Messages show the offending row as given.
    """
    form = f"{name} must be an integer array of shape (k, 3) with rows [i, j, +1 or -1]"
    if is_sparse(pairs):
        raise TypeError(
            f"{form}, a dense array; got a sparse matrix of type {type(pairs).__name__} and "
            f"shape {pairs.shape}. Sparse {name} are not accepted: pass a dense array, e.g. "
            f"{name}.toarray()."
        )
    try:
        arr = np.asarray(pairs)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{form}; got a ragged sequence ({exc}).") from None
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{form}, got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(empty)

    def row(k: int) -> list:
        return [_given(v) for v in arr[k].tolist()]

    kind = arr.dtype.kind
    if kind == "f":
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            k = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{name}[{k}] = {row(k)} is not finite; indices must be integers in "
                f"[0, {n_samples - 1}] and signs {signs}."
            )
        fractional = (arr != np.round(arr)).any(axis=1)
        if fractional.any():
            k = int(np.flatnonzero(fractional)[0])
            raise TypeError(
                f"{name} must hold integers, got dtype {arr.dtype} with a fractional value "
                f"in {name}[{k}] = {row(k)}."
            )
    elif kind == "O":
        # Python integers beyond the int64 range (numpy keeps them as objects): compared
        # exactly below; anything else is refused
        if not all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
            for v in arr.flat
        ):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}.")
    elif kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}.")
    idx, s = arr[:, :2], arr[:, 2]
    bad = ((idx < 0) | (idx >= n_samples)).any(axis=1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}[{k}] = {row(k)} references a sample out of range; indices must be "
            f"in [0, {n_samples - 1}]."
        )
    if not allow_self:
        same = idx[:, 0] == idx[:, 1]
        if same.any():
            k = int(np.flatnonzero(same)[0])
            raise ValueError(f"{name}[{k}] = {row(k)} pairs a sample with itself.")
    ok = (s == 1) | (s == -1)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{name}[{k}] = {row(k)} has sign {row(k)[2]}; use {signs}.")
    return arr.astype(np.int64)  # every value is now in [-1, n_samples): exact


def check_pairs(
    pairs: Any, n_samples: int, *, name: str = "pairs", return_index: bool = False
) -> Any:
    """Validate pairwise constraints; return them as an (k, 3) int64 array with i < j.

    Duplicated constraints are removed with a warning; a pair given both as must-link and as
    cannot-link, a self pair, an index out of range or a sign other than +-1 raise
    ``ValueError``; so do a non-finite value and (``TypeError``) a non-integer dtype or a sparse
    matrix. Values are checked as given, before the cast to int64 (an uint64 ``2**64 - 1`` is
    refused, never read as -1). With ``return_index`` also return the rows of the input that
    were kept (the first of each duplicate), so per-pair data can follow the pairs.
    """
    arr = _pair_rows(
        pairs,
        n_samples,
        name=name,
        empty=f"{name} is empty; give at least one constraint.",
        allow_self=False,
        signs="+1 (must-link) or -1 (cannot-link)",
    )
    i, j, s = arr[:, 0], arr[:, 1], arr[:, 2]
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    canon = np.stack([lo, hi, s], axis=1)
    uniq, first = np.unique(canon, axis=0, return_index=True)
    if uniq.shape[0] < canon.shape[0]:
        warnings.warn(
            f"{name} holds {canon.shape[0] - uniq.shape[0]} duplicated constraint(s); they are "
            "counted once.",
            UserWarning,
            stacklevel=3,
        )
    keys, counts = np.unique(uniq[:, :2], axis=0, return_counts=True)
    if (counts > 1).any():
        a, b = keys[np.flatnonzero(counts > 1)[0]]
        raise ValueError(
            f"{name} has the pair ({a}, {b}) both as must-link (+1) and as cannot-link (-1)."
        )
    kept = np.sort(first)
    if return_index:
        return canon[kept], kept
    return canon[kept]


# all pairs are enumerated only up to this many (n_constraints=None): 2^25 rows are 800 MB
_MAX_ALL_PAIRS = 1 << 25
# default number of pairs a learner derives from labels: 20 n_classes^2 (metric-learn's rule),
# but never more than this, whatever the number of classes or labels
MAX_DEFAULT_CONSTRAINTS = 10_000


class _PairIndex:
    """Unranking of the pairs among ``l`` labeled samples, without enumerating them.

    The pairs ``(p, q)``, ``p < q``, of labeled positions are ordered lexicographically (the
    order of ``np.triu_indices(l, 1)``); must-link pairs (same class) and cannot-link pairs
    each keep that order. ``must(t)`` / ``cannot(t)`` return the t-th pair of each kind in
    O(log l) per pair after O(l log l) set-up, so k pairs cost O(k log l + l log l) time and
    O(k + l) memory, where enumerating all pairs costs O(l^2).
    """

    def __init__(self, codes: np.ndarray) -> None:
        l = codes.shape[0]
        self.l = l
        self.codes = codes
        order = np.argsort(codes, kind="stable")  # positions grouped by class, ascending
        self.order = order
        where = np.empty(l, dtype=np.int64)  # where[p]: index of position p in order
        where[order] = np.arange(l)
        counts = np.bincount(codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = where - starts[codes]  # rank of p among its class's positions
        self.where, self.rank, self.starts = where, rank, starts
        same_after = counts[codes] - rank - 1  # same-class partners q > p
        diff_after = (l - 1 - np.arange(l)) - same_after
        self.cum_same = np.cumsum(same_after)
        self.cum_diff = np.cumsum(diff_after)
        self.n_must = int(self.cum_same[-1]) if l else 0
        self.n_cannot = int(self.cum_diff[-1]) if l else 0
        # g = position - rank within the class is non-decreasing along each class's block;
        # keyed by class it is sorted, so one searchsorted counts class members before q
        self.big = 2 * l + 2
        g = order - (np.arange(l) - starts[codes[order]])
        self.key = codes[order] * self.big + g
        self.g = g

    def must(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = np.searchsorted(self.cum_same, t, side="right")
        prev = np.where(p > 0, self.cum_same[np.maximum(p - 1, 0)], 0)
        # the (t - prev)-th class member after p
        return p, self.order[self.where[p] + 1 + (t - prev)]

    def cannot(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = np.searchsorted(self.cum_diff, t, side="right")
        prev = np.where(p > 0, self.cum_diff[np.maximum(p - 1, 0)], 0)
        offset = t - prev  # the offset-th position q > p of another class
        c = self.codes[p]
        g_p = self.g[self.where[p]]
        # class members before q: all up to p, and those after p with g <= g_p + offset
        members = np.searchsorted(self.key, c * self.big + g_p + offset, side="right")
        skipped = members - (self.starts[c] + self.rank[p] + 1)
        return p, p + 1 + offset + skipped


def labels_to_pairs(
    y: Any,
    n_constraints: int | None = None,
    *,
    same_fraction: float = 0.5,
    random_state: Any = None,
) -> np.ndarray:
    """Turn partial labels into must-link / cannot-link pairs.

    Drawing ``k`` pairs costs O(k log l + l log l) time and O(k + l) memory for ``l`` labeled
    samples: the pairs are never enumerated (60,000 labels give 1,000 pairs in milliseconds).
    Must-link and cannot-link pairs are each drawn uniformly without replacement.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels of any type (:func:`check_labels`); -1, None or NaN for unlabeled samples.
    n_constraints : int, optional
        Number of distinct pairs to draw among the labeled samples; None gives all of them
        (refused beyond 2^25 pairs: pass a number).
    same_fraction : float, default=0.5
        Fraction of must-link pairs when drawing (as available).
    random_state : None, int or Generator

    Returns
    -------
    pairs : ndarray of shape (k, 3), int64, rows ``[i, j, +-1]`` with ``i < j``, sorted

    Examples
    --------
    >>> from nystrom_priors.side_info import labels_to_pairs
    >>> labels_to_pairs([0, 0, 1, -1]).tolist()
    [[0, 1, 1], [0, 2, -1], [1, 2, -1]]
    """
    y = _as_label_array(y)
    labels = check_labels(y, y.shape[0])
    idx = labels.index
    l = idx.size
    if l < 2:
        raise ValueError("y has a single labeled sample; no pair can be formed.")
    total = l * (l - 1) // 2
    if n_constraints is None:
        if total > _MAX_ALL_PAIRS:
            raise ValueError(
                f"y has {l} labeled samples: all {total} pairs would take "
                f"{24 * total / 2**30:.1f} GiB; pass n_constraints to draw a number of them."
            )
        ii, jj = np.triu_indices(l, k=1)
        same = labels.codes[ii] == labels.codes[jj]
        return np.stack([idx[ii], idx[jj], np.where(same, 1, -1)], axis=1).astype(np.int64)
    k = int(check_scalar(n_constraints, "n_constraints", kind="int", lo=1))
    frac = check_scalar(same_fraction, "same_fraction", lo=0.0, hi=1.0)
    rng = check_random_state(random_state)
    if k > total:
        raise ValueError(
            f"n_constraints={k} exceeds the {total} distinct pairs among the {l} labeled samples."
        )
    pairs = _PairIndex(labels.codes)
    n_pos = min(pairs.n_must, int(round(frac * k)))
    n_neg = min(pairs.n_cannot, k - n_pos)
    n_pos = min(pairs.n_must, k - n_neg)
    # the same draws as choosing among the enumerated pairs of each kind (Generator.choice
    # of an array picks by index): the pairs do not depend on how they are found
    t_pos = rng.choice(pairs.n_must, n_pos, replace=False)
    t_neg = rng.choice(pairs.n_cannot, n_neg, replace=False)
    p1, q1 = pairs.must(t_pos)
    p2, q2 = pairs.cannot(t_neg)
    p, q = np.concatenate([p1, p2]), np.concatenate([q1, q2])
    sign = np.concatenate([np.ones(n_pos, np.int64), -np.ones(n_neg, np.int64)])
    order = np.lexsort((q, p))
    return np.stack([idx[p[order]], idx[q[order]], sign[order]], axis=1).astype(np.int64)


def pairs_from_labels(
    y: Any, n_samples: int, n_constraints: int | None = None, *, random_state: Any = None
) -> np.ndarray:
    """The pairs a pair-based learner derives from labels in ``fit(X, y)``.

    Validates ``y`` (length ``n_samples``, -1 = unlabeled), draws ``n_constraints`` distinct
    pairs among the labeled samples (default ``20 * n_classes**2`` as metric-learn, capped at
    all pairs and at ``MAX_DEFAULT_CONSTRAINTS`` = 10,000, so that many labels or classes
    never make the default quadratic), half must-link where available, and orders them
    must-link first (ITML's order). Warns when the labeled samples hold a single class.
    """
    y = _as_label_array(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must have shape ({n_samples},) like X's rows, got shape {y.shape}.")
    labels = check_labels(y, n_samples)
    if labels.n_classes < 2:
        warnings.warn(
            "y has labeled samples of only one class: every derived pair is must-link.",
            UserWarning,
            stacklevel=3,
        )
    total = labels.index.size * (labels.index.size - 1) // 2
    if total == 0:
        raise ValueError("y has a single labeled sample; no pair can be formed.")
    if n_constraints is None:
        k = min(total, 20 * labels.n_classes**2, MAX_DEFAULT_CONSTRAINTS)
    else:
        k = int(check_scalar(n_constraints, "n_constraints", kind="int", lo=1))
    lp = labels_to_pairs(y, min(k, total), random_state=random_state)
    return lp[np.argsort(-lp[:, 2], kind="stable")]


def check_pairs_agree_with_labels(
    pairs: np.ndarray, rows: np.ndarray, labels: Labels, n_samples: int
) -> None:
    """Raise ``ValueError`` if a given pair contradicts the labels.

    A must-link pair of two labeled samples of different classes, or a cannot-link pair of
    two samples of the same class, can never hold together with the labels. Checked against
    the labels themselves (not against the pairs a learner draws from them), so the verdict
    and the message are the same on every call: the first offending pair in the given order.

    Parameters
    ----------
    pairs : ndarray of shape (k, 3)
        Validated pairs (``check_pairs``).
    rows : ndarray of shape (k,)
        Their rows in the caller's ``pairs`` (for the message).
    labels : Labels
    n_samples : int
    """
    code = np.full(n_samples, -1, dtype=np.int64)
    code[labels.index] = labels.codes
    a, b = code[pairs[:, 0]], code[pairs[:, 1]]
    bad = (a >= 0) & (b >= 0) & ((a == b) != (pairs[:, 2] > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        i, j, sign = (int(v) for v in pairs[k])
        ci, cj = labels.classes[a[k]].tolist(), labels.classes[b[k]].tolist()
        kind = "must-link" if sign > 0 else "cannot-link"
        relation = "different labels" if sign > 0 else "the same label"
        raise ValueError(
            f"pairs[{int(rows[k])}] = {[i, j, sign]} is a {kind} pair, but y gives "
            f"samples {i} and {j} {relation} ({ci!r} and {cj!r}): the side information "
            "contradicts itself."
        )
