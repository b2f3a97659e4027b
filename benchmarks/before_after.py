"""Two checkouts of pymc_trees timed in one run: the kernel sweeps of ``benchmarks/sweep.py``
and the general tree step of ``benchmarks/general_sweep.py``, interleaved.

``python benchmarks/before_after.py BEFORE AFTER`` (two directories holding a checkout, e.g. a
``git worktree`` of the old commit and this one) runs each measurement in a fresh process per
checkout (``PYTHONPATH`` set to it, its own ``benchmarks/`` scripts imported), alternating
before/after for ``--rounds`` rounds (3 by default) so that a slow spell of the machine falls on
both, and prints the medians and their ratio (after / before):

* ``sweep.time_kernel`` at 10,000 and 100,000 Friedman #1 rows, m = 200, GrowPrune and CGM's
  four moves (seconds per sweep, after 20 warm-up sweeps);
* ``general_sweep``'s kernel column (ms per sweep of the general tree step, 20 sweeps) for its
  five models.

A restructure that changes no draw should move none of these by more than the noise (3%).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
sys.path.insert(0, "benchmarks")
what = sys.argv[1]
out = {}
if what == "sweep":
    import sweep
    from pymc_trees.comparison.datasets import friedman1
    for n in (10_000, 100_000):
        X, y = friedman1(n, rng=n)[:2]
        for name, moves in (("growprune", {"grow": .5, "prune": .5}), ("cgm", sweep.CGM_MOVES)):
            out[f"sweep n={n} {name} (s)"] = sweep.time_kernel(X, y, moves, 40 if n > 50_000 else 100)
else:
    import numpy as np, pymc as pm
    import general_sweep as g
    from pymc_trees.bart.steps import tree_step as tree_steps
    for build in (g.poisson, g.gamma_shape, g.normal_log_scale, g.three_quantiles_log,
                  g.negative_binomial):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pm.Model() as model:
                terms = build()
                step = tree_steps.CGMTreeStep(terms)
            point = model.initial_point()
            step._warm_left = step.warm_left = 0  # renamed in the restructure
            g._time(step, point, False, 1)
            for _ in range(10):
                step.step(point)
            out[f"general {build.__name__} (ms)"] = 1e3 * g._time(step, point, False, 20)
print("RESULT" + json.dumps(out))
"""


def run(tree: str, what: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    p = subprocess.run([sys.executable, "-c", CHILD, what], cwd=tree, env=env,
                       capture_output=True, text=True, check=True)
    line = [s for s in p.stdout.splitlines() if s.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=("sweep", "general"), default=None)
    a = ap.parse_args()
    whats = [a.only] if a.only else ["sweep", "general"]
    res = {"before": {}, "after": {}}
    for r in range(a.rounds):
        for what in whats:
            for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                for k, v in run(getattr(a, side), what).items():
                    res[side].setdefault(k, []).append(v)
        print(f"round {r + 1} done", file=sys.stderr, flush=True)
    print("| measurement | before | after | after / before |")
    print("|---|---|---|---|")
    for k in res["before"]:
        b, f = statistics.median(res["before"][k]), statistics.median(res["after"][k])
        print(f"| {k} | {b:.4g} | {f:.4g} | {f / b:.3f} |")


if __name__ == "__main__":
    main()
