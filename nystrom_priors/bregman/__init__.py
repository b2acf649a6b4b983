"""Low-rank kernel learning with Bregman matrix divergences (Kulis, Sustik & Dhillon, ICML 2006).

Both learners solve

    minimise  D(K, K0)   subject to  delta_c * tr(K A_c) <= delta_c * b_c,   c = 1..C

over kernels K with the range space of the initial kernel ``K0 = G0 G0^T``, by cyclic Bregman
projections with one dual variable ``lam_c >= 0`` per inequality (Censor & Zenios 1997).
``delta = +1`` is an upper bound, ``delta = -1`` a lower bound. Constraints:

* distance: ``d(i, j) = K_ii + K_jj - 2 K_ij`` (a *squared* distance), ``A = z z^T``,
  ``z = e_i - e_j``. Must-link pairs ``[i, j, +1]`` get ``d <= b``, cannot-link ``[i, j, -1]``
  get ``d >= b``.
* similarity (Burg only, Sec. 5.3): ``K_ij``, ``A = (e_i e_j^T + e_j e_i^T) / 2`` (rank two);
  ``[i, j, +1]`` means ``K_ij >= b`` (similar), ``[i, j, -1]`` means ``K_ij <= b``; ``i = j``
  bounds a diagonal entry.

One module per learner: ``logdet`` (Burg, Algorithm 1) and ``von_neumann`` (Algorithm 2);
``_common`` holds what they share. The jitted projections are in ``_numba/_burg.py`` and
``_numba/_von_neumann.py``.
"""

from ._bounds import distance_bounds
from .logdet import LogDetKernelLearner
from .von_neumann import VonNeumannKernelLearner

__all__ = ["LogDetKernelLearner", "VonNeumannKernelLearner", "distance_bounds"]
