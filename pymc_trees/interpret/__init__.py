"""Interpretation of BART fits per posterior draw: variable importance, partial dependence
and ICE curves, and their plots (``summaries``).  See ``docs/interpret.md``."""

from pymc_trees.interpret.summaries import (partial_dependence, plot_convergence,
                                            plot_partial_dependence,
                                            plot_partial_dependence_grid,
                                            plot_variable_importance, variable_importance)

__all__ = ["variable_importance", "partial_dependence", "plot_variable_importance",
           "plot_partial_dependence", "plot_convergence", "plot_partial_dependence_grid"]
