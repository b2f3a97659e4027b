"""Prior draws and prior recovery.

* Independent prior trees (the kernel behind ``pm.sample_prior_predictive``) against the
  enumerated prior over partitions.
* With data that carry no information (a huge fixed sigma) the tree samplers must reproduce
  the prior: leaf-count and depth frequencies of their trees against independent prior draws.
* ``pm.sample_prior_predictive`` draws whole forests: f(x) has mean offset and variance
  m * leaf_sd^2 at every row, and varies across rows.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_trees as pmt
from enumeration import enumerate_row_trees, forest_row_partitions, total_variation, tv_tolerance
from pymc_trees.core.binning import bin_data, make_cutpoints
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior


def test_prior_tree_draws_match_enumerated_prior():
    X = np.array([[a, b] for a in range(3) for b in range(2)], dtype=float)
    cuts, ncuts = make_cutpoints(X, 100)
    exact = {}
    for lp, part in enumerate_row_trees(bin_data(X, cuts, ncuts), ncuts, 1, 0.95, 1.0, (1.0, 2.0)):
        exact[part] = exact.get(part, 0.0) + math.exp(lp)
    fs = ForestSampler(X, TreePrior(m=20000, min_leaf=1, beta=1.0, split_prior=(1.0, 2.0)),
                       0.0, 1.0)
    forest = fs.sample_prior(np.random.default_rng(7))
    packed = _pack(fs, forest)
    freq = {}
    for part in forest_row_partitions(packed, X):
        freq[part] = freq.get(part, 0.0) + 1 / 20000
    # independent draws: N_eff = 20000
    assert total_variation(freq, exact) < tv_tolerance(exact, 20000)


def _pack(fs, forest):
    fs.forest = forest
    return fs.pack()


def _tree_shape_freqs(var, depth, n_nodes):
    """Per-tree (leaf count capped at 6, depth capped at 4) frequencies."""
    cells = {}
    for t in range(var.shape[0]):
        leaves = var[t, : n_nodes[t]] == -1
        key = (min(int(leaves.sum()), 6), min(int(depth[t, : n_nodes[t]][leaves].max()), 4))
        cells[key] = cells.get(key, 0) + 1
    return cells


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["cgm", "growprune", "pg"])
def test_prior_recovery_with_uninformative_data(sampler):
    rng = np.random.default_rng(8)
    n, m = 80, 10
    X = rng.uniform(size=(n, 3))
    X[:, 2] = rng.integers(0, 3, size=n)  # a feature with few values
    y = rng.normal(size=n)
    prior = TreePrior(m=m, min_leaf=3, alpha=0.95, beta=1.0)
    # independent prior draws of the same prior
    fs = ForestSampler(X, TreePrior(m=20000, min_leaf=3, alpha=0.95, beta=1.0), 0.0, 1.0)
    ref = fs.sample_prior(np.random.default_rng(9))
    ref_cells = _tree_shape_freqs(ref.var, ref.depth, ref.n_nodes)
    p_ref = {k: v / 20000 for k, v in ref_cells.items()}

    with pm.Model():
        f = pmt.BARTTree("f", X, m=m, alpha=prior.alpha, beta=prior.beta, leaf_sd=1.0,
                         min_leaf=prior.min_leaf)
        pm.Normal("y", mu=f, sigma=1e6, observed=y)
        step = {"cgm": pmt.CGMTreeStep([f]),
                "growprune": pmt.CGMTreeStep([f], move_probs={"grow": 0.5, "prune": 0.5}),
                "pg": pmt.PGTreeStep([f], num_particles=10)}[sampler]
        idata = pm.sample(draws=3000, tune=200, chains=2, cores=1, random_seed=10, step=step,
                          progressbar=False, compute_convergence_checks=False)
    forests = pmt.forests(idata, "f").values
    counts = {}
    per_tree_series = np.zeros((2, 3000, m))
    for c in range(2):
        for d in range(3000):
            fr = forests[c, d]
            for t in range(m):
                s, e = fr.start[t], fr.start[t + 1]
                leaves = int((fr.feature[s:e] < 0).sum())
                per_tree_series[c, d, t] = leaves
                key = (min(leaves, 6), min(_depth(fr, t), 4))
                counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    freq = {k: v / total for k, v in counts.items()}
    # trees are independent under the prior; N_eff = m * (smallest per-tree ESS of leaf count)
    n_eff = m * min(float(az.ess(per_tree_series[:, :, t])) for t in range(m))
    n_comb = 1 / (1 / n_eff + 1 / 20000)
    tv = total_variation(freq, p_ref)
    assert tv < tv_tolerance(p_ref, n_comb), (tv, n_eff)


def _depth(fr, t):
    s = fr.start[t]
    best = 0
    stack = [(s, 0)]
    while stack:
        k, d = stack.pop()
        if fr.feature[k] < 0:
            best = max(best, d)
        else:
            stack += [(fr.left[k], d + 1), (fr.right[k], d + 1)]
    return best


@pytest.mark.slow
def test_prior_predictive_draws_whole_forests():
    rng = np.random.default_rng(11)
    X = rng.uniform(size=(40, 2))
    y = rng.normal(size=40) * 3
    m, k = 25, 2.0
    with pm.Model():
        # constant leaves: a linear leaf's variance changes with the row (b0 + b1 z)
        f = pmt.BARTTree("f", X, m=m, Y=y, k=k, response="constant")
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        prior = pm.sample_prior_predictive(draws=4000, random_seed=12)
    draws = prior.prior["f"].values.reshape(-1, 40)
    offset, leaf_sd = pmt.leaf_calibration(y, k=k, m=m)
    # exact: given the learned leaf variance v ~ InverseGamma(3, 2 leaf_sd^2) (the default,
    # mean leaf_sd^2), f(x_i) is a sum of m independent N(0, v) leaf values + offset, so
    # Var f(x_i) = m leaf_sd^2 whatever the trees' splits (equal or DART)
    sd_f = math.sqrt(m) * leaf_sd
    assert np.all(np.abs(draws.mean(0) - offset) < 4 * sd_f / math.sqrt(4000))
    # the variance estimate from 4000 draws of a scale mixture of normals: E f^4 / sd_f^4 =
    # 3 E v^2 / (E v)^2 = 6 at shape 3, so its relative sd is sqrt((6 - 1) / 4000) = 0.035
    assert np.all(np.abs(draws.var(0) / sd_f**2 - 1) < 4 * math.sqrt(5 / 4000))
    assert np.all(draws.std(1) > 0)  # not constant across rows
