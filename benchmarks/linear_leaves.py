"""Linear leaves against constant leaves, beside pymc-bart's ``response="linear"`` (issue 27,
must-have 1).

Two simulations, X ~ Uniform(0, 1)^10, noise sd 1, n training rows, 1,000 test rows (the next
seed):

* ``piecewise``: a piecewise-linear f of four columns,
  ``f = 6 x0 + 1{x1 > 0.5} (8 x2 - 4) + 6 |x3 - 0.4|`` (slopes in every region, breaks at
  x1 = 0.5 and x3 = 0.4);
* ``friedman``: Friedman #1.

Learners, 2 chains x (tune + draws) of ``pm.sample``, one core, the README's model
(``y ~ Normal(f, sigma)``, ``sigma ~ HalfNormal``):

* ours: ``BARTTree("f", X, y)`` with the defaults (m = 200, learned leaf scale, DART inside
  the tree step), ``response="constant"``, ``"linear"`` and ``"mix"``;
* pymc-bart 0.13: ``pmb.BART("f", X, y)`` with its defaults (m = 50),
  ``response="constant"`` and ``"linear"`` (its Rust backend, bartrs, knows no ``"mix"``
  and stops with "MotrStrategy not yet implemented" on ``"motr"``); test rows by
  ``pm.set_data`` and
  ``sample_posterior_predictive(sample_vars=["f"])``, which pymc-bart answers from its
  stored trees.

With ``--family poisson`` the same f makes counts, ``y ~ Poisson(exp(f / 5))``, and the
model is ``pm.Poisson(mu=exp(f))`` (ours: ``BARTTree(X, y, link="log")``, the general tree
step; pymc-bart: ``BART(X, log(y + 1))`` as its examples calibrate); the RMSE is then of
``f / 5``, the log rate.

Per run: RMSE of the posterior mean of f against the true f at the test rows, and the wall
time of sampling.  Run: ``python benchmarks/linear_leaves.py --n 1000 --seeds 7071 8181``
(about 15 minutes; ``--quick`` for 200 + 200 iterations).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1_f

import cluster  # this folder is on the path: --dask-workers


def piecewise_f(X: np.ndarray) -> np.ndarray:
    return 6 * X[:, 0] + (X[:, 1] > 0.5) * (8 * X[:, 2] - 4) + 6 * np.abs(X[:, 3] - 0.4)


SIMS = {"piecewise": piecewise_f, "friedman": friedman1_f}


FAMILY = {"name": "normal"}  # --family


def simulate(sim: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 10))
    f = SIMS[sim](X)
    if FAMILY["name"] == "poisson":
        return X, rng.poisson(np.exp(f / 5)), f / 5
    return X, f + rng.normal(size=n), f


def _likelihood(f, y):
    if FAMILY["name"] == "poisson":
        pm.Poisson("y", mu=pm.math.exp(f), observed=y, shape=f.shape)
    else:
        pm.Normal("y", mu=f, sigma=pm.HalfNormal("sigma", 2 * np.std(y)), observed=y,
                  shape=f.shape)


def ours(X, y, Xt, response, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, response=response,
                         link="log" if FAMILY["name"] == "poisson" else None)
        _likelihood(f, y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    return pmt.predict(idata, Xt).mean(("chain", "draw")).values, secs


def pymc_bart(X, y, Xt, response, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        f = pmb.BART("f", Xd, np.log(y + 1) if FAMILY["name"] == "poisson" else y,
                     response=response)
        _likelihood(f, y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["f"], sample_vars=["f"],
                                            random_seed=seed, progressbar=False)
    return pp.posterior_predictive["f"].values.reshape(-1, len(Xt)).mean(0), secs


def fit(sim, n, seed, name, tune, draws, family="normal"):
    """One learner on one simulated data set: (RMSE of f at the test rows, wall)."""
    FAMILY["name"] = family
    X, y, _ = simulate(sim, n, seed)
    Xt, _, ft = simulate(sim, 1000, seed + 1)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred, secs = LEARNERS[name](X, y, Xt, tune, draws, seed)
    return float(np.sqrt(np.mean((pred - ft) ** 2))), secs


LEARNERS = {
    "ours, constant": lambda *a: ours(*a[:3], "constant", *a[3:]),
    "ours, linear": lambda *a: ours(*a[:3], "linear", *a[3:]),
    "ours, mix": lambda *a: ours(*a[:3], "mix", *a[3:]),
    "pymc-bart 0.13, constant": lambda *a: pymc_bart(*a[:3], "constant", *a[3:]),
    "pymc-bart 0.13, linear": lambda *a: pymc_bart(*a[:3], "linear", *a[3:]),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[7071, 8181])
    ap.add_argument("--sims", nargs="+", default=list(SIMS), choices=list(SIMS))
    ap.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--family", choices=["normal", "poisson"], default="normal")
    cluster.add_option(ap)
    a = ap.parse_args(argv)
    tune = draws = 200 if a.quick else 1000
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"2 chains x ({tune} + {draws}) iterations, one core; RMSE of the posterior mean of "
          "f at 1,000 test rows; wall of sampling")
    print(f"{'sim':>10} {'n':>6} {'seed':>6}  {'learner':<26} {'RMSE f':>8} {'wall s':>8}")
    from joblib import Parallel, delayed

    # every fit is a joblib job (serial by default; --dask-workers: a local Dask cluster)
    jobs = [(sim, n, seed, name) for sim in a.sims for n in a.n for seed in a.seeds
            for name in a.learners]
    results = {}
    with cluster.backend(a.dask_workers):
        outs = Parallel(return_as="generator")(
            delayed(fit)(sim, n, seed, name, tune, draws, a.family)
            for sim, n, seed, name in jobs)
        for (sim, n, seed, name), (rmse, secs) in zip(jobs, outs):
            results[(sim, n, seed, name)] = rmse
            print(f"{sim:>10} {n:>6} {seed:>6}  {name:<26} {rmse:8.3f} {secs:8.1f}",
                  flush=True)
    print("\nratio linear / constant (ours; pymc-bart) per run:")
    for sim in a.sims:
        for n in a.n:
            for seed in a.seeds:
                parts = []
                for who in ("ours", "pymc-bart 0.13"):
                    lin = results.get((sim, n, seed, f"{who}, linear"))
                    con = results.get((sim, n, seed, f"{who}, constant"))
                    if lin is not None and con is not None:
                        parts.append(f"{who}: {lin / con:.3f}")
                print(f"{sim:>10} {n:>6} {seed:>6}  " + "; ".join(parts))


if __name__ == "__main__":
    main()
