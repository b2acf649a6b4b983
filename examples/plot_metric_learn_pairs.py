"""
Pairs in metric-learn's format
==============================

metric-learn's weakly supervised learners are fitted with point pairs -- an array of shape
``(n_pairs, 2, n_features)`` -- and ``y = +1`` (similar) or ``-1`` (dissimilar) per pair. The
learners of this package take the same call, ``fit(pairs, y)``: the distinct points of the
pairs become the training rows and each pair a must-link or cannot-link constraint. Afterwards
``pair_distance`` gives the distance the learned kernel induces and ``pair_score`` the learned
similarity ``k(a, b)``.

Here the pairs come from the wine data set (same cultivar = similar); the histograms show the
learned distances of held-out similar and dissimilar pairs, and the pairs are classified by
thresholding the distance. metric-learn's ITML, when installed, runs on the same pairs.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import nystrom_priors as npr

X, labels = load_wine(return_X_y=True)
X = StandardScaler().fit_transform(X)
rng = np.random.default_rng(0)
ij = rng.integers(0, X.shape[0], size=(800, 2))
ij = np.unique(np.sort(ij[ij[:, 0] != ij[:, 1]], axis=1), axis=0)  # distinct pairs
ij = ij[rng.permutation(len(ij))]
pairs = X[ij]  # (n_pairs, 2, 13): metric-learn's format
y = np.where(labels[ij[:, 0]] == labels[ij[:, 1]], 1, -1)
train, test = slice(0, 400), slice(400, None)
print(f"{len(y)} pairs, {np.mean(y > 0):.0%} similar; pairs shape {pairs.shape}")

model = npr.LogDetKernelLearner(gamma=1.0, n_landmarks=40, random_state=0)
model.fit(pairs[train], y[train])  # as metric_learn.ITML().fit(pairs, y)
n_rows = np.unique(pairs[train].reshape(-1, X.shape[1]), axis=0).shape[0]
print(f"rank-{model.n_components_} kernel learned on the {n_rows} distinct points of the pairs")


def accuracy(d_train, d_test):
    """Pair classification: similar iff the distance is below the best training threshold."""
    cuts = np.sort(d_train)
    acc = [np.mean((d_train <= c) == (y[train] > 0)) for c in cuts]
    cut = cuts[int(np.argmax(acc))]
    return np.mean((d_test <= cut) == (y[test] > 0))


results = {
    "Euclidean": (
        np.linalg.norm(pairs[train, 0] - pairs[train, 1], axis=1),
        np.linalg.norm(pairs[test, 0] - pairs[test, 1], axis=1),
    ),
    "LogDetKernelLearner": (model.pair_distance(pairs[train]), model.pair_distance(pairs[test])),
}

try:  # metric-learn is optional: compare when it is installed
    import metric_learn
    import metric_learn._util as ml_util
    import sklearn.utils.validation as skv

    def _renamed(fun):  # metric-learn 0.7.0 passes force_all_finite (scikit-learn < 1.6)
        def call(*args, **kwargs):
            if "force_all_finite" in kwargs:
                kwargs["ensure_all_finite"] = kwargs.pop("force_all_finite")
            return fun(*args, **kwargs)

        return call

    ml_util.check_array = _renamed(skv.check_array)
    ml_util.check_X_y = _renamed(skv.check_X_y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        itml = metric_learn.ITML(random_state=0).fit(pairs[train], y[train])
    results["metric-learn ITML"] = (
        itml.pair_distance(pairs[train]),
        itml.pair_distance(pairs[test]),
    )
except ImportError:
    print("metric-learn is not installed: no ITML comparison")

for name, (d_train, d_test) in results.items():
    print(f"{name:>20}: held-out pair accuracy {accuracy(d_train, d_test):.3f}")

# %%
# Learned distances of the held-out pairs: similar pairs move close, dissimilar ones apart.
fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results), 3))
for ax, (name, (_, d_test)) in zip(axes, results.items()):
    bins = np.linspace(0, np.percentile(d_test, 99), 30)
    ax.hist(d_test[y[test] > 0], bins=bins, alpha=0.6, label="similar")
    ax.hist(d_test[y[test] < 0], bins=bins, alpha=0.6, label="dissimilar")
    ax.set_title(name)
    ax.set_xlabel("pair_distance")
axes[0].legend()
fig.tight_layout()
plt.show()
