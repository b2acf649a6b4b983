"""scikit-learn's ``set_output`` protocol, without importing scikit-learn or pandas.

``set_output(transform="pandas")`` makes ``transform`` and ``fit_transform`` return a
``pandas.DataFrame``: columns ``get_feature_names_out()``, index the input's index when the
input is a DataFrame (a default ``RangeIndex`` otherwise), the same values as the default
ndarray output. With no setting of its own an estimator follows scikit-learn's global
``transform_output`` (``sklearn.set_config`` / ``config_context``) -- read only when
scikit-learn is already imported, since nobody can have set it otherwise. The setting is
stored in ``_sklearn_output_config`` like scikit-learn's ``_SetOutputMixin``, so ``clone``
keeps it and ``Pipeline.set_output`` / ``ColumnTransformer.set_output`` reach the learners.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ._fit_lock import fit_lock

_MODES = ("default", "pandas")
_METHODS = ("transform", "fit_transform")


def _is_pandas(obj: Any) -> bool:
    return type(obj).__module__.startswith("pandas")


def check_output_mode(transform: Any) -> None:
    """Refuse an unknown ``set_output(transform=...)`` value."""
    if transform not in _MODES:
        raise ValueError(
            f"set_output(transform=...) must be one of {list(_MODES)} or None, got {transform!r}."
        )
    if transform == "pandas" and importlib.util.find_spec("pandas") is None:
        raise ImportError("set_output(transform='pandas') needs pandas, which is not installed.")


def output_mode(estimator: Any, method: str) -> str:
    """The container ``method`` returns: the estimator's own setting, else scikit-learn's
    global ``transform_output`` (when scikit-learn is loaded), else ``"default"``."""
    own = getattr(estimator, "_sklearn_output_config", {}).get(method)
    if own is not None:
        return own
    sklearn = sys.modules.get("sklearn")
    if sklearn is not None and hasattr(sklearn, "get_config"):
        mode = sklearn.get_config().get("transform_output", "default")
        if mode not in _MODES:
            raise ValueError(
                f"scikit-learn's transform_output={mode!r} is not supported by "
                f"{type(estimator).__name__}; use one of {list(_MODES)}."
            )
        return mode
    return "default"


def wrap_output(estimator: Any, method: str, data: Any, X: Any) -> Any:
    """``data`` (the ndarray output of ``method`` on ``X``) in the configured container."""
    if output_mode(estimator, method) == "default" or not isinstance(data, np.ndarray):
        return data  # already a DataFrame (a nested wrapped call), or a lazy dask array
    import pandas as pd

    index = X.index if isinstance(X, pd.DataFrame) else None
    return pd.DataFrame(data, index=index, columns=estimator.get_feature_names_out(), copy=False)


def wrap_method(fn: Callable, method: str) -> Callable:
    """``fn`` (a ``transform`` or ``fit_transform``) returning the configured container, under
    the instance's fit lock as a whole, its container too: a ``fit_transform``'s rows and
    column names are those of the model it fitted, and a ``transform`` sees the model before
    or after a fit another thread runs, never one being built."""
    if getattr(fn, "_wraps_output", False):
        return fn

    @functools.wraps(fn)
    def wrapped(self: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        with fit_lock(self):
            return wrap_output(self, method, fn(self, X, *args, **kwargs), X)

    wrapped._wraps_output = True
    return wrapped


def wrap_class(cls: type) -> None:
    """Wrap the ``transform`` / ``fit_transform`` that ``cls`` itself defines."""
    for method in _METHODS:  # both follow the "transform" setting, as in scikit-learn
        if method in cls.__dict__:
            setattr(cls, method, wrap_method(cls.__dict__[method], "transform"))
