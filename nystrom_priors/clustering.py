"""Clustering with a learned factored kernel, and the scores the papers report.

* :func:`kernel_kmeans` — kernel k-means for ``K = G G^T``. The kernel k-means objective
  ``sum_i ||phi(x_i) - mu_c(i)||^2`` equals the k-means objective on the rows of G, so it is
  Lloyd's algorithm on G (k-means++ seeding, best of ``n_init`` restarts by inertia): O(n r k)
  per iteration, never an n x n matrix.
* :func:`normalized_mutual_info` — NMI of two labelings (Strehl & Ghosh 2002).
* :func:`pair_accuracy` — fraction of sample pairs on which two labelings agree about "same
  group or not" (the Rand index; Hu et al. 2011 report it over all pairs), optionally over
  a given set of constraint pairs.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._labels import refuse_nul_labels
from ._validation import (
    check_array,
    check_option,
    check_random_state,
    check_scalar,
    is_missing,
    refuse_masked,
)
from .exceptions import ConvergenceWarning

__all__ = ["kernel_kmeans", "normalized_mutual_info", "pair_accuracy"]


def kernel_kmeans(
    G: Any,
    n_clusters: int,
    *,
    n_init: int = 10,
    max_iter: int = 100,
    random_state: Any = None,
    verbose: int = 0,
) -> np.ndarray:
    """Kernel k-means for the kernel ``G G^T`` (k-means on the rows of G).

    Parameters
    ----------
    G : array-like of shape (n, r)
        Factor rows of the kernel (e.g. a learner's ``transform(X)``).
    n_clusters : int
    n_init : int, default=10
        Restarts; the labeling with the smallest within-cluster sum of squares is returned.
    max_iter : int, default=100
        Lloyd iterations per restart.
    random_state : None, int or Generator
    verbose : bool or int, default=0
        1: a tqdm bar over the restarts (when installed) and start/end records on the
        ``nystrom_priors`` logger; 2: a record per restart.

    Returns
    -------
    labels : ndarray of shape (n,), int64 in [0, n_clusters)

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors.clustering import kernel_kmeans
    >>> G = np.vstack([np.zeros((5, 2)), np.ones((5, 2)) * 10])
    >>> labels = kernel_kmeans(G, 2, random_state=0)
    >>> bool(len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1 and labels[0] != labels[5])
    True
    """
    from ._progress import Progress
    from .landmarks import kmeans

    G = check_array(G, name="G")
    k = int(check_scalar(n_clusters, "n_clusters", kind="int", lo=1, hi=G.shape[0]))
    n_init = int(check_scalar(n_init, "n_init", kind="int", lo=1))
    max_iter = int(check_scalar(max_iter, "max_iter", kind="int", lo=1))
    rng = check_random_state(random_state)
    from ._width import _binary_exponent

    # k-means is invariant to scaling and translating G. A power of two (exact) brings
    # max |G| into [0.5, 1), so that the column means and the restarts' inertias stay finite
    # and comparable (at |G| ~ 1e200 all inertias were inf and no labels were returned);
    # centred, a common offset (rows of a linear kernel on timestamps) no longer swamps the
    # differences between rows in the distances' expansion |x|^2 - 2 x.c + |c|^2; a second
    # power of two rescales the centred rows, and kmeans has nothing left to scale
    G64 = np.asarray(G, dtype=np.float64)
    e1 = _binary_exponent(float(np.abs(G64).max(initial=0.0)))
    G64 = np.ldexp(G64, -e1)
    G64 = G64 - G64.mean(axis=0) if G64.shape[0] else G64
    e2 = _binary_exponent(float(np.abs(G64).max(initial=0.0)))
    G64 = np.ascontiguousarray(np.ldexp(G64, -e2))
    e = e1 + e2
    best, best_inertia = None, np.inf

    def unscaled(value: float) -> float:  # for the progress records only (may be inf)
        with np.errstate(over="ignore"):
            return float(np.ldexp(value, 2 * e))

    with Progress(verbose, n_init, "kernel_kmeans restarts", "restart") as progress:
        for _ in range(n_init):
            centers, labels, _, done = kmeans(
                G64, k, rng=rng, max_iter=max_iter, return_converged=True
            )
            inertia = float(((G64 - centers[labels]) ** 2).sum())
            if inertia < best_inertia:
                best, best_inertia, converged = labels, inertia, done
            progress.update(inertia=unscaled(inertia), best=unscaled(best_inertia))
        progress.close(f"best inertia {unscaled(best_inertia):.6g}")
    if not converged:  # Lloyd's own criterion: its last assignment still moved samples
        warnings.warn(
            f"kernel_kmeans stopped at max_iter={max_iter} before its best restart converged "
            "(its last iteration still moved samples between clusters). Increase max_iter.",
            ConvergenceWarning,
            stacklevel=_user_stacklevel(),
        )
    found = np.unique(best).size
    if found < k:  # as scikit-learn's KMeans warns
        distinct = np.unique(G64, axis=0).shape[0]
        why = (
            f"G has only {distinct} distinct rows (duplicate samples, or a kernel that "
            "cannot tell them apart)"
            if distinct < k
            else "a cluster emptied in the best restart; try a larger n_init"
        )
        warnings.warn(
            f"kernel_kmeans found {found} distinct clusters, fewer than n_clusters={k}: {why}.",
            ConvergenceWarning,
            stacklevel=_user_stacklevel(),
        )
    return best


def _contingency(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """The contingency table of two labelings, as its nonzero cells and its marginals.

    Cell ``(i, j)`` counts the samples in class i of ``a`` and class j of ``b`` (classes
    numbered in sorted label order). At most n of the ``ka * kb`` cells are nonzero, and the
    scores need only those and the marginals, so the table is never formed: memory is O(n)
    whatever the number of classes (a dense table of n singleton classes is n^2 counts).

    Returns
    -------
    rows, cols : ndarray of shape (m,), int64
        Class indices of the m nonzero cells, in row-major order.
    counts : ndarray of shape (m,), int64
        Their counts (all > 0, summing to n).
    row_sums : ndarray of shape (ka,), int64
        Class sizes of ``a`` (all > 0).
    col_sums : ndarray of shape (kb,), int64
        Class sizes of ``b`` (all > 0).
    """
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    ia, ib = ia.astype(np.int64).ravel(), ib.astype(np.int64).ravel()
    kb = int(ib.max()) + 1
    # one integer per cell, ordered like the rows of the table; ka * kb <= n^2 fits in int64
    # for any n that fits in memory
    cells, counts = np.unique(ia * kb + ib, return_counts=True)
    rows, cols = np.divmod(cells, kb)
    return rows, cols, counts.astype(np.int64), np.bincount(ia), np.bincount(ib)


def _labeling(labels: Any, name: str) -> np.ndarray:
    """One labeling: a 1-D array of comparable, non-missing labels (numbers or strings)."""
    refuse_masked(labels, name)
    try:
        a = np.asarray(labels)
    except Exception as exc:  # ragged nested sequences
        raise ValueError(f"{name} could not be read as a 1-D array of labels: {exc}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels, got shape {a.shape}.")
    if not isinstance(labels, np.ndarray) and a.dtype.kind in "US" and a.size:
        # numpy reads [1, "1"] as two strings: a number and a string would count as one label
        values = np.asarray(labels, dtype=object)
        other = next((v for v in values if not isinstance(v, (str, bytes))), None)
        if other is not None:
            text = next(v for v in values if isinstance(v, (str, bytes)))
            raise ValueError(
                f"{name} mixes labels of different types: {type(other).__name__} (e.g. "
                f"{other!r}) and {type(text).__name__} (e.g. {text!r}); numpy would compare "
                "them as strings. Use one type."
            )
        refuse_nul_labels(values, name)
    if a.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers ({a.dtype}); labels must be real.")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        k = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(
            f"{name}[{k}] = {a[k]!r}: labels must not be NaN or infinite (a missing label "
            "cannot be compared)."
        )
    if a.dtype.kind == "O":
        # pd.NA's own != raises ("boolean value of NA is ambiguous"): tested by type first
        missing = [k for k, v in enumerate(a) if is_missing(v) or v != v]
        if missing:
            raise ValueError(
                f"{name}[{missing[0]}] = {a[missing[0]]!r}: labels must not be "
                "missing (None, NaN or pd.NA)."
            )
        try:
            np.unique(a)
        except TypeError as exc:
            raise ValueError(f"{name} mixes labels that cannot be compared: {exc}") from None
    elif a.dtype.kind not in "biufUS":
        raise ValueError(f"{name} must hold numbers or strings, got dtype {a.dtype}.")
    return a


def _labelings(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _labeling(a, "labels_true"), _labeling(b, "labels_pred")
    if a.shape != b.shape:
        raise ValueError(
            f"labelings differ in length: {a.shape[0]} and {b.shape[0]} (labels_true and "
            "labels_pred must label the same samples)."
        )
    if a.size == 0:
        raise ValueError("labelings are empty.")
    return a, b


def normalized_mutual_info(
    labels_true: Any, labels_pred: Any, *, average_method: str = "arithmetic"
) -> float:
    """Normalised mutual information ``I(A; B) / mean(H(A), H(B))``.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n,)
    average_method : {"arithmetic", "geometric"}, default="arithmetic"
        Mean of the two entropies (scikit-learn's default; "geometric" is Strehl & Ghosh's
        original ``I / sqrt(H(A) H(B))``).

    Returns
    -------
    nmi : float in [0, 1]; 1.0 when both labelings have a single group.

    Notes
    -----
    With ``p_ij`` the fraction of samples in class i of one labeling and j of the other and
    ``p_i``, ``p_j`` the class fractions, ``I = sum_ij p_ij log(p_ij / (p_i p_j))`` and
    ``H = -sum_i p_i log p_i``. Only the nonzero ``p_ij`` (at most n) enter, so the cost is
    O(n log n) time and O(n) memory however many classes there are.

    Examples
    --------
    >>> from nystrom_priors.clustering import normalized_mutual_info
    >>> normalized_mutual_info([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    method = check_option(average_method, "average_method", ("arithmetic", "geometric"))
    a, b = _labelings(labels_true, labels_pred)
    rows, cols, counts, row_sums, col_sums = _contingency(a, b)
    n = float(a.size)
    pa, pb = row_sums / n, col_sums / n
    ha = -np.sum(pa * np.log(pa))
    hb = -np.sum(pb * np.log(pb))
    if ha == 0.0 and hb == 0.0:
        return 1.0
    # empty cells contribute 0 * log 0 = 0 to the mutual information
    pij = counts / n
    mi = float(np.sum(pij * (np.log(pij) - np.log(pa[rows] * pb[cols]))))
    den = 0.5 * (ha + hb) if method == "arithmetic" else np.sqrt(ha * hb)
    if den <= 0.0:
        return 0.0
    return float(min(max(mi / den, 0.0), 1.0))


def pair_accuracy(labels_true: Any, labels_pred: Any, pairs: Any = None) -> float:
    """Fraction of pairs on which the labelings agree about being in the same group.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n,)
        Numbers or strings; the same length, no NaN or missing value (``ValueError``).
    pairs : int array of shape (k, 2) or (k, 3), optional
        Evaluate only these pairs (a third column is ignored); default all n(n-1)/2 pairs
        (the Rand index, computed from the nonzero cells of the contingency table in
        O(n log n) time and O(n) memory).

    Returns
    -------
    accuracy : float in [0, 1]

    Examples
    --------
    >>> from nystrom_priors.clustering import pair_accuracy
    >>> pair_accuracy([0, 0, 1, 1], [0, 0, 1, 2])  # 5 of the 6 pairs agree
    0.8333333333333334
    """
    a, b = _labelings(labels_true, labels_pred)
    if pairs is not None:
        if hasattr(pairs, "tocsr"):
            raise ValueError(
                f"pairs must be a dense (k, 2) or (k, 3) array of sample indices, got a sparse "
                f"{type(pairs).__name__}; call .toarray() first."
            )
        refuse_masked(pairs, "pairs")
        try:
            P = np.asarray(pairs)
        except ValueError as exc:  # ragged rows
            raise ValueError(
                f"pairs could not be read as a (k, 2) or (k, 3) array: {exc}"
            ) from None
        if P.ndim != 2 or P.shape[1] not in (2, 3) or P.shape[0] == 0:
            empty = " (no pair: the accuracy of none is undefined)" if P.size == 0 else ""
            raise ValueError(
                f"pairs must have shape (k, 2) or (k, 3) with k >= 1, got {P.shape}{empty}."
            )
        if P.dtype.kind not in "iuf" or (
            P.dtype.kind == "f" and not (np.isfinite(P).all() and (P == np.round(P)).all())
        ):
            raise ValueError(f"pairs must hold integer sample indices, got dtype {P.dtype}.")
        if (P[:, :2] < 0).any() or (P[:, :2] >= a.size).any():
            raise ValueError(f"pairs reference samples outside [0, {a.size - 1}].")
        P = P.astype(np.int64)
        i, j = P[:, 0], P[:, 1]
        if (i == j).any():  # always "agree": it would inflate the score, as the default omits it
            k = int(np.flatnonzero(i == j)[0])
            raise ValueError(
                f"pairs[{k}] = ({i[k]}, {j[k]}) pairs a sample with itself; a pair joins two "
                "different samples (the default, every pair, has no self pair)."
            )
        return float(np.mean((a[i] == a[j]) == (b[i] == b[j])))
    n = a.size
    if n < 2:
        raise ValueError("pair_accuracy needs at least two samples.")
    _, _, counts, row_sums, col_sums = _contingency(a, b)

    def same_group_pairs(sizes: np.ndarray) -> int:
        # exact integer pair counts (each <= n^2 / 2), so the ratio below is rounded once
        return int((sizes * (sizes - 1) // 2).sum())

    # a pair agrees when it is together in both labelings or apart in both; empty cells hold
    # no pair
    total = n * (n - 1) // 2
    agree = (
        total
        - same_group_pairs(row_sums)
        - same_group_pairs(col_sums)
        + 2 * same_group_pairs(counts)
    )
    return float(agree / total)
