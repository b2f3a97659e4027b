"""Variance trees: our conjugate log-inverse-gamma variance forest and our general-step
variance trees against stochtree's variance forest, on a heteroscedastic simulation.

Data (per seed): X ~ U(0, 1)^5, n = 1,000 training and 1,000 held-out rows;
``f(x) = (10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5) / 5`` (Friedman #1 over 5) and
``s(x) = exp(-0.5 + 1.2 x1 + 0.5 sin(2 pi x2))`` (from 0.3 to 3.2), ``y = f(x) + s(x) e``.
Every learner has 200 mean trees and 50 variance trees, 2 chains of 1,000 + 1,000 iterations
on one core:

* **ours, log-inverse-gamma**: ``f = BARTTree(X, y, m=200, response="constant")``,
  ``g = BARTTree(X, m=50, leaf_sd=1.5 / sqrt(50), leaf_prior="log-inverse-gamma")`` (g the log
  variance: prior sd 1.5 of log sigma^2 at a row, stochtree's calibration),
  ``a ~ Normal(log sd(y), 1)``, ``y ~ Normal(f, exp(a + g / 2))``: the conjugate variance
  update of issue 51 (``pymc_trees.bart.kernels.gamma_leaves``) and NUTS for a.
* **ours, general step**: the same with normal leaves on ``g`` the log sd (leaf sd
  0.75 / sqrt(50), ``leaf_prior="normal"``), ``sigma = exp(a + g)``: the general tree step.
* **stochtree variance forest**: ``BARTModel.sample(..., variance_forest_params=
  {"num_trees": 50})``, mean forest 200 trees, ``num_burnin=1000, num_mcmc=1000``,
  2 chains, one thread; and the same with its default warm start (``num_gfr=10``,
  ``num_burnin=0``).

Reported per learner, mean over seeds and the paired SE of the difference to the first
row: RMSE of the posterior mean of s(x) at the held-out rows against the true s; held-out
log predictive density per row; coverage of the central 90% predictive interval of y;
wall time (seconds, including PyMC's compilation; every learner runs once with 10 + 10
iterations before the timed runs, so that the process's one-time loading of compiled
kernels and imports falls on none of them).

Run: ``python benchmarks/variance_forest.py [--seeds 0 1 2]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import special, stats

N, NT, P, MEAN_TREES, VAR_TREES = 1000, 1000, 5, 200, 50


def simulate(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N + NT, P))
    f = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4]) / 5
    s = np.exp(-0.5 + 1.2 * X[:, 0] + 0.5 * np.sin(2 * np.pi * X[:, 1]))
    y = f + s * rng.standard_normal(N + NT)
    return X[:N], y[:N], X[N:], y[N:], s[N:]


def ours(X, y, Xt, seed, conjugate, tune=1000, draws=1000):
    import pymc as pm

    import pymc_trees as pmt

    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=MEAN_TREES, response="constant")
        a = pm.Normal("a", np.log(np.std(y)), 1.0)
        if conjugate:
            g = pmt.BARTTree("g", X, m=VAR_TREES, leaf_sd=1.5 / np.sqrt(VAR_TREES),
                             leaf_prior="log-inverse-gamma")
            sigma = pm.math.exp(a + g / 2)
        else:
            g = pmt.BARTTree("g", X, m=VAR_TREES, leaf_sd=0.75 / np.sqrt(VAR_TREES),
                             leaf_prior="normal")  # the general step
            sigma = pm.math.exp(a + g)
        pm.Normal("y", f, sigma, observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    import arviz as az

    ess_a = float(az.ess(idata, var_names=["a"])["a"])
    print(f"    ESS of a {ess_a:.0f} ({ess_a / secs:.1f}/s)", flush=True)
    ft = pmt.predict(idata, Xt, var_name="f").values.reshape(-1, len(Xt))
    gt = pmt.predict(idata, Xt, var_name="g").values.reshape(-1, len(Xt))
    av = idata.posterior["a"].values.reshape(-1, 1)
    sd = np.exp(av + (gt / 2 if conjugate else gt))
    return ft, sd, secs


def stochtree_fit(X, y, Xt, seed, gfr, tune=1000, draws=1000):
    from stochtree import BARTModel

    t = time.perf_counter()
    model = BARTModel()
    gp = {"random_seed": seed, "num_threads": 1, "num_chains": 2}
    model.sample(X_train=X, y_train=y, X_test=Xt, num_gfr=10 if gfr else 0,
                 num_burnin=0 if gfr else tune, num_mcmc=draws, general_params=gp,
                 mean_forest_params={"num_trees": MEAN_TREES},
                 variance_forest_params={"num_trees": VAR_TREES})
    ft = np.asarray(model.y_hat_test).T
    sd = np.sqrt(np.asarray(model.sigma2_x_test)).T
    return ft, sd, time.perf_counter() - t


LEARNERS = {
    "ours, log-inverse-gamma variance trees": lambda *a, **k: ours(*a, conjugate=True, **k),
    "ours, general-step variance trees": lambda *a, **k: ours(*a, conjugate=False, **k),
    "stochtree variance forest (MCMC)": lambda *a, **k: stochtree_fit(*a, gfr=False, **k),
    "stochtree variance forest (default, warm start)":
        lambda *a, **k: stochtree_fit(*a, gfr=True, **k),
}


def scores(ft, sd, yt, st):
    """RMSE of the posterior mean of s against the truth; per-row LPD (log of the mean over
    draws of the density); 90% interval coverage from the mixture's draws."""
    rmse_s = float(np.sqrt(np.mean((sd.mean(axis=0) - st) ** 2)))
    lp = special.logsumexp(stats.norm.logpdf(yt[None], ft, sd), axis=0) - np.log(len(ft))
    rng = np.random.default_rng(0)
    ydraw = ft + sd * rng.standard_normal(ft.shape)
    lo, hi = np.quantile(ydraw, [0.05, 0.95], axis=0)
    return rmse_s, lp, float(np.mean((yt >= lo) & (yt <= hi)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--only", nargs="*", default=list(LEARNERS))
    a = ap.parse_args(argv)
    res = {k: [] for k in a.only}
    X, y, Xt, _, _ = simulate(a.seeds[0])
    for name in a.only:  # untimed: the process's one-time loading falls on no timed run
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LEARNERS[name](X, y, Xt, 0, tune=10, draws=10)
    for seed in a.seeds:
        X, y, Xt, yt, st = simulate(seed)
        for name in a.only:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ft, sd, secs = LEARNERS[name](X, y, Xt, seed)
            rmse_s, lp, cov = scores(ft, sd, yt, st)
            res[name].append((rmse_s, lp, cov, secs))
            print(f"seed {seed} {name}: RMSE of s {rmse_s:.4f}, LPD {lp.mean():.4f}, "
                  f"coverage90 {cov:.3f}, wall {secs:.1f}", flush=True)
    base = a.only[0]
    print()
    print(f"n = {N} training, {NT} held-out rows, p = {P}; {MEAN_TREES} mean and {VAR_TREES} "
          f"variance trees; 2 chains x (1000 + 1000), one core; seeds {a.seeds}")
    print()
    print("| learner | RMSE of s(x) | ratio to first (paired SE) | held-out LPD per row | "
          "difference to first (paired SE) | coverage 90% | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for name in a.only:
        r = res[name]
        rm = np.array([x[0] for x in r])
        lp = np.array([x[1].mean() for x in r])
        rb = np.array([x[0] for x in res[base]])
        lb = np.array([x[1].mean() for x in res[base]])
        k = len(r)
        ratio = rm / rb
        se = lambda d: d.std(ddof=1) / np.sqrt(k) if k > 1 else float("nan")  # noqa: E731
        print(f"| {name} | {rm.mean():.4f} | {ratio.mean():.3f} ({se(ratio):.3f}) | "
              f"{lp.mean():.4f} | {np.mean(lp - lb):+.4f} ({se(lp - lb):.4f}) | "
              f"{np.mean([x[2] for x in r]):.3f} | {np.mean([x[3] for x in r]):.1f} |")


if __name__ == "__main__":
    main()
