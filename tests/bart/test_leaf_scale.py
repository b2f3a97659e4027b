"""A learned leaf scale (``BARTTree(..., leaf_sd=<PyMC variable>)``), sampled by the tree step.

* Its update, with the forest held fixed, against the analytic full conditional: the
  inverse-gamma on the leaf variance is conjugate, ``IG(a + L/2, b + S/2)`` for L leaves with
  sum of squares S; a half-Normal on the sd has the density ``HN(s) s^-L exp(-S / 2 s^2)``,
  normalised by quadrature.
* Prior recovery through ``pm.sample``: with data that carry no information (noise sd 1e4),
  the chain must give the variable its prior; a wrong conditional (a dropped Jacobian, S
  counted twice) moves it.

The slice draws of one chain are autocorrelated, so the Kolmogorov-Smirnov bound uses the
effective number of draws (ArviZ ESS): ``D < 1.95 / sqrt(ESS)`` (alpha = 0.001 for independent
draws).
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.sampling.mcmc import assign_step_methods
from scipy import integrate, stats

import pymc_trees as pmt
from pymc_trees.bart.kernels.forest import LEAF
from pymc_trees.bart.likelihood.structure import ModelStructureError

RNG = np.random.default_rng(40)
X = RNG.uniform(size=(40, 2))
Y = np.where(X[:, 0] > 0.5, 1.5, -1.0) + 0.3 * RNG.normal(size=40)


def _ks_bound(draws) -> float:
    ess = float(az.ess(np.asarray(draws)[None, :]))
    return 1.95 / np.sqrt(ess)


def _conditional_draws(model, f, scale, n_draws=3000, seed=41):
    """Grow a forest with 30 sweeps, then hold it fixed and run the leaf-scale update alone."""
    with model:
        step = pmt.CGMTreeStep([f, scale])
    point = model.initial_point()
    rng = np.random.default_rng(seed)
    step.rng = rng
    for _ in range(30):
        point, _ = step.step(point)
    leaves = step.sampler.forest.var == LEAF
    L = int(leaves.sum())
    S = float(np.sum(step.sampler.forest.value[leaves] ** 2))
    name = model.rvs_to_values[scale].name
    out = np.empty(n_draws)
    for i in range(n_draws):
        point[name] = step.leaf_scale.draw(step.rng, step.sampler, point)
        out[i] = float(np.exp(point[name]))  # both variables carry the log transform
    return out, L, S


def test_inverse_gamma_leaf_variance_matches_conjugate_conditional():
    with pm.Model() as model:
        v = pm.InverseGamma("v", alpha=3.0, beta=0.5)
        f = pmt.BARTTree("f", X, Y, m=4, leaf_sd=pt.sqrt(v), response="constant")
        pm.Normal("y", f, 0.5, observed=Y)
    draws, L, S = _conditional_draws(model, f, v)
    assert L > 4  # the forest has grown
    exact = stats.invgamma(3.0 + L / 2, scale=0.5 + S / 2)
    d = stats.kstest(draws, exact.cdf).statistic
    assert d < _ks_bound(draws), (d, L, S)


def test_half_normal_leaf_sd_matches_conditional_by_quadrature():
    with pm.Model() as model:
        s = pm.HalfNormal("s", sigma=0.4)
        f = pmt.BARTTree("f", X, Y, m=4, leaf_sd=s, response="constant")
        pm.Normal("y", f, 0.5, observed=Y)
    draws, L, S = _conditional_draws(model, f, s, seed=42)

    def dens(x):
        return np.exp(stats.halfnorm(scale=0.4).logpdf(x) - L * np.log(x) - S / (2 * x * x)
                      - (-L * np.log(0.3) - S / (2 * 0.09)))

    grid = np.linspace(1e-4, 5.0, 200_001)
    cdf = integrate.cumulative_trapezoid(dens(grid), grid, initial=0.0)
    cdf /= cdf[-1]
    d = stats.kstest(draws, lambda x: np.interp(x, grid, cdf)).statistic
    assert d < _ks_bound(draws), (d, L, S)


@pytest.mark.slow
def test_prior_recovered_through_pm_sample():
    """Uninformative data: the chain's leaf variance must follow its prior IG(3, 0.5); the
    step is assigned by pm.sample itself, holding both variables, and reports leaf_sd."""
    with pm.Model() as model:
        v = pm.InverseGamma("v", alpha=3.0, beta=0.5)
        f = pmt.BARTTree("f", X, m=3, leaf_sd=pt.sqrt(v))
        pm.Normal("y", f, 1e4, observed=Y)
        _, selected = assign_step_methods(model, None, methods=pm.step_methods.STEP_METHODS)
        assert {x.name for x in selected[pmt.CGMTreeStep]} == {"f", "v_log__"}
        step = pmt.CGMTreeStep(selected[pmt.CGMTreeStep])  # how pm.sample builds it
        assert [x.name for x in step.vars] == ["f", "v_log__"]
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=2, random_seed=43,
                          progressbar=False, compute_convergence_checks=False)
    vs = idata.posterior["v"].values
    np.testing.assert_allclose(idata.sample_stats["f_leaf_sd"].values, np.sqrt(vs), rtol=1e-6)
    ess = float(az.ess(vs))
    d = stats.kstest(vs.ravel(), stats.invgamma(3.0, scale=0.5).cdf).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)


def test_leaf_scale_must_belong_to_one_term():
    with pm.Model():
        v = pm.InverseGamma("v", alpha=3.0, beta=0.5)
        f1 = pmt.BARTTree("f1", X, Y, m=3, leaf_sd=pt.sqrt(v))
        f2 = pmt.BARTTree("f2", X, Y, m=3, leaf_sd=pt.sqrt(v))
        pm.Normal("y", f1 + f2, 0.5, observed=Y)
        with pytest.raises(ModelStructureError, match="also enters 'f2'"):
            pmt.CGMTreeStep([f1, v])
    with pm.Model():
        a = pm.HalfNormal("a")
        b = pm.HalfNormal("b")
        f = pmt.BARTTree("f", X, Y, m=3, leaf_sd=a * b)
        pm.Normal("y", f, 0.5, observed=Y)
        with pytest.raises(ModelStructureError, match="several free variables"):
            pmt.CGMTreeStep([f, a, b])
    with pm.Model():
        v = pm.InverseGamma("v", alpha=3.0, beta=0.5)
        f = pmt.BARTTree("f", X, Y, m=3, leaf_sd=pt.sqrt(v))
        pm.Normal("y", f, 0.5, observed=Y)
        with pytest.raises(ValueError, match="pass both"):
            pmt.CGMTreeStep([f])
    with pm.Model():
        v = pm.InverseGamma("v", alpha=3.0, beta=0.5)
        f = pmt.BARTTree("f", X, Y, m=3, leaf_sd=pt.sqrt(v))
        pm.Normal("y", f, 0.5, observed=Y)
        pm.Potential("pull", -((v - 1.0) ** 2))
        with pytest.raises(ModelStructureError, match="Potential 'pull'"):
            pmt.CGMTreeStep([f, v])


# -- leaf_sd="learned": the leaf scale learned inside the tree step, without a model variable

def test_internal_scale_draw_matches_conjugate_conditional():
    """``learned_scale_draw`` against ``IG(3 + L/2, 2 sd0^2 + S/2)`` on the variance, with
    independent draws (no chain), so the KS bound is the plain one."""
    from pymc_trees.bart.samplers.leaf_priors import learned_scale_draw

    rng = np.random.default_rng(44)
    sd0, L, S = 0.3, 17.0, 2.4
    v = np.array([learned_scale_draw(rng, sd0, L, S) for _ in range(20_000)]) ** 2
    exact = stats.invgamma(3.0 + L / 2, scale=2 * sd0**2 + S / 2)
    d = stats.kstest(v, exact.cdf).statistic
    assert d < 1.95 / np.sqrt(v.size), d


@pytest.mark.slow
def test_internal_scale_prior_recovered_through_pm_sample():
    """Uninformative data: the leaf variance recorded in the ``leaf_sd`` stat must follow its
    prior ``IG(3, 2 sd0^2)`` with sd0 the calibration from Y; and a chain must start from
    the calibrated scale whatever ran before it with the same step (a seed reproduces)."""
    from pymc_trees.bart.likelihood.calibration import leaf_calibration

    _, sd0 = leaf_calibration(Y, m=3)
    with pm.Model() as model:
        f = pmt.BARTTree("f", X, Y, m=3, leaf_sd="learned")
        pm.Normal("y", f, 1e4, observed=Y)
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=2, random_seed=45,
                          progressbar=False, compute_convergence_checks=False)
    assert "leaf_sd" not in idata.posterior  # no model variable was created
    vs = idata.sample_stats["f_leaf_sd"].values ** 2
    ess = float(az.ess(vs))
    d = stats.kstest(vs.ravel(), stats.invgamma(3.0, scale=2 * sd0**2).cdf).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)
    with model:
        step = pmt.CGMTreeStep([f])
        a, b = (pm.sample(draws=20, tune=20, chains=1, step=step, random_seed=46,
                          progressbar=False, compute_convergence_checks=False)
                for _ in range(2))
    np.testing.assert_array_equal(a.sample_stats["f_leaf_sd"].values,
                                  b.sample_stats["f_leaf_sd"].values)


def test_internal_scale_needs_Y():
    with pm.Model():
        with pytest.raises(ValueError, match="pass Y"):
            pmt.BARTTree("f", X, m=3, leaf_sd="learned")
        with pytest.raises(ValueError, match="\"learned\""):
            pmt.BARTTree("g", X, Y, m=3, leaf_sd="learnt")


def test_default_learns_the_scale_and_fixed_turns_it_off():
    """The README's term learns its leaf scale (issue 26); ``leaf_sd="fixed"`` or a number
    keeps it at one value in every draw."""
    from pymc_trees.bart.likelihood.calibration import leaf_calibration

    def leaf_sds(**kw):
        with pm.Model():
            f = pmt.BARTTree("f", X, Y, m=3, **kw)
            pm.Normal("y", f, 0.5, observed=Y)
            assert f.owner.op.prior.learned_scale == (kw.get("leaf_sd") is None)
            idata = pm.sample(draws=30, tune=10, chains=1, random_seed=47, progressbar=False,
                              compute_convergence_checks=False)
        return idata.sample_stats["f_leaf_sd"].values.ravel()

    assert np.unique(leaf_sds()).size == 30
    _, sd0 = leaf_calibration(Y, m=3)
    np.testing.assert_allclose(leaf_sds(leaf_sd="fixed"), sd0)
    np.testing.assert_allclose(leaf_sds(leaf_sd=0.7), 0.7)


@pytest.mark.slow
def test_prior_draws_of_a_learned_scale_mix_over_it():
    """``pm.sample_prior_predictive`` draws the learned scale from its prior first: f at a row
    is then ``offset + sqrt(m v) z`` with ``v ~ IG(3, 2 sd0^2)``, a Student-t with 6 degrees
    of freedom and scale ``sqrt(m 2 sd0^2 / 3)``, whose tails beyond 3 prior sds hold 1.04%
    of the draws against 0.27% for the fixed scale's Normal.  The count of such draws must
    fall within 4 binomial sds of the t's expectation (a prior that ignored the learned scale
    gives about a quarter of it)."""
    from pymc_trees.bart.likelihood.calibration import leaf_calibration

    m, n_draws = 3, 4000
    offset, sd0 = leaf_calibration(Y, m=m)
    with pm.Model():
        pmt.BARTTree("f", X, Y, m=m)
        draws = pm.sample_prior_predictive(draws=n_draws, random_seed=48)
    f0 = draws.prior["f"].values.reshape(n_draws, -1)[:, 0] - offset
    cut = 3 * np.sqrt(m) * sd0  # 3 prior sds of f (the prior variance is m sd0^2 for both)
    p_t = 2 * stats.t(6, scale=np.sqrt(m * 2 * sd0**2 / 3)).sf(cut)
    count = int(np.sum(np.abs(f0) > cut))
    expect, sd = n_draws * p_t, np.sqrt(n_draws * p_t * (1 - p_t))
    assert abs(count - expect) < 4 * sd, (count, expect, sd)


def test_interweaving_draw_matches_its_conditional_by_quadrature():
    """``interweaving_draw``: a chain of the non-centred update of the leaf sd tau with the
    leaves' shape held (``A``, ``B`` fixed) against its density ``tau^-(2a+1) exp(-b/tau^2 -
    A tau^2 / 2 + B tau)`` normalised by quadrature: the mean and sd of tau, and a KS test
    with the chain's N_eff.  Dropping the Jacobian of ``log tau`` fails the mean (z about 16)."""
    from pymc_trees.bart.steps.leaf_scale import interweaving_draw
    from pymc_trees.bart.samplers.leaf_priors import learned_scale_prior

    rng = np.random.default_rng(47)
    sd0, A, B = 0.3, 40.0, 9.0
    a, b = learned_scale_prior(sd0)
    t = np.linspace(1e-3, 2.0, 20_001)
    logp = -(2 * a + 1) * np.log(t) - b / t**2 - 0.5 * A * t**2 + B * t
    p = np.exp(logp - logp.max())
    p /= integrate.trapezoid(p, t)
    cdf = np.cumsum(p) * (t[1] - t[0])
    draws, tau = np.empty(6000), sd0
    for i in range(draws.size):
        tau = interweaving_draw(rng, tau, A, B, sd0)
        draws[i] = tau
    ess = float(az.ess(draws[None, :]))
    mean = float(integrate.trapezoid(t * p, t))
    sd = float(np.sqrt(integrate.trapezoid((t - mean) ** 2 * p, t)))
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(ess), (draws.mean(), mean, ess)
    d = stats.kstest(draws, lambda x: np.interp(x, t, cdf)).statistic
    assert d < 1.95 / np.sqrt(ess), (d, ess)


def test_the_interweaving_products_are_the_row_order_sums():
    """The two products the non-centred update reads (``weighted_products``) against a
    Python loop in row order, to the bit, with row precisions and with a common one (the
    Gaussian case, broadcast as the update passes it)."""
    from pymc_trees.bart.kernels.row_passes import weighted_products

    rng = np.random.default_rng(5)
    # magnitudes over 12 orders, so that another order of the additions rounds differently
    g, z = rng.normal(size=257) * 10.0 ** rng.uniform(-6, 6, 257), rng.normal(size=257)
    for omega in (rng.gamma(2.0, size=257), np.broadcast_to(np.float64(4.0), (257,))):
        a = b = 0.0
        for i in range(257):
            a += omega[i] * g[i] * g[i]
            b += omega[i] * g[i] * z[i]
        assert weighted_products(omega, g, z) == (a, b)


def test_learned_scale_with_interweaving_matches_enumeration_through_pm_sample():
    """A Gaussian term on 10 rows of one column, m = 1, ``leaf_sd="learned"``: the exact joint
    posterior of the partition and the leaf sd (partitions enumerated, the leaf values
    integrated out, the sd on a grid of ``log sd``) against ``pm.sample``, whose step draws
    the scale centred given the leaves and non-centred given the leaves' shape every
    iteration.  The partitions' total variation (``check_cells``) and the posterior mean of
    the leaf sd (within 4 MCSE) must match.  Drawing the non-centred update without its
    Gaussian factor (``A = B = 0``: tau from its prior) fails the leaf sd (z about 6)."""
    import math

    from enumeration import check_cells, forest_row_partitions, incidence_rows, log_marginal
    from enumeration import partition_prior_rows
    from pymc_trees.bart.likelihood.calibration import leaf_calibration
    from pymc_trees.bart.samplers.leaf_priors import learned_scale_prior
    from pymc_trees.core.binning import bin_data, make_cutpoints

    X1 = np.repeat(np.arange(5.0), 2)[:, None]
    y = np.array([0.1, -0.4, 0.9, 0.3, 1.6, 1.1, 1.5, 2.2, -0.6, 0.2])
    sigma, alpha, beta = 0.6, 0.95, 1.0
    offset, sd0 = leaf_calibration(y, m=1)
    a, b = learned_scale_prior(sd0)
    cuts, ncuts = make_cutpoints(X1, 100)
    prior = partition_prior_rows(bin_data(X1, cuts, ncuts), ncuts, alpha, beta)
    u = np.linspace(math.log(sd0) - 5.0, math.log(sd0) + 4.0, 1201)
    sd = np.exp(u)
    log_su = stats.invgamma(a, scale=b).logpdf(sd**2) + np.log(2 * sd**2)  # density of log sd
    joint = {(part,): math.log(prior[part]) + log_su + np.array(
        [log_marginal(y - offset, sigma, s, [incidence_rows(part, y.size)]) for s in sd])
        for part in prior}
    top = max(float(v.max()) for v in joint.values())
    w = {k: np.exp(v - top) for k, v in joint.items()}
    z = sum(float(integrate.trapezoid(v, u)) for v in w.values())
    post = {k: float(integrate.trapezoid(v, u)) / z for k, v in w.items()}
    sd_mean = sum(float(integrate.trapezoid(v * sd, u)) for v in w.values()) / z
    with pm.Model():
        f = pmt.BARTTree("f", X1, y, m=1, alpha=alpha, beta=beta, min_leaf=1,
                         split_prior="uniform", leaf_sd="learned", response="constant")
        pm.Normal("y", mu=f, sigma=sigma, observed=y)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=48,
                          step=pmt.CGMTreeStep([f], sweeps=5), progressbar=False,
                          compute_convergence_checks=False)
    parts = [[(forest_row_partitions(fr, X1)[0],) for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k[0]] for k in post})
    sds = idata.sample_stats["f_leaf_sd"].values
    assert abs(sds.mean() - sd_mean) < 4 * float(az.mcse(sds)), (sds.mean(), sd_mean,
                                                                 float(az.mcse(sds)))
