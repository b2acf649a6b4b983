"""The pairs-only default of GeneralizedNystrom: quality and time against a baseline.

``docs/design/lam_selection.md``, ninth round. Six sets, 500 pairs drawn by
``labels_to_pairs`` among 100 random samples ("lab100") or among min(n / 2, 1000) ("spread"),
m = min(n / 10, 300), features scaled to [0, 1].

    python scripts/research/study_pairs_default.py quality TAG   # writes pairs_TAG.json
    python scripts/research/study_pairs_default.py compare OLD NEW
    python scripts/research/study_pairs_default.py time TAG      # GN / Nystrom, 3 rounds
    python scripts/research/study_pairs_default.py mixed TAG     # labels and pairs together

Run ``quality`` / ``time`` once per version of the package (``PYTHONPATH`` pointing at a
``git worktree`` of the baseline), from a directory outside the checkout. Quality: per fit,
1 - AUC of the learned kernel's cosine on 20,000 fresh pairs of unconstrained samples and the
error of a LinearSVC on ``transform`` trained on 100 constrained samples.
"""

import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_generalized import scale01  # noqa: E402
from datasets import load  # noqa: E402

SETS = ("splice", "digits", "german", "wdbc", "vehicle", "optdigits")
MODES = ("lab100", "spread")


def draw(X, y, mode, r):
    from nystrom_priors.side_info import labels_to_pairs

    n = X.shape[0]
    rng = np.random.default_rng(100 + r)
    lab = rng.choice(n, 100 if mode == "lab100" else min(n // 2, 1000), replace=False)
    yy = np.full(n, -1)
    yy[lab] = y[lab]
    return rng, lab, labels_to_pairs(yy, 500, random_state=2000 + r)


def quality(tag, repeats=3):
    from sklearn.metrics import roc_auc_score
    from sklearn.svm import LinearSVC

    import nystrom_priors as npr

    out = {}
    for name in SETS:
        X, y = load(name)
        X = scale01(X)
        n, m = X.shape[0], int(min(X.shape[0] // 10, 300))
        for mode in MODES:
            rows = []
            for r in range(repeats):
                rng, lab, pairs = draw(X, y, mode, r)
                unl = np.setdiff1d(np.arange(n), lab)
                fa, fb = rng.choice(unl, 20000), rng.choice(unl, 20000)
                fa, fb = fa[fa != fb], fb[fa != fb]
                row = []
                for est in (
                    npr.Nystrom(n_landmarks=m, random_state=r),
                    npr.GeneralizedNystrom(n_landmarks=m, random_state=r),
                ):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if isinstance(est, npr.GeneralizedNystrom):
                            est.fit(X, pairs=pairs)
                        else:
                            est.fit(X)
                        G = est.transform(X)
                    nr = np.linalg.norm(G, axis=1)
                    nr[nr == 0] = 1.0
                    cos = np.einsum("ij,ij->i", G[fa], G[fb]) / (nr[fa] * nr[fb])
                    auc_err = 1.0 - roc_auc_score(y[fa] == y[fb], cos)
                    svm = LinearSVC().fit(G[lab[:100]], y[lab[:100]])
                    row.append((auc_err, float(np.mean(svm.predict(G[unl]) != y[unl]))))
                rows.append(row)
                print(tag, name, mode, r, np.round(100 * np.array(row), 2).tolist(), flush=True)
            out[f"{name}/{mode}"] = rows
    with open(f"pairs_{tag}.json", "w") as fh:
        json.dump(out, fh)


def compare(old, new):
    a, b = (json.load(open(f"pairs_{t}.json")) for t in (old, new))
    means = []
    for k in a:
        A, B = 100 * np.array(a[k]), 100 * np.array(b[k])  # (repeats, 2 learners, 2 metrics)
        m = [A[:, 0, 0].mean(), A[:, 1, 0].mean(), B[:, 1, 0].mean()]
        m += [A[:, 0, 1].mean(), A[:, 1, 1].mean(), B[:, 1, 1].mean()]
        means.append(m)
        print(
            f"{k:18s} 1-AUC Nystrom {m[0]:6.2f} {old} {m[1]:6.2f} {new} {m[2]:6.2f} | "
            f"SVM Nystrom {m[3]:6.2f} {old} {m[4]:6.2f} {new} {m[5]:6.2f}"
        )
    print("mean", np.round(np.mean(means, axis=0), 2).tolist())


def _against_nystrom(X, m, y, pairs, rounds):
    """``(GN time, GN / Nystrom)``: the default GN's fit + transform with ``y`` / ``pairs``
    against Nystrom's, medians of ``rounds`` alternating rounds after an untimed one."""
    import nystrom_priors as npr

    def nys():
        return npr.Nystrom(n_landmarks=m, random_state=0).fit(X).transform(X)

    def gn():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = npr.GeneralizedNystrom(n_landmarks=m, random_state=0)
            return model.fit(X, y, pairs=pairs).transform(X)

    nys(), gn()
    tn, tg = [], []
    for _ in range(rounds):
        for fn, ts in ((nys, tn), (gn, tg)):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return np.median(tg), np.median(tg) / np.median(tn)


def timing(tag, rounds=3):
    for name in ("splice", "digits", "vehicle", "optdigits"):
        X, y = load(name)
        X = scale01(X)
        m = int(min(X.shape[0] // 10, 300))
        for mode in MODES:
            _, _, pairs = draw(X, y, mode, 0)
            tg, ratio = _against_nystrom(X, m, None, pairs, rounds)
            print(tag, name, mode, f"GN {tg:.3f} s, GN / Nystrom {ratio:.1f}", flush=True)


def timing_mixed(tag, rounds=3):
    """The labels-and-pairs default: 100 random labels (``bench_generalized``'s split 0) and
    300 pairs among 600 other samples; GN fit + transform against Nystrom's, medians of
    ``rounds`` alternating rounds."""
    from bench_generalized import protocol_split

    from nystrom_priors.side_info import labels_to_pairs

    for name in ("splice", "digits", "vehicle", "optdigits"):
        X, y = load(name)
        X = scale01(X)
        m, _lab, unl, yy = protocol_split(y, 0)
        other = np.random.default_rng(5).choice(unl, min(600, unl.size), replace=False)
        y2 = np.full(X.shape[0], -1)
        y2[other] = y[other]
        pairs = labels_to_pairs(y2, 300, random_state=0)
        tg, ratio = _against_nystrom(X, m, yy, pairs, rounds)
        print(tag, name, f"GN {tg:.3f} s, GN / Nystrom {ratio:.1f}", flush=True)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"quality": quality, "compare": compare, "time": timing, "mixed": timing_mixed}[cmd](*args)
