"""The BLAS thread limit of ``_threads.BLAS_ONE_THREAD`` holds in whichever Python thread
sets it, and its reference-counted restore brings back the user's setting exactly."""

from __future__ import annotations

import threading

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from nystrom_priors._threads import BLAS_ONE_THREAD  # noqa: E402


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


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
    entered, release = threading.Event(), threading.Event()

    def first() -> None:
        with BLAS_ONE_THREAD:
            entered.set()
            release.wait()

    t = threading.Thread(target=first)
    t.start()
    entered.wait()
    BLAS_ONE_THREAD.__enter__()  # the main thread joins while the worker holds the limit
    release.set()
    t.join()  # the worker leaves first: the limit stays, the main thread still needs it
    assert max(_blas_threads()) == 1
    BLAS_ONE_THREAD.__exit__(None, None, None)  # the last to leave restores, from this thread
    assert min(_blas_threads()) == 2
