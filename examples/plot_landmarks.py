"""
Landmark methods compared
=========================

How well ``E W⁺ Eᵀ`` approximates the full Gaussian kernel, by landmark rule and number of
landmarks, on scikit-learn's digits: the trace-norm error ``‖K − G Gᵀ‖_*`` (``K − GGᵀ`` is PSD,
so it is the trace of the difference) relative to ``tr K``, and the time to choose the landmarks.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nystrom_priors as npr

X, _ = load_digits(return_X_y=True)
X = X / 16.0
width = npr.mean_squared_distance(X)
trace = float(X.shape[0])  # k(x, x) = 1 for the Gaussian kernel
methods = ["uniform", "kmeans++", "kmeans"]
sizes = [25, 50, 100, 200]
errors = {m: [] for m in methods}
for method in methods:
    for m in sizes:
        t = time.perf_counter()
        Z = npr.select_landmarks(X, m, method=method, random_state=0)
        took = time.perf_counter() - t
        G = npr.Nystrom(n_landmarks=m, landmarks=Z, width=width).fit(X).transform(X)
        errors[method].append((trace - float(np.einsum("ij,ij->", G, G))) / trace)
        print(
            f"{method:9s} m = {m:3d}: relative trace error {errors[method][-1]:.3f}, "
            f"{1e3 * took:.1f} ms"
        )

for method in methods:
    plt.plot(sizes, errors[method], "o-", label=method)
plt.xlabel("landmarks m")
plt.ylabel("relative trace error")
plt.yscale("log")
plt.legend()
plt.show()
