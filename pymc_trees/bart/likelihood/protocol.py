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

from pymc_trees.bart.samplers.general_loop import nanmean

__all__ = ["SweepContext", "TermLikelihood", "PerOutput", "JointOutputs", "members"]


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


class _Outputs:
    """A (k, n) term's likelihood made of its outputs' (``parts``)."""

    needs_general_step = False

    def __init__(self, parts: list):
        self.parts = list(parts)

    @property
    def draws_latents(self) -> bool:
        return any(lik.draws_latents for lik in self.parts)

    def reset(self) -> None:
        for lik in self.parts:
            lik.reset()


class PerOutput(_Outputs):
    """The likelihood of a (k, n) term whose outputs have forests of their own: output j's
    likelihood given the other outputs' current values (each one a :class:`TermLikelihood`),
    updated output after output (``sweeps`` sweeps of each in a row where its kernel runs
    them: a blocked scan)."""

    def __init__(self, parts: list, var_name: str):
        super().__init__(parts)
        self.var_name = var_name

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        return all(lik.sweeps_in_kernel(sampler_kind, python_sweep) for lik in self.parts)

    def update(self, ctx: SweepContext, smp, point: dict, warm: bool, sweeps: int = 1) -> dict:
        F = smp.values()
        per = []
        for j, (part, lik) in enumerate(zip(smp.parts, self.parts)):
            per.append(lik.update(ctx, part, {**point, self.var_name: F}, warm, sweeps))
            F[j] = part.values()
        return {k: nanmean([s[k] for s in per]) for k in per[0]}


class JointOutputs(_Outputs):
    """The likelihood of a (k, n) term whose outputs share their trees, factorising over the
    outputs into augmentable ones (``parts``, each a Gaussian given its latent variables):
    each output's pseudo-data, then one sweep with the leaf vectors integrated out jointly
    (:meth:`~pymc_trees.bart.samplers.shared_sampler.SharedOutputSampler.conjugate_sweep`).
    Such a term has no warm start."""

    def sweeps_in_kernel(self, sampler_kind: str, python_sweep: bool) -> bool:
        return not self.draws_latents

    def update(self, ctx: SweepContext, smp, point: dict, warm: bool, sweeps: int = 1) -> dict:
        F = smp.values()
        Z, omega = np.empty_like(F), np.empty_like(F)
        for j, lik in enumerate(self.parts):
            if not lik.draws_latents:
                Z[j], omega[j] = lik.pseudo_data(point, smp.offset)
            else:
                Z[j], omega[j] = lik.pseudo_data(point, smp.offset, F[j], ctx.rng)
        return smp.conjugate_sweep(ctx.rng, Z, omega, ctx.move_cp, sweeps)


def members(lik) -> list:
    """The single likelihoods a term's likelihood is made of: its outputs' for
    :class:`PerOutput` and :class:`JointOutputs`, else itself (none for a term drawn from its
    prior)."""
    if lik is None:
        return []
    return list(getattr(lik, "parts", [lik]))
