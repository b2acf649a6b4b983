"""How much the benchmark's summary of the default moves with the cross-validation's fold draw.

``docs/design/lam_selection.md``, tenth round. Runs ``scripts/bench_generalized.py`` with the
folds of ``lam="auto"`` dealt from a shifted stream of the same random state: before dealing,
``cv_rounds`` draws ``DRAW`` integers it then ignores. Draw 0 is the shipped behaviour; every
other draw is an equally valid set of folds, so the spread of the summary (capture, worst
loss, slowest time) over draws is the part of it that comes from the folds alone.

    DRAW=1 python scripts/research/study_fold_draws.py --splits 5 --out draw1.md
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nystrom_priors.generalized import _lam  # noqa: E402

DRAW = int(os.environ.get("DRAW", "0"))
_cv_rounds = _lam.cv_rounds


def _shifted_cv_rounds(codes, n_folds, rank, rng):
    if DRAW:
        rng.integers(1 << 30, size=DRAW)
    return _cv_rounds(codes, n_folds, rank, rng)


_lam.cv_rounds = _shifted_cv_rounds

import bench_generalized  # noqa: E402

if __name__ == "__main__":
    sys.exit(bench_generalized.main(sys.argv[1:]))
