"""Jitted drivers of lam="auto"'s cross-validation on labels, and its race.

Private: arrays and scalars only; the rule and its reasons are in
``nystrom_priors/generalized/_lam.py`` (``select_lam``, ``race``, ``balanced_order``), whose
Python functions call the kernels here. The drivers deal ``_lam_cv``'s rounds and tasks to
Numba's threads: ``prepare_rounds`` and ``score_rounds`` any of them, ``cv_losses`` every
round at every lam, and ``raced_rounds`` a whole selection in one call:
per split, the rounds prepared (``_lam_cv.prepare_round``), the race deciding which
candidates the split scores, the tasks dealt by cost and scored (``_lam_cv.score_task``).
Between the parallel stages there is only a little arithmetic on a few dozen numbers, which
in Python took about as long as the stages themselves on a set of a few hundred rows.
"""

import numpy as np
from numba import njit, prange

from ._lam_cv import new_state, prepare_round, score_task, score_task_samples


@njit(cache=True, nogil=True)
def improvement(M):
    """``(n, z, mean)`` of the per-round losses ``M`` (n_rounds, n_candidates; NaN where a
    round did not score a candidate; the prior last): the number n of rounds that scored the
    prior, each candidate's mean improvement over the prior in standard errors of the paired
    differences over those rounds, and its mean loss there. NaN where one of those rounds did
    not score the candidate, and z all NaN when n < 2 (no standard error)."""
    n_rounds, c = M.shape
    prior = c - 1
    rows = np.empty(n_rounds, dtype=np.int64)
    n = 0
    for t in range(n_rounds):
        if not np.isnan(M[t, prior]):
            rows[n] = t
            n += 1
    z = np.full(c, np.nan)
    mean = np.full(c, np.nan)
    for j in range(c):
        total = 0.0
        gain = 0.0
        for k in range(n):
            total += M[rows[k], j]
            gain += M[rows[k], j] - M[rows[k], prior]
        if n == 0 or np.isnan(total):
            continue
        mean[j] = total / n
        if n < 2:
            continue
        d = gain / n
        ss = 0.0
        for k in range(n):
            e = M[rows[k], j] - M[rows[k], prior] - d
            ss += e * e
        se = np.sqrt(ss / (n - 1)) / np.sqrt(n)
        if se > 0.0:
            z[j] = -d / se
        elif d != 0.0:  # no spread: an improvement (or loss) on every round alike
            z[j] = -np.inf if d > 0.0 else np.inf
    return n, z, mean


@njit(cache=True, nogil=True)
def race_keep(M, threshold, narrow):
    """Which candidates the next split scores (``_lam.race``, whose docstring gives the rule)
    from the per-round losses ``M`` (n_rounds, n_candidates), the prior last and kept."""
    c = M.shape[1]
    n, z, mean = improvement(M)
    keep = np.ones(c, dtype=np.bool_)
    if n < 2:
        return keep
    best, clearest, n_clear = -1, -1, 0
    for j in range(c - 1):
        keep[j] = z[j] > threshold  # NaN (raced out before) is never above
        if keep[j]:
            n_clear += 1
            # strict comparisons: a tie keeps the candidate listed first (the larger lam)
            if best < 0 or mean[j] < mean[best]:
                best = j
            if clearest < 0 or z[j] > z[clearest]:
                clearest = j
    if narrow and n_clear > 1:
        keep[:] = False
        keep[best] = True
        keep[clearest] = True
    keep[c - 1] = True
    return keep


@njit(cache=True, nogil=True)
def balanced_order(cost, n_threads):
    """The task order of ``_lam.balanced_order`` (its docstring gives the rule)."""
    n = cost.size
    T = max(1, min(n_threads, n))
    full = (n // T) * T
    chunk = np.empty(n, dtype=np.int64)
    for k in range(n):
        lap, r = k // T, k % T
        chunk[k] = r if (lap % 2 == 0 or k >= full) else T - 1 - r
    of_task = np.empty(n, dtype=np.int64)
    of_task[np.argsort(-cost, kind="mergesort")] = chunk
    return np.argsort(of_task, kind="mergesort")


@njit(cache=True, nogil=True)
def _split_tasks(start, end, keep, cost, n_threads):
    """``(task_round, task_lam)`` of the rounds ``start:end`` at the candidates ``keep``, in
    ``balanced_order`` of their ``cost`` (per candidate)."""
    lams = np.flatnonzero(keep)
    n_tasks = (end - start) * lams.size
    task_round = np.empty(n_tasks, dtype=np.int64)
    task_lam = np.empty(n_tasks, dtype=np.int64)
    for k in range(n_tasks):
        task_round[k] = start + k // lams.size
        task_lam[k] = lams[k % lams.size]
    order = balanced_order(cost[task_lam], n_threads)
    return task_round[order], task_lam[order]


@njit(cache=True, nogil=True)
def _race_step(out, criterion, start, threshold, narrow):
    """``race_keep`` on the per-round means of loss ``criterion`` of the rounds ``:start``."""
    return race_keep(out[criterion, :start], threshold, narrow)


@njit(cache=True, parallel=True)
def raced_rounds(
    state, PE, w, codes, n_classes, roles, ends, rel, alpha, cost, race_first, race_later,
    narrow, criterion, out, n_threads, lapack,
):  # fmt: skip
    """Score the rounds of ``roles`` split by split into ``out`` (4, n_rounds, n_lams: each
    round's mean held-out losses, ``_lam_cv.score_task``).

    Split s is rounds ``ends[s - 1]:ends[s]``. The first scores every candidate ``rel``; a
    later one only those ``race_keep`` keeps from the per-round means of loss ``criterion`` of
    the splits before it, at ``race_first`` standard errors after one split and
    ``race_later`` after more, none left ending the selection. A split's rounds are prepared
    just before it (``_lam_cv.prepare_round``), with as many after them as keep every thread
    busy (``n_threads``: Numba's, from the caller, since reading them here would keep this
    function out of the cache); its tasks are dealt by ``cost`` (per candidate) in
    ``balanced_order``. Where ``state`` holds fewer slots than rounds (``new_state``'s
    memory bound), a split is prepared and scored a batch of that many rounds at a time:
    the same scores, as every task depends on its own round alone. The serial steps between
    the parallel loops are calls, which Numba does not parallelise: each array expression
    here would be a parallel region of its own."""
    n_rounds = roles.shape[0]
    n_slots = state[10][0]
    every = n_slots >= n_rounds  # else a batch of n_slots rounds at a time (``new_state``)
    keep = np.ones(rel.size, dtype=np.bool_)
    prepared = 0
    # int64, not the literal 0: a literal argument compiles its callees a second time
    start = np.int64(0)
    for s in range(ends.size):
        end = ends[s]
        if s > 0:
            threshold = race_first if s == 1 else race_later
            keep = _race_step(out, criterion, start, threshold, narrow)
            if not keep[: rel.size - 1].any():  # no candidate left for this split to test
                break
        first = start
        while first < end:
            last = end if every else min(end, first + n_slots)
            if last > prepared:  # Python's modulo: rounds after ``last`` that fill the threads
                stop = min(n_rounds, last + (prepared - last) % n_threads) if every else last
                for k in prange(stop - prepared):
                    prepare_round(state, PE, w, codes, n_classes, roles, prepared + k, lapack)
                prepared = stop
            task_round, task_lam = _split_tasks(first, last, keep, cost, n_threads)
            for k in prange(task_round.size):
                t, j = task_round[k], task_lam[k]
                score_task(state, roles, codes, n_classes, rel, alpha, t, j, out, lapack)
            first = last
        start = end


@njit(cache=True, parallel=True)
def prepare_rounds(state, PE, w, codes, n_classes, roles, rounds, lapack):
    """Fill ``state`` (``new_state``) with the ``_round_constants`` of the rounds ``rounds``,
    in parallel, for ``score_rounds``. Preparing some rounds now and others later lets a
    parallel stage take a round more than it needs where a thread would otherwise idle.
    ``lapack``: ``_lapack.addresses()``, or empty for ``np.linalg`` alone."""
    for k in prange(rounds.size):
        prepare_round(state, PE, w, codes, n_classes, roles, rounds[k], lapack)


@njit(cache=True, parallel=True)
def score_rounds(
    state, roles, codes, n_classes, rel_lams, alpha, task_round, task_lam, out, lapack
):
    """Score the tasks ``(task_round[k], task_lam[k])`` into ``out`` (4, n_rounds, l, n_lams),
    per sample, in parallel (``score_task_samples``). ``state`` is ``new_state`` with a slot
    per round (no ``max_floats``), filled by ``prepare_rounds`` for every round a task
    names; each task writes only its own (t, j)."""
    dims = state[0]
    if state[10][0] < dims.shape[0]:  # rounds sharing a slot: the later overwrote the earlier
        raise ValueError("score_rounds: the state has fewer slots than rounds")
    for k in range(task_round.size):  # a skipped round would leave NaN: a different choice
        if dims[task_round[k], 0] == -2:
            raise ValueError("score_rounds: a task names a round prepare_rounds did not fill")
    for k in prange(task_round.size):
        t, j = task_round[k], task_lam[k]
        score_task_samples(state, roles, codes, n_classes, rel_lams, alpha, t, j, out, lapack)


@njit(cache=True)
def cv_losses(PE, w, codes, n_classes, roles, rel_lams, alpha):
    """Held-out losses per sample (4, n_rounds, l, n_lams) of every round at every lam:
    squared loss, squared hinge, 0/1 error and scaled margin ramp (``_lam_cv._losses``) of
    each row in the rounds that score it, NaN elsewhere.

    ``roles`` (n_rounds, l) marks each labeled row per round: 1 trains the round's model, 2 is
    scored, 0 is left out. A round with no training row scores nothing."""
    total, l = roles.shape
    state = new_state(roles, w.size, n_classes)
    every = np.zeros(0, dtype=np.int64)  # np.linalg alone: all eigenpairs (np.linalg.eigh)
    prepare_rounds(state, PE, w, codes, n_classes, roles, np.arange(total), every)
    out = np.full((4, total, l, rel_lams.size), np.nan)
    n = rel_lams.size
    task_round = np.empty(total * n, dtype=np.int64)
    task_lam = np.empty(total * n, dtype=np.int64)
    for t in range(total):
        for j in range(n):
            task_round[t * n + j] = t
            task_lam[t * n + j] = j
    args = (rel_lams, alpha, task_round, task_lam, out, every)
    score_rounds(state, roles, codes, n_classes, *args)
    return out
