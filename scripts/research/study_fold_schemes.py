"""Fold schemes for lam="auto": k folds x s splits, replayed with the shipped rule.

For each (set, split) of ``scripts/bench_generalized.py``'s protocol, the default's own fold
generator (its state at the ``select_lam`` call, shifted by ``DRAW`` integers) deals each
scheme's stratified splits; every round is scored at every candidate of the grid
e = 0, -2, ..., -12 (``cv_losses``; largest lam first, as the estimator passes them, so that
ties in ``race`` and ``choose`` go where the default's do), saved to OUT/NAME_SPLIT.npy.
``--analyse`` replays each rule of ``RULES`` (first split at every candidate from the rule's
smallest exponent up, each later split raced on the splits before it, thresholds r1 after the
first split and r2 after more, optionally narrowed, then ``choose``), takes the downstream
error of the chosen candidate from ``study_grid_spacing.py``'s files (GRID_DIR: the one-step model's
LinearSVC error at every exponent, which does not depend on the folds) and reports capture,
worst loss against Nystrom and a cost model: per round, ``(p / 76)^3`` times the measured
per-candidate costs at p = 76 (pima) plus a round's preparation.

Run:  DRAW=0 python scripts/research/study_fold_schemes.py OUT [--more-sets]
      python scripts/research/study_fold_schemes.py OUT --analyse GRID_DIR
"""

import argparse
import copy
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_generalized import MORE_SETS, SETS, protocol_split  # noqa: E402
from study_gate import default_cv_inputs, for_each_split, race_splits  # noqa: E402

from nystrom_priors._numba._lam_race import cv_losses  # noqa: E402
from nystrom_priors.generalized import _lam  # noqa: E402

SCHEMES = [(5, 2), (4, 2), (3, 3), (3, 2), (4, 3)]
# (scheme, race after the first split, race after two or more, narrowed race (``race``'s
# ``narrow``), smallest exponent of the grid)
RULES = [
    ("5x2", 1.0, 1.0, False, -12),
    ("4x3", 1.0, 1.0, False, -12),
    ("4x3", 1.0, 2.0, False, -12),
    ("4x3", 1.5, 2.0, False, -12),
    ("4x2", 1.0, 1.0, False, -12),
    ("4x3", 1.5, 2.0, False, -10),  # twelfth round
    ("4x3", 1.5, 2.0, True, -10),
]
GRID = np.arange(0.0, -12.5, -2.0)
ALL = np.arange(-12.0, 0.5, 1.0)  # study_grid_spacing.py's exponents
# ms per task at p = 76 (pima, one thread), e = 0 ... -12 and the prior; a round's preparation
COST = np.array([0.084, 0.084, 0.22, 0.31, 0.46, 0.46, 0.46, 0.05])
PREP = 0.5
DRAW = int(os.environ.get("DRAW", "0"))


def rounds(codes, k, n_splits, rng):
    roles = []
    for _ in range(n_splits):
        folds = _lam.stratified_folds(codes, k, rng)
        roles += [np.where(folds == f, 2, 1).astype(np.int8) for f in range(k)]
    return np.stack(roles)


def one(name, X, y, split, out):
    m, lab, unl, yy = protocol_split(y, split)
    _, seen = default_cv_inputs(X, yy, m, split)
    rel = np.concatenate([10.0**GRID, [np.inf]])
    res = {}
    for k, s in SCHEMES:
        rng = copy.deepcopy(seen["rng"])
        rng.integers(1 << 30, size=DRAW)
        roles, ends = _lam.informative_rounds(rounds(seen["codes"], k, s, rng), seen["codes"])
        codes = seen["codes"].astype(np.int64)
        L = cv_losses(
            np.ascontiguousarray(seen["PE"]), seen["w"], codes, int(seen["c"]), roles, rel, 0.5
        )
        p = np.minimum((roles == 1).sum(axis=1), seen["w"].size)
        res[f"{k}x{s}"] = (_lam.round_means(L)[_lam._CRITERION], ends, p)
    np.save(os.path.join(out, f"{name}_{split}.npy"), np.array(res, dtype=object))


def replay(M, ends, p, r1, r2, narrow=False, e_min=-12):
    """(chosen column, modelled cost in ms) of the rule on one (set, split); the candidates
    below ``e_min`` are never scored."""
    M = M.copy()
    M[:, ~np.append(GRID >= e_min, True)] = np.nan
    M, keeps = race_splits(M, ends, r1, r2, narrow)
    u = (p / 76.0) ** 3
    starts = np.concatenate([[0], ends[:-1]])
    cost = sum(np.sum(u[a:b]) * (COST[k].sum() + PREP) for a, b, k in zip(starts, ends, keeps))
    return _lam.choose(M), cost


def analyse(out, grid_dir):
    cols = [int(np.flatnonzero(ALL == e)[0]) for e in GRID] + [ALL.size]
    names = sorted({os.path.basename(f)[:-4].rsplit("_", 1)[0] for f in glob.glob(out + "/*.npy")})
    print("| scheme | race | grid from | capture | worst vs Nystrom | mean modelled cost (ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    files = glob.glob(out + "/*.npy")
    if not files:
        raise SystemExit(f"no stored losses in {out}: run the study without --analyse first")
    dealt = np.load(files[0], allow_pickle=True).item()
    for scheme, r1, r2, narrow, e_min in RULES:
        if scheme not in dealt:  # a run that dealt only some schemes
            continue
        caps, worst, costs = [], -np.inf, []
        for name in names:
            got, T = [], []
            for i in range(5):
                M, ends, p = np.load(
                    os.path.join(out, f"{name}_{i}.npy"), allow_pickle=True
                ).item()[scheme]
                t = np.load(os.path.join(grid_dir, f"{name}_{i}.npz"))["true"] * 100
                T.append(t)
                j, c = replay(M, ends, np.asarray(p, float), r1, r2, narrow, e_min)
                got.append(t[cols][j])
                costs.append(c)
            T = np.array(T)
            nys, best, g = T[:, -1].mean(), T.mean(axis=0).min(), np.mean(got)
            worst = max(worst, g - nys)
            if nys - best > 0.3:
                caps.append((nys - g) / (nys - best))
        print(
            f"| {scheme} | {r1:g} / {r2:g}{', narrowed' if narrow else ''} | {e_min} | "
            f"{100 * np.mean(caps):.0f}% ({len(caps)} sets) | "
            f"{worst:+.2f} | {np.mean(costs):.1f} |"
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--more-sets", action="store_true")
    ap.add_argument("--analyse", metavar="GRID_DIR")
    a = ap.parse_args()
    if a.analyse:
        analyse(a.out, a.analyse)
        return
    for_each_split(MORE_SETS if a.more_sets else SETS, 5, one, a.out)


if __name__ == "__main__":
    main()
