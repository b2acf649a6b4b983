"""Clustering helpers against scikit-learn."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nystrom_priors.clustering import kernel_kmeans, normalized_mutual_info, pair_accuracy

metrics = pytest.importorskip("sklearn.metrics")


@given(
    a=st.lists(st.integers(0, 4), min_size=2, max_size=60),
    seed=st.integers(0, 1000),
    method=st.sampled_from(["arithmetic", "geometric"]),
)
def test_nmi_matches_sklearn(a, seed, method):
    a = np.array(a)
    b = np.random.default_rng(seed).integers(0, 3, size=a.size)
    ours = normalized_mutual_info(a, b, average_method=method)
    ref = metrics.normalized_mutual_info_score(a, b, average_method=method)
    assert ours == pytest.approx(ref, abs=1e-12)


@given(a=st.lists(st.integers(0, 4), min_size=2, max_size=60), seed=st.integers(0, 1000))
def test_pair_accuracy_is_the_rand_index(a, seed):
    a = np.array(a)
    b = np.random.default_rng(seed).integers(0, 3, size=a.size)
    assert pair_accuracy(a, b) == pytest.approx(metrics.rand_score(a, b), abs=1e-12)
    # over explicit pairs: brute force
    i, j = np.triu_indices(a.size, 1)
    pairs = np.column_stack([i, j])
    assert pair_accuracy(a, b, pairs) == pytest.approx(metrics.rand_score(a, b), abs=1e-12)


def test_kernel_kmeans_is_kmeans_on_factor_rows():
    cluster = pytest.importorskip("sklearn.cluster")
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(4, 5)) * 6
    y = rng.integers(0, 4, size=300)
    G = centers[y] + rng.normal(size=(300, 5))
    ours = kernel_kmeans(G, 4, random_state=0)
    ref = cluster.KMeans(4, n_init=10, random_state=0).fit_predict(G)
    assert metrics.adjusted_rand_score(ours, ref) == pytest.approx(1.0)

    def inertia(lab):
        return sum(((G[lab == c] - G[lab == c].mean(0)) ** 2).sum() for c in range(4))

    assert inertia(ours) <= inertia(ref) * (1 + 1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="length"):
        normalized_mutual_info([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="average_method"):
        normalized_mutual_info([0, 1], [0, 1], average_method="max")
    with pytest.raises(ValueError, match="outside"):
        pair_accuracy([0, 1], [0, 1], [[0, 5]])
    with pytest.raises(ValueError, match="n_clusters"):
        kernel_kmeans(np.zeros((3, 2)), 5)


@pytest.mark.parametrize("scale", [1e200, 2.0**600, 1e-300])
def test_kernel_kmeans_is_scale_invariant_at_extreme_magnitudes(scale):
    """k-means labels do not depend on the scale of G. At |G| ~ 1e200 the squared distances
    overflowed: the restarts' inertias were all inf and kernel_kmeans returned None (and, with
    the batched seeding, the seeding could accept no draw and looped)."""
    G = np.random.default_rng(0).normal(size=(60, 3))
    G[:20] += 6.0
    expected = kernel_kmeans(G, 3, random_state=0)
    got = kernel_kmeans(G * scale, 3, random_state=0)
    assert got is not None
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("offset", [1e3, 1e6, 1e8])
def test_kernel_kmeans_is_translation_invariant(offset):
    """A common offset does not change k-means' partition: two exact groups 1e-8 of the
    offset apart are found (scikit-learn's KMeans finds them too); uncentred, the distances'
    expansion cancelled and every row fell into one cluster."""
    cluster = pytest.importorskip("sklearn.cluster")
    base = np.vstack([np.zeros((5, 2)), np.ones((5, 2))])
    G = offset + base * (1e-8 * offset)
    labels = kernel_kmeans(G, 2, random_state=0)
    ref = cluster.KMeans(2, n_init=10, random_state=0).fit_predict(G)
    assert metrics.adjusted_rand_score(labels, base[:, 0]) == 1.0
    assert metrics.adjusted_rand_score(labels, ref) == 1.0


def test_kernel_kmeans_centres_after_scaling_where_column_sums_overflow():
    """Centring sums each column: rows near float64's top (an offset of 50 at 2^1016) must be
    scaled first, or the means are inf and the rows NaN (kmeans then never returned)."""
    G = np.random.default_rng(0).normal(size=(60, 3))
    G[:20] += 6.0
    expected = kernel_kmeans(G, 3, random_state=0)
    got = kernel_kmeans(np.ldexp(G + 50.0, 1016), 3, random_state=0)
    np.testing.assert_array_equal(got, expected)


def test_kernel_kmeans_warns_when_it_finds_fewer_clusters_than_asked():
    from nystrom_priors import ConvergenceWarning

    G = np.repeat(np.eye(3), 4, axis=0)  # 3 distinct rows
    with pytest.warns(ConvergenceWarning, match="found 3 distinct clusters.*only 3 distinct"):
        labels = kernel_kmeans(G, 5, random_state=0)
    assert np.unique(labels).size == 3


def test_kmeans_is_scale_invariant_where_squared_distances_overflow():
    """kmeans scales X by a power of two before clustering: at 1e200 (float64) and 2^70
    (float32) the squared distances overflow, yet labels and (rescaled) centres equal the
    unscaled run's exactly. Before, the seeding drew from infinite weights and looped."""
    from nystrom_priors.landmarks import kmeans

    X = np.random.default_rng(0).normal(size=(40, 4))
    X[:15] += 5.0
    for Xs, scale in ((X, 2.0**700), (X.astype(np.float32), 2.0**70)):
        C, labels, it = kmeans(Xs, 3, rng=np.random.default_rng(0), max_iter=20)
        Cb, labels_b, it_b = kmeans(Xs * scale, 3, rng=np.random.default_rng(0), max_iter=20)
        np.testing.assert_array_equal(labels_b, labels)
        np.testing.assert_array_equal(Cb, C * scale)
        assert it_b == it


# ----- the scores refuse labelings they cannot compare ----------------------------------------


@pytest.mark.parametrize(
    "a, b, match",
    [
        ([0.0, 1.0, np.nan, 1.0], [0, 1, 1, 0], r"labels_true\[2\] = .*nan.*NaN"),
        ([0, 1, 1, 0], [0.0, np.inf, 1.0, 1.0], r"labels_pred\[1\]"),
        (np.array(["a", None, "b", "a"], dtype=object), [0, 1, 1, 0], "missing"),
        ([0, 1, 1, 0], [0, 1, 1], "differ in length"),
        (np.array([[0, 1], [1, 0]]), [0, 1, 1, 0], r"1-D .*shape \(2, 2\)"),
        ([0, 1, 1, 0], np.array([[0], [1], [1], [0]]), r"labels_pred must be a 1-D"),
        (np.array([1j, 2j, 1j, 2j]), [0, 1, 1, 0], "complex"),
        (np.array([1, "a", 2.5, 1], dtype=object), [0, 1, 1, 0], "cannot be compared"),
    ],
)
def test_scores_refuse_nan_missing_and_mismatched_labels(a, b, match):
    for score in (pair_accuracy, normalized_mutual_info):
        with pytest.raises(ValueError, match=match):
            score(a, b)


@pytest.mark.parametrize("pairs", [[[0, 1.5]], [[0, np.nan]], np.array([[True, False]])])
def test_pair_accuracy_refuses_non_integer_pairs(pairs):
    with pytest.raises(ValueError, match="integer sample indices"):
        pair_accuracy([0, 1, 1], [0, 1, 0], pairs)


def test_scores_accept_strings_and_integral_float_pairs():
    assert pair_accuracy(["a", "a", "b"], ["x", "x", "y"]) == 1.0
    assert pair_accuracy([0, 1, 1], [0, 1, 0], np.array([[1.0, 2.0]])) == 0.0
    assert normalized_mutual_info(np.array(["a", "b"]), [1, 2]) == 1.0


# ----- the scores use only the nonzero cells of the contingency table -------------------------


def _dense_scores(a, b, method):
    """NMI and Rand index from the full ka x kb contingency table (the textbook definitions,
    written independently of the library's sparse cells)."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    C = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(C, (ia.ravel(), ib.ravel()), 1)
    n = C.sum()
    P, pa, pb = C / n, C.sum(1) / n, C.sum(0) / n
    ha, hb = -np.sum(pa * np.log(pa)), -np.sum(pb * np.log(pb))
    nz = C > 0
    mi = np.sum(P[nz] * np.log(P[nz] / np.outer(pa, pb)[nz]))
    den = (ha + hb) / 2 if method == "arithmetic" else np.sqrt(ha * hb)
    nmi = 1.0 if ha == hb == 0.0 else (0.0 if den <= 0 else min(max(mi / den, 0.0), 1.0))

    def pairs(x):
        return np.sum(x * (x - 1) / 2)

    total = n * (n - 1) / 2
    rand = (total - pairs(C.sum(1)) - pairs(C.sum(0)) + 2 * pairs(C)) / total if n > 1 else None
    return nmi, rand


# scikit-learn warns that float labels look continuous; here they are class names
@pytest.mark.filterwarnings("ignore:Clustering metrics expects discrete values")
@given(
    n=st.integers(1, 300),
    ka=st.integers(1, 400),
    kb=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
    types=st.sampled_from(["int", "str", "float", "mixed"]),
    method=st.sampled_from(["arithmetic", "geometric"]),
)
def test_scores_match_dense_table_and_sklearn(n, ka, kb, seed, types, method):
    """Random labelings, from a single class to more classes than samples, with labels of
    different types (the two labelings need not share a type)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, ka, size=n), rng.integers(-kb, 0, size=n)
    if types == "str":
        a, b = a.astype(str), b.astype(str)
    elif types == "float":
        a, b = a * 0.5, b * 1.5
    elif types == "mixed":
        a, b = np.char.add("c", a.astype(str)), b * 0.25
    nmi_ref, rand_ref = _dense_scores(a, b, method)
    nmi = normalized_mutual_info(a, b, average_method=method)
    assert nmi == pytest.approx(nmi_ref, rel=1e-13, abs=1e-15)
    assert nmi == pytest.approx(
        metrics.normalized_mutual_info_score(a, b, average_method=method), abs=1e-12
    )
    if n > 1:
        rand = pair_accuracy(a, b)
        assert rand == pytest.approx(rand_ref, rel=1e-13, abs=1e-15)
        (tn, fp), (fn, tp) = metrics.pair_confusion_matrix(a, b)  # ordered pairs
        assert rand == pytest.approx((tn + tp) / (tn + fp + fn + tp), abs=1e-12)


def test_scores_edge_cases():
    one = np.zeros(5, dtype=int)
    many = np.arange(5)
    # a single group in both: identical labelings
    assert normalized_mutual_info(one, one) == 1.0
    assert normalized_mutual_info([7], ["x"]) == 1.0
    assert pair_accuracy(one, one) == 1.0
    # one group against singletons: no information shared, no pair agrees
    for method in ("arithmetic", "geometric"):
        assert normalized_mutual_info(one, many, average_method=method) == 0.0
        assert normalized_mutual_info(many, one, average_method=method) == 0.0
    assert pair_accuracy(one, many) == 0.0
    with pytest.raises(ValueError, match="empty"):
        normalized_mutual_info([], [])
    with pytest.raises(ValueError, match="empty"):
        pair_accuracy(np.array([], dtype=str), np.array([], dtype=str))
    with pytest.raises(ValueError, match="at least two samples"):
        pair_accuracy([1], [1])


def test_scores_of_many_classes_take_linear_memory():
    """n = 40,000 singleton classes: a dense contingency table would hold n^2 counts
    (12 GiB); the nonzero cells are n."""
    import tracemalloc

    n = 40_000
    a = np.arange(n)
    b = a // 2  # pairs of samples
    c = np.random.default_rng(0).permutation(n).astype(str)  # singletons, other labels
    tracemalloc.start()
    try:
        got = (
            normalized_mutual_info(a, a),
            normalized_mutual_info(a, b),
            normalized_mutual_info(c, a, average_method="geometric"),
            pair_accuracy(a, a),
            pair_accuracy(a, b),
            pair_accuracy(b, b),
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    # b is a function of a, so I(a; b) = H(b) = log(n/2) and H(a) = log n; of the n(n-1)/2
    # pairs only the n/2 inside a group of b are together in b and apart in a
    total = n * (n - 1) / 2
    expected = (
        1.0,
        2 * np.log(n / 2) / (np.log(n) + np.log(n / 2)),
        1.0,
        1.0,
        (total - n / 2) / total,
        1.0,
    )
    assert got == pytest.approx(expected, rel=1e-12)
    assert got[1] == pytest.approx(metrics.normalized_mutual_info_score(a, b), rel=1e-12)
    assert got[4] == pytest.approx(metrics.rand_score(a, b), rel=1e-12)


def test_kernel_kmeans_warns_when_max_iter_stops_it_before_convergence():
    """max_iter=1 stopped Lloyd's iterations with labels that one more step would change,
    without a word; the library's rule is a warning that names the setting. A run that
    converges (each sample at its nearest centre) gives none."""
    import warnings

    from sklearn.cluster import KMeans

    from nystrom_priors import ConvergenceWarning

    G = np.random.default_rng(0).normal(size=(2000, 3))
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1 before .*still moved.*max_iter"):
        kernel_kmeans(G, 8, max_iter=1, n_init=1, random_state=0)
    # tied distances (binary rows): a converged run says nothing (a second assignment with
    # norms summed in another order flipped ties and warned)
    rng = np.random.default_rng(796)
    r, n = int(rng.integers(3, 12)), int(rng.integers(6, 30))
    rng.integers(2, 5)
    B = rng.integers(0, 2, size=(n, r)).astype(float)  # 17 x 4, ties between centres
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        kernel_kmeans(B, 4, n_init=1, max_iter=10_000, random_state=796)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels = kernel_kmeans(G, 8, max_iter=300, n_init=2, random_state=0)
    # the oracle: a converged labeling is a fixed point of scikit-learn's Lloyd step
    centres = np.array([G[labels == c].mean(0) for c in range(8)])
    ref = KMeans(8, init=centres, n_init=1, max_iter=1).fit(G).labels_
    assert np.array_equal(ref, labels)


@pytest.mark.parametrize("score", [normalized_mutual_info, pair_accuracy])
def test_clustering_scores_refuse_pandas_missing_labels_by_name(score):
    """pd.NA in a labeling raised pandas' own "boolean value of NA is ambiguous", naming
    neither the argument nor the sample."""
    pd = pytest.importorskip("pandas")
    for labels in (
        pd.Series(["a", None, "a"], dtype="string"),
        np.array(["a", pd.NA, "a"], dtype=object),
    ):
        with pytest.raises(ValueError, match=r"labels_true\[1\] = <NA>: labels must not be"):
            score(labels, [1, 2, 1])


@pytest.mark.parametrize("where", ["labels_true", "labels_pred"])
@pytest.mark.parametrize("score", [pair_accuracy, normalized_mutual_info])
def test_scores_refuse_masked_entries(where, score):
    # np.asarray would read the values behind the mask: a score of labels nobody gave
    args = {"labels_true": [0, 0, 1, 1], "labels_pred": [0, 1, 1, 1]}
    args[where] = np.ma.masked_array([0, 0, 1, 1], mask=[0, 1, 0, 0])
    with pytest.raises(ValueError, match=f"{where} is a masked array with 1 masked"):
        score(**args)


def test_pair_accuracy_refuses_masked_pairs():
    pairs = np.ma.masked_array([[0, 1], [2, 3]], mask=[[0, 0], [0, 1]])
    with pytest.raises(ValueError, match="pairs is a masked array with 1 masked"):
        pair_accuracy([0, 0, 1, 1], [0, 1, 1, 1], pairs)
