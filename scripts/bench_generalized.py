"""Benchmark GeneralizedNystrom; every figure is a ratio measured in the same run.

1. Solver iterations to a certified 1e-6 relative gap, preconditioned APG (default) vs the
   paper's Armijo gradient mapping, on m = 15..30 problems over the lam grid.
2. MNIST-sized fit + transform (70,000 x 784 synthetic Gaussian blobs, m = 1000, 100 labels)
   against scikit-learn's ``Nystroem`` fit + transform with the same m, in one run; our
   time is split into landmarks, lam selection / solve, and transform.
3. (``--many-labels``) lam="auto" with more labels than landmarks (20,000 x 50 blobs, 10
   classes): the held-out SVMs of the CV scored in feature form (the default there) against
   the kernel form on the same factor rows, in one run; and (section 4) labels with pairs at
   a fixed lam, the labels term compressed to m rows (the default) against its l x l form.
5. (``--partial-projection``) APG steps projected from the negative eigenpairs only (the
   default while few are negative) against a full eigendecomposition per step.
6. (``--cold-steps``) Newton's cold attempt before its continuation at small lam: 15 steps
   (the previous setting) against ``_COLD_STEPS`` (the default), Table-1 problems.
7. (``--certificate``) APG's certificate with its short cut (the default) against the full one.
8. (``--svm-form``) the held-out SVMs' Newton systems in the smaller of the p x p and
   |A| x |A| forms (the default) against the p x p form always.

Run:  python scripts/bench_generalized.py [--quick] [--many-labels | --labels-pairs |
      --partial-projection | --cold-steps | --certificate | --svm-form] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import write_lines  # noqa: E402



def _iterations(prob, e, solver, pgd_max_iter):
    from nystrom_priors._generalized import apg, ipm, problem, solve

    lam = prob.mu_max**2 * 10.0**e
    t = time.perf_counter()
    if solver == "newton":  # the default: dual Newton (continuation when cold, APG fallback)
        _, it, _, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-6, 5000)
    elif solver == "ipm":  # barrier Newton-CG steps; CG products reported next to them
        co = problem._Coords(prob, lam, precondition=True)
        _, it, _, ok = ipm._solve_ipm(co, problem._closed_form_V(co), tol=1e-6, max_iter=5000)
        return (it if ok else np.inf), time.perf_counter() - t, co.cg_products
    else:
        co = problem._Coords(prob, lam, precondition=solver == "apg")
        _, it, _, ok = apg._solve(
            co, problem._closed_form_V(co), accelerate=solver == "apg", armijo=solver == "pgd",
            tol=1e-6, max_iter=5000 if solver == "apg" else pgd_max_iter,
        )
    return (it if ok else np.inf), time.perf_counter() - t, None


def _labels_problem(X, yy, m):
    """The labels-only ``_Problem`` of a default fit (k-means landmarks, prior W^+)."""
    import nystrom_priors as npr
    from nystrom_priors._generalized.problem import _build_problem
    from nystrom_priors.side_info import check_labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gn = npr.GeneralizedNystrom(n_landmarks=m, lam=np.inf, random_state=0).fit(X, yy)
    E = gn._features_block(X).astype(np.float64)
    return _build_problem(gn.S0_, check_labels(yy, X.shape[0]), None, lambda r: E[r])


def _digits400():
    """sklearn digits, m = 400 k-means landmarks, 100 random labels (section 1's problem)."""
    from sklearn.datasets import load_digits

    Xd, yd = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    yy = np.full(yd.size, -1)
    lab = rng.choice(yd.size, 100, replace=False)
    yy[lab] = yd[lab]
    return _labels_problem(Xd, yy, 400)


def solver_iterations(lines: list[str], seeds: int, pgd_max_iter: int = 100000) -> None:
    from nystrom_priors._generalized import problem
    from nystrom_priors import extrapolate

    exps = [-4, -6, -8, -10, -12]
    solvers = ("newton", "apg", "ipm", "pgd")
    counts = {s: {e: [] for e in exps} for s in solvers}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        m, l, c = (15, 20, 30)[seed % 3], 30, 3
        Z = rng.normal(size=(m, 4))
        X = rng.normal(size=(l, 4))
        W = extrapolate(Z, Z, width=4.0)
        E = extrapolate(X, Z, width=4.0)
        lw, U = np.linalg.eigh(W)
        keep = lw > 1e-12 * lw.max()
        S0 = (U[:, keep] / lw[keep]) @ U[:, keep].T
        prob = problem._Problem(S0, E, np.eye(c)[rng.integers(c, size=l)])
        for e in exps:
            for solver in solvers:
                counts[solver][e].append(_iterations(prob, e, solver, pgd_max_iter)[0])
    lines += [
        "## 1. Iterations to a certified 1e-6 relative duality gap (labels)",
        "",
        f"### m = 15, 20, 30, 30 labels: median (max) over {seeds} problems",
        "",
        f"inf = not reached within {pgd_max_iter:g} iterations (pgd) or 5000 (apg, ipm, newton incl. its APG "
        "fallback). ipm counts barrier Newton steps (each: one eigendecomposition plus CG products).",
        "",
        "| solver \\ log10(λ/μ²max) | " + " | ".join(str(e) for e in exps) + " |",
        "| --- |" + " --- |" * len(exps),
    ]
    for solver in solvers:
        cells = []
        for e in exps:
            v = np.array(counts[solver][e], dtype=float)
            cells.append(f"{np.median(v):.0f} ({np.max(v):.0f})")
        lines.append(f"| {solver} | " + " | ".join(cells) + " |")
    lines.append("")
    # a realistic size: sklearn digits, m = 400 k-means landmarks, 100 labels
    prob = _digits400()
    lines += [
        "### sklearn digits, m = 400 (k-means), 100 labels: steps (seconds), one problem",
        "",
        "| solver \\ log10(λ/μ²max) | " + " | ".join(str(e) for e in exps) + " |",
        "| --- |" + " --- |" * len(exps),
    ]
    for solver in ("newton", "apg", "ipm"):
        cells = []
        for e in exps:
            it, sec, cg = _iterations(prob, e, solver, pgd_max_iter)
            cells.append(f"{it:.0f} ({sec:.1f} s" + ("" if cg is None else f", {cg} CG") + ")")
        lines.append(f"| {solver} | " + " | ".join(cells) + " |")
    lines.append("")
    print("\n".join(lines), flush=True)


def mnist_sized(lines: list[str], n: int, lam_rule) -> None:
    from sklearn.kernel_approximation import Nystroem

    import nystrom_priors as npr

    rng = np.random.default_rng(0)
    d, k, m = 784, 10, 1000
    centers = rng.normal(size=(k, d)) * 0.5
    y = rng.integers(k, size=n)
    X = centers[y] + rng.normal(size=(n, d))
    lab = np.concatenate([rng.choice(np.flatnonzero(y == c), 10, replace=False) for c in range(k)])
    yy = np.full(n, -1)
    yy[lab] = y[lab]
    b = npr.mean_squared_distance(X)
    # warm-up compiles / loads the jitted kernels outside the timings
    npr.Nystrom(n_landmarks=20, landmarks="uniform", width=b).fit(X[:500]).transform(X[:500])
    with warnings.catch_warnings():  # and the held-out SVM of lam="auto", k-means
        warnings.simplefilter("ignore")
        rows = np.unique(np.concatenate([lab, np.arange(400)]))
        npr.GeneralizedNystrom(n_landmarks=20, width=b, random_state=0).fit(X[rows], yy[rows])

    t = time.perf_counter()
    sk = Nystroem(gamma=1.0 / b, n_components=m, random_state=0).fit(X)
    sk.transform(X)
    t_sk = time.perf_counter() - t

    rows = []
    for landmarks, label, kw in lam_rule:
        if True:
            t0 = time.perf_counter()
            Z = npr.select_landmarks(X, m, method=landmarks, random_state=0)
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = npr.GeneralizedNystrom(n_landmarks=m, landmarks=Z, width=b, random_state=0, **kw).fit(X, yy)
            t2 = time.perf_counter()
            model.transform(X)
            t3 = time.perf_counter()
            total = t3 - t0
            rows.append(
                f"| {landmarks} | {label} | {t1 - t0:.1f} | {t2 - t1:.1f} ({model.n_iter_} it) | {t3 - t2:.1f} "
                f"| {total:.1f} | **{total / t_sk:.2f}x** |"
            )
            print(rows[-1], flush=True)
    lines += [
        f"## 2. MNIST-sized fit + transform: {n:,} x 784, m = 1000, 100 labels",
        "",
        f"scikit-learn `Nystroem(n_components=1000)` fit + transform: {t_sk:.1f} s (same run)",
        "",
        "| landmarks | lam | landmarks (s) | fit S (s) | transform (s) | total (s) | total / sklearn |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def _blobs(n_labels: int, n: int = 20000, d: int = 50, k: int = 10):
    """The sections 3-5 data: k Gaussian blobs, n_labels labeled at random (yy = -1 elsewhere)."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(k, d)) * 0.6
    y = rng.integers(k, size=n)
    X = centers[y] + rng.normal(size=(n, d))
    yy = np.full(n, -1)
    lab = rng.choice(n, n_labels, replace=False)
    yy[lab] = y[lab]
    return rng, X, y, yy, lab


def _timed(fn, spent: dict):
    """fn, adding its calls to spent["n"] and their seconds to spent["t"]."""
    def run(*args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        spent["n"] += 1
        spent["t"] += time.perf_counter() - t
        return out

    return run


def _compile(X, y) -> None:
    """One small lam="auto" fit, so that JIT compilation stays outside the timings."""
    import nystrom_priors as npr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        npr.GeneralizedNystrom(n_landmarks=10, random_state=0).fit(X[:300], np.where(np.arange(300) < 60, y[:300], -1))


def _alternate_auto_fits(m: int, n_labels: int, owner, attr: str, variants: dict, rounds: int = 2):
    """``lam="auto"`` fits on ``_blobs(n_labels)`` with ``owner.attr`` replaced by each of
    ``variants`` (name -> function) in turn, ``rounds`` times, in one process after a JIT
    warm-up. Returns ({name: [(fit s, s in attr, calls of attr)]}, {name: last model})."""
    import nystrom_priors as npr

    _rng, X, y, yy, _lab = _blobs(n_labels)
    _compile(X, y)
    original = getattr(owner, attr)
    spent = {"n": 0, "t": 0.0}
    res = {name: [] for name in variants}
    models = {}
    try:
        for _round in range(rounds):
            for name, fn in variants.items():
                setattr(owner, attr, _timed(fn, spent))
                spent.update(n=0, t=0.0)
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    models[name] = npr.GeneralizedNystrom(n_landmarks=m, random_state=0).fit(X, yy)
                res[name].append((time.perf_counter() - t, spent["t"], spent["n"]))
                print(m, n_labels, name, res[name][-1], flush=True)
    finally:
        setattr(owner, attr, original)
    return res, models


def many_labels(lines: list[str], cases) -> None:
    """lam="auto" with more training labels than landmarks: the held-out SVMs of the CV in
    kernel form, in feature form started from w = 0 (the previous default), and in feature
    form started from the previous lam's active sets (the default), same process, same folds."""
    import nystrom_priors as npr
    import nystrom_priors._linear_svm as lsvm
    from nystrom_priors._numba._svm import ovr_heldout_loss

    warm_form = lsvm.ovr_heldout_loss_linear
    spent = {"n": 0, "t": 0.0}

    def cold_form(*args, active=None):
        return warm_form(*args)

    def kernel_form(G_tr, G_te, codes_tr, codes_te, n_classes, C, max_iter, active=None):
        return ovr_heldout_loss(
            np.ascontiguousarray(G_tr @ G_tr.T) + 1.0, np.ascontiguousarray(G_te @ G_tr.T) + 1.0,
            codes_tr, codes_te, n_classes, C, max_iter,
        )

    forms = (("kernel form", kernel_form), ("feature form, cold", cold_form), ("feature form, warm", warm_form))
    rows = []
    for m, n_labels in cases:
        rng, X, y, yy, lab = _blobs(n_labels)
        _compile(X, y)
        result = {}
        for name, fn in forms:
            lsvm.ovr_heldout_loss_linear = _timed(fn, spent)
            spent.update(n=0, t=0.0)
            t = time.perf_counter()
            try:
                model = npr.GeneralizedNystrom(n_landmarks=m, random_state=0).fit(X, yy)
            finally:
                lsvm.ovr_heldout_loss_linear = warm_form
            result[name] = (time.perf_counter() - t, spent["t"], model.lam_ / model.lam_scale_, model.criterion_path_)
            print(m, n_labels, name, result[name][:3], flush=True)
        (tk, sk, ek, ck), (tc, sc, ec, cc), (tw, sw, ew, cw) = (result[name] for name, _ in forms)
        same = np.allclose(ck, cw, rtol=1e-8, equal_nan=True) and np.allclose(cc, cw, rtol=1e-8, equal_nan=True)
        rows.append(
            f"| {m} | {n_labels} | {sk:.1f} / {sc:.1f} / {sw:.1f} (**{sk / sw:.1f}x** / **{sc / sw:.1f}x**) "
            f"| {tk:.1f} / {tc:.1f} / {tw:.1f} (**{tk / tw:.1f}x** / **{tc / tw:.1f}x**) "
            f"| {np.log10(ek):.0f} / {np.log10(ec):.0f} / {np.log10(ew):.0f} | {same} |"
        )
    lines += [
        "## 3. lam=\"auto\" with more labels than landmarks: 20,000 x 50, 10 classes",
        "",
        "Held-out SVMs of the CV in kernel form (O(l^3) per Newton step), in feature form (O(l m^2),",
        "used when a training fold has more labels than landmarks) started from w = 0, and in feature",
        "form started from the previous lam's active sets (the default), same process, same folds.",
        "Ratios: kernel form / warm feature form, and cold / warm feature form.",
        "",
        "| m | labels | SVM time (s): kernel / feature cold / feature warm | whole fit (s): kernel / feature cold / feature warm "
        "| chosen log10(λ/μ²max) | same CV path (rtol 1e-8) |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def labels_and_pairs(lines: list[str], cases) -> None:
    """Labels (l > m) and pairs at a fixed lam: the labels term compressed to m rows
    (``_compress_labels``, the default) against the l x l form, same process, same data."""
    import nystrom_priors as npr
    from nystrom_priors._generalized import problem

    compress = problem._compress_labels
    rows = []
    for m, n_labels, n_pairs, e in cases:
        rng, X, y, yy, lab = _blobs(n_labels)
        free = np.setdiff1d(np.arange(y.size), lab)
        i, j = rng.choice(free, n_pairs), rng.choice(free, n_pairs)
        i, j = i[i != j], j[i != j]
        pairs = np.c_[i, j, np.where(y[i] == y[j], 1, -1)]
        scale = npr.GeneralizedNystrom(n_landmarks=m, lam=1.0, random_state=0).fit(X, yy, pairs=pairs).lam_scale_
        result = {}
        for name, fn in (("compressed", compress), ("l x l", lambda El, Y: (El, Y, 0.0))):
            problem._compress_labels = fn
            t = time.perf_counter()
            try:
                model = npr.GeneralizedNystrom(n_landmarks=m, lam=scale * 10.0**e, random_state=0).fit(X, yy, pairs=pairs)
            finally:
                problem._compress_labels = compress
            result[name] = (time.perf_counter() - t, model.n_iter_, model.converged_, model.S_)
            print(m, n_labels, n_pairs, e, name, result[name][:3], flush=True)
        (tc, ic, okc, Sc), (tl, il, okl, Sl) = result["compressed"], result["l x l"]
        diff = np.linalg.norm(Sc - Sl) / np.linalg.norm(Sl)
        rows.append(
            f"| {m} | {n_labels} | {pairs.shape[0]} | {e:g} | {tl:.1f} / {tc:.1f} (**{tl / tc:.1f}x**) "
            f"| {il} / {ic} | {okl} / {okc} | {diff:.1e} |"
        )
    lines += [
        "## 4. Labels (more than landmarks) and pairs at a fixed λ = μ²max·10^e: 20,000 x 50, 10 classes",
        "",
        "The labels term ||E_l S E_l^T - K*||² evaluated in l x l form vs compressed to m rows",
        "(thin SVD of E_l, the default), same process, same data; solver auto (APG, whose line",
        "search evaluates J).",
        "",
        "| m | labels | pairs | e | fit (s): l x l / compressed | APG steps | converged | ‖ΔS‖/‖S‖ |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def partial_projection(lines: list[str], cases) -> None:
    """APG along a warm-started path over the 13-point grid to a 1e-3 gap (as on the CV folds),
    labels only, l > m: steps projected from the negative eigenpairs only when few (the
    default) against the full eigendecomposition at every step, alternating in one process."""
    import nystrom_priors as npr
    from nystrom_priors._generalized import apg, problem, solve

    default = apg._FEW_NEGATIVE
    rows = []
    for m, n_labels in cases:
        _rng, X, y, _yy, lab = _blobs(n_labels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prior = npr.GeneralizedNystrom(n_landmarks=m, lam=np.inf, random_state=0).fit(X[:5000])
        El = prior._features_block(X[lab]).astype(np.float64)
        prob = problem._Problem(prior.S0_, El, np.eye(10)[y[lab]])
        lams = prob.mu_max**2 * 10.0 ** np.arange(0, -13, -1)
        times = {0.0: [], default: []}
        try:
            for frac in (0.0, default, 0.0, default):
                apg._FEW_NEGATIVE = frac
                t, S, steps = time.perf_counter(), None, 0
                for lam in lams:
                    S, it, _c, _ok, _ = solve._solve_lam(prob, lam, "apg", 1e-3, 300, S_warm=S)
                    steps += it
                times[frac].append(time.perf_counter() - t)
                print(m, n_labels, frac, steps, times[frac][-1], flush=True)
        finally:
            apg._FEW_NEGATIVE = default
        full, part = min(times[0.0]), min(times[default])
        rows.append(f"| {m} | {n_labels} | {steps} | {full:.1f} / {part:.1f} (**{full / part:.2f}x**) |")
    lines += [
        "## 5. APG steps projected from the negative eigenpairs only: 20,000 x 50, 10 classes",
        "",
        "Labels only, warm-started path over 13 λ to a certified 1e-3 gap (as on the CV folds). Full",
        f"eigh at every step vs `_psd_project_few_negative` while fewer than {default:g} m eigenvalues",
        "were negative at the previous step (the default); same steps, same iterates. Best of two",
        "alternating runs each.",
        "",
        "| m | labels | APG steps | path time (s): full / partial |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]


def cold_steps(lines: list[str], names, exps) -> None:
    """Newton's cold attempt before the continuation: 15 steps (previous) vs ``_COLD_STEPS``."""
    from nystrom_priors._generalized import solve
    from datasets import load
    from reproduce_zhang2012 import protocol_split

    problems = []
    for name in names:
        if name == "digits400":
            problems.append(("sklearn digits, m = 400, 100 random labels", _digits400()))
            continue
        X, y = load(name)
        _lab, _unl, yy, m = protocol_split(X, y, 0, 100)
        problems.append((f"{name} (Table-1 protocol, repeat 0), m = {m}", _labels_problem(X, yy, m)))
    default, previous = solve._COLD_STEPS, 15
    rows = []
    for title, prob in problems:
        cells = []
        for e in exps:
            lam = prob.mu_max**2 * 10.0**e
            res = {}
            for cold in (previous, default):
                solve._COLD_STEPS = cold
                try:
                    t = time.perf_counter()
                    _, it, _, ok, _ = solve._solve_lam(prob, lam, "newton", 1e-6, 5000)
                    res[cold] = (it if ok else np.inf, time.perf_counter() - t)
                finally:
                    solve._COLD_STEPS = default
            print(title, e, res, flush=True)
            (i15, t15), (i1, t1) = res[previous], res[default]
            cells.append(f"{i15:.0f} / {i1:.0f} ({t15:.1f} / {t1:.1f} s)")
        rows.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += [
        f"## 6. Newton's cold attempt at small λ: {previous} steps vs {default} (the default), labels, 1e-6 gap",
        "",
        "A cold start below μ²max·1e-4 gets a few Newton steps before the continuation down the grid",
        "(`_solve_lam`); steps in all (seconds), both settings in the same process, one thread.",
        "",
        "| problem \\ log10(λ/μ²max) | " + " | ".join(str(e) for e in exps) + " |",
        "| --- |" + " --- |" * len(exps),
        *rows,
        "",
    ]


def _newton_continuation(prob, lam, *, tol: float, cap: int):
    """The semismooth Newton down the grid from ``solve._HOMOTOPY_START * mu_max^2`` by factors of
    10, each stage to a 0.1 gap and warm-starting the next, then to ``tol`` at lam; returns (S,
    R, steps of all stages, gap, converged). The library's cold starts used it before the
    barrier dual (labels until 2dd81d9, pairs until c067cec); it runs on today's ``_Dual``
    (Lagrangian-form d, exact pairs Jacobi), so it is that algorithm, not that code."""
    from nystrom_priors._generalized import dual_newton, solve

    lam_k = solve._HOMOTOPY_START * prob.mu_max**2
    R_warm, it = None, 0
    while lam_k > 10.0 * lam:
        _S, R_warm, it_k, _c, _ok = dual_newton._solve_newton(prob, lam_k, R_warm, tol=0.1, max_iter=cap)
        it += it_k
        R_warm = solve._rescale_dual(R_warm, 0.1)
        lam_k *= 0.1
    if R_warm is not None:
        R_warm = solve._rescale_dual(R_warm, lam / lam_k)
    S, R, it_n, cert, ok = dual_newton._solve_newton(prob, lam, R_warm, tol=tol, max_iter=cap)
    return S, R, it + it_n, cert, ok


def _continuation_reference(prob, lam, tol=1e-6, max_iter=5000):
    """The cold small-lam Newton of the previous versions (before ``barrier_dual.py``): one cold
    step, then ``_newton_continuation``, and APG from its last iterate if the final stage cannot
    certify."""
    from nystrom_priors._generalized import apg, dual_newton, problem

    S, R, it, cert, ok = dual_newton._solve_newton(prob, lam, None, tol=tol, max_iter=1)
    if not ok:
        S, R, it_c, cert, ok = _newton_continuation(prob, lam, tol=tol, cap=100)
        it += it_c
    if not ok:
        co = problem._Coords(prob, lam, True)
        _V, it2, cert, ok = apg._solve(co, co.to_V(S), accelerate=True, armijo=False, tol=tol, max_iter=max_iter)
        it += it2
    return it, ok


def _pairs_problem(X, y, m, n_pairs):
    """The pairs-only ``_Problem`` of a default fit: k-means landmarks, prior W^+, ``n_pairs``
    must-link / cannot-link pairs drawn from all labels (``labels_to_pairs``, seed 0)."""
    import nystrom_priors as npr
    from nystrom_priors._generalized.problem import _build_problem
    from nystrom_priors.side_info import check_pairs, labels_to_pairs

    pairs = labels_to_pairs(y, n_pairs, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gn = npr.GeneralizedNystrom(n_landmarks=m, lam=np.inf, random_state=0).fit(X, pairs=pairs)
    E = gn._features_block(X).astype(np.float64)
    return _build_problem(gn.S0_, None, check_pairs(pairs, X.shape[0]), lambda r: E[r])


def _named_problem(name: str):
    """(title, problem) of sections 9 and 10: "digits400", a Table-1 data set (repeat 0's
    labels and landmarks) or "<data set>-pairs" (500 pairs of all its labels)."""
    from datasets import load
    from reproduce_zhang2012 import protocol_split

    if name == "digits400":
        return "sklearn digits, m = 400, 100 random labels", _digits400()
    if name.endswith("-pairs"):
        X, y = load(name[: -len("-pairs")])
        m = protocol_split(X, y, 0, 100)[3]
        return f"{name[:-6]}, m = {m}, 500 pairs of all labels", _pairs_problem(X, y, m, 500)
    X, y = load(name)
    _lab, _unl, yy, m = protocol_split(X, y, 0, 100)
    return f"{name} (Table-1 protocol, repeat 0), m = {m}", _labels_problem(X, yy, m)


def small_lam(lines: list[str], names, exps) -> None:
    """Cold solves at small lam: the default (Newton's cold step, then the barrier-smoothed dual
    Newton), the previous lam continuation and the primal barrier method, in one process."""
    from nystrom_priors._generalized import solve

    rows = []
    for name in names:
        title, prob = _named_problem(name)
        for e in exps:
            lam = prob.mu_max**2 * 10.0**e
            t = time.perf_counter()
            _S, it_d, _c, ok_d, _R = solve._solve_lam(prob, lam, "newton", 1e-6, 5000)
            t_d = time.perf_counter() - t
            t = time.perf_counter()
            it_c, ok_c = _continuation_reference(prob, lam)
            t_c = time.perf_counter() - t
            it_i, t_i = (np.nan, np.nan) if prob.has_pairs else _iterations(prob, e, "ipm", 0)[:2]
            cells = [f"{i if ok else np.inf:.0f} ({sec:.2f} s)" for i, ok, sec in
                     ((it_d, ok_d, t_d), (it_c, ok_c, t_c), (it_i, np.isfinite(it_i), t_i))]
            if prob.has_pairs:
                cells[2] = "(labels only)"
            print(title, e, cells, flush=True)
            rows.append(f"| {title} | {e} | " + " | ".join(cells) + f" | {t_c / t_d:.2f}x |")
    lines += [
        "## 9. Cold solves at small λ (labels, certified 1e-6 gap): steps (seconds), one thread",
        "",
        "default = `_solve_lam(..., \"newton\")`: one semismooth Newton step, then the",
        "barrier-smoothed dual Newton (`_generalized/barrier_dual.py`); continuation = the previous",
        "version's λ continuation with its APG fallback (`_continuation_reference`); ipm = the primal",
        "barrier method. The last column is continuation time / default time, same process.",
        "",
        "| problem | log10(λ/μ²max) | default | continuation | ipm | time ratio |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def cg_residual(lines: list[str], names, exps, etas=(0.1, 0.03, 0.01), rounds: int = 2) -> None:
    """Cold solves at small lam (the default Newton) with the barrier dual's labels CG residual
    ``_CG_LABELS`` at each of ``etas``, alternating in one process (best of ``rounds``)."""
    from nystrom_priors._generalized import barrier_dual, solve

    default = barrier_dual._CG_LABELS
    rows = []
    try:
        for name in names:
            title, prob = _named_problem(name)
            for e in exps:
                lam = prob.mu_max**2 * 10.0**e
                res = {eta: [] for eta in etas}
                for _round in range(rounds):
                    for eta in etas:
                        barrier_dual._CG_LABELS = eta
                        t = time.perf_counter()
                        _S, it, _c, ok, _R = solve._solve_lam(prob, lam, "newton", 1e-6, 5000)
                        res[eta].append((time.perf_counter() - t, it if ok else np.inf))
                ref = min(r[0] for r in res[etas[-1]])
                cells = [f"{res[eta][0][1]:.0f} ({min(r[0] for r in res[eta]):.2f} s, "
                         f"**{ref / min(r[0] for r in res[eta]):.2f}x**)" for eta in etas]
                print(title, e, cells, flush=True)
                rows.append(f"| {title} | {e} | " + " | ".join(cells) + " |")
    finally:
        barrier_dual._CG_LABELS = default
    lines += [
        "## 10. The barrier dual's CG residual on labels: cold solves at small λ, 1e-6 gap",
        "",
        "Steps (seconds, speed against the last column) of `_solve_lam(..., \"newton\")` with the",
        "barrier dual's CG stopped at each relative residual after a full step (after a",
        f"backtracked step it is always 1%); the default is {default:g}. Alternating in one process,",
        f"best of {rounds} runs each, one thread.",
        "",
        "| problem | log10(λ/μ²max) | " + " | ".join(f"{eta:g}" for eta in etas) + " |",
        "| --- | --- |" + " --- |" * len(etas),
        *rows,
        "",
    ]


def certificate_shortcut(lines: list[str], cases) -> None:
    """lam="auto" with more labels than landmarks (APG on the full fold problems): the
    certificate that returns once the multipliers 0 and P_psd(G) on V's null space certify tol
    (the default) against the one that always pays the eighs of G and V, alternating in one
    process, same folds."""
    from nystrom_priors._generalized import problem

    short = problem._Coords.certificate

    def full(self, V, G, eig=None, extra=None, null=None, tol=None):
        return short(self, V, G, eig, extra)

    rows = []
    for m, n_labels in cases:
        res, models = _alternate_auto_fits(
            m, n_labels, problem._Coords, "certificate", {"full": full, "short": short}
        )
        paths = {name: (model.cv_error_path_, model.lam_) for name, model in models.items()}
        (ff, cf, nf), (fs, cs, ns) = min(res["full"]), min(res["short"])
        same = bool(np.array_equal(paths["full"][0], paths["short"][0]) and paths["full"][1] == paths["short"][1])
        rows.append(
            f"| {m} | {n_labels} | {nf} / {ns} | {cf:.1f} / {cs:.1f} (**{cf / cs:.2f}x**) "
            f"| {ff:.1f} / {fs:.1f} (**{ff / fs:.2f}x**) | {same} |"
        )
    lines += [
        "## 7. The certificate's short cut: lam=\"auto\", more labels than landmarks, 20,000 x 50, 10 classes",
        "",
        "APG's certificate (every ~10 steps and when the iterates settle) tries the multipliers 0 and",
        "P_psd(G) on V's null space first, the null space taken from the clipped eigenvectors of the",
        "step's partial projection, and returns if they certify tol; the eighs of G and V (the third",
        "multiplier P_psd(G), V's exact null space) only otherwise. Against the certificate that",
        "always pays them, alternating in one process (best of two runs each).",
        "",
        "| m | labels | certificates: full / short | certificate time (s): full / short | whole fit (s): full / short | same CV path and λ |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def svm_form(lines: list[str], cases, rounds: int = 2) -> None:
    """lam="auto" with more labels than landmarks: the held-out SVMs' active-set minimiser in
    the smaller of the p x p and |A| x |A| forms (the default) against the p x p form always
    (the previous default), alternating in one process, same folds."""
    import scipy.linalg

    import nystrom_priors._linear_svm as lsvm

    smaller = lsvm._set_minimiser

    def primal_form(X, y, act, C):
        p = X.shape[1]
        XA = X[act]
        H = XA.T @ XA
        H *= 2.0 * C
        H.flat[:: p + 1] += 1.0
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), 2.0 * C * (XA.T @ y[act]))

    rows = []
    for m, n_labels in cases:
        res, models = _alternate_auto_fits(
            m, n_labels, lsvm, "_set_minimiser", {"p x p": primal_form, "smaller": smaller}, rounds
        )
        paths = {name: (model.criterion_path_, model.lam_) for name, model in models.items()}
        (fp, sp_, n_p), (fs, ss, n_s) = min(res["p x p"]), min(res["smaller"])
        a, b = paths["p x p"][0], paths["smaller"][0]
        diff = float(np.nanmax(np.abs(a - b) / np.abs(a))) if np.isfinite(a).any() else 0.0
        same = paths["p x p"][1] == paths["smaller"][1] and bool(np.array_equal(np.isnan(a), np.isnan(b)))
        rows.append(
            f"| {m} | {n_labels} | {n_p} / {n_s} | {sp_:.1f} / {ss:.1f} (**{sp_ / ss:.2f}x**) "
            f"| {fp:.1f} / {fs:.1f} (**{fp / fs:.2f}x**) | {same} | {diff:.1e} |"
        )
    lines += [
        "## 8. The held-out SVMs' Newton systems in the smaller form: lam=\"auto\", more labels than landmarks, 20,000 x 50, 10 classes",
        "",
        "Each Newton step of the feature-form SVM solves for the minimiser on its active set A:",
        "the p x p system (I + 2C X_A^T X_A) w = 2C X_A^T y_A (p = m + 1), or, when fewer samples are",
        "active than features, the |A| x |A| system of the push-through identity (the default).",
        "Against the p x p form always, alternating in one process (best of two runs each).",
        "",
        "| m | labels | SVM Newton systems: p x p / smaller | their time (s) | whole fit (s) | same λ and CV path skips | max relative CV-loss difference |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="GeneralizedNystrom benchmark")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "results", "bench_generalized.md"))
    parser.add_argument("--seeds", type=int, default=None, help="problems for the iteration count (default 9)")
    parser.add_argument("--pgd-max-iter", type=int, default=100000)
    parser.add_argument("--mnist-only", action="store_true", help="skip the iteration table (section 1)")
    parser.add_argument("--many-labels", action="store_true", help="only sections 3 and 4 (more labels than landmarks)")
    parser.add_argument("--labels-pairs", action="store_true", help="only section 4 (labels with l > m and pairs)")
    parser.add_argument("--partial-projection", action="store_true", help="only section 5 (APG's partial eigh)")
    parser.add_argument("--cold-steps", action="store_true", help="only section 6 (Newton's cold attempt)")
    parser.add_argument("--certificate", action="store_true", help="only section 7 (the certificate's short cut)")
    parser.add_argument("--svm-form", action="store_true", help="only section 8 (the held-out SVMs' Newton systems)")
    parser.add_argument("--small-lam", action="store_true", help="only section 9 (cold solves at small lam)")
    parser.add_argument("--cg-residual", action="store_true",
                        help="only section 10 (the barrier dual's labels CG residual)")
    args = parser.parse_args(argv)
    cmd = "python scripts/bench_generalized.py" + (" " + " ".join(argv) if argv else " " + " ".join(sys.argv[1:])).rstrip()
    lines = ["# bench_generalized", "", f"command: `{cmd}`", ""]
    seeds = args.seeds if args.seeds is not None else (3 if args.quick else 9)
    # (m, labels, pairs, e) of section 4, run alone or after section 3
    pair_cases = [(100, 400, 100, -6)] if args.quick else [(200, 1000, 300, -6), (200, 1000, 300, -8), (300, 2000, 500, -6)]
    # (m, labels) of the lam="auto" sections with more labels than landmarks (3, 7, 8)
    blob_cases = [(100, 400)] if args.quick else [(300, 1200), (500, 1000)]
    sections = {  # flag -> what it runs alone
        "cold_steps": lambda: cold_steps(
            lines, *((["digits49", "digits"], [-6, -10]) if args.quick
                     else (["digits", "splice", "digits400"], [-6, -8, -10, -11, -12]))
        ),
        "svm_form": lambda: svm_form(lines, blob_cases),
        "small_lam": lambda: small_lam(
            lines, *((["german", "digits", "german-pairs"], [-8, -12]) if args.quick
                     else (["german", "digits", "splice", "digits400", "german-pairs", "digits-pairs"],
                           [-8, -10, -11, -12]))
        ),
        "cg_residual": lambda: cg_residual(
            lines, *((["german"], [-6, -10]) if args.quick
                     else (["german", "digits", "splice", "digits400"], [-5, -6, -7, -8, -10, -12]))
        ),
        "certificate": lambda: certificate_shortcut(lines, blob_cases),
        "partial_projection": lambda: partial_projection(
            lines, [(200, 400)] if args.quick else [(500, 800), (1000, 1600)]
        ),
        "labels_pairs": lambda: labels_and_pairs(lines, pair_cases),
        "many_labels": lambda: (many_labels(lines, blob_cases), labels_and_pairs(lines, pair_cases)),
    }
    for flag, run in sections.items():
        if getattr(args, flag):
            run()
            write_lines(args.out, lines)
            return 0
    if not args.mnist_only:
        solver_iterations(lines, seeds, args.pgd_max_iter)
    rules = [
        ("uniform", "λ = μ²max·1e-6, apg", dict(lam="nka", lam_grid=[-6.0], solver="apg")),
        ("uniform", "λ = μ²max·1e-6, newton", dict(lam="nka", lam_grid=[-6.0], solver="newton")),
    ]
    if not args.quick:
        rules.append(("uniform", "auto (2 x 5-fold CV over 13 λ, restricted folds), solver auto", dict()))
        rules.append(("kmeans", "defaults: auto (2 x 5-fold CV over 13 λ, restricted folds), solver auto", dict()))
    mnist_sized(lines, 7000 if args.quick else 70000, rules)
    write_lines(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
