"""Seconds per sweep of m = 200 trees: pymc_trees against stochtree and bartz, in the same run.

Friedman #1 (p = 10, noise sd 1) at n = 1,000 to 100,000 rows (``--sizes`` for others, up to
1,000,000).  A sweep updates every tree once (one structural move, then the leaf draw) and the
noise variance.  One chain on one core.

* pymc_trees kernel sweep: ``ForestSampler.cgm_sweep`` (GrowPrune, and CGM with all four
  moves) and ``ForestSampler.pg_sweep`` (10 particles, up to ``--pg-max-n`` rows), plus the
  conjugate sigma^2 draw, without PyMC around it;
* pymc_trees in pm.sample: the wall time per iteration of ``pm.sample`` (CGMTreeStep +
  NoiseGibbs, one chain), i.e. including PyMC's per-draw overhead and storing the forests,
  with the warm start off so that its burn-in starts from single leaves like the others (the
  grow-from-root sweeps of the warm start are timed on their own); timed between the draws
  after the burn-in by a ``callback``, without the fixed costs of the call.  The default
  moves are CGM's four up to 50,000 rows and grow/prune above (``docs/benchmarks/mixing.md``); above
  50,000 rows CGM's four moves in pm.sample are timed too, in the same rounds;
* stochtree 0.4.5: ``BARTModel.sample`` with grow/prune MCMC only (num_gfr = 0), 200 trees,
  one thread;
* bartz 0.13 (JAX on the CPU, one thread): ``bartz.Bart`` (grow/prune), 200 trees, one chain,
  each run length compiled off the clock first.

Fixed costs and the burn-in (the same in both runs, so that trees have reached their typical
size) are removed by timing two run lengths and differencing (the medians of ``--repeats``
runs of each length, 3 by default).  Ours in pm.sample is the median of ``--repeats`` runs,
each followed by bartz's two run lengths, so that a slow spell of the machine (single
figures move by 20 to 40% on the 2-core machine) falls on both sides of their ratio.  Ours and
stochtree use
min_leaf 5 (stochtree's min_samples_leaf), up to 100 cutpoints per feature, alpha = 0.95,
beta = 2; bartz uses its defaults (the same tree prior, maximum depth 6, no minimum leaf
size).  Run: ``python benchmarks/sweep.py`` (``--quick`` for fewer sweeps,
``--sizes 1000 10000 100000 1000000`` for a million rows).
"""

from __future__ import annotations

import argparse
import os
import time

# bartz runs on JAX: one CPU thread, as every other column (set before jax is imported)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np

from pymc_trees.comparison.datasets import friedman1
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs
from pymc_trees.bart.steps.tree_step import LARGE_DATA_ROWS

CGM_MOVES = {"grow": .25, "prune": .25, "change": .4, "swap": .1}


def time_kernel(X, y, moves, sweeps, seed=0, particles=0):
    rng = np.random.default_rng(seed)
    offset = 0.5 * (y.max() + y.min())
    sd = (y.max() - y.min()) / (2 * 2 * np.sqrt(200))
    fs = ForestSampler(X, TreePrior(m=200), offset, sd)
    cp = move_cumulative_probs(moves) if not particles else None
    z = y - offset
    sigma2 = np.var(y)

    def one():
        nonlocal sigma2
        if particles:
            fs.pg_sweep(rng, z, np.full(y.size, 1 / sigma2), particles)
        else:
            fs.cgm_sweep(rng, z, np.full(y.size, 1 / sigma2), cp)
        resid = y - fs.values()
        sigma2 = 1 / rng.gamma(1.5 + y.size / 2, 1 / (1.0 + resid @ resid / 2))

    for _ in range(max(20, sweeps // 5)):  # compile and burn in: trees reach typical size
        one()
    t = time.perf_counter()
    for _ in range(sweeps):
        one()
    return (time.perf_counter() - t) / sweeps


def pymc_runner(X, y, sweeps, seed=0, moves=None):
    """A function timing one ``pm.sample`` run: wall seconds per iteration between the draws
    after the burn-in, taken from a callback at every draw, so that the fixed costs of a call
    (building and compiling the model's functions, which vary by a second or more) do not
    enter.  Compiles on a few rows first.  ``moves``: the step's ``move_probs`` (None: its
    default)."""
    import pymc as pm

    import pymc_trees as pmt

    burn = max(20, sweeps // 5)
    stamps = []

    def run(draws, X=X, y=y):
        stamps.clear()
        with pm.Model():
            f = pmt.BARTTree("f", X, Y=y, m=200, response="constant")
            s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
            # the warm start is off so that the burn-in starts from single leaves like every
            # other column; its grow-from-root sweeps are timed on their own (time_gfr)
            pm.sample(draws=draws, tune=burn, chains=1, cores=1, random_seed=seed,
                      progressbar=False, compute_convergence_checks=False,
                      cgm_tree={"warm_start": 0, "move_probs": moves},
                      callback=lambda **kw: stamps.append(time.perf_counter()))
        # the callback runs after every iteration, tuning included: the last draws stamps
        # bound the draws - 1 iterations after the burn-in
        ts = stamps[-draws:]
        return (ts[-1] - ts[0]) / (draws - 1)

    run(2, X[:2000], y[:2000])  # compile (on a few rows: the same types)
    return lambda: run(sweeps + 1)


def time_gfr(X, y, sweeps=3, seed=0):
    """Seconds per grow-from-root sweep (the warm start's), from single-leaf trees."""
    rng = np.random.default_rng(seed)
    offset = 0.5 * (y.max() + y.min())
    sd = (y.max() - y.min()) / (2 * 2 * np.sqrt(200))
    fs = ForestSampler(X, TreePrior(m=200), offset, sd)
    omega = np.full(y.size, 1 / np.var(y))
    fs.gfr_sweep(rng, y - offset, omega)  # compile
    fs.reset()
    t = time.perf_counter()
    for _ in range(sweeps):
        fs.gfr_sweep(rng, y - offset, omega)
    return (time.perf_counter() - t) / sweeps


def time_stochtree(X, y, sweeps, seed=0, repeats=3):
    from stochtree import BARTModel

    burn = max(20, sweeps // 5)

    def run(n_mcmc, X=X, y=y):
        model = BARTModel()
        t = time.perf_counter()
        model.sample(X_train=X, y_train=y, num_gfr=0, num_burnin=burn, num_mcmc=n_mcmc,
                     general_params={"random_seed": seed, "num_threads": 1},
                     mean_forest_params={"num_trees": 200, "min_samples_leaf": 5})
        return time.perf_counter() - t

    run(2, X[:2000], y[:2000])  # load the library (on a few rows)
    short, long_ = 5, sweeps + 5
    return _differenced(run, short, long_, repeats)


def bartz_runner(X, y, sweeps, seed=0, burn=None):
    """``(run, short, long_)``: ``run(n_save)`` times one ``bartz.Bart`` fit of that many
    kept iterations after the same burn-in (``burn``, by default ``max(20, sweeps // 5)``);
    both lengths are compiled off the clock here."""
    import bartz

    burn = max(20, sweeps // 5) if burn is None else int(burn)

    def run(n_save):
        t = time.perf_counter()
        fit = bartz.Bart(X.T, y.astype(np.float32), num_trees=200, n_burn=burn, n_save=n_save,
                         num_chains=None, seed=seed, printevery=None)
        np.asarray(fit.get_error_sdev())  # wait for the computation
        return time.perf_counter() - t

    short, long_ = 5, sweeps + 5
    run(short)  # jax compiles for each run length: once off the clock
    run(long_)
    return run, short, long_


def time_pymc_and_bartz(X, y, sweeps, repeats, with_bartz=True):
    """Seconds per iteration of ours in ``pm.sample`` (its default moves, and above
    ``LARGE_DATA_ROWS`` rows CGM's four moves too; NaN otherwise) and of bartz, interleaved:
    each of ``repeats`` rounds runs ``pm.sample`` once (each) and bartz's two run lengths once,
    so that a slow spell of the machine falls on all columns rather than on one; the medians
    of the rounds (bartz's differenced as in :func:`_differenced`)."""
    ours = pymc_runner(X, y, sweeps)
    ours_cgm = (pymc_runner(X, y, sweeps, moves=CGM_MOVES) if y.size > LARGE_DATA_ROWS
                else None)
    bz = bartz_runner(X, y, sweeps) if with_bartz else None
    mine, mine_cgm, a, b = [], [], [], []
    for _ in range(repeats):
        mine.append(ours())
        if ours_cgm is not None:
            mine_cgm.append(ours_cgm())
        if bz is not None:
            run, short, long_ = bz
            a.append(run(short))
            b.append(run(long_))
    cgm = float(np.median(mine_cgm)) if mine_cgm else float("nan")
    if bz is None:
        return float(np.median(mine)), cgm, float("nan")
    return (float(np.median(mine)), cgm,
            (float(np.median(b)) - float(np.median(a))) / (bz[2] - bz[1]))


def _differenced(run, short, long_, repeats):
    """Seconds per sweep from the medians of ``repeats`` timed runs of each length, the two
    lengths alternating (one difference of two single runs moved bartz's figure by a factor
    of 2.3 between two runs of this script at 100,000 rows)."""
    a, b = [], []
    for _ in range(repeats):
        a.append(run(short))
        b.append(run(long_))
    return (float(np.median(b)) - float(np.median(a))) / (long_ - short)


def sweeps_for(n, quick):
    if n <= 2000:
        return 40 if quick else 200
    if n <= 20000:
        return 20 if quick else 100
    if n <= 200000:
        return 10 if quick else 30
    return 5 if quick else 10


def main(argv=None):
    ap = argparse.ArgumentParser(description="seconds per sweep of 200 trees")
    ap.add_argument("--quick", action="store_true", help="fewer sweeps")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs of pm.sample, and of each length for stochtree and "
                         "bartz (medians; ours and bartz's interleaved)")
    ap.add_argument("--pg-max-n", type=int, default=100_000,
                    help="PG(10) is timed up to this n only (a sweep costs some 20 CGM sweeps)")
    a = ap.parse_args(argv)
    have = {}
    for name in ("stochtree", "bartz"):
        try:
            __import__(name)
            have[name] = True
        except ImportError:
            have[name] = False
            print(f"{name} is not installed (pip install {name}); its column is skipped")

    rows = []
    for n in a.sizes:
        sweeps = sweeps_for(n, a.quick)
        X, y, _ = friedman1(n, rng=np.random.default_rng(n))
        gp = time_kernel(X, y, {"grow": 0.5, "prune": 0.5}, sweeps)
        cgm = time_kernel(X, y, CGM_MOVES, sweeps)
        pg = (time_kernel(X, y, {}, max(5, sweeps // 4), particles=10) if n <= a.pg_max_n
              else float("nan"))
        in_pymc, cgm_pymc, bz = time_pymc_and_bartz(X, y, sweeps, a.repeats, have["bartz"])
        gfr = time_gfr(X, y)
        st = (time_stochtree(X, y, sweeps, repeats=a.repeats) if have["stochtree"]
              else float("nan"))
        rows.append((n, gp, cgm, pg, in_pymc, cgm_pymc, st, bz, gfr))
        print(f"n={n}: " + " ".join(f"{v:.5f}" for v in rows[-1][1:]), flush=True)

    print()
    print("seconds per sweep of m = 200 trees (Friedman #1, p = 10, one core)")
    hdr = (f"{'n':>9} | {'ours GP':>8} | {'ours CGM':>8} | {'ours PG(10)':>11} | "
           f"{'ours default in pm.sample':>25} | {'CGM in pm.sample':>16} | "
           f"{'stochtree GP':>12} | {'bartz GP':>8} | {'default / stochtree':>19} | "
           f"{'default / bartz':>15} | {'CGM in pm.sample / bartz':>24} | "
           f"{'GP / bartz GP':>13}")
    print(hdr)
    print("-" * len(hdr))
    for n, gp, cgm, pg, in_pymc, cgm_pymc, st, bz, _ in rows:
        if n <= LARGE_DATA_ROWS:
            cgm_pymc = in_pymc  # the default moves are CGM's
        print(f"{n:>9,} | {gp:>8.4f} | {cgm:>8.4f} | {pg:>11.4f} | {in_pymc:>25.4f} | "
              f"{cgm_pymc:>16.4f} | {st:>12.4f} | {bz:>8.4f} | {in_pymc / st:>19.2f} | "
              f"{in_pymc / bz:>15.2f} | {cgm_pymc / bz:>24.2f} | {gp / bz:>13.2f}")
    print(f"\ndefault = CGMTreeStep + NoiseGibbs as pm.sample assigns them: moves "
          f"grow/prune/change/swap 0.25/0.25/0.4/0.1 up to {LARGE_DATA_ROWS:,} rows, grow/prune "
          f"0.5/0.5 above (docs/benchmarks/mixing.md); 'CGM in pm.sample': the four moves at every n. "
          f"Ratios below 1 mean ours is faster.")
    print("The warm start (10 grow-from-root sweeps at the start of every chain's tuning) costs, "
          "per sweep: " + ", ".join(f"{r[-1]:.3f} s at n = {r[0]:,}" for r in rows) + ".")


if __name__ == "__main__":
    main()
