"""The plan of a tree term: which combinations of its arguments, its step and its likelihood
are served, and by which forest sampler and sweep, decided in one place.

* :func:`check_arguments` refuses, when the term is built (``BARTTree``), the combinations of
  arguments no sampler serves (shared trees with one output, linear leaves or Particle Gibbs;
  learned split probabilities with several outputs);
* :class:`TermPlan` (:func:`term_plan`) picks the forest sampler class for prior draws
  (``BARTTreeRV.rng_fn``) and for the tree step, says which sweeps serve the term (no
  grow-from-root warm start and no level shift for outputs that share their trees), and
  refuses, when the step is built, a step kind or a likelihood that the term's sampler cannot
  sample;
* :meth:`TermPlan.resolve` settles the default's leaves (``BARTTree(response=None)``) when the
  step is built: linear for a term of one output calibrated on Y (no link, or a logit or
  probit one), sampled by the CGM step in a Gaussian or augmented likelihood without a
  user's ``move_probs``; constant for everything else (``BARTTree`` has already picked
  constant for a term without Y, another link, several outputs or ``sampler="pg"``).

================  =================================  ==========================================
leaves / outputs  forest sampler                     sweeps
================  =================================  ==========================================
constant, (n,)    :class:`ForestSampler`             ``cgm_sweep``, ``pg_sweep``,
                                                     ``general_sweep``, ``gfr_sweep``
linear or mix     :class:`LinearForestSampler`       ``cgm_sweep``, ``general_sweep`` (compiled
                                                     row graph only), ``gfr_sweep``; CGM step
log-gamma         :class:`GammaForestSampler`        ``gamma_sweep``, ``gamma_pg_sweep``,
                                                     ``gfr_sweep`` (a start); constant leaves
(k, n) separate   :class:`OutputSamplers` of the     each output as above, given the others;
                  above, one per output              ``"auto"`` settles output by output
                                                     (``TermPlan.output_leaves``)
(k, n) shared     :class:`SharedOutputSampler`       ``conjugate_sweep``, ``general_sweep``;
                                                     CGM step, constant leaves, no warm start
================  =================================  ==========================================

Every refusal is a :class:`TermPlanError` (a ``ValueError`` and a
:class:`~pymc_trees.bart.likelihood.model_graph.ModelStructureError`) that names the argument and the fix.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np

from pymc_trees.bart.samplers.gamma_sampler import GammaForestSampler
from pymc_trees.bart.samplers.leaf_priors import LEAF_PRIORS, leaf_prior_kappa
from pymc_trees.bart.samplers.linear_sampler import RESPONSES, LinearForestSampler
from pymc_trees.bart.likelihood.gamma_likelihood import auto_leaf_families
from pymc_trees.bart.likelihood.model_graph import ModelStructureError
from pymc_trees.bart.samplers.output_samplers import OutputSamplers
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.bart.samplers.shared_sampler import SharedOutputSampler

__all__ = ["TermPlanError", "TermPlan", "term_plan", "check_arguments", "make_forest_sampler",
           "step_count",
           "SAMPLERS", "DEFAULT_SAMPLER", "warm_sweeps", "WARM_START", "default_move_probs",
           "auto_leaf_prior_applies"]

SAMPLERS = ("cgm", "pg")
# The sampler pm.sample() assigns when BARTTree(sampler=None): the one with more ESS per second
# of f on Friedman #1 at n = 1,000 and 10,000 (benchmarks/mixing.py; figures in
# docs/benchmarks/mixing.md).
DEFAULT_SAMPLER = "cgm"

_SHARED_PG = ("Particle Gibbs integrates one value per leaf out; a term whose outputs share "
              "their trees (separate_trees=False) is sampled by the general tree step: use "
              "sampler='cgm' (the default), or separate_trees=True.")


# The default warm start (:func:`warm_sweeps`): a cost model of seconds fitted on
# Friedman #1 (p = 10, m = 200) on the two-core CI machine kind (docs/benchmarks/million-rows.md,
# "The warm start's default, chosen"): a grow-from-root sweep 5.5e-9 s per row, tree and feature
# (0.11 s at 10,000 rows, 11.0 s at 1,000,000); an iteration 2 ms plus 1.5e-9 s per row and
# tree (measured 6.75 ms at 10,000 rows, 27 ms at 100,000, 0.31 s at 1,000,000).  A model,
# not a timer: the number depends on the run's sizes only, so a seed reproduces a run on
# any machine.
WARM_START, WARM_SHARE, WARM_FLOOR, WARM_REF = 10, 0.05, 0.5, 2000
_GFR_S, _ITER_S, _SWEEP_S = 5.5e-9, 2e-3, 1.5e-9


def warm_sweeps(requested: int | None, tune: int, draws: int, sampler) -> int:
    """How many of a chain's first tuning iterations run a grow-from-root sweep.

    ``requested`` (the step's ``warm_start``) as an int: ``min(requested, tune // 2)``.
    None (the default): at most ``min(WARM_START, tune // 2)``, and no more than cost
    ``max(0.05 (tune + draws) t_iter, min(0.5, 0.05 * 2000 t_iter))`` seconds at ``t_gfr``
    each (5% of this run, or of a default run of 2 x 1,000 iterations up to 0.5 s),
    ``t_gfr = 5.5e-9 n m p k`` and ``t_iter = 2e-3 + 1.5e-9 n m k`` (``k`` outputs of ``m``
    trees on ``n`` rows and ``p`` features).  At m = 200 and p = 10 a default run of
    2 x (1,000 + 1,000) keeps 10 sweeps up to about 2,000 rows, 8 at 3,000, 4 at 10,000 and
    2 from 100,000 on; ``pm.sample(draws=5, tune=12)`` 6 up to about 5,000 rows, 4 at
    10,000, 1 at 30,000 and none from 100,000.
    The trees it grows are a start only (every kept draw comes from the exact sweeps); runs
    without it were as accurate within the seeds' spread on Friedman #1 from 1,000 to
    1,000,000 rows and on the suite's largest tables (``docs/benchmarks/million-rows.md``)."""
    half = tune // 2
    if requested is not None:
        return min(int(requested), half)
    parts = getattr(sampler, "parts", [sampler])
    one = parts[0]
    rows_trees = one.n * one.prior.m * len(parts)
    sweep = _GFR_S * rows_trees * one.layout.q
    t_iter = _ITER_S + _SWEEP_S * rows_trees
    # 5% of this run, or of a default run (up to 0.5 s) where that is more
    budget = max(WARM_SHARE * (tune + draws) * t_iter,
                 min(WARM_FLOOR, WARM_SHARE * WARM_REF * t_iter))
    return int(min(WARM_START, half, budget // sweep))


DEFAULT_MOVES = {"grow": 0.25, "prune": 0.25, "change": 0.40, "swap": 0.10}
# Above this many training rows the default moves are grow and prune alone: at 30,000 and
# 100,000 rows they give the default model as much ESS per second of sigma, of the leaf scale
# and of f as CGM's four moves, or more, for 0.76 to 0.83 of the time per iteration
# (benchmarks/default_moves.py, docs/benchmarks/mixing.md "The default moves at scale").  The
# threshold
# is the one above which a term's values stay out of the trace.
LARGE_DATA_ROWS = 50_000
DEFAULT_MOVES_LARGE = {"grow": 0.5, "prune": 0.5}


def default_move_probs(n_rows: int) -> dict[str, float]:
    """The move probabilities :class:`CGMTreeStep` uses when none are given, for a term with
    ``n_rows`` training rows: CGM's grow/prune/change/swap ``.25/.25/.40/.10`` up to
    ``LARGE_DATA_ROWS`` (50,000) rows, grow/prune ``.5/.5`` above."""
    return dict(DEFAULT_MOVES if n_rows <= LARGE_DATA_ROWS else DEFAULT_MOVES_LARGE)


def step_count(value, name: str, minimum: int, what: str, optional: bool = False) -> int | None:
    """A tree step's option that counts something (``sweeps``, ``burn_in``, ``warm_start``,
    ``num_particles``): a whole number of at least ``minimum`` (or None when ``optional``),
    as an int.  Anything else (a bool, a fraction, NaN, infinity, a string) is refused with a
    ``ValueError`` naming the option and ``what`` it must be."""
    if value is None and optional:
        return None
    try:
        ok = (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
              and float(value) == int(value) and int(value) >= minimum)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be {what}; got {value!r}.")
    return int(value)


class TermPlanError(ModelStructureError):
    """A combination of a tree term's arguments, its step and its likelihood that no sampler
    serves; the message names the argument and the fix.  A ``ValueError``."""


def check_arguments(*, outputs: int | None, response: str, separate_trees,
                    sampler: str | None, learned_split: bool, leaf_prior: str = "normal",
                    learned_scale: bool = False) -> tuple[str, bool]:
    """Refuse the combinations of ``BARTTree`` arguments that no sampler serves.

    Parameters
    ----------
    outputs : int or None
        k for a term of shape (k, n), None for shape (n,).
    response : str
        ``BARTTree(response=...)``.
    separate_trees : bool
        ``BARTTree(separate_trees=...)``.
    sampler : str or None
        ``BARTTree(sampler=...)`` (None: ``DEFAULT_SAMPLER``).
    learned_split : bool
        Whether the split probabilities are a model variable (a Dirichlet).
    leaf_prior : str
        ``BARTTree(leaf_prior=...)``.
    learned_scale : bool
        Whether the leaf scale is a model variable.

    Returns
    -------
    (sampler, separate) : tuple of str and bool
        The sampler (the default filled in), and whether the outputs have forests of their
        own (True for a term of one output).

    Raises
    ------
    TermPlanError
    """
    if response not in RESPONSES:
        raise TermPlanError(f"response must be one of {RESPONSES}; got {response!r}.")
    separate = _check_separate(separate_trees, outputs, response, sampler)
    sampler = DEFAULT_SAMPLER if sampler is None else sampler
    if sampler not in SAMPLERS:
        raise TermPlanError(f"sampler must be one of {SAMPLERS} (or None for the default "
                            f"{DEFAULT_SAMPLER!r}); got {sampler!r}.")
    _check_leaf_prior(leaf_prior, outputs, response, learned_scale)
    if outputs is not None and learned_split:
        raise TermPlanError("Learned split probabilities (a Dirichlet split_prior) are not "
                            f"supported for a BARTTree with several outputs (shape "
                            f"({outputs}, n)); pass fixed weights or one term per output.")
    return sampler, separate


def _check_leaf_prior(leaf_prior: str, outputs, response: str, learned_scale: bool) -> None:
    """Refuse what log-gamma leaves do not combine with: one output of constant leaves, a
    leaf scale that is fixed or learned inside the step (not a model variable); the CGM step
    or Particle Gibbs.  ``"auto"`` is settled by the likelihood
    (:meth:`TermPlan.settle_leaf_prior`)."""
    if leaf_prior not in LEAF_PRIORS + ("auto",):
        raise TermPlanError(f"leaf_prior must be one of {LEAF_PRIORS + ('auto',)}; got "
                            f"{leaf_prior!r}.")
    if leaf_prior in ("normal", "auto"):
        return
    fix = "or use leaf_prior='normal'"
    if outputs is not None:
        raise TermPlanError(f"leaf_prior={leaf_prior!r} is for a term of one output; this "
                            f"term has shape ({outputs}, n): use one term per output, or "
                            f"leaf_prior='auto' (the default), which gives each output the "
                            f"leaves its likelihood takes, {fix}.")
    if response != "constant":
        raise TermPlanError(f"leaf_prior={leaf_prior!r} holds one value per leaf; pass "
                            f"response='constant' (not {response!r}), {fix}.")
    if learned_scale:
        raise TermPlanError(f"leaf_prior={leaf_prior!r} takes a leaf_sd that is a number, "
                            f"\"learned\" or \"fixed\" (its Gamma prior is calibrated on it), "
                            f"not a model variable; {fix}.")


def auto_leaf_prior_applies(outputs, response: str, response_auto: bool, model_scale: bool,
                            separate: bool = True) -> bool:
    """Whether ``leaf_prior="auto"`` may become log-gamma leaves once the likelihood is
    known: a term whose leaves may be constant (constant, or the default's linear ones:
    ``response_auto``), with no model variable as its leaf scale, of one output or of k
    outputs with trees of their own (``separate``; each output settles by the likelihood it
    enters, :meth:`TermPlan.settle_leaf_priors`).  The CGM step and Particle Gibbs both
    sample them."""
    return ((outputs is None or separate) and (response == "constant" or response_auto)
            and not model_scale)


def _check_separate(separate_trees, outputs: int | None, response: str, sampler) -> bool:
    """``separate_trees`` as a bool, refused where the shared form does not apply."""
    if not isinstance(separate_trees, (bool, np.bool_)):
        raise TermPlanError(f"separate_trees must be True or False; got {separate_trees!r}.")
    if separate_trees or outputs == 1:
        # one output shares its trees with nobody: the same term either way
        return True
    if outputs is None:
        raise TermPlanError("separate_trees=False makes the k outputs of a term of shape "
                            "(k, n) share one forest (each leaf holds k values), but this term "
                            "has one value per row of X. Pass shape=(k, n) (or two dims), or "
                            "drop separate_trees.")
    if response != "constant":
        raise TermPlanError(f"Linear leaves (response={response!r}) hold one line per leaf; a "
                            "term whose outputs share their trees (separate_trees=False) needs "
                            "response='constant', or use separate_trees=True.")
    if sampler == "pg":
        raise TermPlanError(_SHARED_PG)
    return False


def make_forest_sampler(X: np.ndarray, prior: TreePrior, offset: float, leaf_sd: float,
                        categorical: np.ndarray | None = None) -> ForestSampler:
    """The sampler of one forest for ``prior.response``: :class:`ForestSampler` for constant
    leaves, :class:`LinearForestSampler` for linear ones and for the mix."""
    if prior.leaf_prior != "normal":
        return GammaForestSampler(X, prior, offset, leaf_sd, categorical,
                                  kappa=prior.leaf_kappa or leaf_prior_kappa(prior.leaf_prior))
    cls = ForestSampler if prior.response == "constant" else LinearForestSampler
    return cls(X, prior, offset, leaf_sd, categorical)


@dataclass(frozen=True)
class TermPlan:
    """How a tree term is sampled.

    Attributes
    ----------
    name : str
        The term's name (for the messages).
    outputs : int or None
        k for a term of shape (k, n).
    shared : bool
        Whether the k outputs share one forest (each leaf holds k values).
    response : str
        What each leaf holds.
    step : str
        The tree step's kind, ``"cgm"`` or ``"pg"`` (for prior draws, the term's sampler).
    leaf_prior : str
        The leaves' prior (``"normal"``, or log-gamma leaves: their own conjugate sweep).
    output_leaves : tuple of (str, float)
        For a term of shape (k, n) whose ``"auto"`` settled output by output: each output's
        leaf prior and exponent kappa (:meth:`settle_leaf_priors`); empty otherwise.
    """

    name: str
    outputs: int | None
    shared: bool
    response: str
    step: str
    leaf_prior: str = "normal"
    output_leaves: tuple = ()

    @property
    def warm_start(self) -> bool:
        """Whether the grow-from-root warm start serves the term (it grows one value per
        leaf: not for outputs that share their trees)."""
        return not self.shared

    @property
    def level_shifts(self) -> bool:
        """Whether the level-shift move serves the term's sampler (one value per leaf)."""
        return not self.shared

    def make_sampler(self, X: np.ndarray, prior: TreePrior, offset: float, leaf_sd: float,
                     categorical: np.ndarray | None = None, *, per_output: bool = True,
                     output: int = 0):
        """The term's forest sampler: a :class:`SharedOutputSampler` for outputs that share
        their trees, else one forest's sampler (:func:`make_forest_sampler`) for a term of
        shape (n,) or, with ``per_output``, an :class:`OutputSamplers` of one per output
        (without: output ``output``'s, for prior draws output by output)."""
        if self.shared:  # one forest whose leaves hold the k outputs' values
            return SharedOutputSampler(X, prior, offset, leaf_sd, categorical,
                                       outputs=self.outputs)
        if self.outputs is None or not per_output:
            return make_forest_sampler(X, self.output_prior(prior, output), offset, leaf_sd,
                                       categorical)
        return OutputSamplers(X, [self.output_prior(prior, j) for j in range(self.outputs)],
                              offset, leaf_sd, self.outputs, categorical,
                              make=make_forest_sampler)

    def output_prior(self, prior: TreePrior, output: int) -> TreePrior:
        """The prior of output ``output``'s trees: ``prior`` with that output's settled leaf
        prior (:attr:`output_leaves`), or ``prior`` itself."""
        if not self.output_leaves or self.outputs is None:
            return prior
        lp, kappa = self.output_leaves[output]
        if lp == "normal":
            return prior
        return replace(prior, leaf_prior=lp, leaf_kappa=float(kappa), response="constant",
                       response_auto=False)

    def resolve(self, prior: TreePrior, liks: list, move_probs_given: bool = False
                ) -> tuple["TermPlan", TreePrior]:
        """The plan and prior the step samples: the default's linear leaves
        (``prior.response_auto``) stay linear only for the CGM step in a likelihood that is
        Gaussian or augmented to it (``liks``, None for a term drawn from its prior) without
        a user's ``move_probs``; otherwise they become constant leaves.  A response the user
        named is kept (and refused by :meth:`check_likelihoods` where no sampler serves it)."""
        general = liks is not None and any(lik.needs_general_step for lik in liks)
        if not prior.response_auto or (self.step == "cgm" and not general
                                       and not move_probs_given):
            return self, prior
        return (replace(self, response="constant"),
                replace(prior, response="constant", response_auto=False))

    def settle_leaf_prior(self, prior: TreePrior, leaf_prior: str, kappa: float = 0.0
                          ) -> tuple["TermPlan", TreePrior]:
        """The plan and prior with ``leaf_prior="auto"`` settled to ``leaf_prior`` and the
        exponent ``kappa`` (by the likelihood,
        :func:`pymc_trees.bart.likelihood.leaf_choice.auto_leaf_prior`): log-gamma leaves hold one
        value each (constant leaves)."""
        if leaf_prior == "normal":
            return replace(self, leaf_prior="normal"), replace(prior, leaf_prior="normal")
        return (replace(self, leaf_prior=leaf_prior, response="constant"),
                replace(prior, leaf_prior=leaf_prior, leaf_kappa=float(kappa),
                        response="constant", response_auto=False))

    def settle_leaf_priors(self, prior: TreePrior, settled) -> tuple["TermPlan", TreePrior]:
        """The plan and prior with ``leaf_prior="auto"`` settled by the likelihood, one
        ``(leaf_prior, kappa)`` pair of ``settled`` per output
        (:func:`pymc_trees.bart.likelihood.leaf_choice.output_likelihoods`): a term of one output
        as :meth:`settle_leaf_prior`; for k outputs the term's prior is the normal leaves'
        and :attr:`output_leaves` holds each output's (:meth:`output_prior`)."""
        settled = tuple((str(lp), float(kappa)) for lp, kappa in settled)
        if self.outputs is None:
            return self.settle_leaf_prior(prior, *settled[0])
        keep = settled if any(lp != "normal" for lp, _ in settled) else ()
        return (replace(self, leaf_prior="normal", output_leaves=keep),
                replace(prior, leaf_prior="normal"))

    def check_step(self) -> None:
        """Refuse a step kind the sampler cannot serve, when the step is built."""
        if self.shared and self.step != "cgm":
            raise TermPlanError(_SHARED_PG)

    def refuse_general(self, err: Exception) -> None:
        """The likelihood has no exact augmentation (``err``): the general tree step serves
        it, which only the CGM step runs."""
        if self.step != "cgm":
            raise TermPlanError(
                f"{err}\nParticle Gibbs integrates the leaf values out, which needs one of "
                f"the forms above, or log-gamma leaves (leaf_prior='auto', the default, gives "
                f"them to {auto_leaf_families('pg')} through exp). For any other likelihood "
                f"use the default tree step: "
                f"BARTTree(..., sampler='cgm') (reversible-jump moves with the exact "
                f"likelihood, docs/math.md section 9).") from None

    def check_likelihoods(self, liks: list) -> None:
        """Refuse a likelihood the term's sampler and step cannot sample: linear leaves need
        the CGM step and, with a general likelihood, its compiled row graph; a general
        likelihood needs the CGM step."""
        general = [lik for lik in liks if lik.needs_general_step]
        name, response = self.name, self.response
        if response != "constant" and self.step != "cgm":
            raise TermPlanError(
                f"{name!r} has linear leaves (response={response!r}), which are sampled by "
                "the CGM tree step's moves. Particle Gibbs is for constant leaves: use "
                "BARTTree(..., sampler='cgm') (the default).")
        if response != "constant" and any(lik.rows is None for lik in general):
            why = next(lik.rows_reason for lik in general if lik.rows is None)
            raise TermPlanError(
                f"{name!r} has linear leaves with a likelihood that needs the general "
                f"tree step, which runs them in its compiled kernel only; the likelihood's "
                f"row graph could not be compiled ({why}). Use response='constant'.")
        if general and self.step != "cgm":
            outs = [j for j, lik in enumerate(liks) if lik.needs_general_step]
            raise TermPlanError(
                f"Output(s) {outs} of {name!r} (shape ({self.outputs}, n)) are not a linear "
                "predictor of an augmentable likelihood given the other outputs, so they need "
                "the general tree step; Particle Gibbs integrates the leaf values out and "
                f"cannot sample them. Use BARTTree(..., sampler='cgm') (the default).")


def term_plan(op, name: str = "", step: str | None = None) -> TermPlan:
    """The plan of a tree term from its Op (``rv.owner.op``, a ``BARTTreeRV``) and, for the
    tree step, the step's kind (default: the term's ``sampler``)."""
    outputs = op.outputs
    return TermPlan(name=name, outputs=outputs,
                    shared=outputs is not None and not op.prior.separate_trees,
                    response=op.prior.response, step=op.sampler if step is None else step,
                    leaf_prior=op.prior.leaf_prior)
