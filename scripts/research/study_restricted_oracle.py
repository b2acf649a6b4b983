"""Downstream error of the restricted-family GN models (exact restricted optimum; one
preconditioned projection) along the lam grid, next to the exact GN oracle of
study_fast_lambda.py (same landmarks, labels and grid)."""

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_fast_lambda import EXPS, RF, load, scale01  # noqa: E402


def run(name, split, out_dir):
    import _lam_cv_numpy as lam_cv
    from sklearn.svm import LinearSVC

    import nystrom_priors as npr
    from nystrom_priors._generalized.solve import _solve_lam
    from nystrom_priors.side_info import check_labels

    path = os.path.join(out_dir, f"{name}_{split}.npz")
    old = dict(np.load(path))
    if "oracle_rx" in old:
        return
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
    S0 = nys.S0_
    labels = check_labels(yy, n)
    El = E[labels.index]
    x, Q = np.linalg.eigh(S0)
    pos = x > x.max() * 1e-12
    prior = (Q[:, pos], 1 / x[pos])

    def err_of_S(S):
        from nystrom_priors._generalized.psd import _factor

        G = E @ _factor(S)
        return float(np.mean(LinearSVC().fit(G[lab], y[lab]).predict(G[unl]) != y[unl]))

    prob, C, Vb = RF(S0, prior, El, labels.codes, labels.n_classes)
    sc = prob.mu_max**2
    # one preconditioned projection (lam_cv's fold model) on all labels
    allidx = np.arange(labels.index.size)
    fold = lam_cv._Fold(El @ prior[0], prior[1], allidx, allidx[:1], labels.codes, labels.n_classes)
    Vc_full = None
    rx, pc = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in EXPS:
            Y = _solve_lam(prob, sc * 10.0**e, "auto", 1e-6, 2000)[0]
            rx.append(err_of_S(S0 + Vb @ (Y - C) @ Vb.T))
            Yt = fold.solution(10.0**e * fold.mu_max**2)
            pc.append(err_of_S(prior[0] @ fold.S_of(Yt) @ prior[0].T))
    old["oracle_rx"] = np.array(rx + [old["oracle"][-1]])
    old["oracle_pc"] = np.array(pc + [old["oracle"][-1]])
    np.savez(path, **old)
    print(
        name,
        split,
        " ".join(f"{v * 100:5.1f}" for v in old["oracle"]),
        "\n   rx",
        " ".join(f"{v * 100:5.1f}" for v in old["oracle_rx"]),
        "\n   pc",
        " ".join(f"{v * 100:5.1f}" for v in old["oracle_pc"]),
        flush=True,
    )


if __name__ == "__main__":
    out = sys.argv[1]
    for name in sys.argv[3:]:
        for s in range(int(sys.argv[2])):
            run(name, s, out)
