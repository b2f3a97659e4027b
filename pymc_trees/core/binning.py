"""Cutpoints and binned features.

A split rule is a pair ``(v, k)``: a row goes left when ``X[i, v] <= cuts[v, k]``.  With
``bin(x) = #{cutpoints of v strictly below x}`` this is ``bin <= k``, so samplers work on the
binned matrix and prediction at new rows compares raw values with the same thresholds; both give
the same answer for every row.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["BIN_DTYPE", "MISSING_BIN", "make_cutpoints", "bin_data"]

BIN_DTYPE = np.uint16
MAX_NUMCUT = int(np.iinfo(BIN_DTYPE).max) - 1


def _feature_cutpoints(x: np.ndarray, numcut: int, w: np.ndarray | None = None) -> np.ndarray:
    if w is not None and w.size and np.all(w == w[0]):
        w = None  # equal weights: the same quantiles, without the (slower) argsort
    if w is None:
        xs = np.sort(x)
    else:
        order = np.argsort(x, kind="stable")
        xs = x[order]
    if xs.size == 0:
        return np.empty(0)
    first = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    values = xs[first]
    if w is None:
        counts = np.diff(np.append(first, xs.size)).astype(np.float64)
    else:
        counts = np.add.reduceat(w[order], first)
    mids = 0.5 * (values[:-1] + values[1:])
    if mids.size <= numcut:
        return mids
    # More candidates than allowed: keep the midpoints closest to evenly spaced empirical
    # quantiles, so that the bins hold roughly equal numbers of rows.
    below = np.cumsum(counts)[:-1]  # rows (or weight) with x <= mids[i]
    targets = np.arange(1, numcut + 1) * (counts.sum() / (numcut + 1))
    pos = np.clip(np.searchsorted(below, targets), 0, mids.size - 1)
    return mids[np.unique(pos)]


def make_cutpoints(X: np.ndarray, numcut: int = 100, allow_nan: bool = False,
                   weights: np.ndarray | None = None,
                   n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Candidate cutpoints for every feature.

    Parameters
    ----------
    X : ndarray of shape (n, p), dtype float64
        Training rows; no NaN.
    numcut : int
        At most this many cutpoints per feature.  A feature with at most ``numcut + 1``
        distinct values gets every midpoint between consecutive distinct values; otherwise
        ``numcut`` of those midpoints, chosen at evenly spaced empirical quantiles.
    allow_nan : bool, default False
        Accept NaN (missing values; the boosting learner routes them per split): cutpoints
        come from each feature's non-missing values.  Infinite values are always refused.
    weights : ndarray of shape (n,), optional
        Row weights (the boosting learner's sample weights): rows of weight 0 add no
        cutpoints, and the quantiles are weighted, so a weight of 2 acts as a repeated row.
    n_threads : int, default 1
        Features are sorted in this many threads (NumPy's sort releases the GIL); the result
        does not depend on it.

    Returns
    -------
    cuts : ndarray of shape (p, max_cuts), dtype float64
        Row ``v`` holds the sorted cutpoints of feature ``v``, padded with ``+inf``.
    ncuts : ndarray of shape (p,), dtype int32
        Number of cutpoints of each feature (0 for a constant feature).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of shape (n, p); got shape {X.shape}.")
    bad = np.isinf(X) if allow_nan else ~np.isfinite(X)
    if np.any(bad):
        raise ValueError("X contains NaN or infinite values; impute or drop them first."
                         if not allow_nan else "X contains infinite values; replace them.")
    if not 1 <= numcut <= MAX_NUMCUT:
        raise ValueError(f"numcut must be between 1 and {MAX_NUMCUT}; got {numcut}.")
    w_all = None if weights is None else np.asarray(weights, dtype=np.float64)

    def one(v):
        x = X[:, v]
        keep = ~np.isnan(x) if allow_nan else np.ones(x.size, bool)
        if w_all is not None:
            keep &= w_all > 0
        x = x[keep]
        w = None if w_all is None else w_all[keep]
        return _feature_cutpoints(x, numcut, w) if x.size else np.empty(0)

    if n_threads > 1 and X.shape[1] > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(n_threads, X.shape[1])) as pool:
            per_feature = list(pool.map(one, range(X.shape[1])))
    else:
        per_feature = [one(v) for v in range(X.shape[1])]
    ncuts = np.array([c.size for c in per_feature], dtype=np.int32)
    cuts = np.full((X.shape[1], max(1, int(ncuts.max(initial=0)))), np.inf)
    for v, c in enumerate(per_feature):
        cuts[v, : c.size] = c
    return cuts, ncuts


MISSING_BIN = int(np.iinfo(BIN_DTYPE).max)  # the bin of a NaN (never a real bin)


@numba.njit(cache=True)
def _bin_kernel(X, cuts, ncuts, out):
    n, p = X.shape
    for v in range(p):
        c = cuts[v, : ncuts[v]]
        for i in range(n):
            x = X[i, v]
            out[i, v] = MISSING_BIN if x != x else np.searchsorted(c, x, side="left")


def bin_data(X: np.ndarray, cuts: np.ndarray, ncuts: np.ndarray) -> np.ndarray:
    """Bin rows against cutpoints.

    Returns
    -------
    ndarray of shape (n, p), dtype uint16
        ``out[i, v]`` is the number of cutpoints of feature ``v`` strictly below ``X[i, v]``
        (``MISSING_BIN`` when ``X[i, v]`` is NaN).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty(X.shape, dtype=BIN_DTYPE)
    _bin_kernel(X, cuts, ncuts, out)
    return out
