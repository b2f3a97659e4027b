"""Orchestration of a sum of trees with log-gamma leaves (``BARTTree(...,
leaf_prior="log-gamma")`` or ``"log-inverse-gamma"``): the :class:`ForestSampler` of constant
leaves whose every leaf value ``mu`` has ``exp(kappa mu) ~ Gamma(c, rate d)``, sampled by the
conjugate sweep of :mod:`pymc_trees.bart.kernels.gamma_leaves` (CGM's moves) or Particle Gibbs
(:mod:`pymc_trees.bart.kernels.pg` with the leaves' closed forms).  Knows nothing of PyMC.

The prior's calibration (:func:`log_gamma_prior`): ``c`` and ``d`` give every leaf the mean 0
and the standard deviation ``leaf_sd`` of the normal leaf prior it replaces (Murray 2021,
section 4.1, matches the normal prior's first two moments the same way):
``Var(log phi) = trigamma(c)``, so ``trigamma(c) = (kappa leaf_sd)^2``; ``E(log phi) =
digamma(c) - log d``, so ``d = exp(digamma(c))``.  The sum of m leaves then has the normal
prior's mean and variance; its skewness is a leaf's, ``sign(kappa) psi''(c) / psi'(c)^(3/2)``
(about ``-sign(kappa) / sqrt(c)``), divided by ``sqrt(m)``: -0.02 at m = 50 and leaf_sd 0.15.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from pymc_trees.bart.kernels.bundles import SweepData, TreeRules, read_only_rows
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.gamma_leaves import gamma_sweep
from pymc_trees.bart.samplers.general_loop import MOVES, acceptance_rates
from pymc_trees.bart.samplers.leaf_priors import log_gamma_prior
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.core.slice_sampling import slice_sample

__all__ = ["GammaForestSampler"]

@dataclass
class GammaForestSampler(ForestSampler):
    """A :class:`ForestSampler` whose leaf values ``mu`` have ``exp(kappa mu) ~ Gamma(c,
    rate d)`` (:func:`log_gamma_prior` from ``leaf_sd``), for a term that enters a
    likelihood of the form of :mod:`pymc_trees.bart.kernels.gamma_leaves` with that
    ``kappa``.  Sampled by CGM's grow, prune, change and swap moves with the leaves
    integrated out (:meth:`gamma_sweep`); the forest, its packing and prediction are the
    constant leaves'.
    """

    kappa: float = 1.0

    _ROW_ATTRS = ForestSampler._ROW_ATTRS + ("_gamma_bufs",)

    def __post_init__(self):
        if self.kappa not in (1.0, -1.0, 2.0, -2.0):
            raise ValueError(f"kappa must be 1 or 2 (log-gamma leaves) or -1 or -2 "
                             f"(log-inverse-gamma); got {self.kappa!r}.")
        super().__post_init__()

    @property
    def gamma_prior(self) -> tuple[float, float]:
        """``(c, d)`` of the leaves' prior at the current ``leaf_sd``."""
        key = (float(self.leaf_sd), float(self.kappa))
        kept = getattr(self, "_cd", None)
        if kept is None or kept[0] != key:
            self._cd = kept = (key, log_gamma_prior(*key))
        return kept[1]

    def set_gamma_shape(self, c: float) -> None:
        """Set the leaves' prior by its shape ``c`` (a learned leaf scale's draw): ``leaf_sd
        = sqrt(trigamma(c)) / |kappa|`` and ``d = exp(digamma(c))``."""
        c = float(c)
        self.leaf_sd = math.sqrt(float(special.zeta(2.0, c))) / abs(self.kappa)
        self._cd = ((float(self.leaf_sd), float(self.kappa)),
                    (c, math.exp(float(special.digamma(c)))))

    def log_leaf_stats(self) -> tuple[float, float, float]:
        """``(L, sum kappa mu, sum exp(kappa mu))`` over the forest's L leaves: the forest's
        density as a function of the leaves' prior depends on these only."""
        f = self.forest
        x = self.kappa * f.value[f.var == LEAF]
        return float(x.size), float(x.sum()), float(np.exp(x).sum())

    def gamma_sweep(self, rng: np.random.Generator, s: np.ndarray, logt: np.ndarray,
                    move_cumprobs: np.ndarray, sweeps: int = 1) -> dict[str, float]:
        """``sweeps`` sweeps over all trees against rows of shapes ``s`` and log rates
        ``logt`` at the trees' zero (shape (n,) each; the offset included), with CGM's moves
        (``move_cumprobs``: cumulative probabilities of grow, prune, change and swap), in
        one kernel call: the acceptance rate of each move."""
        f = self._forest_with_room(sweeps)
        c, d = self.gamma_prior
        K = f.capacity
        bufs = getattr(self, "_gamma_bufs", None)
        if bufs is None or bufs[0].size != K or bufs[2].size != self.n:
            bufs = self._gamma_bufs = (np.zeros(K), np.zeros(K), np.zeros(self.n))
        tally = np.zeros((2, 4), np.int64)
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        pr = self.prior
        rules = TreeRules(int(pr.min_leaf), float(pr.alpha), float(pr.beta), 0.0)
        self._load_tree_sums()  # the trees' sum at the rows (kept from values(), or summed)
        gamma_sweep(rng, data, rules, np.asarray(move_cumprobs, dtype=np.float64),
                    (read_only_rows(s), read_only_rows(logt)),
                    (float(self.kappa), float(c), float(d)), self._tree_sums.buf, f.arrays(),
                    self._scratch, bufs, tally, int(sweeps))
        self._tree_sums.forget()  # the trees moved: values() sums them anew
        return acceptance_rates(tally[1], tally[0], MOVES)

    def gamma_pg_sweep(self, rng: np.random.Generator, s: np.ndarray, logt: np.ndarray,
                       num_particles: int) -> dict[str, float]:
        """One Particle Gibbs sweep (:meth:`ForestSampler.pg_sweep`) with the leaves
        integrated out of the particles' weights in closed form (``gamma_log_ml`` of each
        node's ``A = sum s``, ``B = sum of the rows' rates``) and drawn from their Gamma
        conditional, against rows of shapes ``s`` and log rates ``logt`` as
        :meth:`gamma_sweep`'s.  Returns the fraction of trees that changed."""
        c, d = self.gamma_prior
        return self.pg_sweep(rng, logt, s, num_particles,
                             (1.0, float(self.kappa), float(c), float(d)))

    def zero_leaves(self) -> None:
        """Every leaf to 0 (the term at its offset), keeping the trees' shapes: after a
        grow-from-root sweep, whose leaves are normal-prior fits to the rows' Newton
        pseudo-data (far from the mode they can be far off: a log variance started from a
        mean's offset got leaves of -16, and +66 one exact sweep later), before an exact
        sweep draws each tree's leaves from their conditional given the others."""
        f = self.forest
        f.value[f.var == LEAF] = 0.0
        self._tree_sums.forget()

    def sample_prior(self, rng: np.random.Generator):
        """m independent prior trees whose leaf values are drawn from the log-gamma prior
        (the trees' shapes as for normal leaves, then every leaf's ``log(phi) / kappa``)."""
        forest = super().sample_prior(rng)
        c, d = self.gamma_prior
        leaves = forest.var == LEAF
        phi = rng.gamma(c, 1.0 / d, size=int(leaves.sum()))
        forest.value[leaves] = np.log(phi) / self.kappa
        return forest

    def level_shift(self, rng: np.random.Generator, c: float, mu0: float, sd0: float,
                    k: float = 1.0) -> float:
        """An exact update of a level shift s between an intercept ``c ~ Normal(mu0, sd0)``
        and the forest (``c -> c + s``, every leaf ``-> leaf - k s / m``: f moves by ``-k s``
        at every row, which leaves the likelihood unchanged), as
        :meth:`ForestSampler.level_shift` for normal leaves.  Along that line the log
        density of s is, with ``E = sum over the L leaves of exp(kappa mu_l)``,

            -(c + s - mu0)^2 / (2 sd0^2) - kappa c_ L k s / m - d E exp(-kappa k s / m),

        concave (``c_, d`` the leaves' Gamma prior), so one slice-sampling update
        (:func:`~pymc_trees.core.slice_sampling.slice_sample` from the current s = 0, stepping
        out without a cap) leaves it invariant.  Shifts the leaves in place and returns s."""
        f = self.forest
        leaves = f.var == LEAF
        m, kap = f.m, float(self.kappa)
        cg, dg = self.gamma_prior
        L = float(leaves.sum())
        E = float(np.exp(kap * f.value[leaves]).sum())
        r = kap * k / m

        def logp(s):
            return -0.5 * ((c + s - mu0) / sd0) ** 2 - cg * L * r * s - dg * E * np.exp(-r * s)

        w = 1.0 / np.sqrt(1.0 / sd0**2 + dg * E * r * r)  # the curvature's scale at s = 0
        # log-concave: stepping out ends without a cap
        s = slice_sample(rng, 0.0, logp, w, None, "The intercept or the leaves are not "
                         "finite; give the intercept a proper prior, or report this with the "
                         "model.")
        f.value[leaves] -= k * s / m
        return float(s)
