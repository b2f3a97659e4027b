"""The flat forest: m trees stored as a struct of arrays, plus the per-row leaf index.

Every array has the trees on axis 0 and node slots on axis 1.  Slot 0 is always the root.
``var[t, k]`` is the split feature of an internal node, ``LEAF`` (-1) for a leaf and ``FREE`` (-2)
for an unused slot.  Kernels receive these arrays directly; the same layout holds the particles
of a particle sampler (one "tree" per particle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["LEAF", "FREE", "Forest", "new_forest", "forest_values"]

LEAF = -1
FREE = -2


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
    n_nodes : ndarray of shape (m,), dtype int32
        High-water mark of used slots.
    free, n_free : ndarray of shape (m, K) and (m,), dtype int32
        Stack of freed slots below the high-water mark.
    leaf_of_row : ndarray of shape (m, n), dtype int32
        Leaf slot holding each training row, per tree.
    """

    var: np.ndarray
    cut: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    value: np.ndarray
    wavail: np.ndarray
    ncut: np.ndarray
    n_nodes: np.ndarray
    free: np.ndarray
    n_free: np.ndarray
    leaf_of_row: np.ndarray

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

    def copy(self) -> "Forest":
        return Forest(**{k: v.copy() for k, v in self.__dict__.items()})


def new_forest(m: int, n: int, root_wavail: float, capacity: int = 32) -> Forest:
    """m single-leaf trees with leaf value 0 holding all n rows."""
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
        n_nodes=np.ones(m, np.int32),
        free=np.zeros((m, capacity), np.int32),
        n_free=np.zeros(m, np.int32),
        leaf_of_row=np.zeros((m, n), np.int32),
    )
    f.var[:, 0] = LEAF
    f.wavail[:, 0] = root_wavail
    return f


@numba.njit(cache=True)
def forest_values(value, leaf_of_row, offset, out):
    """``out[i] = offset + sum_t value[t, leaf_of_row[t, i]]``, summed in tree order.

    The summation order is the one used by prediction from packed forests, so the two agree
    to the last bit.
    """
    m, n = leaf_of_row.shape
    for i in range(n):
        out[i] = offset
    for t in range(m):
        for i in range(n):
            out[i] += value[t, leaf_of_row[t, i]]
