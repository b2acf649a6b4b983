"""Shared oracles of the Bregman learners' tests: constructed feasible problems and dense
n x n implementations of the Burg and von Neumann projections."""

import math

import numpy as np
from scipy.optimize import brentq


def feasible_problem(rng, n=40, d=5, k=30, margin=0.2, deficient=False):
    """Pairs with bounds satisfied strictly by a hidden Mahalanobis matrix A*."""
    X = rng.normal(size=(n, d))
    if deficient:
        X[:, -1] = X[:, 0] - X[:, 1]  # rank d - 1
    L = rng.normal(size=(d, d))
    A = L @ L.T + 0.1 * np.eye(d)
    a, b = np.triu_indices(n, 1)
    pick = rng.choice(a.size, size=k, replace=False)  # distinct pairs
    ij = np.column_stack([a[pick], b[pick]])
    sign = rng.choice([-1, 1], size=k)
    diff = X[ij[:, 0]] - X[ij[:, 1]]
    dstar = np.einsum("ij,jk,ik->i", diff, A, diff)
    bounds = np.where(sign > 0, (1 + margin) * dstar, (1 - margin) * dstar)
    pairs = np.column_stack([ij, sign])
    return X, pairs, bounds


def sqdist(G, pairs):
    v = G[pairs[:, 0]] - G[pairs[:, 1]]
    return (v * v).sum(axis=1)


def rel_violation(G, pairs, bounds):
    d = sqdist(G, pairs)
    return np.max(np.maximum(0.0, pairs[:, 2] * (d - bounds)) / bounds)


def dense_burg(K, pairs, bounds, gamma, n_sweeps, sim_pairs=None, sim_bounds=None):
    """Dense n x n reference of the same cyclic projections (distance, then similarity)."""
    K = K.copy()
    nd = pairs.shape[0]
    sim_pairs = np.zeros((0, 3), int) if sim_pairs is None else sim_pairs
    lam = np.zeros(nd + sim_pairs.shape[0])
    bhat = np.asarray(bounds, float).copy()
    gp = 1.0 if math.isinf(gamma) else gamma / (gamma + 1.0)
    for _ in range(n_sweeps):
        for c in range(nd):
            i, j, s = pairs[c]
            z = np.zeros(K.shape[0])
            z[i], z[j] = 1.0, -1.0
            Kz = K @ z
            p = z @ Kz
            alpha = min(lam[c], gp * s * (1 / p - 1 / bhat[c]))
            lam[c] -= alpha
            beta = s * alpha / (1 - s * alpha * p)
            if not math.isinf(gamma):
                bhat[c] = 1 / (1 / bhat[c] + s * alpha / gamma)
            K = K + beta * np.outer(Kz, Kz)
        for t in range(sim_pairs.shape[0]):
            c = nd + t
            i, j, s = sim_pairs[t]
            delta = -s
            K, lam[c] = _dense_similarity(K, i, j, sim_bounds[t], delta, lam[c])
    return K, lam


def _dense_similarity(K, i, j, b, delta, lam):
    """Burg projection onto K_ij = b (then the dual clip), dense, by a scalar root-finder."""
    n = K.shape[0]
    if i == j:
        p = K[i, i]
        rho = 1 / p - 1 / b
        alpha = min(lam, delta * rho)
        rho = delta * alpha
        z = np.zeros(n)
        z[i] = 1
        Kz = K @ z
        return K + (rho / (1 - rho * p)) * np.outer(Kz, Kz), lam - alpha
    U = np.zeros((n, 2))
    U[i, 0] = U[j, 1] = 1.0

    def updated(rho):
        if rho == 0:
            return K
        Dinv = (2.0 / rho) * np.array([[0.0, 1.0], [1.0, 0.0]])
        KU = K @ U
        return K + KU @ np.linalg.solve(Dinv - U.T @ KU, KU.T)

    p, q, s0 = K[i, i], K[j, j], K[i, j]
    h = math.sqrt(p * q)
    hi = 2.0 / (s0 + h) * (1 - 1e-12)  # I - rho Asym stays PD inside (lo, hi)
    lo = 2.0 / (s0 - h) * (1 - 1e-12) if s0 - h < 0 else -1e12
    rho_star = brentq(lambda r: updated(r)[i, j] - b, lo, hi, xtol=1e-300, rtol=1e-15)
    alpha = min(lam, delta * rho_star)
    return updated(delta * alpha), lam - alpha


def _sym_fun(C, fun):
    w, V = np.linalg.eigh(0.5 * (C + C.T))
    return (V * fun(w)) @ V.T


def dense_von_neumann(K, pairs, bounds, n_sweeps):
    """Dense reference: log K <- log K + rho z z^T on range(K), rho by brentq."""
    w, V = np.linalg.eigh(K)
    keep = w > 1e-10 * w.max()
    V, C = V[:, keep], np.diag(w[keep])
    lam = np.zeros(pairs.shape[0])
    for _ in range(n_sweeps):
        for c in range(pairs.shape[0]):
            i, j, s = pairs[c]
            vz = V[i] - V[j]
            logC = _sym_fun(C, np.log)

            def f(rho):
                return vz @ _sym_fun(logC + rho * np.outer(vz, vz), np.exp) @ vz

            b = bounds[c]
            p = f(0.0)
            lo, hi = -1.0, 1.0
            while f(lo) > b:
                lo *= 2
            while f(hi) < b:
                hi *= 2
            rho_star = brentq(lambda r: math.log(f(r) / b), lo, hi, xtol=1e-300, rtol=1e-15)
            alpha = min(lam[c], s * rho_star)
            lam[c] -= alpha
            if alpha != 0.0 and p > 0:
                C = _sym_fun(logC + s * alpha * np.outer(vz, vz), np.exp)
    return V @ C @ V.T, lam
