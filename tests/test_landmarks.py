"""Landmark selection: determinism, validity, and k-means quality against scikit-learn."""

import numba
import numpy as np
import pytest

from nystrom_priors import select_landmarks
from nystrom_priors.landmarks import kmeans


def _inertia(X, C):
    d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    return d.min(axis=1).sum()


def _blobs(rng, n=600, d=4, k=6):
    centers = rng.normal(size=(k, d)) * 6
    return centers[rng.integers(k, size=n)] + rng.normal(size=(n, d))


@pytest.mark.parametrize("method", ["uniform", "kmeans++", "kmeans", "rpcholesky"])
def test_deterministic_for_a_seed_and_thread_count(rng, method):
    X = _blobs(rng)
    a = select_landmarks(X, 25, method=method, random_state=3)
    b = select_landmarks(X, 25, method=method, random_state=3)
    np.testing.assert_array_equal(a, b)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        c = select_landmarks(X, 25, method=method, random_state=3)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, select_landmarks(X, 25, method=method, random_state=4))


@pytest.mark.parametrize("method", ["uniform", "kmeans++", "rpcholesky"])
def test_sampling_methods_return_distinct_data_rows(rng, method):
    X = rng.normal(size=(300, 3))
    Z = select_landmarks(X, 40, method=method, random_state=0)
    rows = {tuple(r) for r in X}
    assert all(tuple(z) in rows for z in Z)
    assert len({tuple(z) for z in Z}) == 40


def test_kmeanspp_spreads_over_clusters(rng):
    X = _blobs(rng, k=6)
    Zu = select_landmarks(X, 6, method="uniform", random_state=0)
    Zp = select_landmarks(X, 6, method="kmeans++", random_state=0)
    # D^2 sampling covers the blobs much better than uniform draws, on average over seeds
    iu = np.mean(
        [_inertia(X, select_landmarks(X, 6, method="uniform", random_state=s)) for s in range(10)]
    )
    ip = np.mean(
        [_inertia(X, select_landmarks(X, 6, method="kmeans++", random_state=s)) for s in range(10)]
    )
    assert ip < iu
    assert Zu.shape == Zp.shape == (6, 4)


def test_kmeans_matches_sklearn_quality(rng):
    """One k-means run can stop in a local minimum (two centres in one blob), and which one
    depends on the seed's random stream: like against like, our best of 10 seeds against
    scikit-learn's best of 10 inits (n_init=10), and our mean over 60 seeds against
    scikit-learn's plain k-means++ (one local trial) + Lloyd over 60 seeds, within three
    standard errors of the difference (the local minima are 1.4x and 3x the best inertia)."""
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    X = _blobs(rng, n=800, k=8)
    ours = np.array(
        [
            _inertia(X, select_landmarks(X, 8, method="kmeans", random_state=s, max_iter=50))
            for s in range(60)
        ]
    )
    ref = sklearn_cluster.KMeans(8, n_init=10, random_state=0).fit(X)
    assert ours[:10].min() <= 1.05 * ref.inertia_

    def plain(X, k, random_state):
        return sklearn_cluster.kmeans_plusplus(X, k, random_state=random_state, n_local_trials=1)[0]

    theirs = np.array(
        [
            sklearn_cluster.KMeans(8, init=plain, n_init=1, random_state=s).fit(X).inertia_
            for s in range(60)
        ]
    )
    se = np.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    assert ours.mean() <= theirs.mean() + 3 * se


def test_lloyd_decreases_inertia_and_stops_on_fixed_point(rng):
    X = _blobs(rng, n=500, k=5)
    seeds = select_landmarks(X, 12, method="kmeans++", random_state=1)
    C, labels, n_iter = kmeans(X, 12, rng=np.random.default_rng(1), max_iter=200, init=seeds)
    assert _inertia(X, C) < _inertia(X, seeds)
    assert n_iter < 200
    # fixed point: every centre is the mean of its cluster, every point at its nearest centre
    for c in range(12):
        np.testing.assert_allclose(C[c], X[labels == c].mean(axis=0), atol=1e-12)
    d = ((X[:, None] - C[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(labels, d.argmin(axis=1))


def test_lloyd_tolerance_stops_once_the_inertia_is_flat(rng):
    X = _blobs(rng, n=1500, k=4)  # 30 centres on 4 blobs: labels keep flipping for long
    seeds = select_landmarks(X, 30, method="kmeans++", random_state=0)
    runs = {}
    for tol in (0.0, 1e-3):
        runs[tol] = kmeans(X, 30, rng=np.random.default_rng(0), max_iter=500, init=seeds, tol=tol)
    n_stop = runs[1e-3][2]
    assert 2 < n_stop < runs[0.0][2]
    # the run stopped at assignment n_stop, made with the centres of n_stop - 1 updates, because
    # it gained less than tol over the assignment before (centres of n_stop - 2 updates)
    prev, _, _ = kmeans(X, 30, rng=np.random.default_rng(0), max_iter=n_stop - 2, init=seeds)
    stop, _, _ = kmeans(X, 30, rng=np.random.default_rng(0), max_iter=n_stop - 1, init=seeds)
    np.testing.assert_array_equal(stop, runs[1e-3][0])
    assert _inertia(X, prev) - _inertia(X, stop) <= 1e-3 * _inertia(X, stop) * (1 + 1e-9)
    # and the assignment before that one still gained more than tol
    prev2, _, _ = kmeans(X, 30, rng=np.random.default_rng(0), max_iter=n_stop - 3, init=seeds)
    assert _inertia(X, prev2) - _inertia(X, prev) > 1e-3 * _inertia(X, prev)
    assert _inertia(X, runs[0.0][0]) <= _inertia(X, stop)


def test_empty_clusters_are_reseeded(rng):
    X = np.vstack([np.zeros((50, 2)), np.ones((50, 2)) * 10])
    init = np.array([[0.0, 0.0], [10.0, 10.0], [100.0, 100.0]])  # third never wins a point
    C, labels, _ = kmeans(X, 3, rng=np.random.default_rng(0), max_iter=5, init=init)
    assert np.isfinite(C).all()
    assert not np.any(np.all(C == [100.0, 100.0], axis=1))


def test_subsample_and_float32(rng):
    X = _blobs(rng, n=3000).astype(np.float32)
    Z = select_landmarks(X, 20, method="kmeans", random_state=0, sample_size=500)
    assert Z.dtype == np.float32 and Z.shape == (20, 4)
    with pytest.raises(ValueError, match="sample_size .* at least n_landmarks"):
        select_landmarks(X, 20, sample_size=10)


def test_duplicated_samples(rng):
    X = np.repeat(rng.normal(size=(5, 3)), 20, axis=0)
    Z = select_landmarks(X, 8, method="kmeans++", random_state=0)
    assert Z.shape == (8, 3) and np.isfinite(Z).all()
    Zk = select_landmarks(X, 8, method="kmeans", random_state=0)
    assert np.isfinite(Zk).all()


def test_too_many_landmarks_warns_and_caps(rng):
    X = rng.normal(size=(10, 2))
    with pytest.warns(UserWarning, match="n_landmarks=15 is larger than the number of samples"):
        Z = select_landmarks(X, 15, method="uniform", random_state=0)
    assert Z.shape == (10, 2)


def test_user_landmarks_and_bad_methods(rng):
    X = rng.normal(size=(10, 2))
    Zu = rng.normal(size=(4, 2))
    np.testing.assert_array_equal(select_landmarks(X, 4, method=Zu), Zu)
    with pytest.raises(ValueError, match="User-given landmarks have 3 features, but X has 2"):
        select_landmarks(X, 4, method=rng.normal(size=(4, 3)))
    with pytest.raises(ValueError, match="method must be one of"):
        select_landmarks(X, 4, method="random")
    with pytest.raises(ValueError, match=r"n_landmarks must be in \[1"):
        select_landmarks(X, 0)
    with pytest.raises(TypeError, match="random_state must be"):
        select_landmarks(X, 2, random_state="seed")


@pytest.mark.parametrize("method", ["kmeans", "kmeans++"])
@pytest.mark.parametrize("exponent", [-600, -500, 500, 1018])
def test_landmarks_are_equivariant_to_the_data_scale(rng, method, exponent):
    """Scaling X by 2^k (exact in float64) scales the k-means landmarks by 2^k exactly, far
    outside float32's range, where the clustering runs: at 2^500 the float32 working copy
    overflowed to inf (every landmark NaN or inf), at 2^-500 and 2^-600 (below float32's smallest
    normal) it underflowed to 0 and the clustering saw one point; at 2^1018 (max |x| ~ 1e307) the
    sample's mean overflowed."""
    X = np.concatenate([rng.normal(size=(150, 3)), rng.normal(size=(150, 3)) + 6.0])
    Z = select_landmarks(X, 12, method=method, random_state=0)
    Zs = select_landmarks(np.ldexp(X, exponent), 12, method=method, random_state=0)
    np.testing.assert_array_equal(Zs, np.ldexp(Z, exponent))


def _kmeanspp_law(X, k):
    """Exact law of k-means++'s first k picks (ordered), by enumeration."""
    import itertools

    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    law = {}
    for picks in itertools.permutations(range(len(X)), k):
        p, dmin = 1.0 / len(X), D[picks[0]].copy()
        for j in picks[1:]:
            p *= dmin[j] / dmin.sum()
            dmin = np.minimum(dmin, D[j])
        law[picks] = p
    return law


@pytest.mark.parametrize("share", [1, 2])
def test_batched_seeding_draws_from_kmeanspp_law(monkeypatch, share):
    """Seeding draws from stale distance bounds and rejects (landmarks._kmeanspp): the picks
    still follow k-means++'s law exactly. With share 1 the fourth pick is drawn while the third
    is not yet folded into the bounds; a chi-square test against the enumerated law."""
    stats = pytest.importorskip("scipy.stats")
    from nystrom_priors import landmarks

    monkeypatch.setattr(landmarks, "_SEED_BATCH_SHARE", share)
    X = np.random.default_rng(7).normal(size=(5, 3))
    law = _kmeanspp_law(X, 4)
    n_draws = 30000
    counts = dict.fromkeys(law, 0)
    for s in range(n_draws):
        counts[tuple(landmarks._kmeanspp(X, 4, np.random.default_rng(s)))] += 1
    assert sum(counts.values()) == n_draws  # every draw is four distinct rows
    observed = np.array([counts[q] for q in law])
    expected = np.array(list(law.values())) * n_draws
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi2, len(law) - 1) > 1e-3


def test_seeding_rejects_stale_mass_without_hanging(monkeypatch):
    """Two far outliers hold almost all the potential. Drawn in one batch (share 1: the third
    and fourth picks share stale bounds), the second outlier is picked, and then nearly every
    draw from the stale bounds lands on it and is rejected: the run of rejections must fold the
    new centres in (counted below) instead of looping, and the picks stay distinct rows."""
    from nystrom_priors import landmarks
    from nystrom_priors._numba import _kmeans as kk

    monkeypatch.setattr(landmarks, "_SEED_BATCH_SHARE", 1)
    sample = kk.sample_centres
    runs = []

    def counting(X, closest, cum, out, start, c, stop, uniforms, max_rejections):
        c_new, used = sample(X, closest, cum, out, start, c, stop, uniforms, max_rejections)
        runs.append(c_new < stop and used < uniforms.size)  # stopped by rejections in a row
        return c_new, used

    monkeypatch.setattr(kk, "sample_centres", counting)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(400, 2)) * 1e-3, [[1e3, 0.0], [-1e3, 0.0]]])
    for s in range(5):
        idx = landmarks._kmeanspp(X, 60, np.random.default_rng(s))
        assert len(set(idx.tolist())) == 60 and {400, 401} <= set(idx.tolist())
    assert sum(runs) >= 3


def test_seeding_batches_keep_the_potential_of_plain_kmeanspp(monkeypatch):
    """Batch sizes change the random stream, not the law: on an anisotropic Gaussian sample
    (3000 x 16) the k-means++ potential of 80 seeds is the same on average, within 4 standard
    errors over 20 seeds, whether centres share batches (share 1) or each is folded in at once
    (share 2**30: plain k-means++)."""
    from nystrom_priors import landmarks

    X = np.random.default_rng(1).normal(size=(3000, 16)) * np.linspace(0.2, 3.0, 16)
    pots = {}
    for share in (1, 2**30):
        monkeypatch.setattr(landmarks, "_SEED_BATCH_SHARE", share)
        pots[share] = np.array(
            [
                _inertia(X, X[landmarks._kmeanspp(X, 80, np.random.default_rng(s))])
                for s in range(20)
            ]
        )
    a, b = pots[1], pots[2**30]
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se


@pytest.mark.parametrize("method", ["uniform", "kmeans", "kmeans++", "rpcholesky"])
def test_parameters_a_method_ignores_are_still_checked(method):
    # the kernel and the sample size of another method were silently accepted
    X = np.random.default_rng(0).normal(size=(60, 3))
    with pytest.raises(ValueError, match="Unknown kernel 'bogus'"):
        select_landmarks(X, 5, method=method, kernel="bogus")
    with pytest.raises(ValueError, match=r"sample_size must be in \[1, inf\), got 0"):
        select_landmarks(X, 5, method=method, sample_size=0)
    with pytest.raises(ValueError, match=r"sample_size \(2\) must be at least n_landmarks \(5\)"):
        select_landmarks(X, 5, method=method, sample_size=2)
    with pytest.raises(ValueError, match=r"width must be in \(0, inf\), got -1.0"):
        select_landmarks(X, 5, method=method, width=-1.0)
    with pytest.raises(ValueError, match="gamma does not apply to the 'linear' kernel"):
        select_landmarks(X, 5, method=method, kernel="linear", gamma=2.0)
    a = select_landmarks(X, 5, method=method, kernel="gaussian", random_state=0)
    assert np.array_equal(a, select_landmarks(X, 5, method=method, random_state=0))
