"""lam="auto" on pairs: the pairs' one-step model, its cross-validation and the default fit.

Oracles: a dense l x l construction of the model from its definition, the labels' one-step
model (the same model when the mask is full), the exact solver of J (first-order agreement
at large lam), and a Python recomputation of a fold's held-out loss.
"""

import warnings

import numpy as np
import pytest
from conftest import gaussian_prior

from nystrom_priors import GeneralizedNystrom, Nystrom, extrapolate
from nystrom_priors._numba import _pairs_cv as jit
from nystrom_priors.generalized import _lam as lam_cv
from nystrom_priors.generalized import _lam_pairs as lam_pairs
from nystrom_priors.generalized._problem import _build_problem
from nystrom_priors.generalized._solver import _solve_lam
from nystrom_priors.side_info import labels_to_pairs


def _pairs_problem(rng, m=14, l=10, k=18, d=3):
    """(E, U0, w, S0, ia, ib, must): k distinct random pairs over l points."""
    Z = rng.normal(size=(m, d))
    X = rng.normal(size=(l, d))
    U0, w, S0 = gaussian_prior(Z, 4.0)
    E = extrapolate(X, Z, width=4.0)
    iu, ju = np.triu_indices(l, 1)
    pick = rng.choice(iu.size, k, replace=False)
    must = rng.random(k) < 0.5
    return E, U0, w, S0, iu[pick], ju[pick], must


def _dense_model(E, U0, w, S0, ia, ib, must, rel_lam):
    """The pairs' one-step model built in m x m from its definition, with an l x l residual
    and an independent basis."""
    l = E.shape[0]
    T = np.eye(l)  # mask: the diagonal and both orders of each pair
    Kstar = np.eye(l)
    T[ia, ib] = T[ib, ia] = 1.0
    Kstar[ia, ib] = Kstar[ib, ia] = must.astype(float)
    K0 = E @ S0 @ E.T
    r = T * (Kstar - K0)
    Ub, sb, _ = np.linalg.svd(U0 @ (U0.T @ E.T), full_matrices=False)
    V = Ub[:, sb > 1e-10 * sb[0]]
    C = np.linalg.inv(V.T @ (U0 * w) @ U0.T @ V)
    F = E @ V
    mu, Um = np.linalg.eigh(F.T @ F)
    mu = np.maximum(mu, 0)
    lam = rel_lam * mu.max() ** 2
    # the majoriser ||F (Y - C) F^T - r||^2: unconstrained optimum in M's eigenbasis
    c_t = Um.T @ C @ Um + (Um.T @ F.T @ r @ F @ Um) / (lam + np.outer(mu, mu))
    dd = np.sqrt(lam + mu**2)
    A = np.sqrt(np.outer(dd, dd)) * c_t
    v, Q = np.linalg.eigh(0.5 * (A + A.T))
    Yt = ((Q * np.maximum(v, 0)) @ Q.T) / np.sqrt(np.outer(dd, dd))
    return S0 + V @ (Um @ Yt @ Um.T - C) @ V.T, lam


@pytest.mark.parametrize("rel_lam", [1e-9, 1e-4, 1e-1])
@pytest.mark.parametrize("l", [8, 30])  # fewer and more points than landmarks
def test_pairs_model_matches_its_dense_definition(rng, rel_lam, l):
    E, U0, w, S0, ia, ib, must = _pairs_problem(rng, l=l, k=2 * l)
    G_r, lam = lam_pairs.onestep_pairs_model(E @ U0, w, ia, ib, must, rel_lam)
    S_r = G_r @ G_r.T
    S_ref, lam_ref = _dense_model(E, U0, w, S0, ia, ib, must, rel_lam)
    assert lam == pytest.approx(lam_ref, rel=1e-10)
    S = U0 @ S_r @ U0.T
    np.testing.assert_allclose(S, S_ref, atol=1e-8 * np.abs(S_ref).max())


@pytest.mark.parametrize("rel_lam", [1e-8, 1e-2])
def test_full_mask_is_the_labels_model(rng, rel_lam):
    """Every pair among the labeled samples given: the mask covers the whole labeled block and
    the pairs' model is the labels' one-step model."""
    Z = rng.normal(size=(12, 3))
    X = rng.normal(size=(9, 3))
    U0, w, _ = gaussian_prior(Z, 4.0)
    PE = extrapolate(X, Z, width=4.0) @ U0
    codes = np.arange(9) % 3
    ia, ib = np.triu_indices(9, 1)
    G_pairs, lam_p = lam_pairs.onestep_pairs_model(PE, w, ia, ib, codes[ia] == codes[ib], rel_lam)
    S_pairs = G_pairs @ G_pairs.T
    G_labels, lam_l = lam_cv.onestep_model(PE, w, codes, 3, rel_lam)
    S_labels = G_labels @ G_labels.T
    assert lam_p == pytest.approx(lam_l, rel=1e-12)
    np.testing.assert_allclose(S_pairs, S_labels, atol=1e-9 * np.abs(S_labels).max())


def test_pairs_model_agrees_with_J_to_first_order_in_one_over_lam(rng):
    """One majorisation step from the prior: ``S - S_exact = O(1 / lam^2)`` while
    ``S_exact - S0 = O(1 / lam)``, so their ratio falls tenfold per decade of lam."""
    E, U0, w, S0, ia, ib, must = _pairs_problem(rng, l=12, k=20)
    pairs = np.column_stack([ia, ib, np.where(must, 1, -1)])
    prob = _build_problem(S0, None, pairs, lambda rows: E[rows])
    ratios = []
    for rel in (1e0, 1e1, 1e2):
        G_r, lam = lam_pairs.onestep_pairs_model(E @ U0, w, ia, ib, must, rel)
        S_r = G_r @ G_r.T
        S_exact = _solve_lam(prob, lam, "newton", 1e-13, 500)[0]
        ratios.append(np.linalg.norm(U0 @ S_r @ U0.T - S_exact) / np.linalg.norm(S_exact - S0))
    assert ratios[1] < 0.2 * ratios[0] and ratios[2] < 0.2 * ratios[1]


def test_cv_losses_are_the_fold_models_cosine_errors(rng):
    """pairs_cv's loss and error of a round are those of the one-step model fitted on the
    round's training pairs alone, scored on its held-out pairs by the cosine of K."""
    E, U0, w, S0, ia, ib, must = _pairs_problem(rng, m=20, l=40, k=150)
    PE = np.ascontiguousarray(E @ U0)
    roles = lam_pairs.pair_rounds(ia, ib, 40, 4, np.random.default_rng(3))
    rel = np.array([1e-8, 1e-3, np.inf])
    loss, err = jit.pairs_cv(
        PE, w, ia, ib, must.astype(float), roles, rel, 120, np.zeros(0, dtype=np.int64)
    )
    for t in range(roles.shape[0]):
        train, test = roles[t] == 1, roles[t] == 2
        pts = np.union1d(ia[train], ib[train])
        a, b = np.searchsorted(pts, ia[train]), np.searchsorted(pts, ib[train])
        for j, r in enumerate(rel):
            if np.isfinite(r):
                G_r, _ = lam_pairs.onestep_pairs_model(PE[pts], w, a, b, must[train], r)
                S_r = G_r @ G_r.T
            else:
                S_r = np.diag(1.0 / w)
            K = lambda i, k: np.einsum("ij,jk,ik->i", PE[i], S_r, PE[k])  # noqa: E731
            cos = K(ia[test], ib[test]) / np.sqrt(K(ia[test], ia[test]) * K(ib[test], ib[test]))
            target = must[test].astype(float)
            assert loss[t, j] == pytest.approx(np.mean((cos - target) ** 2), rel=1e-8)
            assert err[t, j] == pytest.approx(np.mean((cos > 0.5) != must[test]))


def test_pair_rounds_drop_repeated_rounds(rng):
    """As many groups as samples: both splits deal every sample alone, the same folds, and
    the two ends of a pair with no other pair hold out the same pairs; each round is kept
    once, so the paired test does not count it twice."""
    ia, ib = np.array([0, 2, 4, 6, 1]), np.array([1, 3, 5, 7, 6])
    roles = lam_pairs.pair_rounds(ia, ib, 8, 50, rng)
    # samples 0, 1, 6, 7 each hold out their own set of pairs; 2 and 3 the same one, 4 and 5
    assert roles.shape == (6, 5)
    assert np.unique(roles, axis=0).shape[0] == roles.shape[0]
    # fewer groups than samples: two different splits, every round kept
    roles = lam_pairs.pair_rounds(ia, ib, 8, 2, rng)
    assert roles.shape[0] == 4


def _two_moons_pairs(seed, n=500, n_pairs=300, informative=True):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)  # XOR: the RBF prior at the default width mixes it
    if not informative:
        y = r.integers(2, size=n)  # labels independent of X
    lab = r.choice(n, 150, replace=False)
    yy = np.full(n, -1)
    yy[lab] = y[lab]
    return X, y, labels_to_pairs(yy, n_pairs, random_state=seed), lab


def test_pairs_auto_keeps_nystrom_when_pairs_are_noise():
    """Pairs whose signs do not depend on X: the gate keeps the prior in at least half the
    draws (a selection without the prior among its candidates never can). The loss charges
    the cosines' distance to J's targets, so a kernel that only moves every cosine toward the
    targets' mean can still pass the gate: the others are where that shift is too small."""
    kept = 0
    for seed in range(6):
        X, _, pairs, _ = _two_moons_pairs(seed, informative=False)
        model = GeneralizedNystrom(n_landmarks=30, random_state=seed).fit(X, pairs=pairs)
        kept += int(np.isinf(model.lam_))
    assert kept >= 3


def test_pairs_auto_learns_when_pairs_are_informative():
    """Three classes in 3 of 8 dimensions, the other 5 noise the prior kernel weighs alike: a
    finite lam is chosen, its held-out loss beats the prior's, and the learned kernel's cosine
    ranks fresh pairs of unconstrained samples (same class or not) far better than the
    prior's."""
    r = np.random.default_rng(0)
    n = 500
    y = r.integers(3, size=n)
    X = np.hstack([np.eye(3)[y] * 2.0 + 0.5 * r.normal(size=(n, 3)), 1.5 * r.normal(size=(n, 5))])
    lab = r.choice(n, 150, replace=False)
    yy = np.full(n, -1)
    yy[lab] = y[lab]
    pairs = labels_to_pairs(yy, 300, random_state=0)
    model = GeneralizedNystrom(n_landmarks=50, random_state=0).fit(X, pairs=pairs)
    assert np.isfinite(model.lam_) and model.converged_
    best = int(np.argmin(model.criterion_path_))
    assert model.criterion_path_[best] < model.criterion_path_[-1]
    prior = Nystrom(n_landmarks=50, random_state=0).fit(X)
    free = np.setdiff1d(np.arange(n), lab)
    a, b = np.triu_indices(free.size, 1)
    same = y[free][a] == y[free][b]

    def auc(G):
        Gn = G / np.linalg.norm(G, axis=1, keepdims=True)
        cos = np.einsum("ij,ij->i", Gn[a], Gn[b])
        ranks = np.empty(cos.size)
        ranks[np.argsort(cos)] = np.arange(cos.size)
        pos = ranks[same]
        return (pos.sum() - pos.size * (pos.size - 1) / 2) / (pos.size * (~same).sum())

    assert auc(model.transform(X[free])) > auc(prior.transform(X[free])) + 0.1


def test_pairs_default_solves_J_exactly_at_the_chosen_lam():
    X, _, pairs, _ = _two_moons_pairs(1)
    auto = GeneralizedNystrom(n_landmarks=30, random_state=1).fit(X, pairs=pairs)
    assert np.isfinite(auto.lam_), "this draw must move off the prior to test anything"
    fixed = GeneralizedNystrom(n_landmarks=30, random_state=1, lam=auto.lam_).fit(X, pairs=pairs)
    assert auto.converged_ and auto.certificate_ <= auto.tol and fixed.converged_
    # both certified to tol (the default starts its dual from the one-step model, a fixed lam
    # from cold): J agrees to tol
    prob = _build_problem(auto.S0_, None, pairs, lambda rows: auto._features_block(X[rows]))
    J_auto, J_fixed = prob.objective(auto.S_, auto.lam_), prob.objective(fixed.S_, auto.lam_)
    assert abs(J_auto - J_fixed) <= 2 * auto.tol * J_fixed
    # solver="onestep": the model the cross-validation scored, at the same lam
    one = GeneralizedNystrom(n_landmarks=30, random_state=1, solver="onestep").fit(X, pairs=pairs)
    # the same exponent, each relative to its own data term's scale: mu_max^2 for the
    # one-step model (its majoriser fills the block), density * mu_max^2 for J on pairs
    e = np.log10(auto.lam_ / auto.lam_scale_)
    assert np.log10(one.lam_ / one.lam_scale_) == pytest.approx(e, abs=1e-12)
    density = (2 * pairs.shape[0] + np.unique(pairs[:, :2]).size) / np.unique(
        pairs[:, :2]
    ).size ** 2
    assert auto.lam_scale_ == pytest.approx(density * one.lam_scale_, rel=1e-8)
    assert one.n_iter_ == 1 and np.isnan(one.certificate_)
    assert np.linalg.eigvalsh(one.S_).min() > -1e-9 * np.abs(one.S_).max()


@pytest.mark.parametrize("rel", [1e-8, 1e-6])
def test_dual_newton_starts_from_a_primal_guess(rng, rel):
    """_solve_lam's S_guess starts the dual at ``A(S_guess) - t``: from J's own optimum the
    Newton certifies at once, and from the one-step model it reaches the cold start's J."""
    E, U0, w, S0, ia, ib, must = _pairs_problem(rng, m=14, l=30, k=60)
    pairs = np.column_stack([ia, ib, np.where(must, 1, -1)])
    prob = _build_problem(S0, None, pairs, lambda rows: E[rows])
    lam = rel * prob.mu_max**2
    S_cold, it_cold, cert, ok, _ = _solve_lam(prob, lam, "newton", 1e-10, 500)
    assert ok
    S_at, it_at, cert_at, ok_at, _ = _solve_lam(prob, lam, "newton", 1e-8, 500, S_guess=S_cold)
    assert ok_at and it_at <= 2 and cert_at <= 1e-8
    G_r, _ = lam_pairs.onestep_pairs_model(E @ U0, w, ia, ib, must, 1e-6)
    S_r = G_r @ G_r.T
    S_g, it_g, cert_g, ok_g, _ = _solve_lam(
        prob, lam, "newton", 1e-10, 500, S_guess=U0 @ S_r @ U0.T
    )
    assert ok_g and cert_g <= 1e-10
    J = prob.objective(S_cold, lam)
    assert prob.objective(S_g, lam) == pytest.approx(J, rel=1e-8)


def test_pairs_auto_keeps_the_prior_and_says_why_when_no_round_scores(monkeypatch):
    """No round with both training and scored pairs (all NaN): the prior, with a warning that
    names the remedy, as for labels."""
    X, _, pairs, _ = _two_moons_pairs(0)

    def unscored(PE, w, ia, ib, t, roles, rel, cap, lapack):
        return np.full((roles.shape[0], rel.size), np.nan), np.full(
            (roles.shape[0], rel.size), np.nan
        )

    monkeypatch.setattr(jit, "pairs_cv", unscored)
    with pytest.warns(UserWarning, match=r"kept the Nystrom prior.*give more pairs"):
        model = GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, pairs=pairs)
    assert np.isinf(model.lam_)
    np.testing.assert_allclose(model.S_, model.S0_)


def test_pairs_auto_needs_two_pairs_of_each_kind():
    """Two must-link and two cannot-link pairs are scored; one fewer of either kind keeps the
    prior with a warning that counts them."""
    two_each = np.array([[0, 1, 1], [2, 3, 1], [4, 5, -1], [6, 7, -1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lam_pairs.can_score(None, two_each)
    for drop, counts in ((0, "1 must-link and 2 cannot-link"), (3, "2 must-link and 1 cannot")):
        with pytest.warns(UserWarning, match=counts):
            assert not lam_pairs.can_score(None, np.delete(two_each, drop, axis=0))
