"""metric-learn's pairs format: ``fit(pairs, y)`` with point pairs of shape (k, 2, d) and
y = +-1, and ``pair_score`` / ``pair_distance``.

Oracles: metric-learn's ITML itself (with a linear kernel the learned LogDet kernel is
``X A X^T`` for ITML's Mahalanobis matrix A, so the two ``pair_distance`` agree to round-off),
the index-pairs path of the same learner on the rows in first-appearance order (found with
pandas' order-keeping ``unique``), and the dense learned kernel ``model.kernel(A, B)``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nystrom_priors as npr
from nystrom_priors._pairs_format import point_pairs
from nystrom_priors.exceptions import ConvergenceWarning

LEARNERS = {
    "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(n_landmarks=8, random_state=0),
    "LogDetKernelLearner": lambda: npr.LogDetKernelLearner(
        n_landmarks=8, gamma=1.0, max_iter=30, random_state=0
    ),
    "VonNeumannKernelLearner": lambda: npr.VonNeumannKernelLearner(
        n_landmarks=8, max_iter=30, random_state=0
    ),
    "BCDNPKL": lambda: npr.BCDNPKL(max_iter=30, random_state=0),
}


def _problem(n=40, k=60, seed=0):
    """Points in two groups and k distinct index pairs labeled +1 within a group."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 2.0 * group[:, None]
    seen, rows = set(), []
    while len(rows) < k:
        i, j = rng.choice(n, 2, replace=False)
        if (min(i, j), max(i, j)) not in seen:
            seen.add((min(i, j), max(i, j)))
            rows.append([i, j, 1 if group[i] == group[j] else -1])
    return X, np.array(rows)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_point_pairs_fit_equals_the_index_pairs_fit(name):
    pd = pytest.importorskip("pandas")
    X, ip = _problem()
    order = pd.unique(ip[:, :2].ravel())  # rows in order of first appearance
    where = np.empty(X.shape[0], dtype=np.int64)
    where[order] = np.arange(order.size)
    remapped = np.column_stack([where[ip[:, 0]], where[ip[:, 1]], ip[:, 2]])
    by_index = _quiet(lambda: LEARNERS[name]().fit(X[order], pairs=remapped))
    by_points = _quiet(lambda: LEARNERS[name]().fit(X[ip[:, :2]], ip[:, 2]))
    np.testing.assert_array_equal(by_points.transform(X), by_index.transform(X))
    assert by_points.n_features_in_ == 3
    assert by_points.classes_.shape == (0,)


@pytest.mark.filterwarnings("ignore:Function stable_cumsum is deprecated:FutureWarning")
def test_same_point_pairs_through_itml_and_logdet_give_the_same_distances(ITML):
    X, ip = _problem(k=50, seed=1)
    ip = ip[np.argsort(-ip[:, 2], kind="stable")]  # ITML sweeps similar pairs first
    pairs, y = X[ip[:, :2]], ip[:, 2]
    sq = np.sum((pairs[:, 0] - pairs[:, 1]) ** 2, axis=1)
    lo, hi = np.percentile(sq, [30, 70])
    itml = ITML(gamma=1.0, max_iter=10, tol=0.0, prior="identity").fit(pairs, y, bounds=[lo, hi])
    model = npr.LogDetKernelLearner(init="linear", gamma=1.0, max_iter=10, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(pairs, y, bounds=np.where(y > 0, lo, hi))  # the one-line switch
    rng = np.random.default_rng(9)
    test = rng.normal(size=(30, 2, 3)) * 2.0
    ref = itml.pair_distance(test)
    np.testing.assert_allclose(model.pair_distance(test), ref, rtol=1e-9)
    np.testing.assert_allclose(model.pair_distance(pairs), itml.pair_distance(pairs), rtol=1e-9)
    # the learned similarity is a^T A b for ITML's Mahalanobis matrix A
    A = itml.get_mahalanobis_matrix()
    np.testing.assert_allclose(
        model.pair_score(test), np.einsum("ij,jk,ik->i", test[:, 0], A, test[:, 1]), rtol=1e-9
    )


@pytest.mark.filterwarnings("ignore:Function stable_cumsum is deprecated:FutureWarning")
def test_pairs_classification_accuracy_is_on_par_with_itml(ITML):
    from sklearn.datasets import load_iris

    X, labels = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    ij = rng.integers(0, X.shape[0], size=(600, 2))
    ij = ij[ij[:, 0] != ij[:, 1]]
    y = np.where(labels[ij[:, 0]] == labels[ij[:, 1]], 1, -1)
    pairs = X[ij]
    train, test = slice(0, 300), slice(300, None)
    itml = ITML(random_state=0).fit(pairs[train], y[train])

    def accuracy(dist_train, dist_test):  # best threshold on the training pairs
        cuts = np.sort(dist_train)
        acc = [np.mean((dist_train <= c) == (y[train] > 0)) for c in cuts]
        cut = cuts[int(np.argmax(acc))]
        return np.mean((dist_test <= cut) == (y[test] > 0))

    ref = accuracy(itml.pair_distance(pairs[train]), itml.pair_distance(pairs[test]))
    model = _quiet(lambda: npr.LogDetKernelLearner(gamma=1.0, random_state=0))
    _quiet(lambda: model.fit(pairs[train], y[train]))
    ours = accuracy(model.pair_distance(pairs[train]), model.pair_distance(pairs[test]))
    assert ref > 0.85  # the oracle works on this problem
    assert ours >= ref - 0.03, (ours, ref)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_fit_transform_refuses_point_pairs_with_what_to_do(name):
    """fit accepts point pairs, but fit_transform returns one row per sample of X, which
    point pairs do not have: a message that says so (not "X must be 2-D", which contradicts
    what fit just accepted, nor rows of the deduplicated points in an unstated order)."""
    X, ip = _problem()
    with pytest.raises(ValueError, match=r"fit_transform returns one row per sample.*transform"):
        LEARNERS[name]().fit_transform(X[ip[:, :2]], ip[:, 2])
    G = _quiet(lambda: LEARNERS[name]().fit_transform(X, pairs=ip))
    assert G.shape[0] == X.shape[0]


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_pair_score_and_distance_follow_the_learned_kernel(name):
    X, ip = _problem()
    model = _quiet(lambda: LEARNERS[name]().fit(X, pairs=ip))
    test = np.random.default_rng(3).normal(size=(12, 2, 3))
    A, B = test[:, 0], test[:, 1]
    K = model.kernel(np.vstack([A, B]))
    kab, kaa, kbb = np.diag(K[:12, 12:]), np.diag(K[:12, :12]), np.diag(K[12:, 12:])
    np.testing.assert_allclose(model.pair_score(test), kab, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        model.pair_distance(test), np.sqrt(np.maximum(kaa + kbb - 2 * kab, 0)), atol=1e-7
    )
    assert model.pair_distance(test[:, [0, 0]]).max() == 0.0


def test_point_pairs_mapping_is_exact_and_in_first_appearance_order():
    P = np.array(
        [
            [[1.0, 0.0], [2.0, 0.0]],
            [[2.0, 0.0], [1.0, 1e-16]],  # differs from [1, 0] by one ulp-ish: another row
            [[-0.0, 3.0], [1.0, 0.0]],
            [[0.0, 3.0], [2.0, 0.0]],  # -0.0 == 0.0: the same row
        ]
    )
    X, ip = point_pairs(P, [1, -1, 1, -1])
    assert X.tolist() == [[1.0, 0.0], [2.0, 0.0], [1.0, 1e-16], [0.0, 3.0]]
    assert ip.tolist() == [[0, 1, 1], [1, 2, -1], [3, 0, 1], [3, 1, -1]]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m, P: m.fit(P, np.zeros(len(P))), r"y must then hold \+1 .* got y\[0\] = 0"),
        (lambda m, P: m.fit(P), r"they need y: \+1 for a similar pair"),
        (lambda m, P: m.fit(P, np.ones(3)), r"y must have shape \(10,\), one \+-1 per pair"),
        (lambda m, P: m.fit(P[0], pairs=P), r"got point pairs as pairs=; pass them as the"),
        (
            lambda m, P: m.fit(P[:, [0, 0]], np.ones(10)),
            r"X\[0\] is a point pair that joins a point with itself",
        ),
        # rows 2 and 7 join the same two points (in either order) with opposite labels: named
        # by the user's rows, not by the library's indices of the distinct points
        (
            lambda m, P: m.fit(
                np.concatenate([P[:7], P[2:3, ::-1], P[8:]]), np.where(np.arange(10) == 7, 1, -1)
            ),
            r"X\[2\] and X\[7\] are point pairs of the same two points with opposite labels "
            r"\(y\[2\] = -1, y\[7\] = \+1\)",
        ),
        (lambda m, P: m.pair_score(P[:, 0]), r"point pairs of shape \(n_pairs, 2, n_features\)"),
    ],
)
def test_bad_point_pairs_are_refused(call, match):
    P = np.random.default_rng(0).normal(size=(10, 2, 3))
    model = npr.LogDetKernelLearner(n_landmarks=5, random_state=0)
    if "pair_score" in match or "n_pairs, 2" in match:
        model.fit(P, np.where(np.arange(10) % 2 == 0, 1, -1))
    with pytest.raises(ValueError, match=match):
        call(model, P)
