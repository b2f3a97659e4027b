"""The term plan (pymc_trees.bart.term.plan): one place decides which combinations of a tree
term's arguments, step and likelihood are served, and by which forest sampler; every refusal
is a TermPlanError (a ValueError) that names the argument and the fix."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
from pymc_trees.bart.likelihood.model_graph import ModelStructureError
from pymc_trees.bart.term.plan import TermPlan, TermPlanError, check_arguments, term_plan
from pymc_trees.bart.samplers.output_samplers import OutputSamplers
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.bart.samplers.shared_sampler import SharedOutputSampler

X = np.random.default_rng(0).uniform(size=(20, 2))


def test_a_plan_error_is_a_value_error_and_a_model_structure_error():
    assert issubclass(TermPlanError, ValueError) and issubclass(TermPlanError,
                                                                ModelStructureError)


@pytest.mark.parametrize("kwargs, match", [
    (dict(outputs=None, response="quadratic", separate_trees=True, sampler=None,
          learned_split=False), "response must be one of"),
    (dict(outputs=None, response="constant", separate_trees=True, sampler="smc",
          learned_split=False), "sampler must be one of"),
    (dict(outputs=None, response="constant", separate_trees=False, sampler=None,
          learned_split=False), "Pass shape=\\(k, n\\)"),
    (dict(outputs=2, response="linear", separate_trees=False, sampler=None,
          learned_split=False), "needs response='constant'"),
    (dict(outputs=2, response="constant", separate_trees=False, sampler="pg",
          learned_split=False), "sampler='cgm'"),
    (dict(outputs=2, response="constant", separate_trees=True, sampler=None,
          learned_split=True), "Learned split probabilities"),
])
def test_the_arguments_no_sampler_serves_are_refused_with_the_fix(kwargs, match):
    with pytest.raises(TermPlanError, match=match):
        check_arguments(**kwargs)


def test_the_arguments_give_the_default_sampler_and_whether_the_trees_are_separate():
    common = dict(response="constant", learned_split=False)
    assert check_arguments(outputs=None, separate_trees=True, sampler=None,
                           **common) == ("cgm", True)
    assert check_arguments(outputs=1, separate_trees=False, sampler="pg",
                           **common) == ("pg", True)
    assert check_arguments(outputs=3, separate_trees=False, sampler=None,
                           **common) == ("cgm", False)


@pytest.mark.parametrize("outputs, shared, response, cls", [
    (None, False, "constant", ForestSampler),
    (None, False, "linear", LinearForestSampler),
    (None, False, "mix", LinearForestSampler),
    (2, False, "constant", OutputSamplers),
    (2, True, "constant", SharedOutputSampler),
])
def test_the_plan_picks_the_forest_sampler(outputs, shared, response, cls):
    plan = TermPlan("f", outputs, shared, response, "cgm")
    smp = plan.make_sampler(X, TreePrior(m=2, response=response), 0.0, 1.0)
    assert type(smp) is cls
    assert plan.warm_start is plan.level_shifts is (not shared)
    if outputs is not None and not shared:
        assert all(type(p) is ForestSampler for p in smp.parts)
        one = plan.make_sampler(X, TreePrior(m=2), 0.0, 1.0, per_output=False)
        assert type(one) is ForestSampler


def test_the_prior_draw_and_the_step_take_their_sampler_from_the_plan():
    with pm.Model():
        f = pmt.BARTTree("f", X, m=2, leaf_sd=1.0, shape=(2, 20), separate_trees=False)
        pm.Normal("y", f, 1.0, observed=np.zeros((2, 20)))
        plan = term_plan(f.owner.op, "f")
        assert (plan.shared, plan.step, plan.outputs) == (True, "cgm", 2)
        step = pmt.CGMTreeStep([f])
        assert step._plan == term_plan(f.owner.op, "f", "cgm")
        assert isinstance(step.sampler, SharedOutputSampler)
        assert pm.draw(f, random_seed=1).shape == (2, 20)


def test_a_likelihood_the_step_cannot_sample_is_refused_by_the_plan():
    y = (np.random.default_rng(1).random(20) < 0.5).astype(float)
    with pm.Model():
        f = pmt.BARTTree("f", X, m=2, leaf_sd=1.0, sampler="pg", leaf_prior="normal")
        pm.Poisson("y", pm.math.exp(f), observed=y)
        with pytest.raises(TermPlanError,
                           match="Particle Gibbs integrates the leaf values") as err:
            pmt.PGTreeStep([f])
    # the families log-gamma leaves take under Particle Gibbs, from the registry: the
    # zero-inflated Poisson and a Student-t's scale too, not the negative binomial (whose
    # default under Particle Gibbs is normal leaves)
    said = str(err.value)
    assert "a zero-inflated Poisson mean" in said and "a Student-t's scale" in said
    assert "negative binomial" not in said
    with pm.Model():  # the default's log-gamma leaves: Particle Gibbs samples them
        f = pmt.BARTTree("f", X, m=2, leaf_sd=1.0, sampler="pg")
        pm.Poisson("y", pm.math.exp(f), observed=y)
        assert pmt.PGTreeStep([f]).leaf_prior == "log-gamma"
    with pm.Model():
        f = pmt.BARTTree("f", X, m=2, leaf_sd=1.0, response="linear", sampler="pg")
        pm.Normal("y", f, 1.0, observed=y)
        with pytest.raises(TermPlanError, match="sampler='cgm'"):
            pmt.PGTreeStep([f])


@pytest.mark.parametrize("case, linear", [
    ("normal", True),           # the README's model: linear leaves
    ("student_t", True),        # augmented to Gaussian: linear leaves
    ("move_probs", False),      # a user's moves are constant leaves' moves
    ("pg", False),              # Particle Gibbs: constant leaves
    ("logit", True),            # Bernoulli with a logit link (augmented): linear leaves
    ("log", False),             # a log link (Poisson): constant leaves
    ("general", False),         # a likelihood for the general step: constant leaves
    ("unobserved", True),       # drawn from its prior: the prior of the default's leaves
])
def test_the_default_leaves_are_linear_only_where_they_were_measured(case, linear):
    """``BARTTree(response=None)``: linear leaves for one output calibrated on Y and sampled
    by the CGM step in a Gaussian or augmented likelihood, constant leaves otherwise; a
    response the user names is kept."""
    y = X[:, 0] * 4 + np.random.default_rng(1).normal(size=20)
    kw = {}
    with pm.Model():
        if case == "logit":
            f = pmt.BARTTree("f", X, (y > 2).astype(float), m=5, link="logit")
            pm.Bernoulli("y", logit_p=f, observed=(y > 2).astype(int))
        elif case == "log":
            counts = np.round(np.abs(y)).astype(int)
            f = pmt.BARTTree("f", X, counts, m=5, link="log")
            pm.Poisson("y", mu=pm.math.exp(f), observed=counts)
        elif case == "general":
            f = pmt.BARTTree("f", X, y, m=5)
            pm.Gumbel("y", mu=f, beta=1.0, observed=y)
        else:
            f = pmt.BARTTree("f", X, y, m=5, sampler="pg" if case == "pg" else None)
            if case == "student_t":
                pm.StudentT("y", nu=4.0, mu=f, sigma=1.0, observed=y)
            elif case != "unobserved":
                pm.Normal("y", f, 1.0, observed=y)
        if case == "move_probs":
            kw["move_probs"] = {"grow": 0.5, "prune": 0.5}
        step = (pmt.PGTreeStep if case == "pg" else pmt.CGMTreeStep)([f], **kw)
        named = pmt.CGMTreeStep([pmt.BARTTree("g", X, y, m=5, response="linear",
                                              sampler="cgm")]) if case == "normal" else None
    assert isinstance(step.sampler, LinearForestSampler) is linear, case
    assert step._plan.response == ("linear" if linear else "constant")
    assert f.owner.op.prior.response_auto is (case not in ("pg", "log"))
    if named is not None:  # a named response is not the default's: response_auto False
        assert isinstance(named.sampler, LinearForestSampler)
    # a response named by the user is kept, and refused with the fix where nothing serves it
    with pm.Model():
        g = pmt.BARTTree("g", X, y, m=5, response="linear")
        pm.Normal("y", g, 1.0, observed=y)
        with pytest.raises(ValueError, match="move_probs"):
            pmt.CGMTreeStep([g], move_probs={"grow": 0.5, "prune": 0.5})
