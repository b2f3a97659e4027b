"""BART against the boosting learner on one table: data sets and the loading of a table
(``datasets``), the scores of predictive distributions (``metrics``), the comparison itself
(``run``), the HTML report (``report``), the command line (``cli``,
``python -m pymc_trees compare``) and the demo (``demo``, ``make demo``).  See
``docs/compare.md``."""

from pymc_trees.comparison.datasets import DATASETS, TASKS, friedman1, friedman1_f, load_data
from pymc_trees.comparison.metrics import (LEVELS, crps_bernoulli, crps_normal, crps_poisson,
                                           crps_sample, interval_coverage, reliability_bins)
from pymc_trees.comparison.report import write_report
from pymc_trees.comparison.result import ComparisonResult, format_result
from pymc_trees.comparison.run import compare

__all__ = ["compare", "ComparisonResult", "format_result", "write_report", "load_data",
           "DATASETS", "TASKS", "LEVELS", "crps_sample", "crps_normal", "crps_poisson",
           "crps_bernoulli", "interval_coverage", "reliability_bins", "friedman1",
           "friedman1_f"]
