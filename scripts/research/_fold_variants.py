import numpy as np


def ridge_losses(KTT, KVT, codes_T, codes_V, n_classes, alpha=0.5):
    if n_classes == 2:
        Ypm = np.where(codes_T == 1, 1.0, -1.0)[:, None]
        Vpm = np.where(codes_V == 1, 1.0, -1.0)[:, None]
    else:
        Ypm = -np.ones((codes_T.size, n_classes))
        Ypm[np.arange(codes_T.size), codes_T] = 1
        Vpm = -np.ones((codes_V.size, n_classes))
        Vpm[np.arange(codes_V.size), codes_V] = 1
    K = KTT + 1.0
    K[np.diag_indices_from(K)] += alpha
    P = (KVT + 1.0) @ np.linalg.solve(K, Ypm)
    sq = np.mean(np.sum((P - Vpm) ** 2, 1))
    sqh = np.mean(np.sum(np.maximum(0, 1 - Vpm * P) ** 2, 1))
    pred = (P[:, 0] > 0).astype(int) if n_classes == 2 else np.argmax(P, 1)
    return sq, sqh, np.mean(pred != codes_V)


def fold_variants(E_T, E_V, codes_T, codes_V, n_classes, S0, S0pinv, lams):
    """V2: m-space projection of the closed form; V3: [B, S0 B] restricted projection."""
    lT, m = E_T.shape
    M = E_T.T @ E_T
    mu, U = np.linalg.eigh(M)
    mu = np.maximum(mu, 0)
    Y = np.zeros((lT, n_classes))
    Y[np.arange(lT), codes_T] = 1.0
    R = (E_T.T @ Y) @ (E_T.T @ Y).T
    S0t = U.T @ S0 @ U
    Rt = U.T @ R @ U
    # restricted basis
    G = E_T @ E_T.T
    w, A = np.linalg.eigh(G)
    keep = w > w.max() * 1e-12
    B = (E_T.T @ A[:, keep]) / np.sqrt(w[keep])
    Vb, sv, _ = np.linalg.svd(np.hstack([B, S0 @ B]), full_matrices=False)
    Vb = Vb[:, sv > sv[0] * 1e-10]
    Cinv = Vb.T @ S0pinv @ Vb
    C = np.linalg.inv(Cinv)
    C = 0.5 * (C + C.T)
    out2 = {k: [] for k in ("sq", "sqh", "err")}
    out3 = {k: [] for k in ("sq", "sqh", "err")}
    K0TT = E_T @ S0 @ E_T.T
    K0VT = E_V @ S0 @ E_T.T
    ETV = E_T @ Vb
    EVV = E_V @ Vb
    for lam in lams:
        if np.isinf(lam):
            r = ridge_losses(K0TT, K0VT, codes_T, codes_V, n_classes)
            for o in (out2, out3):
                for k, v in zip(("sq", "sqh", "err"), r):
                    o[k].append(v)
            continue
        Su = U @ ((lam * S0t + Rt) / (lam + np.outer(mu, mu))) @ U.T
        Su = 0.5 * (Su + Su.T)
        ev, Q = np.linalg.eigh(Su)
        Sp = (Q * np.maximum(ev, 0)) @ Q.T
        r = ridge_losses(E_T @ Sp @ E_T.T, E_V @ Sp @ E_T.T, codes_T, codes_V, n_classes)
        for k, v in zip(("sq", "sqh", "err"), r):
            out2[k].append(v)
        Xu = Vb.T @ (Su - S0) @ Vb
        Yu = Xu + C
        ev, Q = np.linalg.eigh(0.5 * (Yu + Yu.T))
        Yp = (Q * np.maximum(ev, 0)) @ Q.T
        D = Yp - C
        r = ridge_losses(
            K0TT + ETV @ D @ ETV.T, K0VT + EVV @ D @ ETV.T, codes_T, codes_V, n_classes
        )
        for k, v in zip(("sq", "sqh", "err"), r):
            out3[k].append(v)
    res = {}
    for k in out2:
        res["p2" + k] = np.array(out2[k])
        res["p3" + k] = np.array(out3[k])
    return res


def fold_exact_restricted(E_T, E_V, codes_T, codes_V, n_classes, S0, prior, lams_rel, RF):
    import warnings

    from nystrom_priors._generalized.solve import _solve_path

    red = RF(S0, prior, E_T, codes_T, n_classes)
    prob, C, Vb = red
    sc = prob.mu_max**2
    K0TT = E_T @ S0 @ E_T.T
    K0VT = E_V @ S0 @ E_T.T
    FT, FV = E_T @ Vb, E_V @ Vb
    out = {k: np.zeros(len(lams_rel)) for k in ("rxsq", "rxsqh", "rxerr")}
    fin = lams_rel[np.isfinite(lams_rel)]
    order = np.argsort(-fin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sols = {}
        for (lam, Y, *_r), i in zip(
            _solve_path(prob, sc * fin[order], dict(solver="auto", tol=1e-3, max_iter=300)), order
        ):
            sols[i] = Y
    for i, lr in enumerate(lams_rel):
        Y = C if np.isinf(lr) else sols[i]
        D = Y - C
        r = ridge_losses(K0TT + FT @ D @ FT.T, K0VT + FV @ D @ FT.T, codes_T, codes_V, n_classes)
        for k, v in zip(("rxsq", "rxsqh", "rxerr"), r):
            out[k][i] = v
    return out


def fold_pc(E_T, E_V, codes_T, codes_V, n_classes, S0, prior, lams_rel, RF, ks=(0, 2)):
    from nystrom_priors._generalized.apg import _solve
    from nystrom_priors._generalized.problem import _closed_form_V, _Coords
    from nystrom_priors._generalized.psd import _psd_project

    prob, C, Vb = RF(S0, prior, E_T, codes_T, n_classes)
    sc = prob.mu_max**2
    K0TT = E_T @ S0 @ E_T.T
    K0VT = E_V @ S0 @ E_T.T
    FT, FV = E_T @ Vb, E_V @ Vb
    out = {f"pc{k}{c}": np.zeros(len(lams_rel)) for k in ks for c in ("sq", "sqh", "err")}
    for i, lr in enumerate(lams_rel):
        for k in ks:
            if np.isinf(lr):
                Y = C
            else:
                co = _Coords(prob, sc * lr, True)
                V0 = _closed_form_V(co)
                Vk = (
                    _psd_project(V0)[0]
                    if k == 0
                    else _solve(co, V0, accelerate=True, armijo=False, tol=1e-12, max_iter=k)[0]
                )
                Y = co.to_S(Vk)
            D = Y - C
            r = ridge_losses(
                K0TT + FT @ D @ FT.T, K0VT + FV @ D @ FT.T, codes_T, codes_V, n_classes
            )
            for c, v in zip(("sq", "sqh", "err"), r):
                out[f"pc{k}{c}"][i] = v
    return out
