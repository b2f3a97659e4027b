"""What ``leaf_prior="auto"`` settles to, in one place: :func:`settle_auto` reads, output by
output, whether the term enters a likelihood of the registry's log-gamma families through
``exp`` (docs/explanation/log-gamma-leaves.md, "Which prior a model gets").  The tree step
settles its plan by it when it is built
(:func:`~pymc_trees.bart.steps.likelihood_reader.read_term_likelihoods`, through
:func:`auto_leaf_prior` and :func:`output_likelihoods`), and a draw from the term's prior
settles by the same function (:func:`settled_leaf_priors`), so the two cannot disagree."""

from __future__ import annotations

import numpy as np
import pymc as pm

from pymc_trees.bart.likelihood.gamma_likelihood import (GAMMA_FAMILIES, GammaLikelihood,
                                                         gamma_likelihood)
from pymc_trees.bart.likelihood.model_graph import ModelStructureError, NotAugmentable
from pymc_trees.bart.likelihood.general_likelihood import general_likelihood
from pymc_trees.bart.likelihood.structure import output_tree_likelihood

__all__ = ["settle_auto", "auto_leaf_prior", "output_likelihoods", "settled_leaf_priors"]


def settle_auto(model, f_rv, n: int, step: str = "cgm") -> list:
    """``leaf_prior="auto"`` of the term ``f_rv`` at its ``n`` rows in ``model``, one
    ``(leaf_prior, likelihood)`` per output (one for a term of shape (n,)):
    :func:`auto_leaf_prior` of each.  ``step``: the tree step's kind."""
    outs = [None] if f_rv.owner.op.outputs is None else range(int(f_rv.owner.op.outputs))
    return [auto_leaf_prior(model, f_rv, n, j, step) for j in outs]


def output_likelihoods(model, f_rv, n: int, auto: bool, step: str = "cgm"
                       ) -> tuple[list, list]:
    """The likelihood of each output of a tree term of shape (k, n) given the others, and
    the leaf prior each output settles to: with ``auto`` (``leaf_prior="auto"``), an output
    that enters a form of :data:`GAMMA_FAMILIES` through ``exp``
    (``Normal(w[0], pm.math.exp(w[1]))``: output 1) gets log-gamma leaves and its
    :class:`GammaLikelihood`; every other output the normal leaves' conjugate update where it
    is a linear predictor of an augmentable likelihood
    (:func:`~pymc_trees.bart.likelihood.structure.output_tree_likelihood`), else the general step.
    ``step``: the tree step's kind (:func:`auto_leaf_prior`).
    Returns ``(liks, settled)``, ``settled[j] = (leaf_prior, kappa)`` (0 for normal leaves)."""
    liks, settled, rows_cache = [], [], {}
    k = int(f_rv.owner.op.outputs)
    for j, (lp, lik) in enumerate(settle_auto(model, f_rv, n, step) if auto
                                  else [("normal", None)] * k):
        if lik is None:
            try:
                lik = output_tree_likelihood(model, f_rv, n, j)
            except NotAugmentable:
                lik = general_likelihood(model, f_rv, n, output=j, rows_cache=rows_cache)
        liks.append(lik)
        settled.append((lp, float(getattr(lik, "kappa", 0.0)) if lp != "normal" else 0.0))
    return liks, settled


def auto_leaf_prior(model, f_rv, n: int, output: int | None = None, step: str = "cgm"
                    ) -> tuple[str, GammaLikelihood | None]:
    """The leaf prior that ``leaf_prior="auto"`` settles to for the term ``f_rv`` (its output
    ``output`` for a term of shape (k, n)) in ``model``, with its likelihood:
    ``"log-gamma"`` or ``"log-inverse-gamma"`` (and the compiled :class:`GammaLikelihood`)
    when the term enters one likelihood of :data:`GAMMA_FAMILIES` through ``exp`` with
    kappa = +-1 or +-2 (``lik.kappa``; -2 for ``sigma = exp(g)``: each tree multiplies the
    variance by ``exp(2 mu)``, inverse-gamma), else ``("normal", None)``.  Under Particle
    Gibbs (``step="pg"``) a family with ``auto_pg=False`` keeps normal leaves (measured)."""
    try:
        lik = gamma_likelihood(model, f_rv, n, "auto", output)
    except ModelStructureError:
        return "normal", None
    if step == "pg" and not GAMMA_FAMILIES[lik.family].auto_pg:
        return "normal", None
    return ("log-gamma" if lik.kappa > 0 else "log-inverse-gamma"), lik


def settled_leaf_priors(op, X=None) -> tuple[tuple[str, float], ...]:
    """The leaf prior and its exponent kappa (0 for the name's +-1) of each output of the
    tree term whose Op is ``op`` (a ``BARTTreeRV``, at rows ``X``) for a draw from its prior
    (one pair for a term of shape (n,)): ``leaf_prior="auto"`` settles as the tree step
    settles it, by the likelihood the term enters in the model of the current context
    (:func:`auto_leaf_prior`, :func:`output_likelihoods`; ``pm.sample_prior_predictive``
    enters its model's context, :mod:`pymc_trees.bart.term.pymc_compat`).  A term drawn outside
    any model context (``pm.draw(f)`` after the ``with`` block) has no likelihood in sight
    and gets normal leaves (the same mean and sd at every leaf)."""
    k = 1 if op.outputs is None else int(op.outputs)
    if op.prior.leaf_prior != "auto":
        return ((op.prior.leaf_prior, 0.0),) * k
    model = pm.Model.get_context(error_if_none=False)
    # the compiled draw holds a copy of the Op (PyMC makes it inplace): found by its props
    props = {k: v for k, v in op._props_dict().items() if k != "inplace"}
    found = [] if model is None else [
        v for v in model.free_RVs if type(getattr(v.owner, "op", None)) is type(op)
        and {k: w for k, w in v.owner.op._props_dict().items() if k != "inplace"} == props]
    if len(found) > 1 and X is not None:
        found = [v for v in found if np.array_equal(_rows(v).eval(), X)]
    settled = {_settle_in(model, v) for v in found}
    if len(settled) > 1:
        raise ValueError(
            f"Tree terms {[v.name for v in found]} have the same arguments and X but their "
            "leaf_prior='auto' settles differently by their likelihoods; pass leaf_prior "
            "explicitly ('normal', 'log-gamma' or 'log-inverse-gamma') to draw them from "
            "their priors.")
    return settled.pop() if settled else (("normal", 0.0),) * k


def _data_key(model) -> tuple:
    """What tells the model's data apart after ``pm.set_data``: each ``pm.Data``'s array
    (its identity and shape; a new value is a new array) and, for small ones (up to 1,000
    numbers: the scalars and short vectors a likelihood's form reads), its bytes."""
    out = []
    for d in model.data_vars:
        value = np.asarray(d.get_value(borrow=True))
        out.append((d.name, id(value), value.shape,
                    value.tobytes() if value.size <= 1000 else None))
    return tuple(out)


def _rows(rv):
    """The X input of the tree term ``rv`` (its first distribution parameter)."""
    return rv.owner.op.dist_params(rv.owner)[0]


def _settle_in(model, rv) -> tuple[tuple[str, float], ...]:
    """``leaf_prior="auto"`` of the term ``rv`` settled by its likelihood in ``model``, one
    pair per output, kept on the term's Op until the model gains a variable or its data
    change (``pm.set_data`` can change the form, an exponent ``exp(f * s)`` with ``s`` a
    ``pm.Data``)."""
    op = rv.owner.op
    key = (id(model), len(model.basic_RVs), len(model.potentials), len(model.deterministics),
           _data_key(model))
    kept = getattr(op, "_settled", None)
    if kept is None or kept[0] != key:
        n = int(_rows(rv).shape[0].eval())
        got = tuple((lp, 0.0 if lik is None else float(lik.kappa))
                    for lp, lik in settle_auto(model, rv, n, op.sampler))
        kept = op._settled = (key, got)
    return kept[1]
