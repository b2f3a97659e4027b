"""Grow and prune of the general tree step, written once for every leaf form.

In the general step (bart-math section 9) a move proposes values for the leaves it creates
from their Newton proposals, and the acceptance ratio uses the exact log-likelihood at the
rows the move changes, plus the reverse proposal densities of the leaves it removes, built
the same way from the proposed state (:mod:`pymc_trees.bart.kernels.general`).  A grow or a
prune differs between leaf forms only in the leaves' part: a constant value per output
(``J`` outputs that share their trees: :mod:`~pymc_trees.bart.kernels.general_leaves`) or
a line ``b0 + b1 z`` (:mod:`~pymc_trees.bart.kernels.general_linear`).  :func:`grow` and
:func:`prune` are the tree's part (:mod:`pymc_trees.bart.kernels.tree_edit`) around the
leaves' part, reached through the hooks below, which each form implements with
``numba.extending.overload`` on the type of its bundle, a ``NamedTuple``
(:func:`~pymc_trees.bart.kernels.conjugate_moves.leaf_form_is`; the conjugate sweeps'
:mod:`~pymc_trees.bart.kernels.conjugate_moves` explains why overloads, and not inlined
ones).

The hooks take the form's bundle and numbers only (the bundle holds the arrays they read:
the state, the proposal's :class:`MoveRows`, the sweep's ``idx``, the proposals' buffers):

- ``propose_children(leaves, rng, t, ell, v, mid, cnt, tree_logr)``: draw the two children's
  leaves of a grow of leaf ``ell`` (rows ``idx[:mid]`` left, ``idx[mid:cnt]`` right, split
  on feature v) from their proposals into the form's buffers; returns ``(logr, j)``:
  ``tree_logr`` (the tree's part of the log ratio) plus the new leaves' log prior less the
  old leaf's and the forward proposal densities, and the form's integer about the children
  (the linear leaves' regressor column; 0 for constant leaves);
- ``propose_merged(leaves, rng, t, eta, kl, kr, cnt, struct, pv)``: the same for the merged
  leaf of a prune of node ``eta`` (``struct`` the log ratio of the tree's part of the reverse
  grow, ``pv`` the feature of the split above ``eta``, -1 at the root);
- ``fill_rows(leaves, mid, cnt, j)``: the move's rows into ``mv.rows`` and the term's
  proposed values at them into ``mv.f_prop`` (``mid = cnt`` for a merged leaf);
- ``evaluate(leaves, rows_fn, pre, cnt, logr)``: ``logr`` plus the log-likelihood difference
  at ``mv.rows[:cnt]`` (:mod:`~pymc_trees.bart.kernels.row_calls`), the proposal's
  derivatives kept in ``mv``;
- ``old_leaf_log_q(leaves, t, k, start, end)``: the reverse proposal density of current leaf
  k, its rows ``mv.rows[start:end]``, from the proposed state;
- ``keep_rows(leaves, cnt)``: the proposal's row values into the state;
- ``set_children(leaves, t, ell, kl, kr, j)`` and ``set_merged(leaves, t, eta, kl, kr, cnt,
  j, leaf_of_row)``: the new leaves' values, after the tree's edit (a grow) or before it (a
  prune: its rows relabelled too).

The random numbers are drawn in one order for every form: the proposal's (the leaf and its
rule, or the pair), the new leaves' values, then one uniform for the decision.  The change
and swap stay with each sweep: their move sets differ (the constant leaves change any
internal node with its subtree and swap; linear leaves change a node above two leaves
only).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.bart.kernels.conjugate_moves import leaf_form_is
from pymc_trees.bart.kernels.row_calls import decide
from pymc_trees.bart.kernels.tree_edit import (children_logr, children_masks, grow_tree_logr,
                                               merge_children, pick_prune, propose_split,
                                               prune_tree_logr, split_leaf)

__all__ = ["grow_proposal", "grow", "prune_proposal", "prune", "two_leaf_rows", "MoveRows",
           "move_rows",
           "leaf_form_is", "propose_children", "propose_merged", "fill_rows", "evaluate",
           "old_leaf_log_q", "keep_rows", "set_children", "set_merged"]


def _hook(name: str):
    def hook(*args):
        raise NotImplementedError(
            f"{name} is a hook of the general step's moves, implemented per leaf form with "
            f"numba.extending.overload and callable only from jitted code.")
    hook.__name__ = hook.__qualname__ = name
    return hook


propose_children = _hook("propose_children")
propose_merged = _hook("propose_merged")
fill_rows = _hook("fill_rows")
evaluate = _hook("evaluate")
old_leaf_log_q = _hook("old_leaf_log_q")
keep_rows = _hook("keep_rows")
set_children = _hook("set_children")
set_merged = _hook("set_merged")


class MoveRows(NamedTuple):
    """The row arrays of a move's proposal that the hooks read and write, taken from the
    sweep's buffers (``RowBuffers`` or ``LinearBuffers``: the same fields) once a sweep, so
    that a hook call passes these and not every buffer (numba passes every array of every
    argument field by field: hooks given the sweeps' whole bundles cost 3 to 5% of a
    general sweep).  Per row ``rows``, ``ll_p``, ``fs`` and ``out`` as the row function
    takes them, and (per output and row, or per row) ``f_prop``, ``f_minus``, ``g_p``,
    ``h_p``, ``gc_p``."""

    rows: np.ndarray
    fs: np.ndarray
    out: np.ndarray
    ll_p: np.ndarray
    f_prop: np.ndarray
    f_minus: np.ndarray
    g_p: np.ndarray
    h_p: np.ndarray
    gc_p: np.ndarray


def move_rows(b) -> MoveRows:
    """:class:`MoveRows` of a sweep's buffers (from Python; the kernels build it the same
    way)."""
    return MoveRows(b.rows, b.fs, b.out, b.ll_p, b.f_prop, b.f_minus, b.g_p, b.h_p, b.gc_p)


@numba.njit(cache=True)
def two_leaf_rows(t, kl, kr, leaf_of_row, idx):
    """The rows of leaves kl and kr of tree t into ``idx``, kl's first, each in increasing
    order; returns (cnt, mid)."""
    n = leaf_of_row.shape[1]
    cnt = 0
    for i in range(n):
        idx[cnt] = i
        cnt += leaf_of_row[t, i] == kl
    mid = cnt
    for i in range(n):
        # a branch here: written always, the slot after the last row of kr would be idx[n]
        # when the rows of kl come after it
        if leaf_of_row[t, i] == kr:
            idx[cnt] = i
            cnt += 1
    return cnt, mid


@numba.njit(cache=True, inline="always")
def grow_proposal(rng, t, leaves, data, rules, pg, pp, forest, sc):
    """The proposal of a grow of tree t: a splittable leaf uniformly, its rule from the
    prior, its rows partitioned (``sc.idx[:cnt]``, the left child's ``[:mid]`` first), the
    children's available cutpoints (the last two rows of ``sc.nmask``) and their leaves from
    their proposals (kept in the form's buffers).  Returns ``(ell, v, c, nc, cnt, mid, wL, wR,
    logr, j)`` with ``logr`` the log ratio without the log-likelihood and the old leaf's
    reverse density, ``j`` the form's integer about the children (the linear leaves'
    regressor); ``ell = -1`` when no leaf can split.  ``pg``, ``pp`` the grow and prune
    probabilities."""
    ell, nb, w_new, cnt, v, c, nc, mid = propose_split(rng, t, data, rules.min_leaf, forest,
                                                       sc)
    if ell < 0:
        return -1, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0
    # the children's rules (no random numbers), then their leaves (the draws)
    wL, wR = children_masks(data.XbT, sc.idx, mid, cnt, data.ncuts, data.iscat,
                            rules.min_leaf, data.split_prior, sc.hist, sc.lo, sc.hi, sc.nmask)
    d = forest.depth[t, ell]
    tree_logr = (grow_tree_logr(d, nb, w_new, pg, pp, rules.alpha, rules.beta)
                 + children_logr(d, wL, wR, rules.alpha, rules.beta))
    logr, j = propose_children(leaves, rng, t, ell, v, mid, cnt, tree_logr)
    return ell, v, c, nc, cnt, mid, wL, wR, logr, j


@numba.njit(cache=True, inline="always")
def grow(rng, t, leaves, data, rules, pg, pp, forest, sc, rows_fn, pre):
    """A grow of tree t in the compiled sweep: :func:`grow_proposal`, the log-likelihood at
    the leaf's rows through ``rows_fn`` (with ``pre``), the old leaf's reverse density and
    the decision.  Returns ``(res, cnt)``: -1 when no leaf can split, else 1/0 for
    accepted/rejected, and the number of rows whose proposal the caller resets."""
    ell, v, c, nc, cnt, mid, wL, wR, logr, j = grow_proposal(rng, t, leaves, data, rules, pg,
                                                             pp, forest, sc)
    if ell < 0:
        return -1, 0
    fill_rows(leaves, mid, cnt, j)
    logr = evaluate(leaves, rows_fn, pre, cnt, logr)
    logr += old_leaf_log_q(leaves, t, ell, 0, cnt)
    ok = decide(rng, logr)
    if ok:
        keep_rows(leaves, cnt)
        kl, kr = split_leaf(t, ell, v, c, nc, wL, wR, forest, sc.nmask, sc.idx, mid, cnt)
        set_children(leaves, t, ell, kl, kr, j)
    return (1 if ok else 0), cnt


@numba.njit(cache=True, inline="always")
def prune_proposal(rng, t, leaves, rules, pg, pp, forest, idx):
    """The proposal of a prune of tree t (the reverse of :func:`grow_proposal`): a prunable
    node uniformly, the rows of its two leaves into ``idx`` (the left one's ``[:mid]``
    first), the merged leaf from its proposal (kept in the form's buffers).  Returns ``(eta,
    kl, kr, cnt, mid, logr, j)``, ``logr`` without the log-likelihood and the two leaves'
    reverse densities; ``eta = -1`` when no node is prunable."""
    eta, kl, kr, w, b_new = pick_prune(rng, t, forest)
    if eta < 0:
        return -1, 0, 0, 0, 0, 0.0, 0
    cnt, mid = two_leaf_rows(t, kl, kr, forest.leaf_of_row, idx)
    struct = prune_tree_logr(t, eta, kl, kr, w, b_new, pg, pp, rules.alpha, rules.beta,
                             forest)
    par = forest.parent[t, eta]
    pv = forest.var[t, par] if par >= 0 else -1
    logr, j = propose_merged(leaves, rng, t, eta, kl, kr, cnt, struct, pv)
    return eta, kl, kr, cnt, mid, logr, j


@numba.njit(cache=True, inline="always")
def prune(rng, t, leaves, rules, pg, pp, forest, sc, rows_fn, pre):
    """A prune of tree t in the compiled sweep; returns ``(res, cnt)`` as :func:`grow`."""
    eta, kl, kr, cnt, mid, logr, j = prune_proposal(rng, t, leaves, rules, pg, pp, forest,
                                                    sc.idx)
    if eta < 0:
        return -1, 0
    fill_rows(leaves, cnt, cnt, j)
    logr = evaluate(leaves, rows_fn, pre, cnt, logr)
    logr += (old_leaf_log_q(leaves, t, kl, 0, mid)
             + old_leaf_log_q(leaves, t, kr, mid, cnt))
    ok = decide(rng, logr)
    if ok:
        keep_rows(leaves, cnt)
        set_merged(leaves, t, eta, kl, kr, cnt, j, forest.leaf_of_row)
        merge_children(t, eta, kl, kr, forest)
    return (1 if ok else 0), cnt
