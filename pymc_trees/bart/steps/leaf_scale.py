"""The leaf scale of a tree term, one class per mode, composed by the tree step
(:class:`~pymc_trees.bart.steps.tree_step.CGMTreeStep`, :class:`~pymc_trees.bart.steps.tree_step.PGTreeStep`).

* :class:`FixedLeafScale`: ``leaf_sd`` a number (or an expression of no free variable).
* :class:`LearnedLeafScale`: ``leaf_sd="learned"``, the leaf variance learned inside the
  step, ``leaf_sd**2 ~ InverseGamma(LEARNED_SCALE_ALPHA, ...)`` centred on the calibrated sd
  (:func:`~pymc_trees.bart.samplers.leaf_priors.learned_scale_draw`).
* :class:`ModelLeafScale`: ``leaf_sd`` an expression of one free model variable (for example
  ``pm.HalfNormal``), slice-sampled from its full conditional.

Each part has the same small interface, called by the step at fixed points of an iteration
(the order of the random numbers is the step's,
``docs/explanation/leaf-scale-and-split-prior.md``, "A learned leaf scale"):

``load(sampler, point)``
    before the sweep: the leaf sd at the point into the sampler (a model variable's);
``prior_draw(rng, sampler)``
    for a term that no density depends on, before its forest is drawn from the prior;
``interweave(rng, sampler, z, omega)``
    after a conjugate sweep against pseudo-data ``z`` with precisions ``omega``: a learned
    scale's non-centred update (:func:`interweaving_draw`);
``update(rng, sampler, point, prior_only)``
    after the sweep: the draw from the full conditional given the forest; returns the
    point's new values (``{}`` when the scale is not a model variable);
``stats(sampler)`` and ``stats_dtypes_shapes``
    the sample stat ``<name>_leaf_sd`` of every draw;
``value_names``
    the value variables the part writes into the point.

The functions shared with :mod:`pymc_trees.bart.steps.split_prior` (the compiled value of one
variable at a point, the slice sampler, the check that a hyperparameter belongs to one term)
live here too.
"""

from __future__ import annotations

import numpy as np
from pymc.model import Model
from scipy import special
from pytensor.graph.traversal import ancestors

from pymc_trees.bart.term.distribution import term_inputs
from pymc_trees.bart.kernels.row_passes import weighted_products
from pymc_trees.bart.samplers.gamma_sampler import GammaForestSampler
from pymc_trees.bart.samplers.leaf_priors import (learned_gamma_scale_logpdf, learned_scale_draw,
                                                  learned_scale_prior, learned_scale_prior_draw,
                                                  log_gamma_prior)
from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.likelihood.structure import ModelStructureError
from pymc_trees.core.slice_sampling import slice_sample

__all__ = ["FixedLeafScale", "LearnedLeafScale", "ModelLeafScale", "make_leaf_scale",
           "leaf_scale_rvs", "check_owned_by_term", "AtValue",
           "learned_gamma_scale_update", "interweaving_draw"]

# what the slice sampler's error tells the user when the leaves leave the range a leaf
# scale's density is finite in
LEAF_SCALE_FIX = "Pass a fixed leaf_sd, or report this with the model."


def leaf_scale_rvs(model: Model, tree_rv) -> list:
    """The free variables that the ``leaf_sd`` input of the tree term ``tree_rv`` depends on
    (empty for a fixed leaf scale)."""
    anc = set(ancestors([term_inputs(tree_rv).leaf_sd], blockers=model.free_RVs))
    return [v for v in model.free_RVs if v in anc]


def check_owned_by_term(model: Model, tree_rv, scale_rv, role: str = "leaf scale") -> None:
    """A learned leaf scale (or split-probability vector) must be a free variable that nothing
    but this tree term's prior depends on: its full conditional is then its prior times the
    forest's density."""
    name, tname = scale_rv.name, tree_rv.name
    if role == "leaf scale" and scale_rv.ndim != 0:
        raise ModelStructureError(f"The leaf scale {name!r} of {tname!r} must be a scalar; "
                                  f"it has shape {tuple(scale_rv.shape.eval())}.")
    rvs = list(model.basic_RVs)
    for other in rvs:
        if other is scale_rv or other is tree_rv:
            continue
        # direct inputs only: a dependence through another variable is that variable's
        if scale_rv in set(ancestors(other.owner.inputs, blockers=rvs)):
            raise ModelStructureError(
                f"{name!r} is the {role} of {tname!r} and also enters {other.name!r}. The "
                f"tree step samples the {role} from its prior and the forest alone, so it "
                "must belong to one tree term and nothing else; give each term its own "
                "variable.")
    for pot in model.potentials:
        if scale_rv in set(ancestors([pot], blockers=rvs)):
            raise ModelStructureError(
                f"{name!r} is the {role} of {tname!r} and also enters the Potential "
                f"{pot.name!r}. The tree step samples the {role} from its prior and the "
                "forest alone and would ignore that factor; put the information in its prior "
                "instead, or leave the variable out of the Potential.")


class AtValue:
    """A compiled function of one value variable, called with a point (picklable, for
    multiprocess sampling)."""

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def __call__(self, point):
        return self.fn(point[self.name])


def interweaving_draw(rng: np.random.Generator, tau: float, A: float, B: float,
                      sd0: float) -> float:
    """One slice-sampling transition from ``tau`` of the leaf sd given the leaves up to their
    scale: with the trees' sum at the rows ``tau * g`` and the rows' Gaussian pseudo-data
    ``z`` (precisions ``omega``), ``A = sum(omega g^2)`` and ``B = sum(omega z g)``, and
    ``tau^2 ~ InverseGamma(a, b)`` (:func:`~pymc_trees.bart.samplers.leaf_priors.learned_scale_prior`),

        log p(tau | eta, data) = -(2a + 1) log tau - b / tau^2 - A tau^2 / 2 + B tau

    (the leaves' prior in eta does not depend on tau), sampled in ``log tau``."""
    a, b = learned_scale_prior(sd0)

    def logf(u: float) -> float:
        t = np.exp(u)
        return -2.0 * a * u - b / (t * t) - 0.5 * A * t * t + B * t

    return float(np.exp(slice_sample(rng, float(np.log(tau)), logf, 1.0, 32, LEAF_SCALE_FIX)))


class FixedLeafScale:
    """A leaf scale that stays as given: nothing to load, draw or write.

    Parameters
    ----------
    var_name : str
        The tree term's name (the stat is ``<var_name>_leaf_sd``).
    sd0 : float
        The leaf sd.
    """

    value_names: tuple[str, ...] = ()

    def __init__(self, var_name: str, sd0: float):
        self.sd0 = float(sd0)
        self.stat = f"{var_name}_leaf_sd"

    @property
    def stats_dtypes_shapes(self) -> dict:
        # the leaf scale of every draw, named per term like <name>_split_probs (one stat of
        # each name per step: two terms' "leaf_sd" were stacked in one unnamed dim)
        return {self.stat: (np.float64, [])}

    def load(self, sampler, point) -> None:
        pass

    def prior_draw(self, rng, sampler) -> None:
        pass

    def interweave(self, rng, sampler, z: np.ndarray, omega: np.ndarray) -> None:
        pass

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        return {}

    def stats(self, sampler) -> dict:
        return {self.stat: sampler.leaf_sd}


class LearnedLeafScale(FixedLeafScale):
    """``leaf_sd="learned"``: the leaf variance learned inside the tree step, its
    InverseGamma prior centred on the calibrated sd ``sd0``
    (:func:`~pymc_trees.bart.samplers.leaf_priors.learned_scale_prior`).  After every sweep the sampler's
    leaf sd is drawn from its conjugate conditional given the forest's leaves
    (:func:`~pymc_trees.bart.samplers.leaf_priors.learned_scale_draw`); a term drawn from its prior draws
    it from its prior first (:func:`~pymc_trees.bart.samplers.leaf_priors.learned_scale_prior_draw`), so
    that its draws are independent from iteration to iteration.  Its current value is the
    sampler's ``leaf_sd`` (in the step's state)."""

    def prior_draw(self, rng, sampler) -> None:
        sampler.leaf_sd = learned_scale_prior_draw(rng, self.sd0)

    def interweave(self, rng, sampler, z: np.ndarray, omega: np.ndarray) -> None:
        """The non-centred update of the leaf sd tau after a conjugate sweep (one forest of
        normal leaves, constant or linear), given the sweep's pseudo-data ``z`` (offset
        removed) and precisions ``omega``: with the leaves written as ``tau * eta``, draw
        tau given eta from :func:`interweaving_draw` and multiply every leaf by
        ``tau_new / tau``.  With the centred draw of :meth:`update` it interweaves the two
        parametrisations (Yu and Meng 2011): the scale of the trees' sum then moves with the
        noise instead of only behind its leaves (``docs/math.md``, section 12)."""
        if type(sampler) not in (ForestSampler, LinearForestSampler):
            return  # log-gamma leaves, outputs that share their trees: the centred draw only
        tau = float(sampler.leaf_sd)
        g = sampler.current_sums()
        wgg, wzg = weighted_products(np.broadcast_to(np.asarray(omega, np.float64), g.shape), g,
                                     np.asarray(z, np.float64))
        A, B = wgg / tau**2, wzg / tau
        new = interweaving_draw(rng, tau, A, B, self.sd0)
        sampler.scale_leaves(new / tau)
        sampler.leaf_sd = new

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        if prior_only:  # (a term drawn from its prior drew the scale with the trees)
            return {}
        parts = getattr(sampler, "parts", [sampler])
        if any(isinstance(p, GammaForestSampler) for p in parts):
            learned_gamma_scale_update(rng, self.sd0, parts)
        else:
            sampler.leaf_sd = learned_scale_draw(rng, self.sd0, *sampler.leaf_stats())
        return {}


def learned_gamma_scale_update(rng: np.random.Generator, sd0: float, parts: list) -> None:
    """One slice-sampling update of a learned leaf variance ``v`` shared by forests of which
    some have log-gamma leaves (a term of one output, or the outputs of a (k, n) term, say
    ``Normal(w[0], exp(w[1]))``'s normal mean leaves and log-gamma log-sd leaves), from its
    full conditional: the prior ``v ~ InverseGamma(learned_scale_prior(sd0))`` times every
    forest's leaves' density at v.  No conjugate draw: the update runs on ``u = log c``, the
    Gamma shape of the first log-gamma forest (``trigamma(c) = kappa^2 v``; prior, Jacobian
    and the forests with that ``kappa^2`` in :func:`learned_gamma_scale_logpdf`); normal
    leaves add ``-L/2 log v - S/(2 v)``, log-gamma forests of another ``kappa^2`` their
    density at ``log_gamma_prior(sqrt(v), kappa)``.  Sets every forest's leaf scale."""
    gamma = [p for p in parts if isinstance(p, GammaForestSampler)]
    k2 = gamma[0].kappa ** 2
    same = [p for p in gamma if p.kappa ** 2 == k2]
    other = [p for p in gamma if p.kappa ** 2 != k2]
    normal = [p for p in parts if not isinstance(p, GammaForestSampler)]
    stats = np.sum([p.log_leaf_stats() for p in same], axis=0)
    n_leaves, sum_sq = np.sum([p.leaf_stats() for p in normal], axis=0) if normal else (0, 0)
    others = [(p.kappa, p.log_leaf_stats()) for p in other]
    prior = learned_scale_prior(sd0)

    def logf(u: float) -> float:
        lp = learned_gamma_scale_logpdf(u, *stats, *prior, k2)
        if not (normal or others) or not np.isfinite(lp):
            return lp
        v = float(special.zeta(2.0, np.exp(u))) / k2
        lp += -0.5 * n_leaves * np.log(v) - 0.5 * sum_sq / v
        for kappa, (L, s1, s2) in others:
            c, d = log_gamma_prior(np.sqrt(v), kappa)
            lp += L * (c * np.log(d) - special.gammaln(c)) + c * s1 - d * s2
        return lp

    u = slice_sample(rng, float(np.log(same[0].gamma_prior[0])), logf, 0.5, 64,
                     LEAF_SCALE_FIX)
    for p in same:
        p.set_gamma_shape(np.exp(u))
    for p in normal + other:
        p.leaf_sd = same[0].leaf_sd


class ModelLeafScale(FixedLeafScale):
    """``leaf_sd`` an expression of one free model variable, sampled with the trees.

    Parameters
    ----------
    model : pm.Model
    tree_rv : TensorVariable
        The tree term.
    scale_rv : TensorVariable
        The free variable ``leaf_sd`` depends on (a scalar that nothing else depends on,
        :func:`check_owned_by_term`).
    start : callable
        Returns the starting point (called once, for the starting sd).
    """

    def __init__(self, model: Model, tree_rv, scale_rv, start):
        check_owned_by_term(model, tree_rv, scale_rv)
        self.var_name = tree_rv.name
        value = model.rvs_to_values[scale_rv]
        self.name = value.name
        self.value_names = (value.name,)
        expr = model.replace_rvs_by_values([term_inputs(tree_rv).leaf_sd])[0]
        sd_fn = model.compile_fn(expr, inputs=[value], on_unused_input="ignore",
                                 point_fn=False)
        lp_fn = model.compile_fn(model.logp(vars=[scale_rv], jacobian=True),
                                 inputs=[value], on_unused_input="ignore", point_fn=False)
        self._leaf_sd_fn = AtValue(sd_fn, value.name)
        self._logp = AtValue(lp_fn, value.name)
        super().__init__(tree_rv.name, float(self._leaf_sd_fn(start())))

    def at(self, point) -> float:
        """The leaf sd at the point (positive and finite, or an error naming the term)."""
        sd = float(self._leaf_sd_fn(point))
        if not (np.isfinite(sd) and sd > 0):
            raise ValueError(f"The leaf scale of {self.var_name!r} evaluated to {sd!r}; it must "
                             "be positive and finite (for example pt.sqrt of a positive "
                             "variance, or a HalfNormal sd).")
        return sd

    def load(self, sampler, point) -> None:
        sampler.leaf_sd = self.at(point)

    def draw(self, rng, sampler, point) -> np.ndarray:
        """Slice-sampling update (Neal 2003, stepping out with width 1 and at most 32 steps,
        then shrinkage) of the leaf-scale variable on its transformed scale, from its full
        conditional: its prior (with the Jacobian) times ``prod_leaves N(mu | 0, sd^2)``,
        which depends on the leaves through their number L and sum of squares S only."""
        name = self.name
        L, S = sampler.leaf_stats()
        dtype = point[name].dtype
        trial = dict(point)

        def logf(x):
            trial[name] = np.asarray(x, dtype=dtype)
            sd = float(self._leaf_sd_fn(trial))
            if not (np.isfinite(sd) and sd > 0):
                return -np.inf
            lp = float(self._logp(trial))
            return lp - L * np.log(sd) - 0.5 * S / (sd * sd) if np.isfinite(lp) else -np.inf

        x0 = float(np.asarray(point[name]))
        return np.asarray(slice_sample(rng, x0, logf, 1.0, 32, LEAF_SCALE_FIX), dtype=dtype)

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        new = {self.name: self.draw(rng, sampler, point)}
        sampler.leaf_sd = self.at({**point, **new})
        return new


def make_leaf_scale(model: Model, tree_rv, scale: list, start) -> FixedLeafScale:
    """The leaf-scale part of the tree step of ``tree_rv``: :class:`ModelLeafScale` when
    ``leaf_sd`` depends on the free variable ``scale[0]``, :class:`LearnedLeafScale` for
    ``leaf_sd="learned"``, else :class:`FixedLeafScale`; its ``sd0`` is the sd the sampler
    starts from."""
    if scale:
        return ModelLeafScale(model, tree_rv, scale[0], start)
    sd0 = float(term_inputs(tree_rv).leaf_sd.eval())
    if tree_rv.owner.op.prior.learned_scale:
        return LearnedLeafScale(tree_rv.name, sd0)
    return FixedLeafScale(tree_rv.name, sd0)
