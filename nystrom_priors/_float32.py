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
per model, as long as ``projection_`` is the same array with the same values.
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
_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def float32_conditioned(model: Any) -> bool:
    """Whether float32 features keep the factor rows within ``_MAX_REL_ERROR`` of their size
    (module docstring). One SVD of the m x r projection and the features of the m landmarks
    per fitted model, on its first float32 input: O(m^2 (r + d)), next to the O(n m d)
    features of the rows it decides for."""
    P = model.projection_
    cached = _VERDICTS.get(model)
    if cached is not None:
        ref, snapshot, verdict = cached
        if ref is P and (snapshot is None or np.array_equal(snapshot, P)):
            return verdict
    verdict = eps32_amplification(model) * _EPS32 <= _MAX_REL_ERROR
    snapshot = None if not P.flags.writeable else np.array(P, copy=True)
    try:
        _VERDICTS[model] = (P, snapshot, verdict)
    except TypeError:  # not weakly referenceable: decided again next time
        pass
    return verdict


def eps32_amplification(model: Any) -> float:
    """The factor of ``float32_conditioned``: the median over the landmarks' feature rows f of
    ``||f|| sigma_max(P) / ||f P||`` (inf where P is not finite, a row's factor is 0 or its
    features fall below float32's normal range),
    ``cond(P)`` for a learner without landmarks."""
    P = np.asarray(model.projection_, dtype=np.float64)
    if P.size == 0:
        return 1.0
    if not np.isfinite(P).all():
        return np.inf
    s = np.linalg.svd(P, compute_uv=False)
    Z = getattr(model, "landmarks_", None)
    if Z is None or not s[0] > 0.0:
        return float(s[0] / s[-1]) if s[-1] > 0.0 else np.inf
    F = np.asarray(model._features_block(np.asarray(Z, dtype=np.float64)), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.linalg.norm(F, axis=1) * s[0] / np.linalg.norm(F @ P, axis=1)
    # a row whose features are below float32's normal range (a linear kernel on X of 1e-21)
    # keeps fewer than float32's 24 bits in them: no amplification makes up for that
    subnormal = np.abs(F).max(axis=1, initial=0.0) < np.finfo(np.float32).tiny / _EPS32
    ratio = np.where(np.isnan(ratio) | subnormal, np.inf, ratio)
    return float(np.median(ratio))
