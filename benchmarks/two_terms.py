"""One model with two tree terms and a random intercept, end to end through PyMC's API.

    python benchmarks/two_terms.py

alpha + u[group] + f1(X) + z * f2(X) (f1 by CGM, f2 by PG), plain pm.sample(); prints:
new-data predictions through pmt.sample_posterior_predictive against pmt.predict; the trace
written to netCDF and zarr and reloaded in a new process (identical predictions); R-hat and
ESS of the intercept and sigma2; bytes per draw of the saved forests."""

import os
import subprocess
import sys
import tempfile
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_trees as pmt

RELOAD = """
import sys, numpy as np, arviz as az, pymc_trees as pmt
idata = az.from_netcdf(sys.argv[1]) if sys.argv[1].endswith(".nc") else az.from_zarr(sys.argv[1])
X = np.load(sys.argv[2])
np.save(sys.argv[3], np.stack([pmt.predict(idata, X, v).values for v in ("f1", "f2")]))
"""


def main():
    rng = np.random.default_rng(2026)
    n, G = 500, 10
    X = rng.uniform(size=(n, 4))
    g = rng.integers(G, size=n)
    z = rng.uniform(0.5, 1.5, size=n)
    y = (2.0 + rng.normal(0, 0.7, G)[g] + 2 * np.sin(np.pi * X[:, 0] * X[:, 1])
         + z * (X[:, 2] > 0.5) + rng.normal(size=n))
    with pm.Model(coords={"obs": np.arange(n), "group": np.arange(G)}) as model:
        Xd = pm.Data("X", X, dims=("obs", "feature"))
        zd = pm.Data("z", z, dims="obs")
        gd = pm.Data("g", g, dims="obs")
        f1 = pmt.BARTTree("f1", Xd, y - y.mean(), m=100, dims="obs", response="constant")
        f2 = pmt.BARTTree("f2", Xd, y - y.mean(), m=50, sampler="pg", dims="obs")
        alpha = pm.Normal("alpha", 0.0, 10.0)
        su = pm.HalfNormal("su", 1.0)
        u = pm.Normal("u", 0.0, su, dims="group")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=alpha + u[gd] + f1 + zd * f2, sigma=pm.math.sqrt(s2), observed=y,
                  dims="obs")
        t0 = time.time()
        idata = pm.sample(draws=1000, tune=1000, chains=2, random_seed=7, progressbar=False)
        wall = time.time() - t0
    print(f"sampling 2 x (1000 + 1000), n = {n}: {wall:.0f} s")
    print(az.summary(idata, var_names=["alpha", "sigma2", "su"]).to_string())

    k = 25
    Xn, gn, zn = rng.uniform(size=(k, 4)), rng.integers(G, size=k), rng.uniform(0.5, 1.5, k)
    with model:
        pm.set_data({"X": Xn, "z": zn, "g": gn}, coords={"obs": np.arange(n, n + k)})
        pred = pmt.sample_posterior_predictive(idata, predictions=True, random_seed=1,
                                               var_names=["f1", "f2", "y"], progressbar=False)
    same = [np.array_equal(pred.predictions[v].values, pmt.predict(idata, Xn, v).values)
            for v in ("f1", "f2")]
    print(f"new data ({k} rows) through pmt.sample_posterior_predictive equals pmt.predict: "
          f"f1 {same[0]}, f2 {same[1]}")

    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "X.npy"), Xn)
        here = np.stack([pmt.predict(idata, Xn, v).values for v in ("f1", "f2")])
        for path, write in ((os.path.join(d, "t.nc"), idata.to_netcdf),
                            (os.path.join(d, "t.zarr"), idata.to_zarr)):
            write(path)
            out = os.path.join(d, "out.npy")
            subprocess.run([sys.executable, "-c", RELOAD, path, os.path.join(d, "X.npy"), out],
                           check=True)
            print(f"{os.path.basename(path)} reloaded in a new process: predictions identical "
                  f"{np.array_equal(np.load(out), here)}")
        draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
        only = idata["forests"].to_dataset()
        only.to_netcdf(os.path.join(d, "forests.nc"))
        print(f"forests group: {os.path.getsize(os.path.join(d, 'forests.nc')) / draws:.0f} "
              f"bytes per draw in netCDF (both terms, m = 100 + 50)")


if __name__ == "__main__":
    main()
