"""Estimator base class: parameters, repr and scikit-learn tags without importing scikit-learn."""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._fit_lock import fit_lock as _fit_lock
from ._float32 import float32_conditioned
from ._kernel_param import _NO_A, _KernelAttribute, missing_A
from ._products import (
    finite_products,
    pair_distances,
    pair_scores,
    scaled_product,
    warn_if_zero_rows,
)
from ._rows import is_dask_array


def atomic_fit(fit: Callable) -> Callable:
    """Decorate ``fit`` so that a failed fit leaves the estimator as it was.

    On any exception -- a refusal, or ``KeyboardInterrupt`` from Ctrl-C in the middle of a
    long fit -- the instance's attributes are restored: a half-fitted model (say, landmarks
    and an initial projection but no learned factor) never passes for a fitted one, and a
    model fitted before keeps its fitted state. A successful fit records X's column names
    (``feature_names_in_``, scikit-learn's convention) when X is a DataFrame.

    Fits of one instance from several threads run one after another (a lock per instance):
    a fit sets its attributes one at a time, so interleaved fits would mix two models. The
    last fit to finish is the model. ``transform``, ``kernel``, ``pair_score``,
    ``pair_distance`` and ``save`` take the same lock, so they see the model before or after
    a fit another thread runs, never one being built (and calls of these on one instance
    from several threads run one at a time). ``iter_transform`` and ``iter_kernel_rows``,
    generators the caller drives, do not hold it between their blocks.
    """

    @functools.wraps(fit)
    def wrapper(self, *args: Any, **kwargs: Any) -> Any:
        with _fit_lock(self):
            return _atomic(fit, self, args, kwargs)

    return wrapper


def _atomic(fit: Callable, self: Any, args: tuple, kwargs: dict) -> Any:
    """``fit(self, *args, **kwargs)`` with ``atomic_fit``'s restore on failure."""
    from ._feature_names import record_feature_names

    saved = dict(self.__dict__)
    # a fit starts afresh: a fitted attribute of an earlier fit that this one does not set
    # (landmarks_ after init="linear") would describe another model, and save refuses it
    params = set(self.get_params(deep=False)) if hasattr(self, "get_params") else set()
    for key in [k for k in saved if k.endswith("_") and not k.startswith("__")]:
        if key not in params:
            del self.__dict__[key]
    try:
        # every parameter, also one the chosen kernel ignores (degree with "rbf"), as save
        # and load check them: a model that fits can always be saved
        validate = getattr(self, "_validate_params", None)
        if validate is not None:
            validate()
        out = fit(self, *args, **kwargs)
        record_feature_names(self, args[0] if args else kwargs.get("X"))
        return out
    except BaseException:
        self.__dict__.clear()
        self.__dict__.update(saved)
        raise


def point_pairs_fit(fit: Callable) -> Callable:
    """Decorate a side-information learner's ``fit(X, y=None, *, pairs=None, ...)``.

    * metric-learn's call ``fit(pairs, y)`` -- point pairs of shape (k, 2, d), ``y`` = +-1
      per pair -- becomes ``fit(X_rows, pairs=index_pairs)`` (the mapping is that of
      :func:`nystrom_priors._pairs_format.point_pairs`: exactly deduplicated points, in
      order of first appearance);
    * after a successful fit ``classes_`` holds the sorted classes of ``y``'s labeled
      samples (any label type), or is empty when no labels were given (pairs only, point
      pairs, or every sample unlabeled) -- the same attribute for every learner.
    """

    @functools.wraps(fit)
    def wrapper(self, X: Any, y: Any = None, **kwargs: Any) -> Any:
        from ._pairs_format import resolve_side_info
        from .side_info import fitted_classes

        X, y, kwargs = resolve_side_info(X, y, kwargs, type(self).__name__)
        out = fit(self, X, y, **kwargs)
        self.classes_ = fitted_classes(y)
        return out

    return wrapper


def side_info_fit(fit: Callable) -> Callable:
    """:func:`atomic_fit` and :func:`point_pairs_fit` together, under the instance's fit
    lock as a whole: ``classes_``, set after the atomic part, belongs to the same fit."""
    inner = point_pairs_fit(atomic_fit(fit))

    @functools.wraps(inner)
    def wrapper(self, *args: Any, **kwargs: Any) -> Any:
        with _fit_lock(self):  # re-entrant: atomic_fit takes it again inside
            return inner(self, *args, **kwargs)

    return wrapper


class BaseEstimator:
    """Parameter handling in the scikit-learn style.

    ``__init__`` of a subclass only stores its keyword arguments under the same names;
    ``get_params`` / ``set_params`` are derived from the signature, so ``sklearn.base.clone``,
    ``Pipeline`` and ``GridSearchCV`` work without scikit-learn being a dependency.
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this estimator, as passed to ``__init__`` (the very same objects)."""
        return {
            name: self.__dict__[name] if name in self.__dict__ else getattr(self, name)
            for name in self._param_names()
        }

    #: instance attributes that are caches or hold unpicklable helpers (recomputed on demand)
    _transient: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle (copy, dask shipping) without caches: they are rebuilt on first use."""
        return {k: v for k, v in self.__dict__.items() if k not in self._transient}

    def set_params(self, **params: Any) -> BaseEstimator:
        """Set parameters; unknown names raise ``ValueError``. Returns ``self``."""
        valid = set(self._param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {sorted(valid)}."
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            default = sig.parameters[name].default
            value = self.__dict__.get(name, default)
            if _differs(value, default):
                parts.append(f"{name}={_short_repr(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __sklearn_tags__(self):  # pragma: no cover - exercised only with scikit-learn
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(preserves_dtype=["float64", "float32"]),
            input_tags=InputTags(
                two_d_array=True, allow_nan=False, sparse=getattr(self, "_accepts_sparse", False)
            ),
        )


def _differs(value: Any, default: Any) -> bool:
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return not (
            isinstance(value, np.ndarray)
            and isinstance(default, np.ndarray)
            and value.shape == default.shape
            and bool(np.all(value == default))
        )
    try:
        return bool(value != default)
    except Exception:
        return value is not default


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"<array shape={value.shape} dtype={value.dtype}>"
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _transform_block(block: np.ndarray, model: Any) -> np.ndarray:
    """Worker side of the dask path: one row block through the ordinary transform (the
    dask array's column names, none, were checked once by ``transform``)."""
    return model._transform_array(block, names=False)


class FactorTransformMixin:
    """``transform`` / ``kernel`` / streaming for learners whose kernel is ``G G^T``.

    A subclass implements ``_features_block(X) -> F`` (for the Nystrom family
    ``F = k(X, Z)``, shape (n_b, m)) and sets ``projection_`` (m, r) in ``fit``; factor rows
    are ``G = F @ projection_``. Everything here works block by block, so peak memory is the
    output plus one block of ``F``.
    """

    #: rows of F materialised at once inside ``transform`` (about 64 MiB of float64 F)
    _transform_elements = 1 << 23

    def __init_subclass__(cls, **kwargs: Any) -> None:
        from ._output import wrap_class

        super().__init_subclass__(**kwargs)
        wrap_class(cls)  # a subclass's own transform / fit_transform honour set_output

    def set_output(self, *, transform: str | None = None) -> Any:
        """Choose the container of ``transform`` and ``fit_transform`` (scikit-learn's API).

        Parameters
        ----------
        transform : {"default", "pandas"} or None
            ``"pandas"``: a ``DataFrame`` with columns ``get_feature_names_out()`` and, when
            the input is a DataFrame, its index; ``"default"``: the ndarray; None: unchanged.
            Without a setting, scikit-learn's global ``transform_output`` applies. A dask
            input still gives a dask array.

        Returns
        -------
        self
        """
        from ._output import check_output_mode

        if transform is None:
            return self
        check_output_mode(transform)
        if not hasattr(self, "_sklearn_output_config"):
            self._sklearn_output_config = {}
        self._sklearn_output_config["transform"] = transform
        return self

    def _pair_rows(self, pairs: Any) -> tuple[Any, Any]:
        from ._pairs_format import pair_sides

        A, B = pair_sides(pairs)  # point pairs: arrays without column names
        d = getattr(self, "n_features_in_", None)
        if d is not None and A.ndim == 2 and A.shape[1] != d:  # else transform names X
            raise ValueError(
                f"pairs has {A.shape[1]} features per point (shape ({A.shape[0]}, 2, "
                f"{A.shape[1]})), but {type(self).__name__} is expecting {d} features as "
                "input (the number seen in fit)."
            )
        GA, GB = self._transform_array(A, names=False), self._transform_array(B, names=False)
        return np.asarray(GA, dtype=np.float64), np.asarray(GB, dtype=np.float64)

    def pair_score(self, pairs: Any) -> np.ndarray:
        """Learned kernel value ``k(a, b) = g_a^T g_b`` of each pair (higher = more similar).

        metric-learn's pairs API: ``pairs`` has shape (n_pairs, 2, n_features). metric-learn's
        Mahalanobis learners score a pair by minus its distance; here the score is the
        learned similarity itself, which ranks pairs by the kernel rather than by the
        distance (the two agree when ``k(a, a)`` is constant, e.g. for a Gaussian prior left
        unchanged). Use ``-pair_distance(pairs)`` for metric-learn's exact ordering.

        Returns
        -------
        scores : ndarray of shape (n_pairs,), float64
        """
        with _fit_lock(self):  # the model before or after a fit in another thread
            return pair_scores(*self._pair_rows(pairs), type(self).__name__)

    def pair_distance(self, pairs: Any) -> np.ndarray:
        """Distance induced by the learned kernel for each pair (metric-learn's pairs API).

        ``d(a, b) = sqrt(k(a, a) + k(b, b) - 2 k(a, b)) = ||g_a - g_b||``, computed as the
        norm of the difference of the factor rows (no cancellation for close points).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        distances : ndarray of shape (n_pairs,), float64, >= 0
        """
        with _fit_lock(self):
            return pair_distances(*self._pair_rows(pairs), type(self).__name__)

    def _check_X(self, X: Any, name: str = "X", names: bool = True) -> np.ndarray:
        """X validated for a fitted model; ``names``: compare its column names with
        ``feature_names_in_`` (off for arrays the library builds itself: pair sides, dask
        blocks)."""
        from ._feature_names import check_feature_names
        from ._validation import check_array, check_n_features

        self._check_fitted_for_transform()
        if names:
            check_feature_names(self, X, name)
        X = check_array(X, name=name, accept_sparse=True)
        check_n_features(X, self.n_features_in_, name=name, estimator=type(self).__name__)
        return X

    def _block_rows_default(self) -> int:
        return max(1, self._transform_elements // max(1, self.projection_.shape[0]))

    def _transform_validated(self, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        with np.errstate(over="ignore"):
            P = np.ascontiguousarray(self.projection_, dtype=X.dtype)
        if out is None:
            out = np.empty((X.shape[0], P.shape[1]), dtype=X.dtype)
        if P.dtype != self.projection_.dtype and not (
            np.isfinite(P).all() and float32_conditioned(self)
        ):  # float32 features, and a projection beyond float32 (tiny X, small lam) or one
            # that amplifies their rounding past float32's accuracy: in float64, rounded once
            return self._rounded_from_float64(X, out)
        # landmark learners project tile by tile inside one parallel region when they can
        project = getattr(self, "_project_into", None)
        if project is not None and project(X, P, out):
            return out
        step = self._block_rows_default()
        for s in range(0, X.shape[0], step):
            F = self._features_block(X[s : s + step])
            with np.errstate(over="ignore", invalid="ignore"):
                if isinstance(F, np.ndarray):
                    np.matmul(F, P, out=out[s : s + step])
                else:  # sparse features (a learner on raw sparse X): sparse @ dense
                    out[s : s + step] = F @ P
            bad = np.flatnonzero(~np.isfinite(out[s : s + step]).all(axis=1))
            if bad.size:  # only these rows: their own scale, not the block's
                out[s + bad] = scaled_product(F[bad], P, type(self).__name__)
        return out

    def _rounded_from_float64(self, X: Any, out: np.ndarray) -> np.ndarray:
        """``transform`` of float32 ``X`` in float64 a block of rows at a time (no float64
        copy of X), rounded into ``out`` where it fits."""
        for s in range(0, X.shape[0], step := self._block_rows_default()):
            G = self._transform_validated(X[s : s + step].astype(np.float64))
            with np.errstate(over="ignore"):
                out[s : s + step] = G
            if not np.isfinite(out[s : s + step]).all():
                big, name = f"{float(np.abs(G).max()):.3g}", type(self).__name__
                raise ValueError(f"the factor rows of this {name} overflow float32 (max |G| = "
                                 f"{big}): pass float64 data or rescale X.")  # fmt: skip
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Factor rows of the learned kernel for any samples.

        Parameters
        ----------
        X : array-like of shape (n, d), or a ``dask.array`` of that shape
            A dask array gives a lazy dask array: one task per row block (chunks along the
            rows are kept, the features are merged into one chunk), the fitted model shipped
            once per worker as a single graph key.

        Returns
        -------
        G : ndarray (or dask array) of shape (n, n_components_), dtype of X (float32 or
            float64); the learned kernel between two sample sets A, B is ``G_A @ G_B.T``.
        """
        if is_dask_array(X):
            return self._dask_transform(X)
        return self._transform_validated(self._check_X(X))

    def _dask_transform(self, X: Any) -> Any:
        import dask

        from ._feature_names import check_feature_names
        from ._validation import float_target

        self._check_fitted_for_transform()
        check_feature_names(self, X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got a dask array with shape {X.shape}.")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_}."
            )
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        dtype = float_target(X.dtype)
        # one key for the fitted model: distributed ships it once per worker
        model = dask.delayed(self, pure=True, traverse=False)
        return X.map_blocks(
            _transform_block,
            model,
            dtype=dtype,
            chunks=(X.chunks[0], (self.n_components_,)),
            meta=np.empty((0, 0), dtype=dtype),
        )

    def _transform_array(self, X: Any, names: bool = True) -> Any:
        """``transform(X)`` as an array (ndarray or dask), whatever ``set_output`` says: the
        internal uses (kernel blocks, pair scores, dask blocks) compute with it. ``names``:
        check X's column names (see ``_check_X``)."""
        if not names and not is_dask_array(X):
            return self._transform_validated(self._check_X(X, names=False))
        G = self.transform(X)
        return G.to_numpy() if type(G).__module__.startswith("pandas") else G

    def _check_fitted_for_transform(self) -> None:
        from ._validation import check_is_fitted

        check_is_fitted(self, ("projection_",))

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """``fit(X, y, **fit_params)`` then ``transform(X)`` (under the instance's fit lock,
        ``_output.wrap_method``)."""
        from ._pairs_format import refuse_point_pairs_transform

        if "pairs" in inspect.signature(type(self).fit).parameters:  # fit takes point pairs
            refuse_point_pairs_transform(X, type(self).__name__)
        G = self.fit(X, y, **fit_params).transform(X)
        warn_if_zero_rows(self, G)
        return G

    kernel = _KernelAttribute()

    def _learned_kernel(self, A: Any = _NO_A, B: Any = None) -> np.ndarray:
        """Block of the learned kernel ``k(A, B) = G_A G_B^T`` (``B = A`` if omitted).

        Called as ``model.kernel(A, B)``.

        Returns
        -------
        K : ndarray of shape (n_A, n_B)
        """

        def rows(M: Any, name: str) -> Any:  # an error names the argument, A or B
            if is_dask_array(M):
                return self._transform_array(M)
            return self._transform_validated(self._check_X(M, name=name))

        if A is _NO_A:
            raise missing_A(self)
        with _fit_lock(self):  # the model before or after a fit in another thread
            GA = rows(A, "A")
            GB = GA if B is None else rows(B, "B")
        if is_dask_array(GA) and not is_dask_array(GB):
            GB = GB.astype(GA.dtype, copy=False)
        if is_dask_array(GA):
            return GA @ GB.T
        return finite_products(GA, GB, type(self).__name__)

    def iter_transform(
        self, X: Any, *, block_rows: int | None = None, out: Any = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Stream factor rows in order, holding one block at a time.

        Parameters
        ----------
        X : array-like of shape (n, d), np.memmap, or iterable of (n_b, d) blocks
            Arrays are sliced into blocks of ``block_rows`` rows (read lazily for memmaps).
        block_rows : int, optional
            Rows per block for array input (default: about 64 MiB of float64 features).
        out : ndarray or np.memmap of shape (n, n_components_), optional
            Each block is written into ``out[start:start + n_b]`` (no other copy is kept) and
            the yielded block is that view. Its dtype must be the blocks' dtype, and it must not
            share memory with X (``ValueError``).

        Yields
        ------
        start : int
            Index of the block's first row.
        G_block : ndarray of shape (n_b, n_components_)
        """
        from ._feature_names import check_feature_names
        from ._validation import check_no_overlap, is_sparse
        from .kernels import _array_like, _check_block_rows, _iter_blocks

        self._check_fitted_for_transform()
        if block_rows is not None:
            block_rows = _check_block_rows(block_rows)
        else:
            block_rows = self._block_rows_default()
        r = self.n_components_
        if out is not None:
            if not isinstance(out, np.ndarray) or out.ndim != 2 or out.shape[1] != r:
                raise ValueError(
                    f"out must be an ndarray (or memmap) of shape (n, {r}), got "
                    f"{type(out).__name__} with shape {getattr(out, 'shape', None)}."
                )
            if not out.flags.writeable:
                raise ValueError("out is read-only.")
            n = getattr(X, "shape", (None,))[0] if _array_like(X) or hasattr(X, "tocsr") else None
            if isinstance(n, numbers.Integral) and out.shape[0] != n:  # dask: maybe NaN
                raise ValueError(f"out has {out.shape[0]} rows, X has {n}; they must match.")
            check_no_overlap(out, {"X": X})
        stop = 0
        # one array: its column names are compared once, not once per block (a warning per
        # block, each naming its row, would repeat the same news)
        rows = isinstance(X, (list, tuple)) and len(X) > 0 and np.ndim(X[0]) <= 1
        whole = _array_like(X) or is_sparse(X) or rows  # a list of rows is one array too
        if whole:
            check_feature_names(self, X)
        for start, raw in _iter_blocks(X, block_rows, 1):
            Xb = self._check_X(raw, name=f"X block at row {start}", names=not whole)
            if out is None:
                yield start, self._transform_validated(Xb)
                continue
            check_no_overlap(out, {f"the X block at row {start}": raw, "its float copy": Xb})
            stop = start + Xb.shape[0]
            if stop > out.shape[0]:
                raise ValueError(f"out has {out.shape[0]} rows but the input has at least {stop}.")
            if out.dtype != Xb.dtype:
                raise ValueError(
                    f"out has dtype {out.dtype}, the block at row {start} has {Xb.dtype}; "
                    "they must match."
                )
            view = out[start:stop]
            if view.flags.c_contiguous:
                self._transform_validated(Xb, out=view)
            else:
                view[...] = self._transform_validated(Xb)
            yield start, view
        if out is not None and stop != out.shape[0]:  # rows left unwritten would pass for data
            raise ValueError(f"out has {out.shape[0]} rows, the input had {stop}.")

    def iter_kernel_rows(
        self, A: Any, B: Any = None, *, block_rows: int | None = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Stream rows of the learned kernel ``k(A, B)`` (``B = A`` if omitted) in blocks.

        ``B``'s factor rows are computed once and kept; ``A`` is streamed as in
        :meth:`iter_transform`.

        Yields
        ------
        start : int
        K_block : ndarray of shape (n_b, n_B)
        """
        if B is None:
            from .kernels import _array_like

            if not _array_like(A) and not hasattr(A, "tocsr"):  # sparse: one matrix
                raise TypeError("B must be given when A is an iterable of blocks.")
            B = A
        elif not hasattr(B, "__array__") and not hasattr(B, "tocsr") and hasattr(B, "__next__"):
            raise TypeError(
                f"B must be an array of rows (its factor rows are kept for every block of A), "
                f"got an iterator ({type(B).__name__}); pass np.vstack of its blocks."
            )
        GB = self._transform_array(B)
        if is_dask_array(GB):  # computed once, not once per block of A
            GB = np.asarray(GB)
        for start, GA in self.iter_transform(A, block_rows=block_rows):
            yield start, finite_products(GA, GB.astype(GA.dtype, copy=False), type(self).__name__)

    @property
    def n_components_(self) -> int:
        """Width r of the factor rows (rank of the learned kernel)."""
        from ._validation import check_is_fitted

        check_is_fitted(self, ("projection_",))
        return int(self.projection_.shape[1])

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names ``<classname><i>`` of the factor-row columns, as scikit-learn does.

        ``input_features`` (optional) is only checked, as scikit-learn checks it: one name per
        input feature, equal to ``feature_names_in_`` when the model was fitted on a
        DataFrame. The output names do not depend on it."""
        prefix = type(self).__name__.lower()
        names = [f"{prefix}{i}" for i in range(self.n_components_)]  # NotFittedError first
        if input_features is not None:
            given = np.asarray(input_features, dtype=object)
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and not (
                given.shape == fitted.shape and bool((given == fitted).all())
            ):
                raise ValueError(
                    f"input_features is not equal to feature_names_in_ ({list(fitted)}), got "
                    f"{given.tolist()!r}."
                )
            if given.ndim != 1 or given.shape[0] != self.n_features_in_:
                raise ValueError(
                    f"input_features should have one name per input feature "
                    f"({self.n_features_in_}), got shape {given.shape}."
                )
        return np.asarray(names, dtype=object)


def _wrap_mixin() -> None:
    from ._output import wrap_class

    wrap_class(FactorTransformMixin)


_wrap_mixin()
