"""Cold start: seconds from ``import pymc_trees`` to the first draw, in a fresh process.

Each run is a new Python process that imports pymc_trees, builds a Friedman #1 model
(n = 1,000, m = 200: ``BARTTree`` + ``InverseGamma`` noise + Normal likelihood) and calls
``pm.sample(draws=1, tune=0, chains=1)``.  The first run fills numba's cache, PyTensor's
compilation cache and Python's bytecode caches (``__pycache__``); the runs after it are what a
user sees on every later start.  Printed: the import time, the time to the first draw (import
included) and the whole process.

The child runs without ``PYTHONDONTWRITEBYTECODE`` (this machine kind sets it, so that in a
fresh environment no ``.pyc`` file is ever written and every import compiles its module from
source, which a user's installation does not do); ``--no-bytecode-cache`` keeps the variable
as it is (Python still reads ``.pyc`` files that exist).

Run: ``python benchmarks/cold_start.py`` (``--runs 3`` by default after the cache-filling one).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np
import pymc as pm
import pymc_trees as pmt
from pymc_trees.comparison.datasets import friedman1
t1 = time.perf_counter()
X, y, _ = friedman1(1000, rng=1)
with pm.Model():
    f = pmt.BARTTree("f", X, y, m=200, response="constant")
    s2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
    pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=f.shape)
    pm.sample(draws=1, tune=0, chains=1, cores=1, progressbar=False,
              compute_convergence_checks=False, random_seed=0)
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t0:.3f}")
"""


def one(env) -> tuple[float, float, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True, env=env)
    wall = time.perf_counter() - t
    imp, first = (float(x) for x in out.stdout.split()[-2:])
    return imp, first, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE from the environment")
    a = ap.parse_args(argv)
    env = dict(os.environ)
    if not a.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"Python bytecode caches: {'off' if 'PYTHONDONTWRITEBYTECODE' in env else 'on'}")
    print("run | import s | import to first draw s | whole process s")
    for k in range(a.runs + 1):
        imp, first, wall = one(env)
        label = "fill cache" if k == 0 else str(k)
        print(f"{label:>10} | {imp:8.2f} | {first:22.2f} | {wall:15.2f}", flush=True)


if __name__ == "__main__":
    main()
