"""Compile the package's numba kernels into their on-disk cache before the tests start.

``make test`` runs the tests in two pytest-xdist workers.  In a fresh clone numba's cache is
empty, and both workers' first tests sample the default model, so each compiled the same
kernels at once (78 to 130 s in the first test of each worker, one that takes 8 s warm)
and later families (the general step, Particle Gibbs, linear leaves, boosting) wherever they
first came.  ``conftest.py`` runs the three groups below as three processes side by side, before
the workers start, when the tests run in more than one worker; the workers then load every
kernel from the cache.  Each group compiles what a handful of tiny fits reach, with the
argument types the tests use (bins of 8 and 16 bits, categorical and missing values, one and
two outputs).  A kernel missed here is still compiled where a test first needs it: this only
moves work, it changes no result.

Run by hand: ``python tests/warm_kernels.py a`` (or ``b``, ``c``).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

SAMPLE = dict(draws=6, tune=12, chains=1, cores=1, random_seed=1, progressbar=False,
              compute_convergence_checks=False)


def _data(n=40, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    return X, X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=n)


def group_a() -> None:
    """The default Gaussian model end to end (grow-from-root warm start, CGM, DART, packing,
    prediction), a table with missing values and a categorical column, the probit's latent
    draws, and more than 255 cutpoints (16-bit bins) with a leaf index widened to 16 bits."""
    import pandas as pd
    import pymc as pm

    import pymc_trees as pmt

    X, y = _data()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=4)
        pm.Normal("y", mu=f, sigma=pm.HalfNormal("s", 1.0), observed=y)
        idata = pm.sample(**SAMPLE)
    pmt.predict(idata, X[:5])
    with pm.Model():
        f = pmt.BARTTree("f", X, m=3, leaf_sd=0.5, split_prior="uniform")
        pm.Bernoulli("y", p=pm.math.invprobit(f), observed=(y > 0).astype(int))
        pm.sample(**SAMPLE)
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.uniform(size=40), "c": pd.Categorical(rng.choice(list("xyz"), 40))})
    df.loc[::7, "a"] = np.nan
    with pm.Model():
        f = pmt.BARTTree("f", df, y, m=3)
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        idata = pm.sample(**SAMPLE)
    pmt.predict(idata, df.iloc[:5])
    # more than 255 cutpoints (16-bit bins) with missing values, and the leaf index widened
    # to 16 bits, as tests/bart/test_memory.py takes them (CGM's sweep for these types
    # compiles in about 40 s of one core)
    from pymc_trees.bart.term.plan import make_forest_sampler
    from pymc_trees.bart.samplers.tree_prior import TreePrior

    Xw = rng.uniform(size=(600, 4))
    Xw[rng.uniform(size=Xw.shape) < 0.05] = np.nan
    yw = np.sin(6 * np.nan_to_num(Xw[:, 0]))
    fs = make_forest_sampler(Xw, TreePrior(m=4, numcut=400), 0.0, 0.3)
    w = np.full(600, 100.0)
    fs.gfr_sweep(rng, yw, w)
    fs.forest.ensure_capacity(300)
    fs._alloc_scratch()
    fs.cgm_sweep(rng, yw, w, np.array([0.25, 0.5, 0.9, 1.0]))
    fs.pack().predict(Xw)


def group_b() -> None:
    """The other samplers: Particle Gibbs, the general step (Poisson), log-gamma leaves,
    linear leaves (also in the general step) and outputs that share their trees."""
    import pymc as pm

    import pymc_trees as pmt
    X, y = _data()
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=3, sampler="pg")
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        pm.sample(**SAMPLE)
    counts = np.random.default_rng(2).poisson(np.exp(X[:, 0]))
    for leaf_prior in ("normal", "auto"):  # the general step, and log-gamma leaves
        with pm.Model():
            f = pmt.BARTTree("f", X, m=3, leaf_sd=0.5, leaf_prior=leaf_prior)
            pm.Poisson("y", mu=pm.math.exp(f), observed=counts)
            pm.sample(**SAMPLE)
    with pm.Model():
        f = pmt.BARTTree("f", X, y, m=3, response="linear")
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
        pm.sample(**SAMPLE)
    with pm.Model():
        # linear leaves in the general step (a compilation of about 46 s of one core, which
        # the first such test paid on a cold cache)
        f = pmt.BARTTree("f", X, m=2, leaf_sd=0.5, response="linear")
        pm.Poisson("y", mu=pm.math.exp(f), observed=counts)
        pm.sample(**SAMPLE)
    Y2 = np.vstack([y, -y])
    with pm.Model():
        f = pmt.BARTTree("f", X, Y=Y2, m=3, shape=(2, len(y)), separate_trees=False)
        pm.Normal("y", f, 1.0, observed=Y2)
        pm.sample(**SAMPLE)


def group_c() -> None:
    """The boosting learner's histogram and exact growers.  Their kernels share nothing with
    the samplers', so they compile in a third process beside the two groups above, which
    the two cores share out: cold, on their own caches side by side, group a took 110 s and
    group b 83 s with the histogram grower in a (17.7 s of one core alone) and the exact
    grower in b (2.0 s)."""
    from pymc_trees.boosting import BoostedTreesClassifier, BoostedTreesRegressor

    X, y = _data()
    for method in ("hist", "exact"):
        BoostedTreesRegressor(n_estimators=3, tree_method=method).fit(X, y).predict(X)
        BoostedTreesClassifier(n_estimators=3, tree_method=method).fit(X, y > 0).predict(X)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        {"a": group_a, "b": group_b, "c": group_c}[sys.argv[1]]()
