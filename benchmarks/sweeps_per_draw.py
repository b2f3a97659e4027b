"""Effective draws per second with k tree sweeps per stored draw (``CGMTreeStep(sweeps=k)``).

The enumeration problem of ``tests/bart/test_enumeration.py`` (10 rows, one feature, m trees,
Gaussian noise): two chains of the same number of sweeps each, one sweep a draw against k,
and the N_eff of the five most probable cells (``tests/enumeration.check_cells``: the
smallest ArviZ ESS of their indicators).  Prints sampling seconds, N_eff and N_eff per
second for every k.

    python benchmarks/sweeps_per_draw.py [sampler] [m] [sweeps per chain]

``sampler`` is cgm, growprune, pg2 or pg10 (default growprune, m = 2, 20,000 sweeps).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "bart")]


def main() -> None:
    warnings.simplefilter("ignore")
    import arviz as az
    import numpy as np
    import test_enumeration as te

    import pymc_trees as pmt

    sampler = sys.argv[1] if len(sys.argv) > 1 else "growprune"
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    total = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    sigma = te.SIGMA if m == 1 else 0.6
    post, prior = te.exact(te.X1, te.Y1, sigma, m)
    print(f"{sampler}, m = {m}, {total} sweeps per chain, 2 chains")
    te.sample(te.X1, te.Y1, sigma, m, sampler, 50, 12)  # kernels loaded, PyMC warmed up
    print(f"{'sweeps/draw':>11} {'draws':>7} {'seconds':>8} {'N_eff':>7} {'N_eff/s':>8}")
    for k in (1, 5, 10):
        t = time.perf_counter()
        idata = te.sample(te.X1, te.Y1, sigma, m, sampler, (total // k, k), 12)
        secs = time.perf_counter() - t
        parts = [[te.forest_row_partitions(fr, te.X1) for fr in chain]
                 for chain in pmt.forests(idata, "f").values]
        top = sorted(post, key=post.get, reverse=True)[:5]
        n_eff = min(float(az.ess(np.array([[float(p == c) for p in ch] for ch in parts])))
                    for c in top)
        print(f"{k:>11} {total // k:>7} {secs:>8.1f} {n_eff:>7.0f} {n_eff / secs:>8.0f}")


if __name__ == "__main__":
    main()
