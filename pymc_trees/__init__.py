"""pymc_trees: exact Bayesian Additive Regression Trees inside PyMC models, and a
gradient-boosted-trees baseline on the same tree core.

One subpackage per audience (``docs/explanation/code-layout.md``, "Code layout"):

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
import importlib.abc
import importlib.util
import sys
import warnings
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
    "plot_convergence": "pymc_trees.interpret",
    "plot_partial_dependence_grid": "pymc_trees.interpret",
    "select_variables": "pymc_trees.interpret",
    "plot_submodels": "pymc_trees.interpret",
    "plot_scatter_submodels": "pymc_trees.interpret",
    "compare": "pymc_trees.comparison",
}
_SUBPACKAGES = ("bart", "results", "boosting", "interpret", "comparison", "core")

# Modules of the flat layout before 2026-11-25 and where they live now: importing the old
# path still works, with a FutureWarning that names the new one.  pymc_trees.predict and
# pymc_trees.compare are not here: those names are the public functions.
_MOVED = {
    "pymc_trees.datasets": "pymc_trees.comparison.datasets",
    "pymc_trees.demo": "pymc_trees.comparison.demo",
    "pymc_trees.report": "pymc_trees.comparison.report",
    "pymc_trees.tabular": "pymc_trees.core.tabular",
    "pymc_trees.features": "pymc_trees.core.features",
    "pymc_trees.distribution": "pymc_trees.bart.term.distribution",
    "pymc_trees.calibration": "pymc_trees.bart.likelihood.calibration",
    "pymc_trees.structure": "pymc_trees.bart.likelihood.structure",
    "pymc_trees.steps": "pymc_trees.bart.steps.tree_step",
    "pymc_trees.sampler": "pymc_trees.bart.samplers.sampler",
    "pymc_trees.trace_io": "pymc_trees.bart.term.trace_io",
    "pymc_trees.predictive": "pymc_trees.results.predictive",
    "pymc_trees.core.boost": "pymc_trees.boosting.kernels",
    **{f"pymc_trees.core.{k}": f"pymc_trees.bart.kernels.{k}"
       for k in ("forest", "nodes", "prior", "cgm", "pg", "gfr", "general", "augment")},
}

__all__ = list(_HOMES)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from pymc_trees.bart import (BARTTree, CGMTreeStep, ForestSampler, ModelStructureError,
                                 NoiseGibbs, PGTreeStep, TreePrior, leaf_calibration, noise_prior)
    from pymc_trees.comparison import compare
    from pymc_trees.core import PackedForest, TableSchema
    from pymc_trees.interpret import (partial_dependence, plot_convergence,
                                      plot_partial_dependence, plot_partial_dependence_grid,
                                      plot_scatter_submodels, plot_submodels,
                                      plot_variable_importance, select_variables,
                                      variable_importance)
    from pymc_trees.results import (compute_log_likelihood, forests, predict,
                                    sample_posterior_predictive)


def _moved(old: str) -> Any:
    new = _MOVED[old]
    warnings.warn(f"{old} moved to {new} (pymc_trees is laid out by audience, see "
                  "docs/explanation/code-layout.md, 'Code layout'); import it from there.", FutureWarning,
                  stacklevel=3)
    return importlib.import_module(new)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old module paths of :data:`_MOVED`: the old module is a copy of the new
    one's namespace (the same functions and classes)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in _MOVED:
            origin = importlib.util.find_spec(_MOVED[fullname]).origin
            return importlib.util.spec_from_loader(fullname, self, origin=origin)
        return None

    def create_module(self, spec):
        return None

    def get_code(self, fullname: str):
        """``python -m <old path>`` (such as ``python -m pymc_trees.demo``) runs the new
        module's code."""
        new = importlib.util.find_spec(_MOVED[fullname])
        return new.loader.get_code(new.name)

    def exec_module(self, module) -> None:
        new = _moved(module.__name__)
        module.__dict__.update({k: v for k, v in vars(new).items()
                                if k not in ("__name__", "__spec__", "__loader__",
                                             "__package__", "__path__")})


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:
    if f"pymc_trees.{name}" in _MOVED:
        return importlib.import_module(f"pymc_trees.{name}")
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"pymc_trees.{name}")
    raise AttributeError(f"module 'pymc_trees' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({"__version__", *_HOMES, *_SUBPACKAGES})
