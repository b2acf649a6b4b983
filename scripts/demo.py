"""Demo: what a learned kernel buys with 100 labels, on scikit-learn's bundled digits.

Semi-supervised setting: 1,797 handwritten digits, 100 of them labelled at random, the rest
unlabelled. Four ways to classify the unlabelled digits, side by side (test error on the
unlabelled rows, mean and standard deviation over five random draws of the labels, and the
median wall time):

* LinearSVC on ``GeneralizedNystrom`` features: the kernel learned from the 100 labels
  (the default: cross-validated lam, the one-step model), inductive;
* LinearSVC on plain ``Nystrom`` features (the same landmarks and width, no labels);
* scikit-learn's ``LabelSpreading(kernel="knn")`` (transductive graph propagation);
* an RBF ``SVC`` trained on the 100 labelled rows alone.

It saves a figure with the learned and the Nystrom kernels (first draw) on a sample ordered by
class, and the four mean errors.

Run:  python scripts/demo.py [--out FIGURE.png] [--seed 0]
      python -m nystrom_priors demo
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import count, new_file  # noqa: E402


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def figure_file(path: str) -> str:
    """An argparse ``type``: ``new_file`` whose extension (if any) matplotlib can write, so
    that a bad name fails before the draws, not after them."""
    path = new_file(path)
    ext = os.path.splitext(path)[1][1:].lower()
    if ext:
        try:
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError:  # no figure is drawn then (the run says so): nothing to check
            return path

        formats = FigureCanvasBase.get_supported_filetypes()
        if ext not in formats:
            raise argparse.ArgumentTypeError(
                f"{path!r}: matplotlib cannot write .{ext} figures; use one of "
                + ", ".join(f".{f}" for f in sorted(formats))
            )
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=figure_file, default="nystrom_priors_demo.png", help="the figure (PNG)"
    )
    parser.add_argument("--seed", type=count(0), default=0, help="seed of the first draw")
    parser.add_argument("--labels", type=count(10), default=100, help="labelled digits (>= 10)")
    parser.add_argument(
        "--draws", type=count(1), default=5, help="random draws of the labelled digits"
    )
    # the 13 x 4 inch figure: 1200 dpi is 75 megapixels (300 MB of RGBA), print quality is 300-600
    parser.add_argument("--dpi", type=count(1, 1200), default=90, help="figure resolution (1-1200)")
    args = parser.parse_args(argv)
    if not os.path.splitext(args.out)[1]:  # matplotlib would add it, and the path printed not
        args.out += ".png"
    try:
        from sklearn.datasets import load_digits
        from sklearn.semi_supervised import LabelSpreading
        from sklearn.svm import SVC, LinearSVC
    except ImportError:  # pragma: no cover
        raise SystemExit(
            "The demo needs scikit-learn: pip install 'nystrom_priors[demo]'"
        ) from None

    import nystrom_priors as npr

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    n = X.shape[0]
    if args.labels >= n:  # one digit at least stays unlabelled (checked before any fit)
        parser.error(f"argument --labels: at most {n - 1} of the {n} digits, got {args.labels}")
    m = n // 10
    # compile the jitted kernels outside the timings (cached on disk after the first run)
    npr.GeneralizedNystrom(n_landmarks=20, random_state=0).fit(
        X[:300], np.where(np.arange(300) < 60, y[:300], -1)
    )
    names = [
        "LinearSVC on GeneralizedNystrom features",
        "LinearSVC on Nystrom features",
        "LabelSpreading (knn)",
        f"RBF SVC on the {args.labels} labelled rows",
    ]
    errors, times, lams = [], [], []
    for draw in range(args.draws):
        rng = np.random.default_rng(args.seed + draw)
        lab = np.sort(rng.choice(n, args.labels, replace=False))
        unl = np.setdiff1d(np.arange(n), lab)
        y_partial = np.full(n, -1)
        y_partial[lab] = y[lab]

        def linear_svm_error(G):
            clf = LinearSVC(random_state=0).fit(G[lab], y[lab])
            return float(np.mean(clf.predict(G[unl]) != y[unl]))

        seed = args.seed + draw
        gn, t_gn = _timed(
            lambda: npr.GeneralizedNystrom(n_landmarks=m, random_state=seed).fit(X, y_partial)
        )
        G, t_tr = _timed(lambda: gn.transform(X))
        ny, t_ny = _timed(lambda: npr.Nystrom(n_landmarks=m, random_state=seed).fit(X))
        G0, t_tr0 = _timed(lambda: ny.transform(X))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # LabelSpreading's convergence chatter
            ls, t_ls = _timed(lambda: LabelSpreading(kernel="knn").fit(X, y_partial))
        svc, t_svc = _timed(lambda: SVC(gamma=1.0 / gn.width_).fit(X[lab], y[lab]))
        errors.append(
            [
                linear_svm_error(G),
                linear_svm_error(G0),
                float(np.mean(ls.transduction_[unl] != y[unl])),
                float(np.mean(svc.predict(X[unl]) != y[unl])),
            ]
        )
        times.append([t_gn + t_tr, t_ny + t_tr0, t_ls, t_svc])
        lams.append(
            "prior" if not np.isfinite(gn.lam_) else f"{np.log10(gn.lam_ / gn.lam_scale_):.0f}"
        )
        if draw == 0:
            first = (gn, ny)
    errors, times = 100 * np.array(errors), np.array(times)
    print(
        f"digits: {n} samples x {X.shape[1]} features, 10 classes, {args.labels} labelled at "
        f"random ({args.draws} draws), m = {m} landmarks"
    )
    print(
        f"GeneralizedNystrom's cross-validated lam per draw, log10(lam / mu_max^2): {', '.join(lams)}"
    )
    print(f"{'method':<45s} {'error on unlabelled (%)':>24s} {'time (s)':>9s}")
    for k, name in enumerate(names):
        print(
            f"{name:<45s} {errors[:, k].mean():15.2f} +- {errors[:, k].std():5.2f} "
            f"{np.median(times[:, k]):9.3f}"
        )
    rows = [(name, errors[:, k].mean() / 100, 0.0) for k, name in enumerate(names)]
    _figure(args.out, X, y, *first, rows, args.dpi)
    return 0


def _figure(path, X, y, gn, ny, rows, dpi=90) -> None:
    try:
        import matplotlib
    except ImportError:
        print(f"matplotlib is not installed: no figure ({path} not written)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(1)
    sample = np.sort(rng.choice(X.shape[0], 200, replace=False))
    order = sample[np.argsort(y[sample], kind="stable")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, model, title in ((axes[0], ny, "Nystrom kernel"), (axes[1], gn, "learned kernel")):
        G = model.transform(X[order])
        ax.imshow(G @ G.T, cmap="viridis")
        ax.set_title(f"{title} (200 digits by class)")
        ax.set_xticks([])
        ax.set_yticks([])
    names = ["GN features", "Nystrom features", "LabelSpreading", "SVC on labels"]
    axes[2].barh(names[::-1], [100 * r[1] for r in rows][::-1], color=["C3", "C2", "C1", "C0"])
    axes[2].set_xlabel("error on the unlabelled digits (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    print(f"figure: {os.path.abspath(path)}")


if __name__ == "__main__":
    raise SystemExit(main())
