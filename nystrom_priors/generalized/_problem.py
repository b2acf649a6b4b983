"""The objective J of Zhang et al. (2012) in m x m form, its working coordinates, its
certificate, and the PSD-cone utilities they use.

``_Problem`` holds J(S) = lam ||S - S0||^2 + ||T o (E_I S E_I^T) - K*||^2 for fixed data (labels
and / or a sparse pairs mask) and its gradient; ``_Coords`` the congruence V = D U^T S U D in
which the projected-gradient solvers work, with the duality-gap certificate; ``_build_problem``
assembles J from validated labels and pairs.
"""

from __future__ import annotations

import functools

import numpy as np

_EPS = np.finfo(np.float64).eps


def _sym(A: np.ndarray) -> np.ndarray:
    return 0.5 * (A + A.T)


def _psd_project(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Euclidean projection onto the PSD cone; returns (P, eigenvalues, eigenvectors) of A."""
    lam, U = np.linalg.eigh(_sym(A))
    pos = np.maximum(lam, 0.0)
    return (U * pos) @ U.T, lam, U


def _psd_project_few_negative(A: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """The projection of ``_psd_project`` from the non-positive eigenpairs only, their number
    and their eigenvectors (which span the null space of P: the certificate's null candidate).

    ``P = A - U_- diag(w_-) U_-^T`` with LAPACK's ``syevr`` restricted to the values
    ``(-inf, 0]`` (for part of the spectrum: bisection and inverse iteration on the
    tridiagonal form): the reduction plus k eigenvectors instead of all m, faster than the
    full ``eigh`` while k is a small share of m.
    """
    from scipy.linalg import eigh

    A = _sym(A)
    w, U = eigh(A, driver="evr", subset_by_value=(-np.inf, 0.0), check_finite=False)
    return A - (U * w) @ U.T, int(w.size), U


def _factor(S: np.ndarray, eig: tuple | None = None) -> np.ndarray:
    """F with F F^T = S (eigenvalues below m eps lam_max dropped); ``eig = (vals, Q)`` with
    ``S = Q diag(vals) Q^T``, when known, replaces the eigh."""
    lam, U = np.linalg.eigh(_sym(S)) if eig is None else eig
    keep = lam > S.shape[0] * _EPS * max(lam.max(initial=0.0), 0.0)
    if not keep.any():
        return np.zeros((S.shape[0], 0))
    return np.ascontiguousarray(U[:, keep] * np.sqrt(lam[keep]))


class _Problem:
    """The quadratic J(S) for fixed data: labels part (E_l, Y) and sparse pairs part.

    Parameters
    ----------
    S0 : (m, m) prior.
    El, Y : labeled extrapolation rows (l, m) and one-hot labels (l, c), dense or
        ``scipy.sparse`` (kept sparse: with c ~ l a dense Y would be quadratic), or None.
    Ep, a, b, t : rows of E for the points of the sparse part (p, m) and the ordered entries
        (a[k], b[k]) of the mask with targets t[k], or None.
    offset : (m, m) or None
        Labels only: the data term is taken at ``S + offset``, i.e.
        ``||E_l (S + offset) E_l^T - K*||^2`` (the restricted problems of lam="auto").
    S0_eig : (x, Q) or None
        S0's full eigendecomposition, x ascending: the dual Newton's cold starts begin at
        X = S0 and take it instead of an m x m eigh (the prior's own, computed anyway).

    With more labeled rows than landmarks, ``El`` / ``Y`` hold an equivalent compressed labels
    term (``_compress_labels``, at most m rows) and ``loss_shift`` the constant it drops;
    ``El_labels`` / ``Y_labels`` keep the rows as given.
    """

    def __init__(
        self, S0, El=None, Y=None, Ep=None, a=None, b=None, t=None, offset=None, S0_eig=None
    ):
        self.S0 = S0
        self.S0_eig = S0_eig
        self.offset = offset
        self.m = S0.shape[0]
        self.El = El
        self.Y = Y
        self.has_labels = El is not None
        self.has_pairs = Ep is not None
        # the data term below is exact for these; El / Y may be swapped for a compressed
        # equivalent (more labels than landmarks), ``loss_shift`` the constant that swap drops
        self.El_labels, self.Y_labels = El, Y
        self.loss_shift = 0.0
        R = np.zeros((self.m, self.m))
        Mpre = np.zeros((self.m, self.m))
        if self.has_labels:
            C = (Y.T @ El).T  # E_l^T Y, also for a sparse one-hot Y (never densified)
            R += C @ C.T
            self.M = El.T @ El
            if offset is not None:
                R -= self.M @ offset @ self.M
            Mpre += self.M
            if El.shape[0] > self.m:
                self.El, self.Y, self.loss_shift = _compress_labels(El, Y)
            elif hasattr(Y, "toarray"):  # l <= m rows: at most m x l
                self.Y = Y.toarray()
        if self.has_pairs:
            import scipy.sparse as sp

            self.Ep, self.a, self.b, self.t = Ep, a, b, t
            p = Ep.shape[0]
            self.T = sp.csr_matrix((t, (a, b)), shape=(p, p))
            R += Ep.T @ (self.T @ Ep)
            density = a.size / float(p * p)
            Mpre += np.sqrt(density) * (Ep.T @ Ep)
        self.R = _sym(R)
        self.Mpre = _sym(Mpre)
        self.separable = self.has_labels and not self.has_pairs
        # M's eigenbasis (the APG preconditioner) costs an m x m eigh; the dual Newton never
        # needs it, so it is built on first use. mu_max alone comes from the smaller Gram
        # matrix B B^T when Mpre = B^T B has fewer rows than m (100 labels, m = 1000: 0.2 s saved).
        rows = [El] if self.has_labels else []
        if self.has_pairs:
            rows.append(density**0.25 * Ep)
        B = np.vstack(rows)
        if B.shape[0] < self.m:
            self.mu_max = _top_gram_eig(B)
        else:
            self.mu_max = float(self.mu.max()) if self.mu.size else 0.0

    @functools.cached_property
    def _basis(self) -> tuple:
        """(mu, U) of Mpre and, labels only, the lam-independent pieces S0 and R in that basis."""
        mu, U = np.linalg.eigh(self.Mpre)
        if not self.separable:
            return np.maximum(mu, 0.0), U, None, None
        return np.maximum(mu, 0.0), U, U.T @ self.S0 @ U, U.T @ self.R @ U

    mu = property(lambda self: self._basis[0])
    U = property(lambda self: self._basis[1])
    S0t = property(lambda self: self._basis[2])
    Rt = property(lambda self: self._basis[3])

    # ----- J and its gradient in the original coordinates -------------------------------------
    def pair_values(self, S: np.ndarray) -> np.ndarray:
        """``E_p S E_p^T`` at the constrained entries ``(a_k, b_k)``, never the full block."""
        return np.einsum("ij,ij->i", (self.Ep @ S)[self.a], self.Ep[self.b])

    def loss(self, S: np.ndarray) -> float:
        val = 0.0
        if self.has_labels:
            K = self.El @ (S if self.offset is None else S + self.offset) @ self.El.T
            YYt = self.Y @ self.Y.T
            val += float(np.sum((K - YYt) ** 2)) + self.loss_shift
        if self.has_pairs:
            val += float(np.sum((self.pair_values(S) - self.t) ** 2))
        return val

    def objective(self, S: np.ndarray, lam: float) -> float:
        return lam * float(np.sum((S - self.S0) ** 2)) + self.loss(S)

    def hess(self, S: np.ndarray) -> np.ndarray:
        H = np.zeros_like(S)
        if self.has_labels:
            H += self.El.T @ ((self.El @ S @ self.El.T) @ self.El)
        if self.has_pairs:
            import scipy.sparse as sp

            Tv = sp.csr_matrix((self.pair_values(S), (self.a, self.b)), shape=self.T.shape)
            H += self.Ep.T @ (Tv @ self.Ep)
        return H

    def grad(self, S: np.ndarray, lam: float) -> np.ndarray:
        return _sym(2.0 * lam * (S - self.S0) + 2.0 * (self.hess(S) - self.R))


class _Coords:
    """Working coordinates S = Q V Q^T for one lam (congruence: V >= 0 iff S >= 0)."""

    def __init__(self, prob: _Problem, lam: float, precondition: bool):
        self.prob = prob
        self.lam = lam
        U, mu = prob.U, prob.mu
        if precondition:
            s = (lam + mu**2) ** 0.25
        else:
            s = np.ones_like(mu)
        self.s = s
        self.Q = U / s  # U diag(1/s)
        self.Qinv = (U * s).T  # diag(s) U^T
        if prob.separable:
            w = lam + np.outer(mu, mu)
            ss = np.outer(s, s)
            self.wa = w / ss**2  # weights a_ij of f(V) = sum a (V - b)^2 + const
            self.b = ss * (lam * prob.S0t + prob.Rt) / w
            self.lipschitz = 2.0 * float(self.wa.max())
            if precondition:
                # strong convexity is known exactly: Nesterov's constant momentum for
                # condition number kappa beats FISTA's t-sequence
                q = np.sqrt(float(self.wa.min()) / float(self.wa.max()))
                self.momentum = (1.0 - q) / (1.0 + q)
        else:
            self.lipschitz = 2.0
        # past this a backtracking estimate of the Lipschitz constant means round-off, not
        # curvature: J's Hessian is 2 (lam I + the data term's), at most ~2 (lam + mu_max^2) in
        # S itself (unpreconditioned) and O(1) in the preconditioned V. The unpreconditioned
        # bound moves with the kernel's scale to the fourth power, so an absolute cap would
        # refuse well-posed data whose kernel values are merely large.
        curvature = 1.0 if precondition else 2.0 * (lam + prob.mu_max**2)
        self.lipschitz_cap = max(1e30, 1e12 * curvature)

    def to_S(self, V: np.ndarray) -> np.ndarray:
        return _sym(self.Q @ V @ self.Q.T)

    def to_V(self, S: np.ndarray) -> np.ndarray:
        return _sym(self.Qinv @ S @ self.Qinv.T)

    def f(self, V: np.ndarray) -> float:
        if self.prob.separable:
            return float(np.sum(self.wa * (V - self.b) ** 2))  # J minus a constant
        return self.prob.objective(self.to_S(V), self.lam)

    def grad(self, V: np.ndarray) -> np.ndarray:
        if self.prob.separable:
            return 2.0 * self.wa * (V - self.b)
        return _sym(self.Q.T @ self.prob.grad(self.to_S(V), self.lam) @ self.Q)

    def certificate(
        self,
        V: np.ndarray,
        G: np.ndarray,
        eig=None,
        null=None,
        tol: float | None = None,
    ) -> float:
        """Certified optimality measure at a feasible V with gradient G.

        Separable problems (labels) only; pairs are certified by the dual gap
        (``_dual.certify``). The Lagrangian duality gap f(V) - g(Z), relative to
        max(J(S), eps loss(0)) (an exact fit has J = 0 up to round-off); ``g`` is
        the closed-form dual of the weighted quadratic, and for any Z >= 0 the gap equals
        ``sum (G - Z)^2 / (4a) + <Z, V>`` (dual residual plus complementarity), an upper bound
        on f(V) - min f. The smallest of three multipliers is reported: 0 (exact when the
        constraint is inactive); the PSD part of G on the null space of V (exact at an optimum
        with an active constraint, where the multiplier lives there); and ``P_psd(G)``. The first
        two keep the gap free of round-off where V is large: at lam >~ mu_max^2, ``P_psd(G)``
        of a gradient that is only round-off paired with V ~ sqrt(lam) S0 made the gap
        1e-5 to > 1 relative, and every solver ran to max_iter. ``eig`` = (w, U) with
        ``V = U diag(w) U^T`` (from the projection that produced V) saves an eigh; ``null``, an
        orthonormal basis of V's null space (the clipped eigenvectors of a partial projection),
        saves it too. With ``tol``, a value <= tol from the first two candidates is returned
        without the eigendecompositions of G and V: any Z >= 0 bounds the gap, so the value
        is still certified, only possibly larger than the full minimum (never above tol).
        """
        if not self.prob.separable:
            raise ValueError("certificate: pairs are certified by _dual.certify")
        # f(V) - g(Z) = sum a (V-b)^2 + sum (Z^2/(4a) + Z b); substituting b = V - G/(2a)
        # gives the cancellation-free form below (no O(|b|) terms cancel)
        inv4a = 1.0 / (4.0 * self.wa)
        m = V.shape[0]
        # the gap is relative to J, floored at eps times the loss of S = 0 (the targets'
        # own scale, free of lam and S0): at an exact fit (J = 0 up to round-off) a
        # relative gap would compare round-off with round-off
        if not hasattr(self, "_J_floor"):
            self._J_floor = _EPS * self.prob.loss(np.zeros_like(V))
        J = max(self.prob.objective(self.to_S(V), self.lam), self._J_floor, 1e-300)
        # round-off floor of the computed gap, per multiplier: the nearest representable V
        # leaves G ~ dG = eps * a (|V| + |b|) per entry, which moves sum (G - Z)^2 / (4a)
        # by up to sum (2 |G - Z| + dG) dG / (4a), and <Z, V> for Z on V's near-null space
        # Un by ~||dG|| ||Un^T V Un||. One floor for every multiplier, sum dG |V|, made the
        # certificate 0 wherever V ~ 1e8 (an ill-conditioned prior): a warm start 13% above
        # the optimum was accepted as converged (found by a solver-agreement fuzz).
        dG = _EPS * 2.0 * self.wa * (np.abs(V) + np.abs(self.b))
        dG_norm = float(np.linalg.norm(dG))

        def gap_of(Z, z_noise):
            """max(gap - its round-off, 0) for the multiplier Z; z_noise: that of <Z, V>."""
            GZ = G - Z
            val = float(np.sum(GZ**2 * inv4a) + np.sum(Z * V))
            return max(val - float(np.sum((2.0 * np.abs(GZ) + dG) * dG * inv4a)) - z_noise, 0.0)

        def null_gap(Un):
            if Un.shape[1] == 0 or Un.shape[1] == m:
                return np.inf
            Z = Un @ _psd_project(Un.T @ G @ Un)[0] @ Un.T
            Vn = float(np.linalg.norm(Un.T @ V @ Un))
            return gap_of(Z, (dG_norm + m * _EPS * float(np.linalg.norm(G))) * Vn)

        def null_basis(w, U):
            return U[:, w <= m * _EPS * max(float(w.max(initial=0.0)), 0.0)]

        gap = gap_of(np.zeros_like(G), 0.0)
        short = tol is not None and (eig is not None or null is not None)
        if short:
            gap = min(gap, null_gap(null_basis(*eig) if eig is not None else null))
            if gap <= tol * J:
                return gap / J
        gap = min(gap, gap_of(_psd_project(G)[0], 0.0))
        if not (short and eig is not None):  # V's exact null space, unless tried above
            w, U = np.linalg.eigh(_sym(V)) if eig is None else eig
            gap = min(gap, null_gap(null_basis(w, U)))
        return gap / J


def _closed_form_V(coords: _Coords) -> np.ndarray:
    """Eq. (10): the unconstrained optimum (exact for labels; Kronecker surrogate for pairs)."""
    prob, lam = coords.prob, coords.lam
    if prob.separable:
        return coords.b.copy()
    U, mu = prob.U, prob.mu
    Qt = U.T @ (lam * prob.S0 + prob.R) @ U
    St = Qt / (lam + np.outer(mu, mu))
    return coords.to_V(U @ St @ U.T)


def _compress_labels(El: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """An equivalent labels term with at most m rows: ``(L, Yc, shift)``.

    With the thin SVD ``E_l = V diag(s) W^T`` (V: l x r with orthonormal columns, r = rank),
    ``E_l S E_l^T = V (L S L^T) V^T`` for ``L = diag(s) W^T`` (r x m), and for any r x r ``A``

        ||V A V^T - Y Y^T||^2 = ||A - Yc Yc^T||^2 + (||Y Y^T||^2 - ||Yc Yc^T||^2),   Yc = V^T Y,

    (Pythagoras: the part of ``Y Y^T`` outside ``range(V) x range(V)`` is orthogonal to every
    ``V A V^T``). ``L^T L = E_l^T E_l`` and ``L^T Yc = E_l^T Y``, so M, R and J are unchanged,
    while the dual of J (``_Dual``) has r(r + 1) / 2 label entries instead of l(l + 1) / 2 and
    every evaluation of the data term costs O(m^3) instead of O(l^2 m). With l > m the l x l
    dual has l(l + 1) / 2 - r(r + 1) / 2 directions that do not move S; ``L`` has full row rank.
    Used when l > m; the thin SVD costs O(l m^2), as does forming ``E_l^T E_l``.
    """
    V, s, Wt = np.linalg.svd(El, full_matrices=False)
    keep = s > max(El.shape) * _EPS * (s[0] if s.size else 0.0)
    V, s, Wt = V[:, keep], s[keep], Wt[keep]
    Yc = np.ascontiguousarray((Y.T @ V).T)  # V^T Y (r x c), also for a sparse Y
    # ||Y Y^T||^2 = ||Y^T Y||^2 (c x c: diagonal, and sparse, for a sparse one-hot Y) and
    # ||Yc Yc^T||^2 (r x r): no l x l matrix, and no dense c x c one
    YtY = Y.T @ Y
    yy = float(YtY.multiply(YtY).sum()) if hasattr(YtY, "multiply") else float(np.sum(YtY**2))
    shift = yy - float(np.sum((Yc @ Yc.T) ** 2))
    return np.ascontiguousarray(s[:, None] * Wt), Yc, max(shift, 0.0)


def _top_gram_eig(E: np.ndarray) -> float:
    """Largest eigenvalue of E^T E (from the smaller Gram matrix)."""
    G = E @ E.T if E.shape[0] <= E.shape[1] else E.T @ E
    return max(float(np.linalg.eigvalsh(_sym(G))[-1]), 0.0) if G.size else 0.0


def _build_problem(S0, labels, pairs, E_of, label_rows=None, S0_eig=None) -> _Problem:
    """Assemble J from validated side information.

    ``labels`` (``side_info.check_labels``) and ``pairs`` ((k, 3) rows ``[i, j, +-1]``,
    ``side_info.check_pairs``) may each be None; ``E_of(rows)`` returns ``k(X[rows], Z)`` in
    float64; ``label_rows`` keeps only those positions of ``labels.index`` (a CV training
    fold). Pairs between two kept labeled samples must agree with their labels (ValueError
    otherwise) and are dropped: the labels term already holds them. ``S0_eig``: see ``_Problem``.
    """
    El = Y = None
    code_of = None  # class code per sample, -1 outside the labeled block
    if labels is not None:
        rows = np.arange(labels.index.size) if label_rows is None else label_rows
        idx = labels.index[rows]
        El = E_of(idx)
        import scipy.sparse as sp

        # one-hot labels, sparse: with as many classes as samples a dense Y is l x l
        ones = np.ones(idx.size)
        Y = sp.csr_matrix(
            (ones, (np.arange(idx.size), labels.codes[rows])), shape=(idx.size, labels.n_classes)
        )
        n_max = int(max(idx.max(), pairs[:, :2].max() if pairs is not None else 0)) + 1
        code_of = np.full(n_max, -1)
        code_of[idx] = labels.codes[rows]
    if pairs is None:
        return _Problem(S0, El, Y, S0_eig=S0_eig)
    i, j, sign = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    if code_of is not None:
        ci, cj = code_of[i], code_of[j]
        inside = (ci >= 0) & (cj >= 0)
        clash = inside & ((ci == cj) != (sign == 1))
        if clash.any():
            k = int(np.flatnonzero(clash)[0])
            raise ValueError(
                f"pairs[{k}] = {pairs[k].tolist()} contradicts the labels of samples "
                f"{i[k]} and {j[k]}."
            )
        P = pairs[~inside]  # pairs inside the labeled block are already in the loss
    else:
        P = pairs
    if P.shape[0] == 0:
        return _Problem(S0, El, Y, S0_eig=S0_eig)
    pts, inv = np.unique(P[:, :2], return_inverse=True)
    inv = inv.reshape(-1, 2)
    a, b = inv[:, 0], inv[:, 1]
    tgt = (P[:, 2] == 1).astype(float)
    # both orders, plus the diagonal of points outside the labeled block (K*_ii = 1)
    outside = np.ones(pts.size, dtype=bool) if code_of is None else code_of[pts] < 0
    diag = np.flatnonzero(outside)
    aa = np.concatenate([a, b, diag])
    bb = np.concatenate([b, a, diag])
    tt = np.concatenate([tgt, tgt, np.ones(diag.size)])
    Ep = E_of(pts)
    _warn_unmeetable_cannot_links(Ep, a, b, P)
    return _Problem(S0, El, Y, Ep, aa, bb, tt, S0_eig=S0_eig)


def _warn_unmeetable_cannot_links(Ep, a, b, P) -> None:
    """Warn about cannot-link pairs whose samples have identical rows of E: every kernel
    ``E S E^T`` gives them equal rows, so the pair's target 0 (against 1 on the diagonal)
    cannot be met, and the fit settles on a compromise."""
    import warnings

    from .._feature_names import _user_stacklevel

    cannot = np.flatnonzero(P[:, 2] != 1)
    same = cannot[(Ep[a[cannot]] == Ep[b[cannot]]).all(axis=1)]
    if same.size:
        warnings.warn(
            f"{same.size} cannot-link pair(s) join samples with identical kernel rows "
            f"k(x, Z) (e.g. pairs row {P[same[0]].tolist()}): every learned kernel gives them "
            "equal rows, so such a pair cannot be met and pulls the kernel toward a "
            "compromise. Check for duplicate samples, or drop those pairs.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


def _no_descent_step(cap: float) -> ValueError:
    """The error of a first-order solver whose backtracking finds no decreasing step."""
    return ValueError(
        "GeneralizedNystrom: the first-order solver found no step that decreases the objective "
        f"(backtracking raised its Lipschitz estimate past {cap:.3g}, far beyond the "
        "objective's curvature): round-off swamps the decrease, as with data far from the "
        "origin under a linear or polynomial kernel. Centre or rescale X, or use solver='auto' "
        "or 'newton'."
    )


def _in_range(E: np.ndarray) -> np.ndarray:
    """E (float64) if products of two of its entries, summed over its rows, are finite and normal.

    The problem is built from ``E^T E`` over the constrained rows: kernel values beyond the
    square root of float64's range overflow there, and values whose squares fall below the
    smallest normal number lose all precision (or vanish, making the side information look
    orthogonal to the landmarks). Neither has a representable answer, so both are refused.
    """
    E = np.asarray(E, dtype=np.float64)
    top = float(np.abs(E).max()) if E.size else 0.0
    fi = np.finfo(np.float64)
    if top > 0.0 and (top > np.sqrt(fi.max / max(E.size, 1)) or top * top < fi.tiny / fi.eps):
        raise ValueError(
            f"The kernel values between the constrained samples and the landmarks reach max "
            f"|k(x, z)| = {top:.3g}, so their squares (which GeneralizedNystrom needs) "
            f"{'overflow' if top > 1.0 else 'underflow'} float64. Rescale X or the kernel "
            "(gamma, coef0, degree) so that kernel values are of moderate size."
        )
    return E
