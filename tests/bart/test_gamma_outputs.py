"""Log-gamma leaves for one output of a term of shape (k, n) (issue 51, must-have 2): the
``(2, n)`` form ``Normal(w[0], pm.math.exp(w[1]))``, whose output 1 (a log sd, exponent
kappa = -2) gets the conjugate multiplicative update given the mean output w[0], which keeps
its own conjugate (Gaussian given the scale) update.

* Exact enumeration through ``pm.sample``: m = 1 tree per output on 6 rows at 3 distinct x;
  the joint posterior of the two trees' partitions (16 cells) and of both outputs' values is
  the tree prior times a quadrature over output 1's leaf values (up to 3, on a grid) of the
  Normal likelihood integrated over output 0's leaf values in closed form (Gaussian given
  the scale).  Independent of the sampler's closed forms.
* The learned leaf scale shared by outputs with normal and log-gamma leaves (of two
  exponents): its slice update against its conditional, computed on a grid of v.
* ``leaf_prior="auto"`` settles output by output; ``pm.sample_prior_predictive`` draws each
  output's settled prior.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_trees as pmt
from enumeration import (X6, check_cells, check_draws_on_grid, forest_row_partitions,
                         log_gamma_leaves_on_grid, partition_prior_rows)
from pymc_trees.bart.likelihood.leaf_choice import settled_leaf_priors
from pymc_trees.bart.samplers.gamma_sampler import GammaForestSampler
from pymc_trees.bart.samplers.leaf_priors import log_gamma_prior
from pymc_trees.bart.samplers.output_samplers import OutputSamplers
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.core.binning import bin_data, make_cutpoints

X3 = np.repeat(np.arange(3.0), 2)[:, None]  # 6 rows, 3 distinct x: 4 partitions per tree
Y3 = np.array([0.1, -0.1, 2.9, 1.1, -1.0, -1.2])
Y6 = np.array([0.3, 0.1, 0.25, 2.5, -2.8, -2.2])
SD = 0.5
ALPHA, BETA = 0.95, 1.0


def _log_sd_leaf_density(grid, sd, kappa=-2.0):
    """The density of a leaf value mu with ``exp(kappa mu) ~ Gamma(c, d)``, calibrated to
    mean 0 and sd ``sd``, at ``grid``."""
    c, d = log_gamma_prior(sd, kappa)
    u = kappa * grid
    return np.exp(c * math.log(d) - special.gammaln(c) + c * u - d * np.exp(u)
                  + math.log(abs(kappa)))


def _exact_two_outputs():
    """The exact posterior of ``y ~ Normal(w[0], exp(w[1]))`` with one tree per output (tree
    prior ALPHA, BETA; w[0]'s leaves Normal(0, SD^2), w[1]'s log-gamma with kappa = -2 and sd
    SD): the cells ``(partition of w[0], partition of w[1])``, their prior, and the posterior
    mean of w[0] and w[1] at every row.  w[1]'s leaf values on a trapezoid grid (71 points
    in [-3, 4] each; 141 points agree to 4 decimals); w[0]'s leaves integrated out in closed
    form given the rows' precisions ``exp(-2 w[1])``."""
    cuts, ncuts = make_cutpoints(X3, 100)
    prior = partition_prior_rows(bin_data(X3, cuts, ncuts), ncuts, ALPHA, BETA)
    grid = np.linspace(-3.0, 4.0, 71)
    h = grid[1] - grid[0]
    pw = np.full(grid.size, h)
    pw[[0, -1]] = h / 2
    pw = pw * _log_sd_leaf_density(grid, SD)
    Z, E0, E1 = {}, {}, {}
    for P1 in prior:
        leaves = [list(r) for r in P1]
        L = len(leaves)
        mesh = np.stack(np.meshgrid(*([grid] * L), indexing="ij"), -1).reshape(-1, L)
        w1 = np.prod(np.stack(np.meshgrid(*([pw] * L), indexing="ij"), -1).reshape(-1, L), 1)
        mu1 = np.empty((mesh.shape[0], 6))
        for j, rows in enumerate(leaves):
            mu1[:, rows] = mesh[:, [j]]
        prec = np.exp(-2.0 * mu1)
        base = -0.5 * np.sum(np.log(2 * np.pi) - np.log(prec) + Y3**2 * prec, axis=1)
        for P0 in prior:
            ll, m0 = base.copy(), np.empty_like(mu1)
            for rows in P0:
                rows = list(rows)
                W = prec[:, rows].sum(1)
                S = (prec[:, rows] * Y3[rows]).sum(1)
                ll += -0.5 * np.log1p(SD**2 * W) + 0.5 * S**2 * SD**2 / (1 + SD**2 * W)
                m0[:, rows] = (S * SD**2 / (1 + SD**2 * W))[:, None]
            wt = w1 * np.exp(ll) * prior[P0] * prior[P1]
            Z[P0, P1] = wt.sum()
            E0[P0, P1] = (wt[:, None] * m0).sum(0)
            E1[P0, P1] = (wt[:, None] * mu1).sum(0)
    total = sum(Z.values())
    post = {k: v / total for k, v in Z.items()}
    cells_prior = {(a, b): prior[a] * prior[b] for a in prior for b in prior}
    return cells_prior, post, sum(E0.values()) / total, sum(E1.values()) / total


@pytest.mark.slow
def test_mean_and_log_sd_outputs_match_enumeration_through_pm_sample():
    """``Normal(w[0], pm.math.exp(w[1]))``: the default settles output 1 to log-gamma leaves
    with exponent -2 and keeps normal leaves for output 0; ``pm.sample`` (2 chains x 2,500
    draws of 6 sweeps) must match the exact joint posterior of the two trees' partitions
    (N_eff-based TV tolerance) and the posterior mean of both outputs at every row (4
    MCSE); ``pmt.predict`` reproduces the trace."""
    prior, post, f0, f1 = _exact_two_outputs()
    with pm.Model():
        w = pmt.BARTTree("w", X3, m=1, alpha=ALPHA, beta=BETA, leaf_sd=SD, min_leaf=1,
                         shape=(2, 6))
        pm.Normal("y", w[0], pm.math.exp(w[1]), observed=Y3)
        step = pmt.CGMTreeStep([w])
        idata = pm.sample(draws=2500, tune=300, chains=2, cores=1, random_seed=29,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 6})
    assert step.leaf_prior == ("normal", "log-inverse-gamma")
    assert [getattr(p, "kappa", 0.0) for p in step.sampler.parts] == [0.0, -2.0]
    parts = [[tuple(forest_row_partitions(fr, X3)[0] for fr in row) for row in chain]
             for chain in pmt.forests(idata, "w").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    W = idata.posterior["w"].values  # (chain, draw, output, row)
    for j, want in ((0, f0), (1, f1)):
        got = W[:, :, j].mean(axis=(0, 1))
        se = np.asarray(az.mcse(W[:, :, j])).ravel()
        assert np.all(np.abs(got - want) < 4 * se), (j, got, want, se)
    np.testing.assert_array_equal(pmt.predict(idata, X3, "w").values, W)


@pytest.mark.slow
def test_learned_scale_shared_by_normal_and_log_gamma_outputs_matches_its_conditional():
    """``leaf_sd="learned"`` for a term whose outputs have normal leaves, log-gamma leaves
    of exponent -2 and of exponent 1: the slice update of the shared leaf variance follows
    ``v ~ InverseGamma(3, 2 sd0^2)`` times every forest's leaves' density at v, computed here
    on a grid of v (each log-gamma forest's ``(c, d)`` by :func:`log_gamma_prior` from
    ``sqrt(v)``, no Jacobian).  KS bound at the chain's ESS."""
    from pymc_trees.bart.steps.leaf_scale import LearnedLeafScale

    priors = [TreePrior(m=10, alpha=ALPHA, beta=BETA, min_leaf=1),
              TreePrior(m=10, alpha=ALPHA, beta=BETA, min_leaf=1,
                        leaf_prior="log-inverse-gamma", leaf_kappa=-2.0),
              TreePrior(m=10, alpha=ALPHA, beta=BETA, min_leaf=1, leaf_prior="log-gamma")]

    def make(X, prior, offset, leaf_sd, categorical):
        if prior.leaf_prior == "normal":
            return ForestSampler(X, prior, offset, leaf_sd, categorical)
        return GammaForestSampler(X, prior, offset, leaf_sd, categorical,
                                  kappa=prior.leaf_kappa or 1.0)

    smp = OutputSamplers(X6, priors, 0.0, 0.4, 3, make=make)
    rng = np.random.default_rng(6)
    smp.draw_prior(rng)
    sd0 = 0.3
    scale = LearnedLeafScale("w", sd0)
    v = np.array([(scale.update(rng, smp, {}, False), smp.leaf_sd)[1]
                  for _ in range(4000)]) ** 2
    assert len({p.leaf_sd for p in smp.parts}) == 1  # one scale for every output
    normal = smp.parts[0].forest.value[smp.parts[0].forest.var == -1]
    grid = np.linspace(1e-3, 2.0, 6000)
    logp = stats.invgamma(3.0, scale=2 * sd0**2).logpdf(grid)
    logp += stats.norm(0.0, np.sqrt(grid)[:, None]).logpdf(normal[None]).sum(axis=1)
    for p in smp.parts[1:]:
        logp += log_gamma_leaves_on_grid(grid, p.kappa * p.forest.value[p.forest.var == -1],
                                         p.kappa)
    check_draws_on_grid(v, grid, logp)


@pytest.mark.slow
def test_auto_settles_output_by_output():
    """Each output of a term with trees of its own gets the leaves its likelihood takes: a
    log sd given the mean (Normal or Student-t, also written ``exp(w)[1]``, and with the mean
    output inside it, which then holds ``a``), a Poisson mean and a Gamma mean in two
    likelihoods; normal leaves for outputs that share their trees and for a named
    ``leaf_prior``.  The prior draws settle alike."""
    n = 6
    cases = [
        (lambda w: pm.Normal("y", w[0], pm.math.exp(w[1]), observed=Y6), {},
         ("normal", "log-inverse-gamma"), -2.0),
        (lambda w: pm.StudentT("y", nu=5.0, mu=w[0], sigma=pm.math.exp(w[1] / 2),
                                       observed=Y6), {},
         ("normal", "log-inverse-gamma"), -1.0),
        (lambda w: pm.Normal("y", w[0], pm.math.exp(w)[1], observed=Y6), {},
         ("normal", "log-inverse-gamma"), -2.0),
        (lambda w: pm.Normal("y", w[0], pm.math.exp(w[1] + w[0]), observed=Y6), {},
         ("normal", "log-inverse-gamma"), -2.0),
        (lambda w: (pm.Poisson("y1", pm.math.exp(w[0]), observed=np.arange(n)),
                    pm.Gamma("y2", 2.0, 2.0 * pm.math.exp(-w[1]), observed=np.ones(n))), {},
         ("log-gamma", "log-inverse-gamma"), -1.0),
        (lambda w: pm.Normal("y", w[0], pm.math.exp(w[1]), observed=Y6),
         {"separate_trees": False}, "normal", 0.0),
        (lambda w: pm.Normal("y", w[0], pm.math.exp(w[1]), observed=Y6),
         {"leaf_prior": "normal"}, "normal", 0.0),
    ]
    for build, kw, want, kappa in cases:
        with pm.Model() as model:
            w = pmt.BARTTree("w", X6, m=2, leaf_sd=0.5, min_leaf=1, shape=(2, n), **kw)
            build(w)
            step = pmt.CGMTreeStep([w])
        assert step.leaf_prior == want, (want, kw)
        kappas = [getattr(p, "kappa", 0.0) for p in getattr(step.sampler, "parts", [])]
        assert (kappas[-1] if kappas else 0.0) == kappa
        names = want if isinstance(want, tuple) else (want, want)
        with model:
            got = settled_leaf_priors(w.owner.op)
        assert tuple(lp for lp, _ in got) == (names if kw.get("leaf_prior") is None
                                              and not kw else ("normal",) * 2)


@pytest.mark.slow
def test_prior_predictive_draws_each_outputs_settled_prior():
    """``pm.sample_prior_predictive`` of ``Normal(w[0], exp(w[1]))`` (m = 1, leaf sd 1):
    output 1 is one log-gamma leaf of exponent -2 at every row (skewness +1.47), output 0 a
    normal one (0).  Second and third moments within 4 standard errors."""
    c, _ = log_gamma_prior(1.0, -2.0)
    skew = -special.polygamma(2, c) / special.polygamma(1, c) ** 1.5
    with pm.Model() as model:
        w = pmt.BARTTree("w", X6, m=1, leaf_sd=1.0, min_leaf=1, shape=(2, 6))
        pm.Normal("y", w[0], pm.math.exp(w[1]), observed=Y6)
    draws = pm.sample_prior_predictive(draws=2000, model=model, random_seed=8,
                                       var_names=["w"]).prior["w"].values[0, :, :, 0]
    for j, want in ((0, 0.0), (1, skew)):
        for x, target in [(draws[:, j] ** 2, 1.0), (draws[:, j] ** 3, want)]:
            assert abs(x.mean() - target) < 4 * x.std() / np.sqrt(x.size), (j, x.mean(), want)


def test_named_log_gamma_leaves_on_outputs_point_to_auto():
    """A named log-gamma prior for every output is refused with the fix: the default
    ``"auto"`` gives each output its own."""
    from pymc_trees.bart.term.plan import TermPlanError

    with pm.Model():
        with pytest.raises(TermPlanError, match="leaf_prior='auto'"):
            pmt.BARTTree("w", X6, m=2, min_leaf=1, leaf_sd=0.5, shape=(2, 6),
                         leaf_prior="log-inverse-gamma")
