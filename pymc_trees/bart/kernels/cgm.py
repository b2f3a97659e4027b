"""Chipman-George-McCulloch Metropolis moves and the Bayesian backfitting sweep (bart-math 5).

Leaf values are integrated out of every acceptance ratio, which therefore only needs the
per-leaf sufficient statistics ``(W, S)``; after the structural move the leaves of the tree are
drawn from their exact conditional.
"""

from __future__ import annotations

import math
import sys

from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import LEAF, load_mask, store_mask
from pymc_trees.bart.kernels.nodes import (alloc_node, availability_below,
                                           draw_leaf_values, draw_levels, draw_node_rule,
                                           draw_rule, free_node,
                                           log_1m_psplit, log_ml, log_psplit, node_availability,
                                           rule_valid, split_node)

__all__ = ["GROW", "PRUNE", "CHANGE", "SWAP", "SweepData", "TreeRules", "SweepScratch",
           "new_scratch", "cgm_sweep", "leaf_counts", "propose_split", "children_masks", "commit_children",
           "swap_rules",
           "forest_summary"]

GROW, PRUNE, CHANGE, SWAP = 0, 1, 2, 3

# Row numbers in the sweeps' row lists (``idx``, ``tmp``): unsigned, so that numba indexes the
# per-row arrays with them without its check for negative indices (a compare and a select on
# every gathered read; split_sums over 64,000 rows 80 us with int32, 58 with uint32).
ROW_INDEX = np.uint32

# The passes over the rows read one-byte leaf indices eight at a time, as one little-endian
# 64-bit word whose byte j is row i0 + j's leaf (a load each eight rows instead of one a row:
# the passes are bound by loads and stores, not by memory traffic).
WIDE_LEAVES = sys.byteorder == "little"
U8 = np.uint64(255)


@numba.njit(cache=True, inline="always")
def _wide_rows(leaf_of_row):
    """How many rows the passes read eight leaf indices at a time: all but the last ``n mod
    8`` for one-byte indices on a little-endian machine, else none."""
    n = leaf_of_row.shape[1]
    return n - (n & 7) if WIDE_LEAVES and leaf_of_row.itemsize == 1 else 0


@numba.njit(cache=True, inline="always")
def _words(leaf_of_row, t, n8):
    """Tree t's leaf indices of the first ``n8`` rows as 64-bit words (byte j of word w is
    row ``8 w + j``'s)."""
    return leaf_of_row[t, :n8].view(np.uint64)


class SweepData(NamedTuple):
    """The training rows as the sweep reads them: bins row-major ``Xb`` (n, p) and
    feature-major ``XbT`` (p, n), cutpoints per feature ``ncuts`` (p,), categorical features
    ``iscat`` (p,) and the split probabilities ``split_prior`` (p,)."""

    Xb: np.ndarray
    XbT: np.ndarray
    ncuts: np.ndarray
    iscat: np.ndarray
    split_prior: np.ndarray


class TreeRules(NamedTuple):
    """The tree prior's constants: fewest rows in a leaf, ``alpha``, ``beta`` of the split
    probability ``alpha (1 + depth)^-beta``, and the leaf values' prior precision."""

    min_leaf: int
    alpha: float
    beta: float
    prec0: float


class SweepScratch(NamedTuple):
    """Buffers of a sweep, allocated once by :func:`new_scratch`: per row ``r`` (residual),
    ``idx`` (row order), ``tmp`` (partitions); per feature ``hist`` (bin counts), ``lo``,
    ``hi`` (available rules); per node slot ``W``, ``S`` (leaf statistics), ``nW``, ``nS``,
    ``nwav``, ``nnc``, ``seg_s``, ``seg_e``, ``stack``, ``in_sub``; ``nmask`` the proposed
    nodes' masks.  The general step reads ``W``, ``S``, ``nW``, ``nS`` as its own G, H, V
    and spare buffers."""

    r: np.ndarray
    idx: np.ndarray
    hist: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    W: np.ndarray
    S: np.ndarray
    nW: np.ndarray
    nS: np.ndarray
    nwav: np.ndarray
    nnc: np.ndarray
    seg_s: np.ndarray
    seg_e: np.ndarray
    stack: np.ndarray
    in_sub: np.ndarray
    tmp: np.ndarray
    nmask: np.ndarray


def new_scratch(n: int, p: int, max_cuts: int, capacity: int,
                categorical: bool = False) -> SweepScratch:
    """Buffers for one sweep, allocated once by the caller; the node-sized buffers must be
    regrown with the forest's capacity.  ``nmask`` has one extra row per node for the
    proposed masks, plus two."""
    from pymc_trees.bart.kernels.forest import mask_dtype, mask_width

    K = capacity
    return SweepScratch(
        np.zeros(n), np.zeros(n, ROW_INDEX), np.zeros((p, max_cuts + 1), np.int32),
        np.zeros(p, np.int32), np.zeros(p, np.int32),
        np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K),
        np.zeros(K, np.int32), np.zeros(K, np.int32), np.zeros(K, np.int32),
        np.zeros(K, np.int32), np.zeros(K, np.bool_), np.zeros(n, ROW_INDEX),
        np.zeros((1, K + 2, mask_width(p)), mask_dtype(max_cuts, categorical)),
    )


@numba.njit(cache=True)
def partition_rows(XbT, idx, start, end, v, c, tmp):
    """Stable partition of ``idx[start:end]``: rows going left under rule ``c`` of feature
    ``v`` first (``XbT[v, i] <= c``, or level ``XbT[v, i]`` in the set ``~c``), returns the
    split position.  ``XbT`` is the binned data feature-major (shape (p, n), narrowest
    integers), so the feature's bins of all rows lie in one small block of memory.  Without
    branches on the data (rows of a large node go either way about as often, which defeats
    branch prediction): every row is written to both sides and the side it belongs to
    advances; ``tmp`` (n entries) holds the right side meanwhile."""
    nl = start
    nr = 0
    if c >= 0:
        for q in range(start, end):
            i = idx[q]
            go = XbT[v, i] <= c
            idx[nl] = i  # nl <= q: a slot already read
            tmp[nr] = i
            nl += go
            nr += 1 - go
    else:
        S = ~c
        for q in range(start, end):
            i = idx[q]
            go = (S >> XbT[v, i]) & 1
            idx[nl] = i
            tmp[nr] = i
            nl += go
            nr += 1 - go
    for q in range(nr):
        idx[nl + q] = tmp[q]
    return nl


@numba.njit(cache=True)
def accept_move(rng, logr):
    u = rng.random()
    return logr >= 0.0 or u < math.exp(logr)


@numba.njit(cache=True, inline="always")
def accept_u(u, logr):
    """Metropolis decision for a uniform ``u`` already drawn.  For ``B >= logr`` a rejection
    by ``B`` is a rejection by ``logr`` (exp is monotone), which lets a move test a cheap upper
    bound of its log ratio before computing the rest."""
    return logr >= 0.0 or u < math.exp(logr)


# node classes used to pick the node a move acts on (bit flags)
SPLITTABLE_LEAF, PRUNABLE, INTERNAL, SWAPPABLE = 1, 2, 4, 8


@numba.njit(cache=True, inline="always")
def _node_class(t, k, var, left, right, parent, wavail):
    vk = var[t, k]
    if vk == LEAF:
        return SPLITTABLE_LEAF if wavail[t, k] > 0.0 else 0
    if vk < 0:
        return 0
    cls = INTERNAL
    if var[t, left[t, k]] == LEAF and var[t, right[t, k]] == LEAF:
        cls |= PRUNABLE
    if k != 0 and var[t, parent[t, k]] >= 0:
        cls |= SWAPPABLE
    return cls


@numba.njit(cache=True)
def count_nodes(t, flag, var, left, right, parent, wavail, n_nodes):
    c = 0
    for k in range(n_nodes[t]):
        if _node_class(t, k, var, left, right, parent, wavail) & flag:
            c += 1
    return c


@numba.njit(cache=True)
def pick_node(rng, t, flag, count, var, left, right, parent, wavail, n_nodes):
    """A node of class ``flag`` chosen uniformly among the ``count`` such nodes."""
    pick = min(int(rng.random() * count), count - 1)
    for k in range(n_nodes[t]):
        if _node_class(t, k, var, left, right, parent, wavail) & flag:
            if pick == 0:
                return k
            pick -= 1
    return -1


@numba.njit(cache=True, inline="always")
def propose_split(rng, t, Xb, XbT, split_prior, min_leaf, var, left, right, parent, wavail,
                  amask, n_nodes, leaf_of_row, idx, lo, hi, tmp):
    """The proposal of a grow: a splittable leaf of tree t uniformly, its rule from the
    prior, its rows partitioned by the rule.  Returns ``(leaf, b, w_new, cnt, v, c, nc,
    mid)``: ``b`` the tree's splittable leaves, ``w_new`` its prunable nodes after the grow,
    ``idx[:cnt]`` the leaf's rows with the left child's ``idx[:mid]`` first; ``leaf = -1``
    when no leaf can split."""
    ell, b, w_new, cnt, v, c, nc = pick_split(rng, t, Xb, split_prior, min_leaf, var, left,
                                              right, parent, wavail, amask, n_nodes,
                                              leaf_of_row, idx, lo, hi)
    if ell < 0:
        return -1, 0, 0, 0, 0, 0, 0, 0
    mid = partition_rows(XbT, idx, 0, cnt, v, c, tmp)
    return ell, b, w_new, cnt, v, c, nc, mid


@numba.njit(cache=True, inline="always")
def pick_split(rng, t, Xb, split_prior, min_leaf, var, left, right, parent, wavail, amask,
               n_nodes, leaf_of_row, idx, lo, hi):
    """:func:`propose_split` without the partition: ``(leaf, b, w_new, cnt, v, c, nc)``, the
    leaf's rows ``idx[:cnt]`` in increasing order."""
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    if b == 0:
        return -1, 0, 0, 0, 0, 0, 0
    ell = pick_node(rng, t, SPLITTABLE_LEAF, b, var, left, right, parent, wavail, n_nodes)
    cnt = leaf_rows(t, ell, leaf_of_row, idx)
    w_new, v, c, nc = leaf_rule(rng, t, ell, Xb, split_prior, min_leaf, var, left, right,
                                parent, wavail, amask, n_nodes, idx, cnt, lo, hi)
    return ell, b, w_new, cnt, v, c, nc


@numba.njit(cache=True)
def leaf_rows(t, ell, leaf_of_row, idx):
    """The rows of leaf ``ell`` of tree t into ``idx`` in increasing order; returns their
    number."""
    n = leaf_of_row.shape[1]
    if ell == 0:  # the tree is a single leaf
        for i in range(n):
            idx[i] = i
        return n
    cnt = 0
    for i in range(n):  # written always, kept when in the leaf: no branch on the data
        idx[cnt] = i
        cnt += leaf_of_row[t, i] == ell
    return cnt


@numba.njit(cache=True, inline="always")
def leaf_rule(rng, t, ell, Xb, split_prior, min_leaf, var, left, right, parent, wavail, amask,
              n_nodes, idx, cnt, lo, hi):
    """The rest of a grow's proposal once its leaf ``ell`` and the leaf's rows ``idx[:cnt]``
    are known: ``(w_new, v, c, nc)``, the tree's prunable nodes after the grow and the rule
    drawn from the prior."""
    w_new = prunable_after_grow(t, ell, var, left, right, parent, wavail, n_nodes)
    # the leaf's available cutpoints were kept when its rows last changed
    load_mask(amask, t, ell, lo, hi)
    v, c, nc = draw_node_rule(rng, lo, hi, split_prior, wavail[t, ell], Xb, idx, 0, cnt,
                              min_leaf)
    return w_new, v, c, nc


@numba.njit(cache=True, inline="always")
def prunable_after_grow(t, ell, var, left, right, parent, wavail, n_nodes):
    """The number of prunable nodes of tree t once leaf ``ell`` is split: one more, unless
    its parent was prunable (its sibling a leaf) and no longer is."""
    w_new = count_nodes(t, PRUNABLE, var, left, right, parent, wavail, n_nodes) + 1
    par = parent[t, ell]
    if par >= 0:
        sib = left[t, par] if right[t, par] == ell else right[t, par]
        if var[t, sib] == LEAF:
            w_new -= 1
    return w_new


@numba.njit(cache=True, inline="always")
def _goes(XbT, v, c, i):
    """1.0 when row i goes left under rule ``c`` of feature ``v``, else 0.0 (a number, so that
    sums take it by multiplication rather than by a branch on the data)."""
    b = XbT[v, i]
    if c >= 0:  # the same for every row of a rule: predicted
        return np.float64(b <= c)
    return np.float64(((~c) >> b) & 1)


@numba.njit(cache=True, inline="always")
def _left_sums(XbT, v, c, idx, cnt, r):
    """``(rows, sum of residuals)`` of the rows ``idx[:cnt]`` that rule ``c`` of feature
    ``v`` sends left, in four interleaved partial sums held in registers."""
    q4 = cnt - (cnt & 3)
    l0 = l1 = l2 = l3 = 0.0
    nl = 0.0
    for q in range(0, q4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
        g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
        nl += (g0 + g1) + (g2 + g3)
        l0 += g0 * r[i0]
        l1 += g1 * r[i1]
        l2 += g2 * r[i2]
        l3 += g3 * r[i3]
    for q in range(q4, cnt):
        i = idx[q]
        g = _goes(XbT, v, c, i)
        nl += g
        l0 += g * r[i]
    return nl, (l0 + l1) + (l2 + l3)


@numba.njit(cache=True)
def split_sums(XbT, v, c, idx, cnt, r, omega, omega_const, out, s_tot=np.nan):
    """The two children's leaf statistics under rule ``c`` of feature ``v`` for the rows
    ``idx[:cnt]``, without moving them: ``out = (W_left, S_left, W_right, S_right)``.  Each
    row adds ``omega r`` times 1 to the side its rule sends it to and times 0 to the other (no
    branch on the data), in four interleaved partial sums held in registers (rows ``q mod
    4``), so that consecutive rows do not wait on each other's additions.  With equal
    precisions (``omega_const > 0``) W is that precision times a row count and S that
    precision times a sum of residuals; when the rows' own ``S`` is known (``s_tot``, from
    the pass over the rows: a leaf, or a node above two leaves, whose rows have not moved),
    only the left side is summed and the right one is ``s_tot`` minus it (a quarter fewer
    operations a row)."""
    if omega_const > 0.0 and s_tot == s_tot:
        nl, sl = _left_sums(XbT, v, c, idx, cnt, r)
        out[0] = omega_const * nl
        out[1] = omega_const * sl
        out[2] = omega_const * (cnt - nl)
        out[3] = s_tot - out[1]
        return
    q4 = cnt - (cnt & 3)
    l0 = l1 = l2 = l3 = 0.0  # left sums, lanes 0..3
    r0 = r1 = r2 = r3 = 0.0  # right sums
    if omega_const > 0.0:
        nl = 0.0
        for q in range(0, q4, 4):
            i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
            g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
            g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
            x0, x1, x2, x3 = r[i0], r[i1], r[i2], r[i3]
            nl += (g0 + g1) + (g2 + g3)
            l0 += g0 * x0
            l1 += g1 * x1
            l2 += g2 * x2
            l3 += g3 * x3
            r0 += (1.0 - g0) * x0
            r1 += (1.0 - g1) * x1
            r2 += (1.0 - g2) * x2
            r3 += (1.0 - g3) * x3
        for q in range(q4, cnt):
            i = idx[q]
            g = _goes(XbT, v, c, i)
            nl += g
            l0 += g * r[i]
            r0 += (1.0 - g) * r[i]
        out[0] = omega_const * nl
        out[1] = omega_const * ((l0 + l1) + (l2 + l3))
        out[2] = omega_const * (cnt - nl)
        out[3] = omega_const * ((r0 + r1) + (r2 + r3))
        return
    wl0 = wl1 = wl2 = wl3 = 0.0
    wr0 = wr1 = wr2 = wr3 = 0.0
    for q in range(0, q4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
        g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
        w0, w1, w2, w3 = omega[i0], omega[i1], omega[i2], omega[i3]
        x0, x1, x2, x3 = w0 * r[i0], w1 * r[i1], w2 * r[i2], w3 * r[i3]
        wl0 += g0 * w0
        wl1 += g1 * w1
        wl2 += g2 * w2
        wl3 += g3 * w3
        wr0 += (1.0 - g0) * w0
        wr1 += (1.0 - g1) * w1
        wr2 += (1.0 - g2) * w2
        wr3 += (1.0 - g3) * w3
        l0 += g0 * x0
        l1 += g1 * x1
        l2 += g2 * x2
        l3 += g3 * x3
        r0 += (1.0 - g0) * x0
        r1 += (1.0 - g1) * x1
        r2 += (1.0 - g2) * x2
        r3 += (1.0 - g3) * x3
    for q in range(q4, cnt):
        i = idx[q]
        g = _goes(XbT, v, c, i)
        wl0 += g * omega[i]
        wr0 += (1.0 - g) * omega[i]
        l0 += g * omega[i] * r[i]
        r0 += (1.0 - g) * omega[i] * r[i]
    out[0] = (wl0 + wl1) + (wl2 + wl3)
    out[1] = (l0 + l1) + (l2 + l3)
    out[2] = (wr0 + wr1) + (wr2 + wr3)
    out[3] = (r0 + r1) + (r2 + r3)


ALL_LEFT = 1 << 30  # a numeric rule every bin satisfies: a leaf in the place of a split


@numba.njit(cache=True)
def _two_level_known(XbT, v0, c0, vL, cL, vR, cR, idx, cnt, r, omega_const, out, s_tot):
    """:func:`two_level_sums` when the rows' sum ``s_tot`` (times ``omega_const``) is known:
    with ``g`` the root's rule, ``l`` and ``h`` its children's, the rows add their residual
    to ``A = sum g l r``, ``B = sum g r`` and ``C = sum (1 - g) h r`` only (their counts
    likewise), and the leaves are ``A``, ``B - A``, ``C`` and ``s_tot - B - C``; a leaf child
    (``ALL_LEFT``) has no rule to read and its one sum is ``B`` or the rest.  Three sums a row
    instead of four, two with a leaf child, and fewer operations each."""
    q2 = cnt - (cnt & 1)
    a0 = a1 = b0 = b1 = c_0 = c_1 = 0.0
    na = ng = nc = 0.0
    leaf_l = cL == ALL_LEFT
    leaf_r = cR == ALL_LEFT
    if leaf_r:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            w0, w1 = g0 * _goes(XbT, vL, cL, i0), g1 * _goes(XbT, vL, cL, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            na += w0 + w1
            a0 += w0 * x0
            a1 += w1 * x1
            b0 += g0 * x0
            b1 += g1 * x1
    elif leaf_l:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            w0 = (1.0 - g0) * _goes(XbT, vR, cR, i0)
            w1 = (1.0 - g1) * _goes(XbT, vR, cR, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            nc += w0 + w1
            b0 += g0 * x0
            b1 += g1 * x1
            c_0 += w0 * x0
            c_1 += w1 * x1
    else:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            l0, l1 = g0 * _goes(XbT, vL, cL, i0), g1 * _goes(XbT, vL, cL, i1)
            h0 = (1.0 - g0) * _goes(XbT, vR, cR, i0)
            h1 = (1.0 - g1) * _goes(XbT, vR, cR, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            na += l0 + l1
            nc += h0 + h1
            a0 += l0 * x0
            a1 += l1 * x1
            b0 += g0 * x0
            b1 += g1 * x1
            c_0 += h0 * x0
            c_1 += h1 * x1
    for q in range(q2, cnt):
        i = idx[q]
        g = _goes(XbT, v0, c0, i)
        lft = 0.0 if leaf_l else g * _goes(XbT, vL, cL, i)
        h = 0.0 if leaf_r else (1.0 - g) * _goes(XbT, vR, cR, i)
        ng += g
        na += lft
        nc += h
        a0 += lft * r[i]
        b0 += g * r[i]
        c_0 += h * r[i]
    oc = omega_const
    if leaf_l:  # the left child's one leaf: every row the root sends left
        na = ng
        a0, a1 = b0, b1
    if leaf_r:  # the right child's one leaf: every row the root sends right
        nc = cnt - ng
    sa = oc * (a0 + a1)
    sb = oc * (b0 + b1)
    sc = s_tot - sb if leaf_r else oc * (c_0 + c_1)
    out[0], out[1] = oc * na, sa
    out[2], out[3] = oc * (ng - na), sb - sa
    out[4], out[5] = oc * nc, sc
    out[6], out[7] = oc * (cnt - ng - nc), s_tot - sb - sc


@numba.njit(cache=True)
def two_level_sums(XbT, v0, c0, vL, cL, vR, cR, idx, cnt, r, omega_const, out, s_tot=np.nan):
    """With equal precisions ``omega_const``: the leaf statistics of a node with rule ``(v0,
    c0)`` whose children split by ``(vL, cL)`` and ``(vR, cR)`` into two leaves each (a child
    that is a leaf passes ``ALL_LEFT``), for the rows ``idx[:cnt]``, without moving them:
    ``out = (W, S)`` of the leaves left-left, left-right, right-left, right-right.  Each row
    adds its residual times 1 to its leaf and times 0 to the others, in two interleaved
    partial sums held in registers (rows ``q mod 2``).  When the rows' own ``S`` is known
    (``s_tot``: the subtree's root, whose rows are those of its current leaves), the last
    leaf's sums are taken as differences and a leaf child's rule is not read
    (:func:`_two_level_known`)."""
    if s_tot == s_tot:
        _two_level_known(XbT, v0, c0, vL, cL, vR, cR, idx, cnt, r, omega_const, out, s_tot)
        return
    a0 = b0 = c_0 = d0 = 0.0  # S of the four leaves, lane 0
    a1 = b1 = c_1 = d1 = 0.0  # lane 1
    na = nb = nc = 0.0
    q2 = cnt - (cnt & 1)
    for q in range(0, q2, 2):
        i0, i1 = idx[q], idx[q + 1]
        g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
        l0, l1 = _goes(XbT, vL, cL, i0), _goes(XbT, vL, cL, i1)
        h0, h1 = _goes(XbT, vR, cR, i0), _goes(XbT, vR, cR, i1)
        x0, x1 = r[i0], r[i1]
        wa0, wa1 = g0 * l0, g1 * l1
        wb0, wb1 = g0 - wa0, g1 - wa1
        wc0, wc1 = (1.0 - g0) * h0, (1.0 - g1) * h1
        wd0, wd1 = (1.0 - g0) - wc0, (1.0 - g1) - wc1
        na += wa0 + wa1
        nb += wb0 + wb1
        nc += wc0 + wc1
        a0 += wa0 * x0
        a1 += wa1 * x1
        b0 += wb0 * x0
        b1 += wb1 * x1
        c_0 += wc0 * x0
        c_1 += wc1 * x1
        d0 += wd0 * x0
        d1 += wd1 * x1
    for q in range(q2, cnt):
        i = idx[q]
        g, lft, h = _goes(XbT, v0, c0, i), _goes(XbT, vL, cL, i), _goes(XbT, vR, cR, i)
        wa = g * lft
        wc = (1.0 - g) * h
        na += wa
        nb += g - wa
        nc += wc
        a0 += wa * r[i]
        b0 += (g - wa) * r[i]
        c_0 += wc * r[i]
        d0 += ((1.0 - g) - wc) * r[i]
    oc = omega_const
    out[0], out[1] = oc * na, oc * (a0 + a1)
    out[2], out[3] = oc * nb, oc * (b0 + b1)
    out[4], out[5] = oc * nc, oc * (c_0 + c_1)
    out[6], out[7] = oc * (cnt - na - nb - nc), oc * (d0 + d1)


@numba.njit(cache=True, inline="always")
def _above_leaves(t, k, var, left, right):
    """Whether node k is a leaf or splits into two leaves."""
    return var[t, k] < 0 or (var[t, left[t, k]] < 0 and var[t, right[t, k]] < 0)


@numba.njit(cache=True, inline="always")
def children_masks(XbT, idx, mid, cnt, ncuts, iscat, min_leaf, split_prior, hist, lo, hi,
                   nmask):
    """The available rules of the two children of a split, ``idx[:mid]`` and
    ``idx[mid:cnt]``, given their parent's in ``lo``, ``hi`` (:func:`availability_below`):
    kept in the last two rows of ``nmask``; returns their available weights ``(wL, wR)``."""
    K2 = nmask.shape[1] - 2
    plo = lo.copy()
    phi = hi.copy()
    wL = availability_below(XbT, idx, 0, mid, ncuts, iscat, min_leaf, split_prior, plo, phi,
                            hist, lo, hi)
    store_mask(nmask, 0, K2, lo, hi)
    wR = availability_below(XbT, idx, mid, cnt, ncuts, iscat, min_leaf, split_prior, plo, phi,
                            hist, lo, hi)
    store_mask(nmask, 0, K2 + 1, lo, hi)
    return wL, wR


@numba.njit(cache=True, inline="always")
def commit_children(t, kl, kr, wL, wR, wavail, amask, nmask, leaf_of_row, idx, mid, cnt):
    """Give the children ``kl``, ``kr`` of a split their available weights, the masks
    :func:`children_masks` kept, and their rows ``idx[:mid]``, ``idx[mid:cnt]``."""
    K2 = nmask.shape[1] - 2
    wavail[t, kl] = wL
    wavail[t, kr] = wR
    for j in range(amask.shape[2]):
        amask[t, kl, j] = nmask[0, K2, j]
        amask[t, kr, j] = nmask[0, K2 + 1, j]
    for q in range(mid):
        leaf_of_row[t, idx[q]] = kl
    for q in range(mid, cnt):
        leaf_of_row[t, idx[q]] = kr


@numba.njit(cache=True)
def _mark_subtree(t, root, var, left, right, stack, in_sub, flag):
    top = 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        in_sub[k] = flag
        if var[t, k] >= 0:
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2


@numba.njit(cache=True)
def _old_subtree(t, root, skip_root_rule, var, left, right, depth, wavail, ncut, W, S,
                 split_prior, alpha, beta, prec0, stack):
    """log prior factors plus leaf log marginal likelihoods of the current subtree."""
    total = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        d = depth[t, k]
        if var[t, k] >= 0:
            total += log_psplit(d, alpha, beta)
            if not (skip_root_rule and k == root):
                total += math.log(split_prior[var[t, k]] / wavail[t, k]) - math.log(ncut[t, k])
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2
        else:
            total += log_1m_psplit(d, alpha, beta, wavail[t, k] > 0.0)
            total += log_ml(W[k], S[k], prec0)
    return total


@numba.njit(cache=True)
def split_segment(t, k, XbT, idx, var, cut, left, right, seg_s, seg_e, stack, top, tmp):
    """Partition internal node k's segment ``idx[seg_s[k]:seg_e[k]]`` by its rule into its
    children's segments and push both children on ``stack``; returns the new top.  Shared
    by the subtree routing of the conjugate (here) and the general moves."""
    s = seg_s[k]
    e = seg_e[k]
    mid = partition_rows(XbT, idx, s, e, var[t, k], cut[t, k], tmp)
    kl = left[t, k]
    kr = right[t, k]
    seg_s[kl] = s
    seg_e[kl] = mid
    seg_s[kr] = mid
    seg_e[kr] = e
    stack[top] = kl
    stack[top + 1] = kr
    return top + 2


@numba.njit(cache=True)
def segment_sums(idx, s, e, r, omega, omega_const):
    """A leaf's statistics ``(W, S)`` from its rows ``idx[s:e]``, in four interleaved partial
    sums held in registers (with equal precisions W is that precision times the count)."""
    e4 = e - ((e - s) & 3)
    w0 = w1 = w2 = w3 = 0.0
    s0 = s1 = s2 = s3 = 0.0
    if omega_const > 0.0:
        for q in range(s, e4, 4):
            s0 += r[idx[q]]
            s1 += r[idx[q + 1]]
            s2 += r[idx[q + 2]]
            s3 += r[idx[q + 3]]
        for q in range(e4, e):
            s0 += r[idx[q]]
        return omega_const * (e - s), omega_const * ((s0 + s1) + (s2 + s3))
    for q in range(s, e4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        w0 += omega[i0]
        w1 += omega[i1]
        w2 += omega[i2]
        w3 += omega[i3]
        s0 += omega[i0] * r[i0]
        s1 += omega[i1] * r[i1]
        s2 += omega[i2] * r[i2]
        s3 += omega[i3] * r[i3]
    for q in range(e4, e):
        i = idx[q]
        w0 += omega[i]
        s0 += omega[i] * r[i]
    return (w0 + w1) + (w2 + w3), (s0 + s1) + (s2 + s3)


@numba.njit(cache=True)
def _two_level(t, k, s, e, XbT, alpha, beta, prec0, var, cut, left, right, depth, r,
               omega_const, idx, nW, nS, out, s_tot=np.nan):
    """:func:`two_level_sums` at node k (rows ``idx[s:e]``), whose children are leaves or
    nodes above two leaves: fills the leaves' ``(nW, nS)``; returns the children's
    ``log p_split`` plus the leaves' log marginal likelihoods."""
    total = 0.0
    kids = (left[t, k], right[t, k])
    rules = np.empty(4, np.int64)
    for j in range(2):
        c = kids[j]
        if var[t, c] >= 0:
            total += log_psplit(depth[t, c], alpha, beta)
            rules[2 * j] = var[t, c]
            rules[2 * j + 1] = cut[t, c]
        else:
            rules[2 * j] = var[t, k]
            rules[2 * j + 1] = ALL_LEFT
    two_level_sums(XbT, var[t, k], cut[t, k], rules[0], rules[1], rules[2], rules[3], idx[s:e],
                   e - s, r, omega_const, out, s_tot)
    for j in range(2):
        c = kids[j]
        for h in range(2):
            if var[t, c] >= 0:
                lf = left[t, c] if h == 0 else right[t, c]
            elif h == 0:
                lf = c  # a leaf child: all its rows went to the first slot
            else:
                continue
            w = out[4 * j + 2 * h]
            sr = out[4 * j + 2 * h + 1]
            nW[lf] = w
            nS[lf] = sr
            total += log_ml(w, sr, prec0)
    return total


@numba.njit(cache=True)
def subtree_sums(t, root, cnt, XbT, alpha, beta, prec0, var, cut, left, right, depth, r, omega,
                 omega_const, idx, S, nW, nS, seg_s, seg_e, stack, tmp, sums):
    """The leaves' proposed ``(nW, nS)`` of a subtree under its (possibly new) rules, for its
    rows ``idx[:cnt]``.  Rows are partitioned down to the nodes above two leaves only: those
    two leaves' sums come from :func:`split_sums` over the node's rows, unmoved (most
    changes act on such a node, so most subtrees move no rows at all here); the segments
    are completed by :func:`route_segments` when the move is not already rejected.

    Returns the leaf log marginal likelihoods plus ``log p_split`` of every internal node: an
    upper bound of the subtree's full log factor, whose remaining factors (rule
    probabilities ``split_prior[v] / wsum / nc`` of available rules, and ``1 - p_split`` of
    splittable leaves) are all at most 1 (:func:`prior_subtree` adds them)."""
    total = 0.0
    sums2 = np.empty(8)
    seg_s[root] = 0
    seg_e[root] = cnt
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        s = seg_s[k]
        e = seg_e[k]
        v = var[t, k]
        if v >= 0:
            total += log_psplit(depth[t, k], alpha, beta)
            kl = left[t, k]
            kr = right[t, k]
            if var[t, kl] < 0 and var[t, kr] < 0:
                # at the subtree's root the rows are those of its current leaves
                s_tot = S[kl] + S[kr] if k == root else np.nan
                split_sums(XbT, v, cut[t, k], idx[s:e], e - s, r, omega, omega_const, sums,
                           s_tot)
                nW[kl], nS[kl], nW[kr], nS[kr] = sums[0], sums[1], sums[2], sums[3]
                total += log_ml(sums[0], sums[1], prec0) + log_ml(sums[2], sums[3], prec0)
            elif (omega_const > 0.0 and _above_leaves(t, kl, var, left, right)
                  and _above_leaves(t, kr, var, left, right)):
                # two levels above leaves (a swap's subtree, mostly): one pass, no partition;
                # at the subtree's root the rows are those of its current leaves
                s_tot = np.nan
                if k == root:
                    s_tot = 0.0
                    for c in (kl, kr):
                        if var[t, c] < 0:
                            s_tot += S[c]
                        else:
                            s_tot += S[left[t, c]] + S[right[t, c]]
                total += _two_level(t, k, s, e, XbT, alpha, beta, prec0, var, cut, left, right,
                                    depth, r, omega_const, idx, nW, nS, sums2, s_tot)
            else:
                top = split_segment(t, k, XbT, idx, var, cut, left, right, seg_s, seg_e, stack,
                                    top, tmp)
        else:
            w, sr = segment_sums(idx, s, e, r, omega, omega_const)
            nW[k] = w
            nS[k] = sr
            total += log_ml(w, sr, prec0)
    return total


@numba.njit(cache=True)
def route_segments(t, root, cnt, XbT, var, cut, left, right, idx, seg_s, seg_e, stack, tmp):
    """Partition the rows ``idx[:cnt]`` of a subtree by its rules into its nodes' segments
    ``idx[seg_s[k]:seg_e[k]]`` (a segment already partitioned by its rule, by
    :func:`subtree_sums`, is partitioned again to the same order: the partition is stable)."""
    seg_s[root] = 0
    seg_e[root] = cnt
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        if var[t, k] >= 0:
            top = split_segment(t, k, XbT, idx, var, cut, left, right, seg_s, seg_e, stack,
                                top, tmp)


@numba.njit(cache=True)
def prior_subtree(t, root, skip_root_rule, root_wsum, Xb, XbT, ncuts, iscat, min_leaf,
                  split_prior, alpha, beta, var, cut, left, right, parent, depth, idx, hist, lo,
                  hi, nwav, nnc, seg_s, seg_e, stack, nmask):
    """The factors :func:`subtree_sums` leaves out, from the available cutpoints of every
    node of the routed subtree: ``(log factor, True)``, or ``(-inf, False)`` when some rule is
    no longer available (prior probability 0).  Fills ``nwav``, ``nnc`` and the masks.

    ``root_wsum >= 0`` says that ``lo``, ``hi`` already hold the root's available cutpoints
    (with weight sum ``root_wsum``): the root keeps its rows, so they are not recounted."""
    total = 0.0
    plo = np.empty_like(lo)
    phi = np.empty_like(hi)
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        if k == root and root_wsum >= 0.0:
            wsum = root_wsum
        elif k != root:
            # the parent's ranges were kept just before (the walk goes down from the root)
            load_mask(nmask, 0, parent[t, k], plo, phi)
            wsum = availability_below(XbT, idx, seg_s[k], seg_e[k], ncuts, iscat, min_leaf,
                                      split_prior, plo, phi, hist, lo, hi)
        else:
            wsum = node_availability(Xb, idx, seg_s[k], seg_e[k], ncuts, iscat, min_leaf,
                                     split_prior, hist, lo, hi)
        nwav[k] = wsum
        store_mask(nmask, 0, k, lo, hi)
        v = var[t, k]
        if v >= 0:
            c = cut[t, k]
            kl = left[t, k]
            kr = right[t, k]
            if not rule_valid(c, lo[v], hi[v], seg_e[kl] - seg_s[kl], seg_e[kr] - seg_s[kr],
                              min_leaf):
                return -np.inf, False
            nc = hi[v] - lo[v] + 1
            nnc[k] = nc
            if not (skip_root_rule and k == root):
                total += math.log(split_prior[v] / wsum) - math.log(nc)
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2
        else:
            total += log_1m_psplit(depth[t, k], alpha, beta, wsum > 0.0)
    return total, True


@numba.njit(cache=True)
def commit_subtree(t, root, var, left, right, wavail, ncut, leaf_of_row, idx, W, S, nW, nS,
                    nwav, nnc, seg_s, seg_e, stack, amask, nmask):
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        wavail[t, k] = nwav[k]
        for j in range(amask.shape[2]):
            amask[t, k, j] = nmask[0, k, j]
        if var[t, k] >= 0:
            ncut[t, k] = nnc[k]
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2
        else:
            W[k] = nW[k]
            S[k] = nS[k]
            for q in range(seg_s[k], seg_e[k]):
                leaf_of_row[t, idx[q]] = k


@numba.njit(cache=True)
def collect_subtree_rows(t, root, var, left, right, leaf_of_row, stack, in_sub, idx):
    """The rows of the subtree below ``root`` into ``idx`` in increasing order; returns their
    number.  Below the tree's root (node 0) that is every row, without reading their leaves."""
    n = leaf_of_row.shape[1]
    if root == 0:
        for i in range(n):
            idx[i] = i
        return n
    _mark_subtree(t, root, var, left, right, stack, in_sub, True)
    cnt = 0
    for i in range(n):  # written always, kept when in the subtree: no branch on the data
        idx[cnt] = i
        cnt += in_sub[leaf_of_row[t, i]]
    _mark_subtree(t, root, var, left, right, stack, in_sub, False)
    return cnt


@numba.njit(cache=True)
def _grow_proposal(rng, t, split_prior, var, left, right, parent, wavail, amask, n_nodes, lo,
                   hi):
    """The part of a grow's proposal that the tree alone decides, drawn before the pass over
    the rows (it reads no residual): a splittable leaf uniformly, then a feature and a
    cutpoint from the prior (:func:`draw_rule`; for a categorical feature the set of levels
    is drawn once the leaf's rows are known, :func:`draw_levels`).  Returns ``(leaf, b,
    w_new, v, c, nc)``, ``b`` the tree's splittable leaves, ``w_new`` its prunable nodes
    after the grow; ``leaf = -1`` when no leaf can split.  Leaves the leaf's available
    cutpoints in ``lo``, ``hi``.  The random numbers are drawn in the order
    :func:`pick_split` draws them."""
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    if b == 0:
        return -1, 0, 0, 0, 0, 0
    ell = pick_node(rng, t, SPLITTABLE_LEAF, b, var, left, right, parent, wavail, n_nodes)
    w_new = prunable_after_grow(t, ell, var, left, right, parent, wavail, n_nodes)
    load_mask(amask, t, ell, lo, hi)
    v, c, nc = draw_rule(rng, lo, hi, split_prior, wavail[t, ell])
    return ell, b, w_new, v, c, nc


@numba.njit(cache=True)
def _grow(rng, t, ell, b, w_new, v, c, nc, fused, nl, sl, counts, Xb, XbT, ncuts, iscat,
          min_leaf, split_prior, alpha, beta, prec0, pg, pp, var, cut, left, right, parent,
          depth, wavail, ncut, n_nodes, free, n_free, leaf_of_row, r, omega, omega_const, idx,
          hist, lo, hi, W, S, amask, nmask, tmp, sums):
    """The grow proposed by :func:`_grow_proposal`, after the pass over the rows: returns -1
    when impossible, else 1/0 for accepted/rejected.  ``fused`` says that the pass summed the
    leaf's rows that the rule sends left (``nl`` rows, residual sum ``sl``, equal precisions);
    otherwise the leaf's rows are collected and summed here.  The leaf's rows are partitioned
    between the children only when the likelihood does not already reject."""
    if ell < 0:
        return -1
    if fused:
        cnt = int(counts[t, ell])
        WL = omega_const * nl
        SL = omega_const * sl
        WR = omega_const * (cnt - nl)
        SR = S[ell] - SL
    else:
        cnt = leaf_rows(t, ell, leaf_of_row, idx)
        if lo[v] < 0:
            c = draw_levels(rng, lo, v, Xb, idx, 0, cnt, min_leaf)
        split_sums(XbT, v, c, idx, cnt, r, omega, omega_const, sums, S[ell])
        WL, SL, WR, SR = sums[0], sums[1], sums[2], sums[3]
    d = depth[t, ell]
    logr = (log_ml(WL, SL, prec0) + log_ml(WR, SR, prec0) - log_ml(W[ell], S[ell], prec0)
            + log_psplit(d, alpha, beta) - log_1m_psplit(d, alpha, beta, True)
            + math.log(pp * b) - math.log(pg * w_new))
    u = rng.random()
    # The children's availability enters only through their factors log(1 - p_split(d + 1))
    # <= 0, so ``logr`` bounds the full log ratio from above: when the bound already rejects,
    # the children are not counted (the same decision as with the full ratio).
    if not accept_u(u, logr):
        return 0
    if fused:
        cnt = leaf_rows(t, ell, leaf_of_row, idx)
    mid = partition_rows(XbT, idx, 0, cnt, v, c, tmp)
    # the children's available cutpoints, from their bin counts
    wL, wR = children_masks(XbT, idx, mid, cnt, ncuts, iscat, min_leaf, split_prior, hist, lo,
                            hi, nmask)
    logr += (log_1m_psplit(d + 1, alpha, beta, wL > 0.0)
             + log_1m_psplit(d + 1, alpha, beta, wR > 0.0))
    if not accept_u(u, logr):
        return 0
    kl = alloc_node(t, var, n_nodes, free, n_free)
    kr = alloc_node(t, var, n_nodes, free, n_free)
    split_node(t, ell, v, c, nc, kl, kr, var, cut, ncut, left, right, parent, depth)
    commit_children(t, kl, kr, wL, wR, wavail, amask, nmask, leaf_of_row, idx, mid, cnt)
    W[kl] = WL
    S[kl] = SL
    W[kr] = WR
    S[kr] = SR
    return 1


@numba.njit(cache=True)
def _prune(rng, t, alpha, beta, prec0, pg, pp, var, left, right, parent, depth, wavail, free,
           n_free, n_nodes, leaf_of_row, W, S):
    w = count_nodes(t, PRUNABLE, var, left, right, parent, wavail, n_nodes)
    if w == 0:
        return -1
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    eta = pick_node(rng, t, PRUNABLE, w, var, left, right, parent, wavail, n_nodes)
    kl = left[t, eta]
    kr = right[t, eta]
    d = depth[t, eta]
    b_new = b + 1
    if wavail[t, kl] > 0.0:
        b_new -= 1
    if wavail[t, kr] > 0.0:
        b_new -= 1
    grow_logr = (log_ml(W[kl], S[kl], prec0) + log_ml(W[kr], S[kr], prec0)
                 - log_ml(W[kl] + W[kr], S[kl] + S[kr], prec0)
                 + log_psplit(d, alpha, beta)
                 + log_1m_psplit(d + 1, alpha, beta, wavail[t, kl] > 0.0)
                 + log_1m_psplit(d + 1, alpha, beta, wavail[t, kr] > 0.0)
                 - log_1m_psplit(d, alpha, beta, wavail[t, eta] > 0.0)
                 + math.log(pp * b_new) - math.log(pg * w))
    if not accept_move(rng, -grow_logr):
        return 0
    n = leaf_of_row.shape[1]
    for i in range(n):
        lf = leaf_of_row[t, i]
        leaf_of_row[t, i] = eta if (lf == kl) | (lf == kr) else lf
    W[eta] = W[kl] + W[kr]
    S[eta] = S[kl] + S[kr]
    var[t, eta] = LEAF
    left[t, eta] = -1
    right[t, eta] = -1
    free_node(t, kl, var, free, n_free)
    free_node(t, kr, var, free, n_free)
    return 1


@numba.njit(cache=True)
def _change_proposal(rng, is_swap, t, split_prior, var, left, right, parent, wavail, amask,
                     n_nodes, lo, hi):
    """The part of a change's or a swap's proposal that the tree alone decides, drawn before
    the pass over the rows: the node (CHANGE) or the child of the parent-child pair (SWAP)
    uniformly, and for a change the new rule's feature and cutpoint from the prior at the
    node (as :func:`_grow_proposal`; the node keeps its rows, hence its available cutpoints,
    which are left in ``lo``, ``hi``).  Returns ``(node, v, c)``, ``node = -1`` when no node
    qualifies."""
    flag = SWAPPABLE if is_swap else INTERNAL
    count = count_nodes(t, flag, var, left, right, parent, wavail, n_nodes)
    if count == 0:
        return -1, 0, 0
    chosen = pick_node(rng, t, flag, count, var, left, right, parent, wavail, n_nodes)
    if is_swap:
        return chosen, 0, 0
    load_mask(amask, t, chosen, lo, hi)
    v, c, _ = draw_rule(rng, lo, hi, split_prior, wavail[t, chosen])
    return chosen, v, c


@numba.njit(cache=True, inline="always")
def _fusable_change(t, chosen, v_new, lo, var, left, right):
    """Whether the pass over the rows can sum a change's proposal itself: a node above two
    leaves and a numeric rule (a categorical one needs the node's levels first)."""
    return chosen >= 0 and _above_leaves(t, chosen, var, left, right) and lo[v_new] >= 0


@numba.njit(cache=True, inline="always")
def swap_rules(t, root, chosen, sib, both, var, cut):
    """A swap's new rules: the child ``chosen`` takes its parent ``root``'s rule and the
    parent the child's; with ``both``, the sibling ``sib`` (which had the child's rule too)
    takes the parent's as well."""
    v_root, c_root = var[t, root], cut[t, root]
    var[t, root] = var[t, chosen]
    cut[t, root] = cut[t, chosen]
    var[t, chosen] = v_root
    cut[t, chosen] = c_root
    if both:
        var[t, sib] = v_root
        cut[t, sib] = c_root


@numba.njit(cache=True)
def _change_or_swap(rng, is_swap, t, chosen, v_new, c_new, fused, nl, sl, counts, Xb, XbT,
                    ncuts, iscat, min_leaf, split_prior, alpha, beta, prec0, var, cut, left,
                    right, parent, depth, wavail, ncut, n_nodes, leaf_of_row, r, omega,
                    omega_const, idx, hist, lo, hi, W, S, nW, nS, nwav, nnc, seg_s, seg_e, stack,
                    in_sub, amask, nmask, tmp, sums):
    """The change or swap proposed by :func:`_change_proposal`, after the pass over the rows:
    -1 when impossible, else 1/0 for accepted/rejected.  ``fused`` says that the pass summed
    the rows of the node's two leaves that the new rule sends left (``nl`` rows, residual
    sum ``sl``, equal precisions): the rows are then collected only when the likelihood does
    not already reject."""
    if chosen < 0:
        return -1
    root = parent[t, chosen] if is_swap else chosen
    kl = left[t, root]
    kr = right[t, root]
    v_root, c_root = var[t, root], cut[t, root]
    v_l, c_l, v_r, c_r = var[t, kl], cut[t, kl], var[t, kr], cut[t, kr]
    both = False
    sib = kl
    if is_swap:
        sib = kr if chosen == kl else kl
        v_s, c_s = var[t, sib], cut[t, sib]
        both = v_s >= 0 and v_s == var[t, chosen] and c_s == cut[t, chosen]
        if not both and v_s >= 0 and v_s == v_root and c_s == c_root:
            # The proposal would leave both children with the same rule; its reverse move
            # (swap with both children) does not lead back, so the move has ratio 0.
            return 0
    root_wsum = wavail[t, root]
    if fused:
        old = _old_subtree(t, root, True, var, left, right, depth, wavail, ncut, W, S,
                           split_prior, alpha, beta, prec0, stack)
        cnt = int(counts[t, kl] + counts[t, kr])
        var[t, root] = v_new
        cut[t, root] = c_new
        nW[kl] = omega_const * nl
        nS[kl] = omega_const * sl
        nW[kr] = omega_const * (cnt - nl)
        nS[kr] = (S[kl] + S[kr]) - nS[kl]
        # what subtree_sums gives at a node above two leaves
        bound = (log_psplit(depth[t, root], alpha, beta) + log_ml(nW[kl], nS[kl], prec0)
                 + log_ml(nW[kr], nS[kr], prec0)) - old
    else:
        cnt = collect_subtree_rows(t, root, var, left, right, leaf_of_row, stack, in_sub, idx)
        old = _old_subtree(t, root, not is_swap, var, left, right, depth, wavail, ncut, W, S,
                           split_prior, alpha, beta, prec0, stack)
        if is_swap:
            swap_rules(t, root, chosen, sib, both, var, cut)
            # the subtree's root keeps its rows, hence its available cutpoints
            load_mask(amask, t, root, lo, hi)
        else:
            if lo[v_new] < 0:
                c_new = draw_levels(rng, lo, v_new, Xb, idx, 0, cnt, min_leaf)
            var[t, root] = v_new
            cut[t, root] = c_new
        bound = subtree_sums(t, root, cnt, XbT, alpha, beta, prec0, var, cut, left, right,
                             depth, r, omega, omega_const, idx, S, nW, nS, seg_s, seg_e, stack,
                             tmp, sums) - old
    u = rng.random()
    # the rows are partitioned among the nodes, and the rules' availability counted, only
    # when the bound does not already reject
    accept = accept_u(u, bound)
    if accept:
        if fused:
            cnt = collect_subtree_rows(t, root, var, left, right, leaf_of_row, stack, in_sub,
                                       idx)
        route_segments(t, root, cnt, XbT, var, cut, left, right, idx, seg_s, seg_e, stack, tmp)
        rest, valid = prior_subtree(t, root, not is_swap, root_wsum, Xb, XbT, ncuts, iscat, min_leaf,
                                     split_prior, alpha, beta, var, cut, left, right, parent, depth, idx,
                                     hist, lo, hi, nwav, nnc, seg_s, seg_e, stack, nmask)
        accept = valid and accept_u(u, bound + rest)
    if accept:
        commit_subtree(t, root, var, left, right, wavail, ncut, leaf_of_row, idx, W, S, nW, nS,
                        nwav, nnc, seg_s, seg_e, stack, amask, nmask)
        return 1
    var[t, root] = v_root
    cut[t, root] = c_root
    var[t, kl] = v_l
    cut[t, kl] = c_l
    var[t, kr] = v_r
    cut[t, kr] = c_r
    return 0


@numba.njit(cache=True)
def _pass_left_sums(t, tp, vp, leaf_of_row, value, r, acc, K, sel, XbT, v, c):
    """The pass over the rows of :func:`cgm_sweep` with equal precisions (tree ``tp``, whose
    leaf values are ``vp``, out of the residual, tree t back in, the residual's sum per leaf in
    ``acc``, four interleaved partial sums), which also sums the rows of the nodes marked in
    ``sel`` (1.0) that numeric rule ``c`` of feature ``v`` sends left: returns ``(rows, residual
    sum)``. So a grow, or a change at a node above two leaves, reads its rows in the pass that
    reads them anyway, instead of collecting them and reading them again. The partial sums are
    held in registers, one per row ``i mod 4``, written out by hand (numba keeps an array's
    entries in memory; reading one-byte leaf indices eight at a time, as :func:`_pass_one` does,
    is slower here: 268 against 248 ms for 200 passes at a million rows). ``acc`` and the
    residual come out the same as from the plain pass."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    l0 = l1 = l2 = l3 = 0.0
    c0 = c1 = c2 = c3 = 0.0
    for i0 in range(0, n4, 4):
        i = i0
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c0 += g
        l0 += g * ri
        i = i0 + 1
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c1 += g
        l1 += g * ri
        i = i0 + 2
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[2 * K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c2 += g
        l2 += g * ri
        i = i0 + 3
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[3 * K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c3 += g
        l3 += g * ri
    for i in range(n4, n):
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c0 += g
        l0 += g * ri
    return (c0 + c1) + (c2 + c3), (l0 + l1) + (l2 + l3)


@numba.njit(cache=True)
def _values_two(tq, tp, leaf_of_row, value, fsum):
    """Trees ``tq`` and ``tp`` into the values, in that order (the additions of the pass of
    :func:`cgm_sweep` that takes two trees, in a loop of their own when the pass sums a
    proposal: the pass with both costs more than the two apart)."""
    n = leaf_of_row.shape[1]
    n8 = _wide_rows(leaf_of_row)
    if n8 > 0:
        lq = _words(leaf_of_row, tq, n8)
        lp = _words(leaf_of_row, tp, n8)
        vq = value[tq]
        vp = value[tp]
        for w in range(n8 // 8):
            a = lq[w]
            b = lp[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                i = 8 * w + j
                fsum[i] = (fsum[i] + vq[(a >> sh) & U8]) + vp[(b >> sh) & U8]
    for i in range(n8, n):
        fsum[i] = (fsum[i] + value[tq, leaf_of_row[tq, i]]) + value[tp, leaf_of_row[tp, i]]


@numba.njit(cache=True)
def _pass_one(t, tp, vp, leaf_of_row, value, r, acc, K):
    """The pass of :func:`cgm_sweep` with equal precisions that takes tree ``tp`` out of the
    residual (its leaf values ``vp``: zeros at the first tree) and puts tree t back: the
    residual's sum per leaf of tree t in ``acc``, four interleaved partial sums (lane ``i mod
    4``, so that consecutive rows in the same leaf do not wait on each other's additions);
    one-byte leaf indices are read eight at a time (``WIDE_LEAVES``), with the same additions
    in the same order."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    n8 = _wide_rows(leaf_of_row)
    if n8 > 0:
        lt = _words(leaf_of_row, t, n8)
        lp = _words(leaf_of_row, tp, n8)
        vt = value[t]
        for w in range(n8 // 8):
            a = lt[w]
            b = lp[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                k = (a >> sh) & U8
                i = 8 * w + j
                ri = r[i] + vt[k] - vp[(b >> sh) & U8]
                r[i] = ri
                acc[(j & 3) * K + k] += ri
    for i in range(n8, n):
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[((i & 3) if i < n4 else 0) * K + k] += ri


@numba.njit(cache=True)
def _pass_pair(t, tp, tq, leaf_of_row, value, r, fsum, acc, K):
    """:func:`_pass_one` (tree ``tp`` out in full) that also adds trees ``tq`` and ``tp``, in
    that order, into the values ``fsum``: one load and store of a row's value per two
    trees."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    n8 = _wide_rows(leaf_of_row)
    if n8 > 0:
        lt = _words(leaf_of_row, t, n8)
        lp = _words(leaf_of_row, tp, n8)
        lq = _words(leaf_of_row, tq, n8)
        vt = value[t]
        vp = value[tp]
        vq = value[tq]
        for w in range(n8 // 8):
            a = lt[w]
            b = lp[w]
            c = lq[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                k = (a >> sh) & U8
                i = 8 * w + j
                vb = vp[(b >> sh) & U8]
                ri = r[i] + vt[k] - vb
                r[i] = ri
                fsum[i] = (fsum[i] + vq[(c >> sh) & U8]) + vb
                acc[(j & 3) * K + k] += ri
    for i in range(n8, n):
        k = leaf_of_row[t, i]
        vb = value[tp, leaf_of_row[tp, i]]
        ri = r[i] + value[t, k] - vb
        r[i] = ri
        fsum[i] = (fsum[i] + value[tq, leaf_of_row[tq, i]]) + vb
        acc[((i & 3) if i < n4 else 0) * K + k] += ri


@numba.njit(cache=True)
def cgm_sweep(rng, data, rules, move_cp, z, omega, omega_const, fsum, forest, scratch, counts,
              proposed, accepted, offset, exact_values=True):
    """One Bayesian-backfitting sweep over all trees.

    Parameters
    ----------
    data : SweepData
        The binned training rows (``Xb`` row-major for bin counts, ``XbT`` feature-major for
        partitions), cutpoints, categorical features and split probabilities.
    rules : TreeRules
        ``min_leaf``, ``alpha``, ``beta``, ``prec0``.
    forest : ForestArrays
        The forest, updated in place.
    scratch : SweepScratch
        Buffers (see :func:`new_scratch`).
    move_cp : ndarray of shape (4,)
        Cumulative probabilities of grow, prune, change, swap.
    z, omega : ndarray of shape (n,)
        Pseudo-data target (offset removed) and precision of every row (bart-math 1).
    omega_const : float
        The common value of ``omega`` when all rows have the same precision, else 0 (then
        ``omega`` is read row by row).
    fsum : ndarray of shape (n,)
        Sum of all trees at the training rows on entry; on return, ``offset`` plus the new
        trees' values summed in tree order, the numbers :func:`forest_values` gives (each
        tree is added in the pass of the next one, which reads its leaf and value anyway;
        with equal precisions two trees at a time, in every other pass).
    counts : ndarray of shape (m, capacity)
        With equal precisions (``omega_const > 0``): every leaf's number of rows on entry
        (:func:`leaf_counts`), kept up to date by the sweep, so that the pass over the rows
        sums the residuals only.  Not read otherwise (then the pass sums the precisions too).
    proposed, accepted : ndarray of shape (4,), dtype int64
        Incremented per move type (impossible moves are not counted as proposed).
    offset : float
        Added to the trees' sum returned in ``fsum``.
    exact_values : bool, default True
        With equal precisions, False returns ``fsum`` as ``offset + (z - r)`` from the
        residual ``r`` the sweep keeps against all trees, which equals the trees' sum up to
        rounding, instead of adding every tree to the values in its pass (a sixth of a
        grow/prune sweep at a million rows).  Ignored with unequal precisions.
    """
    Xb, XbT, ncuts, iscat, split_prior = data
    min_leaf, alpha, beta, prec0 = rules
    (var, cut, left, right, parent, depth, value, wavail, ncut, amask, n_nodes, free, n_free,
     leaf_of_row) = forest
    (r, idx, hist, lo, hi, W, S, nW, nS, nwav, nnc, seg_s, seg_e, stack, in_sub, tmp,
     nmask) = scratch
    m, n = leaf_of_row.shape
    pg = move_cp[0]
    pp = move_cp[1] - move_cp[0]
    K = W.shape[0]
    acc = np.zeros(8 * K)
    sel = np.zeros(K)  # 1 at the nodes whose rows the pass sums for the proposal
    sums = np.zeros(4)
    zero_k = np.zeros(K)
    n4 = n - (n & 3)
    # r: the residual against every tree but the one being updated
    for i in range(n):
        r[i] = z[i] - fsum[i]
        fsum[i] = offset  # from here on, the trees' values added in tree order
    for t in range(m):
        # The move and the part of its proposal that the tree alone decides come first (the
        # pass draws no random numbers, so they are drawn in the same order as after it): a
        # grow, or a change at a node above two leaves, with a numeric rule has its proposed
        # children's sums taken by the pass itself, with equal precisions.
        u = rng.random()
        move = GROW
        while move < SWAP and u >= move_cp[move]:
            move += 1
        fused = False
        a = b = chosen = -1
        v = c = nc = nb = w_new = 0
        if move == GROW:
            chosen, nb, w_new, v, c, nc = _grow_proposal(rng, t, split_prior, var, left, right,
                                                         parent, wavail, amask, n_nodes, lo, hi)
            fused = omega_const > 0.0 and chosen >= 0 and lo[v] >= 0
            a = b = chosen
        elif move != PRUNE:
            chosen, v, c = _change_proposal(rng, move == SWAP, t, split_prior, var, left, right,
                                            parent, wavail, amask, n_nodes, lo, hi)
            fused = (omega_const > 0.0 and move == CHANGE
                     and _fusable_change(t, chosen, v, lo, var, left, right))
            if fused:
                a = left[t, chosen]
                b = right[t, chosen]
        nl = sl = 0.0
        # one pass: take tree t - 1 (drawn last) out of the residual and put tree t back, and
        # sum (W, S) per leaf in four interleaved partial sums (rows i mod 4), so that
        # consecutive rows in the same leaf do not wait on each other's additions; with equal
        # row precisions (omega_const > 0) W is that precision times the leaf's row count,
        # which ``counts`` holds
        nk = n_nodes[t]
        for j in range(4):
            for k in range(nk):
                acc[2 * j * K + k] = 0.0
                acc[(2 * j + 1) * K + k] = 0.0
        tp = t - 1 if t > 0 else m - 1
        back = 1.0 if t > 0 else 0.0
        # tree tp's values as the plain passes subtract them: a zero row at the first tree (no
        # multiplication by ``back`` a row: 0.153 against 0.164 s for 198 passes at 1e6 rows)
        vp = value[tp] if t > 0 else zero_k
        if omega_const > 0.0 and fused:
            sel[a] = 1.0
            sel[b] = 1.0
            nl, sl = _pass_left_sums(t, tp, vp, leaf_of_row, value, r, acc, K, sel, XbT, v, c)
            sel[a] = 0.0
            sel[b] = 0.0
            if exact_values and t >= 2 and t % 2 == 0:
                _values_two(t - 2, tp, leaf_of_row, value, fsum)
            for k in range(nk):
                W[k] = omega_const * counts[t, k] if var[t, k] == LEAF else 0.0
                S[k] = omega_const * ((acc[k] + acc[K + k]) + (acc[2 * K + k] + acc[3 * K + k]))
        elif omega_const > 0.0:
            if exact_values and t >= 2 and t % 2 == 0:
                # trees t - 2 and t - 1 (final) enter the values together: the same additions in
                # the same order, one load and store of a row's value per two trees
                _pass_pair(t, tp, t - 2, leaf_of_row, value, r, fsum, acc, K)
            else:
                # tree t - 1 out of the residual only; it enters the values with tree t at t + 1
                _pass_one(t, tp, vp, leaf_of_row, value, r, acc, K)
            for k in range(nk):
                W[k] = omega_const * counts[t, k] if var[t, k] == LEAF else 0.0
                S[k] = omega_const * ((acc[k] + acc[K + k]) + (acc[2 * K + k] + acc[3 * K + k]))
        else:
            for i0 in range(0, n4, 4):
                for j in range(4):
                    i = i0 + j
                    k = leaf_of_row[t, i]
                    vb = back * value[tp, leaf_of_row[tp, i]]  # tree t - 1, final
                    ri = r[i] + value[t, k] - vb
                    r[i] = ri
                    fsum[i] += vb
                    acc[2 * j * K + k] += omega[i]
                    acc[(2 * j + 1) * K + k] += omega[i] * ri
            for i in range(n4, n):
                k = leaf_of_row[t, i]
                vb = back * value[tp, leaf_of_row[tp, i]]
                ri = r[i] + value[t, k] - vb
                r[i] = ri
                fsum[i] += vb
                acc[k] += omega[i]
                acc[K + k] += omega[i] * ri
            for k in range(nk):
                W[k] = (acc[k] + acc[2 * K + k]) + (acc[4 * K + k] + acc[6 * K + k])
                S[k] = (acc[K + k] + acc[3 * K + k]) + (acc[5 * K + k] + acc[7 * K + k])
        if move == GROW:
            res = _grow(rng, t, chosen, nb, w_new, v, c, nc, fused, nl, sl, counts, Xb, XbT,
                        ncuts, iscat, min_leaf, split_prior, alpha, beta, prec0, pg, pp, var, cut,
                        left, right, parent, depth, wavail, ncut, n_nodes, free, n_free,
                        leaf_of_row, r, omega, omega_const, idx, hist, lo, hi, W, S, amask, nmask,
                        tmp, sums)
        elif move == PRUNE:
            res = _prune(rng, t, alpha, beta, prec0, pg, pp, var, left, right, parent, depth,
                         wavail, free, n_free, n_nodes, leaf_of_row, W, S)
        else:
            res = _change_or_swap(rng, move == SWAP, t, chosen, v, c, fused, nl, sl, counts, Xb,
                                  XbT, ncuts, iscat, min_leaf, split_prior, alpha, beta, prec0,
                                  var, cut, left, right, parent, depth, wavail, ncut, n_nodes,
                                  leaf_of_row, r, omega, omega_const, idx, hist, lo, hi, W, S,
                                  nW, nS, nwav, nnc, seg_s, seg_e, stack, in_sub, amask, nmask,
                                  tmp, sums)
        if res >= 0:
            proposed[move] += 1
            accepted[move] += res
        if omega_const > 0.0:
            # every leaf's W after the move is omega_const times its count, up to rounding
            for k in range(n_nodes[t]):
                if var[t, k] == LEAF:
                    counts[t, k] = np.round(W[k] / omega_const)
        draw_leaf_values(rng, t, var, value, n_nodes, W, S, prec0)
    # the last tree out of the residual, and into the values with any tree still waiting
    # (with equal precisions and m even, tree m - 2)
    if omega_const > 0.0 and not exact_values:
        # the values from the residual against every tree: z minus it is the trees' sum
        for i in range(n):
            r[i] -= value[m - 1, leaf_of_row[m - 1, i]]
            fsum[i] = offset + (z[i] - r[i])
    elif omega_const > 0.0 and m >= 2 and m % 2 == 0:
        for i in range(n):
            vb = value[m - 1, leaf_of_row[m - 1, i]]
            r[i] -= vb
            fsum[i] = (fsum[i] + value[m - 2, leaf_of_row[m - 2, i]]) + vb
    else:
        for i in range(n):
            vb = value[m - 1, leaf_of_row[m - 1, i]]
            r[i] -= vb
            fsum[i] += vb


@numba.njit(cache=True)
def leaf_counts(leaf_of_row, counts):
    """``counts[t, k]`` = the number of rows in node k of tree t (0 for internal nodes)."""
    m, n = leaf_of_row.shape
    for t in range(m):
        for k in range(counts.shape[1]):
            counts[t, k] = 0.0
        for i in range(n):
            counts[t, leaf_of_row[t, i]] += 1.0


@numba.njit(cache=True)
def forest_summary(var, depth, n_nodes):
    """Mean over trees of the depth (deepest leaf) and of the number of leaves."""
    m = var.shape[0]
    tot_d = 0.0
    tot_l = 0.0
    for t in range(m):
        dmax = 0
        nl = 0
        for k in range(n_nodes[t]):
            if var[t, k] == LEAF:
                nl += 1
                if depth[t, k] > dmax:
                    dmax = depth[t, k]
        tot_d += dmax
        tot_l += nl
    return tot_d / m, tot_l / m
