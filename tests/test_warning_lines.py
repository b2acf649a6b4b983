"""Every warning points at the line of the user's code that caused it, however deep in the
package it is raised (``_feature_names._user_stacklevel``). Fixed stack levels pointed inside
the package wherever a warning was raised through one more internal call than counted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nystrom_priors as npr

X = np.random.default_rng(0).normal(size=(200, 3))
Y = np.where(np.arange(200) % 4 == 0, (X[:, 0] > 0).astype(int), -1)
PAIRS = npr.labels_to_pairs(Y, 40, random_state=0)


def _bcdnpkl_rank():
    npr.BCDNPKL(rank=100, random_state=0).fit(X, pairs=PAIRS[:4])


def _kmeans_not_converged():
    npr.kernel_kmeans(X, 5, max_iter=1, n_init=1, random_state=0)


CASES = {
    # lam below mu_max^2 eps is floored (stacklevel=5 pointed into _base.py)
    "lam-floored": lambda: npr.GeneralizedNystrom(15, lam=1e-300, random_state=0).fit(X, Y),
    # BCDNPKL's ConvergenceWarning (stacklevel=3 pointed into _base.py)
    "bcdnpkl-max-iter": lambda: npr.BCDNPKL(max_iter=1, random_state=0).fit(X, pairs=PAIRS),
    # n_landmarks > n (stacklevel=3 pointed into nystrom.py)
    "n-landmarks": lambda: npr.Nystrom(500, random_state=0).fit(X),
    "n-landmarks-gn": lambda: npr.GeneralizedNystrom(500, lam=1.0, random_state=0).fit(X, Y),
    "bcdnpkl-rank": _bcdnpkl_rank,
    "kernel-kmeans": _kmeans_not_converged,
    "knn-graph-lone": lambda: npr.knn_graph(
        np.vstack([X, [[1e3, 0, 0]]]), 3, weights="gaussian", sigma=0.1
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_warnings_point_at_the_callers_line(case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CASES[case]()
    assert caught, "the case raises no warning"
    assert {w.filename for w in caught} == {__file__}, [
        (w.filename, w.lineno, str(w.message)[:60]) for w in caught
    ]
