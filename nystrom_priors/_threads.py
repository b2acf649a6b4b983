"""How the jitted row-block drivers and BLAS share the cores.

Two thread pools compete for them: Numba's (the ``prange`` drivers) and BLAS's (the OpenBLAS
of numpy and scipy). On a machine with few cores they get in each other's way. After a
multi-threaded BLAS call OpenBLAS's workers keep spinning for a while, and a Numba parallel
region started meanwhile waits at its barrier for a thread whose core a spinning worker
holds; a Numba pool that has gone to sleep also takes up to milliseconds to wake. Either
costs more than a small job's whole work (a 768 x 76 transform: 7 ms in parallel right after
an eigendecomposition, 0.6 ms on the calling thread). Hence:

* ``numba_threads(work)``: a job below ``SERIAL_WORK`` multiply-adds runs on the calling
  thread alone (Numba's thread count is per Python thread, so concurrent callers are
  unaffected). Results do not change: tiles depend on the shapes, never on the threads.
* ``blas_threads(m)``: dense algebra on m x m matrices with m <= ``SMALL_LINALG`` runs with
  one BLAS thread, which wakes no worker; a second thread gains little there (eigh at
  m = 500: 33 ms on two threads, 36 ms on one).
* ``blas_for_work(work)``: a BLAS job (a loop of GEMMs) below ``BLAS_SERIAL_WORK``
  multiply-adds per call runs on one BLAS thread. OpenBLAS goes multi-threaded from about
  2^18 multiply-adds; its second thread saves half a call's time, and then spins on its
  core while every Numba region that follows waits for it, milliseconds each. A call must
  take tens of milliseconds on one core before the saving pays for that
  (``docs/design/performance.md``, "Threads on few cores").
* ``BLAS_ONE_THREAD``: the drivers whose Numba threads each call BLAS on their own tile limit
  BLAS to one thread, so that the two pools do not oversubscribe the cores.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

# below this many multiply-adds (about a millisecond on one core) a job runs on one thread
SERIAL_WORK = 1 << 23
# m x m algebra up to this m runs on one BLAS thread
SMALL_LINALG = 512
# a BLAS call below this many multiply-adds (tens of ms on one core) runs on one BLAS thread
BLAS_SERIAL_WORK = 1 << 28


class _SingleThreadedBlas:
    """Limit BLAS to one thread while Numba threads each run their own GEMM.

    Uses threadpoolctl when installed (it ships with scikit-learn); reference counted and
    locked, so concurrent calls from several Python threads restore the user's setting exactly
    once, when the last one leaves.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._limiter = None
        self._controller = None
        self._available: bool | None = None

    def available(self) -> bool:
        if self._available is None:
            if os.environ.get("NYSTROM_PRIORS_NO_THREADPOOLCTL"):
                self._available = False
            else:
                try:
                    import scipy.linalg.cython_blas  # noqa: F401  (load the BLAS numba calls)
                    from threadpoolctl import ThreadpoolController

                    self._controller = ThreadpoolController()
                    self._available = True
                except Exception:
                    self._available = False
        return self._available

    def __enter__(self) -> _SingleThreadedBlas:
        available = self.available()
        with self._lock:
            if self._depth == 0 and available:
                with _openblas_control():
                    self._limiter = self._controller.limit(limits=1, user_api="blas")
            self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._limiter is not None:
                with _openblas_control():
                    self._limiter.restore_original_limits()
                self._limiter = None


@contextlib.contextmanager
def _openblas_control() -> Iterator[None]:
    """Let the calling thread set OpenBLAS's process-wide thread count, then let go.

    threadpoolctl 3.8 gives that right to the first thread that sets it and silently ignores
    every other thread until that one calls ``clear_controlling_thread``, which
    ``ThreadpoolController.limit`` never does: after one limit from the main thread, a fit
    in a worker thread ran with every BLAS thread and its spinning workers, and a restore
    from another thread than the limit's would be dropped. The
    limit and its restore happen under ``_SingleThreadedBlas``'s lock, one at a time, so
    taking control for each and releasing it after is safe.
    """
    try:
        from threadpoolctl import OpenBLASController
    except ImportError:  # pragma: no cover - available() found threadpoolctl
        yield
        return
    clear = getattr(OpenBLASController, "clear_controlling_thread", None)  # 3.8 and later
    if clear is not None:
        clear(force=True)
    try:
        yield
    finally:
        if clear is not None:
            clear(force=True)


BLAS_ONE_THREAD = _SingleThreadedBlas()


@contextlib.contextmanager
def numba_threads(work: float) -> Iterator[None]:
    """Run the enclosed jitted drivers on the calling thread alone when ``work`` (about the
    number of multiply-adds of the job) is below ``SERIAL_WORK``; on all of Numba's threads
    otherwise."""
    if work >= SERIAL_WORK:
        yield
        return
    from numba import get_num_threads, set_num_threads

    before = get_num_threads()
    if before == 1:
        yield
        return
    set_num_threads(1)
    try:
        yield
    finally:
        set_num_threads(before)


def blas_for_work(work: float) -> contextlib.AbstractContextManager:
    """One BLAS thread for the enclosed BLAS calls when each costs fewer than
    ``BLAS_SERIAL_WORK`` multiply-adds (``work``)."""
    return BLAS_ONE_THREAD if work < BLAS_SERIAL_WORK else contextlib.nullcontext()


def blas_threads(m: int) -> contextlib.AbstractContextManager:
    """One BLAS thread for the enclosed m x m algebra when m <= ``SMALL_LINALG``."""
    return BLAS_ONE_THREAD if m <= SMALL_LINALG else contextlib.nullcontext()
