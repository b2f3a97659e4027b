"""Which model variables a tree step takes: a tree term and the learned hyperparameters it
owns (its leaf scale, split probabilities and their concentration), which the term's step
samples with its trees."""

from __future__ import annotations

import pymc as pm
from pymc.model import Model
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_trees.bart.likelihood.model_graph import ModelStructureError
from pymc_trees.bart.term.distribution import BARTTreeRV, term_inputs
from pymc_trees.bart.steps.leaf_scale import leaf_scale_rvs
from pymc_trees.bart.steps.noise_step import NoiseGibbs
from pymc_trees.bart.steps.split_prior import split_concentration_rvs, split_prior_rvs

__all__ = ["hyper_rvs", "trees_owning", "group_tree_vars", "select_tree_vars",
           "only_exact_steps"]


def hyper_rvs(model: Model, tree_rv) -> list:
    """The learned hyperparameters of the tree term ``tree_rv`` that are model variables: its
    leaf scale, its split probabilities and their concentration."""
    return (leaf_scale_rvs(model, tree_rv) + split_prior_rvs(model, tree_rv)
            + split_concentration_rvs(model, tree_rv))


def trees_owning(model: Model, rv) -> list:
    """The tree terms whose learned leaf scale, split probabilities or their concentration is
    ``rv`` (the hyperparameters a tree step samples with its trees)."""
    return [t for t in model.free_RVs
            if isinstance(t.owner.op, BARTTreeRV) and rv in hyper_rvs(model, t)]


def group_tree_vars(model: Model, value_vars) -> list[list]:
    """Split the value variables given to a tree step into one group per tree term: the term's
    variable, then the learned hyperparameters it owns that are among them."""
    rvs = [model.values_to_rvs[v] for v in value_vars]
    trees = [r for r in rvs if isinstance(r.owner.op, BARTTreeRV)]
    groups = {t: [model.rvs_to_values[t]] for t in trees}
    for r in rvs:
        if r in groups:
            continue
        owners = [t for t in trees_owning(model, r) if t in groups]
        if not owners:
            tree_names = [t.name for t in trees_owning(model, r)]
            raise ValueError(
                f"{r.name!r} was given to a tree step without the tree term it belongs to "
                f"({', '.join(map(repr, tree_names)) or 'none'}): a learned leaf scale or "
                "split-probability vector is sampled together with its trees. Pass both, "
                "e.g. CGMTreeStep([f, leaf_scale]).")
        groups[owners[0]].append(model.rvs_to_values[r])
    return list(groups.values())


def select_tree_vars(model: Model, vars, step_name: str) -> tuple:
    """The tree term among ``vars`` (value variables or random variables) and the variables
    sampled with it by the step ``step_name``: ``(rv, scale, split, conc, value_vars)``, its
    learned leaf scale, split probabilities and their concentration, and the value
    variables of all of them, the term's first.  Refuses anything else, naming it."""
    value_vars = get_value_vars_from_user_vars(vars, model)
    rvs = [model.values_to_rvs[v] for v in value_vars]
    trees = [r for r in rvs if isinstance(r.owner.op, BARTTreeRV)]
    if len(trees) != 1:
        names = [r.name for r in rvs]
        raise ValueError(f"{step_name} takes one BARTTree variable (and its "
                         f"learned leaf scale); got {names}. Give each tree term its own "
                         "step.")
    rv = trees[0]
    scale = leaf_scale_rvs(model, rv)
    if len(scale) > 1:
        raise ModelStructureError(
            f"The leaf_sd of {rv.name!r} depends on several free variables "
            f"({[v.name for v in scale]}); a learned leaf scale must be one variable.")
    split = split_prior_rvs(model, rv)
    weights = term_inputs(rv).split_weights
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
                f"together with the trees; pass both: {step_name}([{rv.name}, "
                f"{h.name}]).")
    value_vars = ([model.rvs_to_values[rv]] + [model.rvs_to_values[v] for v in scale]
                  + [model.rvs_to_values[v] for v in split + conc])
    return rv, scale, split, conc, value_vars


def only_exact_steps(model) -> bool:
    """Whether ``pm.sample``'s own assignment gives every free variable of the model an exact
    step of this package that adapts nothing: a tree term, a hyperparameter sampled with its
    trees, a conjugate noise variance (:class:`NoiseGibbs`).  Any other variable goes to
    NUTS (or another adaptive step), and then the trees' burn-in does not hold the trees:
    NUTS adapted around held trees mixes worse once they move (docs/explanation/warm-start.md,
    "Not with NUTS")."""
    with model:
        for rv in model.free_RVs:
            if isinstance(getattr(rv.owner, "op", None), BARTTreeRV) or trees_owning(model, rv):
                continue
            if NoiseGibbs.competence(rv, False) == Competence.IDEAL:
                continue
            return False
    return True
