"""Linear leaves in the general tree step (``response="linear"`` with a likelihood that has no
exact augmentation; :mod:`pymc_trees.bart.kernels.general_linear`).

Exact posterior of one tree by quadrature: two columns, each taking four values 0..3, and
``numcut=1`` leaves one cut per column (at 1.5), so the tree is a single constant leaf
``b ~ N(0, s^2)`` or the split on one column into two linear leaves ``b0 + b1 z``,
``b0, b1 ~ N(0, s^2 / 2)``, with z that column standardised on the training rows.  The
children cannot split again: within a child the other column's cut leaves 4 rows on one
side and 2 on the other, below ``min_leaf = 4``.  The constant leaf's integral is 1-D,
each linear leaf's 2-D, on grids (the integrands are smooth and the trapezoid rule on a fine
uniform grid converges fast; checked against a finer grid)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_trees as pmt
from enumeration import check_cells

XV = np.repeat(np.arange(4.0), 3)  # three rows at each x value
X2 = np.column_stack([XV, np.tile(np.arange(4.0), 3)])  # a second column, crossed with it
# counts rising in column 0 (one leaf 0.37, split on column 0 0.59, on column 1 0.04), and
# in both (0.001, 0.41, 0.59: the change move carries the chain between the two splits)
Y_POIS = {"one column": np.array([1, 0, 2, 1, 2, 1, 2, 3, 2, 4, 3, 5]),
          "both columns": np.array([0, 1, 0, 3, 0, 2, 6, 7, 1, 1, 12, 5])}
SD, ALPHA = 0.8, 0.3


def poisson_exact(y, G: int = 601, lim: float = 6.0, mix: bool = False):
    """(posterior of the three trees: one leaf, split on column 0, split on column 1; the
    posterior mean of f and of f^2 at every row).  With ``mix`` (``response="mix"``: the
    tree's kind linear or constant with prior 1/2 each) the split trees are five cells: one
    leaf (whose kind changes nothing), and ``(v, "linear")``, ``(v, "constant")`` for the
    split on column v, the constant children ``b ~ N(0, s^2)``."""
    grid = np.linspace(-lim, lim, G)
    dz = grid[1] - grid[0]
    n = len(y)

    def lik(eta, rows):  # eta broadcast against rows on the last axis
        return np.exp(np.sum(stats.poisson.logpmf(y[rows], np.exp(eta)), axis=-1))

    w0 = stats.norm.pdf(grid, 0.0, SD) * dz
    L0 = lik(grid[:, None], np.arange(n))
    evid = {"leaf": float(np.sum(w0 * L0))}
    first = {"leaf": np.full(n, np.sum(w0 * L0 * grid) / evid["leaf"])}
    second = {"leaf": np.full(n, np.sum(w0 * L0 * grid**2) / evid["leaf"])}
    B0, B1 = np.meshgrid(grid, grid, indexing="ij")
    w2 = (stats.norm.pdf(B0, 0.0, SD / np.sqrt(2)) * stats.norm.pdf(B1, 0.0, SD / np.sqrt(2))
          * dz * dz)
    for v in (0, 1):
        z = (X2[:, v] - X2[:, v].mean()) / X2[:, v].std()
        evid[v], first[v], second[v] = 1.0, np.zeros(n), np.zeros(n)
        for side in (X2[:, v] < 1.5, X2[:, v] > 1.5):
            rows = np.flatnonzero(side)
            L = lik(B0[..., None] + B1[..., None] * z[rows], rows)
            integral = float(np.sum(w2 * L))
            evid[v] *= integral
            for i in rows:
                fx = B0 + B1 * z[i]
                first[v][i] = np.sum(w2 * L * fx) / integral
                second[v][i] = np.sum(w2 * L * fx**2) / integral
    prior = {"leaf": 1 - ALPHA, 0: ALPHA / 2, 1: ALPHA / 2}
    if mix:
        for v in (0, 1):
            key = (v, "constant")
            evid[key], first[key], second[key] = 1.0, np.zeros(n), np.zeros(n)
            for side in (X2[:, v] < 1.5, X2[:, v] > 1.5):
                rows = np.flatnonzero(side)
                L = lik(grid[:, None], rows)
                integral = float(np.sum(w0 * L))
                evid[key] *= integral
                first[key][rows] = np.sum(w0 * L * grid) / integral
                second[key][rows] = np.sum(w0 * L * grid**2) / integral
            for d in (evid, first, second):
                d[(v, "linear")] = d.pop(v)
        prior = {"leaf": 1 - ALPHA, **{(v, kind): ALPHA / 4 for v in (0, 1)
                                       for kind in ("linear", "constant")}}
    post = {k: prior[k] * evid[k] for k in prior}
    total = sum(post.values())
    post = {k: v / total for k, v in post.items()}
    mean = sum(post[k] * first[k] for k in post)
    sq = sum(post[k] * second[k] for k in post)
    return post, prior, mean, sq


def _check_moments(idata, mean, sq):
    """The mean of f and of f^2 at every row within 4 Monte Carlo standard errors of the
    exact ones; returns f's draws (chain, draw, row)."""
    fs = idata.posterior["f"].values
    draws = np.concatenate([fs, fs**2], axis=2)
    exact = np.concatenate([mean, sq])
    got = draws.mean(axis=(0, 1))
    se = np.asarray(az.mcse(draws))
    assert np.all(np.abs(got - exact) < 4 * se), ((got - exact) / se).round(1)
    return fs


@pytest.mark.slow
@pytest.mark.parametrize("data", list(Y_POIS))
def test_quadrature_converged(data):
    for mix in (False, True):
        a = poisson_exact(Y_POIS[data], 601, 6.0, mix)
        b = poisson_exact(Y_POIS[data], 901, 7.0, mix)
        for k in a[0]:
            assert a[0][k] == pytest.approx(b[0][k], rel=1e-7)
        np.testing.assert_allclose(a[2], b[2], rtol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("data", list(Y_POIS))
def test_linear_leaves_in_the_general_step_match_quadrature(data):
    """Poisson with ``mu = exp(f)``, one tree of linear leaves over two columns, through
    pm.sample: the posterior of the tree (one leaf, or the split on either column, each with
    its own regressor; the change move switches between the two) within the N_eff-based
    tolerance of :func:`check_cells`, and the mean of f and of f^2 at every row within 4
    Monte Carlo standard errors; 12,000 draws per chain, two chains."""
    post, prior, mean, sq = poisson_exact(Y_POIS[data])
    with pm.Model():
        f = pmt.BARTTree("f", X2, m=1, leaf_sd=SD, alpha=ALPHA, numcut=1, min_leaf=4,
                         response="linear", split_prior="uniform")
        pm.Poisson("y", mu=pm.math.exp(f), observed=Y_POIS[data])
        idata = pm.sample(draws=12000, tune=300, chains=2, cores=1, random_seed=23,
                          progressbar=False, compute_convergence_checks=False)
    fr = pmt.forests(idata, "f").values
    parts = [["leaf" if fr[c, d].nodes.size == 1 else int(fr[c, d].nodes["feature"][0])
              for d in range(fr.shape[1])] for c in range(fr.shape[0])]
    check_cells(parts, post, prior)
    fs = _check_moments(idata, mean, sq)
    # the draws' forests hold the lines: predict gives the trace's values
    np.testing.assert_allclose(pmt.predict(idata, X2).values, fs, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_mix_of_linear_and_constant_trees_in_the_general_step_matches_quadrature():
    """``response="mix"`` with a Poisson likelihood: after its move the tree is proposed of
    the other kind (its leaves' coefficients from their Newton proposals), accepted with the
    exact log-likelihood.  The posterior over one leaf and the split on either column, each
    linear or constant, and the mean of f and f^2 at every row, against quadrature; 12,000
    draws per chain, two chains."""
    y = Y_POIS["one column"]
    post, prior, mean, sq = poisson_exact(y, mix=True)
    assert 0.1 < post[(0, "linear")] / (post[(0, "linear")] + post[(0, "constant")]) < 0.9
    with pm.Model():
        f = pmt.BARTTree("f", X2, m=1, leaf_sd=SD, alpha=ALPHA, numcut=1, min_leaf=4,
                         response="mix", split_prior="uniform")
        pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        idata = pm.sample(draws=12000, tune=300, chains=2, cores=1, random_seed=29,
                          progressbar=False, compute_convergence_checks=False)
    fr = pmt.forests(idata, "f").values

    def cell(forest):
        nodes = forest.nodes
        if nodes.size == 1:
            return "leaf"
        # a linear leaf stores its regressor as feature -2 - column, a constant one -1
        return (int(nodes["feature"][0]), "linear" if nodes["feature"][1] < -1 else "constant")

    parts = [[cell(fr[c, d]) for d in range(fr.shape[1])] for c in range(fr.shape[0])]
    check_cells(parts, post, prior)
    fs = _check_moments(idata, mean, sq)
    np.testing.assert_allclose(pmt.predict(idata, X2).values, fs, rtol=0, atol=1e-12)
