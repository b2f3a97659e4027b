"""Interpretation of BART fits per posterior draw: where a model is read from (``sources``),
variable importance (``importance``), partial dependence and ICE curves (``dependence``),
their plots (``plots``; ``summaries`` keeps the names importable from their first home), and
variable selection over submodels (``selection``).  See ``docs/interpret.md``."""

from pymc_trees.interpret.dependence import partial_dependence
from pymc_trees.interpret.importance import variable_importance
from pymc_trees.interpret.plots import (plot_convergence, plot_partial_dependence,
                                        plot_partial_dependence_grid, plot_variable_importance)
from pymc_trees.interpret.selection import (plot_scatter_submodels, plot_submodels,
                                            select_variables)

__all__ = ["variable_importance", "partial_dependence", "plot_variable_importance",
           "plot_partial_dependence", "plot_convergence", "plot_partial_dependence_grid",
           "select_variables", "plot_submodels", "plot_scatter_submodels"]
