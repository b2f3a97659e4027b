"""The constant leaves' form of the general step's grow and prune
(:mod:`pymc_trees.bart.kernels.general_moves`): a leaf holds one value per output (J outputs
that share their trees; J = 1 is one output), each proposed from its Newton proposal
(:mod:`~pymc_trees.bart.kernels.newton`), with the row arrays of the
:class:`~pymc_trees.bart.kernels.row_calls.RowBuffers`.  The hooks' implementations, and the
row passes that every constant-leaf move of :mod:`~pymc_trees.bart.kernels.general` shares:
the likelihood at a move's rows (:func:`evaluate_rows`), keeping and resetting them."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from pymc_trees.bart.kernels.general_moves import (MoveRows, evaluate, fill_rows, keep_rows,
                                                   leaf_form_is, old_leaf_log_q,
                                                   propose_children, propose_merged,
                                                   set_children, set_merged)
from pymc_trees.bart.kernels.newton import draw_at, group_log_q, group_sums, prior_at, q_at
from pymc_trees.bart.kernels.row_calls import RowState, clean_gh, clean_ll

__all__ = ["ConstantProposals", "evaluate_rows", "keep_state_rows", "reset_rows",
           "children_values", "merged_values"]


class ConstantProposals(NamedTuple):
    """Constant leaves in the general step's moves: ``value`` (J, m, K) the leaf values,
    ``w`` the defensive weight of every proposal, ``prec0`` the leaf prior's precision, per
    output and row ``gc = g + h c`` and ``h`` (J, n) of the state the move starts from
    (:mod:`~pymc_trees.bart.kernels.general`), the sweep's row list ``idx``, the proposals'
    sums ``S`` (2, J, 2) and values ``mu`` (J, 2), the state ``st`` (a
    :class:`~pymc_trees.bart.kernels.row_calls.RowState`) and the proposal's rows ``mv`` (a
    :class:`~pymc_trees.bart.kernels.general_moves.MoveRows`).  Built once a sweep."""

    value: np.ndarray
    w: float
    prec0: float
    gc: np.ndarray
    h: np.ndarray
    idx: np.ndarray
    S: np.ndarray
    mu: np.ndarray
    st: RowState
    mv: MoveRows


@numba.njit(cache=True, inline="always")
def evaluate_rows(rows_fn, pre, rows, cnt, logr_rest, st, b):
    """Evaluate the likelihood at ``b.f_prop`` on ``rows[:cnt]`` (the rows a move changes),
    fill the proposal's row arrays there and return the log ratio without the reverse proposal
    densities."""
    J = st.g.shape[0]
    fs = b.fs
    for j in range(J):
        for q in range(cnt):
            fs[j * cnt + q] = b.f_prop[j, rows[q]]
    rows_fn(fs.ctypes, rows.ctypes, cnt, pre.ctypes, pre.shape[0], b.out.ctypes)
    out = b.out
    d = 0.0
    for q in range(cnt):
        i = rows[q]
        li = clean_ll(out[q])
        b.ll_p[i] = li
        d += li - st.ll[i]
    for j in range(J):  # output by output
        gp, hp, gcp, fm = b.g_p[j], b.h_p[j], b.gc_p[j], b.f_minus[j]
        og, oh, of = (1 + j) * cnt, (1 + J + j) * cnt, j * cnt
        for q in range(cnt):
            i = rows[q]
            gi, hi = clean_gh(out[og + q], out[oh + q])
            gp[i] = gi
            hp[i] = hi
            gcp[i] = gi + hi * (fs[of + q] - fm[i])
    return logr_rest + d


@numba.njit(cache=True, inline="always")
def keep_state_rows(rows, cnt, st, b):
    for q in range(cnt):
        st.ll[rows[q]] = b.ll_p[rows[q]]
    for j in range(st.g.shape[0]):
        sf, sg, sh, fp, gp, hp = st.f[j], st.g[j], st.h[j], b.f_prop[j], b.g_p[j], b.h_p[j]
        for q in range(cnt):
            i = rows[q]
            sf[i] = fp[i]
            sg[i] = gp[i]
            sh[i] = hp[i]


@numba.njit(cache=True)
def reset_rows(rows, cnt, st, b):
    for j in range(st.f.shape[0]):
        fp, sf = b.f_prop[j], st.f[j]
        for q in range(cnt):
            fp[rows[q]] = sf[rows[q]]


@numba.njit(cache=True, inline="always")
def children_values(t, kl, kr, value, mu):
    """A kept grow's children take the proposed vectors ``mu[:, 0]`` and ``mu[:, 1]``."""
    for j in range(value.shape[0]):
        value[j, t, kl] = mu[j, 0]
        value[j, t, kr] = mu[j, 1]


@numba.njit(cache=True, inline="always")
def merged_values(t, node, idx, cnt, value, mu, leaf_of_row):
    """A kept prune's rows ``idx[:cnt]`` go to ``node``, which takes ``mu[:, 0]``."""
    for q in range(cnt):
        leaf_of_row[t, idx[q]] = node
    for j in range(value.shape[0]):
        value[j, t, node] = mu[j, 0]


def _constant(leaves) -> bool:
    return leaf_form_is(leaves, ConstantProposals)


@overload(propose_children)
def _propose_children(leaves, rng, t, ell, v, mid, cnt, tree_logr):
    if not _constant(leaves):
        return None

    def impl(leaves, rng, t, ell, v, mid, cnt, tree_logr):
        S, mu, prec0, w, idx = leaves.S, leaves.mu, leaves.prec0, leaves.w, leaves.idx
        group_sums(idx, 0, mid, leaves.gc, leaves.h, S, 0)
        group_sums(idx, mid, cnt, leaves.gc, leaves.h, S, 1)
        draw_at(rng, S[0], S[1], 0, prec0, w, mu, 0)
        draw_at(rng, S[0], S[1], 1, prec0, w, mu, 1)
        return (tree_logr + prior_at(mu, 0, prec0) + prior_at(mu, 1, prec0)
                - prior_at(leaves.value[:, t], ell, prec0)
                - q_at(mu, 0, S[0], S[1], 0, prec0, w) - q_at(mu, 1, S[0], S[1], 1, prec0, w)
                ), 0
    return impl


@overload(propose_merged)
def _propose_merged(leaves, rng, t, eta, kl, kr, cnt, struct, pv):
    if not _constant(leaves):
        return None

    def impl(leaves, rng, t, eta, kl, kr, cnt, struct, pv):
        S, mu, prec0, w = leaves.S, leaves.mu, leaves.prec0, leaves.w
        group_sums(leaves.idx, 0, cnt, leaves.gc, leaves.h, S, 0)
        draw_at(rng, S[0], S[1], 0, prec0, w, mu, 0)
        vt = leaves.value[:, t]
        return (-struct + prior_at(mu, 0, prec0) - prior_at(vt, kl, prec0)
                - prior_at(vt, kr, prec0) - q_at(mu, 0, S[0], S[1], 0, prec0, w)), 0
    return impl


@overload(fill_rows)
def _fill_rows(leaves, mid, cnt, j):
    if not _constant(leaves):
        return None

    def impl(leaves, mid, cnt, j):
        mu, idx, mv = leaves.mu, leaves.idx, leaves.mv
        J = mu.shape[0]
        for q in range(cnt):
            i = idx[q]
            mv.rows[q] = i
            side = 0 if q < mid else 1
            for o in range(J):
                mv.f_prop[o, i] = mv.f_minus[o, i] + mu[o, side]
    return impl


@overload(evaluate)
def _evaluate_hook(leaves, rows_fn, pre, cnt, logr):
    if not _constant(leaves):
        return None

    def impl(leaves, rows_fn, pre, cnt, logr):
        return evaluate_rows(rows_fn, pre, leaves.mv.rows, cnt, logr, leaves.st, leaves.mv)
    return impl


@overload(old_leaf_log_q)
def _old_leaf_log_q(leaves, t, k, start, end):
    if not _constant(leaves):
        return None

    def impl(leaves, t, k, start, end):
        mv = leaves.mv
        return group_log_q(mv.rows, start, end, mv.gc_p, mv.h_p, leaves.value[:, t], k,
                           leaves.prec0, leaves.w, leaves.S)
    return impl


@overload(keep_rows)
def _keep_rows_hook(leaves, cnt):
    if not _constant(leaves):
        return None

    def impl(leaves, cnt):
        keep_state_rows(leaves.mv.rows, cnt, leaves.st, leaves.mv)
    return impl


@overload(set_children)
def _set_children(leaves, t, ell, kl, kr, j):
    if not _constant(leaves):
        return None

    def impl(leaves, t, ell, kl, kr, j):
        children_values(t, kl, kr, leaves.value, leaves.mu)
    return impl


@overload(set_merged)
def _set_merged(leaves, t, eta, kl, kr, cnt, j, leaf_of_row):
    if not _constant(leaves):
        return None

    def impl(leaves, t, eta, kl, kr, cnt, j, leaf_of_row):
        merged_values(t, eta, leaves.idx, cnt, leaves.value, leaves.mu, leaf_of_row)
    return impl
