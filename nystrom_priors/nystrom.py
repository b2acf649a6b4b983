"""The standard Nystrom approximation: the unsupervised baseline and the prior of the learners.

``K ~ E W^+ E^T`` with landmarks Z, ``E = k(X, Z)`` and ``W = k(Z, Z)`` (Williams & Seeger
2001). ``W^+`` is computed by a float64 symmetric eigendecomposition ``W = U diag(lam) U^T``,
dropping eigenvalues below ``rcond * lam_max`` (never an SVD: singular values discard the sign,
turning small negative eigenvalues of a float32 ``W`` into large positive inverses). Factor rows
are ``G = E U_r diag(lam_r)^(-1/2)``, so ``G G^T = E W^+ E^T`` and rows of landmarks reproduce W.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import _rowblocks
from ._base import BaseEstimator, FactorTransformMixin, atomic_fit
from ._rowblocks import _Prepared
from ._threads import blas_threads
from ._validation import check_array, check_random_state, check_random_state_param, check_scalar
from .kernels import KernelSpec, _canonical_name, extrapolate, make_kernel
from .landmarks import LANDMARK_METHODS, select_landmarks

__all__ = ["Nystrom", "psd_pinv"]


def psd_pinv(W: np.ndarray, rcond: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of a symmetric PSD matrix above a relative cut-off.

    Parameters
    ----------
    W : ndarray of shape (m, m)
        Symmetric (symmetrised here) and PSD up to round-off.
    rcond : float
        Eigenvalues ``<= rcond * max(eigenvalue)`` (and all non-positive ones, and those whose
        inverse would overflow: ``<= m / float64 max``) are dropped.

    Returns
    -------
    lam : ndarray of shape (r,), descending
    U : ndarray of shape (m, r)
        ``W^+ = U diag(1/lam) U^T``.
    """
    lam, U, keep = _psd_eig(W, rcond)
    return lam[keep], np.ascontiguousarray(U[:, keep])


def _psd_eig(W: np.ndarray, rcond: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All eigenpairs of ``sym(W)``, descending, and the mask of those ``psd_pinv`` keeps."""
    W = np.asarray(W, dtype=np.float64)
    with blas_threads(W.shape[0]):
        lam, U = np.linalg.eigh(0.5 * (W + W.T))
    lam, U = lam[::-1], U[:, ::-1]
    top = lam[0] if lam.size else 0.0
    if not top > 0.0:
        raise ValueError(
            "The landmark kernel matrix W has no positive eigenvalue: the kernel is zero on "
            "the landmarks, or its values underflow float64 to zero (a polynomial kernel of "
            "small gamma * x.z + coef0 raised to a high degree). Choose another kernel or "
            "landmarks, or rescale X or the kernel (width, gamma, coef0)."
        )
    # W^+ = U diag(1 / lam) U^T must be finite: its entries reach sum 1 / lam <= m / lam_min
    floor = W.shape[0] / np.finfo(np.float64).max
    if not top > floor:
        raise ValueError(
            f"The landmark kernel matrix W's eigenvalues are at most {top:.3g}: the kernel "
            "values on the landmarks underflow float64, and W^+ would overflow. Rescale X or "
            "the kernel (width, gamma, coef0)."
        )
    return lam, U, (lam > rcond * top) & (lam > floor)


_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _LandmarkKernelMixin:
    """Landmarks + kernel resolution + features ``k(X, Z)`` shared by the Nystrom family."""

    #: scipy.sparse X is accepted by fit / transform / kernel (scikit-learn's sparse tag)
    _accepts_sparse = True

    def _fit_landmarks(self, X: np.ndarray, rng: np.random.Generator) -> None:
        self.n_features_in_ = X.shape[1]
        landmarks = self.landmarks
        if isinstance(landmarks, str) and landmarks not in LANDMARK_METHODS:
            raise ValueError(
                f"landmarks must be one of {list(LANDMARK_METHODS)} or an (m, d) array, "
                f"got {landmarks!r}."
            )
        spec = make_kernel(
            self._kernel_param(),
            width=self.width,
            gamma=self._kernel_gamma_param(),
            degree=self.degree,
            coef0=self.coef0,
            X=X,
        )
        self.landmarks_ = select_landmarks(
            X, self.n_landmarks, method=landmarks, random_state=rng, kernel=spec
        )
        # the model's own copy (select_landmarks copies user-given arrays), read-only so that
        # the landmark-side quantities derived from it cannot silently go stale
        self.landmarks_.flags.writeable = False
        # the kernel transform uses is fixed here: set_params after fit must not change it
        self.kernel_ = spec.name
        self.gamma_ = float(spec.gamma)
        self.degree_ = int(spec.degree)
        self.coef0_ = float(spec.coef0)
        self.width_ = spec.width

    def _kernel_param(self) -> Any:
        """The ``kernel`` parameter as given (attribute access wraps it, and turns None into
        the ``kernel()`` method, which error messages would then name)."""
        return self.__dict__.get("kernel")

    def _kernel_gamma_param(self) -> Any:
        """The user's kernel scale (``gamma``; learners whose ``gamma`` is a slack override it)."""
        return self.gamma

    _kernel_gamma_name = "gamma"

    def _validate_params(self) -> None:
        """Check every landmark / kernel parameter on its own (type and range), without data.

        The same checks ``fit`` applies when it resolves the kernel and the landmarks (their
        combination, e.g. ``width`` with a polynomial kernel, is checked by ``fit``); ``load``
        refuses a model file whose parameters fail here and ``save`` refuses to write one.
        """
        check_scalar(self.n_landmarks, "n_landmarks", kind="int", lo=1)
        kernel = self._kernel_param()
        if not isinstance(kernel, KernelSpec):
            _canonical_name(kernel)
        if self.width is not None:
            check_scalar(self.width, "width", lo=0.0, lo_closed=False)
        gamma = self._kernel_gamma_param()
        if gamma is not None:
            check_scalar(gamma, self._kernel_gamma_name, lo=0.0, lo_closed=False)
        check_scalar(self.degree, "degree", kind="int", lo=1, hi=64)
        check_scalar(self.coef0, "coef0")
        landmarks = self.landmarks
        if isinstance(landmarks, str):
            if landmarks not in LANDMARK_METHODS:
                raise ValueError(
                    f"landmarks must be one of {list(LANDMARK_METHODS)} or an (m, d) array, "
                    f"got {landmarks!r}."
                )
        else:
            check_array(landmarks, name="landmarks")
        if self.rcond is not None:
            check_scalar(self.rcond, "rcond", lo=0.0, hi=1.0, hi_closed=False)
        check_random_state_param(self.random_state)

    def _kernel_spec(self) -> KernelSpec:
        """The fitted kernel (``kernel_``, ``gamma_``, ``degree_``, ``coef0_``), never the
        current parameters: ``set_params`` after ``fit`` does not change what ``transform``
        computes."""
        return KernelSpec(
            _canonical_name(self.kernel_),
            gamma=float(self.gamma_),
            degree=int(self.degree_),
            coef0=float(self.coef0_),
        )

    def _prepared(self, dtype: np.dtype, sparse: bool = False) -> Any:
        """Landmark-side quantities for ``dtype``, reused while the fitted state is the same.

        Kept outside ``__dict__`` (transform must not change the fitted state, scikit-learn's
        check_dict_unchanged, and copies / pickles must not carry it). An entry is reused only
        for the same kernel and the very same landmark array with unchanged contents (read-only
        arrays, as ``fit`` and ``load`` leave them, cannot change; writeable ones are compared
        with a snapshot), so a model behaves the same whatever it transformed before.
        """
        dtype = np.dtype(dtype)
        spec = self._kernel_spec()
        Z = self.landmarks_
        cache = _PREPARED.setdefault(self, {})
        key = (dtype, "csr") if sparse else dtype  # CSR input: the lighter landmark side
        entry = cache.get(key)
        if entry is not None:
            prep, Zref, snapshot = entry
            if (
                prep.spec == spec
                and Zref is Z
                and (snapshot is None or np.array_equal(snapshot, Z))
            ):
                return prep
        if sparse:
            from ._csr import CsrPrepared

            prep = CsrPrepared(Z, spec)
        else:
            prep = _Prepared(Z, spec, dtype, "landmarks_")
        snapshot = None if not Z.flags.writeable else np.array(Z, copy=True)
        cache[key] = (prep, Z, snapshot)
        return prep

    def _features_block(self, X: np.ndarray) -> np.ndarray:
        prep = self._prepared(X.dtype, sparse=not isinstance(X, np.ndarray))
        out = np.empty((X.shape[0], prep.m), dtype=X.dtype)
        prep.compute(X, out, None, _rowblocks._FORCE_PATH)
        return out

    def _project_into(self, X: np.ndarray, P: np.ndarray, out: np.ndarray) -> bool:
        if not isinstance(X, np.ndarray):  # CSR: block by block through _features_block
            return False
        return self._prepared(X.dtype).project(X, P, out)

    def _landmark_gram(self) -> np.ndarray:
        """W = k(Z, Z) computed in float64, also from float32 landmarks: float32 values of W
        below float32's normal range (a linear kernel on X of 1e-21) would keep only a few
        bits, and its m x m algebra is float64 anyway. Many features that are mostly zeros
        (landmarks drawn from a sparse X): by the sparse path, which skips the zeros, instead
        of an m x m x d GEMM."""
        Z = np.asarray(self.landmarks_, dtype=np.float64)
        Zq = Z
        if Z.shape[1] >= 1024 and np.count_nonzero(Z) <= Z.size // 8:
            import scipy.sparse as sp

            Zq = sp.csr_matrix(Z)
        return extrapolate(Zq, Z, kernel=self._kernel_spec()).astype(np.float64)

    def _fit_prior(self, with_eig: bool = False):
        """Set ``eigenvalues_`` and ``S0_ = W^+``; return the prior's factor ``U diag(lam)^-1/2``
        and, ``with_eig``, S0's full eigendecomposition ``(x ascending, Q)`` (0 on W's dropped
        eigenvectors), which spares GeneralizedNystrom's dual solvers an m x m eigh of S0."""
        lam_all, U_all, keep = _psd_eig(self._landmark_gram(), self._default_rcond())
        lam, U = lam_all[keep], np.ascontiguousarray(U_all[:, keep])
        self.eigenvalues_ = lam
        with blas_threads(U.shape[0]):  # wakes no BLAS worker at small m (``_threads``)
            self.S0_ = (U / lam) @ U.T
        if not with_eig:
            return U / np.sqrt(lam)
        # ascending: the dropped directions (x = 0) first, then 1 / lam for lam descending
        x = np.concatenate([np.zeros(int(np.count_nonzero(~keep))), 1.0 / lam])
        Q = np.ascontiguousarray(np.hstack([U_all[:, ~keep], U]))
        return U / np.sqrt(lam), (x, Q)

    def _default_rcond(self) -> float:
        if self.rcond is not None:
            return float(check_scalar(self.rcond, "rcond", lo=0.0, hi=1.0, hi_closed=False))
        # eigenvalues below m * eps * lam_max of the training dtype are the data's rounding
        # (float32 data: W's weak directions move with it), and float32 features could not
        # resolve them either (``_float32``): W itself is computed in float64
        return self.landmarks_.shape[0] * float(np.finfo(self.landmarks_.dtype).eps)


class Nystrom(_LandmarkKernelMixin, FactorTransformMixin, BaseEstimator):
    """Standard (optionally clustered) Nystrom low-rank kernel approximation.

    The approximate kernel is ``k~(x, y) = k(x, Z) W^+ k(Z, y)``, with ``W = k(Z, Z)`` on
    ``m`` landmarks Z. ``transform`` returns factor rows ``G = k(X, Z) U diag(lam)^(-1/2)``, so
    ``G_A G_B^T`` is the approximate kernel between any two sample sets (inductive).

    Parameters
    ----------
    n_landmarks : int, default=100
        Number of landmarks m (capped at n_samples with a warning).
    kernel : {"rbf", "laplacian", "poly", "linear", "cosine"}, default="rbf"
        Kernel function (see :mod:`nystrom_priors.kernels`).
    width : float, optional
        Width b of ``exp(-||x - z||^2 / b)``; default: mean pairwise squared distance of the
        training data (Zhang et al. 2012). Laplacian: mean pairwise L1 distance.
    gamma : float, optional
        ``1/b`` instead of ``width``; inner-product scale of the polynomial kernel.
    degree : int, default=3
        Polynomial degree.
    coef0 : float, default=1.0
        Polynomial offset.
    landmarks : str or ndarray of shape (m, d), default="kmeans"
        Landmark selection, ``"kmeans"``, ``"kmeans++"``, ``"uniform"`` or ``"rpcholesky"``
        (see :func:`select_landmarks`; RPCholesky factors this model's kernel), or the
        landmarks themselves (m is then their number, whatever ``n_landmarks`` says).
    rcond : float, optional
        Relative eigenvalue cut-off for ``W^+``; default ``m * eps`` of the training dtype.
    random_state : None, int or Generator
        Seed for landmark selection.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, d)
    width_ : float or None
        The width b used (distance kernels).
    kernel_ : str
        The kernel's canonical name at fit time.
    gamma_ : float
        The resolved kernel scale (``1/width_`` for distance kernels).
    degree_, coef0_ : int, float
        Polynomial parameters at fit time (``transform`` uses these fitted values, not the
        current parameters).
    S0_ : ndarray of shape (m, m)
        ``W^+``, float64.
    eigenvalues_ : ndarray of shape (r,)
        Eigenvalues of W kept in ``W^+`` (descending).
    projection_ : ndarray of shape (m, r)
        ``U diag(lam)^(-1/2)``; ``G = k(X, Z) @ projection_``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,), dtype object
        Column names of X in ``fit``, when X is a DataFrame whose column names are all
        strings (absent otherwise); later calls refuse a frame whose names differ.
    n_components_ : int
        r, the rank of the approximation.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_priors import Nystrom
    >>> X = np.random.default_rng(0).normal(size=(200, 5))
    >>> model = Nystrom(n_landmarks=20, random_state=0).fit(X)
    >>> G = model.transform(X)
    >>> G.shape
    (200, 20)
    >>> Z = model.landmarks_
    >>> W = model.kernel(Z)  # exact on the landmarks
    >>> bool(np.allclose(W, np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / model.width_)))
    True
    """

    def __init__(
        self,
        n_landmarks: int = 100,
        *,
        kernel: str = "rbf",
        width: float | None = None,
        gamma: float | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        landmarks: str | np.ndarray = "kmeans",
        rcond: float | None = None,
        random_state: Any = None,
    ) -> None:
        self.n_landmarks = n_landmarks
        self.kernel = kernel
        self.width = width
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.landmarks = landmarks
        self.rcond = rcond
        self.random_state = random_state

    @atomic_fit
    def fit(self, X: Any, y: Any = None) -> Nystrom:
        """Choose landmarks and compute ``W^+``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : ignored
            Present for API consistency (labels are unused by the unsupervised baseline).

        Returns
        -------
        self
        """
        from ._rows import RowSource

        X = RowSource(X)  # in memory, memmap or dask: only a sample of rows is read
        rng = check_random_state(self.random_state)
        self._fit_landmarks(X, rng)
        self.projection_ = self._fit_prior()
        return self
