"""Chipman-George-McCulloch Metropolis moves and the Bayesian backfitting sweep
(docs/math.md section 5).

Leaf values are integrated out of every acceptance ratio, which therefore only needs the
per-leaf sufficient statistics ``(W, S)``; after the structural move the leaves of the tree are
drawn from their exact conditional.

The tree-editing helpers are in :mod:`pymc_trees.bart.kernels.tree_edit`, the passes over the
rows and the leaves' sums in :mod:`pymc_trees.bart.kernels.row_sums`, the bundles the kernels
take in :mod:`pymc_trees.bart.kernels.bundles`."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.bundles import PseudoRows
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.nodes import draw_leaf_values, draw_levels, log_ml, log_psplit
from pymc_trees.bart.kernels.conjugate_moves import (children_score, children_sums, fused_change,
                                                     fused_change_score, grow, grow_proposal,
                                                     leaf_form_is, leaf_score, leaf_sums,
                                                     merged_score, merged_sums, partitioned_rows,
                                                     prune, restructure, restructure_proposal,
                                                     set_children, set_merged, subtree_score)
from pymc_trees.bart.kernels.row_passes import pass_left_sums, pass_one, pass_pair, values_two
from pymc_trees.bart.kernels.row_sums import split_sums, subtree_sums
from pymc_trees.bart.kernels.moves import CHANGE, GROW, PRUNE, SWAP, draw_move
from pymc_trees.bart.kernels.tree_edit import above_leaves, leaf_rows, partition_rows

__all__ = ["ConstantLeaves", "cgm_sweep", "forest_summary"]


class ConstantLeaves(NamedTuple):
    """The constant leaves' form of the conjugate moves
    (:mod:`~pymc_trees.bart.kernels.conjugate_moves`): every leaf's ``(W, S)`` (shape (K,)),
    the sums of its rows' precisions and precision-weighted residuals, and what taking them
    needs: ``prec0`` the leaf prior's precision, ``r`` and ``omega`` (n,) the residual and the
    row precisions, ``omega_const`` their common value (0: unequal), ``counts`` (m, K) the
    leaves' row counts (equal precisions), ``sums`` (4,) scratch, and ``fusion`` (3,), written
    by the sweep before each move: ``(1, nl, sl)`` when the pass over the rows summed the
    grow's left child already (``nl`` rows, residual sum ``sl``), else ``(0, ., .)``; and the
    arrays of the rows the hooks read: ``Xb``, ``XbT``, ``leaf_of_row``, and the sweep's
    ``idx``, ``lo``, ``tmp``.  Built once a sweep."""

    W: np.ndarray
    S: np.ndarray
    prec0: float
    r: np.ndarray
    omega: np.ndarray
    omega_const: float
    counts: np.ndarray
    sums: np.ndarray
    fusion: np.ndarray
    Xb: np.ndarray
    XbT: np.ndarray
    leaf_of_row: np.ndarray
    idx: np.ndarray
    lo: np.ndarray
    tmp: np.ndarray


def _constant(leaves) -> bool:
    return leaf_form_is(leaves, ConstantLeaves)


@overload(leaf_score)
def _leaf_score(leaves, k):
    if not _constant(leaves):
        return None

    def impl(leaves, k):
        return log_ml(leaves.W[k], leaves.S[k], leaves.prec0)
    return impl


@overload(children_sums)
def _children_sums(leaves, rng, t, ell, v, c, min_leaf):
    """With ``fused``, the children's sums from the pass (the rows are collected only once
    the bound accepts); otherwise the leaf's rows collected and summed by the rule without
    moving them (:func:`split_sums`)."""
    if not _constant(leaves):
        return None

    def impl(leaves, rng, t, ell, v, c, min_leaf):
        oc, S = leaves.omega_const, leaves.S
        fusion = leaves.fusion
        if fusion[0] != 0.0:
            cnt = int(leaves.counts[t, ell])
            WL = oc * fusion[1]
            SL = oc * fusion[2]
            return (WL, SL, oc * (cnt - fusion[1]), S[ell] - SL), cnt, -1, c
        idx, lo = leaves.idx, leaves.lo
        cnt = leaf_rows(t, ell, leaves.leaf_of_row, idx)
        rule = c
        if lo[v] < 0:
            rule = draw_levels(rng, lo, v, leaves.Xb, idx, 0, cnt, min_leaf)
        sums = leaves.sums
        split_sums(leaves.XbT, v, rule, idx, cnt, leaves.r, leaves.omega, oc, sums, S[ell])
        return (sums[0], sums[1], sums[2], sums[3]), cnt, -1, rule
    return impl


@overload(children_score)
def _children_score(leaves, ch):
    if not _constant(leaves):
        return None

    def impl(leaves, ch):
        return log_ml(ch[0], ch[1], leaves.prec0) + log_ml(ch[2], ch[3], leaves.prec0)
    return impl


@overload(partitioned_rows)
def _partitioned_rows(leaves, t, ell, cnt, mid, v, c):
    if not _constant(leaves):
        return None

    def impl(leaves, t, ell, cnt, mid, v, c):
        idx = leaves.idx
        rows = cnt
        if leaves.fusion[0] != 0.0:
            rows = leaf_rows(t, ell, leaves.leaf_of_row, idx)
        return rows, partition_rows(leaves.XbT, idx, 0, rows, v, c, leaves.tmp)
    return impl


@overload(set_children)
def _set_children(leaves, t, ell, kl, kr, ch):
    if not _constant(leaves):
        return None

    def impl(leaves, t, ell, kl, kr, ch):
        W, S = leaves.W, leaves.S
        W[kl] = ch[0]
        S[kl] = ch[1]
        W[kr] = ch[2]
        S[kr] = ch[3]
    return impl


@overload(merged_sums)
def _merged_sums(leaves, t, eta, kl, kr, pv):
    if not _constant(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, pv):
        return (
            leaves.W[kl] + leaves.W[kr], leaves.S[kl] + leaves.S[kr])
    return impl


@overload(merged_score)
def _merged_score(leaves, mg):
    if not _constant(leaves):
        return None

    def impl(leaves, mg):
        return log_ml(mg[0], mg[1], leaves.prec0)
    return impl


@overload(set_merged)
def _set_merged(leaves, t, eta, kl, kr, mg):
    """The merged leaf's rows relabelled in one pass over all rows (the two leaves' rows
    are not collected: the prune needs only their kept sums)."""
    if not _constant(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, mg):
        leaf_of_row = leaves.leaf_of_row
        for i in range(leaf_of_row.shape[1]):
            lf = leaf_of_row[t, i]
            leaf_of_row[t, i] = eta if (lf == kl) | (lf == kr) else lf
        leaves.W[eta] = mg[0]
        leaves.S[eta] = mg[1]
    return impl


@numba.njit(cache=True, inline="always")
def _fusable_change(t, chosen, v_new, lo, var, left, right):
    """Whether the pass over the rows can sum a change's proposal itself: a node above two
    leaves and a numeric rule (a categorical one needs the node's levels first)."""
    return chosen >= 0 and above_leaves(t, chosen, var, left, right) and lo[v_new] >= 0


@overload(subtree_score)
def _subtree_score(leaves, t, root, cnt, data, rules, forest, scratch):
    if not _constant(leaves):
        return None

    def impl(leaves, t, root, cnt, data, rules, forest, scratch):
        return (subtree_sums(t, root, cnt, data, rules, forest, scratch, leaves.omega,
                             leaves.omega_const, leaves.sums), False)
    return impl


@overload(fused_change)
def _fused_change(leaves):
    if not _constant(leaves):
        return None

    def impl(leaves):
        return leaves.fusion[0] != 0.0
    return impl


@overload(fused_change_score)
def _fused_change_score(leaves, t, root, kl, kr, rules, forest, scratch):
    """A change at a node above two leaves whose new leaves the pass summed (equal
    precisions: ``nl`` rows and residual sum ``sl`` to the left, in ``leaves.fusion``): the
    bound :func:`subtree_sums` gives there, from the leaves' row counts and sums."""
    if not _constant(leaves):
        return None

    def impl(leaves, t, root, kl, kr, rules, forest, scratch):
        nW, nS, S, oc = scratch.nW, scratch.nS, leaves.S, leaves.omega_const
        nl, sl = leaves.fusion[1], leaves.fusion[2]
        cnt = int(leaves.counts[t, kl] + leaves.counts[t, kr])
        nW[kl] = oc * nl
        nS[kl] = oc * sl
        nW[kr] = oc * (cnt - nl)
        nS[kr] = (S[kl] + S[kr]) - nS[kl]
        return (log_psplit(forest.depth[t, root], rules.alpha, rules.beta)
                + log_ml(nW[kl], nS[kl], rules.prec0) + log_ml(nW[kr], nS[kr], rules.prec0))
    return impl


@overload(leaf_sums)
def _leaf_sums(leaves):
    if not _constant(leaves):
        return None

    def impl(leaves):
        return leaves.W, leaves.S
    return impl


@numba.njit(cache=True)
def cgm_sweep(rng, data, rules, move_cp, rows, fsum, forest, scratch, counts, tally,
              exact_values, sweeps):
    """``sweeps`` Bayesian-backfitting sweeps over all trees (:func:`cgm_one_sweep`), against
    the same pseudo-data ``rows`` (a :class:`PseudoRows`): the trees' sum passes from one to
    the next in ``fsum`` without the offset, which only the last adds.  ``tally`` (shape (2, 4), int64) receives the moves
    proposed (row 0) and accepted (row 1) per move type, over all the sweeps.  The other
    parameters are :func:`cgm_one_sweep`'s; one sweep is the same call with the same random
    numbers."""
    between = PseudoRows(rows.z, rows.omega, rows.omega_const, 0.0)
    for s in range(sweeps):
        cgm_one_sweep(rng, data, rules, move_cp, rows if s == sweeps - 1 else between, fsum,
                      forest, scratch, counts, tally, exact_values)


@numba.njit(cache=True)
def cgm_one_sweep(rng, data, rules, move_cp, rows, fsum, forest, scratch, counts, tally,
                  exact_values):
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
    rows : PseudoRows
        ``z``, ``omega`` (shape (n,)): pseudo-data target (offset removed) and precision of
        every row (docs/math.md section 1); ``omega_const``: the common value of ``omega``
        when all rows have the same precision, else 0 (then ``omega`` is read row by row);
        ``offset``: added to the trees' sum returned in ``fsum``.
    fsum : ndarray of shape (n,)
        Sum of all trees at the training rows on entry; on return, ``offset`` plus the new
        trees' values summed in tree order, the numbers :func:`forest_values` gives (each
        tree is added in the pass of the next one, which reads its leaf and value anyway;
        with equal precisions two trees at a time, in every other pass).
    counts : ndarray of shape (m, capacity)
        With equal precisions (``omega_const > 0``): every leaf's number of rows on entry
        (:func:`leaf_counts`), kept up to date by the sweep, so that the pass over the rows
        sums the residuals only.  Not read otherwise (then the pass sums the precisions too).
    tally : ndarray of shape (2, 4), dtype int64
        Moves proposed (row 0) and accepted (row 1), incremented per move type (impossible
        moves are not counted as proposed).
    exact_values : bool
        With equal precisions, False returns ``fsum`` as ``offset + (z - r)`` from the
        residual ``r`` the sweep keeps against all trees, which equals the trees' sum up to
        rounding, instead of adding every tree to the values in its pass (a sixth of a
        grow/prune sweep at a million rows).  Ignored with unequal precisions.
    """
    Xb, XbT, ncuts, iscat, split_prior = data
    min_leaf, alpha, beta, prec0 = rules
    z, omega, omega_const, offset = rows
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
    fusion = np.zeros(3)  # the pass's fusion for the grow: (fused, nl, sl)
    leaves = ConstantLeaves(W, S, prec0, r, omega, omega_const, counts, sums, fusion, Xb, XbT,
                            leaf_of_row, idx, lo, tmp)
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
        move = draw_move(u, move_cp)
        fused = False
        a = b = chosen = -1
        v = c = nc = nb = w_new = 0
        if move == GROW:
            chosen, nb, w_new, v, c, nc = grow_proposal(rng, t, split_prior, forest, lo, hi)
            fused = omega_const > 0.0 and chosen >= 0 and lo[v] >= 0
            a = b = chosen
        elif move != PRUNE:
            chosen, v, c = restructure_proposal(rng, move == SWAP, t, split_prior, forest, lo,
                                                hi)
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
            nl, sl = pass_left_sums(t, tp, vp, leaf_of_row, value, r, acc, K, sel, XbT, v, c)
            sel[a] = 0.0
            sel[b] = 0.0
            if exact_values and t >= 2 and t % 2 == 0:
                values_two(t - 2, tp, leaf_of_row, value, fsum)
            for k in range(nk):
                W[k] = omega_const * counts[t, k] if var[t, k] == LEAF else 0.0
                S[k] = omega_const * ((acc[k] + acc[K + k]) + (acc[2 * K + k] + acc[3 * K + k]))
        elif omega_const > 0.0:
            if exact_values and t >= 2 and t % 2 == 0:
                # trees t - 2 and t - 1 (final) enter the values together: the same additions in
                # the same order, one load and store of a row's value per two trees
                pass_pair(t, tp, t - 2, leaf_of_row, value, r, fsum, acc, K)
            else:
                # tree t - 1 out of the residual only; it enters the values with tree t at t + 1
                pass_one(t, tp, vp, leaf_of_row, value, r, acc, K)
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
        fusion[0] = 1.0 if fused else 0.0
        fusion[1] = nl
        fusion[2] = sl
        if move == GROW:
            res = grow(rng, t, (chosen, nb, w_new, v, c, nc), leaves, data, rules, pg, pp,
                       forest, scratch)
        elif move == PRUNE:
            res = prune(rng, t, leaves, rules, pg, pp, forest, scratch)
        else:
            res = restructure(rng, move == SWAP, t, (chosen, v, c), leaves, data, rules, forest,
                              scratch)
        if res >= 0:
            tally[0, move] += 1
            tally[1, move] += res
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

