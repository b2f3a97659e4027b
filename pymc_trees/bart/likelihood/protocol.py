"""The one protocol of the likelihoods a tree step holds: augmented (Gaussian given latent
variables: :class:`~pymc_trees.bart.likelihood.structure.TreeLikelihood`), log-gamma
(:class:`~pymc_trees.bart.likelihood.gamma_likelihood.GammaLikelihood`) and general
(:class:`~pymc_trees.bart.likelihood.general_likelihood.GeneralLikelihood`).  The step asks
each the same questions and calls the same update, so it never branches on which one it
holds (``docs/explanation/code-layout.md``, "A map of bart/").
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

import numpy as np

__all__ = ["SweepContext", "TermLikelihood"]


class SweepContext(NamedTuple):
    """What a likelihood's tree update takes from the step that holds it, built by the step
    per update (its rng is the chain's)."""

    rng: np.random.Generator
    # the step's exact sweeps of a forest against Gaussian pseudo-data,
    # ``sweep(z, omega, smp, sweeps) -> stats`` (CGM's moves or Particle Gibbs)
    sweep: Callable
    # the same for log-gamma leaves, ``gamma_sweep(smp, s, logt, sweeps) -> stats``
    gamma_sweep: Callable
    # the step's own forest sampler (a term of one forest), and the non-centred update of its
    # learned leaf scale after a conjugate sweep, ``interweave(rng, smp, z, omega)``
    sampler: object
    interweave: Callable
    # the stats of an iteration without exact moves (a warm start), ``warm_stats() -> dict``
    warm_stats: Callable
    # the general step: cumulative move probabilities, the Python loop forced, and
    # ``tuned(stats, sweeps)``, which the step's tuning bookkeeping reads
    move_cp: np.ndarray
    python_sweep: bool
    tuned: Callable


class TermLikelihood(Protocol):
    """What every likelihood a tree step holds answers."""

    observed_name: str
    family: str
    #: whether the general step (reversible-jump moves, docs/math.md section 9) serves it,
    #: with its own link and start checks, its move set, and no level shift
    needs_general_step: bool

    @property
    def draws_latents(self) -> bool:
        """Whether an update draws latent variables given the term's current values."""

    def reset(self) -> None:
        """Forget what was cached for a chain (data may have changed)."""

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        """Whether one kernel call can run all of an iteration's sweeps (no latent variable
        changes between them)."""

    def update(self, ctx: SweepContext, smp, point: dict, warm: bool, sweeps: int) -> dict:
        """``sweeps`` exact sweeps of the forest sampler ``smp`` at ``point`` (a grow-from-root
        sweep when ``warm``): the stats of their moves."""
