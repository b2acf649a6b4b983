"""Progress of long fits: ``logging`` records and, when tqdm is installed, a progress bar.

Every learner with a long loop (the lambda path of GeneralizedNystrom, the Bregman sweeps, the
BCD sweeps, kernel k-means restarts) takes ``verbose``:

* ``0`` / ``False`` (default): silent;
* ``1`` / ``True``: a tqdm bar on stderr when tqdm is importable, and INFO records on the
  ``nystrom_priors`` logger at the start and end of the loop;
* ``2``: an INFO record for every step as well (no bar).

Records go to ``logging.getLogger("nystrom_priors")``. If nothing in the logging hierarchy has a
handler when a verbose fit starts, a stderr handler is attached to that logger (once), so
``verbose=1`` prints without any logging set-up; configured applications get the records
through their own handlers instead.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np

from ._validation import check_scalar

logger = logging.getLogger("nystrom_priors")
_HANDLER: logging.Handler | None = None


def _ensure_output() -> None:
    global _HANDLER
    if _HANDLER is None and not logger.hasHandlers():
        _HANDLER = logging.StreamHandler(sys.stderr)
        _HANDLER.setFormatter(logging.Formatter("[nystrom_priors] %(message)s"))
        logger.addHandler(_HANDLER)
    if _HANDLER is not None and (logger.level == logging.NOTSET or logger.level > logging.INFO):
        logger.setLevel(logging.INFO)


def check_verbose(verbose: Any) -> int:
    if isinstance(verbose, (bool, np.bool_)):  # numpy reductions give np.bool_
        return int(verbose)
    return int(check_scalar(verbose, "verbose", kind="int", lo=0))


class Progress:
    """Report the steps of one loop.

    Parameters
    ----------
    verbose : bool or int
    total : int
        Expected number of steps (an upper bound is fine: the bar is closed early).
    desc : str
        What the loop does, e.g. ``"LogDetKernelLearner sweeps"``.
    unit : str
    """

    def __init__(self, verbose: Any, total: int, desc: str, unit: str = "it") -> None:
        self.level = check_verbose(verbose)
        self.desc = desc
        self.total = int(total)
        self.done = 0
        self.bar = None
        if not self.level:
            return
        _ensure_output()
        logger.info("%s: start (at most %d %s)", desc, self.total, unit)
        if self.level == 1:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(
                    total=self.total, desc=desc, unit=unit, file=sys.stderr, leave=False
                )

    def update(self, n: int = 1, **stats: float) -> None:
        if not self.level:
            return
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            if stats:
                self.bar.set_postfix({k: f"{v:.3g}" for k, v in stats.items()}, refresh=False)
        if self.level >= 2:
            detail = ", ".join(f"{k}={v:.4g}" for k, v in stats.items())
            logger.info("%s: %d/%d %s", self.desc, self.done, self.total, detail)

    def close(self, message: str = "") -> None:
        if not self.level:
            return
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        logger.info(
            "%s: done after %d step(s)%s", self.desc, self.done, f"; {message}" if message else ""
        )

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:  # an exception inside the loop: do not leave a dangling bar
            self.bar.close()
            self.bar = None
