"""k-means++ seeding for landmarks: batched rejection sampling against one pass per centre.

``select_landmarks(method="kmeans")`` seeds Lloyd with k-means++ on a float32 sample of 10 m
rows. Plain k-means++ streams the sample once per centre (memory-bound); the library draws new
centres by rejection from stale distance bounds and folds them in by batches
(``landmarks._kmeanspp``). Both draw from the same law; this script times, in one process and
alternating rounds:

* ``batched``: the library's ``landmarks._kmeanspp``;
* ``one pass per centre``: the previous seeding (kept here as the baseline: one jitted pass over
  the sample per centre, the cumulative sum searched in the same pass);
* scikit-learn's ``kmeans_plusplus`` with ``n_local_trials=1`` (plain k-means++) and with its
  default greedy trials (2 + log k candidates per centre, each a BLAS pass).

It reports the median time over the rounds, the mean k-means++ potential of the seeds (sum of
squared distances of the sample to its nearest seed; the law is the same, so only noise should
separate the first three) and the batched seeding's candidates per pick.

Usage: ``OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python
scripts/research/study_kmeans_seeding.py [--rounds 3] [--out results/study_kmeans_seeding.md]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_lines


@njit(parallel=True, fastmath={"reassoc", "contract"}, cache=True, nogil=True)
def _update_closest(X, c, closest, first):
    n, d = X.shape
    for i in prange(n):
        s = X[c, 0] - X[c, 0]
        for k in range(d):
            v = X[i, k] - X[c, k]
            s += v * v
        if first or s < closest[i]:
            closest[i] = s


@njit(cache=True, nogil=True)
def _one_pass_per_centre(X, first, uniforms, out):
    """The previous seeding (before the batched one): its loop, without the fallback for the
    case where every row coincides with a centre (never reached on these samples)."""
    n = X.shape[0]
    m = out.shape[0]
    closest = np.empty(n, dtype=np.float64)
    out[0] = first
    _update_closest(X, first, closest, True)
    for c in range(1, m):
        pot = 0.0
        for i in range(n):
            pot += closest[i]
        target = uniforms[c - 1] * pot
        acc = 0.0
        pick = n - 1
        for i in range(n):
            acc += closest[i]
            if acc > target and closest[i] > 0.0:
                pick = i
                break
        out[c] = pick
        _update_closest(X, pick, closest, False)


def _baseline(X, k, rng):
    out = np.empty(k, dtype=np.int64)
    _one_pass_per_centre(X, int(rng.integers(X.shape[0])), rng.random(k - 1), out)
    return out


def _potential(X, C) -> float:
    X64, C64 = X.astype(np.float64), C.astype(np.float64)
    best = np.full(X.shape[0], np.inf)
    for s in range(0, C64.shape[0], 256):
        Cb = C64[s : s + 256]
        D = (X64**2).sum(1)[:, None] + (Cb**2).sum(1) - 2.0 * X64 @ Cb.T
        best = np.minimum(best, D.min(axis=1))
    return float(np.maximum(best, 0).sum())


def _samples():
    """(name, float32 centred sample, k): what select_landmarks hands to the seeding."""
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(0)
    d, k = 784, 10
    centers = rng.normal(size=(k, d)) * 0.5
    y = rng.integers(k, size=10000)
    mnist = centers[y] + rng.normal(size=(10000, d))
    digits = load_digits().data
    blobs = rng.normal(size=(30, 8)) * 5
    low = blobs[rng.integers(30, size=20000)] + rng.normal(size=(20000, 8))
    out = []
    for name, X, k in (
        ("MNIST-sized sample 10,000 x 784", mnist, 1000),
        ("sklearn digits 1797 x 64", digits, 180),
        ("30 blobs 20,000 x 8", low, 2000),
    ):
        out.append((name, (X - X.mean(0)).astype(np.float32), k))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from sklearn.cluster import kmeans_plusplus

    from nystrom_priors import landmarks
    from nystrom_priors._numba import _kmeans as kk

    calls = {"candidates": 0}
    sample = kk.sample_centres

    def counting(*a):
        c, used = sample(*a)
        calls["candidates"] += used // 2
        return c, used

    methods = {
        "batched (this version)": lambda X, k, s: landmarks._kmeanspp(
            X, k, np.random.default_rng(s)
        ),
        "one pass per centre (previous)": lambda X, k, s: _baseline(X, k, np.random.default_rng(s)),
        "sklearn kmeans_plusplus, 1 trial": lambda X, k, s: kmeans_plusplus(
            X, k, random_state=s, n_local_trials=1
        )[1],
        "sklearn kmeans_plusplus, greedy (default)": lambda X, k, s: kmeans_plusplus(
            X, k, random_state=s
        )[1],
    }
    lines = [
        "# study_kmeans_seeding: k-means++ seeding",
        "",
        (
            f"Command: `python scripts/research/study_kmeans_seeding.py --rounds {args.rounds}`; median seconds "
            "over the rounds (methods alternate within a round, one process, JIT compiled "
            "before), mean potential of the seeds over the rounds (a different seed per round)."
        ),
        "",
    ]
    for name, X, k in _samples():
        for fn in methods.values():  # compile / warm up
            fn(X[:500], 20, 0)
        times = {m: [] for m in methods}
        pots = {m: [] for m in methods}
        kk.sample_centres = counting
        calls["candidates"] = 0
        try:
            for r in range(args.rounds):
                for m, fn in methods.items():
                    t = time.perf_counter()
                    idx = fn(X, k, r)
                    times[m].append(time.perf_counter() - t)
                    if m.startswith("batched"):
                        assert len(np.unique(idx)) == k
                    pots[m].append(_potential(X, X[idx]))
        finally:
            kk.sample_centres = sample
        base = np.median(times["one pass per centre (previous)"])
        lines += [
            f"## {name}, k = {k}",
            "",
            f"Batched: {calls['candidates'] / (args.rounds * (k - 1)):.3f} candidates per pick.",
            "",
            "| seeding | time (s) | time / one pass per centre | potential (mean) |",
            "| --- | --- | --- | --- |",
        ]
        for m in methods:
            t = np.median(times[m])
            lines.append(f"| {m} | {t:.3f} | {t / base:.2f}x | {np.mean(pots[m]):.5g} |")
        lines.append("")
        print("\n".join(lines[-(len(methods) + 6) :]), flush=True)
    if args.out is not None:
        write_lines(str(args.out), lines)


if __name__ == "__main__":
    main()
