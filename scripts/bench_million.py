"""One million samples, few labels: GeneralizedNystrom features + LinearSVC vs LabelSpreading.

Data (synthetic, seeded): ``n`` rows in d = 16 dimensions, 10 classes, each class a mixture
of 3 Gaussian clusters (unit covariance) whose centres are drawn from N(0, 3^2 I), so the
classes are neither linearly separable nor single blobs. Nothing public of this size ships
offline; the generator is in ``make_data``.

For each label budget l in 10, 100, 1,000 (l rows drawn uniformly, at least one per class
when l >= 10 is not guaranteed, as in practice):

* ``GeneralizedNystrom()`` with its defaults (100 k-means landmarks, RBF with the mean
  squared distance as width, lam chosen automatically) is fitted on all n rows with the l
  labels; a ``LinearSVC`` is trained on the l labeled factor rows; accuracy on a fixed test
  set of 20,000 unlabeled rows (their factor rows by ``transform``);
* ``LabelSpreading(kernel="knn", n_neighbors=7)`` on subsamples (the labeled rows + the test
  rows + random unlabeled rows) of the sizes in ``--ls-sizes`` up to ``--ls-max`` rows;
  larger sizes are not run, and the memory its kNN graph and label matrices would need is
  estimated instead.

Peak resident memory (ru_maxrss) is reported after the GN runs and after each LabelSpreading
run (the process's high-water mark, data included).

Run:  python scripts/bench_million.py [--n 1000000] [--quick]   (--quick: --n 20000)
Writes results/bench_million.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import count, write_lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
D, CLASSES, MODES, TEST = 16, 10, 3, 20_000


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The mixture described in the module docstring: (X (n, 16) float64, y (n,) int)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(CLASSES * MODES, D))
    comp = rng.integers(CLASSES * MODES, size=n)
    X = centres[comp] + rng.normal(size=(n, D))
    return X, comp // MODES


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=count(2000), default=1_000_000)
    ap.add_argument("--labels", nargs="+", type=count(2), default=[10, 100, 1000])
    ap.add_argument("--ls-sizes", nargs="+", type=count(1), default=[25_000, 100_000, 1_000_000])
    ap.add_argument("--ls-max", type=count(1), default=100_000)
    ap.add_argument("--quick", action="store_true", help="--n 20000, LabelSpreading on 20,000")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results", "bench_million.md"))
    args = ap.parse_args()
    if args.quick:
        args.n, args.ls_sizes = 20_000, [10_000, 20_000]
    pool_size = args.n - min(TEST, args.n // 4)  # the rows left beside the test rows
    if max(args.labels) > pool_size:
        ap.error(
            f"--labels: at most {pool_size:,} (the rows of --n {args.n:,} not held out for testing)"
        )
    from sklearn.semi_supervised import LabelSpreading
    from sklearn.svm import LinearSVC

    import nystrom_priors as npr

    t0 = time.perf_counter()
    X, y = make_data(args.n)
    rng = np.random.default_rng(1)
    n_test = min(TEST, args.n // 4)
    order = rng.permutation(args.n)
    test, pool = order[:n_test], order[n_test:]
    print(f"data {X.shape} in {time.perf_counter() - t0:.1f} s, peak {peak_mb():.0f} MB")
    lines = [
        f"# {args.n:,} x {D} samples, {CLASSES} classes: accuracy on {n_test:,} test rows",
        "",
        "| method | rows used | labels | accuracy (%) | seconds | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    warm = npr.GeneralizedNystrom(20, random_state=0)  # numba compilation outside the timings
    yw = np.full(2000, -1)
    yw[:20] = y[:20]
    warm.fit(X[:2000], yw).transform(X[:100])
    for n_lab in args.labels:
        lab = pool[:n_lab]
        y_fit = np.full(args.n, -1)
        y_fit[lab] = y[lab]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = npr.GeneralizedNystrom(random_state=0).fit(X, y_fit)
            clf = LinearSVC(random_state=0).fit(model.transform(X[lab]), y[lab])
            acc = float((clf.predict(model.transform(X[test])) == y[test]).mean())
        sec = time.perf_counter() - t0
        row = (
            f"| GeneralizedNystrom + LinearSVC | {args.n:,} | {n_lab} | {100 * acc:.1f} | "
            f"{sec:.1f} | {peak_mb():.0f} |"
        )
        lines.append(row)
        print(row, flush=True)
    for size in args.ls_sizes:
        size = min(size, args.n)
        for n_lab in args.labels:
            lab = pool[:n_lab]
            extra = pool[n_lab : n_lab + max(0, size - n_lab - n_test)]
            rows = np.concatenate([lab, test, extra])
            if size > args.ls_max:
                k = 7
                # kNN graph (CSR, n k entries, float64 + int32 indices, and its normalised
                # copy) plus the n x c label distributions, as LabelSpreading holds them
                est = (3 * size * k * 12 + 3 * size * CLASSES * 8) / 2**20
                row = (
                    f"| LabelSpreading(knn) | {rows.size:,} | {n_lab} | not run | | "
                    f"~{est:.0f} + kNN search |"
                )
                lines.append(row)
                print(row, flush=True)
                continue
            y_ls = np.full(rows.size, -1)
            y_ls[:n_lab] = y[lab]
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ls = LabelSpreading(kernel="knn", n_neighbors=7, max_iter=100).fit(X[rows], y_ls)
            pred = ls.transduction_[n_lab : n_lab + n_test]
            acc = float((pred == y[test]).mean())
            sec = time.perf_counter() - t0
            row = (
                f"| LabelSpreading(knn) | {rows.size:,} | {n_lab} | {100 * acc:.1f} | "
                f"{sec:.1f} | {peak_mb():.0f} |"
            )
            lines.append(row)
            print(row, flush=True)
    write_lines(args.out, lines)


if __name__ == "__main__":
    main()
