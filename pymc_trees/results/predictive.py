"""Posterior predictive sampling at new data for models with tree terms.

PyMC's ``pm.sample_posterior_predictive`` can give a model variable only two kinds of value:
its trace value (for f, the training rows) or a fresh draw from its distribution (for f, the
tree prior).  A tree term at new rows is neither: it is each draw's stored forest evaluated at
the new X, and PyMC has no hook for that.  :func:`sample_posterior_predictive` computes it and
hands PyMC a trace in which f already holds those values, so everything else (the likelihood,
deterministics, linear terms on the new data, coords, groups) is PyMC's own machinery.  The
plain PyMC call refuses loudly instead of answering wrongly (see ``docs/explanation/trace.md``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pytensor.graph.traversal import ancestors
from xarray import DataTree

from pymc_trees.bart.term.distribution import term_inputs, tree_terms
from pymc_trees.bart.term.term_data import column_names, data_value
from pymc_trees.bart.term.ppc_guard import evaluated_at_current_x
from pymc_trees.results.predict import check_new_rows, evaluate
from pymc_trees.bart.term.trace_io import read_forests

__all__ = ["sample_posterior_predictive", "compute_log_likelihood"]

def _as_list(x):
    return None if x is None else ([x] if isinstance(x, str) else list(x))


def sample_posterior_predictive(trace, model=None, *, var_names=None, sample_vars=None,
                                freeze_vars=None, sample_dims=None, random_seed=None,
                                progressbar: bool = True, return_inferencedata: bool = True,
                                extend_inferencedata: bool = False, predictions: bool = False,
                                idata_kwargs=None, backend=None, compile_kwargs=None, **kwargs):
    """``pm.sample_posterior_predictive`` for models with ``BARTTree`` terms.

    Same signature and result as PyMC's function.  Every tree term takes, in each posterior
    draw, the value of that draw's own forests at the model's current X (after
    ``pm.set_data``, with any number of rows): exactly :func:`pymc_trees.predict`.  The other
    variables follow PyMC's rules, so the likelihood is drawn with that draw's f and that
    draw's other parameters, and deterministics that depend on a tree term are recomputed.

    A tree term in ``sample_vars`` or ``freeze_vars`` means the same thing: its value comes from
    the forests (at unchanged X that is the trace value itself).

    Parameters
    ----------
    trace : DataTree
        The result of ``pm.sample`` (or one loaded from netCDF / zarr), with its forests,
        or a selection of its draws: thinned, one chain with or without its dim, or every
        group stacked into ``sample`` (``stack(sample=("chain", "draw"))``).
    sample_dims : list of str, optional
        As in :func:`pymc.sample_posterior_predictive`.  Default: ``["chain", "draw"]``
        when the posterior has both dims, else ``["sample"]`` (stacked draws), else
        ``["draw"]`` (one chain without its dim).
    model, var_names, sample_vars, freeze_vars, random_seed, progressbar,
    return_inferencedata, extend_inferencedata, predictions, idata_kwargs, backend,
    compile_kwargs
        As in :func:`pymc.sample_posterior_predictive`.

    Returns
    -------
    DataTree or dict
        As :func:`pymc.sample_posterior_predictive`.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(200, rng=1)
    >>> with pm.Model() as model:
    ...     X_data = pm.Data("X", X)
    ...     f = pmt.BARTTree("f", X_data, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y, shape=X_data.shape[0])
    ...     idata = pm.sample(random_seed=1)
    >>> X_new, _, _ = friedman1(10, rng=2)
    >>> with model:
    ...     pm.set_data({"X": X_new})
    ...     pred = pmt.sample_posterior_predictive(idata, predictions=True, var_names=["f", "y"])
    """
    model = modelcontext(model)
    terms = tree_terms(model)
    passthrough = dict(random_seed=random_seed, progressbar=progressbar,
                       return_inferencedata=return_inferencedata, predictions=predictions,
                       idata_kwargs=idata_kwargs, backend=backend, compile_kwargs=compile_kwargs,
                       **kwargs)
    if not terms:
        return pm.sample_posterior_predictive(
            trace, model, var_names=var_names, sample_vars=sample_vars, freeze_vars=freeze_vars,
            sample_dims=sample_dims, extend_inferencedata=extend_inferencedata, **passthrough)
    if not isinstance(trace, DataTree) or "posterior" not in trace.children:
        raise TypeError("trace must be the DataTree returned by pm.sample (with its posterior "
                        "and forests groups) for a model with tree terms; got "
                        f"{type(trace).__name__}.")
    dims = _draw_dims(trace["posterior"], sample_dims)
    passthrough["sample_dims"] = list(dims)
    names = {rv.name for rv in terms}
    var_names, sample_vars, freeze_vars = (_as_list(v) for v in
                                           (var_names, sample_vars, freeze_vars))
    if var_names is None and sample_vars is not None:
        var_names = list(sample_vars)  # PyMC's default output when sample_vars is given
    sample_vars = [v for v in sample_vars or [] if v not in names] or None
    freeze_vars = [v for v in freeze_vars or [] if v not in names] + sorted(names)

    posterior = trace["posterior"].to_dataset()
    # Deterministics that depend on a tree term are recomputed from the new values.
    stale = [d.name for d in model.deterministics
             if any(a in terms for a in ancestors([d])) and d.name in posterior]
    posterior = posterior.drop_vars(stale)
    for rv in terms:
        tf = read_forests(trace, rv.name)
        current = column_names(term_inputs(rv).X, model)
        if tf.columns is not None and current is not None and tuple(current) != tf.columns:
            raise ValueError(f"The columns of X for {rv.name!r} are now {list(current)} but "
                             f"the trees were fit on {list(tf.columns)}. pm.set_data takes "
                             "arrays: pass the new rows with the training columns in the "
                             "training order (and the same coords).")
        X = check_new_rows(data_value(term_inputs(rv).X, rv.owner.op.missing), None,
                           tf.n_features, what=f"The current X of {rv.name!r}",
                           schema=tf.schema)
        _check_same_draws(tf, posterior, dims, rv.name)
        rows = (f"__{rv.name}_row",) if tf.outputs is None else (f"__{rv.name}_output",
                                                                 f"__{rv.name}_row")
        values = tf.wrap(evaluate(tf, X), rows).transpose(*dims, *rows)
        posterior = posterior.drop_vars(rv.name, errors="ignore")  # absent: keep_values=False
        posterior[rv.name] = values.variable
    groups = {"posterior": posterior}
    for g in ("constant_data", "observed_data"):
        if g in trace.children:
            groups[g] = trace[g].to_dataset()
    with evaluated_at_current_x(names):
        result = pm.sample_posterior_predictive(
            DataTree.from_dict(groups), model, var_names=var_names, sample_vars=sample_vars,
            freeze_vars=freeze_vars, extend_inferencedata=False, **passthrough)
    if extend_inferencedata and return_inferencedata:
        for group in result.children:
            trace[group] = result[group]
        return trace
    return result


def _draw_dims(posterior, sample_dims=None) -> tuple[str, ...]:
    """The dims of the posterior draws: ``sample_dims`` when given; otherwise
    ``("chain", "draw")``, or for a selection without them the ones it has: ``("sample",)``
    for stacked draws (``stack(sample=("chain", "draw"))`` on every group) and ``("draw",)``
    for one chain selected without its dim (``idata.sel(chain=1)``).

    Parameters
    ----------
    posterior : Dataset or DataTree
        The posterior group.
    sample_dims : sequence of str, optional
        As in :func:`pymc.sample_posterior_predictive`.

    Returns
    -------
    tuple of str
    """
    if sample_dims is not None:
        return tuple(sample_dims)
    have = set(posterior.dims)
    for dims in (("chain", "draw"), ("sample",), ("draw",)):
        if set(dims) <= have:
            return dims
    return ("chain", "draw")  # refused by _check_same_draws, with the way to select draws


def _check_same_draws(tf, posterior, dims: tuple[str, ...], name: str) -> None:
    """Refuse forests whose draws are not the posterior's (the same sample dims, sizes and
    coordinate labels), with how to select draws so that they are."""
    if not set(dims) <= set(posterior.dims) or set(tf.sample_dims) != set(dims):
        raise ValueError(
            f"The posterior's sample dims must be {list(dims)} (sample_dims), and so must "
            f"the forests' of {name!r}; they are {list(tf.sample_dims)}. Select draws on the "
            "whole DataTree with idata.sel(...) / idata.isel(...) (or stack every group alike, "
            "into 'sample'), or pass sample_dims.")
    for d in dims:
        if d not in posterior.dims or not np.array_equal(tf.samples[d].values,
                                                         posterior[d].values):
            raise ValueError(
                f"The forests of {name!r} do not match the posterior draws (the {d!r} "
                "coordinates differ); select draws on the whole DataTree (idata.sel(...)) so "
                "that both groups stay aligned.")


def compute_log_likelihood(idata, var_names=None, *, model=None,
                           extend_inferencedata: bool = True, **kwargs):
    """``pm.compute_log_likelihood`` for models with ``BARTTree`` terms, also when a term's
    values were left out of the trace (``keep_values=False``, the default above
    ``KEEP_VALUES_MAX_ROWS`` training rows).

    Every such term takes, in each draw, the values of that draw's own forests at the model's
    current X (the training rows, unless ``pm.set_data`` changed them): exactly the values
    the trace would have held.  Then PyMC computes the pointwise log likelihood as usual,
    for ``az.loo`` and ``az.waic``.

    Parameters
    ----------
    idata : DataTree
        The result of ``pm.sample`` (with its ``forests`` group), or a selection of its
        draws as :func:`sample_posterior_predictive` takes them.
    var_names, extend_inferencedata, **kwargs
        As in :func:`pymc.compute_log_likelihood`; its ``sample_dims`` defaults as in
        :func:`sample_posterior_predictive` (stacked draws need none).
    model : pymc.Model, optional
        Default: the model on the context stack.

    Returns
    -------
    DataTree or Dataset
        ``idata`` with a ``log_likelihood`` group (shape ``(chain, draw, *observed_shape)`` per
        observed variable), or that group alone with ``extend_inferencedata=False``.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(200, rng=1)
    >>> with pm.Model() as model:
    ...     X_data = pm.Data("X", X)
    ...     f = pmt.BARTTree("f", X_data, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y, shape=X_data.shape[0])
    ...     idata = pm.sample(random_seed=1)
    >>> import arviz as az
    >>> idata = pmt.compute_log_likelihood(idata, model=model)
    >>> loo = az.loo(idata)
    """
    model = modelcontext(model)
    posterior = idata["posterior"].to_dataset()
    dims = _draw_dims(posterior, kwargs.pop("sample_dims", None))
    for rv in tree_terms(model):
        if rv.name in posterior:
            continue
        tf = read_forests(idata, rv.name)
        X = check_new_rows(data_value(term_inputs(rv).X, rv.owner.op.missing), None,
                           tf.n_features, what=f"The current X of {rv.name!r}",
                           schema=tf.schema)
        rv_dims = model.named_vars_to_dims.get(rv.name) or tuple(
            f"{rv.name}_dim_{j}" for j in range(1 if tf.outputs is None else 2))
        _check_same_draws(tf, posterior, dims, rv.name)
        values = tf.wrap(evaluate(tf, X), rv_dims).transpose(*dims, *rv_dims)
        posterior[rv.name] = values.variable
    ds = pm.compute_log_likelihood(DataTree.from_dict({"posterior": posterior}),
                                   var_names=var_names, model=model, sample_dims=dims,
                                   extend_inferencedata=False, **kwargs)
    if extend_inferencedata:
        idata["log_likelihood"] = ds
        return idata
    return ds
