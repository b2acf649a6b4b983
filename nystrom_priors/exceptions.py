"""Warnings and exceptions raised by :mod:`nystrom_priors`."""

__all__ = [
    "ConvergenceWarning",
    "InfeasibleConstraintsWarning",
    "NotFittedError",
    "DataConversionWarning",
]


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before meeting its tolerance.

    The message names the parameter to change (usually ``max_iter`` or ``tol``).
    """


class InfeasibleConstraintsWarning(UserWarning):
    """The side information cannot be satisfied by the model as configured.

    Raised, for example, when hard Bregman constraints are infeasible at the requested
    rank; the message recommends a remedy (such as a finite slack ``gamma``).
    """


class DataConversionWarning(UserWarning):
    """Input data was converted to a different dtype or shape."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit`` was called.

    Inherits from both ``ValueError`` and ``AttributeError`` like scikit-learn's
    ``NotFittedError``, so ``except ValueError`` and ``hasattr`` both behave.
    """
