"""The general tree step's sweep as a Python loop over the trees (docs/math.md section 9).

:meth:`pymc_trees.bart.samplers.sampler.ForestSampler.general_sweep` runs this loop when the likelihood
has no row graph compiled for the kernel (``compiled=None``; ``CGMTreeStep.python_sweep``
forces it): the same moves and random numbers as the compiled
:func:`pymc_trees.bart.kernels.general.general_sweep`, with the likelihood called through
``loglik`` (PyTensor) once per proposal.  Plain Python around the kernels; knows nothing of
PyMC.
"""

from __future__ import annotations

import numpy as np

from pymc_trees.bart.kernels import general as gk
from pymc_trees.bart.kernels.bundles import SweepData, TreeRules
from pymc_trees.bart.kernels.moves import GROW, MOVES, PRUNE, SWAP, draw_move

__all__ = ["general_python_sweep", "row_derivatives", "check_start", "acceptance_rates",
           "MOVES"]



def row_derivatives(loglik, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``loglik(f, derivatives=True)`` at ``f`` of shape (J, n) (for J = 1, ``loglik`` takes
    and returns rows of shape (n,)) as float64 arrays, ``ll`` (n,), ``g``, ``h`` (J, n): NaN
    log-likelihoods become -inf
    (zero density); non-finite first derivatives become 0.  The curvature h that shapes the
    proposals is ``-d2 l_i / d eta_i^2`` where that is finite and positive; elsewhere (a
    piecewise-linear log density such as the asymmetric Laplace, or a Student-t row far in
    the tail) it is ``g_i ** 2``, the row's outer-product estimate of the Fisher information,
    so that a leaf's proposal still has a scale set by its rows.  Any rule that is a fixed
    function of the state keeps the moves exact; this one only affects their acceptance."""
    J, n = f.shape
    one = J == 1 and np.ndim(f) == 2
    ll, g, h = loglik(f[0] if one else f, derivatives=True)
    ll = np.array(ll, dtype=np.float64)
    g, h = (np.array(x, dtype=np.float64).reshape(J, n) for x in (g, h))
    gk.clean_rows(ll, g, h)
    return ll, g, h


# the rate of a move never proposed: NaN, with the bits of numpy's 0 / 0 (the sign bit set on
# x86), which the stats stored before had
with np.errstate(invalid="ignore"):
    _NONE_PROPOSED = float(np.float64(0.0) / np.float64(0.0))


def acceptance_rates(accepted: np.ndarray, proposed: np.ndarray, names) -> dict[str, float]:
    """Acceptance rate per move type (NaN when never proposed)."""
    # Python's int division is numpy's to the bit (both convert exactly and round once);
    # a few microseconds where numpy's division under errstate costs about 25
    acc, prop = accepted.tolist(), proposed.tolist()
    return {f"accept_{name}": acc[i] / prop[i] if prop[i] else _NONE_PROPOSED
            for i, name in enumerate(names)}


def nanmean(x) -> float:
    """The mean of the non-NaN values of a short sequence (NaN if there are none): for fewer
    than eight values numpy's mean adds them in order too, so the two agree to the bit."""
    vals = [float(v) for v in x if v == v]
    return sum(vals) / len(vals) if vals else np.nan


def check_start(ll: np.ndarray) -> None:
    """A general sweep needs a state of positive density at every row."""
    if not np.all(np.isfinite(ll)):
        bad = int(np.flatnonzero(~np.isfinite(ll))[0])
        raise ValueError(f"The log-likelihood of row {bad} is {ll[bad]} at the current "
                         "value of the term; the tree moves need a state of positive "
                         "density (check the initial point and the observed data).")


def general_python_sweep(sampler, rng: np.random.Generator, loglik, move_cumprobs: np.ndarray,
                         defensive: float) -> dict[str, float]:
    """One sweep of the general tree step over ``sampler``'s forest (a
    :class:`~pymc_trees.bart.samplers.sampler.ForestSampler` or a subclass), as
    :meth:`~pymc_trees.bart.samplers.sampler.ForestSampler.general_sweep` documents it (its
    parameters and return value)."""
    w = float(defensive)
    f = sampler._forest_with_room()
    value = sampler.leaf_values()
    J = value.shape[0]
    n, m = sampler.n, f.m
    b = gk.new_row_buffers(n, f.capacity, J)
    sc = sampler._scratch
    idx, nmask = sc.idx, sc.nmask
    S, mu, out_i, out_f = b.S, b.mu, b.out_i, b.out_f
    prec0 = sampler.prec0
    pr = sampler.prior
    cp = np.asarray(move_cumprobs, dtype=np.float64)
    f_cur = sampler.values().reshape(J, n)
    ll_cur, g_cur, h_cur = row_derivatives(loglik, f_cur)
    check_start(ll_cur)
    f_prop = f_cur.copy()
    tv = np.empty((J, n))
    proposed = np.zeros(5, np.int64)
    accepted = np.zeros(5, np.int64)
    data = SweepData(sampler.Xb, sampler._XbT, sampler.ncuts, sampler.iscat, sampler.split_prior)
    # the prior's numbers as given (their types decide numba's powers, hence the draws)
    rules = TreeRules(pr.min_leaf, pr.alpha, pr.beta, prec0)
    fa = f.arrays()

    def evaluate(rows, logr_rest, reverse):
        """Finish the log ratio of a move that changes the term at ``rows`` to
        ``f_prop``; on acceptance the state's row arrays take the proposal's."""
        ll, g, h = row_derivatives(loglik, f_prop)
        gc = g + h * (f_prop - f_minus)
        logr = (logr_rest + float(ll[rows].sum() - ll_cur[rows].sum())
                + reverse(gc, h))
        u = rng.random()
        if logr == logr and (logr >= 0.0 or u < np.exp(logr)):
            f_cur[:, rows] = f_prop[:, rows]
            ll_cur[rows] = ll[rows]
            g_cur[:, rows] = g[:, rows]
            h_cur[:, rows] = h[:, rows]
            return True
        return False

    for t in range(m):
        vt = value[:, t]
        gk.tree_values(t, value, f.leaf_of_row, tv)
        f_minus = f_cur - tv
        gc = g_cur + h_cur * tv
        ok = False
        u = rng.random()
        move = draw_move(u, cp)
        if move == GROW:
            st = gk.grow_propose(rng, t, data, rules, w, cp, fa, value, gc, h_cur, sc, b)
            if st == 1:
                ell, cnt, mid = int(out_i[0]), int(out_i[4]), int(out_i[5])
                rows = idx[:cnt].astype(np.int64)
                f_prop[:, rows[:mid]] = f_minus[:, rows[:mid]] + mu[:, :1]
                f_prop[:, rows[mid:]] = f_minus[:, rows[mid:]] + mu[:, 1:]
                ok = evaluate(rows, out_f[0], lambda gcp, hp: gk.group_log_q(
                    rows, 0, cnt, gcp, hp, vt, ell, prec0, w, S))
                if ok:
                    gk.grow_commit(t, fa, value, idx, nmask, b)
                f_prop[:, rows] = f_cur[:, rows]
        elif move == PRUNE:
            st = gk.prune_propose(rng, t, rules, w, cp, fa, value, gc, h_cur, idx, b)
            if st == 1:
                node, cnt, mid = int(out_i[0]), int(out_i[1]), int(out_i[2])
                rows = idx[:cnt].astype(np.int64)
                f_prop[:, rows] = f_minus[:, rows] + mu[:, :1]
                kl, kr = int(f.left[t, node]), int(f.right[t, node])
                ok = evaluate(rows, out_f[0], lambda gcp, hp: (
                    gk.group_log_q(rows, 0, mid, gcp, hp, vt, kl, prec0, w, S)
                    + gk.group_log_q(rows, mid, cnt, gcp, hp, vt, kr, prec0, w, S)))
                if ok:
                    gk.prune_commit(t, fa, value, idx, mu, out_i)
                f_prop[:, rows] = f_cur[:, rows]
        else:
            st = gk.restructure_propose(rng, move == SWAP, t, data, rules, w, fa, value, gc,
                                        h_cur, sc, b)
            if st == 1:
                root, cnt = int(out_i[0]), int(out_i[1])
                rows = idx[:cnt].astype(np.int64)
                gk.restructure_values(t, root, fa, value, sc, b, f_cur, f_prop)
                ok = evaluate(rows, out_f[0], lambda gcp, hp: gk.reverse_old_leaves(
                    t, root, fa, value, sc, cnt, gcp, hp, prec0, w, b))
                if ok:
                    gk.restructure_commit(t, root, fa, sc, value, b)
                else:
                    gk.restructure_revert(t, f.var, f.cut, f.left, f.right, out_i)
                f_prop[:, rows] = f_cur[:, rows]
        if st >= 0:
            proposed[move] += 1
            accepted[move] += ok
        # the leaves, one Metropolis-Hastings update each, from the current state
        gk.tree_values(t, value, f.leaf_of_row, tv)
        np.multiply(h_cur, tv, out=gc)
        gc += g_cur
        gk.leaf_gh(t, f.leaf_of_row, f.n_nodes, gc, h_cur, b.G, b.H)
        gk.leaf_proposals(rng, t, fa, value, b.G, b.H, prec0, w, b.nV, f_cur, f_prop)
        ll, g, h = row_derivatives(loglik, f_prop)
        gcp = g + h * (f_prop - f_minus)
        a, tot = gk.leaf_decisions(rng, t, fa, value, prec0, w, ll_cur, ll, gcp, h, b)
        moved = b.keep[f.leaf_of_row[t]] == 1
        f_cur[:, moved] = f_prop[:, moved]
        ll_cur[moved] = ll[moved]
        g_cur[:, moved] = g[:, moved]
        h_cur[:, moved] = h[:, moved]
        f_prop[:] = f_cur
        accepted[4] += a
        proposed[4] += tot
    return acceptance_rates(accepted, proposed, (*MOVES, "leaf"))


class GeneralSweeps:
    """The general step's sweeps of a forest sampler (mixed into
    :class:`~pymc_trees.bart.samplers.sampler.ForestSampler`, whose forest, rows and prior
    they read): in the compiled kernel where the likelihood's row graph compiled, else the
    Python loop above."""

    def general_sweep(self, rng: np.random.Generator, loglik, move_cumprobs: np.ndarray,
                      compiled: tuple | None = None,
                      defensive: float = gk.DEFENSIVE, sweeps: int = 1) -> dict[str, float]:
        """One backfitting sweep for a likelihood without conjugacy (docs/math.md section 9):
        for every tree in turn a reversible-jump grow, prune, change or swap whose new leaf
        values come from Newton proposals (:mod:`pymc_trees.bart.kernels.general`), accepted
        with the
        exact log-likelihood, then a Metropolis-Hastings update of each of its leaf values.

        Parameters
        ----------
        loglik : callable
            ``loglik(f, derivatives=True)`` with ``f`` of shape (n,), the term's value at the
            training rows (offset included), returns ``(l, g, h)``, each of shape (n,): every
            row's log-likelihood, its first derivative and its negated second derivative in
            the row's own ``f_i``.  For J outputs that share the trees
            (:class:`~pymc_trees.bart.samplers.shared_sampler.SharedOutputSampler`) ``f``, ``g`` and
            ``h`` have shape (J, n) (the derivatives in each output's own value).
            Non-finite derivatives count as 0 and negative ``h`` as 0
            (they only shape the proposals); a NaN log-likelihood counts as -inf, which
            rejects the proposal.
        move_cumprobs : ndarray of shape (4,)
            Cumulative probabilities of grow, prune, change, swap.
        compiled : tuple, optional
            ``(rows_fn, pre)``, the likelihood compiled for the sweep kernel
            (:meth:`pymc_trees.bart.likelihood.structure.GeneralLikelihood.compiled`): the whole sweep
            then runs in :func:`pymc_trees.bart.kernels.general.general_sweep`, with the same
            moves and random numbers as the Python loop below, which runs otherwise.
        defensive : float
            The leaf prior's weight in every leaf proposal (a defensive mixture, so that a
            Newton step out of the likelihood's support cannot hold the chain at its start;
            :mod:`pymc_trees.bart.kernels.general`); 0 where the Newton step is exact.
        sweeps : int, default 1
            Sweeps in a row against the same likelihood (the rest of the model held), in one
            kernel call when ``compiled``.

        Returns
        -------
        dict
            Acceptance rate of every move type (NaN when never proposed) and of the leaf
            updates (``accept_leaf``), over all the sweeps (the mean of the sweeps' rates in
            the Python loop).
        """
        if compiled is not None:
            return self._general_kernel_sweep(rng, compiled, move_cumprobs, defensive, sweeps)
        runs = [general_python_sweep(self, rng, loglik, move_cumprobs, defensive)
                for _ in range(int(sweeps))]
        if len(runs) == 1:
            return runs[0]
        return {k: nanmean([r[k] for r in runs]) for k in runs[0]}

    def leaf_values(self) -> np.ndarray:
        """The leaf values as the general sweep reads them, shape (J, m, K): here J = 1, a
        view of the forest's values."""
        return self.forest.value[None]

    def _general_kernel_sweep(self, rng: np.random.Generator, compiled: tuple,
                              move_cumprobs: np.ndarray, defensive: float,
                              sweeps: int = 1) -> dict[str, float]:
        rows_fn, pre = compiled
        f = self._forest_with_room(sweeps)
        value = self.leaf_values()
        J, n = value.shape[0], self.n
        bufs = getattr(self, "_row_bufs", None)
        if bufs is None or bufs.Ga.shape != (J, f.capacity) or bufs.ll_p.size != n:
            bufs = self._row_bufs = gk.new_row_buffers(n, f.capacity, J)
        fv = np.ascontiguousarray(self.values().reshape(J, n), dtype=np.float64)
        ll, g, h = gk.call_all(rows_fn, fv, pre)
        gk.clean_rows(ll, g, h)
        check_start(ll)
        st = gk.RowState(fv, ll, g, h)
        pr = self.prior
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        rules = TreeRules(int(pr.min_leaf), float(pr.alpha), float(pr.beta), float(self.prec0))
        tally = np.zeros((2, 5), np.int64)
        gk.general_sweep(rng, gk.RowLikelihood(rows_fn, pre, float(defensive)), data, rules,
                         np.asarray(move_cumprobs, dtype=np.float64), f.arrays(), value,
                         self._scratch, st, bufs, tally, int(sweeps))
        return acceptance_rates(tally[1], tally[0], (*MOVES, "leaf"))
