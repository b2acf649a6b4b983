"""``feature_names_in_``: the column names of a DataFrame seen in ``fit``, checked afterwards.

scikit-learn's convention, so that a model fitted on a ``pandas.DataFrame`` notices a frame
whose columns are renamed or reordered instead of silently reading its columns by position:

* ``fit`` stores the names when every column name is a string, stores nothing when none is,
  and refuses a mix (``TypeError``);
* later calls raise ``ValueError`` when the names differ (missing, unseen or reordered), and
  warn when names appear or disappear between ``fit`` and the call.

Only objects with a ``columns`` attribute (pandas, polars, ...) have names; nothing here
imports pandas.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import numpy as np


def feature_names(X: Any) -> np.ndarray | None:
    """The column names of a DataFrame-like ``X`` as an object array, or None.

    Raises ``TypeError`` when some names are strings and others are not (scikit-learn's rule:
    names are stored and checked only when they all are strings).
    """
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray):
        return None
    try:
        names = np.asarray(list(columns), dtype=object)
    except TypeError:
        return None
    if names.ndim != 1 or names.size == 0:
        return None
    is_str = np.array([isinstance(c, str) for c in names])
    if is_str.all():
        nul = next((c for c in names if c.endswith("\0")), None)
        if nul is not None:  # a saved model would come back with other names
            raise ValueError(
                f"Feature name {nul!r} ends with a NUL character, which numpy's string arrays "
                "(and so a saved model) drop; rename that column."
            )
        return names
    if is_str.any():
        kinds = sorted({type(c).__name__ for c in names})
        raise TypeError(
            "Feature names are only supported if all input features have string names, but "
            f"the input has {kinds} as column name types. Convert them all to strings "
            "(X.columns = X.columns.astype(str)) to have them stored and checked, or to a "
            "non-string type to leave them out."
        )
    return None


def record_feature_names(estimator: Any, X: Any) -> None:
    """Set (or, for input without string names, remove) ``estimator.feature_names_in_``."""
    names = feature_names(X)
    if names is not None:
        estimator.feature_names_in_ = names
    elif "feature_names_in_" in vars(estimator):
        del estimator.feature_names_in_


def check_feature_names(estimator: Any, X: Any, name: str = "X") -> None:
    """Compare X's column names with those seen in ``fit`` (see the module docstring);
    ``name``: the argument X was given as (``kernel``'s A and B)."""
    fitted = getattr(estimator, "feature_names_in_", None)
    names = feature_names(X)
    owner = type(estimator).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(
            f"{name} has feature names, but {owner} was fitted without feature names.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
        return
    if names is None:
        warnings.warn(
            f"{name} does not have valid feature names, but {owner} was fitted with feature names.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
        return
    if len(fitted) == len(names) and np.array_equal(fitted, names):
        return
    unseen = [n for n in names if n not in set(fitted)]
    missing = [n for n in fitted if n not in set(names)]
    lines = ["The feature names should match those that were passed during fit."]
    if unseen:
        lines.append(f"Feature names unseen at fit time: {_shown(unseen)}")
    if missing:
        lines.append(f"Feature names seen at fit time, yet now missing: {_shown(missing)}")
    if not unseen and not missing:
        lines.append("Feature names must be in the same order as they were in fit.")
    raise ValueError("\n".join(lines))


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this package, seen from the caller:
    warnings point at the user's line whatever wrappers (set_output, ...) lie between."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(2)
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level


def _shown(names: list, limit: int = 5) -> str:
    """At most ``limit`` names, then how many more."""
    head = ", ".join(repr(n) for n in names[:limit])
    more = len(names) - limit
    return head + (f", ... ({more} more)" if more > 0 else "")
