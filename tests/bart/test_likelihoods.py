"""Tree terms under Bernoulli (probit, logit), Binomial, negative binomial, Student-t and
asymmetric Laplace likelihoods (docs/math.md section 8).

* The augmentation draws against their analytic conditionals: Polya-Gamma mean, variance and
  distribution function (series density), truncated Normals, Gamma scale-mixture weights,
  the asymmetric Laplace's normal-exponential mixture and its inverse-Gaussian conditional.
* Exact enumeration for every likelihood with m = 1 on 6 rows: the posterior over the 32 row
  partitions is the tree prior times, per leaf, a one-dimensional quadrature of the likelihood
  against the leaf prior (tests/enumeration.py), compared with the partitions sampled by
  ``pm.sample`` with CGM and with Particle Gibbs (same N_eff-based tolerance as the Normal
  tests), and the posterior mean of f within 4 Monte Carlo standard errors.
"""

from __future__ import annotations

import functools

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_trees as pmt
from enumeration import (X6, check_cells, forest_row_partitions, quadrature_posterior,
                         six_row_prior)
from pymc_trees.bart.kernels import augment

# the augmentations' tests: normal leaves (by default, leaf_prior="auto" gives a negative
# binomial mean log-gamma leaves, its Gamma-Poisson mixture)
BARTTree = functools.partial(pmt.BARTTree, leaf_prior="normal")

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
    """Mean and variance within 5 standard errors of E and Var[PG(h, c)] (docs/math.md, 8), for
    both branches of ``augment.polya_gamma``; for h <= 7 also the empirical CDF against the
    series CDF at 9 quantiles within 5 binomial standard errors (the alternating series
    cancels catastrophically for large h)."""
    rng = np.random.default_rng(3)
    N = 1_000_000
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
    """The series branches of pg_mean / pg_var (c < 1e-6 and c < 1e-3) agree with the closed
    forms evaluated in extended precision (the c^2 coefficients matter at 1e-8)."""
    for c in (9e-4, 3e-4):
        cl = np.longdouble(c)
        var = float((np.sinh(cl) - cl) / (4 * cl**3 * np.cosh(cl / 2) ** 2))
        assert np.isclose(augment.pg_var(1.0, c), var, rtol=1e-9, atol=0), (c, var)
    for c in (9e-7, 3e-7):
        cl = np.longdouble(c)
        assert np.isclose(augment.pg_mean(1.0, c), float(np.tanh(cl / 2) / (2 * cl)),
                          rtol=1e-12, atol=0)
    assert np.isclose(augment.pg_var(1.0, 0.0), 1 / 24)
    assert np.isclose(augment.pg_mean(2.0, 0.0), 1 / 2)


def test_pg_series_remainder_sums_against_brute_force():
    """The closed-form sums over all terms behind the series branch's remainder,
    sum_k w_k and sum_k w_k^2 with w_k = 1 / ((k - 1/2)^2 + c^2 / (4 pi^2)), against 2e6 terms
    summed directly plus their 1/N tail, on both sides of the |c| = 1 switch."""
    from pymc_trees.bart.kernels.augment import _pg1_sums

    k = np.arange(1, 2_000_001)
    for c in (0.0, 1e-5, 0.3, 0.999, 1.001, 5.0, -50.0, 2000.0):
        w = 1.0 / ((k - 0.5) ** 2 + (c / (2 * np.pi)) ** 2)
        s1, s2 = _pg1_sums(c)
        assert abs(s1 - (w.sum() + 1.0 / k.size)) < 1e-13, c
        assert abs(s2 - (w * w).sum()) < 1e-12, c


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


@pytest.mark.parametrize("u", [-1.3, 0.0, 0.4])
def test_asymmetric_laplace_latents_are_gig(u):
    """The mixture behind the quantile augmentation: with v ~ Exp(1) and
    u | v ~ Normal(theta v, tau^2 v), u is asymmetric Laplace (KS against its CDF), and the
    drawn v given u follows the density v^(-1/2) exp(-(u - theta v)^2 / (2 tau^2 v) - v)
    (KS against its quadrature CDF; u = 0 takes the Gamma branch); z = y - theta v."""
    rng = np.random.default_rng(8)
    b, kappa = 1.7, np.sqrt(0.2 / 0.8)
    theta, tau2 = (1 / kappa - kappa) / b, 2 / b**2
    v = rng.exponential(size=100_000)
    x = theta * v + np.sqrt(tau2 * v) * rng.standard_normal(v.size)
    lp, lm = b * kappa, b / kappa
    c = 1 / (1 / lp + 1 / lm)
    cdf = lambda t: np.where(t < 0, c / lm * np.exp(lm * np.minimum(t, 0)),  # noqa: E731
                             1 - c / lp * np.exp(-lp * np.maximum(t, 0)))
    assert stats.kstest(x, cdf).pvalue > 1e-3
    y, eta = 0.5, 0.5 - u
    z, w = augment.asymmetric_laplace_latents(rng, np.full(20_000, y), np.full(20_000, eta),
                                              b, kappa)
    vs = 1 / (tau2 * w)
    np.testing.assert_allclose(z, y - theta * vs)
    dens = lambda t: t**-0.5 * np.exp(-(u - theta * t) ** 2 / (2 * tau2 * t) - t)  # noqa: E731
    norm = integrate.quad(dens, 0, np.inf)[0]
    grid = np.quantile(vs, np.linspace(0.02, 0.98, 25))
    cdf_v = np.array([integrate.quad(dens, 0, g)[0] for g in grid]) / norm
    emp = np.array([(vs <= g).mean() for g in grid])
    # 20,000 independent draws: sd of an empirical CDF value <= 0.5 / sqrt(20,000) = 0.0035
    assert np.max(np.abs(cdf_v - emp)) < 0.015, np.max(np.abs(cdf_v - emp))


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

ALPHA, BETA = 0.95, 1.0


Y_BIN = np.array([0, 0, 0, 1, 1, 1])
N_TRIALS = np.array([4, 2, 5, 3, 6, 4])
Y_BINOM = np.array([1, 0, 2, 2, 5, 3])
Y_COUNT = np.array([0, 2, 1, 6, 9, 4])
Y_REAL = np.array([-1.2, -0.8, 3.5, 1.0, 1.3, 0.9])

def _ald_logpdf(u, b, kappa):
    """Asymmetric Laplace log density at ``u = y - mu`` (rates ``b kappa`` above the
    location, ``b / kappa`` below), written out independently of PyMC."""
    u = np.asarray(u, dtype=float)
    rate = np.where(u > 0, b * kappa, b / kappa)
    return math.log(b / (kappa + 1 / kappa)) - rate * np.abs(u)


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
        # alpha not an integer, so y + alpha takes the series branch of the PG sampler
        lambda f: pm.NegativeBinomial("y", mu=pm.math.exp(0.8 + f), alpha=2.5,
                                      observed=Y_COUNT),
        lambda i, mu: stats.nbinom.logpmf(Y_COUNT[i], 2.5, 2.5 / (2.5 + np.exp(0.8 + mu)))),
    "student_t": (1.5, "identity",
                  lambda f: pm.StudentT("y", nu=3.0, mu=f, sigma=0.5, observed=Y_REAL),
                  lambda i, mu: stats.t.logpdf(Y_REAL[i], 3.0, loc=mu, scale=0.5)),
    # quantile 0.25; Y_REAL[3] - 1.0 = 0 puts a row on the kink at the leaf value 1
    "asymmetric_laplace": (1.5, "identity",
                           lambda f: pm.AsymmetricLaplace("y", mu=f, b=1.4, q=0.25,
                                                          observed=Y_REAL),
                           lambda i, mu: _ald_logpdf(Y_REAL[i] - mu, 1.4, np.sqrt(0.25 / 0.75))),
}
# (draws per chain (2 chains), tree sweeps per draw) by case and sampler, sized by the N_eff
# the power check needs (TV(prior, posterior) > 3 tolerances) with a margin of about 1.5:
# measured with (6,000, 5) for CGM and (3,000, 3) for PG, N_eff against the floor was
# probit 1,666 / 773 (cgm) and 1,650 / 773 (pg), logit 2,649 / 713 and 3,607 / 713,
# binomial 6,207 / 3,040 and 4,544 / 3,040, negative binomial 6,266 / 3,147 and
# 4,526 / 3,150, Student-t 752 / 370 and 1,156 / 370, asymmetric Laplace 2,691 / 759 and
# 2,038 / 760.  ``sweeps`` (CGMTreeStep / PGTreeStep): with latent variables every sweep draws
# them again, so a sweep costs nearly a whole iteration here; the gain is the stored forests
# and PyMC's work per iteration left out (about 1.5x fewer seconds per N_eff).
DRAWS = {"probit": {"cgm": (4200, 5), "pg": (2200, 3)},
         "logit": {"cgm": (2400, 5), "pg": (1000, 3)},
         "binomial": {"cgm": (4400, 5), "pg": (3000, 3)},
         "negative_binomial": {"cgm": (4500, 5), "pg": (3000, 3)},
         "student_t": {"cgm": (4400, 5), "pg": (1500, 3)},
         "asymmetric_laplace": {"cgm": (2600, 5), "pg": (1700, 3)}}


@pytest.mark.parametrize("case", ["logit", "asymmetric_laplace"])
def test_grid_quadrature_matches_adaptive_quadrature(case):
    """The enumeration oracle's integrals over a leaf value (Simpson's rule on one grid,
    :func:`enumeration.quadrature_posterior`) against scipy's adaptive quadrature leaf by
    leaf (:func:`enumeration.leaf_log_integral`), on a smooth likelihood and on one with a
    kink at a row's value: log Z and E[mu] of every leaf of three partitions."""
    from enumeration import leaf_log_integral

    leaf_sd, _, _, loglik = CASES[case]
    prior = six_row_prior()
    parts = sorted(prior, key=len)[:3]
    post, f_mean = quadrature_posterior({p: prior[p] for p in parts}, len(X6), loglik, leaf_sd)
    exact = {rows: leaf_log_integral(lambda mu, rows=rows: sum(loglik(i, mu) for i in rows),
                                     leaf_sd) for p in parts for rows in p}
    logs = {p: math.log(prior[p]) + sum(exact[rows][0] for rows in p) for p in parts}
    top = max(logs.values())
    z = sum(math.exp(v - top) for v in logs.values())
    for p in parts:
        assert abs(post[p] - math.exp(logs[p] - top) / z) < 1e-9
    want = sum(post[p] * np.array([exact[rows][1] for i in range(len(X6)) for rows in p
                                   if i in rows]) for p in parts)
    np.testing.assert_allclose(f_mean, want, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["cgm", "pg"])
@pytest.mark.parametrize("case", list(CASES))
def test_likelihood_matches_enumeration(case, sampler):
    leaf_sd, link, build, loglik = CASES[case]
    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), loglik, leaf_sd)
    with pm.Model():
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         link=link, sampler=sampler)
        build(f)
        draws, sweeps = DRAWS[case][sampler]
        idata = pm.sample(draws=draws, tune=300, chains=2, cores=1, random_seed=31,
                          progressbar=False, compute_convergence_checks=False,
                          **{f"{sampler}_tree": {"sweeps": sweeps}})
    parts = [[forest_row_partitions(fr, X6)[0] for fr in ch]
             for ch in pmt.forests(idata, "f").values]
    print(case, sampler, end=": ")
    check_cells(parts, post, {k: prior[k] for k in post})
    draws = idata.posterior["f"]
    got = draws.mean(("chain", "draw")).values
    se = np.asarray(az.mcse(draws.values)).ravel()
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)


@pytest.mark.slow
def test_quantiles_of_one_y_are_augmented_output_by_output():
    """A term of shape (2, n) in an asymmetric Laplace broadcast over its outputs (two
    quantiles, 0.25 and 0.75, of one y): each output takes the conjugate update against its own
    augmentation, and its tree follows its own one-output posterior (quadrature, partitions of
    both chains and mean of f per output).  Reading output 0's pieces for both outputs puts
    output 1 on the 0.25 posterior and fails."""
    from pymc_trees.bart.steps.tree_step import CGMTreeStep

    leaf_sd, n, b = 1.5, len(X6), 1.4
    qs = np.array([[0.25], [0.75]])
    with pm.Model():
        # one column: DART's split probabilities are 1 whatever it draws, so the uniform
        # prior gives the same posterior without DART's draws (a tenth of the sampling time
        # in a profile of this model)
        w = BARTTree("w", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         shape=(2, n), split_prior="uniform")
        pm.AsymmetricLaplace("y", mu=w, b=b, q=qs, observed=np.broadcast_to(Y_REAL, (2, n)))
        step = CGMTreeStep([w])  # built once: checked here, then sampled with
        assert [lk.family for lk in step.likelihood.parts] == ["asymmetric_laplace"] * 2
        # the power check needs N_eff 760 (q = 0.25) and 600 (q = 0.75): tolerances 4.22 and
        # 4.11 / sqrt(N_eff) against TV(prior, posterior) 0.46 and 0.50.  With the uniform
        # split prior 13,000 draws give N_eff 1,028 and 884 with this seed (tolerances 0.132
        # and 0.138; 1,425 and 1,168 at 18,000), 1.35 and 1.46 times the floors.  Sweeps per
        # draw do not help here: each output's sweep draws its latent variables again, in
        # Python (6,000 draws of 5 sweeps gave N_eff 2,114 and 1,408 in 69 s against 42 s).
        # Output 1 on output 0's posterior is TV 0.24 away (quadrature), its mean of f 0.8 to
        # 1.8 away
        idata = pm.sample(draws=13000, tune=300, chains=2, cores=1, random_seed=41,
                          progressbar=False, compute_convergence_checks=False, step=step)
    fr = pmt.forests(idata, "w").values  # (chain, draw, output)
    ws = idata.posterior["w"].values  # (chain, draw, output, row)
    prior = six_row_prior()
    for j, q in enumerate(qs.ravel()):
        kappa = math.sqrt(q / (1 - q))
        post, f_mean = quadrature_posterior(
            prior, n, lambda i, mu: _ald_logpdf(Y_REAL[i] - mu, b, kappa), leaf_sd)
        parts = [[forest_row_partitions(fr[c, d, j], X6)[0] for d in range(fr.shape[1])]
                 for c in range(fr.shape[0])]
        check_cells(parts, post, {k: prior[k] for k in post})
        got = ws[:, :, j].mean(axis=(0, 1))
        se = np.asarray(az.mcse(ws[:, :, j])).ravel()
        assert np.all(np.abs(got - f_mean) < 4 * se), (j, got, f_mean, se)


C_ROWS = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])


@pytest.mark.slow
def test_outputs_in_one_normal_mean_are_augmented_given_each_other():
    """Normal(mu = w[0] + c w[1], sigma) (c = +-1 per row) with a term of shape (2, n): each
    output is a
    linear predictor given the other, so each takes the conjugate update with the other's
    current values in its intercept.  The exact joint posterior of the two partitions
    integrates both outputs' leaves jointly (a Gaussian marginal per pair of partitions); each
    output's marginal over partitions is compared with the sampled one.  Pieces evaluated
    without zeroing the output itself (its own values counted twice) fail."""
    from enumeration import gaussian_log_marginal, incidence_rows

    from pymc_trees.bart.steps.tree_step import CGMTreeStep

    leaf_sd, sigma, n = 1.0, 0.8, len(X6)
    with pm.Model():
        w = BARTTree("w", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         shape=(2, n))
        pm.Normal("y", mu=w[0] + C_ROWS * w[1], sigma=sigma, observed=Y_REAL)
        step = CGMTreeStep([w], sweeps=5)  # built once: checked here, then sampled with
        assert [lk.family for lk in step.likelihood.parts] == ["normal", "normal"]
        # the outputs explain the same rows, so the Gibbs sweep over them mixes slowly: N_eff
        # per draw (two chains) 0.030 for output 0, 0.048 for output 1.  The tolerance is 4.18
        # and 4.52 / sqrt(N_eff) against TV(prior, posterior) 0.43 and 0.30, so the test has
        # power from N_eff 860 (output 0) and 2,000 (output 1).  30,000 draws per chain give
        # 1,891 and 2,919 with this seed (tolerances 0.096 and 0.084; 3,020 and 4,812 at 50,000).
        # Not zeroing the output itself in its pieces gives TV 0.31 against 0.048.
        # Each output's 5 sweeps a draw now run in one kernel call (a blocked scan): 8,000
        # draws give N_eff 1,923 and 2,847 (tolerances 0.095 and 0.085), 1.4 times output 1's
        # floor, in 25 s (26,000 draws of one sweep gave about 2,500 for output 1 in 54 to
        # 61 s; 5 sweeps looped in Python, 2,341 and 3,351 at 8,000 draws in as much time)
        idata = pm.sample(draws=8_000, tune=300, chains=2, cores=1, random_seed=43,
                          progressbar=False, compute_convergence_checks=False, step=step)
    prior = six_row_prior()
    logs = {(p0, p1): (math.log(prior[p0]) + math.log(prior[p1]) + gaussian_log_marginal(
        Y_REAL, sigma, [(incidence_rows(p0, n), leaf_sd),
                        (C_ROWS[:, None] * incidence_rows(p1, n), leaf_sd)]))
        for p0 in prior for p1 in prior}
    top = max(logs.values())
    fr = pmt.forests(idata, "w").values  # (chain, draw, output)
    for j in range(2):
        post = {}
        for pair, lg in logs.items():
            post[pair[j]] = post.get(pair[j], 0.0) + math.exp(lg - top)
        total = sum(post.values())
        post = {k: v / total for k, v in post.items()}
        parts = [[forest_row_partitions(fr[c, d, j], X6)[0] for d in range(fr.shape[1])]
                 for c in range(fr.shape[0])]
        check_cells(parts, post, prior)


@pytest.mark.parametrize("model", ["cross_output", "transposed", "abs_scale"])
def test_outputs_are_augmented_one_by_one_where_they_can_be(model):
    """Each output of a (k, n) term is checked on its own: a linear predictor of an
    augmentable likelihood (given the other outputs) takes the conjugate update, any other
    output the general step.  In an asymmetric Laplace broadcast over two outputs with
    location (w[0] + 0.5 w[1], w[1]), output 0 is a location given output 1, output 1 moves
    both rows; a likelihood transposed to (n, k) is not matched to the outputs; pymc-bart's
    heteroscedastic example Normal(w[0], abs(w[1])) has a Normal mean and a scale."""
    from pymc_trees.bart.steps.tree_step import CGMTreeStep

    n = len(X6)
    with pm.Model():
        w = BARTTree("w", X6, m=1, leaf_sd=1.0, min_leaf=1, shape=(2, n))
        if model == "abs_scale":
            pm.Normal("y", w[0], pm.math.abs(w[1] + 1.0), observed=Y_REAL)
            expected = ["normal", "general"]
        elif model == "cross_output":
            mu = pm.math.stack([w[0] + 0.5 * w[1], w[1]])
            pm.AsymmetricLaplace("y", mu=mu, b=1.0, q=0.5,
                                 observed=np.broadcast_to(Y_REAL, (2, n)))
            expected = ["asymmetric_laplace", "general"]
        else:
            pm.AsymmetricLaplace("y", mu=w.T, b=1.0, q=0.5,
                                 observed=np.broadcast_to(Y_REAL[:, None], (n, 2)))
            expected = ["general", "general"]
        assert [lk.family for lk in CGMTreeStep([w]).likelihood.parts] == expected


# --- reading the form from the graph ------------------------------------------------------

Y01 = np.array([0, 1, 0, 1, 1, 0])
FORMS = {
    "invprobit": (lambda f: pm.Bernoulli("y", p=pm.math.invprobit(0.5 * f - 1), observed=Y01),
                  "probit", -1.0, 0.5),
    "logit_p": (lambda f: pm.Bernoulli("y", logit_p=2 * f + 1, observed=Y01), "logit", 1, 2),
    "invlogit": (lambda f: pm.Bernoulli("y", p=pm.math.invlogit(f), observed=Y01), "logit", 0, 1),
    "sigmoid": (lambda f: pm.Bernoulli("y", p=pm.math.sigmoid(-f), observed=Y01), "logit", 0,
                -1),
    "deterministic_p": (lambda f: pm.Bernoulli("y", p=pm.Deterministic("p", pm.math.invlogit(f)),
                                               observed=Y01), "logit", 0, 1),
    "binomial": (lambda f: pm.Binomial("y", n=3, logit_p=f, observed=Y01), "logit", 0, 1),
    # the negative binomial is augmented in u = logit p = log(alpha) - eta
    "negative_binomial": (lambda f: pm.NegativeBinomial(
        "y", mu=pm.Deterministic("mu", pm.math.exp(f + 0.5)), alpha=4.0, observed=Y01),
        "negative_binomial", np.log(4.0) - 0.5, -1),
    "student_t": (lambda f: pm.StudentT("y", nu=3, mu=3 * f, sigma=1, observed=Y01),
                  "student_t", 0, 3),
    "asymmetric_laplace": (lambda f: pm.AsymmetricLaplace("y", mu=1 - f, b=2.0, q=0.9,
                                                          observed=Y01),
                           "asymmetric_laplace", 1, -1),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_likelihood_forms_are_read_from_the_graph(form):
    """Each supported spelling gives its family and the affine pieces a, b of its linear
    predictor (including through pm.Deterministic)."""
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    build, family, a, b = FORMS[form]
    with pm.Model() as model:
        f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
        build(f)
    lik = tree_likelihood(model, f, 6)
    assert lik.family == family
    _, a_got, b_got, *_ = lik.pieces(model.initial_point())
    # PyMC builds some constants in float32 (sqrt(2) in invprobit, log(alpha)); the model's own
    # log density uses the same graph, so the pieces follow it
    np.testing.assert_allclose(np.broadcast_to(a_got, 6), a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.broadcast_to(b_got, 6), b, rtol=1e-6)


def test_pieces_held_at_one_point_are_evaluated_once_and_only_there():
    """Within ``held_at(point)`` the sweeps of one iteration evaluate the compiled pieces once
    at that point; a new point (another noise scale) is evaluated afresh inside the block and
    gives its own precisions, the same as outside it."""
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    with pm.Model() as model:
        f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
        pm.StudentT("y", nu=3.0, mu=f, sigma=pm.HalfNormal("s", 1.0), observed=Y_REAL)
    lik = tree_likelihood(model, f, 6)
    calls = []
    pieces = lik.pieces
    lik.pieces = lambda point: calls.append(1) or pieces(point)
    point = model.initial_point()
    other = {**point, "s_log__": point["s_log__"] + 1.0}
    f0 = np.zeros(6)
    z_other, w_other = lik.pseudo_data(other, 0.0, f0, np.random.default_rng(2))
    calls.clear()
    with lik.held_at(point):
        for _ in range(3):
            lik.pseudo_data(point, 0.0, f0, np.random.default_rng(1))
        assert len(calls) == 1
        z, w = lik.pseudo_data(other, 0.0, f0, np.random.default_rng(2))
        assert len(calls) == 2
    np.testing.assert_array_equal(w, w_other)
    np.testing.assert_array_equal(z, z_other)
    lik.pseudo_data(point, 0.0, f0, np.random.default_rng(1))
    assert len(calls) == 3


def test_a_level_shift_is_evaluated_once_a_chain_only_when_nothing_sampled_moves_it():
    """The level shift's slopes and prior are kept from a chain's first iteration when no
    sampled variable enters them, and evaluated at every point when one does (here the
    intercept's prior mean is a model variable)."""
    from pymc_trees.bart.likelihood.level_shift import level_shifts
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    for hyper in (False, True):
        with pm.Model() as model:
            f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
            mu_a = pm.Normal("mu_a", 0.0, 1.0) if hyper else 0.5
            a = pm.Normal("a", mu_a, 2.0)
            pm.Normal("y", mu=a + 2.0 * f, sigma=1.0, observed=Y_REAL)
        (shift,) = level_shifts(model, f, tree_likelihood(model, f, 6))
        assert shift.static is not hyper
        point = model.initial_point()
        k, mu0, sd0 = shift.terms(point, 6)
        assert (k, sd0) == (0.5, 2.0)
        moved = {**point, "mu_a": np.asarray(1.5)} if hyper else point
        assert shift.terms(moved, 6)[1] == (1.5 if hyper else 0.5)
        shift.reset()
        assert shift.terms(moved, 6) == (0.5, 1.5 if hyper else 0.5, 2.0)


@pytest.mark.parametrize("case", ["normal_sigma", "log_gamma_mu", "zip_psi", "plain"])
def test_no_level_shift_for_an_intercept_that_enters_another_parameter(case):
    """The level shift moves the intercept against the trees' leaves, leaving the linear
    predictor unchanged: exact only when the intercept reaches the likelihood through that
    predictor alone.  An intercept also in the Normal's scale (``mu=a + f, sigma=exp(a)``),
    in the mean of a Normal whose log sd the log-gamma leaves hold (``mu=a, sigma=exp(a +
    g)``), or in a zero-inflated Poisson's weight (``psi=sigmoid(a)``, ``mu=exp(a + f)``)
    gets none (before, its posterior was wrong: -3.28 where the data put it at 0.97); the
    plain ``mu=a + f`` keeps it."""
    from pymc_trees.bart.likelihood.gamma_likelihood import gamma_likelihood
    from pymc_trees.bart.likelihood.level_shift import level_shifts
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    y = np.abs(Y_REAL) + 0.5
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        if case == "normal_sigma":
            f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
            pm.Normal("y", mu=a + f, sigma=pm.math.exp(a), observed=y)
        elif case == "log_gamma_mu":
            f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)  # "auto": kappa = -2
            pm.Normal("y", mu=a, sigma=pm.math.exp(a + f), observed=y)
        elif case == "zip_psi":
            f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1, leaf_prior="log-gamma")
            pm.ZeroInflatedPoisson("y", psi=pm.math.sigmoid(a), mu=pm.math.exp(a + f),
                                   observed=np.round(y).astype(int))
        else:
            f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
            pm.Normal("y", mu=a + f, sigma=1.0, observed=y)
    if case in ("log_gamma_mu", "zip_psi"):
        lik = gamma_likelihood(model, f, 6, "auto")
    else:
        lik = tree_likelihood(model, f, 6)
    assert [s.name for s in level_shifts(model, f, lik)] == (["a"] if case == "plain" else [])
    with model:  # the tree step reads the same
        step = pmt.CGMTreeStep([f])
    assert [s.name for s in step.level_shifts] == (["a"] if case == "plain" else [])


@pytest.mark.parametrize("form, found", [("plain", True), ("twice", False), ("exp", False),
                                         ("in_sigma", False)])
def test_an_intercept_is_shifted_against_a_random_effect_that_enters_as_it_does(form, found):
    """``alpha + u[g] + f``: moving alpha by s and every u by -s leaves the likelihood as it
    is, so the level shift also draws s along that line (:class:`EffectShift`); not for
    ``2 * u[g]``, ``exp(u)[g]`` or a u that also enters sigma."""
    from pymc_trees.bart.likelihood.level_shift import level_shifts
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    g = np.array([0, 1, 2, 0, 1, 2])
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        su = pm.HalfNormal("su", 1.0)
        u = pm.Normal("u", 0.0, su, shape=3)
        f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
        effect = {"plain": u[g], "twice": 2.0 * u[g], "exp": pm.math.exp(u)[g],
                  "in_sigma": u[g]}[form]
        sigma = pm.math.exp(u[0]) if form == "in_sigma" else 1.0
        pm.Normal("y", mu=a + effect + f, sigma=sigma, observed=Y_REAL)
    (shift,) = level_shifts(model, f, tree_likelihood(model, f, 6))
    assert [e.name for e in shift.effects] == (["u"] if found else [])


def test_the_effect_shift_draws_its_exact_conditional():
    """The draw of s along the line (alpha + s, u - s) against its conditional, computed
    apart by quadrature of ``N(alpha + s; mu0, sd0) prod_g N(u_g - s; mu_u, sd_u_g)``: the
    mean and sd to 4 Monte Carlo SEs, and a KS test of 4,000 draws."""
    from pymc_trees.bart.likelihood.level_shift import EffectShift

    u0 = np.array([0.3, -1.1, 0.8, 2.0])
    sd_u = np.array([0.5, 0.7, 0.5, 1.2])
    eff = EffectShift(name="u", prior=lambda point: (0.2, sd_u))
    rng = np.random.default_rng(11)
    point = {"a": np.asarray(1.3), "u": u0}
    draws = np.array([float(eff.draw(rng, point, "a", -0.5, 2.0)["a"]) - 1.3
                      for _ in range(4000)])
    grid = np.linspace(-8, 8, 40001)
    logp = (stats.norm.logpdf(1.3 + grid, -0.5, 2.0)
            + stats.norm.logpdf(u0[:, None] - grid, 0.2, sd_u[:, None]).sum(axis=0))
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = float((p * grid).sum())
    sd = float(np.sqrt((p * (grid - mean) ** 2).sum()))
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(draws.size)
    assert abs(draws.std() - sd) < 4 * sd / np.sqrt(2 * draws.size)
    assert stats.kstest(draws, stats.norm(mean, sd).cdf).pvalue > 1e-3
    moved = eff.draw(rng, point, "a", -0.5, 2.0)  # the predictor a + u_g is unchanged
    np.testing.assert_allclose(float(moved["a"]) + moved["u"], 1.3 + u0, rtol=0, atol=1e-12)


# --- calibration per link, and the link check at sampling time ---------------------------


def test_log_link_calibration_of_a_continuous_y_does_not_depend_on_its_units():
    """``link="log"`` with a continuous positive Y (a Gamma outcome): the leaf scale is the
    same whatever Y's units (before, ``log((max + 0.5) / (min + 0.5))`` shrank with the
    scale, so at 1e-4 the prior of f was flat and at 1e-6 sampling failed), the offset moves
    by the log of the units, and no false warning says Y looks log-transformed.  Counts keep
    the half count."""
    import warnings

    y = np.random.default_rng(4).gamma(4.0, 0.25, size=200) * np.exp(
        np.linspace(-1, 1, 200))
    off1, sd1 = pmt.leaf_calibration(y, m=50, link="log")
    for scale in (1e-2, 1e-4, 1e-6, 1e-8, 1e3):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            off, sd = pmt.leaf_calibration(y * scale, m=50, link="log")
        assert sd == pytest.approx(sd1, rel=1e-12)
        assert off == pytest.approx(off1 + np.log(scale), rel=1e-12, abs=1e-12)
    counts = np.array([0, 3, 10, 2, 7, 1, 0, 5])
    assert pmt.leaf_calibration(counts, m=50, link="log")[1] == pytest.approx(
        np.log(10.5 / 0.5) / (2 * 2.0 * np.sqrt(50)))


def test_link_calibration():
    y01 = np.array([0, 1, 1, 0, 1, 1, 1, 0])
    counts = np.array([0, 3, 10, 2, 7, 1, 0, 5])
    m, k = 50, 2.0
    off, sd = pmt.leaf_calibration(y01, m=m, k=k, link="probit")
    assert np.isclose(off, stats.norm.ppf(5 / 8)) and np.isclose(sd, 3 / (k * np.sqrt(m)))
    off, sd = pmt.leaf_calibration(y01, m=m, k=k, link="logit")
    assert np.isclose(off, np.log(5 / 3)) and np.isclose(sd, 1.702 * 3 / (k * np.sqrt(m)))
    off, sd = pmt.leaf_calibration(counts, m=m, k=k, link="log")
    assert np.isclose(off, np.log(counts.mean()))
    assert np.isclose(sd, np.log(10.5 / 0.5) / (2 * k * np.sqrt(m)))
    X = np.arange(8.0)[:, None]
    with pm.Model():
        f = BARTTree("f", X, y01, m=m, link="probit", min_leaf=1)
        assert f.owner.op.link == "probit"
        assert np.isclose(f.owner.inputs[3].eval(), stats.norm.ppf(5 / 8))
    with pytest.raises(ValueError, match="0/1 outcomes or proportions"):
        pmt.leaf_calibration(counts, link="logit")
    with pytest.raises(ValueError, match="link must be one of"):
        pmt.leaf_calibration(y01, link="cloglog")


@pytest.mark.parametrize("term_link,likelihood", [(None, "logit"), ("probit", "logit"),
                                                  ("logit", "normal"), ("identity", "nb")])
def test_term_calibrated_for_another_link_is_refused_at_sampling(term_link, likelihood):
    """BARTTree(Y=...) defaults to the identity link; a term calibrated for one link entering
    a likelihood with another is refused when pm.sample builds the steps."""
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(40, 2))
    y = (rng.uniform(size=40) < 0.4).astype(int)
    with pm.Model():
        f = BARTTree("f", X, y, m=5, link=term_link)
        if likelihood == "logit":
            pm.Bernoulli("y", logit_p=f, observed=y)
        elif likelihood == "normal":
            pm.Normal("y", mu=f, sigma=1.0, observed=y)
        else:
            pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=2.0, observed=y)
        with pytest.raises(pmt.ModelStructureError, match="calibrated for the .* link") as err:
            pm.sample(draws=5, tune=5, chains=1, progressbar=False)
    want = {"logit": "logit", "normal": "identity", "nb": "log"}[likelihood]
    assert f"link={want!r}" in str(err.value)


# --- composition: intercept, random effect, two tree terms, new data ----------------------


@pytest.mark.slow
def test_logit_model_with_intercept_random_effect_two_terms_and_new_data():
    """y ~ Bernoulli(logit_p = a + u[g] + f1(X) + z * f2(X)): pm.sample assigns CGM to f1, PG
    to f2 and NUTS to the rest; the posterior predictive at new rows (pm.set_data) uses each
    draw's forests, exactly pmt.predict."""
    rng = np.random.default_rng(9)
    n, G = 200, 5
    X = rng.uniform(size=(n, 2))
    g = rng.integers(G, size=n)
    z = rng.normal(size=n)
    eta = -0.3 + 0.5 * (g - 2) + 2 * np.sin(3 * X[:, 0]) + z * X[:, 1]
    y = (rng.uniform(size=n) < special.expit(eta)).astype(int)
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        gd = pm.Data("g", g)
        zd = pm.Data("z", z)
        f1 = BARTTree("f1", Xd, y, m=20, link="logit", sampler="cgm")
        f2 = BARTTree("f2", Xd, m=10, leaf_sd=0.3, sampler="pg")
        a = pm.Normal("a", 0.0, 2.0)
        su = pm.HalfNormal("su", 1.0)
        u = pm.Normal("u", 0.0, su, shape=G)
        pm.Bernoulli("y", logit_p=a + u[gd] + f1 + zd * f2, observed=y, shape=Xd.shape[0])
        idata = pm.sample(draws=150, tune=150, chains=2, cores=1, random_seed=10,
                          progressbar=False, compute_convergence_checks=False)
    names = set(idata.sample_stats.data_vars)
    assert {"accept_grow", "tree_changed", "diverging"} <= names
    X_new = rng.uniform(size=(7, 2))
    with model:
        pm.set_data({"X": X_new, "g": np.arange(7) % G, "z": np.ones(7)})
        pp = pmt.sample_posterior_predictive(idata, var_names=["f1", "f2", "y"],
                                             random_seed=11, progressbar=False)
    post = pp.posterior_predictive
    for name in ("f1", "f2"):
        np.testing.assert_allclose(post[name].values,
                                   pmt.predict(idata, X_new, var_name=name).values)
    assert post["y"].shape[-1] == 7 and set(np.unique(post["y"].values)) <= {0, 1}


# --- recovery on simulated data -------------------------------------------------------------


def _recovery_case(case, rng, X):
    eta = 2.0 * np.sin(np.pi * X[:, 0]) + 2.5 * (X[:, 1] - 0.5) - 1.2
    if case == "probit":
        y = (rng.uniform(size=len(eta)) < stats.norm.cdf(eta)).astype(int)
        return eta, y, "probit", lambda f, yd: pm.Bernoulli("y", p=pm.math.invprobit(f),
                                                            observed=yd)
    if case == "logit":
        y = (rng.uniform(size=len(eta)) < special.expit(eta)).astype(int)
        return eta, y, "logit", lambda f, yd: pm.Bernoulli("y", logit_p=f, observed=yd)
    if case == "negative_binomial":
        eta = eta + 1.0
        mu = np.exp(eta)
        y = rng.negative_binomial(4.0, 4.0 / (4.0 + mu))

        def build(f, yd):
            alpha = pm.Exponential("alpha", 0.2)
            pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=alpha, observed=yd)
        return eta, y, "log", build
    y = eta + 0.3 * rng.standard_t(4.0, size=len(eta))

    def build(f, yd):
        nu = pm.Gamma("nu", 2.0, 0.1)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.StudentT("y", nu=nu, mu=f, sigma=sigma, observed=yd)
    return eta, y, "identity", build


@pytest.mark.slow
@pytest.mark.parametrize("case", ["probit", "logit", "negative_binomial", "student_t"])
def test_recovery_of_probability_or_rate(case):
    """Simulated from the model with a smooth linear predictor (n = 800, m = 50): the 90%
    intervals of the linear predictor (so of the probability or rate) cover the truth at
    >= 80% of the rows and the posterior mean is closer to the truth than the best constant;
    NUTS samples the negative binomial's alpha (true 4) and the Student-t's nu (4) and sigma
    (0.3) in the same chain, and their 95% intervals hold the maximum-likelihood values given
    the true linear predictor."""
    rng = np.random.default_rng(40)
    X = rng.uniform(size=(800, 3))
    eta, y, link, build = _recovery_case(case, rng, X)
    with pm.Model():
        f = BARTTree("f", X, y, m=50, link=link)
        build(f, y)
        idata = pm.sample(draws=400, tune=400, chains=2, cores=1, random_seed=41,
                          progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["f"].values.reshape(-1, len(y))
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
    coverage = np.mean((lo <= eta) & (eta <= hi))
    rmse = np.sqrt(np.mean((draws.mean(0) - eta) ** 2))
    print(f"{case}: coverage {coverage:.3f} rmse {rmse:.3f} sd(eta) {eta.std():.3f}")
    assert coverage >= 0.8, coverage
    assert rmse < 0.6 * eta.std(), (rmse, eta.std())
    for name, oracle in _oracle(case, y, eta).items():
        lo, hi = np.quantile(idata.posterior[name].values, [0.025, 0.975])
        print(f"  {name}: ({lo:.2f}, {hi:.2f}) oracle {oracle:.2f}")
        assert lo < oracle < hi, (name, lo, hi, oracle)


def _oracle(case, y, eta):
    """Maximum likelihood of the other parameters given the true linear predictor: what the
    posterior of alpha (or nu, sigma) should concentrate around, free of the sampling luck of
    one data set (for the seed here, the true sigma 0.3 is 2 standard errors from it)."""
    from scipy import optimize

    if case == "negative_binomial":
        nll = lambda la: -stats.nbinom.logpmf(y, np.exp(la), np.exp(la) / (np.exp(la)
                                                                           + np.exp(eta))).sum()
        return {"alpha": float(np.exp(optimize.minimize_scalar(nll, (0.0, 3.0)).x))}
    if case == "student_t":
        nu, _, sigma = stats.t.fit(y - eta, floc=0)
        return {"nu": nu, "sigma": sigma}
    return {}


# --- an intercept moved by the level shift, under a logit likelihood -----------------------


@pytest.mark.slow
def test_logit_intercept_level_shift_matches_enumeration():
    """y ~ Bernoulli(logit_p = c + f(x)), c ~ Normal(m0, s0), m = 1: c is moved only by the
    tree step's level shift (its own step is a Metropolis with a negligible proposal), which
    keeps c + f fixed, so the likelihood is unchanged whatever the family.  Exact posterior
    over partitions and the first two moments of c by Gauss-Hermite quadrature over (c, each
    leaf's value): p(T) int N(c) prod_leaves int N(mu) prod_rows p(y_i | c + mu) dmu dc."""
    m0, s0, leaf_sd = 0.3, 1.2, 2.0
    prior = six_row_prior()
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)  # for N(0, 1) expectations
    weights = weights / weights.sum()
    c = m0 + s0 * nodes
    mu = leaf_sd * nodes
    eta = c[:, None] + mu[None, :]
    loglik = {y: np.where(y, eta, 0.0) - np.logaddexp(0.0, eta) for y in (0, 1)}
    leaf_z = {}
    for part in prior:
        for rows in part:
            if rows not in leaf_z:
                ll = sum(loglik[int(Y_BIN[i])] for i in rows)
                leaf_z[rows] = np.exp(ll) @ weights  # shape (len(c),): int over mu given c
    post_w, c_mom = {}, {}
    for part in prior:
        g = np.prod([leaf_z[rows] for rows in part], axis=0) * weights
        post_w[part] = prior[part] * g.sum()
        c_mom[part] = (g @ c / g.sum(), g @ c**2 / g.sum())
    total = sum(post_w.values())
    post = {k: v / total for k, v in post_w.items()}
    with pm.Model():
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         link="logit")
        a = pm.Normal("c", m0, s0)
        pm.Bernoulli("y", logit_p=a + f, observed=Y_BIN)
        step = [pmt.CGMTreeStep([f], sweeps=5),
                pm.Metropolis([a], S=np.array([1e-9]), tune=None)]
        # N_eff 4,010 at 5,000 draws; the power check needs 1,630
        idata = pm.sample(draws=3200, tune=300, chains=2, cores=1, step=step, random_seed=33,
                          progressbar=False, compute_convergence_checks=False)
    parts = [[forest_row_partitions(fr, X6)[0] for fr in ch]
             for ch in pmt.forests(idata, "f").values]
    check_cells(parts, post, prior)
    draws = idata.posterior["c"]
    for j, d in enumerate((draws, draws**2)):
        exact_val = sum(post[k] * c_mom[k][j] for k in post)
        got = float(d.mean())
        se = float(np.asarray(az.mcse(d.values)))
        print(f"c moment {j + 1}: {got:.4f} exact {exact_val:.4f} (4 MCSE {4 * se:.4f})")
        assert abs(got - exact_val) < 4 * se, (j, got, exact_val, se)


@pytest.mark.parametrize("nu,q", [(3.0, 0.9), (10.0, 0.75), (5.0, 0.99)])
def test_noise_prior_puts_mass_q_below_the_least_squares_sd(nu, q):
    """sigma^2 ~ InverseGamma(nu/2, nu lambda/2) with P(sigma < sigma_hat) = q (docs/math.md, 3)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.7 * rng.standard_normal(50)
    a, b = pmt.noise_prior(X, y, nu=nu, q=q)
    A = np.column_stack([np.ones(50), X])
    resid = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
    sigma_hat2 = resid @ resid / (50 - 4)
    assert a == nu / 2
    assert stats.invgamma(a, scale=b).cdf(sigma_hat2) == pytest.approx(q, abs=1e-10)
