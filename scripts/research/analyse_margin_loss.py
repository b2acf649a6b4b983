"""Capture and worst loss of lam rules built on losses of the held-out margins.

Run:  python scripts/research/analyse_margin_loss.py SCORES_DIR GATE_DIR
(SCORES_DIR from ``study_margin_loss.py``, GATE_DIR from ``study_gate.py``.)
"""

import glob
import os
import sys
import warnings

import numpy as np

names = sorted(
    {
        os.path.basename(f)[:-4].rsplit("_", 1)[0]
        for f in glob.glob(os.path.join(sys.argv[1], "*.npz"))
    }
)
D = {}
for n in names:
    for s in range(5):
        a = dict(np.load(os.path.join(sys.argv[1], f"{n}_{s}.npz")))
        b = dict(np.load(os.path.join(sys.argv[2], f"{n}_{s}.npz")))
        D.setdefault(n, []).append((a, b))


def targets(codes, nc):
    if nc == 1:
        return np.where(codes == 1, 1.0, -1.0)[:, None]
    T = -np.ones((codes.size, nc))
    T[np.arange(codes.size), codes] = 1
    return T


# sanity: squared hinge
a, b = D["vehicle"][0]
T = targets(a["codes"], a["SV"].shape[-1])
h = np.maximum(0, 1 - T[None, :, None, :] * a["SV"]) ** 2
print("sanity", np.nanmax(np.abs(h.sum(-1) - b["L"][1, :10])))
EVEN = np.r_[np.arange(0, 13, 2), 13]


def margins(S, codes):
    nc = S.shape[-1]
    if nc == 1:
        t = np.where(codes == 1, 1.0, -1.0)
        return t[None, :, None] * S[..., 0]
    idx = np.arange(codes.size)
    Py = S[:, idx, :, codes]  # fancy -> shape (l, rounds, lams)? handle below
    Py = np.take_along_axis(S, codes[None, :, None, None].repeat(S.shape[2], 2), axis=3)[..., 0]
    O = S.copy()
    np.put_along_axis(O, codes[None, :, None, None].repeat(S.shape[2], 2), -np.inf, axis=3)
    return Py - O.max(-1)


def loss(a, kind):
    S = a["SV"]
    codes = a["codes"]
    nc = S.shape[-1]
    T = targets(codes, nc)[None, :, None, :]
    if kind == "sqh":
        return (np.maximum(0, 1 - T * S) ** 2).sum(-1)
    if kind == "hinge":
        return np.maximum(0, 1 - T * S).sum(-1)
    if kind == "sq":
        return ((S - T) ** 2).sum(-1)
    m = margins(S, codes)
    if kind == "err":
        return (m <= 0).astype(float) + np.where(np.isnan(m), np.nan, 0)
    if kind == "mhinge":
        return np.maximum(0, 1 - m)
    if kind == "msqh":
        return np.maximum(0, 1 - m) ** 2
    if kind == "mramp":
        return np.clip(1 - m, 0, 2)
    if kind.startswith("nmramp"):
        # margin normalised by the RMS training margin of the round and lam
        mt = margins(a["ST"], codes)
        sc = np.sqrt(np.nanmean(mt**2, axis=1, keepdims=True))
        return np.clip(1 - m / sc, 0, 2)
    if kind.startswith("nmsig"):
        mt = margins(a["ST"], codes)
        sc = np.sqrt(np.nanmean(mt**2, axis=1, keepdims=True))
        return 1 / (1 + np.exp(4 * m / sc))
    if kind == "sig":
        return 1 / (1 + np.exp(4 * m))
    raise ValueError(kind)


def gate(Lr, E, g, cond):
    # Lr (rounds, l, lams) per-sample losses, E same for 0/1
    M = np.nanmean(Lr, axis=1)
    Dd = M - M[:, [-1]]
    se = Dd.std(0, ddof=1) / np.sqrt(M.shape[0])
    Em = np.nanmean(E, axis=(0, 1))
    ok = Dd.mean(0) < -g * se
    if cond:
        ok &= Em < Em[-1]
    c = np.flatnonzero(ok)
    if c.size == 0:
        return M.shape[1] - 1
    return c[np.argmin(M.mean(0)[c])]


def evaluate(kind, g, cond, grid=EVEN):
    caps, worst, bad = [], -np.inf, []
    per = {}
    for n, runs in D.items():
        true = 100 * np.array([b["true"] for a, b in runs])
        nys = true[:, -1].mean()
        best = true.mean(0).min()
        ch = []
        for a, b in runs:
            Lr = loss(a, kind)[..., grid]
            E = loss(a, "err")[..., grid]
            ch.append(grid[gate(Lr, E, g, cond)])
        got = np.mean([true[i, j] for i, j in enumerate(ch)])
        worst = max(worst, got - nys)
        if got - nys > 0.2:
            bad.append(f"{n[:6]} {got - nys:+.2f}")
        if nys - best > 0.3:
            caps.append((nys - got) / (nys - best))
            per[n[:6]] = caps[-1]
    return np.mean(caps), worst, bad, per


warnings.simplefilter("ignore")
for kind in ["sqh", "hinge", "sq", "mhinge", "msqh", "mramp", "sig", "nmramp", "nmsig", "err"]:
    for cond in (True, False):
        row = []
        for g in (2.0, 2.5, 3.0, 3.5):
            c, w, bad, per = evaluate(kind, g, cond)
            row.append(f"g{g}: {100 * c:3.0f}% {w:+.2f}")
        print(f"{kind:7s} cond={int(cond)} | " + " | ".join(row))
print("----")
_base_loss = loss


def loss(a, kind):
    if kind.startswith("NM"):
        _, agg, shape = kind.split(":")
        S = a["SV"]
        codes = a["codes"]
        m = margins(S, codes)
        mt = margins(a["ST"], codes)
        if agg == "rms":
            sc = np.sqrt(np.nanmean(mt**2, axis=1, keepdims=True))
        elif agg == "mean":
            sc = np.nanmean(np.abs(mt), axis=1, keepdims=True)
        elif agg == "med":
            sc = np.nanmedian(np.abs(mt), axis=1, keepdims=True)
        elif agg == "rmsV":  # held-out RMS (transductive on the held-out fold)
            sc = np.sqrt(np.nanmean(m**2, axis=1, keepdims=True))
        u = m / sc
        if shape == "ramp2":
            return np.clip(1 - u, 0, 2)
        if shape == "ramp1":
            return np.clip(1 - u, 0, 1)
        if shape == "ramp0":
            return np.clip(-u, 0, 1)
        if shape == "hinge":
            return np.maximum(0, 1 - u)
        if shape == "sqh":
            return np.maximum(0, 1 - u) ** 2
        if shape == "sig":
            return 1 / (1 + np.exp(2 * u))
    return _base_loss(a, kind)


for agg in ["rms", "mean", "med", "rmsV"]:
    for shape in ["ramp2", "ramp1", "hinge", "sqh", "sig"]:
        for cond in (False, True):
            row = []
            for g in (2.0, 2.5, 3.0, 3.5):
                c, w, bad, per = evaluate(f"NM:{agg}:{shape}", g, cond)
                row.append(f"g{g}: {100 * c:3.0f}% {w:+.2f}")
            print(f"{agg:4s} {shape:5s} cond={int(cond)} | " + " | ".join(row))
print("====")


def evaluate2(kind, g, cond, splits, grid=EVEN):
    caps, worst, per = [], -np.inf, {}
    for n, runs in D.items():
        runs = [runs[s] for s in splits]
        true = 100 * np.array([b["true"] for a, b in runs])
        nys = true[:, -1].mean()
        best = true.mean(0).min()
        ch = [
            grid[gate(loss(a, kind)[..., grid], loss(a, "err")[..., grid], g, cond)]
            for a, b in runs
        ]
        got = np.mean([true[i, j] for i, j in enumerate(ch)])
        worst = max(worst, got - nys)
        per[n[:6]] = got - nys
        if nys - best > 0.3:
            caps.append((nys - got) / (nys - best))
    return np.mean(caps), worst, per


for kind, g, cond in [
    ("sqh", 3.0, True),
    ("sqh", 2.5, False),
    ("NM:rms:ramp2", 2.5, False),
    ("NM:rms:ramp2", 3.0, False),
    ("NM:rms:hinge", 3.0, False),
    ("NM:rms:ramp2", 3.0, True),
]:
    out = []
    for sp in ([0, 1, 2], [3, 4], [0, 2, 4], [1, 3]):
        c, w, per = evaluate2(kind, g, cond, sp)
        out.append(f"{100 * c:3.0f}% {w:+.2f}")
    c, w, per = evaluate2(kind, g, cond, range(5))
    print(f"{kind:13s} g{g} c{int(cond)} | " + " | ".join(out))
    print("    ", " ".join(f"{k}={v:+.2f}" for k, v in per.items()))
