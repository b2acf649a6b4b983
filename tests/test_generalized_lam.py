"""lam="auto" on labels: the one-step model, its cross-validation and the choice rule.

Oracles: the exact solver of J (where the PSD constraint is inactive the one-step model is
J's optimum), cvxpy (the majoriser's minimiser over the PSD cone), scikit-learn's Ridge (the
held-out classifier), and dense m x m reconstructions of the restricted family.
"""

import contextlib
import os
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest
from conftest import gaussian_prior

from nystrom_priors import GeneralizedNystrom, Nystrom, extrapolate
from nystrom_priors._numba import _lam_cv as jit
from nystrom_priors._numba import _lam_race as drivers
from nystrom_priors._numba._lapack import addresses as _addresses
from nystrom_priors.generalized import _lam as lam_cv
from nystrom_priors.generalized._problem import _Problem
from nystrom_priors.generalized._solver import _solve_lam


def _cv_problem(rng, m, n, c, d):
    """(PE, w, codes): n labeled rows of c random classes in the eigen-coordinates of a
    Gaussian prior on m landmarks (width d), as select_lam and cv_losses take them."""
    Z = rng.normal(size=(m, d))
    X = rng.normal(size=(n, d))
    U0, w, _ = gaussian_prior(Z, float(d))
    PE = np.ascontiguousarray(extrapolate(X, Z, width=float(d)) @ U0)
    return PE, w, rng.integers(c, size=n).astype(np.int64)


def _labeled_problem(rng, m=12, l=8, c=3, d=3):
    Z = rng.normal(size=(m, d))
    X = rng.normal(size=(l, d))
    U0, w, S0 = gaussian_prior(Z, 4.0)
    E = extrapolate(X, Z, width=4.0)
    codes = np.arange(l) % c
    return E, codes, c, U0, w, S0


def _dense_onestep(E, codes, c, U0, w, S0, rel_lam):
    """The one-step model built in m x m from its definition, with an independent basis."""
    Y = np.eye(c)[codes]
    # V: orthonormal basis of range(E^T) inside range(S0) (here range(S0) = range(U0))
    Ub, sb, _ = np.linalg.svd(U0 @ (U0.T @ E.T), full_matrices=False)
    V = Ub[:, sb > 1e-10 * sb[0]]
    C = np.linalg.inv(V.T @ (U0 * w) @ U0.T @ V)
    D = V.T @ S0 @ V - C
    F = E @ V
    M = F.T @ F
    mu, Um = np.linalg.eigh(M)
    mu = np.maximum(mu, 0)
    lam = rel_lam * mu.max() ** 2
    R = F.T @ Y @ Y.T @ F - M @ D @ M
    c_t = (lam * Um.T @ C @ Um + Um.T @ R @ Um) / (lam + np.outer(mu, mu))
    dd = np.sqrt(lam + mu**2)
    A = np.sqrt(np.outer(dd, dd)) * c_t
    v, Q = np.linalg.eigh(0.5 * (A + A.T))
    P = (Q * np.maximum(v, 0)) @ Q.T
    Yt = P / np.sqrt(np.outer(dd, dd))
    Yv = Um @ Yt @ Um.T
    return S0 + V @ (Yv - C) @ V.T, lam


@pytest.mark.parametrize("rel_lam", [1e-9, 1e-4, 1e-1])
@pytest.mark.parametrize("m, l", [(12, 8), (8, 20)])  # labels span part of range(S0), all of it
def test_onestep_model_matches_its_dense_definition(rng, rel_lam, m, l):
    E, codes, c, U0, w, S0 = _labeled_problem(rng, m=m, l=l)
    G_r, lam = lam_cv.onestep_model(E @ U0, w, codes, c, rel_lam)
    S_r = G_r @ G_r.T
    S = U0 @ S_r @ U0.T
    S_ref, lam_ref = _dense_onestep(E, codes, c, U0, w, S0, rel_lam)
    assert lam == pytest.approx(lam_ref, rel=1e-10)
    np.testing.assert_allclose(S, S_ref, atol=1e-8 * np.abs(S_ref).max())


@pytest.mark.parametrize("n_labeled", [8, 30])  # fewer and more labels than landmarks
def test_estimator_fit_is_the_dense_one_step_model(rng, n_labeled):
    """solver="onestep" at a fixed lam: ``S_`` is the one-step model built densely from its
    definition on the fit's own landmarks and prior (U0, w of ``Nystrom`` on the same draw),
    ``projection_`` (whose product is ``S_``) has no more columns than S's rank, and the
    model is not the prior."""
    X = rng.normal(size=(150, 3))
    y = np.full(150, -1)
    y[:n_labeled] = np.arange(n_labeled) % 3
    gn = GeneralizedNystrom(n_landmarks=12, lam=1e-3, solver="onestep", random_state=0).fit(X, y)
    nys = Nystrom(n_landmarks=12, random_state=0).fit(X)
    np.testing.assert_array_equal(gn.landmarks_, nys.landmarks_)
    w = nys.eigenvalues_
    U0 = nys.projection_ * np.sqrt(w)
    E = extrapolate(X[:n_labeled], gn.landmarks_, width=gn.width_)
    S_ref, lam_ref = _dense_onestep(E, y[:n_labeled], 3, U0, w, nys.S0_, gn.lam_ / gn.lam_scale_)
    np.testing.assert_allclose(gn.S_, S_ref, atol=1e-8 * np.abs(S_ref).max())
    assert np.abs(S_ref - nys.S0_).max() > 1e-3 * np.abs(nys.S0_).max()
    P = gn.projection_
    assert P.shape[1] <= np.linalg.matrix_rank(S_ref, tol=1e-10 * np.abs(S_ref).max())


def test_onestep_at_without_directions_is_the_prior(rng):
    """An empty restricted problem (p = 0): the factor of S0 in its eigen-coordinates."""
    w = np.sort(rng.uniform(1e-6, 10.0, 7))
    G, lam = lam_cv.onestep_at(w, np.zeros((7, 0)), np.zeros(0), np.zeros((0, 0)), None, 1e-2)
    assert lam == np.inf
    np.testing.assert_allclose(G @ G.T, np.diag(1.0 / w), rtol=1e-13)


def test_onestep_is_the_exact_optimum_where_the_constraint_is_inactive(rng):
    """At a large lam J's unconstrained optimum is PSD: the one-step model is J's optimum
    (certified by the exact solver)."""
    E, codes, c, U0, w, S0 = _labeled_problem(rng, m=10, l=15)
    G_r, lam = lam_cv.onestep_model(E @ U0, w, codes, c, 1e-1)
    S_r = G_r @ G_r.T
    prob = _Problem(S0, E, np.eye(c)[codes])
    S_exact = _solve_lam(prob, lam, "newton", 1e-12, 500)[0]
    S = U0 @ S_r @ U0.T
    assert prob.objective(S, lam) == pytest.approx(prob.objective(S_exact, lam), rel=1e-9)


def test_onestep_minimises_the_majoriser_over_the_psd_cone(rng):
    """cvxpy: Y~ = argmin_{Y >= 0} sum d_i d_j (Y - c)_ij^2 with d = sqrt(lam + mu^2)."""
    cp = pytest.importorskip("cvxpy")
    E, codes, c, U0, w, S0 = _labeled_problem(rng, m=10, l=6)
    Vc, mu, C, R, _ = jit.restricted_problem(E @ U0, w, codes.astype(np.int64), c, _addresses())
    lam = 1e-6 * mu[-1] ** 2
    L = jit.onestep(mu, C, R, lam)
    ctil = (lam * C + R) / (lam + np.outer(mu, mu))
    s = np.sqrt(np.sqrt(lam + mu**2))
    p = mu.size
    Yv = cp.Variable((p, p), PSD=True)
    cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(np.outer(s, s), Yv - ctil)))).solve()
    np.testing.assert_allclose(L @ L.T, Yv.value, atol=1e-5 * np.abs(ctil).max())


def test_onestep_y_from_the_negative_eigenpairs_alone(rng):
    """Y from the few negative eigenpairs (dsytrf's inertia, MRRR) equals Y from all of them
    (np.linalg.eigh), from an inactive constraint to many negative eigenvalues; the path
    through the partial eigendecomposition is taken on part of the grid."""
    from nystrom_priors._numba import _lapack

    E, codes, c, U0, w, S0 = _labeled_problem(rng, m=40, l=60)
    addr = _lapack.addresses()
    Vc, mu, C, R, _ = jit.restricted_problem(E @ U0, w, codes.astype(np.int64), c, addr)
    negatives = []
    for e in range(0, -13, -1):
        lam = 10.0**e * mu[-1] ** 2
        full = jit.onestep_y(mu, C, R, lam, np.zeros(0, dtype=np.int64))
        partial = jit.onestep_y(mu, C, R, lam, addr)
        np.testing.assert_allclose(partial, full, atol=1e-9 * np.abs(full).max())
        V, _ = jit._scaled_target(mu, C, R, lam)
        negatives.append(_lapack.negative_count(V, addr[_lapack.DSYTRF]))
    most = jit._PARTIAL_MAX * mu.size
    assert any(1 <= k <= most for k in negatives)  # the partial path ran
    assert any(k > most for k in negatives) and 0 in negatives  # and the other two


def test_negative_count_and_lowest_eigenpairs_match_eigh(rng):
    """Sylvester's inertia from Bunch-Kaufman and the lowest pairs by MRRR, against eigh, on
    matrices with 0 to p negative eigenvalues (and 2 x 2 pivots: a zero diagonal), with
    clustered and repeated eigenvalues among the pairs asked for; none for k outside 1..p."""
    from nystrom_priors._numba import _lapack

    addr = _lapack.addresses()
    for p, k in [(1, 0), (1, 1), (6, 3), (30, 0), (30, 2), (30, 30), (80, 9)]:
        Q, _ = np.linalg.qr(rng.normal(size=(p, p)))
        v = np.concatenate([-rng.uniform(0.1, 10, k), rng.uniform(0.1, 10, p - k)])
        V = (Q * v) @ Q.T
        V = 0.5 * (V + V.T)
        assert _lapack.negative_count(V, addr[_lapack.DSYTRF]) == k
        if k:
            vals, vecs = _lapack.lowest_eigenpairs(V, k, addr)
            np.testing.assert_allclose(vals, np.linalg.eigvalsh(V)[:k], atol=1e-12 * 10)
            np.testing.assert_allclose(V @ vecs, vecs * vals, atol=1e-12 * 10 * p)
            np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-12 * p)
    Q, _ = np.linalg.qr(rng.normal(size=(40, 40)))
    v = np.concatenate([[-3.0] * 4, -1.0 + 1e-13 * np.arange(5), rng.uniform(0.1, 10, 31)])
    V = 0.5 * ((Q * v) @ Q.T + ((Q * v) @ Q.T).T)
    vals, vecs = _lapack.lowest_eigenpairs(V, 9, addr)
    np.testing.assert_allclose(vals, np.sort(v)[:9], atol=1e-12 * 10)
    np.testing.assert_allclose(V @ vecs, vecs * vals, atol=1e-12 * 10 * 40)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(9), atol=1e-12 * 40)
    for k in (0, 41):
        assert _lapack.lowest_eigenpairs(V, k, addr)[1].shape == (40, 0)
    J = np.array([[0.0, 1.0], [1.0, 0.0]])  # Bunch-Kaufman needs a 2 x 2 pivot here
    assert _lapack.negative_count(J, addr[_lapack.DSYTRF]) == 1


@pytest.mark.parametrize("p", [1, 2, 17, 80])
def test_spd_inverse_matches_numpy_or_refuses(rng, p):
    """dpotrf + dpotri through their addresses: numpy's inverse, exactly symmetric, on a
    positive definite matrix with a condition number up to e^12; refused (for the caller to
    fall back) without addresses, on a matrix that is not positive definite, or on NaN."""
    from nystrom_priors._numba import _lapack

    addr = _lapack.addresses()
    Q, _ = np.linalg.qr(rng.normal(size=(p, p)))
    B = (Q * np.exp(rng.uniform(-6, 6, p))) @ Q.T
    B = 0.5 * (B + B.T)
    inv, done = _lapack.spd_inverse(B, addr)
    assert done and np.array_equal(inv, inv.T)
    np.testing.assert_allclose(inv @ B, np.eye(p), atol=1e-9)
    np.testing.assert_allclose(inv, np.linalg.inv(B), rtol=1e-8, atol=1e-10 * np.abs(inv).max())
    assert not _lapack.spd_inverse(B, np.zeros(0, dtype=np.int64))[1]
    v = np.sort(rng.uniform(-5, 5, p))
    v[0] = -1.0  # at least one negative eigenvalue
    assert not _lapack.spd_inverse((Q * v) @ Q.T, addr)[1]
    bad = B.copy()
    bad[0, 0] = np.nan
    assert not _lapack.spd_inverse(bad, addr)[1]


@pytest.mark.parametrize("l", [12, 13])  # as many rows as S0's rank, and more
def test_prior_block_is_exact_where_the_rows_span_range_s0(rng, l):
    """C = (Vc^T W Vc)^-1 to round-off although W's eigenvalues span 13 decades, against the
    Schur complement of an independent basis (a QR of the rows): where the rows span
    range(S0) no ill-conditioned matrix is inverted."""
    from nystrom_priors._numba import _lapack

    r = 12
    w = np.logspace(0, -13, r)
    aT = rng.normal(size=(l, r))
    Vc, mu, C, F, D = jit._basis(aT, w, 1000, _lapack.addresses())
    assert mu.size == r
    Q = np.linalg.qr(aT.T, mode="complete")[0]
    T = Q.T @ Vc  # Vc in Q's coordinates: C = T^T (Q^T W Q)^-1 T = T^T Q^T W^-1 Q T
    C_ref = T.T @ (Q.T @ (Q / w[:, None])) @ T
    np.testing.assert_allclose(C, C_ref, rtol=0, atol=1e-10 * np.abs(C_ref).max())


def test_restricted_family_is_feasible_exactly_when_Y_is_psd(rng):
    """S0 + V (Y - C) V^T >= 0 iff Y >= 0 (Schur complement), in the coordinates of S0."""
    E, codes, c, U0, w, S0 = _labeled_problem(rng)
    Vc, mu, C, R, F = jit.restricted_problem(E @ U0, w, codes.astype(np.int64), c, _addresses())
    np.testing.assert_allclose(Vc.T @ Vc, np.eye(mu.size), atol=1e-10)
    np.testing.assert_allclose(F.T @ F, np.diag(mu), atol=1e-9 * mu.max())
    for shift in (1e-6, -1e-6):
        Y = np.eye(mu.size) * shift  # PSD iff shift >= 0
        S_r = np.diag(1 / w) + Vc @ (Y - C) @ Vc.T
        assert (np.linalg.eigvalsh(S_r).min() >= -1e-9 * (1 / w).max()) == (shift > 0)


@pytest.mark.parametrize("c", [2, 3])
def test_cv_scores_are_a_ridge_classifier_on_the_fold_kernel(rng, c):
    """The held-out scores of one fold equal scikit-learn's Ridge on the learned features with
    a constant feature (penalised intercept), alpha = 1/2 (two classes: one +-1 column,
    otherwise one-vs-rest); the ramp loss is on the held-out margins in units of the training
    rows' RMS margin."""
    sklearn_linear = pytest.importorskip("sklearn.linear_model")
    m, n = 15, 40
    Z = rng.normal(size=(m, 3))
    X = rng.normal(size=(n, 3))
    U0, w, S0 = gaussian_prior(Z, 3.0)
    E = extrapolate(X, Z, width=3.0)
    codes = rng.integers(c, size=n)
    codes[:c] = np.arange(c)
    roles = np.full((1, n), 2, dtype=np.int8)
    roles[0, n // 2 :] = 1
    roles[0, n - 4 :] = 0  # left out: neither trains nor is scored
    roles[0, :2] = 0
    rel = np.array([1e-6, np.inf])
    L = lam_cv.round_means(drivers.cv_losses(E @ U0, w, codes, c, roles, rel, 0.5))
    train, test = np.flatnonzero(roles[0] == 1), np.flatnonzero(roles[0] == 2)
    for j, r in enumerate(rel):
        if np.isfinite(r):
            G_r, _ = lam_cv.onestep_model(E[train] @ U0, w, codes[train], c, r)
            S_r = G_r @ G_r.T
            S = U0 @ S_r @ U0.T
        else:
            S = S0
        lw, Q = np.linalg.eigh(S)
        G = E @ (Q[:, lw > 1e-12 * lw.max()] * np.sqrt(lw[lw > 1e-12 * lw.max()]))
        Phi = np.hstack([G, np.ones((n, 1))])
        if c == 2:
            T = np.where(codes == 1, 1.0, -1.0)[:, None]
        else:
            T = -np.ones((n, c))
            T[np.arange(n), codes] = 1
        ridge = sklearn_linear.Ridge(alpha=0.5, fit_intercept=False).fit(Phi[train], T[train])
        P = ridge.predict(Phi[test]).reshape(test.size, -1)  # (l, 1) for two classes
        sqh = np.mean(np.sum(np.maximum(0, 1 - T[test] * P) ** 2, axis=1))
        pred = (P[:, 0] > 0).astype(int) if c == 2 else np.argmax(P, axis=1)
        err = np.mean(pred != codes[test])

        def margin(scores, rows):
            if c == 2:
                return T[rows, 0] * scores[:, 0]
            other = np.where(np.arange(c) == codes[rows, None], -np.inf, scores).max(axis=1)
            return scores[np.arange(rows.size), codes[rows]] - other

        P_train = ridge.predict(Phi[train]).reshape(train.size, -1)
        unit = np.sqrt(np.mean(margin(P_train, train) ** 2))
        ramp = np.mean(np.clip(1 - margin(P, test) / unit, 0, 2))
        assert L[1, 0, j] == pytest.approx(sqh, rel=1e-7)
        assert L[2, 0, j] == pytest.approx(err)
        assert L[3, 0, j] == pytest.approx(ramp, rel=1e-7)


def test_cv_scores_ignore_directions_the_prior_does_not_weigh(rng):
    """Zero columns with a huge w (1 / w ~ 0: S0 ignores them) leave every held-out loss
    unchanged, with more training labels than landmarks and with fewer than the padded rank."""
    m, n, c = 8, 60, 2
    Z = rng.normal(size=(m, 2))
    X = rng.normal(size=(n, 2))
    U0, w, _ = gaussian_prior(Z, 2.0)
    PE = extrapolate(X, Z, width=2.0) @ U0
    codes = (X[:, 0] > 0).astype(np.int64)
    folds = np.arange(n) % 3
    roles = np.stack([np.where(folds == f, 2, 1) for f in range(3)]).astype(np.int8)
    rel = 10.0 ** np.array([-8.0, -3.0, 0.0, np.inf])
    feat = drivers.cv_losses(PE, w, codes, c, roles, rel, 0.5)
    r_pad = n
    PE_pad = np.hstack([PE, np.zeros((n, r_pad))])
    w_pad = np.concatenate([w, np.full(r_pad, 1e300)])
    kern = drivers.cv_losses(PE_pad, w_pad, codes, c, roles, rel, 0.5)
    np.testing.assert_allclose(feat, kern, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("l, rank", [(100, 300), (1000, 60), (1000, 300)])
def test_cv_rounds_hold_out_every_label_and_bound_the_training_rank(rng, l, rank):
    """Each split's held-out folds partition the labels; a round trains on all its other rows
    unless they would span more than _CV_RANK_MAX directions, then on a class-balanced subset
    of _CV_RANK_MAX of them."""
    codes = rng.choice(3, size=l, p=[0.6, 0.3, 0.1])
    roles = lam_cv.cv_rounds(codes, 5, rank, rng)
    n_splits = 3 if l <= 500 else 1
    assert roles.shape == (5 * n_splits, l)
    for s in range(n_splits):
        held = roles[5 * s : 5 * s + 5] == 2
        np.testing.assert_array_equal(held.sum(axis=0), 1)
    np.testing.assert_array_equal(lam_cv._split_ends(roles), 5 * np.arange(1, n_splits + 1))
    for role in roles:
        n_train = np.count_nonzero(role == 1)
        full = l - np.count_nonzero(role == 2)
        if min(full, rank) > lam_cv._CV_RANK_MAX:
            assert n_train <= lam_cv._CV_RANK_MAX
            counts = np.bincount(codes[role == 1], minlength=3)
            share = np.bincount(codes[role != 2], minlength=3) / full
            assert np.all(np.abs(counts - share * n_train) <= 1)
        else:
            assert n_train == full


def test_choose_keeps_the_prior_unless_a_lam_is_clearly_better():
    base = np.array([[1.0, 1.0, 1.0]] * 6)
    noise = np.array([0.02, -0.01, 0.015, -0.02, 0.01, -0.015])
    L = base + noise[:, None] * np.array([1.0, -1.0, 0.0])
    assert lam_cv.choose(L) == 2  # within noise: the prior
    clear = L.copy()
    clear[:, 0] -= 0.2  # consistently better on every fold
    assert lam_cv.choose(clear) == 0
    both = clear.copy()
    both[:, 1] -= 0.3  # also clearly better, and smaller loss
    assert lam_cv.choose(both) == 1
    assert lam_cv.choose(np.vstack([clear, np.full(3, np.nan)])) == 0  # unscored fold dropped
    assert lam_cv.choose(clear[:1]) == 2  # one fold: no error estimate, the prior


def test_choose_gate_is_a_one_sided_t_test_at_one_percent():
    """The gate is Student's t quantile for the number of folds, not a fixed multiple of the
    standard error: with n - 1 degrees of freedom, t_9(0.99) = 2.82 over ten folds and
    t_4(0.99) = 3.75 over five. The improvements tested lie between the candidate thresholds
    (2.76 / 3.36 with n degrees of freedom, a fixed 3), so each wrong rule fails."""
    from scipy import stats

    rng = np.random.default_rng(7)
    for n in (5, 10):
        crit = stats.t.ppf(0.99, n - 1)
        d = rng.normal(size=n)
        d = (d - d.mean()) / d.std(ddof=1)  # paired differences: mean 0, sd 1
        for t in (2.7, 2.79, 2.9, 3.5, 3.9):
            L = np.ones((n, 2))
            L[:, 0] = 1.0 - 0.01 * (d + t / np.sqrt(n))  # mean improvement t standard errors
            assert lam_cv.choose(L) == (0 if t > crit else 1), (n, t)


def test_choose_never_picks_a_candidate_a_fold_did_not_score():
    """A candidate raced out of the second split (NaN there) cannot win, however low the
    mean of the folds that scored it; the others are judged on every fold."""
    rng = np.random.default_rng(3)
    L = 1.0 + 0.01 * rng.normal(size=(10, 4))
    L[:, 1] -= 0.2  # clearly better than the prior (last) on all ten folds
    L[:, 0] -= 0.5  # better still, but only scored by the first five
    L[5:, 0] = np.nan
    assert lam_cv.choose(L) == 1
    L[:, 1] = L[:, 3]  # no candidate scored by all ten beats the prior
    assert lam_cv.choose(L) == 3


@pytest.mark.parametrize("threshold", [1.0, 1.5, 2.0])
def test_race_keeps_the_prior_and_the_clear_candidates(threshold):
    rng = np.random.default_rng(4)
    noise = 0.01 * rng.normal(size=(5, 5))
    L = 1.0 + noise
    L[:, 0] = L[:, 4] - 0.05 + 0.001 * rng.normal(size=5)  # far more than 2 SE better
    L[:, 1] = L[:, 4] + 0.05  # worse than the prior
    L[:, 2] = L[:, 4] + np.array([-0.03, 0.03, -0.03, 0.03, -0.01])  # better by < 1 SE
    L[:, 3] = L[:, 0]
    L[3:, 3] = np.nan  # raced out before: not scored by the last two folds
    keep = lam_cv.race(L, threshold)
    np.testing.assert_array_equal(keep, [True, False, False, False, True])
    # the rule: paired mean improvement over the prior above ``threshold`` standard errors
    D = L[:, :3] - L[:, [4]]
    t = -D.mean(axis=0) / (D.std(axis=0, ddof=1) / np.sqrt(5))
    np.testing.assert_array_equal(keep[:3], t > threshold)
    assert lam_cv.race(L[:1], threshold).all()  # one fold: no error estimate, none out
    # between the thresholds: kept at 1 SE, raced out at 2
    L[:, 2] = L[:, 4] - 0.01 + np.array([-0.012, 0.012, -0.012, 0.012, 0.0])
    D = L[:, 2] - L[:, 4]
    t = -D.mean() / (D.std(ddof=1) / np.sqrt(5))
    assert 1.0 < t < 2.0
    assert lam_cv.race(L, threshold)[2] == (t > threshold)


def test_narrow_race_keeps_the_lowest_loss_and_the_clearest_candidate():
    """``narrow``: of the candidates above the threshold only the one with the smallest mean
    loss and the one with the largest paired z go on (ties: the first listed); the prior
    always does; without ``narrow`` every clear candidate does."""
    rng = np.random.default_rng(7)
    base = 1.0 + 0.01 * rng.normal(size=(8, 1))  # fold-to-fold variation, shared
    L = base + 0.002 * rng.normal(size=(8, 6))
    L[:, 0] = base[:, 0] - 0.05 + 0.002 * rng.normal(size=8)  # clear, not the lowest mean
    L[:, 1] = base[:, 0] - 0.20 + 0.05 * rng.normal(size=8)  # lowest mean, noisier
    L[:, 2] = base[:, 0] - 0.10 + 0.0001 * rng.normal(size=8)  # the clearest
    L[:, 3] = base[:, 0] + 0.05  # worse than the prior
    L[:, 4] = L[:, 2] + 0.001  # clear, between the others
    L[:, 5] = base[:, 0]  # the prior, last
    D = L[:, :5] - L[:, [5]]
    z = -D.mean(axis=0) / (D.std(axis=0, ddof=1) / np.sqrt(8))
    assert (z[[0, 1, 2, 4]] > 2.0).all() and z[3] < 0 and np.argmax(z) == 2
    assert np.argmin(L.mean(axis=0)) == 1
    np.testing.assert_array_equal(lam_cv.race(L, 2.0), [True, True, True, False, True, True])
    np.testing.assert_array_equal(
        lam_cv.race(L, 2.0, narrow=True), [False, True, True, False, False, True]
    )
    L[:, 1] = L[:, 2]  # the clearest is now also (tied) the lowest: one candidate goes on
    np.testing.assert_array_equal(
        lam_cv.race(L, 2.0, narrow=True), [False, True, False, False, False, True]
    )
    # two clear, one of them both the lowest and the clearest: it alone goes on, as with more
    L[:, 0] = L[:, 3]
    L[:, 4] = L[:, 3]
    L[:, 1] = base[:, 0] - 0.05 + 0.002 * rng.normal(size=8)  # clear, above 2's loss
    np.testing.assert_array_equal(lam_cv.race(L, 2.0), [False, True, True, False, False, True])
    np.testing.assert_array_equal(
        lam_cv.race(L, 2.0, narrow=True), [False, False, True, False, False, True]
    )
    assert not lam_cv.race(L, 1e9, narrow=True)[:-1].any()  # none clear: none kept


def test_scoring_any_tasks_gives_the_full_scores_there(rng):
    """prepare_rounds (in two batches) + score_rounds on a subset of (round, lam) tasks fill
    exactly those entries, equal to scoring every round at every lam (cv_losses), and leave
    NaN elsewhere."""
    c = 3
    PE, w, codes = _cv_problem(rng, m=10, n=45, c=c, d=2)
    roles = lam_cv.cv_rounds(codes, 5, w.size, rng)
    rel = np.concatenate([10.0 ** np.arange(-10.0, 1.0, 2.0), [np.inf]])
    full = drivers.cv_losses(PE, w, codes, c, roles, rel, 0.5)
    state = jit.new_state(roles, w.size, c)
    every = np.zeros(0, dtype=np.int64)  # np.linalg alone, as cv_losses
    for batch in np.array_split(np.arange(roles.shape[0]), [3]):  # in two parallel stages
        drivers.prepare_rounds(state, PE, w, codes, c, roles, batch, every)
    tasks = [(t, j) for t in range(roles.shape[0]) for j in range(rel.size) if (t + 2 * j) % 3]
    part = np.full_like(full, np.nan)
    task_round, task_lam = (np.array(v, dtype=np.int64) for v in zip(*tasks))
    drivers.score_rounds(state, roles, codes, c, rel, 0.5, task_round, task_lam, part, every)
    done = np.zeros((roles.shape[0], rel.size), dtype=bool)
    done[task_round, task_lam] = True
    part, full = part.transpose(0, 1, 3, 2), full.transpose(0, 1, 3, 2)  # (4, rounds, lams, l)
    assert not np.isnan(full[:, done]).all()
    np.testing.assert_array_equal(part[:, done], full[:, done])  # same arithmetic, same bits
    assert np.isnan(part[:, ~done]).all()
    fresh = jit.new_state(roles, w.size, c)  # nothing prepared: refused, not left NaN
    with pytest.raises(ValueError, match="did not fill"):
        drivers.score_rounds(fresh, roles, codes, c, rel, 0.5, task_round, task_lam, part, every)


def test_stratified_folds_balance_classes(rng):
    codes = np.repeat(np.arange(4), [1, 3, 10, 26])
    folds = lam_cv.stratified_folds(codes, 5, rng)
    sizes = np.bincount(folds, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for c, count in zip(range(4), (1, 3, 10, 26)):
        assert np.unique(folds[codes == c]).size == min(count, 5)


def test_stratified_folds_do_not_depend_on_class_names():
    """Renaming the classes (a permutation of the codes) deals the same folds."""
    codes = np.random.default_rng(1).integers(5, size=60)
    for perm in ([4, 3, 2, 1, 0], [2, 0, 4, 1, 3]):
        renamed = np.asarray(perm)[codes]
        for seed in range(5):
            a = lam_cv.stratified_folds(codes, 5, np.random.default_rng(seed))
            b = lam_cv.stratified_folds(renamed, 5, np.random.default_rng(seed))
            np.testing.assert_array_equal(a, b)


def test_stratified_folds_keep_copies_of_a_sample_together():
    # a held-out row whose copy trained the round scores small lam too well (a duplicated
    # digits set moved the default off the prior); groups of one deal the ungrouped folds
    r = np.random.default_rng(4)
    codes = r.integers(3, size=90)
    X = r.normal(size=(90, 3))
    X[45:] = X[:45]  # every row twice (the copies share the label: the codes below)
    codes[45:] = codes[:45]
    same = lam_cv.same_rows(X)
    assert np.array_equal(same[45:], same[:45]) and np.unique(same).size == 45
    for seed in range(20):
        folds = lam_cv.stratified_folds(codes, 4, np.random.default_rng(seed), same)
        assert np.array_equal(folds[45:], folds[:45])
        sizes = np.bincount(folds, minlength=4)
        assert sizes.max() - sizes.min() <= 2  # units of two: balanced up to one unit
        plain = lam_cv.stratified_folds(codes, 4, np.random.default_rng(seed))
        alone = lam_cv.stratified_folds(codes, 4, np.random.default_rng(seed), np.arange(90))
        np.testing.assert_array_equal(plain, alone)


def test_auto_deals_copies_of_a_labeled_sample_into_one_fold(monkeypatch):
    seen = {}
    original = lam_cv.cv_rounds

    def spy(codes, n_folds, rank, rng, groups=None):
        roles = original(codes, n_folds, rank, rng, groups)
        seen.update(roles=roles, groups=groups)
        return roles

    monkeypatch.setattr(lam_cv, "cv_rounds", spy)
    r = np.random.default_rng(5)
    X = np.repeat(r.normal(size=(150, 3)), 2, axis=0)  # rows 2i and 2i + 1 are copies
    y = np.repeat(np.where(r.random(150) < 0.4, (X[::2, 0] > 0).astype(int), -1), 2)
    GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, y)
    roles, labeled = seen["roles"], np.flatnonzero(y >= 0)
    pos = {int(i): k for k, i in enumerate(labeled)}
    for i in labeled[::2]:  # each copy has the role of its twin in every round
        np.testing.assert_array_equal(roles[:, pos[int(i)]], roles[:, pos[int(i) + 1]])


def test_auto_chooses_the_same_lam_whatever_the_classes_are_called():
    """lam="auto" depends on which samples share a label, not on the labels' names: renamed
    classes (permuted integers, strings) give the same lam, path and kernel."""
    r = np.random.default_rng(3)
    n, c = 400, 4
    X = r.normal(size=(n, 4))
    y = (np.digitize(X[:, 0] * X[:, 1], [-0.5, 0.0, 0.5])).astype(int)  # 4 classes
    y[r.choice(n, n - 120, replace=False)] = -1
    names = np.array(["d", "a", "c", "b"], dtype=object)
    for seed in range(3):
        base = GeneralizedNystrom(n_landmarks=40, random_state=seed).fit(X, y)
        perm = np.random.default_rng(seed).permutation(c)
        for renamed in (np.where(y < 0, -1, perm[y]), np.where(y < 0, None, names[y])):
            other = GeneralizedNystrom(n_landmarks=40, random_state=seed).fit(X, renamed)
            assert other.lam_ == base.lam_
            np.testing.assert_allclose(other.criterion_path_, base.criterion_path_, rtol=1e-9)
            np.testing.assert_allclose(
                other.S_, base.S_, rtol=1e-9, atol=1e-12 * np.abs(base.S_).max()
            )


def test_informative_rounds_drop_unpredictable_rows_and_repeated_rounds(rng):
    """A held-out row whose class has no training row in its round is not scored; a round that
    repeats an earlier one (tiny classes deal the splits the same folds) is dropped; rows
    that are scored keep their roles."""
    codes = np.array([0, 0, 1, 1])
    roles = lam_cv.cv_rounds(codes, 5, 10, rng)  # 4 singleton folds, thrice
    kept, ends = lam_cv.informative_rounds(roles, codes)
    assert roles.shape[0] == 12 and kept.shape[0] == 4
    # every split deals the same folds: one split is left
    np.testing.assert_array_equal(ends, [4])
    assert sorted(map(bytes, kept)) == sorted(set(map(bytes, roles)))

    codes = np.repeat(np.arange(5), [1, 1, 6, 7, 9])  # classes 0 and 1 labeled once
    roles = lam_cv.cv_rounds(codes, 5, 50, rng)
    kept, ends = lam_cv.informative_rounds(roles, codes)
    assert kept.shape == roles.shape
    np.testing.assert_array_equal(ends, [5, 10, 15])
    unpredictable = (roles == 2) & np.isin(codes, [0, 1])[None, :]
    np.testing.assert_array_equal(kept, np.where(unpredictable, 0, roles))

    codes = np.arange(6)  # every class labeled once: nothing to score
    kept, ends = lam_cv.informative_rounds(lam_cv.cv_rounds(codes, 5, 10, rng), codes)
    assert kept.shape == (0, 6) and ends.size == 0


def test_auto_keeps_the_prior_and_says_why_with_one_label_per_class():
    """One labeled sample per class: no held-out sample's class is among its fold's training
    samples, so no candidate can be compared with the prior on how it classifies."""
    datasets = pytest.importorskip("sklearn.datasets")
    X = datasets.load_digits().data[:600] / 16.0
    y = np.full(600, -1)
    y[np.random.default_rng(1).choice(600, 3, replace=False)] = [0, 1, 2]
    with pytest.warns(UserWarning, match=r"kept the Nystrom prior.*at least two samples"):
        model = GeneralizedNystrom(n_landmarks=30, random_state=0).fit(X, y)
    assert np.isinf(model.lam_)
    np.testing.assert_allclose(model.S_, model.S0_)


def test_auto_keeps_nystrom_when_labels_are_noise():
    """Labels independent of X: the gate keeps the prior (S = S0) in most draws."""
    kept = 0
    for seed in range(6):
        r = np.random.default_rng(seed)
        X = r.normal(size=(400, 4))
        y = np.full(400, -1)
        lab = r.choice(400, 80, replace=False)
        y[lab] = r.integers(2, size=80)
        model = GeneralizedNystrom(n_landmarks=30, random_state=seed).fit(X, y)
        kept += int(np.isinf(model.lam_))
    assert kept >= 5


def test_auto_learns_when_labels_are_informative():
    """Two classes that the prior kernel mixes: the learned kernel is chosen and beats it."""
    r = np.random.default_rng(0)
    n = 600
    X = r.normal(size=(n, 5))
    ytrue = (X[:, 0] * X[:, 1] > 0).astype(int)  # XOR: the RBF prior at the default width mixes it
    y = np.full(n, -1)
    lab = r.choice(n, 100, replace=False)
    y[lab] = ytrue[lab]
    model = GeneralizedNystrom(n_landmarks=60, random_state=0).fit(X, y)
    assert np.isfinite(model.lam_) and model.lam_ in model.lam_path_
    assert model.criterion_path_.shape == model.lam_path_.shape == (7,)  # 6 lam + the prior
    best = int(np.argmin(model.criterion_path_))
    assert model.criterion_path_[best] < model.criterion_path_[-1]
    # centred kernel alignment with the labels on unlabeled rows improves on the prior's
    prior = Nystrom(n_landmarks=60, random_state=0).fit(X)
    unl = np.setdiff1d(np.arange(n), lab)

    def align(G):
        K = G @ G.T
        H = np.eye(unl.size) - 1.0 / unl.size
        Kc = H @ K @ H
        T = np.equal.outer(ytrue[unl], ytrue[unl]).astype(float)
        return np.sum(Kc * T) / np.linalg.norm(Kc) / np.linalg.norm(H @ T @ H)

    assert align(model.transform(X[unl])) > align(prior.transform(X[unl])) + 0.05


def test_auto_is_the_onestep_model_at_its_lam():
    r = np.random.default_rng(0)
    X = r.normal(size=(300, 3))
    y = np.where(r.random(300) < 0.3, (X[:, 0] * X[:, 1] > 0).astype(int), -1)  # XOR
    auto = GeneralizedNystrom(n_landmarks=25, random_state=1).fit(X, y)
    assert np.isfinite(auto.lam_), "this draw must move off the prior to test anything"
    fixed = GeneralizedNystrom(n_landmarks=25, random_state=1, lam=auto.lam_, solver="onestep").fit(
        X, y
    )
    np.testing.assert_allclose(fixed.S_, auto.S_, rtol=1e-10, atol=1e-10 * np.abs(auto.S_).max())
    assert np.isnan(auto.certificate_) and auto.converged_ and auto.n_iter_ == 1  # one step


_MEMORY_SCRIPT = """
import numpy as np
from nystrom_priors import GeneralizedNystrom
from nystrom_priors.side_info import labels_to_pairs

def peak_kib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))

r = np.random.default_rng(0)
n, d, m = 12000, 6, 40
X = r.normal(size=(n, d))
y = (X[:, 0] + 0.3 * r.normal(size=n) > 0).astype(int)
lam = "auto"
if MODE == "pairs":  # 12,000 pairs over about 10,000 samples
    side, small = {"pairs": labels_to_pairs(y, 12000, random_state=0)}, {
        "pairs": labels_to_pairs(y[:600], 300, random_state=0)
    }
    rows = np.unique(side["pairs"][:, :2]).size
elif MODE == "labels":  # every sample labeled
    side, small, rows = {"y": y}, {"y": y[:600]}, n
elif MODE == "classes":  # 6,000 classes of two samples: one-vs-rest scores would be l x l / 2
    side, small, rows = {"y": np.arange(n) // 2}, {"y": np.arange(600) // 2}, n
else:  # every sample its own class, a fixed lam: a dense one-hot Y would be l x l
    side, small, rows, lam = {"y": np.arange(n)}, {"y": np.arange(600)}, n, 0.1
GeneralizedNystrom(n_landmarks=m, random_state=0, lam=lam).fit(X[:600], **small)  # compile
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # reset the peak resident set to the current one
base = peak_kib()
model = GeneralizedNystrom(n_landmarks=m, random_state=0, lam=lam).fit(X, **side)
assert model.S_.shape == (m, m)
print(rows, peak_kib() - base)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
@pytest.mark.parametrize("mode", ["labels", "pairs", "classes", "own_class_fixed_lam"])
def test_auto_memory_is_linear_in_the_constrained_samples(mode):
    """12,000 labels (two classes, 6,000 classes of two, or every sample its own class at a
    fixed lam), or 12,000 pairs over about 10,000 samples: no array over pairs of constrained
    samples (l x l: 0.8-1.15 GB), no labels x classes array and no n x l array, in Python or
    in jitted code (the labels' and the pairs' cross-validation, the pairs' exact solve, the
    labels' exact solve): the peak resident set of a fresh process grows by O(n m + m^2)."""
    out = subprocess.run(
        [sys.executable, "-c", f"MODE = {mode!r}\n" + _MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr
    l, grown = (int(v) for v in out.stdout.split()[-2:])
    grown *= 1024
    n, m = 12000, 40
    assert l > 9000
    assert grown < 8 * (40 * n * m + 100 * m * m), grown  # a few dozen n x m float64 arrays
    assert grown < 8 * l * l / 8  # an eighth of one l x l float64 array


def test_round_means_average_the_scored_rows_only(rng):
    """Per round and lam, the mean over the rows that were scored (not NaN), and NaN where
    no row was: numpy's nanmean, without its empty-slice warning."""
    x = rng.random((4, 6, 30, 5))
    x[rng.random(x.shape) < 0.4] = np.nan
    x[:, 2, :, 3] = np.nan  # a round that scored no row at one lam
    got = lam_cv.round_means(x)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmean(x, axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[:, 2, 3]).all()


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
def test_balanced_order_evens_the_threads_static_chunks(rng, n_threads):
    """A permutation of the tasks after which prange's static chunks (contiguous, the first
    n % T one longer) carry loads within one task's cost of each other, where the given
    order (rounds x lam, cost growing with lam's index) does not."""
    for n in (1, 5, 11, 40, 57):
        cost = rng.random(n)
        order = lam_cv.balanced_order(cost, n_threads)
        np.testing.assert_array_equal(np.sort(order), np.arange(n))
        T = min(n_threads, n)
        sizes = np.full(T, n // T) + (np.arange(T) < n % T)
        loads = [chunk.sum() for chunk in np.split(cost[order], np.cumsum(sizes)[:-1])]
        assert max(loads) - min(loads) <= cost.max() + 1e-12
    cost = np.tile(np.r_[np.arange(1.0, 8.0), 0.0], 5)  # 5 rounds x (7 lam + the prior)
    if n_threads == 2:
        assert cost[:20].sum() + 5 < cost[20:].sum()  # the given order: unequal halves
        order = lam_cv.balanced_order(cost, 2)
        assert cost[order][:20].sum() == cost[order][20:].sum()


@pytest.mark.parametrize(
    "first, later, narrow",
    [
        (None, None, None),  # the defaults
        (-np.inf, -np.inf, False),  # every candidate through every split
        (-np.inf, np.inf, True),  # none left for the third split
        (np.inf, -np.inf, True),  # none left after the first
        (0.0, 1.0, True),
    ],
)
@pytest.mark.parametrize("threads", ["serial", "all"])
def test_select_lam_scores_what_the_race_keeps_as_cv_losses_does(
    rng, first, later, narrow, threads, monkeypatch
):
    """select_lam's stages (rounds prepared ahead, tasks dealt by cost, each later split
    scoring only what ``race`` keeps after the splits before it, at ``_RACE_FIRST`` after one
    split, ``_RACE`` after two, narrowed by ``_RACE_NARROW``) give each candidate the mean
    loss that scoring every round at every lam (``cv_losses``) gives over the rounds that
    should score it: every split for the prior, the splits before it was raced out for the
    others, none after a split that left no candidate."""
    for name, value in (("_RACE_FIRST", first), ("_RACE", later), ("_RACE_NARROW", narrow)):
        if value is not None:
            monkeypatch.setattr(lam_cv, name, value)
    if threads == "all":  # a job this small runs on one thread; splits of 5 rounds on two
        # threads prepare a round ahead of each split (``raced_rounds``)
        monkeypatch.setattr(lam_cv, "numba_threads", lambda work: contextlib.nullcontext())
    c = 3
    PE, w, codes = _cv_problem(rng, m=14, n=70, c=c, d=3)
    exps = np.arange(0.0, -12.5, -2.0)
    _, crit, _ = lam_cv.select_lam(PE, w, codes, c, exps, np.random.default_rng(5), 5)
    roles = lam_cv.cv_rounds(codes, 5, w.size, np.random.default_rng(5))
    assert roles.shape[0] == 15
    rel = np.concatenate([10.0**exps, [np.inf]])
    L = lam_cv.round_means(drivers.cv_losses(PE, w, codes, c, roles, rel, 0.5))[3]
    for s, threshold in ((1, lam_cv._RACE_FIRST), (2, lam_cv._RACE)):
        keep = lam_cv.race(L[: 5 * s], threshold, lam_cv._RACE_NARROW)
        if not keep[:-1].any():  # nothing left to test: no later split at all
            L[5 * s :] = np.nan
            break
        L[5 * s :, ~keep] = np.nan
    if first is not None and np.isinf(first):
        assert np.isnan(L[5:]).all() == (first > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmean(L, axis=0)
    np.testing.assert_allclose(crit, want, rtol=1e-9, atol=1e-12)


def test_improvement_is_the_paired_t_statistic(rng):
    """The race's and the gate's statistic: over the rounds that scored the prior, each
    candidate's paired t statistic of (prior - candidate) losses (scipy's ``ttest_rel``),
    NaN where one of those rounds did not score it; and its mean loss there."""
    from scipy.stats import ttest_rel

    L = rng.integers(0, 1024, size=(9, 6)) / 1024.0  # dyadic: the differences are exact
    L[:, 3] = L[:, 5] - 0.125  # no spread: an improvement on every round alike
    L[:, 4] = L[:, 5]  # no difference at all
    L[2, 5] = np.nan  # a round that did not score the prior is ignored
    L[[2, 6], 1] = np.nan  # ... but one that did and missed a candidate leaves it NaN
    n, z, mean = drivers.improvement(L)
    rows = np.flatnonzero(~np.isnan(L[:, 5]))
    assert n == rows.size == 8
    for j in (0, 2):
        want = ttest_rel(L[rows, 5], L[rows, j]).statistic
        np.testing.assert_allclose(z[j], want, rtol=1e-12)
        np.testing.assert_allclose(mean[j], L[rows, j].mean(), rtol=1e-12)
    assert np.isnan(z[1]) and np.isnan(mean[1])
    assert z[3] == np.inf and np.isnan(z[4]) and np.isnan(z[5])
    assert np.isnan(drivers.improvement(L[1:3])[1]).all()  # one round with the prior: no error


@pytest.mark.parametrize("side", ["labels", "pairs"])
def test_nka_returns_the_paths_solution_without_a_second_solve(side, monkeypatch):
    """lam="nka" solves the whole warm-started path; the model at the chosen lam is that
    path's solution (same problem, lam and tolerance), certified like a fixed-lam fit there.

    J(S) = lam ||S - S0||_F^2 + loss(S) is 2 lam-strongly convex, so two solutions whose
    relative gaps are at most tol are within 2 sqrt(tol J / lam) of each other."""
    import nystrom_priors.generalized as gmod
    from nystrom_priors._labels import check_labels
    from nystrom_priors.generalized._problem import _build_problem
    from nystrom_priors.side_info import check_pairs

    rng = np.random.default_rng(5)
    y_full = np.arange(300) % 3
    X = rng.normal(size=(300, 5)) + y_full[:, None]
    y = np.where(np.arange(300) < 60, y_full, -1)
    pairs = np.array([[0, 3, 1], [1, 4, 1], [0, 1, -1], [2, 5, 1], [1, 2, -1]])
    side_info = {"y": y} if side == "labels" else {"pairs": pairs}
    kw = dict(n_landmarks=30, random_state=0)

    def no_final_solve(*args, **kwargs):
        raise AssertionError("a second exact solve after the nka path")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with monkeypatch.context() as mp:
            mp.setattr(gmod, "_solve_lam", no_final_solve)
            model = GeneralizedNystrom(lam="nka", **kw).fit(X, **side_info)
        fixed = GeneralizedNystrom(lam=model.lam_, **kw).fit(X, **side_info)
    assert model.lam_ == model.lam_path_[np.argmax(model.criterion_path_)]
    assert model.converged_ and model.certificate_ <= 1e-6
    labels = check_labels(y, 300) if side == "labels" else None
    pairs_arr = check_pairs(pairs, 300) if side == "pairs" else None
    prob = _build_problem(model.S0_, labels, pairs_arr, lambda rows: model._features_block(X[rows]))
    J = max(prob.objective(model.S_, model.lam_), prob.objective(fixed.S_, model.lam_))
    bound = 2.0 * np.sqrt(1e-6 * J / model.lam_)
    assert np.linalg.norm(model.S_ - fixed.S_) <= bound


@pytest.mark.parametrize(
    "n_labels, side, folds",
    [
        (90, "labels", lam_cv._LABEL_FOLDS),
        (600, "labels", lam_cv._ONE_SPLIT_FOLDS),
        (0, "pairs", 5),
    ],
)
def test_cv_none_is_the_documented_number_of_folds(rng, n_labels, side, folds):
    """cv=None: 4 folds per split on labels (three splits), 5 for the single split above
    500 labels, 5 on pairs alone; the same fit as passing that number, another number
    gives another path."""
    X = rng.normal(size=(700, 3))
    kw = dict(n_landmarks=20, random_state=0, solver="onestep")
    if side == "labels":
        y = np.full(700, -1)
        y[:n_labels] = (X[:n_labels, 0] + 0.3 * rng.normal(size=n_labels) > 0).astype(int)
        fit = lambda cv: GeneralizedNystrom(cv=cv, **kw).fit(X, y)  # noqa: E731
    else:
        a, b = rng.integers(0, 700, size=(2, 150))
        pairs = np.c_[a[a != b], b[a != b], np.where(X[a[a != b], 0] * X[b[a != b], 0] > 0, 1, -1)]
        fit = lambda cv: GeneralizedNystrom(cv=cv, **kw).fit(X, pairs=pairs)  # noqa: E731
    default = fit(None).criterion_path_
    np.testing.assert_array_equal(default, fit(folds).criterion_path_)
    other = fit(3).criterion_path_
    assert not np.array_equal(np.nan_to_num(default), np.nan_to_num(other))


@pytest.mark.parametrize("cv", [10, 40])
def test_many_folds_are_scored_a_batch_at_a_time_with_the_same_choice(monkeypatch, cv):
    """Many rounds' prepared problems no longer all stay in memory (``new_state``'s bound):
    a batch of slots is prepared and scored at a time. Every task depends on its own round
    alone, so the scores, the race between splits and the choice are bit for bit those of
    one slot per round: cv = 10 on 40 labels (three raced splits of ten rounds, batches of
    eight and two) and cv = 40 (leave one out: the splits repeat, one is kept)."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(60, 3)), rng.normal(size=(60, 3)) + 1.5])
    y = np.full(120, -1)
    y[::3] = np.repeat([0, 1], 60)[::3]
    made = []
    real = jit.new_state

    def recording(roles, *args):
        state = real(roles, *args)
        made.append((int(state[10][0]), roles.shape[0]))
        return state

    monkeypatch.setattr(jit, "new_state", recording)
    fits = []
    for budget in (lam_cv._STATE_FLOATS, 0):  # every round its slot; eight slots
        monkeypatch.setattr(lam_cv, "_STATE_FLOATS", budget)
        m = GeneralizedNystrom(n_landmarks=12, cv=cv, random_state=0).fit(X, y)
        fits.append((m.lam_, m.criterion_path_, m.cv_error_path_, m.S_))
    (slots_a, rounds_a), (slots_b, rounds_b) = made
    batch = min(max(8, numba.get_num_threads()), rounds_a)  # a round per thread at least
    assert slots_a == rounds_a == rounds_b == (30 if cv == 10 else 40) and slots_b == batch
    (lam_a, crit_a, err_a, S_a), (lam_b, crit_b, err_b, S_b) = fits
    assert lam_a == lam_b
    for a, b in ((crit_a, crit_b), (err_a, err_b), (S_a, S_b)):
        np.testing.assert_array_equal(a, b)
    roles = lam_cv.cv_rounds(np.repeat([0, 1], 20), 40, 12, np.random.default_rng(0))
    assert jit.new_state(roles, 12, 2, 0)[10][0] == 8  # the batch
    assert jit.new_state(roles, 12, 2, 0, 16)[10][0] == 16  # 16 threads: 16 at a time
    assert jit.new_state(roles, 12, 2)[10][0] == roles.shape[0]  # no bound: one per round
    # the per-sample driver of the studies scores rounds prepared in any order: it needs a
    # slot per round, and refuses a bounded state rather than read overwritten slots
    codes = np.repeat([0, 1], 20).astype(np.int64)
    rel = np.array([1e-2, np.inf])
    tasks = np.zeros(1, dtype=np.int64)
    out = np.full((4, roles.shape[0], 40, 2), np.nan)
    args = (codes, 2, rel, 0.5, tasks, tasks, out, np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="fewer slots than rounds"):
        drivers.score_rounds(jit.new_state(roles, 12, 2, 0), roles, *args)


def test_many_folds_take_memory_linear_in_the_labels():
    """cv = l used to hold per-sample losses of every round (4 x rounds x l x grid floats)
    and every round's prepared problem at once: 378 MiB at l = cv = 1,000 and m = 20, about
    32 GB at 12,000. Now round means and a bounded batch of prepared rounds: what grows is
    the folds' roles and their temporaries, a few times rounds x l bytes (2.3 MB each here)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    y = np.full(3000, -1)
    y[:1500] = rng.integers(0, 4, 1500)
    model = GeneralizedNystrom(n_landmarks=20, cv=1500, random_state=0)
    tracemalloc.start()
    try:
        model.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    batch = 32 * 2**20  # the prepared rounds' bound (``_lam._STATE_FLOATS`` floats)
    assert peak < batch + 16 * 1500 * 1500 + 64 * 3000 * 20, peak / 2**20


def test_many_classes_are_warned_about_before_the_selection(monkeypatch):
    """The scores cost about (l_T + l_V) (p + 1 + 30) c per round and lam: thousands of classes
    with a label or two each took minutes where the rest of the fit took milliseconds
    (20,000 labels in 10,000 classes: 95 s). The warning comes before that work, names
    the cost and the remedy; the estimate is checked against a threshold moved around this
    small fit's own work (8 classes, 96 labels)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = np.full(400, -1)
    y[:96] = np.arange(96) % 8
    calls, seen = [], []  # calls: how many warnings had been issued when the scoring began
    real = drivers.raced_rounds
    monkeypatch.setattr(drivers, "raced_rounds", lambda *a: calls.append(len(seen)) or real(*a))

    def fit():
        with warnings.catch_warnings():  # restores showwarning
            warnings.simplefilter("always")
            seen[:] = []
            warnings.showwarning = lambda message, *rest: seen.append(str(message))
            GeneralizedNystrom(20, random_state=0).fit(X, y)
        return [text for text in seen if "labels x classes" in text]

    assert fit() == []  # 12 rounds x 7 lam x 96 rows x (21 + 30) x 8: about 3.3e6
    monkeypatch.setattr(lam_cv, "_SLOW_SCORES", 1e6)
    calls.clear()
    slow = fit()
    assert len(slow) == 1 and calls == [1]  # one call, after the warning
    assert "8 classes on 96 labels" in slow[0] and "Pass lam as a number" in slow[0]
    monkeypatch.setattr(lam_cv, "_SLOW_SCORES", 1e7)
    assert fit() == []
    # the per-entry cost counts: 21 products alone (1.4e6) would pass 2e6 unwarned, while
    # with few landmarks the margins and losses are most of the time
    monkeypatch.setattr(lam_cv, "_SLOW_SCORES", 2e6)
    assert len(fit()) == 1
