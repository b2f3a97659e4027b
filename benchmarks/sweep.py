"""Seconds per sweep of m = 200 trees: pymc_trees against stochtree, timed in the same run.

Friedman #1 (p = 10, noise sd 1) at n = 1,000 and 10,000 rows.  A sweep updates every tree once
(one structural move, then the leaf draw) and the noise variance.

* pymc_trees kernel sweep: ``ForestSampler.cgm_sweep`` (GrowPrune, and CGM with all four
  moves), plus the conjugate sigma^2 draw, without PyMC around it;
* pymc_trees in pm.sample: the wall time per iteration of ``pm.sample`` (CGMTreeStep +
  NoiseGibbs, one chain), i.e. including PyMC's per-draw overhead and storing the forests;
* stochtree: ``BARTModel.sample`` with grow/prune MCMC only (num_gfr = 0), 200 trees, one
  thread; fixed costs and the burn-in (the same in both runs, so trees have reached their typical size)
  are removed by timing two run lengths and differencing.

Both use min_leaf 5 (stochtree's min_samples_leaf), up to 100 cutpoints per feature,
alpha = 0.95, beta = 2.  Run: ``python benchmarks/sweep.py`` (``--quick`` for fewer sweeps).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pymc_trees.datasets import friedman1
from pymc_trees.sampler import ForestSampler, TreePrior, _move_cumprobs


def time_kernel(X, y, moves, sweeps, seed=0):
    rng = np.random.default_rng(seed)
    offset = 0.5 * (y.max() + y.min())
    sd = (y.max() - y.min()) / (2 * 2 * np.sqrt(200))
    fs = ForestSampler(X, TreePrior(m=200), offset, sd)
    cp = _move_cumprobs(moves)
    z = y - offset
    sigma2 = np.var(y)

    def one():
        nonlocal sigma2
        fs.cgm_sweep(rng, z, np.full(y.size, 1 / sigma2), cp)
        resid = y - fs.values()
        sigma2 = 1 / rng.gamma(1.5 + y.size / 2, 1 / (1.0 + resid @ resid / 2))

    for _ in range(max(20, sweeps // 5)):  # compile and burn in: trees reach typical size
        one()
    t = time.perf_counter()
    for _ in range(sweeps):
        one()
    return (time.perf_counter() - t) / sweeps


def time_pymc(X, y, sweeps, seed=0):
    import pymc as pm

    import pymc_trees as pmt

    burn = max(20, sweeps // 5)

    def run(draws):
        with pm.Model():
            f = pmt.BARTTree("f", X, Y=y, m=200)
            s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
            t = time.perf_counter()
            pm.sample(draws=draws, tune=burn, chains=1, cores=1, random_seed=seed,
                      progressbar=False, compute_convergence_checks=False)
            return time.perf_counter() - t

    run(2)  # compile
    short, long_ = 5, sweeps + 5
    return (run(long_) - run(short)) / (long_ - short)


def time_stochtree(X, y, sweeps, seed=0):
    from stochtree import BARTModel

    burn = max(20, sweeps // 5)

    def run(n_mcmc):
        model = BARTModel()
        t = time.perf_counter()
        model.sample(X_train=X, y_train=y, num_gfr=0, num_burnin=burn, num_mcmc=n_mcmc,
                     general_params={"random_seed": seed, "num_threads": 1},
                     mean_forest_params={"num_trees": 200, "min_samples_leaf": 5})
        return time.perf_counter() - t

    run(2)
    short, long_ = 5, sweeps + 5
    return (run(long_) - run(short)) / (long_ - short)


def main(argv=None):
    ap = argparse.ArgumentParser(description="seconds per sweep of 200 trees")
    ap.add_argument("--quick", action="store_true", help="fewer sweeps")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    a = ap.parse_args(argv)
    try:
        import stochtree  # noqa: F401
        have_stochtree = True
    except ImportError:
        have_stochtree = False
        print("stochtree is not installed (pip install stochtree); its column is skipped")

    rows = []
    for n in a.sizes:
        sweeps = (40 if a.quick else 200) if n <= 2000 else (20 if a.quick else 100)
        X, y, _ = friedman1(n, rng=np.random.default_rng(n))
        gp = time_kernel(X, y, {"grow": 0.5, "prune": 0.5}, sweeps)
        cgm = time_kernel(X, y, {"grow": .25, "prune": .25, "change": .4, "swap": .1}, sweeps)
        in_pymc = time_pymc(X, y, sweeps)
        st = time_stochtree(X, y, sweeps) if have_stochtree else float("nan")
        rows.append((n, gp, cgm, in_pymc, st))

    print()
    print("seconds per sweep of m = 200 trees (Friedman #1, p = 10)")
    hdr = (f"{'n':>7} | {'ours GrowPrune':>14} | {'ours CGM':>9} | {'ours in pm.sample':>17} | "
           f"{'stochtree GP':>12} | {'stochtree / ours GP':>19}")
    print(hdr)
    print("-" * len(hdr))
    for n, gp, cgm, in_pymc, st in rows:
        print(f"{n:>7} | {gp:>14.5f} | {cgm:>9.5f} | {in_pymc:>17.5f} | {st:>12.5f} | "
              f"{st / gp:>19.2f}")


if __name__ == "__main__":
    main()
