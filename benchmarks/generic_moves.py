"""What folding the constant leaves into the linear form would cost: constant leaves run
through the linear leaves' sweeps, against their own, in the same run.

A constant leaf is a linear leaf without a regressor (``j = -1`` in
:mod:`pymc_trees.bart.kernels.linear` and :mod:`~pymc_trees.bart.kernels.general_linear`),
so the linear sweeps with every tree's kind fixed at constant (``lin = 0``, ``mix`` off)
sample exactly the constant-leaf model with one leaf part for both forms.  The tree's part of
every move, and the conjugate sweeps' grow and prune, are shared already
(:mod:`~pymc_trees.bart.kernels.tree_edit`, ``conjugate_moves``); this script measures what the
constant form's own pass and leaf part buy, the figure
``docs/explanation/code-layout.md`` ("One move per leaf form, measured") quotes for keeping them.

* conjugate (Gaussian, the default path): ``ForestSampler.cgm_sweep`` with the linear
  sweep's move mix (grow 0.3, prune 0.3, change 0.4, no swap) against
  ``LinearForestSampler.cgm_sweep`` with constant trees; Friedman #1 (p = 10), m = 200, the
  conjugate noise draw between sweeps as in ``benchmarks/sweep.py``; n = 10,000 and
  100,000 rows;
* general (Poisson with a log link, n = 1,500, p = 6, m = 50, ``benchmarks/general_sweep.py``'s
  model): the general step's compiled kernel with the same move mix against the linear
  general kernel with constant trees, at the model's initial point.

Each figure is the median of ``--rounds`` rounds of sweeps (max(5, 200,000 / n) conjugate
sweeps, 20 general ones; the two samplers alternate within a round, after a common burn-in),
seconds per sweep.  One core.

Run: ``python benchmarks/generic_moves.py`` (about 4 minutes).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from pymc_trees.bart.samplers.linear_sampler import LinearForestSampler
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs
from pymc_trees.comparison.datasets import friedman1

LINEAR_MIX = {"grow": .3, "prune": .3, "change": .4, "swap": 0.0}


def _constant_in_linear(fs: LinearForestSampler) -> None:
    """Every tree's kind fixed at constant: the linear moves with no regressor."""
    fs.mix = False
    fs.lin[:] = 0


def conjugate(n: int, sweeps: int, rounds: int, seed: int = 0) -> tuple[float, float]:
    X, y, _ = friedman1(n, rng=seed)
    offset = 0.5 * (y.max() + y.min())
    sd = (y.max() - y.min()) / (2 * 2 * np.sqrt(200))
    cp = move_cumulative_probs(LINEAR_MIX)
    own = ForestSampler(X, TreePrior(m=200), offset, sd)
    lin = LinearForestSampler(X, TreePrior(m=200, response="mix"), offset, sd)
    _constant_in_linear(lin)
    samplers = {"own": own, "linear": lin}
    rngs = {k: np.random.default_rng(seed + 1) for k in samplers}
    sigma2 = {k: float(np.var(y)) for k in samplers}

    def one(k):
        fs = samplers[k]
        fs.cgm_sweep(rngs[k], y - offset, np.full(n, 1 / sigma2[k]), cp)
        resid = y - fs.values()
        sigma2[k] = 1 / rngs[k].gamma(1.5 + n / 2, 1 / (1.0 + resid @ resid / 2))

    for _ in range(max(20, sweeps)):  # compile and burn in
        for k in samplers:
            one(k)
    times = {k: [] for k in samplers}
    for _ in range(rounds):
        for k in samplers:
            t = time.perf_counter()
            for _ in range(sweeps):
                one(k)
            times[k].append((time.perf_counter() - t) / sweeps)
    assert not lin.lin.any()
    return float(np.median(times["own"])), float(np.median(times["linear"]))


def general(sweeps: int, rounds: int) -> tuple[float, float]:
    import pymc as pm

    import pymc_trees as pmt
    from pymc_trees.bart.steps import tree_step as tree_steps

    n, p, m = 1500, 6, 50
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, p))
    eta = np.sin(np.pi * X[:, 0] * X[:, 1]) + (X[:, 2] - 0.5) ** 2 + 0.5 * X[:, 0]
    y = rng.poisson(np.exp(0.5 + eta))
    steps, points = {}, {}
    for k, response in (("own", "constant"), ("linear", "mix")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pm.Model() as model:
                f = pmt.BARTTree("f", X, y, m=m, link="log", response=response,
                                 leaf_prior="normal")
                pm.Poisson("y", mu=pm.math.exp(f), observed=y)
                kw = {"move_probs": LINEAR_MIX} if response == "constant" else {}
                step = tree_steps.CGMTreeStep([f], **kw)
        step.warm_left = 0
        step.rng = np.random.default_rng(1)
        if response == "mix":
            _constant_in_linear(step.sampler)
        steps[k], points[k] = step, model.initial_point()
    for _ in range(max(20, sweeps)):  # compile and grow the trees
        for k in steps:
            steps[k].step(points[k])
    times = {k: [] for k in steps}
    for _ in range(rounds):
        for k in steps:
            t = time.perf_counter()
            for _ in range(sweeps):
                steps[k].step(points[k])
            times[k].append((time.perf_counter() - t) / sweeps)
    assert not steps["linear"].sampler.lin.any()
    return float(np.median(times["own"])), float(np.median(times["linear"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("seconds per sweep (median of rounds); constant leaves in their own moves and in "
          "the linear-leaf moves (every tree constant)")
    print()
    print("| sweep | rows | own moves | linear moves, constant trees | ratio |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        sweeps = max(5, 200_000 // n)
        a, b = conjugate(n, sweeps, args.rounds)
        print(f"| conjugate (Gaussian), m = 200 | {n:,} | {a:.4f} | {b:.4f} | {b / a:.2f} |",
              flush=True)
    a, b = general(20, args.rounds)
    print(f"| general (Poisson), m = 50 | 1,500 | {a:.4f} | {b:.4f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
