"""BART as a PyMC model component: the random variable, the steps ``pm.sample`` assigns,
reading the model around a tree term, calibration, the sampler that runs the kernels of
:mod:`pymc_trees.bart.kernels`, and the forests kept with the trace.

Importing this package registers the tree steps with PyMC and installs the three
integration points of :mod:`pymc_trees.bart.term.pymc_compat` (``docs/explanation/trace.md``, "Forests
kept with the trace" and "New data through
PyMC's API"); every public name of :mod:`pymc_trees` that needs them imports it.
"""

from pymc_trees.bart.likelihood.calibration import leaf_calibration, noise_prior
from pymc_trees.bart.term.distribution import BARTTree
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.bart.steps.tree_step import CGMTreeStep, NoiseGibbs, PGTreeStep, register_steps
from pymc_trees.bart.likelihood.structure import ModelStructureError
from pymc_trees.bart.term.pymc_compat import install as install_pymc_compat

__all__ = ["BARTTree", "CGMTreeStep", "PGTreeStep", "NoiseGibbs", "ForestSampler", "TreePrior",
           "ModelStructureError", "leaf_calibration", "noise_prior"]

register_steps()
install_pymc_compat()
