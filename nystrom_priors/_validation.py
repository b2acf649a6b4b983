"""Input validation shared by every public entry point.

Every check raises ``TypeError`` (wrong kind of object or dtype) or ``ValueError`` (right kind,
invalid value) with a message that says what was received and what is valid. Validation happens
here, in Python, once; the jitted kernels in :mod:`nystrom_priors._numba` assume valid input.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .exceptions import NotFittedError

FLOAT_DTYPES = (np.float64, np.float32)
_TooHardError = getattr(np, "exceptions", np).TooHardError  # numpy < 1.25: np.*


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:200]


def _first_text_column(arr: np.ndarray, X: Any) -> str:
    """Where an object array that is not numbers holds its first non-number: the column (by
    its DataFrame name when there is one) and what to do, for the refusal's message."""
    if arr.ndim != 2:
        return "."
    for j in range(arr.shape[1]):
        bad = next((v for v in arr[:, j] if not _real(v)), None)
        if bad is not None:
            columns = getattr(X, "columns", None)
            col = f"column {columns[j]!r} (index {j})" if columns is not None else f"column {j}"
            return (
                f". Its {col} holds values that are not numbers (e.g. {bad!r}): encode "
                "categorical features as numbers first (e.g. one-hot), or drop them."
            )
    return "."


def check_array(
    X: Any,
    *,
    name: str = "X",
    dtype: Any = "float",
    ensure_2d: bool = True,
    min_samples: int = 1,
    min_features: int = 1,
    allow_nonfinite: bool = False,
    copy: bool = False,
    accept_sparse: bool = False,
) -> Any:
    """Validate a data array and return it C-contiguous in a float dtype.

    Parameters
    ----------
    X : array-like
        The input. Lists, tuples, read-only and non-contiguous arrays are accepted.
    name : str
        Name used in error messages.
    dtype : {"float"} or numpy dtype
        ``"float"`` keeps float32 and float64 and casts every other real numeric dtype (bool,
        integers, float16) to float64, the scikit-learn convention. A numpy dtype casts to it.
    ensure_2d : bool
        Require ``X.ndim == 2``.
    min_samples, min_features : int
        Minimum number of rows and columns.
    allow_nonfinite : bool
        Skip the NaN/inf check.
    copy : bool
        Always return a new array.
    accept_sparse : bool
        Accept ``scipy.sparse`` input (any format) and return it as CSR (see
        :func:`check_csr`); otherwise sparse input is refused with a hint.

    Returns
    -------
    ndarray or scipy.sparse CSR matrix / array
        C-contiguous float32 or float64 array (a view of ``X`` when no conversion is needed),
        or, with ``accept_sparse``, a canonical CSR matrix for sparse input.
    """
    if X is None:
        raise TypeError(f"{name} must be an array-like of numbers, got None.")
    if accept_sparse and is_sparse(X):
        return check_csr(
            X,
            name=name,
            dtype=dtype,
            min_samples=min_samples if ensure_2d else 0,
            min_features=min_features if ensure_2d else 0,
            allow_nonfinite=allow_nonfinite,
            copy=copy,
        )
    if hasattr(X, "__array_function__") and not isinstance(X, np.ndarray):
        # dask arrays, sparse matrices, ... : refuse to materialise silently
        mod = type(X).__module__.split(".")[0]
        if mod in ("dask", "sparse") or hasattr(X, "tocsr"):
            valid = "numpy array-like or scipy.sparse matrix" if accept_sparse else "dense array"
            raise TypeError(
                f"{name} must be a {valid}, got "
                f"{type(X).__module__}.{type(X).__name__}; convert it with np.asarray first."
            )
    if hasattr(X, "tocsr"):
        raise TypeError(
            f"{name} must be a dense array, got a sparse matrix of type {type(X).__name__}; "
            "call .toarray() first."
        )
    refuse_masked(X, name)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged nested lists, exotic objects
        raise TypeError(f"{name} could not be converted to a numeric array: {exc}") from None
    kind = arr.dtype.kind
    if kind == "O":
        # object arrays of numbers are cast (scikit-learn's convention); anything else is
        # refused with numpy's own message ("argument must be a string or a real number")
        try:
            cast = arr.astype(np.float64)
        except OverflowError:  # a Python int or Fraction beyond float64 (numpy: "too large")
            big = next((v for v in arr.ravel() if _huge(v)), None)
            integral = isinstance(big, numbers.Integral)
            what = f"an integer near 2^{abs(big).bit_length()}" if integral else "a number"
            raise ValueError(
                f"{name} holds {what} beyond float64's range (about 2^1024 = 1.8e308); rescale it."
            ) from None
        except (TypeError, ValueError) as exc:
            # pandas' nullable columns (Int64, boolean, ...) hold pd.NA: say it is missing data
            if any(is_missing(v) for v in arr.ravel()):
                other = next((v for v in arr.ravel() if not is_missing(v) and not _real(v)), None)
                raise ValueError(_missing(name, other)) from None
            raise TypeError(
                f"{name} has dtype object and could not be converted to float64: {exc}"
                + _first_text_column(arr, X)
            ) from None
        # None casts to NaN: name it as missing, as pd.NA is above, not as a NaN
        if not allow_nonfinite and np.isnan(cast).any() and any(map(is_missing, arr.ravel())):
            raise ValueError(_missing(name, None))
        arr = cast
        kind = "f"
    if kind == "c":
        raise ValueError(
            f"Complex data not supported: {name} has dtype {arr.dtype}; pass its real part "
            "(or magnitude) as float32 or float64."
        )
    if kind not in "biuf":
        what = {
            "U": "string",
            "S": "bytes",
            "M": "datetime",
            "m": "timedelta",
            "V": "structured",
        }.get(kind, kind)
        raise TypeError(
            f"{name} must hold real numbers (bool, integer or float dtype), got dtype "
            f"{arr.dtype} ({what}). Convert it to float32 or float64 first."
        )
    if ensure_2d and arr.ndim != 2:
        hint = ""
        if arr.ndim == 1:
            hint = (
                " Reshape your data with X.reshape(-1, 1) if it holds one feature, or "
                "X.reshape(1, -1) if it holds one sample."
            )
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features), got a "
            f"{arr.ndim}-D array of shape {arr.shape}.{hint}"
        )
    if ensure_2d:
        if arr.shape[0] < min_samples:
            raise ValueError(
                f"{name} has {arr.shape[0]} sample(s) (shape={arr.shape}, n_samples = "
                f"{arr.shape[0]}) while a minimum of {min_samples} is required."
            )
        if arr.shape[1] < min_features:
            raise ValueError(
                f"{name} has {arr.shape[1]} feature(s) (shape={arr.shape}) while a minimum of "
                f"{min_features} is required."
            )
    if dtype == "float":
        target = float_target(arr.dtype)
    else:
        target = np.dtype(dtype)
    out = np.ascontiguousarray(arr, dtype=target)
    if copy and np.shares_memory(out, arr):
        out = out.copy()
    if not allow_nonfinite and not _all_finite(out):
        raise nonfinite_error(name, out)
    return out


def float_target(dtype: np.dtype) -> np.dtype:
    """The float dtype computations on data of ``dtype`` run in: float32 or float64 as given,
    in native byte order (``'>f4'`` compares unequal to float32, and was computed and returned
    as float64), else float64."""
    if dtype in FLOAT_DTYPES:
        return dtype  # the very dtype: no copy of data already usable
    native = dtype.newbyteorder("=")
    return native if native in FLOAT_DTYPES else np.dtype(np.float64)


def _huge(v: Any) -> bool:
    """Whether one object overflows float64 when converted."""
    try:
        float(v)
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False
    return False


def _real(v: Any) -> bool:
    """Whether one object converts to a float as ``astype(np.float64)`` would convert it."""
    try:
        np.float64(v)
    except (TypeError, ValueError):
        return False
    return True


def nonfinite_error(name: str, arr: np.ndarray) -> ValueError:
    """The error for an array known to hold NaN or infinite entries: how many, and where."""
    bad = ~np.isfinite(arr)
    n_nan = int(np.isnan(arr).sum())
    n_inf = int(bad.sum()) - n_nan
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return ValueError(
        f"{name} must contain only finite values, got {n_nan} NaN and {n_inf} infinite "
        f"entries (first at index {first})."
    )


def is_sparse(X: Any) -> bool:
    """Whether ``X`` is a ``scipy.sparse`` matrix or array (without importing scipy)."""
    return not isinstance(X, np.ndarray) and all(hasattr(X, a) for a in ("tocsr", "nnz", "format"))


def refuse_masked(x: Any, name: str) -> None:
    """Refuse a numpy masked array with masked entries: ``np.asarray`` would silently read
    the values behind the mask."""
    if isinstance(x, np.ma.MaskedArray) and np.ma.getmaskarray(x).any():
        mask = np.ma.getmaskarray(x)
        first = tuple(int(i) for i in np.argwhere(mask)[0])
        raise ValueError(
            f"{name} is a masked array with {int(mask.sum())} masked entries (the first at "
            f"index {first}), which cannot be evaluated; fill them ({name}.filled(value)) or "
            "drop those entries first."
        )


def dense_array(x: Any, name: str, form: str) -> np.ndarray:
    """``np.asarray(x)``, refusing a scipy sparse matrix, a masked array with masked entries
    and a ragged sequence with messages that start with ``form`` (what ``name`` must be)."""
    refuse_masked(x, name)
    if is_sparse(x):
        raise TypeError(
            f"{form}; got a sparse matrix of type {type(x).__name__} and shape {x.shape}. "
            f"Sparse {name} are not accepted: pass a dense array, e.g. {name}.toarray()."
        )
    try:
        return np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{form}; got a ragged sequence ({exc}).") from None


def _missing(name: str, other: Any) -> str:
    """The message for missing values in X (and for ``other``, a value that is no number)."""
    also = "" if other is None else f" It also holds values that are not numbers (e.g. {other!r})"
    return (
        f"{name} has missing values (pd.NA or None), which a kernel cannot evaluate; impute "
        "them or drop those samples first." + (also and also + ": encode or drop those features.")
    )


def is_missing(v: Any) -> bool:
    """Whether one entry of an object array is a missing value: None, pandas' NA or NaT
    (detected by type name, without importing pandas)."""
    return v is None or type(v).__name__ in ("NAType", "NaTType")


def check_csr(
    X: Any,
    *,
    name: str = "X",
    dtype: Any = "float",
    min_samples: int = 1,
    min_features: int = 1,
    allow_nonfinite: bool = False,
    copy: bool = False,
) -> Any:
    """Validate a ``scipy.sparse`` input and return it as canonical CSR in a float dtype.

    CSC, COO, DOK, LIL, ... are converted (``.tocsr()``; a matrix stays a matrix, an array
    an array). Canonical means sorted column indices within a row and no duplicate entries
    (duplicates are summed, scipy's meaning of them): the jitted kernels compute
    ``||x||^2 = sum_p data_p^2`` per row, which duplicates would get wrong. The dtype
    follows :func:`check_array`; only the stored values are checked for finiteness. Nothing
    of size ``n x d`` is allocated.
    """
    if getattr(X, "ndim", 2) != 2:
        raise ValueError(
            f"{name} must be a 2-D sparse matrix of shape (n_samples, n_features), got a "
            f"{X.ndim}-D sparse array of shape {X.shape}."
        )
    kind = np.dtype(X.dtype).kind
    if kind == "c":
        raise ValueError(
            f"Complex data not supported: {name} has dtype {X.dtype}; pass its real part "
            "as float32 or float64."
        )
    if kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got a sparse matrix of dtype {X.dtype}.")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s) (shape={X.shape}, n_samples = {n}) while a minimum of "
            f"{min_samples} is required."
        )
    if d < min_features:
        raise ValueError(
            f"{name} has {d} feature(s) (shape={X.shape}) while a minimum of {min_features} "
            "is required."
        )
    if dtype == "float":
        target = float_target(X.dtype)
    else:
        target = np.dtype(dtype)
    fmt = getattr(X, "format", None)
    _check_sparse_structure(X, fmt, name)
    out = X.tocsr(copy=copy) if fmt == "csr" else X.tocsr()
    if out.dtype != target:
        out = out.astype(target)
    if not out.has_canonical_format:
        out = out.copy() if out is X else out
        out.sum_duplicates()  # also sorts the indices
    if not out.has_sorted_indices:
        out = out.copy() if out is X else out
        out.sort_indices()
    if copy and out is X:
        out = out.copy()
    if not allow_nonfinite and not np.isfinite(out.data).all():
        bad = ~np.isfinite(out.data)
        n_nan = int(np.isnan(out.data).sum())
        n_inf = int(bad.sum()) - n_nan
        p = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(out.indptr, p, side="right") - 1)
        raise ValueError(
            f"{name} must contain only finite values, got {n_nan} NaN and {n_inf} infinite "
            f"stored entries (first at index {(row, int(out.indices[p]))})."
        )
    return out


def _check_sparse_structure(X: Any, fmt: Any, name: str) -> None:
    """Refuse a sparse matrix whose index arrays contradict its shape (scipy trusts them: an
    index out of range is read or written out of bounds by its conversions and by the jitted
    kernels). O(nnz) time, O(n) memory; the matrix is not modified."""
    n, d = X.shape
    if fmt in ("csr", "csc", "bsr"):
        R, C = X.blocksize if fmt == "bsr" else (1, 1)
        major, minor = (n // R, d // C) if fmt != "csc" else (d, n)
        indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
        where = f"{name} is a malformed {fmt.upper()} sparse matrix of shape {X.shape}: "
        if indptr.ndim != 1 or indptr.shape[0] != major + 1 or indptr.dtype.kind not in "iu":
            raise ValueError(
                f"{where}indptr must be an integer array of length {major + 1}, got "
                f"{indptr.dtype} of shape {indptr.shape}."
            )
        nnz = int(indptr[-1])
        if int(indptr[0]) != 0 or nnz > min(indices.shape[0], np.shape(X.data)[0]):
            raise ValueError(
                f"{where}indptr must start at 0 and end at most at len(indices) = "
                f"{indices.shape[0]}, got indptr[0] = {indptr[0]} and indptr[-1] = {nnz}."
            )
        problem = compressed_index_problem(indptr, indices[:nnz], minor)
        if problem is not None:
            raise ValueError(f"{where}{problem[0]} {problem[1]}.")
    elif fmt == "coo":
        where = f"{name} is a malformed COO sparse matrix of shape {X.shape}: "
        coords = getattr(X, "coords", None) or (X.row, X.col)
        for axis, (idx, size) in enumerate(zip(coords, X.shape)):
            bad = _index_out_of_range(np.asarray(idx), size)
            if bad is not None:
                raise ValueError(f"{where}{('row', 'col')[axis]} {bad}.")


def compressed_index_problem(
    indptr: np.ndarray, indices: np.ndarray, minor: int
) -> tuple[str, str] | None:
    """``(part, problem)`` for offsets ``indptr`` that decrease or ``indices`` outside
    ``[0, minor)`` of a compressed (CSR / CSC) matrix, None when both are sound. Shared by the
    checks of user input and of model files."""
    steps = np.diff(indptr)
    if (steps < 0).any():
        k = int(np.flatnonzero(steps < 0)[0])
        return "indptr", (
            f"must be non-decreasing, got indptr[{k}] = {indptr[k]} > "
            f"indptr[{k + 1}] = {indptr[k + 1]}"
        )
    bad = _index_out_of_range(indices, minor)
    return None if bad is None else ("indices", bad)


def _index_out_of_range(idx: np.ndarray, size: int) -> str | None:
    """The problem of an index array with an entry outside ``[0, size)``, else None."""
    if idx.size == 0:
        return None
    lo, hi = int(idx.min()), int(idx.max())
    if lo >= 0 and hi < size:
        return None
    return f"holds {lo if lo < 0 else hi}; valid indices are in [0, {size - 1}]"


def abs_max(a: np.ndarray) -> float:
    """``max |x|`` of a 2-D array, not finite when it holds a NaN or an infinity.

    One parallel jitted pass over a C-contiguous float array above 2^16 entries, where
    ``a.max()`` and ``a.min()`` plus a finiteness check would read it three times on one
    thread (the kernel is imported here, not at package import, so ``import nystrom_priors``
    stays free of numba); other large arrays (memmaps, views, integers) by row chunks, never
    a temporary of a's size."""
    if a.size <= (1 << 16):
        return float(np.abs(a).max(initial=0.0))
    if a.dtype in FLOAT_DTYPES and a.flags.c_contiguous:
        from ._numba._extrapolate import abs_max as _jitted
        from ._threads import numba_threads

        with numba_threads(4.0 * a.size):  # memory-bound: about 4 flops' time per entry
            return float(_jitted(a, max(1, (1 << 16) // a.shape[1])))
    step = max(1, (1 << 22) // max(1, a.shape[1]))
    # np.max, not max(): it propagates a NaN from any chunk
    return float(np.max([np.abs(a[s : s + step]).max() for s in range(0, a.shape[0], step)]))


def _all_finite(a: np.ndarray) -> bool:
    """np.isfinite(a).all() without an array of a's size (memmaps stay out of core)."""
    if a.ndim < 2 or a.size <= (1 << 22):
        return bool(np.isfinite(a).all())
    return bool(np.isfinite(abs_max(a)))


def check_n_features(
    X: np.ndarray, expected: int, *, name: str = "X", estimator: str = "the estimator"
) -> None:
    """Raise if ``X`` does not have the number of features seen in ``fit`` (scikit-learn's
    wording, so its estimator checks recognise it)."""
    if X.shape[1] != expected:
        raise ValueError(
            f"{name} has {X.shape[1]} features, but {estimator} is expecting {expected} "
            "features as input (the number seen in fit)."
        )


def check_random_state(random_state: Any) -> np.random.Generator:
    """Turn ``None``, an int, a ``Generator`` or a ``RandomState`` into a ``Generator``."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        # consume the legacy generator so repeated calls differ, as scikit-learn does
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, a non-negative int, a numpy Generator or a RandomState, "
        f"got {_describe(random_state)}."
    )


def check_random_state_param(random_state: Any, name: str = "random_state") -> None:
    """Validate a ``random_state`` parameter without drawing from it (``check_random_state``
    consumes a legacy ``RandomState``)."""
    if random_state is None or isinstance(
        random_state, (np.random.Generator, np.random.RandomState)
    ):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {random_state}.")
        return
    raise TypeError(
        f"{name} must be None, a non-negative int, a numpy Generator or a RandomState, got "
        f"{_describe(random_state)}."
    )


def check_scalar(
    value: Any,
    name: str,
    *,
    kind: str = "real",
    lo: float | None = None,
    hi: float | None = None,
    lo_closed: bool = True,
    hi_closed: bool = True,
    allow_inf: bool = False,
) -> float | int:
    """Validate a scalar parameter and return it as a Python ``float`` or ``int``.

    ``kind`` is ``"real"`` or ``"int"``. Bounds are inclusive unless ``lo_closed`` /
    ``hi_closed`` is False.
    """
    if isinstance(value, bool) or isinstance(value, np.bool_):
        raise TypeError(
            f"{name} must be {'an integer' if kind == 'int' else 'a number'}, got bool."
        )
    if kind == "int":
        if isinstance(value, numbers.Integral):
            v = int(value)
        elif isinstance(value, numbers.Real) and float(value).is_integer():
            v = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {_describe(value)}.")
    else:
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {_describe(value)}.")
        try:
            v = float(value)
        except OverflowError:  # a Python int (or Fraction) beyond float64's range
            raise ValueError(
                f"{name} must be a finite float64 number, got one beyond float64's range "
                f"(about 1.8e308)."
            ) from None
        if np.isnan(v):
            raise ValueError(f"{name} must be a number, got NaN.")
        if np.isinf(v) and not allow_inf:
            raise ValueError(f"{name} must be finite, got {v}.")
    lo_ok = lo is None or (v >= lo if lo_closed else v > lo)
    hi_ok = hi is None or (v <= hi if hi_closed else v < hi)
    if not (lo_ok and hi_ok):
        left = "(-inf" if lo is None else ("[" if lo_closed else "(") + f"{lo:g}"
        right = "inf)" if hi is None else f"{hi:g}" + ("]" if hi_closed else ")")
        raise ValueError(f"{name} must be in {left}, {right}, got {value!r}.")
    return v


def check_option(value: Any, name: str, options: tuple[str, ...]) -> str:
    """Validate a string option."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")
    return value


def check_is_fitted(estimator: Any, attributes: tuple[str, ...] | None = None) -> None:
    """Raise :class:`NotFittedError` if ``estimator`` has not been fitted."""
    if attributes is None:
        fitted = [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]
        ok = bool(fitted)
    else:
        ok = all(hasattr(estimator, a) for a in attributes)
    if not ok:
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with "
            "appropriate arguments before using this estimator."
        )


def check_out(
    out: Any, shape: tuple[int, ...], dtype: np.dtype, *, name: str = "out"
) -> np.ndarray:
    """Validate a caller-supplied output buffer."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy array (or memmap), got {_describe(out)}.")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {out.shape}.")
    if out.dtype != dtype:
        raise ValueError(f"{name} must have dtype {np.dtype(dtype)}, got {out.dtype}.")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous.")
    if not out.flags.writeable:
        raise ValueError(f"{name} must be writeable.")
    return out


def check_no_overlap(out: np.ndarray, inputs: dict[str, Any], *, name: str = "out") -> None:
    """Raise ``ValueError`` if ``out`` shares memory with one of the named input arrays.

    Writing results into a buffer that an input still has to be read from corrupts them (the
    kernels read rows of X and Z while they write rows of the output). ``np.shares_memory``
    decides exactly; when that is too hard for strided views the buffers count as
    overlapping.
    """
    for what, arr in inputs.items():
        if not isinstance(arr, np.ndarray) or not np.may_share_memory(out, arr):
            continue
        try:
            overlap = np.shares_memory(out, arr, max_work=1 << 20)
        except _TooHardError:
            overlap = True
        if overlap:
            raise ValueError(
                f"{name} shares memory with {what}; results written into it would overwrite "
                f"{what} while it is still being read. Pass a separate output buffer."
            )
