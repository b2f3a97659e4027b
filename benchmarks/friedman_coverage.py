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
before issue 26) and ``learned`` (the default: ``leaf_sd="learned"``).

Run: ``python benchmarks/friedman_coverage.py --n 1000 10000 --seeds 5151 6262`` (about 6 minutes).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1

M = 200


def run(n: int, variant: str, seed: int) -> dict:
    X, y, _ = friedman1(n, rng=seed)
    Xt, _, ft = friedman1(1000, rng=seed + 1)
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=M, leaf_sd=variant)
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        t = time.perf_counter()
        idata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t
    fd = pmt.predict(idata, Xt, var_name="f").values  # (chain, draw, rows)

    def cover(d):
        lo, hi = np.quantile(d, [0.025, 0.975], axis=0)
        return float(np.mean((ft >= lo) & (ft <= hi))), float(np.mean(hi - lo))

    pooled = fd.reshape(-1, len(ft))
    sd = pooled.std(axis=0)
    return {"rmse": float(np.sqrt(np.mean((pooled.mean(0) - ft) ** 2))),
            "pooled": cover(pooled), "chains": [cover(fd[c]) for c in range(fd.shape[0])],
            "apart": float(np.mean(np.abs(fd[0].mean(0) - fd[1].mean(0)) / sd)),
            "sigma": float(np.sqrt(idata.posterior["sigma2"].values).mean()),
            "leaf_sd": float(idata.sample_stats["leaf_sd"].values.mean()), "wall": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--seeds", type=int, nargs="*", default=[5151, 6262])
    ap.add_argument("--variants", nargs="*", default=["fixed", "learned"])
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print("| n | seed | leaf scale | RMSE of f | 95% coverage (width), chains pooled | "
          "each chain | chains apart (posterior sds) | sigma | leaf sd | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in a.n:
        for seed in a.seeds:
            for v in a.variants:
                r = run(n, v, seed)
                chains = ", ".join(f"{c:.3f}" for c, _ in r["chains"])
                print(f"| {n:,} | {seed} | {v} | {r['rmse']:.3f} | {r['pooled'][0]:.3f} "
                      f"({r['pooled'][1]:.2f}) | {chains} | {r['apart']:.2f} | "
                      f"{r['sigma']:.3f} | {r['leaf_sd']:.3f} | {r['wall']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
