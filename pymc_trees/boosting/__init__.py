"""Gradient-boosted trees in the style of XGBoost with a scikit-learn API, the frequentist
baseline on the tree core BART uses (:mod:`pymc_trees.core`).  Nothing of PyMC is imported.

* :class:`BoostedTreesRegressor`, :class:`BoostedTreesClassifier` (``estimators``);
* ``kernels``: the numba tree growers (exact and histogram) and their split rules.

See ``docs/boosting.md``.
"""

from pymc_trees.boosting.estimators import (METRICS, OBJECTIVES, BoostedTreesClassifier,
                                            BoostedTreesRegressor)

__all__ = ["BoostedTreesRegressor", "BoostedTreesClassifier", "OBJECTIVES", "METRICS"]
