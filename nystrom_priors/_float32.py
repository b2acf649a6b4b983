"""Whether a model's factor rows can be computed from float32 features.

``transform`` of float32 X computes the features ``F = k(X, Z)`` in float32 and the factor
rows ``G = F P`` from them. float32's rounding of a row f (``eps32 = 6e-8`` of each entry)
moves its factor row by up to ``eps32 ||f|| sigma_max(P)``, while the row itself is
``||f P||``: the ratio ``||f|| sigma_max(P) / ||f P||`` amplifies float32's rounding. It is
large where the projection undoes a landmark kernel ``W`` whose eigenvalues a smooth kernel
on few features spreads over many decades: the rows lie along W's strong directions, which
P shrinks, and their rounding reaches its weak ones, which P blows up (about
``sqrt(cond(W))`` for ``Nystrom``: 6e6 on 2-D Gaussian data with 100 landmarks, where float32
features gave kernel values off by 4e-2). ``float32_conditioned`` measures the ratio on the
model's own landmarks (its median over their rows; ``cond(P)`` for a learner without
landmarks) and says whether ``eps32`` times it stays within ``_MAX_REL_ERROR``; where it does
not, the caller computes in float64 and rounds the rows to float32 once, so that float32
input costs float64's time but keeps float32's accuracy of the result. The verdict is cached
per model, as long as ``projection_`` is the same array.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

__all__ = ["eps32_amplification", "float32_conditioned"]

# the float32 path is kept while float32's rounding can move a typical factor row by at
# most this share of its size: an amplification of up to about 1.7e3
_MAX_REL_ERROR = 1e-4
_EPS32 = float(np.finfo(np.float32).eps)
# landmark rows the median is taken over: a typical row's amplification needs no more, and
# their features cost rows x m x d
_ROWS = 256

# id(model) -> (weak reference to the projection judged, its fingerprint, verdict); keyed by
# id, as ``_fit_lock`` is, so that a model whose class defines __eq__ without __hash__ works
_VERDICTS: dict[int, tuple[Any, tuple, bool]] = {}


def float32_conditioned(model: Any) -> bool:
    """Whether float32 features keep the factor rows within ``_MAX_REL_ERROR`` of their size
    (module docstring). Decided once per fitted projection, on its first float32 input: the
    largest singular value of the m x r projection (Lanczos) and the features of up to
    ``_ROWS`` landmarks, O(_ROWS m (d + r)) -- well below a fit's O(m^2 d) features of W."""
    P = model.projection_
    key = id(model)
    cached = _VERDICTS.get(key)
    if cached is not None:
        ref, fingerprint, verdict = cached
        if ref() is P and fingerprint == _fingerprint(P):
            return verdict
    verdict = eps32_amplification(model) * _EPS32 <= _MAX_REL_ERROR
    try:
        ref = weakref.ref(P)  # the verdict never keeps a refitted model's old projection alive
        if key not in _VERDICTS:
            weakref.finalize(model, _VERDICTS.pop, key, None)
    except TypeError:  # not weakly referenceable: decided again next time
        return verdict
    _VERDICTS[key] = (ref, _fingerprint(P), verdict)
    return verdict


def _fingerprint(P: np.ndarray) -> tuple:
    """Shape and up to 64 entries spread over P: a refit makes a new array anyway; this
    catches a projection edited in place without reading all of it on every call."""
    flat = P.reshape(-1)
    step = max(1, flat.size // 64)
    return (P.shape, flat[::step][:64].tobytes())


def eps32_amplification(model: Any) -> float:
    """The factor of ``float32_conditioned``: the median over (up to ``_ROWS`` evenly spaced)
    landmarks' feature rows f of ``||f|| sigma_max(P) / ||f P||`` (inf where P is not finite,
    a row's factor is 0 or its features fall below float32's normal range); for a learner
    without landmarks, ``cond(P)``."""
    P = np.asarray(model.projection_, dtype=np.float64)
    if P.size == 0:
        return 1.0
    if not np.isfinite(P).all():
        return np.inf
    Z = getattr(model, "landmarks_", None)
    if Z is None:
        s = np.linalg.svd(P, compute_uv=False)
        return float(s[0] / s[-1]) if s[-1] > 0.0 else np.inf
    top = _largest_singular_value(P)
    if not top > 0.0:
        return np.inf
    rows = np.unique(np.linspace(0, Z.shape[0] - 1, min(_ROWS, Z.shape[0])).astype(np.int64))
    Zs = np.asarray(Z[rows], dtype=np.float64)
    F = np.asarray(model._features_block(Zs), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.linalg.norm(F, axis=1) * top / np.linalg.norm(F @ P, axis=1)
    # a row whose features are below float32's normal range (a linear kernel on X of 1e-21)
    # keeps fewer than float32's 24 bits in them: no amplification makes up for that
    subnormal = np.abs(F).max(axis=1, initial=0.0) < np.finfo(np.float32).tiny / _EPS32
    ratio = np.where(np.isnan(ratio) | subnormal, np.inf, ratio)
    return float(np.median(ratio))


def _largest_singular_value(P: np.ndarray) -> float:
    """sigma_max(P): Lanczos on the smaller side (a fixed start vector: the same verdict every
    time), a dense SVD where P is too small for it."""
    if min(P.shape) <= 32:
        return float(np.linalg.svd(P, compute_uv=False)[0])
    from scipy.sparse.linalg import svds

    v0 = np.ones(min(P.shape))
    return float(svds(P, k=1, v0=v0, return_singular_vectors=False, tol=1e-3)[0])
