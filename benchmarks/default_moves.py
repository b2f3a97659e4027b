"""The default model's move mix at scale: CGM's grow/prune/change/swap against grow/prune alone.

What a user gets from ``pm.sample()`` on the README's model (``BARTTree("f", X, Y=y)`` with its
defaults: learned leaf scale, DART split probabilities, the warm start and burn-in; sigma^2 ~
InverseGamma by its conjugate step), with only ``cgm_tree={"move_probs": ...}`` differing
between the rows.  Friedman #1 (p = 10, noise sd 1) on seeds of its own, 1,000 test rows.

Per size and move mix: 2 chains in parallel (one per core), the same number of draws each;
seconds per iteration of the kept draws (from a callback at every draw, per chain); held-out
RMSE of the posterior mean of f against the true f and mean log predictive density of y;
ArviZ bulk ESS over both chains, and ESS per second of one core (ESS / the two chains' summed
seconds), of sigma, of the learned leaf scale and of f at 20 fixed test rows (median, lower
quartile and minimum over the rows).

Run: ``python benchmarks/default_moves.py --sizes 30000 100000 --draws 3000``.
"""

from __future__ import annotations

import argparse
import math
import time

import arviz as az
import numpy as np

from pymc_trees.comparison.datasets import friedman1

MIXES = {
    "CGM": {"grow": 0.25, "prune": 0.25, "change": 0.40, "swap": 0.10},
    "GrowPrune": {"grow": 0.5, "prune": 0.5},
}


def run(X, y, X_test, moves, draws, tune, seed):
    import pymc as pm

    import pymc_trees as pmt

    stamps = {0: [], 1: []}

    def cb(trace, draw):
        stamps[draw.chain].append((draw.tuning, time.perf_counter()))

    with pm.Model():
        f = pmt.BARTTree("f", X, Y=y, m=200, response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=2, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"move_probs": moves}, callback=cb)
    secs = 0.0
    for ch in stamps.values():
        kept = [t for tuning, t in ch if not tuning]
        secs += (kept[-1] - kept[0]) * len(kept) / (len(kept) - 1)
    f_test = pmt.predict(idata, X_test).values  # (chain, draw, obs)
    sigma = np.sqrt(idata.posterior["sigma2"].values)
    leaf_sd = idata.sample_stats["f_leaf_sd"].values
    return secs, f_test, sigma, leaf_sd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[30000, 100000])
    ap.add_argument("--draws", type=int, default=3000)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    ap.add_argument("--seed", type=int, default=2027)
    a = ap.parse_args(argv)
    hdr = (f"{'n':>9} {'moves':<10} {'s/iter':>7} | {'RMSE':>6} {'LPD':>7} | "
           f"{'ESS sigma':>9} {'leaf_sd':>7} {'f med':>6} {'f q25':>6} {'f min':>6} | "
           f"{'ESS/s sigma':>11} {'leaf_sd':>7} {'f med':>6} {'f q25':>6} {'f min':>6}")
    rows = []
    points = np.random.default_rng(5).choice(1000, size=20, replace=False)
    for n in a.sizes:
        rng = np.random.default_rng(a.seed + n)
        X, y, _ = friedman1(n, rng=rng)
        X_test, y_test, f_true = friedman1(1000, rng=rng)
        for label in a.mixes:
            secs, F, sig, lsd = run(X, y, X_test, MIXES[label], a.draws, a.tune, a.seed)
            Fs = F.reshape(-1, F.shape[-1])
            Sg = sig.reshape(-1)
            rmse = float(np.sqrt(np.mean((Fs.mean(0) - f_true) ** 2)))
            ld = (-0.5 * ((y_test[None, :] - Fs) / Sg[:, None]) ** 2 - np.log(Sg[:, None])
                  - 0.5 * math.log(2 * math.pi))
            mx = ld.max(0)
            lpd = float(np.mean(mx + np.log(np.mean(np.exp(ld - mx), axis=0))))
            ess_s = float(az.ess(sig))
            ess_l = float(az.ess(lsd))
            ess_f = np.array([float(az.ess(F[:, :, j])) for j in points])
            q = (np.median(ess_f), np.quantile(ess_f, 0.25), ess_f.min())
            row = (f"{n:>9,} {label:<10} {secs / (2 * a.draws):>7.4f} | {rmse:>6.3f} "
                   f"{lpd:>7.3f} | {ess_s:>9.0f} {ess_l:>7.0f} {q[0]:>6.0f} {q[1]:>6.0f} "
                   f"{q[2]:>6.0f} | {ess_s / secs:>11.3f} {ess_l / secs:>7.3f} "
                   f"{q[0] / secs:>6.3f} {q[1] / secs:>6.3f} {q[2] / secs:>6.3f}")
            rows.append(row)
            print(row, flush=True)
    print()
    print(f"{a.draws} draws x 2 chains after {a.tune} tuning iterations; ESS over both chains;"
          " ESS/s per second of one core")
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
