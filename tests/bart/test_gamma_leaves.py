"""Log-gamma leaves (``BARTTree(..., leaf_prior="log-gamma" | "log-inverse-gamma")``): the
conjugate sweep of :mod:`pymc_trees.bart.kernels.gamma_leaves` against exact posteriors.

* The closed-form leaf marginal equals quadrature of the likelihood against the log-gamma
  prior's density, and the calibration gives every leaf mean 0 and sd ``leaf_sd``.
* Exact enumeration, m = 1 on 6 rows: the posterior over the 32 row partitions is the tree
  prior times, per leaf, a one-dimensional quadrature of the likelihood against the leaf's
  log-gamma prior density (``tests/enumeration.py``, with the prior's density in place of
  the normal one), independent of the sampler's closed form.  The sampled partitions must
  match it within the N_eff-based tolerance of the other enumeration tests, and the
  posterior mean of f at every row within 4 Monte Carlo standard errors.  Families: Poisson
  with an exposure, the zero-inflated Poisson (which zeros are the Poisson's, drawn every
  sweep), the negative binomial (its Gamma-Poisson latent rates drawn every sweep), a Gamma
  mean, a Normal's and a Student-t's log variance (latent scales), the
  Normal written with ``tau``; the likelihood is read from each PyMC model (the path the
  tree step takes) and swept by the sampler; Poisson and the Student-t also through
  ``pm.sample``.
* Prior recovery: with no data the sweep leaves the prior invariant (trees and leaves).
* The learned leaf scale (``leaf_sd="learned"``): its slice update against its conditional
  computed independently on a grid, and the joint enumeration of partitions and leaf
  variance through ``pm.sample``.
* ``leaf_prior="auto"``: which prior each likelihood settles to, and that
  ``pm.sample_prior_predictive`` draws the settled prior.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_trees as pmt
from enumeration import (X6, check_cells, check_draws_on_grid, forest_row_partitions,
                         log_gamma_leaves_on_grid, quadrature_posterior, six_row_prior)
from pymc_trees.bart.likelihood.gamma_likelihood import gamma_likelihood
from pymc_trees.bart.samplers.gamma_sampler import GammaForestSampler
from pymc_trees.bart.samplers.leaf_priors import leaf_prior_kappa, log_gamma_prior
from pymc_trees.bart.kernels.gamma_leaves import gamma_log_ml
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs

ALPHA, BETA = 0.95, 1.0
LEAF_SD = 1.0
Y_COUNT = np.array([1, 0, 1, 7, 8, 5])
Y_ZIP = np.array([0, 0, 1, 7, 0, 5])
EXPOSURE = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0])
Y_REAL = np.array([0.3, 0.1, 0.25, 2.5, -2.8, -2.2])
Y_POS = np.array([0.4, 0.7, 0.5, 4.0, 6.0, 3.0])
CP = move_cumulative_probs({"grow": 0.25, "prune": 0.25, "change": 0.4, "swap": 0.1})


def log_gamma_logpdf(leaf_prior, leaf_sd=LEAF_SD):
    """The leaf value's log density: ``exp(kappa mu) ~ Gamma(c, rate d)``."""
    kappa = leaf_prior_kappa(leaf_prior)
    c, d = log_gamma_prior(leaf_sd, kappa)

    def logpdf(mu):
        u = kappa * np.asarray(mu)
        return c * math.log(d) - special.gammaln(c) + c * u - d * np.exp(u) + math.log(abs(kappa))
    return logpdf


# name: (leaf prior, the model's likelihood given f, row log-likelihood at leaf value mu,
#        has latent variables)
CASES = {
    "poisson_exposure": (
        "log-gamma",
        lambda f: pm.Poisson("y", mu=pm.math.exp(0.3 + f) * EXPOSURE, observed=Y_COUNT),
        lambda i, mu: stats.poisson.logpmf(Y_COUNT[i], EXPOSURE[i] * np.exp(0.3 + mu)), False),
    "zero_inflated_poisson": (
        "log-gamma",
        lambda f: pm.ZeroInflatedPoisson("y", psi=0.7, mu=pm.math.exp(0.3 + f), observed=Y_ZIP),
        lambda i, mu: np.logaddexp(np.log(0.3) + np.where(Y_ZIP[i] == 0, 0.0, -np.inf),
                                   np.log(0.7) + stats.poisson.logpmf(Y_ZIP[i],
                                                                      np.exp(0.3 + mu))),
        True),
    "negative_binomial": (
        "log-gamma",
        lambda f: pm.NegativeBinomial("y", mu=pm.math.exp(0.5 + f), alpha=2.0,
                                      observed=Y_COUNT),
        lambda i, mu: stats.nbinom.logpmf(Y_COUNT[i], 2.0, 2.0 / (2.0 + np.exp(0.5 + mu))),
        True),
    "gamma_mean": (
        "log-inverse-gamma",
        lambda f: pm.Gamma("y", alpha=2.0, beta=2.0 * pm.math.exp(-f), observed=Y_POS),
        lambda i, mu: stats.gamma.logpdf(Y_POS[i], 2.0, scale=np.exp(mu) / 2), False),
    "normal_log_variance": (
        "log-inverse-gamma",
        lambda f: pm.Normal("y", mu=0.2, sigma=pm.math.sqrt(pm.math.exp(f)), observed=Y_REAL),
        lambda i, mu: stats.norm.logpdf(Y_REAL[i], 0.2, np.exp(mu / 2)), False),
    "student_t_log_variance": (
        "log-inverse-gamma",
        lambda f: pm.StudentT("y", nu=10.0, mu=0.2, sigma=pm.math.exp(f / 2), observed=Y_REAL),
        lambda i, mu: stats.t.logpdf(Y_REAL[i], 10.0, 0.2, np.exp(mu / 2)), True),
}


def _exact(case):
    leaf_prior, _, row, _ = CASES[case]
    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, 6, row, LEAF_SD, log_gamma_logpdf(leaf_prior))
    return prior, post, f_mean


def _model(case, sampler="cgm"):
    leaf_prior, build, _, _ = CASES[case]
    with pm.Model() as model:
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         leaf_prior=leaf_prior, sampler=sampler)
        build(f)
    return model, f


def _chain(case, draws, sweeps, seed, tune=300):
    """A chain as the tree step runs it: the likelihood read from the PyMC model, its rates
    (and latent variables) at the current values before every sweep."""
    leaf_prior, _, _, latent = CASES[case]
    model, f = _model(case)
    lik = gamma_likelihood(model, f, 6, leaf_prior)
    point = model.initial_point()
    prior = TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1, leaf_prior=leaf_prior)
    smp = GammaForestSampler(X6, prior, 0.0, LEAF_SD, kappa=leaf_prior_kappa(leaf_prior))
    rng = np.random.default_rng(seed)

    def sweep(k):
        if not latent:
            smp.gamma_sweep(rng, *lik.rates(point, 0.0), CP, sweeps=k)
            return
        for _ in range(k):
            smp.gamma_sweep(rng, *lik.rates(point, 0.0, smp.values(), rng), CP)

    sweep(tune)
    parts, fs = [], []
    for _ in range(draws):
        sweep(sweeps)
        parts.append(forest_row_partitions(smp.pack(), X6)[0])
        fs.append(smp.values())
    return parts, np.array(fs)


def check_f_mean(fs, f_mean):
    fs = np.stack(fs)  # (chain, draw, row)
    got = fs.mean(axis=(0, 1))
    se = np.asarray(az.mcse(fs)).ravel()
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)


@pytest.mark.parametrize("leaf_sd", [0.1, 0.35, 1.0, 2.0])
@pytest.mark.parametrize("leaf_prior", ["log-gamma", "log-inverse-gamma"])
def test_leaf_marginal_and_calibration_match_quadrature(leaf_prior, leaf_sd):
    """``gamma_log_ml`` is the log of ``int phi^A exp(-B phi) Gamma(phi; c, d) dphi`` (here by
    quadrature over the leaf value mu, ``phi = exp(kappa mu)``), and the calibrated prior has
    mean 0 and sd ``leaf_sd``."""
    kappa = leaf_prior_kappa(leaf_prior)
    c, d = log_gamma_prior(leaf_sd, kappa)
    logpdf = log_gamma_logpdf(leaf_prior, leaf_sd)
    lo, hi = -40 * leaf_sd, 40 * leaf_sd
    moments = [integrate.quad(lambda u: u**k * np.exp(logpdf(u)), lo, hi, limit=400,
                              points=[0.0])[0] for k in range(3)]
    assert moments[0] == pytest.approx(1.0, abs=1e-9)
    assert moments[1] == pytest.approx(0.0, abs=1e-9)
    assert math.sqrt(moments[2]) == pytest.approx(leaf_sd, rel=1e-9)
    for A, B in [(0.0, 0.0), (3.0, 2.5), (17.0, 4.0), (0.5, 0.01)]:
        def integrand(u):
            phi = np.exp(kappa * u)
            return np.exp(A * np.log(phi) - B * phi + logpdf(u))
        val = integrate.quad(integrand, lo, hi, limit=400, points=[0.0])[0]
        assert gamma_log_ml(A, B, c, d) == pytest.approx(math.log(val), rel=1e-8, abs=1e-9)


# draws per chain and sweeps per draw, sized for a tolerance below a third of TV(prior,
# posterior): N_eff of the top cells 1,500 to 3,000 over the two chains
DRAWS = {"poisson_exposure": (3000, 5), "negative_binomial": (3000, 5), "gamma_mean": (3000, 5),
         "zero_inflated_poisson": (3000, 5),
         "normal_log_variance": (3000, 5),
         "student_t_log_variance": (3000, 5)}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_sweep_matches_enumeration(case):
    prior, post, f_mean = _exact(case)
    chains = [_chain(case, *DRAWS[case], seed) for seed in (11, 12)]
    check_cells([c[0] for c in chains], post, {k: prior[k] for k in post})
    check_f_mean([c[1] for c in chains], f_mean)


def test_a_grows_children_summed_in_the_pass_are_the_sums_of_its_collected_rows():
    """The pass's sums of a grow's children (four lanes on vector registers) against the
    leaf's rows collected and split: equal up to rounding, on rates over 12 orders of
    magnitude, for leaf indices of every width the forest uses."""
    from pymc_trees.bart.kernels.row_blocks import gamma_grow_rows

    rng = np.random.default_rng(5)
    n = 1_003
    xv = rng.integers(0, 10, n).astype(np.uint8)
    s = rng.poisson(3.0, n).astype(np.float64)
    e = np.exp(rng.uniform(-14.0, 14.0, n))
    for dtype in (np.uint8, np.uint16, np.int32):
        lt = rng.integers(0, 5, n).astype(dtype)
        for ell, c in ((0, 0), (3, 4), (4, 9), (2, -1)):
            out = np.full(4, np.nan)
            gamma_grow_rows(lt, xv, s, e, ell, c, out)
            rows = lt == ell
            left, right = rows & (xv <= c), rows & (xv > c)
            want = [math.fsum(s[left]), math.fsum(e[left]), math.fsum(s[right]),
                    math.fsum(e[right])]
            np.testing.assert_allclose(out, want, rtol=1e-13, atol=0.0)


def _sampled_matches(model, seed, prior, post, f_mean, offset=0.0, sampler="cgm"):
    """``pm.sample`` of the m = 1 model (2 chains x 2,500 draws of 6 sweeps, 5 for Particle
    Gibbs: N_eff of the top cells 2,900 to 4,500): its partitions and its f (less the offset)
    against the exact posterior; returns the trace."""
    with model:
        idata = pm.sample(draws=2500, tune=300, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False,
                          **{f"{sampler}_tree": {"sweeps": 6 if sampler == "cgm" else 5}})
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    check_f_mean(list(idata.posterior["f"].values - offset), f_mean)
    return idata


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["cgm", "pg"])
@pytest.mark.parametrize("case", ["poisson_exposure", "student_t_log_variance"])
def test_pm_sample_matches_enumeration(case, sampler):
    """Through ``pm.sample``: the step assignment, the likelihood read by the step, the
    latent variables drawn per sweep (Student-t), the trace; with CGM's moves and with
    Particle Gibbs (the particles weighted by the leaves' closed-form marginals)."""
    prior, post, f_mean = _exact(case)
    model, _ = _model(case, sampler)
    idata = _sampled_matches(model, 21, prior, post, f_mean, sampler=sampler)
    # the trace's values are the forests' predictions at the training rows, to the bit
    np.testing.assert_array_equal(pmt.predict(idata, X6, "f").values,
                                  idata.posterior["f"].values)


def test_forms_of_one_likelihood_read_alike():
    """A Normal's log variance written with ``sigma = sqrt(exp(f))``, ``sigma = exp(f / 2)``
    or ``tau = exp(-f)`` gives the sweep the same rows (the graph reader follows the
    reciprocal, power, abs and sign PyMC writes for tau)."""
    forms = [lambda f: pm.Normal("y", mu=0.2, sigma=pm.math.sqrt(pm.math.exp(f)),
                                 observed=Y_REAL),
             lambda f: pm.Normal("y", mu=0.2, sigma=pm.math.exp(f / 2), observed=Y_REAL),
             lambda f: pm.Normal("y", mu=0.2, tau=pm.math.exp(-f), observed=Y_REAL)]
    got = []
    for form in forms:
        with pm.Model() as model:
            f = pmt.BARTTree("f", X6, m=1, leaf_sd=LEAF_SD, min_leaf=1,
                             leaf_prior="log-inverse-gamma")
            form(f)
        lik = gamma_likelihood(model, f, 6, "log-inverse-gamma")
        got.append(lik.rates(model.initial_point(), 0.3))
    for s, logt in got[1:]:
        np.testing.assert_allclose(s, got[0][0], rtol=1e-14)
        np.testing.assert_allclose(logt, got[0][1], rtol=1e-12)
    # s = 1/2, log t = log((y - mu)^2 / 2) - 2 (a + b offset), a = 0 and b = 1/2
    np.testing.assert_allclose(got[0][1], np.log((Y_REAL - 0.2) ** 2 / 2) - 0.3, rtol=1e-12)


def test_no_data_leaves_the_prior_invariant():
    """Prior recovery: rows with no shape and no rate (``s = 0``, ``t = 0``) carry no
    information, so the sweep must sample the tree prior over partitions and the log-gamma
    leaf prior (mean 0, sd ``leaf_sd``, skewness of ``log phi / kappa``)."""
    prior = six_row_prior()
    for leaf_prior in ("log-gamma", "log-inverse-gamma"):
        kappa = leaf_prior_kappa(leaf_prior)
        tp = TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1, leaf_prior=leaf_prior)
        chains = []
        for seed in (1, 2):
            smp = GammaForestSampler(X6, tp, 0.0, 0.5, kappa=kappa)
            rng = np.random.default_rng(seed)
            s, logt = np.zeros(6), np.full(6, -np.inf)
            parts, fs = [], []
            for _ in range(3000):
                smp.gamma_sweep(rng, s, logt, CP, sweeps=2)
                parts.append(forest_row_partitions(smp.pack(), X6)[0])
                fs.append(smp.values()[0])
            chains.append((parts, np.array(fs)))
        flat = [p for ch in chains for p in ch[0]]
        freq = {k: sum(p == k for p in flat) / len(flat) for k in prior}
        n_eff = min(float(az.ess(np.array([[float(p == k) for p in ch[0]] for ch in chains])))
                    for k in sorted(prior, key=prior.get, reverse=True)[:5])
        from enumeration import total_variation, tv_tolerance
        assert total_variation(freq, prior) < tv_tolerance(prior, n_eff)
        f0 = np.stack([ch[1] for ch in chains])
        se = float(az.mcse(f0))
        assert abs(f0.mean()) < 4 * se
        # the sd of a leaf: 0.5; its standard error from the ESS of the squares
        sq = f0**2
        assert abs(sq.mean() - 0.25) < 4 * float(az.mcse(sq))
        c, _ = log_gamma_prior(0.5, kappa)
        skew = np.sign(kappa) * special.polygamma(2, c) / special.polygamma(1, c) ** 1.5
        cube = f0**3 / 0.125
        assert abs(cube.mean() - skew) < 4 * float(az.mcse(cube))


@pytest.mark.slow
def test_level_shift_of_an_intercept_matches_enumeration():
    """``y ~ Poisson(exp(c + f))`` with ``c ~ Normal(0.3, 0.5)`` (NUTS) and log-gamma leaves:
    the level shift between c and the leaves (a slice-sampling update along the line that
    leaves the likelihood unchanged, :meth:`GammaForestSampler.level_shift`) runs beside
    NUTS.  The exact joint posterior of the partition and c is the tree prior times
    ``Normal(c) prod_leaves Z_leaf(c)`` with the closed-form leaf marginal, integrated over c
    on a grid; the sampled partitions, the mean of c and of f must match it."""
    prior = six_row_prior()
    cg, dg = log_gamma_prior(LEAF_SD, 1.0)
    cs = np.linspace(0.3 - 8 * 0.5, 0.3 + 8 * 0.5, 4001)
    logn = stats.norm.logpdf(cs, 0.3, 0.5)
    logs, c_mean, f_mean = {}, {}, {}
    for part in prior:
        tot = np.log(prior[part]) + logn
        mus = []
        for rows in part:
            A, n_l = float(Y_COUNT[list(rows)].sum()), len(rows)
            B = n_l * np.exp(cs)
            tot = tot + A * cs + np.vectorize(gamma_log_ml)(A, B, cg, dg)
            mus.append((rows, special.digamma(cg + A) - np.log(dg + B)))
        top = tot.max()
        w = np.exp(tot - top)
        z = integrate.simpson(w, x=cs)
        logs[part] = top + math.log(z)
        c_mean[part] = integrate.simpson(cs * w, x=cs) / z
        fm = np.zeros(6)
        for rows, mu in mus:
            fm[list(rows)] = integrate.simpson(mu * w, x=cs) / z
        f_mean[part] = fm
    from enumeration import normalise
    post = normalise(logs)
    exact_c = sum(post[p] * c_mean[p] for p in post)
    exact_f = sum(post[p] * f_mean[p] for p in post)
    with pm.Model():
        c = pm.Normal("c", 0.3, 0.5)
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1,
                         leaf_prior="log-gamma")
        pm.Poisson("y", mu=pm.math.exp(c + f), observed=Y_COUNT)
        idata = pm.sample(draws=2500, tune=500, chains=2, cores=1, random_seed=5,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 6})
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    cv = idata.posterior["c"].values
    assert abs(cv.mean() - exact_c) < 4 * float(az.mcse(cv)), (cv.mean(), exact_c)
    check_f_mean(list(idata.posterior["f"].values), exact_f)


def test_downstream_new_data_posterior_predictive_save_and_two_cores(tmp_path):
    """A Poisson count model with an exposure and an intercept, the term with log-gamma
    leaves, sampled on two cores: new rows through ``pm.set_data`` and
    ``pmt.sample_posterior_predictive`` give ``pmt.predict``'s values, the saved trace
    reloads and predicts to the bit, and the counts drawn at new rows have the model's mean."""
    rng = np.random.default_rng(4)
    n = 150
    X = rng.uniform(size=(n, 3))
    expo = rng.uniform(0.5, 2.0, n)
    y = rng.poisson(expo * np.exp(0.5 + np.sin(3 * X[:, 0])))
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        ed = pm.Data("expo", expo)
        c = pm.Normal("c", 0.0, 1.0)
        f = pmt.BARTTree("f", Xd, y, m=20, link="log", leaf_prior="log-gamma")
        pm.Poisson("y", mu=ed * pm.math.exp(c + f), observed=y, shape=Xd.shape[0])
        idata = pm.sample(draws=150, tune=150, chains=2, cores=2, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    np.testing.assert_array_equal(pmt.predict(idata, X, "f").values,
                                  idata.posterior["f"].values)
    Xn, en = rng.uniform(size=(40, 3)), np.full(40, 1.5)
    with model:
        pm.set_data({"X": Xn, "expo": en})
        pp = pmt.sample_posterior_predictive(idata, predictions=True, random_seed=2,
                                             var_names=["f", "y"], progressbar=False)
    fn = pmt.predict(idata, Xn, "f").values
    np.testing.assert_array_equal(pp.predictions["f"].values, fn)
    mu = en * np.exp(idata.posterior["c"].values[..., None] + fn)
    z = (pp.predictions["y"].values - mu) / np.sqrt(mu)  # Poisson: mean mu, variance mu
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.std() - 1) < 0.1
    path = str(tmp_path / "trace.nc")
    idata.to_netcdf(path)
    np.testing.assert_array_equal(pmt.predict(az.from_netcdf(path), Xn, "f").values, fn)


def test_what_log_gamma_leaves_refuse_names_the_fix():
    """Refused when the term is built: several outputs, linear leaves, a leaf scale that is
    a model variable; when the step is built: a likelihood in which the leaves are not
    conjugate (sigma = exp(f): kappa = -2; a Poisson mean with log-inverse-gamma leaves; a
    Normal mean)."""
    from pymc_trees.bart.term.plan import TermPlanError

    for kw, words in [({"shape": (2, 6)}, "one output"), ({"response": "linear"}, "response"),
                      ({"leaf_sd": "var"}, "model variable"),
                      ({"leaf_prior": "gamma"}, "leaf_prior must be one of")]:
        with pm.Model():
            if kw.get("leaf_sd") == "var":
                kw = {"leaf_sd": pm.HalfNormal("s", 0.3)}
            with pytest.raises(TermPlanError, match=words):
                pmt.BARTTree("f", X6, Y_POS, min_leaf=1, **{"leaf_prior": "log-gamma", **kw})
    cases = [("log-inverse-gamma",
              lambda f: pm.Normal("y", 0.0, pm.math.exp(f), observed=Y_REAL), "kappa = -2"),
             ("log-inverse-gamma",
              lambda f: pm.Poisson("y", pm.math.exp(f), observed=Y_COUNT), "kappa = 1"),
             ("log-gamma", lambda f: pm.Normal("y", f, 1.0, observed=Y_REAL), "no conjugate")]
    for leaf_prior, build, words in cases:
        with pm.Model():
            f = pmt.BARTTree("f", X6, m=2, leaf_sd=0.5, min_leaf=1, leaf_prior=leaf_prior)
            build(f)
            with pytest.raises(ValueError, match=words):
                pm.sample(draws=2, tune=2, chains=1, progressbar=False)


def test_negative_binomial_n_p_form_reads_as_the_mean_form():
    """``NegativeBinomial(n=a, p=a / (a + exp(f)))`` is the likelihood of
    ``NegativeBinomial(mu=exp(f), alpha=a)``: both the Polya-Gamma augmentation (normal
    leaves) and the Gamma-Poisson mixture (log-gamma leaves) read the same rows from it."""
    from pymc_trees.bart.likelihood.structure import tree_likelihood

    got = {}
    for form in ("mu", "n_p"):
        for leaf_prior in ("normal", "log-gamma"):
            with pm.Model() as model:
                f = pmt.BARTTree("f", X6, m=1, leaf_sd=LEAF_SD, min_leaf=1,
                                 leaf_prior=leaf_prior)
                a = pm.Gamma("a", 2.0, 0.5)
                if form == "mu":
                    pm.NegativeBinomial("y", mu=pm.math.exp(0.5 + f), alpha=a, observed=Y_COUNT)
                else:
                    pm.NegativeBinomial("y", n=a, p=a / (a + pm.math.exp(0.5 + f)),
                                        observed=Y_COUNT)
            point = model.initial_point()
            if leaf_prior == "normal":
                lik = tree_likelihood(model, f, 6)
                assert lik.family == "negative_binomial"
                got[form, leaf_prior] = [np.broadcast_to(x, (6,)) for x in lik.pieces(point)]
            else:
                lik = gamma_likelihood(model, f, 6, leaf_prior)
                got[form, leaf_prior] = lik.rates(point, 0.0, np.zeros(6),
                                                  np.random.default_rng(0))
    for leaf_prior in ("normal", "log-gamma"):
        for x, z in zip(got["mu", leaf_prior], got["n_p", leaf_prior]):
            np.testing.assert_allclose(x, z, rtol=1e-12)


@pytest.mark.parametrize("leaf_prior", ["log-gamma", "log-inverse-gamma"])
def test_learned_scale_draw_matches_its_conditional(leaf_prior):
    """``leaf_sd="learned"``: given a forest, the slice-sampled leaf variance follows ``v ~
    InverseGamma(3, 2 sd0^2)`` times the leaves' log-gamma density, computed here
    independently of the sampler's parametrisation (on a grid of v, each leaf's ``(c, d)``
    by :func:`log_gamma_prior` from ``sqrt(v)``, no Jacobian in c).  KS bound at the chain's
    ESS."""
    from pymc_trees.bart.steps.leaf_scale import LearnedLeafScale

    kappa = leaf_prior_kappa(leaf_prior)
    prior = TreePrior(m=15, alpha=ALPHA, beta=BETA, min_leaf=1, leaf_prior=leaf_prior)
    smp = GammaForestSampler(X6, prior, 0.0, 0.5, kappa=kappa)
    rng = np.random.default_rng(5)
    smp.draw_prior(rng)
    scale, sd0 = LearnedLeafScale("f", 0.3), 0.3
    v = np.array([(scale.update(rng, smp, {}, False), smp.leaf_sd)[1]
                  for _ in range(4000)]) ** 2
    mu = kappa * smp.forest.value[smp.forest.var == -1]
    grid = np.linspace(1e-3, 3.0, 6000)
    logp = (stats.invgamma(3.0, scale=2 * sd0**2).logpdf(grid)
            + log_gamma_leaves_on_grid(grid, mu, kappa))
    check_draws_on_grid(v, grid, logp)


def test_learned_scale_matches_enumeration_through_pm_sample():
    """Poisson with an exposure, m = 1 on 6 rows, ``leaf_sd="learned"``: the exact joint
    posterior of the partition and the leaf variance (on a grid of ``log c``, every leaf's
    marginal in closed form, ``gamma_log_ml``, itself checked against quadrature above) gives
    the partitions' probabilities, the posterior mean of f and of the leaf sd; the chains of
    ``pm.sample`` must match them."""
    from pymc_trees.bart.term.distribution import term_inputs
    from pymc_trees.bart.samplers.leaf_priors import learned_scale_prior

    with pm.Model() as model:
        f = pmt.BARTTree("f", X6, Y_COUNT, m=1, alpha=ALPHA, beta=BETA, min_leaf=1,
                         link="log", leaf_sd="learned", leaf_prior="log-gamma")
        CASES["poisson_exposure"][1](f)
    sd0 = float(term_inputs(f).leaf_sd.eval())
    off = float(term_inputs(f).offset.eval())
    a, b = learned_scale_prior(sd0)
    prior = six_row_prior()
    t = EXPOSURE * np.exp(0.3 + off)
    us = np.linspace(-6.0, 12.0, 4001)
    c = np.exp(us)
    v = special.polygamma(1, c)
    d = np.exp(special.digamma(c))
    log_u = (stats.invgamma(a, scale=b).logpdf(v) + np.log(-special.polygamma(2, c)) + us)
    joint = {}
    for part in prior:
        lj = math.log(prior[part]) + log_u
        for rows in part:
            A, B = float(Y_COUNT[list(rows)].sum()), float(t[list(rows)].sum())
            lj = lj + np.array([gamma_log_ml(A, B, ci, di) for ci, di in zip(c, d)])
        joint[part] = lj
    top = max(float(lj.max()) for lj in joint.values())
    w = {k: np.exp(lj - top) for k, lj in joint.items()}
    z = sum(float(integrate.trapezoid(wk, us)) for wk in w.values())
    post = {k: float(integrate.trapezoid(wk, us)) / z for k, wk in w.items()}
    sd_mean = sum(float(integrate.trapezoid(wk * np.sqrt(v), us)) for wk in w.values()) / z
    f_mean = np.zeros(6)
    for k, wk in w.items():
        for rows in k:
            A, B = float(Y_COUNT[list(rows)].sum()), float(t[list(rows)].sum())
            e_mu = special.digamma(c + A) - np.log(d + B)  # E[log phi | c, d]
            f_mean[list(rows)] += float(integrate.trapezoid(wk * e_mu, us)) / z
    idata = _sampled_matches(model, 23, prior, post, f_mean, off)
    sds = idata.sample_stats["f_leaf_sd"].values
    assert abs(sds.mean() - sd_mean) < 4 * float(az.mcse(sds)), (sds.mean(), sd_mean)


@pytest.mark.slow
def test_auto_leaf_prior_settles_by_the_likelihood():
    """``leaf_prior="auto"`` (the default) gives log-gamma leaves to the measured patterns
    (a Poisson, zero-inflated Poisson or negative binomial mean, a Gamma mean, a Normal's or
    Student-t's log variance or log sd) in the direction and with the exponent their
    likelihood is conjugate in, and normal leaves to anything else: a Normal mean, outputs
    that share their trees, a term whose leaf prior is named (outputs with trees of their
    own settle one by one: ``test_gamma_outputs.py``).  Under Particle Gibbs too, but for
    the negative binomial, whose Polya-Gamma normal leaves measured ahead there."""
    def poisson(f):
        pm.Poisson("y", mu=pm.math.exp(f) * EXPOSURE, observed=Y_COUNT)

    cases = [(poisson, {}, "log-gamma", 1.0),
             (CASES["gamma_mean"][1], {}, "log-inverse-gamma", -1.0),
             (CASES["normal_log_variance"][1], {}, "log-inverse-gamma", -1.0),
             (CASES["negative_binomial"][1], {}, "log-gamma", 1.0),
             (lambda f: pm.Normal("y", 0.0, pm.math.exp(f), observed=Y_REAL), {},
              "log-inverse-gamma", -2.0),
             (CASES["zero_inflated_poisson"][1], {}, "log-gamma", 1.0),
             (CASES["student_t_log_variance"][1], {}, "log-inverse-gamma", -1.0),
             (lambda f: pm.Normal("y", f, 1.0, observed=Y_REAL), {}, "normal", 0.0),
             (lambda f: pm.Poisson("y", pm.math.exp(f[0]), observed=Y_COUNT),
              {"shape": (2, 6), "separate_trees": False}, "normal", 0.0),
             (poisson, {"leaf_prior": "normal"}, "normal", 0.0),
             (poisson, {"sampler": "pg"}, "log-gamma", 1.0),
             (CASES["negative_binomial"][1], {"sampler": "pg"}, "normal", 0.0)]
    from pymc_trees.bart.likelihood.leaf_choice import settled_leaf_priors
    for build, kw, want, kappa in cases:
        with pm.Model() as model:
            f = pmt.BARTTree("f", X6, m=2, leaf_sd=0.5, min_leaf=1, **kw)
            build(f)
            step = (pmt.PGTreeStep if kw.get("sampler") == "pg" else pmt.CGMTreeStep)([f])
        assert step.leaf_prior == want, (want, kw)
        assert getattr(step.sampler, "kappa", 0.0) == kappa
        with model:
            assert settled_leaf_priors(f.owner.op)[0] == (
                want, kappa if "leaf_prior" not in kw and "shape" not in kw else 0.0)


@pytest.mark.slow
def test_prior_predictive_draws_the_settled_leaf_prior():
    """``pm.sample_prior_predictive`` draws an ``"auto"`` term from the prior its step
    samples: m = 1 and leaf sd 1, so f at a row is one leaf, whose skewness is the
    log-gamma's (-0.94 for a Poisson mean; +1.47 for ``sigma = exp(f)``, exponent -2), the
    normal's (0) when the likelihood leaves it normal; also with ``model=`` outside the
    ``with`` block.  Checked on the second and third moments, 4 standard errors."""
    def skew(kappa):
        c, _ = log_gamma_prior(1.0, kappa)
        return np.sign(kappa) * special.polygamma(2, c) / special.polygamma(1, c) ** 1.5

    for build, want in [(lambda f: pm.Poisson("y", mu=pm.math.exp(f), observed=Y_COUNT),
                         skew(1.0)),
                        (lambda f: pm.Normal("y", 0.0, pm.math.exp(f), observed=Y_REAL),
                         skew(-2.0)),
                        (lambda f: pm.Normal("y", f, 1.0, observed=Y_REAL), 0.0)]:
        with pm.Model() as model:
            f = pmt.BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
            build(f)
        draws = pm.sample_prior_predictive(draws=4000, model=model, random_seed=8,
                                           var_names=["f"]).prior["f"].values[0, :, 0]
        for x, w in [(draws**2, 1.0), (draws**3, want)]:
            assert abs(x.mean() - w) < 4 * x.std() / np.sqrt(x.size), (x.mean(), w)


def test_prior_recovered_through_pm_sample():
    """Prior recovery through ``pm.sample``: a Poisson whose every row has exposure 0 (``t =
    0``, observed 0) carries no information, so the chains must sample the tree prior over
    partitions and the log-gamma leaf prior (mean 0, sd 0.5, the skewness of ``log phi``):
    the step, its likelihood reading and the trace, where the sweep test above checks the
    kernel alone."""
    with pm.Model():
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=0.5, min_leaf=1)
        pm.Poisson("y", mu=pm.math.exp(f) * np.zeros(6), observed=np.zeros(6, dtype=int))
        assert pmt.CGMTreeStep([f]).leaf_prior == "log-gamma"  # what pm.sample assigns
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, random_seed=31,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 2})
    prior = six_row_prior()
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    flat = [p for chain in parts for p in chain]
    freq = {k: sum(p == k for p in flat) / len(flat) for k in prior}
    n_eff = min(float(az.ess(np.array([[float(p == k) for p in ch] for ch in parts])))
                for k in sorted(prior, key=prior.get, reverse=True)[:5])
    from enumeration import total_variation, tv_tolerance
    assert total_variation(freq, prior) < tv_tolerance(prior, n_eff)
    f0 = idata.posterior["f"].values[..., 0]
    c, _ = log_gamma_prior(0.5, 1.0)
    skew = special.polygamma(2, c) / special.polygamma(1, c) ** 1.5
    for x, want in [(f0, 0.0), (f0**2, 0.25), (f0**3 / 0.125, skew)]:
        assert abs(x.mean() - want) < 4 * float(az.mcse(x)), (x.mean(), want)


def test_sigma_exp_f_settles_to_exponent_minus_two_and_matches_enumeration():
    """``sigma = exp(f)`` in a Normal (kappa = q b = -2): ``"auto"`` gives leaves with
    ``exp(-2 mu) ~ Gamma(c, d)``, calibrated to sd ``leaf_sd``; m = 1 on 6 rows through
    ``pm.sample`` against quadrature of the Normal likelihood against that density."""
    c, d = log_gamma_prior(0.5, -2.0)

    def logpdf(mu):
        u = -2.0 * np.asarray(mu)
        return c * math.log(d) - special.gammaln(c) + c * u - d * np.exp(u) + math.log(2.0)

    prior = six_row_prior()
    post, f_mean = quadrature_posterior(
        prior, 6, lambda i, mu: stats.norm.logpdf(Y_REAL[i], 0.2, np.exp(mu)), 0.5, logpdf)
    with pm.Model() as model:
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=0.5, min_leaf=1)
        pm.Normal("y", mu=0.2, sigma=pm.math.exp(f), observed=Y_REAL)
        step = pmt.CGMTreeStep([f])
    assert (step.leaf_prior, step.sampler.kappa) == ("log-inverse-gamma", -2.0)
    _sampled_matches(model, 27, prior, post, f_mean)


def test_the_settled_leaf_prior_follows_pm_set_data():
    """``leaf_prior="auto"`` settles by the likelihood's form, which a ``pm.Data`` can change
    (``sigma=exp(f * s)``: s = 1 is a log sd, exponent -2; s = 0.5 a log variance, -1): the
    prior draw settles again after ``pm.set_data`` (before, the first answer stayed)."""
    from pymc_trees.bart.likelihood.leaf_choice import settled_leaf_priors

    X = np.random.default_rng(0).uniform(size=(50, 2))
    y = np.random.default_rng(1).normal(size=50)
    with pm.Model():
        s = pm.Data("s", 1.0)
        f = pmt.BARTTree("f", X, m=5, leaf_sd=0.3)
        pm.Normal("y", mu=0.0, sigma=pm.math.exp(f * s), observed=y)
        got = [settled_leaf_priors(f.owner.op)]
        for value in (0.5, 1.0):
            pm.set_data({"s": value})
            got.append(settled_leaf_priors(f.owner.op))
    assert got == [(("log-inverse-gamma", -2.0),), (("log-inverse-gamma", -1.0),),
                   (("log-inverse-gamma", -2.0),)]
