"""Side information at scale: pairs drawn from many labels in O(k), bounded defaults in the
learners, and contradiction checks that give the same verdict on every call."""

from __future__ import annotations

import re
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


def test_all_pairs_of_labels_cost_their_output_alone():
    """Every pair of 3,000 labels (4.5e6 rows, 108 MB) against the enumeration by
    ``np.triu_indices``; the index arrays and their stacked copy once peaked at 2.7 times
    the output (the size the refusal above quotes)."""
    y = np.arange(3_200) % 5
    y[::16] = -1
    pairs, peak, _ = _peak(lambda: labels_to_pairs(y))
    idx = np.flatnonzero(y != -1)
    ii, jj = np.triu_indices(idx.size, k=1)
    np.testing.assert_array_equal(pairs[:, 0], idx[ii])
    np.testing.assert_array_equal(pairs[:, 1], idx[jj])
    np.testing.assert_array_equal(pairs[:, 2], np.where(y[idx[ii]] == y[idx[jj]], 1, -1))
    assert pairs.dtype == np.int64 and peak < 1.1 * pairs.nbytes, (peak, pairs.nbytes)


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


# ----- index, sign and bound values are checked as given, before any cast ---------------------

_RNG = np.random.default_rng(5)
_X = _RNG.normal(size=(40, 4))
_PAIRS = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1], [6, 7, -1], [8, 9, 1]])
_LEARNERS = {
    "LogDet": lambda: npr.LogDetKernelLearner(init="linear", max_iter=5),
    "VonNeumann": lambda: npr.VonNeumannKernelLearner(init="linear", max_iter=5),
    "BCDNPKL": lambda: npr.BCDNPKL(max_iter=5),
    "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(n_landmarks=10, lam=1.0),
}


def _rows(p):
    return p.shape[0] if hasattr(p, "shape") else len(p)


def _pair_users():
    """Every public path that reads index pairs: fit(pairs=) of each learner,
    distance_bounds, and LogDet's similarity_pairs (its own checker)."""
    users = {
        name: (lambda p, _m=make: _m().fit(_X, pairs=p), "pairs")
        for name, make in _LEARNERS.items()
    }
    users["distance_bounds"] = (
        lambda p: npr.distance_bounds(_X, p, rule="relative"),
        "pairs",
    )
    users["similarity_pairs"] = (
        lambda p: npr.LogDetKernelLearner(init="linear", max_iter=5).fit(
            _X, pairs=_PAIRS, similarity_pairs=p, similarity_bounds=np.ones(_rows(p))
        ),
        "similarity_pairs",
    )
    return users


PAIR_USERS = _pair_users()


_BIG = 2**64 - 1


@pytest.mark.parametrize("user", PAIR_USERS)
@pytest.mark.parametrize(
    "rows, problem",
    [
        # the sign: cast to int64 first, 2**64 - 1 was read as -1 (a cannot-link)
        ([[0, 1, 1], [2, 3, _BIG]], rf"\[1\] = \[2, 3, {_BIG}\] has sign {_BIG}; use \+1 .* or -1"),
        # an index: shown as given, not wrapped
        (
            [[0, _BIG, 1], [2, 3, 1]],
            rf"\[0\] = \[0, {_BIG}, 1\] references a sample out of range; indices must be "
            r"in \[0, 39\]",
        ),
    ],
    ids=["sign", "index"],
)
def test_uint64_values_are_checked_as_given(user, rows, problem):
    call, name = PAIR_USERS[user]
    with pytest.raises(ValueError, match=re.escape(name) + problem):
        call(np.array(rows, dtype=np.uint64))


@pytest.mark.parametrize("user", PAIR_USERS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_index_is_reported_as_given(user, bad):
    call, name = PAIR_USERS[user]
    pairs = np.array([[0, 1, 1], [2, bad, -1]])
    with pytest.raises(
        ValueError, match=rf"{name}\[1\] = \[2.0, {bad!r}, -1.0\] is not finite"
    ) as info:
        call(pairs)
    assert "9223372036854775808" not in str(info.value)


@pytest.mark.parametrize("user", PAIR_USERS)
def test_python_int_beyond_int64_is_reported_as_given(user):
    call, name = PAIR_USERS[user]
    big = 2**70  # numpy keeps it as an object array
    with pytest.raises(ValueError, match=rf"{name}\[1\] = \[2, 3, {big}\] has sign {big}"):
        call([[0, 1, 1], [2, 3, big]])


@pytest.mark.parametrize("user", PAIR_USERS)
@pytest.mark.parametrize(
    "to_sparse",
    [
        pytest.param(lambda a: __import__("scipy.sparse").sparse.csr_matrix(a), id="csr_matrix"),
        pytest.param(lambda a: __import__("scipy.sparse").sparse.coo_array(a), id="coo_array"),
    ],
)
def test_sparse_pairs_are_refused_by_name(user, to_sparse):
    call, name = PAIR_USERS[user]
    sparse_pairs = to_sparse(_PAIRS)
    kind = type(sparse_pairs).__name__
    with pytest.raises(
        TypeError,
        match=rf"{name} must be an integer array .*a dense array; got a sparse matrix of type "
        rf"{kind} and shape \(5, 3\)\. Sparse {name} are not accepted: .*\.toarray\(\)",
    ):
        call(sparse_pairs)


def test_valid_pairs_of_any_integer_dtype_are_read_alike():
    from nystrom_priors.side_info import check_pairs

    pairs = np.array([[3, 1, 1], [2, 4, 1], [0, 5, 1]])
    expected = check_pairs(pairs, 6)
    for given in (
        pairs.astype(np.uint64),
        pairs.astype(np.uint8),
        pairs.astype(np.int32),
        pairs.astype(np.float64),
        pairs.astype(object),
        pairs.tolist(),
    ):
        got = check_pairs(given, 6)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)


def test_fractional_and_ragged_pairs_name_the_row():
    from nystrom_priors.side_info import check_pairs

    with pytest.raises(
        TypeError,
        match=r"pairs must hold integers, got dtype float64 .*"
        r"pairs\[1\] = \[2.0, 3.5, 1.0\]",
    ):
        check_pairs(np.array([[0, 1, 1], [2, 3.5, 1]]), 6)
    with pytest.raises(
        ValueError,
        match=r"pairs must be an integer array of shape \(k, 3\).*"
        "got a ragged sequence",
    ):
        check_pairs([[0, 1, 1], [2, 3]], 6)


@pytest.mark.parametrize("name", sorted(_LEARNERS))
def test_a_ragged_pairs_list_reaches_the_pairs_check_in_fit(name):
    # fit's test for metric-learn's 3-D point pairs took the ragged list to numpy first
    with pytest.raises(ValueError, match=r"pairs must be an integer array .*ragged sequence"):
        _LEARNERS[name]().fit(_X, pairs=[[0, 1, 1], [2, 3]])


@pytest.mark.parametrize(
    "bounds, shown",
    [
        (["a"] * 5, r"bounds\[0\] = 'a' \(str"),
        ([1.0, 2.0, "a", 1.0, 1.0], r"bounds\[2\] = 'a' \(str"),  # numpy turns all to strings
        (["1.5"] * 5, r"bounds\[0\] = '1.5' \(str"),  # not parsed silently
        (np.ones(5) + 1j, r"bounds\[0\] = \(1\+1j\) \(complex"),  # not truncated silently
        (np.ones(5, dtype=bool), r"bounds\[0\] = True \(bool"),
        ([1.0, None, 1.0, 1.0, 1.0], r"bounds\[1\] = None \(NoneType"),
    ],
)
def test_non_numeric_bounds_name_the_parameter(bounds, shown):
    with pytest.raises(
        TypeError,
        match=r"^bounds must hold real numbers \(int or float\), one "
        r"bound per pair; got " + shown,
    ):
        npr.LogDetKernelLearner(init="linear", max_iter=5).fit(_X, pairs=_PAIRS, bounds=bounds)


def test_non_numeric_similarity_bounds_name_the_parameter():
    with pytest.raises(
        TypeError,
        match=r"similarity_bounds must hold real numbers .*"
        r"similarity_bounds\[0\] = 'a'",
    ):
        npr.LogDetKernelLearner(init="linear", max_iter=5).fit(
            _X, pairs=_PAIRS, similarity_pairs=[[0, 1, 1]], similarity_bounds=["a"]
        )


def test_bounds_beyond_float64_and_decimal_bounds():
    # a Python int beyond float64 raised a bare OverflowError; Decimal converts exactly
    from decimal import Decimal

    with pytest.raises(
        ValueError, match=r"bounds must be finite in float64, got bounds\[1\] = 1000"
    ):
        npr.LogDetKernelLearner(init="linear", max_iter=5).fit(
            _X, pairs=_PAIRS, bounds=[1.0, 10**400, 1.0, 1.0, 1.0]
        )
    given = [Decimal("1.5"), 2.0, 3, 4.0, 5.0]
    a = npr.LogDetKernelLearner(init="linear", max_iter=5).fit(_X, pairs=_PAIRS, bounds=given)
    b = npr.LogDetKernelLearner(init="linear", max_iter=5).fit(
        _X, pairs=_PAIRS, bounds=[1.5, 2.0, 3.0, 4.0, 5.0]
    )
    assert np.array_equal(a.bounds_, b.bounds_)


def test_sparse_bounds_are_refused_by_name():
    from scipy import sparse

    with pytest.raises(
        TypeError,
        match=r"bounds must be an array of shape \(5,\) .*a dense "
        r"array of real numbers; got a sparse matrix of type csr_matrix",
    ):
        npr.LogDetKernelLearner(init="linear", max_iter=5).fit(
            _X, pairs=_PAIRS, bounds=sparse.csr_matrix(np.ones((1, 5)))
        )


@pytest.mark.filterwarnings("ignore::nystrom_priors.ConvergenceWarning")
def test_numeric_bounds_of_any_numeric_dtype_are_accepted():
    fits = [
        npr.LogDetKernelLearner(init="linear", gamma=1.0, max_iter=5).fit(
            _X, pairs=_PAIRS, bounds=b
        )
        for b in (np.full(5, 2.0), np.full(5, 2), [2, 2.0, 2, 2.0, 2], np.full(5, 2.0, object))
    ]
    for model in fits[1:]:
        np.testing.assert_array_equal(model.bounds_, fits[0].bounds_)


@pytest.mark.parametrize("learner", _LEARNERS)
@pytest.mark.parametrize("shape", [(1, 40), (40, 1)])
def test_sparse_labels_are_refused_by_name(learner, shape):
    from scipy import sparse

    y = sparse.csr_matrix((np.arange(40) % 3).reshape(shape))
    with pytest.raises(
        TypeError,
        match=rf"y must be a dense 1-D array of class labels .*got a sparse matrix of type "
        rf"csr_matrix and shape \({shape[0]}, {shape[1]}\); sparse labels are not accepted: "
        r".*y\.toarray\(\)\.ravel\(\)",
    ):
        _LEARNERS[learner]().fit(_X, y)


def test_sparse_labels_are_refused_by_labels_to_pairs():
    from scipy import sparse

    with pytest.raises(TypeError, match=r"y must be a dense 1-D array .*sparse matrix"):
        labels_to_pairs(sparse.csr_matrix(np.array([[0, 1, 1, 0]])))


def test_integer_label_beyond_int64_is_refused_by_value():
    y = np.array([2**70] * 20 + [1] * 19 + [-1], dtype=object)
    with pytest.raises(
        ValueError,
        match=r"y holds the integer label 1180591620717411303424, "
        r"outside the int64 range",
    ):
        _LEARNERS["GeneralizedNystrom"]().fit(_X, y)


def test_duplicated_pairs_warning_names_the_first_repeat():
    """The warning gave only a count; duplicates can come from duplicated data rows (through
    metric-learn's point pairs), so the user needs to find them."""
    from nystrom_priors.side_info import check_pairs

    pairs = np.array([[0, 1, 1], [2, 3, -1], [1, 0, 1], [2, 3, -1]])
    with pytest.warns(UserWarning, match=r"2 duplicated constraint\(s\).*row 2, \(0, 1, \+1\)"):
        kept = check_pairs(pairs, 5)
    np.testing.assert_array_equal(kept, [[0, 1, 1], [2, 3, -1]])
