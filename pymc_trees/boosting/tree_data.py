"""What the boosting estimators hand to their tree growers and get back: the sample weights
and the exact method's sorted columns, the number of numba threads, and the grown trees in
the packed layout shared with BART (:mod:`pymc_trees.core.packed`)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from pymc_trees.core.packed import NODE_DTYPE

__all__ = ["numba_threads", "TreeArrays", "sample_weights", "sorted_columns", "pack_trees",
           "compact_tree"]


@contextmanager
def numba_threads(n_jobs):
    """Run numba's parallel kernels with ``n_jobs`` threads (None or 0: numba's current
    setting; -1: all), restoring the setting afterwards; yields the number used."""
    import numba

    old = numba.get_num_threads()
    if n_jobs is not None and n_jobs != 0:
        top = numba.config.NUMBA_NUM_THREADS
        numba.set_num_threads(max(1, min(top, n_jobs if n_jobs > 0 else top)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(old)


@dataclass
class TreeArrays:
    """The trees of one output, in the packed layout shared with BART."""

    start: np.ndarray  # (n_rounds + 1,)
    nodes: np.ndarray  # NODE_DTYPE
    gain: np.ndarray  # per node, 0 at leaves
    cover: np.ndarray  # per node


def sample_weights(sample_weight, X) -> np.ndarray:
    """Sample weights of shape (n,) (ones when None): non-negative, with a positive sum."""
    w = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative.")
    if not w.sum() > 0:
        raise ValueError("sample_weight must have a positive sum.")
    return w


def sorted_columns(X, live, is_cat) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact method's view of X: X transposed, and per numeric column its present live
    rows in ascending order (``sorted_idx[v, :n_present[v]]``, ties in row order)."""
    n, p = X.shape
    XT = np.ascontiguousarray(X.T)
    n_present = np.zeros(p, np.int64)
    sorted_idx = np.zeros((p, n), np.int64)
    for v in np.flatnonzero(~is_cat):
        rows = np.flatnonzero(~np.isnan(X[:, v]) & live)
        n_present[v] = rows.size
        sorted_idx[v, :rows.size] = rows[np.argsort(X[rows, v], kind="stable")]
    return XT, sorted_idx, n_present


def pack_trees(trees: list) -> "TreeArrays":
    """One output's trees ``(nodes, gains, covers)``, in round order, as one packed forest
    (child links made absolute)."""
    sizes = np.array([t[0].size for t in trees], np.int64)
    start = np.zeros(sizes.size + 1, np.int32)
    start[1:] = np.cumsum(sizes)
    nodes = np.concatenate([t[0] for t in trees])
    nodes["left"] = np.where(nodes["left"] >= 0, nodes["left"] + np.repeat(start[:-1], sizes),
                             -1)
    return TreeArrays(start, nodes, np.concatenate([t[1] for t in trees]),
                   np.concatenate([t[2] for t in trees]))


def compact_tree(feature, threshold, missing_left, cats, left, value, gain, cover):
    """The reachable nodes of a grown tree (pruning may leave unreachable ones) in the packed
    layout: depth-first, the two children of a node side by side; ``left`` relative to the
    tree's root; ``cats`` the codes going left at categorical splits (0 elsewhere)."""
    order = []  # (source node, destination slot)
    dest_left = {}
    stack = [(0, 0)]
    slots = 1
    while stack:
        k, dest = stack.pop()
        order.append((k, dest))
        if feature[k] >= 0:
            dest_left[dest] = slots
            stack.append((int(left[k]) + 1, slots + 1))
            stack.append((int(left[k]), slots))
            slots += 2
    nodes = np.zeros(slots, NODE_DTYPE)
    gains = np.zeros(slots)
    covers = np.zeros(slots)
    for k, dest in order:
        internal = feature[k] >= 0
        nd = nodes[dest:dest + 1]
        nd["feature"] = feature[k]
        nd["left"] = dest_left.get(dest, -1)
        nd["threshold"] = threshold[k] if internal and cats[k] == 0 else 0.0
        nd["value"] = 0.0 if internal else value[k]
        nd["missing_left"] = missing_left[k]
        nd["cats"] = cats[k] if internal else 0
        gains[dest] = gain[k] if internal else 0.0
        covers[dest] = cover[k]
    return nodes, gains, covers
