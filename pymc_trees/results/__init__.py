"""Working with a fitted trace: each draw's forests at new rows (:func:`predict`,
:func:`forests`), posterior predictive draws at new data and the pointwise log likelihood
(:func:`sample_posterior_predictive`, :func:`compute_log_likelihood`)."""

from pymc_trees.results.predict import forests, predict
from pymc_trees.results.predictive import compute_log_likelihood, sample_posterior_predictive

__all__ = ["predict", "forests", "sample_posterior_predictive", "compute_log_likelihood"]
