"""How fast can any ``Nystrom.transform`` be against scikit-learn's ``Nystroem.transform``?

``docs/design/performance.md``. Both compute the same two matrix products, ``X Z^T``
(n x d x m) and ``E P`` (n x m x m); everything else (norms, the exponential, scikit-learn's
extra passes over the n x m kernel) comes on top. This times the two bare GEMMs next to both
transforms (n = 20,000, d = 784, m = 1,000, as ``scripts/bench_performance.py``), best of
five alternating rounds: ``sk / two GEMMs`` bounds the speed-up any exact transform can have.

    python scripts/research/study_transform_bound.py
"""

import time

import numpy as np
from sklearn.kernel_approximation import Nystroem

from nystrom_priors import Nystrom

n, d, m = 20000, 784, 1000
rng = np.random.default_rng(1)
X = rng.random((n, d))
Z = X[rng.choice(n, m, replace=False)].copy()
b = 0.1 * d
ours = Nystrom(m, landmarks=Z, width=b).fit(X[:m])
ours.transform(X[:64])
theirs = Nystroem(gamma=1.0 / b, n_components=m, random_state=0).fit(Z)
E = np.empty((n, m))
P = np.ascontiguousarray(ours.projection_)
out = np.empty((n, P.shape[1]))


def two_gemms():
    np.matmul(X, Z.T, out=E)
    np.matmul(E, P, out=out)


runs = {"sk": lambda: theirs.transform(X), "ours": lambda: ours.transform(X), "gemms": two_gemms}
best = {k: np.inf for k in runs}
for _ in range(5):
    for k, f in runs.items():
        t = time.perf_counter()
        f()
        best[k] = min(best[k], time.perf_counter() - t)
flops = 2.0 * n * m * (d + P.shape[1])
for k, v in best.items():
    print(f"{k:6s} {v * 1e3:8.1f} ms  {flops / v / 1e9:6.1f} GFLOP/s of the two products")
print(
    f"sk / ours {best['sk'] / best['ours']:.3f}   sk / two GEMMs {best['sk'] / best['gemms']:.3f}"
    f"   ours / two GEMMs {best['ours'] / best['gemms']:.3f}"
)
