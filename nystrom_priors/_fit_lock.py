"""One lock per estimator instance, so that its fits run one at a time across threads.

A fit sets its attributes one at a time; two threads fitting one instance at once would
leave a model mixing both. ``_base.atomic_fit`` and ``_output.wrap_method`` (every
``fit_transform``, its output container too) take ``fit_lock(estimator)``, a re-entrant lock
(a fit inside ``fit_transform`` takes it again).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any

# one lock per estimator instance that has been fitted, keyed by id (an instance's __eq__
# and __hash__ play no part) and dropped when the instance is collected
_FIT_LOCKS: dict[int, Any] = {}
_FIT_LOCKS_GUARD = threading.Lock()


def fit_lock(estimator: Any) -> Any:
    """The re-entrant lock that runs the fits of one instance one at a time; a no-op context
    for an instance that cannot be weakly referenced (its entry could never be dropped)."""
    key = id(estimator)
    with _FIT_LOCKS_GUARD:
        lock = _FIT_LOCKS.get(key)
        if lock is None:
            try:  # dict.pop needs no guard: the finalizer may run inside a guarded block
                weakref.finalize(estimator, _FIT_LOCKS.pop, key, None)
            except TypeError:
                return contextlib.nullcontext()
            lock = _FIT_LOCKS[key] = threading.RLock()
    return lock


def _fresh_fit_locks() -> None:
    """In a forked child: no thread holds a lock any more, whatever the parent's did."""
    global _FIT_LOCKS_GUARD
    _FIT_LOCKS_GUARD = threading.Lock()
    _FIT_LOCKS.update((key, threading.RLock()) for key in list(_FIT_LOCKS))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_fit_locks)
