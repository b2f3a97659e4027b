"""Gradients and hessians of the boosting objectives with respect to the margin, per row
(in parallel over rows), for every output at once."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["OBJECTIVE_CODES", "grad_hess"]


OBJECTIVE_CODES = {"reg:squarederror": 0, "binary:logistic": 1, "multi:softprob": 2,
                   "count:poisson": 3, "reg:quantileerror": 4}


@numba.njit(cache=True, parallel=True)
def grad_hess(code, margin, y, w, alphas, mds, G, H):
    """Gradients and hessians of the loss with respect to the margin, times the sample weights
    ``w``: ``G[k, i]``, ``H[k, i]`` for the margins ``margin`` (n, K) and targets ``y`` (n,);
    ``code`` from ``OBJECTIVE_CODES``.  Squared error: ``m - y``, 1.  Logistic: ``p - y``,
    ``max(p(1-p), 1e-16)``.  Softmax (``y`` the class index): ``p_k - [y = k]``,
    ``max(2 p_k (1-p_k), 1e-16)`` (XGBoost's).  Poisson: ``exp(m) - y``, ``exp(m + mds)``
    (XGBoost inflates the hessian by ``max_delta_step``).  Quantile ``alphas[k]``:
    ``-alpha`` when ``y >= m``, else ``1 - alpha``; 1.  Elementwise, in parallel over rows."""
    n, K = margin.shape
    for i in numba.prange(n):
        wi = w[i]
        if code == 0:
            for k in range(K):
                G[k, i] = (margin[i, k] - y[i]) * wi
                H[k, i] = wi
        elif code == 1:
            for k in range(K):
                pr = 1.0 / (1.0 + np.exp(-margin[i, k]))
                G[k, i] = (pr - y[i]) * wi
                H[k, i] = max(pr * (1.0 - pr), 1e-16) * wi
        elif code == 2:
            mx = margin[i, 0]
            for k in range(1, K):
                mx = max(mx, margin[i, k])
            s = 0.0
            for k in range(K):
                s += np.exp(margin[i, k] - mx)
            lse = mx + np.log(s)
            for k in range(K):
                pr = np.exp(margin[i, k] - lse)
                G[k, i] = (pr - (1.0 if y[i] == k else 0.0)) * wi
                H[k, i] = max(2.0 * pr * (1.0 - pr), 1e-16) * wi
        elif code == 3:
            for k in range(K):
                G[k, i] = (np.exp(margin[i, k]) - y[i]) * wi
                H[k, i] = np.exp(margin[i, k] + mds) * wi
        else:
            for k in range(K):
                G[k, i] = (-alphas[k] if y[i] - margin[i, k] >= 0.0 else 1.0 - alphas[k]) * wi
                H[k, i] = wi
