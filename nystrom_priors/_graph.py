"""Similarity graphs of BCDNPKL (Hu et al. 2011): exact kNN search, the symmetrised kNN graph,
the dense Gaussian graph and the regularised normalised Laplacian.

Neighbours, and the Gaussian weights ``exp(-||xi - xj||^2 / (2 sigma^2))`` with a width
proportional to the neighbour distances, do not change when all samples are scaled. So the
distances are computed in units of ``2^e ~ max |x|`` (a power of two: exact): squared norms
neither overflow (``|x| ~ 1e160``) nor underflow (``|x| ~ 1e-160``), and for data of ordinary
scale the results are bit for bit those of the unscaled formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_array, check_option, check_scalar

__all__ = ["knn_search", "knn_graph", "gaussian_graph", "normalized_laplacian"]

_WEIGHTS = ("binary", "gaussian")


def _exponent(*arrays: np.ndarray) -> int:
    from ._width import _binary_exponent

    return _binary_exponent(max(float(np.abs(a).max(initial=0.0)) for a in arrays))


def _knn_scaled(
    X: np.ndarray,
    Y: np.ndarray | None,
    k: int,
    block_rows: int = 2048,
    dtype: Any = np.float64,
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`knn_search` in units of ``2^e``: (indices, distances / 2^e, e). ``dtype`` is
    that of the cross products (float32 halves their cost; norms and distances stay float64)."""
    from ._numba._bcd import knn_select

    X = np.ascontiguousarray(X, dtype=dtype)
    self_search = Y is None
    Yq = X if self_search else np.ascontiguousarray(Y, dtype=dtype)
    limit = X.shape[0] - (1 if self_search else 0)
    if k < 1 or k > limit:
        raise ValueError(
            f"n_neighbors={k} must be in [1, {limit}] for {X.shape[0]} samples"
            + (" (a sample is not its own neighbour)." if self_search else ".")
        )
    e = _exponent(X, Yq)
    if e:
        X = np.ldexp(X, -e)
        Yq = X if self_search else np.ldexp(Yq, -e)
    xn = np.einsum("ij,ij->i", X, X, dtype=np.float64)
    yn = xn if self_search else np.einsum("ij,ij->i", Yq, Yq, dtype=np.float64)
    idx = np.empty((Yq.shape[0], k), dtype=np.int64)
    d2 = np.empty((Yq.shape[0], k), dtype=np.float64)
    step = max(1, min(block_rows, (1 << 24) // max(1, X.shape[0])))
    for s in range(0, Yq.shape[0], step):
        cross = Yq[s : s + step] @ X.T
        knn_select(
            cross, yn[s : s + step], xn, s, self_search, k, idx[s : s + step], d2[s : s + step]
        )
    return idx, np.sqrt(d2), e


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

    Blockwise: the cross products by BLAS, the selection in a parallel Numba kernel (ties to
    the smaller index, so results do not depend on threads). With ``Y=None`` the neighbours of
    X's own rows, excluding each row itself. Any finite scale works (module docstring).

    Returns
    -------
    indices : ndarray of shape (n_Y, k), int64, nearest first
    distances : ndarray of shape (n_Y, k), float64 (Euclidean)
    """
    idx, dist, e = _knn_scaled(X, Y, int(n_neighbors), block_rows)
    return idx, _unscaled(dist, e, "neighbour distances")


def _sigma_from_knn(dist: np.ndarray) -> float:
    """Half the mean distance to the (up to) 10 nearest neighbours (Hu et al., Sec. 4.2)."""
    sigma = 0.5 * float(dist[:, :10].mean())
    if not sigma > 0:
        raise ValueError(
            "all samples coincide with their nearest neighbours (mean neighbour distance 0); "
            "the Gaussian graph width is undefined."
        )
    return sigma


def gaussian_weights(dist: np.ndarray, sigma: float, e: int) -> np.ndarray:
    """``exp(-d^2 / (2 sigma^2))`` for distances ``dist`` given in units of ``2^e`` (see
    :func:`dense_weights`)."""
    return dense_weights(dist**2, sigma, e)


def knn_graph(X: Any, n_neighbors: int = 5, *, weights: str = "binary", sigma: float | None = None):
    """Symmetrised kNN graph as a scipy CSR matrix (edge if either sample is among the other's
    k nearest; no self loops).

    Parameters
    ----------
    X : array-like of shape (n, d)
    n_neighbors : int, default=5
    weights : {"binary", "gaussian"}, default="binary"
        Edge weight 1, or ``exp(-||xi - xj||^2 / (2 sigma^2))``.
    sigma : float, optional
        Gaussian width; default half the mean distance to the 10 nearest neighbours.

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n, n), symmetric
    sigma : float or None
        The width used (None for binary weights).
    """
    import scipy.sparse as sp

    X = check_array(X)
    weights = check_option(weights, "weights", _WEIGHTS)
    n = X.shape[0]
    k = int(check_scalar(n_neighbors, "n_neighbors", kind="int", lo=1))
    if k >= n:
        raise ValueError(f"n_neighbors={k} must be < n_samples={n}.")
    kk = max(k, min(10, n - 1)) if (weights == "gaussian" and sigma is None) else k
    idx, dist, e = _knn_scaled(X, None, kk)
    if weights == "gaussian":
        if sigma is None:
            sigma = float(_unscaled(_sigma_from_knn(dist), e, "the Gaussian graph width"))
        else:
            sigma = float(check_scalar(sigma, "sigma", lo=0.0, lo_closed=False))
        vals = gaussian_weights(dist[:, :k], sigma, e)
    else:
        sigma = None
        vals = np.ones((n, k))
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((vals.ravel(), (rows, idx[:, :k].ravel())), shape=(n, n))
    S = A.maximum(A.T).tocsr()
    S.setdiag(0.0)
    S.eliminate_zeros()
    return S, sigma


def squared_distances(A: np.ndarray, B: np.ndarray, e: int) -> np.ndarray:
    """``||a_i - b_j||^2`` in units of ``2^(2e)`` (scipy's cdist on the scaled rows)."""
    from scipy.spatial.distance import cdist

    return cdist(np.ldexp(A, -e), np.ldexp(B, -e), "sqeuclidean")


def gaussian_graph(X: Any, *, sigma: float | None = None) -> tuple[np.ndarray, float]:
    """Dense Gaussian similarity ``exp(-||xi - xj||^2 / (2 sigma^2))``, zero diagonal;
    sigma defaults to half the mean distance to the 10 nearest neighbours. Holds n x n
    float64 matrices: time and memory quadratic in n."""
    X = check_array(X).astype(np.float64)
    n = X.shape[0]
    if n < 2:
        raise ValueError("a graph needs at least two samples.")
    e = _exponent(X)
    D2 = squared_distances(X, X, e)
    if not D2.max() > 0.0 and np.ptp(X, axis=0).max() > 0.0:
        raise ValueError(
            f"gaussian_graph: the samples differ, but their squared distances underflow float64 "
            f"(max |x| = {float(np.abs(X).max()):.3g}); rescale the data."
        )
    if sigma is None:
        Dn = np.sqrt(D2)
        np.fill_diagonal(Dn, np.inf)
        sigma = float(
            _unscaled(
                _sigma_from_knn(np.sort(Dn, axis=1)[:, : min(10, n - 1)]),
                e,
                "the Gaussian graph width",
            )
        )
    else:
        sigma = float(check_scalar(sigma, "sigma", lo=0.0, lo_closed=False))
    S = dense_weights(D2, sigma, e)
    np.fill_diagonal(S, 0.0)
    return S, sigma


def dense_weights(D2: np.ndarray, sigma: float, e: int) -> np.ndarray:
    """``exp(-D2 / (2 sigma^2))`` for squared distances in units of ``2^(2e)``.

    Where ``(sigma / 2^e)^2`` underflows (a width far below the samples' scale) every weight
    is its limit: 1 at distance 0, 0 elsewhere; where ``D2 / sigma^2`` overflows, 0.
    """
    s = float(np.ldexp(sigma, -e))
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
            "normalisation is undefined."
        )
    dis = 1.0 / np.sqrt(deg)
    if sp.issparse(S):
        N = sp.diags(dis) @ S @ sp.diags(dis)
        return ((1.0 + delta) * sp.identity(S.shape[0], format="csr") - N).tocsr(), deg
    return (1.0 + delta) * np.eye(S.shape[0]) - dis[:, None] * S * dis[None, :], deg
