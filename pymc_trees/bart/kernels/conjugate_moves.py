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

The random numbers are drawn in one order for every form: the proposal's (the leaf, then
the rule: :func:`grow_proposal`; a categorical rule's levels in ``children_sums``), then
one uniform for the decision.  The change and swap stay with each sweep: their move sets
differ (``cgm`` changes any internal node with its subtree and swaps; the linear sweep
changes a node above two leaves only), so one function would change the draws of one of
them.
"""

from __future__ import annotations

import numba
from numba.core import types

from pymc_trees.bart.kernels.forest import load_mask
from pymc_trees.bart.kernels.nodes import draw_rule
from pymc_trees.bart.kernels.tree_edit import (SPLITTABLE_LEAF, accept_move, accept_u,
                                               children_logr, children_masks, count_nodes,
                                               grow_tree_logr, merge_children, pick_node,
                                               pick_prune, prunable_after_grow,
                                               prune_tree_logr, split_leaf)

__all__ = ["grow_proposal", "grow", "prune", "prune_picked", "leaf_form_is", "leaf_score", "children_sums",
           "children_score", "partitioned_rows", "set_children", "merged_sums",
           "merged_score", "set_merged"]


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
    wL, wR = children_masks(data.XbT, idx, mid, cnt, data.ncuts, data.iscat, rules.min_leaf,
                            data.split_prior, scratch.hist, scratch.lo, scratch.hi,
                            scratch.nmask)
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
