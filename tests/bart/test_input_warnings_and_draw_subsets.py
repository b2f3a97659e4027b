"""Inputs that are warned about or refused, and subsets of draws (the tests that check what
stays silent guard against false alarms):

* a ``link="log"`` term calibrated on a log-transformed Y (``np.log1p(counts)``) is warned
  about; negative Y is refused with the data-scale fix;
* a column of X missing in every row is named in a warning at ``BARTTree`` (arrays,
  DataFrames, ``missing=``), and counts as unsplittable in the "no column can be split" one;
* a DataFrame read by position for a term without column names (``pm.Data("X", df)``
  without dims) is warned about, in prediction and interpretation;
* ``pmt.sample_posterior_predictive`` and ``pmt.compute_log_likelihood`` take stacked
  draws (and one chain without its dim) without ``sample_dims``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_trees as pmt

SAMPLE = dict(tune=20, draws=16, chains=1, cores=1, random_seed=7, progressbar=False,
              compute_convergence_checks=False)


def _user_warnings(fn) -> list[str]:
    """The messages of the UserWarnings that ``fn()`` issues."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _counts(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    return X, rng.poisson(np.exp(1.0 + X[:, 0])).astype(float)


def _term(X, **kwargs):
    with pm.Model():
        pmt.BARTTree("f", X, m=4, **kwargs)


def _stack(ds):
    """A group with its chain and draw stacked into ``sample`` (other groups unchanged)."""
    return ds.stack(sample=("chain", "draw")) if {"chain", "draw"} <= set(ds.dims) else ds


# -- 12. Y on the data scale with link="log" ------------------------------------------------

def test_a_log1p_response_with_the_log_link_is_warned_about():
    X, y = _counts()
    for Y in (np.log1p(y), np.log1p(y).tolist(), pd.Series(np.log1p(y))):
        msgs = _user_warnings(lambda: _term(X, Y=Y, link="log"))
        assert len(msgs) == 1
        assert 'link="log"' in msgs[0] and "looks already log-transformed" in msgs[0]
        assert "data scale (e.g. the counts), not log1p(y)" in msgs[0]
    # log of counts without zeros, and the public calibration function alike
    pos = y[y > 0]
    with pytest.warns(UserWarning, match="looks already log-transformed"):
        _term(X[y > 0], Y=np.log(pos), link="log")
    with pytest.warns(UserWarning, match="looks already log-transformed"):
        pmt.leaf_calibration(np.log1p(y), link="log", m=4)


def test_counts_rates_and_the_identity_link_give_no_log_scale_warning():
    X, y = _counts()
    rate = y / np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    for kwargs in (dict(Y=y, link="log"), dict(Y=rate, link="log"), dict(Y=y / 2, link="log"),
                   dict(Y=np.log1p(y))):  # a model of log1p(y) with the identity link
        assert not [m for m in _user_warnings(lambda: _term(X, **kwargs))
                    if "log-transformed" in m]


def test_negative_Y_with_the_log_link_is_refused_with_the_data_scale_fix():
    X, y = _counts()
    with pytest.raises(ValueError, match=r"data scale: give Y=y .*not np.log\(y\)"):
        _term(X, Y=np.log(y + 0.1), link="log")


# -- 13. columns missing in every row --------------------------------------------------------

def test_a_column_missing_in_every_row_is_named_in_a_warning():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(60, 3))
    X[:, 1] = np.nan
    Y = X[:, 0]
    msgs = _user_warnings(lambda: _term(X, Y=Y))
    assert msgs == ["Column 1 of X is missing (NaN, or the missing= value) in every row, so "
                    "no tree can split on it. Drop it from X."]
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(
        colour=pd.Categorical([None] * 60, categories=["red", "blue"]))
    with pytest.warns(UserWarning, match=r"Columns 'b' \(index 1\), 'colour' \(index 3\) of X "
                                         r"are missing .* every row.*Drop them from X"):
        _term(df, Y=Y)
    # the missing= marker of a pm.Data (which cannot hold NaN)
    marked = np.where(np.isnan(X), -999.0, X)
    with pytest.warns(UserWarning, match="Column 1 of X is missing"):
        with pm.Model():
            pmt.BARTTree("f", pm.Data("X", marked), Y=Y, m=4, missing=-999.0)
    # a column with some missing values can still be split: no warning
    X[:30, 1] = 0.5
    assert _user_warnings(lambda: _term(X, Y=Y)) == []


def test_a_single_column_missing_in_every_row_gives_the_no_split_warning_naming_it():
    X = np.full((40, 1), np.nan)
    msgs = _user_warnings(lambda: _term(X, Y=np.arange(40.0)))
    assert len(msgs) == 1
    assert msgs[0].startswith("No column of X can be split")
    assert "Column 0 of X is missing (NaN, or the missing= value) in every row" in msgs[0]
    # with a constant column beside it, the same single warning
    X2 = np.column_stack([np.ones(40), X])
    msgs = _user_warnings(lambda: _term(X2, Y=np.arange(40.0)))
    assert len(msgs) == 1 and "No column of X can be split" in msgs[0]
    assert "Column 1 of X is missing" in msgs[0]


# -- 14. and 15. a fitted term without column names ------------------------------------------

@pytest.fixture(scope="module")
def unnamed():
    """``pm.Data("X", df)`` without dims (PyMC keeps no names); f is not recorded, so the
    log likelihood needs the forests."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.uniform(size=80), "b": rng.uniform(size=80),
                       "c": rng.uniform(size=80)})
    y = 3 * df["a"].to_numpy() - 2 * df["c"].to_numpy() + 0.1 * rng.normal(size=80)
    with pm.Model() as model:
        Xd = pm.Data("X", df)
        f = pmt.BARTTree("f", Xd, Y=y, m=5, keep_values=False)
        s2 = pm.InverseGamma("s2", *pmt.noise_prior(df, y))
        pm.Normal("y", mu=f, sigma=pm.math.sqrt(s2), observed=y, shape=Xd.shape[0])
        idata = pm.sample(**SAMPLE)
    return model, idata, df, y


def test_a_frame_read_by_position_for_a_term_without_names_is_warned_about(unnamed):
    _, idata, df, _ = unnamed
    reordered = df[["c", "a", "b"]]
    with pytest.warns(UserWarning, match=r"X_new is a DataFrame with columns 'c', 'a', 'b', "
                                         r"but the tree term was fit without column names.*"
                                         r"read by position.*columns=df.columns"):
        got = pmt.predict(idata, reordered)
    np.testing.assert_array_equal(got.values, pmt.predict(idata, reordered.to_numpy()).values)
    with pytest.warns(UserWarning, match="X is a DataFrame with columns 'a', 'b', 'c'"):
        pmt.partial_dependence(idata, df, "a", grid_resolution=3, max_draws=4)
    # nothing to warn about: an array, labels that are the positions, a single column
    assert _user_warnings(lambda: pmt.predict(idata, df.to_numpy())) == []
    assert _user_warnings(lambda: pmt.predict(idata, pd.DataFrame(df.to_numpy()))) == []


def test_a_term_named_through_pm_data_dims_matches_frames_by_name_without_warning():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.uniform(size=40), "b": rng.uniform(size=40)})
    y = 2 * df["a"].to_numpy() + 0.1 * rng.normal(size=40)
    with pm.Model():
        Xd = pm.Data("X", df, dims=("obs", "column"), infer_dims_and_coords=True)
        f = pmt.BARTTree("f", Xd, Y=y, m=4)
        pm.Normal("y", mu=f, sigma=0.2, observed=y, dims="obs")
        idata = pm.sample(**SAMPLE)
    got = []
    assert _user_warnings(lambda: got.append(pmt.predict(idata, df[["b", "a"]]))) == []
    np.testing.assert_array_equal(got[0].values, idata.posterior["f"].values)


def test_stacked_draws_and_one_chain_need_no_sample_dims_in_the_posterior_predictive(unnamed):
    model, idata, df, _ = unnamed
    stacked = idata.map_over_datasets(_stack)
    with model:
        full = pmt.sample_posterior_predictive(idata, var_names=["f", "y"], random_seed=1,
                                               progressbar=False)
        pred = pmt.sample_posterior_predictive(stacked, var_names=["f", "y"], random_seed=1,
                                               progressbar=False)
        given = pmt.sample_posterior_predictive(stacked, var_names=["f"], progressbar=False,
                                                sample_dims=["sample"])
        one = pmt.sample_posterior_predictive(idata.sel(chain=0), var_names=["f"],
                                              progressbar=False)
    f = pred.posterior_predictive["f"]
    assert f.dims == ("sample", "f_dim_0")
    assert pred.posterior_predictive["y"].dims == ("sample", "y_dim_0")
    want = full.posterior_predictive["f"]
    np.testing.assert_array_equal(f.unstack("sample").transpose(*want.dims).values, want.values)
    np.testing.assert_array_equal(given.posterior_predictive["f"].values, f.values)
    np.testing.assert_array_equal(f.values, pmt.predict(stacked, df.to_numpy()).values)
    assert one.posterior_predictive["f"].dims == ("draw", "f_dim_0")
    np.testing.assert_array_equal(one.posterior_predictive["f"].values, want.values[0])


def test_stacked_draws_need_no_sample_dims_in_the_log_likelihood(unnamed):
    model, idata, _, _ = unnamed
    with model:
        ll = pmt.compute_log_likelihood(idata.map_over_datasets(_stack),
                                        extend_inferencedata=False, progressbar=False)
        full = pmt.compute_log_likelihood(idata, extend_inferencedata=False, progressbar=False)
    assert ll["y"].dims == ("sample", "y_dim_0")
    np.testing.assert_allclose(ll["y"].unstack("sample").transpose(*full["y"].dims).values,
                               full["y"].values, rtol=1e-12)
