"""Linear leaves (``BARTTree(..., response="linear")``): the backfitting sweep of bart-math 5
(grow, prune, and change at a node whose children are leaves) with a straight line in every
leaf instead of a constant.

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
log marginal likelihood, up to the partition-free bracket of bart-math 2, is
``log p - 0.5 log det A + 0.5 b' A^-1 b`` with ``b = (S, Sz)``.  After the move every leaf
is drawn from ``Normal(A^-1 b, A^-1)``.  ``docs/design.md``, "Linear leaves".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.conjugate_moves import (children_score, children_sums, grow,
                                                     grow_proposal, leaf_form_is, leaf_score,
                                                     merged_score, merged_sums,
                                                     partitioned_rows, prune, set_children,
                                                     set_merged)
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.nodes import draw_levels
from pymc_trees.bart.kernels.tree_edit import (accept_move, children_masks, commit_children,
                                               leaf_rows, pair_children_logr, pair_rows,
                                               partition_rows, pick_pair_rule)

__all__ = ["standardize_columns", "leaf_regressors", "linear_log_ml", "linear_tree_values",
           "linear_values", "linear_sweep", "linear_leaf_stats", "linear_prior_leaves",
           "linear_level_shift_sums", "pack_linear_leaves", "draw_linear_leaf", "LinearRows",
           "LinearSums", "LinearLeaves"]


def standardize_columns(X: np.ndarray, categorical: np.ndarray) -> tuple:
    """The leaf regressors of the columns of X: ``Z`` of shape (n, p) with
    ``Z[:, j] = (X[:, j] - center[j]) / scale[j]`` (0 where X is missing, and in categorical
    columns), ``center`` the mean of the column's values and ``scale`` their sd (1 for a
    constant or empty column)."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    center = np.zeros(p)
    scale = np.ones(p)
    Z = np.zeros((n, p))
    for j in range(p):
        if categorical[j]:
            continue
        col = X[:, j]
        ok = ~np.isnan(col)
        if ok.any():
            center[j] = col[ok].mean()
            sd = col[ok].std()
            scale[j] = sd if sd > 0 else 1.0
        Z[ok, j] = (col[ok] - center[j]) / scale[j]
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
    """A leaf's log marginal likelihood up to the bracket of bart-math 2 (module doc)."""
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
def _row_value(t, k, i, value, slope, reg, Z):
    j = reg[k]
    if j >= 0:
        return value[t, k] + slope[t, k] * Z[i, j]
    return value[t, k]


@numba.njit(cache=True)
def linear_tree_values(t, var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z, reg,
                       out):
    """``out[i] +=`` tree t at training row i (``reg``: scratch of the node axis)."""
    leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
    for i in range(leaf_of_row.shape[1]):
        out[i] += _row_value(t, leaf_of_row[t, i], i, value, slope, reg, Z)


@numba.njit(cache=True)
def linear_values(var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z, offset, out):
    """The sum of the trees at the training rows plus ``offset``, tree by tree."""
    reg = np.empty(var.shape[1], np.int64)
    out[:] = offset
    for t in range(var.shape[0]):
        linear_tree_values(t, var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, Z,
                           reg, out)


@numba.njit(cache=True)
def linear_values_as_packed(var, parent, n_nodes, value, slope, leaf_of_row, regcol, lin, X,
                            center, scale, offset, out):
    """:func:`linear_values` in the arithmetic of the packed forest's prediction
    (:func:`pymc_trees.core.packed.predict_packed`): per tree, the leaf's value, then its
    slope per unit of column j (``slope / scale[j]``) times ``x - center[j]`` where x is not
    missing; so that ``pmt.predict`` at the training rows equals these values to the bit."""
    reg = np.empty(var.shape[1], np.int64)
    out[:] = offset
    for t in range(var.shape[0]):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        for i in range(leaf_of_row.shape[1]):
            out[i] += value[t, leaf_of_row[t, i]]
        if not lin[t]:
            continue
        for i in range(leaf_of_row.shape[1]):
            k = leaf_of_row[t, i]
            j = reg[k]
            if j >= 0:
                x = X[i, j]
                if x == x:
                    out[i] += (slope[t, k] / scale[j]) * (x - center[j])


@numba.njit(cache=True)
def _rows_sums(idx, start, end, j, Z, r, omega):
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
            z = Z[i, j]
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
    slope under a split on sampler feature v (-1: none), and ``Z`` (n, p), the standardised
    columns."""

    regcol: np.ndarray
    Z: np.ndarray


class LinearLeaves(NamedTuple):
    """The linear leaves' form of the conjugate moves
    (:mod:`~pymc_trees.bart.kernels.conjugate_moves`): the tree's :class:`LinearSums`, the
    :class:`LinearRows`, the residual ``r`` and row precisions ``omega`` (n,), whether tree
    t's leaves are linear (``active``), the leaf prior's precision ``prec0``, and the arrays
    of the rows the hooks read (``Xb``, ``XbT``, ``leaf_of_row``, the sweep's ``idx``,
    ``lo``, ``tmp``). A new leaf's regressor is the column of the split above it (-1 under a
    categorical split or in a constant tree), so a grow and a prune sum the new leaves' rows
    after partitioning them."""

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
        idx, lo = leaves.idx, leaves.lo
        cnt = leaf_rows(t, ell, leaves.leaf_of_row, idx)
        rule = c
        if lo[v] < 0:
            rule = draw_levels(rng, lo, v, leaves.Xb, idx, 0, cnt, min_leaf)
        mid = partition_rows(leaves.XbT, idx, 0, cnt, v, rule, leaves.tmp)
        regcol, Z = leaves.lrows
        j = regcol[v] if leaves.active else -1
        L = _rows_sums(idx, 0, mid, j, Z, leaves.r, leaves.omega)
        R = _rows_sums(idx, mid, cnt, j, Z, leaves.r, leaves.omega)
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
        idx = leaves.idx
        cnt = pair_rows(t, kl, kr, leaves.leaf_of_row, idx)
        return j, cnt, _rows_sums(idx, 0, cnt, j, Z, leaves.r, leaves.omega)
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
        for q in range(cnt):
            leaf_of_row[t, idx[q]] = eta
        W[eta], Wz[eta], Wzz[eta], S[eta], Sz[eta] = Wm, Wzm, Wzzm, Sm, Szm
        reg[eta] = j
        reg[kl] = -1
        reg[kr] = -1
    return impl


@numba.njit(cache=True)
def _change(rng, t, data, rules, active, lrows, omega, forest, scratch, sums):
    """A new rule from the prior at a node whose children are both leaves (chosen uniformly
    among such nodes, which the move keeps so; :func:`pick_pair_rule`); the rule's
    probability cancels between prior and proposal, leaving the children's marginal
    likelihoods and their factors ``1 - p_split`` (their availability may change).  -1 when
    impossible, else 1/0."""
    XbT, ncuts, iscat, split_prior = data.XbT, data.ncuts, data.iscat, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    regcol, Z = lrows
    W, Wz, Wzz, S, Sz, reg = sums
    r, idx, hist, lo, hi, nmask = (scratch.r, scratch.idx, scratch.hist, scratch.lo, scratch.hi,
                                   scratch.nmask)
    eta, kl, kr, cnt, v, c, nc, mid = pick_pair_rule(rng, t, data, min_leaf, forest, scratch)
    if eta < 0:
        return -1
    j = regcol[v] if active else -1
    WL, WzL, WzzL, SL, SzL = _rows_sums(idx, 0, mid, j, Z, r, omega)
    WR, WzR, WzzR, SR, SzR = _rows_sums(idx, mid, cnt, j, Z, r, omega)
    wL, wR = children_masks(XbT, idx, mid, cnt, ncuts, iscat, min_leaf, split_prior, hist, lo,
                            hi, nmask)
    logr = (linear_log_ml(WL, WzL, WzzL, SL, SzL, j >= 0, prec0)
            + linear_log_ml(WR, WzR, WzzR, SR, SzR, j >= 0, prec0)
            - linear_log_ml(W[kl], Wz[kl], Wzz[kl], S[kl], Sz[kl], reg[kl] >= 0, prec0)
            - linear_log_ml(W[kr], Wz[kr], Wzz[kr], S[kr], Sz[kr], reg[kr] >= 0, prec0)
            + pair_children_logr(t, eta, kl, kr, wL, wR, alpha, beta, forest))
    if not accept_move(rng, logr):
        return 0
    forest.var[t, eta] = v
    forest.cut[t, eta] = c
    forest.ncut[t, eta] = nc
    commit_children(t, kl, kr, wL, wR, forest.wavail, forest.amask, nmask, forest.leaf_of_row,
                    idx, mid, cnt)
    W[kl], Wz[kl], Wzz[kl], S[kl], Sz[kl] = WL, WzL, WzzL, SL, SzL
    W[kr], Wz[kr], Wzz[kr], S[kr], Sz[kr] = WR, WzR, WzzR, SR, SzR
    reg[kl] = j
    reg[kr] = j
    return 1


@numba.njit(cache=True)
def _draw_kind(rng, t, forest, lrows, lin, one, r, omega, prec0, sums):
    """Tree t's kind (``lin[t]``) from its conditional given the tree (prior 1/2 each, the
    coefficients integrated out); leaves ``reg`` and the sums right for the kind drawn."""
    var, parent = forest.var, forest.parent
    n_nodes, leaf_of_row = forest.n_nodes, forest.leaf_of_row
    regcol, Z = lrows
    W, Wz, Wzz, S, Sz, reg = sums
    # the would-be regressors of a linear tree, and the slope sums with them
    leaf_regressors(0, var[t:t + 1], parent[t:t + 1], n_nodes[t:t + 1], regcol, one, reg)
    nk = n_nodes[t]
    for k in range(nk):
        Wz[k] = 0.0
        Wzz[k] = 0.0
        Sz[k] = 0.0
    for i in range(leaf_of_row.shape[1]):
        k = leaf_of_row[t, i]
        j = reg[k]
        if j >= 0:
            zz = Z[i, j]
            w = omega[i]
            Wz[k] += w * zz
            Wzz[k] += w * zz * zz
            Sz[k] += w * r[i] * zz
    log_odds = 0.0
    for k in range(nk):
        if var[t, k] == LEAF and reg[k] >= 0:
            log_odds += (linear_log_ml(W[k], Wz[k], Wzz[k], S[k], Sz[k], True, prec0)
                         - linear_log_ml(W[k], 0.0, 0.0, S[k], 0.0, False, prec0))
    if log_odds >= 0.0:
        p_lin = 1.0 / (1.0 + math.exp(-log_odds))
    else:
        e = math.exp(log_odds)
        p_lin = e / (1.0 + e)
    lin[t] = 1 if rng.random() < p_lin else 0
    if lin[t] == 0:
        for k in range(nk):
            reg[k] = -1


# move probabilities: grow and prune equal (their ratio cancels), change the rest
P_GROW = 0.3
P_PRUNE = 0.3


@numba.njit(cache=True)
def linear_sweep(rng, data, rules, lrows, lin, mix, z, omega, fsum, forest, slope, scratch,
                 sums, proposed, accepted):
    """One backfitting sweep over all trees with linear leaves: per tree a grow, a prune
    (probability 0.3 each) or a change of the rule of a node whose children are leaves (0.4;
    an impossible move leaves the tree as it is); with ``mix``, the tree's kind from its
    conditional given the tree; then every leaf's coefficients from their conditional.

    Parameters
    ----------
    data, rules, forest, scratch
        As for :func:`~pymc_trees.bart.kernels.cgm.cgm_sweep` (``forest.value`` holds the
        leaves' ``b0``).
    lrows : LinearRows
        ``regcol`` (q,), the column of the slope under a split on sampler feature v (-1:
        categorical, no slope); ``Z`` (n, p), the standardised columns
        (:func:`standardize_columns`).
    lin : uint8 ndarray of shape (m,)
        Whether each tree's leaves are linear (1) or constant (0); updated with ``mix``.
    mix : bool
        ``response="mix"``: each tree's kind is a parameter with prior 1/2 each, drawn after
        the tree's move with its coefficients integrated out
        (``p(linear) / p(constant) = prod_leaves ML_linear / ML_constant``).
    z, omega : float64 ndarray of shape (n,)
        Pseudo-data (offset removed) and row precisions.
    fsum : float64 ndarray of shape (n,)
        The trees' sum at the training rows on entry; their new sum on return.
    slope : float64 ndarray of shape (m, K)
        The leaves' ``b1`` (0 at leaves without a slope), updated.
    sums : float64 ndarray of shape (5, K)
        Scratch for the per-leaf sums.
    proposed, accepted : int64 ndarray of shape (3,)
        Incremented for grow, prune and change.
    """
    prec0 = rules.prec0
    regcol, Z = lrows
    var, parent, value, n_nodes, leaf_of_row = (forest.var, forest.parent, forest.value,
                                                forest.n_nodes, forest.leaf_of_row)
    r = scratch.r
    W, Wz, Wzz, S, Sz = sums[0], sums[1], sums[2], sums[3], sums[4]
    m, n = leaf_of_row.shape
    K = var.shape[1]
    reg = np.empty(K, np.int64)
    reg_prev = np.empty(K, np.int64)
    one = np.ones(1, np.uint8)
    for i in range(n):
        r[i] = z[i] - fsum[i]
    for t in range(m):
        # one pass: take tree t - 1 (drawn last; its regressors in reg_prev) out of the
        # residual, put tree t back, and sum the statistics of tree t's leaves
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        for k in range(n_nodes[t]):
            W[k] = 0.0
            Wz[k] = 0.0
            Wzz[k] = 0.0
            S[k] = 0.0
            Sz[k] = 0.0
        for i in range(n):
            k = leaf_of_row[t, i]
            j = reg[k]
            ri = r[i] + value[t, k]
            zz = 0.0
            if j >= 0:
                zz = Z[i, j]
                ri += slope[t, k] * zz
            if t > 0:
                ri -= _row_value(t - 1, leaf_of_row[t - 1, i], i, value, slope, reg_prev, Z)
            r[i] = ri
            w = omega[i]
            wr = w * ri
            W[k] += w
            S[k] += wr
            if j >= 0:
                Wz[k] += w * zz
                Wzz[k] += w * zz * zz
                Sz[k] += wr * zz
        active = lin[t] != 0
        sums_t = LinearSums(W, Wz, Wzz, S, Sz, reg)
        leaves = LinearLeaves(sums_t, lrows, r, omega, active, prec0, data.Xb, data.XbT,
                              leaf_of_row, scratch.idx, scratch.lo, scratch.tmp)
        u = rng.random()
        if u < P_GROW:
            move = 0
            proposal = grow_proposal(rng, t, data.split_prior, forest, scratch.lo, scratch.hi)
            res = grow(rng, t, proposal, leaves, data, rules, 1.0, 1.0, forest, scratch)
        elif u < P_GROW + P_PRUNE:
            move = 1
            res = prune(rng, t, leaves, rules, 1.0, 1.0, forest, scratch)
        else:
            move = 2
            res = _change(rng, t, data, rules, active, lrows, omega, forest, scratch, sums_t)
        if res >= 0:
            proposed[move] += 1
            accepted[move] += res
        if mix:
            _draw_kind(rng, t, forest, lrows, lin, one, r, omega, prec0, sums_t)
        for k in range(n_nodes[t]):
            if var[t, k] == LEAF:
                b0, b1 = draw_linear_leaf(rng, W[k], Wz[k], Wzz[k], S[k], Sz[k], reg[k] >= 0,
                                          prec0)
                value[t, k] = b0
                slope[t, k] = b1
            else:
                slope[t, k] = 0.0
        reg, reg_prev = reg_prev, reg  # the moves kept reg right for tree t
    for i in range(n):
        r[i] -= _row_value(m - 1, leaf_of_row[m - 1, i], i, value, slope, reg_prev, Z)
        fsum[i] = z[i] - r[i]


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
