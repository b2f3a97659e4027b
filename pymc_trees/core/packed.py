"""Prediction-time forests: every tree's reachable nodes packed depth-first (the two children
of a node side by side), with thresholds
on the raw feature scale, so that new rows need no binning."""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["NODE_DTYPE", "PackedForest", "predict_packed", "predict_packed_parallel",
           "relink_packed", "predict_draws", "predict_ragged", "predict_marginal_ragged",
           "center_bits", "linear_leaf_center", "leaf_value"]


NODE_DTYPE = np.dtype([("feature", np.int32), ("left", np.int32), ("threshold", np.float64),
                       ("value", np.float64), ("missing_left", np.uint8), ("cats", np.uint64)])


@dataclass(slots=True)
class PackedForest:
    """One posterior draw of a sum-of-trees term, ready for prediction at new rows.

    Attributes
    ----------
    start : ndarray of shape (m + 1,), dtype int32
        Tree ``t`` occupies ``nodes[start[t]:start[t+1]]``, root first.
    nodes : structured ndarray of shape (n_nodes,), dtype ``NODE_DTYPE``
        ``feature`` (-1 at leaves), ``left`` (absolute index of the left child; the right child
        follows it), ``threshold`` (a row goes left when ``x[feature] <= threshold``) and
        ``value`` (leaf value), ``missing_left`` (where a row with NaN in ``feature``
        goes: 1 left, 0 right) and ``cats`` (0 for a numeric split; at a categorical split
        the bit set of the level codes that go left, and then ``threshold`` is unused).
        A linear leaf (``BARTTree(..., response="linear")``) has ``feature = -2 - j`` for its
        regressor column j: its value at a row is ``value + threshold * (x[j] - center)``,
        or ``value`` where ``x[j]`` is missing, with ``center`` stored as the bits of a
        float64 in ``cats`` (:func:`linear_leaf_center`).
    offset : float
        Constant added to the sum of trees.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=20)
    ...     obs = pm.Normal("y", mu=f, sigma=1.0, observed=y)
    ...     idata = pm.sample(random_seed=1)
    >>> forest = pmt.forests(idata, "f").values[0, 0]      # chain 0, draw 0
    >>> f_at_rows = forest.predict(X[:10])                  # shape (10,)
    """

    start: np.ndarray
    nodes: np.ndarray
    offset: float

    @property
    def m(self) -> int:
        return self.start.size - 1

    @property
    def feature(self) -> np.ndarray:
        return self.nodes["feature"]

    @property
    def threshold(self) -> np.ndarray:
        return self.nodes["threshold"]

    @property
    def left(self) -> np.ndarray:
        return self.nodes["left"]

    @property
    def right(self) -> np.ndarray:
        left = self.nodes["left"]
        return np.where(left >= 0, left + 1, -1).astype(np.int32)

    @property
    def value(self) -> np.ndarray:
        return self.nodes["value"]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Value of the term at rows X, an ndarray of shape (n, p); returns shape (n,)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        out = np.empty(X.shape[0])
        predict_packed(self.start, self.nodes, float(self.offset), X, out)
        return out

    def __repr__(self) -> str:
        return f"PackedForest(m={self.m}, nodes={self.nodes.size})"


PREDICT_BLOCK = 64


def center_bits(center: np.ndarray) -> np.ndarray:
    """float64 centres as the uint64 bit patterns stored in a linear leaf's ``cats``."""
    return np.ascontiguousarray(center, dtype=np.float64).view(np.uint64)


@numba.njit(cache=True, inline="always")
def linear_leaf_center(cats) -> float:
    """The centre of a linear leaf from its ``cats`` field (the float64's bits)."""
    a = np.empty(1, np.uint64)
    a[0] = cats
    return a.view(np.float64)[0]


@numba.njit(cache=True, inline="always")
def leaf_value(nd, X, i) -> float:
    """The value of leaf ``nd`` at row i of X (a constant or a linear leaf)."""
    if nd.feature < -1:
        x = X[i, -2 - nd.feature]
        if x == x:
            return nd.value + nd.threshold * (x - linear_leaf_center(nd.cats))
    return nd.value


@numba.njit(cache=True)
def _walk_arrays(start, nodes):
    """The trees ``nodes[start[0]:start[-1]]`` as flat arrays for :func:`_predict_block`,
    indexed from ``start[0]``: ``feat``, ``child`` (the left child), ``thr``, ``right_nan`` (a
    NaN goes right), ``val`` and ``cats``, with every leaf made a fixed point (feature 0,
    threshold +inf, its own child), the depth of each tree (shape (m,)) and whether any node
    is a categorical split; then, for linear leaves, ``lcol`` (the regressor column, -1
    elsewhere), ``lslope`` and ``lcenter``, and whether there is any."""
    base = start[0]
    size = start[start.shape[0] - 1] - base
    feat = np.empty(size, np.int64)
    child = np.empty(size, np.int64)
    thr = np.empty(size)
    right_nan = np.empty(size, np.bool_)
    val = np.empty(size)
    cats = np.zeros(size, np.uint64)
    dep = np.zeros(size, np.int64)
    m = start.shape[0] - 1
    depth = np.zeros(m, np.int64)
    lcol = np.full(size, -1, np.int64)
    lslope = np.zeros(size)
    lcenter = np.zeros(size)
    t = 0
    has_cat = False
    has_lin = False
    for k in range(size):
        while start[t + 1] - base <= k:
            t += 1
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
            depth[t] = max(depth[t], dep[k] + 1)
        else:
            feat[k] = 0
            child[k] = k
            thr[k] = np.inf
            right_nan[k] = False
            if nd.feature < -1:
                lcol[k] = -2 - nd.feature
                lslope[k] = nd.threshold
                lcenter[k] = linear_leaf_center(nd.cats)
                has_lin = True
    return (feat, child, thr, right_nan, val, depth, cats, has_cat, lcol, lslope, lcenter,
            has_lin)


@numba.njit(cache=True, inline="always")
def _predict_block(start, walk, offset, X, lo, hi, out):
    """``out[i]`` for the rows ``lo <= i < hi``: one tree at a time, one level at a time for
    all the block's rows, with no branch on the data (a row goes to ``child + right``; leaves
    are fixed points), so the walks of different rows overlap in the processor.  A walk that
    branches on each comparison mispredicts half of them; this runs about 3 times faster.
    Each tree is walked to its own depth.  Each row's sum is still ``offset`` plus the trees
    in order."""
    feat, child, thr, right_nan, val, depth, cats, has_cat, lcol, lslope, lcenter, has_lin = walk
    nb = hi - lo
    acc = np.full(nb, offset)
    ks = np.empty(nb, np.int64)
    for t in range(start.shape[0] - 1):
        for r in range(nb):
            ks[r] = start[t] - start[0]
        for d in range(depth[t]):
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
        if has_lin:
            for r in range(nb):
                k = ks[r]
                j = lcol[k]
                if j >= 0:
                    x = X[lo + r, j]
                    if x == x:
                        acc[r] += lslope[k] * (x - lcenter[k])
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


@numba.njit(cache=True, parallel=True)
def predict_ragged(roots, ptr, nodes, offsets, X, out):
    """``out[r] = offsets[r] + sum of the trees of row r`` at the rows of X, rows shared among
    threads.  Row r holds the trees whose roots are ``roots[ptr[r]:ptr[r+1]]`` (contiguous in
    ``nodes``; ``roots[ptr[r+1]]`` ends the last one); a row may hold no tree."""
    for r in numba.prange(ptr.shape[0] - 1):
        predict_packed(roots[ptr[r]:ptr[r + 1] + 1], nodes, offsets[r], X, out[r])


@numba.njit(cache=True, inline="always")
def _goes_right(nd, x) -> bool:
    """Whether a row with value ``x`` at the split ``nd`` goes to the right child (the rule
    of :func:`predict_packed`)."""
    if x != x:
        return nd.missing_left == 0
    if nd.cats != 0:
        code = np.uint64(np.int64(x)) & np.uint64(63)
        return ((nd.cats >> code) & np.uint64(1)) == 0
    return x > nd.threshold


@numba.njit(cache=True, parallel=True)
def predict_marginal_ragged(roots, ptr, nodes, offsets, X, excluded, out):
    """:func:`predict_ragged` with the columns where ``excluded`` is True marginalised out by
    the rows of X itself (the "recursion" of Friedman 2001, sec. 8.2; pymc-bart's submodels).

    A row follows its own values at the splits on kept columns.  At a split on an excluded
    column it goes to both children, weighted by the shares of the rows of X that reach each
    of them (a node no row of X reaches has its weight halved between its children).  At a
    linear leaf whose column is dropped, the slope term is its mean over the rows of X that
    reach the leaf.  With
    no column excluded this is :func:`predict_ragged`; with every column excluded each tree
    gives the mean of its values over the rows of X.

    ``roots``, ``ptr``, ``nodes``, ``offsets`` and ``out`` (R, n) as for
    :func:`predict_ragged`; ``excluded`` is a bool array of shape (p,)."""
    n = X.shape[0]
    for r in numba.prange(ptr.shape[0] - 1):
        t0 = ptr[r]
        t1 = ptr[r + 1]
        base = roots[t0]
        size = roots[t1] - base
        acc = np.full(n, offsets[r])
        if size == 0:
            out[r, :] = acc
            continue
        # rows of X reaching each node of row r's trees; at a linear leaf, the sum of its
        # slope term over them (its mean replaces the term when its column is dropped)
        cnt = np.zeros(size)
        lsum = np.zeros(size)
        biggest = 1
        for t in range(t0, t1):
            biggest = max(biggest, roots[t + 1] - roots[t])
            for i in range(n):
                k = roots[t]
                cnt[k - base] += 1.0
                while nodes[k].feature >= 0:
                    k = nodes[k].left + np.int64(_goes_right(nodes[k], X[i, nodes[k].feature]))
                    cnt[k - base] += 1.0
                if nodes[k].feature < -1:
                    lsum[k - base] += leaf_value(nodes[k], X, i) - nodes[k].value
        stack = np.empty(biggest + 1, np.int64)
        weight = np.empty(biggest + 1)
        for i in range(n):
            s = 0.0
            for t in range(t0, t1):
                stack[0] = roots[t]
                weight[0] = 1.0
                top = 1
                while top > 0:
                    top -= 1
                    k = stack[top]
                    w = weight[top]
                    nd = nodes[k]
                    if nd.feature < -1 and excluded[-2 - nd.feature]:
                        nk = cnt[k - base]
                        s += w * (nd.value + (lsum[k - base] / nk if nk > 0.0 else 0.0))
                    elif nd.feature < 0:
                        s += w * leaf_value(nd, X, i)
                    elif excluded[nd.feature]:
                        c = nd.left
                        nl = cnt[c - base]
                        nr = cnt[c + 1 - base]
                        share = 0.5 if nl + nr == 0.0 else nl / (nl + nr)
                        if share > 0.0:
                            stack[top] = c
                            weight[top] = w * share
                            top += 1
                        if share < 1.0:
                            stack[top] = c + 1
                            weight[top] = w * (1.0 - share)
                            top += 1
                    else:
                        stack[top] = nd.left + np.int64(_goes_right(nd, X[i, nd.feature]))
                        weight[top] = w
                        top += 1
            acc[i] += s
        out[r, :] = acc
