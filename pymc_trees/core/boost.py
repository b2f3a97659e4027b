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

Missing values (NaN; ``MISSING_BIN`` in binned data) are learned per split as in XGBoost's
sparsity-aware algorithm: both directions are tried when the feature has missing values in
training and the node has rows missing it, and ``missing_left`` records the better one (missing
right first, kept on ties); when the feature has missing values in training but none in the
node, NaN goes right (the missing-right scan comes first and the other direction would only tie
it); for features without missing values in training NaN goes left.  These are XGBoost's exact
method's choices.
"""

from __future__ import annotations

import numba
import numpy as np

from .binning import MISSING_BIN

__all__ = ["MISSING_BIN", "RT_EPS", "grow_hist", "grow_exact", "predict_tree_binned",
           "predict_tree_raw", "prune_gamma", "tree_capacity", "calc_weight", "node_gain",
           "leaf_index"]

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


@numba.njit(cache=True, parallel=True)
def _build_hist(XbT, gh, order, lo, hi, colmask, HIST, MC, gord):
    """Histogram of the rows ``order[lo:hi]`` of the column-major bins ``XbT`` (p, n):
    ``HIST[v, b] = (sum g, sum h)`` over the rows in bin b of feature v (missing rows skipped;
    ``MC[v]`` counts them).  ``gh`` (n, 2) holds g and h side by side; they are first gathered
    into ``gord`` in the node's row order (rows of a node stay in ascending order, so every
    column is read forward).  Parallel over features: each feature sums its rows in the same
    order whatever the number of threads, so the result does not depend on it."""
    p = XbT.shape[0]
    size = hi - lo
    for j in range(size):
        i = order[lo + j]
        gord[j, 0] = gh[i, 0]
        gord[j, 1] = gh[i, 1]
    for v in numba.prange(p):
        hv = HIST[v]
        hv[:, :] = 0.0
        if not colmask[v]:
            MC[v] = 0
            continue
        col = XbT[v]
        miss = 0
        for j in range(size):
            b = col[order[lo + j]]
            if b != MISSING_BIN:
                hv[b, 0] += gord[j, 0]
                hv[b, 1] += gord[j, 1]
            else:
                miss += 1
        MC[v] = miss


HIST_BLOCKS_MAX = 16
HIST_BLOCK_MIN = 2048
# below this fraction of the rows, a node's histogram is built row by row (see grow_hist)
ROWWISE_FRACTION = 1.0 / 4.0


@numba.njit(cache=True, parallel=True)
def _build_hist_rows(Xb, gh, order, lo, hi, colmask, HIST, MC):
    """As :func:`_build_hist` from the row-major bins ``Xb`` (n, p): each of the node's rows
    is read whole (one cache line), which beats reading every column when the node holds few
    of the rows.  The rows are cut into at most 16 blocks of at least 2048 (a function of the
    node's size only), summed in parallel into their own histograms and added in block order,
    so the result does not depend on the number of threads."""
    p = Xb.shape[1]
    B = HIST.shape[1]
    size = hi - lo
    nblk = min(HIST_BLOCKS_MAX, max(1, (size + HIST_BLOCK_MIN - 1) // HIST_BLOCK_MIN))
    step = (size + nblk - 1) // nblk
    LOC = np.zeros((nblk, p, B, 2))
    LM = np.zeros((nblk, p), np.int64)
    for blk in numba.prange(nblk):
        start = lo + blk * step
        stop = min(hi, start + step)
        loc = LOC[blk]
        lm = LM[blk]
        for j in range(start, stop):
            i = order[j]
            gi = gh[i, 0]
            hi_ = gh[i, 1]
            for v in range(p):
                b = Xb[i, v]
                if b != MISSING_BIN:
                    loc[v, b, 0] += gi
                    loc[v, b, 1] += hi_
                else:
                    lm[v] += 1
    for v in range(p):
        MC[v] = 0
        for b in range(B):
            HIST[v, b, 0] = 0.0
            HIST[v, b, 1] = 0.0
    for blk in range(nblk):
        for v in range(p):
            if not colmask[v]:
                continue
            MC[v] += LM[blk, v]
            for b in range(B):
                HIST[v, b, 0] += LOC[blk, v, b, 0]
                HIST[v, b, 1] += LOC[blk, v, b, 1]


@numba.njit(cache=True)
def _subtract(P, S, out):
    """``out = P - S`` elementwise, without temporaries."""
    a = P.ravel()
    b = S.ravel()
    o = out.ravel()
    for t in range(a.size):
        o[t] = a[t] - b[t]


@numba.njit(cache=True)
def _best_split_hist(HIST, MC, ncuts, colmask, feat_missing, Gt, Ht, mcw, lam, alpha, mds):
    """Best (loss_chg, feature, bin, missing_left, GL, HL) of a node from its histogram."""
    root = node_gain(Gt, Ht, lam, alpha, mds)
    best = 0.0
    bf = -1
    bb = 0
    bdl = True
    bGL = 0.0
    bHL = 0.0
    for v in range(HIST.shape[0]):
        if not colmask[v] or ncuts[v] == 0:
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
                        best, bf, bb, bdl, bGL, bHL = chg, v, b, False, GL, HL
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
                        best, bf, bb, bdl, bGL, bHL = chg, v, b, True, GL2, HL2
            else:
                GR = Gt - GL
                HR = Ht - HL
                if _valid(HL, HR, mcw):
                    chg = _f32(node_gain(GL, HL, lam, alpha, mds)
                               + node_gain(GR, HR, lam, alpha, mds) - root)
                    if chg > best:
                        best, bf, bb, bdl, bGL, bHL = chg, v, b, True, GL, HL
    return best, bf, bb, bdl, bGL, bHL


@numba.njit(cache=True)
def _partition(XbT, order, lo, hi, v, b, dl, tmp):
    """Stable partition of ``order[lo:hi]``: rows going left first (both sides keep their
    ascending row order); returns the boundary."""
    col = XbT[v]
    nl = lo
    nr = 0
    for j in range(lo, hi):
        i = order[j]
        x = col[i]
        go_left = (x <= b) if x != MISSING_BIN else dl
        if go_left:
            order[nl] = i
            nl += 1
        else:
            tmp[nr] = i
            nr += 1
    for j in range(nr):
        order[nl + j] = tmp[j]
    return nl


@numba.njit(cache=True, parallel=True)
def grow_hist(XbT, Xb, ncuts, g, h, rows, colmask, feat_missing, max_depth, mcw, lam, alpha,
              mds, eta, feature, cutbin, missing_left, left, value, loss_chg, cover, margin):
    """Grow one tree on the binned data, column-major ``XbT`` (p, n) and the same row-major
    ``Xb`` (n, p), from the rows ``rows`` (the bag, ascending), and add its leaf values to
    ``margin`` at those rows.  A node's histogram is built column by column, or row by row
    when it holds fewer than 1/16 of the rows (its rows are then too sparse in every column
    for reading columns to pay).

    Histograms with the sibling-subtraction trick: at every split only the child with fewer
    rows is scanned; the other's histogram is the parent's minus it.  Fills the node arrays
    (capacity ``2^(max_depth+1) - 1``): ``feature`` (-1 at leaves), ``cutbin`` (a row goes
    left when its bin is ``<= cutbin``), ``missing_left``, ``left``, ``value`` (leaves:
    learning rate times the weight), ``loss_chg``, ``cover`` (sum of h).  Returns the number
    of nodes used."""
    p = XbT.shape[0]
    B = 1
    for v in range(p):
        B = max(B, ncuts[v] + 1)
    nrows = rows.size
    gord = np.empty((max(1, nrows), 2))
    gh = np.empty((g.size, 2))
    for j in range(nrows):
        i = rows[j]
        gh[i, 0] = g[i]
        gh[i, 1] = h[i]
    order = rows.copy()
    tmp = np.empty(max(1, nrows), order.dtype)
    cap = feature.size
    seg_lo = np.zeros(cap, np.int64)
    seg_hi = np.zeros(cap, np.int64)
    nG = np.zeros(cap)
    nH = np.zeros(cap)
    Gt = 0.0
    Ht = 0.0
    for j in range(nrows):
        Gt += g[rows[j]]
        Ht += h[rows[j]]
    seg_hi[0] = nrows
    nG[0] = Gt
    nH[0] = Ht
    n_nodes = 1
    level = np.zeros(1, np.int64)
    HIST = np.zeros((1, p, B, 2))
    MC = np.zeros((1, p), np.int64)
    if max_depth > 0:
        _build_hist(XbT, gh, order, 0, nrows, colmask, HIST[0], MC[0], gord)
    for depth in range(max_depth + 1):
        nl = level.size
        split = np.zeros(nl, np.bool_)
        sGL = np.zeros(nl)
        sHL = np.zeros(nl)
        n_split = 0
        r_best = np.zeros(nl)
        r_f = np.full(nl, -1, np.int64)
        r_b = np.zeros(nl, np.int64)
        r_dl = np.ones(nl, np.bool_)
        r_GL = np.zeros(nl)
        r_HL = np.zeros(nl)
        if depth < max_depth:
            # the nodes of a level are independent: evaluate them in parallel
            for j in numba.prange(nl):
                k = level[j]
                (r_best[j], r_f[j], r_b[j], r_dl[j], r_GL[j],
                 r_HL[j]) = _best_split_hist(HIST[j], MC[j], ncuts, colmask, feat_missing, nG[k],
                                             nH[k], mcw, lam, alpha, mds)
        for j in range(nl):
            k = level[j]
            cover[k] = nH[k]
            loss_chg[k] = 0.0
            if depth < max_depth:
                best, bf, bb, bdl, bGL, bHL = (r_best[j], r_f[j], r_b[j], r_dl[j], r_GL[j],
                                               r_HL[j])
                if bf >= 0 and best > RT_EPS:
                    split[j] = True
                    feature[k] = bf
                    cutbin[k] = bb
                    missing_left[k] = bdl
                    loss_chg[k] = best
                    sGL[j] = bGL
                    sHL[j] = bHL
                    n_split += 1
            if not split[j]:
                feature[k] = -1
                left[k] = -1
                value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)
                for t in range(seg_lo[k], seg_hi[k]):
                    margin[order[t]] += value[k]
        if n_split == 0:
            break
        nxt = np.empty(2 * n_split, np.int64)
        need_hist = depth + 1 < max_depth
        if need_hist:
            CHIST = np.empty((2 * n_split, p, B, 2))
            CM = np.empty((2 * n_split, p), np.int64)
        else:
            CHIST = np.empty((0, p, B, 2))
            CM = np.empty((0, p), np.int64)
        c = 0
        for j in range(nl):
            if not split[j]:
                continue
            k = level[j]
            lc = n_nodes
            rc = n_nodes + 1
            n_nodes += 2
            left[k] = lc
            value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)  # internal: for pruning
            mid = _partition(XbT, order, seg_lo[k], seg_hi[k], feature[k], cutbin[k],
                             missing_left[k], tmp)
            seg_lo[lc] = seg_lo[k]
            seg_hi[lc] = mid
            seg_lo[rc] = mid
            seg_hi[rc] = seg_hi[k]
            nG[lc] = sGL[j]
            nH[lc] = sHL[j]
            nG[rc] = nG[k] - sGL[j]
            nH[rc] = nH[k] - sHL[j]
            nxt[c] = lc
            nxt[c + 1] = rc
            if need_hist:
                small, large = (c, c + 1) if mid - seg_lo[k] <= seg_hi[k] - mid else (c + 1, c)
                sk = nxt[small]
                if (seg_hi[sk] - seg_lo[sk]) < ROWWISE_FRACTION * XbT.shape[1]:
                    _build_hist_rows(Xb, gh, order, seg_lo[sk], seg_hi[sk], colmask,
                                     CHIST[small], CM[small])
                else:
                    _build_hist(XbT, gh, order, seg_lo[sk], seg_hi[sk], colmask, CHIST[small],
                                CM[small], gord)
                _subtract(HIST[j], CHIST[small], CHIST[large])
                for v in range(p):
                    CM[large, v] = MC[j, v] - CM[small, v]
            c += 2
        level = nxt
        HIST = CHIST
        MC = CM
        if depth + 1 == max_depth:
            for j in range(level.size):
                k = level[j]
                feature[k] = -1
                left[k] = -1
                cover[k] = nH[k]
                loss_chg[k] = 0.0
                value[k] = eta * calc_weight(nG[k], nH[k], lam, alpha, mds)
                for t in range(seg_lo[k], seg_hi[k]):
                    margin[order[t]] += value[k]
            break
    return n_nodes


@numba.njit(cache=True)
def grow_exact(XT, sorted_idx, n_present, feat_missing, g, h, in_bag, colmask, max_depth, mcw,
               lam, alpha, mds, eta, feature, threshold, missing_left, left, value, loss_chg,
               cover):
    """Exact greedy split finding (XGBoost's ``tree_method="exact"``, ``updater_colmaker``).

    ``XT`` (p, n) raw values; ``sorted_idx[v, :n_present[v]]`` the rows with a value of
    feature v in ascending order of it (NaN rows excluded).  Level by level, every feature's
    sorted rows are scanned once backward (missing rows go left) and, when the feature has
    missing values, once forward (missing right), with per-node running sums; a candidate
    between two consecutive distinct values of a node's rows is their midpoint (the lower
    value when the midpoint rounds onto the upper one), and a candidate sending every row with
    a value one way and the missing rows the other is tried at the end of each scan.  A row
    goes left when ``x <= threshold``.  Fills the node arrays; returns the number of nodes."""
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
    root = np.zeros(cap)
    for depth in range(max_depth + 1):
        for j in range(level.size):
            k = level[j]
            cover[k] = nH[k]
            loss_chg[k] = 0.0
            best[k] = 0.0
            bfeat[k] = -1
            root[k] = node_gain(nG[k], nH[k], lam, alpha, mds)
        if depth < max_depth:
            for v in range(p):
                if not colmask[v]:
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
def predict_tree_binned(feature, cutbin, missing_left, left, value, XbT, rows, out):
    """``out[i] += tree(row i)`` for the binned rows ``rows`` of ``XbT`` (p, n)."""
    for j in range(rows.size):
        i = rows[j]
        k = 0
        while feature[k] >= 0:
            b = XbT[feature[k], i]
            if b == MISSING_BIN:
                go_left = missing_left[k]
            else:
                go_left = b <= cutbin[k]
            k = left[k] if go_left else left[k] + 1
        out[i] += value[k]


@numba.njit(cache=True, inline="always")
def _leaf_raw(feature, threshold, missing_left, left, XT, i):
    k = 0
    while feature[k] >= 0:
        x = XT[feature[k], i]
        if x != x:
            go_left = missing_left[k]
        else:
            go_left = x <= threshold[k]
        k = left[k] if go_left else left[k] + 1
    return k


@numba.njit(cache=True)
def predict_tree_raw(feature, threshold, missing_left, left, value, XT, out):
    """``out[i] += tree(row i)`` for raw rows ``XT`` (p, n); NaN follows ``missing_left``."""
    for i in range(XT.shape[1]):
        out[i] += value[_leaf_raw(feature, threshold, missing_left, left, XT, i)]


@numba.njit(cache=True)
def leaf_index(feature, threshold, missing_left, left, XT, out):
    """``out[i]`` = the leaf (node index) that raw row i of ``XT`` (p, n) reaches."""
    for i in range(XT.shape[1]):
        out[i] = _leaf_raw(feature, threshold, missing_left, left, XT, i)
