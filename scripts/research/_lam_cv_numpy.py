"""Choosing lam by cross-validation on the labeled samples, at the cost of a few small
eigendecompositions per fold and lam.

Each training fold T refits S along the lam path; a ridge classifier on the learned kernel
(the closed-form relative of the downstream linear SVM) scores the held-out fold V. Two
devices keep a refit cheap without leaving the PSD cone:

* **The restricted family** ``S = S0 + V_T X V_T^T``, ``V_T`` an orthonormal basis of
  ``range(E_T^T) + S0 range(E_T^T)`` inside ``range(S0)`` (dimension ``p <= 2 l_T``). The data
  term sees S only through ``E_T S E_T^T``; the second block carries the correction that the
  PSD constraint needs. On ``range(S0)``, ``S0 + V X V^T >= 0`` iff ``Y = X + C >= 0`` with
  ``C = (V^T S0^+ V)^-1``, so the fold's problem is J on p x p matrices: prior C, rows
  ``F_T = E_T V``, data term at ``Y + (V^T S0 V - C)``.
* **One preconditioned projection per lam.** In the eigenbasis of ``M = F_T^T F_T``
  (``M = U diag(mu) U^T``) the restricted J is ``sum_ij (lam + mu_i mu_j)(Y~_ij - c_ij)^2``
  plus a constant, with the unconstrained optimum ``c = (lam C~ + R~) / (lam + mu mu^T)``
  in closed form. The congruence ``V = D Y~ D``, ``D = diag((lam + mu_i^2)^(1/4))``, keeps the
  PSD cone and turns the weights into ones within ``[sqrt(lam)/mu_max, 1]``; the Euclidean
  projection of ``D c D`` onto the cone is the first (majorised) projected-gradient step of
  the exact solver from the unconstrained optimum. It is exact where the constraint is
  inactive and keeps the data-fitted block (weights ``mu_i mu_j``, rigid) while moving the
  cheap blocks (weights ``lam``): the plain Euclidean projection of ``c`` moves both alike and
  ranks small lam wrongly.

The kernel of a fold never leaves ``l_T x l_T`` (kernel form, used while ``p < rank(S0)``,
i.e. ``l_T < m / 2``) or ``r x r`` (feature form), so memory stays O(l m + m^2).
"""

from __future__ import annotations

import numpy as np

_EPS = float(np.finfo(np.float64).eps)

# ridge penalty of the held-out classifier: the squared loss' counterpart of the linear SVM's
# C = 1 (minimise ||w||^2 / 2 + C sum loss  <=>  ridge with alpha = 1 / (2 C))
_RIDGE_ALPHA = 0.5


def stratified_folds(codes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Fold index in ``0 .. k-1`` per labeled sample: each class is dealt round-robin from a
    random start after the previous class, so folds differ in size by at most one and every
    class with at least k members is in every fold (smaller classes in as many as they can)."""
    folds = np.empty(codes.size, dtype=np.int64)
    offset = int(rng.integers(k))
    for c in rng.permutation(np.unique(codes)):
        members = rng.permutation(np.flatnonzero(codes == c))
        folds[members] = (offset + np.arange(members.size)) % k
        offset += members.size
    return folds


def _pm_targets(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """+-1 one-vs-rest targets (one column for two classes, like a binary linear SVM)."""
    if n_classes == 2:
        return np.where(codes == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((codes.size, n_classes))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def _losses(P: np.ndarray, codes: np.ndarray, n_classes: int) -> tuple[float, float, float]:
    """Held-out (squared loss, squared hinge, 0/1 error) of the scores P, per sample."""
    T = _pm_targets(codes, n_classes)
    sq = float(np.mean(np.sum((P - T) ** 2, axis=1)))
    sqh = float(np.mean(np.sum(np.maximum(0.0, 1.0 - T * P) ** 2, axis=1)))
    pred = (P[:, 0] > 0).astype(np.int64) if n_classes == 2 else np.argmax(P, axis=1)
    return sq, sqh, float(np.mean(pred != codes))


class _Fold:
    """One training / held-out split of the labeled rows, reduced to the restricted family.

    ``PE`` holds the labeled rows in S0's eigen-coordinates, ``E_l U0`` (l x r), where
    ``S0 = U0 diag(1 / w) U0^T`` on its range.
    """

    def __init__(self, PE, w, train, test, codes, n_classes, images=True):
        self.n_classes = n_classes
        self.codes_T, self.codes_V = codes[train], codes[test]
        aT, aV = PE[train], PE[test]  # (l_T, r), (l_V, r)
        r = w.size
        # basis of range(E_T^T) + S0 range(E_T^T) in S0's coordinates; blocks scaled to unit
        # columns so that the rank cut-off sees both
        blocks = np.hstack([aT.T, aT.T / w[:, None]]) if images else aT.T.copy()
        norms = np.linalg.norm(blocks, axis=0)
        blocks = blocks[:, norms > 0] / norms[norms > 0]
        Ub, sb, _ = np.linalg.svd(blocks, full_matrices=False)
        keep = sb > max(blocks.shape) * _EPS * (sb[0] if sb.size else 0.0)
        Vc = Ub[:, keep]
        self.full = Vc.shape[1] == r  # the family is all of range(S0)
        lw, Uw = np.linalg.eigh((Vc.T * w) @ Vc)  # V^T S0^+ V > 0
        C = (Uw / lw) @ Uw.T
        D = (Vc.T / w) @ Vc - C  # V^T S0 V - C >= 0 (0 when the family is full)
        FT, FV = aT @ Vc, aV @ Vc
        M = FT.T @ FT
        mu, U = np.linalg.eigh(0.5 * (M + M.T))
        self.mu = np.maximum(mu, 0.0)
        self.mu_max = float(self.mu[-1]) if self.mu.size else 0.0
        Y = np.zeros((train.size, n_classes))
        Y[np.arange(train.size), self.codes_T] = 1.0
        FY = FT.T @ Y
        R = FY @ FY.T - M @ D @ M
        self._S_parts = (PE, w, Vc, U)
        self.Ct = U.T @ C @ U
        self.Rt = U.T @ R @ U
        self.GT, self.GV = FT @ U, FV @ U
        self.targets = _pm_targets(self.codes_T, n_classes)
        if not self.full:
            # the part of the prior kernel outside the family: E (S0 - V C V^T) E^T
            PT, PV = aT / np.sqrt(w), aV / np.sqrt(w)
            HT, HV = self.GT @ self.Ct, self.GV @ self.Ct
            self.K1TT = PT @ PT.T - HT @ self.GT.T
            self.K1VT = PV @ PT.T - HV @ self.GT.T

    def solution(self, lam: float) -> np.ndarray:
        """Y~ (in M's eigenbasis): the preconditioned projection of the unconstrained optimum."""
        if not np.isfinite(lam):
            return self.Ct
        mu = self.mu
        c = (lam * self.Ct + self.Rt) / (lam + np.outer(mu, mu))
        s = (lam + mu * mu) ** 0.25
        v, Q = np.linalg.eigh(c * np.outer(s, s))
        pos = v > 0
        Qs = Q[:, pos] / s[:, None]
        return (Qs * v[pos]) @ Qs.T

    def S_of(self, Yt: np.ndarray) -> np.ndarray:
        """The m x m S in S0's eigen-coordinates ``U0^T S U0`` (study helper; r x r)."""
        PE, w, Vc, U = self._S_parts
        VU = Vc @ U
        return np.diag(1.0 / w) + VU @ (Yt - self.Ct) @ VU.T

    def scores(self, Yt: np.ndarray, alpha: float = _RIDGE_ALPHA) -> np.ndarray:
        """Held-out scores of the ridge classifier (intercept penalised, as in a linear SVM
        with a constant feature) on the kernel of ``S = S0 + V (Y - C) V^T``."""
        if self.full:
            v, Q = np.linalg.eigh(0.5 * (Yt + Yt.T))
            pos = v > 0
            L = Q[:, pos] * np.sqrt(v[pos])
            PhiT = np.hstack([self.GT @ L, np.ones((self.GT.shape[0], 1))])
            PhiV = np.hstack([self.GV @ L, np.ones((self.GV.shape[0], 1))])
            A = PhiT.T @ PhiT
            A[np.diag_indices_from(A)] += alpha
            return PhiV @ np.linalg.solve(A, PhiT.T @ self.targets)
        DT = self.GT @ Yt
        KTT = self.K1TT + DT @ self.GT.T + 1.0
        KVT = self.K1VT + self.GV @ Yt @ self.GT.T + 1.0
        KTT[np.diag_indices_from(KTT)] += alpha
        return KVT @ np.linalg.solve(0.5 * (KTT + KTT.T), self.targets)


def cv_losses(PE, w, codes, n_classes, rel_lams, folds):
    """Held-out losses, shape (3, n_folds, n_lams): squared loss, squared hinge, 0/1 error.

    ``rel_lams`` are multiples of each fold's own ``mu_max^2`` (np.inf: the prior S0).
    """
    k = int(folds.max()) + 1
    out = np.full((3, k, rel_lams.size), np.nan)
    for f in range(k):
        test = np.flatnonzero(folds == f)
        train = np.flatnonzero(folds != f)
        if test.size == 0 or train.size == 0:
            continue
        fold = _Fold(PE, w, train, test, codes, n_classes)
        for j, rl in enumerate(rel_lams):
            Yt = fold.solution(rl * fold.mu_max**2)
            out[:, f, j] = _losses(fold.scores(Yt), fold.codes_V, n_classes)
    return out


def warm_start(PE, w, codes, n_classes, rel_lam):
    """The restricted-family model on every labeled row at ``rel_lam * mu_max^2``: S in
    S0's eigen-coordinates (r x r), a start for the exact solver."""
    idx = np.arange(codes.size)
    fold = _Fold(PE, w, idx, idx[:1], codes, n_classes)
    return fold.S_of(fold.solution(rel_lam * fold.mu_max**2))


# which held-out loss ranks lam (index into cv_losses' first axis: squared loss, squared
# hinge, 0/1 error) and how much better than the prior a lam must score to be chosen
_CRITERION = 1
_GATE = 2.0


def choose(losses: np.ndarray) -> int:
    """Index of the chosen candidate in ``losses`` (n_folds, n_candidates), the last being the
    prior (lam = inf): the candidate with the smallest mean held-out loss among those whose
    mean improvement over the prior exceeds ``_GATE`` standard errors of the paired
    differences over the folds; the prior when none does."""
    ok = ~np.isnan(losses).any(axis=1)
    L = losses[ok]
    prior = L.shape[1] - 1
    if L.shape[0] < 2:
        return prior
    D = L - L[:, [prior]]
    se = D.std(axis=0, ddof=1) / np.sqrt(L.shape[0])
    better = D.mean(axis=0) < -_GATE * se
    if not better.any():
        return prior
    cand = np.flatnonzero(better)
    return int(cand[np.argmin(L.mean(axis=0)[cand])])


def select_lam(El, codes, n_classes, U0, w, exps, rng, n_folds):
    """Cross-validated choice of lam for labels: returns (exponent e or None for the prior,
    mean held-out loss per candidate (exps then the prior), mean 0/1 error per candidate)."""
    PE = El @ U0
    folds = stratified_folds(codes, n_folds, rng)
    rel = np.concatenate([10.0 ** np.asarray(exps, dtype=float), [np.inf]])
    L = cv_losses(PE, w, codes, n_classes, rel, folds)
    j = choose(L[_CRITERION])
    mean = np.nanmean(L[_CRITERION], axis=0)
    err = np.nanmean(L[2], axis=0)
    return (None if j == rel.size - 1 else float(exps[j])), mean, err
