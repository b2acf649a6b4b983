"""The schema of saved models: what :func:`nystrom_priors.load` accepts (and ``save`` writes).

A model file is untrusted input. Before a model is returned, every part of it is checked:

* the metadata is a JSON object with exactly the keys ``class``, ``library_version``,
  ``params`` and ``attrs`` of the right JSON types;
* the parameters are exactly the estimator's (no unknown name, none missing) and pass the
  estimator's own parameter validation (``_validate_params``);
* the fitted attributes are exactly the ones the class (and its ``init``) defines, of the
  right Python type or array dtype; every array's shape agrees with the parameters and with
  the other arrays (landmark width = ``n_features_in_``, factor and S shapes, eigenvalue,
  pair, bound and dual counts, per-sweep paths of length ``n_iter_``); values are finite where
  transform or a kernel computes with them, in range where the math needs it (positive
  eigenvalues, degrees and widths, sample indices inside the training set), and factors
  agree with the matrices they factor (``projection_`` with ``S0_``, ``S_`` or ``B_``, and
  ``S0_`` with ``eigenvalues_``).

A CSR fitted attribute (BCDNPKL's ``X_fit_`` after a sparse fit) is stored as its arrays and
checked to be a canonical CSR matrix with finite values (:mod:`nystrom_priors._io_sparse`)
before the class's schema sees it.

Attributes that older files of format version 1 lack (``kernel_``, ``degree_``, ``coef0_``,
``graph_type_``, ``n_neighbors_``, ``weights_``: what transform uses since the parameters may
change after fit) are derived from the saved parameters.

Every refusal is a ``ValueError`` that names the file and the field.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

from ._io_fields import _FLOATS, _I64, InvalidModel, _agrees, _Fields, _kind, _probes

__all__ = ["REGISTRY", "validate"]

REGISTRY = {
    "Nystrom": "nystrom_priors.nystrom",
    "GeneralizedNystrom": "nystrom_priors.generalized",
    "LogDetKernelLearner": "nystrom_priors.bregman.logdet",
    "VonNeumannKernelLearner": "nystrom_priors.bregman.von_neumann",
    "BCDNPKL": "nystrom_priors.npkl",
}
_META_KEYS = {"class": str, "library_version": str, "params": dict, "attrs": dict}
# optional: the set_output configuration, {"transform": mode} (format 2)
_META_OPTIONAL = {"output": dict}
_LANDMARK_ATTRS = (
    "landmarks_",
    "eigenvalues_",
    "S0_",
    "gamma_",
    "width_",
    "kernel_",
    "degree_",
    "coef0_",
)


# ----- per-class attribute schemas --------------------------------------------------------


def _landmark_part(f: _Fields, d: int) -> tuple[int, int]:
    """The landmark / kernel attributes of the Nystrom family; returns (m, k): landmarks and
    kept eigenvalues."""
    from .kernels import KERNEL_CODES, _canonical_name

    p = f.params
    if not {"kernel_", "degree_", "coef0_"} & set(f.attrs):
        # an older file: the fitted kernel was the parameters' at save time
        f.attrs.update(
            kernel_=_canonical_name(p["kernel"]), degree_=int(p["degree"]), coef0_=float(p["coef0"])
        )
    kernel = f.option("kernel_", tuple(KERNEL_CODES))
    f.integer("degree_", 1, 64)
    f.real("coef0_", finite=True)
    needs_gamma = kernel in ("rbf", "laplacian", "poly")
    gamma = f.real("gamma_", finite=True, lo=0.0, strict=needs_gamma)
    width = f.get("width_")
    if kernel in ("rbf", "laplacian"):
        if type(width) is not float or width != 1.0 / gamma:
            raise f.fail("width_", f"expected 1 / gamma_ = {1.0 / gamma!r}, got {_kind(width)}")
    elif width is not None:
        raise f.fail("width_", f"expected None for the {kernel!r} kernel, got {_kind(width)}")
    Z = f.array("landmarks_", (None, d), f"d = n_features_in_ = {d}", dtypes=_FLOATS)
    m = Z.shape[0]
    if m < 1:
        raise f.fail("landmarks_", "no landmark (shape (0, d))")
    ev = f.array("eigenvalues_", (None,), positive=True)
    if not 1 <= ev.size <= m or (np.diff(ev) > 0).any():
        raise f.fail(
            "eigenvalues_",
            f"expected 1 to m = {m} descending eigenvalues (m = landmarks_ rows), got {ev.size}",
        )
    if not ev[-1] > m / np.finfo(np.float64).max:  # the fit keeps none this small
        raise f.fail("eigenvalues_", f"{ev[-1]!r} is below m / float64 max: 1 / it overflows")
    S0 = f.array("S0_", (m, m), "m = landmarks_ rows")
    # S0_ = U diag(1 / ev) U^T, U orthonormal: its trace and Frobenius norm are 1 / ev's, in
    # units of 1 / ev_min so that neither norm overflows nor underflows at extreme scales
    inv = ev[-1] / ev
    got = np.array([np.trace(S0) * ev[-1], np.linalg.norm(S0 * ev[-1])])
    want = np.array([inv.sum(), np.linalg.norm(inv)])
    _agrees(f, "S0_", got, want, "eigenvalues_", " in trace and Frobenius norm")
    user = p.get("landmarks")
    if isinstance(user, np.ndarray) and (user.ndim != 2 or user.shape[1] != d):
        raise f.fail(
            "params.landmarks", f"shape {user.shape}, expected (*, {d}) (n_features_in_ = {d})"
        )
    return m, ev.size


def _nystrom(f: _Fields) -> None:
    d = f.integer("n_features_in_", lo=1)
    m, k = _landmark_part(f, d)
    P = f.array("projection_", (m, k), "m = landmarks_ rows, k = eigenvalues_ count")
    # projection_ = U diag(ev)^(-1/2) with U orthonormal: P P^T = S0_, P^T P = diag(1 / ev)
    V = _probes(m)
    _agrees(f, "projection_", P @ (P.T @ V), f.attrs["S0_"] @ V, "S0_ (P P^T = S0_)")
    V = _probes(k)
    want = V / f.attrs["eigenvalues_"][:, None]
    _agrees(f, "projection_", P.T @ (P @ V), want, "eigenvalues_ (P^T P = diag(1 / ev))")


def _generalized(f: _Fields) -> None:
    d = f.integer("n_features_in_", lo=1)
    m, _ = _landmark_part(f, d)
    S = f.array("S_", (m, m), "m = landmarks_ rows")
    P = f.array("projection_", (m, None), "m = landmarks_ rows")
    if P.shape[1] > m:
        raise f.fail("projection_", f"{P.shape[1]} columns, at most m = {m} (landmarks_ rows)")
    V = _probes(m)
    _agrees(f, "projection_", P @ (P.T @ V), S @ V, "S_ (P P^T = S_)")
    f.real("lam_", nan=False, lo=0.0, strict=True)
    f.integer("n_iter_", lo=0)
    f.boolean("converged_")
    f.real("certificate_")
    _classes(f)
    lam = f.params.get("lam")
    path = f.array("lam_path_", (None,), positive=True, finite=False)
    if path.size and not isinstance(lam, str):
        raise f.fail("lam_path_", f"a lambda path for the fixed lam={lam!r}")
    if not np.isfinite(path[:-1]).all():  # only lam="auto"'s last candidate, the prior, is inf
        raise f.fail("lam_path_", "non-finite values before its last entry")
    f.array("criterion_path_", (path.size,), "the length of lam_path_", finite=False)
    f.array(
        "cv_error_path_",
        (path.size if lam == "auto" else 0,),
        "lam_path_'s length for lam='auto', else 0",
        finite=False,
    )
    scale = f.real("lam_scale_")
    if not math.isnan(scale) and not scale > 0:
        raise f.fail("lam_scale_", f"must be > 0 or NaN, got {scale!r}")


def _classes(f: _Fields) -> None:
    """``classes_``: numbers, strings or bytes; optional in files written before learners
    other than GeneralizedNystrom kept it."""
    if "classes_" in f.attrs:
        f.array("classes_", (None,), kinds="biufUS")


def _feature_names(f: _Fields) -> None:
    """``feature_names_in_``: optional (a model fitted on a DataFrame with string column
    names), one string per feature."""
    if "feature_names_in_" in f.attrs:
        d = f.integer("n_features_in_", lo=1)
        f.array("feature_names_in_", (d,), "n_features_in_", kinds="U")


def _bregman(f: _Fields, von_neumann: bool) -> None:
    d = f.integer("n_features_in_", lo=1)
    _classes(f)
    init = f.option("init_", ("nystrom", "linear"))
    if init == "nystrom":
        q, k = _landmark_part(f, d)
    else:
        for name in _LANDMARK_ATTRS:
            f.absent(name, "init_='linear' has no landmarks")
        q, k = d, d
    rows = "landmarks_ rows" if init == "nystrom" else "n_features_in_"
    P0 = f.array("P0_", (q, None), f"{q} = {rows}")
    r0 = P0.shape[1]
    if not 1 <= r0 <= k:
        cols = "eigenvalues_ count" if init == "nystrom" else "n_features_in_"
        raise f.fail("P0_", f"{r0} columns, expected 1 to {k} ({cols})")
    pairs = f.pairs("pairs_", None)
    nd = pairs.shape[0]
    f.array("bounds_", (nd,), "one per row of pairs_", positive=True)
    n_iter = f.integer("n_iter_", lo=0)
    for name in ("dual_change_path_", "violation_path_", "dual_norm_path_"):
        f.array(name, (n_iter,), "one per sweep, n_iter_", finite=False)
    f.boolean("converged_")
    f.boolean("infeasible_")
    f.real("max_violation_")
    if von_neumann:
        T = f.array("basis_", (r0, None), "rows: P0_ columns")
        r = T.shape[1]
        if not 1 <= r <= r0:
            raise f.fail("basis_", f"{r} columns, expected 1 to {r0} (P0_ columns)")
        W = f.array("W_", (r, r), "r = basis_ columns")
        spec = f.array("spectrum_", (r,), "r = basis_ columns", nonneg=True)  # exp underflows
        P = f.array("projection_", (q, r), "P0_ rows, r = basis_ columns")
        V = _probes(r)
        want = P0 @ (T @ ((W * np.sqrt(spec)) @ V))
        _agrees(f, "projection_", P @ V, want, "P0_ basis_ W_ spectrum_^(1/2)")
        f.array("dual_", (nd,), "one per row of pairs_", nonneg=True)
        f.array("evaluations_path_", (n_iter,), "one per sweep, n_iter_", dtypes=_I64)
        return
    B = f.array("B_", (r0, r0), "r = P0_ columns")
    P = f.array("projection_", (q, r0), "P0_'s shape")
    V = _probes(r0)
    _agrees(f, "projection_", P @ V, P0 @ (B @ V), "P0_ B_")
    # bounds moved by the slack keep their sign (ITML's update scales them)
    f.array("slack_bounds_", (nd,), "one per row of pairs_", nonneg=True)
    sim = f.pairs("similarity_pairs_", None, strict=False)
    f.array("similarity_bounds_", (sim.shape[0],), "one per row of similarity_pairs_")
    f.array(
        "dual_", (nd + sim.shape[0],), "one per row of pairs_ and similarity_pairs_", nonneg=True
    )


def _bcdnpkl(f: _Fields) -> None:
    p = f.params
    d = f.integer("n_features_in_", lo=1)
    _classes(f)
    if isinstance(f.attrs.get("X_fit_"), np.ndarray) or "X_fit_" not in f.attrs:
        X = f.array("X_fit_", (None, d), f"d = n_features_in_ = {d}", dtypes=_FLOATS)
    else:  # a sparse fit: CSR, its structure and values checked by _io_sparse
        X = f.get("X_fit_")
        if not hasattr(X, "tocsr") or X.shape[1] != d or X.dtype not in _FLOATS:
            raise f.fail("X_fit_", f"expected (n, {d}) float rows (d = n_features_in_)")
    n = X.shape[0]
    if n < 2:
        raise f.fail("X_fit_", f"{n} training sample(s), a graph needs at least 2")
    emb = f.attrs.get("embedding_")  # before n_neighbors_, whose range is read off n
    if isinstance(emb, np.ndarray) and emb.ndim == 2 and emb.shape[0] != n:
        raise f.fail("X_fit_", f"{n} rows, but embedding_ has {emb.shape[0]}: they disagree")
    if not {"graph_type_", "n_neighbors_", "weights_"} & set(f.attrs):
        # an older file: the graph's settings were the parameters' at save time
        f.attrs.update(
            graph_type_=p["graph"],
            n_neighbors_=int(p["n_neighbors"]),
            weights_="gaussian" if p["graph"] == "dense" else p["weights"],
        )
    graph = f.option("graph_type_", ("knn", "dense"))
    f.integer("n_neighbors_", 1, n - 1)
    weights = f.option("weights_", ("binary", "gaussian"))
    if graph == "dense" and weights != "gaussian":
        raise f.fail("weights_", f"a dense graph has Gaussian weights, got {weights!r}")
    G = f.array("embedding_", (n, None), "n = X_fit_ rows")
    r = G.shape[1]
    if r < 1:
        raise f.fail("embedding_", "no column")
    f.array("degrees_", (n,), "n = X_fit_ rows", positive=True)
    f.real("delta_", finite=True, lo=0.0, strict=True)
    sigma = f.get("sigma_")
    if weights == "gaussian":
        if type(sigma) is not float or not 0.0 < sigma < math.inf:
            raise f.fail(
                "sigma_", f"expected a positive float for Gaussian weights, got {_kind(sigma)}"
            )
    elif sigma is not None:
        raise f.fail("sigma_", f"expected None for binary weights, got {_kind(sigma)}")
    if f.integer("rank_", lo=1) != r:
        raise f.fail("rank_", f"expected {r} (embedding_ columns)")
    pairs = f.pairs("pairs_", n)
    L = f.array("constrained_", (None,), dtypes=_I64)
    if not np.array_equal(L, np.unique(pairs[:, :2])):
        raise f.fail("constrained_", "not the samples of pairs_ (sorted, unique)")
    V = f.array("V_", (L.size, r), "constrained_ count, embedding_ columns")
    _agrees(f, "V_", V, G[L], "embedding_'s rows constrained_")  # the extension keeps them
    n_iter = f.integer("n_iter_", lo=0)
    f.array("objective_path_", (n_iter + 1,), "n_iter_ + 1", finite=False)
    f.real("objective_")
    if "gap_" in f.attrs:  # files written before the certificate have none
        f.real("gap_", lo=0.0)
    f.boolean("converged_")


_SCHEMAS = {
    "Nystrom": _nystrom,
    "GeneralizedNystrom": _generalized,
    "LogDetKernelLearner": lambda f: _bregman(f, von_neumann=False),
    "VonNeumannKernelLearner": lambda f: _bregman(f, von_neumann=True),
    "BCDNPKL": _bcdnpkl,
}


# ----- entry point ------------------------------------------------------------------------


def _from_json(value: Any, where: str, field: str) -> Any:
    """JSON value -> parameter / attribute value (tuples are stored as {"__tuple__": [...]})."""
    if isinstance(value, list):
        return [_from_json(v, where, field) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"} and isinstance(value["__tuple__"], list):
            return tuple(_from_json(v, where, field) for v in value["__tuple__"])
        raise InvalidModel(f"{where}: field {field!r}: a JSON object, not a saved value.")
    return value


def validate(where: str, meta: Any, arrays: dict[str, np.ndarray]) -> tuple[type, dict, dict]:
    """Check a model file's metadata and arrays against the schema (see :func:`_validate`).

    Raises
    ------
    ValueError
        Naming ``where`` and the field.
    """
    try:
        return _validate(where, meta, arrays)
    except InvalidModel as exc:
        raise ValueError(str(exc)) from None


def _validate(where: str, meta: Any, arrays: dict[str, np.ndarray]) -> tuple[type, dict, dict]:
    """Check a model file's metadata and arrays against the schema.

    Parameters
    ----------
    where : str
        How messages name the file (``"'path'"``, or the model being saved).
    meta : object
        The decoded JSON metadata.
    arrays : dict
        The ``param:<name>`` / ``attr:<name>`` arrays.

    Returns
    -------
    cls, params, attrs
        The estimator class, its parameters and its fitted attributes (values as the model
        holds them; attributes that older files lack are derived).

    Raises
    ------
    InvalidModel
    """
    if not isinstance(meta, dict):
        raise InvalidModel(f"{where}: field '__meta__': expected a JSON object, got {_kind(meta)}.")
    for key, kind in _META_KEYS.items():
        if key not in meta:
            raise InvalidModel(f"{where}: field '__meta__.{key}': missing.")
        if not isinstance(meta[key], kind):
            raise InvalidModel(
                f"{where}: field '__meta__.{key}': expected a JSON "
                f"{kind.__name__}, got {_kind(meta[key])}."
            )
    extra = sorted(set(meta) - set(_META_KEYS) - set(_META_OPTIONAL))
    if extra:
        raise InvalidModel(f"{where}: field '__meta__.{extra[0]}': unknown key.")
    _output_config(where, meta.get("output", {}))
    name = meta["class"]
    if name not in REGISTRY:
        raise InvalidModel(
            f"{where} holds an unknown estimator class {name!r}; known: {sorted(REGISTRY)} "
            "(field '__meta__.class')."
        )
    cls = getattr(importlib.import_module(REGISTRY[name]), name)

    params: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    for key, value in meta["params"].items():
        params[key] = _from_json(value, where, f"params.{key}")
    for key, value in meta["attrs"].items():
        attrs[key] = _from_json(value, where, f"attrs.{key}")
    from ._io_sparse import PREFIX, unpack

    if any(key.startswith(PREFIX) for key in arrays):
        arrays = dict(arrays)  # the caller's dict stays as it was
        try:
            matrices = unpack(where, arrays)
        except ValueError as exc:
            raise InvalidModel(str(exc)) from None
        for key, value in matrices.items():
            if key in attrs:
                raise InvalidModel(
                    f"{where}: field '{PREFIX}{key}': given both as a CSR matrix and in the "
                    "metadata."
                )
            attrs[key] = value
    for key, value in arrays.items():
        kind, _, field = key.partition(":")
        target = {"param": params, "attr": attrs}.get(kind)
        if target is None or not field:
            raise InvalidModel(f"{where}: field {key!r}: unknown entry.")
        # string class labels and column names
        text_ok = (key == "attr:classes_" and value.dtype.kind in "US") or (
            key == "attr:feature_names_in_" and value.dtype.kind == "U"
        )
        if value.dtype.kind not in "biuf" and not text_ok:
            raise InvalidModel(f"{where}: field {key!r}: dtype {value.dtype} is not numeric.")
        if field in target:
            raise InvalidModel(
                f"{where}: field {key!r}: given both as an array and in the metadata."
            )
        target[field] = value

    if name == "GeneralizedNystrom" and params.get("solver") == "ipm":
        # format 1 files of 0.1.0: the interior-point solver has been removed (it never won a
        # benchmark); a fitted model does not depend on its solver, so it loads with the default
        params["solver"] = "auto"
    names = set(cls._param_names())
    for key in sorted(set(params) - names):
        raise InvalidModel(
            f"{where}: field 'params.{key}': unknown parameter of {name} (valid: {sorted(names)})."
        )
    for key in sorted(names - set(params)):
        raise InvalidModel(f"{where}: field 'params.{key}': missing.")
    probe = cls(**params)
    try:
        probe._validate_params()
        check = getattr(probe, "_check_params", None)  # GeneralizedNystrom's own checks
        if check is not None:
            check()
    except (TypeError, ValueError) as exc:
        raise InvalidModel(f"{where}: field 'params': {exc}") from None

    fields = _Fields(where, dict(attrs), params)
    try:
        _SCHEMAS[name](fields)
        _feature_names(fields)
    except InvalidModel:
        raise
    except (KeyError, TypeError, ValueError) as exc:  # a parameter an older rule reads
        raise InvalidModel(f"{where}: field 'params': {type(exc).__name__}: {exc}") from None
    for key in sorted(set(fields.attrs) - fields.used):
        raise InvalidModel(f"{where}: field 'attrs.{key}': unknown fitted attribute of {name}.")
    return cls, params, fields.attrs


def _output_config(where: str, output: Any) -> None:
    """Check the saved ``set_output`` configuration: ``{"transform": mode}`` or empty."""
    from ._output import _MODES

    if not isinstance(output, dict):
        raise InvalidModel(
            f"{where}: field '__meta__.output': expected a JSON object, got {_kind(output)}."
        )
    for key, value in output.items():
        if key != "transform":
            raise InvalidModel(f"{where}: field '__meta__.output.{key}': unknown key.")
        if value not in _MODES:
            raise InvalidModel(
                f"{where}: field '__meta__.output.transform': expected one of {list(_MODES)}, "
                f"got {value!r}."
            )
