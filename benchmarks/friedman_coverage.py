"""Why 95% intervals of f under-cover on Friedman #1 at 10,000 rows, and what the leaf scale
does to it (issue 26, must-have 3).

Friedman #1 (p = 10, noise sd 1), n training rows, 1,000 test rows (the next seed), m = 200,
2 chains x (1,000 + 1,000) of ``pm.sample`` with the README's model, one core; per run:

* RMSE of the posterior mean of f against the true f at the test rows;
* coverage and mean width of the 95% interval of f, from both chains pooled (what a user
  gets) and from each chain alone;
* how far apart the two chains' posterior means are, in posterior sds (mean over test rows):
  two chains that had each explored the posterior would differ by about
  ``sqrt(2 / ESS)`` of an sd;
* the posterior mean of the noise sd and of the leaf sd (the ``leaf_sd`` stat).

Variants: ``fixed`` (``leaf_sd="fixed"``: the calibration from y, held fixed; the default
before issue 26), ``learned`` (``leaf_sd="learned"`` with the default split prior: the default
model, DART inside the tree step since issue 26's third session), ``dart`` (learned and
Linero's DART split probabilities as model variables, ``u ~ Beta(0.5, 1)``,
``s ~ Dirichlet(u / (1 - u))``), ``dart_step`` (the same prior inside the tree step:
``split_prior="dart"``), ``uniform`` (``split_prior="uniform"``: equal split probabilities)
and ``stochtree``
(stochtree's default in the same run: 10 grow-from-root sweeps, then 1,000 MCMC draws per
chain, two chains, its learned leaf variance, one thread). ``--tune`` gives the tuning
iterations of our runs (several: one row each); the default is PyMC's 1,000.

Run: ``python benchmarks/friedman_coverage.py --n 1000 10000 --seeds 5151 6262`` (about 6 minutes).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1

import cluster  # this folder is on the path: --dask-workers

M = 200


def run(n: int, variant: str, seed: int, tune: int = 1000, m: int = M) -> dict:
    X, y, _ = friedman1(n, rng=seed)
    Xt, _, ft = friedman1(1000, rng=seed + 1)
    if variant == "stochtree":
        return _stochtree(X, y, Xt, ft, seed)
    with pm.Model():
        kw = {"leaf_sd": "learned" if variant in ("dart", "dart_step", "uniform") else variant}
        if variant == "dart_step":
            kw["split_prior"] = "dart"  # DART inside the tree step (Linero's prior)
        if variant == "uniform":
            kw["split_prior"] = "uniform"  # equal split probabilities
        if variant == "dart":
            # Linero's DART prior on the split probabilities, as
            # docs/explanation/leaf-scale-and-split-prior.md writes it
            u = pm.Beta("u", 0.5, 1.0)
            kw["split_prior"] = pm.Dirichlet("s", a=pt.ones(X.shape[1]) * u / (1 - u))
        f = pmt.BARTTree("f", X, y, m=m, **kw, response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        t = time.perf_counter()
        idata = pm.sample(draws=1000, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t
    fd = pmt.predict(idata, Xt, var_name="f").values  # (chain, draw, rows)
    return _summary(fd, ft, float(np.sqrt(idata.posterior["sigma2"].values).mean()),
                    float(idata.sample_stats["f_leaf_sd"].values.mean()), wall)


def _stochtree(X, y, Xt, ft, seed: int) -> dict:
    from stochtree import BARTModel

    t = time.perf_counter()
    model = BARTModel()
    model.sample(X_train=X, y_train=y, X_test=Xt, num_gfr=10, num_burnin=0, num_mcmc=1000,
                 general_params={"random_seed": seed, "num_threads": 1, "num_chains": 2},
                 mean_forest_params={"num_trees": M})
    wall = time.perf_counter() - t
    fd = np.asarray(model.y_hat_test).T.reshape(2, -1, len(ft))  # chains in order
    leaf = getattr(model, "leaf_scale_samples", None)
    return _summary(fd, ft, float(np.sqrt(np.asarray(model.global_var_samples)).mean()),
                    np.nan if leaf is None else float(np.sqrt(np.asarray(leaf)).mean()), wall)


def _summary(fd, ft, sigma: float, leaf_sd: float, wall: float) -> dict:
    def cover(d):
        lo, hi = np.quantile(d, [0.025, 0.975], axis=0)
        return float(np.mean((ft >= lo) & (ft <= hi))), float(np.mean(hi - lo))

    pooled = fd.reshape(-1, len(ft))
    sd = pooled.std(axis=0)
    return {"rmse": float(np.sqrt(np.mean((pooled.mean(0) - ft) ** 2))),
            "pooled": cover(pooled), "chains": [cover(fd[c]) for c in range(fd.shape[0])],
            "apart": float(np.mean(np.abs(fd[0].mean(0) - fd[1].mean(0)) / sd)),
            "sigma": sigma, "leaf_sd": leaf_sd, "wall": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--seeds", type=int, nargs="*", default=[5151, 6262])
    ap.add_argument("--variants", nargs="*", default=["fixed", "learned"],
                    choices=["fixed", "learned", "dart", "dart_step", "uniform",
                             "stochtree"])
    ap.add_argument("--tune", type=int, nargs="*", default=[1000])
    ap.add_argument("--m", type=int, default=M, help="trees in our runs (stochtree: 200)")
    cluster.add_option(ap)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print("| n | seed | learner | tune | RMSE of f | 95% coverage (width), chains pooled | "
          "each chain | chains apart (posterior sds) | sigma | leaf sd | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    from joblib import Parallel, delayed

    # every run is a joblib job (serial by default; --dask-workers: a local Dask cluster)
    jobs = [(n, seed, v, tune) for n in a.n for seed in a.seeds for v in a.variants
            for tune in ([None] if v == "stochtree" else a.tune)]
    with cluster.backend(a.dask_workers):
        results = Parallel(return_as="generator")(
            delayed(run)(n, v, seed) if tune is None else delayed(run)(n, v, seed, tune, a.m)
            for n, seed, v, tune in jobs)
        for (n, seed, v, tune), r in zip(jobs, results):
            chains = ", ".join(f"{c:.3f}" for c, _ in r["chains"])
            label = "10 GFR" if tune is None else f"{tune:,}, m = {a.m}"
            print(f"| {n:,} | {seed} | {v} | {label} | {r['rmse']:.3f} | "
                  f"{r['pooled'][0]:.3f} ({r['pooled'][1]:.2f}) | {chains} | "
                  f"{r['apart']:.2f} | {r['sigma']:.3f} | {r['leaf_sd']:.3f} | "
                  f"{r['wall']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
