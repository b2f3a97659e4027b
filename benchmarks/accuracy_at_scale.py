"""Error of f against time at scale: the README's model, constant leaves and bartz.

The leaf form of the default is chosen by time to a given accuracy, not by time per
iteration alone: at 100,000 rows a linear leaf's iteration costs more than a constant leaf's,
but constant leaves stop improving at a higher error.  For each size (``--sizes``) and run
length (``--iters``: that many tuning and that many kept iterations), on Friedman #1
(p = 10, noise sd 1) with 5,000 test rows, one chain on one pinned core (``--core``):

* **default**: the README's model as written (``BARTTree("f", X_data, Y=y, m=200)``,
  ``InverseGamma`` noise from ``pmt.noise_prior``, a Normal likelihood), ``pm.sample`` with
  every other default (warm start included);
* **constant**: the same with ``response="constant"``;
* **bartz**: ``bartz.Bart`` with 200 trees, ``n_burn`` and ``n_save`` the run length, one
  chain, JAX on one CPU thread (its compilation off the clock: the same fit runs once,
  untimed, before the timed one).

Printed per row: the wall time of the fit (``pm.sample`` or ``bartz.Bart``, model building
and prediction excluded) and the RMSE of the posterior mean of f at the test rows against
the true function.  Run: ``python benchmarks/accuracy_at_scale.py`` (defaults: 100,000 rows,
run lengths 60 and 300; ``--seeds`` to average over data sets).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np


def fit_ours(X, y, Xt, response, iters, seed):
    import pymc as pm

    import pymc_trees as pmt
    from default_at_scale import readme_model

    with readme_model(X, y, response):
        t = time.perf_counter()
        idata = pm.sample(draws=iters, tune=iters, chains=1, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t
    return wall, pmt.predict(idata, Xt, var_name="f").mean(("chain", "draw")).values


def fit_bartz(X, y, Xt, iters, seed):
    import bartz

    def run():
        t = time.perf_counter()
        fit = bartz.Bart(X.T, y.astype(np.float32), num_trees=200, n_burn=iters,
                         n_save=iters, num_chains=None, seed=seed, printevery=None)
        np.asarray(fit.get_error_sdev())
        return time.perf_counter() - t, fit

    run()  # JAX compiles for this size and run length: off the clock
    wall, fit = run()
    return wall, np.asarray(fit.predict(Xt.T, kind="mean"), dtype=np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--iters", type=int, nargs="+", default=[60, 300])
    ap.add_argument("--seeds", type=int, nargs="+", default=[11])
    ap.add_argument("--learners", nargs="+", default=["default", "constant", "bartz"])
    ap.add_argument("--core", type=int, default=0)
    a = ap.parse_args(argv)
    os.sched_setaffinity(0, {a.core})
    from pymc_trees.comparison.datasets import friedman1

    rows = []
    for n in a.sizes:
        for it in a.iters:
            for learner in a.learners:
                walls, errs = [], []
                for seed in a.seeds:
                    X, y, _ = friedman1(n, rng=np.random.default_rng(seed))
                    Xt, _, ft = friedman1(5000, rng=np.random.default_rng(seed + 1000))
                    if learner == "bartz":
                        wall, pred = fit_bartz(X, y, Xt, it, seed)
                    else:
                        wall, pred = fit_ours(X, y, Xt, None if learner == "default"
                                              else learner, it, seed)
                    walls.append(wall)
                    errs.append(float(np.sqrt(np.mean((pred - ft) ** 2))))
                rows.append((n, it, learner, float(np.mean(walls)), float(np.mean(errs))))
                print(f"n={n:,} iterations={it}+{it} {learner}: wall {rows[-1][3]:.1f} s, "
                      f"RMSE of f {rows[-1][4]:.4f}", flush=True)
    print()
    print(f"RMSE of f at 5,000 test rows (Friedman #1, seeds {a.seeds}) and wall seconds, one "
          f"chain on one core")
    hdr = f"{'rows':>10} | {'tune + draws':>12} | {'learner':>8} | {'wall s':>7} | {'RMSE f':>7}"
    print(hdr)
    print("-" * len(hdr))
    for n, it, learner, wall, err in rows:
        print(f"{n:>10,} | {f'{it} + {it}':>12} | {learner:>8} | {wall:>7.1f} | {err:>7.4f}")


if __name__ == "__main__":
    main()
