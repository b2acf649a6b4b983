"""Raw ridge scores of the one-step CV, held-out and training, for any loss on the margins.

For each (set, split) of ``scripts/bench_generalized.py``'s protocol, saves OUT/NAME_SPLIT.npz:
``SV`` / ``ST`` (rounds, l, n_lams, columns) held-out / training scores of the two 5-fold
splits the default uses (same folds as ``study_gate.py``), on the full grid e = 0 ... -12
and the prior last. ``analyse_margin_loss.py`` scores losses and rules on them with the
downstream errors saved by ``study_gate.py``.

Run:  python scripts/research/study_margin_loss.py OUT [--sets NAME ...]
"""

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_generalized import SETS, protocol_split, scale01
from datasets import load
from study_gate import default_cv_inputs

from nystrom_priors._numba._lam_cv import fold_scores
from nystrom_priors.generalized import _lam


def one(name, X, y, split, out):
    m, lab, unl, yy = protocol_split(y, split)
    _, seen = default_cv_inputs(X, yy, m, split)
    r = seen["rng"]
    k = seen["k"]
    codes = seen["codes"].astype(np.int64)
    c = int(seen["c"])
    folds = [_lam.stratified_folds(seen["codes"], k, r) for _ in range(2)]
    full = np.arange(-12.0, 0.5, 1.0)[::-1]
    rel = np.concatenate([10.0**full, [np.inf]])
    nc = 1 if c == 2 else c
    l = codes.size
    SV = np.full((2 * k, l, rel.size, nc), np.nan)
    ST = np.full((2 * k, l, rel.size, nc), np.nan)
    PE = np.ascontiguousarray(seen["PE"])
    t = 0
    for f in folds:
        for j in range(k):
            train = np.flatnonzero(f != j)
            test = np.flatnonzero(f == j)
            SV[t, test], ST[t, train] = fold_scores(
                PE, seen["w"], codes, c, train, test, rel, _lam._RIDGE_ALPHA
            )
            t += 1
    np.savez(os.path.join(out, f"{name}_{split}.npz"), SV=SV, ST=ST, codes=codes, exps=full)


ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--sets", nargs="*", default=SETS)
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
warnings.simplefilter("ignore")
for name in args.sets:
    X, y = load(name)
    X = scale01(X)
    _, y = np.unique(y, return_inverse=True)
    for s in range(5):
        one(name, X, y, s, args.out)
    print(name, flush=True)
