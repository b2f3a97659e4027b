"""The boosting objectives on the estimator's side: their names, the gradients and hessians
of a round (through :func:`pymc_trees.boosting.kernels.grad_hess`), the initial margin, and
the evaluation metrics of early stopping."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp

from pymc_trees.boosting.kernels import OBJECTIVE_CODES
from pymc_trees.boosting.kernels import grad_hess as _kernel_grad_hess

__all__ = ["OBJECTIVES", "METRICS", "POISSON_MAX_DELTA_STEP", "grad_hess", "base_margin",
           "weighted_quantile", "metric_value"]

OBJECTIVES = ("reg:squarederror", "count:poisson", "reg:quantileerror", "binary:logistic",
              "multi:softprob")
# log link: XGBoost sets max_delta_step = 0.7 for count:poisson (and uses it in the hessian)
POISSON_MAX_DELTA_STEP = 0.7


# --- objectives: gradient and hessian with respect to the margin ---------------------------


def grad_hess(objective, margin, y, w, alphas, mds, G=None, H=None):
    """g, h of shape (K, n) for margins (n, K); w the sample weights (n,).  ``G``, ``H``:
    buffers to fill (reused across rounds: fresh arrays of a million rows page-fault)."""
    n, K = margin.shape
    if G is None:
        G, H = np.empty((K, n)), np.empty((K, n))
    _kernel_grad_hess(OBJECTIVE_CODES[objective], margin, np.asarray(y, np.float64), w,
                      np.asarray(alphas if alphas is not None else [0.5], np.float64),
                      float(mds), G, H)
    return G, H


def weighted_quantile(y, w, q):
    order = np.argsort(y, kind="stable")
    ys, ws = y[order], w[order]
    cw = np.cumsum(ws)
    return float(ys[min(np.searchsorted(cw, q * cw[-1], side="left"), ys.size - 1)])


def base_margin(objective, base_score, y, w, K, alphas, n_classes):
    """Initial margin per output.  ``base_score`` is on the response scale, as in XGBoost."""
    if base_score is not None:
        b = float(base_score)
        if objective == "binary:logistic":
            if not 0 < b < 1:
                raise ValueError(f"base_score must lie in (0, 1) for binary:logistic; got {b}.")
            return np.full(K, np.log(b / (1 - b)))
        if objective == "count:poisson":
            if not b > 0:
                raise ValueError(f"base_score must be positive for count:poisson; got {b}.")
            return np.full(K, np.log(b))
        if objective == "multi:softprob":
            return np.zeros(K)
        return np.full(K, b)
    if objective == "reg:squarederror":
        return np.full(K, np.average(y, weights=w))
    if objective == "binary:logistic":
        p = np.clip(np.average(y, weights=w), 1e-6, 1 - 1e-6)
        return np.full(K, np.log(p / (1 - p)))
    if objective == "count:poisson":
        return np.full(K, np.log(max(np.average(y, weights=w), 1e-6)))
    if objective == "reg:quantileerror":
        return np.array([weighted_quantile(y, w, a) for a in alphas])
    freq = np.bincount(y.astype(np.int64), weights=w, minlength=n_classes) / w.sum()
    return np.log(np.clip(freq, 1e-6, None))


# --- evaluation metrics ------------------------------------------------------------------


def metric_value(name, margin, y, w, alphas):
    """Weighted metric of margins (n, K) against y (lower is better except auc)."""
    if name == "rmse":
        return float(np.sqrt(np.average((margin[:, 0] - y) ** 2, weights=w)))
    if name == "mae":
        return float(np.average(np.abs(margin[:, 0] - y), weights=w))
    if name == "logloss":
        p = np.clip(expit(margin[:, 0]), 1e-15, 1 - 1e-15)
        return float(np.average(-(y * np.log(p) + (1 - y) * np.log1p(-p)), weights=w))
    if name == "error":
        return float(np.average((margin[:, 0] > 0) != (y > 0.5), weights=w))
    if name == "mlogloss":
        lp = margin - logsumexp(margin, axis=1, keepdims=True)
        return float(np.average(-lp[np.arange(len(y)), y.astype(np.int64)], weights=w))
    if name == "merror":
        return float(np.average(np.argmax(margin, axis=1) != y, weights=w))
    if name == "poisson-nloglik":
        from scipy.special import gammaln

        mu = np.exp(margin[:, 0])
        return float(np.average(mu - y * margin[:, 0] + gammaln(y + 1), weights=w))
    if name == "quantile":
        diff = y[:, None] - margin
        loss = np.where(diff >= 0, alphas[None, :] * diff, (alphas[None, :] - 1) * diff)
        return float(np.average(loss.mean(axis=1), weights=w))
    raise AssertionError(name)  # pragma: no cover


METRICS = {
    "reg:squarederror": ("rmse", "mae"),
    "count:poisson": ("poisson-nloglik", "rmse", "mae"),
    "reg:quantileerror": ("quantile",),
    "binary:logistic": ("logloss", "error"),
    "multi:softprob": ("mlogloss", "merror"),
}
