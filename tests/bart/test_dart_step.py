"""DART inside the tree step (``BARTTree(..., split_prior="dart")``): the split-probability
update with a column's weight shared by two features (a numeric column with missing values)
against its conditional by quadrature, the concentration's slice update against its
conditional by quadrature, draws from Linero's prior, and prior recovery through
``pm.sample``."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

import pymc_trees as pmt
from pymc_trees.bart.kernels.forest import (LEAF, dart_concentration_draw, dart_prior_draw,
                                            split_prior_gibbs)
from pymc_trees.bart.samplers.tree_prior import TreePrior


def _cdf_on(grid, logd):
    cdf = integrate.cumulative_trapezoid(np.exp(logd - logd.max()), grid, initial=0.0)
    return cdf / cdf[-1]


def test_split_update_with_shared_column_weights_matches_quadrature():
    """Two columns: column 0 is two sampler features of share 1/2 each (features 0 and 1),
    column 1 is feature 2.  One tree's four internal nodes, with the features available at
    each, give with s = (u, 1 - u) the factors
    ``(u/2) / 1``, ``(u/2) / (u/2 + 1 - u)``, ``(1 - u) / (u/2 + 1 - u)``, ``(1 - u) / 1``,
    times the Dirichlet(a) prior: the chain of the update must follow that density
    (quadrature).  Ignoring the shares (every feature counted as a whole column) makes the
    two middle normalisers 1 and shifts the mean of u by 0.093 (over 60 standard errors)."""
    a = np.array([1.5, 0.8])
    fmap = np.array([0, 0, 1], np.int32)
    share = np.array([0.5, 0.5, 1.0])
    q = 3
    # nodes 0..3 internal, 4..8 leaves (their masks are not read)
    var = np.full((1, 9), LEAF, np.int32)
    var[0, :4] = [0, 1, 2, 2]
    n_nodes = np.array([9], np.int32)
    amask = np.zeros((1, 9, 2 * q), np.int16)
    avail = [(0, 1, 2), (1, 2), (0, 2), (0, 1, 2)]
    for k, feats in enumerate(avail):
        for v in range(q):
            if v not in feats:  # lo > hi: no available cut
                amask[0, k, v], amask[0, k, q + v] = 1, 0
    rng = np.random.default_rng(11)
    log_s = np.log(np.array([0.5, 0.5]))
    N = 20000
    u = np.empty(N)
    for i in range(N):
        log_s = split_prior_gibbs(rng, var, n_nodes, amask, a, log_s, fmap, share)
        u[i] = np.exp(log_s[0])
    grid = np.linspace(1e-7, 1 - 1e-7, 400_001)
    logd = (stats.beta(a[0], a[1]).logpdf(grid) + np.log(grid / 2)
            + np.log(grid / 2) - np.log(grid / 2 + 1 - grid)
            + np.log(1 - grid) - np.log(grid / 2 + 1 - grid) + np.log(1 - grid))
    cdf = _cdf_on(grid, logd)
    mean = float(integrate.trapezoid(grid * np.exp(logd - logd.max()), grid)
                 / integrate.trapezoid(np.exp(logd - logd.max()), grid))
    sd = float(np.sqrt(integrate.trapezoid((grid - mean) ** 2 * np.exp(logd - logd.max()), grid)
                       / integrate.trapezoid(np.exp(logd - logd.max()), grid)))
    ess = float(az.ess(u[None, :]))
    assert ess > 2000  # about 19,400 here
    # 4.5 standard errors at the effective sample size; KS at alpha = 0.001
    assert abs(u.mean() - mean) < 4.5 * sd / np.sqrt(ess), (u.mean(), mean, ess)
    d = stats.kstest(u, lambda x: np.interp(x, grid, cdf)).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)


def test_concentration_update_matches_its_conditional_by_quadrature():
    """With s held fixed, the slice update of x = log(alpha / p) leaves
    ``u = alpha / (alpha + p) | s ~ Beta(u | 0.5, 1) * Dirichlet(s | u / (1 - u))`` invariant
    (quadrature in u; Kolmogorov-Smirnov at the chain's ESS).  Dropping the Jacobian of the
    change from u to x fails it (KS 0.096 against a bound of 0.024)."""
    log_s = np.log(np.array([0.6, 0.3, 0.07, 0.02, 0.01]))
    p = log_s.size
    rng = np.random.default_rng(12)
    x = 0.0
    N = 8000
    u = np.empty(N)
    for i in range(N):
        x = dart_concentration_draw(rng, log_s, x)
        u[i] = 1 / (1 + np.exp(-x))
    grid = np.linspace(1e-7, 1 - 1e-7, 400_001)
    ag = grid / (1 - grid)
    logd = (stats.beta(0.5, 1.0).logpdf(grid) + gammaln(p * ag) - p * gammaln(ag)
            + (ag - 1) * log_s.sum())
    ess = float(az.ess(u[None, :]))
    assert ess > 1000
    cdf = _cdf_on(grid, logd)
    d = stats.kstest(u, lambda z: np.interp(z, grid, cdf)).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)


def test_prior_draws_follow_lineros_prior():
    """Independent draws of (log s, x): u = e^x / (1 + e^x) ~ Beta(0.5, 1) (KS, alpha =
    0.001) and, by symmetry, E s_c = 1 / p for every column."""
    rng = np.random.default_rng(13)
    p, N = 6, 20000
    out = [dart_prior_draw(rng, p) for _ in range(N)]
    u = np.array([1 / (1 + np.exp(-x)) for _, x in out])
    s = np.exp(np.array([ls for ls, _ in out]))
    assert np.allclose(s.sum(1), 1.0)
    assert stats.kstest(u, stats.beta(0.5, 1.0).cdf).statistic < 1.95 / np.sqrt(N)
    # Var s_c <= (1/p)(1 - 1/p): 4.5 standard errors of the mean of N draws
    bound = 4.5 * np.sqrt((1 / p) * (1 - 1 / p) / N)
    np.testing.assert_array_less(np.abs(s.mean(0) - 1 / p), bound)


@pytest.mark.slow
def test_dart_in_the_step_recovers_its_prior_through_pm_sample():
    """No information in the data (noise sd 1e4): the chain of (trees, s, alpha) inside the
    tree step leaves u = alpha / (alpha + p) distributed as Beta(0.5, 1) and every column's
    split probability with mean 1/3.  Column 0 has missing values (two sampler features
    sharing its weight) and column 1 is categorical, so nodes often lose features."""
    rng = np.random.default_rng(60)
    n = 40
    x0 = rng.uniform(size=n)
    x0[rng.uniform(size=n) < 0.25] = np.nan
    X = np.column_stack([x0, rng.integers(0, 3, n), rng.uniform(size=n)])
    with pm.Model():
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior="dart", min_leaf=1,
                         categorical=[1])
        pm.Normal("y", f, 1e4, observed=np.zeros(n))
        idata = pm.sample(draws=20000, tune=200, chains=2, cores=1, random_seed=61,
                          progressbar=False, compute_convergence_checks=False)
    alpha = idata.sample_stats["f_split_alpha"]
    assert alpha.dims == ("chain", "draw")
    probs = idata.sample_stats["f_split_probs"]
    assert probs.dims == ("chain", "draw", "f_column")
    assert np.allclose(probs.sum("f_column"), 1.0)
    ud = (alpha / (alpha + 3)).values
    ess = float(az.ess(ud))
    assert ess > 150  # about 580 here (u mixes slowly: alpha moves with every split)
    prior = stats.beta(0.5, 1.0)
    assert abs(ud.mean() - prior.mean()) < 4.5 * prior.std() / np.sqrt(ess), (ud.mean(), ess)
    d = stats.kstest(ud.ravel(), prior.cdf).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)
    for c in range(3):
        sc = probs.values[:, :, c]
        e = float(az.ess(sc))
        # Var s_c <= (1/3)(2/3) under the prior
        assert abs(sc.mean() - 1 / 3) < 4.5 * np.sqrt(2 / 9 / e), (c, sc.mean(), e)


def test_dart_in_the_step_with_outputs_and_refusals():
    """A term of shape (2, n): each output learns its own split probabilities (stats with an
    output dim); names of a DataFrame label the columns.  Bad names are refused."""
    import pandas as pd

    rng = np.random.default_rng(62)
    n = 60
    X = pd.DataFrame({"a": rng.uniform(size=n), "b": rng.uniform(size=n)})
    y = np.where(X["a"] > 0.5, 2.0, 0.0) + rng.normal(0, 0.3, n)
    with pm.Model():
        w = pmt.BARTTree("w", X, m=4, leaf_sd=0.5, split_prior="dart", shape=(2, n))
        pm.Normal("y", w[0], pm.math.exp(w[1]), observed=y)
        idata = pm.sample(draws=30, tune=30, chains=1, random_seed=63, progressbar=False,
                          compute_convergence_checks=False)
    probs = idata.sample_stats["w_split_probs"]
    assert probs.dims == ("chain", "draw", "w_output", "w_column")
    assert list(probs["w_column"].values) == ["a", "b"]
    assert idata.sample_stats["w_split_alpha"].dims == ("chain", "draw", "w_output")
    with pytest.raises(ValueError, match="uniform"):
        pmt.BARTTree.dist(X.values, y, split_prior="darts")
    with pytest.raises(ValueError, match="no split_prior weights"):
        TreePrior(split_prior=(1.0, 2.0), dart=True)
