"""Univariate slice sampling (Neal 2003, figures 3 and 5: stepping out, then shrinkage), the one
transition every Python-level update of one scalar uses: a learned leaf scale and its
non-centred draw, a hyperparameter of the leaf scale or of the split prior, the level shift
of log-gamma leaves.  (DART's concentration is drawn by the same transition inside its
kernel, :func:`pymc_trees.bart.kernels.forest.dart_concentration_draw`, which numba compiles
with its density.)
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["slice_sample"]


def slice_sample(rng: np.random.Generator, x0: float, logf: Callable[[float], float], w: float,
                 max_steps: int | None = None, fix: str = "") -> float:
    """One slice-sampling transition from ``x0`` that leaves the density proportional to
    ``exp(logf)`` invariant.

    Parameters
    ----------
    rng : numpy.random.Generator
    x0 : float
        The current state; ``logf(x0)`` must be finite.
    logf : callable
        The log density up to a constant, float to float (-inf outside the support).
    w : float
        The width of a step out.
    max_steps : int, optional
        At most this many widths in all, split at random between the two sides (Neal's
        figure 3); None steps out until both ends leave the slice (for a log-concave
        density, where that ends).
    fix : str
        What the error below tells the user to do.

    Returns
    -------
    float
        The new state.

    Raises
    ------
    FloatingPointError
        When ``logf(x0)`` is not finite: the shrinkage would never end, so the update says
        so rather than hang.
    """
    logy = logf(x0) - rng.standard_exponential()
    if not np.isfinite(logy):
        raise FloatingPointError(
            f"A slice-sampling update started at {x0!r}, where its log density is "
            f"{logy + 0.0!r}: the state it conditions on has left the range the density is "
            f"finite in. {fix}".rstrip())
    lo = x0 - w * rng.uniform()
    hi = lo + w
    if max_steps is None:
        while logf(lo) > logy:
            lo -= w
        while logf(hi) > logy:
            hi += w
    else:
        j = int(np.floor(max_steps * rng.uniform()))
        k = max_steps - 1 - j
        while j > 0 and logf(lo) > logy:
            lo -= w
            j -= 1
        while k > 0 and logf(hi) > logy:
            hi += w
            k -= 1
    while True:
        x1 = lo + (hi - lo) * rng.uniform()
        if logf(x1) > logy:
            return x1
        if x1 < x0:
            lo = x1
        else:
            hi = x1
