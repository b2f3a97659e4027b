"""Mixing at equal wall time: Particle Gibbs (10 particles), CGM and GrowPrune.

Problems
  * Friedman #1, p = 10, noise sd 1, n = 1,000 and 10,000 training rows (``--sizes`` for
    others: 600 s per chain above 10,000), 1,000 test rows;
  * hypercube-D (Lakshminarayanan, Roy and Teh 2015), D = 3 and 4: 10 points per vertex of
    {-1, 1}^D jittered with sd 0.1, every vertex gets a value from N(0, 3^2), y = vertex value
    + N(0, 0.1^2) noise; n = 10 * 2^D for training and again for testing.

Every sampler runs 2 chains, each for the same wall-time budget, in BART with m = 200 trees
and the default calibration (``Y`` -> offset and leaf sd, sigma^2 ~ InverseGamma from
``noise_prior``), sigma^2 drawn by its conjugate update after every sweep.  The clock covers
the sampler only (sweeps and the sigma^2 draw); recording f at the test rows is off the clock.

Reported per problem and sampler
  * sweeps per second;
  * held-out RMSE of the posterior mean of f against the true f, and the log predictive density
    (mean over test rows of log mean_draws N(y | f_draw(x), sigma_draw^2)), at 25%, 50% and
    100% of the budget, each from the second half of the draws made by then;
  * ESS per second (ArviZ bulk ESS over the 2 chains, second half of the draws, divided by the
    sampler time of that half) of sigma and of f at 5 fixed test rows (median and min).

Run: ``python benchmarks/mixing.py`` (about 20 minutes; ``--quick`` for a short smoke run).
"""

from __future__ import annotations

import argparse
import math
import time

import arviz as az
import numpy as np

from pymc_trees.bart.likelihood.calibration import leaf_calibration, noise_prior
from pymc_trees.comparison.datasets import friedman1
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs

SAMPLERS = {
    "PG(10)": ("pg", 10),
    "CGM": ("cgm", {"grow": 0.25, "prune": 0.25, "change": 0.40, "swap": 0.10}),
    "GrowPrune": ("cgm", {"grow": 0.5, "prune": 0.5}),
}


def hypercube(D: int, rng: np.random.Generator):
    vertices = np.array(np.meshgrid(*[[-1.0, 1.0]] * D)).reshape(D, -1).T
    values = rng.normal(0.0, 3.0, size=len(vertices))

    def draw():
        idx = np.repeat(np.arange(len(vertices)), 10)
        X = vertices[idx] + rng.normal(0.0, 0.1, size=(idx.size, D))
        f = values[idx]
        return X, f + rng.normal(0.0, 0.1, size=idx.size), f

    X, y, _ = draw()
    X_test, y_test, f_test = draw()
    return X, y, X_test, y_test, f_test


def problems(scale: float, sizes=(1000, 10000)):
    rng = np.random.default_rng(2015)
    out = []
    for n in sizes:
        budget = {1000: 40.0, 10000: 120.0}.get(n, 600.0)
        X, y, _ = friedman1(n, rng=rng)
        X_test, y_test, f_test = friedman1(1000, rng=rng)
        out.append((f"friedman1 n={n}", X, y, X_test, y_test, f_test, budget * scale))
    for D in (3, 4):
        X, y, X_test, y_test, f_test = hypercube(D, rng)
        out.append((f"hypercube D={D} n={len(y)}", X, y, X_test, y_test, f_test, 20.0 * scale))
    return out


def run_chain(kind, arg, X, y, X_test, budget, seed, m=200):
    rng = np.random.default_rng(seed)
    offset, leaf_sd = leaf_calibration(y, m=m)
    fs = ForestSampler(X, TreePrior(m=m), offset, leaf_sd)
    a0, b0 = noise_prior(X, y)
    z = y - offset
    sigma2 = float(np.var(y))
    cp = move_cumulative_probs(arg) if kind == "cgm" else None
    times, sigmas, f_test = [], [], []
    clock = 0.0
    while clock < budget:
        t0 = time.perf_counter()
        omega = np.full(y.size, 1.0 / sigma2)
        if kind == "cgm":
            fs.cgm_sweep(rng, z, omega, cp)
        else:
            fs.pg_sweep(rng, z, omega, arg)
        resid = y - fs.values()
        sigma2 = 1.0 / rng.gamma(a0 + y.size / 2, 1.0 / (b0 + resid @ resid / 2))
        clock += time.perf_counter() - t0
        times.append(clock)
        sigmas.append(math.sqrt(sigma2))
        f_test.append(fs.pack().predict(X_test))
    return np.array(times), np.array(sigmas), np.array(f_test)


def summarise(chains, y_test, f_test_true, points):
    """Metrics at 25/50/100% of the budget from the second half of each chain's draws."""
    out = {}
    budget = min(c[0][-1] for c in chains)
    for frac in (0.25, 0.5, 1.0):
        fs, ss = [], []
        for times, sig, ft in chains:
            k = int(np.searchsorted(times, frac * budget, side="right"))
            fs.append(ft[k // 2:k])
            ss.append(sig[k // 2:k])
        F = np.concatenate(fs)
        Sg = np.concatenate(ss)
        rmse = float(np.sqrt(np.mean((F.mean(0) - f_test_true) ** 2)))
        logdens = (-0.5 * ((y_test[None, :] - F) / Sg[:, None]) ** 2
                   - np.log(Sg[:, None]) - 0.5 * math.log(2 * math.pi))
        mx = logdens.max(0)
        lpd = float(np.mean(mx + np.log(np.mean(np.exp(logdens - mx), axis=0))))
        out[frac] = (rmse, lpd)
    # ESS per second over the second half of equal-length chains
    n = min(len(c[0]) for c in chains)
    half = n // 2
    secs = float(np.mean([c[0][n - 1] - c[0][half - 1] for c in chains]))
    sig = np.stack([c[1][half:n] for c in chains])
    ess_sigma = float(az.ess(sig)) / secs
    ess_f = [float(az.ess(np.stack([c[2][half:n, j] for c in chains]))) / secs for j in points]
    out["sweeps_per_s"] = n / float(np.mean([c[0][n - 1] for c in chains]))
    out["ess_sigma"] = ess_sigma
    out["ess_f"] = (float(np.median(ess_f)), float(np.min(ess_f)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="budgets / 8")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every budget")
    ap.add_argument("--only", default="", help="run only problems whose name starts with this")
    ap.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000],
                    help="Friedman #1 training sizes (budget 40 s, 120 s, else 600 s per chain)")
    a = ap.parse_args(argv)
    scale = a.scale / (8 if a.quick else 1)
    print("Mixing at equal wall time, 2 chains per sampler, m = 200")
    hdr = (f"{'problem':<24} {'sampler':<10} {'budget':>6} {'sweeps/s':>8} | "
           f"{'RMSE 25%':>8} {'50%':>6} {'100%':>6} | {'LPD 100%':>8} | "
           f"{'ESS/s sigma':>11} | {'ESS/s f med':>11} {'min':>6}")
    # compile every kernel before any clock starts
    Xw, yw, _ = friedman1(200, rng=np.random.default_rng(0))
    for kind, arg in SAMPLERS.values():
        run_chain(kind, arg, Xw, yw, Xw[:5], 1e-9, 0, m=5)
    rows = []
    for name, X, y, X_test, y_test, f_true, budget in problems(scale, a.sizes):
        if not name.startswith(a.only):
            continue
        points = list(np.random.default_rng(5).choice(len(y_test), size=5, replace=False))
        for label in a.samplers:
            kind, arg = SAMPLERS[label]
            chains = [run_chain(kind, arg, X, y, X_test, budget, seed) for seed in (1, 2)]
            s = summarise(chains, y_test, f_true, points)
            row = (f"{name:<24} {label:<10} {budget:>5.0f}s {s['sweeps_per_s']:>8.1f} | "
                   f"{s[0.25][0]:>8.3f} {s[0.5][0]:>6.3f} {s[1.0][0]:>6.3f} | "
                   f"{s[1.0][1]:>8.3f} | {s['ess_sigma']:>11.2f} | "
                   f"{s['ess_f'][0]:>11.2f} {s['ess_f'][1]:>6.2f}")
            rows.append(row)
            print(row, flush=True)
    print()
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
