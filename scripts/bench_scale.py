"""Scale: streaming vs a 2-worker Dask LocalCluster on 10M lazily generated rows, and
MNIST-sized fits of every learner against scikit-learn's Nystroem, in one run.

Part 1 — a GeneralizedNystrom (m = 500, rbf, 100 labels) fitted on 50,000 x 32 samples embeds
n rows of 32 standard-normal features generated lazily in blocks of 100,000 (never all in
memory), for n = 1M and 10M:
  * streaming: one process, ``model.iter_transform(generator)``, numba on 2 threads;
  * dask: ``model.transform(dask_array)`` on a LocalCluster of 2 worker processes, 1 thread and
    1 numba thread each (same total cores), data generated on the workers.
Both reduce the factor rows to their column sums (a consumer that keeps nothing). Reported:
rows/s and the peak RSS of the streaming process / of each worker (fresh processes per n, so
"peak memory must not grow with n" is visible directly).

Part 2 — a 70,000 x 784 synthetic MNIST-sized set (10 Gaussian classes), m = 1000 landmarks,
100 labels: fit + transform of all 70,000 rows for each learner, next to scikit-learn's
``Nystroem(n_components=1000)`` fit + transform in the same run.

Run:  python scripts/bench_scale.py [--rows 1000000 10000000] [--skip-mnist] [--skip-scale]
Writes results/bench_scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import count, write_lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 100_000
D = 32


def fit_model(path):
    from nystrom_priors import GeneralizedNystrom, save

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50_000, D))
    y = np.full(50_000, -1)
    lab = rng.choice(50_000, 100, replace=False)
    y[lab] = (X[lab, 0] + X[lab, 1] > 0).astype(int)
    model = GeneralizedNystrom(n_landmarks=500, lam="nka", random_state=0).fit(X, y)
    save(model, path)


def _streaming_child(model_path, n):
    """Runs in a fresh process: stream n rows, print JSON with time and peak RSS."""
    import resource

    from nystrom_priors import load

    model = load(model_path)

    def blocks():
        for s in range(0, n, BLOCK):
            yield np.random.default_rng(s).standard_normal((min(BLOCK, n - s), D))

    model.transform(np.zeros((10, D)))  # JIT / cache load outside the timing
    t0 = time.perf_counter()
    acc = np.zeros(model.n_components_)
    for _, G in model.iter_transform(blocks()):
        acc += G.sum(axis=0)
    dt = time.perf_counter() - t0
    print(
        json.dumps(
            dict(
                seconds=dt,
                peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                checksum=float(acc.sum()),
            )
        )
    )


def streaming(model_path, n):
    out = subprocess.run(
        [sys.executable, __file__, "--child", model_path, str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def dask_run(model_path, n):
    import dask.array as da
    from distributed import Client, LocalCluster

    from nystrom_priors import load

    model = load(model_path)
    env = {
        "NUMBA_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, env=env
        ) as cluster,
        Client(cluster) as client,
    ):

        def peak():
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        # warm the workers (numba cache load) outside the timing
        model.transform(da.zeros((20, D), chunks=10)).sum().compute()
        X = da.random.default_rng(1).standard_normal((n, D), chunks=(BLOCK, D))
        t0 = time.perf_counter()
        acc = model.transform(X).sum(axis=0).compute()
        dt = time.perf_counter() - t0
        peaks = sorted(client.run(peak).values())
    return dict(seconds=dt, peak_mib=peaks, checksum=float(acc.sum()))


def mnist_like(n=70_000, d=784, rng=None):
    rng = np.random.default_rng(rng)
    centers = rng.normal(size=(10, d)) * 0.35
    y = rng.integers(0, 10, n)
    return (centers[y] + rng.normal(size=(n, d))).astype(np.float64), y


def part_mnist(lines):
    from sklearn.kernel_approximation import Nystroem

    import nystrom_priors as npr

    X, y_full = mnist_like(rng=0)
    rng = np.random.default_rng(1)
    y = np.full(X.shape[0], -1)
    lab = np.concatenate(
        [rng.choice(np.flatnonzero(y_full == c), 10, replace=False) for c in range(10)]
    )
    y[lab] = y_full[lab]
    width = npr.mean_squared_distance(X)
    pairs = npr.labels_to_pairs(y, 2000, random_state=0)
    runs = [
        (
            "scikit-learn Nystroem(n_components=1000), uniform",
            lambda: (
                Nystroem(gamma=1.0 / width, n_components=1000, random_state=0).fit(X).transform(X)
            ),
        ),
        ("Nystrom(m=1000, kmeans)", lambda: npr.Nystrom(1000, random_state=0).fit(X).transform(X)),
        (
            "Nystrom(m=1000, uniform)",
            lambda: npr.Nystrom(1000, landmarks="uniform", random_state=0).fit(X).transform(X),
        ),
        # lam = mu_max^2 * 1e-6 (a one-point path), as in scripts/bench_generalized.py
        (
            "GeneralizedNystrom(m=1000, kmeans, lam=mu^2*1e-6)",
            lambda: (
                npr.GeneralizedNystrom(1000, lam="nka", lam_grid=[-6.0], random_state=0)
                .fit(X, y)
                .transform(X)
            ),
        ),
        (
            "GeneralizedNystrom(m=1000, uniform, lam=mu^2*1e-6)",
            lambda: (
                npr.GeneralizedNystrom(
                    1000, landmarks="uniform", lam="nka", lam_grid=[-6.0], random_state=0
                )
                .fit(X, y)
                .transform(X)
            ),
        ),
        # lam chosen on the 13-point grid: the default (CV) and the paper's eq. 12
        (
            "GeneralizedNystrom(m=1000) defaults (kmeans, lam='auto')",
            lambda: npr.GeneralizedNystrom(1000, random_state=0).fit(X, y).transform(X),
        ),
        (
            "GeneralizedNystrom(m=1000, kmeans, lam='nka')",
            lambda: npr.GeneralizedNystrom(1000, lam="nka", random_state=0).fit(X, y).transform(X),
        ),
        (
            "LogDetKernelLearner(m=1000, rank=256, gamma=1, 2000 pairs)",
            lambda: (
                npr.LogDetKernelLearner(256, n_landmarks=1000, gamma=1.0, random_state=0)
                .fit(X, pairs=pairs)
                .transform(X)
            ),
        ),
        (
            "VonNeumannKernelLearner(m=1000, rank=64, 2000 pairs)",
            lambda: (
                npr.VonNeumannKernelLearner(64, n_landmarks=1000, random_state=0, max_iter=50)
                .fit(X, pairs=pairs)
                .transform(X)
            ),
        ),
        (
            "BCDNPKL(kNN k=5, 2000 pairs) fit_transform",
            lambda: npr.BCDNPKL(random_state=0, max_iter=100).fit_transform(X, pairs=pairs),
        ),
    ]
    lines += [
        "",
        "## MNIST-sized fits (70,000 x 784, 100 labels), fit + transform of all rows",
        "",
        "| learner | seconds | / scikit-learn Nystroem |",
        "|---|---|---|",
    ]
    base = None
    for name, fun in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            G = fun()
            dt = time.perf_counter() - t0
        base = base or dt
        lines.append(f"| {name} | {dt:.1f} | {dt / base:.2f}x |")
        print(lines[-1], G.shape, flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _streaming_child(sys.argv[2], int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=count(1000), nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--skip-mnist", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results", "bench_scale.md"))
    args = ap.parse_args()
    lines = ["# Scale benchmark (2-core machine, one run)", ""]
    if args.skip_scale and os.path.exists(args.out):
        # keep the part-1 table of an earlier run
        with open(args.out) as fh:
            kept = fh.read().split("\n## MNIST-sized")[0].rstrip("\n").splitlines()
        lines = kept
    if not args.skip_scale:
        import tempfile

        path = os.path.join(tempfile.mkdtemp(), "gn.npz")
        fit_model(path)
        lines += [
            "`python scripts/bench_scale.py` — GeneralizedNystrom m = 500, d = 32, rows "
            "generated lazily in blocks of 100,000; column sums of the factor rows.",
            "",
            "| rows | streaming rows/s | streaming peak RSS | dask (2 workers) rows/s | "
            "dask peak RSS per worker | dask / streaming |",
            "|---|---|---|---|---|---|",
        ]
        for n in args.rows:
            st = streaming(path, n)
            dk = dask_run(path, n)
            lines.append(
                f"| {n:,} | {n / st['seconds']:,.0f} | {st['peak_mib']:.0f} MiB | "
                f"{n / dk['seconds']:,.0f} | {' / '.join(f'{p:.0f}' for p in dk['peak_mib'])} MiB | "
                f"{st['seconds'] / dk['seconds']:.2f}x |"
            )
            print(lines[-1], flush=True)
    if not args.skip_mnist:
        part_mnist(lines)
    write_lines(args.out, lines)


if __name__ == "__main__":
    main()
