"""Causal effects: a BCF-style model written in PyMC against stochtree's BCF.

The simulation of Hahn, Murray and Carvalho (2020, section 6): ``x1, x2, x3 ~ Normal(0, 1)``,
``x4 ~ Bernoulli(0.5)``, ``x5`` uniform on the levels {1, 2, 3} with ``g(1, 2, 3) = (2, -1,
-4)``; the nonlinear prognostic function ``mu(x) = -6 + g(x5) + 6 |x3 - 1|``, the heterogeneous
effect ``tau(x) = 1 + 2 x2 x4``, the targeted selection ``pi(x) = 0.8 Phi(3 mu(x) / s - 0.5
x1) + 0.05 + u / 10`` (s the sample sd of mu, u ~ Uniform(0, 1)), ``z ~ Bernoulli(pi(x))`` and
``y = mu(x) + tau(x) z + Normal(0, 1)``.

Both learners get the same estimated propensity (a probit BART term fitted in PyMC, the
posterior mean of ``Phi(g)``).  Ours is the model of ``docs/causal.md``::

    mu = BARTTree("mu", [X, pihat], Y=y)                    # prognostic, propensity included
    tau = tau0 + BARTTree("tau", X, m=50, alpha=0.25, beta=3, leaf_sd=s)   # effect
    y ~ Normal(mu + z * tau, sigma)

with ``tau0 ~ Normal(0, sd(y))`` (the average level of the effect, moved against the effect
trees by the exact level shift) and ``s ~ HalfNormal(sd(y) / sqrt(50))``.  stochtree's
``BCFModel`` runs with its defaults except the number of draws (10 grow-from-root sweeps,
then ``--draws``).  Printed per seed and as medians: the error of the average effect over the
sample (posterior mean against the truth's mean of tau(x_i)), the RMSE of the conditional
effects at the rows, the 95% interval coverage of the average effect, and wall time.

Run: ``python benchmarks/causal_effects.py`` (``--seeds 1 2 3 4 5``, ``--n 500``,
``--draws 1000``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import norm


def simulate(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x1, x2, x3 = rng.normal(size=(3, n))
    x4 = rng.integers(0, 2, n).astype(float)
    x5 = rng.integers(1, 4, n)
    g = np.array([0.0, 2.0, -1.0, -4.0])[x5]
    mu = -6.0 + g + 6.0 * np.abs(x3 - 1.0)
    tau = 1.0 + 2.0 * x2 * x4
    pi = 0.8 * norm.cdf(3.0 * mu / mu.std() - 0.5 * x1) + 0.05 + rng.uniform(size=n) / 10
    z = (rng.uniform(size=n) < pi).astype(float)
    y = mu + tau * z + rng.normal(size=n)
    X = np.column_stack([x1, x2, x3, x4, x5.astype(float)])
    return X, z, y, tau


def propensity(X, z, seed: int) -> np.ndarray:
    """Posterior mean of the probability of treatment: probit BART, 50 trees."""
    import pymc as pm

    import pymc_trees as pmt

    with pm.Model():
        g = pmt.BARTTree("g", X, Y=z, m=50, link="probit")
        pm.Bernoulli("z", p=pm.math.invprobit(g), observed=z)
        idata = pm.sample(tune=500, draws=500, chains=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    return norm.cdf(idata.posterior["g"].values).mean(axis=(0, 1))


def ours(X, z, y, pihat, seed: int, draws: int) -> np.ndarray:
    """Draws of tau(x_i), shape (draws_total, n)."""
    import pymc as pm

    import pymc_trees as pmt

    sd_y = float(np.std(y))
    with pm.Model():
        mu = pmt.BARTTree("mu", np.column_stack([X, pihat]), Y=y, m=200)
        tau0 = pm.Normal("tau0", 0.0, sd_y)
        s = pm.HalfNormal("tau_leaf_sd", sd_y / np.sqrt(50))
        tau_trees = pmt.BARTTree("tau_trees", X, m=50, alpha=0.25, beta=3.0, leaf_sd=s)
        sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu + z * (tau0 + tau_trees), pm.math.sqrt(sigma2), observed=y)
        idata = pm.sample(tune=draws, draws=draws, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    post = idata.posterior
    t = post["tau0"].values[..., None] + post["tau_trees"].values
    return t.reshape(-1, t.shape[-1])


def bcf(X, z, y, pihat, seed: int, draws: int) -> np.ndarray:
    from stochtree import BCFModel

    model = BCFModel()
    model.sample(X_train=X, Z_train=z, y_train=y, propensity_train=pihat, num_gfr=10,
                 num_burnin=0, num_mcmc=draws, general_params={"random_seed": seed})
    return np.asarray(model.tau_hat_train).reshape(X.shape[0], -1).T


def score(draws: np.ndarray, tau: np.ndarray) -> tuple[float, float, bool]:
    ate_draws = draws.mean(axis=1)
    lo, hi = np.quantile(ate_draws, [0.025, 0.975])
    ate_err = abs(float(ate_draws.mean()) - float(tau.mean()))
    cate_rmse = float(np.sqrt(np.mean((draws.mean(axis=0) - tau) ** 2)))
    return ate_err, cate_rmse, bool(lo <= tau.mean() <= hi)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    a = ap.parse_args(argv)
    rows = []
    for seed in a.seeds:
        X, z, y, tau = simulate(seed, a.n)
        pihat = propensity(X, z, seed)
        for name, fit in (("ours", ours), ("stochtree BCF", bcf)):
            t0 = time.perf_counter()
            draws = fit(X, z, y, pihat, seed, a.draws)
            wall = time.perf_counter() - t0
            rows.append((seed, name, *score(draws, tau), wall))
            print(rows[-1], flush=True)
    print(f"\nn = {a.n}, {a.draws} draws after tuning; average effect (ATE) over the sample")
    print(f"{'seed':>4} | {'learner':<14} | {'ATE error':>9} | {'CATE RMSE':>9} | "
          f"{'ATE in 95%':>10} | {'wall (s)':>8}")
    for seed, name, e, r, c, w in rows:
        print(f"{seed:>4} | {name:<14} | {e:>9.3f} | {r:>9.3f} | {str(c):>10} | {w:>8.1f}")
    for name in ("ours", "stochtree BCF"):
        sel = [r for r in rows if r[1] == name]
        print(f"median {name:<14}: ATE error {np.median([r[2] for r in sel]):.3f}, CATE RMSE "
              f"{np.median([r[3] for r in sel]):.3f}, ATE covered {sum(r[4] for r in sel)} of "
              f"{len(sel)}, wall {np.median([r[5] for r in sel]):.1f} s")


if __name__ == "__main__":
    main()
