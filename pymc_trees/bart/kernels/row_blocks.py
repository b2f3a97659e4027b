"""Passes over the rows in fixed blocks, on several threads, with the same numbers for any
number of threads (docs/explanation/threads.md).

The rows are cut into ``ceil(n / ROW_BLOCK)`` blocks of equal length (a multiple of 8, the
last one the rest, at most 8 rows a block shorter; :func:`block_span`), a cut that depends
on the number of rows only, and equal so that two threads take equal shares of 100,000
rows (two blocks of 50,000, where blocks of 65,536 and 34,464 rows left one thread idle a
third of the pass).  Each block's pass runs on whichever thread takes it and writes its
rows and its own partial sums; the caller then adds the blocks' partial sums in block
order.  So a sum is the same sum of the same partial sums whatever the number of threads,
and a run's draws are the same, bit for bit, with 1, 2 or any number of threads.  A term
of at most :data:`ROW_BLOCK` rows is one block: its pass is the plain pass over all rows,
with the plain pass's numbers (and no thread is started).

The thread count is numba's (``numba.set_num_threads``), which the samplers set from the
tree step's ``threads`` option before each kernel call.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_trees.bart.kernels.linear import row_value
from pymc_trees.bart.kernels.small_pass import FAST, proposal_sums, small_pair, small_pass_rows

__all__ = ["ROW_BLOCK", "n_blocks", "block_span", "linear_pass_rows", "linear_pass_blocks",
           "gamma_pass_rows", "gamma_pass_blocks", "gamma_grow_rows"]

# The most rows a block.  At 65,536 rows a block's pass takes about 0.3 ms, so that starting
# the threads (tens of microseconds) is a small part of it; a smaller table is one block
# (docs/explanation/threads.md has the measurements).
ROW_BLOCK = 65_536


@numba.njit(cache=True, inline="always")
def n_blocks(n):
    """The number of blocks of ``n`` rows, ``ceil(n / ROW_BLOCK)``."""
    return (n + ROW_BLOCK - 1) // ROW_BLOCK


@numba.njit(cache=True, inline="always")
def block_span(b, n):
    """Rows ``(lo, hi)`` of block b of ``n`` rows: :func:`n_blocks` blocks of ``ceil(n /
    n_blocks)`` rows rounded up to a multiple of 8 (a pass may read eight one-byte leaf
    indices at a time, and the log-gamma pass's lanes follow the row number mod 4), the
    last one the rest."""
    nb = (n + ROW_BLOCK - 1) // ROW_BLOCK
    size = ((n + nb - 1) // nb + 7) // 8 * 8
    lo = b * size
    return lo, min(n, lo + size)


@numba.njit(cache=True)
def linear_pass_rows(t, forest, slope, regs, Z, r, weights, sums, proposal, XbT, fusion, span):
    """The linear sweep's pass over rows ``span = (lo, hi)`` for tree t
    (:func:`~pymc_trees.bart.kernels.linear_sweep.linear_pass`): tree t - 1 out of the
    residual ``r`` and tree t back in (``regs = (reg, reg_prev)``, their leaf regressors),
    tree t's leaves' five sums added into ``sums`` (5, K), each in increasing row order, and
    the sums of the rows of the leaves the move proposes (``proposal = (fa, fb, fv, fc,
    jn)``) into ``fusion[1:11]`` (left side ``lW, lWz, lWzz, lS, lSz``, then the right side;
    :func:`~pymc_trees.bart.kernels.small_pass.proposal_sums`).
    ``weights = (omega, oc, kept)``: the row precisions, their common value (``oc > 0``:
    ``omega`` is not read) and whether tree t's leaves' ``W, Wz, Wzz`` are known already.
    With a common precision the plain pass adds ``1, z, z^2`` into them, the counts and
    moments of the tree's rows that do not change while the tree does not (the caller
    multiplies them by ``oc``); with ``kept`` it leaves them out."""
    omega, oc, kept = weights
    if small_pair(forest, t):
        small_pass_rows(t, forest, slope, regs, Z, (r, omega, oc, kept), sums, proposal, XbT,
                        fusion, span)
        return
    leaf_of_row, value = forest.leaf_of_row, forest.value
    reg, reg_prev = regs
    fv, jn = proposal[2], proposal[4]
    lo, hi = span
    W, Wz, Wzz, S, Sz = sums[0], sums[1], sums[2], sums[3], sums[4]
    # the block's rows as views indexed from 0 (no wraparound check on each access)
    lt, rb, Zb, Xv = leaf_of_row[t, lo:hi], r[lo:hi], Z[:, lo:hi], XbT[max(fv, 0), lo:hi]
    lp = leaf_of_row[t - 1 if t > 0 else t, lo:hi]
    wb = omega[lo:hi] if oc <= 0.0 else omega[:0]
    for q in range(hi - lo):
        k = lt[q]
        j = reg[k]
        ri = rb[q] + value[t, k]
        zz = 0.0
        if j >= 0:
            zz = Zb[j, q]
            ri += slope[t, k] * zz
        if t > 0:
            ri -= row_value(t - 1, lp[q], q, value, slope, reg_prev, Zb)
        rb[q] = ri
        w = oc if oc > 0.0 else wb[q]
        wr = w * ri
        S[k] += wr
        if j >= 0:
            Sz[k] += wr * zz
        if not kept:
            u = 1.0 if oc > 0.0 else w  # a common precision: the rows' counts and moments
            W[k] += u
            if j >= 0:
                Wz[k] += u * zz
                Wzz[k] += u * zz * zz
    # the proposal's sums over the updated residual, in a loop of their own on vector
    # registers (summed in the loop above, they took 4.5 to 5 ms more a tree at a million
    # rows, now about 1); its column is a row of Z sliced from Z itself, contiguous to the
    # compiler (a row of Z[:, lo:hi] is not, and stops the loop running on vectors)
    proposal_sums(lt, rb, (Z[max(jn, 0), lo:hi], Xv), (wb, oc), proposal, fusion)


@numba.njit(cache=True, parallel=True)
def linear_pass_blocks(t, forest, slope, regs, Z, r, weights, proposal, XbT, psums, pfus):
    """:func:`linear_pass_rows` of every block of rows, the blocks spread over the threads:
    block b's sums into ``psums[b]`` (5, K) and ``pfus[b, 1:11]``, each from 0 (the caller
    adds them in block order).  The arrays written are plain arguments: numba loses writes in
    a parallel loop to arrays reached through a named tuple."""
    n = r.shape[0]
    nb = psums.shape[0]
    for b in numba.prange(nb):
        lo, hi = block_span(b, n)
        sb = psums[b]
        fb = pfus[b]
        for q in range(sb.shape[0]):
            for k in range(sb.shape[1]):
                sb[q, k] = 0.0
        linear_pass_rows(t, forest, slope, regs, Z, r, weights, sb, proposal, XbT, fb,
                         (lo, hi))


@numba.njit(cache=True)
def gamma_pass_rows(t, tp, leaf_of_row, e, reads, acc, K, span):
    """The log-gamma sweep's pass over rows ``span = (lo, hi)`` for tree t
    (:func:`~pymc_trees.bart.kernels.gamma_leaves.gamma_sweep`), ``reads = (s, out,
    back)``: tree ``tp`` back into the rows' rates ``e`` (its leaves' factors ``back``) and
    tree t out (``out``), and ``(A, B)`` per leaf added into ``acc`` (8K) in four lanes (rows
    ``i mod 4``; the last ``n mod 4`` rows of the table in lane 0), so that consecutive rows
    in the same leaf do not wait on each other's additions."""
    s, out, back = reads
    n = leaf_of_row.shape[1]
    n4 = n - (n & 3)
    lo, hi = span
    for i0 in range(lo, min(hi, n4), 4):
        for j in range(4):
            i = i0 + j
            k = leaf_of_row[t, i]
            ei = e[i] * out[k] * back[leaf_of_row[tp, i]]
            e[i] = ei
            acc[2 * j * K + k] += s[i]
            acc[(2 * j + 1) * K + k] += ei
    for i in range(max(lo, n4), hi):
        k = leaf_of_row[t, i]
        ei = e[i] * out[k] * back[leaf_of_row[tp, i]]
        e[i] = ei
        acc[k] += s[i]
        acc[K + k] += ei


@numba.njit(cache=True, fastmath=FAST)
def gamma_grow_rows(lt, xv, s, e, ell, c, out):
    """The log-gamma sweep's sums of a grow's children over rows ``lt``, ``xv``, ``s``, ``e``
    (views of a block's rows after its pass): ``(A_left, B_left, A_right, B_right)`` of the
    rows in leaf ``ell`` (``lt == ell``) split by the numeric rule ``xv <= c``, into
    ``out[:4]``.  Every row adds to each sum, 0.0 where it is not on that side (selects,
    not branches on the data), in a loop on vector registers (the sums reassociated into
    lanes, as :func:`~pymc_trees.bart.kernels.small_pass.proposal_sums`)."""
    al = bl = ar = br = 0.0
    for q in range(lt.shape[0]):
        inl = lt[q] == ell
        go = xv[q] <= c
        si = s[q]
        ei = e[q]
        left = inl and go
        right = inl and not go
        al += si if left else 0.0
        bl += ei if left else 0.0
        ar += si if right else 0.0
        br += ei if right else 0.0
    out[0] = al
    out[1] = bl
    out[2] = ar
    out[3] = br


@numba.njit(cache=True, parallel=True)
def gamma_pass_blocks(t, tp, leaf_of_row, e, reads, pacc, K, grow):
    """:func:`gamma_pass_rows` of every block of rows, the blocks spread over the threads:
    block b's lanes into ``pacc[b, :8K]``, from 0, and with ``grow = (ell, v, c, xv)`` (``ell
    >= 0``: a grow of leaf ell under the numeric rule of feature v, ``xv`` its bins) the
    children's sums of :func:`gamma_grow_rows` into ``pacc[b, 8K:8K + 4]`` (the caller adds
    them in block order)."""
    n = leaf_of_row.shape[1]
    s = reads[0]
    ell, v, c, xv = grow
    for b in numba.prange(pacc.shape[0]):
        lo, hi = block_span(b, n)
        ab = pacc[b]
        for q in range(ab.shape[0]):
            ab[q] = 0.0
        gamma_pass_rows(t, tp, leaf_of_row, e, reads, ab, K, (lo, hi))
        if ell >= 0:
            gamma_grow_rows(leaf_of_row[t, lo:hi], xv[lo:hi], s[lo:hi], e[lo:hi],
                            ell, c, ab[8 * K:])
