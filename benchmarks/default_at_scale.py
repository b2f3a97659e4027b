"""The guard of the default: the README's model as written, at 10,000 to 1,000,000 rows.

Quote this script's table before and after any change of a default, a kernel or a sampler.

The README's Gaussian model (``BARTTree("f", X_data, Y=y, m=200)`` with every default,
``InverseGamma`` noise from ``pmt.noise_prior``, a Normal likelihood) on Friedman #1
(p = 10, noise sd 1), one chain, this process pinned to one core (``--core``, 0 by default;
``taskset`` alike), and printed as one table:

* **default**: seconds per MCMC iteration of ``pm.sample`` with the README's model as
  written (so with whatever leaf form, moves and warm start the defaults choose at that
  size), timed by a ``callback`` between the draws after the tuning iterations, so that the
  fixed costs of the call (building and compiling the model's functions) do not enter;
* **constant**: the same with ``response="constant"`` (plain BART's leaves), for the ratio;
* **linear**: the same with ``response="linear"`` (the linear leaves the default takes on
  smaller tables), for the ratio;
* **bartz**: ``bartz.Bart`` (grow/prune, 200 trees, JAX on one CPU thread) on the same core
  in the same run, its fixed costs differenced away by timing two run lengths (each length
  compiled off the clock first), ours and bartz's runs interleaved over ``--repeats`` rounds
  (medians), so that a slow spell of the machine falls on both sides of the ratio;
* at the largest size, the wall time of ``pm.sample(draws=5, tune=12)`` of the README's
  model with every other default (the time to the first draws), and the peak memory of one
  chain per training row: the high-water mark (``VmHWM``) of a fresh process that builds the
  model and samples ``tune=4, draws=4`` at that size, less the same at 20,000 rows, over the
  difference in rows (as ``benchmarks/million.py`` measures it).

Run: ``python benchmarks/default_at_scale.py`` (``--sizes`` to change the sizes, ``--quick``
for fewer iterations, ``--no-memory`` to skip the memory runs).  bartz is an optional
dependency (``pip install -e .[bench]``); without it its column is NaN.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

# bartz runs on JAX: one CPU thread (set before jax is imported)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np

from sweep import bartz_runner  # benchmarks/sweep.py: bartz timed over two run lengths

RESPONSES = {"default": None, "constant": "constant", "linear": "linear"}


def readme_model(X, y, response=None):
    """The README's model (``response=None``: as written)."""
    import pymc as pm

    import pymc_trees as pmt

    model = pm.Model()
    with model:
        X_data = pm.Data("X", X)
        kw = {} if response is None else {"response": response}
        f = pmt.BARTTree("f", X_data, Y=y, m=200, **kw)
        sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y, shape=X_data.shape[0])
    return model


def pymc_runner(X, y, response, tune, draws, seed=0):
    """A function timing one ``pm.sample`` run of the README's model: seconds per
    iteration between the ``draws`` kept draws, from a callback at every iteration."""
    import pymc as pm

    stamps = []

    def run(X=X, y=y, tune=tune, draws=draws):
        stamps.clear()
        with readme_model(X, y, response):
            pm.sample(draws=draws, tune=tune, chains=1, cores=1, random_seed=seed,
                      progressbar=False, compute_convergence_checks=False,
                      callback=lambda **kw: stamps.append(time.perf_counter()))
        ts = stamps[-draws:]
        return (ts[-1] - ts[0]) / (draws - 1)

    run(X[:2000], y[:2000], 2, 3)  # compile on a few rows (the same types)
    return run


def iterations(n: int, quick: bool) -> tuple[int, int]:
    """(tuning iterations, timed draws) at n rows."""
    if n <= 20_000:
        return (60, 40) if quick else (200, 100)
    if n <= 200_000:
        return (20, 10) if quick else (60, 30)
    return (8, 4) if quick else (16, 8)


def time_to_first_draws(n: int, seed: int = 0) -> float:
    """Wall seconds of ``pm.sample(draws=5, tune=12)`` of the README's model at n rows, with
    every other default (warm start included), its functions compiled on a small model
    first."""
    import pymc as pm

    from pymc_trees.comparison.datasets import friedman1

    X, y, _ = friedman1(2000, rng=np.random.default_rng(seed))
    with readme_model(X, y):
        pm.sample(draws=2, tune=2, chains=1, cores=1, progressbar=False,
                  compute_convergence_checks=False)
    X, y, _ = friedman1(n, rng=np.random.default_rng(n))
    t = time.perf_counter()
    with readme_model(X, y):
        pm.sample(draws=5, tune=12, chains=1, cores=1, random_seed=seed, progressbar=False,
                  compute_convergence_checks=False)
    return time.perf_counter() - t


def _memory_child(n: int, core: int) -> None:
    """In a fresh process: the README's model sampled (one chain, tune=4, draws=4) at n rows;
    prints this process's high-water mark in bytes."""
    import pymc as pm

    from pymc_trees.comparison.datasets import friedman1

    os.sched_setaffinity(0, {core})
    X, y, _ = friedman1(n, rng=np.random.default_rng(n))
    with readme_model(X, y):
        pm.sample(draws=4, tune=4, chains=1, cores=1, random_seed=0, progressbar=False,
                  compute_convergence_checks=False)
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                print("VMHWM", int(line.split()[1]) * 1024)


def peak_bytes(n: int, core: int) -> int:
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(n), "--core",
                          str(core)], capture_output=True, text=True, check=True).stdout
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith("VMHWM")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=3,
                    help="rounds of ours (each leaf form) and bartz, interleaved (medians)")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--core", type=int, default=0, help="the core every run is pinned to")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    ap.add_argument("--no-first-draws", action="store_true",
                    help="skip pm.sample(draws=5, tune=12) at the largest size")
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.memory_child is not None:
        _memory_child(a.memory_child, a.core)
        return
    os.sched_setaffinity(0, {a.core})
    from pymc_trees.comparison.datasets import friedman1

    try:
        __import__("bartz")
        have_bartz = True
    except ImportError:
        have_bartz = False
        print("bartz is not installed (pip install bartz): its column is NaN")
    rows = []
    for n in a.sizes:
        tune, draws = iterations(n, a.quick)
        X, y, _ = friedman1(n, rng=np.random.default_rng(n))
        runs = {name: pymc_runner(X, y, resp, tune, draws) for name, resp in RESPONSES.items()}
        bz = bartz_runner(X, y, draws, burn=tune) if have_bartz else None
        got = {name: [] for name in RESPONSES}
        a_s, b_s = [], []
        for _ in range(a.repeats):
            for name, run in runs.items():
                got[name].append(run())
            if bz is not None:
                run, short, long_ = bz
                a_s.append(run(short))
                b_s.append(run(long_))
        med = {name: float(np.median(v)) for name, v in got.items()}
        bartz_s = ((float(np.median(b_s)) - float(np.median(a_s))) / (bz[2] - bz[1])
                   if bz is not None else float("nan"))
        rows.append((n, med, bartz_s))
        print(f"n={n:,}: " + ", ".join(f"{k} {v:.4f}" for k, v in med.items())
              + f", bartz {bartz_s:.4f} s per iteration", flush=True)
    first = None
    if not a.no_first_draws:
        first = time_to_first_draws(max(a.sizes))
    mem = None
    if not a.no_memory and max(a.sizes) > 20_000:  # differenced against 20,000 rows
        small, big = 20_000, max(a.sizes)
        mem = (peak_bytes(big, a.core) - peak_bytes(small, a.core)) / (big - small)

    print()
    print("The README's model (m = 200, Friedman #1, p = 10), one chain on one pinned core: "
          "seconds per iteration")
    hdr = (f"{'rows':>10} | {'default':>8} | {'constant':>8} | {'linear':>8} | {'bartz':>8} | "
           f"{'default / bartz':>15} | {'linear / constant':>17}")
    print(hdr)
    print("-" * len(hdr))
    for n, med, bz in rows:
        print(f"{n:>10,} | {med['default']:>8.4f} | {med['constant']:>8.4f} | "
              f"{med['linear']:>8.4f} | {bz:>8.4f} | {med['default'] / bz:>15.2f} | "
              f"{med['linear'] / med['constant']:>17.2f}")
    if first is not None:
        print(f"\npm.sample(draws=5, tune=12) of the README's model at {max(a.sizes):,} rows: "
              f"{first:.1f} s wall")
    if mem is not None:
        print(f"peak memory of one chain (VmHWM, {max(a.sizes):,} rows less 20,000): "
              f"{mem:.0f} bytes per training row")


if __name__ == "__main__":
    main()
