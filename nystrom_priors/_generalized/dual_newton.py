"""Semismooth Newton-CG on the Lagrangian dual of J (Qi & Sun 2006)."""

from __future__ import annotations

import numpy as np

from .problem import _Problem
from .psd import _sym


class _Dual:
    """The Lagrangian dual of J in the residual R (semismooth Newton-CG, Qi & Sun 2006).

    Writing the loss through its conjugate, ``||y - t||^2 = max_r 2<r, y - t> - ||r||^2``, the
    optimum is ``S(R) = P_psd(X(R))`` with ``X(R) = S0 - A*(R) / lam``, where ``A(S)`` collects
    the constrained entries (``E_l S E_l^T`` and ``e_a^T S e_b`` for the pairs) and ``A*`` is its
    adjoint. The dual function

        d(R) = lam ||S0||^2 - lam ||P_psd(X(R))||^2 - 2 <R, t> - ||R||^2

    is concave, smooth and unconstrained, with ``grad d = 2 (A(S(R)) - t - R)``; its dimension is
    the number of constrained entries (l^2 for l labels), not m^2. Newton directions solve
    ``(I + A P'(X) A* / lam) H = A(S) - t - R`` by conjugate gradients, with the Loewner
    operator ``P'(X)[Y] = Q (Omega o Q^T Y Q) Q^T``. Every iterate gives a feasible primal
    ``S(R)``, so ``J(S(R)) - d(R)`` is an exact duality gap.
    """

    def __init__(self, prob: "_Problem", lam: float):
        self.prob = prob
        self.lam = lam
        self._targets = None
        # preconditioner on pairs: ~ 1 + K_aa K_bb / lam (Jacobi); the labels block gets an exact
        # Kronecker inverse rebuilt at every Newton step (set_state_precond)
        if prob.has_pairs:
            kd = np.einsum("ij,ij->i", prob.Ep, prob.Ep)
            self.pden = 1.0 + kd[prob.a] * kd[prob.b] / lam

    def set_state_precond(self, st):
        """I + K+ (x) K+ / lam with K+ = E_l Q+ Q+^T E_l^T (Omega ~ rank-one on the kept part)."""
        if self.prob.has_labels:
            PL = st["PL"][:, st["x"] > 0]
            kap, Vk = np.linalg.eigh(PL @ PL.T)
            self.kV = Vk
            self.kden = 1.0 + np.outer(np.maximum(kap, 0), np.maximum(kap, 0)) / self.lam

    def precond(self, H):
        hl = None
        if self.prob.has_labels:
            hl = self.kV @ ((self.kV.T @ H[0] @ self.kV) / self.kden) @ self.kV.T
        hp = H[1] / self.pden if self.prob.has_pairs else None
        return hl, hp

    # R is a pair (R_l dense (l, l) or None, r_p (|Omega|,) or None)
    def zeros(self):
        p = self.prob
        return (np.zeros((p.El.shape[0],) * 2) if p.has_labels else None,
                np.zeros(p.a.size) if p.has_pairs else None)

    def adjoint(self, R) -> np.ndarray:
        """sym(A*(R)) as an (m, m) matrix."""
        p = self.prob
        out = np.zeros((p.m, p.m))
        if p.has_labels:
            out += p.El.T @ R[0] @ p.El
        if p.has_pairs:
            import scipy.sparse as sp

            Rs = sp.csr_matrix((R[1], (p.a, p.b)), shape=p.T.shape)
            out += p.Ep.T @ (Rs @ p.Ep)
        return _sym(out)

    def forward_factored(self, PL, PP, D):
        """A(Q D Q^T) given P = A Q (PL for labels, PP for the pair points)."""
        p = self.prob
        yl = (PL * D) @ PL.T if (p.has_labels and D.ndim == 1) else (PL @ D @ PL.T if p.has_labels else None)
        if p.has_pairs:
            F = PP * D if D.ndim == 1 else PP @ D
            yp = np.einsum("ij,ij->i", F[p.a], PP[p.b])
        else:
            yp = None
        return yl, yp

    def targets(self):
        """Targets of the constrained entries. A labels offset D (the restricted problems of
        lam="auto") moves them: ``E_l (S + D) E_l^T - Y Y^T = A(S) - (Y Y^T - E_l D E_l^T)``."""
        if self._targets is None:
            p = self.prob
            tl = None
            if p.has_labels:
                tl = p.Y @ p.Y.T
                if p.offset is not None:
                    tl = tl - _sym(p.El @ p.offset @ p.El.T)
            self._targets = (tl, p.t if p.has_pairs else None)
        return self._targets

    @staticmethod
    def dot(R1, R2) -> float:
        return sum(float(np.sum(a * b)) for a, b in zip(R1, R2) if a is not None)

    @staticmethod
    def axpy(alpha, X, Y):
        return tuple(None if y is None else y + alpha * x for x, y in zip(X, Y))

    def state(self, R):
        """Eigendecomposition of X(R), S(R) factors, d(R) and the ascent direction g = grad/2."""
        Ar = self.adjoint(R)
        X = self.prob.S0 - Ar / self.lam
        x, Q = np.linalg.eigh(_sym(X))
        xp = np.maximum(x, 0.0)
        p = self.prob
        PL = p.El @ Q if p.has_labels else None
        PP = p.Ep @ Q if p.has_pairs else None
        y = self.forward_factored(PL, PP, xp)
        t = self.targets()
        # lam (||S0||^2 - ||P_psd(X)||^2) without cancellation: ||P_psd(X)||^2 = ||X||^2 -
        # ||P_nsd(X)||^2 and lam (||S0||^2 - ||X||^2) = 2 <S0, A*R> - ||A*R||^2 / lam. The
        # direct form lost every digit of d at lam >~ mu_max^2 (lam ||S0||^2 >> J).
        xn = np.minimum(x, 0.0)
        d = (
            2.0 * float(np.sum(self.prob.S0 * Ar))
            - float(np.sum(Ar * Ar)) / self.lam
            + self.lam * float(np.sum(xn * xn))
            - 2.0 * self.dot(R, t)
            - self.dot(R, R)
            + self.prob.loss_shift
        )
        g = tuple(None if yy is None else yy - tt - rr for yy, tt, rr in zip(y, t, R))
        return dict(x=x, Q=Q, xp=xp, PL=PL, PP=PP, d=d, g=g, y=y, t=t)

    def primal(self, st) -> tuple[np.ndarray, float]:
        Q, xp = st["Q"], st["xp"]
        S = (Q * xp) @ Q.T
        loss = sum(float(np.sum((yy - tt) ** 2)) for yy, tt in zip(st["y"], st["t"]) if yy is not None)
        return S, self.lam * float(np.sum((S - self.prob.S0) ** 2)) + loss + self.prob.loss_shift

    def hess_apply(self, st, Omega, H):
        """(I + A P'(X) A* / lam) H."""
        if not self.prob.has_pairs:
            return (H[0] + self._labels_hess(st, Omega, H[0]) / self.lam, None)
        return self._general_hess_apply(st, Omega, H)

    def _general_hess_apply(self, st, Omega, H):
        """(I + A P'(X) A* / lam) H for any Loewner matrix Omega (no block structure used)."""
        p = self.prob
        PL, PP = st["PL"], st["PP"]
        M = np.zeros((p.m, p.m))
        if p.has_labels:
            M += PL.T @ H[0] @ PL
        if p.has_pairs:
            import scipy.sparse as sp

            Hs = sp.csr_matrix((H[1], (p.a, p.b)), shape=p.T.shape)
            M += PP.T @ (Hs @ PP)
        Y = Omega * _sym(M)
        yl, yp = self.forward_factored(PL, PP, Y)
        return tuple(None if h is None else h + v / self.lam for h, v in zip(H, (yl, yp)))

    @staticmethod
    def _labels_hess(st, Omega, H):
        """E_l P'(X)[E_l^T H E_l] E_l^T through the block structure of Omega.

        eigh sorts x ascending, so with k = #(x <= 0) Omega is 0 on the first k x k block, 1 on
        the last block and Omega[k:, :k] in between: the zero block is never formed, which saves
        ~40% of the flops when a third of the spectrum is clipped (small lam, where Newton-CG
        spends its time).
        """
        PL = st["PL"]
        k = int(np.count_nonzero(st["x"] <= 0))
        Pp, Pn = PL[:, k:], PL[:, :k]
        HPp = H @ Pp
        G = 0.5 * (Pp.T @ HPp) @ Pp.T
        if k:
            G += (Omega[k:, :k] * (HPp.T @ Pn)) @ Pn.T
        out = Pp @ G
        return out + out.T


def _loewner_omega(x: np.ndarray) -> np.ndarray:
    """First divided differences of max(., 0) at the eigenvalues x (Qi & Sun's Omega)."""
    pos = x > 0
    xp = np.maximum(x, 0.0)
    num = xp[:, None] - xp[None, :]
    den = x[:, None] - x[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        om = np.where(np.abs(den) > 0, num / np.where(den == 0, 1.0, den), 0.0)
    both = pos[:, None] & pos[None, :]
    om[both] = 1.0
    om[~pos[:, None] & ~pos[None, :]] = 0.0
    return om


def _newton_cg(dual: "_Dual", st, Omega, g, cg_tol: float, cg_max: int):
    """Preconditioned CG for ``(I + A P'(X) A* / lam) H = g`` to a residual ``cg_tol``;
    returns (H, index of the last CG iteration)."""
    H = tuple(None if v is None else np.zeros_like(v) for v in g)
    r = g
    z = dual.precond(r)
    pdir = z
    rz = dual.dot(r, z)
    k = 0
    for k in range(cg_max):
        Ap = dual.hess_apply(st, Omega, pdir)
        pAp = dual.dot(pdir, Ap)
        if not pAp > 0.0:  # breakdown: g (hence the direction) is 0 to round-off
            break
        alpha = rz / pAp
        H = dual.axpy(alpha, pdir, H)
        r = dual.axpy(-alpha, Ap, r)
        if np.sqrt(dual.dot(r, r)) <= cg_tol:
            break
        z = dual.precond(r)
        rz_new = dual.dot(r, z)
        pdir = dual.axpy(rz_new / rz, pdir, z)
        rz = rz_new
    return H, k


def _armijo_ascent(dual: "_Dual", R, st, H, slope: float, tries: int):
    """Backtracking from step 1 along H until ``d`` rises by 1e-4 * step * slope; returns
    (R + step H, its state) or None when ``tries`` halvings find no such step."""
    step = 1.0
    for _ in range(tries):
        cand = dual.axpy(step, H, R)
        st_new = dual.state(cand)
        if np.isfinite(st_new["d"]) and st_new["d"] >= st["d"] + 1e-4 * step * slope:
            return cand, st_new
        step *= 0.5
    return None


def _solve_newton(prob: "_Problem", lam: float, R0, *, tol: float, max_iter: int, cg_max: int = 200):
    """Semismooth Newton-CG on the dual; returns (S, R, n_iter, relative gap, converged)."""
    dual = _Dual(prob, lam)
    R = dual.zeros() if R0 is None else R0
    st = dual.state(R)
    gap = np.inf
    it = 0  # max_iter = 0 (a zero cold-step budget) returns the start's own gap
    capped = 0  # consecutive Newton steps whose CG ran out: the dual is too badly scaled here
    for it in range(1, max_iter + 1):
        S, J = dual.primal(st)
        gap = max(J - st["d"], 0.0) / max(J, 1e-300)
        if gap <= tol:
            return S, R, it - 1, gap, True
        g = st["g"]
        gnorm = np.sqrt(dual.dot(g, g))
        Omega = _loewner_omega(st["x"])
        dual.set_state_precond(st)
        # inexact Newton: preconditioned CG to a relative residual min(0.1, sqrt(|g|))
        H, k = _newton_cg(dual, st, Omega, g, min(0.1, np.sqrt(gnorm)) * gnorm, cg_max)
        capped = capped + 1 if k == cg_max - 1 else 0
        if capped >= 3:
            # measured (german, m = 100, 80 labels, lam = mu_max^2 * 1e-12): from here on every
            # step runs CG to its cap and the gap stays ~1 for 100 steps; APG finishes instead
            break
        # Armijo line search on the concave dual (ascent along H; <grad, H> = 2 <g, H> > 0)
        slope = 2.0 * dual.dot(g, H)
        found = _armijo_ascent(dual, R, st, H, slope, 30)
        if found is None or slope <= 0.0:
            break  # no ascent possible at this precision: hand over to the caller's fallback
        R, st = found
    S, J = dual.primal(st)
    gap = max(J - st["d"], 0.0) / max(J, 1e-300)
    return S, R, it, gap, gap <= tol
