"""The passes over the rows and the leaves' sufficient statistics ``(W, S)`` of the conjugate
sweep (docs/math.md section 5): the children's sums under a proposed rule without moving the rows
(:func:`split_sums`, :func:`two_level_sums`), a segment's or a subtree's sums
(:func:`segment_sums`, :func:`subtree_sums`); the per-tree passes over all rows are
:mod:`~pymc_trees.bart.kernels.row_passes`.  Each is written for the load and store pattern the measurements in its docstring chose
(interleaved partial sums in registers, one-byte leaf indices read eight at a time)."""

from __future__ import annotations

import numba
import numpy as np

from pymc_trees.bart.kernels.nodes import log_ml, log_psplit
from pymc_trees.bart.kernels.tree_edit import above_leaves, split_segment

__all__ = ["ALL_LEFT", "split_sums", "two_level_sums", "segment_sums", "subtree_sums"]


@numba.njit(cache=True, inline="always")
def _goes(XbT, v, c, i):
    """1.0 when row i goes left under rule ``c`` of feature ``v``, else 0.0 (a number, so that
    sums take it by multiplication rather than by a branch on the data)."""
    b = XbT[v, i]
    if c >= 0:  # the same for every row of a rule: predicted
        return np.float64(b <= c)
    return np.float64(((~c) >> b) & 1)


@numba.njit(cache=True, inline="always")
def _left_sums(XbT, v, c, idx, cnt, r):
    """``(rows, sum of residuals)`` of the rows ``idx[:cnt]`` that rule ``c`` of feature
    ``v`` sends left, in four interleaved partial sums held in registers."""
    q4 = cnt - (cnt & 3)
    l0 = l1 = l2 = l3 = 0.0
    nl = 0.0
    for q in range(0, q4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
        g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
        nl += (g0 + g1) + (g2 + g3)
        l0 += g0 * r[i0]
        l1 += g1 * r[i1]
        l2 += g2 * r[i2]
        l3 += g3 * r[i3]
    for q in range(q4, cnt):
        i = idx[q]
        g = _goes(XbT, v, c, i)
        nl += g
        l0 += g * r[i]
    return nl, (l0 + l1) + (l2 + l3)


@numba.njit(cache=True)
def split_sums(XbT, v, c, idx, cnt, r, omega, omega_const, out, s_tot=np.nan):
    """The two children's leaf statistics under rule ``c`` of feature ``v`` for the rows
    ``idx[:cnt]``, without moving them: ``out = (W_left, S_left, W_right, S_right)``.  Each
    row adds ``omega r`` times 1 to the side its rule sends it to and times 0 to the other (no
    branch on the data), in four interleaved partial sums held in registers (rows ``q mod
    4``), so that consecutive rows do not wait on each other's additions.  With equal
    precisions (``omega_const > 0``) W is that precision times a row count and S that
    precision times a sum of residuals; when the rows' own ``S`` is known (``s_tot``, from
    the pass over the rows: a leaf, or a node above two leaves, whose rows have not moved),
    only the left side is summed and the right one is ``s_tot`` minus it (a quarter fewer
    operations a row)."""
    if omega_const > 0.0 and s_tot == s_tot:
        nl, sl = _left_sums(XbT, v, c, idx, cnt, r)
        out[0] = omega_const * nl
        out[1] = omega_const * sl
        out[2] = omega_const * (cnt - nl)
        out[3] = s_tot - out[1]
        return
    q4 = cnt - (cnt & 3)
    l0 = l1 = l2 = l3 = 0.0  # left sums, lanes 0..3
    r0 = r1 = r2 = r3 = 0.0  # right sums
    if omega_const > 0.0:
        nl = 0.0
        for q in range(0, q4, 4):
            i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
            g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
            g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
            x0, x1, x2, x3 = r[i0], r[i1], r[i2], r[i3]
            nl += (g0 + g1) + (g2 + g3)
            l0 += g0 * x0
            l1 += g1 * x1
            l2 += g2 * x2
            l3 += g3 * x3
            r0 += (1.0 - g0) * x0
            r1 += (1.0 - g1) * x1
            r2 += (1.0 - g2) * x2
            r3 += (1.0 - g3) * x3
        for q in range(q4, cnt):
            i = idx[q]
            g = _goes(XbT, v, c, i)
            nl += g
            l0 += g * r[i]
            r0 += (1.0 - g) * r[i]
        out[0] = omega_const * nl
        out[1] = omega_const * ((l0 + l1) + (l2 + l3))
        out[2] = omega_const * (cnt - nl)
        out[3] = omega_const * ((r0 + r1) + (r2 + r3))
        return
    wl0 = wl1 = wl2 = wl3 = 0.0
    wr0 = wr1 = wr2 = wr3 = 0.0
    for q in range(0, q4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        g0, g1 = _goes(XbT, v, c, i0), _goes(XbT, v, c, i1)
        g2, g3 = _goes(XbT, v, c, i2), _goes(XbT, v, c, i3)
        w0, w1, w2, w3 = omega[i0], omega[i1], omega[i2], omega[i3]
        x0, x1, x2, x3 = w0 * r[i0], w1 * r[i1], w2 * r[i2], w3 * r[i3]
        wl0 += g0 * w0
        wl1 += g1 * w1
        wl2 += g2 * w2
        wl3 += g3 * w3
        wr0 += (1.0 - g0) * w0
        wr1 += (1.0 - g1) * w1
        wr2 += (1.0 - g2) * w2
        wr3 += (1.0 - g3) * w3
        l0 += g0 * x0
        l1 += g1 * x1
        l2 += g2 * x2
        l3 += g3 * x3
        r0 += (1.0 - g0) * x0
        r1 += (1.0 - g1) * x1
        r2 += (1.0 - g2) * x2
        r3 += (1.0 - g3) * x3
    for q in range(q4, cnt):
        i = idx[q]
        g = _goes(XbT, v, c, i)
        wl0 += g * omega[i]
        wr0 += (1.0 - g) * omega[i]
        l0 += g * omega[i] * r[i]
        r0 += (1.0 - g) * omega[i] * r[i]
    out[0] = (wl0 + wl1) + (wl2 + wl3)
    out[1] = (l0 + l1) + (l2 + l3)
    out[2] = (wr0 + wr1) + (wr2 + wr3)
    out[3] = (r0 + r1) + (r2 + r3)


ALL_LEFT = 1 << 30  # a numeric rule every bin satisfies: a leaf in the place of a split


@numba.njit(cache=True)
def _two_level_known(XbT, splits, idx, cnt, r, omega_const, out, s_tot):
    """:func:`two_level_sums` when the rows' sum ``s_tot`` (times ``omega_const``) is known:
    with ``g`` the root's rule, ``l`` and ``h`` its children's, the rows add their residual
    to ``A = sum g l r``, ``B = sum g r`` and ``C = sum (1 - g) h r`` only (their counts
    likewise), and the leaves are ``A``, ``B - A``, ``C`` and ``s_tot - B - C``; a leaf child
    (``ALL_LEFT``) has no rule to read and its one sum is ``B`` or the rest.  Three sums a row
    instead of four, two with a leaf child, and fewer operations each."""
    v0, c0, vL, cL, vR, cR = splits
    q2 = cnt - (cnt & 1)
    a0 = a1 = b0 = b1 = c_0 = c_1 = 0.0
    na = ng = nc = 0.0
    leaf_l = cL == ALL_LEFT
    leaf_r = cR == ALL_LEFT
    if leaf_r:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            w0, w1 = g0 * _goes(XbT, vL, cL, i0), g1 * _goes(XbT, vL, cL, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            na += w0 + w1
            a0 += w0 * x0
            a1 += w1 * x1
            b0 += g0 * x0
            b1 += g1 * x1
    elif leaf_l:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            w0 = (1.0 - g0) * _goes(XbT, vR, cR, i0)
            w1 = (1.0 - g1) * _goes(XbT, vR, cR, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            nc += w0 + w1
            b0 += g0 * x0
            b1 += g1 * x1
            c_0 += w0 * x0
            c_1 += w1 * x1
    else:
        for q in range(0, q2, 2):
            i0, i1 = idx[q], idx[q + 1]
            g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
            l0, l1 = g0 * _goes(XbT, vL, cL, i0), g1 * _goes(XbT, vL, cL, i1)
            h0 = (1.0 - g0) * _goes(XbT, vR, cR, i0)
            h1 = (1.0 - g1) * _goes(XbT, vR, cR, i1)
            x0, x1 = r[i0], r[i1]
            ng += g0 + g1
            na += l0 + l1
            nc += h0 + h1
            a0 += l0 * x0
            a1 += l1 * x1
            b0 += g0 * x0
            b1 += g1 * x1
            c_0 += h0 * x0
            c_1 += h1 * x1
    for q in range(q2, cnt):
        i = idx[q]
        g = _goes(XbT, v0, c0, i)
        lft = 0.0 if leaf_l else g * _goes(XbT, vL, cL, i)
        h = 0.0 if leaf_r else (1.0 - g) * _goes(XbT, vR, cR, i)
        ng += g
        na += lft
        nc += h
        a0 += lft * r[i]
        b0 += g * r[i]
        c_0 += h * r[i]
    oc = omega_const
    if leaf_l:  # the left child's one leaf: every row the root sends left
        na = ng
        a0, a1 = b0, b1
    if leaf_r:  # the right child's one leaf: every row the root sends right
        nc = cnt - ng
    sa = oc * (a0 + a1)
    sb = oc * (b0 + b1)
    sc = s_tot - sb if leaf_r else oc * (c_0 + c_1)
    out[0], out[1] = oc * na, sa
    out[2], out[3] = oc * (ng - na), sb - sa
    out[4], out[5] = oc * nc, sc
    out[6], out[7] = oc * (cnt - ng - nc), s_tot - sb - sc


@numba.njit(cache=True)
def two_level_sums(XbT, splits, idx, cnt, r, omega_const, out, s_tot=np.nan):
    """With equal precisions ``omega_const``: the leaf statistics of a node with rule ``(v0,
    c0)`` whose children split by ``(vL, cL)`` and ``(vR, cR)`` into two leaves each (a child
    that is a leaf passes ``ALL_LEFT``; ``splits = (v0, c0, vL, cL, vR, cR)``, int64), for
    the rows ``idx[:cnt]``, without moving them:
    ``out = (W, S)`` of the leaves left-left, left-right, right-left, right-right.  Each row
    adds its residual times 1 to its leaf and times 0 to the others, in two interleaved
    partial sums held in registers (rows ``q mod 2``).  When the rows' own ``S`` is known
    (``s_tot``: the subtree's root, whose rows are those of its current leaves), the last
    leaf's sums are taken as differences and a leaf child's rule is not read
    (:func:`_two_level_known`)."""
    if s_tot == s_tot:
        _two_level_known(XbT, splits, idx, cnt, r, omega_const, out, s_tot)
        return
    v0, c0, vL, cL, vR, cR = splits
    a0 = b0 = c_0 = d0 = 0.0  # S of the four leaves, lane 0
    a1 = b1 = c_1 = d1 = 0.0  # lane 1
    na = nb = nc = 0.0
    q2 = cnt - (cnt & 1)
    for q in range(0, q2, 2):
        i0, i1 = idx[q], idx[q + 1]
        g0, g1 = _goes(XbT, v0, c0, i0), _goes(XbT, v0, c0, i1)
        l0, l1 = _goes(XbT, vL, cL, i0), _goes(XbT, vL, cL, i1)
        h0, h1 = _goes(XbT, vR, cR, i0), _goes(XbT, vR, cR, i1)
        x0, x1 = r[i0], r[i1]
        wa0, wa1 = g0 * l0, g1 * l1
        wb0, wb1 = g0 - wa0, g1 - wa1
        wc0, wc1 = (1.0 - g0) * h0, (1.0 - g1) * h1
        wd0, wd1 = (1.0 - g0) - wc0, (1.0 - g1) - wc1
        na += wa0 + wa1
        nb += wb0 + wb1
        nc += wc0 + wc1
        a0 += wa0 * x0
        a1 += wa1 * x1
        b0 += wb0 * x0
        b1 += wb1 * x1
        c_0 += wc0 * x0
        c_1 += wc1 * x1
        d0 += wd0 * x0
        d1 += wd1 * x1
    for q in range(q2, cnt):
        i = idx[q]
        g, lft, h = _goes(XbT, v0, c0, i), _goes(XbT, vL, cL, i), _goes(XbT, vR, cR, i)
        wa = g * lft
        wc = (1.0 - g) * h
        na += wa
        nb += g - wa
        nc += wc
        a0 += wa * r[i]
        b0 += (g - wa) * r[i]
        c_0 += wc * r[i]
        d0 += ((1.0 - g) - wc) * r[i]
    oc = omega_const
    out[0], out[1] = oc * na, oc * (a0 + a1)
    out[2], out[3] = oc * nb, oc * (b0 + b1)
    out[4], out[5] = oc * nc, oc * (c_0 + c_1)
    out[6], out[7] = oc * (cnt - na - nb - nc), oc * (d0 + d1)


@numba.njit(cache=True)
def segment_sums(idx, s, e, r, omega, omega_const):
    """A leaf's statistics ``(W, S)`` from its rows ``idx[s:e]``, in four interleaved partial
    sums held in registers (with equal precisions W is that precision times the count)."""
    e4 = e - ((e - s) & 3)
    w0 = w1 = w2 = w3 = 0.0
    s0 = s1 = s2 = s3 = 0.0
    if omega_const > 0.0:
        for q in range(s, e4, 4):
            s0 += r[idx[q]]
            s1 += r[idx[q + 1]]
            s2 += r[idx[q + 2]]
            s3 += r[idx[q + 3]]
        for q in range(e4, e):
            s0 += r[idx[q]]
        return omega_const * (e - s), omega_const * ((s0 + s1) + (s2 + s3))
    for q in range(s, e4, 4):
        i0, i1, i2, i3 = idx[q], idx[q + 1], idx[q + 2], idx[q + 3]
        w0 += omega[i0]
        w1 += omega[i1]
        w2 += omega[i2]
        w3 += omega[i3]
        s0 += omega[i0] * r[i0]
        s1 += omega[i1] * r[i1]
        s2 += omega[i2] * r[i2]
        s3 += omega[i3] * r[i3]
    for q in range(e4, e):
        i = idx[q]
        w0 += omega[i]
        s0 += omega[i] * r[i]
    return (w0 + w1) + (w2 + w3), (s0 + s1) + (s2 + s3)


@numba.njit(cache=True)
def _two_level(t, k, s, e, XbT, rules, forest, scratch, omega_const, out, s_tot=np.nan):
    """:func:`two_level_sums` at node k (rows ``idx[s:e]``), whose children are leaves or
    nodes above two leaves: fills the leaves' ``(nW, nS)`` (the scratch's, as its ``r`` and
    ``idx``); returns the children's ``log p_split`` plus the leaves' log marginal
    likelihoods."""
    r, idx, nW, nS = scratch.r, scratch.idx, scratch.nW, scratch.nS
    _, alpha, beta, prec0 = rules
    var, cut, left, right, depth = (forest.var, forest.cut, forest.left, forest.right,
                                    forest.depth)
    total = 0.0
    kids = (left[t, k], right[t, k])
    rules = np.empty(4, np.int64)
    for j in range(2):
        c = kids[j]
        if var[t, c] >= 0:
            total += log_psplit(depth[t, c], alpha, beta)
            rules[2 * j] = var[t, c]
            rules[2 * j + 1] = cut[t, c]
        else:
            rules[2 * j] = var[t, k]
            rules[2 * j + 1] = ALL_LEFT
    splits = (np.int64(var[t, k]), np.int64(cut[t, k]), rules[0], rules[1], rules[2],
              rules[3])
    two_level_sums(XbT, splits, idx[s:e], e - s, r, omega_const, out, s_tot)
    for j in range(2):
        c = kids[j]
        for h in range(2):
            if var[t, c] >= 0:
                lf = left[t, c] if h == 0 else right[t, c]
            elif h == 0:
                lf = c  # a leaf child: all its rows went to the first slot
            else:
                continue
            w = out[4 * j + 2 * h]
            sr = out[4 * j + 2 * h + 1]
            nW[lf] = w
            nS[lf] = sr
            total += log_ml(w, sr, prec0)
    return total


@numba.njit(cache=True)
def subtree_sums(t, root, cnt, data, rules, forest, scratch, omega, omega_const, sums):
    """The leaves' proposed ``(nW, nS)`` of a subtree under its (possibly new) rules, for its
    rows ``idx[:cnt]``.  Rows are partitioned down to the nodes above two leaves only: those
    two leaves' sums come from :func:`split_sums` over the node's rows, unmoved (most
    changes act on such a node, so most subtrees move no rows at all here); the segments
    are completed by :func:`route_segments` when the move is not already rejected.

    Returns the leaf log marginal likelihoods plus ``log p_split`` of every internal node: an
    upper bound of the subtree's full log factor, whose remaining factors (rule
    probabilities ``split_prior[v] / wsum / nc`` of available rules, and ``1 - p_split`` of
    splittable leaves) are all at most 1 (:func:`prior_subtree` adds them).  Reads the
    scratch's ``r``, ``idx``, ``S`` and fills its ``nW``, ``nS``, ``seg_s``, ``seg_e``."""
    XbT = data.XbT
    _, alpha, beta, prec0 = rules
    var, cut, left, right, depth = (forest.var, forest.cut, forest.left, forest.right,
                                    forest.depth)
    r, idx, S, nW, nS = scratch.r, scratch.idx, scratch.S, scratch.nW, scratch.nS
    seg_s, seg_e, stack, tmp = scratch.seg_s, scratch.seg_e, scratch.stack, scratch.tmp
    total = 0.0
    sums2 = np.empty(8)
    seg_s[root] = 0
    seg_e[root] = cnt
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        k = stack[top]
        s = seg_s[k]
        e = seg_e[k]
        v = var[t, k]
        if v >= 0:
            total += log_psplit(depth[t, k], alpha, beta)
            kl = left[t, k]
            kr = right[t, k]
            if var[t, kl] < 0 and var[t, kr] < 0:
                # at the subtree's root the rows are those of its current leaves
                s_tot = S[kl] + S[kr] if k == root else np.nan
                split_sums(XbT, v, cut[t, k], idx[s:e], e - s, r, omega, omega_const, sums,
                           s_tot)
                nW[kl], nS[kl], nW[kr], nS[kr] = sums[0], sums[1], sums[2], sums[3]
                total += log_ml(sums[0], sums[1], prec0) + log_ml(sums[2], sums[3], prec0)
            elif (omega_const > 0.0 and above_leaves(t, kl, var, left, right)
                  and above_leaves(t, kr, var, left, right)):
                # two levels above leaves (a swap's subtree, mostly): one pass, no partition;
                # at the subtree's root the rows are those of its current leaves
                s_tot = np.nan
                if k == root:
                    s_tot = 0.0
                    for c in (kl, kr):
                        if var[t, c] < 0:
                            s_tot += S[c]
                        else:
                            s_tot += S[left[t, c]] + S[right[t, c]]
                total += _two_level(t, k, s, e, XbT, rules, forest, scratch, omega_const,
                                    sums2, s_tot)
            else:
                top = split_segment(t, k, XbT, forest, scratch, top)
        else:
            w, sr = segment_sums(idx, s, e, r, omega, omega_const)
            nW[k] = w
            nS[k] = sr
            total += log_ml(w, sr, prec0)
    return total
