"""Seconds per sweep of the general tree step: the compiled kernel against the Python loop.

One model per row of the table, n = 1,500 rows, p = 6, m = 50 trees per term, simulated as in
``benchmarks/general.py``: the step is built (compile time of its row graph), swept once
(compile time of the sweep kernel for this model), then timed over 20 sweeps at the model's
initial point in the kernel and in the Python loop that calls the likelihood through
PyTensor (``CGMTreeStep.python_sweep = True``: the same moves and random numbers), and one
evaluation of the row graph (log density and both derivatives) at all n rows.  No NUTS: the
tree step alone.  The Python loop's whole-graph functions are compiled on its first call
(untimed: only that loop uses them).

Run: ``python benchmarks/general_sweep.py`` (about 3 minutes).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.bart.likelihood.protocol import PerOutput, members
from pymc_trees.bart.steps import tree_step as tree_steps
from pymc_trees.bart.kernels.general import call_all

N, P, M = 1500, 6, 50


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N, P))
    eta = np.sin(np.pi * X[:, 0] * X[:, 1]) + (X[:, 2] - 0.5) ** 2 + 0.5 * X[:, 0]
    return rng, X, eta


def poisson():
    rng, X, eta = _data()
    y = rng.poisson(np.exp(0.5 + eta))
    f = pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal")
    pm.Poisson("y", mu=pm.math.exp(f), observed=y)
    return [f]


def gamma_shape():
    rng, X, eta = _data()
    y = rng.gamma(4.0, np.exp(1.0 + eta) / 4.0)
    f = pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal")
    k = pm.Gamma("k", 2.0, 0.5)
    pm.Gamma("y", alpha=k, beta=k / pm.math.exp(f), observed=y)
    return [f]


def normal_log_scale():
    rng, X, eta = _data()
    y = eta + rng.normal(size=N) * (0.1 + 0.6 * X[:, 3])
    pmt.BARTTree("f", X, y, m=M, response="constant")
    g = pmt.BARTTree("g", X, m=M, leaf_sd=1.0 / np.sqrt(M), leaf_prior="normal")
    pm.Normal("y", pm.modelcontext(None)["f"], pm.math.exp(np.log(y.std()) + g), observed=y)
    return [g]


def three_quantiles_log():
    # quantiles with a log link (mu = exp(term)): the general step.  With an affine location
    # the asymmetric Laplace augmentation takes the term (the conjugate update, not timed here)
    rng, X, eta = _data()
    y = np.exp(eta + rng.normal(size=N) * (0.1 + 0.6 * X[:, 3]))
    mu = pmt.BARTTree("mu", X, y, m=M, shape=(3, N), link="log")
    pm.AsymmetricLaplace("y", mu=pm.math.exp(mu), b=0.3, q=np.array([[0.1], [0.5], [0.9]]),
                         observed=np.stack([y] * 3))
    return [mu]


def negative_binomial():
    rng, X, eta = _data()
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + np.exp(1.0 + eta)))
    f = pmt.BARTTree("f", X, y, m=M, link="log", leaf_prior="normal")
    a = pm.Gamma("a", 2.0, 0.5)
    pm.NegativeBinomial("y", n=a, p=a / (a + pm.math.exp(f)), observed=y)
    return [f]


def _row_graph_us(step, point) -> float:
    """Microseconds per evaluation of the (first) row graph at all n rows."""
    outputs = isinstance(step.likelihood, PerOutput)
    lik = members(step.likelihood)[0]
    rows_fn, pre = lik.compiled({**point, lik.f_name: step.sampler.values()}
                            if outputs else point)
    f = np.ascontiguousarray(step.sampler.parts[0].values() if outputs
                             else step.sampler.values())
    call_all(rows_fn, f, pre)
    t = time.perf_counter()
    for _ in range(200):
        call_all(rows_fn, f, pre)
    return (time.perf_counter() - t) / 200 * 1e6


def _time(step, point, python: bool, sweeps: int) -> float:
    tree_steps.CGMTreeStep.python_sweep = python
    step.rng = np.random.default_rng(1)
    t = time.perf_counter()
    for _ in range(sweeps):
        step.step(point)
    return (time.perf_counter() - t) / sweeps


def main():
    print(f"n = {N}, p = {P}, m = {M} per term; ms per sweep of the tree step (20 sweeps)")
    print()
    print("| model | build (s) | first sweep (s) | kernel (ms/sweep) | Python loop (ms/sweep) | "
          "row graph at all rows (us) |")
    print("|---|---|---|---|---|---|")
    for build in (poisson, gamma_shape, normal_log_scale, three_quantiles_log, negative_binomial):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pm.Model() as model:
                terms = build()
                t = time.perf_counter()
                step = tree_steps.CGMTreeStep(terms)
                t_build = time.perf_counter() - t
            point = model.initial_point()
            step.warm_left = 0
            t_first = _time(step, point, False, 1)
            for _ in range(10):  # grow the trees a little before timing
                step.step(point)
            kernel = _time(step, point, False, 20)
            _time(step, point, True, 1)  # compiles the whole-graph functions it calls
            python = _time(step, point, True, 20)
            tree_steps.CGMTreeStep.python_sweep = False
            row_us = _row_graph_us(step, point)
        print(f"| {build.__name__} | {t_build:.1f} | {t_first:.1f} | {kernel * 1e3:.2f} | "
              f"{python * 1e3:.2f} | {row_us:.0f} |", flush=True)


if __name__ == "__main__":
    main()
