"""The ``kernel`` parameter of the factor learners, which is also their ``kernel()`` method.

``model.kernel`` reads the parameter as given (a name, a :class:`~nystrom_priors.KernelSpec`,
or None) and ``model.kernel(A, B)`` evaluates the learned kernel ``G_A G_B^T``: one attribute,
because scikit-learn's ``get_params`` and ``clone`` need the parameter under its own name
while the learners' public method has the same name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import KernelSpec

_NO_A = object()  # kernel() called without A: a message in the method's own terms


def missing_A(owner: Any) -> TypeError:
    """The error of ``kernel()`` called without A, in the method's own terms."""
    return TypeError(
        f"{type(owner).__name__}.kernel() missing its required argument A: "
        "kernel(A, B=None) gives the learned kernel k(A, B) (B defaults to A)."
    )


def _learned(owner: Any, A: Any, B: Any) -> np.ndarray:
    if A is _NO_A:
        raise missing_A(owner)
    return owner._learned_kernel(A, B)


_KERNEL_DOC = """The learned kernel ``k(A, B) = G_A G_B^T`` (a method), and the ``kernel``
    parameter (an attribute).

    Called, ``model.kernel(A, B=None)`` evaluates a block of the learned kernel between the
    rows of A and those of B, the inner products of their factor rows (``transform``): it
    is how a kernel method downstream (an SVM with ``kernel="precomputed"``, kernel k-means)
    uses the learned kernel on new samples.

    Parameters
    ----------
    A : array-like or sparse matrix of shape (n_A, n_features)
        Samples (of the learner's input type).
    B : array-like or sparse matrix of shape (n_B, n_features), optional
        Samples; A when omitted.

    Returns
    -------
    K : ndarray of shape (n_A, n_B)
        ``transform(A) @ transform(B).T``.

    Read, ``model.kernel`` is the ``kernel`` parameter as given to ``__init__`` (``"rbf"``, a
    :class:`~nystrom_priors.KernelSpec`), equal to it and copied or pickled as it, as
    scikit-learn's ``get_params`` and ``clone`` need; the learners without that parameter
    (BCDNPKL) have the method alone.
    """


class _KernelName(str):
    __doc__ = _KERNEL_DOC

    def __call__(self, A: Any = _NO_A, B: Any = None) -> np.ndarray:
        return _learned(self._owner, A, B)

    def __reduce__(self):  # copies and pickles are the plain string
        return (str, (str(self),))


class _KernelSpecParam(KernelSpec):
    """The ``kernel`` parameter when a :class:`KernelSpec`: the spec (equal to it, copied as
    it) whose call is the learned kernel, as a name's (the spec's own is the base kernel)."""

    @classmethod
    def of(cls, spec: KernelSpec, owner: Any) -> _KernelSpecParam:
        view = cls(spec.name, spec.gamma, spec.degree, spec.coef0)
        object.__setattr__(view, "_owner", owner)
        return view

    def _plain(self) -> KernelSpec:
        return KernelSpec(self.name, self.gamma, self.degree, self.coef0)

    def __call__(self, A: Any = _NO_A, B: Any = None) -> np.ndarray:  # type: ignore[override]
        return _learned(self._owner, A, B)

    def __eq__(self, other: Any) -> bool:
        return self._plain() == other

    def __hash__(self) -> int:
        return hash(self._plain())

    def __repr__(self) -> str:
        return repr(self._plain())

    def __reduce__(self):
        return (KernelSpec, (self.name, self.gamma, self.degree, self.coef0))


class _KernelAttribute:
    """Data descriptor reconciling the ``kernel`` parameter with the ``kernel()`` method.

    The parameter is stored unchanged in ``__dict__['kernel']`` (so ``get_params`` returns the
    very object passed to ``__init__``, as ``sklearn.base.clone`` requires); attribute access
    returns it wrapped so that it is also callable.
    """

    __doc__ = _KERNEL_DOC

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        raw = obj.__dict__.get("kernel", None)
        if isinstance(raw, str):
            wrapped = _KernelName(raw)
            wrapped._owner = obj
            return wrapped
        if raw is None:
            return obj._learned_kernel
        if isinstance(raw, KernelSpec):  # its own __call__ is the base kernel (or, for a
            # view read from another model, that model's learned kernel): viewed for this one
            return _KernelSpecParam.of(raw, obj)
        return raw

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["kernel"] = value
