"""Bytes per draw of the saved forests: Friedman #1, n = 1,000, m = 200 (issue: saving).

python benchmarks/trace_size.py  -> in-memory PackedForest bytes per draw, and the forests
group's bytes per draw as encoded, in netCDF and in zarr."""

import os
import sys
import tempfile

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def main(draws=int(sys.argv[1]) if len(sys.argv) > 1 else 500):
    X, y, _ = friedman1(1000, rng=1)
    with pm.Model():
        Xd = pm.Data("X", X)
        f = pmt.BARTTree("f", Xd, y, m=200, response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=Xd.shape[0])
        idata = pm.sample(draws=draws, tune=draws, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    forests = pmt.forests(idata, "f").values.ravel()
    mem = np.mean([fr.nodes.nbytes + fr.start.nbytes for fr in forests])
    group = idata["forests"].to_dataset()
    enc = sum(v.nbytes for v in group.variables.values()) / draws
    with tempfile.TemporaryDirectory() as d:
        only = idata["forests"].to_dataset()
        only.to_netcdf(os.path.join(d, "f.nc"))
        only.to_zarr(os.path.join(d, "f.zarr"))
        nc = du(os.path.join(d, "f.nc")) / draws
        zr = du(os.path.join(d, "f.zarr")) / draws
    print(f"friedman1 n=1000 m=200 draws={draws}: mean nodes/draw "
          f"{np.mean([fr.nodes.size for fr in forests]):.0f}; bytes per draw: in memory "
          f"{mem:.0f}, encoded {enc:.0f}, netCDF file {nc:.0f}, zarr store {zr:.0f}")


if __name__ == "__main__":
    main()
