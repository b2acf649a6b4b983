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


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize(
    "n, r1, r2",
    [
        (5, 40, 300),  # fewer samples than features: n x n kernels
        (12, 1, 60),
        (3, 2, 9),
        (60, 10, 3),  # more samples than features: r x r products
        (30, 30, 30),
        (8, 3, 3),
    ],
)
def test_factored_matches_dense_for_all_shapes(rng, n, r1, r2, centered):
    G1 = rng.normal(size=(n, r1)) + rng.normal(size=r1)
    G2 = rng.normal(size=(n, r2)) * rng.uniform(0.1, 3, size=r2)
    K1, K2 = G1 @ G1.T, G2 @ G2.T
    ref = _explicit(K1, K2, centered)
    assert alignment(K1, K2, centered=centered) == pytest.approx(ref, rel=1e-12)
    assert factored_alignment(G1, G2, centered=centered) == pytest.approx(ref, rel=1e-12)
    assert factored_alignment(G2, G1, centered=centered) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize(
    "n, r1, r2",
    [
        (2, 10**5, 10**5),  # the r x r products would take 3 * 80 GB
        (3, 10**5, 7),
        (4000, 3, 2),  # the n x n kernels would take 2 * 128 MB
    ],
)
def test_factored_memory_is_the_smaller_of_kernels_and_factor_products(rng, n, r1, r2, centered):
    import tracemalloc

    G1 = rng.normal(size=(n, r1)) + 0.5
    G2 = rng.normal(size=(n, r2))
    # beyond the inputs, a few copies of the factors (scaling, centring)
    budget = 6 * (G1.nbytes + G2.nbytes) + 2**20
    tracemalloc.start()
    try:
        got = factored_alignment(G1, G2, centered=centered)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < budget, f"peak {peak / 2**20:.1f} MiB, budget {budget / 2**20:.1f} MiB"
    if n < 100:
        ref = _explicit(G1 @ G1.T, G2 @ G2.T, centered)
    else:
        # the explicit 4000 x 4000 kernels (and H) would take most of a GB: use the identity
        # <A A^T, B B^T>_F = ||A^T B||_F^2 with the centring written out, in extended precision
        A = G1 - G1.mean(0) if centered else G1
        B = G2 - G2.mean(0) if centered else G2
        AtB, AtA, BtB = (np.longdouble(X.T) @ np.longdouble(Y) for X, Y in ((A, B), (A, A), (B, B)))
        ref = float(np.sum(AtB**2) / np.sqrt(np.sum(AtA**2) * np.sum(BtB**2)))
    assert got == pytest.approx(ref, rel=1e-12)


def test_factored_ones_uncentred_is_one():
    G = np.ones((2, 10**5))
    assert factored_alignment(G, G, centered=False) == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match="zero Frobenius norm"):
        factored_alignment(G, G)  # zero after centring


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize("one_hot", [True, False])
def test_factored_alignment_of_a_sparse_factor_matches_the_dense_one(centered, one_hot):
    """A scipy.sparse B (one-hot labels with many classes) gives the dense computation's
    alignment without densifying B."""
    import scipy.sparse as sp

    from nystrom_priors.kernel_alignment import _factored

    r = np.random.default_rng(3)
    n = 300
    A = r.normal(size=(n, 7))
    if one_hot:
        codes = r.integers(120, size=n)
        B = sp.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, 130))
    else:
        B = sp.random(n, 40, density=0.05, random_state=4, format="csr")
    got = _factored(A, B, centered)
    want = _factored(A, B.toarray(), centered)
    assert got == pytest.approx(want, rel=1e-10)


def test_factored_alignment_of_a_sparse_single_class_is_exactly_zero():
    """One class: the centred label kernel is zero. The sparse formula's terms cancel only to
    round-off, which made lam="nka" choose its lam from noise; it is now exactly 0, as the
    dense path gives."""
    import scipy.sparse as sp

    from nystrom_priors.kernel_alignment import _factored

    A = np.random.default_rng(0).normal(size=(13, 4))
    B = sp.csr_matrix(np.ones((13, 1)))
    assert _factored(A, B, True, zero=0.0) == 0.0 == _factored(A, B.toarray(), True, zero=0.0)


@pytest.mark.parametrize(
    "c1, c2, n",
    [(0.1, 1 / 3, 50), (0.1, 0.1, 5), (0.3, 0.1, 3), (0.7, 1e-3, 17), (1e200, 3.0, 9)],
)
def test_alignment_of_constant_kernels_is_refused_for_every_constant(c1, c2, n):
    """A centred constant kernel is zero; its round-off residue used to be scored, so that
    two constants came out perfectly aligned (1.0), anti-aligned (-1.0) or refused as the
    constants' bits fell. Every constant and size is now refused alike, dense and factored."""
    K1, K2 = np.full((n, n), c1), np.full((n, n), c2)
    other = np.eye(n)
    for A, B in [(K1, K2), (K1, other), (other, K2)]:
        with pytest.raises(ValueError, match="K[12] is constant once centred"):
            alignment(A, B)
    G1, G2 = np.full((n, 1), np.sqrt(c1)), np.full((n, 2), np.sqrt(c2))
    with pytest.raises(ValueError, match="zero Frobenius norm"):
        factored_alignment(G1, G2)
    assert alignment(K1, K2, centered=False) == pytest.approx(1.0)


def test_a_kernel_of_offset_samples_is_refused_naming_the_offset_and_the_factors():
    """Features + 1e8: the linear kernel's entries are ~4e16, and its centred part (~4) is
    at their rounding, so the dense kernel cannot be centred; the error said it had zero
    Frobenius norm. It now names the offset and factored_alignment, which centres the
    factors first and aligns them exactly (1 for a factor and its shift)."""
    X = np.random.default_rng(0).normal(size=(40, 4))
    G = X + 1e8
    with pytest.raises(ValueError, match=r"K1 is constant once centred.*offset.*factored_align"):
        alignment(G @ G.T, X @ X.T)
    assert factored_alignment(G, X) == pytest.approx(1.0, abs=1e-12)


def test_alignment_stays_within_its_bounds_and_sees_small_variation_on_a_constant():
    """Cauchy-Schwarz bounds the alignment by 1 (with this seed, K against 3 K gave
    1.0000000000000004), and a real variation on a large constant is still scored, not taken
    for round-off."""
    G = np.random.default_rng(0).normal(size=(10, 3))
    K = G @ G.T
    for s in (3.0, 7.0, 0.1, 1e-5):
        assert -1.0 <= alignment(K, s * K) <= 1.0 and alignment(K, s * K) == pytest.approx(1.0)
    assert alignment(K, K + 1e6) == pytest.approx(1.0, abs=1e-6)
    assert factored_alignment(G, G + 1e6) == pytest.approx(1.0, abs=1e-6)


def test_alignment_refuses_a_non_symmetric_matrix_and_keeps_round_off(rng):
    """A square cross-kernel k(X, Y) is not a kernel matrix; it used to be scored as one.
    Kernels whose triangles differ by round-off are not refused: one computed in float16, a
    float32 one upcast by the user, one centred by the user with a large constant in it."""
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    cross = np.exp(-((X[:, None] - Y[None]) ** 2).sum(-1))
    K = X @ X.T
    with pytest.raises(ValueError, match="K1 must be a symmetric kernel matrix"):
        alignment(cross, K)
    with pytest.raises(ValueError, match="K2 must be a symmetric kernel matrix"):
        alignment(K, cross)
    G = rng.normal(size=(30, 5))
    H = np.eye(30) - 1.0 / 30
    rounded = []
    for dtype in (np.float16, np.float32):  # each entry rounded on its own: triangles differ
        R = (G[:, None, :] * G[None, :, :]).astype(dtype).sum(axis=2, dtype=dtype)
        rounded.append(R + np.triu(R, 1) * dtype(np.finfo(dtype).eps))
    centred = H @ (G @ G.T + 1e6) @ H  # a large constant, centred away by round-off
    for K2 in rounded + [rounded[1].astype(np.float64), centred]:
        assert not np.array_equal(K2, K2.T)
        ref = _explicit(K, np.asarray(K2, dtype=np.float64), True)
        assert alignment(K, K2) == pytest.approx(ref, rel=1e-12)
