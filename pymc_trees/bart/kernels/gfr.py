"""Grow-from-root tree sweeps (XBART: He and Hahn 2021), the warm start of the exact samplers.

A grow-from-root update throws tree ``t`` away and regrows it from a single leaf against the
partial residual.  At every node, the choice between stopping and each available rule
``(v, c)`` is drawn in proportion to

    stop:        (1 - p_split(d)) * ML(node)
    rule (v, c): p_split(d) * split_prior[v] / wavail * 1 / ncut_v * ML(left) * ML(right)

(the tree prior of docs/math.md section 3 times the marginal likelihoods of section 2, leaf values
integrated out), and the children are grown the same way.  The leaf values are then drawn from
their exact conditional.  This is not a Metropolis-Hastings move and does not leave the
posterior invariant: it only builds starting forests near where the posterior puts its mass.
The exact samplers (CGM, PG) take over from the forest it leaves.

Every node evaluates all available cutpoints from per-feature histograms of the row count and
of ``(W, S)`` over its bins: cost proportional to (rows of the node) x p plus p x cutpoints.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import FREE, LEAF, store_mask
from pymc_trees.bart.kernels.nodes import (alloc_node, availability_from_hist, draw_leaf_values,
                                           goes_left, log_ml, log_psplit, split_node)

__all__ = ["GFR_OK", "GFR_FULL", "GFR_MAX_DEPTH", "GFRScratch", "new_gfr_scratch", "remove_tree",
           "gfr_tree"]

GFR_OK, GFR_FULL = 0, 1

#: Deepest node the warm start splits (the root is depth 0): at most 127 node slots, 64 leaves
#: a tree, so that the rows' leaf index fits in 8 bits (:func:`~pymc_trees.bart.kernels.forest.
#: leaf_index_dtype`) and the node arrays stay small.  Without it, grow-from-root grows trees of
#: 1,000 nodes at 100,000 rows, which the exact sweeps then take many iterations to prune.
#: stochtree limits its grow-from-root trees the same way (``max_depth``, default 10); bartz
#: limits every tree to depth 6.  The exact samplers that follow have no depth limit.
GFR_MAX_DEPTH = 6


class GFRScratch(NamedTuple):
    """Buffers of :func:`gfr_tree` (:func:`new_gfr_scratch`): per row ``idx``, ``tmp``; per
    feature and bin ``cnt``, ``hW``, ``hS``; per feature ``lo``, ``hi``; ``logw`` the
    candidates' log weights; per node slot ``seg_s``, ``seg_e``, ``stack``, ``W``, ``S`` (to
    be regrown with the forest's capacity)."""

    idx: np.ndarray
    tmp: np.ndarray
    cnt: np.ndarray
    hW: np.ndarray
    hS: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    logw: np.ndarray
    seg_s: np.ndarray
    seg_e: np.ndarray
    stack: np.ndarray
    W: np.ndarray
    S: np.ndarray


def new_gfr_scratch(n: int, p: int, max_cuts: int, capacity: int) -> GFRScratch:
    """Buffers for :func:`gfr_tree` (:class:`GFRScratch`); the last five must be regrown
    with the forest's capacity."""
    B = max_cuts + 1
    K = capacity
    return GFRScratch(np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros((p, B), np.int32),
            np.zeros((p, B)), np.zeros((p, B)), np.zeros(p, np.int32), np.zeros(p, np.int32),
            np.zeros(p * max(max_cuts, 1) + 1), np.zeros(K, np.int32), np.zeros(K, np.int32),
            np.zeros(K, np.int32), np.zeros(K), np.zeros(K))


@numba.njit(cache=True)
def remove_tree(t, value, leaf_of_row, fsum, z, r):
    """Take tree ``t`` out of the running sum ``fsum`` and write the partial residual
    ``r = z - fsum``."""
    for i in range(fsum.shape[0]):
        fsum[i] -= value[t, leaf_of_row[t, i]]
        r[i] = z[i] - fsum[i]


@numba.njit(cache=True)
def _node_hists(Xb, idx, s, e, ncuts, r, omega, cnt, hW, hS):
    p = Xb.shape[1]
    for v in range(p):
        for b in range(ncuts[v] + 1):
            cnt[v, b] = 0
            hW[v, b] = 0.0
            hS[v, b] = 0.0
    for q in range(s, e):
        i = idx[q]
        w = omega[i]
        ws = w * r[i]
        for v in range(p):
            b = Xb[i, v]
            cnt[v, b] += 1
            hW[v, b] += w
            hS[v, b] += ws


@numba.njit(cache=True)
def _categorical_candidates(v, P, bv, hists, Wn, Sn, n_node, min_leaf, prec0, cands, j):
    """Candidates of categorical feature ``v`` (present levels ``P``, the node's bin counts
    and sums ``hists = (cnt, hW, hS)``): the present levels ordered by their leaf posterior
    mean ``S / (W + prec0)`` and split after each prefix that leaves ``min_leaf`` rows on
    each side (the subsets a sorted scan can reach, as in LightGBM and XGBoost; the others
    are not proposed here, which a warm start may do).  Writes their log weights and rules
    into ``cands = (logw, cand_v, cand_c)`` from index ``j`` on and returns the next free
    index."""
    cnt, hW, hS = hists
    logw, cand_v, cand_c = cands
    nb = 0
    while (P >> nb) > 0:
        nb += 1
    levels = np.empty(nb, np.int64)
    keys = np.empty(nb)
    k = 0
    for b in range(nb):
        if (P >> b) & 1:
            levels[k] = b
            keys[k] = hS[v, b] / (hW[v, b] + prec0)
            k += 1
    order = np.argsort(keys[:k])
    S = 0
    WL = 0.0
    SL = 0.0
    nl = 0
    for q in range(k - 1):
        b = levels[order[q]]
        S |= 1 << b
        WL += hW[v, b]
        SL += hS[v, b]
        nl += cnt[v, b]
        if nl < min_leaf or n_node - nl < min_leaf:
            continue
        logw[j] = bv + log_ml(WL, SL, prec0) + log_ml(Wn - WL, Sn - SL, prec0)
        cand_v[j] = v
        cand_c[j] = ~S
        j += 1
    return j


@numba.njit(cache=True)
def gfr_tree(rng, t, data, rules, max_depth, r, omega, fsum, forest, sc):
    """Regrow tree ``t`` from its root against the partial residual ``r`` (with row
    precisions ``omega``), draw its leaf values, and add it to ``fsum``.  Nodes at depth
    ``max_depth`` stay leaves (their available rules are still stored for the exact moves).

    Returns ``GFR_FULL`` without touching ``fsum`` when the tree needs more node slots than
    the arrays hold (the caller grows them and calls again with the same generator state);
    else ``GFR_OK``.  ``data`` a ``SweepData`` (its ``Xb``, ``ncuts``, ``iscat``,
    ``split_prior``), ``rules`` a ``TreeRules``, ``forest`` a ``ForestArrays``, ``sc`` the
    :class:`GFRScratch`.
    """
    Xb, ncuts, iscat, split_prior = data.Xb, data.ncuts, data.iscat, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    (var, cut, left, right, parent, depth, value, wavail, ncut, amask, n_nodes, free, n_free,
     leaf_of_row) = forest
    idx, tmp, cnt, hW, hS, lo, hi, logw, seg_s, seg_e, stack, W, S = sc
    n, p = Xb.shape
    K = var.shape[1]
    cand_v = np.empty(logw.shape[0], np.int64)  # the rule of every candidate in logw
    cand_c = np.empty(logw.shape[0], np.int64)
    for q in range(n):
        idx[q] = q
    old_n = n_nodes[t]
    n_nodes[t] = 1
    n_free[t] = 0
    var[t, 0] = LEAF
    left[t, 0] = -1
    right[t, 0] = -1
    parent[t, 0] = -1
    depth[t, 0] = 0
    seg_s[0] = 0
    seg_e[0] = n
    top = 1
    stack[0] = 0
    while top > 0:
        top -= 1
        k = stack[top]
        s = seg_s[k]
        e = seg_e[k]
        _node_hists(Xb, idx, s, e, ncuts, r, omega, cnt, hW, hS)
        Wn = 0.0
        Sn = 0.0
        for b in range(ncuts[0] + 1):
            Wn += hW[0, b]
            Sn += hS[0, b]
        W[k] = Wn
        S[k] = Sn
        wsum = availability_from_hist(cnt, e - s, ncuts, iscat, min_leaf, split_prior, lo, hi)
        wavail[t, k] = wsum
        store_mask(amask, t, k, lo, hi)
        d = depth[t, k]
        if wsum <= 0.0 or d >= max_depth:
            continue
        # log weights: index 0 is "stop", then every available (v, c) in order
        logw[0] = math.log1p(-alpha * (1.0 + d) ** (-beta)) + log_ml(Wn, Sn, prec0)
        base = log_psplit(d, alpha, beta) - math.log(wsum)
        j = 1
        for v in range(p):
            if lo[v] > hi[v]:
                continue
            nc = hi[v] - lo[v] + 1
            bv = base + math.log(split_prior[v]) - math.log(nc)
            if lo[v] < 0:
                j = _categorical_candidates(v, -lo[v], bv, (cnt, hW, hS), Wn, Sn, e - s,
                                            min_leaf, prec0, (logw, cand_v, cand_c), j)
                continue
            WL = 0.0
            SL = 0.0
            for c in range(lo[v]):
                WL += hW[v, c]
                SL += hS[v, c]
            for c in range(lo[v], hi[v] + 1):
                WL += hW[v, c]
                SL += hS[v, c]
                logw[j] = bv + log_ml(WL, SL, prec0) + log_ml(Wn - WL, Sn - SL, prec0)
                cand_v[j] = v
                cand_c[j] = c
                j += 1
        mx = logw[0]
        for q in range(1, j):
            if logw[q] > mx:
                mx = logw[q]
        tot = 0.0
        for q in range(j):
            tot += math.exp(logw[q] - mx)
        u = rng.random() * tot
        choice = j - 1
        acc = 0.0
        for q in range(j):
            acc += math.exp(logw[q] - mx)
            if u < acc:
                choice = q
                break
        if choice == 0:
            continue
        v_new = cand_v[choice]
        c_new = cand_c[choice]
        nc_new = hi[v_new] - lo[v_new] + 1
        if n_nodes[t] + 2 > K:
            n_nodes[t] = max(n_nodes[t], old_n)  # every slot written so far is reset again
            return GFR_FULL
        # partition the node's rows, keeping ascending row order on each side
        mid = s
        for a in range(s, e):
            if goes_left(Xb[idx[a], v_new], c_new):
                mid += 1
        kl = alloc_node(t, var, n_nodes, free, n_free)
        kr = alloc_node(t, var, n_nodes, free, n_free)
        split_node(t, k, v_new, c_new, nc_new, kl, kr, forest)
        _stable_partition(Xb, idx, s, e, v_new, c_new, mid, tmp)
        seg_s[kl] = s
        seg_e[kl] = mid
        seg_s[kr] = mid
        seg_e[kr] = e
        # right child below left on the stack: the left subtree is grown first
        stack[top] = kr
        stack[top + 1] = kl
        top += 2
    for k in range(n_nodes[t], old_n):
        var[t, k] = FREE
    for k in range(n_nodes[t]):
        if var[t, k] == LEAF:
            for a in range(seg_s[k], seg_e[k]):
                leaf_of_row[t, idx[a]] = k
    draw_leaf_values(rng, t, var, value, n_nodes, W, S, prec0)
    for i in range(n):
        fsum[i] += value[t, leaf_of_row[t, i]]
    return GFR_OK


@numba.njit(cache=True)
def _stable_partition(Xb, idx, s, e, v, c, mid, tmp):
    """Rows of ``idx[s:e]`` going left under rule ``c`` of feature ``v`` first, both sides in
    their old order; ``tmp`` (n row indices) is the scratch.  (It was a row of
    ``leaf_of_row``, which holds leaf slots in a narrower type than row indices.)"""
    a = s
    b = mid
    for q in range(s, e):
        i = idx[q]
        if goes_left(Xb[i, v], c):
            tmp[a] = i
            a += 1
        else:
            tmp[b] = i
            b += 1
    for q in range(s, e):
        idx[q] = tmp[q]
