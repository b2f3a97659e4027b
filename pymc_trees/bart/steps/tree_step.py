"""PyMC step methods: CGM tree moves and Particle Gibbs for ``BARTTree`` terms, and the
conjugate noise update.

All are registered in ``pymc.step_methods.STEP_METHODS`` when :mod:`pymc_trees` is imported,
so ``pm.sample()`` assigns them by itself.  All draw only from the generator PyMC hands them
(``setup_chain``), so a ``random_seed`` reproduces a run exactly, with any number of cores.
"""

from __future__ import annotations

import warnings
from contextlib import ExitStack

import numpy as np
from pymc.model import Model, modelcontext
from pymc.step_methods.compound import BlockedStep, CompoundStep, Competence
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_trees.bart.term.pymc_compat import (EXTERNAL_NUTS, external_nuts_sampler, reduce_step,
                                              register_step_methods)
from pymc_trees.bart.term.distribution import BARTTreeRV, keeps_values, term_inputs
from pymc_trees.bart.term.term_data import categorical_columns
from pymc_trees.core.tabular import mark_missing
from pymc_trees.bart.steps.leaf_scale import leaf_scale_rvs, make_leaf_scale
from pymc_trees.bart.likelihood.likelihood_checks import stuck_message
from pymc_trees.bart.likelihood.protocol import SweepContext, members
from pymc_trees.bart.steps.likelihood_reader import read_term_likelihoods
from pymc_trees.bart.steps.noise_step import NoiseGibbs
from pymc_trees.bart.term.plan import (  # noqa: F401
    DEFAULT_MOVES, DEFAULT_MOVES_LARGE, LARGE_DATA_ROWS, default_move_probs, step_count, term_plan,
    warm_sweeps)
from pymc_trees.bart.samplers.general_loop import nanmean
from pymc_trees.bart.samplers.tree_prior import MOVES, move_cumulative_probs
from pymc_trees.bart.steps.split_prior import (make_split_prior, split_concentration_rvs,
                                               split_prior_rvs)
from pymc_trees.bart.steps.step_state import DEFAULT_BURN_IN, TreeStepState, forest_stat_name
from pymc_trees.bart.steps.threads import check_threads, use_threads
from pymc_trees.bart.steps.step_vars import (group_tree_vars, only_exact_steps, select_tree_vars,
                                             trees_owning)
from pymc_trees.bart.likelihood.structure import TreeLikelihood

__all__ = ["CGMTreeStep", "PGTreeStep", "NoiseGibbs", "default_move_probs", "forest_stat_name",
           "leaf_scale_rvs", "split_prior_rvs", "split_concentration_rvs"]

class _TreeStep(BlockedStep):
    """Shared machinery of the tree steps: the forest sampler, the likelihood pieces read from
    the model, the level shifts, the per-draw stats and the forest stored with every draw.

    ``default_blocked = False``: given several tree terms, PyMC builds one step per term."""

    default_blocked = False
    _state_class = TreeStepState
    sampler_kind = ""
    _move_probs_given = False  # a user's move_probs keep the default's leaves constant
    # the general step's sweep in the compiled kernel (False) or in the Python loop that
    # calls the likelihood through PyTensor (True; the same moves and random numbers, kept as
    # the reference the kernel is tested against and for likelihoods the kernel cannot run)
    python_sweep = False
    stats_dtypes_shapes = {"mean_depth": (np.float64, []), "mean_leaves": (np.float64, []),
                           **{k: (bool, []) for k in ("warm_start", "trees_held", "tune")}}

    def __new__(cls, vars=None, *args, **kwargs):
        # one step per tree term, holding the term and its learned leaf scale (if any)
        model = modelcontext(kwargs.get("model"))
        kwargs["model"] = model
        vars = model.value_vars if vars is None else vars
        vars = list(vars) if isinstance(vars, (list, tuple)) else [vars]
        groups = group_tree_vars(model, get_value_vars_from_user_vars(vars, model))
        if len(groups) <= 1:
            kwargs["blocked"] = True
            return super().__new__(cls, vars, *args, **kwargs)
        rngs = get_random_generator(kwargs.pop("rng", None)).spawn(len(groups))
        return CompoundStep([cls(g, *args, **{**kwargs, "rng": r})
                             for g, r in zip(groups, rngs)])

    def __reduce_ex__(self, protocol):
        return reduce_step(self)

    def __init__(self, vars, model: Model | None = None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked: bool = True, warm_start: int | None = None,
                 burn_in: int | None = DEFAULT_BURN_IN, sweeps: int = 1,
                 threads: int | None = None):
        self.threads = check_threads(threads)
        self.sweeps = step_count(sweeps, "sweeps", 1, "a positive integer number of tree "
                                 "sweeps per iteration")
        self.warm_start = step_count(warm_start, "warm_start", 0, "None or a non-negative "
                                     "integer number of tuning iterations", optional=True)
        self.burn_in = step_count(burn_in, "burn_in", 1, "a positive integer number of tuning "
                                  "iterations or None (every tuning iteration updates the "
                                  "trees)", optional=True)
        self.warm_left, self.burn_left, self.held, self.steps_left = 0, None, None, None
        self.tune_sweeps, self.tune_moved = 0, False
        model = modelcontext(model)
        # the starting point, computed only when a part below needs it
        start = (lambda: initial_point) if initial_point is not None else model.initial_point
        rv, scale, split, conc, self.vars = select_tree_vars(model, vars,
                                                             type(self).__name__)
        self.var_name = rv.name
        X, offset = term_inputs(rv)[:2]
        # PyMC's own array, not a copy (80 bytes a row at p = 10): nothing here writes to it,
        # and pm.set_data replaces the shared value rather than writing into it
        X_value = mark_missing(X.get_value(borrow=True) if hasattr(X, "get_value") else X.eval(),
                               getattr(rv.owner.op, "missing", None))
        # the leaf scale (fixed, learned, or a model variable; pymc_trees.bart.steps.leaf_scale) and
        # the split prior (uniform, DART, or a Dirichlet variable; pymc_trees.bart.steps.split_prior)
        self.leaf_scale = make_leaf_scale(model, rv, scale, start)
        # the term's plan (pymc_trees.bart.term.plan), settled by its likelihood, then its sampler
        self._plan = term_plan(rv.owner.op, rv.name, self.sampler_kind)
        self._plan.check_step()
        self._shared = self._plan.shared
        offset = float(offset.eval())
        self._read_likelihood(model, rv, start, X_value.shape[0], offset)
        self._make_sampler(rv, X_value, offset, self.leaf_scale.sd0)
        # a term whose values stay out of the trace (by default above 50,000 rows) takes
        # them from the sweep's residual, equal to the trees' sum up to rounding; a traced
        # term sums the trees, so that pmt.predict reproduces the trace to the last bit
        exact = keeps_values(rv)
        for smp in getattr(self.sampler, "parts", None) or [self.sampler]:
            smp.exact_values = exact
        self.split_prior = make_split_prior(model, rv, split, conc, self.sampler, self._shared)
        if split:
            self.split_prior.load(self.sampler, start())
        self.forest_stat = forest_stat_name(self.var_name)
        sds = {**type(self).stats_dtypes_shapes, **self.leaf_scale.stats_dtypes_shapes,
               self.forest_stat: (object, []), **self.split_prior.stats_dtypes_shapes}
        self.stats_dtypes_shapes = sds
        self.stats_dtypes = [{k: dt for k, (dt, _) in sds.items()}]
        self.rng = get_random_generator(rng)
        self.tune = True
        # the burn-in holds the trees only where no other step adapts during tuning
        self._hold_ok = self.burn_in is not None and only_exact_steps(model)
        # a chain starts from reset() or a saved state, which allocate the rows' arrays
        # again: this copy (the one PyMC pickles to its worker processes) needs none
        self.sampler.release_rows()

    def _make_sampler(self, rv, X_value, offset: float, sd0: float) -> None:
        """The orchestration of the kernels, as the term's plan (:mod:`pymc_trees.bart.term.plan`)
        picks it for this step: one ForestSampler, one per output, or one whose leaves hold
        the k outputs' values."""
        self.sampler = self._plan.make_sampler(X_value, self._prior, offset, sd0,
                                               categorical_columns(rv.owner.op))

    def _read_likelihood(self, model, rv, start, n: int, offset: float) -> None:
        """The likelihoods around the term, its level shifts and its plan settled by them
        (:func:`~pymc_trees.bart.steps.likelihood_reader.read_term_likelihoods`)."""
        got = read_term_likelihoods(model, rv, start, n, offset, self._plan, self._shared,
                                    self._move_probs_given)
        self.likelihood = got.likelihood
        self._prior_only, self.level_shifts = got.prior_only, got.level_shifts
        self._plan, self._prior = got.plan, got.prior

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

    @property
    def leaf_sd(self) -> float:
        """The step state's leaf sd: the sampler's (:mod:`pymc_trees.bart.steps.leaf_scale`)."""
        return self.sampler.leaf_sd

    @leaf_sd.setter
    def leaf_sd(self, value):
        if value is not None:
            self.sampler.leaf_sd = float(value)

    @property
    def leaf_prior(self) -> str:
        """The leaves' prior the step samples (``"auto"`` settled by the likelihood); for a
        term of shape (k, n) that settled output by output, a tuple of each output's."""
        return tuple(lp for lp, _ in self._plan.output_leaves) or self._plan.leaf_prior

    @property
    def split_state(self):
        """The step state's split probabilities held by the sampler (DART's; None for the
        other split priors, :mod:`pymc_trees.bart.steps.split_prior`)."""
        return self.split_prior.state(self.sampler)

    @split_state.setter
    def split_state(self, value):
        self.split_prior.restore(self.sampler, value)

    def _coin_rng(self) -> np.random.Generator:
        """The generator of the stored forests' coins (routings the training rows leave open,
        :meth:`pymc_trees.ForestSampler.pack`): spawned once from the step's generator, which
        spawning does not advance, so the coins leave the sampler's own draws as they were
        and a seed still reproduces both."""
        if getattr(self, "_coins_of", None) is not self.rng:
            self._coins = self.rng.spawn(1)[0]
            self._coins_of = self.rng
        return self._coins

    @property
    def coins(self) -> np.random.Generator | None:
        """The step state's coin generator (:meth:`_coin_rng`), None while none was spawned
        from the current generator."""
        return self._coins if getattr(self, "_coins_of", None) is self.rng else None

    @coins.setter
    def coins(self, value):
        # PyMC sets the state's generator (rng) before this field: the coins are its own
        self._coins, self._coins_of = (value, self.rng) if value is not None else (None, None)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.sampler.reset()  # the forest and a learned leaf scale back to their start
        if self.likelihood is not None:  # None: a term drawn from its prior
            self.likelihood.reset()
        for shift in self.level_shifts:
            shift.reset()
        self.tune = tune > 0
        # grow-from-root sweeps open the tuning phase; at least half of it stays exact (a
        # warm start grows one value per leaf: none for outputs that share their trees, nor
        # for a term drawn from its prior, which needs no start)
        cold = not self._plan.warm_start or self._prior_only
        self.warm_left = 0 if cold else warm_sweeps(self.warm_start, tune, draws, self.sampler)
        # the trees' burn-in: the first burn_in tuning iterations; the rest hold the trees
        self.burn_left = self.burn_in if self._hold_ok else None
        self.held = None
        # the chain's last step lets go of the rows' arrays (release_rows): PyMC then
        # converts the trace and copies X into it, the peak of a run's memory while they lived
        self.steps_left = tune + draws
        # general-step sweeps of the tuning phase, and whether any of their proposals was
        # accepted (stop_tuning warns about a chain that never left its start)
        self.tune_sweeps = 0
        self.tune_moved = False

    def stop_tuning(self) -> None:
        """End of tuning: warn when the general tree step rejected every proposal of every
        sweep of the tuning phase (the chain is still at its start)."""
        super().stop_tuning()
        if self.tune_sweeps and not self.tune_moved:
            warnings.warn(stuck_message(self.var_name, self.tune_sweeps,
                                        members(self.likelihood)),
                          UserWarning, stacklevel=2)

    def step(self, point):
        out = self._step(point)
        left = self.steps_left
        if left is not None:
            self.steps_left = left - 1
            if left == 1:
                self.sampler.release_rows()
        return out

    def _sweep(self, z: np.ndarray, omega: np.ndarray, smp, sweeps: int = 1) -> dict:
        """``sweeps`` exact sweeps of the forest sampler ``smp`` against pseudo-data ``z``
        with row precisions ``omega`` (``_gamma_sweep(smp, s, logt, sweeps)``: of log-gamma
        leaves against rows' shapes and log rates)."""
        raise NotImplementedError

    def _step(self, point):
        use_threads(self.threads)  # this chain's threads, for every kernel call below
        if self.tune and self.burn_left is not None:
            if self.burn_left == 0:
                return self._hold(point)
            self.burn_left -= 1
        self.held = None
        # the learned leaf scale and split probabilities at the point, into the sampler
        self.leaf_scale.load(self.sampler, point)
        self.split_prior.load(self.sampler, point)
        warm = self.tune and self.warm_left > 0
        if warm:
            self.warm_left -= 1
        if self._prior_only:
            stats = self._prior_draw()
        elif warm or self.sweeps == 1:
            stats = self._sweep_trees(point, warm)
        elif self._sweeps_in_kernel():
            stats = self._sweep_trees(point, warm, self.sweeps)
        else:
            # ``sweeps`` exact sweeps, each with its own latent variables; the rest of the
            # point is held (the other steps update it once per iteration)
            with self._pieces_held(point):
                runs = [self._sweep_trees(point, warm) for _ in range(self.sweeps)]
            stats = {k: nanmean([s[k] for s in runs]) for k in runs[0]}
        return self._finish(point, stats, warm)

    def _pieces_held(self, point: dict) -> ExitStack:
        """A block in which the conjugate likelihoods evaluate their pieces at ``point`` once
        (:meth:`~pymc_trees.bart.likelihood.structure.TreeLikelihood.held_at`): one iteration's sweeps."""
        stack = ExitStack()
        for lik in members(self.likelihood):
            if isinstance(lik, TreeLikelihood):
                stack.enter_context(lik.held_at(point))
        return stack

    def _sweeps_in_kernel(self) -> bool:
        """Whether kernel calls run all the iteration's sweeps: CGM's moves against
        pseudo-data that no latent variable changes between sweeps, or the general step's
        moves (the likelihood's inputs other than the term are held), for the one forest or
        for every output of a (k, n) term (each output's sweeps then run together, given
        the others' values: a blocked scan)."""
        return self.likelihood.sweeps_in_kernel(self.sampler_kind, self.python_sweep)

    def _sweep_trees(self, point: dict, warm: bool, sweeps: int = 1) -> dict:
        """One sweep of the trees given the rest of ``point`` (a grow-from-root sweep when
        ``warm``; ``sweeps`` of them in one kernel call where :meth:`_sweeps_in_kernel`):
        the stats of their moves."""
        return self._update(self.sampler, self.likelihood, point, warm, sweeps)

    def _prior_draw(self) -> dict:
        """The update of a term that no density depends on: its full conditional is its
        prior, so the forest is drawn afresh from it (the prior draw of
        ``pm.sample_prior_predictive``, :meth:`ForestSampler.draw_prior`) given the learned
        leaf scale and split probabilities that are model variables, at their current
        values.  A scale learned inside the step (``leaf_sd="learned"``) and DART's split
        probabilities are drawn from their priors first, so those draws are independent
        from iteration to iteration.  No move is tried: the stats of the moves are NaN."""
        self.leaf_scale.prior_draw(self.rng, self.sampler)
        self.sampler.draw_prior(self.rng)
        return self._warm_stats()

    def _hold(self, point):
        """A tuning iteration after the trees' burn-in: the trees, their leaf scale, split
        probabilities and level shifts stay as they are (the point is returned unchanged);
        the rest of the model goes on tuning around them."""
        if self.held is None:
            mean_depth, mean_leaves = self.sampler.summary()
            self.held = {**self._warm_stats(), "mean_depth": mean_depth,
                         "mean_leaves": mean_leaves, "tune": True,
                         **self.leaf_scale.stats(self.sampler), "warm_start": False,
                         "trees_held": True, **self.split_prior.stats(self.sampler),
                         self.forest_stat: self.sampler.pack(self._coin_rng())}
        return point, [dict(self.held)]

    def _update(self, smp, lik, point: dict, warm: bool, sweeps: int = 1) -> dict:
        """The likelihood's update of the forest sampler ``smp`` (one protocol for every
        likelihood, :mod:`pymc_trees.bart.likelihood.protocol`)."""
        ctx = SweepContext(self.rng, self._sweep, self._gamma_sweep, self.sampler,
                           self.leaf_scale.interweave, self._warm_stats,
                           getattr(self, "_move_cp", None), self.python_sweep, self._tuned)
        return lik.update(ctx, smp, point, warm, sweeps)

    def _tuned(self, stats: dict, sweeps: int) -> None:
        """The general step's tuning bookkeeping: its sweeps, and whether any move was
        accepted (a chain whose trees never moved is warned about, ``stuck_message``)."""
        if self.tune:
            self.tune_sweeps += sweeps
            if any(v > 0 for k, v in stats.items() if k.startswith("accept_")):
                self.tune_moved = True

    def _finish(self, point, stats, warm):
        new_point = dict(point)
        for shift in self.level_shifts:
            got = shift.terms(new_point, self.sampler.n)
            if got is None:
                continue
            k, mu0, sd0 = got
            c = float(new_point[shift.name])
            s = self.sampler.level_shift(self.rng, c, mu0, sd0, k)
            new_point[shift.name] = np.asarray(c + s, dtype=point[shift.name].dtype)
            new_point.update(shift.shift_effects(self.rng, new_point, mu0, sd0))
        # the leaf scale, then the split prior, from their conditionals given the forest
        for part in (self.leaf_scale, self.split_prior):
            new_point.update(part.update(self.rng, self.sampler, new_point, self._prior_only))
        mean_depth, mean_leaves = self.sampler.summary()
        stats.update(mean_depth=mean_depth, mean_leaves=mean_leaves, tune=self.tune,
                     warm_start=warm, trees_held=False)
        stats.update(self.leaf_scale.stats(self.sampler))
        stats.update(self.split_prior.stats(self.sampler))
        stats[self.forest_stat] = self.sampler.pack(self._coin_rng())
        name = self.vars[0].name
        new_point[name] = self.sampler.values().astype(point[name].dtype, copy=False)
        return new_point, [stats]

    @classmethod
    def competence(cls, var, has_grad):
        op = getattr(var.owner, "op", None)
        if not isinstance(op, BARTTreeRV):
            # a learned hyperparameter goes with the step of the tree term that owns it
            model = Model.get_context(error_if_none=False)
            trees = [] if model is None or var not in model.free_RVs else \
                trees_owning(model, var)
            if trees and trees[0].owner.op.sampler == cls.sampler_kind:
                return Competence.IDEAL
            return Competence.INCOMPATIBLE
        nuts = external_nuts_sampler()
        if nuts is not None:
            raise ValueError(f"pm.sample(nuts_sampler={nuts!r}) cannot sample the tree term "
                             f"{var.name!r}. {EXTERNAL_NUTS}")
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
        second (``docs/benchmarks/mixing.md``, "The default moves at scale").  Pass the four
        probabilities to keep CGM's moves at any size.
    warm_start : int or None, default None
        The first ``min(warm_start, tune // 2)`` tuning iterations of each chain run a
        grow-from-root sweep (:mod:`pymc_trees.bart.kernels.gfr`) instead of the exact update;
        0 turns it off; None: up to 10, as many as cost about 5% of the chain (``plan.warm_sweeps``:
        none for short runs at scale).  Tuning draws only; in ``pm.sample``:
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
        ``benchmarks/friedman_coverage.py`` and ``benchmarks/suite.py``
        (``docs/benchmarks/friedman.md``, "Tuning length").
    sweeps : int, default 1
        Exact sweeps of the trees per iteration, each with its own latent variables (probit,
        logit, ...); the trace keeps the forest after the last, and the model's other
        variables are updated once per iteration by their own steps.  ``sweeps=k`` thins the
        trees' chain at the source: 1/k of the forests stored for the same number of sweeps,
        and, on small data, where PyMC's work per iteration and storing a forest cost more
        than a sweep, more effective draws per second (``docs/explanation/samplers.md``,
        "Sweeps per iteration").  The acceptance stats are the means over the k sweeps.  Warm-start
        iterations run one grow-from-root sweep.  In ``pm.sample``:
        ``pm.sample(..., cgm_tree={"sweeps": 5})``.
    threads : int, optional
        Threads of this chain's passes over the rows (a table of more than 65,536 rows;
        docs/explanation/threads.md); the draws are the same for any number.  None (the
        default): every core the process may use when the chains run one after the other
        (``pm.sample(cores=1)`` or one chain), one when they run side by side in worker
        processes.  In ``pm.sample``: ``pm.sample(..., cgm_tree={"threads": 2})``.
    model : pm.Model, optional

    Notes
    -----
    Sampler stats per draw: ``accept_<move>`` (fraction of the proposed moves of that type
    that were accepted; NaN when none was proposed, in a warm-start or held iteration, and
    for a term that no density depends on, which is drawn afresh from its prior every
    iteration: ``docs/explanation/checked-inputs.md``, "A term nothing observes"),
    ``warm_start`` (True in the grow-from-root iterations), ``trees_held`` (True in the
    tuning iterations after the burn-in), ``<name>_leaf_sd``, ``mean_depth`` and
    ``mean_leaves`` of the forest, and ``<name>_forest``, the forest of the draw (a
    :class:`~pymc_trees.PackedForest`).

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=50)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(step=[pmt.CGMTreeStep([f], sweeps=2)], random_seed=1)
    """

    name = "cgm_tree"
    sampler_kind = "cgm"
    stats_dtypes_shapes = {
        **{f"accept_{mv}": (np.float64, []) for mv in (*MOVES, "leaf")},
        **_TreeStep.stats_dtypes_shapes,
    }

    def __init__(self, vars, move_probs: dict[str, float] | None = None, model: Model | None = None,
                 rng=None, initial_point=None, compile_kwargs=None, blocked: bool = True,
                 warm_start: int | None = None, burn_in: int | None = DEFAULT_BURN_IN,
                 sweeps: int = 1, threads: int | None = None):
        if move_probs is not None:
            move_cumulative_probs(move_probs)  # refused before the model is read
            self._move_probs_given = True
        super().__init__(vars, model=model, rng=rng, warm_start=warm_start, burn_in=burn_in,
                         sweeps=sweeps, threads=threads)
        if move_probs is not None:
            self.sampler.check_move_probs(move_probs)  # linear leaves have their own moves
        self.move_probs = (default_move_probs(self.sampler.n) if move_probs is None
                           else dict(move_probs))
        self._move_cp = move_cumulative_probs(self.move_probs)

    def _sweep(self, z, omega, smp, sweeps=1):  # (leaves are drawn exactly)
        return {**smp.cgm_sweep(self.rng, z, omega, self._move_cp, sweeps), "accept_leaf": np.nan}

    def _gamma_sweep(self, smp, s, logt, sweeps=1):
        return {**smp.gamma_sweep(self.rng, s, logt, self._move_cp, sweeps), "accept_leaf": np.nan}

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
    warm_start : int or None, default None
        The first ``min(warm_start, tune // 2)`` tuning iterations of each chain run a
        grow-from-root sweep (:mod:`pymc_trees.bart.kernels.gfr`) instead of the exact update;
        0 turns it off; None: up to 10, as many as cost about 5% of the chain (``plan.warm_sweeps``:
        none for short runs at scale).  Tuning draws only; in ``pm.sample``:
        ``pm.sample(..., pg_tree={"warm_start": 0})``.
    burn_in : int or None, default 200
        The trees' burn-in, as for :class:`CGMTreeStep`.  In ``pm.sample``:
        ``pm.sample(..., pg_tree={"burn_in": None})``.
    sweeps : int, default 1
        Sweeps of the trees per iteration, as for :class:`CGMTreeStep`.  In ``pm.sample``:
        ``pm.sample(..., pg_tree={"sweeps": 5})``.
    threads : int, optional
        As for :class:`CGMTreeStep`.  In ``pm.sample``: ``pm.sample(..., pg_tree={"threads":
        2})``.
    model : pm.Model, optional

    Notes
    -----
    Sampler stats per draw: ``tree_changed`` (fraction of trees whose returned tree differs from
    the old one; NaN in a warm-start or held iteration, and for a term that no density depends
    on, which is drawn afresh from its prior), ``warm_start``, ``trees_held``,
    ``<name>_leaf_sd``, ``mean_depth``,
    ``mean_leaves`` and ``<name>_forest``.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=50)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(step=[pmt.PGTreeStep([f], num_particles=10)], random_seed=1)
    """

    name = "pg_tree"
    sampler_kind = "pg"
    stats_dtypes_shapes = {"tree_changed": (np.float64, []), **_TreeStep.stats_dtypes_shapes}

    def __init__(self, vars, num_particles: int = 10, model: Model | None = None, rng=None,
                 initial_point=None, compile_kwargs=None, blocked: bool = True,
                 warm_start: int | None = None, burn_in: int | None = DEFAULT_BURN_IN,
                 sweeps: int = 1, threads: int | None = None):
        # with one particle the conditional SMC keeps the reference tree: the trees never move
        self.num_particles = step_count(num_particles, "num_particles", 2, "an integer of at "
                                        "least 2 (with one particle Particle Gibbs always keeps "
                                        "the current tree)")
        super().__init__(vars, model=model, rng=rng, warm_start=warm_start, burn_in=burn_in,
                         sweeps=sweeps, threads=threads)

    def _sweep(self, z, omega, smp, sweeps=1):
        return smp.pg_sweep(self.rng, z, omega, self.num_particles)  # sweeps: always 1

    def _gamma_sweep(self, smp, s, logt, sweeps=1):
        return smp.gamma_pg_sweep(self.rng, s, logt, self.num_particles)  # sweeps: always 1

    def _warm_stats(self):
        return {"tree_changed": np.nan}


def register_steps() -> None:
    """Append the steps to PyMC's registry once
    (:func:`pymc_trees.bart.term.pymc_compat.register_step_methods`)."""
    register_step_methods((CGMTreeStep, PGTreeStep, NoiseGibbs))
