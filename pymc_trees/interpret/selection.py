"""Variable selection over submodels of a fitted tree term (pymc-bart's
``compute_variable_importance``, ``plot_variable_importance`` and ``plot_scatter_submodels``).

A *submodel* keeps some columns and marginalises the others out of every posterior draw's
forests by the rows of X: at a split on a dropped column a row goes to both children,
weighted by the shares of X's rows that reach each (Friedman 2001's recursion; pymc-bart's
weighting by training rows), so no refit is needed.  Its fit to the full model is the
squared Pearson correlation R^2 between the two at the rows of X, per draw.

* :func:`select_variables` - the submodels of 1, 2, ..., p columns along a ranking (a
  backward elimination on R^2, or the inclusion shares), their R^2 per draw, a reference
  R^2 between two draws of the full model and a recommended number of columns.
* :func:`plot_submodels` - R^2 against the number of columns, with HDIs and the reference.
* :func:`plot_scatter_submodels` - each submodel's posterior mean against the full model's.

Formulas and choices: ``docs/interpret.md``.
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from pymc_trees.interpret.plots import hdi_summary, panel_grid
from pymc_trees.interpret.sources import interpretation_source, require_rows

__all__ = ["select_variables", "plot_submodels", "plot_scatter_submodels"]

METHODS = ("backward", "inclusion")


def _r2(full: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """Squared Pearson correlation over the last axis: 0 where ``sub`` is constant and
    ``full`` is not, NaN where ``full`` is constant."""
    a = full - full.mean(axis=-1, keepdims=True)
    b = sub - sub.mean(axis=-1, keepdims=True)
    va = np.einsum("...i,...i->...", a, a)
    vb = np.einsum("...i,...i->...", b, b)
    cov = np.einsum("...i,...i->...", a, b)
    den = va * vb
    out = np.divide(cov * cov, den, out=np.zeros_like(den), where=den > 0)
    # a constant draw of f is explained by nothing
    out[va <= 0] = np.nan
    return np.minimum(out, 1.0)


def select_variables(source, X, var_name: str = "f", method: str = "backward",
                     max_draws: int | None = 100) -> xr.Dataset:
    """Choose how many columns a tree term needs: the submodels of 1, 2, ..., p columns
    along a ranking of the columns, each compared with the full model per posterior draw.

    Parameters
    ----------
    source : DataTree
        The result of ``pm.sample`` for a model with the ``BARTTree`` term ``var_name``.
    X : array_like or DataFrame of shape (n, p)
        Rows at which submodels are compared, with the training columns: the training X,
        or a sample of its rows (their shares at each split weight the marginalised
        columns, so they should follow the training distribution).
    var_name : str, default "f"
    method : {"backward", "inclusion"}, default "backward"
        ``"backward"``: backward elimination; starting from every column, drop in turn the
        column whose removal keeps the largest mean R^2 (p (p - 1) / 2 submodels, each
        re-evaluating only the trees that split on the candidate).  ``"inclusion"``: rank
        the columns by their mean share of splits (:func:`variable_importance`'s
        ``"inclusion"``; pymc-bart's ``"VI"``) and keep the first 1, 2, ... (p - 1
        submodels; faster, and blind to a column that splits often but matters little).
    max_draws : int or None, default 100
        At most this many posterior draws, evenly spaced in each chain (None: every draw).

    Returns
    -------
    xarray.Dataset
        Dim ``n_columns`` (1, ..., p: the submodel that keeps the first ``n_columns``
        columns of the ranking), with the coordinate ``column`` along it (the column each
        step adds, most important first).  Variables:

        * ``r2`` (chain, draw, [output,] n_columns) - squared Pearson correlation, over the
          rows of X, between a draw's submodel and the same draw's full model (1 at
          ``n_columns = p``);
        * ``reference`` (chain, draw, [output]) - the same between the full model at a draw
          and at a draw half the kept draws away (the other chain, for two): how much f
          changes from one posterior draw to another;
        * ``submodel_mean`` ([output,] n_columns, obs) and ``full_mean`` ([output,] obs) -
          posterior means over the kept draws, for :func:`plot_scatter_submodels`.

        Attributes ``method``, ``var_name``, ``reference_r2`` (the mean of ``reference``) and
        ``recommended``: the fewest columns whose mean R^2 reaches ``reference_r2``, i.e.
        whose submodel differs from the full model less than two posterior draws differ
        (p when no draw pair is available).  A term of shape (k, n) has an ``output`` dim,
        and its steps compare means over outputs.

    Raises
    ------
    ValueError
        For an unknown ``method``, an X without the training columns or rows, or a bad
        ``max_draws``.
    TypeError
        When ``source`` is not a DataTree with the term (a boosting model has no posterior
        draws to compare with: use :func:`variable_importance` with
        ``kind="permutation"``).

    Notes
    -----
    Submodels marginalise columns out of the fitted forests; they are not refitted, so the
    ranking describes what the full model uses, not what a model without a column would
    learn.  R^2 ignores a shift and a scale between the submodel and the full model.

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
    >>> sel = pmt.select_variables(idata, X)   # submodels of 1 to p columns against the full model
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}.")
    require_rows(X)
    src = interpretation_source(source, var_name, max_draws)
    if src.kind != "bart":
        raise TypeError("select_variables compares submodels per posterior draw, so source "
                        "must be the DataTree of a model with a BARTTree term; for a boosting "
                        "model use variable_importance(est, X, kind='permutation').")
    A = src.encode(X)
    names = np.asarray(src.schema().names)
    n, p = A.shape
    trees = src.trees
    S, K = src.n_samples, src.n_outputs

    def values(margin):  # (R, n) -> (S, K, n)
        return src.response(src.margin(margin))

    f_margin = trees.predict(A)
    full = values(f_margin)
    r2 = np.empty((S, K, p))
    r2[:, :, p - 1] = _r2(full, full)
    sub_mean = np.empty((K, p, n))
    sub_mean[:, p - 1] = full.mean(axis=0)
    if method == "inclusion":
        counts = trees.counts(p).reshape(S, K, p).astype(np.float64)
        total = counts.sum(axis=-1, keepdims=True)
        share = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
        ranking = list(np.argsort(-share.mean(axis=(0, 1)), kind="stable"))
        for keep in range(1, p):
            excluded = np.ones(p, bool)
            excluded[ranking[:keep]] = False
            sub = values(trees.predict(A, excluded=excluded))
            r2[:, :, keep - 1] = _r2(full, sub)
            sub_mean[:, keep - 1] = sub.mean(axis=0)
    else:
        reads = [trees.reads([j]) for j in range(p)]
        excluded = np.zeros(p, bool)
        cur = f_margin
        dropped: list[int] = []
        for keep in range(p - 1, 0, -1):
            best = None
            for j in range(p):
                if excluded[j]:
                    continue
                if reads[j].any():
                    more = excluded.copy()
                    more[j] = True
                    # only the trees that split on j change when j is dropped too
                    cand = (cur - trees.predict(A, reads[j], offsets=False, excluded=excluded)
                            + trees.predict(A, reads[j], offsets=False, excluded=more))
                else:
                    cand = cur
                r = _r2(full, values(cand))
                score = np.nanmean(r) if np.isfinite(r).any() else -np.inf
                if best is None or score > best[0]:
                    best = (score, j, cand, r)
            _, j, cur, r = best
            excluded[j] = True
            dropped.append(j)
            r2[:, :, keep - 1] = r
            sub_mean[:, keep - 1] = values(cur).mean(axis=0)
        ranking = [int(np.flatnonzero(~excluded)[0])] + dropped[::-1]
    if S > 1:
        other = (np.arange(S) + S // 2) % S
        ref = _r2(full, full[other])
    else:
        ref = np.full((S, K), np.nan)
    ref_mean = float(np.nanmean(ref)) if np.isfinite(ref).any() else np.nan
    mean_r2 = np.array([np.nanmean(r2[:, :, k]) if np.isfinite(r2[:, :, k]).any() else np.nan
                        for k in range(p)])
    reach = np.flatnonzero(mean_r2 >= ref_mean) if np.isfinite(ref_mean) else np.array([])
    recommended = int(reach[0]) + 1 if reach.size else p
    ncols = np.arange(1, p + 1)
    along = {"n_columns": ncols, "column": ("n_columns", names[ranking])}
    data = {
        "r2": src.wrap(r2, ("n_columns",), along, "r2", {}),
        "reference": src.wrap(ref, (), {}, "reference", {}),
    }
    out_dims = () if src.outputs is None else ("output",)
    out_coords = {} if src.outputs is None else {"output": src.outputs}
    sm = sub_mean if src.outputs is not None else sub_mean[0]
    fm = full.mean(axis=0) if src.outputs is not None else full.mean(axis=0)[0]
    data["submodel_mean"] = xr.DataArray(sm, dims=out_dims + ("n_columns", "obs"),
                                         coords={**out_coords, **along, "obs": np.arange(n)})
    data["full_mean"] = xr.DataArray(fm, dims=out_dims + ("obs",),
                                     coords={**out_coords, "obs": np.arange(n)})
    attrs = {"method": method, "var_name": src.var_name, "reference_r2": ref_mean,
             "recommended": recommended}
    return xr.Dataset(data, attrs=attrs)


def _check_result(result) -> None:
    if not isinstance(result, xr.Dataset) or "r2" not in result or \
            "n_columns" not in result.dims:
        raise TypeError("result must be the Dataset returned by select_variables; got "
                        f"{type(result).__name__}.")


def _labels(result: xr.Dataset) -> list[str]:
    cols = [str(c) for c in result["column"].values]
    return [c if i == 0 else "+ " + c for i, c in enumerate(cols)]


def plot_submodels(result: xr.Dataset, ax=None, figsize: tuple[float, float] | None = None,
                   hdi_prob: float = 0.94):
    """Plot a :func:`select_variables` result: per number of columns, the posterior mean R^2
    of the submodel against the full model (a point) and its HDI (a bar), the columns added
    along the x axis; the reference R^2 between two posterior draws as a dashed line with
    its HDI as a band, and the recommended number of columns as a dotted line (pymc-bart's
    ``plot_variable_importance`` of ``compute_variable_importance``'s result).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`select_variables`.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).
    figsize : tuple of float, optional
        Size of the new figure (ignored with ``ax``).
    hdi_prob : float, default 0.94

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        For a ``result`` that is not the Dataset of :func:`select_variables`.

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
    >>> sel = pmt.select_variables(idata, X)
    >>> ax = pmt.plot_submodels(sel)   # R^2 of 1, 2, ... columns against the full model
    """
    import matplotlib.pyplot as plt

    _check_result(result)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    r2 = result["r2"]
    ref = result["reference"]
    if "output" in r2.dims:  # the steps compare means over outputs
        r2 = r2.mean("output")
        ref = ref.mean("output")
    mean, lo, hi = hdi_summary(r2, hdi_prob)
    x = np.arange(r2.sizes["n_columns"])
    line = ax.plot(x, mean.values, "o-", mfc="white", label="submodel")[0]
    if lo is not None:
        ax.vlines(x, lo.values, hi.values, color=line.get_color())
    rmean, rlo, rhi = hdi_summary(ref, hdi_prob)
    if np.isfinite(float(rmean)):
        ax.axhline(float(rmean), color="grey", ls="--", lw=1,
                   label="two draws of the full model")
        if rlo is not None:
            ax.axhspan(float(rlo), float(rhi), color="grey", alpha=0.15, lw=0)
    rec = int(result.attrs.get("recommended", r2.sizes["n_columns"]))
    ax.axvline(rec - 1, color="k", ls=":", lw=1, label=f"recommended: {rec} columns")
    ax.set_xticks(x, _labels(result), rotation=45, ha="right")
    band = f" ({hdi_prob:.0%} HDI)" if lo is not None else ""
    ax.set_ylabel("R$^2$ against the full model" + band)
    ax.legend(fontsize="small")
    return ax


def plot_scatter_submodels(result: xr.Dataset, submodels=None, ax=None,
                           figsize: tuple[float, float] | None = None):
    """Each submodel's posterior mean at the rows of X against the full model's, one panel
    per submodel, with the identity line (pymc-bart's ``plot_scatter_submodels``).

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`select_variables`.
    submodels : sequence of int, optional
        Numbers of columns to show (default: the submodels of 1 to 9 columns that have
        fewer columns than the full model, and the recommended one).
    ax : sequence of matplotlib Axes, optional
        At least one per submodel (default: a new figure, three panels a row).
    figsize : tuple of float, optional
        Size of the new figure (ignored with ``ax``).

    Returns
    -------
    ndarray of matplotlib Axes, one per submodel.

    Raises
    ------
    ValueError
        For ``submodels`` that are not integers from 1 to the number of columns (``1.5``,
        ``"x"``, ``True``), or too few ``ax``.
    TypeError
        For a ``result`` that is not the Dataset of :func:`select_variables`.

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
    >>> sel = pmt.select_variables(idata, X)
    >>> axes = pmt.plot_scatter_submodels(sel, submodels=[2, 5])
    """

    _check_result(result)
    p = result.sizes["n_columns"]
    if submodels is None:
        submodels = list(range(1, min(p, 10)))
        rec = int(result.attrs.get("recommended", p))
        if rec not in submodels and rec < p:
            submodels.append(rec)
        if not submodels:
            submodels = [p]
    given = submodels
    submodels = list(np.atleast_1d(np.asarray(submodels, dtype=object)))
    bad = [k for k in submodels if isinstance(k, (bool, np.bool_))
           or not isinstance(k, numbers.Integral) or not 1 <= k <= p]
    if bad or not submodels:
        raise ValueError(f"submodels must be numbers of columns from 1 to {p} (integers, "
                         f"one per panel); got {given!r}.")
    submodels = [int(k) for k in submodels]
    axes = panel_grid(len(submodels), ax,
                      (lambda nrow, ncol: (3.4 * ncol, 3.0 * nrow)) if figsize is None
                      else figsize, "submodel", sharex=True, sharey=True)
    if ax is None:
        fig = axes[0].figure
        fig.supxlabel("full model (posterior mean)")
        fig.supylabel("submodel (posterior mean)")
        for panel in axes[:len(submodels)]:  # ticks under every panel drawn
            panel.xaxis.set_tick_params(labelbottom=True)
    labels = _labels(result)
    full = result["full_mean"]
    r2 = result["r2"]
    extra_dims = [d for d in r2.dims if d != "n_columns"]
    for panel, k in zip(axes, submodels):
        sub = result["submodel_mean"].sel(n_columns=k)
        outs = list(full["output"].values) if "output" in full.dims else [None]
        for o in outs:
            sel = {} if o is None else {"output": o}
            panel.plot(full.sel(sel).values, sub.sel(sel).values, ".", alpha=0.6,
                       label=None if o is None else f"output {o}")
        lo = float(min(full.min(), sub.min()))
        hi = float(max(full.max(), sub.max()))
        panel.plot([lo, hi], [lo, hi], color="grey", ls="--", lw=1)
        mr2 = float(r2.sel(n_columns=k).mean(extra_dims, skipna=True))
        panel.set_title(f"{k} ({labels[k - 1]}): R$^2$ {mr2:.3f}", fontsize="small")
        if ax is not None:
            panel.set_xlabel("full model (posterior mean)")
            panel.set_ylabel("submodel")
        if len(outs) > 1:
            panel.legend(fontsize="small")
    return axes[:len(submodels)]
