"""The exact greedy grower (XGBoost's ``tree_method="exact"``, ``updater_colmaker``): every
feature's sorted rows scanned per level, the split rules of
:mod:`~pymc_trees.boosting.kernels.splits`."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.boosting.kernels.splits import (RT_EPS, as_float32, best_split_categorical,
                                                calc_weight, cat_left, node_gain, valid_split)

__all__ = ["SortedData", "grow_exact"]


class SortedData(NamedTuple):
    """The training rows as the exact grower reads them, fixed for a fit: ``XT`` (p, n) raw
    values (a categorical feature's codes); ``sorted_idx[v, :n_present[v]]`` the rows with a
    value of numeric feature v in ascending order of it (NaN rows excluded); ``n_cat`` (p,)
    levels of a categorical feature, 0 for the others; ``feat_missing`` (p,) whether the
    feature has missing values in training."""

    XT: np.ndarray
    sorted_idx: np.ndarray
    n_present: np.ndarray
    n_cat: np.ndarray
    feat_missing: np.ndarray


@numba.njit(cache=True)
def grow_exact(data, g, h, in_bag, colmask, params, tree):
    """Exact greedy split finding (XGBoost's ``tree_method="exact"``, ``updater_colmaker``).

    ``data`` a :class:`SortedData`: ``XT`` (p, n) raw values; ``sorted_idx[v, :n_present[v]]``
    the rows with a value of feature v in ascending order of it (NaN rows excluded).  ``g``,
    ``h`` (n,) the gradients and hessians; ``in_bag`` (n,) the rows of the tree; ``colmask``
    (p,) the features it may split on; ``params`` a
    :class:`~pymc_trees.boosting.kernels.splits.SplitParams`.  Level by level, every feature's
    sorted rows are scanned once backward (missing rows go left) and, when the feature has
    missing values, once forward (missing right), with per-node running sums; a candidate
    between two consecutive distinct values of a node's rows is their midpoint (the lower
    value when the midpoint rounds onto the upper one), and a candidate sending every row with
    a value one way and the missing rows the other is tried at the end of each scan.  A row
    goes left when ``x <= threshold``.

    A categorical feature (``n_cat[v] > 0`` levels, ``XT[v]`` its codes) is not scanned: its
    per-node sums by code are taken in one pass over the rows and split as in the histogram
    method (:func:`best_split_categorical`; the codes are exact bins), in feature order with
    the others, so ties still go to the lower feature index.  XGBoost's exact method has no
    categorical splits; this is its hist method's rule.  Fills ``tree`` (a
    :class:`~pymc_trees.boosting.kernels.splits.NodeArrays`, ``tree.cut`` the thresholds,
    float64); returns the number of nodes."""
    XT, sorted_idx, n_present = data.XT, data.sorted_idx, data.n_present
    n_cat, feat_missing = data.n_cat, data.feat_missing
    max_depth, mcw, lam, alpha, mds, eta = (params.max_depth, params.mcw, params.lam,
                                            params.alpha, params.mds, params.eta)
    onehot, cat_thr = params.onehot, params.cat_thr
    feature, threshold, missing_left, cats = tree.feature, tree.cut, tree.missing_left, tree.cats
    left, value, loss_chg, cover = tree.left, tree.value, tree.loss_chg, tree.cover
    p, n = XT.shape
    cap = feature.size
    position = np.full(n, -1, np.int64)
    nG = np.zeros(cap)
    nH = np.zeros(cap)
    nrows = np.zeros(cap, np.int64)
    npres = np.zeros(cap, np.int64)
    for i in range(n):
        if in_bag[i]:
            position[i] = 0
            nG[0] += g[i]
            nH[0] += h[i]
            nrows[0] += 1
    n_nodes = 1
    level = np.zeros(1, np.int64)
    RG = np.zeros(cap)
    RH = np.zeros(cap)
    last = np.zeros(cap)
    empty = np.ones(cap, np.bool_)
    best = np.zeros(cap)
    bfeat = np.full(cap, -1, np.int64)
    bthr = np.zeros(cap)
    bdl = np.ones(cap, np.bool_)
    bcats = np.zeros(cap, np.uint64)
    root = np.zeros(cap)
    slot = np.zeros(cap, np.int64)  # position of a node in its level
    Lmax = 0
    for v in range(p):
        Lmax = max(Lmax, n_cat[v])
    for depth in range(max_depth + 1):
        for j in range(level.size):
            k = level[j]
            cover[k] = nH[k]
            loss_chg[k] = 0.0
            best[k] = 0.0
            bfeat[k] = -1
            bcats[k] = 0
            cats[k] = 0
            slot[k] = j
            root[k] = node_gain(nG[k], nH[k], lam, alpha, mds)
        if depth < max_depth:
            CH = np.zeros((level.size, max(Lmax, 1), 2))
            for v in range(p):
                if not colmask[v]:
                    continue
                if n_cat[v] > 0:
                    L = n_cat[v]
                    CH[:, :L, :] = 0.0
                    for i in range(n):
                        k = position[i]
                        x = XT[v, i]
                        if k >= 0 and x == x:
                            c = np.int64(x)
                            CH[slot[k], c, 0] += g[i]
                            CH[slot[k], c, 1] += h[i]
                    for j in range(level.size):
                        k = level[j]
                        chg, found, dl, cs, _, _ = best_split_categorical(
                            CH[j], L, nG[k], nH[k], root[k], mcw, lam, alpha, mds, onehot,
                            cat_thr, best[k])
                        if found:
                            best[k] = chg
                            bfeat[k] = v
                            bthr[k] = 0.0
                            bdl[k] = dl
                            bcats[k] = cs
                    continue
                for d_step in (1, -1):
                    if d_step == 1 and not feat_missing[v]:
                        continue
                    for j in range(level.size):
                        k = level[j]
                        RG[k] = 0.0
                        RH[k] = 0.0
                        empty[k] = True
                        if d_step == 1:
                            npres[k] = 0
                    total = n_present[v]
                    for t in range(total):
                        idx = t if d_step == 1 else total - 1 - t
                        i = sorted_idx[v, idx]
                        k = position[i]
                        if k < 0:
                            continue
                        if d_step == 1:
                            npres[k] += 1
                        elif feat_missing[v] and npres[k] == nrows[k]:
                            continue  # no missing rows here: the forward scan said it all
                        x = XT[v, i]
                        if empty[k]:
                            RG[k] += g[i]
                            RH[k] += h[i]
                            last[k] = x
                            empty[k] = False
                            continue
                        if x != last[k] and RH[k] >= mcw:
                            cG = nG[k] - RG[k]
                            cH = nH[k] - RH[k]
                            if d_step == -1:  # running = right side, rest (with missing) left
                                GLc, HLc, GRc, HRc = cG, cH, RG[k], RH[k]
                                lo_v, hi_v = x, last[k]
                            else:  # running = left side, rest (with missing) right
                                GLc, HLc, GRc, HRc = RG[k], RH[k], cG, cH
                                lo_v, hi_v = last[k], x
                            if valid_split(HLc, HRc, mcw):
                                chg = as_float32(node_gain(GLc, HLc, lam, alpha, mds)
                                                 + node_gain(GRc, HRc, lam, alpha, mds) - root[k])
                                if chg > best[k]:
                                    thr = 0.5 * (lo_v + hi_v)
                                    if thr >= hi_v:
                                        thr = lo_v
                                    best[k] = chg
                                    bfeat[k] = v
                                    bthr[k] = thr
                                    bdl[k] = d_step == -1
                                    bcats[k] = 0
                        RG[k] += g[i]
                        RH[k] += h[i]
                        last[k] = x
                    # every row with a value on the scanned side, the missing ones on the other
                    for j in range(level.size):
                        k = level[j]
                        if empty[k] or not feat_missing[v] or npres[k] == nrows[k]:
                            continue  # the rows with a value against the missing ones
                        cG = nG[k] - RG[k]
                        cH = nH[k] - RH[k]
                        if d_step == -1:
                            GLc, HLc, GRc, HRc = cG, cH, RG[k], RH[k]
                        else:
                            GLc, HLc, GRc, HRc = RG[k], RH[k], cG, cH
                        if RH[k] >= mcw and cH >= mcw and valid_split(HLc, HRc, mcw):
                            chg = as_float32(node_gain(GLc, HLc, lam, alpha, mds)
                                             + node_gain(GRc, HRc, lam, alpha, mds) - root[k])
                            if chg > best[k]:
                                gap = abs(last[k]) + RT_EPS
                                best[k] = chg
                                bfeat[k] = v
                                bthr[k] = last[k] + gap if d_step == 1 else last[k] - gap
                                bdl[k] = d_step == -1
                                bcats[k] = 0
        n_split = 0
        for j in range(level.size):
            k = level[j]
            if depth < max_depth and bfeat[k] >= 0 and best[k] > RT_EPS:
                n_split += 1
        nxt = np.empty(2 * n_split, np.int64)
        c = 0
        for j in range(level.size):
            k = level[j]
            value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)
            if depth < max_depth and bfeat[k] >= 0 and best[k] > RT_EPS:
                feature[k] = bfeat[k]
                threshold[k] = bthr[k]
                missing_left[k] = bdl[k]
                cats[k] = bcats[k]
                loss_chg[k] = best[k]
                left[k] = n_nodes
                for cc in (n_nodes, n_nodes + 1):
                    nG[cc] = 0.0
                    nH[cc] = 0.0
                    nrows[cc] = 0
                nxt[c] = n_nodes
                nxt[c + 1] = n_nodes + 1
                c += 2
                n_nodes += 2
            else:
                feature[k] = -1
                left[k] = -1
        if n_split == 0:
            break
        # route the bag's rows to the children
        for i in range(n):
            k = position[i]
            if k < 0:
                continue
            if feature[k] < 0:
                position[i] = -1
                continue
            x = XT[feature[k], i]
            if x != x:
                go_left = missing_left[k]
            elif cats[k] != 0:
                go_left = cat_left(cats[k], np.int64(x))
            else:
                go_left = x <= threshold[k]
            c = left[k] if go_left else left[k] + 1
            position[i] = c
            # node sums recomputed from the rows, in row order (as XGBoost's colmaker)
            nG[c] += g[i]
            nH[c] += h[i]
            nrows[c] += 1
        level = nxt
    return n_nodes
