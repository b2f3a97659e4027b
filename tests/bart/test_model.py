"""BARTTree in PyMC models: assignment, forests kept with the trace, reproducibility, errors,
and recovery on Friedman #1."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc.sampling.mcmc import assign_step_methods
from pymc_trees.comparison.datasets import friedman1
from pymc_trees.bart.term.distribution import DEFAULT_SAMPLER


def _small_model(seed=0, n=60, m=10, with_intercept=False, sampler=None):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n)
    with pm.Model() as model:
        X_data = pm.Data("X", X)
        f = pmt.BARTTree("f", X_data, Y=y, m=m, sampler=sampler)
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        mu = f
        if with_intercept:
            mu = pm.Normal("a", 0.0, 1.0) + f
        pm.Normal("y", mu=mu, sigma=pm.math.sqrt(s2), observed=y, shape=X_data.shape[0])
    return model, X, y


def test_steps_assigned_automatically():
    model, _, _ = _small_model(with_intercept=True)
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.step_methods.STEP_METHODS)
    names = {cls.__name__: [v.name for v in vs] for cls, vs in selected.items()}
    tree_step = {"cgm": "CGMTreeStep", "pg": "PGTreeStep"}[DEFAULT_SAMPLER]
    assert names == {tree_step: ["f"], "NoiseGibbs": ["sigma2_log__"], "NUTS": ["a"]}


def test_forests_stored_with_trace_reproduce_f_and_predict():
    model, X, _ = _small_model(with_intercept=True)
    with model:
        idata = pm.sample(draws=50, tune=50, chains=2, cores=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    for stat in ("mean_depth", "mean_leaves"):
        assert stat in idata.sample_stats
    pred = pmt.predict(idata, X, var_name="f")
    # at the training rows: the posterior's own dims, so the difference is zero row by row
    assert pred.dims == ("chain", "draw", "f_dim_0") and pred.shape == (2, 50, 60)
    assert float(abs(pred - idata.posterior["f"]).max()) == 0.0
    np.testing.assert_array_equal(pred.values, idata.posterior["f"].values)
    X_new = np.random.default_rng(2).uniform(size=(7, 3))
    assert pmt.predict(idata, X_new, var_name="f").shape == (2, 50, 7)
    with pytest.raises(ValueError, match="No forests stored for 'g'"):
        pmt.predict(idata, X_new, var_name="g")


@pytest.mark.parametrize("sampler", ["cgm", "pg"])
def test_same_seed_same_draws_with_one_or_two_cores(sampler):
    model, _, _ = _small_model(seed=3, sampler=sampler)
    runs = []
    for cores in (1, 1, 2):
        with model:
            idata = pm.sample(draws=30, tune=20, chains=2, cores=cores, random_seed=42,
                              progressbar=False, compute_convergence_checks=False)
        runs.append(idata)
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0].posterior["f"].values, other.posterior["f"].values)
        np.testing.assert_array_equal(runs[0].posterior["sigma2"].values,
                                      other.posterior["sigma2"].values)
    # forests survive the worker processes
    np.testing.assert_array_equal(pmt.predict(runs[2], np.asarray(model["X"].get_value())).values,
                                  runs[2].posterior["f"].values)
    with model:
        other_seed = pm.sample(draws=30, tune=20, chains=2, cores=1, random_seed=43,
                               progressbar=False, compute_convergence_checks=False)
    assert not np.array_equal(other_seed.posterior["f"].values, runs[0].posterior["f"].values)


def test_bart_tree_needs_y_or_leaf_sd():
    with pm.Model():
        with pytest.raises(ValueError, match="needs Y .* or leaf_sd"):
            pmt.BARTTree("f", np.random.default_rng(0).uniform(size=(20, 2)))


def _unsupported_model(case):
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(20, 2))
    y = rng.normal(size=20)
    with pm.Model() as model:
        # normal leaves: by default a Poisson mean's would be log-gamma ones (conjugate)
        f = pmt.BARTTree("f", X, leaf_sd=1.0, m=5, leaf_prior="normal")
        if case == "nonlinear":
            pm.Normal("y", mu=pm.math.exp(f), sigma=1.0, observed=y)
        elif case == "two_likelihoods":
            pm.Normal("y", mu=f, sigma=1.0, observed=y)
            pm.Normal("y2", mu=2 * f, sigma=1.0, observed=y)
        elif case == "free_dependent":
            pm.Normal("z", mu=f.sum())
            pm.Normal("y", mu=f, sigma=1.0, observed=y)
        elif case == "sigma_depends":
            pm.Normal("y", mu=0.0, sigma=pm.math.exp(f), observed=y)
        elif case == "nb_identity_mean":
            pm.NegativeBinomial("y", mu=pm.math.exp(f) + 1.0, alpha=2.0,
                                observed=np.abs(y).round())
        elif case == "probit_binomial":
            pm.Binomial("y", n=3, p=pm.math.invprobit(f), observed=np.abs(y).round() % 4)
        elif case == "t_nu_depends":
            pm.StudentT("y", nu=pm.math.exp(f), mu=0.0, sigma=1.0, observed=y)
        elif case == "across_rows":
            pm.Normal("y", mu=f - f.mean(), sigma=1.0, observed=y)
        else:
            pm.Poisson("y", mu=pm.math.exp(f), observed=np.abs(y).round())
    return model, f


def test_a_free_variable_depending_on_a_term_raises_a_clear_error():
    model, f = _unsupported_model("free_dependent")
    with model, pytest.raises(pmt.ModelStructureError,
                              match="must enter observed likelihoods only") as err:
        pmt.CGMTreeStep([f])
    # the error lists every supported form
    for form in ("Normal(mu=eta", "StudentT(nu", "invprobit(eta)", "logit_p=eta",
                 "Binomial(n, logit_p", "NegativeBinomial(mu=pm.math.exp(eta)"):
        assert form in str(err.value), form


@pytest.mark.parametrize("case", ["nonlinear", "sigma_depends", "poisson", "nb_identity_mean",
                                  "probit_binomial", "t_nu_depends", "two_likelihoods"])
def test_likelihoods_without_augmentation_get_the_general_step(case):
    model, f = _unsupported_model(case)
    with model:
        step = pmt.CGMTreeStep([f])
        assert step.likelihood.family == "general"
        point = model.initial_point()
        new, stats = step.step(point)
        assert np.isfinite(stats[0]["accept_leaf"]) or stats[0]["warm_start"]
        with pytest.raises(pmt.ModelStructureError, match="Particle Gibbs integrates"):
            pmt.PGTreeStep([f])


def test_a_term_used_across_rows_is_refused():
    model, f = _unsupported_model("across_rows")
    with model, pytest.raises(pmt.ModelStructureError, match="depends on the values of 'f' at "
                                                            "other rows"):
        pmt.CGMTreeStep([f])


@pytest.mark.slow
@pytest.mark.parametrize("sampler,draws,m", [("cgm", 500, 200), ("pg", 300, 100)])
def test_friedman1_recovery(sampler, draws, m):
    """n = 1000, p = 10, noise sd 1: held-out RMSE against the true f below 1.0 and coverage of
    the 95% intervals for f above 0.85 (PG with 100 trees: a PG sweep costs about 15 CGM
    sweeps, and PG's exactness is checked by enumeration)."""
    rng = np.random.default_rng(2025)
    X, y, _ = friedman1(1000, rng=rng)
    X_test, _, f_test = friedman1(500, rng=rng)
    with pm.Model():
        X_data = pm.Data("X", X)
        f = pmt.BARTTree("f", X_data, Y=y, m=m, sampler=sampler)
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=X_data.shape[0])
        idata = pm.sample(draws=draws, tune=draws, chains=2, cores=1, random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    draws = pmt.predict(idata, X_test).values.reshape(-1, 500)
    rmse = np.sqrt(np.mean((draws.mean(0) - f_test) ** 2))
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    coverage = np.mean((lo <= f_test) & (f_test <= hi))
    assert rmse < 1.0, rmse
    assert coverage > 0.85, coverage
