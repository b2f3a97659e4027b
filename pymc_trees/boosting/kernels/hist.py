"""The histogram grower (XGBoost's ``tree_method="hist"``): rows binned once per fit
(:func:`binned_columns`), per-node histograms of (g, h) by bin with sibling subtraction, and a
level-by-level grower (:func:`grow_hist`) whose phases run in parallel and give the same tree
for any number of threads.  The split rules are :mod:`~pymc_trees.boosting.kernels.splits`'."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.boosting.kernels.splits import (RT_EPS, as_float32, best_split_categorical,
                                                calc_weight, node_gain, valid_split)

__all__ = ["BinnedData", "HistWorkspace", "binned_columns", "hist_workspace", "grow_hist"]


class BinnedData(NamedTuple):
    """The training rows as the histogram grower reads them, fixed for a fit: ``XbT`` (p, n)
    uint16 bins from :func:`binned_columns`; ``ncuts`` (p,) cutpoints per feature (its bins
    are ``0 .. ncuts[v]``); ``n_cat`` (p,) levels of a categorical feature (its bins are the
    codes), 0 for the others; ``feat_missing`` (p,) whether the feature has missing values in
    training."""

    XbT: np.ndarray
    ncuts: np.ndarray
    n_cat: np.ndarray
    feat_missing: np.ndarray


class LevelSplits(NamedTuple):
    """The best split of every node of a level (index ``j`` in the level): loss change,
    feature (-1: none), bin, missing_left, cats, and the left child's sums of g and h."""

    best: np.ndarray
    feature: np.ndarray
    bin: np.ndarray
    missing_left: np.ndarray
    cats: np.ndarray
    GL: np.ndarray
    HL: np.ndarray


class HistWorkspace(NamedTuple):
    """Scratch arrays of :func:`grow_hist` (see :func:`hist_workspace`): the rows' order and
    two partition buffers (n,), the gathered and the per-row (g, h) (n, 2), two alternating
    histogram buffers (nodes, p, bins, 2) and their missing counts (nodes, p)."""

    order: np.ndarray
    tmp: np.ndarray
    tmp2: np.ndarray
    gord: np.ndarray
    gh: np.ndarray
    HA: np.ndarray
    HB: np.ndarray
    MA: np.ndarray
    MB: np.ndarray


HIST_COPIES = 4


@numba.njit(cache=True, parallel=True)
def binned_columns(X, cuts, ncuts):
    """The column-major bins (p, n), dtype uint16, of the rows ``X`` (n, p) that the
    histogram grower reads: ``searchsorted(cuts[v], x, "left")``, as :func:`bin_data`, except
    that a missing value (NaN) gets the bin ``B = max(ncuts) + 1``, one past every real bin
    (so that histograms can add missing rows into an extra bin without a branch)."""
    n, p = X.shape
    B = 1
    for v in range(p):
        B = max(B, ncuts[v] + 1)
    out = np.empty((p, n), np.uint16)
    for v in numba.prange(p):
        c = cuts[v, :ncuts[v]]
        for i in range(n):
            x = X[i, v]
            out[v, i] = B if x != x else np.searchsorted(c, x, side="left")
    return out


@numba.njit(cache=True)
def _hist_feature(col, gord, order, B, count_missing, out):
    """Histogram of one feature over one node: ``order`` the node's rows, ``gord[j]`` the
    (g, h) of row ``order[j]``; ``out[b] = (sum g, sum h)`` over its rows in bin ``b < B``.
    Returns the number of its rows missing the feature (bin ``B``) when ``count_missing``,
    else 0.

    Consecutive rows are added into 4 interleaved copies of the histogram (row ``j`` into copy
    ``j % 4``), summed at the end in copy order.  With one copy, two rows in flight that fall
    in the same bin make the processor replay the dependent loads; with four, the sums run
    about 2.5 times faster here.  The order of the additions depends only on the rows, not on
    the number of threads.  Missing rows are added into the extra bin ``B``, so the loop has
    no branch; loops start at 0 so that numba can drop its negative-index checks."""
    loc = np.zeros((HIST_COPIES, B + 1, 2))
    size = order.size
    m = size - size % HIST_COPIES
    for j in range(0, m, HIST_COPIES):
        b0 = col[order[j]]
        b1 = col[order[j + 1]]
        b2 = col[order[j + 2]]
        b3 = col[order[j + 3]]
        loc[0, b0, 0] += gord[j, 0]
        loc[0, b0, 1] += gord[j, 1]
        loc[1, b1, 0] += gord[j + 1, 0]
        loc[1, b1, 1] += gord[j + 1, 1]
        loc[2, b2, 0] += gord[j + 2, 0]
        loc[2, b2, 1] += gord[j + 2, 1]
        loc[3, b3, 0] += gord[j + 3, 0]
        loc[3, b3, 1] += gord[j + 3, 1]
    for j in range(m, size):
        b0 = col[order[j]]
        loc[j - m, b0, 0] += gord[j, 0]
        loc[j - m, b0, 1] += gord[j, 1]
    for b in range(B):
        out[b, 0] = ((loc[0, b, 0] + loc[1, b, 0]) + loc[2, b, 0]) + loc[3, b, 0]
        out[b, 1] = ((loc[0, b, 1] + loc[1, b, 1]) + loc[2, b, 1]) + loc[3, b, 1]
    miss = 0
    if count_missing:
        for j in range(size):
            miss += col[order[j]] == B
    return miss


@numba.njit(cache=True, parallel=True)
def _build_hists(XbT, gord, order, seg_lo, seg_hi, dest, colmask, feat_missing, HIST, MC):
    """Histograms of several nodes: node ``s`` holds the rows ``order[seg_lo[s]:seg_hi[s]]``
    and gets ``HIST[dest[s]]`` (p, B, 2) and ``MC[dest[s]]`` (p,), its missing counts (0 for
    features without missing values in training and for masked features, whose histograms are
    zero).  The (feature, node) pairs are independent tasks, run in parallel feature-major so
    that the threads share the work evenly."""
    p = XbT.shape[0]
    B = HIST.shape[2]
    ns = seg_lo.size
    for t in numba.prange(p * ns):
        v = t // ns
        s = t % ns
        d = dest[s]
        if not colmask[v]:
            HIST[d, v, :, :] = 0.0
            MC[d, v] = 0
            continue
        lo = seg_lo[s]
        hi = seg_hi[s]
        MC[d, v] = _hist_feature(XbT[v], gord[lo:hi], order[lo:hi], B, feat_missing[v],
                                 HIST[d, v])


@numba.njit(cache=True)
def _subtract(P, S, out):
    """``out = P - S`` elementwise, without temporaries."""
    a = P.ravel()
    b = S.ravel()
    o = out.ravel()
    for t in range(a.size):
        o[t] = a[t] - b[t]


@numba.njit(cache=True)
def _best_split_hist(HIST, MC, ncuts, n_cat, colmask, feat_missing, Gt, Ht, mcw, reg, onehot,
                     cat_thr):
    """Best (loss_chg, feature, bin, missing_left, cats, GL, HL) of a node from its histogram
    (``cats`` 0 for a numeric split; features with ``n_cat[v] > 0`` are categorical, their
    bins the codes, see :func:`best_split_categorical`); ``reg = (lam, alpha, mds)``, the
    regularisation, a tuple of floats.  It takes loose arrays: it runs inside the parallel
    loop of :func:`_best_splits`, which unpacks the bundles (numba loses writes to arrays
    reached through a named tuple there; a tuple of floats is only read)."""
    lam, alpha, mds = reg
    root = node_gain(Gt, Ht, lam, alpha, mds)
    best = 0.0
    bf = -1
    bb = 0
    bdl = True
    bcats = np.uint64(0)
    z = np.uint64(0)
    bGL = 0.0
    bHL = 0.0
    for v in range(HIST.shape[0]):
        if not colmask[v]:
            continue
        if n_cat[v] > 0:
            chg, found, dl, cats, GL, HL = best_split_categorical(
                HIST[v], n_cat[v], Gt, Ht, root, mcw, lam, alpha, mds, onehot, cat_thr, best)
            if found:
                best, bf, bb, bdl, bcats, bGL, bHL = chg, v, 0, dl, cats, GL, HL
            continue
        if ncuts[v] == 0:
            continue
        hv = HIST[v]
        Gp = 0.0
        Hp = 0.0
        for b in range(ncuts[v] + 1):
            Gp += hv[b, 0]
            Hp += hv[b, 1]
        Gm = Gt - Gp
        Hm = Ht - Hp
        GL = 0.0
        HL = 0.0
        for b in range(ncuts[v]):
            if hv[b, 1] == 0.0 and hv[b, 0] == 0.0:
                continue  # no rows in this bin: the same partition as the previous cut
            GL += hv[b, 0]
            HL += hv[b, 1]
            if feat_missing[v]:
                # missing right (the only direction when the node has no missing rows)
                GR = Gt - GL
                HR = Ht - HL
                if valid_split(HL, HR, mcw):
                    chg = as_float32(node_gain(GL, HL, lam, alpha, mds)
                                     + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, bf, bb, bdl, bcats, bGL, bHL = chg, v, b, False, z, GL, HL
                if MC[v] == 0:
                    continue
                # missing left
                GL2 = GL + Gm
                HL2 = HL + Hm
                GR = Gt - GL2
                HR = Ht - HL2
                if valid_split(HL2, HR, mcw):
                    chg = as_float32(node_gain(GL2, HL2, lam, alpha, mds)
                                     + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, bf, bb, bdl, bcats, bGL, bHL = chg, v, b, True, z, GL2, HL2
            else:
                GR = Gt - GL
                HR = Ht - HL
                if valid_split(HL, HR, mcw):
                    chg = as_float32(node_gain(GL, HL, lam, alpha, mds)
                                     + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, bf, bb, bdl, bcats, bGL, bHL = chg, v, b, True, z, GL, HL
    return best, bf, bb, bdl, bcats, bGL, bHL


CHUNK = 16384  # rows per parallel task in partitions and gathers


@numba.njit(cache=True)
def _chunks(seg_lo, seg_hi):
    """Cut the segments ``[seg_lo[s], seg_hi[s])`` into chunks of at most ``CHUNK`` rows
    (an empty segment gives one empty chunk): returns each chunk's segment, start and end.
    The chunks depend only on the segments, never on the number of threads."""
    total = 0
    for s in range(seg_lo.size):
        total += max(1, (seg_hi[s] - seg_lo[s] + CHUNK - 1) // CHUNK)
    cs = np.empty(total, np.int64)
    clo = np.empty(total, np.int64)
    chi = np.empty(total, np.int64)
    t = 0
    for s in range(seg_lo.size):
        k = seg_lo[s]
        while True:
            cs[t] = s
            clo[t] = k
            chi[t] = min(seg_hi[s], k + CHUNK)
            t += 1
            k += CHUNK
            if k >= seg_hi[s]:
                break
    return cs, clo, chi


@numba.njit(cache=True)
def _split_chunk(col, miss, order, lo, hi, b, dl, to_left, to_right):
    """The rows ``order[lo:hi]`` going left, in order, to ``to_left[lo:]`` and the others to
    ``to_right[lo:]``; returns how many go left.  Branch-free: each row is written to both
    sides and only the side it belongs to advances (the direction of a row is unpredictable,
    so a branch would be mispredicted half of the time)."""
    o = order[lo:hi]
    tl = to_left[lo:hi]
    tr = to_right[lo:hi]
    nl = 0
    nr = 0
    for j in range(o.size):
        i = o[j]
        x = col[i]
        # the missing bin exceeds every cut bin, so a missing row goes left only by dl
        gl = np.int64((x <= b) | (dl & (x == miss)))
        tl[nl] = i
        tr[nr] = i
        nl += gl
        nr += 1 - gl
    return nl


@numba.njit(cache=True)
def _split_chunk_cat(col, miss, order, lo, hi, cats, dl, to_left, to_right):
    """:func:`_split_chunk` for a categorical split: a row goes left when the bit of its code
    (its bin) is set in ``cats``, a missing row when ``dl``."""
    o = order[lo:hi]
    tl = to_left[lo:hi]
    tr = to_right[lo:hi]
    nl = 0
    nr = 0
    one = np.uint64(1)
    for j in range(o.size):
        i = o[j]
        x = col[i]
        bit = np.int64((cats >> np.uint64(x & 63)) & one)
        gl = np.int64(dl) if x == miss else bit
        tl[nl] = i
        tr[nr] = i
        nl += gl
        nr += 1 - gl
    return nl


@numba.njit(cache=True, parallel=True)
def _partition_nodes(XbT, ncuts, order, tmp, tmp2, seg_lo, seg_hi, feat, cut, dl, cats, mid):
    """Stable partition of the rows of several nodes (disjoint segments of ``order``): rows
    going left first, both sides in ascending row order; ``mid[s]`` gets the boundary.  In
    parallel over chunks of rows: each chunk splits its rows into the scratch arrays ``tmp``
    and ``tmp2``, then every chunk copies its two parts to their places.  Node ``s`` splits
    on the bin ``cut[s]`` of feature ``feat[s]``, or by the categories ``cats[s]`` when that
    is not 0."""
    miss = 1
    for v in range(ncuts.size):
        miss = max(miss, ncuts[v] + 1)
    cs, clo, chi = _chunks(seg_lo, seg_hi)
    nc = cs.size
    cnl = np.empty(nc, np.int64)
    for t in numba.prange(nc):
        s = cs[t]
        if cats[s] != 0:
            cnl[t] = _split_chunk_cat(XbT[feat[s]], miss, order, clo[t], chi[t], cats[s], dl[s],
                                      tmp, tmp2)
        else:
            cnl[t] = _split_chunk(XbT[feat[s]], miss, order, clo[t], chi[t], cut[s], dl[s], tmp,
                                  tmp2)
    for s in range(seg_lo.size):
        mid[s] = seg_lo[s]
    for t in range(nc):
        mid[cs[t]] += cnl[t]
    posl = seg_lo.copy()
    posr = mid.copy()
    lstart = np.empty(nc, np.int64)
    rstart = np.empty(nc, np.int64)
    for t in range(nc):
        s = cs[t]
        lstart[t] = posl[s]
        posl[s] += cnl[t]
        rstart[t] = posr[s]
        posr[s] += chi[t] - clo[t] - cnl[t]
    for t in numba.prange(nc):
        nl = cnl[t]
        nr = chi[t] - clo[t] - nl
        order[lstart[t]:lstart[t] + nl] = tmp[clo[t]:clo[t] + nl]
        order[rstart[t]:rstart[t] + nr] = tmp2[clo[t]:clo[t] + nr]


@numba.njit(cache=True, parallel=True)
def _gather_gh(gh, order, seg_lo, seg_hi, gord):
    """``gord[j] = gh[order[j]]``, for ``j`` in the given segments (in parallel over chunks)."""
    cs, clo, chi = _chunks(seg_lo, seg_hi)
    for t in numba.prange(cs.size):
        o = order[clo[t]:chi[t]]
        go = gord[clo[t]:chi[t]]
        for j in range(o.size):
            i = o[j]
            go[j, 0] = gh[i, 0]
            go[j, 1] = gh[i, 1]


@numba.njit(cache=True, parallel=True)
def _root_gh(g, h, rows, gh, gord):
    """``gh[i] = (g[i], h[i])`` at the rows ``i = rows[j]`` and ``gord[j]`` the same; returns
    the totals of g and h, summed per chunk of rows and then over chunks in order (the same
    sums for any number of threads)."""
    n = rows.size
    nch = max(1, (n + CHUNK - 1) // CHUNK)
    pg = np.zeros(nch)
    ph = np.zeros(nch)
    for c in numba.prange(nch):
        sg = 0.0
        sh = 0.0
        for j in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            i = rows[j]
            gi = g[i]
            hi = h[i]
            gh[i, 0] = gi
            gh[i, 1] = hi
            gord[j, 0] = gi
            gord[j, 1] = hi
            sg += gi
            sh += hi
        pg[c] = sg
        ph[c] = sh
    Gt = 0.0
    Ht = 0.0
    for c in range(nch):
        Gt += pg[c]
        Ht += ph[c]
    return Gt, Ht


@numba.njit(cache=True, parallel=True)
def _subtract_nodes(PHIST, PMC, parent, HIST, MC, small, large):
    """Sibling subtraction: ``HIST[large[s]] = PHIST[parent[s]] - HIST[small[s]]``, and the
    same for the missing counts ``MC`` (``PHIST``, ``PMC``: the previous level's)."""
    for s in numba.prange(small.size):
        _subtract(PHIST[parent[s]], HIST[small[s]], HIST[large[s]])
        for v in range(MC.shape[1]):
            MC[large[s], v] = PMC[parent[s], v] - MC[small[s], v]


@numba.njit(cache=True, parallel=True)
def _best_splits(HIST, MC, data, colmask, nG, nH, level, params, out):
    """:func:`_best_split_hist` of every node of a level (node ``level[j]``, its histogram
    ``HIST[j]``), in parallel, into ``out`` (a :class:`LevelSplits`).

    The bundles are unpacked before the parallel loop, one field a statement: in a
    ``parallel=True`` function numba loses writes to arrays reached through a named tuple
    (numba issue #5872), and with numba 0.68 ``a, b = out.x, out.y`` ahead of the ``prange``
    loop lost the loop's writes to ``a`` and ``b`` too (the outputs stayed at their initial
    values); ``a = out.x`` and ``b = out.y`` as two statements keep them."""
    ncuts = data.ncuts
    n_cat = data.n_cat
    feat_missing = data.feat_missing
    mcw = params.mcw
    lam = params.lam
    alpha = params.alpha
    mds = params.mds
    onehot = params.onehot
    cat_thr = params.cat_thr
    r_best = out.best
    r_f = out.feature
    r_b = out.bin
    r_dl = out.missing_left
    r_cats = out.cats
    r_GL = out.GL
    r_HL = out.HL
    for j in numba.prange(level.size):
        k = level[j]
        (r_best[j], r_f[j], r_b[j], r_dl[j], r_cats[j], r_GL[j],
         r_HL[j]) = _best_split_hist(HIST[j], MC[j], ncuts, n_cat, colmask, feat_missing, nG[k],
                                     nH[k], mcw, (lam, alpha, mds), onehot, cat_thr)


@numba.njit(cache=True, parallel=True)
def _add_leaves(order, seg_lo, seg_hi, leaves, value, margin):
    """``margin[i] += value[k]`` for the rows ``i`` of every leaf ``k`` in ``leaves``."""
    for t in numba.prange(leaves.size):
        k = leaves[t]
        val = value[k]
        o = order[seg_lo[k]:seg_hi[k]]
        for j in range(o.size):
            margin[o[j]] += val


WORKSPACE_MAX_NODES = 64


def hist_workspace(n: int, p: int, n_bins: int, max_depth: int) -> HistWorkspace:
    """Scratch arrays for :func:`grow_hist` on ``n`` rows, ``p`` features and ``n_bins``
    bins (``max(ncuts) + 1``), allocated once per fit: fresh arrays of that size would cost a
    page fault per 4 KB at every tree (some 20 ms a tree at a million rows).  Histograms of
    levels with more than 64 nodes are allocated as needed."""
    nodes = min(2 ** max(0, max_depth - 1), WORKSPACE_MAX_NODES)
    m = max(1, n)
    return HistWorkspace(np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
                         np.empty((m, 2)), np.empty((m, 2)), np.empty((nodes, p, n_bins, 2)),
                         np.empty((nodes, p, n_bins, 2)), np.empty((nodes, p), np.int64),
                         np.empty((nodes, p), np.int64))


@numba.njit(cache=True)
def grow_hist(data, g, h, rows, colmask, params, tree, margin, ws):
    """Grow one tree on the binned rows ``data`` (a :class:`BinnedData`: ``XbT`` (p, n)
    column-major) from the rows ``rows`` (the bag, ascending), with the gradients ``g`` and
    hessians ``h`` (n,), splitting only on the features where ``colmask`` (p,) is set, and add
    its leaf values to ``margin`` (n,) at those rows.

    Level by level: the best split of every node of the level (from its histogram), then the
    partition of the rows of the nodes that split, then the children's histograms with the
    sibling-subtraction trick (only the child with fewer rows is summed; the other's histogram
    is the parent's minus it).  Each phase runs in parallel over nodes, or over (feature,
    node) pairs for the histograms, and none depends on the number of threads.  A node's rows
    stay a contiguous segment of one array, in ascending row order.

    Categorical features (``n_cat[v] > 0`` levels; their bins are the codes ``0 .. L - 1``,
    see :func:`binned_columns`) are split by sets of categories with
    :func:`best_split_categorical` (``params.onehot``: XGBoost's ``max_cat_to_onehot``,
    ``params.cat_thr``: its ``max_cat_threshold``); all other features by bins.

    ``params`` is a :class:`~pymc_trees.boosting.kernels.splits.SplitParams`.  Fills ``tree``
    (a :class:`~pymc_trees.boosting.kernels.splits.NodeArrays` of capacity
    ``2^(max_depth+1) - 1``, ``tree.cut`` the bins, int64: a row goes left when its bin is
    ``<= cut``).  ``ws`` is from :func:`hist_workspace`.  Returns the number of nodes used."""
    XbT, ncuts = data.XbT, data.ncuts
    max_depth, lam, alpha, mds, eta = (params.max_depth, params.lam, params.alpha, params.mds,
                                       params.eta)
    feature, cutbin, missing_left, cats = tree.feature, tree.cut, tree.missing_left, tree.cats
    left, value, loss_chg, cover = tree.left, tree.value, tree.loss_chg, tree.cover
    p = XbT.shape[0]
    B = 1
    for v in range(p):
        B = max(B, ncuts[v] + 1)
    nrows = rows.size
    order_buf, tmp, tmp2, gord, gh = ws.order, ws.tmp, ws.tmp2, ws.gord, ws.gh
    HA, HB, MA, MB = ws.HA, ws.HB, ws.MA, ws.MB
    order = order_buf[:nrows]
    order[:] = rows
    # gord[j]: (g, h) of the row order[j], where needed
    cap = feature.size
    seg_lo = np.zeros(cap, np.int64)
    seg_hi = np.zeros(cap, np.int64)
    nG = np.zeros(cap)
    nH = np.zeros(cap)
    leaves = np.empty(cap, np.int64)
    n_leaves = 0
    # gh: g and h side by side, one cache line per gathered row
    Gt, Ht = _root_gh(g, h, rows, gh, gord)
    seg_hi[0] = nrows
    nG[0] = Gt
    nH[0] = Ht
    n_nodes = 1
    level = np.zeros(1, np.int64)
    HIST = HA[:1]
    MC = MA[:1]
    if max_depth > 0:
        zero = np.zeros(1, np.int64)
        _build_hists(XbT, gord, order, zero, seg_hi[:1], zero, colmask, data.feat_missing,
                     HIST, MC)
    for depth in range(max_depth + 1):
        nl = level.size
        r_best = np.zeros(nl)
        r_f = np.full(nl, -1, np.int64)
        r_b = np.zeros(nl, np.int64)
        r_dl = np.ones(nl, np.bool_)
        r_cats = np.zeros(nl, np.uint64)
        r_GL = np.zeros(nl)
        r_HL = np.zeros(nl)
        if depth < max_depth:
            _best_splits(HIST, MC, data, colmask, nG, nH, level, params,
                         LevelSplits(r_best, r_f, r_b, r_dl, r_cats, r_GL, r_HL))
        split = np.zeros(nl, np.bool_)
        n_split = 0
        for j in range(nl):
            k = level[j]
            cover[k] = nH[k]
            loss_chg[k] = 0.0
            value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)  # internal: for pruning
            cats[k] = 0
            if r_f[j] >= 0 and r_best[j] > RT_EPS:
                split[j] = True
                feature[k] = r_f[j]
                cutbin[k] = r_b[j]
                missing_left[k] = r_dl[j]
                cats[k] = r_cats[j]
                loss_chg[k] = r_best[j]
                n_split += 1
            else:
                feature[k] = -1
                left[k] = -1
                leaves[n_leaves] = k
                n_leaves += 1
        if n_split == 0:
            break
        # partition the rows of the nodes that split
        s_idx = np.empty(n_split, np.int64)  # index j in the level of each split node
        s_lo = np.empty(n_split, np.int64)
        s_hi = np.empty(n_split, np.int64)
        s_f = np.empty(n_split, np.int64)
        s_b = np.empty(n_split, np.int64)
        s_dl = np.empty(n_split, np.bool_)
        s_cats = np.empty(n_split, np.uint64)
        c = 0
        for j in range(nl):
            if split[j]:
                k = level[j]
                s_idx[c] = j
                s_lo[c] = seg_lo[k]
                s_hi[c] = seg_hi[k]
                s_f[c] = feature[k]
                s_b[c] = cutbin[k]
                s_dl[c] = missing_left[k]
                s_cats[c] = cats[k]
                c += 1
        mid = np.empty(n_split, np.int64)
        _partition_nodes(XbT, ncuts, order, tmp, tmp2, s_lo, s_hi, s_f, s_b, s_dl, s_cats, mid)
        nxt = np.empty(2 * n_split, np.int64)
        small = np.empty(n_split, np.int64)  # position in nxt of the child with fewer rows
        large = np.empty(n_split, np.int64)
        for c in range(n_split):
            j = s_idx[c]
            k = level[j]
            lc = n_nodes
            rc = n_nodes + 1
            n_nodes += 2
            left[k] = lc
            seg_lo[lc] = seg_lo[k]
            seg_hi[lc] = mid[c]
            seg_lo[rc] = mid[c]
            seg_hi[rc] = seg_hi[k]
            nG[lc] = r_GL[j]
            nH[lc] = r_HL[j]
            nG[rc] = nG[k] - r_GL[j]
            nH[rc] = nH[k] - r_HL[j]
            nxt[2 * c] = lc
            nxt[2 * c + 1] = rc
            if mid[c] - seg_lo[k] <= seg_hi[k] - mid[c]:
                small[c] = 2 * c
                large[c] = 2 * c + 1
            else:
                small[c] = 2 * c + 1
                large[c] = 2 * c
        level = nxt
        if depth + 1 < max_depth:
            if 2 * n_split > HA.shape[0]:
                CHIST = np.empty((2 * n_split, p, B, 2))
                CM = np.empty((2 * n_split, p), np.int64)
            elif depth % 2 == 0:  # the levels alternate between the two buffers
                CHIST = HB[:2 * n_split]
                CM = MB[:2 * n_split]
            else:
                CHIST = HA[:2 * n_split]
                CM = MA[:2 * n_split]
            sm_lo = np.empty(n_split, np.int64)
            sm_hi = np.empty(n_split, np.int64)
            for c in range(n_split):
                sm_lo[c] = seg_lo[nxt[small[c]]]
                sm_hi[c] = seg_hi[nxt[small[c]]]
            _gather_gh(gh, order, sm_lo, sm_hi, gord)
            _build_hists(XbT, gord, order, sm_lo, sm_hi, small, colmask, data.feat_missing,
                         CHIST, CM)
            _subtract_nodes(HIST, MC, s_idx, CHIST, CM, small, large)
            HIST = CHIST
            MC = CM
        else:
            for j in range(level.size):
                k = level[j]
                feature[k] = -1
                left[k] = -1
                cats[k] = 0
                cover[k] = nH[k]
                loss_chg[k] = 0.0
                value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)
                leaves[n_leaves] = k
                n_leaves += 1
            break
    _add_leaves(order, seg_lo, seg_hi, leaves[:n_leaves], value, margin)
    return n_nodes
