"""nystrom_priors: inductive low-rank kernel learning from side information.

Learners
--------
Nystrom
    The standard (clustered) Nystrom approximation: the unsupervised baseline and prior.
GeneralizedNystrom
    Dictionary kernel learned from labels or pairs (Zhang et al. 2012); inductive.
LogDetKernelLearner, VonNeumannKernelLearner
    Low-rank kernels from distance / similarity bounds by Bregman projections (Kulis et al. 2006).
BCDNPKL
    Non-parametric graph kernel from pairs by block coordinate descent (Hu et al. 2011).

Functions
---------
extrapolate, iter_extrapolate, make_kernel
    The extrapolation matrix ``E = k(X, Z)``, whole or streamed in row blocks; kernels by name
    (and the ``KernelSpec`` class).
mean_squared_distance
    The Gaussian width heuristic ``b`` of Zhang et al. (2012), exactly, in O(nd).
select_landmarks
    Uniform, k-means++, k-means (clustered Nystrom) or randomly pivoted Cholesky landmarks.
labels_to_pairs, distance_bounds, knn_graph
    Side information: pairs from labels, distance bounds for the Bregman learners, the
    k-NN graph of BCDNPKL.
alignment, factored_alignment
    Normalised (centred) kernel alignment, dense or from factors.
kernel_kmeans, normalized_mutual_info, pair_accuracy
    Evaluation: kernel k-means on factor rows, NMI, accuracy on held-out pairs.
save, load
    Persist fitted estimators as ``.npz`` (no pickle).

Importing the package is cheap: it imports neither numba nor scikit-learn, and compiles
nothing. Submodules load on first attribute access (PEP 562); jitted kernels compile on first
call and are cached on disk (``cache=True``).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

# public name -> submodule that defines it
_LAZY = {
    "Nystrom": "nystrom",
    "GeneralizedNystrom": "generalized",
    "LogDetKernelLearner": "bregman",
    "VonNeumannKernelLearner": "bregman",
    "distance_bounds": "bregman",
    "BCDNPKL": "npkl",
    "knn_graph": "npkl",
    "kernel_kmeans": "clustering",
    "normalized_mutual_info": "clustering",
    "pair_accuracy": "clustering",
    "labels_to_pairs": "side_info",
    "extrapolate": "kernels",
    "iter_extrapolate": "kernels",
    "make_kernel": "kernels",
    "KernelSpec": "kernels",
    "mean_squared_distance": "kernels",
    "select_landmarks": "landmarks",
    "alignment": "kernel_alignment",
    "factored_alignment": "kernel_alignment",
    "save": "io",
    "load": "io",
    "ConvergenceWarning": "exceptions",
    "InfeasibleConstraintsWarning": "exceptions",
    "NotFittedError": "exceptions",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nystrom_priors' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
