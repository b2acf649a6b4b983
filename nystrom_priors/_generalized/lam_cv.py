"""lam="auto" on labels: the one-step model and its cross-validated choice of lam.

**The one-step model.** Write ``S0 = U0 diag(1 / w) U0^T`` on its range and let ``V`` be an
orthonormal basis of ``range(E_l^T)`` inside ``range(S0)`` (p = rank of the labeled rows). J
depends on the data only through ``E_l S E_l^T``, so the model changes S only there,
``S = S0 + V (Y - C) V^T``. On ``range(S0)``, ``S >= 0`` iff ``Y >= 0`` with
``C = (V^T S0^+ V)^-1`` (Schur complement), and J on that family is the same objective on
p x p matrices: prior C, rows ``F = E_l V`` with ``M = F^T F = diag(mu)`` (V is chosen so),
data term at ``Y + (V^T S0 V - C)``:

    J(Y) = sum_ij (lam + mu_i mu_j) (Y_ij - c_ij)^2 + const,
    c = (lam C + R) / (lam + mu mu^T),   R = F^T K* F - M (V^T S0 V - C) M.

c is the unconstrained optimum. Its weights lie between ``lam`` (directions the labels do not
see, cheap to move) and ``mu_max^2`` (the fitted block, rigid). The weights ``d_i d_j``,
``d = (lam + mu^2)^(1/2)``, bound them from above (Cauchy-Schwarz), so
``Q(Y) = sum d_i d_j (Y - c)_ij^2`` majorises J at c, and its minimiser over the PSD cone is
one eigendecomposition: ``Y = D^-1/2 P_psd(D^1/2 c D^1/2) D^-1/2`` (a congruence keeps the
cone). This is the model: the exact minimiser of the majoriser, equal to J's optimum wherever
the PSD constraint is inactive. Unlike the Euclidean projection of c, it keeps the fitted
block and moves the cheap ones, as J's optimum does.

**Choosing lam.** Stratified k-fold splits of the labeled rows (two splits of ``cv`` folds,
one above ``_TWO_SPLITS_MAX`` labels: the held-out estimate tightens with l while every fold
costs O(p^3) per lam). On each training fold the same model is fitted along the grid (lam =
``mu_max^2 10^e`` with the fold's own mu_max), and a ridge classifier on the learned kernel
(one-vs-rest, +-1 targets, intercept penalised like a linear SVM's constant feature, penalty
1/2: the squared-loss counterpart of ``LinearSVC(C=1)``) scores the held-out fold by its
squared hinge loss. The prior (lam = inf, plain Nystrom) is a candidate. A lam is chosen only
if its mean held-out loss beats the prior's by more than ``_GATE`` standard errors of the
paired differences over the folds; among those, the smallest mean loss wins. The model whose
lam is scored is the model that is returned, so the estimate is honest for it.
"""

from __future__ import annotations

import numpy as np

# ridge penalty of the held-out classifier: min ||w||^2 / 2 + C sum loss <=> alpha = 1 / (2 C)
_RIDGE_ALPHA = 0.5
# held-out loss that ranks lam: 0 squared loss, 1 squared hinge, 2 0/1 error
_CRITERION = 1
# a lam must beat the prior by this many standard errors of the paired fold differences
_GATE = 3.0
# up to this many labels two independent fold splits are averaged, one above
_TWO_SPLITS_MAX = 500


def stratified_folds(codes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Fold index in ``0 .. k-1`` per labeled sample.

    Each class is dealt round-robin, continuing where the previous class stopped, so folds
    differ in size by at most one and a class with at least k members is in every fold (a
    smaller class in as many folds as it has members)."""
    folds = np.empty(codes.size, dtype=np.int64)
    offset = int(rng.integers(k))
    for c in rng.permutation(np.unique(codes)):
        members = rng.permutation(np.flatnonzero(codes == c))
        folds[members] = (offset + np.arange(members.size)) % k
        offset += members.size
    return folds


def choose(losses: np.ndarray) -> int:
    """Index of the chosen candidate; ``losses`` (n_folds, n_candidates), the prior last.

    The candidate with the smallest mean held-out loss among those whose mean improvement
    over the prior exceeds ``_GATE`` standard errors of the paired differences; the prior when
    none does (or fewer than two folds could be scored)."""
    L = losses[~np.isnan(losses).any(axis=1)]
    prior = losses.shape[1] - 1
    if L.shape[0] < 2:
        return prior
    D = L - L[:, [prior]]
    se = D.std(axis=0, ddof=1) / np.sqrt(L.shape[0])
    better = np.flatnonzero(D.mean(axis=0) < -_GATE * se)
    if better.size == 0:
        return prior
    return int(better[np.argmin(L.mean(axis=0)[better])])


def select_lam(PE, w, codes, n_classes, exps, rng, n_folds):
    """Cross-validated exponent e (lam = mu_max^2 10^e) or None for the prior.

    ``PE`` (l, r): the labeled rows of E in S0's eigen-coordinates (``E_l U0``); ``w`` (r,):
    W's kept eigenvalues. Returns (e or None, mean criterion per candidate, mean held-out 0/1
    error per candidate); candidates are ``exps`` and then the prior.
    """
    from .._numba._lam_cv import cv_losses

    n_splits = 2 if codes.size <= _TWO_SPLITS_MAX else 1
    k = int(max(2, min(n_folds, codes.size)))
    folds = np.stack([stratified_folds(codes, k, rng) for _ in range(n_splits)])
    rel = np.concatenate([10.0 ** np.asarray(exps, dtype=np.float64), [np.inf]])
    L = cv_losses(
        np.ascontiguousarray(PE, dtype=np.float64), np.asarray(w, dtype=np.float64),
        codes.astype(np.int64), int(n_classes), folds, k, rel, _RIDGE_ALPHA,
    )
    j = choose(L[_CRITERION])
    scored = ~np.isnan(L[_CRITERION]).any(axis=1)
    crit = L[_CRITERION][scored].mean(axis=0)
    err = L[2][scored].mean(axis=0)
    return (None if j == rel.size - 1 else float(exps[j])), crit, err


def onestep_model(PE, w, codes, n_classes, rel_lam):
    """The one-step model on every labeled row at ``lam = rel_lam * mu_max^2``.

    Returns ``(S_r, lam)``: S in S0's eigen-coordinates (r x r; ``S = U0 S_r U0^T``) and the
    absolute lam."""
    from .._numba._lam_cv import onestep, restricted_problem

    Vc, mu, C, R, _ = restricted_problem(
        np.ascontiguousarray(PE, dtype=np.float64), np.asarray(w, dtype=np.float64),
        codes.astype(np.int64), int(n_classes),
    )
    lam = rel_lam * float(mu[-1]) ** 2 if mu.size else np.inf
    S_r = np.diag(1.0 / w)
    if mu.size:
        L = onestep(mu, C, R, lam)
        VL = Vc @ L
        VC = Vc @ C
        S_r = S_r + VL @ VL.T - VC @ Vc.T
    return 0.5 * (S_r + S_r.T), lam
