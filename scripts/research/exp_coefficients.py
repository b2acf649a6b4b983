"""Recompute the coefficients of the jitted exponential (``_numba/_extrapolate._C``).

The degree-11 polynomial interpolating e^r at the 12 Chebyshev nodes of [-ln2/2, ln2/2],
solved in 40-digit arithmetic and rounded to float64; prints the coefficients and the maximum
relative error of the rounded polynomial over the interval (exact arithmetic).

Run:  python scripts/research/exp_coefficients.py   (needs mpmath)
"""

import mpmath

mpmath.mp.dps = 40
DEGREE = 11
half = mpmath.log(2) / 2
nodes = [half * mpmath.cos(mpmath.pi * (k + mpmath.mpf(1) / 2) / (DEGREE + 1)) for k in range(12)]
V = mpmath.matrix([[x**j for j in range(DEGREE + 1)] for x in nodes])
y = mpmath.matrix([mpmath.exp(x) for x in nodes])
coef = [float(c) for c in mpmath.lu_solve(V, y)]
worst = max(
    abs(sum(mpmath.mpf(c) * r**i for i, c in enumerate(coef)) / mpmath.exp(r) - 1)
    for r in (half * mpmath.mpf(t) / 2000 for t in range(-2000, 2001))
)
print("coefficients:", ", ".join(repr(c) for c in coef))
print("max relative error of the rounded polynomial:", mpmath.nstr(worst, 3))
