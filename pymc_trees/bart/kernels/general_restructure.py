"""The general step's change and swap (docs/math.md section 9): a subtree's rules changed
or exchanged, its rows routed anew and every leaf below given a new value vector from its
Newton proposal; the proposal, the values at its rows, the reverse proposal of the old
leaves, and the commit or the revert.  Called by :func:`pymc_trees.bart.kernels.general.
general_one_sweep` and by the Python loop."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.conjugate_moves import leaf_form_is, leaf_score, old_subtree
from pymc_trees.bart.kernels.moves import SWAP
from pymc_trees.bart.kernels.tree_edit import (collect_subtree_rows, commit_subtree,
                                               pick_restructure, prior_subtree, restore_rules,
                                               split_segment, swap_partner, swap_rules)
from pymc_trees.bart.kernels.forest import load_mask
from pymc_trees.bart.kernels.newton import draw_q, group_sums, log_prior, log_q, prior_at, q_at
from pymc_trees.bart.kernels.nodes import draw_node_rule, log_psplit

__all__ = ["LeafPriors", "restructure_propose", "leaves_below", "restructure_values",
           "reverse_old_leaves", "restructure_commit", "restructure_revert"]


class LeafPriors(NamedTuple):
    """The general step's leaves as :func:`~pymc_trees.bart.kernels.conjugate_moves.
    old_subtree` reads them (its ``leaf_score``: a leaf's log prior, not a marginal
    likelihood): tree t's leaf value vectors ``vt`` (J, K) and the leaf prior's precision."""

    vt: np.ndarray
    prec0: float


@overload(leaf_score)
def _leaf_score(leaves, k):
    if not leaf_form_is(leaves, LeafPriors):
        return None

    def impl(leaves, k):
        return prior_at(leaves.vt, k, leaves.prec0)
    return impl


@numba.njit(cache=True)
def _route_subtree(rng, t, root, cnt, XbT, rules, w, forest, g, h, sc, b):
    """Route the rows ``sc.idx[:cnt]`` of a subtree through its (new) rules, filling the node
    segments, and draw every leaf's value vector from its q into ``nV[:, leaf]``.  Returns
    ``log p_split`` of every internal node plus, per leaf, its log prior minus its log
    proposal density (``nV`` and the sums ``S`` are the :class:`RowBuffers` ``b``'s)."""
    nV, S = b.nV, b.S
    _, alpha, beta, prec0 = rules
    var, cut, left, right, depth = (forest.var, forest.cut, forest.left, forest.right,
                                    forest.depth)
    idx, seg_s, seg_e, stack, tmp = sc.idx, sc.seg_s, sc.seg_e, sc.stack, sc.tmp
    total = 0.0
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
            top = split_segment(t, k, XbT, forest, sc, top)
        else:
            group_sums(idx, s, e, g, h, S, 0)
            for j in range(g.shape[0]):
                mu = draw_q(rng, S[0, j, 0], S[1, j, 0], prec0, w)
                nV[j, k] = mu
                total += log_prior(mu, prec0) - log_q(mu, S[0, j, 0], S[1, j, 0], prec0, w)
    return total


@numba.njit(cache=True)
def restructure_propose(rng, is_swap, t, data, rules, w, forest, value, g, h, sc, b):
    """Propose a CHANGE (a new rule from the prior at an internal node) or a SWAP (exchange
    the rules of a parent and a child) in tree t; every leaf below the node gets a new value
    vector from its q (into ``nV``, shape (J, K); ``S`` (2, J, 2) is scratch).

    Returns -1 when impossible, 0 when the proposal has prior probability 0 (rejected; the
    tree is as before), else 1: the rules are changed in place and the caller evaluates the
    likelihood at the rows ``idx[:cnt]`` (:func:`restructure_values`), then calls
    :func:`restructure_commit` or :func:`restructure_revert`.  ``out_i = (root, cnt, v_root,
    c_root, v_l, c_l, v_r, c_r)``, ``out_f = (log ratio,)``, which lacks the log-likelihood
    difference and the reverse proposal densities of the old leaves' values
    (:func:`reverse_old_leaves`).  ``sc`` the :class:`SweepScratch`, ``b`` the
    :class:`~pymc_trees.bart.kernels.row_calls.RowBuffers` (its ``nV``, ``S``, ``out_i``, ``out_f``)."""
    Xb, XbT, split_prior = data.Xb, data.XbT, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    var, cut, left, right, depth = (forest.var, forest.cut, forest.left, forest.right,
                                    forest.depth)
    wavail, ncut, amask = forest.wavail, forest.ncut, forest.amask
    leaf_of_row = forest.leaf_of_row
    idx, lo, hi, stack, in_sub = sc.idx, sc.lo, sc.hi, sc.stack, sc.in_sub
    nV, S, out_i, out_f = b.nV, b.S, b.out_i, b.out_f
    chosen, root, kl, kr = pick_restructure(rng, is_swap, t, forest)
    if chosen < 0:
        return -1
    out_i[0] = root
    out_i[2] = var[t, root]
    out_i[3] = cut[t, root]
    out_i[4] = var[t, kl]
    out_i[5] = cut[t, kl]
    out_i[6] = var[t, kr]
    out_i[7] = cut[t, kr]
    both = False
    sib = kl
    if is_swap:
        sib, both, possible = swap_partner(t, chosen, root, kl, kr, var, cut)
        if not possible:
            return 0
    cnt = collect_subtree_rows(t, root, var, left, right, leaf_of_row, stack, in_sub, idx)
    out_i[1] = cnt
    old = old_subtree(t, root, not is_swap, forest, LeafPriors(value[:, t], prec0), split_prior,
                      rules, stack)
    if is_swap:
        swap_rules(t, root, chosen, sib, both, var, cut)
    load_mask(amask, t, root, lo, hi)
    root_wsum = wavail[t, root]
    if not is_swap:
        v_new, c_new, _ = draw_node_rule(rng, lo, hi, split_prior, root_wsum, Xb, idx, 0, cnt,
                                         min_leaf)
        var[t, root] = v_new
        cut[t, root] = c_new
    new = _route_subtree(rng, t, root, cnt, XbT, rules, w, forest, g, h, sc, b)
    rest, valid = prior_subtree(t, root, not is_swap, root_wsum, data, rules, forest, sc)
    if not valid:
        restructure_revert(t, var, cut, left, right, out_i)
        return 0
    out_f[0] = new + rest - old
    return 1


@numba.njit(cache=True)
def leaves_below(t, root, var, left, right, stack, leaves):
    """The leaves of tree t's subtree below ``root`` into ``leaves[:count]`` (depth first,
    right child first); returns count.  ``stack`` is scratch."""
    stack[0] = root
    top = 1
    cnt = 0
    while top > 0:
        top -= 1
        k = stack[top]
        if var[t, k] >= 0:
            stack[top] = left[t, k]
            stack[top + 1] = right[t, k]
            top += 2
        else:
            leaves[cnt] = k
            cnt += 1
    return cnt


@numba.njit(cache=True)
def restructure_values(t, root, forest, value, sc, b, f_cur, f_prop):
    """``f_prop[j, i]`` for the rows of the proposed subtree: the current term value with tree
    t's current leaf value replaced by the proposed one (``b.nV``), for every output j; the
    rows are the scratch ``sc``'s segments."""
    var, left, right, leaf_of_row = forest.var, forest.left, forest.right, forest.leaf_of_row
    idx, seg_s, seg_e, stack = sc.idx, sc.seg_s, sc.seg_e, sc.stack
    nV, leaves = b.nV, b.leaves
    nl = leaves_below(t, root, var, left, right, stack, leaves)
    for j in range(value.shape[0]):
        vj, nj, fc, fp = value[j, t], nV[j], f_cur[j], f_prop[j]
        for a in range(nl):
            k = leaves[a]
            for q in range(seg_s[k], seg_e[k]):
                i = idx[q]
                fp[i] = fc[i] - vj[leaf_of_row[t, i]] + nj[k]


@numba.njit(cache=True)
def reverse_old_leaves(t, root, forest, value, sc, cnt, gc, h, prec0, w, b):
    """Sum over the current leaves below ``root`` of ``log q(value)``, each q built from the
    leaf's rows ``idx[:cnt]`` (the scratch ``sc``'s) with ``gc``, ``h`` of the proposed
    state: the reverse proposal densities of a change or swap.  The :class:`RowBuffers`
    ``b``'s ``Ga``, ``Ha`` (shape (J, K)) and ``leaves`` are scratch."""
    idx, stack, Ga, Ha, leaves = sc.idx, sc.stack, b.Ga, b.Ha, b.leaves
    var, left, right, leaf_of_row = forest.var, forest.left, forest.right, forest.leaf_of_row
    J = gc.shape[0]
    nl = leaves_below(t, root, var, left, right, stack, leaves)
    for a in range(nl):
        for j in range(J):
            Ga[j, leaves[a]] = 0.0
            Ha[j, leaves[a]] = 0.0
    for j in range(J):
        Gj, Hj, gcj, hj = Ga[j], Ha[j], gc[j], h[j]
        for q in range(cnt):
            i = idx[q]
            k = leaf_of_row[t, i]
            Gj[k] += gcj[i]
            Hj[k] += hj[i]
    total = 0.0
    vt = value[:, t]
    for a in range(nl):
        total += q_at(vt, leaves[a], Ga, Ha, leaves[a], prec0, w)
    return total


@numba.njit(cache=True)
def restructure_commit(t, root, forest, sc, value, b):
    """Keep the proposed subtree: rows, availability and the new leaf value vectors
    (``value`` of shape (J, m, K), ``b.nV`` (J, K)); ``b.spare`` and ``b.dll`` serve as the
    leaf statistics :func:`commit_subtree` copies (the general moves keep none)."""
    var, left, right, stack = forest.var, forest.left, forest.right, sc.stack
    nV, leaves = b.nV, b.leaves
    commit_subtree(t, root, forest, sc, b.spare, b.dll, b.dll, b.dll)
    for a in range(leaves_below(t, root, var, left, right, stack, leaves)):
        for j in range(value.shape[0]):
            value[j, t, leaves[a]] = nV[j, leaves[a]]


@numba.njit(cache=True)
def restructure_revert(t, var, cut, left, right, out_i):
    """Put back the rules that :func:`restructure_propose` changed."""
    root = out_i[0]
    restore_rules(t, root, left[t, root], right[t, root],
                  (out_i[2], out_i[3], out_i[4], out_i[5], out_i[6], out_i[7]), var, cut)
