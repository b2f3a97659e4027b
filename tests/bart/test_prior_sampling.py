"""``pm.sample`` on a tree term that no density depends on (issue 48, item 6): the tree step
draws the forest afresh from its prior every iteration.

Before, PyMC's step assignment stopped with pytensor's ``DisconnectedInputError``: it
differentiates the model's log density in every free variable, and the term's log density
(0) did not depend on its value.

Draws of a term drawn from its prior are independent from iteration to iteration (its
hyperparameters learned inside the step, the leaf scale of ``leaf_sd="learned"`` and DART's
split probabilities, are drawn afresh from their priors too), so the tolerances below are
those of independent draws: 4 standard errors for means, and for Kolmogorov-Smirnov
distances the alpha = 0.001 bound, ``1.95 / sqrt(N)`` for one sample of N and
``1.95 sqrt((N1 + N2) / (N1 N2))`` for two.  Hyperparameters that are model variables are
updated from their conditionals given the drawn trees (a Gibbs sampler of the joint prior),
so their tolerances use the effective sample size instead.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_trees as pmt

# one column, ten distinct values, min_leaf = 5: the root's only available rule is the cut
# between rows 4 and 5, and a child of five rows cannot split, so a tree is a single leaf
# (probability 1 - alpha) or that split (alpha)
X10 = np.arange(10.0)[:, None]
ALPHA = 0.95


def _sample(draws: int, chains: int, seed: int, **kw):
    return pm.sample(draws=draws, tune=10, chains=chains, cores=1, random_seed=seed,
                     progressbar=False, compute_convergence_checks=False, **kw)


def _ks2_bound(n1: int, n2: int) -> float:
    return 1.95 * np.sqrt((n1 + n2) / (n1 * n2))


def test_a_term_nothing_observes_is_drawn_from_its_tree_prior():
    """With a fixed leaf sd s and m trees, f at any row is ``Normal(0, m s^2)`` (each tree
    puts one ``Normal(0, s^2)`` leaf at each row), and on ``X10`` each tree splits with
    probability alpha, independently.  4,000 independent draws (2 chains): the mean and
    variance of f at row 0 within 4 standard errors of 0 and ``m s^2``; rows 0 and 4 share
    their leaf in every tree (equal f), rows 0 and 9 only in unsplit trees; the share of
    split trees within 4 binomial standard errors of alpha; lag-1 autocorrelation of f
    within 4 / sqrt(N) of 0 (fresh draws, not a chain that holds its trees).  The stats of
    the moves are NaN floats, and ``pmt.predict`` gives the traced values."""
    m, s, N = 5, 0.5, 4000
    with pm.Model():
        f = pmt.BARTTree("f", X10, m=m, leaf_sd=s, min_leaf=5, alpha=ALPHA)
        idata = _sample(N // 2, 2, 11)
    F = idata.posterior["f"].values  # (chain, draw, row)
    f0 = F[:, :, 0].ravel()
    var = m * s**2
    assert abs(f0.mean()) < 4 * np.sqrt(var / N), f0.mean()
    # Var of a sample variance of N Normal draws: 2 var^2 / (N - 1)
    assert abs(f0.var(ddof=1) - var) < 4 * var * np.sqrt(2 / (N - 1)), f0.var(ddof=1)
    np.testing.assert_array_equal(F[:, :, 0], F[:, :, 4])
    assert np.mean(F[:, :, 0] != F[:, :, 9]) > 0.99
    sizes = idata.forests["f_tree_size"].values  # 1 (a leaf) or 3 nodes
    assert set(np.unique(sizes)) <= {1, 3}
    split = np.mean(sizes == 3)
    assert abs(split - ALPHA) < 4 * np.sqrt(ALPHA * (1 - ALPHA) / sizes.size), split
    np.testing.assert_allclose(idata.sample_stats["mean_leaves"].values,
                               ((sizes + 1) / 2).mean(axis=-1))
    for c in range(2):
        x = F[c, :, 0]
        r1 = np.corrcoef(x[:-1], x[1:])[0, 1]
        assert abs(r1) < 4 / np.sqrt(x.size), r1
    for mv in ("grow", "prune", "change", "swap", "leaf"):
        stat = idata.sample_stats[f"accept_{mv}"]
        assert stat.dtype == np.float64 and np.all(np.isnan(stat.values))
    assert not idata.sample_stats["warm_start"].values.any()
    np.testing.assert_array_equal(np.asarray(pmt.predict(idata, X10)), F)


def test_learned_scale_and_dart_are_drawn_from_their_priors_with_the_trees():
    """The default term with Y (a leaf scale learned inside the step, DART) on three
    columns: f at a row, and the difference of f at two rows (which depends on how often
    the trees separate them, so on the split probabilities), 1,500 draws against 800 of
    ``pm.sample_prior_predictive`` by two-sample KS; the ``leaf_sd`` stat squared against
    its prior ``IG(3, 2 sd0^2)`` and DART's ``u = alpha / (alpha + p)`` against
    ``Beta(0.5, 1)`` by KS; each column's split probability with mean 1/p (4 standard
    errors, ``Var s_c <= (1/p)(1 - 1/p)``)."""
    rng = np.random.default_rng(5)
    n, p, m, N, N_ref = 60, 3, 5, 1500, 800
    X = rng.uniform(size=(n, p))
    Y = np.sin(4 * X[:, 0]) + rng.normal(scale=0.3, size=n)
    sd0 = (Y.max() - Y.min()) / (2 * 2.0 * np.sqrt(m))  # the calibration, k = 2
    with pm.Model():
        pmt.BARTTree("f", X, Y, m=m)
        idata = _sample(N, 1, 21)
        prior = pm.sample_prior_predictive(draws=N_ref, random_seed=22)
    F = idata.posterior["f"].values.reshape(N, n)
    G = prior.prior["f"].values.reshape(N_ref, n)
    bound = _ks2_bound(N, N_ref)
    for stat_of in (lambda A: A[:, 0], lambda A: A[:, 0] - A[:, 1], lambda A: A[:, 7] - A[:, 30]):
        d = stats.ks_2samp(stat_of(F), stat_of(G)).statistic
        assert d < bound, (d, bound)
    v = idata.sample_stats["f_leaf_sd"].values.ravel() ** 2
    assert np.unique(v).size == N
    d = stats.kstest(v, stats.invgamma(3.0, scale=2 * sd0**2).cdf).statistic
    assert d < 1.95 / np.sqrt(N), d
    alpha = idata.sample_stats["f_split_alpha"].values.ravel()
    d = stats.kstest(alpha / (alpha + p), stats.beta(0.5, 1.0).cdf).statistic
    assert d < 1.95 / np.sqrt(N), d
    probs = idata.sample_stats["f_split_probs"].values.reshape(N, p)
    np.testing.assert_array_less(np.abs(probs.mean(0) - 1 / p),
                                 4 * np.sqrt((1 / p) * (1 - 1 / p) / N))


def test_hyperparameters_that_are_model_variables_keep_their_prior():
    """A leaf variance ``v ~ IG(3, 0.18)`` (``leaf_sd=sqrt(v)``) and split probabilities
    ``s ~ Dirichlet(1, 1)`` as model variables: the trees are drawn from the prior given
    their current values, and they are updated from their conditionals given the trees, so
    the chain of (v, s, trees) keeps the joint prior.  The prior CDF of each is uniform:
    its mean within 4 standard errors of 1/2 (variance 1/12 over the ESS); f at a row has
    variance ``m E v`` (4 standard errors, with the ESS of f^2)."""
    m, a, b = 5, 3.0, 0.18
    X = np.column_stack([X10[:, 0], X10[::-1, 0] ** 2])
    with pm.Model():
        v = pm.InverseGamma("v", alpha=a, beta=b)
        s = pm.Dirichlet("s", a=np.ones(2))
        pmt.BARTTree("f", X, m=m, leaf_sd=pt.sqrt(v), split_prior=s, min_leaf=2)
        idata = _sample(1500, 2, 31)
    post = idata.posterior
    for u in (stats.invgamma(a, scale=b).cdf(post["v"].values),
              post["s"].values[..., 0]):  # s_0 ~ Beta(1, 1): its own CDF
        ess = float(az.ess(u))
        assert ess > 200, ess
        assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / ess), (u.mean(), ess)
    f2 = post["f"].values[:, :, 3] ** 2
    ess = float(az.ess(f2))
    se = f2.std() / np.sqrt(ess)
    assert abs(f2.mean() - m * b / (a - 1)) < 4 * se, (f2.mean(), se)


@pytest.mark.parametrize("kind", ["pg", "outputs", "shared_outputs", "deterministic_and_nuts"])
def test_other_terms_nothing_observes_are_drawn_from_their_prior(kind):
    """Particle Gibbs, a term of shape (2, n) (separate or shared trees), and a term that
    only enters a Deterministic in a model whose other variable NUTS samples: f at row 0 of
    every output is ``Normal(0, m s^2)`` (mean and variance within 4 standard errors of
    1,000 independent draws), two outputs are uncorrelated (4 / sqrt(N)), and
    ``pmt.predict`` gives the traced values."""
    m, s, N = 5, 0.5, 1000
    shape = (2, 10) if "outputs" in kind else None
    with pm.Model():
        f = pmt.BARTTree("f", X10, m=m, leaf_sd=s, min_leaf=5, shape=shape,
                         sampler="pg" if kind == "pg" else None,
                         separate_trees=kind != "shared_outputs")
        if kind == "deterministic_and_nuts":
            mu = pm.Deterministic("mu", f + 1.0)
            c = pm.Normal("c")
            pm.Normal("y", c, 1.0, observed=np.ones(5))
        idata = _sample(N, 1, 41)
    F = idata.posterior["f"].values[0]
    if kind == "deterministic_and_nuts":
        np.testing.assert_allclose(idata.posterior["mu"].values[0], F + 1.0)
        assert "diverging" in idata.sample_stats  # c was sampled by NUTS
    F0 = F[..., 0].reshape(N, -1)
    var = m * s**2
    for j in range(F0.shape[1]):
        x = F0[:, j]
        assert abs(x.mean()) < 4 * np.sqrt(var / N), (j, x.mean())
        assert abs(x.var(ddof=1) - var) < 4 * var * np.sqrt(2 / (N - 1)), (j, x.var())
    if shape is not None:
        r = np.corrcoef(F0[:, 0], F0[:, 1])[0, 1]
        assert abs(r) < 4 / np.sqrt(N), r
    np.testing.assert_array_equal(np.asarray(pmt.predict(idata, X10))[0], F)


def test_a_free_variable_or_potential_that_depends_on_the_term_is_still_refused():
    """Only a term that no density depends on is drawn from its prior: a free variable or a
    potential that depends on it would need the term's conditional given them, which the
    tree steps do not sample, and is refused with the reason."""
    for add in (lambda f: pm.Normal("z", mu=f.sum()),
                lambda f: pm.Potential("z", -pt.sum(f**2))):
        with pm.Model():
            f = pmt.BARTTree("f", X10, m=2, leaf_sd=0.5, min_leaf=5)
            add(f)
            with pytest.raises(pmt.ModelStructureError, match="'z' depends on 'f'"):
                _sample(5, 1, 51)
