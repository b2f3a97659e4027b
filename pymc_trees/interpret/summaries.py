"""Interpretation of tree terms and boosting models: variable importance, partial dependence
and ICE curves, with credible intervals across posterior draws.

Every function takes a ``source``: the DataTree returned by ``pm.sample`` for a model with a
:class:`~pymc_trees.BARTTree` term (``var_name`` says which term), or a fitted
:class:`~pymc_trees.boosting.BoostedTreesRegressor` /
:class:`~pymc_trees.boosting.BoostedTreesClassifier`.

* :func:`variable_importance` - per draw, the share of internal nodes that split on each column
  (``kind="inclusion"``), or the drop in explained variance of the term when a column is
  permuted (``kind="permutation"``).
* :func:`partial_dependence` - 1-D and 2-D partial dependence and ICE curves per draw on a grid
  (quantiles of a numeric column, the levels of a categorical or ordinal one) or at given
  values.
* :func:`plot_variable_importance`, :func:`plot_partial_dependence` - matplotlib plots with
  highest-density intervals across draws.

For a BART term the results carry the sample dims ``(chain, draw)`` (thinned to at most
``max_draws`` evenly spaced draws), so ``arviz.hdi(result, dim=["chain", "draw"])`` gives
credible intervals.  For a boosting model they have no sample dims: one point value per
column or grid value.  Scales: a BART term is interpreted on its own scale (the values of
``f``, as :func:`pymc_trees.predict` returns them: for a logit term, the logit); a boosting
model on the scale of its predictions as scikit-learn's ``partial_dependence`` uses them
(``predict`` for a regressor; ``predict_proba`` for a classifier: the probability of
``classes_[1]`` for two classes, every class for more).  Formulas and choices:
``docs/interpret.md``.

The code lives by concept: :mod:`~pymc_trees.interpret.sources` (a BART term or a boosting
model behind one interface), :mod:`~pymc_trees.interpret.importance`,
:mod:`~pymc_trees.interpret.dependence` and :mod:`~pymc_trees.interpret.plots`.  This module
keeps the names importable from ``pymc_trees.interpret.summaries``, where they were first.
"""

from pymc_trees.interpret.dependence import partial_dependence
from pymc_trees.interpret.importance import variable_importance
from pymc_trees.interpret.plots import (hdi_summary, panel_grid, plot_convergence,
                                        plot_partial_dependence, plot_partial_dependence_grid,
                                        plot_variable_importance)
from pymc_trees.interpret.sources import (BATCH_FLOATS, RESERVED_DIMS, interpretation_source,
                                          require_rows)

__all__ = ["variable_importance", "partial_dependence", "plot_variable_importance",
           "plot_partial_dependence", "plot_convergence", "plot_partial_dependence_grid",
           "interpretation_source", "require_rows", "hdi_summary", "panel_grid",
           "RESERVED_DIMS", "BATCH_FLOATS"]
