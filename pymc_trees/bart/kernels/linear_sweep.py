"""The conjugate sweep of linear leaves (:mod:`pymc_trees.bart.kernels.linear`): per tree a
grow, a prune (probability 0.3 each) or a change of the rule of a node whose children are
leaves (0.4), the leaves' coefficients integrated out of the decision, then drawn from their
conditional; with ``response="mix"`` each tree's kind drawn after its move
(``docs/explanation/linear-leaves.md``, "Linear leaves").

Every tree takes one pass over the rows (:func:`linear_pass`): tree t - 1 out of the
residual, tree t back in, tree t's leaves' five sums, and the sums of the leaves the move
proposes (a grow's or a change's children under a numeric rule, a prune's merged leaf).  The
part of a proposal that the tree alone decides is drawn before the pass, with the random
numbers in the order the moves drew them after it; the pass sums each leaf's rows as
collecting the rows and summing them does, up to the order of the additions, so the chain
is that of a sweep that collects every proposal's rows (``docs/explanation/linear-leaves.md``,
"The linear sweep at scale" and "The pass of small trees").
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_trees.bart.kernels.conjugate_moves import grow, grow_proposal, prune_picked
from pymc_trees.bart.kernels.forest import LEAF, load_mask
from pymc_trees.bart.kernels.linear import (LinearLeaves, LinearSums, draw_linear_leaf,
                                            leaf_regressors, linear_log_ml, row_value,
                                            rows_sums)
from pymc_trees.bart.kernels.nodes import draw_levels, draw_rule, log_1m_psplit
from pymc_trees.bart.kernels.row_blocks import linear_pass_blocks, linear_pass_rows, n_blocks
from pymc_trees.bart.kernels.small_pass import small_pair
from pymc_trees.bart.kernels.moves import CHANGE, GROW, PRUNE
from pymc_trees.bart.kernels.tree_edit import (PRUNABLE, accept_u, children_masks, commit_children,
                                               count_nodes, pair_children_logr, pair_rows,
                                               partition_rows, pick_node, pick_prune)

__all__ = ["linear_sweep", "linear_pass", "new_pass_cache", "P_GROW", "P_PRUNE"]


@numba.njit(cache=True)
def _change_proposal(rng, t, data, min_leaf, forest, scratch):
    """The part of a change's proposal that the tree alone decides, drawn before the pass
    over the rows with the random numbers
    :func:`~pymc_trees.bart.kernels.tree_edit.pick_pair_rule` draws, in its order: a node
    whose children are both leaves (uniformly), and a new rule from the prior at the node
    (which keeps its rows, hence its available cutpoints, left in ``scratch.lo``, ``hi``).
    Under a numeric rule the rows are not collected (``mid = -1``: the pass sums the new
    children); a categorical rule's levels are drawn from the node's rows, which are then
    collected and partitioned (``idx[:mid]`` left).  Returns ``(node, kl, kr, v, c, nc, cnt,
    mid)``, ``node = -1`` when no node qualifies."""
    var, left, right, parent, wavail, n_nodes = (forest.var, forest.left, forest.right,
                                                 forest.parent, forest.wavail, forest.n_nodes)
    lo, hi, idx = scratch.lo, scratch.hi, scratch.idx
    w = count_nodes(t, PRUNABLE, var, left, right, parent, wavail, n_nodes)
    if w == 0:
        return -1, 0, 0, 0, 0, 0, 0, -1
    eta = pick_node(rng, t, PRUNABLE, w, var, left, right, parent, wavail, n_nodes)
    kl = left[t, eta]
    kr = right[t, eta]
    load_mask(forest.amask, t, eta, lo, hi)
    v, c, nc = draw_rule(rng, lo, hi, data.split_prior, wavail[t, eta])
    if lo[v] >= 0:
        return eta, kl, kr, v, c, nc, 0, -1
    cnt = pair_rows(t, kl, kr, forest.leaf_of_row, idx)
    c = draw_levels(rng, lo, v, data.Xb, idx, 0, cnt, min_leaf)
    mid = partition_rows(data.XbT, idx, 0, cnt, v, c, scratch.tmp)
    return eta, kl, kr, v, c, nc, cnt, mid


@numba.njit(cache=True)
def _change(rng, t, proposal, data, rules, active, lrows, omega, forest, scratch, sums,
            fusion):
    """The change :func:`_change_proposal` drew (``proposal``), after the pass over the rows:
    the rule's probability cancels between prior and proposal, leaving the children's
    marginal likelihoods and their factors ``1 - p_split`` (their availability may change).
    The new children's factors are at most 1, so the ratio without them bounds the full one:
    under a numeric rule (the children's sums from the pass, in ``fusion``) the rows are
    collected and the children's rules counted only when that bound does not already reject
    (the same decision, with the same uniform).  -1 when impossible, else 1/0."""
    XbT, ncuts, iscat, split_prior = data.XbT, data.ncuts, data.iscat, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    regcol, Z = lrows
    W, Wz, Wzz, S, Sz, reg = sums
    r, idx, hist, lo, hi, nmask = (scratch.r, scratch.idx, scratch.hist, scratch.lo, scratch.hi,
                                   scratch.nmask)
    eta, kl, kr, v, c, nc, cnt, mid = proposal
    if eta < 0:
        return -1
    j = regcol[v] if active else -1
    fused = fusion[0] != 0.0
    if fused:
        WL, WzL, WzzL, SL, SzL = fusion[1], fusion[2], fusion[3], fusion[4], fusion[5]
        WR, WzR, WzzR, SR, SzR = fusion[6], fusion[7], fusion[8], fusion[9], fusion[10]
    else:
        WL, WzL, WzzL, SL, SzL = rows_sums(idx, 0, mid, j, Z, r, omega)
        WR, WzR, WzzR, SR, SzR = rows_sums(idx, mid, cnt, j, Z, r, omega)
    ml = (linear_log_ml(WL, WzL, WzzL, SL, SzL, j >= 0, prec0)
          + linear_log_ml(WR, WzR, WzzR, SR, SzR, j >= 0, prec0)
          - linear_log_ml(W[kl], Wz[kl], Wzz[kl], S[kl], Sz[kl], reg[kl] >= 0, prec0)
          - linear_log_ml(W[kr], Wz[kr], Wzz[kr], S[kr], Sz[kr], reg[kr] >= 0, prec0))
    u = rng.random()
    if fused:
        d = forest.depth[t, eta]
        old = ((0.0 - log_1m_psplit(d + 1, alpha, beta, forest.wavail[t, kl] > 0.0))
               - log_1m_psplit(d + 1, alpha, beta, forest.wavail[t, kr] > 0.0))
        if not accept_u(u, ml + old):
            return 0
        cnt = pair_rows(t, kl, kr, forest.leaf_of_row, idx)
        mid = partition_rows(XbT, idx, 0, cnt, v, c, scratch.tmp)
    wL, wR = children_masks(data, idx, mid, cnt, min_leaf, scratch)
    logr = ml + pair_children_logr(t, eta, kl, kr, wL, wR, alpha, beta, forest)
    if not accept_u(u, logr):
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
            zz = Z[j, i]
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
def linear_sweep(rng, data, rules, lrows, kinds, rows, fsum, forest, slope, scratch, sums,
                 tally):
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
        categorical, no slope); ``Z`` (p, n), the standardised columns
        (:func:`standardize_columns`).
    kinds : tuple ``(lin, mix)``
        ``lin`` (uint8, shape (m,)): whether each tree's leaves are linear (1) or constant
        (0), updated with ``mix``; ``mix`` (bool, ``response="mix"``): each tree's kind is a
        parameter with prior 1/2 each, drawn after the tree's move with its coefficients
        integrated out (``p(linear) / p(constant) = prod_leaves ML_linear / ML_constant``).
    rows : tuple ``(z, omega)``
        Pseudo-data (offset removed) and row precisions, float64 of shape (n,) each.
    fsum : float64 ndarray of shape (n,)
        The trees' sum at the training rows on entry; their new sum on return.
    slope : float64 ndarray of shape (m, K)
        The leaves' ``b1`` (0 at leaves without a slope), updated.
    sums : tuple ``(acc, cache)``
        ``acc`` (float64, shape (5, K)), scratch for the per-leaf sums; ``cache``, the
        passes' counts and moments of the trees (:func:`new_pass_cache`), kept between
        sweeps.
    tally : int64 ndarray of shape (2, 4)
        Proposed (row 0) and accepted (row 1) grows, prunes and changes, incremented (the
        last column, swap, is never proposed here).
    """
    lin, mix = kinds
    z, omega = rows
    prec0 = rules.prec0
    regcol, Z = lrows
    var, parent, value, n_nodes, leaf_of_row = (forest.var, forest.parent, forest.value,
                                                forest.n_nodes, forest.leaf_of_row)
    lo, hi = scratch.lo, scratch.hi
    r = scratch.r
    sums, cache = sums
    W, Wz, Wzz, S, Sz = sums[0], sums[1], sums[2], sums[3], sums[4]
    m, n = leaf_of_row.shape
    K = var.shape[1]
    reg = np.empty(K, np.int64)
    reg_prev = np.empty(K, np.int64)
    one = np.ones(1, np.uint8)
    fusion = np.zeros(11)
    # equal row precisions (a Gaussian likelihood): their common value, read once
    oc = omega[0] if n > 0 else 0.0
    for i in range(n):
        if omega[i] != oc:
            oc = 0.0
            break
    for i in range(n):
        r[i] = z[i] - fsum[i]
    for t in range(m):
        leaf_regressors(t, var, parent, n_nodes, regcol, lin, reg)
        active = lin[t] != 0
        # The move and the part of its proposal that the tree alone decides come first: the
        # pass draws no random numbers, so they are the numbers drawn after it before.  The
        # pass then sums the rows of the leaves the proposal makes (fa, fb: a grow's leaf or
        # a change's two leaves split by a numeric rule (fv, fc); a prune's two leaves merged)
        # with their regressor jn, as a collection of the rows would (up to rounding).
        u = rng.random()
        fa = fb = fv = jn = -1
        fc = 0
        g_ell = g_b = g_w = g_v = g_c = g_nc = -1
        p_eta = p_kl = p_kr = p_w = p_b = -1
        c_eta = c_kl = c_kr = c_v = c_c = c_nc = c_cnt = c_mid = -1
        if u < P_GROW:
            move = GROW
            g_ell, g_b, g_w, g_v, g_c, g_nc = grow_proposal(rng, t, data.split_prior, forest,
                                                            lo, hi)
            if g_ell >= 0 and lo[g_v] >= 0:
                fa = fb = g_ell
                fv, fc = g_v, g_c
                jn = regcol[g_v] if active else -1
        elif u < P_GROW + P_PRUNE:
            move = PRUNE
            p_eta, p_kl, p_kr, p_w, p_b = pick_prune(rng, t, forest)
            if p_eta >= 0:
                fa, fb = p_kl, p_kr
                par = parent[t, p_eta]
                jn = regcol[var[t, par]] if par >= 0 and active else -1
        else:
            move = CHANGE
            c_eta, c_kl, c_kr, c_v, c_c, c_nc, c_cnt, c_mid = _change_proposal(
                rng, t, data, rules.min_leaf, forest, scratch)
            if c_eta >= 0 and c_mid < 0:
                fa, fb = c_kl, c_kr
                fv, fc = c_v, c_c
                jn = regcol[c_v] if active else -1
        # one pass: take tree t - 1 (drawn last; its regressors in reg_prev) out of the
        # residual, put tree t back, and sum the statistics of tree t's leaves
        linear_pass(t, forest, slope, (reg, reg_prev), lrows, (r, omega, oc), sums, cache,
                    (fa, fb, fv, fc, jn), data.XbT, fusion)
        sums_t = LinearSums(W, Wz, Wzz, S, Sz, reg)
        leaves = LinearLeaves(sums_t, lrows, r, omega, active, prec0, data.Xb, data.XbT,
                              leaf_of_row, scratch.idx, lo, scratch.tmp, fusion)
        if move == GROW:
            res = grow(rng, t, (g_ell, g_b, g_w, g_v, g_c, g_nc), leaves, data, rules, 1.0,
                       1.0, forest, scratch)
        elif move == PRUNE:
            res = prune_picked(rng, t, (p_eta, p_kl, p_kr, p_w, p_b), leaves, rules, 1.0, 1.0,
                               forest, scratch)
        else:
            res = _change(rng, t, (c_eta, c_kl, c_kr, c_v, c_c, c_nc, c_cnt, c_mid), data,
                          rules, active, lrows, omega, forest, scratch, sums_t, fusion)
        if res >= 0:
            tally[0, move] += 1
            tally[1, move] += res
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
        r[i] -= row_value(m - 1, leaf_of_row[m - 1, i], i, value, slope, reg_prev, Z)
        fsum[i] = z[i] - r[i]


def new_pass_cache(m, K):
    """An empty cache of the passes' counts and moments (:func:`linear_pass`) for m trees of
    K node slots: ``(moments (m, 3, K), keys (m, 5, K), n_keyed (m,))``, no tree kept."""
    return (np.zeros((m, 3, K)), np.zeros((m, 5, K), np.int64), np.full(m, -1, np.int64))


# added to a tree's number of nodes in the cache's n_keyed when the pass of small trees
# summed its counts and moments (in vector lanes, so to other last bits than the plain
# pass's): a tree that moves between the two passes is summed afresh
_SMALL_KEY = 1 << 20


@numba.njit(cache=True)
def _kept(t, forest, reg, cache, small):
    """Whether ``cache`` holds tree t's counts and moments as the pass of this kind
    (``small``: :func:`~pymc_trees.bart.kernels.small_pass.small_pair`) sums them: its nodes'
    rules, children and leaf regressors are those they were stored with (the tree's rows per
    leaf, and the column each leaf reads, are then the same)."""
    moments, keys, n_keyed = cache
    nk = forest.n_nodes[t]
    if n_keyed[t] != nk + (_SMALL_KEY if small else 0):
        return False
    var, cut, left, right = forest.var, forest.cut, forest.left, forest.right
    for k in range(nk):
        leaf_reg = reg[k] if var[t, k] == LEAF else -2
        if (keys[t, 0, k] != var[t, k] or keys[t, 1, k] != cut[t, k]
                or keys[t, 2, k] != left[t, k] or keys[t, 3, k] != right[t, k]
                or keys[t, 4, k] != leaf_reg):
            return False
    return True


@numba.njit(cache=True)
def _keep(t, forest, reg, cache, sums, small):
    """Store tree t's counts and moments (``sums[:3]``, unweighted) in ``cache``, keyed (and
    marked as the ``small`` pass's or the plain pass's)."""
    moments, keys, n_keyed = cache
    var = forest.var
    nk = forest.n_nodes[t]
    for k in range(nk):
        for q in range(3):
            moments[t, q, k] = sums[q, k]
        keys[t, 0, k] = var[t, k]
        keys[t, 1, k] = forest.cut[t, k]
        keys[t, 2, k] = forest.left[t, k]
        keys[t, 3, k] = forest.right[t, k]
        keys[t, 4, k] = reg[k] if var[t, k] == LEAF else -2
    n_keyed[t] = nk + (_SMALL_KEY if small else 0)


@numba.njit(cache=True)
def linear_pass(t, forest, slope, regs, lrows, rows, sums, cache, proposal, XbT, fusion):
    """The linear sweep's pass over the rows for tree t (:func:`linear_sweep`): tree t - 1
    (leaf regressors ``reg_prev``) out of the residual and tree t (``reg``) back in
    (``regs = (reg, reg_prev)``), tree t's leaves' five sums into ``sums`` (5, K), and in
    ``fusion`` (``(fused, L, R)``, :class:`~pymc_trees.bart.kernels.linear.LinearLeaves`) the
    sums of the rows of the leaves the move proposes to make: ``proposal = (fa, fb, fv, fc,
    jn)``, the rows of leaves ``fa``, ``fb`` (-1: none) with regressor column ``jn`` (-1:
    none), to the left side ``L`` where ``XbT[fv, i] <= fc`` (or everywhere when ``fv <
    0``), else to ``R``.  ``rows = (r, omega, oc)``: the residual (updated), the row
    precisions and their common value (``oc > 0``: ``omega`` is not read).  The sums are
    those :func:`~pymc_trees.bart.kernels.linear.rows_sums` takes over the collected and
    stably partitioned rows, up to the order of the additions (the loops on vector registers
    of :mod:`~pymc_trees.bart.kernels.small_pass` add in lanes).

    With a common precision, a leaf's ``W, Wz, Wzz`` are ``oc`` times its rows' count and
    moments of its regressor, which change only with the tree: the pass takes them from
    ``cache`` (:func:`new_pass_cache`) when it holds the tree as it is (summed by a pass of
    the same kind), else sums them and stores them, and leaves two sums of five to the rows
    in the plain pass, 14 of 20 in the pass of small trees
    (docs/explanation/linear-leaves.md, "The counts a tree keeps")."""
    r, omega, oc = rows
    W, Wz, Wzz, S, Sz = sums[0], sums[1], sums[2], sums[3], sums[4]
    nk = forest.n_nodes[t]
    for k in range(nk):
        W[k] = 0.0
        Wz[k] = 0.0
        Wzz[k] = 0.0
        S[k] = 0.0
        Sz[k] = 0.0
    fusion[0] = 1.0 if proposal[0] >= 0 else 0.0
    # under a common precision the passes sum the counts and moments unweighted (or take
    # them from the cache); the weighted W, Wz, Wzz follow below
    counted = oc > 0.0
    small = small_pair(forest, t)
    kept = counted and _kept(t, forest, regs[0], cache, small)
    weights = (omega, oc, kept)
    n = r.shape[0]
    nb = n_blocks(n)
    if nb <= 1:  # one block: the plain pass over all rows
        linear_pass_rows(t, forest, slope, regs, lrows.Z, r, weights, sums, proposal, XbT,
                         fusion, (0, n))
    else:
        # blocks of rows on the threads (kernels/row_blocks.py), their sums added in block
        # order
        psums = np.empty((nb, 5, sums.shape[1]))
        pfus = np.zeros((nb, 11))
        linear_pass_blocks(t, forest, slope, regs, lrows.Z, r, weights, proposal, XbT, psums,
                           pfus)
        for q in range(1, 11):
            fusion[q] = 0.0
        for b in range(nb):
            for q in range(5):
                sq, pq = sums[q], psums[b, q]
                for k in range(nk):
                    sq[k] += pq[k]
            for q in range(1, 11):
                fusion[q] += pfus[b, q]
    if not counted:
        return
    moments = cache[0]
    if kept:
        for q in range(3):
            sums[q, :nk] = moments[t, q, :nk]
    else:
        _keep(t, forest, regs[0], cache, sums, small)
    for q in range(3):
        for k in range(nk):
            sums[q, k] *= oc
