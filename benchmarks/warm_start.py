"""What the warm start buys by size (issue 52, item 1): the README's model on Friedman #1 with
the default warm start (``warm_start=None``: up to 10 grow-from-root sweeps, as many as cost
about 5% of the chain, ``pymc_trees.bart.term.plan.warm_sweeps``), with 10 sweeps always (the
default before issue 52) and without it (``cgm_tree={"warm_start": 0}``).

For each n: ``pm.sample(draws=D, tune=T, chains=2, cores=2)`` (200 + 200 by default), then
at 5,000 new rows the RMSE of the posterior mean of f against the noise-free function, the
coverage of the noise-free function by the 90% intervals of f, the effective sample size of
f there (the median over 50 of the rows) and of sigma2, each per second of ``pm.sample``'s
wall time; and the time to the first draws, ``pm.sample(draws=5, tune=12, chains=1,
cores=1)``, the issue's measure of the fixed cost.  One seed per n (``n + --seed``, for the
data and the chains), the same for both settings.

Run: ``python benchmarks/warm_start.py`` (``--n 10000 100000 1000000``, ``--draws``,
``--tune``, ``--seed``; ``--no-first`` skips the time to the first draws; ``--settings``
picks among ``default``, ``10`` and ``off``; ``--tables`` runs the suite's largest tables
instead: Ames, 2,051 training rows of 73 columns, and diamonds, 10,000 training rows with
unordered categories, each against its held-out rows: RMSE of the posterior mean of f
against y, and the coverage of y by 90% predictive intervals).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


SETTINGS = {"default": None, "10": 10, "off": 0}


def _model(X, y, warm_start, Xnum=None, **kw):
    import pymc as pm

    import pymc_trees as pmt

    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=200, response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X if Xnum is None else Xnum, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=f.shape)
        start = time.perf_counter()
        idata = pm.sample(progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"warm_start": warm_start}, **kw)
    return idata, time.perf_counter() - start


def main() -> None:
    import arviz as az

    import pymc_trees as pmt
    from pymc_trees.comparison.datasets import friedman1, friedman1_f

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=200)
    ap.add_argument("--no-first", action="store_true")
    ap.add_argument("--seed", type=int, default=0, help="added to n for the data and the chains")
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--tables", action="store_true")
    a = ap.parse_args()
    if a.tables:
        return tables(a)
    warnings.simplefilter("ignore")
    print("| n | warm start | first draws (s) | run wall (s) | RMSE of f | 90% coverage | "
          "ESS/s of f (median) | ESS/s of sigma2 |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.n:
        seed = n + a.seed
        X, y, _ = friedman1(n, rng=seed)
        rng = np.random.default_rng(seed + 1)
        Xt = rng.uniform(size=(5000, X.shape[1]))
        ft = friedman1_f(Xt)
        cols = rng.choice(5000, 50, replace=False)
        for label in a.settings:
            ws = SETTINGS[label]
            first = np.nan
            if not a.no_first:
                _, first = _model(X, y, ws, draws=5, tune=12, chains=1, cores=1,
                                  random_seed=seed)
            idata, wall = _model(X, y, ws, draws=a.draws, tune=a.tune, chains=2, cores=2,
                                 random_seed=seed)
            pred = pmt.predict(idata, Xt)  # (chain, draw, obs)
            v = np.asarray(pred)
            mean = v.mean(axis=(0, 1))
            lo, hi = np.quantile(v.reshape(-1, v.shape[-1]), [0.05, 0.95], axis=0)
            rmse = float(np.sqrt(np.mean((mean - ft) ** 2)))
            cover = float(np.mean((lo <= ft) & (ft <= hi)))
            ess_f = float(np.median([az.ess(v[:, :, j]) for j in cols]))
            ess_s = float(az.ess(idata.posterior["sigma2"].values))
            print(f"| {n:,} | {label} | {first:.1f} | {wall:.1f} | {rmse:.3f} "
                  f"| {cover:.3f} | {ess_f / wall:.2f} | {ess_s / wall:.2f} |", flush=True)


def tables(a) -> None:
    """The suite's largest tables (``benchmarks/tables.py``'s loaders and split)."""
    import arviz as az

    import pymc_trees as pmt
    import tables as tb

    warnings.simplefilter("ignore")
    print("| table | rows | warm start | run wall (s) | test RMSE | 90% coverage of y | "
          "ESS/s of f (median) |")
    print("|---|---|---|---|---|---|---|")
    probs = [tb.ames(1, False)[0], tb.diamonds(1, False)[0]]
    for prob in probs:
        name, X = list(prob.frames.items())[-1]  # diamonds: unordered categories
        tr, te = prob.splits[0]
        Xtr, Xte, _ = tb.align(X.iloc[tr].reset_index(drop=True),
                               X.iloc[te].reset_index(drop=True))
        Xnum = tb.impute_onehot(Xtr, Xte)[0]
        y, yt = prob.y[tr], prob.y[te]
        cols = np.random.default_rng(a.seed).choice(len(te), 50, replace=False)
        # the kernels for this table's types compiled before any timed run
        _model(Xtr, y, 1, Xnum=Xnum, draws=2, tune=2, chains=1, cores=1, random_seed=a.seed)
        for label in a.settings:
            idata, wall = _model(Xtr, y, SETTINGS[label], Xnum=Xnum, draws=a.draws,
                                 tune=a.tune, chains=2, cores=2, random_seed=a.seed)
            v = np.asarray(pmt.predict(idata, Xte))  # (chain, draw, obs)
            sig = np.sqrt(idata.posterior["sigma2"].values)[..., None]
            yrep = v + sig * np.random.default_rng(a.seed).standard_normal(v.shape)
            lo, hi = np.quantile(yrep.reshape(-1, v.shape[-1]), [0.05, 0.95], axis=0)
            rmse = float(np.sqrt(np.mean((v.mean(axis=(0, 1)) - yt) ** 2)))
            cover = float(np.mean((lo <= yt) & (yt <= hi)))
            ess_f = float(np.median([az.ess(v[:, :, j]) for j in cols]))
            print(f"| {name} | {len(tr):,} | {label} | {wall:.1f} | {rmse:.4f} | {cover:.3f} "
                  f"| {ess_f / wall:.2f} |", flush=True)


if __name__ == "__main__":
    main()
