"""Independent draws of trees from the BART prior (docs/math.md section 3).

Trees are generated top-down, breadth-first: a node at depth d with an available rule splits
with probability ``alpha (1 + d)^-beta``, its rule drawn from the prior; leaves get
``Normal(0, leaf_sd^2)`` values.  The same available-cutpoint rule as the samplers is used.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_trees.bart.kernels.bundles import TreeRules
from pymc_trees.bart.kernels.forest import FREE, LEAF, Forest, mask_dtype, mask_width, store_mask
from pymc_trees.bart.kernels.nodes import draw_node_rule, node_availability, partition, split_node

__all__ = ["sample_prior_tree", "sample_prior_forest", "max_tree_nodes"]


def max_tree_nodes(n: int, min_leaf: int) -> int:
    """Upper bound on the nodes of a tree over n rows in which every leaf keeps min_leaf rows."""
    return max(1, 2 * (n // max(min_leaf, 1)) - 1)


@numba.njit(cache=True)
def sample_prior_tree(rng, t, Xb, ncuts, iscat, split_prior, rules, leaf_sd, forest, bufs):
    """Overwrite tree ``t`` of ``forest`` (a ``ForestArrays``) with a draw from the prior
    (``rules`` a ``TreeRules``, its ``prec0`` unused; leaf values ``Normal(0, leaf_sd^2)``);
    slots are filled in breadth-first order.  ``bufs = (idx, hist, lo, hi, seg_s, seg_e)``
    are scratch: ``idx`` (n,), ``hist``, ``lo``, ``hi`` and ``seg_s``, ``seg_e`` (node
    capacity)."""
    idx, hist, lo, hi, seg_s, seg_e = bufs
    min_leaf, alpha, beta, _ = rules
    (var, cut, left, right, parent, depth, value, wavail, ncut, amask, n_nodes, _, n_free,
     leaf_of_row) = forest
    n = Xb.shape[0]
    for i in range(n):
        idx[i] = i
    n_nodes[t] = 1
    n_free[t] = 0
    var[t, 0] = LEAF
    parent[t, 0] = -1
    depth[t, 0] = 0
    seg_s[0] = 0
    seg_e[0] = n
    q = 0
    while q < n_nodes[t]:
        k = q
        q += 1
        s = seg_s[k]
        e = seg_e[k]
        d = depth[t, k]
        wsum = node_availability(Xb, idx, s, e, ncuts, iscat, min_leaf, split_prior, hist, lo, hi)
        wavail[t, k] = wsum
        store_mask(amask, t, k, lo, hi)
        left[t, k] = -1
        right[t, k] = -1
        if wsum > 0.0 and rng.random() < alpha * (1.0 + d) ** (-beta):
            v, c, nc = draw_node_rule(rng, lo, hi, split_prior, wsum, Xb, idx, s, e, min_leaf)
            mid = partition(Xb, idx, s, e, v, c)
            kl = n_nodes[t]
            kr = kl + 1
            n_nodes[t] += 2
            split_node(t, k, v, c, nc, kl, kr, forest)
            seg_s[kl] = s
            seg_e[kl] = mid
            seg_s[kr] = mid
            seg_e[kr] = e
        else:
            var[t, k] = LEAF
            value[t, k] = leaf_sd * rng.standard_normal()
            for j in range(s, e):
                leaf_of_row[t, idx[j]] = k
    for k in range(n_nodes[t], var.shape[1]):
        var[t, k] = FREE


def sample_prior_forest(rng: np.random.Generator, Xb: np.ndarray, ncuts: np.ndarray,
                        iscat: np.ndarray,
                        split_prior: np.ndarray, m: int, min_leaf: int, alpha: float,
                        beta: float, leaf_sd: float) -> Forest:
    """m independent trees from the prior, as a compact :class:`Forest`."""
    from pymc_trees.bart.kernels.forest import new_forest

    n, p = Xb.shape
    K = max_tree_nodes(n, min_leaf)
    # every node's mask, the root's included, is written by sample_prior_tree
    root_mask = np.zeros(mask_width(p), mask_dtype(ncuts, iscat))
    one = new_forest(1, n, 0.0, capacity=K, root_mask=root_mask)
    hist = np.zeros((p, int(ncuts.max(initial=0)) + 1), np.int32)
    lo = np.zeros(p, np.int32)
    hi = np.zeros(p, np.int32)
    idx = np.zeros(n, np.int32)
    seg_s = np.zeros(K, np.int32)
    seg_e = np.zeros(K, np.int32)
    rules = TreeRules(min_leaf, alpha, beta, 0.0)  # as given: their types decide the powers
    arrays = one.arrays()
    trees = []
    for _ in range(m):
        sample_prior_tree(rng, 0, Xb, ncuts, iscat, split_prior, rules, leaf_sd, arrays,
                          (idx, hist, lo, hi, seg_s, seg_e))
        trees.append(one.copy())
    cap = int(max(tr.n_nodes[0] for tr in trees))
    out = new_forest(m, n, 0.0, capacity=cap, root_mask=root_mask)
    for t, tr in enumerate(trees):
        for name in ("var", "cut", "left", "right", "parent", "depth", "value", "wavail", "ncut",
                     "amask"):
            getattr(out, name)[t] = getattr(tr, name)[0, :cap]
        out.n_nodes[t] = tr.n_nodes[0]
        out.leaf_of_row[t] = tr.leaf_of_row[0]
    return out
