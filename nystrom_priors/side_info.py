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
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._labels import (
    Labels,
    _as_label_array,
    _given,
    all_unlabeled,
    check_labels,
    fitted_classes,
)
from ._validation import (
    check_random_state,
    check_random_state_param,
    check_scalar,
    dense_array,
)

__all__ = [
    "Labels",
    "all_unlabeled",
    "check_labels",
    "fitted_classes",
    "check_pairs",
    "check_pairs_agree_with_labels",
    "labels_to_pairs",
]


# worded as scikit-learn's estimator checks expect of a one-sample fit ("one sample")
_ONE_LABELED = "y labels only one sample; no pair can be formed (label at least two)."


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
    arr = dense_array(pairs, name, f"{form}, a dense array")
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


def canonical_pairs(pairs: Any, n_samples: int, name: str = "pairs") -> np.ndarray:
    """Every row of ``pairs`` validated (``_pair_rows``) as ``[min(i, j), max(i, j), sign]``,
    duplicates kept: the form in which two rows are the same constraint iff they are equal."""
    arr = _pair_rows(
        pairs,
        n_samples,
        name=name,
        empty=f"{name} is empty; give at least one constraint.",
        allow_self=False,
        signs="+1 (must-link) or -1 (cannot-link)",
    )
    i, j = arr[:, 0], arr[:, 1]
    return np.stack([np.minimum(i, j), np.maximum(i, j), arr[:, 2]], axis=1)


def _contradicting_rows(canon: np.ndarray) -> tuple[int, int] | None:
    """Rows ``(r, s)``, ``r < s``, of ``canon`` ((k, 3) rows ``[i, j, sign]`` with ``i < j``)
    that give the same pair with opposite signs (the smallest such pair), or None."""
    order = np.lexsort((canon[:, 2], canon[:, 1], canon[:, 0]))
    k = canon[order]
    clash = np.flatnonzero((k[1:, :2] == k[:-1, :2]).all(axis=1) & (k[1:, 2] != k[:-1, 2]))
    if not clash.size:
        return None
    r, s = sorted((int(order[clash[0]]), int(order[clash[0] + 1])))
    return r, s


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
    canon = canonical_pairs(pairs, n_samples, name)
    uniq, first = np.unique(canon, axis=0, return_index=True)
    if uniq.shape[0] < canon.shape[0]:
        dup = int(np.setdiff1d(np.arange(canon.shape[0]), first)[0])  # first repeat, by row
        a, b, sign = (int(v) for v in canon[dup])
        warnings.warn(
            f"{name} holds {canon.shape[0] - uniq.shape[0]} duplicated constraint(s); they are "
            f"counted once (the first: row {dup}, ({a}, {b}, {sign:+d})).",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    clash = _contradicting_rows(canon)
    if clash is not None:
        a, b = canon[clash[0], :2]
        raise ValueError(
            f"{name} has the pair ({a}, {b}) both as must-link (+1) and as cannot-link (-1) "
            f"(rows {clash[0]} and {clash[1]})."
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
    if y.ndim != 1:  # check_labels reads the length from y itself here
        raise ValueError(f"y must be 1-D with one entry per sample, got shape {y.shape}.")
    return _labels_to_pairs(check_labels(y, y.shape[0]), n_constraints, same_fraction, random_state)


def _labels_to_pairs(
    labels: Labels, n_constraints: int | None, same_fraction: float, random_state: Any
) -> np.ndarray:
    """``labels_to_pairs`` of validated labels (``check_labels``)."""
    idx = labels.index
    l = idx.size
    if l < 2:
        raise ValueError(_ONE_LABELED)
    total = l * (l - 1) // 2
    # checked even where every pair is returned and they are unused: a bad value is a mistake
    k = (
        None
        if n_constraints is None
        else int(check_scalar(n_constraints, "n_constraints", kind="int", lo=1))
    )
    frac = check_scalar(same_fraction, "same_fraction", lo=0.0, hi=1.0)
    if k is None:
        check_random_state_param(random_state)  # not drawn from: a RandomState stays as it is
        if total > _MAX_ALL_PAIRS:
            raise ValueError(
                f"y has {l} labeled samples: all {total} pairs would take "
                f"{24 * total / 2**30:.1f} GiB; pass n_constraints to draw a number of them."
            )
        # filled row by row in triu_indices' order, so that the output is the peak: index
        # arrays of all pairs and their stacked copy would take 2.7 times it
        out = np.empty((total, 3), dtype=np.int64)
        codes, start = labels.codes, 0
        for i in range(l - 1):
            block = out[start : start + l - 1 - i]
            block[:, 0] = idx[i]
            block[:, 1] = idx[i + 1 :]
            block[:, 2] = np.where(codes[i + 1 :] == codes[i], 1, -1)
            start += l - 1 - i
        return out
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


def _label_vector(y: Any, n_samples: int) -> np.ndarray:
    """``y`` as an array, refused unless it has one entry per sample."""
    y = _as_label_array(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"y must have shape ({n_samples},) like X's rows, got shape {y.shape}.")
    return y


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
    labels = check_labels(_label_vector(y, n_samples), n_samples)
    return _derived_pairs(labels, n_constraints, random_state)


def _derived_pairs(labels: Labels, n_constraints: int | None, random_state: Any) -> np.ndarray:
    """``pairs_from_labels`` of validated labels (``check_labels``)."""
    total = labels.index.size * (labels.index.size - 1) // 2
    if total == 0:
        raise ValueError(_ONE_LABELED)
    if labels.n_classes < 2:
        from ._feature_names import _user_stacklevel

        warnings.warn(
            "y has labeled samples of only one class: every derived pair is must-link."
            + labels.one_class_hint(),
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    if n_constraints is None:
        k = min(total, 20 * labels.n_classes**2, MAX_DEFAULT_CONSTRAINTS)
    else:
        k = int(check_scalar(n_constraints, "n_constraints", kind="int", lo=1))
    lp = _labels_to_pairs(labels, min(k, total), 0.5, random_state)
    return lp[np.argsort(-lp[:, 2], kind="stable")]


def side_pairs(
    y: Any, pairs: Any, n_samples: int, n_constraints: int | None, *, random_state: Any
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(drawn, given, kept)``: the pairs a pair-based learner draws from ``y``
    (``pairs_from_labels``), the given ``pairs`` checked (``check_pairs``) and against the
    labels (``check_pairs_agree_with_labels``), and the given rows ``given`` keeps; None for
    what is absent.

    With pairs given, a ``y`` that labels fewer than two samples contributes no pair, as
    ``GeneralizedNystrom`` treats it: a Pipeline passes its ``y`` along, and every -1 then means
    "no labels", not "no side information". It is still validated."""
    labels = None
    if y is not None:
        y = _label_vector(y, n_samples)
        if pairs is None or not all_unlabeled(y, n_samples):
            labels = check_labels(y, n_samples)
    drawn = None
    if labels is not None and (pairs is None or labels.index.size >= 2):
        drawn = _derived_pairs(labels, n_constraints, random_state)
    given = kept = None
    if pairs is not None:
        given, kept = check_pairs(pairs, n_samples, return_index=True)
        if labels is not None:  # against the labels, not the pairs drawn from them
            check_pairs_agree_with_labels(given, kept, labels, n_samples)
    return drawn, given, kept


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
