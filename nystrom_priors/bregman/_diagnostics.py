"""What the Bregman learners say when the constraints cannot be met: the window's dual
increment read as a Farkas certificate of infeasibility, and the constraint that asks a
pair's squared distance to change the most."""

from __future__ import annotations

import numpy as np

# infeasible: any kernel that meets the constraints has at least this many times the trace the
# bounds' scale asks for (``_farkas_certificate``)
_TRACE_FACTOR = 100.0


def _farkas_certificate(increment: np.ndarray, cert: dict) -> bool:
    """Is ``y = max(increment, 0)`` (approximately) a Farkas certificate of infeasibility?

    ``cert`` holds the constraint data in the initial factor coordinates: rows ``G``, index
    arrays ``I1``, ``I2``, ``kind``, ``delta``, bounds ``b``, and ``trace0``, the trace of
    the initial kernel there (its rank: the coordinates whiten it).

    Every kernel K that meets the constraints has ``tr(K M) <= sum_c y_c delta_c b_c = -beta``
    and ``tr(K M) >= lambda_min(M) tr(K)``; where ``beta > 0`` and ``lambda_min(M) = -eps < 0``
    it therefore has ``tr(K) >= beta / eps`` (an exact certificate, ``eps = 0``, excludes
    every kernel). The bound scales with the bounds b while eps does not, so it is compared
    with the trace the bounds themselves suggest: the initial trace times
    ``s = sum y |b| / sum y |b0|``, b0 the constraints' values under the initial kernel. y is
    accepted when the bound exceeds ``_TRACE_FACTOR`` times that reference (and ``beta`` is
    at least 1% of ``sum y |b|``): meeting the constraints would take a kernel a hundred times
    larger than their own scale asks for. The test is invariant to a common scaling of the
    bounds, and it holds at every window, so a feasible set, however slowly it converges, is
    flagged only if all its solutions are that large.
    """
    y = np.maximum(increment, 0.0)
    if not y.any():
        return False
    G, I1, I2, kind, delta, b = (cert[k] for k in ("G", "I1", "I2", "kind", "delta", "b"))
    coef = y * delta
    dist = kind == 0
    V = G[I1[dist]] - G[I2[dist]]
    M = (V * coef[dist][:, None]).T @ V
    b0 = np.empty(b.size)
    b0[dist] = np.einsum("ij,ij->i", V, V)
    if (~dist).any():
        A, C = G[I1[~dist]], G[I2[~dist]]
        half = (A * coef[~dist][:, None]).T @ C
        M += 0.5 * (half + half.T)
        b0[~dist] = np.einsum("ij,ij->i", A, C)
    with np.errstate(over="ignore", invalid="ignore"):  # bounds near float64's top
        beta = -float((coef * b).sum())
        yb = float((y * np.abs(b)).sum())
    if not (np.isfinite(beta) and np.isfinite(yb) and np.isfinite(M).all()):
        return False  # no certificate in float64; the run ends by its own test
    ev = np.linalg.eigvalsh(0.5 * (M + M.T))
    if not beta >= 0.01 * yb or np.abs(ev).max() == 0.0:
        return False
    eps = max(-float(ev[0]), 0.0)
    yb0 = float((y * np.abs(b0)).sum())
    reference = float(cert["trace0"]) * (yb / yb0 if yb0 > 0.0 else 1.0)
    return bool(eps == 0.0 or beta > _TRACE_FACTOR * eps * reference)


def _stretch_hint(stretch: tuple | None) -> str:
    """The hint of ``_constraint_hint`` for ``stretch = (G, I1, I2, b, pairs, fix[, sim_pairs])``,
    or none without it."""
    return "" if stretch is None else _constraint_hint(*stretch)


def _constraint_hint(
    G: np.ndarray, I1, I2, b: np.ndarray, pairs: np.ndarray, fix: str, sim_pairs=None
) -> str:
    """The constraint asking the largest change of its pair's squared distance or, for
    ``sim_pairs`` (the similarity constraints, after the distance ones in I1, I2 and b), of
    its kernel value (a cannot-link pair of near-duplicates needs a factor ~1e18:
    projections overflow, hard ones and soft ones whose step still moves the pair by a
    factor near 1 / eps; a bound of 1e-300, or a similarity of 1e100 against kernel values
    near 1, asks a factor no sweep can reach). ``fix``: the remedy that ends the hint."""
    nd = pairs.shape[0]
    ns = 0 if sim_pairs is None else sim_pairs.shape[0]
    if nd + ns == 0:
        return ""
    diff = G[I1[:nd]] - G[I2[:nd]]
    A, C = G[I1[nd : nd + ns]], G[I2[nd : nd + ns]]
    v0 = np.concatenate([np.einsum("ij,ij->i", diff, diff), np.einsum("ij,ij->i", A, C)])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        d0 = v0[:nd]
        ratio = np.maximum(b[:nd] / d0, d0 / b[:nd])
        # a similarity can move freely within its pair's scale sqrt(K_ii K_jj) (0 is an
        # ordinary target); only one far beyond it asks the diagonal to grow by that factor
        scale = np.sqrt(np.einsum("ij,ij->i", A, A) * np.einsum("ij,ij->i", C, C))
        ratio = np.concatenate([ratio, np.abs(b[nd : nd + ns]) / scale])
    ratio = np.where(np.isnan(ratio), 0.0, ratio)  # 0 asked of 0
    k = int(np.argmax(ratio))
    if not ratio[k] > 1e8:
        return ""
    asked = f"{v0[k]:.3g} to become {b[k]:.3g} (a factor {ratio[k]:.3g})"
    if k >= nd:  # always hard: no slack to offer
        return (
            f" Or the constraints: similarity pair {sim_pairs[k - nd, :2].tolist()} asks its "
            f"kernel value {asked}; check similarity_bounds."
        )
    return (
        f" Or the constraints: pair {pairs[k, :2].tolist()} asks its squared distance {asked}; "
        f"check for near-duplicate samples or such bounds, drop such pairs or {fix}"
    )
