"""Grow-from-root warm start: the kernel's distribution over trees against brute-force
enumeration of the same choices, the forest it leaves, and its place in ``pm.sample``."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest

from pymc_trees import BARTTree
from pymc_trees.bart.kernels.bundles import SweepData, TreeRules
from pymc_trees.bart.kernels.forest import LEAF, forest_values
from pymc_trees.bart.kernels.gfr import GFR_OK, gfr_tree, new_gfr_scratch, remove_tree
from pymc_trees.bart.kernels.nodes import log_ml
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior


def _key(f, t, k=0):
    if f.var[t, k] == LEAF:
        return "L"
    return (int(f.var[t, k]), int(f.cut[t, k]), _key(f, t, f.left[t, k]),
            _key(f, t, f.right[t, k]))


def _naive_gfr(Xb, ncuts, sp, min_leaf, alpha, beta, prec0, r, omega, max_depth=64):
    """Probability of every tree that one grow-from-root update can return, written from the
    rule in ``pymc_trees.bart.kernels.gfr`` by plain recursion over row subsets; a node at
    ``max_depth`` is a leaf."""

    def ml(rows):
        return math.exp(log_ml(omega[rows].sum(), (omega[rows] * r[rows]).sum(), prec0))

    def grow(rows, d):
        rules = []
        for v in range(Xb.shape[1]):
            if sp[v] <= 0:
                continue
            cs = [c for c in range(ncuts[v]) if (Xb[rows, v] <= c).sum() >= min_leaf
                  and (Xb[rows, v] > c).sum() >= min_leaf]
            rules += [(v, c, len(cs)) for c in cs]
        if not rules or d >= max_depth:
            return {"L": 1.0}
        wsum = sum(sp[v] for v in {v for v, _, _ in rules})
        ps = alpha * (1 + d) ** -beta
        w = {"L": (1 - ps) * ml(rows)}
        for v, c, nc in rules:
            w[(v, c)] = (ps * sp[v] / wsum / nc * ml(rows[Xb[rows, v] <= c])
                         * ml(rows[Xb[rows, v] > c]))
        tot = sum(w.values())
        out = {"L": w["L"] / tot}
        for v, c, _ in rules:
            pr = w[(v, c)] / tot
            lt = grow(rows[Xb[rows, v] <= c], d + 1)
            rt = grow(rows[Xb[rows, v] > c], d + 1)
            for kl, pl in lt.items():
                for kr, pr_ in rt.items():
                    out[(v, c, kl, kr)] = pr * pl * pr_
        return out

    return grow(np.arange(Xb.shape[0]), 0)


@pytest.mark.slow
@pytest.mark.parametrize("max_depth", [64, 2])
def test_gfr_tree_distribution_matches_enumeration(max_depth):
    """20,000 regrowths of one tree on 9 rows and 2 features (min_leaf 2, split weights 2:1,
    unequal row precisions): the frequency of every tree against its probability under the
    stated rule, by a chi-square test over the trees expected at least 10 times; with no
    depth limit that binds, and with nodes at depth 2 kept as leaves."""
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.permutation(np.arange(9.0)), rng.integers(0, 4, 9).astype(float)])
    r = np.array([-1.2, 0.3, 2.0, -0.4, 1.1, 0.9, -2.0, 0.2, 1.5])
    omega = rng.uniform(0.5, 2.0, 9)
    prior = TreePrior(m=1, alpha=0.95, beta=1.0, min_leaf=2, split_prior=(2.0, 1.0))
    fs = ForestSampler(X, prior, 0.0, 0.7)
    probs = _naive_gfr(fs.Xb.astype(np.int64), fs.ncuts, fs.split_prior, 2, 0.95, 1.0,
                       fs.prec0, r, omega, max_depth)
    assert abs(sum(probs.values()) - 1) < 1e-12 and len(probs) > (30 if max_depth > 2 else 10)
    if max_depth == 2:  # the limit binds: the unlimited rule has trees of depth 3 or more
        assert len(_naive_gfr(fs.Xb.astype(np.int64), fs.ncuts, fs.split_prior, 2, 0.95, 1.0,
                              fs.prec0, r, omega)) > len(probs)
    f = fs.forest
    f.ensure_capacity(64)
    scratch = new_gfr_scratch(9, 2, fs.cuts.shape[1], f.capacity)
    data = SweepData(fs.Xb, fs._XbT, fs.ncuts, fs.iscat, fs.split_prior)
    rules = TreeRules(2, 0.95, 1.0, float(fs.prec0))
    fsum = np.zeros(9)
    gen = np.random.default_rng(11)
    N = 20000
    counts: dict = {}
    for _ in range(N):
        remove_tree(0, f.value, f.leaf_of_row, fsum, r, np.empty(9))
        status = gfr_tree(gen, 0, data, rules, max_depth, r, omega, fsum, f.arrays(), scratch)
        assert status == GFR_OK
        k = _key(f, 0)
        counts[k] = counts.get(k, 0) + 1
    assert set(counts) <= set(probs)
    big = [k for k, p in probs.items() if N * p >= 10]
    obs = [counts.get(k, 0) for k in big]
    exp = [N * probs[k] for k in big]
    if N - sum(exp) >= 10:  # the rarer trees together
        obs.append(N - sum(obs))
        exp.append(N - sum(exp))
    obs, exp = np.array(obs), np.array(exp)
    chi2 = float(np.sum((obs - exp) ** 2 / exp))
    from scipy.stats import chi2 as chi2_dist
    # a correct kernel exceeds this once in 10,000 seeds
    assert chi2 < chi2_dist.ppf(1 - 1e-4, len(obs) - 1), (chi2, len(obs))
    # fsum holds exactly the last tree
    out = np.empty(9)
    forest_values(f.value, f.leaf_of_row, 0.0, out)
    np.testing.assert_allclose(fsum, out, atol=1e-12)


def test_gfr_sweep_grows_capacity_and_leaves_a_consistent_forest():
    """A sharp signal on 3,000 rows needs trees of more than 32 nodes: the sweep grows the
    node arrays, replays the draws, and leaves a forest whose training values, packed
    prediction and stored rows all agree."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(3000, 3))
    y = np.sin(30 * X[:, 0]) + 0.01 * rng.standard_normal(3000)
    fs = ForestSampler(X, TreePrior(m=5, alpha=0.99, beta=0.5), 0.0, 1.0)
    fs.gfr_sweep(np.random.default_rng(1), y, np.full(3000, 1e4))
    f = fs.forest
    assert f.capacity > 32 and f.n_nodes.max() > 32
    np.testing.assert_allclose(fs.pack().predict(X), fs.values(), atol=1e-9)
    assert np.sqrt(np.mean((fs.values() - y) ** 2)) < 0.1
    # the same sweep after the arrays grew is reproduced by a fresh sampler with the same seed
    fs2 = ForestSampler(X, TreePrior(m=5, alpha=0.99, beta=0.5), 0.0, 1.0)
    fs2.gfr_sweep(np.random.default_rng(1), y, np.full(3000, 1e4))
    np.testing.assert_array_equal(fs2.values(), fs.values())
    # the exact sweeps carry on from the forest it leaves
    fs.cgm_sweep(np.random.default_rng(2), y, np.full(3000, 1e4),
                 np.array([0.25, 0.5, 0.9, 1.0]))
    np.testing.assert_allclose(fs.pack().predict(X), fs.values(), atol=1e-9)


@pytest.mark.parametrize("kind", ["cgm", "pg"])
def test_warm_start_runs_at_the_start_of_tuning_only(kind):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 3))
    y = 3 * X[:, 0] + rng.normal(0, 0.3, 200)
    with pm.Model():
        f = BARTTree("f", X, y, m=20, sampler=kind)
        pm.Normal("y", f, 0.3, observed=y)
        idata = pm.sample(draws=20, tune=30, chains=1, random_seed=1, progressbar=False,
                          discard_tuned_samples=False, compute_convergence_checks=False)
    warm = idata.warmup_sample_stats["warm_start"].values[0]
    assert warm[:10].all() and not warm[10:].any()
    assert not idata.sample_stats["warm_start"].values.any()
    with pm.Model():
        f = BARTTree("f", X, y, m=20, sampler=kind)
        pm.Normal("y", f, 0.3, observed=y)
        idata = pm.sample(draws=5, tune=8, chains=1, random_seed=1, progressbar=False,
                          discard_tuned_samples=False, compute_convergence_checks=False,
                          **{f"{kind}_tree": {"warm_start": 0}})
    assert not idata.warmup_sample_stats["warm_start"].values.any()
    with pm.Model():
        f = BARTTree("f", X, y, m=20, sampler=kind)
        pm.Normal("y", f, 0.3, observed=y)
        idata = pm.sample(draws=5, tune=8, chains=1, random_seed=1, progressbar=False,
                          discard_tuned_samples=False, compute_convergence_checks=False)
    # at most half of the tuning iterations
    assert idata.warmup_sample_stats["warm_start"].values.sum() == 4


def _sizes(n, m=200, p=10, k=1):
    from types import SimpleNamespace as NS

    one = NS(n=n, prior=NS(m=m), layout=NS(q=p))
    return one if k == 1 else NS(parts=[one] * k)


def test_the_default_warm_start_costs_at_most_a_twentieth_of_the_chain():
    """``warm_start=None``: as many grow-from-root sweeps, up to 10 and half the tuning, as
    the cost model puts at 5% of the chain's iterations (of a default chain's, up to 0.5 s,
    where that is more); an integer is taken as given.  Issue 52: at a million rows ``pm.sample(draws=5, tune=12)``
    ran six sweeps of 11 s each against 20 s for the whole run without them."""
    from pymc_trees.bart.term import plan

    assert plan.warm_sweeps(7, 12, 5, _sizes(10**6)) == 6  # an integer: min(it, tune // 2)
    assert plan.warm_sweeps(0, 1000, 1000, _sizes(100)) == 0
    assert plan.warm_sweeps(None, 1000, 1000, _sizes(1000)) == 10  # small: all of them
    assert plan.warm_sweeps(None, 12, 5, _sizes(1000)) == 6
    assert plan.warm_sweeps(None, 12, 5, _sizes(10**6)) == 0  # the first draws
    assert plan.warm_sweeps(None, 200, 200, _sizes(10**6)) == 0
    assert plan.warm_sweeps(None, 12, 5, _sizes(20_000, k=3)) < plan.warm_sweeps(
        None, 12, 5, _sizes(20_000))  # k outputs cost k times as much
    for n in (300, 3000, 10_000, 30_000, 100_000, 10**6, 10**7):
        for tune, draws in ((12, 5), (200, 200), (1000, 1000)):
            k = plan.warm_sweeps(None, tune, draws, _sizes(n))
            rows_trees = n * 200
            gfr = plan._GFR_S * rows_trees * 10
            it = plan._ITER_S + plan._SWEEP_S * rows_trees
            run = 0.05 * (tune + draws) * it
            # 5% of this run, or of a default run of 2,000 iterations up to 0.5 s
            budget = max(run, min(0.5, 0.05 * 2000 * it))
            assert k * gfr <= budget * (1 + 1e-12)  # within the budget
            assert k == min(10, tune // 2) or (k + 1) * gfr > budget  # and no fewer
            if tune + draws == 2000:
                assert k * gfr <= 0.05 * 2000 * it * (1 + 1e-12)  # a default run: 5%


def test_the_step_takes_the_default_warm_start_from_the_cost_model(monkeypatch):
    from pymc_trees.bart.term import plan

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 3))
    y = 3 * X[:, 0] + rng.normal(0, 0.3, 200)
    # grow-from-root priced at a second a row: the default runs none of it
    monkeypatch.setattr(plan, "_GFR_S", 1.0)
    with pm.Model():
        f = BARTTree("f", X, y, m=20)
        pm.Normal("y", f, 0.3, observed=y)
        idata = pm.sample(draws=5, tune=8, chains=1, random_seed=1, progressbar=False,
                          discard_tuned_samples=False, compute_convergence_checks=False)
    assert not idata.warmup_sample_stats["warm_start"].values.any()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cgm", "pg"])
def test_burn_in_holds_the_trees_for_the_rest_of_tuning(kind):
    """After ``burn_in`` tuning iterations the tree step returns the point unchanged (f, its
    forest) while the noise step goes on; every kept draw updates the trees; ``burn_in=None``
    updates them throughout; with a NUTS variable in the model nothing is held (NUTS adapts
    around the moving trees); a bad value is refused."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(150, 3))
    x2 = rng.normal(size=150)
    y = 3 * X[:, 0] + 0.5 * x2 + rng.normal(0, 0.3, 150)

    def fit(nuts=False, **opts):
        with pm.Model():
            f = BARTTree("f", X, y, m=10, sampler=kind)
            mu = f + pm.Normal("beta", 0, 1) * x2 if nuts else f
            s2 = pm.InverseGamma("sigma2", 2.0, 0.2)
            pm.Normal("y", mu, pm.math.sqrt(s2), observed=y)
            return pm.sample(draws=15, tune=60, chains=1, random_seed=4, progressbar=False,
                             discard_tuned_samples=False, compute_convergence_checks=False,
                             **{f"{kind}_tree": opts})

    idata = fit(burn_in=25)
    held = idata.warmup_sample_stats["trees_held"].values[0]
    assert not held[:25].any() and held[25:].all()
    assert not idata.sample_stats["trees_held"].values.any()
    fw = idata.warmup_posterior["f"].values[0]
    assert np.all(fw[25:] == fw[24])  # held: the last updated f
    assert np.ptp(fw[15:25], axis=0).max() > 0  # updated before
    assert np.ptp(idata.warmup_posterior["sigma2"].values[0, 25:]) > 0  # the noise goes on
    leaves = idata.warmup_sample_stats["mean_leaves"].values[0]
    assert np.all(leaves[25:] == leaves[24])
    fd = idata.posterior["f"].values[0]
    assert np.ptp(fd, axis=0).max() > 0 and not np.all(fd[0] == fw[-1])
    np.testing.assert_array_equal(idata.posterior["f"].values,
                                  fit(burn_in=25).posterior["f"].values)  # reproducible
    assert not fit(burn_in=None).warmup_sample_stats["trees_held"].values.any()
    with_nuts = fit(nuts=True, burn_in=25)
    assert "step_size" in with_nuts.warmup_sample_stats  # beta went to NUTS
    assert not with_nuts.warmup_sample_stats["trees_held"].values.any()
    for bad in (0, 2.5, True, -3):
        with pytest.raises(ValueError, match="burn_in must be a positive integer"):
            fit(burn_in=bad)
