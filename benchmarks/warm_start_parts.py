"""The warm start's parts at scale: what a grow-from-root sweep costs on all rows, on a row
subsample, and what routing every row through the forest it leaves costs (issue 52).

The default warm start runs 10 grow-from-root sweeps (:mod:`pymc_trees.bart.kernels.gfr`) at
the start of each chain's tuning, each over all n rows.  A warm start on a row subsample would
grow its trees on ``n * fraction`` rows, and the exact samplers would then need every row's
leaf (a pass like prediction, timed here as ``PackedForest.predict`` at the n rows, with
numba's threads) and each node's available rules from all its rows.  This prints the parts
on Friedman #1 (p = 10), the README's m = 200, row precisions of a noise sd of 0.5 on the
standardised y.  Each figure is the second of two calls (the first compiles).

Run: ``python benchmarks/warm_start_parts.py`` (``--n 100000 1000000``, ``--fraction 0.02``).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from pymc_trees.bart.term.plan import make_forest_sampler
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.comparison.datasets import friedman1


def _gfr_seconds(X, z, w, m, seed):
    fs = make_forest_sampler(X, TreePrior(m=m), 0.0, 0.5 / np.sqrt(m))
    rng = np.random.default_rng(seed)
    fs.gfr_sweep(rng, z, w)
    start = time.perf_counter()
    fs.gfr_sweep(rng, z, w)
    return time.perf_counter() - start, fs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--fraction", type=float, default=0.02)
    ap.add_argument("--m", type=int, default=200)
    a = ap.parse_args()
    print(f"m = {a.m}, p = 10, numba threads {numba.get_num_threads()}")
    print("| n | one sweep, all rows | one sweep, subsample (rows) | route all rows | "
          "leaves per tree after |")
    print("|---|---|---|---|---|")
    for n in a.n:
        X, y = friedman1(n, rng=n)[:2]
        z = (y - y.mean()) / y.std()
        w = np.full(n, 4.0)
        full, fs = _gfr_seconds(X, z, w, a.m, 0)
        ns = max(1, int(n * a.fraction))
        sub, _ = _gfr_seconds(X[:ns], z[:ns], w[:ns], a.m, 1)
        packed = fs.pack()
        packed.predict(X[:10])
        start = time.perf_counter()
        packed.predict(X)
        route = time.perf_counter() - start
        print(f"| {n:,} | {full:.2f} s | {sub:.3f} s ({ns:,}) | {route:.2f} s | "
              f"{fs.summary()[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
