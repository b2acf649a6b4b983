"""Scale extremes: huge widths, data at 1e+-150 and beyond.

Every result is finite and exact where the math says so (the Nystrom kernel on its landmarks),
or the input is refused with a ValueError that says why -- never inf, NaN or an overflow /
invalid-value RuntimeWarning passed to the user (pyproject turns those into errors here).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nystrom_priors as npr

PAIRS = np.array([[0, 3, 1], [1, 4, 1], [0, 1, -1], [2, 5, 1], [1, 2, -1], [6, 9, -1]])


def _data(n=60, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# ----- BCDNPKL's graphs are scale-free ------------------------------------------------------


@pytest.mark.parametrize("exponent", [-600, -200, 200, 600])
@pytest.mark.parametrize(
    "kw", [{}, {"weights": "gaussian"}, {"graph": "dense"}], ids=["knn", "gaussian", "dense"]
)
def test_bcdnpkl_at_any_scale_learns_the_same_kernel(exponent, kw):
    """Neighbours and Gaussian weights (default width) do not change when the samples are
    scaled by a power of two: the learned factor is the same, bit for bit."""
    X = _data()
    new = _data(7, seed=1)
    s = 2.0**exponent
    ref = npr.BCDNPKL(random_state=0, **kw).fit(X, pairs=PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = npr.BCDNPKL(random_state=0, **kw).fit(X * s, pairs=PAIRS)
        G = model.transform(new * s)
    np.testing.assert_array_equal(model.embedding_, ref.embedding_)
    np.testing.assert_array_equal(G, ref.transform(new))
    if ref.sigma_ is not None:
        assert model.sigma_ == ref.sigma_ * s


def test_bcdnpkl_far_queries_get_zero_rows():
    """A sample far outside the training scale is nobody's neighbour in weight: its
    Gaussian-weighted extension tends to 0, and comes out as exactly that, finite."""
    X = _data()
    model = npr.BCDNPKL(weights="gaussian", random_state=0).fit(X, pairs=PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G = model.transform(X[:3] * 1e300)
    assert np.isfinite(G).all() and not G.any()
