"""Per-sample held-out losses of the one-step CV and the downstream error along the lam grid.

For each (set, split) of ``scripts/bench_generalized.py``'s protocol, saves to OUT/NAME_SPLIT.npz:
``L`` (3, n_rounds, l, n_lams) per-sample held-out losses of four stratified 5-fold splits
(the default uses the first two), ``true`` (n_lams,) LinearSVC error of the one-step model at
each candidate (the prior last), and ``chosen`` (the default's exponent or inf). Rules are
scored on these files by ``analyse_gate.py``.

Run:  python scripts/research/study_gate.py OUT [--splits 5] [--sets NAME ...]
"""

import argparse
import copy
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_generalized import SETS, _svm_error, protocol_split, scale01  # noqa: E402
from datasets import load  # noqa: E402

import nystrom_priors as npr  # noqa: E402
from nystrom_priors._numba._lam_race import cv_losses  # noqa: E402
from nystrom_priors.generalized import _lam  # noqa: E402


def default_cv_inputs(X, yy, m, split):
    """Fit the default GN and return (model, the inputs of its ``_lam.select_lam`` call), the
    fold generator's state copied before the call."""
    seen = {}
    orig = _lam.select_lam

    def spy(PE, w, codes, n_classes, exps, rng, n_folds):
        seen.update(
            PE=PE.copy(),
            w=w.copy(),
            codes=codes.copy(),
            c=n_classes,
            exps=np.asarray(exps, float),
            rng=copy.deepcopy(rng),
            k=n_folds,
        )
        return orig(PE, w, codes, n_classes, exps, rng, n_folds)

    _lam.select_lam = spy
    try:
        g = npr.GeneralizedNystrom(n_landmarks=m, random_state=split).fit(X, yy)
    finally:
        _lam.select_lam = orig
    return g, seen


def true_errors(g, X, y, yy, exps):
    """``(errors, chosen)``: the LinearSVC error of the one-step model on the default fit
    ``g``'s landmarks at each exponent of ``exps`` and at the prior (last), and the exponent
    the default chose (inf: the prior)."""
    lab, unl = np.flatnonzero(yy >= 0), np.flatnonzero(yy < 0)
    true = []
    for e in list(exps) + [np.inf]:
        lam = g.lam_scale_ * 10.0**e if np.isfinite(e) else 1e300
        h = npr.GeneralizedNystrom(
            n_landmarks=g.landmarks_.shape[0],
            landmarks=g.landmarks_,
            width=g.width_,
            lam=lam,
            solver="onestep",
        ).fit(X, yy)
        true.append(_svm_error(h.transform(X), y, lab, unl))
    chosen = np.log10(g.lam_ / g.lam_scale_) if np.isfinite(g.lam_) else np.inf
    return true, chosen


def one(name, X, y, split, out):
    m, lab, unl, yy = protocol_split(y, split)
    g, seen = default_cv_inputs(X, yy, m, split)
    r = seen["rng"]
    folds = [_lam.stratified_folds(seen["codes"], seen["k"], r) for _ in range(4)]
    roles = np.stack([np.where(f == j, 2, 1) for f in folds for j in range(seen["k"])]).astype(
        np.int8
    )
    rel = np.concatenate([10.0 ** seen["exps"], [np.inf]])
    L = cv_losses(
        np.ascontiguousarray(seen["PE"]),
        seen["w"],
        seen["codes"].astype(np.int64),
        int(seen["c"]),
        roles,
        rel,
        _lam._RIDGE_ALPHA,
    )
    true, chosen = true_errors(g, X, y, yy, seen["exps"])
    np.savez(
        os.path.join(out, f"{name}_{split}.npz"),
        L=L,
        true=np.array(true),
        exps=seen["exps"],
        chosen=chosen,
        codes=seen["codes"],
    )


def race_splits(M, ends, r1, r2, narrow):
    """The rule's later splits replayed on stored round losses ``M`` (n_rounds, candidates,
    the prior last; split s is rounds ``ends[s - 1]:ends[s]``): ``(M, keeps)`` with NaN where
    a split did not score a candidate (``_lam.race`` at ``r1`` after the first split, ``r2``
    after more) and, per split scored, which candidates it scored."""
    M = M.copy()
    keeps = [~np.isnan(M[: ends[0]]).all(axis=0)]
    for s in range(1, len(ends)):
        keep = _lam.race(M[: ends[s - 1]], r1 if s == 1 else r2, narrow)
        if not keep[:-1].any():
            M[ends[s - 1] :] = np.nan
            break
        M[ends[s - 1] : ends[s], ~keep] = np.nan
        keeps.append(keep)
    return M, keeps


def for_each_split(names, n_splits, one, out):
    """``one(name, X, y, split, out)`` for every set (features scaled to [0, 1], classes
    coded 0 .. c-1) and split of the protocol, warnings silenced, a line per set done."""
    os.makedirs(out, exist_ok=True)
    warnings.simplefilter("ignore")
    for name in names:
        X, y = load(name)
        X = scale01(X)
        _, y = np.unique(y, return_inverse=True)
        for s in range(n_splits):
            one(name, X, y, s, out)
        print(name, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--sets", nargs="*", default=SETS)
    a = ap.parse_args()
    for_each_split(a.sets, a.splits, one, a.out)


if __name__ == "__main__":
    main()
