"""Tree moves for any likelihood: reversible-jump proposals with Newton (Laplace) leaf
proposals (docs/math.md section 9, after Linero 2022).

The leaf values cannot be integrated out, so a structural move of tree t proposes values for
the leaves it creates, and the acceptance ratio uses the exact log-likelihood.  The kernels
here know nothing of the likelihood: they propose, and the caller evaluates the row
log-likelihoods and their derivatives at the proposed values of the term, finishes the ratio
and decides (:meth:`ForestSampler.general_sweep`).

**The proposal of a leaf's value.**  In a state of the chain, every row i has the
log-likelihood ``l_i`` of the term's value ``f_i``, its derivative ``g_i`` and its curvature
``h_i = max(-l_i'', 0)`` there, and ``c_i``, tree t's current value at row i.  A leaf that a
move creates from that state, holding rows N, gets the proposal of one Newton step on
log-likelihood plus log-prior (leaf prior ``Normal(0, 1/prec0)``) from the rows' current
values:

    q(mu) = Normal(G / P, 1 / P),   G = sum_N (g_i + h_i c_i),   P = prec0 + sum_N h_i.

This is a fixed function of the state the move starts in, so the reverse move builds its
proposal the same way from the proposed state: the caller evaluates the derivatives there
(in the same call as the log-likelihood) and adds the reverse proposal densities.  The
kernels take ``gc = g + h c`` and ``h`` per row and return everything else of the log
ratio: the structural factors of the CGM moves (:mod:`pymc_trees.bart.kernels.cgm`), the leaf
priors of the removed and created leaves, and the forward proposal densities.  For a Gaussian
likelihood the Newton step is exact from any point: q is the leaf's exact conditional.

Leaf values are then updated leaf by leaf by Metropolis-Hastings with the same Newton
proposal from the current value (:func:`leaf_proposals`, :func:`leaf_decisions`).

**A defensive mixture.**  Every leaf proposal is the mixture

    q(mu) = (1 - w) Normal(G / P, 1 / P) + w Normal(0, 1 / prec0),   w = DEFENSIVE = 0.01

of the Newton step and the leaf prior, drawn by a uniform first and with the mixture's
density in every ratio (forward and reverse).  Far from the posterior a Newton step can
overshoot out of the support: with ``Poisson(mu=f)`` (identity link) and every row at a
constant ``f0 > 2 ybar``, the step lands at ``f0 (2 - f0 / ybar) < 0``, every proposal had
zero density and the chain never left its start (issue 48).  The prior component proposes
values of the prior's size from any state, so the chain moves from any start of positive
density; near the posterior it costs about ``w`` of the leaf acceptance.  Both parts are
fixed functions of the state, so the chain stays exact.  Where the Newton step is the exact
conditional (Gaussian rows: the joint update of outputs that share their trees,
``SharedOutputSampler.conjugate_sweep``) the sweep takes ``w = 0``: every leaf update is then
a Gibbs draw.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_trees.bart.kernels.moves import GROW, PRUNE, SWAP, draw_move
from pymc_trees.bart.kernels.tree_edit import (children_logr, children_masks, grow_tree_logr,
                                               merge_children, pick_prune, propose_split,
                                               prune_tree_logr, split_leaf)
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.general_restructure import (leaves_below, restructure_commit,
                                                         restructure_propose, restructure_revert,
                                                         restructure_values, reverse_old_leaves)
# The leaf proposals and the row-callback protocol have their own modules; the names other
# modules and the tests read from here (``gk.DEFENSIVE``, ``gk.call_all``, ...) stay importable.
from pymc_trees.bart.kernels.newton import (DEFENSIVE, draw_at, draw_q, group_log_q, group_sums,
                                            leaf_gh, log_mixture, log_prior, log_q, prior_at, q_at)
from pymc_trees.bart.kernels.row_calls import (ROW_SIGNATURE, call_all, call_rows, clean_gh,
                                               clean_ll, clean_rows, decide, gaussian_pre,
                                               gaussian_rows, new_row_buffers, RowBuffers,
                                               RowLikelihood, RowState)

__all__ = ["DEFENSIVE", "log_mixture", "leaf_gh", "log_prior", "log_q", "group_log_q",
           "reverse_old_leaves", "grow_propose", "grow_commit", "prune_propose", "prune_commit",
           "restructure_propose", "restructure_values", "restructure_commit",
           "restructure_revert", "leaf_proposals", "leaf_decisions", "tree_values",
           "RowLikelihood", "RowState",
           "RowBuffers", "new_row_buffers", "clean_ll", "clean_gh", "clean_rows",
           "general_sweep", "general_one_sweep", "call_rows", "call_all",
           "prior_at", "q_at", "group_sums", "leaves_below", "two_leaf_rows", "decide",
           "ROW_SIGNATURE", "gaussian_rows", "gaussian_pre"]


@numba.njit(cache=True)
def tree_values(t, value, leaf_of_row, out):
    """``out[j, i]`` = the value of output j of tree t at training row i."""
    for i in range(leaf_of_row.shape[1]):
        k = leaf_of_row[t, i]
        for j in range(value.shape[0]):
            out[j, i] = value[j, t, k]


@numba.njit(cache=True)
def grow_propose(rng, t, data, rules, w, move_cp, forest, value, g, h, sc, b):
    """Propose to split a leaf of tree t: the leaf uniformly among the splittable ones, the
    rule from the prior, the children's value vectors from their q.

    Returns -1 when no leaf can split, else 1 (the caller evaluates the likelihood).  Fills
    ``idx[:cnt]`` with the leaf's rows (the left child's first), ``out_i = (leaf, v, c, nc,
    cnt, mid)``, ``mu[:, 0]``, ``mu[:, 1]`` with the children's values (shape (J, 2)),
    ``out_f = (log ratio without the log-likelihood, wL, wR)``, and the children's available
    cutpoints in the last two rows of ``nmask``.  ``value`` has shape (J, m, K), ``g`` and
    ``h`` (J, n).  ``sc`` is the :class:`SweepScratch` (its ``idx``, ``hist``, ``lo``, ``hi``,
    ``tmp``, ``nmask``), ``b`` the :class:`RowBuffers` (its ``mu``, ``out_i``, ``out_f`` and
    the scratch ``S`` of shape (2, J, 2))."""
    XbT, ncuts, iscat, split_prior = data.XbT, data.ncuts, data.iscat, data.split_prior
    min_leaf, alpha, beta, prec0 = rules
    depth = forest.depth
    idx, hist, lo, hi, nmask = sc.idx, sc.hist, sc.lo, sc.hi, sc.nmask
    S, mu, out_i, out_f = b.S, b.mu, b.out_i, b.out_f
    ell, nb, w_new, cnt, v, c, nc, mid = propose_split(rng, t, data, min_leaf, forest, sc)
    if ell < 0:
        return -1
    group_sums(idx, 0, mid, g, h, S, 0)
    group_sums(idx, mid, cnt, g, h, S, 1)
    wL, wR = children_masks(data, idx, mid, cnt, min_leaf, sc)
    d = depth[t, ell]
    draw_at(rng, S[0], S[1], 0, prec0, w, mu, 0)
    draw_at(rng, S[0], S[1], 1, prec0, w, mu, 1)
    logr = (grow_tree_logr(d, nb, w_new, move_cp[0], move_cp[1] - move_cp[0], alpha, beta)
            + children_logr(d, wL, wR, alpha, beta)
            + prior_at(mu, 0, prec0) + prior_at(mu, 1, prec0) - prior_at(value[:, t], ell, prec0)
            - q_at(mu, 0, S[0], S[1], 0, prec0, w) - q_at(mu, 1, S[0], S[1], 1, prec0, w))
    out_i[0] = ell
    out_i[1] = v
    out_i[2] = c
    out_i[3] = nc
    out_i[4] = cnt
    out_i[5] = mid
    out_f[0] = logr
    out_f[1] = wL
    out_f[2] = wR
    return 1


@numba.njit(cache=True)
def grow_commit(t, forest, value, idx, nmask, b):
    """Carry out the grow that :func:`grow_propose` described in the :class:`RowBuffers`
    ``b`` (its ``out_i``, ``mu``, ``out_f``)."""
    mu, out_i, out_f = b.mu, b.out_i, b.out_f
    ell, v, c, nc, cnt, mid = out_i[0], out_i[1], out_i[2], out_i[3], out_i[4], out_i[5]
    kl, kr = split_leaf(t, ell, v, c, nc, out_f[1], out_f[2], forest, nmask, idx, mid, cnt)
    for j in range(value.shape[0]):
        value[j, t, kl] = mu[j, 0]
        value[j, t, kr] = mu[j, 1]


@numba.njit(cache=True)
def two_leaf_rows(t, kl, kr, leaf_of_row, idx):
    """The rows of leaves kl and kr of tree t into ``idx``, kl's first, each in increasing
    order; returns (cnt, mid)."""
    n = leaf_of_row.shape[1]
    cnt = 0
    for i in range(n):
        idx[cnt] = i
        cnt += leaf_of_row[t, i] == kl
    mid = cnt
    for i in range(n):
        # a branch here: written always, the slot after the last row of kr would be idx[n]
        # when the rows of kl come after it
        if leaf_of_row[t, i] == kr:
            idx[cnt] = i
            cnt += 1
    return cnt, mid


@numba.njit(cache=True)
def prune_propose(rng, t, rules, w, move_cp, forest, value, g, h, idx, b):
    """Propose to merge two sibling leaves of tree t (the pair uniformly among the prunable
    ones), the merged leaf's value vector from its q into ``mu[:, 0]``: the reverse of
    :func:`grow_propose`.

    Returns -1 when no node is prunable, else 1.  Fills ``idx[:cnt]`` with the rows of the
    two leaves (the left one's first), ``out_i = (node, cnt, mid)`` and ``out_f = (log
    ratio,)``; the log ratio lacks the log-likelihood difference and the reverse proposal
    densities of the two leaves' values.  ``b`` the :class:`RowBuffers` (its ``S``, ``mu``,
    ``out_i``, ``out_f``)."""
    _, alpha, beta, prec0 = rules
    S, mu, out_i, out_f = b.S, b.mu, b.out_i, b.out_f
    node, kl, kr, n_prunable, b_new = pick_prune(rng, t, forest)
    if node < 0:
        return -1
    cnt, mid = two_leaf_rows(t, kl, kr, forest.leaf_of_row, idx)
    group_sums(idx, 0, cnt, g, h, S, 0)
    draw_at(rng, S[0], S[1], 0, prec0, w, mu, 0)
    struct = prune_tree_logr(t, node, kl, kr, n_prunable, b_new, move_cp[0],
                             move_cp[1] - move_cp[0], alpha, beta, forest)
    vt = value[:, t]
    out_i[0] = node
    out_i[1] = cnt
    out_i[2] = mid
    out_f[0] = (-struct + prior_at(mu, 0, prec0) - prior_at(vt, kl, prec0)
                - prior_at(vt, kr, prec0) - q_at(mu, 0, S[0], S[1], 0, prec0, w))
    return 1


@numba.njit(cache=True)
def prune_commit(t, forest, value, idx, mu, out_i):
    """Carry out the prune that :func:`prune_propose` described (``forest`` a
    ``ForestArrays``)."""
    node, cnt = out_i[0], out_i[1]
    kl = forest.left[t, node]
    kr = forest.right[t, node]
    leaf_of_row = forest.leaf_of_row
    for q in range(cnt):
        leaf_of_row[t, idx[q]] = node
    for j in range(value.shape[0]):
        value[j, t, node] = mu[j, 0]
    merge_children(t, node, kl, kr, forest)


@numba.njit(cache=True)
def leaf_proposals(rng, t, forest, value, G, H, prec0, w, nV, f_cur, f_prop):
    """Draw a value vector from its q (sums ``G``, ``H`` of the current state,
    :func:`leaf_gh`) for every leaf of tree t into ``nV`` and write the term with tree t's
    leaves replaced by them into ``f_prop`` (shape (J, n))."""
    var, n_nodes, leaf_of_row = forest.var, forest.n_nodes, forest.leaf_of_row
    for k in range(n_nodes[t]):
        if var[t, k] == LEAF:
            draw_at(rng, G, H, k, prec0, w, nV, k)
    lr = leaf_of_row[t]
    for j in range(value.shape[0]):
        vj, nj, fc, fp = value[j, t], nV[j], f_cur[j], f_prop[j]
        for i in range(lr.shape[0]):
            k = lr[i]
            fp[i] = fc[i] - vj[k] + nj[k]


@numba.njit(cache=True)
def _leaf_accept(rng, t, var, nk, value, prec0, w, b):
    """The Metropolis-Hastings decisions of tree t's leaves, in node order: proposal
    ``nV[:, k]`` from ``q`` built with ``G``, ``H`` (the current state), reverse ``q`` with
    ``Gp = Ga``, ``Hp = Ha`` (the proposed state), log-likelihood difference ``dll[k]``, all
    the :class:`RowBuffers` ``b``'s; an accepted leaf takes its value vector and ``keep[k] =
    1``.  Returns (accepted, proposed)."""
    G, H, nV, Gp, Hp, dll, keep = b.G, b.H, b.nV, b.Ga, b.Ha, b.dll, b.keep
    acc = 0
    tot = 0
    vt = value[:, t]
    for k in range(nk):
        if var[t, k] != LEAF:
            continue
        tot += 1
        logr = (dll[k] + prior_at(nV, k, prec0) - prior_at(vt, k, prec0)
                + q_at(vt, k, Gp, Hp, k, prec0, w) - q_at(nV, k, G, H, k, prec0, w))
        u = rng.random()
        if logr == logr and (logr >= 0.0 or u < math.exp(logr)):
            for j in range(vt.shape[0]):
                vt[j, k] = nV[j, k]
            keep[k] = 1
            acc += 1
    return acc, tot


@numba.njit(cache=True)
def leaf_decisions(rng, t, forest, value, prec0, w, ll_cur, ll_prop, gc_prop, h_prop, b):
    """Metropolis-Hastings decision for every leaf of tree t on the values proposed by
    :func:`leaf_proposals`: ``dll`` gets the leaf's log-likelihood difference, ``Gp``, ``Hp``
    the sums that build the reverse proposal at the proposed state, and ``keep[k]`` is 1 for
    an accepted leaf (its value vector is then replaced).  Returns (accepted, proposed).  The
    sums ``G``, ``H``, proposals ``nV`` and buffers ``Gp = b.Ga``, ``Hp = b.Ha``, ``dll``,
    ``keep`` are the :class:`RowBuffers` ``b``'s."""
    var, n_nodes, leaf_of_row = forest.var, forest.n_nodes, forest.leaf_of_row
    Gp, Hp, dll, keep = b.Ga, b.Ha, b.dll, b.keep
    nk = n_nodes[t]
    J = gc_prop.shape[0]
    for k in range(nk):
        dll[k] = 0.0
        keep[k] = 0
        for j in range(J):
            Gp[j, k] = 0.0
            Hp[j, k] = 0.0
    n = leaf_of_row.shape[1]
    for i in range(n):
        k = leaf_of_row[t, i]
        dll[k] += ll_prop[i] - ll_cur[i]
        for j in range(J):
            Gp[j, k] += gc_prop[j, i]
            Hp[j, k] += h_prop[j, i]
    return _leaf_accept(rng, t, var, nk, value, prec0, w, b)


@numba.njit(cache=True)
def _evaluate(rows_fn, pre, rows, cnt, logr_rest, st, b):
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


@numba.njit(cache=True)
def _keep_rows(rows, cnt, st, b):
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
def _reset_rows(rows, cnt, st, b):
    for j in range(st.f.shape[0]):
        fp, sf = b.f_prop[j], st.f[j]
        for q in range(cnt):
            fp[rows[q]] = sf[rows[q]]


@numba.njit(cache=True)
def general_sweep(rng, lik, data, rules, move_cp, forest, value, sc, st, b, tally, sweeps):
    """``sweeps`` backfitting sweeps (:func:`general_one_sweep`) in one call, each from the
    state the last one left in ``st`` (the rows' values, log-likelihoods and derivatives, kept
    current move by move), against the same ``lik.pre``; ``tally`` counts over all of them.  The forest needs room for two new nodes a tree per sweep.  One sweep is the
    same call with the same random numbers; k sweeps match k calls up to the rounding of the
    rows' values (kept move by move here, summed tree by tree between calls)."""
    for _ in range(sweeps):
        general_one_sweep(rng, lik, data, rules, move_cp, forest, value, sc, st, b, tally)


@numba.njit(cache=True)
def general_one_sweep(rng, lik, data, rules, move_cp, forest, value, sc, st, b, tally):
    """One backfitting sweep of the general tree step (docs/math.md section 9) over all trees:
    for tree t a reversible-jump grow, prune, change or swap whose new leaves' values come
    from Newton proposals, accepted with the exact log-likelihood, then a
    Metropolis-Hastings update of each of its leaf values.  No Python runs between trees.

    The trees may carry J outputs that share their structure: every leaf holds a vector of J
    values, proposed output by output (the proposal is the product of the J outputs' Newton
    proposals, each from the curvature in its own output) and accepted together with the
    joint log-likelihood of the rows.  J = 1 is one output.

    Parameters
    ----------
    lik : RowLikelihood
        ``rows_fn``, ``pre`` and ``defensive``, below.
    rows_fn : C callback ``void(double *f, int64 *rows, int64 r, double *pre, int64 n_pre,
    double *out)``
        Reads ``f`` (J, r) row-major, the term's values at the rows ``rows``, and writes into
        ``out`` (1 + 2 J, r), row-major, the log-likelihood of those rows, then the first and
        then the negated second derivatives in each output's own value at each row, every
        other input of the likelihood read from ``pre`` (computed once per sweep by the
        caller).  A move costs work proportional to the rows it changes.  Every model's
        callbacks have this one type, so this kernel is compiled once and cached.
    pre : ndarray of shape (n_pre,)
        The likelihood's inputs that do not depend on the term, packed as float64.
    data, rules, forest, sc :
        :class:`SweepData`, :class:`TreeRules`, :class:`ForestArrays`, :class:`SweepScratch`.
    move_cp : ndarray of shape (4,)
        Cumulative probabilities of grow, prune, change, swap.
    value : ndarray of shape (J, m, K)
        The leaf values (for J = 1, ``forest.value[None]``).
    st : RowState
        The current state, updated in place (its ``ll``, ``g``, ``h`` cleaned by
        :func:`clean_rows`).
    b : RowBuffers
        Buffers (:func:`new_row_buffers`).
    tally : ndarray of shape (2, 5), int64
        Counts proposed (row 0) and accepted (row 1) per move type and for the leaf updates
        (column 4), incremented.
    defensive : float
        The leaf prior's weight in every leaf proposal (module doc): :data:`DEFENSIVE`, or 0
        where the Newton step is the exact conditional.
    """
    f = forest
    rows_fn, pre, w = lik.rows_fn, lik.pre, lik.defensive
    J, n = st.f.shape
    m = value.shape[1]
    prec0 = rules.prec0
    for j in range(J):
        for i in range(n):
            b.f_prop[j, i] = st.f[j, i]
    for t in range(m):
        lr = f.leaf_of_row[t]
        for j in range(J):  # tree t's values, the rest of the term and the proposals' gc
            vj, fm, gcj, sf, sg, sh = value[j, t], b.f_minus[j], b.gc[j], st.f[j], st.g[j], st.h[j]
            for i in range(n):  # output by output: contiguous rows
                tv = vj[lr[i]]
                fm[i] = sf[i] - tv
                gcj[i] = sg[i] + sh[i] * tv
        ok = False
        u = rng.random()
        move = draw_move(u, move_cp)
        cnt = 0
        vt = value[:, t]
        if move == GROW:
            s = grow_propose(rng, t, data, rules, w, move_cp, f, value, b.gc, st.h, sc, b)
            if s == 1:
                ell, cnt, mid = b.out_i[0], b.out_i[4], b.out_i[5]
                for q in range(cnt):
                    i = sc.idx[q]
                    b.rows[q] = i
                    side = 0 if q < mid else 1
                    for j in range(J):
                        b.f_prop[j, i] = b.f_minus[j, i] + b.mu[j, side]
                logr = _evaluate(rows_fn, pre, b.rows, cnt, b.out_f[0], st, b)
                logr += group_log_q(b.rows, 0, cnt, b.gc_p, b.h_p, vt, ell, prec0, w, b.S)
                ok = decide(rng, logr)
                if ok:
                    _keep_rows(b.rows, cnt, st, b)
                    grow_commit(t, f, value, sc.idx, sc.nmask, b)
        elif move == PRUNE:
            s = prune_propose(rng, t, rules, w, move_cp, f, value, b.gc, st.h, sc.idx, b)
            if s == 1:
                node, cnt, mid = b.out_i[0], b.out_i[1], b.out_i[2]
                for q in range(cnt):
                    i = sc.idx[q]
                    b.rows[q] = i
                    for j in range(J):
                        b.f_prop[j, i] = b.f_minus[j, i] + b.mu[j, 0]
                logr = _evaluate(rows_fn, pre, b.rows, cnt, b.out_f[0], st, b)
                logr += (group_log_q(b.rows, 0, mid, b.gc_p, b.h_p, vt, f.left[t, node],
                                     prec0, w, b.S)
                         + group_log_q(b.rows, mid, cnt, b.gc_p, b.h_p, vt, f.right[t, node],
                                       prec0, w, b.S))
                ok = decide(rng, logr)
                if ok:
                    _keep_rows(b.rows, cnt, st, b)
                    prune_commit(t, f, value, sc.idx, b.mu, b.out_i)
        else:
            s = restructure_propose(rng, move == SWAP, t, data, rules, w, f, value, b.gc, st.h, sc,
                                    b)
            if s == 1:
                root, cnt = b.out_i[0], b.out_i[1]
                for q in range(cnt):
                    b.rows[q] = sc.idx[q]
                restructure_values(t, root, f, value, sc, b, st.f, b.f_prop)
                logr = _evaluate(rows_fn, pre, b.rows, cnt, b.out_f[0], st, b)
                logr += reverse_old_leaves(t, root, f, value, sc, cnt, b.gc_p, b.h_p, prec0, w,
                                           b)
                ok = decide(rng, logr)
                if ok:
                    _keep_rows(b.rows, cnt, st, b)
                    restructure_commit(t, root, f, sc, value, b)
                else:
                    restructure_revert(t, f.var, f.cut, f.left, f.right, b.out_i)
        if s >= 0:
            tally[0, move] += 1
            tally[1, move] += ok
        if cnt > 0:
            _reset_rows(b.rows, cnt, st, b)
        # the leaves, one Metropolis-Hastings update each, from the current state
        a, tot = _leaf_update(rng, t, lik, f, value, prec0, st, b)
        tally[1, 4] += a
        tally[0, 4] += tot


@numba.njit(cache=True)
def _leaf_update(rng, t, lik, forest, value, prec0, st, b):
    """The leaf updates of tree t in :func:`general_one_sweep`: :func:`leaf_gh`,
    :func:`leaf_proposals`, the likelihood at all rows and :func:`leaf_decisions` with their
    row passes fused (the same sums in the same order, the same random numbers).  Returns
    (accepted, proposed)."""
    rows_fn, pre, w = lik.rows_fn, lik.pre, lik.defensive
    var, n_nodes, leaf_of_row = forest.var, forest.n_nodes, forest.leaf_of_row
    J, n = st.f.shape
    nk = n_nodes[t]
    G, H, nV = b.G, b.H, b.nV
    lr = leaf_of_row[t]
    # every pass over the rows runs output by output, over contiguous rows
    for j in range(J):
        Gj, Hj, vj, sg, sh = G[j], H[j], value[j, t], st.g[j], st.h[j]
        for k in range(nk):
            Gj[k] = 0.0
            Hj[k] = 0.0
        for i in range(n):
            k = lr[i]
            Gj[k] += sg[i] + sh[i] * vj[k]
            Hj[k] += sh[i]
    leaf_proposals(rng, t, forest, value, G, H, prec0, w, nV, st.f, b.f_prop)
    rows_fn(b.f_prop.ctypes, b.all_rows.ctypes, n, pre.ctypes, pre.shape[0], b.out.ctypes)
    Gp, Hp, keep, dll = b.Ga, b.Ha, b.keep, b.dll
    for k in range(nk):
        dll[k] = 0.0
        keep[k] = 0
    out = b.out
    for i in range(n):
        li = clean_ll(out[i])
        b.ll_p[i] = li
        dll[lr[i]] += li - st.ll[i]
    for j in range(J):
        Gj, Hj, gp, hp, fp, fm = Gp[j], Hp[j], b.g_p[j], b.h_p[j], b.f_prop[j], b.f_minus[j]
        for k in range(nk):
            Gj[k] = 0.0
            Hj[k] = 0.0
        og = (1 + j) * n
        oh = (1 + J + j) * n
        for i in range(n):
            gi, hi = clean_gh(out[og + i], out[oh + i])
            gp[i] = gi
            hp[i] = hi
            k = lr[i]
            Gj[k] += gi + hi * (fp[i] - fm[i])
            Hj[k] += hi
    acc, tot = _leaf_accept(rng, t, var, nk, value, prec0, w, b)
    for i in range(n):
        if keep[lr[i]] == 1:
            st.ll[i] = b.ll_p[i]
    for j in range(J):
        sf, sg, sh, fp, gp, hp = st.f[j], st.g[j], st.h[j], b.f_prop[j], b.g_p[j], b.h_p[j]
        for i in range(n):
            if keep[lr[i]] == 1:
                sf[i] = fp[i]
                sg[i] = gp[i]
                sh[i] = hp[i]
            else:
                fp[i] = sf[i]
    return acc, tot
