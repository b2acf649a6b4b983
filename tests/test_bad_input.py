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

IDS = [case_id for case_id, _, _ in catalogue.CASES]
EXPECTED = {case_id: expected for case_id, _, expected in catalogue.CASES}


def _catalogue_outcomes() -> dict:
    """``{case id: record}`` from one run of the catalogue; ``"__crash__"`` if it died."""
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
        check=False,  # a crash is reported with the case that caused it
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


def _mismatch(got: dict | None, expected) -> str | None:
    """What is wrong with a case's outcome, or None when it is the promised one."""
    if got is None:
        return "no outcome: the catalogue process died before it"
    if expected == catalogue.OK or expected[0] == "warn":
        if got["status"] != "ok":
            return f"raised {got.get('type')}: {got.get('message')}"
        if not got["finite"]:
            return "returned non-finite values"
        if expected[0] == "warn":
            _, category, regex = expected
            matching = [m for c, m in got["warnings"] if c == category and re.search(regex, m)]
            if not matching:
                return f"no {category} matching {regex!r} among {got['warnings']}"
        return None
    exc, regex = expected
    name = exc if isinstance(exc, str) else exc.__name__
    if got["status"] != "raised":
        return f"did not raise (warnings: {got.get('warnings')})"
    # Exactly the promised type (a subclass would also satisfy `except name`; we want the type).
    if got["type"] != name:
        return f"raised {got['type']}: {got['message']}"
    if not re.search(regex, got["message"]):
        return f"message {got['message']!r} !~ {regex!r}"
    return None


def test_catalogue_is_large_and_ids_are_unique():
    assert len(IDS) == len(set(IDS))
    raising = [i for i in IDS if EXPECTED[i] not in (catalogue.OK,) and EXPECTED[i][0] != "warn"]
    assert len(raising) >= 40


def test_every_catalogued_input_gets_its_promised_outcome():
    """One test for the whole catalogue, so that its subprocess runs once per test run: a
    session fixture shared by one test per case ran it once per pytest-xdist worker, since
    the group that kept those tests on one worker (``xdist_group``) is ignored under
    pytest 9.2. Every failing case is named, with what it did instead."""
    outcomes = _catalogue_outcomes()
    failures = [f"{i}: {why}" for i in IDS if (why := _mismatch(outcomes.get(i), EXPECTED[i]))]
    assert "__crash__" not in outcomes, (outcomes["__crash__"], failures)
    assert not failures, f"{len(failures)} of {len(IDS)} cases:\n" + "\n".join(failures)


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
