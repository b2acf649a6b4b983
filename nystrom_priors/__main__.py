"""Command line: ``python -m nystrom_priors {demo,reproduce,bench} ...``.

The subcommands run the repository's scripts (``scripts/*.py`` next to the package in a
source checkout or an editable install); arguments after the subcommand are passed through,
so ``python -m nystrom_priors reproduce hu2011 --trials 2`` is
``python scripts/reproduce_hu2011.py --trials 2``.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

REPRODUCE = {
    "zhang2012": ("reproduce_zhang2012.py", "Zhang et al. 2012, Table 1 and Figure 1"),
    "kulis2006": ("reproduce_kulis2006.py", "Kulis et al. 2006, pendigits NMI vs constraints"),
    "hu2011": ("reproduce_hu2011.py", "Hu et al. 2011, Table 3 pair accuracy"),
}
BENCH = {
    "extrapolation": ("bench_extrapolation.py", "k(X, Z) vs bare GEMM and scikit-learn"),
    "generalized": ("bench_generalized.py", "default GeneralizedNystrom vs baselines on 19 sets"),
    "logdet": ("bench_logdet.py", "Bregman projections per second vs metric-learn ITML"),
    "scale": ("bench_scale.py", "10M rows streaming vs Dask; MNIST-sized fits"),
    "sparse": ("bench_sparse.py", "100,000 x 50,000 tf-idf-like CSR vs scikit-learn's Nystroem"),
    "landmarks": ("bench_landmarks.py", "trace error and time of the landmark rules"),
    "million": ("bench_million.py", "1M samples, few labels: GN + LinearSVC vs LabelSpreading"),
}


def _scripts_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(os.path.dirname(here), "scripts")
    if not os.path.isdir(path):
        raise SystemExit(
            "The scripts directory was not found next to the package (expected "
            f"{path}); the demo, reproduce and bench commands need a source checkout or an "
            "editable install (pip install -e .)."
        )
    return path


def _run(script: str, argv: list[str]) -> None:
    path = os.path.join(_scripts_dir(), script)
    old = sys.argv
    sys.argv = [path, *argv]
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = old


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m nystrom_priors",
        description="Inductive low-rank kernel learning from side information: demos, the "
        "papers' reproductions and the benchmarks. Options after the subcommand go to its "
        "script; '-- --help' shows the script's own options, e.g. "
        "'python -m nystrom_priors reproduce hu2011 -- --help'.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="a small end-to-end demo (scripts/demo.py)")
    rep = sub.add_parser("reproduce", help="reproduce a paper's table or figure")
    rep.add_argument(
        "paper",
        choices=sorted(REPRODUCE),
        help="; ".join(f"{k}: {v[1]}" for k, v in sorted(REPRODUCE.items())),
    )
    ben = sub.add_parser("bench", help="run a benchmark (ratios against a named baseline)")
    ben.add_argument(
        "name",
        choices=sorted(BENCH),
        help="; ".join(f"{k}: {v[1]}" for k, v in sorted(BENCH.items())),
    )
    args, rest = parser.parse_known_args(argv)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if args.command == "demo":
        _run("demo.py", rest)
    elif args.command == "reproduce":
        _run(REPRODUCE[args.paper][0], rest)
    else:
        _run(BENCH[args.name][0], rest)


if __name__ == "__main__":
    main()
