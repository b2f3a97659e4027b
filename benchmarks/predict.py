"""Time of ``pmt.predict``: every kept draw's forest at new rows (one core).

The README's model on Friedman #1 (n = 1,000 training rows, m = 200, 2 chains x (300 +
500)), then ``pmt.predict`` at 1,000 new rows for the 1,000 draws: best of three calls after
a first one that compiles.  ``--check FILE.npy`` compares the predictions with a saved run
(``--save FILE.npy``) to the last bit, for a change of the prediction kernel.

Run: ``python benchmarks/predict.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", default=None)
    ap.add_argument("--check", default=None)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    X, y, _ = friedman1(1000, rng=3)
    Xt, _, _ = friedman1(1000, rng=4)
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=200, response="constant")
        s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y)
        idata = pm.sample(draws=500, tune=300, chains=2, cores=1, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)
    pmt.predict(idata, Xt[:10])
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        pred = pmt.predict(idata, Xt).values
        best = min(best, time.perf_counter() - t)
    depth = float(idata.sample_stats["mean_depth"].mean())
    print(f"pmt.predict, 1,000 draws x 1,000 rows x 200 trees (mean depth {depth:.2f}): "
          f"{best:.3f} s, {best / (1000 * 1000 * 200) * 1e9:.1f} ns per tree and row")
    if a.save:
        np.save(a.save, pred)
    if a.check:
        print("identical to", a.check, ":", bool(np.array_equal(np.load(a.check), pred)))


if __name__ == "__main__":
    main()
