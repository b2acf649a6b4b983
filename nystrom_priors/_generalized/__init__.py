"""Internals of :class:`nystrom_priors.GeneralizedNystrom` (Zhang et al. 2012), one concern each.

psd               PSD projection (full, or from the negative eigenpairs only) and factors
problem           J in m x m form (labels, sparse pairs mask), working coordinates, certificate
apg               accelerated projected gradient and the paper's gradient mapping
ipm               log-barrier interior-point method (labels only)
dual_newton       semismooth Newton-CG on the dual
solve             one lam: solver choice, continuation, fallbacks; the warm-started lam path
lambda_selection  eq. (12) and the cross-validated default

numpy and scipy only; nothing here imports numba at module level.
"""
