"""What limits the effective samples of f per sweep in the general tree step.

The Poisson family of ``benchmarks/general.py`` (n = 1,500, p = 6, m = 50, ``mu = exp(f)``), the
tree step alone (no NUTS, no ``pm.sample``): 300 sweeps from the initial point, then 3,000
sweeps recording f at 48 fixed training rows; bulk ESS per row (ArviZ, one chain), reported
as the median and lower quartile over rows per 1,000 sweeps, with ms per sweep and the
acceptance rates of the moves.  Variants, each for several seeds:

* ``default``: the default step (grow, prune, change, swap 0.25 / 0.25 / 0.40 / 0.10);
* ``fixed structure``: after the 300 sweeps, the structural moves are switched off (the
  Python sweep with the proposals returning "no move"), so only the leaf values move: how
  fast f would mix if the trees' shapes were known;
* two other move mixes (0.40 / 0.40 / 0.10 / 0.10 and 0.45 / 0.45 / 0 / 0.10);
* ``gaussian``: the same design and size with a Normal likelihood (sd 0.3, known), the exact
  conjugate CGM path with the leaves integrated out: the reference for what CGM moves give.

Run: ``python benchmarks/general_mixing.py`` (about 4 minutes; ``--seeds 1`` for a quick run;
``--family gamma`` or ``negative_binomial`` for another likelihood, ``--variants default
"grow 0.40, prune 0.40, change 0.10, swap 0.10"`` for some variants).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.bart.steps import tree_step as tree_steps
from pymc_trees.bart.kernels import general as gk
from pymc_trees.bart.samplers.tree_prior import move_cumulative_probs

from general_sweep import M, N, P, _data  # the same design (this folder is on the path)

ROWS = np.linspace(0, N - 1, 48).astype(int)
BURN, SWEEPS = 300, 3000


def _poisson():
    rng, X, eta = _data()
    y = rng.poisson(np.exp(0.5 + eta))
    return pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal"), lambda f: pm.Poisson(
        "y", mu=pm.math.exp(f), observed=y)


def _gamma():
    rng, X, eta = _data()
    y = rng.gamma(4.0, np.exp(1.0 + eta) / 4.0)
    return pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal"), lambda f: pm.Gamma(
        "y", alpha=4.0, beta=4.0 / pm.math.exp(f), observed=y)


def _negative_binomial():
    rng, X, eta = _data()
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + np.exp(1.0 + eta)))
    f = pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal")
    return f, lambda f: pm.NegativeBinomial("y", n=3.0, p=3.0 / (3.0 + pm.math.exp(f)),
                                            observed=y)


FAMILIES = {"poisson": _poisson, "gamma": _gamma, "negative_binomial": _negative_binomial}


def _gaussian():
    rng, X, eta = _data()
    y = eta + 0.3 * rng.normal(size=N)
    return (pmt.BARTTree("f", X, y, m=M, response="constant"),
            lambda f: pm.Normal("y", f, 0.3, observed=y))


def run(variant: str, seed: int, family: str = "poisson") -> tuple[float, float, float,
                                                                  np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pm.Model() as model:
            f, lik = (_gaussian if variant == "gaussian" else FAMILIES[family])()
            lik(f)
            step = tree_steps.CGMTreeStep([f])
    moves = {"grow 0.40, prune 0.40, change 0.10, swap 0.10": (0.4, 0.4, 0.1, 0.1),
             "grow 0.45, prune 0.45, swap 0.10": (0.45, 0.45, 0.0, 0.1)}.get(variant)
    if moves is not None:
        step._move_cp = move_cumulative_probs(dict(zip(("grow", "prune", "change", "swap"),
                                                       moves)))
    point = model.initial_point()
    step.rng = np.random.default_rng(seed)
    for _ in range(BURN):
        point, _ = step.step(point)
    saved = {}
    if variant == "fixed structure":
        step.python_sweep = True
        for name in ("grow_propose", "prune_propose", "restructure_propose"):
            saved[name] = getattr(gk, name)
            setattr(gk, name, lambda *args, **kwargs: -1)
    try:
        out = np.empty((SWEEPS, len(ROWS)))
        acc = []
        t = time.perf_counter()
        for d in range(SWEEPS):
            point, stats = step.step(point)
            out[d] = step.sampler.values()[ROWS]
            acc.append([stats[0].get(f"accept_{k}", np.nan)
                        for k in ("grow", "prune", "change", "swap")])
        secs = time.perf_counter() - t
    finally:
        for name, fn in saved.items():
            setattr(gk, name, fn)
    ess = np.array([float(az.ess(out[None, :, j])) for j in range(len(ROWS))])
    per_k = ess * 1000 / SWEEPS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rates = np.nanmean(np.array(acc, float), axis=0)
    return float(np.median(per_k)), float(np.quantile(per_k, 0.25)), secs / SWEEPS * 1e3, rates


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--family", choices=list(FAMILIES), default="poisson",
                    help="the general step's likelihood (Gamma with shape 4, negative "
                         "binomial with n = 3 in the (n, p) form)")
    ap.add_argument("--variants", nargs="*", default=None, help="a subset, by name")
    args = ap.parse_args(argv)
    variants = ["default", "fixed structure", "grow 0.40, prune 0.40, change 0.10, swap 0.10",
                "grow 0.45, prune 0.45, swap 0.10", "gaussian"]
    if args.variants:
        variants = [v for v in variants if v in args.variants]
    print(f"{args.family}: n = {N}, p = {P}, m = {M}; ESS of f at {len(ROWS)} rows per 1,000 "
          f"sweeps ({SWEEPS} sweeps after {BURN})")
    print("| variant | seed | ESS median | ESS lower quartile | ms per sweep | "
          "acceptance grow / prune / change / swap |")
    print("|---|---|---|---|---|---|")
    for v in variants:
        meds = []
        for seed in range(1, args.seeds + 1):
            med, q25, ms, rates = run(v, seed, args.family)
            meds.append(med)
            rs = " / ".join("-" if np.isnan(r) else f"{r:.2f}" for r in rates)
            print(f"| {v} | {seed} | {med:.1f} | {q25:.1f} | {ms:.2f} | {rs} |", flush=True)
        print(f"| {v} | mean | {np.mean(meds):.1f} | | | |", flush=True)


if __name__ == "__main__":
    main()
