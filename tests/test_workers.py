"""``_threads.WORKERS``: the Python threads that run lam="auto"'s stages, each share on a
thread of its own, every share finished before ``run`` returns or raises, and usable again
after ``os.fork``; and the selection's scores are the same whatever the number of threads."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest
from test_generalized_lam import _cv_problem

from nystrom_priors._numba import _lam_cv as jit
from nystrom_priors._numba._lapack import addresses
from nystrom_priors._threads import WORKERS, _Workers
from nystrom_priors.generalized import _lam


def test_jobs_run_at_once_each_on_its_own_thread():
    # a barrier of three parties passes only if the three jobs wait at it together
    barrier = threading.Barrier(3, timeout=20)
    seen: list[int] = []

    def job(k: int) -> None:
        barrier.wait()
        seen.append(threading.get_ident())

    WORKERS.run(job, [(0,), (1,), (2,)])
    assert len(set(seen)) == 3 and threading.get_ident() in seen  # the first on the caller's


def test_an_exception_is_raised_after_every_job_has_stopped():
    done: list[int] = []
    release = threading.Event()

    def job(k: int) -> None:
        if k == 1:
            raise ValueError("share 1 failed")
        if k == 2:
            release.wait(20)  # still running when share 1 has failed
        done.append(k)

    def first(k: int) -> None:
        job(k)
        release.set()

    workers = _Workers()
    with pytest.raises(ValueError, match="share 1 failed"):
        workers.run(lambda k: first(k) if k == 0 else job(k), [(0,), (1,), (2,)])
    assert sorted(done) == [0, 2]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_the_pool_works_in_a_forked_child():
    # a child inherits the pool object but not its threads: a job queued to them never ran
    workers = _Workers()
    workers.run(lambda k: None, [(0,), (1,)])  # the pool's thread exists, now idle
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            t = threading.Thread(target=workers.run, args=(lambda k: None, [(0,), (1,)]))
            t.daemon = True
            t.start()
            t.join(20)
            code = 0 if not t.is_alive() else 2
        finally:
            os.write(w, bytes([code]))
            os._exit(0)
    os.close(w)
    try:
        got = os.read(r, 1)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    assert got == b"\x00", "the child's jobs did not run" if got == b"\x02" else got


@pytest.mark.parametrize("n_folds", [4, 5])
def test_the_scores_do_not_depend_on_the_threads(rng, n_folds):
    """One thread, two (even shares: 4 folds; a round left over: 5), three and more threads
    than rounds (every round prepared on its own thread, the tasks dealt over all) fill the
    same entries with the same numbers."""
    c = 3
    PE, w, codes = _cv_problem(rng, m=14, n=70, c=c, d=3)
    roles, ends = _lam.informative_rounds(
        _lam.cv_rounds(codes, n_folds, w.size, np.random.default_rng(5)), codes
    )
    rel = np.concatenate([10.0 ** np.arange(0.0, -10.5, -2.0), [np.inf]])
    cost = np.arange(rel.size, dtype=np.float64)[::-1].copy()
    results = []
    for n_threads in (1, 2, 3, 8):
        state = jit.new_state(roles, w.size, c, 1 << 22, 8)
        out = np.full((4, roles.shape[0], rel.size), np.nan)
        problem = (PE, w, codes, c, roles)
        _lam.raced_rounds(state, problem, ends, rel, cost, out, n_threads, addresses())
        results.append(out)
    assert np.isfinite(results[0][:, : ends[0]]).all()  # the first split scores everything
    for out in results[1:]:
        np.testing.assert_array_equal(out, results[0])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
