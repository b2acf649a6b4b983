"""The BLAS thread limit of ``_threads.BLAS_ONE_THREAD`` holds in whichever Python thread
sets it, and its reference-counted restore brings back the user's setting exactly."""

from __future__ import annotations

import threading

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from nystrom_priors._threads import BLAS_ONE_THREAD  # noqa: E402


def _blas_threads() -> list[int]:
    # the libraries the limit drives (numpy's and scipy's), read from the libraries themselves;
    # another package's BLAS loaded later (cvxpy's SCS ships a single-threaded one) is not one
    return [lc.get_num_threads() for lc in BLAS_ONE_THREAD._blas]


@pytest.fixture
def two_blas_threads():
    if not BLAS_ONE_THREAD.available():
        pytest.skip("no threadpoolctl-controllable BLAS")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if min(_blas_threads(), default=1) < 2:
            pytest.skip("BLAS runs one thread here whatever the limit")
        yield


def _in_thread(fn) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]


def test_the_limit_holds_in_a_worker_thread_after_the_main_thread_set_one(two_blas_threads):
    # threadpoolctl 3.8 lets only the first thread that sets an OpenBLAS limit set later ones:
    # a worker thread's limit was silently ignored once the main thread had used it
    with BLAS_ONE_THREAD:
        assert _blas_threads() and max(_blas_threads()) == 1
    assert min(_blas_threads()) == 2
    seen: list[list[int]] = []

    def worker() -> None:
        with BLAS_ONE_THREAD:
            seen.append(_blas_threads())
        seen.append(_blas_threads())

    _in_thread(worker)
    assert max(seen[0]) == 1, seen
    assert min(seen[1]) == 2, seen


def test_a_restore_from_another_thread_than_the_limit_brings_back_the_setting(two_blas_threads):
    # the main thread limits, a worker joins, the main thread leaves first: the worker's exit
    # restores, from another thread than the limit's (threadpoolctl dropped that restore)
    BLAS_ONE_THREAD.__enter__()
    entered, release = threading.Event(), threading.Event()
    after: list[list[int]] = []

    def worker() -> None:
        with BLAS_ONE_THREAD:
            entered.set()
            release.wait()
        after.append(_blas_threads())

    t = threading.Thread(target=worker)
    t.start()
    entered.wait()
    BLAS_ONE_THREAD.__exit__(None, None, None)
    assert max(_blas_threads()) == 1  # the worker still holds the section
    release.set()
    t.join()
    assert min(after[0]) == 2, after


def test_an_interrupted_restore_is_completed_by_the_next_section(two_blas_threads, monkeypatch):
    # a restore cut short (Ctrl-C) left one thread, which the next section then took for the
    # user's setting and restored for good
    lib = BLAS_ONE_THREAD._blas[0]
    real = lib.set_num_threads
    calls = []

    def interrupted(n: int) -> None:
        calls.append(n)
        if n == 2 and len(calls) == len(BLAS_ONE_THREAD._blas) + 1:
            raise KeyboardInterrupt  # the first restore call of the first exit
        real(n)

    monkeypatch.setattr(lib, "set_num_threads", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with BLAS_ONE_THREAD:
            pass
    assert max(_blas_threads()) == 1  # left limited
    with BLAS_ONE_THREAD:
        assert max(_blas_threads()) == 1
    assert min(_blas_threads()) == 2
