"""Particle Gibbs kernel checks: particle weights against brute-force marginal likelihoods, the
clamped particle replays the old tree exactly, buffers grow without changing the draws."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from pymc.sampling.mcmc import assign_step_methods
from pymc_trees.bart.kernels.nodes import log_ml
from pymc_trees.bart.kernels.pg import split_rows
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior


def _gauss_logml(r, omega, sd):
    """log N(r | 0, diag(1/omega) + sd^2 11^T), the exact marginal of one leaf's rows."""
    n = r.size
    C = np.diag(1 / omega) + sd**2 * np.ones((n, n))
    _, logdet = np.linalg.slogdet(C)
    return -0.5 * (n * np.log(2 * np.pi) + logdet + r @ np.linalg.solve(C, r))


def test_split_weight_equals_brute_force_marginal_likelihood_ratio():
    """Hand-built node of 6 rows split on feature 1 at cut index 0: the particle's weight factor
    ML(left) ML(right) / ML(node) computed from split_rows' (W, S) equals the ratio of exact
    Gaussian marginal likelihoods."""
    Xb = np.array([[0, 1], [1, 0], [2, 0], [0, 1], [1, 1], [2, 0]], dtype=np.uint16)
    r = np.array([0.3, -1.2, 0.8, 2.0, 1.1, -0.4])
    omega = np.array([1.0, 2.0, 0.5, 1.5, 1.0, 3.0])
    sd = 0.8
    pool = np.zeros(12, np.int32)
    pool[:6] = np.arange(6)
    mid, WL, SL, WR, SR = split_rows(Xb, pool, 0, 6, 6, 1, 0, r, omega)
    left, right = pool[6:mid], pool[mid:12]
    assert sorted(left.tolist()) == [1, 2, 5] and sorted(right.tolist()) == [0, 3, 4]
    ours = (log_ml(WL, SL, 1 / sd**2) + log_ml(WR, SR, 1 / sd**2)
            - log_ml(omega.sum(), (omega * r).sum(), 1 / sd**2))
    brute = (_gauss_logml(r[left], omega[left], sd) + _gauss_logml(r[right], omega[right], sd)
             - _gauss_logml(r, omega, sd))
    assert ours == pytest.approx(brute, rel=1e-10)


def _grown_sampler(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(150, 3))
    z = np.where(X[:, 0] > 0.5, 1.0, -1.0) + X[:, 1]
    fs = ForestSampler(X, TreePrior(m=8, min_leaf=3, beta=1.0), 0.0, 0.5)
    cp = np.cumsum([0.25, 0.25, 0.4, 0.1])
    for _ in range(40):
        fs.cgm_sweep(rng, z, np.full(150, 4.0), cp)
    return fs, z, rng


def test_single_clamped_particle_reproduces_the_old_trees():
    fs, z, rng = _grown_sampler()
    before = fs.forest.copy()
    stats = fs.pg_sweep(rng, z, np.full(150, 4.0), num_particles=1)
    assert stats["tree_changed"] == 0.0
    f = fs.forest
    for t in range(f.m):
        # same structure and rules (slots are renumbered breadth-first), same row partition
        def shape(forest, t):
            out = []
            queue = [0]
            while queue:
                k = queue.pop(0)
                if forest.var[t, k] >= 0:
                    out.append((forest.var[t, k], forest.cut[t, k]))
                    queue += [forest.left[t, k], forest.right[t, k]]
                else:
                    out.append(None)
            return out

        assert shape(f, t) == shape(before, t)
        groups_new = {tuple(np.flatnonzero(f.leaf_of_row[t] == k)) for k in set(f.leaf_of_row[t])}
        groups_old = {tuple(np.flatnonzero(before.leaf_of_row[t] == k))
                      for k in set(before.leaf_of_row[t])}
        assert groups_new == groups_old


def test_pg_keeps_forest_state_consistent_and_buffers_grow_transparently():
    fs, z, _ = _grown_sampler(1)
    fs2, _, _ = _grown_sampler(1)
    rng1 = np.random.default_rng(5)
    rng2 = np.random.default_rng(5)
    fs.pg_sweep(rng1, z, np.full(150, 4.0), 10)
    fs2.pg_sweep(rng2, z, np.full(150, 4.0), 10)
    fs2._pool = np.empty(160, np.int32)  # force the row pool to overflow and regrow
    for _ in range(5):
        fs.pg_sweep(rng1, z, np.full(150, 4.0), 10)
        fs2.pg_sweep(rng2, z, np.full(150, 4.0), 10)
    assert fs2._pool.size > 160
    np.testing.assert_array_equal(fs.values(), fs2.values())
    np.testing.assert_array_equal(fs.pack().predict(fs.X), fs.values())


def test_sampler_argument_selects_the_tree_step():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = X[:, 0]
    for sampler, expected in (("pg", pmt.PGTreeStep), ("cgm", pmt.CGMTreeStep)):
        with pm.Model() as model:
            f = pmt.BARTTree("f", X, Y=y, m=5, sampler=sampler)
            pm.Normal("y", mu=f, sigma=1.0, observed=y)
            _, selected = assign_step_methods(model, None,
                                              methods=pm.step_methods.STEP_METHODS)
        assert list(selected) == [expected]
    with pm.Model(), pytest.raises(ValueError, match="sampler must be one of"):
        pmt.BARTTree("f", X, Y=y, sampler="xgb")
