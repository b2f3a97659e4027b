"""Default prior calibration of Chipman, George and McCulloch (2010), bart-math section 3."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["leaf_calibration", "noise_prior"]


def leaf_calibration(Y=None, *, leaf_sd: float | None = None, k: float = 2.0,
                     m: int = 200) -> tuple[float, float]:
    """Offset and leaf prior sd of a sum-of-trees term.

    With ``Y``: the prior of f(x) is centred at ``(max Y + min Y) / 2`` with sd
    ``(max Y - min Y) / (2 k)``, i.e. ``leaf_sd = (max Y - min Y) / (2 k sqrt(m))``.
    An explicit ``leaf_sd`` overrides the scale; without ``Y`` the offset is 0.

    Returns
    -------
    (offset, leaf_sd) : tuple of float
    """
    if Y is None and leaf_sd is None:
        raise ValueError("BARTTree needs Y (to calibrate the prior of f from the range of the "
                         "response) or leaf_sd (the prior sd of every leaf value); give one.")
    offset = 0.0
    sd = None
    if Y is not None:
        y = np.asarray(Y, dtype=float).ravel()
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise ValueError("Y must be a non-empty array of finite numbers.")
        offset = 0.5 * (y.max() + y.min())
        spread = y.max() - y.min()
        if leaf_sd is None:
            if spread <= 0:
                raise ValueError("Y is constant, so it cannot calibrate the leaf scale; "
                                 "pass leaf_sd explicitly.")
            if not k > 0:
                raise ValueError(f"k must be positive; got {k!r}.")
            sd = spread / (2.0 * k * np.sqrt(m))
    if leaf_sd is not None:
        sd = float(leaf_sd)
        if not (np.isfinite(sd) and sd > 0):
            raise ValueError(f"leaf_sd must be a positive finite number; got {leaf_sd!r}.")
    return float(offset), float(sd)


def noise_prior(X, y, nu: float = 3.0, q: float = 0.9) -> tuple[float, float]:
    """InverseGamma ``(alpha, beta)`` for the noise variance sigma^2.

    ``sigma^2 ~ InverseGamma(nu/2, nu*lambda/2)`` with lambda chosen so that
    ``P(sigma < sigma_hat) = q``, where ``sigma_hat`` is the residual sd of a least-squares fit
    of y on X with an intercept (the sd of y when p + 1 >= n).

    Parameters
    ----------
    X : array_like of shape (n, p)
    y : array_like of shape (n,)
    nu : float, default 3
    q : float, default 0.9

    Returns
    -------
    (alpha, beta) : tuple of float
        Use as ``pm.InverseGamma("sigma2", *noise_prior(X, y))``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).ravel()
    if X.ndim != 2 or X.shape[0] != y.size:
        raise ValueError(f"X must have shape (n, p) with n = len(y) = {y.size}; got {X.shape}.")
    if not (nu > 0 and 0 < q < 1):
        raise ValueError(f"need nu > 0 and 0 < q < 1; got nu={nu!r}, q={q!r}.")
    n, p = X.shape
    if p + 1 < n:
        A = np.column_stack([np.ones(n), X])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        resid = y - A @ coef
        sigma_hat = np.sqrt(resid @ resid / (n - np.linalg.matrix_rank(A)))
    else:
        sigma_hat = np.std(y, ddof=1)
    lam = sigma_hat**2 * stats.chi2.ppf(1.0 - q, nu) / nu
    return float(nu / 2.0), float(nu * lam / 2.0)
