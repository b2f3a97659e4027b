"""Issue 48, the findings of a careful new user that gave wrong answers with no error or crashed
after sampling: each test fails on the code before the fix; the silent ones compare with the
right answer.

* a general tree step that never left its start (a Newton step out of the support), and the
  warning of a chain that rejected everything while tuning;
* a classifier above 50,000 rows (nothing recorded in the trace) that crashed after sampling;
* predictions whose dims did not match the posterior's;
* outputs on very different scales in one shared-structure term.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_trees as pmt
from pymc_trees.bart.kernels import general as gk

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def test_the_defensive_proposal_is_a_normalised_mixture_and_draws_from_it():
    G, H, prec0 = -40.0, 6.0, 1.5
    w = gk.DEFENSIVE
    dens = lambda mu: math.exp(gk.log_q(mu, G, H, prec0, w))  # noqa: E731
    total, _ = integrate.quad(dens, -40, 40, points=[G / (H + prec0), 0.0], limit=200)
    assert abs(total - 1.0) < 1e-8
    # the mixture against naive code
    P = H + prec0
    naive = ((1 - w) * stats.norm.pdf(0.3, G / P, P**-0.5)
             + w * stats.norm.pdf(0.3, 0.0, prec0**-0.5))
    assert math.isclose(dens(0.3), naive, rel_tol=1e-12)
    assert gk.log_q(0.3, G, H, prec0, 0.0) == pytest.approx(
        stats.norm.logpdf(0.3, G / P, P**-0.5), rel=1e-12)
    # draws: the prior component with probability w (Kolmogorov-Smirnov against the mixture's
    # CDF; 20,000 independent draws, the test's 1% level)
    rng = np.random.default_rng(3)
    draws = np.array([gk.draw_q(rng, G, H, prec0, w) for _ in range(20000)])

    def cdf(x):
        return ((1 - w) * stats.norm.cdf(x, G / P, P**-0.5)
                + w * stats.norm.cdf(x, 0.0, prec0**-0.5))

    assert stats.kstest(draws, cdf).pvalue > 0.01
    # the prior's share: draws above -2 come from it (the Newton part sits at -5.3 +- 0.37)
    share = float(np.mean(draws > -2.0))
    assert abs(share - w) < 4 * math.sqrt(w * (1 - w) / draws.size)


def test_an_identity_link_poisson_leaves_its_start_and_reaches_the_true_rates():
    # counts 0-12, mean 2.8: the identity calibration's offset (6) is above twice the mean, so
    # from the start every Newton step landed below zero and the chain stayed at f = 6
    rng = np.random.default_rng(1)
    n = 200
    X = rng.uniform(0, 1, (n, 2))
    rate = np.where(X[:, 0] > 0.5, 4.9, 0.8)
    c = rng.poisson(rate)
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=c, m=10)
        assert float(f.owner.inputs[3].eval()) > 2 * c.mean()
        pm.Poisson("y", mu=f, observed=c)
        idata = pm.sample(100, tune=100, chains=1, cores=1, random_seed=2, **QUIET)
    post = idata.posterior["f"].values.mean(axis=(0, 1))
    # each group's posterior mean of the rate: about 100 rows each, posterior sd of a group
    # mean sqrt(4.9 / 100) = 0.22 at most; 0.6 is under three of those plus BART's smoothing
    for r in (0.8, 4.9):
        assert abs(post[rate == r].mean() - r) < 0.6, (r, post[rate == r].mean())
    assert float(idata.sample_stats["accept_leaf"].mean()) > 0.3


def test_a_chain_that_rejects_every_proposal_while_tuning_says_so():
    # an offset of 30.5 against counts of mean 2.6 (no zeros): every Newton step lands below
    # zero, and a leaf scale of 1,000 makes the prior component's draws rejected too
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (100, 2))
    c = 1 + rng.poisson(1.0, 100)
    c[0] = 60
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=c, m=5, leaf_sd=1000.0)
        pm.Poisson("y", mu=f, observed=c)
        with pytest.warns(UserWarning, match=r"(?s)'f' rejected every proposal in all 6 "
                          r"tuning sweeps.*identity link.*pm\.math\.exp\(f\).*link='log'"):
            pm.sample(5, tune=6, chains=1, cores=1, random_seed=2, cgm_tree={"warm_start": 0},
                      **QUIET)
    # a chain that moves does not warn
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=c, m=5, link="log")
        pm.Poisson("y", mu=pm.math.exp(f), observed=c)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*rejected every proposal")
            pm.sample(5, tune=6, chains=1, cores=1, random_seed=2, **QUIET)


@pytest.mark.parametrize("how", ["above 50,000 rows", "keep_values=False", "var_names=[]"])
def test_a_model_with_nothing_to_record_returns_its_stats_and_forests(how):
    n = 50_001 if how == "above 50,000 rows" else 300
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    z = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    with pm.Model():
        g = pmt.BARTTree("g", X, Y=z, link="logit", m=10,
                         **({"keep_values": False} if how == "keep_values=False" else {}))
        pm.Bernoulli("z", logit_p=g, observed=z)
        idata = pm.sample(8, tune=8, chains=2, cores=1, random_seed=1, progressbar=False,
                          **({"var_names": []} if how == "var_names=[]" else {}))
    post = idata.posterior
    assert "g" not in post.data_vars
    assert dict(post.sizes) == {"chain": 2, "draw": 8}
    assert idata.sample_stats.sizes["draw"] == 8
    pred = pmt.predict(idata, X[:50], var_name="g")
    assert pred.shape == (2, 8, 50)
    # the classifier learned something: predicted logits separate the classes
    m = pred.mean(axis=(0, 1))
    assert m[z[:50] == 1].mean() > m[z[:50] == 0].mean()


def test_predict_at_the_training_rows_has_the_posteriors_dims(tmp_path):
    import arviz as az
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(150, 2))
    y = X[:, 0] + rng.normal(0, 0.1, 150)
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=y, m=5)
        pm.Normal("y", f, 0.1, observed=y)
        idata = pm.sample(20, tune=20, chains=2, cores=1, random_seed=1, **QUIET)
    post = idata.posterior["f"]
    # before: dims (chain, draw, obs) against (chain, draw, f_dim_0), a (2, 20, 150, 150)
    # difference; the training rows as an array, a DataFrame and after saving
    path = tmp_path / "t.nc"
    idata.to_netcdf(path)
    for trace, rows in ((idata, X), (idata, pd.DataFrame(X)), (az.from_netcdf(path), X)):
        diff = pmt.predict(trace, rows) - post
        assert diff.dims == post.dims and float(abs(diff).max()) == 0.0
    # other rows: 'obs'
    assert pmt.predict(idata, X[:7]).dims == ("chain", "draw", "obs")

    Xs = rng.uniform(size=(40, 2))
    ys = (Xs[:, 0] > 0.5).astype(int) + (Xs[:, 1] > 0.5).astype(int)
    with pm.Model(coords={"cls": ["a", "b", "c"], "row": np.arange(100, 140)}):
        f = pmt.BARTTree("f", Xs, m=4, leaf_sd=0.5, dims=("cls", "row"))
        pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=ys)
        idata = pm.sample(10, tune=10, chains=1, cores=1, random_seed=2, **QUIET)
    post = idata.posterior["f"]
    diff = pmt.predict(idata, Xs) - post
    assert diff.dims == ("chain", "draw", "cls", "row") and float(abs(diff).max()) == 0.0
    np.testing.assert_array_equal(diff["row"].values, np.arange(100, 140))
    new = pmt.predict(idata, Xs[:5])  # the output labels stay the model's at new rows
    assert new.dims == ("chain", "draw", "cls", "obs")
    assert list(new["cls"].values) == ["a", "b", "c"]


def _two_scales(n=300):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, 2))
    m0, m1 = np.sin(6 * X[:, 0]), 1000 * np.cos(4 * X[:, 1])
    return X, m0, m1, m0 + rng.normal(0, 0.1, n), m1 + rng.normal(0, 100, n)


def test_outputs_on_different_scales_are_refused_or_warned_and_the_fix_fits_them():
    X, m0, m1, y0, y1 = _two_scales()
    n = len(y0)
    # Y with one row per output is accepted (it was refused) and read output by output
    with pm.Model():
        with pytest.raises(ValueError, match=r"(?s)outputs of Y are on different scales.*"
                                             r"output 1: centre.*mu_j = c_j \+ s_j \* f\[j\]"):
            pmt.BARTTree("f", X, Y=np.stack([y0, y1]), m=20, shape=(2, n),
                         separate_trees=False)
        pmt.BARTTree("g", X, Y=np.stack([y0, 1.5 * y0]), m=20, shape=(2, n),
                     separate_trees=False)
        with pytest.raises(ValueError, match=r"shape \(k, n\) = \(2, 300\)"):
            pmt.BARTTree("h", X, Y=np.stack([y0, y0, y0]), m=20, shape=(2, n))
    # the silent case: Y from output 0 alone, output 1's noise sd learned by NUTS; output 1
    # was not fitted (RMSE 748 against its own sd of 715) with no word
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=y0, m=20, shape=(2, n), separate_trees=False)
        pm.Normal("y0", f[0], 0.1, observed=y0)
        pm.Normal("y1", f[1], pm.HalfNormal("s1", 1000), observed=y1)
        with pytest.warns(UserWarning, match=r"(?s)outputs of 'f' are on different scales"
                                             r".*outputs 0 and 1 differ"):
            pm.sample(2, tune=2, chains=1, cores=1, random_seed=1, **QUIET)
    # the fix the messages give: each output's centre and scale in the model; output 1 is
    # then fitted to about its noise level (sd 100; the truth's sd is 715)
    c = np.array([y0.mean(), y1.mean()])
    s = np.array([y0.std(), y1.std()])
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=(np.stack([y0, y1]) - c[:, None]) / s[:, None], m=20,
                         shape=(2, n), separate_trees=False)
        pm.Normal("y0", c[0] + s[0] * f[0], 0.1, observed=y0)
        pm.Normal("y1", c[1] + s[1] * f[1], pm.HalfNormal("s1", 1000), observed=y1)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*different scales")
            idata = pm.sample(100, tune=100, chains=1, cores=1, random_seed=1, **QUIET)
    post = idata.posterior["f"].mean(("chain", "draw")).values
    rmse0 = np.sqrt(np.mean((c[0] + s[0] * post[0] - m0) ** 2))
    rmse1 = np.sqrt(np.mean((c[1] + s[1] * post[1] - m1) ** 2))
    assert rmse0 < 0.15 and rmse1 < 100, (rmse0, rmse1)


def test_one_output_with_shared_trees_is_one_forest():
    # shape=(1, n), separate_trees=False failed inside pm.sample ("outputs must be an
    # integer >= 2")
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(80, 2))
    y = X[:, 0] + rng.normal(0, 0.1, 80)
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=y, m=5, shape=(1, 80), separate_trees=False)
        pm.Normal("y", f[0], 0.1, observed=y)
        idata = pm.sample(20, tune=20, chains=1, cores=1, random_seed=1, **QUIET)
    post = idata.posterior["f"]
    assert post.shape == (1, 20, 1, 80)
    assert float(abs(pmt.predict(idata, X) - post).max()) == 0.0
    assert np.corrcoef(post.mean(("chain", "draw")).values[0], X[:, 0])[0, 1] > 0.9


def test_two_terms_report_their_leaf_scales_under_their_own_names():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(60, 2))
    y = X[:, 0] + X[:, 1] + rng.normal(0, 0.1, 60)
    with pm.Model():
        f1 = pmt.BARTTree("f1", X, Y=y, m=3)
        f2 = pmt.BARTTree("f2", X, Y=y, m=3)
        pm.Normal("y", f1 + f2, 0.1, observed=y)
        idata = pm.sample(10, tune=10, chains=1, cores=1, random_seed=1, **QUIET)
    ss = idata.sample_stats
    assert "leaf_sd" not in ss and not any("leaf_sd_dim" in str(d) for d in ss.dims)
    for name in ("f1", "f2"):
        assert ss[f"{name}_leaf_sd"].dims == ("chain", "draw")
    # each term's own learned scale (two chains of draws, not one value twice)
    assert not np.array_equal(ss["f1_leaf_sd"].values, ss["f2_leaf_sd"].values)
