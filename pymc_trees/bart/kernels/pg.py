"""Particle Gibbs tree update: conditional SMC (Lakshminarayanan, Roy and Teh 2015, Algorithm
4.2; docs/math.md section 6).

Particles are trees grown top-down, one eligible node per stage, breadth-first; the prior is the
proposal, so a particle's log weight grows by ``log ML(children) - log ML(node)`` when its node
splits.  Particle 0 is clamped to the old tree, replayed in the same breadth-first order.  After
every stage particles 1..C-1 are resampled multinomially in proportion to the weights of all C
particles and the weights are reset to equal; when no particle has eligible nodes the update
returns particle C-1, which the last resampling drew from the weighted approximation.

Storage.  A node's rows never change once it exists, so they live in a shared row pool (each
split writes its node's rows, partitioned, into a fresh segment: cost proportional to the rows
of the node) and particles refer to segments.  Copying a particle on resampling copies its node
records only, never rows.  Particle buffers are allocated once by the caller and reused.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import FREE, LEAF, store_mask
from pymc_trees.bart.kernels.gamma_leaves import gamma_log_ml
from pymc_trees.bart.kernels.nodes import (draw_leaf_values, draw_node_rule, goes_left, log_ml,
                                           node_availability)

__all__ = ["PI_FIELDS", "PF_FIELDS", "PGBuffers", "new_particles", "new_node_cache",
           "pg_tree_update", "split_rows"]

# integer fields of a particle node record; UID identifies a node shared by copies
VAR, CUT, LEFT, RIGHT, DEPTH, SEG_S, SEG_E, NCUT, UID = range(9)
PI_FIELDS = 9
# float fields
FW, FS = range(2)
PF_FIELDS = 2

OK, POOL_FULL, TREE_TOO_BIG, UIDS_FULL = 0, 1, 2, 3


class PGBuffers(NamedTuple):
    """The buffers of :func:`pg_tree_update`, allocated by the caller and reused: the C
    particles twice over for double-buffered resampling (:func:`new_particles`: integer node
    records ``PI`` (C, PI_FIELDS, capacity), float ones ``PF`` (C, PF_FIELDS, capacity), node
    counts ``PN`` (C, 2), and ``PI2``, ``PF2``, ``PN2``), the log weights ``logw`` (C,) and
    resampling ``choice`` (C,); the shared row ``pool``; the availability per node identity
    ``ulo``, ``uhi``, ``uw`` (:func:`new_node_cache`); the old tree's breadth-first order
    ``old_bfs`` (node capacity)."""

    PI: np.ndarray
    PF: np.ndarray
    PN: np.ndarray
    PI2: np.ndarray
    PF2: np.ndarray
    PN2: np.ndarray
    logw: np.ndarray
    choice: np.ndarray
    pool: np.ndarray
    ulo: np.ndarray
    uhi: np.ndarray
    uw: np.ndarray
    old_bfs: np.ndarray


def new_particles(C: int, capacity: int) -> tuple:
    """Two buffers (for double-buffered resampling) of C particles with ``capacity`` nodes:
    ``(PI, PF, PN, PI2, PF2, PN2, logw, choice)``."""
    def one():
        return (np.zeros((C, PI_FIELDS, capacity), np.int32),
                np.zeros((C, PF_FIELDS, capacity), np.float64),
                np.zeros((C, 2), np.int32))
    return (*one(), *one(), np.zeros(C), np.zeros(C, np.int64))


def new_node_cache(n_nodes: int, p: int) -> tuple:
    """Availability per node identity: ``(ulo, uhi, uw)``; ``uw < 0`` means not computed."""
    return (np.zeros((n_nodes, p), np.int32), np.zeros((n_nodes, p), np.int32),
            np.full(n_nodes, -1.0))


@numba.njit(cache=True)
def _availability(u, data, pool, s, e, min_leaf, hist, ulo, uhi, uw):
    """Availability of the node with identity u (rows pool[s:e]), computed once per identity
    (``data`` the :class:`~pymc_trees.bart.kernels.bundles.SweepData`)."""
    if uw[u] < 0.0:
        uw[u] = node_availability(data.Xb, pool, s, e, data.ncuts, data.iscat, min_leaf,
                                  data.split_prior, hist, ulo[u], uhi[u])
    return uw[u]


@numba.njit(cache=True)
def split_rows(Xb, pool, s, e, top, v, k, r, omega, gamma=False):
    """Write rows ``pool[s:e]`` partitioned by rule (v, k) into ``pool[top:top+e-s]`` (left rows
    first).  Returns ``(mid, WL, SL, WR, SR)`` with the left segment ``[top, mid)``: sums of
    ``omega`` and of ``omega * r`` (normal leaves) or of ``r`` (``gamma``: log-gamma leaves'
    ``A`` and ``B``, :func:`pg_tree_update`)."""
    WL = 0.0
    SL = 0.0
    WR = 0.0
    SR = 0.0
    lo_pos = top
    hi_pos = top + (e - s) - 1
    for q in range(s, e):
        i = pool[q]
        x = r[i] if gamma else omega[i] * r[i]
        if goes_left(Xb[i, v], k):
            pool[lo_pos] = i
            lo_pos += 1
            WL += omega[i]
            SL += x
        else:
            pool[hi_pos] = i
            hi_pos -= 1
            WR += omega[i]
            SR += x
    return lo_pos, WL, SL, WR, SR


@numba.njit(cache=True, inline="always")
def _node_lml(W, S, prec0, leaf):
    """A node's log marginal likelihood from its sums: normal leaves' :func:`log_ml`, or with
    ``leaf = (1, kappa, c, d)`` log-gamma leaves' :func:`gamma_log_ml` (``W = A``,
    ``S = B``)."""
    if leaf[0] != 0.0:
        return gamma_log_ml(W, S, leaf[2], leaf[3])
    return log_ml(W, S, prec0)


@numba.njit(cache=True)
def _copy_particle(PIs, PFs, PNs, a, PId, PFd, PNd, c):
    nn = PNs[a, 0]
    for f in range(PIs.shape[1]):
        for k in range(nn):
            PId[c, f, k] = PIs[a, f, k]
    for f in range(PFs.shape[1]):
        for k in range(nn):
            PFd[c, f, k] = PFs[a, f, k]
    PNd[c, 0] = PNs[a, 0]
    PNd[c, 1] = PNs[a, 1]


@numba.njit(cache=True)
def _draw_index(rng, cum, total):
    u = rng.random() * total
    C = cum.shape[0]
    for c in range(C):
        if u < cum[c]:
            return c
    return C - 1


@numba.njit(cache=True)
def pg_tree_update(rng, t, data, rules, z, omega, fsum, forest, buf, scratch, leaf):
    """Conditional-SMC update of tree ``t`` followed by the exact draw of its leaf values.

    ``data`` a ``SweepData`` (its ``Xb``, ``ncuts``, ``iscat``, ``split_prior``), ``rules`` a
    ``TreeRules``, ``z``, ``omega`` (n,) the pseudo-data and row precisions, ``fsum`` (n,) the
    trees' sum (updated on success), ``forest`` a ``ForestArrays`` (tree t rewritten),
    ``buf`` the :class:`PGBuffers`, ``scratch`` a ``SweepScratch`` (its ``r``, ``hist``,
    ``W``, ``S``).

    ``leaf = (0, 0, 0, 0)``: normal leaves.  Log-gamma leaves (``leaf = (1, kappa, c, d)``,
    :mod:`~pymc_trees.bart.kernels.gamma_leaves`):
    ``z`` holds the rows' log rates ``log t_i`` at the trees' zero and ``omega`` their shapes
    ``s_i``; a row's ``r_i = exp(z_i + kappa (fsum_i - tree t's value))``, a node's sums
    ``A = sum s_i`` and ``B = sum r_i``, its marginal :func:`gamma_log_ml`, and every leaf
    ``log(phi) / kappa`` with ``phi ~ Gamma(c + A, rate d + B)``.

    Returns ``(status, changed)``: status ``OK``, or ``POOL_FULL`` / ``TREE_TOO_BIG`` /
    ``UIDS_FULL`` when the row pool, the forest's node capacity or the node cache is too small
    (nothing was modified then: grow the buffer, restore the generator state and call again).

    A node's split decision draws its uniform first and computes the node's available rules only
    when the uniform falls below ``p_split(depth)``: splitting has probability
    ``p_split(depth) * 1[rule available]`` either way.  ``changed`` is 1 when the returned
    tree differs from the old one.
    """
    Xb, split_prior = data.Xb, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    (var, cut, left, right, parent, depth, value, wavail, ncut, amask, n_nodes, free, n_free,
     leaf_of_row) = forest
    PI, PF, PN, PI2, PF2, PN2, logw, choice, pool, ulo, uhi, uw, old_bfs = buf
    r, hist, W, S = scratch.r, scratch.hist, scratch.W, scratch.S
    C = PI.shape[0]
    n = z.shape[0]
    gamma = leaf[0] != 0.0
    # partial residual of tree t, or the rows' rates given the other trees (fsum is left
    # untouched until success)
    Wr = 0.0
    Sr = 0.0
    for i in range(n):
        if gamma:
            r[i] = math.exp(z[i] + leaf[1] * (fsum[i] - value[t, leaf_of_row[t, i]]))
            Sr += r[i]
        else:
            r[i] = z[i] - (fsum[i] - value[t, leaf_of_row[t, i]])
            Sr += omega[i] * r[i]
        Wr += omega[i]
    # breadth-first order of the old tree
    old_bfs[0] = 0
    nb = 1
    q = 0
    while q < nb:
        k = old_bfs[q]
        q += 1
        if var[t, k] >= 0:
            old_bfs[nb] = left[t, k]
            old_bfs[nb + 1] = right[t, k]
            nb += 2
    for i in range(n):
        pool[i] = i
    top = n
    n_uid = 1
    uw[0] = -1.0
    for c in range(C):
        PN[c, 0] = 1
        PN[c, 1] = 0
        PI[c, UID, 0] = 0
        PI[c, VAR, 0] = LEAF
        PI[c, DEPTH, 0] = 0
        PI[c, SEG_S, 0] = 0
        PI[c, SEG_E, 0] = n
        PF[c, FW, 0] = Wr
        PF[c, FS, 0] = Sr
        logw[c] = 0.0
    cap = PI.shape[2]
    cum = np.empty(C)
    while True:
        active = False
        for c in range(C):
            k = PN[c, 1]
            if k >= PN[c, 0]:
                continue
            active = True
            PN[c, 1] = k + 1
            s = PI[c, SEG_S, k]
            e = PI[c, SEG_E, k]
            d = PI[c, DEPTH, k]
            u = PI[c, UID, k]
            split = False
            v = -1
            kc = 0
            nc = 0
            if c == 0:
                ok = old_bfs[k]
                if var[t, ok] >= 0:
                    split = True
                    _availability(u, data, pool, s, e, min_leaf, hist, ulo, uhi, uw)
                    v = var[t, ok]
                    kc = cut[t, ok]
                    nc = uhi[u, v] - ulo[u, v] + 1
            elif rng.random() < alpha * (1.0 + d) ** (-beta):
                wsum = _availability(u, data, pool, s, e, min_leaf, hist, ulo, uhi, uw)
                if wsum > 0.0:
                    split = True
                    v, kc, nc = draw_node_rule(rng, ulo[u], uhi[u], split_prior, wsum, Xb,
                                               pool, s, e, min_leaf)
            if split:
                if top + (e - s) > pool.shape[0]:
                    return POOL_FULL, 0
                if PN[c, 0] + 2 > cap:
                    return TREE_TOO_BIG, 0
                if n_uid + 2 > uw.shape[0]:
                    return UIDS_FULL, 0
                mid, WL, SL, WR, SR = split_rows(Xb, pool, s, e, top, v, kc, r, omega, gamma)
                kl = PN[c, 0]
                kr = kl + 1
                PN[c, 0] = kl + 2
                PI[c, VAR, k] = v
                PI[c, CUT, k] = kc
                PI[c, NCUT, k] = nc
                PI[c, LEFT, k] = kl
                PI[c, RIGHT, k] = kr
                PI[c, VAR, kl] = LEAF
                PI[c, VAR, kr] = LEAF
                PI[c, DEPTH, kl] = d + 1
                PI[c, DEPTH, kr] = d + 1
                PI[c, UID, kl] = n_uid
                PI[c, UID, kr] = n_uid + 1
                uw[n_uid] = -1.0
                uw[n_uid + 1] = -1.0
                n_uid += 2
                PI[c, SEG_S, kl] = top
                PI[c, SEG_E, kl] = mid
                PI[c, SEG_S, kr] = mid
                PI[c, SEG_E, kr] = top + (e - s)
                PF[c, FW, kl] = WL
                PF[c, FS, kl] = SL
                PF[c, FW, kr] = WR
                PF[c, FS, kr] = SR
                logw[c] += (_node_lml(WL, SL, prec0, leaf) + _node_lml(WR, SR, prec0, leaf)
                            - _node_lml(PF[c, FW, k], PF[c, FS, k], prec0, leaf))
                top += e - s
        if not active:
            break
        # resample particles 1..C-1 from the weights of all C particles; particle 0 is kept
        mx = logw.max()
        acc = 0.0
        for c in range(C):
            acc += np.exp(logw[c] - mx)
            cum[c] = acc
        choice[0] = 0
        for c in range(1, C):
            choice[c] = _draw_index(rng, cum, acc)
        for c in range(C):
            _copy_particle(PI, PF, PN, choice[c], PI2, PF2, PN2, c)
        PI, PI2 = PI2, PI
        PF, PF2 = PF2, PF
        PN, PN2 = PN2, PN
        for c in range(C):
            logw[c] = 0.0
    ch = C - 1
    nn = PN[ch, 0]
    if nn > var.shape[1]:
        return TREE_TOO_BIG, 0
    # did the tree change?  (particle nodes and the old tree are both in breadth-first order)
    changed = 0
    if nn != nb:
        changed = 1
    else:
        for k in range(nn):
            ok = old_bfs[k]
            if PI[ch, VAR, k] != var[t, ok] or (var[t, ok] >= 0 and PI[ch, CUT, k] != cut[t, ok]):
                changed = 1
                break
    # write the chosen particle into tree t
    for i in range(n):
        fsum[i] -= value[t, leaf_of_row[t, i]]
    for k in range(nn):
        var[t, k] = PI[ch, VAR, k]
        depth[t, k] = PI[ch, DEPTH, k]
        # the forest caches every node's availability (the CGM moves need it)
        u = PI[ch, UID, k]
        wavail[t, k] = _availability(u, data, pool, PI[ch, SEG_S, k], PI[ch, SEG_E, k],
                                     min_leaf, hist, ulo, uhi, uw)
        store_mask(amask, t, k, ulo[u], uhi[u])
        if var[t, k] >= 0:
            cut[t, k] = PI[ch, CUT, k]
            ncut[t, k] = PI[ch, NCUT, k]
            kl = PI[ch, LEFT, k]
            kr = PI[ch, RIGHT, k]
            left[t, k] = kl
            right[t, k] = kr
            parent[t, kl] = k
            parent[t, kr] = k
        else:
            left[t, k] = -1
            right[t, k] = -1
            W[k] = PF[ch, FW, k]
            S[k] = PF[ch, FS, k]
            for q2 in range(PI[ch, SEG_S, k], PI[ch, SEG_E, k]):
                leaf_of_row[t, pool[q2]] = k
    parent[t, 0] = -1
    for k in range(nn, n_nodes[t]):
        var[t, k] = FREE
    n_nodes[t] = nn
    n_free[t] = 0
    if gamma:
        for k in range(nn):
            if var[t, k] == LEAF:
                value[t, k] = math.log(rng.gamma(leaf[2] + W[k], 1.0 / (leaf[3] + S[k]))) / leaf[1]
    else:
        draw_leaf_values(rng, t, var, value, n_nodes, W, S, prec0)
    for i in range(n):
        fsum[i] += value[t, leaf_of_row[t, i]]
    return OK, changed
