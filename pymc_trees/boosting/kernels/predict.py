"""Pruning and prediction of one grown tree (binned or raw rows), and the leaf a row reaches
(:func:`leaf_index`)."""

from __future__ import annotations

import numba
import numpy as np

from pymc_trees.boosting.kernels.splits import cat_left

__all__ = ["prune_gamma", "predict_tree_binned",
           "predict_tree_raw", "leaf_index"]


@numba.njit(cache=True)
def prune_gamma(feature, left, value, loss_chg, gamma, n_nodes):
    """XGBoost's ``prune`` updater: bottom-up, a split whose two children are leaves becomes
    a leaf when its ``loss_chg < gamma`` (its value, set by the growers, is the learning rate
    times its weight).  Returns the number of splits pruned."""
    pruned = 0
    changed = True
    while changed:
        changed = False
        for k in range(n_nodes - 1, -1, -1):
            if feature[k] >= 0:
                lc = left[k]
                if feature[lc] < 0 and feature[lc + 1] < 0 and loss_chg[k] < gamma:
                    feature[k] = -1
                    left[k] = -1
                    pruned += 1
                    changed = True
    return pruned


@numba.njit(cache=True)
def predict_tree_binned(feature, cutbin, missing_left, cats, left, value, XbT, miss, rows, out):
    """``out[i] += tree(row i)`` for the binned rows ``rows`` of ``XbT`` (p, n), in which
    ``miss`` is the bin of a missing value (as from :func:`binned_columns`); a node with
    ``cats[k] != 0`` sends the codes (bins) whose bits are set left."""
    for j in range(rows.size):
        i = rows[j]
        k = 0
        while feature[k] >= 0:
            b = XbT[feature[k], i]
            if b == miss:
                go_left = missing_left[k]
            elif cats[k] != 0:
                go_left = cat_left(cats[k], b & 63)
            else:
                go_left = b <= cutbin[k]
            k = left[k] if go_left else left[k] + 1
        out[i] += value[k]


@numba.njit(cache=True, inline="always")
def _leaf_raw(feature, threshold, missing_left, cats, left, XT, i):
    k = 0
    while feature[k] >= 0:
        x = XT[feature[k], i]
        if x != x:
            go_left = missing_left[k]
        elif cats[k] != 0:
            go_left = 0.0 <= x < 64.0 and cat_left(cats[k], np.int64(x))
        else:
            go_left = x <= threshold[k]
        k = left[k] if go_left else left[k] + 1
    return k


@numba.njit(cache=True)
def predict_tree_raw(feature, threshold, missing_left, cats, left, value, XT, out):
    """``out[i] += tree(row i)`` for raw rows ``XT`` (p, n); NaN follows ``missing_left``; at
    a node with ``cats[k] != 0`` the codes whose bits are set go left (the packed rule)."""
    for i in range(XT.shape[1]):
        out[i] += value[_leaf_raw(feature, threshold, missing_left, cats, left, XT, i)]


@numba.njit(cache=True)
def leaf_index(feature, threshold, missing_left, cats, left, XT, out):
    """``out[i]`` = the leaf (node index) that raw row i of ``XT`` (p, n) reaches."""
    for i in range(XT.shape[1]):
        out[i] = _leaf_raw(feature, threshold, missing_left, cats, left, XT, i)
