"""Exact data augmentations for non-Gaussian likelihoods (docs/math.md section 8).

Each function draws the per-row latent variables of one likelihood given the current linear
predictor ``eta`` (shape (n,)) and the data, and returns ``(z, omega)``: given the latents, the
likelihood of eta is ``Normal(z_i, 1/omega_i)`` per row, so the Gaussian tree update runs on them
unchanged.  Knows nothing of PyMC; the generator is always passed in.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from polyagamma import random_polyagamma
from scipy.special import log_ndtr, ndtri_exp

__all__ = ["as_rows", "probit_latents", "logit_latents", "student_t_latents",
           "asymmetric_laplace_latents", "polya_gamma", "pg_mean", "pg_var"]


def as_rows(x, shape: tuple) -> np.ndarray:
    """``x`` as float64 of ``shape``: itself when it has that shape already, else a
    broadcast view (``np.broadcast_to`` costs about 10 us a call, several a sweep of a small
    model)."""
    x = np.asarray(x, dtype=np.float64)
    return x if x.shape == shape else np.broadcast_to(x, shape)


def probit_latents(rng: np.random.Generator, y: np.ndarray,
                   eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Albert and Chib (1993): ``z_i ~ Normal(eta_i, 1)`` truncated to ``(0, inf)`` when
    ``y_i = 1`` and to ``(-inf, 0]`` when ``y_i = 0``; ``omega_i = 1``.

    Inverse-CDF in log space (``log_ndtr`` / ``ndtri_exp``), so it stays exact however far
    the truncation point lies in the tail.  One uniform per row.
    """
    eta = np.asarray(eta, dtype=np.float64)
    u = rng.random(eta.shape)
    log_u = np.log1p(-u)  # uniform on (0, 1]; log(0) never happens
    pos = np.asarray(y) > 0.5
    # y = 1: e = z - eta > -eta, e = -Phi^-1(U Phi(eta)); y = 0: e <= -eta, e = Phi^-1(U Phi(-eta))
    s = np.where(pos, -1.0, 1.0)
    e = s * ndtri_exp(log_u + log_ndtr(-s * eta))
    z = eta + e
    # guard the boundary against rounding (z = 0 exactly is on the y = 0 side)
    z = np.where(pos, np.maximum(z, np.nextafter(0.0, 1.0)), np.minimum(z, 0.0))
    return z, np.ones_like(eta)


# Integer h up to this many are drawn exactly as sums of h Devroye PG(1, c) draws.
PG_DEVROYE_MAX = 50
# Terms of the gamma series drawn one by one for the other h (see polya_gamma).
PG_SERIES_TERMS = 20


def polya_gamma(rng: np.random.Generator, h: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Draws of ``PG(h_i, c_i)`` (Polson, Scott and Windle 2013) from ``rng``; rows with
    ``h_i = 0`` give 0 (no information).

    * Integer ``h <= 50`` (Bernoulli and most Binomial rows): exact, the sum of h draws of
      Devroye's PG(1, c) sampler (the ``polyagamma`` package, ``method="devroye"``).
    * Other h (the negative binomial's ``y + alpha``, large trial counts): the defining series
      ``PG(h, c) = 1/(2 pi^2) sum_k g_k w_k``, ``w_k = 1 / ((k - 1/2)^2 + c^2/(4 pi^2))``,
      ``g_k ~ Gamma(h, 1)`` independent.  The first 20 terms are drawn one by one; the rest,
      ``sum_{k>20} g_k w_k``, is drawn as one Gamma with its exact mean ``h sum_{k>20} w_k``
      and variance ``h sum_{k>20} w_k^2`` (from the closed forms of E and Var of PG(1, c)).
      The mean and variance of the draw are exact; only the higher cumulants of that remainder
      differ, and the remainder carries under 1e-8 of the draw's third cumulant.

    The ``polyagamma`` package's default (hybrid) method is not used: its "alternate" and
    "saddle" branches miss the variance of PG(2, 1.3) by +3% and -15%
    (``tests/test_likelihoods.py`` checks every branch used here).
    """
    h = np.asarray(h, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if h.shape != c.shape:
        h, c = np.broadcast_arrays(h, c)
    out = np.zeros(h.shape)
    exact = (h > 0) & (h <= PG_DEVROYE_MAX) & (h == np.round(h))
    series = (h > 0) & ~exact
    if np.any(exact):
        out[exact] = random_polyagamma(np.ascontiguousarray(h[exact]),
                                       np.ascontiguousarray(c[exact]), random_state=rng,
                                       method="devroye")
    if np.any(series):
        hs = np.ascontiguousarray(h[series])
        cs = np.ascontiguousarray(c[series])
        draws = np.empty(hs.size)
        _pg_series(rng, hs, cs, PG_SERIES_TERMS, draws)
        out[series] = draws
    return out


@njit(cache=True)
def _pg1_sums(c):
    """``(sum_k w_k, sum_k w_k^2)`` over all k >= 1 for PG(1, c), from
    ``E = tanh(c/2) / (2c) = sum w / (2 pi^2)`` and
    ``Var = (sinh c - c) / (4 c^3 cosh^2(c/2)) = sum w^2 / (4 pi^4)``, evaluated without
    cancellation: ``(sinh c - c) / c^3`` as a power series below |c| = 1, and
    ``sinh c = 2 tanh(c/2) cosh^2(c/2)`` above."""
    ac = abs(c)
    pi2 = np.pi**2
    t = np.tanh(ac / 2)
    s1 = pi2 * t / ac if ac > 1e-4 else pi2 * (0.5 - ac * ac / 24)
    ch2 = np.cosh(ac / 2) ** 2  # inf for huge c: then ac / ch2 = 0, as it should be
    if ac < 1.0:
        sh = 0.0  # (sinh c - c) / c^3 = sum_{j>=1} c^(2j-2) / (2j+1)!, 12 terms: < 1e-26
        term = 1.0 / 6.0
        p = 1.0
        for j in range(1, 13):
            sh += term * p
            p *= ac * ac
            term /= (2 * j + 2) * (2 * j + 3)
        return s1, pi2 * pi2 * sh / ch2
    return s1, pi2 * pi2 * (2 * t - ac / ch2) / ac**3


@njit(cache=True)
def _pg_series(rng, h, c, K, out):
    two_pi2 = 2.0 * np.pi**2
    for i in range(h.size):
        d2 = (c[i] / (2.0 * np.pi)) ** 2
        s = 0.0
        head1 = 0.0
        head2 = 0.0
        for k in range(1, K + 1):
            w = 1.0 / ((k - 0.5) ** 2 + d2)
            head1 += w
            head2 += w * w
            s += rng.standard_gamma(h[i]) * w
        all1, all2 = _pg1_sums(c[i])
        t1 = all1 - head1
        t2 = all2 - head2
        if t1 > 0.0 and t2 > 0.0:
            # remainder sum_{k>K} g_k w_k: one Gamma with its exact mean and variance
            s += rng.standard_gamma(h[i] * t1 * t1 / t2) * (t2 / t1)
        out[i] = s / two_pi2


def logit_latents(rng: np.random.Generator, successes: np.ndarray, trials: np.ndarray,
                  eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polya-Gamma augmentation of ``successes_i ~ Binomial(trials_i, sigmoid(eta_i))``:
    ``omega_i ~ PG(trials_i, eta_i)``, ``z_i = kappa_i / omega_i`` with
    ``kappa_i = successes_i - trials_i / 2``.  The negative binomial is this with
    ``successes = alpha`` and ``trials = y + alpha`` in ``eta = logit p`` (docs/math.md section 8).
    Rows with no trials get ``omega = 0`` and ``z = 0``."""
    eta = np.asarray(eta, dtype=np.float64)
    trials = as_rows(trials, eta.shape)
    omega = polya_gamma(rng, trials, eta)
    kappa = np.asarray(successes, dtype=np.float64) - 0.5 * trials
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(omega > 0, kappa / omega, 0.0)
    return z, omega


def student_t_latents(rng: np.random.Generator, y: np.ndarray, eta: np.ndarray, nu,
                      sigma) -> tuple[np.ndarray, np.ndarray]:
    """Scale mixture of Normals for ``y_i ~ StudentT(nu, eta_i, sigma_i)``:
    ``lambda_i ~ Gamma((nu + 1) / 2, rate = (nu + ((y_i - eta_i) / sigma_i)^2) / 2)``, then
    ``z_i = y_i`` and ``omega_i = lambda_i / sigma_i^2``."""
    eta = np.asarray(eta, dtype=np.float64)
    # nu and sigma as they come (numpy broadcasts them against the rows: the same draws)
    nu = np.asarray(nu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    y = as_rows(y, eta.shape)
    rate = 0.5 * (nu + ((y - eta) / sigma) ** 2)
    lam = rng.gamma(0.5 * (nu + 1.0), 1.0 / rate)
    return np.array(y), lam / sigma**2


def asymmetric_laplace_latents(rng: np.random.Generator, y: np.ndarray, eta: np.ndarray, b,
                               kappa) -> tuple[np.ndarray, np.ndarray]:
    """Normal-exponential mixture for ``y_i ~ AsymmetricLaplace(b, kappa, mu=eta_i)`` (PyMC's
    parametrisation: density ``b / (kappa + 1/kappa) exp(-u b kappa)`` for ``u = y - eta > 0``
    and ``exp(u b / kappa)`` for u < 0; quantile ``q`` when ``kappa = sqrt(q / (1 - q))``).

    With ``v_i ~ Exp(1)`` and ``u_i | v_i ~ Normal(theta v_i, tau^2 v_i)``,
    ``theta = (1/kappa - kappa) / b`` and ``tau^2 = 2 / b^2``, u has that density (Kozumi and
    Kobayashi 2011, with the exponential's scale fixed to one).  Given u,
    ``v_i ~ GIG(1/2, chi = u_i^2 / tau^2, psi = theta^2 / tau^2 + 2)``, i.e. ``1 / v_i`` is
    inverse Gaussian with mean ``sqrt(psi / chi)`` and shape psi (``v_i ~ Gamma(1/2, rate
    psi / 2)`` at u = 0).  Then ``z_i = y_i - theta v_i`` and ``omega_i = 1 / (tau^2 v_i)``.
    """
    eta = np.asarray(eta, dtype=np.float64)
    # b and kappa as they come (numpy broadcasts them against the rows: the same draws)
    b = np.asarray(b, dtype=np.float64)
    kappa = np.asarray(kappa, dtype=np.float64)
    y = as_rows(y, eta.shape)
    theta = (1.0 / kappa - kappa) / b
    tau2 = 2.0 / (b * b)
    psi = theta * theta / tau2 + 2.0
    absu = np.abs(y - eta)
    pos = absu > 0
    with np.errstate(divide="ignore"):
        mean = np.sqrt(psi * tau2) / np.where(pos, absu, 1.0)
    inv_v = rng.wald(mean, psi)
    v = np.where(pos, 1.0 / inv_v, 0.0)
    if not np.all(pos):
        v[~pos] = rng.gamma(0.5, 2.0 / as_rows(psi, eta.shape)[~pos])
    return y - theta * v, 1.0 / (tau2 * v)


def pg_mean(h, c):
    """``E[PG(h, c)] = h / (2c) tanh(c / 2)`` (``h / 4`` at c = 0)."""
    h, c = np.asarray(h, float), np.abs(np.asarray(c, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 1e-6, h / (2 * c) * np.tanh(c / 2), h / 4 * (1 - c**2 / 12))


def pg_var(h, c):
    """``Var[PG(h, c)] = h (sinh c - c) / (4 c^3 cosh^2(c / 2))`` (``h / 24`` at c = 0)."""
    h, c = np.asarray(h, float), np.abs(np.asarray(c, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = h * (np.sinh(c) - c) / (4 * c**3 * np.cosh(c / 2) ** 2)
    return np.where(c > 1e-3, v, h / 24 * (1 - c**2 / 5))
