"""Partial dependence and ICE curves of a tree term or a boosting model per posterior draw,
1-D and 2-D, on a grid (quantiles of a numeric column, the levels of a categorical or ordinal
one) or at given values.  Formulas: ``docs/interpret.md``."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from pymc_trees.core.tabular import TableSchema
from pymc_trees.interpret.sources import (RESERVED_DIMS, blocks_per_call,
                                          interpretation_source, predict_blocks,
                                          require_rows, split_forests)

__all__ = ["partial_dependence", "resolve_column"]


def resolve_column(c, schema: TableSchema) -> int:
    if isinstance(c, (bool, np.bool_)):
        raise ValueError(f"columns entries must be column names or indices; got {c!r}.")
    if isinstance(c, numbers.Integral):
        if not 0 <= int(c) < schema.p:
            raise ValueError(f"columns names the index {c}, but X has {schema.p} columns "
                             f"(indices 0 to {schema.p - 1}).")
        return int(c)
    if isinstance(c, str):
        if c not in schema.names:
            raise ValueError(f"columns names {c!r}, which is not a training column; the "
                             f"columns are {list(schema.names)}.")
        return schema.names.index(c)
    raise ValueError(f"columns entries must be column names (str) or indices (int); got "
                     f"{c!r}.")


def _columns(columns, schema: TableSchema) -> list[int]:
    if isinstance(columns, (str, numbers.Integral)) and not isinstance(columns, bool):
        cols = [columns]
    elif isinstance(columns, (Sequence, np.ndarray)):
        cols = list(columns)
    else:
        raise ValueError(f"columns must be one column (a name or an index) or a pair of them "
                         f"for a 2-D partial dependence; got {columns!r}.")
    if not 1 <= len(cols) <= 2:
        raise ValueError(f"columns must name one column or a pair of columns; got {len(cols)} "
                         "entries. For several 1-D curves call partial_dependence once per "
                         "column.")
    idx = [resolve_column(c, schema) for c in cols]
    if len(idx) == 2 and idx[0] == idx[1]:
        raise ValueError(f"columns names the same column twice ({schema.names[idx[0]]!r}); "
                         "pass two different columns for a 2-D partial dependence.")
    return idx


def _label_codes(values, j: int, schema: TableSchema) -> np.ndarray:
    """Codes of the level labels ``values`` of column j (compared as str; integer-valued
    numbers as integers, so 2.0 is the level "2")."""
    levels = schema.levels[j]
    out = np.empty(len(values), np.float64)
    for i, v in enumerate(values):  # grid values given by the user: a short list
        if isinstance(v, (numbers.Real, np.floating)) and not isinstance(v, bool) \
                and float(v) == np.floor(float(v)):
            v = int(v)
        s = str(v)
        if s not in levels:
            raise ValueError(f"grid for column {schema.names[j]!r} holds {v!r}, which is not "
                             f"one of its levels {list(levels)}; pass level labels.")
        out[i] = levels.index(s)
    return out


def _grid(j: int, A: np.ndarray, schema: TableSchema, given, resolution: int):
    """(encoded grid values, coordinate values) of column j."""
    name = schema.names[j]
    if schema.kinds[j] != "numeric":
        levels = schema.levels[j]
        if given is None:
            return np.arange(len(levels), dtype=np.float64), np.asarray(levels, dtype=str)
        vals = list(np.atleast_1d(np.asarray(given, dtype=object)))
        codes = _label_codes(vals, j, schema)
        return codes, np.asarray([levels[int(c)] for c in codes], dtype=str)
    if given is None:
        x = A[:, j]
        x = x[~np.isnan(x)]
        if x.size == 0:
            raise ValueError(f"Column {name!r} of X has only missing values, so no grid can be "
                             "taken from it; pass grid={" + repr(name) + ": [...]}.")
        uniq = np.unique(x)
        if uniq.size <= resolution:
            g = uniq
        else:
            g = np.unique(np.quantile(x, np.linspace(0.05, 0.95, resolution)))
        return g.astype(np.float64), g.astype(np.float64)
    try:
        g = np.atleast_1d(np.asarray(given, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"grid for the numeric column {name!r} must be numbers; got "
                         f"{given!r}.") from None
    if g.ndim != 1 or g.size == 0 or np.isinf(g).any():
        raise ValueError(f"grid for column {name!r} must be a non-empty 1-D sequence of finite "
                         f"numbers (NaN: a missing value); got {given!r}.")
    return g, g


def _grids_given(grid, cols: list[int], schema: TableSchema) -> list:
    if grid is None:
        return [None] * len(cols)
    if isinstance(grid, Mapping):
        out = [None] * len(cols)
        for key, vals in grid.items():
            j = resolve_column(key, schema)
            if j not in cols:
                raise ValueError(f"grid has values for column {schema.names[j]!r}, which is "
                                 "not among columns.")
            out[cols.index(j)] = vals
        return out
    if len(cols) == 1:
        return [grid]
    if isinstance(grid, (Sequence, np.ndarray)) and len(grid) == 2 and all(
            np.ndim(np.asarray(g, dtype=object)) == 1 for g in grid):
        return list(grid)
    raise ValueError("For a 2-D partial dependence pass grid as a dict {column: values} or a "
                     f"pair of sequences of values; got {grid!r}.")


def _dim_name(name: str) -> str:
    return f"{name}_value" if name in RESERVED_DIMS else name


def partial_dependence(source, X, columns, var_name: str = "f", grid=None,
                       grid_resolution: int = 20, kind: str = "average",
                       max_draws: int | None = 200) -> xr.Dataset:
    """Partial dependence (1-D or 2-D) and ICE curves, per posterior draw.

    For grid values ``v`` of the columns ``S``, the ICE curve of row i is
    ``f(v, x_i,rest)``, the model at row i of X with the columns in ``S`` set to ``v``; the
    partial dependence is their mean over the rows of X, ``mean_i f(v, x_i,rest)``.  Both are
    computed with each posterior draw's forest.

    Parameters
    ----------
    source : DataTree or fitted boosting estimator
        As for :func:`variable_importance`.
    X : array_like or DataFrame of shape (n, p)
        Rows to average over (the training rows, or a sample of them), with the training
        columns; also where the default grids come from.
    columns : str or int, or a pair of them
        One column (1-D) or two (2-D), by name or position in the training X.
    var_name : str, default "f"
        The ``BARTTree`` variable (ignored for a boosting estimator).
    grid : sequence, pair of sequences or dict, optional
        Values at which to evaluate: for one column a sequence of values, for two a pair of
        sequences or a dict ``{column: values}`` (a column left out takes its default grid).
        Numbers for a numeric column (NaN: missing, routed as every split says), level labels
        for a categorical or ordinal column.  Default: for a numeric column its distinct
        values in X when there are at most ``grid_resolution``, otherwise its quantiles at
        ``grid_resolution`` evenly spaced probabilities from 0.05 to 0.95 (ties merged); for a
        categorical or ordinal column every training level.
    grid_resolution : int, default 20
        Grid points of a numeric column when ``grid`` does not give them.
    kind : {"average", "individual", "both"}, default "average"
        Partial dependence, ICE curves, or both.
    max_draws : int or None, default 200
        At most this many posterior draws: ``max_draws // chains`` per chain, evenly spaced
        (None: every draw).  The cost is ``draws x grid points x n`` evaluations of the
        trees that split on the columns (the other trees are evaluated once, at X).

    Returns
    -------
    xarray.Dataset
        Variables ``average`` of dims ``(chain, draw, [output,] g1[, g2])`` and/or
        ``individual`` of dims ``(chain, draw, [output,] obs, g1[, g2])``, where ``g1``,
        ``g2`` are named after the columns (with ``"_value"`` appended to a column called
        ``chain``, ``draw``, ``output``, ``obs``, ``column`` or ``ci_bound``) and hold the grid
        values, or the level labels of a categorical or ordinal column.  For a boosting
        estimator there are no ``chain``, ``draw`` dims.  Attributes: ``columns``, ``kinds``
        (numeric, ordinal or categorical), ``grid_dims``, ``var_name``, ``source``, ``kind``.

    Raises
    ------
    ValueError
        For unknown columns, grid values that are not numbers (numeric column) or not levels
        (categorical column), a bad ``kind``, ``grid_resolution`` or ``max_draws``, or an X
        without the training columns.

    Examples
    --------
    >>> import arviz as az
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(200, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> pd_x = pmt.partial_dependence(idata, X, 0)        # column 0 (or a name)
    >>> bands = az.hdi(pd_x["average"], dim=["chain", "draw"])
    >>> axes = pmt.plot_partial_dependence(pmt.partial_dependence(idata, X, [0, 1]))
    """
    if kind not in ("average", "individual", "both"):
        raise ValueError(f"kind must be 'average', 'individual' or 'both'; got {kind!r}.")
    if isinstance(grid_resolution, bool) or not isinstance(grid_resolution, numbers.Integral) \
            or grid_resolution < 1:
        raise ValueError(f"grid_resolution must be a positive integer; got "
                         f"{grid_resolution!r}.")
    require_rows(X)
    src = interpretation_source(source, var_name, max_draws)
    A = src.encode(X)
    schema = src.schema()
    cols = _columns(columns, schema)
    given = _grids_given(grid, cols, schema)
    grids = [_grid(j, A, schema, g, int(grid_resolution)) for j, g in zip(cols, given)]
    codes = [g[0] for g in grids]
    shape = tuple(c.size for c in codes)
    points = np.stack([m.ravel() for m in np.meshgrid(*codes, indexing="ij")], axis=1)
    n = A.shape[0]
    S, K = src.n_samples, src.n_outputs
    G = points.shape[0]
    want_ind = kind in ("individual", "both")
    avg = np.empty((S, K, G))
    ind = np.empty((S, K, G, n)) if want_ind else None
    reads, const = split_forests(src, A, cols)
    per = blocks_per_call(G, n, S * K + A.shape[1])
    for b in range(0, G, per):
        g = min(per, G - b)
        big = np.tile(A, (g, 1))
        big[:, cols] = np.repeat(points[b:b + g], n, axis=0)
        out = predict_blocks(src, reads, const, big, g)  # (S, K, g, n)
        avg[:, :, b:b + g] = out.mean(axis=-1)
        if want_ind:
            ind[:, :, b:b + g] = out
    names = [schema.names[j] for j in cols]
    gdims = tuple(_dim_name(nm) for nm in names)
    gcoords = {d: g[1] for d, g in zip(gdims, grids)}
    attrs = {"columns": names, "kinds": [schema.kinds[j] for j in cols],
             "grid_dims": list(gdims), "var_name": src.var_name, "source": src.kind,
             "kind": kind}
    data = {}
    if kind in ("average", "both"):
        data["average"] = src.wrap(avg.reshape(S, K, *shape), gdims, gcoords, "average", {})
    if want_ind:
        ind = np.moveaxis(ind, 3, 2).reshape(S, K, n, *shape)
        data["individual"] = src.wrap(ind, ("obs",) + gdims,
                                      {"obs": np.arange(n), **gcoords}, "individual", {})
    return xr.Dataset(data, attrs=attrs)
