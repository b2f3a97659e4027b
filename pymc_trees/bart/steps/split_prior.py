"""The split prior of a tree term (the probabilities with which a split picks each column),
one class per mode, composed by the tree step
(:class:`~pymc_trees.bart.steps.tree_step.CGMTreeStep`, :class:`~pymc_trees.bart.steps.tree_step.PGTreeStep`).

* :class:`UniformSplitPrior`: fixed weights (``split_prior="uniform"`` or given numbers).
* :class:`DartSplitPrior`: ``split_prior="dart"``, Linero's (2018) DART inside the tree
  step: ``s ~ Dirichlet(alpha / p, ...)`` with alpha's prior, both drawn from their
  conditionals after every sweep (:meth:`~pymc_trees.bart.samplers.sampler.ForestSampler.dart_update`;
  the prior draw is the sampler's :meth:`~pymc_trees.bart.samplers.sampler.ForestSampler.draw_prior`).
  Their current values are the sampler's (``dart_log_s``, ``dart_x``; in the step's state).
* :class:`DirichletSplitPrior`: ``split_prior=s`` with ``s`` a ``pm.Dirichlet`` model
  variable, updated exactly given the forest, and its concentration (when one scalar model
  variable that nothing else depends on) slice-sampled.

The interface is the one of :mod:`pymc_trees.bart.steps.leaf_scale` (``load``, ``update``,
``stats``, ``stats_dtypes_shapes``, ``value_names``), plus ``state``/``restore`` of the
values the sampler holds.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.transforms import SimplexTransform
from pymc.model import Model
from pytensor.graph.traversal import ancestors
from scipy.special import gammaln, logsumexp

from pymc_trees.bart.term.distribution import term_inputs
from pymc_trees.bart.kernels.forest import split_prior_gibbs
from pymc_trees.bart.steps.leaf_scale import AtValue, check_owned_by_term
from pymc_trees.core.slice_sampling import slice_sample
from pymc_trees.bart.term.trace_io import DART_SUFFIX, DartDraw

__all__ = ["UniformSplitPrior", "DartSplitPrior", "DirichletSplitPrior", "make_split_prior",
           "split_prior_rvs", "split_concentration_rvs"]


def split_prior_rvs(model: Model, tree_rv) -> list:
    """The free variables that the split weights of the tree term ``tree_rv`` depend on
    (empty for fixed weights)."""
    anc = set(ancestors([term_inputs(tree_rv).split_weights], blockers=model.free_RVs))
    return [v for v in model.free_RVs if v in anc]


def split_concentration_rvs(model: Model, tree_rv) -> list:
    """The concentration of a learned split-probability vector (DART) that the tree step
    samples too: one scalar free variable that the Dirichlet's ``a`` depends on and that
    nothing else depends on.  Empty otherwise (PyMC's own steps then sample it)."""
    split = split_prior_rvs(model, tree_rv)
    if len(split) != 1 or not isinstance(split[0].owner.op, pm.Dirichlet.rv_type):
        return []
    s = split[0]
    anc = set(ancestors([s.owner.inputs[-1]], blockers=model.free_RVs))
    cands = [v for v in model.free_RVs if v in anc]
    if len(cands) != 1 or cands[0].ndim != 0:
        return []
    c = cands[0]
    rvs = list(model.basic_RVs)
    for other in rvs:
        if other is not c and other is not s and c in set(ancestors(other.owner.inputs,
                                                                     blockers=rvs)):
            return []
    if any(c in set(ancestors([pot], blockers=rvs)) for pot in model.potentials):
        return []
    return [c]


class UniformSplitPrior:
    """Fixed split weights: nothing to load, draw, write or report."""

    value_names: tuple[str, ...] = ()
    stats_dtypes_shapes: dict = {}

    def load(self, sampler, point) -> None:
        pass

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        return {}

    def stats(self, sampler) -> dict:
        return {}

    def state(self, sampler):
        return None

    def restore(self, sampler, state) -> None:
        pass


class DartSplitPrior(UniformSplitPrior):
    """DART inside the tree step (``split_prior="dart"``).

    Parameters
    ----------
    var_name : str
        The tree term's name: the stat is ``<var_name>_dart``, a
        :class:`~pymc_trees.bart.term.trace_io.DartDraw` (an object stat, the channel PyMC's
        backends keep for arrays), made ``<name>_split_probs`` (chain, draw, column) and
        ``<name>_split_alpha`` (chain, draw) of ``sample_stats`` by
        :mod:`pymc_trees.bart.term.trace_io`, with an output dim after draw for shape (k, n).
    shared : bool
        Whether the k outputs share one forest (whose probabilities are every output's).
    """

    def __init__(self, var_name: str, shared: bool):
        self.stat = f"{var_name}{DART_SUFFIX}"
        self.shared = bool(shared)
        self.stats_dtypes_shapes = {self.stat: (object, [])}

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        if not prior_only:  # a term drawn from its prior drew them with its forest
            sampler.dart_update(rng)
        return {}

    def stats(self, sampler) -> dict:
        probs, alpha = sampler.dart_probs, sampler.dart_alpha
        if self.shared:  # one forest: its probabilities are every output's
            k = sampler.outputs
            probs, alpha = np.tile(probs, (k, 1)), np.full(k, alpha)
        return {self.stat: DartDraw(probs, alpha)}

    @staticmethod
    def state(sampler):
        """``(log s, x)`` of every forest (``x = log(alpha / p)``), copies."""
        return [(p.dart_log_s.copy(), float(p.dart_x))
                for p in getattr(sampler, "parts", None) or [sampler]]

    @staticmethod
    def restore(sampler, state) -> None:
        if state is None:
            return
        for p, (log_s, x) in zip(getattr(sampler, "parts", None) or [sampler], state):
            p.dart_log_s, p.dart_x = np.array(log_s, dtype=np.float64), float(x)
            p.set_split_weights(np.exp(p.dart_log_s - p.dart_log_s.max()))


class DirichletSplitPrior(UniformSplitPrior):
    """``split_prior=s``, ``s`` a ``pm.Dirichlet`` variable of length p sampled with the
    trees, and its concentration ``conc`` (a scalar model variable, or None when PyMC's own
    steps sample it or it is fixed).

    Parameters
    ----------
    model : pm.Model
    tree_rv, s_rv, conc_rv : TensorVariable
    p : int
        The number of columns.
    """

    def __init__(self, model: Model, tree_rv, s_rv, conc_rv, p: int):
        check_owned_by_term(model, tree_rv, s_rv, role="split probabilities")
        value = model.rvs_to_values[s_rv]
        self.name = value.name
        self._split_fn = AtValue(
            model.compile_fn(model.replace_rvs_by_values([s_rv])[0], inputs=[value],
                             on_unused_input="ignore", point_fn=False), value.name)
        a_expr = model.replace_rvs_by_values([s_rv.owner.inputs[-1]])[0]
        self._conc = model.compile_fn(pt.broadcast_to(a_expr, (p,)), inputs=model.value_vars,
                                      on_unused_input="ignore")
        transform = model.rvs_to_transforms.get(s_rv)
        # PyMC's simplex transform is read and written on the log scale (log s is finite
        # where s underflows); another transform goes through s itself
        self._simplex = isinstance(transform, SimplexTransform)
        x = pt.dvector("s")
        self._forward = (None if transform is None or self._simplex else
                         pytensor.function([x], transform.forward(x)))
        self.conc_name = None
        if conc_rv is not None:
            cval = model.rvs_to_values[conc_rv]
            self.conc_name = cval.name
            lp = model.logp(vars=[conc_rv], jacobian=True)
            self._conc_logp = model.compile_fn(lp, inputs=[cval], on_unused_input="ignore",
                                               point_fn=False)
        self.value_names = (self.name,) + ((self.conc_name,) if self.conc_name else ())

    def weights(self, point) -> np.ndarray:
        """The split probabilities at the point, shape (p,)."""
        return self._split_fn(point)

    def load(self, sampler, point) -> None:
        sampler.set_split_weights(self._split_fn(point))

    def log_split(self, point) -> np.ndarray:
        """``log s``, the log split probabilities at the point, shape (p,)."""
        y = np.asarray(point[self.name], dtype=np.float64)
        if self._simplex:
            z = np.append(y, -y.sum())
            return z - logsumexp(z)
        s = np.asarray(self._split_fn(point), dtype=np.float64)
        return np.log(np.maximum(s / s.sum(), np.finfo(np.float64).tiny))

    def split_value(self, log_s: np.ndarray, dtype) -> np.ndarray:
        """The split probabilities' value (transformed when the variable is) from
        ``log s``."""
        if self._simplex:
            value = log_s[:-1] - log_s.mean()
        else:
            s = np.exp(log_s - log_s.max())
            s /= s.sum()
            value = s if self._forward is None else self._forward(s)
        return np.asarray(value, dtype=dtype)

    def draw_split(self, rng, sampler, point) -> np.ndarray:
        """Exact update of the split probabilities s (DART) given the forest: the Gibbs step
        of :func:`pymc_trees.bart.kernels.forest.split_prior_gibbs` on the log scale, with the
        Dirichlet's concentration evaluated at the point.  The sampler gets the weights
        ``s / max(s)`` (those below the smallest normal float raised to it); returns the
        (transformed) value."""
        f = sampler.forest
        a = np.asarray(self._conc(point), dtype=np.float64)
        lay = sampler.layout
        log_s = split_prior_gibbs(rng, f.var, f.n_nodes, f.amask, a, self.log_split(point),
                                  lay.fmap, lay.share)
        sampler.set_split_weights(np.exp(log_s - log_s.max()))
        return self.split_value(log_s, point[self.name].dtype)

    def draw_concentration(self, rng, point) -> np.ndarray:
        """Slice-sampling update (as for the leaf scale) of the DART concentration variable
        on its transformed scale, from its full conditional: its prior (with the Jacobian)
        times the Dirichlet density of the current split probabilities, computed from
        ``log s`` so that probabilities below the smallest float keep their density."""
        name = self.conc_name
        log_s = self.log_split(point)
        dtype = point[name].dtype
        trial = dict(point)

        def logf(x):
            x = np.asarray(x, dtype=dtype)
            lp = float(self._conc_logp(x))
            if not np.isfinite(lp):
                return -np.inf
            trial[name] = x
            a = np.asarray(self._conc(trial), dtype=np.float64)
            if not np.all(np.isfinite(a) & (a > 0)):
                return -np.inf
            lp += gammaln(a.sum()) - gammaln(a).sum() + float(np.dot(a - 1.0, log_s))
            return lp if np.isfinite(lp) else -np.inf

        x0 = float(np.asarray(point[name]))
        return np.asarray(slice_sample(rng, x0, logf, 1.0, 32, "Report this with the model."),
                          dtype=dtype)

    def update(self, rng, sampler, point: dict, prior_only: bool) -> dict:
        new = {self.name: self.draw_split(rng, sampler, point)}
        if self.conc_name is not None:
            new[self.conc_name] = self.draw_concentration(rng, {**point, **new})
        return new


def make_split_prior(model: Model, tree_rv, split: list, conc: list, sampler,
                     shared: bool) -> UniformSplitPrior:
    """The split-prior part of the tree step of ``tree_rv``: :class:`DirichletSplitPrior`
    when its split weights are the model variable ``split[0]`` (with the concentration
    ``conc[0]`` when given), :class:`DartSplitPrior` for ``split_prior="dart"``, else
    :class:`UniformSplitPrior`."""
    if split:
        return DirichletSplitPrior(model, tree_rv, split[0], conc[0] if conc else None,
                                   sampler.X.shape[1])
    if tree_rv.owner.op.prior.dart:
        return DartSplitPrior(tree_rv.name, shared)
    return UniformSplitPrior()
