"""PyMC step methods: CGM tree moves and Particle Gibbs for ``BARTTree`` terms, and the
conjugate noise update.

All are registered in ``pymc.step_methods.STEP_METHODS`` when :mod:`pymc_trees` is imported,
so ``pm.sample()`` assigns them by itself.  All draw only from the generator PyMC hands them
(``setup_chain``), so a ``random_seed`` reproduces a run exactly, with any number of cores.
"""

from __future__ import annotations

from dataclasses import field

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy.special import gammaln, logsumexp
from pymc.model import Model, modelcontext
from pymc.step_methods.compound import BlockedStep, CompoundStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pymc.logprob.transforms import LogTransform, SimplexTransform
from pytensor.graph.traversal import ancestors

from pymc_trees.bart.pymc_calls import pymc_frame
from pymc_trees.bart.distribution import (OUTPUT_SCALE_RATIO, BARTTreeRV,
                                          categorical_columns, keeps_values)
from pymc_trees.core.tabular import mark_missing, warn_user
from pymc_trees.bart.kernels.forest import split_prior_gibbs
from pymc_trees.bart.trace_io import DART_SUFFIX, DartDraw
from pymc_trees.bart.plan import term_plan
from pymc_trees.bart.sampler import (MOVES, learned_scale_draw, learned_scale_prior_draw,
                                     move_cumulative_probs)
from pymc_trees.bart.structure import (ModelStructureError, NotAugmentable, general_likelihood,
                                       joint_output_likelihoods, level_shifts, noise_likelihood,
                                       output_tree_likelihood, tree_likelihood,
                                       unobserved_term)

__all__ = ["CGMTreeStep", "PGTreeStep", "NoiseGibbs", "default_move_probs", "forest_stat_name",
           "leaf_scale_rvs", "split_prior_rvs", "split_concentration_rvs"]

DEFAULT_MOVES = {"grow": 0.25, "prune": 0.25, "change": 0.40, "swap": 0.10}
# Above this many training rows the default moves are grow and prune alone: at 30,000 and
# 100,000 rows they give the default model as much ESS per second of sigma, of the leaf scale
# and of f as CGM's four moves, or more, for 0.76 to 0.83 of the time per iteration
# (benchmarks/default_moves.py, docs/mixing.md "The default moves at scale").  The threshold
# is the one above which a term's values stay out of the trace.
LARGE_DATA_ROWS = 50_000
DEFAULT_MOVES_LARGE = {"grow": 0.5, "prune": 0.5}


def default_move_probs(n_rows: int) -> dict[str, float]:
    """The move probabilities :class:`CGMTreeStep` uses when none are given, for a term with
    ``n_rows`` training rows: CGM's grow/prune/change/swap ``.25/.25/.40/.10`` up to
    ``LARGE_DATA_ROWS`` (50,000) rows, grow/prune ``.5/.5`` above."""
    return dict(DEFAULT_MOVES if n_rows <= LARGE_DATA_ROWS else DEFAULT_MOVES_LARGE)


def forest_stat_name(var_name: str) -> str:
    """Name of the sampler stat carrying a term's forest (moved to the ``forests`` group in the
    DataTree, see :mod:`pymc_trees.bart.trace_io`)."""
    return f"{var_name}_forest"


def leaf_scale_rvs(model: Model, tree_rv) -> list:
    """The free variables that the ``leaf_sd`` input of the tree term ``tree_rv`` depends on
    (empty for a fixed leaf scale)."""
    leaf_sd = tree_rv.owner.inputs[4]
    anc = set(ancestors([leaf_sd], blockers=model.free_RVs))
    return [v for v in model.free_RVs if v in anc]


def split_prior_rvs(model: Model, tree_rv) -> list:
    """The free variables that the split weights of the tree term ``tree_rv`` depend on
    (empty for fixed weights)."""
    weights = tree_rv.owner.inputs[5]
    anc = set(ancestors([weights], blockers=model.free_RVs))
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


def _hyper_rvs(model: Model, tree_rv) -> list:
    return (leaf_scale_rvs(model, tree_rv) + split_prior_rvs(model, tree_rv)
            + split_concentration_rvs(model, tree_rv))


def _trees_owning(model: Model, rv) -> list:
    """The tree terms whose learned leaf scale, split probabilities or their concentration is
    ``rv`` (the hyperparameters a tree step samples with its trees)."""
    return [t for t in model.free_RVs
            if isinstance(t.owner.op, BARTTreeRV) and rv in _hyper_rvs(model, t)]


def _check_leaf_scale(model: Model, tree_rv, scale_rv, role: str = "leaf scale") -> None:
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


def _group_tree_vars(model: Model, value_vars) -> list[list]:
    """Split the value variables given to a tree step into one group per tree term: the term's
    variable, then the learned hyperparameters it owns that are among them."""
    rvs = [model.values_to_rvs[v] for v in value_vars]
    trees = [r for r in rvs if isinstance(r.owner.op, BARTTreeRV)]
    groups = {t: [model.rvs_to_values[t]] for t in trees}
    for r in rvs:
        if r in groups:
            continue
        owners = [t for t in _trees_owning(model, r) if t in groups]
        if not owners:
            tree_names = [t.name for t in _trees_owning(model, r)]
            raise ValueError(
                f"{r.name!r} was given to a tree step without the tree term it belongs to "
                f"({', '.join(map(repr, tree_names)) or 'none'}): a learned leaf scale or "
                "split-probability vector is sampled together with its trees. Pass both, "
                "e.g. CGMTreeStep([f, leaf_scale]).")
        groups[owners[0]].append(model.rvs_to_values[r])
    return list(groups.values())


@dataclass_state
class TreeStepState(StepMethodState):
    forest: object = field(default=None)
    tune: bool = True


# tuning iterations that update the trees (warm start included); the rest of the tuning
# holds them (docs/suite.md, "Tuning length")
DEFAULT_BURN_IN = 200

EXTERNAL_NUTS = (
    "A model with a BARTTree term needs nuts_sampler='pymc' (the default): pm.sample then "
    "composes the tree steps (CGMTreeStep / PGTreeStep) with PyMC's NUTS for the continuous "
    "variables in one chain. nutpie, numpyro and blackjax run NUTS alone over every variable; "
    "a sum of trees has no gradient and no density on f, so they cannot sample it.")


def _rebuilt(cls):
    """An empty step of class ``cls``, whose state the unpickler then sets
    (:func:`_reduce_step`)."""
    return object.__new__(cls)


def _reduce_step(step) -> tuple:
    """How a step of this package pickles: from its state alone.  PyMC's ``BlockedStep``
    pickles the arguments it was built with and builds the step again from them in each
    worker process (``__getnewargs_ex__``); those arguments hold the model, whose data (X:
    80 bytes a training row at p = 10, and y) a built step no longer reads.  Rebuilt from
    its state, the step that reaches a worker carries its bins and its compiled pieces
    only."""
    state = dict(step.__dict__)
    state.pop("_BlockedStep__newargs", None)
    return _rebuilt, (type(step),), state


class _TreeStep(BlockedStep):
    """Shared machinery of the tree steps: the forest sampler, the likelihood pieces read from
    the model, the level shifts, the per-draw stats and the forest stored with every draw.

    ``default_blocked = False``: given several tree terms, PyMC builds one step per term."""

    default_blocked = False
    _state_class = TreeStepState
    sampler_kind = ""
    # the general step's sweep in the compiled kernel (False) or in the Python loop that
    # calls the likelihood through PyTensor (True; the same moves and random numbers, kept as
    # the reference the kernel is tested against and for likelihoods the kernel cannot run)
    python_sweep = False
    stats_dtypes_shapes = {
        "mean_depth": (np.float64, []),
        "mean_leaves": (np.float64, []),
        "warm_start": (bool, []),
        "trees_held": (bool, []),
        "tune": (bool, []),
    }

    def __new__(cls, vars=None, *args, **kwargs):
        # one step per tree term, holding the term and its learned leaf scale (if any)
        model = modelcontext(kwargs.get("model"))
        kwargs["model"] = model
        vars = model.value_vars if vars is None else vars
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        groups = _group_tree_vars(model, get_value_vars_from_user_vars(vars, model))
        if len(groups) <= 1:
            kwargs["blocked"] = True
            return super().__new__(cls, vars, *args, **kwargs)
        rngs = get_random_generator(kwargs.pop("rng", None)).spawn(len(groups))
        return CompoundStep([cls(g, *args, **{**kwargs, "rng": r})
                             for g, r in zip(groups, rngs)])

    def __reduce_ex__(self, protocol):
        return _reduce_step(self)

    def __init__(self, vars, model: Model | None = None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked: bool = True, warm_start: int = 10,
                 burn_in: int | None = DEFAULT_BURN_IN):
        if int(warm_start) != warm_start or warm_start < 0:
            raise ValueError(f"warm_start must be a non-negative integer number of tuning "
                             f"iterations; got {warm_start!r}.")
        if burn_in is not None and (isinstance(burn_in, bool) or int(burn_in) != burn_in
                                    or burn_in < 1):
            raise ValueError(f"burn_in must be a positive integer number of tuning iterations "
                             f"or None (every tuning iteration updates the trees); got "
                             f"{burn_in!r}.")
        self.warm_start = int(warm_start)
        self.burn_in = None if burn_in is None else int(burn_in)
        self._warm_left = 0
        self._burn_left = None
        self._held = None
        model = modelcontext(model)
        # the starting point, computed only when a part below needs it
        start = (lambda: initial_point) if initial_point is not None else model.initial_point
        rv, scale, split, conc = self._select_vars(model, vars)
        _, _, X, offset, leaf_sd, _ = rv.owner.inputs
        # PyMC's own array, not a copy (80 bytes a row at p = 10): nothing here writes to it,
        # and pm.set_data replaces the shared value rather than writing into it
        X_value = mark_missing(X.get_value(borrow=True) if hasattr(X, "get_value") else X.eval(),
                               getattr(rv.owner.op, "missing", None))
        sd0 = self._setup_leaf_scale(model, rv, scale, leaf_sd, start)
        # leaf_sd="learned": the leaf scale lives in the sampler, its prior centred on sd0
        self._internal_sd0 = sd0 if rv.owner.op.prior.learned_scale else None
        self._make_sampler(rv, X_value, float(offset.eval()), sd0)
        # a term whose values stay out of the trace (by default above 50,000 rows) takes
        # them from the sweep's residual, equal to the trees' sum up to rounding; a traced
        # term sums the trees, so that pmt.predict reproduces the trace to the last bit
        exact = keeps_values(rv)
        for smp in getattr(self.sampler, "parts", None) or [self.sampler]:
            smp.exact_values = exact
        self._setup_split_prior(model, rv, split, conc, start)
        self._read_likelihood(model, rv, start)
        self.forest_stat = forest_stat_name(self.var_name)
        # the leaf scale of every draw, named per term like <name>_split_probs (one stat of
        # each name per step: two terms' "leaf_sd" were stacked in one unnamed dim)
        self.leaf_sd_stat = f"{self.var_name}_leaf_sd"
        sds = {**type(self).stats_dtypes_shapes, self.leaf_sd_stat: (np.float64, []),
               self.forest_stat: (object, [])}
        # DART inside the tree step: the split probabilities and Linero's alpha, per output
        # (object stats, the channel PyMC's backends keep for arrays; made numeric arrays
        # of sample_stats with the forests, pymc_trees.bart.trace_io)
        self._dart = bool(rv.owner.op.prior.dart)
        if self._dart:
            sds[f"{self.var_name}{DART_SUFFIX}"] = (object, [])
        self.stats_dtypes_shapes = sds
        self.stats_dtypes = [{k: dt for k, (dt, _) in sds.items()}]
        self.rng = get_random_generator(rng)
        self.tune = True
        # the burn-in holds the trees only where no other step adapts during tuning
        self._hold_ok = self.burn_in is not None and _only_exact_steps(model)
        # a chain starts from reset() or a saved state, which allocate the rows' arrays
        # again: this copy (the one PyMC pickles to its worker processes) needs none
        self.sampler.release_rows()

    def _select_vars(self, model, vars) -> tuple:
        """The tree term among ``vars`` and the variables sampled with it (its learned leaf
        scale, split probabilities and their concentration); sets ``var_name`` and
        ``vars``."""
        value_vars = get_value_vars_from_user_vars(vars, model)
        rvs = [model.values_to_rvs[v] for v in value_vars]
        trees = [r for r in rvs if isinstance(r.owner.op, BARTTreeRV)]
        if len(trees) != 1:
            names = [r.name for r in rvs]
            raise ValueError(f"{type(self).__name__} takes one BARTTree variable (and its "
                             f"learned leaf scale); got {names}. Give each tree term its own "
                             "step.")
        rv = trees[0]
        self.var_name = rv.name
        scale = leaf_scale_rvs(model, rv)
        if len(scale) > 1:
            raise ModelStructureError(
                f"The leaf_sd of {rv.name!r} depends on several free variables "
                f"({[v.name for v in scale]}); a learned leaf scale must be one variable.")
        split = split_prior_rvs(model, rv)
        weights = rv.owner.inputs[5]
        if split and not (len(split) == 1 and split[0] is weights
                          and isinstance(weights.owner.op, pm.Dirichlet.rv_type)):
            raise ModelStructureError(
                f"The split_prior of {rv.name!r} depends on {[v.name for v in split]}; learned "
                "split probabilities must be one pm.Dirichlet variable of length p itself, "
                "passed as BARTTree(..., split_prior=s) (its concentration may be a model "
                "variable).")
        # the concentration is sampled here when it is given (pm.sample gives it)
        conc = [c for c in split_concentration_rvs(model, rv) if c in rvs]
        for r in rvs:
            if r is not rv and r not in scale and r not in split and r not in conc:
                raise ValueError(f"{r.name!r} is neither the BARTTree variable {rv.name!r} nor "
                                 "its leaf scale or split probabilities; give it its own step.")
        for h, role in [(v, "leaf scale") for v in scale] + [(v, "split probabilities")
                                                            for v in split]:
            if h not in rvs:
                raise ValueError(
                    f"The {role} {h.name!r} of {rv.name!r} is sampled by the tree step "
                    f"together with the trees; pass both: {type(self).__name__}([{rv.name}, "
                    f"{h.name}]).")
        self.vars = ([model.rvs_to_values[rv]] + [model.rvs_to_values[v] for v in scale]
                     + [model.rvs_to_values[v] for v in split + conc])
        return rv, scale, split, conc

    def _setup_leaf_scale(self, model, rv, scale, leaf_sd, start) -> float:
        """Compile the learned leaf scale's value and log density (when there is one);
        returns the leaf sd at the starting point."""
        self._scale_name = None
        if scale:
            _check_leaf_scale(model, rv, scale[0])
            value = model.rvs_to_values[scale[0]]
            self._scale_name = value.name
            expr = model.replace_rvs_by_values([leaf_sd])[0]
            sd_fn = model.compile_fn(expr, inputs=[value], on_unused_input="ignore",
                                     point_fn=False)
            lp_fn = model.compile_fn(model.logp(vars=[scale[0]], jacobian=True),
                                     inputs=[value], on_unused_input="ignore", point_fn=False)
            self._leaf_sd_fn = _AtValue(sd_fn, value.name)
            self._scale_logp = _AtValue(lp_fn, value.name)
            return float(self._leaf_sd_fn(start()))
        return float(leaf_sd.eval())

    def _make_sampler(self, rv, X_value, offset: float, sd0: float) -> None:
        """The orchestration of the kernels, as the term's plan (:mod:`pymc_trees.bart.plan`)
        picks it for this step: one ForestSampler, one per output, or one whose leaves hold
        the k outputs' values."""
        self._plan = term_plan(rv.owner.op, rv.name, self.sampler_kind)
        self._plan.check_step()
        self._shared = self._plan.shared
        self.sampler = self._plan.make_sampler(X_value, rv.owner.op.prior, offset, sd0,
                                               categorical_columns(rv.owner.op))

    def _setup_split_prior(self, model, rv, split, conc, start) -> None:
        """Compile learned split probabilities and their concentration (when there are)."""
        self._split_name = None
        if split:
            s_rv = split[0]
            _check_leaf_scale(model, rv, s_rv, role="split probabilities")
            value = model.rvs_to_values[s_rv]
            self._split_name = value.name
            self._split_fn = _AtValue(
                model.compile_fn(model.replace_rvs_by_values([s_rv])[0], inputs=[value],
                                 on_unused_input="ignore", point_fn=False), value.name)
            a_expr = model.replace_rvs_by_values([s_rv.owner.inputs[-1]])[0]
            self._split_conc = model.compile_fn(
                pt.broadcast_to(a_expr, (self.sampler.X.shape[1],)), inputs=model.value_vars,
                on_unused_input="ignore")
            transform = model.rvs_to_transforms.get(s_rv)
            # PyMC's simplex transform is read and written on the log scale (log s is
            # finite where s underflows); another transform goes through s itself
            self._split_simplex = isinstance(transform, SimplexTransform)
            x = pt.dvector("s")
            self._split_forward = (None if transform is None or self._split_simplex else
                                   pytensor.function([x], transform.forward(x)))
            self.sampler.set_split_weights(self._split_fn(start()))
        self._conc_name = None
        if conc:
            cval = model.rvs_to_values[conc[0]]
            self._conc_name = cval.name
            lp = model.logp(vars=[conc[0]], jacobian=True)
            self._conc_logp = model.compile_fn(lp, inputs=[cval], on_unused_input="ignore",
                                               point_fn=False)

    def _read_likelihood(self, model, rv, start) -> None:
        """Read the likelihood around the term: conjugate, augmented or general (then check
        its link and its density at the starting point), and the level shifts.  A term that
        no density depends on (:func:`~pymc_trees.bart.structure.unobserved_term`) has none:
        its step draws it from its prior (:meth:`_prior_draw`)."""
        outputs = rv.owner.op.outputs
        self._liks = None
        self._joint = None
        self._prior_only = unobserved_term(model, rv)
        if self._prior_only:
            self.likelihood = None
            self.level_shifts = []
            return
        try:
            if self._shared:
                # the k outputs' leaf values move together: integrated out jointly where the
                # likelihood factorises over the outputs into augmentable ones (Gaussian given
                # the latent variables), else the general step over the joint likelihood of
                # the k outputs at each row, for any likelihood
                try:
                    self._joint = joint_output_likelihoods(model, rv, self.sampler.n)
                    self.likelihood = self._joint[0]
                except NotAugmentable:
                    self.likelihood = general_likelihood(model, rv, self.sampler.n, joint=True)
            elif outputs is not None:
                # one output given the others: the conjugate update where the output is a
                # linear predictor of an augmentable likelihood, else the general step
                self._liks = []
                for j in range(outputs):
                    try:
                        lik = output_tree_likelihood(model, rv, self.sampler.n, j)
                    except NotAugmentable:
                        lik = general_likelihood(model, rv, self.sampler.n, output=j)
                    self._liks.append(lik)
                self.likelihood = self._liks[0]
            else:
                self.likelihood = tree_likelihood(model, rv, self.sampler.n)
        except NotAugmentable as err:
            self._plan.refuse_general(err)  # the general step: CGM only
            self.likelihood = general_likelihood(model, rv, self.sampler.n)
        liks = self._liks or self._joint or [self.likelihood]
        general = [lik for lik in liks if lik.family == "general"]
        self._plan.check_likelihoods(liks)
        for lik in liks:
            if lik.family == "general":
                _check_general_link(rv, lik)
            elif self._liks is None and self._joint is None:
                # outputs carry no link of their own (one calibration)
                _check_link(rv, lik)
        if general:
            _check_general_start(rv, general, start())
        if outputs is not None:
            _warn_output_scales(rv, self._liks or self._joint or [], start,
                                self.sampler.offset)
        self.level_shifts = ([] if self._liks is not None or self._joint is not None or general
                             else level_shifts(model, rv, self.likelihood))

    @property
    def forest(self):
        """The step state's forest (PyMC's ``sampling_state``): the trees without the rows'
        leaves, which a restore routes anew, so that the state PyMC keeps for the run costs
        no memory per training row (it was 4 m bytes a row)."""
        return self.sampler.forest_state()

    @forest.setter
    def forest(self, value):
        if value is not None:
            self.sampler.restore_forest(value)

    def _coin_rng(self) -> np.random.Generator:
        """The generator of the stored forests' coins (routings the training rows leave open,
        :meth:`pymc_trees.ForestSampler.pack`): spawned once from the step's generator, which
        spawning does not advance, so the coins leave the sampler's own draws as they were
        and a seed still reproduces both."""
        if getattr(self, "_coins_of", None) is not self.rng:
            self._coins = self.rng.spawn(1)[0]
            self._coins_of = self.rng
        return self._coins

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.sampler.reset()  # the forest and a learned leaf scale back to their start
        for lik in self._liks or self._joint or [self.likelihood]:
            if lik is not None:  # None: a term drawn from its prior
                lik.reset()
        self.tune = tune > 0
        # grow-from-root sweeps open the tuning phase; at least half of it stays exact (a
        # warm start grows one value per leaf: none for outputs that share their trees, nor
        # for a term drawn from its prior, which needs no start)
        cold = not self._plan.warm_start or self._prior_only
        self._warm_left = 0 if cold else min(self.warm_start, tune // 2)
        # the trees' burn-in: the first burn_in tuning iterations; the rest hold the trees
        self._burn_left = self.burn_in if self._hold_ok else None
        self._held = None
        # the chain's last step lets go of the rows' arrays (release_rows): PyMC then
        # converts the trace and copies X into it, the peak of a run's memory while they lived
        self._steps_left = tune + draws
        # general-step sweeps of the tuning phase, and whether any of their proposals was
        # accepted (stop_tuning warns about a chain that never left its start)
        self._tune_sweeps = 0
        self._tune_moved = False

    def stop_tuning(self) -> None:
        """End of tuning: warn when the general tree step rejected every proposal of every
        sweep of the tuning phase (the chain is still at its start)."""
        super().stop_tuning()
        if getattr(self, "_tune_sweeps", 0) and not self._tune_moved:
            warnings.warn(_stuck_message(self.var_name, self._tune_sweeps,
                                         self._liks or [self.likelihood]),
                          UserWarning, stacklevel=2)

    def step(self, point):
        out = self._step(point)
        left = getattr(self, "_steps_left", None)
        if left is not None:
            self._steps_left = left - 1
            if left == 1:
                self.sampler.release_rows()
        return out

    def _warm_stats(self) -> dict:
        raise NotImplementedError

    def _sweep(self, z: np.ndarray, omega: np.ndarray, smp) -> dict:
        """One exact sweep of the forest sampler ``smp`` against pseudo-data ``z`` with row
        precisions ``omega``."""
        raise NotImplementedError

    def _step(self, point):
        if self.tune and self._burn_left is not None:
            if self._burn_left == 0:
                return self._hold(point)
            self._burn_left -= 1
        self._held = None
        self._load_hyperparameters(point)
        warm = self.tune and self._warm_left > 0
        if warm:
            self._warm_left -= 1
        if self._prior_only:
            stats = self._prior_draw()
        elif self._joint is not None:
            stats = self._joint_update(point)
        elif self._liks is None:
            stats = self._update(self.sampler, self.likelihood, point, warm)
        else:
            # output after output, each given the others' current values
            name = self.vars[0].name
            F = self.sampler.values()
            per = []
            for j, (smp, lik) in enumerate(zip(self.sampler.parts, self._liks)):
                per.append(self._update(smp, lik, {**point, name: F}, warm))
                F[j] = smp.values()
            stats = {k: _nanmean([s[k] for s in per]) for k in per[0]}
        return self._finish(point, stats, warm)

    def _prior_draw(self) -> dict:
        """The update of a term that no density depends on: its full conditional is its
        prior, so the forest is drawn afresh from it (the prior draw of
        ``pm.sample_prior_predictive``, :meth:`ForestSampler.draw_prior`) given the learned
        leaf scale and split probabilities that are model variables, at their current
        values.  A scale learned inside the step (``leaf_sd="learned"``) and DART's split
        probabilities are drawn from their priors first, so those draws are independent
        from iteration to iteration.  No move is tried: the stats of the moves are NaN."""
        if self._internal_sd0 is not None:
            self.sampler.leaf_sd = learned_scale_prior_draw(self.rng, self._internal_sd0)
        self.sampler.draw_prior(self.rng)
        return self._warm_stats()

    def _hold(self, point):
        """A tuning iteration after the trees' burn-in: the trees, their leaf scale, split
        probabilities and level shifts stay as they are (the point is returned unchanged);
        the rest of the model goes on tuning around them."""
        if self._held is None:
            mean_depth, mean_leaves = self.sampler.summary()
            self._held = {**self._warm_stats(), "mean_depth": mean_depth,
                          "mean_leaves": mean_leaves, "tune": True,
                          self.leaf_sd_stat: self.sampler.leaf_sd, "warm_start": False,
                          "trees_held": True, **self._dart_stats(),
                          self.forest_stat: self.sampler.pack(self._coin_rng())}
        return point, [dict(self._held)]

    def _update(self, smp, lik, point: dict, warm: bool) -> dict:
        if lik.family == "general":
            return self._general_update(smp, lik, point, warm)
        return self._augmented_update(smp, lik, point, warm)

    def _joint_update(self, point: dict) -> dict:
        """The conjugate update of k outputs that share their trees, with a likelihood that
        factorises over them: each output's pseudo-data (its latent variables drawn given the
        current values), then one sweep with the leaf vectors integrated out jointly
        (:meth:`~pymc_trees.bart.shared_sampler.SharedOutputSampler.conjugate_sweep`)."""
        smp = self.sampler
        F = smp.values()
        Z, omega = np.empty_like(F), np.empty_like(F)
        for j, lik in enumerate(self._joint):
            if not lik.draws_latents:
                Z[j], omega[j] = lik.pseudo_data(point, smp.offset)
            else:
                Z[j], omega[j] = lik.pseudo_data(point, smp.offset, F[j], self.rng)
        return smp.conjugate_sweep(self.rng, Z, omega, self._move_cp)

    def _augmented_update(self, smp, lik, point: dict, warm: bool) -> dict:
        """The conjugate tree update of one forest against its (augmented) pseudo-data."""
        if not lik.draws_latents:
            z, omega = lik.pseudo_data(point, smp.offset)
        else:
            # latent variables of bart-math 8, drawn given the current forest
            z, omega = lik.pseudo_data(point, smp.offset, smp.values(), self.rng)
        if warm:
            smp.gfr_sweep(self.rng, z, omega)
            return self._warm_stats()
        return self._sweep(z, omega, smp)

    def _load_hyperparameters(self, point) -> None:
        """The learned leaf scale and split probabilities at the point, into the sampler."""
        if self._scale_name is not None:
            self.sampler.leaf_sd = self._leaf_sd_at(point)
        if self._split_name is not None:
            self.sampler.set_split_weights(self._split_fn(point))

    def _general_update(self, smp, lik, point: dict, warm: bool) -> dict:
        if warm:
            # a grow-from-root sweep against the Newton pseudo-data at the current values:
            # z = f + g / h with precisions h (rows without curvature carry no weight)
            f = smp.values()
            _, g, h = lik.evaluate(point, f)
            ok = np.isfinite(g) & np.isfinite(h) & (h > 0)
            omega = np.where(ok, h, 0.0)
            z = np.where(ok, f + g / np.where(ok, h, 1.0), f) - smp.offset
            before = smp.forest.copy()
            smp.gfr_sweep(self.rng, z, omega)
            if not np.all(np.isfinite(lik.evaluate(point, smp.values())[0])):
                # the Gaussian pseudo-data know nothing of the likelihood's support: a sweep
                # that leaves it (a scale of zero or below) is undone
                smp.forest = before
            return {f"accept_{mv}": np.nan for mv in (*MOVES, "leaf")}
        stats = smp.general_sweep(self.rng, lik.bind(point), self._move_cp,
                                  None if self.python_sweep else lik.compiled(point))
        if self.tune:
            self._tune_sweeps = getattr(self, "_tune_sweeps", 0) + 1
            if any(v > 0 for k, v in stats.items() if k.startswith("accept_")):
                self._tune_moved = True
        return stats

    def _finish(self, point, stats, warm):
        new_point = dict(point)
        for shift in self.level_shifts:
            k = shift.ratio(new_point, self.sampler.n)
            if k is None:
                continue
            mu0, sd0 = (float(x) for x in shift.prior(new_point))
            c = float(new_point[shift.name])
            s = self.sampler.level_shift(self.rng, c, mu0, sd0, k)
            new_point[shift.name] = np.asarray(c + s, dtype=point[shift.name].dtype)
        if self._scale_name is not None:
            new_point[self._scale_name] = self._draw_leaf_scale(new_point)
            self.sampler.leaf_sd = self._leaf_sd_at(new_point)
        elif self._internal_sd0 is not None and not self._prior_only:
            # (a term drawn from its prior drew the scale from its prior with the trees)
            self.sampler.leaf_sd = learned_scale_draw(self.rng, self._internal_sd0,
                                                      *self.sampler.leaf_stats())
        if self._dart and not self._prior_only:
            self.sampler.dart_update(self.rng)
        if self._split_name is not None:
            new_point[self._split_name] = self._draw_split_prior(new_point)
        if self._conc_name is not None:
            new_point[self._conc_name] = self._draw_concentration(new_point)
        mean_depth, mean_leaves = self.sampler.summary()
        stats.update(mean_depth=mean_depth, mean_leaves=mean_leaves, tune=self.tune,
                     warm_start=warm, trees_held=False)
        stats[self.leaf_sd_stat] = self.sampler.leaf_sd
        stats.update(self._dart_stats())
        stats[self.forest_stat] = self.sampler.pack(self._coin_rng())
        name = self.vars[0].name
        new_point[name] = self.sampler.values().astype(point[name].dtype, copy=False)
        return new_point, [stats]

    def _dart_stats(self) -> dict:
        """The stat ``<name>_dart`` of DART inside the tree step (none without): the split
        probabilities and Linero's alpha, made ``<name>_split_probs`` and
        ``<name>_split_alpha`` in ``sample_stats`` by :mod:`pymc_trees.bart.trace_io`."""
        if not self._dart:
            return {}
        probs, alpha = self.sampler.dart_probs, self.sampler.dart_alpha
        if self._shared:  # one forest: its probabilities are every output's
            k = self.sampler.outputs
            probs, alpha = np.tile(probs, (k, 1)), np.full(k, alpha)
        return {f"{self.var_name}{DART_SUFFIX}": DartDraw(probs, alpha)}

    def _leaf_sd_at(self, point) -> float:
        sd = float(self._leaf_sd_fn(point))
        if not (np.isfinite(sd) and sd > 0):
            raise ValueError(f"The leaf scale of {self.var_name!r} evaluated to {sd!r}; it must "
                             "be positive and finite (for example pt.sqrt of a positive "
                             "variance, or a HalfNormal sd).")
        return sd

    def _draw_leaf_scale(self, point) -> np.ndarray:
        """Slice-sampling update (Neal 2003, stepping out with width 1 and at most 32 steps,
        then shrinkage) of the leaf-scale variable on its transformed scale, from its full
        conditional: its prior (with the Jacobian) times ``prod_leaves N(mu | 0, sd^2)``,
        which depends on the leaves through their number L and sum of squares S only."""
        name = self._scale_name
        L, S = self.sampler.leaf_stats()
        dtype = point[name].dtype
        trial = dict(point)

        def logf(x):
            trial[name] = np.asarray(x, dtype=dtype)
            sd = float(self._leaf_sd_fn(trial))
            if not (np.isfinite(sd) and sd > 0):
                return -np.inf
            lp = float(self._scale_logp(trial))
            return lp - L * np.log(sd) - 0.5 * S / (sd * sd) if np.isfinite(lp) else -np.inf

        x0 = float(np.asarray(point[name]))
        return np.asarray(_slice(self.rng, x0, logf, 1.0, 32), dtype=dtype)

    def _log_split(self, point) -> np.ndarray:
        """``log s``, the log split probabilities at the point, shape (p,)."""
        y = np.asarray(point[self._split_name], dtype=np.float64)
        if self._split_simplex:
            z = np.append(y, -y.sum())
            return z - logsumexp(z)
        s = np.asarray(self._split_fn(point), dtype=np.float64)
        return np.log(np.maximum(s / s.sum(), np.finfo(np.float64).tiny))

    def _split_value(self, log_s: np.ndarray, dtype) -> np.ndarray:
        """The split probabilities' value (transformed when the variable is) from ``log s``."""
        if self._split_simplex:
            value = log_s[:-1] - log_s.mean()
        else:
            s = np.exp(log_s - log_s.max())
            s /= s.sum()
            value = s if self._split_forward is None else self._split_forward(s)
        return np.asarray(value, dtype=dtype)

    def _draw_split_prior(self, point) -> np.ndarray:
        """Exact update of the split probabilities s (DART) given the forest: the Gibbs step
        of :func:`pymc_trees.bart.kernels.forest.split_prior_gibbs` on the log scale, with the
        Dirichlet's concentration evaluated at the point.  The sampler gets the weights
        ``s / max(s)`` (those below the smallest normal float raised to it); returns the
        (transformed) value."""
        f = self.sampler.forest
        a = np.asarray(self._split_conc(point), dtype=np.float64)
        lay = self.sampler.layout
        log_s = split_prior_gibbs(self.rng, f.var, f.n_nodes, f.amask, a,
                                  self._log_split(point), lay.fmap, lay.share)
        self.sampler.set_split_weights(np.exp(log_s - log_s.max()))
        return self._split_value(log_s, point[self._split_name].dtype)

    def _draw_concentration(self, point) -> np.ndarray:
        """Slice-sampling update (as for the leaf scale) of the DART concentration variable on
        its transformed scale, from its full conditional: its prior (with the Jacobian) times
        the Dirichlet density of the current split probabilities, computed from ``log s`` so
        that probabilities below the smallest float keep their density."""
        name = self._conc_name
        log_s = self._log_split(point)
        dtype = point[name].dtype
        trial = dict(point)

        def logf(x):
            x = np.asarray(x, dtype=dtype)
            lp = float(self._conc_logp(x))
            if not np.isfinite(lp):
                return -np.inf
            trial[name] = x
            a = np.asarray(self._split_conc(trial), dtype=np.float64)
            if not np.all(np.isfinite(a) & (a > 0)):
                return -np.inf
            lp += gammaln(a.sum()) - gammaln(a).sum() + float(np.dot(a - 1.0, log_s))
            return lp if np.isfinite(lp) else -np.inf

        x0 = float(np.asarray(point[name]))
        return np.asarray(_slice(self.rng, x0, logf, 1.0, 32), dtype=dtype)

    @classmethod
    def competence(cls, var, has_grad):
        op = getattr(var.owner, "op", None)
        if not isinstance(op, BARTTreeRV):
            # a learned hyperparameter goes with the step of the tree term that owns it
            model = Model.get_context(error_if_none=False)
            trees = [] if model is None or var not in model.free_RVs else \
                _trees_owning(model, var)
            if trees and trees[0].owner.op.sampler == cls.sampler_kind:
                return Competence.IDEAL
            return Competence.INCOMPATIBLE
        frame = pymc_frame(pm.sampling.mcmc.sample)
        if frame is not None and frame.f_locals.get("nuts_sampler") not in (None, "pymc"):
            raise ValueError(f"pm.sample(nuts_sampler={frame.f_locals['nuts_sampler']!r}) "
                             f"cannot sample the tree term {var.name!r}. {EXTERNAL_NUTS}")
        return Competence.IDEAL if op.sampler == cls.sampler_kind else Competence.COMPATIBLE


class CGMTreeStep(_TreeStep):
    """Chipman-George-McCulloch Metropolis tree moves for a ``BARTTree`` variable.

    Every iteration runs Bayesian backfitting over all m trees: for each tree, one move (grow,
    prune, change or swap, drawn with ``move_probs``) accepted with the exact Metropolis ratio
    with leaf values integrated out, then the exact draw of the tree's leaf values.

    Parameters
    ----------
    vars : list with one BARTTree variable
    move_probs : dict, optional
        Probabilities of ``"grow"``, ``"prune"``, ``"change"``, ``"swap"``.  By default
        (:func:`default_move_probs`) .25, .25, .40, .10 for a term of at most 50,000 training
        rows, and ``{"grow": .5, "prune": .5}`` (the GrowPrune sampler) above: measured on
        the default model at 30,000 and 100,000 rows, the change and swap moves cost a
        fifth or more of the time per iteration there and gave no more effective draws per
        second (``docs/mixing.md``, "The default moves at scale").  Pass the four
        probabilities to keep CGM's moves at any size.
    warm_start : int, default 10
        The first ``min(warm_start, tune // 2)`` tuning iterations of each chain run a
        grow-from-root sweep (:mod:`pymc_trees.bart.kernels.gfr`) instead of the exact update, to
        start the exact sampler near the posterior; 0 turns it off.  Tuning draws only:
        every kept draw comes from the exact update.  In ``pm.sample``:
        ``pm.sample(..., cgm_tree={"warm_start": 0})``.
    burn_in : int or None, default 200
        The trees' burn-in, in a model where every free variable has an exact step (tree
        terms, their hyperparameters, a conjugate noise variance): the first ``burn_in``
        tuning iterations of each chain update the trees (the warm-start sweeps among them);
        in the tuning iterations after them the trees, their leaf scale, split probabilities
        and level shifts are held while the noise step goes on.  With a NUTS variable in the
        model the trees update in every tuning iteration (NUTS adapted around held trees
        mixes worse).  Every kept draw updates the trees.  ``None`` updates the trees in
        every tuning iteration.  In ``pm.sample``:
        ``pm.sample(..., cgm_tree={"burn_in": None})``.  Chosen by
        ``benchmarks/friedman_coverage.py`` and ``benchmarks/suite.py`` (``docs/suite.md``,
        "Tuning length").
    model : pm.Model, optional

    Notes
    -----
    Sampler stats per draw: ``accept_<move>`` (fraction of the proposed moves of that type
    that were accepted; NaN when none was proposed, in a warm-start or held iteration, and
    for a term that no density depends on, which is drawn afresh from its prior every
    iteration: ``docs/design.md``, "A term nothing observes"),
    ``warm_start`` (True in the grow-from-root iterations), ``trees_held`` (True in the
    tuning iterations after the burn-in), ``<name>_leaf_sd``, ``mean_depth`` and
    ``mean_leaves`` of the forest, and ``<name>_forest``, the forest of the draw (a
    :class:`~pymc_trees.PackedForest`).
    """

    name = "cgm_tree"
    sampler_kind = "cgm"
    stats_dtypes_shapes = {
        **{f"accept_{mv}": (np.float64, []) for mv in (*MOVES, "leaf")},
        **_TreeStep.stats_dtypes_shapes,
    }

    def __init__(self, vars, move_probs: dict[str, float] | None = None, model: Model | None = None,
                 rng=None, initial_point=None, compile_kwargs=None, blocked: bool = True,
                 warm_start: int = 10, burn_in: int | None = DEFAULT_BURN_IN):
        if move_probs is not None:
            move_cumulative_probs(move_probs)  # refused before the model is read
        super().__init__(vars, model=model, rng=rng, warm_start=warm_start, burn_in=burn_in)
        self.move_probs = (default_move_probs(self.sampler.n) if move_probs is None
                           else dict(move_probs))
        self._move_cp = move_cumulative_probs(self.move_probs)

    def _sweep(self, z, omega, smp):
        stats = smp.cgm_sweep(self.rng, z, omega, self._move_cp)
        stats["accept_leaf"] = np.nan  # leaves are drawn exactly
        return stats

    def _warm_stats(self):
        return {f"accept_{mv}": np.nan for mv in (*MOVES, "leaf")}


class PGTreeStep(_TreeStep):
    """Particle Gibbs tree updates (conditional SMC) for a ``BARTTree`` variable.

    For each of the m trees in turn: conditional SMC against the partial residual with
    ``num_particles`` particles, particle 1 clamped to the old tree (Lakshminarayanan, Roy and
    Teh 2015, Algorithm 4.2), then the exact draw of the tree's leaf values.  Same prior, same
    available-cutpoint rule and same likelihood structure as :class:`CGMTreeStep`.

    Parameters
    ----------
    vars : list with one BARTTree variable
    num_particles : int, default 10
    warm_start : int, default 10
        The first ``min(warm_start, tune // 2)`` tuning iterations of each chain run a
        grow-from-root sweep (:mod:`pymc_trees.bart.kernels.gfr`) instead of the exact update, to
        start the exact sampler near the posterior; 0 turns it off.  Tuning draws only:
        every kept draw comes from the exact update.  In ``pm.sample``:
        ``pm.sample(..., pg_tree={"warm_start": 0})``.
    burn_in : int or None, default 200
        The trees' burn-in, as for :class:`CGMTreeStep`.  In ``pm.sample``:
        ``pm.sample(..., pg_tree={"burn_in": None})``.
    model : pm.Model, optional

    Notes
    -----
    Sampler stats per draw: ``tree_changed`` (fraction of trees whose returned tree differs from
    the old one; NaN in a warm-start or held iteration, and for a term that no density depends
    on, which is drawn afresh from its prior), ``warm_start``, ``trees_held``,
    ``<name>_leaf_sd``, ``mean_depth``,
    ``mean_leaves`` and ``<name>_forest``.
    """

    name = "pg_tree"
    sampler_kind = "pg"
    stats_dtypes_shapes = {"tree_changed": (np.float64, []), **_TreeStep.stats_dtypes_shapes}

    def __init__(self, vars, num_particles: int = 10, model: Model | None = None, rng=None,
                 initial_point=None, compile_kwargs=None, blocked: bool = True,
                 warm_start: int = 10, burn_in: int | None = DEFAULT_BURN_IN):
        if int(num_particles) != num_particles or num_particles < 1:
            raise ValueError(f"num_particles must be a positive integer; got {num_particles!r}.")
        self.num_particles = int(num_particles)
        super().__init__(vars, model=model, rng=rng, warm_start=warm_start, burn_in=burn_in)

    def _sweep(self, z, omega, smp):
        return smp.pg_sweep(self.rng, z, omega, self.num_particles)

    def _warm_stats(self):
        return {"tree_changed": np.nan}


@dataclass_state
class NoiseGibbsState(StepMethodState):
    pass


class NoiseGibbs(BlockedStep):
    """Conjugate Gibbs update of a Normal likelihood's variance or precision (bart-math 4).

    ``sigma2 ~ InverseGamma(alpha0, beta0)`` with likelihoods ``Normal(mu_i, sqrt(sigma2 / w_i))``
    is drawn from ``InverseGamma(alpha0 + n/2, beta0 + SSE_w/2)``; ``tau ~ Gamma(alpha0, beta0)``
    used as a precision from ``Gamma(alpha0 + n/2, rate=beta0 + SSE_w/2)``.  Works in any model
    with that structure, with or without trees.
    """

    name = "noise_gibbs"
    default_blocked = True
    _state_class = NoiseGibbsState
    stats_dtypes_shapes = {"tune": (bool, [])}

    def __reduce_ex__(self, protocol):
        return _reduce_step(self)

    def __init__(self, vars, model: Model | None = None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked: bool = True):
        model = modelcontext(model)
        value_vars = get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError(f"NoiseGibbs takes one variable; got {len(value_vars)}.")
        self.vars = value_vars
        rv = model.values_to_rvs[value_vars[0]]
        self.lik = noise_likelihood(model, rv)
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            self._forward = lambda x: x
        elif isinstance(transform, LogTransform):
            self._forward = np.log
        else:
            raise ValueError(f"NoiseGibbs needs {rv.name!r} with the default log transform or "
                             f"none; got {transform}. Pass default_transform=None or leave it.")
        self.rng = get_random_generator(rng)
        self.tune = True

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.tune = tune > 0

    def step(self, point):
        alpha0, rate0 = (float(x) for x in self.lik.prior(point))
        res = self.lik.residuals(point)
        n = 0
        sse = 0.0  # sum of e_i^2 / s_i^2 at the current value
        for e, s2 in zip(res[::2], res[1::2]):
            e = np.asarray(e, dtype=float)
            s2 = np.broadcast_to(np.asarray(s2, dtype=float), e.shape)
            n += e.size
            sse += float(np.sum(e * e / s2))
        name = self.vars[0].name
        current = _current_value(point[name], self._forward)
        # SSE_w = sum w_i e_i^2 with w_i = sigma2 / s_i^2 (variance) or 1 / (tau s_i^2).
        sse_w = sse * current if self.lik.kind == "variance" else sse / current
        shape = alpha0 + 0.5 * n
        rate = rate0 + 0.5 * sse_w
        g = self.rng.gamma(shape, 1.0 / rate)
        new = 1.0 / g if self.lik.kind == "variance" else g
        new_point = dict(point)
        new_point[name] = np.asarray(self._forward(new), dtype=point[name].dtype)
        return new_point, [{"tune": self.tune}]

    @staticmethod
    def competence(var, has_grad):
        op = getattr(var.owner, "op", None)
        if not isinstance(op, (pm.distributions.continuous.InverseGamma.rv_type,
                               pm.distributions.continuous.Gamma.rv_type)):
            return Competence.INCOMPATIBLE
        model = Model.get_context(error_if_none=False)
        if model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        try:
            noise_likelihood(model, var)
        except ModelStructureError:
            return Competence.INCOMPATIBLE
        return Competence.IDEAL


def _check_link(rv, lik) -> None:
    """A term calibrated for one link must not enter a likelihood with another."""
    link = rv.owner.op.link
    if link is not None and link != lik.link:
        raise ModelStructureError(
            f"{rv.name!r} was calibrated for the {link!r} link (BARTTree(..., link={link!r})"
            f"{', the default with Y' if link == 'identity' else ''}), but it enters "
            f"{lik.observed_name!r}, a {lik.family.replace('_', ' ')} likelihood with the "
            f"{lik.link!r} link, so its offset and leaf scale are on the wrong scale. Pass "
            f"link={lik.link!r} to BARTTree, with Y on the data scale (the observed "
            f"{lik.observed_name!r} itself, not transformed: the link transforms it), or an "
            "explicit leaf_sd.")


def _check_general_start(rv, liks, point: dict) -> None:
    """Every tree starts as a single leaf, so the term starts at its offset at every row (and
    output); the general step needs a start of positive density (its moves compare
    densities).  A start outside the likelihood's support is refused with the rows and the
    fix."""
    lik = liks[0]  # for several outputs: the whole term is at its starting value in the point
    f0 = np.asarray(point[lik.f_name], dtype=np.float64)
    ll = lik.evaluate(point, f0 if lik.output is None else f0[lik.output])[0]
    bad = np.flatnonzero(~np.isfinite(ll))
    if not bad.size:
        return
    name = rv.name
    rows = bad[:10].tolist()
    raise ValueError(
        f"{lik.observed_name!r} has zero density at the starting point of {name!r} at "
        f"{bad.size} of {ll.size} rows ({rows}{' ...' if bad.size > 10 else ''}): every tree "
        f"starts as a single leaf, so {name} = {float(f0.flat[0]):.6g} (the term's offset) at "
        "every row, with the other variables at their initial values. The offset is 0 "
        "without Y and is calibrated from Y (on the data scale) for the term's link. Write the "
        "likelihood so that it is valid there (a scale as pm.math.exp(...) of the term rather "
        "than the term itself or its pm.math.abs), or pass a Y whose calibration puts the "
        "offset inside the support.")


def _warn_output_scales(rv, liks, start, offset: float) -> None:
    """A term of shape (k, n) has one offset and one leaf scale for all its outputs.  Where
    the outputs enter Normal likelihoods as locations (``mu = a + b * f[j]``), their data on
    the term's scale, ``(y - a) / b``, show whether one scale can serve them: a warning names
    outputs whose data vary ``OUTPUT_SCALE_RATIO`` times as much as another's (the output
    far from the calibration is not fitted, with nothing else to say so)."""
    normal = [(j, lik) for j, lik in enumerate(liks)
              if lik.family != "general" and not lik.draws_latents]
    if len(normal) < 2:
        return
    point = start()
    spread = {}
    for j, lik in normal:
        try:
            z, omega = lik.pseudo_data(point, offset)
        except Exception:  # a piece that needs more than the point: no check
            return
        z = np.asarray(z, dtype=np.float64)[np.asarray(omega) > 0]
        if z.size > 1:
            spread[j] = float(np.std(z))
    if len(spread) < 2 or min(spread.values()) <= 0:
        return
    lo = min(spread, key=spread.get)
    hi = max(spread, key=spread.get)
    if spread[hi] <= OUTPUT_SCALE_RATIO * spread[lo]:
        return
    desc = ", ".join(f"output {j}: {v:.4g}" for j, v in sorted(spread.items()))
    warn_user(
        f"The outputs of {rv.name!r} are on different scales (sd of each output's data on the "
        f"term's scale, (y - a) / b: {desc}; outputs {lo} and {hi} differ "
        f"{spread[hi] / spread[lo]:.3g} times): its outputs share one offset and one leaf "
        "scale, so an output far from that calibration is not fitted (its leaves are shrunk "
        "to the wrong scale). Put each output's scale in the model, e.g. "
        "mu_j = c_j + s_j * f[j] with c_j, s_j the mean and sd of y_j, with "
        "Y[j] = (y_j - c_j) / s_j as the (k, n) calibration Y; or use one BARTTree term per "
        "output.")


def _stuck_message(name: str, sweeps: int, liks) -> str:
    """The warning of a general tree step that accepted nothing during tuning."""
    lik = liks[0]
    cause = ""
    if lik.link == "identity":
        cause = (f" A likely cause: {name!r} enters the parameter {lik.parameter!r} of "
                 f"{lik.observed_name!r} directly (the identity link), and proposals leave "
                 "that parameter's support (a rate, a scale or a probability must stay "
                 "positive or in (0, 1)). Write the parameter as pm.math.exp(f) with "
                 "BARTTree(..., link='log') (pm.math.sigmoid(f) with link='logit' for a "
                 "probability).")
    return (f"The tree step of {name!r} rejected every proposal in all {sweeps} tuning "
            f"sweeps: the chain has not moved from its start, and its draws are not from the "
            f"posterior.{cause} Otherwise check the term's offset and leaf_sd against the "
            "scale of the parameter it enters, and look at the accept_* sample stats.")


def _nanmean(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.mean(x[~np.isnan(x)])) if np.any(~np.isnan(x)) else np.nan


def _check_general_link(rv, lik) -> None:
    """The general step's counterpart of ``_check_link``: a term calibrated for one link must
    not enter its parameter through another (checked when the form is recognised)."""
    link = rv.owner.op.link
    if link is None or lik.link is None or link == lik.link:
        return
    through = {"identity": "directly (affine)", "log": "through exp(...)",
               "logit": "through sigmoid(...)"}[lik.link]
    raise ModelStructureError(
        f"{rv.name!r} was calibrated for the {link!r} link (BARTTree(..., link={link!r})"
        f"{', the default with Y' if link == 'identity' else ''}), but it enters the "
        f"parameter {lik.parameter!r} of {lik.observed_name!r} {through}, so its offset and leaf scale are "
        f"on the wrong scale. Pass link={lik.link!r} when Y calibrates the term for that "
        f"parameter (Y stays on the data scale, the observed values themselves, not "
        f"transformed: the link transforms it), or, for a term in a scale or shape parameter "
        f"(which Y does not describe), "
        f"drop Y and give leaf_sd (the prior sd of each tree's contribution to eta).")


def _only_exact_steps(model) -> bool:
    """Whether ``pm.sample``'s own assignment gives every free variable of the model an exact
    step of this package that adapts nothing: a tree term, a hyperparameter sampled with its
    trees, a conjugate noise variance (:class:`NoiseGibbs`).  Any other variable goes to
    NUTS (or another adaptive step), and then the trees' burn-in does not hold the trees:
    NUTS adapted around held trees mixes worse once they move (docs/design.md, "Warm start")."""
    with model:
        for rv in model.free_RVs:
            if isinstance(getattr(rv.owner, "op", None), BARTTreeRV) or _trees_owning(model, rv):
                continue
            if NoiseGibbs.competence(rv, False) == Competence.IDEAL:
                continue
            return False
    return True


class _AtValue:
    """A compiled function of one value variable, called with a point (picklable, for
    multiprocess sampling)."""

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def __call__(self, point):
        return self.fn(point[self.name])


def _slice(rng, x0: float, logf, w: float, max_steps: int) -> float:
    """One univariate slice-sampling transition from x0 (Neal 2003, figures 3 and 5: stepping
    out with at most ``max_steps`` widths ``w``, then shrinkage); leaves the density
    proportional to ``exp(logf)`` invariant."""
    logy = logf(x0) - rng.standard_exponential()
    lo = x0 - w * rng.uniform()
    hi = lo + w
    j = int(np.floor(max_steps * rng.uniform()))
    k = max_steps - 1 - j
    while j > 0 and logf(lo) > logy:
        lo -= w
        j -= 1
    while k > 0 and logf(hi) > logy:
        hi += w
        k -= 1
    while True:
        x1 = lo + (hi - lo) * rng.uniform()
        if logf(x1) > logy:
            return x1
        if x1 < x0:
            lo = x1
        else:
            hi = x1


def _current_value(stored, forward):
    """Untransformed value from the point (inverse of ``forward`` for log or identity)."""
    x = float(np.asarray(stored))
    return float(np.exp(x)) if forward is np.log else x


def register_steps() -> None:
    """Append the steps to PyMC's registry once."""
    registry = pm.step_methods.STEP_METHODS
    for cls in (CGMTreeStep, PGTreeStep, NoiseGibbs):
        if cls not in registry:
            registry.append(cls)
