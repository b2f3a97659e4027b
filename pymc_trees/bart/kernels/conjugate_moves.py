"""Grow and prune of the conjugate sweeps, written once for every leaf form.

In a conjugate sweep the leaves are integrated out of a move's acceptance ratio (docs/math.md
sections 2 and 5), so a grow or a prune differs between leaf forms only in the leaves' part: which
per-leaf sums a leaf keeps, how the proposed children's (or the merged leaf's) sums are
taken, and the leaf's log marginal likelihood of them.  :func:`grow` and :func:`prune` are
that move's tree part (:mod:`pymc_trees.bart.kernels.tree_edit`) around the leaf part, which
they reach through the hooks below.  A leaf form is a ``NamedTuple`` of its per-leaf sums
and what taking them needs (``ConstantLeaves`` in :mod:`~pymc_trees.bart.kernels.cgm`,
``LinearLeaves`` in :mod:`~pymc_trees.bart.kernels.linear`), and implements every hook
with ``numba.extending.overload`` chosen by that type (:func:`leaf_form_is`).  numba compiles
:func:`grow` and :func:`prune` once per leaf form and caches them on disk.  The overloads are
not declared ``inline="always"``: with numba 0.68 that IR-level inlining gave wrong trees
(an out-of-range node index in ``tests/bart/test_kernels.py``'s packed-forest test, a
segmentation fault in another).  As plain calls their sweeps keep the speed of the
per-form moves they replace (``docs/explanation/code-layout.md``, "One move per leaf form,
measured").  A
leaf model passed as a jitted function argument instead would not be cached.

The hooks, with ``leaves`` the form's bundle, which also holds the arrays of the rows its
hooks read (the binned data ``Xb``, ``XbT``, the tree's rows' leaves, the sweep's ``idx``,
``lo`` and ``tmp``): a hook takes that bundle and numbers only, since numba passes every
array of every argument field by field and the moves are called per tree (hooks taking the
sweep's whole bundles made a grow/prune sweep at 10,000 rows about 4% slower).

- ``leaf_score(leaves, k)``: leaf k's log marginal likelihood, from its kept sums;
- ``children_sums(leaves, rng, t, ell, v, c, min_leaf)``: the sums of leaf ``ell``'s two
  children under rule ``(v, c)``, as ``(ch, cnt, mid, c)``: ``ch`` the form's sums of both
  children, ``cnt`` the leaf's rows, ``mid`` the left child's rows when ``leaves.idx[:cnt]``
  already holds the rows partitioned (else -1), ``c`` the rule (a categorical rule's levels
  are drawn here, once the leaf's rows are known);
- ``children_score(leaves, ch)``: the two children's log marginal likelihoods, summed;
- ``partitioned_rows(leaves, t, ell, cnt, mid, v, c)``: ``(cnt, mid)`` with the leaf's rows
  in ``leaves.idx[:cnt]``, the left child's first;
- ``set_children(leaves, t, ell, kl, kr, ch)``: keep the new leaves' sums;
- ``merged_sums(leaves, t, eta, kl, kr, pv)``: the sums of the leaf a prune of node ``eta``
  (leaves ``kl``, ``kr``; ``pv`` the feature of the split above ``eta``, -1 at the root)
  would leave, ``merged_score(leaves, mg)`` its log marginal likelihood, ``set_merged(leaves,
  t, eta, kl, kr, mg)``: its rows and sums kept, before the tree's edit.

CGM's change and swap (:func:`restructure`: any internal node's rule drawn anew, or a
parent's rule exchanged with its child's, the subtree's rows routed anew) are written once
too, for the forms with CGM's move set (constant and log-gamma leaves), with four more
hooks:

- ``subtree_score(leaves, t, root, cnt, data, rules, forest, scratch)``: the proposed
  subtree's ``log p_split`` of its internal nodes plus its leaves' log marginal likelihoods
  (an upper bound of its log factor: :func:`prior_subtree` adds the rest, all at most 1),
  the leaves' sums left in ``scratch.nW``, ``scratch.nS``, and whether it routed the rows
  into the node segments already;
- ``fused_change(leaves)``: whether the sweep's pass summed a change's two new leaves
  (``fused_change_score(leaves, t, root, kl, kr, rules, forest, scratch)`` then gives that
  bound from them, without the rows);
- ``leaf_sums(leaves)``: the two arrays of the kept per-leaf sums, which an accepted move
  sets from ``scratch.nW``, ``scratch.nS``.

:func:`old_subtree` reads the current subtree's leaves through ``leaf_score``, so the
general step uses it with a bundle of its own leaves' prior.  The linear sweeps keep their
change (a node above two leaves, no swap: another move set, fixed probabilities).

The random numbers are drawn in one order for every form: the proposal's (the leaf, then
the rule: :func:`grow_proposal`; a change's node and rule: :func:`restructure_proposal`; a
categorical rule's levels once the rows are known), then one uniform for the decision.
"""

from __future__ import annotations

import numba
from numba.core import types

import math

from pymc_trees.bart.kernels.forest import load_mask
from pymc_trees.bart.kernels.nodes import draw_levels, draw_rule, log_1m_psplit, log_psplit
from pymc_trees.bart.kernels.tree_edit import (SPLITTABLE_LEAF, accept_move, accept_u,
                                               children_logr, children_masks, collect_subtree_rows,
                                               commit_subtree, count_nodes, grow_tree_logr,
                                               merge_children, pick_node, pick_prune,
                                               pick_restructure, prior_subtree, prunable_after_grow,
                                               prune_tree_logr, restore_rules, route_segments,
                                               split_leaf, swap_partner, swap_rules)

__all__ = ["grow_proposal", "grow", "prune", "prune_picked", "restructure_proposal",
           "restructure", "old_subtree", "leaf_form_is", "leaf_score", "children_sums",
           "children_score", "partitioned_rows", "set_children", "merged_sums",
           "merged_score", "set_merged", "subtree_score", "fused_change", "fused_change_score",
           "leaf_sums"]


def leaf_form_is(leaves, cls) -> bool:
    """In an ``overload`` of a hook: whether the numba type ``leaves`` is the leaf form
    ``cls`` (a ``NamedTuple`` class)."""
    return isinstance(leaves, types.BaseNamedTuple) and leaves.instance_class is cls


def _hook(name: str):
    def hook(*args):
        raise NotImplementedError(
            f"{name} is a hook of the conjugate moves, implemented per leaf form with "
            f"numba.extending.overload and callable only from jitted code.")
    hook.__name__ = hook.__qualname__ = name
    return hook


leaf_score = _hook("leaf_score")
children_sums = _hook("children_sums")
children_score = _hook("children_score")
partitioned_rows = _hook("partitioned_rows")
set_children = _hook("set_children")
merged_sums = _hook("merged_sums")
merged_score = _hook("merged_score")
set_merged = _hook("set_merged")
subtree_score = _hook("subtree_score")
fused_change = _hook("fused_change")
fused_change_score = _hook("fused_change_score")
leaf_sums = _hook("leaf_sums")


@numba.njit(cache=True, inline="always")
def grow_proposal(rng, t, split_prior, forest, lo, hi):
    """The part of a grow's proposal that the tree alone decides, which reads no residual
    (so that the constant sweep can draw it before its pass over the rows): a splittable
    leaf uniformly, then a feature and a cutpoint from the prior (:func:`draw_rule`; for a
    categorical feature the set of levels is drawn once the leaf's rows are known, in
    ``children_sums``).  Returns ``(leaf, b, w_new, v, c, nc)``, ``b`` the tree's
    splittable leaves, ``w_new`` its prunable nodes after the grow; ``leaf = -1`` when no
    leaf can split.  Leaves the leaf's available cutpoints in ``lo``, ``hi``.  The random
    numbers are drawn in the order :func:`~pymc_trees.bart.kernels.tree_edit.pick_split`
    draws them."""
    var, left, right, parent, wavail = (forest.var, forest.left, forest.right, forest.parent,
                                        forest.wavail)
    n_nodes = forest.n_nodes
    b = count_nodes(t, SPLITTABLE_LEAF, var, left, right, parent, wavail, n_nodes)
    if b == 0:
        return -1, 0, 0, 0, 0, 0
    ell = pick_node(rng, t, SPLITTABLE_LEAF, b, var, left, right, parent, wavail, n_nodes)
    w_new = prunable_after_grow(t, ell, var, left, right, parent, wavail, n_nodes)
    load_mask(forest.amask, t, ell, lo, hi)
    v, c, nc = draw_rule(rng, lo, hi, split_prior, wavail[t, ell])
    return ell, b, w_new, v, c, nc


@numba.njit(cache=True, inline="always")
def grow(rng, t, proposal, leaves, data, rules, pg, pp, forest, scratch):
    """The grow :func:`grow_proposal` drew (``proposal``), with the leaves integrated out:
    -1 when no leaf can split, else 1/0 for accepted/rejected.  ``pg``, ``pp`` the grow and
    prune probabilities; ``data``, ``rules``, ``forest``, ``scratch`` the
    :class:`SweepData`, :class:`TreeRules`, ``ForestArrays`` and :class:`SweepScratch`;
    ``leaves`` the leaf form's bundle (module doc).  The children's availability enters only
    through their factors ``log(1 - p_split(d + 1)) <= 0``, so the log ratio without them
    bounds the full one from above: when the bound already rejects, the leaf's rows are not
    partitioned nor the children's rules counted (the same decision as with the full
    ratio)."""
    ell, b, w_new, v, c, nc = proposal
    if ell < 0:
        return -1
    ch, cnt, mid, c = children_sums(leaves, rng, t, ell, v, c, rules.min_leaf)
    d = forest.depth[t, ell]
    logr = (children_score(leaves, ch) - leaf_score(leaves, ell)
            + grow_tree_logr(d, b, w_new, pg, pp, rules.alpha, rules.beta))
    u = rng.random()
    if not accept_u(u, logr):
        return 0
    cnt, mid = partitioned_rows(leaves, t, ell, cnt, mid, v, c)
    idx = scratch.idx
    wL, wR = children_masks(data, idx, mid, cnt, rules.min_leaf, scratch)
    logr += children_logr(d, wL, wR, rules.alpha, rules.beta)
    if not accept_u(u, logr):
        return 0
    kl, kr = split_leaf(t, ell, v, c, nc, wL, wR, forest, scratch.nmask, idx, mid, cnt)
    set_children(leaves, t, ell, kl, kr, ch)
    return 1


@numba.njit(cache=True, inline="always")
def prune(rng, t, leaves, rules, pg, pp, forest, scratch):
    """A prune of tree t, the reverse of :func:`grow`: a prunable node uniformly, its two
    leaves merged when accepted; -1 when no node is prunable, else 1/0 for
    accepted/rejected."""
    return prune_picked(rng, t, pick_prune(rng, t, forest), leaves, rules, pg, pp, forest,
                        scratch)


@numba.njit(cache=True, inline="always")
def prune_picked(rng, t, pick, leaves, rules, pg, pp, forest, scratch):
    """:func:`prune` once its node is picked (``pick``, from
    :func:`~pymc_trees.bart.kernels.tree_edit.pick_prune`, which reads the tree alone: a sweep
    that sums the merged leaf's rows in its pass over the rows picks the node before it)."""
    eta, kl, kr, w, b_new = pick
    if eta < 0:
        return -1
    par = forest.parent[t, eta]
    mg = merged_sums(leaves, t, eta, kl, kr, forest.var[t, par] if par >= 0 else -1)
    grow_logr = (leaf_score(leaves, kl) + leaf_score(leaves, kr) - merged_score(leaves, mg)
                 + prune_tree_logr(t, eta, kl, kr, w, b_new, pg, pp, rules.alpha, rules.beta,
                                   forest))
    if not accept_move(rng, -grow_logr):
        return 0
    set_merged(leaves, t, eta, kl, kr, mg)
    merge_children(t, eta, kl, kr, forest)
    return 1


@numba.njit(cache=True)
def restructure_proposal(rng, is_swap, t, split_prior, forest, lo, hi):
    """The part of a change's or a swap's proposal that the tree alone decides, which a sweep
    may draw before its pass over the rows: the node (a change) or the child of the
    parent-child pair (a swap) uniformly (:func:`pick_restructure`), and for a change the new
    rule's feature and cutpoint from the prior at the node (as :func:`grow_proposal`; the
    node keeps its rows, hence its available cutpoints, which are left in ``lo``, ``hi``).
    Returns ``(node, v, c)``, ``node = -1`` when no node qualifies."""
    chosen, _, _, _ = pick_restructure(rng, is_swap, t, forest)
    if chosen < 0 or is_swap:
        return chosen, 0, 0
    load_mask(forest.amask, t, chosen, lo, hi)
    v, c, _ = draw_rule(rng, lo, hi, split_prior, forest.wavail[t, chosen])
    return chosen, v, c


@numba.njit(cache=True)
def old_subtree(t, root, skip_root_rule, forest, leaves, split_prior, rules, stack):
    """The current subtree below ``root``: its log prior factors (``p_split`` of its internal
    nodes and their rules' probabilities, but the root's with ``skip_root_rule``,
    ``1 - p_split`` of its leaves) plus its leaves' ``leaf_score``, in one traversal."""
    alpha, beta = rules.alpha, rules.beta
    var, left, right, depth = forest.var, forest.left, forest.right, forest.depth
    wavail, ncut = forest.wavail, forest.ncut
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
            total += leaf_score(leaves, k)
    return total


@numba.njit(cache=True, inline="always")
def restructure(rng, is_swap, t, proposal, leaves, data, rules, forest, scratch):
    """CGM's change or swap (docs/math.md section 5) with the leaves integrated out, after
    the sweep's pass over the rows: ``proposal = (node, v, c)`` from
    :func:`restructure_proposal`.  The subtree's prior factors and leaf marginals before
    (:func:`old_subtree`) and after (``subtree_score``, or ``fused_change_score`` when the
    pass summed a change's new leaves): their ratio without the new subtree's rule and leaf
    factors, all at most 1, bounds the full one, so the rows are routed and the rules'
    availability counted only when that bound does not already reject (the same decision,
    with the same uniform).  -1 when no node qualifies, else 1/0 for accepted/rejected."""
    chosen, v_new, c_new = proposal
    if chosen < 0:
        return -1
    var, cut, left, right = forest.var, forest.cut, forest.left, forest.right
    lo, hi, idx, stack = scratch.lo, scratch.hi, scratch.idx, scratch.stack
    root = forest.parent[t, chosen] if is_swap else chosen
    kl = left[t, root]
    kr = right[t, root]
    old_rules = (var[t, root], cut[t, root], var[t, kl], cut[t, kl], var[t, kr], cut[t, kr])
    both = False
    sib = kl
    if is_swap:
        sib, both, possible = swap_partner(t, chosen, root, kl, kr, var, cut)
        if not possible:
            return 0
    root_wsum = forest.wavail[t, root]
    fused = fused_change(leaves)
    cnt = 0
    routed = False
    if fused:
        old = old_subtree(t, root, True, forest, leaves, data.split_prior, rules, stack)
        var[t, root] = v_new
        cut[t, root] = c_new
        bound = fused_change_score(leaves, t, root, kl, kr, rules, forest, scratch) - old
    else:
        cnt = collect_subtree_rows(t, root, var, left, right, forest.leaf_of_row, stack,
                                   scratch.in_sub, idx)
        old = old_subtree(t, root, not is_swap, forest, leaves, data.split_prior, rules, stack)
        if is_swap:
            swap_rules(t, root, chosen, sib, both, var, cut)
            # the subtree's root keeps its rows, hence its available cutpoints
            load_mask(forest.amask, t, root, lo, hi)
        else:
            if lo[v_new] < 0:
                c_new = draw_levels(rng, lo, v_new, data.Xb, idx, 0, cnt, rules.min_leaf)
            var[t, root] = v_new
            cut[t, root] = c_new
        new, routed = subtree_score(leaves, t, root, cnt, data, rules, forest, scratch)
        bound = new - old
    u = rng.random()
    accept = accept_u(u, bound)
    if accept:
        if fused:
            cnt = collect_subtree_rows(t, root, var, left, right, forest.leaf_of_row, stack,
                                       scratch.in_sub, idx)
        if not routed:
            route_segments(t, root, cnt, data.XbT, forest, scratch)
        rest, valid = prior_subtree(t, root, not is_swap, root_wsum, data, rules, forest,
                                     scratch)
        accept = valid and accept_u(u, bound + rest)
    if accept:
        S0, S1 = leaf_sums(leaves)
        commit_subtree(t, root, forest, scratch, S0, S1, scratch.nW, scratch.nS)
        return 1
    restore_rules(t, root, kl, kr, old_rules, var, cut)
    return 0

