"""Catalogue of bad (and awkward-but-valid) input for every public entry point.

Each case is ``(id, call, expected)`` where ``expected`` is either ``(ExceptionType, regex)``
— the call must raise exactly that type with a message matching the regex (what was
received and what is valid) — or ``OK`` — the call must succeed and return finite output.

Run as a script, the catalogue executes every case in this process and prints one JSON line
per case (flushed), so ``tests/test_bad_input.py`` can run it in a subprocess: a segfault or
abort inside a jitted kernel then fails the test for the case that crashed instead of
killing the test session.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings

import numpy as np

OK = "ok"


def WARN(category: str, regex: str) -> tuple[str, str, str]:
    """The call succeeds with finite output and emits a ``category`` warning matching ``regex``."""
    return ("warn", category, regex)


CASES: list[tuple[str, object, object]] = []


def case(case_id, expected):
    def register(fn):
        CASES.append((case_id, fn, expected))
        return fn

    return register


def _data(n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 3
    return X, y


X, Y = _data()
Y_PARTIAL = np.where(np.arange(len(Y)) % 2 == 0, Y, -1)
PAIRS = np.array([[0, 3, 1], [1, 4, 1], [0, 1, -1], [2, 5, 1], [1, 2, -1]])


def _learners():
    from nystrom_priors import (
        BCDNPKL,
        GeneralizedNystrom,
        LogDetKernelLearner,
        Nystrom,
        VonNeumannKernelLearner,
    )

    return {
        "Nystrom": lambda **kw: Nystrom(n_landmarks=kw.pop("m", 8), **({"random_state": 0} | kw)),
        "GeneralizedNystrom": lambda **kw: GeneralizedNystrom(
            n_landmarks=kw.pop("m", 8), **({"random_state": 0} | kw)
        ),
        "LogDetKernelLearner": lambda **kw: LogDetKernelLearner(
            rank=kw.pop("m", 8), **({"random_state": 0, "n_landmarks": 20} | kw)
        ),
        "VonNeumannKernelLearner": lambda **kw: VonNeumannKernelLearner(
            rank=kw.pop("m", 8), **({"random_state": 0, "n_landmarks": 20} | kw)
        ),
        "BCDNPKL": lambda **kw: BCDNPKL(**({"random_state": 0, "n_neighbors": 5} | kw)),
    }


LEARNERS = (
    "Nystrom",
    "GeneralizedNystrom",
    "LogDetKernelLearner",
    "VonNeumannKernelLearner",
    "BCDNPKL",
)
SUPERVISED = LEARNERS[1:]


def make(name, **kw):
    return _learners()[name](**kw)


def fit(name, X_=X, y=None, **kw):
    pairs = kw.pop("pairs", None)
    model = make(name, **kw)
    if name == "Nystrom":
        return model.fit(X_)
    if pairs is not None:
        return model.fit(X_, pairs=pairs)
    return model.fit(X_, Y_PARTIAL if y is None else y)


# --- arrays: every learner's fit and transform ----------------------------------------------

_BAD_ARRAYS = {
    "nan": (np.where(np.eye(40, 4) == 1, np.nan, X), ValueError, r"finite values, got \d+ NaN"),
    "inf": (np.where(np.eye(40, 4) == 1, np.inf, X), ValueError, r"got 0 NaN and \d+ infinite"),
    "empty": (np.empty((0, 4)), ValueError, r"0 sample\(s\) \(shape=\(0, 4\)"),
    "1d": (X[:, 0].copy(), ValueError, r"2-D array.*1-D array of shape \(40,\)"),
    "3d": (X.reshape(40, 2, 2), ValueError, r"3-D array of shape \(40, 2, 2\)"),
    "string": (X.astype(str), TypeError, r"dtype <U\d+ \(string\)"),
    "complex": (X + 1j, ValueError, "Complex data not supported"),
    "object": (np.array([[object()] * 4] * 40, dtype=object), TypeError, r"dtype object"),
    "no-features": (np.empty((40, 0)), ValueError, r"0 feature\(s\) \(shape=\(40, 0\)\)"),
    # np.asarray reads the values behind the mask: they were fitted silently
    "masked": (
        np.ma.masked_array(X, mask=np.eye(40, 4, k=-2) == 1),
        ValueError,
        r"masked array with 4 masked entries \(the first at index \(2, 0\)\).*filled",
    ),
}
for _name in LEARNERS:
    for _key in ("nan", "inf", "empty", "1d", "3d", "string", "complex", "object", "masked"):
        _bad, _exc, _match = _BAD_ARRAYS[_key]
        case(f"{_name}.fit-{_key}", (_exc, _match))(
            lambda _n=_name, _b=_bad: fit(_n, _b, y=np.arange(len(_b)) % 3 if _b.ndim else None)
        )
    case(f"{_name}.transform-nan", _BAD_ARRAYS["nan"][1:])(
        lambda _n=_name: fit(_n).transform(_BAD_ARRAYS["nan"][0])
    )
    case(f"{_name}.transform-3d", _BAD_ARRAYS["3d"][1:])(
        lambda _n=_name: fit(_n).transform(_BAD_ARRAYS["3d"][0])
    )
    case(f"{_name}.transform-masked", _BAD_ARRAYS["masked"][1:])(
        lambda _n=_name: fit(_n).transform(_BAD_ARRAYS["masked"][0])
    )
    case(
        f"{_name}.transform-wrong-features",
        (ValueError, rf"X has 3 features, but {_name} is expecting 4 features"),
    )(lambda _n=_name: fit(_n).transform(X[:, :3]))
    case(
        f"{_name}.transform-unfitted", ("NotFittedError", rf"This {_name} instance is not fitted")
    )(lambda _n=_name: make(_n).transform(X))
    # Valid but awkward: must work and give finite output.
    case(f"{_name}.fit-noncontiguous", OK)(
        lambda _n=_name: fit(_n, np.asfortranarray(np.repeat(X, 2, axis=1))[:, ::2]).transform(
            np.repeat(X, 2, axis=1)[:, ::2]
        )
    )
    case(f"{_name}.fit-readonly", OK)(
        lambda _n=_name: fit(_n, _readonly(X)).transform(_readonly(X))
    )
    case(f"{_name}.fit-float16", OK)(lambda _n=_name: fit(_n, X.astype(np.float16)).transform(X))
    case(f"{_name}.fit-integer", OK)(
        lambda _n=_name: fit(_n, np.round(X * 10).astype(np.int32)).transform(X)
    )
    case(f"{_name}.fit-constant-feature", OK)(
        lambda _n=_name: fit(_n, np.column_stack([X, np.ones(40)])).transform(
            np.column_stack([X, np.ones(40)])
        )
    )
    case(f"{_name}.fit-duplicated-samples", OK)(
        lambda _n=_name: fit(_n, np.repeat(X[:10], 4, axis=0)).transform(X)
    )


def _readonly(A):
    A = A.copy()
    A.setflags(write=False)
    return A


# --- landmarks, widths, scalar parameters ---------------------------------------------------

# More landmarks than samples: warn and use all samples (scikit-learn's Nystroem does the same).
_ABOVE_N = {
    "Nystrom": WARN("UserWarning", r"n_landmarks=41 is larger than the number of samples \(40\)"),
    "GeneralizedNystrom": WARN(
        "UserWarning", r"n_landmarks=41 is larger than the number of samples"
    ),
    # Bregman learning keeps the initial kernel's rank: a larger rank is clipped to it.
    "LogDetKernelLearner": WARN(
        "UserWarning", r"rank=41 exceeds the rank 20 of the initial kernel"
    ),
    "VonNeumannKernelLearner": WARN("UserWarning", r"rank=41 exceeds the rank 20 of the initial"),
}
_NO_SIDE_INFO = {
    "GeneralizedNystrom": WARN("UserWarning", r"no side information .*Nystrom prior; pass y"),
    "LogDetKernelLearner": (
        ValueError,
        r"no side information: give y .* or pairs or similarity_pairs",
    ),
    "VonNeumannKernelLearner": (ValueError, r"no side information: give y .* or pairs\.$"),
    "BCDNPKL": (ValueError, r"no side information: give pairs .* or y"),
}

for _name in ("Nystrom", "GeneralizedNystrom", "LogDetKernelLearner", "VonNeumannKernelLearner"):
    _param = "n_landmarks" if _name in ("Nystrom", "GeneralizedNystrom") else "rank"
    case(f"{_name}.{_param}-zero", (ValueError, rf"{_param} must be in \[1, inf\), got 0"))(
        lambda _n=_name: fit(_n, m=0)
    )
    case(f"{_name}.{_param}-above-n", _ABOVE_N[_name])(lambda _n=_name: fit(_n, m=41))
    case(f"{_name}.{_param}-float", (TypeError, rf"{_param} must be an integer, got float 2.5"))(
        lambda _n=_name: fit(_n, m=2.5)
    )
    case(f"{_name}.width-zero", (ValueError, r"width must be in \(0, inf\), got 0.0"))(
        lambda _n=_name: fit(_n, width=0.0)
    )
    case(f"{_name}.width-nan", (ValueError, r"width must be a number, got NaN"))(
        lambda _n=_name: fit(_n, width=float("nan"))
    )
    case(
        f"{_name}.kernel-unknown",
        (ValueError, r"Unknown kernel 'gauss'. Valid kernels: \['cosine', 'gaussian'"),
    )(lambda _n=_name: fit(_n, kernel="gauss"))
    case(
        f"{_name}.all-constant-data",
        (ValueError, r"all 40 samples are identical .*Pass width explicitly"),
    )(lambda _n=_name: fit(_n, np.ones((40, 4))))
    # identical rows whose mean is inexact in float64: round-off is no spread
    case(
        f"{_name}.all-identical-inexact-data",
        (ValueError, r"all 40 samples are identical .*Pass width explicitly"),
    )(lambda _n=_name: fit(_n, np.tile(X[:1], (40, 1))))
    case(f"{_name}.duplicated-landmarks", OK)(
        lambda _n=_name: fit(_n, landmarks=np.repeat(X[:4], 2, axis=0)).transform(X)
    )
    case(
        f"{_name}.random_state-string",
        (TypeError, r"random_state must be None, a non-negative int.*got str 'abc'"),
    )(lambda _n=_name: fit(_n, random_state="abc"))

case(
    "Nystrom.all-identical-inexact-data-laplacian",
    (ValueError, r"'laplacian' kernel: all 40 samples are identical"),
)(lambda: fit("Nystrom", np.broadcast_to(X[:1], (40, 4)), kernel="laplacian"))
case(
    "Nystrom.all-identical-inexact-data-sparse",
    (ValueError, r"'rbf' kernel: all 40 samples are identical"),
)(lambda: fit("Nystrom", _csr(np.tile(X[:1], (40, 1)))))

try:  # out-of-core input: the width is computed in dask's own passes
    import dask.array as _da
except ImportError:  # pragma: no cover - dask is optional
    _da = None
if _da is not None:
    case(
        "Nystrom.all-identical-inexact-data-dask",
        (ValueError, r"'rbf' kernel: the samples are identical or their distances underflow"),
    )(lambda: fit("Nystrom", _da.from_array(np.tile(X[:1], (40, 1)), chunks=10)))
    # chunks that are scipy.sparse matrices: dask's isfinite raised numpy's ufunc TypeError
    case(
        "Nystrom.dask-of-sparse-chunks",
        (TypeError, r"X is a dask array whose chunks are scipy\.sparse.* not numpy arrays"),
    )(lambda: fit("Nystrom", _da.from_array(X, chunks=(7, 4)).map_blocks(_csr)))


def _csr(A):
    from scipy import sparse

    return sparse.csr_matrix(A)


# a sparse matrix whose index arrays contradict its shape: scipy trusts them (its conversions
# and the jitted kernels read and write out of bounds: heap corruption, a C++ RuntimeError)
def _malformed(kind):
    from scipy import sparse

    A = sparse.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X))
    if kind == "column-out-of-range":
        A.indices[0] = 99
    elif kind == "negative-column":
        A.indices[0] = -1
    elif kind == "decreasing-indptr":
        A.indptr[5] = A.indptr[6] + 3
    elif kind == "indptr-past-nnz":
        A.indptr[-1] = 10**6
    elif kind == "coo-column-out-of-range":
        A = A.tocoo()
        A.col[0] = 9
    return A


_MALFORMED = {
    "column-out-of-range": r"malformed CSR sparse matrix of shape \(40, 4\): indices holds 99; "
    r"valid indices are in \[0, 3\]",
    "negative-column": r"malformed CSR .*indices holds -1; valid indices are in \[0, 3\]",
    "decreasing-indptr": r"malformed CSR .*indptr must be non-decreasing, got indptr\[5\] = ",
    "indptr-past-nnz": r"malformed CSR .*end at most at len\(indices\) = \d+, .*= 1000000",
    "coo-column-out-of-range": r"malformed COO .*col holds 9; valid indices are in \[0, 3\]",
}
for _kind, _match in _MALFORMED.items():
    for _name in LEARNERS:
        case(f"{_name}.sparse-fit-{_kind}", (ValueError, _match))(
            lambda _n=_name, _k=_kind: fit(_n, _malformed(_k))
        )
    case(f"Nystrom.sparse-transform-{_kind}", (ValueError, _match))(
        lambda _k=_kind: fit("Nystrom").transform(_malformed(_k))
    )
    case(f"extrapolate.sparse-{_kind}", (ValueError, _match))(
        lambda _k=_kind: _fns().extrapolate(_malformed(_k), X[:4], width=1.0)
    )
case(
    "Nystrom.sparse-fit-all-zero",
    (ValueError, r"'rbf' kernel: all 40 samples are identical"),
)(lambda: fit("Nystrom", _csr(np.zeros((40, 4)))))


# max_iter is a budget, not a size: the per-sweep paths grow with the sweeps done (a huge
# max_iter used to allocate them up front: MemoryError or numpy's "array is too big")
def _fit_unwindowed(name, **kw):
    model = make(name, **kw)
    model.infeasible_window = 0  # no infeasibility test: one run of up to max_iter sweeps
    return model.fit(X, Y_PARTIAL)


for _name in ("LogDetKernelLearner", "VonNeumannKernelLearner", "BCDNPKL"):
    case(f"{_name}.max_iter-huge", OK)(lambda _n=_name: fit(_n, max_iter=10**30).transform(X))
for _name in ("LogDetKernelLearner", "VonNeumannKernelLearner"):
    case(f"{_name}.max_iter-huge-unwindowed", WARN("ConvergenceWarning", r"max_iter=2000"))(
        lambda _n=_name: _fit_unwindowed(_n, max_iter=2000, tol=0.0).transform(X)
    )

# an integral float max_iter is accepted; the warning echoed it as "max_iter=1.0 sweeps"
for _name in ("LogDetKernelLearner", "VonNeumannKernelLearner"):
    case(f"{_name}.max_iter-float", WARN("ConvergenceWarning", r"max_iter=1 sweeps"))(
        lambda _n=_name: fit(_n, max_iter=1.0).transform(X)
    )


# a DataFrame with a categorical column: numpy's "could not convert string to float: 'p'"
# named neither the column nor what to do
def _categorical_column():
    import pandas as pd

    df = pd.DataFrame({"a": X[:, 0], "b": pd.Categorical(np.where(X[:, 1] > 0, "p", "q"))})
    return fit("Nystrom", X_=df)


case(
    "Nystrom.categorical-column",
    (TypeError, r"Its column 'b' \(index 1\) holds values that are not numbers .*encode"),
)(_categorical_column)


# with a finite but huge slack the infeasibility warning spoke of "hard constraints"
def _infeasible_large_gamma():
    rng = np.random.default_rng(0)
    Xg = rng.normal(size=(200, 5))
    yg = np.where(np.arange(200) % 5 == 0, (Xg[:, 0] > 0).astype(int), -1)
    P = _fns().labels_to_pairs(yg, 40, random_state=0)
    model = make("LogDetKernelLearner", m=4, n_landmarks=30, gamma=1e6)
    return model.fit(Xg, pairs=P, bounds=np.where(P[:, 2] == 1, 0.01, 10.0)).transform(Xg)


case(
    "LogDetKernelLearner.infeasible-large-gamma",
    WARN(
        "InfeasibleConstraintsWarning",
        r"the constraints look infeasible .*Use a smaller gamma \(gamma=1e\+06 lets the bounds",
    ),
)(_infeasible_large_gamma)

# (learner, parameter, bad value, message)
_BAD_SCALARS = [
    ("GeneralizedNystrom", "lam", -1.0, r"lam must be in \(0, inf\), got -1.0"),
    ("GeneralizedNystrom", "lam", float("nan"), r"lam must be a number, got NaN"),
    ("GeneralizedNystrom", "lam", "best", r"lam must be .*'auto'.*got 'best'"),
    ("GeneralizedNystrom", "tol", -0.1, r"tol must be in \(0, 1\], got -0.1"),
    ("LogDetKernelLearner", "gamma", -1.0, r"gamma must be in \(0, inf\), got -1.0"),
    ("LogDetKernelLearner", "gamma", float("nan"), r"gamma must be a number, got NaN"),
    ("LogDetKernelLearner", "tol", float("nan"), r"tol must be a number, got NaN"),
    ("LogDetKernelLearner", "max_iter", 0, r"max_iter must be in \[1, inf\), got 0"),
    ("BCDNPKL", "C", -1.0, r"C must be in \[1e-300, 1e\+300\], got -1.0"),
    ("BCDNPKL", "C", float("nan"), r"C must be a number, got NaN"),
    ("BCDNPKL", "loss", "l1", r"loss must be one of .*got 'l1'"),
    ("BCDNPKL", "n_neighbors", 40, r"n_neighbors=40 must be < n_samples=40"),
    ("BCDNPKL", "n_neighbors", 0, r"n_neighbors must be in \[1, inf\), got 0"),
]
for _name, _param, _value, _match in _BAD_SCALARS:
    case(f"{_name}.{_param}={_value!r}", (ValueError, _match))(
        lambda _n=_name, _p=_param, _v=_value: fit(_n, **{_p: _v})
    )
case(
    "GeneralizedNystrom.lam_grid-string",
    (ValueError, r"lam_grid must be a non-empty 1-D array of finite exponents, got 'abc'"),
)(lambda: fit("GeneralizedNystrom", lam_grid="abc"))
case(  # bools are not exponents (np.asarray made True an exponent of 1)
    "GeneralizedNystrom.lam_grid-bool",
    (ValueError, r"lam_grid must be a non-empty 1-D array of finite exponents, got \[True, 1.0\]"),
)(lambda: fit("GeneralizedNystrom", lam_grid=[True, 1.0]))
case(
    "LogDetKernelLearner.bounds-negative",
    (ValueError, r"bounds\[0\] = -1.0: squared-distance bounds must be > 0"),
)(lambda: make("LogDetKernelLearner").fit(X, pairs=PAIRS, bounds=np.full(len(PAIRS), -1.0)))
case(
    "LogDetKernelLearner.bounds-wrong-length",
    (ValueError, r"bounds must be an array of shape \(5,\) .*got shape \(3,\)"),
)(lambda: make("LogDetKernelLearner").fit(X, pairs=PAIRS, bounds=np.ones(3)))

# --- side information -----------------------------------------------------------------------

_ALL_UNLABELED = {
    name: (ValueError, r"y has no labeled sample \(every entry is -1, None or NaN")
    for name in SUPERVISED
} | {"GeneralizedNystrom": WARN("UserWarning", r"y has no labeled sample .*Nystrom prior")}

for _name in SUPERVISED:
    case(
        f"{_name}.pairs-out-of-range",
        (
            ValueError,
            r"pairs\[0\] = \[0, 40, 1\] references a sample out of range; "
            r"indices must be in \[0, 39\]",
        ),
    )(lambda _n=_name: fit(_n, pairs=np.array([[0, 40, 1], [1, 2, -1]])))
    case(f"{_name}.pairs-negative-index", (ValueError, r"out of range|0 <= i < 40"))(
        lambda _n=_name: fit(_n, pairs=np.array([[0, -1, 1], [1, 2, -1]]))
    )
    case(
        f"{_name}.pairs-wrong-shape",
        (ValueError, r"pairs must be an integer array of shape \(k, 3\).*got shape \(2, 2\)"),
    )(lambda _n=_name: fit(_n, pairs=np.array([[0, 1], [1, 2]])))
    case(f"{_name}.pairs-float", (TypeError, r"pairs must hold integers, got dtype float64"))(
        lambda _n=_name: fit(_n, pairs=np.array([[0, 1.5, 1], [1, 2, -1]]))
    )
    case(
        f"{_name}.pairs-contradictory",
        (ValueError, r"the pair \(0, 1\) both as must-link \(\+1\) and as cannot-link \(-1\)"),
    )(lambda _n=_name: fit(_n, pairs=np.array([[0, 1, 1], [1, 0, -1]])))
    case(
        f"{_name}.pairs-bad-sign",
        (ValueError, r"has sign 2; use \+1 \(must-link\) or -1 \(cannot-link\)"),
    )(lambda _n=_name: fit(_n, pairs=np.array([[0, 1, 2], [1, 2, -1]])))
    case(
        f"{_name}.labels-wrong-length",
        (
            ValueError,
            r"y has 39 entries, but X has 40 samples|"
            r"y must have shape \(40,\) like X's rows, got shape \(39,\)",
        ),
    )(lambda _n=_name: fit(_n, y=Y[:39]))
    case(
        f"{_name}.labels-2d",
        (ValueError, r"y must (be 1-D|have shape \(40,\)).*got shape \(40, 1\)"),
    )(lambda _n=_name: fit(_n, y=Y[:, None]))
    case(f"{_name}.labels-inf", (ValueError, r"y contains infinite values \(e.g. y\[\d+\] = "))(
        lambda _n=_name: fit(_n, y=np.where(Y == 0, np.inf, Y))
    )
    case(f"{_name}.labels-mixed-types", (TypeError, r"y mixes labels of different types: str"))(
        lambda _n=_name: fit(_n, y=np.where(Y == 0, "a", Y.astype(object)))
    )
    case(
        f"{_name}.labels-continuous",
        (
            ValueError,
            r"Unknown label type: continuous.*14 non-integer value\(s\), e.g. y\[\d+\] = 0.5",
        ),
    )(lambda _n=_name: fit(_n, y=np.where(Y == 0, 0.5, Y).astype(float)))
    case(f"{_name}.labels-all-unlabeled", _ALL_UNLABELED[_name])(
        lambda _n=_name: fit(_n, y=np.full(40, -1))
    )
    case(f"{_name}.no-side-information", _NO_SIDE_INFO[_name])(lambda _n=_name: make(_n).fit(X))

case(
    "GeneralizedNystrom.labels-single-class-auto-lam",
    WARN("UserWarning", r"lam=.auto. kept the Nystrom prior: the labeled samples are all one"),
)(lambda: fit("GeneralizedNystrom", y=np.where(Y == 0, 0, -1)).transform(X))
case(
    "GeneralizedNystrom.pairs-one-sign-auto-lam",
    WARN(
        "UserWarning",
        r"lam='auto' kept the Nystrom prior: .*need at least two must-link and two cannot-link "
        r"pairs; got 3 must-link and 0 cannot-link",
    ),
)(lambda: make("GeneralizedNystrom").fit(X, pairs=[[0, 1, 1], [2, 3, 1], [4, 5, 1]]).transform(X))
# one labeled sample with pairs: the labels' CV would score nothing ("Mean of empty slice" and
# NaN cross-validation paths)
case(
    "GeneralizedNystrom.one-labeled-sample-with-pairs-auto-lam",
    WARN("UserWarning", r"lam='auto' kept the Nystrom prior: the labeled samples are all one"),
)(lambda: make("GeneralizedNystrom").fit(X, np.where(np.arange(40) == 10, 2, -1), pairs=PAIRS))


# near-constant data far from the origin under a linear kernel (J's curvature ~1e156): the
# paper's solver stops at max_iter with the warning that says so, and its trial steps too
# long for float64 are rejected without an overflow warning
def _far_offset_pgd():
    Xf = np.full((13, 2), -(2.0**63))
    Xf[9, 0], Xf[10, 1] = -7.09e18, -7.79e18
    pairs = np.array([[1, 12, -1], [11, 5, 1], [8, 2, -1], [10, 8, 1], [2, 3, -1]])
    model = make("GeneralizedNystrom", m=50, kernel="linear", solver="pgd", lam=1.0, max_iter=300)
    return model.fit(Xf, pairs=pairs)


case(
    "GeneralizedNystrom.pgd-far-offset",
    WARN("ConvergenceWarning", r"'pgd' solver stopped after 300 iterations.*increase max_iter"),
)(_far_offset_pgd)
case("GeneralizedNystrom.labels-single-class-fixed-lam", WARN("UserWarning", r"one class"))(
    lambda: fit("GeneralizedNystrom", y=np.where(Y == 0, 0, -1), lam=1.0).transform(X)
)
for _name in SUPERVISED:
    case(
        f"{_name}.pairs-self-pair",
        (ValueError, r"pairs\[0\] = \[0, 0, 1\] pairs a sample with itself"),
    )(lambda _n=_name: fit(_n, pairs=np.array([[0, 0, 1], [1, 2, -1]])))
case("LogDetKernelLearner.pairs-duplicated-samples", WARN("UserWarning", r"zero|identical|length"))(
    lambda: fit(
        "LogDetKernelLearner",
        np.vstack([X[:1], X]),
        pairs=np.array([[0, 1, 1], [1, 2, -1], [3, 4, 1]]),
    )
)
case("BCDNPKL.labels-single-class", OK)(
    lambda: fit("BCDNPKL", y=np.where(Y == 0, 0, -1)).transform(X)
)


# --- functions -------------------------------------------------------------------------------


def _fns():
    import nystrom_priors as npr

    return npr


# kernel values and distances beyond float range: a named error, never silent inf / NaN
_OVERFLOW = r"overflows float64: the 'poly' kernel of degree 64, gamma 0.25, coef0 1 is not finite"
case(
    "extrapolate.poly-overflow",
    (ValueError, r"k\(X, Z\) " + _OVERFLOW + r".*Rescale X, lower its degree or gamma\."),
)(lambda: _fns().extrapolate(X * 1e3, X[:5] * 1e3, kernel="poly", degree=64))
case(
    "extrapolate.float32-linear-overflow",
    (ValueError, r"k\(X, Z\) overflows float32: the 'linear' kernel .*or pass float64 data"),
)(
    lambda: _fns().extrapolate(
        (X * 1e20).astype(np.float32), (X[:5] * 1e20).astype(np.float32), kernel="linear"
    )
)
case(
    "extrapolate.rbf-distances-overflow",
    (
        ValueError,
        r"k\(X, Z\) overflows float64: the 'rbf' kernel is not finite at max \|x\| = .*e\+300",
    ),
)(lambda: _fns().extrapolate(X * 1e300, X[:5] * 1e300, width=1.0))
case("Nystrom.transform-poly-overflow", (ValueError, r"k\(X, Z\)( @ projection)? " + _OVERFLOW))(
    lambda: fit("Nystrom", kernel="poly", degree=64).transform(X * 1e6)
)
case(
    "GeneralizedNystrom.side-information-scale-overflow",
    (ValueError, r"scale mu_max\^2 = inf .*Rescale X or the kernel"),
)(lambda: fit("GeneralizedNystrom", X * 3, kernel="poly", degree=64, lam=1.0))
case(
    "LogDetKernelLearner.projections-overflow",
    (ValueError, r"the Bregman projections overflowed float64 .*bounds span .* to .*e\+\d\d"),
)(lambda: fit("LogDetKernelLearner", X * 3, kernel="poly", degree=64))


# bounds 1e320 apart: the factor stays finite while the duals and relative violations reach
# inf; the sweeps used to run to max_iter on inf and return a model 1e322 off its bounds
def _far_bounds(name, lo):
    from nystrom_priors import labels_to_pairs

    X60 = np.random.default_rng(0).normal(size=(60, 4))
    y = np.where(np.arange(60) % 2 == 0, np.arange(60) % 3, -1)
    P = labels_to_pairs(y, 20, random_state=0)
    bounds = np.where(P[:, 2] > 0, lo, 1.0 / lo)
    return make(name, m=4, n_landmarks=10).fit(X60, pairs=P, bounds=bounds)


for _learner in ("LogDetKernelLearner", "VonNeumannKernelLearner"):
    for _lo in (1e-160, 1e-300):
        case(
            f"{_learner}.bounds-{_lo:g}-to-{1 / _lo:g}",
            (
                ValueError,
                r"overflowed float64 .*duals.*bounds span "
                + rf"{_lo:g} to {1 / _lo:g}".replace("+", r"\+"),
            ),
        )(lambda _learner=_learner, _lo=_lo: _far_bounds(_learner, _lo))
# a cannot-link pair of near-duplicates: hard projections must stretch it ~1e18-fold and
# overflow; the error used to blame the kernel's scale only
case(
    "LogDetKernelLearner.cannot-link-near-duplicates",
    (
        ValueError,
        r"overflowed float64 .*pair \[0, 40\] asks its squared distance .*e-19 to become "
        r".*check for near-duplicate samples or such bounds, drop such pairs or use a finite gamma",
    ),
)(
    lambda: make("LogDetKernelLearner", m=5).fit(
        np.vstack([X, X[:1] + 1e-9]), pairs=np.array([[0, 40, -1], [1, 2, 1]])
    )
)
# the graphs are scale-free (neighbours and Gaussian weights with the default width): they are
# built in units of max |x|, so samples at 1e200 or 1e-200 get the learned kernel of X
case("BCDNPKL.knn-at-1e200", OK)(lambda: fit("BCDNPKL", X * 1e200).transform(X * 1e200))
case("BCDNPKL.dense-graph-at-1e-200", OK)(
    lambda: fit("BCDNPKL", X * 1e-200, graph="dense").transform(X * 1e-200)
)
case("extrapolate.width-negative", (ValueError, r"width must be in \(0, inf\), got -1.0"))(
    lambda: _fns().extrapolate(X, X[:5], width=-1.0)
)
case(
    "extrapolate.feature-mismatch",
    (ValueError, r"X and Z must have the same number of features, got X with 4 and Z with 3"),
)(lambda: _fns().extrapolate(X, X[:5, :3], width=1.0))
case("extrapolate.out-wrong-shape", (ValueError, r"out must have shape \(40, 5\).*got \(40, 4\)"))(
    lambda: _fns().extrapolate(X, X[:5], width=1.0, out=np.empty((40, 4)))
)
case("extrapolate.out-wrong-dtype", (ValueError, r"out must have dtype float64.*got int64"))(
    lambda: _fns().extrapolate(X, X[:5], width=1.0, out=np.empty((40, 5), dtype=np.int64))
)
case("extrapolate.out-readonly", (ValueError, r"out must be writeable"))(
    lambda: _fns().extrapolate(X, X[:5], width=1.0, out=_readonly(np.empty((40, 5))))
)
case("extrapolate.huge-values", OK)(
    lambda: _fns().extrapolate(X * 1e150, X[:5] * 1e150, width=1e150)
)
# block_rows beyond int64 (OverflowError) or near 2^63 (the row arithmetic overflowed and the
# output was left uninitialised): a block of more rows than X has is all of X
case("extrapolate.block_rows-int64-max", OK)(
    lambda: _same(_fns().extrapolate(X, X[:5], width=1.0, block_rows=2**63 - 1), _E_REF())
)
case("extrapolate.block_rows-beyond-int64", OK)(
    lambda: _same(_fns().extrapolate(X, X[:5], width=1.0, block_rows=10**30), _E_REF())
)
case("iter_transform.block_rows-int64-max", OK)(
    lambda: list(fit("Nystrom").iter_transform(X, block_rows=2**63 - 1))
)


def _E_REF():
    return _fns().extrapolate(X, X[:5], width=1.0)


def _same(A, B):
    if not np.array_equal(A, B):
        raise AssertionError("the result differs from the default blocking")
    return A


# alignment is scale-invariant: kernels near 1e300 gave NaN (overflow), near 1e-300 a
# spurious "zero kernel" error (underflow)
_G = X @ X.T
case("alignment.kernels-at-1e300", OK)(
    lambda: np.array([_fns().alignment(_G * 1e300, _G * 1e300) - 1.0])
)
case("alignment.kernel-at-1e-300", OK)(lambda: np.array([_fns().alignment(_G * 1e-300, _G)]))
case("factored_alignment.factors-at-1e300", OK)(
    lambda: np.array([_fns().factored_alignment(X * 1e300, X * 1e200)])
)
case("factored_alignment.factor-at-1e-200", OK)(
    lambda: np.array([_fns().factored_alignment(X * 1e-200, X)])
)
# a huge Gaussian width: every edge weight is 1 (sigma**2 raised OverflowError)
case("knn_graph.gaussian-sigma-1e300", OK)(
    lambda: _fns().knn_graph(X, 5, weights="gaussian", sigma=1e300)[0].toarray()
)
case("iter_extrapolate.block_rows-zero", (ValueError, r"block_rows must be in \[1, inf\), got 0"))(
    lambda: list(_fns().iter_extrapolate(X, X[:5], width=1.0, block_rows=0))
)
case("make_kernel.poly-degree-negative", (ValueError, r"degree must be in \[1, 64\], got -2"))(
    lambda: _fns().make_kernel("poly", gamma=1.0, degree=-2)
)
# a width beside a KernelSpec used to be ignored silently (the spec's own width was used)
case("extrapolate.kernelspec-with-width", (ValueError, r"KernelSpec.*but width=2.0 was passed"))(
    lambda: _fns().extrapolate(X, X[:5], kernel=_fns().make_kernel("rbf", width=1.0), width=2.0)
)
case("Nystrom.kernelspec-with-gamma", (ValueError, r"KernelSpec.*but gamma=0.5 was passed"))(
    lambda: fit("Nystrom", kernel=_fns().make_kernel("rbf", width=1.0), gamma=0.5)
)
# numpy's string arrays drop trailing NULs: "a\0" merged with "a" as one class, and a
# column "a\0" came back from save / load as "a"
case("GeneralizedNystrom.label-ending-in-nul", (ValueError, r"label 'a\\x00'.*NUL character"))(
    lambda: fit("GeneralizedNystrom", y=np.array(["a", "a\0", "b"], dtype=object)[Y], lam=1.0)
)


def _frame(values, columns):
    import pandas as pd

    return pd.DataFrame(values, columns=columns)


case("Nystrom.feature-name-ending-in-nul", (ValueError, r"Feature name 'a\\x00' ends with a NUL"))(
    lambda: fit("Nystrom", _frame(X, ["a", "a\0", "b", "c"]))
)
# kernel values of 1e-127: their squares are normal, mu_max^2 underflows; it was called
# "orthogonal to the landmarks", with the advice of a wider kernel
_POLY64 = dict(kernel="poly", gamma=1e-3, degree=64, coef0=0.0)
for _lam in (1.0, "auto"):
    case(
        f"GeneralizedNystrom.poly-kernel-scale-underflows-lam-{_lam}",
        (ValueError, r"mu_max\^2 .* underflows float64.*max \|E\| = .*rescale X or the kernel"),
    )(
        lambda _lam=_lam: fit(
            "GeneralizedNystrom", y=Y, lam=_lam, kernel=_fns().make_kernel(**_POLY64)
        )
    )
# a subnormal delta made the CG bound's condition number inf: "cannot convert float NaN to
# integer" from inside, after RuntimeWarnings
for _delta in (5e-324, 1e-310):
    case(f"BCDNPKL.delta-{_delta:g}", OK)(
        lambda _d=_delta: fit("BCDNPKL", pairs=PAIRS, delta=_d).transform(X)
    )
# found by the adversarial sweeps: errors from deep inside instead of what was wrong
case("make_kernel.poly-data-as-list", OK)(lambda: _fns().make_kernel("poly", X=X.tolist()))
case("make_kernel.poly-data-1d", (ValueError, r"X must be a 2-D array.*1-D array of shape"))(
    lambda: _fns().make_kernel("poly", X=X[0])
)
case("labels_to_pairs.scalar-y", (ValueError, r"y must be 1-D .*got shape \(\)"))(
    lambda: _fns().labels_to_pairs(5, 3)
)
case("kernel.B-1d", (ValueError, r"^B must be a 2-D array"))(lambda: fit("Nystrom").kernel(X, X[0]))
case("kernel.A-too-few-features", (ValueError, r"^A has 2 features, but Nystrom is expecting"))(
    lambda: fit("Nystrom").kernel(X[:, :2], X)
)


def _with_first(A, value):
    A[0, 0] = value
    return A


# a Python int beyond float64 inside an object array leaked numpy's bare OverflowError
case("Nystrom.X-int-beyond-float64", (ValueError, r"^X holds an integer near 2\^1329 beyond"))(
    lambda: fit("Nystrom", X_=_with_first(X.astype(object), 10**400))
)
# ... and a Fraction there raised a bare StopIteration from the first fix
case("Nystrom.X-fraction-beyond-float64", (ValueError, r"^X holds a number beyond float64"))(
    lambda: fit(
        "Nystrom", X_=_with_first(X.astype(object), __import__("fractions").Fraction(10**400))
    )
)
case("Nystrom.width-int-beyond-float64", (ValueError, r"width must be a finite float64"))(
    lambda: fit("Nystrom", width=10**400)
)
# a list of numbers and strings became strings: 1 and "1" scored as one label
case(
    "pair_accuracy.mixed-number-and-string",
    (ValueError, r"labels_true mixes labels of different types: int \(e.g. 1\) and str"),
)(lambda: _fns().pair_accuracy([1, "1"], [0, 1]))
case(
    "normalized_mutual_info.mixed-number-and-string",
    (ValueError, r"labels_pred mixes labels of different types: int \(e.g. 2\) and str"),
)(lambda: _fns().normalized_mutual_info([0, 0, 1], ["a", "a", 2]))
# a list's strings became a numpy string array, which drops a trailing NUL: "a\0" scored as "a"
case(
    "normalized_mutual_info.nul-ending-label",
    (ValueError, r"labels_true holds the label 'a\\x00', which ends with a NUL"),
)(lambda: _fns().normalized_mutual_info(["a", "a\0", "b"], [0, 1, 2]))
case(
    "pair_accuracy.nul-ending-bytes-label",
    (ValueError, r"labels_pred holds the label b'y\\x00', which ends with a NUL"),
)(lambda: _fns().pair_accuracy([0, 1, 2], [b"x", b"y\0", b"y"]))
# a self pair always "agrees" and inflated the score
case("pair_accuracy.self-pair", (ValueError, r"pairs\[1\] = \(2, 2\) pairs a sample with itself"))(
    lambda: _fns().pair_accuracy([0, 0, 1], [0, 1, 1], pairs=[[0, 1], [2, 2]])
)
case("pair_accuracy.sparse-pairs", (ValueError, r"got a sparse csr_matrix; call .toarray"))(
    lambda: _fns().pair_accuracy([0, 1, 1], [0, 1, 1], pairs=_csr(np.array([[0, 1]])))
)
case("pair_accuracy.ragged-pairs", (ValueError, r"pairs could not be read as a \(k, 2\)"))(
    lambda: _fns().pair_accuracy([0, 1, 1], [0, 1, 1], pairs=[[0, 1], [2]])
)
case("pair_accuracy.no-pair", (ValueError, r"k >= 1, got \(0, 3\) \(no pair"))(
    lambda: _fns().pair_accuracy([0, 1], [0, 1], pairs=np.zeros((0, 3), dtype=int))
)
case(
    "knn_graph.sigma-with-binary-weights",
    (ValueError, r"sigma applies to Gaussian edge weights \(weights='gaussian'; a dense"),
)(lambda: _fns().knn_graph(X, 5, sigma=1.0))
case("BCDNPKL.sigma-with-binary-weights", (ValueError, r"sigma applies to Gaussian edge weights"))(
    lambda: fit("BCDNPKL", sigma=1.0)
)
case("alignment.centered-string", (TypeError, r"centered must be True or False, got 'no'"))(
    lambda: _fns().alignment(np.eye(3), np.eye(3), centered="no")
)
case(
    "alignment.cross-kernel",
    (ValueError, r"K2 must be a symmetric kernel matrix k\(X, X\), got one"),
)(lambda: _fns().alignment(_G, _G + np.triu(np.ones_like(_G), 1)))
case("save.empty-path", (ValueError, r"the path is empty"))(lambda: _fns().save(fit("Nystrom"), ""))
case("select_landmarks.method-unknown", (ValueError, r"method must be one of .*got 'best'"))(
    lambda: _fns().select_landmarks(X, 5, method="best")
)
case("kernel_kmeans.n_clusters-above-n", (ValueError, r"n_clusters must be in \[1, 40\], got 41"))(
    lambda: _fns().kernel_kmeans(X, 41)
)
case("kernel_kmeans.n_clusters-zero", (ValueError, r"n_clusters must be in \[1, 40\], got 0"))(
    lambda: _fns().kernel_kmeans(X, 0)
)
case("kernel_kmeans.nan", (ValueError, r"finite values, got \d+ NaN"))(
    lambda: _fns().kernel_kmeans(_BAD_ARRAYS["nan"][0], 3)
)
case("normalized_mutual_info.length-mismatch", (ValueError, r"same length.*40.*39|40 and 39"))(
    lambda: _fns().normalized_mutual_info(Y, Y[:39])
)
case(
    "pair_accuracy.pairs-out-of-range", (ValueError, r"pairs reference samples outside \[0, 39\]")
)(lambda: _fns().pair_accuracy(Y, Y, pairs=np.array([[0, 99, 1]])))
# every training row's features were zero, silently, where the other learners refuse it
case(
    "Nystrom.fit_transform-far-landmarks",
    WARN("UserWarning", r"features of all 40 training samples are zero"),
)(lambda: _fns().Nystrom(landmarks=X[:5] + 1e3).fit_transform(X))
# the kernels that ignore degree and coef0 dropped them unchecked (the learners refuse them)
case("make_kernel.rbf-bad-degree", (ValueError, r"degree must be in \[1, 64\], got 0"))(
    lambda: _fns().make_kernel("rbf", gamma=1.0, degree=0)
)
case("extrapolate.linear-nan-coef0", (ValueError, r"coef0 must be a number, got NaN"))(
    lambda: _fns().extrapolate(X, X[:2], kernel="linear", coef0=float("nan"))
)
# landmarks given as an array returned before any other argument was checked
case(
    "select_landmarks.array-bad-max_iter", (ValueError, r"max_iter must be in \[0, inf\), got -1")
)(lambda: _fns().select_landmarks(X, 5, method=X[:5], max_iter=-1))
case("select_landmarks.array-bad-kernel", (ValueError, r"Unknown kernel 'bogus'"))(
    lambda: _fns().select_landmarks(X, 5, method=X[:5], kernel="bogus")
)
# without n_constraints every pair is returned, and same_fraction / random_state went unchecked
case(
    "labels_to_pairs.same_fraction-all-pairs",
    (ValueError, r"same_fraction must be in \[0, 1\], got 5.0"),
)(lambda: _fns().labels_to_pairs(np.array([0, 0, 1, 1, -1]), same_fraction=5.0))
case("labels_to_pairs.random_state-all-pairs", (TypeError, r"random_state must be None.*got str"))(
    lambda: _fns().labels_to_pairs(np.array([0, 0, 1, 1, -1]), random_state="seed")
)
case(
    "labels_to_pairs.single-labeled-sample",
    (ValueError, r"y labels only one sample; no pair can be formed"),
)(lambda: _fns().labels_to_pairs(np.array([0, -1, -1])))
case("alignment.shape-mismatch", (ValueError, r"same shape.*\(40, 40\).*\(39, 39\)|40.*39"))(
    lambda: _fns().alignment(X @ X.T, X[:39] @ X[:39].T)
)
case("alignment.not-square", (ValueError, r"square.*\(40, 4\)"))(lambda: _fns().alignment(X, X))
case("factored_alignment.rows-mismatch", (ValueError, r"40.*39"))(
    lambda: _fns().factored_alignment(X, X[:39])
)
case("knn_graph.n_neighbors-too-many", (ValueError, r"n_neighbors=40 must be < n_samples=40"))(
    lambda: _fns().knn_graph(X, n_neighbors=40)
)
# the values underflow rather than vanish; the message said only "the kernel is zero"
case("Nystrom.poly-kernel-underflows", (ValueError, r"or its values underflow float64 to zero"))(
    lambda: _fns().Nystrom(5, kernel="poly", gamma=1e-10, coef0=0.0, degree=64).fit(X)
)
# a relative tolerance: 1e300 squared overflowed a Python float (OverflowError)
case(
    "distance_bounds.zero_length-huge",
    (ValueError, r"zero_length must be in \[0, 1\), got 1e\+300"),
)(lambda: _fns().distance_bounds(X, PAIRS, zero_length=1e300))
case(
    "distance_bounds.zero_length-every-pair",
    (ValueError, r"every pair is closer than zero_length=0.1 .* lower zero_length"),
)(lambda: _fns().distance_bounds(1.0 + 1e-3 * X, PAIRS, zero_length=0.1))
# the relative rule blamed float64 ("rescale G0") for what the caller's zero_length did
case(
    "distance_bounds.relative-zero_length",
    (ValueError, r"closer than zero_length=0.1 times their norm.*Lower zero_length"),
)(lambda: _fns().distance_bounds(1.0 + 1e-3 * X, PAIRS, zero_length=0.1, rule="relative"))
case("distance_bounds.unknown-rule", (ValueError, r"^rule must be one of .*got 'median'"))(
    lambda: _fns().distance_bounds(X @ X.T, PAIRS, rule="median")
)
# distance_bounds used to index with whatever it was given (an IndexError for labels passed
# as pairs, a silent wrap-around for negative indices)
case(
    "distance_bounds.labels-as-pairs",
    (ValueError, r"pairs must be an integer array of shape \(k, 3\).*got shape \(40,\)"),
)(lambda: _fns().distance_bounds(X, Y))
case(
    "distance_bounds.negative-index",
    (
        ValueError,
        r"pairs\[0\] = \[-1, 3, 1\] references a sample out of range; indices must be in \[0, 39\]",
    ),
)(lambda: _fns().distance_bounds(X, np.array([[-1, 3, 1]]), rule="relative"))
case("distance_bounds.G0-nan", (ValueError, r"G0 must contain only finite values, got 1 NaN"))(
    lambda: _fns().distance_bounds(
        np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X), PAIRS
    )
)
case(
    "iter_transform.out-wrong-shape",
    (
        ValueError,
        r"out must be an ndarray \(or memmap\) of shape \(n, 8\), got ndarray with shape \(40, 3\)",
    ),
)(lambda: list(fit("Nystrom").iter_transform(X, out=np.empty((40, 3)))))
case(
    "iter_transform.block-wrong-features",
    (ValueError, r"X block at row 10 has 3 features, but Nystrom is expecting 4"),
)(lambda: list(fit("Nystrom").iter_transform(iter([X[:10], X[10:, :3]]))))


# the learned kernel G_A G_B^T of float32 factor rows near 1e22 overflowed float32: inf with
# a RuntimeWarning
def _float32_kernel(stream=False):
    X32 = (X[:16] * 1e22).astype(np.float32)
    model = make("VonNeumannKernelLearner", m=4, init="linear", kernel="linear", max_iter=1)
    model.fit(X32, np.arange(16) % 2)
    return list(model.iter_kernel_rows(X32, X32[:3])) if stream else model.kernel(X32[:3])


_F32 = r"the learned kernel of this VonNeumannKernelLearner overflows float32: its factor rows "
case("kernel.float32-overflow", (ValueError, _F32 + r"reach .*e\+22.*pass float64 data"))(
    _float32_kernel
)
case("iter_kernel_rows.float32-overflow", (ValueError, _F32))(lambda: _float32_kernel(True))

# pair_score / pair_distance and iter_kernel_rows: numpy's own messages named neither the
# argument nor its expected form
case(
    "pair_score.sparse",
    (TypeError, r"pairs must be point pairs of shape .* a dense array; got a sparse matrix"),
)(lambda: fit("Nystrom").pair_score(_csr(X)))
case(
    "pair_distance.ragged",
    (ValueError, r"pairs must be point pairs of shape \(n_pairs, 2, n_features\).*ragged"),
)(lambda: fit("Nystrom").pair_distance([[X[0], X[1]], [X[2]]]))
# a 3-D X with an extra axis was refused as "pairs must be point pairs ...": the call has no
# argument named pairs
for _name in ("GeneralizedNystrom", "LogDetKernelLearner", "BCDNPKL"):
    case(
        f"{_name}.fit-3d-X",
        (ValueError, r"X must be a 2-D array of samples .* or a 3-D array of metric-learn's"),
    )(lambda _n=_name: make(_n).fit(X[:, :, None], Y))
# masked entries were read as the values behind the mask
case("pair_score.masked-pairs", (ValueError, r"pairs is a masked array with 1 masked entries"))(
    lambda: fit("Nystrom").pair_score(
        np.ma.masked_array(X[:12].reshape(6, 2, 4), mask=np.arange(48).reshape(6, 2, 4) == 5)
    )
)
case("GeneralizedNystrom.masked-labels", (ValueError, r"y is a masked array with 1 masked"))(
    lambda: fit("GeneralizedNystrom", y=np.ma.masked_array(Y, mask=np.arange(40) == 3))
)
# the error named X, which the call does not have
for _method in ("pair_score", "pair_distance"):
    case(
        f"{_method}.wrong-features",
        (ValueError, r"pairs has 3 features per point \(shape \(6, 2, 3\)\), but Nystrom is"),
    )(lambda _m=_method: getattr(fit("Nystrom"), _m)(X[:12, :3].reshape(6, 2, 3)))
case(
    "iter_kernel_rows.B-iterator",
    (TypeError, r"B must be an array of rows .*got an iterator \(list_iterator\)"),
)(lambda: list(fit("Nystrom").iter_kernel_rows(X, iter([X[:3]]))))

# --- persistence -----------------------------------------------------------------------------


def _saved(tmp, name="Nystrom"):
    path = os.path.join(tmp, "model.npz")
    _fns().save(fit(name), path)
    return path


def _load_rewritten(**changes):
    with tempfile.TemporaryDirectory() as tmp:
        path = _saved(tmp)
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        arrays.update(changes)
        np.savez(os.path.join(tmp, "x.npz"), **arrays)
        return _fns().load(os.path.join(tmp, "x.npz"))


def _load_bytes(transform):
    with tempfile.TemporaryDirectory() as tmp:
        path = _saved(tmp)
        with open(path, "rb") as fh:
            raw = fh.read()
        with open(path, "wb") as fh:
            fh.write(transform(raw))
        return _fns().load(path)


case("load.truncated", (ValueError, r"truncated or corrupted"))(
    lambda: _load_bytes(lambda b: b[: len(b) // 2])
)
case("load.bit-flipped", (ValueError, r"truncated or corrupted|not a nystrom_priors"))(
    lambda: _load_bytes(lambda b: b[:200] + bytes([b[200] ^ 0xFF]) + b[201:])
)
case("load.text-file", (ValueError, r"not an .npz \(zip\) archive"))(
    lambda: _load_bytes(lambda b: b"hello")
)
case("load.future-version", (ValueError, r"format version 99.*reads versions 1..2.*upgrade"))(
    lambda: _load_rewritten(__format_version__=np.array(99))
)
case("load.foreign-npz", (ValueError, r"not a nystrom_priors model file"))(
    lambda: _load_rewritten(__nystrom_priors__=np.array("something else"))
)
# a model file is untrusted input: the whole schema is checked before a model is returned


def _load_meta_edited(edit):
    def update(arrays):
        meta = json.loads(str(arrays["__meta__"]))
        edit(meta)
        return {"__meta__": np.array(json.dumps(meta))}

    return _load_rewritten_with(update)


def _load_rewritten_with(make_changes):
    with tempfile.TemporaryDirectory() as tmp:
        path = _saved(tmp)
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        arrays.update(make_changes(arrays))
        np.savez(os.path.join(tmp, "x.npz"), **arrays)
        return _fns().load(os.path.join(tmp, "x.npz"))


case(
    "load.landmarks-width-mismatch",
    (ValueError, r"x\.npz'.*field 'landmarks_': shape \(8, 3\), expected \(\*, 4\)"),
)(lambda: _load_rewritten_with(lambda a: {"attr:landmarks_": a["attr:landmarks_"][:, :3]}))
case("load.projection-nan", (ValueError, r"field 'projection_': non-finite"))(
    lambda: _load_rewritten_with(lambda a: {"attr:projection_": a["attr:projection_"] * np.nan})
)
case(
    "load.negative-n-landmarks",
    (ValueError, r"field 'params': n_landmarks must be in \[1, inf\), got -8"),
)(lambda: _load_meta_edited(lambda m: m["params"].update(n_landmarks=-8)))
case("load.nan-width", (ValueError, r"field 'params': width must be a number, got NaN"))(
    lambda: _load_meta_edited(lambda m: m["params"].update(width=float("nan")))
)
case("load.unknown-parameter", (ValueError, r"field 'params.evil': unknown parameter of Nystrom"))(
    lambda: _load_meta_edited(lambda m: m["params"].update(evil=1))
)
case(
    "load.attrs-not-an-object",
    (ValueError, r"field '__meta__.attrs': expected a JSON dict, got list"),
)(lambda: _load_meta_edited(lambda m: m.update(attrs=[])))


def _load_forged_header():
    import io
    import zipfile

    header = repr({"descr": "<f8", "fortran_order": False, "shape": (100000, 100000)})
    header = header.encode("latin1") + b" " * 10 + b"\n"
    payload = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64
    with tempfile.TemporaryDirectory() as tmp:
        path = _saved(tmp)
        buf = io.BytesIO()
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w") as dst:
            for info in src.infolist():
                if info.filename != "attr:S0_.npy":
                    dst.writestr(info, src.read(info))
            dst.writestr("attr:S0_.npy", payload)
        with open(path, "wb") as fh:
            fh.write(buf.getvalue())
        return _fns().load(path)


case(
    "load.header-claims-huge-array",
    (ValueError, r"member 'attr:S0_.npy'.*claims shape \(100000, 100000\)"),
)(_load_forged_header)
# kernel=None was reported as "got method" (attribute access turns None into kernel())
case(
    "Nystrom.kernel-None",
    (TypeError, r"kernel must be a string naming a kernel or a KernelSpec, got NoneType"),
)(lambda: fit("Nystrom", kernel=None))


# a KernelSpec parameter used to be saved as None, which save then refused as invalid
def _save_kernelspec_model():
    spec = _fns().make_kernel("rbf", width=2.0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.npz")
        model = fit("GeneralizedNystrom", kernel=spec, lam=1.0)
        _fns().save(model, path)
        return _fns().load(path).transform(X) - model.transform(X)


case(
    "save.kernelspec-parameter",
    WARN("UserWarning", r"kernel=KernelSpec\(name='rbf'.* saved as its name 'rbf'"),
)(_save_kernelspec_model)
case(
    "save.invalid-parameter",
    (ValueError, r"the Nystrom being saved .*n_landmarks must be in \[1, inf\)"),
)(lambda: _fns().save(fit("Nystrom").set_params(n_landmarks=0), "/tmp/never-written.npz"))


# out= may not share memory with an input (the kernels read X while they write out)
def _extrapolate_into_x():
    A = np.ascontiguousarray(X[:4])  # (4, 4): E = k(A, Z) has A's shape
    return _fns().extrapolate(A, X[:4], width=1.0, out=A)


def _stream_into_x():
    B = np.ascontiguousarray(X[:, :4])
    return list(fit("Nystrom", m=4).iter_transform(B, out=B))


case("extrapolate.out-aliases-X", (ValueError, r"out shares memory with X"))(_extrapolate_into_x)
case("iter_transform.out-aliases-X", (ValueError, r"out shares memory with X"))(_stream_into_x)

# helpers
case("pair_accuracy.nan-labels", (ValueError, r"labels_true\[1\] = .*nan.*NaN"))(
    lambda: _fns().pair_accuracy([0.0, np.nan, 1.0], [0, 1, 1])
)
case(
    "normalized_mutual_info.2d-labels",
    (ValueError, r"labels_pred must be a 1-D array of labels, got shape \(2, 2\)"),
)(lambda: _fns().normalized_mutual_info([0, 1, 1, 0], [[0, 1], [1, 0]]))
case(
    "distance_bounds.reversed-percentiles",
    (
        ValueError,
        r"percentiles must be two numbers \(low, high\) with 0 <= low <= high <= 100"
        r".*got \(95, 5\)",
    ),
)(lambda: _fns().distance_bounds(X, PAIRS, percentiles=(95, 5)))
case(
    "labels_to_pairs.all-pairs-quadratic",
    (ValueError, r"all 799980000 pairs would take .*pass n_constraints"),
)(lambda: _fns().labels_to_pairs(np.arange(40000) % 3))
case(
    "LogDetKernelLearner.pairs-contradict-labels",
    (
        ValueError,
        r"pairs\[0\] = \[0, 3, -1\] is a cannot-link pair, "
        r"but y gives samples 0 and 3 the same label \(0 and 0\)",
    ),
)(lambda: make("LogDetKernelLearner", init="linear").fit(X, Y, pairs=np.array([[0, 3, -1]])))
case(
    "BCDNPKL.pairs-contradict-labels",
    (
        ValueError,
        r"pairs\[1\] = \[0, 1, 1\] is a must-link pair, "
        r"but y gives samples 0 and 1 different labels",
    ),
)(lambda: make("BCDNPKL").fit(X, Y, pairs=np.array([[0, 3, 1], [0, 1, 1]])))
case("load.missing-file", (FileNotFoundError, r"No such model file"))(
    lambda: _fns().load("/nonexistent/model.npz")
)


# the OSErrors of the atomic write named its temporary file, not the path given
def _save_into_directory():
    with tempfile.TemporaryDirectory() as tmp:
        _fns().save(fit("Nystrom"), tmp)


case("save.path-is-a-directory", (IsADirectoryError, r"cannot save to '.*': it is a directory"))(
    _save_into_directory
)
case(
    "save.missing-directory",
    (FileNotFoundError, r"cannot save to '/nonexistent/m.npz': directory '/nonexistent' does not"),
)(lambda: _fns().save(fit("Nystrom"), "/nonexistent/m.npz"))


def _save_bytes_path():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.npz")
        _fns().save(fit("Nystrom"), path.encode())
        return _fns().load(path).transform(X)


case("save.bytes-path", OK)(_save_bytes_path)
case("save.unfitted", ("NotFittedError", r"This Nystrom instance is not fitted"))(
    lambda: _fns().save(make("Nystrom"), "/tmp/never-written.npz")
)
case("save.foreign-object", (TypeError, r"handles the estimators of nystrom_priors"))(
    lambda: _fns().save(object(), "/tmp/never-written.npz")
)


# --- runner ----------------------------------------------------------------------------------


def _finite(result) -> bool:
    if isinstance(result, np.ndarray):
        return bool(np.isfinite(result).all()) if result.dtype.kind in "fc" else True
    if isinstance(result, (list, tuple)):
        return all(_finite(r) for r in result)
    return True


def records(selected=None):
    """Run the cases (all, or the ids in ``selected``); yield one outcome dict per case."""
    for case_id, fn, _expected in CASES:
        if selected and case_id not in selected:
            continue
        record = {"id": case_id}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fn()
            record.update(
                status="ok",
                finite=_finite(result),
                warnings=[[type(w.message).__name__, str(w.message)] for w in caught],
            )
        except Exception as exc:  # noqa: BLE001 - the catalogue records whatever happens
            record.update(
                status="raised",
                type=type(exc).__name__,
                message=str(exc),
                mro=[c.__name__ for c in type(exc).__mro__],
            )
        yield record


def run(selected=None) -> None:
    for record in records(selected):
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    run(set(sys.argv[1:]))
