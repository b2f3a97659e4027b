"""pymc_trees: exact Bayesian Additive Regression Trees inside PyMC models.

* :class:`BARTTree` - a sum-of-trees random variable for ``with pm.Model():`` blocks.
* :class:`CGMTreeStep`, :class:`PGTreeStep`, :class:`NoiseGibbs` - step methods that
  ``pm.sample()`` assigns by itself.
* :func:`predict` - each posterior draw's forest at new rows.
* :func:`sample_posterior_predictive` - PyMC's function for models with tree terms: at new
  data (``pm.set_data``) every draw's own forests give f.
* :func:`compute_log_likelihood` - PyMC's function, also for terms whose values were left out
  of the trace (``BARTTree(..., keep_values=False)``).
* :func:`noise_prior` - the default InverseGamma prior of the noise variance.
* :class:`TableSchema` - column kinds, category levels and missing values of tabular X.
* :mod:`pymc_trees.interpret` - variable importance, partial dependence and ICE curves per
  posterior draw (:func:`variable_importance`, :func:`partial_dependence`) and their plots.
"""

from .calibration import leaf_calibration, noise_prior
from .compare import compare
from .distribution import BARTTree
from .interpret import (partial_dependence, plot_partial_dependence,
                        plot_variable_importance, variable_importance)
from .predict import forests, predict
from .predictive import compute_log_likelihood, install_refusal as _install_refusal
from .predictive import sample_posterior_predictive
from .sampler import ForestSampler, PackedForest, TreePrior
from .steps import CGMTreeStep, NoiseGibbs, PGTreeStep, register_steps
from .structure import ModelStructureError
from .tabular import TableSchema
from .trace_io import install as _install_trace_io

register_steps()
_install_trace_io()
_install_refusal()

__all__ = [
    "BARTTree",
    "CGMTreeStep",
    "PGTreeStep",
    "NoiseGibbs",
    "predict",
    "sample_posterior_predictive",
    "compute_log_likelihood",
    "forests",
    "noise_prior",
    "leaf_calibration",
    "ForestSampler",
    "PackedForest",
    "TreePrior",
    "ModelStructureError",
    "TableSchema",
    "variable_importance",
    "partial_dependence",
    "plot_variable_importance",
    "plot_partial_dependence",
    "compare",
]

__version__ = "0.1.0"
