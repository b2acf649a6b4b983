"""
Quickstart: a kernel learned from 100 labels
============================================

Digits (scikit-learn's bundled 1,797 8x8 images), 100 of them labelled: a linear SVM on the
factor rows of the learned kernel against plain Nystrom features with the same landmarks.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.svm import LinearSVC

import nystrom_priors as npr

X, y = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)
labelled = rng.choice(len(X), 100, replace=False)
y_partial = np.full(len(X), -1)
y_partial[labelled] = y[labelled]
unlabelled = np.setdiff1d(np.arange(len(X)), labelled)

gn = npr.GeneralizedNystrom(n_landmarks=180, random_state=1).fit(X, y_partial)
ny = npr.Nystrom(n_landmarks=180, random_state=1).fit(X)
for name, model in (("learned", gn), ("Nystrom", ny)):
    G = model.transform(X)
    clf = LinearSVC().fit(G[labelled], y[labelled])
    print(
        f"{name:8s} error on the unlabelled digits: "
        f"{np.mean(clf.predict(G[unlabelled]) != y[unlabelled]):.3f}"
    )
print(
    "chosen lam:",
    "the prior" if np.isinf(gn.lam_) else f"mu_max^2 * 10^{np.log10(gn.lam_ / gn.lam_scale_):.0f}",
)

# %%
# The cross-validated path: held-out loss per candidate lam, the prior last.
finite = np.isfinite(gn.lam_path_)
plt.plot(np.log10(gn.lam_path_[finite] / gn.lam_scale_), gn.criterion_path_[finite], "o-")
plt.axhline(gn.criterion_path_[-1], ls=":", label="prior (plain Nystrom)")
plt.xlabel("log10(lam / mu_max^2)")
plt.ylabel("held-out squared hinge loss")
plt.legend()
plt.show()
