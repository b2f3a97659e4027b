"""Per-node kernels shared by every sampler: available rules, rule draws, partitions, leaf
sufficient statistics, marginal likelihood and the exact leaf draw (docs/math.md sections 2-3).

Available-cutpoint rule (one rule for every sampler and for prior draws): cutpoint ``k`` of
feature ``v`` is available at a node when it sends at least ``min_leaf`` of the node's training
rows to each side.  A node is splittable when some feature with positive ``split_prior`` weight
has an available cutpoint.

Rules.  A numeric rule is a cut index ``c >= 0``: a row goes left when its bin is ``<= c``.  A
categorical feature (``iscat[v]``; its bins are level codes) splits by a set ``S`` of levels
that go left, stored as the negative number ``c = ~S`` (bit ``b`` of ``S`` for level ``b``), so
that one integer per node holds either kind and :func:`goes_left` tells them apart by sign.
``S`` is a subset of the levels present at the node (canonical: no bit of an absent level),
neither empty nor all of them, and it must leave ``min_leaf`` rows on each side; the prior is
uniform over those subsets.

Available rules of a feature are kept as an inclusive range ``lo[v] .. hi[v]`` whose length
``hi - lo + 1`` is their number (empty, ``lo > hi``, when there are none).  A numeric feature's
range is the available cut indices themselves (``lo >= 0``).  A categorical feature's is
``lo = -P``, ``hi = N - 1 - P`` with ``P`` the bit set of the levels present at the node and
``N`` the number of valid subsets, so ``lo < 0`` marks an available categorical feature and
the count reads the same way for both kinds.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import FREE, LEAF

__all__ = [
    "node_availability",
    "availability_from_hist",
    "availability_below",
    "count_bins",
    "draw_rule",
    "partition",
    "goes_left",
    "draw_node_rule",
    "draw_levels",
    "draw_level_set",
    "rule_valid",
    "log_ml",
    "log_psplit",
    "log_1m_psplit",
    "alloc_node",
    "free_node",
    "split_node",
]


@numba.njit(cache=True, inline="always")
def log_ml(W, S, prec0):
    """Leaf log marginal likelihood up to the partition-free bracket of docs/math.md section 2."""
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


@numba.njit(cache=True, inline="always")
def _none_available(lo, hi):
    """No feature has an available rule (every range empty); returns their weight, 0."""
    for v in range(lo.shape[0]):
        lo[v] = 1
        hi[v] = 0
    return 0.0


@numba.njit(cache=True)
def node_availability(Xb, idx, start, end, ncuts, iscat, min_leaf, split_prior, hist, lo, hi):
    """Available rules at a node holding rows ``idx[start:end]``.

    Writes, for every feature ``v``, the range ``lo[v]..hi[v]`` of its available rules (see
    the module docstring; empty when ``lo[v] > hi[v]``) and returns the sum of
    ``split_prior`` over the features whose range is non-empty.  ``hist`` is scratch of shape
    (p, max_cuts + 1).
    """
    cnt = end - start
    if cnt < 2 * min_leaf:
        return _none_available(lo, hi)
    count_bins(Xb, idx, start, end, ncuts, hist)
    return availability_from_hist(hist, cnt, ncuts, iscat, min_leaf, split_prior, lo, hi)


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
def availability_from_hist(hist, cnt, ncuts, iscat, min_leaf, split_prior, lo, hi):
    """The available cutpoints of :func:`node_availability`, from the node's row count ``cnt``
    and its per-feature bin counts ``hist[v, :ncuts[v] + 1]``."""
    p = ncuts.shape[0]
    wsum = 0.0
    if cnt < 2 * min_leaf:
        return _none_available(lo, hi)
    for v in range(p):
        if ncuts[v] == 0 or split_prior[v] <= 0.0:
            lo[v] = 1
            hi[v] = 0
            continue
        if _range_from_hist(hist[v], cnt, ncuts[v], iscat[v], min_leaf, lo, hi, v):
            wsum += split_prior[v]
    return wsum


@numba.njit(cache=True, inline="always")
def _range_from_hist(h, cnt, nc, iscat_v, min_leaf, lo, hi, v):
    """Feature v's available rules at a node of ``cnt`` rows from its bin counts ``h``, into
    ``lo[v]``, ``hi[v]``; returns whether there is one."""
    if iscat_v:
        P, N = _subset_count(h, nc + 1, min_leaf)
        if N > 0:
            lo[v] = -P
            hi[v] = N - 1 - P
            return True
        lo[v] = 1
        hi[v] = 0
        return False
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
    return lo[v] <= hi[v]


@numba.njit(cache=True)
def availability_below(data, idx, start, end, min_leaf, plo, phi, hist, lo, hi):
    """:func:`node_availability` of a node whose rows ``idx[start:end]`` are some of its
    parent's, given the parent's available ranges ``plo``, ``phi``; the same result, mostly
    without counting every row's bins.

    A numeric feature's lowest available cut is the smallest k with ``min_leaf`` rows in bins
    ``<= k``: a subset of the parent's rows has no more rows there than the parent, so its
    lowest cut is at least the parent's ``plo[v]``, and exactly that once ``min_leaf`` of its
    rows lie in bins ``<= plo[v]``; likewise the highest, with rows in bins ``> phi[v]``.  The
    rows are read until both counts reach ``min_leaf`` (in a large node, after a few hundred
    rows at most); a feature where they do not (the one just split on, typically), a
    categorical one, or one the parent lacked, has its bins counted in full.  ``data`` is the
    :class:`~pymc_trees.bart.kernels.bundles.SweepData` (its ``XbT``, the binned data
    feature-major (p, n), ``ncuts``, ``iscat`` and ``split_prior``)."""
    XbT, ncuts, iscat, split_prior = data.XbT, data.ncuts, data.iscat, data.split_prior
    p = XbT.shape[0]
    cnt = end - start
    wsum = 0.0
    if cnt < 2 * min_leaf:
        return _none_available(lo, hi)
    for v in range(p):
        nc = ncuts[v]
        if nc == 0 or split_prior[v] <= 0.0:
            lo[v] = 1
            hi[v] = 0
            continue
        if not iscat[v] and plo[v] <= phi[v]:
            a = plo[v]
            b = phi[v]
            na = 0
            nb = 0
            q = start
            while q < end and (na < min_leaf or nb < min_leaf):
                x = XbT[v, idx[q]]
                na += x <= a
                nb += x > b
                q += 1
            if na >= min_leaf and nb >= min_leaf:
                lo[v] = a
                hi[v] = b
                wsum += split_prior[v]
                continue
        h = hist[v]
        for k in range(nc + 1):
            h[k] = 0
        for q in range(start, end):
            h[XbT[v, idx[q]]] += 1
        if _range_from_hist(h, cnt, nc, iscat[v], min_leaf, lo, hi, v):
            wsum += split_prior[v]
    return wsum


@numba.njit(cache=True)
def _subset_count(h, nb, min_leaf):
    """Levels present among the ``nb`` bins with counts ``h`` (bit set ``P``) and the number
    ``N`` of subsets of them that leave at least ``min_leaf`` rows on each side.

    Every subset with fewer than ``min_leaf`` rows (the empty one included) is invalid, and so
    is its complement; when the node has ``2 min_leaf`` rows or more no subset is both, so
    ``N = 2^k - 2 L`` with ``k`` present levels and ``L`` the number of subsets holding fewer
    than ``min_leaf`` rows, counted by a dynamic programme over their row sums.
    """
    P = 0
    k = 0
    tot = 0
    for b in range(nb):
        if h[b] > 0:
            P |= 1 << b
            k += 1
            tot += h[b]
    if k < 2 or tot < 2 * min_leaf:
        return P, 0
    ways = np.zeros(min_leaf, np.int64)  # ways[s]: subsets so far with s rows
    ways[0] = 1
    for b in range(nb):
        c = h[b]
        if c <= 0 or c >= min_leaf:
            continue  # a level of min_leaf rows or more makes any subset holding it valid-sized
        for s in range(min_leaf - 1, c - 1, -1):
            ways[s] += ways[s - c]
    small = 0
    for s in range(min_leaf):
        small += ways[s]
    return P, (np.int64(1) << k) - 2 * small


@numba.njit(cache=True, inline="always")
def goes_left(b, c):
    """Whether a row in bin ``b`` goes left under rule ``c`` (numeric cut index ``c >= 0``:
    ``b <= c``; categorical ``c = ~S``: bit ``b`` of ``S``)."""
    if c >= 0:
        return b <= c
    return ((~c) >> b) & 1 == 1


@numba.njit(cache=True)
def rule_valid(c, lo_v, hi_v, n_left, n_right, min_leaf):
    """Whether rule ``c`` of a feature with available range ``lo_v..hi_v`` is a valid rule of a
    node that it splits into ``n_left`` and ``n_right`` rows (a categorical set must hold
    present levels only and leave ``min_leaf`` rows on each side)."""
    if c >= 0:
        return lo_v <= c <= hi_v
    if lo_v >= 0:
        return False
    P = -lo_v
    return ((~c) & ~P) == 0 and n_left >= min_leaf and n_right >= min_leaf


# Fair-coin rejection is used for a level set when it accepts at least this share of its
# proposals, and for at most REJECTION_TRIES proposals; otherwise the exact sequential draw.
REJECTION_MIN_ACCEPT = 0.25
REJECTION_TRIES = 32


@numba.njit(cache=True)
def _small_set_counts(levels, counts, min_leaf):
    """``G[i, c]``: the number of subsets of the levels ``levels[i:]`` that hold fewer than
    ``c`` rows, for ``c = 0 .. min_leaf`` (``G[i, 0] = 0``; the empty set counts for c > 0)."""
    k = levels.size
    G = np.zeros((k + 1, min_leaf + 1), np.int64)
    for c in range(1, min_leaf + 1):
        G[k, c] = 1
    for i in range(k - 1, -1, -1):
        h = counts[levels[i]]
        for c in range(1, min_leaf + 1):
            G[i, c] = G[i + 1, c] + (G[i + 1, c - h] if c - h > 0 else 0)
    return G


@numba.njit(cache=True)
def draw_level_set(rng, counts, P, min_leaf):
    """A set S of the present levels (bit set ``P``; ``counts[b]`` rows at level b) drawn
    uniformly among those that leave at least ``min_leaf`` rows on each side, as a bit set.
    The node must hold at least ``2 min_leaf`` rows and have a valid set.

    Fair coins per present level, accepted when the set is valid, are uniform on the valid
    sets; they are used when they accept at least ``REJECTION_MIN_ACCEPT`` of the proposals
    (known exactly from the counts), for at most ``REJECTION_TRIES`` proposals.  Otherwise the
    set is drawn level by level, each level going in with probability proportional to the
    number of valid sets that complete either choice: with ``t`` rows chosen and ``u`` rows
    left out so far and the levels ``i..`` still open, that number is
    ``2^(k-i) - G[i, a - t] - G[i, a - u]`` (``a = min_leaf``; the subsets of the open levels
    with too few rows chosen, and with too few left out; disjoint when the node holds ``2a``
    rows or more), with ``G`` from :func:`_small_set_counts`.  Either way every valid set has
    the same probability, and the work is bounded.
    """
    nb = counts.size
    k = 0
    tot = 0
    for b in range(nb):
        if (P >> b) & 1:
            k += 1
            tot += counts[b]
    levels = np.empty(k, np.int64)
    i = 0
    for b in range(nb):
        if (P >> b) & 1:
            levels[i] = b
            i += 1
    G = _small_set_counts(levels, counts, min_leaf)
    valid = (np.int64(1) << k) - 2 * G[0, min_leaf]
    if valid >= REJECTION_MIN_ACCEPT * float(np.int64(1) << k):
        for _ in range(REJECTION_TRIES):
            S = 0
            nl = 0
            for b in range(nb):
                if (P >> b) & 1 and rng.random() < 0.5:
                    S |= 1 << b
                    nl += counts[b]
            if nl >= min_leaf and tot - nl >= min_leaf:
                return S
    S = 0
    t = 0
    u = 0
    for i in range(k):
        h = counts[levels[i]]
        free = np.int64(1) << (k - i - 1)
        ci = min_leaf - t - h
        co = min_leaf - u
        n_in = free - (G[i + 1, ci] if ci > 0 else 0) - (G[i + 1, co] if co > 0 else 0)
        ci = min_leaf - t
        co = min_leaf - u - h
        n_out = free - (G[i + 1, ci] if ci > 0 else 0) - (G[i + 1, co] if co > 0 else 0)
        if rng.random() * (n_in + n_out) < n_in:
            S |= 1 << levels[i]
            t += h
        else:
            u += h
    return S


@numba.njit(cache=True)
def draw_node_rule(rng, lo, hi, split_prior, wsum, Xb, idx, start, end, min_leaf):
    """:func:`draw_rule` at the node holding rows ``idx[start:end]``; for a categorical feature
    the set of levels that go left is drawn uniformly among the valid subsets of the present
    levels (:func:`draw_level_set`).  Returns ``(v, c, n_rules_v)``."""
    v, c, nc = draw_rule(rng, lo, hi, split_prior, wsum)
    if lo[v] >= 0:
        return v, c, nc
    return v, draw_levels(rng, lo, v, Xb, idx, start, end, min_leaf), nc


@numba.njit(cache=True)
def draw_levels(rng, lo, v, Xb, idx, start, end, min_leaf):
    """The second half of :func:`draw_node_rule` once :func:`draw_rule` has drawn the
    categorical feature ``v`` (``lo[v] < 0``): the rule sending a set of levels left, drawn
    uniformly among the valid subsets of the levels present in rows ``idx[start:end]``."""
    P = -lo[v]
    nb = 0
    while (P >> nb) > 0:
        nb += 1
    counts = np.zeros(nb, np.int64)
    for q in range(start, end):
        counts[Xb[idx[q], v]] += 1
    return ~draw_level_set(rng, counts, P, min_leaf)


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
    """Reorder ``idx[start:end]`` so rows going left under rule ``k`` of feature ``v`` come
    first; return the split position."""
    i = start
    j = end - 1
    while True:
        while i <= j and goes_left(Xb[idx[i], v], k):
            i += 1
        while i <= j and not goes_left(Xb[idx[j], v], k):
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
def split_node(t, k, v, c, nc, kl, kr, forest):
    """Make node k of tree t internal with rule (v, c) (nc available cutpoints of v) and leaf
    children in slots kl, kr (``forest`` a ``ForestArrays``)."""
    var, cut, ncut, left, right, parent, depth = (forest.var, forest.cut, forest.ncut,
                                                  forest.left, forest.right, forest.parent,
                                                  forest.depth)
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


@numba.njit(cache=True)
def route_leaves(var, cut, left, right, Xb, leaf_of_row):
    """``leaf_of_row[t, i]``: the leaf of tree t (root at slot 0) that training row i reaches
    by its bins ``Xb[i]`` (the rules of :func:`goes_left`)."""
    for t in range(var.shape[0]):
        for i in range(Xb.shape[0]):
            k = 0
            while var[t, k] >= 0:
                k = left[t, k] if goes_left(Xb[i, var[t, k]], cut[t, k]) else right[t, k]
            leaf_of_row[t, i] = k
