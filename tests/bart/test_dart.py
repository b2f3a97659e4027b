"""Learned split probabilities (DART): the update against its analytic conditional, with and
without features that are unavailable at some nodes, prior recovery through ``pm.sample``,
and the refusals."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

import pymc_trees as pmt
from pymc_trees.bart.kernels.forest import LEAF, FREE, store_mask
from pymc_trees.bart.kernels.nodes import node_availability
from pymc_trees.bart.likelihood.structure import ModelStructureError


def _set_tree(fs, t, rules):
    """Write tree t of ``fs.forest`` from nested rules ``(v, cut, left, right)`` / ``None``
    (a leaf with value 0), with availability, masks and rows as the kernels keep them."""
    f = fs.ensure_rows()  # a built step holds no rows until its chain starts
    n, p = fs.X.shape
    hist = np.zeros((p, fs.cuts.shape[1] + 1), np.int32)
    lo = np.zeros(p, np.int32)
    hi = np.zeros(p, np.int32)
    f.var[t] = FREE
    slots = [0]

    def build(k, rows, rule, d):
        idx = np.asarray(rows, np.int32)
        f.wavail[t, k] = node_availability(fs.Xb, idx, 0, idx.size, fs.ncuts, fs.iscat,
                                           fs.prior.min_leaf, fs.split_prior, hist, lo, hi)
        store_mask(f.amask, t, k, lo, hi)
        f.depth[t, k] = d
        if rule is None:
            f.var[t, k] = LEAF
            f.value[t, k] = 0.0
            f.leaf_of_row[t, idx] = k
            return
        v, c, lr, rr = rule
        assert lo[v] <= c <= hi[v]
        kl, kr = slots[-1] + 1, slots[-1] + 2
        slots.append(kr)
        f.var[t, k], f.cut[t, k], f.ncut[t, k] = v, c, hi[v] - lo[v] + 1
        f.left[t, k], f.right[t, k] = kl, kr
        f.parent[t, kl] = f.parent[t, kr] = k
        go_left = fs.Xb[idx, v] <= c
        build(kl, idx[go_left], lr, d + 1)
        build(kr, idx[~go_left], rr, d + 1)

    build(0, np.arange(n), rules, 0)
    f.n_nodes[t] = slots[-1] + 1
    f.n_free[t] = 0


def _model(X, a, m, sd=1.0):
    with pm.Model() as model:
        s = pm.Dirichlet("s", a=np.asarray(a, float))
        f = pmt.BARTTree("f", X, m=m, leaf_sd=0.1, split_prior=s, min_leaf=1)
        pm.Normal("y", f, sd, observed=np.zeros(X.shape[0]))
    return model, f, s


def _draws(step, model, N):
    point = model.initial_point()
    out = np.empty((N, len(step.sampler.split_prior)))
    for i in range(N):
        point["s_simplex__"] = step.split_prior.draw_split(step.rng, step.sampler, point)
        out[i] = step.sampler.split_prior / step.sampler.split_prior.sum()
    return out


def test_split_update_is_the_conjugate_dirichlet_when_every_feature_is_available():
    """Every internal node can split on every feature (continuous columns, shallow trees):
    the update is then an independent draw from Dirichlet(a + counts)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 3))
    a = np.array([0.5, 1.0, 2.0])
    model, f, s = _model(X, a, m=4)
    with model:
        step = pmt.CGMTreeStep([f, s])
    fs = step.sampler
    q = lambda v, x: int(np.searchsorted(fs.cuts[v, :fs.ncuts[v]], x))  # noqa: E731
    trees = [(0, q(0, .5), (1, q(1, .5), None, None), None),
             (0, q(0, .3), None, (2, q(2, .6), None, None)),
             (1, q(1, .4), None, None),
             (0, q(0, .7), (0, q(0, .2), None, None), None)]
    for t, rules in enumerate(trees):
        _set_tree(fs, t, rules)
    am = fs.forest.amask  # every feature available at every internal node: lo <= hi
    assert all(np.all(am[t, k, :3] <= am[t, k, 3:]) for t in range(4)
               for k in range(fs.forest.n_nodes[t]) if fs.forest.var[t, k] >= 0)
    draws = _draws(step, model, 4000)
    post = a + np.array([4.0, 2.0, 1.0])
    mean = post / post.sum()
    var = mean * (1 - mean) / (post.sum() + 1)
    # independent draws: the mean of 4,000 is off by more than 4.5 standard errors with
    # probability below 1e-5 per component
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 4.5 * np.sqrt(var / 4000))
    assert np.all(np.abs(draws.var(0) / var - 1) < 0.15)


@pytest.mark.slow
def test_split_update_corrects_for_unavailable_features():
    """Every tree splits the root on the binary feature 1 and both children on feature 0;
    below the root feature 1 is constant, so those children choose among feature 0 alone
    (A = s_0).  With s = (u, 1 - u) the conditional is then
    Beta(a0 + 2m, a1 + m) * u^(-2m) = Beta(a0, a1 + m), far from the naive
    Beta(a0 + 2m, a1 + m)."""
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(size=40), np.repeat([0.0, 1.0], 20)])
    a = np.array([2.0, 1.5])
    m = 3
    model, f, s = _model(X, a, m=m)
    with model:
        step = pmt.CGMTreeStep([f, s])
    fs = step.sampler
    c = int(np.searchsorted(fs.cuts[0, :fs.ncuts[0]], 0.5))
    rules = (1, 0, (0, c, None, None), (0, c, None, None))
    for t in range(m):
        _set_tree(fs, t, rules)
    draws = _draws(step, model, 20000)
    u = draws[:, 0]
    target = stats.beta(a[0], a[1] + m)
    ess = float(az.ess(u[None, :]))
    # 4.5 standard errors of the mean at the chain's effective sample size
    assert abs(u.mean() - target.mean()) < 4.5 * target.std() / np.sqrt(ess), (u.mean(), ess)
    for qq in (0.25, 0.5, 0.75):
        # the fraction of draws below a target quantile: binomial error at the ESS
        frac = np.mean(u <= target.ppf(qq))
        assert abs(frac - qq) < 4.5 * np.sqrt(qq * (1 - qq) / ess), (qq, frac, ess)


@pytest.mark.slow
def test_split_probabilities_follow_their_prior_through_pm_sample():
    """No information in the data (noise sd 1e4): the chain of (trees, s) must leave s
    distributed as its Dirichlet prior.  On 30 rows with two few-valued columns, nodes often
    lose features, and the naive conjugate update would be wrong.  Column 0 has missing
    values: two sampler features that share its weight (refused before issue 26)."""
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.uniform(size=30), rng.integers(0, 3, 30), rng.integers(0, 2, 30)])
    X[rng.uniform(size=30) < 0.25, 0] = np.nan
    a = np.array([0.8, 1.2, 2.0])
    with pm.Model():
        s = pm.Dirichlet("s", a=a)
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=s, min_leaf=1)
        pm.Normal("y", f, 1e4, observed=np.zeros(30))
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["s"].values  # (chain, draw, 3)
    mean = a / a.sum()
    sd = np.sqrt(mean * (1 - mean) / (a.sum() + 1))
    for v in range(3):
        ess = float(az.ess(draws[:, :, v]))
        assert ess > 150  # about 350 here
        assert abs(draws[:, :, v].mean() - mean[v]) < 4.5 * sd[v] / np.sqrt(ess), (v, ess)


def test_concentration_update_matches_conditional_by_quadrature():
    """Linero's prior on the concentration, u ~ Beta(0.5, 1) with a = u / (1 - u) per
    feature: with s held fixed, the tree step's slice update of u against its conditional
    Beta(u | 0.5, 1) * Dirichlet(s | a(u)) normalised by quadrature (Kolmogorov-Smirnov at
    the chain's effective sample size, alpha = 0.001 for independent draws)."""
    X = np.random.default_rng(7).uniform(size=(60, 4))
    with pm.Model() as model:
        u = pm.Beta("u", 0.5, 1.0)
        s = pm.Dirichlet("s", a=pt.ones(4) * u / (1 - u))
        f = pmt.BARTTree("f", X, m=4, leaf_sd=0.1, split_prior=s)
        pm.Normal("y", f, 1.0, observed=np.zeros(60))
    with model:
        step = pmt.CGMTreeStep([f, s, u])
    step.rng = np.random.default_rng(8)
    s_fixed = np.array([0.7, 0.2, 0.08, 0.02])
    point = model.initial_point()
    point["s_simplex__"] = step.split_prior.split_value(np.log(s_fixed), np.float64)
    draws = np.empty(6000)
    for i in range(draws.size):
        point["u_logodds__"] = step.split_prior.draw_concentration(step.rng, point)
        draws[i] = 1 / (1 + np.exp(-float(point["u_logodds__"])))
    grid = np.linspace(1e-6, 1 - 1e-6, 200_001)
    a = grid / (1 - grid)
    logd = (stats.beta(0.5, 1.0).logpdf(grid) + gammaln(4 * a) - 4 * gammaln(a)
            + (a - 1) * np.log(s_fixed).sum())
    cdf = integrate.cumulative_trapezoid(np.exp(logd - logd.max()), grid, initial=0.0)
    cdf /= cdf[-1]
    ess = float(az.ess(draws[None, :]))
    d = stats.kstest(draws, lambda x: np.interp(x, grid, cdf)).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)


def test_log_gamma_draw_matches_the_log_gamma_moments():
    """``log G`` for ``G ~ Gamma(a)`` down to shapes where G itself is always 0 in floating
    point: the mean and variance of 20,000 independent draws against digamma(a) and
    trigamma(a)."""
    from scipy.special import polygamma, psi

    from pymc_trees.bart.kernels.forest import log_gamma_draw

    rng = np.random.default_rng(11)
    N = 20_000
    for a in (1e-4, 0.02, 0.7, 3.5):
        x = np.array([log_gamma_draw(rng, a) for _ in range(N)])
        assert np.all(np.isfinite(x))
        mean, var = float(psi(a)), float(polygamma(1, a))
        # the mean of N independent draws, off by 4.5 SE with probability below 1e-5; the
        # sample variance (log G is near -Exponential / a at small a: kurtosis 9)
        assert abs(x.mean() - mean) < 4.5 * np.sqrt(var / N), (a, x.mean(), mean)
        assert abs(x.var() / var - 1) < 4.5 * np.sqrt(8 / N), (a, x.var(), var)


@pytest.mark.slow
def test_linero_concentration_prior_recovery_through_pm_sample():
    """Linero's prior, u ~ Beta(0.5, 1) with a = u / (1 - u) per feature, and no information
    in the data: (trees, s, u) must leave u distributed as its prior.  The prior puts 3% of
    its mass below u = 1e-3, where the probabilities of unused features underflow (this run
    used to stop with NaN weights); s is held on the log scale."""
    rng = np.random.default_rng(50)
    X = np.column_stack([rng.uniform(size=40), rng.integers(0, 3, 40), rng.uniform(size=40)])
    with pm.Model():
        u = pm.Beta("u", 0.5, 1.0)
        s = pm.Dirichlet("s", a=pt.ones(3) * u / (1 - u))
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=s, min_leaf=1)
        pm.Normal("y", f, 1e4, observed=np.zeros(40))
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, random_seed=51,
                          progressbar=False, compute_convergence_checks=False)
    ud = idata.posterior["u"].values
    assert ud.min() < 1e-3  # the chain visits the region that used to fail
    ess = float(az.ess(ud))
    assert ess > 80  # about 170 here
    prior = stats.beta(0.5, 1.0)
    assert abs(ud.mean() - prior.mean()) < 4.5 * prior.std() / np.sqrt(ess), (ud.mean(), ess)
    # Kolmogorov-Smirnov at the effective sample size, alpha = 0.001
    d = stats.kstest(ud.ravel(), prior.cdf).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)
    sd = idata.posterior["s"].values.reshape(-1, 3)
    assert np.all(np.isfinite(sd)) and np.allclose(sd.sum(1), 1.0)


def test_concentration_as_a_model_variable():
    """DART's prior on the concentration through pm.sample: theta, which only s depends on,
    goes to the tree step with s (no NUTS in the model)."""
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(80, 4))
    y = 2 * X[:, 0] + rng.normal(0, 0.2, 80)
    with pm.Model():
        theta = pm.Gamma("theta", 2.0, 1.0)
        s = pm.Dirichlet("s", a=pm.math.ones(4) * theta / 4)
        f = pmt.BARTTree("f", X, y, m=10, split_prior=s)
        pm.Normal("y", f, 0.2, observed=y)
        idata = pm.sample(draws=100, tune=100, chains=1, random_seed=5, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["s"].shape == (1, 100, 4)
    assert np.allclose(idata.posterior["s"].values.sum(-1), 1.0)
    assert idata.posterior["theta"].values.std() > 0
    assert "accept_grow" in idata.sample_stats
    assert "step_size" not in idata.sample_stats  # no NUTS


def test_refusals():
    X = np.random.default_rng(0).uniform(size=(40, 3))
    with pm.Model():
        w = pm.HalfNormal("w", 1.0, shape=3)
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=w)
        pm.Normal("y", f, 1.0, observed=np.zeros(40))
        with pytest.raises(ModelStructureError, match="pm.Dirichlet"):
            pmt.CGMTreeStep([f, w])
    with pm.Model():
        s = pm.Dirichlet("s", a=np.ones(3))
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=s)
        pm.Normal("y", f + s[0], 1.0, observed=np.zeros(40))
        with pytest.raises(ModelStructureError, match="also enters"):
            pmt.CGMTreeStep([f, s])
    with pm.Model():
        s = pm.Dirichlet("s", a=np.ones(3))
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=s)
        pm.Normal("y", f, 1.0, observed=np.zeros(40))
        pm.Potential("favour_0", 3 * pm.math.log(s[0]))
        with pytest.raises(ModelStructureError, match="Potential 'favour_0'"):
            pmt.CGMTreeStep([f, s])
    with pm.Model():
        s = pm.Dirichlet("s", a=np.ones(4))
        with pytest.raises(ValueError, match="length 4"):
            pmt.BARTTree("f", X, m=5, leaf_sd=0.1, split_prior=s)
