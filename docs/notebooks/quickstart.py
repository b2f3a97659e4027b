# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # pymc_trees quickstart: a BART term next to a linear term
#
# A sum-of-trees term `f` sits in an ordinary PyMC model beside an intercept and a linear
# slope. `pm.sample()` assigns the steps by itself: CGM tree moves for `f`, the conjugate Gibbs
# update for `sigma2`, NUTS for the linear part. The result is an ordinary ArviZ DataTree.
# (Open with `jupytext --to notebook`, or run as a script; CI runs it with small sizes.)

# %%
import os

import arviz as az
import matplotlib

matplotlib.use("Agg")
import numpy as np
import pymc as pm
import xarray as xr

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
N, M, DRAWS = (200, 30, 200) if SMALL else (500, 100, 1000)

rng = np.random.default_rng(7)
X = rng.uniform(-1, 1, size=(N, 4))
true_f = np.where(X[:, 0] > 0, 1.5, -0.5) * np.cos(2 * X[:, 1])
y = 0.8 + 2.0 * X[:, 2] + true_f + rng.normal(0, 0.5, size=N)

# %% [markdown]
# **Intercepts.** Write an intercept as a Normal variable added to the tree term (`a + f`).
# The tree step recognises it and, after every sweep, draws an exact *level shift*: `a` moves
# by s and every leaf by -s/m, so `a + f` is unchanged and s comes from its Gaussian
# conditional. Without it `a` and the sum of trees trade places slowly (R-hat far above 1).

# %%
with pm.Model(coords={"obs": np.arange(N)}) as model:
    X_data = pm.Data("X", X, dims=("obs", "feature"))
    a = pm.Normal("a", 0.0, 5.0)
    slope = pm.Normal("slope", 0.0, 5.0)
    # Y only calibrates the prior of f (centre and scale); it is not a second likelihood.
    f = pmt.BARTTree("f", X_data, Y=y - y.mean(), m=M, dims="obs")
    sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
    pm.Normal("y", mu=a + slope * X_data[:, 2] + f, sigma=pm.math.sqrt(sigma2),
              observed=y, dims="obs")
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, random_seed=1,
                      idata_kwargs={"log_likelihood": True})

# %%
summary = az.summary(idata, var_names=["a", "slope", "sigma2"])
print(summary)

# %% [markdown]
# Every step's stats are in `sample_stats`: the mean depth and number of leaves of the forest,
# and acceptance per move type (CGM) or the fraction of trees changed per sweep (PG).

# %%
stats = idata.sample_stats.to_dataset()
tree_stats = [k for k in ("accept_grow", "accept_prune", "accept_change", "accept_swap",
                          "tree_changed", "mean_depth", "mean_leaves") if k in stats]
print(stats[tree_stats].mean())

# %%
pc = az.plot_trace(idata, var_names=["slope", "sigma2"])
pc.savefig("quickstart_trace.png")

# %% [markdown]
# Posterior predictive checks and LOO work as for any PyMC model.

# %%
with model:
    pm.sample_posterior_predictive(idata, extend_inferencedata=True, random_seed=2)
print(az.loo(idata))

# %% [markdown]
# Each posterior draw keeps its own forest (in the `forests` group, saved with
# `idata.to_netcdf`). At new data, `pm.set_data` and then `pmt.sample_posterior_predictive`
# (PyMC's signature): f is each draw's forest at the new rows, y is drawn with that draw's
# `a`, `slope` and `sigma2`. PyMC's own function refuses here, loudly: it could only copy the
# training-row f or redraw it from the prior.

# %%
X_new = rng.uniform(-1, 1, size=(5, 4))
with model:
    pm.set_data({"X": X_new}, coords={"obs": np.arange(N, N + 5)})
    pred = pmt.sample_posterior_predictive(idata, predictions=True, var_names=["f", "y"],
                                           random_seed=3)
f_new = pmt.predict(idata, X_new, var_name="f")  # the same f, without the likelihood
assert np.array_equal(pred.predictions["f"].values, f_new.values)
x2 = xr.DataArray(X_new[:, 2], dims="obs")
post = idata.posterior
mu_new = post["a"] + post["slope"] * x2 + f_new  # (chain, draw, obs), matched draw by draw
print(mu_new.mean(("chain", "draw")).values)
print(pred.predictions["y"].mean(("chain", "draw")).values)
