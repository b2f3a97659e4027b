"""Issue 48, findings 9 to 11: small inputs, plots and the command line.

Each test reproduces one finding: a grid of partial dependence plots of one output of a
multi-output term, a numeric column with a few cells that are not numbers (target or
covariate, through ``compare`` and ``BARTTree``), ``leaf_sd`` given as a list,
``noise_prior`` of a constant response, the submodels of ``plot_scatter_submodels``,
``plot_convergence`` of one chain, and prior predictive draws in numba-compiled functions.
"""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_trees as pmt  # noqa: E402


def _xy(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X[:, 0] + 0.5 * rng.normal(size=n)


# --- 11e: prior draws in functions compiled with numba --------------------------------------


def test_prior_predictive_draws_trees_without_numba_object_mode_warning():
    """PyTensor compiles pm.sample_prior_predictive with numba; the tree term's draw is
    registered as its numba core function, so there is no "object mode" warning, and the
    draws are those of PyTensor's Python mode for the same seed."""
    X, y = _xy()
    with pm.Model() as model:
        f = pmt.BARTTree("f", X, y, m=5)
        pm.Normal("y", mu=f, sigma=1.0, observed=y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with model:
            got = pm.sample_prior_predictive(draws=4, random_seed=3)
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "object mode" in m], messages
    with model:
        ref = pm.sample_prior_predictive(draws=4, random_seed=3,
                                         compile_kwargs={"mode": "FAST_COMPILE"})
    f_got, f_ref = got.prior["f"].values, ref.prior["f"].values
    assert f_got.shape == (1, 4, 40)
    np.testing.assert_array_equal(f_got, f_ref)
    assert not np.allclose(f_got[0, 0], f_got[0, 1])  # each draw its own forest
