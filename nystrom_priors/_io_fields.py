"""Checked access to a saved model's fields: the primitives of :mod:`._io_schema`.

``_Fields`` reads one file's fitted attributes with type, shape, dtype and range checks and
records which were read (so that the schema can refuse an attribute no check read);
``_agrees`` refuses a factor that does not agree with the matrix it factors. Every refusal is
an ``InvalidModel`` naming the file and the field, which ``load`` turns into a ``ValueError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_F64 = (np.dtype(np.float64),)
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
_I64 = (np.dtype(np.int64),)


class InvalidModel(Exception):
    """Internal: a model file (or a model to save) that breaks the schema; callers get a
    ValueError with the same message."""


class _Fields:
    """Checked access to the fitted attributes of one file; records which were read."""

    def __init__(self, where: str, attrs: dict[str, Any], params: dict[str, Any]) -> None:
        self.where = where
        self.attrs = attrs
        self.params = params
        self.used: set[str] = set()

    def fail(self, field: str, problem: str) -> InvalidModel:
        return InvalidModel(f"{self.where}: field {field!r}: {problem}.")

    def get(self, name: str) -> Any:
        self.used.add(name)
        if name not in self.attrs:
            raise self.fail(name, "missing (a required fitted attribute)")
        return self.attrs[name]

    def absent(self, name: str, why: str) -> None:
        if name in self.attrs:
            raise self.fail(name, f"unexpected ({why})")

    # -- scalars ------------------------------------------------------------------------
    def integer(self, name: str, lo: int | None = None, hi: int | None = None) -> int:
        v = self.get(name)
        if type(v) is not int:
            raise self.fail(name, f"expected an integer, got {_kind(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.fail(name, f"{v} is outside [{lo}, {'inf' if hi is None else hi}]")
        return v

    def real(
        self,
        name: str,
        *,
        finite: bool = False,
        nan: bool = True,
        lo: float | None = None,
        strict: bool = False,
    ) -> float:
        v = self.get(name)
        if type(v) is not float:
            raise self.fail(name, f"expected a float, got {_kind(v)}")
        if math.isnan(v):
            if nan and not finite:
                return v
            raise self.fail(name, "NaN")
        if finite and math.isinf(v):
            raise self.fail(name, f"must be finite, got {v}")
        if lo is not None and (v <= lo if strict else v < lo):
            raise self.fail(name, f"must be {'>' if strict else '>='} {lo}, got {v!r}")
        return v

    def boolean(self, name: str) -> bool:
        v = self.get(name)
        if type(v) is not bool:
            raise self.fail(name, f"expected true or false, got {_kind(v)}")
        return v

    def option(self, name: str, options: tuple[str, ...]) -> str:
        v = self.get(name)
        if not isinstance(v, str) or v not in options:
            raise self.fail(name, f"expected one of {list(options)}, got {_kind(v)}")
        return v

    # -- arrays -------------------------------------------------------------------------
    def array(
        self,
        name: str,
        shape: tuple,
        why: str = "",
        *,
        dtypes: tuple = _F64,
        finite: bool = True,
        positive: bool = False,
        nonneg: bool = False,
        kinds: str | None = None,
    ) -> np.ndarray:
        """An array attribute. ``shape`` holds ints (required extents) or None (free);
        ``why`` names the fields the extents come from."""
        a = self.get(name)
        if not isinstance(a, np.ndarray):
            raise self.fail(name, f"expected an array, got {_kind(a)}")
        if kinds is not None:
            if a.dtype.kind not in kinds:
                wanted = [
                    w for k, w in (("biuf", "numbers"), ("US", "strings")) if set(k) & set(kinds)
                ]
                raise self.fail(name, f"dtype {a.dtype}, expected {' or '.join(wanted)}")
        elif a.dtype not in dtypes:
            raise self.fail(name, f"dtype {a.dtype}, expected {' or '.join(map(str, dtypes))}")
        if a.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(a.shape, shape)
        ):
            want = "(" + ", ".join("*" if w is None else str(w) for w in shape) + ")"
            raise self.fail(
                name, f"shape {a.shape}, expected {want}" + (f" ({why})" if why else "")
            )
        if a.dtype.kind == "f":
            if finite and not np.isfinite(a).all():
                raise self.fail(name, "non-finite values (NaN or inf)")
            if positive and not (a > 0).all():
                raise self.fail(name, "values must be > 0")
            if nonneg and not (a >= 0).all():
                raise self.fail(name, "values must be >= 0")
        return a

    def pairs(self, name: str, n: int | None, *, strict: bool = True) -> np.ndarray:
        """Rows ``[i, j, +-1]`` with ``0 <= i < j`` (``i <= j`` unless strict) ``< n``."""
        P = self.array(name, (None, 3), dtypes=_I64)
        if P.size:
            i, j, s = P[:, 0], P[:, 1], P[:, 2]
            ok = (i >= 0) & ((i < j) if strict else (i <= j)) & np.isin(s, (-1, 1))
            if n is not None:
                ok &= j < n
            if not ok.all():
                k = int(np.flatnonzero(~ok)[0])
                rule = "i < j" if strict else "i <= j"
                bound = f" < n = {n} (X_fit_ rows)" if n is not None else ""
                raise self.fail(
                    name, f"row {k} = {P[k].tolist()} is not [i, j, +-1] with 0 <= {rule}{bound}"
                )
        return P


# factors agree with their matrices to round-off (about 1e-15) in every model ``save`` writes
_AGREE = 1e-6
_PROBED = " on random probes"


def _agrees(
    f: _Fields, name: str, got: np.ndarray, want: np.ndarray, what: str, how: str = _PROBED
) -> None:
    """Refuse ``name`` unless ``got`` equals ``want`` to ``_AGREE`` (relative Frobenius): both
    are the same linear map applied to random probes (O(m^2), not an m^3 product), or the same
    invariants of a matrix and of its spectrum (``how`` says which)."""
    with np.errstate(all="ignore"):
        top = max(float(np.abs(got).max(initial=0.0)), float(np.abs(want).max(initial=0.0)))
        if 0.0 < top < math.inf:  # in units of the largest entry: no norm over- or underflows
            got, want = got / top, want / top
        scale = max(float(np.linalg.norm(got)), float(np.linalg.norm(want)))
        diff = float(np.linalg.norm(got - want))
    if not diff <= _AGREE * scale:  # NaN (overflow) is refused too
        rel = diff / scale if scale > 0 else math.inf
        raise f.fail(
            name,
            f"does not agree with {what} (relative difference {rel:.2g}{how}, "
            f"at most {_AGREE:g} in a saved model): the file was altered or is damaged",
        )


def _probes(rows: int) -> np.ndarray:  # four fixed random columns for ``_agrees``
    return np.random.default_rng(0).standard_normal((rows, 4))


def _kind(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} and dtype {v.dtype}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
