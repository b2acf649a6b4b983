"""GeneralizedNystrom: SDP oracle (cvxpy), invariants, selection rules and bad input."""

import functools
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nystrom_priors import ConvergenceWarning, GeneralizedNystrom, Nystrom, extrapolate
from nystrom_priors.generalized import _barrier as barrier_dual
from nystrom_priors.generalized import _dual as dual_newton
from nystrom_priors.generalized import _lam as selection
from nystrom_priors.generalized import _lam_pairs as lam_pairs
from nystrom_priors.generalized import _paper
from nystrom_priors.generalized import _problem as problem
from nystrom_priors.generalized import _solver as solve
from nystrom_priors.side_info import labels_to_pairs

psd = problem  # the PSD utilities live with J
apg = solve  # the accelerated projected gradient lives with the solver choice


def _toy(rng, n=120, d=3, classes=3, n_labels=30):
    centers = rng.normal(size=(classes, d)) * 2.5
    y_true = rng.integers(classes, size=n)
    X = centers[y_true] + rng.normal(size=(n, d))
    lab = rng.choice(n, n_labels, replace=False)
    y = np.full(n, -1)
    y[lab] = y_true[lab]
    return X, y, y_true


def _small_problem(rng, m=18, l=25, c=3, d=4, pairs=False):
    Z = rng.normal(size=(m, d))
    X = rng.normal(size=(l, d))
    W = extrapolate(Z, Z, width=4.0)
    E = extrapolate(X, Z, width=4.0)
    lw, U = np.linalg.eigh(W)
    keep = lw > 1e-10 * lw.max()
    S0 = (U[:, keep] / lw[keep]) @ U[:, keep].T
    codes = rng.integers(c, size=l)
    Y = np.eye(c)[codes]
    if not pairs:
        return problem._Problem(S0, E, Y), S0, E, Y, None
    y = codes.copy()
    P = labels_to_pairs(y, 40, random_state=0)
    pts = np.unique(P[:, :2])
    pos = {v: r for r, v in enumerate(pts)}
    a = np.array([pos[i] for i in P[:, 0]])
    b = np.array([pos[j] for j in P[:, 1]])
    t = (P[:, 2] == 1).astype(float)
    aa = np.concatenate([a, b, np.arange(pts.size)])
    bb = np.concatenate([b, a, np.arange(pts.size)])
    tt = np.concatenate([t, t, np.ones(pts.size)])
    return problem._Problem(S0, None, None, E[pts], aa, bb, tt), S0, E[pts], None, (aa, bb, tt)


def _cvxpy_optimum(S0, E, Y, lam, mask=None, offset=None):
    cp = pytest.importorskip("cvxpy")
    m = S0.shape[0]
    S = cp.Variable((m, m), PSD=True)
    if mask is None:
        target = Y @ Y.T if offset is None else Y @ Y.T - E @ offset @ E.T
        loss = cp.sum_squares(E @ S @ E.T - target)
    else:
        aa, bb, tt = mask
        K = E @ S @ E.T
        loss = cp.sum_squares(cp.hstack([K[int(i), int(j)] for i, j in zip(aa, bb)]) - tt)
    prob = cp.Problem(cp.Minimize(lam * cp.sum_squares(S - S0) + loss))
    # Clarabel can stop on numerical trouble at 1e-11 where a few ulps of E differ; 1e-9 is
    # still far tighter than the 1e-6 the tests ask of our solvers
    for tol in (1e-11, 1e-10, 1e-9):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
            except cp.error.SolverError:
                continue
        if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and S.value is not None:
            return S.value
    raise AssertionError(f"the cvxpy oracle failed at every tolerance (status {prob.status})")


@pytest.mark.parametrize(
    "exponent, solver",
    [(e, s) for s in ("apg", "newton") for e in (0.0, -3.0, -5.0, -7.0, -10.0)]
    + [(e, "pgd") for e in (0.0, -3.0, -4.0)],
)
def test_solvers_reach_the_sdp_optimum_labels(rng, exponent, solver):
    prob, S0, E, Y, _ = _small_problem(rng)
    lam = prob.mu_max**2 * 10**exponent
    S, it, cert, ok, _ = solve._solve_lam(
        prob, lam, solver, tol=1e-8, max_iter=3000 if solver != "pgd" else 200000
    )
    assert ok, (it, cert)
    assert np.linalg.eigvalsh(S).min() >= -1e-9 * np.abs(S).max()
    S_ref = _cvxpy_optimum(S0, E, Y, lam)
    f_ref = prob.objective(S_ref, lam)
    f = prob.objective(S, lam)
    # cvxpy's interior point is itself accurate to ~1e-8; ours is certified to 1e-8
    assert (f - f_ref) / f_ref <= 1e-6


@pytest.mark.parametrize("solver", ["apg", "newton"])
@pytest.mark.parametrize("n_labels", [10, 25])
def test_solvers_reach_the_sdp_optimum_with_an_offset(rng, solver, n_labels):
    """The restricted problems of lam="auto" take the data term at S + D: every solver
    reaches the SDP optimum of that problem (l = 25 > m: the compressed labels term). The
    dual Newton once solved it with D = 0 and certified its own optimum (3% above J*)."""
    _, S0, E, Y, _ = _small_problem(rng, m=18, l=n_labels)
    B = rng.normal(size=(S0.shape[0], 3))
    D = 0.1 * B @ B.T
    prob = problem._Problem(S0, E, Y, offset=D)
    assert (prob.El.shape[0] < n_labels) == (n_labels > 18)
    for exponent in (-2.0, -6.0):
        lam = prob.mu_max**2 * 10**exponent
        S, it, cert, ok, _ = solve._solve_lam(prob, lam, solver, tol=1e-8, max_iter=3000)
        assert ok, (it, cert)
        f_ref = prob.objective(_cvxpy_optimum(S0, E, Y, lam, offset=D), lam)
        assert abs(prob.objective(S, lam) - f_ref) / f_ref <= 1e-6


def test_paper_method_crawls_where_apg_converges(rng):
    """DESIGN 4.2: at small lam the Armijo gradient mapping stalls; APG certifies 1e-6."""
    prob, *_ = _small_problem(rng)
    lam = prob.mu_max**2 * 1e-8
    results = {}
    for solver in ("apg", "pgd"):
        co = problem._Coords(prob, lam, precondition=solver == "apg")
        run = apg._solve if solver == "apg" else _paper.gradient_mapping
        results[solver] = run(co, problem._closed_form_V(co), tol=1e-6, max_iter=2000)
    assert results["apg"][3] and results["apg"][1] < 2000
    assert not results["pgd"][3] and results["pgd"][2] > 1e-6


@pytest.mark.parametrize("solver", ["apg", "pgd"])
def test_first_order_solvers_refuse_a_decrease_swamped_by_round_off(rng, solver):
    """Where J's values are round-off (here: noise far above the decrease any step makes) no
    step passes the sufficient-decrease test; backtracking stops at the curvature cap with
    the error that says so, not after max_iter evaluations or an endless loop."""
    prob, *_ = _small_problem(rng, m=15, pairs=True)
    lam = prob.mu_max**2 * 1e-2
    co = problem._Coords(prob, lam, precondition=solver == "apg")
    noise = np.random.default_rng(1)
    exact_f = co.f
    co.f = lambda V: exact_f(V) + 1e6 * abs(exact_f(V)) * noise.uniform(1.0, 2.0)
    run = apg._solve if solver == "apg" else _paper.gradient_mapping
    with pytest.raises(ValueError, match=r"found no step that decreases the objective"):
        run(co, problem._closed_form_V(co), tol=1e-9, max_iter=1000)


def test_the_refusal_cap_follows_the_curvature_of_a_large_scale_problem(rng):
    """With E * 1e10 J's curvature is ~4e42: the unpreconditioned cap is 1e12 times that,
    far above 1e30, and round-off noise is still refused there, at that cap."""
    _, S0, E, _, mask = _small_problem(rng, m=15, pairs=True)
    prob = problem._Problem(S0 * 1e-10, None, None, E * 1e10, *mask)
    lam = prob.mu_max**2 * 1e-2
    co = problem._Coords(prob, lam, precondition=False)
    assert co.lipschitz_cap > 1e50
    noise = np.random.default_rng(1)
    exact_f = co.f
    co.f = lambda V: exact_f(V) + 1e6 * abs(exact_f(V)) * noise.uniform(1.0, 2.0)
    with pytest.raises(ValueError, match=re.escape(f"past {co.lipschitz_cap:.3g},")):
        _paper.gradient_mapping(co, problem._closed_form_V(co), tol=1e-9, max_iter=1000)


@pytest.mark.parametrize(
    "kernel, scale", [("linear", 1e4), ("linear", 1e6), ("poly", 1e2), ("poly", 1e4)]
)
def test_paper_method_works_on_centred_data_at_any_scale(kernel, scale):
    """The gradient mapping's backtracking cap is relative to J's curvature bound
    2 (lam + mu_max^2), which grows with the kernel's scale to the fourth power: an absolute
    cap of 1e30 refused centred data at X * 1e4 (linear) or X * 100 (cubic) as round-off."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    X = (X - X.mean(axis=0)) * scale
    y = np.arange(80) % 3
    pairs = np.c_[np.arange(0, 79, 2), np.arange(1, 80, 2), np.where(y[::2] == y[1::2], 1, -1)]
    kw = dict(kernel=kernel, landmarks="uniform", random_state=0, lam=1.0)
    with warnings.catch_warnings():  # lam=1 is floored: only its lam_scale_ is wanted
        warnings.simplefilter("ignore", UserWarning)
        lam = 1e-2 * GeneralizedNystrom(10, **kw).fit(X, pairs=pairs).lam_scale_
    kw["lam"] = lam
    newton = GeneralizedNystrom(10, solver="newton", **kw).fit(X, pairs=pairs)
    paper = GeneralizedNystrom(10, solver="pgd", max_iter=3000, **kw).fit(X, pairs=pairs)
    assert paper.converged_
    # both certified to the default tol: the same S up to that accuracy (at unit scale the
    # two differ by up to 7e-4 of max |S| on these data)
    scale_S = np.abs(newton.S_).max()
    np.testing.assert_allclose(paper.S_, newton.S_, rtol=0, atol=2e-3 * scale_S)


@pytest.mark.parametrize("solver", ["apg", "newton"])
@pytest.mark.parametrize("exponent", [-2.0, -5.0, -8.0])
def test_solvers_reach_the_sdp_optimum_pairs(rng, exponent, solver):
    prob, S0, Ep, _, mask = _small_problem(rng, m=15, pairs=True)
    lam = prob.mu_max**2 * 10**exponent
    S, it, cert, ok, _ = solve._solve_lam(prob, lam, solver, tol=1e-9, max_iter=20000)
    assert ok, (it, cert)
    S_ref = _cvxpy_optimum(S0, Ep, None, lam, mask)
    f_ref = prob.objective(S_ref, lam)
    assert (prob.objective(S, lam) - f_ref) / f_ref <= 1e-6


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("exponent", [-4.0, -8.0, -12.0])
def test_barrier_dual_reaches_the_sdp_optimum(rng, pairs, exponent):
    """The barrier-smoothed dual Newton alone, cold: certified 1e-8 and cvxpy's optimum, with
    the smoothed primal strictly inside the cone or the projection on its boundary. (On pairs
    at 1e-12 its line search stalled while d was evaluated as lam (||S0||^2 - ||X||^2).)"""
    prob, S0, E, Y, mask = _small_problem(rng, m=15 if pairs else 18, pairs=pairs)
    lam = prob.mu_max**2 * 10**exponent
    S, R, it, gap, ok = barrier_dual._solve_barrier_dual(prob, lam, None, tol=1e-8, max_iter=200)
    assert ok and gap <= 1e-8, (it, gap)
    assert np.linalg.eigvalsh(S).min() >= -1e-12 * np.abs(S).max()
    f_ref = prob.objective(_cvxpy_optimum(S0, E, Y, lam, mask), lam)
    assert (prob.objective(S, lam) - f_ref) / f_ref <= 1e-6


@pytest.mark.parametrize("seed", [1, 4])
@pytest.mark.parametrize("exponent", [-10.0, -12.0])
def test_default_newton_steps_stay_flat_at_small_lam(seed, exponent):
    """A cold solve with the default dual solver (its cold semismooth step, then the barrier
    dual) certifies 1e-6 within 100 Newton steps at mu_max^2 * 1e-10 and 1e-12, on the problems
    of results/bench_generalized.md section 1 where the lam continuation it replaced needed
    142 / 336 (seed 1) and 180 / 379 steps (seed 4); the optimum is cvxpy's."""
    rng = np.random.default_rng(seed)
    m = (15, 20, 30)[seed % 3]
    Z, X = rng.normal(size=(m, 4)), rng.normal(size=(30, 4))
    lw, U = np.linalg.eigh(extrapolate(Z, Z, width=4.0))
    keep = lw > 1e-12 * lw.max()
    S0 = (U[:, keep] / lw[keep]) @ U[:, keep].T
    E, Y = extrapolate(X, Z, width=4.0), np.eye(3)[rng.integers(3, size=30)]
    prob = problem._Problem(S0, E, Y)
    lam = prob.mu_max**2 * 10**exponent
    S, it, cert, ok, R = solve._solve_lam(prob, lam, "newton", tol=1e-6, max_iter=100)
    assert ok and it <= 100 and cert <= 1e-6 and R is not None, (it, cert)
    f_ref = prob.objective(_cvxpy_optimum(S0, E, Y, lam), lam)
    assert (prob.objective(S, lam) - f_ref) / f_ref <= 1e-6


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("exponent", [-10.0, -12.0])
def test_default_newton_steps_stay_flat_at_small_lam_pairs(seed, exponent):
    """The same for pairs (m = 15, 40 pairs): at most 100 steps to a certified 1e-6, where the
    lam continuation the pairs kept until the barrier dual's d was evaluated in Lagrangian form
    did not certify within its budget (seed 1: 83 / 197 steps, seed 2: 165 / 249, then APG)."""
    prob, S0, Ep, _, mask = _small_problem(np.random.default_rng(seed), m=15, pairs=True)
    lam = prob.mu_max**2 * 10**exponent
    S, it, cert, ok, R = solve._solve_lam(prob, lam, "newton", tol=1e-6, max_iter=100)
    assert ok and it <= 100 and cert <= 1e-6 and R is not None, (it, cert)
    f_ref = prob.objective(_cvxpy_optimum(S0, Ep, None, lam, mask), lam)
    assert (prob.objective(S, lam) - f_ref) / f_ref <= 1e-6


@pytest.mark.parametrize("pairs", [False, True])
def test_dual_values_obey_weak_duality_at_tiny_lam(rng, pairs):
    """d(R) <= J(S) for every R and every PSD S: at mu_max^2 * 1e-14, X(R) has eigenvalues
    ~ -1e11 and d evaluated as lam (||S0||^2 - ||P_psd(X)||^2) came out above J(S*) by up to
    3e-4 of it on these pairs problems, more than the gaps it certified. Checked at the
    solution's R, at perturbations of it, and for both duals' d (semismooth and barrier)."""
    prob, *_ = _small_problem(rng, m=15 if pairs else 18, pairs=pairs)
    lam = prob.mu_max**2 * 1e-14
    S, R, it, gap, ok = barrier_dual._solve_barrier_dual(prob, lam, None, tol=1e-8, max_iter=300)
    assert ok, (it, gap)
    J = prob.objective(S, lam)
    duals = (dual_newton._Dual(prob, lam), barrier_dual._BarrierDual(prob, lam, kappa=1e-300))
    for scale in (0.0, 1e-6, 1e-3):
        D = tuple(
            None if r is None else scale * np.abs(r).max() * rng.normal(size=r.shape) for r in R
        )
        Rp = duals[0].axpy(1.0, D, R)
        values = duals[0].state(Rp)["d"], duals[1].state(Rp)["d0"]
        assert max(values) <= J * (1.0 + 1e-10), (scale, values, J)
        if scale == 0.0:  # at the solution both agree with J to the certified gap
            assert min(values) >= J * (1 - 1e-8), values


@pytest.mark.parametrize("pairs", [False, True])
def test_barrier_dual_derivatives_match_finite_differences(rng, pairs):
    """grad d_tau = 2 g and Hessian -2 (I + A P_tau' A* / lam): central differences of d_tau
    along a random direction, and of g for the Hessian (the Loewner matrix of s(x))."""
    prob, *_ = _small_problem(rng, m=12, l=10, pairs=pairs)
    lam = prob.mu_max**2 * 1e-3
    dual = barrier_dual._BarrierDual(prob, lam, kappa=1e-3 * float(np.abs(prob.S0).max()))
    R = tuple(None if z is None else 0.1 * rng.normal(size=z.shape) for z in dual.zeros())
    R = tuple(None if z is None else (z + z.T if z.ndim == 2 else z) for z in R)
    D = tuple(None if z is None else rng.normal(size=z.shape) for z in dual.zeros())
    D = tuple(None if z is None else (z + z.T if z.ndim == 2 else z) for z in D)
    st = dual.state(R)
    h = 1e-5
    up, down = dual.state(dual.axpy(h, D, R)), dual.state(dual.axpy(-h, D, R))
    fd = (up["d"] - down["d"]) / (2 * h)
    assert fd == pytest.approx(2.0 * dual.dot(st["g"], D), rel=1e-5)
    fd_g = tuple(None if a is None else (a - b) / (2 * h) for a, b in zip(up["g"], down["g"]))
    HD = dual.hess_apply(st, dual.omega(st), D)
    diff = dual.axpy(1.0, fd_g, HD)  # fd_g = -(I + A P' A* / lam) D
    assert np.sqrt(dual.dot(diff, diff)) <= 1e-5 * np.sqrt(dual.dot(HD, HD))


def _dense_pairs_hessian(S0, Ep, a, b, R, lam):
    """``I + A P'(X) A* / lam`` of the semismooth dual on pairs alone at the dual point R, as a
    dense |entries| x |entries| matrix built column by column: ``A*(h) = sum_q h_q
    sym(E_a^T E_b)``, the Loewner operator ``Q (Omega o Q^T . Q) Q^T`` with Omega's divided
    differences of max(., 0) at the eigenvalues of X(R), and A reading ``E_a Y E_b^T``.
    Returns the matrix and the number of eigenvalues <= 0."""

    def adjoint(v):
        return sum(
            r * 0.5 * (np.outer(Ep[i], Ep[j]) + np.outer(Ep[j], Ep[i])) for r, i, j in zip(v, a, b)
        )

    x, Q = np.linalg.eigh(S0 - adjoint(R) / lam)
    m = x.size
    omega = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            if x[i] > 0 and x[j] > 0:
                omega[i, j] = 1.0
            elif x[i] <= 0 and x[j] <= 0:
                omega[i, j] = 0.0
            else:
                omega[i, j] = (max(x[i], 0.0) - max(x[j], 0.0)) / (x[i] - x[j])
    H = np.eye(a.size)
    for q in range(a.size):
        Y = Q @ (omega * (Q.T @ adjoint(H[:, q]) @ Q)) @ Q.T
        H[:, q] += np.array([Ep[i] @ Y @ Ep[j] for i, j in zip(a, b)]) / lam
    return H, int(np.count_nonzero(x <= 0))


@pytest.mark.parametrize("form", ["kernel", "landmarks"])
@pytest.mark.parametrize("spread", [0.0, 1.0, 30.0])
def test_pairs_newton_product_matches_a_dense_oracle(rng, monkeypatch, form, spread):
    """The semismooth dual's product ``(I + A P'(X) A* / lam) h`` on pairs alone, taken through
    Omega's blocks and K_P or in the landmarks' space (``_kernel_form`` decides; both are
    forced here), and its Jacobi preconditioner (through Omega's blocks, and the general form
    the barrier dual uses) equal the dense operator's product and diagonal
    (``_dense_pairs_hessian``). ``spread`` scales a random dual point: 0 is X = S0 (no negative
    eigenvalue), larger values clip more of the spectrum."""
    monkeypatch.setattr(dual_newton, "_kernel_form", lambda n_pts, width: form == "kernel")
    prob, S0, Ep, _, (a, b, _t) = _small_problem(rng, m=12, l=20, pairs=True)
    lam = prob.mu_max**2 * 1e-3
    dual = dual_newton._Dual(prob, lam)
    R = (None, spread * lam * rng.normal(size=a.size))
    h = rng.normal(size=a.size)
    st = dual.state(R)
    omega = dual_newton._loewner_omega(st["x"])
    got = dual.hess_apply(st, omega, (None, h))[1]
    H, k = _dense_pairs_hessian(S0, Ep, a, b, R[1], lam)
    assert (k > 0) == (spread > 0), k
    assert st["pairs_blocks"][3] == (form == "kernel")
    want = H @ h
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
    for blocks in (True, False):
        dual._pairs_jacobi(st, omega, blocks=blocks)
        np.testing.assert_allclose(dual.pden, np.diag(H), rtol=1e-10)


def test_pairs_kernel_form_follows_the_state(rng, monkeypatch):
    """K_P lives in buffers shared by the states of one solve (``_kernel_buffers``): products
    on one state, another, then the first again each equal the dense operator at their own
    state; and a whole semismooth solve with K_P certifies the same optimum as one in the
    landmarks' space."""
    monkeypatch.setattr(dual_newton, "_kernel_form", lambda n_pts, width: True)
    prob, S0, Ep, _, (a, b, _t) = _small_problem(rng, m=12, l=20, pairs=True)
    lam = prob.mu_max**2 * 1e-3
    dual = dual_newton._Dual(prob, lam)
    points = [(None, spread * lam * rng.normal(size=a.size)) for spread in (1.0, 30.0)]
    states = [dual.state(R) for R in points]
    h = rng.normal(size=a.size)
    for i in (0, 1, 0):
        st = states[i]
        got = dual.hess_apply(st, dual_newton._loewner_omega(st["x"]), (None, h))[1]
        want = _dense_pairs_hessian(S0, Ep, a, b, points[i][1], lam)[0] @ h
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
    solutions = []
    for form in (True, False):
        monkeypatch.setattr(dual_newton, "_kernel_form", lambda n_pts, width, f=form: f)
        S, _R, _it, gap, ok = dual_newton._solve_newton(prob, lam, None, tol=1e-10, max_iter=200)
        assert ok, gap
        solutions.append((S, prob.objective(S, lam)))
    (S1, J1), (S2, J2) = solutions
    assert J1 == pytest.approx(J2, rel=1e-9)
    np.testing.assert_allclose(S1, S2, atol=1e-4 * np.abs(S2).max())


def test_smoothed_plus_keeps_its_digits():
    """s(x) = (x + sqrt(x^2 + 4 kappa)) / 2 to round-off against 60-digit decimal arithmetic for
    |x| from 1e-200 to 1e200, including x << 0 where the float formula cancels to 0 and |x| >
    1e154 where x^2 overflows."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    x = np.concatenate([-np.logspace(-200, 200, 41), [0.0], np.logspace(-200, 200, 41)])
    for kappa in (1e-100, 1e-12, 1.0, 1e12):  # s >= kappa / |x| >= 1e-300: no underflow
        s, r = barrier_dual._smoothed_plus(x, kappa)
        k = Decimal(kappa)
        for xi, si, ri in zip(x, s, r):
            d = Decimal(float(xi))
            root = (d * d + 4 * k).sqrt()
            assert float(ri) == pytest.approx(float(root), rel=1e-15)
            # (d + root) / 2 = 2 k / (root - d): the identity keeps 60 digits for d < 0 too
            exact = (d + root) / 2 if d >= 0 else 2 * k / (root - d)
            assert si > 0.0 and float(si) == pytest.approx(float(exact), rel=1e-14)


def test_newton_dual_gap_is_exact_and_fallback_certifies(rng):
    prob, S0, E, Y, _ = _small_problem(rng)
    for exponent in (-4.0, -12.0):
        lam = prob.mu_max**2 * 10**exponent
        S, R, it, gap, ok = dual_newton._solve_newton(prob, lam, None, tol=1e-14, max_iter=3)
        # any dual point gives a valid lower bound: J(S(R)) - d(R) >= J(S) - J* >= 0
        S_ref = _cvxpy_optimum(S0, E, Y, lam)
        J = prob.objective(S, lam)
        assert gap * J >= J - prob.objective(S_ref, lam) - 1e-9 * J
        assert np.linalg.eigvalsh(S).min() >= -1e-9 * np.abs(S).max()  # S(R) is PSD
        S2, it2, cert2, ok2, _ = solve._solve_lam(prob, lam, "newton", tol=1e-7, max_iter=5000)
        assert ok2 and (prob.objective(S2, lam) - prob.objective(S_ref, lam)) <= 1e-6 * J


def test_auto_solver_takes_the_smaller_of_primal_and_dual(rng):
    """Newton (dual, l(l+1)/2 + pair entries) below m(m+1)/2 unknowns, APG (primal) otherwise."""
    for m, l, expected in (
        (20, 19, "newton"),
        (20, 20, "apg"),
        (20, 45, "apg"),
        (60, 30, "newton"),
    ):
        S0 = np.eye(m)
        El = rng.normal(size=(l, m))
        prob = problem._Problem(S0, El, np.eye(2)[rng.integers(2, size=l)])
        assert solve._auto_solver(prob) == expected, (m, l)
    # pairs: the ordered mask entries are the dual's unknowns
    Ep = rng.normal(size=(8, 6))
    few = problem._Problem(np.eye(6), Ep=Ep, a=np.arange(8), b=np.arange(8), t=np.ones(8))
    many = problem._Problem(
        np.eye(6), Ep=Ep, a=np.repeat(np.arange(8), 3), b=np.tile(np.arange(3), 8), t=np.ones(24)
    )
    assert solve._auto_solver(few) == "newton" and solve._auto_solver(many) == "apg"
    # and "auto" reaches the same certified optimum as both explicit solvers
    prob, *_ = _small_problem(rng)
    lam = prob.mu_max**2 * 1e-6
    sols = [
        solve._solve_lam(prob, lam, s, tol=1e-9, max_iter=20000)[0]
        for s in ("auto", "apg", "newton")
    ]
    f = [prob.objective(S, lam) for S in sols]
    assert max(f) - min(f) <= 1e-7 * min(f)


def test_newton_cold_start_with_inactive_constraint_takes_one_step():
    """Below _HOMOTOPY_START the cold attempt is kept (one step, ``_COLD_STEPS``) because with an
    inactive PSD constraint the dual is a quadratic and one Newton step solves it; only then
    does the continuation down the grid start. Here the unconstrained optimum is PD:
    E_l = the first l unit rows, S0 = 2 I, so S = blockdiag((2 lam I + Y Y^T) / (lam + 1), 2 I)."""
    m, l = 12, 5
    El = np.eye(l, m)
    Y = np.eye(2)[[0, 0, 1, 1, 0]]
    prob = problem._Problem(2.0 * np.eye(m), El, Y)
    lam = prob.mu_max**2 * 1e-8
    assert lam < solve._HOMOTOPY_START * prob.mu_max**2
    expected = 2.0 * np.eye(m)
    expected[:l, :l] = (2.0 * lam * np.eye(l) + Y @ Y.T) / (lam + 1.0)
    S, it, cert, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-10, 100)
    assert ok and it == 1
    np.testing.assert_allclose(S, expected, atol=1e-12)
    # with the PSD constraint active the continuation takes over and still reaches the SDP optimum
    prob, S0, E, Y, _ = _small_problem(np.random.default_rng(5))
    lam = prob.mu_max**2 * 1e-9
    S, it, cert, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-8, 5000)
    S_ref = _cvxpy_optimum(S0, E, Y, lam)
    f_ref = prob.objective(S_ref, lam)
    assert ok and it > 1 and (prob.objective(S, lam) - f_ref) <= 1e-6 * f_ref
    # a zero step budget returns the start (R = 0, S = P_psd(S0) = S0) and its exact gap
    S, R, it, gap, ok = dual_newton._solve_newton(prob, lam, None, tol=1e-8, max_iter=0)
    J = prob.objective(S, lam)
    assert it == 0 and not ok and np.allclose(S, S0) and J - f_ref <= gap * J


@pytest.mark.parametrize("pairs", [False, True])
def test_max_iter_bounds_every_phase_together(pairs):
    """``max_iter`` is the whole budget of a solve: the semismooth steps, the barrier dual's
    and APG's iterations together never exceed it (a budget per phase let ``max_iter=1`` run
    three), and what a spent budget returns is PSD and reported as not converged."""
    prob, S0, *_ = _small_problem(np.random.default_rng(5), pairs=pairs)
    lam = prob.mu_max**2 * 1e-9  # cold start at small lam, PSD constraint active
    _S, it_free, _c, ok_free, _ = solve._solve_lam(prob, lam, "newton", 1e-10, 5000)
    assert ok_free and it_free > 3  # the budgets below do cut the solve short
    for budget in (1, 2, 3, it_free - 1):
        S, it, cert, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-10, budget)
        assert it <= budget and not ok and cert > 1e-10
        assert np.linalg.eigvalsh(S).min() >= -1e-10 * np.abs(S).max()
    X, y, _ = _toy(np.random.default_rng(1))
    gn = GeneralizedNystrom(n_landmarks=15, lam=1e-9, solver="newton", max_iter=2, tol=1e-10)
    with pytest.warns(ConvergenceWarning, match="increase max_iter"):
        gn.fit(X, y)
    assert gn.n_iter_ <= 2 and not gn.converged_
    # more iterations of the paper's first-order solver are rarely the remedy: it says so
    with pytest.warns(ConvergenceWarning, match="; use solver='auto'"):
        gn.set_params(solver="pgd").fit(X, y)
    assert gn.n_iter_ <= 2


def test_the_papers_solver_stops_where_its_measure_crawls():
    """At a small lam the gradient mapping's certified measure stayed at 1.00 from step 1,000
    to 10,000; with max_iter = 10**9 the fit ran for days. It now stops once the measure has
    not fallen by 1% in _CRAWL_STEPS steps, and says to use solver='auto'."""
    from nystrom_priors.generalized._paper import _CRAWL_STEPS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 10))
    y = np.full(500, -1)
    y[:60] = np.arange(60) % 3
    budget = 20 * _CRAWL_STEPS  # the previous code ran all of them (about 80 s)
    gn = GeneralizedNystrom(50, lam=1e-6, solver="pgd", max_iter=budget, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"solver stopped after \d+ iterations.*; use "):
        gn.fit(X, y)
    assert not gn.converged_ and _CRAWL_STEPS <= gn.n_iter_ < 10 * _CRAWL_STEPS


def test_an_unconverged_zero_iterate_is_named_at_the_callers_line(monkeypatch):
    # an unconverged solve whose point is S = 0 (the PSD projection of a negative definite
    # step, where J(0) <= J(S0)): transform then has no column, which the warning must say
    # (and point at this line). The solver is replaced: from S0, or a closed form no worse,
    # no data set at hand makes APG end at 0 within max_iter
    import nystrom_priors.generalized as gen_module

    X = np.random.default_rng(2).normal(size=(1000, 5))
    y = np.full(1000, -1)
    y[:200] = np.repeat(np.arange(100), 2)
    pairs = labels_to_pairs(y, 300, random_state=0)
    gn = GeneralizedNystrom(n_landmarks=30, solver="apg", lam=1e-6, max_iter=3, random_state=0)

    def zero(prob, *args, **kwargs):
        return np.zeros_like(prob.S0), 3, 1.0, False, None

    monkeypatch.setattr(gen_module, "_solve_lam", zero)
    with pytest.warns(ConvergenceWarning, match="last iterate is S = 0") as caught:
        gn.fit(X, pairs=pairs)
    assert gn.transform(X).shape == (1000, 0) and not np.any(gn.S_)
    assert {w.filename for w in caught} == {__file__}
    monkeypatch.undo()
    with pytest.warns(ConvergenceWarning) as caught:  # a non-zero iterate: no such sentence
        gn.set_params(max_iter=2).fit(X, pairs=pairs)
    assert gn.transform(X).shape[1] > 0
    assert not any("S = 0" in str(w.message) for w in caught)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("solver, max_iter", [("pgd", 100), ("apg", 10), ("newton", 2)])
def test_an_unconverged_pairs_fit_is_never_worse_than_the_prior(seed, solver, max_iter):
    """Stopped by max_iter, a pairs fit returned points with J up to 1e10 times J(S0): the
    certificate picked the dual's primal point by its *relative* gap (J - d) / J, which a huge
    J makes small when d < 0; APG and the paper's method started from the pairs' Kronecker
    surrogate optimum (J 3,000 times J(S0)); a dual Newton's unconverged primal point has any
    J. Now J(S_) <= J(S0), and the reported certificate still bounds the true relative gap
    (the optimum from a converged fit)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1, (150, 3)), rng.normal(1, 1, (150, 3))])
    y = np.where(np.arange(300) % 5 == 0, np.r_[np.zeros(150, int), np.ones(150, int)], -1)
    pairs = labels_to_pairs(y, 100, random_state=0)
    lam = 1e-4
    kw = dict(n_landmarks=25, lam=lam, random_state=0)
    with pytest.warns(ConvergenceWarning):
        gn = GeneralizedNystrom(solver=solver, max_iter=max_iter, **kw).fit(X, pairs=pairs)
    best = GeneralizedNystrom(solver="newton", tol=1e-10, **kw).fit(X, pairs=pairs)
    assert best.converged_
    rows = np.unique(pairs[:, :2])
    E = extrapolate(X[rows], gn.landmarks_, width=gn.width_)
    where = {int(r): k for k, r in enumerate(rows)}
    i = np.array([where[int(a)] for a in pairs[:, 0]])
    j = np.array([where[int(b)] for b in pairs[:, 1]])
    target = (pairs[:, 2] == 1).astype(float)

    def J(S):
        """Zhang et al.'s J with pairs, naively: lam ||S - S0||^2 plus the squared error of
        E S E^T on the mask, each pair in both orders (target 1 / 0) and the diagonal of
        the paired points (target 1, k(x, x) of the Gaussian kernel)."""
        values = np.einsum("km,mn,kn->k", E[i], S, E[j])
        diag = np.einsum("km,mn,kn->k", E, S, E)
        loss = 2 * np.sum((values - target) ** 2) + np.sum((diag - 1.0) ** 2)
        return lam * np.sum((S - gn.S0_) ** 2) + loss

    assert J(gn.S_) <= J(gn.S0_) * (1 + 1e-12)
    assert (J(gn.S_) - J(best.S_)) / J(gn.S_) <= gn.certificate_ * (1 + 1e-6) + 1e-12
    assert gn.certificate_ <= 1.0  # J >= 0: a larger relative gap certifies nothing more


def test_pairs_cold_start_goes_to_the_barrier_dual(rng, monkeypatch):
    """With pairs the cold start below _HOMOTOPY_START skips the semismooth step (the pairs'
    Jacobi-preconditioned CG stops at a 10% residual, so one step cannot certify) and is the
    barrier dual's solve itself, S for S."""
    prob, *_ = _small_problem(rng, m=12, l=20, pairs=True)
    lam = prob.mu_max**2 * 1e-8
    assert lam < solve._HOMOTOPY_START * prob.mu_max**2
    S_ref, _R, it_ref, _gap, ok_ref = barrier_dual._solve_barrier_dual(
        prob, lam, None, tol=1e-8, max_iter=100
    )
    calls = []
    real = solve._solve_newton
    monkeypatch.setattr(
        solve, "_solve_newton", lambda *a, **k: calls.append(k["max_iter"]) or real(*a, **k)
    )
    S, it, cert, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-8, 100)
    assert ok and ok_ref and calls == [0]  # the semismooth solver takes no step
    assert it == it_ref and cert <= 1e-8
    np.testing.assert_array_equal(S, S_ref)


def test_prior_eigendecomposition_is_S0s(rng):
    """``_fit_prior(with_eig=True)``: the full eigendecomposition of S0 = W^+, ascending, with
    0 on W's dropped directions first (the order the dual's Hessian blocks assume)."""
    Z = rng.normal(size=(14, 3))
    Z = np.vstack([Z, Z[:4]])  # duplicated landmarks: W has rank 14 of 18
    gn = Nystrom(landmarks=Z, n_landmarks=18).fit(Z)
    _F, (x, Q) = gn._fit_prior(with_eig=True)
    assert np.all(np.diff(x) >= 0) and np.count_nonzero(x == 0) == 18 - gn.eigenvalues_.size == 4
    np.testing.assert_allclose(Q.T @ Q, np.eye(18), atol=1e-12)
    np.testing.assert_allclose((Q * x) @ Q.T, gn.S0_, atol=1e-10 * np.abs(gn.S0_).max())


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("exponent", [-2.0, -9.0])
def test_cold_starts_take_S0s_eigendecomposition(rng, monkeypatch, pairs, exponent):
    """Given ``S0_eig``, the dual solvers never decompose S0 (every cold start's X(0) = S0), the
    barrier dual never decomposes the same X twice, and the solution is the one without it."""
    prob, S0, *_ = _small_problem(rng, pairs=pairs)
    w, U = np.linalg.eigh(S0)
    lam = prob.mu_max**2 * 10.0**exponent
    S_ref, _, _, ok_ref, _ = solve._solve_lam(prob, lam, "newton", 1e-8, 500)
    inputs = []
    eigh = np.linalg.eigh

    def recording(A, *args, **kwargs):
        inputs.append(np.array(A))
        return eigh(A, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", recording)
    prob.S0_eig = (w, U)
    info = {}
    S, _, _, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-8, 500, out=info)
    assert ok and ok_ref  # both certified to 1e-8: the same optimum to that objective gap
    J, J_ref = prob.objective(S, lam), prob.objective(S_ref, lam)
    assert abs(J - J_ref) <= 2e-8 * J_ref
    square = [A for A in inputs if A.shape == S0.shape]
    assert square and not any(np.allclose(A, S0, rtol=1e-12, atol=0) for A in square)
    assert not any(np.array_equal(A, B) for A, B in zip(square, square[1:]))
    vals, Q = info["eig"]  # the solution's own eigendecomposition, for its factor
    assert vals.min() >= 0
    np.testing.assert_allclose((Q * vals) @ Q.T, S, atol=1e-12 * np.abs(S).max())
    F = psd._factor(S, info["eig"])
    np.testing.assert_allclose(F @ F.T, S, atol=1e-12 * np.abs(S).max())


def test_solve_lam_reports_the_eigendecomposition_only_when_it_holds(rng):
    """``out["eig"]`` describes S on every branch that sets it (the prior's certified gap, the
    dual solvers) and is absent after the primal solvers."""
    prob, S0, *_ = _small_problem(rng)
    prob.S0_eig = np.linalg.eigh(S0)
    for lam_rel, solver in (
        (1e20, "newton"),
        (1e-1, "newton"),
        (1e-10, "newton"),
        (1e-3, "apg"),
        (1e-3, "pgd"),
    ):
        info = {}
        S, _, _, ok, _ = solve._solve_lam(
            prob, prob.mu_max**2 * lam_rel, solver, 1e-8, 500, out=info
        )
        assert ok
        if solver != "newton":
            assert "eig" not in info
            continue
        vals, Q = info["eig"]
        np.testing.assert_allclose((Q * vals) @ Q.T, S, atol=1e-11 * np.abs(S).max())


def test_newton_at_an_exact_fit_does_not_break_down():
    """Found by the fuzz test: the prior already fits the labels exactly (one class, identical
    rows), the dual gradient is 0 up to round-off and CG's curvature p^T H p is 0; Newton must
    hand over (here to APG), not divide by zero."""
    m = 4
    prob = problem._Problem(np.full((m, m), 1.0 / m**2), np.ones((2, m)), np.ones((2, 1)))
    for solver in ("newton", "auto"):
        S, it, cert, ok, _ = solve._solve_lam(prob, 1e-3, solver, 1e-6, 100)
        assert ok and np.allclose(S, prob.S0, atol=1e-12)


@pytest.mark.parametrize("n_negative", [0, 1, 5, 40])
def test_projection_from_the_negative_eigenpairs(rng, n_negative):
    m = 40
    Q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    w = rng.random(m) + 0.1
    w[:n_negative] *= -3.0
    A = (Q * w) @ Q.T
    P, k, Un = psd._psd_project_few_negative(A)
    assert k == n_negative and Un.shape == (m, n_negative)
    np.testing.assert_allclose(P, psd._psd_project(A)[0], atol=1e-12 * np.abs(A).max())
    # the clipped eigenvectors span P's null space (the certificate's null candidate)
    np.testing.assert_allclose(P @ Un, 0.0, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(Un.T @ Un, np.eye(n_negative), atol=1e-12)
    # both symmetrise their argument first
    B = A + 1e-3 * np.triu(rng.normal(size=(m, m)), 1)
    np.testing.assert_allclose(
        psd._psd_project_few_negative(B)[0], psd._psd_project(B)[0], atol=1e-12 * np.abs(B).max()
    )


def test_apg_path_is_the_same_with_partial_projections(rng, monkeypatch):
    """The few-negative projections change the cost of an APG step, not the iterates."""
    prob, *_ = _small_problem(rng, m=30, l=20)
    runs = {}
    partial = {0.0: 0, 0.5: 0}
    real_partial = apg._psd_project_few_negative

    def counting(A):
        partial[frac] += 1
        return real_partial(A)

    monkeypatch.setattr(apg, "_psd_project_few_negative", counting)
    for frac in (0.0, 0.5):
        monkeypatch.setattr(apg, "_FEW_NEGATIVE", frac)
        S, out = None, []
        for e in (-2.0, -6.0, -10.0):
            S, it, cert, ok, _ = solve._solve_lam(
                prob, prob.mu_max**2 * 10**e, "apg", 1e-8, 5000, S_warm=S
            )
            assert ok
            out.append((S, it))
        runs[frac] = out
    # the setting reaches the solver: more steps take the partial projection with it
    assert partial[0.5] > partial[0.0]
    for (S_a, it_a), (S_b, it_b) in zip(runs[0.0], runs[0.5]):
        assert abs(it_a - it_b) <= 1
        np.testing.assert_allclose(S_b, S_a, atol=1e-7 * np.abs(S_a).max())


@pytest.mark.parametrize("rank", [12, 7])
def test_more_labels_than_landmarks_compress_to_an_exact_m_row_term(rng, rank):
    """l > m: J keeps its value and gradient with E_l, Y swapped for r <= m rows (r = rank E_l),
    and the dual's label block is r x r; also when E_l is rank-deficient (r < m)."""
    m, l = 12, 40
    El = rng.normal(size=(l, rank)) @ rng.normal(size=(rank, m))
    Y = np.eye(3)[rng.integers(3, size=l)]
    S0 = np.eye(m) + 0.1 * np.ones((m, m))
    prob = problem._Problem(S0, El, Y)
    assert prob.El.shape == (rank, m) and prob.loss_shift > 0.0
    assert prob.El_labels is El and prob.Y_labels is Y
    assert dual_newton._Dual(prob, 1.0).zeros()[0].shape == (rank, rank)
    for _ in range(3):
        B = rng.normal(size=(m, m))
        S = B @ B.T
        direct = float(np.sum((El @ S @ El.T - Y @ Y.T) ** 2))
        assert prob.loss(S) == pytest.approx(direct, rel=1e-10)
        G_direct = 2.0 * 0.5 * (S - S0) + 2.0 * El.T @ (El @ S @ El.T - Y @ Y.T) @ El
        np.testing.assert_allclose(
            prob.grad(S, 0.5), G_direct, rtol=1e-9, atol=1e-9 * np.abs(G_direct).max()
        )


@pytest.mark.parametrize("solver", ["newton", "apg"])
@pytest.mark.parametrize("exponent", [-3.0, -8.0])
def test_many_labels_with_pairs_reach_the_sdp_optimum(rng, exponent, solver):
    """Labels (l > m, compressed) and pairs together: both solvers reach cvxpy's optimum of the
    uncompressed SDP, and Newton's dual gap is exact (the dropped constant added back)."""
    cp = pytest.importorskip("cvxpy")
    m, l, d = 10, 30, 3
    Z, X = rng.normal(size=(m, d)), rng.normal(size=(l + 8, d))
    E = extrapolate(X, Z, width=3.0)
    lw, U = np.linalg.eigh(extrapolate(Z, Z, width=3.0))
    S0 = (U / lw) @ U.T
    Y = np.eye(2)[rng.integers(2, size=l)]
    a, b = np.array([0, 1, 2, 3, 4]), np.array([5, 6, 7, 1, 0])
    t = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    aa, bb = np.concatenate([a, b, np.arange(8)]), np.concatenate([b, a, np.arange(8)])
    tt = np.concatenate([t, t, np.ones(8)])
    prob = problem._Problem(S0, E[:l], Y, E[l:], aa, bb, tt)
    assert prob.El.shape[0] == m
    lam = prob.mu_max**2 * 10**exponent
    S, it, cert, ok, R = solve._solve_lam(prob, lam, solver, tol=1e-9, max_iter=20000)
    assert ok, (it, cert)
    Sv = cp.Variable((m, m), PSD=True)
    K = E[l:] @ Sv @ E[l:].T
    loss = cp.sum_squares(E[:l] @ Sv @ E[:l].T - Y @ Y.T) + cp.sum_squares(
        cp.hstack([K[int(i), int(j)] for i, j in zip(aa, bb)]) - tt
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f_ref = cp.Problem(cp.Minimize(lam * cp.sum_squares(Sv - S0) + loss)).solve(
            solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11
        )
    f = prob.objective(S, lam)
    assert abs(f - f_ref) / f_ref <= 1e-6
    if solver == "newton":
        # certified by the dual itself, not by the APG fallback (at small lam a cold Newton
        # with pairs may hand over to APG, so only at the larger lam)
        assert R is not None or exponent < -5
        for steps in (1, 3, 10):  # any dual point's gap bounds the true one
            S_n, _R, _it, gap, _ok = dual_newton._solve_newton(
                prob, lam, None, tol=1e-9, max_iter=steps
            )
            J = prob.objective(S_n, lam)
            assert gap * J >= J - f_ref - 1e-8 * f_ref


@pytest.mark.parametrize("e", [-2, -6, -10])
def test_duality_gap_certificate_bounds_the_true_gap(rng, e):
    prob, S0, E, Y, _ = _small_problem(rng)
    lam = prob.mu_max**2 * 10.0**e
    co = problem._Coords(prob, lam, precondition=True)
    S_ref = _cvxpy_optimum(S0, E, Y, lam)
    f_ref = prob.objective(S_ref, lam)
    # at suboptimal feasible points (some with clipped eigenvalues, where the null-space
    # multiplier is tried) the certified gap is >= the true gap, with or without V's eigh
    X = co.to_V(S_ref) + 0.3 * rng.normal(size=co.wa.shape)
    w, U = np.linalg.eigh(co.to_V(S_ref))
    low_rank = [(U[:, -r:] * w[-r:]) @ U[:, -r:].T for r in (1, 2)]  # large null spaces
    P, _, Un = psd._psd_project_few_negative(X)
    points = [
        (V, None)
        for V in low_rank
        + [
            apg._solve(co, problem._closed_form_V(co), tol=1e-14, max_iter=it)[0]
            for it in (1, 5, 20)
        ]
    ] + [(P, Un)]  # a partial projection knows V's null space: no eigh of V
    # strictly inside the cone near the optimum: only P_psd(G) certifies where the constraint
    # is active (no null space; the multiplier 0 leaves the whole gradient)
    points.append((co.to_V(S_ref) + 1e-4 * np.eye(S0.shape[0]), None))
    for V, null in points:
        S = co.to_S(V)
        true_gap = (prob.objective(S, lam) - f_ref) / prob.objective(S, lam)
        w, U = np.linalg.eigh(V)
        full = co.certificate(V, co.grad(V))
        for eig in (None, (np.maximum(w, 0.0), U)):
            for tol in (None, 1e-6, 1e-2, 1.0):
                cert = co.certificate(V, co.grad(V), eig, null=null, tol=tol)
                assert cert >= true_gap - 1e-8
                # a short cut returns only values it certifies below tol
                assert cert == pytest.approx(full, rel=1e-12) or cert <= tol, (cert, full, tol)


def test_huge_lam_is_certified_at_once(rng):
    """lam >> mu_max^2: S is S0 plus a round-off-sized correction. The gap must not drown
    in the round-off of V ~ sqrt(lam) S0 (primal) or of lam ||S0||^2 (dual): all solvers
    certify within a few steps and agree with the closed form (eq. 10), here PSD."""
    prob, *_ = _small_problem(rng)
    for e in (2, 4, 6):
        lam = prob.mu_max**2 * 10.0**e
        co = problem._Coords(prob, lam, precondition=True)
        S_cf = co.to_S(problem._closed_form_V(co))
        assert np.linalg.eigvalsh(S_cf).min() > 0
        f_cf = prob.objective(S_cf, lam)
        for solver in ("newton", "apg", "pgd"):
            S, it, cert, ok, _ = solve._solve_lam(prob, lam, solver, tol=1e-6, max_iter=200)
            assert ok and it <= 5, (e, solver, it, cert)
            assert prob.objective(S, lam) - f_cf <= 1e-9 * f_cf


@pytest.mark.parametrize("pairs", [False, True])
def test_prior_gap_bounds_the_true_gap_tightly(rng, pairs):
    """_prior_gap's ||grad J(S0)||^2 / (4 lam): an upper bound on J(S0) - min J, tight when
    lam dominates the data term's curvature (here the constraint is inactive: the reference
    is the closed form, cross-checked by an APG solve)."""
    prob, *_ = _small_problem(rng, pairs=pairs)
    for e in (3.0, 5.0):
        lam = prob.mu_max**2 * 10.0**e
        S_ref, _it, _c, ok, _ = solve._solve_lam(prob, lam, "apg", tol=1e-14, max_iter=5000)
        assert ok
        J0 = prob.objective(prob.S0, lam)
        true_gap = (J0 - prob.objective(S_ref, lam)) / J0
        bound = solve._prior_gap(prob, lam)
        assert true_gap <= bound <= true_gap * (1.0 + 10.0 ** (1.0 - e)), (e, true_gap, bound)


@pytest.mark.parametrize("seed", range(4))
def test_certificate_is_not_swallowed_by_round_off_of_a_large_prior(seed):
    """One-dimensional data make W nearly singular, so S0 = W^+ and the working coordinates
    reach ~1e8. The certificate must still bound the true gap of a point off the optimum:
    it once subtracted one round-off floor (1e2 to 7e3 here, against J ~ 150 to 250) from
    every multiplier's gap and reported 0 for a warm start 13% above the optimum (that solve
    then stopped at iteration 0)."""
    prob, S0, *_ = _small_problem(np.random.default_rng(seed), m=23, l=24, d=1)
    assert np.abs(S0).max() > 1e5  # the regime of the bug
    lam_prev, lam = prob.mu_max**2, prob.mu_max**2 * 1e-2
    S_prev, *_ = solve._solve_lam(prob, lam_prev, "newton", tol=1e-12, max_iter=500)
    # the reference optimum from the dual Newton's own (primal - dual) gap, not this certificate
    S_ref, _it, _gap, ok, _ = solve._solve_lam(prob, lam, "newton", tol=1e-12, max_iter=500)
    assert ok
    J_ref = prob.objective(S_ref, lam)
    co = problem._Coords(prob, lam, precondition=True)
    for S in (S_prev, 0.5 * (S_prev + S_ref), S0):
        V = co.to_V(S)
        w, Uv = np.linalg.eigh(V)
        V = (Uv * np.maximum(w, 0.0)) @ Uv.T  # feasible, as the solvers' iterates are
        J = prob.objective(co.to_S(V), lam)
        true_gap = (J - J_ref) / J
        cert = co.certificate(V, co.grad(V))
        assert cert >= 0.5 * true_gap - 1e-9, (cert, true_gap)
    for solver in ("apg", "newton"):
        S, _it, _c, ok, _ = solve._solve_lam(
            prob, lam, solver, tol=1e-8, max_iter=3000, S_warm=S_prev
        )
        assert ok and (prob.objective(S, lam) - J_ref) / J_ref <= 1e-6


@pytest.mark.parametrize("solver", ["auto", "apg", "newton", "pgd", "onestep"])
def test_lam_far_outside_the_data_scale(rng, solver):
    """Above mu_max^2 / eps, S0 is optimal to round-off and is returned with its certificate
    (lam = 1e300 used to overflow the solvers' scaled coordinates: LinAlgError). Below
    mu_max^2 * eps the problem is numerically the lam -> 0 limit; lam is raised to that
    floor with a warning (pairs at lam = 1e-50 used to raise FloatingPointError, 1e-300 to
    run Newton's continuation one decade per stage for minutes)."""
    X, y, _ = _toy(rng)
    fit_kw = {"pairs": labels_to_pairs(y, 40, random_state=0)} if solver != "onestep" else {"y": y}
    if solver == "auto":
        fit_kw["y"] = y
    kw = dict(n_landmarks=20, solver=solver, random_state=0)
    # up to float64's top, where 2 lam overflowed in the certificate (NaN: the solvers ran and
    # raised LinAlgError or ZeroDivisionError)
    for lam in (1e300, 1e308, np.finfo(np.float64).max):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            huge = GeneralizedNystrom(lam=lam, **kw).fit(X, **fit_kw)
        np.testing.assert_array_equal(huge.S_, psd._sym(huge.S0_))  # fit symmetrises S
        assert huge.n_iter_ == 0 and huge.converged_ and 0.0 <= huge.certificate_ < 1e-200
    floor = solve._LAM_RANGE * huge.lam_scale_
    # at the floor, the primal solvers' dual certificate on pairs (R = A(S) - t, whose
    # round-off X(R) = S0 - A*(R) / lam amplifies by 1 / lam) may not reach tol: they warn
    # instead of claiming convergence; the dual Newton certifies
    primal = solver in ("apg", "pgd")
    for lam in (1e-300, floor / 10.0):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tiny = GeneralizedNystrom(lam=lam, max_iter=5000, **kw).fit(X, **fit_kw)
        assert any(
            re.search(r"below mu_max\^2 \* eps = .*Solving at lam=", str(w.message)) for w in caught
        )
        assert tiny.lam_ == floor and (tiny.converged_ or primal)
        if solver != "onestep":  # a closed form: certificate_ is NaN
            assert tiny.converged_ == (tiny.certificate_ <= 1e-6)
        unconverged = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert bool(unconverged) == (not tiny.converged_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        at_floor = GeneralizedNystrom(lam=floor, max_iter=5000, **kw).fit(X, **fit_kw)
    np.testing.assert_array_equal(tiny.S_, at_floor.S_)
    with pytest.raises(
        ValueError, match=r"lam_grid exponents must be in \[-15.65, 15.65\].*got -20 to 0"
    ):
        GeneralizedNystrom(lam="auto", lam_grid=[-20, 0], **kw).fit(X, **fit_kw)
    # a grid's length is bounded before anything is allocated for it (10**6 exponents: a
    # 3 GiB loss array after a minute)
    with pytest.raises(ValueError, match="lam_grid has 1000000 exponents; at most 100"):
        GeneralizedNystrom(lam_grid=np.linspace(-5, 5, 10**6), **kw).fit(X, **fit_kw)
    GeneralizedNystrom(lam_grid=np.linspace(-5, 5, 100), max_iter=50, **kw)._check_params()


@pytest.mark.parametrize("lam", ["auto", "nka"])
def test_a_repeated_grid_exponent_counts_once(lam):
    """lam_grid is a set of candidates: [-1, -1, -3] is the grid [-1, -3] (it was searched
    with the repeat, and "nka" on [-1, -1] called its criterion flat over the grid)."""
    X = np.random.default_rng(0).normal(size=(120, 3))
    y = np.where(np.arange(120) % 3 == 0, (X[:, 0] > 0).astype(int), -1)
    kw = dict(n_landmarks=12, lam=lam, random_state=0)
    twice = GeneralizedNystrom(lam_grid=[-1, -1, -3], **kw).fit(X, y)
    once = GeneralizedNystrom(lam_grid=[-3, -1], **kw).fit(X, y)
    np.testing.assert_array_equal(twice.lam_path_, once.lam_path_)
    np.testing.assert_array_equal(twice.S_, once.S_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one candidate: nothing flat to warn about
        single = GeneralizedNystrom(lam_grid=[-1, -1], **kw).fit(X, y)
    assert np.isfinite(single.lam_path_).sum() == 1


def test_gradient_matches_finite_differences(rng):
    for pairs in (False, True):
        prob, S0, *_ = _small_problem(rng, m=8, l=10, pairs=pairs)
        lam = 0.3
        S = S0 + 0.1 * np.eye(8)
        G = prob.grad(S, lam)
        D = rng.normal(size=(8, 8))
        D = D + D.T
        h = 1e-6
        fd = (prob.objective(S + h * D, lam) - prob.objective(S - h * D, lam)) / (2 * h)
        assert np.sum(G * D) == pytest.approx(fd, rel=1e-6)


def test_closed_form_is_the_optimum_when_psd(rng):
    prob, S0, E, Y, _ = _small_problem(rng)
    lam = prob.mu_max**2  # large lam: the unconstrained optimum is PSD
    co = problem._Coords(prob, lam, True)
    V0 = problem._closed_form_V(co)
    assert np.linalg.eigvalsh(V0).min() > 0
    G = prob.grad(co.to_S(V0), lam)
    assert np.abs(G).max() <= 1e-8 * np.abs(prob.grad(S0 * 0, lam)).max()


def test_infinite_lam_and_no_side_information_give_the_prior(rng):
    X, y, _ = _toy(rng)
    ny = Nystrom(n_landmarks=20, random_state=0).fit(X)
    inf = GeneralizedNystrom(n_landmarks=20, lam=np.inf, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="no side information"):
        none = GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X)
    for model in (inf, none):
        np.testing.assert_array_equal(model.S_, ny.S0_)
        np.testing.assert_array_equal(model.transform(X), ny.transform(X))
    with pytest.warns(UserWarning, match="no labeled sample"):
        GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, np.full(X.shape[0], -1))
    # very large lam: close to the prior, and certified (was: 2000 steps and a spurious warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        big = GeneralizedNystrom(n_landmarks=20, lam=1e12, random_state=0).fit(X, y)
    assert np.abs(big.S_ - ny.S0_).max() <= 1e-6 * np.abs(ny.S0_).max()


def test_labels_and_full_pairs_give_the_same_S(rng):
    X, y, _ = _toy(rng, n=80, n_labels=15)
    pairs = labels_to_pairs(y)
    kw = dict(n_landmarks=12, lam=0.5, random_state=0, tol=1e-10, max_iter=20000)
    a = GeneralizedNystrom(**kw).fit(X, y)
    b = GeneralizedNystrom(**kw).fit(X, pairs=pairs)
    np.testing.assert_allclose(b.S_, a.S_, rtol=0, atol=1e-6 * np.abs(a.S_).max())


@pytest.mark.parametrize("solver", ["auto", "onestep"])  # J's optimum; the one-step model
def test_learned_kernel_invariants(rng, solver):
    X, y, _ = _toy(rng)
    model = GeneralizedNystrom(n_landmarks=25, lam=1e-2, solver=solver, random_state=0)
    model.fit(X, y)
    assert model.converged_
    S = model.S_
    assert np.linalg.eigvalsh(S).min() >= -1e-9 * np.abs(S).max()
    G = model.transform(X)
    K = G @ G.T
    assert np.linalg.matrix_rank(K, tol=1e-9 * np.abs(K).max()) <= 25
    E = extrapolate(X, model.landmarks_, width=model.width_)
    np.testing.assert_allclose(K, E @ S @ E.T, atol=1e-8 * np.abs(K).max())
    # on landmark rows the learned kernel is W S W
    Z = model.landmarks_
    W = extrapolate(Z, Z, width=model.width_)
    np.testing.assert_allclose(model.kernel(Z), W @ S @ W, atol=1e-8 * np.abs(W @ S @ W).max())
    # inductive: new samples get rows from k(x, Z) only
    Xn = rng.normal(size=(7, X.shape[1]))
    En = extrapolate(Xn, Z, width=model.width_)
    np.testing.assert_allclose(model.kernel(Xn, X[:5]), En @ S @ E[:5].T, atol=1e-8)


def test_side_information_moves_the_kernel_towards_the_ideal(rng):
    X, y, y_true = _toy(rng, n=150, n_labels=40)
    lab = y != -1
    from nystrom_priors import factored_alignment

    Y = np.eye(3)[y_true[lab]]
    ny = Nystrom(n_landmarks=30, random_state=0).fit(X)
    gn = GeneralizedNystrom(n_landmarks=30, lam=1e-1, random_state=0).fit(X, y)
    assert factored_alignment(gn.transform(X[lab]), Y) > factored_alignment(ny.transform(X[lab]), Y)


def test_lam_selection_exposes_the_path(rng):
    X, y, _ = _toy(rng)
    model = GeneralizedNystrom(n_landmarks=20, lam="nka", random_state=0).fit(X, y)
    assert model.lam_path_.shape == (6,) and model.criterion_path_.shape == (6,)
    assert model.lam_ in model.lam_path_
    k = int(np.flatnonzero(model.lam_path_ == model.lam_)[0])
    assert model.criterion_path_[k] == model.criterion_path_.max()
    ratio = model.lam_path_[:-1] / model.lam_path_[1:]
    np.testing.assert_allclose(ratio, 100.0)  # the default grid: every other decade
    auto = GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, y)
    assert auto.lam_path_.shape == auto.criterion_path_.shape == auto.cv_error_path_.shape == (7,)
    assert np.isinf(auto.lam_path_[-1]) and auto.lam_ in auto.lam_path_
    np.testing.assert_allclose(auto.lam_path_[:-2] / auto.lam_path_[1:-1], 100.0)
    assert np.all(auto.criterion_path_ >= 0)
    assert np.all((auto.cv_error_path_ >= 0) & (auto.cv_error_path_ <= 1))


def test_nka_says_when_its_criterion_cannot_choose(rng):
    """One labeled class: eq. (12)'s label alignment is 0 along the whole path, and its
    argmax is the grid's first (largest) lam by position, not by the data. A warning says so;
    a path that varies gives none."""
    X, y, _ = _toy(rng)
    one = np.where(y == -1, -1, 0)
    with pytest.warns(UserWarning, match=r"lam='nka': eq. \(12\)'s criterion is 0 at every lam"):
        model = GeneralizedNystrom(n_landmarks=20, lam="nka", random_state=0).fit(X, one)
    assert model.lam_ == model.lam_path_.max() and np.all(model.criterion_path_ == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GeneralizedNystrom(n_landmarks=20, lam="nka", random_state=0).fit(X, y)


def test_nka_keeps_the_largest_lam_where_its_criterion_is_flat_to_round_off():
    """A criterion equal along the path but for its last bits (the alignments of a kernel
    the side information barely moves) used to be argmax'ed: the warning said the largest lam
    was kept while round-off chose another. Either grid order keeps the largest."""
    from nystrom_priors.generalized import _lam

    crit = 0.00685285 + np.array([0.0, 2e-18, 7e-18, -1e-18])
    for lams in (np.array([1e-4, 1e-2, 1.0, 1e2]), np.array([1e2, 1.0, 1e-2, 1e-4])):
        with pytest.warns(UserWarning, match="the largest was kept"):
            assert lams[_lam.nka_best(crit, lams)] == 1e2
    varied = crit + np.array([0.0, 0.0, 1e-3, 0.0])  # a real maximum: no warning, its lam
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _lam.nka_best(varied, np.array([1e-4, 1e-2, 1.0, 1e2])) == 2


def test_pairs_only_fit_and_mixed(rng, monkeypatch):
    X, y, y_true = _toy(rng, n=100, n_labels=20)
    pairs = labels_to_pairs(np.where(np.arange(100) < 40, y_true, -1), 60, random_state=0)
    m = GeneralizedNystrom(n_landmarks=15, lam="nka", random_state=0).fit(X, pairs=pairs)
    assert np.isfinite(m.transform(X)).all()
    both = GeneralizedNystrom(n_landmarks=15, lam=1e-2, random_state=0).fit(X, y, pairs=pairs[:5])
    assert both.converged_
    # lam="auto" with both: lam from the labels' cross-validation, then J (labels and pairs)
    # solved exactly at it
    pairs_out = pairs[(y[pairs[:, 0]] < 0) | (y[pairs[:, 1]] < 0)][:20]
    auto = GeneralizedNystrom(n_landmarks=15, random_state=0).fit(X, y, pairs=pairs_out)
    assert auto.converged_ and auto.lam_ in auto.lam_path_
    assert np.isfinite(auto.criterion_path_).all() and np.isfinite(auto.transform(X)).all()
    labels_only = GeneralizedNystrom(n_landmarks=15, random_state=0).fit(X, y)
    np.testing.assert_allclose(auto.criterion_path_, labels_only.criterion_path_)
    if np.isfinite(auto.lam_):
        assert not np.isnan(auto.certificate_) and auto.certificate_ <= auto.tol
    # pairs only: lam from the pairs' one-step cross-validation over held-out samples
    # (_lam_pairs), the prior among the candidates, then J solved exactly at it
    seen = []
    real_choose = lam_pairs.choose
    monkeypatch.setattr(lam_pairs, "choose", lambda L: seen.append(L.copy()) or real_choose(L))
    alone = GeneralizedNystrom(n_landmarks=15, random_state=0).fit(X, pairs=pairs)
    assert alone.lam_ in alone.lam_path_ and alone.criterion_path_.shape == alone.lam_path_.shape
    assert np.isinf(alone.lam_path_[-1])
    assert np.all((alone.cv_error_path_ >= 0) & (alone.cv_error_path_ <= 1))
    (L,) = seen
    np.testing.assert_allclose(alone.criterion_path_, selection._nanmean_columns(L))
    assert alone.lam_ == alone.lam_path_[real_choose(L)]
    if np.isfinite(alone.lam_):
        assert alone.converged_ and alone.certificate_ <= alone.tol


def test_pair_folds_hold_out_samples_not_pairs():
    """Fold f of lam='auto' on pairs trains on the pairs with no end in a group of samples and
    holds out the others: no held-out pair is predictable from training pairs among the same
    samples alone (the transitivity leak of splitting the pairs)."""
    from nystrom_priors.generalized._lam_pairs import _sample_folds

    rng = np.random.default_rng(0)
    n_pts, k = 37, 5
    ia, ib = rng.integers(0, n_pts, 400), rng.integers(0, n_pts, 400)
    keep = ia != ib
    ia, ib = ia[keep], ib[keep]
    folds = _sample_folds(ia, ib, n_pts, k, np.random.default_rng(1))
    assert len(folds) == k
    groups = []
    for held, scored in folds:
        train_pts = np.union1d(ia[~held], ib[~held])
        group = np.setdiff1d(np.union1d(ia[held], ib[held]), train_pts)
        # every held-out pair touches a sample absent from training, and only those are held out
        assert np.all(np.isin(ia[held], group) | np.isin(ib[held], group))
        assert not np.any(np.isin(ia[~held], group) | np.isin(ib[~held], group))
        # the scored pairs are exactly the pairs inside the group: both samples unseen
        assert np.array_equal(scored, np.isin(ia, group) & np.isin(ib, group))
        assert scored.any()
        groups.append(group)
    # the groups partition the samples into near-equal parts; a pair is held out once or twice
    # and scored at most once
    assert np.array_equal(np.sort(np.concatenate(groups)), np.arange(n_pts))
    assert max(g.size for g in groups) - min(g.size for g in groups) <= 1
    times = np.sum([held for held, _ in folds], axis=0)
    assert times.min() >= 1 and times.max() <= 2
    assert np.sum([scored for _, scored in folds], axis=0).max() == 1

    # three pairs cannot lie inside all five groups: a group with no pair inside it makes the
    # split score every held-out pair (else that fold would have nothing to score)
    sparse = _sample_folds(np.array([0, 2, 4]), np.array([1, 3, 5]), 20, k, rng)
    assert all(np.array_equal(held, scored) for held, scored in sparse)


@pytest.mark.parametrize("with_pairs", [False, True])
def test_convergence_warning_names_ws_conditioning_where_it_limits_the_certificate(with_pairs):
    """1-D data with 100 landmarks: W's kept eigenvalues span 3e13, so rounding in S is about
    7e-3 of the kernel. An exact solve stopped at a certificate of 1.5e-2 after 2,000
    iterations and grew with max_iter, while the warning only said to raise max_iter; it now
    names W's spread and the remedies that work here (fewer landmarks, a larger rcond;
    solver='onestep' only where it takes the side information)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 1))
    truth = (X[:, 0] > 0).astype(int)
    y = np.where(np.arange(400) < 60, truth, -1)
    kw = {"pairs": np.array([[100, 101, 1 if truth[100] == truth[101] else -1]])}
    with pytest.warns(ConvergenceWarning) as record:
        GeneralizedNystrom(lam=1.0, max_iter=3, random_state=0).fit(
            X, y, **(kw if with_pairs else {})
        )
    (message,) = [str(w.message) for w in record if w.category is ConvergenceWarning]
    assert "increase max_iter or relax tol" in message
    assert re.search(r"W's kept eigenvalues span a ratio of \d\.\de\+1\d", message)
    assert "fewer n_landmarks or a larger rcond" in message
    assert ("solver='onestep'" in message) is not with_pairs
    with pytest.warns(ConvergenceWarning) as record:  # lam="nka" refuses solver='onestep'
        GeneralizedNystrom(lam="nka", max_iter=3, random_state=0).fit(X, y)
    messages = [str(w.message) for w in record if w.category is ConvergenceWarning]
    assert messages and not any("solver='onestep'" in m for m in messages)
    with warnings.catch_warnings():  # what it advises converges
        warnings.simplefilter("error", ConvergenceWarning)
        GeneralizedNystrom(lam=1.0, rcond=1e-8, random_state=0).fit(X, y)


def test_convergence_warning_names_max_iter(rng):
    X, y, _ = _toy(rng)
    with pytest.warns(ConvergenceWarning, match="increase max_iter or relax tol"):
        GeneralizedNystrom(n_landmarks=20, lam=1e-9, max_iter=2, tol=1e-12, random_state=0).fit(
            X, y
        )


@pytest.mark.parametrize(
    "kwargs, fit_kw, exc, match",
    [
        ({}, {"y": np.zeros(5)}, ValueError, "y has 5 entries, but X has 60 samples"),
        ({}, {"y": np.array(["a", 1] * 30, dtype=object)}, TypeError, "mixes labels"),
        ({}, {"y": np.r_[np.inf, np.zeros(59)]}, ValueError, "infinite"),
        ({}, {"pairs": [[0, 60, 1]]}, ValueError, "out of range"),
        ({}, {"pairs": [[3, 3, 1]]}, ValueError, "pairs a sample with itself"),
        ({}, {"pairs": [[1, 2, 1], [2, 1, -1]]}, ValueError, "both as must-link"),
        ({}, {"pairs": [[1, 2, 0]]}, ValueError, "sign 0"),
        ({}, {"pairs": [[1, 2]]}, ValueError, r"shape \(k, 3\)"),
        ({"lam": -1.0}, {"y": None}, ValueError, r"lam must be in \(0"),
        (
            {"lam": "best"},
            {"y": None},
            ValueError,
            "lam must be .auto., .nka. or a number in \\(0, inf\\], got .best.",
        ),
        ({"solver": "bfgs"}, {"y": None}, ValueError, "solver must be one of"),
        (
            {"solver": "onestep"},
            {"y": np.r_[0, 1, np.full(58, -1)], "pairs": [[3, 4, 1]]},
            ValueError,
            "solver='onestep' takes labels or pairs, not both",
        ),
        (
            {"solver": "onestep", "lam": "nka"},
            {"pairs": [[3, 4, 1], [5, 6, -1]]},
            ValueError,
            "solver='onestep' takes lam='auto' or a number, not 'nka'",
        ),
        ({"solver": "ipm"}, {}, ValueError, "solver"),
        ({"tol": 0.0}, {"y": None}, ValueError, r"tol must be in \(0"),
        ({"cv": 1}, {"y": None}, ValueError, r"cv must be in \[2"),
        ({"lam_grid": [np.nan]}, {"y": None}, ValueError, "lam_grid must be"),
    ],
)
def test_bad_input(rng, kwargs, fit_kw, exc, match):
    X = rng.normal(size=(60, 3))
    y = fit_kw.pop("y", None)
    with pytest.raises(exc, match=match):
        GeneralizedNystrom(n_landmarks=10, random_state=0, **kwargs).fit(X, y, **fit_kw)


def test_cannot_link_between_identical_kernel_rows_warns(rng):
    """A cannot-link pair of duplicate samples cannot be met by any kernel E S E^T (their rows
    are equal): a warning names it; distinct samples and must-links give none."""
    X = rng.normal(size=(40, 3))
    X[5] = X[3]
    with pytest.warns(UserWarning, match=r"1 cannot-link pair\(s\) join samples with identical"):
        GeneralizedNystrom(n_landmarks=8, lam=1.0, random_state=0).fit(
            X, pairs=[[3, 5, -1], [1, 2, 1], [0, 7, -1]]
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GeneralizedNystrom(n_landmarks=8, lam=1.0, random_state=0).fit(
            X, pairs=[[3, 5, 1], [1, 2, 1], [0, 7, -1]]
        )


def test_pairs_contradicting_labels(rng):
    X = rng.normal(size=(30, 2))
    y = np.full(30, -1)
    y[:4] = [0, 0, 1, 1]
    with pytest.raises(ValueError, match="contradicts the labels"):
        GeneralizedNystrom(n_landmarks=8, lam=1.0, random_state=0).fit(X, y, pairs=[[0, 1, -1]])


def test_one_class_warns_and_nan_raises(rng):
    X = rng.normal(size=(40, 2))
    y = np.full(40, -1)
    y[:5] = 1
    with pytest.warns(UserWarning, match="one class"):
        GeneralizedNystrom(n_landmarks=8, lam=1.0, random_state=0).fit(X, y)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        GeneralizedNystrom(n_landmarks=8, random_state=0).fit(X, y)


@pytest.mark.parametrize("side", ["one-class", "must-links"])
def test_auto_keeps_the_prior_where_folds_cannot_score(rng, side):
    """Labels of one class (random labels on a rare class), or pairs of one kind: no fold
    can score a held-out sample, so lam="auto" keeps the prior, warns, and transforms as
    the prior does (it used to raise)."""
    X = rng.normal(size=(60, 3))
    kw = dict(n_landmarks=10, random_state=0)
    if side == "one-class":
        y = np.full(60, -1)
        y[:20] = 1
        fit, match = dict(y=y), "all one class"
    else:
        fit, match = dict(pairs=[[0, 1, 1], [2, 3, 1], [4, 5, 1], [6, 7, -1]]), "1 cannot-link"
    with pytest.warns(UserWarning, match=f"kept the Nystrom prior: .*{match}"):
        model = GeneralizedNystrom(**kw).fit(X, **fit)
    prior = GeneralizedNystrom(lam=np.inf, **kw).fit(X, **fit)
    assert model.lam_ == np.inf
    np.testing.assert_array_equal(model.S_, model.S0_)
    np.testing.assert_allclose(model.transform(X), prior.transform(X), rtol=0, atol=1e-12)


def test_save_load_round_trip(rng, tmp_path):
    from nystrom_priors import load, save

    X, y, _ = _toy(rng)
    model = GeneralizedNystrom(n_landmarks=15, lam="nka", random_state=0).fit(X, y)
    save(model, tmp_path / "g.npz")
    back = load(tmp_path / "g.npz")
    np.testing.assert_array_equal(back.S_, model.S_)
    np.testing.assert_array_equal(back.criterion_path_, model.criterion_path_)
    np.testing.assert_array_equal(back.transform(X), model.transform(X))


@settings(max_examples=15)
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(3, 20),
    exponent=st.floats(-9, 0),
    classes=st.integers(2, 4),
)
def test_property_psd_rank_and_landmark_reconstruction(seed, m, exponent, classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    y = np.full(60, -1)
    lab = rng.choice(60, 20, replace=False)
    y[lab] = rng.integers(classes, size=20)
    if np.unique(y[lab]).size < 2:
        y[lab[:2]] = [0, 1]
    probe = GeneralizedNystrom(
        n_landmarks=m, lam=np.inf, landmarks="uniform", random_state=seed
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = GeneralizedNystrom(
            n_landmarks=m,
            lam=float(10**exponent),
            landmarks="uniform",
            random_state=seed,
            max_iter=300,
        ).fit(X, y)
    S = model.S_
    assert np.linalg.eigvalsh(S).min() >= -1e-9 * max(1.0, np.abs(S).max())
    G = model.transform(X)
    assert G.shape[1] <= m and np.isfinite(G).all()
    Z = model.landmarks_
    np.testing.assert_array_equal(Z, probe.landmarks_)
    W = extrapolate(Z, Z, width=model.width_)
    WSW = W @ S @ W
    np.testing.assert_allclose(model.kernel(Z), WSW, atol=1e-8 * max(1.0, np.abs(WSW).max()))


@functools.lru_cache(maxsize=1)
def _ill_conditioned_pairs():
    """1-d data (W nearly singular, S0 ~ 1e12), 150 pairs, lam = 1e-6 mu_max^2, and the dual
    Newton's solution there (certified or not: any PSD S is feasible)."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(-1, 1, 100), rng.normal(1, 1, 100)][:, None]
    yt = np.arange(200) >= 100
    ij = rng.choice(200, (150, 2))
    ij = ij[ij[:, 0] != ij[:, 1]]
    pairs = np.c_[ij, np.where(yt[ij[:, 0]] == yt[ij[:, 1]], 1, -1)]
    kw = dict(n_landmarks=20, random_state=0)
    lam = 1e-6 * GeneralizedNystrom(lam=1.0, **kw).fit(X, pairs=pairs).lam_scale_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        best = GeneralizedNystrom(lam=lam, solver="newton", **kw).fit(X, pairs=pairs)
    return X, pairs, lam, kw, best


@pytest.mark.parametrize("solver", ["apg", "pgd", "auto"])
def test_pairs_certificate_bounds_the_objective_gap_on_an_ill_conditioned_prior(solver):
    """On 1-d data W is nearly singular (S0 ~ 1e12): the primal solvers' former pairs
    certificate, a relative projected-gradient residual, passed at the closed-form start with
    the objective 1.8-330x the optimum (converged_ True, n_iter_ 1). The reported certificate
    bounds J(S_) - min J, so it bounds the gap to any other feasible point: here the dual
    Newton's."""
    metrics = pytest.importorskip("sklearn.metrics.pairwise")
    X, pairs, lam, kw, best = _ill_conditioned_pairs()

    def J(model):  # the documented objective, from the public attributes
        P = np.unique(np.c_[np.sort(pairs[:, :2], 1), pairs[:, 2]], axis=0)
        pts, inv = np.unique(P[:, :2], return_inverse=True)
        inv = inv.reshape(-1, 2)
        E = metrics.rbf_kernel(X[pts], model.landmarks_, gamma=model.gamma_)
        K = E @ model.S_ @ E.T
        T = np.full(K.shape, np.nan)
        T[inv[:, 0], inv[:, 1]] = T[inv[:, 1], inv[:, 0]] = P[:, 2] == 1
        np.fill_diagonal(T, 1.0)
        keep = ~np.isnan(T)
        return model.lam_ * np.sum((model.S_ - model.S0_) ** 2) + np.sum((K[keep] - T[keep]) ** 2)

    assert np.linalg.eigvalsh(best.S_).min() >= -1e-9 * np.abs(best.S_).max()  # feasible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = GeneralizedNystrom(lam=lam, solver=solver, max_iter=300, **kw).fit(X, pairs=pairs)
    assert model.n_iter_ > 1
    gap = (J(model) - J(best)) / J(model)
    assert gap <= model.certificate_ + 1e-6, (gap, model.certificate_, model.converged_)


@pytest.mark.parametrize("solver", ["apg", "pgd"])
def test_an_unconverged_pairs_solve_reports_the_certificate_of_what_it_returns(solver):
    """certify may certify the dual's primal S(R) rather than the iterate; a solve that runs
    out of budget returns that same point, so its certificate bounds its own gap (returning
    the iterate with S(R)'s certificate understated the gap up to 4x)."""
    for d in (4, 1):
        prob, *_ = _small_problem(np.random.default_rng(3), m=14, d=d, pairs=True)
        lam = prob.mu_max**2 * 1e-3
        S_ref, _it, cert_ref, ok_ref, _ = solve._solve_lam(prob, lam, "newton", 1e-12, 5000)
        J_ref = prob.objective(S_ref, lam)
        for budget in (3, 10, 30):
            S, _it, cert, ok, _ = solve._solve_lam(prob, lam, solver, 1e-12, budget)
            J = prob.objective(S, lam)
            assert (J - J_ref) / J <= cert + 1e-12, (d, budget, (J - J_ref) / J, cert)
