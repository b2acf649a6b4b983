"""Downstream error of the one-step restricted model (B-only family) on all labels, per lam."""

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_fast_lambda import EXPS, load, scale01  # noqa: E402


def run(name, split, out_dir, key="oracle_pb"):
    import _lam_cv_numpy as lam_cv
    from sklearn.svm import LinearSVC

    import nystrom_priors as npr
    from nystrom_priors._generalized.psd import _factor
    from nystrom_priors.side_info import check_labels

    path = os.path.join(out_dir, f"{name}_{split}.npz")
    old = dict(np.load(path))
    X, y = load(name)
    X = scale01(np.asarray(X, float))
    _, y = np.unique(y, return_inverse=True)
    n = X.shape[0]
    m = int(min(n // 10, 300))
    rng = np.random.default_rng(1000 + split)
    lab = rng.choice(n, 100, replace=False)
    yy = np.full(n, -1)
    yy[lab] = y[lab]
    unl = np.setdiff1d(np.arange(n), lab)
    nys = npr.Nystrom(n_landmarks=m, random_state=split).fit(X)
    E = npr.extrapolate(X, nys.landmarks_, width=nys.width_)
    labels = check_labels(yy, n)
    El = E[labels.index]
    x, Q = np.linalg.eigh(nys.S0_)
    pos = x > x.max() * 1e-12
    U0, w = Q[:, pos], 1 / x[pos]
    idx = np.arange(labels.index.size)
    fold = lam_cv._Fold(El @ U0, w, idx, idx[:1], labels.codes, labels.n_classes, images=False)
    errs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in EXPS:
            S = U0 @ fold.S_of(fold.solution(10.0**e * fold.mu_max**2)) @ U0.T
            G = E @ _factor(S)
            errs.append(float(np.mean(LinearSVC().fit(G[lab], y[lab]).predict(G[unl]) != y[unl])))
    res = np.array(errs + [old["oracle"][-1]])
    np.save(path.replace(".npz", f".{key}.npy"), res)
    print(name, split, " ".join(f"{v * 100:5.1f}" for v in res), flush=True)


if __name__ == "__main__":
    out = sys.argv[1]
    for name in sys.argv[3:]:
        for s in range(int(sys.argv[2])):
            run(name, s, out)
