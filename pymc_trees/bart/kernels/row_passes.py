"""The conjugate sweep's passes over all the rows, one per tree (docs/math.md section 5): take
the tree updated last out of the residual and put the next back (:func:`pass_one`,
:func:`pass_pair`, with the sums of a grow's or a change's proposed leaves:
:func:`pass_left_sums`), add finished trees to the values (:func:`values_two`), and count
the rows per leaf (:func:`leaf_counts`).  Each is written for the load and store pattern
the measurements in its docstring chose (interleaved partial sums in registers, one-byte
leaf indices read eight at a time)."""

from __future__ import annotations

import sys

import numba
import numpy as np

__all__ = ["pass_left_sums", "values_two", "pass_one", "pass_pair", "leaf_counts",
           "wide_rows", "leaf_words", "weighted_products"]

# The passes over the rows read one-byte leaf indices eight at a time, as one little-endian
# 64-bit word whose byte j is row i0 + j's leaf (a load each eight rows instead of one a row:
# the passes are bound by loads and stores, not by memory traffic).
WIDE_LEAVES = sys.byteorder == "little"
U8 = np.uint64(255)


@numba.njit(cache=True, inline="always")
def wide_rows(leaf_of_row):
    """How many rows the passes read eight leaf indices at a time: all but the last ``n mod
    8`` for one-byte indices on a little-endian machine, else none."""
    n = leaf_of_row.shape[1]
    return n - (n & 7) if WIDE_LEAVES and leaf_of_row.itemsize == 1 else 0


@numba.njit(cache=True, inline="always")
def leaf_words(leaf_of_row, t, n8):
    """Tree t's leaf indices of the first ``n8`` rows as 64-bit words (byte j of word w is
    row ``8 w + j``'s)."""
    return leaf_of_row[t, :n8].view(np.uint64)


@numba.njit(cache=True)
def pass_left_sums(t, tp, vp, leaf_of_row, value, r, acc, K, sel, XbT, v, c):
    """The pass over the rows of :func:`cgm_sweep` with equal precisions (tree ``tp``, whose
    leaf values are ``vp``, out of the residual, tree t back in, the residual's sum per leaf in
    ``acc``, four interleaved partial sums), which also sums the rows of the nodes marked in
    ``sel`` (1.0) that numeric rule ``c`` of feature ``v`` sends left: returns ``(rows, residual
    sum)``. So a grow, or a change at a node above two leaves, reads its rows in the pass that
    reads them anyway, instead of collecting them and reading them again. The partial sums are
    held in registers, one per row ``i mod 4``, written out by hand (numba keeps an array's
    entries in memory; reading one-byte leaf indices eight at a time, as :func:`pass_one` does,
    is slower here: 268 against 248 ms for 200 passes at a million rows). ``acc`` and the
    residual come out the same as from the plain pass."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    l0 = l1 = l2 = l3 = 0.0
    c0 = c1 = c2 = c3 = 0.0
    for i0 in range(0, n4, 4):
        i = i0
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c0 += g
        l0 += g * ri
        i = i0 + 1
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c1 += g
        l1 += g * ri
        i = i0 + 2
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[2 * K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c2 += g
        l2 += g * ri
        i = i0 + 3
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[3 * K + k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c3 += g
        l3 += g * ri
    for i in range(n4, n):
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[k] += ri
        g = sel[k] * np.float64(XbT[v, i] <= c)
        c0 += g
        l0 += g * ri
    return (c0 + c1) + (c2 + c3), (l0 + l1) + (l2 + l3)


@numba.njit(cache=True)
def values_two(tq, tp, leaf_of_row, value, fsum):
    """Trees ``tq`` and ``tp`` into the values, in that order (the additions of the pass of
    :func:`cgm_sweep` that takes two trees, in a loop of their own when the pass sums a
    proposal: the pass with both costs more than the two apart)."""
    n = leaf_of_row.shape[1]
    n8 = wide_rows(leaf_of_row)
    if n8 > 0:
        lq = leaf_words(leaf_of_row, tq, n8)
        lp = leaf_words(leaf_of_row, tp, n8)
        vq = value[tq]
        vp = value[tp]
        for w in range(n8 // 8):
            a = lq[w]
            b = lp[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                i = 8 * w + j
                fsum[i] = (fsum[i] + vq[(a >> sh) & U8]) + vp[(b >> sh) & U8]
    for i in range(n8, n):
        fsum[i] = (fsum[i] + value[tq, leaf_of_row[tq, i]]) + value[tp, leaf_of_row[tp, i]]


@numba.njit(cache=True)
def pass_one(t, tp, vp, leaf_of_row, value, r, acc, K):
    """The pass of :func:`cgm_sweep` with equal precisions that takes tree ``tp`` out of the
    residual (its leaf values ``vp``: zeros at the first tree) and puts tree t back: the
    residual's sum per leaf of tree t in ``acc``, four interleaved partial sums (lane ``i mod
    4``, so that consecutive rows in the same leaf do not wait on each other's additions);
    one-byte leaf indices are read eight at a time (``WIDE_LEAVES``), with the same additions
    in the same order."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    n8 = wide_rows(leaf_of_row)
    if n8 > 0:
        lt = leaf_words(leaf_of_row, t, n8)
        lp = leaf_words(leaf_of_row, tp, n8)
        vt = value[t]
        for w in range(n8 // 8):
            a = lt[w]
            b = lp[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                k = (a >> sh) & U8
                i = 8 * w + j
                ri = r[i] + vt[k] - vp[(b >> sh) & U8]
                r[i] = ri
                acc[(j & 3) * K + k] += ri
    for i in range(n8, n):
        k = leaf_of_row[t, i]
        ri = r[i] + value[t, k] - vp[leaf_of_row[tp, i]]
        r[i] = ri
        acc[((i & 3) if i < n4 else 0) * K + k] += ri


@numba.njit(cache=True)
def pass_pair(t, tp, tq, leaf_of_row, value, r, fsum, acc, K):
    """:func:`pass_one` (tree ``tp`` out in full) that also adds trees ``tq`` and ``tp``, in
    that order, into the values ``fsum``: one load and store of a row's value per two
    trees."""
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    n8 = wide_rows(leaf_of_row)
    if n8 > 0:
        lt = leaf_words(leaf_of_row, t, n8)
        lp = leaf_words(leaf_of_row, tp, n8)
        lq = leaf_words(leaf_of_row, tq, n8)
        vt = value[t]
        vp = value[tp]
        vq = value[tq]
        for w in range(n8 // 8):
            a = lt[w]
            b = lp[w]
            c = lq[w]
            for j in range(8):
                sh = np.uint64(8 * j)
                k = (a >> sh) & U8
                i = 8 * w + j
                vb = vp[(b >> sh) & U8]
                ri = r[i] + vt[k] - vb
                r[i] = ri
                fsum[i] = (fsum[i] + vq[(c >> sh) & U8]) + vb
                acc[(j & 3) * K + k] += ri
    for i in range(n8, n):
        k = leaf_of_row[t, i]
        vb = value[tp, leaf_of_row[tp, i]]
        ri = r[i] + value[t, k] - vb
        r[i] = ri
        fsum[i] = (fsum[i] + value[tq, leaf_of_row[tq, i]]) + vb
        acc[((i & 3) if i < n4 else 0) * K + k] += ri


@numba.njit(cache=True)
def leaf_counts(leaf_of_row, counts):
    """``counts[t, k]`` = the number of rows in node k of tree t (0 for internal nodes)."""
    m, n = leaf_of_row.shape
    for t in range(m):
        for k in range(counts.shape[1]):
            counts[t, k] = 0.0
        for i in range(n):
            counts[t, leaf_of_row[t, i]] += 1.0


@numba.njit(cache=True)
def weighted_products(omega, g, z):
    """``(sum omega g^2, sum omega z g)`` over the rows, in row order on the calling thread:
    the learned leaf scale's non-centred update reads them after every sweep.  (``np.dot``
    hands vectors of more than 10,000 rows to OpenBLAS's threads, whose waiting then takes a
    core from the sweep's own threads, and whose order of addition follows the number of
    cores; docs/explanation/threads.md, "Waiting between the passes".)"""
    a = 0.0
    b = 0.0
    for i in range(g.shape[0]):
        wg = omega[i] * g[i]
        a += wg * g[i]
        b += wg * z[i]
    return a, b
