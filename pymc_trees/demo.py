"""Main job: BART inside a PyMC model on Friedman #1.

Run with ``python -m pymc_trees.demo`` (or ``make demo``).  Prints one line with the held-out
RMSE against the true f, the coverage of 95% intervals for f at held-out rows, the posterior
mean of sigma and the wall time, and writes a trace plot.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def run(n: int = 1000, n_test: int = 1000, m: int = 200, draws: int = 1000, tune: int = 1000,
        chains: int = 2, cores: int = 1, seed: int = 2024, plot: str | None = "demo_trace.png"):
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import pymc as pm

    import pymc_trees as pmt
    from pymc_trees.datasets import friedman1

    rng = np.random.default_rng(seed)
    X, y, _ = friedman1(n, rng=rng)
    X_test, _, f_test = friedman1(n_test, rng=rng)

    t0 = time.perf_counter()
    with pm.Model():
        X_data = pm.Data("X", X)
        f = pmt.BARTTree("f", X_data, Y=y, m=m)
        sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Deterministic("sigma", pm.math.sqrt(sigma2))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y, shape=X_data.shape[0])
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores,
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)
    pred = pmt.predict(idata, X_test, var_name="f")
    wall = time.perf_counter() - t0

    draws_f = pred.values.reshape(-1, n_test)
    rmse = float(np.sqrt(np.mean((draws_f.mean(axis=0) - f_test) ** 2)))
    lo, hi = np.quantile(draws_f, [0.025, 0.975], axis=0)
    coverage = float(np.mean((lo <= f_test) & (f_test <= hi)))
    sigma = float(idata.posterior["sigma"].mean())
    print(f"friedman1 n={n} m={m} chains={chains}x{draws}: held-out RMSE(f)={rmse:.3f} "
          f"coverage95(f)={coverage:.3f} sigma={sigma:.3f} (true 1.0) wall={wall:.1f}s")
    if plot:
        pc = az.plot_trace(idata, var_names=["sigma", "f"], coords={"f_dim_0": [0, 1, 2]})
        pc.savefig(plot)
        print(f"trace plot written to {plot}")
    return {"rmse": rmse, "coverage": coverage, "sigma": sigma, "wall": wall, "idata": idata}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--m", type=int, default=200)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--plot", default="demo_trace.png")
    a = ap.parse_args(argv)
    run(n=a.n, m=a.m, draws=a.draws, tune=a.tune, chains=a.chains, cores=a.cores, seed=a.seed,
        plot=a.plot)


if __name__ == "__main__":
    main()
