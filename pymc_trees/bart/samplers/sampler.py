"""Orchestration: a forest, its data and buffers, and the sweeps that update it.

Plain Python around the kernels of :mod:`pymc_trees.core`; knows nothing of PyMC.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pymc_trees.bart.kernels.bundles import (new_scratch, PseudoRows, read_only_rows, SweepData,
                                             TreeRules)
from pymc_trees.bart.kernels.cgm import cgm_sweep, forest_summary
from pymc_trees.bart.kernels.row_passes import leaf_counts
from pymc_trees.bart.samplers.split_weights import SplitWeights
from pymc_trees.bart.samplers.tree_sums import TreeSums
from pymc_trees.bart.kernels.forest import (LEAF, dart_prior_draw, Forest, forest_values,
                                            mask_dtype, mask_width, new_forest, pack_forest,
                                            store_mask)
from pymc_trees.bart.kernels.nodes import node_availability, route_leaves
from pymc_trees.core.packed import NODE_DTYPE, PackedForest
from pymc_trees.bart.samplers.general_loop import MOVES, acceptance_rates, GeneralSweeps
from pymc_trees.bart.kernels.gfr import (GFR_MAX_DEPTH, GFR_OK, gfr_tree, new_gfr_scratch,
                                         remove_tree)
from pymc_trees.bart.kernels.pg import (OK, POOL_FULL, UIDS_FULL, PGBuffers, new_node_cache,
                                        new_particles, pg_tree_update)
from pymc_trees.bart.kernels.prior import max_tree_nodes, sample_prior_forest
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.core.features import FeatureLayout, build_layout

__all__ = ["ForestSampler", "EXACT_VALUES_EVERY"]

# With ``ForestSampler.exact_values`` False, the CGM sweeps take the values from the residual
# they keep, but every this many-th sweep in a row sums the trees exactly, which also resets
# the residual: the rounding of 2 m additions a row per sweep builds up over at most this
# many sweeps (a random walk of about 1e-14 relative at m = 200).
EXACT_VALUES_EVERY = 100


@dataclass
class ForestSampler(SplitWeights, GeneralSweeps):
    """A sum of m trees over fixed training rows, updated by Bayesian backfitting.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Training rows; NaN marks a missing value, categorical columns hold level codes.
        Read once, for the bins; a pickled copy holds None here.
    prior : TreePrior
    offset : float
        Constant added to the sum of trees.
    leaf_sd : float
        Prior standard deviation of every leaf value.
    categorical : ndarray of shape (p,), dtype bool, optional
        Categorical columns (split by sets of levels); default none.
    exact_values : bool, default True
        Whether every CGM sweep with equal row precisions sums the trees at the training rows in
        tree order (:meth:`values` then equals :func:`forest_values`, and
        :func:`pymc_trees.predict`, to the last bit). False (a tree step sets it for a term
        whose values stay out of the trace) takes them as the pseudo-data minus the residual the
        sweep keeps, equal up to rounding (of the order of 1e-14 relative), which saves a sixth
        of a grow/prune sweep at a million rows; then every ``EXACT_VALUES_EVERY``-th sweep in a
        row still sums them exactly, so that rounding does not build up in the residual.

    The kernels work on the features of :mod:`pymc_trees.core.features` (a numeric column with
    missing values is two of them); ``split_prior`` and the forest's masks are per feature,
    packed forests per column of X.

    Raises
    ------
    ValueError
        ``leaf_sd`` not positive and finite, or ``prior.split_prior`` weights whose number is
        not X's columns.

    Examples
    --------
    The forest of a :class:`~pymc_trees.BARTTree` outside PyMC: CGM sweeps against
    pseudo-data ``z`` with row precisions ``omega`` (here a Gaussian with sigma 0.5), the
    leaves' prior sd set by the caller.

    >>> import numpy as np
    >>> from pymc_trees import ForestSampler, TreePrior
    >>> from pymc_trees.bart.samplers.tree_prior import move_cumulative_probs
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(200, 3))
    >>> y = np.sin(6 * X[:, 0]) + 0.5 * rng.normal(size=200)
    >>> fs = ForestSampler(X, TreePrior(m=20), offset=float(y.mean()), leaf_sd=0.25)
    >>> moves = move_cumulative_probs({"grow": 0.25, "prune": 0.25, "change": 0.4,
    ...                                "swap": 0.1})
    >>> omega = np.full(200, 1 / 0.5**2)
    >>> for _ in range(50):
    ...     rates = fs.cgm_sweep(rng, y - fs.offset, omega, moves)
    >>> fs.values().shape
    (200,)
    >>> sorted(rates)
    ['accept_change', 'accept_grow', 'accept_prune', 'accept_swap']
    """

    X: np.ndarray
    prior: TreePrior
    offset: float
    leaf_sd: float
    categorical: np.ndarray | None = None
    exact_values: bool = True
    layout: FeatureLayout = field(init=False)
    ncuts: np.ndarray = field(init=False)
    iscat: np.ndarray = field(init=False)
    Xb: np.ndarray = field(init=False)
    split_prior: np.ndarray = field(init=False)
    forest: Forest = field(init=False)
    # what follows from the trees and the rows, let go by release_rows and left out of a
    # pickle (not annotated: not a dataclass field)
    # (the trees' sum at the rows and the leaves' counts: ``_tree_sums``, which releases and
    # pickles itself)
    _ROW_ATTRS = ("_scratch", "_gfr", "_particles", "_row_bufs")

    def __post_init__(self):
        self.X = np.ascontiguousarray(self.X, dtype=np.float64)
        if not (np.isfinite(self.leaf_sd) and self.leaf_sd > 0):
            raise ValueError(f"leaf_sd must be positive and finite; got {self.leaf_sd!r}.")
        self._leaf_sd0 = float(self.leaf_sd)  # where reset() puts it back (a learned scale)
        # (n, p): X itself is needed only here (the bins follow from it), and a pickle leaves
        # it out (__getstate__)
        self._shape = n, p = self.X.shape
        lay = self.layout = build_layout(self.X, self.categorical, self.prior.numcut,
                                         self.prior.missing_split)
        self.Xb, self.ncuts, self.iscat = lay.Xb, lay.ncuts, lay.iscat
        q = lay.q
        # feature-major copy in the narrowest unsigned type, for the CGM partitions
        nc = lay.max_cuts  # bin indices run 0 .. nc
        small = np.uint8 if nc < 256 else np.uint16
        self._XbT = np.ascontiguousarray(self.Xb.T, dtype=small)
        self._column_weights = self.prior.split_weights(p)
        self.split_prior = lay.feature_weights(self._column_weights)
        self._mask_dt = mask_dtype(self.ncuts, self.iscat)
        hist = np.zeros((q, nc + 1), np.int32)
        idx = np.arange(n, dtype=np.int32)
        lo = np.zeros(q, np.int32)
        hi = np.zeros(q, np.int32)
        # availability at the root is a property of the data: every feature counts here, so
        # that the mask stays right when the split weights change (set_split_weights)
        node_availability(self.Xb, idx, 0, n, self.ncuts, self.iscat, self.prior.min_leaf,
                          np.ones(q), hist, lo, hi)
        self._root_avail = lo <= hi
        self._root_mask = np.zeros((1, 1, mask_width(q)), self._mask_dt)
        store_mask(self._root_mask, 0, 0, lo, hi)
        self._root_wavail = float(self.split_prior[self._root_avail].sum())
        self.reset()

    @property
    def n(self) -> int:
        return self._shape[0]

    @property
    def cuts(self) -> np.ndarray:
        """Thresholds of the numeric rules, shape (q, C): rule c of feature v sends a row
        left when its value is ``<= cuts[v, c]`` (padded with ``+inf``)."""
        return self.layout.thr_tab

    @property
    def prec0(self) -> float:
        return 1.0 / self.leaf_sd**2

    def reset(self) -> None:
        """Every tree back to a single leaf with value 0, and the leaf sd back to the one the
        sampler was built with (a scale learned inside the tree step starts every chain
        there, so a seed reproduces a chain whatever ran before it).  DART's split
        probabilities start equal with ``alpha = p`` (``u = 1/2``)."""
        self.leaf_sd = self._leaf_sd0
        if self.prior.dart:
            p = self._shape[1]
            self.dart_log_s = np.full(p, -np.log(p))
            self.dart_x = 0.0
            self._store_weights(np.ones(p))  # before the new forest, whose root reads them
        old = getattr(self, "forest", None)
        if old is not None:  # let go of the old rows' leaves before the new ones exist
            old.leaf_of_row = np.zeros((old.m, 0), old.leaf_of_row.dtype)
        self.forest = new_forest(self.prior.m, self.n, self._root_wavail,
                                 root_mask=self._root_mask[0, 0])
        self._alloc_scratch()
        self._particles = None

    def _alloc_scratch(self) -> None:
        n, p = self._shape
        self._scratch = new_scratch(n, self.layout.q, self.layout.max_cuts,
                                    self.forest.capacity, self._mask_dt)
        if getattr(self, "_tree_sums", None) is None:
            self._tree_sums = TreeSums()
        self._tree_sums.allocate(n)  # a new buffer holds no trees' sum

    def release_rows(self) -> None:
        """Let go of the arrays that follow from the trees and the rows: the rows' leaves and
        the sweeps' scratch (236 bytes a training row at m = 200); the next use routes the
        rows again (:meth:`ensure_rows`).  A tree step calls it once built: PyMC builds the
        steps in its own process and, with several cores, samples in worker processes that
        get a pickled copy, so the copy it keeps never needs them."""
        f = self.forest
        f.leaf_of_row = np.zeros((f.m, 0), f.leaf_of_row.dtype)
        for name in self._ROW_ATTRS:
            setattr(self, name, None)
        self._tree_sums.release()

    def ensure_rows(self) -> Forest:
        """The forest with its rows' leaves (routed again after :meth:`release_rows`), and the
        sweeps' scratch allocated."""
        f = self.forest
        if f.leaf_of_row.shape[1] != self.n:
            f.leaf_of_row = np.zeros((f.m, self.n), f.leaf_of_row.dtype)
            route_leaves(f.var, f.cut, f.left, f.right, self.Xb, f.leaf_of_row)
            self._tree_sums.forget()
        if getattr(self, "_scratch", None) is None:
            self._alloc_scratch()
        return f

    def values(self) -> np.ndarray:
        """The term at the training rows, shape (n,), summed tree by tree from the offset."""
        self.ensure_rows()
        # the last CGM sweep summed them, in tree order, when the trees are still the same
        key = self._forest_key()
        out = self._tree_sums.take_values(key, self.offset)
        if out is None and not self.exact_values and self._tree_sums.holds(key) == "sums":
            out = self._tree_sums.buf + self.offset  # rescaled leaves' sums, up to rounding
        if out is None:
            out = np.empty(self.n)
            forest_values(self.forest.value, self.forest.leaf_of_row, float(self.offset), out)
        self._remember_values(out, key)
        return out

    def current_sums(self) -> np.ndarray:
        """The trees' sum at the training rows, shape (n,), without the offset, kept for the
        next sweep: from what the last sweep or :meth:`values` kept when the trees are still
        the same (a sweep's values less the offset, in place), else summed.  Read-only use."""
        key = self._forest_key()
        held = self._tree_sums.holds(key)
        if held == "values":  # a sweep's values, the offset plus the trees in tree order
            self._tree_sums.buf -= self.offset
            self._tree_sums.hold_sums(key)
        elif held is None:
            self.values()  # keeps the trees' sum
        return self._tree_sums.buf

    def scale_leaves(self, c: float) -> None:
        """Multiply every leaf by ``c`` (a leaf scale's non-centred update,
        :meth:`pymc_trees.bart.steps.leaf_scale.LearnedLeafScale.interweave`); the kept sums follow
        (the next sweep starts from them, and without ``exact_values`` so do the values)."""
        self.current_sums()
        self._scale_leaf_arrays(c)
        self._tree_sums.rescale(self._forest_key(), c)

    def _scale_leaf_arrays(self, c: float) -> None:
        f = self.forest
        f.value[f.var == LEAF] *= c

    def _remember_values(self, out: np.ndarray, key: tuple | None = None) -> None:
        """Keep the trees' sum at the training rows, ``out`` minus the offset, for the next
        sweep (:class:`~pymc_trees.bart.samplers.tree_sums.TreeSums`: the step asks for the values
        after every sweep, so that sweep need not sum m trees over n rows again); ``key``, the
        forest's key when the caller has it (:meth:`_forest_key`, unchanged since)."""
        self._tree_sums.keep(out, float(self.offset), self._forest_key() if key is None else key)

    def __getstate__(self) -> dict:
        """Pickled (PyMC sends the step to each worker process) without the per-row arrays
        that follow from the rest: the rows' leaves, routed again on arrival, and the sweeps'
        scratch, allocated again (200 + 36 bytes a training row at m = 200); and without X
        (80 bytes a row at p = 10), which the sampler read once for its bins: ``X`` is None
        in the copy."""
        state = dict(self.__dict__)
        state["forest"] = self.forest.compact()
        state["X"] = None
        for name in self._ROW_ATTRS + ("_pool",):
            state[name] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.ensure_rows()

    def forest_state(self) -> Forest:
        """The forest for a step's saved state: :meth:`Forest.compact` (no per-row arrays)."""
        return self.forest.compact()

    def restore_forest(self, state: Forest) -> None:
        """Take a forest from a saved state (:meth:`forest_state`), with the rows' leaves
        routed anew from the training rows; a full forest is taken as it is."""
        # the live rows' leaves go before the new ones are routed: two m x n arrays at once
        # would double the largest allocation of the sampler at the start of every chain
        self.release_rows()
        self.forest = state.copy()
        self.ensure_rows()

    def _forest_key(self) -> tuple:
        """The trees' rules, links and leaf values, which determine their sum at every
        training row (each row's leaf follows from the rules)."""
        f = self.forest
        return (f.var.tobytes(), f.cut.tobytes(), f.left.tobytes(), f.right.tobytes(),
                f.value.tobytes())

    def _load_tree_sums(self) -> None:
        """The buffer of ``_tree_sums`` = the sum of the trees at the training rows (no
        offset): from the last :meth:`values` when the trees are the same as then (the step
        asks for the values after every sweep, so the next sweep need not sum m trees over n
        rows again), else summed.  The two agree up to rounding."""
        sums = self._tree_sums
        if not sums.take_sums(self._forest_key()):
            f = self.forest
            forest_values(f.value, f.leaf_of_row, 0.0, sums.buf)
            sums.inexact = 0  # summed afresh

    def _forest_with_room(self, sweeps: int = 1):
        """The forest, with room for the two nodes each of ``sweeps`` sweeps may add to its
        largest tree (one move a tree a sweep; the kernels do not check, so a sweep past the
        room would write past the arrays).  The room stops at the most slots a tree over
        these rows can fill (:func:`max_tree_nodes`: a new slot is taken only when no freed
        one is left), past the two of one sweep.  An exact sweep starts here, after the warm
        start: its scratch (2 n int32) is let go."""
        self._gfr = None
        f = self.ensure_rows()
        top = int(f.n_nodes.max())
        needed = max(top + 2, min(top + 2 * int(sweeps),
                                  max_tree_nodes(self.n, self.prior.min_leaf)))
        if needed > f.capacity:
            f.ensure_capacity(needed)
            self._alloc_scratch()
        return f

    def check_move_probs(self, move_probs: dict[str, float]) -> None:
        """Refuse a user's ``move_probs`` that this sampler's sweeps cannot honour (called by
        the tree step where the user passes them); here every move applies."""

    def cgm_sweep(self, rng: np.random.Generator, z: np.ndarray, omega: np.ndarray,
                  move_cumprobs: np.ndarray, sweeps: int = 1) -> dict[str, float]:
        """``sweeps`` CGM backfitting sweeps over all trees against pseudo-data ``z`` (offset
        removed) with row precisions ``omega``, in one kernel call; returns acceptance rates
        per move type over all of them."""
        f = self._forest_with_room(sweeps)
        self._load_tree_sums()
        tally = np.zeros((2, 4), np.int64)
        omega = read_only_rows(omega)
        same = omega.size > 0 and omega[0] > 0 and omega.min() == omega.max()
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        rules = TreeRules(int(self.prior.min_leaf), float(self.prior.alpha),
                          float(self.prior.beta), float(self.prec0))
        counts = self._leaf_counts() if same else np.zeros((0, 0))
        # the values from the residual (exact_values False), but summed exactly after
        # EXACT_VALUES_EVERY - 1 such sweeps in a row
        sums = self._tree_sums
        exact = bool(self.exact_values) or sums.inexact >= EXACT_VALUES_EVERY - 1
        rows = PseudoRows(read_only_rows(z), omega, float(omega[0]) if same else 0.0,
                          float(self.offset))
        cgm_sweep(rng, data, rules, move_cumprobs, rows, sums.buf, f.arrays(), self._scratch,
                  counts, tally, exact, int(sweeps))
        sums.inexact = 0 if exact or not same else sums.inexact + int(sweeps)
        # the buffer now holds the offset plus the trees' values in tree order: values()
        # takes them
        sums.swept(self._forest_key(), self.offset)
        # the sweep kept the counts with equal precisions; they belong to the trees' rules
        sums.counts = (self._structure_key(), counts) if same else None
        return acceptance_rates(tally[1], tally[0], MOVES)

    def _structure_key(self) -> tuple:
        """The trees' rules and links, which determine every leaf's rows."""
        f = self.forest
        return f.var.tobytes(), f.cut.tobytes(), f.left.tobytes(), f.right.tobytes()

    def _leaf_counts(self) -> np.ndarray:
        """Every leaf's number of training rows, shape (m, capacity): the ones the last sweep
        kept when the trees' rules are still the same (a sweep with equal precisions keeps
        them up to date), else counted."""
        kept = self._tree_sums.counts
        f = self.forest
        if kept is not None and kept[1].shape == f.var.shape and kept[0] == self._structure_key():
            return kept[1]
        counts = np.zeros(f.var.shape)
        leaf_counts(f.leaf_of_row, counts)
        return counts

    def pg_sweep(self, rng: np.random.Generator, z: np.ndarray, omega: np.ndarray,
                 num_particles: int, leaf: tuple = (0.0, 0.0, 0.0, 0.0)) -> dict[str, float]:
        """One Particle Gibbs sweep (conditional SMC for every tree in turn, then its exact leaf
        draw) against pseudo-data ``z`` with row precisions ``omega`` (log-gamma leaves:
        ``leaf``, :func:`~pymc_trees.bart.kernels.pg.pg_tree_update`).

        Returns the fraction of trees whose returned tree differs from the old one.
        """
        self._gfr = None  # the warm start is over (see _forest_with_room)
        f = self.ensure_rows()
        n = self.n
        C = int(num_particles)
        if getattr(self, "_particles", None) is None or self._particles[0].shape[0] != C:
            self._particles = new_particles(C, max_tree_nodes(n, self.prior.min_leaf))
            self._pool = np.empty(C * n * 4, np.int32)
            self._old_bfs = np.empty(f.capacity, np.int32)
            self._node_cache = new_node_cache(1 + 2 * C * 32, self.layout.q)
        z, omega = read_only_rows(z), read_only_rows(omega)
        self._tree_sums.forget()  # its buffer is rewritten
        forest_values(f.value, f.leaf_of_row, 0.0, self._tree_sums.buf)
        sc = self._scratch
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        # the prior's numbers as given (their types decide numba's powers, hence the draws)
        rules = TreeRules(self.prior.min_leaf, self.prior.alpha, self.prior.beta, self.prec0)
        changed = 0
        for t in range(f.m):
            while True:
                state = rng.bit_generator.state
                buf = PGBuffers(*self._particles, self._pool, *self._node_cache,
                                self._old_bfs)
                status, ch = pg_tree_update(rng, t, data, rules, z, omega, self._tree_sums.buf,
                                            f.arrays(), buf, sc, leaf)
                if status == OK:
                    break
                # a buffer was too small; nothing was modified: grow it and replay the draws
                rng.bit_generator.state = state
                if status == POOL_FULL:
                    self._pool = np.empty(2 * self._pool.size, np.int32)
                elif status == UIDS_FULL:
                    self._node_cache = new_node_cache(2 * self._node_cache[2].size,
                                                      self.layout.q)
                else:
                    f.ensure_capacity(2 * f.capacity)
                    self._alloc_scratch()
                    self._old_bfs = np.empty(f.capacity, np.int32)
                    forest_values(f.value, f.leaf_of_row, 0.0, self._tree_sums.buf)
                    sc = self._scratch
            changed += ch
        return {"tree_changed": changed / f.m}

    def gfr_sweep(self, rng: np.random.Generator, z: np.ndarray,
                  omega: np.ndarray) -> dict[str, float]:
        """One grow-from-root sweep (:mod:`pymc_trees.bart.kernels.gfr`): every tree in turn is
        regrown from its root against the partial residual, then its leaves are drawn.  A warm
        start for the exact sweeps; it does not leave the posterior invariant."""
        f = self.ensure_rows()
        n, p = self.n, self.layout.q
        z, omega = read_only_rows(z), read_only_rows(omega)
        self._tree_sums.forget()  # its buffer is rewritten
        forest_values(f.value, f.leaf_of_row, 0.0, self._tree_sums.buf)
        if getattr(self, "_gfr", None) is None or self._gfr[-1].size != f.capacity:
            self._gfr = new_gfr_scratch(n, p, self.layout.max_cuts, f.capacity)
        r = self._scratch.r
        pr = self.prior
        data = SweepData(self.Xb, self._XbT, self.ncuts, self.iscat, self.split_prior)
        # the prior's numbers as given (their types decide numba's powers, hence the draws)
        rules = TreeRules(pr.min_leaf, pr.alpha, pr.beta, self.prec0)
        for t in range(f.m):
            remove_tree(t, f.value, f.leaf_of_row, self._tree_sums.buf, z, r)
            while True:
                state = rng.bit_generator.state
                status = gfr_tree(rng, t, data, rules, GFR_MAX_DEPTH, r, omega,
                                  self._tree_sums.buf, f.arrays(), self._gfr)
                if status == GFR_OK:
                    break
                rng.bit_generator.state = state
                fsum = self._tree_sums.buf
                f.ensure_capacity(2 * f.capacity)
                self._alloc_scratch()
                self._tree_sums.buf = fsum
                r_old, r = r, self._scratch.r
                r[:] = r_old
                self._gfr = new_gfr_scratch(n, p, self.layout.max_cuts, f.capacity)
                self._particles = None  # PG buffers follow the capacity
        return {}

    def level_shift(self, rng: np.random.Generator, c: float, mu0: float, sd0: float,
                    k: float = 1.0) -> float:
        """Exact Gibbs draw of a level shift s between an intercept ``c ~ Normal(mu0, sd0)``
        and the forest: ``c -> c + s`` and every leaf ``-> leaf - k s / m``, so f moves by
        ``-k s`` at every row (the caller guarantees that leaves the likelihood unchanged).
        Along that line the density is Gaussian in s: with L leaves in all, summing to S,

            precision = 1/sd0^2 + L k^2 / (m^2 leaf_sd^2)
            mean      = ((mu0 - c)/sd0^2 + k S / (m leaf_sd^2)) / precision.

        Shifts the leaves in place and returns s."""
        f = self.forest
        leaves = f.var == LEAF
        m = f.m
        prec = 1.0 / sd0**2 + leaves.sum() * k * k * self.prec0 / m**2
        mean = ((mu0 - c) / sd0**2 + k * f.value[leaves].sum() * self.prec0 / m) / prec
        s = mean + rng.standard_normal() / np.sqrt(prec)
        f.value[leaves] -= k * s / m
        return float(s)

    def summary(self) -> tuple[float, float]:
        """(mean depth, mean number of leaves) over the trees."""
        return forest_summary(self.forest.var, self.forest.depth, self.forest.n_nodes)

    def pack(self, rng: np.random.Generator | None = None) -> PackedForest:
        """The forest for prediction at any rows (:func:`~pymc_trees.core.packed.pack_forest`).

        Where the training rows leave a routing open (a NaN in a column that had none, a level
        absent from a node's rows) it is drawn from the prior, a fair coin per node, with
        ``rng`` (default: a generator seeded with 0).  Rows like the training rows never
        meet those coins."""
        return self._pack_slots(rng)[0]

    def _pack_slots(self, rng: np.random.Generator | None) -> tuple[PackedForest, np.ndarray]:
        """:meth:`pack`, and where every node slot went in the packed nodes (shape (m, K))."""
        f = self.forest
        lay = self.layout
        rng = np.random.default_rng(0) if rng is None else rng
        nodes = np.empty(f.m and int((f.n_nodes - f.n_free).sum()), NODE_DTYPE)
        slot_pos = np.empty(f.var.shape, np.int32)
        start = pack_forest(rng, f.arrays(), lay.fmap, lay.thr_tab, lay.ml_tab, lay.nlev,
                            lay.nan_bin, nodes, slot_pos)
        self._pack_leaves(nodes, slot_pos)
        return PackedForest(start, nodes, float(self.offset)), slot_pos

    def _pack_leaves(self, nodes: np.ndarray, slot_pos: np.ndarray) -> None:
        """Hook for leaves that are more than a value (linear leaves); constant: nothing."""

    def leaf_stats(self) -> tuple[float, float]:
        """(number of leaves, sum of squared leaf values) over the forest: the forest's
        density as a function of the leaf sd depends on these only."""
        f = self.forest
        leaves = f.var == LEAF
        return float(leaves.sum()), float(np.sum(f.value[leaves] ** 2))

    def prior_values(self, rng: np.random.Generator, out: np.ndarray) -> None:
        """``out`` (shape (n,), or (k, n) for outputs that share their trees) = a draw of the
        term from its prior at the training rows, given the leaf scale: :meth:`draw_prior`,
        whose forest the sampler then holds, summed at the rows."""
        self.draw_prior(rng)
        out[...] = self.values()

    def draw_prior(self, rng: np.random.Generator) -> None:
        """Replace the forest by a draw from the prior given the leaf scale.

        m independent trees (:meth:`sample_prior`), the rows' leaves with them.  With
        ``prior.dart`` the split probabilities and their concentration are drawn from
        Linero's prior first (:func:`~pymc_trees.bart.kernels.forest.dart_prior_draw`), and
        the trees split with them; otherwise with the split weights the sampler holds.  The
        one prior draw of a term, for ``pm.sample_prior_predictive`` (``BARTTreeRV.rng_fn``,
        through :meth:`prior_values`) and for a tree step whose term nothing observes.

        Parameters
        ----------
        rng : numpy.random.Generator
            Advanced by the draw.
        """
        if self.prior.dart:
            log_s, x = dart_prior_draw(rng, self._shape[1])
            self.dart_log_s, self.dart_x = log_s, float(x)
            self.set_split_weights(np.exp(log_s - log_s.max()))
        self._take_forest(self.sample_prior(rng))

    def _take_forest(self, forest: Forest) -> None:
        """Hold ``forest`` (with its rows' leaves), with buffers for its capacity; what was
        kept of the previous trees (their sum at the rows, particles, grow-from-root and row
        buffers) is let go."""
        self.forest = forest
        self._gfr = self._particles = self._row_bufs = None
        self._alloc_scratch()
        self._tree_sums.counts = None

    def sample_prior(self, rng: np.random.Generator) -> Forest:
        """A forest of m independent prior trees (does not touch the sampler's state)."""
        p = self.prior
        return sample_prior_forest(rng, self.Xb, self.ncuts, self.iscat, self.split_prior, p.m,
                                   p.min_leaf,
                                   p.alpha, p.beta, self.leaf_sd)
