"""Mixture likelihoods of a tree term through the general tree step (issue 48, item 5).

A mixture's log density is elementwise in the term (row i depends on f_i only), but its
parameter check covers the weights, of shape (K,), next to a log density of shape (n,): the
step's row-by-row form of PyMC's checks (``switch(condition_i, logp_i, -inf)``) broadcast the
weights against the rows and failed with "Incompatible Elemwise input shapes" when the step
was built.  Such a condition is now applied whole, ``all(condition)``, as PyMC does.

* Exact enumeration, m = 1 on 6 rows (as tests/bart/test_general.py): the posterior over the 32
  row partitions is the tree prior times, per leaf, a one-dimensional integral of the
  likelihood against the leaf prior; the sampled partitions must match it within the
  N_eff-based tolerance of the other enumeration tests, and the posterior mean of f at every
  row within 4 Monte Carlo standard errors.  A mixture's leaf integrand can have two modes
  (f near y and near y - 2), so the integral is a sum on a fine grid rather than quadrature
  around one mode.  The chains run the sweep kernel on the row graph that the tree step
  compiles from the PyMC model (what ``pm.sample`` runs, without its overhead of about 2 ms a draw).
* Weights whose length PyTensor does not know (``pm.Data``): the row log density equals
  PyMC's, and weights outside their support make every row -inf, as in PyMC.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special, stats

import pymc_trees as pmt
from enumeration import X6, check_cells, six_row_prior
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs

# one step between rows 2 and 3: the trees mix well on it (with an isolated middle row, as in
# tests/bart/test_general.py's data, the chains kept one tree shape for thousands of sweeps)
Y6 = np.array([0.4, 0.1, 0.3, -2.6, -2.9, -2.3])
ALPHA, BETA, LEAF_SD = 0.95, 1.0, 1.0
MOVES = {"grow": 0.25, "prune": 0.25, "change": 0.4, "swap": 0.1}
GRID = np.linspace(-12.0, 12.0, 24001)  # step 0.001; a row's peak is 0.5 wide or more


def grid_posterior(prior: dict, row) -> tuple[dict, np.ndarray]:
    """Exact posterior over the row partitions of one tree and the posterior mean of f at
    every row, each leaf's integral ``int prod_i p(y_i | mu) Normal(mu; 0, LEAF_SD^2) dmu``
    (and its first moment) summed on ``GRID``.

    Parameters
    ----------
    prior : dict
        Prior probability of every partition (a frozenset of tuples of row indices).
    row : callable
        ``row(i, mu)``, row i's log-likelihood at the leaf values ``mu`` (an array).

    Returns
    -------
    tuple
        ``(posterior, f_mean)``: a dict over the partitions and an array of shape (6,).
    """
    cache, logs = {}, {}
    prior_ll = stats.norm.logpdf(GRID, 0.0, LEAF_SD)
    for part, p in prior.items():
        total = np.log(p)
        for rows in part:
            if rows not in cache:
                lw = prior_ll + sum(row(i, GRID) for i in rows)
                top = lw.max()
                w = np.exp(lw - top)
                z = np.trapezoid(w, GRID)
                cache[rows] = (top + np.log(z), np.trapezoid(GRID * w, GRID) / z)
            total += cache[rows][0]
        logs[part] = total
    top = max(logs.values())
    norm = sum(np.exp(v - top) for v in logs.values())
    post = {k: float(np.exp(v - top) / norm) for k, v in logs.items()}
    f_mean = np.zeros(len(X6))
    for part, pc in post.items():
        for rows in part:
            f_mean[list(rows)] += pc * cache[rows][1]
    return post, f_mean


def run_chains(compiled, draws: int, tune: int = 300) -> tuple:
    """Two chains (seeds 11 and 12) of the general sweep kernel on one tree over ``X6``.

    Parameters
    ----------
    compiled : tuple
        ``(rows_fn, pre)``, the row callback and its frontier values.
    draws, tune : int
        Sweeps kept and discarded per chain.

    Returns
    -------
    tuple
        ``(parts, fs)``: per chain the row partition of every kept sweep, and the values of f,
        shape (2, draws, 6).
    """
    cp = move_cumulative_probs(MOVES)
    parts, fs = [], []
    for seed in (11, 12):
        smp = ForestSampler(X6, TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0,
                            LEAF_SD)
        rng = np.random.default_rng(seed)
        chain, values = [], []
        for it in range(tune + draws):
            smp.general_sweep(rng, None, cp, compiled)
            if it >= tune:
                leaf = smp.forest.leaf_of_row[0]
                chain.append(frozenset(tuple(int(i) for i in np.flatnonzero(leaf == k))
                                       for k in np.unique(leaf)))
                values.append(smp.values())
        parts.append(chain)
        fs.append(values)
    return parts, np.array(fs)


def check_posterior(parts, fs, row) -> None:
    """Assert that the sampled partitions and mean of f match :func:`grid_posterior`.

    Parameters
    ----------
    parts : list
        Per chain, the row partition of every draw (:func:`run_chains`).
    fs : ndarray of shape (chains, draws, 6)
        The values of f.
    row : callable
        ``row(i, mu)``, row i's log-likelihood at the leaf values ``mu``.
    """
    prior = six_row_prior()
    post, f_mean = grid_posterior(prior, row)
    check_cells(parts, post, {k: prior[k] for k in post})
    se = np.asarray(az.mcse(fs)).ravel()
    got = fs.mean(axis=(0, 1))
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)


def mixture_row(w, mu_shift, sigma):
    """Row i's log-likelihood ``log sum_k w_k Normal(Y6[i]; mu + mu_shift[k], sigma[k])``.

    Parameters
    ----------
    w, mu_shift, sigma : sequence of float
        The components' weights, shifts of their means from the leaf value, and scales.

    Returns
    -------
    callable
        ``row(i, mu)`` for an array of leaf values ``mu``.
    """
    def row(i, mu):
        return special.logsumexp([np.log(w[k]) + stats.norm.logpdf(Y6[i], mu + mu_shift[k],
                                                                   sigma[k])
                                  for k in range(len(w))], axis=0)
    return row


def general_step(likelihood):
    """A one-tree model over ``X6`` with observed ``likelihood(f)`` and its tree step, built
    as ``pm.sample`` builds it; asserts that the step is the general one and runs the row graph
    in the sweep kernel.

    Parameters
    ----------
    likelihood : callable
        Adds the observed variable to the model, given the tree term ``f``.

    Returns
    -------
    tuple
        ``(step, model)``.
    """
    with pm.Model() as model:
        f = pmt.BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=LEAF_SD, min_leaf=1)
        likelihood(f)
        step = pmt.CGMTreeStep([f])
    lik = step.likelihood
    assert lik.family == "general" and lik.rows is not None, lik.rows_reason
    return step, model


@pytest.mark.slow
def test_a_normal_mixture_of_the_term_matches_enumeration():
    """``NormalMixture(w, mu=stack([f, f + 2]), sigma)`` with unequal weights and scales (a
    row's likelihood has two modes, f = y and f = y - 2): the partitions and the mean of f
    follow the exact posterior of the mixture likelihood.  8,000 sweeps per chain: N_eff 723
    of the five most probable cells, tolerance 0.13 against TV(prior, posterior) / 3 = 0.18."""
    w, s = np.array([0.3, 0.7]), np.array([0.5, 0.8])
    step, model = general_step(
        lambda f: pm.NormalMixture("y", w=w, mu=pt.stack([f, f + 2.0], axis=-1), sigma=s,
                                   observed=Y6))
    parts, fs = run_chains(step.likelihood.compiled(model.initial_point()), draws=8000)
    check_posterior(parts, fs, mixture_row(w, [0.0, 2.0], s))


@pytest.mark.slow
def test_a_mixture_of_component_distributions_matches_enumeration():
    """``Mixture(w, comp_dists=[Normal.dist(f, s), Normal.dist(f + 1.5, s)])``, PyMC's
    general mixture: the same exact check (N_eff 963, tolerance 0.12 against 0.19), and
    ``pm.sample`` runs the step."""
    w, s = np.array([0.6, 0.4]), 0.7
    step, model = general_step(
        lambda f: pm.Mixture("y", w=w, comp_dists=[pm.Normal.dist(f, s),
                                                   pm.Normal.dist(f + 1.5, s)], observed=Y6))
    parts, fs = run_chains(step.likelihood.compiled(model.initial_point()), draws=8000)
    check_posterior(parts, fs, mixture_row(w, [0.0, 1.5], [s, s]))
    with model:
        idata = pm.sample(draws=20, tune=20, chains=1, cores=1, step=[step], random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    assert np.all(np.isfinite(idata.posterior["f"].values))


def test_mixture_weights_of_unknown_length_are_checked_whole():
    """Weights in ``pm.Data`` have no static length, so the step reads it at the model's
    point: the row log density and its derivative equal PyMC's and numpy's, and weights
    outside their support make every row -inf (PyMC's check, applied whole)."""
    from pymc_trees.bart.likelihood.structure import general_likelihood

    with pm.Model() as model:
        f = pmt.BARTTree("f", X6, m=1, leaf_sd=LEAF_SD, min_leaf=1)
        w = pm.Data("w", np.array([0.3, 0.7]))
        pm.NormalMixture("y", w=w, mu=pt.stack([f, f + 2.0], axis=-1), sigma=[0.5, 0.5],
                         observed=Y6)
    lik = general_likelihood(model, f, 6)
    assert lik.rows is not None, lik.rows_reason
    fv = np.random.default_rng(3).normal(0.0, 1.0, 6)
    point = model.initial_point()
    ll, g, _ = lik.evaluate(point, fv)
    ref = model.compile_logp(sum=False, vars=[model["y"]])({**point, lik.f_name: fv})[0]
    np.testing.assert_allclose(ll, ref, rtol=1e-12)
    # d/df log sum_k w_k N(y; f + c_k, s) = sum_k r_k (y - f - c_k) / s^2, r the responsibilities
    resid = Y6[:, None] - fv[:, None] - [0.0, 2.0]
    comp = np.log([0.3, 0.7]) + stats.norm.logpdf(resid, 0.0, 0.5)
    resp = np.exp(comp - special.logsumexp(comp, axis=1, keepdims=True))
    np.testing.assert_allclose(g, (resp * resid).sum(axis=1) / 0.25, rtol=1e-8)
    w.set_value(np.array([-0.1, 1.1]))
    assert np.all(np.isneginf(lik.evaluate(point, fv)[0]))
