"""The named bundles the sweep and move kernels take: the training rows (:class:`SweepData`),
the tree prior's constants (:class:`TreeRules`) and the sweep's buffers (:class:`SweepScratch`,
:func:`new_scratch`).  The forest's own arrays are
:class:`~pymc_trees.bart.kernels.forest.ForestArrays`.
Numba takes a named tuple of arrays as one argument at no cost: a kernel unpacks the fields it
reads."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ROW_INDEX", "SweepData", "TreeRules", "PseudoRows", "SweepScratch", "new_scratch",
           "read_only_rows"]

# Row numbers in the sweeps' row lists (``idx``, ``tmp``): unsigned, so that numba indexes the
# per-row arrays with them without its check for negative indices (a compare and a select on
# every gathered read; split_sums over 64,000 rows 80 us with int32, 58 with uint32).
ROW_INDEX = np.uint32


def read_only_rows(x) -> np.ndarray:
    """``x`` as a read-only C-contiguous float64 array (a view when it is one already), for a
    kernel's per-row inputs (pseudo-data, precisions).  Numba compiles a kernel once per
    combination of its arguments' types, and whether an array is writable is part of its
    type: pseudo-data that came as a broadcast view (read-only) one time and as a new array
    the next compiled every sweep kernel up to four times (the test suite compiled CGM's
    eight times, a minute each on a cold cache).  One form, one compilation."""
    v = np.ascontiguousarray(x, dtype=np.float64).view()
    v.flags.writeable = False
    return v


class SweepData(NamedTuple):
    """The training rows as the sweep reads them: bins row-major ``Xb`` (n, p) and
    feature-major ``XbT`` (p, n), cutpoints per feature ``ncuts`` (p,), categorical features
    ``iscat`` (p,) and the split probabilities ``split_prior`` (p,)."""

    Xb: np.ndarray
    XbT: np.ndarray
    ncuts: np.ndarray
    iscat: np.ndarray
    split_prior: np.ndarray


class TreeRules(NamedTuple):
    """The tree prior's constants: fewest rows in a leaf, ``alpha``, ``beta`` of the split
    probability ``alpha (1 + depth)^-beta``, and the leaf values' prior precision."""

    min_leaf: int
    alpha: float
    beta: float
    prec0: float


class PseudoRows(NamedTuple):
    """What a conjugate sweep fits the trees to: pseudo-data ``z`` (offset removed) and row
    precisions ``omega``, shape (n,) float64 each (:func:`read_only_rows`); ``omega_const``,
    the common value of ``omega`` when every row has the same precision, else 0 (then
    ``omega`` is read row by row); and ``offset``, added to the trees' sum the sweep
    returns."""

    z: np.ndarray
    omega: np.ndarray
    omega_const: float
    offset: float


class SweepScratch(NamedTuple):
    """Buffers of a sweep, allocated once by :func:`new_scratch`: per row ``r`` (residual),
    ``idx`` (row order), ``tmp`` (partitions); per feature ``hist`` (bin counts), ``lo``,
    ``hi`` (available rules); per node slot ``W``, ``S`` (leaf statistics), ``nW``, ``nS``,
    ``nwav``, ``nnc``, ``seg_s``, ``seg_e``, ``stack``, ``in_sub``; ``nmask`` the proposed
    nodes' masks.  The general step reads ``W``, ``S``, ``nW``, ``nS`` as its own G, H, V
    and spare buffers."""

    r: np.ndarray
    idx: np.ndarray
    hist: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    W: np.ndarray
    S: np.ndarray
    nW: np.ndarray
    nS: np.ndarray
    nwav: np.ndarray
    nnc: np.ndarray
    seg_s: np.ndarray
    seg_e: np.ndarray
    stack: np.ndarray
    in_sub: np.ndarray
    tmp: np.ndarray
    nmask: np.ndarray


def new_scratch(n: int, p: int, max_cuts: int, capacity: int,
                mask_dt: np.dtype = np.dtype(np.int16)) -> SweepScratch:
    """Buffers for one sweep, allocated once by the caller; the node-sized buffers must be
    regrown with the forest's capacity.  ``nmask`` has one extra row per node for the
    proposed masks, plus two, in the forest's ``amask`` dtype ``mask_dt``
    (:func:`~pymc_trees.bart.kernels.forest.mask_dtype`)."""
    from pymc_trees.bart.kernels.forest import mask_width

    K = capacity
    return SweepScratch(
        np.zeros(n), np.zeros(n, ROW_INDEX), np.zeros((p, max_cuts + 1), np.int32),
        np.zeros(p, np.int32), np.zeros(p, np.int32),
        np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K),
        np.zeros(K, np.int32), np.zeros(K, np.int32), np.zeros(K, np.int32),
        np.zeros(K, np.int32), np.zeros(K, np.bool_), np.zeros(n, ROW_INDEX),
        np.zeros((1, K + 2, mask_width(p)), mask_dt),
    )
