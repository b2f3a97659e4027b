"""Prediction-time forests: every tree's reachable nodes packed depth-first (the two children
of a node side by side), with thresholds
on the raw feature scale, so that new rows need no binning."""

from __future__ import annotations

import numba
import numpy as np

from .forest import LEAF

__all__ = ["pack_forest", "predict_packed"]


@numba.njit(cache=True)
def pack_forest(var, cut, left, right, value, n_nodes, n_free, cuts):
    """Returns ``(start, feature, threshold, left, right, value)``; tree ``t`` occupies
    ``start[t]:start[t+1]`` with its root first; ``feature`` is -1 at leaves and child indices
    are absolute."""
    m = var.shape[0]
    start = np.zeros(m + 1, np.int32)
    for t in range(m):
        start[t + 1] = start[t] + n_nodes[t] - n_free[t]
    N = start[m]
    feat = np.empty(N, np.int32)
    thr = np.zeros(N, np.float64)
    lft = np.full(N, -1, np.int32)
    rgt = np.full(N, -1, np.int32)
    val = np.zeros(N, np.float64)
    stack = np.empty(max(1, var.shape[1]), np.int32)
    dest = np.empty(max(1, var.shape[1]), np.int32)
    for t in range(m):
        nxt = start[t]
        stack[0] = 0
        dest[0] = nxt
        nxt += 1
        top = 1
        while top > 0:
            top -= 1
            k = stack[top]
            o = dest[top]
            v = var[t, k]
            if v == LEAF:
                feat[o] = -1
                val[o] = value[t, k]
            else:
                feat[o] = v
                thr[o] = cuts[v, cut[t, k]]
                lft[o] = nxt
                rgt[o] = nxt + 1
                # push right first so the left subtree is laid out first
                stack[top] = right[t, k]
                dest[top] = nxt + 1
                stack[top + 1] = left[t, k]
                dest[top + 1] = nxt
                top += 2
                nxt += 2
    return start, feat, thr, lft, rgt, val


@numba.njit(cache=True)
def predict_packed(start, feature, threshold, left, right, value, offset, X, out):
    """``out[i] = offset + sum_t tree_t(X[i])``, trees summed in order."""
    n = X.shape[0]
    m = start.shape[0] - 1
    for i in range(n):
        acc = offset
        for t in range(m):
            k = start[t]
            while feature[k] >= 0:
                if X[i, feature[k]] <= threshold[k]:
                    k = left[k]
                else:
                    k = right[k]
            acc += value[k]
        out[i] = acc
