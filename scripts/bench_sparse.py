"""Sparse input: Nystrom features of a tf-idf-like CSR matrix against scikit-learn's Nystroem.

Data (seeded, synthetic, tf-idf-like): ``n`` documents over ``d`` terms with on average
``density * d`` distinct terms per document. Term ``j`` is drawn with Zipf probability
``(j + 1)^-1.1`` (normalised), a document's length is Poisson; a term drawn ``c`` times gets
``tf = 1 + log c``, multiplied by ``idf = log(n / df) + 1``; rows are L2-normalised (so the
RBF width, the mean squared distance, is close to 2). Default 100,000 x 50,000 at density
1e-3 (about 50 stored entries per row, 5M in all).

Both libraries fit on the same CSR matrix and transform all of it, m = 300 landmarks, the
RBF kernel with the same gamma = 1 / mean squared distance:

* ``nystrom_priors.Nystrom(landmarks="uniform")`` (the same landmark rule as scikit-learn's)
  and with its default ``landmarks="kmeans"``;
* ``sklearn.kernel_approximation.Nystroem(n_components=300)``.

Each method runs in a fresh process; it reports the wall time of fit + transform and the
peak resident memory above the process's memory once data and libraries are loaded (after a
warm-up fit on 2,000 rows, which compiles numba's kernels). Ratios are nystrom_priors /
scikit-learn.

Run:  python scripts/bench_sparse.py [--quick] [--n 100000 --d 50000 --density 1e-3]
Writes results/bench_sparse.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import count, write_lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = ("sklearn", "npr-uniform", "npr-kmeans")


def tfidf_like(n: int, d: int, density: float, seed: int = 0):
    """The seeded tf-idf-like CSR matrix described in the module docstring (float64)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    p /= p.sum()
    lengths = rng.poisson(density * d, size=n) + 1
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.choice(d, size=rows.size, p=p)
    X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))  # counts (summed)
    X.data = 1.0 + np.log(X.data)
    df = np.bincount(X.indices, minlength=d)
    idf = np.log(n / np.maximum(df, 1)) + 1.0
    X.data *= idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_one(method: str, n: int, d: int, density: float, m: int) -> dict:
    """Fit + transform of one method in this process (called in a child process)."""
    import nystrom_priors as npr

    X = tfidf_like(n, d, density)
    b = npr.mean_squared_distance(X)

    def make():
        if method == "sklearn":
            from sklearn.kernel_approximation import Nystroem

            return Nystroem(kernel="rbf", gamma=1.0 / b, n_components=m, random_state=0)
        rule = method.split("-")[1]
        return npr.Nystrom(m, width=b, landmarks=rule, random_state=0)

    make().fit(X[:2000]).transform(X[:2000])  # warm-up: numba compilation, BLAS threads
    base = _rss_mb()
    t0 = time.perf_counter()
    G = make().fit(X).transform(X)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {
        "method": method,
        "seconds": seconds,
        "peak_mb": max(0.0, peak - base),
        "shape": list(G.shape),
        "nnz": int(X.nnz),
        "width": b,
    }


def _density(text: str) -> float:
    """An argparse ``type``: a fraction of stored entries in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=count(2), default=100_000)
    ap.add_argument("--d", type=count(1), default=50_000)
    ap.add_argument("--density", type=_density, default=1e-3)
    ap.add_argument("--m", type=count(1), default=300)
    ap.add_argument("--quick", action="store_true", help="5,000 x 5,000 at density 2e-3")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results", "bench_sparse.md"))
    args = ap.parse_args()
    if args.quick:
        args.n, args.d, args.density, args.m = 5_000, 5_000, 2e-3, 100
    if args.child:
        print(json.dumps(run_one(args.child, args.n, args.d, args.density, args.m)))
        return
    res = {}
    for method in METHODS:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", method]
        cmd += ["--n", str(args.n), "--d", str(args.d), "--density", str(args.density)]
        cmd += ["--m", str(args.m)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{method} failed:\n{out.stderr}")
        res[method] = json.loads(out.stdout.strip().splitlines()[-1])
        r = res[method]
        print(f"{method:12s} {r['seconds']:8.2f} s  peak +{r['peak_mb']:8.1f} MB", flush=True)
    sk = res["sklearn"]
    lines = [
        f"# Sparse input: {args.n:,} x {args.d:,} tf-idf-like CSR, density {args.density:g} "
        f"({sk['nnz']:,} stored entries), m = {args.m}, RBF width {sk['width']:.4g}",
        "",
        "| method | fit + transform (s) | time / sklearn | peak memory (MB) | memory / sklearn |",
        "|---|---:|---:|---:|---:|",
    ]
    for method in METHODS:
        r = res[method]
        lines.append(
            f"| {method} | {r['seconds']:.2f} | {r['seconds'] / sk['seconds']:.2f} | "
            f"{r['peak_mb']:.1f} | {r['peak_mb'] / max(sk['peak_mb'], 1e-9):.2f} |"
        )
    print("\n".join(lines))
    write_lines(args.out, lines)


if __name__ == "__main__":
    main()
