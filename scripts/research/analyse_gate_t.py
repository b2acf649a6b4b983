"""Capture and worst loss of lam rules on two groups of sets (the seventh round of
``docs/design/lam_selection.md``): fixed gates, one-sided paired t-tests, the paired
one-standard-error rule and argmin, on the shipped ramp loss and the shipped grid (even
exponents), with and without the race.

Capture is measured against the best candidate of the shipped grid (the one-step model's
downstream error at e = 0, -2, ..., -12 and the prior), not against the benchmark's grid,
so its figures differ from ``bench_generalized.py``'s and from the 13-exponent oracle of the
third round.

Run:  python scripts/research/analyse_gate_t.py SCORES19 GATE19 SCORES_MORE GATE_MORE
(score directories from ``study_margin_loss.py``, gate directories from ``study_gate.py``;
the second pair with ``--sets`` of ``bench_generalized.MORE_SETS``.)
"""

import glob
import os
import sys
import warnings

import numpy as np
from scipy import stats

warnings.simplefilter("ignore")
src = open(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "analyse_margin_loss.py")
).read()
defs = (
    src[src.index("def targets") : src.index("# sanity")]
    + src[src.index("EVEN =") : src.index("def gate(")]
)
g = {"np": np}
exec(defs, g)
loss, EVEN = g["loss"], g["EVEN"]


def load_group(sc, st):
    names = sorted(
        {os.path.basename(f)[:-4].rsplit("_", 1)[0] for f in glob.glob(os.path.join(sc, "*.npz"))}
    )
    D = {}
    for n in names:
        runs = []
        for s in range(5):
            fa, fb = os.path.join(sc, f"{n}_{s}.npz"), os.path.join(st, f"{n}_{s}.npz")
            if os.path.exists(fa) and os.path.exists(fb):
                runs.append((dict(np.load(fa)), dict(np.load(fb))))
        if runs:
            D[n] = runs
    return D


G = {
    "bench19": load_group(sys.argv[1], sys.argv[2]),
    "more": load_group(sys.argv[3], sys.argv[4]),
}
# cache the per-round mean losses on the even grid
for grp in G.values():
    for n, runs in grp.items():
        for i, (a, b) in enumerate(runs):
            Lr = loss(a, "nmramp")[..., EVEN]
            t = 100 * b["true"]
            runs[i] = (
                np.nanmean(Lr, axis=1),
                t[EVEN] if t.size == 14 else t,
            )  # (rounds, lams), (14,)


def rule_gate(M, gz):
    Dd = M - M[:, [-1]]
    se = Dd.std(0, ddof=1) / np.sqrt(M.shape[0])
    ok = Dd.mean(0) < -gz * se
    c = np.flatnonzero(ok)
    return M.shape[1] - 1 if c.size == 0 else c[np.argmin(M.mean(0)[c])]


def rule_1se(M, k=1.0):
    mean = M.mean(0)
    j = np.argmin(mean)
    Dd = M - M[:, [j]]
    se = Dd.std(0, ddof=1) / np.sqrt(M.shape[0])  # paired SE against the minimiser
    ok = mean <= mean[j] + k * se
    # larger lam = smaller index in EVEN (e=0 first), prior last (largest)
    if ok[-1]:
        return M.shape[1] - 1
    return int(np.flatnonzero(ok)[0])


def rule_argmin(M):
    return int(np.argmin(M.mean(0)))


def evaluate(grp, rule):
    caps, worst, per = [], -np.inf, {}
    for n, runs in grp.items():
        true = np.array([t for _, t in runs])  # (splits, 14)
        nys = true[:, -1].mean()
        best = true.mean(0).min()
        ch = [rule(M) for M, _ in runs]
        got = np.mean([true[i, j] for i, j in enumerate(ch)])
        worst = max(worst, got - nys)
        per[n[:7]] = got - nys
        if nys - best > 0.3:
            caps.append((nys - got) / (nys - best))
    return 100 * np.mean(caps), len(caps), worst, per


rules = {f"gate {z}": (lambda z: lambda M: rule_gate(M, z))(z) for z in (3.0, 2.5, 2.0, 1.5, 1.0)}
rules.update(
    {"1se paired": rule_1se, "0.5se paired": lambda M: rule_1se(M, 0.5), "argmin": rule_argmin}
)
for name, r in rules.items():
    out = []
    for gname, grp in G.items():
        c, k, w, per = evaluate(grp, r)
        out.append(f"{gname}: capture {c:4.0f}% ({k}) worst {w:+.2f}")
    allg = {**G["bench19"], **G["more"]}
    c, k, w, per = evaluate(allg, r)
    bad = {n: round(v, 2) for n, v in per.items() if v > 0.25}
    print(f"{name:14s} | " + " | ".join(out) + f" | all: {c:4.0f}% ({k}) worst {w:+.2f} {bad}")
print("---- with the race (first split z > r keeps a candidate for the second)")


def raced(M, gz, rz=1.0):
    F = M[:5]
    Dd = F - F[:, [-1]]
    z = -Dd.mean(0) / (Dd.std(0, ddof=1) / np.sqrt(5))
    keep = z > rz
    keep[-1] = True
    if not keep[:-1].any():
        return M.shape[1] - 1
    Dd = M - M[:, [-1]]
    se = Dd.std(0, ddof=1) / np.sqrt(M.shape[0])
    ok = (Dd.mean(0) < -gz * se) & keep
    c = np.flatnonzero(ok)
    return M.shape[1] - 1 if c.size == 0 else c[np.argmin(M.mean(0)[c])]


for gz in (3.0, 2.75, 2.5, 2.25):
    changed = sum(
        raced(M, gz) != rule_gate(M, gz)
        for grp in G.values()
        for runs in grp.values()
        for M, _ in runs
    )
    out = []
    for gname, grp in G.items():
        c, k, w, per = evaluate(grp, lambda M: raced(M, gz))
        out.append(f"{gname}: {c:4.0f}% worst {w:+.2f}")
    print(
        f"gate {gz}: choices changed by the race {changed} of {sum(len(r) for grp in G.values() for r in grp.values())} | "
        + " | ".join(out)
    )
print("---- per set, gate 3 vs 2.5 (default - Nystrom, points; negative = better)")
for gname, grp in G.items():
    _, _, _, p3 = evaluate(grp, lambda M: rule_gate(M, 3.0))
    _, _, _, p25 = evaluate(grp, lambda M: rule_gate(M, 2.5))
    print(gname, " ".join(f"{n}:{p3[n]:+.2f}/{p25[n]:+.2f}" for n in p3))
print("---- split subsets (capture per group), gate 3 / 2.5")
for sub in ([0, 1, 2], [3, 4], [0, 2, 4], [1, 3]):
    row = []
    for gname, grp in G.items():
        g2 = {n: [runs[s] for s in sub if s < len(runs)] for n, runs in grp.items()}
        a = evaluate(g2, lambda M: rule_gate(M, 3.0))
        b = evaluate(g2, lambda M: rule_gate(M, 2.5))
        row.append(f"{gname} {a[0]:.0f}/{b[0]:.0f}% worst {a[2]:+.2f}/{b[2]:+.2f}")
    print(sub, " | ".join(row))
print("---- per set at 2.75")
for gname, grp in G.items():
    _, _, _, p = evaluate(grp, lambda M: rule_gate(M, 2.75))
    print(gname, " ".join(f"{n}:{p[n]:+.2f}" for n in p))
print(
    "---- t critical values",
    {a: round(stats.t.ppf(1 - a, 9), 3) for a in (0.005, 0.01, 0.02, 0.025)},
)
for a in (0.005, 0.01, 0.02):
    gz = stats.t.ppf(1 - a, 9)
    out = []
    for gname, grp in G.items():
        c, k, w, p = evaluate(grp, lambda M: raced(M, gz))
        out.append(
            f"{gname}: {c:4.0f}% worst {w:+.2f} "
            + " ".join(f"{n}:{v:+.2f}" for n, v in p.items() if abs(v) > 0.05)
        )
    print(f"t-test {a}: z>{gz:.3f}\n  " + "\n  ".join(out))
gz = stats.t.ppf(0.99, 9)
for rz in (0.5, 1.0, 1.5):
    changed = sum(
        raced(M, gz, rz) != rule_gate(M, gz)
        for grp in G.values()
        for runs in grp.values()
        for M, _ in runs
    )
    print(f"t-gate {gz:.3f}, race {rz}: choices changed {changed} of 175")
