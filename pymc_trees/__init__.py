"""pymc_trees: exact Bayesian Additive Regression Trees inside PyMC models, and a
gradient-boosted-trees baseline on the same tree core.

One subpackage per audience (``docs/design.md``, "Code layout"):

* :mod:`pymc_trees.bart` - BART in a PyMC model: :class:`BARTTree`, the steps ``pm.sample()``
  assigns by itself (:class:`CGMTreeStep`, :class:`PGTreeStep`, :class:`NoiseGibbs`),
  :func:`noise_prior`, :func:`leaf_calibration`.
* :mod:`pymc_trees.results` - a fitted trace at new rows: :func:`predict`, :func:`forests`,
  :func:`sample_posterior_predictive` (PyMC's function for models with tree terms) and
  :func:`compute_log_likelihood`.
* :mod:`pymc_trees.boosting` - ``BoostedTreesRegressor`` and ``BoostedTreesClassifier``
  (XGBoost's objective and split rules, a scikit-learn API; no PyMC).
* :mod:`pymc_trees.interpret` - variable importance, partial dependence and ICE curves per
  posterior draw (:func:`variable_importance`, :func:`partial_dependence`) and their plots.
* :mod:`pymc_trees.comparison` - BART against boosting on one table (:func:`compare`), its
  report and ``python -m pymc_trees compare``.
* :mod:`pymc_trees.core` - what both learners share (binning, packed forests and their
  prediction kernels, :class:`TableSchema`); numpy and numba only.

The names are loaded on first use, so ``import pymc_trees.boosting`` or
``import pymc_trees.core`` loads no PyMC; the first PyMC-side name used loads
:mod:`pymc_trees.bart`, which registers the tree steps with PyMC.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the subpackage that defines it
_HOMES = {
    "BARTTree": "pymc_trees.bart",
    "CGMTreeStep": "pymc_trees.bart",
    "PGTreeStep": "pymc_trees.bart",
    "NoiseGibbs": "pymc_trees.bart",
    "ForestSampler": "pymc_trees.bart",
    "TreePrior": "pymc_trees.bart",
    "ModelStructureError": "pymc_trees.bart",
    "noise_prior": "pymc_trees.bart",
    "leaf_calibration": "pymc_trees.bart",
    "predict": "pymc_trees.results",
    "forests": "pymc_trees.results",
    "sample_posterior_predictive": "pymc_trees.results",
    "compute_log_likelihood": "pymc_trees.results",
    "PackedForest": "pymc_trees.core",
    "TableSchema": "pymc_trees.core",
    "variable_importance": "pymc_trees.interpret",
    "partial_dependence": "pymc_trees.interpret",
    "plot_variable_importance": "pymc_trees.interpret",
    "plot_partial_dependence": "pymc_trees.interpret",
    "compare": "pymc_trees.comparison",
}
_SUBPACKAGES = ("bart", "results", "boosting", "interpret", "comparison", "core")

__all__ = list(_HOMES)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from pymc_trees.bart import (BARTTree, CGMTreeStep, ForestSampler, ModelStructureError,
                                 NoiseGibbs, PGTreeStep, TreePrior, leaf_calibration, noise_prior)
    from pymc_trees.comparison import compare
    from pymc_trees.core import PackedForest, TableSchema
    from pymc_trees.interpret import (partial_dependence, plot_partial_dependence,
                                      plot_variable_importance, variable_importance)
    from pymc_trees.results import (compute_log_likelihood, forests, predict,
                                    sample_posterior_predictive)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"pymc_trees.{name}")
    raise AttributeError(f"module 'pymc_trees' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({"__version__", *_HOMES, *_SUBPACKAGES})
