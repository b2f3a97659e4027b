"""Multiplicative leaves with a conjugate Gamma prior (log-gamma leaves; Murray 2021,
Pratola et al. 2020): the conjugate sweep for a term that enters its likelihood through
``exp``.

A family in this form has, in its log-scale predictor ``eta_i`` (affine in the term f), a
likelihood ``prod_i exp(kappa s_i eta_i - t_i exp(kappa eta_i))`` up to factors free of f:
a Poisson rate (``s = y``, ``t = exposure``, ``kappa = 1``), a Gamma outcome's rate
(``s = shape``, ``t = y``), a Normal's precision (``s = 1/2``, ``t = (y - mu)^2 / 2``).  Every
leaf value ``mu`` of the term is ``log(phi) / kappa`` with ``phi ~ Gamma(c, rate d)``, so
given the other trees a leaf with rows N has the likelihood ``phi^A exp(-B phi)``,

    A = sum_N s_i,    B = sum_N t_i exp(kappa (eta_i - mu)),

and integrates out in closed form:

    log int phi^A exp(-B phi) Gamma(phi; c, d) dphi
        = lgamma(c + A) - lgamma(c) + c log d - (c + A) log(d + B),

with the conditional ``phi | . ~ Gamma(c + A, rate d + B)``.  So the structure moves see the
leaves through ``(A, B)`` as the Gaussian leaves do through ``(W, S)``: grow, prune, change
and swap are :mod:`~pymc_trees.bart.kernels.conjugate_moves`' with the hooks of
:class:`GammaLeaves` (CGM's move set: any internal node's rule, its subtree routed anew).

The rows carry ``e_i = t_i exp(kappa (eta_i - mu_t(i)))``, the rate against every tree
but the one being updated, kept by multiplying with each leaf's factor ``exp(+-kappa mu)``
(no ``exp`` per row and tree); every sweep starts it afresh from the trees' sum.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.conjugate_moves import (children_score, children_sums, fused_change,
                                                     fused_change_score, grow, grow_proposal,
                                                     leaf_form_is, leaf_score, leaf_sums,
                                                     merged_score, merged_sums, partitioned_rows,
                                                     prune, restructure, restructure_proposal,
                                                     set_children, set_merged, subtree_score)
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.nodes import draw_levels, log_psplit
from pymc_trees.bart.kernels.moves import GROW, PRUNE, SWAP, draw_move
from pymc_trees.bart.kernels.tree_edit import leaf_rows, partition_rows, route_segments
from pymc_trees.bart.kernels.row_blocks import gamma_grow_rows, gamma_pass_blocks, n_blocks

__all__ = ["GammaLeaves", "gamma_log_ml", "gamma_sweep"]

@numba.njit(cache=True, inline="always")
def gamma_log_ml(A, B, c, d):
    """``log int phi^A exp(-B phi) Gamma(phi; c, rate d) dphi`` (module doc)."""
    return math.lgamma(c + A) - math.lgamma(c) + c * math.log(d) - (c + A) * math.log(d + B)


class GammaLeaves(NamedTuple):
    """The log-gamma leaves' form of the conjugate moves: every leaf's ``A`` (sum of its
    rows' shapes) and ``B`` (sum of their rates given the other trees), shape (K,); the
    prior's ``c``, ``d``; the rows' ``s`` and ``e`` (n,); and the arrays the hooks read
    (``Xb``, ``XbT``, ``leaf_of_row``, the sweep's ``idx``, ``lo``, ``tmp``); ``fusion`` (5,):
    ``fusion[0] != 0`` when the pass over the rows summed the children of the grow being
    decided, ``(A_left, B_left, A_right, B_right)`` in ``fusion[1:5]`` (its rows are then
    collected only once the bound of the ratio does not reject, as for linear leaves)."""

    A: np.ndarray
    B: np.ndarray
    c: float
    d: float
    s: np.ndarray
    e: np.ndarray
    Xb: np.ndarray
    XbT: np.ndarray
    leaf_of_row: np.ndarray
    idx: np.ndarray
    lo: np.ndarray
    tmp: np.ndarray
    fusion: np.ndarray


def _gamma(leaves) -> bool:
    return leaf_form_is(leaves, GammaLeaves)


@numba.njit(cache=True, inline="always")
def _side_sums(XbT, v, c, idx, start, end, s, e):
    """``(A_left, B_left, A_right, B_right)`` of the rows ``idx[start:end]`` under rule
    ``c`` of feature ``v``; both sides summed (a difference could leave a tiny negative
    rate when the rates span many orders of magnitude)."""
    al = bl = ar = br = 0.0
    for q in range(start, end):
        i = idx[q]
        b = XbT[v, i]
        if c >= 0:
            go = b <= c
        else:
            go = (((~c) >> b) & 1) != 0
        # selects, not a branch on the data: both sides add, one of them 0.0 (the same
        # sums, since the rates are not negative); 0.71 against 1.19 ms over 250,000 rows
        si, ei = s[i], e[i]
        al += si if go else 0.0
        bl += ei if go else 0.0
        ar += 0.0 if go else si
        br += 0.0 if go else ei
    return al, bl, ar, br


@numba.njit(cache=True, inline="always")
def _range_sums(idx, start, end, s, e):
    a = b = 0.0
    for q in range(start, end):
        i = idx[q]
        a += s[i]
        b += e[i]
    return a, b


@overload(leaf_score)
def _leaf_score(leaves, k):
    if not _gamma(leaves):
        return None

    def impl(leaves, k):
        return gamma_log_ml(leaves.A[k], leaves.B[k], leaves.c, leaves.d)
    return impl


@overload(children_sums)
def _children_sums(leaves, rng, t, ell, v, c, min_leaf):
    if not _gamma(leaves):
        return None

    def impl(leaves, rng, t, ell, v, c, min_leaf):
        fu = leaves.fusion
        if fu[0] != 0.0:  # the pass summed the children (a numeric rule)
            return (fu[1], fu[2], fu[3], fu[4]), 0, -1, c
        idx, lo = leaves.idx, leaves.lo
        cnt = leaf_rows(t, ell, leaves.leaf_of_row, idx)
        rule = c
        if lo[v] < 0:
            rule = draw_levels(rng, lo, v, leaves.Xb, idx, 0, cnt, min_leaf)
        ch = _side_sums(leaves.XbT, v, rule, idx, 0, cnt, leaves.s, leaves.e)
        return ch, cnt, -1, rule
    return impl


@overload(children_score)
def _children_score(leaves, ch):
    if not _gamma(leaves):
        return None

    def impl(leaves, ch):
        return (gamma_log_ml(ch[0], ch[1], leaves.c, leaves.d)
                + gamma_log_ml(ch[2], ch[3], leaves.c, leaves.d))
    return impl


@overload(partitioned_rows)
def _partitioned_rows(leaves, t, ell, cnt, mid, v, c):
    if not _gamma(leaves):
        return None

    def impl(leaves, t, ell, cnt, mid, v, c):
        if leaves.fusion[0] != 0.0:  # the rows, collected now that the move may be accepted
            cnt = leaf_rows(t, ell, leaves.leaf_of_row, leaves.idx)
        # else idx[:cnt] still holds the leaf's rows (children_sums collected them)
        return cnt, partition_rows(leaves.XbT, leaves.idx, 0, cnt, v, c, leaves.tmp)
    return impl


@overload(set_children)
def _set_children(leaves, t, ell, kl, kr, ch):
    if not _gamma(leaves):
        return None

    def impl(leaves, t, ell, kl, kr, ch):
        leaves.A[kl] = ch[0]
        leaves.B[kl] = ch[1]
        leaves.A[kr] = ch[2]
        leaves.B[kr] = ch[3]
    return impl


@overload(merged_sums)
def _merged_sums(leaves, t, eta, kl, kr, pv):
    if not _gamma(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, pv):
        return leaves.A[kl] + leaves.A[kr], leaves.B[kl] + leaves.B[kr]
    return impl


@overload(merged_score)
def _merged_score(leaves, mg):
    if not _gamma(leaves):
        return None

    def impl(leaves, mg):
        return gamma_log_ml(mg[0], mg[1], leaves.c, leaves.d)
    return impl


@overload(set_merged)
def _set_merged(leaves, t, eta, kl, kr, mg):
    if not _gamma(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, mg):
        leaf_of_row = leaves.leaf_of_row
        for i in range(leaf_of_row.shape[1]):
            lf = leaf_of_row[t, i]
            leaf_of_row[t, i] = eta if (lf == kl) | (lf == kr) else lf
        leaves.A[eta] = mg[0]
        leaves.B[eta] = mg[1]
    return impl


@numba.njit(cache=True)
def _new_subtree(t, root, forest, leaves, rules, scratch, nA, nB):
    """The proposed subtree's ``log p_split`` of its internal nodes plus its leaves' log
    marginal likelihoods, their sums ``(nA, nB)`` taken over the segments of ``scratch.idx``
    that :func:`route_segments` gave them."""
    var, left, right, depth = forest.var, forest.left, forest.right, forest.depth
    idx, seg_s, seg_e, stack = scratch.idx, scratch.seg_s, scratch.seg_e, scratch.stack
    total = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        if var[t, k] >= 0:
            total += log_psplit(depth[t, k], rules.alpha, rules.beta)
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2
        else:
            a, b = _range_sums(idx, seg_s[k], seg_e[k], leaves.s, leaves.e)
            nA[k] = a
            nB[k] = b
            total += gamma_log_ml(a, b, leaves.c, leaves.d)
    return total


@overload(subtree_score)
def _subtree_score(leaves, t, root, cnt, data, rules, forest, scratch):
    """The rows routed into the subtree's (new) leaves, then their sums from the segments."""
    if not _gamma(leaves):
        return None

    def impl(leaves, t, root, cnt, data, rules, forest, scratch):
        route_segments(t, root, cnt, data.XbT, forest, scratch)
        return _new_subtree(t, root, forest, leaves, rules, scratch, scratch.nW,
                            scratch.nS), True
    return impl


@overload(fused_change)
def _fused_change(leaves):
    if not _gamma(leaves):
        return None

    def impl(leaves):
        return False  # the pass sums no proposal
    return impl


@overload(fused_change_score)
def _fused_change_score(leaves, t, root, kl, kr, rules, forest, scratch):
    if not _gamma(leaves):
        return None

    def impl(leaves, t, root, kl, kr, rules, forest, scratch):
        return 0.0  # never called: fused_change is False
    return impl


@overload(leaf_sums)
def _leaf_sums(leaves):
    if not _gamma(leaves):
        return None

    def impl(leaves):
        return leaves.A, leaves.B
    return impl


@numba.njit(cache=True)
def gamma_sweep(rng, data, rules, move_cp, rows, prior, fsum, forest, scratch, bufs, tally,
                sweeps):
    """``sweeps`` backfitting sweeps over all trees of a term with log-gamma leaves.

    Parameters
    ----------
    data, rules, forest, scratch
        The :class:`SweepData`, :class:`TreeRules` (``prec0`` unread), ``ForestArrays`` and
        :class:`SweepScratch` of the conjugate sweeps.
    move_cp : ndarray of shape (4,)
        Cumulative probabilities of grow, prune, change and swap.
    rows : tuple ``(s, logt)`` of ndarray of shape (n,)
        Every row's shape ``s_i`` and ``log t_i + kappa (eta_i - f_i)``: its log rate with
        the term's trees at zero (module doc; ``-inf`` where ``t_i = 0``).
    prior : tuple ``(kappa, c, d)`` of float
        The leaf's exponent and the prior ``exp(kappa mu) ~ Gamma(c, rate d)``.
    fsum : ndarray of shape (n,)
        The trees' sum at the rows on entry (read only; the rates follow it, tree by tree,
        through the sweeps).
    bufs : tuple of ndarray
        ``(A, B, e)``: scratch for the leaves' sums (shape (K,) each) and the rows' rates
        (shape (n,)); a move's proposed sums go to ``scratch.nW``, ``scratch.nS``.
    tally : ndarray of shape (2, 4), dtype int64
        Moves proposed (row 0) and accepted (row 1), per move type.
    """
    var, value, n_nodes, leaf_of_row = (forest.var, forest.value, forest.n_nodes,
                                        forest.leaf_of_row)
    A, B, e = bufs
    s, logt = rows
    kappa, c, d = prior
    m, n = leaf_of_row.shape
    K = A.shape[0]
    pg = move_cp[0]
    pp = move_cp[1] - move_cp[0]
    lo, hi = scratch.lo, scratch.hi
    fusion = np.zeros(5)
    leaves = GammaLeaves(A, B, c, d, s, e, data.Xb, data.XbT, leaf_of_row, scratch.idx, lo,
                         scratch.tmp, fusion)
    back = np.ones(K)  # exp(kappa mu) of the tree updated last, to put it back (none yet)
    out = np.zeros(K)  # exp(-kappa mu) of the tree to take out
    acc = np.zeros(8 * K)  # (A, B) per leaf in four interleaved partial sums
    n4 = n - (n & 3)
    nb = n_blocks(n)
    # the blocks' lanes and a grow's children's sums (kernels/row_blocks.py)
    pacc = np.zeros((nb if nb > 1 else 0, 8 * K + 4))
    # the rates against all trees, from the trees' sum the sampler holds
    for i in range(n):
        e[i] = math.exp(logt[i] + kappa * fsum[i])
    for _ in range(sweeps):
        for t in range(m):
            u = rng.random()
            move = draw_move(u, move_cp)
            # A grow's proposal is drawn before the pass (the pass draws no random numbers,
            # so they are the numbers drawn after it before); under a numeric rule the pass
            # sums its children's rows (fusion), and the leaf's rows are collected only when
            # the bound of the ratio does not reject (conjugate_moves.grow).
            fusion[0] = 0.0
            g_ell = g_b = g_w = g_v = g_c = g_nc = -1
            fused = False
            if move == GROW:
                g_ell, g_b, g_w, g_v, g_c, g_nc = grow_proposal(rng, t, data.split_prior,
                                                                forest, lo, hi)
                fused = g_ell >= 0 and lo[g_v] >= 0
                fusion[0] = 1.0 if fused else 0.0
            nk = n_nodes[t]
            for k in range(nk):
                out[k] = math.exp(-kappa * value[t, k]) if var[t, k] == LEAF else 0.0
                for j in range(8):
                    acc[j * K + k] = 0.0
            # one pass: tree t - 1 back into the rates and tree t out, and (A, B) per leaf
            # summed in four lanes (rows i mod 4), so that consecutive rows in the same
            # leaf do not wait on each other's additions
            tp = t - 1 if t > 0 else m - 1
            if nb <= 1:  # one block: the plain pass, written here (called, 37 against 32 ms a
                # sweep at 60,000 rows on one thread)
                for i0 in range(0, n4, 4):
                    for j in range(4):
                        i = i0 + j
                        k = leaf_of_row[t, i]
                        ei = e[i] * out[k] * back[leaf_of_row[tp, i]]
                        e[i] = ei
                        acc[2 * j * K + k] += s[i]
                        acc[(2 * j + 1) * K + k] += ei
                for i in range(n4, n):
                    k = leaf_of_row[t, i]
                    ei = e[i] * out[k] * back[leaf_of_row[tp, i]]
                    e[i] = ei
                    acc[k] += s[i]
                    acc[K + k] += ei
                if fused:
                    gamma_grow_rows(leaf_of_row[t], data.XbT[g_v], s, e, g_ell, g_c,
                                    fusion[1:])
            else:  # blocks of rows on the threads, their sums added in block order
                gamma_pass_blocks(t, tp, leaf_of_row, e, (s, out, back), pacc, K,
                                  (g_ell if fused else -1, max(g_v, 0), g_c,
                                   data.XbT[max(g_v, 0)]))
                for q in range(1, 5):
                    fusion[q] = 0.0
                for b in range(nb):
                    for j in range(8):
                        for k in range(nk):
                            acc[j * K + k] += pacc[b, j * K + k]
                    if fused:
                        for q in range(4):
                            fusion[1 + q] += pacc[b, 8 * K + q]
            for k in range(nk):
                A[k] = (acc[k] + acc[2 * K + k]) + (acc[4 * K + k] + acc[6 * K + k])
                B[k] = (acc[K + k] + acc[3 * K + k]) + (acc[5 * K + k] + acc[7 * K + k])
            if move == GROW:
                res = grow(rng, t, (g_ell, g_b, g_w, g_v, g_c, g_nc), leaves, data, rules, pg,
                           pp, forest, scratch)
            elif move == PRUNE:
                res = prune(rng, t, leaves, rules, pg, pp, forest, scratch)
            else:
                proposal = restructure_proposal(rng, move == SWAP, t, data.split_prior, forest,
                                                lo, hi)
                res = restructure(rng, move == SWAP, t, proposal, leaves, data, rules, forest,
                                  scratch)
            if res >= 0:
                tally[0, move] += 1
                tally[1, move] += res
            for k in range(back.shape[0]):
                back[k] = 1.0
            for k in range(n_nodes[t]):
                if var[t, k] == LEAF:
                    phi = rng.gamma(c + A[k], 1.0 / (d + B[k]))
                    value[t, k] = math.log(phi) / kappa
                    back[k] = phi
