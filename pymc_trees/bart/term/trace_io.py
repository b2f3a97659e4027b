"""Forests kept with the trace as numeric arrays, in a DataTree group of their own.

During sampling every draw's forest travels as the object-typed sampler stat
``<name>_forest`` (a :class:`~pymc_trees.PackedForest`), the one channel that survives worker
processes.  When PyMC turns the trace into a DataTree, :func:`move_forest_stats` (wired in by
:func:`pymc_trees.bart.term.pymc_compat.install`) moves those stats out of
``sample_stats`` (and ``warmup_sample_stats``) into the group ``forests`` (``warmup_forests``)
with this encoding, per tree term ``<name>``:

* ``<name>_tree_size`` (chain, draw, ``<name>_tree``), int32: nodes of every tree;
* ``<name>_draw_start`` (chain, draw), int64: index of the draw's first node, so that
  ``idata.sel(draw=...)`` and thinning keep every draw paired with its own nodes;
* ``<name>_feature`` (``<name>_node``), int16 (int32 when X has more than 32,767 columns):
  split column of every node, -1 at leaves, ``-2 - j`` at a linear leaf whose slope is on
  column j;
* ``<name>_value`` (``<name>_node``), float64: the split threshold at internal nodes (a row
  goes left when ``x <= threshold``) and the leaf value at leaves;
* ``<name>_missing_left`` (``<name>_node``), uint8: where a NaN goes at an internal node (1
  left, 0 right; absent in traces written before missing values were supported: all 1);
* ``<name>_cats`` (``<name>_node``), uint64, only when some node is a categorical split: the
  bit set of the level codes that go left there (0 at numeric splits and leaves; at a linear
  leaf the float64 bits of its column's centre);
* ``<name>_slope`` (``<name>_node``), float64, only for linear leaves: a linear leaf's slope
  per unit of its column (0 elsewhere);
* ``<name>_offset`` (scalar), float64;
* ``<name>_outputs`` (scalar), int64, only for a term of shape (k, n): k; each draw then holds
  k * m trees, output j's being trees ``j*m`` to ``(j+1)*m - 1``;
* coordinate ``<name>_column``: the training column names (``"0"``, ``"1"``, ... when X had
  none, with attribute ``named = 0``); for a term with categorical or ordinal columns its
  attributes ``kinds`` and ``levels`` (JSON) hold the rest of the
  :class:`~pymc_trees.core.tabular.TableSchema`, so that new rows are encoded as in training.

Nodes are concatenated draw after draw (chain-major), tree after tree, each tree in the
depth-first pair layout of :func:`~pymc_trees.core.packed.pack_forest`, so the left-child
links are recomputed on reading and need not be stored.  That is 11 bytes per node (19 with
categorical splits), 4 per tree and 8 per draw, against 32 per node in memory.  Everything is numeric, so ``to_netcdf`` and
``to_zarr`` keep it and ArviZ's diagnostics never meet an object array.
"""

from __future__ import annotations

import hashlib
import json
from typing import NamedTuple

import numpy as np
import xarray as xr

from pymc_trees.core.packed import relink_packed
from pymc_trees.core.packed import NODE_DTYPE, PackedForest
from pymc_trees.core.tabular import TableSchema

__all__ = ["FOREST_GROUP", "encode_forests", "TermForests", "read_forests", "move_forest_stats",
           "recorded_vars", "values_as_recorded", "with_draw_coords", "regressor_range",
           "clip_to_range"]

FOREST_GROUP = "forests"
STAT_SUFFIX = "_forest"
# DART inside the tree step (BARTTree(..., split_prior="dart")): per draw, the split
# probabilities of the columns and Linero's alpha travel as one object stat <name>_dart (a
# DartDraw, which PyMC's backends keep whole) and become the numeric sample_stats
# <name>_split_probs and <name>_split_alpha
DART_SUFFIX = "_dart"
DART_PROBS_SUFFIX = "_split_probs"
DART_ALPHA_SUFFIX = "_split_alpha"


class DartDraw(NamedTuple):
    """One draw of DART inside the tree step: ``probs`` of shape (p,) or (k, p), ``alpha``
    a float or shape (k,)."""

    probs: np.ndarray
    alpha: float | np.ndarray


def encode_forests(name: str, forests: np.ndarray, columns, p: int,
                   outputs: int | None = None, schema: TableSchema | None = None,
                   missing: float | None = None) -> xr.Dataset:
    """Encode an object array (chain, draw) of :class:`PackedForest` of term ``name`` (with
    ``outputs`` = k for a term of shape (k, n), whose forests hold k * m trees, and the
    ``schema`` of its X when it has categorical or ordinal columns)."""
    chains, draws = forests.shape
    flat = forests.ravel()
    m = flat[0].m
    sizes = np.empty((chains * draws, m), np.int32)
    total = sum(fr.nodes.size for fr in flat)
    fdtype = np.int16 if p <= np.iinfo(np.int16).max else np.int32
    feature = np.empty(total, fdtype)
    value = np.empty(total, np.float64)
    missing_left = np.empty(total, np.uint8)
    cats = np.zeros(total, np.uint64)
    slope = np.zeros(total, np.float64)
    pos = 0
    for i, fr in enumerate(flat):
        if fr.m != m:
            raise ValueError(f"{name!r}: draws have different numbers of trees.")
        sizes[i] = np.diff(fr.start)
        k = fr.nodes.size
        feat = fr.nodes["feature"]
        feature[pos:pos + k] = feat
        value[pos:pos + k] = np.where(feat >= 0, fr.nodes["threshold"], fr.nodes["value"])
        missing_left[pos:pos + k] = fr.nodes["missing_left"]
        cats[pos:pos + k] = fr.nodes["cats"]
        slope[pos:pos + k] = np.where(feat < -1, fr.nodes["threshold"], 0.0)
        pos += k
    named = columns is not None
    cols = [str(c) for c in columns] if named else [str(j) for j in range(p)]
    first = np.concatenate([[0], np.cumsum(sizes.sum(axis=1))[:-1]]).astype(np.int64)
    ds = xr.Dataset(
        {f"{name}_tree_size": (("chain", "draw", f"{name}_tree"),
                               sizes.reshape(chains, draws, m)),
         f"{name}_draw_start": (("chain", "draw"), first.reshape(chains, draws)),
         f"{name}_feature": ((f"{name}_node",), feature),
         f"{name}_value": ((f"{name}_node",), value),
         f"{name}_missing_left": ((f"{name}_node",), missing_left),
         f"{name}_offset": ((), np.float64(flat[0].offset))},
        coords={f"{name}_column": cols})
    ds[f"{name}_column"].attrs["named"] = int(named)
    if cats.any():
        ds[f"{name}_cats"] = ((f"{name}_node",), cats)
    if (feature < -1).any():  # linear leaves: the slope (the centre is in cats)
        ds[f"{name}_slope"] = ((f"{name}_node",), slope)
    if missing is not None:
        ds[f"{name}_column"].attrs["missing"] = float(missing)
    if schema is not None:
        ds[f"{name}_column"].attrs["kinds"] = json.dumps(list(schema.kinds))
        ds[f"{name}_column"].attrs["levels"] = json.dumps(
            [None if lv is None else list(lv) for lv in schema.levels])
    if outputs is not None:
        if m % outputs:
            raise ValueError(f"{name!r}: {m} trees per draw do not split into {outputs} "
                             "outputs.")
        ds[f"{name}_outputs"] = ((), np.int64(outputs))
    return ds


class TermForests:
    """All stored forests of one tree term, decoded once for fast prediction.

    The draws may be any selection of the trace's: thinned (``idata.sel(draw=slice(0, None,
    4))``), one chain (``idata.sel(chain=1)`` drops the chain dim, ``idata.isel(chain=[1])``
    keeps it), or several draws stacked into one dim.  ``samples`` keeps their dims and
    coordinates, so that results built with :meth:`wrap` pair with the posterior by label.

    Attributes
    ----------
    starts : ndarray of shape (S, m + 1), dtype int64
        Absolute index of every tree's root in ``nodes`` (the last entry ends the draw), for
        the S stored draws in C order of ``samples``.
    samples : xarray.DataArray of int64, dims the sample dims (usually ``(chain, draw)``)
        Position of each draw in ``starts``, with the trace's own coordinates.
    nodes : structured ndarray of shape (n_nodes,), dtype ``NODE_DTYPE``
    offset : float
    columns : tuple of str or None
        Training column names (None when X had none).
    n_features : int
    rows : str or None
        :func:`rows_fingerprint` of the training X.
    term_dims : tuple of str or None
        The term's dims as the model named them (``BARTTree(..., dims=...)``).
    """

    def __init__(self, starts, nodes, offset, columns, n_features, samples, outputs=None,
                 schema=None, missing=None):
        self.starts, self.nodes, self.offset = starts, nodes, float(offset)
        self.columns, self.n_features = columns, int(n_features)
        self.schema = schema
        self.missing = missing
        self.samples = samples
        self.outputs = None if outputs is None else int(outputs)
        # the training rows' fingerprint and the term's dims as the model named them (both
        # None for traces written before they were kept)
        self.rows: str | None = None
        self.term_dims: tuple[str, ...] | None = None
        # per column [min, max] of the training X, for a term of linear leaves
        # (:func:`clip_to_range`; None: constant leaves, or a trace written before)
        self.range: list | None = None

    @property
    def sample_dims(self) -> tuple[str, ...]:
        return tuple(str(d) for d in self.samples.dims)

    def wrap(self, values: np.ndarray, dims: tuple[str, ...] = (), coords=None,
             name: str | None = None) -> xr.DataArray:
        """``values`` of shape (S, ...) as a DataArray with the sample dims and coordinates
        of the stored draws first, then ``dims`` (with ``coords``)."""
        arr = np.asarray(values)
        arr = arr.reshape(self.samples.shape + arr.shape[1:])
        da = xr.DataArray(arr, dims=self.sample_dims + tuple(dims),
                          coords=self.samples.coords, name=name)
        return da.assign_coords(coords or {})

    @classmethod
    def from_dataset(cls, ds: xr.Dataset, name: str, like=None) -> "TermForests":
        """Decode term ``name`` of a forests group; ``like``: a dataset of the same draws
        (the posterior) whose chain and draw coordinates are adopted where the forests group
        has none (groups written before the forests kept their own)."""
        tree_dim = f"{name}_tree"
        sizes = ds[f"{name}_tree_size"].transpose(..., tree_dim)
        if like is not None:
            adopt = {d: like[d].values for d in ("chain", "draw")
                     if d in sizes.dims and d not in sizes.coords and d in like.dims
                     and like.sizes[d] == sizes.sizes[d]}
            sizes = sizes.assign_coords(adopt)
        sample_dims = sizes.dims[:-1]
        # dims without labels (hand-built groups): their positions, as xarray shows them
        sizes = sizes.assign_coords({d: np.arange(sizes.sizes[d]) for d in sample_dims
                                     if d not in sizes.coords})
        m = sizes.shape[-1]
        S = int(np.prod(sizes.shape[:-1], dtype=np.int64))
        sz = np.asarray(sizes.values, np.int64).reshape(S, m)
        first = np.asarray(ds[f"{name}_draw_start"].transpose(*sample_dims).values,
                           np.int64).reshape(-1)
        starts = np.empty((S, m + 1), np.int64)
        starts[:, 0] = first
        starts[:, 1:] = first[:, None] + np.cumsum(sz, axis=1)
        feature = np.asarray(ds[f"{name}_feature"].values)
        value = np.asarray(ds[f"{name}_value"].values, np.float64)
        if starts.size and (starts.min() < 0 or starts[:, -1].max() > feature.size):
            raise ValueError(f"The stored forests of {name!r} are inconsistent (a draw points "
                             "past the node arrays); was the forests group sliced along the "
                             "node dimension?")
        nodes = np.empty(feature.size, NODE_DTYPE)
        nodes["feature"] = feature
        internal = feature >= 0
        sl = ds.get(f"{name}_slope")
        nodes["threshold"] = np.where(internal, value,
                                      0.0 if sl is None else np.asarray(sl.values, np.float64))
        nodes["value"] = np.where(internal, 0.0, value)
        ml = ds.get(f"{name}_missing_left")
        nodes["missing_left"] = 1 if ml is None else np.asarray(ml.values)
        cats = ds.get(f"{name}_cats")
        nodes["cats"] = 0 if cats is None else np.asarray(cats.values, np.uint64)
        left = np.full(feature.size, -1, np.int32)
        relink_packed(np.ascontiguousarray(starts[:, :-1].ravel()), sz.ravel(), feature, left)
        nodes["left"] = left
        col = ds[f"{name}_column"]
        columns = tuple(str(c) for c in col.values) if col.attrs.get("named", 1) else None
        outputs = (int(ds[f"{name}_outputs"].values) if f"{name}_outputs" in ds else None)
        schema = None
        if "kinds" in col.attrs:
            names = tuple(str(c) for c in col.values)
            levels = tuple(None if lv is None else tuple(lv)
                           for lv in json.loads(col.attrs["levels"]))
            schema = TableSchema(names, tuple(json.loads(col.attrs["kinds"])), levels,
                                 bool(col.attrs.get("named", 1)))
        template = sizes.isel({tree_dim: 0}, drop=True)
        keep = [c for c in template.coords if set(template[c].dims) <= set(sample_dims)]
        samples = xr.DataArray(np.arange(S, dtype=np.int64).reshape(sizes.shape[:-1]),
                               dims=sample_dims, coords=template.coords.to_dataset()[keep].coords)
        off = ds[f"{name}_offset"]
        out = cls(starts, nodes, float(off.values), columns, col.size, samples, outputs,
                  schema, float(col.attrs["missing"]) if "missing" in col.attrs else None)
        out.rows = off.attrs.get("rows")
        out.term_dims = tuple(json.loads(off.attrs["dims"])) if "dims" in off.attrs else None
        out.range = json.loads(off.attrs["range"]) if "range" in off.attrs else None
        return out

    @classmethod
    def from_objects(cls, da: xr.DataArray, columns=None, n_features=None) -> "TermForests":
        """From the object-typed stat (chain, draw) of a MultiTrace-style result."""
        arr = np.asarray(da.transpose("chain", "draw").values)
        p = n_features if n_features is not None else (
            len(columns) if columns is not None else -1)
        ds = encode_forests("t", arr, columns, max(p, 1))
        ds = ds.assign_coords({d: da[d].values for d in ("chain", "draw") if d in da.coords})
        out = cls.from_dataset(ds, "t")
        out.n_features = p
        return out

    def packed(self, s: int, output: int | None = None) -> PackedForest:
        """The forest of stored draw s (position in ``starts``; node indices relative to the
        draw); of one output of a term with several (its m trees)."""
        st = self.starts[s]
        if output is not None:
            m = (st.size - 1) // self.outputs
            st = st[output * m:(output + 1) * m + 1]
        nodes = self.nodes[st[0]:st[-1]].copy()
        nodes["left"] = np.where(nodes["left"] >= 0, nodes["left"] - st[0], -1)
        return PackedForest((st - st[0]).astype(np.int32), nodes, self.offset)


def read_forests(idata, var_name: str) -> TermForests:
    """The stored forests of ``var_name`` from a DataTree (group ``forests``, or the raw
    object stat in ``sample_stats`` for results converted without pymc_trees imported)."""
    try:
        groups = set(idata.children)
    except AttributeError:
        raise TypeError(
            f"idata must be the DataTree returned by pm.sample (or loaded with "
            f"arviz.from_netcdf / from_zarr), which holds the forests; got "
            f"{type(idata).__name__}. A posterior Dataset (idata.posterior, az.extract(...)) "
            "has no forests: select draws on the DataTree instead (idata.sel(draw=...), "
            "idata.isel(chain=[0])) and stack the result if needed "
            "(result.stack(sample=('chain', 'draw'))).") from None
    if FOREST_GROUP in groups:
        ds = idata[FOREST_GROUP].to_dataset()
        if f"{var_name}_tree_size" in ds:
            like = idata["posterior"].to_dataset() if "posterior" in groups else None
            return TermForests.from_dataset(ds, var_name, like=like)
        have = sorted(str(k)[:-len("_tree_size")] for k in ds.data_vars
                      if str(k).endswith("_tree_size"))
    else:
        have = []
        stats = idata["sample_stats"].to_dataset() if "sample_stats" in groups else {}
        if f"{var_name}{STAT_SUFFIX}" in stats:
            da = stats[f"{var_name}{STAT_SUFFIX}"]
            da = da.isel({d: 0 for d in da.dims if d not in ("chain", "draw")}, drop=True)
            return TermForests.from_objects(da)
    raise ValueError(f"No forests stored for {var_name!r} in idata (group {FOREST_GROUP!r}); "
                     f"tree terms with stored forests: {have}. Pass the name of a BARTTree "
                     "variable and the DataTree returned by pm.sample.")


def _chain_draw_objects(da) -> np.ndarray:
    """An object stat as an array of shape (chain, draw) (extra dims PyMC may add dropped)."""
    extra = [d for d in da.dims if d not in ("chain", "draw")]
    return np.asarray(da.isel({d: 0 for d in extra}, drop=True)
                      .transpose("chain", "draw").values)


def _numeric_dart_stats(ds, model):
    """The object stats ``<name>_dart`` (:class:`DartDraw`) as float arrays
    ``<name>_split_probs``, dims (chain, draw, ``<name>_column``), and ``<name>_split_alpha``,
    dims (chain, draw), with ``<name>_output`` after draw for a term of shape (k, n)."""
    names = [str(k) for k in ds.data_vars
             if str(k).endswith(DART_SUFFIX) and ds[k].dtype == object]
    if not names:
        return ds
    new = {}
    for stat in names:
        term = stat[:-len(DART_SUFFIX)]
        columns, _, outputs, _, _ = _term_columns(model, term)
        arr = _chain_draw_objects(ds[stat])
        flat = arr.ravel()
        probs = np.stack([np.asarray(d.probs, np.float64) for d in flat])
        alpha = np.stack([np.asarray(d.alpha, np.float64) for d in flat])
        probs = probs.reshape(arr.shape + probs.shape[1:])
        alpha = alpha.reshape(arr.shape + alpha.shape[1:])
        dims = ["chain", "draw"] + ([] if outputs is None else [f"{term}_output"])
        coords = {d: ds[d].values for d in ("chain", "draw") if d in ds.coords}
        col = f"{term}_column"
        cols = ([str(c) for c in columns] if columns is not None
                else [str(j) for j in range(probs.shape[-1])])
        new[term + DART_PROBS_SUFFIX] = xr.DataArray(probs, dims=dims + [col],
                                                     coords={**coords, col: cols})
        new[term + DART_ALPHA_SUFFIX] = xr.DataArray(alpha, dims=dims, coords=coords)
    extra = [d for s in names for d in ds[s].dims if d not in ("chain", "draw")]
    return ds.drop_vars(names).drop_dims(extra, errors="ignore").assign(new)


def move_forest_stats(result: dict, model) -> dict:
    """PyMC's conversion of the sample stats (``result``, group name to dataset), with the
    ``<name>_forest`` object stats moved into the ``forests`` group(s) and the
    ``<name>_dart`` ones made numeric (wired into PyMC by
    :func:`pymc_trees.bart.term.pymc_compat.install`)."""
    for stats_group, forest_group in (("sample_stats", FOREST_GROUP),
                                      ("warmup_sample_stats", "warmup_" + FOREST_GROUP)):
        ds = result.get(stats_group)
        if ds is None:
            continue
        ds = result[stats_group] = _numeric_dart_stats(ds, model)
        names = [str(k) for k in ds.data_vars
                 if str(k).endswith(STAT_SUFFIX) and ds[k].dtype == object]
        if not names:
            continue
        parts = []
        for stat in names:
            term = stat[:-len(STAT_SUFFIX)]
            arr = _chain_draw_objects(ds[stat])
            columns, p, outputs, schema, missing = _term_columns(model, term)
            part = encode_forests(term, arr, columns, p, outputs, schema, missing)
            part[f"{term}_offset"].attrs.update(
                _term_rows(model, term, missing, f"{term}_slope" in part))
            parts.append(part)
        dims = [d for s in names for d in ds[s].dims if d not in ("chain", "draw")]
        result[stats_group] = ds.drop_vars(names).drop_dims(dims, errors="ignore")
        out = xr.merge(parts)
        # the trace's own draw labels, so that selections of draws keep them paired
        out = out.assign_coords({d: ds[d].values for d in ("chain", "draw") if d in ds.coords})
        out.attrs = dict(ds.attrs)
        result[forest_group] = out
    return result


def _term_columns(model, name):
    rv = model.named_vars.get(name) if model is not None else None
    if rv is None or rv.owner is None:
        return None, -1, None, None, None
    from pymc_trees.bart.term.distribution import term_inputs

    X = term_inputs(rv).X
    p = int(X.shape[1].eval())
    op = rv.owner.op
    return (getattr(op, "columns", None), p, getattr(op, "outputs", None),
            getattr(op, "schema", None), getattr(op, "missing", None))


def rows_fingerprint(X: np.ndarray) -> str:
    """A fingerprint of a float matrix of rows (its shape and a hash of its values, every NaN
    the same): equal for the same rows, so that :func:`pymc_trees.predict` knows the
    training rows when it meets them again."""
    A = np.asarray(X)
    h = hashlib.blake2b(digest_size=16)
    # in blocks of rows, so that a table of millions of rows needs no copy of itself
    for start in range(0, max(A.shape[0], 1), 1 << 16):
        block = np.ascontiguousarray(A[start:start + (1 << 16)], dtype=np.float64)
        nan = np.isnan(block)
        if nan.any():
            block = np.where(nan, np.nan, block)
        h.update(block.tobytes())
    return f"{A.shape[0]}x{A.shape[1] if A.ndim > 1 else 1}:{h.hexdigest()}"


def regressor_range(X, schema) -> list:
    """Per column of the training X: ``[min, max]`` of its values (NaN ignored), or None for
    an unordered categorical column or one without values.  A term with linear leaves keeps
    it (the ``range`` attribute of its offset) so that predictions at new rows hold each line
    at the end of the data instead of extrapolating it (:func:`clip_to_range`)."""
    A = np.asarray(X, dtype=np.float64)
    cat = (np.zeros(A.shape[1], bool) if schema is None else np.asarray(schema.categorical))
    out = []
    for j in range(A.shape[1]):
        col = A[:, j][~np.isnan(A[:, j])]
        out.append(None if cat[j] or col.size == 0 else [float(col.min()), float(col.max())])
    return out


def clip_to_range(X: np.ndarray, tf: "TermForests") -> np.ndarray:
    """New rows X (encoded, float64) with each numeric column clipped to the training range
    kept with a term of linear leaves (``tf.range``; unchanged when there is none).

    The trees' cut points are midpoints between training values, strictly inside that
    range, so clipping never changes the leaf a row reaches: it only holds a linear leaf's
    line at the end of the data, where it was fitted, instead of extending it to values
    never seen (a column value 6 times past the training maximum moved a log price by 27 on
    the suite's diamonds table).  This is the model's definition of a linear leaf beyond
    the data, as a constant leaf is constant there, so it passes without a warning: with
    linear leaves the default, a test set a little wider than its training set is the
    common case, not a mistake."""
    if tf.range is None:
        return X
    out = X
    for j, lim in enumerate(tf.range):
        if lim is None:
            continue
        beyond = (X[:, j] < lim[0]) | (X[:, j] > lim[1])
        if beyond.any():
            if out is X:  # copied only when a value is clipped
                out = np.array(X, dtype=np.float64, copy=True)
            np.clip(out[:, j], lim[0], lim[1], out=out[:, j])
    return out


def _term_rows(model, name, missing, linear: bool) -> dict:
    """Attributes of a term's stored forests that place its training rows: ``dims``, the
    term's dims as the model names them (JSON; absent without names), ``rows``, the
    fingerprint of its training X (:func:`rows_fingerprint`), and for forests with
    ``linear`` leaves, ``range``, each column's training [min, max]."""
    rv = model.named_vars.get(name) if model is not None else None
    if rv is None or rv.owner is None:
        return {}
    from pymc_trees.bart.term.distribution import term_inputs
    from pymc_trees.core.tabular import mark_missing

    X = term_inputs(rv).X
    X = X.get_value(borrow=True) if hasattr(X, "get_value") else X.eval()
    X = mark_missing(X, missing)
    out = {"rows": rows_fingerprint(X)}
    if linear:
        out["range"] = json.dumps(regressor_range(X, rv.owner.op.schema))
    dims = model.named_vars_to_dims.get(name)
    if dims is not None and all(d is not None for d in dims):
        out["dims"] = json.dumps([str(d) for d in dims])
    return out


def recorded_vars(model, trace_vars):
    """PyMC's default trace variables (``model.unobserved_value_vars``) without the tree
    terms whose values are not kept (:func:`pymc_trees.bart.term.distribution.keeps_values`); None
    (PyMC's default) when every term keeps them or ``var_names`` chose the variables."""
    from pymc_trees.bart.term.distribution import keeps_values, tree_terms

    if trace_vars is not None or model is None:
        return trace_vars
    drop = {rv.name for rv in tree_terms(model) if not keeps_values(rv)}
    if not drop:
        return None
    return [v for v in model.unobserved_value_vars if v.name not in drop]


def values_as_recorded(step, model, trace_vars) -> None:
    """Every tree step among ``step``'s methods sums its term's values tree by tree when
    ``pm.sample`` records them (``trace_vars``, None for PyMC's default of every free
    variable), so that ``pmt.predict`` reproduces the trace to the last bit, and takes them
    from its sweep's residual, equal up to rounding, when it does not
    (``ForestSampler.exact_values``).  Called before PyMC sends the steps to their chains."""
    if step is None or model is None:
        return
    recorded = {v.name for v in (model.unobserved_value_vars if trace_vars is None
                                 else trace_vars)}
    for method in getattr(step, "methods", None) or [step]:
        name = getattr(method, "var_name", None)
        smp = getattr(method, "sampler", None)
        if name is None or smp is None:
            continue
        for part in getattr(smp, "parts", None) or [smp]:
            part.exact_values = name in recorded


def with_draw_coords(result: dict, converter) -> dict:
    """PyMC's conversion of the posterior (``result``), where a run that recorded no
    variable (:func:`pymc_trees.bart.term.pymc_compat.count_draws`) keeps the chain and draw
    coordinates in its empty posterior group, which PyMC's convergence checks and
    ``pmt.predict`` read."""
    for group, trace in (("posterior", getattr(converter, "posterior_trace", None)),
                         ("warmup_posterior", getattr(converter, "warmup_trace", None))):
        ds = result.get(group)
        if ds is not None and not ds.data_vars and trace is not None:
            result[group] = ds.assign_coords(chain=np.asarray(trace.chains),
                                             draw=np.arange(len(trace)))
    return result
