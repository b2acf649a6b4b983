"""``E = k(X, Z)`` for CSR ``X``: the Python side of ``_numba/_sparse.py``.

``_rowblocks._Prepared.compute`` hands CSR input here. The landmarks stay dense (k-means
centres are dense; sampled rows of a sparse X are densified, ``m x d``), so the cross term is
a sparse x dense product computed row by row from the stored entries: time ``O(nnz(X) m)``,
no ``n x d`` array ever. The landmark side (``Z^T`` and per-landmark norms) is rebuilt in
float64 from the prepared landmarks once and kept on them: ``O(m d)``. Landmarks that are
mostly zeros (uniform, k-means++ or RPCholesky rows of a sparse X) are kept sparse by feature,
and a row then costs only the features it shares with the landmarks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._threads import numba_threads
from ._unit_rows import cosine_limit, unit_landmarks

__all__ = ["CsrPrepared", "compute_csr", "landmark_side", "warn_cancellation"]

_EPS64 = float(np.finfo(np.float64).eps)


class CsrPrepared:
    """The landmark side of ``k(X, Z)`` for CSR ``X`` only, without the dense path's copies.

    ``_rowblocks._Prepared`` keeps centred (RBF) or unit (cosine) landmarks and their
    transpose in X's dtype for the dense kernels: at 50,000 features x 300 landmarks each
    copy is 120 MB, and CSR input needs none of them. This holds what :func:`landmark_side`
    reads (``spec``, ``Zs``, ``shift``, ``zaux``, ``m``): the raw landmarks (a view when they
    are float64), or the unit ones for the cosine kernel.
    """

    def __init__(self, Z: np.ndarray, spec: Any) -> None:
        self.spec = spec
        Zs = np.asarray(Z, dtype=np.float64)
        self.m, d = Zs.shape
        self.shift = np.zeros(d)
        self.zaux = np.zeros(self.m)
        if spec.name == "cosine":
            Zs = unit_landmarks(Zs)
            self.zaux = (np.abs(Zs).max(axis=1, initial=0.0) > 0).astype(np.float64)
        self.Zs = Zs

    def compute(
        self,
        X: Any,
        out: np.ndarray,
        tile: int | None,
        path: Any = None,
        x_absmax: float | None = None,
    ) -> None:
        """Fill ``out`` with ``k(X, Z)`` for canonical CSR ``X`` (see :func:`compute_csr`);
        ``path`` and ``x_absmax`` are the dense path's and unused."""
        compute_csr(self, X, out, tile)


def landmark_side(prep: Any) -> tuple[Any, np.ndarray]:
    """``(Z^T (d, m) float64, zaux (m,) float64)`` for the kernel of ``prep``.

    RBF: raw landmarks (``prep`` holds them centred; adding the shift back gives exact zeros
    where they were zeros) and ``||z||^2``. Cosine: the unit landmarks and their 0/1 flags as
    prepared. Laplacian: raw landmarks and ``||z||_1``. Linear and polynomial: raw landmarks.
    ``Z^T`` is CSR when at most 1/8 of its entries are non-zero (landmarks that are rows of a
    sparse X): the cross terms then cost only the features stored in both x and z, as for
    sparse x sparse products. Dense otherwise.
    """
    name = prep.spec.name
    Z = prep.Zs.astype(np.float64)  # a copy
    zaux = np.zeros(Z.shape[0])
    if name == "rbf":
        Z += prep.shift
        zaux = np.einsum("ij,ij->i", Z, Z)
    elif name == "cosine":
        zaux = np.asarray(prep.zaux, dtype=np.float64)
    elif name == "laplacian":
        zaux = np.abs(Z).sum(axis=1)
    if Z.size >= (1 << 16) and np.count_nonzero(Z) <= Z.size // 8:
        import scipy.sparse as sp

        ZT = sp.csr_matrix(Z).T.tocsr()  # never a dense transpose
        ZT.sort_indices()
        return ZT, zaux
    return np.ascontiguousarray(Z.T), zaux


def compute_csr(prep: Any, X: Any, out: np.ndarray, tile: int | None) -> None:
    """Fill ``out`` (n, m), X's dtype, with ``k(X, Z)`` for canonical CSR ``X``.

    Raises ``ValueError`` when a kernel value is not finite in X's dtype (the dense path's
    rescaling for data near the float range is not repeated here: sparse data are counts,
    frequencies or tf-idf weights).
    """
    from ._numba import _sparse as ks

    n = X.shape[0]
    if n == 0:
        return
    side = getattr(prep, "_csr_side", None)
    if side is None:  # once per prepared landmark set (a model keeps its _Prepared)
        side = prep._csr_side = landmark_side(prep)
    ZT, zaux = side
    if tile is None:
        # about the same work per tile as the dense path's 1 MiB tiles
        per_row = max(1, (X.nnz // max(1, n)) * prep.m)
        tile = int(max(8, min(4096, (1 << 20) // per_row)))
    spec = prep.spec
    args = (zaux, spec.code, float(spec.gamma), float(spec.coef0), int(spec.degree), out, tile)
    # cross terms: nnz(X) m multiply-adds; the element-wise map about 16 per entry
    with numba_threads(float(X.nnz) * prep.m + 16.0 * n * prep.m):
        if isinstance(ZT, np.ndarray):
            ks.extrapolate_csr(X.indptr, X.indices, X.data, ZT, *args)
        else:
            ZTp = (ZT.indptr, ZT.indices, ZT.data)
            ks.extrapolate_csr_zs(X.indptr, X.indices, X.data, *ZTp, *args)
    if spec.name == "cosine":
        _redo_extreme_rows(prep, X, out)
    if spec.name in ("rbf", "laplacian") and spec.gamma > 0:
        # rbf: ||x||^2 + ||z||^2 - 2 x.z; laplacian: ||x||_1 + ||z||_1 minus the shared
        # features' correction. Either loses eps * (norms) to cancellation, against the width
        if spec.name == "rbf":
            rows = row_sq_norms(X)
        else:  # per-row sums of |x|
            rows = np.asarray(abs(X).sum(axis=1), dtype=np.float64).ravel()
        size = float(rows.max(initial=0.0)) + float(np.max(zaux, initial=0.0))
        what = f"k(X, Z) (the {spec.name!r} kernel)"
        expansion = _L2_EXPANSION if spec.name == "rbf" else "||x||_1 + ||z||_1 - ..."
        warn_cancellation(X, size, 1.0 / float(spec.gamma), out.dtype, what, "width", expansion)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(out, dtype=np.float64)) or np.isfinite(out).all():
            return
    raise ValueError(
        f"k(X, Z) overflows {out.dtype}: the {spec.name!r} kernel is not finite at max |x| = "
        f"{float(np.abs(X.data).max(initial=0.0)):.3g}. Rescale X."
    )


# the sparse kernel sums squares unscaled in float64: they underflow below 2^-511 and
# overflow above 2^511 (a zero or an infinite norm), so rows beyond these are redone
_SQUARES_SAFE = (2.0**-500, 2.0**500)


def _redo_extreme_rows(prep: Any, X: Any, out: np.ndarray) -> None:
    """The cosine kernel on rows whose largest ``|x|`` is below ``cosine_limit`` or outside
    ``_SQUARES_SAFE``: their squared norms under- or overflow (a zero row, or NaN) and tiny
    rows' cross terms lose precision, so they are computed again from the rows times a
    power of two (as ``_unit_rows.unit_rows``), which the cosine does not see. One O(nnz)
    pass finds them."""
    full = np.flatnonzero(np.diff(X.indptr) > 0)
    if full.size == 0:
        return
    top = np.maximum.reduceat(np.abs(X.data), X.indptr[full]).astype(np.float64)
    low = max(cosine_limit(X.dtype), _SQUARES_SAFE[0])
    extreme = (top > 0) & ((top < low) | (top > _SQUARES_SAFE[1]))
    if not extreme.any():
        return
    rows = full[extreme]
    sub = X[rows]
    shift = np.repeat(np.frexp(top[extreme])[1], np.diff(sub.indptr))
    sub.data = np.ldexp(sub.data.astype(np.float64), -shift).astype(X.dtype)
    part = np.empty((rows.size, out.shape[1]), dtype=out.dtype)
    compute_csr(prep, sub, part, None)
    out[rows] = part


def row_sq_norms(X: Any) -> np.ndarray:
    """``||x_i||^2`` (float64, shape (n,)) of canonical CSR ``X``."""
    from ._numba import _sparse as ks

    out = np.empty(X.shape[0])
    ks.row_sq_norms(X.indptr, X.data, out, 4096)
    return out


# the squared distance as sparse rows give it, whose cancellation warn_cancellation names
_L2_EXPANSION = "||x||^2 + ||z||^2 - 2 x.z"


def warn_cancellation(
    X: Any,
    size: float,
    scale: float,
    dtype: Any,
    what: str,
    unit: str,
    expansion: str = _L2_EXPANSION,
) -> None:
    """Warn when ``what`` on CSR ``X`` loses more than half of ``dtype``'s digits.

    Distances of sparse rows are expanded, ``||x||^2 + ||y||^2 - 2 x.y`` (or its L1
    counterpart), with float64 sums, which lose about ``eps64 * size`` to cancellation, size
    the largest such norms. Dense data are centred first, which leaves only their spread;
    sparse data are not, since centring would densify them. Against ``scale`` (the kernel's
    width, or the data's mean squared distance) this is harmless for data near the origin
    (counts, frequencies, tf-idf) and ruinous for a column that carries a large offset (a
    timestamp, a coordinate). ``unit`` names ``scale`` and ``expansion`` the formula in the
    message, which holds no figure of the block at hand, so that the warnings registry shows
    it once for a stream of blocks rather than once per block."""
    if not (scale > 0 and np.isfinite(size)) or X.shape[0] == 0:
        return
    lost = _EPS64 * size / scale
    # a Python float: numpy would cast lost to float32 against a float32 eps (and overflow)
    if not lost > float(np.sqrt(np.finfo(dtype).eps)):
        return
    import warnings

    from ._feature_names import _user_stacklevel

    warnings.warn(
        f"{what} on sparse X far from the origin: distances expanded through the rows' "
        f"norms ({expansion}) lose more than half their digits to cancellation against the "
        f"{unit}. Sparse data are not centred, as that would densify them: subtract the offset "
        "of the columns far from 0 (their means), or pass X as a dense array, which is "
        "centred.",
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
