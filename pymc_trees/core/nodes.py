"""Per-node kernels shared by every sampler: available rules, rule draws, partitions, leaf
sufficient statistics, marginal likelihood and the exact leaf draw (bart-math sections 2-3).

Available-cutpoint rule (one rule for every sampler and for prior draws): cutpoint ``k`` of
feature ``v`` is available at a node when it sends at least ``min_leaf`` of the node's training
rows to each side.  A node is splittable when some feature with positive ``split_prior`` weight
has an available cutpoint.
"""

from __future__ import annotations

import math

import numba

from .forest import FREE, LEAF

__all__ = [
    "node_availability",
    "availability_from_hist",
    "count_bins",
    "draw_rule",
    "partition",
    "log_ml",
    "log_psplit",
    "log_1m_psplit",
    "alloc_node",
    "free_node",
    "split_node",
]


@numba.njit(cache=True, inline="always")
def log_ml(W, S, prec0):
    """Leaf log marginal likelihood up to the partition-free bracket of bart-math section 2."""
    P = W + prec0
    return 0.5 * math.log(prec0 / P) + 0.5 * S * S / P


@numba.njit(cache=True, inline="always")
def log_psplit(depth, alpha, beta):
    return math.log(alpha) - beta * math.log(1.0 + depth)


@numba.njit(cache=True, inline="always")
def log_1m_psplit(depth, alpha, beta, splittable):
    """log(1 - p_split(depth)) for a splittable leaf, 0 for an unsplittable one."""
    if not splittable:
        return 0.0
    return math.log1p(-alpha * (1.0 + depth) ** (-beta))


@numba.njit(cache=True)
def node_availability(Xb, idx, start, end, ncuts, min_leaf, split_prior, hist, lo, hi):
    """Available cutpoints at a node holding rows ``idx[start:end]``.

    Writes, for every feature ``v``, the inclusive range ``lo[v]..hi[v]`` of available cut
    indices (empty when ``lo[v] > hi[v]``) and returns the sum of ``split_prior`` over the
    features whose range is non-empty.  ``hist`` is scratch of shape (p, max_cuts + 1).
    """
    p = Xb.shape[1]
    cnt = end - start
    wsum = 0.0
    if cnt < 2 * min_leaf:
        for v in range(p):
            lo[v] = 1
            hi[v] = 0
        return wsum
    count_bins(Xb, idx, start, end, ncuts, hist)
    return availability_from_hist(hist, cnt, ncuts, min_leaf, split_prior, lo, hi)


@numba.njit(cache=True)
def count_bins(Xb, idx, start, end, ncuts, hist):
    """``hist[v, b]`` = number of rows ``idx[start:end]`` in bin ``b`` of feature ``v``."""
    p = Xb.shape[1]
    for v in range(p):
        for b in range(ncuts[v] + 1):
            hist[v, b] = 0
    # rows outer: one gather of the row's p bins, p independent counters to add to
    for t in range(start, end):
        i = idx[t]
        for v in range(p):
            hist[v, Xb[i, v]] += 1


@numba.njit(cache=True)
def availability_from_hist(hist, cnt, ncuts, min_leaf, split_prior, lo, hi):
    """The available cutpoints of :func:`node_availability`, from the node's row count ``cnt``
    and its per-feature bin counts ``hist[v, :ncuts[v] + 1]``."""
    p = ncuts.shape[0]
    wsum = 0.0
    if cnt < 2 * min_leaf:
        for v in range(p):
            lo[v] = 1
            hi[v] = 0
        return wsum
    for v in range(p):
        nc = ncuts[v]
        if nc == 0 or split_prior[v] <= 0.0:
            lo[v] = 1
            hi[v] = 0
            continue
        h = hist[v]
        # lo: smallest k with #(bin <= k) >= min_leaf
        acc = 0
        k = 0
        while k < nc:
            acc += h[k]
            if acc >= min_leaf:
                break
            k += 1
        lo[v] = k
        # hi: largest k with #(bin > k) >= min_leaf
        acc = 0
        k = nc - 1
        while k >= 0:
            acc += h[k + 1]
            if acc >= min_leaf:
                break
            k -= 1
        hi[v] = k
        if lo[v] <= hi[v]:
            wsum += split_prior[v]
    return wsum


@numba.njit(cache=True)
def draw_rule(rng, lo, hi, split_prior, wsum):
    """Draw a rule from the prior at a node: feature with probability proportional to
    ``split_prior`` among available features, then a cutpoint uniformly among its available ones.
    Returns ``(v, k, ncut_v)``."""
    u = rng.random() * wsum
    p = lo.shape[0]
    v = -1
    acc = 0.0
    for j in range(p):
        if lo[j] <= hi[j]:
            acc += split_prior[j]
            v = j
            if u < acc:
                break
    nc = hi[v] - lo[v] + 1
    k = lo[v] + min(int(rng.random() * nc), nc - 1)
    return v, k, nc


@numba.njit(cache=True)
def partition(Xb, idx, start, end, v, k):
    """Reorder ``idx[start:end]`` so rows with ``Xb[i, v] <= k`` come first; return the split
    position."""
    i = start
    j = end - 1
    while True:
        while i <= j and Xb[idx[i], v] <= k:
            i += 1
        while i <= j and Xb[idx[j], v] > k:
            j -= 1
        if i >= j:
            break
        tmp = idx[i]
        idx[i] = idx[j]
        idx[j] = tmp
        i += 1
        j -= 1
    return i


@numba.njit(cache=True)
def alloc_node(t, var, n_nodes, free, n_free):
    """Take a free slot of tree ``t`` (the caller guarantees capacity)."""
    if n_free[t] > 0:
        n_free[t] -= 1
        return free[t, n_free[t]]
    k = n_nodes[t]
    n_nodes[t] += 1
    return k


@numba.njit(cache=True)
def free_node(t, k, var, free, n_free):
    var[t, k] = FREE
    free[t, n_free[t]] = k
    n_free[t] += 1


@numba.njit(cache=True, inline="always")
def split_node(t, k, v, c, nc, kl, kr, var, cut, ncut, left, right, parent, depth):
    """Make node k of tree t internal with rule (v, c) (nc available cutpoints of v) and leaf
    children in slots kl, kr."""
    d = depth[t, k]
    var[t, k] = v
    cut[t, k] = c
    ncut[t, k] = nc
    left[t, k] = kl
    right[t, k] = kr
    var[t, kl] = LEAF
    var[t, kr] = LEAF
    left[t, kl] = -1
    left[t, kr] = -1
    right[t, kl] = -1
    right[t, kr] = -1
    parent[t, kl] = k
    parent[t, kr] = k
    depth[t, kl] = d + 1
    depth[t, kr] = d + 1


@numba.njit(cache=True)
def draw_leaf_values(rng, t, var, value, n_nodes, W, S, prec0):
    """Exact conditional draw of every leaf value of tree ``t`` from its ``(W, S)``."""
    for k in range(n_nodes[t]):
        if var[t, k] == LEAF:
            P = W[k] + prec0
            value[t, k] = S[k] / P + rng.standard_normal() / math.sqrt(P)
