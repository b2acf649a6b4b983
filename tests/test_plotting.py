"""nystrom_priors.plotting: figures drawn headless (Agg) hold the right data and save as PNG."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from conftest import blobs  # noqa: E402

from nystrom_priors import (  # noqa: E402
    BCDNPKL,
    GeneralizedNystrom,
    LogDetKernelLearner,
    NotFittedError,
    Nystrom,
    VonNeumannKernelLearner,
    labels_to_pairs,
)
from nystrom_priors.plotting import (  # noqa: E402
    plot_kernel_heatmap,
    plot_lambda_path,
    plot_spectrum,
)


@pytest.fixture(scope="module")
def data():
    return blobs(50)


@pytest.fixture(autouse=True)
def _close_figures():
    """Every call draws a new figure; pyplot keeps them and warns past 20 (an error here)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _png_ok(ax, path):
    ax.figure.savefig(path, dpi=60)
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) > 2000
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


@pytest.mark.parametrize("lam", ["auto", "nka"])
def test_lambda_path_draws_the_criterion_and_errors(tmp_path, data, lam):
    X, _, y_partial = data
    gn = GeneralizedNystrom(n_landmarks=20, lam=lam, random_state=0).fit(X, y_partial)
    finite = np.isfinite(gn.lam_path_)
    assert finite.sum() == 6 and (lam == "nka" or not finite[-1])  # "auto": the prior last
    errors = np.linspace(0.3, 0.1, gn.lam_path_.size)
    ax = plot_lambda_path(gn, errors=errors)
    x = np.log10(gn.lam_path_[finite] / gn.lam_scale_)
    crit_line = ax.lines[0]
    np.testing.assert_allclose(crit_line.get_xdata(), x)
    np.testing.assert_allclose(crit_line.get_ydata(), gn.criterion_path_[finite])
    chosen = [ln for ln in ax.lines if "chosen" in ln.get_label()]
    if np.isfinite(gn.lam_):
        assert chosen[0].get_xdata()[0] == pytest.approx(np.log10(gn.lam_ / gn.lam_scale_))
    else:
        assert not chosen
    if not finite.all():  # the prior's criterion as a level
        prior = [ln for ln in ax.lines if "prior" in ln.get_label()][0]
        assert prior.get_ydata()[0] == pytest.approx(gn.criterion_path_[-1])
    np.testing.assert_allclose(ax.right_ax.lines[0].get_ydata(), errors[finite] * 100)
    _png_ok(ax, tmp_path / "path.png")


def test_lambda_path_refuses_a_fixed_lambda_and_bad_errors(data):
    X, _, y_partial = data
    fixed = GeneralizedNystrom(n_landmarks=20, lam=1.0, random_state=0).fit(X, y_partial)
    with pytest.raises(ValueError, match="has none: fit a GeneralizedNystrom with lam='auto'"):
        plot_lambda_path(fixed)
    # lam="auto" with one class searches nothing; the message said to fit with lam="auto"
    one_class = GeneralizedNystrom(n_landmarks=20, random_state=0)
    with pytest.warns(UserWarning):
        one_class.fit(X, np.where(y_partial >= 0, 0, -1))
    with pytest.raises(ValueError, match=r"labels of two classes or more, or pairs\)"):
        plot_lambda_path(one_class)
    gn = GeneralizedNystrom(n_landmarks=20, lam="nka", random_state=0).fit(X, y_partial)
    with pytest.raises(ValueError, match=r"errors must have shape \(\d+,\)"):
        plot_lambda_path(gn, errors=[0.1, 0.2])
    # numpy's bare "could not convert string to float", matplotlib's "'str' object has no
    # attribute 'plot'", and "has no lam_path_" for a model never fitted
    with pytest.raises(ValueError, match="errors must be numbers, one per lambda"):
        plot_lambda_path(gn, errors=["a"] * gn.lam_path_.size)
    # NaN and inf were drawn silently, 1e308 overflowed to inf with numpy's RuntimeWarning
    for value in (np.nan, np.inf, 1e308):
        errors = np.full(gn.lam_path_.size, 0.1)
        errors[1] = value
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=r"errors must be finite .*errors\[1\] = "):
                plot_lambda_path(gn, errors=errors)
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None, got str"):
        plot_lambda_path(gn, ax="foo")
    with pytest.raises(NotFittedError):
        plot_lambda_path(GeneralizedNystrom(n_landmarks=20))


def test_lambda_path_of_pairs_says_it_scores_pairs(data):
    """Without labels the criterion is the held-out pairs' squared cosine error; the figure
    called it a loss on labeled samples."""
    X, _, y_partial = data
    pairs = labels_to_pairs(y_partial, 60, random_state=0)
    gn = GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, pairs=pairs)
    ax = plot_lambda_path(gn)
    assert ax.lines[0].get_label() == "CV squared cosine error on held-out pairs"
    assert ax.get_ylabel() == "held-out loss per pair"
    labelled = plot_lambda_path(
        GeneralizedNystrom(n_landmarks=20, random_state=0).fit(X, y_partial)
    )
    assert labelled.get_ylabel() == "held-out loss per sample"


@pytest.mark.parametrize(
    "make",
    [
        lambda: GeneralizedNystrom(n_landmarks=20, lam=1e-2, random_state=0),
        lambda: LogDetKernelLearner(rank=8, n_landmarks=30, gamma=1.0, random_state=0),
        lambda: VonNeumannKernelLearner(rank=8, n_landmarks=30, random_state=0),
    ],
    ids=["GN", "LogDet", "VonNeumann"],
)
def test_spectrum_matches_dense_eigenvalues(tmp_path, data, make):
    X, _, y_partial = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(X, y_partial)
    ax = plot_spectrum(model, X)
    prior_line, learned_line = ax.lines
    G = model.transform(X)
    dense = np.sort(np.linalg.eigvalsh(G @ G.T))[::-1][: G.shape[1]]
    np.testing.assert_allclose(
        learned_line.get_ydata(), np.maximum(dense, 1e-300), rtol=1e-8, atol=1e-10 * dense[0]
    )
    # the prior: Nystrom kernel with the same landmarks (GN) / the initial kernel (Bregman)
    if isinstance(model, GeneralizedNystrom):
        ny = Nystrom(n_landmarks=20, random_state=0).fit(X)
        G0 = ny.transform(X)
    else:
        G0 = model._features_block(X) @ model.P0_
    prior = np.sort(np.linalg.eigvalsh(G0 @ G0.T))[::-1][: prior_line.get_ydata().size]
    np.testing.assert_allclose(
        prior_line.get_ydata(), np.maximum(prior, 1e-300), rtol=1e-7, atol=1e-9 * prior[0]
    )
    _png_ok(ax, tmp_path / "spectrum.png")


def test_spectrum_of_a_learner_without_prior_shows_the_learned_one(data):
    X, y, y_partial = data
    model = BCDNPKL(n_neighbors=6, random_state=0).fit(X, y_partial)
    ax = plot_spectrum(model, X, n_eigenvalues=5)
    assert len(ax.lines) == 1 and ax.lines[0].get_ydata().size == 5


def test_heatmap_is_the_kernel_in_class_order(tmp_path, data):
    X, y, y_partial = data
    model = BCDNPKL(n_neighbors=6, random_state=0).fit(X, y_partial)
    rng = np.random.default_rng(0)
    perm = rng.permutation(y.size)  # shuffled input: the figure must regroup the classes
    ax = plot_kernel_heatmap(model, X[perm], y[perm], max_samples=1000)
    order = np.argsort(y[perm], kind="stable")
    G = model.transform(X[perm][order])
    np.testing.assert_allclose(ax.images[0].get_array(), G @ G.T, rtol=1e-12, atol=1e-12)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    _png_ok(ax, tmp_path / "heatmap.png")
    sub = plot_kernel_heatmap(model, X, y, max_samples=60)
    assert sub.images[0].get_array().shape == (60, 60)
    with pytest.raises(ValueError, match=r"y must have shape \(150,\)"):
        plot_kernel_heatmap(model, X, y[:10])
    with pytest.raises(ValueError, match=r"y is required: one label per row of X \(150,\)"):
        plot_kernel_heatmap(model, X, None)  # was "got shape ()"


def test_figures_of_a_model_with_pandas_output(data):
    """set_output(transform="pandas") makes transform return a DataFrame; the figures must
    draw the same numbers as for the array output."""
    pytest.importorskip("pandas")
    X, y, y_partial = data
    model = BCDNPKL(n_neighbors=6, random_state=0).fit(X, y_partial)
    ref_heat = plot_kernel_heatmap(model, X, y).images[0].get_array()
    ref_spec = plot_spectrum(model, X, n_eigenvalues=5).lines[0].get_ydata()
    model.set_output(transform="pandas")
    np.testing.assert_array_equal(plot_kernel_heatmap(model, X, y).images[0].get_array(), ref_heat)
    np.testing.assert_array_equal(
        plot_spectrum(model, X, n_eigenvalues=5).lines[0].get_ydata(), ref_spec
    )


def test_figures_refuse_bad_arguments_with_what_is_valid(data):
    """Bad arguments are named before matplotlib or numpy meet them deep inside."""
    X, y, y_partial = data
    model = Nystrom(n_landmarks=8, random_state=0).fit(X)
    for bad, exc in [(0, ValueError), (-3, ValueError), (2.7, TypeError), ("a", TypeError)]:
        with pytest.raises(exc, match="n_eigenvalues"):
            plot_spectrum(model, X, n_eigenvalues=bad)
    mixed = np.array(["a", 1] * (y.size // 2), dtype=object)
    with pytest.raises(TypeError, match="one sortable type"):
        plot_kernel_heatmap(model, X, mixed)
    for fig in (plot_spectrum, lambda m, X: plot_kernel_heatmap(m, X, y)):
        with pytest.raises(TypeError, match=r"fitted learner of nystrom_priors \(.*\), got object"):
            fig(object(), X)
    from nystrom_priors import NotFittedError

    with pytest.raises(NotFittedError):
        plot_spectrum(Nystrom(), X)


def _tick_texts(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


def _missing_marker_labels(y, marker):
    """``y`` with class 0 marked unlabeled by ``marker``, in the container that marker needs."""
    if marker == "nan":
        return np.where(y == 0, np.nan, y)
    if marker == "None":
        return np.array([None if v == 0 else int(v) for v in y], dtype=object)
    if marker == "pd.NA":
        pd = pytest.importorskip("pandas")
        return pd.Series([pd.NA if v == 0 else int(v) for v in y], dtype="Int64")
    return np.where(y == 0, -1, y)


@pytest.mark.parametrize("marker", ["nan", "None", "pd.NA", "-1"])
def test_heatmap_puts_unlabeled_samples_in_one_group(data, marker):
    """Missing labels are read as the learners read them (``check_labels``): one "unlabeled"
    group after the classes, not one group per NaN (NaN != NaN made each its own class)."""
    X, y, _ = data
    model = Nystrom(n_landmarks=12, random_state=0).fit(X)
    perm = np.random.default_rng(1).permutation(y.size)  # unlabeled samples interleaved
    y_missing = _missing_marker_labels(y[perm], marker)
    ax = plot_kernel_heatmap(model, X[perm], y_missing, max_samples=1000)
    ticks = _tick_texts(ax)
    assert len(ticks) == 3 and ticks[-1] == "unlabeled"
    assert [float(t) for t in ticks[:2]] == [1.0, 2.0]
    assert len(ax.lines) == 4  # two separators, each drawn across and down
    # classes in order, then the unlabeled samples, each group in input order
    codes = np.where(y[perm] == 0, 3, y[perm])
    order = np.argsort(codes, kind="stable")
    G = model.transform(X[perm][order])
    np.testing.assert_allclose(ax.images[0].get_array(), G @ G.T, rtol=1e-12, atol=1e-12)


def test_heatmap_of_labels_all_missing_is_one_group(data):
    X, y, _ = data
    model = Nystrom(n_landmarks=12, random_state=0).fit(X)
    ax = plot_kernel_heatmap(model, X, np.full(y.size, np.nan), max_samples=1000)
    assert _tick_texts(ax) == ["unlabeled"] and not ax.lines
    G = model.transform(X)
    np.testing.assert_allclose(ax.images[0].get_array(), G @ G.T, rtol=1e-12, atol=1e-12)


def test_heatmap_refuses_labels_the_learners_refuse(data):
    """The label reading is the learners' own: the string '-1' and continuous values are
    refused with their message, not drawn as classes."""
    X, y, _ = data
    model = Nystrom(n_landmarks=12, random_state=0).fit(X)
    with pytest.raises(ValueError, match="string '-1'"):
        plot_kernel_heatmap(model, X, np.where(y == 0, "-1", "a"))
    with pytest.raises(ValueError, match="continuous"):
        plot_kernel_heatmap(model, X, y + 0.5)


def _group_sizes(ax):
    """Samples per tick group of a heatmap, from its separator lines."""
    n = ax.images[0].get_array().shape[0]
    edges = sorted({float(ln.get_ydata()[0]) for ln in ax.lines[::2]})
    bounds = np.concatenate([[-0.5], edges, [n - 0.5]])
    return np.diff(bounds).astype(int).tolist()


def test_heatmap_subsample_is_stratified_and_deterministic():
    """390 samples of class 0 and 10 of class 1 in 20: the minority keeps its one sample
    (a uniform draw lost it), and random_state fixes the draw."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.repeat([0, 1], [390, 10])
    model = Nystrom(n_landmarks=10, random_state=0).fit(X)
    ax = plot_kernel_heatmap(model, X, y, max_samples=20, random_state=1)
    assert ax.images[0].get_array().shape == (20, 20)
    assert _tick_texts(ax) == ["0", "1"]
    assert _group_sizes(ax) == [19, 1]
    again = plot_kernel_heatmap(model, X, y, max_samples=20, random_state=1)
    np.testing.assert_array_equal(again.images[0].get_array(), ax.images[0].get_array())
    # the kept rows are rows of X: their kernel diagonal is among the full one's
    full = np.einsum("ij,ij->i", model.transform(X), model.transform(X))
    diag = np.diag(ax.images[0].get_array())
    assert np.all(np.min(np.abs(diag[:, None] - full[None, :]), axis=1) < 1e-12)


def test_heatmap_subsample_keeps_the_class_proportions(data):
    X, y, _ = data
    model = Nystrom(n_landmarks=12, random_state=0).fit(X)
    for seed in range(5):  # 50 per class: exactly 20 each, whatever the draw
        ax = plot_kernel_heatmap(model, X, y, max_samples=60, random_state=seed)
        assert _group_sizes(ax) == [20, 20, 20]
    y_missing = np.where(np.arange(y.size) % 5 == 0, -1, y)  # 30 unlabeled, 40 per class
    ax = plot_kernel_heatmap(model, X, y_missing, max_samples=15, random_state=0)
    assert _tick_texts(ax) == ["0", "1", "2", "unlabeled"] and _group_sizes(ax) == [4, 4, 4, 3]
    # fewer samples than groups: one sample from each of the largest groups
    ax = plot_kernel_heatmap(model, X, y_missing, max_samples=2, random_state=0)
    assert ax.images[0].get_array().shape == (2, 2) and len(_tick_texts(ax)) == 2


def test_figures_of_a_model_fitted_on_a_dataframe(data):
    """The frame the model was fitted on draws without a feature-name warning (the rows were
    turned into an ndarray before transform), and the same numbers as the array fit; a frame
    with other columns still meets the estimator's own check, once."""
    pd = pytest.importorskip("pandas")
    X, y, y_partial = data
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    on_df = GeneralizedNystrom(n_landmarks=20, lam=1e-2, random_state=0).fit(df, y_partial)
    on_array = GeneralizedNystrom(n_landmarks=20, lam=1e-2, random_state=0).fit(X, y_partial)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        heat = plot_kernel_heatmap(on_df, df, y, max_samples=1000)
        sub = plot_kernel_heatmap(on_df, df, y, max_samples=40)
        spec = plot_spectrum(on_df, df)
    np.testing.assert_allclose(
        heat.images[0].get_array(),
        plot_kernel_heatmap(on_array, X, y, max_samples=1000).images[0].get_array(),
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_array_equal(
        sub.images[0].get_array(),
        plot_kernel_heatmap(on_array, X, y, max_samples=40).images[0].get_array(),
    )
    for mine, ref in zip(spec.lines, plot_spectrum(on_array, X).lines):
        np.testing.assert_allclose(mine.get_ydata(), ref.get_ydata(), rtol=1e-12)
    renamed = df.rename(columns={"f0": "other"})
    for fig in (plot_spectrum, lambda m, X: plot_kernel_heatmap(m, X, y)):
        with pytest.raises(ValueError, match="feature names should match"):
            fig(on_df, renamed)
        with pytest.warns(UserWarning, match="does not have valid feature names") as record:
            fig(on_df, X)
        assert len(record) == 1


def test_figures_refuse_a_kernel_beyond_float64_as_kernel_does():
    """X * 1e200 under a linear initial kernel: factor rows of ~3e200, whose kernel and
    eigenvalues overflow. ``model.kernel`` refuses it; the figures drew inf eigenvalues and
    an inf image with only a RuntimeWarning."""
    X = np.random.default_rng(0).normal(size=(40, 4))
    model = LogDetKernelLearner(init="linear", random_state=0)
    model.fit(X, pairs=np.array([[0, 3, 1], [1, 2, -1]]))
    big = X * 1e200
    with pytest.raises(ValueError, match="overflows float64"):
        model.kernel(big)
    with pytest.raises(ValueError, match="learned kernel of this LogDetKernelLearner overflows"):
        plot_spectrum(model, big)
    with pytest.raises(ValueError, match="learned kernel of this LogDetKernelLearner overflows"):
        plot_kernel_heatmap(model, big, np.arange(40) % 3)


@pytest.mark.parametrize(
    "draw",
    [
        lambda m, X: plot_spectrum(m, X),
        lambda m, X: plot_kernel_heatmap(m, X, np.arange(X.shape[0]) % 2),
        lambda m, X: plot_lambda_path(m),
    ],
    ids=["spectrum", "heatmap", "lambda_path"],
)
def test_figures_wait_for_a_fit_of_the_model_in_another_thread(data, draw):
    """A figure reads the model once, under its fit lock, like ``transform``: during a refit
    in another thread a Bregman learner's ``projection_`` holds the unlearned prior, which
    the spectrum drew as the learned kernel. Here the lock is held as a fit holds it: the
    figure must wait for it, not draw."""
    import threading

    from nystrom_priors._fit_lock import fit_lock

    X, _, y_partial = data
    model = GeneralizedNystrom(n_landmarks=12, lam="nka", random_state=0).fit(X, y_partial)
    draw(model, X)  # imports and compiles outside the timed part
    done = threading.Event()

    def figure() -> None:
        draw(model, X)
        done.set()

    with fit_lock(model):
        t = threading.Thread(target=figure)
        t.start()
        assert not done.wait(1.0), "the figure was drawn while a fit held the model"
    t.join(30.0)
    assert done.is_set()


def test_lambda_path_of_a_model_without_one_names_what_it_needs(data):
    """A Nystrom model has no lam: reading lam_ under the fit lock raised AttributeError
    before the check that says what plot_lambda_path needs."""
    X, _, _ = data
    with pytest.raises(ValueError, match="needs a searched lambda path"):
        plot_lambda_path(Nystrom(n_landmarks=10, random_state=0).fit(X))
