"""Command line of pymc_trees: ``python -m pymc_trees compare DATA --target COL ...``.

``compare`` fits BART in a PyMC model and the boosting learner on the same held-out rows of a
table (a CSV file or a bundled real data set), prints the metrics table and writes an HTML
report; see :func:`pymc_trees.compare` and ``docs/compare.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pymc_trees.comparison.datasets import DATASETS, TASKS


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pymc_trees",
                                 description="pymc_trees command line")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = ", ".join(f"{k} ({v.target}, {v.task})" for k, v in DATASETS.items())
    c = sub.add_parser(
        "compare", help="BART against boosting on one table: held-out metrics and a report",
        description="Fit BART in a PyMC model and the boosting learner on the same held-out "
                    "rows; print held-out RMSE or log loss, log predictive density, CRPS, "
                    "90%% interval coverage and width, calibration and wall time, and write "
                    "an HTML report.",
        epilog=f"Bundled data sets (name: default target, task): {names}.")
    c.add_argument("data", metavar="DATA",
                   help="a CSV file, or the name of a bundled data set (see below)")
    c.add_argument("--target", metavar="COL",
                   help="the column to predict (required for a CSV file)")
    c.add_argument("--task", choices=TASKS,
                   help="likelihood: Normal, Bernoulli (binary, logit) or Poisson (log); "
                        "default: two distinct target values -> classification, else "
                        "regression (a bundled data set: its own)")
    split = c.add_mutually_exclusive_group()
    split.add_argument("--folds", type=int, metavar="K", help="K-fold cross-validation")
    split.add_argument("--test-size", type=float, metavar="F",
                       help="one random held-out share (default 0.3)")
    c.add_argument("--seed", type=int, default=0, metavar="S")
    c.add_argument("--out", default="compare_report.html", metavar="report.html",
                   help="the HTML report (default: compare_report.html)")
    c.add_argument("--m", type=int, default=50, metavar="M", help="BART's trees (default 50)")
    c.add_argument("--draws", type=int, default=500, metavar="D",
                   help="kept draws per chain, and as many tuning iterations (default 500)")
    c.add_argument("--tune", type=int, default=None, metavar="T",
                   help="tuning iterations per chain (default: --draws)")
    c.add_argument("--chains", type=int, default=2)
    c.add_argument("--min-leaf", type=int, default=5, metavar="N",
                   help="BART's fewest training rows in a leaf (default 5); every fold needs "
                        "at least 2 N training rows, so lower it for a small table")
    c.add_argument("--leaf-sd", type=float, default=None, metavar="SD",
                   help="prior sd of every leaf value of BART, held fixed (default: learned, its "
                        "prior centred on the calibration from the target)")
    c.add_argument("--drop", default="", metavar="COL,...",
                   help="comma-separated columns left out of the covariates")
    c.add_argument("--categorical", default="", metavar="COL,...",
                   help="comma-separated covariates split by their levels, such as a column "
                        "of codes 1, 2, 5+ (a column of numbers with a few other cells is "
                        "refused otherwise)")
    c.add_argument("--max-rows", type=int, default=None, metavar="N",
                   help="use a random subset of N rows (large tables such as diamonds)")
    c.add_argument("--progressbar", action="store_true", help="PyMC's progress bar")
    c.add_argument("--quiet", action="store_true", help="no line per stage")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 1 refused input, 2 usage)."""
    args = _parser().parse_args(argv)
    if args.command == "compare":
        from pymc_trees.comparison.result import format_result
        from pymc_trees.comparison.run import compare

        drop = [c.strip() for c in args.drop.split(",") if c.strip()]
        categorical = [c.strip() for c in args.categorical.split(",") if c.strip()]
        try:
            res = compare(args.data, args.target, task=args.task, folds=args.folds,
                          test_size=args.test_size, seed=args.seed, m=args.m,
                          draws=args.draws, tune=args.tune, chains=args.chains,
                          min_leaf=args.min_leaf, leaf_sd=args.leaf_sd, drop=drop,
                          categorical=categorical,
                          max_rows=args.max_rows, out=args.out, progress=not args.quiet,
                          progressbar=args.progressbar)
        except (ValueError, FileNotFoundError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        info = res.info
        print()
        print(f"{info['target']} ({info['task']}), {info['scheme']}, "
              f"{int(res.table['held-out rows'].iloc[0]):,} held-out rows:")
        print(format_result(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
