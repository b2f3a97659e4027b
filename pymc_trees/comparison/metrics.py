"""Scores of predictive distributions at held-out rows, as :func:`~pymc_trees.comparison.compare`
reports them (``docs/compare.md``): the CRPS of a sample and of Normal, Poisson and Bernoulli
distributions, the coverage and width of central intervals, reliability bins of predicted
probabilities, and the pooled metrics of one model over a set of held-out rows.  Quantiles are
kept in dictionaries keyed by :func:`quantile_key`."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import ndtr, pdtr

__all__ = ["LEVELS", "LEVEL", "crps_sample", "crps_normal", "crps_poisson", "crps_bernoulli",
           "interval_coverage", "reliability_bins", "calibration_error", "quantile_key",
           "interval_ends", "central_levels", "pooled_metrics"]

#: nominal levels of the central intervals whose coverage is the calibration of a regression
#: or count model; the table reports the 90% one
LEVELS = (0.5, 0.8, 0.9, 0.95)
LEVEL = 0.9
RELIABILITY_BINS = 10


def crps_sample(draws: np.ndarray, y: np.ndarray) -> np.ndarray:
    """CRPS of the empirical distribution of a sample at the observed values.

    ``CRPS(F, y) = E|X - y| - E|X - X'| / 2`` with X, X' independent draws of F, here the
    empirical distribution of ``draws`` (so it is the exact CRPS of that distribution; as an
    estimate of the CRPS of the distribution the draws come from it is biased upwards by
    ``E|X - X'| / (2S)``).  The pair term is taken from the sorted draws:
    ``sum_{s,t} |x_s - x_t| = 2 sum_i (2i - S - 1) x_(i)``.

    Parameters
    ----------
    draws : ndarray of shape (S, n)
        S draws of the predictive distribution at each of n rows.
    y : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_trees.comparison import crps_sample
    >>> draws = np.random.default_rng(0).normal(size=(1000, 3))    # (draws, rows)
    >>> score = crps_sample(draws, np.array([0.0, 1.0, -2.0]))       # shape (3,)
    """
    x = np.sort(np.asarray(draws, dtype=float), axis=0)
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or x.shape[1] != y.shape[0]:
        raise ValueError(f"draws must have shape (S, n) with n = len(y) = {y.shape[0]}; got "
                         f"{x.shape}.")
    S = x.shape[0]
    abs_dev = np.abs(x - y[None, :]).mean(axis=0)
    weights = (2.0 * np.arange(1, S + 1) - S - 1.0)[:, None]
    pairs = (weights * x).sum(axis=0) / S**2           # E|X - X'| / 2
    return abs_dev - pairs


def crps_normal(mu, sigma, y) -> np.ndarray:
    """CRPS of Normal(mu, sigma^2) at y (Gneiting and Raftery 2007, closed form):
    ``sigma * (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi))`` with ``z = (y - mu) / sigma``.

    Parameters
    ----------
    mu, sigma, y : array_like, broadcastable to shape (n,)

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        For a sigma at or below 0.

    Examples
    --------
    >>> from pymc_trees.comparison import crps_normal
    >>> score = crps_normal([0.0, 1.0], 1.0, [0.5, 3.0]).mean()   # lower is better
    """
    mu, sigma, y = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (mu, sigma, y)))
    if np.any(sigma <= 0):
        raise ValueError("sigma must be positive.")
    z = (y - mu) / sigma
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)
    return sigma * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / np.sqrt(np.pi))


def crps_poisson(mu, y, chunk: int = 4096) -> np.ndarray:
    """CRPS of Poisson(mu) at integer y: ``sum_k (F(k) - 1[y <= k])^2`` over k = 0, 1, ...
    (both distribution functions are steps at the integers), summed until F is within 1e-12
    of 1 beyond y.

    Parameters
    ----------
    mu : array_like of shape (n,)
        Positive means.
    y : array_like of shape (n,)
        Non-negative integers.
    chunk : int
        Rows per vectorised block (bounds memory).

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        When some ``mu`` is not positive.

    Examples
    --------
    >>> from pymc_trees.comparison import crps_poisson
    >>> crps_poisson([2.0, 2.0], [0, 2]).round(3)
    array([1.228, 0.311])
    """
    mu, y = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(y, dtype=float))
    mu, y = mu.ravel(), y.ravel()
    if np.any(mu <= 0):
        raise ValueError("mu must be positive.")
    out = np.empty(mu.size)
    for a in range(0, mu.size, chunk):
        m, yy = mu[a:a + chunk], y[a:a + chunk]
        top = int(max(yy.max(), (m + 12 * np.sqrt(m) + 30).max()))
        k = np.arange(top + 1, dtype=float)[None, :]
        F = pdtr(k, m[:, None])
        out[a:a + chunk] = ((F - (yy[:, None] <= k)) ** 2).sum(axis=1)
    return out


def crps_bernoulli(p, y) -> np.ndarray:
    """CRPS of a 0/1 outcome with P(y = 1) = p: the Brier score ``(p - y)^2``.

    Parameters
    ----------
    p, y : array_like of shape (n,)

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        When some ``p`` lies outside [0, 1] or some ``y`` is not 0 or 1.

    Examples
    --------
    >>> from pymc_trees.comparison import crps_bernoulli
    >>> crps_bernoulli([0.9, 0.2], [1, 1])
    array([0.01, 0.64])
    """
    p, y = _probabilities_and_outcomes(p, y)
    return (p - y) ** 2


def _probabilities_and_outcomes(p, y) -> tuple[np.ndarray, np.ndarray]:
    """``p`` and ``y`` as float arrays of one shape, refused when p leaves [0, 1] or y is not
    0/1 (a probability on another scale, or classes coded otherwise, would score silently
    wrong)."""
    p, y = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(y, dtype=float))
    if np.any(~((p >= 0) & (p <= 1))):
        raise ValueError("p must hold probabilities in [0, 1] (not logits or percentages).")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("y must hold 0/1 outcomes; recode the classes as 0 and 1.")
    return p, y


def interval_coverage(lo, hi, y) -> tuple[float, float]:
    """Share of rows with ``lo <= y <= hi`` (ends included) and the mean width ``hi - lo``.

    Parameters
    ----------
    lo, hi, y : array_like of shape (n,)

    Returns
    -------
    (coverage, width) : tuple of float

    Raises
    ------
    ValueError
        When some ``hi`` is below its ``lo``.

    Examples
    --------
    >>> from pymc_trees.comparison import interval_coverage
    >>> coverage, width = interval_coverage([0, 0, 0], [1, 2, 1], [0.5, 2.5, 1.0])  # 2/3, 4/3
    """
    lo, hi, y = (np.asarray(a, dtype=float) for a in (lo, hi, y))
    if np.any(hi < lo):
        raise ValueError("every interval needs lo <= hi.")
    return float(np.mean((lo <= y) & (y <= hi))), float(np.mean(hi - lo))


def reliability_bins(p, y, bins: int = RELIABILITY_BINS) -> pd.DataFrame:
    """Reliability of predicted probabilities: rows grouped by p in ``bins`` equal-width bins
    of [0, 1] (the last bin closed).

    Parameters
    ----------
    p : array_like of shape (n,)
        Predicted P(y = 1).
    y : array_like of shape (n,)
        0/1 outcomes.
    bins : int

    Returns
    -------
    DataFrame with one row per non-empty bin
        ``lower``, ``upper``, ``n``, ``mean_predicted``, ``observed`` (the share of y = 1).
        The expected calibration error is ``sum(n * |mean_predicted - observed|) / sum(n)``.

    Raises
    ------
    ValueError
        When some ``p`` lies outside [0, 1], some ``y`` is not 0 or 1, or ``bins`` is not a
        positive integer.

    Examples
    --------
    >>> from pymc_trees.comparison import reliability_bins
    >>> reliability_bins([0.1, 0.15, 0.8, 0.95], [0, 1, 1, 1], bins=2)
       lower  upper  n  mean_predicted  observed
    0    0.0    0.5  2           0.125       0.5
    1    0.5    1.0  2           0.875       1.0
    """
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive integer; got {bins!r}.")
    p, y = _probabilities_and_outcomes(p, y)
    p, y = p.ravel(), y.ravel()
    which = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        sel = which == b
        if sel.any():
            rows.append({"lower": b / bins, "upper": (b + 1) / bins, "n": int(sel.sum()),
                         "mean_predicted": float(p[sel].mean()),
                         "observed": float(y[sel].mean())})
    return pd.DataFrame(rows, columns=["lower", "upper", "n", "mean_predicted", "observed"])


def calibration_error(bins: pd.DataFrame) -> float:
    return float((bins["n"] * (bins["mean_predicted"] - bins["observed"]).abs()).sum()
                 / bins["n"].sum())


def quantile_key(q: float) -> int:
    """Dictionary key of a quantile level (millionths, free of float rounding)."""
    return int(round(float(q) * 1e6))


def interval_ends(quantiles: dict, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Ends of the central interval of a level from quantiles keyed by :func:`quantile_key`."""
    return quantiles[quantile_key((1 - level) / 2)], quantiles[quantile_key((1 + level) / 2)]


def central_levels(levels=LEVELS) -> np.ndarray:
    """Quantile levels of the central intervals, and the median: shape (2 L + 1,)."""
    a = np.array([(1 - c) / 2 for c in levels])
    return np.unique(np.concatenate([a, [0.5], 1 - a]))


def pooled_metrics(task, rows: dict[str, np.ndarray], y: np.ndarray, levels) -> dict:
    """Pooled metrics of one model over a set of held-out rows."""
    out: dict[str, float] = {}
    if task == "classification":
        out["log loss"] = float(rows["loss"].mean())
        out["accuracy"] = float(np.mean((rows["point"] > 0.5) == (y == 1)))
    else:
        out["RMSE"] = float(np.sqrt(rows["loss"].mean()))
    out["log predictive density"] = float(rows["lpd"].mean())
    out["CRPS"] = float(rows["crps"].mean())
    if task == "classification":
        out["calibration error"] = calibration_error(reliability_bins(rows["point"], y))
    else:
        cov, width = interval_coverage(*interval_ends(rows["quantiles"], LEVEL), y)
        out[f"coverage {LEVEL:.0%}"] = cov
        out[f"width {LEVEL:.0%}"] = width
        errs = []
        for c in levels:
            cov, _ = interval_coverage(*interval_ends(rows["quantiles"], c), y)
            errs.append(abs(cov - c))
        out["calibration error"] = float(np.mean(errs))
    return out
