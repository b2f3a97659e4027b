"""Linear leaves (``BARTTree(..., response="linear")``): a straight line in every leaf
instead of a constant, its leaf algebra, values and priors, and the leaf form of the
conjugate grow and prune (:class:`LinearLeaves`); the sweep (grow, prune, and change at a
node whose children are leaves) is :mod:`pymc_trees.bart.kernels.linear_sweep`.

A leaf whose parent splits on a non-categorical column ``j`` holds ``b0 + b1 * z_j(x)``, with
``z_j`` the column standardised on the training rows (missing values at 0, the mean); the
root of a single-leaf tree, and a leaf under a categorical split, hold a constant ``b0``
(pymc-bart's ``response="linear"``: the regressor is the variable of the split above the
leaf).  Priors, independent across leaves, with ``s`` the term's leaf sd::

    constant leaf: b0 ~ Normal(0, s^2)
    linear leaf:   b0, b1 ~ Normal(0, s^2 / 2) independently

so that at a training row, where ``z_j^2`` averages 1, a leaf's value has prior variance
``s^2`` either way (the calibration of the constant leaves).  The coefficients are
integrated out of every acceptance ratio: with per-leaf sums over its rows of ``omega``,
``omega z``, ``omega z^2``, ``omega r`` and ``omega z r`` (W, Wz, Wzz, S, Sz), the
posterior precision is ``A = [[W + p, Wz], [Wz, Wzz + p]]`` (``p = 2 / s^2``) and the
log marginal likelihood, up to the partition-free bracket of docs/math.md section 2, is
``log p - 0.5 log det A + 0.5 b' A^-1 b`` with ``b = (S, Sz)``.  After the move every leaf
is drawn from ``Normal(A^-1 b, A^-1)``.  ``docs/explanation/linear-leaves.md``, "Linear leaves".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.conjugate_moves import (children_score, children_sums,
                                                     leaf_form_is, leaf_score, merged_score,
                                                     merged_sums, partitioned_rows,
                                                     set_children, set_merged)
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.nodes import draw_levels
from pymc_trees.bart.kernels.tree_edit import leaf_rows, pair_rows, partition_rows

__all__ = ["standardize_columns", "leaf_regressors", "linear_log_ml", "linear_tree_values",
           "linear_values", "linear_leaf_stats", "row_value", "rows_sums", "linear_prior_leaves",
           "linear_level_shift_sums", "pack_linear_leaves", "draw_linear_leaf", "LinearRows",
           "LinearSums", "LinearLeaves"]


def standardize_columns(X: np.ndarray, categorical: np.ndarray) -> tuple:
    """The leaf regressors of the columns of X, feature-major: ``Z`` of shape (p, n) with
    ``Z[j] = (X[:, j] - center[j]) / scale[j]`` (0 where X is missing, and in categorical
    columns), ``center`` the mean of the column's values and ``scale`` their sd (1 for a
    constant or empty column).  Feature-major because a pass over the rows reads one column
    per leaf: the rows of a leaf read consecutive numbers, not one cache line a row."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    center = np.zeros(p)
    scale = np.ones(p)
    Z = np.zeros((p, n))
    for j in range(p):
        if categorical[j]:
            continue
        col = X[:, j]
        ok = ~np.isnan(col)
        if ok.any():
            center[j] = col[ok].mean()
            sd = col[ok].std()
            scale[j] = sd if sd > 0 else 1.0
        Z[j, ok] = (col[ok] - center[j]) / scale[j]
    return Z, center, scale


@numba.njit(cache=True)
def leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg):
    """``reg[k]`` for every slot of tree t: the column of leaf k's slope, the column of its
    parent's split feature (``regcol[v]``, -1 for a categorical feature), or -1 (the root,
    internal and free slots, and every slot of a constant tree: ``lin[t] == 0``)."""
    for k in range(n_nodes[t]):
        reg[k] = -1
        if lin[t] and var[t, k] == LEAF:
            par = parent[t, k]
            if par >= 0:
                reg[k] = regcol[var[t, par]]


@numba.njit(cache=True, inline="always")
def linear_log_ml(W, Wz, Wzz, S, Sz, has_slope, prec0):
    """A leaf's log marginal likelihood up to the bracket of docs/math.md section 2 (module doc)."""
    if not has_slope:
        P = W + prec0
        return 0.5 * math.log(prec0 / P) + 0.5 * S * S / P
    p = 2.0 * prec0
    a = W + p
    d = Wzz + p
    det = a * d - Wz * Wz
    quad = (d * S * S - 2.0 * Wz * S * Sz + a * Sz * Sz) / det
    return math.log(p) - 0.5 * math.log(det) + 0.5 * quad


@numba.njit(cache=True, inline="always")
def draw_linear_leaf(rng, W, Wz, Wzz, S, Sz, has_slope, prec0):
    """``(b0, b1)`` from the leaf's conditional (``b1 = 0`` without a slope)."""
    if not has_slope:
        P = W + prec0
        return S / P + rng.standard_normal() / math.sqrt(P), 0.0
    p = 2.0 * prec0
    a = W + p
    d = Wzz + p
    det = a * d - Wz * Wz
    m0 = (d * S - Wz * Sz) / det
    m1 = (a * Sz - Wz * S) / det
    # A = L L', the draw m + L'^-1 e has covariance A^-1
    l11 = math.sqrt(a)
    l21 = Wz / l11
    l22 = math.sqrt(max(d - l21 * l21, 1e-300))
    e0 = rng.standard_normal()
    e1 = rng.standard_normal()
    x1 = e1 / l22
    x0 = (e0 - l21 * x1) / l11
    return m0 + x0, m1 + x1


@numba.njit(cache=True, inline="always")
def row_value(t, k, i, value, slope, reg, Z):
    """Tree t at training row i, in leaf k (``reg``: the tree's leaf regressors)."""
    j = reg[k]
    if j >= 0:
        return value[t, k] + slope[t, k] * Z[j, i]
    return value[t, k]


@numba.njit(cache=True)
def linear_tree_values(t, var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z, reg,
                       out):
    """``out[i] +=`` tree t at training row i (``reg``: scratch of the node axis)."""
    leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
    for i in range(leaf_of_row.shape[1]):
        out[i] += row_value(t, leaf_of_row[t, i], i, value, slope, reg, Z)


@numba.njit(cache=True)
def linear_values(var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z, offset, out):
    """The sum of the trees at the training rows plus ``offset``, tree by tree."""
    reg = np.empty(var.shape[1], np.int64)
    out[:] = offset
    for t in range(var.shape[0]):
        linear_tree_values(t, var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z,
                           reg, out)


@numba.njit(cache=True)
def _small_tree_values(t, var, n_nodes, value, slope, lt, reg, columns, out):
    """:func:`linear_values_as_packed`'s step for tree t when it has at most two leaves (then
    returns True): a row's leaf is one of two, read as a choice between two values and two
    slopes instead of a lookup by leaf, which the compiler runs on vector registers; each
    row's arithmetic is the same, so the values are the same to the bit."""
    a = -1
    b = -1
    for k in range(n_nodes[t]):
        if var[t, k] == LEAF:
            if a < 0:
                a = k
            elif b < 0:
                b = k
            else:
                return False
    if b < 0:
        b = a
    va = value[t, a]
    vb = value[t, b]
    for i in range(lt.shape[0]):
        out[i] += va if lt[i] == a else vb
    j = reg[a]  # both leaves of a stump have the root's column
    if j >= 0:
        X, center, scale = columns
        sa = slope[t, a] / scale[j]
        sb = slope[t, b] / scale[j]
        c = center[j]
        for i in range(lt.shape[0]):
            x = X[i, j]
            if x == x:
                out[i] += (sa if lt[i] == a else sb) * (x - c)
    return True


@numba.njit(cache=True)
def linear_values_as_packed(var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin,
                            columns, offset, out):
    """:func:`linear_values` in the arithmetic of the packed forest's prediction
    (:func:`pymc_trees.core.packed.predict_packed`): per tree, the leaf's value, then its
    slope per unit of column j (``slope / scale[j]``) times ``x - center[j]`` where x is not
    missing, with ``columns = (X, center, scale)`` the raw columns (n, q) and their
    standardisation; so that ``pmt.predict`` at the training rows equals these values to
    the bit."""
    X, center, scale = columns
    K = var.shape[1]
    reg = np.empty(K, np.int64)
    per_unit = np.empty(K)  # a leaf's slope per unit of its column, and the column's centre
    centre = np.empty(K)
    out[:] = offset
    for t in range(var.shape[0]):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        if _small_tree_values(t, var, n_nodes, value, slope, leaf_of_row[t], reg, columns,
                              out):
            continue
        for k in range(n_nodes[t]):
            j = reg[k] if lin[t] else -1
            reg[k] = j
            if j >= 0:
                per_unit[k] = slope[t, k] / scale[j]
                centre[k] = center[j]
        # one loop: the leaf's value, then its slope's term (the same two additions a row)
        lt = leaf_of_row[t]
        for i in range(lt.shape[0]):
            k = lt[i]
            o = out[i] + value[t, k]
            j = reg[k]
            if j >= 0:
                x = X[i, j]
                if x == x:
                    o += per_unit[k] * (x - centre[k])
            out[i] = o


@numba.njit(cache=True)
def rows_sums(idx, start, end, j, Z, r, omega):
    """``(W, Wz, Wzz, S, Sz)`` of the rows ``idx[start:end]`` with regressor column j (-1:
    none), each summed in the order of ``idx``."""
    W = 0.0
    Wz = 0.0
    Wzz = 0.0
    S = 0.0
    Sz = 0.0
    for q in range(start, end):
        i = idx[q]
        w = omega[i]
        wr = w * r[i]
        W += w
        S += wr
        if j >= 0:
            z = Z[j, i]
            Wz += w * z
            Wzz += w * z * z
            Sz += wr * z
    return W, Wz, Wzz, S, Sz


class LinearSums(NamedTuple):
    """The per-leaf sums of a tree with linear leaves, over the node axis (shape (K,)):
    ``W``, ``Wz``, ``Wzz``, ``S``, ``Sz`` (module doc) and ``reg``, the leaf's regressor
    column (-1: a constant leaf)."""

    W: np.ndarray
    Wz: np.ndarray
    Wzz: np.ndarray
    S: np.ndarray
    Sz: np.ndarray
    reg: np.ndarray


class LinearRows(NamedTuple):
    """The leaf regressors as the linear moves read them: ``regcol`` (q,), the column of the
    slope under a split on sampler feature v (-1: none), and ``Z`` (p, n), the standardised
    columns, feature-major (:func:`standardize_columns`)."""

    regcol: np.ndarray
    Z: np.ndarray


class LinearLeaves(NamedTuple):
    """The linear leaves' form of the conjugate moves
    (:mod:`~pymc_trees.bart.kernels.conjugate_moves`): the tree's :class:`LinearSums`, the
    :class:`LinearRows`, the residual ``r`` and row precisions ``omega`` (n,), whether tree
    t's leaves are linear (``active``), the leaf prior's precision ``prec0``, and the arrays
    of the rows the hooks read (``Xb``, ``XbT``, ``leaf_of_row``, the sweep's ``idx``,
    ``lo``, ``tmp``), and ``fusion`` (11,), written by the sweep before each move: ``(1, L,
    R)`` when its pass over the rows summed the proposal's new leaves already (a grow's or a
    change's children under a numeric rule, five sums each; a prune's merged leaf in ``L``),
    else ``(0, ...)``.  A new leaf's regressor is the column of the split above it (-1 under
    a categorical split or in a constant tree), so without the pass's sums a grow and a prune
    sum the new leaves' rows after partitioning them."""

    sums: LinearSums
    lrows: LinearRows
    r: np.ndarray
    omega: np.ndarray
    active: bool
    prec0: float
    Xb: np.ndarray
    XbT: np.ndarray
    leaf_of_row: np.ndarray
    idx: np.ndarray
    lo: np.ndarray
    tmp: np.ndarray
    fusion: np.ndarray


def _linear(leaves) -> bool:
    return leaf_form_is(leaves, LinearLeaves)


@overload(leaf_score)
def _leaf_score(leaves, k):
    if not _linear(leaves):
        return None

    def impl(leaves, k):
        W, Wz, Wzz, S, Sz, reg = leaves.sums
        return linear_log_ml(W[k], Wz[k], Wzz[k], S[k], Sz[k], reg[k] >= 0, leaves.prec0)
    return impl


@overload(children_sums)
def _children_sums(leaves, rng, t, ell, v, c, min_leaf):
    """The leaf's rows partitioned by the rule, then each child's five sums with the
    children's regressor (the column of the new split)."""
    if not _linear(leaves):
        return None

    def impl(leaves, rng, t, ell, v, c, min_leaf):
        regcol, Z = leaves.lrows
        fu = leaves.fusion
        if fu[0] != 0.0:  # the pass summed the children (rows collected once accepted)
            j = regcol[v] if leaves.active else -1
            return ((j, (fu[1], fu[2], fu[3], fu[4], fu[5]),
                     (fu[6], fu[7], fu[8], fu[9], fu[10])), 0, -1, c)
        idx, lo = leaves.idx, leaves.lo
        cnt = leaf_rows(t, ell, leaves.leaf_of_row, idx)
        rule = c
        if lo[v] < 0:
            rule = draw_levels(rng, lo, v, leaves.Xb, idx, 0, cnt, min_leaf)
        mid = partition_rows(leaves.XbT, idx, 0, cnt, v, rule, leaves.tmp)
        j = regcol[v] if leaves.active else -1
        L = rows_sums(idx, 0, mid, j, Z, leaves.r, leaves.omega)
        R = rows_sums(idx, mid, cnt, j, Z, leaves.r, leaves.omega)
        return (j, L, R), cnt, mid, rule
    return impl


@overload(children_score)
def _children_score(leaves, ch):
    if not _linear(leaves):
        return None

    def impl(leaves, ch):
        j, (WL, WzL, WzzL, SL, SzL), (WR, WzR, WzzR, SR, SzR) = ch
        return (linear_log_ml(WL, WzL, WzzL, SL, SzL, j >= 0, leaves.prec0)
                + linear_log_ml(WR, WzR, WzzR, SR, SzR, j >= 0, leaves.prec0))
    return impl


@overload(partitioned_rows)
def _partitioned_rows(leaves, t, ell, cnt, mid, v, c):
    if not _linear(leaves):
        return None

    def impl(leaves, t, ell, cnt, mid, v, c):
        if leaves.fusion[0] != 0.0:
            idx = leaves.idx
            rows = leaf_rows(t, ell, leaves.leaf_of_row, idx)
            return rows, partition_rows(leaves.XbT, idx, 0, rows, v, c, leaves.tmp)
        return (cnt, mid)
    return impl


@overload(set_children)
def _set_children(leaves, t, ell, kl, kr, ch):
    if not _linear(leaves):
        return None

    def impl(leaves, t, ell, kl, kr, ch):
        W, Wz, Wzz, S, Sz, reg = leaves.sums
        j, (WL, WzL, WzzL, SL, SzL), (WR, WzR, WzzR, SR, SzR) = ch
        W[kl], Wz[kl], Wzz[kl], S[kl], Sz[kl] = WL, WzL, WzzL, SL, SzL
        W[kr], Wz[kr], Wzz[kr], S[kr], Sz[kr] = WR, WzR, WzzR, SR, SzR
        reg[ell] = -1
        reg[kl] = j
        reg[kr] = j
    return impl


@overload(merged_sums)
def _merged_sums(leaves, t, eta, kl, kr, pv):
    """The two leaves' rows collected and summed with the merged leaf's regressor (the
    column of the split above the pruned node)."""
    if not _linear(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, pv):
        regcol, Z = leaves.lrows
        j = regcol[pv] if pv >= 0 and leaves.active else -1
        fu = leaves.fusion
        if fu[0] != 0.0:  # the pass summed the merged leaf's rows
            return j, -1, (fu[1], fu[2], fu[3], fu[4], fu[5])
        idx = leaves.idx
        cnt = pair_rows(t, kl, kr, leaves.leaf_of_row, idx)
        return j, cnt, rows_sums(idx, 0, cnt, j, Z, leaves.r, leaves.omega)
    return impl


@overload(merged_score)
def _merged_score(leaves, mg):
    if not _linear(leaves):
        return None

    def impl(leaves, mg):
        j, _, (Wm, Wzm, Wzzm, Sm, Szm) = mg
        return linear_log_ml(Wm, Wzm, Wzzm, Sm, Szm, j >= 0, leaves.prec0)
    return impl


@overload(set_merged)
def _set_merged(leaves, t, eta, kl, kr, mg):
    if not _linear(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, mg):
        W, Wz, Wzz, S, Sz, reg = leaves.sums
        j, cnt, (Wm, Wzm, Wzzm, Sm, Szm) = mg
        idx, leaf_of_row = leaves.idx, leaves.leaf_of_row
        if cnt < 0:  # the rows were not collected: one pass over the tree's rows
            for i in range(leaf_of_row.shape[1]):
                lf = leaf_of_row[t, i]
                leaf_of_row[t, i] = eta if (lf == kl) | (lf == kr) else lf
        for q in range(cnt):
            leaf_of_row[t, idx[q]] = eta
        W[eta], Wz[eta], Wzz[eta], S[eta], Sz[eta] = Wm, Wzm, Wzzm, Sm, Szm
        reg[eta] = j
        reg[kl] = -1
        reg[kr] = -1
    return impl


@numba.njit(cache=True)
def linear_leaf_stats(var, parent, n_nodes, value, slope, regcol, lin):
    """``(L, Q)``: the number of leaf coefficients and the sum of their squares over their
    prior variance in units of the leaf variance (1 for a constant leaf's ``b0``, 1/2 for a
    linear leaf's two), so that the forest's density in the leaf sd ``s`` is
    ``s^-L exp(-Q / (2 s^2))`` up to a constant."""
    L = 0.0
    Q = 0.0
    reg = np.empty(var.shape[1], np.int64)
    for t in range(var.shape[0]):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        for k in range(n_nodes[t]):
            if var[t, k] != LEAF:
                continue
            if reg[k] >= 0:
                L += 2.0
                Q += 2.0 * (value[t, k] ** 2 + slope[t, k] ** 2)
            else:
                L += 1.0
                Q += value[t, k] ** 2
    return L, Q


@numba.njit(cache=True)
def linear_level_shift_sums(var, parent, n_nodes, value, regcol, lin):
    """``(P, B)``: over the leaves, the sum of the prior precisions of ``b0`` in units of the
    leaf precision (1 constant, 2 linear) and the sum of ``b0`` times them."""
    P = 0.0
    B = 0.0
    reg = np.empty(var.shape[1], np.int64)
    for t in range(var.shape[0]):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        for k in range(n_nodes[t]):
            if var[t, k] == LEAF:
                c = 2.0 if reg[k] >= 0 else 1.0
                P += c
                B += c * value[t, k]
    return P, B


@numba.njit(cache=True)
def linear_prior_leaves(rng, var, parent, n_nodes, regcol, lin, leaf_sd, value, slope):
    """Every leaf's coefficients from the prior (a forest drawn with constant leaves; ``lin``
    the trees' kinds)."""
    reg = np.empty(var.shape[1], np.int64)
    for t in range(var.shape[0]):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        for k in range(n_nodes[t]):
            slope[t, k] = 0.0
            if var[t, k] != LEAF:
                continue
            if reg[k] >= 0:
                s = leaf_sd / math.sqrt(2.0)
                value[t, k] = s * rng.standard_normal()
                slope[t, k] = s * rng.standard_normal()
            else:
                value[t, k] = leaf_sd * rng.standard_normal()


@numba.njit(cache=True)
def pack_linear_leaves(var, parent, n_nodes, slope, regcol, lin, scale, center_bits, slot_pos,
                       nodes):
    """Mark the linear leaves of a packed forest (``nodes``, filled by ``pack_forest`` with
    ``slot_pos``): ``feature = -2 - j``, ``threshold`` the slope per unit of column j
    (``slope / scale[j]``) and ``cats`` the bits of its centre (``center_bits[j]``)."""
    for t in range(var.shape[0]):
        if not lin[t]:
            continue
        for k in range(n_nodes[t]):
            if var[t, k] != LEAF:
                continue
            par = parent[t, k]
            if par < 0:
                continue
            j = regcol[var[t, par]]
            if j < 0:
                continue
            o = slot_pos[t, k]
            nodes[o].feature = -2 - j
            nodes[o].threshold = slope[t, k] / scale[j]
            nodes[o].cats = center_bits[j]
