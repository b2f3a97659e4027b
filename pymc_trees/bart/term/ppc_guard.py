"""PyMC's own posterior predictive refuses to reuse the training-row values of a tree term
whose X changed: the one behaviour of PyMC that ``import pymc_trees`` changes besides the
trace conversion (see ``docs/explanation/trace.md``, "New data through PyMC's API").  This module
decides; :mod:`pymc_trees.bart.term.pymc_compat` wires the decision into PyMC."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from pytensor.graph.traversal import ancestors

from pymc_trees.bart.term.distribution import PPC_ADVICE, term_inputs, tree_terms

__all__ = ["evaluated_at_current_x", "stale_tree_terms", "prior_drawn_tree_terms",
           "refuse_wrong_draws", "refuse_foreign_steps"]

# Names of the tree terms whose trace values :func:`sample_posterior_predictive` has just
# computed at the current X, for the PyMC call it makes (the refusal below lets them pass).
_AT_CURRENT_X: contextvars.ContextVar[frozenset] = contextvars.ContextVar(
    "pymc_trees_terms_at_current_x", default=frozenset())


@contextmanager
def evaluated_at_current_x(names: Iterable[str]) -> Iterator[None]:
    """Within the block, the tree terms ``names`` hold values computed at the model's current
    X (by :func:`pymc_trees.sample_posterior_predictive`), so the refusal lets them pass."""
    token = _AT_CURRENT_X.set(frozenset(names))
    try:
        yield
    finally:
        _AT_CURRENT_X.reset(token)


def stale_tree_terms(model, vars_in_trace, volatile_vars, is_changed) -> dict[str, list[str]]:
    """The tree terms whose trace values PyMC's posterior predictive would reuse although
    data upstream of their X changed: ``{name: [changed data]}``.

    ``vars_in_trace``: the variables whose trace values PyMC may reuse; ``volatile_vars``: the
    ones it redraws (``sample_vars``, refused by the term's ``rng_fn``); ``is_changed(v)``:
    whether the root variable ``v`` (a ``pm.Data``, a coord length) differs from its value at
    sampling time.  Terms just evaluated at the current X by :func:`sample_posterior_predictive`
    are not stale.
    """
    done = _AT_CURRENT_X.get()
    out = {}
    for rv in tree_terms(model):
        if rv not in vars_in_trace or rv in volatile_vars or rv.name in done:
            continue
        changed = sorted({a.name or "<unnamed>" for a in ancestors([term_inputs(rv).X])
                          if a.owner is None and is_changed(a)})
        if changed:
            out[rv.name] = changed
    return out


def prior_drawn_tree_terms(model, volatile_closure, volatile_vars,
                           vars_in_trace) -> list[str]:
    """The tree terms PyMC's posterior predictive would draw from their distribution (the
    tree prior): those it regenerates (``volatile_closure``) because they are in
    ``sample_vars`` (``volatile_vars``) or not in the trace, except the terms just
    evaluated at the current X by :func:`sample_posterior_predictive`."""
    done = _AT_CURRENT_X.get()
    return [rv.name for rv in tree_terms(model)
            if rv.name not in done and rv in volatile_closure
            and (rv in volatile_vars or rv not in vars_in_trace)]


def refuse_wrong_draws(model, volatile_closure, volatile_vars, vars_in_trace,
                       is_changed) -> None:
    """Raise a ``ValueError`` with :data:`~pymc_trees.bart.term.distribution.PPC_ADVICE` when
    PyMC's posterior predictive, having decided which trace variables to reuse, would draw a
    tree term from its prior (:func:`prior_drawn_tree_terms`) or reuse its training-row
    values although data upstream of its X changed (:func:`stale_tree_terms`).  Called by
    the wrapper of PyMC's ``_maybe_warn_implicit_freeze``
    (:func:`pymc_trees.bart.term.pymc_compat.install`), before PyMC's own warning."""
    drawn = prior_drawn_tree_terms(model, volatile_closure, volatile_vars, vars_in_trace)
    if drawn:
        raise ValueError(
            f"pm.sample_posterior_predictive was about to draw the BARTTree term(s) "
            f"{drawn} from their tree prior (they are in sample_vars, or not in the "
            "trace), which ignores the posterior. " + PPC_ADVICE)
    stale = stale_tree_terms(model, vars_in_trace, volatile_vars, is_changed)
    if stale:
        what = "; ".join(f"{name!r} (its X depends on {', '.join(changed)})"
                         for name, changed in stale.items())
        raise ValueError(
            "pm.sample_posterior_predictive would reuse the training-row values of tree "
            f"term(s) {what} after that data changed (implicitly, or through "
            "freeze_vars), which gives the old rows' f at the new rows. " + PPC_ADVICE)


def refuse_foreign_steps(step, model) -> None:
    """Refuse a step of ``pm.sample`` other than the tree steps that was given a tree term
    (``pm.sample(step=pm.Metropolis([f]))``): PyMC's samplers would move the term's values
    as a vector under its flat density, keep no forests and return a wrong posterior with no
    warning.  Called by :mod:`pymc_trees.bart.term.pymc_compat` when ``pm.sample`` sets up its
    traces, with the steps it assigned."""
    if step is None:
        return
    terms = {model.rvs_to_values[rv]: rv.name for rv in tree_terms(model)}
    todo, methods = [step], []
    while todo:  # compound steps of compound steps, flattened
        s = todo.pop()
        inner = getattr(s, "methods", None)
        if inner is None:
            methods.append(s)
        else:
            todo.extend(inner)
    for method in methods:
        if getattr(method, "sampler_kind", None) in ("cgm", "pg"):  # a tree step
            continue
        hit = [terms[v] for v in getattr(method, "vars", []) if v in terms]
        if hit:
            raise ValueError(
                f"{type(method).__name__} was given the tree term(s) {hit}, but a tree term "
                f"is a sum of trees that only pmt.CGMTreeStep or pmt.PGTreeStep samples "
                f"(PyMC's samplers would move its values under a flat density and keep no "
                f"forests). Leave {hit} out of step= (pm.sample assigns their tree step), or "
                f"pass pmt.CGMTreeStep({hit}) / pmt.PGTreeStep({hit}) for them.")
