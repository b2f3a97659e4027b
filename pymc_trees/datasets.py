"""Simulated benchmark problems with known regression functions."""

from __future__ import annotations

import numpy as np

__all__ = ["friedman1", "friedman1_f"]


def friedman1_f(X: np.ndarray) -> np.ndarray:
    """Friedman #1 regression function of the first five columns of X (shape (n, >=5))."""
    return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
            + 10 * X[:, 3] + 5 * X[:, 4])


def friedman1(n: int, p: int = 10, noise_sd: float = 1.0,
              rng: np.random.Generator | int | None = None):
    """Friedman #1: X ~ Uniform(0, 1)^p, y = f(X) + Normal(0, noise_sd^2).

    Returns
    -------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    f : ndarray of shape (n,), the true regression function at X
    """
    if p < 5:
        raise ValueError(f"Friedman #1 needs p >= 5 columns; got p={p}.")
    rng = np.random.default_rng(rng)
    X = rng.uniform(size=(n, p))
    f = friedman1_f(X)
    return X, f + noise_sd * rng.standard_normal(n), f
