"""How the jitted row-block drivers and BLAS share the cores.

Two thread pools compete for them: Numba's (the ``prange`` drivers) and BLAS's (the OpenBLAS
of numpy and scipy). On a machine with few cores they get in each other's way. After a
multi-threaded BLAS call OpenBLAS's workers keep spinning for a while, and a Numba parallel
region started meanwhile waits at its barrier for a thread whose core a spinning worker
holds; a Numba pool that has gone to sleep also takes up to milliseconds to wake. Either
costs more than a small job's whole work (``docs/design/performance.md``, "Threads on few
cores", has the figures). Hence:

* ``numba_threads(work)``: a job below ``SERIAL_WORK`` multiply-adds runs on the calling
  thread alone (Numba's thread count is per Python thread, so concurrent callers are
  unaffected). Results do not change: tiles depend on the shapes, never on the threads.
* ``blas_threads(m)``: dense algebra on m x m matrices with m <= ``SMALL_LINALG`` runs with
  one BLAS thread, which wakes no worker; a second thread gains little there.
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
from collections.abc import Callable, Iterator
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
    locked, so concurrent calls from several Python threads restore the setting they found
    exactly once, when the last one leaves. A limit another thread sets with threadpoolctl
    while one of these sections runs is not coordinated with it (``_openblas_release``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._blas: list[Any] = []  # threadpoolctl's controllers of the loaded BLAS libraries
        self._saved: list[Any] | None = None  # their counts before the outermost section
        self._release: Callable[[], None] = lambda: None  # ``_openblas_release``
        self._available: bool | None = None

    def available(self) -> bool:
        if self._available is None:
            if os.environ.get("NYSTROM_PRIORS_NO_THREADPOOLCTL"):
                self._available = False
            else:
                try:
                    import scipy.linalg.cython_blas  # noqa: F401  (load the BLAS numba calls)
                    from threadpoolctl import ThreadpoolController

                    libs = ThreadpoolController().lib_controllers
                    self._blas = [lc for lc in libs if lc.user_api == "blas"]
                    self._release = _openblas_release()
                    self._available = True
                except Exception:
                    self._available = False
        return self._available

    def __enter__(self) -> _SingleThreadedBlas:
        available = self.available()
        with self._lock:
            if self._depth == 0 and available:
                with self._control():
                    # the counts to come back to are kept until a restore completes: a
                    # restore cut short (an interrupt) must not make one thread "the user's"
                    if self._saved is None:
                        self._saved = [lc.get_num_threads() for lc in self._blas]
                    try:
                        for lc in self._blas:
                            lc.set_num_threads(1)
                    except BaseException:  # cut short: undo, the section never started
                        self._restore()
                        raise
            self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                with self._control():
                    self._restore()

    @contextlib.contextmanager
    def _control(self) -> Iterator[None]:
        """The enclosed limit or restore is this thread's to make (``_openblas_release``)."""
        self._release()
        try:
            yield
        finally:
            self._release()

    def _restore(self) -> None:
        """Set every BLAS back to ``_saved`` (under the lock and the control); forget it only
        once all are set."""
        if self._saved is None:
            return
        for lc, n in zip(self._blas, self._saved, strict=True):
            if n is not None:
                lc.set_num_threads(n)
        self._saved = None


def _openblas_release() -> Callable[[], None]:
    """What lets the calling thread set OpenBLAS's process-wide thread count.

    threadpoolctl (3.8 and later) lets only one thread, the first to set a limit, change
    OpenBLAS's count, and silently ignores the others until that one calls
    ``clear_controlling_thread``, which ``ThreadpoolController.limit`` never does. The
    library's sections run in whichever thread calls it, and a restore can come from another
    thread than its limit, so each limit and restore releases the control before and after
    (``_SingleThreadedBlas._control``). They run under ``_SingleThreadedBlas``'s lock, one at
    a time; a ``threadpool_limits`` of the user's in another thread meanwhile is not
    serialised with them (threadpoolctl offers no lock to share). A no-op before 3.8.
    """
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    return (lambda: None) if clear is None else (lambda: clear(force=True))


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
