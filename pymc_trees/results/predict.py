"""Posterior prediction of tree terms at new rows, draw by draw."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_trees.core.packed import predict_draws
from pymc_trees.core.tabular import TableSchema, mark_missing, warn_user
from pymc_trees.bart.term.trace_io import clip_to_range, read_forests, rows_fingerprint, TermForests

__all__ = ["predict", "forests", "check_new_rows"]


def forests(idata, var_name: str = "f") -> xr.DataArray:
    """The stored forests of a tree term.

    Parameters
    ----------
    idata : DataTree
        The result of ``pm.sample`` (or a selection of its draws).
    var_name : str, default "f"
        The name of the ``BARTTree`` variable.

    Returns
    -------
    xarray.DataArray of shape (chain, draw), dtype object, or (chain, draw, output) for a
    term of shape (k, n)
        Each element is the :class:`~pymc_trees.PackedForest` of that draw (and output).  For
        a selection of draws (``idata.sel(...)``) the dims and coordinates are the
        selection's.

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
    >>> forest = pmt.forests(idata, "f").values[0, -1]    # chain 0, last draw
    >>> values = forest.predict(X[:5])                   # that draw's f at 5 rows, shape (5,)
    """
    tf = read_forests(idata, var_name)
    k = tf.outputs
    out = np.empty((tf.starts.shape[0], 1 if k is None else k), object)
    for s in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[s, j] = tf.packed(s, None if k is None else j)
    if k is None:
        return tf.wrap(out[:, 0], name=var_name)
    return tf.wrap(out, ("output",), {"output": np.arange(k)}, name=var_name)


def check_new_rows(X_new, columns: tuple[str, ...] | None, n_features: int,
                   what: str = "X_new", schema: TableSchema | None = None,
                   missing: float | None = None) -> np.ndarray:
    """New rows as a float64 matrix in the training column order, encoded as the training
    X was (:meth:`pymc_trees.core.tabular.TableSchema.encode`); entries equal to ``missing`` (the
    term's marker of missing values, in an array or a DataFrame's numeric columns) are NaN.

    A DataFrame is matched to the training columns by name when the training X had names
    (extra columns are refused, as are missing ones); otherwise its columns are taken in
    order, with a ``UserWarning`` when it has two or more columns whose labels are not the
    positions ``0 .. p-1`` (names that cannot be checked).  The number of columns must match.
    NaN is a missing value (routed as each split says); infinite values and category labels
    not seen in training are refused.
    """
    X_new = mark_missing(X_new, missing)
    if schema is not None:
        A = schema.encode(X_new, what=what)
        _warn_read_by_position(X_new, schema.named, what)
        return A
    if n_features >= 0:
        names = columns if columns is not None else tuple(str(j) for j in range(n_features))
        plain = TableSchema(tuple(names), ("numeric",) * n_features, (None,) * n_features,
                            columns is not None)
        A = plain.encode(X_new, what=what)
        _warn_read_by_position(X_new, columns is not None, what)
        return A
    cols = getattr(X_new, "columns", None)
    if cols is not None and columns is not None:
        names = [str(c) for c in cols]
        absent = [c for c in columns if c not in names]
        extra = [c for c in names if c not in columns]
        if absent or extra:
            raise ValueError(f"{what} has columns {names}, but the tree term was fit on "
                             f"{list(columns)} (missing: {absent}, unknown: {extra}). Pass a "
                             "DataFrame with exactly the training columns (any order).")
        X_new = X_new.loc[:, [cols[names.index(c)] for c in columns]]
    X = np.asarray(X_new, dtype=np.float64)
    if X.ndim == 1 and n_features == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{what} must have shape (n_new, p); got shape {X.shape}.")
    if n_features >= 0 and X.shape[1] != n_features:
        raise ValueError(f"{what} has {X.shape[1]} columns but the tree term was fit on "
                         f"{n_features}" + (f" ({list(columns)})" if columns else "") +
                         ". Pass the same columns, in the training order.")
    if np.any(np.isinf(X)):
        rows = np.unique(np.nonzero(np.isinf(X))[0])
        raise ValueError(f"{what} has infinite values in row(s) "
                         f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''}; replace "
                         "them (NaN marks a missing value).")
    _warn_read_by_position(X_new, columns is not None, what)
    return np.ascontiguousarray(X)


def _warn_read_by_position(X_new, named: bool, what: str) -> None:
    """Warn when a DataFrame's columns are read by position because the tree term has no
    column names (an array, or ``pm.Data("X", df)`` without dims, which PyMC stores as a
    plain array): its names cannot be checked, so columns in another order than the
    training one would be mixed up silently.  Silent for a named term, a single column, and
    labels that are the positions themselves (``0 .. p-1``, as str or int)."""
    cols = getattr(X_new, "columns", None)
    if named or cols is None or len(cols) < 2:
        return
    labels = [str(c) for c in cols]
    if labels == [str(j) for j in range(len(labels))]:
        return
    shown = ", ".join(repr(c) for c in labels[:5]) + (", ..." if len(labels) > 5 else "")
    warn_user(
        f"{what} is a DataFrame with columns {shown}, but the tree term was fit without "
        "column names (an array, or pm.Data(\"X\", df) without dims, which PyMC stores as a "
        "plain array), so its columns are read by position, in the training order, and "
        "their names cannot be checked: columns in another order would be mixed up "
        "silently. Give the term the names when it is built (BARTTree(..., "
        "columns=df.columns), or pm.Data(\"X\", df, dims=(\"obs\", \"column\"), "
        "infer_dims_and_coords=True)) to have them matched by name, or pass "
        f"{what}.to_numpy() with the columns in the training order.")


def evaluate(tf: TermForests, X: np.ndarray) -> np.ndarray:
    """Each stored draw's forest at the rows of X: array of shape (S, n), or (S, k, n) for a
    term with k outputs (output j: trees j*m to (j+1)*m - 1), S draws in the order of
    ``tf.samples`` (:meth:`TermForests.wrap` gives them their dims).  A term of linear
    leaves holds each line at the ends of the training range (:func:`clip_to_range`)."""
    X = clip_to_range(X, tf)
    S, m1 = tf.starts.shape
    k = 1 if tf.outputs is None else tf.outputs
    m = (m1 - 1) // k
    out = np.empty((k, S, X.shape[0]))
    for j in range(k):
        block = np.ascontiguousarray(tf.starts[:, j * m:(j + 1) * m + 1])
        predict_draws(block, tf.nodes, tf.offset, X, out[j])
    if tf.outputs is None:
        return out[0]
    return out.transpose(1, 0, 2)


def predict(idata, X_new, var_name: str = "f") -> xr.DataArray:
    """Evaluate each posterior draw's own forest at new rows.

    Parameters
    ----------
    idata : DataTree
        Result of ``pm.sample`` for a model with a ``BARTTree`` term (or one loaded from
        netCDF / zarr).
    X_new : array_like or DataFrame of shape (n_new, p)
        New rows with the training columns: a DataFrame is matched by column name when the
        training X had names; otherwise the columns are taken in the training order (a
        DataFrame of two or more columns with names then gives a ``UserWarning``: the names
        cannot be checked, so give the term names when it is built).  NaN
        is a missing value, routed as every split rule says (so is the term's ``missing``
        value in an array); categorical columns are matched by label (a level not seen in
        training is refused).
    var_name : str, default "f"
        Name of the ``BARTTree`` variable.

    Returns
    -------
    xarray.DataArray of shape (chain, draw, obs), or (chain, draw, output, obs) for a term of
    shape (k, n)
        The term at the new rows for every draw; at the training rows it equals the traced
        values exactly.  At the training rows (an X with the training X's values, in any
        form: an array, a DataFrame) the dims after the sample dims are the term's own, as
        in the posterior (``f_dim_0`` or the names given with ``dims=``) with their
        coordinates, so that ``pmt.predict(idata, X) - idata.posterior["f"]`` is zero row
        by row; at other rows the rows are ``obs`` (``0 .. n_new - 1``; ``obs_new`` when the
        trace has a dim ``obs`` of its own, such as a model's rows named ``obs``, so that
        new rows never pair with training rows by position) and the outputs of a
        term of shape (k, n) keep the name given with ``dims=`` and its labels (``output``,
        ``0 .. k - 1``, without).  The sample dims and their coordinates are those of
        ``idata``: after
        ``idata.sel(draw=slice(0, None, 4))`` the draws are labelled 0, 4, 8, ... as in its
        posterior, after ``idata.sel(chain=1)`` there is no chain dim, so arithmetic with the
        posterior pairs each draw with its own parameters.

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
    >>> f_new = pmt.predict(idata, X_new, var_name="f")     # (chain, draw, obs)
    >>> f_mean = f_new.mean(("chain", "draw"))
    """
    tf = read_forests(idata, var_name)
    X = check_new_rows(X_new, tf.columns, tf.n_features, schema=tf.schema,
                       missing=tf.missing)
    dims, coords = _result_dims(idata, tf, var_name, X)
    return tf.wrap(evaluate(tf, X), dims, coords, name=var_name)


def _group_coord(idata, dim: str, size: int):
    """The coordinate ``dim`` of the first group of ``idata`` that has one of length
    ``size`` (the posterior, the observed or constant data), else positions."""
    for group in ("posterior", "observed_data", "constant_data", "predictions"):
        try:
            ds = idata[group]
        except KeyError:
            continue
        if dim in ds.coords and ds.sizes.get(dim) == size:
            return np.asarray(ds[dim].values)
    return np.arange(size)


def _new_rows_dim(idata) -> str:
    """The dim of new rows: ``obs``, unless a group of ``idata`` already has a dim of that
    name (a model's own rows, say), whose labels the new rows' positions would then pair
    with in xarray arithmetic: then ``obs_new`` (``obs_new_1``, ... if that is taken too)."""
    taken = set()
    for group in ("posterior", "observed_data", "constant_data", "predictions",
                  "posterior_predictive"):
        try:
            taken.update(str(d) for d in idata[group].dims)
        except KeyError:
            continue
    name, i = "obs", 0
    while name in taken:
        i += 1
        name = "obs_new" if i == 1 else f"obs_new_{i - 1}"
    return name


def _result_dims(idata, tf: TermForests, var_name: str, X: np.ndarray):
    """The dims after the sample dims, and their coordinates, of ``predict``'s result.

    At the training rows (the same values as the training X, :func:`rows_fingerprint`) they
    are the term's own dims in the posterior (or, for a term the trace does not record, as
    the model named them), with their coordinates, so that arithmetic with the posterior
    and the observed data pairs row by row.  At other rows the rows are ``obs``
    (``0 .. n_new - 1``; ``obs_new`` when the trace has a dim ``obs`` of its own, so that
    new rows never pair with the training rows by position) and the outputs keep a name
    given by ``dims=`` (else ``output``) with their labels."""
    k = tf.outputs
    n_new = X.shape[0]
    post = None
    try:
        ds = idata["posterior"]
        if var_name in ds.data_vars:
            post = ds[var_name]
    except KeyError:
        pass
    own = None  # the term's dims after the sample dims
    if post is not None:
        own = tuple(str(d) for d in post.dims if d not in tf.sample_dims)
    elif tf.term_dims is not None:
        own = tf.term_dims
    if own is not None and len(own) != (1 if k is None else 2):
        own = None
    sizes = {} if post is None else dict(post.sizes)

    def coord(dim, size):
        if post is not None and dim in post.coords:
            return np.asarray(post[dim].values)
        return _group_coord(idata, dim, size)

    training = (tf.rows is not None and tf.rows.startswith(f"{n_new}x")
                and rows_fingerprint(X) == tf.rows)
    if training and own is not None:
        row_dim = own[-1]
        rows = coord(row_dim, sizes.get(row_dim, n_new))
        if len(rows) != n_new:
            rows = np.arange(n_new)
    else:
        row_dim, rows = _new_rows_dim(idata), np.arange(n_new)
    if k is None:
        return (row_dim,), {row_dim: rows}
    out_dim = "output"
    if own is not None and (training or own[0] != f"{var_name}_dim_0"):
        out_dim = own[0]
    labels = coord(out_dim, k) if out_dim != "output" else np.arange(k)
    if len(labels) != k:
        labels = np.arange(k)
    return (out_dim, row_dim), {out_dim: labels, row_dim: rows}
