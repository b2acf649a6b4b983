"""Scale extremes: huge widths, data at 1e+-150 and beyond.

Every result is finite and exact where the math says so (the Nystrom kernel on its landmarks),
or the input is refused with a ValueError that says why -- never inf, NaN or an overflow /
invalid-value RuntimeWarning passed to the user (pyproject turns those into errors here).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import NO_JIT

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


# ----- extrapolation: a huge width gives E -> 1 at any data scale ----------------------------

PATHS = [None, "fused", "blas", "twophase"]


def _oracle(X, Z, kernel, gamma):
    """The kernel in float64 from rows scaled by a power of two near max |x| (the scale
    folded into gamma): no overflow on the way, whatever the data's scale."""
    from scipy.spatial.distance import cdist

    X, Z = np.asarray(X, np.float64), np.asarray(Z, np.float64)
    e = int(np.frexp(max(np.abs(X).max(), np.abs(Z).max()))[1])
    Xs, Zs = np.ldexp(X, -e), np.ldexp(Z, -e)
    with np.errstate(over="ignore"):
        if kernel == "rbf":
            return np.exp(-np.ldexp(gamma, 2 * e) * cdist(Xs, Zs, "sqeuclidean"))
        if kernel == "laplacian":
            return np.exp(-np.ldexp(gamma, e) * cdist(Xs, Zs, "cityblock"))
        return (np.ldexp(gamma, 2 * e) * (Xs @ Zs.T) + 1.0) ** 3


CASES = [  # (kernel, kw, gamma for the oracle)
    ("rbf", {"width": 1e300}, 1e-300),
    ("rbf", {"width": 1.7e308}, 1 / 1.7e308),
    ("rbf", {"gamma": 5e-324}, 5e-324),
    ("laplacian", {"width": 1.7e308}, 1 / 1.7e308),
    ("poly", {"gamma": 1e-300}, 1e-300),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "dtype, scale",
    [
        (np.float64, 1.0),
        (np.float64, 1e100),
        (np.float64, 1e150),
        (np.float32, 1.0),
        (np.float32, 1e19),
        (np.float32, 1e30),
    ],
)
@pytest.mark.parametrize("kernel, kw, gamma", CASES, ids=[f"{c[0]}-{c[2]:.0e}" for c in CASES])
def test_huge_width_gives_a_finite_exact_kernel_at_any_scale(
    monkeypatch, path, dtype, scale, kernel, kw, gamma
):
    from nystrom_priors import _rowblocks as kernels

    monkeypatch.setattr(kernels, "_FORCE_PATH", path)
    X = (_data(40, 30 if path in ("blas", "twophase") else 3) * scale).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E = npr.extrapolate(X, X[:6], kernel=kernel, **kw)
    assert E.dtype == dtype and np.isfinite(E).all()
    ref = _oracle(X, X[:6], kernel, gamma)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(E, ref, rtol=rtol, atol=rtol)
    if np.abs(ref - 1).max() < 1e-12:  # gamma * distance below round-off: E is exactly 1
        np.testing.assert_array_equal(E, np.ones_like(E))


@pytest.mark.parametrize(
    "dtype, scale", [(np.float32, 1e19), (np.float32, 1e30), (np.float64, 1e150)]
)
def test_nystrom_with_a_huge_width_is_exact_on_its_landmarks(dtype, scale):
    X = (_data() * scale).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = npr.Nystrom(n_landmarks=8, width=1.7e308, random_state=0).fit(X)
        G = model.transform(model.landmarks_).astype(np.float64)
        Gx = model.transform(X)
    assert np.isfinite(Gx).all()
    W = _oracle(model.landmarks_, model.landmarks_, "rbf", 1 / 1.7e308)
    assert np.abs(W - 1).max() < 1e-6  # E -> 1
    np.testing.assert_allclose(G @ G.T, W, rtol=0, atol=10 * np.finfo(dtype).eps)


@pytest.mark.jit_only  # run as Python (NUMBA_DISABLE_JIT=1), the kernel's overflow warns
def test_polynomial_kernel_with_a_float32_cross_term_overflow_is_exact_or_refused():
    """<x, z> overflows float32 at |x| ~ 1e30, while gamma <x, z> + coef0 is 1: the kernel
    is computed, not returned as inf. With a gamma that cannot absorb the scale, refused."""
    X = (_data(20, 3) * 1e30).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E = npr.extrapolate(X, X[:4], kernel="poly", gamma=1e-300)
        np.testing.assert_array_equal(E, np.ones_like(E))
        with pytest.raises(ValueError, match="overflows float32: the 'poly' kernel"):
            npr.extrapolate(X, X[:4], kernel="poly", gamma=1.0)


# ----- data at 1e+-150 and beyond ------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "linear", "cosine", "poly"])
def test_nystrom_at_extreme_data_scales_is_exact_on_landmarks_or_refused(scale, kernel):
    X = _data() * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if kernel == "poly" and scale > 1:  # (<x, z> / 3 + 1)^3 ~ 1e900: not a float64
            if NO_JIT:  # the kernel's overflow, run as Python, warns before it is refused
                warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(ValueError, match="overflows float64: the 'poly' kernel"):
                npr.Nystrom(n_landmarks=8, kernel=kernel, random_state=0).fit(X)
            return
        model = npr.Nystrom(n_landmarks=8, kernel=kernel, random_state=0).fit(X)
        Z = model.landmarks_
        K = model.kernel(Z)
        W = npr.extrapolate(Z, Z, kernel=model._kernel_spec())
        assert np.isfinite(model.transform(X)).all() and np.isfinite(model.S0_).all()
    np.testing.assert_allclose(K, W, rtol=0, atol=1e-12 * np.abs(W).max())


@pytest.mark.parametrize("scale", [1e-155, 1e-160])
def test_kernel_values_below_float64_are_refused_not_inverted_to_inf(scale):
    """The linear kernel at 1e-155 has W ~ 1e-310: W^+ would be ~1e310."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="underflow float64, and W\\^\\+ would overflow"):
            npr.Nystrom(n_landmarks=8, kernel="linear", random_state=0).fit(_data() * scale)


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize(
    "make",
    [
        lambda: npr.GeneralizedNystrom(n_landmarks=8, lam=1.0, random_state=0),
        lambda: npr.LogDetKernelLearner(n_landmarks=8, gamma=1.0, random_state=0),
        lambda: npr.VonNeumannKernelLearner(n_landmarks=8, max_iter=30, random_state=0),
        lambda: npr.BCDNPKL(random_state=0),
        lambda: npr.BCDNPKL(graph="dense", random_state=0),
    ],
    ids=["GeneralizedNystrom", "LogDet", "VonNeumann", "BCDNPKL", "BCDNPKL-dense"],
)
def test_learners_at_1e150_are_finite(scale, make):
    X = _data() * scale
    y = np.where(np.arange(60) % 2 == 0, np.arange(60) % 3, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # convergence notices
        model = make().fit(X, y)
        G = model.transform(X)
    assert np.isfinite(G).all() and np.abs(G).max() > 0


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
@pytest.mark.parametrize("scale, word", [(1e160, "overflow"), (1e-300, "underflow")])
def test_bregman_learners_name_overflow_and_underflow(cls, scale, word):
    """Squared distances of the linear initial kernel leave float64: a refusal that says so
    (it used to say 'every pair has zero length', or project into NaN)."""
    X = _data() * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=word):
            cls(init="linear", max_iter=20).fit(X, pairs=PAIRS)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
def test_bregman_learners_name_a_width_that_maps_samples_to_zero(cls):
    """A Gaussian width far below the squared distances maps every sample that is not a
    landmark to 0 in the initial kernel: its pairs have zero length. The message names the
    width (it said only 'zero length', pointing at the pairs)."""
    X = _data()
    with pytest.raises(ValueError, match=r"every pair has zero length.*width 1e-300"):
        cls(width=1e-300, n_landmarks=3, max_iter=20).fit(X, pairs=PAIRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", npr.exceptions.InfeasibleConstraintsWarning)
        # samples 0-5 are the landmarks, and only pair (6, 9) joins two others (small integers:
        # a landmark's distance to itself is exactly 0, not round-off over a width of 1e-300)
        X = np.round(4 * X)
        with pytest.warns(UserWarning, match=r"^1 pair.*1 of them .*maps to 0.*width 1e-300"):
            cls(width=1e-300, landmarks=X[:6], max_iter=20).fit(X, pairs=PAIRS)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
@pytest.mark.parametrize("kw", [{"width": 1e300}, {"kernel_gamma": 1e-300}])
def test_bregman_learners_name_a_width_that_makes_every_sample_alike(cls, kw):
    """The other extreme: a width far above the distances makes every kernel value 1 and
    every row of the initial factor the same; the refusal said only 'zero length'."""
    with pytest.raises(ValueError, match=r"every pair has zero length.*width \(1e\+300"):
        cls(n_landmarks=10, max_iter=20, random_state=0, **kw).fit(_data(), pairs=PAIRS)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
@pytest.mark.parametrize("kernel", ["linear", "cosine", "poly"])
def test_bregman_learners_name_duplicates_without_a_width(cls, kernel):
    """Every pair joins a sample and its copy. With a Gaussian kernel the refusal named the
    duplicates; with the kernels that have no width it stopped at 'nothing to learn'."""
    X = np.repeat(_data(), 2, axis=0)
    pairs = np.array([[0, 1, 1], [2, 3, -1], [4, 5, 1]])
    with pytest.raises(ValueError, match=r"nothing to learn\. 3 of them .*duplicated samples"):
        cls(rank=4, n_landmarks=10, kernel=kernel, random_state=0).fit(X, pairs=pairs)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
def test_zero_length_pairs_get_one_explanation_each(cls):
    """Rows of 1e-170 differ but their squared distance underflows: those pairs were also
    called duplicated samples in the refusal (counted under both explanations)."""
    X = np.random.default_rng(0).normal(size=(20, 3)) * 1e-170
    with pytest.raises(ValueError, match=r"2 of them join different rows .*underflows") as info:
        cls(init="linear", max_iter=20).fit(X, pairs=np.array([[0, 1, 1], [2, 3, -1]]))
    assert "duplicated" not in str(info.value)


@pytest.mark.parametrize("rule", ["percentile", "relative"])
@pytest.mark.parametrize("scale, word", [(1e160, "overflow"), (1e-300, "underflow")])
def test_distance_bounds_name_overflow_and_underflow(rule, scale, word):
    G0 = _data() * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=word):
            npr.distance_bounds(G0, PAIRS, rule=rule)


@pytest.mark.parametrize("scale, word", [(1e100, "overflow"), (1e-100, "underflow")])
@pytest.mark.parametrize(
    "kw, side",
    [({}, "labels"), ({"lam": 1e-3, "solver": "apg"}, "labels"), ({}, "pairs")],
    ids=["default", "apg", "pairs"],
)
def test_generalized_nystrom_refuses_kernel_values_whose_squares_leave_float64(
    scale, word, kw, side
):
    """A linear kernel at 1e+-100 has values near 1e+-200: E^T E overflows (a RuntimeWarning
    from matmul before) or underflows to 0 (refused before as 'orthogonal side information').
    No representable learned kernel exists, so the refusal names the cause."""
    X = _data() * scale
    y = np.where(np.arange(60) % 2 == 0, np.arange(60) % 3, -1)
    side_info = {"y": y} if side == "labels" else {"pairs": PAIRS}
    model = npr.GeneralizedNystrom(n_landmarks=8, kernel="linear", random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=f"{word}.*Rescale X"):
            model.fit(X, **side_info)


# ----- max_iter is a budget: the per-sweep paths grow with the sweeps done -------------------


def test_sweep_paths_grown_in_chunks_give_the_same_fit(monkeypatch):
    from nystrom_priors import _bcd_gap
    from nystrom_priors.bregman import _sweeps

    X, y = _data(), np.arange(60) % 3

    def fits():
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", npr.ConvergenceWarning)
            m = npr.BCDNPKL(C=100.0, tol=1e-12, max_iter=60, random_state=0).fit(X, y)
        out.append((m.n_iter_, m.objective_path_, m.transform(X)))
        for cls in (npr.LogDetKernelLearner, npr.VonNeumannKernelLearner):
            m = cls(rank=6, n_landmarks=20, tol=0.0, max_iter=40, random_state=0)
            m.infeasible_window = 0  # one run of max_iter sweeps, chunked by the paths only
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", npr.ConvergenceWarning)
                m.fit(X, y)
            paths = (m.violation_path_, m.dual_change_path_, m.dual_norm_path_)
            out.append((m.n_iter_, *paths, getattr(m, "evaluations_path_", None), m.transform(X)))
        return out

    whole = fits()
    monkeypatch.setattr(_bcd_gap, "_PATH_CHUNK", 3)
    monkeypatch.setattr(_sweeps, "_PATH_CHUNK", 7)
    for a, b in zip(whole, fits()):
        assert a[0] == b[0] and len(a) == len(b)
        for u, v in zip(a[1:], b[1:]):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("cls", [npr.LogDetKernelLearner, npr.VonNeumannKernelLearner])
@pytest.mark.parametrize("tol", [0.0, 1e-300])
def test_bregman_sweeps_stop_at_a_stall_below_round_off(cls, tol):
    """A tol no sweep can meet (0, or below round-off) once ran every one of max_iter sweeps
    (10**12: a hang) and then advised a larger max_iter. The sweeps stop where they are
    stationary, say tol is the setting to change, and lose nothing: the fit equals a run of
    as many or of many more sweeps without the stop (the first chunk is never tested), to
    round-off: LogDet's factor still takes round-off-sized updates at a zero dual change."""
    X = np.random.default_rng(0).normal(size=(60, 3))
    pairs = np.array([[0, 1, 1], [20, 21, 1], [0, 20, -1], [40, 41, 1], [1, 45, -1]])
    kw = dict(rank=4, n_landmarks=10, random_state=0, tol=tol)
    with pytest.warns(npr.ConvergenceWarning, match=r"stalled at round-off.*increase tol"):
        m = cls(**kw, max_iter=5000).fit(X, pairs=pairs)
    assert m.n_iter_ < 1000 and not m.converged_ and m.max_violation_ < 1e-12
    for sweeps in (m.n_iter_, 3 * m.n_iter_):
        ref = cls(**kw, max_iter=sweeps)
        ref.infeasible_window = 0  # one chunk of up to 1024 sweeps: no test between chunks
        with pytest.warns(npr.ConvergenceWarning, match="max_iter"):
            ref.fit(X, pairs=pairs)
        assert ref.n_iter_ == sweeps
        G = m.transform(X)
        np.testing.assert_allclose(ref.transform(X), G, rtol=0, atol=1e-12 * np.abs(G).max())


def test_the_round_off_stall_rule_spares_runs_still_converging():
    """Dual changes below the round-off level, falling 2% a sweep toward tol = 1e-12 (400
    constraints: the level is 4.4e-12), are progress, not a stall; so is any run whose tol
    lies above the level. Stationary changes below a smaller tol are a stall."""
    from nystrom_priors.bregman._sweeps import at_round_off

    before = 4e-12 * 0.98 ** np.arange(25)
    falling = before[-1] * 0.98 ** np.arange(1, 26)
    quiet = np.full(25, 1e-13)
    assert not at_round_off(falling, quiet, 400, before.min(), 1e-12)
    flat = np.full(25, before.min())
    assert at_round_off(flat, quiet, 400, before.min(), 1e-12)
    assert not at_round_off(flat, quiet, 400, before.min(), 1e-9)  # tol above round-off
    assert at_round_off(np.zeros(25), np.zeros(25), 5, 0.0, 0.0)  # an exact fixed point


@pytest.mark.parametrize("loss", ["square", "squared_hinge"])
def test_bcdnpkl_with_a_huge_C_certifies_its_gap_without_overflow(loss):
    # mu ~ C: sum(mu^2) / (4 C) overflowed (RuntimeWarning, an infinite q, no certificate)
    X, y = _data(40, 4), np.arange(40) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = npr.BCDNPKL(C=1e300, loss=loss, random_state=0).fit(X, y)
    assert model.converged_ and np.isfinite(model.transform(X)).all()


@pytest.mark.parametrize("sparse", [False, True])
def test_default_width_at_the_float_range_is_refused_without_an_overflow_warning(sparse):
    # the samples' spread, max - min per feature, overflowed in np.ptp before the ValueError
    import scipy.sparse as sp

    from nystrom_priors import select_landmarks

    X = np.vstack([np.full((20, 4), -1.7e308), np.full((20, 4), 1.7e308)])
    with pytest.raises(ValueError, match=r"at max \|x\| = 1.7e\+308 the distances overflow"):
        select_landmarks(sp.csr_matrix(X) if sparse else X, 5, method="rpcholesky")


def test_a_product_whose_partial_sums_overflow_is_exact_or_refused():
    # transform's F @ P for learners on raw features (init="linear") returned +-inf with a
    # RuntimeWarning: a partial sum can leave float64 where the result does not
    from nystrom_priors._products import scaled_product

    F = np.array([[1e308, 1e308, -1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert not np.isfinite(F @ np.ones((3, 1))).all()  # the plain product overflows
    assert scaled_product(F, np.ones((3, 1)), "M")[0, 0] == 1e308
    # each row at its own scale: one shared scale flushed the small row to zero
    mixed = np.vstack([[1e-300, 2e-300, 3e-300], F])
    np.testing.assert_array_equal(scaled_product(mixed, np.ones((3, 1)), "M"), [[6e-300], [1e308]])
    with pytest.raises(ValueError, match=r"factor rows of this M overflow float64 .* Rescale X"):
        scaled_product(np.array([[1e308, 1e308]]), np.ones((2, 1)), "M")


@pytest.mark.parametrize("name", ["LogDetKernelLearner", "VonNeumannKernelLearner"])
def test_raw_feature_learners_refuse_unrepresentable_factor_rows_and_pairs(name):
    X = np.random.default_rng(0).normal(size=(40, 4))
    y = np.arange(40) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hard constraints at rank 4
        model = getattr(npr, name)(init="linear", random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"X @ projection is not finite. Rescale X"):
        model.transform(np.full((1, 4), 1.5e308))
    pairs = np.stack([X[:3], X[3:6]], axis=1)
    # distances past 1e154 used to square to inf; a kernel value past float64 is refused
    np.testing.assert_allclose(
        model.pair_distance(pairs * 1e160), model.pair_distance(pairs) * 1e160, rtol=1e-13
    )
    with pytest.raises(ValueError, match="overflows float64 on these pairs"):
        model.pair_score(pairs * 1e160)


def test_von_neumann_with_a_bound_near_float64s_top_warns_without_overflow():
    # the infeasibility test's Farkas sums overflowed: ~80 RuntimeWarnings before the end
    from nystrom_priors.exceptions import ConvergenceWarning

    X = np.random.default_rng(0).normal(size=(40, 4))
    model = npr.VonNeumannKernelLearner(rank=5, n_landmarks=10, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"pair \[2, 3\] asks its squared distance"):
        model.fit(X, pairs=np.array([[0, 1, 1], [2, 3, -1]]), bounds=[1.0, 1.7e308])
    assert np.isfinite(model.transform(X)).all()


@pytest.mark.parametrize("seed", range(4))
def test_lam_auto_with_a_singular_held_out_ridge_system_fits(seed):
    # a cubic kernel on rows near 1.2e5 puts ~1e31 next to the ridge's unit scale in the held-out
    # classifier's (p + 1)-sized system, which is then exactly singular in float64: the
    # selection must score such a candidate as no measurement, not raise from a worker thread
    rng = np.random.default_rng(seed)
    X = 1.2e5 + 500.0 * rng.normal(size=(40, 4))
    y = (rng.random(40) > 0.5).astype(int)
    gn = npr.GeneralizedNystrom(2, kernel="poly", landmarks="uniform", random_state=0).fit(X, y)
    assert np.isfinite(gn.S_).all() and np.isfinite(gn.transform(X)).all()
    assert np.isfinite(gn.criterion_path_[-1])  # the prior was scored


@pytest.mark.parametrize("lam", [1e-3, "nka"])
def test_exact_solver_overflow_at_a_huge_scale_is_named(lam):
    # mu_max^2 ~ 2e260, inside the lam grid's range: the exact solvers' products overflow and
    # LAPACK used to report it as a bare LinAlgError ("Eigenvalues did not converge")
    X = _data(60, 4) * 1e32
    y = np.arange(60) % 3
    gn = npr.GeneralizedNystrom(6, kernel="linear", landmarks="uniform", random_state=0, lam=lam)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # lam=1e-3 is floored to mu_max^2 eps
        with pytest.raises(ValueError, match=r"exact solver overflowed .* Rescale X"):
            gn.fit(X, y)


@pytest.mark.parametrize("delta", [1e-3, 1e-12])
def test_bcdnpkl_overflow_at_a_huge_C_with_a_small_delta_is_named(delta):
    # the descent's V reached 1e141 in one sweep and the objective inf: the certificate's
    # eigensolver then failed with scipy's "array must not contain infs or NaNs"
    X = _data(80, 4)
    y = np.where(np.arange(80) < 30, np.arange(80) % 3, -1)
    model = npr.BCDNPKL(C=1e20, delta=delta, random_state=0)
    with pytest.raises(
        ValueError, match=r"overflowed float64 .* C = 1e\+20.*smaller C or a larger"
    ):
        model.fit(X, y)


def test_bcdnpkl_with_a_delta_below_round_off_names_delta_not_only_tol():
    # 1 + 1e-100 == 1: the certificate cannot reach tol, which "increase tol" alone misreads
    X = _data(80, 4)
    y = np.where(np.arange(80) < 30, np.arange(80) % 3, -1)
    model = npr.BCDNPKL(C=1.0, delta=1e-100, random_state=0)
    with pytest.warns(npr.ConvergenceWarning, match=r"delta = 1e-100 .* pass a larger delta"):
        model.fit(X, y)
    assert not model.converged_


# ----- a large common offset: init="linear" keeps the directions of the spread --------------


def test_von_neumann_linear_init_keeps_every_direction_under_a_large_offset():
    """X + 1e8: the spread's directions are 1e-8 of the offset's in G0's singular values,
    below sqrt(eps) (the eigenvalues of G0^T G0 dropped them, leaving rank 1 and unmet
    constraints) but far above eps: the basis keeps rank d, as LogDet's factor does."""
    X = _data(40, 4) + 1e8
    pairs = PAIRS[:5]
    vn = npr.VonNeumannKernelLearner(init="linear", random_state=0).fit(X, pairs=pairs)
    ld = npr.LogDetKernelLearner(init="linear", random_state=0).fit(X, pairs=pairs)
    assert vn.n_components_ == ld.n_components_ == 4
    assert vn.converged_ and vn.max_violation_ < 1e-3


@pytest.mark.parametrize("n, d", [(40, 4), (6, 30)], ids=["tall", "wide"])
@pytest.mark.parametrize("cls", ["LogDetKernelLearner", "VonNeumannKernelLearner"])
def test_linear_init_rank_spans_the_top_singular_directions_under_a_large_offset(n, d, cls):
    """init="linear" with rank < d projects on X's top right singular vectors (oracle:
    numpy's SVD of X). With X + 1e8 the second and later ones are 1e-8 of the first: from
    the eigenvectors of X^T X (or X X^T) they came out as rounding noise."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) * np.linspace(3.0, 0.5, d) + 1e8
    rank = 3
    Vt = np.linalg.svd(X, full_matrices=False)[2][:rank]
    model = getattr(npr, cls)(init="linear", rank=rank, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", npr.ConvergenceWarning)
        model.fit(X, pairs=np.array([[0, 1, 1], [2, 3, -1]]))
    P = model.P0_
    np.testing.assert_allclose(P.T @ P, np.eye(rank), rtol=0, atol=1e-12)
    np.testing.assert_allclose(P @ P.T, Vt.T @ Vt, rtol=0, atol=1e-6)
