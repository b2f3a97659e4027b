"""A term of shape (k, n): k separate forests, or one forest whose leaves hold k values
(``separate_trees=False``, pymc-bart's default form)?  The benchmark that chose the default.

Four models where the k outputs are one likelihood's parameters, each written as one
``BARTTree`` of shape (k, n), sampled both ways with the same trees per forest, iterations and
seed (2 chains x (tune + draws) on one core, the default tree step):

* **hawks** (softmax, real): species from four measurements (``benchmarks/general.py``),
  ``Categorical(p = softmax(f))``, k = 3.
* **classes** (softmax, simulated): three classes, 1,500 training and 500 held-out rows, p = 6
  (``benchmarks/general.py``).
* **marketing** (heteroscedastic, simulated to pymc-bart's example): Gamma with mean
  ``exp(log mean(y) + f[0])`` and sd ``exp(log sd(y) + f[1])``, 200 + 200 rows.
* **hetero** (heteroscedastic, simulated): Normal with mean ``mean(y) + sd(y) f[0]`` and sd
  ``sd(y) exp(f[1])``, 1,500 + 500 rows, p = 6, noise growing in x4.
* **quantiles** (simulated, the hetero data): the 0.1, 0.5 and 0.9 quantiles, an asymmetric
  Laplace with b = 0.3 and ``mu = f`` of shape (3, n) (``benchmarks/general.py``).  Its
  likelihood factorises over the outputs and each is augmentable, so both forms are
  conjugate given the latent variables: separate forests one output after the other, shared
  trees with the leaf vectors integrated out jointly.

One leaf sd for both forms, ``leaf_sd = 3 / (2 sqrt m)`` for the logits and ``1 / sqrt(m)``
for the heteroscedastic terms (the quantiles: calibrated from y).  Reported: held-out log
predictive density per row (log of the mean over draws of the row's density), the paired standard error of the difference between
the forms, the median bulk ESS per second of wall time of the outputs (of the class
probabilities for a softmax, whose logits are identified only up to a common shift) at 8
fixed training rows, and wall time of ``pm.sample`` (compilation included).

Run: ``python benchmarks/shared_trees.py`` (``--m``, ``--tune``, ``--draws``, ``--only``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_trees as pmt
from general import (QS, _ess, _flat, _softmax, hawks, lpd_quantiles, marketing, sim_classes,
                     sim_hetero)


def _softmax_model(X, y, m, shared):
    f = pmt.BARTTree("f", X, m=m, leaf_sd=3.0 / (2 * np.sqrt(m)), shape=(3, len(y)),
                     separate_trees=not shared)
    pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y)


def _softmax_lpd(ft, yt, y):
    logp = ft - special.logsumexp(ft, axis=1, keepdims=True)  # (draws, 3, rows)
    pick = logp[:, yt, np.arange(len(yt))]
    return special.logsumexp(pick, axis=0) - np.log(len(ft))


def _gamma_model(X, y, m, shared):
    f = pmt.BARTTree("f", X, m=m, leaf_sd=1.0 / np.sqrt(m), shape=(2, len(y)),
                     separate_trees=not shared)
    pm.Gamma("y", mu=pm.math.exp(np.log(y.mean()) + f[0]),
             sigma=pm.math.exp(np.log(y.std()) + f[1]), observed=y)


def _gamma_lpd(ft, yt, y):
    mu = np.exp(np.log(y.mean()) + ft[:, 0])
    sd = np.exp(np.log(y.std()) + ft[:, 1])
    logp = stats.gamma.logpdf(yt[None], (mu / sd) ** 2, scale=sd**2 / mu)
    return special.logsumexp(logp, axis=0) - np.log(len(ft))


def _normal_model(X, y, m, shared):
    f = pmt.BARTTree("f", X, m=m, leaf_sd=1.0 / np.sqrt(m), shape=(2, len(y)),
                     separate_trees=not shared)
    pm.Normal("y", mu=y.mean() + y.std() * f[0], sigma=y.std() * pm.math.exp(f[1]),
              observed=y)


def _normal_lpd(ft, yt, y):
    logp = stats.norm.logpdf(yt[None], y.mean() + y.std() * ft[:, 0],
                             y.std() * np.exp(ft[:, 1]))
    return special.logsumexp(logp, axis=0) - np.log(len(ft))


def _quantile_model(X, y, m, shared):
    f = pmt.BARTTree("f", X, y, m=m, shape=(3, len(y)), separate_trees=not shared)
    pm.AsymmetricLaplace("y", mu=f, b=0.3, q=QS, observed=np.stack([y] * 3))


def _quantile_lpd(ft, yt, y):
    return lpd_quantiles({"mu": ft}, yt)


PROBLEMS = {
    "hawks": (hawks, _softmax_model, _softmax_lpd),
    "classes": (sim_classes, _softmax_model, _softmax_lpd),
    "marketing": (marketing, _gamma_model, _gamma_lpd),
    "hetero": (sim_hetero, _normal_model, _normal_lpd),
    "quantiles": (sim_hetero, _quantile_model, _quantile_lpd),
}


def run(name, shared, m, tune, draws, seed):
    data, model, lpd = PROBLEMS[name]
    X, y, Xt, yt = data(seed=seed)
    t = time.perf_counter()
    with pm.Model():
        model(X, y, m, shared)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    rows = np.linspace(0, len(y) - 1, 8).astype(int)
    f = idata.posterior["f"].values
    # the softmax's logits move together by a common shift the likelihood does not see: the
    # class probabilities are what is identified
    q = _softmax(f, axis=2) if model is _softmax_model else f
    ess, _ = _ess(q[..., rows])
    ft = _flat(pmt.predict(idata, Xt, "f").values)  # (draws, k, rows)
    return lpd(ft, yt, y), ess, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=50)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=list(PROBLEMS))
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    print(f"m = {a.m} trees per forest, 2 chains x ({a.tune} + {a.draws}), one core, "
          f"seed {a.seed}")
    print(f"{'problem':<10} {'form':<9} {'lpd/row':>8} {'ESS/s':>7} {'secs':>7}   "
          f"{'shared - separate lpd (se)':>28}")
    for name in a.only:
        res = {}
        for shared in (False, True):
            res[shared] = run(name, shared, a.m, a.tune, a.draws, a.seed)
            lp, ess, secs = res[shared]
            print(f"{name:<10} {'shared' if shared else 'separate':<9} {lp.mean():8.4f} "
                  f"{ess / secs:7.2f} {secs:7.1f}", flush=True)
        d = res[True][0] - res[False][0]
        print(f"{'':<47}{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(d.size):.4f})", flush=True)


if __name__ == "__main__":
    main()
