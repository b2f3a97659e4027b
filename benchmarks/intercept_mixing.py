"""How well an intercept mixes beside random intercepts and two tree terms.

``y = alpha + u[group] + f1(x) + z * f2(x) + noise`` with ``u ~ Normal(0, su)`` over 8 groups,
two terms of 30 trees (the first calibrated on y, the second a varying coefficient with
``leaf_sd=0.1``), ``sigma ~ HalfNormal(1)``, n = 300 rows, ``pm.sample`` with 2 chains x
(1,000 + 1,000) (one core by default).  Printed per data set (``--seeds``): the bulk ESS and
R-hat of alpha, and the same for the model with linear terms in place of the trees
(``X @ b + z * (X @ c)``, NUTS alone), the reference a tree model should mix as well as.

Run: ``python benchmarks/intercept_mixing.py`` (``--seeds 1 2 3``, ``--cores``).
"""

from __future__ import annotations

import argparse

import numpy as np


def data(seed: int):
    rng = np.random.default_rng(seed)
    n, G = 300, 8
    X = rng.uniform(size=(n, 3))
    g = rng.integers(0, G, n)
    z = rng.normal(size=n)
    u = rng.normal(0, 0.7, G)
    y = 1.5 + u[g] + np.sin(3 * X[:, 0]) + z * (X[:, 1] - 0.5) + 0.5 * rng.normal(size=n)
    return X, g, z, y, G


def fit(seed: int, trees: bool, cores: int):
    import arviz as az
    import pymc as pm

    import pymc_trees as pmt

    X, g, z, y, G = data(seed)
    with pm.Model():
        alpha = pm.Normal("alpha", 0, 5)
        su = pm.HalfNormal("su", 1)
        u = pm.Normal("u", 0, su, shape=G)
        if trees:
            f1 = pmt.BARTTree("f1", X, Y=y, m=30)
            f2 = pmt.BARTTree("f2", X, m=30, leaf_sd=0.1)
            rest = f1 + z * f2
        else:
            b = pm.Normal("b", 0, 2, shape=3)
            c = pm.Normal("c", 0, 2, shape=3)
            rest = X @ b + z * (X @ c)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", alpha + u[g] + rest, sigma, observed=y)
        idata = pm.sample(tune=1000, draws=1000, chains=2, cores=cores, random_seed=seed,
                          progressbar=False)
    s = az.summary(idata, var_names=["alpha"])
    return float(s.loc["alpha", "ess_bulk"]), float(s.loc["alpha", "r_hat"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--cores", type=int, default=1)
    a = ap.parse_args(argv)
    rows = [(seed, *fit(seed, True, a.cores), *fit(seed, False, a.cores)) for seed in a.seeds]
    print("\nalpha: bulk ESS of 2,000 draws and R-hat")
    print(f"{'seed':>5} | {'trees: ESS':>10} | {'R-hat':>6} | {'linear terms: ESS':>17} | "
          f"{'R-hat':>6}")
    for seed, e1, r1, e2, r2 in rows:
        print(f"{seed:>5} | {e1:>10.0f} | {r1:>6.3f} | {e2:>17.0f} | {r2:>6.3f}")


if __name__ == "__main__":
    main()
