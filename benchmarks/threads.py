"""One chain on several threads: seconds per MCMC iteration of the README's model and of a
Poisson term with log-gamma leaves, with 1 and 2 threads (``cgm_tree={"threads": k}``) and
as many as the machine has, beside bartz left free on the same machine (JAX on every core),
in one run; and ``pm.sample(chains=2, cores=2)`` wall time with the default threads against
one thread a chain (the default must not oversubscribe the cores).

    python benchmarks/threads.py [--sizes 100000 1000000] [--repeats 2] [--no-bartz]

Per iteration: ``pm.sample`` with a callback stamping every iteration, the mean interval
between the kept draws (after a few tuning iterations, warm start off so that every
iteration is an MCMC sweep), the median over ``--repeats`` runs; the functions are compiled
on a small model first.  bartz: ``bartz.Bart`` at two run lengths, differenced (as
``benchmarks/sweep.py``), with no limit on its threads.  The draws of a seed are the same
for any number of threads (``tests/bart/test_threads.py``), so only the time differs.

Where the rows are at most 65,536 (one block, ``pymc_trees.bart.kernels.row_blocks``) no
thread starts: the 10,000-row ``pm.sample(chains=2, cores=2)`` run shows the default costs
nothing there.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def gaussian_model(X, y):
    """The README's model, as written."""
    import pymc as pm

    import pymc_trees as pmt

    with pm.Model() as model:
        f = pmt.BARTTree("f", X, Y=y, m=200)
        sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y)
    return model


def poisson_model(X, y):
    """A Poisson term: ``y ~ Poisson(exp(f))``, log-gamma leaves by default."""
    import pymc as pm

    import pymc_trees as pmt

    with pm.Model() as model:
        f = pmt.BARTTree("f", X, Y=y, link="log", m=200)
        pm.Poisson("y", mu=pm.math.exp(f), observed=y)
    return model


def data(kind: str, n: int):
    """Friedman #1 rows, y Gaussian (the README's) or Poisson counts with log mean
    ``(f - mean f) / (2 sd f)``."""
    from pymc_trees.comparison.datasets import friedman1

    X, y, fx = friedman1(n, rng=n)
    if kind == "poisson":
        rng = np.random.default_rng(n + 1)
        y = rng.poisson(np.exp(0.5 * (fx - fx.mean()) / fx.std())).astype(np.float64)
    return X, y


MODELS = {"README model": ("gaussian", gaussian_model), "Poisson term": ("poisson", poisson_model)}


def per_iteration(build, X, y, threads: int, tune: int = 3, draws: int = 6,
                  seed: int = 0) -> float:
    """Seconds per iteration between the kept draws of one ``pm.sample`` run."""
    import pymc as pm

    stamps = []
    with build(X, y):
        pm.sample(draws=draws, tune=tune, chains=1, cores=1, random_seed=seed,
                  progressbar=False, compute_convergence_checks=False,
                  cgm_tree={"threads": threads, "warm_start": 0},
                  callback=lambda **kw: stamps.append(time.perf_counter()))
    ts = stamps[-draws:]
    return (ts[-1] - ts[0]) / (draws - 1)


def bartz_free(X, y, draws: int = 8) -> float:
    """bartz's seconds per iteration with every core (two run lengths, differenced)."""
    from sweep import bartz_runner

    run, short, long_ = bartz_runner(X, y, draws, burn=4)
    return (run(long_) - run(short)) / (long_ - short)


def two_chains_wall(threads, n: int = 10_000, seed: int = 0) -> float:
    """Wall seconds of ``pm.sample(chains=2, cores=2)`` of the README's model at n rows."""
    import pymc as pm

    X, y = data("gaussian", n)
    t = time.perf_counter()
    with gaussian_model(X, y):
        pm.sample(draws=300, tune=300, chains=2, cores=2, random_seed=seed, progressbar=False,
                  compute_convergence_checks=False, cgm_tree={"threads": threads})
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-bartz", action="store_true")
    ap.add_argument("--no-chains", action="store_true", help="skip the two-chain wall times")
    args = ap.parse_args(argv)
    from pymc_trees.bart.steps.threads import usable_cores

    cores = usable_cores()
    counts = sorted({1, 2, cores})
    for label, (kind, build) in MODELS.items():
        X, y = data(kind, 2000)
        per_iteration(build, X, y, 1, tune=1, draws=2)  # compile off the clock
    rows = []
    for n in args.sizes:
        for label, (kind, build) in MODELS.items():
            X, y = data(kind, n)
            got = {k: float(np.median([per_iteration(build, X, y, k)
                                       for _ in range(args.repeats)])) for k in counts}
            bz = (bartz_free(X, y) if kind == "gaussian" and not args.no_bartz
                  else float("nan"))
            rows.append((label, n, got, bz))
            print(label, n, {k: round(v, 4) for k, v in got.items()}, "bartz", round(bz, 4),
                  flush=True)
    cols = " | ".join(f"{k} thread{'s' if k > 1 else ''}" for k in counts)
    print(f"\nseconds per iteration, {cores} cores usable\n")
    print(f"| model | rows | {cols} | 2 / 1 threads | bartz, free | ours at 2 / bartz |")
    print("|---|---|" + "---|" * len(counts) + "---|---|---|")
    for label, n, got, bz in rows:
        two = got.get(2, got[max(counts)])
        print(f"| {label} | {n:,} | " + " | ".join(f"{got[k]:.3f}" for k in counts)
              + f" | {two / got[1]:.2f} | {bz:.3f} | {two / bz:.2f} |")
    if not args.no_chains:
        # The first pm.sample with worker processes pays for starting them and loading the
        # compiled kernels in each; an untimed run first, then the two settings alternated.
        two_chains_wall(1, n=2_000)
        walls = {None: [], 1: []}
        for _ in range(args.repeats):
            for threads in (None, 1):
                walls[threads].append(two_chains_wall(threads))
        default, one = float(np.median(walls[None])), float(np.median(walls[1]))
        print(f"\npm.sample(chains=2, cores=2, draws=300, tune=300) of the README's model at "
              f"10,000 rows (median of {args.repeats}): {default:.1f} s with the default "
              f"threads, {one:.1f} s with one thread a chain (ratio {default / one:.3f})")


if __name__ == "__main__":
    main()
