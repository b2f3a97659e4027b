"""Small inputs, plots and the command line, each refused or handled as documented: a grid
of partial dependence plots of one output of a multi-output term, a numeric column with a
few cells that are not numbers (target or covariate, through ``compare`` and ``BARTTree``),
``leaf_sd`` given as a list, ``noise_prior`` of a constant response, the submodels of
``plot_scatter_submodels``, ``plot_convergence`` of one chain, and prior predictive draws in
numba-compiled functions.
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


# --- 9: one output of a multi-output term in the grid of partial dependence plots ----------


def _two_output_trace():
    """A hand-built trace of a term of shape (2, n) (tests/interpret/test_interpret.py's forests)."""
    from test_interpret import TREES1, TREES2, _forest, _frame, _idata

    both = _forest(*TREES1, *TREES2)
    idata, _ = _idata([[both, _forest(*TREES2, *TREES1)]], outputs=2)
    return idata, _frame(15, 3)


def test_grid_takes_an_output_of_a_multi_output_term():
    import matplotlib.pyplot as plt

    idata, X = _two_output_trace()
    for out in (0, 1, np.int64(1)):
        axes = pmt.plot_partial_dependence_grid(idata, X, columns=["x", "z"], kind="both",
                                                output=out)
        want = pmt.partial_dependence(idata, X, "x", kind="both")
        avg = want["average"].sel(output=int(out)).mean(("chain", "draw")).values
        ice = want["individual"].sel(output=int(out)).mean(("chain", "draw")).values
        lines = axes[0].get_lines()
        assert len(lines) == len(X) + 1  # one ICE curve per row, then the average
        np.testing.assert_allclose(lines[-1].get_ydata(), avg, rtol=1e-12)
        np.testing.assert_allclose(np.array([ln.get_ydata() for ln in lines[:-1]]), ice,
                                   rtol=1e-12)
        assert axes[0].get_ylabel().endswith(f"(output {int(out)})")
        plt.close("all")
    # func sees every output (a softmax over them), then the output is selected
    from scipy.special import softmax

    axes = pmt.plot_partial_dependence_grid(idata, X, columns=["x"], output=1,
                                            func=lambda f: softmax(f, axis=2))
    ind = pmt.partial_dependence(idata, X, "x", kind="individual")["individual"]
    p1 = softmax(ind.values, axis=2)[:, :, 1].mean(axis=(0, 1, 2))  # draws and rows
    np.testing.assert_allclose(axes[0].get_lines()[-1].get_ydata(), p1, rtol=1e-12)
    plt.close("all")


def test_grid_refuses_a_bad_output_and_ice_curves_of_several_outputs_without_one():
    import matplotlib.pyplot as plt
    import pytest

    idata, X = _two_output_trace()
    with pytest.raises(ValueError, match=r"pass output=, one of \[0, 1\]"):
        pmt.plot_partial_dependence_grid(idata, X, columns=["x"], kind="individual")
    for bad in (2, "1", True, [0, 1]):
        with pytest.raises(ValueError, match=r"is not an output of 'f'; its outputs are "
                                             r"\[0, 1\]"):
            pmt.plot_partial_dependence_grid(idata, X, columns=["x"], output=bad)
    from test_interpret import _idata

    single, _ = _idata()
    with pytest.raises(ValueError, match="'f' has one output; leave output out"):
        pmt.plot_partial_dependence_grid(single, X, columns=["x"], output=0)
    # without output the average of every output is drawn, one curve each
    axes = pmt.plot_partial_dependence_grid(idata, X, columns=["x"])
    assert len(axes[0].get_lines()) == 2
    plt.close("all")


# --- 11a-d: small inputs ----------------------------------------------------------------------


def test_leaf_sd_as_a_list_is_refused_with_what_it_accepts():
    import pytensor.tensor as pt
    import pytest

    X, y = _xy()
    for bad in ([0.1, 0.2], np.array([0.1, 0.2]), np.array([0.1])):
        for shape in ((40,), (2, 40)):
            with pm.Model(), pytest.raises(
                    ValueError, match=r"leaf_sd must be one positive finite number.*of every "
                                      r"output.*One scale per output is not supported"):
                pmt.BARTTree("f", X, m=5, leaf_sd=bad, shape=shape)
    for bad in (0.0, -1.0, np.inf, True):
        with pm.Model(), pytest.raises(ValueError, match="leaf_sd must be one positive"):
            pmt.BARTTree("f", X, m=5, leaf_sd=bad)
    with pytest.raises(ValueError, match=r"leaf_sd must be one positive.*got '0.1'"):
        pmt.leaf_calibration(y, leaf_sd="0.1")
    # one number (also a 0-d array or a PyTensor constant) is the scale of every output
    for good in (0.3, np.float32(0.3), np.array(0.3), pt.constant(0.3)):
        with pm.Model():
            f = pmt.BARTTree("f", X, m=5, leaf_sd=good, shape=(2, 40))
        assert float(f.owner.inputs[4].data) == pytest.approx(0.3)


def test_noise_prior_refuses_a_constant_y_or_one_without_noise():
    import pytest

    X, y = _xy()
    with pytest.raises(ValueError, match=r"y is constant \(all 40 values are 3\).*noise prior "
                                         r"of your own"):
        pmt.noise_prior(X, np.full(40, 3.0))
    with pytest.raises(ValueError, match=r"y is constant"):  # also when p + 1 >= n
        pmt.noise_prior(np.arange(6.0).reshape(3, 2), np.ones(3))
    with pytest.raises(ValueError, match=r"y is an exact linear function of X"):
        pmt.noise_prior(X, 2 * X[:, 0] - X[:, 1] + 1)
    alpha, beta = pmt.noise_prior(X, y)  # noisy data as before
    assert alpha == 1.5 and 0.05 < beta < 1


def test_scatter_submodels_takes_only_integer_numbers_of_columns():
    import matplotlib.pyplot as plt
    import pytest
    from test_interpret import _frame, _idata

    idata, _ = _idata()
    res = pmt.select_variables(idata, _frame(30, 4))
    for bad in ([1.5], 1.5, "x", ["x"], [True], [0], [4], [], [1, "2"]):
        with pytest.raises(ValueError, match=r"submodels must be numbers of columns from 1 to "
                                             r"3 \(integers, one per panel\); got "):
            pmt.plot_scatter_submodels(res, submodels=bad)
    for good, count in ((2, 1), ([1, 3], 2), (np.array([1, 2]), 2)):
        assert len(pmt.plot_scatter_submodels(res, submodels=good)) == count
    plt.close("all")


def test_convergence_plot_of_one_chain_notes_that_r_hat_needs_two():
    import arviz as az
    import matplotlib.pyplot as plt
    import xarray as xr

    rng = np.random.default_rng(5)
    f = rng.normal(size=(1, 60, 8)).cumsum(axis=1)
    idata = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"f": (("chain", "draw", "f_dim_0"), f)})})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        axes = pmt.plot_convergence(idata)
    assert not caught, [str(w.message) for w in caught]
    ess, rhat = axes
    assert [ln.get_label().split(" (")[0] for ln in ess.get_lines()
            if not ln.get_label().startswith("_")] == ["bulk ESS", "tail ESS"]
    bulk = np.sort(az.ess(idata["posterior"].to_dataset()["f"], method="bulk").values)
    np.testing.assert_allclose(ess.get_lines()[0].get_xdata(), bulk)
    assert not rhat.get_lines() and rhat.get_legend() is None
    assert [t.get_text() for t in rhat.texts] == ["R-hat needs two chains or more;\n"
                                                  "this trace has one"]
    plt.close("all")


# --- 10: a column of numbers with a few cells that are not numbers ---------------------------


def _numbers_table(n=80, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n).round(3),
                       "b": rng.integers(0, 20, n).astype(float),  # 20 distinct values
                       "colour": rng.choice(["red", "blue"], n)})
    df["y"] = (df["a"] + rng.normal(size=n)).round(3)
    return df


def _cli(argv, capsys, tmp_path):
    from pymc_trees.comparison.cli import main

    status = main([str(a) for a in [*argv, "--quiet", "--m", 5, "--draws", 10, "--chains", 1,
                                    "--out", tmp_path / "r.html"]])
    return status, capsys.readouterr().err


def test_cli_names_the_text_cell_of_a_numeric_target(tmp_path, capsys):
    df = _numbers_table().astype({"y": object})
    df.loc[17, "y"] = "abc"
    path = tmp_path / "target.csv"
    df.to_csv(path, index=False)
    for task in ([], ["--task", "regression"], ["--task", "classification"]):
        status, err = _cli(["compare", path, "--target", "y", *task], capsys, tmp_path)
        assert status == 1
        assert (f"error: The target column 'y' of the file '{path}' holds numbers except for "
                "1 cell that is not a number: line 19: 'abc'. Correct it in the file, or leave "
                "it empty (a missing value)") in err  # row 17: the header is line 1
        assert "task=" not in err and "distinct values" not in err
    # a target stored as text whose cells are all numbers is read as numbers (no circle)
    from pymc_trees.comparison.run import load_data

    _, y, info = load_data(_numbers_table().astype({"y": str}), "y")
    assert info["task"] == "regression" and y.dtype == float


def test_cli_names_text_cells_of_a_numeric_covariate_and_takes_categorical(tmp_path, capsys):
    import pandas as pd
    import pytest

    from pymc_trees.comparison.run import compare, load_data

    df = _numbers_table().astype({"b": object})
    df.loc[[5, 9, 30], "b"] = ["x", "?", "x"]  # at most 31 distinct values: once levels
    path = tmp_path / "covariate.csv"
    df.to_csv(path, index=False)
    status, err = _cli(["compare", path, "--target", "y"], capsys, tmp_path)
    assert status == 1
    assert (f"error: The column 'b' of the file '{path}' holds numbers except for 3 cells that "
            "are not numbers: line 7: 'x', line 11: '?', line 32: 'x'. Correct them in the "
            "file, or leave them empty (a missing value); if the column really is "
            "categorical, name it in categorical= (--categorical COL on the command line)"
            ) in err
    # a DataFrame: by index label, before any fit
    with pytest.raises(ValueError, match=r"The column 'b' of the DataFrame holds numbers "
                                         r"except for 3 cells.*row 105: 'x', row 109: '\?'"):
        compare(df.set_index(df.index + 100), "y", m=5, draws=10, progress=False)
    # named as categorical it is split by its levels; text columns stay categories
    X, _, _ = load_data(path, "y", categorical=["b"])
    assert isinstance(X["b"].dtype, pd.CategoricalDtype)
    assert len(X["b"].cat.categories) == df["b"].astype(str).nunique() <= 31
    assert isinstance(X["colour"].dtype, pd.CategoricalDtype) and X["a"].dtype == float
    with pytest.raises(ValueError, match=r"categorical names \['zz'\], which are not columns"):
        load_data(path, "y", categorical=["zz"])
    status, err = _cli(["compare", path, "--target", "y", "--categorical", "b", "--max-rows",
                        "5"], capsys, tmp_path)  # --categorical reaches load_data
    assert status == 1 and "max_rows must be at least 10" in err


def test_bart_and_boosting_refuse_a_numeric_column_with_text_cells_at_the_table_boundary():
    import pandas as pd
    import pytest

    from pymc_trees.boosting import BoostedTreesRegressor

    df = _numbers_table()
    X = df.drop(columns="y").astype({"b": object})
    X.loc[5, "b"] = "n.a."
    want = (r"X column 'b' \(index 1\) holds numbers except for 1 cell that is not a number: "
            r"row 5: 'n.a.' \(rows by their index label\).*pd.to_numeric.*"
            r"X\[col\].astype\('category'\) or name it in categorical=")
    with pm.Model(), pytest.raises(ValueError, match=want):
        pmt.BARTTree("f", X, df["y"].to_numpy(), m=5)
    with pytest.raises(ValueError, match=want):
        BoostedTreesRegressor(n_estimators=2).fit(X, df["y"])
    with pytest.raises(ValueError, match=want):
        pmt.noise_prior(X, df["y"])
    # the fixes: missing, or categories on purpose
    schema, _ = pmt.TableSchema.from_training(
        X.assign(b=pd.to_numeric(X["b"], errors="coerce")))
    assert schema.kinds == ("numeric", "numeric", "categorical")
    for ok, cat in ((X, ["b"]), (X.astype({"b": "category"}), None)):
        kinds = pmt.TableSchema.from_training(ok, categorical=cat)[0].kinds
        assert kinds == ("numeric", "categorical", "categorical")
    # new rows for a column that was numeric in training: the cells are named too
    with pytest.raises(ValueError, match=r"X_new column 'b' \(index 1\) holds numbers except "
                                         r"for 1 cell.*row 5: 'n.a.'.*numeric in training"):
        schema.encode(X)
    # text that is mostly not numbers, or all numbers, is categorical as before
    for col in (["red", "blue", "3"] * 10, ["1", "2", "3"] * 10):
        kinds = pmt.TableSchema.from_training(pd.DataFrame({"c": col}))[0].kinds
        assert kinds == ("categorical",)
