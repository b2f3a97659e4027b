"""pymc_trees: exact Bayesian Additive Regression Trees inside PyMC models.

* :class:`BARTTree` - a sum-of-trees random variable for ``with pm.Model():`` blocks.
* :class:`CGMTreeStep`, :class:`PGTreeStep`, :class:`NoiseGibbs` - step methods that
  ``pm.sample()`` assigns by itself.
* :func:`predict` - each posterior draw's forest at new rows.
* :func:`noise_prior` - the default InverseGamma prior of the noise variance.
"""

from .calibration import leaf_calibration, noise_prior
from .distribution import BARTTree
from .predict import forests, predict
from .sampler import ForestSampler, PackedForest, TreePrior
from .steps import CGMTreeStep, NoiseGibbs, PGTreeStep, register_steps
from .structure import ModelStructureError

register_steps()

__all__ = [
    "BARTTree",
    "CGMTreeStep",
    "PGTreeStep",
    "NoiseGibbs",
    "predict",
    "forests",
    "noise_prior",
    "leaf_calibration",
    "ForestSampler",
    "PackedForest",
    "TreePrior",
    "ModelStructureError",
]

__version__ = "0.1.0"
