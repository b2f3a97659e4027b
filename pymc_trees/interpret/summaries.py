"""Interpretation of tree terms and boosting models: variable importance, partial dependence
and ICE curves, with credible intervals across posterior draws.

Every function takes a ``source``: the DataTree returned by ``pm.sample`` for a model with a
:class:`~pymc_trees.BARTTree` term (``var_name`` says which term), or a fitted
:class:`~pymc_trees.boosting.BoostedTreesRegressor` /
:class:`~pymc_trees.boosting.BoostedTreesClassifier`.

* :func:`variable_importance` - per draw, the share of internal nodes that split on each column
  (``kind="inclusion"``), or the drop in explained variance of the term when a column is
  permuted (``kind="permutation"``).
* :func:`partial_dependence` - 1-D and 2-D partial dependence and ICE curves per draw on a grid
  (quantiles of a numeric column, the levels of a categorical or ordinal one) or at given
  values.
* :func:`plot_variable_importance`, :func:`plot_partial_dependence` - matplotlib plots with
  highest-density intervals across draws.

For a BART term the results carry the sample dims ``(chain, draw)`` (thinned to at most
``max_draws`` evenly spaced draws), so ``arviz.hdi(result, dim=["chain", "draw"])`` gives
credible intervals.  For a boosting model they have no sample dims: one point value per
column or grid value.  Scales: a BART term is interpreted on its own scale (the values of
``f``, as :func:`pymc_trees.predict` returns them: for a logit term, the logit); a boosting
model on the scale of its predictions as scikit-learn's ``partial_dependence`` uses them
(``predict`` for a regressor; ``predict_proba`` for a classifier: the probability of
``classes_[1]`` for two classes, every class for more).  Formulas and choices:
``docs/interpret.md``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit, softmax

from pymc_trees.core.packed import predict_marginal_ragged, predict_ragged
from pymc_trees.results.predict import check_new_rows
from pymc_trees.core.tabular import TableSchema
from pymc_trees.bart.trace_io import read_forests

__all__ = ["variable_importance", "partial_dependence", "plot_variable_importance",
           "plot_partial_dependence", "plot_convergence", "plot_partial_dependence_grid"]

# the dims a result can have over posterior draws: (chain, draw), a selection that dropped
# one of them, or draws stacked into "sample"
_DRAW_DIMS = ("chain", "draw", "sample")
RESERVED_DIMS = ("chain", "draw", "output", "obs", "column", "ci_bound")
# Floats of predictions computed per call of the prediction kernel (grid points and permuted
# copies of X are batched up to this size): 2**23 floats are 64 MB.
BATCH_FLOATS = 2 ** 23


# --- the forests as one node array, and sub-forests of the trees that read given columns -----


def _gather(lo: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Indices ``lo[s], lo[s]+1, ..., lo[s]+sizes[s]-1`` for every segment s, concatenated
    (no loop over segments)."""
    sizes = sizes.astype(np.int64)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.arange(sizes.sum()) - np.repeat(first - lo, sizes)


class _Trees:
    """R rows of forests (a row: one draw's trees of one output) over one node array.

    Attributes
    ----------
    nodes : structured ndarray, dtype ``NODE_DTYPE``; ``left`` absolute in it
    starts : int64 ndarray of shape (R, m + 1)
        Row r's tree t occupies ``nodes[starts[r, t]:starts[r, t + 1]]``.
    offsets : float64 ndarray of shape (R,)
    """

    def __init__(self, nodes: np.ndarray, starts: np.ndarray, offsets: np.ndarray):
        self.nodes = nodes
        self.starts = np.asarray(starts, np.int64)
        self.offsets = np.asarray(offsets, np.float64)

    def counts(self, p: int) -> np.ndarray:
        """Internal nodes per column in every row: int64 array (R, p)."""
        st = self.starts
        idx = _gather(st[:, 0], st[:, -1] - st[:, 0])
        seg = np.repeat(np.arange(st.shape[0]), st[:, -1] - st[:, 0])
        feat = self.nodes["feature"][idx].astype(np.int64)
        internal = feat >= 0
        flat = seg[internal] * p + feat[internal]
        return np.bincount(flat, minlength=st.shape[0] * p).reshape(st.shape[0], p)

    def reads(self, cols) -> np.ndarray:
        """Boolean array (R, m): whether each tree has a split on one of ``cols``."""
        hit = np.isin(self.nodes["feature"], np.asarray(cols, dtype=np.int64))
        csum = np.concatenate([[0], np.cumsum(hit)])
        return csum[self.starts[:, 1:]] > csum[self.starts[:, :-1]]

    def _subset(self, trees: np.ndarray | None):
        """The trees where ``trees[r]`` is True (all when None), repacked for
        :func:`predict_ragged`: roots, ptr and nodes."""
        st = self.starts
        R = st.shape[0]
        keep = np.ones((R, st.shape[1] - 1), bool) if trees is None else trees
        rr, tt = np.nonzero(keep)  # row by row, trees in order
        lo = st[rr, tt]
        sizes = st[rr, tt + 1] - lo
        new_lo = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        sub = self.nodes[_gather(lo, sizes)]
        shift = np.repeat(new_lo - lo, sizes)
        sub["left"] = np.where(sub["left"] >= 0, sub["left"] + shift, -1)
        roots = np.append(new_lo, sizes.sum()).astype(np.int32)
        ptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
        return roots, ptr, sub

    def predict(self, X: np.ndarray, trees: np.ndarray | None = None,
                offsets: bool = True, excluded: np.ndarray | None = None) -> np.ndarray:
        """Row r's forest (only the trees where ``trees[r]`` is True, when given) at the
        encoded rows X: array (R, n); the offsets added when ``offsets``.  With
        ``excluded`` (bool, shape (p,)), those columns are marginalised out by the rows of X
        (:func:`~pymc_trees.core.packed.predict_marginal_ragged`)."""
        roots, ptr, sub = self._subset(trees)
        R = self.starts.shape[0]
        off = self.offsets if offsets else np.zeros(R)
        out = np.empty((R, X.shape[0]))
        X = np.ascontiguousarray(X, dtype=np.float64)
        if excluded is None or not np.any(excluded):
            predict_ragged(roots, ptr, sub, off, X, out)
        else:
            predict_marginal_ragged(roots, ptr, sub, off, X,
                                    np.asarray(excluded, dtype=np.bool_), out)
        return out


# --- sources: a BART term in a DataTree, or a fitted boosting estimator -----------------------


class _Source:
    """What the interpretation functions need from a model.

    Attributes
    ----------
    kind : {"bart", "boosting"}
    trees : _Trees
        Row ``s * K + k``: sample s (a kept draw; the one fit of a boosting model), output k.
    sample_shape : tuple of int
        ``(chains, kept draws)`` for BART (the shape of the trace's own sample dims, which a
        selection of draws may have changed), ``()`` for boosting.
    sample_dims : tuple of str
        The names of those dims (``()`` for boosting).
    sample_coords : xarray.Coordinates or dict
        Coordinates of the sample dims.
    outputs : ndarray or None
        Coordinates of the ``output`` dim (None: a single output, no such dim).
    var_name : str
    """

    kind: str
    trees: _Trees
    sample_shape: tuple[int, ...]
    sample_dims: tuple[str, ...]
    sample_coords: object
    outputs: np.ndarray | None
    var_name: str

    @property
    def n_samples(self) -> int:
        return int(np.prod(self.sample_shape)) if self.sample_shape else 1

    @property
    def n_outputs(self) -> int:
        return 1 if self.outputs is None else len(self.outputs)

    def encode(self, X, what: str = "X") -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def schema(self) -> TableSchema:  # pragma: no cover - abstract
        raise NotImplementedError

    def response(self, margin: np.ndarray) -> np.ndarray:
        """The interpreted value from the forests' sums, ``margin`` of shape (S, K, ...)."""
        return margin

    def margin(self, R_by_n: np.ndarray) -> np.ndarray:
        """Array (R, ...) as (S, K, ...)."""
        return R_by_n.reshape(self.n_samples, self.n_outputs, *R_by_n.shape[1:])

    def evaluate(self, X: np.ndarray) -> np.ndarray:
        """The model at the encoded rows X of shape (n, p): array (S, K, n)."""
        return self.response(self.margin(self.trees.predict(X)))

    def wrap(self, arr: np.ndarray, dims: tuple[str, ...], coords: dict, name: str,
             attrs: dict) -> xr.DataArray:
        """``arr`` of shape (S, K, *rest) as a DataArray with the sample dims (reshaped),
        ``output`` (dropped for a single output) and ``dims`` for the rest."""
        if self.outputs is None:
            arr = arr[:, 0]
            out_dims: tuple[str, ...] = ()
        else:
            out_dims = ("output",)
        arr = arr.reshape(self.sample_shape + arr.shape[1:])
        extra = dict(coords)
        if self.outputs is not None:
            extra["output"] = self.outputs
        da = xr.DataArray(arr, dims=self.sample_dims + out_dims + dims,
                          coords=self.sample_coords, name=name, attrs=attrs)
        return da.assign_coords(extra)


def _thin(draws: int, chains: int, max_draws: int | None) -> np.ndarray:
    """Indices of at most ``max_draws // chains`` (at least 1) evenly spaced draws per chain
    (``draws`` per chain)."""
    if max_draws is None or draws * chains <= max_draws:
        return np.arange(draws)
    k = max(1, max_draws // max(chains, 1))
    return np.unique(np.round(np.linspace(0, draws - 1, k)).astype(np.int64))


class _BartSource(_Source):
    kind = "bart"

    def __init__(self, idata, var_name: str, max_draws: int | None):
        tf = read_forests(idata, var_name)
        m1 = tf.starts.shape[1]
        samples = tf.samples
        if samples.ndim:  # thin along the last sample dim (draw), evenly in every chain
            last = samples.dims[-1]
            size = samples.sizes[last]
            keep = _thin(size, samples.size // max(size, 1), max_draws)
            samples = samples.isel({last: keep})
        self.tf = tf
        self.var_name = var_name
        self.sample_shape = samples.shape
        self.sample_dims = tuple(str(d) for d in samples.dims)
        self.sample_coords = samples.coords
        self.outputs = None if tf.outputs is None else np.arange(tf.outputs)
        K = self.n_outputs
        m = (m1 - 1) // K
        st = tf.starts[samples.values.ravel()]  # (S, K*m + 1)
        # output k of sample s: trees k*m .. (k+1)*m - 1, as pymc_trees.predict
        rows = np.stack([st[:, k * m:(k + 1) * m + 1] for k in range(K)], axis=1)
        rows = rows.reshape(-1, m + 1)
        self.trees = _Trees(tf.nodes, rows, np.full(rows.shape[0], tf.offset))
        self._schema = tf.schema
        if self._schema is None and tf.n_features >= 0:
            self._schema = _plain_schema(tf.columns, tf.n_features)

    def schema(self) -> TableSchema:
        if self._schema is None:  # forests read from a raw sampler stat: columns unknown
            feat = self.tf.nodes["feature"]
            p = int(feat.max()) + 1 if feat.size and feat.max() >= 0 else 1
            self._schema = _plain_schema(None, p)
        return self._schema

    def encode(self, X, what: str = "X") -> np.ndarray:
        tf = self.tf
        A = check_new_rows(X, tf.columns, tf.n_features, what=what, schema=tf.schema,
                           missing=tf.missing)
        if self._schema is None:
            self._schema = _plain_schema(None, A.shape[1])
        names = getattr(X, "columns", None)
        if names is not None and not self._schema.named:
            # positional training columns (an array, or pm.Data("X", df), which keeps no
            # names): X was read by position, and its names name the results and the
            # columns asked for
            self._schema = replace(self._schema, names=tuple(str(c) for c in names),
                                   named=True)
        return A


class _BoostingSource(_Source):
    kind = "boosting"

    def __init__(self, est):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(est, "_forests")
        self.est = est
        self.var_name = type(est).__name__
        self.sample_shape = ()
        self.sample_dims = ()
        self.sample_coords = {}
        forests = est.forests()
        sizes = np.array([fr.nodes.size for fr in forests], np.int64)
        base = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        nodes = np.concatenate([fr.nodes for fr in forests])
        nodes["left"] = np.where(nodes["left"] >= 0,
                                 nodes["left"] + np.repeat(base, sizes), -1)
        starts = np.stack([fr.start.astype(np.int64) + b for fr, b in zip(forests, base)])
        self.trees = _Trees(nodes, starts, [fr.offset for fr in forests])
        self.classifier = hasattr(est, "classes_")
        if self.classifier:
            classes = np.asarray(est.classes_)
            self.outputs = None if classes.size == 2 else classes
            self.link = "logistic" if classes.size == 2 else "softmax"
        else:
            alphas = np.atleast_1d(np.asarray(est.quantile_alpha, dtype=np.float64))
            self.outputs = (alphas if est.objective == "reg:quantileerror" and alphas.size > 1
                            else None)
            self.link = "log" if est.objective == "count:poisson" else "identity"

    def schema(self) -> TableSchema:
        return self.est.schema_

    def encode(self, X, what: str = "X") -> np.ndarray:
        return self.est._encode_X(X, what=what)

    def response(self, margin: np.ndarray) -> np.ndarray:
        # predict / predict_proba of the estimator, from its margins
        if self.link == "logistic":
            return expit(margin)
        if self.link == "softmax":
            return softmax(margin, axis=1)
        if self.link == "log":
            return np.exp(margin)
        return margin


def _plain_schema(columns, p: int) -> TableSchema:
    names = tuple(columns) if columns is not None else tuple(str(j) for j in range(p))
    return TableSchema(names, ("numeric",) * p, (None,) * p, columns is not None)


def interpretation_source(source, var_name: str, max_draws: int | None) -> _Source:
    if max_draws is not None and (isinstance(max_draws, bool)
                                  or not isinstance(max_draws, numbers.Integral)
                                  or max_draws < 1):
        raise ValueError(f"max_draws must be a positive integer or None (every draw); got "
                         f"{max_draws!r}.")
    if hasattr(source, "forests") and hasattr(source, "get_params"):
        return _BoostingSource(source)
    if not hasattr(source, "children"):
        raise TypeError(f"source must be the DataTree returned by pm.sample for a model with a "
                        f"BARTTree term, or a fitted BoostedTreesRegressor / "
                        f"BoostedTreesClassifier; got an object of type "
                        f"{type(source).__name__}.")
    if not isinstance(var_name, str):
        raise TypeError(f"var_name must be the name of a BARTTree variable (a str); got "
                        f"{var_name!r}.")
    return _BartSource(source, var_name, max_draws)


def require_rows(X, what: str = "X") -> None:
    if X is None:
        raise ValueError(f"{what} is needed: pass the rows to average over (for example the "
                         "training X, or a sample of it), with the training columns.")
    if getattr(X, "shape", (1,))[0] == 0:
        raise ValueError(f"{what} has no rows; pass at least one row.")


def _batches(n_blocks: int, rows_per_block: int, floats_per_row: int) -> int:
    """How many blocks of rows to evaluate per kernel call under :data:`BATCH_FLOATS`."""
    return int(max(1, min(n_blocks, BATCH_FLOATS // max(1, rows_per_block * floats_per_row))))


def _varying(src: _Source, A: np.ndarray, cols: list[int]):
    """Split the forests for changes of the columns ``cols`` of the encoded rows A: the
    trees with a split on one of them, and the sum of the others with the offsets at A,
    shape (R, n), which such changes leave as it is."""
    reads = src.trees.reads(cols)
    const = src.trees.predict(A, ~reads)
    return reads, const


def _at(src: _Source, reads: np.ndarray, const: np.ndarray, big: np.ndarray,
        blocks: int) -> np.ndarray:
    """The model at ``blocks`` stacked copies of the rows (``big``, shape (blocks * n, p))
    whose other trees sum to ``const`` (R, n): array (S, K, blocks, n)."""
    R, n = const.shape
    v = src.trees.predict(big, reads, offsets=False).reshape(R, blocks, n)
    v += const[:, None, :]
    return src.response(src.margin(v))



# --- variable importance ----------------------------------------------------------------------


def variable_importance(source, X=None, var_name: str = "f", kind: str = "inclusion",
                        n_repeats: int = 5, rng: np.random.Generator | int | None = None,
                        max_draws: int | None = 200) -> xr.DataArray:
    """Importance of every column of X, per posterior draw.

    Parameters
    ----------
    source : DataTree or fitted boosting estimator
        The result of ``pm.sample`` for a model with a ``BARTTree`` term, or a fitted
        :class:`~pymc_trees.boosting.BoostedTreesRegressor` /
        :class:`~pymc_trees.boosting.BoostedTreesClassifier`.
    X : array_like or DataFrame of shape (n, p), optional
        Rows at which the permutation measure is computed (the training rows, or a sample of
        them), with the training columns (a DataFrame is matched by name; when the
        training X had no names, as with ``pm.Data("X", df)``, its columns are read in the
        training order and its names label the result).  Needed for
        ``kind="permutation"``; ``kind="inclusion"`` reads only its column names.
    var_name : str, default "f"
        The ``BARTTree`` variable (ignored for a boosting estimator).
    kind : {"inclusion", "permutation"}, default "inclusion"
        ``"inclusion"``: per draw, the number of internal nodes splitting on column j over
        the number of internal nodes of the draw's forest (NaN for a forest of stumps), so
        that the shares of a draw sum to 1.  ``"permutation"``: per draw, with ``f`` the
        draw's values at the rows of X and ``f_j`` its values with column j permuted among
        the rows, ``mean((f - f_j) ** 2) / var(f)`` (the drop of the explained variance
        ``R^2`` of ``f_j`` as a prediction of ``f`` from 1), averaged over ``n_repeats``
        permutations; 0 when ``f_j == f`` exactly, NaN when ``var(f) = 0`` and permuting
        changes ``f``.
    n_repeats : int, default 5
        Permutations per column (``kind="permutation"``).
    rng : numpy.random.Generator, int or None
        Source of the permutations: a generator (advanced) or a seed.  The permutations are
        drawn repeat by repeat, column by column (``rng.permutation(n)`` each) and shared by
        all draws.  None takes fresh entropy from the operating system (not reproducible).
    max_draws : int or None, default 200
        At most this many posterior draws are used: ``max_draws // chains`` per chain, evenly
        spaced (None: every draw).  Ignored for a boosting estimator.

    Returns
    -------
    xarray.DataArray
        Dims ``(chain, draw, column)`` for a BART term, ``(chain, draw, output, column)`` for a
        term of shape (k, n); ``(column,)`` or ``(output, column)`` for a boosting estimator
        (a multi-class classifier: one output per class; quantile regression with several
        quantiles: one per quantile).  Coordinate ``column``: the column names of the
        training X (``"0", "1", ...`` when it had none).  Attributes ``kind``, ``var_name``,
        ``source`` ("bart" or "boosting") and, for permutations, ``n_repeats``.

    Raises
    ------
    ValueError
        For an unknown ``kind``, ``kind="permutation"`` without X, ``n_repeats < 1``, an X
        without the training columns, or a bad ``max_draws``.
    TypeError
        When ``source`` is neither a DataTree nor a fitted boosting estimator.

    Examples
    --------
    >>> imp = variable_importance(idata, X, kind="permutation", rng=1)  # doctest: +SKIP
    >>> az.hdi(imp, dim=["chain", "draw"])                              # doctest: +SKIP
    """
    if kind not in ("inclusion", "permutation"):
        raise ValueError(f"kind must be 'inclusion' or 'permutation'; got {kind!r}.")
    src = interpretation_source(source, var_name, max_draws)
    attrs = {"kind": kind, "var_name": src.var_name, "source": src.kind}
    if X is not None:
        require_rows(X)
        A = src.encode(X)  # checks X; a DataFrame names positional training columns
    if kind == "inclusion":
        p = src.schema().p
        counts = src.trees.counts(p).reshape(src.n_samples, src.n_outputs, p).astype(float)
        total = counts.sum(axis=-1, keepdims=True)
        share = np.divide(counts, total, out=np.full_like(counts, np.nan), where=total > 0)
        names = np.asarray(src.schema().names)
        return src.wrap(share, ("column",), {"column": names}, "inclusion", attrs)
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, numbers.Integral) \
            or n_repeats < 1:
        raise ValueError(f"n_repeats must be a positive integer; got {n_repeats!r}.")
    require_rows(X)  # X is needed here (encoded above)
    gen = np.random.default_rng(rng)
    n, p = A.shape
    f = src.evaluate(A)  # (S, K, n)
    S, K = f.shape[:2]
    num = np.zeros((S, K, p))
    # permutations drawn repeat by repeat, column by column, shared by all draws
    perms = [[gen.permutation(n) for _ in range(p)] for _ in range(n_repeats)]
    for j in range(p):
        reads, const = _varying(src, A, [j])
        if not reads.any():  # no split reads column j: f_j == f exactly
            continue
        base = _at(src, reads, const, A, 1)[:, :, 0]  # f, summed as f_j is
        per = _batches(n_repeats, n, src.trees.starts.shape[0] + p)
        for b in range(0, n_repeats, per):
            g = min(per, n_repeats - b)
            big = np.tile(A, (g, 1))
            big[:, j] = np.concatenate([A[perms[r][j], j] for r in range(b, b + g)])
            fj = _at(src, reads, const, big, g)  # (S, K, g, n)
            num[:, :, j] += np.mean((fj - base[:, :, None, :]) ** 2, axis=-1).sum(axis=-1)
    num /= n_repeats
    var = f.var(axis=-1)[..., None]  # (S, K, 1)
    imp = np.divide(num, var, out=np.where(num == 0, 0.0, np.nan), where=var > 0)
    attrs["n_repeats"] = int(n_repeats)
    names = np.asarray(src.schema().names)
    return src.wrap(imp, ("column",), {"column": names}, "permutation", attrs)


# --- partial dependence -----------------------------------------------------------------------


def _resolve_column(c, schema: TableSchema) -> int:
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
    idx = [_resolve_column(c, schema) for c in cols]
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
            j = _resolve_column(key, schema)
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
    >>> pd_x = partial_dependence(idata, X, "x0")                         # doctest: +SKIP
    >>> az.hdi(pd_x["average"], dim=["chain", "draw"])                    # doctest: +SKIP
    >>> plot_partial_dependence(partial_dependence(idata, X, ["x0", "x1"]))  # doctest: +SKIP
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
    reads, const = _varying(src, A, cols)
    per = _batches(G, n, S * K + A.shape[1])
    for b in range(0, G, per):
        g = min(per, G - b)
        big = np.tile(A, (g, 1))
        big[:, cols] = np.repeat(points[b:b + g], n, axis=0)
        out = _at(src, reads, const, big, g)  # (S, K, g, n)
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


# --- plots ------------------------------------------------------------------------------------


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
    """

    if kind not in ("average", "individual", "both"):
        raise ValueError(f"kind must be 'average', 'individual' or 'both'; got {kind!r}.")
    require_rows(X)
    src = interpretation_source(source, var_name, max_draws)
    pick = _output_position(output, src.outputs, kind, src.var_name)
    A = src.encode(X)
    schema = src.schema()
    cols = list(range(schema.p)) if columns is None else [
        _resolve_column(c, schema) for c in ([columns] if isinstance(columns, (str, int))
                                             else columns)]
    discrete = set() if var_discrete is None else {
        _resolve_column(c, schema) for c in ([var_discrete]
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
