"""Score lam-selection rules on the study_fast_lambda.py output (capture and worst loss)."""

import glob
import os
import sys

import numpy as np

d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/fl"
files = sorted(glob.glob(os.path.join(d, "*.npz")))
data = {}
SETS = os.environ.get("SETS")
for f in files:
    name, split = os.path.basename(f)[:-4].rsplit("_", 1)
    if SETS and name not in SETS.split():
        continue
    dd = dict(np.load(f))
    extra = f[:-4] + ".oracle_pb.npy"
    if os.path.exists(extra):
        dd["oracle_pb"] = np.load(extra)
    data.setdefault(name, []).append(dd)


def choose(L, rule, k):
    """L: (folds, lams) losses, last column = inf (prior). Returns index."""
    mean = L.mean(0)
    nf = L.shape[0]
    b = int(np.argmin(mean))
    if rule == "argmin":
        return b
    if rule.startswith("se"):
        f = float(rule[2:] or 1)
        se = L[:, b].std(ddof=1) / np.sqrt(nf)
        ok = np.flatnonzero(mean <= mean[b] + f * se)
        # larger lam = later index (grid ascending, inf last)
        return int(ok.max())
    if rule.startswith("pse"):
        f = float(rule[3:] or 1)
        D = L - L[:, [b]]
        se = D.std(0, ddof=1) / np.sqrt(nf)
        ok = np.flatnonzero(D.mean(0) <= f * se)
        return int(ok.max())
    if rule.startswith("gate"):
        # gateG[:sub]: move off the prior only if the paired improvement over inf > G SE
        g, _, sub = rule[4:].partition(":")
        g = float(g)
        D = L - L[:, [-1]]
        se = D.std(0, ddof=1) / np.sqrt(nf)
        sig = D.mean(0) < -g * se
        if not sig.any():
            return L.shape[1] - 1
        j = choose(L, sub or "argmin", k)
        if not sig[j]:
            # best among the significant ones
            cand = np.flatnonzero(sig)
            j = int(cand[np.argmin(mean[cand])])
        return j
    raise ValueError(rule)


def evaluate(crit, rule, n_splits_used):
    rows = []
    for name, runs in sorted(data.items()):
        errs, nys, orc = [], [], []
        for r in runs:
            L = r[f"cv_{crit}"]
            k = int(r["k"])
            L = L[: n_splits_used * k]
            cols = np.array(
                [int(c) for c in os.environ.get("COLS", "").split()] or range(L.shape[1])
            )
            j = cols[choose(L[:, cols], rule, k)]
            key = os.environ.get("ORACLE", "oracle")
            errs.append(r[key][j])
            orc.append(r[os.environ.get("BEST", "oracle")])
        orc = np.array(orc)
        mean_orc = orc.mean(0)
        rows.append((name, np.mean(errs), mean_orc[-1], mean_orc.min(), len(runs)))
    return rows


def summary(rows):
    caps, worst = [], -np.inf
    for name, e, ny, best, nr in rows:
        gain = ny - best
        worst = max(worst, e - ny)
        if gain > 0.003:
            caps.append((ny - e) / gain)
    return np.mean(caps), worst, len(caps)


RULES = (
    "argmin",
    "se0.5",
    "se1",
    "pse1",
    "gate1",
    "gate2",
    "gate3",
    "gate1:se1",
    "gate2:se1",
    "gate2:se0.5",
)
CRITS = tuple(os.environ.get("CRITS", "rxsq rxsqh rxerr pcsq pcsqh pcerr").split())
if __name__ == "__main__":
    print("sets:", {k: len(v) for k, v in data.items()})
    for ns in (1, 2):
        for crit in CRITS:
            for rule in RULES:
                cap, worst, nc = summary(evaluate(crit, rule, ns))
                print(
                    f"splits {ns} {crit:4s} {rule:7s} capture {cap * 100:6.1f}%  worst {worst * 100:+.2f}  ({nc} sets)"
                )
    if len(sys.argv) > 2:
        crit, rule, ns = sys.argv[2], sys.argv[3], int(sys.argv[4])
        for name, e, ny, best, nr in evaluate(crit, rule, ns):
            print(
                f"{name:14s} rule {e * 100:6.2f} nys {ny * 100:6.2f} best {best * 100:6.2f} n={nr}"
            )
