"""BART against the boosting learner on one table: data loading (``datasets``), held-out
metrics (``run``), the HTML report (``report``), the command line (``cli``,
``python -m pymc_trees compare``) and the demo (``demo``, ``make demo``).  See
``docs/compare.md``."""

from pymc_trees.comparison.datasets import DATASETS, friedman1, friedman1_f
from pymc_trees.comparison.report import write_report
from pymc_trees.comparison.result import format_result
from pymc_trees.comparison.run import (LEVELS, TASKS, ComparisonResult, compare, crps_bernoulli,
                                       crps_normal, crps_poisson, crps_sample,
                                       interval_coverage, load_data, reliability_bins)

__all__ = ["compare", "ComparisonResult", "format_result", "write_report", "load_data",
           "DATASETS", "TASKS", "LEVELS", "crps_sample", "crps_normal", "crps_poisson",
           "crps_bernoulli", "interval_coverage", "reliability_bins", "friedman1",
           "friedman1_f"]
