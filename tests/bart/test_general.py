"""The general tree step for likelihoods without conjugacy (docs/math.md section 9).

* With a Gaussian likelihood the Laplace proposal of a leaf is its exact conditional, so every
  leaf update is accepted (a check of the proposal density and of the leaf factor).
* Exact enumeration, m = 1 on 6 rows: the posterior over the 32 row partitions is the tree
  prior times, per leaf, a one-dimensional quadrature of the likelihood against the leaf
  prior (tests/enumeration.py); the sampled partitions must match it within the N_eff-based
  tolerance of the other enumeration tests, and the posterior mean of f at every row within
  4 Monte Carlo standard errors.  Likelihoods: Poisson with a log link and a Normal with the
  tree term in log sigma at the kernel (a numpy log-likelihood), a Gamma with the tree term in
  its mean through ``pm.sample``; the log-likelihood and derivatives compiled from each PyMC
  model equal the numpy ones.
"""

from __future__ import annotations

import functools

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_trees as pmt
from enumeration import (X6, check_cells, forest_row_partitions, quadrature_posterior,
                         six_row_prior)
from pymc_trees.bart.samplers.sampler import ForestSampler
from pymc_trees.bart.samplers.tree_prior import TreePrior, move_cumulative_probs
from pymc_trees.bart.kernels.bundles import TreeRules

# the general tree step's tests: normal leaves (by default, leaf_prior="auto" gives a
# Poisson or Gamma mean and a Normal's log variance log-gamma leaves)
BARTTree = functools.partial(pmt.BARTTree, leaf_prior="normal")

ALPHA, BETA = 0.95, 1.0
Y_COUNT = np.array([1, 0, 1, 7, 8, 5])
Y_REAL = np.array([0.3, 0.1, 0.25, 2.5, -2.8, -2.2])
Y_POS = np.array([0.4, 0.7, 0.5, 4.0, 6.0, 3.0])
MOVES = {"grow": 0.25, "prune": 0.25, "change": 0.4, "swap": 0.1}


def poisson_loglik(f, derivatives=False):
    lam = np.exp(0.8 + f)
    ll = Y_COUNT * (0.8 + f) - lam - special.gammaln(Y_COUNT + 1)
    return (ll, Y_COUNT - lam, lam) if derivatives else ll


def log_sigma_loglik(f, derivatives=False):
    # y ~ Normal(0.2, exp(f)): l = -f - (y - 0.2)^2 exp(-2 f) / 2 + const
    e2 = (Y_REAL - 0.2) ** 2 * np.exp(-2 * f)
    ll = -f - 0.5 * e2 - 0.5 * np.log(2 * np.pi)
    return (ll, -1 + e2, 2 * e2) if derivatives else ll


def gamma_mean_loglik(f, derivatives=False):
    # y ~ Gamma(shape 2, mean exp(f)): l = 2 log 2 - 2 f + log y - 2 y exp(-f)
    r = 2 * Y_POS * np.exp(-f)
    ll = 2 * np.log(2.0) - 2 * f + np.log(Y_POS) - r
    return (ll, -2 + r, r) if derivatives else ll


# name: (leaf sd, numpy log-likelihood, row log-likelihood at leaf value mu, model given f)
CASES = {
    "poisson": (1.0, poisson_loglik,
                lambda i, mu: stats.poisson.logpmf(Y_COUNT[i], np.exp(0.8 + mu)),
                lambda f: pm.Poisson("y", mu=pm.math.exp(0.8 + f), observed=Y_COUNT)),
    "log_sigma": (1.0, log_sigma_loglik,
                  lambda i, mu: stats.norm.logpdf(Y_REAL[i], 0.2, np.exp(mu)),
                  lambda f: pm.Normal("y", mu=0.2, sigma=pm.math.exp(f), observed=Y_REAL)),
    "gamma_mean": (1.0, gamma_mean_loglik,
                   lambda i, mu: stats.gamma.logpdf(Y_POS[i], 2.0, scale=np.exp(mu) / 2),
                   lambda f: pm.Gamma("y", alpha=2.0, beta=2.0 * pm.math.exp(-f),
                                      observed=Y_POS)),
}


def _compiled(case):
    """The case's likelihood compiled for the sweep kernel from its PyMC model (the path
    pm.sample takes; tests/bart/test_row_kernel.py shows the Python sweep makes the same
    moves)."""
    from pymc_trees.bart.likelihood.structure import general_likelihood

    leaf_sd, _, _, model_given_f = CASES[case]
    with pm.Model() as model:
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1)
        model_given_f(f)
    lik = general_likelihood(model, f, 6)
    compiled = lik.compiled(model.initial_point())
    assert compiled is not None, lik.rows_reason
    return compiled


def _run_kernel(compiled, leaf_sd, draws, seed, sweeps, tune=300):
    """A chain of the general sweep kernel, ``sweeps`` sweeps a draw (in one kernel call),
    after ``tune`` sweeps."""
    smp = ForestSampler(X6, TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, leaf_sd)
    rng = np.random.default_rng(seed)
    cp = move_cumulative_probs(MOVES)
    smp.general_sweep(rng, None, cp, compiled, sweeps=tune)
    parts, fs, rates = [], [], []
    for _ in range(draws):
        r = smp.general_sweep(rng, None, cp, compiled, sweeps=sweeps)
        parts.append(forest_row_partitions(smp.pack(), X6)[0])
        fs.append(smp.values())
        rates.append(list(r.values()))
    return parts, np.array(fs), np.nanmean(np.array(rates, float), axis=0)


def test_gaussian_leaf_proposals_are_exact_conditionals():
    y = np.array([0.5, -1.0, 2.0, 0.3, 1.1, -0.4])
    s = 0.7

    def loglik(f, derivatives=False):
        ll = stats.norm.logpdf(y, f, s)
        return (ll, (y - f) / s**2, np.full(6, 1 / s**2)) if derivatives else ll

    smp = ForestSampler(X6, TreePrior(m=3, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, 0.8)
    rng = np.random.default_rng(5)
    cp = move_cumulative_probs(MOVES)
    # the Newton component alone (no defensive mixture): the exact conditional
    leaf = [smp.general_sweep(rng, loglik, cp, defensive=0.0)["accept_leaf"] for _ in range(200)]
    assert np.min(leaf) == 1.0


# (draws per chain, sweeps per draw) of the compiled sweep kernel: N_eff of the five most
# probable cells 468 (poisson) and 895 (log_sigma) with these seeds, tolerances 0.174 and
# 0.127 against TV(prior, posterior) / 3 = 0.207 and 0.193 (the Python sweep, one sweep a
# draw, needed 20,000 draws for N_eff 517 and 414 in 28 and 35 s).  gamma_mean runs through
# pm.sample below.
DRAWS = {"poisson": (4500, 5), "log_sigma": (3000, 5)}


def check_f_mean(fs, f_mean):
    fs = np.stack(fs)  # (chain, draw, row)
    got = fs.mean(axis=(0, 1))
    se = np.asarray(az.mcse(fs)).ravel()
    assert np.all(np.abs(got - f_mean) < 4 * se), (got, f_mean, se)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(DRAWS))
def test_general_kernel_matches_enumeration(case):
    leaf_sd, loglik, row, _ = CASES[case]
    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    compiled = _compiled(case)
    chains = [_run_kernel(compiled, leaf_sd, *DRAWS[case], seed) for seed in (11, 12)]
    print(case, "acceptance (grow, prune, change, swap, leaf):", chains[0][2].round(3))
    check_cells([c[0] for c in chains], post, {k: prior[k] for k in post})
    check_f_mean([c[1] for c in chains], f_mean)


@pytest.mark.parametrize("case", list(CASES))
def test_model_derivatives_match_the_numpy_likelihood(case):
    """The log-likelihood and derivatives the tree step compiles from the PyMC graph equal
    the hand-written ones the kernel tests use (so those tests cover pm.sample's path)."""
    from pymc_trees.bart.likelihood.structure import general_likelihood

    leaf_sd, loglik, _, model_given_f = CASES[case]
    with pm.Model() as model:
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1)
        model_given_f(f)
    lik = general_likelihood(model, f, 6)
    fv = np.random.default_rng(3).normal(0, 0.7, 6)
    got = lik.bind(model.initial_point())(fv, derivatives=True)
    for a, b in zip(got, loglik(fv, derivatives=True)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_gamma_mean_through_pm_sample_matches_enumeration():
    """A Gamma with the tree in its mean, through pm.sample: step assignment, point handling
    and the trace.  3,000 draws per chain of 5 sweeps each (``sweeps``, in one kernel call):
    N_eff 860, tolerance 0.138 against TV(prior, posterior) / 3 = 0.173 (16,000 draws of one
    sweep gave N_eff 764 in 32 s against 12 to 15 s now)."""
    leaf_sd, _, row, model_given_f = CASES["gamma_mean"]
    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    with pm.Model():
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1)
        model_given_f(f)
        idata = pm.sample(draws=3000, tune=300, chains=2, cores=1, random_seed=21,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 5})
    assert float(idata.sample_stats["accept_leaf"].mean()) > 0.5
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    check_f_mean(list(idata.posterior["f"].values), f_mean)


# --- tree terms inside links and scales (issue 11, must-have 2) -----------------------------

def _scale_data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 2))
    sd = np.where(X[:, 1] < 0.5, 0.3, 1.5)
    return X, np.sin(4 * X[:, 0]) + rng.normal(0, sd), sd


SCALE_MODELS = {
    "gamma_mean_and_scale": lambda X, y, f1, f2: pm.Gamma(
        "y", mu=pm.math.exp(f1), sigma=pm.math.exp(f2), observed=np.exp(y / 2)),
    "normal_log_sigma": lambda X, y, f1, f2: pm.Normal(
        "y", mu=f1, sigma=pm.math.exp(f2), observed=y),
    "student_t_log_sigma": lambda X, y, f1, f2: pm.StudentT(
        "y", nu=5, mu=f1, sigma=pm.math.exp(f2), observed=y),
    "negative_binomial_dispersion": lambda X, y, f1, f2: pm.NegativeBinomial(
        "y", mu=pm.math.exp(f1), alpha=pm.math.exp(f2),
        observed=np.round(np.exp(y / 2 + 1)).astype(int)),
    "asymmetric_laplace_quantile": lambda X, y, f1, f2: pm.AsymmetricLaplace(
        "y", mu=f1, b=pm.math.exp(f2), kappa=1.5, observed=y),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCALE_MODELS))
def test_tree_terms_in_links_and_scales_sample(name):
    """Two tree terms, one in the mean (or location) and one in the log scale or dispersion:
    pm.sample assigns a tree step to each, the general step where no augmentation applies,
    and the moves are accepted at useful rates."""
    X, y, _ = _scale_data(120)
    with pm.Model():
        f1 = BARTTree("f1", X, m=5, leaf_sd=0.5)
        f2 = BARTTree("f2", X, m=5, leaf_sd=0.3)
        SCALE_MODELS[name](X, y, f1, f2)
        idata = pm.sample(draws=60, tune=60, chains=1, random_seed=3, progressbar=False,
                          compute_convergence_checks=False)
    ss = idata.sample_stats
    assert set(pmt.forests(idata, "f1").dims) >= {"chain", "draw"}
    leaf = ss["accept_leaf"].values
    assert np.nanmean(leaf) > 0.3, np.nanmean(leaf)  # general steps report their leaf rate
    for move in ("grow", "prune"):
        assert np.nanmean(ss[f"accept_{move}"].values) > 0.05


def test_log_sigma_tree_recovers_two_noise_levels():
    """Normal(mu = f1, sigma = exp(f2)) with sd 0.3 for x2 < 0.5 and 1.5 above: the posterior
    mean of sigma in each half is within 25% of the truth (the prior of exp(f2) is centred on
    1 with a factor of about 2 either way, and it ignores x2)."""
    X, y, sd = _scale_data(400, seed=1)
    with pm.Model():
        f1 = BARTTree("f1", X, y, m=20)
        f2 = BARTTree("f2", X, m=20, leaf_sd=0.15)
        pm.Normal("y", mu=f1, sigma=pm.math.exp(f2), observed=y)
        idata = pm.sample(draws=200, tune=200, chains=1, random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    sigma = np.exp(idata.posterior["f2"].values).mean(axis=(0, 1))
    for lo in (True, False):
        rows = (X[:, 1] < 0.5) == lo
        est = float(np.median(sigma[rows]))
        assert abs(est / sd[rows][0] - 1) < 0.25, (lo, est, sd[rows][0])


def test_prune_proposal_stays_inside_its_row_buffer():
    """Pruning the root's two leaves when the left leaf's rows come after the right leaf's
    (X in decreasing order) once wrote one slot past the row buffer (heap corruption that
    crashed a softmax model).  The buffer is a view of a longer array with a sentinel."""
    from pymc_trees.bart.kernels import general as gk

    X = np.arange(6.0)[::-1, None]
    smp = ForestSampler(X, TreePrior(m=1, alpha=ALPHA, beta=BETA, min_leaf=1), 0.0, 1.0)
    rng = np.random.default_rng(0)
    y = np.where(X[:, 0] > 2.5, 3.0, -3.0)

    def loglik(f, derivatives=False):
        ll = stats.norm.logpdf(y, f, 0.3)
        return (ll, (y - f) / 0.09, np.full(6, 1 / 0.09)) if derivatives else ll

    f = smp.forest
    for _ in range(200):  # until the tree is the root split in two leaves
        smp.general_sweep(rng, loglik, move_cumulative_probs({"grow": 0.5, "prune": 0.5}))
        if f.n_nodes[0] - f.n_free[0] == 3:
            break
    assert f.n_nodes[0] - f.n_free[0] == 3
    buf = np.full(7, -7, np.int64)
    b = gk.new_row_buffers(6, f.capacity, 1)
    rules = TreeRules(1, ALPHA, BETA, 1.0)
    st = gk.prune_propose(rng, 0, rules, gk.DEFENSIVE, np.array([0.5, 1.0, 1.0, 1.0]),
                          f.arrays(), f.value[None],
                          np.zeros((1, 6)), np.ones((1, 6)), buf[:6], b)
    assert st == 1 and b.out_i[1] == 6
    assert buf[6] == -7
    assert sorted(buf[:6]) == list(range(6))


# --- several outputs: a softmax over three tree sums ----------------------------------------

X_SOFT = np.tile([0.0, 1.0], 12)[:, None]  # rows alternate between the two x values
# classes at x = 0: ten 0s, two 1s; at x = 1: two 1s, ten 2s (TV(prior, posterior) 0.61)
Y_SOFT = np.ravel(np.column_stack([[0] * 10 + [1] * 2, [1] * 2 + [2] * 10]))
ALPHA_SOFT = 0.5


def softmax_exact(K: int = 30):
    """The exact posterior of the three trees' partitions (each tree either one leaf or the
    split x = 0 | x = 1: with one cut the root splits with prior probability alpha and its
    children cannot) and of f at both x values, for leaf values N(0, 1): per pattern of splits
    the leaf values are integrated by Gauss-Hermite quadrature, the shared leaves outside and
    each x value's own leaves inside (the likelihood factorises over the x values given the
    shared leaves)."""
    import itertools

    z, w = np.polynomial.hermite_e.hermegauss(K)
    w = w / w.sum()

    def grid(d):  # product nodes (K^d, d) and weights (K^d,); one empty node when d = 0
        if d == 0:
            return np.zeros((1, 0)), np.ones(1)
        nodes = np.array(list(itertools.product(z, repeat=d)))
        return nodes, np.prod(np.array(list(itertools.product(w, repeat=d))), axis=1)
    counts = np.array([[np.sum((X_SOFT[:, 0] == x) & (Y_SOFT == c)) for c in range(3)]
                       for x in (0.0, 1.0)])  # (x value, class)
    post, means = {}, {}
    for s in itertools.product((False, True), repeat=3):
        shared = [c for c in range(3) if not s[c]]
        own = [c for c in range(3) if s[c]]
        g0, w0 = grid(len(shared))
        g1, w1 = grid(len(own))
        mu = np.zeros((len(w0), len(w1), 3))
        mu[:, :, shared] = g0[:, None, :]
        mu[:, :, own] = g1[None, :, :]
        logp = mu - special.logsumexp(mu, axis=-1, keepdims=True)
        lik = [np.exp(logp @ counts[xv]) * w1 for xv in range(2)]  # (shared grid, own grid)
        L = [lk.sum(axis=1) for lk in lik]
        integral = float(np.sum(w0 * L[0] * L[1]))
        post[s] = np.prod([ALPHA_SOFT if si else 1 - ALPHA_SOFT for si in s]) * integral
        m1, m2 = np.zeros((3, 2)), np.zeros((3, 3, 2))
        for xv in range(2):
            outer = w0 * L[1 - xv] / integral
            m1[:, xv] = np.einsum("a,ab,abc->c", outer, lik[xv], mu)
            m2[:, :, xv] = np.einsum("a,ab,abc,abd->cd", outer, lik[xv], mu, mu)
        means[s] = (m1, m2)
    Z = sum(post.values())
    post = {k: v / Z for k, v in post.items()}
    f_mean = sum(post[k] * means[k][0] for k in post)  # (class, x value)
    f_cross = sum(post[k] * means[k][1] for k in post)  # (class, class, x value)
    prior = {s: np.prod([ALPHA_SOFT if si else 1 - ALPHA_SOFT for si in s]) for s in post}
    return post, prior, f_mean, f_cross


# (draws per chain, sweeps per draw): the general step runs each output's sweeps in one
# kernel call (a blocked scan); the Polya-Gamma latents and Particle Gibbs sweep once a draw
SOFTMAX_DRAWS = {"augmented": (5000, 1), "general": (1500, 5), "pg": (5000, 1)}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["augmented", "general", "pg"])
def test_softmax_three_outputs_match_enumeration(path, monkeypatch):
    """BARTTree(shape=(3, n)) as the logits of a Categorical, m = 1 per class, through
    pm.sample: the joint posterior of the three trees' splits, the posterior mean of every
    output and of the product of every two outputs at every row against quadrature.  Each
    output is updated given the others: by default as one class's Bernoulli-logit with the
    Polya-Gamma augmentation (with CGM moves, or Particle Gibbs); with that turned off here,
    by the general step.  Draws per chain in ``SOFTMAX_DRAWS`` (6,000 of one sweep before: N_eff
    1,607 of the cells, tolerance 0.061 against TV(prior, posterior) / 3 = 0.20; the general
    step at 1,500 draws of 5 sweeps: N_eff 1,849, tolerance 0.057); enough for the products
    to catch updating each output given the others' values from before the sweep (at 6,000
    draws, general step: z = -4.9; -3.1 at 2,500 draws; augmented: z = -12.2; re-run at
    5,000: caught on all three paths, and with the general step at 2,000 and 1,500 draws of
    5 sweeps: z down to -9.1 and -7.4)."""
    from pymc_trees.bart.likelihood import leaf_choice
    from pymc_trees.bart.steps import tree_step as tree_steps
    from pymc_trees.bart.likelihood.structure import NotAugmentable

    if path == "general":
        def refuse(*args, **kwargs):
            raise NotAugmentable("off for this test")
        # the outputs' likelihoods are read by leaf_choice.output_likelihoods
        monkeypatch.setattr(leaf_choice, "output_tree_likelihood", refuse)
    post, prior, f_mean, f_cross = softmax_exact()
    n = len(Y_SOFT)
    with pm.Model():
        f = BARTTree("f", X_SOFT, m=1, alpha=ALPHA_SOFT, leaf_sd=1.0, min_leaf=1,
                         shape=(3, n), sampler="pg" if path == "pg" else "cgm")
        pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=Y_SOFT)
        draws, sweeps = SOFTMAX_DRAWS[path]
        # the step pm.sample would build (built once: the general step's row functions take
        # about 15 s to compile for the three outputs)
        step = (tree_steps.PGTreeStep if path == "pg" else tree_steps.CGMTreeStep)(
            [f], sweeps=sweeps)
        families = {lik.family for lik in step.likelihood.parts}
        assert families == {"general" if path == "general" else "softmax"}
        idata = pm.sample(draws=draws, tune=300, chains=2, cores=1, random_seed=31,
                          progressbar=False, compute_convergence_checks=False, step=step)
    fr = pmt.forests(idata, "f").values  # (chain, draw, output)
    parts = [[tuple(bool(fr[c, d, j].nodes.size > 1) for j in range(3))
              for d in range(fr.shape[1])] for c in range(fr.shape[0])]
    check_cells(parts, post, prior)
    xi = X_SOFT[:, 0].astype(int)
    fs = idata.posterior["f"].values  # (chain, draw, class, row)
    # the means of every output, and the products of two outputs, at every row
    pairs = [(0, 1), (0, 2), (1, 2)]
    draws = np.concatenate([fs, np.stack([fs[:, :, a] * fs[:, :, b] for a, b in pairs], 2)], 2)
    exact = np.concatenate([f_mean[:, xi], np.stack([f_cross[a, b, xi] for a, b in pairs])])
    got = draws.mean(axis=(0, 1))
    se = np.asarray(az.mcse(draws.reshape(*draws.shape[:2], -1))).reshape(got.shape)
    assert np.all(np.abs(got - exact) < 4 * se), ((got - exact) / se).round(1)


def test_several_outputs_predict_save_and_posterior_predictive(tmp_path):
    """A term of shape (k, n) through the whole API: the trace has (chain, draw, k, n), the
    forests (chain, draw, k), predict rebuilds the training values exactly, and after saving
    and at new rows through pm.set_data every output is evaluated with its own trees."""
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(40, 2))
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0.5).astype(int)
    with pm.Model(coords={"cls": ["a", "b", "c"], "obs": range(40), "col": ["u", "v"]}) as model:
        Xd = pm.Data("X", X, dims=("obs", "col"))
        f = BARTTree("f", Xd, m=4, leaf_sd=0.5, dims=("cls", "obs"))
        pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y, shape=Xd.shape[0])
        idata = pm.sample(draws=30, tune=30, chains=2, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["f"].shape == (2, 30, 3, 40)
    fr = pmt.forests(idata, "f")
    assert fr.shape == (2, 30, 3) and fr.values[0, 0, 1].m == 4
    check_outputs_through_the_api(idata, model, X, rng.uniform(size=(5, 2)), tmp_path)


def check_outputs_through_the_api(idata, model, X, X_new, tmp_path):
    """A term ``f`` of shape (k, n) after sampling a model with ``pm.Data("X")`` and an
    observed ``y``: predict rebuilds the training values exactly and evaluates the last
    output's own trees at new rows; saving keeps the forests; pm.set_data with
    pmt.sample_posterior_predictive gives predict's values."""
    post = idata.posterior["f"]
    chains, draws, k = post.shape[:3]
    pred = pmt.predict(idata, X)
    assert pred.dims == ("chain", "draw") + post.dims[2:]  # the posterior's, at training X
    np.testing.assert_allclose(pred.values, post.values, rtol=0, atol=1e-12)
    fr = pmt.forests(idata, "f")  # the last output's own trees, one by one, at new rows
    np.testing.assert_allclose(pmt.predict(idata, X_new).values[1, 3, k - 1],
                               fr.values[1, 3, k - 1].predict(X_new), rtol=0, atol=1e-12)
    path = tmp_path / "trace.nc"
    idata.to_netcdf(path)
    back = az.from_netcdf(path)
    np.testing.assert_array_equal(pmt.predict(back, X_new).values,
                                  pmt.predict(idata, X_new).values)
    with model:
        pm.set_data({"X": X_new}, coords={"obs": range(len(X_new))})
        pp = pmt.sample_posterior_predictive(idata, var_names=["y", "f"], random_seed=3,
                                             progressbar=False)
    assert pp.posterior_predictive["y"].shape == (chains, draws, len(X_new))
    np.testing.assert_allclose(pp.posterior_predictive["f"].values,
                               pmt.predict(idata, X_new).values, rtol=0, atol=1e-12)


def test_several_outputs_refuse_what_they_do_not_support():
    X = np.random.default_rng(0).uniform(size=(20, 2))
    y = np.random.default_rng(1).normal(size=20)
    with pm.Model():
        # Particle Gibbs needs every output augmentable; output 1 here is a scale
        w = BARTTree("w", X, m=2, leaf_sd=1.0, shape=(2, 20), sampler="pg")
        pm.Normal("y", w[0], pm.math.abs(w[1]) + 0.1, observed=y)
        with pytest.raises(ValueError, match=r"Output\(s\) \[1\] of 'w'.*sampler='cgm'"):
            pm.sample(draws=5, tune=5, chains=1, progressbar=False)
    with pm.Model():
        with pytest.raises(ValueError, match="does not match the 20 rows"):
            BARTTree("g", X, m=2, leaf_sd=1.0, shape=(3, 19))
        with pytest.raises(ValueError, match="asks for 3 dimensions"):
            BARTTree("h", X, m=2, leaf_sd=1.0, shape=(2, 3, 20))


def test_backend_choice_does_not_depend_on_the_compile_cache():
    """The general step compiles its derivatives with the C backend when numba would run a
    node in object mode.  That is read from the graph's nodes, not from the warning numba's
    backend gives at compile time, which a warm disk cache leaves out (the backend, and so
    the last bits of the draws, then depended on the cache).  Asked twice, same answer."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_trees.bart.likelihood.rowgraph import numba_object_mode

    x = pt.dvector("x")
    slow = pytensor.function([x], pt.exp(x) + pt.tri_gamma(x), mode="NUMBA")
    fast = pytensor.function([x], 2 * pt.gammaln(x), mode="NUMBA")
    for _ in range(2):
        assert numba_object_mode(slow) and not numba_object_mode(fast)


@pytest.mark.slow
def test_two_outcomes_sharing_a_term_match_enumeration():
    """A term that enters two observed likelihoods row by row (a count through exp(f) and a
    yes/no outcome of the same rows through sigmoid(f)): the general step adds their row log
    densities, and the posterior over the row partitions and the posterior mean of f match
    quadrature of the product likelihood.  (It was refused: "must enter exactly one observed
    likelihood".)  4,500 draws per chain of 5 sweeps: N_eff 586, tolerance 0.162 against
    TV(prior, posterior) / 3 = 0.188 (N_eff 574 at 4,000 draws)."""
    leaf_sd = 1.0
    yes = np.array([0, 0, 1, 1, 1, 0])

    def row(i, mu):
        return (stats.poisson.logpmf(Y_COUNT[i], np.exp(0.8 + mu))
                + stats.bernoulli.logpmf(yes[i], special.expit(mu)))

    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    with pm.Model():
        f = BARTTree("f", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1)
        pm.Poisson("counts", mu=pm.math.exp(0.8 + f), observed=Y_COUNT)
        pm.Bernoulli("answers", logit_p=f, observed=yes)
        idata = pm.sample(draws=4500, tune=300, chains=2, cores=1, random_seed=23,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 5})
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    check_f_mean(list(idata.posterior["f"].values), f_mean)
    # a free variable depending on the term is still refused, with the reason
    with pm.Model():
        f = BARTTree("f", X6, m=1, leaf_sd=1.0, min_leaf=1)
        pm.Normal("z", mu=f.sum())
        pm.Poisson("counts", mu=pm.math.exp(f), observed=Y_COUNT)
        with pytest.raises(pmt.ModelStructureError, match="must enter observed likelihoods only"):
            pm.sample(draws=5, tune=5, chains=1, progressbar=False)


@pytest.mark.slow
def test_a_likelihood_broadcast_over_the_outputs_matches_enumeration():
    """A term of shape (2, n) whose likelihood is broadcast over its outputs (one y, a log
    density of shape (2, n): element (j, i) depends on f[j, i] only, as for several quantiles
    of one y).  It was refused ("has 2 dimensions").  Given y the outputs are independent, so
    each output's tree must follow the one-output Poisson posterior (quadrature): the two
    outputs of two chains are four chains of that posterior for the partitions (2,500 draws
    of 5 sweeps each), and each output's mean of f is checked on its own.  Using output 0's
    log density for both outputs (output 1 then follows its prior) fails the mean check.  The
    cells' tolerance is 3.75 / sqrt(N_eff) against TV(prior, posterior) 0.62, so the test has
    power from N_eff 330; the four chains give N_eff 652 with this seed (tolerance 0.147;
    543 at 10,000 draws of one sweep).  Output 0's log density for both outputs fails
    already at the cells (TV 0.31, N_eff 29, at 10,000 draws of one sweep)."""
    leaf_sd, _, row, _ = CASES["poisson"]
    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    n = len(X6)
    with pm.Model():
        w = BARTTree("w", X6, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd, min_leaf=1,
                         shape=(2, n))
        pm.Poisson("y", mu=pm.math.exp(0.8 + w), observed=np.broadcast_to(Y_COUNT, (2, n)))
        idata = pm.sample(draws=2500, tune=300, chains=2, cores=1, random_seed=29,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 5})
    fr = pmt.forests(idata, "w").values  # (chain, draw, output)
    parts = [[forest_row_partitions(fr[c, d, j], X6)[0] for d in range(fr.shape[1])]
             for c in range(fr.shape[0]) for j in range(2)]
    check_cells(parts, post, {k: prior[k] for k in post})
    ws = idata.posterior["w"].values  # (chain, draw, output, row)
    for j in range(2):  # per output: a pooled mean would hide one output off the posterior
        check_f_mean(list(ws[:, :, j]), f_mean)


@pytest.mark.slow
def test_proposals_outside_the_support_are_rejected_exactly():
    """Poisson(mu=f): the rate is the term itself, so leaf proposals below zero leave the
    support (log density -inf, the proposal rejected; it raised ParameterValueError before
    issue 29).  The posterior is the prior truncated to positive rates at every row: the
    partitions and the mean of f match quadrature of that truncated likelihood, and no draw
    leaves the support (treating -inf as a density of 1 fails here).  PyMC's check makes the
    whole vector -inf when one row leaves the support, so one invalid leaf proposal rejects
    the tree's other leaf proposals too: exact (the thinning depends only on leaves that stay),
    not efficient.  2,500 draws per chain of 5 sweeps: N_eff 1,279, tolerance 0.120 against
    TV(prior, posterior) / 3 = 0.145."""
    leaf_sd = 1.0
    with pm.Model():
        f = BARTTree("f", X6, Y=Y_COUNT, m=1, alpha=ALPHA, beta=BETA, leaf_sd=leaf_sd,
                         min_leaf=1)
        pm.Poisson("y", mu=f, observed=Y_COUNT)
        offset = float(f.owner.inputs[3].eval())
        idata = pm.sample(draws=2500, tune=300, chains=2, cores=1, random_seed=37,
                          progressbar=False, compute_convergence_checks=False,
                          cgm_tree={"sweeps": 5})

    def row(i, mu):
        rate = offset + mu
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = stats.poisson.logpmf(Y_COUNT[i], np.where(rate > 0, rate, 1.0))
        return np.where(rate > 0, ll, -1e300)

    prior = six_row_prior()
    post, f_mean = quadrature_posterior(prior, len(X6), row, leaf_sd)
    parts = [[forest_row_partitions(fr, X6)[0] for fr in chain]
             for chain in pmt.forests(idata, "f").values]
    check_cells(parts, post, {k: prior[k] for k in post})
    check_f_mean(list(idata.posterior["f"].values), f_mean + offset)
    assert float(idata.posterior["f"].min()) > 0


def test_a_row_outside_the_support_leaves_the_other_rows_alone():
    """PyMC turns a parameter check into one -inf for the whole vector; the general step's
    log density applies it row by row, so one leaf's proposal outside the support does not
    reject the other leaves' (the whole-vector form gave -inf at all six rows here)."""
    from pymc_trees.bart.likelihood.structure import general_likelihood

    for make in (lambda f: pm.Poisson("y", mu=f, observed=Y_COUNT),
                 lambda f: pm.Normal("y", mu=0.2, sigma=f, observed=Y_REAL)):
        with pm.Model() as model:
            f = BARTTree("f", X6, Y=Y_POS, m=1, leaf_sd=1.0, min_leaf=1)
            make(f)
        loglik = general_likelihood(model, f, 6).bind(model.initial_point())
        fv = np.array([1.5, 0.7, -0.2, 2.0, 3.0, 2.5])
        ll = loglik(fv)
        assert np.isneginf(ll[2]) and np.all(np.isfinite(np.delete(ll, 2))), ll
        ok = loglik(np.abs(fv))
        np.testing.assert_array_equal(np.delete(ll, 2), np.delete(ok, 2))


@pytest.mark.slow
def test_a_row_graph_that_fails_inside_its_callback_prints_nothing(capfd):
    """``Poisson(mu=exp(f).sum(axis=0))`` with a (3, n) term: the compiled row graph fails
    at a subset of the rows inside the C callback, where an exception cannot propagate.  The
    step's check catches it (the Python sweep runs) without Python's "Exception ignored"
    traceback, which read as a crash although the draws were right."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 2))
    y = rng.poisson(3, 60)
    with pm.Model():
        f = pmt.BARTTree("f", X, m=3, leaf_sd=0.3, shape=(3, 60))
        pm.Poisson("y", mu=pm.math.exp(f).sum(axis=0), observed=y)
        step = pmt.CGMTreeStep([f])
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err
    assert "failed at the check" in step.likelihood.parts[0].rows_reason  # output 0
