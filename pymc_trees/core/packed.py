"""Prediction-time forests: every tree's reachable nodes packed depth-first (the two children
of a node side by side), with thresholds
on the raw feature scale, so that new rows need no binning."""

from __future__ import annotations

import numba
import numpy as np

from .forest import LEAF

__all__ = ["pack_forest", "predict_packed", "predict_packed_parallel", "relink_packed",
           "predict_draws"]


@numba.njit(cache=True)
def pack_forest(rng, var, cut, left, right, value, n_nodes, n_free, amask, fmap, thr_tab,
                ml_tab, nlev, nan_bin, nodes):
    """Fill the structured array ``nodes`` (one entry per used node slot; fields feature, left,
    threshold, value, missing_left, cats) and return ``start`` of shape (m + 1,): tree ``t``
    occupies ``nodes[start[t]:start[t+1]]`` with its root first.  The two children of a node
    are stored side by side (right = left + 1); ``feature`` is -1 at leaves.

    The sampler's features (``var``) may differ from the data's columns: ``fmap[v]`` is the
    column of sampler feature v.  A numeric rule ``c >= 0`` of feature v becomes the
    threshold ``thr_tab[v, c]`` with ``missing_left = ml_tab[v, c]``; ``ml_tab`` -1 means that
    the training rows say nothing about where a NaN goes (the column had none), and the
    direction is drawn from the prior, a fair coin per node.  A categorical rule ``c = ~S``
    becomes the bit set ``cats`` over the column's ``nlev[v]`` level codes: the levels
    present at the node (``-amask[t, k, v]``, see :mod:`pymc_trees.core.nodes`) go where
    ``S`` says, each absent level by a fair coin, and a NaN goes where the set says of the
    missing level (bin ``nan_bin[v]``) when the node has missing rows, else by a coin.  A
    categorical node always has ``cats != 0``: when no level goes left the node is stored
    mirrored (children swapped, the set complemented), which routes every row the same way.
    """
    m = var.shape[0]
    start = np.zeros(m + 1, np.int32)
    for t in range(m):
        start[t + 1] = start[t] + n_nodes[t] - n_free[t]
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
            nodes[o].cats = 0
            if v == LEAF:
                nodes[o].feature = -1
                nodes[o].left = -1
                nodes[o].threshold = 0.0
                nodes[o].value = value[t, k]
                nodes[o].missing_left = 1
                continue
            nodes[o].feature = fmap[v]
            nodes[o].left = nxt
            nodes[o].value = 0.0
            c = cut[t, k]
            kl = left[t, k]
            kr = right[t, k]
            if c >= 0:
                nodes[o].threshold = thr_tab[v, c]
                ml = ml_tab[v, c]
                nodes[o].missing_left = (rng.random() < 0.5) if ml < 0 else ml
            else:
                S = np.uint64(~c)
                P = np.uint64(-amask[t, k, v])
                one = np.uint64(1)
                cats = np.uint64(0)
                for b in range(nlev[v]):
                    bb = np.uint64(b)
                    if (P >> bb) & one:
                        bit = (S >> bb) & one
                    else:
                        bit = np.uint64(rng.random() < 0.5)
                    cats |= bit << bb
                nb = nan_bin[v]
                if nb >= 0 and (P >> np.uint64(nb)) & one:
                    mleft = np.uint8((S >> np.uint64(nb)) & one)
                else:
                    mleft = np.uint8(rng.random() < 0.5)
                if cats == 0:
                    cats = ~cats >> np.uint64(64 - nlev[v])
                    mleft = 1 - mleft
                    kl, kr = kr, kl
                nodes[o].threshold = 0.0
                nodes[o].cats = cats
                nodes[o].missing_left = mleft
            stack[top] = kr
            dest[top] = nxt + 1
            stack[top + 1] = kl
            dest[top + 1] = nxt
            top += 2
            nxt += 2
    return start


PREDICT_BLOCK = 64


@numba.njit(cache=True)
def _walk_arrays(start, nodes):
    """The trees ``nodes[start[0]:start[-1]]`` as flat arrays for :func:`_predict_block`,
    indexed from ``start[0]``: ``feat``, ``child`` (the left child), ``thr``, ``right_nan`` (a
    NaN goes right), ``val`` and ``cats``, with every leaf made a fixed point (feature 0,
    threshold +inf, its own child), the depth of the deepest tree and whether any node is a
    categorical split."""
    base = start[0]
    size = start[start.shape[0] - 1] - base
    feat = np.empty(size, np.int64)
    child = np.empty(size, np.int64)
    thr = np.empty(size)
    right_nan = np.empty(size, np.bool_)
    val = np.empty(size)
    cats = np.zeros(size, np.uint64)
    dep = np.zeros(size, np.int64)
    depth = 0
    has_cat = False
    for k in range(size):
        nd = nodes[base + k]
        val[k] = nd.value
        if nd.feature >= 0:
            c = nd.left - base
            feat[k] = nd.feature
            child[k] = c
            thr[k] = nd.threshold
            right_nan[k] = nd.missing_left == 0
            cats[k] = nd.cats
            has_cat |= nd.cats != 0
            # children come after their parent in the packed order
            dep[c] = dep[k] + 1
            dep[c + 1] = dep[k] + 1
            depth = max(depth, dep[k] + 1)
        else:
            feat[k] = 0
            child[k] = k
            thr[k] = np.inf
            right_nan[k] = False
    return feat, child, thr, right_nan, val, depth, cats, has_cat


@numba.njit(cache=True, inline="always")
def _predict_block(start, walk, offset, X, lo, hi, out):
    """``out[i]`` for the rows ``lo <= i < hi``: one tree at a time, one level at a time for
    all the block's rows, with no branch on the data (a row goes to ``child + right``; leaves
    are fixed points), so the walks of different rows overlap in the processor.  A walk that
    branches on each comparison mispredicts half of them; this runs about 3 times faster.
    Each row's sum is still ``offset`` plus the trees in order."""
    feat, child, thr, right_nan, val, depth, cats, has_cat = walk
    nb = hi - lo
    acc = np.full(nb, offset)
    ks = np.empty(nb, np.int64)
    for t in range(start.shape[0] - 1):
        for r in range(nb):
            ks[r] = start[t] - start[0]
        for d in range(depth):
            if not has_cat:
                for r in range(nb):
                    k = ks[r]
                    x = X[lo + r, feat[k]]
                    right = (x > thr[k]) | ((x != x) & right_nan[k])
                    ks[r] = child[k] + np.int64(right)
                continue
            for r in range(nb):
                k = ks[r]
                x = X[lo + r, feat[k]]
                nan = x != x
                if cats[k] != 0 and not nan:
                    code = np.uint64(np.int64(x)) & np.uint64(63)
                    right = ((cats[k] >> code) & np.uint64(1)) == 0
                else:
                    right = (x > thr[k]) | (nan & right_nan[k])
                ks[r] = child[k] + np.int64(right)
        for r in range(nb):
            acc[r] += val[ks[r]]
    for r in range(nb):
        out[lo + r] = acc[r]


@numba.njit(cache=True)
def predict_packed(start, nodes, offset, X, out):
    """``out[i] = offset + sum_t tree_t(X[i])``, trees summed in order.  A row goes left when
    ``x <= threshold``, or at a categorical node (``cats != 0``) when bit ``x`` (a level
    code) of ``cats`` is set; a NaN goes where the node's ``missing_left`` says."""
    walk = _walk_arrays(start, nodes)
    n = X.shape[0]
    for lo in range(0, n, PREDICT_BLOCK):
        _predict_block(start, walk, offset, X, lo, min(n, lo + PREDICT_BLOCK), out)


@numba.njit(cache=True, parallel=True)
def predict_packed_parallel(start, nodes, offset, X, out):
    """:func:`predict_packed` with blocks of rows shared among threads (each row's sum is
    taken in the same order, so the result does not depend on the number of threads)."""
    walk = _walk_arrays(start, nodes)
    n = X.shape[0]
    nb = (n + PREDICT_BLOCK - 1) // PREDICT_BLOCK
    for b in numba.prange(nb):
        lo = b * PREDICT_BLOCK
        _predict_block(start, walk, offset, X, lo, min(n, lo + PREDICT_BLOCK), out)


@numba.njit(cache=True)
def relink_packed(roots, sizes, feature, left):
    """Recompute ``left`` from ``feature`` for trees packed by :func:`pack_forest`: tree t
    occupies ``sizes[t]`` nodes from ``roots[t]`` (absolute indices), and the children of a
    node were allocated as a pair when the node was popped from a depth-first stack that
    visits left before right.  Trees not listed are left untouched."""
    size = 1
    for t in range(roots.shape[0]):
        size = max(size, sizes[t])
    stack = np.empty(size + 1, np.int64)
    for t in range(roots.shape[0]):
        nxt = roots[t] + 1
        stack[0] = roots[t]
        top = 1
        while top > 0:
            top -= 1
            k = stack[top]
            if feature[k] < 0:
                left[k] = -1
            else:
                left[k] = nxt
                stack[top] = nxt + 1
                stack[top + 1] = nxt
                top += 2
                nxt += 2


@numba.njit(cache=True)
def predict_draws(starts, nodes, offset, X, out):
    """``out[d] = predict_packed(starts[d], ...)`` for every draw d: ``starts`` of shape
    (D, m + 1) holds absolute root indices into the shared ``nodes``; out has shape (D, n)."""
    for d in range(starts.shape[0]):
        predict_packed(starts[d], nodes, offset, X, out[d])
