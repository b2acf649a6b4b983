"""Kernel alignment: dense definition, factored form, invariances."""

import numpy as np
import pytest

from nystrom_priors import alignment, factored_alignment


def _explicit(K1, K2, centered):
    n = K1.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n if centered else np.eye(n)
    A, B = H @ K1 @ H, H @ K2 @ H
    return np.sum(A * B) / np.sqrt(np.sum(A * A) * np.sum(B * B))


@pytest.mark.parametrize("centered", [True, False])
def test_dense_matches_definition_and_factored(rng, centered):
    G1 = rng.normal(size=(70, 4)) + 1
    G2 = rng.normal(size=(70, 9))
    K1, K2 = G1 @ G1.T, G2 @ G2.T
    ref = _explicit(K1, K2, centered)
    assert alignment(K1, K2, centered=centered) == pytest.approx(ref, rel=1e-12)
    assert factored_alignment(G1, G2, centered=centered) == pytest.approx(ref, rel=1e-12)


def test_invariances(rng):
    G = rng.normal(size=(40, 3))
    K = G @ G.T
    assert alignment(K, 5.0 * K) == pytest.approx(1.0)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    assert factored_alignment(G, G @ Q) == pytest.approx(1.0)  # rotation of the factor
    # centring removes a constant offset in feature space
    assert factored_alignment(G, G + 7.0) == pytest.approx(1.0)
    assert factored_alignment(G, G + 7.0, centered=False) < 0.999


def test_errors(rng):
    G = rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="same number of rows"):
        factored_alignment(G, G[:5])
    with pytest.raises(ValueError, match="square matrices of the same shape"):
        alignment(G @ G.T, np.eye(3))
    with pytest.raises(ValueError, match="zero Frobenius norm"):
        factored_alignment(G, np.ones((10, 2)))  # constant factor: zero after centring


def test_public_function_is_not_shadowed_by_a_submodule(rng):
    """Importing the learners (which use the alignment cores) must not replace
    ``nystrom_priors.alignment`` (a function) by a module of the same name."""
    import nystrom_priors as npr
    import nystrom_priors.generalized  # noqa: F401

    G = rng.normal(size=(10, 2))
    assert callable(npr.alignment) and not isinstance(npr.alignment, type(npr))
    assert npr.alignment(G @ G.T, G @ G.T) == pytest.approx(1.0)
