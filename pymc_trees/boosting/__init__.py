"""Gradient-boosted trees in the style of XGBoost with a scikit-learn API, the frequentist
baseline on the tree core BART uses (:mod:`pymc_trees.core`).  Nothing of PyMC is imported.

* :class:`BoostedTreesRegressor`, :class:`BoostedTreesClassifier` (``estimators``);
* ``objectives``: the objectives' names, initial margins and evaluation metrics;
* ``kernels``: the numba tree growers (exact and histogram), their split rules, and the
  prediction of one tree.

See ``docs/boosting.md``.
"""

from pymc_trees.boosting.estimators import BoostedTreesClassifier, BoostedTreesRegressor
from pymc_trees.boosting.objectives import METRICS, OBJECTIVES

__all__ = ["BoostedTreesRegressor", "BoostedTreesClassifier", "OBJECTIVES", "METRICS"]
