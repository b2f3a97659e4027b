"""Gradient-boosted tree growing (bart-math section 7, XGBoost's objective): the histogram and
the exact greedy split finders.

Both grow one tree depth-wise (level by level, as XGBoost's ``grow_policy="depthwise"``) from
per-row first and second derivatives ``g``, ``h`` of the loss with respect to the margin, and
write it into flat node arrays in the packed layout of :mod:`pymc_trees.core.packed` (root at
0; the two children of a node side by side, ``right = left + 1``), so boosting and BART forests
share the prediction kernel.

XGBoost's rules, reproduced exactly (``src/tree/param.h``, ``updater_colmaker.cc``):

* leaf weight ``w(G, H) = -T(G) / (H + lambda)``, ``T`` the L1 soft threshold at ``alpha``,
  clipped to ``+-max_delta_step`` when that is not 0; 0 when ``H <= 0``;
* gain of a node ``-(2 G w + (H + lambda) w^2 + 2 alpha |w|)`` at its weight (``T(G)^2 / (H +
  lambda)`` without clipping); a split's ``loss_chg`` is the children's gains minus the
  parent's; a split needs ``H_left, H_right > 0`` and ``>= min_child_weight``, and is made when
  the best ``loss_chg`` exceeds 1e-6; loss changes are compared as float32, as XGBoost stores
  them, and ties go to the candidate found first (lower feature index, then scan order);
* leaves take ``learning_rate * w``; after growing, splits whose ``loss_chg < gamma`` are
  pruned bottom-up (XGBoost's ``prune`` updater compares ``loss_chg`` itself with gamma).

Missing values (NaN; in the histogram grower's binned data, the bin one past the last real
bin, see :func:`binned_columns`) are learned per split as in XGBoost's
sparsity-aware algorithm: both directions are tried when the feature has missing values in
training and the node has rows missing it, and ``missing_left`` records the better one (missing
right first, kept on ties); when the feature has missing values in training but none in the
node, NaN goes right (the missing-right scan comes first and the other direction would only tie
it); for features without missing values in training NaN goes left.  These are XGBoost's exact
method's choices.

Categorical features (level codes ``0 .. L - 1``, ``L <= 64``; see
:mod:`pymc_trees.core.tabular`) are split by sets of categories with XGBoost's hist rules
(``evaluate_splits.h``), in :func:`best_split_categorical`: one category against the rest when
``L < max_cat_to_onehot``, otherwise a partition found by sorting the node's categories by
their weight ``-G/(H + lambda)`` and scanning prefixes of that order (at most
``max_cat_threshold - 1`` categories), missing rows tried on both sides.  A categorical node
stores the codes that go left as the bit set ``cats`` (0 at numeric splits and leaves; never
0 at a categorical split), the packed rule shared with BART.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["OBJECTIVE_CODES", "RT_EPS", "MAX_CATEGORIES", "binned_columns", "grad_hess",
           "grow_hist", "hist_workspace", "grow_exact", "predict_tree_binned",
           "predict_tree_raw", "prune_gamma", "tree_capacity", "calc_weight", "node_gain",
           "leaf_index", "best_split_categorical"]

RT_EPS = 1e-6


def tree_capacity(max_depth: int) -> int:
    return 2 ** (max_depth + 1) - 1


@numba.njit(cache=True)
def calc_weight(G, H, lam, alpha, mds):
    if H <= 0.0:
        return 0.0
    if G > alpha:
        t = G - alpha
    elif G < -alpha:
        t = G + alpha
    else:
        t = 0.0
    w = -t / (H + lam)
    if mds != 0.0 and abs(w) > mds:
        w = mds if w > 0 else -mds
    return w


@numba.njit(cache=True)
def node_gain(G, H, lam, alpha, mds):
    if H <= 0.0:
        return 0.0
    if mds == 0.0 and alpha == 0.0:
        return G * G / (H + lam)  # the same value, with one division
    w = calc_weight(G, H, lam, alpha, mds)
    return -(2.0 * G * w + (H + lam) * w * w + 2.0 * alpha * abs(w))


@numba.njit(cache=True)
def _f32(x):
    """A loss change as XGBoost stores and compares it (float32): candidates whose gains
    differ only by the rounding of sums taken in different orders tie, and the first wins."""
    return float(np.float32(x))


@numba.njit(cache=True)
def _valid(HL, HR, mcw):
    return HL > 0.0 and HR > 0.0 and HL >= mcw and HR >= mcw


MAX_CATEGORIES = 64  # levels a categorical split can hold: the bits of the packed ``cats``


@numba.njit(cache=True)
def _cat_key(G, H, lam, alpha, mds):
    """XGBoost's sort key of a category in a partition-based split (``CalcWeightCat``, which
    is ``CalcWeight`` of ``param.h``): its leaf weight ``-T(G)/(H + lambda)`` (clipped at
    ``max_delta_step``; 0 when ``H <= 0``; ``min_child_weight`` plays no part), as float32."""
    return np.float32(calc_weight(G, H, lam, alpha, mds))


@numba.njit(cache=True)
def _level_mask(L):
    """The bit set of the codes ``0 .. L - 1`` (``L <= 64``)."""
    if L >= 64:
        return ~np.uint64(0)
    return (np.uint64(1) << np.uint64(L)) - np.uint64(1)


@numba.njit(cache=True)
def best_split_categorical(hv, L, Gt, Ht, root, mcw, lam, alpha, mds, max_cat_to_onehot,
                           max_cat_threshold, best):
    """The best split of one categorical feature at a node, XGBoost's hist rules
    (``evaluate_splits.h``: ``EnumerateOneHot``, ``EnumeratePart``).

    Parameters
    ----------
    hv : ndarray of shape (>= L, 2)
        ``hv[c] = (sum g, sum h)`` over the node's rows whose code is ``c``; rows missing the
        feature are not in it (they are ``(Gt, Ht)`` minus its sum).
    L : int
        Number of levels (codes ``0 .. L - 1``), at most 64.
    Gt, Ht : float
        The node's sums over all its rows; ``root`` its gain.
    max_cat_to_onehot, max_cat_threshold : int
        One-vs-rest splits when ``L < max_cat_to_onehot``; otherwise partitions, scanning at
        most ``max_cat_threshold - 1`` categories into a side.
    best : float
        Loss change to beat (strictly).

    Returns
    -------
    chg : float
        The best loss change found, or ``best`` when none beat it.
    found : bool
    missing_left : bool
    cats : uint64
        The codes that go left (never 0: see below).
    GL, HL : float
        Sums of the left child (missing rows included when ``missing_left``).

    Notes
    -----
    One-vs-rest (``L < max_cat_to_onehot``): for each category ``c`` in code order, ``c``
    alone goes right and the other categories left, first with the missing rows left, then
    with them right.  Partition: the categories are stably sorted by XGBoost's key, their
    weight ``-G/(H + lambda)`` (see :func:`_cat_key`), i.e. by descending ``G/(H + lambda)``;
    a forward scan sends growing prefixes of that order right and the rest, with the missing
    rows, left; a backward scan sends growing suffixes left and the rest, with the missing
    rows, right; each scan stops after ``min(max_cat_threshold, L) - 1`` categories.  Both
    directions are always tried (XGBoost does not look for missing rows first).  Candidates
    are compared as float32 and the first strictly best wins.  Categories without rows at the
    node are scanned like the others (they go where their place in the order puts them).  A
    split whose left side holds no category (one level, its rows right, the missing rows left)
    is returned mirrored, so that ``cats != 0`` marks every categorical split.
    """
    found = False
    b_dl = True
    b_cats = np.uint64(0)
    b_GL = 0.0
    b_HL = 0.0
    one = np.uint64(1)
    full = _level_mask(L)
    if L < max_cat_to_onehot:
        Gp = 0.0
        Hp = 0.0
        for c in range(L):
            Gp += hv[c, 0]
            Hp += hv[c, 1]
        Gm = Gt - Gp
        Hm = Ht - Hp
        for c in range(L):
            rest = full & ~(one << np.uint64(c))
            for missing_right in (False, True):
                GR = hv[c, 0] + (Gm if missing_right else 0.0)
                HR = hv[c, 1] + (Hm if missing_right else 0.0)
                GL = Gt - GR
                HL = Ht - HR
                if _valid(HL, HR, mcw):
                    chg = _f32(node_gain(GL, HL, lam, alpha, mds)
                               + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, found, b_dl, b_cats, b_GL, b_HL = (chg, True, not missing_right,
                                                                 rest, GL, HL)
    else:
        keys = np.empty(L, np.float32)
        for c in range(L):
            keys[c] = _cat_key(hv[c, 0], hv[c, 1], lam, alpha, mds)
        order = np.argsort(keys, kind="mergesort")
        nb = min(max_cat_threshold, L)
        # forward: a prefix of the order right, the rest and the missing rows left
        GR = 0.0
        HR = 0.0
        right = np.uint64(0)
        for j in range(nb - 1):
            c = order[j]
            GR += hv[c, 0]
            HR += hv[c, 1]
            right |= one << np.uint64(c)
            GL = Gt - GR
            HL = Ht - HR
            if _valid(HL, HR, mcw):
                chg = _f32(node_gain(GL, HL, lam, alpha, mds)
                           + node_gain(GR, HR, lam, alpha, mds) - root)
                if chg > best:
                    best, found, b_dl, b_cats, b_GL, b_HL = chg, True, True, full & ~right, GL, HL
        # backward: a suffix of the order left, the rest and the missing rows right
        GL = 0.0
        HL = 0.0
        lset = np.uint64(0)
        for j in range(L - 1, L - nb, -1):
            c = order[j]
            GL += hv[c, 0]
            HL += hv[c, 1]
            lset |= one << np.uint64(c)
            GR = Gt - GL
            HR = Ht - HL
            if _valid(HL, HR, mcw):
                chg = _f32(node_gain(GL, HL, lam, alpha, mds)
                           + node_gain(GR, HR, lam, alpha, mds) - root)
                if chg > best:
                    best, found, b_dl, b_cats, b_GL, b_HL = chg, True, False, lset, GL, HL
    if found and b_cats == 0:  # only missing rows left: mirror the split
        b_cats = full
        b_dl = not b_dl
        b_GL = Gt - b_GL
        b_HL = Ht - b_HL
    return best, found, b_dl, b_cats, b_GL, b_HL


@numba.njit(cache=True, inline="always")
def _cat_left(cats, code):
    """Whether the category ``code`` (a non-negative integer below 64) goes left."""
    return ((cats >> np.uint64(code)) & np.uint64(1)) != 0


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
def _best_split_hist(HIST, MC, ncuts, n_cat, colmask, feat_missing, Gt, Ht, mcw, lam, alpha,
                     mds, onehot, cat_thr):
    """Best (loss_chg, feature, bin, missing_left, cats, GL, HL) of a node from its histogram
    (``cats`` 0 for a numeric split; features with ``n_cat[v] > 0`` are categorical, their
    bins the codes, see :func:`best_split_categorical`)."""
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
                if _valid(HL, HR, mcw):
                    chg = _f32(node_gain(GL, HL, lam, alpha, mds)
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
                if _valid(HL2, HR, mcw):
                    chg = _f32(node_gain(GL2, HL2, lam, alpha, mds)
                               + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, bf, bb, bdl, bcats, bGL, bHL = chg, v, b, True, z, GL2, HL2
            else:
                GR = Gt - GL
                HR = Ht - HL
                if _valid(HL, HR, mcw):
                    chg = _f32(node_gain(GL, HL, lam, alpha, mds)
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
def _best_splits(HIST, MC, ncuts, n_cat, colmask, feat_missing, nG, nH, level, mcw, lam, alpha,
                 mds, onehot, cat_thr, r_best, r_f, r_b, r_dl, r_cats, r_GL, r_HL):
    """:func:`_best_split_hist` of every node of a level, in parallel."""
    for j in numba.prange(level.size):
        k = level[j]
        (r_best[j], r_f[j], r_b[j], r_dl[j], r_cats[j], r_GL[j],
         r_HL[j]) = _best_split_hist(HIST[j], MC[j], ncuts, n_cat, colmask, feat_missing, nG[k],
                                     nH[k], mcw, lam, alpha, mds, onehot, cat_thr)


@numba.njit(cache=True, parallel=True)
def _add_leaves(order, seg_lo, seg_hi, leaves, value, margin):
    """``margin[i] += value[k]`` for the rows ``i`` of every leaf ``k`` in ``leaves``."""
    for t in numba.prange(leaves.size):
        k = leaves[t]
        val = value[k]
        o = order[seg_lo[k]:seg_hi[k]]
        for j in range(o.size):
            margin[o[j]] += val


OBJECTIVE_CODES = {"reg:squarederror": 0, "binary:logistic": 1, "multi:softprob": 2,
                   "count:poisson": 3, "reg:quantileerror": 4}


@numba.njit(cache=True, parallel=True)
def grad_hess(code, margin, y, w, alphas, mds, G, H):
    """Gradients and hessians of the loss with respect to the margin, times the sample weights
    ``w``: ``G[k, i]``, ``H[k, i]`` for the margins ``margin`` (n, K) and targets ``y`` (n,);
    ``code`` from ``OBJECTIVE_CODES``.  Squared error: ``m - y``, 1.  Logistic: ``p - y``,
    ``max(p(1-p), 1e-16)``.  Softmax (``y`` the class index): ``p_k - [y = k]``,
    ``max(2 p_k (1-p_k), 1e-16)`` (XGBoost's).  Poisson: ``exp(m) - y``, ``exp(m + mds)``
    (XGBoost inflates the hessian by ``max_delta_step``).  Quantile ``alphas[k]``:
    ``-alpha`` when ``y >= m``, else ``1 - alpha``; 1.  Elementwise, in parallel over rows."""
    n, K = margin.shape
    for i in numba.prange(n):
        wi = w[i]
        if code == 0:
            for k in range(K):
                G[k, i] = (margin[i, k] - y[i]) * wi
                H[k, i] = wi
        elif code == 1:
            for k in range(K):
                pr = 1.0 / (1.0 + np.exp(-margin[i, k]))
                G[k, i] = (pr - y[i]) * wi
                H[k, i] = max(pr * (1.0 - pr), 1e-16) * wi
        elif code == 2:
            mx = margin[i, 0]
            for k in range(1, K):
                mx = max(mx, margin[i, k])
            s = 0.0
            for k in range(K):
                s += np.exp(margin[i, k] - mx)
            lse = mx + np.log(s)
            for k in range(K):
                pr = np.exp(margin[i, k] - lse)
                G[k, i] = (pr - (1.0 if y[i] == k else 0.0)) * wi
                H[k, i] = max(2.0 * pr * (1.0 - pr), 1e-16) * wi
        elif code == 3:
            for k in range(K):
                G[k, i] = (np.exp(margin[i, k]) - y[i]) * wi
                H[k, i] = np.exp(margin[i, k] + mds) * wi
        else:
            for k in range(K):
                G[k, i] = (-alphas[k] if y[i] - margin[i, k] >= 0.0 else 1.0 - alphas[k]) * wi
                H[k, i] = wi


WORKSPACE_MAX_NODES = 64


def hist_workspace(n: int, p: int, n_bins: int, max_depth: int) -> tuple:
    """Scratch arrays for :func:`grow_hist` on ``n`` rows, ``p`` features and ``n_bins``
    bins (``max(ncuts) + 1``), allocated once per fit: fresh arrays of that size would cost a
    page fault per 4 KB at every tree (some 20 ms a tree at a million rows).  Histograms of
    levels with more than 64 nodes are allocated as needed."""
    nodes = min(2 ** max(0, max_depth - 1), WORKSPACE_MAX_NODES)
    m = max(1, n)
    return (np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty((m, 2)), np.empty((m, 2)), np.empty((nodes, p, n_bins, 2)),
            np.empty((nodes, p, n_bins, 2)), np.empty((nodes, p), np.int64),
            np.empty((nodes, p), np.int64))


@numba.njit(cache=True)
def grow_hist(XbT, ncuts, n_cat, g, h, rows, colmask, feat_missing, max_depth, mcw, lam, alpha,
              mds, eta, onehot, cat_thr, feature, cutbin, missing_left, cats, left, value,
              loss_chg, cover, margin, ws):
    """Grow one tree on the column-major binned data ``XbT`` (p, n) from the rows ``rows``
    (the bag, ascending), and add its leaf values to ``margin`` at those rows.

    Level by level: the best split of every node of the level (from its histogram), then the
    partition of the rows of the nodes that split, then the children's histograms with the
    sibling-subtraction trick (only the child with fewer rows is summed; the other's histogram
    is the parent's minus it).  Each phase runs in parallel over nodes, or over (feature,
    node) pairs for the histograms, and none depends on the number of threads.  A node's rows
    stay a contiguous segment of one array, in ascending row order.

    Categorical features (``n_cat[v] > 0`` levels; their bins are the codes ``0 .. L - 1``,
    see :func:`binned_columns`) are split by sets of categories with
    :func:`best_split_categorical` (``onehot``: XGBoost's ``max_cat_to_onehot``,
    ``cat_thr``: its ``max_cat_threshold``); all other features by bins.

    Fills the node arrays (capacity ``2^(max_depth+1) - 1``): ``feature`` (-1 at leaves),
    ``cutbin`` (a row goes left when its bin is ``<= cutbin``), ``missing_left``, ``cats``
    (the codes that go left at a categorical split, else 0), ``left``, ``value`` (leaves:
    learning rate times the weight; internal nodes too, for pruning), ``loss_chg``, ``cover``
    (sum of h).  ``ws`` is from :func:`hist_workspace`.  Returns the number of nodes used."""
    p = XbT.shape[0]
    B = 1
    for v in range(p):
        B = max(B, ncuts[v] + 1)
    nrows = rows.size
    order_buf, tmp, tmp2, gord, gh, HA, HB, MA, MB = ws
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
        _build_hists(XbT, gord, order, zero, seg_hi[:1], zero, colmask, feat_missing, HIST, MC)
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
            _best_splits(HIST, MC, ncuts, n_cat, colmask, feat_missing, nG, nH, level, mcw, lam,
                         alpha, mds, onehot, cat_thr, r_best, r_f, r_b, r_dl, r_cats, r_GL,
                         r_HL)
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
            _build_hists(XbT, gord, order, sm_lo, sm_hi, small, colmask, feat_missing, CHIST, CM)
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


@numba.njit(cache=True)
def grow_exact(XT, sorted_idx, n_present, feat_missing, n_cat, g, h, in_bag, colmask, max_depth,
               mcw, lam, alpha, mds, eta, onehot, cat_thr, feature, threshold, missing_left,
               cats, left, value, loss_chg, cover):
    """Exact greedy split finding (XGBoost's ``tree_method="exact"``, ``updater_colmaker``).

    ``XT`` (p, n) raw values; ``sorted_idx[v, :n_present[v]]`` the rows with a value of
    feature v in ascending order of it (NaN rows excluded).  Level by level, every feature's
    sorted rows are scanned once backward (missing rows go left) and, when the feature has
    missing values, once forward (missing right), with per-node running sums; a candidate
    between two consecutive distinct values of a node's rows is their midpoint (the lower
    value when the midpoint rounds onto the upper one), and a candidate sending every row with
    a value one way and the missing rows the other is tried at the end of each scan.  A row
    goes left when ``x <= threshold``.

    A categorical feature (``n_cat[v] > 0`` levels, ``XT[v]`` its codes) is not scanned: its
    per-node sums by code are taken in one pass over the rows and split as in the histogram
    method (:func:`best_split_categorical`; the codes are exact bins), in feature order with
    the others, so ties still go to the lower feature index.  XGBoost's exact method has no
    categorical splits; this is its hist method's rule.  Fills the node arrays (``cats``: the
    codes that go left at a categorical split, else 0); returns the number of nodes."""
    p, n = XT.shape
    cap = feature.size
    position = np.full(n, -1, np.int64)
    nG = np.zeros(cap)
    nH = np.zeros(cap)
    nrows = np.zeros(cap, np.int64)
    npres = np.zeros(cap, np.int64)
    for i in range(n):
        if in_bag[i]:
            position[i] = 0
            nG[0] += g[i]
            nH[0] += h[i]
            nrows[0] += 1
    n_nodes = 1
    level = np.zeros(1, np.int64)
    RG = np.zeros(cap)
    RH = np.zeros(cap)
    last = np.zeros(cap)
    empty = np.ones(cap, np.bool_)
    best = np.zeros(cap)
    bfeat = np.full(cap, -1, np.int64)
    bthr = np.zeros(cap)
    bdl = np.ones(cap, np.bool_)
    bcats = np.zeros(cap, np.uint64)
    root = np.zeros(cap)
    slot = np.zeros(cap, np.int64)  # position of a node in its level
    Lmax = 0
    for v in range(p):
        Lmax = max(Lmax, n_cat[v])
    for depth in range(max_depth + 1):
        for j in range(level.size):
            k = level[j]
            cover[k] = nH[k]
            loss_chg[k] = 0.0
            best[k] = 0.0
            bfeat[k] = -1
            bcats[k] = 0
            cats[k] = 0
            slot[k] = j
            root[k] = node_gain(nG[k], nH[k], lam, alpha, mds)
        if depth < max_depth:
            CH = np.zeros((level.size, max(Lmax, 1), 2))
            for v in range(p):
                if not colmask[v]:
                    continue
                if n_cat[v] > 0:
                    L = n_cat[v]
                    CH[:, :L, :] = 0.0
                    for i in range(n):
                        k = position[i]
                        x = XT[v, i]
                        if k >= 0 and x == x:
                            c = np.int64(x)
                            CH[slot[k], c, 0] += g[i]
                            CH[slot[k], c, 1] += h[i]
                    for j in range(level.size):
                        k = level[j]
                        chg, found, dl, cs, _, _ = best_split_categorical(
                            CH[j], L, nG[k], nH[k], root[k], mcw, lam, alpha, mds, onehot,
                            cat_thr, best[k])
                        if found:
                            best[k] = chg
                            bfeat[k] = v
                            bthr[k] = 0.0
                            bdl[k] = dl
                            bcats[k] = cs
                    continue
                for d_step in (1, -1):
                    if d_step == 1 and not feat_missing[v]:
                        continue
                    for j in range(level.size):
                        k = level[j]
                        RG[k] = 0.0
                        RH[k] = 0.0
                        empty[k] = True
                        if d_step == 1:
                            npres[k] = 0
                    total = n_present[v]
                    for t in range(total):
                        idx = t if d_step == 1 else total - 1 - t
                        i = sorted_idx[v, idx]
                        k = position[i]
                        if k < 0:
                            continue
                        if d_step == 1:
                            npres[k] += 1
                        elif feat_missing[v] and npres[k] == nrows[k]:
                            continue  # no missing rows here: the forward scan said it all
                        x = XT[v, i]
                        if empty[k]:
                            RG[k] += g[i]
                            RH[k] += h[i]
                            last[k] = x
                            empty[k] = False
                            continue
                        if x != last[k] and RH[k] >= mcw:
                            cG = nG[k] - RG[k]
                            cH = nH[k] - RH[k]
                            if d_step == -1:  # running = right side, rest (with missing) left
                                GLc, HLc, GRc, HRc = cG, cH, RG[k], RH[k]
                                lo_v, hi_v = x, last[k]
                            else:  # running = left side, rest (with missing) right
                                GLc, HLc, GRc, HRc = RG[k], RH[k], cG, cH
                                lo_v, hi_v = last[k], x
                            if _valid(HLc, HRc, mcw):
                                chg = _f32(node_gain(GLc, HLc, lam, alpha, mds)
                                           + node_gain(GRc, HRc, lam, alpha, mds) - root[k])
                                if chg > best[k]:
                                    thr = 0.5 * (lo_v + hi_v)
                                    if thr >= hi_v:
                                        thr = lo_v
                                    best[k] = chg
                                    bfeat[k] = v
                                    bthr[k] = thr
                                    bdl[k] = d_step == -1
                                    bcats[k] = 0
                        RG[k] += g[i]
                        RH[k] += h[i]
                        last[k] = x
                    # every row with a value on the scanned side, the missing ones on the other
                    for j in range(level.size):
                        k = level[j]
                        if empty[k] or not feat_missing[v] or npres[k] == nrows[k]:
                            continue  # the rows with a value against the missing ones
                        cG = nG[k] - RG[k]
                        cH = nH[k] - RH[k]
                        if d_step == -1:
                            GLc, HLc, GRc, HRc = cG, cH, RG[k], RH[k]
                        else:
                            GLc, HLc, GRc, HRc = RG[k], RH[k], cG, cH
                        if RH[k] >= mcw and cH >= mcw and _valid(HLc, HRc, mcw):
                            chg = _f32(node_gain(GLc, HLc, lam, alpha, mds)
                                       + node_gain(GRc, HRc, lam, alpha, mds) - root[k])
                            if chg > best[k]:
                                gap = abs(last[k]) + RT_EPS
                                best[k] = chg
                                bfeat[k] = v
                                bthr[k] = last[k] + gap if d_step == 1 else last[k] - gap
                                bdl[k] = d_step == -1
                                bcats[k] = 0
        n_split = 0
        for j in range(level.size):
            k = level[j]
            if depth < max_depth and bfeat[k] >= 0 and best[k] > RT_EPS:
                n_split += 1
        nxt = np.empty(2 * n_split, np.int64)
        c = 0
        for j in range(level.size):
            k = level[j]
            value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)
            if depth < max_depth and bfeat[k] >= 0 and best[k] > RT_EPS:
                feature[k] = bfeat[k]
                threshold[k] = bthr[k]
                missing_left[k] = bdl[k]
                cats[k] = bcats[k]
                loss_chg[k] = best[k]
                left[k] = n_nodes
                for cc in (n_nodes, n_nodes + 1):
                    nG[cc] = 0.0
                    nH[cc] = 0.0
                    nrows[cc] = 0
                nxt[c] = n_nodes
                nxt[c + 1] = n_nodes + 1
                c += 2
                n_nodes += 2
            else:
                feature[k] = -1
                left[k] = -1
        if n_split == 0:
            break
        # route the bag's rows to the children
        for i in range(n):
            k = position[i]
            if k < 0:
                continue
            if feature[k] < 0:
                position[i] = -1
                continue
            x = XT[feature[k], i]
            if x != x:
                go_left = missing_left[k]
            elif cats[k] != 0:
                go_left = _cat_left(cats[k], np.int64(x))
            else:
                go_left = x <= threshold[k]
            c = left[k] if go_left else left[k] + 1
            position[i] = c
            # node sums recomputed from the rows, in row order (as XGBoost's colmaker)
            nG[c] += g[i]
            nH[c] += h[i]
            nrows[c] += 1
        level = nxt
    return n_nodes


@numba.njit(cache=True)
def prune_gamma(feature, left, value, loss_chg, gamma, n_nodes):
    """XGBoost's ``prune`` updater: bottom-up, a split whose two children are leaves becomes
    a leaf when its ``loss_chg < gamma`` (its value, set by the growers, is the learning rate
    times its weight).  Returns the number of splits pruned."""
    pruned = 0
    changed = True
    while changed:
        changed = False
        for k in range(n_nodes - 1, -1, -1):
            if feature[k] >= 0:
                lc = left[k]
                if feature[lc] < 0 and feature[lc + 1] < 0 and loss_chg[k] < gamma:
                    feature[k] = -1
                    left[k] = -1
                    pruned += 1
                    changed = True
    return pruned


@numba.njit(cache=True)
def predict_tree_binned(feature, cutbin, missing_left, cats, left, value, XbT, miss, rows, out):
    """``out[i] += tree(row i)`` for the binned rows ``rows`` of ``XbT`` (p, n), in which
    ``miss`` is the bin of a missing value (as from :func:`binned_columns`); a node with
    ``cats[k] != 0`` sends the codes (bins) whose bits are set left."""
    for j in range(rows.size):
        i = rows[j]
        k = 0
        while feature[k] >= 0:
            b = XbT[feature[k], i]
            if b == miss:
                go_left = missing_left[k]
            elif cats[k] != 0:
                go_left = _cat_left(cats[k], b & 63)
            else:
                go_left = b <= cutbin[k]
            k = left[k] if go_left else left[k] + 1
        out[i] += value[k]


@numba.njit(cache=True, inline="always")
def _leaf_raw(feature, threshold, missing_left, cats, left, XT, i):
    k = 0
    while feature[k] >= 0:
        x = XT[feature[k], i]
        if x != x:
            go_left = missing_left[k]
        elif cats[k] != 0:
            go_left = 0.0 <= x < 64.0 and _cat_left(cats[k], np.int64(x))
        else:
            go_left = x <= threshold[k]
        k = left[k] if go_left else left[k] + 1
    return k


@numba.njit(cache=True)
def predict_tree_raw(feature, threshold, missing_left, cats, left, value, XT, out):
    """``out[i] += tree(row i)`` for raw rows ``XT`` (p, n); NaN follows ``missing_left``; at
    a node with ``cats[k] != 0`` the codes whose bits are set go left (the packed rule)."""
    for i in range(XT.shape[1]):
        out[i] += value[_leaf_raw(feature, threshold, missing_left, cats, left, XT, i)]


@numba.njit(cache=True)
def leaf_index(feature, threshold, missing_left, cats, left, XT, out):
    """``out[i]`` = the leaf (node index) that raw row i of ``XT`` (p, n) reaches."""
    for i in range(XT.shape[1]):
        out[i] = _leaf_raw(feature, threshold, missing_left, cats, left, XT, i)
