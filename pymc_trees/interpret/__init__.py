"""Interpretation of BART fits per posterior draw: variable importance, partial dependence
and ICE curves, and their plots (``summaries``); variable selection over submodels
(``selection``).  See ``docs/interpret.md``."""

from pymc_trees.interpret.selection import (plot_scatter_submodels, plot_submodels,
                                            select_variables)
from pymc_trees.interpret.summaries import (partial_dependence, plot_convergence,
                                            plot_partial_dependence,
                                            plot_partial_dependence_grid,
                                            plot_variable_importance, variable_importance)

__all__ = ["variable_importance", "partial_dependence", "plot_variable_importance",
           "plot_partial_dependence", "plot_convergence", "plot_partial_dependence_grid",
           "select_variables", "plot_submodels", "plot_scatter_submodels"]
