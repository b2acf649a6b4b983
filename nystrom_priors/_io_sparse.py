"""CSR fitted attributes in model files (BCDNPKL's ``X_fit_`` of a sparse fit).

A CSR matrix ``name`` is stored as four arrays, ``csr:<name>:data`` (float32 or float64),
``csr:<name>:indices``, ``csr:<name>:indptr`` (int32 or int64) and ``csr:<name>:shape`` (two
int64), never densified. On load they are untrusted: before a matrix is built, the structure
is checked to be that of a canonical CSR matrix (``indptr`` from 0 to nnz and non-decreasing,
column indices in range and strictly increasing within a row: the jitted kernels sum squared
norms over the stored entries, which a duplicate column would get wrong) with finite values.
A file without such entries is read as before; a reader older than this module refuses one
with them (an unknown entry), rather than misreading it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import compressed_index_problem

__all__ = ["PREFIX", "pack", "unpack"]

PREFIX = "csr:"
_PARTS = ("data", "indices", "indptr", "shape")
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
_DATA = (np.dtype(np.float32), np.dtype(np.float64))


def pack(name: str, X: Any) -> dict[str, np.ndarray]:
    """The four arrays of the CSR matrix ``X`` (canonical: as ``check_csr`` returns it)."""
    X = X.tocsr()
    return {
        f"{PREFIX}{name}:data": np.asarray(X.data),
        f"{PREFIX}{name}:indices": np.asarray(X.indices),
        f"{PREFIX}{name}:indptr": np.asarray(X.indptr),
        f"{PREFIX}{name}:shape": np.asarray(X.shape, dtype=np.int64),
    }


def unpack(where: str, entries: dict[str, np.ndarray]) -> dict[str, Any]:
    """Take the ``csr:`` entries out of ``entries`` and return ``{name: csr_matrix}``.

    Raises
    ------
    ValueError
        Naming ``where`` and the entry (``_io_schema`` passes it on as its own refusal).
    """
    groups: dict[str, dict[str, np.ndarray]] = {}
    for key in [k for k in entries if k.startswith(PREFIX)]:
        name, _, part = key[len(PREFIX) :].rpartition(":")
        if not name or part not in _PARTS:
            raise ValueError(f"{where}: field {key!r}: unknown entry.")
        groups.setdefault(name, {})[part] = entries.pop(key)
    out = {}
    for name, parts in groups.items():
        missing = [p for p in _PARTS if p not in parts]
        if missing:
            raise ValueError(f"{where}: field '{PREFIX}{name}:{missing[0]}': missing.")
        try:
            out[name] = _build(parts)
        except ValueError as exc:
            raise ValueError(f"{where}: field '{PREFIX}{name}:{exc}.") from None
    return out


def _build(parts: dict[str, np.ndarray]) -> Any:
    """The checked CSR matrix; a ``ValueError("<part>': <problem>")`` otherwise."""
    import scipy.sparse as sp

    shape, indptr, indices, data = (parts[p] for p in ("shape", "indptr", "indices", "data"))
    if shape.dtype != np.int64 or shape.shape != (2,) or (shape < 0).any():
        raise ValueError(f"shape': expected two int64 extents >= 0, got {shape!r}")
    n, d = (int(v) for v in shape)
    for part, a, kinds in (("indptr", indptr, _INDEX), ("indices", indices, _INDEX)):
        if a.ndim != 1 or a.dtype not in kinds:
            raise ValueError(f"{part}': expected a 1-D int32 or int64 array, got {a.dtype}")
    if data.ndim != 1 or data.dtype not in _DATA:
        raise ValueError(f"data': expected a 1-D float32 or float64 array, got {data.dtype}")
    nnz = data.size
    if indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != nnz or indices.size != nnz:
        raise ValueError(
            f"indptr': expected n + 1 = {n + 1} offsets from 0 to nnz = {nnz} "
            f"(data and indices hold {nnz} and {indices.size} entries)"
        )
    problem = compressed_index_problem(indptr, indices, d)
    if problem is not None:
        raise ValueError(f"{problem[0]}': {problem[1]}")
    row_start = np.zeros(nnz, dtype=bool)
    row_start[indptr[:-1][indptr[:-1] < nnz]] = True
    if (~row_start[1:] & (np.diff(indices) <= 0)).any():
        raise ValueError("indices': not strictly increasing within a row (not canonical)")
    if not np.isfinite(data).all():
        raise ValueError("data': non-finite values (NaN or inf)")
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=True)
    X.has_sorted_indices = True  # checked above: canonical, no duplicate column
    return X
