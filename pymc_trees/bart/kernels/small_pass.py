"""The linear sweep's loops over the rows that run on vector registers
(docs/explanation/linear-leaves.md, "The pass of small trees"): the whole pass when tree t and
tree t - 1 have at most two leaves each, as many trees of linear leaves do (a leaf, or a
stump), and the proposal's sums of the plain pass (:func:`proposal_sums`).

With trees that small a row's leaf is one of two, and both leaves of a stump read one column
(the column of the root's rule), so the pass needs no gather: a tree's value at a row is a
select between two lines in one column, and the leaves' sums are the rows' terms times 0 or
1.  The sums are reassociated (``fastmath={"reassoc", "contract"}``): added in vector lanes
whose count the compiler fixes for the machine, then across the lanes.  The numbers do not
depend on the number of threads (each block of rows is summed by the same code), and the
pass is the same Markov chain as the plain one; its last bits differ from those of the
plain pass's order of addition.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_trees.bart.kernels.forest import LEAF

__all__ = ["two_leaves", "small_pair", "small_pass_rows", "proposal_sums"]

# reassociation lets the compiler add the sums in vector lanes; contraction, a * b + c in one
# rounding
FAST = {"reassoc", "contract"}


@numba.njit(cache=True, inline="always")
def two_leaves(forest, t):
    """``(a, b)``, the leaves of tree t when it has at most two (``a == b == 0`` for a tree
    that is its root), else ``(-1, -1)``."""
    var = forest.var
    if var[t, 0] == LEAF:
        return 0, 0
    a = forest.left[t, 0]
    b = forest.right[t, 0]
    if var[t, a] == LEAF and var[t, b] == LEAF:
        return a, b
    return -1, -1


@numba.njit(cache=True, inline="always")
def small_pair(forest, t):
    """Whether tree t and tree t - 1 have at most two leaves each: the pass of tree t is then
    :func:`small_pass_rows`."""
    return two_leaves(forest, t)[0] >= 0 and (t == 0 or two_leaves(forest, t - 1)[0] >= 0)


@numba.njit(cache=True, fastmath=FAST, inline="always")
def _small_body(lt, lp, rb, cols, wb, oc, cur, prev, prop, out, moments):
    """The loop of :func:`small_pass_rows` over one block's rows (views from 0): ``cols =
    (zt, zp, zn, xv)`` the columns of tree t's, tree t - 1's and the proposal's regressors and
    of the proposal's rule; ``cur = (a, va, sa, vb, sb)`` tree t's leaf a and the lines of
    its two leaves, ``prev = (pa, pva, psa, pvb, psb)`` the same of tree t - 1, ``prop =
    (ina, inb, all_left, fc)`` whether leaf a's and leaf b's rows are the proposal's and its
    rule; ``out`` (20,) the sums of leaf a, leaf b, the proposal's left and right side, five
    each (``W, Wz, Wzz, S, Sz``).  Under a common precision (``oc > 0``) the leaves' ``W,
    Wz, Wzz`` are the rows' counts and moments, unweighted (the caller multiplies them by
    ``oc``), and with ``moments`` False, known already, they are not summed (``out`` keeps
    0 there).  Inlined into its two callers, where ``moments`` is a constant."""
    zt, zp, zn, xv = cols
    a, va, sa, vb, sb = cur
    pa, pva, psa, pvb, psb = prev
    ina, inb, all_left, fc = prop
    A0 = A1 = A2 = A3 = A4 = 0.0
    B0 = B1 = B2 = B3 = B4 = 0.0
    L0 = L1 = L2 = L3 = L4 = 0.0
    R0 = R1 = R2 = R3 = R4 = 0.0
    uniform = oc > 0.0
    for q in range(rb.shape[0]):
        is_a = lt[q] == a
        z = zt[q]
        c = (va + sa * z) if is_a else (vb + sb * z)
        y = zp[q]
        cp = (pva + psa * y) if lp[q] == pa else (pvb + psb * y)
        ri = (rb[q] + c) - cp
        rb[q] = ri
        w = oc if uniform else wb[q]
        ga = 1.0 if is_a else 0.0
        gb = 1.0 - ga
        wr = w * ri
        wrz = wr * z
        if moments:
            m = 1.0 if uniform else w
            mz = m * z
            mzz = mz * z
            A0 += ga * m
            A1 += ga * mz
            A2 += ga * mzz
            B0 += gb * m
            B1 += gb * mz
            B2 += gb * mzz
        A3 += ga * wr
        A4 += ga * wrz
        B3 += gb * wr
        B4 += gb * wrz
        g = ina if is_a else inb
        gl = g if (all_left or xv[q] <= fc) else 0.0
        gr = g - gl
        u = zn[q]
        wu = w * u
        wuu = wu * u
        wru = wr * u
        L0 += gl * w
        L1 += gl * wu
        L2 += gl * wuu
        L3 += gl * wr
        L4 += gl * wru
        R0 += gr * w
        R1 += gr * wu
        R2 += gr * wuu
        R3 += gr * wr
        R4 += gr * wru
    out[0], out[1], out[2], out[3], out[4] = A0, A1, A2, A3, A4
    out[5], out[6], out[7], out[8], out[9] = B0, B1, B2, B3, B4
    out[10], out[11], out[12], out[13], out[14] = L0, L1, L2, L3, L4
    out[15], out[16], out[17], out[18], out[19] = R0, R1, R2, R3, R4


@numba.njit(cache=True, fastmath=FAST)
def _small_rows(lt, lp, rb, cols, wb, oc, cur, prev, prop, out):
    """:func:`_small_body` with the leaves' counts and moments summed."""
    _small_body(lt, lp, rb, cols, wb, oc, cur, prev, prop, out, True)


@numba.njit(cache=True, fastmath=FAST)
def _small_rows_kept(lt, lp, rb, cols, wb, oc, cur, prev, prop, out):
    """:func:`_small_body` with the leaves' counts and moments known already (14 sums a row
    instead of 20: 3.1 against 4.0 ns a row in the loop alone)."""
    _small_body(lt, lp, rb, cols, wb, oc, cur, prev, prop, out, False)


@numba.njit(cache=True)
def small_pass_rows(t, forest, slope, regs, Z, rows, sums, proposal, XbT, fusion, span):
    """:func:`~pymc_trees.bart.kernels.row_blocks.linear_pass_rows` (same arguments but
    ``rows = (r, omega, oc, kept)``, same results up to the order of the additions) when
    tree t and tree t - 1 have at most two leaves each (:func:`two_leaves`); with a common
    precision the leaves' ``W, Wz, Wzz`` are unweighted as there, and with ``kept`` left
    out."""
    value = forest.value
    reg, reg_prev = regs
    r, omega, oc, kept = rows
    fa, fb, fv, fc, jn = proposal
    lo, hi = span
    a, b = two_leaves(forest, t)
    lt = forest.leaf_of_row[t, lo:hi]
    # a column that is not read for its values (a slope of 0, a side of 0) is any column:
    # 0 * z is 0 for the finite z of Z
    jt = reg[a]
    zt = Z[max(jt, 0), lo:hi]
    cur = (a, value[t, a], slope[t, a] if jt >= 0 else 0.0, value[t, b],
           slope[t, b] if jt >= 0 else 0.0)
    if t > 0:
        pa, pb = two_leaves(forest, t - 1)
        jp = reg_prev[pa]
        lp = forest.leaf_of_row[t - 1, lo:hi]
        zp = Z[max(jp, 0), lo:hi]
        prev = (pa, value[t - 1, pa], slope[t - 1, pa] if jp >= 0 else 0.0, value[t - 1, pb],
                slope[t - 1, pb] if jp >= 0 else 0.0)
    else:
        lp, zp = lt, zt
        prev = (a, 0.0, 0.0, 0.0, 0.0)
    zn = Z[jn, lo:hi] if jn >= 0 else zt
    xv = XbT[max(fv, 0), lo:hi]
    ina = 1.0 if a == fa or a == fb else 0.0
    inb = 1.0 if b != a and (b == fa or b == fb) else 0.0
    wb = omega[lo:hi] if oc <= 0.0 else omega[:0]
    out = np.empty(20)
    cols = (zt, zp, zn, xv)
    prop = (ina, inb, fv < 0, fc)
    if kept:
        _small_rows_kept(lt, lp, r[lo:hi], cols, wb, oc, cur, prev, prop, out)
    else:
        _small_rows(lt, lp, r[lo:hi], cols, wb, oc, cur, prev, prop, out)
    if jt < 0:  # constant leaves: no slope sums
        out[1] = out[2] = out[4] = out[6] = out[7] = out[9] = 0.0
    if jn < 0:
        out[11] = out[12] = out[14] = out[16] = out[17] = out[19] = 0.0
    for s in range(5):
        if b != a:
            sums[s, b] = out[5 + s]
        sums[s, a] = out[s]
    for s in range(10):
        fusion[1 + s] = out[10 + s]


@numba.njit(cache=True, fastmath=FAST)
def _proposal_rows(lt, rb, cols, wb, oc, prop, out):
    """The loop of :func:`proposal_sums`: ``cols = (zn, xv)``, ``prop = (fa, fb, all_left,
    fc)``; ``out`` (10,) the left side's ``W, Wz, Wzz, S, Sz``, then the right side's."""
    zn, xv = cols
    fa, fb, all_left, fc = prop
    L0 = L1 = L2 = L3 = L4 = 0.0
    R0 = R1 = R2 = R3 = R4 = 0.0
    uniform = oc > 0.0
    for q in range(rb.shape[0]):
        k = lt[q]
        g = 1.0 if (k == fa or k == fb) else 0.0
        gl = g if (all_left or xv[q] <= fc) else 0.0
        gr = g - gl
        w = oc if uniform else wb[q]
        wr = w * rb[q]
        u = zn[q]
        wu = w * u
        wuu = wu * u
        wru = wr * u
        L0 += gl * w
        L1 += gl * wu
        L2 += gl * wuu
        L3 += gl * wr
        L4 += gl * wru
        R0 += gr * w
        R1 += gr * wu
        R2 += gr * wuu
        R3 += gr * wr
        R4 += gr * wru
    out[0], out[1], out[2], out[3], out[4] = L0, L1, L2, L3, L4
    out[5], out[6], out[7], out[8], out[9] = R0, R1, R2, R3, R4


@numba.njit(cache=True)
def proposal_sums(lt, rb, cols, weights, proposal, fusion):
    """The sums of the rows of the leaves a move proposes, for the plain pass
    (:func:`~pymc_trees.bart.kernels.row_blocks.linear_pass_rows`), over a block's rows (views
    from 0) after its residual ``rb`` is updated: ``proposal = (fa, fb, fv, fc, jn)`` as
    there, ``cols = (zn, xv)`` the rows' values of column ``jn`` (any column when ``jn <
    0``) and bins of feature ``fv``, ``weights = (wb, oc)``; into ``fusion[1:11]`` (left
    side, then right side), 0 without a proposal.  A loop of its own on vector registers,
    the sums reassociated as in :func:`small_pass_rows`."""
    fa, fb, fv, fc, jn = proposal
    if fa < 0:
        for q in range(1, 11):
            fusion[q] = 0.0
        return
    wb, oc = weights
    out = np.empty(10)
    b = fb if fb >= 0 else fa
    _proposal_rows(lt, rb, cols, wb, oc, (np.uint8(fa), np.uint8(b), fv < 0, fc), out)
    if jn < 0:
        out[1] = out[2] = out[4] = out[6] = out[7] = out[9] = 0.0
    for q in range(10):
        fusion[1 + q] = out[q]
