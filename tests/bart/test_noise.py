"""NoiseGibbs against the analytic conjugate posterior (docs/math.md section 4).

With the mean fixed, NoiseGibbs draws are independent draws from the conditional, so a
Kolmogorov-Smirnov test against the analytic distribution applies directly.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_trees as pmt
from pymc.sampling.mcmc import assign_step_methods

RNG = np.random.default_rng(20)
N = 30
Y = RNG.normal(1.0, 1.5, size=N)
W = RNG.uniform(0.5, 2.0, size=N)


def test_pymc_parameterisations_match_scipy():
    x = 0.7
    ig = pm.logp(pm.InverseGamma.dist(3.0, 2.0), x).eval()
    assert ig == pytest.approx(stats.invgamma(3.0, scale=2.0).logpdf(x))
    ga = pm.logp(pm.Gamma.dist(3.0, 2.0), x).eval()
    assert ga == pytest.approx(stats.gamma(3.0, scale=1 / 2.0).logpdf(x))


def _draws(model, name, seed=21, draws=4000):
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.step_methods.STEP_METHODS)
        assert pmt.NoiseGibbs in selected, selected
        idata = pm.sample(draws=draws, tune=10, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    return idata.posterior[name].values.ravel()


def test_variance_with_row_weights():
    with pm.Model() as model:
        s2 = pm.InverseGamma("sigma2", 3.0, 2.0)
        pm.Normal("y", mu=1.0, sigma=pm.math.sqrt(s2 / W), observed=Y)
    draws = _draws(model, "sigma2")
    sse_w = np.sum(W * (Y - 1.0) ** 2)
    post = stats.invgamma(3.0 + N / 2, scale=2.0 + sse_w / 2)
    assert stats.kstest(draws, post.cdf).pvalue > 1e-3
    assert abs(draws.mean() - post.mean()) < 4 * post.std() / np.sqrt(draws.size)


def test_precision_gamma():
    with pm.Model() as model:
        tau = pm.Gamma("tau", 2.0, 3.0)
        pm.Normal("y", mu=1.0, tau=tau, observed=Y)
    draws = _draws(model, "tau")
    post = stats.gamma(2.0 + N / 2, scale=1 / (3.0 + np.sum((Y - 1.0) ** 2) / 2))
    assert stats.kstest(draws, post.cdf).pvalue > 1e-3


def test_two_likelihoods_share_the_variance():
    Y2 = RNG.normal(size=10)
    with pm.Model() as model:
        s2 = pm.InverseGamma("sigma2", 2.0, 1.0)
        pm.Normal("y", mu=1.0, sigma=pm.math.sqrt(s2), observed=Y)
        pm.Normal("y2", mu=0.0, sigma=pm.math.sqrt(s2) * 2.0, observed=Y2)
    draws = _draws(model, "sigma2")
    sse = np.sum((Y - 1.0) ** 2) + np.sum(Y2**2) / 4.0
    post = stats.invgamma(2.0 + (N + 10) / 2, scale=1.0 + sse / 2)
    assert stats.kstest(draws, post.cdf).pvalue > 1e-3


def test_alongside_nuts_in_a_model_without_trees():
    """sigma2 by NoiseGibbs, the mean by NUTS, in one chain: the posterior of the mean has the
    Student-t form of the Normal-InverseGamma model when mu has a flat-ish Normal prior."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 100.0)
        s2 = pm.InverseGamma("sigma2", 2.0, 1.0)
        pm.Normal("y", mu=mu, sigma=pm.math.sqrt(s2), observed=Y)
        idata = pm.sample(draws=2000, tune=1000, chains=2, cores=1, random_seed=22,
                          progressbar=False, compute_convergence_checks=False)
    assert float(idata.posterior["mu"].mean()) == pytest.approx(Y.mean(), abs=0.15)


@pytest.mark.parametrize("build", ["sigma_is_variance", "mean_depends", "not_conjugate_prior"])
def test_unsupported_structures_are_left_to_other_steps(build):
    with pm.Model() as model:
        if build == "not_conjugate_prior":
            s2 = pm.HalfNormal("sigma2", 1.0)
            pm.Normal("y", mu=1.0, sigma=pm.math.sqrt(s2), observed=Y)
        else:
            s2 = pm.InverseGamma("sigma2", 2.0, 1.0)
            if build == "sigma_is_variance":
                pm.Normal("y", mu=1.0, sigma=s2, observed=Y)
            else:
                pm.Normal("y", mu=s2, sigma=pm.math.sqrt(s2), observed=Y)
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.step_methods.STEP_METHODS)
        assert pmt.NoiseGibbs not in selected
        if build != "not_conjugate_prior":
            with pytest.raises(pmt.ModelStructureError, match="NoiseGibbs supports"):
                pmt.NoiseGibbs([s2])
