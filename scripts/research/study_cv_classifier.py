"""Does the held-out classifier limit lam="auto"? The default's rounds scored by LinearSVC.

The cross-validation scores each round's one-step model with a ridge classifier (closed form,
shared by all lam of a round) where the benchmark's downstream task is ``LinearSVC(C=1)``. On
sets with many classes (vowel: 11, movement_libras: 15) the best fixed lam gains several
points and the default keeps the prior. This study asks whether the mismatch of the two
classifiers is the reason.

For each (set, split) of ``scripts/bench_generalized.py``'s protocol, the default's own CV
rounds (``cv_rounds`` + ``informative_rounds`` from the fold generator's state at the call)
are rebuilt with the NumPy reference model (``_lam_cv_numpy._Fold`` on the labeled rows' span,
the family the shipped kernel uses) at e = -12, -10, ..., 0 and the prior. Each round's model
gives features ``PE S^1/2`` to a ``LinearSVC(C=1)`` trained on the round's training rows; its
held-out 0/1 error and the shipped ramp on its margins (in units of the training rows' RMS
margin) are saved to OUT/NAME_SPLIT.npz, with the reference ridge classifier's ramp as a check
against the shipped kernel's losses. ``--analyse`` replays ``choose`` (all rounds) and the
raced rule on each criterion and reports capture and worst loss against Nystrom with the
downstream errors of ``study_grid_spacing.py``'s files (GRID_DIR, same rounds).

``--learning-curve NAME ...`` measures the other suspect, the rounds' size: a round trains on
three quarters of the labels, so it measures the gain of learning at 75 labels, not at the 100
the returned model learns from. It prints the one-step model's LinearSVC error at each
exponent and the prior with 50, 75, 100 and 150 labels (subsets of the protocol's 100, or
those and 50 more rows), five splits, and the gain of the best exponent over the prior.

Run:  python scripts/research/study_grid_spacing.py GRID_DIR [--more-sets | --sets ...]
      python scripts/research/study_cv_classifier.py OUT [--more-sets | --sets ...]
      python scripts/research/study_cv_classifier.py OUT --analyse GRID_DIR
      python scripts/research/study_cv_classifier.py - --learning-curve vowel vehicle
"""

import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lam_cv_numpy import _Fold  # noqa: E402
from bench_generalized import MORE_SETS, SETS, SMALL_SETS, protocol_split  # noqa: E402
from study_gate import default_cv_inputs, for_each_split, race_splits  # noqa: E402

from nystrom_priors.generalized import _lam  # noqa: E402

EXPS = np.arange(-12.0, 0.5, 2.0)
# the grid files' exponents (study_grid_spacing.ALL) and the columns of EXPS among them
GRID_ALL = np.arange(-12.0, 0.5, 1.0)
COLS = [int(np.flatnonzero(GRID_ALL == e)[0]) for e in EXPS] + [GRID_ALL.size]
CRITERIA = ("LinearSVC 0/1 error", "LinearSVC scaled ramp", "ridge scaled ramp (reference)")


def _svm_scores(svm, G, n_classes):
    """LinearSVC's scores with a column per class code (-inf for a class the round did not
    train on), or its signed decision value for two classes."""
    d = svm.decision_function(G)
    if n_classes == 2:
        return d
    P = np.full((G.shape[0], n_classes), -np.inf)
    if svm.classes_.size == 2:  # a round that trained on two of the classes
        P[:, svm.classes_[1]], P[:, svm.classes_[0]] = d, -d
    else:
        P[:, svm.classes_] = d
    return P


def _margins(P, codes, n_classes):
    """True class's score minus the best other one (binary: signed decision value)."""
    if n_classes == 2:
        return np.where(codes == 1, 1.0, -1.0) * (P if P.ndim == 1 else P[:, 0])
    rows = np.arange(codes.size)
    true = P[rows, codes]
    other = P.copy()
    other[rows, codes] = -np.inf
    return true - other.max(axis=1)


def _ramp(held_out, training):
    scale = np.sqrt(np.mean(training**2))
    return float(np.mean(np.clip(1.0 - held_out / scale, 0.0, 2.0)))


def one(name, X, y, split, out):
    from sklearn.svm import LinearSVC

    m, _, _, yy = protocol_split(y, split)
    _, seen = default_cv_inputs(X, yy, m, split)
    codes, PE, w, c = seen["codes"], seen["PE"], seen["w"], int(seen["c"])
    roles, ends = _lam.informative_rounds(
        _lam.cv_rounds(codes, seen["k"], w.size, seen["rng"]), codes
    )
    rel = np.append(10.0**EXPS, np.inf)
    res = np.full((len(CRITERIA), roles.shape[0], rel.size), np.nan)
    for t in range(roles.shape[0]):
        tr, te = np.flatnonzero(roles[t] == 1), np.flatnonzero(roles[t] == 2)
        fold = _Fold(PE, w, tr, te, codes, c, images=False)
        for j, r in enumerate(rel):
            Yt = fold.solution(r * fold.mu_max**2)
            v, Q = np.linalg.eigh(fold.S_of(Yt))
            G = PE @ (Q[:, v > 0] * np.sqrt(v[v > 0]))
            svm = LinearSVC().fit(G[tr], codes[tr])
            held = _margins(_svm_scores(svm, G[te], c), codes[te], c)
            res[0, t, j] = np.mean(held <= 0)
            res[1, t, j] = _ramp(held, _margins(_svm_scores(svm, G[tr], c), codes[tr], c))
            ridge_tr = _Fold(PE, w, tr, tr, codes, c, images=False)
            res[2, t, j] = _ramp(
                _margins(fold.scores(Yt), codes[te], c),
                _margins(ridge_tr.scores(Yt), codes[tr], c),
            )
    np.savez(os.path.join(out, f"{name}_{split}.npz"), res=res, ends=ends)


def _choice(M, ends, raced):
    if raced:
        M, _ = race_splits(M, ends, _lam._RACE_FIRST, _lam._RACE, _lam._RACE_NARROW)
    return _lam.choose(M)


def analyse(out, grid_dir):
    runs = {}
    for f in sorted(glob.glob(os.path.join(out, "*.npz"))):
        name, split = os.path.basename(f)[:-4].rsplit("_", 1)
        g = np.load(os.path.join(grid_dir, f"{name}_{split}.npz"))
        runs.setdefault(name, []).append((np.load(f), g))
    # the shipped losses of the same rounds (grid files), as a fourth criterion
    labels = (*CRITERIA, "shipped kernel (ridge scaled ramp)")
    print("| criterion | rule | " + " | ".join(g for g in ("19 sets", "16 further", "10 small")))
    print("| --- | --- | --- | --- | --- |")
    for k, label in enumerate(labels):
        for raced in (False, True):
            cells = []
            for names in (SETS, MORE_SETS, SMALL_SETS):
                caps, worst = [], -np.inf
                for name in (n for n in names if n in runs):
                    true = np.array([g["true"][COLS] for _, g in runs[name]]) * 100
                    nys, best = true[:, -1].mean(), true.mean(axis=0).min()
                    got = []
                    for (r, g), t in zip(runs[name], true):
                        M = r["res"][k] if k < len(CRITERIA) else g["means"][:, COLS]
                        got.append(t[_choice(np.ascontiguousarray(M), r["ends"], raced)])
                    worst = max(worst, np.mean(got) - nys)
                    if nys - best > 0.3:
                        caps.append((nys - np.mean(got)) / (nys - best))
                cells.append(f"{100 * np.mean(caps):.0f}% ({len(caps)}), {worst:+.2f}")
            print(f"| {label} | {'raced' if raced else 'all rounds'} | " + " | ".join(cells) + " |")


def learning_curve(names, n_splits):
    import warnings

    from bench_generalized import _svm_error, scale01
    from datasets import load

    import nystrom_priors as npr

    warnings.simplefilter("ignore")
    rel = np.append(EXPS, np.inf)
    print("| set | labels | " + " | ".join(f"e = {e:g}" for e in rel) + " | gain |")
    print("| --- | --- | " + " | ".join("---" for _ in rel) + " | --- |")
    for name in names:
        X, y = load(name)
        X = scale01(X)
        _, y = np.unique(y, return_inverse=True)
        for n_labels in (50, 75, 100, 150):
            errs = []
            for split in range(n_splits):
                m, lab, unl, _ = protocol_split(y, split)
                rng = np.random.default_rng(split)
                if n_labels <= lab.size:
                    keep = np.sort(rng.choice(lab, n_labels, replace=False))
                else:
                    more = rng.choice(unl, n_labels - lab.size, replace=False)
                    keep = np.sort(np.concatenate([lab, more]))
                yk = np.full(y.size, -1)
                yk[keep] = y[keep]
                test = np.setdiff1d(np.arange(y.size), keep)
                g = npr.GeneralizedNystrom(n_landmarks=m, random_state=split).fit(X, yk)
                row = []
                for e in rel:
                    h = npr.GeneralizedNystrom(
                        n_landmarks=m,
                        landmarks=g.landmarks_,
                        width=g.width_,
                        lam=g.lam_scale_ * 10.0**e if np.isfinite(e) else np.inf,
                        solver="onestep",
                    ).fit(X, yk)
                    row.append(100 * _svm_error(h.transform(X), y, keep, test))
                errs.append(row)
            mean = np.mean(errs, axis=0)
            cells = " | ".join(f"{v:.2f}" for v in mean)
            print(f"| {name} | {n_labels} | {cells} | {mean[-1] - mean[:-1].min():.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sets", nargs="*", default=SETS)
    ap.add_argument("--more-sets", action="store_true")
    ap.add_argument("--small-sets", action="store_true")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--analyse", metavar="GRID_DIR")
    ap.add_argument("--learning-curve", nargs="+", metavar="NAME")
    a = ap.parse_args()
    if a.learning_curve:
        learning_curve(a.learning_curve, a.splits)
        return
    if a.analyse:
        analyse(a.out, a.analyse)
        return
    names = MORE_SETS if a.more_sets else SMALL_SETS if a.small_sets else a.sets
    for_each_split(names, a.splits, one, a.out)


if __name__ == "__main__":
    main()
