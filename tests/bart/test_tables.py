"""Tabular X in PyMC models: DataFrames with gaps and categories, new data, saving, refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_trees as pmt


def _table(n, rng):
    df = pd.DataFrame({
        "x": rng.uniform(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n)),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"],
                               ordered=True),
        "shop": rng.choice(["north", "south"], n).astype(object),
        "flag": rng.uniform(size=n) < 0.5,
    })
    df.loc[rng.uniform(size=n) < 0.25, "x"] = np.nan
    df.loc[rng.uniform(size=n) < 0.1, "colour"] = np.nan
    truth = (np.where(df["colour"].isin(["red", "blue"]), 1.0, -1.0)
             + np.where(df["x"].isna(), 2.0, 2.0 * df["x"].fillna(0.0))
             + 0.5 * df["size"].cat.codes.to_numpy())
    return df, np.asarray(truth, float)


def test_dataframe_with_gaps_and_categories_is_fit_predicted_and_saved(tmp_path):
    rng = np.random.default_rng(4)
    df, truth = _table(400, rng)
    y = truth + 0.3 * rng.normal(size=truth.size)
    with pm.Model():
        f = pmt.BARTTree("f", df, y, m=30)
        assert f.owner.op.schema.kinds == ("numeric", "categorical", "ordinal", "categorical",
                                           "numeric")
        pm.Normal("y", mu=f, sigma=0.3, observed=y)
        idata = pm.sample(draws=300, tune=300, chains=2, cores=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    traced = idata.posterior["f"].values
    np.testing.assert_array_equal(pmt.predict(idata, df).values, traced)
    # columns matched by name in any order; rows with gaps and categories are learned
    new, new_truth = _table(200, np.random.default_rng(5))
    pred = pmt.predict(idata, new[list(reversed(new.columns))]).mean(("chain", "draw")).values
    rmse = np.sqrt(np.mean((pred - new_truth) ** 2))
    assert rmse < 0.45, rmse  # the signal has sd 1.3; noise sd 0.3
    gaps = new["x"].isna().to_numpy()
    assert np.sqrt(np.mean((pred[gaps] - new_truth[gaps]) ** 2)) < 0.5
    path = tmp_path / "t.nc"
    idata.to_netcdf(path)
    import arviz as az

    back = az.from_netcdf(path)
    np.testing.assert_array_equal(pmt.predict(back, new).values, pmt.predict(idata, new).values)
    with pytest.raises(ValueError, match="'colour'.*'purple'"):
        pmt.predict(idata, new.assign(colour=pd.Categorical(["purple"] * 200)))


def test_pm_data_of_codes_and_set_data_give_the_posterior_predictive_at_new_rows():
    rng = np.random.default_rng(6)
    df, truth = _table(300, rng)
    y = truth + 0.3 * rng.normal(size=truth.size)
    schema, Xc = pmt.TableSchema.from_training(df)
    gap = -999.0  # pm.Data cannot hold NaN: the term's missing value marks the gaps
    with pm.Model() as model:
        X = pm.Data("X", np.where(np.isnan(Xc), gap, Xc))
        f = pmt.BARTTree("f", X, y, m=20, categorical=schema, missing=gap)
        pm.Normal("y", mu=f, sigma=0.3, observed=y, shape=X.shape[0])
        idata = pm.sample(draws=100, tune=100, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    new, _ = _table(50, np.random.default_rng(7))
    Xn = schema.encode(new)
    with model:
        pm.set_data({"X": np.where(np.isnan(Xn), gap, Xn)})
        pp = pmt.sample_posterior_predictive(idata, var_names=["f", "y"], predictions=True,
                                             progressbar=False, random_seed=1)
    want = pmt.predict(idata, new).values
    np.testing.assert_array_equal(pp.predictions["f"].values, want)
    np.testing.assert_array_equal(pmt.predict(idata, np.where(np.isnan(Xn), gap, Xn)).values,
                                  want)
    # the traced values at the training rows: the gaps were read as missing in training
    np.testing.assert_array_equal(pmt.predict(idata, df).values, idata.posterior["f"].values)
    with model:
        bad = np.where(np.isnan(Xn), gap, Xn)
        bad[0, 1] = 7.0  # colour has 4 levels
        pm.set_data({"X": bad})
        with pytest.raises(ValueError, match="colour"):
            pmt.sample_posterior_predictive(idata, progressbar=False)


def test_open_routings_follow_the_prior_coin_and_training_rows_never_meet_one():
    """A NaN in a column that had none in training, and a level absent from a node's rows,
    are routed by a fair coin per node and draw: training rows predict exactly, such rows get
    both routes across draws, and a seed reproduces the coins."""
    rng = np.random.default_rng(8)
    n = 200
    X = np.column_stack([rng.uniform(size=n), rng.integers(0, 3, size=n)]).astype(float)
    y = 3.0 * (X[:, 0] > 0.5) + 0.1 * rng.normal(size=n)
    fs = pmt.ForestSampler(X, pmt.TreePrior(m=3, min_leaf=5), 0.0, 1.0, np.array([False, True]))
    for _ in range(30):
        fs.cgm_sweep(rng, y, np.full(n, 100.0), np.array([0.5, 1.0, 1.0, 1.0]))
    assert np.any(fs.forest.var == 0)  # splits on x, which had no NaN
    ones = [fs.pack(np.random.default_rng(s)) for s in range(40)]
    for fr in ones:
        np.testing.assert_array_equal(fr.predict(X), fs.values())
    row = np.array([[np.nan, 0.0]])
    values = {float(fr.predict(row)[0]) for fr in ones}
    assert len(values) >= 2
    a, b = fs.pack(np.random.default_rng(3)), fs.pack(np.random.default_rng(3))
    np.testing.assert_array_equal(a.nodes, b.nodes)


def test_tabular_inputs_are_refused_with_the_fix():
    rng = np.random.default_rng(9)
    y = rng.normal(size=60)
    many = pd.DataFrame({"c": pd.Categorical([f"l{i % 40}" for i in range(60)])})
    with pm.Model():
        with pytest.raises(ValueError, match="at most 31"):
            pmt.BARTTree("f", many, y, m=5)
        gaps = np.where(rng.uniform(size=(60, 2)) < 0.2, np.nan, rng.uniform(size=(60, 2)))
        with pytest.raises(ValueError, match="'uniform', 'dart'"):
            pmt.BARTTree("g", gaps, y, m=5, split_prior="sparse")
        with pytest.raises(ValueError, match="infinite"):
            pmt.BARTTree("h", np.where(gaps > 0.5, np.inf, 0.0), y, m=5)


def test_general_step_and_several_outputs_take_tables():
    """A Poisson count model (the general tree step) and a term of two outputs (mean and log
    scale of a Normal) on a DataFrame with gaps and a category: they sample, the stored
    forests reproduce the traced values, and the counts' means are learned."""
    rng = np.random.default_rng(10)
    df, truth = _table(250, rng)
    rate = np.exp(0.5 * truth)
    counts = rng.poisson(rate)
    with pm.Model():
        f = pmt.BARTTree("f", df, counts, m=10, link="log")
        pm.Poisson("y", mu=pm.math.exp(f), observed=counts)
        idata = pm.sample(draws=150, tune=150, chains=1, random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    np.testing.assert_array_equal(pmt.predict(idata, df).values, idata.posterior["f"].values)
    est = np.exp(idata.posterior["f"]).mean(("chain", "draw")).values
    assert np.corrcoef(est, rate)[0, 1] > 0.8
    y = truth + np.exp(np.where(df["x"].isna(), 0.0, -1.0)) * rng.normal(size=truth.size)
    with pm.Model():
        g = pmt.BARTTree("g", df, y, m=10, shape=(2, len(df)))
        pm.Normal("y", mu=g[0], sigma=pm.math.exp(g[1]), observed=y)
        idata2 = pm.sample(draws=100, tune=100, chains=1, random_seed=5, progressbar=False,
                           compute_convergence_checks=False)
    np.testing.assert_array_equal(pmt.predict(idata2, df, "g").values,
                                  idata2.posterior["g"].values)
