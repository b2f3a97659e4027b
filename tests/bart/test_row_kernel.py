"""The general tree step's compiled sweep (issue 25): the row log density compiled from the
model (pymc_trees.bart.likelihood.rowgraph) and the whole sweep in one numba kernel
(pymc_trees.bart.kernels.general.general_sweep).

* The kernel makes the same moves with the same random numbers as the Python sweep that calls
  the likelihood through PyTensor (``python_sweep = True``): after 25 sweeps from one seed
  both hold the same trees and the same term to 1e-9, on each model family the benchmark
  runs.  The enumeration tests of tests/bart/test_general.py check the kernel against the
  exact posterior, so both sweeps are checked.  A wrong reverse proposal density or a
  missing term in the kernel's ratio changes an accept decision within a few sweeps
  (mutations in the closing note of issue 25).
* Every model family of benchmarks/general.py compiles (no fallback to the Python sweep), a
  Gamma with trees in the mean and the scale too (its trigamma written in native operations),
  and a row graph the kernel cannot run says why and falls back.
* A step survives cloudpickle (what PyMC does to send it to a chain's worker process).
"""

from __future__ import annotations

import functools

import pickle

import cloudpickle

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc_trees.bart.likelihood import leaf_choice
from pymc_trees.bart.likelihood.protocol import members
from pymc_trees.bart.steps import likelihood_reader
from pymc_trees.bart.steps import tree_step as tree_steps
from pymc_trees.bart.likelihood.structure import NotAugmentable

# the general tree step's tests: normal leaves (by default, leaf_prior="auto" gives a
# Poisson or Gamma mean and a Normal's log variance log-gamma leaves)
BARTTree = functools.partial(pmt.BARTTree, leaf_prior="normal")

N = 60
RNG = np.random.default_rng(20261125)
XX = RNG.uniform(0, 10, (N, 2))
Y = np.sin(XX[:, 0]) + RNG.normal(0, 0.2 + 0.05 * XX[:, 0])
COUNTS = RNG.poisson(np.exp(1 + np.sin(XX[:, 0])))
POS = RNG.gamma(3.0, np.exp(1 + 0.2 * XX[:, 0]) / 3.0)
CLASS = RNG.integers(0, 3, N)


def poisson():
    f = BARTTree("f", XX, Y=COUNTS, m=10, link="log")
    pm.Poisson("y", mu=pm.math.exp(f), observed=COUNTS)
    return [f]


def gamma_shape():
    f = BARTTree("f", XX, Y=POS, m=10, link="log")
    k = pm.Gamma("k", 2.0, 0.5)
    pm.Gamma("y", alpha=k, beta=k / pm.math.exp(f), observed=POS)
    return [f]


def two_terms():
    f = BARTTree("f", XX, m=10, leaf_sd=0.5)
    g = BARTTree("g", XX, m=10, leaf_sd=0.2)
    pm.Normal("y", f, pm.math.exp(g), observed=Y)
    return [g]


def abs_scale():
    w = BARTTree("w", XX, m=10, shape=(2, N), leaf_sd=0.3)
    pm.Normal("y", w[0], pm.math.abs(w[1] + 1.0), observed=Y)
    return [w]


def quantiles():
    # three quantiles with a log link: the location is not affine in the term, so the general
    # step runs (an affine location takes the asymmetric Laplace augmentation instead)
    mu = BARTTree("mu", XX, Y=POS, m=10, shape=(3, N), link="log")
    pm.AsymmetricLaplace("y", mu=pm.math.exp(mu), b=0.5, q=np.array([[0.1], [0.5], [0.9]]),
                         observed=np.stack([POS] * 3))
    return [mu]


def softmax():
    f = BARTTree("f", XX, m=10, shape=(3, N), leaf_sd=0.5)
    pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=CLASS)
    return [f]


def negative_binomial():
    # in the (n, p) form with p = a / (a + exp(f)), which the Polya-Gamma augmentation reads
    # (issue 51; the general step ran it before)
    f = BARTTree("f", XX, Y=COUNTS, m=10, link="log")
    a = pm.Exponential("a", 1.0)
    pm.NegativeBinomial("y", n=a, p=a / (a + pm.math.exp(f)), observed=COUNTS)
    return [f]


MODELS = {f.__name__: f for f in (poisson, gamma_shape, two_terms, abs_scale, quantiles, softmax)}


def _general_only(*args, **kwargs):
    raise NotAugmentable("the general step is under test")


def _step(build):
    """The model's tree step with every output of a (k, n) term in the general step (the
    softmax's classes and abs_scale's mean output are otherwise augmented)."""
    with pm.Model() as model:
        terms = build()
        old = leaf_choice.output_tree_likelihood  # the outputs' likelihoods are read there
        leaf_choice.output_tree_likelihood = _general_only
        try:
            step = tree_steps.CGMTreeStep(terms)
        finally:
            leaf_choice.output_tree_likelihood = old
    return model, step


def _likelihoods(step):
    return members(step.likelihood)


def _run(step, point, seed, sweeps, python):
    old = tree_steps.CGMTreeStep.python_sweep
    tree_steps.CGMTreeStep.python_sweep = python
    try:
        step.sampler.reset()
        step.rng = np.random.default_rng(seed)
        step.warm_left = 0
        for _ in range(sweeps):
            point, _ = step.step(point)
        return step.sampler.values(), step.sampler.summary()
    finally:
        tree_steps.CGMTreeStep.python_sweep = old


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_sweep_makes_the_python_sweeps_moves(name):
    model, step = _step(MODELS[name])
    for lik in _likelihoods(step):
        assert lik.family == "general" and lik.rows is not None, lik.rows_reason
    point = model.initial_point()
    f_kernel, trees_kernel = _run(step, point, 7, 25, python=False)
    f_python, trees_python = _run(step, point, 7, 25, python=True)
    np.testing.assert_allclose(f_kernel, f_python, rtol=1e-9, atol=1e-9)
    assert trees_kernel == trees_python  # mean depth and leaves per tree
    # the sweeps moved the term (the comparison is not between two unchanged starts)
    assert np.ptp(np.asarray(f_kernel)) > 0


def gamma_mean_and_scale():
    f1 = BARTTree("f1", XX, Y=POS, m=10, link="log")
    f2 = BARTTree("f2", XX, m=10, leaf_sd=0.3)
    pm.Gamma("y", mu=pm.math.exp(f1), sigma=pm.math.exp(np.log(POS.std()) + f2), observed=POS)
    return [f2]


def test_trigamma_in_native_operations_matches_scipy():
    import pytensor
    import pytensor.tensor as pt
    from scipy import special

    from pymc_trees.bart.likelihood.rowgraph import _trigamma

    x = np.array([1e-4, 0.01, 0.3, 1.0, 2.5, 7.0, 42.0, 1e3, 1e6])
    xs = pt.dvector("x")
    got = pytensor.function([xs], _trigamma(xs))(x)
    np.testing.assert_allclose(got, special.polygamma(1, x), rtol=2e-13)
    assert np.isnan(pytensor.function([xs], _trigamma(xs))(np.array([0.0, -1.5]))).all()


@pytest.mark.slow
def test_a_gamma_with_trees_in_mean_and_scale_runs_in_the_kernel():
    # pymc-bart's heteroscedastic example: the shape mu^2 / sigma^2 depends on the scale term,
    # so its curvature has a trigamma, which numba would run in object mode; the row graph
    # computes it natively.  The Python sweep's trigamma is C's and the curvature cancels
    # digits (it shapes the proposals only), so the two sweeps agree to 1e-5 here, not 1e-9
    model, step = _step(gamma_mean_and_scale)
    assert step.likelihood.rows is not None, step.likelihood.rows_reason
    point = model.initial_point()
    f_kernel, trees_kernel = _run(step, point, 7, 25, python=False)
    f_python, trees_python = _run(step, point, 7, 25, python=True)
    np.testing.assert_allclose(f_kernel, f_python, rtol=1e-5, atol=1e-5)
    assert trees_kernel == trees_python
    assert np.ptp(np.asarray(f_kernel)) > 0


def test_negative_binomial_n_p_form_is_augmented_and_compiles_for_the_general_step():
    model, step = _step(negative_binomial)
    assert step.likelihood.family == "negative_binomial"
    old = likelihood_reader.tree_likelihood
    likelihood_reader.tree_likelihood = _general_only
    try:
        model, step = _step(negative_binomial)
    finally:
        likelihood_reader.tree_likelihood = old
    assert step.likelihood.family == "general"
    assert step.likelihood.rows is not None, step.likelihood.rows_reason


def test_a_row_graph_numba_cannot_run_falls_back_with_a_reason():
    # trigamma runs in object mode under numba: the Python sweep runs instead, and samples
    with pm.Model() as model:
        f = BARTTree("f", XX, m=10, leaf_sd=0.3)
        pm.Normal("y", mu=pm.math.polygamma(1, pm.math.exp(f) + 1.0), sigma=0.5, observed=Y)
        step = tree_steps.CGMTreeStep([f])
    assert step.likelihood.rows is None
    assert "object mode" in step.likelihood.rows_reason
    point = model.initial_point()
    for _ in range(3):
        point, _ = step.step(point)
    assert np.all(np.isfinite(step.sampler.values()))


def test_a_pickled_step_sweeps_as_the_original():
    model, step = _step(gamma_shape)
    point = model.initial_point()
    again = pickle.loads(cloudpickle.dumps(step))
    f1, _ = _run(step, point, 3, 5, python=False)
    f2, _ = _run(again, point, 3, 5, python=False)
    np.testing.assert_array_equal(f1, f2)


@pytest.mark.parametrize("name", ["poisson", "gamma_shape"])
def test_sweeps_in_one_kernel_call_are_the_sweeps_one_by_one(name):
    """``general_sweep(..., sweeps=k)`` runs k sweeps in one kernel call, each from the rows'
    state the last left (values, log-likelihoods and derivatives kept move by move): the same
    random numbers, trees and moves as k calls of one sweep, the term's values to rounding
    (summed tree by tree between calls).  The forest's room is made for 2 k new nodes a tree."""
    model, step = _step(MODELS[name])
    point = model.initial_point()
    lik = step.likelihood
    smp = step.sampler
    out = []
    for k, calls in ((1, 6), (6, 1)):
        smp.reset()
        rng = np.random.default_rng(11)
        rates = [smp.general_sweep(rng, lik.bind(point), step._move_cp, lik.compiled(point),
                                   sweeps=k) for _ in range(calls)]
        f = smp.forest
        K = int(f.n_nodes.max())
        out.append((smp.values(), f.var[:, :K].copy(), f.cut[:, :K].copy(), f.n_nodes.copy(),
                    rng.random(), rates))
    (v1, var1, cut1, n1, u1, r1), (v6, var6, cut6, n6, u6, r6) = out
    np.testing.assert_array_equal(var1, var6)
    np.testing.assert_array_equal(cut1, cut6)
    np.testing.assert_array_equal(n1, n6)
    np.testing.assert_allclose(v1, v6, rtol=1e-12, atol=1e-12)
    assert u1 == u6
    assert np.ptp(v6) > 0 and n6.max() > 1
    assert 0 < r6[0]["accept_leaf"] <= 1
