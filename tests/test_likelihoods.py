"""Tree terms under Bernoulli (probit, logit), Binomial, negative binomial and Student-t
likelihoods (bart-math section 8).

* The augmentation draws against their analytic conditionals: Polya-Gamma mean, variance and
  distribution function (series density), truncated Normals, Gamma scale-mixture weights.
* Exact enumeration for every likelihood with m = 1 on 6 rows: the posterior over the 32 row
  partitions is the tree prior times, per leaf, a one-dimensional quadrature of the likelihood
  against the leaf prior (tests/enumeration.py), compared with the partitions sampled by
  ``pm.sample`` with CGM and with Particle Gibbs (same N_eff-based tolerance as the Normal
  tests), and the posterior mean of f within 4 Monte Carlo standard errors.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_trees as pmt
from enumeration import (check_cells, forest_row_partitions, partition_prior_rows,
                         quadrature_posterior)
from pymc_trees.core import augment
from pymc_trees.core.binning import bin_data, make_cutpoints
from pymc_trees.structure import ModelStructureError

# --- the augmentation draws ---------------------------------------------------------------


def pg_cdf(x, h, c):
    """CDF of PG(h, c) from the alternating-series density of J*(h) (Polson, Scott and Windle
    2013, section 2; PG(h, 0) = J*(h) / 4) tilted by cosh^h(c/2) exp(-c^2 x / 2)."""
    def dens(t):
        if t <= 0:
            return 0.0
        n = np.arange(200)
        terms = ((-1.0) ** n * np.exp(special.gammaln(n + h) - special.gammaln(n + 1))
                 * (2 * n + h) / np.sqrt(2 * np.pi * (4 * t) ** 3)
                 * np.exp(-(2 * n + h) ** 2 / (2 * 4 * t)))
        j = 2**h / special.gamma(h) * terms.sum() * 4
        return j * np.cosh(c / 2) ** h * np.exp(-c**2 * t / 2)
    return np.array([integrate.quad(dens, 0, xi, limit=200)[0] for xi in np.atleast_1d(x)])


@pytest.mark.parametrize("h,c", [(1.0, 0.0), (1.0, 2.5), (2.0, 1.3), (7.0, 4.0),  # Devroye
                                 (2.7, -1.3), (0.4, 0.5), (80.0, 2.0), (5000.5, -3.0)])  # series
def test_polya_gamma_moments_and_distribution(h, c):
    """Mean and variance within 5 standard errors of E and Var[PG(h, c)] (bart-math 8), for
    both branches of ``augment.polya_gamma``; for h <= 7 also the empirical CDF against the
    series CDF at 9 quantiles within 5 binomial standard errors (the alternating series
    cancels catastrophically for large h)."""
    rng = np.random.default_rng(3)
    N = 1_000_000 if h == int(h) and h <= 50 else 200_000  # Devroye is cheap; series not
    x = augment.polya_gamma(rng, np.full(N, h), np.full(N, c))
    mean, var = float(augment.pg_mean(h, c)), float(augment.pg_var(h, c))
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    # the sample variance has sd sqrt((mu4 - var^2) / N), mu4 the 4th central moment (about
    # 1% of var here: a sampler 3% off in variance fails)
    mu4 = float(np.mean((x - x.mean()) ** 4))
    assert abs(x.var() - var) < 5 * math.sqrt((mu4 - var**2) / N), (x.var(), var)
    if h <= 7:
        qs = np.quantile(x, np.linspace(0.1, 0.9, 9))
        exact = pg_cdf(qs, h, c)
        assert np.all(np.abs(exact - np.linspace(0.1, 0.9, 9)) < 5 * math.sqrt(0.25 / N)), exact


def test_pg_moment_formulas_small_c():
    """The series branches of pg_mean / pg_var agree with the closed forms near c = 0."""
    for c in (1e-2, 2e-3):
        assert np.isclose(augment.pg_mean(1.0, c), np.tanh(c / 2) / (2 * c), rtol=1e-9)
    assert np.isclose(augment.pg_var(1.0, 5e-4), augment.pg_var(1.0, 2e-3), rtol=1e-5)
    assert np.isclose(augment.pg_var(1.0, 0.0), 1 / 24)


def test_probit_latents_are_truncated_normals():
    """z | y, eta ~ Normal(eta, 1) truncated to z > 0 (y = 1) or z <= 0 (y = 0), including far
    in the tails: Kolmogorov-Smirnov against scipy's truncnorm for each (y, eta)."""
    rng = np.random.default_rng(4)
    for y, eta in [(1, 0.3), (0, 0.3), (1, -6.0), (0, 9.0), (1, 40.0)]:
        z, w = augment.probit_latents(rng, np.full(20000, y), np.full(20000, eta))
        assert np.all(w == 1.0)
        assert np.all(z > 0) if y else np.all(z <= 0)
        a, b = (-eta, np.inf) if y else (-np.inf, -eta)
        p = stats.kstest(z - eta, stats.truncnorm(a, b).cdf).pvalue
        assert p > 1e-3, (y, eta, p)


def test_student_t_latents_are_gamma():
    """lambda | y, eta ~ Gamma((nu + 1)/2, rate (nu + ((y - eta)/sigma)^2)/2) and
    omega = lambda / sigma^2, z = y (Kolmogorov-Smirnov)."""
    rng = np.random.default_rng(5)
    nu, sigma, y, eta = 3.5, 0.7, 2.0, 0.4
    z, w = augment.student_t_latents(rng, np.full(20000, y), np.full(20000, eta), nu, sigma)
    assert np.all(z == y)
    rate = (nu + ((y - eta) / sigma) ** 2) / 2
    lam = w * sigma**2
    assert stats.kstest(lam, stats.gamma((nu + 1) / 2, scale=1 / rate).cdf).pvalue > 1e-3


def test_logit_latents_give_the_binomial_likelihood():
    """The identity the logit augmentation rests on (Polson, Scott and Windle 2013):
    e^(y eta) / (1 + e^eta)^n = 2^-n e^(kappa eta) E[exp(-omega eta^2 / 2)], omega ~ PG(n, 0),
    kappa = y - n/2, with the expectation a Monte Carlo mean over our PG draws (within 1%)."""
    rng = np.random.default_rng(6)
    n, y = 5.0, 2.0
    omega = augment.polya_gamma(rng, np.full(400_000, n), np.zeros(400_000))
    for eta in (-1.0, 0.4, 1.7):
        mc = math.exp((y - n / 2) * eta) * np.exp(-omega * eta**2 / 2).mean() / 2**n
        exact = math.exp(y * eta) / (1 + math.exp(eta)) ** n
        assert abs(mc / exact - 1) < 0.01, (eta, mc, exact)


# --- exact enumeration, m = 1, six rows ---------------------------------------------------

X6 = np.arange(6.0)[:, None]
ALPHA, BETA = 0.95, 1.0


def _prior():
    cuts, ncuts = make_cutpoints(X6, 100)
    return partition_prior_rows(bin_data(X6, cuts, ncuts), ncuts, ALPHA, BETA)


Y_BIN = np.array([0, 0, 0, 1, 1, 1])
N_TRIALS = np.array([4, 2, 5, 3, 6, 4])
Y_BINOM = np.array([1, 0, 2, 2, 5, 3])
Y_COUNT = np.array([0, 2, 1, 6, 9, 4])
Y_REAL = np.array([-1.2, -0.8, 3.5, 1.0, 1.3, 0.9])

# name: (leaf sd, link, model builder given f, row log-likelihood at leaf value mu)
CASES = {
    "probit": (2.0, "probit",
               lambda f: pm.Bernoulli("y", p=pm.math.invprobit(f), observed=Y_BIN),
               lambda i, mu: stats.norm.logcdf(mu if Y_BIN[i] else -mu)),
    "logit": (2.5, "logit",
              lambda f: pm.Bernoulli("y", p=pm.math.invlogit(0.3 + 1.5 * f), observed=Y_BIN),
              lambda i, mu: Y_BIN[i] * (0.3 + 1.5 * mu) - np.logaddexp(0, 0.3 + 1.5 * mu)),
    "binomial": (1.5, "logit",
                 lambda f: pm.Binomial("y", n=N_TRIALS, logit_p=f, observed=Y_BINOM),
                 lambda i, mu: stats.binom.logpmf(Y_BINOM[i], N_TRIALS[i], special.expit(mu))),
    "negative_binomial": (
        1.0, "log",
        lambda f: pm.NegativeBinomial("y", mu=pm.math.exp(0.8 + f), alpha=3.0,
                                      observed=Y_COUNT),
        lambda i, mu: stats.nbinom.logpmf(Y_COUNT[i], 3.0, 3.0 / (3.0 + np.exp(0.8 + mu)))),
    "student_t": (1.5, "identity",
                  lambda f: pm.StudentT("y", nu=3.0, mu=f, sigma=0.5, observed=Y_REAL),
                  lambda i, mu: stats.t.logpdf(Y_REAL[i], 3.0, loc=mu, scale=0.5)),
}
# draws per chain (2 chains), sized to each sampler's mixing on these problems
DRAWS = {"cgm": 18000, "pg": 8000}


@pytest.mark.parametrize("sampler", ["cgm", "pg"])
@pytest.mark.parametrize("case", list(CASES))
def test_likelihood_matches_enumeration(case, sampler):
    leaf_sd, link, build, loglik = CASES[case]
    prior = _prior()
    post, f_mean = quadrature_posterior(prior, len(X6), loglik, leaf_sd)
    with pm.Model():
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         link=link, sampler=sampler)
        build(f)
        idata = pm.sample(draws=DRAWS[sampler], tune=300, chains=2, cores=1, random_seed=31,
                          progressbar=False, compute_convergence_checks=False)
    parts = [[forest_row_partitions(fr, X6)[0] for fr in ch]
             for ch in pmt.forests(idata, "f").values]
    print(case, sampler, end=": ")
    check_cells(parts, post, {k: prior[k] for k in post})
    draws = idata.posterior["f"]
    got = draws.mean(("chain", "draw")).values
    se = np.asarray(az.mcse(draws.values)).ravel()
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)
