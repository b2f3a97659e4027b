"""Seeded draws of eight models, hashed: the check that a refactor changes no draw.

``python benchmarks/draw_hashes.py`` prints one SHA-256 (first 16 hex digits) per model of
every posterior variable and every tree-step sample stat of one seeded chain, plus the
largest value of ``|f|`` so that a change can be told from a rounding (compare two runs'
outputs with ``--values`` to see the largest difference).  One model per sweep: the default
Gaussian model (linear leaves), a probit model, a Poisson model (log-gamma leaves, the
default there), linear leaves, a shared-output term (``separate_trees=False``), constant
leaves (the CGM sweep), and a Poisson model with normal constant and linear leaves (the
general step).

Compare hashes from the same machine, and not from a first run on an empty PyTensor cache:
PyTensor's numba backend can give a model function's first compile and its cached loads
results that differ in the last bit, which moves NUTS's draws (``docs/explanation/samplers.md``,
"Randomness").  Hashes from another machine or another set of installed versions differ too: all
five
changed between 2026-11-28 and 2026-11-29 (another machine of the same kind, a new venv)
with the package unchanged, and 72dd516 (before issue 49's restructure) gave the same
hashes as the code after it on each day.
"""
import hashlib
import sys
import warnings

import numpy as np
import pymc as pm

import pymc_trees as pmt

rng = np.random.default_rng(20261128)
N = 120
X = rng.uniform(-1, 1, size=(N, 3))
F = np.sin(2.5 * X[:, 0]) + X[:, 1] ** 2
Y = F + 0.3 * rng.normal(size=N)
Y_BIN = (F + rng.normal(size=N) > 0.4).astype(int)
Y_CNT = rng.poisson(np.exp(0.5 * F))
Y2 = np.stack([Y, -0.5 * F + 0.3 * rng.normal(size=N)])


def gaussian():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y, m=20)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", f, s, observed=Y)
    return m


def probit():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y_BIN, m=20, link="probit")
        pm.Bernoulli("y", p=pm.math.invprobit(f), observed=Y_BIN)
    return m


def poisson_general():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y_CNT, m=10, link="log")
        pm.Poisson("y", mu=pm.math.exp(f), observed=Y_CNT)
    return m


def linear_leaves():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y, m=20, response="linear")
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", f, s, observed=Y)
    return m


def shared_output():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y2, m=20, shape=(2, N), separate_trees=False)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", f, s, observed=Y2)
    return m


def constant_leaves():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y, m=20, response="constant")
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", f, s, observed=Y)
    return m


def poisson_normal_leaves():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y_CNT, m=10, link="log", leaf_prior="normal")
        pm.Poisson("y", mu=pm.math.exp(f), observed=Y_CNT)
    return m


def poisson_linear_leaves():
    with pm.Model() as m:
        f = pmt.BARTTree("f", X, Y=Y_CNT, m=10, link="log", leaf_prior="normal",
                         response="linear")
        pm.Poisson("y", mu=pm.math.exp(f), observed=Y_CNT)
    return m


MODELS = {"gaussian": gaussian, "probit": probit, "poisson_general": poisson_general,
          "linear_leaves": linear_leaves, "shared_output": shared_output,
          "constant_leaves": constant_leaves, "poisson_normal_leaves": poisson_normal_leaves,
          "poisson_linear_leaves": poisson_linear_leaves}


def run(build):
    with build():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws=60, tune=60, chains=1, cores=1, random_seed=7,
                              progressbar=False, compute_convergence_checks=False)
    h = hashlib.sha256()
    arrays = {}
    for group in ("posterior", "sample_stats"):
        ds = idata[group]
        for name in sorted(ds.data_vars):
            a = np.ascontiguousarray(np.asarray(ds[name].values))
            if a.dtype == object or "time" in name or "perf_counter" in name:
                continue  # wall-clock stats differ between any two runs
            arrays[f"{group}/{name}"] = a
            h.update(name.encode())
            h.update(a.tobytes())
    return h.hexdigest()[:16], arrays


if __name__ == "__main__":
    save = "--values" in sys.argv
    for name, build in MODELS.items():
        digest, arrays = run(build)
        f = arrays["posterior/f"]
        print(f"{name:16s} {digest}  max|f| {np.abs(f).max():.15g}", flush=True)
        if save:
            np.savez(f"draw_hashes_{name}.npz", **arrays)
