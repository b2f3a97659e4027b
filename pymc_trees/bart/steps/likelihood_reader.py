"""What a tree step reads around its term when it is built: the likelihood (one, one per
output of a (k, n) term, or the outputs' joint one when they share their trees), checked
for its link and its density at the starting point; the level shifts; and the term's plan
settled by them (:meth:`~pymc_trees.bart.term.plan.TermPlan.resolve`)."""

from __future__ import annotations

from dataclasses import dataclass

from pymc_trees.bart.likelihood.gamma_likelihood import gamma_likelihood
from pymc_trees.bart.likelihood.leaf_choice import auto_leaf_prior, output_likelihoods
from pymc_trees.bart.likelihood.likelihood_checks import (check_gamma_start, check_general_link,
                                                          check_general_start, check_link,
                                                          warn_output_scales)
from pymc_trees.bart.likelihood.level_shift import level_shifts
from pymc_trees.bart.likelihood.protocol import JointOutputs, PerOutput
from pymc_trees.bart.likelihood.structure import (general_likelihood, joint_output_likelihoods,
                                                  NotAugmentable, tree_likelihood,
                                                  unobserved_term)

__all__ = ["TermLikelihoods", "read_term_likelihoods"]


@dataclass
class TermLikelihoods:
    """The likelihoods of a tree term as its step holds them (each answers
    :class:`~pymc_trees.bart.likelihood.protocol.TermLikelihood`)."""

    # the term's likelihood: one, or a PerOutput or JointOutputs of a (k, n) term's outputs
    # (:mod:`pymc_trees.bart.likelihood.protocol`); None for a term drawn from its prior
    likelihood: object
    prior_only: bool  # no density depends on the term: the step draws it from its prior
    plan: object  # the term's plan, settled by the likelihood
    prior: object  # the tree prior, settled likewise
    level_shifts: list


def read_term_likelihoods(model, rv, start, n: int, offset: float, plan, shared: bool,
                          move_probs_given: bool) -> TermLikelihoods:
    """Read the likelihood around the term ``rv`` at its ``n`` training rows: conjugate,
    augmented or general (then check its link and its density at the starting point
    ``start()``), and the level shifts; settle the ``plan``'s leaves by it.  A term that no
    density depends on (:func:`~pymc_trees.bart.likelihood.structure.unobserved_term`) has
    none: its step draws it from its prior."""
    outputs, liks_out, joint = rv.owner.op.outputs, None, None
    prior_only = unobserved_term(model, rv)
    likelihood, prior, lp = None, rv.owner.op.prior, plan.leaf_prior
    if lp == "auto" and (outputs is None or prior_only):
        # log-gamma leaves where the likelihood takes them (k outputs: output by output)
        lp, likelihood = (("normal", None) if prior_only
                          else auto_leaf_prior(model, rv, n, None, plan.step))
        plan, prior = plan.settle_leaf_prior(prior, lp, getattr(likelihood, "kappa", 0.0))
    if prior_only:
        plan, prior = plan.resolve(prior, None, move_probs_given)
        return TermLikelihoods(None, True, plan, prior, [])
    try:
        if outputs is not None and not shared:
            # one output given the others: log-gamma leaves where "auto" finds their form,
            # else the conjugate update of an augmentable likelihood, else the general step
            liks_out, settled = output_likelihoods(model, rv, n, lp == "auto", plan.step)
            plan, prior = plan.settle_leaf_priors(prior, settled)
            likelihood = liks_out[0]
        elif plan.leaf_prior != "normal":  # log-gamma leaves: their conjugate forms
            likelihood = likelihood or gamma_likelihood(model, rv, n, lp)
        elif shared:
            # the k outputs' leaf values move together: integrated out jointly where the
            # likelihood factorises over the outputs into augmentable ones (Gaussian given
            # the latent variables), else the general step over the joint likelihood of
            # the k outputs at each row, for any likelihood
            try:
                joint = joint_output_likelihoods(model, rv, n)
                likelihood = joint[0]
            except NotAugmentable:
                likelihood = general_likelihood(model, rv, n, joint=True)
        else:
            likelihood = tree_likelihood(model, rv, n)
    except NotAugmentable as err:
        plan.refuse_general(err)  # the general step: CGM only
        likelihood = general_likelihood(model, rv, n)
    liks = liks_out or joint or [likelihood]
    general = [lik for lik in liks if lik.needs_general_step]
    plan, prior = plan.resolve(prior, liks, move_probs_given)
    plan.check_likelihoods(liks)
    for lik in liks:
        if lik.needs_general_step:
            check_general_link(rv, lik)
        elif liks_out is None and joint is None:
            # outputs carry no link of their own (one calibration)
            check_link(rv, lik)
    if general:
        check_general_start(rv, general, start())
    elif plan.leaf_prior != "normal" and liks_out is None:  # log-gamma leaves
        check_gamma_start(model, rv, likelihood, start())
    if outputs is not None:
        warn_output_scales(rv, liks_out or joint or [], start, offset)
    shifts = ([] if liks_out is not None or joint is not None or general
              else level_shifts(model, rv, likelihood))
    if liks_out is not None:
        likelihood = PerOutput(liks_out, model.rvs_to_values[rv].name)
    elif joint is not None:
        likelihood = JointOutputs(joint)
    return TermLikelihoods(likelihood, False, plan, prior, shifts)
