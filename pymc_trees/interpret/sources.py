"""Where an interpretation reads its model from: a BART term in a DataTree (its forests per
posterior draw, thinned to ``max_draws``) or a fitted boosting estimator, behind one
interface (:func:`interpretation_source`), and the forests as one node array whose
sub-forests of the trees that read given columns are predicted apart (so a change of those
columns re-evaluates only them).  Used by :mod:`~pymc_trees.interpret.importance`,
:mod:`~pymc_trees.interpret.dependence` and :mod:`~pymc_trees.interpret.selection`."""

from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np
import xarray as xr
from scipy.special import expit, softmax

from pymc_trees.bart.term.trace_io import clip_to_range, read_forests
from pymc_trees.core.packed import predict_marginal_ragged, predict_ragged
from pymc_trees.core.tabular import TableSchema
from pymc_trees.results.predict import check_new_rows

__all__ = ["interpretation_source", "require_rows", "blocks_per_call", "split_forests",
           "predict_blocks", "RESERVED_DIMS", "BATCH_FLOATS"]

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
        A = clip_to_range(check_new_rows(X, tf.columns, tf.n_features, what=what,
                                         schema=tf.schema, missing=tf.missing), tf)
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


def blocks_per_call(n_blocks: int, rows_per_block: int, floats_per_row: int) -> int:
    """How many blocks of rows to evaluate per kernel call under :data:`BATCH_FLOATS`."""
    return int(max(1, min(n_blocks, BATCH_FLOATS // max(1, rows_per_block * floats_per_row))))


def split_forests(src: _Source, A: np.ndarray, cols: list[int]):
    """Split the forests for changes of the columns ``cols`` of the encoded rows A: the
    trees with a split on one of them, and the sum of the others with the offsets at A,
    shape (R, n), which such changes leave as it is."""
    reads = src.trees.reads(cols)
    const = src.trees.predict(A, ~reads)
    return reads, const


def predict_blocks(src: _Source, reads: np.ndarray, const: np.ndarray, big: np.ndarray,
        blocks: int) -> np.ndarray:
    """The model at ``blocks`` stacked copies of the rows (``big``, shape (blocks * n, p))
    whose other trees sum to ``const`` (R, n): array (S, K, blocks, n)."""
    R, n = const.shape
    v = src.trees.predict(big, reads, offsets=False).reshape(R, blocks, n)
    v += const[:, None, :]
    return src.response(src.margin(v))
