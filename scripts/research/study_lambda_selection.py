"""Compare rules for choosing GeneralizedNystrom's lam from the labeled samples only.

For each data set and repeat of the Zhang et al. (2012) Table-1 protocol (see
reproduce_zhang2012.py) this records, along the lam grid:

* the test error of a linear SVM on the factor rows of the kernel learned from all labels
  (what the reproduction scores; its minimum over the grid is the oracle);
* the same for the kernels averaged over two and three neighbouring lam (``test_avg2``,
  ``test_avg3``: a convex combination of PSD S, for the averaging rules);
* for four independent stratified 5-fold splits of the labeled samples (rules use the first 1, 2 or 4), with S refitted on each
  training fold (the way lam="auto" works), several held-out criteria: kernel-ridge 0/1 error
  and squared error, linear-SVM 0/1 error and hinge loss on the factor rows, nearest class
  mean (in the learned kernel) error and margin, and the centred alignment of the held-out x
  training block with the ideal kernel.

`--collect` writes one .npz per data set; `--analyse` scores selection rules on them: the gain
captured = (Nystrom - chosen) / (Nystrom - oracle), mean errors over repeats.

With ``--pairs N`` it records instead lam="auto"'s own pairs cross-validation (four splits,
whole paths) for the repeats of ``reproduce_zhang2012.py --pairs N``, and ``--analyse``
compares the smoothed and the plain argmin on it, scored by that reproduction's saved paths.

Run:  python scripts/study_lambda_selection.py --collect --repeats 10 --out /tmp/lamstudy
      python scripts/study_lambda_selection.py --analyse --out /tmp/lamstudy
      python scripts/study_lambda_selection.py --collect --folds 10 --repeats 10 --out /tmp/ls10
      python scripts/study_lambda_selection.py --out /tmp/lamstudy --compare-folds /tmp/ls10
      python scripts/study_lambda_selection.py --pairs 500 --collect --repeats 30 --out /tmp/lsp
      python scripts/study_lambda_selection.py --pairs 500 --analyse --out /tmp/lsp
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from datasets import load  # noqa: E402

CRITERIA = ("ridge01", "ridgesq", "svm01", "svmhinge", "ncm01", "ncmmargin", "align", "svmsqhinge")
LOWER_IS_BETTER = {
    "ridge01": True,
    "ridgesq": True,
    "svm01": True,
    "svmhinge": True,
    "ncm01": True,
    "ncmmargin": False,
    "align": False,
    "svmsqhinge": True,
}


def _svm(Ftr, ytr, Fte, yte):
    from sklearn.svm import LinearSVC

    clf = LinearSVC(C=1.0, max_iter=50000).fit(Ftr, ytr)
    dec = clf.decision_function(Fte)
    classes = clf.classes_
    if classes.size == 2:
        s = np.where(yte == classes[1], 1.0, -1.0)
        h = np.maximum(0.0, 1.0 - s * dec)
        err = np.sum((dec > 0) != (yte == classes[1]))
    else:
        S = np.where(yte[:, None] == classes[None, :], 1.0, -1.0)
        h = np.maximum(0.0, 1.0 - S * dec)
        err = np.sum(classes[np.argmax(dec, axis=1)] != yte)
    return float(err), float(h.sum()), float((h * h).sum())


def _ridge_cv_scores(
    K_tr: np.ndarray, K_te: np.ndarray, Y_tr: np.ndarray, codes_te: np.ndarray, alpha_rel: float
):
    """Held-out (errors, squared error) of a kernel ridge classifier with intercept."""
    n = K_tr.shape[0]
    H = np.eye(n) - 1.0 / n
    Kc = H @ K_tr @ H
    Kte_c = (K_te - K_tr.mean(0)[None, :]) - (K_te.mean(1)[:, None] - K_tr.mean())
    Kte_c = Kte_c @ H
    alpha = alpha_rel * max(np.trace(Kc) / n, 1e-12)
    Yc = Y_tr - Y_tr.mean(0)
    coef = np.linalg.solve(Kc + alpha * np.eye(n), Yc)
    pred = Kte_c @ coef + Y_tr.mean(0)
    errors = int(np.sum(np.argmax(pred, axis=1) != codes_te))
    onehot = np.zeros_like(pred)
    onehot[np.arange(pred.shape[0]), codes_te] = 1.0
    return errors, float(np.sum((pred - onehot) ** 2))


def fold_criteria(Etr, Ete, S, ytr, yte, codes_tr, codes_te, n_classes):
    from nystrom_priors._generalized.psd import _factor

    Ktr = Etr @ S @ Etr.T
    Kte = Ete @ S @ Etr.T
    Ytr = np.zeros((codes_tr.size, n_classes))
    Ytr[np.arange(codes_tr.size), codes_tr] = 1.0
    r01, rsq = _ridge_cv_scores(Ktr, Kte, Ytr, codes_te, 0.1)
    F = _factor(S)
    s01, shinge, ssq = _svm(Etr @ F, ytr, Ete @ F, yte)
    # nearest class mean in feature space: ||phi(x) - c_k||^2 = k(x,x) - 2 mean_j k(x, j) + const_k
    cm = (Kte @ Ytr) / Ytr.sum(0)
    ck = np.einsum("ic,ij,jc->c", Ytr, Ktr, Ytr) / Ytr.sum(0) ** 2
    score = 2 * cm - ck[None, :]  # larger = closer
    pred = np.argmax(score, axis=1)
    ncm01 = float(np.sum(pred != codes_te))
    own = score[np.arange(codes_te.size), codes_te]
    other = np.where(np.eye(n_classes, dtype=bool)[codes_te], -np.inf, score).max(1)
    scale = max(np.mean(np.diag(Ktr)), 1e-300)
    margin = float(np.mean((own - other) / scale))
    T = (codes_te[:, None] == codes_tr[None, :]).astype(float)
    Kc = Kte - Kte.mean(0, keepdims=True) - Kte.mean(1, keepdims=True) + Kte.mean()
    Tc = T - T.mean(0, keepdims=True) - T.mean(1, keepdims=True) + T.mean()
    den = np.linalg.norm(Kc) * np.linalg.norm(Tc)
    align = float(np.sum(Kc * Tc) / den) if den > 0 else 0.0
    return np.array([r01, rsq, s01, shinge, ncm01, margin, align, ssq])


# the six ways of taking two of the four CV splits: averaging over them averages over the fold draw
SPLIT_PAIRS = ((0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2))


def capture(nystrom: float, chosen: float, reference: float) -> float:
    """Share of the reference's gain over Nystrom that ``chosen`` captures (mean errors); NaN
    when the reference does not beat Nystrom (no headroom to capture)."""
    gain = nystrom - reference
    return (nystrom - chosen) / gain if gain > 0 else float("nan")


def smoothed_mean(losses: np.ndarray) -> np.ndarray:
    """NaN-mean over folds, then a 3-point moving average over the grid (ends repeated) on
    the scored prefix of the path: the smoothing lam="auto" used until 3d139c3."""
    from nystrom_priors._generalized.lambda_selection import _nanmean_columns

    mean = _nanmean_columns(losses)
    scored = int(np.count_nonzero(~np.isnan(mean)))
    if scored < 3:
        return mean
    out = np.full_like(mean, np.nan)
    out[:scored] = np.convolve(
        np.pad(mean[:scored], 1, mode="edge"), np.ones(3) / 3.0, mode="valid"
    )
    return out


def cv_choice(losses: np.ndarray, smooth: bool) -> int:
    """lam="auto"'s choice (plain argmin of the mean loss) or, ``smooth``, the former one."""
    from nystrom_priors._generalized.lambda_selection import _cv_choice

    return int(np.nanargmin(smoothed_mean(losses))) if smooth else _cv_choice(losses)


def race_keep(losses: np.ndarray, smooth: bool) -> int:
    """lam="auto"'s race (``_race_keep``) or, ``smooth``, the former one on the smoothed mean
    (one lam more, for the smoothing)."""
    from nystrom_priors._generalized.lambda_selection import _CV_RACE, _race_keep

    if not smooth:
        return _race_keep(losses)
    mean = smoothed_mean(losses)
    contending = np.flatnonzero(mean <= (1.0 + _CV_RACE) * np.nanmin(mean))
    return int(min(mean.size, contending.max() + 2))


def race_losses(C: np.ndarray, smooth: bool) -> tuple[np.ndarray, int, int]:
    """The losses lam="auto" scores, from held-out losses ``C`` (splits, folds, lams) on whole
    paths: the first split stops its path (``_path_exhausted``), each later one scores only the
    lam the splits before it leave in the race (``race_keep``). Returns the (splits * folds,
    lams) losses with NaN where skipped, where the first split stopped and where the last
    one stopped."""
    from nystrom_priors._generalized.lambda_selection import _path_exhausted

    n_splits, k, n = C.shape
    stop = n
    for j in range(n):
        if _path_exhausted(C[0, :, : j + 1].mean(axis=0)):
            stop = j + 1
            break
    losses = np.full((n_splits * k, n), np.nan)
    losses[:k, :stop] = C[0, :, :stop]
    keep = stop
    for s in range(1, n_splits):
        keep = min(keep, race_keep(losses[: s * k, :keep], smooth))
        losses[s * k : (s + 1) * k, :keep] = C[s, :, :keep]
    return losses, stop, keep


def guarded_choice(losses: np.ndarray, anchor: int, n_se: float, smooth: bool) -> int:
    """``anchor`` (eq. (12)'s choice) unless the CV losses reject it, else the CV choice.

    Rejected when unscored (the path stopped or raced before it) or when its held-out loss
    exceeds the CV choice's by more than ``n_se`` standard errors of the per-fold differences
    (``smooth``: each fold's row smoothed like the smoothed CV rule's mean; folds scoring both
    only).
    """
    best = cv_choice(losses, smooth)
    if anchor == best:
        return best
    rows = np.vstack([smoothed_mean(row[None, :]) for row in losses]) if smooth else losses
    d = rows[:, anchor] - rows[:, best]
    d = d[~np.isnan(d)]
    if d.size < 2:
        return best
    return anchor if d.mean() <= n_se * d.std(ddof=1) / np.sqrt(d.size) else best


def one_repeat(X, y, rep, n_splits=4, n_labels=100, n_folds=5):
    import nystrom_priors as npr
    from nystrom_priors._generalized.lambda_selection import _path_nka, _stratified_folds
    from nystrom_priors._generalized.problem import _build_problem
    from nystrom_priors._generalized.psd import _factor
    from nystrom_priors._generalized.solve import _solve_path
    from nystrom_priors._progress import Progress
    from nystrom_priors.side_info import check_labels

    sys.path.insert(0, os.path.dirname(__file__))
    from reproduce_zhang2012 import protocol_split, svm_error

    lab, unl, yy, m = protocol_split(X, y, rep, n_labels)
    gn = npr.GeneralizedNystrom(n_landmarks=m, lam=1.0, random_state=rep).fit(X, yy)
    common = dict(n_landmarks=m, landmarks=gn.landmarks_, width=gn.width_)
    nys = svm_error(npr.Nystrom(**common).fit(X, yy).transform(X), y, lab, unl)
    E = gn._features_block(X).astype(np.float64)
    labels = check_labels(yy, y.size)
    prob = _build_problem(gn.S0_, labels, None, lambda r: E[r])
    grid = np.arange(0, -13, -1.0)
    lams = prob.mu_max**2 * 10.0**grid
    kw = dict(solver="newton", tol=1e-6, max_iter=2000)
    # the path of lam="nka": eq. (12) per lam (its argmax is the nka choice) and the solutions
    with Progress(0, lams.size, "nka path") as pr:
        nka, sols = _path_nka(prob, lams, labels, kw, pr)
    test = np.array([svm_error(E @ _factor(S), y, lab, unl) for S, *_ in sols])
    # kernels averaged over neighbouring lam (a convex combination: PSD, rank <= m), for the
    # averaging rules: test_avg2[j] is (S_j + S_j+1) / 2, test_avg3[j] is (S_j + S_j+1 + S_j+2) / 3
    Ss = [S for S, *_ in sols]
    test_avg2 = np.array(
        [svm_error(E @ _factor((Ss[j] + Ss[j + 1]) / 2), y, lab, unl) for j in range(len(Ss) - 1)]
    )
    test_avg3 = np.array(
        [
            svm_error(E @ _factor((Ss[j] + Ss[j + 1] + Ss[j + 2]) / 3), y, lab, unl)
            for j in range(len(Ss) - 2)
        ]
    )
    El = E[labels.index]
    ylab = y[labels.index]
    crit = np.zeros((n_splits, n_folds, grid.size, len(CRITERIA)))
    fold_kw = dict(solver="apg", tol=1e-3, max_iter=300)
    for s in range(n_splits):
        folds = _stratified_folds(labels.codes, n_folds, np.random.default_rng([rep, s]))
        for f, te in enumerate(folds):
            tr = np.setdiff1d(np.arange(labels.index.size), te)
            p = _build_problem(gn.S0_, labels, None, lambda r: E[r], label_rows=tr)
            lam_f = p.mu_max**2 * 10.0**grid  # each fold on its own scale, as lam="auto" does
            for j, (_, S, *_r) in enumerate(_solve_path(p, lam_f, fold_kw)):
                crit[s, f, j] = fold_criteria(
                    El[tr],
                    El[te],
                    S,
                    ylab[tr],
                    ylab[te],
                    labels.codes[tr],
                    labels.codes[te],
                    labels.n_classes,
                )
    return dict(
        test=test, nys=nys, crit=crit, grid=grid, nka=nka, test_avg2=test_avg2, test_avg3=test_avg3
    )


def pairs_cv_losses(X, y, rep, n_pairs, n_splits=4, n_labels=100):
    """lam="auto"'s held-out pair losses (``n_splits`` splits, whole paths: no early stop, no
    race) and its choice, for repeat ``rep`` of ``reproduce_zhang2012.py --pairs n_pairs``.

    The fit is lam="auto" itself with more splits and racing off; the first two splits are
    the ones the two-split fit draws (same generator, drawn in order), so the smoothed
    choice on them reproduces the reproduction's own ``e_auto``.
    """
    from reproduce_zhang2012 import protocol_split

    import nystrom_priors as npr
    from nystrom_priors._generalized import lambda_selection
    from nystrom_priors.side_info import labels_to_pairs

    _lab, _unl, yy, m = protocol_split(X, y, rep, n_labels)
    pairs = labels_to_pairs(yy, n_pairs, random_state=2000 + rep)
    seen = []
    real = (lambda_selection._CV_SPLITS, lambda_selection._CV_RACE, lambda_selection._cv_choice)

    def recording_choice(losses):
        seen.append(losses.copy())
        return real[2](losses)

    lambda_selection._CV_SPLITS, lambda_selection._CV_RACE = n_splits, np.inf
    lambda_selection._cv_choice = recording_choice
    try:
        npr.GeneralizedNystrom(n_landmarks=m, lam="auto", random_state=rep).fit(X, pairs=pairs)
    finally:
        lambda_selection._CV_SPLITS, lambda_selection._CV_RACE, lambda_selection._cv_choice = real
    (losses,) = seen
    return losses.reshape(n_splits, -1, losses.shape[1])


def _repeats(names, repeats, out, first, one):
    """(name, [one(X, y, r) for the repeats r]) per data set, with progress on stdout."""
    os.makedirs(out, exist_ok=True)
    warnings.simplefilter("ignore")
    for name in names:
        X, y = load(name)
        reps = []
        for r in range(first, first + repeats):
            reps.append(one(X, y, r))
            print(name, r, flush=True)
        yield name, reps


def collect_pairs(names, repeats, out, n_pairs, first=0):
    one = lambda X, y, r: pairs_cv_losses(X, y, r, n_pairs)  # noqa: E731
    for name, cv in _repeats(names, repeats, out, first, one):
        np.savez(
            os.path.join(out, f"{name}_pairs{n_pairs}.npz"),
            cv=np.array(cv),
            first=first,
            n_pairs=n_pairs,
        )


def analyse_pairs(out, names, n_pairs, results):
    """The plain argmin (shipped) against the former smoothed one on the pairs CV losses,
    scored by the pairs reproduction's saved paths (``results/zhang2012_pairs<N>_<name>.npz``):
    the fresh pairs' AUC error and the labels' SVM error, averaged over the six pairs of the
    four splits. First checks that the shipped rule on splits 0-1 picks the saved e_auto (it
    should when the files come from a run of this version: the fit's race changes a choice
    rarely, 7 of 1800 on labels)."""
    print("| rule | " + " | ".join(names) + " | capture of the best fixed lam's AUC gain |")
    print("|" + " --- |" * (len(names) + 2))
    rows = {True: [], False: []}
    for name in names:
        cv = np.load(os.path.join(out, f"{name}_pairs{n_pairs}.npz"))["cv"]
        rz = np.load(os.path.join(results, f"zhang2012_pairs{n_pairs}_{name}.npz"))
        n = cv.shape[0]
        grid = rz["grid"]
        # the reproduction's lam="auto" ran the shipped rule (raced) on splits 0-1
        picks0 = [cv_choice(cv[r, :2].reshape(-1, grid.size), smooth=False) for r in range(n)]
        same = int(np.sum(grid[picks0] == rz["e_auto"][:n]))
        print(f"# {name}: the plain argmin on splits 0-1 picks the saved e_auto in {same} of {n}")
        auc, svm = rz["auc_path"][:n], rz["path"][:n]
        for smooth in (True, False):
            a, e = [], []
            for sp in SPLIT_PAIRS:
                picks = [
                    cv_choice(cv[r, list(sp)].reshape(-1, grid.size), smooth) for r in range(n)
                ]
                a.append(auc[np.arange(n), picks].mean())
                e.append(svm[np.arange(n), picks].mean())
            cap = capture(rz["auc_nystrom"][:n].mean(), np.mean(a), auc.mean(0).min())
            rows[smooth].append((100 * np.mean(a), 100 * np.mean(e), cap))
    for smooth, label in ((True, "smoothed (before 3d139c3)"), (False, "plain argmin (shipped)")):
        cells = [f"AUC {a:.2f} / SVM {e:.2f}" for a, e, _c in rows[smooth]]
        caps = [c for *_r, c in rows[smooth] if np.isfinite(c)]
        print(f"| {label} | " + " | ".join(cells) + f" | {100 * np.mean(caps):.0f}% |")


def collect(names, repeats, out, first=0, n_folds=5):
    one = lambda X, y, r: one_repeat(X, y, r, n_folds=n_folds)  # noqa: E731
    for name, reps in _repeats(names, repeats, out, first, one):
        np.savez(
            os.path.join(out, f"{name}.npz"),
            test=np.array([d["test"] for d in reps]),
            nys=np.array([d["nys"] for d in reps]),
            crit=np.array([d["crit"] for d in reps]),
            grid=reps[0]["grid"],
            nka=np.array([d["nka"] for d in reps]),
            test_avg2=np.array([d["test_avg2"] for d in reps]),
            test_avg3=np.array([d["test_avg3"] for d in reps]),
        )


def analyse(out, names):
    rules = {}
    data = {n: np.load(os.path.join(out, f"{n}.npz")) for n in names}
    # files collected before a criterion was added hold only the leading criteria
    n_crit = min(d["crit"].shape[-1] for d in data.values())

    def argbest(c, crit):
        return np.argmin(c) if LOWER_IS_BETTER[crit] else np.argmax(c)

    for crit_i, crit in enumerate(CRITERIA[:n_crit]):
        for splits in (1, 2, 4):

            def rule(C, nka, crit_i=crit_i, crit=crit, splits=splits):
                c = C[:splits, :, :, crit_i].reshape(-1, C.shape[2])
                return argbest(c.mean(0), crit)

            rules[f"{crit}/argmin/{splits}split"] = rule

            def rule_smooth(C, nka, crit_i=crit_i, crit=crit, splits=splits):
                c = C[:splits, :, :, crit_i].reshape(-1, C.shape[2]).mean(0)
                cs = np.convolve(np.pad(c, 1, mode="edge"), np.ones(3) / 3, mode="valid")
                return argbest(cs, crit)

            rules[f"{crit}/smooth3/{splits}split"] = rule_smooth
    hinge = CRITERIA.index("svmhinge")
    # one-standard-error rules toward the prior (the largest lam whose mean held-out hinge loss
    # is within k standard errors of the minimum, SE over the folds of all splits used)
    for splits in (2, 4):
        for k in (0.25, 0.5, 1.0):

            def rule_1se(C, nka, splits=splits, k=k):
                c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
                mean, se = c.mean(0), c.std(0, ddof=1) / np.sqrt(c.shape[0])
                j = int(np.argmin(mean))
                return int(np.flatnonzero(mean <= mean[j] + k * se[j]).min())  # grid descends

            rules[f"svmhinge/{k:g}se/{splits}split"] = rule_1se
    # plateau midpoints: the middle of the lam whose mean held-out hinge loss is within k
    # standard errors of the minimum (SE of the per-fold differences to the minimiser's
    # loss), ties toward the larger lam: a choice that does not hop between the ends of a
    # loss curve that is flat within its noise
    for splits in (2, 4):
        for k in (0.5, 1.0, 2.0):

            def rule_mid(C, nka, splits=splits, k=k):
                c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
                mean = c.mean(0)
                j = int(np.argmin(mean))
                se = (c - c[:, [j]]).std(0, ddof=1) / np.sqrt(c.shape[0])
                near = np.flatnonzero(mean <= mean[j] + k * se)
                return int(near[(near.size - 1) // 2])

            rules[f"svmhinge/mid{k:g}se/{splits}split"] = rule_mid
    # robust aggregations over the folds: a fold whose held-out loss blows up at small lam
    # weighs on the mean by its size; ranks and medians weigh every fold alike. medfold /
    # medsplit: the median of the per-fold / per-split argmins (lower median: the larger lam)
    for splits in (2, 4):

        def rule_rank(C, nka, splits=splits):
            c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
            ranks = np.argsort(np.argsort(c, axis=1, kind="stable"), axis=1, kind="stable")
            return int(np.argmin(ranks.mean(0)))

        rules[f"svmhinge/rank/{splits}split"] = rule_rank

        def rule_median(C, nka, splits=splits):
            c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
            return int(np.argmin(np.median(c, axis=0)))

        rules[f"svmhinge/median/{splits}split"] = rule_median

        def rule_medfold(C, nka, splits=splits):
            c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
            return int(np.sort(np.argmin(c, axis=1))[(c.shape[0] - 1) // 2])

        rules[f"svmhinge/medfold/{splits}split"] = rule_medfold

        def rule_medsplit(C, nka, splits=splits):
            c = C[:splits, :, :, hinge].mean(axis=1)
            return int(np.sort(np.argmin(c, axis=1))[(splits - 1) // 2])

        rules[f"svmhinge/medsplit/{splits}split"] = rule_medsplit
    # kernel averaging: instead of one S, the mean of the argmin's S and its neighbours' (a
    # convex combination: PSD, rank <= m). Indices past the grid address the averaged kernels'
    # test errors (``extended``: test, then test_avg2, then test_avg3)
    if all("test_avg2" in d for d in data.values()):
        n_grid = next(iter(data.values()))["test"].shape[1]

        def argmin_and_neighbour(mean):
            """The argmin of ``mean`` and its neighbour on the grid with the lower mean."""
            j = int(np.argmin(mean))
            return j, min((i for i in (j - 1, j + 1) if 0 <= i < mean.size), key=lambda i: mean[i])

        for splits in (2, 4):

            def rule_avg2(C, nka, splits=splits):
                j, nb = argmin_and_neighbour(
                    C[:splits, :, :, hinge].reshape(-1, C.shape[2]).mean(0)
                )
                return n_grid + min(j, nb)

            rules[f"svmhinge/avg2nb/{splits}split"] = rule_avg2

            def rule_avg3(C, nka, splits=splits):
                mean = C[:splits, :, :, hinge].reshape(-1, C.shape[2]).mean(0)
                j = int(np.clip(np.argmin(mean), 1, mean.size - 2))
                return 2 * n_grid - 1 + (j - 1)

            rules[f"svmhinge/avg3/{splits}split"] = rule_avg3

            def rule_avg2se(C, nka, splits=splits, k=1.0):
                # average with the better neighbour only when it is within k SE of the minimum
                c = C[:splits, :, :, hinge].reshape(-1, C.shape[2])
                j, nb = argmin_and_neighbour(c.mean(0))
                d = c[:, nb] - c[:, j]
                if d.mean() <= k * d.std(ddof=1) / np.sqrt(d.size):
                    return n_grid + min(j, nb)
                return j

            rules[f"svmhinge/avg2nb1se/{splits}split"] = rule_avg2se
    # lam="auto": 2 splits; the first stops its path once the loss has risen past its basin
    # (GeneralizedNystrom's _path_exhausted), the second races the first (_race_keep); the
    # choice should equal svmhinge/<smooth3|argmin>/2split. Shipped: argmin (smooth3 before
    # 3d139c3)
    skipped, skipped_first = [], []

    # the race of lam="auto": two splits (the first two of those collected)
    def rule_race(C, nka, record=False, smooth=True):
        losses, stop, keep = race_losses(C[:2, ..., hinge], smooth)
        if record:
            skipped_first.append(C.shape[2] - stop)
            skipped.append(C.shape[2] - keep)
        return cv_choice(losses, smooth)

    rules["svmhinge/smooth3/race"] = rule_race
    # lam="auto" on labels as shipped now: the same race on the plain mean, plain argmin
    rules["svmhinge/argmin/race"] = lambda C, nka: rule_race(C, nka, record=True, smooth=False)
    # eq. (12) alone (lam="nka"), and eq. (12) guarded by either raced CV rule
    # (guarded_choice): its lam unless the held-out hinge loss there is k SE above the CV choice
    if all("nka" in d for d in data.values()):
        rules["nka"] = lambda C, nka: int(np.argmax(nka))
        for k in (0.5, 1.0, 2.0):
            for smooth, name in ((True, "smooth3"), (False, "argmin")):

                def rule_guard(C, nka, k=k, smooth=smooth):
                    return guarded_choice(
                        race_losses(C[:2, ..., hinge], smooth)[0], int(np.argmax(nka)), k, smooth
                    )

                rules[f"nka|{name}/race {k:g}se"] = rule_guard
    header = (
        "| rule | " + " | ".join(names) + " | mean capture: oracle / fixed | worst vs Nystrom |"
    )
    print(header)
    print("|" + " --- |" * (len(names) + 3))
    for n, d in data.items():
        print(
            f"# {n}: Nystrom {100 * d['nys'].mean():.2f}, oracle(per-repeat) {100 * d['test'].min(1).mean():.2f}, "
            f"best fixed lam {100 * d['test'].mean(0).min():.2f} at e={d['grid'][np.argmin(d['test'].mean(0))]:.0f}"
        )
    scored = []
    for rname, rule in rules.items():
        caps, caps_fixed, worst, cells = [], [], np.inf, []
        for n, d in data.items():
            extended = d["test"]
            if "test_avg2" in d:
                extended = np.hstack([d["test"], d["test_avg2"], d["test_avg3"]])
            chosen = np.array(
                [
                    extended[r, rule(d["crit"][r], d["nka"][r] if "nka" in d else None)]
                    for r in range(d["test"].shape[0])
                ]
            )
            cap = capture(d["nys"].mean(), chosen.mean(), d["test"].min(1).mean())
            caps.append(cap)
            # a set whose best fixed lam does not beat Nystrom has no capture (NaN, left out)
            caps_fixed.append(capture(d["nys"].mean(), chosen.mean(), d["test"].mean(0).min()))
            worst = min(worst, d["nys"].mean() - chosen.mean())
            cells.append(f"{100 * chosen.mean():.2f} ({100 * cap:.0f}%)")
        scored.append(
            (
                np.mean(caps),
                f"| {rname} | "
                + " | ".join(cells)
                + f" | {100 * np.mean(caps):.0f}% / {100 * np.nanmean(caps_fixed):.0f}% | {100 * worst:+.2f} |",
            )
        )
    for _, line in sorted(scored, reverse=True):
        print(line)
    # the rules' dependence on the fold draw: each run on every pair of the four splits, and
    # whether racing changes the plain argmin's choice (against both splits' whole paths)
    for smooth, name in ((True, "smooth3"), (False, "argmin")):
        fixed_caps, same, total = [], 0, 0
        for pair in SPLIT_PAIRS:
            cells, caps = [], []
            for d in data.values():
                T = d["test"]
                picks = [
                    rule_race(d["crit"][r][list(pair)], None, smooth=smooth)
                    for r in range(T.shape[0])
                ]
                chosen = T[np.arange(T.shape[0]), picks]
                if not smooth:
                    full = [
                        int(np.argmin(d["crit"][r][list(pair), :, :, hinge].mean(axis=(0, 1))))
                        for r in range(T.shape[0])
                    ]
                    same += int(np.sum(np.array(picks) == np.array(full)))
                    total += T.shape[0]
                caps.append(capture(d["nys"].mean(), chosen.mean(), T.mean(0).min()))
                cells.append(f"{100 * chosen.mean():.2f}")
            fixed_caps.append(np.nanmean(caps))
            print(
                f"# svmhinge/{name}/race on splits {pair}: {' / '.join(cells)}, "
                f"capture of the best fixed lam's gain {100 * fixed_caps[-1]:.0f}%"
            )
        print(
            f"# svmhinge/{name}/race, mean over the six split pairs: {100 * np.mean(fixed_caps):.0f}%"
        )
        if not smooth:
            print(
                f"# svmhinge/argmin/race picks the whole paths' argmin in {same} of {total} cases"
            )
    if skipped:
        print(
            f"# svmhinge/argmin/race: the first split skips {np.mean(skipped_first):.1f} lam, "
            f"the second {np.mean(skipped):.1f} lam on average"
        )
    # how much the labels can tell the two best fixed lam apart: per repeat, does the held-out
    # hinge loss (splits 0-1, as lam="auto") rank them the way the test error does?
    from scipy.stats import pearsonr

    for n, d in data.items():
        T = d["test"]
        a, b = np.sort(np.argsort(T.mean(0))[:2])
        cv = d["crit"][:, :2, :, :, hinge].mean(axis=(1, 2))
        dt, dc = T[:, a] - T[:, b], cv[:, a] - cv[:, b]
        r, pval = pearsonr(dc, dt) if dt.std() > 0 and dc.std() > 0 else (np.nan, np.nan)
        g = d["grid"]
        print(
            f"# {n}: e = {g[a]:.0f} vs {g[b]:.0f} (the two best fixed lam): test error difference "
            f"{100 * dt.mean():+.2f} +- {100 * dt.std(ddof=1) / np.sqrt(dt.size):.2f} points; "
            f"correlation of the per-repeat CV and test differences r = {r:+.2f} (p = {pval:.2f}); "
            f"choosing between them at random captures "
            f"{100 * capture(d['nys'].mean(), T[:, [a, b]].mean(), T.mean(0).min()):.0f}%"
        )


def compare_folds(out, other, names):
    """The raced argmin (lam="auto"'s rule) with 1, 2 and 4 splits of the folds collected in
    ``out`` against those of ``other`` (the same repeats collected with another ``--folds``),
    each averaged over every draw of its splits from the four collected, scored by ``out``'s
    test errors; then paired differences over the repeats."""
    import itertools

    hinge = CRITERIA.index("svmhinge")
    res = {}
    loaded = [
        {n: np.load(os.path.join(where, f"{n}.npz")) for n in names} for where in (out, other)
    ]
    for data in loaded:
        k = next(iter(data.values()))["crit"].shape[2]
        for n_splits in (1, 2, 4):
            per = {}
            for n, d in data.items():
                T, C = d["test"], d["crit"][..., hinge]
                draws = list(itertools.combinations(range(C.shape[1]), n_splits))
                per[n] = np.array(
                    [
                        np.mean(
                            [
                                T[r, cv_choice(race_losses(C[r][list(sp)], False)[0], False)]
                                for sp in draws
                            ]
                        )
                        for r in range(T.shape[0])
                    ]
                )
            res[f"{k}-fold x {n_splits}"] = per
    ref = loaded[0]
    print(
        "| rule (mean over split draws) | "
        + " | ".join(names)
        + " | mean capture: oracle / fixed |"
    )
    print("|" + " --- |" * (len(names) + 2))
    for rname, per in res.items():
        cells, co, cf = [], [], []
        for n in names:
            T, ny, c = ref[n]["test"], ref[n]["nys"].mean(), per[n].mean()
            co.append(capture(ny, c, T.min(1).mean()))
            cf.append(capture(ny, c, T.mean(0).min()))
            cells.append(f"{100 * c:.2f} ({100 * cf[-1]:.0f}%)")
        print(
            f"| {rname} | "
            + " | ".join(cells)
            + f" | {100 * np.nanmean(co):.0f}% / {100 * np.nanmean(cf):.0f}% |"
        )
    keys = list(res)
    for a, b in itertools.combinations(keys, 2):
        if a.split(" x ")[0] == b.split(" x ")[0]:
            continue
        diffs = [100 * (res[b][n] - res[a][n]) for n in names]
        print(
            f"# {b} - {a}: "
            + ", ".join(
                f"{n} {d.mean():+.2f} +- {d.std(ddof=1) / np.sqrt(d.size):.2f}"
                for n, d in zip(names, diffs)
            )
        )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--analyse", action="store_true")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument(
        "--first-repeat",
        type=int,
        default=0,
        help="collect repeats first..first+repeats-1 (fresh repeats to check a rule)",
    )
    ap.add_argument(
        "--datasets", nargs="+", default=["german", "splice", "digits49", "digits27", "digits"]
    )
    ap.add_argument("--out", default="/tmp/lamstudy")
    ap.add_argument(
        "--folds",
        type=int,
        default=5,
        help="folds per CV split when collecting labels (lam='auto' uses cv=5)",
    )
    ap.add_argument(
        "--compare-folds",
        metavar="DIR",
        help="compare lam='auto''s raced rule on --out's folds with DIR's (the same "
        "repeats collected with another --folds)",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=None,
        metavar="N",
        help="pairs only: collect / analyse lam='auto''s pairs CV (N pairs per repeat, "
        "as reproduce_zhang2012.py --pairs N)",
    )
    ap.add_argument(
        "--results",
        default=os.path.join(os.path.dirname(__file__), "..", "..", "results"),
        help="with --pairs --analyse: where the pairs reproduction's npz files are",
    )
    a = ap.parse_args(argv)
    if a.pairs is not None:
        if a.collect:
            collect_pairs(a.datasets, a.repeats, a.out, a.pairs, a.first_repeat)
        if a.analyse:
            analyse_pairs(a.out, a.datasets, a.pairs, a.results)
        return
    if a.collect:
        collect(a.datasets, a.repeats, a.out, a.first_repeat, a.folds)
    if a.analyse:
        analyse(a.out, a.datasets)
    if a.compare_folds:
        compare_folds(a.out, a.compare_folds, a.datasets)


if __name__ == "__main__":
    main()
