"""Similarity graphs of BCDNPKL (Hu et al. 2011): exact kNN search, the symmetrised kNN graph,
the dense Gaussian graph and the regularised normalised Laplacian.

Neighbours, and the Gaussian weights ``exp(-||xi - xj||^2 / (2 sigma^2))`` with a width
proportional to the neighbour distances, do not change when all samples are scaled. So the
distances are computed in units of ``2^e ~ max |x|`` (a power of two: exact): squared norms
neither overflow (``|x| ~ 1e160``) nor underflow (``|x| ~ 1e-160``), and for data of ordinary
scale the results are bit for bit those of the unscaled formulas.

CSR input (``scipy.sparse``) is never densified: squared norms come from the stored entries
and the cross products ``y . x`` of a block of rows against all samples from the sparse x
sparse kernel of ``_numba/_sparse.py`` (the landmark side being all samples, stored sparse by
feature), into a dense block of at most ``2^24`` float64 values. The selection is then the
dense path's own (ties to the smaller index); the cross products are summed in another order,
so on data without exact ties (distances equal to the last bit) the neighbours are the same.

Distances do not change either when all samples are shifted, but the expansion
``||x||^2 + ||y||^2 - 2 x.y`` loses them to cancellation far from the origin. Dense data whose
mean is large against their spread are centred first (``_centred_if_far``); CSR data are not,
and a warning says when that costs more than half the digits (``_csr.warn_cancellation``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._feature_names import _user_stacklevel
from ._validation import check_array, check_option, check_scalar, is_sparse

__all__ = ["knn_search", "knn_graph", "gaussian_graph", "normalized_laplacian"]

_WEIGHTS = ("binary", "gaussian")


def _exponent(*arrays: Any) -> int:
    from ._validation import abs_max
    from ._width import _binary_exponent

    # CSR: the stored values (the implicit zeros do not change the maximum of |x|)
    return _binary_exponent(
        max(float(np.abs(a.data).max(initial=0.0)) if is_sparse(a) else abs_max(a) for a in arrays)
    )


def _as_float(A: Any, dtype: Any, e: int = 0) -> Any:
    """``A / 2^e`` in ``dtype`` (exact); a CSR ``A`` gives a plain CSR matrix sharing its
    index arrays (only the values are converted)."""
    if not is_sparse(A):
        A = np.ascontiguousarray(A, dtype=dtype)
        return np.ldexp(A, -e) if e else A
    import scipy.sparse as sp

    data = A.data.astype(dtype, copy=False)
    data = np.ldexp(data, -e) if e else data
    return sp.csr_matrix((data, A.indices, A.indptr), shape=A.shape)


def _sq_norms(A: Any) -> np.ndarray:
    """``||a_i||^2`` in float64 of an ``_as_float`` array (CSR: from the stored entries;
    dense: summed in the fixed order of ``_numba/_knn.py``'s ``_row_sq``, as ``knn_tiles``
    sums its queries' norms)."""
    if is_sparse(A):
        from ._csr import row_sq_norms

        return row_sq_norms(A)
    from ._numba._knn import sq_norms
    from ._threads import numba_threads

    with numba_threads(float(A.size)):
        return sq_norms(A)


class _Cross:
    """``Y_block @ X^T`` as a dense (n_b, n) block for dense or CSR ``X`` and blocks.

    Both CSR: the sparse x sparse kernel of ``_numba/_sparse.py`` with the samples as its
    landmarks (``X^T`` in CSR, built once; linear kernel, float64 sums), so a row costs the
    entries it shares with X by feature. One of them CSR: scipy's sparse x dense product.
    """

    def __init__(self, X: Any) -> None:
        self.X = X
        self.XT = X.T.tocsr() if is_sparse(X) else None

    def __call__(self, Yb: Any) -> np.ndarray:
        X = self.X
        if self.XT is None:
            return Yb @ X.T if not is_sparse(Yb) else np.asarray(Yb @ X.T)
        if not is_sparse(Yb):
            return np.ascontiguousarray(np.asarray(X @ Yb.T).T)
        from ._numba import _sparse as ks
        from ._numba._extrapolate import LINEAR

        XT = self.XT
        out = np.empty((Yb.shape[0], X.shape[0]))
        zaux = np.zeros(X.shape[0])
        tile = max(1, min(64, Yb.shape[0] // 8))  # the rows do not depend on the tiling
        args = (Yb.indptr, Yb.indices, Yb.data, XT.indptr, XT.indices, XT.data, zaux)
        ks.extrapolate_csr_zs(*args, LINEAR, 0.0, 0.0, 1, out, tile)
        return out


def _rows_equal(
    A: Any, ia: np.ndarray, B: Any, ib: np.ndarray, dtype: Any = np.float64
) -> np.ndarray:
    """``A[ia[t]] == B[ib[t]]`` (every feature, exactly, once both are cast to ``dtype``)
    for each t of the broadcast index arrays; dense or CSR rows."""
    if not (is_sparse(A) or is_sparse(B)):
        return np.all(A[ia].astype(dtype, copy=False) == B[ib].astype(dtype, copy=False), axis=-1)
    import scipy.sparse as sp

    ia, ib = np.broadcast_arrays(ia, ib)
    shape = ia.shape
    ia, ib = ia.ravel(), ib.ravel()
    Ra = sp.csr_matrix(A[ia]) if is_sparse(A) else sp.csr_matrix(np.asarray(A)[ia])
    Rb = sp.csr_matrix(B[ib]) if is_sparse(B) else sp.csr_matrix(np.asarray(B)[ib])
    Ra, Rb = Ra.astype(dtype), Rb.astype(dtype)
    D = (Ra - Rb).tocsr()
    D.eliminate_zeros()  # x - y == 0 exactly iff x == y (finite values)
    return (np.diff(D.indptr) == 0).reshape(shape)


# centre dense data whose mean's squared norm exceeds this many times their mean squared
# deviation: the expansion then loses more than 4 of float64's 52 bits to cancellation
_FAR = 16.0


def _centred_if_far(X: Any, Y: Any, dtype: Any) -> tuple[Any, Any] | None:
    """``(X - c, Y - c)`` in ``dtype``, c = X's mean, for dense X and Y (None: no queries)
    far from the origin; else None.

    Distances do not change under a shift, but ``||x||^2 + ||y||^2 - 2 x.y`` loses them to
    cancellation when the data sit far from the origin (timestamps, map coordinates): its
    round-off is eps times the squared norms, not the squared spread. Centring, in float64
    before any float32 cast, leaves only the spread. The test runs on the moments of
    ``mean_squared_distance`` (``_width._dense_moments``: in units of ``2^e ~ max |x|``, a
    block of rows at a time), so it neither overflows nor underflows and answers alike at
    every scale. Data near the origin are left as they are (bit for bit the uncentred
    formulas). CSR data are never centred (it would densify them): far from the origin,
    their distances keep the expansion's round-off, and ``_csr.warn_cancellation`` warns
    where it exceeds half the digits of ``dtype``."""
    if is_sparse(X) or (Y is not None and is_sparse(Y)):
        if is_sparse(X) and X.shape[0] > 1:
            from ._csr import warn_cancellation
            from ._width import mean_squared_distance

            size = float(_sq_norms(X).max(initial=0.0))
            if Y is not None:  # CSR, or dense queries
                Yd = Y if is_sparse(Y) else np.asarray(Y, dtype=np.float64)
                sq = _sq_norms(Yd) if is_sparse(Y) else np.einsum("ij,ij->i", Yd, Yd)
                size += float(np.max(sq, initial=0.0))
            scale = mean_squared_distance(X)
            unit = "mean squared distance between samples"
            warn_cancellation(X, 2.0 * size if Y is None else size, scale, dtype, "k-NN", unit)
        return None
    from ._width import _dense_moments

    e, centre, total, _ = _dense_moments(X)
    if not float(centre @ centre) > _FAR * max(total, 0.0) / X.shape[0]:
        return None
    centre = np.ldexp(centre, e)  # exact: back to X's units

    def centred(A: Any) -> Any:
        return _as_float(np.asarray(A, dtype=np.float64) - centre, dtype)

    return centred(X), None if Y is None else centred(Y)


def _knn_scaled(
    X: np.ndarray,
    Y: np.ndarray | None,
    k: int,
    block_rows: int = 2048,
    dtype: Any = np.float64,
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """:func:`knn_search` in units of ``2^e``: (indices, distances / 2^e, e, squared norms of
    the queries / 4^e, centred with X where the data are far from the origin:
    ``_centred_if_far``). ``dtype`` is that of the cross products (float32 halves their
    cost; norms and distances stay float64; two CSR operands are summed in float64 anyway).
    X and Y: dense or canonical CSR."""
    from ._numba._knn import knn_select, knn_tiles
    from ._threads import BLAS_ONE_THREAD as _BLAS
    from ._threads import numba_threads

    self_search = Y is None
    X0, Y0 = X, Y
    X = _as_float(X, dtype)
    Yq = X if self_search else _as_float(Y, dtype)
    limit = X.shape[0] - (1 if self_search else 0)
    if k < 1 or k > limit:
        raise ValueError(
            f"n_neighbors={k} must be in [1, {limit}] for {X.shape[0]} samples"
            + (" (a sample is not its own neighbour)." if self_search else ".")
        )
    if Yq.shape[1] != X.shape[1]:  # never a shape error inside the parallel kernel
        raise ValueError(
            f"Y has {Yq.shape[1]} features but X has {X.shape[1]}: the queries must have the "
            "samples' features."
        )
    far = _centred_if_far(X0, Y0, dtype)
    if far is not None:
        X, Yq = far[0], far[0] if self_search else far[1]
    e = _exponent(X, Yq)
    if e:
        X = _as_float(X, dtype, e)
        Yq = X if self_search else _as_float(Yq, dtype, e)
    xn = _sq_norms(X)
    idx = np.empty((Yq.shape[0], k), dtype=np.int64)
    d2 = np.empty((Yq.shape[0], k), dtype=np.float64)
    if not (is_sparse(X) or is_sparse(Yq)) and _BLAS.available():
        # tiles of query rows on Numba's threads, one BLAS thread each (``knn_tiles``)
        from ._rowblocks import _tile_rows

        yn = np.empty(Yq.shape[0])
        # a function of the shapes only (results must not depend on the thread count); each
        # thread holds a tile x n block: at most 2^21 values (16 MiB) once n is large
        n = X.shape[0]
        tile = min(_tile_rows(n, X.shape[1], X.dtype.itemsize), block_rows, (1 << 21) // n)
        tile = max(1, tile)
        work = float(Yq.shape[0]) * X.shape[0] * (X.shape[1] + 4)
        with _BLAS, numba_threads(work):
            knn_tiles(Yq, X, xn, self_search, k, idx, d2, yn, tile)
        return idx, np.sqrt(d2), e, yn
    yn = xn if self_search else _sq_norms(Yq)
    cross_of = _Cross(X)
    step = max(1, min(block_rows, (1 << 24) // max(1, X.shape[0])))
    for s in range(0, Yq.shape[0], step):
        cross = cross_of(Yq[s : s + step])
        knn_select(
            cross, yn[s : s + step], xn, s, self_search, k, idx[s : s + step], d2[s : s + step]
        )
    return idx, np.sqrt(d2), e, yn


def _unscaled(value: Any, e: int, what: str) -> Any:
    """``value * 2^e``, refused when it leaves float64's range."""
    with np.errstate(over="ignore"):
        out = np.ldexp(value, e)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"{what} exceed float64's range (the samples reach 2^{e}); rescale the data."
        )
    return out


def knn_search(
    X: np.ndarray, Y: np.ndarray | None = None, n_neighbors: int = 5, *, block_rows: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours of the rows of Y among the rows of X (Euclidean).

    Blockwise: the cross products of at most ``block_rows`` query rows at a time by BLAS, then
    the selection while they are in cache (ties to the smaller index, so results do not depend
    on threads). Beyond inputs and outputs, memory is one block per thread of at most about
    2^21 values (one row of n_X values when X has more rows). With ``Y=None`` the neighbours of
    X's own rows, excluding each row itself. Any finite scale works (module docstring). X and
    Y may be ``scipy.sparse`` matrices (converted to CSR, never densified).

    Returns
    -------
    indices : ndarray of shape (n_Y, k), int64, nearest first
    distances : ndarray of shape (n_Y, k), float64 (Euclidean)
    """
    X = check_array(X, accept_sparse=True)
    if Y is not None:
        Y = check_array(Y, name="Y", accept_sparse=True, min_samples=0)
    idx, dist, e, _ = _knn_scaled(X, Y, int(n_neighbors), block_rows)
    return idx, _unscaled(dist, e, "neighbour distances")


def _sigma_from_knn(dist: np.ndarray, floor: float = 0.0) -> float:
    """Half the mean distance to the (up to) 10 nearest neighbours (Hu et al., Sec. 4.2).
    Distances up to ``floor`` count as 0: the rounding of ``||a||^2 + ||b||^2 - 2 a.b``
    (``_rounding_floor``), which would otherwise make a width of duplicated samples."""
    near = dist[:, :10]
    sigma = 0.5 * float(np.where(near > floor, near, 0.0).mean())
    if not sigma > 0:
        raise ValueError(
            f"every sample's {near.shape[1]} nearest neighbours are at distance 0"
            + (" (up to rounding)" if floor > 0 else "")
            + ": each sample has that many duplicates or more, so the default Gaussian "
            "width (half the mean distance to the 10 nearest neighbours) is 0. Pass sigma, "
            "or remove the duplicated samples."
        )
    return sigma


def _rounding_floor(sq_norms: np.ndarray, d: int) -> float:
    """The distance below which ``sqrt(||a||^2 + ||b||^2 - 2 a.b)`` is rounding: its square's
    error is a few ``(d + 2) eps`` times the larger squared norm."""
    return float(np.sqrt(4.0 * (d + 2) * np.finfo(np.float64).eps * sq_norms.max(initial=0.0)))


def gaussian_weights(dist: np.ndarray, sigma: float, e: int) -> np.ndarray:
    """``exp(-d^2 / (2 sigma^2))`` for distances ``dist`` given in units of ``2^e`` (see
    :func:`dense_weights`)."""
    return dense_weights(dist**2, sigma, e)


def knn_graph(X: Any, n_neighbors: int = 5, *, weights: str = "binary", sigma: float | None = None):
    """Symmetrised kNN graph ``(S, sigma)``: S a scipy CSR matrix (edge if either sample is
    among the other's k nearest; no self loops) and the width of its heat-kernel weights.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n, d)
        Sparse input is converted to CSR and never densified.
    n_neighbors : int, default=5
    weights : {"binary", "gaussian"}, default="binary"
        Edge weight 1, or ``exp(-||xi - xj||^2 / (2 sigma^2))``.
    sigma : float, optional
        Gaussian width (``weights="gaussian"`` only); default half the mean distance to the 10
        nearest neighbours.

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n, n), symmetric
    sigma : float or None
        The width used (None for binary weights).

    Warns
    -----
    UserWarning
        Where Gaussian weights leave a sample without any edge (every one of them underflows
        at a sigma far below its neighbours' distances): a graph Laplacian's normalisation
        is undefined there (:class:`BCDNPKL` refuses such a graph).
    """
    given = sigma
    S, sigma = _knn_graph(X, n_neighbors, weights, sigma)
    lone = np.flatnonzero(np.diff(S.indptr) == 0)
    if lone.size and sigma is not None:  # a binary edge is never lost
        warnings.warn(
            f"knn_graph: {lone.size} of {S.shape[0]} samples (e.g. sample {int(lone[0])}) have "
            f"no edge left: exp(-d^2 / (2 sigma^2)) underflows to 0 at sigma={sigma:.3g} for "
            "all their neighbours (outliers, far from every other sample). Use a larger sigma"
            + (
                " (or sigma=None: half the mean distance to the 10 nearest neighbours)."
                if given is not None
                else "."
            ),
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    return S, sigma


def _knn_graph(X: Any, n_neighbors: int, weights: str, sigma: float | None):
    """``knn_graph`` without its warning, for callers that refuse an isolated sample
    themselves (``normalized_laplacian``)."""
    import scipy.sparse as sp

    X = check_array(X, accept_sparse=True)
    weights = check_option(weights, "weights", _WEIGHTS)
    n = X.shape[0]
    k = int(check_scalar(n_neighbors, "n_neighbors", kind="int", lo=1))
    if k >= n:
        raise ValueError(f"n_neighbors={k} must be < n_samples={n}.")
    if sigma is not None and weights == "binary":  # a value ignored is still a mistake
        raise ValueError(
            f"sigma applies to Gaussian edge weights (weights='gaussian'; a dense graph's are "
            f"always Gaussian), got sigma={sigma!r} with binary kNN weights."
        )
    kk = max(k, min(10, n - 1)) if (weights == "gaussian" and sigma is None) else k
    idx, dist, e, norms = _knn_scaled(X, None, kk)
    if weights == "gaussian":
        if sigma is None:
            width = _sigma_from_knn(dist, _rounding_floor(norms, X.shape[1]))
            sigma = float(_unscaled(width, e, "the Gaussian graph width"))
        else:
            sigma = float(check_scalar(sigma, "sigma", lo=0.0, lo_closed=False))
        vals = gaussian_weights(dist[:, :k], sigma, e)
    else:
        vals = np.ones((n, k))
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((vals.ravel(), (rows, idx[:, :k].ravel())), shape=(n, n))
    S = A.maximum(A.T).tocsr()
    S.setdiag(0.0)
    S.eliminate_zeros()
    return S, sigma


def squared_distances(A: Any, B: Any, e: int) -> np.ndarray:
    """``||a_i - b_j||^2`` in units of ``2^(2e)``, float64: scipy's cdist on the scaled rows,
    or, when A or B is CSR, ``||a||^2 + ||b||^2 - 2 a.b`` (clipped at 0) from the stored
    entries (see :class:`_Cross`): the kNN search's formula, whose absolute error is about
    ``eps (||a||^2 + ||b||^2)``, so Gaussian weights agree with cdist's to round-off."""
    A, B = _as_float(A, np.float64, e), _as_float(B, np.float64, e)
    if is_sparse(A) or is_sparse(B):
        D2 = _sq_norms(A)[:, None] + _sq_norms(B)[None, :] - 2.0 * _Cross(B)(A)
        return np.maximum(D2, 0.0, out=D2)
    from scipy.spatial.distance import cdist

    return cdist(A, B, "sqeuclidean")


def gaussian_graph(X: Any, *, sigma: float | None = None) -> tuple[np.ndarray, float]:
    """Dense Gaussian similarity ``exp(-||xi - xj||^2 / (2 sigma^2))``, zero diagonal;
    sigma defaults to half the mean distance to the 10 nearest neighbours. Holds n x n
    float64 matrices: time and memory quadratic in n. X may be a ``scipy.sparse`` matrix
    (converted to CSR; only the n x n matrices are dense)."""
    X = check_array(X, accept_sparse=True).astype(np.float64)
    n = X.shape[0]
    if n < 2:
        raise ValueError("a graph needs at least two samples.")
    e = _exponent(X)
    D2 = squared_distances(X, X, e)
    if not D2.max() > 0.0 and _samples_differ(X):
        raise ValueError(
            f"gaussian_graph: the samples differ, but their squared distances underflow float64 "
            f"(max |x| = {float(np.abs(X).max()):.3g}); rescale the data."
        )
    if sigma is None:
        Dn = np.sqrt(D2)
        np.fill_diagonal(Dn, np.inf)
        sigma = float(
            _unscaled(
                _sigma_from_knn(
                    np.sort(Dn, axis=1)[:, : min(10, n - 1)],
                    # cdist subtracts dense rows exactly; CSR distances come from the norms
                    _rounding_floor(_sq_norms(_as_float(X, np.float64, e)), X.shape[1])
                    if is_sparse(X)
                    else 0.0,
                ),
                e,
                "the Gaussian graph width",
            )
        )
    else:
        sigma = float(check_scalar(sigma, "sigma", lo=0.0, lo_closed=False))
    S = dense_weights(D2, sigma, e)
    np.fill_diagonal(S, 0.0)
    return S, sigma


def _samples_differ(X: Any) -> bool:
    """Whether some feature is not constant over the samples (CSR: the column extremes
    count the implicit zeros)."""
    if is_sparse(X):
        return bool((X.max(axis=0) - X.min(axis=0)).max() > 0.0)
    return bool(np.ptp(X, axis=0).max() > 0.0)


def dense_weights(D2: np.ndarray, sigma: float, e: int) -> np.ndarray:
    """``exp(-D2 / (2 sigma^2))`` for squared distances in units of ``2^(2e)``.

    Where ``(sigma / 2^e)^2`` underflows (a width far below the samples' scale) every weight
    is its limit: 1 at distance 0, 0 elsewhere; where ``D2 / sigma^2`` overflows, 0.
    """
    s = float(np.ldexp(sigma, -e))
    if s > 2.0**500:  # s**2 overflows (OverflowError); D2 / (2 s^2) < 2^-900: every weight is 1
        return np.ones(np.shape(D2), dtype=np.float64)
    if s * s > np.finfo(np.float64).tiny:
        with np.errstate(over="ignore"):
            return np.exp(-D2 / (2.0 * s**2))
    return (D2 == 0.0).astype(np.float64)


def normalized_laplacian(S: Any, delta: float):
    """``Delta = (1 + delta) I - D^{-1/2} S D^{-1/2}`` (sparse in, sparse out; dense in, dense
    out). Returns ``(Delta, degrees)``. Isolated samples (degree 0) are refused."""
    import scipy.sparse as sp

    delta = float(check_scalar(delta, "delta", lo=0.0, lo_closed=False))
    deg = np.asarray(S.sum(axis=1)).ravel()
    if (deg <= 0).any():
        i = int(np.flatnonzero(deg <= 0)[0])
        raise ValueError(
            f"sample {i} has no graph neighbour (degree 0); the Laplacian's "
            "normalisation is undefined. With Gaussian edge weights this means they all "
            "underflowed: exp(-d^2 / (2 sigma^2)) is 0 once sigma is small against the "
            "distances; use a larger sigma (or sigma=None)."
        )
    dis = 1.0 / np.sqrt(deg)
    if sp.issparse(S):
        N = sp.diags(dis) @ S @ sp.diags(dis)
        return ((1.0 + delta) * sp.identity(S.shape[0], format="csr") - N).tocsr(), deg
    return (1.0 + delta) * np.eye(S.shape[0]) - dis[:, None] * S * dis[None, :], deg
