"""Every bad input gets a clear exception: the catalogue in ``bad_input_catalogue.py``.

The whole catalogue runs in one subprocess (so a segfault or abort in a jitted kernel fails
the case that caused it rather than killing pytest); each case is then checked here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import bad_input_catalogue as catalogue  # noqa: E402

# One worker runs the whole module (pytest-xdist's ``--dist loadgroup``, README's test
# command), and the fixture lives for the session: the subprocess runs once, not once per
# worker, nor again each time the worker comes back to this module between others' tests.
pytestmark = pytest.mark.xdist_group("bad_input_catalogue")

IDS = [case_id for case_id, _, _ in catalogue.CASES]
EXPECTED = {case_id: expected for case_id, _, expected in catalogue.CASES}


@pytest.fixture(scope="session")
def outcomes() -> dict:
    from conftest import NO_JIT

    if NO_JIT:  # pure Python cannot segfault: run in-process so coverage sees the cases
        return {record["id"]: record for record in catalogue.records()}
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    proc = subprocess.run(
        [sys.executable, str(HERE / "bad_input_catalogue.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,  # a crash is reported per case below
    )
    records = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        records[record["id"]] = record
    if proc.returncode != 0:
        done = set(records)
        crashed = next((i for i in IDS if i not in done), None)
        records["__crash__"] = {
            "returncode": proc.returncode,
            "case": crashed,
            "stderr": proc.stderr[-3000:],
        }
    return records


def test_catalogue_is_large_and_ids_are_unique():
    assert len(IDS) == len(set(IDS))
    raising = [i for i in IDS if EXPECTED[i] not in (catalogue.OK,) and EXPECTED[i][0] != "warn"]
    assert len(raising) >= 40


def test_catalogue_process_did_not_crash(outcomes):
    assert "__crash__" not in outcomes, outcomes.get("__crash__")


@pytest.mark.parametrize("case_id", IDS)
def test_case(outcomes, case_id):
    if case_id not in outcomes:
        crash = outcomes.get("__crash__", {})
        pytest.fail(f"no outcome for {case_id}: the catalogue process died ({crash})")
    got = outcomes[case_id]
    expected = EXPECTED[case_id]
    if expected == catalogue.OK or expected[0] == "warn":
        assert got["status"] == "ok", f"raised {got.get('type')}: {got.get('message')}"
        assert got["finite"], "returned non-finite values"
        if expected[0] == "warn":
            _, category, regex = expected
            matching = [m for c, m in got["warnings"] if c == category and re.search(regex, m)]
            assert matching, f"no {category} matching {regex!r} among {got['warnings']}"
        return
    exc, regex = expected
    name = exc if isinstance(exc, str) else exc.__name__
    assert got["status"] == "raised", f"did not raise (warnings: {got.get('warnings')})"
    # Exactly the promised type (a subclass would also satisfy `except name`; we want the type).
    assert got["type"] == name, f"raised {got['type']}: {got['message']}"
    assert re.search(regex, got["message"]), f"message {got['message']!r} !~ {regex!r}"


@pytest.mark.parametrize(
    "cls, params, name",
    [
        ("Nystrom", {"degree": "x"}, "degree"),
        ("GeneralizedNystrom", {"coef0": float("nan")}, "coef0"),
        ("LogDetKernelLearner", {"n_constraints": 0}, "n_constraints"),
        ("VonNeumannKernelLearner", {"n_constraints": 2.5}, "n_constraints"),
    ],
)
def test_fit_refuses_every_parameter_save_would_refuse(cls, params, name, tmp_path):
    """A parameter the chosen kernel or side information ignores (degree with "rbf",
    n_constraints with explicit pairs) is still checked by fit, as save and load check it:
    such a model used to fit and then could never be saved."""
    import numpy as np

    import nystrom_priors as npr

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    # the Bregman learners on explicit pairs: n_constraints (pairs drawn from y) is unused
    side = {"pairs": [[0, 1, 1], [2, 3, -1]]} if "Learner" in cls else {"y": y}
    est = getattr(npr, cls)(n_landmarks=5, **params)
    with pytest.raises((TypeError, ValueError), match=name):
        est.fit(X, **side)
    good = getattr(npr, cls)(n_landmarks=5).fit(X, **side)
    npr.save(good, tmp_path / "m.npz")  # the valid counterpart saves


def test_streaming_a_zero_row_array_is_refused_as_transform_refuses_it():
    """iter_transform / iter_kernel_rows of a zero-row array yielded nothing, unchecked (a
    wrong feature count or a string dtype passed); they now raise what transform raises."""
    import numpy as np

    import nystrom_priors as npr

    X = np.random.default_rng(0).normal(size=(40, 3))
    model = npr.Nystrom(n_landmarks=10, random_state=0).fit(X)
    for empty in (np.zeros((0, 3)), np.zeros((0, 7)), np.zeros((0, 3), dtype="U1")):
        with pytest.raises((TypeError, ValueError)) as direct:
            model.transform(empty)
        with pytest.raises(type(direct.value)):
            list(model.iter_transform(empty))
        with pytest.raises(type(direct.value)):
            list(model.iter_kernel_rows(empty, X))
