"""Orchestration of a sum of trees with linear leaves (``BARTTree(..., response="linear")``):
the :class:`ForestSampler` of constant leaves, with every leaf's slope kept beside its value
and the sweep of :mod:`pymc_trees.bart.kernels.linear`.  Knows nothing of PyMC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_trees.bart.kernels.bundles import SweepData, TreeRules, read_only_rows
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.kernels.linear import (LinearRows, linear_leaf_stats, linear_level_shift_sums,
                                            linear_prior_leaves, linear_values,
                                            linear_values_as_packed,
                                            pack_linear_leaves, standardize_columns)
from pymc_trees.bart.kernels import general as gk
from pymc_trees.bart.kernels.general_linear import general_linear_sweep, new_linear_buffers
from pymc_trees.bart.kernels.linear_sweep import linear_sweep, new_pass_cache
from pymc_trees.bart.samplers.general_loop import MOVES, acceptance_rates, check_start
from pymc_trees.bart.samplers.sampler import EXACT_VALUES_EVERY, ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.core.packed import center_bits

__all__ = ["LinearForestSampler", "RESPONSES"]

RESPONSES = ("constant", "linear", "mix")


@dataclass
class LinearForestSampler(ForestSampler):
    """A :class:`ForestSampler` whose leaves hold ``b0 + b1 z_j(x)`` with ``j`` the column of
    the split above the leaf (:mod:`pymc_trees.bart.kernels.linear`); with ``response="mix"``
    each tree is linear or constant (:attr:`lin`), its kind drawn with its moves.

    ``forest.value`` holds every leaf's ``b0`` and :attr:`slope` (shape (m, K)) its ``b1`` on
    the standardised scale of its column (``Z``, from the training rows' mean ``center`` and
    sd ``scale``); packed forests carry the slope per unit of the column and the centre.
    Sampled by grow, prune and change moves (:meth:`cgm_sweep`, and :meth:`general_sweep`
    for other likelihoods, linear trees only); the term's plan (:mod:`pymc_trees.bart.term.plan`)
    refuses Particle Gibbs, whose sweep (:meth:`ForestSampler.pg_sweep`) holds constant
    leaves, before any sweep runs.
    """

    _ROW_ATTRS = ForestSampler._ROW_ATTRS + ("_lin_bufs", "_columns")

    def __post_init__(self):
        n, p = np.shape(self.X)
        cat = (np.zeros(p, bool) if self.categorical is None
               else np.asarray(self.categorical, bool))
        self.Z, self.center, self.scale = standardize_columns(self.X, cat)
        super().__post_init__()
        fmap = np.asarray(self.layout.fmap, np.int64)
        # the slope's column under a split on each sampler feature (none: categorical)
        self.regcol = np.where(cat[fmap], -1, fmap).astype(np.int64)

    def reset(self) -> None:
        super().reset()
        self.slope = np.zeros_like(self.forest.value)
        self._sums = np.zeros((5, self.forest.capacity))
        # the trees' kinds: all linear, or with "mix" all constant at the start (the warm
        # start's trees are constant) and then drawn after every move
        self.mix = self.prior.response == "mix"
        self.lin = np.full(self.prior.m, 0 if self.mix else 1, np.uint8)

    def __getstate__(self) -> dict:
        """As :meth:`ForestSampler.__getstate__`, but with X and without ``Z`` (n x p floats
        each), which is standardised again from X on arrival."""
        state = super().__getstate__()
        state["X"] = self.X
        state.pop("Z", None)
        return state

    def __setstate__(self, state: dict) -> None:
        cat = (np.zeros(np.shape(state["X"])[1], bool) if state["categorical"] is None
               else np.asarray(state["categorical"], bool))
        state["Z"] = standardize_columns(state["X"], cat)[0]
        super().__setstate__(state)

    def forest_state(self):
        """The compact forest with the leaves' slopes and the trees' kinds."""
        self._sync()
        return (super().forest_state(), self.slope.copy(), self.lin.copy())

    def restore_forest(self, state) -> None:
        """Take a state of :meth:`forest_state`."""
        forest, slope, lin = state
        super().restore_forest(forest)
        self.slope, self.lin = slope.copy(), lin.copy()
        self._sums = np.zeros((5, self.forest.capacity))

    def _sync(self) -> None:
        """The slopes and sums follow the forest's capacity (it grows in place)."""
        K = self.forest.capacity
        if self.slope.shape[1] != K:
            slope = np.zeros_like(self.forest.value)
            slope[:, :self.slope.shape[1]] = self.slope
            self.slope = slope
        if self._sums.shape[1] != K:
            self._sums = np.zeros((5, K))
        cache = getattr(self, "_pass_cache", None)
        m = self.forest.var.shape[0]
        if cache is None or cache[0].shape != (m, 3, K):
            # the plain pass's counts and moments of the trees, keyed by each tree's nodes
            # (kernels/linear_sweep.linear_pass); a tree changed anywhere is summed afresh
            self._pass_cache = new_pass_cache(m, K)

    def _linear_values(self, offset: float, out: np.ndarray) -> None:
        f = self.ensure_rows()
        self._sync()
        linear_values(f.var, f.parent, f.n_nodes, f.value, self.slope, f.leaf_of_row,
                      self.regcol, self.lin, self.Z, float(offset), out)

    def values(self) -> np.ndarray:
        """The values at the training rows: with ``exact_values`` (a traced term) in the
        packed forest's arithmetic, which ``pmt.predict`` reproduces to the bit; otherwise
        the ones the last sweep left when the trees are still the same (:meth:`cgm_sweep`),
        else summed tree by tree."""
        self.ensure_rows()
        key = self._forest_key()
        out = None if self.exact_values else self._tree_sums.take_values(key, self.offset)
        if out is None and not self.exact_values and self._tree_sums.holds(key) == "sums":
            out = self._tree_sums.buf + self.offset  # rescaled leaves' sums, up to rounding
        if out is not None:
            self._remember_values(out, key)
            return out
        out = np.empty(self.n)
        if self.exact_values:
            f = self.ensure_rows()
            self._sync()
            linear_values_as_packed(f.var, f.parent, f.n_nodes, f.value, self.slope,
                                    f.leaf_of_row, self.regcol, self.lin,
                                    (self._raw_columns(), self.center, self.scale),
                                    float(self.offset), out)
        else:
            self._linear_values(self.offset, out)
        self._remember_values(out, key)
        return out

    def _raw_columns(self) -> np.ndarray:
        """X (n, q) in column order, which the exact values read a column at a time (a
        row-order X, read at a leaf's column row after row, took 1.8 ms against 1.1 for the
        README's model at 10,000 rows); made at the first exact values, released with the
        rows (n x q floats)."""
        cols = getattr(self, "_columns", None)
        if cols is None or cols.shape != np.shape(self.X):
            cols = self._columns = np.asfortranarray(self.X, dtype=np.float64)
        return cols

    def check_move_probs(self, move_probs: dict[str, float]) -> None:
        """Linear leaves have their own moves (grow and prune 0.3 each, change at a node whose
        children are leaves 0.4, no swap, in :mod:`~pymc_trees.bart.kernels.linear` and
        :mod:`~pymc_trees.bart.kernels.general_linear`): a user's ``move_probs`` would be
        ignored, so it is refused."""
        raise ValueError(
            f"move_probs={dict(move_probs)!r} does not apply to response="
            f"{self.prior.response!r}: linear leaves are sampled by grow and prune (0.3 each) "
            f"and change at a node whose children are leaves (0.4), without swap. Leave "
            f"move_probs out for this term, or use response='constant'; to set them for a "
            f"constant-leaf term of the same model, give its step alone "
            f"(pm.sample(step=[pmt.CGMTreeStep([f_const], move_probs=...)]) instead of "
            f"pm.sample(cgm_tree={{'move_probs': ...}}), which reaches every tree step).")

    def _scale_leaf_arrays(self, c: float) -> None:
        """Both coefficients of every leaf (a line's value is linear in them)."""
        self._sync()
        leaves = self.forest.var == LEAF
        self.forest.value[leaves] *= c
        self.slope[leaves] *= c

    def _forest_key(self) -> tuple:
        self._sync()
        return super()._forest_key() + (self.slope.tobytes(), self.lin.tobytes())

    def _load_tree_sums(self) -> None:
        if not self._tree_sums.take_sums(self._forest_key()):
            self._linear_values(0.0, self._tree_sums.buf)

    def cgm_sweep(self, rng: np.random.Generator, z: np.ndarray, omega: np.ndarray,
                  move_cumprobs: np.ndarray, sweeps: int = 1) -> dict[str, float]:
        """``sweeps`` sweeps of :func:`~pymc_trees.bart.kernels.linear_sweep.linear_sweep` (grow
        and prune 0.3 each, change at a node whose children are leaves 0.4;
        ``move_cumprobs`` is not used: a user's ``move_probs`` is refused by
        :meth:`check_move_probs`) against pseudo-data ``z`` with row precisions ``omega``;
        returns acceptance rates over all of them (NaN for swap)."""
        tally = np.zeros((2, 4), np.int64)
        z, omega = read_only_rows(z), read_only_rows(omega)
        sums = self._tree_sums
        for _ in range(int(sweeps)):
            f = self._forest_with_room()
            self._sync()
            self._load_tree_sums()
            data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
            rules = TreeRules(int(self.prior.min_leaf), float(self.prior.alpha),
                              float(self.prior.beta), float(self.prec0))
            linear_sweep(rng, data, rules, LinearRows(self.regcol, self.Z),
                         (self.lin, self.mix), (z, omega), sums.buf, f.arrays(), self.slope,
                         self._scratch, (self._sums, self._pass_cache), tally)
        # The sweep leaves the trees' sum as the pseudo-data minus its residual.  A term whose
        # values stay out of the trace (exact_values False) takes them from there, as the
        # constant sweep's do (a pass over m trees and n rows fewer an iteration), but every
        # EXACT_VALUES_EVERY-th sweep in a row sums the trees afresh (values()), so that the
        # rounding of the residual does not build up.
        if self.exact_values:
            # values() sums them in the packed forest's arithmetic; until then the sweep's
            # sums serve a learned scale's non-centred update (LearnedLeafScale.interweave)
            sums.hold_sums(self._forest_key())
            sums.inexact = 0
        elif sums.inexact + int(sweeps) >= EXACT_VALUES_EVERY:
            sums.forget()
            sums.inexact = 0
        else:
            sums.buf += self.offset
            sums.swept(self._forest_key(), self.offset)
            sums.inexact += int(sweeps)
        return acceptance_rates(tally[1], tally[0], MOVES)

    def general_sweep(self, rng: np.random.Generator, loglik, move_cumprobs: np.ndarray,
                      compiled: tuple | None = None, defensive: float | None = None,
                      sweeps: int = 1) -> dict[str, float]:
        """``sweeps`` sweeps (one by default) of the general tree step with linear leaves
        (:func:`~pymc_trees.bart.kernels.general_linear.general_linear_sweep`: grow and prune
        0.3 each, change at a node whose children are leaves 0.4; ``move_cumprobs`` and
        ``loglik`` are not used) with the likelihood ``compiled = (rows_fn, pre)``
        (:meth:`pymc_trees.bart.likelihood.general_likelihood.GeneralLikelihood.compiled`); returns acceptance
        rates (NaN for swap).  With ``response="mix"`` every tree's kind (linear or constant)
        is then proposed switched, its leaves' coefficients from their Newton proposals.  A
        likelihood whose row graph could not be compiled is refused.  Every leaf proposal is
        the defensive mixture with the kernel's weight ``DEFENSIVE`` (``defensive`` must be
        None or that value)."""
        if defensive is not None and defensive != gk.DEFENSIVE:
            raise ValueError(f"Linear leaves in the general step propose with the defensive "
                             f"weight {gk.DEFENSIVE} only; got defensive={defensive!r}.")
        if compiled is None:
            raise ValueError("Linear leaves with this likelihood run in the general step's "
                             "compiled kernel, and its row graph could not be compiled (the "
                             "likelihood's rows_reason says why); use response='constant'.")
        rows_fn, pre = compiled
        tally = np.zeros((2, 5), np.int64)
        n, pr = self.n, self.prior
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        rules = TreeRules(int(pr.min_leaf), float(pr.alpha), float(pr.beta), float(self.prec0))
        for _ in range(int(sweeps)):
            f = self._forest_with_room()
            self._sync()
            bufs = getattr(self, "_lin_bufs", None)
            if bufs is None or bufs.dll.size != f.capacity or bufs.f_prop.size != n:
                bufs = self._lin_bufs = new_linear_buffers(n, f.capacity)
            fv = np.ascontiguousarray(self.values(), dtype=np.float64)
            ll, g, h = gk.call_all(rows_fn, fv, pre)
            gk.clean_rows(ll, g[None], h[None])
            check_start(ll)
            general_linear_sweep(rng, gk.RowLikelihood(rows_fn, pre, 0.0), data, rules,
                                 LinearRows(self.regcol, self.Z), (self.lin, self.mix),
                                 f.arrays(), self.slope, self._scratch,
                                 gk.RowState(fv, ll, g, h), bufs, tally)
        return acceptance_rates(tally[1], tally[0], (*MOVES, "leaf"))

    def gfr_sweep(self, rng: np.random.Generator, z: np.ndarray,
                  omega: np.ndarray) -> dict[str, float]:
        """The warm start's grow-from-root sweep, on constant leaves: the slopes are set to 0
        first (any state is a valid start for the exact sweeps that follow)."""
        self._sync()
        self.slope[:] = 0.0
        self._tree_sums.forget()
        out = super().gfr_sweep(rng, z, omega)
        self._sync()
        self.slope[:] = 0.0
        return out

    def level_shift(self, rng: np.random.Generator, c: float, mu0: float, sd0: float,
                    k: float = 1.0) -> float:
        """:meth:`ForestSampler.level_shift` with every leaf's ``b0`` moved: a linear leaf's
        ``b0`` has prior precision twice the leaf precision, so with ``P`` and ``B`` from
        :func:`~pymc_trees.bart.kernels.linear.linear_level_shift_sums`,
        ``precision = 1/sd0^2 + k^2 P / (m^2 leaf_sd^2)`` and
        ``mean = ((mu0 - c)/sd0^2 + k B / (m leaf_sd^2)) / precision``."""
        f = self.forest
        m = f.m
        P, B = linear_level_shift_sums(f.var, f.parent, f.n_nodes, f.value, self.regcol,
                                       self.lin)
        prec = 1.0 / sd0**2 + P * k * k * self.prec0 / m**2
        mean = ((mu0 - c) / sd0**2 + k * B * self.prec0 / m) / prec
        s = mean + rng.standard_normal() / np.sqrt(prec)
        f.value[f.var == LEAF] -= k * s / m
        return float(s)

    def leaf_stats(self) -> tuple[float, float]:
        """(number of leaf coefficients, sum of their squares over their prior variance in
        units of the leaf variance): the forest's density in the leaf sd depends on these
        only, as for constant leaves."""
        f = self.forest
        self._sync()
        return tuple(float(x) for x in linear_leaf_stats(f.var, f.parent, f.n_nodes, f.value,
                                                          self.slope, self.regcol, self.lin))

    def _pack_leaves(self, nodes: np.ndarray, slot_pos: np.ndarray) -> None:
        f = self.forest
        self._sync()
        pack_linear_leaves(f.var, f.parent, f.n_nodes, self.slope, self.regcol, self.lin,
                           self.scale, center_bits(self.center), slot_pos, nodes)

    def draw_prior(self, rng: np.random.Generator) -> None:
        """The trees from the prior (:meth:`ForestSampler.draw_prior`), then each tree's kind
        (linear, or with ``"mix"`` a fair coin) and its leaves' coefficients from theirs."""
        super().draw_prior(rng)
        forest = self.forest
        self.slope = np.zeros_like(forest.value)
        self._sums = np.zeros((5, forest.capacity))
        m = forest.var.shape[0]
        self.lin = ((rng.random(m) < 0.5) if self.mix else np.ones(m)).astype(np.uint8)
        linear_prior_leaves(rng, forest.var, forest.parent, forest.n_nodes, self.regcol,
                            self.lin, float(self.leaf_sd), forest.value, self.slope)
