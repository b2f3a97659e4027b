"""Editing a packed tree in place, shared by every sweep (conjugate, linear, general, shared
output) and by Particle Gibbs: the node classes a move picks from (:func:`count_nodes`,
:func:`pick_node`), a grow's proposal (:func:`propose_split`, :func:`pick_split`,
:func:`leaf_rule`), the partition of a node's rows by its rule (:func:`partition_rows`,
:func:`split_segment`, :func:`route_segments`), the children's and a subtree's available
rules (:func:`children_masks`, :func:`prior_subtree`) and the commits of an accepted move
(:func:`commit_children`, :func:`commit_subtree`, :func:`swap_rules`); the Metropolis decision
(:func:`accept_move`, :func:`accept_u`).  At the end, the tree's part of each move, which
every sweep calls and adds its leaves' part to: the node of a prune, a change or a swap
(:func:`pick_prune`, :func:`pick_pair_rule`, :func:`pick_restructure`, :func:`swap_partner`),
the tree prior's and the proposal's log ratio (:func:`grow_tree_logr`, :func:`children_logr`,
:func:`prune_tree_logr`, :func:`pair_children_logr`) and the edits (:func:`split_leaf`,
:func:`merge_children`, :func:`restore_rules`).  None of them reads a residual or a
likelihood: the row sums are in :mod:`pymc_trees.bart.kernels.row_sums`."""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import LEAF, load_mask, store_mask
from pymc_trees.bart.kernels.nodes import (alloc_node, availability_below, draw_node_rule,
                                           free_node, log_1m_psplit, log_psplit,
                                           node_availability, rule_valid, split_node)

__all__ = ["SPLITTABLE_LEAF", "PRUNABLE", "INTERNAL", "SWAPPABLE", "partition_rows", "accept_move",
           "accept_u", "count_nodes", "pick_node", "propose_split", "pick_split", "leaf_rows",
           "leaf_rule", "prunable_after_grow", "children_masks", "commit_children",
           "split_segment", "route_segments", "prior_subtree", "commit_subtree",
           "collect_subtree_rows", "swap_rules", "grow_tree_logr", "children_logr", "split_leaf",
           "pick_prune", "prune_tree_logr", "merge_children", "pair_rows", "pick_pair_rule",
           "pair_children_logr", "pick_restructure", "swap_partner", "restore_rules"]

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
def propose_split(rng, t, data, min_leaf, forest, scratch):
    """The proposal of a grow: a splittable leaf of tree t uniformly, its rule from the
    prior, its rows partitioned by the rule.  Returns ``(leaf, b, w_new, cnt, v, c, nc,
    mid)``: ``b`` the tree's splittable leaves, ``w_new`` its prunable nodes after the grow,
    ``idx[:cnt]`` the leaf's rows with the left child's ``idx[:mid]`` first; ``leaf = -1``
    when no leaf can split.  ``data`` a :class:`SweepData`, ``forest`` a ``ForestArrays``,
    ``scratch`` a :class:`SweepScratch` (its ``idx``, ``lo``, ``hi``, ``tmp``)."""
    idx = scratch.idx
    ell, b, w_new, cnt, v, c, nc = pick_split(rng, t, data, min_leaf, forest, idx, scratch.lo,
                                              scratch.hi)
    if ell < 0:
        return -1, 0, 0, 0, 0, 0, 0, 0
    mid = partition_rows(data.XbT, idx, 0, cnt, v, c, scratch.tmp)
    return ell, b, w_new, cnt, v, c, nc, mid


@numba.njit(cache=True, inline="always")
def pick_split(rng, t, data, min_leaf, forest, idx, lo, hi):
    """:func:`propose_split` without the partition: ``(leaf, b, w_new, cnt, v, c, nc)``, the
    leaf's rows ``idx[:cnt]`` in increasing order."""
    var, left, right, parent, wavail = (forest.var, forest.left, forest.right, forest.parent,
                                        forest.wavail)
    n_nodes, leaf_of_row = forest.n_nodes, forest.leaf_of_row
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    if b == 0:
        return -1, 0, 0, 0, 0, 0, 0
    ell = pick_node(rng, t, SPLITTABLE_LEAF, b, var, left, right, parent, wavail, n_nodes)
    cnt = leaf_rows(t, ell, leaf_of_row, idx)
    w_new, v, c, nc = leaf_rule(rng, t, ell, data, min_leaf, forest, idx, cnt, lo, hi)
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
def leaf_rule(rng, t, ell, data, min_leaf, forest, idx, cnt, lo, hi):
    """The rest of a grow's proposal once its leaf ``ell`` and the leaf's rows ``idx[:cnt]``
    are known: ``(w_new, v, c, nc)``, the tree's prunable nodes after the grow and the rule
    drawn from the prior."""
    Xb, split_prior = data.Xb, data.split_prior
    var, left, right, parent, wavail = (forest.var, forest.left, forest.right, forest.parent,
                                        forest.wavail)
    amask, n_nodes = forest.amask, forest.n_nodes
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
def above_leaves(t, k, var, left, right):
    """Whether node k is a leaf or splits into two leaves."""
    return var[t, k] < 0 or (var[t, left[t, k]] < 0 and var[t, right[t, k]] < 0)


@numba.njit(cache=True, inline="always")
def children_masks(data, idx, mid, cnt, min_leaf, scratch):
    """The available rules of the two children of a split, ``idx[:mid]`` and
    ``idx[mid:cnt]``, given their parent's in the scratch's ``lo``, ``hi``
    (:func:`availability_below`): kept in the last two rows of its ``nmask``; returns their
    available weights ``(wL, wR)``."""
    hist, lo, hi, nmask = scratch.hist, scratch.lo, scratch.hi, scratch.nmask
    K2 = nmask.shape[1] - 2
    plo = lo.copy()
    phi = hi.copy()
    wL = availability_below(data, idx, 0, mid, min_leaf, plo, phi, hist, lo, hi)
    store_mask(nmask, 0, K2, lo, hi)
    wR = availability_below(data, idx, mid, cnt, min_leaf, plo, phi, hist, lo, hi)
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
def split_segment(t, k, XbT, forest, scratch, top):
    """Partition internal node k's segment ``idx[seg_s[k]:seg_e[k]]`` (the scratch's) by
    its rule into its children's segments and push both children on the scratch's
    ``stack``; returns the new top.  Shared by the subtree routing of the conjugate (here)
    and the general moves."""
    var, cut, left, right = forest.var, forest.cut, forest.left, forest.right
    idx, seg_s, seg_e, stack, tmp = (scratch.idx, scratch.seg_s, scratch.seg_e, scratch.stack,
                                     scratch.tmp)
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
def route_segments(t, root, cnt, XbT, forest, scratch):
    """Partition the rows ``idx[:cnt]`` (the scratch's) of a subtree by its rules into its
    nodes' segments ``idx[seg_s[k]:seg_e[k]]`` (a segment already partitioned by its rule,
    by :func:`subtree_sums`, is partitioned again to the same order: the partition is
    stable)."""
    var, seg_s, seg_e, stack = forest.var, scratch.seg_s, scratch.seg_e, scratch.stack
    seg_s[root] = 0
    seg_e[root] = cnt
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        if var[t, k] >= 0:
            top = split_segment(t, k, XbT, forest, scratch, top)


@numba.njit(cache=True)
def prior_subtree(t, root, skip_root_rule, root_wsum, data, rules, forest, scratch):
    """The factors :func:`subtree_sums` leaves out, from the available cutpoints of every
    node of the routed subtree: ``(log factor, True)``, or ``(-inf, False)`` when some rule is
    no longer available (prior probability 0).  Fills ``nwav``, ``nnc`` and the masks.

    ``root_wsum >= 0`` says that ``lo``, ``hi`` already hold the root's available cutpoints
    (with weight sum ``root_wsum``): the root keeps its rows, so they are not recounted.
    Reads the bundles :class:`SweepData`, :class:`TreeRules`, ``ForestArrays`` and
    :class:`SweepScratch` (its ``idx``, ``hist``, ``lo``, ``hi``, ``nwav``, ``nnc``, ``seg_s``,
    ``seg_e``, ``stack``, ``nmask``)."""
    Xb, XbT, ncuts, iscat, split_prior = data
    min_leaf, alpha, beta, _ = rules
    var, cut, left, right, parent, depth = (forest.var, forest.cut, forest.left, forest.right,
                                            forest.parent, forest.depth)
    idx, hist, lo, hi, nwav, nnc = (scratch.idx, scratch.hist, scratch.lo, scratch.hi,
                                    scratch.nwav, scratch.nnc)
    seg_s, seg_e, stack, nmask = scratch.seg_s, scratch.seg_e, scratch.stack, scratch.nmask
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
            wsum = availability_below(data, idx, seg_s[k], seg_e[k], min_leaf, plo, phi, hist,
                                      lo, hi)
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
def commit_subtree(t, root, forest, scratch, W, S, nW, nS):
    """Commit an accepted move of the subtree below ``root``: every node's available weight,
    cutpoints and masks from the scratch (``nwav``, ``nnc``, ``nmask``), every leaf's
    statistics ``(W, S) <- (nW, nS)`` and its rows (segments of ``scratch.idx``)."""
    var, left, right, wavail, ncut = (forest.var, forest.left, forest.right, forest.wavail,
                                      forest.ncut)
    leaf_of_row, amask = forest.leaf_of_row, forest.amask
    idx, nwav, nnc, seg_s, seg_e = (scratch.idx, scratch.nwav, scratch.nnc, scratch.seg_s,
                                    scratch.seg_e)
    stack, nmask = scratch.stack, scratch.nmask
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


# The tree's part of each move, written once: every sweep (conjugate, linear, general, linear
# in the general step) picks its node, scores the tree prior and the proposal, and edits the
# tree through these; only the leaves' part of the ratio is its own.

@numba.njit(cache=True, inline="always")
def grow_tree_logr(d, nb, w_new, pg, pp, alpha, beta):
    """The tree's part of a grow's log ratio at a leaf of depth ``d`` whose children are not
    yet counted: ``log p_split(d) - log(1 - p_split(d))`` (the leaf was splittable) plus the
    proposal's ``log(pp * nb) - log(pg * w_new)`` (``nb`` splittable leaves before, ``w_new``
    prunable nodes after; ``pg = pp = 1`` where grow and prune are equally likely).  The
    children's factors are :func:`children_logr`."""
    return (log_psplit(d, alpha, beta) - log_1m_psplit(d, alpha, beta, True)
            + math.log(pp * nb) - math.log(pg * w_new))


@numba.njit(cache=True, inline="always")
def children_logr(d, wL, wR, alpha, beta):
    """The prior factors ``log(1 - p_split(d + 1))`` of two new leaves below a node of depth
    ``d``, with available weights ``wL``, ``wR`` (a leaf without an available rule has
    factor 1)."""
    return (log_1m_psplit(d + 1, alpha, beta, wL > 0.0)
            + log_1m_psplit(d + 1, alpha, beta, wR > 0.0))


@numba.njit(cache=True, inline="always")
def split_leaf(t, ell, v, c, nc, wL, wR, forest, nmask, idx, mid, cnt):
    """Carry out an accepted grow of leaf ``ell`` of tree t with rule ``(v, c)`` (``nc``
    cutpoints available): two nodes allocated, the rule set, the children given their
    available weights, the masks :func:`children_masks` kept in ``nmask`` and their rows
    ``idx[:mid]``, ``idx[mid:cnt]``.  Returns the children ``(kl, kr)``."""
    var, n_nodes, free, n_free = forest.var, forest.n_nodes, forest.free, forest.n_free
    kl = alloc_node(t, var, n_nodes, free, n_free)
    kr = alloc_node(t, var, n_nodes, free, n_free)
    split_node(t, ell, v, c, nc, kl, kr, forest)
    commit_children(t, kl, kr, wL, wR, forest.wavail, forest.amask, nmask, forest.leaf_of_row,
                    idx, mid, cnt)
    return kl, kr


@numba.njit(cache=True, inline="always")
def pick_prune(rng, t, forest):
    """A prune's node: a prunable node of tree t (both children leaves) uniformly.  Returns
    ``(node, kl, kr, w, b_new)``: its children, the tree's prunable nodes ``w`` and its
    splittable leaves after the prune ``b_new``; ``node = -1`` when no node is prunable."""
    var, left, right, parent, wavail, n_nodes = (forest.var, forest.left, forest.right,
                                                 forest.parent, forest.wavail, forest.n_nodes)
    w = count_nodes(t, PRUNABLE, var, left, right, parent, wavail, n_nodes)
    if w == 0:
        return -1, 0, 0, 0, 0
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    eta = pick_node(rng, t, PRUNABLE, w, var, left, right, parent, wavail, n_nodes)
    kl = left[t, eta]
    kr = right[t, eta]
    b_new = b + 1
    if wavail[t, kl] > 0.0:
        b_new -= 1
    if wavail[t, kr] > 0.0:
        b_new -= 1
    return eta, kl, kr, w, b_new


@numba.njit(cache=True, inline="always")
def prune_tree_logr(t, eta, kl, kr, w, b_new, pg, pp, alpha, beta, forest):
    """The tree's part of the log ratio of the grow that a prune of node ``eta`` (children
    ``kl``, ``kr``; :func:`pick_prune`'s ``w``, ``b_new``) undoes; the prune's own is its
    negative.  The node's split and its leaves' factors against the merged leaf's, and the
    proposal's ``log(pp * b_new) - log(pg * w)``."""
    d = forest.depth[t, eta]
    wavail = forest.wavail
    return (log_psplit(d, alpha, beta)
            + log_1m_psplit(d + 1, alpha, beta, wavail[t, kl] > 0.0)
            + log_1m_psplit(d + 1, alpha, beta, wavail[t, kr] > 0.0)
            - log_1m_psplit(d, alpha, beta, wavail[t, eta] > 0.0)
            + math.log(pp * b_new) - math.log(pg * w))


@numba.njit(cache=True, inline="always")
def merge_children(t, eta, kl, kr, forest):
    """Carry out an accepted prune's edit of the tree: node ``eta`` becomes a leaf and its
    children ``kl``, ``kr`` are freed (the caller moves their rows and statistics)."""
    var = forest.var
    var[t, eta] = LEAF
    forest.left[t, eta] = -1
    forest.right[t, eta] = -1
    free_node(t, kl, var, forest.free, forest.n_free)
    free_node(t, kr, var, forest.free, forest.n_free)


@numba.njit(cache=True)
def pair_rows(t, kl, kr, leaf_of_row, idx):
    """The rows of leaves ``kl`` and ``kr`` of tree t into ``idx`` in increasing order (the
    two leaves' rows interleaved); returns their number."""
    n = leaf_of_row.shape[1]
    cnt = 0
    for i in range(n):  # written always, kept when in either leaf: no branch on the data
        lf = leaf_of_row[t, i]
        idx[cnt] = i
        cnt += (lf == kl) | (lf == kr)
    return cnt


@numba.njit(cache=True, inline="always")
def pick_pair_rule(rng, t, data, min_leaf, forest, scratch):
    """The proposal of a change at a node above two leaves (the linear sweeps' change): such
    a node uniformly, its rows into ``idx[:cnt]`` in increasing order, a new rule from the
    prior at the node (which keeps its rows, so its available cutpoints), the rows
    partitioned by it (``idx[:mid]`` left).  Returns ``(node, kl, kr, cnt, v, c, nc, mid)``,
    ``node = -1`` when no node qualifies."""
    var, left, right, parent, wavail, n_nodes = (forest.var, forest.left, forest.right,
                                                 forest.parent, forest.wavail, forest.n_nodes)
    leaf_of_row, idx, lo, hi = forest.leaf_of_row, scratch.idx, scratch.lo, scratch.hi
    w = count_nodes(t, PRUNABLE, var, left, right, parent, wavail, n_nodes)
    if w == 0:
        return -1, 0, 0, 0, 0, 0, 0, 0
    eta = pick_node(rng, t, PRUNABLE, w, var, left, right, parent, wavail, n_nodes)
    kl = left[t, eta]
    kr = right[t, eta]
    cnt = pair_rows(t, kl, kr, leaf_of_row, idx)
    load_mask(forest.amask, t, eta, lo, hi)
    v, c, nc = draw_node_rule(rng, lo, hi, data.split_prior, wavail[t, eta], data.Xb, idx, 0,
                              cnt, min_leaf)
    mid = partition_rows(data.XbT, idx, 0, cnt, v, c, scratch.tmp)
    return eta, kl, kr, cnt, v, c, nc, mid


@numba.njit(cache=True, inline="always")
def pair_children_logr(t, eta, kl, kr, wL, wR, alpha, beta, forest):
    """The tree's part of a change at node ``eta`` above the leaves ``kl``, ``kr``: the new
    children's factors (available weights ``wL``, ``wR``) against the old ones'.  The rule's
    prior probability cancels with its proposal's."""
    d = forest.depth[t, eta]
    wavail = forest.wavail
    return (children_logr(d, wL, wR, alpha, beta)
            - log_1m_psplit(d + 1, alpha, beta, wavail[t, kl] > 0.0)
            - log_1m_psplit(d + 1, alpha, beta, wavail[t, kr] > 0.0))


@numba.njit(cache=True, inline="always")
def pick_restructure(rng, is_swap, t, forest):
    """The node of a change (any internal node) or of a swap (a child whose parent is
    internal: the pair's child), uniformly.  Returns ``(chosen, root, kl, kr)``: the subtree
    the move rewrites is below ``root`` (the chosen node for a change, its parent for a
    swap), ``kl``, ``kr`` the root's children; ``chosen = -1`` when no node qualifies."""
    var, left, right, parent, wavail, n_nodes = (forest.var, forest.left, forest.right,
                                                 forest.parent, forest.wavail, forest.n_nodes)
    flag = SWAPPABLE if is_swap else INTERNAL
    count = count_nodes(t, flag, var, left, right, parent, wavail, n_nodes)
    if count == 0:
        return -1, 0, 0, 0
    chosen = pick_node(rng, t, flag, count, var, left, right, parent, wavail, n_nodes)
    root = parent[t, chosen] if is_swap else chosen
    return chosen, root, left[t, root], right[t, root]


@numba.njit(cache=True, inline="always")
def swap_partner(t, chosen, root, kl, kr, var, cut):
    """For a swap of ``chosen`` with its parent ``root`` (children ``kl``, ``kr``): ``(sib,
    both, possible)``, the sibling, whether it carries the chosen child's rule too (then both
    children take the parent's), and False when the swap has prior ratio 0 (the sibling
    carries the parent's rule: both children would end with the same rule, and the reverse
    swap does not lead back)."""
    sib = kr if chosen == kl else kl
    v_s, c_s = var[t, sib], cut[t, sib]
    both = v_s >= 0 and v_s == var[t, chosen] and c_s == cut[t, chosen]
    possible = both or not (v_s >= 0 and v_s == var[t, root] and c_s == cut[t, root])
    return sib, both, possible


@numba.njit(cache=True, inline="always")
def restore_rules(t, root, kl, kr, old, var, cut):
    """Put back the rules of ``root`` and its children ``kl``, ``kr`` after a rejected change
    or swap; ``old = (v_root, c_root, v_l, c_l, v_r, c_r)`` as they were before."""
    var[t, root] = old[0]
    cut[t, root] = old[1]
    var[t, kl] = old[2]
    cut[t, kl] = old[3]
    var[t, kr] = old[4]
    cut[t, kr] = old[5]
