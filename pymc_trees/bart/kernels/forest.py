"""The flat forest: m trees stored as a struct of arrays, plus the per-row leaf index.

Every array has the trees on axis 0 and node slots on axis 1.  Slot 0 is always the root.
``var[t, k]`` is the split feature of an internal node, ``LEAF`` (-1) for a leaf and ``FREE`` (-2)
for an unused slot.  Kernels receive these arrays directly; the same layout holds the particles
of a particle sampler (one "tree" per particle).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

__all__ = ["LEAF", "FREE", "Forest", "ForestArrays", "pack_forest", "new_forest", "forest_values",
           "leaf_index_dtype", "mask_width",
           "mask_dtype", "store_mask", "load_mask", "mask_weight", "reweight", "split_prior_gibbs",
           "log_gamma_draw", "dart_concentration_draw", "dart_prior_draw", "DART_A", "DART_B"]

LEAF = -1
FREE = -2


class ForestArrays(NamedTuple):
    """The arrays of a :class:`Forest`, as one argument of a kernel (fields as there)."""

    var: np.ndarray
    cut: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    value: np.ndarray
    wavail: np.ndarray
    ncut: np.ndarray
    amask: np.ndarray
    n_nodes: np.ndarray
    free: np.ndarray
    n_free: np.ndarray
    leaf_of_row: np.ndarray


# the fields of ForestArrays read off a Forest in one C call (Forest.arrays runs every sweep)
_FOREST_FIELDS = operator.attrgetter(*ForestArrays._fields)


@dataclass
class Forest:
    """State of m trees over n training rows.

    Attributes
    ----------
    var, cut, left, right, parent, depth : ndarray of shape (m, K), dtype int32
        Split feature, cut index (row goes left when ``bin <= cut``), children, parent
        (-1 at the root) and depth of every node slot.
    value : ndarray of shape (m, K), dtype float64
        Leaf values (unused on internal nodes).
    wavail : ndarray of shape (m, K), dtype float64
        Sum of ``split_prior`` over the features with at least one available cutpoint at the
        node; 0 means the node cannot split.
    ncut : ndarray of shape (m, K), dtype int32
        Internal nodes: number of available cutpoints of the node's split feature.
    amask : ndarray of shape (m, K, 2 p), dtype int16 (int32 above 32,766 cutpoints or with
        a categorical feature of more than 15 bins: :func:`mask_dtype`)
        The node's available rules, as the kernels computed them from its rows:
        ``amask[t, k, v] .. amask[t, k, p + v]`` is the inclusive range of available rules
        of feature ``v`` (cut indices; for a categorical feature the encoding of
        :mod:`pymc_trees.bart.kernels.nodes`; empty, ``lo > hi``, when ``v`` is
        unavailable).  A move
        that keeps a node's rows reads them here instead of counting the rows again, and
        ``wavail`` is recomputed from them when the split weights change (``reweight``).
    n_nodes : ndarray of shape (m,), dtype int32
        High-water mark of used slots.
    free, n_free : ndarray of shape (m, K) and (m,), dtype int32
        Stack of freed slots below the high-water mark.
    leaf_of_row : ndarray of shape (m, n), dtype uint8 up to 256 node slots a tree, uint16
        up to 65,536, else int32
        Leaf slot holding each training row, per tree (:func:`leaf_index_dtype`): at m = 200,
        200 bytes a training row while every tree fits in 256 slots (which the warm start's
        depth limit and the tree prior keep), 400 above, instead of int32's 800.
    """

    # The fields are declared once, by ForestArrays (the kernels' view of them): the same
    # names in the same order, so that :meth:`arrays` is one tuple of them.
    __annotations__ = dict(ForestArrays.__annotations__)

    @property
    def m(self) -> int:
        return self.var.shape[0]

    @property
    def capacity(self) -> int:
        return self.var.shape[1]

    def ensure_capacity(self, needed: int) -> None:
        """Grow the node axis so that every tree has at least ``needed`` slots."""
        K = self.capacity
        if needed <= K:
            return
        newK = max(needed, 2 * K)
        for name, fill in (("var", FREE), ("cut", 0), ("left", -1), ("right", -1),
                           ("parent", -1), ("depth", 0), ("value", 0.0), ("wavail", 0.0),
                           ("ncut", 0), ("free", 0)):
            old = getattr(self, name)
            new = np.full((old.shape[0], newK), fill, dtype=old.dtype)
            new[:, :K] = old
            setattr(self, name, new)
        mask = np.zeros((self.m, newK, self.amask.shape[2]), self.amask.dtype)
        mask[:, :K] = self.amask
        self.amask = mask
        dt = leaf_index_dtype(newK)
        if self.leaf_of_row.dtype != dt:
            self.leaf_of_row = self.leaf_of_row.astype(dt)

    def arrays(self) -> ForestArrays:
        """The current arrays (replaced when the capacity grows), for a kernel."""
        return ForestArrays._make(_FOREST_FIELDS(self))

    def copy(self) -> "Forest":
        return Forest(**{k: v.copy() for k, v in self.__dict__.items()})

    def compact(self) -> "Forest":
        """A copy without the rows' leaves (``leaf_of_row`` of shape (m, 0)): the trees alone,
        from which :func:`~pymc_trees.bart.kernels.nodes.route_leaves` recomputes them.  A
        step's saved state (PyMC keeps one per run) then costs no memory per training row."""
        return Forest(**{k: (v.copy() if k != "leaf_of_row"
                             else np.zeros((v.shape[0], 0), v.dtype))
                         for k, v in self.__dict__.items()})


def leaf_index_dtype(capacity: int) -> np.dtype:
    """The narrowest type of a row's leaf slot in trees of ``capacity`` node slots (slots
    run 0 .. capacity - 1): uint8 up to 256 slots, uint16 up to 65,536, else int32."""
    for dt in (np.uint8, np.uint16):
        if capacity - 1 <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int32)


def new_forest(m: int, n: int, root_wavail: float, root_mask: np.ndarray,
               capacity: int = 32) -> Forest:
    """m single-leaf trees with leaf value 0 holding all n rows; ``root_mask`` (shape (2 p,),
    see :class:`Forest`) holds the available cutpoints at the root."""
    f = Forest(
        var=np.full((m, capacity), FREE, np.int32),
        cut=np.zeros((m, capacity), np.int32),
        left=np.full((m, capacity), -1, np.int32),
        right=np.full((m, capacity), -1, np.int32),
        parent=np.full((m, capacity), -1, np.int32),
        depth=np.zeros((m, capacity), np.int32),
        value=np.zeros((m, capacity), np.float64),
        wavail=np.zeros((m, capacity), np.float64),
        ncut=np.zeros((m, capacity), np.int32),
        amask=np.zeros((m, capacity, root_mask.size), root_mask.dtype),
        n_nodes=np.ones(m, np.int32),
        free=np.zeros((m, capacity), np.int32),
        n_free=np.zeros(m, np.int32),
        leaf_of_row=np.zeros((m, n), leaf_index_dtype(capacity)),
    )
    f.var[:, 0] = LEAF
    f.wavail[:, 0] = root_wavail
    f.amask[:, 0] = root_mask
    return f


def mask_width(p: int) -> int:
    """Entries per node in ``Forest.amask`` for p features: the low and high cut indices."""
    return 2 * p


def mask_dtype(ncuts: np.ndarray, iscat: np.ndarray) -> np.dtype:
    """The narrowest signed integer holding every feature's available-rule range: int16 when
    the numeric features' cut indices stay below 32,767 and every categorical feature has at
    most 15 bins (its range runs from ``-P``, ``P`` the bit set of its levels present, down
    to ``-(2**15 - 1)``); int32 otherwise.  ``ncuts`` and ``iscat`` as in
    :class:`pymc_trees.core.features.FeatureLayout` (a categorical feature's bins are
    ``ncuts + 1``).

    One dtype for the common tables keeps every kernel compiled once for them: a small
    category used to take int32 and with it a second compilation of each sweep (CGM's alone
    about 26 s of one core), besides twice the memory."""
    ncuts = np.asarray(ncuts)
    iscat = np.asarray(iscat, dtype=bool)
    wide = (ncuts[~iscat].max(initial=0) >= np.iinfo(np.int16).max
            or ncuts[iscat].max(initial=0) + 1 > 15)
    return np.dtype(np.int32 if wide else np.int16)


@numba.njit(cache=True)
def store_mask(amask, t, k, lo, hi):
    """Node k of tree t: keep its available cut ranges ``lo[v] .. hi[v]``."""
    p = lo.shape[0]
    for v in range(p):
        amask[t, k, v] = lo[v]
        amask[t, k, p + v] = hi[v]


@numba.njit(cache=True)
def load_mask(amask, t, k, lo, hi):
    """The available cut ranges kept for node k of tree t, into ``lo``, ``hi``."""
    p = lo.shape[0]
    for v in range(p):
        lo[v] = amask[t, k, v]
        hi[v] = amask[t, k, p + v]


@numba.njit(cache=True, inline="always")
def mask_has(amask, t, k, v):
    """Whether feature v has an available cutpoint at node k of tree t."""
    return amask[t, k, v] <= amask[t, k, (amask.shape[2] >> 1) + v]


@numba.njit(cache=True, inline="always")
def mask_weight(amask, t, k, weights):
    """Sum of ``weights`` over the features available at node k of tree t."""
    tot = 0.0
    for v in range(weights.shape[0]):
        if mask_has(amask, t, k, v):
            tot += weights[v]
    return tot


@numba.njit(cache=True)
def reweight(var, n_nodes, amask, weights, wavail):
    """``wavail`` of every node in use, recomputed from its mask for new split ``weights``."""
    m = var.shape[0]
    for t in range(m):
        for k in range(n_nodes[t]):
            if var[t, k] != FREE:
                wavail[t, k] = mask_weight(amask, t, k, weights)


@numba.njit(cache=True)
def forest_values(value, leaf_of_row, offset, out):
    """``out[i] = offset + sum_t value[t, leaf_of_row[t, i]]``, summed in tree order.

    The summation order is the one used by prediction from packed forests, so the two agree
    to the last bit.
    """
    n = leaf_of_row.shape[1]
    # in blocks of rows, so that a block's sums stay in the first-level cache while every
    # tree adds to them (one pass over ``out`` instead of m), and four trees at a time, so
    # that a row's sum is loaded and stored once per four trees (the rows of a block are
    # independent chains of additions); each row's order of addition is unchanged, so the
    # blocks may run on several threads (a table of more than VALUES_THREADED rows) with the
    # same numbers
    if n > VALUES_THREADED:
        _values_blocks(value, leaf_of_row, offset, out)
        return
    for i0 in range(0, n, VALUES_BLOCK):
        _values_block(value, leaf_of_row, offset, out, i0)


# rows a block of forest_values, and the rows above which its blocks run on the threads (as
# the sweeps' passes, kernels/row_blocks.py)
VALUES_BLOCK = 2048
VALUES_THREADED = 65_536


@numba.njit(cache=True, inline="always")
def _values_block(value, leaf_of_row, offset, out, i0):
    """:func:`forest_values` at rows ``i0`` to ``i0 + VALUES_BLOCK`` (or the last row)."""
    m, n = leaf_of_row.shape
    m4 = m - (m & 3)
    i1 = min(i0 + VALUES_BLOCK, n)
    for i in range(i0, i1):
        out[i] = offset
    for t in range(0, m4, 4):
        for i in range(i0, i1):
            o = out[i] + value[t, leaf_of_row[t, i]]
            o += value[t + 1, leaf_of_row[t + 1, i]]
            o += value[t + 2, leaf_of_row[t + 2, i]]
            o += value[t + 3, leaf_of_row[t + 3, i]]
            out[i] = o
    for t in range(m4, m):
        for i in range(i0, i1):
            out[i] += value[t, leaf_of_row[t, i]]


@numba.njit(cache=True, parallel=True)
def _values_blocks(value, leaf_of_row, offset, out):
    """:func:`forest_values`' blocks of rows spread over the threads (each row's sum is its
    own: the same numbers for any number of threads)."""
    n = leaf_of_row.shape[1]
    for b in numba.prange((n + VALUES_BLOCK - 1) // VALUES_BLOCK):
        _values_block(value, leaf_of_row, offset, out, b * VALUES_BLOCK)


@numba.njit(cache=True)
def log_gamma_draw(rng, a):
    """``log G`` of one draw ``G ~ Gamma(a, 1)``, finite for any shape ``a > 0``.  Below shape
    1 it uses ``G = G1 * U^(1/a)`` with ``G1 ~ Gamma(a + 1)`` and ``U ~ Uniform(0, 1]``
    (Marsaglia and Tsang 2000, section 3): ``G`` itself underflows for shapes of about 1e-3
    and below, its logarithm does not."""
    if a >= 1.0:
        return np.log(rng.gamma(a, 1.0))
    return np.log(rng.gamma(a + 1.0, 1.0)) + np.log(1.0 - rng.uniform()) / a


@numba.njit(cache=True, inline="always")
def _logaddexp(x, y):
    """``log(exp(x) + exp(y))`` without overflow, -inf when both are."""
    hi, lo = (x, y) if x > y else (y, x)
    if lo == -np.inf:
        return hi
    return hi + np.log1p(np.exp(lo - hi))


@numba.njit(cache=True)
def split_prior_gibbs(rng, var, n_nodes, amask, a, log_s, fmap, share):
    """One exact update of the split probabilities ``s`` of the p columns of X (shape (p,),
    on the simplex) with prior Dirichlet(a), given the internal nodes of the forest (DART).
    ``s`` comes and goes as ``log s``: with concentrations below about 1e-3 (Linero's prior
    gives them real mass) the probabilities of unused columns are far below the smallest
    float.

    The forest splits on the sampler's q features: feature f belongs to column ``fmap[f]``
    and carries the share ``share[f]`` of its weight (:mod:`pymc_trees.core.features`: a
    numeric column with missing values is two features of share 1/2), so its weight is
    ``w_f = share_f s_fmap[f]``.  Node eta chooses its feature v with probability
    ``w_v / A_eta(s)``, A summing w over the features available at eta, which is linear in
    s: ``A_eta(s) = sum_c e_eta,c s_c`` with ``e_eta,c`` the shares of column c's available
    features.  Write ``s = g / sum(g)`` with independent ``g_c ~ Gamma(a_c)`` (the node
    factors do not depend on the scale of g, so ``sum(g) | s ~ Gamma(sum a)``), and
    ``1 / A_eta(g) = integral exp(-zeta A_eta(g)) d zeta`` with a latent ``zeta_eta``.  Then
    ``zeta_eta | g ~ Exponential(rate A_eta(g))`` and
    ``g_c | zeta ~ Gamma(a_c + n_c, rate 1 + Z_c)``, ``Z_c = sum_eta zeta_eta e_eta,c`` and
    ``n_c`` the number of splits on column c's features (the constant ``share_v`` of a
    split drops out).  Every quantity is held on the log scale (``log g``, ``log zeta``,
    ``log Z``).  Returns the new ``log s``.  When every feature is available at every node,
    every ``A_eta(s) = 1``: all rates are equal and this is the draw from Dirichlet(a + n).
    """
    p = a.shape[0]
    q = fmap.shape[0]
    log_share = np.log(share)
    col_share = np.zeros(p)
    for u in range(q):
        col_share[fmap[u]] += share[u]
    # nodes where every feature is available (most of them, with continuous columns): when
    # every column's shares sum to 1 there A_eta(s) = sum_c s_c = 1 and zeta adds to every
    # column alike, so their zetas are summed once (``log_z_all``) instead of per feature
    unit = True
    for c in range(p):
        if abs(col_share[c] - 1.0) > 1e-12:
            unit = False
    log_total = log_gamma_draw(rng, a.sum())
    counts = np.zeros(p)
    log_z = np.full(p, -np.inf)
    log_z_all = -np.inf
    for t in range(var.shape[0]):
        for k in range(n_nodes[t]):
            v = var[t, k]
            if v < 0:
                continue
            counts[fmap[v]] += 1.0
            full = unit
            for u in range(q if unit else 0):
                if not mask_has(amask, t, k, u):
                    full = False
                    break
            if full:
                log_z_all = _logaddexp(log_z_all,
                                       np.log(rng.standard_exponential()) - log_total)
                continue
            top = -np.inf
            for u in range(q):
                if mask_has(amask, t, k, u):
                    top = max(top, log_share[u] + log_s[fmap[u]])
            tot = 0.0
            for u in range(q):
                if mask_has(amask, t, k, u):
                    tot += np.exp(log_share[u] + log_s[fmap[u]] - top)
            # log zeta = log E - log A_eta(g), log A_eta(g) = log_total + log A_eta(s)
            lz = np.log(rng.standard_exponential()) - log_total - top - np.log(tot)
            for u in range(q):
                if mask_has(amask, t, k, u):
                    c = fmap[u]
                    log_z[c] = _logaddexp(log_z[c], lz + log_share[u])
    out = np.empty(p)
    for c in range(p):
        if log_z_all > -np.inf:
            log_z[c] = _logaddexp(log_z[c], log_z_all)
        out[c] = log_gamma_draw(rng, a[c] + counts[c]) - _logaddexp(0.0, log_z[c])
    return _log_normalize(out)


@numba.njit(cache=True, inline="always")
def _log_normalize(log_g):
    """``log(g / sum(g))`` from ``log g``, without overflow or underflow of the sum."""
    top = log_g.max()
    tot = 0.0
    for c in range(log_g.shape[0]):
        tot += np.exp(log_g[c] - top)
    return log_g - (top + np.log(tot))


# Linero's (2018) prior on the Dirichlet concentration of DART inside the tree step
# (``BARTTree(..., split_prior="dart")``): s ~ Dirichlet(alpha / p, ..., alpha / p) with
# alpha / (alpha + rho) ~ Beta(DART_A, DART_B), rho = p.
DART_A = 0.5
DART_B = 1.0


@numba.njit(cache=True, inline="always")
def _dart_log_conditional(x, p, sum_log_s):
    """Log density (up to a constant) of ``x = log(alpha / p)`` given ``log s`` under
    Linero's prior: with ``u = alpha / (alpha + p) = e^x / (1 + e^x)`` and ``a = e^x`` the
    concentration of every column, ``Beta(u | DART_A, DART_B) * |du/dx| *
    Dirichlet(s | a)``, which depends on s through ``sum(log s)`` only."""
    a = np.exp(x)
    if not (a > 0.0 and a < np.inf):
        return -np.inf
    l1p = np.log1p(a) if x > -30.0 else a  # log(1 + e^x)
    log_u = x - l1p
    log_1mu = -l1p
    return (DART_A * log_u + DART_B * log_1mu + math.lgamma(p * a) - p * math.lgamma(a)
            + (a - 1.0) * sum_log_s)


@numba.njit(cache=True)
def dart_concentration_draw(rng, log_s, x0):
    """One slice-sampling transition (Neal 2003: stepping out with width 1 and at most 32
    steps, then shrinkage) of ``x = log(alpha / p)``, the log of the per-column Dirichlet
    concentration of DART, from its full conditional given ``log s`` under Linero's prior
    (:func:`_dart_log_conditional`).  Returns the new x."""
    p = log_s.shape[0]
    sls = log_s.sum()
    logy = _dart_log_conditional(x0, p, sls) - rng.standard_exponential()
    lo = x0 - rng.uniform()
    hi = lo + 1.0
    j = int(np.floor(32 * rng.uniform()))
    k = 31 - j
    while j > 0 and _dart_log_conditional(lo, p, sls) > logy:
        lo -= 1.0
        j -= 1
    while k > 0 and _dart_log_conditional(hi, p, sls) > logy:
        hi += 1.0
        k -= 1
    while hi - lo > 1e-12 * (1.0 + abs(x0)):
        x1 = lo + (hi - lo) * rng.uniform()
        if _dart_log_conditional(x1, p, sls) > logy:
            return x1
        if x1 < x0:
            lo = x1
        else:
            hi = x1
    return x0  # the slice shrank to x0 (its density is not finite): stay


@numba.njit(cache=True)
def dart_gibbs_update(rng, var, n_nodes, amask, a, log_s, fmap, share, x0):
    """DART's two conditional draws of one iteration in one call: the split probabilities
    (:func:`split_prior_gibbs`), then the log concentration given them
    (:func:`dart_concentration_draw`); returns ``(log s, x)``.  The same random numbers in the
    same order as the two calls; one call passes the generator to numba once (about 25 us a
    pass, most of a small model's DART update)."""
    log_s_new = split_prior_gibbs(rng, var, n_nodes, amask, a, log_s, fmap, share)
    return log_s_new, dart_concentration_draw(rng, log_s_new, x0)


@numba.njit(cache=True)
def dart_prior_draw(rng, p):
    """``(log s, x)`` from Linero's prior: ``u ~ Beta(DART_A, DART_B)``,
    ``x = log(u / (1 - u))``, ``log s`` of ``s ~ Dirichlet(e^x, ..., e^x)`` (p columns)."""
    u = rng.beta(DART_A, DART_B)
    while u <= 0.0 or u >= 1.0:
        u = rng.beta(DART_A, DART_B)
    x = np.log(u) - np.log1p(-u)
    a = np.exp(x)
    out = np.empty(p)
    for c in range(p):
        out[c] = log_gamma_draw(rng, a)
    return _log_normalize(out), x


@numba.njit(cache=True)
def pack_forest(rng, forest, fmap, thr_tab, ml_tab, nlev, nan_bin, nodes, slot_pos):
    """Fill the structured array ``nodes`` (one entry per used node slot; fields feature, left,
    threshold, value, missing_left, cats) and return ``start`` of shape (m + 1,): tree ``t``
    occupies ``nodes[start[t]:start[t+1]]`` with its root first.  The two children of a node
    are stored side by side (right = left + 1); ``feature`` is -1 at leaves.  ``slot_pos``
    (shape (m, K), int32) receives the position in ``nodes`` of every used slot.

    The sampler's features (``var``) may differ from the data's columns: ``fmap[v]`` is the
    column of sampler feature v.  A numeric rule ``c >= 0`` of feature v becomes the
    threshold ``thr_tab[v, c]`` with ``missing_left = ml_tab[v, c]``; ``ml_tab`` -1 means that
    the training rows say nothing about where a NaN goes (the column had none), and the
    direction is drawn from the prior, a fair coin per node.  A categorical rule ``c = ~S``
    becomes the bit set ``cats`` over the column's ``nlev[v]`` level codes: the levels
    present at the node (``-amask[t, k, v]``, see :mod:`pymc_trees.bart.kernels.nodes`) go where
    ``S`` says, each absent level by a fair coin, and a NaN goes where the set says of the
    missing level (bin ``nan_bin[v]``) when the node has missing rows, else by a coin.  A
    categorical node always has ``cats != 0``: when no level goes left the node is stored
    mirrored (children swapped, the set complemented), which routes every row the same way.
    ``forest`` is the :class:`ForestArrays` (its ``var``, ``cut``, ``left``, ``right``,
    ``value``, ``n_nodes``, ``n_free``, ``amask``).
    """
    var, cut, left, right, value = forest.var, forest.cut, forest.left, forest.right, forest.value
    n_nodes, n_free, amask = forest.n_nodes, forest.n_free, forest.amask
    m = var.shape[0]
    start = np.zeros(m + 1, np.int32)
    for t in range(m):
        start[t + 1] = start[t] + n_nodes[t] - n_free[t]
    stack = np.empty(max(1, var.shape[1]), np.int32)
    dest = np.empty(max(1, var.shape[1]), np.int32)
    for t in range(m):
        nxt = start[t]
        stack[0] = 0
        dest[0] = nxt
        nxt += 1
        top = 1
        while top > 0:
            top -= 1
            k = stack[top]
            o = dest[top]
            slot_pos[t, k] = o
            v = var[t, k]
            nodes[o].cats = 0
            if v == LEAF:
                nodes[o].feature = -1
                nodes[o].left = -1
                nodes[o].threshold = 0.0
                nodes[o].value = value[t, k]
                nodes[o].missing_left = 1
                continue
            nodes[o].feature = fmap[v]
            nodes[o].left = nxt
            nodes[o].value = 0.0
            c = cut[t, k]
            kl = left[t, k]
            kr = right[t, k]
            if c >= 0:
                nodes[o].threshold = thr_tab[v, c]
                ml = ml_tab[v, c]
                nodes[o].missing_left = (rng.random() < 0.5) if ml < 0 else ml
            else:
                S = np.uint64(~c)
                P = np.uint64(-amask[t, k, v])
                one = np.uint64(1)
                cats = np.uint64(0)
                for b in range(nlev[v]):
                    bb = np.uint64(b)
                    if (P >> bb) & one:
                        bit = (S >> bb) & one
                    else:
                        bit = np.uint64(rng.random() < 0.5)
                    cats |= bit << bb
                nb = nan_bin[v]
                if nb >= 0 and (P >> np.uint64(nb)) & one:
                    mleft = np.uint8((S >> np.uint64(nb)) & one)
                else:
                    mleft = np.uint8(rng.random() < 0.5)
                if cats == 0:
                    cats = ~cats >> np.uint64(64 - nlev[v])
                    mleft = 1 - mleft
                    kl, kr = kr, kl
                nodes[o].threshold = 0.0
                nodes[o].cats = cats
                nodes[o].missing_left = mleft
            stack[top] = kr
            dest[top] = nxt + 1
            stack[top + 1] = kl
            dest[top + 1] = nxt
            top += 2
            nxt += 2
    return start
