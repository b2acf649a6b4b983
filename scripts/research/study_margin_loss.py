"""Raw ridge scores of the one-step CV, held-out and training, for any loss on the margins.

For each (set, split) of ``scripts/bench_generalized.py``'s protocol, saves OUT/NAME_SPLIT.npz:
``SV`` / ``ST`` (rounds, l, n_lams, columns) held-out / training scores of the two 5-fold
splits the default uses (same folds as ``study_gate.py``), on the full grid e = 0 ... -12
and the prior last. ``analyse_margin_loss.py`` scores losses and rules on them with the
downstream errors saved by ``study_gate.py``.

Run:  python scripts/research/study_margin_loss.py OUT
"""

import os
import sys
import warnings

import numpy as np
from numba import njit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_generalized import SETS, protocol_split, scale01
from datasets import load
from study_gate import default_cv_inputs

from nystrom_priors._numba._lam_cv import _pm_targets, onestep_y, restricted_problem
from nystrom_priors.generalized import _lam


@njit(cache=False)
def fold_scores(PE, w, codes, n_classes, train, test, rel_lams, alpha, outV, outT):
    aT = PE[train]
    aV = PE[test]
    codes_T = codes[train]
    lT, r = aT.shape
    lV = aV.shape[0]
    Vc, mu, C, R, FT = restricted_problem(aT, w, codes_T, n_classes)
    p = mu.size
    FV = aV @ Vc
    targets = _pm_targets(codes_T, n_classes)
    mu_max = mu[-1] if p > 0 else 0.0
    B = np.ones((lT, p + 1))
    B[:, :p] = FT
    BtB = B.T @ B
    BtT = B.T @ targets
    S0Vc = np.empty((r, p))
    for i in range(r):
        for k in range(p):
            S0Vc[i, k] = Vc[i, k] / w[i]
    D = Vc.T @ S0Vc - C
    GV = aV @ S0Vc - FV @ C
    Yt = np.zeros((p + 1, p + 1))
    Yt[p, p] = 1.0
    HV = np.ones((lV, p + 1))
    for j in range(rel_lams.size):
        if p > 0 and np.isfinite(rel_lams[j]):
            Y = onestep_y(mu, C, R, rel_lams[j] * mu_max * mu_max)
        else:
            Y = C
        for a in range(p):
            for b in range(p):
                Yt[a, b] = D[a, b] + Y[a, b]
        A = BtB @ Yt
        for a in range(p + 1):
            A[a, a] += alpha
        HV[:, :p] = GV + FV @ Y
        coef = np.linalg.solve(A, BtT)
        P = HV @ coef
        PT = B @ (Yt @ coef)
        for i in range(lV):
            outV[test[i], j, :] = P[i]
        for i in range(lT):
            outT[train[i], j, :] = PT[i]


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
            fold_scores(PE, seen["w"], codes, c, train, test, rel, _lam._RIDGE_ALPHA, SV[t], ST[t])
            t += 1
    np.savez(os.path.join(out, f"{name}_{split}.npz"), SV=SV, ST=ST, codes=codes, exps=full)


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
warnings.simplefilter("ignore")
for name in SETS:
    X, y = load(name)
    X = scale01(X)
    _, y = np.unique(y, return_inverse=True)
    for s in range(5):
        one(name, X, y, s, out)
    print(name, flush=True)
