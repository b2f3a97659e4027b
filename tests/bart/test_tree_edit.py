"""The tree's part of each move (``bart/kernels/tree_edit.py``), which every sweep calls, against
naive code: the tree prior of whole trees written here as a walk over nodes, and the counts of
splittable leaves and prunable nodes taken by hand.  Exact (no sampling): a wrong term, a missing
availability factor or a miscounted proposal fails at the first tree that shows it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_trees.bart.kernels.forest import LEAF, new_forest
from pymc_trees.bart.kernels.nodes import split_node
from pymc_trees.bart.kernels.tree_edit import (children_logr, grow_tree_logr, merge_children,
                                               pair_children_logr, pick_prune, prune_tree_logr,
                                               split_leaf)

ALPHA, BETA = 0.95, 2.0


def _random_tree(rng, n_splits):
    """One tree (t = 0) grown by ``n_splits`` splits of random leaves, every node given a
    random available weight: positive at an internal node (its own rule is available), 0 at
    about a third of the leaves (a leaf that cannot split)."""
    f = new_forest(1, 4, 1.0, np.zeros(2, np.int16), capacity=2 * n_splits + 3)
    for _ in range(n_splits):
        leaves = [k for k in range(f.n_nodes[0]) if f.var[0, k] == LEAF]
        k = leaves[rng.integers(len(leaves))]
        kl, kr = f.n_nodes[0], f.n_nodes[0] + 1
        f.n_nodes[0] += 2
        split_node(0, k, 0, 0, 1, kl, kr, f.arrays())
    k = f.n_nodes[0]
    leaf = f.var[0, :k] == LEAF
    f.wavail[0, :k] = np.where(leaf & (rng.uniform(size=k) < 0.35), 0.0,
                               rng.uniform(0.5, 2.0, size=k))
    return f


def _log_p(d):
    return math.log(ALPHA * (1.0 + d) ** -BETA)


def _prior(f, wavail=None):
    """Naive structural log prior of tree 0: a split at every internal node, ``1 - p_split``
    at every leaf that could split (positive available weight)."""
    wavail = f.wavail[0] if wavail is None else wavail
    total, stack = 0.0, [0]
    while stack:
        k = stack.pop()
        d = int(f.depth[0, k])
        if f.var[0, k] == LEAF:
            if wavail[k] > 0:
                total += math.log(1.0 - ALPHA * (1.0 + d) ** -BETA)
        else:
            total += _log_p(d)
            stack += [int(f.left[0, k]), int(f.right[0, k])]
    return total


def _nodes(f):
    stack, out = [0], []
    while stack:
        k = stack.pop()
        out.append(k)
        if f.var[0, k] != LEAF:
            stack += [int(f.left[0, k]), int(f.right[0, k])]
    return out


def _prunable(f):
    return [k for k in _nodes(f) if f.var[0, k] != LEAF and f.var[0, f.left[0, k]] == LEAF
            and f.var[0, f.right[0, k]] == LEAF]


def _splittable(f):
    return [k for k in _nodes(f) if f.var[0, k] == LEAF and f.wavail[0, k] > 0]


@pytest.mark.parametrize("seed", range(6))
def test_prune_and_change_tree_parts_are_the_prior_ratio_of_whole_trees(seed):
    rng = np.random.default_rng(seed)
    f = _random_tree(rng, 1 + seed)
    pg, pp = 0.3, 0.2
    prunable = _prunable(f)
    for eta in prunable:
        kl, kr = int(f.left[0, eta]), int(f.right[0, eta])
        # prune: the merged tree has eta as a leaf with its own available weight
        merged = f.copy()
        merged.var[0, eta] = LEAF
        b_new = len(_splittable(merged))
        want = (_prior(f) - _prior(merged) + math.log(pp * b_new)
                - math.log(pg * len(prunable)))
        got = prune_tree_logr(0, eta, kl, kr, len(prunable), b_new, pg, pp, ALPHA, BETA,
                              f.arrays())
        assert got == pytest.approx(want, abs=1e-12)
        # change at eta: the children's available weights become wL, wR
        for wL, wR in ((0.0, 1.0), (1.0, 0.0), (1.0, 1.0), (0.0, 0.0)):
            new = f.wavail[0].copy()
            new[kl], new[kr] = wL, wR
            got = pair_children_logr(0, eta, kl, kr, wL, wR, ALPHA, BETA, f.arrays())
            assert got == pytest.approx(_prior(f, new) - _prior(f), abs=1e-12)
    # the prune pick: its node is prunable, its counts are the tree's
    for _ in range(5):
        eta, kl, kr, w, b_new = pick_prune(rng, 0, f.arrays())
        if not prunable:
            assert eta == -1
            break
        assert eta in prunable and (kl, kr) == (f.left[0, eta], f.right[0, eta])
        merged = f.copy()
        merged.var[0, eta] = LEAF
        assert (w, b_new) == (len(prunable), len(_splittable(merged)))


@pytest.mark.parametrize("seed", range(6))
def test_a_grow_and_the_prune_that_undoes_it_are_inverse_moves(seed):
    """The grow's tree part at every splittable leaf is the prior ratio plus the proposal's,
    and the prune that undoes the split returns exactly its negative; the edits restore the
    tree."""
    rng = np.random.default_rng(100 + seed)
    f = _random_tree(rng, seed)
    pg, pp = 0.4, 0.25
    for ell in _splittable(f):
        nb, w_before = len(_splittable(f)), len(_prunable(f))
        g = f.copy()
        g.ensure_capacity(g.n_nodes[0] + 2)
        wL, wR = rng.choice([0.0, 1.5], size=2)
        nmask = np.zeros((1, g.capacity + 2, 2), np.int16)
        idx = np.arange(4, dtype=np.int64)
        kl, kr = split_leaf(0, ell, 0, 0, 1, wL, wR, g.arrays(), nmask, idx, 2, 4)
        w_new = len(_prunable(g))
        d = int(f.depth[0, ell])
        want = (_prior(g) - _prior(f) + math.log(pp * nb) - math.log(pg * w_new))
        got = grow_tree_logr(d, nb, w_new, pg, pp, ALPHA, BETA) + children_logr(d, wL, wR,
                                                                                  ALPHA, BETA)
        assert got == pytest.approx(want, abs=1e-12)
        assert w_new in (w_before, w_before + 1)
        # the prune of the new node: the same ratio
        back = prune_tree_logr(0, ell, kl, kr, w_new, nb, pg, pp, ALPHA, BETA, g.arrays())
        assert back == pytest.approx(want, abs=1e-12)
        merge_children(0, ell, kl, kr, g.arrays())
        assert g.var[0, ell] == LEAF and _nodes(g) == _nodes(f)
