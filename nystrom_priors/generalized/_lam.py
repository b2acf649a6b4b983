"""Choosing lam.

lam="auto" on labels: the one-step model and its cross-validated choice of lam.

**The one-step model.** Write ``S0 = U0 diag(1 / w) U0^T`` on its range and let ``V`` be an
orthonormal basis of ``range(E_l^T)`` inside ``range(S0)`` (p = rank of the labeled rows). J
depends on the data only through ``E_l S E_l^T``, so the model changes S only there,
``S = S0 + V (Y - C) V^T``. On ``range(S0)``, ``S >= 0`` iff ``Y >= 0`` with
``C = (V^T S0^+ V)^-1`` (Schur complement), and J on that family is the same objective on
p x p matrices: prior C, rows ``F = E_l V`` with ``M = F^T F = diag(mu)`` (V is chosen so),
data term at ``Y + (V^T S0 V - C)``:

    J(Y) = sum_ij (lam + mu_i mu_j) (Y_ij - c_ij)^2 + const,
    c = (lam C + R) / (lam + mu mu^T),   R = F^T K* F - M (V^T S0 V - C) M.

c is the unconstrained optimum. Its weights lie between ``lam`` (directions the labels do not
see, cheap to move) and ``mu_max^2`` (the fitted block, rigid). The weights ``d_i d_j``,
``d = (lam + mu^2)^(1/2)``, bound them from above (Cauchy-Schwarz), so
``Q(Y) = sum d_i d_j (Y - c)_ij^2`` majorises J at c, and its minimiser over the PSD cone is
one eigendecomposition: ``Y = D^-1/2 P_psd(D^1/2 c D^1/2) D^-1/2`` (a congruence keeps the
cone). This is the model: the exact minimiser of the majoriser, equal to J's optimum wherever
the PSD constraint is inactive. Unlike the Euclidean projection of c, it keeps the fitted
block and moves the cheap ones, as J's optimum does.

**Choosing lam.** Stratified k-fold splits of the labeled rows (three independent splits of
``cv`` folds, four by default; one split, of five by default, above ``_MANY_SPLITS_MAX``
labels: the held-out estimate tightens with l while every fold costs O(p^3) per lam; a fold
trains on at most ``_CV_RANK_MAX`` directions, ``cv_rounds``). Which rows a fold holds out
moves the estimate as much as lam does on 100 labels, so the splits are averaged. On each
training fold the same model is fitted along the grid (lam = ``mu_max^2 10^e`` with the fold's
own mu_max), and a ridge classifier on the learned kernel (one-vs-rest, +-1 targets, intercept
penalised like a linear SVM's constant feature, penalty 1/2: the squared-loss counterpart of
``LinearSVC(C=1)``) scores the held-out fold. The loss is a ramp on the held-out margin
measured in units of the training rows' RMS margin, ``min(max(1 - m / s, 0), 2)`` (m: true
class's score minus the best other one): small lam inflates the kernel along the labeled
directions, and a loss on raw scores (the squared hinge) then charges the confidently wrong
rows quadratically and ranks lam by the size of the scores rather than by how the held-out rows
fall relative to the training rows. Bounded, one wrong row costs at most 2, like a smoothed 0/1
error with less variance. The prior (lam = inf, plain Nystrom) is a candidate. A lam is chosen
only if its mean held-out loss beats the prior's in a one-sided paired t-test over the folds at
the nominal level ``_GATE_LEVEL`` (1%: 2.72 standard errors of the paired differences over
twelve folds); among those, the smallest mean loss wins. The later splits race: each scores
only the lam that the folds of the splits before it favour over the prior by more than
``_RACE_FIRST`` (after the first split) or ``_RACE`` (after two) standard errors, and of those
only the one with the smallest mean loss and the one favoured by the most standard errors
(``race``), which skips most of the small lam, whose eigendecompositions are the selection's
cost, where they would hardly be chosen. The model whose lam is scored is the model that is
returned, so the estimate is honest for it.

**Pairs alone, and eq. (12).** Pairs without labels have their own one-step model and folds
over the constrained samples (``_lam_pairs.py``), chosen by the same rule (``choose``).
``lam="nka"`` is the paper's eq. (12) along the exact path.
"""

from __future__ import annotations

import numpy as np

from .._threads import numba_threads
from ..kernel_alignment import _dense, _factored
from ._problem import _factor, _sym
from ._solver import _solve_path

# ridge penalty of the held-out classifier: min ||w||^2 / 2 + C sum loss <=> alpha = 1 / (2 C)
_RIDGE_ALPHA = 0.5
# held-out loss that ranks lam: 0 squared loss, 1 squared hinge, 2 0/1 error, 3 scaled ramp
_CRITERION = 3
# a lam must beat the prior in a one-sided paired t-test over the folds at this level
_GATE_LEVEL = 0.01
# ... and, to be scored by a later split, by this many over the first split's folds
_RACE_FIRST = 1.5
# ... and by this many over the folds of two or more splits
_RACE = 2.0
# ... and, of those, only the one with the smallest mean loss and the clearest go on
_RACE_NARROW = True
# folds per split on labels when ``cv`` is None: four for the averaged splits, five for the
# single split above ``_MANY_SPLITS_MAX`` labels
_LABEL_FOLDS = 4
_ONE_SPLIT_FOLDS = 5
# up to this many labels ``_N_SPLITS`` independent fold splits are averaged, one above
_MANY_SPLITS_MAX = 500
_N_SPLITS = 3
# a CV round's model spans at most this many directions (its cost is cubic in them)
_CV_RANK_MAX = 120
# scores of more multiply-adds than this (about ten seconds on two cores) are warned about
_SLOW_SCORES = 1e11
# multiply-adds that scoring one (row, class) entry costs besides its p + 1 products: its
# margin, loss and the race's means, which dominate where p (the landmarks) is small
_SCORE_ENTRY_COST = 30.0
# the rounds' prepared problems take at most this many floats (32 MiB) unless 8 rounds (or
# one per thread) take more: many folds (cv = l) are then prepared and scored a batch at a
# time (``new_state``)
_STATE_FLOATS = 1 << 22


def stratified_folds(
    codes: np.ndarray, k: int, rng: np.random.Generator, groups: np.ndarray | None = None
) -> np.ndarray:
    """Fold index in ``0 .. k-1`` per labeled sample.

    Each class is dealt round-robin, continuing where the previous class stopped, so folds
    differ in size by at most one and a class with at least k members is in every fold (a
    smaller class in as many folds as it has members). The classes are shuffled from the
    order of their first labeled sample, not from their codes, so that renaming the classes
    deals the same folds (and lam="auto" chooses the same lam).

    ``groups`` (one id per sample): members of a class with the same id are dealt as one
    unit, so copies of a sample never sit on both sides of a fold (a held-out row whose
    copy trained the model scores small lam too well). Groups of one deal exactly the folds
    of ``groups=None``."""
    if groups is not None and np.unique(groups).size == groups.size:
        groups = None  # every group one sample: the same folds, without a unique per class
    folds = np.empty(codes.size, dtype=np.int64)
    offset = int(rng.integers(k))
    # each class's positions, ascending, from one stable sort: O(l log l), not O(l c); the
    # first of each run is the class's first labeled sample
    by_class = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    counts = counts[counts > 0]  # the classes present, in the order of their codes
    starts = np.cumsum(counts) - counts
    first = by_class[starts]
    for c in rng.permutation(np.argsort(first)):  # class indices, in first-appearance order
        members = by_class[starts[c] : starts[c] + counts[c]]
        if groups is None:
            members = rng.permutation(members)
            folds[members] = (offset + np.arange(members.size)) % k
            offset += members.size
            continue
        # one unit per group, at its first member: permuting them consumes the generator as
        # permuting the members does when every group is one sample
        _, at, unit = np.unique(groups[members], return_index=True, return_inverse=True)
        order = np.argsort(at)  # units in first-appearance order, as the members are
        slot = np.empty(order.size, dtype=np.int64)
        slot[order[rng.permutation(order.size)]] = np.arange(order.size)
        folds[members] = (offset + slot[unit.reshape(-1)]) % k
        offset += order.size
    return folds


def choose(losses: np.ndarray) -> int:
    """Index of the chosen candidate; ``losses`` (n_folds, n_candidates), the prior last.

    The candidate with the smallest mean held-out loss among those that beat the prior in a
    one-sided paired t-test at level ``_GATE_LEVEL``: their mean improvement exceeds
    ``t_{n-1}(1 - level)`` standard errors of the paired differences over the n folds (2.72
    for twelve, 4.54 for four); the prior when none does (or fewer than two folds could be
    scored). Paired, because the folds' shared variation (which rows are held out) cancels in
    the differences; a t quantile, because the standard error itself comes from n folds.
    The level is nominal: folds of repeated splits hold out the same rows, so they are not n
    independent measurements. Folds the prior has no loss for scored nothing and are
    ignored; a candidate some other fold did not score (raced out, ``race``) cannot be
    chosen."""
    from scipy.special import stdtrit

    from .._numba._lam_race import improvement

    prior = losses.shape[1] - 1
    n, z, mean = improvement(np.ascontiguousarray(losses, dtype=np.float64))
    if n < 2:
        return prior
    gate = float(stdtrit(n - 1, 1.0 - _GATE_LEVEL))
    better = np.flatnonzero(z > gate)  # NaN (unscored somewhere) is never above
    if better.size == 0:
        return prior
    return int(better[np.argmin(mean[better])])


def race(losses: np.ndarray, threshold: float, narrow: bool = False) -> np.ndarray:
    """Which candidates the next split still scores, from the losses ``(n_folds,
    n_candidates)`` of the rounds scored so far (NaN where a candidate was raced out), the
    prior last (always kept).

    A candidate stays in the race when the folds so far favour it over the prior by more than
    ``threshold`` standard errors of the paired differences (``_RACE_FIRST`` after the first
    split, ``_RACE`` after two); one raced out earlier has NaN losses and stays out. With
    ``narrow``, of those only two go on: the one with the smallest mean loss, the likeliest to
    be ``choose``'s pick among the candidates that pass its gate, and the one the folds favour
    by the most standard errors, the likeliest to pass it (one candidate where they agree). To
    be chosen a candidate must beat the prior by ``t_{n-1}(0.99)`` standard errors over all
    splits together (``choose``; 2.72 over the default twelve rounds), and one that the first
    folds barely favour would need the others to favour it by far more than that; the
    candidates dropped are mostly the small lam, whose eigendecompositions are the selection's
    cost (``docs/design/lam_selection.md``, eleventh and twelfth rounds, has the replays on
    the benchmark's losses)."""
    from .._numba._lam_race import race_keep

    # a tie keeps the candidate listed first (the larger lam)
    return race_keep(np.ascontiguousarray(losses, dtype=np.float64), float(threshold), narrow)


def same_rows(A: np.ndarray) -> np.ndarray:
    """One id per row of A (n, d), equal for bitwise identical rows (``stratified_folds``'
    groups): rows viewed as byte strings, O(n d) memory beyond A."""
    A = np.ascontiguousarray(A)
    if A.shape[0] == 0 or A.shape[1] == 0:
        return np.zeros(A.shape[0], dtype=np.int64)
    keys = A.view(np.dtype((np.void, A.dtype.itemsize * A.shape[1]))).reshape(-1)
    return np.unique(keys, return_inverse=True)[1].reshape(-1).astype(np.int64)


def cv_rounds(
    codes: np.ndarray,
    n_folds: int | None,
    rank: int,
    rng: np.random.Generator,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Roles (n_rounds, l) of the labeled rows per CV round: 1 train, 2 held out, 0 unused.

    Stratified ``n_folds``-fold splits, ``_N_SPLITS`` of them up to ``_MANY_SPLITS_MAX`` labels
    and one above (``n_folds`` None: ``_LABEL_FOLDS`` and ``_ONE_SPLIT_FOLDS`` folds). A round's
    model costs O(p^3) per lam, p = min(training rows, rank); where p would exceed
    ``_CV_RANK_MAX`` the round trains on a stratified subset of ``_CV_RANK_MAX`` of its training
    rows (and still scores its whole held-out fold), which bounds the selection's cost
    independently of l. lam is relative to each round's own mu_max^2, the scale of its data
    term, so it carries over to the model on all labels; a subset sees less data than the final
    model and errs toward the larger lam, the prior's side. ``groups``: as in
    ``stratified_folds``."""
    many = codes.size <= _MANY_SPLITS_MAX
    n_splits = _N_SPLITS if many else 1
    if n_folds is None:
        n_folds = _LABEL_FOLDS if many else _ONE_SPLIT_FOLDS
    k = int(max(2, min(n_folds, codes.size)))
    roles = []
    capped = min(codes.size, rank) > _CV_RANK_MAX  # else no round can exceed the cap
    for _split in range(n_splits):
        folds = stratified_folds(codes, k, rng, groups)
        split = np.ones((k, codes.size), dtype=np.int8)  # k l bytes, no wider temporary
        split[folds, np.arange(codes.size)] = 2
        for role in split if capped else ():
            train = np.flatnonzero(role == 1)
            if min(train.size, rank) > _CV_RANK_MAX:
                part = stratified_folds(codes[train], -(-train.size // _CV_RANK_MAX), rng)
                role[train[part != 0]] = 0
        roles.append(split)
    return np.concatenate(roles)


def select_lam(PE, w, codes, n_classes, exps, rng, n_folds, groups=None):
    """Cross-validated exponent e (lam = mu_max^2 10^e) or None for the prior.

    ``PE`` (l, r): the labeled rows of E in S0's eigen-coordinates (``E_l U0``); ``w`` (r,):
    W's kept eigenvalues. Returns (e or None, mean criterion per candidate, mean held-out 0/1
    error per candidate); candidates are ``exps`` (largest lam first, as the estimator sorts
    them: ties in ``race`` and ``choose`` go to the larger lam) and then the prior. A
    candidate raced out after a split (``race``) reports the means of the folds that scored
    it (all of them, the prior too, when a split leaves no candidate in the race).
    ``n_folds``: folds per split, None for the default (``cv_rounds``); ``groups``: one id
    per labeled row, equal for identical rows, which the folds keep together
    (``stratified_folds``).
    """
    import numba

    from .._numba import _lam_cv as jit
    from .._numba._lam_race import raced_rounds
    from .._numba._lapack import addresses
    from .._threads import BLAS_ONE_THREAD as _BLAS

    # labels of two classes or more (``_lam_pairs.can_score``): some round trains and holds out
    roles, ends = informative_rounds(cv_rounds(codes, n_folds, w.size, rng, groups), codes)
    rel = np.concatenate([10.0 ** np.asarray(exps, dtype=np.float64), [np.inf]])
    if roles.shape[0] == 0:  # the caller keeps the prior and says why
        return None, np.full(rel.size, np.nan), np.full(rel.size, np.nan)
    codes64 = codes.astype(np.int64)
    n_rounds, n_rel = roles.shape[0], rel.size
    # Rounds and tasks run on Numba's threads, each with its own small matrix products: a
    # multi-threaded BLAS inside them would oversubscribe the cores (several times slower).
    # Without threadpoolctl to pin BLAS to one thread, they run one after another (work 0).
    # A task costs about 10 p^3 (eigendecomposition and solves, p <= the round's rank).
    p = min(w.size, _CV_RANK_MAX, codes.size)
    work = 10.0 * n_rounds * n_rel * float(p) ** 3 if _BLAS.available() else 0.0
    PE = np.ascontiguousarray(PE, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    lapack = addresses()  # partial eigendecompositions where few eigenvalues are negative

    # a batch of rounds (many folds, ``new_state``) holds at least one round per thread
    slots = max(8, numba.get_num_threads())
    state = jit.new_state(roles, w.size, int(n_classes), _STATE_FLOATS, slots)
    _warn_slow_scores(state[0], n_rel, w.size, int(n_classes), codes.size)
    # a task's cost grows as lam falls (more negative eigenvalues); the prior's is least
    cost = np.empty(n_rel)
    cost[np.argsort(-rel, kind="stable")] = np.arange(n_rel)
    # each round's mean held-out losses (4, n_rounds, n_rel); NaN where a (round, lam) was
    # not scored. Means, not per-sample losses: O(n_rounds n_rel), whatever the folds (cv = l
    # gives l rounds, and per-sample losses would be O(l^2))
    out = np.full((4, n_rounds, n_rel), np.nan)
    with _BLAS, numba_threads(work):
        raced_rounds(
            state, PE, w, codes64, int(n_classes), roles, ends, rel, _RIDGE_ALPHA, cost,
            _RACE_FIRST, _RACE, _RACE_NARROW, _CRITERION, out, numba.get_num_threads(), lapack,
        )  # fmt: skip
    scored = ~np.isnan(out[_CRITERION][:, -1])  # every kept round scores the prior
    j = choose(out[_CRITERION])
    crit = _nanmean_columns(out[_CRITERION][scored])
    err = _nanmean_columns(out[2][scored])
    return (None if j == n_rel - 1 else float(exps[j])), crit, err


def _warn_slow_scores(dims: np.ndarray, n_rel: int, rank: int, n_classes: int, l: int) -> None:
    """Warn before a selection whose scores alone take more than ``_SLOW_SCORES``
    multiply-adds. Every task scores its round's rows in every one-vs-rest column: about
    ``(l_T + l_V) (p + 1 + _SCORE_ENTRY_COST) c`` for c classes and p = min(l_T, rank), so
    many classes with few labels each (thousands of identities) cost labels x classes x
    (rank + a constant) per round and lam, where the rest of the fit costs little. ``dims``:
    ``new_state``'s (p, l_T, l_V) rows."""
    c = 1 if n_classes == 2 else n_classes
    lT, lV = dims[:, 1].astype(np.float64), dims[:, 2].astype(np.float64)
    per_entry = np.minimum(lT, rank) + 1.0 + _SCORE_ENTRY_COST
    work = float(n_rel) * c * float(np.sum((lT + lV) * per_entry))
    if work > _SLOW_SCORES:
        import warnings

        from .._feature_names import _user_stacklevel

        warnings.warn(
            f"lam='auto' scores {n_classes:,} classes on {l:,} labels: its "
            f"cross-validation costs labels x classes x rank per fold and lam, about "
            f"{work:.1e} multiply-adds here, which can take minutes. Pass lam as a number "
            "to skip the selection.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


def informative_rounds(roles: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(roles, ends)``: ``cv_rounds``' roles without what tells nothing about lam, and where
    each split ends among the rounds left (split s is rounds ``ends[s - 1]:ends[s]``; a split
    left with no round is dropped, the last end is the number of rounds).

    A held-out row whose class has no training row in its round is left out of it (role 0):
    no classifier trained there can predict its class, so its loss reflects only the scale of
    the scores, not how well a kernel classifies; with one labeled sample per class every
    held-out row is such a row. A round left with no training or no held-out row is dropped,
    and so is a round equal to an earlier one (tiny classes make the splits deal the same
    folds): the paired test must count each measurement once, not twice."""
    n_rounds, l = roles.shape
    if n_rounds == 0 or l == 0:
        return np.zeros((0, l), dtype=np.int8), np.zeros(0, dtype=np.int64)
    bounds = _split_ends(roles)
    # trained[t, c]: round t trains on a row of class c, an OR over each class's columns
    # (temporaries of n_rounds l bytes: no index array per training row)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    trained_present = np.logical_or.reduceat(roles[:, order] == 1, starts, axis=1)
    trained = np.zeros((n_rounds, int(codes.max(initial=-1)) + 1), dtype=bool)
    trained[:, sorted_codes[starts]] = trained_present
    roles = np.where((roles == 2) & ~trained[:, codes], 0, roles).astype(np.int8)
    useful = (roles == 1).any(axis=1) & (roles == 2).any(axis=1)
    at = np.flatnonzero(useful)
    if at.size == 0:
        return np.zeros((0, l), dtype=np.int8), np.zeros(0, dtype=np.int64)
    kept, seen = [], set()
    for t in at:  # a repeated round counts once
        key = roles[t].tobytes()
        if key not in seen:
            seen.add(key)
            kept.append(t)
    at = np.asarray(kept, dtype=np.int64)
    ends = np.unique(np.searchsorted(at, bounds))  # kept rounds before each bound
    return roles[at], ends[ends > 0]


def balanced_order(cost: np.ndarray, n_threads: int) -> np.ndarray:
    """An order of the tasks with estimated costs ``cost`` in which the static schedule of a
    ``prange`` (contiguous chunks, one per thread, the first ``n % n_threads`` one task
    longer) gives every thread about the same total cost: the tasks, costliest first, are
    dealt to the chunks back and forth (0, 1, ..., T - 1, T - 1, ..., 0, ...), a last
    incomplete round to the first chunks. The tasks' results do not depend on the order."""
    from .._numba._lam_race import balanced_order as jitted

    return jitted(np.ascontiguousarray(cost, dtype=np.float64), int(n_threads))


def _split_ends(roles: np.ndarray) -> np.ndarray:
    """Where each split of ``cv_rounds``' roles ends: split s ends at the round after which
    every labeled row has been held out s + 1 times (the last end is the number of rounds)."""
    held = np.zeros(roles.shape[1], dtype=np.int64)  # O(l), not a cumulative (n_rounds, l)
    fewest, ends = 0, []
    for t in range(roles.shape[0]):  # a round holds a row out at most once
        held += roles[t] == 2
        if held.size and held.min() > fewest:
            fewest = int(held.min())
            ends.append(t + 1)
    if not ends or ends[-1] != roles.shape[0]:
        ends.append(roles.shape[0])
    return np.asarray(ends, dtype=np.int64)


def round_means(per_sample: np.ndarray) -> np.ndarray:
    """(4, n_rounds, n_lams) mean held-out losses of each round from the per-sample losses
    (4, n_rounds, l, n_lams) of ``_lam_race.cv_losses``; NaN where a round scored no row at
    that lam."""
    from .._numba._lam_cv import round_means as jitted

    return jitted(np.ascontiguousarray(per_sample, dtype=np.float64))


def onestep_model(PE, w, codes, n_classes, rel_lam):
    """The one-step model on every labeled row at ``lam = rel_lam * mu_max^2``.

    Returns ``(G_r, lam)``: S in S0's eigen-coordinates as a factor (r x k; ``S = U0 G_r
    G_r^T U0^T``, ``onestep_at``) and the absolute lam."""
    from .._numba._lam_cv import restricted_problem
    from .._numba._lapack import addresses
    from .._threads import BLAS_ONE_THREAD as _BLAS

    # p x p algebra (p <= min(l, m)): one BLAS thread is as fast, and does not fight the
    # Numba threads still spinning from the cross-validation for the cores
    with _BLAS:
        Vc, mu, C, R, _ = restricted_problem(
            np.ascontiguousarray(PE, dtype=np.float64),
            np.asarray(w, dtype=np.float64),
            codes.astype(np.int64),
            int(n_classes),
            addresses(),
        )
        return onestep_at(w, Vc, mu, C, R, rel_lam)


def onestep_at(w, Vc, mu, C, R, rel_lam):
    """``(G_r, lam)``: the one-step model of a restricted problem (``Vc``, ``mu``, ``C``,
    ``R``: labels' or pairs') at ``lam = rel_lam * mu_max^2``, in S0's eigen-coordinates as a
    factor ``S_r = G_r G_r^T``; S0's where the problem is empty.

    ``S_r = W^-1 - Vc C Vc^T + Vc Y Vc^T`` with ``C = (Vc^T W Vc)^-1``. The first two terms are
    ``W^-1/2 (I - P) W^-1/2``, P the orthogonal projector onto ``range(W^1/2 Vc)``, so with
    ``Y = L L^T`` (``onestep``)

        G_r = [W^-1/2 Q_perp, Vc L],   Q_perp an orthonormal basis of range(W^1/2 Vc)^perp,

    PSD by construction, and no eigendecomposition of S beyond the p x p one of the model
    (Q_perp is empty where the labels span S0's range, p = r)."""
    from .._numba._lam_cv import onestep

    w = np.asarray(w, dtype=np.float64)
    lam = rel_lam * float(mu[-1]) ** 2 if mu.size else np.inf
    prior = 1.0 / np.sqrt(w)
    if not mu.size:
        return np.diag(prior), lam
    p, r = mu.size, w.size
    parts = [Vc @ onestep(mu, C, R, lam)]
    if p < r:
        Q = np.linalg.qr(Vc * np.sqrt(w)[:, None], mode="complete")[0]
        parts.insert(0, Q[:, p:] * prior[:, None])
    return np.hstack(parts), lam


def in_landmarks(model, PE, w, U0, rel_lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(S, F)`` of a one-step ``model`` (``_lam_pairs.one_step_side``) at ``rel_lam``: its
    factor in S0's eigen-coordinates (``onestep_at``) rotated to the landmarks,
    ``F = U0 G_r``, and ``S = F F^T``, PSD by construction."""
    F = U0 @ model(PE, w, rel_lam)[0]
    return _sym(F @ F.T), F


def _path_nka(prob, lams, labels, solve_kw, progress):
    """Eq. (12) along the warm-started path: ``rho(S, S0) * rho(E_l S E_l^T, K*)`` per lam
    (centred alignments; for pairs only, the masked kernel against the targets on the
    constrained entries) and the solutions ``(S, n_iter, certificate, converged)``."""
    crit = np.empty(lams.size)
    sols = []
    Sref = prob.S0
    if labels is not None:
        El, Y = prob.El_labels, prob.Y_labels
    else:  # pairs only: the ideal kernel on the constrained points
        El, Y = None, None
    for k, (lam, S, it, cert, ok) in enumerate(_solve_path(prob, lams, solve_kw)):
        rho1 = _dense(S, Sref, True, zero=0.0)
        if El is not None:
            rho2 = _factored(El @ _factor(S), Y, True, zero=0.0)
        else:
            # masked kernel vs targets on the constrained entries only (sparse)
            vals = prob.pair_values(S)
            den = np.linalg.norm(vals) * np.linalg.norm(prob.t)
            rho2 = float(vals @ prob.t / den) if den > 0 else 0.0
        crit[k] = rho1 * rho2
        sols.append((S, it, cert, ok))
        progress.update(lam=lam, criterion=crit[k], iterations=it)
    return crit, sols


def nka_best(crit: np.ndarray, lams: np.ndarray) -> int:
    """Index of the lam eq. (12) keeps: the criterion's argmax, or the largest lam (the
    prior's side) with a warning where the criterion is flat to round-off along the path
    (its argmax would then be a choice of the rounding, not of the data)."""
    if crit.size > 1 and np.ptp(crit) <= 1e-12 * max(1.0, float(np.abs(crit).max())):
        import warnings

        from .._feature_names import _user_stacklevel

        warnings.warn(
            f"lam='nka': eq. (12)'s criterion is {crit[0]:.6g} at every lam of the grid, so it "
            "does not choose one; the largest was kept. The side information does not move the "
            "alignments (e.g. one labeled class); pass lam as a number or use "
            "lam='auto'.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
        return int(np.argmax(lams))
    return int(np.argmax(crit))


def _nanmean_columns(values: np.ndarray) -> np.ndarray:
    """Mean over rows ignoring NaN; NaN (without numpy's empty-slice warning) where none is set."""
    ok = ~np.isnan(values)
    count = ok.sum(axis=0)
    total = np.where(ok, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)
