"""Shared fixtures and hypothesis profiles.

Profiles: ``dev`` (default, quick, random) and ``ci`` (more examples, derandomized). Both use
``deadline=None``: the first example of a property pays numba's JIT compilation. Select with
HYPOTHESIS_PROFILE=ci.

Coverage of the jitted code: ``NUMBA_DISABLE_JIT=1`` runs the kernels as plain Python, so
coverage.py sees their lines. That mode selects the ``nojit`` profile (few examples) and skips
tests marked ``jit_only`` (they test the compiled artefacts themselves) or
``slow_without_jit`` (large problems whose lines other tests already execute).
"""

import os

# Numba's OpenMP threads spin after each parallel region and, on a 2-core machine, starve the
# OpenBLAS threads of the small BLAS calls that follow (a 4 x 4 triangular solve took 4 ms).
# Passive waiting changes no result and halves the suite's time; set before numba loads
# libgomp, and left alone when the caller chose a policy.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import nystrom_priors as npr

settings.register_profile(
    "dev",
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI draws the same examples on every run (a landing must not depend on the draw); the dev
# profile keeps exploring with fresh random examples
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "nojit",
    deadline=None,
    max_examples=6,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NO_JIT = os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "nojit" if NO_JIT else "dev"))


def pytest_collection_modifyitems(config, items):
    if not NO_JIT:
        return
    for item in items:
        for name in ("jit_only", "slow_without_jit"):
            if item.get_closest_marker(name):
                item.add_marker(pytest.mark.skip(reason=f"{name} under NUMBA_DISABLE_JIT=1"))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def naive_kernel(X, Z, name, gamma=None, degree=3, coef0=1.0):
    """Independent dense oracle: scipy cdist / plain numpy in float64."""
    from scipy.spatial.distance import cdist

    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if name == "rbf":
        return np.exp(-gamma * cdist(X, Z, "sqeuclidean"))
    if name == "laplacian":
        return np.exp(-gamma * cdist(X, Z, "cityblock"))
    if name == "linear":
        return X @ Z.T
    if name == "poly":
        return (gamma * (X @ Z.T) + coef0) ** degree
    if name == "cosine":
        nx = np.linalg.norm(X, axis=1)
        nz = np.linalg.norm(Z, axis=1)
        nx[nx == 0] = 1.0
        nz[nz == 0] = 1.0
        return (X @ Z.T) / np.outer(nx, nz)
    raise ValueError(name)


def gemm_error_bound(A, B):
    """Elementwise bound on the round-off of ``A @ B`` in A's dtype, any summation order.

    ``|fl(A B) - A B| <= k * eps * (|A| |B|) + k * eta`` (Higham, Accuracy and Stability, 3.5
    and 2.1 for gradual underflow: every product can be off by ``eta`` = the smallest
    subnormal, whatever its size), with k the inner dimension. Two computations of the same
    product differ by at most twice this.
    """
    A = np.asarray(A)
    info = np.finfo(A.dtype)
    k = A.shape[1]
    rel = k * info.eps * (np.abs(A).astype(np.float64) @ np.abs(np.asarray(B, dtype=np.float64)))
    return rel + k * float(info.smallest_subnormal)


def rbf_blocking_bound(X, Z, gamma, E):
    """Elementwise bound on |E1 - E2| for two evaluations of the RBF block ``E = k(X, Z)``
    computed in different row blockings (``extrapolate(..., block_rows=...)``, streaming).

    The library evaluates ``||x - c||^2 + ||z - c||^2 - 2 <x - c, z - c>`` with c the
    landmarks' mean; the cross term is a GEMM in X's dtype, whose summation order may change
    with the height of the row tile (BLAS kernels differ for short tiles). The rounded inputs
    ``x - c`` and ``z - c`` are the same in both evaluations, so two cross terms differ by at
    most ``d eps sum_k |x_k - c_k| |z_k - c_k|`` (twice the GEMM bound with d products), the
    distances by twice that, and E by ``E expm1(gamma * that)`` plus the final rounding of
    either result. Far from the landmarks (an outlier at ten times the kernel width) this is
    several ulps of E, not the GEMM bound of a single product.
    """
    eps = float(np.finfo(np.asarray(E).dtype).eps)
    X64 = np.asarray(X, dtype=np.float64)
    Z64 = np.asarray(Z, dtype=np.float64)
    c = Z64.mean(axis=0)
    S = np.abs(X64 - c) @ np.abs(Z64 - c).T * (1.0 + eps) ** 2
    dd = 2.0 * X64.shape[1] * eps * S
    E64 = np.abs(np.asarray(E, dtype=np.float64))
    return E64 * np.expm1(gamma * dd) * (1.0 + eps) + 2.0 * eps * E64


def poly_blocking_bound(X, Z, gamma, coef0, degree, E):
    """Elementwise bound on |E1 - E2| for two evaluations of ``(gamma <x, z> + coef0)^degree``
    in different row blockings: the cross terms (a GEMM whose summation order may change with
    the tile height) differ by at most twice :func:`gemm_error_bound`, so the bases t differ
    by ``dt = gamma * that`` plus their own rounding (``2 eps |t|``), and the powers by
    ``degree (|t| + dt)^(degree - 1) dt`` (mean value theorem) plus the rounding of the
    ``degree`` products in either evaluation."""
    eps = float(np.finfo(np.asarray(E).dtype).eps)
    cross = np.asarray(X, dtype=np.float64) @ np.asarray(Z, dtype=np.float64).T
    t = np.abs(gamma * cross + coef0)
    dt = gamma * 2.0 * gemm_error_bound(X, np.asarray(Z).T) + 2.0 * eps * t
    dE = degree * (t + dt) ** (degree - 1) * dt
    return dE + 2.0 * degree * eps * np.abs(np.asarray(E, dtype=np.float64))


def triple_product_error_bound(A, B, C):
    """Bound on the float64 round-off of ``A @ B @ C``: ``(k1 + k2) eps |A| |B| |C|``."""
    A, B, C = (np.abs(np.asarray(M, dtype=np.float64)) for M in (A, B, C))
    return (A.shape[1] + B.shape[1]) * np.finfo(np.float64).eps * (A @ B @ C)


def rbf_roundoff_bound(X, Z, gamma):
    """Bound on the difference of two BLAS evaluations of exp(-gamma ||x - z||^2).

    The squared distance comes from ||x-c||^2 + ||z-c||^2 - 2 <x-c, z-c> with c the landmarks'
    mean; two GEMM evaluations of the cross term differ by <= 2 d eps |x-c||z-c| each, so
    |dE| <= E * gamma * 2 * 2 d eps (|X-c| |Z-c|^T), plus 4 ulp for the exponential itself.
    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    c = Z.mean(axis=0)
    eps = np.finfo(np.float64).eps
    cross = np.abs(X - c) @ np.abs(Z - c).T
    from scipy.spatial.distance import cdist

    E = np.exp(-gamma * cdist(X, Z, "sqeuclidean"))
    return E * gamma * 4 * X.shape[1] * eps * cross + 4 * eps * E


# every learner, small and quick, fitted on a handful of rows (output-format tests)
SMALL_LEARNERS = {
    "Nystrom": lambda: npr.Nystrom(n_landmarks=6, random_state=0),
    "GeneralizedNystrom": lambda: npr.GeneralizedNystrom(n_landmarks=6, random_state=0),
    "LogDetKernelLearner": lambda: npr.LogDetKernelLearner(
        n_landmarks=6, gamma=1.0, random_state=0
    ),
    "VonNeumannKernelLearner": lambda: npr.VonNeumannKernelLearner(n_landmarks=6, random_state=0),
    "BCDNPKL": lambda: npr.BCDNPKL(max_iter=20, random_state=0),
}


def blobs(per_class, d=4, n_classes=3, spread=3.0, labeled=0.5, seed=0):
    """Gaussian classes around random centres: (X, y, y_partial) with -1 for unlabeled."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=spread, size=(n_classes, d))
    y = np.repeat(np.arange(n_classes), per_class)
    X = centers[y] + rng.normal(size=(y.size, d))
    y_partial = np.where(rng.random(y.size) < labeled, y, -1)
    return X, y, y_partial


@pytest.fixture
def ITML(monkeypatch):
    """metric-learn's ITML; 0.7.0 passes ``force_all_finite``, renamed in scikit-learn 1.6+."""
    pytest.importorskip("metric_learn")
    import metric_learn._util as util
    import sklearn.utils.validation as skv
    from metric_learn import ITML

    def renamed(fun):
        def call(*args, **kwargs):
            if "force_all_finite" in kwargs:
                kwargs["ensure_all_finite"] = kwargs.pop("force_all_finite")
            return fun(*args, **kwargs)

        return call

    monkeypatch.setattr(util, "check_array", renamed(skv.check_array))
    monkeypatch.setattr(util, "check_X_y", renamed(skv.check_X_y))
    return ITML


def gaussian_prior(Z, width):
    """``(U0, w, S0)``: the Gaussian kernel's W on the landmarks Z, its eigenvectors U0 and
    eigenvalues w above 1e-10 of the largest, and ``S0 = W^+`` on them."""
    from nystrom_priors import extrapolate

    W = extrapolate(Z, Z, width=width)
    lw, U = np.linalg.eigh(W)
    keep = lw > 1e-10 * lw.max()
    U0, w = U[:, keep], lw[keep]
    return U0, w, (U0 / w) @ U0.T
