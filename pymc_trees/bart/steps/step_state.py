"""A tree step's mutable state (PyMC's ``sampling_state``), the name of the stat that carries
its forest, and the trees' burn-in by default."""

from __future__ import annotations

from dataclasses import field

from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

__all__ = ["TreeStepState", "forest_stat_name", "DEFAULT_BURN_IN"]


def forest_stat_name(var_name: str) -> str:
    """Name of the sampler stat carrying a term's forest (moved to the ``forests`` group in the
    DataTree, see :mod:`pymc_trees.bart.term.trace_io`)."""
    return f"{var_name}_forest"


@dataclass_state
class TreeStepState(StepMethodState):
    """Everything of a tree step that changes while it samples (PyMC's ``sampling_state``,
    read and set by name on the step, as for ``MetropolisState``): the forest (without the
    rows' leaves, :attr:`_TreeStep.forest`), the leaf sd and DART's split probabilities
    held by the sampler, and the counters of the tuning phase and of the chain."""

    forest: object = field(default=None)
    tune: bool = True
    # the sampler's leaf sd (a scale learned inside the step changes it every sweep)
    leaf_sd: float | None = None
    # DART inside the step: (log s, log(alpha / p)) per forest; None otherwise
    split_state: object = None
    # tuning iterations left of the warm start and of the trees' burn-in (None: no hold)
    warm_left: int = 0
    burn_left: int | None = None
    # the stats of the held iteration, repeated while the trees are held
    held: dict | None = None
    # iterations left in the chain (the last lets go of the rows' arrays)
    steps_left: int | None = None
    # general-step sweeps of the tuning phase, and whether any proposal was accepted
    tune_sweeps: int = 0
    tune_moved: bool = False
    # the generator of the stored forests' coins (None until the first forest is stored)
    coins: object = None


# tuning iterations that update the trees (warm start included); the rest of the tuning
# holds them (docs/benchmarks/friedman.md, "Tuning length")
DEFAULT_BURN_IN = 200
