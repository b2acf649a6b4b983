"""Side information at scale: pairs drawn from many labels in O(k), bounded defaults in the
learners, and contradiction checks that give the same verdict on every call."""

from __future__ import annotations

import time
import tracemalloc
import warnings

import numpy as np
import pytest

import nystrom_priors as npr
from nystrom_priors.side_info import labels_to_pairs

CAP = 10_000  # the documented cap of the default number of pairs drawn from labels


def _peak(fn):
    tracemalloc.start()
    try:
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
        return out, tracemalloc.get_traced_memory()[1], elapsed
    finally:
        tracemalloc.stop()


def _reference(y, k, frac, seed):
    """The law: enumerate every pair, then draw must-link and cannot-link pairs uniformly
    without replacement (Generator.choice), sorted."""
    y = np.asarray(y)
    idx = np.flatnonzero(y != -1)
    ii, jj = np.triu_indices(idx.size, k=1)
    same = y[idx[ii]] == y[idx[jj]]
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(same), np.flatnonzero(~same)
    n_pos = min(pos.size, int(round(frac * k)))
    n_neg = min(neg.size, k - n_pos)
    n_pos = min(pos.size, k - n_neg)
    pick = np.sort(
        np.concatenate(
            [rng.choice(pos, n_pos, replace=False), rng.choice(neg, n_neg, replace=False)]
        )
    )
    return np.stack([idx[ii[pick]], idx[jj[pick]], np.where(same[pick], 1, -1)], axis=1)


@pytest.mark.parametrize("n_labels", [6_000, 60_000])
def test_labels_to_pairs_draws_k_pairs_in_linear_memory(n_labels):
    y = np.arange(n_labels) % 7
    y[::13] = -1
    pairs, peak, elapsed = _peak(lambda: labels_to_pairs(y, 1_000, random_state=0))
    assert pairs.shape == (1_000, 3)
    # all pairs of 55,000 labels are 1.5e9 rows (36 GB); k pairs and O(l) work arrays are
    # about 1 MB
    assert peak < 16 << 20, peak
    assert elapsed < 5.0  # generous: milliseconds, where enumerating takes minutes
    i, j, s = pairs.T
    assert (i < j).all() and (y[i] != -1).all() and (y[j] != -1).all()
    np.testing.assert_array_equal(s, np.where(y[i] == y[j], 1, -1))
    assert (s == 1).sum() == 500 and np.unique(pairs[:, :2], axis=0).shape[0] == 1_000
    assert np.array_equal(np.lexsort((j, i)), np.arange(1_000))  # sorted


@pytest.mark.parametrize("seed", range(40))
def test_labels_to_pairs_follows_the_law_of_enumerated_pairs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    y = rng.integers(0, int(rng.integers(1, 6)), size=n)
    y[rng.random(n) < 0.4] = -1
    if (y != -1).sum() < 2:
        y[:2] = [0, 1]
    l = int((y != -1).sum())
    k = int(rng.integers(1, l * (l - 1) // 2 + 1))
    frac = float(rng.choice([0.0, 0.25, 0.5, 1.0]))
    got = labels_to_pairs(y, k, same_fraction=frac, random_state=seed)
    np.testing.assert_array_equal(got, _reference(y, k, frac, seed))


def test_labels_to_pairs_refuses_to_enumerate_a_quadratic_number_of_pairs():
    y = np.arange(20_000) % 3

    def call():
        with pytest.raises(ValueError, match="pass n_constraints"):
            labels_to_pairs(y)

    _, peak, _ = _peak(call)
    assert peak < 16 << 20
    assert labels_to_pairs([0, 1, 1, -1]).tolist() == [[0, 1, -1], [0, 2, -1], [1, 2, 1]]


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
@pytest.mark.parametrize("n_labels", [6_000, 32_000])
def test_bregman_fit_on_many_labels_stays_linear(cls, n_labels):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_labels, 2))
    y = rng.integers(0, 400, size=n_labels)  # 400 classes: 20 * 400^2 = 3.2e6 by the old rule
    model = cls(rank=4, n_landmarks=12, max_iter=2, random_state=0)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # two sweeps do not converge
            return model.fit(X, y)

    _, peak, _ = _peak(fit)
    assert model.pairs_.shape[0] == CAP
    # l^2 pairs would be 8 GB at 32,000 labels; the fit holds X, 10,000 pairs and small
    # factors
    assert peak < 64 << 20, peak


def test_default_constraints_keep_metric_learn_rule_below_the_cap():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, 3, size=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = npr.LogDetKernelLearner(init="linear", max_iter=3).fit(X, y)
    assert model.pairs_.shape[0] == 20 * 3**2


# ----- contradictions between labels and pairs ------------------------------------------------


def _contradicting():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = np.arange(120) % 2
    # samples 0 and 2 share a label: a cannot-link between them contradicts y, however few
    # of the 7,000 label pairs a learner draws
    pairs = np.array([[5, 7, 1], [2, 0, -1], [1, 3, 1]])
    return X, y, pairs


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: npr.LogDetKernelLearner(
            init="linear", gamma=1.0, max_iter=5, n_constraints=6, random_state=seed
        ),
        lambda seed: npr.VonNeumannKernelLearner(
            init="linear", max_iter=5, n_constraints=6, random_state=seed
        ),
        lambda seed: npr.BCDNPKL(n_constraints=6, max_iter=5, random_state=seed),
    ],
    ids=["LogDet", "VonNeumann", "BCDNPKL"],
)
def test_contradiction_between_labels_and_pairs_is_always_found(make):
    X, y, pairs = _contradicting()
    messages = set()
    for seed in range(12):
        with pytest.raises(ValueError) as info:
            make(seed).fit(X, y, pairs=pairs)
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    message = messages.pop()
    assert "pairs[1] = [0, 2, -1]" in message and "the same label" in message


def test_pairs_repeating_label_pairs_are_merged_silently():
    X, y, _ = _contradicting()
    pairs = np.array([[0, 2, 1], [1, 3, 1], [0, 1, -1]])  # consistent with y
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=npr.ConvergenceWarning)
        model = npr.LogDetKernelLearner(
            init="linear", gamma=1.0, max_iter=5, n_constraints=7000, random_state=0
        ).fit(X, y, pairs=pairs)
    assert np.unique(model.pairs_[:, :2], axis=0).shape[0] == model.pairs_.shape[0]
