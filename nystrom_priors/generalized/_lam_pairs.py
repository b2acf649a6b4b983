"""GeneralizedNystrom's one-step model on pairs and the cross-validation of its lam.

The pairs' data term ``sum_(i,j) (K_ij - K*_ij)^2`` runs over the constrained entries only:
both orders of each pair (target 1 must-link, 0 cannot-link) and the diagonal of the
constrained points (target 1). Filling every other entry of the points' kernel with the
prior's own value ``K0`` gives a loss over *all* entries that is never below the masked one
and equal to it at the prior: a majoriser at ``S = S0``. On the family
``S = S0 + V (Y - C) V^T`` (V spanning the constrained points' rows within range(S0),
``generalized/_lam.py``) that full loss has the labels' form, with the residual
``r = T o (K* - K0)`` in place of ``Y Y^T`` (``_numba/_pairs_cv.py``), so the labels' one step
applies unchanged: the unconstrained optimum ``C + F^T r F / (lam + mu mu^T)`` and the
separable PSD projection. It is one majorisation-minimisation step from the prior, which
agrees with the exact solution of J to first order in 1 / lam; where every pair lies among
labeled samples and all their pairs are given, the mask is full and it is the labels' model.

lam is chosen as for labels (``_lam.choose``): the candidates ``mu_max^2 * 10^e`` and the
prior, held-out losses from folds that deal the constrained *samples* into groups (fold f
trains on the pairs with no end in group f and scores the pairs with both ends in it: two
samples the fold's kernel has not seen), and a lam must beat the prior in a one-sided paired
t-test over the folds at the nominal 1% level. The loss is the squared error of the learned
kernel's cosine ``K_ij / sqrt(K_ii K_jj)`` to the target. A round costs
O(|pairs| p + l p^2 + p^3) per lam, p <= ``_CV_RANK_MAX`` directions, never an l x l array.

The exponent e weighs the prior against the data term relative to that term's own scale:
``mu_max^2`` for the one-step model, whose majoriser fills the whole block, and J's
``density * mu_max^2`` (the share of the block the pairs constrain, ``_problem._Problem``)
for the exact solve that the default then runs at the chosen e, its dual started from this
model's residuals (``_solver._solve_lam``'s ``S_guess``). As the kernel itself the model moves
too little where the pairs are sparse (``docs/design/lam_selection.md``, ninth round).
"""

from __future__ import annotations

import numpy as np

from .._threads import numba_threads
from . import _lam
from ._lam import _CV_RANK_MAX, _nanmean_columns, choose

# independent splits of the constrained samples into groups (``pair_rounds``)
_CV_SPLITS = 2
# groups per split when ``cv`` is None
_PAIR_FOLDS = 5


def _sample_folds(ia, ib, n_points, k, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """k (held-out, scored) masks over the pairs ``(ia, ib)`` (point indices < n_points): the
    points are dealt at random into k groups; fold f holds out the pairs with an end in group f
    and scores those with both ends in it (both samples new to the fold's kernel, as for the
    samples a fitted kernel is applied to). When some group has no pair inside it (few pairs
    over many samples), every fold of the split scores all its held-out pairs instead.

    Splitting the pairs instead of the samples leaks through transitivity: a held-out
    must-link pair between two samples each must-linked to a third in training is predicted
    by any kernel that fits the training pairs."""
    group = np.empty(n_points, dtype=np.int64)
    group[rng.permutation(n_points)] = np.arange(n_points) % k
    held = [(group[ia] == f) | (group[ib] == f) for f in range(k)]
    both = [(group[ia] == f) & (group[ib] == f) for f in range(k)]
    if not all(b.any() for b in both):
        both = held
    return list(zip(held, both))


def pair_rounds(ia, ib, n_points, n_folds, rng) -> np.ndarray:
    """Roles (n_rounds, n_pairs) per CV round: 1 train, 2 scored, 0 neither;
    ``_CV_SPLITS`` independent splits of ``n_folds`` groups of samples (``_sample_folds``).
    A round equal to an earlier one is dropped (with as many groups as samples every split
    deals the same folds): the paired test of ``choose`` would count it twice."""
    k = int(min(n_folds, n_points))
    roles = []
    for _split in range(_CV_SPLITS):
        for held, scored in _sample_folds(ia, ib, n_points, k, rng):
            role = np.where(held, 0, 1).astype(np.int8)
            role[scored] = 2
            roles.append(role)
    roles = np.stack(roles)
    _, first = np.unique(roles, axis=0, return_index=True)
    return roles[np.sort(first)]


def can_score(labels, pairs) -> bool:
    """Whether lam="auto"'s folds can score the side information; where not, a warning that
    the prior is kept.

    They score a classifier on the labels wherever there are labels, which needs two classes,
    and on pairs alone held-out pairs of both kinds, two of each. Where they cannot, nothing
    says the data differ from the prior, and the rule keeps it unless they clearly do (as it
    does where every class is labeled once and no fold can score a held-out sample)."""
    import warnings

    from .._feature_names import _user_stacklevel

    if labels is not None:
        if labels.n_classes >= 2:
            return True
        why = (
            "the labeled samples are all one class, and a classifier needs two (the ideal "
            "kernel is constant on them)"
        )
    else:
        n_must = int(np.count_nonzero(pairs[:, 2] == 1))
        n_cannot = pairs.shape[0] - n_must
        if min(n_must, n_cannot) >= 2:
            return True
        why = (
            "its folds score held-out pairs and need at least two must-link and two "
            f"cannot-link pairs; got {n_must} must-link and {n_cannot} cannot-link"
        )
    hint = labels.one_class_hint() if labels is not None else ""
    warnings.warn(
        f"lam='auto' kept the Nystrom prior: {why}. Pass lam as a number to learn from this "
        "side information anyway." + hint,
        UserWarning,
        stacklevel=_user_stacklevel(),
    )
    return False


def select_lam_pairs(PE, w, ia, ib, must, exps, rng, n_folds):
    """Cross-validated exponent e (lam = mu_max^2 10^e) or None for the prior, on pairs.

    ``PE`` (n_points, r): the constrained points' rows of E in S0's eigen-coordinates;
    ``w`` (r,): W's kept eigenvalues; ``ia``, ``ib``: each pair's points (rows of PE);
    ``must``: whether it is a must-link. Returns (e or None, mean held-out loss per candidate,
    mean held-out error per candidate), the candidates ``exps`` and then the prior; the means
    run over the rounds that scored the prior. None also when no round could score a pair (the
    caller keeps the prior and says why)."""
    from .._numba import _pairs_cv as jit
    from .._numba._lapack import addresses
    from .._threads import BLAS_ONE_THREAD as _BLAS

    rel = np.concatenate([10.0 ** np.asarray(exps, dtype=np.float64), [np.inf]])
    roles = pair_rounds(ia, ib, PE.shape[0], n_folds, rng)
    p = min(w.size, _CV_RANK_MAX, PE.shape[0])
    work = 10.0 * roles.shape[0] * rel.size * float(p) ** 3 if _BLAS.available() else 0.0
    with _BLAS, numba_threads(work):
        losses, errors = jit.pairs_cv(
            np.ascontiguousarray(PE, dtype=np.float64),
            np.asarray(w, dtype=np.float64),
            ia.astype(np.int64),
            ib.astype(np.int64),
            must.astype(np.float64),
            roles,
            rel,
            _CV_RANK_MAX,
            addresses(),
        )
    scored = ~np.isnan(losses[:, -1])
    if not scored.any():
        return None, np.full(rel.size, np.nan), np.full(rel.size, np.nan)
    j = choose(losses)
    crit = _nanmean_columns(losses[scored])
    err = _nanmean_columns(errors[scored])
    return (None if j == rel.size - 1 else float(exps[j])), crit, err


def onestep_pairs_model(PE, w, ia, ib, must, rel_lam):
    """The one-step model on every pair at ``lam = rel_lam * mu_max^2``.

    Returns ``(G_r, lam)``: S in S0's eigen-coordinates as a factor (r x k; ``S = U0 G_r
    G_r^T U0^T``, ``_lam.onestep_at``) and the absolute lam."""
    from .._numba._lapack import addresses
    from .._numba._pairs_cv import pairs_problem
    from .._threads import BLAS_ONE_THREAD as _BLAS

    PE = np.ascontiguousarray(PE, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    with _BLAS:
        Vc, mu, C, R = pairs_problem(
            PE,
            w,
            ia.astype(np.int64),
            ib.astype(np.int64),
            must.astype(np.float64),
            PE.shape[0] + w.size,
            addresses(),
        )
        return _lam.onestep_at(w, Vc, mu, C, R, rel_lam)


def one_step_side(labels, pairs, params, rng, take=None):
    """``(rows, select, model)`` of GeneralizedNystrom's one-step model on labels or, without
    them, on pairs: the rows of X it reads, ``select(PE, w)`` -> (exponent or None, criterion
    path, error path) and ``model(PE, w, rel_lam)`` -> (G_r, lam), PE the rows in S0's
    eigen-coordinates. ``take(rows)``: X's rows, whose copies among the labeled ones the
    labels' folds keep together (``_lam.stratified_folds``)."""
    grid, cv = params["grid"], params["cv"]
    if labels is not None:  # cv None: select_lam's own folds
        codes, c = labels.codes, labels.n_classes
        same = (lambda: None) if take is None else (lambda: _lam.same_rows(take(labels.index)))
        return (
            labels.index,
            lambda PE, w: _lam.select_lam(PE, w, codes, c, grid, rng, cv, same()),
            lambda PE, w, rel: _lam.onestep_model(PE, w, codes, c, rel),
        )
    pts, inv = np.unique(pairs[:, :2], return_inverse=True)
    ia, ib = inv.reshape(-1, 2).T
    must = pairs[:, 2] == 1
    cv = _PAIR_FOLDS if cv is None else cv
    return (
        pts,
        lambda PE, w: select_lam_pairs(PE, w, ia, ib, must, grid, rng, cv),
        lambda PE, w, rel: onestep_pairs_model(PE, w, ia, ib, must, rel),
    )
