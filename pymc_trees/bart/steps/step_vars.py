"""Which model variables a tree step takes: a tree term and the learned hyperparameters it
owns (its leaf scale, split probabilities and their concentration), which the term's step
samples with its trees."""

from __future__ import annotations

from pymc.model import Model

from pymc_trees.bart.term.distribution import BARTTreeRV
from pymc_trees.bart.steps.leaf_scale import leaf_scale_rvs
from pymc_trees.bart.steps.split_prior import split_concentration_rvs, split_prior_rvs

__all__ = ["hyper_rvs", "trees_owning", "group_tree_vars"]


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
