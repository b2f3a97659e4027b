"""The general tree step for likelihoods without conjugacy (bart-math section 9).

* With a Gaussian likelihood the Laplace proposal of a leaf is its exact conditional, so every
  leaf update is accepted (a check of the proposal density and of the leaf factor).
* Exact enumeration, m = 1 on 6 rows: the posterior over the 32 row partitions is the tree
  prior times, per leaf, a one-dimensional quadrature of the likelihood against the leaf
  prior (tests/enumeration.py); the sampled partitions must match it within the N_eff-based
  tolerance of the other enumeration tests, and the posterior mean of f at every row within
  4 Monte Carlo standard errors.  Likelihoods: Poisson with a log link, and a Normal with the
  tree term in log sigma, at the kernel (a numpy log-likelihood) and through ``pm.sample``.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_trees as pmt
from enumeration import (check_cells, forest_row_partitions, partition_prior_rows,
                         quadrature_posterior)
from pymc_trees.core.binning import bin_data, make_cutpoints
from pymc_trees.sampler import ForestSampler, TreePrior, _move_cumprobs

X6 = np.arange(6.0)[:, None]
ALPHA, BETA = 0.95, 1.0
Y_COUNT = np.array([1, 0, 1, 7, 8, 5])
Y_REAL = np.array([0.3, 0.1, 0.25, 2.5, -2.8, -2.2])
MOVES = {"grow": 0.25, "prune": 0.25, "change": 0.4, "swap": 0.1}


def poisson_loglik(f, derivatives=False):
    lam = np.exp(0.8 + f)
    ll = Y_COUNT * (0.8 + f) - lam - special.gammaln(Y_COUNT + 1)
    return (ll, Y_COUNT - lam, lam) if derivatives else ll


def log_sigma_loglik(f, derivatives=False):
    # y ~ Normal(0.2, exp(f)): l = -f - (y - 0.2)^2 exp(-2 f) / 2 + const
    e2 = (Y_REAL - 0.2) ** 2 * np.exp(-2 * f)
    ll = -f - 0.5 * e2 - 0.5 * np.log(2 * np.pi)
    return (ll, -1 + e2, 2 * e2) if derivatives else ll


# name: (leaf sd, numpy log-likelihood, row log-likelihood at leaf value mu, model given f)
CASES = {
    "poisson": (1.0, poisson_loglik,
                lambda i, mu: stats.poisson.logpmf(Y_COUNT[i], np.exp(0.8 + mu)),
                lambda f: pm.Poisson("y", mu=pm.math.exp(0.8 + f), observed=Y_COUNT)),
    "log_sigma": (1.0, log_sigma_loglik,
                  lambda i, mu: stats.norm.logpdf(Y_REAL[i], 0.2, np.exp(mu)),
                  lambda f: pm.Normal("y", mu=0.2, sigma=pm.math.exp(f), observed=Y_REAL)),
}


def _prior():
    cuts, ncuts = make_cutpoints(X6, 100)
    return partition_prior_rows(bin_data(X6, cuts, ncuts), ncuts, ALPHA, BETA)


def _run_kernel(loglik, leaf_sd, draws, seed, tune=300):
    smp = ForestSampler(X6, TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, leaf_sd)
    rng = np.random.default_rng(seed)
    cp = _move_cumprobs(MOVES)
    parts, fs, rates = [], [], []
    for it in range(tune + draws):
        r = smp.general_sweep(rng, loglik, cp)
        if it >= tune:
            parts.append(forest_row_partitions(smp.pack(), X6)[0])
            fs.append(smp.values())
            rates.append(list(r.values()))
    return parts, np.array(fs), np.nanmean(np.array(rates, float), axis=0)


def test_gaussian_leaf_proposals_are_exact_conditionals():
    y = np.array([0.5, -1.0, 2.0, 0.3, 1.1, -0.4])
    s = 0.7

    def loglik(f, derivatives=False):
        ll = stats.norm.logpdf(y, f, s)
        return (ll, (y - f) / s**2, np.full(6, 1 / s**2)) if derivatives else ll

    smp = ForestSampler(X6, TreePrior(m=3, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, 0.8)
    rng = np.random.default_rng(5)
    cp = _move_cumprobs(MOVES)
    leaf = [smp.general_sweep(rng, loglik, cp)["accept_leaf"] for _ in range(200)]
    assert np.min(leaf) == 1.0


@pytest.mark.parametrize("case", list(CASES))
def test_general_kernel_matches_enumeration(case):
    leaf_sd, loglik, row, _ = CASES[case]
    prior = _prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    chains = [_run_kernel(loglik, leaf_sd, 20000, seed) for seed in (11, 12)]
    print(case, "acceptance (grow, prune, change, swap, leaf):", chains[0][2].round(3))
    check_cells([c[0] for c in chains], post, {k: prior[k] for k in post})
    fs = np.stack([c[1] for c in chains])  # (chain, draw, row)
    got = fs.mean(axis=(0, 1))
    se = np.asarray(az.mcse(fs)).ravel()
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)
