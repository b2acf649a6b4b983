"""The exact default solver's core: semismooth Newton-CG on the Lagrangian dual of J (Qi & Sun
2006). Its barrier-smoothed form, for cold starts at small lam, is ``_barrier.py``.

Writing the loss through its conjugate, ``||y - t||^2 = max_r 2<r, y - t> - ||r||^2``, the
optimum of J is ``S(R) = P_psd(X(R))``, ``X(R) = S0 - A*(R) / lam``, at the maximiser R of the
concave dual d (``_Dual``). Its dimension is the number of constrained entries (l^2 for l
labels, one per pair), not the m^2 of S, and every iterate gives a feasible S(R), so
``J(S(R)) - d(R)`` certifies it. Newton directions come from conjugate gradients on
``(I + A P'(X) A* / lam) H = g``, whose Loewner matrix Omega is 1 on the block of X's positive
eigenvalues and 0 on that of the others: the labels' and the pairs' products take that
structure (``_labels_hess``, ``_pairs_hess``), and the pairs' CG a Jacobi preconditioner
(``docs/design/solvers.md`` and ``performance.md`` have the measurements).
"""

from __future__ import annotations

import numpy as np

from ._problem import _Problem, _sym

# the pairs' Newton products form the points' kernel K_P up to this many points, which caps
# its three n_pts x n_pts arrays at 8 MiB each: larger ones stream from memory at every pass
_KP_MAX_POINTS = 1024


def _kernel_form(n_pts: int, width: int) -> bool:
    """Whether the pairs' Newton product takes its positive block through K_P (a few passes
    over n_pts^2 entries, bound by memory) rather than through the landmarks' space (two
    GEMMs of n_pts x width^2, width = the positive eigenvalues' count): K_P while n_pts is
    below width^2 / 64, the crossover with a margin (``docs/design/performance.md``)."""
    return n_pts <= min(width * width // 64, _KP_MAX_POINTS)


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

    def __init__(self, prob: _Problem, lam: float):
        self.prob = prob
        self.lam = lam
        self._targets = None
        self._last_eig = (None, None)  # (R, eigh of X(R)) of the latest state
        self._pattern = None  # the pairs' sparse pattern (``_sym_pattern``)
        self._kernel = None  # (state, K_P and scratch) of the pairs' products

    def eig_X(self, R) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (ascending) and eigenvectors of ``X(R) = S0 - A*(R) / lam``.

        The eigh is the dominant cost of a state, so it is not repeated: at R = 0, where every
        cold start begins, X = S0, whose eigendecomposition the problem may carry
        (``_Problem.S0_eig``; m = 1000 on one thread: 0.18 s), and the barrier dual asks again
        for the same R after it sets its barrier weight. R is never modified in place.
        """
        R_last, eig = self._last_eig
        if R_last is R:
            return eig
        if self.prob.S0_eig is not None and not any(r is not None and r.any() for r in R):
            eig = self.prob.S0_eig
        else:
            eig = np.linalg.eigh(_sym(self.prob.S0 - self.adjoint(R) / self.lam))
        self._last_eig = (R, eig)
        return eig

    def set_state_precond(self, st, Omega):
        """I + K+ (x) K+ / lam with K+ = E_l Q+ Q+^T E_l^T (Omega ~ rank-one on the kept part) on
        the labels, the exact diagonal on the pairs (``_pairs_jacobi``)."""
        if self.prob.has_labels:
            PL = st["PL"][:, st["x"] > 0]
            kap, Vk = np.linalg.eigh(PL @ PL.T)
            self.kV = Vk
            self.kden = 1.0 + np.outer(np.maximum(kap, 0), np.maximum(kap, 0)) / self.lam
        self._pairs_jacobi(st, Omega, blocks=True)

    def _pairs_jacobi(self, st, Omega, blocks=False):
        """The pairs' diagonal of ``I + A P'(X) A* / lam``: for the entry (a, b), with u, v the
        rows a, b of ``E_p Q``, ``A* e_ab = Q sym(u v^T) Q^T`` and the diagonal is
        ``1 + ((u o u)^T Omega (v o v) + (u o v)^T Omega (u o v)) / (2 lam)``. Exact, because
        the cheaper ``1 + |E_a|^2 |E_b|^2 / lam`` (Omega taken as 1) costs more CG products
        than this costs (``docs/design/solvers.md``).

        ``blocks``: Omega is the semismooth one (``_loewner_omega``; x ascending, k = #(x <=
        0)), 1 on its P x P block and 0 on N x N, so each quadratic form is a product of two
        sums over P plus the P x N terms: O((n_pts + |pairs|) (m - k) k) instead of
        O((n_pts + |pairs|) m^2)."""
        from .._numba._pair_entries import row_dots

        p = self.prob
        if not p.has_pairs:
            return
        PP = st["PP"]
        U2 = PP * PP
        W = PP[p.a] * PP[p.b]
        if not blocks:
            first = row_dots(U2 @ Omega, p.a, U2, p.b)
            second = np.einsum("ij,ij->i", W @ Omega, W)
        else:
            k = int(np.count_nonzero(st["x"] <= 0))
            sums = U2[:, k:].sum(axis=1)
            first = sums[p.a] * sums[p.b]
            second = W[:, k:].sum(axis=1) ** 2
            if 0 < k < Omega.shape[0]:
                between = Omega[k:, :k]
                G = np.ascontiguousarray(U2[:, k:]) @ between
                U2N = np.ascontiguousarray(U2[:, :k])
                first += row_dots(G, p.a, U2N, p.b) + row_dots(G, p.b, U2N, p.a)
                second += 2.0 * np.einsum("ij,ij->i", W[:, k:] @ between, W[:, :k])
        self.pden = 1.0 + 0.5 * (first + second) / self.lam

    def precond(self, H):
        hl = None
        if self.prob.has_labels:
            hl = self.kV @ ((self.kV.T @ H[0] @ self.kV) / self.kden) @ self.kV.T
        hp = H[1] / self.pden if self.prob.has_pairs else None
        return hl, hp

    # R is a pair (R_l dense (l, l) or None, r_p (|Omega|,) or None)
    def zeros(self):
        p = self.prob
        return (
            np.zeros((p.El.shape[0],) * 2) if p.has_labels else None,
            np.zeros(p.a.size) if p.has_pairs else None,
        )

    def adjoint(self, R) -> np.ndarray:
        """sym(A*(R)) as an (m, m) matrix."""
        p = self.prob
        out = np.zeros((p.m, p.m))
        if p.has_labels:
            out += p.El.T @ R[0] @ p.El
        if p.has_pairs:
            from .._numba._pair_entries import sym_times

            Ep = np.ascontiguousarray(p.Ep, dtype=np.float64)
            out += Ep.T @ sym_times(*self._sym_pattern(), R[1], Ep, np.empty_like(Ep))
        return _sym(out)

    def forward_factored(self, PL, PP, D):
        """A(Q D Q^T) given P = A Q (PL for labels, PP for the pair points)."""
        p = self.prob
        yl = (
            (PL * D) @ PL.T
            if (p.has_labels and D.ndim == 1)
            else (PL @ D @ PL.T if p.has_labels else None)
        )
        if p.has_pairs:
            from .._numba._pair_entries import row_dots

            F = PP * D if D.ndim == 1 else PP @ D
            yp = row_dots(F, p.a, PP, p.b)
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

    def lagrangian(self, R, Q, PL, PP, vals):
        """``L(S, R) = lam ||S - S0||^2 + 2 <R, A(S) - t> - ||R||^2`` at ``S = Q diag(vals) Q^T``;
        returns (L, S, A(S), J(S)).

        At the minimiser ``S = P_psd(X(R))`` this is ``d(R)``. It is evaluated here rather than
        through ``lam (||S0||^2 - ||P_psd(X)||^2)``, whose terms grow like
        ``lam ||X||^2 ~ ||A* R||^2 / lam`` and cancel at small lam (above the gaps they
        certify). L is stationary in S at the minimiser, so the eigendecomposition's round-off
        enters only to second order.
        """
        p = self.prob
        S = (Q * vals) @ Q.T
        D = S - p.S0
        y = self.forward_factored(PL, PP, vals)
        t = self.targets()
        prior = self.lam * float(np.sum(D * D)) + p.loss_shift
        L = prior - self.dot(R, R)
        J = prior
        for rr, yy, tt in zip(R, y, t):
            if rr is not None:
                L += 2.0 * float(np.sum(rr * (yy - tt)))
                J += float(np.sum((yy - tt) ** 2))
        return L, S, y, J

    def state(self, R):
        """Eigendecomposition of X(R), S(R) with its J, d(R) and the ascent direction g = grad/2."""
        p = self.prob
        x, Q = self.eig_X(R)
        xp = np.maximum(x, 0.0)
        PL = p.El @ Q if p.has_labels else None
        PP = p.Ep @ Q if p.has_pairs else None
        d, S, y, J = self.lagrangian(R, Q, PL, PP, xp)
        t = self.targets()
        g = tuple(None if yy is None else yy - tt - rr for yy, tt, rr in zip(y, t, R))
        return dict(x=x, Q=Q, xp=xp, PL=PL, PP=PP, d=d, g=g, S=S, J=J)

    def primal(self, st) -> tuple[np.ndarray, float]:
        return st["S"], st["J"]

    def hess_apply(self, st, Omega, H):
        """(I + A P'(X) A* / lam) H."""
        if not self.prob.has_pairs:
            return (H[0] + self._labels_hess(st, Omega, H[0]) / self.lam, None)
        if not self.prob.has_labels:
            return (None, H[1] + self._pairs_hess(st, Omega, H[1]) / self.lam)
        return self._general_hess_apply(st, Omega, H)

    def _general_hess_apply(self, st, Omega, H):
        """(I + A P'(X) A* / lam) H for any Loewner matrix Omega (no block structure used)."""
        p = self.prob
        PL, PP = st["PL"], st["PP"]
        M = np.zeros((p.m, p.m))
        if p.has_labels:
            M += PL.T @ H[0] @ PL
        if p.has_pairs:
            from .._numba._pair_entries import sym_times

            M += PP.T @ sym_times(*self._sym_pattern(), H[1], PP, np.empty_like(PP))
        Y = Omega * _sym(M)
        yl, yp = self.forward_factored(PL, PP, Y)
        return tuple(None if h is None else h + v / self.lam for h, v in zip(H, (yl, yp)))

    def _pairs_hess(self, st, Omega, h):
        """A P'(X)[A* h] on the pairs alone, through the block structure of Omega.

        With U = E_p Q split by the sign of x (k = #(x <= 0): U_N its first k columns, U_P the
        rest), Omega is 1 on the P x P block, 0 on N x N and ``Omega_PN`` between, so with H
        the symmetric n_pts x n_pts matrix of h the entry (a, b) is

            (K_P H K_P)_ab + g_a . u_N,b + g_b . u_N,a,   g = U_P (Omega_PN o U_P^T H U_N),

        ``K_P = U_P U_P^T``. With few points (``_kernel_form``), K_P makes the first term
        O(|pairs| n_pts) instead of the general product's two GEMMs of n_pts x m x m; with
        more, it is ``U_P (U_P^T H U_P) U_P^T`` read at the pairs. The second term costs two
        GEMMs of n_pts (m - k) k, together at most half of one of the general product's; the
        N x N block, where Omega is 0, is never formed.
        """
        from .._numba._pair_entries import row_dots, sym_times

        p = self.prob
        k, UP, UN, kernel_form = self._pairs_blocks(st)
        pattern = self._sym_pattern()
        if kernel_form:
            KP, W, Wt = self._kernel_buffers(st, UP)
            sym_times(*pattern, h, KP, W)  # H K_P
            np.copyto(Wt, W.T)  # K_P H: (K_P H K_P)_ab = K_P[a] . (K_P H)[b]
            out = row_dots(KP, p.a, Wt, p.b)
        else:
            HU = sym_times(*pattern, h, UP, np.empty_like(UP))
            out = row_dots(UP @ (UP.T @ HU), p.a, UP, p.b)
        if 0 < k < Omega.shape[0]:
            HN = sym_times(*pattern, h, UN, np.empty_like(UN))
            G = UP @ (Omega[k:, :k] * (UP.T @ HN))
            out += row_dots(G, p.a, UN, p.b)
            out += row_dots(G, p.b, UN, p.a)
        return out

    def _pairs_blocks(self, st):
        """``(k, U_P, U_N, whether K_P is used)`` of ``_pairs_hess`` for the state ``st``:
        computed once per state, shared by its conjugate-gradient products."""
        blocks = st.get("pairs_blocks")
        if blocks is None:
            U = st["PP"]
            k = int(np.count_nonzero(st["x"] <= 0))
            UP = np.ascontiguousarray(U[:, k:])
            UN = np.ascontiguousarray(U[:, :k])
            blocks = st["pairs_blocks"] = (k, UP, UN, _kernel_form(U.shape[0], UP.shape[1]))
        return blocks

    def _kernel_buffers(self, st, UP):
        """``(K_P, scratch, scratch)``, three n_pts x n_pts arrays allocated once per solve
        (fresh pages would fault in at every product) and K_P recomputed for each new state."""
        owner, bufs = self._kernel if self._kernel is not None else (None, None)
        if owner is not st:
            if bufs is None:
                n = UP.shape[0]
                bufs = np.empty((3, n, n))
            np.matmul(UP, UP.T, out=bufs[0])
            self._kernel = (st, bufs)
        return bufs

    def _sym_pattern(self):
        """``sym_times``' rows of ``sym(sum_q h_q e_(a_q) e_(b_q)^T)`` for the problem's entries:
        ``(indptr, cols, entry)``, both (a, b) and (b, a) of every entry, built once."""
        if self._pattern is None:
            p = self.prob
            n_pts = p.Ep.shape[0]
            rows = np.concatenate([p.a, p.b]).astype(np.int64)
            cols = np.concatenate([p.b, p.a]).astype(np.int64)
            entry = np.tile(np.arange(p.a.size, dtype=np.int64), 2)
            order = np.argsort(rows, kind="stable")
            indptr = np.zeros(n_pts + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=n_pts), out=indptr[1:])
            self._pattern = (indptr, cols[order], entry[order])
        return self._pattern

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


def _newton_cg(dual: _Dual, st, Omega, g, cg_tol: float, cg_max: int):
    """Preconditioned CG for ``(I + A P'(X) A* / lam) H = g`` to a residual ``cg_tol``;
    returns (H, index of the last CG iteration)."""
    H = tuple(None if v is None else np.zeros_like(v) for v in g)
    r = g
    z = dual.precond(r)
    pdir = z
    rz = dual.dot(r, z)
    k = 0
    for k in range(cg_max):  # noqa: B007 (k, the CG step count, is used after the loop)
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


def _armijo_ascent(dual: _Dual, R, st, H, slope: float, tries: int):
    """Backtracking from step 1 along H until ``d`` rises by 1e-4 * step * slope; returns
    (R + step H, its state, step) or None when ``tries`` halvings find no such step."""
    step = 1.0
    for _ in range(tries):
        cand = dual.axpy(step, H, R)
        st_new = dual.state(cand)
        if np.isfinite(st_new["d"]) and st_new["d"] >= st["d"] + 1e-4 * step * slope:
            return cand, st_new, step
        step *= 0.5
    return None


def _solve_newton(
    prob: _Problem,
    lam: float,
    R0,
    *,
    tol: float,
    max_iter: int,
    cg_max: int = 200,
    out: dict | None = None,
):
    """Semismooth Newton-CG on the dual; returns (S, R, n_iter, relative gap, converged).

    ``out["eig"]``, if ``out`` is given: ``(vals, Q)`` with ``S = Q diag(vals) Q^T``, vals >= 0.
    """
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
            if out is not None:
                out["eig"] = (st["xp"], st["Q"])
            return S, R, it - 1, gap, True
        g = st["g"]
        gnorm = np.sqrt(dual.dot(g, g))
        Omega = _loewner_omega(st["x"])
        dual.set_state_precond(st, Omega)
        # inexact Newton: preconditioned CG to a relative residual min(0.1, sqrt(|g|))
        H, k = _newton_cg(dual, st, Omega, g, min(0.1, np.sqrt(gnorm)) * gnorm, cg_max)
        capped = capped + 1 if k == cg_max - 1 else 0
        if capped >= 3:
            # from here on every step would run CG to its cap without progress: APG finishes
            break
        # Armijo line search on the concave dual (ascent along H; <grad, H> = 2 <g, H> > 0)
        slope = 2.0 * dual.dot(g, H)
        found = _armijo_ascent(dual, R, st, H, slope, 30)
        if found is None or slope <= 0.0:
            break  # no ascent possible at this precision: hand over to the caller's fallback
        R, st, _step = found
    S, J = dual.primal(st)
    gap = max(J - st["d"], 0.0) / max(J, 1e-300)
    if out is not None:
        out["eig"] = (st["xp"], st["Q"])
    return S, R, it, gap, gap <= tol


def dual_point(prob: _Problem, lam: float, S: np.ndarray, dual: _Dual | None = None):
    """The dual point ``R = A(S) - t`` of a primal point S (``_Dual``'s layout; ``dual``: that
    of ``prob`` and ``lam`` if already built): the optimal dual's form, ``R* = A(S*) - t``."""
    t = (_Dual(prob, lam) if dual is None else dual).targets()
    yl = prob.El @ S @ prob.El.T if prob.has_labels else None
    yp = prob.pair_values(S) if prob.has_pairs else None
    return tuple(None if y is None else y - tt for y, tt in zip((yl, yp), t))


def certify(coords, V: np.ndarray, eig, null, tol: float) -> tuple[float, np.ndarray]:
    """``(gap, V)``: a certified relative optimality gap of the primal solvers' iterate V
    (``_Coords``), and the point it certifies.

    Separable labels: ``coords.certificate``'s Lagrangian gap, of V itself. Otherwise (pairs)
    Fenchel duality at ``R = dual_point(S)``: d(R) bounds min J from below for any R, and this
    R tends to the optimal dual as S tends to the optimum; a stationarity measure (such as the
    projected-gradient residual) bounds nothing where S0 is huge. Of the two primal points, S
    and the dual's own ``S(R) = P_psd(X(R))`` (one eigendecomposition, ``_Dual.state``), the
    one with the smaller J (the smaller gap ``J - d(R)``: both share d) is returned, with its
    relative gap ``(J - d(R)) / J``: S's round-off enters R through ``A(S)`` and is amplified
    by ``1 / lam`` in ``X(R)``, while S(R) is consistent with R, as the dual Newton's iterates
    are. Not the smaller relative gap: far from the optimum d < 0, and there a huge J makes
    ``(J - d) / J`` small. ``J(S) = lam ||S - S0||^2 + ||R||^2`` (plus the labels'
    compression constant) reuses ``A(S)``.
    """
    if coords.prob.separable:
        return coords.certificate(V, coords.grad(V), eig, null=null, tol=tol), V
    prob, lam = coords.prob, coords.lam
    S = coords.to_S(V)
    dual = _Dual(prob, lam)
    R = dual_point(prob, lam, S, dual)
    st = dual.state(R)
    J = lam * float(np.sum((S - prob.S0) ** 2)) + prob.loss_shift + dual.dot(R, R)
    # J >= 0, so min J >= 0 and no relative gap exceeds 1 (d < 0 far from the optimum)
    if st["J"] < J:
        return min(max(st["J"] - st["d"], 0.0) / max(st["J"], 1e-300), 1.0), coords.to_V(st["S"])
    return min(max(J - st["d"], 0.0) / max(J, 1e-300), 1.0), V
