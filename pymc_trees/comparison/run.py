"""BART in a PyMC model against the boosting learner on one table: held-out accuracy, the
quality of each model's predictive distribution, and wall time.

:func:`compare` is also the command line ``python -m pymc_trees compare DATA --target COL``
(see :mod:`pymc_trees.__main__`).  What each metric is and how each model's predictive
distribution is formed is written down in ``docs/compare.md``; in short:

* **BART**: ``f = pmt.BARTTree("f", X, Y=y, m=m, min_leaf=min_leaf, leaf_sd=leaf_sd)`` in a
  PyMC model with the likelihood of the task: regression ``y ~ Normal(f, sigma)`` with
  ``sigma2 ~ InverseGamma(*pmt.noise_prior(X, y))``; binary classification
  ``y ~ Bernoulli(logit_p=f)`` (``link="logit"``); counts ``y ~ Poisson(exp(f))``
  (``link="log"``).  Its predictive distribution at a held-out row is
  the posterior predictive: one draw of y per posterior draw of (f, sigma).
* **boosting**: :class:`~pymc_trees.boosting.BoostedTreesRegressor` or
  ``...Classifier`` tuned by early stopping on a random part of the training rows.  Point
  prediction: squared error (regression), logistic (classification), Poisson (counts).  Its
  predictive distribution is a plug-in model: Normal with the validation residual sd,
  Bernoulli with the predicted probability, Poisson with the predicted mean.  Its intervals
  come from a second model with quantile objectives (regression and counts).

The metrics are computed on held-out rows only (one random split or K folds; with K folds
every row is held out once and the metrics are pooled over all rows).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, gammaln, logsumexp, ndtri

from pymc_trees.comparison.datasets import DATASETS, TASKS, load_data
from pymc_trees.comparison.metrics import (LEVEL, LEVELS, central_levels, crps_bernoulli,
                                           crps_normal, crps_poisson, crps_sample,
                                           interval_coverage, interval_ends, pooled_metrics,
                                           quantile_key, reliability_bins)
from pymc_trees.comparison.report import write_report
from pymc_trees.comparison.result import MODELS, ComparisonResult

__all__ = [
    "compare", "ComparisonResult", "DATASETS", "TASKS", "LEVELS", "load_data",
    "crps_sample", "crps_normal", "crps_poisson", "crps_bernoulli", "interval_coverage",
    "reliability_bins",
]

#: the boosting learner's settings (those of benchmarks/tables.py): learning rate, at most this
#: many rounds, early stopping after PATIENCE rounds without gain on VALIDATION of the
#: training rows
ETA, ROUNDS, PATIENCE, VALIDATION = 0.05, 1000, 50, 0.2


# --- the two learners ------------------------------------------------------------------------


def _categorical_columns(df: pd.DataFrame) -> list:
    return [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]


def _align(train: pd.DataFrame, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Categorical columns restricted to the levels present in the training rows; test
    values of other levels become missing (BART refuses unseen levels).  Returns (train,
    test, number of test cells made missing)."""
    train, test = train.copy(), test.copy()
    lost = 0
    for c in _categorical_columns(train):
        dt = train[c].dtype
        present = set(train[c].dropna().unique())
        new = pd.CategoricalDtype([v for v in dt.categories if v in present],
                                  ordered=dt.ordered)
        v = test[c].astype(object)
        lost += int((v.notna() & ~v.isin(new.categories)).sum())
        train[c] = pd.Categorical(train[c].astype(object), dtype=new)
        test[c] = pd.Categorical(v.where(v.isin(new.categories)), dtype=new)
    return train, test, lost


def _numeric_matrix(train: pd.DataFrame) -> np.ndarray:
    """Mean-imputed one-hot matrix of the training rows (numbers for ``noise_prior``)."""
    cats = _categorical_columns(train)
    num = [c for c in train.columns if c not in cats]
    df = train.copy()
    df[num] = df[num].fillna(df[num].mean()).fillna(0.0)
    return pd.get_dummies(df, columns=cats, dtype=float).to_numpy(float)


def _fit_bart(task, X, y, Xt, *, m, tune, draws, chains, seed, progressbar, min_leaf=5,
              leaf_sd=None) -> dict:
    """BART in a PyMC model; returns draws at the held-out rows: ``f`` (S, n_test) and
    ``sigma`` (S,) for regression."""
    import pymc as pm

    from pymc_trees.bart import BARTTree, noise_prior
    from pymc_trees.results import predict

    tree = dict(m=m, min_leaf=min_leaf, leaf_sd=leaf_sd)
    with pm.Model():
        if task == "regression":
            f = BARTTree("f", X, Y=y, **tree)
            sigma2 = pm.InverseGamma("sigma2", *noise_prior(_numeric_matrix(X), y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y)
        elif task == "classification":
            f = BARTTree("f", X, Y=y, link="logit", **tree)
            pm.Bernoulli("y", logit_p=f, observed=y)
        else:
            f = BARTTree("f", X, Y=y, link="log", **tree)
            pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                          progressbar=progressbar, compute_convergence_checks=False)
    out = {"f": predict(idata, Xt, var_name="f").values.reshape(-1, len(Xt)),
           "idata": idata}
    if task == "regression":
        out["sigma"] = np.sqrt(idata.posterior["sigma2"].values.reshape(-1))
    return out


def _bart_rows(task, fit, y, rng, levels) -> dict:
    """Per held-out row: point, log predictive density, CRPS and central intervals of BART's
    posterior predictive distribution."""
    f = fit["f"]
    S = f.shape[0]
    q = central_levels(levels)
    if task == "regression":
        sigma = fit["sigma"][:, None]
        logp = -0.5 * ((y[None, :] - f) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi)
        yrep = f + sigma * rng.standard_normal(f.shape)
        point = f.mean(axis=0)
        quant = np.quantile(yrep, q, axis=0)
    elif task == "count":
        mu = np.exp(f)
        logp = y[None, :] * f - mu - gammaln(y[None, :] + 1.0)
        yrep = rng.poisson(mu)
        point = mu.mean(axis=0)
        quant = np.quantile(yrep, q, axis=0, method="inverted_cdf")
    else:
        p = expit(f)
        pbar = p.mean(axis=0)
        lpd = np.log(np.where(y == 1, pbar, 1.0 - pbar))
        lo, hi = np.quantile(p, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        return {"point": pbar, "lpd": lpd, "crps": crps_bernoulli(pbar, y),
                "loss": -lpd, "p_lo": lo, "p_hi": hi}
    return {"point": point, "lpd": logsumexp(logp, axis=0) - np.log(S),
            "crps": crps_sample(yrep, y), "loss": (point - y) ** 2,
            "quantiles": dict(zip(map(quantile_key, q), quant))}


def _boosting_model(task, objective=None, quantiles=None, seed=0):
    from pymc_trees.boosting.estimators import BoostedTreesClassifier, BoostedTreesRegressor

    common = dict(n_estimators=ROUNDS, learning_rate=ETA, early_stopping_rounds=PATIENCE,
                  n_jobs=1, random_state=seed)
    if task == "classification":
        return BoostedTreesClassifier(**common)
    if quantiles is not None:
        return BoostedTreesRegressor(objective="reg:quantileerror",
                                     quantile_alpha=list(quantiles), **common)
    return BoostedTreesRegressor(objective=objective, **common)


def _fit_boosting(task, X, y, Xt, *, seed, levels) -> dict:
    """Point model, plug-in predictive parameters and (regression, counts) a quantile model,
    each fit on (1 - VALIDATION) of the training rows with early stopping on the rest."""
    rng = np.random.default_rng(seed)
    n = len(y)
    val = np.zeros(n, bool)
    val[rng.permutation(n)[:max(1, int(round(VALIDATION * n)))]] = True
    fit_rows, val_rows = np.flatnonzero(~val), np.flatnonzero(val)
    Xf, Xv = X.iloc[fit_rows], X.iloc[val_rows]
    out: dict[str, Any] = {}
    if task == "classification":
        model = _boosting_model(task, seed=seed).fit(Xf, y[~val], eval_set=[(Xv, y[val])])
        out["p"] = model.predict_proba(Xt)[:, 1]
    else:
        objective = "reg:squarederror" if task == "regression" else "count:poisson"
        model = _boosting_model(task, objective, seed=seed).fit(Xf, y[~val],
                                                                eval_set=[(Xv, y[val])])
        out["mu"] = model.predict(Xt)
        if task == "regression":
            # the plug-in sd: residual sd at the validation rows (the fit never saw them)
            out["sigma"] = float(np.sqrt(np.mean((y[val] - model.predict(Xv)) ** 2)))
        q = central_levels(levels)
        qmodel = _boosting_model(task, quantiles=q, seed=seed).fit(
            Xf, y[~val], eval_set=[(Xv, y[val])])
        # one forest per level; sorted per row, so that the quantiles never cross
        out["quantiles"] = dict(zip(map(quantile_key, q), np.sort(qmodel.predict(Xt), axis=1).T))
        out["quantile_rounds"] = int(qmodel.best_iteration) + 1
    out["rounds"] = int(model.best_iteration) + 1
    out["model"] = model
    return out


def _boosting_rows(task, fit, y, levels) -> dict:
    """Per held-out row: point, log density, CRPS of the plug-in distribution; intervals from
    the quantile model and, for calibration, from the plug-in distribution too."""
    if task == "classification":
        p = np.clip(fit["p"], 1e-15, 1 - 1e-15)
        lpd = np.log(np.where(y == 1, p, 1.0 - p))
        return {"point": fit["p"], "lpd": lpd, "crps": crps_bernoulli(fit["p"], y),
                "loss": -lpd}
    mu = fit["mu"]
    q = central_levels(levels)
    if task == "regression":
        s = max(fit["sigma"], 1e-12)
        lpd = -0.5 * ((y - mu) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)
        crps = crps_normal(mu, s, y)
        plug = {quantile_key(k): mu + s * ndtri(k) for k in q}
    else:
        from scipy.stats import poisson

        mu = np.maximum(mu, 1e-12)
        lpd = y * np.log(mu) - mu - gammaln(y + 1.0)
        crps = crps_poisson(mu, y)
        plug = {quantile_key(k): poisson.ppf(k, mu) for k in q}
    return {"point": mu, "lpd": lpd, "crps": crps, "loss": (mu - y) ** 2,
            "quantiles": fit["quantiles"], "plugin_quantiles": plug}


# --- the comparison ---------------------------------------------------------------------------


def _splits(n: int, folds: int | None, test_size: float | None,
            rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    perm = rng.permutation(n)
    if folds is not None:
        return [(np.sort(np.setdiff1d(perm, part)), np.sort(part))
                for part in np.array_split(perm, folds)]
    n_test = int(round(test_size * n))
    return [(np.sort(perm[n_test:]), np.sort(perm[:n_test]))]


def _concat(parts: list[dict]) -> dict:
    out = {}
    for key in parts[0]:
        if isinstance(parts[0][key], dict):
            out[key] = {k: np.concatenate([p[key][k] for p in parts]) for k in parts[0][key]}
        else:
            out[key] = np.concatenate([p[key] for p in parts])
    return out


def _check_splits(splits, y, task, min_leaf, folds, test_size, rows, source) -> None:
    """Refuse, before any fit, splits whose training rows BART cannot be fit on: fewer than
    ``2 * min_leaf`` rows, or a target with one value only."""
    smallest = min(len(tr) for tr, _ in splits)
    if 2 * min_leaf > smallest:
        scheme = (f"{folds}-fold cross-validation leaves as few as {smallest} training rows "
                  "per fold" if folds is not None else
                  f"holding out {test_size:.0%} leaves {smallest} training rows")
        raise ValueError(
            f"Too few training rows for BART: {source} has {rows}, and {scheme}; BART's "
            f"min_leaf = {min_leaf} needs at least 2 * {min_leaf} = {2 * min_leaf} (min_leaf "
            f"rows on each side of a split). Lower min_leaf to at most {smallest // 2} "
            f"(--min-leaf {smallest // 2}), or pass more rows" +
            (" or more folds (--folds K)." if folds is not None else
             " or a smaller test_size (--test-size F)."))
    for k, (tr, _) in enumerate(splits):
        values = np.unique(y[tr])
        if len(values) < 2:
            what = ("one class only" if task == "classification" else
                    f"one target value only ({values[0]:g})")
            raise ValueError(
                f"Fold {k + 1}'s training rows hold {what}, so there is nothing to fit on "
                f"them ({rows} in {source}). Use more folds (--folds K) or a smaller "
                "test_size (--test-size F) for more training rows per fold, another --seed, "
                "or more rows.")


def _check_arguments(folds, test_size, levels, m, draws, chains, min_leaf, leaf_sd):
    """The arguments of :func:`compare` that need no data, checked; returns ``test_size``
    (0.3 by default without folds), the sorted ``levels`` and ``leaf_sd`` as a float."""
    if folds is not None and test_size is not None:
        raise ValueError("Give folds (K-fold cross-validation) or test_size (one held-out "
                         f"part), not both; got folds={folds}, test_size={test_size}.")
    if folds is not None and (not isinstance(folds, (int, np.integer)) or folds < 2):
        raise ValueError(f"folds must be an integer >= 2; got {folds!r}.")
    if folds is None:
        test_size = 0.3 if test_size is None else float(test_size)
        if not 0 < test_size < 1:
            raise ValueError(f"test_size must be in (0, 1); got {test_size!r}.")
    levels = tuple(sorted(float(c) for c in levels))
    if not all(0 < c < 1 for c in levels) or LEVEL not in levels:
        raise ValueError(f"levels must lie in (0, 1) and include {LEVEL}; got {levels}.")
    for name, value, low in (("m", m, 1), ("draws", draws, 1), ("chains", chains, 1),
                             ("min_leaf", min_leaf, 1)):
        if not isinstance(value, (int, np.integer)) or value < low:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{name} ({flag}) must be an integer >= {low}; got {value!r}.")
    if leaf_sd is not None:
        if isinstance(leaf_sd, bool) or not isinstance(leaf_sd, (int, float, np.number)) \
                or not (np.isfinite(leaf_sd) and leaf_sd > 0):
            raise ValueError(f"leaf_sd (--leaf-sd) must be a positive number, the prior sd of "
                             f"every leaf value of BART; got {leaf_sd!r}. Leave it out for the "
                             "default calibrated from the target.")
        leaf_sd = float(leaf_sd)
    return test_size, levels, leaf_sd


def _check_rows(n: int, folds, test_size, rows: str, source: str) -> None:
    """Enough rows with a target value for the folds or the held-out share."""
    if folds is not None and n < 4:
        raise ValueError(f"{source[0].upper()}{source[1:]} has {rows}; K-fold "
                         "cross-validation needs at least two rows per fold, so at least 4 rows "
                         "for folds=2 (--folds 2). Pass a table with more rows.")
    if folds is not None and folds > n // 2:
        raise ValueError(f"folds={folds} is too many for the {rows} of {source}: every fold "
                         f"needs at least two rows. Use at most folds={n // 2} (--folds "
                         f"{n // 2}).")
    if folds is None and n < 6:
        raise ValueError(f"{source[0].upper()}{source[1:]} has {rows}; one held-out split "
                         "needs at least 6 (one held out, five for training). Pass a table "
                         "with more rows.")
    if folds is None and not 1 <= int(round(test_size * n)) <= n - 5:
        raise ValueError(f"test_size={test_size} leaves {int(round(test_size * n))} of the "
                         f"{rows} of {source} held out; choose a share (test_size=, "
                         "--test-size F) that holds out at least one row and leaves at least "
                         "five for training.")


def fit_learner(learner: str, task: str, Xtr, ytr, Xte, yte, seed: int, levels,
                fit: dict) -> tuple[dict, dict, float]:
    """One learner on one split, as an independent job: ``(fit, per-row results, seconds)``.
    ``learner`` is ``"BART"`` (arguments ``fit`` of :func:`_fit_bart`) or ``"boosting"``.
    Runs the same in this process or in a joblib worker (a Dask or Ray cluster): everything
    it needs is in its arguments, its seed fixed by the caller."""
    pyl = logging.getLogger("pymc")
    old_level = pyl.level
    pyl.setLevel(logging.ERROR)
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if learner == "BART":
                res = _fit_bart(task, Xtr, ytr, Xte, seed=seed, **fit)
                rows = _bart_rows(task, res, yte, np.random.default_rng(seed), levels)
            else:
                res = _fit_boosting(task, Xtr, ytr, Xte, seed=seed, levels=levels)
                rows = _boosting_rows(task, res, yte, levels)
    finally:
        pyl.setLevel(old_level)
    return res, rows, time.perf_counter() - t


def _run_folds(task, X, y, splits, fold_seeds, levels, stage, notes, fit) -> dict:
    """Fit BART (arguments ``fit`` of :func:`_fit_bart`) and boosting on every split; returns
    the per-row results per model (``per_model``), a row of metrics per fold and model
    (``fold_rows``), the held-out targets, folds and row numbers in order (``ys``,
    ``folds_of``, ``rows_of``), the seconds per model, and the last fold's fits and
    training X (for the report's interpretation figures).

    The 2 x K fits are independent jobs (:func:`fit_learner`) run by ``joblib.Parallel``:
    one after the other in this process by default, and on a cluster under
    ``joblib.parallel_config(backend="dask")`` (or Ray's joblib backend) with no change
    here.  Their seeds are fixed before they run, so the table is the same either way
    (the seconds aside)."""
    from joblib import Parallel, delayed

    parts = []
    for k, (tr, te) in enumerate(splits):
        Xtr, Xte, lost = _align(X.iloc[tr].reset_index(drop=True),
                                X.iloc[te].reset_index(drop=True))
        if lost:
            notes.append(f"fold {k + 1}: {lost} held-out cell(s) of category levels absent "
                         "from its training rows made missing.")
        parts.append((Xtr, Xte, y[tr], y[te]))
    jobs = [(k, mdl) for k in range(len(splits)) for mdl in MODELS]
    stage(f"{len(jobs)} fits ({len(splits)} fold(s) x BART, m={fit['m']}, {fit['chains']} "
          f"chain(s) x ({fit['tune']} tuning + {fit['draws']} draws), and boosting with early "
          f"stopping on {VALIDATION:.0%} of the training rows) through joblib")
    results = Parallel(return_as="generator")(
        delayed(fit_learner)(mdl, task, parts[k][0], parts[k][2], parts[k][1], parts[k][3],
                             int(fold_seeds[k]), levels, fit)
        for k, mdl in jobs)
    per_model = {mdl: [] for mdl in MODELS}
    fold_rows, ys, folds_of, rows_of = [], [], [], []
    secs = {mdl: 0.0 for mdl in MODELS}
    fits = {}
    for (k, mdl), (res, rows_, s) in zip(jobs, results):
        tr, te = splits[k]
        yte = parts[k][3]
        fits[mdl] = res
        tag = f"fold {k + 1}/{len(splits)} ({len(tr):,} train, {len(te):,} held out)"
        extra = ""
        if mdl == "boosting":
            extra = f" ({res['rounds']} rounds" + (
                f", quantile model {res['quantile_rounds']} rounds"
                if "quantile_rounds" in res else "") + ")"
        stage(f"{tag}: {mdl} done in {s:.1f} s{extra}")
        per_model[mdl].append(rows_)
        secs[mdl] += s
        fold_rows.append({"model": mdl, "fold": k + 1, "train rows": len(tr),
                          "held-out rows": len(te),
                          **pooled_metrics(task, rows_, yte, levels), "seconds": s,
                          "boosting rounds": res["rounds"] if mdl == "boosting" else np.nan,
                          "boosting plug-in sd": (res.get("sigma", np.nan)
                                                  if mdl == "boosting" else np.nan)})
        if mdl == MODELS[-1]:
            ys.append(yte)
            folds_of.append(np.full(len(te), k + 1))
            rows_of.append(te)
    return {"per_model": per_model, "fold_rows": fold_rows, "ys": ys, "folds_of": folds_of,
            "rows_of": rows_of, "secs": secs, "bart_fit": fits["BART"],
            "boost_fit": fits["boosting"], "Xtr": parts[-1][0]}


def _tables(task, run: dict, levels):
    """The tables of :class:`ComparisonResult` from the per-row results of every fold:
    pooled metrics per model, metrics per fold, per-row differences with their standard
    errors, calibration, and the held-out predictions."""
    per_model, secs = run["per_model"], run["secs"]
    ys, folds_of, rows_of = run["ys"], run["folds_of"], run["rows_of"]
    y_all = np.concatenate(ys)
    pooled = {mdl: _concat(per_model[mdl]) for mdl in MODELS}
    table = pd.DataFrame([{"model": mdl, "held-out rows": len(y_all),
                           **pooled_metrics(task, pooled[mdl], y_all, levels),
                           "seconds": secs[mdl]} for mdl in MODELS]).set_index("model")
    folds_df = pd.DataFrame(run["fold_rows"]).dropna(axis=1, how="all")

    diffs = []
    loss_name = "log loss" if task == "classification" else "squared error"
    for key, label in (("loss", loss_name), ("lpd", "log predictive density"),
                       ("crps", "CRPS")):
        d = pooled["BART"][key] - pooled["boosting"][key]
        diffs.append({"per-row metric": label, "BART - boosting (mean)": float(d.mean()),
                      "standard error": float(d.std(ddof=1) / np.sqrt(d.size))
                      if d.size > 1 else np.nan})
    differences = pd.DataFrame(diffs).set_index("per-row metric")

    if task == "classification":
        calibration = pd.concat([reliability_bins(pooled[mdl]["point"], y_all).assign(model=mdl)
                                 for mdl in MODELS], ignore_index=True)
        calibration = calibration[["model", "lower", "upper", "n", "mean_predicted",
                                   "observed"]]
    else:
        cal = []
        for mdl, key in (("BART", "quantiles"), ("boosting", "quantiles"),
                         ("boosting (plug-in)", "plugin_quantiles")):
            qs = pooled[mdl.split(" ")[0]][key]
            for c in levels:
                cov, width = interval_coverage(*interval_ends(qs, c), y_all)
                cal.append({"model": mdl, "nominal": c, "coverage": cov, "width": width})
        calibration = pd.DataFrame(cal)

    pred = pd.DataFrame({"row": np.concatenate(rows_of), "fold": np.concatenate(folds_of),
                         "y": y_all})
    for mdl in MODELS:
        r = pooled[mdl]
        pred[f"{mdl}_point"] = r["point"]
        if "quantiles" in r:
            pred[f"{mdl}_lo"], pred[f"{mdl}_hi"] = interval_ends(r["quantiles"], LEVEL)
        elif "p_lo" in r:
            pred[f"{mdl}_lo"], pred[f"{mdl}_hi"] = r["p_lo"], r["p_hi"]
        pred[f"{mdl}_lpd"] = r["lpd"]
        pred[f"{mdl}_crps"] = r["crps"]
    return table, folds_df, differences, calibration, pred


def compare(data, target: str | None = None, *, task: str | None = None,
            folds: int | None = None, test_size: float | None = None, seed: int = 0,
            m: int = 50, draws: int = 500, tune: int | None = None, chains: int = 2,
            min_leaf: int = 5, leaf_sd: float | None = None,
            levels: Sequence[float] = LEVELS, drop: Sequence[str] = (),
            categorical: Sequence[str] = (),
            max_rows: int | None = None, out: str | Path | None = "compare_report.html",
            progress: bool = True, progressbar: bool = False,
            log: Callable[[str], None] | None = None) -> ComparisonResult:
    """Fit BART in a PyMC model and the boosting learner on the same held-out splits of one
    table, and compare their predictions and predictive distributions.

    Parameters
    ----------
    data : str, path or DataFrame
        A CSV file, a bundled real data set (``boston``, ``airquality``, ``penguins``,
        ``pima``, ``diamonds``, ``quine``: :data:`DATASETS`) or a DataFrame.
    target : str, optional
        The column to predict (required unless ``data`` is a bundled name).
    task : {"regression", "classification", "count"}, optional
        The likelihood: Normal, Bernoulli (binary, logit link) or Poisson (log link).
        Default: see :func:`load_data`.
    folds : int, optional
        K-fold cross-validation (K >= 2; every row held out once).  Exclusive with
        ``test_size``.
    test_size : float, optional
        Share of rows in one random held-out part; default 0.3 when ``folds`` is not given.
    seed : int
        Seeds the splits, the validation rows of boosting, both learners and BART's
        posterior predictive draws.
    m : int
        Trees in BART's sum.
    draws, tune : int
        Kept and tuning iterations per chain (``tune`` defaults to ``draws``).
    chains : int
        Chains, run one after the other on one core.
    min_leaf : int
        BART's fewest training rows in a leaf (``BARTTree(min_leaf=...)``, default 5).  Every
        fold needs at least ``2 * min_leaf`` training rows; lower it for a small table.
    leaf_sd : float, optional
        The prior sd of every leaf value of BART, held fixed (``BARTTree(leaf_sd=...)``);
        default: ``BARTTree``'s, a leaf scale learned around the calibration of Chipman,
        George and McCulloch (2010) from each fold's training target.
    levels : sequence of float
        Nominal levels of the central intervals whose coverage is the calibration of a
        regression or count model (the table reports 0.9, which must be among them).
    drop : sequence of str
        Columns left out of the covariates.
    categorical : sequence of str
        Covariates split by their levels whatever their cells (see :func:`load_data`: a
        text column of mostly numbers is otherwise refused).
    max_rows : int, optional
        Use a random subset of this many rows (for large tables such as ``diamonds``).
    out : str or path, optional
        Where to write the HTML report; None: no report.
    progress : bool
        Print a line per stage (to ``log``, default ``print``).
    progressbar : bool
        Show PyMC's sampling progress bar.
    log : callable, optional
        Receives the progress lines.

    Returns
    -------
    ComparisonResult
        ``result.table`` (DataFrame, one row per model), ``result.report`` (the HTML path),
        per-fold metrics, calibration, per-row predictions.

    Raises
    ------
    ValueError
        Before any fit: for a table without rows, a target column that is not in the data,
        empty or constant, a target that does not fit the task, a column of numbers with
        some cells that are not numbers (named, with the fix), too few rows for ``folds`` /
        ``test_size`` or for ``min_leaf``, a fold whose training rows have one target value,
        or bad ``folds`` / ``test_size`` / ``levels`` / ``min_leaf`` / ``leaf_sd``.
    FileNotFoundError
        When ``data`` is neither a file nor a bundled data set.

    Examples
    --------
    >>> import pymc_trees as pmt
    >>> res = pmt.compare("penguins", folds=2, m=20, draws=100, out=None, progress=False)
    >>> table = res.table        # one row per model, one column per metric
    """
    t_start = time.perf_counter()
    test_size, levels, leaf_sd = _check_arguments(folds, test_size, levels, m, draws, chains,
                                                  min_leaf, leaf_sd)
    tune = draws if tune is None else tune
    say = (log or (lambda s: print(s, flush=True))) if progress else (lambda s: None)

    def stage(msg: str) -> None:
        say(f"[{time.perf_counter() - t_start:7.1f} s] {msg}")

    rng = np.random.default_rng(seed)
    X, y, info = load_data(data, target, task, drop=drop, max_rows=max_rows, rng=rng,
                           categorical=categorical)
    task, source = info["task"], info["source"]
    n = len(y)
    rows = f"{n:,} rows with a target value"
    _check_rows(n, folds, test_size, rows, source)
    splits = _splits(n, folds, test_size, rng)
    _check_splits(splits, y, task, min_leaf, folds, test_size, rows, source)
    fold_seeds = rng.integers(2**31 - 1, size=len(splits))
    stage(f"{info['about']}; target {info['target']!r} ({task}), {n:,} rows, {X.shape[1]} "
          f"covariates; {len(splits)} fold(s)")
    notes = []
    if info["dropped_rows"]:
        notes.append(f"{info['dropped_rows']} row(s) without a target value dropped.")
    if min_leaf != 5 or leaf_sd is not None:
        notes.append(f"BART's trees: min_leaf = {min_leaf} (default 5), leaf_sd = "
                     + ("learned around the calibration from the target" if leaf_sd is None
                        else f"{leaf_sd:g}")
                     + ".")

    folds_run = _run_folds(task, X, y, splits, fold_seeds, levels, stage, notes,
                           dict(m=m, tune=tune, draws=draws, chains=chains,
                                progressbar=progressbar, min_leaf=min_leaf, leaf_sd=leaf_sd))
    bart_fit, boost_fit, Xtr = folds_run["bart_fit"], folds_run["boost_fit"], folds_run["Xtr"]
    table, folds_df, differences, calibration, pred = _tables(task, folds_run, levels)

    info.update({
        "rows": n, "covariates": list(map(str, X.columns)), "folds": len(splits),
        "scheme": (f"{len(splits)}-fold cross-validation" if folds is not None else
                   f"one random split, {test_size:.0%} held out"),
        "seed": seed, "m": m, "draws": draws, "tune": tune, "chains": chains,
        "min_leaf": min_leaf, "leaf_sd": leaf_sd,
        "levels": levels, "notes": notes, "wall seconds": time.perf_counter() - t_start,
        "boosting": (f"learning rate {ETA}, at most {ROUNDS} rounds, early stopping after "
                     f"{PATIENCE} rounds without gain on a random {VALIDATION:.0%} of the "
                     "training rows, XGBoost's defaults otherwise, one thread"),
    })
    result = ComparisonResult(table=table, report=None, folds=folds_df,
                              differences=differences, calibration=calibration,
                              predictions=pred, info=info, bart_idata=bart_fit["idata"],
                              boosting_model=boost_fit["model"], train_X=Xtr)
    if out is not None:

        stage("writing the report")
        result.report = write_report(result, out)
    info["wall seconds"] = time.perf_counter() - t_start
    stage(f"done in {info['wall seconds']:.1f} s")
    return result
