"""Plots of interpretation results with highest-density intervals across posterior draws:
variable importance, partial dependence (lines, heat maps), a grid of partial dependence
panels, and the convergence of the forests' predictions across chains.  matplotlib is
imported when a plot is drawn."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import xarray as xr

from pymc_trees.interpret.dependence import partial_dependence, resolve_column
from pymc_trees.interpret.importance import variable_importance
from pymc_trees.interpret.sources import interpretation_source, require_rows

__all__ = ["plot_variable_importance", "plot_partial_dependence", "plot_convergence",
           "plot_partial_dependence_grid", "hdi_summary", "panel_grid"]

# the dims a result can have over posterior draws: (chain, draw), a selection that dropped
# one of them, or draws stacked into "sample"
_DRAW_DIMS = ("chain", "draw", "sample")


def _axes(ax):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    return ax


def hdi_summary(da: xr.DataArray, hdi_prob: float):
    """Posterior mean and HDI bounds (lower, upper) over (chain, draw); for a DataArray
    without sample dims the values themselves and no bounds (None)."""
    if not 0 < hdi_prob < 1:
        raise ValueError(f"hdi_prob must lie in (0, 1); got {hdi_prob!r}.")
    dims = [d for d in da.dims if d in _DRAW_DIMS]
    if not dims:
        return da, None, None
    import arviz as az

    mean = da.mean(dims, skipna=True)
    h = az.hdi(da, prob=hdi_prob, dim=dims, skipna=True)
    return mean, h.sel(ci_bound="lower", drop=True), h.sel(ci_bound="upper", drop=True)


def _outputs(da: xr.DataArray) -> list:
    if "output" not in da.dims:
        return [None]
    return list(da["output"].values)


def plot_variable_importance(result: xr.DataArray, ax=None, hdi_prob: float = 0.94):
    """Plot a :func:`variable_importance` result: per column the posterior mean (a point)
    and its highest-density interval (a bar), columns sorted by mean importance (largest on
    top).  A boosting result has points only; several outputs are drawn side by side with a
    legend.

    Parameters
    ----------
    result : xarray.DataArray
        Output of :func:`variable_importance`, dims ``([chain, draw,] [output,] column)``.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    hdi_prob : float, default 0.94
        Probability of the highest-density intervals.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> imp = pmt.variable_importance(idata, X, kind="permutation", rng=1)
    >>> ax = pmt.plot_variable_importance(imp)
    """
    if not isinstance(result, xr.DataArray) or "column" not in result.dims:
        raise TypeError("result must be the DataArray returned by variable_importance (with a "
                        f"'column' dim); got {type(result).__name__}.")
    ax = _axes(ax)
    mean, lo, hi = hdi_summary(result, hdi_prob)
    outputs = _outputs(result)
    order_key = mean.mean("output", skipna=True) if "output" in mean.dims else mean
    order = np.argsort(np.nan_to_num(order_key.values, nan=-np.inf), kind="stable")
    cols = result["column"].values[order]
    ypos = np.arange(cols.size)
    width = 0.6
    for i, out in enumerate(outputs):
        sel = {} if out is None else {"output": out}
        shift = 0.0 if len(outputs) == 1 else width * (i / (len(outputs) - 1) - 0.5)
        mv = mean.sel(sel).values[order]
        label = None if out is None else f"output {out}"
        line = ax.plot(mv, ypos + shift, "o", label=label)[0]
        if lo is not None:
            # the interval as a line of its own: a skewed posterior (a column most draws
            # never split on) can have its mean outside its HDI, which error bars cannot draw
            lv, hv = lo.sel(sel).values[order], hi.sel(sel).values[order]
            ax.hlines(ypos + shift, lv, hv, color=line.get_color())
    ax.set_yticks(ypos, [str(c) for c in cols])
    what = {"inclusion": "share of splits", "permutation": "permutation importance"}.get(
        result.attrs.get("kind"), "importance")
    band = f" ({hdi_prob:.0%} HDI)" if lo is not None else ""
    ax.set_xlabel(what + band)
    if len(outputs) > 1:
        ax.legend()
    return ax


def plot_partial_dependence(result: xr.Dataset, ax=None, hdi_prob: float = 0.94):
    """Plot a :func:`partial_dependence` result.

    * 1-D, numeric column: the posterior mean of the partial dependence as a line with its
      highest-density band; ICE curves (the posterior mean of each row's curve) as thin
      lines.
    * 1-D, categorical or ordinal column: points at the levels with interval bars; ICE curves
      as thin lines joining the levels.
    * 2-D: a heat map of the posterior mean of the partial dependence (numeric axes on their
      scale when the grid is increasing, levels as labelled positions).

    A boosting result has no bands.  Several outputs: one curve each with a legend (1-D
    partial dependence only; for ICE curves and 2-D maps select one with
    ``result.sel(output=...)``).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`partial_dependence`.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    hdi_prob : float, default 0.94
        Probability of the highest-density band.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> ax = pmt.plot_partial_dependence(pmt.partial_dependence(idata, X, 3), hdi_prob=0.9)
    """
    if not isinstance(result, xr.Dataset) or "grid_dims" not in result.attrs:
        raise TypeError("result must be the Dataset returned by partial_dependence; got "
                        f"{type(result).__name__}.")
    gdims = list(result.attrs["grid_dims"])
    kinds = list(result.attrs["kinds"])
    names = list(result.attrs["columns"])
    var = result.attrs.get("var_name", "f")
    outputs = _outputs(next(iter(result.data_vars.values())))
    if "average" in result:
        avg = result["average"]
    else:
        avg = result["individual"].mean("obs")
    ax = _axes(ax)
    if len(gdims) == 2:
        if len(outputs) > 1:
            raise ValueError("A 2-D partial dependence of several outputs: select one with "
                             "result.sel(output=...) before plotting.")
        return _heatmap(ax, avg, gdims, kinds, names, var,
                        result.attrs.get("source") == "bart")
    d, categorical = gdims[0], kinds[0] != "numeric"
    x_values = result[d].values
    x = np.arange(x_values.size) if categorical else x_values
    if "individual" in result:
        if len(outputs) > 1:
            raise ValueError("ICE curves of several outputs: select one with "
                             "result.sel(output=...) before plotting.")
        ice = result["individual"]
        ice = ice.mean([d for d in ice.dims if d in _DRAW_DIMS])
        lines = ice.transpose("obs", d).values
        alpha = float(np.clip(5.0 / max(lines.shape[0], 1), 0.05, 0.5))
        ax.plot(x, lines.T, color="0.5", lw=0.6, alpha=alpha,
                marker="." if categorical else None)
    for i, out in enumerate(outputs):
        sel = {} if out is None else {"output": out}
        mean, lo, hi = hdi_summary(avg.sel(sel), hdi_prob)
        label = None if out is None else f"output {out}"
        color = f"C{i}"
        if categorical:
            if lo is not None:
                mv = mean.values
                ax.errorbar(x, mv, yerr=np.vstack([mv - lo.values, hi.values - mv]), fmt="o",
                            color=color, capsize=3, label=label)
            else:
                ax.plot(x, mean.values, "o", color=color, label=label)
        else:
            ax.plot(x, mean.values, color=color, lw=2, label=label)
            if lo is not None:
                ax.fill_between(x, lo.values, hi.values, color=color, alpha=0.3, lw=0)
    if categorical:
        ax.set_xticks(x, [str(v) for v in x_values])
    ax.set_xlabel(names[0])
    ax.set_ylabel(f"partial dependence of {var}")
    if len(outputs) > 1:
        ax.legend()
    return ax


def _heatmap(ax, avg: xr.DataArray, gdims, kinds, names, var, posterior: bool):
    avg = avg.mean([d for d in avg.dims if d in _DRAW_DIMS])
    z = avg.transpose(gdims[1], gdims[0]).values  # rows: second column (y axis)
    axes = []
    for d, k in zip(gdims, kinds):
        v = avg[d].values
        numeric_scale = (k == "numeric" and v.size > 1 and np.all(np.isfinite(v))
                         and np.all(np.diff(v) > 0))
        axes.append((v.astype(float) if numeric_scale else np.arange(v.size), v,
                     numeric_scale))
    (xc, xv, xs), (yc, yv, ys) = axes
    mesh = ax.pcolormesh(xc, yc, z, shading="nearest", cmap="viridis")
    if not xs:
        ax.set_xticks(xc, [_tick(v) for v in xv])
    if not ys:
        ax.set_yticks(yc, [_tick(v) for v in yv])
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    label = f"partial dependence of {var}" + (" (posterior mean)" if posterior else "")
    ax.figure.colorbar(mesh, ax=ax, label=label)
    return ax


def panel_grid(count: int, ax=None, figsize=None, what: str = "panel", **subplots):
    """``count`` panels: the given Axes (at least ``count``, else a ValueError that names
    ``what``), or a new figure of three panels a row with the unused ones hidden."""
    import matplotlib.pyplot as plt

    if ax is not None:
        axes = np.asarray(ax, dtype=object).ravel()
        if axes.size < count:
            raise ValueError(f"ax has {axes.size} Axes for {count} {what}s; pass one per "
                             f"{what}.")
        return axes
    ncol = min(3, count)
    nrow = -(-count // ncol)
    if callable(figsize):
        figsize = figsize(nrow, ncol)
    _, grid = plt.subplots(nrow, ncol, figsize=figsize, squeeze=False, **subplots)
    axes = grid.ravel()
    for extra in axes[count:]:
        extra.set_visible(False)
    return axes


def _tick(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.3g}"
    return str(v)


def plot_convergence(idata, var_name: str = "f", X=None, ax=None,
                     figsize: tuple[float, float] | None = None,
                     ess_threshold: float | None = None, rhat_threshold: float = 1.01):
    """Convergence of a tree term over all its rows: the empirical CDFs of the bulk and tail
    effective sample sizes of f at every row (left) and of its R-hat (right), with
    thresholds (pymc-bart's ``plot_convergence``).

    Parameters
    ----------
    idata : DataTree
        The result of ``pm.sample`` for a model with the ``BARTTree`` term ``var_name``.
    var_name : str, default "f"
    X : array_like or DataFrame of shape (n, p), optional
        Rows at which f is evaluated from each draw's forests (:func:`pymc_trees.predict`).
        By default the term's values at the training rows in the posterior; needed when they
        were not kept (above 50,000 rows, or ``keep_values=False``).
    ax : sequence of two matplotlib Axes, optional
        Where to draw (default: a new figure with two panels).
    figsize : tuple of float, optional
        Size of the new figure (ignored with ``ax``).
    ess_threshold : float, optional
        Reference line of the ESS panel; default ``100 * chains`` (Vehtari et al. 2021).
    rhat_threshold : float, default 1.01
        Reference line of the R-hat panel.

    Returns
    -------
    ndarray of two matplotlib Axes

    Raises
    ------
    ValueError
        When the posterior has no values of ``var_name`` and X is not given, or for
        thresholds that are not positive numbers.

    Notes
    -----
    Every row of f (and every output of a term of shape (k, n)) is one value of each
    diagnostic (``az.ess(..., method="bulk")``, ``method="tail"``, ``az.rhat``); a row whose
    value is constant over the draws (NaN diagnostics) is left out.  The share of rows left
    of the ESS line or right of the R-hat line is in the legend.  R-hat compares chains, so
    for a trace of one chain the R-hat panel holds a note saying so instead of a curve.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> axes = pmt.interpret.plot_convergence(idata, "f")   # ECDFs of ESS and R-hat over rows
    """
    import arviz as az
    import matplotlib.pyplot as plt

    if X is not None:
        from pymc_trees.results.predict import predict

        f = predict(idata, X, var_name=var_name)
    else:
        post = idata["posterior"] if "posterior" in idata.children else None
        if post is None or var_name not in post.data_vars:
            raise ValueError(f"The posterior has no values of {var_name!r} (a term above "
                             "50,000 rows, or keep_values=False, leaves them out); pass X, "
                             "the rows at which to evaluate its forests (the training X).")
        f = post[var_name]
    f = xr.DataArray(f)
    chains = int(f.sizes.get("chain", 1))
    if ess_threshold is None:
        ess_threshold = 100.0 * chains
    for nm, v in (("ess_threshold", ess_threshold), ("rhat_threshold", rhat_threshold)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
            raise ValueError(f"{nm} must be a positive number; got {v!r}.")
    rows = [d for d in f.dims if d not in ("chain", "draw")]
    f = f.stack(row=rows) if rows else f.expand_dims(row=[0], axis=-1)
    diag = {"bulk ESS": az.ess(f, method="bulk"), "tail ESS": az.ess(f, method="tail")}
    if chains > 1:  # R-hat compares chains; one chain has none to compare
        diag["R-hat"] = az.rhat(f)
    vals = {k: np.asarray(v.values, dtype=np.float64).ravel() for k, v in diag.items()}
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=figsize)
    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != 2:
        raise ValueError(f"ax must be two Axes (ESS, R-hat); got {axes.size}.")
    for panel, keys, line, bad in ((axes[0], ("bulk ESS", "tail ESS"), ess_threshold, "below"),
                                   (axes[1], ("R-hat",), rhat_threshold, "above")):
        drawn = 0
        for key in keys:
            if key not in vals:
                continue
            v = np.sort(vals[key][np.isfinite(vals[key])])
            if v.size == 0:
                continue
            share = np.mean(v < line) if bad == "below" else np.mean(v > line)
            panel.step(v, np.arange(1, v.size + 1) / v.size, where="post",
                       label=f"{key} ({share:.0%} of rows {bad} {line:g})")
            drawn += 1
        panel.set_ylabel("share of rows")
        if drawn:
            panel.axvline(line, color="grey", ls="--", lw=1)
            panel.legend(fontsize="small")
        else:
            note = ("R-hat needs two chains or more;\nthis trace has one" if chains < 2
                    and "R-hat" in keys else f"{var_name} is constant over the draws\n"
                    "at every row: nothing to diagnose")
            panel.text(0.5, 0.5, note, transform=panel.transAxes, ha="center", va="center")
    axes[0].set_xlabel(f"effective sample size of {var_name} per row")
    axes[1].set_xlabel(f"R-hat of {var_name} per row")
    return axes


def _output_position(output, labels, kind: str, var_name: str) -> int | None:
    """Position of ``output`` among the ``output`` labels of a model (None: draw them all),
    with the errors of :func:`plot_partial_dependence_grid`."""
    if labels is None:
        if output is not None:
            raise ValueError(f"output={output!r} selects one output of a model with several, "
                             f"but {var_name!r} has one output; leave output out.")
        return None
    shown = [v.item() if isinstance(v, np.generic) else v for v in labels]
    if output is None:
        if kind != "average":
            raise ValueError(f"ICE curves (kind={kind!r}) of {var_name!r}, which has "
                             f"{len(shown)} outputs, are drawn for one output at a time: pass "
                             f"output=, one of {shown}.")
        return None
    want = output.item() if isinstance(output, np.generic) else output
    label = not isinstance(want, bool) and np.ndim(want) == 0  # True is not the output 1
    hits = [i for i, v in enumerate(shown) if label and not isinstance(v, bool) and v == want]
    if len(hits) != 1:
        raise ValueError(f"output={output!r} is not an output of {var_name!r}; its outputs "
                         f"are {shown} (labels of the 'output' dim of partial_dependence's "
                         "result).")
    return hits[0]


def plot_partial_dependence_grid(source, X, columns=None, var_name: str = "f", func=None,
                                 var_discrete=None, kind: str = "average",
                                 grid_resolution: int = 20, hdi_prob: float = 0.94,
                                 max_draws: int | None = 200, ax=None,
                                 figsize: tuple[float, float] | None = None,
                                 sharey: bool = True, output=None):
    """Partial dependence (and ICE curves) of several columns, one panel each (pymc-bart's
    ``plot_pdp`` and ``plot_ice``).

    Parameters
    ----------
    source : DataTree or fitted boosting estimator
        As for :func:`partial_dependence`.
    X : array_like or DataFrame of shape (n, p)
        Rows to average over, with the training columns.
    columns : sequence of str or int, optional
        The columns, by name or position (default: every column, in the training order).
    var_name : str, default "f"
    func : callable, optional
        Applied to the model's values before they are averaged over the rows, so that a
        panel shows the partial dependence of ``func(f)``: ``np.exp`` for a log link,
        ``scipy.special.expit`` for a logit.  It receives the ICE values as an array of
        dims ``(chain, draw, [output,] obs, grid)`` (those of :func:`partial_dependence`'s
        ``individual``) and must return an array of that shape; a softmax over the outputs
        of a term of shape (k, n) is ``lambda f: scipy.special.softmax(f, axis=2)``.
    var_discrete : sequence of str or int, optional
        Numeric columns to evaluate at each of their distinct values in X and draw as points
        (pymc-bart's ``var_discrete``); categorical columns always are.
    kind : {"average", "individual", "both"}, default "average"
    grid_resolution, max_draws
        As for :func:`partial_dependence`.
    hdi_prob : float, default 0.94
    ax : sequence of matplotlib Axes, optional
        At least one per column (default: a new figure, three panels a row).
    figsize : tuple of float, optional
        Size of the new figure (ignored with ``ax``).
    sharey : bool, default True
        One y range for every panel.
    output : label, optional
        The one output to draw, for a term of shape (k, n) or a boosting model with several
        outputs (a multi-class classifier, a quantile regression at several quantiles): a
        label of the ``output`` dim of :func:`partial_dependence`'s result, ``0 .. k-1`` for
        a BART term, the class or the quantile for a boosting model.  Required for ICE
        curves (``kind="individual"`` or ``"both"``) of such a model; without it
        ``kind="average"`` draws one curve per output with a legend.  ``func`` still gets
        every output (so a softmax over them works); the output is selected after it.

    Returns
    -------
    ndarray of matplotlib Axes, one per column (unused panels of a new figure are hidden).

    Raises
    ------
    ValueError
        As :func:`partial_dependence`; for a ``func`` that changes the shape, too few
        ``ax``, an ``output`` that is not a label of the model's outputs (or given for a
        model with one output), or ICE curves of several outputs without ``output``.

    Examples
    --------
    The source may be a BART trace or a fitted boosting estimator (no sampling here):

    >>> import pymc_trees as pmt
    >>> from pymc_trees.boosting import BoostedTreesRegressor
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> est = BoostedTreesRegressor(n_estimators=50).fit(X, y)
    >>> axes = pmt.plot_partial_dependence_grid(est, X, columns=[0, 1, 3], kind="both")
    >>> len(axes)
    3
    """

    if kind not in ("average", "individual", "both"):
        raise ValueError(f"kind must be 'average', 'individual' or 'both'; got {kind!r}.")
    require_rows(X)
    src = interpretation_source(source, var_name, max_draws)
    pick = _output_position(output, src.outputs, kind, src.var_name)
    A = src.encode(X)
    schema = src.schema()
    cols = list(range(schema.p)) if columns is None else [
        resolve_column(c, schema) for c in ([columns] if isinstance(columns, (str, int))
                                             else columns)]
    discrete = set() if var_discrete is None else {
        resolve_column(c, schema) for c in ([var_discrete]
                                             if isinstance(var_discrete, (str, int))
                                             else var_discrete)}
    axes = panel_grid(len(cols), ax, figsize, "column")
    for panel, j in zip(axes, cols):
        name = schema.names[j]
        grid = None
        if j in discrete and schema.kinds[j] == "numeric":
            v = A[:, j]
            grid = np.unique(v[~np.isnan(v)])
        want = "both" if func is not None else kind
        res = partial_dependence(source, X, name if schema.named else j, var_name=var_name,
                                 grid=grid, grid_resolution=grid_resolution, kind=want,
                                 max_draws=max_draws)
        if func is not None:
            ind = res["individual"]
            out = np.asarray(func(ind.values))
            if out.shape != ind.shape:
                raise ValueError(f"func returned shape {out.shape} for values of shape "
                                 f"{ind.shape} (dims {ind.dims}); it must keep the shape.")
            res["individual"] = ind.copy(data=out)
            res["average"] = res["individual"].mean("obs")
            if kind == "average":
                res = res.drop_vars("individual")
            elif kind == "individual":
                res = res.drop_vars("average")
        if j in discrete and schema.kinds[j] == "numeric":
            res.attrs["kinds"] = ["ordinal"]  # drawn as points at its values
        if pick is not None:
            res = res.isel(output=pick)
        plot_partial_dependence(res, ax=panel, hdi_prob=hdi_prob)
        if pick is not None:
            panel.set_ylabel(f"{panel.get_ylabel()} (output {src.outputs[pick]})")
    if sharey and len(cols) > 1:
        lo = min(a.get_ylim()[0] for a in axes[:len(cols)])
        hi = max(a.get_ylim()[1] for a in axes[:len(cols)])
        for a in axes[:len(cols)]:
            a.set_ylim(lo, hi)
    return axes[:len(cols)]
