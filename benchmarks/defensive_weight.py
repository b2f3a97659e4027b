"""What the general tree step's defensive mixture costs in mixing (issue 48).

Every leaf proposal of the general step is drawn with probability ``w`` from the leaf prior
instead of the Newton step (``pymc_trees/bart/kernels/general.py``, "A defensive mixture").
This runs the Poisson enumeration chain of ``tests/bart/test_general.py`` (one tree, 6 rows,
``mu = exp(0.8 + f)``, 300 tuning and 20,000 kept sweeps per chain, two chains per seed
pair) for several weights and prints, per weight and seed pair, the ArviZ ESS of the
indicators of the five most probable partitions of the exact posterior (the smallest sets
the enumeration test's tolerance) and the acceptance rates of grow, prune, change, swap and
the leaves.

Run: ``python benchmarks/defensive_weight.py`` (about 3 minutes; ``--weights 0 0.01`` and
``--seeds 11,12 21,22`` to choose).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import arviz as az
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "bart"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pymc_trees.bart.samplers.sampler import ForestSampler  # noqa: E402
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs  # noqa: E402
from enumeration import forest_row_partitions  # noqa: E402
from test_general import ALPHA, BETA, CASES, MOVES, X6, _prior, quadrature_posterior  # noqa: E402


def run(w: float, seed: int, draws: int = 20000, tune: int = 300):
    leaf_sd, loglik, _, _ = CASES["poisson"]
    smp = ForestSampler(X6, TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, leaf_sd)
    rng = np.random.default_rng(seed)
    cp = move_cumulative_probs(MOVES)
    parts, rates = [], []
    for it in range(tune + draws):
        r = smp.general_sweep(rng, loglik, cp, defensive=w)
        if it >= tune:
            parts.append(forest_row_partitions(smp.pack(), X6)[0])
            rates.append(list(r.values()))
    return parts, np.nanmean(np.array(rates, float), axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.01, 0.02])
    ap.add_argument("--seeds", nargs="+", default=["11,12", "21,22", "31,32"])
    args = ap.parse_args()
    _, _, row, _ = CASES["poisson"]
    post, _ = quadrature_posterior(_prior(), len(X6), row, CASES["poisson"][0])
    top = sorted(post, key=post.get, reverse=True)[:5]
    print("weight  seeds   ESS of the 5 most probable cells      acceptance (g, p, c, s, leaf)")
    for w in args.weights:
        for pair in args.seeds:
            chains = [run(w, int(s)) for s in pair.split(",")]
            ess = [float(az.ess(np.array([[float(p == cell) for p in c[0]] for c in chains])))
                   for cell in top]
            print(f"{w:6.3f}  {pair:6s}  {np.round(ess).astype(int)!s:36s}  "
                  f"{np.round(chains[0][1], 3)}")


if __name__ == "__main__":
    main()
