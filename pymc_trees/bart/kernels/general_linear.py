"""Linear leaves in the general tree step (``response="linear"`` with a likelihood that has no
exact augmentation): the moves of :mod:`pymc_trees.bart.kernels.linear` (grow, prune, and
change at a node whose children are leaves; grow and prune equally likely) with the leaf
coefficients proposed, as :mod:`pymc_trees.bart.kernels.general` proposes constant leaves.

A leaf under a split on a numeric column j holds ``b0 + b1 z_j(x)``; the root leaf and a leaf
under a categorical split hold ``b0`` (the regressor convention and the priors of
:mod:`pymc_trees.bart.kernels.linear`: ``b0, b1 ~ Normal(0, s^2 / 2)`` for a line,
``b0 ~ Normal(0, s^2)`` for a constant).  From a state with every row's derivative ``g_i``,
curvature ``h_i`` and tree t's current value ``c_i``, a leaf with rows N and regressor z gets
the proposal of one Newton step on log-likelihood plus log-prior:

    q(b) = Normal(A^-1 s, A^-1),   A = sum_N h_i x_i x_i' + prior precision,
                                   s = sum_N (g_i + h_i c_i) x_i,   x_i = (1, z_i)

(``x_i = 1`` for a constant), a fixed function of the state, so the reverse move builds its
proposal the same way from the proposed state.  The per-leaf sums ``W, Wz, Wzz, S, Sz`` of
``h, h z, h z^2, gc, gc z`` are those of the conjugate kernel with ``omega = h`` and
``omega r = gc``, so the proposal draw is that kernel's leaf draw
(:func:`pymc_trees.bart.kernels.linear.draw_linear_leaf`).  Leaves are then updated one by one by
Metropolis-Hastings with the same proposal from the current state.  As for constant leaves,
every proposal is a defensive mixture with weight ``DEFENSIVE`` on the leaf's prior
(:mod:`pymc_trees.bart.kernels.general`), so that a Newton step out of the support cannot
hold the chain at its start.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from pymc_trees.bart.kernels.moves import CHANGE, GROW, PRUNE
from pymc_trees.bart.kernels.tree_edit import (children_logr, children_masks, commit_children,
                                               grow_tree_logr, merge_children, pair_children_logr,
                                               pick_pair_rule, pick_prune, propose_split,
                                               prune_tree_logr, split_leaf)
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.general import two_leaf_rows
from pymc_trees.bart.kernels.newton import DEFENSIVE, log_mixture
from pymc_trees.bart.kernels.row_calls import clean_gh, clean_ll, decide
from pymc_trees.bart.kernels.linear import draw_linear_leaf, leaf_regressors

__all__ = ["linear_leaf_log_q", "linear_leaf_prior", "draw_linear_q", "general_linear_sweep",
           "new_linear_buffers", "LinearBuffers"]

LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, inline="always")
def linear_leaf_prior(b0, b1, has_slope, prec0):
    """The log prior of a leaf's coefficients (a line: both ``Normal(0, s^2 / 2)``)."""
    if not has_slope:
        return 0.5 * (math.log(prec0) - LOG_2PI) - 0.5 * prec0 * b0 * b0
    p = 2.0 * prec0
    return math.log(p) - LOG_2PI - 0.5 * p * (b0 * b0 + b1 * b1)


@numba.njit(cache=True, inline="always")
def linear_leaf_log_q(b0, b1, W, Wz, Wzz, S, Sz, has_slope, prec0):
    """``log q(b0, b1)``: the defensive mixture (:mod:`pymc_trees.bart.kernels.general`,
    weight ``DEFENSIVE`` on the leaf prior) of the Newton proposal and the leaf's prior."""
    return log_mixture(_newton_log_q(b0, b1, W, Wz, Wzz, S, Sz, has_slope, prec0),
                       linear_leaf_prior(b0, b1, has_slope, prec0), DEFENSIVE)


@numba.njit(cache=True, inline="always")
def draw_linear_q(rng, W, Wz, Wzz, S, Sz, has_slope, prec0):
    """A draw from :func:`linear_leaf_log_q`: the leaf prior with probability ``DEFENSIVE``,
    else the Newton proposal."""
    if rng.random() < DEFENSIVE:
        if not has_slope:
            return rng.standard_normal() / math.sqrt(prec0), 0.0
        sd = 1.0 / math.sqrt(2.0 * prec0)
        return rng.standard_normal() * sd, rng.standard_normal() * sd
    return draw_linear_leaf(rng, W, Wz, Wzz, S, Sz, has_slope, prec0)


@numba.njit(cache=True, inline="always")
def _newton_log_q(b0, b1, W, Wz, Wzz, S, Sz, has_slope, prec0):
    """``log Normal(b; A^-1 (S, Sz), A^-1)`` (module doc), ``A = [[W + p, Wz], [Wz, Wzz + p]]``,
    ``p = 2 prec0`` (1-D ``W + prec0`` without a slope)."""
    if not has_slope:
        P = W + prec0
        d = b0 - S / P
        return 0.5 * (math.log(P) - LOG_2PI) - 0.5 * P * d * d
    p = 2.0 * prec0
    a = W + p
    dd = Wzz + p
    det = a * dd - Wz * Wz
    m0 = (dd * S - Wz * Sz) / det
    m1 = (a * Sz - Wz * S) / det
    e0 = b0 - m0
    e1 = b1 - m1
    return (0.5 * math.log(det) - LOG_2PI
            - 0.5 * (a * e0 * e0 + 2.0 * Wz * e0 * e1 + dd * e1 * e1))


@numba.njit(cache=True)
def _sums(idx, start, end, j, Z, gc, h):
    """``W, Wz, Wzz, S, Sz`` of ``h`` and ``gc`` over the rows ``idx[start:end]`` with
    regressor column j (-1: none)."""
    W = 0.0
    Wz = 0.0
    Wzz = 0.0
    S = 0.0
    Sz = 0.0
    for q in range(start, end):
        i = idx[q]
        w = h[i]
        s = gc[i]
        W += w
        S += s
        if j >= 0:
            z = Z[j, i]
            Wz += w * z
            Wzz += w * z * z
            Sz += s * z
    return W, Wz, Wzz, S, Sz


@numba.njit(cache=True, inline="always")
def _at(b0, b1, i, j, Z):
    """A leaf's value at training row i (regressor column j, -1 for none)."""
    return b0 + b1 * Z[j, i] if j >= 0 else b0


@numba.njit(cache=True)
def _evaluate(rows_fn, pre, rows, cnt, st, b):
    """The likelihood at ``b.f_prop`` on ``rows[:cnt]``: fills the proposal's row arrays
    there and returns the log-likelihood difference to the current state."""
    fs = b.fs
    for q in range(cnt):
        fs[q] = b.f_prop[rows[q]]
    rows_fn(fs.ctypes, rows.ctypes, cnt, pre.ctypes, pre.shape[0], b.out.ctypes)
    out = b.out
    d = 0.0
    for q in range(cnt):
        i = rows[q]
        li = clean_ll(out[q])
        gi, hi = clean_gh(out[cnt + q], out[2 * cnt + q])
        b.ll_p[i] = li
        b.g_p[i] = gi
        b.h_p[i] = hi
        b.gc_p[i] = gi + hi * (fs[q] - b.f_minus[i])
        d += li - st.ll[i]
    return d


@numba.njit(cache=True)
def _keep(rows, cnt, st, b):
    for q in range(cnt):
        i = rows[q]
        st.f[i] = b.f_prop[i]
        st.ll[i] = b.ll_p[i]
        st.g[i] = b.g_p[i]
        st.h[i] = b.h_p[i]


@numba.njit(cache=True, inline="always")
def _set_children(t, kl, kr, j, kid, f, slope, reg):
    """A kept split's children: coefficients ``kid = (l0, l1, r0, r1)``, regressor j."""
    f.value[t, kl], slope[t, kl], f.value[t, kr], slope[t, kr] = kid[0], kid[1], kid[2], kid[3]
    reg[kl] = j
    reg[kr] = j


@numba.njit(cache=True, inline="always")
def _reset(b, st, cnt):
    """The proposal's values at a move's rows back to the state's."""
    for q in range(cnt):
        b.f_prop[b.rows[q]] = st.f[b.rows[q]]


@numba.njit(cache=True)
def _old_pair_log_q(t, kl, kr, rows, mid, cnt, Z, f, slope, reg, b, prec0):
    """The reverse proposal densities of two current sibling leaves' coefficients, their rows
    ``rows[:mid]`` and ``rows[mid:cnt]``, from the proposed state's sums."""
    total = 0.0
    for k, s0, s1 in ((kl, 0, mid), (kr, mid, cnt)):
        W, Wz, Wzz, S, Sz = _sums(rows, s0, s1, reg[k], Z, b.gc_p, b.h_p)
        total += linear_leaf_log_q(f.value[t, k], slope[t, k], W, Wz, Wzz, S, Sz, reg[k] >= 0,
                                   prec0)
    return total


@numba.njit(cache=True)
def _children(rng, idx, mid, cnt, j, Z, data, rules, sc, st, b, kid):
    """The proposal of a split's two children with regressor column j, their rows
    ``idx[:mid]`` and ``idx[mid:cnt]``: their availability (masks into ``sc.nmask``) and
    coefficients from their q into ``kid = (l0, l1, r0, r1)``; ``b.rows`` and ``b.f_prop``
    at their rows.  Returns ``(wL, wR, log prior - log q of both)``."""
    prec0 = rules.prec0
    WL, WzL, WzzL, SL, SzL = _sums(idx, 0, mid, j, Z, b.gc, st.h)
    WR, WzR, WzzR, SR, SzR = _sums(idx, mid, cnt, j, Z, b.gc, st.h)
    wL, wR = children_masks(data, idx, mid, cnt, rules.min_leaf, sc)
    l0, l1 = draw_linear_q(rng, WL, WzL, WzzL, SL, SzL, j >= 0, prec0)
    r0, r1 = draw_linear_q(rng, WR, WzR, WzzR, SR, SzR, j >= 0, prec0)
    kid[0], kid[1], kid[2], kid[3] = l0, l1, r0, r1
    for q in range(cnt):
        i = idx[q]
        b.rows[q] = i
        b.f_prop[i] = b.f_minus[i] + (_at(l0, l1, i, j, Z) if q < mid else _at(r0, r1, i, j, Z))
    return wL, wR, (linear_leaf_prior(l0, l1, j >= 0, prec0)
                    + linear_leaf_prior(r0, r1, j >= 0, prec0)
                    - linear_leaf_log_q(l0, l1, WL, WzL, WzzL, SL, SzL, j >= 0, prec0)
                    - linear_leaf_log_q(r0, r1, WR, WzR, WzzR, SR, SzR, j >= 0, prec0))


@numba.njit(cache=True)
def _grow(rng, t, lt, data, rules, lrows, f, slope, sc, st, b, lik):
    """Returns -1 when no leaf can split, else 1/0 for accepted/rejected."""
    regcol, Z = lrows
    rows_fn, pre, reg = lik.rows_fn, lik.pre, b.reg
    prec0 = rules.prec0
    idx = sc.idx
    ell, nb, w_new, cnt, v, c, nc, mid = propose_split(
        rng, t, data, rules.min_leaf, f, sc)
    if ell < 0:
        return -1
    j = regcol[v] if lt else -1
    kid = b.kid
    wL, wR, leaves = _children(rng, idx, mid, cnt, j, Z, data, rules, sc, st, b, kid)
    d = f.depth[t, ell]
    ro = reg[ell]
    o0, o1 = f.value[t, ell], slope[t, ell]
    logr = (grow_tree_logr(d, nb, w_new, 1.0, 1.0, rules.alpha, rules.beta)
            + children_logr(d, wL, wR, rules.alpha, rules.beta)
            + leaves - linear_leaf_prior(o0, o1, ro >= 0, prec0))
    logr += _evaluate(rows_fn, pre, b.rows, cnt, st, b)
    W, Wz, Wzz, S, Sz = _sums(b.rows, 0, cnt, ro, Z, b.gc_p, b.h_p)
    logr += linear_leaf_log_q(o0, o1, W, Wz, Wzz, S, Sz, ro >= 0, prec0)
    ok = decide(rng, logr)
    if ok:
        _keep(b.rows, cnt, st, b)
        kl, kr = split_leaf(t, ell, v, c, nc, wL, wR, f, sc.nmask, idx, mid, cnt)
        reg[ell] = -1
        _set_children(t, kl, kr, j, kid, f, slope, reg)
    _reset(b, st, cnt)
    return 1 if ok else 0


@numba.njit(cache=True)
def _prune(rng, t, lt, rules, lrows, f, slope, sc, st, b, lik):
    """Returns -1 when no node is prunable, else 1/0."""
    regcol, Z = lrows
    rows_fn, pre, reg = lik.rows_fn, lik.pre, b.reg
    prec0 = rules.prec0
    eta, kl, kr, w, b_new = pick_prune(rng, t, f)
    if eta < 0:
        return -1
    par = f.parent[t, eta]
    j = regcol[f.var[t, par]] if par >= 0 and lt else -1  # the merged leaf's regressor
    idx = sc.idx
    cnt, mid = two_leaf_rows(t, kl, kr, f.leaf_of_row, idx)
    W, Wz, Wzz, S, Sz = _sums(idx, 0, cnt, j, Z, b.gc, st.h)
    m0, m1 = draw_linear_q(rng, W, Wz, Wzz, S, Sz, j >= 0, prec0)
    struct = prune_tree_logr(t, eta, kl, kr, w, b_new, 1.0, 1.0, rules.alpha, rules.beta, f)
    rl, rr = reg[kl], reg[kr]
    logr = (-struct + linear_leaf_prior(m0, m1, j >= 0, prec0)
            - linear_leaf_prior(f.value[t, kl], slope[t, kl], rl >= 0, prec0)
            - linear_leaf_prior(f.value[t, kr], slope[t, kr], rr >= 0, prec0)
            - linear_leaf_log_q(m0, m1, W, Wz, Wzz, S, Sz, j >= 0, prec0))
    for q in range(cnt):
        i = idx[q]
        b.rows[q] = i
        b.f_prop[i] = b.f_minus[i] + _at(m0, m1, i, j, Z)
    logr += _evaluate(rows_fn, pre, b.rows, cnt, st, b)
    logr += _old_pair_log_q(t, kl, kr, b.rows, mid, cnt, Z, f, slope, reg, b, prec0)
    ok = decide(rng, logr)
    if ok:
        _keep(b.rows, cnt, st, b)
        for q in range(cnt):
            f.leaf_of_row[t, idx[q]] = eta
        f.value[t, eta], slope[t, eta] = m0, m1
        reg[eta] = j
        reg[kl] = -1
        reg[kr] = -1
        merge_children(t, eta, kl, kr, f)
    _reset(b, st, cnt)
    return 1 if ok else 0


@numba.njit(cache=True)
def _change(rng, t, lt, data, rules, lrows, f, slope, sc, st, b, lik):
    """A new rule from the prior at a node whose children are both leaves (uniformly among
    them; the move keeps them so), the children's coefficients from their q.  The rule's
    probability cancels between prior and proposal.  Returns -1 when impossible, else 1/0."""
    regcol, Z = lrows
    rows_fn, pre, reg = lik.rows_fn, lik.pre, b.reg
    prec0 = rules.prec0
    idx = sc.idx
    # the rows in increasing order (the rule's draw reads them; the old children's split
    # point is not needed: each row's old leaf is in leaf_of_row)
    eta, kl, kr, cnt, v, c, nc, mid = pick_pair_rule(rng, t, data, rules.min_leaf, f, sc)
    if eta < 0:
        return -1
    j = regcol[v] if lt else -1
    kid = b.kid
    wL, wR, leaves = _children(rng, idx, mid, cnt, j, Z, data, rules, sc, st, b, kid)
    rl, rr = reg[kl], reg[kr]
    logr = (pair_children_logr(t, eta, kl, kr, wL, wR, rules.alpha, rules.beta, f)
            + leaves
            - linear_leaf_prior(f.value[t, kl], slope[t, kl], rl >= 0, prec0)
            - linear_leaf_prior(f.value[t, kr], slope[t, kr], rr >= 0, prec0))
    logr += _evaluate(rows_fn, pre, b.rows, cnt, st, b)
    # the reverse proposal: the old children's coefficients from the proposed state's sums
    # over the old children's rows
    cnt2, mid2 = two_leaf_rows(t, kl, kr, f.leaf_of_row, b.rows2)
    logr += _old_pair_log_q(t, kl, kr, b.rows2, mid2, cnt2, Z, f, slope, reg, b, prec0)
    ok = decide(rng, logr)
    if ok:
        _keep(b.rows, cnt, st, b)
        f.var[t, eta] = v
        f.cut[t, eta] = c
        f.ncut[t, eta] = nc
        commit_children(t, kl, kr, wL, wR, f.wavail, f.amask, sc.nmask, f.leaf_of_row, idx,
                        mid, cnt)
        _set_children(t, kl, kr, j, kid, f, slope, reg)
    _reset(b, st, cnt)
    return 1 if ok else 0


@numba.njit(cache=True, inline="always")
def _add_row(Sm, a, k, w, s, j, Z, i):
    """Row i into leaf k's sums ``Sm[a, :, k] = (W, Wz, Wzz, S, Sz)`` (weight w, gradient
    term s, regressor column j, -1 for none)."""
    Sm[a, 0, k] += w
    Sm[a, 3, k] += s
    if j >= 0:
        z = Z[j, i]
        Sm[a, 1, k] += w * z
        Sm[a, 2, k] += w * z * z
        Sm[a, 4, k] += s * z


@numba.njit(cache=True)
def _current_sums(t, f, slope, reg, regq, Z, st, Sm):
    """Zero ``Sm`` (2, 5, K) over tree t's slots and add every row to ``Sm[0]``, its leaf's
    sums in the current state (tree t's value at the row from the regressors ``reg``) with
    the proposal's regressors ``regq``."""
    nk = f.n_nodes[t]
    for a in range(2):
        for s in range(5):
            for k in range(nk):
                Sm[a, s, k] = 0.0
    for i in range(st.f.shape[0]):
        k = f.leaf_of_row[t, i]
        c = _at(f.value[t, k], slope[t, k], i, reg[k], Z)
        _add_row(Sm, 0, k, st.h[i], st.g[i] + st.h[i] * c, regq[k], Z, i)


@numba.njit(cache=True)
def _evaluate_tree(t, f, regp, reg, Z, st, b, rows_fn, pre, Sm):
    """Tree t's leaves at the proposals ``b.nb0``, ``b.nb1`` (regressors ``regp``): the
    likelihood at every row into the proposal's row arrays, each leaf's log-likelihood
    difference into ``b.dll``, and each leaf's sums in the proposed state with the
    regressors ``reg`` (the reverse proposal's) into ``Sm[1]``."""
    n = st.f.shape[0]
    for i in range(n):
        k = f.leaf_of_row[t, i]
        b.f_prop[i] = b.f_minus[i] + _at(b.nb0[k], b.nb1[k], i, regp[k], Z)
    rows_fn(b.f_prop.ctypes, b.all_rows.ctypes, n, pre.ctypes, pre.shape[0], b.out.ctypes)
    dll = b.dll
    for k in range(f.n_nodes[t]):
        dll[k] = 0.0
    out = b.out
    for i in range(n):
        li = clean_ll(out[i])
        gi, hi = clean_gh(out[n + i], out[2 * n + i])
        b.ll_p[i] = li
        b.g_p[i] = gi
        b.h_p[i] = hi
        k = f.leaf_of_row[t, i]
        dll[k] += li - st.ll[i]
        _add_row(Sm, 1, k, hi, gi + hi * (b.f_prop[i] - b.f_minus[i]), reg[k], Z, i)


@numba.njit(cache=True)
def _leaf_update(rng, t, f, slope, Z, prec0, st, b, lik):
    """One Metropolis-Hastings update of every leaf of tree t (all leaves proposed from the
    current state, the likelihood at all rows once).  Returns (accepted, proposed)."""
    rows_fn, pre, reg = lik.rows_fn, lik.pre, b.reg
    n = st.f.shape[0]
    nk = f.n_nodes[t]
    Sm = b.sums  # (2, 5, K): the current and the proposed state's per-leaf sums
    _current_sums(t, f, slope, reg, reg, Z, st, Sm)
    for k in range(nk):
        if f.var[t, k] == LEAF:
            b.nb0[k], b.nb1[k] = draw_linear_q(rng, Sm[0, 0, k], Sm[0, 1, k], Sm[0, 2, k],
                                                  Sm[0, 3, k], Sm[0, 4, k], reg[k] >= 0, prec0)
    _evaluate_tree(t, f, reg, reg, Z, st, b, rows_fn, pre, Sm)
    dll = b.dll
    acc = 0
    tot = 0
    keep = b.keep
    for k in range(nk):
        keep[k] = 0
        if f.var[t, k] != LEAF:
            continue
        tot += 1
        has = reg[k] >= 0
        o0, o1, p0, p1 = f.value[t, k], slope[t, k], b.nb0[k], b.nb1[k]
        logr = (dll[k] + linear_leaf_prior(p0, p1, has, prec0)
                - linear_leaf_prior(o0, o1, has, prec0)
                + linear_leaf_log_q(o0, o1, Sm[1, 0, k], Sm[1, 1, k], Sm[1, 2, k], Sm[1, 3, k],
                                    Sm[1, 4, k], has, prec0)
                - linear_leaf_log_q(p0, p1, Sm[0, 0, k], Sm[0, 1, k], Sm[0, 2, k], Sm[0, 3, k],
                                    Sm[0, 4, k], has, prec0))
        if decide(rng, logr):
            f.value[t, k] = p0
            slope[t, k] = p1
            keep[k] = 1
            acc += 1
    for i in range(n):
        if keep[f.leaf_of_row[t, i]] == 1:
            st.f[i] = b.f_prop[i]
            st.ll[i] = b.ll_p[i]
            st.g[i] = b.g_p[i]
            st.h[i] = b.h_p[i]
        else:
            b.f_prop[i] = st.f[i]
    return acc, tot


@numba.njit(cache=True)
def _switch_kind(rng, t, lrows, lin, f, slope, prec0, st, b, lik):
    """``response="mix"``: propose tree t of the other kind (linear for constant, constant for
    linear; prior 1/2 each, which cancels) with the same structure, every leaf's coefficients
    drawn from its Newton proposal under the new regressors from the current state, and
    accept with the exact log-likelihood; the reverse proposal of the current coefficients
    is built under the current regressors from the proposed state.  Returns 1/0."""
    regcol, Z = lrows
    rows_fn, pre, reg = lik.rows_fn, lik.pre, b.reg
    n = st.f.shape[0]
    nk = f.n_nodes[t]
    regn = b.reg2
    for k in range(nk):
        regn[k] = -1
        if lin[t] == 0 and f.var[t, k] == LEAF and f.parent[t, k] >= 0:
            regn[k] = regcol[f.var[t, f.parent[t, k]]]
    Sm = b.sums  # (2, 5, K): the forward sums (new regressors), the reverse (current ones)
    _current_sums(t, f, slope, reg, regn, Z, st, Sm)
    logr = 0.0
    for k in range(nk):
        if f.var[t, k] == LEAF:
            has = regn[k] >= 0
            p0, p1 = draw_linear_q(rng, Sm[0, 0, k], Sm[0, 1, k], Sm[0, 2, k], Sm[0, 3, k],
                                      Sm[0, 4, k], has, prec0)
            b.nb0[k], b.nb1[k] = p0, p1
            logr += (linear_leaf_prior(p0, p1, has, prec0)
                     - linear_leaf_prior(f.value[t, k], slope[t, k], reg[k] >= 0, prec0)
                     - linear_leaf_log_q(p0, p1, Sm[0, 0, k], Sm[0, 1, k], Sm[0, 2, k],
                                         Sm[0, 3, k], Sm[0, 4, k], has, prec0))
    _evaluate_tree(t, f, regn, reg, Z, st, b, rows_fn, pre, Sm)
    for k in range(nk):
        if f.var[t, k] == LEAF:
            logr += b.dll[k] + linear_leaf_log_q(f.value[t, k], slope[t, k], Sm[1, 0, k],
                                                 Sm[1, 1, k], Sm[1, 2, k], Sm[1, 3, k],
                                                 Sm[1, 4, k], reg[k] >= 0, prec0)
    ok = decide(rng, logr)
    if ok:
        lin[t] = 1 - lin[t]
        for k in range(nk):
            reg[k] = regn[k]
            if f.var[t, k] == LEAF:
                f.value[t, k] = b.nb0[k]
                slope[t, k] = b.nb1[k]
        _keep(b.all_rows, n, st, b)
    else:
        for i in range(n):
            b.f_prop[i] = st.f[i]
    return 1 if ok else 0


class LinearBuffers(NamedTuple):
    """Buffers of :func:`general_linear_sweep`: per row ``f_prop``, ``f_minus``, ``gc``,
    ``rows``, ``rows2``, ``fs``, ``ll_p``, ``g_p``, ``h_p``, ``gc_p``, ``all_rows`` (0 .. n-1)
    and ``out``
    (3 n,) for the row function; per node slot ``sums`` (2, 5, K), the current and the
    proposed state's ``W, Wz, Wzz, S, Sz``, the proposals ``nb0``, ``nb1``, ``dll``, ``keep``
    and the leaves' regressors ``reg`` (``reg2`` those of the other kind of tree); ``kid``
    (4,) a split's children's coefficients."""

    f_prop: np.ndarray
    f_minus: np.ndarray
    gc: np.ndarray
    rows: np.ndarray
    rows2: np.ndarray
    fs: np.ndarray
    ll_p: np.ndarray
    g_p: np.ndarray
    h_p: np.ndarray
    gc_p: np.ndarray
    all_rows: np.ndarray
    out: np.ndarray
    sums: np.ndarray
    nb0: np.ndarray
    nb1: np.ndarray
    dll: np.ndarray
    keep: np.ndarray
    reg: np.ndarray
    reg2: np.ndarray
    kid: np.ndarray


def new_linear_buffers(n: int, capacity: int) -> LinearBuffers:
    """Buffers for :func:`general_linear_sweep` (the node-sized ones follow the capacity)."""
    K = int(capacity)
    return LinearBuffers(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, np.int64),
                         np.zeros(n, np.int64), np.zeros(n), np.zeros(n), np.zeros(n),
                         np.zeros(n), np.zeros(n),
                         np.arange(n, dtype=np.int64), np.zeros(3 * n), np.zeros((2, 5, K)),
                         np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K, np.int64),
                         np.zeros(K, np.int64), np.zeros(K, np.int64), np.zeros(4))


@numba.njit(cache=True)
def general_linear_sweep(rng, lik, data, rules, lrows, kinds, forest, slope, sc, st, b, tally):
    """One sweep of the general tree step over all trees with linear leaves: per tree a grow
    (probability 0.3), prune (0.3) or change at a node whose children are leaves (0.4), its
    new leaves' coefficients from their Newton proposals and the move accepted with the exact
    log-likelihood, then a Metropolis-Hastings update of every leaf (module doc).

    ``lik`` (a :class:`~pymc_trees.bart.kernels.row_calls.RowLikelihood`: its ``rows_fn``
    and ``pre``; linear leaves' proposals have no defensive mixture, so its ``defensive`` is
    not read), ``data``, ``rules``, ``sc``: as
    :func:`pymc_trees.bart.kernels.general.general_sweep` (one output); ``forest`` the
    :class:`ForestArrays` (``value`` holds every leaf's ``b0``), ``slope`` (m, K) the ``b1``;
    ``lrows`` the :class:`~pymc_trees.bart.kernels.linear.LinearRows`: ``regcol`` (q,) the
    regressor column of a split on each feature (-1: categorical), ``Z`` (p, n) the
    standardised columns; ``st`` a :class:`RowState` of 1-D arrays (n,),
    cleaned; ``b`` :func:`new_linear_buffers`; ``tally`` (2, 5) counts proposed (row 0) and
    accepted (row 1) per move (grow, prune, change, swap, leaf), incremented; ``kinds = (lin,
    mix)``: ``lin`` (m,) uint8 whether each tree is linear (1) or constant (0); with ``mix``
    (``response="mix"``) a tree's kind is updated after its move by :func:`_switch_kind`."""
    f = forest
    lin, mix = kinds
    regcol, Z = lrows
    n = st.f.shape[0]
    m = f.value.shape[0]
    reg = b.reg
    for i in range(n):
        b.f_prop[i] = st.f[i]
    for t in range(m):
        leaf_regressors(t, f.var, f.parent, f.n_nodes, regcol, lin, reg)
        for i in range(n):  # tree t's values, the rest of the term and the proposals' gc
            k = f.leaf_of_row[t, i]
            c = _at(f.value[t, k], slope[t, k], i, reg[k], Z)
            b.f_minus[i] = st.f[i] - c
            b.gc[i] = st.g[i] + st.h[i] * c
        u = rng.random()
        move = GROW if u < 0.3 else (PRUNE if u < 0.6 else CHANGE)
        if move == GROW:
            s = _grow(rng, t, lin[t], data, rules, lrows, f, slope, sc, st, b, lik)
        elif move == PRUNE:
            s = _prune(rng, t, lin[t], rules, lrows, f, slope, sc, st, b, lik)
        else:
            s = _change(rng, t, lin[t], data, rules, lrows, f, slope, sc, st, b, lik)
        if s >= 0:
            tally[0, move] += 1
            tally[1, move] += s
        if mix:
            _switch_kind(rng, t, lrows, lin, f, slope, rules.prec0, st, b, lik)
        a, tot = _leaf_update(rng, t, f, slope, Z, rules.prec0, st, b, lik)
        tally[1, 4] += a
        tally[0, 4] += tot
