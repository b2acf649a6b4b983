"""``verbose``: progress records and bars, never a change in the result."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from conftest import blobs

from nystrom_priors import (
    BCDNPKL,
    GeneralizedNystrom,
    LogDetKernelLearner,
    VonNeumannKernelLearner,
    kernel_kmeans,
)


def _data():
    return blobs(40, spread=2.5)


CASES = {
    "GN-cv": (
        lambda v: GeneralizedNystrom(n_landmarks=20, random_state=0, verbose=v),
        "partial",
        "GeneralizedNystrom lambda path (CV)",
    ),
    "GN-nka": (
        lambda v: GeneralizedNystrom(n_landmarks=20, lam="nka", random_state=0, verbose=v),
        "partial",
        "GeneralizedNystrom lambda path",
    ),
    "LogDet": (
        lambda v: LogDetKernelLearner(rank=6, n_landmarks=30, gamma=1.0, random_state=0, verbose=v),
        "full",
        "LogDetKernelLearner sweeps",
    ),
    "VonNeumann": (
        lambda v: VonNeumannKernelLearner(rank=6, n_landmarks=30, random_state=0, verbose=v),
        "full",
        "VonNeumannKernelLearner sweeps",
    ),
    "BCDNPKL": (
        lambda v: BCDNPKL(n_neighbors=6, tol=1e-9, random_state=0, verbose=v),
        "partial",
        "BCDNPKL sweeps",
    ),
}


def _fit(key, verbose):
    X, y, y_partial = _data()
    make, side, _ = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = make(verbose).fit(X, y if side == "full" else y_partial)
    return model, X


@pytest.mark.parametrize("key", list(CASES))
def test_verbose_logs_each_step_and_does_not_change_the_result(key, caplog):
    quiet, X = _fit(key, 0)
    with caplog.at_level(logging.INFO, logger="nystrom_priors"):
        loud, _ = _fit(key, 2)
    desc = CASES[key][2]
    messages = [r.getMessage() for r in caplog.records if r.name == "nystrom_priors"]
    assert messages[0].startswith(f"{desc}: start")
    assert messages[-1].startswith(f"{desc}: done after")
    steps = [m for m in messages if m.startswith(f"{desc}: ") and "/" in m.split(":")[1]]
    assert len(steps) >= 1
    if key in ("LogDet", "VonNeumann", "BCDNPKL"):
        # the last step count reported is the number of sweeps the model ran
        assert f"done after {loud.n_iter_} step(s)" in messages[-1]
    for name, value in vars(quiet).items():
        if name.endswith("_") and isinstance(value, np.ndarray):
            assert value.tobytes() == getattr(loud, name).tobytes(), name
    assert quiet.transform(X).tobytes() == loud.transform(X).tobytes()


def test_verbose_zero_is_silent(caplog, capsys):
    with caplog.at_level(logging.DEBUG, logger="nystrom_priors"):
        _fit("BCDNPKL", 0)
    assert not [r for r in caplog.records if r.name == "nystrom_priors"]
    assert capsys.readouterr().err == ""


def test_verbose_one_draws_a_tqdm_bar(capsys):
    pytest.importorskip("tqdm")
    _fit("LogDet", 1)
    err = capsys.readouterr().err
    assert "LogDetKernelLearner sweeps" in err and "sweep" in err and "%" in err


def test_kernel_kmeans_verbose(caplog):
    X, _, _ = _data()
    with caplog.at_level(logging.INFO, logger="nystrom_priors"):
        loud = kernel_kmeans(X, 3, n_init=4, random_state=0, verbose=2)
    quiet = kernel_kmeans(X, 3, n_init=4, random_state=0)
    np.testing.assert_array_equal(loud, quiet)
    steps = [r.getMessage() for r in caplog.records if "kernel_kmeans restarts: " in r.getMessage()]
    assert sum("/4 " in m for m in steps) == 4


@pytest.mark.parametrize("bad", [-1, 1.5, "yes"])
@pytest.mark.parametrize(
    "make",
    [
        lambda v: BCDNPKL(n_neighbors=6, verbose=v),
        lambda v: GeneralizedNystrom(n_landmarks=10, lam=1.0, verbose=v),  # no lambda path
        lambda v: LogDetKernelLearner(rank=4, n_landmarks=20, verbose=v),
    ],
)
def test_bad_verbose_is_refused(bad, make):
    X, _, y_partial = _data()
    with pytest.raises((ValueError, TypeError), match="verbose"):
        make(bad).fit(X, y_partial)


def test_numpy_bool_verbose_is_a_bool(caplog):
    """verbose=np.bool_(True) (from a numpy comparison) was refused as "got bool" while
    verbose=True was accepted, though the docstrings say "bool or int"."""
    X, _, _ = _data()
    with caplog.at_level(logging.INFO, logger="nystrom_priors"):
        kernel_kmeans(X, 3, n_init=2, random_state=0, verbose=np.bool_(True))
    assert any("kernel_kmeans restarts" in r.getMessage() for r in caplog.records)
    kernel_kmeans(X, 3, n_init=2, random_state=0, verbose=np.bool_(False))
