"""A term whose k outputs share their trees (``BARTTree(..., shape=(k, n),
separate_trees=False)``): one forest whose leaves hold k values, sampled by the general tree
step over the joint likelihood of the k outputs (:mod:`pymc_trees.bart.samplers.shared_sampler`).

The exact posterior of a small problem is computed on a grid: X takes two values, so a tree
is one leaf or the split between them (one cut, ``min_leaf = 1``: the root splits with prior
probability alpha and its children cannot).  With s of the m trees unsplit and leaf values
N(0, 1), output c at x is ``A_c + B_c(x)`` with ``A ~ N(0, s I)`` (the unsplit trees' sum,
shared by both x values) and ``B(x) ~ N(0, (m - s) I)`` (the split trees' own leaves),
independent.  The likelihood factorises over the x values given A, so per x the B integral
is a Gaussian blur of the likelihood on the grid, and the A integral a weighted sum."""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_trees as pmt
from enumeration import check_cells
from test_general import check_outputs_through_the_api
from pymc_trees.bart.term.plan import term_plan
from pymc_trees.bart.samplers.shared_sampler import SharedOutputSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior

X2 = np.tile([0.0, 1.0], 6)[:, None]  # rows alternate between the two x values
# heteroscedastic: x = 0 around 1 with sd 0.3, x = 1 around -0.5 with sd 1.5 (drawn so)
Y_HET = np.array([1.1, -1.31, 1.25, 0.37, 1.1, 0.05, 0.61, -0.06, 1.27, -0.46, 1.13, 0.32])
# the same, closer together (one tree: posterior probability of the split 0.88, prior 0.2)
Y_ONE = np.array([0.06, 2.16, -0.07, 1.74, 0.32, -0.24, 0.05, -0.92, -0.27, -0.15, 0.18, 0.65])
# two Normal outcomes with known sds (output 0 sd 0.5, output 1 sd 1), one row per x value
SD_NORMAL = np.array([0.5, 1.0])
Y_NORMAL = np.array([[0.77, -0.74], [0.11, 0.34], [0.77, -0.48], [-0.95, 1.1], [1.05, 0.04],
                     [-0.08, 0.21], [0.33, -0.78], [-0.01, 0.24], [0.78, 0.01], [-0.15, 0.22],
                     [0.61, 1.29], [-0.03, 1.51]])
# two quantiles (0.25 and 0.75, b = 1) of one outcome
Q_AL = np.array([0.25, 0.75])
Y_AL = np.array([-0.21, 0.38, 2.86, -2.04, -0.93, -1.9, 1.64, -0.27, 1.88, 0.32, 1.01, -0.12])
X_SOFT = np.tile([0.0, 1.0], 6)[:, None]
Y_SOFT = np.ravel(np.column_stack([[0, 0, 0, 0, 1, 2], [2, 2, 2, 1, 1, 0]]))


def het_loglik(u, y):
    """log prod_rows Normal(y; u[0], exp(u[1])) on a grid ``u`` of shape (2, ...)."""
    return sum(stats.norm.logpdf(v, u[0], np.exp(u[1])) for v in y)


def normal_loglik(u, y):
    """log prod_rows prod_c Normal(y[c]; u[c], SD_NORMAL[c])."""
    return sum(stats.norm.logpdf(v[0], u[0], SD_NORMAL[0])
               + stats.norm.logpdf(v[1], u[1], SD_NORMAL[1]) for v in y)


def quantile_loglik(u, y):
    """log prod_rows prod_c AsymmetricLaplace(y; mu=u[c], b=1, q=Q_AL[c]) (PyMC's density:
    kappa = sqrt(q / (1 - q)), ``log(b / (kappa + 1/kappa)) - b (y - mu) s kappa**s`` with
    s the sign of y - mu)."""
    kappa = np.sqrt(Q_AL / (1 - Q_AL))
    out = 0.0
    for v in y:
        for c in range(2):
            d = v - u[c]
            s = np.sign(d)
            out = out - np.log(kappa[c] + 1 / kappa[c]) - d * s * kappa[c] ** s
    return out


def softmax_loglik(u, y):
    """log prod_rows Categorical(y; softmax(u)) on a grid ``u`` of shape (k, ...)."""
    logp = u - special.logsumexp(u, axis=0, keepdims=True)
    return sum(logp[c] for c in y)


def grid_exact(loglik, X, y, m: int, k: int, alpha: float, G: int, lim: float = 6.0):
    """The exact posterior of the trees' splits and the posterior means of f and of f_a f_b at
    both x values (see the module's docstring), on a uniform grid of G points per output on
    [-lim, lim].  Returns (post, prior, mean (k, 2), cross (k, k, 2))."""
    z = np.linspace(-lim, lim, G)
    dz = z[1] - z[0]
    U = np.stack(np.meshgrid(*([z] * k), indexing="ij"))  # (k, G, ..., G)
    xs = (0.0, 1.0)
    L = []
    for x in xs:
        ll = loglik(U, y[X[:, 0] == x])
        L.append(np.exp(ll - ll.max()))  # per x a constant factor, the same for every pattern

    def blur(A, var):  # convolution with N(0, var I) on the grid, axis by axis
        if var == 0:
            return A
        Kg = stats.norm.pdf(z[:, None] - z[None, :], 0.0, np.sqrt(var)) * dz
        for ax in range(k):
            A = np.moveaxis(np.tensordot(Kg, A, axes=([1], [ax])), 0, ax)
        return A

    def weights(var):  # N(0, var I) at the grid's points as quadrature weights
        if var == 0:
            w = np.zeros_like(U[0])
            w[(G // 2,) * k] = 1.0  # z[G // 2] = 0
            return w
        return np.prod(stats.norm.pdf(U, 0.0, np.sqrt(var)), axis=0) * dz**k

    post, first, second = {}, {}, {}
    for s in range(m + 1):
        vo, w = m - s, weights(s)
        Lt = [blur(Lx, vo) for Lx in L]
        Z = float(np.sum(w * Lt[0] * Lt[1]))
        m1, m2 = np.zeros((k, 2)), np.zeros((k, k, 2))
        for xi in range(2):
            other = w * Lt[1 - xi] / Z
            for a in range(k):
                m1[a, xi] = np.sum(other * blur(L[xi] * U[a], vo))
                for b in range(k):
                    m2[a, b, xi] = np.sum(other * blur(L[xi] * U[a] * U[b], vo))
        post[s], first[s], second[s] = Z, m1, m2
    cells, prior = {}, {}
    for pattern in itertools.product((False, True), repeat=m):
        s = m - sum(pattern)
        pr = alpha ** (m - s) * (1 - alpha) ** s
        prior[pattern] = pr
        cells[pattern] = pr * post[s]
    total = sum(cells.values())
    cells = {p: v / total for p, v in cells.items()}
    by_s = {s: sum(v for p, v in cells.items() if m - sum(p) == s) for s in range(m + 1)}
    mean = sum(by_s[s] * first[s] for s in by_s)
    cross = sum(by_s[s] * second[s] for s in by_s)
    return cells, prior, mean, cross


def _splits(idata, name: str, m: int):
    """Per chain, per draw: which trees are split (from output 0's forest), after checking
    that every output's forest has the same trees."""
    fr = pmt.forests(idata, name).values  # (chain, draw, output)
    parts = []
    for c in range(fr.shape[0]):
        chain = []
        for d in range(fr.shape[1]):
            outs = fr[c, d]
            first = outs[0].nodes
            for o in outs[1:]:
                np.testing.assert_array_equal(o.start, outs[0].start)
                for field in ("feature", "left", "threshold"):
                    np.testing.assert_array_equal(o.nodes[field], first[field])
            st = outs[0].start
            chain.append(tuple(bool(st[t + 1] - st[t] > 1) for t in range(m)))
        parts.append(chain)
    return parts


CASES = {
    # likelihood, X, y, m, k, alpha, grid points per output
    "heteroscedastic": (het_loglik, X2, Y_HET, 2, 2, 0.2, 241),
    "heteroscedastic, one tree": (het_loglik, X2, Y_ONE, 1, 2, 0.2, 241),
    "softmax": (softmax_loglik, X_SOFT, Y_SOFT, 1, 3, 0.5, 81),
    # likelihoods that factorise over the outputs, conjugate given the latent variables: the
    # leaf vectors are integrated out jointly (SharedOutputSampler.conjugate_sweep)
    "two Normal outcomes": (normal_loglik, X2, Y_NORMAL, 2, 2, 0.2, 241),
    "two quantiles": (quantile_loglik, X2, Y_AL, 2, 2, 0.2, 241),
}
CONJUGATE = ("two Normal outcomes", "two quantiles")
# (draws per chain, sweeps per draw)
DRAWS = {"heteroscedastic": (3000, 5), "heteroscedastic, one tree": (3000, 5),
         "softmax": (3000, 5), "two Normal outcomes": (3000, 5), "two quantiles": (2000, 5)}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_shared_trees_match_the_exact_posterior(case):
    """Through pm.sample: the posterior of which trees split, the mean of every output and of
    the product of every two outputs at both x values, against the grid.  Heteroscedastic:
    ``Normal(y; f[0], exp(f[1]))``, m = 2 trees with two values per leaf, and m = 1 on data
    whose split is less certain; softmax: three class logits, m = 1; two Normal outcomes, each
    output in a likelihood of its own, with the offset set from Y (the grid then sees
    y - offset and f - offset is checked), and two quantiles of one outcome in one (2, n)
    likelihood, m = 2.  Two chains of ``DRAWS`` (15,000 or 10,000 sweeps each, 12,000 of
    one sweep a draw before; the cells' N_eff 469 to 3,582, at least 3 times the power
    floor of :func:`check_cells`, which is about 1,170 for the softmax and 30 to 90 for the
    others): the cells' total variation within the N_eff-based tolerance of
    :func:`check_cells`, every mean within 4 Monte Carlo standard errors."""
    loglik, X, y, m, k, alpha, G = CASES[case]
    n = len(y)
    with pm.Model():
        f = pmt.BARTTree("f", X, m=m, alpha=alpha, leaf_sd=1.0, min_leaf=1, shape=(k, n),
                         separate_trees=False, split_prior="uniform",
                         Y=y[:, 0] if case == "two Normal outcomes" else None)
        if case.startswith("heteroscedastic"):
            pm.Normal("y", mu=f[0], sigma=pm.math.exp(f[1]), observed=y)
        elif case == "two Normal outcomes":  # each in a likelihood of its own
            pm.Normal("y0", mu=f[0], sigma=SD_NORMAL[0], observed=y[:, 0])
            pm.Normal("y1", mu=f[1], sigma=SD_NORMAL[1], observed=y[:, 1])
        elif case == "two quantiles":
            pm.AsymmetricLaplace("y", mu=f, b=1.0, q=Q_AL[:, None],
                                 observed=np.broadcast_to(y, (2, n)))
        else:
            pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y)
        draws, sweeps = DRAWS[case]
        idata = pm.sample(draws=draws, tune=300, chains=2, cores=1, random_seed=17,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": sweeps})
    offset = float(f.owner.inputs[3].eval())
    assert (offset != 0.0) == (case == "two Normal outcomes")
    cells, prior, mean, cross = grid_exact(loglik, X, y - offset if offset else y, m, k,
                                           alpha, G)
    leaf = idata.sample_stats["accept_leaf"].values
    if case in CONJUGATE:
        # the Newton proposals are the leaves' exact conditionals: every leaf update is a
        # Gibbs draw, and the structural moves see the leaf vectors integrated out
        assert np.all(leaf == 1.0), leaf.min()
    else:
        assert leaf.mean() < 0.99
    # by the number of split trees (the trees are exchangeable; moving the split from one
    # tree to the other passes through the rare cells, which would set N_eff)
    by_count = [[sum(p) for p in chain] for chain in _splits(idata, "f", m)]
    count_post = {c: sum(v for p, v in cells.items() if sum(p) == c) for c in range(m + 1)}
    count_prior = {c: sum(v for p, v in prior.items() if sum(p) == c) for c in range(m + 1)}
    check_cells(by_count, count_post, count_prior)
    xi = X[:, 0].astype(int)
    fs = idata.posterior["f"].values - offset  # (chain, draw, output, row)
    pairs = [(a, b) for a in range(k) for b in range(a, k)]
    draws = np.concatenate([fs, np.stack([fs[:, :, a] * fs[:, :, b] for a, b in pairs], 2)], 2)
    exact = np.concatenate([mean[:, xi], np.stack([cross[a, b, xi] for a, b in pairs])])
    got = draws.mean(axis=(0, 1))
    se = np.asarray(az.mcse(draws.reshape(*draws.shape[:2], -1))).reshape(got.shape)
    assert np.all(np.abs(got - exact) < 4 * se), ((got - exact) / se).round(1)


def test_gaussian_rows_match_naive_code():
    """The row callback of Gaussian pseudo-data (the conjugate sweep of shared outputs)
    against the densities written out, on a subset of the rows in a scrambled order."""
    from pymc_trees.bart.kernels.general import call_rows, gaussian_pre, gaussian_rows

    rng = np.random.default_rng(3)
    J, n = 3, 40
    z, f = rng.normal(size=(J, n)), rng.normal(size=(J, n))
    w = rng.gamma(2.0, size=(J, n))
    w[1, 5] = 0.0  # a row that carries no information in one output
    rows = rng.permutation(n)[:17]
    ll, g, h = call_rows(gaussian_rows, f[:, rows], rows, gaussian_pre(z, w))
    want = stats.norm.logpdf(z, f, 1 / np.sqrt(np.where(w > 0, w, 1.0)))
    want += 0.5 * np.log(2 * np.pi / np.where(w > 0, w, 1.0))  # the constants left out
    want[w == 0] = 0.0
    np.testing.assert_allclose(ll, want[:, rows].sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, (w * (z - f))[:, rows], rtol=1e-12)
    np.testing.assert_array_equal(h, w[:, rows])
    with pytest.raises(ValueError, match="same shape"):
        gaussian_pre(z, w[:2])


def test_outputs_whose_likelihoods_depend_on_each_other_are_not_conjugate():
    """The joint conjugate update needs the likelihood to factorise over the outputs: a
    softmax's classes, a mean and a scale, two outputs added in one mean, and an output in
    two likelihoods are refused by it (and sampled by the general step); outputs in one
    (k, n) likelihood or each in a likelihood of its own are taken."""
    from pymc_trees.bart.likelihood.structure import NotAugmentable, joint_output_likelihoods

    n = 12
    y = np.linspace(-1, 1, n)
    for form in ("softmax", "mean and scale", "sum", "two outcomes", "two likelihoods",
                 "one output in both"):
        with pm.Model() as model:
            f = pmt.BARTTree("f", X2, m=2, leaf_sd=1.0, shape=(2, n), separate_trees=False)
            if form == "softmax":
                pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=(y > 0) * 1)
            elif form == "mean and scale":
                pm.Normal("y", mu=f[0], sigma=pm.math.exp(f[1]), observed=y)
            elif form == "sum":
                pm.Normal("y", mu=f[0] + f[1], sigma=1.0, observed=y)
            elif form == "two outcomes":
                pm.Normal("y", mu=f, sigma=1.0, observed=np.stack([y, -y]))
            elif form == "two likelihoods":
                pm.Normal("y0", mu=f[0], sigma=1.0, observed=y)
                pm.Bernoulli("y1", logit_p=f[1], observed=(y > 0) * 1)
            else:
                pm.Normal("y0", mu=f[0], sigma=1.0, observed=y)
                pm.Normal("y1", mu=f[1] + f[0], sigma=1.0, observed=-y)
        if form == "two outcomes":
            assert len(joint_output_likelihoods(model, f, n)) == 2
        elif form == "two likelihoods":
            liks = joint_output_likelihoods(model, f, n)
            assert [lik.observed_name for lik in liks] == ["y0", "y1"]
            assert [lik.family for lik in liks] == ["normal", "logit"]
        else:
            with pytest.raises(NotAugmentable):
                joint_output_likelihoods(model, f, n)


def test_grid_matches_nested_quadrature_for_one_tree():
    """The grid against an independent computation: one tree (m = 1), heteroscedastic, the
    leaf's mean integrated in closed form (given log sigma the rows are jointly Normal,
    covariance sigma^2 I + 1 1') and log sigma by adaptive quadrature."""
    from scipy import integrate

    def evidence(y):
        n = y.size

        def inner(ls):  # covariance s2 I + 1 1': determinant and inverse in closed form
            s2 = np.exp(2 * ls)
            quad = (y @ y - y.sum() ** 2 / (s2 + n)) / s2
            logdet = (n - 1) * np.log(s2) + np.log(s2 + n)
            return np.exp(-0.5 * (n * np.log(2 * np.pi) + logdet + quad)
                          + stats.norm.logpdf(ls))
        return integrate.quad(inner, -12.0, 12.0, epsabs=0, epsrel=1e-10, limit=400)[0]

    one_leaf = evidence(Y_HET)
    split = evidence(Y_HET[X2[:, 0] == 0]) * evidence(Y_HET[X2[:, 0] == 1])
    cells, _, _, _ = grid_exact(het_loglik, X2, Y_HET, 1, 2, 0.5, 241)  # alpha = 1/2
    assert cells[(True,)] / cells[(False,)] == pytest.approx(split / one_leaf, rel=1e-8)


def _het_model(n_rows=60, seed=3, m=6, **kwargs):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n_rows, 2))
    y = rng.normal(np.where(X[:, 0] > 0.5, 1.0, -1.0), np.where(X[:, 1] > 0.5, 0.3, 1.0))
    model = pm.Model(coords={"par": ["mu", "log_sigma"], "obs": range(n_rows),
                             "col": ["u", "v"]})
    with model:
        Xd = pm.Data("X", X, dims=("obs", "col"))
        f = pmt.BARTTree("f", Xd, m=m, leaf_sd=0.5, dims=("par", "obs"),
                         separate_trees=False, **kwargs)
        pm.Normal("y", mu=f[0], sigma=pm.math.exp(f[1]), observed=y, shape=Xd.shape[0])
    return model, X, y


@pytest.mark.slow
def test_shared_trees_predict_save_and_posterior_predictive(tmp_path):
    """The whole API: the trace is (chain, draw, k, n); every output's stored forest has the
    same trees; predict gives the training values exactly and each output's own leaves at
    new rows; saving keeps them; pm.set_data with pmt.sample_posterior_predictive."""
    model, X, y = _het_model()
    with model:
        idata = pm.sample(draws=40, tune=40, chains=2, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["f"].shape == (2, 40, 2, 60)
    _splits(idata, "f", 6)  # asserts the outputs' trees are the same
    check_outputs_through_the_api(idata, model, X, np.random.default_rng(5).uniform(size=(5, 2)),
                                  tmp_path)
    # DART's split probabilities are one forest's, the same for both outputs
    probs = idata.sample_stats["f_split_probs"].values
    np.testing.assert_array_equal(probs[:, :, 0], probs[:, :, 1])


@pytest.mark.slow
def test_shared_trees_reproduce_and_restore():
    """A seed reproduces the draws; the step's saved state holds the trees and both outputs'
    leaf values and restores them; the sampler's prior draw has one forest's structure with
    independent values per output."""
    model, _, _ = _het_model(m=4)
    runs = []
    for _ in range(2):
        with model:
            idata = pm.sample(draws=15, tune=15, chains=1, random_seed=9, progressbar=False,
                              compute_convergence_checks=False)
        runs.append(idata.posterior["f"].values)
    np.testing.assert_array_equal(runs[0], runs[1])

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(50, 2))
    smp = SharedOutputSampler(X, TreePrior(m=3, min_leaf=2), 0.5, 0.7, outputs=3)

    def loglik(F, derivatives=False):
        ll = stats.norm.logpdf(F, 1.0, 1.0).sum(axis=0)
        return (ll, 1.0 - F, np.ones_like(F)) if derivatives else ll

    from pymc_trees.bart.samplers.tree_prior import move_cumulative_probs
    cp = move_cumulative_probs({"grow": 0.5, "prune": 0.5})
    for _ in range(20):
        smp.general_sweep(rng, loglik, cp)
    state = smp.forest_state()
    before, packed = smp.values(), smp.pack().nodes.copy()
    assert before.shape == (3, 50) and not np.allclose(before[0], before[1])
    smp.general_sweep(rng, loglik, cp)
    smp.restore_forest(state)
    np.testing.assert_array_equal(smp.values(), before)
    np.testing.assert_array_equal(smp.pack().nodes, packed)
    # PyMC pickles the step to its worker processes: the leaf values travel, the rows' leaves
    # are routed again, and forest.value is output 0's row of them again
    import pickle
    back = pickle.loads(pickle.dumps(smp))
    np.testing.assert_array_equal(back.values(), before)
    assert back.forest.value.base is back.leaf_values()
    out = np.empty((3, 50))
    smp.prior_values(np.random.default_rng(1), out)
    assert np.all(np.isfinite(out)) and not np.allclose(out[0], out[2])


def test_shared_trees_refuse_what_they_do_not_support():
    X = np.random.default_rng(0).uniform(size=(20, 2))
    with pm.Model():
        with pytest.raises(ValueError, match="has one value per row of X. Pass shape"):
            pmt.BARTTree("a", X, m=2, leaf_sd=1.0, separate_trees=False)
        with pytest.raises(ValueError, match="needs response='constant'"):
            pmt.BARTTree("b", X, m=2, leaf_sd=1.0, shape=(2, 20), separate_trees=False,
                         response="linear")
        with pytest.raises(ValueError, match="sampler='cgm'"):
            pmt.BARTTree("c", X, m=2, leaf_sd=1.0, shape=(2, 20), separate_trees=False,
                         sampler="pg")
        with pytest.raises(ValueError, match="separate_trees must be True or False"):
            pmt.BARTTree("d", X, m=2, leaf_sd=1.0, shape=(2, 20), separate_trees="no")
    # the plan (pymc_trees.bart.term.plan) refuses a Particle Gibbs step before any sweep runs,
    # and gives the term no warm start (both update one value per leaf)
    with pm.Model():
        f = pmt.BARTTree("e", X, m=2, leaf_sd=1.0, shape=(2, 20), separate_trees=False)
        pm.Normal("y", f, 1.0, observed=np.zeros((2, 20)))
        with pytest.raises(ValueError, match="separate_trees=True"):
            pmt.PGTreeStep([f])
        assert not term_plan(f.owner.op, "e", "cgm").warm_start


def test_prior_draws_share_the_trees():
    """pm.draw of a shared term: both outputs are sums over the same partitions of the rows,
    so two rows in the same cell of every tree agree in both outputs together; with 1 tree
    that holds for all pairs of rows in a leaf.  And the marginal sd of each output is the
    leaf sd times sqrt(m)."""
    X = np.repeat(np.arange(4.0), 10)[:, None]
    with pm.Model():
        f = pmt.BARTTree("f", X, m=1, leaf_sd=1.0, min_leaf=1, alpha=0.9, shape=(2, 40),
                         separate_trees=False, split_prior="uniform")
    draws = pm.draw(f, draws=300, random_seed=4)  # (300, 2, 40)
    for d in draws:
        same0 = d[0][:, None] == d[0][None, :]
        same1 = d[1][:, None] == d[1][None, :]
        np.testing.assert_array_equal(same0, same1)  # one partition for both outputs
    sd = draws[:, :, 0].std(axis=0)
    assert np.all(np.abs(sd - 1.0) < 0.15), sd
