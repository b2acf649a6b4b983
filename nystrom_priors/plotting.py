"""Figures for fitted learners (matplotlib, an optional dependency imported on first use).

* :func:`plot_lambda_path` — the lambda-selection criterion of a :class:`GeneralizedNystrom`
  along its lambda path, with an optional error curve (Zhang et al. 2012, Figure 1);
* :func:`plot_spectrum` — eigenvalues of the prior kernel and of the learned kernel on a
  sample (how learning reshapes the spectrum while keeping the rank);
* :func:`plot_kernel_heatmap` — the learned kernel ``G G^T`` on a sample ordered by class
  (block structure = the side information was learned).

Every function draws into ``ax`` (a new figure when None) and returns the axes, so figures can
be composed and saved with ``ax.figure.savefig(...)``. Nothing here selects a backend: scripts
without a display should call ``matplotlib.use("Agg")`` first (the reproduce scripts do).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._fit_lock import fit_lock
from ._products import finite_products

__all__ = ["plot_lambda_path", "plot_spectrum", "plot_kernel_heatmap"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "nystrom_priors.plotting needs matplotlib: pip install 'nystrom_priors[plot]'."
        ) from exc
    return plt


def _axes(ax: Any) -> Any:
    if ax is not None:
        if not hasattr(ax, "plot"):
            raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}.")
        return ax
    _, ax = _pyplot().subplots(figsize=(5.0, 3.6))
    return ax


def plot_lambda_path(
    model: Any,
    *,
    errors: Any = None,
    error_label: str = "test error",
    ax: Any = None,
) -> Any:
    """Criterion along the lambda path of a fitted :class:`GeneralizedNystrom`.

    The x axis is ``log10(lam / mu_max^2)`` — the grid the learner searched, relative to its
    scale (Zhang et al. 2012, Fig. 1). ``lam="auto"`` plots the mean cross-validated error of
    the kernel ridge classifier (lower is better); ``lam="nka"`` plots the eq.-12 product of
    alignments (higher is better). The chosen ``lam_`` is marked.

    Parameters
    ----------
    model : fitted GeneralizedNystrom with a searched path (``lam="auto"`` or ``"nka"``)
    errors : array-like of shape (n_lams,), optional
        An error measured for each lambda of ``model.lam_path_`` (e.g. a held-out error from
        refits), a fraction drawn as a percentage on a second y axis; finite.
    error_label : str
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes (the criterion's; the error axis is ``ax.right_ax`` when drawn)

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from nystrom_priors import GeneralizedNystrom
    >>> from nystrom_priors.plotting import plot_lambda_path
    >>> X = np.random.default_rng(0).normal(size=(80, 3))
    >>> y = np.where(np.arange(80) < 30, (X[:, 0] > 0).astype(int), -1)
    >>> gn = GeneralizedNystrom(n_landmarks=12, lam="nka", random_state=0).fit(X, y)
    >>> len(plot_lambda_path(gn).lines[0].get_xdata()) == gn.lam_path_.size
    True
    """
    from ._validation import check_is_fitted

    with fit_lock(model):  # one fit's path, criterion and lam, never two fits' mixed
        check_is_fitted(model)
        lams = np.asarray(getattr(model, "lam_path_", np.array([])), dtype=np.float64)
        crit_all = np.asarray(getattr(model, "criterion_path_", lams), dtype=np.float64)
        scale = float(getattr(model, "lam_scale_", 1.0))
        lam, lam_param = getattr(model, "lam_", np.inf), getattr(model, "lam", None)
        classes = getattr(model, "classes_", [])
    if lams.size == 0:
        raise ValueError(
            "plot_lambda_path needs a searched lambda path; this model has none: fit a "
            "GeneralizedNystrom with lam='auto' or lam='nka' on side information it can score "
            "(labels of two classes or more, or pairs); a fixed lam searches nothing."
        )
    finite = np.isfinite(lams)  # lam="auto" on labels ends with lam = inf, the prior
    crit = crit_all[finite]
    x = np.log10(lams[finite] / scale)
    ax = _axes(ax)
    is_cv = lam_param == "auto"
    pairs_only = np.size(classes) == 0  # no labels: scored on pairs
    if not is_cv:
        label, ylabel = "eq. 12 criterion (NKA)", "alignment criterion"
    elif pairs_only:
        label, ylabel = "CV squared cosine error on held-out pairs", "held-out loss per pair"
    else:
        label, ylabel = "CV margin ramp loss on the labeled samples", "held-out loss per sample"
    ax.plot(x, crit, "o-", color="C0", label=label)
    if not finite.all():
        ax.axhline(float(crit_all[~finite][0]), color="C0", ls=":", label="prior (lam = inf)")
    ax.set_ylabel(ylabel)
    if np.isfinite(lam):
        ax.axvline(np.log10(lam / scale), color="C3", ls="--", label=f"chosen lam={lam:.3g}")
    ax.set_xlabel("log10(lam / mu_max^2)")
    handles, labels = ax.get_legend_handles_labels()
    if errors is not None:
        try:
            err = np.asarray(errors, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"errors must be numbers, one per lambda of lam_path_; could not read them: {exc}"
            ) from None
        if err.shape == lams.shape:
            err = err[finite]
        if err.shape != x.shape:
            raise ValueError(
                f"errors must have shape {x.shape} (one per finite lambda) or {lams.shape}, got "
                f"{err.shape}."
            )
        with np.errstate(over="ignore", invalid="ignore"):
            pct = err * 100.0
        bad = np.flatnonzero(~np.isfinite(pct))
        if bad.size:  # NaN, inf, or a fraction too large to draw as a percentage
            raise ValueError(
                f"errors must be finite fractions, drawn as percentages; errors[{bad[0]}] = "
                f"{err[bad[0]]!r}."
            )
        right = ax.twinx()
        right.plot(x, pct, "s-", color="C1", label=error_label)
        right.set_ylabel(f"{error_label} (%)")
        h2, l2 = right.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
        ax.right_ax = right
    ax.legend(handles, labels, fontsize=8)
    ax.set_title("GeneralizedNystrom lambda path")
    return ax


def _prior_rows(model: Any, X: np.ndarray) -> np.ndarray | None:
    """Factor rows of the prior kernel, or None when the learner has no factored prior."""
    if hasattr(model, "P0_"):  # Bregman learners: G0 = F(X) P0
        P0 = model.P0_
    elif hasattr(model, "S0_"):  # Nystrom family: S0 = W^+, any square root of it
        w, V = np.linalg.eigh(model.S0_)
        P0 = V * np.sqrt(np.maximum(w, 0.0))
    else:
        return None
    F = model._features_block(X).astype(np.float64)
    return F @ P0


def _spectrum(G: np.ndarray, owner: str, kernel: str) -> np.ndarray:
    """Eigenvalues of ``G G^T``, descending, refused where they leave float64 (as the
    model's ``kernel`` refuses that kernel: an inf eigenvalue would draw nothing true)."""
    G = np.asarray(G, dtype=np.float64)
    finite = np.isfinite(G).all()
    if finite:
        with np.errstate(over="ignore"):
            ev = np.linalg.svd(G, compute_uv=False) ** 2
        finite = np.isfinite(ev).all()
    if not finite:
        raise ValueError(
            f"the {kernel} kernel of this {owner} overflows float64 on these samples: its "
            f"factor rows reach {float(np.abs(G).max(initial=0.0)):.3g}. Rescale X."
        )
    return ev


def _checked_rows(model: Any, X: Any) -> np.ndarray:
    """X validated by ``model``, which must be a fitted learner of this package."""
    from ._base import FactorTransformMixin

    if not isinstance(model, FactorTransformMixin):
        raise TypeError(
            f"model must be a fitted learner of nystrom_priors (Nystrom, GeneralizedNystrom, "
            f"LogDetKernelLearner, VonNeumannKernelLearner, BCDNPKL), got "
            f"{type(model).__name__}."
        )
    return model._check_X(X)  # NotFittedError first; column names checked here, once


def _factor_rows(model: Any, X: np.ndarray) -> np.ndarray:
    """``model.transform`` of rows already validated by :func:`_checked_rows`, as float64.

    The column names were checked on the user's X: checking them again on the validated
    ndarray would warn "X does not have valid feature names" for the very frame the model was
    fitted on. ``_transform_array`` also ignores ``set_output`` (the figures need numbers).
    """
    return np.asarray(model._transform_array(X, names=False), dtype=np.float64)


def plot_spectrum(model: Any, X: Any, *, n_eigenvalues: int | None = None, ax: Any = None) -> Any:
    """Eigenvalues of the prior and of the learned kernel on the samples ``X``.

    The learned kernel ``K = G G^T`` has the eigenvalues ``sigma_i(G)^2``; the prior is the
    Nystrom kernel ``E W^+ E^T`` (GeneralizedNystrom) or the initial kernel ``G0 G0^T`` (LogDet /
    von Neumann). Both are drawn on a log scale against the eigenvalue index.

    Parameters
    ----------
    model : fitted learner of this package
    X : array-like of shape (n, d)
        Samples to evaluate the kernels on (e.g. the training set, or a sample of it).
    n_eigenvalues : int, optional
        Show only the leading ones.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from nystrom_priors import GeneralizedNystrom
    >>> from nystrom_priors.plotting import plot_spectrum
    >>> X = np.random.default_rng(0).normal(size=(80, 3))
    >>> y = np.where(np.arange(80) < 20, np.arange(80) % 2, -1)
    >>> gn = GeneralizedNystrom(n_landmarks=12, lam=1e-3, random_state=0).fit(X, y)
    >>> [line.get_label() for line in plot_spectrum(gn, X).lines]
    ['prior', 'learned (GeneralizedNystrom)']
    """
    from ._validation import check_scalar

    if n_eigenvalues is not None:
        n_eigenvalues = int(check_scalar(n_eigenvalues, "n_eigenvalues", kind="int", lo=1))
    owner = type(model).__name__
    with fit_lock(model):  # the model before or after a fit in another thread, never between
        X = _checked_rows(model, X)
        learned = _spectrum(_factor_rows(model, X), owner, "learned")
        prior_rows = _prior_rows(model, X)
        prior = None if prior_rows is None else _spectrum(prior_rows, owner, "prior")
    k = learned.size if n_eigenvalues is None else n_eigenvalues
    ax = _axes(ax)
    floor = np.finfo(np.float64).tiny
    if prior is not None:
        ax.semilogy(
            np.arange(1, min(k, prior.size) + 1),
            np.maximum(prior[:k], floor),
            "o-",
            color="C7",
            ms=3,
            label="prior",
        )
    ax.semilogy(
        np.arange(1, min(k, learned.size) + 1),
        np.maximum(learned[:k], floor),
        "o-",
        color="C0",
        ms=3,
        label=f"learned ({type(model).__name__})",
    )
    ax.set_xlabel("index")
    ax.set_ylabel("eigenvalue of the kernel on X")
    ax.set_title("Kernel spectrum")
    ax.legend(fontsize=8)
    return ax


def _label_groups(y: Any, n_samples: int) -> tuple[np.ndarray, list[str]]:
    """Group of every sample and the groups' names: the classes, sorted, then "unlabeled".

    ``y`` is read by the learners' own :func:`~nystrom_priors._labels.check_labels`, so a
    figure groups exactly as ``fit`` does: -1, None, NaN and ``pd.NA`` all mark the one
    unlabeled group (compared value by value, NaN != NaN made each NaN a class of its own),
    and labels ``fit`` refuses (the string '-1', continuous values) are refused here too.
    """
    from ._labels import _as_label_array, all_unlabeled, check_labels

    if y is None:
        raise ValueError(f"y is required: one label per row of X ({n_samples},), got None.")
    arr = _as_label_array(y)
    if arr.shape != (n_samples,):
        raise ValueError(f"y must have shape ({n_samples},) like X's rows, got {arr.shape}.")
    if all_unlabeled(arr, n_samples):  # fit may refuse it; a figure can still show X
        return np.zeros(n_samples, dtype=np.int64), ["unlabeled"]
    try:
        labels = check_labels(arr, n_samples)
    except TypeError as exc:
        raise TypeError(
            f"y must hold labels of one sortable type (all numbers or all strings; -1, None "
            f"or NaN for unlabeled samples): {exc}"
        ) from None
    groups = np.full(n_samples, labels.n_classes, dtype=np.int64)
    groups[labels.index] = labels.codes
    names = [str(c) for c in labels.classes]
    if labels.index.size < n_samples:
        names.append("unlabeled")
    return groups, names


def _stratum_sizes(counts: np.ndarray, cap: int) -> np.ndarray:
    """How many of each group's ``counts`` samples a subsample of ``cap < counts.sum()`` keeps.

    Proportional (largest remainders), with at least one sample per group when ``cap`` allows:
    a uniform draw loses a small class, whose block is what the figure is for.
    """
    if cap < counts.size:  # not every group fits: one sample from each of the largest
        take = np.zeros(counts.size, dtype=np.int64)
        take[np.argsort(-counts, kind="stable")[:cap]] = 1
        return take
    quota = cap * counts / counts.sum()
    take = np.minimum(counts, np.maximum(1, np.floor(quota))).astype(np.int64)
    while take.sum() > cap:  # the minimum of one overshot: trim the groups most above quota
        take[np.argmax(np.where(take > 1, take - quota, -np.inf))] -= 1
    while take.sum() < cap:  # the floors undershot: the largest remainders get one more
        take[np.argmax(np.where(take < counts, quota - take, -np.inf))] += 1
    return take


def _stratified_rows(groups: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted row indices of a stratified subsample of at most ``cap`` rows (all if fewer)."""
    if groups.size <= cap:
        return np.arange(groups.size)
    present, counts = np.unique(groups, return_counts=True)
    picked = [
        rng.choice(np.flatnonzero(groups == g), k, replace=False)
        for g, k in zip(present, _stratum_sizes(counts, cap))
        if k
    ]
    return np.sort(np.concatenate(picked))


def plot_kernel_heatmap(
    model: Any,
    X: Any,
    y: Any,
    *,
    max_samples: int = 400,
    random_state: Any = 0,
    ax: Any = None,
) -> Any:
    """The learned kernel on ``X`` as an image, samples grouped by class.

    Parameters
    ----------
    model : fitted learner of this package
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Class labels used for the ordering (not for the kernel), read as the learners'
        ``fit`` reads them: -1, None, NaN or ``pd.NA`` mark unlabeled samples, drawn as one
        group ("unlabeled") after the classes.
    max_samples : int, default=400
        A stratified subsample keeps the image readable and the n x n kernel small: every
        group keeps its share of the samples and at least one (when ``max_samples`` is at
        least the number of groups).
    random_state : None, int or Generator
        Draws the subsample.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes (its image is ``ax.images[0]``; white lines separate the classes)

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from nystrom_priors import Nystrom
    >>> from nystrom_priors.plotting import plot_kernel_heatmap
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> y = np.arange(60) % 3
    >>> ax = plot_kernel_heatmap(Nystrom(n_landmarks=10, random_state=0).fit(X), X, y)
    >>> ax.images[0].get_array().shape
    (60, 60)
    """
    from ._validation import check_random_state, check_scalar

    cap = int(check_scalar(max_samples, "max_samples", kind="int", lo=2))
    with fit_lock(model):  # the model before or after a fit in another thread, never between
        X = _checked_rows(model, X)
        groups, names = _label_groups(y, X.shape[0])
        keep = _stratified_rows(groups, cap, check_random_state(random_state))
        order = keep[np.argsort(groups[keep], kind="stable")]
        G = _factor_rows(model, X[order])
    K = finite_products(G, G, type(model).__name__)
    ax = _axes(ax)
    image = ax.imshow(K, cmap="viridis", interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    gs = groups[order]
    edges = np.flatnonzero(gs[1:] != gs[:-1]) + 0.5
    for e in edges:
        ax.axhline(e, color="white", lw=0.8)
        ax.axvline(e, color="white", lw=0.8)
    centers = np.concatenate([[-0.5], edges, [gs.size - 0.5]])
    mids = (centers[:-1] + centers[1:]) / 2
    shown = [names[g] for g in gs[np.concatenate([[0], (edges + 0.5).astype(int)])]]
    ax.set_xticks(mids)
    ax.set_xticklabels(shown, fontsize=7)
    ax.set_yticks(mids)
    ax.set_yticklabels(shown, fontsize=7)
    ax.set_title(f"Learned kernel ({type(model).__name__}), by class")
    return ax
