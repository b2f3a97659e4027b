"""Posterior prediction of tree terms at new rows, draw by draw."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .steps import forest_stat_name

__all__ = ["predict", "forests"]


def forests(idata, var_name: str = "f", group: str = "sample_stats") -> xr.DataArray:
    """The stored forests of a tree term.

    Returns
    -------
    xarray.DataArray of shape (chain, draw), dtype object
        Each element is the :class:`~pymc_trees.PackedForest` of that draw.
    """
    stat = forest_stat_name(var_name)
    try:
        ds = idata[group]
    except KeyError:
        raise ValueError(f"idata has no {group!r} group; pass the result of pm.sample().")
    if stat not in ds:
        have = [k for k in ds.data_vars if str(k).endswith("_forest")]
        raise ValueError(f"No forests stored for {var_name!r} (looked for {stat!r} in "
                         f"idata.{group}); tree terms with stored forests: "
                         f"{[h[:-len('_forest')] for h in have]}.")
    da = ds[stat]
    da = da if isinstance(da, xr.DataArray) else da.to_dataarray()
    # PyMC stores object-valued stats with a trailing length-1 dimension.
    extra = [d for d in da.dims if d not in ("chain", "draw")]
    if any(da.sizes[d] != 1 for d in extra):
        raise ValueError(f"{stat!r} has unexpected dimensions {da.dims}.")
    return da.isel({d: 0 for d in extra}, drop=True)


def predict(idata, X_new, var_name: str = "f", group: str = "sample_stats") -> xr.DataArray:
    """Evaluate each posterior draw's own forest at new rows.

    Parameters
    ----------
    idata : DataTree
        Result of ``pm.sample`` for a model with a ``BARTTree`` term.
    X_new : array_like of shape (n_new, p)
        New rows, with the columns of the training X.
    var_name : str, default "f"
        Name of the ``BARTTree`` variable.

    Returns
    -------
    xarray.DataArray of shape (chain, draw, obs)
        The term at the new rows for every draw; at the training rows it equals the traced
        values exactly.
    """
    X_new = np.asarray(X_new, dtype=np.float64)
    if X_new.ndim != 2:
        raise ValueError(f"X_new must have shape (n_new, p); got shape {X_new.shape}.")
    da = forests(idata, var_name, group)
    arr = np.asarray(da.transpose("chain", "draw").values)
    chains, draws = arr.shape
    out = np.empty((chains, draws, X_new.shape[0]))
    for c in range(chains):
        for d in range(draws):
            out[c, d] = arr[c, d].predict(X_new)
    return xr.DataArray(out, dims=("chain", "draw", "obs"),
                        coords={"chain": da.coords["chain"].values,
                                "draw": da.coords["draw"].values,
                                "obs": np.arange(X_new.shape[0])},
                        name=var_name)
