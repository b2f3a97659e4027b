"""Gradient-boosted trees in the style of XGBoost, with a scikit-learn API: the frequentist
baseline that shares the tree core with BART (binning, packed forests, the prediction kernel).

Nothing of PyMC is imported here.  The math is docs/math.md section 7 (XGBoost's second-order
objective); ``pymc_trees.boosting.kernels`` grows the trees and documents the split rules.

* :class:`BoostedTreesRegressor`: ``objective`` ``"reg:squarederror"`` (default),
  ``"count:poisson"`` (log link) or ``"reg:quantileerror"`` with ``quantile_alpha`` (a float or
  a list: one forest per quantile, ``predict`` then returns one column per quantile).
* :class:`BoostedTreesClassifier`: ``"binary:logistic"`` for two classes, ``"multi:softprob"``
  (one tree per class per round) for more, chosen from the labels.

Parameters follow XGBoost's names and defaults (``learning_rate=0.3``, ``max_depth=6``,
``min_child_weight=1``, ``reg_lambda=1``, ``max_bin=256``, ``tree_method="hist"``, 100
rounds, ``max_cat_to_onehot=4``, ``max_cat_threshold=64``).  Choices where XGBoost leaves room
are in ``docs/boosting.md``.

X may be a numeric array (NaN: missing) or a pandas DataFrame with numeric, bool, ``category``
and string columns (:class:`pymc_trees.core.tabular.TableSchema` reads it; ``schema_`` keeps what
each column is, and new rows are encoded with it).  Unordered categories and strings are split
by sets of categories, as XGBoost's ``enable_categorical=True``; ordered categories are split
as their codes; integer-coded numeric columns become categorical through
``categorical_features``.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_feature_names, _check_sample_weight, _check_y,
                                      check_array, check_consistent_length, check_is_fitted)

from pymc_trees.boosting import kernels as boost
from pymc_trees.boosting.objectives import (METRICS, OBJECTIVES, POISSON_MAX_DELTA_STEP,
                                            base_margin, grad_hess, metric_value,
                                            weighted_quantile)
from pymc_trees.core.binning import MAX_NUMCUT, make_cutpoints
from pymc_trees.core.packed import PackedForest, predict_packed_parallel
from pymc_trees.core.tabular import TableSchema
from pymc_trees.boosting.tree_data import (compact_tree, numba_threads, pack_trees, sample_weights,
                                           sorted_columns)

__all__ = ["BoostedTreesRegressor", "BoostedTreesClassifier", "OBJECTIVES", "METRICS"]


class _BoostedTrees(BaseEstimator):
    """Shared fitting loop of the two estimators (see the module docstring)."""

    def __init__(self, *, n_estimators: int = 100, learning_rate: float = 0.3,
                 max_depth: int = 6, min_child_weight: float = 1.0, reg_lambda: float = 1.0,
                 reg_alpha: float = 0.0, gamma: float = 0.0, subsample: float = 1.0,
                 colsample_bytree: float = 1.0, max_bin: int = 256, tree_method: str = "hist",
                 base_score: float | None = None, max_delta_step: float | None = None,
                 early_stopping_rounds: int | None = None, eval_metric: str | None = None,
                 importance_type: str = "gain", random_state=None, n_jobs: int | None = None,
                 categorical_features="from_dtype", max_cat_to_onehot: int = 4,
                 max_cat_threshold: int = 64):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.gamma = gamma
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.tree_method = tree_method
        self.base_score = base_score
        self.max_delta_step = max_delta_step
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_metric = eval_metric
        self.importance_type = importance_type
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.categorical_features = categorical_features
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_cat_threshold = max_cat_threshold

    # -- validation ----------------------------------------------------------------------

    def _check_params(self, objective):
        def positive_int(name, allow_zero=False):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < (
                    0 if allow_zero else 1):
                raise ValueError(f"{name} must be an integer >= {0 if allow_zero else 1}; "
                                 f"got {v!r}.")

        positive_int("n_estimators")
        positive_int("max_depth", allow_zero=True)
        positive_int("max_cat_to_onehot")
        positive_int("max_cat_threshold")
        positive_int("max_bin")
        if not 2 <= self.max_bin <= MAX_NUMCUT + 1:
            raise ValueError(
                f"max_bin must be between 2 and {MAX_NUMCUT + 1} (bin codes are 16-bit); got "
                f"{self.max_bin}. For every distinct value of a feature as a candidate split, "
                "use tree_method='exact'.")
        if self.max_depth == 0 and self.tree_method == "exact":
            raise ValueError("max_depth=0 (no depth limit, as in XGBoost) needs "
                             "tree_method='hist'; XGBoost's exact method refuses it too. Pass "
                             "max_depth >= 1 for tree_method='exact'.")
        for name, lo, lo_open in (("learning_rate", 0, True), ("min_child_weight", 0, False),
                                  ("reg_lambda", 0, False), ("reg_alpha", 0, False),
                                  ("gamma", 0, False)):
            v = getattr(self, name)
            if not isinstance(v, numbers.Real) or not np.isfinite(v) or v < lo or (
                    lo_open and v == lo):
                raise ValueError(f"{name} must be a finite number {'>' if lo_open else '>='} "
                                 f"{lo}; got {v!r}.")
        for name in ("subsample", "colsample_bytree"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Real) or not 0 < v <= 1:
                raise ValueError(f"{name} must lie in (0, 1]; got {v!r}.")
        if self.tree_method not in ("hist", "exact"):
            raise ValueError(f"tree_method must be 'hist' or 'exact'; got {self.tree_method!r}.")
        if self.importance_type not in ("gain", "weight", "cover", "total_gain", "total_cover"):
            raise ValueError("importance_type must be one of 'gain', 'weight', 'cover', "
                             f"'total_gain', 'total_cover'; got {self.importance_type!r}.")
        if self.early_stopping_rounds is not None:
            positive_int("early_stopping_rounds")
        if self.eval_metric is not None and self.eval_metric not in METRICS[objective]:
            raise ValueError(f"eval_metric {self.eval_metric!r} is not available for "
                             f"{objective}; choose one of {METRICS[objective]}.")
        if self.max_delta_step is not None and not (
                isinstance(self.max_delta_step, numbers.Real) and self.max_delta_step >= 0):
            raise ValueError(f"max_delta_step must be >= 0; got {self.max_delta_step!r}.")

    # -- input ---------------------------------------------------------------------------

    @staticmethod
    def _numbers_if_object(X):
        """A numpy array of dtype object that holds numbers, as float64 (scikit-learn reads
        such arrays as numeric); anything else unchanged (an object array of strings is then
        refused by :class:`~pymc_trees.core.tabular.TableSchema`, which points to DataFrames)."""
        if isinstance(X, np.ndarray) and X.dtype == object:
            try:
                return np.asarray(X, dtype=np.float64)
            except ValueError:
                return X
        return X

    def _fit_X(self, X) -> np.ndarray:
        """The training X encoded (float64 (n, p), C-contiguous); sets ``schema_``,
        ``n_features_in_`` and, for DataFrames with string column names,
        ``feature_names_in_``."""
        cat = self.categorical_features
        if isinstance(cat, str):
            if cat != "from_dtype":
                raise ValueError("categorical_features must be 'from_dtype' or a list of column "
                                 "indices or names, or a boolean mask; got "
                                 f"{self.categorical_features!r}.")
            cat = None
        X = self._numbers_if_object(X)
        _check_feature_names(self, X, reset=True)
        schema, A = TableSchema.from_training(X, categorical=cat)
        A = check_array(A, ensure_all_finite="allow-nan", dtype=np.float64, estimator=self)
        L = schema.n_levels
        big = [j for j in range(schema.p)
               if schema.kinds[j] == "categorical" and L[j] > boost.MAX_CATEGORIES]
        if big:
            cols = ", ".join(f"{schema.names[j]!r} ({L[j]} levels)" for j in big[:5])
            raise ValueError(
                f"Categorical column(s) {cols} have more than {boost.MAX_CATEGORIES} levels, "
                "the most a split's bit set holds. Group rare levels into one (for example "
                "'other'), or pass the column as ordered codes (an ordered category or numbers), "
                "which are split as numbers.")
        self.schema_ = schema
        self.n_features_in_ = schema.p
        return np.ascontiguousarray(A)

    def _encode_X(self, X, what: str = "X") -> np.ndarray:
        """New rows in the training encoding (``schema_``), float64 (n, p), C-contiguous.
        Column names are checked as scikit-learn does (same names, same order)."""
        check_is_fitted(self, "schema_")
        X = self._numbers_if_object(X)
        _check_feature_names(self, X, reset=False)
        if not hasattr(X, "columns"):
            A = np.asarray(X)
            if A.ndim == 2 and A.shape[1] != self.n_features_in_:
                raise ValueError(f"{what} has {A.shape[1]} features, but {type(self).__name__} "
                                 f"is expecting {self.n_features_in_} features as input.")
        A = self.schema_.encode(X, what=what)
        return np.ascontiguousarray(check_array(A, ensure_all_finite="allow-nan",
                                                dtype=np.float64, estimator=self))

    def _fit_y(self, X, y, y_numeric: bool) -> np.ndarray:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None.")
        y = _check_y(y, y_numeric=y_numeric, estimator=self)
        check_consistent_length(X, y)
        return y

    # -- fitting ---------------------------------------------------------------------------

    def _fit(self, X, y, sample_weight, eval_set, objective, K, alphas, n_classes):
        with numba_threads(self.n_jobs) as threads:
            return self._fit_threads(X, y, sample_weight, eval_set, objective, K, alphas,
                                     n_classes, threads)

    def _fit_threads(self, X, y, sample_weight, eval_set, objective, K, alphas, n_classes,
                     threads):
        self._check_params(objective)
        n, p = X.shape
        w = sample_weights(sample_weight, X)
        rng = check_random_state(self.random_state)
        # max_depth=0: no depth limit (XGBoost's hist reading).  A split with positive gain
        # leaves rows on both sides, so a tree has at most n leaves and 2n - 1 nodes, and n - 1
        # levels below its root; that bounds the node arrays whatever the depth.
        depth = int(self.max_depth) if self.max_depth > 0 else max(1, n - 1)
        mds = (self.max_delta_step if self.max_delta_step is not None else
               POISSON_MAX_DELTA_STEP if objective == "count:poisson" else 0.0)
        self._mds = float(mds)
        base = base_margin(objective, self.base_score, y, w, K, alphas, n_classes)
        # rows of weight 0 take no part in the fit (as if removed): no cutpoints, no bag
        live = w > 0
        feat_missing = np.isnan(X[live]).any(axis=0)
        # categorical columns: split by sets of their level codes (ordinal ones as numbers)
        is_cat = self.schema_.categorical
        n_cat = np.where(is_cat, self.schema_.n_levels, 0).astype(np.int64)
        onehot, cat_thr = int(self.max_cat_to_onehot), int(self.max_cat_threshold)
        exact = self.tree_method == "exact"
        if exact:
            XT, sorted_idx, n_present = sorted_columns(X, live, is_cat)
            data = boost.SortedData(XT, sorted_idx, n_present, n_cat, feat_missing)
        else:
            cuts, ncuts = self._hist_cuts(X, w, is_cat, n_cat, threads)
            XbT = boost.binned_columns(X, cuts, ncuts)  # column-major (p, n)
            data = boost.BinnedData(XbT, ncuts, n_cat, feat_missing)
            miss_bin = int(ncuts.max(initial=0)) + 1
            ws = boost.hist_workspace(n, p, miss_bin, min(depth, 30))
            all_rows = np.arange(n, dtype=np.int64)
        evals = self._read_evals(eval_set, base)
        metric = self.eval_metric or METRICS[objective][0]
        self.evals_result_ = {f"validation_{j}": {metric: []} for j in range(len(evals))}
        cap = min(boost.tree_capacity(min(depth, 30)), 2 * n - 1)
        bufs = dict(feature=np.empty(cap, np.int64), threshold=np.zeros(cap),
                    cutbin=np.zeros(cap, np.int64), missing_left=np.ones(cap, np.bool_),
                    cats=np.zeros(cap, np.uint64), left=np.empty(cap, np.int64),
                    value=np.zeros(cap), loss_chg=np.zeros(cap), cover=np.zeros(cap))
        margin = np.tile(base, (n, 1))
        trees = [[] for _ in range(K)]
        n_cols = max(1, int(np.floor(self.colsample_bytree * p)))
        best_score, best_round, rounds_done = np.inf, 0, 0
        lam, alpha, eta = float(self.reg_lambda), float(self.reg_alpha), float(self.learning_rate)
        mcw = float(self.min_child_weight)
        params = boost.SplitParams(int(depth), mcw, lam, alpha, self._mds, eta, onehot, cat_thr)
        tree = boost.NodeArrays(bufs["feature"], bufs["threshold" if exact else "cutbin"],
                                *(bufs[f] for f in boost.NodeArrays._fields[2:]))
        # buffers reused across rounds (fresh arrays of a million rows page-fault)
        G, H = np.empty((K, n)), np.empty((K, n))
        upd = np.empty(n)
        live_rows = np.flatnonzero(live).astype(np.int64)
        dead_rows = np.flatnonzero(~live).astype(np.int64)
        for r in range(self.n_estimators):
            g, h = grad_hess(objective, margin, y, w, alphas, self._mds, G, H)
            if self.subsample < 1.0:
                in_bag = (rng.random_sample(n) < self.subsample) & live
                rows = np.flatnonzero(in_bag).astype(np.int64)
                out_rows = np.flatnonzero(~in_bag).astype(np.int64)
            else:
                in_bag, rows, out_rows = live, live_rows, dead_rows
            for k in range(K):
                colmask = np.zeros(p, np.bool_)
                if n_cols < p:
                    colmask[rng.choice(p, n_cols, replace=False)] = True
                else:
                    colmask[:] = True
                gk = g[k]
                hk = h[k]
                b = bufs
                if exact:
                    n_nodes = boost.grow_exact(data, gk, hk, in_bag, colmask, params, tree)
                else:
                    upd[:] = 0.0
                    n_nodes = boost.grow_hist(data, gk, hk, rows, colmask, params, tree, upd,
                                              ws)
                    internal = b["feature"][:n_nodes] >= 0
                    b["threshold"][:n_nodes][internal] = cuts[
                        b["feature"][:n_nodes][internal], b["cutbin"][:n_nodes][internal]]
                if self.gamma > 0:
                    boost.prune_gamma(b["feature"], b["left"], b["value"], b["loss_chg"],
                                      float(self.gamma), n_nodes)
                if objective == "reg:quantileerror":
                    self._refresh_quantile_leaves(b, n_nodes, X, y - margin[:, k], w,
                                                  in_bag, alphas[k], eta)
                nodes, gains, covers = compact_tree(
                    b["feature"], b["threshold"], b["missing_left"], b["cats"], b["left"],
                    b["value"], b["loss_chg"], b["cover"])
                trees[k].append((nodes, gains, covers))
                if exact:
                    upd[:] = 0.0
                    boost.predict_tree_raw(b["feature"], b["threshold"], b["missing_left"],
                                           b["cats"], b["left"], b["value"], XT, upd)
                else:
                    # grow_hist added the leaf values at the bag's rows; the other rows,
                    # or every row when pruning or quantile leaves changed the values
                    changed = self.gamma > 0 or objective == "reg:quantileerror"
                    todo = all_rows if changed else out_rows
                    if changed:
                        upd[:] = 0.0
                    if todo.size:
                        boost.predict_tree_binned(b["feature"], b["cutbin"],
                                                  b["missing_left"], b["cats"], b["left"],
                                                  b["value"], XbT, miss_bin, todo, upd)
                margin[:, k] += upd
                for XeT, _, _, me in evals:
                    upd_e = np.zeros(XeT.shape[1])
                    boost.predict_tree_raw(b["feature"], b["threshold"], b["missing_left"],
                                           b["cats"], b["left"], b["value"], XeT, upd_e)
                    me[:, k] += upd_e
            rounds_done = r + 1
            for j, (_, ye, we, me) in enumerate(evals):
                self.evals_result_[f"validation_{j}"][metric].append(
                    metric_value(metric, me, ye, we, alphas))
            if evals and self.early_stopping_rounds is not None:
                score = self.evals_result_[f"validation_{len(evals) - 1}"][metric][-1]
                if score < best_score:
                    best_score, best_round = score, r
                elif r - best_round >= self.early_stopping_rounds:
                    break
        if self.early_stopping_rounds is not None and not evals:
            raise ValueError("early_stopping_rounds needs at least one eval_set; the last one "
                             "decides when to stop.")
        self.best_iteration_ = (best_round if evals and self.early_stopping_rounds is not None
                                else rounds_done - 1)
        self.n_rounds_ = rounds_done
        self._base = base
        self._forests = [pack_trees(trees[k]) for k in range(K)]
        return self

    def _read_evals(self, eval_set, base) -> list:
        """The eval sets, encoded and checked: per item (X transposed, y, weights, margin
        starting at ``base``)."""
        evals = []
        for j, item in enumerate(eval_set or []):
            if not (isinstance(item, (tuple, list)) and len(item) in (2, 3)):
                raise ValueError("eval_set must be a list of (X, y) or (X, y, sample_weight) "
                                 f"tuples; item {j} is {type(item).__name__}.")
            Xe, ye = item[0], item[1]
            Xe = self._encode_X(Xe, what=f"eval_set[{j}] X")
            ye = self._encode_eval_y(ye, what=f"eval_set[{j}]")
            if ye.shape[0] != Xe.shape[0]:
                raise ValueError(f"eval_set[{j}] has {Xe.shape[0]} rows in X and {ye.shape[0]} "
                                 "values in y; pass one y value per row.")
            we = _check_sample_weight(item[2] if len(item) == 3 else None, Xe,
                                      dtype=np.float64)
            evals.append((np.ascontiguousarray(Xe.T), ye, we,
                          np.tile(base, (Xe.shape[0], 1))))
        return evals

    def _hist_cuts(self, X, w, is_cat, n_cat, threads):
        """Cutpoints of the histogram method: BART's (weighted quantile midpoints, at most
        ``max_bin - 1``) for the numeric and ordinal columns; ``0.5, 1.5, ..., L - 1.5`` for a
        categorical column of L levels, so that its bins are its codes."""
        p = X.shape[1]
        num = np.flatnonzero(~is_cat)
        ncuts = np.zeros(p, np.int32)
        width = max(1, int(n_cat.max(initial=0)) - 1)
        if num.size:
            c_num, n_num = make_cutpoints(X[:, num], self.max_bin - 1, allow_nan=True,
                                          weights=w, n_threads=threads)
            width = max(width, c_num.shape[1])
        cuts = np.full((p, width), np.inf)
        if num.size:
            cuts[num, :c_num.shape[1]] = c_num
            ncuts[num] = n_num
        for v in np.flatnonzero(is_cat):
            L = int(n_cat[v])
            ncuts[v] = max(L - 1, 0)
            cuts[v, :ncuts[v]] = np.arange(ncuts[v]) + 0.5
        return cuts, ncuts

    def _refresh_quantile_leaves(self, b, n_nodes, X, resid, w, in_bag, alpha_q, eta):
        """XGBoost's adaptive leaves for quantile loss: each leaf takes the weighted
        alpha-quantile of the residuals of its in-bag rows, times the learning rate."""
        leaf = np.zeros(X.shape[0], np.int64)
        boost.leaf_index(b["feature"], b["threshold"], b["missing_left"], b["cats"], b["left"],
                         np.ascontiguousarray(X.T), leaf)
        for k in np.unique(leaf[in_bag]):
            sel = in_bag & (leaf == k)
            b["value"][k] = eta * weighted_quantile(resid[sel], w[sel], alpha_q)

    def _margin(self, X, iteration_range=None):
        check_is_fitted(self, "_forests")
        X = self._encode_X(X)
        stop = self.best_iteration_ + 1 if iteration_range is None else iteration_range[1]
        out = np.empty((X.shape[0], len(self._forests)))
        with numba_threads(self.n_jobs):
            for k, fo in enumerate(self._forests):
                col = np.empty(X.shape[0])
                predict_packed_parallel(fo.start[:stop + 1], fo.nodes, float(self._base[k]), X,
                                        col)
                out[:, k] = col
        return out

    # -- introspection --------------------------------------------------------------------

    @property
    def best_iteration(self) -> int:
        """XGBoost's name for ``best_iteration_``: the best round (0-based) with early
        stopping, otherwise the last round."""
        check_is_fitted(self, "best_iteration_")
        return self.best_iteration_

    def get_score(self, importance_type: str = "gain") -> dict:
        """Importance per feature name (``feature_names_in_`` or ``f0, f1, ...``), as
        XGBoost's ``Booster.get_score``: ``weight`` (number of splits), ``gain`` / ``cover``
        (mean loss change / mean sum of hessians over the feature's splits) and
        ``total_gain`` / ``total_cover``.  Features never split on are left out."""
        check_is_fitted(self, "_forests")
        p = self.n_features_in_
        count = np.zeros(p)
        gain = np.zeros(p)
        cover = np.zeros(p)
        for fo in self._forests:
            feat = fo.nodes["feature"]
            sel = feat >= 0
            np.add.at(count, feat[sel], 1)
            np.add.at(gain, feat[sel], fo.gain[sel])
            np.add.at(cover, feat[sel], fo.cover[sel])
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"f{j}" for j in range(p)])
        vals = {"weight": count, "total_gain": gain, "total_cover": cover,
                "gain": np.divide(gain, count, out=np.zeros(p), where=count > 0),
                "cover": np.divide(cover, count, out=np.zeros(p), where=count > 0)}
        if importance_type not in vals:
            raise ValueError(f"importance_type must be one of {sorted(vals)}; got "
                             f"{importance_type!r}.")
        return {names[j]: float(vals[importance_type][j]) for j in range(p) if count[j] > 0}

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importances of shape (n_features,) for ``importance_type``, normalised to sum 1
        (all 0 when no tree split)."""
        score = self.get_score(self.importance_type)
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"f{j}" for j in range(self.n_features_in_)])
        v = np.array([score.get(nm, 0.0) for nm in names])
        return v / v.sum() if v.sum() > 0 else v

    def forests(self) -> list[PackedForest]:
        """The fitted trees of each output as :class:`~pymc_trees.PackedForest` (the BART
        representation; the base margin is the offset), up to ``best_iteration``."""
        check_is_fitted(self, "_forests")
        stop = self.best_iteration_ + 1
        out = []
        for k, fo in enumerate(self._forests):
            end = fo.start[stop]
            out.append(PackedForest(fo.start[:stop + 1].copy(), fo.nodes[:end].copy(),
                                    float(self._base[k])))
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags



_PARAMS_DOC = """
    Parameters
    ----------
    n_estimators : int, default 100
        Boosting rounds.
    learning_rate : float, default 0.3
        Shrinkage of every leaf (XGBoost's ``eta``).
    max_depth : int, default 6
        Depth of every tree (depth-wise growth).  ``0``: no depth limit, as in XGBoost's
        ``hist`` method (trees grow until no split gains more than ``gamma`` or leaves
        ``min_child_weight``); ``tree_method="exact"`` refuses it, as XGBoost's does.
    min_child_weight : float, default 1
        Smallest sum of hessians in a child.
    reg_lambda, reg_alpha : float, default 1 and 0
        L2 and L1 penalties on leaf weights.
    gamma : float, default 0
        Splits whose loss change is below gamma are pruned after growing.
    subsample : float, default 1
        Fraction of rows drawn (without replacement, independently per row) for each round.
    colsample_bytree : float, default 1
        Fraction of columns drawn for each tree (``floor(fraction * p)``, at least 1).
    max_bin : int, default 256
        ``tree_method="hist"``: at most ``max_bin - 1`` cutpoints per feature, at empirical
        quantiles (the binning BART uses), so at most ``max_bin`` bins; between 2 and 65,535.
    tree_method : {"hist", "exact"}, default "hist"
        Histogram split finding with sibling subtraction, or exact greedy (every midpoint
        between consecutive distinct values).
    base_score : float, optional
        Initial prediction on the response scale; estimated from y when None (see
        ``docs/boosting.md``).
    max_delta_step : float, optional
        Bound on leaf weights; None is 0 (no bound), except 0.7 for ``count:poisson``, as in
        XGBoost.
    early_stopping_rounds : int, optional
        Stop when the metric on the last ``eval_set`` has not improved for this many rounds;
        ``best_iteration`` is then the best round and prediction uses the trees up to it.
    eval_metric : str, optional
        Metric recorded in ``evals_result_`` (default: the objective's own).
    importance_type : {"gain", "weight", "cover", "total_gain", "total_cover"}, default "gain"
        What ``feature_importances_`` measures.
    random_state : int, RandomState or None
        Seeds row and column sampling; with a seed a fit is reproduced exactly.
    n_jobs : int, optional
        Threads for histogram building (None: numba's current setting).  The trees do not
        depend on it.  With several such processes at once, set ``OMP_WAIT_POLICY=PASSIVE``
        (or ``n_jobs=1``): idle OpenMP threads otherwise spin on the other processes' cores
        (``docs/boosting.md``).
    categorical_features : "from_dtype" or list of int or str, or bool mask, default "from_dtype"
        Which columns are categorical (scikit-learn's HistGradientBoosting name).
        ``"from_dtype"``: a DataFrame's unordered ``category`` and string columns (ordered
        categories are ordinal: split as their codes).  A list of column indices or names, or
        a boolean mask of shape (n_features,), adds numeric columns holding non-negative
        integer codes.  Categorical columns may have at most 64 levels.
    max_cat_to_onehot : int, default 4
        A categorical column with fewer levels than this is split one category against the
        rest; otherwise by a partition of its categories sorted by gradient statistics
        (XGBoost's parameter and default).
    max_cat_threshold : int, default 64
        At most ``max_cat_threshold - 1`` categories are gathered on one side in the
        partition scan (XGBoost's parameter and default).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str, for DataFrames
    schema_ : pymc_trees.core.tabular.TableSchema
        What each training column is (numeric, ordinal, categorical and its levels); new rows
        are encoded with it.
    evals_result_ : dict
        ``{"validation_j": {metric: [value per round]}}`` for every ``eval_set`` item.
    best_iteration_ : int
        The best round (0-based) with early stopping; otherwise the last round.  Also
        available as ``best_iteration`` (XGBoost's name).
    feature_importances_ : ndarray of shape (n_features,)
"""


class BoostedTreesRegressor(RegressorMixin, _BoostedTrees):
    __doc__ = """Gradient-boosted regression trees (XGBoost's objective and split rules).

    ``objective``: ``"reg:squarederror"`` (default), ``"count:poisson"`` (log link; ``predict``
    returns the mean count) or ``"reg:quantileerror"`` (pinball loss at ``quantile_alpha``, a
    float or a list of floats; with a list, ``predict`` returns shape (n, len(list)), which
    gives prediction intervals).

    """ + _PARAMS_DOC + """
    Examples
    --------
    >>> from pymc_trees.boosting import BoostedTreesRegressor
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(500, rng=1)
    >>> reg = BoostedTreesRegressor(n_estimators=200, learning_rate=0.1).fit(X, y)
    >>> y_hat = reg.predict(X[:5])                   # shape (5,)
    """

    def __init__(self, *, objective: str = "reg:squarederror", quantile_alpha=0.5,
                 n_estimators: int = 100, learning_rate: float = 0.3, max_depth: int = 6,
                 min_child_weight: float = 1.0, reg_lambda: float = 1.0, reg_alpha: float = 0.0,
                 gamma: float = 0.0, subsample: float = 1.0, colsample_bytree: float = 1.0,
                 max_bin: int = 256, tree_method: str = "hist", base_score: float | None = None,
                 max_delta_step: float | None = None, early_stopping_rounds: int | None = None,
                 eval_metric: str | None = None, importance_type: str = "gain",
                 random_state=None, n_jobs: int | None = None,
                 categorical_features="from_dtype", max_cat_to_onehot: int = 4,
                 max_cat_threshold: int = 64):
        super().__init__(n_estimators=n_estimators, learning_rate=learning_rate,
                         max_depth=max_depth, min_child_weight=min_child_weight,
                         reg_lambda=reg_lambda, reg_alpha=reg_alpha, gamma=gamma,
                         subsample=subsample, colsample_bytree=colsample_bytree,
                         max_bin=max_bin, tree_method=tree_method, base_score=base_score,
                         max_delta_step=max_delta_step,
                         early_stopping_rounds=early_stopping_rounds, eval_metric=eval_metric,
                         importance_type=importance_type, random_state=random_state,
                         n_jobs=n_jobs, categorical_features=categorical_features,
                         max_cat_to_onehot=max_cat_to_onehot,
                         max_cat_threshold=max_cat_threshold)
        self.objective = objective
        self.quantile_alpha = quantile_alpha

    def _alphas(self):
        a = np.atleast_1d(np.asarray(self.quantile_alpha, dtype=np.float64))
        if a.ndim != 1 or a.size == 0 or not np.all((a > 0) & (a < 1)):
            raise ValueError("quantile_alpha must be a float or a list of floats in (0, 1); "
                             f"got {self.quantile_alpha!r}.")
        return a

    def _encode_eval_y(self, y, what="eval_set"):
        y = np.asarray(y, dtype=np.float64).ravel()
        bad = ~np.isfinite(y)
        if bad.any():
            rows = np.flatnonzero(bad)
            raise ValueError(
                f"{what} y has {rows.size} missing or infinite values (rows "
                f"{rows[:5].tolist()}{', ...' if rows.size > 5 else ''}): the metric would be "
                "NaN in every round and early stopping would keep round 0. Drop those rows "
                "from the eval set, as from the training set.")
        if self.objective == "count:poisson" and np.any(y < 0):
            raise ValueError(f"{what} y has negative values; count:poisson needs "
                             "non-negative y (counts or rates).")
        return y

    def fit(self, X, y, sample_weight=None, eval_set=None) -> "BoostedTreesRegressor":
        """Fit on X of shape (n, p) and y of shape (n,).

        ``X``: a numeric array (NaN: missing values) or a pandas DataFrame with numeric, bool,
        ``category`` and string columns (see ``categorical_features``).  ``eval_set``: list of
        ``(X, y)`` or ``(X, y, sample_weight)`` monitored every round (``evals_result_``; the
        last one drives early stopping)."""
        if self.objective not in ("reg:squarederror", "count:poisson", "reg:quantileerror"):
            raise ValueError("objective must be 'reg:squarederror', 'count:poisson' or "
                             f"'reg:quantileerror' for a regressor; got {self.objective!r}.")
        X = self._fit_X(X)
        y = self._fit_y(X, y, y_numeric=True).astype(np.float64)
        if self.objective == "count:poisson" and np.any(y < 0):
            raise ValueError("count:poisson needs non-negative y (counts or rates).")
        alphas = (self._alphas() if self.objective == "reg:quantileerror" else np.zeros(1))
        return self._fit(X, y, sample_weight, eval_set, self.objective, alphas.size, alphas, 0)

    def predict(self, X) -> np.ndarray:
        """Predictions of shape (n,): the mean (squared error), the mean count (Poisson) or
        the quantile; (n, q) for q quantiles."""
        m = self._margin(X)
        if self.objective == "count:poisson":
            return np.exp(m[:, 0])
        if self.objective == "reg:quantileerror" and m.shape[1] > 1:
            return m
        return m[:, 0]


class BoostedTreesClassifier(ClassifierMixin, _BoostedTrees):
    __doc__ = """Gradient-boosted classification trees (XGBoost's objective and split rules).

    Two classes: ``"binary:logistic"``; more: ``"multi:softprob"`` (softmax, one tree per class
    per round), chosen from the labels.  Labels may be of any type (``classes_``).

    """ + _PARAMS_DOC + """
    Examples
    --------
    >>> from pymc_trees.boosting import BoostedTreesClassifier
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(500, rng=1)
    >>> clf = BoostedTreesClassifier().fit(X, (y > 14).astype(int))
    >>> p = clf.predict_proba(X[:5])                 # shape (5, 2)
    """

    def _encode_eval_y(self, y, what="eval_set"):
        y = np.asarray(y).ravel()
        unseen = ~np.isin(y, self.classes_)
        if np.any(unseen):
            raise ValueError(f"{what} has labels not seen in training: "
                             f"{np.unique(y[unseen])}; the classes are {self.classes_}.")
        return self._le.transform(y).astype(np.float64)

    def fit(self, X, y, sample_weight=None, eval_set=None) -> "BoostedTreesClassifier":
        """Fit on X of shape (n, p) (a numeric array with NaN for missing values, or a
        DataFrame, as for the regressor) and labels y of shape (n,)."""
        X = self._fit_X(X)
        y = self._fit_y(X, y, y_numeric=False)
        check_classification_targets(y)
        self._le = LabelEncoder().fit(y)
        self.classes_ = self._le.classes_
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"The classifier needs at least two classes in y; got {k} class.")
        self.objective_ = "binary:logistic" if k == 2 else "multi:softprob"
        yi = self._le.transform(y).astype(np.float64)
        K = 1 if k == 2 else k
        return self._fit(X, yi, sample_weight, eval_set, self.objective_, K, np.zeros(1), k)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of shape (n, n_classes), columns in the order of ``classes_``."""
        m = self._margin(X)
        if m.shape[1] == 1:
            p1 = expit(m[:, 0])
            return np.column_stack([1.0 - p1, p1])
        return np.exp(m - logsumexp(m, axis=1, keepdims=True))

    def predict(self, X) -> np.ndarray:
        """The most probable class of every row, shape (n,)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
